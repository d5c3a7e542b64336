/*
 * vault_tool.c: the registry's objects.  Secrets, tools, skills (bundles)
 * and their tregctl commands (SPEC.md sections 3 to 5).
 *
 * A secret's value is write-only: it is sealed (vault_crypto.c) before
 * it reaches a row, and no response, log line or error text carries it;
 * every buffer that held it is zeroed.  Every query is scoped by the
 * caller's org, so another org's ids answer 404 like ids that never
 * existed.
 *
 * tool_secrets lists, per tool, every secret its bindings and inject
 * entries use; it is rewritten whenever a tool is, so deleting a secret
 * in use, or a bundle whose secrets an outside tool uses, answers 409.
 *
 * Access lists (a member's tool_access) hide a tool unless it or its
 * skill is named.  A gated member sees, in GET /secrets, the secrets it
 * owns and those used by a tool it may see; in GET /bundles, the skills
 * named in its list or having at least one tool it may see.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "compat.h"
#include "store_sqlite.h"
#include "vault.h"

#define RECIPE_LEN_MAX		(256 * 1024)
#define EXAMPLES_MAX		64
#define SKILL_SECRETS_MAX	64
#define SKILL_TOOLS_MAX		64

#define PHRASE_NO_ACCESS	"you don't have access to the tool '%s' in " \
				"this team — ask an admin"

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
};

static const char *const secret_kinds[] = {
	"env", "oauth", "secret_file", "param", NULL
};

static int	 can_edit(const struct auth *, int64_t);
static int	 row_found(struct vault_resp *, int, const char *);
static int	 row_editable(struct vault_req *, struct vault_resp *, int,
		    int64_t, const char *, const char *);
static int	 tool_visible(const struct auth *, const char *,
		    const char *);
static json_t	*json_text(const char *);
static json_t	*email_json(sqlite3_stmt *, int);
static char	*dumps(json_t *);
static int	 spec_str(struct vault_resp *, json_t *, const char *,
		    const char *, int, size_t, const char **);
static int	 kind_valid(const char *);
static int	 oauth_field_refused(struct vault_resp *, const char *,
		    json_t *, const char *);
static int	 inject_field_refused(struct vault_req *, struct vault_resp *,
		    json_t *, json_t *, const char *);
static int	 secret_value(struct vault_resp *, json_t *, const char *,
		    const char *, char **, size_t *);
static void	 value_free(char *, size_t);
static int	 secret_insert(struct vault_resp *, int64_t, int64_t,
		    const char *, const char *, const char *, size_t,
		    int64_t, int64_t *);
static int	 secret_store_value(struct vault_resp *, int64_t, int64_t,
		    const char *, size_t);
static json_t	*secret_view(int64_t, int64_t);
static json_t	*secret_view_row(sqlite3_stmt *);
static int	 secret_find(int64_t, int64_t, int64_t *, char *, size_t,
		    char *, size_t);
static int	 secret_visible(const struct auth *, int64_t, int64_t);
static int	 ids_add(json_t *, int64_t);
static int	 ref_resolve(struct vault_req *, struct vault_resp *, json_t *,
		    json_t *, int, const char *, const char *, json_t *,
		    json_t *);
static int	 tool_resolve(struct vault_req *, struct vault_resp *,
		    struct tool_in *, json_t *, int, int);
static void	 tool_in_clear(struct tool_in *);
static int	 tool_fields(struct vault_req *, struct vault_resp *,
		    json_t *, const char *, int, int, struct tool_in *);
static int	 tool_name_taken(int64_t, const char *, int64_t);
static int	 tool_insert(struct vault_req *, struct vault_resp *,
		    struct tool_in *, int64_t, int64_t *);
static int	 tool_secrets_sync(int64_t, json_t *);
static int	 tool_create(struct vault_req *, struct vault_resp *,
		    json_t *, const char *, int64_t, json_t *, int64_t *);
static json_t	*tool_view_row(sqlite3_stmt *);
static json_t	*tool_view(int64_t, int64_t);
static void	 argv_warning(json_t *, json_t *);
static int	 tool_find(int64_t, int64_t, int64_t *, char *, size_t,
		    char *, size_t);
static int	 files_sanitise(struct vault_resp *, json_t *, json_t **);
static int	 bundle_visible(const struct auth *, int64_t, const char *);
static json_t	*bundle_view(const struct auth *, int64_t, int64_t);
static int	 bundle_find(int64_t, int64_t, const char *, int64_t *,
		    int64_t *, char *, size_t);
static void	 bundle_show(struct vault_req *, struct vault_resp *,
		    const char *);

static int	 secret_bundle(struct vault_req *, struct vault_resp *,
		    int64_t *);
static void	 secrets_create(struct vault_req *, struct vault_resp *);
static void	 secrets_list(struct vault_req *, struct vault_resp *);
static void	 secret_patch(struct vault_req *, struct vault_resp *);
static void	 secret_delete(struct vault_req *, struct vault_resp *);
static void	 tools_create(struct vault_req *, struct vault_resp *);
static void	 tools_list(struct vault_req *, struct vault_resp *);
static void	 tool_by_name(struct vault_req *, struct vault_resp *);
static void	 tool_patch(struct vault_req *, struct vault_resp *);
static void	 tool_delete(struct vault_req *, struct vault_resp *);
static void	 skills_create(struct vault_req *, struct vault_resp *);
static void	 bundles_list(struct vault_req *, struct vault_resp *);
static void	 bundle_get(struct vault_req *, struct vault_resp *);
static void	 bundle_by_name(struct vault_req *, struct vault_resp *);
static void	 bundle_patch(struct vault_req *, struct vault_resp *);
static void	 bundle_delete(struct vault_req *, struct vault_resp *);

const struct vault_route vault_tool_routes[] = {
	{ ROUTE_SECRETS_CREATE,	ROLE_MEMBER,	secrets_create },
	{ ROUTE_SECRETS_LIST,	ROLE_VIEWER,	secrets_list },
	{ ROUTE_SECRET_PATCH,	ROLE_MEMBER,	secret_patch },
	{ ROUTE_SECRET_DELETE,	ROLE_MEMBER,	secret_delete },
	{ ROUTE_TOOLS_CREATE,	ROLE_MEMBER,	tools_create },
	{ ROUTE_TOOLS_LIST,	ROLE_VIEWER,	tools_list },
	{ ROUTE_TOOL_BY_NAME,	ROLE_VIEWER,	tool_by_name },
	{ ROUTE_TOOL_PATCH,	ROLE_MEMBER,	tool_patch },
	{ ROUTE_TOOL_DELETE,	ROLE_MEMBER,	tool_delete },
	{ ROUTE_SKILLS_CREATE,	ROLE_MEMBER,	skills_create },
	{ ROUTE_BUNDLES_LIST,	ROLE_VIEWER,	bundles_list },
	{ ROUTE_BUNDLE_GET,	ROLE_VIEWER,	bundle_get },
	{ ROUTE_BUNDLE_BY_NAME,	ROLE_VIEWER,	bundle_by_name },
	{ ROUTE_BUNDLE_PATCH,	ROLE_MEMBER,	bundle_patch },
	{ ROUTE_BUNDLE_DELETE,	ROLE_MEMBER,	bundle_delete },
	{ ROUTE_NONE,		ROLE_NONE,	NULL }
};

/* ------------------------------------------------------------------ */
/* Small helpers.                                                      */

/* Members edit what they created; admins and owners edit everything. */
static int
can_edit(const struct auth *a, int64_t owner_id)
{
	return (a->role >= ROLE_ADMIN || a->user_id == owner_id);
}

/*
 * The answer of a *_find (0 found, 1 not in the caller's org, -1 error)
 * as a response: "<what> not found" or a database failure.  0 to go on.
 */
static int
row_found(struct vault_resp *resp, int rc, const char *what)
{
	if (rc == 1) {
		resp_error(resp, 404, "%s not found", what);
		return (-1);
	}
	if (rc == -1) {
		db_fail(resp, what);
		return (-1);
	}
	return (0);
}

