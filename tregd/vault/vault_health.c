/*
 * vault_health.c: credential health (SPEC.md section 11, treg's
 * `treg health --run').
 *
 * POST /health/run proves the org's credentials the way treg does: each
 * tool with a health_check ({"path", "method", "expect_status"}) is
 * probed at base_url + path with its bindings applied, and the verdict
 * is written on the tool's secrets (params never judged): with
 * expect_status, that status is ok and any other invalid; without, an
 * answer below 400 is ok, 429 and 5xx say nothing of the key (unknown),
 * any other 4xx is invalid; no answer is unknown.  A secret shared by
 * several tools keeps the worst verdict of the run.  Before the probes,
 * the OAuth secrets of the tools are refreshed when their access token
 * expired (vault_oauth.c): a refresh that fails marks the secret invalid
 * ("oauth refresh failed: ...") and its tools are not probed; a tool
 * without a probe marks its refreshable OAuth secrets ok ("oauth refresh
 * ok"), its other secrets keep their verdict (treg's health.py).  GET
 * /health shows status, detail and checked_at.  The owners of the
 * secrets found invalid are alerted as treg alerts them: one POST
 * {"owner", "invalid_credentials"} to the webhook_url of the owner's
 * membership (of this org first, else another of theirs, else an
 * owner's of this org), through the relay's SSRF guard too; what the
 * webhook answers changes nothing.
 *
 * The vault never opens a socket: each probe is an IMSG_FETCH_START to
 * the relay (vault_req.c sends it), which makes it through the same SSRF
 * guard and TLS checks as /call and answers this worker with the status
 * (relay_fetch.c).  The answer to the client waits for every probe of
 * its run; the probe's request holds the key and is zeroed once sent.
 */

#include <sys/types.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack.h"
#include "vault.h"

#define HEALTH_RUNS_MAX		16	/* in flight on one worker */
#define HEALTH_TOOLS_MAX	256	/* tools looked at by one run */
#define HEALTH_SECRETS_MAX	512	/* secrets judged by one run */
#define HEALTH_SWEEP_ORGS_MAX	100000	/* orgs of one periodic run */

enum hstat { H_NONE, H_OK, H_UNKNOWN, H_INVALID };	/* worse: higher */
static const char *const hstat_name[] = { "", "ok", "unknown", "invalid" };

/* A tool of the org, as read, and its probe. */
struct htool {
	int64_t		 id;
	char		*name;
	char		*base_url;
	json_t		*bindings;
	json_t		*hc;		/* NULL: no probe */
	uint32_t	 fetchid;	/* its probe's, 0: none sent */
	int		 expect;	/* expect_status, 0: none */
	int		 done;
	enum hstat	 st;
	char		 detail[160];
};

/* A secret the run judges: its OAuth state, then its verdict. */
struct hsecret {
	int64_t		 id;
	int		 oauth;		/* OAUTH_NONE, _FRESH, _STALE */
	int		 failed;	/* its refresh failed */
	enum hstat	 st;
	char		 detail[160];
};

struct hrun {
	TAILQ_ENTRY(hrun)	 entry;
	uint32_t		 reqid;
	int			 sweep;		/* the periodic run's: no
						   one to answer */
	int64_t			 org_id;
	struct htool		 t[HEALTH_TOOLS_MAX];
	size_t			 nt;
	struct hsecret		 s[HEALTH_SECRETS_MAX];
	size_t			 ns;
	size_t			 refreshing;	/* refreshes not back */
	size_t			 pending;	/* probes not back */
};
/* What a run reports beyond its verdicts (health_row). */
struct hreport {
	int64_t		 org_id;
	json_t		*all;
	json_t		*expiring;
};
static TAILQ_HEAD(, hrun)	 hruns = TAILQ_HEAD_INITIALIZER(hruns);
static int			 nhruns;
static uint32_t			 fetch_next;

/*
 * The periodic run (tregd.conf "health interval"): every org that has a
 * tool, one after the other, on worker 0 only.
 */
static struct {
	struct event	 tick;		/* every interval */
	struct event	 step;		/* the next org, on the next turn */
	int		 set;
	int		 interval;	/* armed with, 0: off */
	int64_t		*orgs;
	size_t		 n, next;
	int		 running;
} sweep;

