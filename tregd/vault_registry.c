/*
 * vault_registry.c: what the registry's files (secrets, tools, skills)
 * share: finding an object of the caller's org and judging whether the
 * caller may edit it, the access lists' visibility rule, and the JSON
 * views of a secret and a tool.  Every lookup is scoped by the caller's
 * org, so another org's ids answer 404 like ids that never existed.
 */

#include <stdlib.h>
#include <string.h>

#include "vault_registry.h"

static const char *const reg_what[] = {
	[STORE_SECRET] = "secret",
	[STORE_TOOL] = "tool",
	[STORE_BUNDLE] = "skill"
};

static int	 reg_secret_one(const struct store_secret_item *, void *);
static int	 reg_tool_one(const struct store_tool_item *, void *);

int
reg_can_edit(const struct auth *a, int64_t owner_id)
{
	return (a->role >= ROLE_ADMIN || a->user_id == owner_id);
}

int
reg_ref(struct vault_req *req, struct vault_resp *resp,
    enum store_object what, int64_t id, const char *name, const char *verb,
    struct store_ref *ref)
{
	int	 rc;

	rc = store_ref_get(what, req->auth->org_id, id, name, ref);
	if (rc == 1) {
		resp_error(resp, 404, "%s not found", reg_what[what]);
		return (-1);
	}
	if (rc != 0) {
		db_fail(resp, reg_what[what]);
		return (-1);
	}
	if (verb != NULL && !reg_can_edit(req->auth, ref->owner_id)) {
		resp_error(resp, 403, "you can only %s %ss you created (or ask "
		    "an admin)", verb, reg_what[what]);
		return (-1);
	}
	return (0);
}

int
reg_tool_visible(const struct auth *a, const char *tool, const char *bundle)
{
	return (access_allows(a, tool) ||
	    (bundle != NULL && *bundle != '\0' && access_allows(a, bundle)));
}

json_t *
reg_json_text(const char *s)
{
	json_t	*v;

	if (s == NULL || *s == '\0' || (v = json_loads(s, JSON_DECODE_ANY,
	    NULL)) == NULL)
		return (json_null());
	return (v);
}

json_t *
reg_email(const char *email)
{
	return (email != NULL ? json_string(email) : json_null());
}

char *
reg_dumps(json_t *v)
{
	char	*s;

	if ((s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
		fatalx("%s: json_dumps", __func__);
	return (s);
}

int
reg_spec_str(struct vault_resp *resp, json_t *o, const char *ctx,
    const char *f, int required, size_t maxlen, const char **out)
{
	json_t		*v = json_object_get(o, f);
	const char	*sep = *ctx ? ": " : "";

	if (v == NULL || (json_is_null(v) && !required)) {
		if (!required)
			return (0);
		resp_error(resp, 422, "%s%sfield '%s' is required", ctx, sep,
		    f);
		return (-1);
	}
	if (!json_is_string(v)) {
		resp_error(resp, 422, "%s%sfield '%s' must be a string", ctx,
		    sep, f);
		return (-1);
	}
	if (json_string_length(v) > maxlen) {
		resp_error(resp, 422, "%s%sfield '%s' is too long (at most "
		    "%zu bytes)", ctx, sep, f, maxlen);
		return (-1);
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		resp_error(resp, 422, "%s%sfield '%s' contains a NUL byte",
		    ctx, sep, f);
		return (-1);
	}
	*out = json_string_value(v);
	return (0);
}

/* ------------------------------------------------------------------ */
/* Views.                                                              */

json_t *
reg_secret_json(const struct store_secret_item *s)
{
	json_t	*v;

	v = json_pack("{s:I,s:s,s:s,s:o,s:o}",
	    "id", (json_int_t)s->id,
	    "name", s->name,
	    "kind", s->kind,
	    "owner", reg_email(s->owner_email),
	    "bundle_id", s->bundle_id > 0 ? json_integer(s->bundle_id) :
	    json_null());
	if (v == NULL)
		fatalx("%s: json_pack", __func__);
	return (v);
}

json_t *
reg_tool_json(const struct store_tool_item *t)
{
	json_t	*v, *cli;

	cli = reg_json_text(t->cli);
	v = json_pack("{s:I,s:s,s:o,s:s,s:s,s:o,s:o,s:b,s:o,s:o,s:o}",
	    "id", (json_int_t)t->id,
	    "name", t->name,
	    "owner", reg_email(t->owner_email),
	    "base_url", t->base_url,
	    "host", t->host,
	    "bindings", reg_json_text(t->bindings),
	    "cli", cli,
	    "server_runnable", json_is_object(cli) &&
	    conf_run_allowed(&vault_conf, json_string_value(
	    json_object_get(cli, "bin"))),
	    "bundle_id", t->bundle_id > 0 ? json_integer(t->bundle_id) :
	    json_null(),
	    "health_check", reg_json_text(t->health_check),
	    "examples", reg_json_text(t->examples));
	if (v == NULL)
		fatalx("%s: json_pack", __func__);
	return (v);
}

static int
reg_secret_one(const struct store_secret_item *s, void *arg)
{
	*(json_t **)arg = reg_secret_json(s);
	return (1);
}

static int
reg_tool_one(const struct store_tool_item *t, void *arg)
{
	*(json_t **)arg = reg_tool_json(t);
	return (1);
}

json_t *
reg_view(enum store_object what, int64_t org, int64_t id)
{
	struct store_sel	 sel;
	json_t			*v = NULL;
	int			 rc;

	memset(&sel, 0, sizeof(sel));
	sel.org = org;
	sel.id = id;
	if (what == STORE_SECRET)
		rc = store_secrets(&sel, reg_secret_one, &v);
	else if (what == STORE_TOOL)
		rc = store_tools(&sel, reg_tool_one, &v);
	else
		fatalx("%s: no view of object %d", __func__, what);
	if (rc == -1) {
		json_decref(v);
		return (NULL);
	}
	return (v);
}
