/*
 * The PostgreSQL engine: the audit records (server runs and their ends,
 * calls, grants, denials, reports) and their listings.  A listing walks
 * keyset pages of PG_PAGE rows, each starting strictly after the last
 * row of the previous one, so its cost is O(log N + rows) however long
 * the history and however early the caller stops.
 */

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

/* A server run's row and a local grant's, in one shape. */
#define RUNS_S								\
	"(SELECT 's'::text AS src, r.id, r.user_email, r.tool, "	\
	"r.argv, "							\
	"coalesce(e.exit_code, r.exit_code) AS exit_code, "		\
	"coalesce(e.duration_ms, r.duration_ms) AS duration_ms, "	\
	"CASE WHEN e.outcome IS NOT NULL THEN e.outcome "		\
	"WHEN r.exit_code IS NULL THEN NULL "				\
	"WHEN r.timed_out <> 0 THEN 'timed_out' "			\
	"WHEN r.exit_code = 0 THEN 'ok' ELSE 'failed' END AS outcome, "	\
	"r.created_at, o.slug, r.host, coalesce(q.n, 0) AS requests, "	\
	"r.client "							\
	"FROM runs r JOIN orgs o ON o.id = r.org_id "			\
	"LEFT JOIN run_ends e ON e.run_id = r.id "			\
	"LEFT JOIN run_requests q ON q.run_id = r.id WHERE "		\
	"(e.outcome IS NULL OR e.outcome <> 'not_run') AND "
#define RUNS_S_KEY							\
	" AND ($2::text IS NULL OR (r.created_at <= $2 AND "		\
	"(r.created_at, 's', r.id) < ($2, $3::text, $4))) "		\
	"ORDER BY r.created_at DESC, r.id DESC LIMIT $5) UNION ALL "
#define RUNS_L								\
	"(SELECT 'l', c.id, c.user_email, c.tool_name, c.argv, NULL, NULL, " \
	"(SELECT CASE WHEN p.exit_code = 0 THEN 'ok' ELSE 'failed' "	\
	"END "								\
	"FROM calls p WHERE p.grant_id = c.id AND p.action = 'REPORT' "	\
	"ORDER BY p.id LIMIT 1), c.created_at, o.slug, NULL::bigint, "	\
	"0::bigint, c.client "						\
	"FROM calls c "							\
	"JOIN orgs o ON o.id = c.org_id WHERE "				\
	"c.kind = 'local_run' AND "					\
	"c.action = 'GRANT' AND "
#define RUNS_L_KEY							\
	" AND ($2::text IS NULL OR (c.created_at <= $2 AND "		\
	"(c.created_at, 'l', c.id) < ($2, $3::text, $4))) "		\
	"ORDER BY c.created_at DESC, c.id DESC LIMIT $5) "		\
	"ORDER BY created_at DESC, src DESC, id DESC LIMIT $5"

/* One org, or every org ($1 = 0): two plans, each with its index. */
static struct pg_stmt	 runs_org = { RUNS_S "r.org_id = $1" RUNS_S_KEY
			    RUNS_L "c.org_id = $1" RUNS_L_KEY, 0 };
static struct pg_stmt	 runs_all = { RUNS_S "$1::bigint = 0" RUNS_S_KEY
			    RUNS_L "$1::bigint = 0" RUNS_L_KEY, 0 };
/* One org, one tool ($6), on the (org_id, tool, created_at, id) indexes. */
static struct pg_stmt	 runs_tool = { RUNS_S "r.org_id = $1 AND "
			    "r.tool = $6::text" RUNS_S_KEY RUNS_L
			    "c.org_id = $1 AND c.tool_name = $6::text"
			    RUNS_L_KEY, 0 };

#define CALLS_COLS							\
	"SELECT c.id, c.org_id, c.user_id, c.user_email, c.tool_name, "	\
	"c.method, c.path, coalesce(e.status_code, c.status_code), "	\
	"c.kind, c.action, coalesce(e.refused_by, c.refused_by), "	\
	"c.argv, c.exit_code, c.verdict, c.grant_id, "			\
	"coalesce(e.duration_ms, c.duration_ms), "			\
	"c.created_at, o.slug, e.bytes, c.host, c.run_id, c.place, "	\
	"c.target_host, c.client FROM calls c "				\
	"JOIN orgs o ON o.id = c.org_id "				\
	"LEFT JOIN call_ends e ON e.call_id = c.id "			\
	"WHERE ($2 = 0 OR c.id < $2) AND "