static void	health_run(struct vault_req *, struct vault_resp *);
static int	hrun_start(int64_t, uint32_t, int, struct vault_resp *);
static void	sweep_tick(int, short, void *);
static void	sweep_step(int, short, void *);
static int	sweep_org(const struct store_org_row *, void *);
static int	health_tool(const struct store_tool_item *, void *);
static int	probe_method_ok(json_t *);
static struct hsecret *hrun_secret(struct hrun *, int64_t);
static void	hrun_refreshed(void *, int64_t, int, const char *);
static void	hrun_probes(struct hrun *);
static int	probe_build(int64_t, const struct htool *, struct pack *,
		    char *, size_t);
static char	*query_add(char *, const char *, const char *, size_t);
static void	hrun_judge(struct hrun *);
static void	hsecret_verdict(struct hsecret *, enum hstat, const char *);
static void	hrun_finish(struct hrun *);
static void	hrun_free(struct hrun *);
static int	health_row(const struct store_secret_row *, void *);
static int	marked_one(const char *, void *);
static int	owner_row(const struct store_secret_item *, void *);
static void	hrun_alert(int64_t, json_t *, json_t *);
static int	webhook_url(const char *, void *);

const struct vault_route vault_health_routes[] = {
	{ ROUTE_HEALTH_RUN,	ROLE_VIEWER,	health_run },
	{ ROUTE_NONE,		ROLE_NONE,	NULL }
};

static int
health_tool(const struct store_tool_item *t, void *arg)
{
	struct hrun	*r = arg;
	struct htool	*h;

	if (r->nt >= HEALTH_TOOLS_MAX)
		return (0);
	h = &r->t[r->nt++];
	h->id = t->id;
	if ((h->name = strdup(t->name)) == NULL ||
	    (h->base_url = strdup(t->base_url)) == NULL)
		fatal("%s: strdup", __func__);
	if ((h->bindings = json_loads(t->bindings, 0, NULL)) == NULL ||
	    !json_is_array(h->bindings)) {
		json_decref(h->bindings);
		h->bindings = json_array();
	}
	/* A malformed health_check is not a probe (treg ignores it too). */
	if (t->health_check != NULL &&
	    (h->hc = json_loads(t->health_check, 0, NULL)) != NULL &&
	    (!json_is_object(h->hc) ||
	    !json_is_string(json_object_get(h->hc, "path")))) {
		json_decref(h->hc);
		h->hc = NULL;
	}
	if (h->hc != NULL && !probe_method_ok(json_object_get(h->hc,
	    "method"))) {
		json_decref(h->hc);
		h->hc = NULL;
	}
	if (h->hc != NULL)
		h->expect = json_integer_value(json_object_get(h->hc,
		    "expect_status"));
	return (0);
}

/* A probe's method: absent (GET), or a method's shape (A-Z, short). */
static int
probe_method_ok(json_t *m)
{
	const char	*s;
	size_t		 i;

	if (m == NULL || json_is_null(m))
		return (1);
	if ((s = json_string_value(m)) == NULL || *s == '\0' ||
	    strlen(s) > 15)
		return (0);
	for (i = 0; s[i] != '\0'; i++)
		if (s[i] < 'A' || s[i] > 'Z')
			return (0);
	return (1);
}

/* The run's entry for secret id, made on first sight; NULL: too many. */
static struct hsecret *
hrun_secret(struct hrun *r, int64_t id)
{
	size_t	 i;

	for (i = 0; i < r->ns; i++)
		if (r->s[i].id == id)
			return (&r->s[i]);
	if (r->ns >= HEALTH_SECRETS_MAX)
		return (NULL);
	r->s[r->ns].id = id;
	r->s[r->ns].oauth = oauth_state(store_secret_get, r->org_id, id);
	return (&r->s[r->ns++]);
}

/*
 * POST /health/run: the OAuth secrets to refresh first, then every
 * probe; the answer when the last is back (hrun_finish).
 */
static void
health_run(struct vault_req *req, struct vault_resp *resp)
{
	(void)hrun_start(req->auth->org_id, req->reqid, 0, resp);
}

/*
 * A run of org's checks, answering request reqid at its end (none for
 * the periodic run's, sweep): 0 started, or -1 with resp set.
 */
