/*
 * vault_skill.c: the registry's skills (bundles, SPEC.md section 5): a
 * recipe, companion files, and the secrets and tools a skill push
 * creates together in one transaction.  Deleting a skill takes its
 * tools and secrets along (the schema's cascades), unless a tool outside
 * it uses one of its secrets (409).  A gated member sees the skills its
 * access list names or having at least one tool it may see.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vault_registry.h"

#define RECIPE_LEN_MAX		(256 * 1024)
#define SKILL_SECRETS_MAX	64
#define SKILL_TOOLS_MAX		64

/* A skill being pushed: its checked body and what it made so far. */
struct skill_in {
	const char	*name;
	const char	*recipe;
	json_t		*secrets;	/* the body's arrays, borrowed */
	json_t		*tools;
	json_t		*files;		/* sanitised, owned */
	json_t		*locals;	/* local_name -> secret id, owned */
	int64_t		 bundle;
	int		 tooshort;
};

/* A skill's view being built, or the visibility of one. */
struct skill_view {
	const struct auth	*a;	/* NULL: every tool (the creator) */
	json_t			*v;
	json_t			*list;
	char			 name[NAME_LEN_MAX + 1];
	int			 ok;
};

static int	 files_sanitise(struct vault_resp *, json_t *, json_t **);
static int	 skill_body(struct vault_req *, struct vault_resp *,
		    struct skill_in *);
static int	 skill_insert(struct vault_req *, struct vault_resp *,
		    struct skill_in *);
static int	 skill_names_free(struct vault_resp *, int64_t, json_t *);
static int	 skill_secret(struct vault_req *, struct vault_resp *,
		    struct skill_in *, size_t, json_t *);
static int	 skill_parts(struct vault_req *, struct vault_resp *,
		    struct skill_in *);
static void	 skill_in_clear(struct skill_in *);
static int	 bundle_tool_seen(const struct store_tool_item *, void *);
static int	 bundle_visible(const struct auth *, int64_t, int64_t,
		    const char *);
static int	 bundle_head(const struct store_bundle_item *, void *);
static int	 bundle_tool(const struct store_tool_item *, void *);
static int	 bundle_secret(const struct store_secret_item *, void *);
static json_t	*bundle_view(const struct auth *, int64_t, int64_t);
static int	 bundle_list_row(const struct store_bundle_item *, void *);
static void	 bundle_show(struct vault_req *, struct vault_resp *,
		    const char *);

/* ------------------------------------------------------------------ */
/* Pushing a skill.                                                    */

/*
 * The companion files to keep: an object of path -> text.  Too many or
 * too large is refused; a path that could escape the skill's directory,
 * replace its SKILL.md or land among secrets is dropped.
 */
static int
files_sanitise(struct vault_resp *resp, json_t *in, json_t **out)
{
	const char	*path;
	json_t		*v;

	*out = json_object();
	if (in == NULL || json_is_null(in))
		return (0);
	if (!json_is_object(in) || json_object_size(in) > SKILL_FILES_MAX) {
		resp_error(resp, 422, "field 'files' must be an object of at "
		    "most %d paths", SKILL_FILES_MAX);
		goto fail;
	}
	json_object_foreach(in, path, v) {
		if (!json_is_string(v) || json_string_length(v) >
		    SKILL_FILE_LEN_MAX) {
			resp_error(resp, 422, "files: each file must be text "
			    "of at most %d bytes", SKILL_FILE_LEN_MAX);
			goto fail;
		}
		if (!file_path_allowed(path) ||
		    strlen(json_string_value(v)) != json_string_length(v))
			continue;
		json_object_set(*out, path, v);
	}
	return (0);
 fail:
	json_decref(*out);
	*out = NULL;
	return (-1);
}

/* The body's name, recipe, lists and files: 0, or -1 with resp set. */
static int
skill_body(struct vault_req *req, struct vault_resp *resp,
    struct skill_in *in)
{
	json_t	*secrets, *tools;

	in->recipe = "";
	if (body_str(req, resp, "name", 1, NAME_LEN_MAX, &in->name) == -1 ||
	    body_str(req, resp, "recipe", 0, RECIPE_LEN_MAX, &in->recipe) ==
	    -1)
		return (-1);
	if (!valid_name(in->name)) {
		resp_error(resp, 422, "field 'name' must be 1 to %d bytes "
		    "without control characters", NAME_LEN_MAX);
		return (-1);
	}
	secrets = in->secrets = json_object_get(req->body, "secrets");
	tools = in->tools = json_object_get(req->body, "tools");
	if (secrets != NULL && !json_is_null(secrets) &&
	    (!json_is_array(secrets) ||
	    json_array_size(secrets) > SKILL_SECRETS_MAX)) {
		resp_error(resp, 422, "field 'secrets' must be a list of at "
		    "most %d secrets", SKILL_SECRETS_MAX);
		return (-1);
	}
	if (tools != NULL && !json_is_null(tools) && (!json_is_array(tools) ||
	    json_array_size(tools) > SKILL_TOOLS_MAX)) {
		resp_error(resp, 422, "field 'tools' must be a list of at most "
		    "%d tools", SKILL_TOOLS_MAX);
		return (-1);
	}
	return (files_sanitise(resp, json_object_get(req->body, "files"),
	    &in->files));
}

