/*
 * The network frontend (_tregd, chroot /var/empty).
 *
 * It speaks HTTP/1.1 to clients (http.c, over plain or TLS sockets),
 * enforces the request limits, checks that bodies are well-formed JSON
 * objects, matches the route and forwards the request to the vault, and
 * writes the answer.  It holds no secret and no database: a token is
 * hashed here and only the hash goes on; the run proof arrives as its
 * hash.  It cannot open a file or start a program (seccomp, Landlock).
 *
 * Server runs: the vault answers a refused run itself; an accepted one
 * is answered from exec's redacted output chunks plus the vault's final
 * result, sent after the audit row is written.  What waits for a slow
 * client is bounded: past `http buffer' exec is told to stop reading the
 * run's pipes, and a client that hangs up cancels its run.
 *
 * Vault workers: a request goes to the worker with the fewest requests
 * outstanding (ties in turn), so one busy with a slow request gets no new
 * one while another is idle; only that worker may answer it.
 */

#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/tree.h>

#include <errno.h>
#include <event.h>
#include <event2/http.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "http.h"
#include "proc.h"
#include "sandbox.h"
#include "tregd.h"
#include "frontend.h"
#include "utf8.h"
#include "util.h"

#define FRONT_CHUNK	(64 * 1024)	/* escaped output per write */
#define TLS_PEM_MAX	(1024 * 1024)
#define RUN_HEARTBEAT_S	15		/* a silent stream's heartbeat (SPEC 6) */

/* A request waiting for the vault (and, for a run, for exec). */
struct front_req {
	RB_ENTRY(front_req)	 entry;
	TAILQ_ENTRY(front_req)	 pentry;	/* on the paused list */
	uint32_t		 id;
	int			 worker;	/* the vault worker asked */
	int			 at_vault;	/* counted as its load */
	struct http_conn	*conn;		/* NULL once the client left */
	enum api_route		 route;
	int			 is_run;
	int			 stream;
	int			 started;	/* stream: headers sent */
	int			 accepted;	/* exec has it */
	int			 cancel;	/* cancel once accepted */
	int			 paused;	/* exec stopped reading it */
	int			 eof;		/* exec sent its result */
	int			 answering;	/* the answer is leaving */
	struct run_result	 result;
	struct evbuffer		*out[2];	/* stdout, stderr: UTF-8 */
	struct utf8_state	 u8[2];
	size_t			 budget[2];	/* escaped bytes left to send */
	int			 truncated[2];
	/* The non-streamed answer, escaped as the client reads it. */
	int			 phase;		/* 0 stdout, 1 stderr, 2 end */
	size_t			 off, stop[2];
	char			 tool[NAME_LEN_MAX + 1];
	/* Streams: a heartbeat after RUN_HEARTBEAT_S without an event. */
	struct event		 ev_beat;
	int			 beat_armed;
	struct timespec		 begun, last_event;
	struct timespec		 t_in, t_sent, t_acc, t_eof; /* run.sh -v */
	/* GET /runs, /calls held until other workers took in their ends. */
	uint32_t		 syncs;		/* bit per worker asked */
	uint32_t		 ends_seq;	/* ends_answered[worker] read */
	struct api_request	*held_ar;
	char			*held_payload;
	size_t			 held_len;
};
RB_HEAD(front_tree, front_req);
TAILQ_HEAD(front_list, front_req);

static int	front_req_cmp(struct front_req *, struct front_req *);
RB_PROTOTYPE_STATIC(front_tree, front_req, entry, front_req_cmp);
RB_GENERATE_STATIC(front_tree, front_req, entry, front_req_cmp);

static const struct route_pat routes[] = {
	{ EVHTTP_REQ_POST,	"/users",			ROUTE_USERS_CREATE },
	{ EVHTTP_REQ_POST,	"/orgs",			ROUTE_ORGS_CREATE },
	{ EVHTTP_REQ_GET,	"/orgs",			ROUTE_ORGS_LIST },
	{ EVHTTP_REQ_DELETE,	"/orgs/#",			ROUTE_ORG_DELETE },
	{ EVHTTP_REQ_POST,	"/orgs/#/invites",		ROUTE_INVITES_CREATE },
	{ EVHTTP_REQ_GET,	"/orgs/#/invites",		ROUTE_INVITES_LIST },
	{ EVHTTP_REQ_DELETE,	"/orgs/#/invites/#",		ROUTE_INVITE_DELETE },
	{ EVHTTP_REQ_POST,	"/invites/accept",		ROUTE_INVITE_ACCEPT },
	{ EVHTTP_REQ_GET,	"/orgs/#/members",		ROUTE_MEMBERS_LIST },
	{ EVHTTP_REQ_PATCH,	"/orgs/#/members/#",		ROUTE_MEMBER_ROLE },
	{ EVHTTP_REQ_PATCH,	"/orgs/#/members/#/access",	ROUTE_MEMBER_ACCESS },
	{ EVHTTP_REQ_DELETE,	"/orgs/#/members/#",		ROUTE_MEMBER_DELETE },
	{ EVHTTP_REQ_POST,	"/orgs/#/leave",		ROUTE_ORG_LEAVE },
	{ EVHTTP_REQ_POST,	"/orgs/#/agents",		ROUTE_AGENTS_CREATE },
	{ EVHTTP_REQ_GET,	"/orgs/#/agents",		ROUTE_AGENTS_LIST },
	{ EVHTTP_REQ_DELETE,	"/orgs/#/agents/#",		ROUTE_AGENT_DELETE },
	{ EVHTTP_REQ_GET,	"/orgs/#/agents/observed",	ROUTE_AGENTS_OBSERVED },
	{ EVHTTP_REQ_POST,	"/orgs/#/deny",			ROUTE_DENY_CREATE },
	{ EVHTTP_REQ_GET,	"/orgs/#/deny",			ROUTE_DENY_LIST },
	{ EVHTTP_REQ_DELETE,	"/orgs/#/deny/#",		ROUTE_DENY_DELETE },
	{ EVHTTP_REQ_POST,	"/orgs/#/projects",		ROUTE_PROJECTS_CREATE },
	{ EVHTTP_REQ_GET,	"/orgs/#/projects",		ROUTE_PROJECTS_LIST },
	{ EVHTTP_REQ_DELETE,	"/orgs/#/projects/#",		ROUTE_PROJECT_DELETE },
	{ EVHTTP_REQ_GET,	"/orgs/#/usage",		ROUTE_ORG_USAGE },
	{ EVHTTP_REQ_POST,	"/secrets",			ROUTE_SECRETS_CREATE },
	{ EVHTTP_REQ_GET,	"/secrets",			ROUTE_SECRETS_LIST },
	{ EVHTTP_REQ_PATCH,	"/secrets/#",			ROUTE_SECRET_PATCH },
	{ EVHTTP_REQ_DELETE,	"/secrets/#",			ROUTE_SECRET_DELETE },
	{ EVHTTP_REQ_POST,	"/tools",			ROUTE_TOOLS_CREATE },
	{ EVHTTP_REQ_GET,	"/tools",			ROUTE_TOOLS_LIST },
	{ EVHTTP_REQ_GET,	"/tools/by-name/*",		ROUTE_TOOL_BY_NAME },
	{ EVHTTP_REQ_PATCH,	"/tools/#",			ROUTE_TOOL_PATCH },
	{ EVHTTP_REQ_DELETE,	"/tools/#",			ROUTE_TOOL_DELETE },
	{ EVHTTP_REQ_POST,	"/tools/*/grant",		ROUTE_TOOL_GRANT },
	{ EVHTTP_REQ_POST,	"/tools/*/run-report",		ROUTE_TOOL_RUN_REPORT },
	{ EVHTTP_REQ_POST,	"/skills",			ROUTE_SKILLS_CREATE },
	{ EVHTTP_REQ_GET,	"/bundles",			ROUTE_BUNDLES_LIST },
	{ EVHTTP_REQ_GET,	"/bundles/#",			ROUTE_BUNDLE_GET },
	{ EVHTTP_REQ_GET,	"/bundles/by-name/*",		ROUTE_BUNDLE_BY_NAME },
	{ EVHTTP_REQ_PATCH,	"/bundles/#",			ROUTE_BUNDLE_PATCH },
	{ EVHTTP_REQ_DELETE,	"/bundles/#",			ROUTE_BUNDLE_DELETE },
	{ EVHTTP_REQ_POST,	"/run",				ROUTE_RUN },
	{ EVHTTP_REQ_GET,	"/runs",			ROUTE_RUNS_LIST },
	{ EVHTTP_REQ_GET,	"/calls",			ROUTE_CALLS_LIST },
	{ EVHTTP_REQ_GET,	"/health",			ROUTE_HEALTH },
	{ EVHTTP_REQ_POST,	"/health/run",			ROUTE_HEALTH_RUN },
	{ EVHTTP_REQ_GET,	"/openapi.json",		ROUTE_OPENAPI },
	{ EVHTTP_REQ_GET,	"/skill.md",		ROUTE_SKILL_MD },
	{ EVHTTP_REQ_GET,	"/auth/me",			ROUTE_AUTH_ME },
	{ EVHTTP_REQ_POST,	"/auth/cli-token",		ROUTE_AUTH_CLI_TOKEN },
	{ EVHTTP_REQ_GET,	"/auth/cli-token",		ROUTE_AUTH_CLI_TOKEN },
	{ EVHTTP_REQ_POST,	"/auth/revoke-tokens",		ROUTE_AUTH_REVOKE },
	{ EVHTTP_REQ_GET,	"/invites/mine",		ROUTE_INVITES_MINE },
	{ EVHTTP_REQ_POST,	"/invites/#/accept",		ROUTE_INVITE_ACCEPT_ID },
	{ EVHTTP_REQ_POST,	"/auth/email/start",		ROUTE_EMAIL_START },
	{ EVHTTP_REQ_POST,	"/auth/email/verify",		ROUTE_EMAIL_VERIFY },
};

