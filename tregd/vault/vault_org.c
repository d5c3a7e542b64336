/*
 * vault_org.c: identity.  Users and orgs (SPEC.md sections 1 and 2), the
 * caller's membership in the org of a path, and the tregctl commands
 * that manage users, orgs and tokens.  Invites, members and agents are
 * vault_member.c's.
 *
 * A token is a membership row: killing a token is deleting that row, so
 * leaving, removal, org deletion and agent revocation take effect on the
 * very next request.  Tokens and invite codes are shown once and only
 * their hashes are stored; neither is ever logged.
 *
 * The /orgs/{id}/... routes act with the caller's own membership in org
 * {id}, found by the token's user: a person in two orgs may manage either
 * with either token.  No such membership (another org, or a made-up id)
 * answers 404, never 403.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "store.h"
#include "vault.h"

#define EMAIL_LEN_MAX	254
#define SLUG_BASE_MAX	64	/* leaves room for "-N" and agent emails */
#define SLUG_TRIES_MAX	100000
#define CTL_ORGS_MAX	256	/* tokens of one user tregctl revokes */

/* A row of GET /orgs or of tregctl show users being filled. */
struct org_rows {
	const struct auth	*auth;	/* NULL: tregctl's shape */
	json_t			*list;
};

static int	org_insert(const char *, int64_t *, char *, size_t);
static int64_t	tool_count(int64_t, enum role, const char *);
static int	org_view(const struct store_membership *, void *);
static int	ctl_user_view(const struct store_user *, void *);
static int	ctl_org_view(const struct store_org_row *, void *);
static int	ctl_user_membership(const char *, const char *, enum role *,
		    int64_t *, char *, size_t, json_t **);

static void	users_create(struct vault_req *, struct vault_resp *);
static void	orgs_create(struct vault_req *, struct vault_resp *);
static void	orgs_list(struct vault_req *, struct vault_resp *);
static void	org_delete(struct vault_req *, struct vault_resp *);

/*
 * Org-scoped routes need only a valid token here: the role that counts
 * is the caller's role in the org of the path, checked by org_enter().
 */
const struct vault_route vault_org_routes[] = {
	{ ROUTE_USERS_CREATE,	ROLE_NONE,	users_create },
	{ ROUTE_ORGS_CREATE,	ROLE_VIEWER,	orgs_create },
	{ ROUTE_ORGS_LIST,	ROLE_VIEWER,	orgs_list },
	{ ROUTE_ORG_DELETE,	ROLE_VIEWER,	org_delete },
	{ ROUTE_NONE,		ROLE_NONE,	NULL }
};

/* ------------------------------------------------------------------ */
/* Names.                                                              */

/*
 * Trim, lower-case and check an email address: one '@' with something
 * on each side, no spaces or control characters, at most 254 bytes.
 */
int
email_normalize(const char *in, char *out, size_t outlen)
{
	const unsigned char	*s = (const unsigned char *)in;
	size_t			 n, i, at = 0, nat = 0;

	while (*s != '\0' && isspace(*s))
		s++;
	n = strlen((const char *)s);
	while (n > 0 && isspace(s[n - 1]))
		n--;
	if (n == 0 || n > EMAIL_LEN_MAX || n >= outlen)
		return (-1);
	for (i = 0; i < n; i++) {
		if (s[i] <= 0x20 || s[i] == 0x7f)
			return (-1);
		if (s[i] == '@') {
			at = i;
			nat++;
		}
		out[i] = s[i] < 0x80 ? tolower(s[i]) : s[i];
	}
	out[n] = '\0';
	if (nat != 1 || at == 0 || at == n - 1)
		return (-1);
	return (0);
}

/*
 * An org's slug: lower-case ASCII letters and digits, every run of
 * anything else one '-', no '-' at either end, "org" when nothing is
 * left.  Cut to SLUG_BASE_MAX bytes so a "-N" suffix always fits.
 */
