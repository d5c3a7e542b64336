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

#include "files.h"
#include "tregctl.h"

static int	 backup_key_ok(const char *);

/* DIR exists or is made (0700) and holds no earlier backup. */
void
backup_prepare(const char *dir)
{
	char	 p[PATH_MAX];

	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		err(1, "mkdir %s", dir);
	files_path(p, dir, TREGD_DB);
	if (access(p, F_OK) == 0)
		errx(1, "%s exists: back up into an empty directory", p);
	files_path(p, dir, TREGD_KEYRING);
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
		files_path(from, state, copy);
		files_path(to, dir, TREGD_DB);
		files_copy(from, to, (uid_t)-1, 0);
		if (unlink(from) == -1)
			warn("unlink %s", from);
		json_array_append_new(files, json_string(TREGD_DB));
	}
	files_path(to, dir, TREGD_KEYRING);
	if (mkdir(to, 0700) == -1)
		err(1, "mkdir %s", to);
	json_array_foreach(json_object_get(doc, "keyring"), i, v) {
		if ((key = json_string_value(v)) == NULL || !backup_key_ok(key))
			errx(1, "backup: bad keyring entry in the answer");
		files_path(from, state, key);
		files_path(to, dir, key);
		files_copy(from, to, (uid_t)-1, 0);
		json_array_append_new(files, json_string(key));
	}
	json_decref(doc);
	return (json_pack("{s:s, s:o}", "directory", dir, "files", files));
}
