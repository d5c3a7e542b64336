/*
 * exec_sandbox: how the exec process makes a run child (SPEC.md section
 * 6, "Isolation").  Part of exec, with exec's privileges.
 *
 * It may touch: the uids and gids of "run users" (one per run in
 * flight), cgroups it makes below exec's own (tregd-run-UID), the
 * namespaces, mounts and limits of the runs it starts, and the run
 * directory base (as a mount point only).  It never opens the state
 * directory and never changes exec's own mounts, uid or limits.
 *
 * The modes, chosen once at start and logged:
 *  - namespaces (root with CAP_SYS_ADMIN): the run's init is cloned in
 *    new PID, mount, IPC and UTS namespaces (and network ones when asked)
 *    by the zygote (exec_zygote.c), never by exec.  A clone copies the
 *    address space of its maker, and exec's holds other runs' secrets:
 *    the cached redaction sets of every recent tool of every org
 *    (exec_rset.c), the environment and held-back output of runs in
 *    flight, freed buffers.  The zygote is forked once, before exec's
 *    filter (it has exec's privileges and a filter of its own, the only
 *    one that lets it make namespaces and its inits mount) and before
 *    exec reads its first message from a peer, so its memory, and every
 *    init's, is a copy of an exec that never held a secret; it accepts
 *    only ZYG_MAKE (a uid, a slot, a directory, the init's pipes and
 *    cgroup.procs by SCM_RIGHTS, checked for length and descriptors),
 *    which carries none.  It clones with CLONE_PARENT: the init is
 *    exec's child, exec reaps it and reads the status it leaves in the
 *    page shared since start, and its PR_SET_PDEATHSIG is on exec.  The
 *    zygote dies with exec; exec stops when the zygote dies.  Every
 *    init's CLI, pooled or not, then waits on a pipe for its one run
 *    order (argv, environment, secrets) from exec: secrets enter a
 *    sandbox only when its run starts, and only that run's.  A re-exec of
 *    tregd for each init (a fresh image) would close the same hole at
 *    the price of an execve and a dynamic link per sandbox.
 *    The init is tregd code, not a program: it mounts the run's /proc,
 *    /tmp, /var/tmp, /dev/shm and run directory (tmpfs), hides the
 *    state directory, joins the run's cgroups, installs the CLI's
 *    seccomp filter (built once at start; the CLI inherits it), starts
 *    the CLI with a vfork-like clone of its own before the order (the
 *    CLI, still root, waits for it, then becomes the run user and calls
 *    execve), zeroes the order once the CLI has exec'd, drops every
 *    capability, reaps, leaves the CLI's wait status in the shared
 *    page and exits, which kills what the run left behind.  It dies
 *    with exec, and so does the whole run.
 *    A pool of "run pool" inits is made in advance (off the run's path:
 *    on cgroup v1 joining a cgroup waits for an RCU grace period, and
 *    exec only asks; the zygote clones while exec serves runs).  An init
 *    serves one run only and dies with it.
 *  - userns (not root, where the kernel allows user namespaces): the
 *    same, in a user namespace of its own that maps the daemon's uid.
 *  - uids (root without CAP_SYS_ADMIN): a uid per run, no namespaces.
 *  - none (not root): today's child, as the daemon's user.
 */

#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>
#include <linux/mount.h>
#include <net/if.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "tregd.h"
#include "util.h"
#include "exec_zygote.h"

#define SBX_STATUS_SET	0x40000000	/* the init left the CLI's status */
#define SBX_CG_PREFIX	"tregd-run-"
#define SBX_GO_FD	3		/* the CLI's order pipe, until execve */

enum sbx_mode {
	SBX_NONE,
	SBX_UIDS,
	SBX_USERNS,
	SBX_NAMESPACES
};

static const char *const sbx_mode_names[] = {
	"none (not root: runs share the daemon's user)",
	"a uid per run, no namespaces (no CAP_SYS_ADMIN)",
	"user, pid, mount, ipc and uts namespaces (not root: one uid)",
	"a uid per run, pid, mount, ipc and uts namespaces"
};

/* What the clones read: in exec's or the zygote's memory, copied or shared. */
struct sbx_child {
	const struct tregd_conf	*conf;
	const struct sbx_spec	*sp;
	const struct sbx_run	*sr;
	int			 cgfd[2];
	int			 out;	/* the pipes' write ends */
	int			 err;
	int			 go;	/* an init made in advance: its order */
};

/*
 * The pool: inits made in advance, their namespaces, mounts and cgroup
 * join (an RCU grace period on cgroup v1) off the run's path.  All are
 * made with the configured network; sbx_pool[0..sbx_npool) are ready.
 */
static struct sbx_run	*sbx_pool;
static struct sbx_run	 sbx_making = { .slot = -1 };	/* asked, no answer */
static int		 sbx_npool, sbx_pool_max, sbx_pool_network;

/* What an init leaves for exec, one per slot, in a shared page. */
struct sbx_shared {
	int			 status;
	int64_t			 execve;	/* CLOCK_MONOTONIC, ns */
	int64_t			 end;
};

