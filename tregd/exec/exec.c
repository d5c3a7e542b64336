/*
 * The exec process (root with reduced capabilities, no network).
 *
 * It takes run orders from the vault, starts each CLI child in a sandbox
 * of its own (exec_sandbox.c: a uid per run, namespaces, limits), reads
 * its output, redacts it and streams the redacted bytes to the frontend.
 * Raw output never leaves this process.  It may create and remove run
 * directories under the run directory (when runs get no tmpfs), start
 * programs found on the run path and signal its own run children; it
 * never opens a socket.  Its one cache is the compiled redaction sets,
 * one per tool and version of its secrets (common/redact_cache.c, made
 * by a thread of its own, never on this loop).  It keeps a
 * pool of sandboxes ready ("run pool"), refilled one per turn of its loop
 * after answers.  A proxied run's listeners (made inside its network
 * namespace by its CLI before execve, sbx_egress_make) come back on its
 * order socket and go on to the relay (IMSG_EGRESS_LISTEN); its end is
 * IMSG_EGRESS_END.  The run CA the relay sends at start joins the CA
 * bundle runs see.
 */

#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <linux/capability.h>

#include <dirent.h>
#include <errno.h>
#include <event.h>
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

#include "pack.h"
#include "proc.h"
#include "redact.h"
#include "redact_cache.h"
#include "sandbox.h"
#include "tregd.h"
#include "exec.h"
#include "util.h"

#define RUN_ENV_OWN	7	/* the variables exec sets itself */
#define RUN_BLOB_MAX	(16 * 1024 * 1024)
#define RUN_READ_LEN	65536
#define RUN_RM_DEPTH	64
/* After the leader died and its group was killed: how long to wait for EOF. */
#define RUN_DRAIN_MS	500
#define RUN_EARLY_CANCEL 64
#define RUN_CA_PEM_MAX	16384	/* the run CA's certificate, in PEM */
#define RUN_PROXY_URL	"http://127.0.0.1:3128"

struct run;

struct run_out {
	struct run	*run;
	uint8_t		 stream;	/* 1 stdout, 2 stderr */
	int		 fd;		/* -1 once closed */
	struct event	 ev;
	struct redact	*rd;
};

struct run {
	TAILQ_ENTRY(run)	 entry;
	uint32_t		 reqid;		/* the frontend's request */
	uint32_t		 runid;		/* the vault's */
	int			 worker;	/* the vault worker that sent it */
	struct sbx_run		 sb;		/* pid, uid, slot */
	int			 made_dir;	/* exec made dir (no tmpfs) */
	int			 exited;
	int			 status;
	int			 timed_out;
	int			 cancelled;	/* the client went away */
	const char		*offline;	/* why it has no network, or NULL */
	size_t			 nown;		/* env[0..nown): exec's own */
	size_t			 nca;		/* of them, the CA bundle's */
	int			 paused;	/* the client is not reading */
	uint32_t		 timeout_s;
	struct timespec		 start;
	int64_t			 t_order;	/* stamps (ns): run order in, */
	int64_t			 t_spawned;	/* handed to its sandbox */
	uint32_t		 duration_ms;
	struct event		 ev_timeout;
	struct event		 ev_drain;
	struct run_out		 out[2];
	struct rcache		*rset;		/* its compiled redaction set */
	/* Until it starts: the order (argv and env point into it). */
	struct blob		*blob;
	const char		*bin;
	char			**argv;
	char			**env;
	int			 network;	/* RUN_NET_* */
	char			 dir[PATH_MAX];
	/* RUN_NET_PROXY: its /etc/hosts lines, its listeners' ports */
	char			*etc_hosts;
	uint16_t		 ports[SBX_PORTS_MAX];
	size_t			 nports;
	struct event		 ev_egress;	/* its listeners, coming */
	int			 egress_wait;	/* ev_egress is set */
	int			 egress_sent;	/* the relay knows the run */
};
TAILQ_HEAD(run_list, run);

static struct tregd_conf	 exec_conf;
static struct imsgev		 iev_parent, iev_frontend, iev_relay;
/* Each vault worker's: a run's end goes to the one that holds its record. */
static struct imsgev		 iev_vaults[VAULT_WORKERS_MAX];
static int			 nvaults;
static struct event		 ev_sigchld;
static struct event		 ev_refill;
static struct event		 ev_zygote;
static int			 nruns;
static struct blob_list		 exec_blobs = TAILQ_HEAD_INITIALIZER(exec_blobs);
static struct run_list		 runs = TAILQ_HEAD_INITIALIZER(runs);
/* Run orders waiting for their redaction set. */
static struct run_list		 waiting = TAILQ_HEAD_INITIALIZER(waiting);
static int			 as_root;
static int			 exec_prepared;	/* exec_prepare() is done */
static int			 exec_stopping;	/* a peer is gone: tregd stops */
static int			 exec_pool_network;	/* the pool's run network */
/* A proxied run's way out (SPEC 6a): every client library's names. */
static const char *const	 proxy_vars[] = { "HTTPS_PROXY", "HTTP_PROXY",
    "https_proxy", "http_proxy", "ALL_PROXY" };
static const char *const	 noproxy_vars[] = { "NO_PROXY", "no_proxy" };
#define RUN_ENV_PROXY	(sizeof(proxy_vars) / sizeof(proxy_vars[0]) + \
			    sizeof(noproxy_vars) / sizeof(noproxy_vars[0]))
