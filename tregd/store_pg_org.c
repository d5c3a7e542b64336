/*
 * The PostgreSQL engine: identity rows as tregctl reads and removes them
 * (totals, the members, agents and secrets of an org, a user's deletion).
 */

#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

/* One row-less answer: a count, an id, or whether a row exists. */
static int
pg_one(struct pg_stmt *st, const struct pgq *q, int64_t *v)
{
	PGresult	*res;
	int		 rc = 1;

	if ((res = pg_run(st, q)) == NULL)
		return (-1);
	if (PQntuples(res) >= 1) {
		if (v != NULL)
			*v = pg_int(res, 0, 0);
		rc = 0;
	}
	PQclear(res);
	return (rc);
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

	if ((res = pg_run(&st, NULL)) == NULL)
		return (-1);
	if (PQntuples(res) != 1) {
		PQclear(res);
		return (-1);
	}
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

int
pg_org_members(int64_t org, int agents, store_org_member_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT m.user_id, u.email, m.role, "
	    "m.tool_access, m.local_run_enabled, m.agent_name, m.created_at "
	    "FROM memberships m JOIN users u ON u.id = m.user_id "
	    "WHERE m.org_id = $1 AND u.is_agent = $2 ORDER BY m.id", 0 };
	struct store_org_member	 m;
	struct pgq		 q;
	PGresult		*res;
	int			 i, stop = 0;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, agents != 0);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	for (i = 0; i < PQntuples(res) && stop == 0; i++) {
		memset(&m, 0, sizeof(m));
		m.user_id = pg_int(res, i, 0);
		m.email = pg_text(res, i, 1);
		m.role = pg_text(res, i, 2);
		m.tool_access = pg_ntext(res, i, 3);
		m.local_run_enabled = pg_int(res, i, 4) != 0;
		m.agent_name = pg_text(res, i, 5);
		m.created_at = pg_text(res, i, 6);
		stop = fn(&m, arg);
	}
	PQclear(res);
	return (stop < 0 ? -1 : 0);
}

int
pg_org_secrets(int64_t org, store_secret_row_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT s.id, s.name, s.kind, "
	    "coalesce(u.email, ''), s.bundle_id, s.status, s.status_detail, "
	    "s.checked_at, s.created_at FROM secrets s LEFT JOIN users u ON "
	    "u.id = s.owner_id WHERE s.org_id = $1 ORDER BY s.id", 0 };
	struct store_secret_row	 s;
	struct pgq		 q;
	PGresult		*res;
	int			 i, stop = 0;

	pgq_init(&q);
	pgq_int(&q, org);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	for (i = 0; i < PQntuples(res) && stop == 0; i++) {
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
		stop = fn(&s, arg);
	}
	PQclear(res);
	return (stop < 0 ? -1 : 0);
}

int
pg_user_by_email(const char *email, int64_t *id, int *is_agent)
{
	static struct pg_stmt	 st = { "SELECT id, is_agent FROM users "
	    "WHERE email = $1", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 rc = 1;

	pgq_init(&q);
	pgq_text(&q, email);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	if (PQntuples(res) == 1) {
		*id = pg_int(res, 0, 0);
		*is_agent = pg_int(res, 0, 1) != 0;
		rc = 0;
	}
	PQclear(res);
	return (rc);
}

int
pg_user_sole_owned(int64_t uid, store_org_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT o.id, o.slug FROM "
	    "memberships m JOIN orgs o ON o.id = m.org_id WHERE "
	    "m.user_id = $1 AND m.role = 'owner' AND NOT EXISTS (SELECT 1 "
	    "FROM memberships x WHERE x.org_id = m.org_id AND "
	    "x.role = 'owner' AND x.user_id <> $1) ORDER BY o.id", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 i, stop = 0;

	pgq_init(&q);
	pgq_int(&q, uid);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	for (i = 0; i < PQntuples(res) && stop == 0; i++)
		stop = fn(pg_int(res, i, 0), pg_text(res, i, 1), arg);
	PQclear(res);
	return (stop < 0 ? -1 : 0);
}

int
pg_user_first_org(int64_t uid, int64_t *org)
{
	static struct pg_stmt	 st = { "SELECT org_id FROM memberships "
	    "WHERE user_id = $1 ORDER BY org_id LIMIT 1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, uid);
	return (pg_one(&st, &q, org));
}

int
pg_user_delete(int64_t uid)
{
	static struct pg_stmt	 st = { "DELETE FROM users WHERE id = $1", 0 };
	struct pgq		 q;
	PGresult		*res;

	pgq_init(&q);
	pgq_int(&q, uid);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	PQclear(res);
	return (0);
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
	return (pg_one(&st, &q, NULL));
}
