/*
 * The vault (_tregvault, chroot into the state directory).
 *
 * It owns every row (through store.h), the master key (libsodium) and every
 * authorisation decision.  It may read and write the state directory and
 * talk to its peers over imsg; it has no network, starts no program and
 * never dumps core.  It unseals a secret only to hand it to exec for a
 * server run or to the frontend for a grant that passed every check.
 *
 * This file: the process, the request dispatch, authentication and the
 * helpers the route handlers in vault_*.c share.
 *
 * There are "vault workers" of it (prefork): each its own process, its
 * own database connection, its own channels to the frontend (which gives
 * a request to the worker with the fewest outstanding) and to exec (a
 * run's end comes back to the worker that started it, which holds its
 * record).  What is the host's and not a worker's is shared: the rows
 * (store_version() moves with any connection's write, so each worker's
 * listing cache stays right), the run slots (vault_slots.c) and the
 * keyring (a worker that changes it has the parent tell the others).
 */

#include <sys/types.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <event.h>
#include <sched.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "sandbox.h"
#include "vault_keyring.h"
#include "vault.h"

static struct imsgev	 iev_parent, iev_frontend, iev_exec, iev_relay;
static struct blob_list	 vault_blobs = TAILQ_HEAD_INITIALIZER(vault_blobs);
static const struct vault_route *route_index[ROUTE_MAX];
static int		 conf_ready;
static struct event	 ev_metrics;

/* A tregctl connection, handed over by the parent (parent.c). */
struct ctl_conn {
	TAILQ_ENTRY(ctl_conn)	 entry;
	uint32_t		 id;
	struct imsgev		 iev;
};
static TAILQ_HEAD(, ctl_conn)	 ctl_conns = TAILQ_HEAD_INITIALIZER(ctl_conns);
static uint32_t			 ctl_next_id = 1;
static int			 ctl_nconns;
#define CTL_CONNS_MAX		 32
static int		 have_worker;
static int		 worker_index;
static uint64_t		 conf_generation;	/* bumped by each reload */

static void	vault_dispatch(struct imsgev *, struct imsg *);
static void	vault_imsg_worker(struct imsgev *, struct imsg *);
static void	vault_imsg_reload(struct imsgev *, struct imsg *);
static void	vault_imsg_reload_end(struct imsgev *, struct imsg *);
static void	vault_imsg_procinfo(struct imsgev *, struct imsg *);
static void	vault_imsg_keyring_reload(struct imsgev *, struct imsg *);
static void	vault_imsg_ctl_reload_done(struct imsgev *, struct imsg *);
static void	vault_imsg_ctl_conn(struct imsgev *, struct imsg *);
static void	vault_imsg_api_request(struct imsgev *, struct imsg *);
static void	vault_imsg_call_request(struct imsgev *, struct imsg *);
static void	vault_imsg_request_data(struct imsgev *, struct imsg *);
static void	vault_imsg_ends_sync(struct imsgev *, struct imsg *);
static void	vault_imsg_run_exit(struct imsgev *, struct imsg *);
static void	vault_imsg_call_done(struct imsgev *, struct imsg *);
static void	vault_imsg_fetch_done(struct imsgev *, struct imsg *);
static void	vault_imsg_egress_call(struct imsgev *, struct imsg *);
static void	vault_closed(struct imsgev *);
static void	vault_metrics_tick(int, short, void *);
static void	vault_ends_sync(struct imsg *);
static void	ctl_conn(int);
static void	ctl_closed(struct imsgev *);
static void	ctl_reply(struct ctl_conn *, uint32_t, int, json_t *);
static void	ctl_dispatch(struct imsgev *, struct imsg *);
static void	ctl_reload_done(uint32_t, const struct ctl_reload_done *);
static void	vault_request(struct blob *);
static void	vault_request_again(void *, int64_t, int, const char *);
static const struct vault_route *request_unpack(struct blob *,
		    struct api_request *, struct vault_req *);
static int	request_body(const struct api_request *, struct blob *,
		    struct vault_req *, struct vault_resp *);
static int	request_auth(const struct api_request *,
		    const struct vault_route *, struct vault_req *,
		    struct vault_resp *, struct auth *);
static void	request_answer(const struct vault_route *, struct vault_req *,
		    struct vault_resp *);
static void	vault_open_db(const char *);
static void	vault_db_reach(struct sandbox_paths *, int);
static void	vault_index_routes(void);
static void	vault_sig(int, short, void *);
static int	vault_init_lock(void);