/* A matched path. */
struct route_match {
	enum api_route	 route;
	int64_t		 ids[2];
	int		 nids;
	char		*name;		/* decoded '*' segment, malloc'd */
	const char	*pattern;	/* for the request log */
	int		 allow;		/* methods of this shape, for 405 */
};

static struct tregd_conf	 front_conf;
static struct imsgev		 iev_parent, iev_exec, iev_relay;
static struct imsgev		 iev_vaults[VAULT_WORKERS_MAX];
static int			 nvaults;
static uint32_t			 vault_load[VAULT_WORKERS_MAX];
/*
 * Runs and relayed calls of each worker answered, and how many of their
 * ends it said it took in (GET /runs, GET /calls; counters that wrap).
 */
static uint32_t			 ends_answered[VAULT_WORKERS_MAX];
static uint32_t			 ends_settled[VAULT_WORKERS_MAX];
static int			 vault_turn;
static int			 listen_fds[CONF_LISTEN_MAX];
static int			 nlisten_fds;
static int			 serving;	/* IMSG_SERVE came */
static int			 metrics_fds[CONF_LISTEN_MAX];
static int			 nmetrics_fds;
static struct front_tree	 pending = RB_INITIALIZER(&pending);
static struct front_list	 paused = TAILQ_HEAD_INITIALIZER(paused);
static struct blob_list		 front_blobs =
				    TAILQ_HEAD_INITIALIZER(front_blobs);
static struct blob		*tls_cert, *tls_key;
static uint32_t			 next_id = 1;
static size_t			 held;		/* run output kept, total */

static void	front_apply_conf(void);
static void	front_tls_apply(void);
static void	front_dispatch(struct imsgev *, struct imsg *);
static void	front_imsg_listen(struct imsgev *, struct imsg *);
static void	front_imsg_tls(struct imsgev *, struct imsg *);
static void	front_imsg_conf_end(struct imsgev *, struct imsg *);
static void	front_imsg_serve(struct imsgev *, struct imsg *);
static void	front_imsg_response(struct imsgev *, struct imsg *);
static void	front_imsg_refused(struct imsgev *, struct imsg *);
static void	front_imsg_answer_data(struct imsgev *, struct imsg *);
static void	front_imsg_run_accepted(struct imsgev *, struct imsg *);
static void	front_imsg_ends_synced(struct imsgev *, struct imsg *);
static void	front_imsg_metrics_vault(struct imsgev *, struct imsg *);
static void	front_imsg_run_output(struct imsgev *, struct imsg *);
static void	front_imsg_run_eof(struct imsgev *, struct imsg *);
static void	front_imsg_metrics_exec(struct imsgev *, struct imsg *);
static void	front_closed(struct imsgev *);
static void	front_request(struct http_conn *, const struct http_head *,
		    const char *, size_t);
static void	front_metrics(struct http_conn *, const struct http_head *);
static int	front_gone(void *, int);
static int	front_vault_pick(void);
static int	front_vault_pick_run(void);
static struct front_req *front_of_worker(struct imsg *, int, const char *);
static void	front_vault_done(struct front_req *);
static void	front_vault_send(struct front_req *, struct api_request *,
		    char *, size_t);
static int	front_reads_ends(enum api_route);
static uint32_t	front_ends_sync(struct front_req *);
static void	front_ends_synced(struct imsg *, int);
static void	front_ends_settle(int, uint32_t);
static void	front_response(struct blob *, int);
static void	front_run_accepted(struct front_req *, struct imsg *);
static void	front_run_output(struct imsg *);
static void	front_run_finish(struct front_req *);
static void	front_run_drain(struct http_conn *, void *);
static void	front_to_exec(struct front_req *, int);
static void	front_stream_start(struct front_req *);
static void	front_beat(int, short, void *);
static void	front_beat_arm(struct front_req *);
static double	ts_since(const struct timespec *);
static void	front_pressure(struct front_req *);
static void	front_release(void);
static void	front_req_free(struct front_req *);
static void	front_sig(int, short, void *);
static uint32_t	front_new_id(void);

#define FROM_PARENT	IMSG_FROM(PROC_PARENT)
#define FROM_VAULT	IMSG_FROM(PROC_VAULT)
#define FROM_EXEC	IMSG_FROM(PROC_EXEC)
#define FROM_RELAY	IMSG_FROM(PROC_RELAY)

/*
 * What else the parent sends before IMSG_CONF_END (child.c takes the
 * settings and the channels).
 */