/* The variables that name a CA bundle, for OpenSSL, Go, Node, Python. */
static const char *const	 ca_vars[] = { "SSL_CERT_FILE",
    "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "AWS_CA_BUNDLE", "GIT_SSL_CAINFO" };
static unsigned char		 readbuf[RUN_READ_LEN];
/* Cancels that came before their run order (another channel). */
static uint32_t			 early_cancel[RUN_EARLY_CANCEL];
static size_t			 nearly_cancel;

static void	exec_dispatch(struct imsgev *, struct imsg *);
static void	exec_imsg_reload_end(struct imsgev *, struct imsg *);
static void	exec_imsg_run_start(struct imsgev *, struct imsg *);
static void	exec_imsg_run_data(struct imsgev *, struct imsg *);
static void	exec_imsg_run_cancel(struct imsgev *, struct imsg *);
static void	exec_imsg_run_pause(struct imsgev *, struct imsg *);
static void	exec_imsg_egress_ca(struct imsgev *, struct imsg *);
static void	exec_closed(struct imsgev *);
static void	exec_sig(int, short, void *);

#define FROM_PARENT	IMSG_FROM(PROC_PARENT)
#define FROM_FRONTEND	IMSG_FROM(PROC_FRONTEND)
#define FROM_VAULT	IMSG_FROM(PROC_VAULT)
#define FROM_RELAY	IMSG_FROM(PROC_RELAY)

/* Every message exec takes once it serves, and from whom. */
static const struct imsg_handler exec_imsgs[] = {
	/* A reload: limits and paths apply to the next runs. */
	{ IMSG_CONF,	FROM_PARENT, sizeof(struct tregd_conf),	proc_imsg_conf },
	{ IMSG_CONF_END, FROM_PARENT, 0,		exec_imsg_reload_end },
	{ IMSG_LOG_VERBOSE, FROM_PARENT, sizeof(int),	proc_log_verbose },
	/* A run order: a blob from the vault worker that decided it. */
	{ IMSG_RUN_START, FROM_VAULT, IMSG_LEN_ANY,	exec_imsg_run_start },
	{ IMSG_DATA,	FROM_VAULT, IMSG_LEN_ANY,	exec_imsg_run_data },
	/* The frontend speaks for a run's client. */
	{ IMSG_RUN_CANCEL, FROM_FRONTEND, 0,		exec_imsg_run_cancel },
	{ IMSG_RUN_PAUSE, FROM_FRONTEND, 0,		exec_imsg_run_pause },
	{ IMSG_RUN_RESUME, FROM_FRONTEND, 0,		exec_imsg_run_pause },
	/* The run CA's certificate, once at the relay's start. */
	{ IMSG_EGRESS_CA, FROM_RELAY, IMSG_LEN_ANY,	exec_imsg_egress_ca },
};

static struct proc_peer	 exec_peers[] = {
	{ PROC_FRONTEND,	&iev_frontend,	exec_dispatch, 0 },
	{ PROC_RELAY,		&iev_relay,	exec_dispatch, 0 },
};
#define NPEERS	(sizeof(exec_peers) / sizeof(exec_peers[0]))

static const struct proc_child exec_child = {
	PROC_EXEC, &exec_conf, exec_peers, NPEERS, iev_vaults, &nvaults,
	exec_dispatch, exec_closed
};

static void	exec_kill_runs(void);
static void	exec_atexit(void);
static void	exec_sigchld(int, short, void *);
static void	exec_prepare(void);
static void	exec_drop_caps(void);
static void	exec_start(struct blob *);
static void	exec_set_ready(void *, struct rcache *);
static void	exec_go(struct run *);
static void	exec_args_free(struct run *);
static int	exec_resolve(const char *, char *, size_t);
static int	run_mkdir(struct run *);
static void	run_spawn(struct run *, const char *, char **, char **, int);
static int	run_read_some(struct run_out *, int);
static void	run_read(int, short, void *);
static void	run_out_close(struct run_out *);
static void	run_emit(void *, const void *, size_t);
static void	run_timeout(int, short, void *);
static void	run_drain(int, short, void *);
static struct run *run_find(uint32_t);
static void	run_cancel(uint32_t);
static void	run_cancel_pending(uint32_t);
static void	run_pause(uint32_t, int);
static void	run_maybe_done(struct run *);
static void	run_exited(struct run *, int);
static void	run_done(struct run *);
static void	run_report(const struct run *, struct run_exit *);
static void	exec_flush(struct imsgev *);
static void	run_free(struct run *);
static void	rm_tree_at(int, const char *, int, int);
static void	rm_dir(const char *);
static void	exec_refill(int, short, void *);
static void	exec_refill_soon(void);
static void	exec_zygote(int, short, void *);
static void	run_stages(const struct run *, int64_t);
static int	run_network(const struct run_start *, struct run *);
static void	run_egress_plan(struct run *, const struct run_order *);
static int	run_hosts_has(const char *, size_t, const char *);
static int	run_env_net(struct run *, size_t);
static void	run_egress_read(int, short, void *);
static void	run_egress_end(struct run *);

__dead void
exec_main(int debug, int verbose)
{
	struct sandbox_paths	 paths;

	proc_child_init(&exec_child, &iev_parent, debug, verbose, NULL,
	    0);

	exec_prepare();
	if (atexit(exec_atexit) != 0)
		fatalx("atexit");
	sandbox_nodump();
	if (as_root)
		exec_drop_caps();
	memset(&paths, 0, sizeof(paths));
	paths.run_dir = exec_conf.run_dir;
	paths.run_path = exec_conf.run_path;
	paths.mounts = sbx_mounts();
	/*
	 * Before any message that may hold a secret, and before exec's
	 * filter: the zygote installs its own, which lets its inits mount.
	 */
	sbx_zygote();
	sandbox_confine(SANDBOX_EXEC, &paths);
	if (sbx_zygote_fd() != -1) {
		event_set(&ev_zygote, sbx_zygote_fd(), EV_READ | EV_PERSIST,
		    exec_zygote, NULL);
		event_add(&ev_zygote, NULL);
	}

	signal_set(&ev_sigchld, SIGCHLD, exec_sigchld, NULL);
	signal_add(&ev_sigchld, NULL);
	evtimer_set(&ev_refill, exec_refill, NULL);
	exec_refill_soon();
	exec_metrics_start(&iev_frontend);
	rcache_init();
	rcache_start();
	proc_child_run(exec_sig);
}

/*
 * Everything that needs the filesystem or full privileges: the sandbox
 * (mode, run users, cgroups, the child's filter), the run directory base
 * (root-owned 0711, so run users can reach their own directory but not
 * list the others), leftovers of an earlier exec, and the subreaper bit
 * so a daemonised grandchild is reparented here and reaped.
 */
static void
exec_prepare(void)
{
	struct stat	 st;
	DIR		*d;
	struct dirent	*de;
	int		 dfd;

	as_root = geteuid() == 0;
	sbx_init(&exec_conf);
	if (mkdir(exec_conf.run_dir, 0711) == -1 && errno != EEXIST)
		fatal("mkdir %s", exec_conf.run_dir);
	if (lstat(exec_conf.run_dir, &st) == -1)
		fatal("lstat %s", exec_conf.run_dir);
	if (!S_ISDIR(st.st_mode))
		fatalx("run directory %s is not a directory",
		    exec_conf.run_dir);
	if (as_root && (st.st_uid != 0 || chmod(exec_conf.run_dir, 0711) ==
	    -1))
		fatalx("run directory %s must be owned by root",
		    exec_conf.run_dir);

	/* Run directories of an exec that died before removing them. */
	if ((dfd = open(exec_conf.run_dir, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1)
		fatal("open %s", exec_conf.run_dir);
	if ((d = fdopendir(dup(dfd))) == NULL)
		fatal("fdopendir %s", exec_conf.run_dir);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "run.", 4) == 0)
			rm_tree_at(dfd, de->d_name, 1, 0);
	closedir(d);
	close(dfd);
	if (exec_ca_bundle(&exec_conf) == -1)
		fatalx("cannot make the runs' CA bundle");
	exec_prepared = 1;
	exec_pool_network = exec_conf.run_network;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1)
		fatal("PR_SET_CHILD_SUBREAPER");
}