/*
 * row_found, then the caller must be allowed to edit the row: "you can
 * only <verb> <what>s you created".  0 to go on, -1 with resp set.
 */
static int
row_editable(struct vault_req *req, struct vault_resp *resp, int rc,
    int64_t owner, const char *what, const char *verb)
{
	if (row_found(resp, rc, what) == -1)
		return (-1);
	if (!can_edit(req->auth, owner)) {
		resp_error(resp, 403, "you can only %s %ss you created (or ask "
		    "an admin)", verb, what);
		return (-1);
	}
	return (0);
}

/* A tool is visible when its access list names it or its skill. */
static int
tool_visible(const struct auth *a, const char *tool, const char *bundle)
{
	return (access_allows(a, tool) ||
	    (bundle != NULL && *bundle != '\0' && access_allows(a, bundle)));
}

static json_t *
json_text(const char *s)
{
	json_t	*v;

	if (s == NULL || *s == '\0' || (v = json_loads(s, JSON_DECODE_ANY,
	    NULL)) == NULL)
		return (json_null());
	return (v);
}

static json_t *
email_json(sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return (json_null());
	return (json_string(db_text(st, col)));
}

static char *
dumps(json_t *v)
{
	char	*s;

	if ((s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
		fatalx("%s: json_dumps", __func__);
	return (s);
}

/* A string member of a nested object; ctx prefixes the error ("tools[1]"). */
static int
spec_str(struct vault_resp *resp, json_t *o, const char *ctx, const char *f,
    int required, size_t maxlen, const char **out)
{
	json_t	*v = json_object_get(o, f);

	if (v == NULL || (json_is_null(v) && !required)) {
		if (!required)
			return (0);
		resp_error(resp, 422, "%s%sfield '%s' is required", ctx,
		    *ctx ? ": " : "", f);
		return (-1);
	}
	if (!json_is_string(v)) {
		resp_error(resp, 422, "%s%sfield '%s' must be a string", ctx,
		    *ctx ? ": " : "", f);
		return (-1);
	}
	if (json_string_length(v) > maxlen) {
		resp_error(resp, 422, "%s%sfield '%s' is too long (at most "
		    "%zu bytes)", ctx, *ctx ? ": " : "", f, maxlen);
		return (-1);
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		resp_error(resp, 422, "%s%sfield '%s' contains a NUL byte",
		    ctx, *ctx ? ": " : "", f);
		return (-1);
	}
	*out = json_string_value(v);
	return (0);
}

/* ------------------------------------------------------------------ */
/* Secrets.                                                            */

static int
kind_valid(const char *kind)
{
	int	 i;

	for (i = 0; secret_kinds[i] != NULL; i++)
		if (strcmp(kind, secret_kinds[i]) == 0)
			return (1);
	return (0);
}

/*
 * The plaintext of a value member v for a secret of this kind, in a
 * fresh buffer the caller releases with value_free.  oauth and
 * secret_file values are JSON objects, given as an object or as a string
 * holding one.  No error text quotes the value.
 */
static int
secret_value(struct vault_resp *resp, json_t *v, const char *kind,
    const char *ctx, char **out, size_t *outlen)
{
	const char	*sep = *ctx ? ": " : "";
	int		 isjson;
	json_t		*parsed;
	char		*buf;
	size_t		 len;

	*out = NULL;
	*outlen = 0;
	isjson = strcmp(kind, "oauth") == 0 ||
	    strcmp(kind, "secret_file") == 0;
	if (v == NULL || json_is_null(v)) {
		resp_error(resp, 422, "%s%sfield 'value' is required", ctx,
		    sep);
		return (-1);
	}
	if (json_is_object(v) && isjson) {
		if (json_has_nul(v)) {
			resp_error(resp, 422, "%s%sfield 'value' contains a "
			    "NUL byte", ctx, sep);
			return (-1);
		}
		buf = dumps(v);
		len = strlen(buf);
	} else if (json_is_string(v)) {
		len = json_string_length(v);
		if (memchr(json_string_value(v), '\0', len) != NULL) {
			resp_error(resp, 422, "%s%sfield 'value' contains a "
			    "NUL byte", ctx, sep);
			return (-1);
		}
		if (isjson) {
			parsed = json_loadb(json_string_value(v), len, 0,
			    NULL);
			if (!json_is_object(parsed)) {
				json_decref(parsed);
				resp_error(resp, 422, "%s%sthe value of a "
				    "'%s' secret must be a JSON object", ctx,
				    sep, kind);
				return (-1);
			}
			json_decref(parsed);
		}
		if ((buf = malloc(len + 1)) == NULL)
			fatal("%s: malloc", __func__);
		memcpy(buf, json_string_value(v), len + 1);
	} else {
		resp_error(resp, 422, "%s%sfield 'value' must be a string%s",
		    ctx, sep, isjson ? " or a JSON object" : "");
		return (-1);
	}
	if (len == 0 || len > SECRET_LEN_MAX) {
		freezero(buf, len + 1);
		resp_error(resp, 422, "%s%sfield 'value' must be 1 to %d "
		    "bytes", ctx, sep, SECRET_LEN_MAX);
		return (-1);
	}
	*out = buf;
	*outlen = len;
	return (0);
}

static void
value_free(char *buf, size_t len)
{
	if (buf != NULL)
		freezero(buf, len + 1);
}

/*
 * Seal the value under (org, id) and store it.  The id is part of the
 * associated data, so the row must exist before its value is sealed.
 */
static int
secret_store_value(struct vault_resp *resp, int64_t org, int64_t id,
    const char *pt, size_t ptlen)
{
	sqlite3_stmt	*st;
	void		*sealed;
	size_t		 slen;
	int		 rc;

	if (secret_seal(org, id, pt, ptlen, &sealed, &slen) == -1) {
		log_warnx("%s: cannot seal secret %lld", __func__,
		    (long long)id);
		store_rollback();
		resp_error(resp, 500, "internal error: cannot seal the value");
		return (-1);
	}
	if ((st = db_prepare("UPDATE secrets SET sealed = ?, "
	    "status = 'unknown', status_detail = NULL, checked_at = NULL "
	    "WHERE id = ? AND org_id = ?")) == NULL) {
		free(sealed);
		db_fail(resp, "secret");
		return (-1);
	}
	sqlite3_bind_blob(st, 1, sealed, slen, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, id);
	sqlite3_bind_int64(st, 3, org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	free(sealed);
	if (rc != SQLITE_DONE) {
		db_fail(resp, "secret");
		return (-1);
	}
	return (0);
}

/* Insert a secret row and seal its value into it; inside a transaction. */
static int
secret_insert(struct vault_resp *resp, int64_t org, int64_t owner,
    const char *name, const char *kind, const char *pt, size_t ptlen,
    int64_t bundle, int64_t *id)
{
	sqlite3_stmt	*st;
	char		 now[32];
	int		 rc;

	now_iso(now, sizeof(now));
	if ((st = db_prepare("INSERT INTO secrets (org_id, name, kind, "
	    "owner_id, bundle_id, sealed, created_at) VALUES (?, ?, ?, ?, ?, "
	    "x'', ?)")) == NULL) {
		db_fail(resp, "secret");
		return (-1);
	}
	sqlite3_bind_int64(st, 1, org);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, owner);
	if (bundle > 0)
		sqlite3_bind_int64(st, 5, bundle);
	else
		sqlite3_bind_null(st, 5);
	sqlite3_bind_text(st, 6, now, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		db_fail(resp, "secret");
		return (-1);
	}
	*id = sqlite3_last_insert_rowid(vault_db);
	return (secret_store_value(resp, org, *id, pt, ptlen));
}

static json_t *
secret_view_row(sqlite3_stmt *st)
{
	json_t	*v;

	v = json_pack("{s:I,s:s,s:s,s:o,s:o}",
	    "id", (json_int_t)sqlite3_column_int64(st, 0),
	    "name", db_text(st, 1),
	    "kind", db_text(st, 2),
	    "owner", email_json(st, 3),
	    "bundle_id", sqlite3_column_type(st, 4) == SQLITE_NULL ?
	    json_null() : json_integer(sqlite3_column_int64(st, 4)));
	if (v == NULL)
		fatalx("%s: json_pack", __func__);
	return (v);
}

/* The view of secret id in org, NULL if there is none. */
static json_t *
secret_view(int64_t org, int64_t id)
{
	sqlite3_stmt	*st;
	json_t		*v = NULL;

	if ((st = db_prepare("SELECT s.id, s.name, s.kind, u.email, "
	    "s.bundle_id FROM secrets s LEFT JOIN users u ON u.id = s.owner_id "
	    "WHERE s.id = ? AND s.org_id = ?")) == NULL)
		return (NULL);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, org);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = secret_view_row(st);
	sqlite3_reset(st);
	return (v);
}

/*
 * 0 and the secret's owner, name and kind (each buffer may be NULL) when
 * secret id is in org, 1 when not, -1 on error.
 */
static int
secret_find(int64_t org, int64_t id, int64_t *owner, char *name,
    size_t namelen, char *kind, size_t kindlen)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT owner_id, name, kind FROM secrets WHERE "
	    "id = ? AND org_id = ?")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, org);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*owner = sqlite3_column_int64(st, 0);
		if (name != NULL)
			strlcpy(name, db_text(st, 1), namelen);
		if (kind != NULL)
			strlcpy(kind, db_text(st, 2), kindlen);
	}
	sqlite3_reset(st);
	return (rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : -1);
}

