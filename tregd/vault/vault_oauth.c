/*
 * vault_oauth.c: OAuth access tokens kept fresh by tregd, as treg keeps
 * them (its oauth.py and infra/oauth_refresh.py), so that the refresh
 * token never leaves the vault and the relay.
 *
 * An oauth secret is a JSON object: the access token (access_token or
 * token), and to be refreshable refresh_token, client_id, client_secret
 * and token_uri (Google's endpoint when absent), with expires_at (Unix
 * seconds) or expiry (ISO 8601).  It is stale when it expires within a
 * minute (of unknown expiry it is used as it is; treg refreshes it).  A
 * refresh POSTs grant_type=refresh_token to token_uri
 * through the relay (relay_fetch.c: the SSRF guard and TLS of /call),
 * the client authenticated in the body, or with HTTP Basic when the
 * secret says token_endpoint_auth_method client_secret_basic; the
 * answer's access_token replaces both access_token and token, expires_at
 * becomes now + expires_in (3600 when not given), a rotated
 * refresh_token is kept; the secret is sealed again in place.
 *
 * One refresh per secret at a time: who asks while one is in flight
 * waits for the same answer.  A failed refresh is remembered for a
 * minute (oauth_failed) so that calls do not hammer a token endpoint
 * that refused.  Nothing of the secret is logged or put in an error:
 * a failure's detail names the HTTP status or the missing field only.
 */

#include <sys/types.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "pack.h"
#include "vault.h"

#define OAUTH_SKEW		60	/* s: stale this close to expiry */
#define OAUTH_FAIL_KEEP		60	/* seconds a failure is remembered */
#define OAUTH_INFLIGHT_MAX	64
#define OAUTH_WAITERS_MAX	64
#define OAUTH_FAILS		64
#define OAUTH_FETCH_BIT		0x80000000U	/* its fetch ids */
#define OAUTH_DEFAULT_URI	"https://oauth2.googleapis.com/token"
#define OAUTH_EXPIRING_DAYS	7	/* treg's EXPIRING_SOON_DAYS */
#define OAUTH_TIME_MAX		253402300800.0	/* year 10000: no expiry */

struct owaiter {
	oauth_done_fn	 fn;
	void		*arg;
};

struct orefresh {
	TAILQ_ENTRY(orefresh)	 entry;
	int64_t			 org;
	int64_t			 sid;
	uint32_t		 fetchid;
	struct owaiter		 w[OAUTH_WAITERS_MAX];
	size_t			 nw;
};
static TAILQ_HEAD(, orefresh)	 orefreshes =
				    TAILQ_HEAD_INITIALIZER(orefreshes);
static int			 norefreshes;
static uint32_t			 ofetch_next;

static struct {
	int64_t		 org, sid;
	time_t		 at;
	char		 detail[128];
} ofails[OAUTH_FAILS];
static size_t			 ofail_next;
/* The secrets refreshed in the last minute (oauth_stale). */
static struct {
	int64_t		 org, sid;
	time_t		 at;
} ofresh[OAUTH_FAILS];
static size_t			 ofresh_next;

static json_t	*oauth_blob(secret_get_fn, int64_t, int64_t);
static int	 oauth_refreshable(json_t *);
static int	 oauth_is_stale(json_t *, time_t);
static int	 oauth_expires(json_t *, double *);
static int	 oauth_request(json_t *, struct pack *);
static size_t	 form_add(char *, size_t, const char *, const char *);
static void	 oauth_end(struct orefresh *, int, const char *);
static void	 oauth_fail_note(int64_t, int64_t, const char *);
static void	 oauth_fail_now(int64_t, int64_t, oauth_done_fn, void *,
		    const char *);
static int	 oauth_store(int64_t, int64_t, const char *, size_t);

/* ------------------------------------------------------------------ */
/* The secret.                                                         */

