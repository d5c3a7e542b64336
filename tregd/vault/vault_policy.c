/*
 * vault_policy.c: policy and the local tier.  Deny rules (SPEC.md
 * section 9) and their check, local-run grants and run reports (section
 * 7), the call audit read (section 8), credential health (section 11) and
 * tregctl's "show audit".
 *
 * A grant is the one answer of the daemon that carries secret values: it
 * is written to the audit before it is answered, its values live only in
 * sodium or jansson memory that is zeroed on free, and nothing here ever
 * logs a value, an argument or a request body.
 */

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "compat.h"
#include "store.h"
#include "vault.h"

#define DENY_RULES_MAX		1000	/* per org */
#define GRANT_ARGV_MAX		256
#define GRANT_ARG_LEN_MAX	(32 * 1024)
#define GRANT_TTL		300
#define REPORT_DETAIL_MAX	512
#define CALLS_LIMIT_DEF		50
#define CALLS_LIMIT_MAX		500
#define AUDIT_CTL_MAX		500

static int	deny_id(struct vault_req *, struct vault_resp *, const char *,
		    const char *, int64_t *);
static int	deny_scope(struct vault_req *, struct vault_resp *, int64_t *,
		    int64_t *);
static int	deny_body(struct vault_req *, struct vault_resp *, char *,
		    size_t, const char **, char *, size_t, const char **);
static json_t	*deny_view(const struct store_deny *);
static int	deny_append(const struct store_deny *, void *);
static void	deny_create(struct vault_req *, struct vault_resp *);
static void	deny_list(struct vault_req *, struct vault_resp *);
static void	deny_delete(struct vault_req *, struct vault_resp *);
static int	grant_argv(struct vault_req *, struct vault_resp *, json_t **);
static int	inject_ids(const struct tool_row *, json_t *, int64_t *,
		    struct vault_resp *);
static int	needs_proof(const struct auth *, const int64_t *, size_t);
static json_t	*grant_value(int64_t, int64_t, json_t *, const char *,
		    struct vault_resp *);
static json_t	*grant_render(int64_t, const struct tool_row *, json_t *,
		    const int64_t *, struct vault_resp *);
static int	grant_allowed(const struct auth *, const struct tool_row *,
		    struct vault_resp *);
static int	grant_proof(struct vault_req *, struct local_audit *,
		    const int64_t *, size_t, struct vault_resp *);
static int	report_body(struct vault_req *, struct vault_resp *,
		    int64_t *, int64_t *, const char **, const char **);
static int	report_mark(const struct auth *, const struct tool_row *,
		    const char *, const char *, int64_t, json_t *);
static void	tool_grant(struct vault_req *, struct vault_resp *);
static void	tool_run_report(struct vault_req *, struct vault_resp *);
static void	calls_list(struct vault_req *, struct vault_resp *);
static void	health_list(struct vault_req *, struct vault_resp *);
static char	*access_text(const struct auth *);
static int	 marked_name(const char *, void *);
static json_t	*text_or_null(const char *);
static json_t	*int_or_null(int, int64_t);
static json_t	*call_view(const struct store_calls_row *);
static void	 call_view_where(const struct store_calls_row *, json_t *);
static int	 calls_row_visible(const struct auth *,
		    const struct store_calls_row *);
static int	 calls_row(const struct store_calls_row *, void *);
static json_t	*calls_query(int64_t, const struct auth *, size_t, int64_t,
		    int64_t, json_t *(*)(const struct store_calls_row *));
static int	 health_view(const struct store_secret_row *, void *);
static json_t	*audit_view(const struct store_calls_row *);

const struct vault_route vault_policy_routes[] = {
	{ ROUTE_DENY_CREATE,		ROLE_VIEWER,	deny_create },
	{ ROUTE_DENY_LIST,		ROLE_VIEWER,	deny_list },
	{ ROUTE_DENY_DELETE,		ROLE_VIEWER,	deny_delete },
	{ ROUTE_TOOL_GRANT,		ROLE_MEMBER,	tool_grant },
	{ ROUTE_TOOL_RUN_REPORT,	ROLE_MEMBER,	tool_run_report },
	{ ROUTE_CALLS_LIST,		ROLE_VIEWER,	calls_list },
	{ ROUTE_HEALTH,			ROLE_VIEWER,	health_list },
	{ ROUTE_NONE,			ROLE_NONE,	NULL }
};

/* ------------------------------------------------------------------ */
/* Deny rules: the routes.                                             */

/*
 * Each needs the caller's own membership in org {id1} as admin or owner,
 * the same rule as the other /orgs/{id} routes: no membership is 404.
 */

/* An id field of a new rule: *id, 0 when null or absent. */
static int
deny_id(struct vault_req *req, struct vault_resp *resp, const char *field,
    const char *what, int64_t *id)
{
	json_t	*v;

	*id = 0;
	v = json_object_get(req->body, field);
	if (v == NULL || json_is_null(v))
		return (0);
	if (!json_is_integer(v) || json_integer_value(v) < 1) {
		resp_error(resp, 422, "field '%s' must be %s id or null",
		    field, what);
		return (-1);
	}
	*id = json_integer_value(v);
	return (0);
}