/*
 * For a gated caller: its own secrets, and those a visible tool uses or
 * whose skill is visible.
 */
static int
secret_visible(const struct auth *a, int64_t id, int64_t owner)
{
	sqlite3_stmt	*st;
	int		 ok = 0;

	if (a->role == ROLE_OWNER || a->tool_access == NULL ||
	    !json_is_array(a->tool_access) || owner == a->user_id)
		return (1);
	if ((st = db_prepare("SELECT t.name, b.name FROM tool_secrets ts "
	    "JOIN tools t ON t.id = ts.tool_id LEFT JOIN bundles b ON "
	    "b.id = t.bundle_id WHERE ts.secret_id = ?1 UNION ALL "
	    "SELECT NULL, b.name FROM secrets s JOIN bundles b ON "
	    "b.id = s.bundle_id WHERE s.id = ?1")) == NULL)
		return (0);
	sqlite3_bind_int64(st, 1, id);
	while (!ok && sqlite3_step(st) == SQLITE_ROW) {
		if (sqlite3_column_type(st, 0) != SQLITE_NULL &&
		    tool_visible(a, db_text(st, 0), db_text(st, 1)))
			ok = 1;
		else if (sqlite3_column_type(st, 0) == SQLITE_NULL &&
		    access_allows(a, db_text(st, 1)))
			ok = 1;
	}
	sqlite3_reset(st);
	return (ok);
}

/*
 * treg compatibility: POST /secrets may tie the secret to a skill of the
 * org by bundle_id (0: none); an unknown or another org's is 422.
 */
static int
secret_bundle(struct vault_req *req, struct vault_resp *resp, int64_t *bundle)
{
	json_t	*v;
	char	 name[NAME_LEN_MAX + 1];
	int64_t	 id, owner;
	int	 rc;

	*bundle = 0;
	if ((v = json_object_get(req->body, "bundle_id")) == NULL ||
	    json_is_null(v))
		return (0);
	if (body_int(req, resp, "bundle_id", 1, 1, INT64_MAX, &id) == -1)
		return (-1);
	if ((rc = bundle_find(req->auth->org_id, id, NULL, bundle, &owner,
	    name, sizeof(name))) == -1) {
		db_fail(resp, "bundle lookup");
		return (-1);
	}
	if (rc == 1) {
		resp_error(resp, 422, "field 'bundle_id' names no skill of this "
		    "org (%lld)", (long long)id);
		return (-1);
	}
	if (!can_edit(req->auth, owner)) {
		*bundle = 0;
		resp_error(resp, 403, "you can only add secrets to skills you "
		    "created");
		return (-1);
	}
	return (0);
}

static void
secrets_create(struct vault_req *req, struct vault_resp *resp)
{
	const char	*name, *kind = "env";
	char		*pt = NULL;
	size_t		 ptlen = 0;
	int64_t		 id, bundle;
	json_t		*view;
	int		 tooshort;

	if (body_str(req, resp, "name", 1, NAME_LEN_MAX, &name) == -1 ||
	    body_str(req, resp, "kind", 0, 32, &kind) == -1 ||
	    secret_bundle(req, resp, &bundle) == -1)
		return;
	if (!valid_name(name)) {
		resp_error(resp, 422, "field 'name' must be 1 to %d bytes "
		    "without control characters", NAME_LEN_MAX);
		return;
	}
	if (!kind_valid(kind)) {
		resp_error(resp, 422, "field 'kind' must be one of env, oauth, "
		    "secret_file, param");
		return;
	}
	if (secret_value(resp, json_object_get(req->body, "value"), kind, "",
	    &pt, &ptlen) == -1)
		return;
	tooshort = value_too_short(pt, ptlen);
	if (store_begin() == -1) {
		value_free(pt, ptlen);
		db_fail(resp, "begin");
		return;
	}
	if (secret_insert(resp, req->auth->org_id, req->auth->user_id, name,
	    kind, pt, ptlen, bundle, &id) == -1) {
		value_free(pt, ptlen);
		return;
	}
	value_free(pt, ptlen);
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		return;
	}
	if ((view = secret_view(req->auth->org_id, id)) == NULL) {
		db_fail(resp, "secret view");
		return;
	}
	if (tooshort)
		json_object_set_new(view, "warning",
		    json_string("too short to be masked reliably"));
	log_info("secret %lld created in org %lld by %s", (long long)id,
	    (long long)req->auth->org_id, req->auth->email);
	resp_ok(resp, view);
}

static void
secrets_list(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	json_t		*list;
	int		 rc;

	if ((st = db_prepare("SELECT s.id, s.name, s.kind, u.email, "
	    "s.bundle_id, s.owner_id FROM secrets s LEFT JOIN users u ON "
	    "u.id = s.owner_id WHERE s.org_id = ? ORDER BY s.id")) == NULL) {
		db_fail(resp, "secrets");
		return;
	}
	list = json_array();
	sqlite3_bind_int64(st, 1, req->auth->org_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (secret_visible(req->auth, sqlite3_column_int64(st, 0),
		    sqlite3_column_int64(st, 5)))
			json_array_append_new(list, secret_view_row(st));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(list);
		db_fail(resp, "secrets");
		return;
	}
	resp_ok(resp, list);
}

