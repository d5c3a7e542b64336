/*
 * The network frontend (_tregd, chroot /var/empty).
 *
 * It speaks HTTP/1.1 to clients (libevent), enforces the request limits,
 * checks that bodies are well-formed JSON objects, matches the route and
 * forwards the request to the vault, and writes the answer.  It holds no
 * secret and no database: a token is hashed here and only the hash goes
 * on.  It cannot open a file or start a program (seccomp, Landlock).
 *
 * Server runs: the vault answers a refused run itself; an accepted one
 * is answered from exec's redacted output chunks plus the vault's final
 * result, sent after the audit row is written.
 */

#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/tree.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <event.h>
#include <evhttp.h>
#include <event2/listener.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "proc.h"
#include "sandbox.h"
#include "tregd.h"
#include "utf8.h"
#include "util.h"

#define JSON_DEPTH_MAX	32
#define PATH_SEGS_MAX	8

/* A request waiting for the vault (and, for a run, for exec). */
struct front_req {
	RB_ENTRY(front_req)	 entry;
	uint32_t		 id;
	struct evhttp_request	*req;		/* NULL once the client left */
	enum api_route		 route;
	int			 is_run;
	int			 stream;
	int			 started;	/* stream: headers sent */
	int			 eof;		/* exec sent every chunk */
	int			 have_result;	/* vault sent the result */
	struct run_result	 result;
	struct evbuffer		*out[2];	/* stdout, stderr */
	struct utf8_state	 u8[2];
	char			 tool[NAME_LEN_MAX + 1];
};
RB_HEAD(front_tree, front_req);

static int	front_req_cmp(struct front_req *, struct front_req *);
RB_PROTOTYPE_STATIC(front_tree, front_req, entry, front_req_cmp);
RB_GENERATE_STATIC(front_tree, front_req, entry, front_req_cmp);

struct route_pat {
	enum evhttp_cmd_type	 method;
	const char		*pattern;	/* '#' id, '*' name */
	enum api_route		 route;
};

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
	{ EVHTTP_REQ_POST,	"/orgs/#/deny",			ROUTE_DENY_CREATE },
	{ EVHTTP_REQ_GET,	"/orgs/#/deny",			ROUTE_DENY_LIST },
	{ EVHTTP_REQ_DELETE,	"/orgs/#/deny/#",		ROUTE_DENY_DELETE },
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
	{ EVHTTP_REQ_GET,	"/openapi.json",		ROUTE_OPENAPI },
};

/* A matched path. */
struct route_match {
	enum api_route	 route;
	int64_t		 ids[2];
	int		 nids;
	char		*name;		/* decoded '*' segment, malloc'd */
};

static struct tregd_conf	 front_conf;
static struct imsgev		 iev_parent, iev_vault, iev_exec;
static struct evhttp		*front_http;
static int			 listen_fds[CONF_LISTEN_MAX];
static int			 nlisten_fds;
static struct front_tree	 pending = RB_INITIALIZER(&pending);
static struct blob_list		 front_blobs =
				    TAILQ_HEAD_INITIALIZER(front_blobs);
static uint32_t			 next_id = 1;
static uint8_t			 proof_hash[32];
static int			 proof_set;

static void	front_config(struct imsg *);
static void	front_apply_conf(void);
static void	front_dispatch_parent(struct imsgev *, struct imsg *);
static void	front_dispatch_vault(struct imsgev *, struct imsg *);
static void	front_dispatch_exec(struct imsgev *, struct imsg *);
static void	front_closed(struct imsgev *);
static void	front_request(struct evhttp_request *, void *);
static void	front_send_json(struct evhttp_request *, int, const char *,
		    size_t);
static void	front_error(struct evhttp_request *, int, const char *);
static void	front_response(struct blob *);
static void	front_run_output(struct imsg *);
static void	front_run_finish(struct front_req *);
static void	front_req_free(struct front_req *);
static void	front_conn_closed(struct evhttp_connection *, void *);
static void	front_accept_error(struct evconnlistener *, void *);
static void	front_sig(int, short, void *);