static const struct imsg_handler front_start_imsgs[] = {
	{ IMSG_CONF_LISTEN, FROM_PARENT, sizeof(uint32_t),	front_imsg_listen },
	{ IMSG_CONF_METRICS, FROM_PARENT, sizeof(uint32_t),	front_imsg_listen },
	{ IMSG_CONF_TLS_CERT, FROM_PARENT, IMSG_LEN_ANY,	front_imsg_tls },
	{ IMSG_CONF_TLS_KEY, FROM_PARENT, IMSG_LEN_ANY,		front_imsg_tls },
	{ IMSG_DATA,	FROM_PARENT, IMSG_LEN_ANY,		front_imsg_tls },
};

/* Every message the frontend takes once it serves, and from whom. */
static const struct imsg_handler front_imsgs[] = {
	/* A reload's settings and certificate; the go to serve. */
	{ IMSG_CONF,	FROM_PARENT, sizeof(struct tregd_conf),	proc_imsg_conf },
	{ IMSG_CONF_TLS_CERT, FROM_PARENT, IMSG_LEN_ANY,	front_imsg_tls },
	{ IMSG_CONF_TLS_KEY, FROM_PARENT, IMSG_LEN_ANY,		front_imsg_tls },
	{ IMSG_DATA,	FROM_PARENT, IMSG_LEN_ANY,		front_imsg_tls },
	{ IMSG_CONF_END, FROM_PARENT, 0,		front_imsg_conf_end },
	{ IMSG_LOG_VERBOSE, FROM_PARENT, sizeof(int),	proc_log_verbose },
	{ IMSG_SERVE,	FROM_PARENT, 0,			front_imsg_serve },
	/* The vault workers' answers (blobs), run decisions, counters. */
	{ IMSG_API_RESPONSE, FROM_VAULT, IMSG_LEN_ANY,	front_imsg_response },
	{ IMSG_CALL_REFUSED, FROM_VAULT, IMSG_LEN_ANY,	front_imsg_refused },
	{ IMSG_DATA,	FROM_VAULT, IMSG_LEN_ANY,	front_imsg_answer_data },
	{ IMSG_RUN_ACCEPTED, FROM_VAULT, IMSG_LEN_ANY,	front_imsg_run_accepted },
	{ IMSG_ENDS_SYNC, FROM_VAULT, IMSG_LEN_ANY,	front_imsg_ends_synced },
	{ IMSG_METRICS_VAULT, FROM_VAULT, IMSG_LEN_ANY,	front_imsg_metrics_vault },
	/* exec: a run's redacted output and its end. */
	{ IMSG_RUN_OUTPUT, FROM_EXEC, IMSG_LEN_ANY,	front_imsg_run_output },
	{ IMSG_RUN_EOF,	FROM_EXEC, sizeof(struct run_result), front_imsg_run_eof },
	{ IMSG_METRICS_EXEC, FROM_EXEC, IMSG_LEN_ANY,	front_imsg_metrics_exec },
	/* The relay: a call's answer (frontend_call.c). */
	{ IMSG_CALL_HEAD, FROM_RELAY, IMSG_LEN_ANY,	front_call_imsg_head },
	{ IMSG_DATA,	FROM_RELAY, IMSG_LEN_ANY,	front_call_imsg_head_data },
	{ IMSG_CALL_BODY, FROM_RELAY, IMSG_LEN_ANY,	front_call_imsg_body },
	{ IMSG_CALL_END, FROM_RELAY, IMSG_LEN_ANY,	front_call_imsg_end },
};

static struct proc_peer	 front_peers[] = {
	{ PROC_EXEC,	&iev_exec,	front_dispatch, 0 },
	{ PROC_RELAY,	&iev_relay,	front_dispatch, 0 },
};
#define NPEERS	(sizeof(front_peers) / sizeof(front_peers[0]))

static const struct proc_child front_child = {
	PROC_FRONTEND, &front_conf, front_peers, NPEERS, iev_vaults, &nvaults,
	front_dispatch, front_closed
};

static int
front_req_cmp(struct front_req *a, struct front_req *b)
{
	return (a->id < b->id ? -1 : a->id > b->id);
}

__dead void
frontend_main(int debug, int verbose)
{
	struct sandbox_paths	 paths;
	struct passwd		*pw = NULL;
	struct rlimit		 rl;
	int			 i;

	http_init(proc_base, front_request, front_gone);
	proc_child_init(&front_child, &iev_parent, debug, verbose,
	    IMSG_HANDLERS(front_start_imsgs));
	metrics_vault_workers(nvaults);
	front_call_init(&front_conf, &iev_relay);

	if (sodium_init() == -1)
		fatalx("sodium_init");
	json_zero_alloc();
	if (geteuid() == 0)
		pw = proc_getpw(TREGD_USER);

	/* One descriptor per connection, and a few for the channels. */
	rl.rlim_cur = rl.rlim_max = front_conf.http_max_conns + 32;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		log_warn("setrlimit RLIMIT_NOFILE");

	front_apply_conf();
	for (i = 0; i < nlisten_fds; i++)
		http_listen(listen_fds[i], front_conf.listen[i].tls ?
		    HTTP_LISTEN_TLS : 0);
	for (i = 0; i < nmetrics_fds; i++)
		http_listen(metrics_fds[i], HTTP_LISTEN_METRICS);

	sandbox_nodump();
	if (pw != NULL)
		sandbox_demote(pw, TREGD_EMPTY);
	memset(&paths, 0, sizeof(paths));
	sandbox_confine(SANDBOX_FRONTEND, &paths);

	proc_child_run(front_sig);
}

static void
front_sig(int sig, short event, void *arg)
{
	exit(0);
}

/* Settings a reload may change. */
static void
front_apply_conf(void)
{
	explicit_bzero(front_conf.run_proof, sizeof(front_conf.run_proof));
	http_conf(&front_conf);
	front_tls_apply();
}

/* The parent read the certificate and key; the key is zeroed after use. */
static void
front_imsg_tls(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b, **slot;
	int		 bad;

	if (imsg->hdr.type == IMSG_DATA) {
		if ((b = blob_add(&front_blobs, imsg, PROC_PARENT, &bad)) ==
		    NULL && bad)
			fatalx("%s: bad IMSG_DATA from parent", __func__);
	} else {
		b = blob_start(&front_blobs, imsg, PROC_PARENT, 0, TLS_PEM_MAX);
		if (b == NULL || b->datalen == 0)
			fatalx("%s: bad imsg %u from parent", __func__,
			    imsg->hdr.type);
		b = NULL;
	}
	if (b == NULL)
		return;
	slot = b->type == IMSG_CONF_TLS_KEY ? &tls_key : &tls_cert;
	if (*slot != NULL)
		blob_free(*slot);
	*slot = b;
}

static void
front_tls_apply(void)
{
	if (tls_cert != NULL && tls_key != NULL)
		http_tls_load(tls_cert->data, tls_cert->datalen,
		    tls_key->data, tls_key->datalen);
	/* blob_free zeroes what it frees. */
	if (tls_cert != NULL)
		blob_free(tls_cert);
	if (tls_key != NULL)
		blob_free(tls_key);
	tls_cert = tls_key = NULL;
}