/*
 * Whom and what a new rule binds: user_id (a member of the org, else
 * 404) and project_id (a project of the org, else 404, as treg says
 * them); each 0 when null or absent.
 */
static int
deny_scope(struct vault_req *req, struct vault_resp *resp, int64_t *user,
    int64_t *project)
{
	int	 rc;

	if (deny_id(req, resp, "user_id", "a user", user) == -1 ||
	    deny_id(req, resp, "project_id", "a project", project) == -1)
		return (-1);
	if (*user != 0 && (rc = store_member_of(*user, req->id1)) != 0) {
		if (rc == 1)
			resp_error(resp, 404, "not a member of this org (user "
			    "%lld)", (long long)*user);
		else
			db_fail(resp, "deny rule");
		return (-1);
	}
	if (*project != 0 && (rc = project_of_org(req->id1, *project)) != 0) {
		if (rc == 1)
			resp_error(resp, 404, "unknown project");
		else
			db_fail(resp, "deny rule");
		return (-1);
	}
	return (0);
}

/* The fields of a new rule; empty strings count as absent. */
static int
deny_body(struct vault_req *req, struct vault_resp *resp, char *host,
    size_t hostlen, const char **path, char *method, size_t methodlen,
    const char **note)
{
	const char	*h = "", *m = "";
	char		 hbuf[HOST_LEN_MAX];
	size_t		 i;

	*path = "";
	*note = "";
	if (body_str(req, resp, "host", 0, hostlen - 1, &h) == -1 ||
	    body_str(req, resp, "path_prefix", 0, DENY_PATH_MAX, path) == -1 ||
	    body_str(req, resp, "method", 0, methodlen - 1, &m) == -1 ||
	    body_str(req, resp, "note", 0, DENY_NOTE_MAX, note) == -1)
		return (-1);
	/* treg compatibility: a host given as a URL stands for its host. */
	if (strpbrk(h, "/@?#") != NULL) {
		if (compat_deny_host(h, hbuf, sizeof(hbuf)) == -1 ||
		    strlen(hbuf) >= hostlen) {
			resp_error(resp, 422, "field 'host' names no host");
			return (-1);
		}
		h = hbuf;
	}
	if (*m != '\0' && compat_http_method(m, method, methodlen) == -1) {
		resp_error(resp, 422, "field 'method' must be an HTTP method "
		    "such as GET or DELETE");
		return (-1);
	}
	for (i = 0; h[i] != '\0'; i++) {
		if (!isalnum((unsigned char)h[i]) &&
		    strchr(".-_:[]", h[i]) == NULL) {
			resp_error(resp, 422, "field 'host' must be a bare "
			    "host name, without a scheme or a path");
			return (-1);
		}
		host[i] = tolower((unsigned char)h[i]);
	}
	host[i] = '\0';
	for (i = 0; m[i] != '\0'; i++) {
		if (!isalpha((unsigned char)m[i]) && m[i] != '-' &&
		    m[i] != '_') {
			resp_error(resp, 422, "field 'method' must be an HTTP "
			    "method such as GET or DELETE");
			return (-1);
		}
		method[i] = toupper((unsigned char)m[i]);
	}
	method[i] = '\0';
	if (**path != '\0' && **path != '/') {
		resp_error(resp, 422, "field 'path_prefix' must start with "
		    "'/'");
		return (-1);
	}
	for (i = 0; (*path)[i] != '\0'; i++)
		if ((unsigned char)(*path)[i] <= ' ' || (*path)[i] == 0x7f) {
			resp_error(resp, 422, "field 'path_prefix' may not "
			    "contain spaces or control characters");
			return (-1);
		}
	for (i = 0; (*note)[i] != '\0'; i++)
		if ((unsigned char)(*note)[i] < ' ' || (*note)[i] == 0x7f) {
			resp_error(resp, 422, "field 'note' may not contain "
			    "control characters");
			return (-1);
		}
	if (*host == '\0' && **path == '\0' && *method == '\0') {
		resp_error(resp, 422, "a deny rule needs at least one of "
		    "'host', 'path_prefix' or 'method'");
		return (-1);
	}
	return (0);
}

/*
 * A rule as treg shows it: an empty field is "" (treg stores what was
 * sent, "" for any), created_by the creator's email ("" once gone);
 * user_id and project_id null when the rule is not scoped so.
 */
