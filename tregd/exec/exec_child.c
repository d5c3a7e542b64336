/*
 * exec_child: what exec and the zygote's program (tregd/zygote/) share:
 * the CLI between its clone and its execve, its limits, the run order
 * it reads, the user namespace's maps, and tregd -T child's checks in
 * the CLI's place.  Part of both: nothing here may call into the rest
 * of tregd (the zygote's program is linked statically from this file
 * and its own alone).
 */

#include <sys/types.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "tregd.h"
#include "exec.h"
#include "exec_zygote.h"

int			 sbx_mode = SBX_NONE;
int			 sbx_devnull = -1;
int			 sbx_life[2] = { -1, -1 };
int			 sbx_memcg;
unsigned int		 sbx_count;
uid_t			 sbx_self_uid;
gid_t			 sbx_self_gid;
struct sandbox_child	 sbx_filter;
struct sbx_shared	*sbx_status;	/* shared with the inits */
const char		*sbx_cg_name = "RLIMIT_AS";
/* The order a CLI read in its init's memory, zeroed by the init. */
char			*sbx_order_buf;
size_t			 sbx_order_len;

/* The covers a run's init mounted, to seal once the mount points exist. */
#define SBX_HIDDEN_MAX	6
#define SBX_COVER_OPT	"size=64k,mode=0755"
struct sbx_hidden {
	size_t		 n;
	const char	*dir[SBX_HIDDEN_MAX];
	char		 sockdir[PATH_MAX];	/* the control socket's */
};

static void	sbx_limits(const struct tregd_conf *);
static void	sbx_egress_make(const struct sbx_spec *, int, int, int);
static int	sbx_egress_listen(uint16_t, int);
static int	sbx_mkdir_p(const char *);
static int	sbx_beneath(const char *, const char *);
static int	sbx_hide(const struct sbx_child *, struct sbx_hidden *, int);
static int	sbx_cover(struct sbx_hidden *, const char *, const char *,
		    int);
static int	sbx_keep(int, const char *, int);
static int	sbx_cover_cgroups(const struct sbx_child *,
		    struct sbx_hidden *);
static int	sbx_devpts(void);
static int	sbx_net_files(const struct sbx_child *, const char *, int);
static int	sbx_test_procs(void);
static int	sbx_test_memory(long long);
static void	sbx_say(const char *, ...)
		    __attribute__((__format__ (printf, 1, 2)));

/* Runs mount: exec must not be in a Landlock domain (it forbids mount). */
int
sbx_mounts(void)
{
	return (sbx_mode == SBX_NAMESPACES || sbx_mode == SBX_USERNS);
}

/* CLOCK_MONOTONIC in ns, as mono_ns() (util.c is not the zygote's). */
int64_t
sbx_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

/* Write s to dir/file; 0 or -1 with errno.  A signal is no failure. */
int
sbx_write(const char *dir, const char *file, const char *s)
{
	char	 path[PATH_MAX];
	ssize_t	 w;
	int	 fd, n, save;

	n = snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	while ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		if (errno != EINTR)
			return (-1);
	while ((w = write(fd, s, strlen(s))) == -1 && errno == EINTR)
		;
	save = errno;
	close(fd);
	errno = save;
	return (w == (ssize_t)strlen(s) ? 0 : -1);
}

/* libevent's handlers and exec's SIG_IGN must not reach the run. */
void
sbx_signals(void)
{
	const int	 sigs[] = { SIGPIPE, SIGCHLD, SIGTERM, SIGINT, SIGHUP };
	sigset_t	 set;
	size_t		 i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
}

/*
 * Before the CLI exists, errors go to the stderr pipe, which is the
 * run's stderr: the caller sees why.  Only async-signal-safe calls.
 */
__dead void
sbx_fail(int err, const char *what)
{
	char	 msg[256];
	ssize_t	 w = 0;
	int	 n;

	n = snprintf(msg, sizeof(msg), "[treg] cannot start the run: %s: "
	    "%s\n", what, strerror(errno));
	if (n > 0)
		w = write(err, msg, (size_t)n < sizeof(msg) ? (size_t)n :
		    sizeof(msg) - 1);
	(void)w;
	_exit(127);
}

/*
 * The CLI, between clone and execve: its own session, limits, /dev/null
 * and the pipes as its only descriptors, the run directory, the run
 * user, no way to gain privileges, death with its parent, the filter.
 * Raw system calls for the ids: libc's wrappers would try to change
 * every thread of the process whose memory this child shares.
 */
