/*
 * vault_project.c: treg's projects, a sub-scope inside an org (issue 24),
 * and an org's usage counts.  A tool is filed under one project or is
 * org-wide; a membership (a person's or an agent's) and an invite carry
 * project_access, null for the whole org or the ids of the projects it
 * may use.  The rule itself is project_allows() and tool_usable() in
 * vault_access.c; this file keeps the rows and their routes:
 *
 *	POST   /orgs/{id}/projects		admin: a project
 *	GET    /orgs/{id}/projects		the caller's projects
 *	DELETE /orgs/{id}/projects/{pid}	admin: its tools become org-wide
 *	GET    /orgs/{id}/usage?days=N		admin: counts, never bodies
 *
 * and, around the member, agent and invite routes of vault_member.c (as
 * vault_call.c does for daily_call_cap), the project_access a body sends.
 * A list naming every project is stored as null, so a member scoped so
 * keeps every project made later (treg's rule); deleting a project never
 * widens anyone: a scope losing its last project stays [] (org-wide
 * tools only, which now include the deleted project's).
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vault.h"

#define PROJECTS_MAX		256	/* projects in one org */
#define USAGE_DAYS_DEF		30
#define USAGE_DAYS_MAX		365

/* The org's projects, read once for a request. */
struct project_set {
	size_t		 n;
	int64_t		 id[PROJECTS_MAX];
	char		 slug[PROJECTS_MAX][NAME_LEN_MAX + 1];
	json_t		*views;		/* or NULL: not wanted */
	const struct auth *a;		/* views: only the caller's */
};

/* GET /orgs/{id}/usage, being added up. */
struct usage_sum {
	json_t		*totals;
	json_t		*users;		/* email: counts */
	json_t		*tools;
	json_t		*days;
};

/* The names of the tools a caller may use (project_tool_names()). */
struct usable {
	const struct auth	*a;
	json_t			*names;
};

static int	 project_row(const struct store_project *, void *);
static int	 usable_name(const struct store_tool_item *, void *);
static int	 project_set_load(int64_t, struct project_set *);
static int	 project_find(const struct project_set *, json_t *);
static void	 ref_phrase(json_t *, char *, size_t);
static int	 project_access_body(struct vault_req *, struct vault_resp *,
		    int64_t, int *, char **);
static int	 project_owner_refused(struct vault_req *, struct vault_resp *);
static int	 role_row(const struct store_membership *, void *);
static int	 access_row(int64_t, const char *, void *);
static json_t	*access_view(const char *);
static int	 sweep_row(int64_t, const char *, void *);
static int	 usage_row(const struct store_usage_row *, void *);
static void	 usage_bump(json_t *, const char *, json_int_t);
static json_t	*usage_sorted(json_t *, const char *, int);
static int	 usage_cmp(const void *, const void *);

static void	 projects_create(struct vault_req *, struct vault_resp *);
static void	 projects_list(struct vault_req *, struct vault_resp *);
static void	 project_delete(struct vault_req *, struct vault_resp *);
static void	 org_usage(struct vault_req *, struct vault_resp *);

/* Like vault_org_routes: the role that counts is checked by org_enter(). */
const struct vault_route vault_project_routes[] = {
	{ ROUTE_PROJECTS_CREATE,	ROLE_VIEWER,	projects_create },
	{ ROUTE_PROJECTS_LIST,		ROLE_VIEWER,	projects_list },
	{ ROUTE_PROJECT_DELETE,		ROLE_VIEWER,	project_delete },
	{ ROUTE_ORG_USAGE,		ROLE_VIEWER,	org_usage },
	{ ROUTE_NONE,			ROLE_NONE,	NULL }
};

/* ------------------------------------------------------------------ */
/* The org's projects.                                                 */

static int
project_row(const struct store_project *p, void *arg)
{
	struct project_set	*s = arg;
	json_t			*v;

	if (s->n >= PROJECTS_MAX)
		return (1);
	s->id[s->n] = p->id;
	strlcpy(s->slug[s->n], p->slug, sizeof(s->slug[s->n]));
	s->n++;
	if (s->views == NULL || (s->a != NULL && !project_allows(s->a, p->id)))
		return (0);
	if ((v = json_pack("{s:I,s:s,s:s,s:s,s:s,s:I}", "id",
	    (json_int_t)p->id, "name", p->name, "slug", p->slug,
	    "created_by", p->created_by, "created_at", p->created_at,
	    "tool_count", (json_int_t)p->tool_count)) == NULL)
		fatalx("%s: json_pack", __func__);
	json_array_append_new(s->views, v);
	return (0);
}

