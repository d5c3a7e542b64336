/*
 * The sqlite engine's audit records: server runs and their ends, calls,
 * grants, denials and reports, and the keyset pages that list them.
 * Pages walk an index newest first and stop when the caller has enough,
 * so a page costs O(log N + rows) however long the history.
 */

#include <stdint.h>
#include <string.h>

#include "log.h"
#include "store_sqlite.h"

#define KEY_TIME_MAX	"~"	/* sorts after every ISO 8601 time */

static int	sq_row_time(const char *, int64_t, char *, size_t);
static int	sq_run_request_count(const struct store_call *);
static int	sq_runs_rows(sqlite3_stmt *, store_runs_fn, void *);
static int	sq_runs_row(sqlite3_stmt *, void *);
static int	sq_calls_row(sqlite3_stmt *, void *);
static int	sq_runs_cursor(char, int64_t, char *, size_t);
static void	sq_runs_key(sqlite3_stmt *, char, int64_t, const char *);
static void	sq_who(sqlite3_stmt *, int64_t, int64_t, const char *, int64_t,
		    const char *);

/* Who a run or a call is by, bound alike (runs and calls share the names). */
static void
sq_who(sqlite3_stmt *st, int64_t org, int64_t user, const char *email,
    int64_t host, const char *client)
{
	sq_text(st, ":client", client != NULL ? client : "");
	if (host != 0)
		sq_int(st, ":host", host);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	sq_text(st, ":email", email);
}

int
sq_run_insert(const struct store_run *r, int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO runs (org_id, user_id, user_email, "
	    "tool, argv, created_at, host, client) VALUES (:org, :user, "
	    ":email, :tool, :argv, :at, :host, :client)")) == NULL)
		return (-1);
	sq_who(st, r->org_id, r->user_id, r->user_email, r->host, r->client);
	sq_text(st, ":tool", r->tool);
	sq_text(st, ":argv", r->argv);
	sq_text(st, ":at", r->created_at);
	return (sq_insert(st, id));
}

int
sq_run_end_insert(const struct store_run_end *e)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO run_ends (run_id, org_id, outcome, "
	    "exit_code, duration_ms, timed_out, redacted, truncated, "
	    "created_at) VALUES (:run, :org, :outcome, :exit, :ms, :timed_out, "
	    ":redacted, :truncated, :at)")) == NULL)
		return (-1);
	sq_int(st, ":run", e->run_id);
	sq_int(st, ":org", e->org_id);
	sq_text(st, ":outcome", e->outcome);
	if (e->has_exit) {
		sq_int(st, ":exit", e->exit_code);
		sq_int(st, ":ms", e->duration_ms);
	}
	sq_int(st, ":timed_out", e->timed_out != 0);
	sq_int(st, ":redacted", e->redacted);
	sq_int(st, ":truncated", e->truncated);
	sq_text(st, ":at", e->created_at);
	return (sq_done(st));
}

int
sq_call_insert(const struct store_call *c, int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO calls (org_id, user_id, user_email, "
	    "tool_name, method, path, status_code, kind, action, refused_by, "
	    "argv, exit_code, verdict, grant_id, duration_ms, created_at, "
	    "host, run_id, place, target_host, client) VALUES (:org, :user, "
	    ":email, :tool, :method, :path, :status, :kind, :action, "
	    ":refused_by, :argv, :exit, :verdict, :grant, :ms, :at, :host, "
	    ":run, :place, :target, :client)")) == NULL)
		return (-1);
	sq_who(st, c->org_id, c->user_id, c->user_email, c->host, c->client);
	if (c->run_id != 0)
		sq_int(st, ":run", c->run_id);
	sq_text(st, ":place", c->place);
	sq_text(st, ":target", c->target_host);
	sq_text(st, ":tool", c->tool_name);
	sq_text(st, ":method", c->method);
	sq_text(st, ":path", c->path);
	if (c->has_status)
		sq_int(st, ":status", c->status_code);
	sq_text(st, ":kind", c->kind);
	sq_text(st, ":action", c->action);
	sq_text(st, ":refused_by", c->refused_by);
	sq_text(st, ":argv", c->argv);
	if (c->has_exit)
		sq_int(st, ":exit", c->exit_code);
	sq_text(st, ":verdict", c->verdict);
	if (c->grant_id != 0)
		sq_int(st, ":grant", c->grant_id);
	if (c->has_duration)
		sq_int(st, ":ms", c->duration_ms);
	sq_text(st, ":at", c->created_at);
	if (sq_insert(st, id) == -1)
		return (-1);
	return (c->run_id != 0 ? sq_run_request_count(c) : 0);
}

