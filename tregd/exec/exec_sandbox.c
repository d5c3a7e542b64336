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
 *    new PID, mount, IPC and UTS namespaces (and a network one, loopback
 *    only, unless "run network host": SPEC 6a)
 *    by the zygote (exec_zygote.c), never by exec.  A clone copies the
 *    address space of its maker, and exec's holds other runs' secrets:
 *    the cached redaction sets of every recent tool of every org
 *    (exec_rset.c), the environment and held-back output of runs in
 *    flight, freed buffers.  The zygote is forked once, before exec's
 *    filter (it has exec's privileges and a filter of its own, the only
 *    one that lets it make namespaces and its inits mount) and before
 *    exec reads its first message from a peer, and then calls execve
 *    on a small static program of its own (tregd/zygote/, carried in
 *    tregd), so its memory and every init's holds nothing of exec's,
 *    and an init's clone and exit copy and unmap a dozen mappings, not
 *    exec's 250 (its settings come in a sealed memfd); it accepts
 *    only ZYG_MAKE (a uid, a slot, a directory, the init's pipes and
 *    cgroup.procs by SCM_RIGHTS, checked for length and descriptors),
 *    which carries none.  It clones with CLONE_PARENT: the init is
 *    exec's child, exec reaps it and reads the status it leaves in the
 *    page shared since start (a memfd both map), and its
 *    PR_SET_PDEATHSIG is on exec.  The zygote dies with exec; exec
 *    stops when the zygote dies.  Every init's CLI, pooled or not, then
 *    waits on a pipe for its one run order (argv, environment, secrets)
 *    from exec: secrets enter a sandbox only when its run starts, and
 *    only that run's.
 *    The init is the zygote's code, no program of its own: it mounts
 *    the run's /proc, /tmp, /var/tmp, /dev/shm and run directory
 *    (tmpfs), hides the state directory, joins the run's cgroups,
 *    installs the CLI's seccomp filter (built once at start; the CLI
 *    inherits it), starts the CLI with a vfork-like clone of its own
 *    before the order (the CLI, still root, waits for it, then becomes
 *    the run user and calls execve), zeroes the order once the CLI has
 *    exec'd, drops every capability, reaps, leaves the CLI's wait
 *    status in the shared page and exits, which kills what the run left
 *    behind.  It dies with exec, and so does the whole run.
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
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "tregd.h"
#include "exec.h"
#include "util.h"
#include "exec_zygote.h"

#define SBX_CG_PREFIX	"tregd-run-"

static const char *const sbx_mode_names[] = {
	"none (not root: runs share the daemon's user)",
	"a uid per run, no namespaces (no CAP_SYS_ADMIN)",
	"user, pid, mount, ipc and uts namespaces (not root: one uid)",
	"a uid per run, pid, mount, ipc and uts namespaces"
};

/*
 * The pool: inits made in advance, their namespaces, mounts and cgroup
 * join (an RCU grace period on cgroup v1) off the run's path.  All are
 * made with the configured network; sbx_pool[0..sbx_npool) are ready.
 */
static struct sbx_run	*sbx_pool;
static struct sbx_run	 sbx_making = { .slot = -1 };	/* asked, no answer */
static int		 sbx_npool, sbx_pool_max, sbx_pool_network;

static const struct tregd_conf *sbx_conf;
static uid_t		 sbx_first;
static unsigned int	 sbx_next;
static uint8_t		*sbx_busy;
static pid_t		*sbx_pgid;	/* uids mode: the slot's last group */
static pid_t		*sbx_drain;	/* an ended run's init, not reaped */
static uint8_t		*sbx_cg_made;	/* the slot's cgroups have limits */
static long long	 sbx_cg_memory;	/* the limits they were given */
static int		 sbx_cg_processes;
static int		 sbx_status_fd = -1;	/* the zygote maps it too */
static unsigned int	 sbx_nbusy;
static char		 sbx_cg[2][PATH_MAX];	/* memory, pids; "" none */
static int		 sbx_cg_v2;
#ifndef TREGD_SANITIZE
static char		 sbx_stack[64 * 1024] __attribute__((__aligned__(16)));
#endif

