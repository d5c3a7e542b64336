/*
 * The vault's access rules: who a token is (auth_lookup), the roles, and
 * whether a member may use a tool.  Below the domain files, above the
 * store: every route, run, grant and call asks here, and nowhere else.
 */

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "vault.h"

static const char *role_phrase(enum role);
static int	 org_route_reads(enum api_route);
static int	 org_ctx_fill(const struct store_membership *, void *);

static const char *const role_names[] = {
	"", "viewer", "member", "admin", "owner"
};

int
require_role(struct vault_req *req, struct vault_resp *resp, enum role need)
{
	if (req->auth != NULL && req->auth->role >= need)
		return (0);
	resp_error(resp, 403, "%s", role_phrase(need));
	return (-1);
}

static const char *
role_phrase(enum role need)
{
	switch (need) {
	case ROLE_MEMBER:
		return ("viewers can call and read, but cannot register");
	case ROLE_ADMIN:
		return ("only admins and owners can do this");
	case ROLE_OWNER:
		return ("only owners can do this");
	default:
		return ("forbidden");
	}
}

int
auth_lookup(const uint8_t hash[TOKEN_HASH_LEN], struct auth *a)
{
	struct store_member	 m;
	int			 rc = 1, found;

	/* A database that fails is not "no such token": 503, and said. */
	if ((found = store_member_by_token(hash, &m)) != 0) {
		if (found == -1) {
			log_warnx("authentication: %s", store_error());
			rc = -1;
		}
		goto out;
	}
	if (sodium_memcmp(m.token_hash, hash, TOKEN_HASH_LEN) != 0)
		goto out;
	a->membership_id = m.id;
	a->user_id = m.user_id;
	a->org_id = m.org_id;
	a->role = role_from_name(m.role);
	a->tool_access = m.tool_access ? json_loads(m.tool_access, 0, NULL) :
	    NULL;
	a->local_run_enabled = m.local_run_enabled;
	/* A scope that does not read is no scope at all: refuse it. */
	if (project_access_load(m.project_access, a) == -1) {
		log_warnx("authentication: membership %lld has a bad "
		    "project_access", (long long)m.id);
		json_decref(a->tool_access);
		a->tool_access = NULL;
		goto out;
	}
	strlcpy(a->email, m.email, sizeof(a->email));
	a->is_agent = m.is_agent;
	strlcpy(a->org_slug, m.org_slug, sizeof(a->org_slug));
	if (a->role != ROLE_NONE)
		rc = 0;
 out:
	store_member_clear(&m);
	return (rc);
}

void
auth_clear(struct auth *a)
{
	json_decref(a->tool_access);
	memset(a, 0, sizeof(*a));
}

/* Owners are never restricted; null means every tool. */
int
access_allows(const struct auth *a, const char *tool)
{
	size_t	 i;
	json_t	*v;

	if (a->role == ROLE_OWNER || a->tool_access == NULL ||
	    !json_is_array(a->tool_access))
		return (1);
	json_array_foreach(a->tool_access, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), tool) == 0)
			return (1);
	return (0);
}

enum role
role_from_name(const char *s)
{
	int	 i;

	for (i = ROLE_VIEWER; i <= ROLE_OWNER; i++)
		if (strcmp(s, role_names[i]) == 0)
			return (i);
	return (ROLE_NONE);
}

const char *
role_name(enum role r)
{
	if (r < ROLE_VIEWER || r > ROLE_OWNER)
		return ("");
	return (role_names[r]);
}

/*
 * A membership's project_access column into the caller: NULL is the
 * whole org; else a JSON array of project ids (at most
 * PROJECT_ACCESS_MAX; [] scopes to the org-wide tools alone).
 */
int
project_access_load(const char *text, struct auth *a)
{
	json_t	*v, *e;
	size_t	 i;
	int	 rc = -1;

	a->projects_scoped = 0;
	a->nprojects = 0;
	if (text == NULL)
		return (0);
	if ((v = json_loads(text, 0, NULL)) == NULL || !json_is_array(v) ||
	    json_array_size(v) > PROJECT_ACCESS_MAX)
		goto out;
	json_array_foreach(v, i, e) {
		if (!json_is_integer(e) || json_integer_value(e) <= 0)
			goto out;
		a->projects[a->nprojects++] = json_integer_value(e);
	}
	a->projects_scoped = 1;
	rc = 0;
 out:
	json_decref(v);
	return (rc);
}

/*
 * treg's coarse dial: a null scope is the whole org, an org-wide tool
 * (project 0: every tool made before projects) is always in it, and an
 * owner is never scoped.
 */
int
project_allows(const struct auth *a, int64_t project)
{
	size_t	 i;

	if (a->role == ROLE_OWNER || !a->projects_scoped || project <= 0)
		return (1);
	for (i = 0; i < a->nprojects; i++)
		if (a->projects[i] == project)
			return (1);
	return (0);
}

int
tool_usable(const struct auth *a, const char *tool, const char *bundle,
    int64_t project)
{
	return (project_allows(a, project) && (access_allows(a, tool) ||
	    (bundle != NULL && *bundle != '\0' && access_allows(a, bundle))));
}

int
tool_access_check(const struct auth *a, const struct tool_row *t,
    struct vault_resp *resp)
{
	if (!project_allows(a, t->project_id)) {
		/* treg's words: its tests look for "project". */
		resp_error(resp, 403, "the tool '%s' belongs to a project "
		    "you're not scoped to — an admin can grant it (`treg org "
		    "access <you> --projects …`)", t->name);
		return (-1);
	}
	if (tool_usable(a, t->name, t->bundle, t->project_id))
		return (0);
	resp_error(resp, 403, "you don't have access to the tool '%s' in this "
	    "team — ask an admin to add it to your access list", t->name);
	return (-1);
}

/* Routes that only read (and leaving): another org's are 404 there. */
static int
org_route_reads(enum api_route r)
{
	switch (r) {
	case ROUTE_INVITES_LIST:
	case ROUTE_MEMBERS_LIST:
	case ROUTE_AGENTS_LIST:
	case ROUTE_AGENTS_OBSERVED:
	case ROUTE_DENY_LIST:
	case ROUTE_ORG_LEAVE:
		return (1);
	default:
		return (0);
	}
}

static int
org_ctx_fill(const struct store_membership *m, void *arg)
{
	struct org_ctx	*ctx = arg;

	ctx->org_id = m->org_id;
	ctx->membership_id = m->id;
	ctx->role = role_from_name(m->role);
	strlcpy(ctx->slug, m->org_slug, sizeof(ctx->slug));
	strlcpy(ctx->name, m->org_name, sizeof(ctx->name));
	return (0);
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
	int	 rc;

	memset(ctx, 0, sizeof(*ctx));
	if (req->id1 != req->auth->org_id) {
		if (org_route_reads(req->route))
			resp_error(resp, 404, "org not found");
		else
			resp_error(resp, 403, "admin role in this org is "
			    "required");
		return (-1);
	}
	rc = store_membership_get(req->auth->user_id, req->auth->org_id,
	    org_ctx_fill, ctx);
	if (rc == -1) {
		db_fail(resp, "org lookup");
		return (-1);
	}
	if (rc == 1 || ctx->role == ROLE_NONE) {
		resp_error(resp, 404, "org not found");
		return (-1);
	}
	if (ctx->role < need) {
		/* treg's words (its client shows them as they are). */
		resp_error(resp, 403, "%s role in this org is required",
		    need == ROLE_OWNER ? "owner" : "admin");
		return (-1);
	}
	return (0);
}
