/*
 * zygote: the program exec's zygote runs (SPEC.md section 6,
 * "Isolation"; the design is in tregd/exec_sandbox.c's head comment).
 *
 * Small and static on purpose: every init is a clone of this process,
 * and a clone copies its maker's mappings and an init's exit unmaps
 * them; exec's address space has some 250 of them (tregd's ~50 shared
 * libraries), this one a dozen.  exec forks the zygote once at start,
 * before it has read any message of its peers; that child installs the
 * zygote's filter (SANDBOX_ZYGOTE: it lets the inits make namespaces
 * and mount; exec's refuses both) and calls execve on this program,
 * which tregd carries in itself (tregd/zygote_blob.S) and hands over in
 * a sealed memfd: nothing of exec's memory is left here.  Its settings
 * (what the inits need of tregd.conf, the run child's filter as BPF)
 * come in another sealed memfd, its descriptors at fixed numbers
 * (exec_zygote.h).  It accepts one message, ZYG_MAKE, from exec alone
 * (the socketpair's peer, checked once), of one exact length and with
 * its exact descriptors; nothing in it is a secret.  The run's argv,
 * environment and secrets go from exec to the init on the init's order
 * pipe, after the init exists.
 */

#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <net/if.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "tregd.h"
#include "exec.h"
#include "exec_zygote.h"

/* What the zygote accepts: the type, the exact length, the fds. */
struct zyg_handler {
	uint32_t	 type;
	size_t		 len;
	int		 minfd, maxfd;
};

static const struct zyg_handler zyg_handlers[] = {
	{ ZYG_MAKE, sizeof(struct zyg_make), ZYG_FD_CG0, ZYG_NFD }
};

static struct tregd_conf zyg_conf;	/* what the inits read of it */
static pid_t		 zyg_exec;
static char		*zyg_title;	/* argv's room, for ps */
static size_t		 zyg_title_len;
static char		 zyg_stack[64 * 1024] __attribute__((__aligned__(16)));
static char		 zyg_cli_stack[128 * 1024]
			    __attribute__((__aligned__(16)));

static void	 zyg_title_set(const char *);
static void	 zyg_settings(void);
static int	 zyg_recv(int, uint32_t *, void *, size_t, int *, int *);
static void	 zyg_serve(int, uint32_t, const struct zyg_make *,
		    const int *, int);
static pid_t	 zyg_make(const struct zyg_make *, const int *);
static int	 zyg_cli_entry(void *);
static int	 sbx_exec_gone(void);
static int	 sbx_init_main(void *);
static int	 sbx_loopback(void);
static void	 sbx_close_others(const struct sbx_child *);
static void	 sbx_caps_clear(void);

/*
 * Dies with exec, serves exec's requests until exec closes its end; a
 * stop is exec's to handle (the zygote goes with exec).
 */
int
main(int argc, char *argv[])
{
	struct ucred	 cr;
	socklen_t	 crlen = sizeof(cr);
	struct zyg_make	 m;
	uint32_t	 type;
	int		 fds[ZYG_NFD], nfd, i, rc;

	/*
	 * Its execve made it dumpable again (exec was not): no core and no
	 * ptrace by the daemon's user, whose runs' orders pass through here.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 || argc < 1)
		_exit(1);
	zyg_title = argv[0];
	zyg_title_len = argv[argc - 1] + strlen(argv[argc - 1]) + 1 - argv[0];
	(void)prctl(PR_SET_NAME, "tregd", 0, 0, 0);
	zyg_settings();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    getppid() != zyg_exec)
		_exit(1);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (getsockopt(ZYG_FD_SOCK, SOL_SOCKET, SO_PEERCRED, &cr,
	    &crlen) == -1 || cr.pid != zyg_exec)
		_exit(1);
	for (;;) {
		rc = zyg_recv(ZYG_FD_SOCK, &type, &m, sizeof(m), fds, &nfd);
		if (rc == 0)
			_exit(0);	/* exec is gone */
		if (rc == -1)
			_exit(1);	/* not exec's protocol */
		zyg_serve(ZYG_FD_SOCK, type, &m, fds, nfd);
		for (i = 0; i < nfd; i++)
			close(fds[i]);
	}
}