static void
secret_patch(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	const char	*name = NULL, *kind = NULL;
	char		 oldkind[32], *pt = NULL;
	unsigned char	*old;
	size_t		 ptlen = 0, oldlen;
	json_t		*v, *parsed, *view;
	int64_t		 owner = 0, org = req->auth->org_id, id = req->id1;
	int		 rc, json_kind, tooshort = 0;

	rc = secret_find(org, id, &owner, NULL, 0, oldkind, sizeof(oldkind));
	if (row_editable(req, resp, rc, owner, "secret", "change") == -1)
		return;
	if (body_str(req, resp, "name", 0, NAME_LEN_MAX, &name) == -1 ||
	    body_str(req, resp, "kind", 0, 32, &kind) == -1)
		return;
	if (name != NULL && !valid_name(name)) {
		resp_error(resp, 422, "field 'name' must be 1 to %d bytes "
		    "without control characters", NAME_LEN_MAX);
		return;
	}
	if (kind != NULL && !kind_valid(kind)) {
		resp_error(resp, 422, "field 'kind' must be one of env, oauth, "
		    "secret_file, param");
		return;
	}
	if (kind == NULL)
		kind = oldkind;
	json_kind = strcmp(kind, "oauth") == 0 ||
	    strcmp(kind, "secret_file") == 0;
	v = req->body ? json_object_get(req->body, "value") : NULL;
	if (v != NULL) {
		if (secret_value(resp, v, kind, "", &pt, &ptlen) == -1)
			return;
		tooshort = value_too_short(pt, ptlen);
	} else if (json_kind && strcmp(kind, oldkind) != 0) {
		/* A kind that needs JSON: the stored value must be JSON. */
		if ((st = db_prepare("SELECT sealed FROM secrets WHERE id = ? "
		    "AND org_id = ?")) == NULL) {
			db_fail(resp, "secret");
			return;
		}
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, org);
		rc = -1;
		if (sqlite3_step(st) == SQLITE_ROW)
			rc = secret_unseal(org, id, sqlite3_column_blob(st, 0),
			    sqlite3_column_bytes(st, 0), &old, &oldlen);
		sqlite3_reset(st);
		if (rc == -1) {
			log_warnx("secret %lld does not open", (long long)id);
			resp_error(resp, 500, "internal error: the stored "
			    "value does not open");
			return;
		}
		parsed = json_loadb((const char *)old, oldlen, 0, NULL);
		secret_free(old, oldlen);
		rc = json_is_object(parsed);
		json_decref(parsed);
		if (!rc) {
			resp_error(resp, 422, "the value of a '%s' secret must "
			    "be a JSON object: send a new value with the "
			    "kind", kind);
			return;
		}
	}

	if (store_begin() == -1) {
		value_free(pt, ptlen);
		db_fail(resp, "begin");
		return;
	}
	if ((st = db_prepare("UPDATE secrets SET name = coalesce(?, name), "
	    "kind = ? WHERE id = ? AND org_id = ?")) == NULL) {
		value_free(pt, ptlen);
		db_fail(resp, "secret");
		return;
	}
	if (name != NULL)
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, id);
	sqlite3_bind_int64(st, 4, org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		value_free(pt, ptlen);
		db_fail(resp, "secret");
		return;
	}
	if (pt != NULL && secret_store_value(resp, org, id, pt, ptlen) == -1) {
		value_free(pt, ptlen);
		return;
	}
	value_free(pt, ptlen);
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		return;
	}
	if ((view = secret_view(org, id)) == NULL) {
		db_fail(resp, "secret view");
		return;
	}
	if (tooshort)
		json_object_set_new(view, "warning",
		    json_string("too short to be masked reliably"));
	log_info("secret %lld changed by %s", (long long)id, req->auth->email);
	resp_ok(resp, view);
}

static void
secret_delete(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	char		 name[NAME_LEN_MAX + 1], tool[NAME_LEN_MAX + 1];
	int64_t		 owner = 0, org = req->auth->org_id, id = req->id1;
	int		 rc;

	rc = secret_find(org, id, &owner, name, sizeof(name), NULL, 0);
	if (row_editable(req, resp, rc, owner, "secret", "delete") == -1)
		return;
	if ((st = db_prepare("SELECT t.name FROM tool_secrets ts JOIN tools t "
	    "ON t.id = ts.tool_id WHERE ts.secret_id = ? ORDER BY t.name "
	    "LIMIT 1")) == NULL) {
		db_fail(resp, "secret");
		return;
	}
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		strlcpy(tool, db_text(st, 0), sizeof(tool));
	sqlite3_reset(st);
	if (rc == SQLITE_ROW) {
		resp_error(resp, 409, "secret '%s' is in use by the tool '%s' "
		    "(referenced by its bindings or CLI profile) — remove it "
		    "from there first", name, tool);
		return;
	}
	if (rc != SQLITE_DONE) {
		db_fail(resp, "secret");
		return;
	}
	if ((st = db_prepare("DELETE FROM secrets WHERE id = ? AND "
	    "org_id = ?")) == NULL) {
		db_fail(resp, "secret");
		return;
	}
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		db_fail(resp, "delete secret");
		return;
	}
	log_info("secret %lld deleted by %s", (long long)id, req->auth->email);
	resp_ok(resp, json_pack("{s:I}", "deleted", (json_int_t)id));
}

/* ------------------------------------------------------------------ */
/* Tools.                                                              */

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
	json_t	*v;
	size_t	 i;

	json_array_foreach(ids, i, v)
		if (json_integer_value(v) == id)
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
	json_t		*local, *idv, *n, *v;
	const char	*key;
	char		 kind[32];
	int64_t		 id, owner;
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
	rc = secret_find(req->auth->org_id, id, &owner, NULL, 0, kind,
	    sizeof(kind));
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
	    !can_edit(req->auth, owner)) {
		resp_error(resp, 403, "%s: you can only %s secrets you own "
		    "(secret %lld belongs to a teammate)", ctx, verb,
		    (long long)id);
		return (-1);
	}
	if (oauth_field_refused(resp, kind, e, ctx))
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
	    "may be injected or granted, not '%s'", ctx, field);
	return (1);
}

/* An inject entry without a secret_id: the oauth rule on its binding's. */
static int
inject_field_refused(struct vault_req *req, struct vault_resp *resp,
    json_t *bindings, json_t *e, const char *ctx)
{
	json_t		*b, *use = NULL;
	const char	*from;
	char		 kind[32];
	int64_t		 owner;
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
	if (use == NULL || secret_find(req->auth->org_id, json_integer_value(
	    json_object_get(use, "secret_id")), &owner, NULL, 0, kind,
	    sizeof(kind)) != 0)
		return (0);
	return (oauth_field_refused(resp, kind, e, ctx));
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
		return (0);
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
	return (0);
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
	if (spec_str(resp, spec, ctx, "name", !partial, NAME_LEN_MAX,
	    &in->name) == -1)
		return (-1);
	if (in->name != NULL && !valid_name(in->name)) {
		resp_error(resp, 422, "%s%sfield 'name' must be 1 to %d bytes "
		    "without control characters", ctx, sep, NAME_LEN_MAX);
		return (-1);
	}
	if (spec_str(resp, spec, ctx, "base_url", !partial, URL_LEN_MAX,
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
		if (cli_check(v, local, &in->cli, err, sizeof(err)) == -1) {
			resp_error(resp, 422, "%s%s%s", ctx, sep, err);
			return (-1);
		}
	}
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

/* 1 when org has another tool (not except) of this name, -1 on error. */
static int
tool_name_taken(int64_t org, const char *name, int64_t except)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT 1 FROM tools WHERE org_id = ? AND "
	    "name = ? AND id != ?")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, org);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, except);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return (rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1);
}

static int
tool_secrets_sync(int64_t tool, json_t *ids)
{
	sqlite3_stmt	*st;
	json_t		*v;
	size_t		 i;
	int		 rc;

	if ((st = db_prepare("DELETE FROM tool_secrets WHERE tool_id = ?")) ==
	    NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, tool);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return (-1);
	if ((st = db_prepare("INSERT INTO tool_secrets (tool_id, secret_id) "
	    "VALUES (?, ?)")) == NULL)
		return (-1);
	json_array_foreach(ids, i, v) {
		sqlite3_bind_int64(st, 1, tool);
		sqlite3_bind_int64(st, 2, json_integer_value(v));
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			return (-1);
	}
	return (0);
}

/* Insert a fully checked tool; inside a transaction. */
static int
tool_insert(struct vault_req *req, struct vault_resp *resp,
    struct tool_in *in, int64_t bundle, int64_t *id)
{
	sqlite3_stmt	*st;
	char		*bindings, *cli = NULL, *hc = NULL, *examples, now[32];
	int		 rc;

