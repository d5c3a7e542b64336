/*
 * sandbox: how every tregd process gives up what it does not need.
 *
 * Demotion (chroot, groups, gid, uid, and a check that root cannot be
 * had back), no core dumps, then PR_SET_NO_NEW_PRIVS, Landlock and a
 * seccomp filter built with libseccomp.  See sandbox.h for who gets
 * which filter, and why exec and the run children get a deny-list.
 */

#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>

#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef TREGD_SANITIZE
#include <sanitizer/lsan_interface.h>
#endif

#include "log.h"
#include "sandbox.h"

/*
 * Landlock rights newer than the uapi header of Debian 12 (ABI 2).  The
 * values are the kernel's ABI and never change.
 */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE	(1ULL << 14)	/* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV	(1ULL << 15)	/* ABI 5 */
#endif
#define SB_LL_NET_BIND_TCP		(1ULL << 0)	/* ABI 4 */
#define SB_LL_NET_CONNECT_TCP		(1ULL << 1)
#define SB_LL_RULE_NET_PORT		2		/* ABI 4 */
#define SB_LL_SCOPE_ABSTRACT_UNIX	(1ULL << 0)	/* ABI 6 */
#define SB_LL_SCOPE_SIGNAL		(1ULL << 1)

#define SB_LL_FS_V1	((1ULL << 13) - 1)	/* EXECUTE .. MAKE_SYM */
#define SB_LL_READ	(LANDLOCK_ACCESS_FS_EXECUTE | \
			 LANDLOCK_ACCESS_FS_READ_FILE | \
			 LANDLOCK_ACCESS_FS_READ_DIR)
#define SB_LL_FILE	(LANDLOCK_ACCESS_FS_EXECUTE | \
			 LANDLOCK_ACCESS_FS_WRITE_FILE | \
			 LANDLOCK_ACCESS_FS_READ_FILE | \
			 LANDLOCK_ACCESS_FS_TRUNCATE | \
			 LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* The ruleset attribute as of ABI 6; older kernels get a prefix of it. */
struct sb_ll_attr {
	uint64_t	 fs;
	uint64_t	 net;
	uint64_t	 scoped;
};

/* struct landlock_net_port_attr (ABI 4), packed as the kernel's. */
struct sb_ll_port {
	uint64_t	 allowed_access;
	uint64_t	 port;
} __attribute__((packed));

struct sb_ll {
	int		 fd;
	int		 abi;
	uint64_t	 fs;		/* handled filesystem rights */
};

/* clone(2) flags that make a new namespace; flags are arg 0 here. */
static const uint64_t sb_clone_newns[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET
};

/* personality(2) bits that weaken ASLR or W^X. */
static const uint64_t sb_persona_unsafe[] = {
	ADDR_NO_RANDOMIZE, ADDR_COMPAT_LAYOUT, READ_IMPLIES_EXEC,
	MMAP_PAGE_ZERO, ADDR_LIMIT_3GB, ADDR_LIMIT_32BIT
};

/*
 * What frontend and vault both do: glibc, libevent (epoll), imsg on
 * inherited socketpairs, jansson and libsodium (memory, getrandom,
 * mlock), accept4 on sockets the parent bound.  Names unknown to this
 * libseccomp are skipped, names of another architecture are no-ops.
 */
static const char *const sb_allow_base[] = {
	"read", "write", "readv", "writev", "close", "close_range",
	"dup", "dup2", "dup3", "fcntl", "fstat", "newfstatat", "statx",
	"lseek", "pipe2",
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
	"mlock", "mlock2", "munlock",
	"getrandom", "futex", "sched_yield", "nanosleep", "clock_nanosleep",
	"clock_gettime", "clock_getres", "gettimeofday", "time",
	"getpid", "gettid", "getppid", "getuid", "geteuid", "getgid",
	"getegid", "uname", "sysinfo", "getrlimit",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
	"restart_syscall", "exit", "exit_group",
	"epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait",
	"epoll_pwait", "epoll_pwait2", "eventfd2", "poll", "ppoll",
	"select", "pselect6",
	"timerfd_create", "timerfd_settime", "timerfd_gettime",
	"sendmsg", "recvmsg", "sendto", "recvfrom", "shutdown",
	"accept", "accept4", "getsockname", "getpeername", "getsockopt",
	"setsockopt",
	NULL
};

