/*
 * exec_selftest: tregd -T child, the run child's filter, namespaces and
 * limits proven in a real sandbox (exec_sandbox.c), with a small
 * configuration of its own.
 */

#include <sys/types.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "tregd.h"
#include "exec_zygote.h"

/* ------------------------------------------------------------------ */
/* tregd -T child: the filter, the namespaces and the limits, proven.  */

#define SBX_TEST_PROCESSES	16
#define SBX_TEST_MEMORY		(32LL * 1024 * 1024)

static int	sbx_test_procs(void);
static int	sbx_test_memory(long long);
static void	sbx_say(const char *, ...)
		    __attribute__((__format__ (printf, 1, 2)));

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

int
sbx_selftest(void)
{
	struct tregd_conf	 conf;
	struct sbx_spec		 sp;
	struct sbx_run		 sr;
	char			 base[] = "/tmp/tregd-selftest.XXXXXX";
	char			 dir[PATH_MAX], buf[512];
	pid_t			 pid;
	ssize_t			 n;
	int			 po[2], status, rc;

	/* The filter alone, in a process of its own (it stays). */
	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0)
		_exit(sandbox_selftest("child"));
	if (waitpid(pid, &status, 0) == -1)
		err(1, "waitpid");
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	fflush(stdout);

	conf_defaults(&conf);
	conf.run_processes = SBX_TEST_PROCESSES;
	conf.run_memory = SBX_TEST_MEMORY;
	if (mkdtemp(base) == NULL)
		err(1, "mkdtemp");
	strlcpy(conf.run_dir, base, sizeof(conf.run_dir));
	strlcpy(conf.state, "/nonexistent", sizeof(conf.state));
	log_init(1, 0);
	sbx_init(&conf);
	sbx_zygote();
	if (sbx_alloc(&sr, -1) == -1)
		errx(1, "no slot");
	snprintf(dir, sizeof(dir), "%s/run.1", base);
	if (!sbx_tmpfs() && (mkdir(dir, 0700) == -1 || (sr.change_uid &&
	    chown(dir, sr.uid, sr.gid) == -1)))
		err(1, "%s", dir);
	memset(&sp, 0, sizeof(sp));
	sp.dir = dir;
	sp.network = 1;
	sp.test = sbx_selftest_run;
	if (sbx_spawn(&conf, &sp, &sr, po) == -1)
		errx(1, "cannot start the sandbox");
	while ((n = read(po[0], buf, sizeof(buf))) > 0)
		fwrite(buf, 1, n, stdout);
	while ((n = read(po[1], buf, sizeof(buf))) > 0)
		fwrite(buf, 1, n, stdout);
	if (waitpid(sr.pid, &status, 0) == -1)
		err(1, "waitpid");
	status = sbx_reaped(&sr, status);
	sbx_cleanup();
	if (!sbx_tmpfs())
		rmdir(dir);
	rmdir(base);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("selftest child: the sandbox failed a check\n");
		rc = 1;
	}
	fflush(stdout);
	return (rc);
}