	if ((st = db_prepare("INSERT INTO tools (org_id, name, owner_id, "
	    "base_url, host, bindings, cli, health_check, examples, "
	    "bundle_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
	    "?)")) == NULL) {
		db_fail(resp, "tool");
		return (-1);
	}
	now_iso(now, sizeof(now));
	bindings = dumps(in->bindings);
	examples = dumps(in->examples);
	if (in->cli != NULL)
		cli = dumps(in->cli);
	if (in->health_check != NULL && !json_is_null(in->health_check))
		hc = dumps(in->health_check);
	sqlite3_bind_int64(st, 1, req->auth->org_id);
	sqlite3_bind_text(st, 2, in->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, req->auth->user_id);
	sqlite3_bind_text(st, 4, in->base_url, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, in->host, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, bindings, -1, SQLITE_STATIC);
	if (cli != NULL)
		sqlite3_bind_text(st, 7, cli, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 7);
	if (hc != NULL)
		sqlite3_bind_text(st, 8, hc, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 8);
	sqlite3_bind_text(st, 9, examples, -1, SQLITE_STATIC);
	if (bundle > 0)
		sqlite3_bind_int64(st, 10, bundle);
	else
		sqlite3_bind_null(st, 10);
	sqlite3_bind_text(st, 11, now, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	free(bindings);
	free(examples);
	free(cli);
	free(hc);
	if (rc == SQLITE_CONSTRAINT) {
		store_rollback();
		resp_error(resp, 409, "tool name '%s' already exists in this "
		    "org", in->name);
		return (-1);
	}
	if (rc != SQLITE_DONE) {
		db_fail(resp, "tool");
		return (-1);
	}
	*id = sqlite3_last_insert_rowid(vault_db);
	if (tool_secrets_sync(*id, in->secret_ids) == -1) {
		db_fail(resp, "tool secrets");
		return (-1);
	}
	return (0);
}

/*
 * Check and insert one tool from spec; inside the caller's transaction
 * (which it rolls back on any refusal).  locals maps a skill's local
 * secret names to ids (NULL outside skills).
 */
static int
tool_create(struct vault_req *req, struct vault_resp *resp, json_t *spec,
    const char *ctx, int64_t bundle, json_t *locals, int64_t *id)
{
	struct tool_in	 in;
	int		 rc;

	memset(&in, 0, sizeof(in));
	if (!json_is_object(spec)) {
		resp_error(resp, 422, "%s: a tool must be an object", ctx);
		goto fail;
	}
	if (tool_fields(req, resp, spec, ctx, 0, locals != NULL, &in) == -1)
		goto fail;
	if ((rc = tool_name_taken(req->auth->org_id, in.name, 0)) != 0) {
		if (rc == -1)
			db_fail(resp, "tool");
		else
			resp_error(resp, 409, "tool name '%s' already exists "
			    "in this org", in.name);
		goto fail;
	}
	if (tool_resolve(req, resp, &in, locals, 1, 1) == -1 ||
	    tool_insert(req, resp, &in, bundle, id) == -1)
		goto fail;
	tool_in_clear(&in);
	return (0);
 fail:
	store_rollback();
	tool_in_clear(&in);
	return (-1);
}

#define TOOL_COLS	"SELECT t.id, t.name, u.email, t.base_url, t.host, " \
			"t.bindings, t.cli, t.bundle_id, t.health_check, " \
			"t.examples, b.name, t.owner_id FROM tools t " \
			"LEFT JOIN users u ON u.id = t.owner_id " \
			"LEFT JOIN bundles b ON b.id = t.bundle_id "

static json_t *
tool_view_row(sqlite3_stmt *st)
{
	json_t	*v, *cli;

	cli = json_text((const char *)sqlite3_column_text(st, 6));
	v = json_pack("{s:I,s:s,s:o,s:s,s:s,s:o,s:o,s:b,s:o,s:o,s:o}",
	    "id", (json_int_t)sqlite3_column_int64(st, 0),
	    "name", db_text(st, 1),
	    "owner", email_json(st, 2),
	    "base_url", db_text(st, 3),
	    "host", db_text(st, 4),
	    "bindings", json_text(db_text(st, 5)),
	    "cli", cli,
	    "server_runnable", catalog_server_runnable(cli,
	    conf_run_allowed(&vault_conf, json_string_value(
	    json_object_get(cli, "bin")))),
	    "bundle_id", sqlite3_column_type(st, 7) == SQLITE_NULL ?
	    json_null() : json_integer(sqlite3_column_int64(st, 7)),
	    "health_check", json_text((const char *)sqlite3_column_text(st,
	    8)),
	    "examples", json_text(db_text(st, 9)));
	if (v == NULL)
		fatalx("%s: json_pack", __func__);
	return (v);
}

static json_t *
tool_view(int64_t org, int64_t id)
{
	sqlite3_stmt	*st;
	json_t		*v = NULL;

	if ((st = db_prepare(TOOL_COLS "WHERE t.id = ? AND t.org_id = ?")) ==
	    NULL)
		return (NULL);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, org);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = tool_view_row(st);
	sqlite3_reset(st);
	return (v);
}

/* 0 and the tool's owner, name and skill name; 1 not in org; -1 error. */
static int
tool_find(int64_t org, int64_t id, int64_t *owner, char *name,
    size_t namelen, char *bundle, size_t bundlelen)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT t.owner_id, t.name, b.name FROM tools t "
	    "LEFT JOIN bundles b ON b.id = t.bundle_id WHERE t.id = ? AND "
	    "t.org_id = ?")) == NULL)
		return (-1);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, org);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*owner = sqlite3_column_int64(st, 0);
		strlcpy(name, db_text(st, 1), namelen);
		strlcpy(bundle, db_text(st, 2), bundlelen);
	}
	sqlite3_reset(st);
	return (rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : -1);
}

static void
tools_create(struct vault_req *req, struct vault_resp *resp)
{
	json_t	*view;
	int64_t	 id;

	if (req->body == NULL) {
		resp_error(resp, 422, "field 'name' is required");
		return;
	}
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	if (tool_create(req, resp, req->body, "", 0, NULL, &id) == -1)
		return;
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		return;
	}
	if ((view = tool_view(req->auth->org_id, id)) == NULL) {
		db_fail(resp, "tool view");
		return;
	}
	log_info("tool %lld '%s' registered by %s", (long long)id,
	    json_string_value(json_object_get(view, "name")),
	    req->auth->email);
	argv_warning(view, view);
	resp_ok(resp, view);
}

static void
tools_list(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	json_t		*list;
	int		 rc;

	if ((st = db_prepare(TOOL_COLS "WHERE t.org_id = ? ORDER BY t.id")) ==
	    NULL) {
		db_fail(resp, "tools");
		return;
	}
	list = json_array();
	sqlite3_bind_int64(st, 1, req->auth->org_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (tool_visible(req->auth, db_text(st, 1), db_text(st, 10)))
			json_array_append_new(list, tool_view_row(st));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(list);
		db_fail(resp, "tools");
		return;
	}
	resp_ok(resp, list);
}