/* One more request of its run, in the transaction of its record. */
static int
sq_run_request_count(const struct store_call *c)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO run_requests (run_id, org_id, n) "
	    "VALUES (:run, :org, 1) ON CONFLICT (run_id) DO UPDATE SET "
	    "n = n + 1")) == NULL)
		return (-1);
	sq_int(st, ":run", c->run_id);
	sq_int(st, ":org", c->org_id);
	return (sq_done(st));
}

/* The time of the row a page starts below: 0, 1 no such row, -1. */
static int
sq_row_time(const char *sql, int64_t id, char *buf, size_t len)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare(sql)) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	if ((rc = sq_step(st)) == SQLITE_ROW)
		sq_ccopy(st, "created_at", buf, len);
	return (sq_row_end(st, rc));
}

static int
sq_runs_rows(sqlite3_stmt *st, store_runs_fn fn, void *arg)
{
	struct store_each	 e = { .fn.runs = fn, .arg = arg };

	return (sq_each(st, sq_runs_row, &e));
}

static int
sq_runs_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_runs_row	 r;

	memset(&r, 0, sizeof(r));
	r.src = *sq_ctext(st, "src");
	r.id = sq_cint(st, "id");
	r.user_email = sq_ctext(st, "user_email");
	r.tool = sq_ctext(st, "tool");
	r.argv = sq_ctext(st, "argv");
	r.exit_code = sq_cintif(st, "exit_code", &r.has_exit);
	r.duration_ms = sq_cintif(st, "duration_ms", &r.has_duration);
	r.outcome = sq_ctext(st, "outcome");
	r.created_at = sq_ctext(st, "created_at");
	r.org_slug = sq_ctext(st, "slug");
	r.host = sq_cint(st, "host");
	r.requests = sq_cint(st, "requests");
	r.client = sq_cntext(st, "client");
	return (e->fn.runs(&r, e->arg));
}

/*
 * Each arm walks its own index newest first; sqlite merges the two
 * ordered arms of the compound SELECT without sorting either.  A server
 * run's end is its run_ends record (rows of schema 1 carry it
 * themselves); runs that never ran (not_run) are not listed.  A grant's
 * outcome is its run report's, if one came.
 */
#define RUNS_ARM_SERVER							\
	"SELECT 's' AS src, r.id AS id, r.user_email AS user_email, "	\
	"r.tool AS tool, r.argv AS argv, "				\
	"coalesce(e.exit_code, r.exit_code) AS exit_code, "		\
	"coalesce(e.duration_ms, r.duration_ms) AS duration_ms, "	\
	"r.created_at AS created_at, o.slug AS slug, r.host AS host, "	\
	"coalesce(q.n, 0) AS requests, r.client AS client, "		\
	"CASE WHEN e.outcome IS NOT NULL THEN e.outcome "		\
	"WHEN r.exit_code IS NULL THEN NULL "				\
	"WHEN r.timed_out THEN 'timed_out' "				\
	"WHEN r.exit_code = 0 THEN 'ok' ELSE 'failed' END AS outcome "	\
	"FROM runs r JOIN orgs o ON o.id = r.org_id "			\
	"LEFT JOIN run_ends e ON e.run_id = r.id "			\
	"LEFT JOIN run_requests q ON q.run_id = r.id "			\
	"WHERE (e.outcome IS NULL OR e.outcome != 'not_run') "		\
	"AND (r.created_at, r.id) < (:rt, :rid) "
