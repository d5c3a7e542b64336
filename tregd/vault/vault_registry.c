/*
 * vault_registry.c: what the registry's files (secrets, tools, skills)
 * share: finding an object of the caller's org and judging whether the
 * caller may edit it, the access lists' visibility rule, and the JSON
 * views of a secret and a tool.  Every lookup is scoped by the caller's
 * org, so another org's ids answer 404 like ids that never existed.
 */

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "vault_registry.h"

/* A string constant into the buffer, without its NUL. */
#define REG_PUT(b, lit)	evbuffer_add((b), (lit), sizeof(lit) - 1)

static const char *const reg_what[] = {
	[STORE_SECRET] = "secret",
	[STORE_TOOL] = "tool",
	[STORE_BUNDLE] = "skill"
};

static void	 reg_put_key(struct evbuffer *, const char *);
static void	 reg_put_str(struct evbuffer *, const char *, const char *);
static void	 reg_put_raw(struct evbuffer *, const char *, const char *);
static void	 reg_put_id(struct evbuffer *, const char *, int64_t);
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

json_t *
reg_json_text(const char *s)
{
	json_t	*v;

	if (s == NULL || *s == '\0' || (v = json_loads(s, JSON_DECODE_ANY,
	    NULL)) == NULL)
		return (json_null());
	return (v);
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

	v = json_pack("{s:I,s:s,s:s,s:s?,s:o}", "id", (json_int_t)s->id,
	    "name", s->name, "kind", s->kind, "owner", s->owner_email,
	    "bundle_id", s->bundle_id > 0 ? json_integer(s->bundle_id) :
	    json_null());
	if (v == NULL)
		fatalx("%s: json_pack", __func__);
	return (v);
}

/* ,"key": before the next member's value (every one but the first). */
static void
reg_put_key(struct evbuffer *b, const char *key)
{
	REG_PUT(b, ",\"");
	evbuffer_add(b, key, strlen(key));
	REG_PUT(b, "\":");
}

/* s as a JSON string, escaped exactly as json_dumps writes it; or null. */
static void
reg_put_str(struct evbuffer *b, const char *key, const char *s)
{
	const char	*p, *run = s, *e;
	char		 u[8];

	reg_put_key(b, key);
	if (s == NULL) {
		REG_PUT(b, "null");
		return;
	}
	REG_PUT(b, "\"");
	for (p = s; *p != '\0'; p++) {
		if ((unsigned char)*p >= 0x20 && *p != '"' && *p != '\\')
			continue;
		switch (*p) {
		case '"':
			e = "\\\"";
			break;
		case '\\':
			e = "\\\\";
			break;
		case '\b':
			e = "\\b";
			break;
		case '\f':
			e = "\\f";
			break;
		case '\n':
			e = "\\n";
			break;
		case '\r':
			e = "\\r";
			break;
		case '\t':
			e = "\\t";
			break;
		default:
			snprintf(u, sizeof(u), "\\u%04X", (unsigned char)*p);
			e = u;
			break;
		}
		evbuffer_add(b, run, p - run);
		evbuffer_add(b, e, strlen(e));
		run = p + 1;
	}
	evbuffer_add(b, run, p - run);
	REG_PUT(b, "\"");
}

/*
 * A JSON column as stored, or null.  Only reg_dumps writes them
 * (compact, canonical), so the stored text is what json_dumps of the
 * parsed value would give.
 */
static void
reg_put_raw(struct evbuffer *b, const char *key, const char *s)
{
	reg_put_key(b, key);
	if (s == NULL || *s == '\0')
		REG_PUT(b, "null");
	else
		evbuffer_add(b, s, strlen(s));
}

/* An id, or null for 0 (none). */
static void
reg_put_id(struct evbuffer *b, const char *key, int64_t id)
{
	reg_put_key(b, key);
	if (id > 0)
		evbuffer_add_printf(b, "%lld", (long long)id);
	else
		REG_PUT(b, "null");
}

/*
 * A tool as a client sees it, written as JSON text straight from its
 * row: GET /tools of a thousand tools is mostly this, and building and
 * dumping a tree for it cost twice as much as the request.
 */