/*
 * The relay's run CA, once at its start: into the bundle, and the pool's
 * sandboxes, bound to the bundle before it, are made again.
 */
static void
exec_imsg_egress_ca(struct imsgev *iev, struct imsg *imsg)
{
	static const char	 begin[] = "-----BEGIN CERTIFICATE-----";

	if (imsg->datalen < sizeof(begin) || imsg->datalen > RUN_CA_PEM_MAX ||
	    memcmp(imsg->data, begin, sizeof(begin) - 1) != 0 ||
	    memchr(imsg->data, '\0', imsg->datalen) != NULL)
		fatalx("%s: bad IMSG_EGRESS_CA from %s", __func__, iev->name);
	exec_ca_set(imsg->data, imsg->datalen);
	if (!exec_prepared)
		return;			/* exec_prepare() writes it */
	if (exec_ca_bundle(&exec_conf) == -1)
		log_warnx("the run CA is not in the runs' CA bundle: "
		    "proxied runs' TLS will fail");
	sbx_pool_flush(exec_pool_network);
	exec_refill_soon();
}

/*
 * Keep only what runs need: change uid and gid (setgroups too), signal a
 * run's processes, give and take back a run directory, make a run's
 * namespaces and mounts (CAP_SYS_ADMIN), up its loopback
 * (CAP_NET_ADMIN) and, in its CLI before execve, bind a proxied run's
 * listeners on ports like 443 in its own network namespace
 * (CAP_NET_BIND_SERVICE; exec itself opens no socket).  The bounding set goes first when CAP_SETPCAP allows
 * (a service manager may have taken it already: the bounding set is
 * then its, and what is not permitted now is not asked for).
 */
static void
exec_drop_caps(void)
{
	struct __user_cap_header_struct	 hdr;
	struct __user_cap_data_struct	 data[2];
	const int	 keep[] = { CAP_SETUID, CAP_SETGID, CAP_KILL,
			    CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER,
			    CAP_SYS_ADMIN, CAP_NET_ADMIN,
			    CAP_NET_BIND_SERVICE };
	uint64_t	 mask = 0, have;
	size_t		 i;
	int		 c;

	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		mask |= 1ULL << keep[i];
	memset(&hdr, 0, sizeof(hdr));
	memset(data, 0, sizeof(data));
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	if (syscall(SYS_capget, &hdr, data) == -1)
		fatal("capget");
	have = data[0].permitted | (uint64_t)data[1].permitted << 32;
	for (c = 0; c < 64 && (have & (1ULL << CAP_SETPCAP)); c++) {
		if (mask & (1ULL << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == -1) {
			if (errno == EINVAL)
				break;		/* past the last capability */
			fatal("PR_CAPBSET_DROP %d", c);
		}
	}
	if (!(have & (1ULL << CAP_SETPCAP)))
		log_debug("exec: no CAP_SETPCAP, the bounding set stays");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1 &&
	    errno != EINVAL)
		fatal("PR_CAP_AMBIENT_CLEAR_ALL");
	mask &= have;
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = (uint32_t)mask;
	data[1].effective = data[1].permitted = (uint32_t)(mask >> 32);
	if (syscall(SYS_capset, &hdr, data) == -1)
		fatal("capset");
}

/* No run outlives exec, nor its directory. */
static void
exec_kill_runs(void)
{
	struct run	*r;

	TAILQ_FOREACH(r, &runs, entry) {
		sbx_kill(&r->sb);
		if (r->made_dir)
			rm_dir(r->dir);
	}
	sbx_stop();
}

static void
exec_sig(int sig, short event, void *arg)
{
	exit(0);		/* exec_atexit() */
}

/* However exec ends (a fatal error too): no run, no run cgroup stays. */
static void
exec_atexit(void)
{
	struct timespec	 ts = { 0, 10 * 1000 * 1000 };
	int		 i;
	pid_t		 pid;

	exec_kill_runs();
	/* Reaped, the runs leave their cgroups empty for removal. */
	for (i = 0; i < 100; i++) {
		while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
			;
		if (pid == -1 && errno == ECHILD)
			break;
		nanosleep(&ts, NULL);
	}
	sbx_cleanup();
	rcache_clear();
	/* The CA bundle is made again at start: nothing stays behind. */
	exec_ca_remove(&exec_conf);
}

static void
exec_dispatch(struct imsgev *iev, struct imsg *imsg)
{
	imsgev_dispatch(IMSG_HANDLERS(exec_imsgs), iev, imsg);
}

/* A reload that changed "run network": the pool is made again so. */
static void
exec_imsg_reload_end(struct imsgev *iev, struct imsg *imsg)
{
	if (exec_conf.run_network == exec_pool_network)
		return;
	exec_pool_network = exec_conf.run_network;
	sbx_pool_flush(exec_pool_network);
	exec_refill_soon();
}

static void
exec_imsg_run_start(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;

	b = blob_start(&exec_blobs, imsg, iev->peer, sizeof(struct run_start),
	    RUN_BLOB_MAX);
	if (b == NULL)
		fatalx("%s: bad IMSG_RUN_START from %s", __func__, iev->name);
	if (b->datalen == 0)
		fatalx("%s: empty IMSG_RUN_START from %s", __func__,
		    iev->name);
}