#define RUNS_ARM_LOCAL							\
	"SELECT 'l', c.id, c.user_email, c.tool_name, c.argv, NULL, "	\
	"NULL, c.created_at, o.slug, NULL, 0, c.client, "		\
	"(SELECT CASE WHEN p.exit_code = 0 "				\
	"THEN 'ok' ELSE 'failed' END FROM calls p WHERE "		\
	"p.grant_id = c.id AND p.action = 'REPORT' ORDER BY p.id "	\
	"LIMIT 1) FROM calls c JOIN orgs o ON o.id = c.org_id "		\
	"WHERE c.kind = 'local_run' AND c.action = 'GRANT' "		\
	"AND (c.created_at, c.id) < (:lt, :lid) "
#define RUNS_ORDER	"ORDER BY created_at DESC, src DESC, id DESC"

int
sq_runs_page(int64_t org, char bsrc, int64_t bid, store_runs_fn fn,
    void *arg)
{
	sqlite3_stmt	*st;
	char		 t[STORE_TIME_MAX];
	int		 rc;

	if (org != 0)
		st = db_prepare(RUNS_ARM_SERVER "AND r.org_id = :org "
		    "UNION ALL " RUNS_ARM_LOCAL "AND c.org_id = :org "
		    RUNS_ORDER);
	else
		st = db_prepare(RUNS_ARM_SERVER "UNION ALL " RUNS_ARM_LOCAL
		    RUNS_ORDER);
	if (st == NULL)
		return (-1);
	if (org != 0)
		sq_int(st, ":org", org);
	if ((rc = sq_runs_cursor(bsrc, bid, t, sizeof(t))) != 0) {
		sqlite3_clear_bindings(st);
		return (rc);
	}
	sq_runs_key(st, bsrc, bid, t);
	return (sq_runs_rows(st, fn, arg));
}

/* The time of the row (bsrc, bid) a page starts below (bid 0: none). */
static int
sq_runs_cursor(char bsrc, int64_t bid, char *t, size_t len)
{
	if (bid <= 0)
		return (0);
	return (sq_row_time(bsrc == 's' ? "SELECT created_at FROM runs "
	    "WHERE id = :id" : "SELECT created_at FROM calls WHERE id = :id",
	    bid, t, len));
}

/* The row (time, src, id) itself and everything newer is out. */
static void
sq_runs_key(sqlite3_stmt *st, char bsrc, int64_t bid, const char *t)
{
	if (bid <= 0) {
		sq_text(st, ":rt", KEY_TIME_MAX);
		sq_int(st, ":rid", INT64_MAX);
		sq_text(st, ":lt", KEY_TIME_MAX);
		sq_int(st, ":lid", INT64_MAX);
		return;
	}
	sq_text(st, ":rt", t);
	sq_text(st, ":lt", t);
	/* 's' sorts before 'l' at one time. */
	sq_int(st, ":rid", bsrc == 's' ? bid : 0);
	sq_int(st, ":lid", bsrc == 's' ? INT64_MAX : bid);
}

/*
 * The same page of one org restricted to some tools: one walk per tool
 * on its (org_id, tool, created_at, id) indexes, at most limit rows
 * each, tool after tool; the caller merges them.
 */
int
sq_runs_tools(int64_t org, const char *const *tools, size_t ntools,
    char bsrc, int64_t bid, int limit, store_runs_fn fn, void *arg)
{
	sqlite3_stmt	*st;
	char		 t[STORE_TIME_MAX];
	size_t		 i;
	int		 rc;

	if ((rc = sq_runs_cursor(bsrc, bid, t, sizeof(t))) != 0 ||
	    ntools == 0)
		return (rc);
	if ((st = db_prepare(RUNS_ARM_SERVER "AND r.org_id = :org AND "
	    "r.tool = :tool UNION ALL " RUNS_ARM_LOCAL "AND c.org_id = :org "
	    "AND c.tool_name = :tool " RUNS_ORDER " LIMIT :n")) == NULL)
		return (-1);
	for (i = 0; i < ntools && rc == 0; i++) {
		sq_int(st, ":org", org);
		sq_text(st, ":tool", tools[i]);
		sq_int(st, ":n", limit);
		sq_runs_key(st, bsrc, bid, t);
		rc = sq_runs_rows(st, fn, arg);
	}
	return (rc);
}