#define FROM_PARENT	IMSG_FROM(PROC_PARENT)
#define FROM_FRONTEND	IMSG_FROM(PROC_FRONTEND)
#define FROM_EXEC	IMSG_FROM(PROC_EXEC)
#define FROM_RELAY	IMSG_FROM(PROC_RELAY)

/*
 * What else the parent sends before IMSG_CONF_END (child.c takes the
 * settings and the channels).
 */
static const struct imsg_handler vault_start_imsgs[] = {
	{ IMSG_CONF_WORKER, FROM_PARENT, IMSG_LEN_ANY,	vault_imsg_worker },
};

/* Every message a vault worker takes once it serves, and from whom. */
static const struct imsg_handler vault_imsgs[] = {
	/* A reload: the new settings apply to new requests. */
	{ IMSG_CONF,	FROM_PARENT, sizeof(struct tregd_conf),	vault_imsg_reload },
	{ IMSG_CONF_END, FROM_PARENT, 0,		vault_imsg_reload_end },
	{ IMSG_LOG_VERBOSE, FROM_PARENT, sizeof(int),	proc_log_verbose },
	{ IMSG_PROCINFO, FROM_PARENT, sizeof(vault_procs), vault_imsg_procinfo },
	{ IMSG_KEYRING_RELOAD, FROM_PARENT, 0,		vault_imsg_keyring_reload },
	{ IMSG_CTL_RELOAD_DONE, FROM_PARENT, sizeof(struct ctl_reload_done),
	    vault_imsg_ctl_reload_done },
	/* A tregctl the parent accepted and checked (parent.c). */
	{ IMSG_CTL_CONN, FROM_PARENT, 0,		vault_imsg_ctl_conn },
	/* The frontend: API requests and /call decisions (blobs). */
	{ IMSG_API_REQUEST, FROM_FRONTEND, IMSG_LEN_ANY, vault_imsg_api_request },
	{ IMSG_CALL_REQUEST, FROM_FRONTEND, IMSG_LEN_ANY, vault_imsg_call_request },
	{ IMSG_DATA,	FROM_FRONTEND | FROM_RELAY, IMSG_LEN_ANY,
	    vault_imsg_request_data },
	{ IMSG_ENDS_SYNC, FROM_FRONTEND, sizeof(uint32_t), vault_imsg_ends_sync },
	/* The ends of what the vault started. */
	{ IMSG_RUN_EXIT, FROM_EXEC, sizeof(struct run_exit), vault_imsg_run_exit },
	{ IMSG_CALL_DONE, FROM_RELAY, sizeof(struct call_done),
	    vault_imsg_call_done },
	{ IMSG_FETCH_DONE, FROM_RELAY, IMSG_LEN_ANY,	vault_imsg_fetch_done },
	/* A keyless run's request, before it goes upstream (blob). */
	{ IMSG_EGRESS_CALL, FROM_RELAY, IMSG_LEN_ANY, vault_imsg_egress_call },
};

static struct proc_peer	 vault_peers[] = {
	{ PROC_FRONTEND,	&iev_frontend,	vault_dispatch, 0 },
	{ PROC_EXEC,		&iev_exec,	vault_dispatch, 0 },
	{ PROC_RELAY,		&iev_relay,	vault_dispatch, 0 },
};
#define NPEERS	(sizeof(vault_peers) / sizeof(vault_peers[0]))

static const struct proc_child vault_child = {
	PROC_VAULT, &vault_conf, vault_peers, NPEERS, NULL, NULL,
	vault_dispatch, vault_closed
};