static int
hrun_start(int64_t org, uint32_t reqid, int sweeping, struct vault_resp *resp)
{
	struct store_sel	 sel;
	struct hrun		*r;
	struct hsecret		*hs;
	json_t			*b;
	size_t			 i, j;

	if (nhruns >= HEALTH_RUNS_MAX) {
		resp_error(resp, 503, "health runs are busy — try again in "
		    "a moment");
		return (-1);
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		fatal("%s: calloc", __func__);
	r->reqid = reqid;
	r->sweep = sweeping;
	r->org_id = org;
	memset(&sel, 0, sizeof(sel));
	sel.org = r->org_id;
	if (store_tools(&sel, health_tool, r) == -1) {
		hrun_free(r);
		db_fail(resp, "health run");
		return (-1);
	}
	for (i = 0; i < r->nt; i++)
		json_array_foreach(r->t[i].bindings, j, b)
			(void)hrun_secret(r, json_integer_value(
			    json_object_get(b, "secret_id")));
	TAILQ_INSERT_TAIL(&hruns, r, entry);
	nhruns++;
	/* One more until every refresh is asked: one may end at once. */
	r->refreshing = 1;
	for (i = 0; i < r->ns; i++) {
		hs = &r->s[i];
		if (hs->oauth != OAUTH_STALE)
			continue;
		r->refreshing++;
		oauth_refresh(r->org_id, hs->id, hrun_refreshed, r);
	}
	/* Answered when the refreshes and probes are back. */
	hrun_refreshed(r, 0, 1, NULL);
	return (0);
}

/* A refresh ended (sid 0: the asking did); the last one sends probes. */
static void
hrun_refreshed(void *arg, int64_t sid, int ok, const char *detail)
{
	struct hrun	*r = arg;
	struct hsecret	*hs;

	if (sid != 0 && !ok && (hs = hrun_secret(r, sid)) != NULL) {
		hs->failed = 1;
		hsecret_verdict(hs, H_INVALID, detail);
	}
	if (--r->refreshing == 0)
		hrun_probes(r);
}

/* Each probe of a tool whose OAuth secrets are alive, sent. */
static void
hrun_probes(struct hrun *r)
{
	struct htool	*t;
	struct hsecret	*hs;
	struct pack	 pk;
	json_t		*b;
	size_t		 i, j;
	int		 dead;

	r->pending = 1;
	for (i = 0; i < r->nt; i++) {
		t = &r->t[i];
		if (t->hc == NULL)
			continue;
		/* A dead credential cannot pass a probe: already flagged. */
		dead = 0;
		json_array_foreach(t->bindings, j, b)
			if ((hs = hrun_secret(r, json_integer_value(
			    json_object_get(b, "secret_id")))) != NULL &&
			    hs->failed)
				dead = 1;
		if (dead)
			continue;
		pack_init(&pk);
		if (probe_build(r->org_id, t, &pk, t->detail,
		    sizeof(t->detail)) == -1) {
			/* A binding that does not resolve: the key's fault. */
			t->st = H_INVALID;
			t->done = 1;
		} else {
			t->fetchid = ++fetch_next;
			vault_fetch_start(t->fetchid,
			    vault_conf.relay_allow_private, FETCH_PROBE_S,
			    pk.buf, pk.len);
			r->pending++;
		}
		pack_free(&pk);
	}
	if (--r->pending == 0)
		hrun_finish(r);
}

/*
 * The probe's request, packed for the relay: method, url (base_url and
 * the probe's path, the query bindings added to its own query), the
 * header bindings, no body.  -1 with why in detail (never a value).
 */
static int
probe_build(int64_t org, const struct htool *t, struct pack *pk,
    char *detail, size_t dlen)
{
	struct vault_resp	 eresp;
	struct isecret		 sc;
	const char		*path, *method, *loc, *name, *fmt;
	char			*url = NULL, *line, *val, *lines[BINDINGS_MAX];
	size_t			 i, n = 0, vlen, bl;
	json_t			*b;
	int			 rc = -1, open = 0;

	memset(&eresp, 0, sizeof(eresp));
	path = json_string_value(json_object_get(t->hc, "path"));
	method = json_string_value(json_object_get(t->hc, "method"));
	if (method == NULL || *method == '\0')
		method = "GET";
	while (*path == '/')
		path++;
	bl = strlen(t->base_url);
	while (bl > 0 && t->base_url[bl - 1] == '/')
		bl--;
	if (asprintf(&url, "%.*s/%s", (int)bl, t->base_url, path) == -1)
		fatal("%s: asprintf", __func__);
	json_array_foreach(t->bindings, i, b) {
		memset(&sc, 0, sizeof(sc));
		if (isecret_open(org, json_integer_value(json_object_get(b,
		    "secret_id")), t->name, &sc, &eresp) == -1)
			goto fail;
		open = 1;
		fmt = json_string_value(json_object_get(b, "format"));
		loc = json_string_value(json_object_get(b, "location"));
		name = json_string_value(json_object_get(b, "name"));
		if (loc == NULL || name == NULL ||
		    inject_value(&sc, b, fmt, t->name, &eresp, &val,
		    &vlen) == -1)
			goto fail;
		isecret_close(&sc);
		open = 0;
		if (strcmp(loc, "query") == 0)
			url = query_add(url, name, val, vlen);
		else if (strpbrk(val, "\r\n") == NULL && n < BINDINGS_MAX) {
			if (asprintf(&line, "%s: %s", name, val) == -1)
				fatal("%s: asprintf", __func__);
			lines[n++] = line;
		}
		freezero(val, vlen + 1);
	}
	if (strlen(url) + 1024 > FETCH_REQ_MAX)
		goto fail;
	pack_str(pk, method);
	pack_str(pk, url);
	pack_u32(pk, n);
	for (i = 0; i < n; i++)
		pack_str(pk, lines[i]);
	pack_bytes(pk, "", 0);
	rc = 0;
	goto out;
 fail:
	(void)snprintf(detail, dlen, "injection failed: a binding of "
	    "'%s' does not resolve", t->name);
 out:
	if (open)
		isecret_close(&sc);
	for (i = 0; i < n; i++)
		freezero(lines[i], strlen(lines[i]) + 1);
	freezero(url, strlen(url) + 1);
	json_decref(eresp.body);
	free(eresp.text);
	return (rc);
}
/* name=value (percent-encoded) added to url's query; the old one zeroed. */
static char *
query_add(char *url, const char *name, const char *val, size_t vlen)
{
	size_t			 ul = strlen(url), nl = strlen(name), n;
	char			*out;

	if ((out = malloc(ul + nl + 3 * vlen + 3)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(out, url, ul);
	n = ul;
	out[n++] = strchr(url, '?') != NULL ? '&' : '?';
	memcpy(out + n, name, nl);
	n += nl;
	out[n++] = '=';
	n += pct_encode(out + n, val, vlen);
	out[n] = '\0';
	freezero(url, ul + 1);
	return (out);
}

/* IMSG_FETCH_DONE (vault.c): a probe's answer, as treg judges one. */
void
health_fetch_done(const struct fetch_done *fd, const char *body, size_t len)
{
	struct hrun	*r;
	struct htool	*t = NULL;
	const char	*why;
	json_t		*j;
	size_t		 i;
	int		 s = fd->status;

	TAILQ_FOREACH(r, &hruns, entry) {
		for (i = 0; i < r->nt; i++)
			if (r->t[i].fetchid == fd->fetchid && !r->t[i].done) {
				t = &r->t[i];
				break;
			}
		if (t != NULL)
			break;
	}
	if (t == NULL)
		return;
	t->done = 1;
	if (s == 0) {
		/* The relay's own words (never the upstream's): why. */
		t->st = H_UNKNOWN;
		why = NULL;
		if ((j = json_loadb(body, len, 0, NULL)) != NULL)
			why = json_string_value(json_object_get(j, "detail"));
		(void)snprintf(t->detail, sizeof(t->detail), "probe "
		    "unreachable: %s", fd->refused == CALL_SSRF ? "the "
		    "upstream's address is not public" : why != NULL ? why :
		    "no answer");
		json_decref(j);
	} else {
		(void)snprintf(t->detail, sizeof(t->detail), "probe HTTP %d",
		    s);
		if (t->expect != 0)
			t->st = s == t->expect ? H_OK : H_INVALID;
		else if (s < 400)
			t->st = H_OK;
		else if (s >= 500 || s == 429)
			t->st = H_UNKNOWN;
		else
			t->st = H_INVALID;
	}
	if (--r->pending == 0)
		hrun_finish(r);
}

/* The worse verdict stays, with its detail. */
static void
hsecret_verdict(struct hsecret *hs, enum hstat st, const char *detail)
{
	if (st <= hs->st)
		return;
	hs->st = st;
	strlcpy(hs->detail, detail, sizeof(hs->detail));
}

/*
 * Each secret's verdict: its probes' (every secret a probed tool binds),
 * "oauth refresh ok" for a refreshable OAuth secret of a tool without
 * one; a failed refresh was judged already.
 */
static void
hrun_judge(struct hrun *r)
{
	struct htool	*t;
	struct hsecret	*hs;
	json_t		*b;
	size_t		 i, j;

	for (i = 0; i < r->nt; i++) {
		t = &r->t[i];
		json_array_foreach(t->bindings, j, b) {
			if ((hs = hrun_secret(r, json_integer_value(
			    json_object_get(b, "secret_id")))) == NULL ||
			    hs->failed)
				continue;
			if (t->done)
				hsecret_verdict(hs, t->st, t->detail);
			else if (t->hc == NULL && hs->oauth != OAUTH_NONE)
				hsecret_verdict(hs, H_OK, "oauth refresh ok");
		}
	}
}

/*
 * Every verdict written, then the report: {"checked", "invalid": [...],
 * "expiring": [...], "all": [...]}, the rows GET /health shows with
 * their owners and treg's expiry axis (oauth_expiry_view()).
 */
static void
hrun_finish(struct hrun *r)
{
	struct vault_resp	 resp;
	struct store_sel	 sel;
	struct hreport		 rep;
	json_t			*marked, *invalid, *o, *owners;
	char			 now[32];
	size_t			 i;

	memset(&resp, 0, sizeof(resp));
	memset(&sel, 0, sizeof(sel));
	sel.org = rep.org_id = r->org_id;
	if ((marked = json_object()) == NULL ||
	    (rep.all = json_array()) == NULL ||
	    (invalid = json_array()) == NULL ||
	    (rep.expiring = json_array()) == NULL ||
	    (owners = json_object()) == NULL)
		fatal("%s: json", __func__);
	hrun_judge(r);
	now_iso(now, sizeof(now));
	/*
	 * Every oauth secret of the org is in "expiring" when treg would
	 * have it reconnected, bound or not: one no probe touches can
	 * still be days from its end (health_row).
	 */
	if (db_begin(&resp) == 0) {
		for (i = 0; i < r->ns; i++)
			if (r->s[i].st != H_NONE && store_secret_mark(r->org_id,
			    r->s[i].id, hstat_name[r->s[i].st], r->s[i].detail,
			    now, marked_one, marked) == -1)
				break;
		if (i < r->ns)
			db_fail(&resp, "health run");
		else if (db_commit(&resp) == 0 &&
		    (store_health(r->org_id, NULL, 0, health_row, &rep) == -1 ||
		    store_secrets(&sel, owner_row, owners) == -1))
			db_fail(&resp, "health");
	}
	if (resp.status == 0) {
		json_array_foreach(rep.all, i, o)
			if (json_object_get(marked, json_string_value(
			    json_object_get(o, "name"))) != NULL &&
			    strcmp(json_string_value(json_object_get(o,
			    "status")), "invalid") == 0)
				json_array_append(invalid, o);
		resp_ok(&resp, json_pack("{s:I, s:O, s:O, s:O}", "checked",
		    (json_int_t)json_object_size(marked), "invalid", invalid,
		    "expiring", rep.expiring, "all", rep.all));
	}
	if (!r->sweep)
		vault_respond(r->reqid, &resp);
	else if (resp.status == 200 && json_array_size(invalid) > 0)
		log_info("health: org %lld: %zu credentials found invalid",
		    (long long)r->org_id, json_array_size(invalid));
	if (resp.status == 200)
		hrun_alert(r->org_id, invalid, owners);
	json_decref(owners);
	json_decref(resp.body);
	free(resp.text);
	json_decref(marked);
	json_decref(rep.all);
	json_decref(invalid);
	json_decref(rep.expiring);
	TAILQ_REMOVE(&hruns, r, entry);
	nhruns--;
	/* The next org on the event loop's next turn: requests go first. */
	if (r->sweep)
		event_active(&sweep.step, EV_TIMEOUT, 1);
	hrun_free(r);
}

static void
hrun_free(struct hrun *r)
{
	size_t	 i;

	for (i = 0; i < r->nt; i++) {
		free(r->t[i].name);
		free(r->t[i].base_url);
		json_decref(r->t[i].bindings);
		json_decref(r->t[i].hc);
	}
	free(r);
}
static int
marked_one(const char *name, void *arg)
{
	json_object_set_new(arg, name, json_true());
	return (0);
}
/*
 * A secret's health as treg's health._view shows it, for GET /health
 * and each row of a run's report: the verdict (a param's is never
 * judged), its owner's email (null when gone), and the expiry axis of
 * oauth_expiry_view().  Returns treg's needs_reconnect.
 */
int
health_secret_view(int64_t org, const struct store_secret_row *s,
    json_t **out)
{
	json_t	*o;
	int	 param = strcmp(s->kind, "param") == 0;

	o = json_pack("{s:I, s:s, s:s?, s:s, s:s, s:s?, s:s?}",
	    "secret_id", (json_int_t)s->id, "name", s->name,
	    "owner", s->owner_email[0] != '\0' ? s->owner_email : NULL,
	    "kind", s->kind, "status", param ? "unknown" : s->status,
	    "detail", param ? NULL : s->status_detail,
	    "checked_at", param ? NULL : s->checked_at);
	if (o == NULL)
		fatalx("%s: json_pack", __func__);
	*out = o;
	return (oauth_expiry_view(store_secret_get, org, s->id, s->kind, o));
}

/* A run's report: every row, and the ones treg would have reconnected. */
static int
health_row(const struct store_secret_row *s, void *arg)
{
	struct hreport	*rep = arg;
	json_t		*o;

	if (health_secret_view(rep->org_id, s, &o))
		json_array_append(rep->expiring, o);
	json_array_append_new(rep->all, o);
	return (0);
}
/* Each secret's owner, by id: {"<id>": {"id", "email"}}. */
static int
owner_row(const struct store_secret_item *s, void *arg)
{
	char	 id[32];

	snprintf(id, sizeof(id), "%lld", (long long)s->id);
	json_object_set_new(arg, id, json_pack("{s:I, s:s?}", "id",
	    (json_int_t)s->owner_id, "email", s->owner_email));
	return (0);
}
static int
webhook_url(const char *url, void *arg)
{
	if (strlcpy(arg, url, URL_LEN_MAX + 1) > URL_LEN_MAX)
		*(char *)arg = '\0';
	return (0);
}
/*
 * One alert per owner of a secret found invalid, to the webhook treg
 * would pick; none when the owner and the org's owners have none.  Best
 * effort: what the webhook answers is not waited for (a fetch whose id
 * names no probe is dropped by health_fetch_done).
 */
static void
hrun_alert(int64_t org, json_t *invalid, json_t *owners)
{
	json_t		*groups, *g, *o, *ow, *v;
	const char	*key;
	char		 id[32], url[URL_LEN_MAX + 1], *payload;
	struct pack	 pk;
	size_t		 i;
	int64_t		 uid;

	if ((groups = json_object()) == NULL)
		fatal("%s: json_object", __func__);
	json_array_foreach(invalid, i, o) {
		snprintf(id, sizeof(id), "%lld", (long long)json_integer_value(
		    json_object_get(o, "secret_id")));
		if ((ow = json_object_get(owners, id)) == NULL)
			continue;
		snprintf(id, sizeof(id), "%lld", (long long)json_integer_value(
		    json_object_get(ow, "id")));
		if ((g = json_object_get(groups, id)) == NULL) {
			if ((v = json_object_get(ow, "email")) == NULL)
				v = json_null();	/* the owner is gone */
			if ((g = json_pack("{s:O, s:[]}", "owner", v,
			    "invalid_credentials")) == NULL)
				fatalx("%s: json_pack", __func__);
			json_object_set_new(groups, id, g);
		}
		json_array_append(json_object_get(g, "invalid_credentials"), o);
	}
	json_object_foreach(groups, key, g) {
		uid = strtoll(key, NULL, 10);
		url[0] = '\0';
		if (store_webhook_find(org, uid, webhook_url, url) == -1) {
			log_warnx("health: the owners' webhooks cannot be "
			    "read: %s", store_error());
			break;
		}
		if (url[0] == '\0')
			continue;
		if ((payload = json_dumps(g, JSON_COMPACT)) == NULL)
			fatalx("%s: json_dumps", __func__);
		pack_init(&pk);
		pack_str(&pk, "POST");
		pack_str(&pk, url);
		pack_u32(&pk, 1);
		pack_str(&pk, "Content-Type: application/json");
		pack_bytes(&pk, payload, strlen(payload));
		if (pk.len <= FETCH_REQ_MAX)
			vault_fetch_start(++fetch_next,
			    vault_conf.relay_allow_private, FETCH_ALERT_S,
			    pk.buf, pk.len);
		else
			log_warnx("health: an alert of org %lld is too large "
			    "to send", (long long)org);
		pack_free(&pk);
		free(payload);
	}
	json_decref(groups);
}

/* ------------------------------------------------------------------ */
/* The periodic run.                                                   */

/*
 * (Re)arm the periodic run after a start or a reload: on worker 0, every
 * "health interval" seconds (none by default: treg schedules no run of
 * its own, its operators' cron does).  A sweep under way finishes.
 */
void
health_sched(int worker)
{
	struct timeval	 tv;

	if (worker != 0)
		return;
	if (!sweep.set) {
		evtimer_set(&sweep.tick, sweep_tick, NULL);
		evtimer_set(&sweep.step, sweep_step, NULL);
		sweep.set = 1;
	}
	if (sweep.interval == vault_conf.health_interval)
		return;
	sweep.interval = vault_conf.health_interval;
	evtimer_del(&sweep.tick);
	if (sweep.interval == 0)
		return;
	timerclear(&tv);
	tv.tv_sec = sweep.interval;
	evtimer_add(&sweep.tick, &tv);
	log_info("health: a run of every org's checks every %d s",
	    sweep.interval);
}

static int
sweep_org(const struct store_org_row *o, void *arg)
{
	int64_t	*p;

	(void)arg;
	if (o->tools == 0)
		return (0);		/* nothing to check */
	if (sweep.n >= HEALTH_SWEEP_ORGS_MAX)
		return (1);
	if (sweep.n % 64 == 0) {
		if ((p = reallocarray(sweep.orgs, sweep.n + 64,
		    sizeof(*p))) == NULL)
			fatal("%s: reallocarray", __func__);
		sweep.orgs = p;
	}
	sweep.orgs[sweep.n++] = o->id;
	return (0);
}

/* The interval is up: the orgs to check, then the first one. */
static void
sweep_tick(int fd, short ev, void *arg)
{
	struct timeval	 tv;

	timerclear(&tv);
	tv.tv_sec = sweep.interval;
	evtimer_add(&sweep.tick, &tv);
	if (sweep.running) {
		log_warnx("health: the previous run is still going; this "
		    "one is skipped");
		return;
	}
	sweep.n = sweep.next = 0;
	if (store_orgs_each(sweep_org, NULL) == -1) {
		log_warnx("health: the orgs cannot be read: %s",
		    store_error());
		store_rollback();
		return;
	}
	sweep.running = 1;
	log_info("health: checking %zu orgs", sweep.n);
	sweep_step(0, 0, NULL);
}

/* The next org's run; one at a time, each ending in hrun_finish(). */
static void
sweep_step(int fd, short ev, void *arg)
{
	struct vault_resp	 resp;
	struct timeval		 tv;

	while (sweep.next < sweep.n) {
		if (nhruns >= HEALTH_RUNS_MAX) {
			/* Requests' runs fill the worker: a second later. */
			timerclear(&tv);
			tv.tv_sec = 1;
			evtimer_add(&sweep.step, &tv);
			return;
		}
		memset(&resp, 0, sizeof(resp));
		if (hrun_start(sweep.orgs[sweep.next++], 0, 1, &resp) == 0)
			return;
		log_warnx("health: org %lld not checked: %s", (long long)
		    sweep.orgs[sweep.next - 1], resp.text != NULL ? resp.text :
		    "error");
		json_decref(resp.body);
		free(resp.text);
	}
	sweep.running = 0;
	free(sweep.orgs);
	sweep.orgs = NULL;
	log_info("health: %zu orgs checked", sweep.n);
}