/* The bundle row first: its secrets and tools point at it. */
static int
skill_insert(struct vault_req *req, struct vault_resp *resp,
    struct skill_in *in)
{
	struct store_bundle_item b;
	char			 now[32];
	char			*files;
	int			 rc;

	now_iso(now, sizeof(now));
	files = reg_dumps(in->files);
	memset(&b, 0, sizeof(b));
	b.org_id = req->auth->org_id;
	b.name = in->name;
	b.owner_id = req->auth->user_id;
	b.recipe = in->recipe;
	b.files = files;
	b.created_at = now;
	rc = store_bundle_insert(&b, &in->bundle);
	free(files);
	if (rc == STORE_TAKEN) {
		resp_refuse(resp, 409, "skill name '%s' already exists in this "
		    "org", in->name);
		return (-1);
	}
	if (rc != 0) {
		db_fail(resp, "skill");
		return (-1);
	}
	return (0);
}

/* Any tool name already taken: 409 before anything else is judged. */
static int
skill_names_free(struct vault_resp *resp, int64_t org, json_t *tools)
{
	const char	*name;
	json_t		*e;
	size_t		 i;

	json_array_foreach(tools, i, e) {
		if ((name = json_string_value(json_object_get(e, "name"))) ==
		    NULL)
			continue;
		switch (store_tool_name_used(org, name, 0)) {
		case 1:
			break;
		case 0:
			resp_refuse(resp, 409, "tool name '%s' already exists "
			    "in this org", name);
			return (-1);
		default:
			db_fail(resp, "tool");
			return (-1);
		}
	}
	return (0);
}

/* Secret i of the skill, e: checked, inserted, its local name kept. */
static int
skill_secret(struct vault_req *req, struct vault_resp *resp,
    struct skill_in *in, size_t i, json_t *e)
{
	const char	*local, *kind = "env";
	char		 ctx[48], *pt;
	size_t		 ptlen;
	int64_t		 id;
	int		 rc;

	snprintf(ctx, sizeof(ctx), "secrets[%zu]", i);
	if (!json_is_object(e)) {
		resp_error(resp, 422, "%s must be an object", ctx);
		return (-1);
	}
	if (reg_spec_str(resp, e, ctx, "local_name", 1, NAME_LEN_MAX,
	    &local) == -1 || reg_spec_str(resp, e, ctx, "kind", 0, 32,
	    &kind) == -1)
		return (-1);
	if (!valid_name(local) || !secret_kind_valid(kind)) {
		resp_error(resp, 422, "%s: bad 'local_name' or 'kind' "
		    "(env, oauth, secret_file, param)", ctx);
		return (-1);
	}
	if (json_object_get(in->locals, local) != NULL) {
		resp_error(resp, 422, "%s: duplicate local_name '%s'", ctx,
		    local);
		return (-1);
	}
	if (secret_value(resp, json_object_get(e, "value"), kind, ctx, &pt,
	    &ptlen) == -1)
		return (-1);
	in->tooshort |= value_too_short(pt, ptlen);
	rc = secret_insert(resp, req->auth->org_id, req->auth->user_id, local,
	    kind, pt, ptlen, in->bundle, &id);
	secret_value_free(pt, ptlen);
	if (rc == -1)
		return (-1);
	json_object_set_new(in->locals, local, json_integer(id));
	return (0);
}

/* The skill's secrets, then its tools; rolled back on any refusal. */
static int
skill_parts(struct vault_req *req, struct vault_resp *resp,
    struct skill_in *in)
{
	char	 ctx[48];
	json_t	*e;
	size_t	 i;
	int64_t	 id;

	if (skill_names_free(resp, req->auth->org_id, in->tools) == -1)
		return (-1);
	json_array_foreach(in->secrets, i, e)
		if (skill_secret(req, resp, in, i, e) == -1) {
			store_rollback();
			return (-1);
		}
	json_array_foreach(in->tools, i, e) {
		snprintf(ctx, sizeof(ctx), "tools[%zu]", i);
		if (tool_create(req, resp, e, ctx, in->bundle, in->locals,
		    &id) == -1)
			return (-1);
	}
	return (0);
}

