/*
 * vault_me.c: GET /auth/me (SPEC.md section 11), what a token is.
 *
 * treg's client checks a token here at `treg login --token` and keeps
 * the email, org and role it reads.  The answer comes from the
 * authenticated membership alone: it needs no further row, and carries
 * no token.  token_kind says which of treg's three kinds of token asked:
 * "membership" (a person in one org), "agent" (a machine identity in
 * one org) or "identity" (a person across orgs, vault_identity.c: in
 * the org X-Treg-Org chose, or in none, with the person's fields only).
 */

#include <jansson.h>

#include "vault.h"

static void	auth_me(struct vault_req *, struct vault_resp *);

const struct vault_route vault_me_routes[] = {
	{ ROUTE_AUTH_ME,	ROLE_VIEWER,	auth_me },
	{ ROUTE_NONE,		ROLE_NONE,	NULL }
};

static void
auth_me(struct vault_req *req, struct vault_resp *resp)
{
	const struct auth	*a = req->auth;
	json_t			*access;
	const char		*kind;

	kind = a->kind == AUTH_IDENTITY ? "identity" : a->is_agent ? "agent" :
	    "membership";
	/* A person in no org (an identity token, no X-Treg-Org): who. */
	if (a->membership_id == 0) {
		resp_ok(resp, json_pack("{s:I, s:s, s:s, s:b, s:s}",
		    "user_id", (json_int_t)a->user_id,
		    "email", a->email,
		    "kind", "user",
		    "is_agent", 0,
		    "token_kind", kind));
		if (resp->body == NULL)
			fatalx("%s: json_pack", __func__);
		return;
	}
	access = a->tool_access != NULL ? json_deep_copy(a->tool_access) :
	    json_null();
	resp_ok(resp, json_pack("{s:I, s:s, s:s, s:I, s:s, s:s, s:b, s:b, "
	    "s:o, s:I, s:s}",
	    "user_id", (json_int_t)a->user_id,
	    "email", a->email,
	    "org", a->org_slug,
	    "org_id", (json_int_t)a->org_id,
	    "role", role_name(a->role),
	    "kind", a->is_agent ? "agent" : "user",
	    "is_agent", a->is_agent,
	    "local_run_enabled", a->local_run_enabled,
	    "tool_access", access,
	    "membership_id", (json_int_t)a->membership_id,
	    "token_kind", kind));
	if (resp->body == NULL)
		fatalx("%s: json_pack", __func__);
}
