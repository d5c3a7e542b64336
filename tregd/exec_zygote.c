/*
 * exec_zygote: the process that makes every run's init (SPEC.md section
 * 6, "Isolation"; the design is in exec_sandbox.c's head comment).
 *
 * exec forks it once at start, before it has read any message of its
 * peers and before exec's own filter: its memory is a copy of an exec
 * that has never held a secret, and so is every init it clones.  It
 * installs a filter of its own (SANDBOX_ZYGOTE), which lets it clone
 * namespaces and its inits mount; exec's refuses both.  Both are
 * deny-lists: every init and CLI inherits the zygote's filter, and a
 * CLI may call anything the run child's filter does not refuse.  It accepts
 * one message, ZYG_MAKE, from exec alone (the socketpair's peer, checked
 * once), of one exact length and with its exact descriptors; nothing in
 * it is a secret.  The run's argv, environment and secrets go from exec
 * to the init on the init's order pipe, after the init exists.
 */

#include <sys/types.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "tregd.h"
#include "log.h"
#include "util.h"
#include "exec_zygote.h"

#define SBX_ORDER_MAX	(32 * 1024 * 1024)

/* The order a made init waits for; strings follow, NUL-terminated. */
struct sbx_order {
	uint32_t	 len;	/* of the strings */
	uint32_t	 argc;
	uint32_t	 envc;
	uint32_t	 test;	/* tregd -T child: the selftest, no execve */
};

/* What the zygote accepts: the type, the exact length, the fds. */
struct zyg_handler {
	uint32_t	 type;
	size_t		 len;
	int		 minfd, maxfd;
};

static const struct zyg_handler zyg_handlers[] = {
	{ ZYG_MAKE, sizeof(struct zyg_make), ZYG_FD_CG0, ZYG_NFD }
};

/* Room for the descriptors of one request. */
union zyg_cbuf {
	struct cmsghdr	 hdr;
	char		 buf[CMSG_SPACE(ZYG_NFD * sizeof(int))];
};

static int	 zyg_fd = -1;		/* exec's end */
static pid_t	 zyg_child = -1;

static void	 zyg_msg(struct msghdr *, struct iovec *, uint32_t *, void *,
		    size_t, union zyg_cbuf *, size_t);
static __dead void zyg_main(int, int, int);
static int	 zyg_recv(int, uint32_t *, void *, size_t, int *, int *);
static void	 zyg_serve(int, uint32_t, const struct zyg_make *,
		    const int *, int);

/*
 * Fork the zygote, keeping in it only its socket and the descriptors
 * the inits need (life, the life pipe's read end; null, /dev/null).
 */
int
zyg_start(int life, int null)
{
	int	 sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		return (-1);
	switch (zyg_child = fork()) {
	case -1:
		close(sv[0]);
		close(sv[1]);
		return (-1);
	case 0:
		close(sv[0]);
		zyg_main(sv[1], life, null);
		/* NOTREACHED */
	}
	close(sv[1]);
	zyg_fd = sv[0];
	return (0);
}

pid_t
zyg_pid(void)
{
	return (zyg_child);
}

int
zyg_fd_get(void)
{
	return (zyg_fd);
}

/* A request's message: its type, its payload, room for its fds. */
static void
zyg_msg(struct msghdr *msg, struct iovec *iov, uint32_t *type, void *buf,
    size_t len, union zyg_cbuf *cb, size_t clen)
{
	memset(msg, 0, sizeof(*msg));
	iov[0].iov_base = type;
	iov[0].iov_len = sizeof(*type);
	iov[1].iov_base = buf;
	iov[1].iov_len = len;
	msg->msg_iov = iov;
	msg->msg_iovlen = 2;
	msg->msg_control = cb->buf;
	msg->msg_controllen = clen;
}

/*
 * exec: ask the zygote for one init, with the descriptors of fds (the
 * cgroups' counted in m->ncg); its answer comes in order (zyg_reply).
 */
int
zyg_send(const struct zyg_make *m, const int *fds)
{
	struct msghdr		 msg;
	struct cmsghdr		*cm;
	struct iovec		 iov[2];
	union zyg_cbuf		 cbuf;
	uint32_t		 type = ZYG_MAKE;
	int			 nfd = ZYG_FD_CG0 + m->ncg;
	ssize_t			 n;

	if (zyg_fd == -1 || m->ncg < 0 || nfd > ZYG_NFD) {
		errno = EINVAL;
		return (-1);
	}
	memset(&cbuf, 0, sizeof(cbuf));
	zyg_msg(&msg, iov, &type, (void *)m, sizeof(*m), &cbuf,
	    CMSG_SPACE(nfd * sizeof(int)));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfd * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, nfd * sizeof(int));
	while ((n = sendmsg(zyg_fd, &msg, MSG_NOSIGNAL)) == -1 &&
	    errno == EINTR)
		;
	return (n == (ssize_t)(sizeof(type) + sizeof(*m)) ? 0 : -1);
}