static int		 sbx_mode = SBX_NONE;
static const struct tregd_conf *sbx_conf;	/* the zygote's inits' */
static uid_t		 sbx_first;
static unsigned int	 sbx_count, sbx_next;
static uint8_t		*sbx_busy;
static pid_t		*sbx_pgid;	/* uids mode: the slot's last group */
static pid_t		*sbx_drain;	/* an ended run's init, not reaped */
static struct sbx_shared *sbx_status;	/* shared with the inits */
static unsigned int	 sbx_nbusy;
static int		 sbx_life[2] = { -1, -1 };
static uid_t		 sbx_self_uid;
static gid_t		 sbx_self_gid;
static struct sandbox_child sbx_filter;
static int		 sbx_devnull = -1;
static char		 sbx_cg[2][PATH_MAX];	/* memory, pids; "" none */
static int		 sbx_cg_v2;
static const char	*sbx_cg_name = "RLIMIT_AS";
static char		 sbx_stack[64 * 1024] __attribute__((__aligned__(16)));
/* The order a CLI read in its init's memory, zeroed by the init. */
static char		*sbx_order_buf;
static size_t		 sbx_order_len;
#ifndef TREGD_SANITIZE
static char		 sbx_cli_stack[128 * 1024]
			    __attribute__((__aligned__(16)));
#endif

static void	sbx_check_range(void);
static void	sbx_cgroup_init(void);
static int	sbx_cgroup_own(const char *, const char *, char *, size_t);
static int	sbx_cgroup_run(const struct tregd_conf *, uid_t, int *);
static int	sbx_cgroup_remove(void);
static int	sbx_write(const char *, const char *, const char *);
static int	sbx_probe(void);
static int	sbx_init_send(const struct tregd_conf *,
		    const struct sbx_spec *, const struct sbx_run *, int *,
		    int *);
static int	sbx_clone_init(const struct tregd_conf *,
		    const struct sbx_spec *, struct sbx_run *, int *);
static void	sbx_zygote_wait(void);
static int	sbx_init_main(void *);
#ifndef TREGD_SANITIZE
static int	sbx_cli_entry(void *);
#endif
static __dead void sbx_cli(const struct sbx_child *);
static __dead void sbx_fail(int, const char *);
static void	sbx_limits(const struct tregd_conf *);
static void	sbx_signals(void);
static int	sbx_exec_gone(void);
static void	sbx_pool_close(struct sbx_run *);
static void	sbx_stamps(struct sbx_run *);
static int	sbx_idmap(void);
static int	sbx_loopback(void);
static int	sbx_mounts_make(const struct sbx_child *);
static int	sbx_mkdir_p(const char *);
static void	sbx_caps_clear(void);
static void	sbx_close_others(const struct sbx_child *);

/*
 * At start, before exec is confined: the mode, the uid range (no account
 * or group may use it), the cgroups, the run child's filter, the page
 * the inits leave statuses in and the pipe that tells an init exec died.
 */
void
sbx_init(const struct tregd_conf *conf)
{
	struct __user_cap_header_struct	 hdr;
	struct __user_cap_data_struct	 data[2];
	size_t				 len;

	sbx_conf = conf;
	sbx_first = conf->run_uid_first;
	sbx_count = conf->run_uid_last - conf->run_uid_first + 1;
	sbx_self_uid = getuid();
	sbx_self_gid = getgid();
	if ((sbx_busy = calloc(sbx_count, 1)) == NULL ||
	    (sbx_pgid = calloc(sbx_count, sizeof(*sbx_pgid))) == NULL ||
	    (sbx_drain = calloc(sbx_count, sizeof(*sbx_drain))) == NULL)
		fatal("%s: calloc", __func__);
	len = sbx_count * sizeof(*sbx_status);
	sbx_status = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sbx_status == MAP_FAILED)
		fatal("%s: mmap", __func__);
	if (pipe2(sbx_life, O_CLOEXEC) == -1)
		fatal("%s: pipe2", __func__);
	if ((sbx_devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1)
		fatal("open /dev/null");
	if (sandbox_child_prepare(&sbx_filter) == -1)
		fatalx("cannot build the run child filter");
	sbx_pool_max = conf->run_pool;
	sbx_pool_network = conf->run_network;
	if (sbx_pool_max > 0 && (sbx_pool = calloc(sbx_pool_max,
	    sizeof(*sbx_pool))) == NULL)
		fatal("%s: calloc", __func__);

	if (geteuid() == 0) {
		sbx_check_range();
		memset(&hdr, 0, sizeof(hdr));
		memset(data, 0, sizeof(data));
		hdr.version = _LINUX_CAPABILITY_VERSION_3;
		if (syscall(SYS_capget, &hdr, data) == -1)
			fatal("capget");
		sbx_mode = data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &
		    CAP_TO_MASK(CAP_SYS_ADMIN) ? SBX_NAMESPACES : SBX_UIDS;
		/* Only an init can join a cgroup before the CLI exists. */
		if (sbx_mode == SBX_NAMESPACES)
			sbx_cgroup_init();
	} else
		sbx_mode = sbx_probe() == 0 ? SBX_USERNS : SBX_NONE;
	if (sbx_mode == SBX_UIDS || sbx_mode == SBX_NAMESPACES)
		log_info("run isolation: %s; users %u-%u; memory limit by %s",
		    sbx_mode_names[sbx_mode], conf->run_uid_first,
		    conf->run_uid_last, sbx_cg_name);
	else
		log_info("run isolation: %s; memory limit by %s",
		    sbx_mode_names[sbx_mode], sbx_cg_name);
}

