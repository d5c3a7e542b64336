/*
 * The sqlite engine's projects (a sub-scope of an org: tools filed under
 * one, members scoped to some) and the usage counts of an org, for
 * vault_project.c.
 */

#include <string.h>

#include "store_sqlite.h"

static int	sq_project_row(sqlite3_stmt *, void *);
static int	sq_usage_row(sqlite3_stmt *, void *);
static int	sq_usage_walk(const char *, char, int64_t, const char *,
		    struct store_each *);

int
sq_project_insert(const struct store_project *p, int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO projects (org_id, name, slug, "
	    "created_by, created_at) VALUES (:org, :name, :slug, :by, :at) "
	    "ON CONFLICT DO NOTHING")) == NULL)
		return (-1);
	sq_int(st, ":org", p->org_id);
	sq_text(st, ":name", p->name);
	sq_text(st, ":slug", p->slug);
	sq_text(st, ":by", p->created_by);
	sq_text(st, ":at", p->created_at);
	return (sq_insert(st, id));
}

static int
sq_project_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_project	 p;

	memset(&p, 0, sizeof(p));
	p.id = sq_cint(st, "id");
	p.org_id = sq_cint(st, "org_id");
	p.name = sq_ctext(st, "name");
	p.slug = sq_ctext(st, "slug");
	p.created_by = sq_ctext(st, "created_by");
	p.created_at = sq_ctext(st, "created_at");
	p.tool_count = sq_cint(st, "tools");
	return (e->fn.project(&p, e->arg));
}

int
sq_projects(int64_t org, store_project_fn fn, void *arg)
{
	struct store_each	 e = { .fn.project = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT p.id AS id, p.org_id AS org_id, "
	    "p.name AS name, p.slug AS slug, p.created_by AS created_by, "
	    "p.created_at AS created_at, (SELECT count(*) FROM tools t "
	    "WHERE t.project_id = p.id) AS tools FROM projects p "
	    "WHERE p.org_id = :org ORDER BY p.id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	return (sq_each(st, sq_project_row, &e));
}

/* In the caller's transaction: the tools freed first, then the row. */
int
sq_project_delete(int64_t org, int64_t id, int64_t *freed)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE tools SET project_id = NULL WHERE "
	    "org_id = :org AND project_id = :id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":id", id);
	if (sq_done(st) == -1)
		return (-1);
	*freed = sqlite3_changes(vault_db);
	if ((st = db_prepare("DELETE FROM projects WHERE id = :id AND "
	    "org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":id", id);
	return (sq_affected(st));
}

int
sq_tool_project_set(int64_t org, int64_t tool, int64_t project)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE tools SET project_id = :project WHERE "
	    "id = :id AND org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":id", tool);
	if (project > 0)
		sq_int(st, ":project", project);
	return (sq_affected(st));
}

/*
 * A row of an id and a text (store_access_fn), named user_id and access:
 * store_sqlite_identity.c too.
 */
int
sq_access_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;

	return (e->fn.access(sq_cint(st, "user_id"), sq_ctext(st, "access"),
	    e->arg));
}

int
sq_member_projects(int64_t org, store_access_fn fn, void *arg)
{
	struct store_each	 e = { .fn.access = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT user_id, project_access AS access FROM "
	    "memberships WHERE org_id = :org AND project_access IS NOT NULL "
	    "ORDER BY user_id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	return (sq_each(st, sq_access_row, &e));
}

int
sq_member_projects_set(int64_t org, int64_t user, const char *json)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE memberships SET project_access = "
	    ":access WHERE org_id = :org AND user_id = :user")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	sq_text(st, ":access", json);
	return (sq_affected(st));
}

int
sq_invite_projects(int64_t id, char **json)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT project_access AS access FROM invites "
	    "WHERE id = :id")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	if ((rc = sq_step(st)) == SQLITE_ROW)
		*json = sq_cdup(st, "access");
	return (sq_row_end(st, rc));
}

int
sq_invite_projects_set(int64_t id, const char *json)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE invites SET project_access = :access "
	    "WHERE id = :id")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	sq_text(st, ":access", json);
	return (sq_affected(st));
}

/* ------------------------------------------------------------------ */
/* Usage.                                                              */

struct sq_usage {
	struct store_each	*e;
	char			 what;
};

static int
sq_usage_row(sqlite3_stmt *st, void *arg)
{
	struct sq_usage		*u = arg;
	struct store_usage_row	 r;

	r.what = u->what;
	r.key = db_text(st, 0);
	r.kind = db_text(st, 1);
	r.n = sqlite3_column_int64(st, 2);
	return (u->e->fn.usage(&r, u->e->arg));
}

static int
sq_usage_walk(const char *sql, char what, int64_t org, const char *since,
    struct store_each *e)
{
	struct sq_usage	 u = { e, what };
	sqlite3_stmt	*st;

	if ((st = db_prepare(sql)) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_text(st, ":since", since);
	return (sq_each(st, sq_usage_row, &u));
}

/*
 * A local run is its grant (or its refusal): the report that follows
 * it is the same run, not another one.  Three GROUP BYs on the org's
 * time indexes, none reading a body (the audit keeps none).
 */
int
sq_usage(int64_t org, const char *since, store_usage_fn fn, void *arg)
{
	static const char *const q[][2] = {
		{ "u", "SELECT user_email, kind, count(*) FROM calls WHERE "
		    "org_id = :org AND created_at >= :since AND (action IS "
		    "NULL OR action <> 'REPORT') GROUP BY user_email, kind "
		    "UNION ALL SELECT user_email, 'server_run', count(*) FROM "
		    "runs WHERE org_id = :org AND created_at >= :since "
		    "GROUP BY user_email ORDER BY 1, 2" },
		{ "t", "SELECT k, '', sum(n) FROM (SELECT tool_name AS k, "
		    "count(*) AS n FROM calls WHERE org_id = :org AND "
		    "created_at >= :since AND (action IS NULL OR action <> "
		    "'REPORT') AND tool_name IS NOT NULL GROUP BY tool_name "
		    "UNION ALL SELECT tool, count(*) FROM runs WHERE org_id = "
		    ":org AND created_at >= :since GROUP BY tool) GROUP BY k "
		    "ORDER BY k" },
		{ "d", "SELECT k, '', sum(n) FROM (SELECT substr(created_at, "
		    "1, 10) AS k, count(*) AS n FROM calls WHERE org_id = :org "
		    "AND created_at >= :since AND (action IS NULL OR action <> "
		    "'REPORT') GROUP BY k UNION ALL SELECT substr(created_at, "
		    "1, 10), count(*) FROM runs WHERE org_id = :org AND "
		    "created_at >= :since GROUP BY 1) GROUP BY k ORDER BY k" },
	};
	struct store_each	 e = { .fn.usage = fn, .arg = arg };
	size_t			 i;

	for (i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		if (sq_usage_walk(q[i][1], q[i][0][0], org, since, &e) == -1)
			return (-1);
	return (0);
}
