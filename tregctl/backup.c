/*
 * tregctl backup DIR.  The vault writes a consistent copy of its
 * database with sqlite's online backup API (tregd keeps serving) into
 * its state directory and names it; tregctl, which may read the state
 * directory (root), moves the copy into DIR and puts the keyring beside
 * it (DIR/keys/).  The copy is one file (no WAL): tregd -R DIR restores
 * it (tregd/restore.c).  With PostgreSQL the
 * daemon names no copy (pg_dump's job) and DIR gets the keyring only.
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tregctl.h"

static void	 backup_copy(const char *, const char *);
static void	 backup_path(char *, const char *, const char *);
static int	 backup_key_ok(const char *);

static void
backup_path(char *buf, const char *dir, const char *name)
{
	if (snprintf(buf, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
		errx(1, "%s/%s: path too long", dir, name);
}

/* DIR exists or is made (0700) and holds no earlier backup. */
void
backup_prepare(const char *dir)
{
	char	 p[PATH_MAX];

	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		err(1, "mkdir %s", dir);
	backup_path(p, dir, TREGD_DB);
	if (access(p, F_OK) == 0)
		errx(1, "%s exists: back up into an empty directory", p);
	backup_path(p, dir, TREGD_KEYRING);
	if (access(p, F_OK) == 0)
		errx(1, "%s exists: back up into an empty directory", p);
}

/* "keys/NAME", NAME a plain file name: the keyring's entries only. */
static int
backup_key_ok(const char *key)
{
	size_t	 n = strlen(TREGD_KEYRING);

	return (strncmp(key, TREGD_KEYRING "/", n + 1) == 0 &&
	    key[n + 1] != '\0' && key[n + 1] != '.' &&
	    strchr(key + n + 1, '/') == NULL);
}

static void
backup_copy(const char *from, const char *to)
{
	char	 buf[65536];
	ssize_t	 n;
	int	 in, out;

	if ((in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		err(1, "open %s", from);
	if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) ==
	    -1)
		err(1, "create %s", to);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			err(1, "write %s", to);
	if (n == -1)
		err(1, "read %s", from);
	if (fsync(out) == -1 || close(out) == -1)
		err(1, "%s", to);
	close(in);
	explicit_bzero(buf, sizeof(buf));
}

/* The vault's answer names the copy and the keyring: move them to DIR. */
json_t *
backup_finish(const char *dir, json_t *doc)
{
	const char	*state, *copy, *key;
	char		 from[PATH_MAX], to[PATH_MAX];
	json_t		*files, *v;
	size_t		 i;

	state = json_string_value(json_object_get(doc, "state"));
	copy = json_string_value(json_object_get(doc, "database"));
	if (state == NULL || (copy == NULL &&
	    !json_is_null(json_object_get(doc, "database"))) ||
	    (copy != NULL && strchr(copy, '/') != NULL))
		errx(1, "backup: the daemon's answer names no copy");
	if ((files = json_array()) == NULL)
		errx(1, "json_array");
	if (copy != NULL) {
		backup_path(from, state, copy);
		backup_path(to, dir, TREGD_DB);
		backup_copy(from, to);
		if (unlink(from) == -1)
			warn("unlink %s", from);
		json_array_append_new(files, json_string(TREGD_DB));
	}
	backup_path(to, dir, TREGD_KEYRING);
	if (mkdir(to, 0700) == -1)
		err(1, "mkdir %s", to);
	json_array_foreach(json_object_get(doc, "keyring"), i, v) {
		if ((key = json_string_value(v)) == NULL || !backup_key_ok(key))
			errx(1, "backup: bad keyring entry in the answer");
		backup_path(from, state, key);
		backup_path(to, dir, key);
		backup_copy(from, to);
		json_array_append_new(files, json_string(key));
	}
	json_decref(doc);
	return (json_pack("{s:s, s:o}", "directory", dir, "files", files));
}