/*
 * The vault is chrooted into the state dir: sqlite3 may use it freely.
 * No socket(2) or connect(2) with sqlite.  With PostgreSQL the vault
 * reconnects when the server restarts (store_pg.c): stream sockets of
 * the three families and connect(2), which Landlock narrows to the
 * server's TCP port (sb_ll_confine) and the chroot to its socket
 * directory (vault.c); "-T vault" proves the rest.
 */
static const char *const sb_allow_vault[] = {
	"open", "openat", "stat", "lstat", "access", "faccessat",
	"faccessat2", "pread64", "pwrite64", "preadv", "pwritev",
	"fsync", "fdatasync", "ftruncate", "fallocate", "flock",
	"unlink", "unlinkat", "rename", "renameat", "renameat2",
	"mkdir", "mkdirat", "rmdir", "getdents64", "getcwd",
	"readlink", "readlinkat", "fchown", "fchmod", "fchmodat", "umask",
	"statfs", "fstatfs",
	NULL
};

/*
 * The relay (its HTTP client, OpenSSL, evdns): outbound TCP and UDP sockets of
 * IPv4 and IPv6 only, connected, never bound or listening; the CA bundle
 * was read before the filter, so a file open is refused (EACCES: a
 * library probing a path falls back) rather than killed.
 */
static const int sb_relay_families[] = { AF_INET, AF_INET6 };

#ifdef TREGD_SANITIZE
/* ASan/UBSan runtimes: alternate stacks, /proc/self, CPU masks. */
static const char *const sb_allow_sanitize[] = {
	"readlink", "readlinkat", "sched_getaffinity", "prctl",
	"prlimit64", "mincore",
	NULL
};
#endif

/*
 * Kernel-attack and escape calls (SPEC.md section 6), refused with EPERM
 * rather than killed: CLIs probe some of them (io_uring, userfaultfd)
 * and fall back.
 */
static const char *const sb_deny[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"pidfd_getfd", "bpf", "perf_event_open",
	"keyctl", "add_key", "request_key",
	"umount", "umount2", "fsopen", "fsconfig", "fsmount",
	"fspick", "move_mount", "open_tree", "pivot_root",
	"chroot", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "create_module",
	"userfaultfd", "io_uring_setup", "io_uring_enter",
	"io_uring_register", "unshare", "setns", "reboot",
	"swapon", "swapoff", "acct", "settimeofday", "clock_settime",
	"adjtimex", "clock_adjtime", "syslog", "quotactl", "quotactl_fd",
	"open_by_handle_at", "name_to_handle_at", "iopl", "ioperm",
	"lookup_dcookie", "vhangup", "nfsservctl", "uselib", "modify_ldt",
	"fanotify_init",
	NULL
};

/* Directories a run may read and execute from, when they exist. */
static const char *const sb_exec_read[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
	"/etc", "/opt", "/proc", "/sys", "/run",
	NULL
};

static scmp_filter_ctx	sb_ctx_new(uint32_t);
static void	sb_rule(scmp_filter_ctx, uint32_t, const char *,
		    unsigned int, const struct scmp_arg_cmp *);
static void	sb_rules(scmp_filter_ctx, uint32_t, const char *const *);
static void	sb_allow_common(scmp_filter_ctx);
static void	sb_deny_common(scmp_filter_ctx, int);
static void	sb_load(scmp_filter_ctx);
static int	sb_debug(void);
static void	sb_sigsys(int, siginfo_t *, void *);
static void	sb_ll_confine(enum sandbox_proc, const struct sandbox_paths *);
static int	sb_ll_abi(void);
static void	sb_ll_add(struct sb_ll *, const char *, uint64_t, int);
static void	sb_ll_exec(struct sb_ll *, const struct sandbox_paths *);
static void	sb_ll_port(struct sb_ll *, int);
static void	sb_seccomp(enum sandbox_proc, const struct sandbox_paths *);
static void	sb_vault_db(scmp_filter_ctx);
static int	sb_selftest_eperm(const char *);
static void	sb_prefetch(void);
static void	sb_relay(scmp_filter_ctx);

