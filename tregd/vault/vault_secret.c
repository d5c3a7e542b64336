/*
 * vault_secret.c: the registry's secrets (SPEC.md section 3).
 *
 * A secret's value is write-only: it is sealed (vault_keyring.c) before
 * it reaches a row, and no response, log line or error text carries it;
 * every buffer that held it is zeroed.  A gated member (an access list)
 * sees in GET /secrets the secrets it owns and those used by a tool it
 * may see or belonging to a skill it may see.  A secret a tool uses
 * cannot be deleted (409): tool_secrets says which tools use it.
 */

#include <stdlib.h>
#include <string.h>

#include "vault_registry.h"

static const char *const secret_kinds[] = {
	"env", "oauth", "secret_file", "param", NULL
};

/* GET /secrets: the caller and the list being built. */
struct secret_list {
	const struct auth	*a;
	json_t			*list;
};

/* Whether a gated caller may see a secret, judged user by user. */
struct secret_seen {
	const struct auth	*a;
	int			 ok;
};

static int	 secret_json_value(struct vault_resp *, json_t *,
		    const char *, const char *, char **, size_t *);
static int	 secret_store_value(struct vault_resp *, int64_t, int64_t,
		    const char *, size_t);
static int	 secret_user_seen(const char *, const char *, void *);
static int	 secret_list_row(const struct store_secret_item *, void *);
static int	 secret_first_tool(const char *, const char *, void *);
static int	 secret_check_json(struct vault_resp *, int64_t, int64_t,
		    const char *);
static int	 secret_bundle(struct vault_req *, struct vault_resp *,
		    int64_t *);
static int	 secret_fields(struct vault_req *, struct vault_resp *,
		    const char **, const char **);
static int	 secret_commit(struct vault_resp *, int, char *, size_t);
static void	 secret_answer(struct vault_req *, struct vault_resp *,
		    int64_t, int);

int
secret_kind_valid(const char *kind)
{
	int	 i;

	for (i = 0; secret_kinds[i] != NULL; i++)
		if (strcmp(kind, secret_kinds[i]) == 0)
			return (1);
	return (0);
}

/* An oauth or secret_file value given as a JSON object. */
static int
secret_json_value(struct vault_resp *resp, json_t *v, const char *ctx,
    const char *sep, char **buf, size_t *len)
{
	if (json_has_nul(v)) {
		resp_error(resp, 422, "%s%sfield 'value' contains a NUL byte",
		    ctx, sep);
		return (-1);
	}
	*buf = reg_dumps(v);
	*len = strlen(*buf);
	return (0);
}

/*
 * The plaintext of a value member v for a secret of this kind, in a
 * fresh buffer the caller releases with secret_value_free.  oauth values
 * are JSON objects, given as an object or as a string holding one;
 * secret_file values too, or any file's text, as treg takes them (a PEM
 * key: injected whole).  No error text quotes the value.
 */