void
org_slugify(const char *name, char *out, size_t outlen)
{
	const unsigned char	*s = (const unsigned char *)name;
	size_t			 o = 0, max;
	int			 dash = 0;

	max = outlen - 1 < SLUG_BASE_MAX ? outlen - 1 : SLUG_BASE_MAX;
	for (; *s != '\0' && o < max; s++) {
		if (*s < 0x80 && isalnum(*s)) {
			if (dash && o > 0 && o + 1 < max)
				out[o++] = '-';
			else if (dash && o > 0)
				break;
			dash = 0;
			out[o++] = tolower(*s);
		} else
			dash = 1;
	}
	out[o] = '\0';
	if (o == 0)
		strlcpy(out, "org", outlen);
}

/* ------------------------------------------------------------------ */
/* Rows.                                                               */

/*
 * The user of an email, created (a person, or an agent) unless it
 * exists: 0, with *was_agent what the row says, or -1.  A row another
 * request has just made is found again.
 */
int
user_ensure(const char *email, int is_agent, int64_t *id, int *was_agent)
{
	char	 now[STORE_TIME_MAX];
	int	 rc;

	*was_agent = is_agent;
	if ((rc = store_user_by_email(email, id, was_agent)) != 1)
		return (rc);
	now_iso(now, sizeof(now));
	if ((rc = store_user_insert(email, is_agent, now, id)) !=
	    STORE_CONFLICT)
		return (rc);
	return (store_user_by_email(email, id, was_agent) == 0 ? 0 : -1);
}

/*
 * A new org with a free slug from its name: the first of "slug",
 * "slug-2", ... that no org has, and that no other request takes first.
 */
static int
org_insert(const char *name, int64_t *id, char *slug, size_t len)
{
	char	 base[SLUG_BASE_MAX + 1], now[STORE_TIME_MAX];
	int64_t	 other;
	int	 n, rc;

	org_slugify(name, base, sizeof(base));
	now_iso(now, sizeof(now));
	for (n = 1; n <= SLUG_TRIES_MAX; n++) {
		if (n == 1)
			strlcpy(slug, base, len);
		else
			snprintf(slug, len, "%s-%d", base, n);
		if ((rc = store_org_by_slug(slug, &other)) == -1)
			return (-1);
		if (rc == 0)
			continue;
		if ((rc = store_org_insert(slug, name, now, id)) !=
		    STORE_CONFLICT)
			return (rc);
	}
	log_warnx("%s: no free slug for an org", __func__);
	return (-1);
}

/*
 * A new membership and its token (written to token, TOKEN_LEN + 1
 * bytes): the caller shows it once and zeroes it.  STORE_CONFLICT when
 * the user is a member already.
 */
int
membership_new(int64_t user, int64_t org, enum role role,
    const char *access, int local_run, const char *agent_name, char *token)
{
	struct store_membership	 m;
	uint8_t			 hash[TOKEN_HASH_LEN];
	char			 now[STORE_TIME_MAX];
	int			 rc;

	memset(&m, 0, sizeof(m));
	now_iso(now, sizeof(now));
	m.user_id = user;
	m.org_id = org;
	m.role = role_name(role);
	m.tool_access = access;
	m.local_run_enabled = local_run != 0;
	m.agent_name = agent_name;
	m.created_at = now;
	token_new(token, hash);
	rc = store_membership_insert(&m, hash, NULL);
	explicit_bzero(hash, sizeof(hash));
	if (rc != 0)
		explicit_bzero(token, TOKEN_LEN + 1);
	return (rc);
}

/* The tools a membership sees: all for owners and null lists. */
static int64_t
tool_count(int64_t org, enum role role, const char *access)
{
	int64_t	 n;

	if (role == ROLE_OWNER || access == NULL || *access == '\0')
		access = NULL;
	if (store_org_tool_count(org, access, &n) == -1)
		return (0);
	return (n);
}

/* ------------------------------------------------------------------ */
/* Request helpers.                                                    */

int
body_email(struct vault_req *req, struct vault_resp *resp, char *email,
    size_t len)
{
	const char	*s;

	if (body_str(req, resp, "email", 1, 1024, &s) == -1)
		return (-1);
	if (email_normalize(s, email, len) == -1) {
		resp_error(resp, 422, "invalid email address");
		return (-1);
	}
	return (0);
}

/*
 * treg compatibility: the machine identities' addresses (@agents.local)
 * never sign up or take an invite; their tokens come from the agents
 * route.  0, or -1 with resp set (403).
 */