/* Runs mount: exec must not be in a Landlock domain (it forbids mount). */
int
sbx_mounts(void)
{
	return (sbx_mode == SBX_NAMESPACES || sbx_mode == SBX_USERNS);
}

/* The run directory is a tmpfs inside the run: exec makes none. */
int
sbx_tmpfs(void)
{
	return (sbx_mounts());
}

/* No account and no group may own a uid or gid of the range. */
static void
sbx_check_range(void)
{
	struct passwd	*pw;
	struct group	*gr;
	uid_t		 last = sbx_first + sbx_count - 1;

	setpwent();
	while ((pw = getpwent()) != NULL)
		if (pw->pw_uid >= sbx_first && pw->pw_uid <= last)
			fatalx("run users %u-%u: uid %u is the account %s; "
			    "choose a range that no account or group uses",
			    sbx_first, last, pw->pw_uid, pw->pw_name);
	endpwent();
	setgrent();
	while ((gr = getgrent()) != NULL)
		if (gr->gr_gid >= sbx_first && gr->gr_gid <= last)
			fatalx("run users %u-%u: gid %u is the group %s; "
			    "choose a range that no account or group uses",
			    sbx_first, last, gr->gr_gid, gr->gr_name);
	endgrent();
}

/* ------------------------------------------------------------------ */
/* cgroups: v2 where it has the memory controller, else v1, else none. */

static void
sbx_cgroup_init(void)
{
	char	 dir[PATH_MAX];

	if (getenv("TREGD_NOCG") != NULL) return;
	if (sbx_cgroup_own("/sys/fs/cgroup", "", dir, sizeof(dir)) == 0 &&
	    sbx_write(dir, "cgroup.subtree_control", "+memory +pids") == 0) {
		strlcpy(sbx_cg[0], dir, sizeof(sbx_cg[0]));
		sbx_cg_v2 = 1;
		sbx_cg_name = "a cgroup v2 per run (memory, pids)";
	} else if (sbx_cgroup_own("/sys/fs/cgroup/memory", "memory", dir,
	    sizeof(dir)) == 0) {
		strlcpy(sbx_cg[0], dir, sizeof(sbx_cg[0]));
		sbx_cg_name = "a cgroup v1 per run (memory)";
		if (sbx_cgroup_own("/sys/fs/cgroup/pids", "pids", dir,
		    sizeof(dir)) == 0) {
			strlcpy(sbx_cg[1], dir, sizeof(sbx_cg[1]));
			sbx_cg_name = "a cgroup v1 per run (memory, pids)";
		}
	}
	sbx_cgroup_remove();	/* an earlier exec's */
}

/*
 * Exec's own cgroup in the hierarchy mounted at mnt (controller "" for
 * v2), when a child cgroup can be made there.
 */
static int
sbx_cgroup_own(const char *mnt, const char *ctl, char *dir, size_t len)
{
	FILE		*fp;
	char		 line[PATH_MAX], probe[PATH_MAX], *p, *q;
	struct stat	 st;
	int		 found = 0, n;

	n = snprintf(probe, sizeof(probe), "%s/%s", mnt, *ctl == '\0' ?
	    "cgroup.controllers" : "cgroup.procs");
	if (n < 0 || (size_t)n >= sizeof(probe) || stat(probe, &st) == -1)
		return (-1);
	if ((fp = fopen("/proc/self/cgroup", "re")) == NULL)
		return (-1);
	while (!found && fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((p = strchr(line, ':')) == NULL ||
		    (q = strchr(p + 1, ':')) == NULL)
			continue;
		*q = '\0';
		if (*ctl == '\0' ? strcmp(line, "0") == 0 && p[1] == '\0' :
		    strcmp(p + 1, ctl) == 0) {
			n = snprintf(dir, len, "%s%s", mnt,
			    strcmp(q + 1, "/") == 0 ? "" : q + 1);
			found = n > 0 && (size_t)n < len;
		}
	}
	fclose(fp);
	if (!found)
		return (-1);
	/* v2 with an empty controller list (a hybrid host) is no use. */
	if (*ctl == '\0') {
		if ((fp = fopen(probe, "re")) == NULL)
			return (-1);
		found = fgets(line, sizeof(line), fp) != NULL &&
		    strstr(line, "memory") != NULL;
		fclose(fp);
		if (!found)
			return (-1);
	}
	n = snprintf(probe, sizeof(probe), "%s/%sprobe", dir, SBX_CG_PREFIX);
	if (n < 0 || (size_t)n >= sizeof(probe) ||
	    (mkdir(probe, 0755) == -1 && errno != EEXIST))
		return (-1);
	rmdir(probe);
	return (0);
}

/* Write s to dir/file; 0 or -1 with errno.  A signal is no failure. */
static int
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

/*
 * The run's cgroups (made once per uid, kept for its next run): the
 * limits written, cgroup.procs opened for the init to join.
 */