/* What ps shows: s in argv's room, the rest of it NUL. */
static void
zyg_title_set(const char *s)
{
	size_t	 n = strlen(s);

	if (zyg_title_len == 0)
		return;
	if (n >= zyg_title_len)
		n = zyg_title_len - 1;
	memcpy(zyg_title, s, n);
	memset(zyg_title + n, 0, zyg_title_len - n);
}

/*
 * The settings exec left in ZYG_FD_CONF (sealed: nobody can change them
 * after exec wrote them), the statuses' page from ZYG_FD_STATUS.
 */
static void
zyg_settings(void)
{
	struct zyg_conf	 zc;
	size_t		 blen;
	void		*bpf;

	if (pread(ZYG_FD_CONF, &zc, sizeof(zc), 0) != (ssize_t)sizeof(zc) ||
	    zc.magic != ZYG_MAGIC || zc.count == 0 || zc.count > RUN_USERS_MAX ||
	    zc.bpf_len == 0 || zc.bpf_len > BPF_MAXINSNS ||
	    memchr(zc.state, '\0', sizeof(zc.state)) == NULL ||
	    memchr(zc.socket, '\0', sizeof(zc.socket)) == NULL ||
	    memchr(zc.run_dir, '\0', sizeof(zc.run_dir)) == NULL ||
	    memchr(zc.memory_limit, '\0', sizeof(zc.memory_limit)) == NULL)
		_exit(1);
	blen = zc.bpf_len * sizeof(struct sock_filter);
	if ((bpf = malloc(blen)) == NULL || pread(ZYG_FD_CONF, bpf, blen,
	    sizeof(zc)) != (ssize_t)blen)
		_exit(1);
	close(ZYG_FD_CONF);
	sbx_filter.bpf = bpf;
	sbx_filter.len = zc.bpf_len;
	sbx_mode = zc.mode;
	sbx_count = zc.count;
	sbx_self_uid = zc.self_uid;
	sbx_self_gid = zc.self_gid;
	sbx_memcg = zc.memcg;
	sbx_devnull = ZYG_FD_NULL;
	sbx_life[0] = ZYG_FD_LIFE;
	zyg_exec = zc.exec;
	if ((sbx_cg_name = strdup(zc.memory_limit)) == NULL)
		_exit(1);
	zyg_conf.run_rlimits = zc.run_rlimits;
	zyg_conf.run_processes = zc.run_processes;
	zyg_conf.run_cpu = zc.run_cpu;
	zyg_conf.run_filesize = zc.run_filesize;
	zyg_conf.run_memory = zc.run_memory;
	zyg_conf.run_tmpsize = zc.run_tmpsize;
	memcpy(zyg_conf.state, zc.state, sizeof(zyg_conf.state));
	memcpy(zyg_conf.socket, zc.socket, sizeof(zyg_conf.socket));
	memcpy(zyg_conf.run_dir, zc.run_dir, sizeof(zyg_conf.run_dir));
	sbx_status = mmap(NULL, sbx_count * sizeof(*sbx_status),
	    PROT_READ | PROT_WRITE, MAP_SHARED, ZYG_FD_STATUS, 0);
	if (sbx_status == MAP_FAILED)
		_exit(1);
	close(ZYG_FD_STATUS);
}

/*
 * One request: 1 with its type, payload and fds; 0 at EOF; -1 when it
 * is no request the table allows (its fds closed).
 */