static void
skill_in_clear(struct skill_in *in)
{
	json_decref(in->files);
	json_decref(in->locals);
	memset(in, 0, sizeof(*in));
}

void
skills_create(struct vault_req *req, struct vault_resp *resp)
{
	struct skill_in	 in;
	json_t		*view, *e;
	size_t		 i;

	memset(&in, 0, sizeof(in));
	if (skill_body(req, resp, &in) == -1)
		goto done;
	if ((in.locals = json_object()) == NULL)
		fatal("%s: json_object", __func__);
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		goto done;
	}
	if (skill_insert(req, resp, &in) == -1 ||
	    skill_parts(req, resp, &in) == -1)
		goto done;
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		goto done;
	}
	/* The creator sees what it made, access list or not. */
	if ((view = bundle_view(NULL, req->auth->org_id, in.bundle)) == NULL) {
		db_fail(resp, "skill view");
		goto done;
	}
	if (in.tooshort)
		json_object_set_new(view, "warning",
		    json_string(PHRASE_TOO_SHORT));
	log_info("skill %lld '%s' registered by %s", (long long)in.bundle,
	    in.name, req->auth->email);
	json_array_foreach(json_object_get(view, "tools"), i, e)
		tool_argv_warning(view, e);
	resp_ok(resp, view);
 done:
	skill_in_clear(&in);
}

/* ------------------------------------------------------------------ */
/* Reading skills.                                                     */

static int
bundle_tool_seen(const struct store_tool_item *t, void *arg)
{
	struct skill_view	*sv = arg;

	sv->ok = access_allows(sv->a, t->name);
	return (sv->ok);
}

/*
 * A skill is visible to a gated caller when its list names the skill or
 * one of the skill's tools.
 */
static int
bundle_visible(const struct auth *a, int64_t org, int64_t bundle,
    const char *name)
{
	struct store_sel	 sel;
	struct skill_view	 sv;

	if (a == NULL || a->role == ROLE_OWNER || a->tool_access == NULL ||
	    !json_is_array(a->tool_access) || access_allows(a, name))
		return (1);
	memset(&sel, 0, sizeof(sel));
	memset(&sv, 0, sizeof(sv));
	sel.org = org;
	sel.bundle = bundle;
	sv.a = a;
	if (store_tools(&sel, bundle_tool_seen, &sv) == -1)
		return (0);
	return (sv.ok);
}

static int
bundle_head(const struct store_bundle_item *b, void *arg)
{
	struct skill_view	*sv = arg;

	strlcpy(sv->name, b->name, sizeof(sv->name));
	sv->v = json_pack("{s:I,s:s,s:s?,s:s,s:o}",
	    "id", (json_int_t)b->id,
	    "name", b->name,
	    "owner", b->owner_email,
	    "recipe", b->recipe,
	    "files", reg_json_text(b->files));
	if (sv->v == NULL)
		fatalx("%s: json_pack", __func__);
	return (1);
}

static int
bundle_tool(const struct store_tool_item *t, void *arg)
{
	struct skill_view	*sv = arg;

	if (sv->a == NULL || tool_usable(sv->a, t->name, sv->name,
	    t->project_id))
		json_array_append_new(sv->list, reg_tool_json(t));
	return (0);
}

static int
bundle_secret(const struct store_secret_item *s, void *arg)
{
	struct skill_view	*sv = arg;

	/* As in GET /secrets: a hidden tool's secret is hidden here too. */
	if (sv->a == NULL || secret_visible(sv->a, s->id, s->owner_id))
		json_array_append_new(sv->list, reg_secret_json(s));
	return (0);
}

/* The full view; a is NULL for "show every tool" (the creator). */
static json_t *
bundle_view(const struct auth *a, int64_t org, int64_t bundle)
{
	struct store_sel	 sel;
	struct skill_view	 sv;

	memset(&sel, 0, sizeof(sel));
	memset(&sv, 0, sizeof(sv));
	sel.org = org;
	sel.id = bundle;
	sv.a = a;
	if (store_bundles(&sel, bundle_head, &sv) == -1 || sv.v == NULL)
		goto fail;
	sel.id = 0;
	sel.bundle = bundle;
	sv.list = json_array();
	json_object_set_new(sv.v, "tools", sv.list);
	if (store_tools(&sel, bundle_tool, &sv) == -1)
		goto fail;
	sv.list = json_array();
	json_object_set_new(sv.v, "secrets", sv.list);
	if (store_secrets(&sel, bundle_secret, &sv) == -1)
		goto fail;
	return (sv.v);
 fail:
	json_decref(sv.v);
	return (NULL);
}

