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
#include "exec.h"
#include "exec_zygote.h"

/* ------------------------------------------------------------------ */
/* tregd -T child: the filter, the namespaces and the limits, proven.  */

#define SBX_TEST_PROCESSES	16
#define SBX_TEST_MEMORY		(32LL * 1024 * 1024)






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
	sp.network = RUN_NET_NONE;
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
