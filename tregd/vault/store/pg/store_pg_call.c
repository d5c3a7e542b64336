/*
 * The PostgreSQL engine's part of the relay: how a call ended
 * (call_ends), the daily call counts (call_caps, one upsert: atomic
 * across hosts) and each membership's cap, and the tools of a host.
 */

#include <stdint.h>
#include <string.h>

#include "store_pg.h"

/* Each statement is its own snapshot, at no cost: BEGIN would add two. */
int
pg_read_begin(void)
{
	return (0);
}

void
pg_read_end(void)
{
}

int
pg_call_end_insert(const struct store_call_end *e)
{
	static struct pg_stmt	 st = { "INSERT INTO call_ends (call_id, "
	    "org_id, status_code, refused_by, duration_ms, bytes, redacted, "
	    "created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, e->call_id);
	pgq_int(&q, e->org_id);
	pgq_intif(&q, e->has_status, e->status_code);
	pgq_text(&q, e->refused_by);
	pgq_int(&q, e->duration_ms);
	pgq_int(&q, e->bytes);
	pgq_int(&q, e->redacted);
	pgq_text(&q, e->created_at);
	return (pg_do(&st, &q));
}

/* Counted up by n, never past the cap: the rows changed say if it was. */
int
pg_call_cap_take(int64_t org, int64_t user, const char *day, int64_t n,
    int64_t cap)
{
	static struct pg_stmt	 st = { "INSERT INTO call_caps (org_id, "
	    "user_id, day, n) VALUES ($1, $2, $3, $4) ON CONFLICT (org_id, "
	    "user_id, day) DO UPDATE SET n = call_caps.n + $4 WHERE "
	    "call_caps.n <= $5 - $4", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 taken;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, user);
	pgq_text(&q, day);
	pgq_int(&q, n);
	pgq_int(&q, cap);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	taken = strcmp(PQcmdTuples(res), "1") == 0;
	PQclear(res);
	return (taken ? 0 : 1);
}

int
pg_call_used(int64_t org, int64_t user, const char *day, int64_t *used)
{
	static struct pg_stmt	 st = { "SELECT n FROM call_caps WHERE "
	    "org_id = $1 AND user_id = $2 AND day = $3", 0 };
	struct pgq		 q;
	PGresult		*res;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, user);
	pgq_text(&q, day);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	if (PQntuples(res) == 1)
		*used = pg_int(res, 0, 0);
	PQclear(res);
	return (0);
}

int
pg_call_cap_get(int64_t org, int64_t user, int *has, int64_t *cap)
{
	static struct pg_stmt	 st = { "SELECT daily_call_cap FROM "
	    "memberships WHERE org_id = $1 AND user_id = $2", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 n;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, user);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	if ((n = PQntuples(res)) == 1)
		*cap = pg_intif(res, 0, 0, has);
	PQclear(res);
	return (n == 1 ? 0 : 1);
}

int
pg_call_cap_set(int64_t org, int64_t user, int has, int64_t cap)
{
	static struct pg_stmt	 st = { "UPDATE memberships SET "
	    "daily_call_cap = $3 WHERE org_id = $1 AND user_id = $2", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, user);
	pgq_intif(&q, has, cap);
	return (pg_do(&st, &q));
}

int
pg_tools_by_host(int64_t org, const char *host, store_tool_url_fn fn,
    void *arg)
{
	static struct pg_stmt	 st = { "SELECT id, name, base_url FROM tools "
	    "WHERE org_id = $1 AND host = $2 ORDER BY id", 0 };
	struct store_tool_url	 t;
	struct pgq		 q;
	PGresult		*res;
	int			 i, n, rc = 0;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_text(&q, host);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	n = PQntuples(res);
	for (i = 0; i < n && rc == 0; i++) {
		memset(&t, 0, sizeof(t));
		t.id = pg_int(res, i, 0);
		t.name = pg_text(res, i, 1);
		t.base_url = pg_text(res, i, 2);
		rc = fn(&t, arg);
	}
	PQclear(res);
	return (rc < 0 ? -1 : 0);
}

/* One row, moved by the triggers of migration 6. */
int
pg_registry_version(int64_t *v)
{
	static struct pg_stmt	 st = { "SELECT v FROM "
	    "tregd_registry_version", 0 };
	struct pgq		 q;
	PGresult		*res;

	pgq_init(&q);
	if (pg_row(&st, &q, &res) != 0)
		return (-1);
	*v = pg_int(res, 0, 0);
	PQclear(res);
	return (0);
}
