/*
 * sandbox: demotion and confinement of every tregd process.
 *
 * Each process calls, in this order (STYLE.md item 3): its own prepare
 * step (files, sockets, sodium_init, sqlite3_open, tzset), then
 * sandbox_demote(), sandbox_nodump() and sandbox_confine().
 *
 * frontend and vault get a seccomp allow-list (anything else kills the
 * process).  exec cannot: its filter is inherited by every run child and
 * filters stack, so an allow-list there would break arbitrary CLIs.  It
 * gets the deny-list of kernel-attack and escape calls (EPERM), and a run
 * child adds setsid/setpgid on top so it cannot leave the process group
 * that is killed when the run ends.  exec has "no network" because it
 * never opens a socket, not because a filter stops it.
 *
 * Set TREGD_SECCOMP_DEBUG in the environment of a process to trap (and
 * name) the syscall its allow-list refused instead of killing silently.
 */

#ifndef SANDBOX_H
#define SANDBOX_H

#include <stddef.h>

struct passwd;

enum sandbox_proc {
	SANDBOX_FRONTEND,
	SANDBOX_VAULT,
	SANDBOX_EXEC,
	SANDBOX_RELAY,
	SANDBOX_ZYGOTE		/* exec's zygote: it and its inits mount */
};

struct sandbox_paths {		/* filesystem the process keeps (Landlock) */
	const char	*state;		/* vault: the state directory (rw);
					   "/" when chrooted into it */
	const char	*run_dir;	/* exec: where run dirs are made (rw) */
	const char	*run_path;	/* exec: colon-separated dirs of
					   allowed binaries (read+exec) */
	int		 mounts;	/* exec: run inits clone namespaces
					   and mount (no Landlock then:
					   exec makes their cgroups) */
	int		 db_connect;	/* vault: may reach its PostgreSQL
					   server again (socket, connect) */
	int		 db_port;	/* vault: its TCP port, or 0 for a
					   Unix socket only */
};

/* A compiled run child filter: classic BPF, ready for seccomp(2). */
struct sandbox_child {
	void		*bpf;		/* struct sock_filter[len] */
	unsigned short	 len;		/* instructions */
};

/*
 * chroot(root) + chdir("/") when root != NULL, then setgroups,
 * setresgid and setresuid to pw, then check that root cannot be had back.
 * Only when geteuid() == 0; otherwise nothing.  fatal() on failure.
 */
void	sandbox_demote(const struct passwd *, const char *);

/* PR_SET_DUMPABLE 0 and RLIMIT_CORE 0.  fatal() on failure. */
void	sandbox_nodump(void);

/*
 * PR_SET_NO_NEW_PRIVS, Landlock (best effort: skipped with a debug line
 * when the kernel has none) and the seccomp filter of that process.
 * fatal() on failure.
 */
void	sandbox_confine(enum sandbox_proc, const struct sandbox_paths *);

/* Build the run child's filter once, in exec.  0 or -1 (logged). */
int	sandbox_child_prepare(struct sandbox_child *);

/*
 * Install it in a forked child before execve: async-signal-safe, no
 * allocation, only prctl and seccomp.  0, or -1 with errno set.
 */
int	sandbox_child_apply(const struct sandbox_child *);
void	sandbox_child_free(struct sandbox_child *);

/*
 * tregd -T NAME: install the real confinement of NAME and try a call it
 * forbids.  "frontend" (open, then execve) and "vault" (socket(AF_INET),
 * then execve) do not return when the filter works: SIGSYS kills them.
 * "exec" (as when its runs get namespaces: no Landlock), "zygote" and
 * "child" have deny-lists: ptrace(PTRACE_TRACEME) and
 * unshare(CLONE_NEWUSER) must fail with EPERM, and for "exec" and
 * "child" mount(2) too (the zygote's inits mount: it prints what mount
 * got); they print the results and return 0 when all failed.  "relay"
 * may make an outbound socket but not open a file (EACCES) nor listen
 * (SIGSYS kills it).  Returns 1
 * after printing "selftest NAME: forbidden call was allowed" when a call
 * went through, -1 for an unknown NAME.
 */
int	sandbox_selftest(const char *);

#endif /* SANDBOX_H */
