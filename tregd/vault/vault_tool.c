/*
 * vault_tool.c: the registry's tools (SPEC.md section 4) and tregctl
 * show tools (secrets in vault_secret.c, skills in vault_skill.c, each
 * with its routes; the tool as the run path loads it in
 * vault_registry.c).
 *
 * tool_secrets lists, per tool, every secret its bindings and inject
 * entries use; it is rewritten whenever a tool is, so deleting a secret
 * in use, or a bundle whose secrets an outside tool uses, answers 409.
 * Access lists (a member's tool_access) hide a tool unless it or its
 * skill is named.
 */

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compat.h"
#include "vault_registry.h"

#define EXAMPLES_MAX		64
#define TOOL_SECRETS_MAX	(BINDINGS_MAX + INJECT_MAX)

#define PHRASE_NO_ACCESS	"you don't have access to the tool '%s' in " \
				"this team — ask an admin"
#define PHRASE_NAME_TAKEN	"tool name '%s' already exists in this org"

/* A tool being written: canonical fields, owned JSON. */
struct tool_in {
	const char	*name;
	const char	*base_url;
	char		 host[HOST_LEN_MAX];
	json_t		*bindings;	/* canonical array */
	json_t		*cli;		/* canonical object or NULL */
	json_t		*health_check;	/* object or NULL */
	json_t		*examples;	/* array */
	json_t		*secret_ids;	/* array of the ids used */
	json_t		*kept_ids;	/* a PATCH: the ids it held before */
	int		 project_sent;	/* "project" (treg): sent, */
	int64_t		 project_id;	/* its id, 0: org-wide */
};

/* A tool as stored, for a PATCH to merge into. */
struct tool_old {
	struct tool_row	 row;
	json_t		*health_check;
	json_t		*examples;
	int		 found;
};

/* GET /tools and GET /tools/by-name/X: the caller and what it gets. */
struct tool_list {
	const struct auth	*a;
	json_t			*list;		/* by name */
	struct evbuffer		*text;		/* GET /tools */
	int			 found, visible;
};

static int	 ids_add(json_t *, int64_t);
static int	 ref_resolve(struct vault_req *, struct vault_resp *, json_t *,
		    json_t *, int, const char *, const char *, json_t *,
		    json_t *);
static int	 oauth_field_refused(struct vault_resp *, const char *,
		    json_t *, const char *);
static int	 inject_field_refused(struct vault_req *, struct vault_resp *,
		    json_t *, json_t *, const char *);
static int	 tool_resolve(struct vault_req *, struct vault_resp *,
		    struct tool_in *, json_t *, int, int);
static void	 tool_in_clear(struct tool_in *);
static int	 tool_fields(struct vault_req *, struct vault_resp *,
		    json_t *, const char *, int, int, struct tool_in *);
static int	 tool_extras(struct vault_resp *, json_t *, const char *, int,
		    struct tool_in *);
static int	 tool_name_taken(struct vault_resp *, int64_t, const char *,
		    int64_t);
static void	 tool_item(struct store_tool_item *, const struct tool_in *);
static void	 tool_item_free(struct store_tool_item *);
static int	 tool_insert(struct vault_req *, struct vault_resp *,
		    struct tool_in *, int64_t, int64_t *);
static int	 tool_secrets_sync(int64_t, json_t *);
static int	 tool_old_row(const struct store_tool_item *, void *);
static int	 tool_old_load(struct vault_resp *, int64_t, int64_t,
		    struct tool_old *);
static void	 tool_old_clear(struct tool_old *);
static void	 tool_merge(struct tool_in *, json_t *, struct tool_old *);
static int	 tool_update(struct vault_resp *, int64_t, int64_t,
		    struct tool_in *);
static int	 tool_list_row(const struct store_tool_item *, void *);
static int	 tool_text_row(const struct store_tool_item *, void *);
static int	 ctl_tool_row(const struct store_tool_item *, void *);

static void	 tools_create(struct vault_req *, struct vault_resp *);
static void	 tools_list(struct vault_req *, struct vault_resp *);
static void	 tool_by_name(struct vault_req *, struct vault_resp *);
static void	 tool_patch(struct vault_req *, struct vault_resp *);
static void	 tool_delete(struct vault_req *, struct vault_resp *);

