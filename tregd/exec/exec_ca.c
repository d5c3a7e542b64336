/*
 * exec_ca: the CA bundle a run's CLIs trust (SPEC.md section 6a, "TLS"):
 * the system's, `relay ca' and the relay's run CA, at
 * <run dir>/ca-bundle.pem.  Part of exec.
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "tregd.h"
#include "exec.h"

static int	 exec_ca;	/* <run dir>/ca-bundle.pem made */
static char	*exec_ca_pem;	/* the run CA (IMSG_EGRESS_CA) */
static size_t	 exec_ca_pemlen;

static int	 exec_ca_append(int, const char *);

/* File path appended to fd; 0, or -1 with errno. */
static int
exec_ca_append(int fd, const char *path)
{
	char	 buf[8192];
	ssize_t	 n;
	int	 in, rc = 0;

	if ((in = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(fd, buf, n) != n) {
			rc = -1;
			break;
		}
	if (n == -1)
		rc = -1;
	close(in);
	/* A file whose last line lacks its newline must not join the next. */
	if (rc == 0 && write(fd, "\n", 1) != 1)
		rc = -1;
	return (rc);
}

/*
 * The CAs a run's CLIs trust: the system's bundle, `relay ca' (the
 * private CA the operator's upstreams use) and the run CA (the relay's,
 * whose leaves the egress proxy shows a proxied run), at
 * <run dir>/ca-bundle.pem, 0644, named by the variables CLIs read
 * (exec_go); an init binds it into its run's view, and over the
 * system's bundle for a proxied run (exec_child.c).  Without either CA
 * there is none: the system's bundle is theirs already.  0, or -1
 * (logged).
 */
int
exec_ca_bundle(const struct tregd_conf *conf)
{
	char	 path[PATH_MAX], tmp[PATH_MAX];
	int	 fd;

	exec_ca = 0;
	if (snprintf(path, sizeof(path), "%s/%s", conf->run_dir,
	    RUN_CA_BUNDLE) >= (int)sizeof(path) || snprintf(tmp, sizeof(tmp),
	    "%s/.%s", conf->run_dir, RUN_CA_BUNDLE) >= (int)sizeof(tmp))
		fatalx("run directory %s: path too long", conf->run_dir);
	if (unlink(path) == -1 && errno != ENOENT) {
		log_warn("unlink %s", path);
		return (-1);
	}
	if (conf->relay_ca[0] == '\0' && exec_ca_pem == NULL)
		return (0);
	(void)unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0644)) == -1 || fchmod(fd, 0644) == -1) {
		log_warn("%s", tmp);
		if (fd != -1)
			close(fd);
		return (-1);
	}
	if (exec_ca_append(fd, TREGD_CA_BUNDLE) == -1)
		log_warn("exec: %s", TREGD_CA_BUNDLE);
	if (conf->relay_ca[0] != '\0' &&
	    exec_ca_append(fd, conf->relay_ca) == -1) {
		log_warn("relay ca %s", conf->relay_ca);
		close(fd);
		return (-1);
	}
	if ((exec_ca_pem != NULL && write(fd, exec_ca_pem, exec_ca_pemlen) !=
	    (ssize_t)exec_ca_pemlen) || fsync(fd) == -1 || close(fd) == -1 ||
	    rename(tmp, path) == -1) {
		log_warn("%s", path);
		return (-1);
	}
	exec_ca = 1;
	return (0);
}

/* The relay's run CA certificate (PEM, checked by the caller). */
void
exec_ca_set(const void *pem, size_t len)
{
	free(exec_ca_pem);
	if ((exec_ca_pem = malloc(len)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(exec_ca_pem, pem, len);
	exec_ca_pemlen = len;
}

/* Whether the bundle exists (its variables name it). */
int
exec_ca_made(void)
{
	return (exec_ca);
}

/* Whether the run CA came. */
int
exec_ca_run(void)
{
	return (exec_ca_pem != NULL);
}

/* At exec's end: it is made again at the next start. */
void
exec_ca_remove(const struct tregd_conf *conf)
{
	char	 path[PATH_MAX];

	if (exec_ca && snprintf(path, sizeof(path), "%s/%s", conf->run_dir,
	    RUN_CA_BUNDLE) < (int)sizeof(path))
		(void)unlink(path);
}
