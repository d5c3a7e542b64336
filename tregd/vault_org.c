/*
 * vault_org.c: identity.  Users, orgs, invites, members, roles, access
 * lists and agents (SPEC.md sections 1 and 2), and the tregctl commands
 * that manage them.
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
#include <time.h>

#include "store_sqlite.h"
#include "vault.h"

#define EMAIL_LEN_MAX	254
#define SLUG_BASE_MAX	64	/* leaves room for "-N" and agent emails */
#define SLUG_TRIES_MAX	100000
#define AGENT_NAME_MAX	64
#define ACCESS_LIST_MAX	1024	/* names in one access list */
#define INVITE_DAYS_DEF	7
#define INVITE_DAYS_MAX	3650
#define AGENT_DOMAIN	"agents.local"

static int	user_find(const char *, int64_t *, int *);
static int	user_insert(const char *, int, int64_t *);
static int	org_slug_unique(const char *, char *, size_t);
static int	org_insert(const char *, int64_t *, char *, size_t);
static int	org_find_ctl(const char *, int64_t *, char *, size_t);
static int	membership_insert(int64_t, int64_t, enum role, const char *,
		    int, const char *, char *, int64_t *);
static int	membership_role(int64_t, int64_t, enum role *, int *);
static int	owner_count(int64_t);
static int	body_email(struct vault_req *, struct vault_resp *, char *,
		    size_t);
static int	body_role(struct vault_req *, struct vault_resp *, int *,
		    enum role *);
static int	body_access(struct vault_req *, struct vault_resp *, int64_t,
		    int *, char **);
static json_t	*access_json(const char *);
static json_t	*org_view(sqlite3_stmt *, const void *);
static json_t	*invite_view(sqlite3_stmt *, const void *);
static json_t	*member_view(sqlite3_stmt *, const void *);
static json_t	*agent_view(sqlite3_stmt *, const void *);
static void	org_list(struct vault_req *, struct vault_resp *,
		    const char *, db_row_view, const char *);
static int64_t	tool_count(int64_t, enum role, const char *);
static int	agent_name_norm(const char *, char *, size_t);

static void	users_create(struct vault_req *, struct vault_resp *);
static void	orgs_create(struct vault_req *, struct vault_resp *);
static void	orgs_list(struct vault_req *, struct vault_resp *);
static void	org_delete(struct vault_req *, struct vault_resp *);
static void	invites_create(struct vault_req *, struct vault_resp *);
static void	invites_list(struct vault_req *, struct vault_resp *);
static void	invite_delete(struct vault_req *, struct vault_resp *);
static void	invite_accept(struct vault_req *, struct vault_resp *);
static void	members_list(struct vault_req *, struct vault_resp *);
static void	member_role(struct vault_req *, struct vault_resp *);
static void	member_access(struct vault_req *, struct vault_resp *);
static void	member_delete(struct vault_req *, struct vault_resp *);
static void	org_leave(struct vault_req *, struct vault_resp *);
static void	agents_create(struct vault_req *, struct vault_resp *);
static void	agents_list(struct vault_req *, struct vault_resp *);
static void	agent_delete(struct vault_req *, struct vault_resp *);
static int	org_route_reads(enum api_route);

/*
 * Org-scoped routes need only a valid token here: the role that counts
 * is the caller's role in the org of the path, checked by org_enter().
 */
const struct vault_route vault_org_routes[] = {
	{ ROUTE_USERS_CREATE,	ROLE_NONE,	users_create },
	{ ROUTE_ORGS_CREATE,	ROLE_VIEWER,	orgs_create },
	{ ROUTE_ORGS_LIST,	ROLE_VIEWER,	orgs_list },
	{ ROUTE_ORG_DELETE,	ROLE_VIEWER,	org_delete },
	{ ROUTE_INVITES_CREATE,	ROLE_VIEWER,	invites_create },
	{ ROUTE_INVITES_LIST,	ROLE_VIEWER,	invites_list },
	{ ROUTE_INVITE_DELETE,	ROLE_VIEWER,	invite_delete },
	{ ROUTE_INVITE_ACCEPT,	ROLE_NONE,	invite_accept },
	{ ROUTE_MEMBERS_LIST,	ROLE_VIEWER,	members_list },
	{ ROUTE_MEMBER_ROLE,	ROLE_VIEWER,	member_role },
	{ ROUTE_MEMBER_ACCESS,	ROLE_VIEWER,	member_access },
	{ ROUTE_MEMBER_DELETE,	ROLE_VIEWER,	member_delete },
	{ ROUTE_ORG_LEAVE,	ROLE_VIEWER,	org_leave },
	{ ROUTE_AGENTS_CREATE,	ROLE_VIEWER,	agents_create },
	{ ROUTE_AGENTS_LIST,	ROLE_VIEWER,	agents_list },
	{ ROUTE_AGENT_DELETE,	ROLE_VIEWER,	agent_delete },
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

static int
agent_name_norm(const char *in, char *out, size_t outlen)
{
	size_t	 n = strlen(in), i;

	if (n == 0 || n > AGENT_NAME_MAX || n >= outlen)
		return (-1);
	for (i = 0; i < n; i++) {
		out[i] = (unsigned char)in[i] < 0x80 ? tolower(
		    (unsigned char)in[i]) : in[i];
		if (!((out[i] >= 'a' && out[i] <= 'z') ||
		    (out[i] >= '0' && out[i] <= '9') || out[i] == '-' ||
		    out[i] == '_'))
			return (-1);
	}
	out[n] = '\0';
	return (0);
}

/* ------------------------------------------------------------------ */
/* Rows.                                                               */

/* 1 found, 0 not, -1 database error. */
static int
user_find(const char *email, int64_t *id, int *is_agent)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT id, is_agent FROM users "
	    "WHERE email = ?")) == NULL)
		return (-1);
	sqlite3_bind_text(st, 1, email, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		if (is_agent != NULL)
			*is_agent = sqlite3_column_int(st, 1);
	}
	sqlite3_reset(st);
	return (rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1);
}

