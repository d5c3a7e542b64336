/*
 * The PostgreSQL engine: users and orgs, the totals and listings of
 * tregctl, a user's deletion, and the one-row helpers the engine's files
 * share.
 */

#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

/* An id list being filled, for pg_id_row(). */
struct pg_idlist {
	int64_t		*ids;
	size_t		 max;
	size_t		*n;
};

static int	pg_value_row(const PGresult *, int, void *);
static int	pg_id_row(const PGresult *, int, void *);
static int	pg_member_row(const PGresult *, int, void *);
static int	pg_secret_row(const PGresult *, int, void *);
static int	pg_org_row(const PGresult *, int, void *);
static int	pg_user_row(const PGresult *, int, void *);
static int	pg_org_full_row(const PGresult *, int, void *);

/* ------------------------------------------------------------------ */
/* Shared by the engine's files: rows, one row, one value, one write.  */

int
pg_each(struct pg_stmt *st, const struct pgq *q, pg_row_fn row, void *arg)
{
	PGresult	*res;
	int		 i, stop = 0;

	if ((res = pg_run(st, q)) == NULL)
		return (-1);
	for (i = 0; i < PQntuples(res) && stop == 0; i++)
		stop = row(res, i, arg);
	PQclear(res);
	return (stop < 0 ? -1 : 0);
}

int
pg_each_of(struct pg_stmt *st, int64_t id, pg_row_fn row, void *arg)
{
	struct pgq	 q;

	pgq_init(&q);
	pgq_int(&q, id);
	return (pg_each(st, &q, row, arg));
}

int
pg_row_of(struct pg_stmt *st, int64_t id, PGresult **res)
{
	struct pgq	 q;

	pgq_init(&q);
	pgq_int(&q, id);
	return (pg_row(st, &q, res));
}

int
pg_row_of_text(struct pg_stmt *st, const char *s, PGresult **res)
{
	struct pgq	 q;

	pgq_init(&q);
	pgq_text(&q, s);
	return (pg_row(st, &q, res));
}

int
pg_row(struct pg_stmt *st, const struct pgq *q, PGresult **res)
{
	if ((*res = pg_run(st, q)) == NULL)
		return (-1);
	if (PQntuples(*res) == 0) {
		PQclear(*res);
		*res = NULL;
		return (1);
	}
	return (0);
}

int
pg_one(struct pg_stmt *st, const struct pgq *q, pg_row_fn row, void *arg)
{
	PGresult	*res;
	int		 rc;

	if ((rc = pg_row(st, q, &res)) != 0)
		return (rc);
	rc = row != NULL && row(res, 0, arg) < 0 ? -1 : 0;
	PQclear(res);
	return (rc);
}

/* A row's first column to e->fn.text, whatever the callback answers. */
int
pg_text_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;

	e->fn.text(pg_text(res, i, 0), e->arg);
	return (0);
}

static int
pg_value_row(const PGresult *res, int i, void *arg)
{
	int64_t	*v = arg;

	*v = pg_int(res, i, 0);
	return (0);
}

/* The first column of the first row (a count, an id), or whether any. */
int
pg_value(struct pg_stmt *st, const struct pgq *q, int64_t *v)
{
	return (pg_one(st, q, v != NULL ? pg_value_row : NULL, v));
}

static int
pg_id_row(const PGresult *res, int i, void *arg)
{
	struct pg_idlist	*l = arg;

	l->ids[(*l->n)++] = pg_int(res, i, 0);
	return (*l->n >= l->max);
}

int
pg_ids(struct pg_stmt *st, const struct pgq *q, int64_t *ids, size_t max,
    size_t *n)
{
	struct pg_idlist	 l = { ids, max, n };

	if (*n >= max)
		return (0);
	return (pg_each(st, q, pg_id_row, &l));
}