static void
exec_imsg_run_data(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;
	int		 bad;

	b = blob_add(&exec_blobs, imsg, iev->peer, &bad);
	if (bad)
		fatalx("%s: bad IMSG_DATA from %s", __func__, iev->name);
	/* A cancel that came first is looked at once the run started. */
	if (b != NULL)
		exec_start(b);
}

static void
exec_imsg_run_cancel(struct imsgev *iev, struct imsg *imsg)
{
	run_cancel(imsg->hdr.id);
}

/* A client slow to read holds its run's output; reading again, frees it. */
static void
exec_imsg_run_pause(struct imsgev *iev, struct imsg *imsg)
{
	run_pause(imsg->hdr.id, imsg->hdr.type == IMSG_RUN_PAUSE);
}

static struct run *
run_find(uint32_t reqid)
{
	struct run	*r;

	TAILQ_FOREACH(r, &runs, entry)
		if (r->reqid == reqid)
			return (r);
	return (NULL);
}

/* Kill the run: its end is reported as cancelled. */
static void
run_cancel(uint32_t reqid)
{
	struct run	*r;

	if ((r = run_find(reqid)) == NULL) {
		early_cancel[nearly_cancel++ % RUN_EARLY_CANCEL] = reqid;
		return;
	}
	if (r->exited || r->sb.pid <= 0)
		return;
	r->cancelled = 1;
	log_debug("run %u: cancelled, its client went away", r->runid);
	sbx_kill(&r->sb);
}

/* A run order just started: was its client gone already? */
static void
run_cancel_pending(uint32_t reqid)
{
	size_t	 i;

	for (i = 0; i < RUN_EARLY_CANCEL; i++)
		if (early_cancel[i] == reqid && reqid != 0) {
			early_cancel[i] = 0;
			if (run_find(reqid) != NULL)
				run_cancel(reqid);
		}
}

/* Stop or start reading the run's pipes: the CLI blocks on a full one. */
static void
run_pause(uint32_t reqid, int pause)
{
	struct run	*r;
	int		 i;

	if ((r = run_find(reqid)) == NULL || r->paused == pause)
		return;
	r->paused = pause;
	for (i = 0; i < 2; i++) {
		if (r->out[i].fd == -1)
			continue;
		if (pause)
			event_del(&r->out[i].ev);
		else
			event_add(&r->out[i].ev, NULL);
	}
}

static void
exec_closed(struct imsgev *iev)
{
	/*
	 * At shutdown a peer may go first (the relay, the lightest, often
	 * does): the runs die all the same, and their ends are not told to
	 * the vault, which would record a run the stop cut off as failed;
	 * unrecorded, it reads interrupted, as SPEC 6 says.
	 */
	exec_stopping = 1;
	exec_kill_runs();
	proc_peer_lost(iev);
}

/* ------------------------------------------------------------------ */
/* Starting a run.                                                     */

/*
 * A run order: check every field (a malformed order means the vault is
 * not itself, and is fatal), then find its redaction set; the run goes
 * on in exec_go() once the set is there, at once when the cache has it,
 * or when the cache's thread compiled it (redact_cache.c: never on this
 * loop, which serves every other org's runs meanwhile).
 */
static void
exec_start(struct blob *b)
{
	struct run_start	 rs;
	struct run_order	 o;
	struct run		*r;
	const char		*why;
	size_t			 n;

	int64_t			 t_order = mono_ns();

	memcpy(&rs, b->head, sizeof(rs));
	if ((r = calloc(1, sizeof(*r))) == NULL)
		fatal("%s: calloc", __func__);
	if (run_network(&rs, r) == -1)
		fatalx("%s: bad run order (network)", __func__);
	/*
	 * PATH, HOME, TMPDIR, XDG_CONFIG_HOME, XDG_CACHE_HOME, LANG, LC_ALL,
	 * the CA bundle's variables, a proxied run's proxy variables.
	 */
	r->nca = exec_ca_made() ? sizeof(ca_vars) / sizeof(ca_vars[0]) : 0;
	n = RUN_ENV_OWN + r->nca + (r->network == RUN_NET_PROXY ?
	    RUN_ENV_PROXY : 0);
	r->nown = n;
	if (run_order_unpack(b->data, b->datalen, n, &o, &why) == -1)
		fatalx("%s: bad run order (%s)", __func__, why);
	if (rs.timeout_s < 1 || rs.timeout_s > RUN_TIMEOUT_MAX)
		fatalx("%s: bad run order (timeout)", __func__);
	run_egress_plan(r, &o);
	free(o.hosts);
	r->bin = o.bin;
	r->argv = (char **)o.argv;
	r->env = o.env;

	r->blob = b;
	r->reqid = b->id;
	r->runid = rs.runid;
	r->worker = b->peer - PROC_WORKER(0);
	r->t_order = t_order;
	r->sb.pid = r->sb.pgid = -1;
	r->sb.slot = -1;
	r->out[0].fd = r->out[1].fd = -1;
	r->timeout_s = rs.timeout_s;
	TAILQ_INSERT_TAIL(&waiting, r, entry);
	switch (rcache_get(rs.tool_id, o.packed_mask, o.packed_masklen,
	    exec_set_ready, r, &r->rset)) {
	case 0:
		exec_set_ready(r, r->rset);
		break;
	case 1:
		break;
	default:
		fatalx("%s: bad run order (secrets)", __func__);
	}
}

/*
 * How the run reaches the network (SPEC 6a): the vault's choice, where
 * the operator's "run network no" always wins, and a vault that says
 * "network" without knowing of the proxy (1) means the host's under "run
 * network host".  -1 on a value that is none.
 */
static int
run_network(const struct run_start *rs, struct run *r)
{
	if (rs->network > RUN_NET_HOST)
		return (-1);
	r->network = rs->network;
	if (exec_conf.run_network == RUN_NET_NONE) {
		r->network = RUN_NET_NONE;
		r->offline = "the server's runs have none (run network no)";
	} else if (r->network == RUN_NET_NONE)
		r->offline = "the tool's CLI profile says \"network\": false";
	else if (exec_conf.run_network == RUN_NET_HOST)
		r->network = RUN_NET_HOST;
	/* No namespaces (logged at start): the host's, and no proxy. */
	if (!sbx_mounts())
		r->network = RUN_NET_HOST;
	return (0);
}