static struct proc_peer	 front_peers[] = {
	{ PROC_VAULT,	&iev_vault,	front_dispatch_vault, 0 },
	{ PROC_EXEC,	&iev_exec,	front_dispatch_exec, 0 },
};
#define NPEERS	(sizeof(front_peers) / sizeof(front_peers[0]))

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
	struct evconnlistener	*lev;
	struct rlimit		 rl;
	int			 i;

	proc_child_init(PROC_FRONTEND, &iev_parent, debug, verbose,
	    front_dispatch_parent, front_closed, front_config);
	if (!proc_peers_complete(front_peers, NPEERS))
		fatalx("frontend: incomplete configuration");

	if (sodium_init() == -1)
		fatalx("sodium_init");
	json_zero_alloc();
	if (geteuid() == 0)
		pw = proc_getpw(TREGD_USER);

	/* One descriptor per connection, and a few for the channels. */
	rl.rlim_cur = rl.rlim_max = front_conf.http_max_conns + 32;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		log_warn("setrlimit RLIMIT_NOFILE");

	front_http = evhttp_new(NULL);
	if (front_http == NULL)
		fatalx("evhttp_new");
	evhttp_set_allowed_methods(front_http, EVHTTP_REQ_GET |
	    EVHTTP_REQ_POST | EVHTTP_REQ_PATCH | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_PUT | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS);
	evhttp_set_gencb(front_http, front_request, NULL);
	evhttp_set_max_headers_size(front_http, HTTP_HEADERS_MAX);
	front_apply_conf();
	for (i = 0; i < nlisten_fds; i++) {
		lev = evconnlistener_new(proc_base, NULL,
		    NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1,
		    listen_fds[i]);
		if (lev == NULL)
			fatalx("evconnlistener_new");
		evconnlistener_set_error_cb(lev, front_accept_error);
		if (evhttp_bind_listener(front_http, lev) == NULL)
			fatalx("evhttp_bind_listener");
	}

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
	evhttp_set_max_body_size(front_http, front_conf.http_body_max);
	evhttp_set_timeout(front_http, front_conf.http_timeout);
	proof_set = front_conf.run_proof[0] != '\0';
	if (proof_set)
		crypto_generichash(proof_hash, sizeof(proof_hash),
		    (unsigned char *)front_conf.run_proof,
		    strlen(front_conf.run_proof), NULL, 0);
	/* The frontend keeps only the proof's hash. */
	explicit_bzero(front_conf.run_proof, sizeof(front_conf.run_proof));
}

/*
 * Out of descriptors: stop accepting for a moment instead of spinning on
 * accept(2); the connections already open keep being served.
 */
static void
front_accept_resume(int fd, short ev, void *arg)
{
	evconnlistener_enable(arg);
}

static void
front_accept_error(struct evconnlistener *lev, void *arg)
{
	static struct event	 ev;
	static int		 warned;
	struct timeval		 tv = { 0, 100 * 1000 };

	if (errno != EMFILE && errno != ENFILE) {
		log_warn("accept");
		return;
	}
	if (!warned++)
		log_warnx("connection limit reached (http max-connections "
		    "%d)", front_conf.http_max_conns);
	evconnlistener_disable(lev);
	evtimer_set(&ev, front_accept_resume, lev);
	evtimer_add(&ev, &tv);
}

/* ------------------------------------------------------------------ */
/* Channels.                                                           */

static void
front_config(struct imsg *imsg)
{
	uint32_t	 idx;

	switch (imsg->hdr.type) {
	case IMSG_CONF:
		proc_conf_recv(imsg, &front_conf);
		break;
	case IMSG_CONF_LISTEN:
		if (imsg->fd == -1 || imsg->datalen != sizeof(idx) ||
		    nlisten_fds >= CONF_LISTEN_MAX)
			fatalx("bad IMSG_CONF_LISTEN");
		listen_fds[nlisten_fds++] = imsg->fd;
		imsg->fd = -1;
		break;
	case IMSG_CONF_PEER:
		proc_peer_recv(imsg, front_peers, NPEERS, front_closed);
		break;
	default:
		fatalx("%s: bad imsg %u from parent", __func__,
		    imsg->hdr.type);
	}
}

