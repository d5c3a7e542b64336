/*
 * vault_member.c: who is in an org.  Invites, members, their roles and
 * access lists, leaving, and agents (SPEC.md sections 1 and 2).  Every
 * route acts with the caller's membership in the org of its path (see
 * org_enter() in vault_org.c); a change that spans several rows is one
 * transaction.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat.h"
#include "store.h"
#include "vault.h"

#define EMAIL_LEN_MAX	254
#define AGENT_NAME_MAX	64
#define ACCESS_LIST_MAX	1024	/* names in one access list */
#define INVITE_DAYS_DEF	7
#define INVITE_DAYS_MAX	3650
#define AGENT_DOMAIN	"agents.local"

/* What the routes need of a membership. */
struct member_state {
	enum role	 role;
	int		 is_agent;
	int		 local_run;
	int		 want_access;
	json_t		*access;	/* with want_access: to be freed */
};

/* POST /orgs/{id}/agents, checked. */
/* Pending invites of one email (treg compatibility: re-invites). */
struct invite_old {
	const char	*email;
	json_t		*ids;
};

/* treg's words: agents are machine identities, never owners. */
#define PHRASE_AGENT_OWNER \
	"an agent is a machine identity: it cannot be an owner"

struct agent_req {
	char		 name[AGENT_NAME_MAX + 1];
	char		 email[EMAIL_LEN_MAX + 1];
	enum role	 role;
	int		 role_sent;
	int		 access_sent;
	char		*access;
	int		 local_run;	/* -1: keep, or enabled */
	int		 cap_sent;	/* daily_call_cap: sent, */
	int		 cap_has;	/* a cap or none, */
	int64_t		 cap;		/* the cap */
};

/* A listing being filled. */
struct member_rows {
	json_t		*list;
	int		 agents;	/* the agents' shape */
};

static int	agent_name_norm(const char *, char *, size_t);
static int	name_cmp(const void *, const void *);
static void	access_unknown(struct vault_resp *, const char **, size_t);
static int	body_role(struct vault_req *, struct vault_resp *, int *,
		    enum role *);
static int	body_access(struct vault_req *, struct vault_resp *, int64_t,
		    int *, char **);
static json_t	*access_json(const char *);
static int	member_copy(const struct store_membership *, void *);
static int	member_find(int64_t, int64_t, struct member_state *);
static int	member_view(const struct store_membership *, void *);
static void	member_rows(struct vault_req *, struct vault_resp *, int,
		    const char *);
static int	invite_view(const struct store_invite *, void *);
static int	invite_seen(const struct store_invite *, void *);
static int	invite_supersede(struct vault_resp *, int64_t, const char *);
static int	agent_body(struct vault_req *, struct vault_resp *,
		    const struct org_ctx *, struct agent_req *);
static int	agent_issue(const struct org_ctx *, const struct agent_req *,
		    char *, int64_t *, int *, struct vault_resp *);
static int	agent_elsewhere(const struct store_membership *, void *);

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

