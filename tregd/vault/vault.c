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
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <event.h>
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

struct tregd_conf	 vault_conf;
const char		*vault_root;	/* the state directory, seen from here */
struct procinfo		 vault_procs[PROCINFO_MAX];
struct imsgev		*vault_parent, *vault_frontend, *vault_exec;
struct imsgev		*vault_relay;

static struct imsgev	 iev_parent, iev_frontend, iev_exec, iev_relay;
static struct blob_list	 vault_blobs = TAILQ_HEAD_INITIALIZER(vault_blobs);
static const struct vault_route *route_index[ROUTE_MAX];
static int		 conf_ready;
static int		 have_worker;
static int		 worker_index;
static uint64_t		 conf_generation;	/* bumped by each reload */

static void	vault_dispatch(struct imsgev *, struct imsg *);
static void	vault_imsg_conf(struct imsgev *, struct imsg *);
static void	vault_imsg_peer(struct imsgev *, struct imsg *);
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
static void	vault_closed(struct imsgev *);
static void	vault_request(struct blob *);
static void	vault_open_db(const char *);
static void	vault_index_routes(void);
static void	vault_sig(int, short, void *);
static int	vault_init_lock(void);

#define FROM_PARENT	IMSG_FROM(PROC_PARENT)
#define FROM_FRONTEND	IMSG_FROM(PROC_FRONTEND)
#define FROM_EXEC	IMSG_FROM(PROC_EXEC)
#define FROM_RELAY	IMSG_FROM(PROC_RELAY)

/* What the parent sends before IMSG_CONF_END: settings and channels. */
static const struct imsg_handler vault_start_imsgs[] = {
	{ IMSG_CONF,	FROM_PARENT, sizeof(struct tregd_conf),	vault_imsg_conf },
	{ IMSG_CONF_PEER, FROM_PARENT, sizeof(uint32_t), vault_imsg_peer },
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
	{ IMSG_DATA,	FROM_FRONTEND, IMSG_LEN_ANY,	vault_imsg_request_data },
	{ IMSG_ENDS_SYNC, FROM_FRONTEND, sizeof(uint32_t), vault_imsg_ends_sync },
	/* The ends of what the vault started. */
	{ IMSG_RUN_EXIT, FROM_EXEC, IMSG_LEN_ANY,	vault_imsg_run_exit },
	{ IMSG_CALL_DONE, FROM_RELAY, IMSG_LEN_ANY,	vault_imsg_call_done },
};

static struct proc_peer	 vault_peers[] = {
	{ PROC_FRONTEND,	&iev_frontend,	vault_dispatch, 0 },
	{ PROC_EXEC,		&iev_exec,	vault_dispatch, 0 },
	{ PROC_RELAY,		&iev_relay,	vault_dispatch, 0 },
};
#define NPEERS	(sizeof(vault_peers) / sizeof(vault_peers[0]))

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
	proc_child_init(PROC_VAULT, &iev_parent, debug, verbose,
	    vault_dispatch, vault_closed, IMSG_HANDLERS(vault_start_imsgs));
	if (!proc_peers_complete(vault_peers, NPEERS) || !have_worker)
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
	/* PostgreSQL: now, while the network is there (see store_pg.c). */
	if (vault_conf.db_engine == DB_POSTGRESQL)
		vault_open_db(NULL);

	sandbox_nodump();
	if (pw != NULL)
		sandbox_demote(pw, vault_conf.state);
	memset(&paths, 0, sizeof(paths));
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
	vault_metrics_start();
	hosts_start(worker_index);

	proc_child_run(vault_sig);
}

/*
 * The frontend holds a GET /runs or /calls another worker answers until
 * this one took in the ends exec and the relay told it of (both tell
 * before they answer the client).
 */
void
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