void
sandbox_demote(const struct passwd *pw, const char *root)
{
	int	 dumpable;

	if (geteuid() != 0)
		return;
	if (pw == NULL)
		fatalx("%s: no user", __func__);
	dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	if (root != NULL) {
		if (chroot(root) == -1)
			fatal("%s: chroot %s", __func__, root);
		if (chdir("/") == -1)
			fatal("%s: chdir /", __func__);
	}
	if (setgroups(1, &pw->pw_gid) == -1)
		fatal("%s: setgroups", __func__);
	if (setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1)
		fatal("%s: setresgid %u", __func__, (unsigned int)pw->pw_gid);
	if (setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1)
		fatal("%s: setresuid %u", __func__, (unsigned int)pw->pw_uid);
	/* A uid change resets it to fs.suid_dumpable: keep sandbox_nodump. */
	if (dumpable == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		fatal("%s: PR_SET_DUMPABLE", __func__);

	/* A demotion that can be undone is no demotion. */
	if (pw->pw_uid != 0 &&
	    (setuid(0) != -1 || setresuid(0, 0, 0) != -1))
		fatalx("%s: could regain root after dropping to uid %u",
		    __func__, (unsigned int)pw->pw_uid);
	if (pw->pw_gid != 0 && pw->pw_uid != 0 && setgid(0) != -1)
		fatalx("%s: could regain gid 0", __func__);
}

void
sandbox_nodump(void)
{
	struct rlimit	 rl = { 0, 0 };

	/* Secrets live in these address spaces: no core, no ptrace. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		fatal("%s: PR_SET_DUMPABLE", __func__);
	if (setrlimit(RLIMIT_CORE, &rl) == -1)
		fatal("%s: RLIMIT_CORE", __func__);
}

void
sandbox_confine(enum sandbox_proc proc, const struct sandbox_paths *paths)
{
	static const struct sandbox_paths	 none;

	if (paths == NULL)
		paths = &none;
	sb_prefetch();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		fatal("%s: PR_SET_NO_NEW_PRIVS", __func__);
	/* Landlock first: its own syscalls are not in the allow-lists. */
	if (proc == SANDBOX_ZYGOTE)
		log_debug("%s: no landlock for the zygote: its inits mount",
		    __func__);
	else if (proc != SANDBOX_EXEC || !paths->mounts)
		sb_ll_confine(proc, paths);
	else
		log_debug("%s: no landlock for exec: it makes the runs' "
		    "cgroups", __func__);
	sb_seccomp(proc, paths);
}

int
sandbox_child_prepare(struct sandbox_child *sc)
{
	scmp_filter_ctx	 ctx;
	struct stat	 st;
	ssize_t		 n;
	size_t		 len;
	int		 fd;

	memset(sc, 0, sizeof(*sc));
	if ((ctx = sb_ctx_new(SCMP_ACT_ALLOW)) == NULL)
		return (-1);
	sb_deny_common(ctx, 0);
	/* The run's process group is killed at the end: it must stay. */
	sb_rule(ctx, SCMP_ACT_ERRNO(EPERM), "setsid", 0, NULL);
	sb_rule(ctx, SCMP_ACT_ERRNO(EPERM), "setpgid", 0, NULL);

	/* libseccomp 2.5.4 exports only to a descriptor: use a memfd. */
	if ((fd = memfd_create("tregd-child-bpf", MFD_CLOEXEC)) == -1) {
		log_warn("%s: memfd_create", __func__);
		seccomp_release(ctx);
		return (-1);
	}
	if ((errno = -seccomp_export_bpf(ctx, fd)) != 0) {
		log_warn("%s: seccomp_export_bpf", __func__);
		goto fail;
	}
	if (fstat(fd, &st) == -1) {
		log_warn("%s: fstat", __func__);
		goto fail;
	}
	len = st.st_size;
	if (len == 0 || len % sizeof(struct sock_filter) != 0 ||
	    len / sizeof(struct sock_filter) > BPF_MAXINSNS) {
		log_warnx("%s: bad filter size %zu", __func__, len);
		goto fail;
	}
	if ((sc->bpf = malloc(len)) == NULL) {
		log_warn("%s: malloc", __func__);
		goto fail;
	}
	if ((n = pread(fd, sc->bpf, len, 0)) == -1 || (size_t)n != len) {
		log_warnx("%s: short read of the filter", __func__);
		goto fail;
	}
	sc->len = len / sizeof(struct sock_filter);
	close(fd);
	seccomp_release(ctx);
	return (0);
 fail:
	free(sc->bpf);
	sc->bpf = NULL;
	close(fd);
	seccomp_release(ctx);
	return (-1);
}

int
sandbox_selftest(const char *name)
{
	static const struct sandbox_paths	 mounts = { .mounts = 1 };
	struct sandbox_child	 sc;
	char			*argv[] = { "/bin/true", NULL };
	char			*envp[] = { NULL };
	int			 fd = -1;

	if (strcmp(name, "frontend") == 0) {
		sandbox_confine(SANDBOX_FRONTEND, NULL);
		if (open("/etc/passwd", O_RDONLY | O_CLOEXEC) == -1)
			printf("selftest frontend: open: %s\n",
			    strerror(errno));
		execve(argv[0], argv, envp);
	} else if (strcmp(name, "vault") == 0) {
		sandbox_confine(SANDBOX_VAULT, NULL);
		if (socket(AF_INET, SOCK_STREAM, 0) == -1)
			printf("selftest vault: socket: %s\n",
			    strerror(errno));
		execve(argv[0], argv, envp);
	} else if (strcmp(name, "relay") == 0) {
		sandbox_confine(SANDBOX_RELAY, NULL);
		if (open("/etc/passwd", O_RDONLY | O_CLOEXEC) == -1)
			printf("selftest relay: open: %s\n", strerror(errno));
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
			printf("selftest relay: socket: %s\n",
			    strerror(errno));
		else
			printf("selftest relay: socket: allowed\n");
		fflush(stdout);
		listen(fd, 1);
	} else if (strcmp(name, "exec") == 0) {
		/* As when its runs get namespaces: the filter alone. */
		sandbox_confine(SANDBOX_EXEC, &mounts);
		return (sb_selftest_eperm(name));
	} else if (strcmp(name, "zygote") == 0) {
		sandbox_confine(SANDBOX_ZYGOTE, NULL);
		return (sb_selftest_eperm(name));
	} else if (strcmp(name, "child") == 0) {
		if (sandbox_child_prepare(&sc) == -1)
			return (1);
#ifdef TREGD_SANITIZE
		/* The filter denies ptrace, which the exit-time check needs. */
		__lsan_do_leak_check();
#endif
		if (sandbox_child_apply(&sc) == -1) {
			printf("selftest child: apply: %s\n", strerror(errno));
			sandbox_child_free(&sc);
			return (1);
		}
		sandbox_child_free(&sc);
		return (sb_selftest_eperm(name));
	} else
		return (-1);
	printf("selftest %s: forbidden call was allowed\n", name);
	fflush(stdout);
	return (1);
}

/*
 * Fetch now what a library would otherwise open lazily once confined:
 * jansson reads /dev/urandom on the first json_object() to seed its
 * hash (gone in a chroot, fatal under the frontend's filter).
 */
static void
sb_prefetch(void)
{
	uint32_t	 seed = 0;

	while (seed == 0)
		if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
			fatal("%s: getrandom", __func__);
	json_object_seed(seed);		/* no effect if already seeded */

#ifdef TREGD_SANITIZE
	/*
	 * LeakSanitizer's exit-time check clones a tracer that ptraces the
	 * process and reads /proc/self/task: no filter here allows that.
	 * Check now, while it still works; the exit-time check is then off.
	 */
	__lsan_do_leak_check();
#endif
}

/* Deny-list self test: both calls must be refused with EPERM. */
static int
sb_selftest_eperm(const char *name)
{
	int	 ptrace_errno = 0, unshare_errno = 0, mount_errno = 0;
	int	 mounts = strcmp(name, "zygote") == 0;

	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == -1)
		ptrace_errno = errno;
	if (unshare(CLONE_NEWUSER) == -1)
		unshare_errno = errno;
	/*
	 * Without the filter a missing mount point is ENOENT, not EPERM.
	 * The zygote's inits mount: it only says what it got.
	 */
	if (mount("tmpfs", "/nonexistent/tregd-selftest", "tmpfs", 0,
	    NULL) == -1)
		mount_errno = errno;
	printf("selftest %s: ptrace: %s\n", name,
	    ptrace_errno ? strerror(ptrace_errno) : "allowed");
	printf("selftest %s: unshare: %s\n", name,
	    unshare_errno ? strerror(unshare_errno) : "allowed");
	printf("selftest %s: mount: %s\n", name,
	    mount_errno ? strerror(mount_errno) : "allowed");
	if (ptrace_errno != EPERM || unshare_errno != EPERM ||
	    (!mounts && mount_errno != EPERM)) {
		printf("selftest %s: forbidden call was allowed\n", name);
		fflush(stdout);
		return (1);
	}
	fflush(stdout);
	return (0);
}