/*
 * exec: is an answer there (1), nothing (0: it was read already in the
 * same turn of exec's loop), or is the zygote gone (-1)?
 */
int
zyg_pending(void)
{
	struct zyg_reply	 rep;
	ssize_t			 n;

	while ((n = recv(zyg_fd, &rep, sizeof(rep), MSG_PEEK |
	    MSG_DONTWAIT)) == -1 && errno == EINTR)
		;
	if (n == -1 && errno == EAGAIN)
		return (0);
	return (n > 0 ? 1 : -1);
}

/*
 * exec: the zygote's answer to its oldest request: the init's pid
 * (exec's child: CLONE_PARENT), or -1 with errno (EPIPE: the zygote is
 * gone, and exec stops once it has reaped it).
 */
pid_t
zyg_reply(void)
{
	struct zyg_reply	 rep;
	ssize_t			 n;

	while ((n = recv(zyg_fd, &rep, sizeof(rep), 0)) == -1 &&
	    errno == EINTR)
		;
	if (n != sizeof(rep)) {
		errno = EPIPE;
		return (-1);
	}
	if (rep.pid <= 0) {
		errno = rep.err;
		return (-1);
	}
	return (rep.pid);
}

/*
 * The zygote: dies with exec, keeps no descriptor of exec's but its
 * own, serves exec's requests until exec closes its end.
 */
static __dead void
zyg_main(int fd, int life, int null)
{
	struct ucred	 cr;
	socklen_t	 crlen = sizeof(cr);
	struct zyg_make	 m;
	uint32_t	 type;
	int		 fds[ZYG_NFD], keep[3], nfd, i, j, t, rc;
	unsigned int	 from = 3;
	pid_t		 exec = getppid();

	setproctitle("zygote");
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    getppid() != exec)
		_exit(1);
	/* A stop is exec's to handle: the zygote goes with exec. */
	signal(SIGCHLD, SIG_DFL);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == -1 ||
	    cr.pid != exec)
		_exit(1);
	keep[0] = fd;
	keep[1] = life;
	keep[2] = null;
	for (i = 1; i < 3; i++)
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < 3; i++) {
		if ((unsigned int)keep[i] > from)
			close_range(from, keep[i] - 1, 0);
		from = keep[i] + 1;
	}
	close_range(from, ~0U, 0);
	/* Its own filter, not exec's: it and its inits alone may mount. */
	sandbox_confine(SANDBOX_ZYGOTE, NULL);
	for (;;) {
		rc = zyg_recv(fd, &type, &m, sizeof(m), fds, &nfd);
		if (rc == 0)
			_exit(0);	/* exec is gone */
		if (rc == -1)
			_exit(1);	/* not exec's protocol */
		zyg_serve(fd, type, &m, fds, nfd);
		for (i = 0; i < nfd; i++)
			close(fds[i]);
	}
}

/*
 * One request: 1 with its type, payload and fds; 0 at EOF; -1 when it
 * is no request the table allows (its fds closed).
 */
static int
zyg_recv(int fd, uint32_t *type, void *buf, size_t len, int *fds, int *nfd)
{
	struct msghdr		 msg;
	struct cmsghdr		*cm;
	struct iovec		 iov[2];
	union zyg_cbuf		 cbuf;
	const struct zyg_handler *h = NULL;
	ssize_t			 n;
	size_t			 i;

	*nfd = 0;
	zyg_msg(&msg, iov, type, buf, len, &cbuf, sizeof(cbuf.buf));
	while ((n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) == -1 &&
	    errno == EINTR)
		;
	if (n == 0)
		return (0);
	for (cm = CMSG_FIRSTHDR(&msg); n > 0 && cm != NULL;
	    cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS && *nfd == 0) {
			*nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			memcpy(fds, CMSG_DATA(cm), *nfd * sizeof(int));
		}
	for (i = 0; n > 0 && i < sizeof(zyg_handlers) /
	    sizeof(zyg_handlers[0]); i++)
		if (zyg_handlers[i].type == *type)
			h = &zyg_handlers[i];
	if (h != NULL && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
	    (size_t)n == sizeof(*type) + h->len && *nfd >= h->minfd &&
	    *nfd <= h->maxfd)
		return (1);
	for (i = 0; i < (size_t)*nfd; i++)
		close(fds[i]);
	*nfd = 0;
	return (-1);
}

