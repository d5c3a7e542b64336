/*
 * conf_db.c: "database postgresql" as the configuration names it.  The
 * parser checks a connection string here (libpq's own grammar, so tregd
 * -n refuses what libpq would), and the vault reads the password file
 * here as root, before it gives that up.  The one file outside the
 * store engines that includes libpq-fe.h, and it opens no connection:
 * PQconninfoParse() only reads a string (make lint allows this file by
 * name).
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tregd.h"
#include "log.h"

/*
 * For the configuration parser: a connection string libpq understands,
 * without a password (that belongs in "database password-file", so that
 * tregd -nv and the logs never show it).
 */
int
pg_conninfo_check(const char *conninfo, char *why, size_t whylen)
{
	PQconninfoOption	*opts, *o;
	char			*err = NULL;
	int			 rc = 0;

	if ((opts = PQconninfoParse(conninfo, &err)) == NULL) {
		snprintf(why, whylen, "%s", err != NULL ?
		    err : "out of memory");
		why[strcspn(why, "\n")] = '\0';
		PQfreemem(err);
		return (-1);
	}
	for (o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val != NULL) {
			snprintf(why, whylen, "a password in the connection "
			    "string: use database password-file");
			rc = -1;
		}
	PQconninfoFree(opts);
	return (rc);
}

/*
 * The first line of "database password-file", read as root before the
 * vault gives that up.  The file must be a regular file no one but its
 * owner can read.  The caller frees the answer with freezero().
 */
char *
pg_password_read(const char *path, char *err, size_t errlen)
{
	struct stat	 st;
	char		*pw;
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "database password-file %s: %s", path,
		    strerror(errno));
		return (NULL);
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
		snprintf(err, errlen, "database password-file %s: not a "
		    "regular file of mode 0600 or 0400", path);
		close(fd);
		return (NULL);
	}
	if ((pw = calloc(1, PG_PASSWORD_MAX + 1)) == NULL)
		fatal("%s: calloc", __func__);
	n = read(fd, pw, PG_PASSWORD_MAX + 1);
	close(fd);
	if (n > 0)
		pw[strcspn(pw, "\r\n")] = '\0';
	if (n <= 0 || n > PG_PASSWORD_MAX || pw[0] == '\0') {
		snprintf(err, errlen, "database password-file %s: %s", path,
		    n > PG_PASSWORD_MAX ? "longer than 1024 bytes" :
		    "empty or unreadable");
		freezero(pw, PG_PASSWORD_MAX + 1);
		return (NULL);
	}
	return (pw);
}