/*
 * exec's and the zygote's filters stack onto every run child, whose CLI
 * may call anything else: deny-lists that refuse, never kill.  Only the
 * zygote (forked before exec's filter) and its inits make namespaces
 * and mount; exec, which makes neither, is refused both.
 */
static void
sb_seccomp(enum sandbox_proc proc, const struct sandbox_paths *paths)
{
	scmp_filter_ctx	 ctx;
	uint32_t	 kill = SCMP_ACT_KILL_PROCESS;

	if (proc == SANDBOX_EXEC || proc == SANDBOX_ZYGOTE) {
		if ((ctx = sb_ctx_new(SCMP_ACT_ALLOW)) == NULL)
			fatalx("%s: seccomp_init", __func__);
		sb_deny_common(ctx, proc == SANDBOX_ZYGOTE);
		sb_load(ctx);
		return;
	}
	if (sb_debug())
		kill = SCMP_ACT_TRAP;
	if ((ctx = sb_ctx_new(kill)) == NULL)
		fatalx("%s: seccomp_init", __func__);
	sb_allow_common(ctx);
	if (proc == SANDBOX_VAULT)
		sb_rules(ctx, SCMP_ACT_ALLOW, sb_allow_vault);
	if (proc == SANDBOX_VAULT && paths->db_connect)
		sb_vault_db(ctx);
	if (proc == SANDBOX_RELAY)
		sb_relay(ctx);
	sb_load(ctx);
}