/* ------------------------------------------------------------------ */
/* Channels.                                                           */

static void
front_dispatch(struct imsgev *iev, struct imsg *imsg)
{
	imsgev_dispatch(IMSG_HANDLERS(front_imsgs), iev, imsg);
}

/* A bound socket: the API's (IMSG_CONF_LISTEN) or GET /metrics'. */
static void
front_imsg_listen(struct imsgev *iev, struct imsg *imsg)
{
	int	*fds, *n;

	if (imsg->hdr.type == IMSG_CONF_LISTEN) {
		fds = listen_fds;
		n = &nlisten_fds;
	} else {
		fds = metrics_fds;
		n = &nmetrics_fds;
	}
	if (imsg->fd == -1 || *n >= CONF_LISTEN_MAX)
		fatalx("bad imsg %u from parent", imsg->hdr.type);
	fds[(*n)++] = imsg->fd;
	imsg->fd = -1;
}

static void
front_imsg_conf_end(struct imsgev *iev, struct imsg *imsg)
{
	front_apply_conf();
}

static void
front_imsg_serve(struct imsgev *iev, struct imsg *imsg)
{
	int	 i;

	if (serving)
		fatalx("%s: bad IMSG_SERVE", __func__);
	serving = 1;
	/* What one loop turn sends a peer leaves in one sendmsg. */
	for (i = 0; i < nvaults; i++)
		imsgev_coalesce(&iev_vaults[i]);
	imsgev_coalesce(&iev_relay);
	http_serve();
}

static struct front_req *
front_find(uint32_t id)
{
	struct front_req	 key;

	key.id = id;
	return (RB_FIND(front_tree, &pending, &key));
}

/* The worker with the fewest requests outstanding; ties in turn. */
static int
front_vault_pick(void)
{
	int	 i, w, best = -1;

	for (i = 0; i < nvaults; i++) {
		w = (vault_turn + i) % nvaults;
		if (best == -1 || vault_load[w] < vault_load[best])
			best = w;
	}
	vault_turn = (best + 1) % nvaults;
	return (best);
}

/* The request a worker's message is about: one asked of that worker. */
static struct front_req *
front_of_worker(struct imsg *imsg, int w, const char *what)
{
	struct front_req	*fr;

	if ((fr = front_find(imsg->hdr.id)) == NULL || fr->worker != w)
		fatalx("%s for no request of it from %s", what,
		    proc_worker_name(w));
	return (fr);
}

/*
 * A run goes to the worker of the last run unless another has fewer
 * requests outstanding: a worker whose database pages another worker's
 * commit did not change since its last run reads none of them again.
 */
static int
front_vault_pick_run(void)
{
	static int	 last;
	int		 w;

	if (last >= nvaults)
		last = 0;
	for (w = 0; w < nvaults; w++)
		if (vault_load[w] < vault_load[last])
			last = w;
	return (last);
}

struct imsgev *
front_vault_take(int *w)
{
	*w = front_vault_pick();
	vault_load[*w]++;
	return (&iev_vaults[*w]);
}

void
front_vault_give(int w)
{
	vault_load[w]--;
}

/* The request to its worker (fr->worker); payload is zeroed and freed. */
static void
front_vault_send(struct front_req *fr, struct api_request *ar, char *payload,
    size_t len)
{
	fr->at_vault = 1;
	vault_load[fr->worker]++;
	/* Before: a worker woken by the send may run before this returns. */
	clock_gettime(CLOCK_MONOTONIC, &fr->t_sent);
	if (imsgev_send_blob(&iev_vaults[fr->worker], IMSG_API_REQUEST,
	    fr->id, ar, sizeof(*ar), payload, len) == -1)
		fatal("%s: send to vault", __func__);
	freezero(payload, len + 1);
	/* Its read commits the ends exec and the relay told it of by now. */
	fr->ends_seq = ends_answered[fr->worker];
}

/* A run or relayed call of worker w was answered: its end is on the way. */
void
front_end_answered(int w)
{
	if (w < 0 || w >= nvaults)
		fatalx("%s: worker %d", __func__, w);
	ends_answered[w]++;
}

/* The reads that show ends: a client that had its answer finds it there. */
static int
front_reads_ends(enum api_route route)
{
	return (route == ROUTE_RUNS_LIST || route == ROUTE_CALLS_LIST);
}

/*
 * GET /runs and GET /calls read what every worker wrote: the end of a
 * run or of a relayed call is committed by the worker that started it,
 * a moment after exec or the relay told it (which both do before they
 * answer the client here).  So the read goes to a worker with such ends
 * (it takes them in before it reads) and each other one is asked to take
 * in its own first.  The workers asked, as bits.
 */
static uint32_t
front_ends_sync(struct front_req *fr)
{
	uint32_t	 asked = 0;
	int		 w;

	fr->worker = -1;
	for (w = 0; w < nvaults; w++) {
		if ((int32_t)(ends_answered[w] - ends_settled[w]) <= 0)
			continue;
		if (fr->worker == -1) {
			fr->worker = w;
			continue;
		}
		if (imsgev_compose(&iev_vaults[w], IMSG_ENDS_SYNC, fr->id, -1,
		    &ends_answered[w], sizeof(ends_answered[w])) == -1)
			fatal("%s: compose", __func__);
		asked |= 1U << w;
	}
	if (fr->worker == -1)
		fr->worker = front_vault_pick();
	return (asked);
}

/* A worker asked by front_ends_sync() took in its ends. */
static void
front_ends_synced(struct imsg *imsg, int w)
{
	struct front_req	*fr;
	uint32_t		 seq;

	if (imsg->datalen != sizeof(seq) ||
	    (fr = front_find(imsg->hdr.id)) == NULL ||
	    !(fr->syncs & (1U << w)))
		fatalx("bad IMSG_ENDS_SYNC from %s", proc_worker_name(w));
	memcpy(&seq, imsg->data, sizeof(seq));
	if ((int32_t)(ends_answered[w] - seq) < 0)
		fatalx("bad IMSG_ENDS_SYNC from %s", proc_worker_name(w));
	front_ends_settle(w, seq);
	fr->syncs &= ~(1U << w);
	if (fr->syncs != 0)
		return;
	front_vault_send(fr, fr->held_ar, fr->held_payload, fr->held_len);
	freezero(fr->held_ar, sizeof(*fr->held_ar));
	fr->held_ar = NULL;
	fr->held_payload = NULL;
}

/* Worker w took in the ends of its runs and calls answered up to seq. */
static void
front_ends_settle(int w, uint32_t seq)
{
	if ((int32_t)(seq - ends_settled[w]) > 0)
		ends_settled[w] = seq;
}

/* The worker is done with it (answered, or handed the run to exec). */
static void
front_vault_done(struct front_req *fr)
{
	if (!fr->at_vault)
		return;
	fr->at_vault = 0;
	vault_load[fr->worker]--;
}

/* The answers and refusals of vault worker w come from it alone. */
static void
front_imsg_response(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;

	b = blob_start(&front_blobs, imsg, iev->peer,
	    sizeof(struct api_response), 256 * 1024 * 1024);
	if (b == NULL)
		fatalx("bad IMSG_API_RESPONSE from %s", iev->name);
	if (b->datalen == 0)
		front_response(b, iev - iev_vaults);
}

