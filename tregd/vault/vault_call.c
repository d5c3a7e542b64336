/*
 * vault_call.c: the vault's side of the relay (/call/..., SPEC.md
 * section 10).
 *
 * A call is decided here, in this order (first failure wins, each
 * refusal audited with its refused_by): the token (auth), the tool the
 * target names (resolution: /call/<tool>/<path>, or /call/<full URL> by
 * host and the longest base_url prefix on a segment boundary), the
 * caller's access list (access), the deny rules on the real method, host
 * and path (policy).  Then the secrets are unsealed and the bindings
 * applied through inject_value() (the one function that turns a secret
 * into what a consumer sees); a binding that does not resolve is a 502
 * audited as resolution too.  The calls that arrived in one turn of the
 * event loop are decided in one read transaction, then share one write
 * transaction: each one's daily call cap (cap) and its row, the
 * refusals' rows, the end records waiting; only after the commit is each
 * answered or sent (no row, no call: 503), and the relay gets the
 * request with the key in it and the call's redaction set.  The vault
 * never opens a socket; the relay answers the frontend and reports here
 * how it ended, which is appended to the audit (call_ends).
 */

#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event.h>

#include "http_parse.h"
#include "pack.h"
#include "vault.h"

#define CALL_TOOLS_MAX		64	/* of one host, for URL resolution */
#define CALL_SECRETS_MAX	BINDINGS_MAX
#define CALL_PATH_LOG_MAX	1024	/* the audited path */
#define CALL_CAP_MAX		1000000000	/* daily_call_cap */

/* A call handed to the relay: what its end record needs. */
struct vcall {
	TAILQ_ENTRY(vcall)	 entry;
	uint32_t		 callid;
	int64_t			 audit_id;
	int64_t			 org_id;
};
TAILQ_HEAD(vcall_list, vcall);


/* A call of this turn: decided, then written with the turn's. */
struct vpend {
	TAILQ_ENTRY(vpend)	 entry;
	struct blob		*b;		/* the request, until decided */
	uint32_t		 reqid;
	struct auth		 auth;
	int			 has_auth;
	struct call_capv	 cap;
	char			 tool[NAME_LEN_MAX + 1];	/* "": none */
	char			 method[sizeof(((struct call_request *)0)->method)];
	char			 logpath[CALL_PATH_LOG_MAX + 1];
	struct pack		 pk;		/* the request, key in it */
	struct vault_resp	 resp;		/* of a refusal */
	const char		*why;		/* its refused_by, NULL: none */
	int64_t			 audit_id;
	int			 refused;
	int			 counted;	/* 1 with others, -1 alone */
	int64_t			 oauth_sid;	/* waits for its refresh */
};
TAILQ_HEAD(vpend_list, vpend);
#define CALL_STARTS_MAX	64	/* calls in one transaction */

/* The request as the frontend sent it, split. */
struct call_in {
	const char	*method;
	char		*target;	/* path after /call/, query cut off */
	const char	*query;		/* raw, "" when none */
	const char	*headers;	/* CRLF lines */
	size_t		 headerslen;
	const char	*body;
	size_t		 bodylen;
};

/* Where the call goes. */
struct call_out {
	struct tool_row	 t;
	int		 have_tool;
	char		 asked[NAME_LEN_MAX + 1];	/* the name, unknown */
	char		 path[URL_LEN_MAX + 1];	/* upstream path, raw */
	char		 origin[URL_LEN_MAX + 1];	/* scheme://authority */
};

/* Candidates of a host, for /call/<full URL>. */
struct call_match {
	const char	*path;
	size_t		 best;
	int		 nbest;
	char		 names[CALL_TOOLS_MAX][NAME_LEN_MAX + 1];
};

/*
 * The tools calls name, kept while the registry stays as it is: an
 * entry serves only the registry version it was read at (see
 * vault_call_cache.c: any change of a tool, its bindings, its secrets or
 * anything else a call's decision reads moves it; the audit does not),
 * so a steady stream of calls skips the lookup and the parsing of the
 * bindings.  No secret is in a tool row.
 */
#define CALL_TOOL_CACHE	16
struct call_tool_ent {
	int64_t		 ver;
	int64_t		 org;
	char		 key[NAME_LEN_MAX + 1];	/* the name as asked */
	struct tool_row	 t;
	int		 set;
};
static struct call_tool_ent	 tcache[CALL_TOOL_CACHE];
static unsigned int		 tcache_next;

static struct vcall_list vcalls = TAILQ_HEAD_INITIALIZER(vcalls);
static struct vpend_list vpends = TAILQ_HEAD_INITIALIZER(vpends);
static struct vpend_list waiting = TAILQ_HEAD_INITIALIZER(waiting);
static int		 npends;
static struct event	 starts_ev;
static int		 starts_armed;
static struct {
	char		 now[STORE_TIME_MAX];	/* the rows' created_at */
	char		 day[16];		/* of the daily counts */
} turn;
static uint32_t		 next_callid = 1;

static void	 call_turn(void);
static void	 call_decide_all(void);
static void	 call_in_split(const struct call_request *,
		    const struct blob *, struct call_in *);
static void	 call_decide(struct vpend *);
static int	 call_has_row(const struct vpend *);
static int	 call_turn_write(void);
static int	 call_row(struct vpend *);
static void	 call_answer(struct vpend *, int);
static void	 call_pend_free(struct vpend *);
static void	 call_refuse(uint32_t, const struct auth *,
		    struct vault_resp *);
static int	 call_ends_insert(void);
static void	 call_ends_clear(void);
static void	 call_ends_arm(int);
static int	 call_audit(const struct auth *, const char *, const char *,
		    const char *, const char *, int, int64_t *);
static void	 call_log_path(const char *, const char *, char *, size_t);
static int	 call_deny_override(const struct auth *,
		    const struct call_in *, const struct call_out *,
		    struct vault_resp *);
static int	 call_resolve(const struct auth *, struct call_in *,
		    struct call_out *, struct vault_resp *, const char **);
static int	 call_by_name(const struct auth *, const char *,
		    struct call_out *, struct vault_resp *, const char **);