const struct vault_route vault_tool_routes[] = {
	{ ROUTE_TOOLS_CREATE,	ROLE_MEMBER,	tools_create },
	{ ROUTE_TOOLS_LIST,	ROLE_VIEWER,	tools_list },
	{ ROUTE_TOOL_BY_NAME,	ROLE_VIEWER,	tool_by_name },
	{ ROUTE_TOOL_PATCH,	ROLE_MEMBER,	tool_patch },
	{ ROUTE_TOOL_DELETE,	ROLE_MEMBER,	tool_delete },
	{ ROUTE_NONE,		ROLE_NONE,	NULL }
};

/* ------------------------------------------------------------------ */
/* Checking a tool.                                                    */

static void
tool_in_clear(struct tool_in *in)
{
	json_decref(in->bindings);
	json_decref(in->cli);
	json_decref(in->health_check);
	json_decref(in->examples);
	json_decref(in->secret_ids);
	json_decref(in->kept_ids);
	memset(in, 0, sizeof(*in));
}

static int
ids_add(json_t *ids, int64_t id)
{
	if (compat_ids_have(ids, id))
		return (0);
	return (json_array_append_new(ids, json_integer(id)));
}

/*
 * Turn the secret reference of one binding or inject entry e into a
 * checked secret_id: a skill's local name through locals, then the id
 * must be a secret of the org, and owned by the caller unless it is an
 * admin (check_owner).  what names the place for error texts.
 */
static int
ref_resolve(struct vault_req *req, struct vault_resp *resp, json_t *e,
    json_t *locals, int check_owner, const char *ctx, const char *verb,
    json_t *ids, json_t *kept)
{
	struct store_ref ref;
	json_t		*local, *idv, *n, *v;
	const char	*key;
	int64_t		 id;
	int		 rc;

	if ((local = json_object_get(e, "secret")) != NULL) {
		idv = locals ? json_object_get(locals,
		    json_string_value(local)) : NULL;
		if (idv == NULL) {
			resp_error(resp, 422, "%s: unknown secret '%s' (not a "
			    "local_name of this skill)", ctx,
			    json_string_value(local));
			return (-1);
		}
		/* Rebuilt: secret_id takes the place of secret. */
		n = json_object();
		json_object_foreach(e, key, v) {
			if (strcmp(key, "secret") == 0)
				json_object_set_new(n, "secret_id",
				    json_integer(json_integer_value(idv)));
			else
				json_object_set(n, key, v);
		}
		json_object_clear(e);
		json_object_update(e, n);
		json_decref(n);
	}
	if ((idv = json_object_get(e, "secret_id")) == NULL)
		return (0);
	id = json_integer_value(idv);
	rc = store_ref_get(STORE_SECRET, req->auth->org_id, id, NULL, &ref);
	if (rc == -1) {
		db_fail(resp, "secret lookup");
		return (-1);
	}
	if (rc == 1) {
		resp_error(resp, 422, "%s: unknown secret %lld", ctx,
		    (long long)id);
		return (-1);
	}
	/* treg compatibility: what the tool held already is grandfathered. */
	if (check_owner && !compat_ids_have(kept, id) &&
	    !reg_can_edit(req->auth, ref.owner_id)) {
		resp_error(resp, 403, "%s: you can only %s secrets you own "
		    "(secret %lld belongs to a teammate)", ctx, verb,
		    (long long)id);
		return (-1);
	}
	if (oauth_field_refused(resp, ref.detail, e, ctx))
		return (-1);
	ids_add(ids, id);
	return (0);
}

/* Of an oauth secret only the access-token leaf may leave (SPEC 3). */
static int
oauth_field_refused(struct vault_resp *resp, const char *kind, json_t *e,
    const char *ctx)
{
	const char	*field;

	field = json_string_value(json_object_get(e, "secret_field"));
	if (inject_field_allowed(kind, field))
		return (0);
	resp_error(resp, 422, "%s: only the access token of an oauth secret "
	    "(access_token or token) may be injected or granted, not '%s'",
	    ctx, field);
	return (1);
}