static json_t *
deny_view(const struct store_deny *d)
{
	json_t	*o;

	o = json_pack("{s:I, s:I, s:s, s:s, s:s, s:o, s:o, s:s, s:s, s:s, "
	    "s:s, s:s}",
	    "id", (json_int_t)d->id,
	    "org_id", (json_int_t)d->org_id,
	    "host", d->host ? d->host : "",
	    "path_prefix", d->path_prefix ? d->path_prefix : "",
	    "method", d->method ? d->method : "",
	    "user_id", int_or_null(d->user_id != 0, d->user_id),
	    "project_id", int_or_null(d->project_id != 0, d->project_id),
	    "note", d->note ? d->note : "",
	    "created_by", d->created_by_email ? d->created_by_email : "",
	    "created_at", d->created_at,
	    "scope", d->user_id != 0 ? "member" : "org",
	    "verdict", "deny");
	if (o == NULL)
		fatalx("%s: json_pack", __func__);
	return (o);
}

static int
deny_append(const struct store_deny *d, void *arg)
{
	json_array_append_new(arg, deny_view(d));
	return (0);
}

static void
deny_create(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx		 ctx;
	struct store_deny	 d;
	char			 host[HOST_LEN_MAX];
	char			 method[DENY_METHOD_MAX + 1], now[32];
	const char		*path, *note;
	json_t			*one;
	int64_t			 user, project, id, n = 0;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if (req->body == NULL) {
		resp_error(resp, 422, "a deny rule needs at least one of "
		    "'host', 'path_prefix' or 'method'");
		return;
	}
	if (deny_body(req, resp, host, sizeof(host), &path, method,
	    sizeof(method), &note) == -1 ||
	    deny_scope(req, resp, &user, &project) == -1)
		return;

	if (store_begin() == -1 || store_deny_count(req->id1, &n) == -1) {
		db_fail(resp, "deny rule");
		return;
	}
	if (n >= DENY_RULES_MAX) {
		resp_refuse(resp, 409, "this org already has %d deny rules, "
		    "the most it may have", DENY_RULES_MAX);
		return;
	}
	now_iso(now, sizeof(now));
	memset(&d, 0, sizeof(d));
	d.org_id = req->id1;
	d.host = host;
	d.path_prefix = path;
	d.method = method;
	d.user_id = user;
	d.project_id = project;
	d.note = note;
	d.created_by = req->auth->user_id;
	d.created_at = now;
	if (store_deny_insert(&d, &id) == -1 || store_commit() == -1) {
		db_fail(resp, "deny rule");
		return;
	}
	one = json_array();
	if (store_deny_get(id, deny_append, one) == 0 &&
	    json_array_size(one) == 1)
		resp_ok(resp, json_incref(json_array_get(one, 0)));
	else
		db_fail(resp, "deny rule");
	json_decref(one);
	log_info("org %lld: deny rule %lld added by user %lld",
	    (long long)req->id1, (long long)id,
	    (long long)req->auth->user_id);
}

static void
deny_list(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	json_t		*arr;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	arr = json_array();
	if (store_deny_rules(req->id1, -1, deny_append, arr) == -1) {
		json_decref(arr);
		db_fail(resp, "deny rules");
		return;
	}
	resp_ok(resp, arr);
}

static void
deny_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	int		 rc;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if ((rc = store_deny_delete(req->id1, req->id2)) == -1) {
		db_fail(resp, "deny rule");
		return;
	}
	if (rc == 1) {
		resp_error(resp, 404, "deny rule not found");
		return;
	}
	log_info("org %lld: deny rule %lld removed by user %lld",
	    (long long)req->id1, (long long)req->id2,
	    (long long)req->auth->user_id);
	resp_ok(resp, json_pack("{s:I}", "deleted", (json_int_t)req->id2));
}

/* ------------------------------------------------------------------ */
/* Local grants.                                                       */

/* argv: absent is an empty list; else at most 256 strings of 32 KiB. */
static int
grant_argv(struct vault_req *req, struct vault_resp *resp, json_t **out)
{
	json_t	*argv, *v;
	size_t	 i;

	argv = req->body ? json_object_get(req->body, "argv") : NULL;
	if (argv == NULL || json_is_null(argv)) {
		*out = json_array();
		return (0);
	}
	if (!json_is_array(argv) || json_array_size(argv) > GRANT_ARGV_MAX) {
		resp_error(resp, 422, "field 'argv' must be an array of at "
		    "most %d strings", GRANT_ARGV_MAX);
		return (-1);
	}
	json_array_foreach(argv, i, v) {
		if (!json_is_string(v)) {
			resp_error(resp, 422, "field 'argv' must be an array "
			    "of strings");
			return (-1);
		}
		if (json_string_length(v) > GRANT_ARG_LEN_MAX) {
			resp_error(resp, 422, "argument %zu is too long (at "
			    "most %d bytes)", i, GRANT_ARG_LEN_MAX);
			return (-1);
		}
		if (strlen(json_string_value(v)) != json_string_length(v)) {
			resp_error(resp, 422, "argument %zu contains a NUL "
			    "byte", i);
			return (-1);
		}
	}
	*out = json_incref(argv);
	return (0);
}

/* The secret of each inject entry; an entry that resolves to none fails. */
static int
inject_ids(const struct tool_row *t, json_t *inject, int64_t *ids,
    struct vault_resp *resp)
{
	json_t	*e;
	size_t	 i;