static int
zyg_recv(int fd, uint32_t *type, void *buf, size_t len, int *fds, int *nfd)
{
	struct iovec		 iov[2];
	const struct zyg_handler *h = NULL;
	ssize_t			 n;
	size_t			 i, got;

	iov[0].iov_base = type;
	iov[0].iov_len = sizeof(*type);
	iov[1].iov_base = buf;
	iov[1].iov_len = len;
	/* More descriptors than any request has: none kept, -1. */
	n = fd_recv(fd, iov, 2, 0, fds, ZYG_NFD, &got);
	*nfd = (int)got;
	if (n == 0 && got == 0)
		return (0);
	for (i = 0; n > 0 && i < sizeof(zyg_handlers) /
	    sizeof(zyg_handlers[0]); i++)
		if (zyg_handlers[i].type == *type)
			h = &zyg_handlers[i];
	if (h != NULL && (size_t)n == sizeof(*type) + h->len &&
	    *nfd >= h->minfd && *nfd <= h->maxfd)
		return (1);
	for (i = 0; i < got; i++)
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
	} else if ((rep.pid = zyg_make(m, fds)) == -1)
		rep.err = errno;
	while (send(fd, &rep, sizeof(rep), MSG_NOSIGNAL) == -1 &&
	    errno == EINTR)
		;
}

/*
 * In the zygote: clone the init m asks for, exec's child (CLONE_PARENT:
 * exec reaps it and reads its status as before).  Its pid or -1.
 */
static pid_t
zyg_make(const struct zyg_make *m, const int *fds)
{
	struct sbx_child	 c;
	struct sbx_spec		 sp;
	struct sbx_run		 sr;
	int			 flags, i;

	if (m->slot < 0 || (unsigned int)m->slot >= sbx_count ||
	    m->network < RUN_NET_NONE || m->network > RUN_NET_HOST) {
		errno = EINVAL;
		return (-1);
	}
	memset(&sp, 0, sizeof(sp));
	sp.dir = m->dir;
	sp.network = m->network;
	memset(&sr, 0, sizeof(sr));
	sr.slot = m->slot;
	sr.uid = m->uid;
	sr.gid = m->gid;
	sr.change_uid = m->change_uid != 0;
	c.conf = &zyg_conf;
	c.sp = &sp;
	c.sr = &sr;
	c.out = fds[ZYG_FD_OUT];
	c.err = fds[ZYG_FD_ERR];
	c.go = fds[ZYG_FD_GO];
	for (i = 0; i < 2; i++)
		c.cgfd[i] = i < m->ncg ? fds[ZYG_FD_CG0 + i] : -1;
	flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS |
	    CLONE_PARENT;
	if (sbx_mode == SBX_USERNS)
		flags |= CLONE_NEWUSER;
	/* Its own network, loopback only, unless the operator said host. */
	if (sp.network != RUN_NET_HOST)
		flags |= CLONE_NEWNET;
	return (clone(sbx_init_main, zyg_stack + sizeof(zyg_stack), flags,
	    &c));
}

/* Exec closed its end of the life pipe: it is gone. */
static int
sbx_exec_gone(void)
{
	struct pollfd	 pfd;

	pfd.fd = sbx_life[0];
	pfd.events = POLLIN;
	return (poll(&pfd, 1, 0) != 0);
}

/*
 * The run's init, PID 1 of its namespaces, in a copy of the zygote's
 * memory: the run's mounts and cgroups, its order, the CLI, then nothing
 * but waiting.
 */