void
reg_tool_text(struct evbuffer *b, const struct store_tool_item *t)
{
	json_t		*cli;
	const char	*bin;
	int		 runnable = 0;

	if (t->cli != NULL && (cli = json_loads(t->cli, 0, NULL)) != NULL) {
		bin = json_string_value(json_object_get(cli, "bin"));
		runnable = catalog_server_runnable(cli, conf_run_allowed(
		    &vault_conf, bin), conf_run_installed(&vault_conf, bin));
		json_decref(cli);
	}
	evbuffer_add_printf(b, "{\"id\":%lld", (long long)t->id);
	reg_put_str(b, "name", t->name);
	/* null: the owner is gone */
	reg_put_str(b, "owner", t->owner_email);
	reg_put_str(b, "base_url", t->base_url);
	reg_put_str(b, "host", t->host);
	reg_put_raw(b, "bindings", t->bindings);
	reg_put_raw(b, "cli", t->cli);
	evbuffer_add_printf(b, ",\"server_runnable\":%s",
	    runnable ? "true" : "false");
	reg_put_id(b, "bundle_id", t->bundle_id);
	/* treg's project_id: null for an org-wide tool. */
	reg_put_id(b, "project_id", t->project_id);
	reg_put_raw(b, "health_check", t->health_check);
	reg_put_raw(b, "examples", t->examples);
	REG_PUT(b, "}");
}

/* The same view as a tree, for answers that add to it. */
json_t *
reg_tool_json(const struct store_tool_item *t)
{
	struct evbuffer	*b;
	json_t		*v;

	if ((b = evbuffer_new()) == NULL)
		fatal("%s: evbuffer_new", __func__);
	reg_tool_text(b, t);
	v = json_loadb((const char *)evbuffer_pullup(b, -1),
	    evbuffer_get_length(b), 0, NULL);
	evbuffer_free(b);
	if (v == NULL) {
		log_warnx("tool %lld: a stored JSON column does not parse",
		    (long long)t->id);
		v = json_null();
	}
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

/* The stored texts of a tool into t; JSON that does not parse: none. */
void
tool_row_fill(struct tool_row *t, const char *base_url, const char *host,
    const char *bindings, const char *cli)
{
	strlcpy(t->base_url, base_url ? base_url : "", sizeof(t->base_url));
	strlcpy(t->host, host ? host : "", sizeof(t->host));
	t->bindings = bindings ? json_loads(bindings, 0, NULL) : NULL;
	if (!json_is_array(t->bindings)) {
		json_decref(t->bindings);
		t->bindings = json_array();
	}
	if (cli != NULL) {
		t->cli = json_loads(cli, 0, NULL);
		if (!json_is_object(t->cli)) {
			json_decref(t->cli);
			t->cli = NULL;
		}
	}
}

int
tool_load(int64_t org, const char *name, struct tool_row *t)
{
	struct store_tool	 st;
	int			 rc;

	memset(t, 0, sizeof(*t));
	if ((rc = store_tool_by_name(org, name, &st)) != 0)
		return (rc);
	t->id = st.id;
	strlcpy(t->name, st.name, sizeof(t->name));
	t->owner_id = st.owner_id;
	tool_row_fill(t, st.base_url, st.host, st.bindings, st.cli);
	t->bundle_id = st.bundle_id;
	strlcpy(t->bundle, st.bundle, sizeof(t->bundle));
	t->project_id = st.project_id;
	store_tool_clear(&st);
	return (0);
}

/*
 * A tool the request names, in the caller's org only: 0, or -1 with the
 * answer given (404 naming it, or the database's failure).
 */
int
tool_find(int64_t org, const char *name, struct tool_row *t,
    struct vault_resp *resp)
{
	switch (tool_load(org, name, t)) {
	case 0:
		return (0);
	case 1:
		resp_error(resp, 404, "no tool '%s' in this org", name);
		return (-1);
	default:
		db_fail(resp, "tool lookup");
		return (-1);
	}
}

void
tool_row_clear(struct tool_row *t)
{
	json_decref(t->bindings);
	json_decref(t->cli);
	memset(t, 0, sizeof(*t));
}

/*
 * SPEC.md 4, "Which secret an inject entry uses": an explicit secret_id;
 * else from_binding, a binding name (case-insensitive); else the one
 * secret the tool's bindings use.  Anything ambiguous resolves to
 * nothing, so a run fails loudly rather than inject the wrong key.
 */
int
inject_resolve(const struct tool_row *t, json_t *entry, int64_t *secret_id)
{
	json_t		*v, *b;
	const char	*from, *name;
	int64_t		 found = 0, id;
	size_t		 i;

	*secret_id = 0;
	if (json_is_integer(v = json_object_get(entry, "secret_id"))) {
		if (json_integer_value(v) <= 0)
			return (-1);
		*secret_id = json_integer_value(v);
		return (0);
	}
	from = json_string_value(json_object_get(entry, "from_binding"));
	json_array_foreach(t->bindings, i, b) {
		id = json_integer_value(json_object_get(b, "secret_id"));
		name = json_string_value(json_object_get(b, "name"));
		if (id <= 0)
			continue;
		if (from != NULL && (name == NULL || strcasecmp(name,
		    from) != 0))
			continue;
		if (found != 0 && found != id)
			return (-1);
		found = id;
	}
	if (found == 0)
		return (-1);
	*secret_id = found;
	return (0);
}
