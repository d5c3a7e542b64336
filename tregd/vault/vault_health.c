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
 * several tools keeps the worst verdict of the run.  GET /health shows
 * status, detail and checked_at.  The owners of the secrets found invalid
 * are alerted as treg alerts them: one POST {"owner", "invalid_credentials"}
 * to the webhook_url of the owner's membership (of this org first, else
 * another of theirs, else an owner's of this org), through the relay's
 * SSRF guard too; what the webhook answers changes nothing.
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
#define HEALTH_PROBES_MAX	256	/* tools probed by one run */

enum hstat { H_OK, H_UNKNOWN, H_INVALID };
static const char *const hstat_name[] = { "ok", "unknown", "invalid" };

struct hprobe {
	int64_t		 tool_id;
	uint32_t	 fetchid;
	int		 expect;	/* 0: none */
	int		 done;
	enum hstat	 st;
	char		 detail[160];
};

struct hrun {
	TAILQ_ENTRY(hrun)	 entry;
	uint32_t		 reqid;
	int64_t			 org_id;
	struct hprobe		 p[HEALTH_PROBES_MAX];
	size_t			 np;
	size_t			 pending;
};
static TAILQ_HEAD(, hrun)	 hruns = TAILQ_HEAD_INITIALIZER(hruns);
static int			 nhruns;
static uint32_t			 fetch_next;

/* A tool of the org, as read. */
struct htool {
	int64_t		 id;
	char		*name;
	char		*base_url;
	json_t		*bindings;
	json_t		*hc;
};
struct htools {
	struct htool	 t[HEALTH_PROBES_MAX];
	size_t		 n;
};

static void	health_run(struct vault_req *, struct vault_resp *);
static int	health_tool(const struct store_tool_item *, void *);
static void	htools_clear(struct htools *);
static int	probe_build(int64_t, const struct htool *, struct pack *,
		    char *, size_t);
static char	*query_add(char *, const char *, const char *, size_t);
static void	hrun_finish(struct hrun *);
static int	hrun_mark(struct hrun *, enum hstat, json_t *);
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
	struct htools	*ht = arg;
	struct htool	*h;
	json_t		*hc;

	if (t->health_check == NULL || ht->n >= HEALTH_PROBES_MAX)
		return (0);
	/* A malformed health_check is not a probe (treg ignores it too). */
	hc = json_loads(t->health_check, 0, NULL);
	if (!json_is_object(hc) ||
	    !json_is_string(json_object_get(hc, "path"))) {
		json_decref(hc);
		return (0);
	}
	h = &ht->t[ht->n++];
	h->id = t->id;
	h->hc = hc;
	if ((h->name = strdup(t->name)) == NULL ||
	    (h->base_url = strdup(t->base_url)) == NULL)
		fatal("%s: strdup", __func__);
	if ((h->bindings = json_loads(t->bindings, 0, NULL)) == NULL ||
	    !json_is_array(h->bindings)) {
		json_decref(h->bindings);
		h->bindings = json_array();
	}
	return (0);
}

static void
htools_clear(struct htools *ht)
{
	size_t	 i;

	for (i = 0; i < ht->n; i++) {
		free(ht->t[i].name);
		free(ht->t[i].base_url);
		json_decref(ht->t[i].bindings);
		json_decref(ht->t[i].hc);
	}
	ht->n = 0;
}

/*
 * POST /health/run: every probe sent, the answer when the last is back
 * (hrun_finish); a run with nothing to probe answers at once.
 */