__dead void
sbx_cli(const struct sbx_child *c)
{
	const struct tregd_conf	*conf = c->conf;
	const struct sbx_spec	*sp = c->sp;
	const struct sbx_run	*sr = c->sr;
	struct sbx_spec		 order;
	pid_t			 ppid = getppid();
	int			 err = c->err, go = -1, pre = -1;

	sbx_signals();
	/* A ready init's order pipe: above stdio, then SBX_GO_FD. */
	if (c->go != -1 && (go = fcntl(c->go, F_DUPFD, SBX_GO_FD)) == -1)
		_exit(127);
	if (dup2(c->err, STDERR_FILENO) == -1 ||
	    dup2(c->out, STDOUT_FILENO) == -1 ||
	    dup2(sbx_devnull, STDIN_FILENO) == -1 ||
	    (go > SBX_GO_FD && dup2(go, SBX_GO_FD) == -1))
		_exit(127);
	err = STDERR_FILENO;
	if (close_range(go == -1 ? SBX_GO_FD : SBX_GO_FD + 1, ~0U, 0) == -1)
		sbx_fail(err, "close_range");
	/* With an init, its session is the run's; it has the filter. */
	if (!sbx_mounts() && setsid() == -1)
		sbx_fail(err, "setsid");
	if (chdir(sp->dir) == -1)
		sbx_fail(err, "chdir");
	/*
	 * Ready: the run is what exec sends.  Still root, so no process of
	 * the run's uid exists before its run.  A proxied run's proxy
	 * listener is there before its order: off the run's path.
	 */
	if (go != -1 && sp->network == RUN_NET_PROXY)
		pre = sbx_egress_listen(EGRESS_PROXY_PORT, err);
	if (go != -1) {
		order.dir = sp->dir;
		order.network = sp->network;
		if (sbx_order_recv(SBX_GO_FD, &order, &sbx_order_buf,
		    &sbx_order_len) == -1)
			_exit(127);	/* exec is gone */
		if (order.nports > 0)
			sbx_egress_make(&order, SBX_GO_FD, err, pre);
		close(SBX_GO_FD);
		sp = &order;
	}
	/* After the order's mapping: RLIMIT_AS would refuse it its room. */
	sbx_limits(conf);
	if (sr->change_uid) {
		if (syscall(SYS_setgroups, 1, &sr->gid) == -1 ||
		    syscall(SYS_setresgid, sr->gid, sr->gid, sr->gid) == -1 ||
		    syscall(SYS_setresuid, sr->uid, sr->uid, sr->uid) == -1)
			sbx_fail(err, "cannot become the run user");
		if (syscall(SYS_setuid, 0) != -1)
			_exit(127);
	}
	/*
	 * TMPDIR must exist; the XDG directories are made by whoever
	 * writes there first (as the XDG spec asks).  As the run user.
	 */
	if (mkdir("tmp", 0700) == -1 && errno != EEXIST)
		sbx_fail(err, "mkdir");
	/* After the uid change, which clears it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
		sbx_fail(err, "PR_SET_PDEATHSIG");
	if (getppid() != ppid)
		_exit(127);		/* the parent is already gone */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		sbx_fail(err, "PR_SET_NO_NEW_PRIVS");
	if (!sbx_mounts() && sandbox_child_apply(&sbx_filter) == -1)
		sbx_fail(err, "seccomp");
	if (sp->test != NULL)
		_exit(sp->test(conf, sr));
	if (sbx_mounts())
		__atomic_store_n(&sbx_status[sr->slot].execve, sbx_now(),
		    __ATOMIC_RELEASE);
	execve(sp->path, sp->argv, sp->env);
	sbx_fail(err, sp->argv[0]);
}

/*
 * RUN_NET_PROXY, in the CLI before it becomes the run user (root in the
 * run's network namespace may bind any port): the egress hosts' lines
 * appended to the run's /etc/hosts (its init bound a file of its own
 * there), and a listener on 127.0.0.1 for each port, sent to exec on
 * the order's socket, their ports as the payload.  exec hands them to
 * the relay; until the relay accepts, connections wait in the backlog.
 * These descriptors are close-on-exec: the CLI never holds them.  pre:
 * the proxy's, made before the order, or -1.
 */