static int
user_insert(const char *email, int is_agent, int64_t *id)
{
	sqlite3_stmt	*st;
	char		 now[32];
	int		 rc;

	if ((st = db_prepare("INSERT INTO users (email, is_agent, "
	    "created_at) VALUES (?, ?, ?)")) == NULL)
		return (-1);
	now_iso(now, sizeof(now));
	sqlite3_bind_text(st, 1, email, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, is_agent);
	sqlite3_bind_text(st, 3, now, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return (-1);
	*id = sqlite3_last_insert_rowid(vault_db);
	return (0);
}

/* Inside a write transaction, so the free slug stays free. */
static int
org_slug_unique(const char *name, char *slug, size_t len)
{
	sqlite3_stmt	*st;
	char		 base[SLUG_BASE_MAX + 1];
	int		 n, rc;

	org_slugify(name, base, sizeof(base));
	if ((st = db_prepare("SELECT 1 FROM orgs WHERE slug = ?")) == NULL)
		return (-1);
	for (n = 1; n <= SLUG_TRIES_MAX; n++) {
		if (n == 1)
			strlcpy(slug, base, len);
		else
			snprintf(slug, len, "%s-%d", base, n);
		sqlite3_bind_text(st, 1, slug, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc == SQLITE_DONE)
			return (0);
		if (rc != SQLITE_ROW)
			return (-1);
	}
	log_warnx("%s: no free slug for an org", __func__);
	return (-1);
}

static int
org_insert(const char *name, int64_t *id, char *slug, size_t len)
{
	sqlite3_stmt	*st;
	char		 now[32];
	int		 rc;

	if (org_slug_unique(name, slug, len) == -1)
		return (-1);
	if ((st = db_prepare("INSERT INTO orgs (slug, name, created_at) "
	    "VALUES (?, ?, ?)")) == NULL)
		return (-1);
	now_iso(now, sizeof(now));
	sqlite3_bind_text(st, 1, slug, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, now, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return (-1);
	*id = sqlite3_last_insert_rowid(vault_db);
	return (0);
}

/*
 * Every object of the org goes with it through the schema's cascades
 * (the audit triggers allow it once the org row is gone); its agents'
 * user rows go first, since an agent exists only for its org.
 */
int
org_remove(int64_t org)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("DELETE FROM users WHERE is_agent = 1 AND id IN "
	    "(SELECT user_id FROM memberships WHERE org_id = ?)")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return (-1);
	if ((st = db_prepare("DELETE FROM orgs WHERE id = ?")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return (rc == SQLITE_DONE ? 0 : -1);
}

/*
 * A new membership and its token (written to token, TOKEN_LEN + 1
 * bytes): the caller shows it once and zeroes it.
 */
static int
membership_insert(int64_t user, int64_t org, enum role role,
    const char *access, int local_run, const char *agent_name, char *token,
    int64_t *mid)
{
	sqlite3_stmt	*st;
	uint8_t		 hash[TOKEN_HASH_LEN];
	char		 now[32];
	int		 rc;

	if ((st = db_prepare("INSERT INTO memberships (user_id, org_id, role, "
	    "token_hash, tool_access, local_run_enabled, agent_name, "
	    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")) == NULL)
		return (-1);
	token_new(token, hash);
	now_iso(now, sizeof(now));
	sqlite3_bind_int64(st, 1, user);
	sqlite3_bind_int64(st, 2, org);
	sqlite3_bind_text(st, 3, role_name(role), -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 4, hash, sizeof(hash), SQLITE_STATIC);
	if (access != NULL)
		sqlite3_bind_text(st, 5, access, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 5);
	sqlite3_bind_int(st, 6, local_run != 0);
	if (agent_name != NULL)
		sqlite3_bind_text(st, 7, agent_name, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 7);
	sqlite3_bind_text(st, 8, now, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	explicit_bzero(hash, sizeof(hash));
	if (rc != SQLITE_DONE) {
		explicit_bzero(token, TOKEN_LEN + 1);
		return (-1);
	}
	if (mid != NULL)
		*mid = sqlite3_last_insert_rowid(vault_db);
	return (0);
}

/*
 * Drop a user's membership (and so its token), the deny rules aimed at
 * that user in the org, and the user row of an agent, which exists only
 * for this membership.
 */
int
membership_remove(int64_t user, int64_t org)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("DELETE FROM deny_rules WHERE org_id = ? AND "
	    "user_id = ?")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, org);
	sqlite3_bind_int64(st, 2, user);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return (-1);
	if ((st = db_prepare("DELETE FROM memberships WHERE org_id = ? AND "
	    "user_id = ?")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, org);
	sqlite3_bind_int64(st, 2, user);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return (-1);
	if ((st = db_prepare("DELETE FROM users WHERE id = ?1 AND "
	    "is_agent = 1 AND NOT EXISTS (SELECT 1 FROM memberships "
	    "WHERE user_id = ?1)")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, user);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return (rc == SQLITE_DONE ? 0 : -1);
}

/* A user's role in an org: 1 found, 0 not a member, -1 error. */
static int
membership_role(int64_t user, int64_t org, enum role *role, int *is_agent)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT m.role, u.is_agent FROM memberships m "
	    "JOIN users u ON u.id = m.user_id WHERE m.user_id = ? AND "
	    "m.org_id = ?")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, user);
	sqlite3_bind_int64(st, 2, org);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*role = role_from_name(db_text(st, 0));
		if (is_agent != NULL)
			*is_agent = sqlite3_column_int(st, 1);
	}
	sqlite3_reset(st);
	return (rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1);
}

static int
owner_count(int64_t org)
{
	sqlite3_stmt	*st;
	int		 n = -1;

	if ((st = db_prepare("SELECT count(*) FROM memberships WHERE "
	    "org_id = ? AND role = 'owner'")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, org);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_reset(st);
	return (n);
}

/* The tools a membership sees: all for owners and null lists. */
static int64_t
tool_count(int64_t org, enum role role, const char *access)
{
	sqlite3_stmt	*st;
	int64_t		 n = 0;

	if ((st = db_prepare("SELECT count(*) FROM tools t LEFT JOIN bundles b "
	    "ON b.id = t.bundle_id WHERE t.org_id = ?1 AND (?2 IS NULL OR "
	    "t.name IN (SELECT value FROM json_each(?2)) OR "
	    "b.name IN (SELECT value FROM json_each(?2)))")) == NULL)
		return (0);
	sqlite3_bind_int64(st, 1, org);
	if (role != ROLE_OWNER && access != NULL && *access != '\0')
		sqlite3_bind_text(st, 2, access, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 2);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return (n);
}

/* ------------------------------------------------------------------ */
/* Request helpers.                                                    */

/* Routes that only read (and leaving): another org's are 404 there. */
static int
org_route_reads(enum api_route r)
{
	switch (r) {
	case ROUTE_INVITES_LIST:
	case ROUTE_MEMBERS_LIST:
	case ROUTE_AGENTS_LIST:
	case ROUTE_DENY_LIST:
	case ROUTE_ORG_LEAVE:
		return (1);
	default:
		return (0);
	}
}

/*
 * The caller's membership in org {id1}, which must have at least role
 * need.  Sets the response and returns -1 otherwise.  A token is one
 * membership: it acts in its own org only, whatever other memberships
 * its user has (SPEC.md section 1).
 */
int
org_enter(struct vault_req *req, struct vault_resp *resp, enum role need,
    struct org_ctx *ctx)
{
	sqlite3_stmt	*st;
	int		 rc;

	memset(ctx, 0, sizeof(*ctx));
	if (req->id1 != req->auth->org_id) {
		if (org_route_reads(req->route))
			resp_error(resp, 404, "org not found");
		else
			resp_error(resp, 403, "admin role in this org is "
			    "required");
		return (-1);
	}
	if ((st = db_prepare("SELECT m.id, m.role, o.slug, o.name FROM "
	    "memberships m JOIN orgs o ON o.id = m.org_id WHERE "
	    "m.user_id = ? AND m.org_id = ?")) == NULL) {
		db_fail(resp, "org lookup");
		return (-1);
	}
	sqlite3_bind_int64(st, 1, req->auth->user_id);
	sqlite3_bind_int64(st, 2, req->auth->org_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		ctx->org_id = req->auth->org_id;
		ctx->membership_id = sqlite3_column_int64(st, 0);
		ctx->role = role_from_name(db_text(st, 1));
		strlcpy(ctx->slug, db_text(st, 2), sizeof(ctx->slug));
		strlcpy(ctx->name, db_text(st, 3), sizeof(ctx->name));
	}
	sqlite3_reset(st);
	if (rc == SQLITE_DONE || (rc == SQLITE_ROW &&
	    ctx->role == ROLE_NONE)) {
		resp_error(resp, 404, "org not found");
		return (-1);
	}
	if (rc != SQLITE_ROW) {
		db_fail(resp, "org lookup");
		return (-1);
	}
	if (ctx->role < need) {
		resp_error(resp, 403, "%s", need == ROLE_OWNER ?
		    "only owners can do this" :
		    "only admins and owners can do this");
		return (-1);
	}
	return (0);
}

static int
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

/* "role": *sent says whether it was there; owner is the caller's call. */
static int
body_role(struct vault_req *req, struct vault_resp *resp, int *sent,
    enum role *role)
{
	const char	*s = NULL;

	*sent = 0;
	if (body_str(req, resp, "role", 0, 16, &s) == -1)
		return (-1);
	if (s == NULL)
		return (0);
	if ((*role = role_from_name(s)) == ROLE_NONE) {
		resp_error(resp, 422, "field 'role' must be one of viewer, "
		    "member, admin, owner");
		return (-1);
	}
	*sent = 1;
	return (0);
}

/*
 * "tool_access": null (every tool) or a list of the org's tool or skill
 * names ([] is none).  *text gets the list as compact JSON (NULL for
 * null), to be freed; *sent says whether the field was there.
 */
static int
body_access(struct vault_req *req, struct vault_resp *resp, int64_t org,
    int *sent, char **text)
{
	sqlite3_stmt	*st;
	json_t		*v, *e;
	size_t		 i;
	int		 rc;

	*sent = 0;
	*text = NULL;
	if (req->body == NULL ||
	    (v = json_object_get(req->body, "tool_access")) == NULL)
		return (0);
	*sent = 1;
	if (json_is_null(v))
		return (0);
	if (!json_is_array(v) || json_array_size(v) > ACCESS_LIST_MAX) {
		resp_error(resp, 422, "field 'tool_access' must be null or a "
		    "list of at most %d tool or skill names", ACCESS_LIST_MAX);
		return (-1);
	}
	if ((st = db_prepare("SELECT 1 FROM tools WHERE org_id = ?1 AND "
	    "name = ?2 UNION ALL SELECT 1 FROM bundles WHERE org_id = ?1 AND "
	    "name = ?2")) == NULL) {
		db_fail(resp, "access list");
		return (-1);
	}
	json_array_foreach(v, i, e) {
		if (!json_is_string(e) || json_has_nul(e) ||
		    !valid_name(json_string_value(e))) {
			resp_error(resp, 422, "field 'tool_access' must list "
			    "tool or skill names");
			return (-1);
		}
		sqlite3_bind_int64(st, 1, org);
		sqlite3_bind_text(st, 2, json_string_value(e), -1,
		    SQLITE_STATIC);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc == SQLITE_DONE) {
			resp_error(resp, 422, "unknown tool '%s'",
			    json_string_value(e));
			return (-1);
		}
		if (rc != SQLITE_ROW) {
			db_fail(resp, "access list");
			return (-1);
		}
	}
	if ((*text = json_dumps(v, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	return (0);
}

static json_t *
access_json(const char *text)
{
	json_t	*v;

	if (text == NULL || *text == '\0' ||
	    (v = json_loads(text, 0, NULL)) == NULL)
		return (json_null());
	return (v);
}

/* ------------------------------------------------------------------ */
/* Users and orgs.                                                     */

static void
users_create(struct vault_req *req, struct vault_resp *resp)
{
	char	 email[EMAIL_LEN_MAX + 1], slug[NAME_LEN_MAX + 1];
	char	 token[TOKEN_LEN + 1];
	int64_t	 uid, oid;
	int	 rc;

	if (!vault_conf.signup_open) {
		resp_error(resp, 403, "signup is closed on this server: ask an "
		    "operator (tregctl user add)");
		return;
	}
	if (body_email(req, resp, email, sizeof(email)) == -1)
		return;
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	if ((rc = user_find(email, &uid, NULL)) == 1) {
		store_rollback();
		resp_error(resp, 409, "email already registered");
		return;
	}
	if (rc == -1 || user_insert(email, 0, &uid) == -1 ||
	    org_insert(email, &oid, slug, sizeof(slug)) == -1 ||
	    membership_insert(uid, oid, ROLE_OWNER, NULL, 1, NULL, token,
	    NULL) == -1 || store_commit() == -1) {
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
	char		 token[TOKEN_LEN + 1];
	const char	*s;
	size_t		 n;
	int64_t		 oid;

	if (req->auth->is_agent) {
		resp_error(resp, 403, "agents cannot create orgs");
		return;
	}
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
	if (org_insert(name, &oid, slug, sizeof(slug)) == -1 ||
	    membership_insert(req->auth->user_id, oid, ROLE_OWNER, NULL, 1,
	    NULL, token, NULL) == -1 || store_commit() == -1) {
		explicit_bzero(token, sizeof(token));
		db_fail(resp, "create org");
		return;
	}
	resp_ok(resp, json_pack("{s:s,s:I,s:s,s:s,s:s}", "org", slug,
	    "org_id", (json_int_t)oid, "name", name, "role", "owner",
	    "token", token));
	explicit_bzero(token, sizeof(token));
}

/* A row of orgs_list; a is the caller, whose token's org is "active". */
static json_t *
org_view(sqlite3_stmt *st, const void *arg)
{
	const struct auth	*a = arg;
	enum role		 role;
	int64_t			 oid;

	oid = sqlite3_column_int64(st, 0);
	role = role_from_name(db_text(st, 3));
	return (json_pack("{s:I,s:s,s:s,s:s,s:b,s:I}", "org_id",
	    (json_int_t)oid, "slug", db_text(st, 1), "name", db_text(st, 2),
	    "role", role_name(role), "active", oid == a->org_id,
	    "tool_count", (json_int_t)tool_count(oid, role,
	    (const char *)sqlite3_column_text(st, 4))));
}

static void
orgs_list(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	json_t		*list;

	if ((st = db_prepare("SELECT o.id, o.slug, o.name, m.role, "
	    "m.tool_access FROM memberships m JOIN orgs o ON o.id = m.org_id "
	    "WHERE m.user_id = ? ORDER BY o.id")) == NULL) {
		db_fail(resp, "list orgs");
		return;
	}
	sqlite3_bind_int64(st, 1, req->auth->user_id);
	if ((list = db_rows(st, org_view, req->auth)) == NULL) {
		db_fail(resp, "list orgs");
		return;
	}
	resp_ok(resp, list);
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
	if (store_begin() == -1 || org_remove(ctx.org_id) == -1 ||
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
/* Invites.                                                            */

static void
invites_create(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	sqlite3_stmt	*st;
	char		 email[EMAIL_LEN_MAX + 1], code[TOKEN_LEN + 1];
	char		 now[32], expires[32], *access = NULL;
	uint8_t		 hash[TOKEN_HASH_LEN];
	enum role	 role = ROLE_MEMBER;
	int64_t		 days = INVITE_DAYS_DEF, exp, id;
	int		 sent, local_run = 1, rc;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1 ||
	    body_email(req, resp, email, sizeof(email)) == -1 ||
	    body_role(req, resp, &sent, &role) == -1 ||
	    body_int(req, resp, "expires_days", 0, 1, INVITE_DAYS_MAX,
	    &days) == -1 ||
	    body_bool(req, resp, "local_run_enabled", 0, &local_run) == -1)
		return;
	if (role == ROLE_OWNER) {
		resp_error(resp, 422, "an invite cannot make an owner: invite "
		    "an admin, then change the role");
		return;
	}
	if (role == ROLE_ADMIN && ctx.role != ROLE_OWNER) {
		resp_error(resp, 403, "only owners can invite admins");
		return;
	}
	if (body_access(req, resp, ctx.org_id, &sent, &access) == -1)
		return;

	exp = (int64_t)time(NULL) + days * 86400;
	if ((st = db_prepare("INSERT INTO invites (org_id, email, role, "
	    "code_hash, tool_access, local_run_enabled, expires_at, "
	    "created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"))
	    == NULL) {
		free(access);
		db_fail(resp, "invite");
		return;
	}
	token_new(code, hash);
	now_iso(now, sizeof(now));
	sqlite3_bind_int64(st, 1, ctx.org_id);
	sqlite3_bind_text(st, 2, email, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, role_name(role), -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 4, hash, sizeof(hash), SQLITE_STATIC);
	if (access != NULL)
		sqlite3_bind_text(st, 5, access, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 5);
	sqlite3_bind_int(st, 6, local_run != 0);
	sqlite3_bind_int64(st, 7, exp);
	sqlite3_bind_int64(st, 8, req->auth->user_id);
	sqlite3_bind_text(st, 9, now, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	explicit_bzero(hash, sizeof(hash));
	free(access);
	if (rc != SQLITE_DONE) {
		explicit_bzero(code, sizeof(code));
		db_fail(resp, "invite");
		return;
	}
	id = sqlite3_last_insert_rowid(vault_db);
	iso_time(exp, expires, sizeof(expires));
	resp_ok(resp, json_pack("{s:I,s:s,s:s,s:s,s:I,s:s}", "id",
	    (json_int_t)id, "code", code, "email", email, "role",
	    role_name(role), "org_id", (json_int_t)ctx.org_id, "expires_at",
	    expires));
	explicit_bzero(code, sizeof(code));
}

static json_t *
invite_view(sqlite3_stmt *st, const void *arg)
{
	char	 expires[32];

	iso_time(sqlite3_column_int64(st, 5), expires, sizeof(expires));
	return (json_pack("{s:I,s:s,s:s,s:o,s:b,s:s,s:I,s:s}", "id",
	    (json_int_t)sqlite3_column_int64(st, 0), "email", db_text(st, 1),
	    "role", db_text(st, 2), "tool_access", access_json((const char *)
	    sqlite3_column_text(st, 3)), "local_run_enabled",
	    sqlite3_column_int(st, 4), "expires_at", expires, "created_by",
	    (json_int_t)sqlite3_column_int64(st, 6), "created_at",
	    db_text(st, 7)));
}

static void
invites_list(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	sqlite3_stmt	*st;
	json_t		*list;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if ((st = db_prepare("SELECT id, email, role, tool_access, "
	    "local_run_enabled, expires_at, created_by, created_at FROM "
	    "invites WHERE org_id = ? AND used = 0 AND expires_at > ? "
	    "ORDER BY id")) == NULL) {
		db_fail(resp, "list invites");
		return;
	}
	sqlite3_bind_int64(st, 1, ctx.org_id);
	sqlite3_bind_int64(st, 2, (int64_t)time(NULL));
	if ((list = db_rows(st, invite_view, NULL)) == NULL) {
		db_fail(resp, "list invites");
		return;
	}
	resp_ok(resp, list);
}

static void
invite_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	sqlite3_stmt	*st;
	int		 rc;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if ((st = db_prepare("DELETE FROM invites WHERE id = ? AND "
	    "org_id = ? AND used = 0")) == NULL) {
		db_fail(resp, "revoke invite");
		return;
	}
	sqlite3_bind_int64(st, 1, req->id2);
	sqlite3_bind_int64(st, 2, ctx.org_id);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		db_fail(resp, "revoke invite");
		return;
	}
	if (sqlite3_changes(vault_db) == 0) {
		resp_error(resp, 404, "invite not found");
		return;
	}
	resp_ok(resp, json_pack("{s:I}", "revoked_invite",
	    (json_int_t)req->id2));
}

static void
invite_accept(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	const char	*code;
	char		 email[EMAIL_LEN_MAX + 1], token[TOKEN_LEN + 1];
	char		 invited[EMAIL_LEN_MAX + 1], slug[NAME_LEN_MAX + 1];
	char		 name[NAME_LEN_MAX + 1], *access = NULL;
	uint8_t		 hash[TOKEN_HASH_LEN];
	enum role	 role = ROLE_NONE, have;
	int64_t		 iid = 0, oid = 0, uid, expires = 0;
	int		 rc, used = 0, local_run = 1, is_agent = 0;

	if (body_str(req, resp, "code", 1, 256, &code) == -1 ||
	    body_email(req, resp, email, sizeof(email)) == -1)
		return;
	token_hash(code, strlen(code), hash);
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	if ((st = db_prepare("SELECT i.id, i.org_id, i.email, i.role, "
	    "i.tool_access, i.local_run_enabled, i.expires_at, i.used, "
	    "o.slug, o.name FROM invites i JOIN orgs o ON o.id = i.org_id "
	    "WHERE i.code_hash = ?")) == NULL) {
		db_fail(resp, "accept invite");
		return;
	}
	sqlite3_bind_blob(st, 1, hash, sizeof(hash), SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		iid = sqlite3_column_int64(st, 0);
		oid = sqlite3_column_int64(st, 1);
		strlcpy(invited, db_text(st, 2), sizeof(invited));
		role = role_from_name(db_text(st, 3));
		if (sqlite3_column_type(st, 4) != SQLITE_NULL &&
		    (access = strdup(db_text(st, 4))) == NULL)
			fatal("%s: strdup", __func__);
		local_run = sqlite3_column_int(st, 5);
		expires = sqlite3_column_int64(st, 6);
		used = sqlite3_column_int(st, 7);
		strlcpy(slug, db_text(st, 8), sizeof(slug));
		strlcpy(name, db_text(st, 9), sizeof(name));
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	explicit_bzero(hash, sizeof(hash));
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		db_fail(resp, "accept invite");
		goto out;
	}
	if (rc == SQLITE_DONE || used || role == ROLE_NONE ||
	    role == ROLE_OWNER) {
		store_rollback();
		resp_error(resp, 404, "invite not found or already used");
		goto out;
	}
	if (expires <= (int64_t)time(NULL)) {
		store_rollback();
		resp_error(resp, 410, "this invite has expired: ask for a new "
		    "one");
		goto out;
	}
	if (strcmp(invited, email) != 0) {
		store_rollback();
		resp_error(resp, 403, "this invite is for a different email");
		goto out;
	}
	if ((rc = user_find(email, &uid, &is_agent)) == -1) {
		db_fail(resp, "accept invite");
		goto out;
	}
	if (rc == 1 && is_agent) {
		store_rollback();
		resp_error(resp, 403, "an agent joins an org only as its "
		    "agent (POST /orgs/{id}/agents)");
		goto out;
	}
	if (rc == 1 && (rc = membership_role(uid, oid, &have, NULL)) != 0) {
		if (rc == -1)
			db_fail(resp, "accept invite");
		else {
			store_rollback();
			resp_error(resp, 409, "you are already a member of "
			    "this org");
		}
		goto out;
	}
	/* A first invite for this email creates the user. */
	if ((rc = user_find(email, &uid, NULL)) == -1 ||
	    (rc == 0 && user_insert(email, 0, &uid) == -1) ||
	    (st = db_prepare("UPDATE invites SET used = 1 WHERE id = ?"))
	    == NULL) {
		db_fail(resp, "accept invite");
		goto out;
	}
	sqlite3_bind_int64(st, 1, iid);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE || membership_insert(uid, oid, role, access,
	    local_run, NULL, token, NULL) == -1 || store_commit() == -1) {
		explicit_bzero(token, sizeof(token));
		db_fail(resp, "accept invite");
		goto out;
	}
	resp_ok(resp, json_pack("{s:s,s:I,s:s,s:s,s:s,s:s,s:I}", "org", slug,
	    "org_id", (json_int_t)oid, "name", name, "role", role_name(role),
	    "token", token, "email", email, "user_id", (json_int_t)uid));
	explicit_bzero(token, sizeof(token));
 out:
	free(access);
}

/* ------------------------------------------------------------------ */
/* Members.                                                            */

static json_t *
member_view(sqlite3_stmt *st, const void *arg)
{
	return (json_pack("{s:I,s:s,s:s,s:o,s:b,s:b,s:s}", "user_id",
	    (json_int_t)sqlite3_column_int64(st, 0), "email", db_text(st, 1),
	    "role", db_text(st, 2), "tool_access", access_json((const char *)
	    sqlite3_column_text(st, 3)), "local_run_enabled",
	    sqlite3_column_int(st, 4), "is_agent", sqlite3_column_int(st, 5),
	    "joined_at", db_text(st, 6)));
}

/*
 * An admin's listing of the org {id1}: view() of each row of sql, whose
 * one parameter is the org's id; a failure names what.
 */
static void
org_list(struct vault_req *req, struct vault_resp *resp, const char *sql,
    db_row_view view, const char *what)
{
	struct org_ctx	 ctx;
	sqlite3_stmt	*st;
	json_t		*list;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if ((st = db_prepare(sql)) == NULL) {
		db_fail(resp, what);
		return;
	}
	sqlite3_bind_int64(st, 1, ctx.org_id);
	if ((list = db_rows(st, view, NULL)) == NULL) {
		db_fail(resp, what);
		return;
	}
	resp_ok(resp, list);
}

static void
members_list(struct vault_req *req, struct vault_resp *resp)
{
	org_list(req, resp, "SELECT m.user_id, u.email, m.role, "
	    "m.tool_access, m.local_run_enabled, u.is_agent, m.created_at "
	    "FROM memberships m JOIN users u ON u.id = m.user_id WHERE "
	    "m.org_id = ? ORDER BY m.id", member_view, "list members");
}

static void
member_role(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	sqlite3_stmt	*st;
	enum role	 role, old;
	int		 sent, rc, is_agent = 0, owners;

	if (org_enter(req, resp, ROLE_VIEWER, &ctx) == -1)
		return;
	if (ctx.role != ROLE_OWNER) {
		resp_error(resp, 403, "only owners can change roles");
		return;
	}
	if (body_role(req, resp, &sent, &role) == -1)
		return;
	if (!sent) {
		resp_error(resp, 422, "field 'role' is required");
		return;
	}
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	if ((rc = membership_role(req->id2, ctx.org_id, &old,
	    &is_agent)) == -1 || (owners = owner_count(ctx.org_id)) == -1) {
		db_fail(resp, "change role");
		return;
	}
	if (rc == 0) {
		store_rollback();
		resp_error(resp, 404, "member not found");
		return;
	}
	if (is_agent && role == ROLE_OWNER) {
		store_rollback();
		resp_error(resp, 422, "an agent can never be owner");
		return;
	}
	if (old == ROLE_OWNER && role != ROLE_OWNER && owners <= 1) {
		store_rollback();
		resp_error(resp, 409, "the last owner cannot be demoted: make "
		    "another member owner first");
		return;
	}
	if ((st = db_prepare("UPDATE memberships SET role = ? WHERE "
	    "user_id = ? AND org_id = ?")) == NULL) {
		db_fail(resp, "change role");
		return;
	}
	sqlite3_bind_text(st, 1, role_name(role), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, req->id2);
	sqlite3_bind_int64(st, 3, ctx.org_id);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE || store_commit() == -1) {
		db_fail(resp, "change role");
		return;
	}
	resp_ok(resp, json_pack("{s:I,s:s,s:I}", "user_id",
	    (json_int_t)req->id2, "role", role_name(role), "org_id",
	    (json_int_t)ctx.org_id));
}

/*
 * Owners are never restricted, so restricting one is refused (422)
 * rather than stored and silently ignored.
 */
static void
member_access(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	sqlite3_stmt	*st;
	char		*access = NULL;
	enum role	 role;
	int		 sent, local_run = -1, rc;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1 ||
	    body_bool(req, resp, "local_run_enabled", 0, &local_run) == -1 ||
	    body_access(req, resp, ctx.org_id, &sent, &access) == -1)
		return;
	if (store_begin() == -1) {
		free(access);
		db_fail(resp, "begin");
		return;
	}
	if ((rc = membership_role(req->id2, ctx.org_id, &role, NULL)) == -1) {
		free(access);
		db_fail(resp, "access");
		return;
	}
	if (rc == 0) {
		free(access);
		store_rollback();
		resp_error(resp, 404, "member not found");
		return;
	}
	if (role == ROLE_OWNER && (access != NULL || local_run == 0)) {
		free(access);
		store_rollback();
		resp_error(resp, 422, "owners cannot be restricted: they "
		    "always have every tool and local runs");
		return;
	}
	if ((st = db_prepare("UPDATE memberships SET "
	    "tool_access = CASE WHEN ?1 THEN ?2 ELSE tool_access END, "
	    "local_run_enabled = CASE WHEN ?3 >= 0 THEN ?3 "
	    "ELSE local_run_enabled END WHERE user_id = ?4 AND org_id = ?5"))
	    == NULL) {
		free(access);
		db_fail(resp, "access");
		return;
	}
	sqlite3_bind_int(st, 1, sent);
	if (access != NULL)
		sqlite3_bind_text(st, 2, access, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 2);
	sqlite3_bind_int(st, 3, local_run);
	sqlite3_bind_int64(st, 4, req->id2);
	sqlite3_bind_int64(st, 5, ctx.org_id);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	free(access);
	if (rc != SQLITE_DONE || store_commit() == -1) {
		db_fail(resp, "access");
		return;
	}

	if ((st = db_prepare("SELECT tool_access, local_run_enabled FROM "
	    "memberships WHERE user_id = ? AND org_id = ?")) == NULL) {
		db_fail(resp, "access");
		return;
	}
	sqlite3_bind_int64(st, 1, req->id2);
	sqlite3_bind_int64(st, 2, ctx.org_id);
	if (sqlite3_step(st) == SQLITE_ROW)
		resp_ok(resp, json_pack("{s:I,s:I,s:o,s:b}", "user_id",
		    (json_int_t)req->id2, "org_id", (json_int_t)ctx.org_id,
		    "tool_access", access_json((const char *)
		    sqlite3_column_text(st, 0)), "local_run_enabled",
		    sqlite3_column_int(st, 1)));
	else
		db_fail(resp, "access");
	sqlite3_reset(st);
}

static void
member_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	enum role	 role;
	int		 rc, owners;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	if ((rc = membership_role(req->id2, ctx.org_id, &role, NULL)) == -1 ||
	    (owners = owner_count(ctx.org_id)) == -1) {
		db_fail(resp, "remove member");
		return;
	}
	if (rc == 0) {
		store_rollback();
		resp_error(resp, 404, "member not found");
		return;
	}
	if (role == ROLE_OWNER && ctx.role != ROLE_OWNER) {
		store_rollback();
		resp_error(resp, 403, "admins cannot remove owners");
		return;
	}
	if (role == ROLE_OWNER && owners <= 1) {
		store_rollback();
		resp_error(resp, 409, "the last owner cannot be removed: make "
		    "another member owner first, or delete the org");
		return;
	}
	if (membership_remove(req->id2, ctx.org_id) == -1 ||
	    store_commit() == -1) {
		db_fail(resp, "remove member");
		return;
	}
	resp_ok(resp, json_pack("{s:I}", "removed", (json_int_t)req->id2));
}

static void
org_leave(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	int		 owners;

	if (org_enter(req, resp, ROLE_VIEWER, &ctx) == -1)
		return;
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	if ((owners = owner_count(ctx.org_id)) == -1) {
		db_fail(resp, "leave");
		return;
	}
	if (ctx.role == ROLE_OWNER && owners <= 1) {
		store_rollback();
		resp_error(resp, 409, "the last owner cannot leave the org: "
		    "make another member owner first, or delete the org");
		return;
	}
	if (membership_remove(req->auth->user_id, ctx.org_id) == -1 ||
	    store_commit() == -1) {
		db_fail(resp, "leave");
		return;
	}
	resp_ok(resp, json_pack("{s:I}", "left_org", (json_int_t)ctx.org_id));
}

/* ------------------------------------------------------------------ */
/* Agents.                                                             */

/*
 * An agent is a user of its own (agent-<org>-<name>@agents.local) with
 * one membership.  Posting the same name again rotates the token and
 * keeps whatever the request leaves out.
 */
static void
agents_create(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	sqlite3_stmt	*st;
	const char	*s;
	char		 name[AGENT_NAME_MAX + 1], email[EMAIL_LEN_MAX + 1];
	char		 token[TOKEN_LEN + 1], *access = NULL;
	uint8_t		 hash[TOKEN_HASH_LEN];
	enum role	 role = ROLE_MEMBER, have;
	int64_t		 uid;
	int		 role_sent, access_sent, local_run = -1, rc;
	int		 is_agent = 0, rotated = 0, member = 0;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1 ||
	    body_str(req, resp, "name", 1, 256, &s) == -1)
		return;
	if (agent_name_norm(s, name, sizeof(name)) == -1) {
		resp_error(resp, 422, "an agent's name is 1 to %d characters "
		    "of a-z, 0-9, '-' and '_'", AGENT_NAME_MAX);
		return;
	}
	if (body_role(req, resp, &role_sent, &role) == -1 ||
	    body_bool(req, resp, "local_run_enabled", 0, &local_run) == -1)
		return;
	if (role == ROLE_OWNER) {
		resp_error(resp, 422, "an agent can never be owner");
		return;
	}
	if (role == ROLE_ADMIN && ctx.role != ROLE_OWNER) {
		resp_error(resp, 403, "only owners can make an admin agent");
		return;
	}
	if (body_access(req, resp, ctx.org_id, &access_sent, &access) == -1)
		return;
	if ((size_t)snprintf(email, sizeof(email), "agent-%s-%s@%s", ctx.slug,
	    name, AGENT_DOMAIN) >= sizeof(email)) {
		free(access);
		resp_error(resp, 422, "the agent's name is too long for this "
		    "org");
		return;
	}

	if (store_begin() == -1) {
		free(access);
		db_fail(resp, "begin");
		return;
	}
	if ((rc = user_find(email, &uid, &is_agent)) == -1 ||
	    (rc == 1 && (member = membership_role(uid, ctx.org_id, &have,
	    NULL)) == -1)) {
		free(access);
		db_fail(resp, "agent");
		return;
	}
	if (rc == 1 && !is_agent) {
		free(access);
		store_rollback();
		resp_error(resp, 409, "%s is registered as a person", email);
		return;
	}
	if (member == 1) {
		token_new(token, hash);
		if ((st = db_prepare("UPDATE memberships SET token_hash = ?1, "
		    "role = CASE WHEN ?2 THEN ?3 ELSE role END, "
		    "tool_access = CASE WHEN ?4 THEN ?5 ELSE tool_access END, "
		    "local_run_enabled = CASE WHEN ?6 >= 0 THEN ?6 "
		    "ELSE local_run_enabled END "
		    "WHERE user_id = ?7 AND org_id = ?8")) == NULL)
			goto fail;
		sqlite3_bind_blob(st, 1, hash, sizeof(hash), SQLITE_STATIC);
		sqlite3_bind_int(st, 2, role_sent);
		sqlite3_bind_text(st, 3, role_name(role), -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 4, access_sent);
		if (access != NULL)
			sqlite3_bind_text(st, 5, access, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 5);
		sqlite3_bind_int(st, 6, local_run);
		sqlite3_bind_int64(st, 7, uid);
		sqlite3_bind_int64(st, 8, ctx.org_id);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		explicit_bzero(hash, sizeof(hash));
		if (rc != SQLITE_DONE)
			goto fail;
		rotated = 1;
	} else if ((rc == 0 && user_insert(email, 1, &uid) == -1) ||
	    membership_insert(uid, ctx.org_id, role, access, local_run != 0,
	    name, token, NULL) == -1)
		goto fail;
	free(access);
	access = NULL;

	if ((st = db_prepare("SELECT role, tool_access, local_run_enabled "
	    "FROM memberships WHERE user_id = ? AND org_id = ?")) == NULL)
		goto fail;
	sqlite3_bind_int64(st, 1, uid);
	sqlite3_bind_int64(st, 2, ctx.org_id);
	if (sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_reset(st);
		goto fail;
	}
	resp_ok(resp, json_pack("{s:s,s:s,s:s,s:I,s:s,s:o,s:b,s:I,s:b}",
	    "token", token, "name", name, "email", email, "user_id",
	    (json_int_t)uid, "role", db_text(st, 0), "tool_access",
	    access_json((const char *)sqlite3_column_text(st, 1)),
	    "local_run_enabled", sqlite3_column_int(st, 2), "org_id",
	    (json_int_t)ctx.org_id, "rotated", rotated));
	sqlite3_reset(st);
	explicit_bzero(token, sizeof(token));
	if (store_commit() == -1) {
		db_fail(resp, "agent");
		return;
	}
	return;
 fail:
	explicit_bzero(token, sizeof(token));
	explicit_bzero(hash, sizeof(hash));
	free(access);
	db_fail(resp, "agent");
}

static json_t *
agent_view(sqlite3_stmt *st, const void *arg)
{
	return (json_pack("{s:I,s:s,s:s,s:s,s:o,s:b,s:s}", "user_id",
	    (json_int_t)sqlite3_column_int64(st, 0), "name", db_text(st, 1),
	    "email", db_text(st, 2), "role", db_text(st, 3), "tool_access",
	    access_json((const char *)sqlite3_column_text(st, 4)),
	    "local_run_enabled", sqlite3_column_int(st, 5), "created_at",
	    db_text(st, 6)));
}

static void
agents_list(struct vault_req *req, struct vault_resp *resp)
{
	org_list(req, resp, "SELECT m.user_id, m.agent_name, u.email, "
	    "m.role, m.tool_access, m.local_run_enabled, m.created_at FROM "
	    "memberships m JOIN users u ON u.id = m.user_id WHERE "
	    "m.org_id = ? AND u.is_agent = 1 ORDER BY m.id", agent_view,
	    "list agents");
}

static void
agent_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	enum role	 role;
	int		 rc, is_agent = 0;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	if ((rc = membership_role(req->id2, ctx.org_id, &role,
	    &is_agent)) == -1) {
		db_fail(resp, "revoke agent");
		return;
	}
	if (rc == 0 || !is_agent) {
		store_rollback();
		resp_error(resp, 404, "agent not found");
		return;
	}
	if (membership_remove(req->id2, ctx.org_id) == -1 ||
	    store_commit() == -1) {
		db_fail(resp, "revoke agent");
		return;
	}
	resp_ok(resp, json_pack("{s:b}", "revoked", 1));
}

/* ------------------------------------------------------------------ */
/* tregctl.                                                            */

int
ctl_show_users(const struct ctl_request *cr, json_t **reply)
{
	sqlite3_stmt	*su, *sm;
	json_t		*list, *orgs;
	int		 rc, mrc;

	if ((su = db_prepare("SELECT id, email, is_agent, created_at FROM "
	    "users ORDER BY id")) == NULL ||
	    (sm = db_prepare("SELECT o.slug, m.role FROM memberships m "
	    "JOIN orgs o ON o.id = m.org_id WHERE m.user_id = ? "
	    "ORDER BY o.id")) == NULL) {
		*reply = ctl_errorf("database error");
		return (-1);
	}
	list = json_array();
	while ((rc = sqlite3_step(su)) == SQLITE_ROW) {
		orgs = json_array();
		sqlite3_bind_int64(sm, 1, sqlite3_column_int64(su, 0));
		while ((mrc = sqlite3_step(sm)) == SQLITE_ROW)
			json_array_append_new(orgs, json_pack("{s:s,s:s}",
			    "org", db_text(sm, 0), "role", db_text(sm, 1)));
		sqlite3_reset(sm);
		json_array_append_new(list, json_pack("{s:I,s:s,s:b,s:s,s:o}",
		    "id", (json_int_t)sqlite3_column_int64(su, 0),
		    "email", db_text(su, 1), "is_agent",
		    sqlite3_column_int(su, 2), "created_at", db_text(su, 3),
		    "memberships", orgs));
		if (mrc != SQLITE_DONE)
			break;
	}
	sqlite3_reset(su);
	if (rc != SQLITE_DONE) {
		json_decref(list);
		*reply = ctl_errorf("database error: %s",
		    sqlite3_errmsg(vault_db));
		return (-1);
	}
	*reply = list;
	return (0);
}

int
ctl_show_orgs(const struct ctl_request *cr, json_t **reply)
{
	sqlite3_stmt	*st;
	json_t		*list;
	int		 rc;

	if ((st = db_prepare("SELECT o.id, o.slug, o.name, "
	    "(SELECT count(*) FROM memberships WHERE org_id = o.id), "
	    "(SELECT count(*) FROM tools WHERE org_id = o.id), "
	    "(SELECT count(*) FROM secrets WHERE org_id = o.id), "
	    "o.created_at FROM orgs o ORDER BY o.id")) == NULL) {
		*reply = ctl_errorf("database error");
		return (-1);
	}
	list = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(list, json_pack("{s:I,s:s,s:s,s:I,s:I,"
		    "s:I,s:s}", "id", (json_int_t)sqlite3_column_int64(st, 0),
		    "slug", db_text(st, 1), "name", db_text(st, 2),
		    "members", (json_int_t)sqlite3_column_int64(st, 3),
		    "tools", (json_int_t)sqlite3_column_int64(st, 4),
		    "secrets", (json_int_t)sqlite3_column_int64(st, 5),
		    "created_at", db_text(st, 6)));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(list);
		*reply = ctl_errorf("database error: %s",
		    sqlite3_errmsg(vault_db));
		return (-1);
	}
	*reply = list;
	return (0);
}