int
body_email_person(struct vault_resp *resp, const char *email)
{
	if (!compat_agent_email(email))
		return (0);
	resp_error(resp, 403, "an agent address (@%s) cannot be used to sign "
	    "in: mint an agent token with POST /orgs/{id}/agents",
	    "agents.local");
	return (-1);
}

/*
 * treg's sign-up field webhook_url: where the owner's alerts of invalid
 * credentials go (vault_health.c).  The rules of a base_url: http(s), no
 * credentials in it, no internal address unless `relay allow-private'
 * (the relay checks the addresses it resolves to again when it posts).
 * *url NULL when absent or empty.  0, or -1 with resp set (422).
 */
int
body_webhook(struct vault_req *req, struct vault_resp *resp,
    const char **url)
{
	char	 host[HOST_LEN_MAX], err[256];

	*url = NULL;
	if (body_str(req, resp, "webhook_url", 0, URL_LEN_MAX, url) == -1)
		return (-1);
	if (*url != NULL && **url == '\0')
		*url = NULL;
	if (*url == NULL)
		return (0);
	if (url_check_base(*url, vault_conf.relay_allow_private, host,
	    sizeof(host), err, sizeof(err)) == -1) {
		resp_error(resp, 422, "field 'webhook_url': %s", err);
		return (-1);
	}
	return (0);
}

/* ------------------------------------------------------------------ */
/* Users and orgs.                                                     */

static void
users_create(struct vault_req *req, struct vault_resp *resp)
{
	char	 email[EMAIL_LEN_MAX + 1], slug[NAME_LEN_MAX + 1];
	char	 token[TOKEN_LEN + 1], now[STORE_TIME_MAX];
	const char *hook = NULL;
	int64_t	 uid, oid;
	int	 rc, is_agent;

	if (!vault_conf.signup_open) {
		resp_error(resp, 403, "signup is closed on this server: ask an "
		    "operator (tregctl user add)");
		return;
	}
	if (body_email(req, resp, email, sizeof(email)) == -1 ||
	    body_email_person(resp, email) == -1 ||
	    body_webhook(req, resp, &hook) == -1)
		return;
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	now_iso(now, sizeof(now));
	if ((rc = store_user_by_email(email, &uid, &is_agent)) == 1)
		rc = store_user_insert(email, 0, now, &uid);
	else if (rc == 0)
		rc = STORE_CONFLICT;
	if (rc == STORE_CONFLICT) {
		resp_refuse(resp, 409, "email already registered");
		return;
	}
	if (rc == -1 || org_insert(email, &oid, slug, sizeof(slug)) == -1 ||
	    membership_new(uid, oid, ROLE_OWNER, NULL, 1, NULL, token) != 0 ||
	    (hook != NULL && store_webhook_set(oid, uid, hook) == -1) ||
	    store_commit() == -1) {
		explicit_bzero(token, sizeof(token));
		db_fail(resp, "signup");
		return;
	}
	resp_ok(resp, json_pack("{s:I,s:s,s:s,s:I,s:s,s:s}",
	    "id", (json_int_t)uid, "email", email, "org", slug,
	    "org_id", (json_int_t)oid, "role", "owner", "token", token));
	explicit_bzero(token, sizeof(token));
	log_info("user %lld signed up", (long long)uid);
}

static void
orgs_create(struct vault_req *req, struct vault_resp *resp)
{
	char		 name[NAME_LEN_MAX + 1], slug[NAME_LEN_MAX + 1];
	char		 token[TOKEN_LEN + 1], itoken[IDENTITY_TOKEN_LEN + 1];
	const char	*s;
	size_t		 n;
	int64_t		 oid;
	int		 person = req->auth->kind == AUTH_IDENTITY;

	if (org_refuse_machine(req, resp) == -1)
		return;
	if (body_str(req, resp, "name", 1, 1024, &s) == -1)
		return;
	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n < sizeof(name)) {
		memcpy(name, s, n);
		name[n] = '\0';
	}
	if (n >= sizeof(name) || !valid_name(name)) {
		resp_error(resp, 422, "field 'name' must be 1 to %d bytes "
		    "without control characters", NAME_LEN_MAX);
		return;
	}
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	/*
	 * A person's identity token gets another identity token (treg's
	 * client stores the answer's token): not the new org's membership
	 * token, which would leave the client unable to reach the others.
	 */
	if (org_insert(name, &oid, slug, sizeof(slug)) == -1 ||
	    membership_new(req->auth->user_id, oid, ROLE_OWNER, NULL, 1,
	    NULL, token) != 0 || (person && identity_mint(req->auth->user_id,
	    itoken) == -1) || store_commit() == -1) {
		explicit_bzero(token, sizeof(token));
		explicit_bzero(itoken, sizeof(itoken));
		db_fail(resp, "create org");
		return;
	}
	resp_ok(resp, json_pack("{s:s,s:I,s:s,s:s,s:s,s:s}", "org", slug,
	    "org_id", (json_int_t)oid, "name", name, "role", "owner",
	    "token", person ? itoken : token, "token_kind", person ?
	    "identity" : "membership"));
	explicit_bzero(token, sizeof(token));
	explicit_bzero(itoken, sizeof(itoken));
}