/* libpq making a connection again: a stream socket, connect. */
static void
sb_vault_db(scmp_filter_ctx ctx)
{
	static const int	 families[] = { AF_UNIX, AF_INET, AF_INET6 };
	struct scmp_arg_cmp	 cmp[2];
	size_t			 i;

	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		cmp[0] = SCMP_A0(SCMP_CMP_EQ, families[i], 0);
		cmp[1] = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_STREAM);
		sb_rule(ctx, SCMP_ACT_ALLOW, "socket", 2, cmp);
	}
	sb_rule(ctx, SCMP_ACT_ALLOW, "connect", 0, NULL);
}

static void
sb_relay(scmp_filter_ctx ctx)
{
	struct scmp_arg_cmp	 cmp;
	size_t			 i;

	for (i = 0; i < sizeof(sb_relay_families) /
	    sizeof(sb_relay_families[0]); i++) {
		cmp = SCMP_A0(SCMP_CMP_EQ, sb_relay_families[i], 0);
		sb_rule(ctx, SCMP_ACT_ALLOW, "socket", 1, &cmp);
	}
	sb_rule(ctx, SCMP_ACT_ALLOW, "connect", 0, NULL);
	sb_rule(ctx, SCMP_ACT_ERRNO(EACCES), "open", 0, NULL);
	sb_rule(ctx, SCMP_ACT_ERRNO(EACCES), "openat", 0, NULL);
	sb_rule(ctx, SCMP_ACT_ERRNO(EACCES), "stat", 0, NULL);
	sb_rule(ctx, SCMP_ACT_ERRNO(EACCES), "access", 0, NULL);
	sb_rule(ctx, SCMP_ACT_ERRNO(EACCES), "faccessat", 0, NULL);
	sb_rule(ctx, SCMP_ACT_ERRNO(EACCES), "faccessat2", 0, NULL);
	/*
	 * The redaction cache's compiling thread (common/redact_cache.c,
	 * made after this filter, which it inherits): clone(2) with
	 * CLONE_THREAD only, never a process; glibc's per-thread calls.
	 */
	cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
	sb_rule(ctx, SCMP_ACT_ALLOW, "clone", 1, &cmp);
	sb_rule(ctx, SCMP_ACT_ALLOW, "set_robust_list", 0, NULL);
	sb_rule(ctx, SCMP_ACT_ALLOW, "rseq", 0, NULL);
}

static scmp_filter_ctx
sb_ctx_new(uint32_t defact)
{
	scmp_filter_ctx	 ctx;

	if ((ctx = seccomp_init(defact)) == NULL) {
		log_warnx("%s: seccomp_init failed", __func__);
		return (NULL);
	}
	/*
	 * The syscall number found by a binary search, not a linear scan:
	 * the same rules, and the kernel converts and compiles the run
	 * child's filter, installed in every sandbox, in about half the
	 * time (75-85 us against 120-180 here).  An older libseccomp keeps
	 * the linear filter.
	 */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	/*
	 * Another ABI (int 0x80 on x86_64) would bypass a deny-list with a
	 * default of allow: any foreign architecture kills.
	 */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_PROCESS) != 0) {
		log_warnx("%s: SCMP_FLTATR_ACT_BADARCH failed", __func__);
		seccomp_release(ctx);
		return (NULL);
	}
	return (ctx);
}