	json_array_foreach(inject, i, e) {
		if (i >= INJECT_MAX || inject_resolve(t, e, &ids[i]) == -1) {
			resp_error(resp, 502, "tool '%s': cli.inject[%zu] does "
			    "not resolve to exactly one secret — give the "
			    "entry a secret_id or from_binding", t->name, i);
			return (-1);
		}
	}
	return (0);
}

/* Whether any of the secrets belongs to someone else than the caller. */
static int
needs_proof(const struct auth *a, const int64_t *ids, size_t n)
{
	struct store_secret	 sc;
	size_t			 i;
	int			 other = 0;

	for (i = 0; i < n && !other; i++) {
		if (store_secret_get(a->org_id, ids[i], &sc) != 0 ||
		    sc.owner_id != a->user_id)
			other = 1;
		store_secret_clear(&sc);
	}
	return (other);
}

/*
 * One inject entry with its secret's value put in, as inject_value()
 * makes it for server runs too.
 */
static json_t *
grant_value(int64_t org, int64_t sid, json_t *e, const char *tool,
    struct vault_resp *resp)
{
	struct isecret	 sc;
	size_t		 olen, i;
	const char	*name, *via;
	char		*s;
	json_t		*item = NULL, *arr, *a;

	if (isecret_open(org, sid, tool, &sc, resp) == -1) {
		isecret_close(&sc);
		return (NULL);
	}
	via = json_string_value(json_object_get(e, "via"));
	if (via != NULL && strcmp(via, "argv") == 0) {
		if ((arr = json_array()) == NULL)
			fatal("%s: json_array", __func__);
		item = json_pack("{s:s, s:o}", "via", "argv", "argv", arr);
		json_array_foreach(json_object_get(e, "argv"), i, a) {
			if (inject_value(&sc, e, json_string_value(a), tool,
			    resp, &s, &olen) == -1) {
				json_decref(item);
				item = NULL;
				goto out;
			}
			if (json_array_append_new(arr,
			    json_stringn(s, olen)) == -1) {
				freezero(s, olen + 1);
				goto notutf8;
			}
			freezero(s, olen + 1);
		}
	} else {
		name = json_string_value(json_object_get(e, "name"));
		if (inject_value(&sc, e, json_string_value(json_object_get(e,
		    "format")), tool, resp, &s, &olen) == -1)
			goto out;
		item = json_pack("{s:s, s:s?, s:s%}", "via", "env", "name",
		    name, "value", s, olen);
		freezero(s, olen + 1);
		if (item == NULL)
			goto notutf8;
	}
	goto out;
 notutf8:
	json_decref(item);
	item = NULL;
	resp_error(resp, 502, "tool '%s': the secret '%s' is not UTF-8 text "
	    "and cannot be handed out in a grant", tool, sc.name);
 out:
	isecret_close(&sc);
	return (item);
}

/*
 * The grant's inject list: each entry with its value, then the profile's
 * plain settings (cli.env) as env entries of the same shape.
 */