static void
tool_by_name(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	json_t		*v = NULL;
	int		 rc, visible = 0;

	if ((st = db_prepare(TOOL_COLS "WHERE t.org_id = ? AND t.name = ?")) ==
	    NULL) {
		db_fail(resp, "tool");
		return;
	}
	sqlite3_bind_int64(st, 1, req->auth->org_id);
	sqlite3_bind_text(st, 2, req->name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW &&
	    (visible = tool_visible(req->auth, db_text(st, 1),
	    db_text(st, 10))))
		v = tool_view_row(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		resp_error(resp, 404, "tool not found");
	else if (rc != SQLITE_ROW)
		db_fail(resp, "tool");
	else if (!visible)
		resp_error(resp, 403, PHRASE_NO_ACCESS, req->name);
	else
		resp_ok(resp, v);
}

static void
tool_patch(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	struct tool_in	 in;
	struct tool_row	 old;
	char		 name[NAME_LEN_MAX + 1], bundle[NAME_LEN_MAX + 1];
	char		*bindings, *cli, *hc, *examples;
	int64_t		 owner = 0, org = req->auth->org_id, id = req->id1;
	int		 rc, own_b, own_c;
	json_t		*view;

	memset(&in, 0, sizeof(in));
	memset(&old, 0, sizeof(old));
	rc = tool_find(org, id, &owner, name, sizeof(name), bundle,
	    sizeof(bundle));
	if (rc == 0 && tool_load(org, name, &old) != 0)
		rc = -1;	/* the same 500 as a failed lookup */
	if (row_editable(req, resp, rc, owner, "tool", "change") == -1)
		goto done;
	if (req->body == NULL) {
		resp_error(resp, 422, "nothing to change");
		goto done;
	}
	compat_cli_bin(req->body, old.name);
	if (tool_fields(req, resp, req->body, "", 1, 0, &in) == -1)
		goto done;
	in.kept_ids = compat_tool_secret_ids(old.bindings, old.cli);
	own_b = in.bindings != NULL;
	own_c = json_object_get(req->body, "cli") != NULL;
	/* Merge: the fields not sent keep their stored values. */
	if (in.name == NULL)
		in.name = old.name;
	if (in.base_url == NULL) {
		in.base_url = old.base_url;
		strlcpy(in.host, old.host, sizeof(in.host));
	}
	if (in.bindings == NULL)
		in.bindings = json_deep_copy(old.bindings);
	if (!own_c && old.cli != NULL)
		in.cli = json_deep_copy(old.cli);
	if (in.health_check == NULL || in.examples == NULL) {
		if ((st = db_prepare("SELECT health_check, examples FROM "
		    "tools WHERE id = ?")) == NULL) {
			db_fail(resp, "tool");
			goto done;
		}
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) == SQLITE_ROW) {
			if (in.health_check == NULL)
				in.health_check = json_text((const char *)
				    sqlite3_column_text(st, 0));
			if (in.examples == NULL)
				in.examples = json_text(db_text(st, 1));
		}
		sqlite3_reset(st);
	}
	if (strcmp(in.name, old.name) != 0 &&
	    (rc = tool_name_taken(org, in.name, id)) != 0) {
		if (rc == -1)
			db_fail(resp, "tool");
		else
			resp_error(resp, 409, "tool name '%s' already exists "
			    "in this org", in.name);
		goto done;
	}
	if (tool_resolve(req, resp, &in, NULL, own_b, own_c) == -1)
		goto done;

	if (store_begin() == -1) {
		db_fail(resp, "begin");
		goto done;
	}
	if ((st = db_prepare("UPDATE tools SET name = ?, base_url = ?, "
	    "host = ?, bindings = ?, cli = ?, health_check = ?, examples = ? "
	    "WHERE id = ? AND org_id = ?")) == NULL) {
		db_fail(resp, "tool");
		goto done;
	}
	bindings = dumps(in.bindings);
	examples = dumps(in.examples);
	cli = in.cli != NULL ? dumps(in.cli) : NULL;
	hc = json_is_object(in.health_check) ? dumps(in.health_check) : NULL;
	sqlite3_bind_text(st, 1, in.name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, in.base_url, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, in.host, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, bindings, -1, SQLITE_STATIC);
	if (cli != NULL)
		sqlite3_bind_text(st, 5, cli, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 5);
	if (hc != NULL)
		sqlite3_bind_text(st, 6, hc, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 6);
	sqlite3_bind_text(st, 7, examples, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, id);
	sqlite3_bind_int64(st, 9, org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	free(bindings);
	free(examples);
	free(cli);
	free(hc);
	if (rc == SQLITE_CONSTRAINT) {
		store_rollback();
		resp_error(resp, 409, "tool name '%s' already exists in this "
		    "org", in.name);
		goto done;
	}
	if (rc != SQLITE_DONE || tool_secrets_sync(id, in.secret_ids) == -1) {
		db_fail(resp, "tool");
		goto done;
	}
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		goto done;
	}
	if ((view = tool_view(org, id)) == NULL) {
		db_fail(resp, "tool view");
		goto done;
	}
	log_info("tool %lld changed by %s", (long long)id, req->auth->email);
	argv_warning(view, view);
	resp_ok(resp, view);
 done:
	/* name and base_url may point into old: clear in first. */
	in.name = NULL;
	in.base_url = NULL;
	tool_in_clear(&in);
	tool_row_clear(&old);
}

static void
tool_delete(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	char		 name[NAME_LEN_MAX + 1], bundle[NAME_LEN_MAX + 1];
	int64_t		 owner = 0, org = req->auth->org_id, id = req->id1;
	int		 rc;

	rc = tool_find(org, id, &owner, name, sizeof(name), bundle,
	    sizeof(bundle));
	if (row_editable(req, resp, rc, owner, "tool", "delete") == -1)
		return;
	if ((st = db_prepare("DELETE FROM tools WHERE id = ? AND "
	    "org_id = ?")) == NULL) {
		db_fail(resp, "tool");
		return;
	}
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		db_fail(resp, "delete tool");
		return;
	}
	log_info("tool %lld '%s' deleted by %s", (long long)id, name,
	    req->auth->email);
	resp_ok(resp, json_pack("{s:I}", "deleted", (json_int_t)id));
}

/* ------------------------------------------------------------------ */
/* For the run path (vault_run.c).                                     */

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
	strlcpy(t->base_url, st.base_url ? st.base_url : "",
	    sizeof(t->base_url));
	strlcpy(t->host, st.host ? st.host : "", sizeof(t->host));
	t->bindings = st.bindings ? json_loads(st.bindings, 0, NULL) : NULL;
	if (!json_is_array(t->bindings)) {
		json_decref(t->bindings);
		t->bindings = json_array();
	}
	if (st.cli != NULL) {
		t->cli = json_loads(st.cli, 0, NULL);
		if (!json_is_object(t->cli)) {
			json_decref(t->cli);
			t->cli = NULL;
		}
	}
	t->bundle_id = st.bundle_id;
	strlcpy(t->bundle, st.bundle, sizeof(t->bundle));
	store_tool_clear(&st);
	return (0);
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

/* ------------------------------------------------------------------ */
/* Skills (bundles).                                                   */

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