/* One rule by syscall name; fatal if libseccomp refuses it. */
static void
sb_rule(scmp_filter_ctx ctx, uint32_t action, const char *name,
    unsigned int ncmp, const struct scmp_arg_cmp *cmp)
{
	int	 nr, rc;

	if ((nr = seccomp_syscall_resolve_name(name)) == __NR_SCMP_ERROR)
		return;		/* older libseccomp: call unknown to it */
	if ((rc = seccomp_rule_add_array(ctx, action, nr, ncmp, cmp)) != 0)
		fatalx("%s: seccomp_rule_add %s: %s", __func__, name,
		    strerror(-rc));
}

static void
sb_rules(scmp_filter_ctx ctx, uint32_t action, const char *const *names)
{
	for (; *names != NULL; names++)
		sb_rule(ctx, action, *names, 0, NULL);
}

static void
sb_allow_common(scmp_filter_ctx ctx)
{
	struct scmp_arg_cmp	 cmp;
	static const uint64_t	 ioctls[] = { FIONBIO, FIONREAD, TCGETS };
	size_t			 i;

	sb_rules(ctx, SCMP_ACT_ALLOW, sb_allow_base);

	/* glibc >= 2.34 tries clone3 first and falls back on ENOSYS. */
	sb_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);

	/* isatty() on stdio, libevent's FIONREAD and FIONBIO only. */
	for (i = 0; i < sizeof(ioctls) / sizeof(ioctls[0]); i++) {
		cmp = SCMP_A1(SCMP_CMP_EQ, ioctls[i], 0);
		sb_rule(ctx, SCMP_ACT_ALLOW, "ioctl", 1, &cmp);
	}

	/* abort() raises SIGABRT at itself; no other signal is sent. */
	cmp = SCMP_A2(SCMP_CMP_EQ, SIGABRT, 0);
	sb_rule(ctx, SCMP_ACT_ALLOW, "tgkill", 1, &cmp);

#ifdef TREGD_SANITIZE
	sb_rules(ctx, SCMP_ACT_ALLOW, sb_allow_sanitize);
#else
	/* Process titles; any other prctl is refused, not executed. */
	cmp = SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME, 0);
	sb_rule(ctx, SCMP_ACT_ALLOW, "prctl", 1, &cmp);
	cmp = SCMP_A0(SCMP_CMP_EQ, PR_GET_NAME, 0);
	sb_rule(ctx, SCMP_ACT_ALLOW, "prctl", 1, &cmp);
	/* getrlimit() is prlimit64(0, r, NULL, old): reading only. */
	cmp = SCMP_A2(SCMP_CMP_EQ, 0, 0);
	sb_rule(ctx, SCMP_ACT_ALLOW, "prlimit64", 1, &cmp);
#endif
}

/*
 * mounts: the zygote's filter, whose inits make namespaces and mount;
 * the run child's filter, stacked on it, refuses both again.
 */