static void
sbx_egress_make(const struct sbx_spec *sp, int sock, int err, int pre)
{
	struct iovec		 iov;
	int			 fds[SBX_PORTS_MAX], fd;
	size_t			 i, len = strlen(sp->etc_hosts);
	ssize_t			 n;

	if (len > 0 && (fd = open("/etc/hosts", O_WRONLY | O_APPEND |
	    O_CLOEXEC)) != -1) {
		n = write(fd, sp->etc_hosts, len);
		close(fd);
		if (n != (ssize_t)len)
			sbx_fail(err, "/etc/hosts");
	}
	for (i = 0; i < sp->nports; i++) {
		if (sp->ports[i] == EGRESS_PROXY_PORT && pre != -1) {
			fds[i] = pre;
			pre = -1;
		} else
			fds[i] = sbx_egress_listen(sp->ports[i], err);
	}
	iov.iov_base = (void *)sp->ports;
	iov.iov_len = sp->nports * sizeof(*sp->ports);
	n = fd_send(sock, &iov, 1, fds, sp->nports);
	if (n != (ssize_t)iov.iov_len)
		_exit(127);		/* exec is gone */
	for (i = 0; i < sp->nports; i++)
		close(fds[i]);
}

/* A listening socket on 127.0.0.1:port, in the run's namespace. */
static int
sbx_egress_listen(uint16_t port, int err)
{
	struct sockaddr_in	 sin;
	int			 fd, on = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		sbx_fail(err, "egress listener");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, SOMAXCONN) == -1)
		sbx_fail(err, "egress listener");
	return (fd);
}

/*
 * In exec: a run's listeners, as its CLI sent them (sbx_egress_make) on
 * exec's end of the order socket: how many (their ports in ports), 0
 * when the socket closed without them, -2 when nothing came yet, -1 on
 * a message that is not that (its descriptors closed).  Each is checked
 * to be a TCP socket listening on 127.0.0.1 at the port it came with.
 */
int
sbx_egress_recv(int sock, int *fds, uint16_t *ports, size_t max)
{
	struct sockaddr_in	 sin;
	socklen_t		 slen;
	struct iovec		 iov;
	ssize_t			 n;
	size_t			 i, nfd = 0;
	int			 v, bad = 0;

	iov.iov_base = ports;
	iov.iov_len = max * sizeof(*ports);
	n = fd_recv(sock, &iov, 1, MSG_DONTWAIT, fds, max, &nfd);
	if (n == -1 && errno == EAGAIN)
		return (-2);
	if (n == -1)
		return (-1);
	if (n == 0 && nfd == 0)
		return (0);
	if (nfd == 0 || (size_t)n != nfd * sizeof(*ports))
		bad = 1;
	for (i = 0; !bad && i < nfd; i++) {
		slen = sizeof(v);
		if (getsockopt(fds[i], SOL_SOCKET, SO_ACCEPTCONN, &v,
		    &slen) == -1 || v != 1) {
			bad = 1;
			break;
		}
		slen = sizeof(sin);
		if (getsockname(fds[i], (struct sockaddr *)&sin, &slen) ==
		    -1 || slen != sizeof(sin) || sin.sin_family != AF_INET ||
		    sin.sin_addr.s_addr != htonl(INADDR_LOOPBACK) ||
		    ntohs(sin.sin_port) != ports[i])
			bad = 1;
	}
	if (bad) {
		for (i = 0; i < nfd; i++)
			close(fds[i]);
		return (-1);
	}
	return ((int)nfd);
}

/* The CLI's limits (its stderr is the run's by now). */
static void
sbx_limits(const struct tregd_conf *conf)
{
	struct rlimit	 rl;

	if (conf->run_rlimits) {
		rl.rlim_cur = rl.rlim_max = 0;
		if (setrlimit(RLIMIT_CORE, &rl) == -1)
			sbx_fail(STDERR_FILENO, "RLIMIT_CORE");
		rl.rlim_cur = conf->run_cpu;
		rl.rlim_max = conf->run_cpu + 1;
		if (setrlimit(RLIMIT_CPU, &rl) == -1)
			sbx_fail(STDERR_FILENO, "RLIMIT_CPU");
		rl.rlim_cur = rl.rlim_max = conf->run_filesize;
		if (setrlimit(RLIMIT_FSIZE, &rl) == -1)
			sbx_fail(STDERR_FILENO, "RLIMIT_FSIZE");
	}
	/* Per uid: per run, unless the run shares the daemon's uid. */
	if (sbx_mode != SBX_NONE) {
		rl.rlim_cur = rl.rlim_max = conf->run_processes;
		if (setrlimit(RLIMIT_NPROC, &rl) == -1)
			sbx_fail(STDERR_FILENO, "RLIMIT_NPROC");
	}
	if (!sbx_memcg || !sbx_mounts()) {
		rl.rlim_cur = rl.rlim_max = conf->run_memory;
		if (setrlimit(RLIMIT_AS, &rl) == -1)
			sbx_fail(STDERR_FILENO, "RLIMIT_AS");
	}
}

