/*
 * exec/: what exec's files share (root with reduced capabilities, no
 * network: makes every run's sandbox, reads and redacts its output).
 */

#ifndef EXEC_H
#define EXEC_H

#include "tregd.h"

/* exec_ca.c */
int	 exec_ca_bundle(const struct tregd_conf *);
void	 exec_ca_set(const void *, size_t);
int	 exec_ca_made(void);
int	 exec_ca_run(void);
void	 exec_ca_remove(const struct tregd_conf *);

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
	int		 go;		/* ready: its order socket, exec's end */
	int		 egress;	/* RUN_NET_PROXY: where its listeners
					   come back (sbx_egress_recv); -1 */
	int		 rd[2];		/* ready: its stdout, stderr */
	struct sbx_stamps st;		/* once it ended (namespaces only) */
};
struct sbx_spec {		/* what the CLI gets */
	const char	*path;
	char		**argv;
	char		**env;
	const char	*dir;		/* HOME */
	int		 network;	/* RUN_NET_NONE, _PROXY, _HOST */
	/* RUN_NET_PROXY: the run's /etc/hosts lines, its listeners' ports */
	const char	*etc_hosts;
	const uint16_t	*ports;		/* ports[0]: EGRESS_PROXY_PORT */
	size_t		 nports;
	/* tregd -T child: called instead of execve, returns the exit code */
	int		(*test)(const struct tregd_conf *,
			    const struct sbx_run *);
};
/* A run's listeners: 1 + a port per egress host, at most. */
#define SBX_PORTS_MAX	(1 + RUN_HOSTS_MAX)
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
int	 sbx_egress_recv(int, int *, uint16_t *, size_t);
void	 sbx_pool_flush(int);

#endif /* EXEC_H */
