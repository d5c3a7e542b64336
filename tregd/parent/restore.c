/*
 * tregd -R DIR: restore a backup that tregctl backup wrote (DIR/tregd.db
 * and DIR/keys/) as the state directory of the configuration, whole.
 * With tregd stopped: the state directory as it was is moved aside
 * (STATE.replaced-TIME, nothing in it is removed), and a new one gets
 * the backup's files and nothing else, so no write-ahead log, commit
 * mark or key of the old state can be applied over the backup.  The
 * copy is checked first (sqlite's quick_check, and a key file for every
 * key id its secrets are sealed under) and is never written.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "tregd.h"
#include "vault/store/store.h"

struct restore_keys {
	const char	*dir;		/* the backup's keys/ */
	int64_t		 missing;	/* values under a key not in it */
};

static int	restore_key_there(const char *, const char *, int64_t,
		    void *);
static void	restore_check(const struct tregd_conf *, const char *);
static void	restore_not_running(const struct tregd_conf *);
static void	restore_aside(const char *);
static void	restore_sync(const char *);

static int
restore_key_there(const char *host, const char *hex, int64_t n, void *arg)
{
	struct restore_keys	*rk = arg;
	char			 name[64], path[PATH_MAX];

	snprintf(name, sizeof(name), "%s.key", hex);
	files_path(path, rk->dir, name);
	if (access(path, F_OK) == 0)
		return (0);
	warnx("%lld secrets of the backup are sealed under key %s, which "
	    "is not in %s", (long long)n, hex, rk->dir);
	rk->missing += n;
	return (0);
}

/* The backup is whole and carries every key its secrets need. */
static void
restore_check(const struct tregd_conf *conf, const char *dir)
{
	struct restore_keys	 rk;
	struct stat		 sb;
	char			 db[PATH_MAX], keys[PATH_MAX], err[512];

	files_path(keys, dir, TREGD_KEYRING);
	if (stat(keys, &sb) == -1 || !S_ISDIR(sb.st_mode))
		errx(1, "%s: no keyring: not a backup of tregctl backup",
		    keys);
	files_path(db, dir, TREGD_DB);
	if (conf->db_engine != DB_SQLITE) {
		if (access(db, F_OK) == 0)
			warnx("%s is left alone: the database is PostgreSQL "
			    "(restore its pg_dump)", db);
		return;
	}
	if (stat(db, &sb) == -1 || !S_ISREG(sb.st_mode))
		errx(1, "%s: no database: not a backup of tregctl backup",
		    db);
	memset(&rk, 0, sizeof(rk));
	rk.dir = keys;
	if (store_sqlite_inspect(db, restore_key_there, &rk, err,
	    sizeof(err)) == -1)
		errx(1, "%s: refused: %s", db, err);
	if (rk.missing > 0)
		errx(1, "%s: refused: its keyring lacks keys its secrets are "
		    "sealed under", dir);
}

/* A daemon answering on the control socket: refused, not replaced. */
static void
restore_not_running(const struct tregd_conf *conf)
{
	struct sockaddr_un	 sun;
	int			 fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, conf->socket, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		errx(1, "%s: path too long", conf->socket);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
		errx(1, "tregd is running (%s answers): stop it first",
		    conf->socket);
	close(fd);
}

/* STATE, if it holds anything, becomes STATE.replaced-YYYYmmddTHHMMSS. */
static void
restore_aside(const char *state)
{
	char		 to[PATH_MAX], stamp[32];
	struct dirent	*de;
	DIR		*d;
	time_t		 now = time(NULL);
	int		 used = 0;

	if ((d = opendir(state)) == NULL) {
		if (errno == ENOENT)
			return;
		err(1, "%s", state);
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			used = 1;
	closedir(d);
	if (!used) {
		if (rmdir(state) == -1)
			err(1, "rmdir %s", state);
		return;
	}
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", gmtime(&now));
	if (snprintf(to, sizeof(to), "%s.replaced-%s", state, stamp) >=
	    (int)sizeof(to))
		errx(1, "%s: path too long", state);
	if (rename(state, to) == -1)
		err(1, "rename %s to %s", state, to);
	printf("the state directory as it was: %s\n", to);
}

static void
restore_sync(const char *dir)
{
	int	 fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fsync(fd) == -1)
		err(1, "fsync %s", dir);
	close(fd);
}

__dead void
restore_main(const struct tregd_conf *conf, const char *dir)
{
	struct passwd	*pw;
	struct dirent	*de;
	DIR		*d;
	char		 from[PATH_MAX], to[PATH_MAX], keys[PATH_MAX];
	char		 src[PATH_MAX];
	uid_t		 uid = geteuid();
	gid_t		 gid = getegid();
	int		 nkeys = 0;

	restore_not_running(conf);
	restore_check(conf, dir);
	if (uid == 0) {
		if ((pw = getpwnam(TREGD_VAULT_USER)) == NULL)
			errx(1, "unknown user %s", TREGD_VAULT_USER);
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	restore_aside(conf->state);
	if (mkdir(conf->state, 0700) == -1 || chown(conf->state, uid,
	    gid) == -1)
		err(1, "%s", conf->state);
	if (conf->db_engine == DB_SQLITE) {
		files_path(from, dir, TREGD_DB);
		files_path(to, conf->state, TREGD_DB);
		files_copy(from, to, uid, gid);
	}
	files_path(from, dir, TREGD_KEYRING);
	files_path(keys, conf->state, TREGD_KEYRING);
	if (mkdir(keys, 0700) == -1 || chown(keys, uid, gid) == -1)
		err(1, "%s", keys);
	if ((d = opendir(from)) == NULL)
		err(1, "%s", from);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || (strcmp(de->d_name,
		    "current") != 0 && (strlen(de->d_name) < 5 ||
		    strcmp(de->d_name + strlen(de->d_name) - 4, ".key") != 0)))
			continue;
		files_path(src, from, de->d_name);
		files_path(to, keys, de->d_name);
		files_copy(src, to, uid, gid);
		nkeys += strcmp(de->d_name, "current") != 0;
	}
	closedir(d);
	restore_sync(keys);
	restore_sync(conf->state);
	printf("restored %s into %s: %s%d key files\n", dir, conf->state,
	    conf->db_engine == DB_SQLITE ? "the database and " : "", nkeys);
	exit(0);
}
