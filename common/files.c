/*
 * Files for the command-line modes: a backup's copies (tregctl backup)
 * and their way back (tregd -R) are made the same way.
 */

#include <sys/types.h>

#include <err.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "files.h"

void
files_path(char *buf, const char *dir, const char *name)
{
	if (snprintf(buf, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
		errx(1, "%s/%s: path too long", dir, name);
}

/*
 * Never through a link, never over a file there; synced before it
 * counts.  What passed through buf (a database, a key) is zeroed.
 */
void
files_copy(const char *from, const char *to, uid_t uid, gid_t gid)
{
	char	 buf[65536];
	ssize_t	 n;
	int	 in, out;

	if ((in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		err(1, "open %s", from);
	if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1)
		err(1, "create %s", to);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			err(1, "write %s", to);
	if (n == -1)
		err(1, "read %s", from);
	if ((uid != (uid_t)-1 && fchown(out, uid, gid) == -1) ||
	    fsync(out) == -1 || close(out) == -1)
		err(1, "%s", to);
	close(in);
	explicit_bzero(buf, sizeof(buf));
}