static void
front_dispatch_parent(struct imsgev *iev, struct imsg *imsg)
{
	switch (imsg->hdr.type) {
	case IMSG_CONF:
		proc_conf_recv(imsg, &front_conf);
		break;
	case IMSG_CONF_END:
		front_apply_conf();
		break;
	case IMSG_LOG_VERBOSE:
		proc_log_verbose(imsg);
		break;
	default:
		fatalx("%s: bad imsg %u from parent", __func__,
		    imsg->hdr.type);
	}
}

static struct front_req *
front_find(uint32_t id)
{
	struct front_req	 key;

	key.id = id;
	return (RB_FIND(front_tree, &pending, &key));
}

static void
front_dispatch_vault(struct imsgev *iev, struct imsg *imsg)
{
	struct front_req	*fr;
	struct blob		*b;
	int			 bad;

	switch (imsg->hdr.type) {
	case IMSG_API_RESPONSE:
		b = blob_start(&front_blobs, imsg, PROC_VAULT,
		    sizeof(struct api_response), 256 * 1024 * 1024);
		if (b == NULL)
			fatalx("bad IMSG_API_RESPONSE from vault");
		if (b->datalen == 0)
			front_response(b);
		break;
	case IMSG_DATA:
		b = blob_add(&front_blobs, imsg, PROC_VAULT, &bad);
		if (bad)
			fatalx("bad IMSG_DATA from vault");
		if (b != NULL)
			front_response(b);
		break;
	case IMSG_RUN_ACCEPTED:
		if (imsg->datalen != 0 ||
		    (fr = front_find(imsg->hdr.id)) == NULL || !fr->is_run)
			fatalx("bad IMSG_RUN_ACCEPTED from vault");
		break;
	case IMSG_RUN_RESULT:
		if (imsg->datalen != sizeof(struct run_result) ||
		    (fr = front_find(imsg->hdr.id)) == NULL || !fr->is_run ||
		    fr->have_result)
			fatalx("bad IMSG_RUN_RESULT from vault");
		memcpy(&fr->result, imsg->data, sizeof(fr->result));
		fr->have_result = 1;
		if (fr->eof)
			front_run_finish(fr);
		break;
	default:
		fatalx("%s: bad imsg %u from vault", __func__, imsg->hdr.type);
	}
}

static void
front_dispatch_exec(struct imsgev *iev, struct imsg *imsg)
{
	struct front_req	*fr;

	switch (imsg->hdr.type) {
	case IMSG_RUN_OUTPUT:
		front_run_output(imsg);
		break;
	case IMSG_RUN_EOF:
		if (imsg->datalen != 0 ||
		    (fr = front_find(imsg->hdr.id)) == NULL || !fr->is_run ||
		    fr->eof)
			fatalx("bad IMSG_RUN_EOF from exec");
		fr->eof = 1;
		if (fr->have_result)
			front_run_finish(fr);
		break;
	default:
		fatalx("%s: bad imsg %u from exec", __func__, imsg->hdr.type);
	}
}

static void
front_closed(struct imsgev *iev)
{
	proc_peer_lost(iev);
}

/* ------------------------------------------------------------------ */
/* Requests.                                                           */

static const char *
status_reason(int status)
{
	switch (status) {
	case 200: return ("OK");
	case 400: return ("Bad Request");
	case 401: return ("Unauthorized");
	case 403: return ("Forbidden");
	case 404: return ("Not Found");
	case 405: return ("Method Not Allowed");
	case 409: return ("Conflict");
	case 410: return ("Gone");
	case 413: return ("Payload Too Large");
	case 422: return ("Unprocessable Entity");
	case 429: return ("Too Many Requests");
	case 500: return ("Internal Server Error");
	case 501: return ("Not Implemented");
	case 503: return ("Service Unavailable");
	default: return ("Error");
	}
}

