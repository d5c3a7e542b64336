/*
 * exec_zygote: exec's side of the process that makes every run's init
 * (SPEC.md section 6, "Isolation"; the design is in exec_sandbox.c's
 * head comment, the zygote itself in tregd/zygote/zygote.c).
 *
 * exec forks it once at start, before it has read any message of its
 * peers and before exec's own filter.  That child keeps only the
 * descriptors the zygote needs, installs the zygote's filter
 * (SANDBOX_ZYGOTE), which lets it clone namespaces and its inits mount
 * (exec's refuses both), and calls execve on the zygote's program, a
 * small static one tregd carries: each init is a clone of that small
 * address space, not of exec's.  Both filters are deny-lists: every
 * init and CLI inherits the zygote's, and a CLI may call anything the
 * run child's filter does not refuse.  exec asks for an init with
 * ZYG_MAKE and sends the run's order to the init itself.
 */

#include <sys/types.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/filter.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "tregd.h"
#include "exec.h"
#include "log.h"
#include "util.h"
#include "exec_zygote.h"

/*
 * memfd flags of Linux 6.3, newer than Debian 12's headers (the values
 * are the kernel's ABI): the program's memfd must be executable also
 * where vm.memfd_noexec makes memfds non-executable by default.
 */
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL		0x0008U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC		0x0010U
#endif

/* The zygote's program (tregd/zygote_blob.S). */
extern const unsigned char zyg_prog[], zyg_prog_end[];

static int	 zyg_fd = -1;		/* exec's end */
static pid_t	 zyg_child = -1;

static int	 zyg_memfd(const char *, unsigned int, const void *, size_t,
		    const void *, size_t);
static __dead void zyg_exec(int, int, int, int, pid_t);
static void	 zyg_log_stderr(int, const char *);

/*
 * Fork the zygote: its program, its settings zc and the run child's
 * filter in sealed memfds, the statuses' memfd status.
 */
int
zyg_start(const struct zyg_conf *zc, int status)
{
	int	 sv[2], conf, prog = -1, save;
	pid_t	 exec = getpid();

	if ((conf = zyg_memfd("tregd-zygote-conf", MFD_NOEXEC_SEAL, zc,
	    sizeof(*zc), sbx_filter.bpf, zc->bpf_len *
	    sizeof(struct sock_filter))) == -1 ||
	    (prog = zyg_memfd("tregd-zygote", MFD_EXEC, zyg_prog,
	    zyg_prog_end - zyg_prog, NULL, 0)) == -1) {
		save = errno;
		if (conf != -1)
			close(conf);
		errno = save;
		return (-1);
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		goto fail;
	switch (zyg_child = fork()) {
	case -1:
		close(sv[0]);
		close(sv[1]);
		goto fail;
	case 0:
		close(sv[0]);
		zyg_exec(sv[1], status, conf, prog, exec);
		/* NOTREACHED */
	}
	close(sv[1]);
	close(conf);
	close(prog);
	zyg_fd = sv[0];
	return (0);
 fail:
	save = errno;
	close(conf);
	close(prog);
	errno = save;
	return (-1);
}

static void
zyg_log_stderr(int pri, const char *line)
{
	dprintf(STDERR_FILENO, "%s\n", line);
}

/*
 * A sealed memfd holding a then b, exec as given (a kernel before 6.3
 * knows no such flag: without it then): its descriptor, or -1.
 */
static int
zyg_memfd(const char *name, unsigned int exec, const void *a, size_t alen,
    const void *b, size_t blen)
{
	ssize_t	 n;
	size_t	 off;
	int	 fd, save;

	if ((fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING |
	    exec)) == -1 && (errno != EINVAL || (fd = memfd_create(name,
	    MFD_CLOEXEC | MFD_ALLOW_SEALING)) == -1))
		return (-1);
	for (off = 0; off < alen + blen; off += n)
		if ((n = off < alen ? write(fd, (const char *)a + off,
		    alen - off) : write(fd, (const char *)b + off - alen,
		    alen + blen - off)) == -1) {
			if (errno != EINTR)
				goto fail;
			n = 0;
		}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) == -1)
		goto fail;
	return (fd);
 fail:
	save = errno;
	close(fd);
	errno = save;
	return (-1);
}