/* An inject entry without a secret_id: the oauth rule on its binding's. */
static int
inject_field_refused(struct vault_req *req, struct vault_resp *resp,
    json_t *bindings, json_t *e, const char *ctx)
{
	struct store_ref ref;
	json_t		*b, *use = NULL;
	const char	*from;
	size_t		 i;

	if (json_object_get(e, "secret_id") != NULL ||
	    json_object_get(e, "secret_field") == NULL)
		return (0);
	from = json_string_value(json_object_get(e, "from_binding"));
	json_array_foreach(bindings, i, b)
		if (from == NULL ? json_array_size(bindings) == 1 :
		    strcasecmp(from, json_string_value(json_object_get(b,
		    "name"))) == 0)
			use = b;
	if (use == NULL || store_ref_get(STORE_SECRET, req->auth->org_id,
	    json_integer_value(json_object_get(use, "secret_id")), NULL,
	    &ref) != 0)
		return (0);
	return (oauth_field_refused(resp, ref.detail, e, ctx));
}

/*
 * Resolve and check every secret the tool uses, and collect their ids
 * into in->secret_ids.  Ownership is checked for the parts the caller
 * is writing (a PATCH of the name alone does not re-judge old bindings).
 */
static int
tool_resolve(struct vault_req *req, struct vault_resp *resp,
    struct tool_in *in, json_t *locals, int own_bindings, int own_cli)
{
	json_t		*b, *e, *inject;
	const char	*from;
	char		 ctx[48];
	size_t		 i, j;
	int		 found;