int
pg_counts(struct store_counts *c)
{
	static struct pg_stmt	 st = { "SELECT "
	    "(SELECT count(*) FROM users), (SELECT count(*) FROM orgs), "
	    "(SELECT count(*) FROM tools), (SELECT count(*) FROM secrets), "
	    "(SELECT count(*) FROM runs), "
	    "((SELECT coalesce(sum(redacted), 0) FROM runs) + "
	    "(SELECT coalesce(sum(redacted), 0) FROM run_ends))::bigint, "
	    "(SELECT count(*) FROM calls WHERE refused_by IS NOT NULL OR "
	    "action = 'DENY'), "
	    "(SELECT count(*) FROM calls WHERE action = 'GRANT')", 0 };
	PGresult		*res;

	if (pg_row(&st, NULL, &res) != 0)
		return (-1);
	c->users = pg_int(res, 0, 0);
	c->orgs = pg_int(res, 0, 1);
	c->tools = pg_int(res, 0, 2);
	c->secrets = pg_int(res, 0, 3);
	c->runs = pg_int(res, 0, 4);
	c->redacted = pg_int(res, 0, 5);
	c->refusals = pg_int(res, 0, 6);
	c->grants = pg_int(res, 0, 7);
	PQclear(res);
	return (0);
}

static int
pg_member_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_org_member	 m;

	memset(&m, 0, sizeof(m));
	m.user_id = pg_int(res, i, 0);
	m.email = pg_text(res, i, 1);
	m.role = pg_text(res, i, 2);
	m.tool_access = pg_ntext(res, i, 3);
	m.local_run_enabled = pg_int(res, i, 4) != 0;
	m.agent_name = pg_text(res, i, 5);
	m.created_at = pg_text(res, i, 6);
	return (e->fn.member(&m, e->arg));
}

int
pg_org_members(int64_t org, int agents, store_org_member_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT m.user_id, u.email, m.role, "
	    "m.tool_access, m.local_run_enabled, m.agent_name, m.created_at "
	    "FROM memberships m JOIN users u ON u.id = m.user_id "
	    "WHERE m.org_id = $1 AND u.is_agent = $2 ORDER BY m.id", 0 };
	struct store_each	 e = { .fn.member = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, agents != 0);
	return (pg_each(&st, &q, pg_member_row, &e));
}

static int
pg_secret_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_secret_row	 s;

	memset(&s, 0, sizeof(s));
	s.id = pg_int(res, i, 0);
	s.name = pg_text(res, i, 1);
	s.kind = pg_text(res, i, 2);
	s.owner_email = pg_text(res, i, 3);
	s.bundle_id = pg_int(res, i, 4);
	s.status = pg_text(res, i, 5);
	s.status_detail = pg_ntext(res, i, 6);
	s.checked_at = pg_ntext(res, i, 7);
	s.created_at = pg_text(res, i, 8);
	return (e->fn.secret_row(&s, e->arg));
}

int
pg_org_secrets(int64_t org, store_secret_row_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT s.id, s.name, s.kind, "
	    "coalesce(u.email, ''), s.bundle_id, s.status, s.status_detail, "
	    "s.checked_at, s.created_at FROM secrets s LEFT JOIN users u ON "
	    "u.id = s.owner_id WHERE s.org_id = $1 ORDER BY s.id", 0 };
	struct store_each	 e = { .fn.secret_row = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	return (pg_each(&st, &q, pg_secret_row, &e));
}

/* GET /health's rows have the shape of tregctl's, without the owner. */
int
pg_health(int64_t org, const char *access, int64_t user,
    store_secret_row_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT s.id, s.name, s.kind, "
	    "coalesce((SELECT u.email FROM users u WHERE u.id = s.owner_id), "
	    "''), NULL::bigint, s.status, s.status_detail, s.checked_at, '' "
	    "FROM secrets s LEFT JOIN bundles sb ON sb.id = s.bundle_id "
	    "WHERE s.org_id = $1 AND ($2::text IS NULL "
	    "OR s.owner_id = $3 OR sb.name IN (SELECT "
	    "jsonb_array_elements_text($2::text::jsonb)) OR EXISTS (SELECT 1 "
	    "FROM tool_secrets ts JOIN tools t ON t.id = ts.tool_id LEFT JOIN "
	    "bundles b ON b.id = t.bundle_id WHERE ts.secret_id = s.id AND "
	    "(t.name IN (SELECT jsonb_array_elements_text($2::text::jsonb)) OR "
	    "b.name IN (SELECT jsonb_array_elements_text($2::text::jsonb))))) "
	    "ORDER BY s.id", 0 };
	struct store_each	 e = { .fn.secret_row = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_text(&q, access);
	pgq_int(&q, user);
	return (pg_each(&st, &q, pg_secret_row, &e));
}