static int
sbx_init_main(void *arg)
{
	struct sbx_child	*c = arg;
	const struct sbx_spec	*sp = c->sp;
	pid_t			 cli, pid;
	ssize_t			 n;
	int			 i, status;

	sbx_signals();
	sbx_close_others(c);
	zyg_title_set("tregd: sandbox");	/* not the zygote's */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
		sbx_fail(c->err, "PR_SET_PDEATHSIG");
	if (sbx_exec_gone())
		_exit(127);
	(void)setsid();
	if (sbx_mode == SBX_USERNS && sbx_idmap() == -1)
		sbx_fail(c->err, "uid_map");
	if (sp->network != RUN_NET_HOST && sbx_loopback() == -1)
		sbx_fail(c->err, "loopback");
	if (sbx_mounts_make(c) == -1)
		sbx_fail(c->err, "mount");
	for (i = 0; i < 2; i++) {
		if (c->cgfd[i] == -1)
			continue;
		while ((n = write(c->cgfd[i], "0", 1)) == -1 && errno == EINTR)
			;
		if (n != 1)
			sbx_fail(c->err, "cgroup");
	}
	/*
	 * The CLI's filter, installed here (ahead of the run for a pooled
	 * init) and inherited by the CLI: it allows what is left to do.
	 */
	if (sandbox_child_apply(&sbx_filter) == -1)
		sbx_fail(c->err, "seccomp");
	/*
	 * The CLI is made now, ahead of its order: it waits for the order
	 * on the pipe (sbx_cli), then becomes the run user, so a run starts
	 * with one wake-up and an execve.  Sharing this memory, the init
	 * sleeps until that execve, then zeroes the order the CLI read.
	 */
	cli = clone(zyg_cli_entry, zyg_cli_stack + sizeof(zyg_cli_stack),
	    CLONE_VM | CLONE_VFORK | SIGCHLD, c);
	if (cli == -1)
		sbx_fail(c->err, "clone");
	sbx_order_drop(sbx_order_buf, sbx_order_len);
	sbx_order_buf = NULL;
	/*
	 * The pipes are the CLI's now, but for the init's stderr copy: its
	 * EOF tells exec the status is there.  Of privilege, only the kill
	 * of the run's leftovers stays.
	 */
	if (c->err > 0)
		close_range(0, c->err - 1, 0);
	close_range(c->err + 1, ~0U, 0);
	sbx_caps_clear();
	for (;;) {
		pid = waitpid(-1, &status, 0);
		if (pid == cli)
			break;
		if (pid == -1 && errno != EINTR)
			_exit(127);
	}
	__atomic_store_n(&sbx_status[c->sr->slot].end, sbx_now(),
	    __ATOMIC_RELEASE);
	__atomic_store_n(&sbx_status[c->sr->slot].status, SBX_STATUS_SET |
	    (status & 0xffff), __ATOMIC_RELEASE);
	(void)kill(-1, SIGKILL);
	close(c->err);
	_exit(0);
}

/* A new network namespace has a loopback that is down: up it goes. */
static int
sbx_loopback(void)
{
	struct ifreq	 ifr;
	int		 s, rc = -1;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", sizeof("lo"));
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return (rc);
}



/*
 * The init's copy of the zygote's descriptors (its socket, the pipes of
 * the request it serves) goes: only what the run needs stays.
 */
static void
sbx_close_others(const struct sbx_child *c)
{
	int		 keep[7], n = 0, i, j, t;
	unsigned int	 from = 0;

	keep[n++] = c->out;
	keep[n++] = c->err;
	keep[n++] = sbx_devnull;
	keep[n++] = sbx_life[0];
	if (c->go != -1)
		keep[n++] = c->go;
	for (i = 0; i < 2; i++)
		if (c->cgfd[i] != -1)
			keep[n++] = c->cgfd[i];
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if ((unsigned int)keep[i] > from)
			close_range(from, keep[i] - 1, 0);
		from = keep[i] + 1;
	}
	close_range(from, ~0U, 0);
}

/* The init keeps CAP_KILL alone, for the run's leftovers at its end. */
static void
sbx_caps_clear(void)
{
	struct __user_cap_header_struct	 hdr;
	struct __user_cap_data_struct	 data[2];

	memset(&hdr, 0, sizeof(hdr));
	memset(data, 0, sizeof(data));
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	data[0].effective = data[0].permitted = CAP_TO_MASK(CAP_KILL);
	if (syscall(SYS_capset, &hdr, data) == -1)
		_exit(127);
}

static int
zyg_cli_entry(void *arg)
{
	sbx_cli(arg);
	/* NOTREACHED */
}