/*
 * An org for tregctl by slug, else by name when exactly one org has it:
 * 1 found, 0 none, 2 ambiguous, -1 error.
 */
static int
org_find_ctl(const char *what, int64_t *id, char *slug, size_t len)
{
	sqlite3_stmt	*st;
	int		 rc, n = 0;

	if ((st = db_prepare("SELECT id, slug FROM orgs WHERE slug = ?1 "
	    "UNION ALL SELECT id, slug FROM orgs WHERE name = ?1 AND "
	    "NOT EXISTS (SELECT 1 FROM orgs WHERE slug = ?1)")) == NULL)
		return (-1);
	sqlite3_bind_text(st, 1, what, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n++ == 0) {
			*id = sqlite3_column_int64(st, 0);
			strlcpy(slug, db_text(st, 1), len);
		}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return (-1);
	return (n == 0 ? 0 : n == 1 ? 1 : 2);
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
	char		 token[TOKEN_LEN + 1], oname[NAME_LEN_MAX + 1];
	enum role	 role = ROLE_MEMBER, have;
	int64_t		 uid, oid = 0;
	int		 rc, found = 0, is_agent = 0;

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
	if (store_begin() == -1)
		goto fail;
	if ((rc = user_find(email, &uid, &is_agent)) == -1)
		goto fail;
	if (rc == 1 && is_agent) {
		store_rollback();
		*reply = ctl_errorf("%s is an agent: manage it through its "
		    "org's agents", email);
		return (-1);
	}
	if (rc == 0 && user_insert(email, 0, &uid) == -1)
		goto fail;
	if (cr->org[0] != '\0' && (found = org_find_ctl(cr->org, &oid, slug,
	    sizeof(slug))) == -1)
		goto fail;
	if (found == 2) {
		store_rollback();
		*reply = ctl_errorf("several orgs are named '%s': give the "
		    "slug", cr->org);
		return (-1);
	}
	if (found == 1) {
		if ((rc = membership_role(uid, oid, &have, NULL)) == -1)
			goto fail;
		if (rc == 1) {
			store_rollback();
			*reply = ctl_errorf("%s is already a member of %s "
			    "(tregctl token revoke first to get a new token)",
			    email, slug);
			return (-1);
		}
	} else {
		/* A new org: the user owns it. */
		role = ROLE_OWNER;
		strlcpy(oname, cr->org[0] != '\0' ? cr->org : email,
		    sizeof(oname));
		if (org_insert(oname, &oid, slug, sizeof(slug)) == -1)
			goto fail;
	}
	if (membership_insert(uid, oid, role, NULL, 1, NULL, token,
	    NULL) == -1)
		goto fail;
	if (store_commit() == -1) {
		explicit_bzero(token, sizeof(token));
		goto fail;
	}
	*reply = json_pack("{s:s,s:s,s:I,s:s,s:s}", "email", email, "org",
	    slug, "org_id", (json_int_t)oid, "role", role_name(role),
	    "token", token);
	explicit_bzero(token, sizeof(token));
	log_info("tregctl: user %lld added to org %lld as %s",
	    (long long)uid, (long long)oid, role_name(role));
	return (0);
 fail:
	log_warnx("%s: database error: %s", __func__,
	    sqlite3_errmsg(vault_db));
	store_rollback();
	*reply = ctl_errorf("database error");
	return (-1);
}