static int	 call_by_url(const struct auth *, const char *,
		    struct call_out *, struct vault_resp *, const char **);
static int	 call_match_fn(const struct store_tool_url *, void *);
static int	 call_tool_load(int64_t, const char *, struct tool_row *);
static int	 call_same_caller(const struct vpend *, const struct vpend *);
static int	 call_caps_take(void);
static void	 call_starts_timer(int, short, void *);
static void	 call_start(struct vpend *);
static int	 call_build(const struct auth *, struct call_in *,
		    struct call_out *, struct pack *, struct vault_resp *);
static char	*query_set(char *, const char *, const char *, size_t);
struct call_keys;
static int	 call_bind(const struct auth *, const char *, json_t *,
		    struct call_keys *, struct vault_resp *);
static void	 call_keys_clear(struct call_keys *);
static int	 header_bound(json_t *, const char *, size_t);
static int	 dot_segments(const char *);
static void	 call_target(struct call_out *, const char *);
static const char *call_now(time_t);
static void	 call_oauth_done(void *, int64_t, int, const char *);

/* ------------------------------------------------------------------ */
/* The request.                                                        */

/*
 * A request is checked for its shape as it arrives and queued: the
 * calls of one turn of the event loop are decided and written together
 * (call_turn()).
 */
void
call_request(struct blob *b)
{
	struct call_request	 cr;
	struct timeval		 tv = { 0, 0 };
	struct vpend		*p;

	memcpy(&cr, b->head, sizeof(cr));
	if ((uint64_t)cr.targetlen + cr.headerslen + cr.bodylen !=
	    b->datalen || memchr(cr.method, '\0', sizeof(cr.method)) == NULL ||
	    memchr(b->data, '\0', cr.targetlen + cr.headerslen) != NULL)
		fatalx("bad IMSG_CALL_REQUEST from frontend");
	explicit_bzero(&cr, sizeof(cr));
	if ((p = calloc(1, sizeof(*p))) == NULL)
		fatal("%s: calloc", __func__);
	p->b = b;
	p->reqid = b->id;
	pack_init(&p->pk);
	TAILQ_INSERT_TAIL(&vpends, p, entry);
	if (++npends == CALL_STARTS_MAX) {
		call_turn();
		return;
	}
	if (!starts_armed) {
		evtimer_set(&starts_ev, call_starts_timer, NULL);
		evtimer_add(&starts_ev, &tv);
		starts_armed = 1;
	}
}

static void
call_starts_timer(int fd, short ev, void *arg)
{
	starts_armed = 0;
	call_turn();
}

/*
 * The calls of one turn: decided in one read transaction, then their
 * caps and rows, the refusals' rows and the pending end records in one
 * write transaction; only after its commit is each answered or sent.
 * Fail closed: when it cannot be committed, every call of it with a
 * row to write is answered 503 and none is sent.
 */
static void
call_turn(void)
{
	struct vpend	*p;
	time_t		 t = time(NULL);
	int		 fail;

	if (starts_armed) {
		evtimer_del(&starts_ev);
		starts_armed = 0;
	}
	if (npends == 0)
		return;
	strlcpy(turn.now, call_now(t), sizeof(turn.now));
	call_day(t, turn.day, sizeof(turn.day));
	call_decide_all();
	fail = call_turn_write();
	vault_cork(1);
	while ((p = TAILQ_FIRST(&vpends)) != NULL) {
		TAILQ_REMOVE(&vpends, p, entry);
		if (p->oauth_sid != 0)
			TAILQ_INSERT_TAIL(&waiting, p, entry);
		else {
			call_answer(p, fail);
			call_pend_free(p);
		}
	}
	vault_cork(0);
	npends = 0;
	/* After the turn: a refresh that ends at once queues a new one. */
	while ((p = TAILQ_FIRST(&waiting)) != NULL) {
		TAILQ_REMOVE(&waiting, p, entry);
		oauth_refresh(p->auth.org_id, p->oauth_sid, call_oauth_done,
		    p->b);
		p->b = NULL;
		call_pend_free(p);
	}
}

/* The refresh ended, either way: the call is decided again. */
static void
call_oauth_done(void *arg, int64_t sid, int ok, const char *detail)
{
	call_request(arg);
}

/*
 * Every read of the turn's decisions in one read transaction, ended
 * before anything is written.
 */
static void
call_decide_all(void)
{
	struct vpend	*p;
	int		 rc;

	if ((rc = store_read_begin()) == 0)
		/* First: what the cache holds is of this version, or goes. */
		(void)ccache_begin();
	TAILQ_FOREACH(p, &vpends, entry) {
		if (rc == 0)
			call_decide(p);
		else {
			p->refused = 1;
			resp_error(&p->resp, 503, "the database cannot be "
			    "read — try again in a moment");
		}
		/* A call waiting for a refresh keeps its request. */
		if (p->oauth_sid == 0) {
			blob_free(p->b);
			p->b = NULL;
		}
	}
	if (rc == 0) {
		ccache_end();
		store_read_end();
	}
}

/* The request as the frontend sent it, split; in->target is to free. */
static void
call_in_split(const struct call_request *cr, const struct blob *b,
    struct call_in *in)
{
	char	*q;

	memset(in, 0, sizeof(*in));
	in->method = cr->method;
	if ((in->target = strndup(b->data, cr->targetlen)) == NULL)
		fatal("%s: strndup", __func__);
	in->query = "";
	if ((q = strchr(in->target, '?')) != NULL) {
		*q = '\0';
		in->query = q + 1;
	}
	in->headers = b->data + cr->targetlen;
	in->headerslen = cr->headerslen;
	in->body = b->data + cr->targetlen + cr->headerslen;
	in->bodylen = cr->bodylen;
}

/*
 * A call's decision (first failure wins): the token (auth), the tool
 * (resolution, access), the deny rules (policy), the cap already
 * reached; then its request for the relay, the key in it.  A refusal
 * is left in p->resp, with its refused_by when it is audited.
 */