static void
health_run(struct vault_req *req, struct vault_resp *resp)
{
	static struct htools	 ht;
	struct store_sel	 sel;
	struct hrun		*r;
	struct hprobe		*p;
	struct pack		 pk;
	size_t			 i;

	if (nhruns >= HEALTH_RUNS_MAX) {
		resp_error(resp, 503, "health runs are busy — try again in "
		    "a moment");
		return;
	}
	memset(&sel, 0, sizeof(sel));
	sel.org = req->auth->org_id;
	if (store_tools(&sel, health_tool, &ht) == -1) {
		htools_clear(&ht);
		db_fail(resp, "health run");
		return;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		fatal("%s: calloc", __func__);
	r->reqid = req->reqid;
	r->org_id = req->auth->org_id;
	TAILQ_INSERT_TAIL(&hruns, r, entry);
	nhruns++;
	for (i = 0; i < ht.n; i++) {
		p = &r->p[r->np++];
		p->tool_id = ht.t[i].id;
		p->expect = json_integer_value(json_object_get(ht.t[i].hc,
		    "expect_status"));
		pack_init(&pk);
		if (probe_build(r->org_id, &ht.t[i], &pk, p->detail,
		    sizeof(p->detail)) == -1) {
			/* A binding that does not resolve is the key's fault. */
			p->st = H_INVALID;
			p->done = 1;
		} else {
			p->fetchid = ++fetch_next;
			vault_fetch_start(p->fetchid,
			    vault_conf.relay_allow_private, pk.buf, pk.len);
			r->pending++;
		}
		pack_free(&pk);
	}
	htools_clear(&ht);
	/* Answered when the probes are back. */
	if (r->pending == 0)
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
	static const char	 hex[] = "0123456789ABCDEF";
	size_t			 ul = strlen(url), nl = strlen(name), i, n;
	char			*out;

	if ((out = malloc(ul + nl + 3 * vlen + 3)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(out, url, ul);
	n = ul;
	out[n++] = strchr(url, '?') != NULL ? '&' : '?';
	memcpy(out + n, name, nl);
	n += nl;
	out[n++] = '=';
	for (i = 0; i < vlen; i++) {
		if (isalnum((unsigned char)val[i]) || strchr("-._~", val[i]))
			out[n++] = val[i];
		else {
			out[n++] = '%';
			out[n++] = hex[(unsigned char)val[i] >> 4];
			out[n++] = hex[(unsigned char)val[i] & 0xf];
		}
	}
	out[n] = '\0';
	freezero(url, ul + 1);
	return (out);
}

/* IMSG_FETCH_DONE (vault.c): a probe's answer, as treg judges one. */
void
health_fetch_done(const struct fetch_done *fd, const char *body, size_t len)
{
	struct hrun	*r;
	struct hprobe	*p = NULL;
	size_t		 i;
	int		 s = fd->status;

	TAILQ_FOREACH(r, &hruns, entry) {
		for (i = 0; i < r->np; i++)
			if (r->p[i].fetchid == fd->fetchid && !r->p[i].done) {
				p = &r->p[i];
				break;
			}
		if (p != NULL)
			break;
	}
	if (p == NULL)
		return;
	p->done = 1;
	if (s == 0) {
		p->st = H_UNKNOWN;
		(void)snprintf(p->detail, sizeof(p->detail), "probe "
		    "unreachable: %s", fd->refused == CALL_SSRF ? "the "
		    "upstream's address is not public" : "no answer");
	} else {
		(void)snprintf(p->detail, sizeof(p->detail), "probe HTTP %d",
		    s);
		if (p->expect != 0)
			p->st = s == p->expect ? H_OK : H_INVALID;
		else if (s < 400)
			p->st = H_OK;
		else if (s >= 500 || s == 429)
			p->st = H_UNKNOWN;
		else
			p->st = H_INVALID;
	}
	if (--r->pending == 0)
		hrun_finish(r);
}

/*
 * Every verdict written, worst last (a secret of several tools keeps the
 * worst), then the report: {"checked", "invalid": [...], "all": [...]},
 * the rows GET /health shows.
 */
static void
hrun_finish(struct hrun *r)
{
	struct vault_resp	 resp;
	struct store_sel	 sel;
	json_t			*marked, *all, *invalid, *o, *owners, *ow;
	char			 id[32];
	size_t			 i;

	memset(&resp, 0, sizeof(resp));
	memset(&sel, 0, sizeof(sel));
	sel.org = r->org_id;
	if ((marked = json_object()) == NULL || (all = json_array()) == NULL ||
	    (invalid = json_array()) == NULL || (owners = json_object()) == NULL)
		fatal("%s: json", __func__);
	if (db_begin(&resp) == 0) {
		if (hrun_mark(r, H_OK, marked) == -1 ||
		    hrun_mark(r, H_UNKNOWN, marked) == -1 ||
		    hrun_mark(r, H_INVALID, marked) == -1)
			db_fail(&resp, "health run");
		else if (db_commit(&resp) == 0 &&
		    (store_health(r->org_id, NULL, 0, health_row, all) == -1 ||
		    store_secrets(&sel, owner_row, owners) == -1))
			db_fail(&resp, "health");
	}
	if (resp.status == 0) {
		json_array_foreach(all, i, o) {
			snprintf(id, sizeof(id), "%lld", (long long)
			    json_integer_value(json_object_get(o,
			    "secret_id")));
			ow = json_object_get(owners, id);
			json_object_set(o, "owner", ow != NULL ?
			    json_object_get(ow, "email") : json_null());
			if (json_object_get(marked, json_string_value(
			    json_object_get(o, "name"))) != NULL &&
			    strcmp(json_string_value(json_object_get(o,
			    "status")), "invalid") == 0)
				json_array_append(invalid, o);
		}
		resp_ok(&resp, json_pack("{s:I, s:O, s:O}", "checked",
		    (json_int_t)json_object_size(marked), "invalid", invalid,
		    "all", all));
	}
	vault_respond(r->reqid, &resp);
	if (resp.status == 200)
		hrun_alert(r->org_id, invalid, owners);
	json_decref(owners);
	json_decref(resp.body);
	free(resp.text);
	json_decref(marked);
	json_decref(all);
	json_decref(invalid);
	TAILQ_REMOVE(&hruns, r, entry);
	nhruns--;
	free(r);
}

static int
hrun_mark(struct hrun *r, enum hstat st, json_t *marked)
{
	struct hprobe	*p;
	char		 now[32];
	size_t		 i;

	now_iso(now, sizeof(now));
	for (i = 0; i < r->np; i++) {
		p = &r->p[i];
		if (p->st != st)
			continue;
		if (store_tool_secrets_mark(r->org_id, p->tool_id,
		    hstat_name[st], p->detail, now, marked_one, marked) == -1)
			return (-1);
	}
	return (0);
}

static int
marked_one(const char *name, void *arg)
{
	json_object_set_new(arg, name, json_true());
	return (0);
}

/* A row as GET /health shows it (vault_policy.c's view). */
static int
health_row(const struct store_secret_row *s, void *arg)
{
	json_t	*o;
	int	 param = strcmp(s->kind, "param") == 0;

	o = json_pack("{s:I, s:s, s:s, s:s, s:s?, s:s?}",
	    "secret_id", (json_int_t)s->id, "name", s->name, "kind", s->kind,
	    "status", param ? "unknown" : s->status,
	    "detail", param ? NULL : s->status_detail,
	    "checked_at", param ? NULL : s->checked_at);
	if (o == NULL)
		fatalx("%s: json_pack", __func__);
	json_array_append_new(arg, o);
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
	json_t		*groups, *g, *o, *ow;
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
			g = json_pack("{s:O, s:[]}", "owner",
			    json_object_get(ow, "email"),
			    "invalid_credentials");
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
			    vault_conf.relay_allow_private, pk.buf, pk.len);
		else
			log_warnx("health: an alert of org %lld is too large "
			    "to send", (long long)org);
		pack_free(&pk);
		free(payload);
	}
	json_decref(groups);
}