#define CALLS_SELECT							\
	"SELECT c.id AS id, c.org_id AS org_id, c.user_id AS user_id, "	\
	"c.user_email AS user_email, c.tool_name AS tool_name, "	\
	"c.method AS method, c.path AS path, "				\
	"coalesce(e.status_code, c.status_code) AS status_code, "	\
	"c.kind AS kind, c.action AS action, "				\
	"coalesce(e.refused_by, c.refused_by) AS refused_by, "		\
	"c.argv AS argv, c.exit_code AS exit_code, "			\
	"c.verdict AS verdict, c.grant_id AS grant_id, "		\
	"coalesce(e.duration_ms, c.duration_ms) AS duration_ms, "	\
	"c.created_at AS created_at, e.bytes AS bytes, c.host AS host, " \
	"c.run_id AS run_id, c.place AS place, "			\
	"c.target_host AS target_host, c.client AS client, "		\
	"o.slug AS slug FROM calls c JOIN orgs o ON o.id = c.org_id "	\
	"LEFT JOIN call_ends e ON e.call_id = c.id "

int
sq_calls_page(int64_t org, int64_t bid, store_calls_fn fn, void *arg)
{
	struct store_each	 e = { .fn.calls = fn, .arg = arg };
	sqlite3_stmt		*st;

	if (org != 0)
		st = db_prepare(CALLS_SELECT "WHERE c.org_id = :org AND "
		    "c.id < :before ORDER BY c.id DESC");
	else
		st = db_prepare(CALLS_SELECT "WHERE c.id < :before "
		    "ORDER BY c.id DESC");
	if (st == NULL)
		return (-1);
	if (org != 0)
		sq_int(st, ":org", org);
	sq_int(st, ":before", bid > 0 ? bid : INT64_MAX);
	return (sq_each(st, sq_calls_row, &e));
}

static int
sq_calls_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_calls_row	 r;

	memset(&r, 0, sizeof(r));
	r.id = sq_cint(st, "id");
	r.c.org_id = sq_cint(st, "org_id");
	r.c.user_id = sq_cint(st, "user_id");
	r.c.user_email = sq_ctext(st, "user_email");
	r.c.tool_name = sq_cntext(st, "tool_name");
	r.c.method = sq_cntext(st, "method");
	r.c.path = sq_cntext(st, "path");
	r.c.status_code = sq_cintif(st, "status_code", &r.c.has_status);
	r.c.kind = sq_ctext(st, "kind");
	r.c.action = sq_cntext(st, "action");
	r.c.refused_by = sq_cntext(st, "refused_by");
	r.c.argv = sq_cntext(st, "argv");
	r.c.exit_code = sq_cintif(st, "exit_code", &r.c.has_exit);
	r.c.verdict = sq_cntext(st, "verdict");
	r.c.grant_id = sq_cintif(st, "grant_id", &r.has_grant);
	r.c.duration_ms = sq_cintif(st, "duration_ms", &r.c.has_duration);
	r.c.created_at = sq_ctext(st, "created_at");
	r.bytes = sq_cintif(st, "bytes", &r.has_bytes);
	r.org_slug = sq_ctext(st, "slug");
	r.c.host = sq_cint(st, "host");
	r.c.run_id = sq_cint(st, "run_id");
	r.c.place = sq_cntext(st, "place");
	r.c.target_host = sq_cntext(st, "target_host");
	r.c.client = sq_cntext(st, "client");
	return (e->fn.calls(&r, e->arg));
}

/* One run's requests, on calls_run (run_id, id). */
int
sq_calls_run_page(int64_t org, int64_t run, int64_t bid, store_calls_fn fn,
    void *arg)
{
	struct store_each	 e = { .fn.calls = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare(CALLS_SELECT "WHERE c.run_id = :run AND "
	    "c.id < :before AND c.org_id = :org ORDER BY c.run_id DESC, "
	    "c.id DESC")) == NULL)
		return (-1);
	sq_int(st, ":run", run);
	sq_int(st, ":org", org);
	sq_int(st, ":before", bid > 0 ? bid : INT64_MAX);
	return (sq_each(st, sq_calls_row, &e));
}