__dead void
vault_main(int debug, int verbose)
{
	struct sandbox_paths	 paths;
	struct passwd		*pw = NULL;
	char			 dbpath[PATH_MAX];
	const char		*root;
	char			 err[768];
	int			 initfd;

	vault_parent = &iev_parent;
	vault_frontend = &iev_frontend;
	vault_exec = &iev_exec;
	vault_relay = &iev_relay;
	proc_child_init(&vault_child, &iev_parent, debug, verbose,
	    IMSG_HANDLERS(vault_start_imsgs));
	if (!have_worker)
		fatalx("vault: incomplete configuration");

	if (sodium_init() == -1)
		fatalx("sodium_init");
	json_zero_alloc();
	if (geteuid() == 0)
		pw = proc_getpw(TREGD_VAULT_USER);
	if (mkdir(vault_conf.state, 0700) == -1 && errno != EEXIST)
		fatal("mkdir %s", vault_conf.state);
	if (pw != NULL && chown(vault_conf.state, pw->pw_uid,
	    pw->pw_gid) == -1)
		fatal("chown %s", vault_conf.state);
	if (chmod(vault_conf.state, 0700) == -1)
		fatal("chmod %s", vault_conf.state);

	/* After the chroot the state directory is "/". */
	root = pw != NULL ? "" : vault_conf.state;
	vault_root = root;
	if (snprintf(dbpath, sizeof(dbpath), "%s/%s", root, TREGD_DB) >=
	    (int)sizeof(dbpath))
		fatalx("state directory path too long");

	/* One worker at a time makes the key, the schema, a rotation's end. */
	initfd = vault_init_lock();
	memset(&paths, 0, sizeof(paths));
	/* PostgreSQL: now, while the network is there (see store_pg.c). */
	if (vault_conf.db_engine == DB_POSTGRESQL) {
		vault_open_db(NULL);
		vault_db_reach(&paths, pw != NULL);
	}

	sandbox_nodump();
	if (pw != NULL)
		sandbox_demote(pw, vault_conf.state);
	paths.state = pw != NULL ? "/" : vault_conf.state;
	hosts_prepare(vault_conf.state);
	sandbox_confine(SANDBOX_VAULT, &paths);

	umask(0077);
	if (crypto_init(root) == -1)
		fatalx("cannot set up the keyring");
	if (vault_conf.db_engine == DB_SQLITE)
		vault_open_db(dbpath);
	if (crypto_settle() == -1)
		fatalx("cannot move master.key into the keyring");
	if (keydb_start(err, sizeof(err)) == -1)
		fatalx("database refused: %s", err);
	close(initfd);		/* the lock goes with it */
	vault_index_routes();
	evtimer_set(&ev_metrics, vault_metrics_tick, NULL);
	vault_metrics_tick(0, 0, NULL);
	hosts_start(worker_index);
	health_sched(worker_index);

	proc_child_run(vault_sig);
}

/*
 * The frontend holds a GET /runs or /calls another worker answers until
 * this one took in the ends exec and the relay told it of (both tell
 * before they answer the client).
 */
static void
vault_ends_sync(struct imsg *imsg)
{
	run_exits_read();
	call_exits_read();
	/* The frontend's count of this worker's ends it answered, back. */
	if (imsgev_compose(vault_frontend, IMSG_ENDS_SYNC, imsg->hdr.id, -1,
	    imsg->data, imsg->datalen) == -1)
		fatal("%s: compose", __func__);
}

static void
vault_sig(int sig, short event, void *arg)
{
	egress_flush();
	run_ends_flush();
	call_flush();
	hosts_stop();
	store_close();
	exit(0);
}

/*
 * The workers start together on one state directory: whoever comes
 * first creates the keyring and the schema (or moves an old master.key
 * in), the others then find them (flock on the directory itself).
 */