/*
 * userns: the daemon's uid and gid map to themselves, nothing else.  The
 * files of a process that is not dumpable belong to root: dumpable for
 * the moment it takes (no other run can see this process).
 */
int
sbx_idmap(void)
{
	char	 map[64];
	int	 rc = -1;

	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == -1)
		return (-1);
	if (sbx_write("/proc/self", "setgroups", "deny") == -1)
		goto done;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned int)sbx_self_uid,
	    (unsigned int)sbx_self_uid);
	if (sbx_write("/proc/self", "uid_map", map) == -1)
		goto done;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned int)sbx_self_gid,
	    (unsigned int)sbx_self_gid);
	rc = sbx_write("/proc/self", "gid_map", map);
 done:
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		_exit(127);
	return (rc);
}

/* For tregd -T child (exec_selftest.c): what limits a run's memory. */
const char *
sbx_memory_limit(void)
{
	return (sbx_cg_name);
}

/* Runs get a uid of their own, or a user namespace. */
int
sbx_isolated(void)
{
	return (sbx_mode != SBX_NONE);
}

/* Room for the most descriptors one message carries. */
_Static_assert(ZYG_NFD <= FD_PASS_MAX && SBX_PORTS_MAX <= FD_PASS_MAX,
    "FD_PASS_MAX is too small");
union fd_cbuf {
	struct cmsghdr	 hdr;
	char		 buf[CMSG_SPACE(FD_PASS_MAX * sizeof(int))];
};

/*
 * sendmsg of iov with n descriptors, EINTR retried, never SIGPIPE (the
 * reader may be gone): what sendmsg returned.
 */
ssize_t
fd_send(int sock, struct iovec *iov, int iovcnt, const int *fds, size_t n)
{
	struct msghdr	 msg;
	struct cmsghdr	*cm;
	union fd_cbuf	 cb;
	ssize_t		 r;

	if (n > FD_PASS_MAX) {
		errno = EINVAL;
		return (-1);
	}
	memset(&msg, 0, sizeof(msg));
	memset(&cb, 0, sizeof(cb));
	msg.msg_iov = iov;
	msg.msg_iovlen = iovcnt;
	if (n > 0) {
		msg.msg_control = cb.buf;
		msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	}
	while ((r = sendmsg(sock, &msg, MSG_NOSIGNAL)) == -1 && errno == EINTR)
		;
	return (r);
}

/*
 * recvmsg into iov (flags besides close-on-exec: MSG_DONTWAIT), the
 * descriptors into fds and their count into *nfd: what recvmsg returned.
 * A message cut short or with more than max descriptors is refused
 * whole: every descriptor it brought closed, -1 with EMSGSIZE.
 */
ssize_t
fd_recv(int sock, struct iovec *iov, int iovcnt, int flags, int *fds,
    size_t max, size_t *nfd)
{
	struct msghdr	 msg;
	struct cmsghdr	*cm;
	union fd_cbuf	 cb;
	size_t		 i, n;
	ssize_t		 r;
	int		 v, bad;

	*nfd = 0;
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = iov;
	msg.msg_iovlen = iovcnt;
	msg.msg_control = cb.buf;
	msg.msg_controllen = sizeof(cb.buf);
	while ((r = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC)) == -1 &&
	    errno == EINTR)
		;
	if (r == -1)
		return (-1);
	bad = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
	for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&v, CMSG_DATA(cm) + i * sizeof(int), sizeof(v));
			if (*nfd < max)
				fds[(*nfd)++] = v;
			else {
				close(v);
				bad = 1;
			}
		}
	}
	if (bad) {
		for (i = 0; i < *nfd; i++)
			close(fds[i]);
		*nfd = 0;
		errno = EMSGSIZE;
		return (-1);
	}
	return (r);
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
	    o.argc > o.len || o.envc > o.len || o.nports > SBX_PORTS_MAX ||
	    (o.nports > 0) != (sp->network == RUN_NET_PROXY))
		return (-1);
	/* The vectors, the ports, then the strings. */
	vlen = ((size_t)o.argc + o.envc + 2) * sizeof(*v) +
	    sizeof(o.ports);
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
	for (i = 0; i < o.argc + o.envc + (o.nports > 0); i++) {
		if ((p = memchr(p, '\0', end - p)) == NULL || ++p >= end)
			return (-1);
		if (i < o.argc + o.envc)
			v[i + (i >= o.argc)] = p;
	}
	sp->argv = v;
	sp->env = v + o.argc + 1;
	sp->etc_hosts = o.nports > 0 ? p : NULL;
	sp->nports = o.nports;
	sp->ports = (uint16_t *)(v + o.argc + o.envc + 2);
	memcpy((uint16_t *)sp->ports, o.ports, sizeof(o.ports));
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