static int
bundle_list_row(const struct store_bundle_item *b, void *arg)
{
	struct skill_view	*sv = arg;

	if (bundle_visible(sv->a, b->org_id, b->id, b->name))
		json_array_append_new(sv->list, json_pack("{s:I,s:s,s:s?}",
		    "id", (json_int_t)b->id, "name", b->name,
		    "owner", b->owner_email));
	return (0);
}

void
bundles_list(struct vault_req *req, struct vault_resp *resp)
{
	struct store_sel	 sel;
	struct skill_view	 sv;

	memset(&sel, 0, sizeof(sel));
	memset(&sv, 0, sizeof(sv));
	sel.org = req->auth->org_id;
	sel.brief = 1;
	sv.a = req->auth;
	if ((sv.list = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (store_bundles(&sel, bundle_list_row, &sv) == -1) {
		json_decref(sv.list);
		db_fail(resp, "skills");
		return;
	}
	resp_ok(resp, sv.list);
}

static void
bundle_show(struct vault_req *req, struct vault_resp *resp,
    const char *byname)
{
	struct store_ref	 ref;
	json_t			*v;

	if (reg_ref(req, resp, STORE_BUNDLE, req->id1, byname, NULL,
	    &ref) == -1)
		return;
	if (!bundle_visible(req->auth, req->auth->org_id, ref.id, ref.name)) {
		resp_error(resp, 403, "you don't have access to the skill "
		    "'%s' in this team — ask an admin", ref.name);
		return;
	}
	if ((v = bundle_view(req->auth, req->auth->org_id, ref.id)) == NULL) {
		db_fail(resp, "skill view");
		return;
	}
	resp_ok(resp, v);
}

void
bundle_get(struct vault_req *req, struct vault_resp *resp)
{
	bundle_show(req, resp, NULL);
}

void
bundle_by_name(struct vault_req *req, struct vault_resp *resp)
{
	bundle_show(req, resp, req->name);
}

/* ------------------------------------------------------------------ */
/* Changing and deleting skills.                                       */

void
bundle_patch(struct vault_req *req, struct vault_resp *resp)
{
	struct store_ref	 ref;
	const char		*recipe;
	int64_t			 org = req->auth->org_id;
	json_t			*v;

	if (reg_ref(req, resp, STORE_BUNDLE, req->id1, NULL, "change",
	    &ref) == -1)
		return;
	if (body_str(req, resp, "recipe", 1, RECIPE_LEN_MAX, &recipe) == -1)
		return;
	if (store_bundle_set_recipe(org, ref.id, recipe) == -1) {
		db_fail(resp, "skill");
		return;
	}
	if ((v = bundle_view(req->auth, org, ref.id)) == NULL) {
		db_fail(resp, "skill view");
		return;
	}
	resp_ok(resp, v);
}

void
bundle_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct store_ref	 ref;
	char			 tool[NAME_LEN_MAX + 1];
	char			 secret[NAME_LEN_MAX + 1];
	int			 rc;

	if (reg_ref(req, resp, STORE_BUNDLE, req->id1, NULL, "delete",
	    &ref) == -1)
		return;
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	rc = store_bundle_outside_user(ref.id, tool, secret, sizeof(tool));
	if (rc == 0) {
		resp_refuse(resp, 409, "the skill's secret '%s' is referenced "
		    "by the tool '%s', outside the skill — remove it from that "
		    "tool first", secret, tool);
		return;
	}
	if (rc == -1) {
		db_fail(resp, "skill");
		return;
	}
	if (store_bundle_delete(req->auth->org_id, ref.id) == -1) {
		db_fail(resp, "delete skill");
		return;
	}
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		return;
	}
	log_info("skill %lld '%s' deleted by %s", (long long)ref.id, ref.name,
	    req->auth->email);
	resp_ok(resp, json_pack("{s:I}", "deleted", (json_int_t)ref.id));
}

const struct vault_route vault_skill_routes[] = {
	{ ROUTE_SKILLS_CREATE,	ROLE_MEMBER,	skills_create },
	{ ROUTE_BUNDLES_LIST,	ROLE_VIEWER,	bundles_list },
	{ ROUTE_BUNDLE_GET,	ROLE_VIEWER,	bundle_get },
	{ ROUTE_BUNDLE_BY_NAME,	ROLE_VIEWER,	bundle_by_name },
	{ ROUTE_BUNDLE_PATCH,	ROLE_MEMBER,	bundle_patch },
	{ ROUTE_BUNDLE_DELETE,	ROLE_MEMBER,	bundle_delete },
	{ ROUTE_NONE,		ROLE_NONE,	NULL }
};