static void
sb_deny_common(scmp_filter_ctx ctx, int mounts)
{
	struct scmp_arg_cmp	 cmp[1];
	size_t			 i;
	int			 bit;

	sb_rules(ctx, SCMP_ACT_ERRNO(EPERM), sb_deny);

	/* clone3 passes its flags in memory BPF cannot read: use clone. */
	sb_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	if (!mounts) {
		sb_rule(ctx, SCMP_ACT_ERRNO(EPERM), "mount", 0, NULL);
		sb_rule(ctx, SCMP_ACT_ERRNO(EPERM), "mount_setattr", 0, NULL);
	}
	for (i = 0; !mounts && i < sizeof(sb_clone_newns) /
	    sizeof(sb_clone_newns[0]); i++) {
		cmp[0] = SCMP_A0(SCMP_CMP_MASKED_EQ, sb_clone_newns[i],
		    sb_clone_newns[i]);
		sb_rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, cmp);
	}

	/*
	 * personality(): refuse the unsafe bits, but keep the query
	 * 0xffffffff working.  libseccomp allows one comparison per
	 * argument, so "bit set and not the query" is spelt with bit 31
	 * (never a real flag): unsafe bit set with bit 31 clear, or bit 31
	 * set with any other low bit clear.
	 */
	for (i = 0; i < sizeof(sb_persona_unsafe) /
	    sizeof(sb_persona_unsafe[0]); i++) {
		cmp[0] = SCMP_A0(SCMP_CMP_MASKED_EQ,
		    sb_persona_unsafe[i] | 0x80000000ULL,
		    sb_persona_unsafe[i]);
		sb_rule(ctx, SCMP_ACT_ERRNO(EPERM), "personality", 1, cmp);
	}
	for (bit = 0; bit < 31; bit++) {
		cmp[0] = SCMP_A0(SCMP_CMP_MASKED_EQ,
		    0x80000000ULL | (1ULL << bit), 0x80000000ULL);
		sb_rule(ctx, SCMP_ACT_ERRNO(EPERM), "personality", 1, cmp);
	}

	/* Typing into a terminal another process reads. */
	cmp[0] = SCMP_A1(SCMP_CMP_EQ, TIOCSTI, 0);
	sb_rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, cmp);
	cmp[0] = SCMP_A1(SCMP_CMP_EQ, TIOCLINUX, 0);
	sb_rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, cmp);
}

static void
sb_load(scmp_filter_ctx ctx)
{
	int	 rc;

	if ((rc = seccomp_load(ctx)) != 0)
		fatalx("%s: seccomp_load: %s", __func__, strerror(-rc));
	seccomp_release(ctx);
}

/*
 * TREGD_SECCOMP_DEBUG=1 in the environment of a process: a refused call
 * traps instead of killing, and the handler names its number (see
 * ausyscall(1) or <asm/unistd_64.h>) on stderr before exiting.  The call
 * is still not executed, so this shows what to add, nothing more.
 */
static int
sb_debug(void)
{
	struct sigaction	 sa;

	if (getenv("TREGD_SECCOMP_DEBUG") == NULL)
		return (0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sb_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) == -1)
		fatal("%s: sigaction", __func__);
	log_info("seccomp debug: refused calls trap and are reported");
	return (1);
}

/* Async-signal-safe: digits by hand, write(2), _exit(2). */
static void
sb_sigsys(int sig, siginfo_t *info, void *ctx)
{
	char		 msg[64], num[16];
	const char	*pre = "tregd: seccomp: syscall ";
	const char	*post = " denied\n";
	unsigned int	 nr;
	size_t		 i = 0, n = 0;

	nr = info->si_syscall < 0 ? 0 : (unsigned int)info->si_syscall;
	do {
		num[n++] = '0' + nr % 10;
		nr /= 10;
	} while (nr != 0 && n < sizeof(num));
	for (; *pre != '\0'; pre++)
		msg[i++] = *pre;
	while (n > 0)
		msg[i++] = num[--n];
	for (; *post != '\0'; post++)
		msg[i++] = *post;
	if (write(STDERR_FILENO, msg, i) == -1)
		_exit(128 + SIGSYS);	/* nothing else to do */
	_exit(128 + SIGSYS);
}

static int
sb_ll_abi(void)
{
	int	 abi;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	return (abi < 0 ? -1 : abi);
}

/*
 * Landlock is a second wall behind seccomp: without it (old kernel,
 * disabled LSM) the process keeps going with seccomp alone.
 */