static void
sbx_say(const char *fmt, ...)
{
	char	 buf[256];
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && write(STDOUT_FILENO, buf, (size_t)n < sizeof(buf) ?
	    (size_t)n : sizeof(buf) - 1) == -1)
		_exit(1);
}

/* Entries of /proc that are processes. */
static int
sbx_test_procs(void)
{
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	if ((d = opendir("/proc")) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			n++;
	closedir(d);
	return (n);
}

/* A child that touches twice the limit: killed, or refused memory. */
static int
sbx_test_memory(long long limit)
{
	pid_t		 pid;
	char		*p;
	long long	 i;
	int		 status;

	if ((pid = fork()) == -1)
		return (-1);
	if (pid == 0) {
		for (i = 0; i < 2 * limit; i += 1024 * 1024) {
			if ((p = mmap(NULL, 1024 * 1024, PROT_READ |
			    PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			    0)) == MAP_FAILED)
				_exit(3);
			memset(p, 1, 1024 * 1024);
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) == -1)
		return (-1);
	return ((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
	    (WIFEXITED(status) && WEXITSTATUS(status) == 3) ? 0 : -1);
}

/* In the CLI's place, fully sandboxed: what does the run see? */
int
sbx_selftest_run(const struct tregd_conf *conf, const struct sbx_run *sr)
{
	pid_t	 pid;
	int	 bad = 0, n, forks = 0, save;

	n = sbx_test_procs();
	sbx_say("selftest child: namespaces: pid %d, %d processes in /proc, "
	    "uid %u\n", (int)getpid(), n, (unsigned int)getuid());
	if (sbx_mounts() && (getpid() != 2 || n != 2))
		bad++;
	if (sr->change_uid && getuid() != sr->uid)
		bad++;
	if (mount("tmpfs", "/tmp", "tmpfs", 0, NULL) == 0 || errno != EPERM) {
		sbx_say("selftest child: filter: mount was allowed\n");
		bad++;
	} else
		sbx_say("selftest child: filter: mount: %s\n",
		    strerror(errno));
	if (sbx_test_memory(conf->run_memory) == -1) {
		sbx_say("selftest child: limits: memory was not bounded\n");
		bad++;
	} else
		sbx_say("selftest child: limits: memory bounded at %lld "
		    "bytes by %s\n", conf->run_memory, sbx_memory_limit());
	/* The forks pause; they die with the run. */
	while (forks < 4 * conf->run_processes) {
		if ((pid = fork()) == 0) {
			pause();
			_exit(0);
		}
		if (pid == -1)
			break;
		forks++;
	}
	save = errno;
	sbx_say("selftest child: limits: %d forks, then %s\n", forks,
	    strerror(save));
	if (sbx_isolated() && (forks >= conf->run_processes ||
	    save != EAGAIN))
		bad++;
	return (bad ? 1 : 0);
}

/*
 * The run's view of the filesystem: everything read-only and private
 * (nothing of it propagates back), what is the host's covered (see
 * sbx_hide), its own /proc and pty devices, empty /tmp, /var/tmp and
 * /dev/shm, the run-directory base replaced by a read-only tmpfs holding
 * only this run's directory, a tmpfs of "run tmpsize" owned by the run
 * user.  Gone with the run.  In the run's init (and in
 * bench/run-floor.c's).
 */
int
sbx_mounts_make(const struct sbx_child *c)
{
	const struct tregd_conf	*conf = c->conf;
	const char *const	 tmps[] = { "/tmp", "/var/tmp", "/dev/shm" };
	const unsigned long	 fl = MS_NOSUID | MS_NODEV;
	struct sbx_hidden	 h;
	struct mount_attr	 ma;
	char			 opt[128], ca[PATH_MAX], src[64];
	char			 resolv[PATH_MAX];
	size_t			 i;
	int			 cafd = -1, fd, netns;

	/* Its own network: its own names, no resolver (SPEC 6a). */
	netns = c->sp->network != RUN_NET_HOST;
	if (!netns || realpath("/etc/resolv.conf", resolv) == NULL)
		resolv[0] = '\0';

	/*
	 * The CA bundle exec made (exec_ca_bundle), found before the run
	 * directory base is covered, bound back at its path afterwards.
	 */
	if ((size_t)snprintf(ca, sizeof(ca), "%s/%s", conf->run_dir,
	    RUN_CA_BUNDLE) < sizeof(ca))
		cafd = open(ca, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	memset(&ma, 0, sizeof(ma));
	ma.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
	ma.propagation = MS_PRIVATE;
	if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &ma,
	    sizeof(ma)) == -1)
		return (-1);
	/* First: what is kept of the hidden is bound from /proc/self/fd. */
	if (mount("proc", "/proc", "proc", fl | MS_NOEXEC, NULL) == -1)
		return (-1);
	if (sbx_hide(c, &h, netns) == -1)
		return (-1);
	if (mount("tmpfs", conf->state, "tmpfs", fl | MS_RDONLY | MS_NOEXEC,
	    "size=4k,mode=0") == -1 && errno != ENOENT)
		return (-1);
	snprintf(opt, sizeof(opt), "size=%lld,mode=1777", conf->run_tmpsize);
	for (i = 0; i < sizeof(tmps) / sizeof(tmps[0]); i++)
		if (mount("tmpfs", tmps[i], "tmpfs", fl, opt) == -1 &&
		    errno != ENOENT)
			return (-1);
	if (sbx_mkdir_p(conf->run_dir) == -1 ||
	    mount("tmpfs", conf->run_dir, "tmpfs", fl, "size=64k,mode=0755") ==
	    -1 || mkdir(c->sp->dir, 0700) == -1)
		return (-1);
	snprintf(opt, sizeof(opt), "size=%lld,mode=0700,uid=%u,gid=%u",
	    conf->run_tmpsize, (unsigned int)c->sr->uid,
	    (unsigned int)c->sr->gid);
	if (mount("tmpfs", c->sp->dir, "tmpfs", fl, opt) == -1)
		return (-1);
	if (cafd != -1) {
		snprintf(src, sizeof(src), "/proc/self/fd/%d", cafd);
		if ((fd = open(ca, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		    0444)) == -1)
			return (-1);
		close(fd);
		if (mount(src, ca, NULL, MS_BIND, NULL) == -1)
			return (-1);
		/* A proxied run trusts the run CA wherever it looks. */
		if (c->sp->network == RUN_NET_PROXY &&
		    mount(src, TREGD_CA_BUNDLE, NULL, MS_BIND, NULL) == -1 &&
		    errno != ENOENT)
			return (-1);
		close(cafd);
	}
	if (netns && sbx_net_files(c, resolv, h.n) == -1)
		return (-1);
	if (mount(NULL, conf->run_dir, NULL, MS_REMOUNT | MS_RDONLY | fl,
	    "size=64k,mode=0755") == -1)
		return (-1);
	if (sbx_devpts() == -1)
		return (-1);
	/* The covers were written to (mount points): read-only now. */
	for (i = 0; i < h.n; i++)
		if (mount(NULL, h.dir[i], NULL, MS_REMOUNT | MS_RDONLY | fl |
		    MS_NOEXEC, SBX_COVER_OPT) == -1)
			return (-1);
	return (0);
}

/* Whether path is dir or below it (both canonical). */
static int
sbx_beneath(const char *path, const char *dir)
{
	size_t	 n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return (1);
	return (strncmp(path, dir, n) == 0 && (path[n] == '\0' ||
	    path[n] == '/'));
}

/*
 * What of the host a run must not reach through the filesystem, each
 * covered by an empty tmpfs (sealed read-only by the caller once the
 * mount points below were made): the control socket's directory (its
 * peer check refuses a run anyway), /run and /var/run (host daemons'
 * sockets: PostgreSQL, D-Bus, systemd's; pid files), and
 * /sys/fs/cgroup (other runs' cgroups).  Kept: the file
 * /etc/resolv.conf names when it is under /run (a resolver's stub), and
 * the run's own cgroups, at their paths, read-only.  The state
 * directory, /tmp, /var/tmp, /dev/shm and the run-directory base are
 * replaced by the caller.  Sockets elsewhere stay as reachable as
 * their modes say (tregd.8, CAVEATS).
 */
static int
sbx_hide(const struct sbx_child *c, struct sbx_hidden *h, int netns)
{
	/* A run with a network of its own has no resolver to keep. */
	const char		*resolv = netns ? NULL : "/etc/resolv.conf";
	const char *const	 skip[] = { "/run", "/var/run", "/tmp",
				    "/var/tmp", "/dev/shm" };
	char			*dir = h->sockdir, *p;
	struct stat		 st;
	size_t			 i;

	memset(h, 0, sizeof(*h));
	/* The socket's directory, unless it is hidden already. */
	if (c->conf->socket[0] == '/' &&
	    realpath(c->conf->socket, dir) != NULL &&
	    (p = strrchr(dir, '/')) != NULL && p != dir) {
		*p = '\0';
		for (i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
			if (sbx_beneath(dir, skip[i]))
				break;
		if (i == sizeof(skip) / sizeof(skip[0]) &&
		    !sbx_beneath(dir, c->conf->state) &&
		    !sbx_beneath(dir, c->conf->run_dir) &&
		    sbx_cover(h, dir, NULL, 0) == -1)
			return (-1);
	}
	if (sbx_cover(h, "/run", resolv, 0) == -1)
		return (-1);
	if (lstat("/var/run", &st) == 0 && S_ISDIR(st.st_mode) &&
	    sbx_cover(h, "/var/run", resolv, 0) == -1)
		return (-1);
	return (sbx_cover_cgroups(c, h));
}

/*
 * Cover dir with an empty tmpfs, writable until sealed; what keep names
 * (a file, or with isdir a directory), when it resolves to below dir,
 * bound again at its place, as it is.  1 covered, 0 no such dir, -1.
 */
static int
sbx_cover(struct sbx_hidden *h, const char *dir, const char *keep,
    int isdir)
{
	char	 path[PATH_MAX];
	int	 fd = -1, rc = -1;

	if (h->n >= SBX_HIDDEN_MAX) {
		errno = E2BIG;
		return (-1);
	}
	if (keep != NULL && realpath(keep, path) != NULL &&
	    sbx_beneath(path, dir) && strcmp(path, dir) != 0 &&
	    (fd = open(path, O_PATH | O_CLOEXEC)) == -1)
		return (-1);
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    SBX_COVER_OPT) == -1) {
		rc = errno == ENOENT ? 0 : -1;
		goto done;
	}
	h->dir[h->n++] = dir;
	rc = fd == -1 || sbx_keep(fd, path, isdir) == 0 ? 1 : -1;
 done:
	if (fd != -1)
		close(fd);
	return (rc);
}

