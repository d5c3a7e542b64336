/*
 * vault_identity.c: a person across their orgs (treg's identity
 * tokens).  A membership's token is one (user, org) pair; an identity
 * token is the person, and acts in the org each request names with
 * X-Treg-Org (its slug or id), as treg's client sends it on every call:
 * `treg org use` and `--org` then really switch.  Without X-Treg-Org it
 * reaches only the person's own routes (who am I, my orgs, a new org,
 * my invites, my tokens); anything else is 400 "choose an org".
 *
 * An identity token is IDENTITY_TOKEN_PREFIX, the base64url of
 * {"scp":"team"}, then 32 random bytes in base64url: the prefix is how
 * treg's client tells a person's credential (which it may switch between
 * orgs) from one org's.  Only its hash is stored, as a membership's.
 *
 * They come from email sign-in (POST /auth/email/start, then /verify
 * with the code mailed, see vault_mail.c) and from another identity
 * token (POST /auth/cli-token); never from a membership's token, which
 * is one org's and must not widen into all of its person's orgs.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "log.h"
#include "vault.h"

/* Identity tokens a person keeps; a new one beyond evicts the oldest. */
#define IDENTITY_TOKENS_MAX	64

static int	identity_orgless(enum api_route);
static int	identity_only(const struct vault_req *, struct vault_resp *,
		    const char *);
static void	auth_cli_token(struct vault_req *, struct vault_resp *);
static void	auth_revoke(struct vault_req *, struct vault_resp *);
static int	invite_mine_view(const struct store_invite *, void *);
static void	invites_mine(struct vault_req *, struct vault_resp *);
static void	invite_accept_id(struct vault_req *, struct vault_resp *);
static int	ctl_token_member(const struct store_membership *, void *);
static int	ctl_token_identity(int64_t, const char *, void *);

const struct vault_route vault_identity_routes[] = {
	{ ROUTE_AUTH_CLI_TOKEN,		ROLE_VIEWER,	auth_cli_token },
	{ ROUTE_AUTH_REVOKE,		ROLE_VIEWER,	auth_revoke },
	{ ROUTE_INVITES_MINE,		ROLE_VIEWER,	invites_mine },
	{ ROUTE_INVITE_ACCEPT_ID,	ROLE_VIEWER,	invite_accept_id },
	{ ROUTE_NONE,			ROLE_NONE,	NULL }
};

int
identity_auth(const uint8_t hash[TOKEN_HASH_LEN], const char *org,
    struct auth *a)
{
	uint8_t	 mhash[TOKEN_HASH_LEN];
	char	 email[STORE_EMAIL_MAX + 1];
	int64_t	 uid;
	int	 rc, is_agent;

	if ((rc = store_identity_by_token(hash, &uid, email, sizeof(email),
	    &is_agent)) != 0) {
		if (rc == -1)
			log_warnx("authentication: %s", store_error());
		return (rc);
	}
	if (org[0] != '\0') {
		/* The membership's own row: the same caller its token is. */
		rc = store_identity_member_hash(hash, org, mhash);
		if (rc == 0)
			rc = auth_lookup(mhash, a);
		explicit_bzero(mhash, sizeof(mhash));
		if (rc == -1)
			return (-1);
		if (rc == 0) {
			a->kind = AUTH_IDENTITY;
			return (0);
		}
	}
	memset(a, 0, sizeof(*a));
	a->kind = AUTH_IDENTITY;
	a->user_id = uid;
	a->is_agent = is_agent;
	strlcpy(a->email, email, sizeof(a->email));
	return (org[0] != '\0' ? 2 : 0);
}

/*
 * /call's caller by an identity token: 0 in the org X-Treg-Org chose,
 * 2 refused (none chosen: resp set), 1 no such token, -1 the database.
 */
int
identity_call_auth(const struct call_request *cr, struct auth *a,
    struct vault_resp *resp)
{
	int	 rc;

	if ((rc = identity_auth(cr->token_hash, cr->org, a)) == 1 ||
	    rc == -1 || a->membership_id != 0)
		return (rc);
	auth_clear(a);
	resp_error(resp, 400, "%s", IDENTITY_CHOOSE_ORG);
	return (2);
}

/* The person's own routes: they need no org. */
static int
identity_orgless(enum api_route r)
{
	switch (r) {
	case ROUTE_AUTH_ME:
	case ROUTE_ORGS_LIST:
	case ROUTE_ORGS_CREATE:
	case ROUTE_AUTH_CLI_TOKEN:
	case ROUTE_AUTH_REVOKE:
	case ROUTE_INVITES_MINE:
	case ROUTE_INVITE_ACCEPT_ID:
		return (1);
	default:
		return (0);
	}
}

