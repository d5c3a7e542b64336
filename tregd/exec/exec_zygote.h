/*
 * Between exec_sandbox.c and exec_zygote.c: the zygote that makes every
 * run's init, and the order a made init waits for.
 */

#ifndef EXEC_ZYGOTE_H
#define EXEC_ZYGOTE_H

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <limits.h>
#include <stdint.h>

#include "sandbox.h"

enum sbx_mode {
	SBX_NONE,
	SBX_UIDS,
	SBX_USERNS,
	SBX_NAMESPACES
};

/* What an init leaves for exec, one per slot, in a shared page. */
struct sbx_shared {
	int			 status;
	int64_t			 execve;	/* CLOCK_MONOTONIC, ns */
	int64_t			 end;
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

#define SBX_STATUS_SET	0x40000000	/* the init left the CLI's status */
#define SBX_GO_FD	3		/* the CLI's order socket, until execve */

/*
 * The zygote is a small program of its own (tregd/zygote/zygote.c,
 * compiled into tregd and started from a memfd), so that each init's
 * clone and exit copy and unmap a few mappings, not exec's.  Its
 * descriptors, in this order from 3; its settings are in ZYG_FD_CONF.
 */
enum {
	ZYG_FD_SOCK = 3,	/* its socket to exec */
	ZYG_FD_LIFE,		/* the life pipe's read end */
	ZYG_FD_NULL,		/* /dev/null */
	ZYG_FD_STATUS,		/* the memfd of the inits' statuses */
	ZYG_FD_CONF,		/* the memfd of a struct zyg_conf + filter */
	ZYG_FD_PROG		/* the program's memfd (close-on-exec) */
};

#define SBX_ORDER_MAX	(32 * 1024 * 1024)

/* The order a made init waits for; strings follow, NUL-terminated. */
struct sbx_order {
	uint32_t	 len;	/* of the strings */
	uint32_t	 argc;
	uint32_t	 envc;
	uint32_t	 test;	/* tregd -T child: the selftest, no execve */
	/*
	 * RUN_NET_PROXY: the listeners the CLI makes in the run's network
	 * namespace before it becomes the run user, sent back to exec on
	 * this socket (SCM_RIGHTS, their ports as the payload); the run's
	 * /etc/hosts lines follow the environment as one more string.
	 */
	uint32_t	 nports;
	uint16_t	 ports[SBX_PORTS_MAX];
};

#define ZYG_MAGIC	0x7a796734	/* "zyg4" */

/* What the zygote's inits need of exec's settings; the CLI filter follows. */
struct zyg_conf {
	uint32_t	 magic;
	int32_t		 mode;		/* enum sbx_mode */
	uint32_t	 count;		/* slots: run users */
	int32_t		 exec;		/* exec's pid, the zygote's parent */
	uint32_t	 self_uid;
	uint32_t	 self_gid;
	int32_t		 memcg;		/* a memory cgroup: no RLIMIT_AS */
	int32_t		 run_rlimits;
	int32_t		 run_processes;
	int64_t		 run_cpu;
	int64_t		 run_filesize;
	int64_t		 run_memory;
	int64_t		 run_tmpsize;
	char		 state[PATH_MAX];
	char		 socket[PATH_MAX];	/* its directory is hidden */
	char		 run_dir[PATH_MAX];
	char		 memory_limit[64];	/* sbx_memory_limit() */
	uint32_t	 bpf_len;	/* struct sock_filter that follow */
};

/* Shared by exec and the zygote's program (exec_child.c). */
extern int			 sbx_mode;
extern int			 sbx_devnull;
extern int			 sbx_life[2];
extern int			 sbx_memcg;
extern unsigned int		 sbx_count;
extern uid_t			 sbx_self_uid;
extern gid_t			 sbx_self_gid;
extern struct sandbox_child	 sbx_filter;
extern struct sbx_shared	*sbx_status;
extern const char		*sbx_cg_name;
extern char			*sbx_order_buf;
extern size_t			 sbx_order_len;

__dead void	 sbx_cli(const struct sbx_child *);
__dead void	 sbx_fail(int, const char *);
void		 sbx_signals(void);
int		 sbx_write(const char *, const char *, const char *);
int		 sbx_idmap(void);
int		 sbx_mounts_make(const struct sbx_child *);
int64_t		 sbx_now(void);

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

/*
 * Messages with descriptors (exec_child.c), between exec and its zygote
 * and from a run's CLI to exec: at most FD_PASS_MAX descriptors, more
 * than a zygote request (ZYG_NFD) or a run's listeners (SBX_PORTS_MAX).
 */
#define FD_PASS_MAX	80
ssize_t	 fd_send(int, struct iovec *, int, const int *, size_t);
ssize_t	 fd_recv(int, struct iovec *, int, int, int *, size_t, size_t *);
int	 zyg_start(const struct zyg_conf *, int);
pid_t	 zyg_pid(void);
int	 zyg_fd_get(void);
int	 zyg_send(const struct zyg_make *, const int *);
pid_t	 zyg_reply(void);
int	 zyg_pending(void);
int	 sbx_order_send(int, const struct sbx_spec *);
int	 sbx_order_recv(int, struct sbx_spec *, char **, size_t *);
void	 sbx_order_drop(char *, size_t);

/* In exec_child.c: tregd -T child's checks, in the CLI's place. */
int	 sbx_selftest_run(const struct tregd_conf *, const struct sbx_run *);

#endif