/* Secret sid of org as a JSON object when it is an oauth one, or NULL. */
static json_t *
oauth_blob(secret_get_fn get, int64_t org, int64_t sid)
{
	struct vault_resp	 eresp;
	struct isecret		 sc;
	json_t			*blob = NULL;

	memset(&eresp, 0, sizeof(eresp));
	memset(&sc, 0, sizeof(sc));
	if (isecret_open_by(get, org, sid, "oauth refresh", &sc,
	    &eresp) == 0) {
		if (strcmp(sc.kind, "oauth") == 0 &&
		    (blob = json_loadb((const char *)sc.val, sc.len, 0,
		    NULL)) != NULL && !json_is_object(blob)) {
			json_decref(blob);
			blob = NULL;
		}
		isecret_close(&sc);
	}
	json_decref(eresp.body);
	free(eresp.text);
	return (blob);
}

static int
nonempty(json_t *o, const char *k)
{
	const char	*v = json_string_value(json_object_get(o, k));

	return (v != NULL && *v != '\0');
}

/* treg's is_refreshable: a refresh token and the client's credentials. */
static int
oauth_refreshable(json_t *blob)
{
	return (nonempty(blob, "refresh_token") &&
	    nonempty(blob, "client_id") && nonempty(blob, "client_secret"));
}

/*
 * Expired or about to.  A token of unknown expiry is used as it is
 * (treg refreshes it: tregd would then call a token endpoint on every
 * use of a secret imported without one).
 */
static int
oauth_is_stale(json_t *blob, time_t now)
{
	double	 at;

	if (oauth_expires(blob, &at) == -1)
		return (0);
	return (at <= (double)now + OAUTH_SKEW);
}

/*
 * When the access token expires (Unix seconds): its expires_at, else
 * Google's expiry (ISO 8601, UTC); -1 when it does not say.
 */