/* A tregctl command here changed the keyring: the others reload it. */
void
vault_keyring_changed(void)
{
	if (vault_conf.vault_workers > 1)
		imsgev_compose(vault_parent, IMSG_KEYRING, 0, -1, NULL, 0);
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

static void
vault_index_routes(void)
{
	const struct vault_route	*tables[] = {
		vault_org_routes, vault_tool_routes, vault_run_routes,
		vault_policy_routes, vault_member_routes,
		vault_me_routes, vault_identity_routes, vault_mail_routes
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
vault_imsg_conf(struct imsgev *iev, struct imsg *imsg)
{
	proc_conf_recv(imsg, &vault_conf);
}

static void
vault_imsg_peer(struct imsgev *iev, struct imsg *imsg)
{
	proc_peer_recv(imsg, vault_peers, NPEERS, vault_closed);
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

static void
vault_imsg_request_data(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;
	int		 bad;

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
	run_exit(imsg);
}

static void
vault_imsg_call_done(struct imsgev *iev, struct imsg *imsg)
{
	call_done(imsg);
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

/* Who the request being answered came from, for the request log. */
static int64_t	 asker_org, asker_user;

static void
vault_send(uint32_t reqid, int status, const char *text, size_t len)
{
	struct api_response	 ar;

	memset(&ar, 0, sizeof(ar));
	ar.status = status;
	ar.org_id = asker_org;
	ar.user_id = asker_user;
	if (imsgev_send_blob(vault_frontend, IMSG_API_RESPONSE, reqid, &ar,
	    sizeof(ar), text, len) == -1)
		fatal("%s: send", __func__);
}

/* ------------------------------------------------------------------ */
/* Requests.                                                           */

static const char *
role_phrase(enum role need)
{
	switch (need) {
	case ROLE_MEMBER:
		return ("viewers can call and read, but cannot register");
	case ROLE_ADMIN:
		return ("only admins and owners can do this");
	case ROLE_OWNER:
		return ("only owners can do this");
	default:
		return ("forbidden");
	}
}

int
require_role(struct vault_req *req, struct vault_resp *resp, enum role need)
{
	if (req->auth != NULL && req->auth->role >= need)
		return (0);
	resp_error(resp, 403, "%s", role_phrase(need));
	return (-1);
}

static void
vault_request(struct blob *b)
{
	struct api_request		 ar;
	const struct vault_route	*r;
	struct vault_req		 req;
	struct vault_resp		 resp;
	struct auth			 auth;
	json_error_t			 jerr;
	struct rcache			*c;
	char				*name, *query, *body, *text;
	int64_t				 dataver = -1;
	int				 cacheable, rc;

	memcpy(&ar, b->head, sizeof(ar));
	if ((uint64_t)ar.namelen + ar.querylen + ar.bodylen != b->datalen ||
	    ar.route <= ROUTE_NONE || ar.route >= ROUTE_MAX)
		fatalx("bad api request from frontend");
	r = route_index[ar.route];
	name = b->data;
	query = name + ar.namelen;
	body = query + ar.querylen;
	if (memchr(name, '\0', ar.namelen) ||
	    memchr(query, '\0', ar.querylen))
		fatalx("bad api request strings from frontend");

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	memset(&auth, 0, sizeof(auth));
	req.reqid = b->id;
	req.t_in = mono_ns();
	asker_org = asker_user = 0;
	if (r == NULL) {
		resp_error(&resp, 501, "not implemented by this tregd");
		goto done;
	}
	req.route = ar.route;
	req.id1 = ar.id1;
	req.id2 = ar.id2;
	req.proof_ok = ar.proof_ok != 0;
	req.stream = ar.stream != 0;

	if (ar.bodylen > 0) {
		req.body = json_loadb(body, ar.bodylen, JSON_ALLOW_NUL, &jerr);
		if (req.body == NULL || !json_is_object(req.body)) {
			resp_error(&resp, 400, "malformed JSON body");
			goto done;
		}
	}
	/* Split the strings apart in place: each is followed by the next. */
	req.name = strndup(name, ar.namelen);
	req.query = strndup(query, ar.querylen);
	if (req.name == NULL || req.query == NULL)
		fatal("%s: strndup", __func__);

	if (r->min_role != ROLE_NONE) {
		if (!ar.has_token) {
			resp_error(&resp, 401, "not authenticated");
			goto done;
		}
		/* A run's token and decision: one snapshot (vault_run.c). */
		if (req.route == ROUTE_RUN && store_read_begin() == -1) {
			resp_error(&resp, 503, "the database cannot be read — "
			    "try again in a moment");
			goto done;
		}
		if ((rc = auth_lookup(ar.token_hash, &auth)) == 1)
			rc = identity_auth(ar.token_hash, ar.org, &auth);
		if (rc == 1 || rc == -1) {
			if (rc == -1)
				resp_error(&resp, 503, "the database cannot be "
				    "read — try again in a moment");
			else
				resp_error(&resp, 401, "invalid token");
			goto done;
		}
		req.auth = &auth;
		asker_org = auth.org_id;
		asker_user = auth.user_id;
		if (auth_enter(&req, &resp, rc, r->min_role) == -1)
			goto done;
	}
	cacheable = req.auth != NULL && req.auth->membership_id != 0 &&
	    rcache_route(req.route);	/* kept per membership */
	if (cacheable) {
		dataver = store_version();
		if ((c = rcache_find(&req, dataver)) != NULL) {
			vault_send(req.reqid, 200, c->body, c->len);
			goto done;
		}
	}
	if (call_view_before(&req, &resp) == -1)
		goto done;
	r->handler(&req, &resp);
	call_view_after(&req, &resp);
	if (cacheable && resp.status == 200 && resp.text != NULL) {
		rcache_store(&req, dataver, resp.text, resp.textlen);
		vault_send(req.reqid, 200, resp.text, resp.textlen);
		resp.status = 0;
	}
	if (cacheable && resp.status == 200 && resp.body != NULL) {
		if ((text = json_dumps(resp.body, JSON_COMPACT)) == NULL)
			fatalx("%s: json_dumps", __func__);
		rcache_store(&req, dataver, text, strlen(text));
		vault_send(req.reqid, 200, text, strlen(text));
		free(text);
		resp.status = 0;
	}
 done:
	if (req.route == ROUTE_RUN)
		store_read_end();
	vault_metrics_request();
	if (resp.status != 0)
		vault_respond(req.reqid, &resp);
	asker_org = asker_user = 0;
	json_decref(resp.body);
	free(resp.text);
	json_decref(req.body);
	free((char *)req.name);
	free((char *)req.query);
	auth_clear(&auth);
	blob_free(b);
}

void
vault_respond(uint32_t reqid, struct vault_resp *resp)
{
	char	*text;

	if (resp->text != NULL) {
		vault_send(reqid, resp->status, resp->text, resp->textlen);
		return;
	}
	if (resp->body == NULL)
		resp->body = json_object();
	if ((text = json_dumps(resp->body, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	vault_send(reqid, resp->status, text, strlen(text));
	freezero(text, strlen(text));
}

void
resp_error(struct vault_resp *resp, int status, const char *fmt, ...)
{
	char	 msg[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_decref(resp->body);
	free(resp->text);
	resp->text = NULL;
	resp->status = status;
	resp->body = json_pack("{s:s}", "detail", msg);
}

void
resp_ok(struct vault_resp *resp, json_t *body)
{
	json_decref(resp->body);
	resp->status = 200;
	resp->body = body;
}

void
resp_text(struct vault_resp *resp, char *text, size_t len)
{
	json_decref(resp->body);
	free(resp->text);
	resp->status = 200;
	resp->body = NULL;
	resp->text = text;
	resp->textlen = len;
}

/* ------------------------------------------------------------------ */
/* Authentication.                                                     */

int
auth_lookup(const uint8_t hash[TOKEN_HASH_LEN], struct auth *a)
{
	struct store_member	 m;
	int			 rc = 1, found;

	/* A database that fails is not "no such token": 503, and said. */
	if ((found = store_member_by_token(hash, &m)) != 0) {
		if (found == -1) {
			log_warnx("authentication: %s", store_error());
			rc = -1;
		}
		goto out;
	}
	if (sodium_memcmp(m.token_hash, hash, TOKEN_HASH_LEN) != 0)
		goto out;
	a->membership_id = m.id;
	a->user_id = m.user_id;
	a->org_id = m.org_id;
	a->role = role_from_name(m.role);
	a->tool_access = m.tool_access ? json_loads(m.tool_access, 0, NULL) :
	    NULL;
	a->local_run_enabled = m.local_run_enabled;
	strlcpy(a->email, m.email, sizeof(a->email));
	a->is_agent = m.is_agent;
	strlcpy(a->org_slug, m.org_slug, sizeof(a->org_slug));
	if (a->role != ROLE_NONE)
		rc = 0;
 out:
	store_member_clear(&m);
	return (rc);
}

void
auth_clear(struct auth *a)
{
	json_decref(a->tool_access);
	memset(a, 0, sizeof(*a));
}

/* Owners are never restricted; null means every tool. */
int
access_allows(const struct auth *a, const char *tool)
{
	size_t	 i;
	json_t	*v;

	if (a->role == ROLE_OWNER || a->tool_access == NULL ||
	    !json_is_array(a->tool_access))
		return (1);
	json_array_foreach(a->tool_access, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), tool) == 0)
			return (1);
	return (0);
}

static const char *const role_names[] = {
	"", "viewer", "member", "admin", "owner"
};

enum role
role_from_name(const char *s)
{
	int	 i;

	for (i = ROLE_VIEWER; i <= ROLE_OWNER; i++)
		if (strcmp(s, role_names[i]) == 0)
			return (i);
	return (ROLE_NONE);
}

const char *
role_name(enum role r)
{
	if (r < ROLE_VIEWER || r > ROLE_OWNER)
		return ("");
	return (role_names[r]);
}

/* ------------------------------------------------------------------ */
/* Answers.                                                            */

void
db_fail(struct vault_resp *resp, const char *what)
{
	int	 unavailable = store_unavailable();

	log_warnx("database error (%s): %s", what, store_error());
	vault_metrics_db_error();
	store_rollback();
	/* Locked by another process, full, unreachable: not tregd's fault. */
	if (unavailable)
		resp_error(resp, 503, "the database is unavailable (locked, "
		    "full or unreachable) — nothing was changed, try again "
		    "in a moment");
	else
		resp_error(resp, 500, "internal error: the database failed "
		    "(%s)", what);
}

int
db_begin(struct vault_resp *resp)
{
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return (-1);
	}
	return (0);
}

int
db_commit(struct vault_resp *resp)
{
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		return (-1);
	}
	return (0);
}

void
iso_time(int64_t t, char *buf, size_t len)
{
	time_t		 tt = t;
	struct tm	 tm;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void
now_iso(char *buf, size_t len)
{
	iso_time(time(NULL), buf, len);
}

/* ------------------------------------------------------------------ */
/* Body fields.                                                        */

int
valid_name(const char *s)
{
	size_t	 n = strlen(s);
	size_t	 i;

	if (n < 1 || n > NAME_LEN_MAX)
		return (0);
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return (0);
	return (1);
}

int
json_has_nul(json_t *v)
{
	const char	*k;
	json_t		*e;
	size_t		 i;

	if (json_is_string(v))
		return (memchr(json_string_value(v), '\0',
		    json_string_length(v)) != NULL);
	if (json_is_array(v)) {
		json_array_foreach(v, i, e)
			if (json_has_nul(e))
				return (1);
	} else if (json_is_object(v)) {
		json_object_foreach(v, k, e)
			if (json_has_nul(e))
				return (1);
	}
	return (0);
}

static json_t *
body_field(struct vault_req *req, struct vault_resp *resp, const char *f,
    int required)
{
	json_t	*v = req->body ? json_object_get(req->body, f) : NULL;

	if (v == NULL && required)
		resp_error(resp, 422, "field '%s' is required", f);
	return (v);
}

int
body_str(struct vault_req *req, struct vault_resp *resp, const char *f,
    int required, size_t maxlen, const char **out)
{
	json_t	*v;

	if ((v = body_field(req, resp, f, required)) == NULL)
		return (required ? -1 : 0);
	if (!json_is_string(v)) {
		resp_error(resp, 422, "field '%s' must be a string", f);
		return (-1);
	}
	if (json_string_length(v) > maxlen) {
		resp_error(resp, 422, "field '%s' is too long (at most %zu "
		    "bytes)", f, maxlen);
		return (-1);
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		resp_error(resp, 422, "field '%s' contains a NUL byte", f);
		return (-1);
	}
	*out = json_string_value(v);
	return (0);
}

int
body_bool(struct vault_req *req, struct vault_resp *resp, const char *f,
    int required, int *out)
{
	json_t	*v;

	if ((v = body_field(req, resp, f, required)) == NULL)
		return (required ? -1 : 0);
	if (!json_is_boolean(v)) {
		resp_error(resp, 422, "field '%s' must be true or false", f);
		return (-1);
	}
	*out = json_is_true(v);
	return (0);
}

int
body_int(struct vault_req *req, struct vault_resp *resp, const char *f,
    int required, int64_t min, int64_t max, int64_t *out)
{
	json_t	*v;

	if ((v = body_field(req, resp, f, required)) == NULL)
		return (required ? -1 : 0);
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max) {
		resp_error(resp, 422, "field '%s' must be an integer from "
		    "%lld to %lld", f, (long long)min, (long long)max);
		return (-1);
	}
	*out = json_integer_value(v);
	return (0);
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (c - 'A' + 10);
	return (-1);
}

/* The percent-decoded value of key in a query string; 0 found, -1 not. */
int
query_param(const char *query, const char *key, char *buf, size_t len)
{
	const char	*p = query, *end, *eq;
	size_t		 klen = strlen(key), o;
	int		 h, l;

	while (*p != '\0') {
		end = strchr(p, '&');
		if (end == NULL)
			end = p + strlen(p);
		eq = memchr(p, '=', end - p);
		if (eq != NULL && (size_t)(eq - p) == klen &&
		    strncmp(p, key, klen) == 0) {
			for (o = 0, p = eq + 1; p < end && o + 1 < len; p++) {
				if (*p == '%' && end - p >= 3 &&
				    (h = hexval(p[1])) != -1 &&
				    (l = hexval(p[2])) != -1) {
					buf[o++] = h * 16 + l;
					p += 2;
				} else
					buf[o++] = *p == '+' ? ' ' : *p;
			}
			buf[o] = '\0';
			if (memchr(buf, '\0', o) != NULL)
				return (-1);
			return (0);
		}
		p = *end ? end + 1 : end;
	}
	return (-1);
}
