/*
 * bench/run-floor.c: the floor of a tregd run, what its isolation costs
 * with nothing of tregd around it (issue 16).  Each run does what a
 * run's sandbox does (tregd/exec/exec_sandbox.c): an init cloned as PID 1 of
 * new pid, mount, ipc and uts namespaces, which makes everything
 * read-only and private, hides a state directory, mounts /proc, /tmp,
 * /var/tmp, /dev/shm and a run-directory tmpfs (tregd's own code for
 * it, tregd/exec/exec_child.c), joins a memory and pids
 * cgroup of the run's uid, installs tregd's own run child filter
 * (common/sandbox.c), drops its capabilities and clones the CLI
 * (CLONE_VM | CLONE_VFORK), which takes its pipes, limits and directory,
 * becomes the run's uid and calls execve; the loop reads both pipes to
 * their end and reaps the init.  Small and static in its address space,
 * as a tregd sandbox can at best be.
 *
 *	run-floor [-CFMN] [-j jobs] [-n runs] [-u uid] [program]
 *
 * -C, -F, -M, -N leave out a part, to see what it costs: the cgroups,
 * the filter, the mounts (namespaces still made), every namespace (and
 * so the mounts).
 * jobs loops at once (each with a uid of its own from uid on, default
 * 62000, and its cgroups), runs each (default 500) of program (default
 * /bin/true).  Prints "p50_us p99_us runs_per_s cpu_us_per_run
 * child_p50_us": the CPU of every process of every run (the loops'
 * reaped children, the inits and CLIs, and the loops themselves), not
 * of kernel threads; the child's life, from just before its execve to
 * its init's wait returning (tregd -v's "child lifetime").
 */

#include <sys/types.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <stdint.h>

#include <linux/capability.h>
#include <linux/mount.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
#include "exec_zygote.h"

#define FL_DIR		"/tmp/tregd-run-floor"	/* runs, state: mount points */
#define FL_MEMORY	"1073741824"
#define FL_PIDS		"257"

struct fl_run {
	uid_t		 uid;
	const char	*prog;
	char		 dir[256];
	int		 cg[2];		/* cgroup.procs: memory, pids */
	int		 out[2], err[2];
	int64_t		*stamp;		/* shared: execve, reaped (ns) */
};

static struct sandbox_child fl_filter;
static struct tregd_conf fl_conf;	/* what sbx_mounts_make() reads */
static int	 fl_nocg, fl_nofilter, fl_nomounts, fl_nons;
static char	 fl_cg[2][256];		/* memory, pids (v1); "" none */
static char	 fl_stack[64 * 1024] __attribute__((__aligned__(16)));
static char	 fl_cli_stack[64 * 1024] __attribute__((__aligned__(16)));

static void	 fl_cgroups(void);
static void	 fl_cgroup_make(struct fl_run *);
static int	 fl_write(const char *, const char *);
static int	 fl_init(void *);
static int	 fl_cli(void *);
static double	 fl_one(struct fl_run *, double *);
static int64_t	 fl_ns(void);
static void	 fl_loop(int, int, uid_t, const char *, int);
static int	 fl_cmp(const void *, const void *);
static void	 fl_cgroup_remove(int, uid_t);