static json_t *
grant_render(int64_t org, const struct tool_row *t, json_t *inject,
    const int64_t *ids, struct vault_resp *resp)
{
	json_t		*items, *e, *item;
	const char	*name;
	size_t		 i;

	if ((items = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	json_array_foreach(inject, i, e) {
		if ((item = grant_value(org, ids[i], e, t->name,
		    resp)) == NULL) {
			json_decref(items);
			return (NULL);
		}
		json_array_append_new(items, item);
	}
	json_object_foreach(json_object_get(t->cli, "env"), name, e)
		if (json_array_append_new(items, json_pack("{s:s, s:s, s:O}",
		    "via", "env", "name", name, "value", e)) == -1)
			fatalx("%s: json_pack", __func__);
	return (items);
}

/*
 * Whether the caller may have a local grant of the tool at all: its
 * access, local runs, deny rules and the tool's cli block.  0, or -1
 * answered.
 */
static int
grant_allowed(const struct auth *a, const struct tool_row *t,
    struct vault_resp *resp)
{
	char		 path[DENY_PATH_MAX + 1], *text;
	const char	*why;
	json_t		*tmpl;

	if (tool_access_check(a, t, resp) == -1)
		return (-1);
	/* Owners are never restricted, as with access lists. */
	if (a->role != ROLE_OWNER && !a->local_run_enabled) {
		resp_error(resp, 403, "local execution is disabled for you — "
		    "run on the server instead (`treg run --server`), or ask "
		    "an admin to enable local runs for your account");
		return (-1);
	}
	url_path(t->base_url, path, sizeof(path));
	if (deny_check(a, t->host, path, NULL, t->project_id, resp) == -1)
		return (-1);
	if (t->cli == NULL) {
		/* treg compatibility: the catalog knows some CLIs' answer. */
		if ((why = catalog_unsupported_name(t->name)) != NULL) {
			resp_error(resp, 409, "'%s' is not supported: %s",
			    t->name, why);
			return (-1);
		}
		tmpl = catalog_template(t->name);
		if ((text = json_dumps(tmpl, JSON_COMPACT)) == NULL)
			fatalx("%s: template", __func__);
		resp_error(resp, 409, "treg doesn't know how to inject "
		    "credentials into '%s'. Add a \"cli\" block to the tool "
		    "(or the skill's treg.json) — template: %s", t->name, text);
		free(text);
		json_object_set_new(resp->body, "template", tmpl);
		return (-1);
	}
	if (!json_is_true(json_object_get(t->cli, "enabled"))) {
		resp_error(resp, 403, "local runs are disabled for '%s' — an "
		    "owner/admin can enable them: treg tool update %s "
		    "--local-run on", t->name, t->name);
		return (-1);
	}
	return (0);
}

/*
 * A member may be allowed to run a tool with a teammate's key without
 * being allowed to read that key: only the isolated runner, which holds
 * the proof, gets such a grant.  0, or -1 refused (and audited).
 */
static int
grant_proof(struct vault_req *req, struct local_audit *la,
    const int64_t *ids, size_t n, struct vault_resp *resp)
{
	const struct auth	*a = req->auth;

	if (a->role >= ROLE_ADMIN || req->proof_ok || !needs_proof(a, ids, n))
		return (0);
	la->refused_by = "run-proof";
	if (audit_local(a, la) == -1) {
		audit_unwritable(resp, "nothing was granted");
		return (-1);
	}
	resp_error(resp, 403, "this key is shared: local runs of it need the "
	    "runner proof (X-Treg-Run-Proof) — a direct grant can't hand you "
	    "another member's key; use the isolated treg-run runner an admin "
	    "sets up");
	return (-1);
}

/*
 * POST /tools/{name}/grant: the checks of SPEC.md section 7 in their
 * order, then the audit row, then the answer with the values.
 */
static void
tool_grant(struct vault_req *req, struct vault_resp *resp)
{
	const struct auth	*a = req->auth;
	struct tool_row		 t;
	struct local_audit	 la;
	json_t			*argv = NULL, *inject, *items = NULL;
	int64_t			 ids[INJECT_MAX], id;

	memset(&t, 0, sizeof(t));
	memset(&la, 0, sizeof(la));
	if (grant_argv(req, resp, &argv) == -1)
		return;
	if (tool_find(a->org_id, req->name, &t, resp) == -1)
		goto out;
	if (grant_allowed(a, &t, resp) == -1)
		goto out;
	if (cli_deny_refuse(a, &t, argv, "local_run", resp) == -1)
		goto out;
	la.tool = t.name;
	la.argv = argv;
	la.action = "DENY";
	la.status = 403;
	inject = json_object_get(t.cli, "inject");
	if (!json_is_array(inject))
		inject = NULL;
	if (inject != NULL && inject_ids(&t, inject, ids, resp) == -1) {
		resolution_refuse(a, t.name, argv, "local_run", resp);
		goto out;
	}
	if (inject != NULL && grant_proof(req, &la, ids,
	    json_array_size(inject), resp) == -1)
		goto out;
	/* An expired OAuth token: asked again once refreshed, or 502. */
	if (oauth_check_ids(store_secret_get, a->org_id, ids, inject != NULL ?
	    json_array_size(inject) : 0, t.name, resp, &req->oauth_wait) == -1) {
		if (resp->status == 502)
			resolution_refuse(a, t.name, argv, "local_run", resp);
		goto out;
	}
	if ((items = grant_render(a->org_id, &t, inject, ids,
	    resp)) == NULL) {
		if (resp->status == 502)
			resolution_refuse(a, t.name, argv, "local_run", resp);
		goto out;
	}

	la.action = "GRANT";
	la.status = 200;
	if ((id = audit_local(a, &la)) == -1) {
		json_decref(items);
		audit_unwritable(resp, "nothing was granted");
		goto out;
	}
	log_info("grant %lld: %s, tool %s", (long long)id, a->email, t.name);
	resp_ok(resp, json_pack("{s:s, s:o, s:i, s:b, s:I}",
	    "bin", json_string_value(json_object_get(t.cli, "bin")),
	    "inject", items, "ttl_seconds", GRANT_TTL, "redact_output",
	    inject != NULL && needs_proof(a, ids, json_array_size(inject)),
	    "audit_id", (json_int_t)id));
	if (resp->body == NULL)
		fatalx("%s: json_pack", __func__);
 out:
	json_decref(argv);
	tool_row_clear(&t);
}

/* The body of a run report: 0, or -1 answered. */
static int
report_body(struct vault_req *req, struct vault_resp *resp, int64_t *grant,
    int64_t *exit_code, const char **verdict, const char **detail)
{
	static const char *const verdicts[] = {
		"ok", "credential_invalid", "unknown_error", NULL
	};
	int	 i;

	if (body_int(req, resp, "audit_id", 1, 1, INT64_MAX, grant) == -1 ||
	    body_int(req, resp, "exit_code", 1, INT32_MIN, INT32_MAX,
	    exit_code) == -1 ||
	    body_str(req, resp, "verdict", 1, 32, verdict) == -1 ||
	    body_str(req, resp, "detail", 0, REPORT_DETAIL_MAX, detail) == -1)
		return (-1);
	for (i = 0; verdicts[i] != NULL; i++)
		if (strcmp(*verdict, verdicts[i]) == 0)
			return (0);
	resp_error(resp, 422, "verdict must be one of ok, "
	    "credential_invalid, unknown_error");
	return (-1);
}

/*
 * A run report's verdict on the tool's credentials (params are
 * configuration, not credentials): ok or invalid, with why; the names
 * marked invalid go to marked.  An unknown error says nothing of them.
 */
static int
report_mark(const struct auth *a, const struct tool_row *t,
    const char *verdict, const char *detail, int64_t exit_code,
    json_t *marked)
{
	char	 now[32], dbuf[REPORT_DETAIL_MAX + 128];

	if (strcmp(verdict, "unknown_error") == 0)
		return (0);
	if (detail != NULL && *detail != '\0')
		snprintf(dbuf, sizeof(dbuf), "%s", detail);
	else if (strcmp(verdict, "ok") == 0)
		snprintf(dbuf, sizeof(dbuf), "a local run of %s succeeded",
		    t->name);
	else
		snprintf(dbuf, sizeof(dbuf), "a local run of %s reported an "
		    "auth failure (exit %lld)", t->name, (long long)exit_code);
	now_iso(now, sizeof(now));
	return (store_tool_secrets_mark(a->org_id, t->id,
	    strcmp(verdict, "ok") == 0 ? "ok" : "invalid", dbuf, now,
	    marked_name, strcmp(verdict, "credential_invalid") == 0 ?
	    marked : NULL));
}

/*
 * POST /tools/{name}/run-report: the runner's verdict on a grant of the
 * caller's own.  The GRANT row stays as it is; the report is a new row.
 */
static void
tool_run_report(struct vault_req *req, struct vault_resp *resp)
{
	const struct auth	*a = req->auth;
	struct local_audit	 la;
	struct tool_row		 t;
	const char		*verdict = NULL, *detail = NULL;
	char			 path[96];
	int64_t			 grant, exit_code, rid;
	json_t			*marked;

	memset(&t, 0, sizeof(t));
	memset(&la, 0, sizeof(la));
	if (report_body(req, resp, &grant, &exit_code, &verdict,
	    &detail) == -1)
		return;

	/* Another user's grant is not found: no guessing at audit ids. */
	switch (store_grant_find(a->org_id, a->user_id, grant, req->name)) {
	case 0:
		break;
	case 1:
		resp_error(resp, 404, "no matching grant for that audit_id");
		return;
	default:
		db_fail(resp, "run report");
		return;
	}
	if (tool_find(a->org_id, req->name, &t, resp) == -1)
		return;

	if ((marked = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (store_begin() == -1) {
		db_fail(resp, "run report");
		goto out;
	}
	if (report_mark(a, &t, verdict, detail, exit_code, marked) == -1) {
		db_fail(resp, "run report");
		goto out;
	}
	la.tool = t.name;
	la.action = "REPORT";
	la.status = 200;
	la.has_exit = 1;
	la.exit_code = exit_code;
	la.verdict = verdict;
	la.grant_id = grant;
	/* The row's path as treg writes a report's. */
	(void)snprintf(path, sizeof(path), "exit=%lld verdict=%s",
	    (long long)exit_code, verdict);
	la.path = path;
	if ((rid = audit_local(a, &la)) == -1 || store_commit() == -1) {
		db_fail(resp, "run report");
		goto out;
	}
	resp_ok(resp, json_pack("{s:b, s:b, s:I, s:I, s:O}", "recorded", 1,
	    "ok", 1, "audit_id", (json_int_t)grant, "report_id",
	    (json_int_t)rid, "marked_invalid", marked));
 out:
	json_decref(marked);
	tool_row_clear(&t);
}

/* ------------------------------------------------------------------ */
/* Reads.                                                              */

/* A secret the run report marked, for its answer (NULL: not listed). */
static int
marked_name(const char *name, void *arg)
{
	if (arg != NULL)
		json_array_append_new(arg, json_string(name));
	return (0);
}

/*
 * A gated caller's access list as JSON, for the store to filter by;
 * NULL (no filter) for owners and members without a list.  To be freed.
 */
static char *
access_text(const struct auth *a)
{
	char	*access;

	if (a->role == ROLE_OWNER || !json_is_array(a->tool_access))
		return (NULL);
	if ((access = json_dumps(a->tool_access, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	return (access);
}

static json_t *
text_or_null(const char *s)
{
	return (s != NULL ? json_string(s) : json_null());
}

static json_t *
int_or_null(int has, int64_t v)
{
	return (has ? json_integer(v) : json_null());
}

/* The hosts alive while GET /calls reads (vault_hosts.c). */
static int64_t	*calls_alive;
static size_t	 ncalls_alive;

/*
 * A relayed call without its end: running while the host that sent it
 * is alive (it keeps an end it cannot write yet until it can), else
 * interrupted, as a server run.  NULL: it has its end, or is no call.
 */
static const char *
call_outcome(const struct store_calls_row *r)
{
	const struct store_call	*c = &r->c;

	if (strcmp(c->kind, "call") != 0 || c->refused_by != NULL ||
	    c->has_status || r->has_bytes)
		return (NULL);
	return (c->host != 0 && hosts_is_alive(c->host, calls_alive,
	    ncalls_alive) ? "running" : "interrupted");
}

static json_t *
call_view(const struct store_calls_row *r)
{
	const struct store_call	*c = &r->c;
	json_t			*o, *argv = NULL;

	if (c->argv != NULL)
		argv = json_loads(c->argv, 0, NULL);
	o = json_pack("{s:I, s:s, s:s?, s:s?, s:o, s:o, s:s, s:s?, s:o, "
	    "s:s, s:s?, s:o?, s:o, s:s?}",
	    "id", (json_int_t)r->id,
	    "user_email", c->user_email,
	    "tool_name", c->tool_name,
	    "method", c->method,
	    "path", c->path != NULL ? json_string(c->path) :
	    compat_argv_path(argv),
	    "status_code", int_or_null(c->has_status, c->status_code),
	    "kind", c->kind,
	    "refused_by", c->refused_by,
	    "duration_ms", int_or_null(c->has_duration, c->duration_ms),
	    "created_at", c->created_at,
	    "action", c->action,
	    "argv", argv,
	    "exit_code", int_or_null(c->has_exit, c->exit_code),
	    "verdict", c->verdict);
	if (o == NULL)
		fatalx("%s: json_pack", __func__);
	json_object_set_new(o, "outcome", text_or_null(call_outcome(r)));
	call_view_where(r, o);
	return (o);
}

/*
 * Where a record came from (SPEC 6a, 8): a keyless run's request names
 * its run ("s12", as GET /runs shows it) and the host it went to; a
 * relayed call is "relay", a grant, denial or report "local".
 */
static void
call_view_where(const struct store_calls_row *r, json_t *o)
{
	const struct store_call	*c = &r->c;
	char			 id[32];

	if (c->run_id != 0) {
		snprintf(id, sizeof(id), "s%lld", (long long)c->run_id);
		json_object_set_new(o, "run_id", json_string(id));
	} else
		json_object_set_new(o, "run_id", json_null());
	json_object_set_new(o, "where", json_string(c->place != NULL ?
	    c->place : strcmp(c->kind, "call") == 0 ? "relay" : "local"));
	json_object_set_new(o, "host", text_or_null(c->target_host));
	/* The runtime it came from (X-Treg-Client), "" unreported. */
	json_object_set_new(o, "client", json_string(c->client != NULL ?
	    c->client : ""));
}

/* GET /health's rows: treg's view and its needs_reconnect. */
struct health_rows {
	int64_t		 org_id;
	json_t		*arr;
};

static int
health_view(const struct store_secret_row *r, void *arg)
{
	struct health_rows	*h = arg;
	json_t			*o;
	int			 reconnect;

	reconnect = health_secret_view(h->org_id, r, &o);
	json_object_set_new(o, "needs_reconnect", json_boolean(reconnect));
	json_array_append_new(h->arr, o);
	return (0);
}

static json_t *
audit_view(const struct store_calls_row *r)
{
	const struct store_call	*c = &r->c;
	json_t			*o;

	o = json_pack("{s:I, s:s, s:s, s:s?, s:s, s:s?, s:s?, s:o, s:s}",
	    "id", (json_int_t)r->id,
	    "org", r->org_slug,
	    "user_email", c->user_email,
	    "tool_name", c->tool_name,
	    "kind", c->kind,
	    "action", c->action,
	    "refused_by", c->refused_by,
	    "status_code", int_or_null(c->has_status, c->status_code),
	    "created_at", c->created_at);
	if (o == NULL)
		fatalx("%s: json_pack", __func__);
	call_view_where(r, o);
	return (o);
}

/* A page of GET /calls or tregctl show audit being filled. */
struct calls_page {
	const struct auth	*auth;	/* NULL: every row */
	json_t			*list;
	size_t			 limit;
	json_t			*(*view)(const struct store_calls_row *);
};

/*
 * A gated member sees a row of no tool, of a tool on its list, or of a
 * tool in a skill on its list.
 */
static int
calls_row_visible(const struct auth *a, const struct store_calls_row *r)
{
	struct store_tool	 t;
	int			 ok;

	if (a == NULL || r->c.tool_name == NULL)
		return (1);
	/* A project scope needs the tool's project: no shortcut then. */
	if (!a->projects_scoped && tool_usable(a, r->c.tool_name, NULL, 0))
		return (1);
	if (store_tool_by_name(a->org_id, r->c.tool_name, &t) != 0)
		return (0);
	ok = tool_usable(a, r->c.tool_name, t.bundle, t.project_id);
	store_tool_clear(&t);
	return (ok);
}

static int
calls_row(const struct store_calls_row *r, void *arg)
{
	struct calls_page	*pg = arg;

	if (!calls_row_visible(pg->auth, r))
		return (0);
	json_array_append_new(pg->list, pg->view(r));
	return (json_array_size(pg->list) >= pg->limit);
}

static json_t *
calls_query(int64_t org, const struct auth *a, size_t limit, int64_t before,
    int64_t run, json_t *(*view)(const struct store_calls_row *))
{
	struct calls_page	 pg;
	int			 rc;

	pg.auth = a;
	pg.limit = limit;
	pg.view = view;
	if ((pg.list = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (run != 0)
		rc = store_calls_run_page(org, run, before, calls_row, &pg);
	else
		rc = store_calls_page(org, before, calls_row, &pg);
	if (rc != 0) {
		json_decref(pg.list);
		return (NULL);
	}
	return (pg.list);
}

/*
 * GET /calls: the org's call audit, newest first, paged with before_id.
 * Every role of the org reads the org's rows, as in treg: the audit is
 * the team's shared record and its argv is masked.  Only a gated member
 * (an access list) does not see the rows of tools hidden from it, as in
 * GET /runs and every other listing.
 */
static void
calls_list(struct vault_req *req, struct vault_resp *resp)
{
	const struct auth	*a = req->auth;
	json_t			*arr;
	const char		*err = NULL;
	char			 buf[32];
	long long		 limit = CALLS_LIMIT_DEF, before = 0, run = 0;

	if (query_param(req->query, "limit", buf, sizeof(buf)) == 0) {
		limit = strtonum(buf, 1, CALLS_LIMIT_MAX, &err);
		if (err != NULL) {
			resp_error(resp, 422, "limit must be an integer from 1 "
			    "to %d", CALLS_LIMIT_MAX);
			return;
		}
	}
	if (query_param(req->query, "before_id", buf, sizeof(buf)) == 0) {
		before = strtonum(buf, 1, LLONG_MAX, &err);
		if (err != NULL) {
			resp_error(resp, 422, "before_id must be a positive "
			    "integer");
			return;
		}
	}
	/* A run's requests: its id as GET /runs shows it, or the number. */
	if (query_param(req->query, "run_id", buf, sizeof(buf)) == 0) {
		run = strtonum(buf[0] == 's' ? buf + 1 : buf, 1, LLONG_MAX,
		    &err);
		if (err != NULL) {
			resp_error(resp, 422, "run_id must be the id of a "
			    "server run (s12, or 12)");
			return;
		}
	}
	if ((calls_alive = hosts_alive(&ncalls_alive)) == NULL)
		arr = NULL;
	else
		arr = calls_query(a->org_id, a, limit, before, run, call_view);
	free(calls_alive);
	calls_alive = NULL;
	if (arr == NULL) {
		db_fail(resp, "calls");
		return;
	}
	resp_ok(resp, arr);
}

/*
 * GET /health: the credential health of the org's secrets (params are
 * configuration and have none).  A member with an access list sees the
 * secrets of the tools and skills on it, and the ones it created.
 */
static void
health_list(struct vault_req *req, struct vault_resp *resp)
{
	const struct auth	*a = req->auth;
	struct health_rows	 h = { a->org_id, json_array() };
	char			*access;
	int			 rc;

	access = access_text(a);
	rc = store_health(a->org_id, access, a->user_id, health_view, &h);
	free(access);
	if (rc == -1) {
		json_decref(h.arr);
		db_fail(resp, "health");
		return;
	}
	resp_ok(resp, h.arr);
}

/*
 * tregctl show audit [org]: the newest call and local-run records of one
 * org (by slug, else by its name when only one org has it) or of all.
 */
int
ctl_show_audit(const struct ctl_request *cr, json_t **reply)
{
	int64_t		 org = 0;
	int		 rc, limit = AUDIT_CTL_MAX;

	if (cr->limit > 0 && cr->limit < AUDIT_CTL_MAX)
		limit = cr->limit;
	if (cr->org[0] != '\0' &&
	    (rc = store_org_find(cr->org, &org, NULL, 0)) != 0) {
		if (rc == -1)
			*reply = ctl_errorf("database error");
		else
			*reply = ctl_errorf(rc == 1 ? "no org '%s'" :
			    "more than one org is named '%s'; give its slug",
			    cr->org);
		return (-1);
	}
	if ((*reply = calls_query(org, NULL, limit, 0, 0,
	    audit_view)) == NULL) {
		*reply = ctl_errorf("database error");
		return (-1);
	}
	return (0);
}