	json_decref(in->secret_ids);
	if ((in->secret_ids = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	json_array_foreach(in->bindings, i, b) {
		snprintf(ctx, sizeof(ctx), "bindings[%zu]", i);
		if (ref_resolve(req, resp, b, locals, own_bindings, ctx,
		    "bind", in->secret_ids, in->kept_ids) == -1)
			return (-1);
	}
	if (in->cli == NULL)
		return (mask_cost_check(req->auth->org_id, in->name,
		    in->bindings, NULL, resp));
	inject = json_object_get(in->cli, "inject");
	json_array_foreach(inject, i, e) {
		snprintf(ctx, sizeof(ctx), "cli.inject[%zu]", i);
		if (ref_resolve(req, resp, e, locals, own_cli, ctx, "inject",
		    in->secret_ids, in->kept_ids) == -1 ||
		    inject_field_refused(req, resp, in->bindings, e, ctx))
			return (-1);
		if ((from = json_string_value(json_object_get(e,
		    "from_binding"))) == NULL)
			continue;
		found = 0;
		json_array_foreach(in->bindings, j, b)
			if (strcasecmp(from, json_string_value(
			    json_object_get(b, "name"))) == 0)
				found = 1;
		if (!found) {
			resp_error(resp, 422, "%s: 'from_binding' names no "
			    "binding of this tool ('%s')", ctx, from);
			return (-1);
		}
	}
	/* What masking its secrets will cost: bounded. */
	return (mask_cost_check(req->auth->org_id, in->name, in->bindings,
	    in->cli, resp));
}

/*
 * The fields of a tool from spec (the body, or one of a skill's tools).
 * partial: a PATCH, absent fields stay unset (NULL).  local: secrets
 * may be named by a skill's local name.
 */
static int
tool_fields(struct vault_req *req, struct vault_resp *resp, json_t *spec,
    const char *ctx, int partial, int local, struct tool_in *in)
{
	const char	*sep = *ctx ? ": " : "";
	char		 err[512];
	json_t		*v;
	int		 rc;

	if (json_has_nul(spec)) {
		resp_error(resp, 422, "%s%sstrings may not contain NUL bytes",
		    ctx, sep);
		return (-1);
	}
	/* treg compatibility: its forms of these fields (compat.c). */
	if ((rc = compat_tool_spec(spec, local, partial, err,
	    sizeof(err))) != 0) {
		resp_error(resp, rc, "%s%s%s", ctx, sep, err);
		return (-1);
	}
	if (reg_spec_str(resp, spec, ctx, "name", !partial, NAME_LEN_MAX,
	    &in->name) == -1)
		return (-1);
	if (in->name != NULL && !valid_name(in->name)) {
		resp_error(resp, 422, "%s%sfield 'name' must be 1 to %d bytes "
		    "without control characters", ctx, sep, NAME_LEN_MAX);
		return (-1);
	}
	if (reg_spec_str(resp, spec, ctx, "base_url", !partial, URL_LEN_MAX,
	    &in->base_url) == -1)
		return (-1);
	if (in->base_url != NULL && url_check_base(in->base_url,
	    vault_conf.relay_allow_private, in->host, sizeof(in->host), err,
	    sizeof(err)) == -1) {
		resp_error(resp, 422, "%s%s%s", ctx, sep, err);
		return (-1);
	}
	if ((v = json_object_get(spec, "bindings")) != NULL || !partial) {
		if (bindings_check(v, local, &in->bindings, err,
		    sizeof(err)) == -1) {
			resp_error(resp, 422, "%s%s%s", ctx, sep, err);
			return (-1);
		}
	}
	if ((v = json_object_get(spec, "cli")) != NULL || !partial) {
		/* The catalog's variable may depend on the host (gh). */
		if (cli_check_host(v, in->base_url != NULL ? in->host : NULL,
		    local, &in->cli, err, sizeof(err)) == -1) {
			resp_error(resp, 422, "%s%s%s", ctx, sep, err);
			return (-1);
		}
	}
	if (project_field(req, resp, spec, &in->project_sent,
	    &in->project_id) == -1)
		return (-1);
	return (tool_extras(resp, spec, ctx, partial, in));
}

/* health_check and examples: stored as given, within limits. */
static int
tool_extras(struct vault_resp *resp, json_t *spec, const char *ctx,
    int partial, struct tool_in *in)
{
	const char	*sep = *ctx ? ": " : "";
	json_t		*v;

	if ((v = json_object_get(spec, "health_check")) != NULL &&
	    !json_is_null(v)) {
		if (!json_is_object(v)) {
			resp_error(resp, 422, "%s%sfield 'health_check' must "
			    "be an object or null", ctx, sep);
			return (-1);
		}
		in->health_check = json_incref(v);
	} else if (v != NULL || !partial)
		in->health_check = json_null();
	if ((v = json_object_get(spec, "examples")) != NULL &&
	    !json_is_null(v)) {
		if (!json_is_array(v) || json_array_size(v) > EXAMPLES_MAX) {
			resp_error(resp, 422, "%s%sfield 'examples' must be a "
			    "list of at most %d examples", ctx, sep,
			    EXAMPLES_MAX);
			return (-1);
		}
		in->examples = json_incref(v);
	} else if (v != NULL || !partial)
		in->examples = json_array();
	return (0);
}

/*
 * 0 when org has no other tool (not except) of this name; -1 with resp
 * set: 409, or the database failed.
 */
static int
tool_name_taken(struct vault_resp *resp, int64_t org, const char *name,
    int64_t except)
{
	switch (store_tool_name_used(org, name, except)) {
	case 1:
		return (0);
	case 0:
		resp_refuse(resp, 409, PHRASE_NAME_TAKEN, name);
		return (-1);
	default:
		db_fail(resp, "tool");
		return (-1);
	}
}

/* The stored form of a checked tool; tool_item_free releases it. */
static void
tool_item(struct store_tool_item *t, const struct tool_in *in)
{
	memset(t, 0, sizeof(*t));
	t->name = in->name;
	t->base_url = in->base_url;
	t->host = in->host;
	t->bindings = reg_dumps(in->bindings);
	t->examples = reg_dumps(in->examples);
	if (in->cli != NULL)
		t->cli = reg_dumps(in->cli);
	if (json_is_object(in->health_check))
		t->health_check = reg_dumps(in->health_check);
}

static void
tool_item_free(struct store_tool_item *t)
{
	free((char *)t->bindings);
	free((char *)t->examples);
	free((char *)t->cli);
	free((char *)t->health_check);
	memset(t, 0, sizeof(*t));
}

static int
tool_secrets_sync(int64_t tool, json_t *ids)
{
	int64_t	 v[TOOL_SECRETS_MAX];
	json_t	*e;
	size_t	 i;

	if (json_array_size(ids) > TOOL_SECRETS_MAX)
		return (-1);
	json_array_foreach(ids, i, e)
		v[i] = json_integer_value(e);
	return (store_tool_secrets_set(tool, v, json_array_size(ids)));
}

/* Insert a fully checked tool; inside a transaction. */
static int
tool_insert(struct vault_req *req, struct vault_resp *resp,
    struct tool_in *in, int64_t bundle, int64_t *id)
{
	struct store_tool_item	 t;
	char			 now[32];
	int			 rc;

	now_iso(now, sizeof(now));
	tool_item(&t, in);
	t.org_id = req->auth->org_id;
	t.owner_id = req->auth->user_id;
	t.bundle_id = bundle;
	t.created_at = now;
	rc = store_tool_insert(&t, id);
	tool_item_free(&t);
	if (rc == STORE_TAKEN) {
		resp_refuse(resp, 409, PHRASE_NAME_TAKEN, in->name);
		return (-1);
	}
	if (rc != 0) {
		db_fail(resp, "tool");
		return (-1);
	}
	if (tool_secrets_sync(*id, in->secret_ids) == -1 ||
	    (in->project_id > 0 && store_tool_project_set(
	    req->auth->org_id, *id, in->project_id) != 0)) {
		db_fail(resp, "tool secrets");
		return (-1);
	}
	return (0);
}

int
tool_create(struct vault_req *req, struct vault_resp *resp, json_t *spec,
    const char *ctx, int64_t bundle, json_t *locals, int64_t *id)
{
	struct tool_in	 in;

	memset(&in, 0, sizeof(in));
	if (!json_is_object(spec)) {
		resp_error(resp, 422, "%s: a tool must be an object", ctx);
		goto fail;
	}
	if (tool_fields(req, resp, spec, ctx, 0, locals != NULL, &in) == -1 ||
	    tool_name_taken(resp, req->auth->org_id, in.name, 0) == -1 ||
	    tool_resolve(req, resp, &in, locals, 1, 1) == -1 ||
	    tool_insert(req, resp, &in, bundle, id) == -1)
		goto fail;
	tool_in_clear(&in);
	return (0);
 fail:
	store_rollback();
	tool_in_clear(&in);
	return (-1);
}

/* ------------------------------------------------------------------ */
/* The routes.                                                         */

static void
tools_create(struct vault_req *req, struct vault_resp *resp)
{
	json_t	*view;
	int64_t	 id;

	if (req->body == NULL) {
		resp_error(resp, 422, "field 'name' is required");
		return;
	}
	if (db_begin(resp) == -1)
		return;
	if (tool_create(req, resp, req->body, "", 0, NULL, &id) == -1)
		return;
	if (db_commit(resp) == -1)
		return;
	if ((view = reg_view(STORE_TOOL, req->auth->org_id, id)) == NULL) {
		db_fail(resp, "tool view");
		return;
	}
	log_info("tool %lld '%s' registered by %s", (long long)id,
	    json_string_value(json_object_get(view, "name")),
	    req->auth->email);
	tool_argv_warning(view, view);
	resp_ok(resp, view);
}

static int
tool_list_row(const struct store_tool_item *t, void *arg)
{
	struct tool_list	*l = arg;

	l->found = 1;
	if ((l->visible = tool_usable(l->a, t->name, t->bundle,
	    t->project_id)))
		json_array_append_new(l->list, reg_tool_json(t));
	return (0);
}

static int
tool_text_row(const struct store_tool_item *t, void *arg)
{
	struct tool_list	*l = arg;

	if (!tool_usable(l->a, t->name, t->bundle, t->project_id))
		return (0);
	evbuffer_add(l->text, l->found++ ? "," : "[", 1);
	reg_tool_text(l->text, t);
	return (0);
}

static void
tools_list(struct vault_req *req, struct vault_resp *resp)
{
	struct store_sel	 sel;
	struct tool_list	 l;
	char			*text;
	size_t			 len;

	memset(&sel, 0, sizeof(sel));
	memset(&l, 0, sizeof(l));
	sel.org = req->auth->org_id;
	l.a = req->auth;
	if ((l.text = evbuffer_new()) == NULL)
		fatal("%s: evbuffer_new", __func__);
	if (store_tools(&sel, tool_text_row, &l) == -1) {
		evbuffer_free(l.text);
		db_fail(resp, "tools");
		return;
	}
	evbuffer_add(l.text, l.found ? "]" : "[]", l.found ? 1 : 2);
	len = evbuffer_get_length(l.text);
	if ((text = malloc(len)) == NULL)
		fatal("%s: malloc", __func__);
	evbuffer_remove(l.text, text, len);
	evbuffer_free(l.text);
	resp_text(resp, text, len);
}

static void
tool_by_name(struct vault_req *req, struct vault_resp *resp)
{
	struct store_sel	 sel;
	struct tool_list	 l;
	int			 rc;

	memset(&sel, 0, sizeof(sel));
	memset(&l, 0, sizeof(l));
	sel.org = req->auth->org_id;
	sel.name = req->name;
	l.a = req->auth;
	if ((l.list = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	rc = store_tools(&sel, tool_list_row, &l);
	if (rc == -1)
		db_fail(resp, "tool");
	else if (!l.found)
		resp_error(resp, 404, "tool not found");
	else if (!l.visible)
		resp_error(resp, 403, PHRASE_NO_ACCESS, req->name);
	else
		resp_ok(resp, json_incref(json_array_get(l.list, 0)));
	json_decref(l.list);
}

static int
tool_old_row(const struct store_tool_item *t, void *arg)
{
	struct tool_old	*o = arg;

	o->found = 1;
	o->row.id = t->id;
	strlcpy(o->row.name, t->name, sizeof(o->row.name));
	o->row.owner_id = t->owner_id;
	tool_row_fill(&o->row, t->base_url, t->host, t->bindings, t->cli);
	o->row.bundle_id = t->bundle_id;
	strlcpy(o->row.bundle, t->bundle, sizeof(o->row.bundle));
	o->row.project_id = t->project_id;
	o->health_check = reg_json_text(t->health_check);
	o->examples = reg_json_text(t->examples);
	return (1);
}

/* Tool id of org as stored: 0, or -1 with resp set (the same 500). */
static int
tool_old_load(struct vault_resp *resp, int64_t org, int64_t id,
    struct tool_old *o)
{
	struct store_sel	 sel;

	memset(o, 0, sizeof(*o));
	memset(&sel, 0, sizeof(sel));
	sel.org = org;
	sel.id = id;
	if (store_tools(&sel, tool_old_row, o) == -1 || !o->found) {
		db_fail(resp, "tool");
		return (-1);
	}
	return (0);
}

static void
tool_old_clear(struct tool_old *o)
{
	tool_row_clear(&o->row);
	json_decref(o->health_check);
	json_decref(o->examples);
	memset(o, 0, sizeof(*o));
}

/* The fields a PATCH did not send keep their stored values. */
static void
tool_merge(struct tool_in *in, json_t *body, struct tool_old *o)
{
	if (in->name == NULL)
		in->name = o->row.name;
	if (in->base_url == NULL) {
		in->base_url = o->row.base_url;
		strlcpy(in->host, o->row.host, sizeof(in->host));
	}
	if (in->bindings == NULL)
		in->bindings = json_deep_copy(o->row.bindings);
	if (json_object_get(body, "cli") == NULL && o->row.cli != NULL)
		in->cli = json_deep_copy(o->row.cli);
	if (in->health_check == NULL)
		in->health_check = json_incref(o->health_check);
	if (in->examples == NULL)
		in->examples = json_incref(o->examples);
}

/* Write the merged tool and the secrets it uses, in a transaction. */
static int
tool_update(struct vault_resp *resp, int64_t org, int64_t id,
    struct tool_in *in)
{
	struct store_tool_item	 t;
	int			 rc;

	if (db_begin(resp) == -1)
		return (-1);
	tool_item(&t, in);
	t.id = id;
	t.org_id = org;
	rc = store_tool_update(&t);
	tool_item_free(&t);
	if (rc == STORE_TAKEN) {
		resp_refuse(resp, 409, PHRASE_NAME_TAKEN, in->name);
		return (-1);
	}
	if (rc == -1 || tool_secrets_sync(id, in->secret_ids) == -1 ||
	    (in->project_sent && store_tool_project_set(org, id,
	    in->project_id) != 0)) {
		db_fail(resp, "tool");
		return (-1);
	}
	return (db_commit(resp));
}

static void
tool_patch(struct vault_req *req, struct vault_resp *resp)
{
	struct store_ref	 ref;
	struct tool_in		 in;
	struct tool_old		 old;
	int64_t			 org = req->auth->org_id, id = req->id1;
	int			 own_b, own_c;
	json_t			*view;

	memset(&in, 0, sizeof(in));
	memset(&old, 0, sizeof(old));
	if (reg_ref(req, resp, STORE_TOOL, id, NULL, "change", &ref) == -1 ||
	    tool_old_load(resp, org, id, &old) == -1)
		goto done;
	if (req->body == NULL) {
		resp_error(resp, 422, "nothing to change");
		goto done;
	}
	compat_cli_bin(req->body, old.row.name);
	if (tool_fields(req, resp, req->body, "", 1, 0, &in) == -1)
		goto done;
	in.kept_ids = compat_tool_secret_ids(old.row.bindings, old.row.cli);
	own_b = in.bindings != NULL;
	own_c = json_object_get(req->body, "cli") != NULL;
	tool_merge(&in, req->body, &old);
	if ((strcmp(in.name, old.row.name) != 0 &&
	    tool_name_taken(resp, org, in.name, id) == -1) ||
	    tool_resolve(req, resp, &in, NULL, own_b, own_c) == -1 ||
	    tool_update(resp, org, id, &in) == -1)
		goto done;
	if ((view = reg_view(STORE_TOOL, org, id)) == NULL) {
		db_fail(resp, "tool view");
		goto done;
	}
	log_info("tool %lld changed by %s", (long long)id, req->auth->email);
	tool_argv_warning(view, view);
	resp_ok(resp, view);
 done:
	/* name and base_url may point into old: clear in first. */
	in.name = NULL;
	in.base_url = NULL;
	tool_in_clear(&in);
	tool_old_clear(&old);
}

static void
tool_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct store_ref	 ref;
	int64_t			 id = req->id1;

	if (reg_ref(req, resp, STORE_TOOL, id, NULL, "delete", &ref) == -1)
		return;
	if (store_tool_delete(req->auth->org_id, id) == -1) {
		db_fail(resp, "delete tool");
		return;
	}
	log_info("tool %lld '%s' deleted by %s", (long long)id, ref.name,
	    req->auth->email);
	resp_ok(resp, json_pack("{s:I}", "deleted", (json_int_t)id));
}

/* ------------------------------------------------------------------ */
/* tregctl.                                                            */

static int
ctl_tool_row(const struct store_tool_item *t, void *arg)
{
	json_t		*cli;
	const char	*bin;

	cli = reg_json_text(t->cli);
	bin = json_string_value(json_object_get(cli, "bin"));
	json_array_append_new(arg, json_pack("{s:s,s:I,s:s,s:s,s:s?,s:s?}",
	    "org", t->org_slug, "id", (json_int_t)t->id, "name", t->name,
	    "host", t->host, "bin", bin, "owner", t->owner_email));
	json_decref(cli);
	return (0);
}

int
ctl_show_tools(const struct ctl_request *cr, json_t **reply)
{
	json_t	*list;
	int64_t	 org;

	if ((list = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (store_tools_by_slug(cr->org, ctl_tool_row, list) == -1) {
		json_decref(list);
		*reply = ctl_errorf("database error: %s", store_error());
		return (-1);
	}
	if (cr->org[0] != '\0' && json_array_size(list) == 0 &&
	    store_org_by_slug(cr->org, &org) == 1) {
		json_decref(list);
		*reply = ctl_errorf("no org '%s'", cr->org);
		return (-1);
	}
	*reply = list;
	return (0);
}

int
ctl_key_rotate(const struct ctl_request *cr, json_t **reply)
{
	if (crypto_rotate("tregctl") == -1) {
		*reply = ctl_errorf("key rotation failed, the old key is still "
		    "in use (see the log)");
		return (-1);
	}
	*reply = json_pack("{s:s}", "key_id", keyring_current_hex());
	return (0);
}

/*
 * What registration warns of (SPEC 6, 6a): a profile whose run holds the
 * real key ("keyless": false), and, where the run holds it, a via: argv
 * secret, which is in /proc/PID/cmdline, readable by local users.  A
 * keyless run's argv holds a placeholder, worth nothing.
 */
void
tool_argv_warning(json_t *view, json_t *tool)
{
	json_t	*cli, *e;
	size_t	 i;
	int	 argv = 0;

	cli = json_object_get(tool, "cli");
	json_array_foreach(json_object_get(cli, "inject"), i, e)
		if (json_is_string(json_object_get(e, "via")) &&
		    strcmp(json_string_value(json_object_get(e, "via")),
		    "argv") == 0)
			argv = 1;
	if (json_is_false(json_object_get(cli, "keyless")))
		json_object_set_new(view, "warning", json_string(argv ?
		    "\"keyless\": false: the run's CLI holds the real key "
		    "(in its environment, files and /proc), and a secret "
		    "injected via argv is visible to every local user in "
		    "/proc/PID/cmdline while the CLI runs" :
		    "\"keyless\": false: the run's CLI holds the real key "
		    "(in its environment, files and /proc) and can send it "
		    "anywhere it reaches; keep it for non-HTTP uses"));
	else if (argv && json_is_false(json_object_get(cli, "network")))
		json_object_set_new(view, "warning", json_string(
		    "a secret injected via argv is visible to every "
		    "local user in /proc/PID/cmdline while the CLI "
		    "runs; prefer via env"));
}