static int
project_set_load(int64_t org, struct project_set *s)
{
	s->n = 0;
	return (store_projects(org, project_row, s));
}

/*
 * A reference as treg takes it: an id (a number, or a string of
 * digits) or a slug (a name slugified, as it was when made).  Its index
 * in the set, or -1.
 */
static int
project_find(const struct project_set *s, json_t *ref)
{
	const char	*str, *p;
	char		 slug[NAME_LEN_MAX + 1];
	int64_t		 id = -1;
	size_t		 i;

	if (json_is_integer(ref))
		id = json_integer_value(ref);
	else if (json_is_string(ref)) {
		str = json_string_value(ref);
		for (p = str; *p != '\0' && isdigit((unsigned char)*p); p++)
			;
		if (*str != '\0' && *p == '\0')
			id = strtonum(str, 1, INT64_MAX, NULL);
		else {
			org_slugify(str, slug, sizeof(slug));
			for (i = 0; i < s->n; i++)
				if (strcmp(s->slug[i], slug) == 0)
					return ((int)i);
			return (-1);
		}
	} else
		return (-1);
	for (i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return ((int)i);
	return (-1);
}

/* A reference as treg's refusal quotes it: 'slug' or a bare number. */
static void
ref_phrase(json_t *ref, char *buf, size_t len)
{
	if (json_is_integer(ref))
		snprintf(buf, len, "%lld", (long long)json_integer_value(ref));
	else if (json_is_string(ref))
		snprintf(buf, len, "'%s'", json_string_value(ref));
	else
		strlcpy(buf, "(not a slug or an id)", len);
}

/* ------------------------------------------------------------------ */
/* Routes.                                                             */

static void
projects_create(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx		 ctx;
	struct store_project	 p;
	const char		*raw = NULL;
	char			 name[NAME_LEN_MAX + 1], slug[NAME_LEN_MAX + 1];
	char			 now[32], *s, *e;
	int64_t			 id;
	int			 rc;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1 ||
	    body_str(req, resp, "name", 1, NAME_LEN_MAX, &raw) == -1)
		return;
	strlcpy(name, raw, sizeof(name));
	for (s = name; isspace((unsigned char)*s); s++)
		;
	for (e = s + strlen(s); e > s && isspace((unsigned char)e[-1]); e--)
		;
	*e = '\0';
	org_slugify(s, slug, sizeof(slug));
	for (e = s; *e != '\0' && !isalnum((unsigned char)*e); e++)
		;
	if (*e == '\0' || !valid_name(s)) {
		resp_error(resp, 422, "name is required");
		return;
	}
	memset(&p, 0, sizeof(p));
	now_iso(now, sizeof(now));
	p.org_id = ctx.org_id;
	p.name = s;
	p.slug = slug;
	p.created_by = req->auth->email;
	p.created_at = now;
	if ((rc = store_project_insert(&p, &id)) == STORE_CONFLICT) {
		resp_error(resp, 409, "a project '%s' already exists in this "
		    "team", slug);
		return;
	}
	if (rc != 0) {
		db_fail(resp, "project");
		return;
	}
	log_info("project %lld '%s' of org %lld made by %s", (long long)id,
	    slug, (long long)ctx.org_id, req->auth->email);
	resp_ok(resp, json_pack("{s:I,s:s,s:s,s:s,s:s,s:i}", "id",
	    (json_int_t)id, "name", s, "slug", slug, "created_by",
	    req->auth->email, "created_at", now, "tool_count", 0));
}

