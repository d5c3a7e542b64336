/*
 * sandbox: each case forks a child that confines itself the way a tregd
 * process does, tries something, and ends; the parent judges how it
 * ended (exit code or SIGSYS).  Children never use ATF macros: they
 * report through their exit status and always leave with _exit(2).
 */

#include <sys/epoll.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/landlock.h>

#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"

typedef void (*child_fn)(const void *);

static int	run_child(child_fn, const void *);
static int	run_child_output(child_fn, const void *, int, char *, size_t);
static void	tmp_path(char *, size_t, const char *);
static void	require_landlock(void);
static void	require_root(void);

/* Fork, run fn in the child, return its wait status. */
static int
run_child(child_fn fn, const void *arg)
{
	return (run_child_output(fn, arg, -1, NULL, 0));
}

/* Same, capturing descriptor outfd of the child into buf. */
static int
run_child_output(child_fn fn, const void *arg, int outfd, char *buf,
    size_t bufsz)
{
	pid_t	 pid;
	int	 fds[2], status;
	size_t	 off = 0;
	ssize_t	 n;

	if (buf != NULL)
		ATF_REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
	fflush(NULL);
	ATF_REQUIRE((pid = fork()) != -1);
	if (pid == 0) {
		if (buf != NULL && dup2(fds[1], outfd) == -1)
			_exit(100);
		fn(arg);
		_exit(101);
	}
	if (buf != NULL) {
		close(fds[1]);
		while (off + 1 < bufsz &&
		    (n = read(fds[0], buf + off, bufsz - off - 1)) > 0)
			off += n;
		buf[off] = '\0';
		close(fds[0]);
	}
	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	return (status);
}

/* An absolute path under the test case's work directory. */
static void
tmp_path(char *buf, size_t len, const char *name)
{
	char	 cwd[PATH_MAX];

	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	ATF_REQUIRE((size_t)snprintf(buf, len, "%s/%s", cwd, name) < len);
}

static void
require_landlock(void)
{
	if (syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION) < 1)
		atf_tc_skip("Landlock is not available in this kernel: %s",
		    strerror(errno));
}

static void
require_root(void)
{
	if (geteuid() != 0)
		atf_tc_skip("needs root to change uid (make check runs as "
		    "root)");
}

#define REQUIRE_SIGSYS(st) do {						\
	ATF_REQUIRE_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,	\
	    "expected death by SIGSYS, got %s %d",			\
	    WIFSIGNALED(st) ? "signal" : "exit",			\
	    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));		\
} while (0)

#define REQUIRE_EXIT0(st) do {						\
	ATF_REQUIRE_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,		\
	    "expected exit 0, got %s %d",				\
	    WIFSIGNALED(st) ? "signal" : "exit",			\
	    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));		\
} while (0)

/* frontend */