static void
skills_create(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	const char	*name, *recipe = "", *local, *kind;
	char		*files_text = NULL, *pt, now[32], ctx[48];
	json_t		*files = NULL, *secrets, *tools, *e, *locals = NULL;
	json_t		*view;
	int64_t		 org = req->auth->org_id, bundle, id;
	size_t		 i, ptlen;
	int		 rc, tooshort = 0;

	if (body_str(req, resp, "name", 1, NAME_LEN_MAX, &name) == -1 ||
	    body_str(req, resp, "recipe", 0, RECIPE_LEN_MAX, &recipe) == -1)
		return;
	if (!valid_name(name)) {
		resp_error(resp, 422, "field 'name' must be 1 to %d bytes "
		    "without control characters", NAME_LEN_MAX);
		return;
	}
	secrets = json_object_get(req->body, "secrets");
	tools = json_object_get(req->body, "tools");
	if (secrets != NULL && !json_is_null(secrets) &&
	    (!json_is_array(secrets) ||
	    json_array_size(secrets) > SKILL_SECRETS_MAX)) {
		resp_error(resp, 422, "field 'secrets' must be a list of at "
		    "most %d secrets", SKILL_SECRETS_MAX);
		return;
	}
	if (tools != NULL && !json_is_null(tools) && (!json_is_array(tools) ||
	    json_array_size(tools) > SKILL_TOOLS_MAX)) {
		resp_error(resp, 422, "field 'tools' must be a list of at most "
		    "%d tools", SKILL_TOOLS_MAX);
		return;
	}
	if (files_sanitise(resp, json_object_get(req->body, "files"),
	    &files) == -1)
		return;
	files_text = dumps(files);
	locals = json_object();

	if (store_begin() == -1) {
		db_fail(resp, "begin");
		goto done;
	}
	/* The bundle first: its secrets and tools point at it. */
	if ((st = db_prepare("INSERT INTO bundles (org_id, name, owner_id, "
	    "recipe, files, created_at) VALUES (?, ?, ?, ?, ?, ?)")) == NULL) {
		db_fail(resp, "skill");
		goto done;
	}
	now_iso(now, sizeof(now));
	sqlite3_bind_int64(st, 1, org);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, req->auth->user_id);
	sqlite3_bind_text(st, 4, recipe, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, files_text, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, now, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_CONSTRAINT) {
		store_rollback();
		resp_error(resp, 409, "skill name '%s' already exists in this "
		    "org", name);
		goto done;
	}
	if (rc != SQLITE_DONE) {
		db_fail(resp, "skill");
		goto done;
	}
	bundle = sqlite3_last_insert_rowid(vault_db);

	/* Any tool name already taken: 409 before anything else is judged. */
	json_array_foreach(tools, i, e) {
		if (!json_is_string(json_object_get(e, "name")))
			continue;
		rc = tool_name_taken(org, json_string_value(
		    json_object_get(e, "name")), 0);
		if (rc != 0) {
			if (rc == -1)
				db_fail(resp, "tool");
			else {
				store_rollback();
				resp_error(resp, 409, "tool name '%s' already "
				    "exists in this org", json_string_value(
				    json_object_get(e, "name")));
			}
			goto done;
		}
	}

	json_array_foreach(secrets, i, e) {
		snprintf(ctx, sizeof(ctx), "secrets[%zu]", i);
		kind = "env";
		if (!json_is_object(e)) {
			store_rollback();
			resp_error(resp, 422, "%s must be an object", ctx);
			goto done;
		}
		if (spec_str(resp, e, ctx, "local_name", 1, NAME_LEN_MAX,
		    &local) == -1 || spec_str(resp, e, ctx, "kind", 0, 32,
		    &kind) == -1) {
			store_rollback();
			goto done;
		}
		if (!valid_name(local) || !kind_valid(kind)) {
			store_rollback();
			resp_error(resp, 422, "%s: bad 'local_name' or 'kind' "
			    "(env, oauth, secret_file, param)", ctx);
			goto done;
		}
		if (json_object_get(locals, local) != NULL) {
			store_rollback();
			resp_error(resp, 422, "%s: duplicate local_name '%s'",
			    ctx, local);
			goto done;
		}
		if (secret_value(resp, json_object_get(e, "value"), kind, ctx,
		    &pt, &ptlen) == -1) {
			store_rollback();
			goto done;
		}
		tooshort |= value_too_short(pt, ptlen);
		rc = secret_insert(resp, org, req->auth->user_id, local, kind,
		    pt, ptlen, bundle, &id);
		value_free(pt, ptlen);
		if (rc == -1)
			goto done;
		json_object_set_new(locals, local, json_integer(id));
	}

	json_array_foreach(tools, i, e) {
		snprintf(ctx, sizeof(ctx), "tools[%zu]", i);
		if (tool_create(req, resp, e, ctx, bundle, locals, &id) == -1)
			goto done;
	}
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		goto done;
	}
	/* The creator sees what it made, access list or not. */
	if ((view = bundle_view(NULL, org, bundle)) == NULL) {
		db_fail(resp, "skill view");
		goto done;
	}
	if (tooshort)
		json_object_set_new(view, "warning",
		    json_string("too short to be masked reliably"));
	log_info("skill %lld '%s' registered by %s", (long long)bundle, name,
	    req->auth->email);
	json_array_foreach(json_object_get(view, "tools"), i, e)
		argv_warning(view, e);
	resp_ok(resp, view);
 done:
	free(files_text);
	json_decref(files);
	json_decref(locals);
}

/*
 * A skill is visible to a gated caller when its list names the skill or
 * one of the skill's tools.
 */
static int
bundle_visible(const struct auth *a, int64_t bundle, const char *name)
{
	sqlite3_stmt	*st;
	int		 ok = 0;

	if (a == NULL || a->role == ROLE_OWNER || a->tool_access == NULL ||
	    !json_is_array(a->tool_access) || access_allows(a, name))
		return (1);
	if ((st = db_prepare("SELECT name FROM tools WHERE bundle_id = ?")) ==
	    NULL)
		return (0);
	sqlite3_bind_int64(st, 1, bundle);
	while (!ok && sqlite3_step(st) == SQLITE_ROW)
		if (access_allows(a, db_text(st, 0)))
			ok = 1;
	sqlite3_reset(st);
	return (ok);
}

/* The full view; a is NULL for "show every tool" (the creator). */
static json_t *
bundle_view(const struct auth *a, int64_t org, int64_t bundle)
{
	sqlite3_stmt	*st;
	json_t		*v = NULL, *tools, *secrets;
	char		 name[NAME_LEN_MAX + 1];
	int		 rc;

	if ((st = db_prepare("SELECT b.id, b.name, u.email, b.recipe, "
	    "b.files FROM bundles b LEFT JOIN users u ON u.id = b.owner_id "
	    "WHERE b.id = ? AND b.org_id = ?")) == NULL)
		return (NULL);
	sqlite3_bind_int64(st, 1, bundle);
	sqlite3_bind_int64(st, 2, org);
	if (sqlite3_step(st) == SQLITE_ROW) {
		strlcpy(name, db_text(st, 1), sizeof(name));
		v = json_pack("{s:I,s:s,s:o,s:s,s:o}",
		    "id", (json_int_t)sqlite3_column_int64(st, 0),
		    "name", name,
		    "owner", email_json(st, 2),
		    "recipe", db_text(st, 3),
		    "files", json_text(db_text(st, 4)));
	}
	sqlite3_reset(st);
	if (v == NULL)
		return (NULL);

	tools = json_array();
	json_object_set_new(v, "tools", tools);
	if ((st = db_prepare(TOOL_COLS "WHERE t.bundle_id = ? AND "
	    "t.org_id = ? ORDER BY t.id")) == NULL)
		goto fail;
	sqlite3_bind_int64(st, 1, bundle);
	sqlite3_bind_int64(st, 2, org);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (a == NULL || tool_visible(a, db_text(st, 1), name))
			json_array_append_new(tools, tool_view_row(st));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		goto fail;

	secrets = json_array();
	json_object_set_new(v, "secrets", secrets);
	if ((st = db_prepare("SELECT s.id, s.name, s.kind, u.email, "
	    "s.bundle_id FROM secrets s LEFT JOIN users u ON u.id = s.owner_id "
	    "WHERE s.bundle_id = ? AND s.org_id = ? ORDER BY s.id")) == NULL)
		goto fail;
	sqlite3_bind_int64(st, 1, bundle);
	sqlite3_bind_int64(st, 2, org);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(secrets, secret_view_row(st));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		goto fail;
	return (v);
 fail:
	json_decref(v);
	return (NULL);
}

/* By id (name NULL) or by name: 0 found, 1 not in org, -1 error. */
static int
bundle_find(int64_t org, int64_t id, const char *byname, int64_t *out,
    int64_t *owner, char *name, size_t namelen)
{
	sqlite3_stmt	*st;
	int		 rc;

	if (byname != NULL) {
		if ((st = db_prepare("SELECT id, owner_id, name FROM bundles "
		    "WHERE org_id = ? AND name = ?")) == NULL)
			return (-1);
		sqlite3_bind_int64(st, 1, org);
		sqlite3_bind_text(st, 2, byname, -1, SQLITE_STATIC);
	} else {
		if ((st = db_prepare("SELECT id, owner_id, name FROM bundles "
		    "WHERE org_id = ? AND id = ?")) == NULL)
			return (-1);
		sqlite3_bind_int64(st, 1, org);
		sqlite3_bind_int64(st, 2, id);
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		*owner = sqlite3_column_int64(st, 1);
		strlcpy(name, db_text(st, 2), namelen);
	}
	sqlite3_reset(st);
	return (rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : -1);
}