static int
sbx_cgroup_run(const struct tregd_conf *conf, uid_t uid, int *fd)
{
	char	 dir[PATH_MAX], val[32];
	int	 i, n;

	for (i = 0; i < 2; i++) {
		if (sbx_cg[i][0] == '\0')
			continue;
		n = snprintf(dir, sizeof(dir), "%s/%s%u", sbx_cg[i],
		    SBX_CG_PREFIX, (unsigned int)uid);
		if (n < 0 || (size_t)n >= sizeof(dir))
			goto fail;
		while (mkdir(dir, 0755) == -1 && errno != EEXIST)
			if (errno != EINTR)
				goto fail;
		if (i == 0 || sbx_cg_v2) {
			snprintf(val, sizeof(val), "%lld", conf->run_memory);
			if (sbx_write(dir, sbx_cg_v2 ? "memory.max" :
			    "memory.limit_in_bytes", val) == -1)
				goto fail;
			if (sbx_cg_v2)
				(void)sbx_write(dir, "memory.swap.max", "0");
		}
		if (i == 1 || sbx_cg_v2) {
			/* The init is one of them. */
			snprintf(val, sizeof(val), "%d",
			    conf->run_processes + 1);
			if (sbx_write(dir, "pids.max", val) == -1)
				goto fail;
		}
		if (strlcat(dir, "/cgroup.procs", sizeof(dir)) >= sizeof(dir))
			goto fail;
		while ((fd[i] = open(dir, O_WRONLY | O_CLOEXEC)) == -1)
			if (errno != EINTR)
				goto fail;
	}
	return (0);
 fail:
	log_warn("%s: %s", __func__, dir);
	for (i = 0; i < 2; i++)
		if (fd[i] != -1) {
			close(fd[i]);
			fd[i] = -1;
		}
	return (-1);
}

/*
 * Every run cgroup goes (they are empty once their runs are gone): the
 * number still busy (a reaped task leaves a v1 cgroup a little later).
 */
static int
sbx_cgroup_remove(void)
{
	char		 dir[PATH_MAX];
	unsigned int	 i;
	int		 c, n, busy = 0;

	for (c = 0; c < 2; c++) {
		if (sbx_cg[c][0] == '\0')
			continue;
		for (i = 0; i < sbx_count; i++) {
			n = snprintf(dir, sizeof(dir), "%s/%s%u", sbx_cg[c],
			    SBX_CG_PREFIX, sbx_first + i);
			if (n > 0 && (size_t)n < sizeof(dir) &&
			    rmdir(dir) == -1 && errno == EBUSY)
				busy++;
		}
	}
	return (busy);
}

/*
 * exec is going: the pool goes too, and the zygote, which ignores the
 * stop signals and would otherwise keep exec waiting for its children
 * (all are reaped with the runs).
 */
void
sbx_stop(void)
{
	int	 i;

	sbx_pool_max = 0;
	sbx_zygote_wait();	/* the one being made is killed */
	for (i = 0; i < sbx_npool; i++)
		if (sbx_pool[i].pid > 0)
			kill(sbx_pool[i].pid, SIGKILL);
	if (zyg_pid() > 0)
		kill(zyg_pid(), SIGKILL);
}

