/*
 * Between exec_sandbox.c and exec_zygote.c: the zygote that makes every
 * run's init, and the order a made init waits for.
 */

#ifndef EXEC_ZYGOTE_H
#define EXEC_ZYGOTE_H

#include <limits.h>
#include <stdint.h>

enum zyg_type {
	ZYG_MAKE = 1		/* exec to zygote: make one init */
};

/* The fds of a ZYG_MAKE, in this order (the cgroups' only if set). */
enum {
	ZYG_FD_OUT,		/* the stdout pipe's write end */
	ZYG_FD_ERR,		/* the stderr pipe's write end */
	ZYG_FD_GO,		/* the order pipe's read end */
	ZYG_FD_CG0,		/* cgroup.procs, memory */
	ZYG_FD_CG1,		/* cgroup.procs, pids (v1) */
	ZYG_NFD
};

/* What an init is made of: never a secret (no argv, no environment). */
struct zyg_make {
	int32_t		 slot;
	uint32_t	 uid;
	uint32_t	 gid;
	int32_t		 change_uid;
	int32_t		 network;
	int32_t		 ncg;		/* cgroup fds that follow */
	char		 dir[PATH_MAX];
};

struct zyg_reply {
	int32_t		 pid;		/* -1: not made */
	int32_t		 err;		/* its errno */
};

/* In exec_sandbox.c, run in the zygote: clone one init, its pid or -1. */
pid_t	 sbx_zygote_make(const struct zyg_make *, const int *);

int	 zyg_start(int, int);
pid_t	 zyg_pid(void);
int	 zyg_fd_get(void);
int	 zyg_send(const struct zyg_make *, const int *);
pid_t	 zyg_reply(void);
int	 zyg_pending(void);
int	 sbx_order_send(int, const struct sbx_spec *);
int	 sbx_order_recv(int, struct sbx_spec *, char **, size_t *);
void	 sbx_order_drop(char *, size_t);

/* In exec_selftest.c: tregd -T child's checks, in the CLI's place. */
int	 sbx_selftest_run(const struct tregd_conf *, const struct sbx_run *);

#endif