/*
 * A membership of a user: in GET /orgs (the caller's token's org is
 * "active"), or tregctl show users' shorter shape.
 */
static int
org_view(const struct store_membership *m, void *arg)
{
	struct org_rows	*r = arg;
	enum role	 role = role_from_name(m->role);
	json_t		*o;

	if (r->auth == NULL)
		o = json_pack("{s:s,s:s}", "org", m->org_slug, "role",
		    m->role);
	else
		o = json_pack("{s:I,s:s,s:s,s:s,s:b,s:I}", "org_id",
		    (json_int_t)m->org_id, "slug", m->org_slug, "name",
		    m->org_name, "role", role_name(role), "active",
		    m->org_id == r->auth->org_id, "tool_count",
		    (json_int_t)tool_count(m->org_id, role, m->tool_access));
	if (o == NULL)
		fatalx("%s: json_pack", __func__);
	json_array_append_new(r->list, o);
	return (0);
}

/*
 * An agent acts in its own org by its token and never as a user: it
 * makes no org (it would own it, and owners escape every limit set on
 * it) and lists none, as treg refuses it (its client then reads its one
 * org from GET /auth/me).  0, or -1 answered.
 */
int
org_refuse_machine(struct vault_req *req, struct vault_resp *resp)
{
	if (req->auth == NULL || !req->auth->is_agent)
		return (0);
	resp_error(resp, 403, "this token belongs to a machine identity — "
	    "it can call this team's tools, but cannot act as a user");
	return (-1);
}

static void
orgs_list(struct vault_req *req, struct vault_resp *resp)
{
	struct org_rows	 r = { req->auth, json_array() };

	if (org_refuse_machine(req, resp) == -1)
		return;

	if (store_user_memberships(req->auth->user_id, org_view, &r) == -1) {
		json_decref(r.list);
		db_fail(resp, "list orgs");
		return;
	}
	resp_ok(resp, r.list);
}

static void
org_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	char		 confirm[NAME_LEN_MAX + 1];

	if (org_enter(req, resp, ROLE_OWNER, &ctx) == -1)
		return;
	if (query_param(req->query, "confirm", confirm,
	    sizeof(confirm)) == -1 || strcmp(confirm, ctx.slug) != 0) {
		resp_error(resp, 422, "deleting an org removes every object "
		    "of it: confirm with ?confirm=%s", ctx.slug);
		return;
	}
	if (store_begin() == -1 || store_org_remove(ctx.org_id) == -1 ||
	    store_commit() == -1) {
		db_fail(resp, "delete org");
		return;
	}
	resp_ok(resp, json_pack("{s:I}", "deleted_org",
	    (json_int_t)ctx.org_id));
	log_info("org %lld deleted by user %lld", (long long)ctx.org_id,
	    (long long)req->auth->user_id);
}

/* ------------------------------------------------------------------ */
/* tregctl.                                                            */

/* The database failed: say so, logged with why, and roll back. */
int
ctl_fail(const char *func, json_t **reply)
{
	log_warnx("%s: database error: %s", func, store_error());
	store_rollback();
	*reply = ctl_errorf("database error");
	return (-1);
}