static void	sbx_check_range(void);
static void	sbx_cgroup_init(void);
static int	sbx_cgroup_own(const char *, const char *, char *, size_t);
static int	sbx_cgroup_run(const struct tregd_conf *, uid_t, int *);
static int	sbx_cgroup_make(const struct tregd_conf *, const char *, int);
static int	sbx_cgroup_remove(void);
static int	sbx_probe(void);
static int	sbx_init_send(const struct tregd_conf *,
		    const struct sbx_spec *, const struct sbx_run *, int *,
		    int *);
static int	sbx_clone_init(const struct tregd_conf *,
		    const struct sbx_spec *, struct sbx_run *, int *);
static void	sbx_zygote_wait(void);
static void	sbx_keep_egress(struct sbx_run *, int,
		    const struct sbx_spec *);
#ifndef TREGD_SANITIZE
static int	sbx_cli_entry(void *);
#endif
static void	sbx_pool_close(struct sbx_run *);
static void	sbx_stamps(struct sbx_run *);

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
	    (sbx_drain = calloc(sbx_count, sizeof(*sbx_drain))) == NULL ||
	    (sbx_cg_made = calloc(sbx_count, 1)) == NULL)
		fatal("%s: calloc", __func__);
	/* A memfd: the zygote's program maps the same pages. */
	len = sbx_count * sizeof(*sbx_status);
	if ((sbx_status_fd = memfd_create("tregd-sandbox-status",
	    MFD_CLOEXEC)) == -1 || ftruncate(sbx_status_fd, len) == -1)
		fatal("%s: memfd", __func__);
	sbx_status = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
	    sbx_status_fd, 0);
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
		sbx_cg_v2 = sbx_memcg = 1;
		sbx_cg_name = "a cgroup v2 per run (memory, pids)";
	} else if (sbx_cgroup_own("/sys/fs/cgroup/memory", "memory", dir,
	    sizeof(dir)) == 0) {
		strlcpy(sbx_cg[0], dir, sizeof(sbx_cg[0]));
		sbx_memcg = 1;
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


/*
 * The run's cgroups (made once per uid, kept for its next run): made
 * and given their limits once (again after a reload changed them),
 * cgroup.procs opened for the init to join.
 */
static int
sbx_cgroup_run(const struct tregd_conf *conf, uid_t uid, int *fd)
{
	char		 dir[PATH_MAX];
	unsigned int	 slot = uid - sbx_first;
	int		 i, n;

	if (conf->run_memory != sbx_cg_memory ||
	    conf->run_processes != sbx_cg_processes) {
		memset(sbx_cg_made, 0, sbx_count);
		sbx_cg_memory = conf->run_memory;
		sbx_cg_processes = conf->run_processes;
	}
	for (i = 0; i < 2; i++) {
		if (sbx_cg[i][0] == '\0')
			continue;
		n = snprintf(dir, sizeof(dir), "%s/%s%u", sbx_cg[i],
		    SBX_CG_PREFIX, (unsigned int)uid);
		if (n < 0 || (size_t)n >= sizeof(dir) || (!sbx_cg_made[slot] &&
		    sbx_cgroup_make(conf, dir, i) == -1) ||
		    strlcat(dir, "/cgroup.procs", sizeof(dir)) >= sizeof(dir))
			goto fail;
		while ((fd[i] = open(dir, O_WRONLY | O_CLOEXEC)) == -1)
			if (errno != EINTR)
				goto fail;
	}
	sbx_cg_made[slot] = 1;
	return (0);
 fail:
	log_warn("%s: %s", __func__, dir);
	sbx_cg_made[slot] = 0;
	for (i = 0; i < 2; i++)
		if (fd[i] != -1) {
			close(fd[i]);
			fd[i] = -1;
		}
	return (-1);
}

/* The cgroup dir of hierarchy i (0 memory, 1 pids), and its limits. */
static int
sbx_cgroup_make(const struct tregd_conf *conf, const char *dir, int i)
{
	char	 val[32];

	while (mkdir(dir, 0755) == -1 && errno != EEXIST)
		if (errno != EINTR)
			return (-1);
	if (i == 0 || sbx_cg_v2) {
		snprintf(val, sizeof(val), "%lld", conf->run_memory);
		if (sbx_write(dir, sbx_cg_v2 ? "memory.max" :
		    "memory.limit_in_bytes", val) == -1)
			return (-1);
		if (sbx_cg_v2)
			(void)sbx_write(dir, "memory.swap.max", "0");
	}
	if (i == 1 || sbx_cg_v2) {
		/* The init is one of them. */
		snprintf(val, sizeof(val), "%d", conf->run_processes + 1);
		if (sbx_write(dir, "pids.max", val) == -1)
			return (-1);
	}
	return (0);
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
		sr->egress = -1;
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
		sr->go = sr->rd[0] = sr->rd[1] = sr->egress = -1;
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
			sbx_keep_egress(sr, sr->go, sp);
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
	/* The order's is a socket: a proxied run's listeners come back. */
	if (pipe2(po, O_CLOEXEC) == -1 || pipe2(pe, O_CLOEXEC) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pg) == -1) {
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
	if (sbx_order_send(go, sp) == -1) {
		log_warnx("%s: the init died before its order", __func__);
		close(go);
	} else
		sbx_keep_egress(sr, go, sp);
	return (0);
}

/*
 * A proxied run's order socket stays open in sr->egress: its CLI sends
 * its listeners back on it (sbx_egress_recv).  Any other is closed.
 */
static void
sbx_keep_egress(struct sbx_run *sr, int go, const struct sbx_spec *sp)
{
	if (sp->network == RUN_NET_PROXY && sp->nports > 0)
		sr->egress = go;
	else
		close(go);
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
 * Once, after exec's confinement and before its first message from a
 * peer: the zygote, where runs have an init.
 */
void
sbx_zygote(void)
{
	struct zyg_conf	 zc;

	if (!sbx_mounts())
		return;
	memset(&zc, 0, sizeof(zc));
	zc.magic = ZYG_MAGIC;
	zc.mode = sbx_mode;
	zc.count = sbx_count;
	zc.exec = getpid();
	zc.self_uid = sbx_self_uid;
	zc.self_gid = sbx_self_gid;
	zc.memcg = sbx_memcg;
	zc.run_rlimits = sbx_conf->run_rlimits;
	zc.run_processes = sbx_conf->run_processes;
	zc.run_cpu = sbx_conf->run_cpu;
	zc.run_filesize = sbx_conf->run_filesize;
	zc.run_memory = sbx_conf->run_memory;
	zc.run_tmpsize = sbx_conf->run_tmpsize;
	strlcpy(zc.state, sbx_conf->state, sizeof(zc.state));
	strlcpy(zc.socket, sbx_conf->socket, sizeof(zc.socket));
	strlcpy(zc.run_dir, sbx_conf->run_dir, sizeof(zc.run_dir));
	strlcpy(zc.memory_limit, sbx_cg_name, sizeof(zc.memory_limit));
	zc.bpf_len = sbx_filter.len;
	if (zyg_start(&zc, sbx_status_fd) == -1)
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

/*
 * The pool's inits go (killed, reaped as a drained run's): they were
 * made for another network, or before the run CA came (their CA bundle
 * is the old one).  The pool is made again with network.
 */
void
sbx_pool_flush(int network)
{
	int	 i;

	sbx_zygote_wait();
	for (i = 0; i < sbx_npool; i++) {
		if (sbx_pool[i].pid > 0) {
			kill(sbx_pool[i].pid, SIGKILL);
			sbx_drain[sbx_pool[i].slot] = sbx_pool[i].pid;
		} else
			sbx_release(&sbx_pool[i]);
		sbx_pool_close(&sbx_pool[i]);
	}
	sbx_npool = 0;
	sbx_pool_network = network;
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





#ifndef TREGD_SANITIZE
static int
sbx_cli_entry(void *arg)
{
	sbx_cli(arg);
	/* NOTREACHED */
}
#endif









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