static int
vault_init_lock(void)
{
	int	 fd;

	if ((fd = open(vault_conf.state, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		fatal("open %s", vault_conf.state);
	if (flock(fd, LOCK_EX) == -1)
		fatal("flock %s", vault_conf.state);
	return (fd);
}

/* IMSG_CONF_WORKER: which worker this is; the shared run slots. */
static void
vault_imsg_worker(struct imsgev *iev, struct imsg *imsg)
{
	struct conf_worker	 cw;

	if (imsg->fd == -1 || imsg->datalen != sizeof(cw) || have_worker)
		fatalx("bad IMSG_CONF_WORKER");
	memcpy(&cw, imsg->data, sizeof(cw));
	if (cw.count < 1 || cw.count > VAULT_WORKERS_MAX ||
	    cw.index >= cw.count)
		fatalx("bad IMSG_CONF_WORKER %u of %u", cw.index, cw.count);
	slots_init(imsg->fd, cw.index);
	worker_index = cw.index;
	imsg->fd = -1;
	have_worker = 1;
	setproctitle("%s", proc_worker_name(cw.index));
	log_procinit(proc_worker_name(cw.index));
}

/*
 * Another worker changed the keyring (tregctl key ...): read keys/ again,
 * so this one opens what it re-sealed and seals under the key it uses.
 * A worker that cannot is not left sealing under a stale key.
 */
static void
vault_keyring_reload(void)
{
	if (crypto_reload() == -1)
		fatalx("keyring: cannot reload what another worker changed");
}

/*
 * A damaged or incomplete database stops the vault: never serve it.
 * path NULL: the PostgreSQL database of the configuration.
 */
static void
vault_open_db(const char *path)
{
	struct store_params	 sp;
	char			 err[512];

	char			*pass = NULL;
	int			 rc;

	memset(&sp, 0, sizeof(sp));
	sp.worker = slots_worker();
	err[0] = '\0';
	if (path != NULL) {
		sp.engine = STORE_SQLITE;
		sp.path = path;
	} else {
		sp.engine = STORE_POSTGRESQL;
		sp.conninfo = vault_conf.db_conninfo;
		if (vault_conf.db_password_file[0] != '\0' &&
		    (pass = pg_password_read(vault_conf.db_password_file, err,
		    sizeof(err))) == NULL)
			fatalx("database refused: %s", err);
		sp.password = pass;
	}
	rc = store_open(&sp, err, sizeof(err));
	if (pass != NULL)
		freezero(pass, PG_PASSWORD_MAX + 1);
	if (rc == -1)
		fatalx("database refused: %s", err);
}

/*
 * What the confined vault keeps of the way to its database server, to
 * connect again after a restart: the server's TCP port (Landlock lets
 * no other), or its Unix socket's directory bind-mounted into the
 * chroot in a mount namespace of the vault's own (the host sees an
 * empty directory; a server restart makes its socket there anew).
 */
static void
vault_db_reach(struct sandbox_paths *paths, int chrooted)
{
	struct store_reach	 r;
	char			 dir[PATH_MAX];

	if (!store_reach(&r))
		return;
	paths->db_connect = 1;
	paths->db_port = r.tcp_port;
	if (r.socket_dir[0] == '\0' || !chrooted)
		return;
	if (snprintf(dir, sizeof(dir), "%s/%s", vault_conf.state,
	    VAULT_DB_SOCKET_DIR) >= (int)sizeof(dir))
		fatalx("state directory path too long");
	if (unshare(CLONE_NEWNS) == -1)
		fatal("%s: unshare", __func__);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		fatal("%s: mount private /", __func__);
	if (mkdir(dir, 0555) == -1 && errno != EEXIST)
		fatal("%s: mkdir %s", __func__, dir);
	if (mount(r.socket_dir, dir, NULL, MS_BIND, NULL) == -1)
		fatal("%s: bind %s", __func__, r.socket_dir);
	if (mount(NULL, dir, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID |
	    MS_NODEV | MS_NOEXEC, NULL) == -1)
		fatal("%s: remount %s", __func__, dir);
	store_reach_dir("/" VAULT_DB_SOCKET_DIR);
}

static void
vault_index_routes(void)
{
	const struct vault_route	*tables[] = {
		vault_org_routes, vault_tool_routes, vault_secret_routes,
		vault_skill_routes, vault_run_routes,
		vault_policy_routes, vault_member_routes,
		vault_me_routes, vault_identity_routes, vault_mail_routes,
		vault_project_routes, vault_health_routes,
		vault_observed_routes
	};
	const struct vault_route	*r;
	size_t				 i;

	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		for (r = tables[i]; r->route != ROUTE_NONE; r++) {
			if (r->route >= ROUTE_MAX || route_index[r->route])
				fatalx("%s: bad route %d", __func__, r->route);
			route_index[r->route] = r;
		}
}

/* ------------------------------------------------------------------ */
/* Channels.                                                           */

static void
vault_dispatch(struct imsgev *iev, struct imsg *imsg)
{
	imsgev_dispatch(IMSG_HANDLERS(vault_imsgs), iev, imsg);
}

static void
vault_imsg_reload(struct imsgev *iev, struct imsg *imsg)
{
	proc_conf_recv(imsg, &vault_conf);
	conf_ready = 0;
}

static void
vault_imsg_reload_end(struct imsgev *iev, struct imsg *imsg)
{
	conf_ready = 1;
	conf_generation++;
	crypto_reload();	/* SIGHUP, tregctl reload */
	health_sched(worker_index);
}

static void
vault_imsg_procinfo(struct imsgev *iev, struct imsg *imsg)
{
	int	 i;

	memcpy(vault_procs, imsg->data, sizeof(vault_procs));
	for (i = 0; i < PROCINFO_MAX; i++)
		vault_procs[i].name[sizeof(vault_procs[i].name) - 1] = '\0';
}

static void
vault_imsg_keyring_reload(struct imsgev *iev, struct imsg *imsg)
{
	vault_keyring_reload();
}

static void
vault_imsg_ctl_reload_done(struct imsgev *iev, struct imsg *imsg)
{
	struct ctl_reload_done	 rd;

	memcpy(&rd, imsg->data, sizeof(rd));
	rd.error[sizeof(rd.error) - 1] = '\0';
	ctl_reload_done(imsg->hdr.id, &rd);
}

/* The counters to the frontend, every second (vault_metrics.c). */
static void
vault_metrics_tick(int fd, short event, void *arg)
{
	const struct metrics_vault	*vm;
	struct timeval			 tv = { 1, 0 };

	vm = vault_metrics_now(slots_used(1), vault_conf.run_slots);
	if (imsgev_compose(vault_frontend, IMSG_METRICS_VAULT, 0, -1, vm,
	    sizeof(*vm)) == -1)
		fatal("%s: send to frontend", __func__);
	evtimer_add(&ev_metrics, &tv);
}

/* ------------------------------------------------------------------ */
/* The control socket's connections (vault_ctl.c answers).            */

/* IMSG_CTL_CONN: a tregctl the parent accepted and checked. */
static void
ctl_conn(int s)
{
	struct ctl_conn	*c;

	if (ctl_nconns >= CTL_CONNS_MAX) {
		log_warnx("control: too many connections");
		close(s);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("%s: calloc", __func__);
	c->id = ctl_next_id++;
	imsgev_init(&c->iev, s, PROC_CONTROL, "tregctl", ctl_dispatch,
	    ctl_closed, c);
	c->iev.untrusted = 1;
	TAILQ_INSERT_TAIL(&ctl_conns, c, entry);
	ctl_nconns++;
}

static void
ctl_closed(struct imsgev *iev)
{
	struct ctl_conn	*c = iev->arg;

	TAILQ_REMOVE(&ctl_conns, c, entry);
	imsgev_clear(&c->iev);
	free(c);
	ctl_nconns--;
}

/* The answer, JSON in an IMSG_CTL_REPLY blob (j is taken). */
static void
ctl_reply(struct ctl_conn *c, uint32_t id, int status, json_t *j)
{
	struct ctl_reply	 cr;
	char			*text;

	cr.status = status;
	if (j == NULL)
		j = json_object();
	if ((text = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	json_decref(j);
	if (imsgev_send_blob(&c->iev, IMSG_CTL_REPLY, id, &cr, sizeof(cr),
	    text, strlen(text)) == -1)
		log_warn("control reply");
	freezero(text, strlen(text));
}

/*
 * One IMSG_CTL_REQUEST.  A bad message from a tregctl is refused, not
 * fatal: the handler closes the connection once this returns (dead).
 */
static void
ctl_dispatch(struct imsgev *iev, struct imsg *imsg)
{
	struct ctl_conn		*c = iev->arg;
	struct ctl_request	 cr;
	json_t			*reply;
	int			 rc;

	if (imsg->hdr.type != IMSG_CTL_REQUEST ||
	    imsg->datalen != sizeof(cr)) {
		log_warnx("control: bad message %u from connection %u, closed",
		    imsg->hdr.type, c->id);
		iev->dead = 1;
		return;
	}
	memcpy(&cr, imsg->data, sizeof(cr));
	cr.email[sizeof(cr.email) - 1] = '\0';
	cr.org[sizeof(cr.org) - 1] = '\0';
	cr.role[sizeof(cr.role) - 1] = '\0';
	cr.key[sizeof(cr.key) - 1] = '\0';
	if ((rc = ctl_command(c->id, &cr, &reply)) != CTL_LATER)
		ctl_reply(c, imsg->hdr.id, rc == 0 ? 0 : 1, reply);
}

/* The parent reloaded, or could not: the tregctl that asked is told. */
static void
ctl_reload_done(uint32_t id, const struct ctl_reload_done *rd)
{
	struct ctl_conn	*c;
	json_t		*reply;
	int		 status;

	TAILQ_FOREACH(c, &ctl_conns, entry)
		if (c->id == id)
			break;
	if (c == NULL)
		return;		/* tregctl went away */
	reply = ctl_reload_reply(rd, &status);
	ctl_reply(c, 1, status, reply);
}

static void
vault_imsg_ctl_conn(struct imsgev *iev, struct imsg *imsg)
{
	if (imsg->fd == -1)
		fatalx("IMSG_CTL_CONN without a descriptor");
	ctl_conn(imsg->fd);
	imsg->fd = -1;
}

static void
vault_imsg_api_request(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;

	b = blob_start(&vault_blobs, imsg, PROC_FRONTEND,
	    sizeof(struct api_request),
	    (size_t)vault_conf.http_body_max + 2 * PATH_MAX);
	if (b == NULL)
		fatalx("bad IMSG_API_REQUEST from frontend");
	if (b->datalen == 0)
		vault_request(b);
}

static void
vault_imsg_call_request(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;

	b = blob_start(&vault_blobs, imsg, PROC_FRONTEND,
	    sizeof(struct call_request),
	    (size_t)vault_conf.http_body_max + 2 * HTTP_HEADERS_MAX);
	if (b == NULL)
		fatalx("bad IMSG_CALL_REQUEST from frontend");
	if (b->datalen == 0)
		call_request(b);
}

/*
 * A blob's chunk: the frontend's requests, the relay's egress requests
 * (each kept apart by the peer it came from).
 */
static void
vault_imsg_request_data(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;
	int		 bad;

	if (iev == vault_relay) {
		b = blob_add(&vault_blobs, imsg, PROC_RELAY, &bad);
		if (bad)
			fatalx("bad IMSG_DATA from relay");
		if (b != NULL)
			egress_call(b);
		return;
	}
	b = blob_add(&vault_blobs, imsg, PROC_FRONTEND, &bad);
	if (bad)
		fatalx("bad IMSG_DATA from frontend");
	if (b != NULL && b->type == IMSG_CALL_REQUEST)
		call_request(b);
	else if (b != NULL)
		vault_request(b);
}

static void
vault_imsg_ends_sync(struct imsgev *iev, struct imsg *imsg)
{
	vault_ends_sync(imsg);
}

static void
vault_imsg_run_exit(struct imsgev *iev, struct imsg *imsg)
{
	struct run_exit	 rx;

	memcpy(&rx, imsg->data, sizeof(rx));
	run_exit(imsg->hdr.id, &rx);
}

static void
vault_imsg_call_done(struct imsgev *iev, struct imsg *imsg)
{
	struct call_done	 cd;

	memcpy(&cd, imsg->data, sizeof(cd));
	call_done(&cd);
}

/* A request of the vault's own came back: status and bounded body. */
static void
vault_imsg_fetch_done(struct imsgev *iev, struct imsg *imsg)
{
	struct fetch_done	 fd;
	size_t			 len = imsg->hdr.len - IMSG_HEADER_SIZE;

	if (len < sizeof(fd) || len > sizeof(fd) + FETCH_BODY_MAX)
		fatalx("bad IMSG_FETCH_DONE from relay");
	memcpy(&fd, imsg->data, sizeof(fd));
	if (oauth_fetch_done(&fd, (const char *)imsg->data + sizeof(fd),
	    len - sizeof(fd)) == 0)
		health_fetch_done(&fd, (const char *)imsg->data + sizeof(fd),
		    len - sizeof(fd));
}

static void
vault_closed(struct imsgev *iev)
{
	proc_peer_lost(iev);
}

/* ------------------------------------------------------------------ */
/* Answers of read-only listings, kept until anything is written.     */

/*
 * Agents poll listings such as GET /tools far more often than anything
 * changes, and building them (rows, stored JSON, the view) is most of the
 * vault's work.  An answer is kept per membership and request; it is good
 * while the store's version (which moves with every write by anyone: this
 * process, another worker, another host) and the configuration stay the
 * same.  Only routes whose answer depends on
 * nothing else (not on the clock) are listed, and the token is checked
 * before every use.  Listings never carry a secret.
 */
#define RCACHE_ENTRIES	128
#define RCACHE_BYTES	(16 * 1024 * 1024)
#define RCACHE_ENTRY_MAX	(1024 * 1024)

struct rcache {
	uint32_t	 route;
	int64_t		 membership;
	int64_t		 id1, id2;
	char		*name, *query;
	int64_t		 dataver;
	uint64_t	 confgen;
	uint64_t	 used;
	char		*body;
	size_t		 len;
};
static struct rcache	 rcache[RCACHE_ENTRIES];
static size_t		 rcache_bytes;
static uint64_t		 rcache_tick;

static int
rcache_route(enum api_route r)
{
	switch (r) {
	case ROUTE_ORGS_LIST:
	case ROUTE_SECRETS_LIST:
	case ROUTE_TOOLS_LIST:
	case ROUTE_TOOL_BY_NAME:
	case ROUTE_BUNDLES_LIST:
	case ROUTE_BUNDLE_GET:
	case ROUTE_BUNDLE_BY_NAME:
	case ROUTE_HEALTH:
		return (1);
	default:
		return (0);
	}
}

static void
rcache_drop(struct rcache *c)
{
	rcache_bytes -= c->len;
	freezero(c->body, c->len);
	free(c->name);
	free(c->query);
	memset(c, 0, sizeof(*c));
}

static struct rcache *
rcache_find(struct vault_req *req, int64_t dataver)
{
	struct rcache	*c;
	int		 i;

	for (i = 0; i < RCACHE_ENTRIES; i++) {
		c = &rcache[i];
		if (c->body == NULL || c->route != req->route ||
		    c->membership != req->auth->membership_id ||
		    c->id1 != req->id1 || c->id2 != req->id2 ||
		    strcmp(c->name, req->name) != 0 ||
		    strcmp(c->query, req->query) != 0)
			continue;
		if (c->dataver != dataver || c->confgen != conf_generation) {
			rcache_drop(c);
			return (NULL);
		}
		c->used = ++rcache_tick;
		return (c);
	}
	return (NULL);
}

static void
rcache_store(struct vault_req *req, int64_t dataver, const char *body,
    size_t len)
{
	struct rcache	*c = NULL;
	int		 i;

	if (len > RCACHE_ENTRY_MAX || dataver == -1)
		return;
	/* A free slot, else the least recently used one. */
	for (i = 0; i < RCACHE_ENTRIES; i++)
		if (rcache[i].body == NULL || c == NULL ||
		    (c->body != NULL && rcache[i].used < c->used))
			c = &rcache[i];
	if (c->body != NULL)
		rcache_drop(c);
	for (i = 0; rcache_bytes + len > RCACHE_BYTES &&
	    i < RCACHE_ENTRIES; i++)
		if (rcache[i].body != NULL)
			rcache_drop(&rcache[i]);
	if ((c->body = malloc(len)) == NULL ||
	    (c->name = strdup(req->name)) == NULL ||
	    (c->query = strdup(req->query)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(c->body, body, len);
	c->len = len;
	c->route = req->route;
	c->membership = req->auth->membership_id;
	c->id1 = req->id1;
	c->id2 = req->id2;
	c->dataver = dataver;
	c->confgen = conf_generation;
	c->used = ++rcache_tick;
	rcache_bytes += len;
}

/* ------------------------------------------------------------------ */
/* Requests.                                                           */

static void
vault_request(struct blob *b)
{
	struct api_request		 ar;
	const struct vault_route	*r;
	struct vault_req		 req;
	struct vault_resp		 resp;
	struct auth			 auth;
	int64_t				 org = 0;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	memset(&auth, 0, sizeof(auth));
	vault_asker(0, 0);
	r = request_unpack(b, &ar, &req);
	if (r == NULL)
		resp_error(&resp, 501, "not implemented by this tregd");
	else if (request_body(&ar, b, &req, &resp) == 0 &&
	    request_auth(&ar, r, &req, &resp, &auth) == 0)
		request_answer(r, &req, &resp);
	if (req.route == ROUTE_RUN)
		store_read_end();
	vault_metrics_request();
	if (resp.status != 0)
		vault_respond(req.reqid, &resp);
	else if (req.oauth_wait != 0)
		org = auth.org_id;
	vault_asker(0, 0);
	json_decref(resp.body);
	free(resp.text);
	json_decref(req.body);
	free((char *)req.name);
	free((char *)req.query);
	auth_clear(&auth);
	/*
	 * An expired OAuth token the answer needs (a grant): the request
	 * waits for its refresh and is answered again from the start.
	 */
	if (org != 0)
		oauth_refresh(org, req.oauth_wait, vault_request_again, b);
	else
		blob_free(b);
}

static void
vault_request_again(void *arg, int64_t sid, int ok, const char *detail)
{
	vault_request(arg);
}

/*
 * The frontend's request checked (a bad one is fatal: the frontend is
 * ours) and its fixed fields into req: its route, or NULL for one this
 * vault does not answer.
 */
static const struct vault_route *
request_unpack(struct blob *b, struct api_request *ar, struct vault_req *req)
{
	const char	*name, *query;

	memcpy(ar, b->head, sizeof(*ar));
	if ((uint64_t)ar->namelen + ar->querylen + ar->bodylen !=
	    b->datalen || ar->route <= ROUTE_NONE || ar->route >= ROUTE_MAX)
		fatalx("bad api request from frontend");
	name = b->data;
	query = name + ar->namelen;
	if (memchr(name, '\0', ar->namelen) ||
	    memchr(query, '\0', ar->querylen))
		fatalx("bad api request strings from frontend");
	req->reqid = b->id;
	req->t_in = mono_ns();
	if (route_index[ar->route] == NULL)
		return (NULL);
	req->route = ar->route;
	req->id1 = ar->id1;
	req->id2 = ar->id2;
	req->proof_ok = ar->proof_ok != 0;
	req->stream = ar->stream != 0;
	return (route_index[ar->route]);
}

/* The body as a JSON object, the name and query as strings. */
static int
request_body(const struct api_request *ar, struct blob *b,
    struct vault_req *req, struct vault_resp *resp)
{
	json_error_t	 jerr;
	const char	*name = b->data, *query, *body;

	query = name + ar->namelen;
	body = query + ar->querylen;
	if (ar->bodylen > 0) {
		req->body = json_loadb(body, ar->bodylen, JSON_ALLOW_NUL,
		    &jerr);
		if (req->body == NULL || !json_is_object(req->body)) {
			resp_error(resp, 400, "malformed JSON body");
			return (-1);
		}
	}
	/* Split the strings apart in place: each is followed by the next. */
	req->name = strndup(name, ar->namelen);
	req->query = strndup(query, ar->querylen);
	if (req->name == NULL || req->query == NULL)
		fatal("%s: strndup", __func__);
	return (0);
}

/* The caller's token and role, for a route that needs one. */
static int
request_auth(const struct api_request *ar, const struct vault_route *r,
    struct vault_req *req, struct vault_resp *resp, struct auth *auth)
{
	int	 rc;

	if (r->min_role == ROLE_NONE)
		return (0);
	if (!ar->has_token) {
		resp_error(resp, 401, "not authenticated");
		return (-1);
	}
	/* A run's token and decision: one snapshot (vault_run.c). */
	if (req->route == ROUTE_RUN && store_read_begin() == -1) {
		resp_error(resp, 503, "the database cannot be read — "
		    "try again in a moment");
		return (-1);
	}
	/* Not a membership's: a person's identity token (vault_identity.c). */
	if ((rc = auth_lookup(ar->token_hash, auth)) == 1)
		rc = identity_auth(ar->token_hash, ar->org, auth);
	if (rc == 1 || rc == -1) {
		if (rc == -1)
			resp_error(resp, 503, "the database cannot be "
			    "read — try again in a moment");
		else
			resp_error(resp, 401, "invalid token");
		return (-1);
	}
	req->auth = auth;
	strlcpy(auth->client, ar->client, sizeof(auth->client));
	vault_asker(auth->org_id, auth->user_id);
	return (auth_enter(req, resp, rc, r->min_role));
}

/* The handler's answer, or the cached one; a cacheable answer kept. */
static void
request_answer(const struct vault_route *r, struct vault_req *req,
    struct vault_resp *resp)
{
	struct rcache	*c;
	char		*text;
	int64_t		 dataver = -1;
	int		 cacheable;

	cacheable = req->auth != NULL && req->auth->membership_id != 0 &&
	    rcache_route(req->route);	/* kept per membership */
	if (cacheable) {
		dataver = store_version();
		if ((c = rcache_find(req, dataver)) != NULL) {
			vault_send(req->reqid, 200, c->body, c->len);
			return;
		}
	}
	if (call_view_before(req, resp) == -1 ||
	    project_view_before(req, resp) == -1)
		return;
	r->handler(req, resp);
	call_view_after(req, resp);
	project_view_after(req, resp);
	if (cacheable && resp->status == 200 && resp->text != NULL) {
		rcache_store(req, dataver, resp->text, resp->textlen);
		vault_send(req->reqid, 200, resp->text, resp->textlen);
		resp->status = 0;
	}
	if (cacheable && resp->status == 200 && resp->body != NULL) {
		if ((text = json_dumps(resp->body, JSON_COMPACT)) == NULL)
			fatalx("%s: json_dumps", __func__);
		rcache_store(req, dataver, text, strlen(text));
		vault_send(req->reqid, 200, text, strlen(text));
		free(text);
		resp->status = 0;
	}
}

/*
 * IMSG_EGRESS_CALL: one request of a keyless run's CLI; its strings are
 * short (a method, a host, a path without query values, a line of why),
 * so the blob is bounded small.
 */
static void
vault_imsg_egress_call(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;

	b = blob_start(&vault_blobs, imsg, PROC_RELAY,
	    sizeof(struct egress_call), 4 * HTTP_HEADERS_MAX);
	if (b == NULL)
		fatalx("bad IMSG_EGRESS_CALL from relay");
	if (b->datalen == 0)
		egress_call(b);
}