/*
 * A proxied run's /etc/hosts lines (each egress host by name at
 * 127.0.0.1: not a literal, not localhost) and its listeners' ports:
 * the proxy's first, then each egress port once.
 */
static void
run_egress_plan(struct run *r, const struct run_order *o)
{
	struct in_addr	 a4;
	char		 name[HOST_LEN_MAX], *lines = NULL;
	size_t		 i, k, len = 0, cap = 0;
	uint16_t	 port;

	if (r->network != RUN_NET_PROXY)
		return;
	r->ports[r->nports++] = EGRESS_PROXY_PORT;
	for (i = 0; i < o->nhosts; i++) {
		if (!run_host_ok(o->hosts[i], name, sizeof(name), &port))
			fatalx("%s: bad run order (hosts)", __func__);
		for (k = 0; k < r->nports && r->ports[k] != port; k++)
			;
		if (k == r->nports && r->nports < SBX_PORTS_MAX)
			r->ports[r->nports++] = port;
		if (o->hosts[i][0] == '[' || inet_pton(AF_INET, name,
		    &a4) == 1 || strcasecmp(name, "localhost") == 0 ||
		    run_hosts_has(lines, len, name))
			continue;
		if (len + strlen(name) + 12 > cap) {
			cap = (cap + strlen(name) + 12) * 2;
			if ((lines = realloc(lines, cap)) == NULL)
				fatal("%s: realloc", __func__);
		}
		len += snprintf(lines + len, cap - len, "127.0.0.1\t%s\n",
		    name);
	}
	if (lines == NULL && (lines = strdup("")) == NULL)
		fatal("%s: strdup", __func__);
	r->etc_hosts = lines;
}

/* Whether the /etc/hosts lines so far name host (another port's). */
static int
run_hosts_has(const char *lines, size_t len, const char *host)
{
	const char	*p, *end = lines + len;
	size_t		 n = strlen(host);

	for (p = lines; p != NULL && p < end; ) {
		p += sizeof("127.0.0.1\t") - 1;
		if ((size_t)(end - p) > n && strncasecmp(p, host, n) == 0 &&
		    p[n] == '\n')
			return (1);
		if ((p = memchr(p, '\n', end - p)) != NULL)
			p++;
	}
	return (0);
}

/* The run's set is ready (NULL: it could not be made): start it. */
static void
exec_set_ready(void *arg, struct rcache *set)
{
	struct run	*r = arg;
	struct run_exit	 rx;

	TAILQ_REMOVE(&waiting, r, entry);
	r->rset = set;
	if (set == NULL) {
		memset(&rx, 0, sizeof(rx));
		rx.failed = 1;
		run_report(r, &rx);
		exec_args_free(r);
		run_free(r);
		return;
	}
	exec_go(r);
	run_cancel_pending(r->reqid);
}

static void
exec_go(struct run *r)
{
	struct run_exit	 rx;
	char		 path[PATH_MAX];
	size_t		 i;

	memset(&rx, 0, sizeof(rx));
	rx.runid = r->runid;
	if (exec_resolve(r->bin, path, sizeof(path)) == -1) {
		/* Nothing started: the vault answers 422, no record. */
		rx.notfound = 1;
		run_report(r, &rx);
		exec_args_free(r);
		run_free(r);
		return;
	}
	if (sbx_alloc(&r->sb, r->network) == -1 || run_mkdir(r) == -1) {
		rx.failed = 1;
		run_report(r, &rx);
		exec_args_free(r);
		run_free(r);
		return;
	}
	if (asprintf(&r->env[0], "PATH=%s", exec_conf.run_path) == -1 ||
	    asprintf(&r->env[1], "HOME=%s", r->dir) == -1 ||
	    asprintf(&r->env[2], "TMPDIR=%s/tmp", r->dir) == -1 ||
	    asprintf(&r->env[3], "XDG_CONFIG_HOME=%s/.config", r->dir) == -1 ||
	    asprintf(&r->env[4], "XDG_CACHE_HOME=%s/.cache", r->dir) == -1 ||
	    (r->env[5] = strdup("LANG=C.UTF-8")) == NULL ||
	    (r->env[6] = strdup("LC_ALL=C.UTF-8")) == NULL)
		fatal("%s: asprintf", __func__);
	if (run_env_net(r, RUN_ENV_OWN) != (int)r->nown)
		fatalx("%s: the run's own variables", __func__);
	TAILQ_INSERT_TAIL(&runs, r, entry);
	nruns++;
	exec_metrics_running(1);
	run_spawn(r, path, r->argv, r->env, r->network);
	for (i = 0; i < r->nown; i++)
		free(r->env[i]);
	exec_args_free(r);
}

/*
 * From env[k]: the CA bundle's variables, a proxied run's proxy
 * (NO_PROXY empty: every name goes through it).  The next k.
 */
static int
run_env_net(struct run *r, size_t k)
{
	size_t	 i;

	for (i = 0; i < r->nca; i++)
		if (asprintf(&r->env[k++], "%s=%s/%s", ca_vars[i],
		    exec_conf.run_dir, RUN_CA_BUNDLE) == -1)
			fatal("%s: asprintf", __func__);
	if (r->network != RUN_NET_PROXY)
		return ((int)k);
	for (i = 0; i < sizeof(proxy_vars) / sizeof(proxy_vars[0]); i++)
		if (asprintf(&r->env[k++], "%s=%s", proxy_vars[i],
		    RUN_PROXY_URL) == -1)
			fatal("%s: asprintf", __func__);
	for (i = 0; i < sizeof(noproxy_vars) / sizeof(noproxy_vars[0]); i++)
		if (asprintf(&r->env[k++], "%s=", noproxy_vars[i]) == -1)
			fatal("%s: asprintf", __func__);
	return ((int)k);
}

/* argv and env point into the blob, which held secrets: zeroed. */
static void
exec_args_free(struct run *r)
{
	free(r->argv);
	free(r->env);
	r->argv = r->env = NULL;
	r->bin = NULL;
	blob_free(r->blob);
	r->blob = NULL;
}

/* The first executable regular file named bin on the run path. */
static int
exec_resolve(const char *bin, char *path, size_t len)
{
	return (conf_run_resolve(exec_conf.run_path, bin, path, len));
}