/* batched run ends */

/*
 * Several ends, one commit: the vault appends the ends that came in one
 * turn of its loop together.  All or none.
 */
int
sq_run_ends_insert(const struct store_run_end *e, size_t n)
{
	size_t	 i;

	if (n == 0)
		return (0);
	if (db_exec("BEGIN IMMEDIATE") == -1)
		return (-1);
	for (i = 0; i < n; i++)
		if (sq_run_end_insert(&e[i]) == -1)
			goto fail;
	if (db_exec("COMMIT") == -1)
		goto fail;
	return (0);
 fail:
	if (!sqlite3_get_autocommit(vault_db))
		sqlite3_exec(vault_db, "ROLLBACK", NULL, NULL, NULL);
	return (-1);
}

/* ------------------------------------------------------------------ */
/* The hosts serving (vault_hosts.c).                                  */

int
sq_host_beat(int64_t instance, const char *name, int64_t seen)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO hosts (instance, name, seen_at) "
	    "VALUES (:i, :name, :seen) ON CONFLICT (instance) DO UPDATE "
	    "SET seen_at = excluded.seen_at")) == NULL)
		return (-1);
	sq_int(st, ":i", instance);
	sq_text(st, ":name", name);
	sq_int(st, ":seen", seen);
	return (sq_done(st));
}

int
sq_hosts_retire(int64_t instance, const char *name, int64_t before)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM hosts WHERE instance != :i AND "
	    "(name = :name OR seen_at < :before)")) == NULL)
		return (-1);
	sq_int(st, ":i", instance);
	sq_text(st, ":name", name);
	sq_int(st, ":before", before);
	return (sq_done(st));
}

int
sq_hosts_live(int64_t since, int64_t *ids, size_t max, size_t *n)
{
	sqlite3_stmt	*st;
	int		 rc;

	*n = 0;
	if ((st = db_prepare("SELECT instance FROM hosts WHERE seen_at >= "
	    ":since LIMIT :max")) == NULL)
		return (-1);
	sq_int(st, ":since", since);
	sq_int(st, ":max", (int64_t)max);
	while ((rc = sq_step(st)) == SQLITE_ROW && *n < max)
		ids[(*n)++] = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return (rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1);
}

/* ------------------------------------------------------------------ */
/* The observed agents.                                                */

static int
sq_observed_row(sqlite3_stmt *st, void *arg)
{
	struct store_each		*e = arg;
	struct store_observed_row	 r;

	r.member = db_text(st, 0);
	r.client = db_text(st, 1);
	r.n = sqlite3_column_int64(st, 2);
	r.today = sqlite3_column_int64(st, 3);
	r.last_seen = db_text(st, 4);
	return (e->fn.observed(&r, e->arg));
}

/*
 * One GROUP BY per table on its partial index of the rows that name a
 * runtime (migration 16): the window's rows, never the whole history.
 * The terms "client NOT IN ('', 'cli')" are the indexes' own, word for
 * word, which is how sqlite knows it may use them.
 */
int
sq_observed(int64_t org, const char *since, const char *today, int64_t max,
    store_observed_fn fn, void *arg)
{
	struct store_each	 e = { .fn.observed = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT m, c, sum(n), sum(t), max(l) FROM ("
	    "SELECT user_email AS m, client AS c, count(*) AS n, "
	    "sum(created_at >= :today) AS t, max(created_at) AS l "
	    "FROM calls WHERE org_id = :org AND created_at >= :since AND "
	    "client NOT IN ('', 'cli') GROUP BY 1, 2 UNION ALL "
	    "SELECT user_email, client, count(*), sum(created_at >= :today), "
	    "max(created_at) FROM runs WHERE org_id = :org AND "
	    "created_at >= :since AND client NOT IN ('', 'cli') GROUP BY 1, 2) "
	    "WHERE m NOT LIKE '%@agents.local' GROUP BY m, c "
	    "ORDER BY m, c LIMIT :max")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_text(st, ":since", since);
	sq_text(st, ":today", today);
	sq_int(st, ":max", max);
	return (sq_each(st, sq_observed_row, &e));
}