static void
front_imsg_refused(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;

	b = blob_start(&front_blobs, imsg, iev->peer,
	    sizeof(struct api_response), 1024 * 1024);
	if (b == NULL)
		fatalx("bad IMSG_CALL_REFUSED from %s", iev->name);
	if (b->datalen == 0)
		front_call_refused(b, iev - iev_vaults);
}

static void
front_imsg_answer_data(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;
	int		 bad, w = iev - iev_vaults;

	b = blob_add(&front_blobs, imsg, iev->peer, &bad);
	if (bad)
		fatalx("bad IMSG_DATA from %s", iev->name);
	if (b != NULL && b->type == IMSG_CALL_REFUSED)
		front_call_refused(b, w);
	else if (b != NULL)
		front_response(b, w);
}

static void
front_imsg_run_accepted(struct imsgev *iev, struct imsg *imsg)
{
	front_run_accepted(front_of_worker(imsg, iev - iev_vaults,
	    "IMSG_RUN_ACCEPTED"), imsg);
}

static void
front_imsg_ends_synced(struct imsgev *iev, struct imsg *imsg)
{
	front_ends_synced(imsg, iev - iev_vaults);
}

static void
front_imsg_metrics_vault(struct imsgev *iev, struct imsg *imsg)
{
	metrics_vault_report(iev - iev_vaults, imsg);
}

static void
front_imsg_run_output(struct imsgev *iev, struct imsg *imsg)
{
	front_run_output(imsg);
}

static void
front_imsg_run_eof(struct imsgev *iev, struct imsg *imsg)
{
	struct front_req	*fr;

	if ((fr = front_find(imsg->hdr.id)) == NULL || !fr->is_run ||
	    fr->eof)
		fatalx("bad IMSG_RUN_EOF from exec");
	memcpy(&fr->result, imsg->data, sizeof(fr->result));
	fr->eof = 1;
	front_end_answered(fr->worker);
	clock_gettime(CLOCK_MONOTONIC, &fr->t_eof);
	/* The vault's word may come after exec's end: it will. */
	if (fr->accepted)
		front_run_finish(fr);
}

static void
front_imsg_metrics_exec(struct imsgev *iev, struct imsg *imsg)
{
	metrics_exec_report(imsg);
}

static void
front_closed(struct imsgev *iev)
{
	proc_peer_lost(iev);
}

/* ------------------------------------------------------------------ */
/* Requests.                                                           */

static void
front_error(struct http_conn *conn, int status, const char *detail)
{
	http_error(conn, status, detail);
}

/*
 * Match the path against the table (http_route_match), the name segment
 * percent-decoded.  Returns 0 and fills m, 404 or 405.
 */
static int
route_match(const char *path, int method, struct route_match *m)
{
	struct http_match	 hm;
	char			*dec, *raw;
	size_t			 declen;
	int			 r;

	memset(m, 0, sizeof(*m));
	r = http_route_match(routes, sizeof(routes) / sizeof(routes[0]),
	    path, method, &hm);
	m->pattern = hm.pattern;
	m->allow = hm.allow;
	if (r != 0)
		return (r);
	m->route = hm.route;
	m->ids[0] = hm.ids[0];
	m->ids[1] = hm.ids[1];
	m->nids = hm.nids;
	if (hm.name.p != NULL) {
		if ((raw = strndup(hm.name.p, hm.name.len)) == NULL)
			fatal("strndup");
		dec = evhttp_uridecode(raw, 0, &declen);
		free(raw);
		if (dec == NULL || strlen(dec) != declen ||
		    declen > NAME_LEN_MAX) {
			free(dec);
			return (404);
		}
		m->name = dec;
	}
	return (0);
}

static void
front_meta(struct http_conn *conn)
{
	char	 buf[256];
	int	 n;

	n = snprintf(buf, sizeof(buf),
	    "{\"name\":\"tregd\",\"version\":\"%s\",\"treg_version\":"
	    "\"%s\",\"app_version\":\"%s\",\"signup\":\"%s\"}",
	    TREGD_VERSION, TREG_API_VERSION, TREGD_VERSION,
	    front_conf.signup_open ? "open" : "closed");
	http_reply(conn, 200, "application/json", buf, n);
}

/* The body: a JSON object within the limits, or an answer and -1. */
static int
front_body(struct http_conn *conn, const char *text, size_t len,
    json_t **out)
{
	json_error_t	 jerr;
	char		 msg[128];

	*out = NULL;
	if (len == 0)
		return (0);
	if (!json_depth_ok(text, len)) {
		front_error(conn, 400, "malformed JSON: nested too deeply");
		return (-1);
	}
	*out = json_loadb(text, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
	    &jerr);
	if (*out == NULL) {
		/* Never echo the input: it may hold a secret. */
		snprintf(msg, sizeof(msg), "malformed JSON at line %d "
		    "column %d", jerr.line, jerr.column);
		front_error(conn, 400, msg);
		return (-1);
	}
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		front_error(conn, 400, "the body must be a JSON object");
		return (-1);
	}
	return (0);
}

/*
 * What the vault must know of a request besides its payload: the route
 * and ids, the org named, the token's and the runner proof's hashes (never
 * the token itself), the peer.  -1 when the request was answered here.
 */
static int
front_api_fill(struct http_conn *conn, const struct http_head *h,
    const struct route_match *m, struct api_request *ar)
{
	uint8_t		 hash[32];

	memset(ar, 0, sizeof(*ar));
	ar->route = m->route;
	ar->id1 = m->ids[0];
	ar->id2 = m->ids[1];
	if (http_org_copy(h, ar->org, sizeof(ar->org)) == -1) {
		front_error(conn, 400, "X-Treg-Org must name an org by its "
		    "slug or id");
		return (-1);
	}
	if (h->token.p != NULL) {
		ar->has_token = 1;
		token_hash(h->token.p, h->token.len, ar->token_hash);
	}
	if (front_conf.run_proof_set && h->proof.p != NULL) {
		crypto_generichash(hash, sizeof(hash),
		    (const unsigned char *)h->proof.p, h->proof.len, NULL, 0);
		ar->proof_ok = sodium_memcmp(hash, front_conf.run_proof_hash,
		    sizeof(hash)) == 0;
		explicit_bzero(hash, sizeof(hash));
	}
	strlcpy(ar->peer, http_peer(conn), sizeof(ar->peer));
	http_client_copy(h, ar->client, sizeof(ar->client));
	return (0);
}

/* The pending request for conn; a run's gets its output buffers. */
static struct front_req *
front_req_new(struct http_conn *conn, const struct route_match *m,
    json_t *body, struct api_request *ar, const struct timespec *t_in)
{
	struct front_req	*fr;
	json_t			*v;

	if ((fr = calloc(1, sizeof(*fr))) == NULL)
		fatal("%s: calloc", __func__);
	fr->id = front_new_id();
	fr->conn = conn;
	fr->route = m->route;
	fr->t_in = *t_in;
	if (m->route == ROUTE_RUN) {
		fr->is_run = 1;
		if (body != NULL && (v = json_object_get(body, "stream")) &&
		    json_is_true(v))
			fr->stream = ar->stream = 1;
		if (body != NULL && (v = json_object_get(body, "tool")) &&
		    json_is_string(v))
			strlcpy(fr->tool, json_string_value(v),
			    sizeof(fr->tool));
		utf8_init(&fr->u8[0]);
		utf8_init(&fr->u8[1]);
		fr->budget[0] = fr->budget[1] = RUN_OUTPUT_MAX;
		if ((fr->out[0] = evbuffer_new()) == NULL ||
		    (fr->out[1] = evbuffer_new()) == NULL)
			fatal("%s: evbuffer_new", __func__);
	}
	RB_INSERT(front_tree, &pending, fr);
	http_attach(conn, fr, fr->is_run ? front_run_drain : NULL);
	return (fr);
}