static void
bundles_list(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	json_t		*list, *names;
	json_t		*e;
	size_t		 i;
	int		 rc;

	/* Collect first: bundle_visible steps statements of its own. */
	if ((st = db_prepare("SELECT b.id, b.name, u.email FROM bundles b "
	    "LEFT JOIN users u ON u.id = b.owner_id WHERE b.org_id = ? "
	    "ORDER BY b.id")) == NULL) {
		db_fail(resp, "skills");
		return;
	}
	names = json_array();
	sqlite3_bind_int64(st, 1, req->auth->org_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(names, json_pack("{s:I,s:s,s:o}",
		    "id", (json_int_t)sqlite3_column_int64(st, 0),
		    "name", db_text(st, 1), "owner", email_json(st, 2)));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(names);
		db_fail(resp, "skills");
		return;
	}
	list = json_array();
	json_array_foreach(names, i, e)
		if (bundle_visible(req->auth,
		    json_integer_value(json_object_get(e, "id")),
		    json_string_value(json_object_get(e, "name"))))
			json_array_append(list, e);
	json_decref(names);
	resp_ok(resp, list);
}

static void
bundle_show(struct vault_req *req, struct vault_resp *resp,
    const char *byname)
{
	char	 name[NAME_LEN_MAX + 1];
	int64_t	 id, owner;
	json_t	*v;
	int	 rc;

	rc = bundle_find(req->auth->org_id, req->id1, byname, &id, &owner,
	    name, sizeof(name));
	if (row_found(resp, rc, "skill") == -1)
		return;
	if (!bundle_visible(req->auth, id, name)) {
		resp_error(resp, 403, "you don't have access to the skill "
		    "'%s' in this team — ask an admin", name);
		return;
	}
	if ((v = bundle_view(req->auth, req->auth->org_id, id)) == NULL) {
		db_fail(resp, "skill view");
		return;
	}
	resp_ok(resp, v);
}

static void
bundle_get(struct vault_req *req, struct vault_resp *resp)
{
	bundle_show(req, resp, NULL);
}

static void
bundle_by_name(struct vault_req *req, struct vault_resp *resp)
{
	bundle_show(req, resp, req->name);
}

static void
bundle_patch(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	const char	*recipe;
	char		 name[NAME_LEN_MAX + 1];
	int64_t		 id, owner = 0, org = req->auth->org_id;
	json_t		*v;
	int		 rc;

	rc = bundle_find(org, req->id1, NULL, &id, &owner, name,
	    sizeof(name));
	if (row_editable(req, resp, rc, owner, "skill", "change") == -1)
		return;
	if (body_str(req, resp, "recipe", 1, RECIPE_LEN_MAX, &recipe) == -1)
		return;
	if ((st = db_prepare("UPDATE bundles SET recipe = ? WHERE id = ? AND "
	    "org_id = ?")) == NULL) {
		db_fail(resp, "skill");
		return;
	}
	sqlite3_bind_text(st, 1, recipe, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, id);
	sqlite3_bind_int64(st, 3, org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		db_fail(resp, "skill");
		return;
	}
	if ((v = bundle_view(req->auth, org, id)) == NULL) {
		db_fail(resp, "skill view");
		return;
	}
	resp_ok(resp, v);
}

static void
bundle_delete(struct vault_req *req, struct vault_resp *resp)
{
	sqlite3_stmt	*st;
	char		 name[NAME_LEN_MAX + 1], tool[NAME_LEN_MAX + 1];
	char		 secret[NAME_LEN_MAX + 1];
	int64_t		 id, owner = 0, org = req->auth->org_id;
	int		 rc;

	rc = bundle_find(org, req->id1, NULL, &id, &owner, name,
	    sizeof(name));
	if (row_editable(req, resp, rc, owner, "skill", "delete") == -1)
		return;
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return;
	}
	if ((st = db_prepare("SELECT t.name, s.name FROM tool_secrets ts "
	    "JOIN tools t ON t.id = ts.tool_id JOIN secrets s ON "
	    "s.id = ts.secret_id WHERE s.bundle_id = ?1 AND "
	    "(t.bundle_id IS NULL OR t.bundle_id != ?1) LIMIT 1")) == NULL) {
		db_fail(resp, "skill");
		return;
	}
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		strlcpy(tool, db_text(st, 0), sizeof(tool));
		strlcpy(secret, db_text(st, 1), sizeof(secret));
	}
	sqlite3_reset(st);
	if (rc == SQLITE_ROW) {
		store_rollback();
		resp_error(resp, 409, "the tool '%s', outside the skill, uses "
		    "its secret '%s' — remove it from that tool first", tool,
		    secret);
		return;
	}
	if (rc != SQLITE_DONE) {
		db_fail(resp, "skill");
		return;
	}
	/* The schema's cascades take the skill's tools and secrets along. */
	if ((st = db_prepare("DELETE FROM bundles WHERE id = ? AND "
	    "org_id = ?")) == NULL) {
		db_fail(resp, "skill");
		return;
	}
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		db_fail(resp, "delete skill");
		return;
	}
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		return;
	}
	log_info("skill %lld '%s' deleted by %s", (long long)id, name,
	    req->auth->email);
	resp_ok(resp, json_pack("{s:I}", "deleted", (json_int_t)id));
}

/* ------------------------------------------------------------------ */
/* tregctl.                                                            */

int
ctl_show_tools(const struct ctl_request *cr, json_t **reply)
{
	sqlite3_stmt	*st;
	json_t		*list, *cli;
	const char	*bin;
	int		 rc;

	if ((st = db_prepare("SELECT o.slug, t.id, t.name, t.host, t.cli, "
	    "u.email FROM tools t JOIN orgs o ON o.id = t.org_id LEFT JOIN "
	    "users u ON u.id = t.owner_id WHERE ?1 = '' OR o.slug = ?1 "
	    "ORDER BY o.slug, t.name")) == NULL) {
		*reply = ctl_errorf("database error");
		return (-1);
	}
	sqlite3_bind_text(st, 1, cr->org, -1, SQLITE_STATIC);
	list = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		cli = json_text((const char *)sqlite3_column_text(st, 4));
		bin = json_string_value(json_object_get(cli, "bin"));
		json_array_append_new(list, json_pack("{s:s,s:I,s:s,s:s,s:o,"
		    "s:o}", "org", db_text(st, 0),
		    "id", (json_int_t)sqlite3_column_int64(st, 1),
		    "name", db_text(st, 2), "host", db_text(st, 3),
		    "bin", bin != NULL ? json_string(bin) : json_null(),
		    "owner", email_json(st, 5)));
		json_decref(cli);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(list);
		*reply = ctl_errorf("database error: %s",
		    sqlite3_errmsg(vault_db));
		return (-1);
	}
	if (cr->org[0] != '\0' && json_array_size(list) == 0) {
		if ((st = db_prepare("SELECT 1 FROM orgs WHERE slug = ?")) !=
		    NULL) {
			sqlite3_bind_text(st, 1, cr->org, -1, SQLITE_STATIC);
			rc = sqlite3_step(st);
			sqlite3_reset(st);
			if (rc == SQLITE_DONE) {
				json_decref(list);
				*reply = ctl_errorf("no org '%s'", cr->org);
				return (-1);
			}
		}
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
	*reply = json_pack("{s:s}", "key_id", crypto_key_id());
	return (0);
}

/* A via: argv secret is in /proc/PID/cmdline, readable by local users. */
static void
argv_warning(json_t *view, json_t *tool)
{
	json_t	*e;
	size_t	 i;

	json_array_foreach(json_object_get(json_object_get(tool, "cli"),
	    "inject"), i, e)
		if (json_is_string(json_object_get(e, "via")) &&
		    strcmp(json_string_value(json_object_get(e, "via")),
		    "argv") == 0) {
			json_object_set_new(view, "warning", json_string(
			    "a secret injected via argv is visible to every "
			    "local user in /proc/PID/cmdline while the CLI "
			    "runs; prefer via env"));
			return;
		}
}
