/*
 * The PostgreSQL engine's projects and usage counts (see
 * store_sqlite_project.c; the same rows, in PostgreSQL's words).
 */

#include <string.h>

#include "store_pg.h"

static int	pg_project_row(const PGresult *, int, void *);
static int	pg_usage_row(const PGresult *, int, void *);

int
pg_project_insert(const struct store_project *p, int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO projects (org_id, name, "
	    "slug, created_by, created_at) VALUES ($1, $2, $3, $4, $5) ON "
	    "CONFLICT DO NOTHING RETURNING id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, p->org_id);
	pgq_text(&q, p->name);
	pgq_text(&q, p->slug);
	pgq_text(&q, p->created_by);
	pgq_text(&q, p->created_at);
	return (pg_insert(&st, &q, id));
}

static int
pg_project_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_project	 p;

	memset(&p, 0, sizeof(p));
	p.id = pg_int(res, i, 0);
	p.org_id = pg_int(res, i, 1);
	p.name = pg_text(res, i, 2);
	p.slug = pg_text(res, i, 3);
	p.created_by = pg_text(res, i, 4);
	p.created_at = pg_text(res, i, 5);
	p.tool_count = pg_int(res, i, 6);
	return (e->fn.project(&p, e->arg));
}

int
pg_projects(int64_t org, store_project_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT p.id, p.org_id, p.name, "
	    "p.slug, p.created_by, p.created_at, (SELECT count(*) FROM "
	    "tools t WHERE t.project_id = p.id)::bigint FROM projects p "
	    "WHERE p.org_id = $1 ORDER BY p.id", 0 };
	struct store_each	 e = { .fn.project = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	return (pg_each(&st, &q, pg_project_row, &e));
}

/* In the caller's transaction: the tools freed first, then the row. */
int
pg_project_delete(int64_t org, int64_t id, int64_t *freed)
{
	static struct pg_stmt	 fr = { "WITH f AS (UPDATE tools SET "
	    "project_id = NULL WHERE org_id = $1 AND project_id = $2 "
	    "RETURNING 1) SELECT count(*)::bigint FROM f", 0 };
	static struct pg_stmt	 del = { "DELETE FROM projects WHERE "
	    "org_id = $1 AND id = $2", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, id);
	if (pg_value(&fr, &q, freed) == -1)
		return (-1);
	return (pg_changed(&del, &q));
}

int
pg_tool_project_set(int64_t org, int64_t tool, int64_t project)
{
	static struct pg_stmt	 st = { "UPDATE tools SET project_id = $3 "
	    "WHERE org_id = $1 AND id = $2", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, tool);
	pgq_intif(&q, project > 0, project);
	return (pg_changed(&st, &q));
}

/* A row of an id and a text (store_access_fn): store_pg_identity.c too. */
int
pg_access_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;

	return (e->fn.access(pg_int(res, i, 0), pg_text(res, i, 1),
	    e->arg));
}

int
pg_member_projects(int64_t org, store_access_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT user_id, project_access FROM "
	    "memberships WHERE org_id = $1 AND project_access IS NOT NULL "
	    "ORDER BY user_id", 0 };
	struct store_each	 e = { .fn.access = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	return (pg_each(&st, &q, pg_access_row, &e));
}

int
pg_member_projects_set(int64_t org, int64_t user, const char *json)
{
	static struct pg_stmt	 st = { "UPDATE memberships SET "
	    "project_access = $3 WHERE org_id = $1 AND user_id = $2", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, user);
	pgq_text(&q, json);
	return (pg_changed(&st, &q));
}

int
pg_invite_projects(int64_t id, char **json)
{
	static struct pg_stmt	 st = { "SELECT project_access FROM invites "
	    "WHERE id = $1", 0 };
	PGresult		*res;
	int			 rc;

	if ((rc = pg_row_of(&st, id, &res)) != 0)
		return (rc);
	*json = pg_strdup(res, 0, 0);
	PQclear(res);
	return (0);
}

int
pg_invite_projects_set(int64_t id, const char *json)
{
	static struct pg_stmt	 st = { "UPDATE invites SET project_access = "
	    "$2 WHERE id = $1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, id);
	pgq_text(&q, json);
	return (pg_changed(&st, &q));
}

/* ------------------------------------------------------------------ */
/* Usage.                                                              */

struct pg_usage {
	struct store_each	*e;
	char			 what;
};

static int
pg_usage_row(const PGresult *res, int i, void *arg)
{
	struct pg_usage		*u = arg;
	struct store_usage_row	 r;

	r.what = u->what;
	r.key = pg_text(res, i, 0);
	r.kind = pg_text(res, i, 1);
	r.n = pg_int(res, i, 2);
	return (u->e->fn.usage(&r, u->e->arg));
}

/* A local run is its grant or refusal, not its report too. */
int
pg_usage(int64_t org, const char *since, store_usage_fn fn, void *arg)
{
	static struct pg_stmt	 st[] = {
		{ "SELECT user_email, kind, count(*)::bigint FROM calls WHERE "
		    "org_id = $1 AND created_at >= $2 AND (action IS NULL OR "
		    "action <> 'REPORT') GROUP BY user_email, kind UNION ALL "
		    "SELECT user_email, 'server_run'::text, count(*)::bigint "
		    "FROM runs WHERE org_id = $1 AND created_at >= $2 GROUP BY "
		    "user_email ORDER BY 1, 2", 0 },
		{ "SELECT k, ''::text, sum(n)::bigint FROM (SELECT tool_name "
		    "AS k, count(*) AS n FROM calls WHERE org_id = $1 AND "
		    "created_at >= $2 AND (action IS NULL OR action <> "
		    "'REPORT') AND tool_name IS NOT NULL GROUP BY tool_name "
		    "UNION ALL SELECT tool, count(*) FROM runs WHERE org_id = "
		    "$1 AND created_at >= $2 GROUP BY tool) x GROUP BY k "
		    "ORDER BY k", 0 },
		{ "SELECT k, ''::text, sum(n)::bigint FROM (SELECT "
		    "substr(created_at, 1, 10) AS k, count(*) AS n FROM calls "
		    "WHERE org_id = $1 AND created_at >= $2 AND (action IS "
		    "NULL OR action <> 'REPORT') GROUP BY 1 UNION ALL SELECT "
		    "substr(created_at, 1, 10), count(*) FROM runs WHERE "
		    "org_id = $1 AND created_at >= $2 GROUP BY 1) x GROUP BY k "
		    "ORDER BY k", 0 },
	};
	static const char	 what[] = "utd";
	struct store_each	 e = { .fn.usage = fn, .arg = arg };
	struct pg_usage		 u = { &e, 0 };
	struct pgq		 q;
	size_t			 i;

	for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		pgq_init(&q);
		pgq_int(&q, org);
		pgq_text(&q, since);
		u.what = what[i];
		if (pg_each(&st[i], &q, pg_usage_row, &u) == -1)
			return (-1);
	}
	return (0);
}