static void
call_decide(struct vpend *p)
{
	struct call_request	 cr;
	struct call_in		 in;
	struct call_out		 out;
	int			 rc;

	memcpy(&cr, p->b->head, sizeof(cr));
	call_in_split(&cr, p->b, &in);
	strlcpy(p->method, cr.method, sizeof(p->method));
	p->refused = 1;
	out.have_tool = 0;
	out.asked[0] = '\0';
	/* auth: an unknown token has no org to audit in; it is logged. */
	if (!cr.has_token) {
		resp_error(&p->resp, 401, "not authenticated");
		goto done;
	}
	/* An identity token acts in the org X-Treg-Org names, uncached. */
	if ((rc = ccache_auth(cr.token_hash, &p->auth)) == 1 &&
	    (rc = identity_call_auth(&cr, &p->auth, &p->resp)) == 2)
		goto done;
	if (rc != 0) {
		if (rc == -1)
			resp_error(&p->resp, 503, "the database cannot be "
			    "read — try again in a moment");
		else
			resp_error(&p->resp, 401, "invalid token");
		log_info("call refused: %s from %s", rc == -1 ?
		    "database" : "invalid token", cr.peer);
		goto done;
	}
	strlcpy(p->auth.client, cr.client, sizeof(p->auth.client));
	p->has_auth = 1;
	call_log_path(in.target, in.query, p->logpath, sizeof(p->logpath));
	if (call_resolve(&p->auth, &in, &out, &p->resp, &p->why) == -1)
		goto done;
	call_log_path(out.path, in.query, p->logpath, sizeof(p->logpath));
	if (deny_check_by(ccache_deny_rules, &p->auth, out.t.host, out.path,
	    in.method, out.t.project_id, &p->resp) == -1 ||
	    call_deny_override(&p->auth, &in, &out, &p->resp) == -1) {
		/* 403: a rule; 400: an override the rules cannot read. */
		p->why = p->resp.status == 403 || p->resp.status == 400 ?
		    "policy" : NULL;
		goto done;
	}
	/* Over the cap: refused before a secret is unsealed. */
	if ((rc = call_cap_check(&p->auth, turn.day, &p->cap, &p->resp)) != 0) {
		p->why = rc == 1 ? "cap" : NULL;
		goto done;
	}
	/*
	 * A binding that does not resolve (its secret gone, a field missing
	 * or not a string, a kind its injector does not take) is audited
	 * as such: a 502, the tool's fault, not the caller's.
	 */
	p->why = NULL;
	/* An expired OAuth token: refreshed first (p->oauth_sid), or 502. */
	if (oauth_check(ccache_secret_get, p->auth.org_id, out.t.bindings,
	    out.t.name, &p->resp, &p->oauth_sid) == -1) {
		p->why = p->resp.status != 0 ? "upstream" : NULL;
		goto done;
	}
	if (call_build(&p->auth, &in, &out, &p->pk, &p->resp) == 0)
		p->refused = 0;
	else if (p->resp.status == 502)
		p->why = "resolution";
 done:
	if (out.have_tool) {
		strlcpy(p->tool, out.t.name, sizeof(p->tool));
		tool_row_clear(&out.t);
	} else
		strlcpy(p->tool, out.asked, sizeof(p->tool));
	free(in.target);
	explicit_bzero(&cr, sizeof(cr));
}

/* A call with a row to write: one to send, or a refusal audited. */
static int
call_has_row(const struct vpend *p)
{
	return (!p->refused || (p->why != NULL && p->has_auth));
}

/* 0 when committed (or nothing to write), -1 when nothing of it was. */
static int
call_turn_write(void)
{
	struct vpend	*p;
	int		 rc;

	TAILQ_FOREACH(p, &vpends, entry)
		if (call_has_row(p))
			break;
	if (p == NULL)
		return (0);
	if (store_begin() == -1) {
		log_warnx("audit: the call's record cannot be written: %s",
		    store_error());
		vault_metrics_db_error();
		return (-1);
	}
	rc = call_caps_take();
	TAILQ_FOREACH(p, &vpends, entry)
		if (rc == 0 && call_has_row(p))
			rc = call_row(p);
	/* The ends waiting for their batch go with it: one commit less. */
	if (rc == -1 || call_ends_insert() == -1 || store_commit() == -1) {
		store_rollback();
		return (-1);
	}
	call_ends_clear();
	return (0);
}

/* A refusal's row, or a call's cap and row (a 429 gets its own). */
static int
call_row(struct vpend *p)
{
	const char	*tool = p->tool[0] != '\0' ? p->tool : NULL;

	if (p->refused)
		return (call_audit(&p->auth, tool, p->method, p->logpath,
		    p->why, p->resp.status, NULL));
	if (p->counted == 1 || call_cap(&p->auth, turn.day, &p->cap, &p->resp) == 0)
		return (call_audit(&p->auth, tool, p->method, p->logpath,
		    NULL, 0, &p->audit_id));
	if (p->resp.status != 429)
		return (-1);
	p->refused = 1;
	p->why = "cap";
	return (call_audit(&p->auth, tool, p->method, p->logpath, "cap",
	    429, NULL));
}

/* After the turn's commit (or its failure): answered, or sent. */
static void
call_answer(struct vpend *p, int fail)
{
	if (fail && call_has_row(p)) {
		resp_error(&p->resp, 503, "the audit log cannot be written — "
		    "nothing was sent");
		call_refuse(p->reqid, NULL, &p->resp);
	} else if (p->refused)
		call_refuse(p->reqid, p->has_auth ? &p->auth : NULL, &p->resp);
	else
		call_start(p);
}

static void
call_pend_free(struct vpend *p)
{
	if (p->b != NULL)
		blob_free(p->b);
	pack_free(&p->pk);
	auth_clear(&p->auth);
	json_decref(p->resp.body);
	free(p->resp.text);
	free(p);
}

/* Its row is committed: the relay gets it. */
static void
call_start(struct vpend *p)
{
	struct call_start	 cs;

	memset(&cs, 0, sizeof(cs));
	cs.callid = call_track(p->audit_id, p->auth.org_id);
	cs.allow_private = vault_conf.relay_allow_private;
	cs.org_id = p->auth.org_id;
	cs.user_id = p->auth.user_id;
	vault_call_start(p->reqid, &cs, p->pk.buf, p->pk.len);
}