/*
 * The payload (the route's name, the query, the body) to a vault worker:
 * a run to the one with the fewest runs, a read of run or call ends held
 * until the other workers' ends are committed.
 */
static void
front_api_send(struct front_req *fr, struct api_request *ar,
    const struct route_match *m, const struct http_head *h,
    const char *bodytext, size_t bodylen)
{
	char	*payload;
	size_t	 namelen, querylen;

	namelen = m->name ? strlen(m->name) : 0;
	querylen = h->query.len;
	ar->namelen = namelen;
	ar->querylen = querylen;
	ar->bodylen = bodylen;
	if ((payload = malloc(namelen + querylen + bodylen + 1)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(payload, m->name ? m->name : "", namelen);
	memcpy(payload + namelen, h->query.p, querylen);
	if (bodylen > 0)
		memcpy(payload + namelen + querylen, bodytext, bodylen);
	if (front_reads_ends(m->route) && (fr->syncs = front_ends_sync(fr))) {
		if ((fr->held_ar = malloc(sizeof(*ar))) == NULL)
			fatal("%s: malloc", __func__);
		memcpy(fr->held_ar, ar, sizeof(*ar));
		fr->held_payload = payload;
		fr->held_len = namelen + querylen + bodylen;
		return;
	}
	if (m->route == ROUTE_RUN)
		fr->worker = front_vault_pick_run();
	else if (!front_reads_ends(m->route))
		fr->worker = front_vault_pick();
	front_vault_send(fr, ar, payload, namelen + querylen + bodylen);
}

/* An API request of a matched route, past the frontend's own checks. */
static void
front_api(struct http_conn *conn, const struct http_head *h,
    const struct route_match *m, const char *bodytext, size_t bodylen,
    const struct timespec *t_in)
{
	struct api_request	 ar;
	struct front_req	*fr;
	json_t			*body = NULL;

	memset(&ar, 0, sizeof(ar));
	if (bodylen > (size_t)front_conf.http_body_max) {
		front_error(conn, 413, "request body too large");
		goto out;
	}
	if (front_body(conn, bodytext, bodylen, &body) == -1)
		goto out;
	if (m->route == ROUTE_RUN &&
	    held > (size_t)front_conf.http_buffer_total) {
		front_error(conn, 503, "the server is busy sending other "
		    "answers - try again in a moment");
		goto out;
	}
	if (front_api_fill(conn, h, m, &ar) == -1)
		goto out;
	fr = front_req_new(conn, m, body, &ar, t_in);
	front_api_send(fr, &ar, m, h, bodytext, bodylen);
 out:
	explicit_bzero(&ar, sizeof(ar));
	json_decref(body);
}

/* A request on a metrics listener: GET /metrics, else 404. */
static void
front_metrics(struct http_conn *conn, const struct http_head *h)
{
	struct evbuffer	*eb;
	size_t		 len;

	if ((h->method != HTTP_M_GET && h->method != HTTP_M_HEAD) ||
	    h->path.len != strlen("/metrics") ||
	    memcmp(h->path.p, "/metrics", h->path.len) != 0) {
		http_error(conn, 404, "not found");
		return;
	}
	http_set_log(conn, "/metrics", 0, 0);
	if ((eb = evbuffer_new()) == NULL)
		fatal("%s: evbuffer_new", __func__);
	metrics_text(eb);
	len = evbuffer_get_length(eb);
	http_reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8",
	    (const char *)evbuffer_pullup(eb, -1), len);
	evbuffer_free(eb);
}

/* A request read whole: the paths the frontend answers, then the API. */
static void
front_request(struct http_conn *conn, const struct http_head *h,
    const char *bodytext, size_t bodylen)
{
	struct route_match	 m;
	char			 path[HTTP_LINE_MAX + 1];
	int			 r, method;
	struct timespec		 t_in;

	clock_gettime(CLOCK_MONOTONIC, &t_in);
	if (http_is_metrics(conn)) {
		front_metrics(conn, h);
		return;
	}
	memset(&m, 0, sizeof(m));
	memcpy(path, h->path.p, h->path.len);
	path[h->path.len] = '\0';
	/* HEAD is GET without the body. */
	method = h->method == HTTP_M_HEAD ? HTTP_M_GET : h->method;

	if (strcmp(path, "/meta") == 0) {
		http_set_log(conn, "/meta", 0, 0);
		if (method == HTTP_M_GET)
			front_meta(conn);
		else {
			http_allow(conn, HTTP_M_GET);
			front_error(conn, 405, "method not allowed");
		}
		return;
	}
	if (front_call_path(path)) {
		if (bodylen > (size_t)front_conf.http_body_max)
			front_error(conn, 413, "request body too large");
		else
			front_call(conn, h, bodytext, bodylen, front_new_id());
		return;
	}
	if ((r = route_match(path, method, &m)) != 0) {
		http_set_log(conn, m.pattern, 0, 0);
		http_allow(conn, m.allow);
		front_error(conn, r, r == 404 ? "not found" :
		    "method not allowed");
		return;
	}
	http_set_log(conn, m.pattern, 0, 0);
	if (m.route == ROUTE_OPENAPI)
		/* Embedded at build time: the chroot holds no files. */
		http_reply(conn, 200, "application/json", openapi_doc,
		    openapi_doc_len);
	else if (m.route == ROUTE_SKILL_MD)
		http_reply(conn, 200, "text/markdown; charset=utf-8",
		    skill_doc, skill_doc_len);
	else
		front_api(conn, h, &m, bodytext, bodylen, &t_in);
	free(m.name);
}

/*
 * The client went away (eof: it may only have half-closed).  A run is
 * cancelled; any other request keeps a half-closed client to answer it.
 * Returns 1 when the frontend let go of the connection.
 */
static int
front_gone(void *arg, int eof)
{
	struct front_req	*fr = arg;
	int			 r;

	if ((r = front_call_gone(arg, eof)) != -1)
		return (r);

	if (eof && !fr->is_run)
		return (0);
	fr->conn = NULL;
	if (fr->answering) {
		front_req_free(fr);	/* its answer was leaving */
		return (1);
	}
	if (fr->is_run) {
		if (fr->accepted)
			front_to_exec(fr, IMSG_RUN_CANCEL);
		else
			fr->cancel = 1;
	}
	return (1);
}

/* Request ids, shared by the API and /call: never 0, never reused soon. */
static uint32_t
front_new_id(void)
{
	uint32_t	 id = next_id++;

	if (next_id == 0)
		next_id = 1;
	return (id);
}

static void
front_req_free(struct front_req *fr)
{
	int	 i;

	RB_REMOVE(front_tree, &pending, fr);
	front_vault_done(fr);
	if (fr->beat_armed)
		evtimer_del(&fr->ev_beat);
	if (fr->paused)
		TAILQ_REMOVE(&paused, fr, pentry);
	for (i = 0; i < 2; i++)
		if (fr->out[i] != NULL) {
			held -= evbuffer_get_length(fr->out[i]);
			evbuffer_free(fr->out[i]);
		}
	if (fr->held_ar != NULL) {
		freezero(fr->held_ar, sizeof(*fr->held_ar));
		freezero(fr->held_payload, fr->held_len + 1);
	}
	free(fr);
	front_release();
}

static void
front_response(struct blob *b, int w)
{
	struct api_response	 ar;
	struct front_req	*fr;

	memcpy(&ar, b->head, sizeof(ar));
	if ((fr = front_find(b->id)) == NULL || fr->worker != w ||
	    ar.status < 100 || ar.status > 599)
		fatalx("bad api response from %s", proc_worker_name(w));
	front_vault_done(fr);
	/* A read of runs or calls took in that worker's ends first. */
	if (front_reads_ends(fr->route) && ar.status == 200)
		front_ends_settle(w, fr->ends_seq);
	if (fr->conn != NULL) {
		/* A run's refusal after exec had it: ids came with ACCEPTED. */
		if (ar.org_id != 0 || ar.user_id != 0)
			http_set_log(fr->conn, NULL, ar.org_id, ar.user_id);
		http_reply(fr->conn, ar.status, "application/json", b->data,
		    b->datalen);
	}
	front_req_free(fr);
	blob_free(b);
}

/* ------------------------------------------------------------------ */
/* Server runs.                                                        */

static const char *const stream_names[2] = { "stdout", "stderr" };

static double
ts_since(const struct timespec *t)
{
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return ((now.tv_sec - t->tv_sec) + (now.tv_nsec - t->tv_nsec) / 1e9);
}

/* (Re)arm the heartbeat for RUN_HEARTBEAT_S after the last event. */
static void
front_beat_arm(struct front_req *fr)
{
	struct timeval	 tv;
	double		 left;

	left = RUN_HEARTBEAT_S - ts_since(&fr->last_event);
	if (left < 0.001)
		left = 0.001;
	tv.tv_sec = (time_t)left;
	tv.tv_usec = (suseconds_t)((left - tv.tv_sec) * 1e6);
	evtimer_add(&fr->ev_beat, &tv);
	fr->beat_armed = 1;
}

/*
 * A stream silent for RUN_HEARTBEAT_S gets {"heartbeat": N}, N the
 * seconds the run has been going, so proxies and clients keep it open.
 */
static void
front_beat(int fd, short event, void *arg)
{
	struct front_req	*fr = arg;
	char			 line[64];
	int			 n;

	fr->beat_armed = 0;
	if (fr->conn == NULL || fr->answering)
		return;
	if (ts_since(&fr->last_event) >= RUN_HEARTBEAT_S) {
		front_stream_start(fr);
		n = snprintf(line, sizeof(line), "{\"heartbeat\":%lld}\n",
		    (long long)ts_since(&fr->begun));
		http_write(fr->conn, line, n);
		clock_gettime(CLOCK_MONOTONIC, &fr->last_event);
	}
	front_beat_arm(fr);
}

static void
front_to_exec(struct front_req *fr, int type)
{
	if (imsgev_compose(&iev_exec, type, fr->id, -1, NULL, 0) == -1)
		fatal("%s: compose", __func__);
}

static void
front_run_accepted(struct front_req *fr, struct imsg *imsg)
{
	struct api_response	 who;

	if (imsg->datalen != sizeof(who) || !fr->is_run || fr->accepted)
		fatalx("bad IMSG_RUN_ACCEPTED from vault");
	memcpy(&who, imsg->data, sizeof(who));
	fr->accepted = 1;
	front_vault_done(fr);
	clock_gettime(CLOCK_MONOTONIC, &fr->t_acc);
	if (fr->conn != NULL)
		http_set_log(fr->conn, NULL, who.org_id, who.user_id);
	if (fr->stream) {
		clock_gettime(CLOCK_MONOTONIC, &fr->begun);
		fr->last_event = fr->begun;
		evtimer_set(&fr->ev_beat, front_beat, fr);
		front_beat_arm(fr);
	}
	if (fr->eof)
		front_run_finish(fr);	/* exec's answer came first */
	else if (fr->cancel)
		front_to_exec(fr, IMSG_RUN_CANCEL);
}

/*
 * Back-pressure: past the connection's bound, exec stops reading a
 * streamed run's pipes until the client catches up.  A plain run keeps
 * at most its output cap until it ends (run slots bound how many), and
 * past `http buffer total' of such output no new run is taken.
 */
static void
front_pressure(struct front_req *fr)
{
	if (fr->paused || fr->conn == NULL || !fr->stream)
		return;
	if (http_pending(fr->conn) <= (size_t)front_conf.http_buffer)
		return;
	fr->paused = 1;
	TAILQ_INSERT_TAIL(&paused, fr, pentry);
	front_to_exec(fr, IMSG_RUN_PAUSE);
}

/* Room again: resume the paused runs that fit. */
static void
front_release(void)
{
	struct front_req	*fr, *next;

	TAILQ_FOREACH_SAFE(fr, &paused, pentry, next) {
		if (fr->conn != NULL &&
		    http_pending(fr->conn) > (size_t)front_conf.http_buffer)
			continue;
		fr->paused = 0;
		TAILQ_REMOVE(&paused, fr, pentry);
		front_to_exec(fr, IMSG_RUN_RESUME);
	}
}

static void
front_stream_start(struct front_req *fr)
{
	if (fr->started || fr->conn == NULL)
		return;
	fr->started = 1;
	http_reply_start(fr->conn, 200, "application/x-ndjson", -1);
}

/*
 * One NDJSON event for a chunk of valid UTF-8.  The output cap counts
 * escaped bytes, the ones sent: a stream's text on the wire is at most
 * RUN_OUTPUT_MAX bytes however many escapes it needs.
 */
static void
front_stream_event(struct front_req *fr, int s, const char *text, size_t len)
{
	char	*line;
	size_t	 used, n, pre;

	if (fr->conn == NULL || len == 0 || fr->budget[s] == 0)
		return;
	pre = strlen(stream_names[s]) + 5;
	if ((line = malloc(pre + 6 * len + 3)) == NULL)
		fatal("%s: malloc", __func__);
	snprintf(line, pre + 1, "{\"%s\":\"", stream_names[s]);
	n = json_escape((const unsigned char *)text, len, &used, line + pre,
	    fr->budget[s]);
	if (used < len) {
		fr->truncated[s] = 1;
		fr->budget[s] = 0;
	} else
		fr->budget[s] -= n;
	memcpy(line + pre + n, "\"}\n", 3);
	if (n > 0) {
		http_write(fr->conn, line, pre + n + 3);
		clock_gettime(CLOCK_MONOTONIC, &fr->last_event);
	}
	free(line);
}

static void
front_run_output(struct imsg *imsg)
{
	struct front_req	*fr;
	const unsigned char	*p = imsg->data;
	char			*u;
	size_t			 ulen, len, have;
	uint8_t			 s;

	if (imsg->datalen < 1 || (p[0] != 1 && p[0] != 2))
		fatalx("bad IMSG_RUN_OUTPUT from exec");
	if ((fr = front_find(imsg->hdr.id)) == NULL || !fr->is_run || fr->eof)
		fatalx("IMSG_RUN_OUTPUT for no run from exec");
	s = p[0] - 1;
	len = imsg->datalen - 1;
	if (fr->conn == NULL)
		return;			/* cancelled: exec is killing it */
	ulen = UTF8_SANITIZE_BOUND(len);
	if ((u = malloc(ulen)) == NULL)
		fatal("%s: malloc", __func__);
	ulen = utf8_sanitize(&fr->u8[s], p + 1, len, u, ulen, 0);
	if (fr->stream) {
		front_stream_start(fr);
		front_stream_event(fr, s, u, ulen);
	} else {
		/* Escaping never shrinks: more than the cap cannot be sent. */
		have = evbuffer_get_length(fr->out[s]);
		if (have + ulen > RUN_OUTPUT_MAX)
			ulen = have < RUN_OUTPUT_MAX ?
			    RUN_OUTPUT_MAX - have : 0;
		evbuffer_add(fr->out[s], u, ulen);
		held += ulen;
	}
	free(u);
	front_pressure(fr);
}

/*
 * The final result as the vault reported it, without the output: the
 * one place that prints struct run_result.
 */
static json_t *
front_result_json(struct front_req *fr)
{
	const struct run_result	*rr = &fr->result;
	const int		 bit[2] = { RUN_TRUNC_STDOUT, RUN_TRUNC_STDERR };
	json_t			*j;
	int			 i, t[2];

	/* Cut by exec's cap (the vault says which) or by the bytes sent. */
	for (i = 0; i < 2; i++)
		t[i] = (rr->truncated & bit[i]) != 0 || fr->truncated[i];
	j = json_pack("{s:s,s:i,s:i,s:b,s:i,s:s,s:{s:b,s:b}}",
	    "tool", fr->tool,
	    "exit_code", rr->exit_code,
	    "duration_ms", rr->duration_ms,
	    "timed_out", rr->timed_out,
	    "redacted", rr->redacted,
	    "outcome", run_outcome_name(rr->outcome),
	    "truncated", "stdout", t[0], "stderr", t[1]);
	if (j == NULL)
		fatalx("%s: json", __func__);
	return (j);
}

static void
front_run_finish(struct front_req *fr)
{
	unsigned char	*raw;
	json_t		*j;
	char		*s, tail[16];
	size_t		 n, esc[2], slen;
	int		 i;

	fr->answering = 1;
	if (fr->conn == NULL)
		goto done;
	/* Flush what a split UTF-8 sequence held back. */
	for (i = 0; i < 2; i++) {
		n = utf8_sanitize(&fr->u8[i], "", 0, tail, sizeof(tail), 1);
		if (fr->stream)
			front_stream_event(fr, i, tail, n);
		else if (evbuffer_get_length(fr->out[i]) + n <= RUN_OUTPUT_MAX)
			evbuffer_add(fr->out[i], tail, n);
	}
	if (!fr->stream)
		for (i = 0; i < 2; i++) {
			n = evbuffer_get_length(fr->out[i]);
			raw = evbuffer_pullup(fr->out[i], -1);
			esc[i] = json_escape(raw, n, &fr->stop[i], NULL,
			    RUN_OUTPUT_MAX);
			if (fr->stop[i] < n)
				fr->truncated[i] = 1;
		}
	j = front_result_json(fr);
	if ((s = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json", __func__);
	json_decref(j);
	slen = strlen(s);
	if (fr->stream) {
		front_stream_start(fr);
		s[slen] = '\n';
		http_write(fr->conn, s, slen + 1);
		s[slen] = '\0';
		http_reply_end(fr->conn);
		free(s);
		goto done;
	}
	/* {...,"stdout":"…","stderr":"…"}: the output is escaped lazily. */
	http_reply_start(fr->conn, 200, "application/json", slen - 1 +
	    strlen(",\"stdout\":\"") + esc[0] + strlen("\",\"stderr\":\"") +
	    esc[1] + strlen("\"}"));
	http_write(fr->conn, s, slen - 1);
	http_write(fr->conn, ",\"stdout\":\"", strlen(",\"stdout\":\""));
	free(s);
	if (log_getverbose() >= 1)
		log_debug("run: frontend us: fe-in %.0f, fe-accepted %.0f, "
		    "fe-result %.0f, fe-answer %.0f",
		    (ts_since(&fr->t_in) - ts_since(&fr->t_sent)) * 1e6,
		    (ts_since(&fr->t_sent) - ts_since(&fr->t_acc)) * 1e6,
		    (ts_since(&fr->t_sent) - ts_since(&fr->t_eof)) * 1e6,
		    ts_since(&fr->t_eof) * 1e6);
	fr->phase = 0;
	fr->off = 0;
	if (http_is_head(fr->conn)) {
		http_reply_end(fr->conn);
		goto done;
	}
	front_run_drain(fr->conn, fr);
	return;
 done:
	front_req_free(fr);
}

/*
 * The client read what was queued: a paused run may go on, a finished
 * one's answer gets its next escaped piece.
 */
static void
front_run_drain(struct http_conn *conn, void *arg)
{
	struct front_req	*fr = arg;
	unsigned char		*raw;
	char			 buf[FRONT_CHUNK];
	size_t			 n, used;

	if (!fr->answering) {
		front_release();
		return;
	}
	while (fr->phase < 2 && http_pending(conn) < FRONT_CHUNK) {
		raw = evbuffer_pullup(fr->out[fr->phase], -1);
		n = json_escape(raw + fr->off, fr->stop[fr->phase] - fr->off,
		    &used, buf, sizeof(buf));
		http_write(conn, buf, n);
		fr->off += used;
		if (fr->off < fr->stop[fr->phase])
			continue;
		http_write(conn, fr->phase == 0 ? "\",\"stderr\":\"" : "\"}",
		    fr->phase == 0 ? strlen("\",\"stderr\":\"") : 2);
		held -= evbuffer_get_length(fr->out[fr->phase]);
		evbuffer_drain(fr->out[fr->phase],
		    evbuffer_get_length(fr->out[fr->phase]));
		fr->phase++;
		fr->off = 0;
	}
	if (fr->phase == 2) {
		http_reply_end(conn);
		front_req_free(fr);
	}
}

/* tregd -T routes: what this frontend answers, for the OpenAPI test. */
void
front_print_routes(FILE *fp)
{
	const char	*m;
	size_t		 i;

	fprintf(fp, "GET /meta\n");
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		switch (routes[i].method) {
		case HTTP_M_GET:
			m = "GET";
			break;
		case HTTP_M_POST:
			m = "POST";
			break;
		case HTTP_M_PATCH:
			m = "PATCH";
			break;
		case HTTP_M_DELETE:
			m = "DELETE";
			break;
		default:
			m = "?";
			break;
		}
		fprintf(fp, "%s %s\n", m, routes[i].pattern);
	}
	front_call_print_routes(fp);
}