/*
 * A fresh directory for HOME and TMPDIR, 0700 and the run user's: a
 * tmpfs the run's init mounts (it exists only inside the run), or one
 * made here when runs have no mount namespace.
 */
static int
run_mkdir(struct run *r)
{
	int	 n;

	if (sbx_tmpfs())
		n = snprintf(r->dir, sizeof(r->dir), "%s/run.%u",
		    exec_conf.run_dir, (unsigned int)r->sb.uid);
	else
		n = snprintf(r->dir, sizeof(r->dir), "%s/run.XXXXXX",
		    exec_conf.run_dir);
	if (n < 0 || (size_t)n >= sizeof(r->dir)) {
		log_warnx("%s: run directory path too long", __func__);
		r->dir[0] = '\0';
		return (-1);
	}
	if (sbx_tmpfs())
		return (0);
	if (mkdtemp(r->dir) == NULL) {
		log_warn("%s: mkdtemp %s", __func__, r->dir);
		r->dir[0] = '\0';
		return (-1);
	}
	r->made_dir = 1;
	if (r->sb.change_uid && chown(r->dir, r->sb.uid, r->sb.gid) == -1) {
		log_warn("%s: chown %s", __func__, r->dir);
		return (-1);
	}
	return (0);
}

static void
run_spawn(struct run *r, const char *path, char **argv, char **env,
    int network)
{
	struct sbx_spec	 sp;
	struct run_exit	 rx;
	struct timeval	 tv;
	int		 rd[2], i;

	memset(&sp, 0, sizeof(sp));
	sp.path = path;
	sp.argv = argv;
	sp.env = env;
	sp.dir = r->dir;
	sp.network = network;
	sp.etc_hosts = r->etc_hosts;
	sp.ports = r->ports;
	sp.nports = r->nports;
	clock_gettime(CLOCK_MONOTONIC, &r->start);
	if (sbx_spawn(&exec_conf, &sp, &r->sb, rd) == -1)
		goto fail;
	r->t_spawned = mono_ns();
	if (r->sb.egress != -1) {
		event_set(&r->ev_egress, r->sb.egress, EV_READ | EV_PERSIST,
		    run_egress_read, r);
		event_add(&r->ev_egress, NULL);
		r->egress_wait = 1;
	}
	r->out[0].fd = rd[0];
	r->out[1].fd = rd[1];
	for (i = 0; i < 2; i++) {
		r->out[i].run = r;
		r->out[i].stream = i + 1;
		if (fcntl(r->out[i].fd, F_SETFL, O_NONBLOCK) == -1)
			fatal("%s: O_NONBLOCK", __func__);
		if ((r->out[i].rd = redact_new(rcache_set(r->rset),
		    RUN_OUTPUT_MAX)) == NULL)
			fatal("%s: redact_new", __func__);
		event_set(&r->out[i].ev, r->out[i].fd, EV_READ | EV_PERSIST,
		    run_read, &r->out[i]);
		event_add(&r->out[i].ev, NULL);
	}
	evtimer_set(&r->ev_timeout, run_timeout, r);
	tv.tv_sec = r->timeout_s;
	tv.tv_usec = 0;
	evtimer_add(&r->ev_timeout, &tv);
	evtimer_set(&r->ev_drain, run_drain, r);
	log_debug("run %u: pid %d uid %u %s", r->runid, r->sb.pid,
	    (unsigned int)r->sb.uid, path);
	return;
 fail:
	r->sb.pid = -1;
	TAILQ_REMOVE(&runs, r, entry);
	nruns--;
	exec_refill_soon();
	exec_metrics_running(-1);
	memset(&rx, 0, sizeof(rx));
	rx.runid = r->runid;
	rx.failed = 1;
	run_report(r, &rx);
	run_free(r);
}

/*
 * A proxied run's listeners, from its CLI before its execve: each to the
 * relay with its port and kind.  The order socket closes after one
 * message (or at EOF: the CLI failed before, and said why on stderr).
 */
static void
run_egress_read(int fd, short event, void *arg)
{
	struct run		*r = arg;
	struct egress_listen	 el;
	int			 fds[SBX_PORTS_MAX], n, i;
	uint16_t		 ports[SBX_PORTS_MAX];

	n = sbx_egress_recv(fd, fds, ports, SBX_PORTS_MAX);
	if (n == -2 && event != 0)
		return;			/* not yet */
	if (n == -1)
		log_warnx("run %u: a bad listener message from its sandbox",
		    r->runid);
	for (i = 0; i < n; i++) {
		memset(&el, 0, sizeof(el));
		el.runid = r->runid;
		el.port = ports[i];
		el.kind = ports[i] == EGRESS_PROXY_PORT && i == 0 ?
		    EGRESS_PROXY : EGRESS_TRANSPARENT;
		if (imsgev_compose(&iev_relay, IMSG_EGRESS_LISTEN, 0, fds[i],
		    &el, sizeof(el)) == -1)
			fatal("%s: compose", __func__);
		r->egress_sent = 1;
	}
	if (n > 0)
		log_debug("run %u: %d egress listeners to the relay", r->runid,
		    n);
	event_del(&r->ev_egress);
	r->egress_wait = 0;
	close(r->sb.egress);
	r->sb.egress = -1;
}

/*
 * The run ended: its listeners, if they had not come yet, go with its
 * socket; the relay closes those it has, and the run's connections.
 */
static void
run_egress_end(struct run *r)
{
	struct egress_end	 ee;

	if (r->egress_wait)
		run_egress_read(r->sb.egress, 0, r);
	if (!r->egress_sent)
		return;
	memset(&ee, 0, sizeof(ee));
	ee.runid = r->runid;
	if (imsgev_compose(&iev_relay, IMSG_EGRESS_END, 0, -1, &ee,
	    sizeof(ee)) == -1)
		fatal("%s: compose", __func__);
	r->egress_sent = 0;
}

/* ------------------------------------------------------------------ */
/* Output, timeout, exit.                                              */