/* At exit, once the runs were reaped: their cgroups. */
void
sbx_cleanup(void)
{
	struct timespec	 ts = { 0, 20 * 1000 * 1000 };
	int		 i;

	for (i = 0; i < 50 && sbx_cgroup_remove() > 0; i++)
		nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ */
/* Slots: a uid (and a status word) per run in flight.                  */

/*
 * A slot for a run that needs the network (1) or not (0): a pooled
 * init's when they were made so, else a free one, round robin (-1: never
 * a pooled one).  In the uids mode a slot is free only once its last
 * run's process group is empty; with namespaces the init's death waited
 * for every process of the run already.
 */
int
sbx_alloc(struct sbx_run *sr, int network)
{
	unsigned int	 i, s;

	memset(sr, 0, sizeof(*sr));
	sr->pid = sr->pgid = -1;
	if (network >= 0 && sbx_npool > 0 && network == sbx_pool_network) {
		/* The oldest: it had the longest to finish its setup. */
		*sr = sbx_pool[0];
		memmove(sbx_pool, sbx_pool + 1, --sbx_npool *
		    sizeof(*sbx_pool));
		sr->ready = 1;
		return (0);
	}
	for (i = 0; i < sbx_count; i++) {
		s = (sbx_next + i) % sbx_count;
		if (sbx_busy[s])
			continue;
		if (sbx_pgid[s] > 0) {
			if (kill(-sbx_pgid[s], 0) == 0)
				continue;
			sbx_pgid[s] = 0;
		}
		sbx_busy[s] = 1;
		sbx_nbusy++;
		sbx_next = (s + 1) % sbx_count;
		sr->slot = s;
		sr->uid = sbx_mode == SBX_UIDS || sbx_mode == SBX_NAMESPACES ?
		    sbx_first + s : sbx_self_uid;
		sr->gid = sbx_mode == SBX_UIDS || sbx_mode == SBX_NAMESPACES ?
		    sbx_first + s : sbx_self_gid;
		sr->change_uid = sbx_mode == SBX_UIDS ||
		    sbx_mode == SBX_NAMESPACES;
		memset(&sbx_status[s], 0, sizeof(sbx_status[s]));
		sr->go = sr->rd[0] = sr->rd[1] = -1;
		return (0);
	}
	log_warnx("no free uid in run users for another run");
	sr->slot = -1;
	return (-1);
}

void
sbx_release(struct sbx_run *sr)
{
	if (sr->slot < 0)
		return;
	if (sr->pgid > 0)
		sbx_pgid[sr->slot] = sr->pgid;
	sbx_busy[sr->slot] = 0;
	sbx_nbusy--;
	sr->slot = -1;
}

void
sbx_kill(const struct sbx_run *sr)
{
	if (sr->pid > 0)
		kill(sr->pid, SIGKILL);
	if (sr->pgid > 0)
		kill(-sr->pgid, SIGKILL);
}

/*
 * Both pipes of the run are at EOF: has its init left the CLI's status?
 * Then the run has ended (its init kills what is left before it says
 * so) and the answer need not wait for the namespaces' teardown; the
 * slot stays taken until the init is reaped (sbx_orphan).
 */
int
sbx_ended(struct sbx_run *sr, int *status)
{
	int	 v;

	if (sr->slot < 0 || !sbx_mounts() || sr->pid <= 0)
		return (0);
	v = __atomic_load_n(&sbx_status[sr->slot].status, __ATOMIC_ACQUIRE);
	if (!(v & SBX_STATUS_SET))
		return (0);
	*status = v & 0xffff;
	sbx_stamps(sr);
	sbx_drain[sr->slot] = sr->pid;
	sr->slot = -1;
	sr->pid = -1;
	return (1);
}

/*
 * The run's first process was reaped with status: the status to report
 * (the CLI's, as the init left it), and the slot is free.
 */
int
sbx_reaped(struct sbx_run *sr, int status)
{
	int	 v;

	sr->pid = -1;
	if (sr->slot >= 0 && sbx_mounts()) {
		v = __atomic_load_n(&sbx_status[sr->slot].status,
		    __ATOMIC_ACQUIRE);
		if (v & SBX_STATUS_SET) {
			status = v & 0xffff;
			sbx_stamps(sr);
		}
	}
	/* Nothing the run started outlives it. */
	if (sr->pgid > 0)
		kill(-sr->pgid, SIGKILL);
	sbx_release(sr);
	return (status);
}

/* ------------------------------------------------------------------ */
/* Starting a run.                                                     */

/*
 * Start the run of sp in the slot of sr: 0 with sr->pid set and the read
 * ends of its stdout and stderr in rd, or -1 (logged; the caller
 * releases the slot).
 */
int
sbx_spawn(const struct tregd_conf *conf, const struct sbx_spec *sp,
    struct sbx_run *sr, int *rd)
{
	struct sbx_child	 c;
	int			 po[2] = { -1, -1 }, pe[2] = { -1, -1 }, i;

	if (sr->ready) {
		sr->ready = 0;
		if (sbx_order_send(sr->go, sp) == 0) {
			close(sr->go);
			sr->go = -1;
			rd[0] = sr->rd[0];
			rd[1] = sr->rd[1];
			return (0);
		}
		/* It died (logged on its stderr): start one now instead. */
		if (sr->pid > 0)
			kill(sr->pid, SIGKILL);
		sbx_pool_close(sr);
		sbx_drain[sr->slot] = sr->pid;
		sr->pid = -1;
		if (sbx_alloc(sr, -1) == -1)
			return (-1);
	}
	if (sbx_mounts())
		return (sbx_clone_init(conf, sp, sr, rd));

	if (pipe2(po, O_CLOEXEC) == -1 || pipe2(pe, O_CLOEXEC) == -1) {
		log_warn("%s: pipe2", __func__);
		goto fail;
	}
	c.conf = conf;
	c.sp = sp;
	c.sr = sr;
	c.cgfd[0] = c.cgfd[1] = -1;
	c.out = po[1];
	c.err = pe[1];
	c.go = -1;
#ifdef TREGD_SANITIZE
	/* The sanitizer runtimes do not follow a child sharing memory. */
	if ((sr->pid = fork()) == 0)
		sbx_cli(&c);
#else
	/*
	 * vfork-like: no page tables to copy, exec sleeps until the child
	 * has called execve (or died).  Its own descriptor table, cwd and
	 * signal handlers: nothing it changes reaches exec.
	 */
	sr->pid = clone(sbx_cli_entry, sbx_stack + sizeof(sbx_stack),
	    CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
#endif
	if (sr->pid == -1) {
		log_warn("%s: clone", __func__);
		goto fail;
	}
	close(po[1]);
	close(pe[1]);
	rd[0] = po[0];
	rd[1] = pe[0];
	sr->pgid = sr->pid;
	return (0);
 fail:
	for (i = 0; i < 2; i++) {
		if (po[i] != -1)
			close(po[i]);
		if (pe[i] != -1)
			close(pe[i]);
	}
	return (-1);
}

/*
 * Ask the zygote for a run's init in new namespaces (sp gives only dir
 * and network): 0 with exec's ends of its stdout and stderr in rd and of
 * its order pipe in go, or -1 (logged).
 */
static int
sbx_init_send(const struct tregd_conf *conf, const struct sbx_spec *sp,
    const struct sbx_run *sr, int *rd, int *go)
{
	struct zyg_make		 m;
	int			 po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	int			 pg[2] = { -1, -1 }, cg[2] = { -1, -1 };
	int			 fds[ZYG_NFD], i, rc = -1;

	memset(&m, 0, sizeof(m));
	if (pipe2(po, O_CLOEXEC) == -1 || pipe2(pe, O_CLOEXEC) == -1 ||
	    pipe2(pg, O_CLOEXEC) == -1) {
		log_warn("%s: pipe2", __func__);
		goto done;
	}
	if (sbx_cg[0][0] != '\0' && sbx_cgroup_run(conf, sr->uid, cg) == -1)
		goto done;
	fds[ZYG_FD_OUT] = po[1];
	fds[ZYG_FD_ERR] = pe[1];
	fds[ZYG_FD_GO] = pg[0];
	for (i = 0; i < 2; i++)
		if (cg[i] != -1)
			fds[ZYG_FD_CG0 + m.ncg++] = cg[i];
	m.slot = sr->slot;
	m.uid = sr->uid;
	m.gid = sr->gid;
	m.change_uid = sr->change_uid;
	m.network = sp->network;
	if (strlcpy(m.dir, sp->dir, sizeof(m.dir)) >= sizeof(m.dir)) {
		log_warnx("%s: run directory too long", __func__);
		goto done;
	}
	if (zyg_send(&m, fds) == -1) {
		log_warn("%s: to the zygote", __func__);
		goto done;
	}
	rd[0] = po[0];
	rd[1] = pe[0];
	*go = pg[1];
	po[0] = pe[0] = pg[1] = -1;
	rc = 0;
 done:
	for (i = 0; i < 2; i++) {
		if (cg[i] != -1)
			close(cg[i]);
		if (po[i] != -1)
			close(po[i]);
		if (pe[i] != -1)
			close(pe[i]);
		if (pg[i] != -1)
			close(pg[i]);
	}
	return (rc);
}

/*
 * A run's init now (no pool, or none fitting): once the zygote made it,
 * the order, sp with its secrets, goes to it on its pipe.
 */
static int
sbx_clone_init(const struct tregd_conf *conf, const struct sbx_spec *sp,
    struct sbx_run *sr, int *rd)
{
	int	 go;

	sbx_zygote_wait();
	if (sbx_init_send(conf, sp, sr, rd, &go) == -1)
		return (-1);
	if ((sr->pid = zyg_reply()) == -1) {
		log_warn("%s: the zygote could not make an init", __func__);
		close(rd[0]);
		close(rd[1]);
		close(go);
		return (-1);
	}
	if (sbx_order_send(go, sp) == -1)
		log_warnx("%s: the init died before its order", __func__);
	close(go);
	return (0);
}

/*
 * The pool's init being made: its answer first (they come in order).
 * The pool refills on after the run's answer (exec_refill_soon).
 */
static void
sbx_zygote_wait(void)
{
	if (sbx_making.slot >= 0)
		(void)sbx_zygote_reply();
}

/*
 * The zygote answered for the pool's init being made: 1 when the pool
 * is still short (the caller refills again), else 0.
 */
int
sbx_zygote_reply(void)
{
	struct sbx_run	*sr = &sbx_making;

	/* Its answer may have been read in this turn of exec's loop. */
	if (sr->slot < 0) {
		if (zyg_pending() == 0)
			return (0);
		fatalx("the zygote died or answered no request");
	}
	if ((sr->pid = zyg_reply()) == -1 || kill(sr->pid, 0) == -1) {
		/* Not made, or dead and reaped already (as no one's). */
		if (sr->pid == -1)
			log_warn("%s: no init for the pool", __func__);
		sbx_pool_close(sr);
		sr->pid = -1;
		sbx_release(sr);
		return (0);
	}
	if (sbx_npool >= sbx_pool_max) {
		kill(sr->pid, SIGKILL);	/* exec is stopping */
		sbx_pool_close(sr);
		sbx_drain[sr->slot] = sr->pid;
		sr->slot = -1;
		return (0);
	}
	sbx_pool[sbx_npool++] = *sr;
	sr->slot = -1;
	return (sbx_npool < sbx_pool_max);
}

/* exec's end of the zygote's socket, readable when it answers; or -1. */
int
sbx_zygote_fd(void)
{
	return (zyg_fd_get());
}

/*
 * In the zygote: clone the init m asks for, exec's child (CLONE_PARENT:
 * exec reaps it and reads its status as before).  Its pid or -1.
 */
pid_t
sbx_zygote_make(const struct zyg_make *m, const int *fds)
{
	struct sbx_child	 c;
	struct sbx_spec		 sp;
	struct sbx_run		 sr;
	int			 flags, i;

	if (m->slot < 0 || (unsigned int)m->slot >= sbx_count) {
		errno = EINVAL;
		return (-1);
	}
	memset(&sp, 0, sizeof(sp));
	sp.dir = m->dir;
	sp.network = m->network != 0;
	memset(&sr, 0, sizeof(sr));
	sr.slot = m->slot;
	sr.uid = m->uid;
	sr.gid = m->gid;
	sr.change_uid = m->change_uid != 0;
	c.conf = sbx_conf;
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
	if (!sp.network)
		flags |= CLONE_NEWNET;
	return (clone(sbx_init_main, sbx_stack + sizeof(sbx_stack), flags,
	    &c));
}

/*
 * Once, after exec's confinement and before its first message from a
 * peer: the zygote, where runs have an init.
 */
void
sbx_zygote(void)
{
	if (sbx_mounts() && zyg_start(sbx_life[0], sbx_devnull) == -1)
		fatal("%s: cannot start the zygote", __func__);
}

/*
 * One more init for the pool, with the network as configured, when the
 * pool is short and a uid is left beyond what inflight runs (exec's, not
 * pooled) may still need for theirs: asked of the zygote, which answers
 * later (sbx_zygote_reply: exec's loop is not kept waiting for the
 * clone).  One at a time: always 0 (the answer says if more are due).
 */
int
sbx_refill(const struct tregd_conf *conf, int inflight)
{
	struct sbx_run	*sr = &sbx_making;
	struct sbx_spec	 sp;
	char		 dir[PATH_MAX];
	int		 n;

	if (!sbx_mounts() || sr->slot >= 0 || sbx_npool >= sbx_pool_max ||
	    (int)(sbx_count - sbx_nbusy) <= conf->run_slots - inflight)
		return (0);
	if (sbx_alloc(sr, -1) == -1)
		return (0);
	n = snprintf(dir, sizeof(dir), "%s/run.%u", conf->run_dir,
	    (unsigned int)sr->uid);
	memset(&sp, 0, sizeof(sp));
	sp.dir = dir;
	sp.network = sbx_pool_network;
	if (n < 0 || (size_t)n >= sizeof(dir) ||
	    sbx_init_send(conf, &sp, sr, sr->rd, &sr->go) == -1) {
		sbx_release(sr);
		sr->slot = -1;
		return (0);
	}
	return (0);
}

/* A pooled init's pipes, exec's ends. */
static void
sbx_pool_close(struct sbx_run *sr)
{
	int	 i;

	if (sr->go != -1)
		close(sr->go);
	for (i = 0; i < 2; i++)
		if (sr->rd[i] != -1)
			close(sr->rd[i]);
	sr->go = sr->rd[0] = sr->rd[1] = -1;
}

/*
 * A child that is no run's was reaped: the init of a run that ended
 * already (its slot is free now), or a pooled one that died.
 */
void
sbx_orphan(pid_t pid)
{
	unsigned int	 i;
	int		 p;

	for (i = 0; i < sbx_count; i++)
		if (sbx_drain[i] == pid) {
			if (sbx_status[i].end != 0)
				log_debug("sandbox of uid %u: torn down "
				    "%lld us after its CLI ended",
				    sbx_first + i, (long long)(mono_ns() -
				    sbx_status[i].end) / 1000);
			sbx_drain[i] = 0;
			sbx_busy[i] = 0;
			sbx_nbusy--;
			return;
		}
	for (p = 0; p < sbx_npool; p++)
		if (sbx_pool[p].pid == pid)
			break;
	if (p == sbx_npool) {
		if (pid == zyg_pid())
			fatalx("the zygote died: no run could start");
		return;
	}
	sbx_pool_close(&sbx_pool[p]);
	sbx_pool[p].pid = -1;
	sbx_release(&sbx_pool[p]);
	memmove(sbx_pool + p, sbx_pool + p + 1, (--sbx_npool - p) *
	    sizeof(*sbx_pool));
}

/* The run's stamps as its init left them (namespaces only). */
static void
sbx_stamps(struct sbx_run *sr)
{
	sr->st.execve = __atomic_load_n(&sbx_status[sr->slot].execve,
	    __ATOMIC_ACQUIRE);
	sr->st.end = __atomic_load_n(&sbx_status[sr->slot].end,
	    __ATOMIC_ACQUIRE);
}

/* libevent's handlers and exec's SIG_IGN must not reach the run. */
static void
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
 * Before the CLI exists, errors go to the stderr pipe, which is the
 * run's stderr: the caller sees why.  Only async-signal-safe calls.
 */
static __dead void
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
	setproctitle("sandbox");	/* not the zygote's title */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
		sbx_fail(c->err, "PR_SET_PDEATHSIG");
	if (sbx_exec_gone())
		_exit(127);
	(void)setsid();
	if (sbx_mode == SBX_USERNS && sbx_idmap() == -1)
		sbx_fail(c->err, "uid_map");
	if (!sp->network && sbx_loopback() == -1)
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
#ifdef TREGD_SANITIZE
	if ((cli = fork()) == 0)
		sbx_cli(c);
#else
	cli = clone(sbx_cli_entry, sbx_cli_stack + sizeof(sbx_cli_stack),
	    CLONE_VM | CLONE_VFORK | SIGCHLD, c);
#endif
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
	__atomic_store_n(&sbx_status[c->sr->slot].end, mono_ns(),
	    __ATOMIC_RELEASE);
	__atomic_store_n(&sbx_status[c->sr->slot].status, SBX_STATUS_SET |
	    (status & 0xffff), __ATOMIC_RELEASE);
	(void)kill(-1, SIGKILL);
	close(c->err);
	_exit(0);
}

#ifndef TREGD_SANITIZE
static int
sbx_cli_entry(void *arg)
{
	sbx_cli(arg);
	/* NOTREACHED */
}
#endif

/*
 * The CLI, between clone and execve: its own session, limits, /dev/null
 * and the pipes as its only descriptors, the run directory, the run
 * user, no way to gain privileges, death with its parent, the filter.
 * Raw system calls for the ids: libc's wrappers would try to change
 * every thread of the process whose memory this child shares.
 */
static __dead void
sbx_cli(const struct sbx_child *c)
{
	const struct tregd_conf	*conf = c->conf;
	const struct sbx_spec	*sp = c->sp;
	const struct sbx_run	*sr = c->sr;
	struct sbx_spec		 order;
	pid_t			 ppid = getppid();
	int			 err = c->err, go = -1;

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
	 * the run's uid exists before its run.
	 */
	if (go != -1) {
		order.dir = sp->dir;
		order.network = sp->network;
		if (sbx_order_recv(SBX_GO_FD, &order, &sbx_order_buf,
		    &sbx_order_len) == -1)
			_exit(127);	/* exec is gone */
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
		__atomic_store_n(&sbx_status[sr->slot].execve, mono_ns(),
		    __ATOMIC_RELEASE);
	execve(sp->path, sp->argv, sp->env);
	sbx_fail(err, sp->argv[0]);
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
	if (sbx_cg[0][0] == '\0' || !sbx_mounts()) {
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
static int
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

/* A new network namespace has a loopback that is down: up it goes. */
static int
sbx_loopback(void)
{
	struct ifreq	 ifr;
	int		 s, rc = -1;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	memset(&ifr, 0, sizeof(ifr));
	strlcpy(ifr.ifr_name, "lo", sizeof(ifr.ifr_name));
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return (rc);
}

/*
 * The run's view of the filesystem: everything read-only and private
 * (nothing of it propagates back), the state directory hidden, its own
 * /proc, empty /tmp, /var/tmp and /dev/shm, the run-directory base
 * replaced by a read-only tmpfs holding only this run's directory, a
 * tmpfs of "run tmpsize" owned by the run user.  Gone with the run.
 */
static int
sbx_mounts_make(const struct sbx_child *c)
{
	const struct tregd_conf	*conf = c->conf;
	const char *const	 tmps[] = { "/tmp", "/var/tmp", "/dev/shm" };
	const unsigned long	 fl = MS_NOSUID | MS_NODEV;
	struct mount_attr	 ma;
	char			 opt[128];
	size_t			 i;

	memset(&ma, 0, sizeof(ma));
	ma.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
	ma.propagation = MS_PRIVATE;
	if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &ma,
	    sizeof(ma)) == -1)
		return (-1);
	if (mount("tmpfs", conf->state, "tmpfs", fl | MS_RDONLY | MS_NOEXEC,
	    "size=4k,mode=0") == -1 && errno != ENOENT)
		return (-1);
	if (mount("proc", "/proc", "proc", fl | MS_NOEXEC, NULL) == -1)
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
	return (mount(NULL, conf->run_dir, NULL, MS_REMOUNT | MS_RDONLY | fl,
	    "size=64k,mode=0755"));
}

/* mkdir -p, 0755 (only in the run's own tmpfs, or existing already). */
static int
sbx_mkdir_p(const char *path)
{
	char	 buf[PATH_MAX], *p;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf)) {
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

/*
 * Not root: can this kernel give a run a user namespace, its maps, a
 * read-only private tree, a /proc of its own and a tmpfs?
 */
static int
sbx_probe(void)
{
	pid_t	 pid;
	int	 status;

	if ((pid = fork()) == -1)
		return (-1);
	if (pid == 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID |
		    CLONE_NEWIPC | CLONE_NEWUTS) == -1)
			_exit(1);
		sbx_mode = SBX_USERNS;
		if (sbx_idmap() == -1)
			_exit(1);
		if ((pid = fork()) == 0) {
			struct mount_attr	 ma;

			memset(&ma, 0, sizeof(ma));
			ma.attr_set = MOUNT_ATTR_RDONLY;
			ma.propagation = MS_PRIVATE;
			if (syscall(SYS_mount_setattr, AT_FDCWD, "/",
			    AT_RECURSIVE, &ma, sizeof(ma)) == -1 ||
			    mount("proc", "/proc", "proc", MS_NOSUID |
			    MS_NODEV | MS_NOEXEC, NULL) == -1 ||
			    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID |
			    MS_NODEV, "size=64k") == -1)
				_exit(1);
			_exit(0);
		}
		if (pid == -1 || waitpid(pid, &status, 0) == -1)
			_exit(1);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	}
	if (waitpid(pid, &status, 0) == -1)
		return (-1);
	return (WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1);
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