#define CALLS_END	" ORDER BY c.id DESC LIMIT 64"

static struct pg_stmt	 calls_org = { CALLS_COLS "c.org_id = $1" CALLS_END,
			    0 };
static struct pg_stmt	 calls_all = { CALLS_COLS "$1::bigint = 0" CALLS_END,
			    0 };
/* One run's requests ($3), on calls_run (run_id, id). */
static struct pg_stmt	 calls_run = { CALLS_COLS "c.org_id = $1 AND "
			    "c.run_id = $3 ORDER BY c.run_id DESC, c.id DESC "
			    "LIMIT 64", 0 };

static int	 pg_returning_id(struct pg_stmt *, const struct pgq *,
		    int64_t *);
static void	 runs_params(struct pgq *, int64_t, const char *, const char *,
		    int64_t, int);
static int	 runs_row(const PGresult *, int, store_runs_fn, void *);
static int	 calls_row(const PGresult *, int, store_calls_fn, void *);
static int	 calls_walk(struct pg_stmt *, int64_t, const int64_t *, int64_t,
		    store_calls_fn, void *);

static int
pg_returning_id(struct pg_stmt *st, const struct pgq *q, int64_t *id)
{
	PGresult	*res;

	if ((res = pg_run(st, q)) == NULL)
		return (-1);
	if (id != NULL)
		*id = PQntuples(res) == 1 ? pg_int(res, 0, 0) : 0;
	PQclear(res);
	return (0);
}