/* Redacted bytes: to the frontend in chunks of one imsg each. */
static void
run_emit(void *arg, const void *buf, size_t len)
{
	struct run_out	*o = arg;
	struct iovec	 iov[2];
	const char	*p = buf;
	size_t		 n;

	while (len > 0) {
		n = len > IMSG_DATA_MAX - 1 ? IMSG_DATA_MAX - 1 : len;
		iov[0].iov_base = &o->stream;
		iov[0].iov_len = 1;
		iov[1].iov_base = (void *)p;
		iov[1].iov_len = n;
		if (imsgev_composev(&iev_frontend, IMSG_RUN_OUTPUT,
		    o->run->reqid, -1, iov, 2) == -1)
			fatal("%s: compose", __func__);
		p += n;
		len -= n;
	}
}

/* Read what the pipe has (at most max reads); 1 at EOF (then closed). */
static int
run_read_some(struct run_out *o, int max)
{
	ssize_t		 n;
	int		 i, eof = 0;

	for (i = 0; i < max; i++) {
		n = read(o->fd, readbuf, sizeof(readbuf));
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			log_warn("run %u: read", o->run->runid);
			n = 0;
		}
		if (n == 0) {
			run_out_close(o);
			eof = 1;
			break;
		}
		if (redact_write(o->rd, readbuf, n, run_emit, o) == -1)
			fatal("%s: redact_write", __func__);
	}
	explicit_bzero(readbuf, sizeof(readbuf));
	return (eof);
}

static void
run_read(int fd, short event, void *arg)
{
	struct run_out	*o = arg;

	/* A few reads per wakeup: the other stream gets its turn too. */
	if (run_read_some(o, 4))
		run_maybe_done(o->run);
}

static void
run_out_close(struct run_out *o)
{
	if (o->fd == -1)
		return;
	event_del(&o->ev);
	close(o->fd);
	o->fd = -1;
}

static void
run_timeout(int fd, short event, void *arg)
{
	struct run	*r = arg;

	if (r->exited)
		return;
	r->timed_out = 1;
	log_debug("run %u: timed out after %us", r->runid, r->timeout_s);
	sbx_kill(&r->sb);
}

/* The group was killed, yet a pipe stays open: take what is there. */
static void
run_drain(int fd, short event, void *arg)
{
	struct run	*r = arg;
	int		 i;

	for (i = 0; i < 2; i++) {
		if (r->out[i].fd == -1)
			continue;
		run_read_some(&r->out[i], 64);
		run_out_close(&r->out[i]);
	}
	run_maybe_done(r);
}

static void
exec_sigchld(int sig, short event, void *arg)
{
	struct run	*r;
	pid_t		 pid;
	int		 status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		TAILQ_FOREACH(r, &runs, entry)
			if (r->sb.pid == pid && !r->exited)
				break;
		if (r == NULL) {
			/* An ended run's init, one made in advance, */
			sbx_orphan(pid);
			continue;	/* or an orphan we adopted */
		}
		/* Nothing the run started outlives it; the uid is free. */
		run_exited(r, sbx_reaped(&r->sb, status));
		run_maybe_done(r);
	}
	if (pid == -1 && errno != ECHILD)
		log_warn("waitpid");
	/* A uid came free, or a pooled init died. */
	exec_refill_soon();
}

/* The run's CLI ended with status (a wait status). */
static void
run_exited(struct run *r, int status)
{
	struct timeval	 tv;
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	r->duration_ms = (now.tv_sec - r->start.tv_sec) * 1000 +
	    (now.tv_nsec - r->start.tv_nsec) / 1000000;
	r->exited = 1;
	r->status = status;
	evtimer_del(&r->ev_timeout);
	if (r->out[0].fd != -1 || r->out[1].fd != -1) {
		tv.tv_sec = 0;
		tv.tv_usec = RUN_DRAIN_MS * 1000;
		evtimer_add(&r->ev_drain, &tv);
	}
}

static void
run_maybe_done(struct run *r)
{
	int	 status;

	if (r->out[0].fd != -1 || r->out[1].fd != -1)
		return;
	/* The init says the CLI ended: no need to wait for its teardown. */
	if (!r->exited && sbx_ended(&r->sb, &status))
		run_exited(r, status);
	if (r->exited)
		run_done(r);
}

static void
run_done(struct run *r)
{
	struct run_exit	 rx;
	struct run_result rr;
	char		 note[128];
	int		 n = 0, i, truncated = 0;
	size_t		 redacted = 0;
	int64_t		 t_done = mono_ns();

	evtimer_del(&r->ev_drain);
	if (r->timed_out) {
		n = snprintf(note, sizeof(note), "\n[treg] killed: exceeded "
		    "%us timeout\n", r->timeout_s);
		if (redact_write(r->out[1].rd, note, n, run_emit,
		    &r->out[1]) == -1)
			fatal("%s: redact_write", __func__);
	} else if (r->offline != NULL && !r->cancelled &&
	    !(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0)) {
		/* What a CLI prints then looks like the upstream's outage. */
		n = snprintf(note, sizeof(note), "\n[treg] this run has no "
		    "network: %s\n", r->offline);
		if (redact_write(r->out[1].rd, note, n, run_emit,
		    &r->out[1]) == -1)
			fatal("%s: redact_write", __func__);
	}
	for (i = 0; i < 2; i++) {
		if (redact_finish(r->out[i].rd, run_emit, &r->out[i]) == -1)
			fatal("%s: redact_finish", __func__);
		redacted += redact_count(r->out[i].rd);
		if (redact_truncated(r->out[i].rd))
			truncated |= i == 0 ? RUN_TRUNC_STDOUT :
			    RUN_TRUNC_STDERR;
	}
	/* A capped stderr still says why the run ended, or failed. */
	if (n > 0 && redact_truncated(r->out[1].rd))
		run_emit(&r->out[1], note + 1, n - 1);
	memset(&rx, 0, sizeof(rx));
	rx.runid = r->runid;
	if (WIFEXITED(r->status))
		rx.exit_code = WEXITSTATUS(r->status);
	else if (WIFSIGNALED(r->status))
		rx.exit_code = -WTERMSIG(r->status);
	else
		rx.exit_code = -1;
	rx.timed_out = r->timed_out;
	rx.cancelled = r->cancelled;
	rx.duration_ms = r->duration_ms;
	rx.redacted = redacted > UINT32_MAX ? UINT32_MAX : redacted;
	rx.truncated = truncated;
	/*
	 * The vault first (the slot, the end record), then the answer
	 * straight to the frontend: a client that has its answer finds
	 * its run ended in the vault (run_exits_read()).
	 */
	run_report(r, &rx);
	exec_flush(&iev_vaults[r->worker]);
	memset(&rr, 0, sizeof(rr));
	rr.exit_code = rx.exit_code;
	rr.timed_out = rx.timed_out != 0;
	rr.duration_ms = rx.duration_ms;
	rr.redacted = rx.redacted;
	rr.outcome = run_outcome_of(&rx);
	rr.truncated = truncated;
	if (imsgev_compose(&iev_frontend, IMSG_RUN_EOF, r->reqid, -1, &rr,
	    sizeof(rr)) == -1)
		fatal("%s: compose", __func__);
	/* The answer leaves now; the sandbox goes afterwards. */
	exec_flush(&iev_frontend);
	/* The pool's next sandbox, made once this answer is out. */
	exec_refill_soon();
	run_stages(r, t_done);
	log_debug("run %u: exit %d%s, %u ms, %zu redacted", r->runid,
	    rx.exit_code, r->timed_out ? " (timed out)" : "", r->duration_ms,
	    redacted);

	TAILQ_REMOVE(&runs, r, entry);
	nruns--;
	exec_metrics_running(-1);
	run_free(r);
}