/*
 * The forked zygote: its descriptors at their numbers (exec_zygote.h),
 * none other of exec's, its filter, then its program.  Nothing here
 * returns: a failure is the zygote's death, which stops exec.
 */
static __dead void
zyg_exec(int sock, int status, int conf, int prog, pid_t exec)
{
	const int	 from[] = { sock, sbx_life[0], sbx_devnull, status,
			    conf, prog };
	const int	 nfd = sizeof(from) / sizeof(from[0]);
	char		*argv[] = { "tregd: zygote", "", NULL };
	char		*envp[] = { NULL };
	int		 tmp[sizeof(from) / sizeof(from[0])], i;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    getppid() != exec)
		_exit(1);
	/*
	 * exec's log channel is not the zygote's, and its number may be
	 * one of the zygote's below (its socket to exec): what the filter's
	 * setup says goes to stderr.
	 */
	log_setsink(zyg_log_stderr);
	/* Above every target first, so that no dup2 closes a source. */
	for (i = 0; i < nfd; i++)
		if ((tmp[i] = fcntl(from[i], F_DUPFD_CLOEXEC,
		    ZYG_FD_SOCK + nfd)) == -1)
			_exit(1);
	for (i = 0; i < nfd - 1; i++)
		if (dup2(tmp[i], ZYG_FD_SOCK + i) == -1)
			_exit(1);
	if (dup3(tmp[nfd - 1], ZYG_FD_PROG, O_CLOEXEC) == -1)
		_exit(1);
	close_range(ZYG_FD_PROG + 1, ~0U, 0);
	/* Its own filter, not exec's: it and its inits alone may mount. */
	sandbox_confine(SANDBOX_ZYGOTE, NULL);
	syscall(SYS_execveat, ZYG_FD_PROG, "", argv, envp, AT_EMPTY_PATH);
	_exit(1);
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


/*
 * exec: ask the zygote for one init, with the descriptors of fds (the
 * cgroups' counted in m->ncg); its answer comes in order (zyg_reply).
 */
int
zyg_send(const struct zyg_make *m, const int *fds)
{
	struct iovec		 iov[2];
	uint32_t		 type = ZYG_MAKE;
	int			 nfd = ZYG_FD_CG0 + m->ncg;

	if (zyg_fd == -1 || m->ncg < 0 || nfd > ZYG_NFD) {
		errno = EINVAL;
		return (-1);
	}
	iov[0].iov_base = &type;
	iov[0].iov_len = sizeof(type);
	iov[1].iov_base = (void *)m;
	iov[1].iov_len = sizeof(*m);
	return (fd_send(zyg_fd, iov, 2, fds, nfd) ==
	    (ssize_t)(sizeof(type) + sizeof(*m)) ? 0 : -1);
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
	if (sp->network == RUN_NET_PROXY) {
		if (sp->nports > SBX_PORTS_MAX || sp->etc_hosts == NULL)
			return (-1);
		o.nports = sp->nports;
		memcpy(o.ports, sp->ports, sp->nports * sizeof(*o.ports));
		len += strlen(sp->etc_hosts) + 1;
	}
	if (len > SBX_ORDER_MAX || (buf = malloc(len)) == NULL)
		return (-1);
	o.len = len;
	p = buf;
	p = stpcpy(p, path) + 1;
	for (i = 0; i < o.argc; i++)
		p = stpcpy(p, sp->argv[i]) + 1;
	for (i = 0; i < o.envc; i++)
		p = stpcpy(p, sp->env[i]) + 1;
	if (sp->network == RUN_NET_PROXY)
		p = stpcpy(p, sp->etc_hosts) + 1;
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


