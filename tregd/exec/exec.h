/*
 * exec/: what exec's files share (root with reduced capabilities, no
 * network: makes every run's sandbox, reads and redacts its output).
 */

#ifndef EXEC_H
#define EXEC_H

#include "tregd.h"

/* exec_metrics.c */
void	 exec_metrics_start(struct imsgev *);
void	 exec_metrics_running(int);

/* exec_sandbox.c */
struct sbx_stamps {		/* clock_gettime stamps of one run, ns */
	int64_t		 execve;	/* the CLI, just before execve */
	int64_t		 end;		/* its init, once it was reaped */
};
struct sbx_run {		/* one run's place in the sandbox */
	pid_t		 pid;		/* the init or the CLI; -1 once reaped */
	pid_t		 pgid;		/* no init: the CLI's group; else -1 */
	int		 slot;		/* in "run users"; -1 none */
	uid_t		 uid;
	gid_t		 gid;
	int		 change_uid;	/* 0: the run keeps the daemon's uid */
	int		 ready;		/* an init made in advance */
	int		 go;		/* ready: its order pipe, exec's end */
	int		 rd[2];		/* ready: its stdout, stderr */
	struct sbx_stamps st;		/* once it ended (namespaces only) */
};
struct sbx_spec {		/* what the CLI gets */
	const char	*path;
	char		**argv;
	char		**env;
	const char	*dir;		/* HOME */
	int		 network;	/* 0: loopback only */
	/* tregd -T child: called instead of execve, returns the exit code */
	int		(*test)(const struct tregd_conf *,
			    const struct sbx_run *);
};
void	 sbx_init(const struct tregd_conf *);
void	 sbx_zygote(void);
int	 sbx_zygote_fd(void);
int	 sbx_zygote_reply(void);
int	 sbx_mounts(void);
int	 sbx_tmpfs(void);
int	 sbx_alloc(struct sbx_run *, int);
void	 sbx_release(struct sbx_run *);
int	 sbx_spawn(const struct tregd_conf *, const struct sbx_spec *,
	    struct sbx_run *, int *);
int	 sbx_refill(const struct tregd_conf *, int);
void	 sbx_orphan(pid_t);
int	 sbx_ended(struct sbx_run *, int *);
int	 sbx_reaped(struct sbx_run *, int);
void	 sbx_kill(const struct sbx_run *);
void	 sbx_stop(void);
void	 sbx_cleanup(void);
const char *sbx_memory_limit(void);
int	 sbx_isolated(void);

#endif /* EXEC_H */