int
auth_enter(struct vault_req *req, struct vault_resp *resp, int rc,
    enum role need)
{
	if (req->auth->membership_id != 0)
		return (require_role(req, resp, need));
	if (identity_orgless(req->route))
		return (0);
	if (rc == 2)
		resp_error(resp, 400, "%s: X-Treg-Org names no org of yours",
		    IDENTITY_CHOOSE_ORG);
	else
		resp_error(resp, 400, "%s", IDENTITY_CHOOSE_ORG);
	return (-1);
}

/*
 * A new identity token of the user, inside the caller's transaction:
 * written to token (IDENTITY_TOKEN_LEN + 1), shown once, zeroed by the
 * caller.  0, or -1 (the database).
 */
int
identity_mint(int64_t user, char *token)
{
	char	 raw[TOKEN_LEN + 1], now[STORE_TIME_MAX];
	uint8_t	 hash[TOKEN_HASH_LEN];
	int	 rc;

	token_new(raw, hash);
	strlcpy(token, IDENTITY_TOKEN_PREFIX, IDENTITY_TOKEN_LEN + 1);
	strlcat(token, raw, IDENTITY_TOKEN_LEN + 1);
	explicit_bzero(raw, sizeof(raw));
	token_hash(token, strlen(token), hash);
	now_iso(now, sizeof(now));
	rc = store_identity_trim(user, IDENTITY_TOKENS_MAX - 1) == -1 ||
	    store_identity_insert(user, hash, now) == -1 ? -1 : 0;
	explicit_bzero(hash, sizeof(hash));
	if (rc == -1)
		explicit_bzero(token, IDENTITY_TOKEN_LEN + 1);
	return (rc);
}

/* Routes a person's identity token only may take: 0, or -1 answered. */
static int
identity_only(const struct vault_req *req, struct vault_resp *resp,
    const char *what)
{
	if (req->auth->kind == AUTH_IDENTITY && !req->auth->is_agent)
		return (0);
	if (req->auth->is_agent)
		resp_error(resp, 403, "an agent token is a machine identity: "
		    "it cannot %s", what);
	else
		resp_error(resp, 403, "this token is one org's: it cannot %s "
		    "(sign in as a person: POST /auth/email/start, or treg "
		    "login --email)", what);
	return (-1);
}

/*
 * POST (or GET, as treg's client asks) /auth/cli-token: another token
 * of the person, as treg's client takes one when it switches orgs; org
 * is the org X-Treg-Org chose, null when none.
 */
static void
auth_cli_token(struct vault_req *req, struct vault_resp *resp)
{
	const struct auth	*a = req->auth;
	char			 token[IDENTITY_TOKEN_LEN + 1];

	if (identity_only(req, resp, "mint a person's token") == -1 ||
	    db_begin(resp) == -1)
		return;
	if (identity_mint(a->user_id, token) == -1) {
		db_fail(resp, "mint a token");
		return;
	}
	if (db_commit(resp) == -1) {
		explicit_bzero(token, sizeof(token));
		return;
	}
	resp_ok(resp, json_pack("{s:s,s:s,s:s?,s:s}", "token", token,
	    "email", a->email, "org", a->membership_id != 0 ? a->org_slug :
	    NULL, "kind", "identity"));
	explicit_bzero(token, sizeof(token));
}

/*
 * POST /auth/revoke-tokens: every identity token of the person ends at
 * once (the one asking too); the answer carries a new one, as treg's
 * does.  Membership tokens are each org's, rotated there.
 */
static void
auth_revoke(struct vault_req *req, struct vault_resp *resp)
{
	const struct auth	*a = req->auth;
	char			 token[IDENTITY_TOKEN_LEN + 1];
	int64_t			 n;

	if (identity_only(req, resp, "revoke a person's tokens") == -1 ||
	    db_begin(resp) == -1)
		return;
	if (store_identity_count(a->user_id, &n) == -1 ||
	    store_identity_revoke(a->user_id) == -1 ||
	    identity_mint(a->user_id, token) == -1) {
		db_fail(resp, "revoke tokens");
		return;
	}
	if (db_commit(resp) == -1) {
		explicit_bzero(token, sizeof(token));
		return;
	}
	resp_ok(resp, json_pack("{s:I,s:s,s:s}", "revoked", (json_int_t)n,
	    "token", token, "email", a->email));
	explicit_bzero(token, sizeof(token));
	log_info("user %lld revoked %lld identity tokens",
	    (long long)a->user_id, (long long)n);
}

static int
invite_mine_view(const struct store_invite *iv, void *arg)
{
	json_t	*list = arg, *access, *o;
	char	 expires[STORE_TIME_MAX];

	access = iv->tool_access != NULL ? json_loads(iv->tool_access, 0,
	    NULL) : NULL;
	iso_time(iv->expires_at, expires, sizeof(expires));
	o = json_pack("{s:I,s:I,s:s,s:s,s:s,s:s,s:s,s:o,s:b}", "id",
	    (json_int_t)iv->id, "org_id", (json_int_t)iv->org_id, "org",
	    iv->org_slug, "name", iv->org_name, "email", iv->email, "role",
	    iv->role, "expires_at", expires, "tool_access",
	    access != NULL ? access : json_null(), "local_run_enabled",
	    iv->local_run_enabled);
	if (o == NULL)
		fatalx("%s: json_pack", __func__);
	json_array_append_new(list, o);
	return (0);
}