static int
ctl_user_view(const struct store_user *u, void *arg)
{
	struct org_rows	 r = { NULL, json_array() };
	json_t		*list = arg;

	if (store_user_memberships(u->id, org_view, &r) == -1) {
		json_decref(r.list);
		return (-1);
	}
	json_array_append_new(list, json_pack("{s:I,s:s,s:b,s:s,s:o}",
	    "id", (json_int_t)u->id, "email", u->email, "is_agent",
	    u->is_agent, "created_at", u->created_at, "memberships", r.list));
	return (0);
}

int
ctl_show_users(const struct ctl_request *cr, json_t **reply)
{
	json_t	*list = json_array();

	if (store_users_each(ctl_user_view, list) == -1) {
		json_decref(list);
		*reply = ctl_errorf("database error: %s", store_error());
		return (-1);
	}
	*reply = list;
	return (0);
}

static int
ctl_org_view(const struct store_org_row *o, void *arg)
{
	json_array_append_new(arg, json_pack("{s:I,s:s,s:s,s:I,s:I,s:I,s:s}",
	    "id", (json_int_t)o->id, "slug", o->slug, "name", o->name,
	    "members", (json_int_t)o->members, "tools", (json_int_t)o->tools,
	    "secrets", (json_int_t)o->secrets, "created_at", o->created_at));
	return (0);
}

int
ctl_show_orgs(const struct ctl_request *cr, json_t **reply)
{
	json_t	*list = json_array();

	if (store_orgs_each(ctl_org_view, list) == -1) {
		json_decref(list);
		*reply = ctl_errorf("database error: %s", store_error());
		return (-1);
	}
	*reply = list;
	return (0);
}

/*
 * Inside ctl_user_add's transaction: the org named (by slug, else by
 * name when exactly one org has it), or a new org of that name, or
 * without a name a new personal org; the user owns a new one.  0, or -1
 * with the reply set.
 */
static int
ctl_user_membership(const char *org, const char *email, enum role *role,
    int64_t *oid, char *slug, size_t len, json_t **reply)
{
	char	 oname[NAME_LEN_MAX + 1];
	int	 found = 1;

	if (org[0] != '\0' && (found = store_org_find(org, oid, slug,
	    len)) == -1)
		return (ctl_fail(__func__, reply));
	if (found == 2) {
		store_rollback();
		*reply = ctl_errorf("several orgs are named '%s': give the "
		    "slug", org);
		return (-1);
	}
	if (found == 0)
		return (0);
	*role = ROLE_OWNER;
	strlcpy(oname, org[0] != '\0' ? org : email, sizeof(oname));
	if (org_insert(oname, oid, slug, len) == -1)
		return (ctl_fail(__func__, reply));
	return (0);
}

/*
 * The operator's way in: the user (created unless it exists) gets a
 * membership of the named org, or of a new org of that name (as owner),
 * or of a new personal org.  The token is printed once.
 */
int
ctl_user_add(const struct ctl_request *cr, json_t **reply)
{
	char		 email[EMAIL_LEN_MAX + 1], slug[NAME_LEN_MAX + 1];
	char		 token[TOKEN_LEN + 1];
	enum role	 role = ROLE_MEMBER;
	int64_t		 uid, oid = 0;
	int		 rc, is_agent;

	if (memchr(cr->email, '\0', sizeof(cr->email)) == NULL ||
	    memchr(cr->org, '\0', sizeof(cr->org)) == NULL ||
	    memchr(cr->role, '\0', sizeof(cr->role)) == NULL) {
		*reply = ctl_errorf("malformed request");
		return (-1);
	}
	if (email_normalize(cr->email, email, sizeof(email)) == -1) {
		*reply = ctl_errorf("invalid email address");
		return (-1);
	}
	if (cr->role[0] != '\0' &&
	    (role = role_from_name(cr->role)) == ROLE_NONE) {
		*reply = ctl_errorf("unknown role '%s': viewer, member, admin "
		    "or owner", cr->role);
		return (-1);
	}
	if (cr->org[0] != '\0' && !valid_name(cr->org)) {
		*reply = ctl_errorf("invalid org name");
		return (-1);
	}
	if (store_begin() == -1 || user_ensure(email, 0, &uid,
	    &is_agent) == -1)
		return (ctl_fail(__func__, reply));
	if (is_agent) {
		store_rollback();
		*reply = ctl_errorf("%s is an agent: manage it through its "
		    "org's agents", email);
		return (-1);
	}
	if (ctl_user_membership(cr->org, email, &role, &oid, slug,
	    sizeof(slug), reply) == -1)
		return (-1);
	if ((rc = membership_new(uid, oid, role, NULL, 1, NULL,
	    token)) == STORE_CONFLICT) {
		store_rollback();
		*reply = ctl_errorf("%s is already a member of %s "
		    "(tregctl token revoke first to get a new token)",
		    email, slug);
		return (-1);
	}
	if (rc != 0 || store_commit() == -1) {
		explicit_bzero(token, sizeof(token));
		return (ctl_fail(__func__, reply));
	}
	*reply = json_pack("{s:s,s:s,s:I,s:s,s:s}", "email", email, "org",
	    slug, "org_id", (json_int_t)oid, "role", role_name(role),
	    "token", token);
	explicit_bzero(token, sizeof(token));
	log_info("tregctl: user %lld added to org %lld as %s",
	    (long long)uid, (long long)oid, role_name(role));
	return (0);
}