static void
sb_ll_confine(enum sandbox_proc proc, const struct sandbox_paths *paths)
{
	struct sb_ll_attr	 attr;
	struct sb_ll		 ll;
	size_t			 size;

	if ((ll.abi = sb_ll_abi()) == -1) {
		log_debug("%s: landlock unavailable: %s", __func__,
		    strerror(errno));
		return;
	}
	ll.fs = SB_LL_FS_V1;
	if (ll.abi >= 2)
		ll.fs |= LANDLOCK_ACCESS_FS_REFER;
	if (ll.abi >= 3)
		ll.fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (ll.abi >= 5)
		ll.fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;

	memset(&attr, 0, sizeof(attr));
	attr.fs = ll.fs;
	size = sizeof(attr.fs);
	if (ll.abi >= 4) {
		/* Run children need the network; the relay connects only. */
		if (proc == SANDBOX_RELAY)
			attr.net = SB_LL_NET_BIND_TCP;
		else if (proc != SANDBOX_EXEC)
			attr.net = SB_LL_NET_BIND_TCP | SB_LL_NET_CONNECT_TCP;
		size = offsetof(struct sb_ll_attr, scoped);
	}
	if (ll.abi >= 6) {
		/* No signals or abstract sockets outside the domain. */
		attr.scoped = SB_LL_SCOPE_ABSTRACT_UNIX | SB_LL_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	if ((ll.fd = syscall(SYS_landlock_create_ruleset, &attr, size,
	    0)) == -1)
		fatal("%s: landlock_create_ruleset", __func__);

	switch (proc) {
	case SANDBOX_FRONTEND:
	case SANDBOX_RELAY:
	case SANDBOX_ZYGOTE:	/* never: its inits mount */
		break;		/* no filesystem at all */
	case SANDBOX_VAULT:
		if (paths->state != NULL)
			sb_ll_add(&ll, paths->state, ll.fs, 1);
		if (ll.abi >= 4 && paths->db_port != 0)
			sb_ll_port(&ll, paths->db_port);
		break;
	case SANDBOX_EXEC:
		sb_ll_exec(&ll, paths);
		break;
	}
	if (syscall(SYS_landlock_restrict_self, ll.fd, 0) == -1)
		fatal("%s: landlock_restrict_self", __func__);
	close(ll.fd);
	log_debug("%s: landlock abi %d", __func__, ll.abi);
}

/* The vault's PostgreSQL server: connect to its TCP port, nothing else. */
static void
sb_ll_port(struct sb_ll *ll, int port)
{
	struct sb_ll_port	 np;

	memset(&np, 0, sizeof(np));
	np.allowed_access = SB_LL_NET_CONNECT_TCP;
	np.port = (uint64_t)port;
	if (syscall(SYS_landlock_add_rule, ll->fd, SB_LL_RULE_NET_PORT, &np,
	    0) == -1)
		fatal("%s: landlock_add_rule port %d", __func__, port);
}

/* The system read-only, run_dir and /dev writable, run_path runnable. */
static void
sb_ll_exec(struct sb_ll *ll, const struct sandbox_paths *paths)
{
	char		 dir[PATH_MAX];
	const char	*p, *end;
	size_t		 i, len;

	for (i = 0; sb_exec_read[i] != NULL; i++)
		sb_ll_add(ll, sb_exec_read[i], SB_LL_READ, 0);
	sb_ll_add(ll, "/dev", LANDLOCK_ACCESS_FS_READ_FILE |
	    LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_WRITE_FILE |
	    LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV, 0);
	if (paths->run_dir != NULL)
		sb_ll_add(ll, paths->run_dir, ll->fs, 1);
	for (p = paths->run_path; p != NULL && *p != '\0'; p = end) {
		if ((end = strchr(p, ':')) == NULL)
			end = p + strlen(p);
		len = end - p;
		if (*end == ':')
			end++;
		if (len == 0)
			continue;
		if (len >= sizeof(dir))
			fatalx("%s: run path element too long", __func__);
		memcpy(dir, p, len);
		dir[len] = '\0';
		sb_ll_add(ll, dir, SB_LL_READ, 0);
	}
}

/*
 * Allow access beneath path.  A system path that does not exist is
 * skipped; a required one (state, run_dir) could never be made later
 * under this ruleset, so its absence is fatal now.
 */
static void
sb_ll_add(struct sb_ll *ll, const char *path, uint64_t access, int required)
{
	struct landlock_path_beneath_attr	 pb;
	struct stat				 st;
	int					 fd;

	if ((fd = open(path, O_PATH | O_CLOEXEC)) == -1) {
		if (!required && (errno == ENOENT || errno == ENOTDIR)) {
			log_debug("%s: %s: skipped", __func__, path);
			return;
		}
		fatal("%s: open %s", __func__, path);
	}
	if (fstat(fd, &st) == -1)
		fatal("%s: fstat %s", __func__, path);
	/* Directory rights on a file are EINVAL to Landlock. */
	if (!S_ISDIR(st.st_mode))
		access &= SB_LL_FILE;
	memset(&pb, 0, sizeof(pb));
	pb.allowed_access = access & ll->fs;
	pb.parent_fd = fd;
	if (pb.allowed_access != 0 && syscall(SYS_landlock_add_rule, ll->fd,
	    LANDLOCK_RULE_PATH_BENEATH, &pb, 0) == -1)
		fatal("%s: landlock_add_rule %s", __func__, path);
	close(fd);
}