/*
 * A record the relay will tell the end of (IMSG_CALL_DONE with its
 * callid): a relayed call's, or a keyless run's request's
 * (vault_egress.c).  Its end is appended as call_done() says.
 */
uint32_t
call_track(int64_t audit_id, int64_t org_id)
{
	struct vcall	*vc;

	if ((vc = calloc(1, sizeof(*vc))) == NULL)
		fatal("%s: calloc", __func__);
	vc->callid = next_callid++;
	if (next_callid == 0)
		next_callid = 1;
	vc->audit_id = audit_id;
	vc->org_id = org_id;
	TAILQ_INSERT_TAIL(&vcalls, vc, entry);
	return (vc->callid);
}

/* Answer a refusal (X-Treg-Error); its row, if any, was written. */
static void
call_refuse(uint32_t reqid, const struct auth *a, struct vault_resp *resp)
{
	char	*text;

	if (resp->body == NULL)
		resp->body = json_object();
	if ((text = json_dumps(resp->body, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	vault_call_refused(reqid, resp->status, a != NULL ? a->org_id : 0,
	    a != NULL ? a->user_id : 0, text, strlen(text));
	free(text);
}

static int
call_audit(const struct auth *a, const char *tool, const char *method,
    const char *path, const char *refused_by, int status, int64_t *id)
{
	struct store_call	 c;

	audit_call_init(&c, a, tool, method, path, refused_by, status,
	    turn.now);
	if (store_call_insert(&c, id) == -1) {
		log_warnx("audit: the call's record cannot be written: %s",
		    store_error());
		vault_metrics_db_error();
		return (-1);
	}
	return (0);
}

/* The path as audited: no query values, only the parameter names. */
static void
call_log_path(const char *path, const char *query, char *buf, size_t len)
{
	const char	*p, *e;
	size_t		 n, o;

	strlcpy(buf, *path == '/' ? "" : "/", len);
	strlcat(buf, path, len);
	for (p = query; *p != '\0'; p = *e ? e + 1 : e) {
		if ((e = strchr(p, '&')) == NULL)
			e = p + strlen(p);
		n = strcspn(p, "=&");
		if ((o = strlen(buf)) + n + 2 > len)
			break;
		buf[o] = p == query ? '?' : '&';
		memcpy(buf + o + 1, p, n);
		buf[o + 1 + n] = '\0';
	}
}

/* ------------------------------------------------------------------ */
/* Resolution.                                                         */

/*
 * The length of a path separator at p, 0 if none: "/", and what an
 * upstream may read as one ("\\", "%2F", "%5C").
 */
static size_t
path_sep(const char *p)
{
	if (*p == '/' || *p == '\\')
		return (1);
	if (p[0] == '%' && (p[1] == '2' || p[1] == '5') && p[2] != '\0' &&
	    strchr(p[1] == '2' ? "fF" : "cC", p[2]) != NULL)
		return (3);
	return (0);
}

/*
 * A "." or ".." segment (or its %2e spelling), between any separators an
 * upstream may normalise (path_sep), would let it take the call outside
 * the tool's base path and past the deny rules, which see the path as
 * sent: refused.
 */
static int
dot_segments(const char *path)
{
	const char	*p, *e;
	size_t		 n, dots;

	for (p = path; *p != '\0'; p = *e ? e + path_sep(e) : e) {
		for (e = p; *e != '\0' && path_sep(e) == 0; e++)
			;
		for (n = 0, dots = 0; p + n < e; dots++) {
			if (p[n] == '.')
				n++;
			else if (e - (p + n) >= 3 && p[n] == '%' &&
			    p[n + 1] == '2' && (p[n + 2] == 'e' ||
			    p[n + 2] == 'E'))
				n += 3;
			else
				break;
		}
		/* "..;x" too: Tomcat, Jetty and Spring read it as "..". */
		if ((p + n == e || p[n] == ';') && (dots == 1 || dots == 2))
			return (1);
	}
	return (0);
}

/*
 * The method an override header asks the upstream to act as (Rails,
 * Express's method-override and Google's APIs honour them): the deny
 * rules see it as well as the real one, or a POST carrying
 * "X-HTTP-Method-Override: DELETE" would pass a rule on DELETE.  The
 * value is one method: a list ("DELETE,GET": Express acts on the first)
 * or the header repeated would let the rules check another method than
 * the upstream acts on, so either is refused (400); empty is none.
 */
static int
call_deny_override(const struct auth *a, const struct call_in *in,
    const struct call_out *out, struct vault_resp *resp)
{
	static const char *const names[] = {
		"X-HTTP-Method-Override", "X-HTTP-Method",
		"X-Method-Override", NULL
	};
	const char	*p, *e, *v, *end = in->headers + in->headerslen;
	char		 m[DENY_METHOD_MAX + 1];
	size_t		 i, n, len;
	int		 seen[3] = { 0, 0, 0 };

	for (p = in->headers; p < end && (e = memmem(p, end - p, "\r\n",
	    2)) != NULL; p = e + 2) {
		for (i = 0; names[i] != NULL; i++) {
			len = strlen(names[i]);
			if ((size_t)(e - p) > len && p[len] == ':' &&
			    strncasecmp(p, names[i], len) == 0)
				break;
		}
		if (names[i] == NULL)
			continue;
		for (v = p + len + 1; v < e && (*v == ' ' || *v == '\t'); v++)
			;
		for (n = e - v; n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t');
		    n--)
			;
		if (n > DENY_METHOD_MAX)
			goto several;
		for (len = 0; len < n && http_tchar(v[len]); len++)
			m[len] = toupper((unsigned char)v[len]);
		m[len] = '\0';
		if (seen[i]++ || len < n)
			goto several;
		if (n > 0 && deny_check_by(ccache_deny_rules, a, out->t.host,
		    out->path, m, out->t.project_id, resp) == -1)
			return (-1);
	}
	return (0);
 several:
	resp_error(resp, 400, "%s may name one method, not several (a list, "
	    "or the header sent twice)", names[i]);
	return (-1);
}

static int
call_resolve(const struct auth *a, struct call_in *in, struct call_out *out,
    struct vault_resp *resp, const char **why)
{
	if (dot_segments(in->target)) {
		*why = "resolution";
		resp_error(resp, 400, "the path may not have . or .. "
		    "segments");
		return (-1);
	}
	if (strncasecmp(in->target, "https:/", 7) == 0 ||
	    strncasecmp(in->target, "http:/", 6) == 0)
		return (call_by_url(a, in->target, out, resp, why));
	return (call_by_name(a, in->target, out, resp, why));
}

/* The tool's origin and the upstream path: base path + rest. */
static void
call_target(struct call_out *out, const char *rest)
{
	const char	*bp;
	size_t		 n;

	n = url_path_prefix(out->t.base_url, &bp);
	strlcpy(out->origin, out->t.base_url, sizeof(out->origin));
	out->origin[bp - out->t.base_url] = '\0';
	if (n + 1 > sizeof(out->path))
		n = sizeof(out->path) - 1;
	memcpy(out->path, bp, n);
	out->path[n] = '\0';
	if (*rest != '\0' && *rest != '/')
		strlcat(out->path, "/", sizeof(out->path));
	strlcat(out->path, rest, sizeof(out->path));
	if (out->path[0] == '\0')
		strlcpy(out->path, "/", sizeof(out->path));
}

static int
call_by_name(const struct auth *a, const char *target, struct call_out *out,
    struct vault_resp *resp, const char **why)
{
	char		 raw[NAME_LEN_MAX * 3 + 1], name[NAME_LEN_MAX + 1];
	const char	*rest;
	size_t		 n, i, o;
	int		 rc, h, l;

	n = strcspn(target, "/");
	rest = target + n;
	*why = "resolution";
	if (n == 0 || n >= sizeof(raw)) {
		resp_error(resp, 404, "no such tool in this org");
		return (-1);
	}
	memcpy(raw, target, n);
	raw[n] = '\0';
	for (i = o = 0; i < n && o < NAME_LEN_MAX; i++, o++) {
		if (raw[i] == '%' && i + 2 < n + 1 &&
		    sscanf(raw + i + 1, "%1x%1x", &h, &l) == 2) {
			name[o] = h * 16 + l;
			i += 2;
		} else
			name[o] = raw[i];
	}
	name[o] = '\0';
	if (i < n || strlen(name) != o || !valid_name(name)) {
		resp_error(resp, 404, "no such tool in this org");
		return (-1);
	}
	if ((rc = call_tool_load(a->org_id, name, &out->t)) == -1) {
		db_fail(resp, "tool lookup");
		*why = NULL;
		return (-1);
	}
	if (rc == 1) {
		/* Its refusal's row names what was asked for. */
		strlcpy(out->asked, name, sizeof(out->asked));
		resp_error(resp, 404, "no tool '%s' in this org", name);
		return (-1);
	}
	out->have_tool = 1;
	if (tool_access_check(a, &out->t, resp) == -1) {
		*why = "access";
		return (-1);
	}
	call_target(out, rest);
	return (0);
}

/* tool_load() through the cache: the row is the caller's to clear. */
static int
call_tool_load(int64_t org, const char *name, struct tool_row *t)
{
	struct call_tool_ent	*e;
	int64_t			 ver = ccache_version();
	int			 i, rc;

	for (i = 0; ver != -1 && i < CALL_TOOL_CACHE; i++) {
		e = &tcache[i];
		if (e->set && e->ver == ver && e->org == org &&
		    strcmp(e->key, name) == 0) {
			*t = e->t;
			json_incref(t->bindings);
			json_incref(t->cli);
			return (0);
		}
	}
	if ((rc = tool_load(org, name, t)) != 0 || ver == -1)
		return (rc);
	e = &tcache[tcache_next++ % CALL_TOOL_CACHE];
	if (e->set)
		tool_row_clear(&e->t);
	e->ver = ver;
	e->org = org;
	strlcpy(e->key, name, sizeof(e->key));
	e->t = *t;
	json_incref(e->t.bindings);
	json_incref(e->t.cli);
	e->set = 1;
	return (0);
}

static int
call_match_fn(const struct store_tool_url *t, void *arg)
{
	struct call_match	*m = arg;
	const char		*bp;
	size_t			 n;

	n = url_path_prefix(t->base_url, &bp);
	if (strncmp(m->path, bp, n) != 0 ||
	    (m->path[n] != '\0' && m->path[n] != '/'))
		return (0);
	if (m->nbest > 0 && n < m->best)
		return (0);
	if (m->nbest == 0 || n > m->best) {
		m->best = n;
		m->nbest = 0;
	}
	if (m->nbest < CALL_TOOLS_MAX)
		strlcpy(m->names[m->nbest++], t->name, NAME_LEN_MAX + 1);
	return (0);
}

/*
 * /call/https://host/path: the tools of that host whose base path is the
 * longest prefix of path on a segment boundary.  Of those the caller may
 * use, one wins; two are a tie (409, naming them); none is 403, naming
 * none.
 */
static int
call_by_url(const struct auth *a, const char *target, struct call_out *out,
    struct vault_resp *resp, const char **why)
{
	struct call_match	*m;
	struct tool_row		 t;
	char			 host[HOST_LEN_MAX], tie[512];
	const char		*p, *path;
	size_t			 n, i;
	int			 usable = 0, rc = -1;

	p = strchr(target, ':') + 1;
	while (*p == '/')
		p++;
	n = strcspn(p, "/");
	path = p + n;
	*why = "resolution";
	if (n == 0 || n >= sizeof(host)) {
		resp_error(resp, 404, "no registered tool for that upstream");
		return (-1);
	}
	for (i = 0; i < n; i++)
		host[i] = tolower((unsigned char)p[i]);
	host[n] = '\0';
	if ((m = calloc(1, sizeof(*m))) == NULL)
		fatal("%s: calloc", __func__);
	m->path = path;
	if (store_tools_by_host(a->org_id, host, call_match_fn, m) == -1) {
		db_fail(resp, "tools by host");
		*why = NULL;
		goto out;
	}
	tie[0] = '\0';
	for (i = 0; i < (size_t)m->nbest; i++) {
		if (call_tool_load(a->org_id, m->names[i], &t) != 0)
			continue;
		if (tool_usable(a, t.name, t.bundle, t.project_id)) {
			if (usable++ == 0) {
				out->t = t;
				out->have_tool = 1;
			} else
				tool_row_clear(&t);
			strlcat(tie, usable > 1 ? "', '" : "'", sizeof(tie));
			strlcat(tie, m->names[i], sizeof(tie));
		} else
			tool_row_clear(&t);
	}
	/* treg's words (resolve.py), naming the host the caller typed. */
	if (m->nbest == 0)
		resp_error(resp, 404, "no registered tool for upstream '%s'",
		    host);
	else if (usable == 0) {
		*why = "access";
		resp_error(resp, 403, "you don't have access to the registered "
		    "tool for '%s' in this team — an admin can grant it "
		    "(`treg org access <you> …`)", host);
	} else if (usable > 1) {
		resp_error(resp, 409, "ambiguous: multiple tools match '%s': "
		    "%s'; call one by name as /call/<name>/<path>", host, tie);
	} else {
		/* The path as given: the base path is a prefix of it. */
		call_target(out, "");
		strlcpy(out->path, *path ? path : "/", sizeof(out->path));
		rc = 0;
	}
 out:
	free(m);
	return (rc);
}

/* ------------------------------------------------------------------ */
/* Daily call caps.                                                    */

/* The rows' created_at: formatted once a second, not once a row. */
static const char *
call_now(time_t t)
{
	static time_t	 last = -1;
	static char	 buf[STORE_TIME_MAX];

	if (t != last) {
		iso_time(t, buf, sizeof(buf));
		last = t;
	}
	return (buf);
}



static int
call_same_caller(const struct vpend *p, const struct vpend *q)
{
	return (!q->refused && q->counted == 0 &&
	    q->auth.org_id == p->auth.org_id &&
	    q->auth.user_id == p->auth.user_id);
}

/*
 * Counted in the database, so it holds across workers and hosts: the
 * calls of one caller in this turn in one statement, or, when together
 * they would pass the cap, one by one (call_cap()).
 */
static int
call_caps_take(void)
{
	struct vpend	*p, *q;
	int64_t		 n;
	int		 rc;

	TAILQ_FOREACH(p, &vpends, entry) {
		if (p->refused || p->counted != 0)
			continue;
		for (n = 0, q = p; q != NULL; q = TAILQ_NEXT(q, entry))
			n += call_same_caller(p, q);
		if (n == 1)
			continue;
		if ((rc = store_call_cap_take(p->auth.org_id, p->auth.user_id,
		    turn.day, n, p->cap.has ? p->cap.cap : INT64_MAX)) == -1) {
			db_fail(&p->resp, "daily call count");
			return (-1);
		}
		for (q = TAILQ_NEXT(p, entry); q != NULL;
		    q = TAILQ_NEXT(q, entry))
			if (call_same_caller(p, q))
				q->counted = rc == 0 ? 1 : -1;
		p->counted = rc == 0 ? 1 : -1;
	}
	return (0);
}



/* ------------------------------------------------------------------ */
/* The request for the relay, with the key in it.                      */

/* Every name= of the query replaced by one name=value (value encoded). */
static char *
query_set(char *q, const char *name, const char *val, size_t vlen)
{
	char			*out, *p, *e;
	size_t			 n = 0, nl = strlen(name), size;

	size = strlen(q) + nl + 3 * vlen + 3;
	if ((out = malloc(size)) == NULL)
		fatal("%s: malloc", __func__);
	for (p = q; *p != '\0'; p = *e ? e + 1 : e) {
		if ((e = strchr(p, '&')) == NULL)
			e = p + strlen(p);
		if (strncmp(p, name, nl) == 0 && (p[nl] == '=' ||
		    p + nl == e))
			continue;
		if (n > 0)
			out[n++] = '&';
		memcpy(out + n, p, e - p);
		n += e - p;
	}
	if (n > 0)
		out[n++] = '&';
	memcpy(out + n, name, nl);
	n += nl;
	out[n++] = '=';
	n += pct_encode(out + n, val, vlen);
	out[n] = '\0';
	freezero(q, strlen(q) + 1);
	return (out);
}

/* A client header line whose name a header binding sets: dropped. */
static int
header_bound(json_t *bindings, const char *line, size_t len)
{
	const char	*colon, *loc, *name;
	json_t		*b;
	size_t		 i;

	if ((colon = memchr(line, ':', len)) == NULL)
		return (1);
	json_array_foreach(bindings, i, b) {
		loc = json_string_value(json_object_get(b, "location"));
		name = json_string_value(json_object_get(b, "name"));
		if (loc != NULL && name != NULL && strcmp(loc, "header") == 0 &&
		    strlen(name) == (size_t)(colon - line) &&
		    strncasecmp(line, name, colon - line) == 0)
			return (1);
	}
	return (0);
}

/* What the bindings make of the secrets: header lines, a query, a set. */
struct call_keys {
	struct isecret	 secs[CALL_SECRETS_MAX];
	size_t		 nsecs;
	char		*lines[BINDINGS_MAX];
	size_t		 nlines;
	char		*query;
	struct redset	 rs;
};
static struct call_keys	 keys;

static void
call_keys_clear(struct call_keys *k)
{
	size_t	 i;

	for (i = 0; i < k->nsecs; i++)
		isecret_close(&k->secs[i]);
	for (i = 0; i < k->nlines; i++)
		freezero(k->lines[i], strlen(k->lines[i]) + 1);
	if (k->query != NULL)
		freezero(k->query, strlen(k->query) + 1);
	redset_clear(&k->rs);
	explicit_bzero(k->lines, k->nlines * sizeof(k->lines[0]));
	k->nsecs = k->nlines = 0;
	k->query = NULL;
}

/* Each binding in order: the header set, or the query parameter replaced. */
static int
call_bind(const struct auth *a, const char *tool, json_t *b,
    struct call_keys *k, struct vault_resp *resp)
{
	struct isecret	*sc;
	const char	*loc, *name, *fmt;
	char		*val, *line;
	size_t		 vlen, j;
	int64_t		 sid;

	sid = json_integer_value(json_object_get(b, "secret_id"));
	for (j = 0; j < k->nsecs; j++)
		if (k->secs[j].id == sid)
			break;
	if (j == k->nsecs) {
		if (k->nsecs >= CALL_SECRETS_MAX || isecret_open_by(
		    ccache_secret_get, a->org_id, sid, tool, &k->secs[j],
		    resp) == -1)
			return (-1);
		k->nsecs++;
	}
	sc = &k->secs[j];
	fmt = json_string_value(json_object_get(b, "format"));
	if (inject_value(sc, b, fmt, tool, resp, &val, &vlen) == -1)
		return (-1);
	loc = json_string_value(json_object_get(b, "location"));
	name = json_string_value(json_object_get(b, "name"));
	if (loc == NULL || name == NULL) {
		freezero(val, vlen + 1);
		resp_error(resp, 502, "tool '%s': a binding without location "
		    "or name", tool);
		return (-1);
	}
	if (!sc->param && (redset_add(&k->rs, val, vlen) == -1 ||
	    redset_secret(&k->rs, sc) == -1)) {
		freezero(val, vlen + 1);
		resp_error(resp, 502, "tool '%s': its secrets are too many or "
		    "too large to be masked (over %d parts or %d bytes) — use "
		    "fewer or smaller secrets", tool, REDSET_MAX,
		    REDSET_BYTES_MAX);
		return (-1);
	}
	if (strcmp(loc, "header") == 0 && strpbrk(val, "\r\n") != NULL) {
		freezero(val, vlen + 1);
		resp_error(resp, 502, "tool '%s': the secret '%s' has a line "
		    "break and cannot be sent in the header '%s'", tool,
		    sc->name, name);
		return (-1);
	}
	if (strcmp(loc, "query") == 0)
		k->query = query_set(k->query, name, val, vlen);
	else if (k->nlines < BINDINGS_MAX) {
		if (asprintf(&line, "%s: %s", name, val) == -1)
			fatal("%s: asprintf", __func__);
		k->lines[k->nlines++] = line;
	}
	freezero(val, vlen + 1);
	return (0);
}

/*
 * Packed for the relay: method, url, the headers (the client's, then one
 * per header binding), body, then the redaction set: every value as
 * injected, each secret raw, trimmed and its JSON leaves (param secrets
 * are never masked).
 */
static int
call_build(const struct auth *a, struct call_in *in, struct call_out *out,
    struct pack *pk, struct vault_resp *resp)
{
	struct call_keys	*k;
	const char		*p, *e, *end = in->headers + in->headerslen;
	char			*url = NULL;
	json_t			*b;
	size_t			 i, nh;
	int			 rc = -1;

	/* One for every call: call_keys_clear() leaves it zeroed. */
	k = &keys;
	if ((k->query = strdup(in->query)) == NULL)
		fatal("%s: strdup", __func__);
	json_array_foreach(out->t.bindings, i, b)
		if (call_bind(a, out->t.name, b, k, resp) == -1)
			goto out;
	if (asprintf(&url, "%s%s%s%s", out->origin, out->path,
	    *k->query ? "?" : "", k->query) == -1)
		fatal("%s: asprintf", __func__);
	pack_str(pk, in->method);
	pack_str(pk, url);
	nh = k->nlines;
	for (p = in->headers; p < end && (e = memmem(p, end - p, "\r\n",
	    2)) != NULL; p = e + 2)
		if (!header_bound(out->t.bindings, p, e - p))
			nh++;
	pack_u32(pk, nh);
	for (p = in->headers; p < end && (e = memmem(p, end - p, "\r\n",
	    2)) != NULL; p = e + 2)
		if (!header_bound(out->t.bindings, p, e - p))
			pack_bytes(pk, p, e - p);
	for (i = 0; i < k->nlines; i++)
		pack_str(pk, k->lines[i]);
	pack_bytes(pk, in->body, in->bodylen);
	pack_u32(pk, k->rs.n);
	for (i = 0; i < k->rs.n; i++)
		pack_bytes(pk, k->rs.v[i], k->rs.len[i]);
	rc = 0;
 out:
	if (url != NULL)
		freezero(url, strlen(url) + 1);
	call_keys_clear(k);
	return (rc);
}

/* ------------------------------------------------------------------ */
/* How it ended (relay -> vault).                                      */

/*
 * End records are written in batches: with the next turn's calls (one
 * commit for both), or in a transaction of their own after CALL_ENDS_MS,
 * and before GET /calls reads them or the vault stops.  The call's own
 * row was written before it was sent.  An end that cannot be committed
 * (the database locked by another process, full, unreachable) is kept
 * and tried again every CALL_ENDS_RETRY_MS until it is on record; at
 * most CALL_ENDS_KEPT are kept (calls cannot start while their rows
 * cannot be written, so only those in flight then can end meanwhile).
 */
#define CALL_ENDS_MS		20
#define CALL_ENDS_RETRY_MS	250
#define CALL_ENDS_KEPT		65536
struct call_end_rec {
	struct store_call_end	 e;
	char			 at[STORE_TIME_MAX];
};
static struct call_end_rec	*ends;
static int			 nends, capends;
static int			 ends_failed;	/* tries failed in a row */
static struct event		 ends_timer;
static int			 ends_armed;

static void
call_ends_timer(int fd, short ev, void *arg)
{
	ends_armed = 0;
	call_flush();
}

static void
call_ends_arm(int ms)
{
	struct timeval	 tv = { 0, ms * 1000 };

	if (ends_armed)
		evtimer_del(&ends_timer);
	evtimer_set(&ends_timer, call_ends_timer, NULL);
	evtimer_add(&ends_timer, &tv);
	ends_armed = 1;
}

/* The pending end records, in the caller's transaction. */
static int
call_ends_insert(void)
{
	int	 i;

	for (i = 0; i < nends; i++) {
		ends[i].e.created_at = ends[i].at;
		if (store_call_end_insert(&ends[i].e) == -1)
			return (-1);
	}
	return (0);
}

/* Written: none is pending. */
static void
call_ends_clear(void)
{
	if (ends_armed) {
		evtimer_del(&ends_timer);
		ends_armed = 0;
	}
	if (ends_failed > 0)
		log_info("audit: the end of %d calls recorded after %d tries",
		    nends, ends_failed + 1);
	ends_failed = 0;
	if (nends > 0)
		explicit_bzero(ends, nends * sizeof(ends[0]));
	nends = 0;
}

void
call_flush(void)
{
	int	 rc;

	if (nends == 0)
		return;
	if ((rc = store_begin()) == 0 && (rc = call_ends_insert()) == 0)
		rc = store_commit();
	if (rc == 0) {
		call_ends_clear();
		return;
	}
	store_rollback();
	if (ends_failed++ == 0)
		log_warnx("audit: the end of %d calls cannot be written yet, "
		    "kept and tried again: %s", nends, store_error());
	vault_metrics_db_error();
	call_ends_arm(CALL_ENDS_RETRY_MS);
}

/*
 * What the relay has said already, then the pending ends committed:
 * before a read of the calls.  The relay writes a call's end here
 * before it answers the frontend, so a client that got its answer
 * finds its call ended.
 */
void
call_exits_read(void)
{
	(void)vault_read_peer(vault_relay);
	call_flush();
}

void
call_done(const struct call_done *cdp)
{
	static const char *const why[] = { NULL, "ssrf", "upstream" };
	struct call_done	 cd = *cdp;
	struct store_call_end	*e;
	struct vcall		*vc;

	TAILQ_FOREACH(vc, &vcalls, entry)
		if (vc->callid == cd.callid)
			break;
	if (vc == NULL || cd.refused > CALL_UPSTREAM)
		fatalx("bad IMSG_CALL_DONE from relay");
	TAILQ_REMOVE(&vcalls, vc, entry);
	if (nends == CALL_ENDS_KEPT) {
		log_warnx("audit: %d call ends wait for the database, the "
		    "oldest is dropped", nends);
		memmove(ends, ends + 1, (nends - 1) * sizeof(*ends));
		nends--;
	}
	if (nends == capends) {
		if ((ends = recallocarray(ends, capends, capends + 64,
		    sizeof(*ends))) == NULL)
			fatal("%s: recallocarray", __func__);
		capends += 64;
	}
	e = &ends[nends].e;
	strlcpy(ends[nends].at, call_now(time(NULL)), sizeof(ends[nends].at));
	e->call_id = vc->audit_id;
	e->org_id = vc->org_id;
	e->has_status = cd.status != 0;
	e->status_code = cd.status;
	e->refused_by = why[cd.refused];
	e->duration_ms = cd.duration_ms;
	e->bytes = cd.bytes;
	e->redacted = cd.redacted;
	e->created_at = ends[nends].at;
	nends++;
	if (!ends_armed)
		call_ends_arm(CALL_ENDS_MS);
	free(vc);
}

/* ------------------------------------------------------------------ */
/* daily_call_cap and used_today in the member and agent views.        */

/*
 * The member routes (vault_org.c) answer as they always did; these two
 * hooks around them check and store daily_call_cap of PATCH
 * .../access and add the two fields to every view of a membership.
 */
int
call_view_before(struct vault_req *req, struct vault_resp *resp)
{
	int64_t	 cap;
	int	 sent, has;

	if (req->route == ROUTE_CALLS_LIST)
		call_exits_read();	/* the list shows how calls ended */
	if (req->route != ROUTE_MEMBER_ACCESS)
		return (0);
	return (call_cap_field(req->body, &sent, &has, &cap, resp));
}

/*
 * daily_call_cap of a request body, the one reading of it (PATCH
 * .../access, POST .../agents): absent (*sent 0); null or -1, treg's
 * "no cap" (*has 0); or a count from 0 to CALL_CAP_MAX.  Anything else
 * is answered 422: 0, or -1.
 */
int
call_cap_field(json_t *body, int *sent, int *has, int64_t *cap,
    struct vault_resp *resp)
{
	json_t	*v;

	*sent = *has = 0;
	*cap = 0;
	if (body == NULL || (v = json_object_get(body,
	    "daily_call_cap")) == NULL)
		return (0);
	*sent = 1;
	if (json_is_null(v) || (json_is_integer(v) &&
	    json_integer_value(v) == -1))
		return (0);
	if (json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) <= CALL_CAP_MAX) {
		*has = 1;
		*cap = json_integer_value(v);
		return (0);
	}
	resp_error(resp, 422, "field 'daily_call_cap' must be a whole number "
	    "of calls a day from 0 to %d, or null or -1 for no cap",
	    CALL_CAP_MAX);
	return (-1);
}

static void
call_view_add(int64_t org, json_t *view)
{
	json_t	*uid = json_object_get(view, "user_id");

	if (json_is_integer(uid) &&
	    call_usage(org, json_integer_value(uid), view) == -1)
		log_warnx("daily call usage: %s", store_error());
}

void
call_view_after(struct vault_req *req, struct vault_resp *resp)
{
	json_t	*e;
	int64_t	 cap;
	size_t	 i;
	int	 sent, has;

	if (resp->status != 200 || resp->body == NULL)
		return;
	switch (req->route) {
	case ROUTE_MEMBER_ACCESS:
		if (call_cap_field(req->body, &sent, &has, &cap, resp) == 0 &&
		    sent && store_call_cap_set(req->id1, req->id2, has,
		    cap) == -1) {
			db_fail(resp, "daily call cap");
			return;
		}
		/* FALLTHROUGH */
	case ROUTE_AGENTS_CREATE:
		call_view_add(req->id1, resp->body);
		break;
	case ROUTE_MEMBERS_LIST:
	case ROUTE_AGENTS_LIST:
		json_array_foreach(resp->body, i, e)
			call_view_add(req->id1, e);
		break;
	default:
		break;
	}
}