static int
oauth_expires(json_t *blob, double *at)
{
	json_t		*v;
	const char	*s;
	struct tm	 tm;

	if ((v = json_object_get(blob, "expires_at")) != NULL &&
	    json_is_number(v)) {
		*at = json_number_value(v);
		return (0);
	}
	if ((s = json_string_value(json_object_get(blob, "expiry"))) == NULL)
		return (-1);
	memset(&tm, 0, sizeof(tm));
	if (strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
		return (-1);
	*at = (double)timegm(&tm);
	return (0);
}

/*
 * treg's second axis of a secret's health view (its health.py _view and
 * domain/connections/refresh.py), set on o: provider (treg's registry
 * connects name one; tregd has none, ""), refreshable (an oauth secret
 * with a refresh token and the client's credentials), expires_at (the
 * access token's, ISO 8601 UTC, or null) and expiry_state: fresh for a
 * refreshable secret (tregd renews it), else unknown without an expiry,
 * expired past it, expiring within OAUTH_EXPIRING_DAYS, fresh beyond.
 * Only an oauth secret is unsealed.  1 when it is treg's needs_reconnect
 * (an oauth secret expiring or expired, which only a person can renew),
 * else 0.
 */
int
oauth_expiry_view(secret_get_fn get, int64_t org, int64_t sid,
    const char *kind, json_t *o)
{
	json_t		*blob = NULL;
	const char	*state = "unknown";
	char		 when[32];
	double		 at;
	time_t		 now = time(NULL);
	int		 refreshable = 0, known = 0;

	if (strcmp(kind, "oauth") == 0 &&
	    (blob = oauth_blob(get, org, sid)) != NULL) {
		refreshable = oauth_refreshable(blob);
		known = oauth_expires(blob, &at) == 0 && at > 0 &&
		    at < OAUTH_TIME_MAX;
		json_decref(blob);
	}
	if (refreshable)
		state = "fresh";
	else if (known && at <= (double)now)
		state = "expired";
	else if (known && at <= (double)now + OAUTH_EXPIRING_DAYS * 86400.0)
		state = "expiring";
	else if (known)
		state = "fresh";
	if (known)
		iso_time((int64_t)at, when, sizeof(when));
	if (json_object_set_new(o, "provider", json_string("")) == -1 ||
	    json_object_set_new(o, "refreshable",
	    json_boolean(refreshable)) == -1 ||
	    json_object_set_new(o, "expiry_state", json_string(state)) == -1 ||
	    json_object_set_new(o, "expires_at", known ? json_string(when) :
	    json_null()) == -1)
		fatalx("%s: json", __func__);
	return (strcmp(kind, "oauth") == 0 && (strcmp(state, "expiring") ==
	    0 || strcmp(state, "expired") == 0));
}

/*
 * Secret sid of org, read through get: 1 when it is an oauth secret
 * tregd can and should refresh now, else 0.
 */
int
oauth_stale(secret_get_fn get, int64_t org, int64_t sid)
{
	return (oauth_state(get, org, sid) == OAUTH_STALE);
}

/*
 * OAUTH_NONE: not an oauth secret, or one tregd cannot refresh;
 * OAUTH_FRESH: refreshable, its token alive; OAUTH_STALE: to refresh.
 */
int
oauth_state(secret_get_fn get, int64_t org, int64_t sid)
{
	struct store_secret	 ss;
	json_t			*blob;
	time_t			 now = time(NULL);
	size_t			 i;
	int			 rc;

	/* Only an oauth secret is unsealed here: a call's usual path. */
	memset(&ss, 0, sizeof(ss));
	rc = get(org, sid, &ss);
	rc = rc == 0 && strcmp(ss.kind, "oauth") == 0;
	store_secret_clear(&ss);
	if (!rc)
		return (OAUTH_NONE);
	/*
	 * Just refreshed: not again, whatever expiry the endpoint gave (a
	 * token living less than a minute would be refreshed forever).
	 */
	for (i = 0; i < OAUTH_FAILS; i++)
		if (ofresh[i].sid == sid && ofresh[i].org == org &&
		    ofresh[i].at + OAUTH_SKEW > now)
			return (OAUTH_FRESH);
	if ((blob = oauth_blob(get, org, sid)) == NULL)
		return (OAUTH_NONE);
	if (!oauth_refreshable(blob))
		rc = OAUTH_NONE;
	else
		rc = oauth_is_stale(blob, now) ? OAUTH_STALE : OAUTH_FRESH;
	json_decref(blob);
	return (rc);
}

/* A refresh of sid failed in the last minute: 1 and why, else 0. */
int
oauth_failed(int64_t org, int64_t sid, char *detail, size_t len)
{
	time_t	 now = time(NULL);
	size_t	 i;

	for (i = 0; i < OAUTH_FAILS; i++)
		if (ofails[i].sid == sid && ofails[i].org == org &&
		    ofails[i].at + OAUTH_FAIL_KEEP > now) {
			strlcpy(detail, ofails[i].detail, len);
			return (1);
		}
	return (0);
}

static void
oauth_fail_note(int64_t org, int64_t sid, const char *detail)
{
	size_t	 i;

	/* The newest failure of a secret replaces its older one. */
	for (i = 0; i < OAUTH_FAILS; i++)
		if (ofails[i].sid == sid && ofails[i].org == org)
			break;
	if (i == OAUTH_FAILS)
		i = ofail_next++ % OAUTH_FAILS;
	ofails[i].org = org;
	ofails[i].sid = sid;
	ofails[i].at = time(NULL);
	strlcpy(ofails[i].detail, detail, sizeof(ofails[i].detail));
}

/* A refresh that cannot even start: noted, and told at once. */
static void
oauth_fail_now(int64_t org, int64_t sid, oauth_done_fn fn, void *arg,
    const char *detail)
{
	oauth_fail_note(org, sid, detail);
	fn(arg, sid, 0, detail);
}

static void
oauth_fail_clear(int64_t org, int64_t sid)
{
	size_t	 i;

	for (i = 0; i < OAUTH_FAILS; i++)
		if (ofails[i].sid == sid && ofails[i].org == org)
			memset(&ofails[i], 0, sizeof(ofails[i]));
}

/* ------------------------------------------------------------------ */
/* The refresh.                                                        */

/* name=value, form-encoded, at out + n (room for it is there). */
static size_t
form_add(char *out, size_t n, const char *name, const char *val)
{
	size_t	 nl = strlen(name);

	if (n > 0)
		out[n++] = '&';
	memcpy(out + n, name, nl);
	n += nl;
	out[n++] = '=';
	n += pct_encode(out + n, val, strlen(val));
	out[n] = '\0';
	return (n);
}

/* The token endpoint's request, packed for the relay: 0, or -1. */
static int
oauth_request(json_t *blob, struct pack *pk)
{
	const char	*uri, *rt, *cid, *csec, *cidp, *method;
	char		*body, *cred = NULL, *auth = NULL;
	unsigned char	*b64 = NULL;
	size_t		 cap, n = 0, clen = 0, blen = 0;
	int		 basic;

	uri = json_string_value(json_object_get(blob, "token_uri"));
	if (uri == NULL || *uri == '\0')
		uri = OAUTH_DEFAULT_URI;
	rt = json_string_value(json_object_get(blob, "refresh_token"));
	cid = json_string_value(json_object_get(blob, "client_id"));
	csec = json_string_value(json_object_get(blob, "client_secret"));
	/* TikTok's endpoint reads client_key: the secret says so. */
	cidp = json_string_value(json_object_get(blob, "client_id_param"));
	if (cidp == NULL || *cidp == '\0' || strpbrk(cidp, "&=") != NULL)
		cidp = "client_id";
	method = json_string_value(json_object_get(blob,
	    "token_endpoint_auth_method"));
	basic = method != NULL && strcmp(method, "client_secret_basic") == 0;
	cap = 128 + strlen(cidp) + 3 * (strlen(rt) + strlen(cid) +
	    strlen(csec));
	if (cap + strlen(uri) > FETCH_REQ_MAX / 2)
		return (-1);
	if ((body = malloc(cap)) == NULL)
		fatal("%s: malloc", __func__);
	n = form_add(body, n, "grant_type", "refresh_token");
	n = form_add(body, n, "refresh_token", rt);
	n = form_add(body, n, cidp, cid);
	if (!basic)
		n = form_add(body, n, "client_secret", csec);
	else {
		if (asprintf(&cred, "%s:%s", cid, csec) == -1)
			fatal("%s: asprintf", __func__);
		clen = strlen(cred);
		blen = 4 * ((clen + 2) / 3) + 1;
		if ((b64 = malloc(blen)) == NULL)
			fatal("%s: malloc", __func__);
		EVP_EncodeBlock(b64, (unsigned char *)cred, clen);
		if (asprintf(&auth, "Authorization: Basic %s", b64) == -1)
			fatal("%s: asprintf", __func__);
	}
	pack_str(pk, "POST");
	pack_str(pk, uri);
	pack_u32(pk, basic ? 3 : 2);
	pack_str(pk, "Content-Type: application/x-www-form-urlencoded");
	pack_str(pk, "Accept: application/json");
	if (basic)
		pack_str(pk, auth);
	pack_bytes(pk, body, n);
	freezero(body, cap);
	if (basic) {
		freezero(cred, clen + 1);
		freezero(b64, blen);
		freezero(auth, strlen(auth) + 1);
	}
	return (0);
}

/*
 * Refresh secret sid of org now; fn(arg, sid, ok, detail) follows, on
 * this worker, once the token endpoint answered (or at once, when the
 * secret cannot be refreshed: ok 0).  A refresh of sid in flight is
 * joined.
 */
void
oauth_refresh(int64_t org, int64_t sid, oauth_done_fn fn, void *arg)
{
	struct orefresh	*r;
	struct pack	 pk;
	json_t		*blob;

	TAILQ_FOREACH(r, &orefreshes, entry)
		if (r->sid == sid && r->org == org)
			break;
	if (r != NULL && r->nw < OAUTH_WAITERS_MAX) {
		r->w[r->nw].fn = fn;
		r->w[r->nw++].arg = arg;
		return;
	}
	if (r != NULL || norefreshes >= OAUTH_INFLIGHT_MAX) {
		oauth_fail_now(org, sid, fn, arg,
		    "oauth refresh failed: too many refreshes "
		    "at once — try again in a moment");
		return;
	}
	if ((blob = oauth_blob(store_secret_get, org, sid)) == NULL ||
	    !oauth_refreshable(blob)) {
		json_decref(blob);
		oauth_fail_now(org, sid, fn, arg,
		    "oauth refresh failed: the secret has no "
		    "refresh_token, client_id and client_secret");
		return;
	}
	pack_init(&pk);
	if (oauth_request(blob, &pk) == -1) {
		pack_free(&pk);
		json_decref(blob);
		oauth_fail_now(org, sid, fn, arg,
		    "oauth refresh failed: the secret's fields "
		    "are too long");
		return;
	}
	json_decref(blob);
	if ((r = calloc(1, sizeof(*r))) == NULL)
		fatal("%s: calloc", __func__);
	r->org = org;
	r->sid = sid;
	r->fetchid = OAUTH_FETCH_BIT | (++ofetch_next & ~OAUTH_FETCH_BIT);
	r->w[0].fn = fn;
	r->w[0].arg = arg;
	r->nw = 1;
	TAILQ_INSERT_TAIL(&orefreshes, r, entry);
	norefreshes++;
	vault_fetch_start(r->fetchid, vault_conf.relay_allow_private,
	    FETCH_REFRESH_S, pk.buf, pk.len);
	pack_free(&pk);
}

/*
 * IMSG_FETCH_DONE (vault.c): 1 when it answers a refresh (taken), 0
 * when it is another's.
 */
int
oauth_fetch_done(const struct fetch_done *fd, const char *body, size_t len)
{
	struct orefresh	*r;
	json_t		*tok = NULL, *blob = NULL, *v, *rt;
	const char	*access;
	char		 detail[128], *text = NULL;
	double		 ttl = 3600;
	int		 ok = 0;

	if (!(fd->fetchid & OAUTH_FETCH_BIT))
		return (0);
	TAILQ_FOREACH(r, &orefreshes, entry)
		if (r->fetchid == fd->fetchid)
			break;
	if (r == NULL)
		return (1);
	if (fd->status == 0)
		snprintf(detail, sizeof(detail), "oauth refresh failed: the "
		    "token endpoint %s", fd->refused == CALL_SSRF ? "is at an "
		    "address that is not public" : "did not answer");
	else if (fd->status < 200 || fd->status > 299)
		snprintf(detail, sizeof(detail), "oauth refresh failed: the "
		    "token endpoint answered HTTP %u", fd->status);
	else if (fd->truncated || (tok = json_loadb(body, len, 0,
	    NULL)) == NULL || (access = json_string_value(json_object_get(tok,
	    "access_token"))) == NULL || *access == '\0')
		snprintf(detail, sizeof(detail), "oauth refresh failed: the "
		    "token endpoint's answer holds no access_token");
	else if ((blob = oauth_blob(store_secret_get, r->org,
	    r->sid)) == NULL)
		snprintf(detail, sizeof(detail), "oauth refresh failed: the "
		    "secret is gone");
	else {
		json_object_set_new(blob, "access_token", json_string(access));
		json_object_set_new(blob, "token", json_string(access));
		if ((v = json_object_get(tok, "expires_in")) != NULL &&
		    json_is_number(v) && json_number_value(v) > 0)
			ttl = json_number_value(v);
		json_object_set_new(blob, "expires_at",
		    json_integer((json_int_t)(time(NULL) + (time_t)ttl)));
		/* Providers may rotate the refresh token. */
		if ((rt = json_object_get(tok, "refresh_token")) != NULL &&
		    json_is_string(rt) && json_string_length(rt) > 0)
			json_object_set(blob, "refresh_token", rt);
		if ((text = json_dumps(blob, JSON_COMPACT)) == NULL)
			fatalx("%s: json_dumps", __func__);
		if (oauth_store(r->org, r->sid, text, strlen(text)) == 0) {
			ok = 1;
			strlcpy(detail, "oauth refresh ok", sizeof(detail));
		} else
			snprintf(detail, sizeof(detail), "oauth refresh "
			    "failed: the new token cannot be stored");
		freezero(text, strlen(text) + 1);
	}
	json_decref(tok);
	json_decref(blob);
	oauth_end(r, ok, detail);
	return (1);
}

/* The refreshed secret sealed again in place, in its own transaction. */
static int
oauth_store(int64_t org, int64_t sid, const char *text, size_t len)
{
	void	*sealed;
	size_t	 slen;
	int	 rc;

	if (secret_seal(org, sid, text, len, &sealed, &slen) == -1)
		return (-1);
	if (store_begin() == -1) {
		free(sealed);
		return (-1);
	}
	rc = store_secret_set_value(org, sid, sealed, slen);
	free(sealed);
	if (rc == -1 || store_commit() == -1) {
		log_warnx("oauth: secret %lld: the refreshed token cannot be "
		    "stored: %s", (long long)sid, store_error());
		store_rollback();
		return (-1);
	}
	return (0);
}

static void
oauth_end(struct orefresh *r, int ok, const char *detail)
{
	struct owaiter	 w[OAUTH_WAITERS_MAX];
	size_t		 i, nw = r->nw;
	int64_t		 sid = r->sid;

	if (ok) {
		oauth_fail_clear(r->org, sid);
		ofresh[ofresh_next % OAUTH_FAILS].org = r->org;
		ofresh[ofresh_next % OAUTH_FAILS].sid = sid;
		ofresh[ofresh_next++ % OAUTH_FAILS].at = time(NULL);
	}
	else
		oauth_fail_note(r->org, sid, detail);
	log_info("oauth: secret %lld: %s", (long long)sid, detail);
	/* Off the list first: a waiter may ask for another refresh. */
	memcpy(w, r->w, nw * sizeof(w[0]));
	TAILQ_REMOVE(&orefreshes, r, entry);
	norefreshes--;
	free(r);
	for (i = 0; i < nw; i++)
		w[i].fn(w[i].arg, sid, ok, detail);
}

/* ------------------------------------------------------------------ */
/* Before a key is used.                                               */

/*
 * Secrets ids[0..n) of org (read through get) about to be used for
 * tool: 0 when none needs a refresh; -1 with *wait the secret whose
 * expired token is to be refreshed first (resp untouched: the request
 * waits, then is decided again), or -1 with resp set to 502 when its
 * refresh failed in the last minute (treg's "oauth refresh failed").
 */
int
oauth_check_ids(secret_get_fn get, int64_t org, const int64_t *ids,
    size_t n, const char *tool, struct vault_resp *resp, int64_t *wait)
{
	char	 detail[128];
	size_t	 i;

	for (i = 0; i < n; i++) {
		if (oauth_failed(org, ids[i], detail, sizeof(detail))) {
			resp_error(resp, 502, "tool '%s': %s", tool, detail);
			return (-1);
		}
		if (oauth_stale(get, org, ids[i])) {
			*wait = ids[i];
			return (-1);
		}
	}
	return (0);
}

/* oauth_check_ids() on the secrets of bindings (a tool's, as stored). */
int
oauth_check(secret_get_fn get, int64_t org, json_t *bindings,
    const char *tool, struct vault_resp *resp, int64_t *wait)
{
	int64_t	 ids[BINDINGS_MAX];
	size_t	 i, n = 0;
	json_t	*b;

	json_array_foreach(bindings, i, b)
		if (n < BINDINGS_MAX)
			ids[n++] = json_integer_value(json_object_get(b,
			    "secret_id"));
	return (oauth_check_ids(get, org, ids, n, tool, resp, wait));
}