/*
 * Where the run's time went inside exec, in µs (bench/run.sh -v reads
 * it): order in to handed to the sandbox, to the CLI's execve (the CLI
 * stamps it), to its end (its init stamps it), to the answer composed,
 * to the answer written.  Its sandbox's
 * teardown follows after the answer (sbx_orphan logs it).
 */
static void
run_stages(const struct run *r, int64_t t_done)
{
	int64_t	 t_out = mono_ns();

	if (log_getverbose() < 1)
		return;
	if (r->sb.st.execve == 0 || r->sb.st.end == 0)
		log_debug("run %u: stages us: setup %lld, output %lld, "
		    "answer %lld", r->runid,
		    (long long)(r->t_spawned - r->t_order) / 1000,
		    (long long)(t_done - r->t_spawned) / 1000,
		    (long long)(t_out - t_done) / 1000);
	else
		log_debug("run %u: stages us: setup %lld, spawn-to-execve "
		    "%lld, child %lld, output %lld, answer %lld", r->runid,
		    (long long)(r->t_spawned - r->t_order) / 1000,
		    (long long)(r->sb.st.execve - r->t_spawned) / 1000,
		    (long long)(r->sb.st.end - r->sb.st.execve) / 1000,
		    (long long)(t_done - r->sb.st.end) / 1000,
		    (long long)(t_out - t_done) / 1000);
}

/* The pool is refilled off the run's path: from the loop, one a turn. */
static void
exec_refill_soon(void)
{
	struct timeval	 tv = { 0, 0 };

	if (!evtimer_pending(&ev_refill, NULL))
		evtimer_add(&ev_refill, &tv);
}

static void
exec_refill(int fd, short event, void *arg)
{
	int64_t	 t0 = mono_ns();
	int	 more;

	/*
	 * Proxied sandboxes bind the CA bundle: none is made in advance
	 * before the relay's run CA is in it (it comes at the start).
	 */
	if (exec_conf.run_network == RUN_NET_PROXY && !exec_ca_run())
		return;
	more = sbx_refill(&exec_conf, nruns);
	/* bench/run.sh -v: how long exec's loop was busy making one. */
	if (log_getverbose() >= 1)
		log_debug("pool: refill turn took %lld us",
		    (long long)(mono_ns() - t0) / 1000);
	if (more)
		exec_refill_soon();
}

/* The zygote made the pool's next init: refill on if still short. */
static void
exec_zygote(int fd, short event, void *arg)
{
	if (sbx_zygote_reply())
		exec_refill_soon();
}

static void
exec_flush(struct imsgev *iev)
{
	if (imsgbuf_write(&iev->ibuf) == -1 && errno != EAGAIN)
		log_warn("write to %s", iev->name);
	imsgev_update(iev);
}

static void
run_report(const struct run *r, struct run_exit *rx)
{
	if (exec_stopping) {
		log_debug("run %u: cut off by the stop, its end not recorded",
		    r->runid);
		return;
	}
	rx->runid = r->runid;
	if (imsgev_compose(&iev_vaults[r->worker], IMSG_RUN_EXIT, r->reqid,
	    -1, rx, sizeof(*rx)) == -1)
		fatal("%s: compose", __func__);
}

static void
run_free(struct run *r)
{
	int	 i;

	for (i = 0; i < 2; i++) {
		run_out_close(&r->out[i]);
		redact_free(r->out[i].rd);
	}
	run_egress_end(r);
	free(r->etc_hosts);
	if (r->made_dir)
		rm_dir(r->dir);
	sbx_release(&r->sb);
	rcache_put(r->rset);
	free(r);
}

/* ------------------------------------------------------------------ */
/* Removing a run directory: never following a link the run made.     */

/* Remove name (a directory when isdir) under dfd and all below it. */
static void
rm_tree_at(int dfd, const char *name, int isdir, int depth)
{
	DIR		*d;
	struct dirent	*de;
	int		 fd;

	if (!isdir) {
		if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
			return;
		if (errno != EISDIR)
			goto fail;
	}
	if (depth >= RUN_RM_DEPTH) {
		errno = ELOOP;
		goto fail;
	}
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		/* A link or a file after all: the name itself goes. */
		if (errno == ENOTDIR || errno == ELOOP)
			rm_tree_at(dfd, name, 0, depth);
		else if (errno != ENOENT)
			goto fail;
		return;
	}
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		goto fail;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		rm_tree_at(dirfd(d), de->d_name, de->d_type == DT_DIR,
		    depth + 1);
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) == 0)
		return;
 fail:
	log_warn("cannot remove %s from a run directory", name);
}

static void
rm_dir(const char *path)
{
	const char	*slash = strrchr(path, '/');
	char		 parent[PATH_MAX];
	int		 dfd;

	if (slash == NULL || (size_t)(slash - path) >= sizeof(parent))
		return;
	memcpy(parent, path, slash - path);
	parent[slash - path] = '\0';
	if ((dfd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		log_warn("open %s", parent);
		return;
	}
	rm_tree_at(dfd, slash + 1, 1, 0);
	close(dfd);
}