int
pg_run_insert(const struct store_run *r, int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO runs (org_id, user_id, "
	    "user_email, tool, argv, created_at, host, client) VALUES ($1, $2, "
	    "$3, $4, $5, $6, $7, $8) RETURNING id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, r->org_id);
	pgq_intif(&q, r->user_id != 0, r->user_id);
	pgq_text(&q, r->user_email);
	pgq_text(&q, r->tool);
	pgq_text(&q, r->argv);
	pgq_text(&q, r->created_at);
	pgq_intif(&q, r->host != 0, r->host);
	pgq_text(&q, r->client != NULL ? r->client : "");
	return (pg_returning_id(&st, &q, id));
}

int
pg_run_end_insert(const struct store_run_end *e)
{
	static struct pg_stmt	 st = { "INSERT INTO run_ends (run_id, org_id, "
	    "outcome, exit_code, duration_ms, timed_out, redacted, truncated, "
	    "created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, e->run_id);
	pgq_int(&q, e->org_id);
	pgq_text(&q, e->outcome);
	pgq_intif(&q, e->has_exit, e->exit_code);
	pgq_intif(&q, e->has_exit, e->duration_ms);
	pgq_int(&q, e->timed_out != 0);
	pgq_int(&q, e->redacted);
	pgq_int(&q, e->truncated);
	pgq_text(&q, e->created_at);
	return (pg_returning_id(&st, &q, NULL));
}

int
pg_call_insert(const struct store_call *c, int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO calls (org_id, user_id, "
	    "user_email, tool_name, method, path, status_code, kind, action, "
	    "refused_by, argv, exit_code, verdict, grant_id, duration_ms, "
	    "created_at, host, run_id, place, target_host, client) VALUES ($1, "
	    "$2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
	    "$16, $17, $18, $19, $20, $21) RETURNING id", 0 };
	static struct pg_stmt	 count = { "INSERT INTO run_requests "
	    "(run_id, org_id, n) VALUES ($1, $2, 1) ON CONFLICT (run_id) DO "
	    "UPDATE SET n = run_requests.n + 1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, c->org_id);
	pgq_intif(&q, c->user_id != 0, c->user_id);
	pgq_text(&q, c->user_email);
	pgq_text(&q, c->tool_name);
	pgq_text(&q, c->method);
	pgq_text(&q, c->path);
	pgq_intif(&q, c->has_status, c->status_code);
	pgq_text(&q, c->kind);
	pgq_text(&q, c->action);
	pgq_text(&q, c->refused_by);
	pgq_text(&q, c->argv);
	pgq_intif(&q, c->has_exit, c->exit_code);
	pgq_text(&q, c->verdict);
	pgq_intif(&q, c->grant_id != 0, c->grant_id);
	pgq_intif(&q, c->has_duration, c->duration_ms);
	pgq_text(&q, c->created_at);
	pgq_intif(&q, c->host != 0, c->host);
	pgq_intif(&q, c->run_id != 0, c->run_id);
	pgq_text(&q, c->place);
	pgq_text(&q, c->target_host);
	pgq_text(&q, c->client != NULL ? c->client : "");
	if (pg_returning_id(&st, &q, id) == -1)
		return (-1);
	if (c->run_id == 0)
		return (0);
	/* One more request of its run, in the transaction of its record. */
	pgq_init(&q);
	pgq_int(&q, c->run_id);
	pgq_int(&q, c->org_id);
	return (pg_do(&count, &q));
}

/* $1..$5 of a runs page: org, the row it starts after (at NULL: none). */
static void
runs_params(struct pgq *q, int64_t org, const char *at, const char *src,
    int64_t id, int limit)
{
	pgq_init(q);
	pgq_int(q, org);
	if (at != NULL) {
		pgq_text(q, at);
		pgq_text(q, src);
		pgq_int(q, id);
	} else {
		pgq_null(q);
		pgq_null(q);
		pgq_null(q);
	}
	pgq_int(q, limit);
}

/* The created_at of the row a page starts after. */
static int
runs_cursor(char src, int64_t id, char *at, size_t len)
{
	static struct pg_stmt	 run = { "SELECT created_at FROM runs "
	    "WHERE id = $1", 0 };
	static struct pg_stmt	 grant = { "SELECT created_at FROM calls "
	    "WHERE id = $1", 0 };
	PGresult		*res;
	int			 rc;

	if ((rc = pg_row_of(src == 's' ? &run : &grant, id, &res)) != 0)
		return (rc);
	pg_copy(at, len, res, 0, 0);
	PQclear(res);
	return (0);
}

int
pg_runs_page(int64_t org, char before_src, int64_t before_id,
    store_runs_fn fn, void *arg)
{
	struct pgq	 q;
	PGresult	*res;
	char		 at[STORE_TIME_MAX], src[2] = { 0, 0 };
	int64_t		 id = before_id;
	int		 i, n, rc = 0, have = 0;

	if (before_id > 0) {
		if ((rc = runs_cursor(before_src, before_id, at,
		    sizeof(at))) != 0)
			return (rc);
		src[0] = before_src;
		have = 1;
	}
	do {
		runs_params(&q, org, have ? at : NULL, src, id, PG_PAGE);
		if ((res = pg_run(org != 0 ? &runs_org : &runs_all, &q)) ==
		    NULL)
			return (-1);
		n = PQntuples(res);
		for (i = 0; i < n && rc == 0; i++)
			rc = runs_row(res, i, fn, arg);
		if (n > 0) {
			src[0] = *pg_text(res, n - 1, 0);
			id = pg_int(res, n - 1, 1);
			pg_copy(at, sizeof(at), res, n - 1, 8);
			have = 1;
		}
		PQclear(res);
	} while (n == PG_PAGE && rc == 0);
	return (rc < 0 ? -1 : 0);
}

/*
 * The page of one org restricted to some tools: one walk per tool of at
 * most limit rows, tool after tool; the caller merges them.
 */
int
pg_runs_tools(int64_t org, const char *const *tools, size_t ntools,
    char before_src, int64_t before_id, int limit, store_runs_fn fn,
    void *arg)
{
	struct pgq	 q;
	PGresult	*res;
	char		 at[STORE_TIME_MAX], src[2] = { 0, 0 };
	size_t		 t;
	int		 i, n, rc = 0;

	if (before_id > 0) {
		if ((rc = runs_cursor(before_src, before_id, at,
		    sizeof(at))) != 0)
			return (rc);
		src[0] = before_src;
	}
	for (t = 0; t < ntools && rc == 0; t++) {
		runs_params(&q, org, before_id > 0 ? at : NULL, src,
		    before_id, limit);
		pgq_text(&q, tools[t]);
		if ((res = pg_run(&runs_tool, &q)) == NULL)
			return (-1);
		n = PQntuples(res);
		for (i = 0; i < n && rc == 0; i++)
			rc = runs_row(res, i, fn, arg);
		PQclear(res);
	}
	return (rc < 0 ? -1 : 0);
}

static int
runs_row(const PGresult *res, int i, store_runs_fn fn, void *arg)
{
	struct store_runs_row	 r;

	memset(&r, 0, sizeof(r));
	r.src = *pg_text(res, i, 0);
	r.id = pg_int(res, i, 1);
	r.user_email = pg_text(res, i, 2);
	r.tool = pg_text(res, i, 3);
	r.argv = pg_text(res, i, 4);
	r.exit_code = pg_intif(res, i, 5, &r.has_exit);
	r.duration_ms = pg_intif(res, i, 6, &r.has_duration);
	r.outcome = pg_text(res, i, 7);
	r.created_at = pg_text(res, i, 8);
	r.org_slug = pg_text(res, i, 9);
	r.host = pg_null(res, i, 10) ? 0 : pg_int(res, i, 10);
	r.requests = pg_null(res, i, 11) ? 0 : pg_int(res, i, 11);
	r.client = pg_ntext(res, i, 12);
	return (fn(&r, arg));
}

/* Pages of calls on st after before_id: $1 org, $2 id, $3 *run if any. */
static int
calls_walk(struct pg_stmt *st, int64_t org, const int64_t *run,
    int64_t before_id, store_calls_fn fn, void *arg)
{
	struct pgq	 q;
	PGresult	*res;
	int64_t		 id = before_id;
	int		 i, n, rc = 0;

	do {
		pgq_init(&q);
		pgq_int(&q, org);
		pgq_int(&q, id);
		if (run != NULL)
			pgq_int(&q, *run);
		if ((res = pg_run(st, &q)) == NULL)
			return (-1);
		n = PQntuples(res);
		for (i = 0; i < n && rc == 0; i++)
			rc = calls_row(res, i, fn, arg);
		if (n > 0)
			id = pg_int(res, n - 1, 0);
		PQclear(res);
	} while (n == 64 && rc == 0);
	return (rc < 0 ? -1 : 0);
}

int
pg_calls_page(int64_t org, int64_t before_id, store_calls_fn fn, void *arg)
{
	return (calls_walk(org != 0 ? &calls_org : &calls_all, org, NULL,
	    before_id, fn, arg));
}

static int
calls_row(const PGresult *res, int i, store_calls_fn fn, void *arg)
{
	struct store_calls_row	 r;
	struct store_call	*c = &r.c;

	memset(&r, 0, sizeof(r));
	r.id = pg_int(res, i, 0);
	c->org_id = pg_int(res, i, 1);
	c->user_id = pg_int(res, i, 2);
	c->user_email = pg_text(res, i, 3);
	c->tool_name = pg_ntext(res, i, 4);
	c->method = pg_ntext(res, i, 5);
	c->path = pg_ntext(res, i, 6);
	c->status_code = pg_intif(res, i, 7, &c->has_status);
	c->kind = pg_text(res, i, 8);
	c->action = pg_ntext(res, i, 9);
	c->refused_by = pg_ntext(res, i, 10);
	c->argv = pg_ntext(res, i, 11);
	c->exit_code = pg_intif(res, i, 12, &c->has_exit);
	c->verdict = pg_ntext(res, i, 13);
	c->grant_id = pg_intif(res, i, 14, &r.has_grant);
	c->duration_ms = pg_intif(res, i, 15, &c->has_duration);
	c->created_at = pg_text(res, i, 16);
	r.org_slug = pg_text(res, i, 17);
	r.bytes = pg_intif(res, i, 18, &r.has_bytes);
	r.c.host = pg_null(res, i, 19) ? 0 : pg_int(res, i, 19);
	r.c.run_id = pg_null(res, i, 20) ? 0 : pg_int(res, i, 20);
	r.c.place = pg_ntext(res, i, 21);
	r.c.target_host = pg_ntext(res, i, 22);
	r.c.client = pg_ntext(res, i, 23);
	return (fn(&r, arg));
}

int
pg_calls_run_page(int64_t org, int64_t run, int64_t before_id,
    store_calls_fn fn, void *arg)
{
	return (calls_walk(&calls_run, org, &run, before_id, fn, arg));
}

/* batched run ends */

/*
 * Several ends, one commit (one wait for the WAL flush): the vault
 * appends the ends that came in one turn of its loop together.  All or
 * none.
 */
int
pg_run_ends_insert(const struct store_run_end *e, size_t n)
{
	size_t	 i;

	if (n == 0)
		return (0);
	if (pg_exec("BEGIN") == -1)
		return (-1);
	for (i = 0; i < n; i++)
		if (pg_run_end_insert(&e[i]) == -1)
			goto fail;
	if (pg_exec("COMMIT") == -1)
		goto fail;
	return (0);
 fail:
	if (PQtransactionStatus(pg_conn) != PQTRANS_IDLE)
		(void)pg_exec("ROLLBACK");
	return (-1);
}

/* ------------------------------------------------------------------ */
/* The hosts serving (vault_hosts.c).                                  */

int
pg_host_beat(int64_t instance, const char *name, int64_t seen)
{
	static struct pg_stmt	 st = { "INSERT INTO hosts (instance, name, "
	    "seen_at) VALUES ($1, $2, $3) ON CONFLICT (instance) DO UPDATE "
	    "SET seen_at = excluded.seen_at", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, instance);
	pgq_text(&q, name);
	pgq_int(&q, seen);
	return (pg_do(&st, &q));
}

int
pg_hosts_retire(int64_t instance, const char *name, int64_t before)
{
	static struct pg_stmt	 st = { "DELETE FROM hosts WHERE instance <> "
	    "$1 AND (name = $2 OR seen_at < $3)", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, instance);
	pgq_text(&q, name);
	pgq_int(&q, before);
	return (pg_do(&st, &q));
}

int
pg_hosts_live(int64_t since, int64_t *ids, size_t max, size_t *n)
{
	static struct pg_stmt	 st = { "SELECT instance FROM hosts WHERE "
	    "seen_at >= $1 LIMIT $2", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 i;

	*n = 0;
	pgq_init(&q);
	pgq_int(&q, since);
	pgq_int(&q, (int64_t)max);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	for (i = 0; i < PQntuples(res) && *n < max; i++)
		ids[(*n)++] = pg_int(res, i, 0);
	PQclear(res);
	return (0);
}

/* ------------------------------------------------------------------ */
/* The observed agents.                                                */

static int
pg_observed_row(const PGresult *res, int i, void *arg)
{
	struct store_each		*e = arg;
	struct store_observed_row	 r;

	r.member = pg_text(res, i, 0);
	r.client = pg_text(res, i, 1);
	r.n = pg_int(res, i, 2);
	r.today = pg_int(res, i, 3);
	r.last_seen = pg_text(res, i, 4);
	return (e->fn.observed(&r, e->arg));
}

/*
 * As the sqlite engine's: one GROUP BY per table on its partial index
 * (migration 16), sorted in byte order whatever the database's locale.
 */
int
pg_observed(int64_t org, const char *since, const char *today, int64_t max,
    store_observed_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT m, c, sum(n)::bigint, "
	    "sum(t)::bigint, max(l) FROM (SELECT user_email AS m, client AS c, "
	    "count(*) AS n, count(*) FILTER (WHERE created_at >= $3) AS t, "
	    "max(created_at) AS l FROM calls WHERE org_id = $1 AND "
	    "created_at >= $2 AND client NOT IN ('', 'cli') GROUP BY 1, 2 "
	    "UNION ALL SELECT user_email, client, count(*), count(*) FILTER "
	    "(WHERE created_at >= $3), max(created_at) FROM runs WHERE "
	    "org_id = $1 AND created_at >= $2 AND client NOT IN ('', 'cli') "
	    "GROUP BY 1, 2) x WHERE m NOT LIKE '%@agents.local' GROUP BY m, c "
	    "ORDER BY m COLLATE \"C\", c COLLATE \"C\" LIMIT $4", 0 };
	struct store_each	 e = { .fn.observed = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_text(&q, since);
	pgq_text(&q, today);
	pgq_int(&q, max);
	return (pg_each(&st, &q, pg_observed_row, &e));
}