/* A ZYG_MAKE: the init, and its pid (or the error) back to exec. */
static void
zyg_serve(int fd, uint32_t type, const struct zyg_make *m, const int *fds,
    int nfd)
{
	struct zyg_reply	 rep;

	memset(&rep, 0, sizeof(rep));
	if (type != ZYG_MAKE || m->ncg != nfd - ZYG_FD_CG0 ||
	    memchr(m->dir, '\0', sizeof(m->dir)) == NULL) {
		rep.pid = -1;
		rep.err = EINVAL;
	} else if ((rep.pid = sbx_zygote_make(m, fds)) == -1)
		rep.err = errno;
	while (send(fd, &rep, sizeof(rep), MSG_NOSIGNAL) == -1 &&
	    errno == EINTR)
		;
}

/* The run order, to a ready init: 0, or -1 when it is gone. */
int
sbx_order_send(int fd, const struct sbx_spec *sp)
{
	struct sbx_order	 o;
	struct iovec		 iov[2];
	char			*buf, *p;
	const char		*path = sp->test != NULL ? "-" : sp->path;
	size_t			 len = strlen(path) + 1, i;
	ssize_t			 n;
	int			 rc = 0;

	memset(&o, 0, sizeof(o));
	o.test = sp->test != NULL;
	for (i = 0; !o.test && sp->argv[i] != NULL; i++, o.argc++)
		len += strlen(sp->argv[i]) + 1;
	for (i = 0; !o.test && sp->env[i] != NULL; i++, o.envc++)
		len += strlen(sp->env[i]) + 1;
	if (len > SBX_ORDER_MAX || (buf = malloc(len)) == NULL)
		return (-1);
	o.len = len;
	p = buf;
	p = stpcpy(p, path) + 1;
	for (i = 0; i < o.argc; i++)
		p = stpcpy(p, sp->argv[i]) + 1;
	for (i = 0; i < o.envc; i++)
		p = stpcpy(p, sp->env[i]) + 1;
	iov[0].iov_base = &o;
	iov[0].iov_len = sizeof(o);
	iov[1].iov_base = buf;
	iov[1].iov_len = len;
	/* The init reads at once: a long order blocks only briefly. */
	while (iov[1].iov_len > 0) {
		if ((n = writev(fd, iov[0].iov_len ? iov : iov + 1,
		    iov[0].iov_len ? 2 : 1)) == -1) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		if ((size_t)n >= iov[0].iov_len) {
			n -= iov[0].iov_len;
			iov[0].iov_len = 0;
			iov[1].iov_base = (char *)iov[1].iov_base + n;
			iov[1].iov_len -= n;
		} else {
			iov[0].iov_base = (char *)iov[0].iov_base + n;
			iov[0].iov_len -= n;
		}
	}
	freezero(buf, len);
	return (rc);
}

/*
 * In a ready init's CLI: the order, into sp.  It is read into a mapping
 * of its own, the argv and env arrays, then the strings: the CLI shares
 * the init's memory until its execve (CLONE_VM | CLONE_VFORK), where the
 * heap's allocator is not to be used.  *bufp, *lenp: the mapping, also
 * after a failure; sbx_order_drop() zeroes and unmaps it.
 */
int
sbx_order_recv(int fd, struct sbx_spec *sp, char **bufp, size_t *lenp)
{
	struct sbx_order	 o;
	char			*buf, *p, *end, **v;
	void			*map;
	size_t			 got = 0, i, vlen;
	ssize_t			 n;

	while (got < sizeof(o)) {
		if ((n = read(fd, (char *)&o + got, sizeof(o) - got)) <= 0)
			return (-1);
		got += n;
	}
	if (o.len == 0 || o.len > SBX_ORDER_MAX || (o.argc < 1 && !o.test) ||
	    o.argc > o.len || o.envc > o.len)
		return (-1);
	vlen = ((size_t)o.argc + o.envc + 2) * sizeof(*v);
	if ((map = mmap(NULL, vlen + o.len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		return (-1);
	*bufp = map;
	*lenp = vlen + o.len;
	v = map;
	buf = (char *)map + vlen;
	for (got = 0; got < o.len; got += n)
		if ((n = read(fd, buf + got, o.len - got)) <= 0)
			return (-1);
	end = buf + o.len;
	if (end[-1] != '\0')
		return (-1);
	sp->path = p = buf;
	for (i = 0; i < o.argc + o.envc; i++) {
		if ((p = memchr(p, '\0', end - p)) == NULL || ++p >= end)
			return (-1);
		v[i + (i >= o.argc)] = p;
	}
	sp->argv = v;
	sp->env = v + o.argc + 1;
	sp->test = o.test ? sbx_selftest_run : NULL;
	return (0);
}

/* The init, once its CLI exec'd or died: the order it read goes. */
void
sbx_order_drop(char *buf, size_t len)
{
	if (buf == NULL)
		return;
	explicit_bzero(buf, len);
	munmap(buf, len);
}