int
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
		if (secret_json_value(resp, v, ctx, sep, &buf, &len) == -1)
			return (-1);
	} else if (json_is_string(v)) {
		len = json_string_length(v);
		if (memchr(json_string_value(v), '\0', len) != NULL) {
			resp_error(resp, 422, "%s%sfield 'value' contains a "
			    "NUL byte", ctx, sep);
			return (-1);
		}
		if (strcmp(kind, "oauth") == 0) {
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

void
secret_value_free(char *buf, size_t len)
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
	void	*sealed;
	size_t	 slen;
	int	 rc;

	if (secret_seal(org, id, pt, ptlen, &sealed, &slen) == -1) {
		log_warnx("%s: cannot seal secret %lld", __func__,
		    (long long)id);
		resp_refuse(resp, 500, "internal error: cannot seal the value");
		return (-1);
	}
	rc = store_secret_set_value(org, id, sealed, slen);
	free(sealed);
	if (rc == -1) {
		db_fail(resp, "secret");
		return (-1);
	}
	return (0);
}

int
secret_insert(struct vault_resp *resp, int64_t org, int64_t owner,
    const char *name, const char *kind, const char *pt, size_t ptlen,
    int64_t bundle, int64_t *id)
{
	struct store_secret	 s;

	memset(&s, 0, sizeof(s));
	s.org_id = org;
	strlcpy(s.name, name, sizeof(s.name));
	strlcpy(s.kind, kind, sizeof(s.kind));
	s.owner_id = owner;
	s.bundle_id = bundle;
	now_iso(s.created_at, sizeof(s.created_at));
	if (store_secret_insert(&s, id) != 0) {
		db_fail(resp, "secret");
		return (-1);
	}
	return (secret_store_value(resp, org, *id, pt, ptlen));
}

static int
secret_user_seen(const char *tool, const char *bundle, void *arg)
{
	struct secret_seen	*s = arg;

	if (tool != NULL)
		s->ok = tool_usable(s->a, tool, bundle, 0);
	else
		s->ok = access_allows(s->a, bundle);
	return (s->ok);
}

/*
 * For a gated caller: its own secrets, and those a visible tool uses or
 * whose skill is visible.
 */
int
secret_visible(const struct auth *a, int64_t id, int64_t owner)
{
	struct secret_seen	 s;

	if (a->role == ROLE_OWNER || a->tool_access == NULL ||
	    !json_is_array(a->tool_access) || owner == a->user_id)
		return (1);
	s.a = a;
	s.ok = 0;
	if (store_secret_users(id, secret_user_seen, &s) == -1)
		return (0);
	return (s.ok);
}

/*
 * The end of a write whose last step answered rc: the plaintext zeroed,
 * then the commit.  0, or -1 with resp set.
 */
static int
secret_commit(struct vault_resp *resp, int rc, char *pt, size_t ptlen)
{
	secret_value_free(pt, ptlen);
	if (rc == -1)
		return (-1);
	return (db_commit(resp));
}

/* The view of a secret just written, with the short-value warning. */
static void
secret_answer(struct vault_req *req, struct vault_resp *resp, int64_t id,
    int tooshort)
{
	json_t	*view;

	if ((view = reg_view(STORE_SECRET, req->auth->org_id, id)) == NULL) {
		db_fail(resp, "secret view");
		return;
	}
	if (tooshort)
		json_object_set_new(view, "warning",
		    json_string(PHRASE_TOO_SHORT));
	resp_ok(resp, view);
}

/* name and kind of a POST or PATCH: 0, or -1 with resp set. */
static int
secret_fields(struct vault_req *req, struct vault_resp *resp,
    const char **name, const char **kind)
{
	int	 required = req->route == ROUTE_SECRETS_CREATE;

	if (body_str(req, resp, "name", required, NAME_LEN_MAX, name) == -1 ||
	    body_str(req, resp, "kind", 0, 32, kind) == -1)
		return (-1);
	if (*name != NULL && !valid_name(*name)) {
		resp_error(resp, 422, "field 'name' must be 1 to %d bytes "
		    "without control characters", NAME_LEN_MAX);
		return (-1);
	}
	if (*kind != NULL && !secret_kind_valid(*kind)) {
		resp_error(resp, 422, "field 'kind' must be one of env, oauth, "
		    "secret_file, param");
		return (-1);
	}
	return (0);
}

/*
 * treg compatibility: POST /secrets may tie the secret to a skill of the
 * org by bundle_id (0: none); an unknown or another org's is 422.
 */
static int
secret_bundle(struct vault_req *req, struct vault_resp *resp, int64_t *bundle)
{
	struct store_ref	 ref;
	json_t			*v;
	int			 rc;

	*bundle = 0;
	if ((v = json_object_get(req->body, "bundle_id")) == NULL ||
	    json_is_null(v))
		return (0);
	if (body_int(req, resp, "bundle_id", 1, 1, INT64_MAX, bundle) == -1)
		return (-1);
	if ((rc = store_ref_get(STORE_BUNDLE, req->auth->org_id, *bundle, NULL,
	    &ref)) == -1) {
		db_fail(resp, "bundle lookup");
		return (-1);
	}
	if (rc == 1) {
		resp_error(resp, 422, "field 'bundle_id' names no skill of this "
		    "org (%lld)", (long long)*bundle);
		return (-1);
	}
	if (!reg_can_edit(req->auth, ref.owner_id)) {
		resp_error(resp, 403, "you can only add secrets to skills you "
		    "created");
		return (-1);
	}
	return (0);
}

void
secrets_create(struct vault_req *req, struct vault_resp *resp)
{
	const char	*name = NULL, *kind = "env";
	char		*pt = NULL;
	size_t		 ptlen = 0;
	int64_t		 id, bundle;
	int		 tooshort;

	if (secret_fields(req, resp, &name, &kind) == -1 ||
	    secret_bundle(req, resp, &bundle) == -1)
		return;
	if (secret_value(resp, json_object_get(req->body, "value"), kind, "",
	    &pt, &ptlen) == -1)
		return;
	tooshort = value_too_short(pt, ptlen);
	if (db_begin(resp) == -1) {
		secret_value_free(pt, ptlen);
		return;
	}
	if (secret_commit(resp, secret_insert(resp, req->auth->org_id,
	    req->auth->user_id, name, kind, pt, ptlen, bundle, &id), pt,
	    ptlen) == -1)
		return;
	log_info("secret %lld created in org %lld by %s", (long long)id,
	    (long long)req->auth->org_id, req->auth->email);
	secret_answer(req, resp, id, tooshort);
}

static int
secret_list_row(const struct store_secret_item *s, void *arg)
{
	struct secret_list	*l = arg;

	if (secret_visible(l->a, s->id, s->owner_id))
		json_array_append_new(l->list, reg_secret_json(s));
	return (0);
}

void
secrets_list(struct vault_req *req, struct vault_resp *resp)
{
	struct store_sel	 sel;
	struct secret_list	 l;

	memset(&sel, 0, sizeof(sel));
	sel.org = req->auth->org_id;
	l.a = req->auth;
	if ((l.list = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (store_secrets(&sel, secret_list_row, &l) == -1) {
		json_decref(l.list);
		db_fail(resp, "secrets");
		return;
	}
	resp_ok(resp, l.list);
}

/* A kind that needs JSON without a new value: the stored one must be. */
static int
secret_check_json(struct vault_resp *resp, int64_t org, int64_t id,
    const char *kind)
{
	struct store_secret	 s;
	unsigned char		*old = NULL;
	size_t			 oldlen;
	json_t			*parsed;
	int			 rc = -1;

	if (store_secret_get(org, id, &s) == 0)
		rc = secret_unseal(org, id, s.sealed, s.sealedlen, &old,
		    &oldlen);
	store_secret_clear(&s);
	if (rc == -1) {
		log_warnx("secret %lld does not open", (long long)id);
		resp_error(resp, 500, "internal error: the stored value does "
		    "not open");
		return (-1);
	}
	parsed = json_loadb((const char *)old, oldlen, 0, NULL);
	secret_free(old, oldlen);
	rc = json_is_object(parsed);
	json_decref(parsed);
	if (!rc) {
		resp_error(resp, 422, "the value of a '%s' secret must be a "
		    "JSON object: send a new value with the kind", kind);
		return (-1);
	}
	return (0);
}

void
secret_patch(struct vault_req *req, struct vault_resp *resp)
{
	struct store_ref	 ref;
	const char		*name = NULL, *kind = NULL;
	char			*pt = NULL;
	size_t			 ptlen = 0;
	json_t			*v;
	int64_t			 org = req->auth->org_id, id = req->id1;
	int			 tooshort = 0, rc;

	if (reg_ref(req, resp, STORE_SECRET, id, NULL, "change", &ref) == -1 ||
	    secret_fields(req, resp, &name, &kind) == -1)
		return;
	if (kind == NULL)
		kind = ref.detail;
	v = req->body ? json_object_get(req->body, "value") : NULL;
	if (v != NULL) {
		if (secret_value(resp, v, kind, "", &pt, &ptlen) == -1)
			return;
		tooshort = value_too_short(pt, ptlen);
	} else if (strcmp(kind, "oauth") == 0 &&
	    strcmp(kind, ref.detail) != 0 &&
	    secret_check_json(resp, org, id, kind) == -1)
		return;

	if (db_begin(resp) == -1) {
		secret_value_free(pt, ptlen);
		return;
	}
	if (store_secret_update(org, id, name, kind) == -1) {
		secret_value_free(pt, ptlen);
		db_fail(resp, "secret");
		return;
	}
	rc = pt != NULL ? secret_store_value(resp, org, id, pt, ptlen) : 0;
	/* A longer value, or a kind now masked: the tools using it. */
	if (rc == 0 && (rc = mask_cost_users(org, id, resp)) == -1)
		store_rollback();
	if (secret_commit(resp, rc, pt, ptlen) == -1)
		return;
	log_info("secret %lld changed by %s", (long long)id, req->auth->email);
	secret_answer(req, resp, id, tooshort);
}

/* The first tool (by name) using a secret; its own skill ends the walk. */
static int
secret_first_tool(const char *tool, const char *bundle, void *arg)
{
	if (tool != NULL)
		strlcpy(arg, tool, NAME_LEN_MAX + 1);
	return (1);
}

void
secret_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct store_ref	 ref;
	char			 tool[NAME_LEN_MAX + 1];
	int64_t			 org = req->auth->org_id, id = req->id1;

	if (reg_ref(req, resp, STORE_SECRET, id, NULL, "delete", &ref) == -1)
		return;
	if (db_begin(resp) == -1)
		return;
	tool[0] = '\0';
	if (store_secret_users(id, secret_first_tool, tool) == -1) {
		db_fail(resp, "secret");
		return;
	}
	if (tool[0] != '\0') {
		resp_refuse(resp, 409, "secret '%s' is in use by the tool '%s' "
		    "(referenced by its bindings or its local-run CLI "
		    "profile) — remove it from there first", ref.name, tool);
		return;
	}
	if (store_secret_delete(org, id) == -1) {
		db_fail(resp, "delete secret");
		return;
	}
	if (db_commit(resp) == -1)
		return;
	log_info("secret %lld deleted by %s", (long long)id, req->auth->email);
	resp_ok(resp, json_pack("{s:I}", "deleted", (json_int_t)id));
}

const struct vault_route vault_secret_routes[] = {
	{ ROUTE_SECRETS_CREATE,	ROLE_MEMBER,	secrets_create },
	{ ROUTE_SECRETS_LIST,	ROLE_VIEWER,	secrets_list },
	{ ROUTE_SECRET_PATCH,	ROLE_MEMBER,	secret_patch },
	{ ROUTE_SECRET_DELETE,	ROLE_MEMBER,	secret_delete },
	{ ROUTE_NONE,		ROLE_NONE,	NULL }
};