/* fd (O_PATH, opened before its place was covered) bound at path. */
static int
sbx_keep(int fd, const char *path, int isdir)
{
	char	 src[32], parent[PATH_MAX], *p;
	int	 f;

	snprintf(parent, sizeof(parent), "%s", path);
	if ((p = strrchr(parent, '/')) == NULL)
		return (-1);
	*p = '\0';
	if (sbx_mkdir_p(parent) == -1)
		return (-1);
	if (isdir) {
		if (mkdir(path, 0755) == -1 && errno != EEXIST)
			return (-1);
	} else {
		if ((f = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) ==
		    -1)
			return (-1);
		close(f);
	}
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	/* The bind has its source's flags: read-only, like all the host. */
	return (mount(src, path, NULL, MS_BIND, NULL));
}

/*
 * /sys/fs/cgroup: covered, the run's own cgroups (the directories of the
 * cgroup.procs it is to join) bound back at their paths, so that a CLI
 * reads its limits where /proc/self/cgroup says they are.
 */
static int
sbx_cover_cgroups(const struct sbx_child *c, struct sbx_hidden *h)
{
	char	 link[64], path[2][PATH_MAX], *p;
	ssize_t	 n;
	int	 fd[2] = { -1, -1 }, i, rc = -1;

	for (i = 0; i < 2; i++) {
		if (c->cgfd[i] == -1)
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", c->cgfd[i]);
		if ((n = readlink(link, path[i], sizeof(path[i]) - 1)) <= 0)
			goto done;
		path[i][n] = '\0';
		if ((p = strrchr(path[i], '/')) == NULL)
			goto done;
		*p = '\0';		/* its directory */
		if (sbx_beneath(path[i], "/sys/fs/cgroup") &&
		    (fd[i] = open(path[i], O_PATH | O_DIRECTORY |
		    O_CLOEXEC)) == -1)
			goto done;
	}
	if ((rc = sbx_cover(h, "/sys/fs/cgroup", NULL, 0)) == 1)
		for (i = 0, rc = 0; i < 2 && rc == 0; i++)
			if (fd[i] != -1)
				rc = sbx_keep(fd[i], path[i], 1);
 done:
	for (i = 0; i < 2; i++)
		if (fd[i] != -1)
			close(fd[i]);
	return (rc == -1 ? -1 : 0);
}