static void
front_headers(struct evhttp_request *req, const char *type)
{
	struct evkeyvalq	*h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", type);
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "Server", "tregd");
}

static void
front_send_json(struct evhttp_request *req, int status, const char *body,
    size_t len)
{
	struct evbuffer	*buf;

	if ((buf = evbuffer_new()) == NULL)
		fatal("%s: evbuffer_new", __func__);
	front_headers(req, "application/json");
	evbuffer_add(buf, body, len);
	evhttp_send_reply(req, status, status_reason(status), buf);
	evbuffer_free(buf);
}

static void
front_error(struct evhttp_request *req, int status, const char *detail)
{
	json_t	*j;
	char	*s;

	j = json_pack("{s:s}", "detail", detail);
	if (j == NULL || (s = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json", __func__);
	front_send_json(req, status, s, strlen(s));
	free(s);
	json_decref(j);
}

/* A path segment as an id: digits only, 1..2^53. */
static int
seg_id(const char *s, size_t len, int64_t *out)
{
	int64_t	 v = 0;
	size_t	 i;

	if (len == 0 || len > 16)
		return (-1);
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > (1LL << 53))
		return (-1);
	*out = v;
	return (0);
}

/*
 * Match the path against the table.  Returns 0 and fills m, 404 when no
 * pattern has this shape, 405 when one does but not for this method.
 */
static int
route_match(const char *path, enum evhttp_cmd_type method,
    struct route_match *m)
{
	const char	*segs[PATH_SEGS_MAX], *p, *q;
	size_t		 lens[PATH_SEGS_MAX], plen, i;
	int		 nsegs = 0, psegs, shape = 0, ok, namepos;
	char		*dec, *raw;
	size_t		 declen;

	memset(m, 0, sizeof(*m));
	if (path[0] != '/')
		return (404);
	for (p = path + 1; *p != '\0'; p = *q ? q + 1 : q) {
		if (nsegs == PATH_SEGS_MAX)
			return (404);
		q = strchr(p, '/');
		if (q == NULL)
			q = p + strlen(p);
		segs[nsegs] = p;
		lens[nsegs++] = q - p;
	}
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		p = routes[i].pattern + 1;
		m->nids = 0;
		namepos = -1;
		for (psegs = 0, ok = 1; *p != '\0' && ok; psegs++) {
			q = strchr(p, '/');
			plen = q ? (size_t)(q - p) : strlen(p);
			if (psegs >= nsegs)
				ok = 0;
			else if (plen == 1 && *p == '#')
				ok = seg_id(segs[psegs], lens[psegs],
				    &m->ids[m->nids++]) == 0;
			else if (plen == 1 && *p == '*') {
				ok = lens[psegs] > 0;
				namepos = psegs;
			} else
				ok = plen == lens[psegs] &&
				    memcmp(p, segs[psegs], plen) == 0;
			p += plen;
			if (*p == '/')
				p++;
		}
		if (!ok || psegs != nsegs)
			continue;
		shape = 1;
		if (routes[i].method != method)
			continue;
		m->route = routes[i].route;
		if (namepos != -1) {
			raw = strndup(segs[namepos], lens[namepos]);
			if (raw == NULL)
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
	return (shape ? 405 : 404);
}

/* Nesting depth of a JSON text, outside strings; -1 past the limit. */
static int
json_depth_ok(const char *s, size_t len)
{
	size_t	 i;
	int	 depth = 0, instr = 0;

	for (i = 0; i < len; i++) {
		if (instr) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				instr = 0;
			continue;
		}
		switch (s[i]) {
		case '"':
			instr = 1;
			break;
		case '[':
		case '{':
			if (++depth > JSON_DEPTH_MAX)
				return (0);
			break;
		case ']':
		case '}':
			depth--;
			break;
		}
	}
	return (1);
}

static void
front_meta(struct evhttp_request *req)
{
	char	 buf[256];
	int	 n;

	n = snprintf(buf, sizeof(buf),
	    "{\"name\":\"tregd\",\"version\":\"%s\",\"signup\":\"%s\"}",
	    TREGD_VERSION, front_conf.signup_open ? "open" : "closed");
	front_send_json(req, 200, buf, n);
}

static void
front_request(struct evhttp_request *req, void *arg)
{
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	struct evkeyvalq	*hdrs = evhttp_request_get_input_headers(req);
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	enum evhttp_cmd_type	 method = evhttp_request_get_command(req);
	struct evhttp_connection *evcon;
	struct route_match	 m;
	struct api_request	 ar;
	struct front_req	*fr;
	json_error_t		 jerr;
	json_t			*body = NULL, *v;
	const char		*path, *query, *tok, *proof, *host;
	char			*bodytext = NULL, *payload;
	char			 msg[128];
	size_t			 bodylen, namelen, querylen;
	uint8_t			 h[32];
	ev_uint16_t		 port;
	int			 r;

	path = uri ? evhttp_uri_get_path(uri) : NULL;
	query = uri ? evhttp_uri_get_query(uri) : NULL;
	if (path == NULL || *path == '\0')
		path = "/";
	if (query == NULL)
		query = "";

	if (strcmp(path, "/meta") == 0) {
		if (method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD)
			front_meta(req);
		else
			front_error(req, 405, "method not allowed");
		return;
	}
	if ((r = route_match(path, method, &m)) != 0) {
		front_error(req, r, r == 404 ? "not found" :
		    "method not allowed");
		return;
	}
	if (m.route == ROUTE_OPENAPI) {
		/* Embedded at build time: the chroot holds no files. */
		front_send_json(req, 200, openapi_doc, openapi_doc_len);
		return;
	}

	memset(&ar, 0, sizeof(ar));
	ar.route = m.route;
	ar.id1 = m.ids[0];
	ar.id2 = m.ids[1];

	bodylen = evbuffer_get_length(in);
	if (bodylen > (size_t)front_conf.http_body_max) {
		front_error(req, 413, "request body too large");
		goto out;
	}
	if (bodylen > 0) {
		bodytext = malloc(bodylen);
		if (bodytext == NULL)
			fatal("%s: malloc", __func__);
		evbuffer_remove(in, bodytext, bodylen);
		if (!json_depth_ok(bodytext, bodylen)) {
			front_error(req, 400, "malformed JSON: nested too "
			    "deeply");
			goto out;
		}
		body = json_loadb(bodytext, bodylen, JSON_ALLOW_NUL |
		    JSON_REJECT_DUPLICATES, &jerr);
		if (body == NULL) {
			/* Never echo the input: it may hold a secret. */
			snprintf(msg, sizeof(msg), "malformed JSON at line %d "
			    "column %d", jerr.line, jerr.column);
			front_error(req, 400, msg);
			goto out;
		}
		if (!json_is_object(body)) {
			front_error(req, 400, "the body must be a JSON object");
			goto out;
		}
	}

	if ((tok = evhttp_find_header(hdrs, "X-Treg-Token")) != NULL) {
		ar.has_token = 1;
		token_hash(tok, strnlen(tok, 1024), ar.token_hash);
	}
	if (proof_set &&
	    (proof = evhttp_find_header(hdrs, "X-Treg-Run-Proof")) != NULL) {
		crypto_generichash(h, sizeof(h), (const unsigned char *)proof,
		    strnlen(proof, 1024), NULL, 0);
		ar.proof_ok = sodium_memcmp(h, proof_hash, sizeof(h)) == 0;
	}
	evcon = evhttp_request_get_connection(req);
	evhttp_connection_get_peer(evcon, (char **)&host, &port);
	strlcpy(ar.peer, host ? host : "?", sizeof(ar.peer));

	if ((fr = calloc(1, sizeof(*fr))) == NULL)
		fatal("%s: calloc", __func__);
	fr->id = next_id++;
	if (next_id == 0)
		next_id = 1;
	fr->req = req;
	fr->route = m.route;
	if (m.route == ROUTE_RUN) {
		fr->is_run = 1;
		if (body != NULL && (v = json_object_get(body, "stream")) &&
		    json_is_true(v))
			fr->stream = ar.stream = 1;
		if (body != NULL && (v = json_object_get(body, "tool")) &&
		    json_is_string(v))
			strlcpy(fr->tool, json_string_value(v),
			    sizeof(fr->tool));
		utf8_init(&fr->u8[0]);
		utf8_init(&fr->u8[1]);
		if ((fr->out[0] = evbuffer_new()) == NULL ||
		    (fr->out[1] = evbuffer_new()) == NULL)
			fatal("%s: evbuffer_new", __func__);
	}
	RB_INSERT(front_tree, &pending, fr);
	evhttp_connection_set_closecb(evcon, front_conn_closed, fr);

	namelen = m.name ? strlen(m.name) : 0;
	querylen = strlen(query);
	ar.namelen = namelen;
	ar.querylen = querylen;
	ar.bodylen = bodylen;
	if ((payload = malloc(namelen + querylen + bodylen + 1)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(payload, m.name ? m.name : "", namelen);
	memcpy(payload + namelen, query, querylen);
	if (bodylen > 0)
		memcpy(payload + namelen + querylen, bodytext, bodylen);
	if (imsgev_send_blob(&iev_vault, IMSG_API_REQUEST, fr->id, &ar,
	    sizeof(ar), payload, namelen + querylen + bodylen) == -1)
		fatal("%s: send to vault", __func__);
	freezero(payload, namelen + querylen + bodylen + 1);
 out:
	json_decref(body);
	if (bodytext != NULL)
		freezero(bodytext, bodylen);
	free(m.name);
}

static void
front_conn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct front_req	*fr = arg;

	/* libevent frees the request with the connection. */
	fr->req = NULL;
}

/* The request is answered: forget the connection's close callback. */
static void
front_detach(struct front_req *fr)
{
	struct evhttp_connection	*evcon;

	if (fr->req == NULL)
		return;
	evcon = evhttp_request_get_connection(fr->req);
	if (evcon != NULL)
		evhttp_connection_set_closecb(evcon, NULL, NULL);
}

static void
front_req_free(struct front_req *fr)
{
	RB_REMOVE(front_tree, &pending, fr);
	if (fr->out[0] != NULL)
		evbuffer_free(fr->out[0]);
	if (fr->out[1] != NULL)
		evbuffer_free(fr->out[1]);
	free(fr);
}

static void
front_response(struct blob *b)
{
	struct api_response	 ar;
	struct front_req	*fr;

	memcpy(&ar, b->head, sizeof(ar));
	if ((fr = front_find(b->id)) == NULL || ar.status < 100 ||
	    ar.status > 599)
		fatalx("bad api response from vault");
	if (fr->req != NULL) {
		front_detach(fr);
		front_send_json(fr->req, ar.status, b->data, b->datalen);
	}
	front_req_free(fr);
	blob_free(b);
}

/* ------------------------------------------------------------------ */
/* Server runs.                                                        */

static const char *const stream_names[2] = { "stdout", "stderr" };

static void
front_stream_start(struct front_req *fr)
{
	if (fr->started || fr->req == NULL)
		return;
	fr->started = 1;
	front_headers(fr->req, "application/x-ndjson");
	evhttp_send_reply_start(fr->req, 200, "OK");
}

/* One NDJSON event line for a chunk of a stream. */
static void
front_stream_event(struct front_req *fr, int s, const char *text, size_t len)
{
	struct evbuffer	*buf;
	json_t		*j;
	char		*line;

	if (fr->req == NULL || len == 0)
		return;
	j = json_object();
	json_object_set_new(j, stream_names[s], json_stringn(text, len));
	line = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (line == NULL)
		fatalx("%s: json", __func__);
	if ((buf = evbuffer_new()) == NULL)
		fatal("%s: evbuffer_new", __func__);
	evbuffer_add(buf, line, strlen(line));
	evbuffer_add(buf, "\n", 1);
	evhttp_send_reply_chunk(fr->req, buf);
	evbuffer_free(buf);
	free(line);
}

static void
front_run_output(struct imsg *imsg)
{
	struct front_req	*fr;
	const unsigned char	*p = imsg->data;
	char			*u;
	size_t			 ulen, len;
	uint8_t			 s;

	if (imsg->datalen < 1 || (p[0] != 1 && p[0] != 2))
		fatalx("bad IMSG_RUN_OUTPUT from exec");
	if ((fr = front_find(imsg->hdr.id)) == NULL || !fr->is_run || fr->eof)
		fatalx("IMSG_RUN_OUTPUT for no run from exec");
	s = p[0] - 1;
	len = imsg->datalen - 1;
	if (!fr->stream) {
		/* Bounded by exec's cap; sanitised once at the end. */
		evbuffer_add(fr->out[s], p + 1, len);
		return;
	}
	front_stream_start(fr);
	ulen = UTF8_SANITIZE_BOUND(len);
	if ((u = malloc(ulen)) == NULL)
		fatal("%s: malloc", __func__);
	ulen = utf8_sanitize(&fr->u8[s], p + 1, len, u, ulen, 0);
	front_stream_event(fr, s, u, ulen);
	free(u);
}

static json_t *
front_output_string(struct front_req *fr, int s)
{
	size_t		 len = evbuffer_get_length(fr->out[s]), ulen;
	unsigned char	*raw;
	char		*u;
	json_t		*j;

	raw = evbuffer_pullup(fr->out[s], -1);
	ulen = UTF8_SANITIZE_BOUND(len);
	if ((u = malloc(ulen + 1)) == NULL)
		fatal("%s: malloc", __func__);
	ulen = utf8_sanitize(&fr->u8[s], raw, len, u, ulen, 1);
	j = json_stringn(u, ulen);
	free(u);
	return (j);
}

static void
front_run_finish(struct front_req *fr)
{
	struct evbuffer	*buf;
	json_t		*j;
	char		*s, tail[16];
	size_t		 n;
	int		 i;

	if (fr->req == NULL)
		goto done;
	front_detach(fr);
	if (fr->result.error && !fr->started) {
		front_error(fr->req, 500, "the run could not be started");
		goto done;
	}
	j = json_pack("{s:i,s:i,s:b,s:i}",
	    "exit_code", fr->result.exit_code,
	    "duration_ms", fr->result.duration_ms,
	    "timed_out", fr->result.timed_out,
	    "redacted", fr->result.redacted);
	if (j == NULL)
		fatalx("%s: json", __func__);
	if (fr->stream) {
		front_stream_start(fr);
		/* Flush what a split UTF-8 sequence held back. */
		for (i = 0; i < 2; i++) {
			n = utf8_sanitize(&fr->u8[i], "", 0, tail,
			    sizeof(tail), 1);
			front_stream_event(fr, i, tail, n);
		}
	} else {
		json_object_set_new(j, "tool", json_string(fr->tool));
		json_object_set_new(j, "stdout", front_output_string(fr, 0));
		json_object_set_new(j, "stderr", front_output_string(fr, 1));
	}
	if ((s = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json", __func__);
	json_decref(j);
	if (fr->stream) {
		if ((buf = evbuffer_new()) == NULL)
			fatal("%s: evbuffer_new", __func__);
		evbuffer_add(buf, s, strlen(s));
		evbuffer_add(buf, "\n", 1);
		evhttp_send_reply_chunk(fr->req, buf);
		evbuffer_free(buf);
		evhttp_send_reply_end(fr->req);
	} else
		front_send_json(fr->req, 200, s, strlen(s));
	free(s);
 done:
	front_req_free(fr);
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
		case EVHTTP_REQ_GET:
			m = "GET";
			break;
		case EVHTTP_REQ_POST:
			m = "POST";
			break;
		case EVHTTP_REQ_PATCH:
			m = "PATCH";
			break;
		case EVHTTP_REQ_DELETE:
			m = "DELETE";
			break;
		default:
			m = "?";
			break;
		}
		fprintf(fp, "%s %s\n", m, routes[i].pattern);
	}
}