/* Like vault_org_routes: the role that counts is checked by org_enter(). */
const struct vault_route vault_member_routes[] = {
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
/* Request helpers.                                                    */

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
	json_t		*v, *e;
	const char	**unknown;
	size_t		 i, nunknown = 0;
	int64_t		 all, listed;
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
	if ((unknown = calloc(json_array_size(v) + 1,
	    sizeof(*unknown))) == NULL)
		fatal("%s: calloc", __func__);
	json_array_foreach(v, i, e) {
		if (!json_is_string(e) || json_has_nul(e) ||
		    !valid_name(json_string_value(e))) {
			free(unknown);
			resp_error(resp, 422, "field 'tool_access' must list "
			    "tool or skill names");
			return (-1);
		}
		if ((rc = store_org_has_tool(org, json_string_value(e))) ==
		    -1) {
			free(unknown);
			db_fail(resp, "access list");
			return (-1);
		}
		if (rc == 1)
			unknown[nunknown++] = json_string_value(e);
	}
	if (nunknown > 0) {
		access_unknown(resp, unknown, nunknown);
		free(unknown);
		return (-1);
	}
	free(unknown);
	if ((*text = json_dumps(v, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	/* treg compatibility: a list of every tool is every tool (null). */
	if (store_org_tool_count(org, NULL, &all) == 0 && all > 0 &&
	    store_org_tool_count(org, *text, &listed) == 0 && listed == all) {
		free(*text);
		*text = NULL;
	}
	return (0);
}

static int
name_cmp(const void *a, const void *b)
{
	return (strcmp(*(const char *const *)a, *(const char *const *)b));
}

/* 422 naming every unknown name of an access list, sorted, once each. */
static void
access_unknown(struct vault_resp *resp, const char **names, size_t n)
{
	char	 list[900];
	size_t	 i;

	qsort(names, n, sizeof(*names), name_cmp);
	list[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
			continue;
		if (list[0] != '\0')
			strlcat(list, ", ", sizeof(list));
		strlcat(list, names[i], sizeof(list));
	}
	resp_error(resp, 422, "unknown tool/skill(s): %s", list);
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

static int
member_copy(const struct store_membership *m, void *arg)
{
	struct member_state	*ms = arg;

	ms->role = role_from_name(m->role);
	ms->is_agent = m->is_agent;
	ms->local_run = m->local_run_enabled;
	if (ms->want_access)
		ms->access = access_json(m->tool_access);
	return (0);
}

/* A user's membership of an org: 0, 1 not a member, -1. */
static int
member_find(int64_t user, int64_t org, struct member_state *ms)
{
	ms->access = NULL;
	return (store_membership_get(user, org, member_copy, ms));
}

/* A row of GET /orgs/{id}/members, or of .../agents. */
static int
member_view(const struct store_membership *m, void *arg)
{
	struct member_rows	*r = arg;
	json_t			*o;

	if (r->agents)
		o = json_pack("{s:I,s:s,s:s,s:s,s:o,s:b,s:s}", "user_id",
		    (json_int_t)m->user_id, "name", m->agent_name != NULL ?
		    m->agent_name : "", "email", m->email, "role", m->role,
		    "tool_access", access_json(m->tool_access),
		    "local_run_enabled", m->local_run_enabled, "created_at",
		    m->created_at);
	else
		o = json_pack("{s:I,s:s,s:s,s:o,s:b,s:b,s:s}", "user_id",
		    (json_int_t)m->user_id, "email", m->email, "role",
		    m->role, "tool_access", access_json(m->tool_access),
		    "local_run_enabled", m->local_run_enabled, "is_agent",
		    m->is_agent, "joined_at", m->created_at);
	if (o == NULL)
		fatalx("%s: json_pack", __func__);
	json_array_append_new(r->list, o);
	return (0);
}

/* An admin's listing of the members (all, or the agents) of org {id1}. */
static void
member_rows(struct vault_req *req, struct vault_resp *resp, int agents,
    const char *what)
{
	struct org_ctx		 ctx;
	struct member_rows	 r;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	r.list = json_array();
	r.agents = agents;
	if (store_memberships(ctx.org_id, agents ? 1 : -1, member_view,
	    &r) == -1) {
		json_decref(r.list);
		db_fail(resp, what);
		return;
	}
	resp_ok(resp, r.list);
}

/* ------------------------------------------------------------------ */
/* Invites.                                                            */

/*
 * treg compatibility: an invite for someone already in the org is a 409
 * now rather than at accept time, and a new invite for an email replaces
 * the pending ones (their codes die).  0, or -1 with resp set.
 */
static int
invite_seen(const struct store_invite *iv, void *arg)
{
	struct invite_old	*o = arg;

	if (strcmp(iv->email, o->email) == 0)
		json_array_append_new(o->ids, json_integer(iv->id));
	return (0);
}

static int
invite_supersede(struct vault_resp *resp, int64_t org, const char *email)
{
	struct invite_old	 o;
	json_t			*v;
	int64_t			 uid;
	size_t			 i;
	int			 rc, agent;

	if ((rc = store_user_by_email(email, &uid, &agent)) == 0)
		rc = store_member_of(uid, org) == 0 ? 2 : 0;
	if (rc == -1) {
		db_fail(resp, "invite");
		return (-1);
	}
	if (rc == 2) {
		resp_error(resp, 409, "%s is already a member of this org",
		    email);
		return (-1);
	}
	o.email = email;
	if ((o.ids = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	rc = store_invites_each(org, (int64_t)time(NULL), invite_seen, &o);
	json_array_foreach(o.ids, i, v)
		if (rc != -1 && store_invite_delete(org,
		    json_integer_value(v)) == -1)
			rc = -1;
	json_decref(o.ids);
	if (rc == -1) {
		db_fail(resp, "invite");
		return (-1);
	}
	return (0);
}

static void
invites_create(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx		 ctx;
	struct store_invite	 iv;
	char			 email[EMAIL_LEN_MAX + 1], code[TOKEN_LEN + 1];
	char			 now[STORE_TIME_MAX], expires[32], *access;
	uint8_t			 hash[TOKEN_HASH_LEN];
	enum role		 role = ROLE_MEMBER;
	int64_t			 days = INVITE_DAYS_DEF, id;
	int			 sent, local_run = 1, rc;

	/* treg clamps the expiry rather than refusing it. */
	compat_clamp(req->body, "expires_days", 1, INVITE_DAYS_MAX);
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
	if (invite_supersede(resp, ctx.org_id, email) == -1 ||
	    body_access(req, resp, ctx.org_id, &sent, &access) == -1)
		return;
	memset(&iv, 0, sizeof(iv));
	now_iso(now, sizeof(now));
	iv.org_id = ctx.org_id;
	iv.email = email;
	iv.role = role_name(role);
	iv.tool_access = access;
	iv.local_run_enabled = local_run != 0;
	iv.expires_at = (int64_t)time(NULL) + days * 86400;
	iv.created_by = req->auth->user_id;
	iv.created_at = now;
	token_new(code, hash);
	rc = store_invite_insert(&iv, hash, &id);
	explicit_bzero(hash, sizeof(hash));
	free(access);
	if (rc != 0) {
		explicit_bzero(code, sizeof(code));
		db_fail(resp, "invite");
		return;
	}
	iso_time(iv.expires_at, expires, sizeof(expires));
	resp_ok(resp, json_pack("{s:I,s:s,s:s,s:s,s:I,s:s}", "id",
	    (json_int_t)id, "code", code, "email", email, "role",
	    role_name(role), "org_id", (json_int_t)ctx.org_id, "expires_at",
	    expires));
	explicit_bzero(code, sizeof(code));
}

static int
invite_view(const struct store_invite *iv, void *arg)
{
	char	 expires[32];

	iso_time(iv->expires_at, expires, sizeof(expires));
	/* invited_by: the inviter's email, as treg shows it ("" if gone). */
	json_array_append_new(arg, json_pack("{s:I,s:s,s:s,s:o,s:b,s:s,s:I,"
	    "s:s,s:s}", "id", (json_int_t)iv->id, "email", iv->email, "role",
	    iv->role, "tool_access", access_json(iv->tool_access),
	    "local_run_enabled", iv->local_run_enabled, "expires_at", expires,
	    "created_by", (json_int_t)iv->created_by, "created_at",
	    iv->created_at, "invited_by", iv->invited_by != NULL ?
	    iv->invited_by : ""));
	return (0);
}

static void
invites_list(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	json_t		*list;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	list = json_array();
	if (store_invites_each(ctx.org_id, (int64_t)time(NULL), invite_view,
	    list) == -1) {
		json_decref(list);
		db_fail(resp, "list invites");
		return;
	}
	resp_ok(resp, list);
}

static void
invite_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	int		 rc;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if ((rc = store_invite_delete(ctx.org_id, req->id2)) == -1) {
		db_fail(resp, "revoke invite");
		return;
	}
	if (rc == 1) {
		resp_error(resp, 404, "invite not found");
		return;
	}
	resp_ok(resp, json_pack("{s:I}", "revoked_invite",
	    (json_int_t)req->id2));
}

int
invite_copy(const struct store_invite *iv, void *arg)
{
	struct invite_found	*f = arg;

	f->id = iv->id;
	f->org_id = iv->org_id;
	f->expires = iv->expires_at;
	f->role = role_from_name(iv->role);
	f->local_run = iv->local_run_enabled;
	f->used = iv->used;
	if (iv->tool_access != NULL &&
	    (f->access = strdup(iv->tool_access)) == NULL)
		fatal("%s: strdup", __func__);
	strlcpy(f->email, iv->email, sizeof(f->email));
	strlcpy(f->slug, iv->org_slug, sizeof(f->slug));
	strlcpy(f->name, iv->org_name, sizeof(f->name));
	return (0);
}

/* The invite of a code (rc 1: none) for this email: 0, or -1 answered. */
int
invite_check(int rc, const struct invite_found *f, const char *email,
    struct vault_resp *resp)
{
	if (rc == -1) {
		db_fail(resp, "accept invite");
		return (-1);
	}
	if (rc == 1 || f->used || f->role == ROLE_NONE ||
	    f->role == ROLE_OWNER)
		resp_error(resp, 404, "invalid or already-used invite code");
	else if (f->expires <= (int64_t)time(NULL))
		resp_error(resp, 410, "this invite has expired: ask for a new "
		    "one");
	else if (strcmp(f->email, email) != 0)
		resp_error(resp, 403, "this invite is for a different email");
	else
		return (0);
	store_rollback();
	return (-1);
}

/*
 * The invited person (a new user on a first invite) joins: the invite
 * is used and the membership made, or the answer says why not.
 */
int
invite_join(const struct invite_found *f, const char *email, char *token,
    int64_t *uid, struct vault_resp *resp)
{
	int	 rc, is_agent;

	if (user_ensure(email, 0, uid, &is_agent) == -1 ||
	    (rc = store_invite_use(f->id)) == -1) {
		db_fail(resp, "accept invite");
		return (-1);
	}
	if (is_agent) {
		resp_refuse(resp, 403, "an agent joins an org only as its "
		    "agent (POST /orgs/{id}/agents)");
		return (-1);
	}
	if (rc == 1) {
		resp_refuse(resp, 404, "invalid or already-used invite code");
		return (-1);
	}
	if ((rc = membership_new(*uid, f->org_id, f->role, f->access,
	    f->local_run, NULL, token)) == STORE_CONFLICT) {
		resp_refuse(resp, 409, "you are already a member of this org");
		return (-1);
	}
	if (rc != 0 || project_invite_carry(f->id, f->org_id, *uid) == -1 ||
	    store_commit() == -1) {
		explicit_bzero(token, TOKEN_LEN + 1);
		db_fail(resp, "accept invite");
		return (-1);
	}
	return (0);
}

static void
invite_accept(struct vault_req *req, struct vault_resp *resp)
{
	struct invite_found	 f;
	const char		*code;
	char			 email[EMAIL_LEN_MAX + 1], token[TOKEN_LEN + 1];
	uint8_t			 hash[TOKEN_HASH_LEN];
	int64_t			 uid;
	int			 rc;

	if (body_str(req, resp, "code", 1, 256, &code) == -1 ||
	    body_email(req, resp, email, sizeof(email)) == -1 ||
	    body_email_person(resp, email) == -1)
		return;
	memset(&f, 0, sizeof(f));
	token_hash(code, strlen(code), hash);
	if (store_begin() == -1) {
		explicit_bzero(hash, sizeof(hash));
		db_fail(resp, "begin");
		return;
	}
	rc = store_invite_by_code(hash, invite_copy, &f);
	explicit_bzero(hash, sizeof(hash));
	if (invite_check(rc, &f, email, resp) == 0 &&
	    invite_join(&f, email, token, &uid, resp) == 0) {
		resp_ok(resp, json_pack("{s:s,s:I,s:s,s:s,s:s,s:s,s:I}",
		    "org", f.slug, "org_id", (json_int_t)f.org_id, "name",
		    f.name, "role", role_name(f.role), "token", token,
		    "email", email, "user_id", (json_int_t)uid));
		explicit_bzero(token, sizeof(token));
	}
	free(f.access);
}

/* ------------------------------------------------------------------ */
/* Members.                                                            */

/*
 * A transaction, and the membership of org the request's second id
 * names: 0 found, 1 none, -1 answered (what: the failure's words).
 */
static int
member_begin(struct vault_req *req, struct vault_resp *resp, int64_t org,
    struct member_state *ms, const char *what)
{
	int	 rc;

	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return (-1);
	}
	if ((rc = member_find(req->id2, org, ms)) == -1)
		db_fail(resp, what);
	return (rc);
}

static void
members_list(struct vault_req *req, struct vault_resp *resp)
{
	member_rows(req, resp, 0, "list members");
}

static void
member_role(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx			 ctx;
	struct store_membership_set	 set = { .local_run_enabled = -1 };
	struct member_state		 ms = { 0 };
	enum role			 role;
	int64_t				 owners;
	int				 sent, rc;

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
	if ((rc = member_begin(req, resp, ctx.org_id, &ms,
	    "change role")) == -1)
		return;
	if (store_owner_count(ctx.org_id, &owners) == -1) {
		db_fail(resp, "change role");
		return;
	}
	if (rc == 1 || (ms.is_agent && role == ROLE_OWNER) ||
	    (ms.role == ROLE_OWNER && role != ROLE_OWNER && owners <= 1)) {
		if (rc == 1)
			resp_refuse(resp, 404, "member not found");
		else if (ms.is_agent && role == ROLE_OWNER)
			resp_refuse(resp, 422, PHRASE_AGENT_OWNER);
		else
			resp_refuse(resp, 409, "the last owner cannot be "
			    "demoted: make another member owner first");
		return;
	}
	set.role = role_name(role);
	/* An owner has no daily call cap (member_access()): it goes. */
	if (store_membership_update(req->id2, ctx.org_id, &set) != 0 ||
	    (role == ROLE_OWNER && store_call_cap_set(ctx.org_id, req->id2,
	    0, 0) == -1) || store_commit() == -1) {
		db_fail(resp, "change role");
		return;
	}
	resp_ok(resp, json_pack("{s:I,s:s,s:I}", "user_id",
	    (json_int_t)req->id2, "role", role_name(role), "org_id",
	    (json_int_t)ctx.org_id));
}

/*
 * Owners are never restricted, so restricting one is refused (422)
 * rather than stored and silently ignored; a daily call cap (stored by
 * call_view_after() once this answers 200) is a restriction too.
 */
static void
member_access(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx			 ctx;
	struct store_membership_set	 set = { NULL };
	struct member_state		 ms = { 0 };
	json_t				*cap;
	char				*access = NULL;
	int				 local_run = -1, rc;

	cap = req->body != NULL ? json_object_get(req->body,
	    "daily_call_cap") : NULL;
	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1 ||
	    body_bool(req, resp, "local_run_enabled", 0, &local_run) == -1 ||
	    body_access(req, resp, ctx.org_id, &set.access_sent,
	    &access) == -1)
		return;
	if ((rc = member_begin(req, resp, ctx.org_id, &ms, "access")) == -1) {
		free(access);
		return;
	}
	if (rc == 1 || (ms.role == ROLE_OWNER && (access != NULL ||
	    local_run == 0 || (cap != NULL && !json_is_null(cap))))) {
		free(access);
		if (rc == 1)
			resp_refuse(resp, 404, "member not found");
		else
			resp_refuse(resp, 403, "owners cannot be restricted: "
			    "they always have every tool, local runs and no "
			    "daily call cap");
		return;
	}
	set.tool_access = access;
	set.local_run_enabled = local_run;
	rc = store_membership_update(req->id2, ctx.org_id, &set);
	free(access);
	ms.want_access = 1;
	if (rc != 0 || store_commit() == -1 ||
	    member_find(req->id2, ctx.org_id, &ms) != 0) {
		json_decref(ms.access);
		db_fail(resp, "access");
		return;
	}
	resp_ok(resp, json_pack("{s:I,s:I,s:o,s:b}", "user_id",
	    (json_int_t)req->id2, "org_id", (json_int_t)ctx.org_id,
	    "tool_access", ms.access, "local_run_enabled", ms.local_run));
}

static void
member_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx		 ctx;
	struct member_state	 ms = { 0 };
	int64_t			 owners;
	int			 rc;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if ((rc = member_begin(req, resp, ctx.org_id, &ms,
	    "remove member")) == -1)
		return;
	if (store_owner_count(ctx.org_id, &owners) == -1) {
		db_fail(resp, "remove member");
		return;
	}
	if (rc == 1 || (ms.role == ROLE_OWNER && (ctx.role != ROLE_OWNER ||
	    owners <= 1))) {
		if (rc == 1)
			resp_refuse(resp, 404, "member not found");
		else if (ctx.role != ROLE_OWNER)
			resp_refuse(resp, 403, "admins cannot remove owners");
		else
			resp_refuse(resp, 409, "the last owner cannot be "
			    "removed: make another member owner first, or "
			    "delete the org");
		return;
	}
	if (store_membership_remove(req->id2, ctx.org_id) == -1 ||
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
	int64_t		 owners;

	if (org_enter(req, resp, ROLE_VIEWER, &ctx) == -1)
		return;
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	if (store_owner_count(ctx.org_id, &owners) == -1) {
		db_fail(resp, "leave");
		return;
	}
	if (ctx.role == ROLE_OWNER && owners <= 1) {
		resp_refuse(resp, 409, "the last owner cannot leave the org: "
		    "make another member owner first, or delete the org");
		return;
	}
	if (store_membership_remove(req->auth->user_id, ctx.org_id) == -1 ||
	    store_commit() == -1) {
		db_fail(resp, "leave");
		return;
	}
	resp_ok(resp, json_pack("{s:I}", "left_org", (json_int_t)ctx.org_id));
}

/* ------------------------------------------------------------------ */
/* Agents.                                                             */

/* The body of POST /orgs/{id}/agents: 0, or -1 answered. */
static int
agent_body(struct vault_req *req, struct vault_resp *resp,
    const struct org_ctx *ctx, struct agent_req *a)
{
	const char	*s;

	if (body_str(req, resp, "name", 1, 256, &s) == -1)
		return (-1);
	if (agent_name_norm(s, a->name, sizeof(a->name)) == -1) {
		resp_error(resp, 422, "an agent's name is 1 to %d characters "
		    "of a-z, 0-9, '-' and '_'", AGENT_NAME_MAX);
		return (-1);
	}
	if (body_role(req, resp, &a->role_sent, &a->role) == -1 ||
	    body_bool(req, resp, "local_run_enabled", 0, &a->local_run) == -1)
		return (-1);
	if (a->role == ROLE_OWNER) {
		resp_error(resp, 422, PHRASE_AGENT_OWNER);
		return (-1);
	}
	if (a->role == ROLE_ADMIN && ctx->role != ROLE_OWNER) {
		resp_error(resp, 403, "only owners can make an admin agent");
		return (-1);
	}
	if (call_cap_field(req->body, &a->cap_sent, &a->cap_has, &a->cap,
	    resp) == -1 || body_access(req, resp, ctx->org_id,
	    &a->access_sent, &a->access) == -1)
		return (-1);
	if ((size_t)snprintf(a->email, sizeof(a->email), "agent-%s-%s@%s",
	    ctx->slug, a->name, AGENT_DOMAIN) >= sizeof(a->email)) {
		resp_error(resp, 422, "the agent's name is too long for this "
		    "org");
		return (-1);
	}
	return (0);
}

/*
 * The agent's user and membership, made or (posted again, or made by
 * another request at the same moment) given a new token and whatever
 * the request sets.  In the caller's transaction: 0, or -1 answered.
 */
static int
agent_issue(const struct org_ctx *ctx, const struct agent_req *a,
    char *token, int64_t *uid, int *rotated, struct vault_resp *resp)
{
	struct store_membership_set	 set;
	struct member_state		 ms = { 0 };
	uint8_t				 hash[TOKEN_HASH_LEN];
	int64_t				 other;
	int				 rc = 1, is_agent;

	if (user_ensure(a->email, 1, uid, &is_agent) == -1 ||
	    (is_agent && (rc = member_find(*uid, ctx->org_id, &ms)) == -1))
		goto fail;
	if (!is_agent) {
		resp_refuse(resp, 409, "%s is registered as a person",
		    a->email);
		return (-1);
	}
	/*
	 * "agent-q-b-c" is org q's "b-c" and org q-b's "c": the address
	 * names one agent, and that agent is another org's.
	 */
	other = ctx->org_id;
	if (rc == 1 && store_user_memberships(*uid, agent_elsewhere,
	    &other) == -1)
		goto fail;
	if (other != ctx->org_id) {
		resp_refuse(resp, 409, "the agent address %s is taken by an "
		    "agent of another org: choose another name", a->email);
		return (-1);
	}
	if (rc == 1 && (rc = membership_new(*uid, ctx->org_id, a->role,
	    a->access, a->local_run != 0, a->name, token)) == 0)
		return (0);
	if (rc != 0 && rc != STORE_CONFLICT)
		goto fail;
	memset(&set, 0, sizeof(set));
	token_new(token, hash);
	set.token_hash = hash;
	set.role = a->role_sent ? role_name(a->role) : NULL;
	set.access_sent = a->access_sent;
	set.tool_access = a->access;
	set.local_run_enabled = a->local_run;
	rc = store_membership_update(*uid, ctx->org_id, &set);
	explicit_bzero(hash, sizeof(hash));
	if (rc != 0)
		goto fail;
	*rotated = 1;
	return (0);
 fail:
	explicit_bzero(token, TOKEN_LEN + 1);
	db_fail(resp, "agent");
	return (-1);
}

/* A membership of an agent's user outside the org in *arg: its org. */
static int
agent_elsewhere(const struct store_membership *m, void *arg)
{
	int64_t	*org = arg;

	if (m->org_id == *org)
		return (0);
	*org = m->org_id;
	return (1);
}

/*
 * An agent is a user of its own (agent-<org>-<name>@agents.local) with
 * one membership.  Posting the same name again rotates the token and
 * keeps whatever the request leaves out.
 */
static void
agents_create(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx		 ctx;
	struct agent_req	 a = { .role = ROLE_MEMBER, .local_run = -1 };
	struct member_state	 ms = { .want_access = 1 };
	char			 token[TOKEN_LEN + 1];
	int64_t			 uid;
	int			 rotated = 0;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1 ||
	    agent_body(req, resp, &ctx, &a) == -1)
		goto out;
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		goto out;
	}
	if (agent_issue(&ctx, &a, token, &uid, &rotated, resp) == -1)
		goto out;
	/* Its cap with it: an agent is never uncapped for a moment. */
	if ((a.cap_sent && store_call_cap_set(ctx.org_id, uid, a.cap_has,
	    a.cap) == -1) || member_find(uid, ctx.org_id, &ms) != 0 ||
	    store_commit() == -1) {
		explicit_bzero(token, sizeof(token));
		json_decref(ms.access);
		db_fail(resp, "agent");
		goto out;
	}
	resp_ok(resp, json_pack("{s:s,s:s,s:s,s:I,s:s,s:o,s:b,s:I,s:b}",
	    "token", token, "name", a.name, "email", a.email, "user_id",
	    (json_int_t)uid, "role", role_name(ms.role), "tool_access",
	    ms.access, "local_run_enabled", ms.local_run, "org_id",
	    (json_int_t)ctx.org_id, "rotated", rotated));
	explicit_bzero(token, sizeof(token));
 out:
	free(a.access);
}

static void
agents_list(struct vault_req *req, struct vault_resp *resp)
{
	member_rows(req, resp, 1, "list agents");
}

static void
agent_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx		 ctx;
	struct member_state	 ms = { 0 };
	int			 rc;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if ((rc = member_begin(req, resp, ctx.org_id, &ms,
	    "revoke agent")) == -1)
		return;
	if (rc == 1 || !ms.is_agent) {
		resp_refuse(resp, 404, "agent not found");
		return;
	}
	if (store_membership_remove(req->id2, ctx.org_id) == -1 ||
	    store_commit() == -1) {
		db_fail(resp, "revoke agent");
		return;
	}
	resp_ok(resp, json_pack("{s:b}", "revoked", 1));
}