/* A member scoped to some projects sees those (the ACL hides them). */
static void
projects_list(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx		 ctx;
	struct project_set	*s;

	if (req->id1 != req->auth->org_id) {
		resp_error(resp, 403, "use this team's token");
		return;
	}
	if (org_enter(req, resp, ROLE_VIEWER, &ctx) == -1)
		return;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		fatal("%s: calloc", __func__);
	if ((s->views = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	s->a = req->auth;
	if (project_set_load(ctx.org_id, s) == -1) {
		json_decref(s->views);
		db_fail(resp, "projects");
	} else
		resp_ok(resp, s->views);
	free(s);
}

/* A membership's list without the deleted project (sweep_row). */
struct sweep {
	int64_t		 gone;
	json_t		*users;		/* [user, new list text] */
};

static int
sweep_row(int64_t user, const char *text, void *arg)
{
	struct sweep	*sw = arg;
	json_t		*v, *keep, *e;
	size_t		 i;
	int		 hit = 0;
	char		*out;

	if ((v = json_loads(text, 0, NULL)) == NULL || !json_is_array(v)) {
		json_decref(v);
		return (0);
	}
	if ((keep = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	json_array_foreach(v, i, e) {
		if (json_is_integer(e) && json_integer_value(e) == sw->gone)
			hit = 1;
		else
			json_array_append(keep, e);
	}
	/* [] stays []: null would widen the member to every project. */
	if (hit) {
		if ((out = json_dumps(keep, JSON_COMPACT)) == NULL)
			fatalx("%s: json_dumps", __func__);
		json_array_append_new(sw->users, json_pack("[I,s]",
		    (json_int_t)user, out));
		free(out);
	}
	json_decref(keep);
	json_decref(v);
	return (0);
}

static void
project_delete(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	struct sweep	 sw;
	json_t		*e;
	int64_t		 freed;
	size_t		 i;
	int		 rc;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1 ||
	    db_begin(resp) == -1)
		return;
	sw.gone = req->id2;
	if ((sw.users = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	/* 404 across orgs: another org's ids are never confirmed. */
	if ((rc = store_project_delete(ctx.org_id, req->id2, &freed)) == 1) {
		resp_refuse(resp, 404, "unknown project");
		goto out;
	}
	if (rc == -1 || store_member_projects(ctx.org_id, sweep_row,
	    &sw) == -1)
		goto fail;
	json_array_foreach(sw.users, i, e)
		if (store_member_projects_set(ctx.org_id,
		    json_integer_value(json_array_get(e, 0)),
		    json_string_value(json_array_get(e, 1))) == -1)
			goto fail;
	if (db_commit(resp) == -1)
		goto out;
	log_info("project %lld of org %lld deleted by %s (%lld tools made "
	    "org-wide)", (long long)req->id2, (long long)ctx.org_id,
	    req->auth->email, (long long)freed);
	resp_ok(resp, json_pack("{s:I,s:I}", "deleted", (json_int_t)req->id2,
	    "tools_made_org_wide", (json_int_t)freed));
	goto out;
 fail:
	db_fail(resp, "delete project");
 out:
	json_decref(sw.users);
}

/* ------------------------------------------------------------------ */
/* Usage.                                                              */

static void
usage_bump(json_t *o, const char *k, json_int_t n)
{
	json_t	*v = json_object_get(o, k);

	json_object_set_new(o, k, json_integer(json_integer_value(v) + n));
}

static int
usage_row(const struct store_usage_row *r, void *arg)
{
	struct usage_sum	*u = arg;
	const char		*kind = r->kind;
	json_t			*who;

	switch (r->what) {
	case 'u':
		/* treg folds an unexpected kind into "call". */
		if (strcmp(kind, "local_run") != 0 &&
		    strcmp(kind, "server_run") != 0)
			kind = "call";
		if ((who = json_object_get(u->users, r->key)) == NULL) {
			if ((who = json_pack("{s:s,s:i,s:i,s:i}",
			    "user_email", r->key, "call", 0, "local_run", 0,
			    "server_run", 0)) == NULL)
				fatalx("%s: json_pack", __func__);
			json_object_set_new(u->users, r->key, who);
		}
		usage_bump(who, kind, r->n);
		usage_bump(who, "total", r->n);
		usage_bump(u->totals, kind, r->n);
		usage_bump(u->totals, "total", r->n);
		break;
	case 't':
		usage_bump(u->tools, r->key, r->n);
		break;
	case 'd':
		usage_bump(u->days, r->key, r->n);
		break;
	}
	return (0);
}

/* By total, most first; ties by name (a stable answer). */
static int
usage_cmp(const void *a, const void *b)
{
	json_t		*x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t	 tx, ty;

	tx = json_integer_value(json_object_get(x, "total"));
	ty = json_integer_value(json_object_get(y, "total"));
	if (tx != ty)
		return (tx > ty ? -1 : 1);
	return (strcmp(json_string_value(json_object_get(x, "k")),
	    json_string_value(json_object_get(y, "k"))));
}

/*
 * An object of counts as treg's list: [{name: k, total: n}] by total
 * (key "name"), or by key (sorted 0, key "day"); users (key NULL) are
 * already rows.
 */
static json_t *
usage_sorted(json_t *o, const char *key, int by_total)
{
	json_t		**rows, *out, *v;
	const char	*k;
	size_t		 n = 0, i;

	if ((rows = calloc(json_object_size(o) + 1, sizeof(*rows))) == NULL)
		fatal("%s: calloc", __func__);
	json_object_foreach(o, k, v) {
		if (key == NULL)
			rows[n] = json_copy(v);
		else
			rows[n] = json_pack("{s:s,s:O}", key, k, "total", v);
		json_object_set_new(rows[n], "k", json_string(k));
		n++;
	}
	/* json_object_foreach walks keys in order (JSON_PRESERVE_ORDER). */
	if (by_total)
		qsort(rows, n, sizeof(*rows), usage_cmp);
	if ((out = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	for (i = 0; i < n; i++) {
		json_object_del(rows[i], "k");
		json_array_append_new(out, rows[i]);
	}
	free(rows);
	return (out);
}

/*
 * Counts of the last days days (today and the days before it), by
 * person (calls, local runs, server runs), by tool and by day, read
 * from the audit: what treg's usage view shows, without its money
 * (tregd has no billing).
 */
static void
org_usage(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx		 ctx;
	struct usage_sum	 u;
	char			 buf[16], since[32];
	const char		*err = NULL;
	long long		 days = USAGE_DAYS_DEF;
	time_t			 t;
	struct tm		 tm;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	if (query_param(req->query, "days", buf, sizeof(buf)) == 0) {
		days = strtonum(buf, INT32_MIN, INT32_MAX, &err);
		if (err != NULL) {
			resp_error(resp, 422, "days must be a whole number");
			return;
		}
	}
	if (days < 1)
		days = 1;
	if (days > USAGE_DAYS_MAX)
		days = USAGE_DAYS_MAX;
	t = time(NULL);
	gmtime_r(&t, &tm);
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	t = timegm(&tm) - (time_t)(days - 1) * 86400;
	gmtime_r(&t, &tm);
	strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%S", &tm);
	memset(&u, 0, sizeof(u));
	u.totals = json_pack("{s:i,s:i,s:i,s:i}", "call", 0, "local_run", 0,
	    "server_run", 0, "total", 0);
	u.users = json_object();
	u.tools = json_object();
	u.days = json_object();
	if (u.totals == NULL || u.users == NULL || u.tools == NULL ||
	    u.days == NULL)
		fatalx("%s: json", __func__);
	if (store_usage(ctx.org_id, since, usage_row, &u) == -1)
		db_fail(resp, "usage");
	else
		resp_ok(resp, json_pack("{s:I,s:s,s:O,s:o,s:o,s:o}", "days",
		    (json_int_t)days, "since", since, "totals", u.totals,
		    "by_user", usage_sorted(u.users, NULL, 1),
		    "by_tool", usage_sorted(u.tools, "name", 1),
		    "by_day", usage_sorted(u.days, "day", 0)));
	json_decref(u.totals);
	json_decref(u.users);
	json_decref(u.tools);
	json_decref(u.days);
}

/* ------------------------------------------------------------------ */
/* A tool's project.                                                   */

int
project_field(struct vault_req *req, struct vault_resp *resp, json_t *spec,
    int *sent, int64_t *id)
{
	struct project_set	*s;
	json_t			*v;
	char			 ref[NAME_LEN_MAX + 8];
	int			 i;

	*sent = 0;
	*id = 0;
	if (spec == NULL || (v = json_object_get(spec, "project")) == NULL)
		return (0);
	*sent = 1;
	if (json_is_null(v) || (json_is_string(v) &&
	    *json_string_value(v) == '\0'))
		return (0);
	if ((s = calloc(1, sizeof(*s))) == NULL)
		fatal("%s: calloc", __func__);
	if (project_set_load(req->auth->org_id, s) == -1) {
		free(s);
		db_fail(resp, "project");
		return (-1);
	}
	if ((i = project_find(s, v)) == -1) {
		free(s);
		ref_phrase(v, ref, sizeof(ref));
		resp_refuse(resp, 404, "no project %s in this team", ref);
		return (-1);
	}
	*id = s->id[i];
	free(s);
	return (0);
}

/* ------------------------------------------------------------------ */
/* project_access around the member, agent and invite routes.          */

/*
 * The project_access of the body, checked against the org's projects
 * and stored as treg does: absent (*sent 0), null or every project
 * (*text NULL), else the ids, sorted, once each.  0, or -1 answered.
 */
static int
project_access_body(struct vault_req *req, struct vault_resp *resp,
    int64_t org, int *sent, char **text)
{
	struct project_set	*s;
	json_t			*v, *e, *ids = NULL;
	char			 ref[NAME_LEN_MAX + 8];
	unsigned char		 pick[PROJECTS_MAX];
	size_t			 i, n = 0;
	int			 k, rc = -1;

	*sent = 0;
	*text = NULL;
	if (req->body == NULL ||
	    (v = json_object_get(req->body, "project_access")) == NULL)
		return (0);
	*sent = 1;
	if (json_is_null(v))
		return (0);
	if (!json_is_array(v) || json_array_size(v) > PROJECT_ACCESS_MAX) {
		resp_error(resp, 422, "field 'project_access' must be null or "
		    "a list of at most %d project slugs or ids",
		    PROJECT_ACCESS_MAX);
		return (-1);
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		fatal("%s: calloc", __func__);
	if (project_set_load(org, s) == -1) {
		db_fail(resp, "project access");
		goto out;
	}
	memset(pick, 0, sizeof(pick));
	json_array_foreach(v, i, e) {
		if ((k = project_find(s, e)) == -1) {
			ref_phrase(e, ref, sizeof(ref));
			resp_error(resp, 422, "unknown project %s in this "
			    "team", ref);
			goto out;
		}
		n += !pick[k];
		pick[k] = 1;
	}
	rc = 0;
	/* Every project chosen: unrestricted, so later ones count too. */
	if (s->n > 0 && n == s->n)
		goto out;
	if ((ids = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	for (i = 0; i < s->n; i++)
		if (pick[i])
			json_array_append_new(ids, json_integer(s->id[i]));
	if ((*text = json_dumps(ids, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
 out:
	json_decref(ids);
	free(s);
	return (rc);
}

static int
role_row(const struct store_membership *m, void *arg)
{
	*(enum role *)arg = role_from_name(m->role);
	return (1);
}

/* treg: an owner always has full access; a scope on one is refused. */
static int
project_owner_refused(struct vault_req *req, struct vault_resp *resp)
{
	enum role	 r = ROLE_NONE;

	if (store_membership_get(req->id2, req->id1, role_row, &r) == -1) {
		db_fail(resp, "project access");
		return (-1);
	}
	if (r != ROLE_OWNER)
		return (0);
	resp_error(resp, 403, "an owner always has full access; it can't be "
	    "restricted");
	return (-1);
}

/* Only an admin of the org's own token gets this far (else: 403 later). */
int
project_view_before(struct vault_req *req, struct vault_resp *resp)
{
	char	*text = NULL;
	int	 sent;

	switch (req->route) {
	case ROUTE_MEMBER_ACCESS:
	case ROUTE_AGENTS_CREATE:
	case ROUTE_INVITES_CREATE:
		break;
	default:
		return (0);
	}
	if (req->auth == NULL || req->auth->org_id != req->id1 ||
	    req->auth->role < ROLE_ADMIN)
		return (0);
	if (project_access_body(req, resp, req->id1, &sent, &text) == -1)
		return (-1);
	if (sent && text != NULL && req->route == ROUTE_MEMBER_ACCESS &&
	    project_owner_refused(req, resp) == -1) {
		free(text);
		return (-1);
	}
	free(text);
	return (0);
}

static json_t *
access_view(const char *text)
{
	json_t	*v;

	if (text == NULL || (v = json_loads(text, 0, NULL)) == NULL)
		return (json_null());
	return (v);
}

static int
access_row(int64_t user, const char *text, void *arg)
{
	char	 key[24];

	snprintf(key, sizeof(key), "%lld", (long long)user);
	json_object_set_new(arg, key, access_view(text));
	return (0);
}

/*
 * "project_access" on every row of a member or agent listing (of the
 * HTTP routes and of tregctl's show members and show agents).
 */
void
project_access_views(int64_t org, json_t *list)
{
	json_t	*by_user, *e, *v;
	char	 key[24];
	size_t	 i;

	if ((by_user = json_object()) == NULL)
		fatal("%s: json_object", __func__);
	if (store_member_projects(org, access_row, by_user) == -1)
		log_warnx("project access: %s", store_error());
	json_array_foreach(list, i, e) {
		snprintf(key, sizeof(key), "%lld", (long long)
		    json_integer_value(json_object_get(e, "user_id")));
		v = json_object_get(by_user, key);
		json_object_set(e, "project_access", v != NULL ? v :
		    json_null());
	}
	json_decref(by_user);
}

void
project_view_after(struct vault_req *req, struct vault_resp *resp)
{
	json_int_t	 id;
	json_t		*one;
	char		*text = NULL;
	int		 sent, rc = 0;

	if (resp->status != 200 || resp->body == NULL)
		return;
	switch (req->route) {
	case ROUTE_MEMBERS_LIST:
	case ROUTE_AGENTS_LIST:
		project_access_views(req->id1, resp->body);
		return;
	case ROUTE_MEMBER_ACCESS:
	case ROUTE_AGENTS_CREATE:
	case ROUTE_INVITES_CREATE:
		break;
	default:
		return;
	}
	/* Checked by project_view_before(): the projects read again. */
	if (project_access_body(req, resp, req->id1, &sent, &text) == -1)
		return;
	if (req->route == ROUTE_INVITES_CREATE) {
		id = json_integer_value(json_object_get(resp->body, "id"));
		if (sent)
			rc = store_invite_projects_set(id, text);
	} else {
		id = json_integer_value(json_object_get(resp->body,
		    "user_id"));
		if (sent) {
			rc = store_member_projects_set(req->id1, id, text);
			json_object_set_new(resp->body, "project_access",
			    access_view(text));
		} else {
			/* Not sent: kept (a rotate never widens), shown. */
			if ((one = json_pack("[O]", resp->body)) == NULL)
				fatalx("%s: json_pack", __func__);
			project_access_views(req->id1, one);
			json_decref(one);
		}
	}
	free(text);
	if (rc == -1)
		db_fail(resp, "project access");
}

static int
usable_name(const struct store_tool_item *t, void *arg)
{
	struct usable	*u = arg;

	if (tool_usable(u->a, t->name, t->bundle, t->project_id))
		json_array_append_new(u->names, json_string(t->name));
	return (0);
}

json_t *
project_tool_names(int64_t org, const struct auth *a)
{
	struct store_sel	 sel;
	struct usable		 u;

	memset(&sel, 0, sizeof(sel));
	sel.org = org;
	sel.brief = 1;
	u.a = a;
	if ((u.names = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (store_tools(&sel, usable_name, &u) == -1) {
		json_decref(u.names);
		return (NULL);
	}
	return (u.names);
}

/* Deny rules (vault_policy.c): 0 when org has project id, 1 if not. */
int
project_of_org(int64_t org, int64_t id)
{
	struct project_set	*s;
	size_t			 i;
	int			 rc = 1;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		fatal("%s: calloc", __func__);
	if (project_set_load(org, s) == -1)
		rc = -1;
	for (i = 0; rc == 1 && i < s->n; i++)
		if (s->id[i] == id)
			rc = 0;
	free(s);
	return (rc);
}

/* In the accepting transaction: the invite's scope is the member's. */
int
project_invite_carry(int64_t invite, int64_t org, int64_t user)
{
	char	*text;
	int	 rc;

	if ((rc = store_invite_projects(invite, &text)) != 0)
		return (rc == 1 ? 0 : -1);
	rc = text == NULL ? 0 : store_member_projects_set(org, user, text);
	free(text);
	return (rc == -1 ? -1 : 0);
}