int
ctl_token_revoke(const struct ctl_request *cr, json_t **reply)
{
	sqlite3_stmt	*st;
	char		 email[EMAIL_LEN_MAX + 1];
	int64_t		 uid, oids[256];
	int		 rc, n = 0, i;

	if (memchr(cr->email, '\0', sizeof(cr->email)) == NULL ||
	    memchr(cr->org, '\0', sizeof(cr->org)) == NULL ||
	    email_normalize(cr->email, email, sizeof(email)) == -1) {
		*reply = ctl_errorf("invalid email address");
		return (-1);
	}
	if (store_begin() == -1)
		goto fail;
	if ((rc = user_find(email, &uid, NULL)) == -1)
		goto fail;
	if (rc == 0) {
		store_rollback();
		*reply = ctl_errorf("no user %s", email);
		return (-1);
	}
	if ((st = db_prepare("SELECT m.org_id FROM memberships m JOIN orgs o "
	    "ON o.id = m.org_id WHERE m.user_id = ?1 AND "
	    "(?2 = '' OR o.slug = ?2 OR o.name = ?2) ORDER BY m.id")) == NULL)
		goto fail;
	sqlite3_bind_int64(st, 1, uid);
	sqlite3_bind_text(st, 2, cr->org, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW &&
	    n < (int)(sizeof(oids) / sizeof(oids[0])))
		oids[n++] = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		goto fail;
	for (i = 0; i < n; i++)
		if (membership_remove(uid, oids[i]) == -1)
			goto fail;
	if (n == 0) {
		store_rollback();
		*reply = ctl_errorf("%s has no token%s%s", email,
		    cr->org[0] ? " in org " : "", cr->org);
		return (-1);
	}
	if (store_commit() == -1)
		goto fail;
	*reply = json_pack("{s:i}", "revoked", n);
	log_info("tregctl: %d token(s) of user %lld revoked", n,
	    (long long)uid);
	return (0);
 fail:
	log_warnx("%s: database error: %s", __func__,
	    sqlite3_errmsg(vault_db));
	store_rollback();
	*reply = ctl_errorf("database error");
	return (-1);
}

int
ctl_org_delete(const struct ctl_request *cr, json_t **reply)
{
	sqlite3_stmt	*st;
	int64_t		 oid = 0;
	int		 rc;

	if (memchr(cr->org, '\0', sizeof(cr->org)) == NULL) {
		*reply = ctl_errorf("malformed request");
		return (-1);
	}
	if (store_begin() == -1 ||
	    (st = db_prepare("SELECT id FROM orgs WHERE slug = ?")) == NULL)
		goto fail;
	sqlite3_bind_text(st, 1, cr->org, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		oid = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_DONE) {
		store_rollback();
		*reply = ctl_errorf("no org with the slug '%s'", cr->org);
		return (-1);
	}
	if (rc != SQLITE_ROW || org_remove(oid) == -1 || store_commit() == -1)
		goto fail;
	*reply = json_pack("{s:I}", "deleted_org", (json_int_t)oid);
	log_info("tregctl: org %lld deleted", (long long)oid);
	return (0);
 fail:
	log_warnx("%s: database error: %s", __func__,
	    sqlite3_errmsg(vault_db));
	store_rollback();
	*reply = ctl_errorf("database error");
	return (-1);
}