static void
frontend_open(const void *arg)
{
	sandbox_nodump();
	sandbox_confine(SANDBOX_FRONTEND, NULL);
	open("/etc/passwd", O_RDONLY);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(frontend_is_killed_when_it_opens_a_file);
ATF_TC_BODY(frontend_is_killed_when_it_opens_a_file, tc)
{
	REQUIRE_SIGSYS(run_child(frontend_open, NULL));
}

static void
frontend_exec(const void *arg)
{
	char	*argv[] = { "/bin/true", NULL }, *envp[] = { NULL };

	sandbox_nodump();
	sandbox_confine(SANDBOX_FRONTEND, NULL);
	execve(argv[0], argv, envp);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(frontend_is_killed_when_it_starts_a_program);
ATF_TC_BODY(frontend_is_killed_when_it_starts_a_program, tc)
{
	REQUIRE_SIGSYS(run_child(frontend_exec, NULL));
}

static void
frontend_socket(const void *arg)
{
	sandbox_nodump();
	sandbox_confine(SANDBOX_FRONTEND, NULL);
	socket(AF_INET, SOCK_STREAM, 0);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(frontend_is_killed_when_it_makes_a_socket);
ATF_TC_BODY(frontend_is_killed_when_it_makes_a_socket, tc)
{
	REQUIRE_SIGSYS(run_child(frontend_socket, NULL));
}

/* What an event loop on inherited descriptors does. */
static void
frontend_io(const void *arg)
{
	struct epoll_event	 ev, out;
	char			 buf[8];
	int			 p[2], sp[2], ep;

	if (pipe2(p, O_CLOEXEC) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1)
		_exit(2);
	sandbox_nodump();
	sandbox_confine(SANDBOX_FRONTEND, NULL);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		_exit(3);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = p[0];
	if (epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == -1)
		_exit(4);
	if (write(p[1], "ping", 4) != 4)
		_exit(5);
	if (epoll_wait(ep, &out, 1, 1000) != 1 || out.data.fd != p[0])
		_exit(6);
	if (read(p[0], buf, sizeof(buf)) != 4 || memcmp(buf, "ping", 4))
		_exit(7);
	if (send(sp[0], "pong", 4, 0) != 4 ||
	    recv(sp[1], buf, sizeof(buf), 0) != 4 || memcmp(buf, "pong", 4))
		_exit(8);
	if (fcntl(sp[0], F_SETFL, O_NONBLOCK) == -1)
		_exit(9);
	if (getrandom(buf, sizeof(buf), 0) != sizeof(buf))
		_exit(10);
	close(ep);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(frontend_keeps_pipe_socket_and_epoll_io);
ATF_TC_BODY(frontend_keeps_pipe_socket_and_epoll_io, tc)
{
	REQUIRE_EXIT0(run_child(frontend_io, NULL));
}

/* vault */

static void
vault_socket(const void *state)
{
	struct sandbox_paths	 paths = { .state = state };

	sandbox_nodump();
	sandbox_confine(SANDBOX_VAULT, &paths);
	socket(AF_INET, SOCK_STREAM, 0);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(vault_is_killed_when_it_makes_a_network_socket);
ATF_TC_BODY(vault_is_killed_when_it_makes_a_network_socket, tc)
{
	char	 state[PATH_MAX];

	tmp_path(state, sizeof(state), "state");
	ATF_REQUIRE(mkdir(state, 0700) == 0);
	REQUIRE_SIGSYS(run_child(vault_socket, state));
}

static void
vault_exec(const void *state)
{
	struct sandbox_paths	 paths = { .state = state };
	char			*argv[] = { "/bin/true", NULL };
	char			*envp[] = { NULL };

	sandbox_nodump();
	sandbox_confine(SANDBOX_VAULT, &paths);
	execve(argv[0], argv, envp);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(vault_is_killed_when_it_starts_a_program);
ATF_TC_BODY(vault_is_killed_when_it_starts_a_program, tc)
{
	char	 state[PATH_MAX];

	tmp_path(state, sizeof(state), "state");
	ATF_REQUIRE(mkdir(state, 0700) == 0);
	REQUIRE_SIGSYS(run_child(vault_exec, state));
}

/* What sqlite3 does with its database, journal and -shm files. */
static void
vault_files(const void *state)
{
	struct sandbox_paths	 paths = { .state = state };
	char			 db[PATH_MAX], buf[8];
	struct stat		 st;
	int			 fd;

	snprintf(db, sizeof(db), "%s/x", (const char *)state);
	sandbox_nodump();
	sandbox_confine(SANDBOX_VAULT, &paths);
	if ((fd = open(db, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1)
		_exit(2);
	if (pwrite(fd, "sqlite", 6, 0) != 6 || fdatasync(fd) == -1 ||
	    ftruncate(fd, 4) == -1 || fstat(fd, &st) == -1 || st.st_size != 4)
		_exit(3);
	if (fcntl(fd, F_SETLK, &(struct flock){ .l_type = F_WRLCK }) == -1)
		_exit(4);
	if (pread(fd, buf, 4, 0) != 4 || memcmp(buf, "sqli", 4) != 0)
		_exit(5);
	close(fd);
	if (access(db, R_OK | W_OK) == -1 || unlink(db) == -1)
		_exit(6);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(vault_creates_and_removes_files_in_its_state_dir);
ATF_TC_BODY(vault_creates_and_removes_files_in_its_state_dir, tc)
{
	char	 state[PATH_MAX], x[PATH_MAX];

	tmp_path(state, sizeof(state), "state");
	tmp_path(x, sizeof(x), "state/x");
	ATF_REQUIRE(mkdir(state, 0700) == 0);
	REQUIRE_EXIT0(run_child(vault_files, state));
	ATF_REQUIRE_MSG(access(x, F_OK) == -1 && errno == ENOENT,
	    "the child's file was not removed");
}

static void
vault_outside(const void *state)
{
	struct sandbox_paths	 paths = { .state = state };
	char			 x[PATH_MAX];
	int			 fd;

	snprintf(x, sizeof(x), "%s/x", (const char *)state);
	sandbox_nodump();
	sandbox_confine(SANDBOX_VAULT, &paths);
	if (open("/etc/passwd", O_RDONLY | O_CLOEXEC) != -1)
		_exit(2);
	if (errno != EACCES)
		_exit(3);
	if ((fd = open(x, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == -1)
		_exit(4);
	close(fd);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(vault_cannot_read_outside_its_state_dir);
ATF_TC_BODY(vault_cannot_read_outside_its_state_dir, tc)
{
	char	 state[PATH_MAX], x[PATH_MAX];

	require_landlock();
	tmp_path(state, sizeof(state), "state");
	tmp_path(x, sizeof(x), "state/x");
	ATF_REQUIRE(mkdir(state, 0700) == 0);
	ATF_REQUIRE(access("/etc/passwd", R_OK) == 0);
	REQUIRE_EXIT0(run_child(vault_outside, state));
	ATF_REQUIRE(access(x, F_OK) == 0);
}

/* exec */

/*
 * Without a filter the calls the deny-list refuses work here, so the
 * EPERM below is the filter's doing and not the environment's.
 */
static void
unconfined_escape(const void *arg)
{
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == -1)
		_exit(2);
	if (unshare(CLONE_NEWUSER) == -1)
		_exit(3);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(unconfined_process_can_ptrace_and_unshare);
ATF_TC_BODY(unconfined_process_can_ptrace_and_unshare, tc)
{
	int	 st;

	st = run_child(unconfined_escape, NULL);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		atf_tc_skip("user namespaces are disabled here");
	REQUIRE_EXIT0(st);
}

static void
exec_escape(const void *arg)
{
	struct sandbox_paths	 paths = { .run_path = "/usr/bin:/bin" };
	long			 pid;

	sandbox_confine(SANDBOX_EXEC, &paths);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != -1 || errno != EPERM)
		_exit(2);
	if (unshare(CLONE_NEWUSER) != -1 || errno != EPERM)
		_exit(3);
	pid = syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid == 0)
		_exit(0);
	if (pid != -1 || errno != EPERM)
		_exit(4);
	pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL,
	    0);
	if (pid == 0)
		_exit(0);
	if (pid != -1 || errno != EPERM)
		_exit(5);
	if (syscall(SYS_bpf, 0, NULL, 0) != -1 || errno != EPERM)
		_exit(6);
	if (personality(ADDR_NO_RANDOMIZE) != -1 || errno != EPERM)
		_exit(7);
	if (personality(0xffffffff) == -1)	/* the query stays */
		_exit(8);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(exec_refuses_ptrace_unshare_and_namespaces);
ATF_TC_BODY(exec_refuses_ptrace_unshare_and_namespaces, tc)
{
	REQUIRE_EXIT0(run_child(exec_escape, NULL));
}

static void
exec_spawn(const void *run_dir)
{
	struct sandbox_paths	 paths = {
		.run_dir = run_dir, .run_path = "/usr/bin:/bin"
	};
	char			*argv[] = { "/bin/true", NULL };
	char			*envp[] = { NULL };
	pid_t			 pid;
	int			 st;

	sandbox_confine(SANDBOX_EXEC, &paths);
	if ((pid = fork()) == -1)
		_exit(2);
	if (pid == 0) {
		execve(argv[0], argv, envp);
		_exit(3);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		_exit(4);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(exec_still_forks_and_runs_a_program);
ATF_TC_BODY(exec_still_forks_and_runs_a_program, tc)
{
	char	 run_dir[PATH_MAX];

	tmp_path(run_dir, sizeof(run_dir), "runs");
	ATF_REQUIRE(mkdir(run_dir, 0700) == 0);
	REQUIRE_EXIT0(run_child(exec_spawn, run_dir));
}

static void
exec_writes(const void *run_dir)
{
	struct sandbox_paths	 paths = {
		.run_dir = run_dir, .run_path = "/usr/bin:/bin"
	};
	char			 in[PATH_MAX], out[PATH_MAX];
	int			 fd;

	snprintf(in, sizeof(in), "%s/run1", (const char *)run_dir);
	snprintf(out, sizeof(out), "%s/../elsewhere",
	    (const char *)run_dir);
	sandbox_confine(SANDBOX_EXEC, &paths);
	if (mkdir(in, 0700) == -1 || rmdir(in) == -1)
		_exit(2);
	if ((fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) == -1)
		_exit(3);
	close(fd);
	if ((fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC)) == -1)
		_exit(4);
	close(fd);
	if (open(out, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) != -1 ||
	    errno != EACCES)
		_exit(5);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(exec_writes_only_in_run_dir_and_dev);
ATF_TC_BODY(exec_writes_only_in_run_dir_and_dev, tc)
{
	char	 run_dir[PATH_MAX];

	require_landlock();
	tmp_path(run_dir, sizeof(run_dir), "runs");
	ATF_REQUIRE(mkdir(run_dir, 0700) == 0);
	REQUIRE_EXIT0(run_child(exec_writes, run_dir));
}

static void
exec_no_run_dir(const void *run_dir)
{
	struct sandbox_paths	 paths = { .run_dir = run_dir };

	sandbox_confine(SANDBOX_EXEC, &paths);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(exec_will_not_start_without_its_run_dir);
ATF_TC_BODY(exec_will_not_start_without_its_run_dir, tc)
{
	char	 run_dir[PATH_MAX];
	int	 st;

	require_landlock();
	tmp_path(run_dir, sizeof(run_dir), "missing");
	st = run_child(exec_no_run_dir, run_dir);
	ATF_REQUIRE_MSG(WIFEXITED(st) && WEXITSTATUS(st) != 0,
	    "exec confined itself without a run dir it could never create");
}

/* run child */

static void
child_setsid(const void *sc)
{
	if (sandbox_child_apply(sc) == -1)
		_exit(2);
	if (setsid() != -1 || errno != EPERM)
		_exit(3);
	if (setpgid(0, 0) != -1 || errno != EPERM)
		_exit(4);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != -1 || errno != EPERM)
		_exit(5);
	if (unshare(CLONE_NEWUSER) != -1 || errno != EPERM)
		_exit(6);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(run_child_cannot_leave_its_process_group);
ATF_TC_BODY(run_child_cannot_leave_its_process_group, tc)
{
	struct sandbox_child	 sc;

	ATF_REQUIRE(sandbox_child_prepare(&sc) == 0);
	ATF_REQUIRE(sc.bpf != NULL && sc.len > 0);
	REQUIRE_EXIT0(run_child(child_setsid, &sc));
	sandbox_child_free(&sc);
	ATF_REQUIRE(sc.bpf == NULL && sc.len == 0);
}

static void
child_shell(const void *sc)
{
	char	*argv[] = { "/bin/sh", "-c", "echo ok", NULL };
	char	*envp[] = { "PATH=/usr/bin:/bin", NULL };

	if (setsid() == -1)	/* what exec does before the filter */
		_exit(2);
	if (sandbox_child_apply(sc) == -1)
		_exit(3);
	execve(argv[0], argv, envp);
	_exit(4);
}

ATF_TC_WITHOUT_HEAD(run_child_still_runs_a_shell);
ATF_TC_BODY(run_child_still_runs_a_shell, tc)
{
	struct sandbox_child	 sc;
	char			 out[64];
	int			 st;

	ATF_REQUIRE(sandbox_child_prepare(&sc) == 0);
	st = run_child_output(child_shell, &sc, STDOUT_FILENO, out,
	    sizeof(out));
	sandbox_child_free(&sc);
	REQUIRE_EXIT0(st);
	ATF_REQUIRE_STREQ(out, "ok\n");
}

static void
child_status(const void *sc)
{
	char	 buf[4096];
	ssize_t	 n;
	int	 fd;

	if (sandbox_child_apply(sc) == -1)
		_exit(2);
	if ((fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)) == -1)
		_exit(3);
	if ((n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		_exit(4);
	buf[n] = '\0';
	_exit(strstr(buf, "\nSeccomp:\t2\n") != NULL ? 0 : 5);
}

ATF_TC_WITHOUT_HEAD(run_child_is_in_seccomp_filter_mode);
ATF_TC_BODY(run_child_is_in_seccomp_filter_mode, tc)
{
	struct sandbox_child	 sc;
	int			 st;

	ATF_REQUIRE(sandbox_child_prepare(&sc) == 0);
	st = run_child(child_status, &sc);
	sandbox_child_free(&sc);
	REQUIRE_EXIT0(st);
}

ATF_TC_WITHOUT_HEAD(run_child_apply_refuses_an_empty_filter);
ATF_TC_BODY(run_child_apply_refuses_an_empty_filter, tc)
{
	struct sandbox_child	 sc = { NULL, 0 };

	ATF_REQUIRE(sandbox_child_apply(&sc) == -1);
	ATF_REQUIRE_EQ(errno, EINVAL);
}

/* selftest (tregd -T) */

static void
selftest(const void *name)
{
	int	 rc;

	rc = sandbox_selftest(name);
	fflush(stdout);
	_exit(rc == 0 ? 0 : rc == 1 ? 10 : 11);
}

ATF_TC_WITHOUT_HEAD(selftest_frontend_dies_by_sigsys);
ATF_TC_BODY(selftest_frontend_dies_by_sigsys, tc)
{
	REQUIRE_SIGSYS(run_child(selftest, "frontend"));
}

ATF_TC_WITHOUT_HEAD(selftest_vault_dies_by_sigsys);
ATF_TC_BODY(selftest_vault_dies_by_sigsys, tc)
{
	REQUIRE_SIGSYS(run_child(selftest, "vault"));
}

ATF_TC_WITHOUT_HEAD(selftest_exec_and_child_report_refusals);
ATF_TC_BODY(selftest_exec_and_child_report_refusals, tc)
{
	char	 out[512];

	REQUIRE_EXIT0(run_child_output(selftest, "exec", STDOUT_FILENO, out,
	    sizeof(out)));
	ATF_REQUIRE_MATCH("selftest exec: ptrace: Operation not permitted",
	    out);
	REQUIRE_EXIT0(run_child_output(selftest, "child", STDOUT_FILENO, out,
	    sizeof(out)));
	ATF_REQUIRE_MATCH("selftest child: unshare: Operation not permitted",
	    out);
}

ATF_TC_WITHOUT_HEAD(selftest_rejects_an_unknown_name);
ATF_TC_BODY(selftest_rejects_an_unknown_name, tc)
{
	ATF_REQUIRE_EQ(sandbox_selftest("parent"), -1);
}

/* debugging a filter */

static void
debug_open(const void *arg)
{
	setenv("TREGD_SECCOMP_DEBUG", "1", 1);
	sandbox_confine(SANDBOX_FRONTEND, NULL);
	open("/etc/passwd", O_RDONLY);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(seccomp_debug_names_the_refused_call);
ATF_TC_BODY(seccomp_debug_names_the_refused_call, tc)
{
	char	 out[256], want[64];
	int	 st;

	st = run_child_output(debug_open, NULL, STDERR_FILENO, out,
	    sizeof(out));
	ATF_REQUIRE_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGSYS,
	    "expected exit %d from the trap handler, wait status %#x",
	    128 + SIGSYS, st);
	snprintf(want, sizeof(want), "tregd: seccomp: syscall %d denied\n",
	    (int)SYS_openat);
	ATF_REQUIRE_MATCH(want, out);
}

/* demotion */

static void
nodump(const void *arg)
{
	struct rlimit	 rl;

	sandbox_nodump();
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		_exit(2);
	if (getrlimit(RLIMIT_CORE, &rl) == -1 || rl.rlim_cur != 0 ||
	    rl.rlim_max != 0)
		_exit(3);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(nodump_forbids_core_files);
ATF_TC_BODY(nodump_forbids_core_files, tc)
{
	REQUIRE_EXIT0(run_child(nodump, NULL));
}

static void
demote(const void *root)
{
	struct passwd	*pw;
	gid_t		 groups[4];

	if ((pw = getpwnam("nobody")) == NULL)
		_exit(2);
	sandbox_nodump();
	sandbox_demote(pw, root);
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		_exit(8);
	if (getuid() != pw->pw_uid || geteuid() != pw->pw_uid)
		_exit(3);
	if (getgid() != pw->pw_gid || getegid() != pw->pw_gid)
		_exit(4);
	if (getgroups(4, groups) != 1 || groups[0] != pw->pw_gid)
		_exit(5);
	if (setuid(0) != -1 || setresuid(0, 0, 0) != -1)
		_exit(6);
	if (root != NULL && access("/etc/passwd", F_OK) != -1)
		_exit(7);
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(demote_drops_root_for_good);
ATF_TC_BODY(demote_drops_root_for_good, tc)
{
	require_root();
	ATF_REQUIRE(getpwnam("nobody") != NULL);
	REQUIRE_EXIT0(run_child(demote, NULL));
}

ATF_TC_WITHOUT_HEAD(demote_chroots_before_dropping_root);
ATF_TC_BODY(demote_chroots_before_dropping_root, tc)
{
	char	 root[PATH_MAX];

	require_root();
	tmp_path(root, sizeof(root), "empty");
	ATF_REQUIRE(mkdir(root, 0755) == 0);
	REQUIRE_EXIT0(run_child(demote, root));
}

static void
demote_unprivileged(const void *arg)
{
	struct passwd	 pw = { .pw_uid = 65534, .pw_gid = 65534 };
	uid_t		 uid = getuid();

	if (geteuid() == 0 && setresuid(65534, 65534, 65534) == -1)
		_exit(2);
	uid = getuid();
	sandbox_demote(&pw, "/nonexistent");	/* must do nothing */
	_exit(getuid() == uid ? 0 : 3);
}

ATF_TC_WITHOUT_HEAD(demote_does_nothing_when_not_root);
ATF_TC_BODY(demote_does_nothing_when_not_root, tc)
{
	REQUIRE_EXIT0(run_child(demote_unprivileged, NULL));
}

ATF_TP_ADD_TCS(tp)
{
	log_init(1, 0);
	ATF_TP_ADD_TC(tp, frontend_is_killed_when_it_opens_a_file);
	ATF_TP_ADD_TC(tp, frontend_is_killed_when_it_starts_a_program);
	ATF_TP_ADD_TC(tp, frontend_is_killed_when_it_makes_a_socket);
	ATF_TP_ADD_TC(tp, frontend_keeps_pipe_socket_and_epoll_io);
	ATF_TP_ADD_TC(tp, vault_is_killed_when_it_makes_a_network_socket);
	ATF_TP_ADD_TC(tp, vault_is_killed_when_it_starts_a_program);
	ATF_TP_ADD_TC(tp, vault_creates_and_removes_files_in_its_state_dir);
	ATF_TP_ADD_TC(tp, vault_cannot_read_outside_its_state_dir);
	ATF_TP_ADD_TC(tp, unconfined_process_can_ptrace_and_unshare);
	ATF_TP_ADD_TC(tp, exec_refuses_ptrace_unshare_and_namespaces);
	ATF_TP_ADD_TC(tp, exec_still_forks_and_runs_a_program);
	ATF_TP_ADD_TC(tp, exec_writes_only_in_run_dir_and_dev);
	ATF_TP_ADD_TC(tp, exec_will_not_start_without_its_run_dir);
	ATF_TP_ADD_TC(tp, run_child_cannot_leave_its_process_group);
	ATF_TP_ADD_TC(tp, run_child_still_runs_a_shell);
	ATF_TP_ADD_TC(tp, run_child_is_in_seccomp_filter_mode);
	ATF_TP_ADD_TC(tp, run_child_apply_refuses_an_empty_filter);
	ATF_TP_ADD_TC(tp, selftest_frontend_dies_by_sigsys);
	ATF_TP_ADD_TC(tp, selftest_vault_dies_by_sigsys);
	ATF_TP_ADD_TC(tp, selftest_exec_and_child_report_refusals);
	ATF_TP_ADD_TC(tp, selftest_rejects_an_unknown_name);
	ATF_TP_ADD_TC(tp, seccomp_debug_names_the_refused_call);
	ATF_TP_ADD_TC(tp, nodump_forbids_core_files);
	ATF_TP_ADD_TC(tp, demote_drops_root_for_good);
	ATF_TP_ADD_TC(tp, demote_chroots_before_dropping_root);
	ATF_TP_ADD_TC(tp, demote_does_nothing_when_not_root);
	return (atf_no_error());
}