int
pg_user_by_email(const char *email, int64_t *id, int *is_agent)
{
	static struct pg_stmt	 st = { "SELECT id, is_agent FROM users "
	    "WHERE email = $1", 0 };
	PGresult		*res;
	int			 rc;

	if ((rc = pg_row_of_text(&st, email, &res)) != 0)
		return (rc);
	*id = pg_int(res, 0, 0);
	*is_agent = pg_int(res, 0, 1) != 0;
	PQclear(res);
	return (0);
}

static int
pg_org_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;

	return (e->fn.org(pg_int(res, i, 0), pg_text(res, i, 1), e->arg));
}

int
pg_user_sole_owned(int64_t uid, store_org_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT o.id, o.slug FROM "
	    "memberships m JOIN orgs o ON o.id = m.org_id WHERE "
	    "m.user_id = $1 AND m.role = 'owner' AND NOT EXISTS (SELECT 1 "
	    "FROM memberships x WHERE x.org_id = m.org_id AND "
	    "x.role = 'owner' AND x.user_id <> $1) ORDER BY o.id", 0 };
	struct store_each	 e = { .fn.org = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, uid);
	return (pg_each(&st, &q, pg_org_row, &e));
}

int
pg_user_first_org(int64_t uid, int64_t *org)
{
	static struct pg_stmt	 st = { "SELECT org_id FROM memberships "
	    "WHERE user_id = $1 ORDER BY org_id LIMIT 1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, uid);
	return (pg_value(&st, &q, org));
}

int
pg_user_delete(int64_t uid)
{
	static struct pg_stmt	 st = { "DELETE FROM users WHERE id = $1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, uid);
	return (pg_changed(&st, &q) == -1 ? -1 : 0);
}

int
pg_member_of(int64_t user, int64_t org)
{
	static struct pg_stmt	 st = { "SELECT 1::bigint FROM memberships "
	    "WHERE user_id = $1 AND org_id = $2", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, user);
	pgq_int(&q, org);
	return (pg_value(&st, &q, NULL));
}

int
pg_insert(struct pg_stmt *st, const struct pgq *q, int64_t *id)
{
	switch (pg_value(st, q, id)) {
	case 0:
		return (0);
	case 1:
		return (STORE_CONFLICT);
	default:
		return (-1);
	}
}

int
pg_write(struct pg_stmt *st, const struct pgq *q, int64_t *id)
{
	PGresult	*res;
	int		 n;

	if ((res = pg_run(st, q)) == NULL)
		return (pg_unique_violation() ? STORE_TAKEN : -1);
	if (id != NULL && PQntuples(res) == 1)
		*id = pg_int(res, 0, 0);
	n = PQntuples(res) > 0 ? PQntuples(res) :
	    (int)strtonum(PQcmdTuples(res), 0, INT32_MAX, NULL);
	PQclear(res);
	return (n > 0 ? 0 : 1);
}

int
pg_changed(struct pg_stmt *st, const struct pgq *q)
{
	int	 rc;

	return ((rc = pg_write(st, q, NULL)) == STORE_TAKEN ? -1 : rc);
}

/* ------------------------------------------------------------------ */
/* Users and orgs.                                                     */

int
pg_user_insert(const char *email, int is_agent, const char *at, int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO users (email, is_agent, "
	    "created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING "
	    "RETURNING id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, email);
	pgq_int(&q, is_agent != 0);
	pgq_text(&q, at);
	return (pg_insert(&st, &q, id));
}

static int
pg_user_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_user	 u;

	memset(&u, 0, sizeof(u));
	u.id = pg_int(res, i, 0);
	u.email = pg_text(res, i, 1);
	u.is_agent = pg_int(res, i, 2) != 0;
	u.created_at = pg_text(res, i, 3);
	return (e->fn.user(&u, e->arg));
}

int
pg_users_each(store_user_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT id, email, is_agent, "
	    "created_at FROM users ORDER BY id", 0 };
	struct store_each	 e = { .fn.user = fn, .arg = arg };

	return (pg_each(&st, NULL, pg_user_row, &e));
}

int
pg_org_insert(const char *slug, const char *name, const char *at,
    int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO orgs (slug, name, "
	    "created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING "
	    "RETURNING id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, slug);
	pgq_text(&q, name);
	pgq_text(&q, at);
	return (pg_insert(&st, &q, id));
}

int
pg_org_remove(int64_t org)
{
	static struct pg_stmt	 agents = { "DELETE FROM users WHERE "
	    "is_agent = 1 AND id IN (SELECT user_id FROM memberships WHERE "
	    "org_id = $1)", 0 };
	/*
	 * The tools first: PostgreSQL checks tool_secrets' reference to a
	 * secret before the cascade from tools has removed the row.
	 */
	static struct pg_stmt	 tools = { "DELETE FROM tools WHERE "
	    "org_id = $1", 0 };
	static struct pg_stmt	 st = { "DELETE FROM orgs WHERE id = $1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	if (pg_changed(&agents, &q) == -1 || pg_changed(&tools, &q) == -1 ||
	    pg_changed(&st, &q) == -1)
		return (-1);
	return (0);
}

int
pg_org_find(const char *what, int64_t *id, char *slug, size_t len)
{
	static struct pg_stmt	 st = { "SELECT id, slug FROM orgs WHERE "
	    "slug = $1 UNION ALL SELECT id, slug FROM orgs WHERE name = $1 "
	    "AND NOT EXISTS (SELECT 1 FROM orgs WHERE slug = $1)", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 n;

	pgq_init(&q);
	pgq_text(&q, what);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	if ((n = PQntuples(res)) >= 1) {
		*id = pg_int(res, 0, 0);
		if (slug != NULL)
			pg_copy(slug, len, res, 0, 1);
	}
	PQclear(res);
	return (n == 0 ? 1 : n == 1 ? 0 : 2);
}

static int
pg_org_full_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_org_row	 o;

	memset(&o, 0, sizeof(o));
	o.id = pg_int(res, i, 0);
	o.slug = pg_text(res, i, 1);
	o.name = pg_text(res, i, 2);
	o.members = pg_int(res, i, 3);
	o.tools = pg_int(res, i, 4);
	o.secrets = pg_int(res, i, 5);
	o.created_at = pg_text(res, i, 6);
	return (e->fn.org_row(&o, e->arg));
}

int
pg_orgs_each(store_org_row_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT o.id, o.slug, o.name, "
	    "(SELECT count(*) FROM memberships WHERE org_id = o.id), "
	    "(SELECT count(*) FROM tools WHERE org_id = o.id), "
	    "(SELECT count(*) FROM secrets WHERE org_id = o.id), "
	    "o.created_at FROM orgs o ORDER BY o.id", 0 };
	struct store_each	 e = { .fn.org_row = fn, .arg = arg };

	return (pg_each(&st, NULL, pg_org_full_row, &e));
}

int
pg_org_tool_count(int64_t org, const char *access, int64_t *n)
{
	static struct pg_stmt	 st = { "SELECT count(*) FROM tools t "
	    "LEFT JOIN bundles b ON b.id = t.bundle_id WHERE t.org_id = $1 "
	    "AND ($2::text IS NULL OR t.name IN (SELECT "
	    "jsonb_array_elements_text($2::text::jsonb)) OR b.name IN (SELECT "
	    "jsonb_array_elements_text($2::text::jsonb)))", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_text(&q, access);
	return (pg_value(&st, &q, n) == -1 ? -1 : 0);
}

int
pg_org_has_tool(int64_t org, const char *name)
{
	static struct pg_stmt	 st = { "SELECT 1::bigint FROM tools WHERE "
	    "org_id = $1 AND name = $2 UNION ALL SELECT 1::bigint FROM "
	    "bundles WHERE org_id = $1 AND name = $2", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_text(&q, name);
	return (pg_value(&st, &q, NULL));
}