/* GET /invites/mine: the person's pending invites, from every org. */
static void
invites_mine(struct vault_req *req, struct vault_resp *resp)
{
	json_t	*list;

	if (req->auth->is_agent) {
		resp_error(resp, 403, "an agent token is a machine identity: "
		    "it has no invites");
		return;
	}
	list = json_array();
	if (store_invites_of_email(req->auth->email, (int64_t)time(NULL),
	    invite_mine_view, list) == -1) {
		json_decref(list);
		db_fail(resp, "list invites");
		return;
	}
	resp_ok(resp, list);
}

/*
 * POST /invites/{id}/accept: the person joins with the identity token
 * they hold (no code: the invite is theirs by its email).  Another
 * person's invite is not found, as if it were not there.
 */
static void
invite_accept_id(struct vault_req *req, struct vault_resp *resp)
{
	struct invite_found	 f;
	char			 token[TOKEN_LEN + 1];
	int64_t			 uid;
	int			 rc;

	if (identity_only(req, resp, "accept an invite by its id "
	    "(POST /invites/accept takes its code)") == -1)
		return;
	memset(&f, 0, sizeof(f));
	if (db_begin(resp) == -1)
		return;
	rc = store_invite_by_id(req->id1, invite_copy, &f);
	if (rc == 0 && strcmp(f.email, req->auth->email) != 0)
		rc = 1;
	/* The membership's token is not shown: the identity reaches it. */
	if (invite_check(rc, &f, req->auth->email, resp) == 0 &&
	    invite_join(&f, req->auth->email, token, &uid, resp) == 0) {
		explicit_bzero(token, sizeof(token));
		resp_ok(resp, json_pack("{s:s,s:I,s:s,s:s,s:I}", "org", f.slug,
		    "org_id", (json_int_t)f.org_id, "name", f.name, "role",
		    role_name(f.role), "user_id", (json_int_t)uid));
	}
	free(f.access);
}

/* ------------------------------------------------------------------ */
/* tregctl: a person's tokens.                                         */

/* Never a hash: which token it is, where it acts, since when. */
static int
ctl_token_member(const struct store_membership *m, void *arg)
{
	json_array_append_new(arg, json_pack("{s:s,s:I,s:s,s:s,s:s}",
	    "kind", m->is_agent ? "agent" : "membership",
	    "id", (json_int_t)m->id, "org", m->org_slug ? m->org_slug : "",
	    "role", m->role ? m->role : "", "created_at",
	    m->created_at ? m->created_at : ""));
	return (0);
}

static int
ctl_token_identity(int64_t id, const char *created_at, void *arg)
{
	json_array_append_new(arg, json_pack("{s:s,s:I,s:n,s:n,s:s}",
	    "kind", "identity", "id", (json_int_t)id, "org", "role",
	    "created_at", created_at));
	return (0);
}

/*
 * show tokens EMAIL: the person's membership tokens (one per org) and
 * identity tokens (vault_identity.c), oldest first; only hashes are
 * kept, and none is shown.
 */
int
ctl_show_tokens(const struct ctl_request *cr, json_t **reply)
{
	char	 email[STORE_EMAIL_MAX + 1];
	json_t	*list;
	int64_t	 uid;

	if (ctl_user_of(cr, email, sizeof(email), &uid, reply) == -1)
		return (-1);
	list = json_array();
	if (store_user_memberships(uid, ctl_token_member, list) == -1 ||
	    store_identity_tokens(uid, ctl_token_identity, list) == -1) {
		json_decref(list);
		return (ctl_fail(__func__, reply));
	}
	store_rollback();
	*reply = list;
	return (0);
}

/*
 * token revoke EMAIL identity: every identity token of the person,
 * refused at once; their memberships (each org's token) stay.
 */
int
ctl_identity_revoke(const struct ctl_request *cr, json_t **reply)
{
	char	 email[STORE_EMAIL_MAX + 1];
	int64_t	 uid, n = 0;

	if (ctl_user_of(cr, email, sizeof(email), &uid, reply) == -1)
		return (-1);
	if (store_identity_count(uid, &n) == -1 ||
	    store_identity_revoke(uid) == -1)
		return (ctl_fail(__func__, reply));
	if (n == 0) {
		store_rollback();
		*reply = ctl_errorf("%s has no identity token", email);
		return (-1);
	}
	if (store_commit() == -1)
		return (ctl_fail(__func__, reply));
	*reply = json_pack("{s:I}", "revoked", (json_int_t)n);
	log_info("tregctl: %lld identity token(s) of user %lld revoked",
	    (long long)n, (long long)uid);
	return (0);
}