/*
 * A run in a network namespace of its own (SPEC 6a): a small tmpfs at
 * <run dir base>/.net, root's, holding the run's hosts file
 * (localhost; a proxied run's CLI appends its egress hosts before it
 * becomes the run user) and an empty resolv.conf, bound over
 * /etc/hosts and over what /etc/resolv.conf names.  When that is under
 * a covered directory (a resolver's stub in /run), an empty file there
 * does, the cover still writable (ncovers: sealed afterwards).
 */
static int
sbx_net_files(const struct sbx_child *c, const char *resolv, int ncovers)
{
	static const char	 hosts[] = "127.0.0.1\tlocalhost\n"
				    "::1\tlocalhost\n";
	const unsigned long	 fl = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	char			 dir[PATH_MAX], path[PATH_MAX], *p;
	int			 fd;
	ssize_t			 n;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/.net", c->conf->run_dir) >=
	    sizeof(dir) || mkdir(dir, 0755) == -1 ||
	    mount("tmpfs", dir, "tmpfs", fl, "size=64k,mode=0755") == -1)
		return (-1);
	if ((size_t)snprintf(path, sizeof(path), "%s/hosts", dir) >=
	    sizeof(path))
		return (-1);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0644)) == -1)
		return (-1);
	n = write(fd, hosts, sizeof(hosts) - 1);
	close(fd);
	if (n != (ssize_t)sizeof(hosts) - 1 || (mount(path, "/etc/hosts",
	    NULL, MS_BIND, NULL) == -1 && errno != ENOENT))
		return (-1);
	if (resolv[0] == '\0')
		return (0);
	if (ncovers > 0 && (sbx_beneath(resolv, "/run") ||
	    sbx_beneath(resolv, "/var/run"))) {
		snprintf(path, sizeof(path), "%s", resolv);
		if ((p = strrchr(path, '/')) == NULL)
			return (-1);
		*p = '\0';
		if (sbx_mkdir_p(path) == -1 || (fd = open(resolv, O_WRONLY |
		    O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) == -1)
			return (-1);
		close(fd);
		return (0);
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/resolv.conf", dir) >=
	    sizeof(path))
		return (-1);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0644)) == -1)
		return (-1);
	close(fd);
	return (mount(path, resolv, NULL, MS_BIND, NULL));
}

/*
 * The run's own pty devices: a devpts instance of its own on /dev/pts
 * and its ptmx on /dev/ptmx, so that it neither sees the host's
 * terminals nor allocates among them.  A host without /dev/pts has none.
 */
static int
sbx_devpts(void)
{
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	    "newinstance,ptmxmode=0666,mode=0620") == -1)
		return (errno == ENOENT ? 0 : -1);
	if (mount("/dev/pts/ptmx", "/dev/ptmx", NULL, MS_BIND, NULL) == -1 &&
	    errno != ENOENT)
		return (-1);
	return (0);
}

/* mkdir -p, 0755 (only in the run's own tmpfs, or existing already). */
static int
sbx_mkdir_p(const char *path)
{
	char	 buf[PATH_MAX], *p;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	for (p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) == -1 && errno != EEXIST)
			return (-1);
		if (p[0] == '\0' && path[p - buf] == '\0')
			return (0);
		*p = '/';
	}
}