/* Where this process's memory and pids cgroups are (v1), if anywhere. */
static void
fl_cgroups(void)
{
	const char	*ctl[2] = { "memory", "pids" };
	char		 line[512], *p, *q;
	FILE		*fp;
	int		 i;

	if ((fp = fopen("/proc/self/cgroup", "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((p = strchr(line, ':')) == NULL ||
		    (q = strchr(++p, ':')) == NULL)
			continue;
		*q++ = '\0';
		for (i = 0; i < 2; i++)
			if (strcmp(p, ctl[i]) == 0)
				snprintf(fl_cg[i], sizeof(fl_cg[i]),
				    "/sys/fs/cgroup/%s%s", ctl[i],
				    strcmp(q, "/") == 0 ? "" : q);
	}
	fclose(fp);
}

static int
fl_write(const char *path, const char *s)
{
	int	 fd, rc;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return (-1);
	rc = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return (rc);
}

/* The uid's cgroups, made once as tregd makes them, their limits set. */
static void
fl_cgroup_make(struct fl_run *r)
{
	char	 dir[PATH_MAX / 2], file[PATH_MAX];
	int	 i;

	for (i = 0; i < 2; i++) {
		r->cg[i] = -1;
		if (fl_cg[i][0] == '\0')
			continue;
		snprintf(dir, sizeof(dir), "%s/tregd-floor-%u", fl_cg[i],
		    (unsigned int)r->uid);
		if (mkdir(dir, 0755) == -1 && errno != EEXIST)
			err(1, "mkdir %s", dir);
		snprintf(file, sizeof(file), "%s/%s", dir, i == 0 ?
		    "memory.limit_in_bytes" : "pids.max");
		if (fl_write(file, i == 0 ? FL_MEMORY : FL_PIDS) == -1)
			err(1, "%s", file);
	}
}


/* PID 1 of the run: mounts, cgroups, filter, the CLI, its status. */
static int
fl_init(void *arg)
{
	struct fl_run			*r = arg;
	struct sbx_child		 c;
	struct sbx_spec			 sp;
	struct sbx_run			 sr;
	struct __user_cap_header_struct	 hdr;
	struct __user_cap_data_struct	 data[2];
	pid_t				 cli;
	int				 i, status;

	memset(&sp, 0, sizeof(sp));
	sp.dir = r->dir;
	sp.network = RUN_NET_HOST;	/* the floor makes no network namespace */
	memset(&sr, 0, sizeof(sr));
	sr.uid = r->uid;
	sr.gid = r->uid;
	c.conf = &fl_conf;
	c.sp = &sp;
	c.sr = &sr;
	c.cgfd[0] = r->cg[0];
	c.cgfd[1] = r->cg[1];
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    setsid() == -1 || (!fl_nomounts && sbx_mounts_make(&c) == -1))
		_exit(120);
	for (i = 0; i < 2; i++)
		if (r->cg[i] != -1 && write(r->cg[i], "0", 1) != 1)
			_exit(121);
	if (!fl_nofilter && sandbox_child_apply(&fl_filter) == -1)
		_exit(122);
	cli = clone(fl_cli, fl_cli_stack + sizeof(fl_cli_stack),
	    CLONE_VM | CLONE_VFORK | SIGCHLD, r);
	if (cli == -1)
		_exit(123);
	close_range(0, ~0U, 0);
	memset(&hdr, 0, sizeof(hdr));
	memset(data, 0, sizeof(data));
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	data[0].effective = data[0].permitted = CAP_TO_MASK(CAP_KILL);
	if (syscall(SYS_capset, &hdr, data) == -1)
		_exit(124);
	while (waitpid(cli, &status, 0) == -1)
		if (errno != EINTR)
			_exit(125);
	r->stamp[1] = fl_ns();
	/* Without a pid namespace -1 would be every process of the host. */
	if (!fl_nons)
		kill(-1, SIGKILL);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
}

/* The CLI, as tregd's sbx_cli() makes it, then execve. */
static int
fl_cli(void *arg)
{
	struct fl_run	*r = arg;
	struct rlimit	 rl;
	gid_t		 gid = r->uid;
	char		 home[300], tmp[300];
	char		*argv[] = { (char *)r->prog, NULL };
	char		*env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", home,
			    tmp, "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
			    "MY_SECRET=s3cr3t-value-bench", NULL };
	int		 null;

	if ((null = open("/dev/null", O_RDONLY)) == -1 ||
	    dup2(null, 0) == -1 || dup2(r->out[1], 1) == -1 ||
	    dup2(r->err[1], 2) == -1 || close_range(3, ~0U, 0) == -1 ||
	    chdir(fl_nomounts ? FL_DIR "/open" : r->dir) == -1)
		_exit(127);
	rl.rlim_cur = rl.rlim_max = 0;
	setrlimit(RLIMIT_CORE, &rl);
	rl.rlim_cur = 300;
	rl.rlim_max = 301;
	setrlimit(RLIMIT_CPU, &rl);
	rl.rlim_cur = rl.rlim_max = 100 * 1024 * 1024;
	setrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = rl.rlim_max = 256;
	setrlimit(RLIMIT_NPROC, &rl);
	if (syscall(SYS_setgroups, 1, &gid) == -1 ||
	    syscall(SYS_setresgid, gid, gid, gid) == -1 ||
	    syscall(SYS_setresuid, r->uid, r->uid, r->uid) == -1)
		_exit(127);
	if ((mkdir("tmp", 0700) == -1 && errno != EEXIST) ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		_exit(127);
	snprintf(home, sizeof(home), "HOME=%s", r->dir);
	snprintf(tmp, sizeof(tmp), "TMPDIR=%s/tmp", r->dir);
	r->stamp[0] = fl_ns();
	execve(r->prog, argv, env);
	_exit(127);
}