/*
 * The user of cr->email, in a transaction begun here: 0 with *uid, or
 * -1 with *reply the error (no transaction then).
 */
int
ctl_user_of(const struct ctl_request *cr, char *email, size_t len,
    int64_t *uid, json_t **reply)
{
	int	 rc, is_agent;

	if (memchr(cr->email, '\0', sizeof(cr->email)) == NULL ||
	    email_normalize(cr->email, email, len) == -1) {
		*reply = ctl_errorf("invalid email address");
		return (-1);
	}
	if (store_begin() == -1 ||
	    (rc = store_user_by_email(email, uid, &is_agent)) == -1)
		return (ctl_fail(__func__, reply));
	if (rc == 1) {
		store_rollback();
		*reply = ctl_errorf("no user %s", email);
		return (-1);
	}
	return (0);
}

int
ctl_token_revoke(const struct ctl_request *cr, json_t **reply)
{
	char		 email[EMAIL_LEN_MAX + 1];
	int64_t		 uid, oids[CTL_ORGS_MAX], idn = 0;
	size_t		 n, i;

	if (memchr(cr->org, '\0', sizeof(cr->org)) == NULL) {
		*reply = ctl_errorf("malformed request");
		return (-1);
	}
	if (ctl_user_of(cr, email, sizeof(email), &uid, reply) == -1)
		return (-1);
	if (store_user_org_ids(uid, cr->org, oids, CTL_ORGS_MAX, &n) == -1)
		return (ctl_fail(__func__, reply));
	for (i = 0; i < n; i++)
		if (store_membership_remove(uid, oids[i]) == -1)
			return (ctl_fail(__func__, reply));
	/* In every org: the person's own tokens go too (identity tokens). */
	if (cr->org[0] == '\0' && (store_identity_count(uid, &idn) == -1 ||
	    store_identity_revoke(uid) == -1))
		return (ctl_fail(__func__, reply));
	n += idn;
	if (n == 0) {
		store_rollback();
		*reply = ctl_errorf("%s has no token%s%s", email,
		    cr->org[0] ? " in org " : "", cr->org);
		return (-1);
	}
	if (store_commit() == -1)
		return (ctl_fail(__func__, reply));
	*reply = json_pack("{s:i}", "revoked", (int)n);
	log_info("tregctl: %zu token(s) of user %lld revoked", n,
	    (long long)uid);
	return (0);
}

int
ctl_org_delete(const struct ctl_request *cr, json_t **reply)
{
	int64_t	 oid = 0;
	int	 rc;

	if (memchr(cr->org, '\0', sizeof(cr->org)) == NULL) {
		*reply = ctl_errorf("malformed request");
		return (-1);
	}
	if (store_begin() == -1 ||
	    (rc = store_org_by_slug(cr->org, &oid)) == -1)
		return (ctl_fail(__func__, reply));
	if (rc == 1) {
		store_rollback();
		*reply = ctl_errorf("no org with the slug '%s'", cr->org);
		return (-1);
	}
	if (store_org_remove(oid) == -1 || store_commit() == -1)
		return (ctl_fail(__func__, reply));
	*reply = json_pack("{s:I}", "deleted_org", (json_int_t)oid);
	log_info("tregctl: org %lld deleted", (long long)oid);
	return (0);
}