static int64_t
fl_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

/*
 * One run, from the pipes to the reaped init: its wall time in µs, the
 * child's life in *child.
 */
static double
fl_one(struct fl_run *r, double *child)
{
	struct timespec	 a, b;
	struct pollfd	 pfd[2];
	char		 buf[4096], path[PATH_MAX];
	pid_t		 pid;
	int		 i, open_, status;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < 2; i++) {
		r->cg[i] = -1;
		if (fl_cg[i][0] == '\0' || fl_nocg)
			continue;
		snprintf(path, sizeof(path), "%s/tregd-floor-%u/cgroup.procs",
		    fl_cg[i], (unsigned int)r->uid);
		if ((r->cg[i] = open(path, O_WRONLY | O_CLOEXEC)) == -1)
			err(1, "%s", path);
	}
	if (pipe2(r->out, O_CLOEXEC) == -1 || pipe2(r->err, O_CLOEXEC) == -1)
		err(1, "pipe2");
	pid = clone(fl_init, fl_stack + sizeof(fl_stack), (fl_nons ? 0 :
	    CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) |
	    SIGCHLD, r);
	if (pid == -1)
		err(1, "clone");
	close(r->out[1]);
	close(r->err[1]);
	for (i = 0; i < 2; i++)
		if (r->cg[i] != -1)
			close(r->cg[i]);
	pfd[0].fd = r->out[0];
	pfd[1].fd = r->err[0];
	pfd[0].events = pfd[1].events = POLLIN;
	for (open_ = 2; open_ > 0; )
		if (poll(pfd, 2, -1) > 0)
			for (i = 0; i < 2; i++)
				if (pfd[i].revents != 0 &&
				    read(pfd[i].fd, buf, sizeof(buf)) <= 0) {
					close(pfd[i].fd);
					pfd[i].fd = -1;
					open_--;
				}
	if (waitpid(pid, &status, 0) == -1)
		err(1, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		errx(1, "a run failed: status %d", status);
	clock_gettime(CLOCK_MONOTONIC, &b);
	*child = (r->stamp[1] - r->stamp[0]) / 1e3;
	return ((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3);
}

/* One loop: n runs as uid, their times written to fd. */
static void
fl_loop(int n, int job, uid_t uid, const char *prog, int fd)
{
	struct fl_run	 r;
	double		*t;
	size_t		 len, off, k;
	int		 i;

	if ((t = calloc(n, 2 * sizeof(*t))) == NULL)
		err(1, "calloc");
	memset(&r, 0, sizeof(r));
	r.stamp = mmap(NULL, 2 * sizeof(*r.stamp), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r.stamp == MAP_FAILED)
		err(1, "mmap");
	r.uid = uid;
	r.prog = prog;
	snprintf(r.dir, sizeof(r.dir), FL_DIR "/runs/run.%d", job);
	fl_cgroup_make(&r);
	for (i = 0; i < n; i++)
		t[2 * i] = fl_one(&r, &t[2 * i + 1]);
	/* Pairs in writes of at most PIPE_BUF: the loops' never mix. */
	len = 2 * n * sizeof(*t);
	for (off = 0; off < len; off += k) {
		k = len - off < PIPE_BUF ? len - off : PIPE_BUF;
		if (write(fd, (char *)t + off, k) != (ssize_t)k)
			err(1, "write");
	}
	_exit(0);
}

/* The loops' cgroups go (a v1 cgroup empties a little after its tasks). */
static void
fl_cgroup_remove(int jobs, uid_t uid)
{
	struct timespec	 ts = { 0, 20 * 1000 * 1000 };
	char		 dir[PATH_MAX];
	int		 c, i, k;

	for (c = 0; c < 2; c++)
		for (i = 0; fl_cg[c][0] != '\0' && i < jobs; i++) {
			snprintf(dir, sizeof(dir), "%s/tregd-floor-%u",
			    fl_cg[c], (unsigned int)(uid + i));
			for (k = 0; k < 50 && rmdir(dir) == -1 &&
			    errno == EBUSY; k++)
				nanosleep(&ts, NULL);
		}
}

static int
fl_cmp(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
}

int
main(int argc, char *argv[])
{
	struct timespec	 a, b;
	struct rusage	 ru;
	const char	*prog = "/bin/true", *errstr;
	double		*t, *c, wall, cpu;
	uid_t		 uid = 62000;
	int		 jobs = 1, n = 500, ch, i, p[2], st;
	size_t		 got, want;
	ssize_t		 k;

	while ((ch = getopt(argc, argv, "CFMNj:n:u:")) != -1)
		switch (ch) {
		case 'C':
			fl_nocg = 1;
			break;
		case 'F':
			fl_nofilter = 1;
			break;
		case 'M':
			fl_nomounts = 1;
			break;
		case 'N':
			fl_nons = fl_nomounts = 1;
			break;
		case 'j':
			jobs = strtonum(optarg, 1, 64, &errstr);
			if (errstr != NULL)
				errx(1, "jobs %s: %s", optarg, errstr);
			break;
		case 'n':
			n = strtonum(optarg, 1, 100000, &errstr);
			if (errstr != NULL)
				errx(1, "runs %s: %s", optarg, errstr);
			break;
		case 'u':
			uid = strtonum(optarg, 1, 4000000000LL, &errstr);
			if (errstr != NULL)
				errx(1, "uid %s: %s", optarg, errstr);
			break;
		default:
			fprintf(stderr, "usage: run-floor [-CFMN] [-j jobs] "
			    "[-n runs] [-u uid] [program]\n");
			return (1);
		}
	if (optind < argc)
		prog = argv[optind];
	if (sandbox_child_prepare(&fl_filter) == -1)
		errx(1, "cannot build the run child filter");
	strlcpy(fl_conf.state, FL_DIR "/state", sizeof(fl_conf.state));
	strlcpy(fl_conf.run_dir, FL_DIR "/runs", sizeof(fl_conf.run_dir));
	fl_conf.run_tmpsize = 256LL * 1024 * 1024;
	if ((mkdir(FL_DIR, 0755) == -1 && errno != EEXIST) ||
	    (mkdir(FL_DIR "/runs", 0755) == -1 && errno != EEXIST) ||
	    (mkdir(FL_DIR "/state", 0700) == -1 && errno != EEXIST) ||
	    (mkdir(FL_DIR "/open", 0755) == -1 && errno != EEXIST) ||
	    chmod(FL_DIR "/open", 01777) == -1)
		err(1, "mkdir " FL_DIR);
	fl_cgroups();
	want = (size_t)jobs * n * 2 * sizeof(*t);
	if ((t = malloc(want)) == NULL || (c = calloc(jobs * n,
	    sizeof(*c))) == NULL || pipe(p) == -1)
		err(1, "setup");
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < jobs; i++)
		if (fork() == 0) {
			close(p[0]);
			fl_loop(n, i, uid + i, prog, p[1]);
		}
	close(p[1]);
	for (got = 0; got < want; got += k)
		if ((k = read(p[0], (char *)t + got, want - got)) <= 0)
			errx(1, "a loop failed");
	for (i = 0; i < jobs; i++)
		if (wait(&st) == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			errx(1, "a loop failed");
	clock_gettime(CLOCK_MONOTONIC, &b);
	wall = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	getrusage(RUSAGE_CHILDREN, &ru);
	cpu = ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec +
	    ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
	fl_cgroup_remove(jobs, uid);
	for (i = 0; i < jobs * n; i++) {
		t[i] = t[2 * i];
		c[i] = t[2 * i + 1];
	}
	qsort(t, (size_t)jobs * n, sizeof(*t), fl_cmp);
	qsort(c, (size_t)jobs * n, sizeof(*c), fl_cmp);
	printf("%.0f %.0f %.0f %.0f %.0f\n", t[jobs * n / 2],
	    t[jobs * n * 99 / 100], jobs * n / wall, cpu / ((double)jobs * n),
	    c[jobs * n / 2]);
	return (0);
}
