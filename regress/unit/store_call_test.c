/*
 * store_call_test: the relay's part of store.h (calls and daily caps) on
 * both engines: sqlite on an in-memory database, PostgreSQL on a fresh
 * database of scripts/pg.sh's server when the kyua variable pg_host is
 * set (make check-pg).  The same case body runs on each.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store_sqlite.h"

#define FIXTURE								\
	"INSERT INTO users (email, created_at) VALUES "			\
	"('a@example.com', '2026-01-01T00:00:00Z');"			\
	"INSERT INTO orgs (slug, name, created_at) VALUES "		\
	"('a', 'A', '2026-01-01T00:00:00Z'), "				\
	"('b', 'B', '2026-01-01T00:00:00Z');"				\
	"INSERT INTO memberships (user_id, org_id, role, token_hash, "	\
	"created_at) VALUES (1, 1, 'owner', 'AAAA', "			\
	"'2026-01-01T00:00:00Z');"					\
	"INSERT INTO tools (org_id, name, owner_id, base_url, host, "	\
	"created_at) VALUES "						\
	"(1, 'v1', 1, 'https://api.x.com/v1', 'api.x.com', 'now'), "	\
	"(1, 'other', 1, 'https://api.y.com', 'api.y.com', 'now'), "	\
	"(2, 'theirs', 1, 'https://api.x.com', 'api.x.com', 'now'), "	\
	"(1, 'root', 1, 'https://api.x.com', 'api.x.com', 'now')"

static void	 open_engine(const atf_tc_t *, int);
static int	 collect_tool(const struct store_tool_url *, void *);
static int	 first_call(const struct store_calls_row *, void *);
static int	 each_call(const struct store_calls_row *, void *);
static int	 each_run(const struct store_runs_row *, void *);
static void	 sql(int, const char *);
static int64_t	 regv(void);
static int64_t	 a_call(void);
static int64_t	 used_on(int64_t, int64_t, const char *);

/* The PostgreSQL database open_engine() made, for a second connection. */
static char	 pg_ci[512];

/* engine 0: sqlite in memory; 1: a fresh PostgreSQL database. */
static void
open_engine(const atf_tc_t *tc, int pg)
{
	struct store_params	 p;
	char			 err[STORE_ERROR_MAX], ci[512], sql[128], db[64];
	PGconn			*c;
	PGresult		*res;

	memset(&p, 0, sizeof(p));
	err[0] = '\0';
	if (!pg) {
		p.engine = STORE_SQLITE;
		p.path = ":memory:";
		ATF_REQUIRE_MSG(store_open(&p, err, sizeof(err)) == 0, "%s",
		    err);
		ATF_REQUIRE(db_exec(FIXTURE) == 0);
		return;
	}
	snprintf(ci, sizeof(ci), "host=%s user=tregd dbname=postgres",
	    atf_tc_get_config_var(tc, "pg_host"));
	c = PQconnectdb(ci);
	ATF_REQUIRE_MSG(PQstatus(c) == CONNECTION_OK, "%s",
	    PQerrorMessage(c));
	/* Named once: the second may turn between two time() calls. */
	snprintf(db, sizeof(db), "call_test_%ld_%lld", (long)getpid(),
	    (long long)time(NULL));
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
	res = PQexec(c, sql);
	ATF_REQUIRE(PQresultStatus(res) == PGRES_COMMAND_OK);
	PQclear(res);
	PQfinish(c);
	snprintf(ci, sizeof(ci), "host=%s user=tregd dbname=%s",
	    atf_tc_get_config_var(tc, "pg_host"), db);
	p.engine = STORE_POSTGRESQL;
	p.conninfo = ci;
	strlcpy(pg_ci, ci, sizeof(pg_ci));
	ATF_REQUIRE_MSG(store_open(&p, err, sizeof(err)) == 0, "%s", err);
	c = PQconnectdb(ci);
	res = PQexec(c, FIXTURE);
	ATF_REQUIRE_MSG(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
	    PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
}

/* The calls counted for user in org on day. */
static int64_t
used_on(int64_t org, int64_t user, const char *day)
{
	int64_t	 used = -1;

	ATF_REQUIRE(store_call_used(org, user, day, &used) == 0);
	return (used);
}

static void
a_cap_counts_up_to_it_and_no_further_body(const atf_tc_t *tc, int pg)
{
	open_engine(tc, pg);
	ATF_CHECK_EQ(used_on(1, 1, "2026-01-02"), 0);
	ATF_REQUIRE(store_call_cap_take(1, 1, "2026-01-02", 1, 2) == 0);
	ATF_CHECK_EQ(used_on(1, 1, "2026-01-02"), 1);
	ATF_REQUIRE(store_call_cap_take(1, 1, "2026-01-02", 1, 2) == 0);
	/* At the cap: refused and not counted. */
	ATF_REQUIRE(store_call_cap_take(1, 1, "2026-01-02", 1, 2) == 1);
	ATF_CHECK_EQ(used_on(1, 1, "2026-01-02"), 2);
	/* Another day, another org: counted apart. */
	ATF_REQUIRE(store_call_cap_take(1, 1, "2026-01-03", 1, 2) == 0);
	ATF_CHECK_EQ(used_on(1, 1, "2026-01-03"), 1);
	ATF_REQUIRE(store_call_cap_take(2, 1, "2026-01-02", 1, 2) == 0);
	ATF_CHECK_EQ(used_on(2, 1, "2026-01-02"), 1);
	/* A cap of 0: nothing, not even a first row. */
	ATF_CHECK_EQ(store_call_cap_take(1, 2, "2026-01-02", 1, 0), 1);
	ATF_CHECK_EQ(used_on(1, 2, "2026-01-02"), 0);
	store_close();
}

static void
several_calls_are_counted_together_or_not_at_all_body(const atf_tc_t *tc,
    int pg)
{
	open_engine(tc, pg);
	/* A first row of more than the cap is not made. */
	ATF_CHECK_EQ(store_call_cap_take(1, 1, "2026-01-02", 4, 3), 1);
	ATF_CHECK_EQ(used_on(1, 1, "2026-01-02"), 0);
	ATF_REQUIRE(store_call_cap_take(1, 1, "2026-01-02", 2, 3) == 0);
	ATF_CHECK_EQ(used_on(1, 1, "2026-01-02"), 2);
	/* Two more would pass it: none is counted; one fits. */
	ATF_CHECK_EQ(store_call_cap_take(1, 1, "2026-01-02", 2, 3), 1);
	ATF_CHECK_EQ(used_on(1, 1, "2026-01-02"), 2);
	ATF_REQUIRE(store_call_cap_take(1, 1, "2026-01-02", 1, 3) == 0);
	ATF_CHECK_EQ(used_on(1, 1, "2026-01-02"), 3);
	/* No cap: counted up by as many. */
	ATF_REQUIRE(store_call_cap_take(1, 1, "2026-01-02", 5,
	    INT64_MAX) == 0);
	ATF_CHECK_EQ(used_on(1, 1, "2026-01-02"), 8);
	store_close();
}

static void
the_cap_is_null_until_set_body(const atf_tc_t *tc, int pg)
{
	int64_t	 cap;
	int	 has;

	open_engine(tc, pg);
	ATF_REQUIRE(store_call_cap_get(1, 1, &has, &cap) == 0);
	ATF_CHECK_EQ(has, 0);
	ATF_REQUIRE(store_call_cap_set(1, 1, 1, 7) == 0);
	ATF_REQUIRE(store_call_cap_get(1, 1, &has, &cap) == 0);
	ATF_CHECK(has == 1 && cap == 7);
	ATF_REQUIRE(store_call_cap_set(1, 1, 0, 0) == 0);
	ATF_REQUIRE(store_call_cap_get(1, 1, &has, &cap) == 0);
	ATF_CHECK_EQ(has, 0);
	/* No such membership. */
	ATF_CHECK_EQ(store_call_cap_get(2, 1, &has, &cap), 1);
	store_close();
}

static void
reads_share_a_read_transaction_ended_before_a_write_body(const atf_tc_t *tc,
    int pg)
{
	int64_t	 cap, used;
	int	 has;

	open_engine(tc, pg);
	ATF_REQUIRE(store_read_begin() == 0);
	ATF_REQUIRE(store_call_cap_get(1, 1, &has, &cap) == 0);
	ATF_REQUIRE(store_call_used(1, 1, "2026-01-02", &used) == 0);
	ATF_CHECK(has == 0 && used == 0);
	store_read_end();
	/* Ended: a write transaction may begin and commit. */
	ATF_REQUIRE(store_begin() == 0);
	ATF_REQUIRE(store_call_cap_take(1, 1, "2026-01-02", 1, 5) == 0);
	ATF_REQUIRE(store_commit() == 0);
	ATF_REQUIRE(store_read_begin() == 0);
	ATF_REQUIRE(store_call_used(1, 1, "2026-01-02", &used) == 0);
	ATF_CHECK_EQ(used, 1);
	store_read_end();
	store_read_end();		/* a second end: nothing to end */
	ATF_REQUIRE(store_begin() == 0);
	store_rollback();
	store_close();
}

struct tools {
	char	 names[8][32];
	int	 n;
};

static int
collect_tool(const struct store_tool_url *t, void *arg)
{
	struct tools	*ts = arg;

	if (ts->n < 8)
		strlcpy(ts->names[ts->n++], t->name, sizeof(ts->names[0]));
	return (0);
}

static void
tools_by_host_are_the_orgs_own_body(const atf_tc_t *tc, int pg)
{
	struct tools	 ts;

	open_engine(tc, pg);
	memset(&ts, 0, sizeof(ts));
	ATF_REQUIRE(store_tools_by_host(1, "api.x.com", collect_tool,
	    &ts) == 0);
	ATF_REQUIRE_EQ(ts.n, 2);
	ATF_CHECK_STREQ(ts.names[0], "v1");
	ATF_CHECK_STREQ(ts.names[1], "root");
	store_close();
}

static int
first_call(const struct store_calls_row *r, void *arg)
{
	struct store_calls_row	*out = arg;

	ATF_REQUIRE(r->c.refused_by == NULL || out->c.refused_by == NULL);
	out->has_bytes = r->has_bytes;
	out->bytes = r->bytes;
	out->c.has_status = r->c.has_status;
	out->c.status_code = r->c.status_code;
	out->c.has_duration = r->c.has_duration;
	out->c.duration_ms = r->c.duration_ms;
	out->id = r->c.refused_by != NULL;	/* refused_by set */
	return (1);
}

/* A call of v1 by user 1 in org 1, audited: its id. */
static int64_t
a_call(void)
{
	struct store_call	 c;
	int64_t			 id;

	memset(&c, 0, sizeof(c));
	c.org_id = 1;
	c.user_id = 1;
	c.user_email = "a@example.com";
	c.tool_name = "v1";
	c.method = "GET";
	c.path = "/v1/x";
	c.kind = "call";
	c.created_at = "2026-01-02T00:00:00Z";
	ATF_REQUIRE(store_call_insert(&c, &id) == 0);
	return (id);
}

static void
a_call_end_shows_in_calls_page_body(const atf_tc_t *tc, int pg)
{
	struct store_call_end	 e;
	struct store_calls_row	 got;
	int64_t			 id;

	open_engine(tc, pg);
	id = a_call();
	memset(&got, 0, sizeof(got));
	ATF_REQUIRE(store_calls_page(1, 0, first_call, &got) == 0);
	ATF_CHECK(!got.c.has_status && !got.has_bytes);
	memset(&e, 0, sizeof(e));
	e.call_id = id;
	e.org_id = 1;
	e.has_status = 1;
	e.status_code = 201;
	e.duration_ms = 12;
	e.bytes = 345;
	e.created_at = "2026-01-02T00:00:01Z";
	ATF_REQUIRE(store_call_end_insert(&e) == 0);
	memset(&got, 0, sizeof(got));
	ATF_REQUIRE(store_calls_page(1, 0, first_call, &got) == 0);
	ATF_CHECK(got.c.has_status && got.c.status_code == 201);
	ATF_CHECK(got.c.has_duration && got.c.duration_ms == 12);
	ATF_CHECK(got.has_bytes && got.bytes == 345);
	ATF_CHECK_EQ(got.id, 0);
	/* Append-only: a second end of the same call is refused. */
	ATF_CHECK_EQ(store_call_end_insert(&e), -1);
	store_close();
}

/* A statement on the engine's database; on PostgreSQL from another host. */
static void
sql(int pg, const char *q)
{
	PGconn		*c;
	PGresult	*res;

	if (!pg) {
		ATF_REQUIRE_MSG(db_exec(q) == 0, "%s", q);
		return;
	}
	c = PQconnectdb(pg_ci);
	ATF_REQUIRE(PQstatus(c) == CONNECTION_OK);
	res = PQexec(c, q);
	ATF_REQUIRE_MSG(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s",
	    q, PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
}

static int64_t
regv(void)
{
	int64_t	 v;

	ATF_REQUIRE(store_registry_version(&v) == 0);
	return (v);
}

static void
the_registry_version_moves_with_registry_writes_only_body(
    const atf_tc_t *tc, int pg)
{
	static const char *const writes[] = {
		"UPDATE users SET email = 'b@example.com'",
		"UPDATE orgs SET name = 'AA' WHERE id = 1",
		"UPDATE memberships SET token_hash = 'BBBB'",
		"UPDATE memberships SET tool_access = '[\"v1\"]'",
		"INSERT INTO invites (org_id, email, role, code_hash, "
		    "expires_at, created_at) VALUES (1, 'c@example.com', "
		    "'member', 'CCCC', 0, 'now')",
		"INSERT INTO bundles (org_id, name, owner_id, recipe, "
		    "created_at) VALUES (1, 'b', 1, '{}', 'now')",
		"INSERT INTO secrets (org_id, name, kind, owner_id, sealed, "
		    "created_at) VALUES (1, 's', 'env', 1, 'x', 'now')",
		"UPDATE secrets SET sealed = 'y'",
		"INSERT INTO tool_secrets (tool_id, secret_id) VALUES (1, 1)",
		"UPDATE tools SET base_url = 'https://api.z.com' "
		    "WHERE name = 'v1'",
		"INSERT INTO deny_rules (org_id, method, created_at) "
		    "VALUES (1, 'DELETE', 'now')",
		"DELETE FROM deny_rules",
		"DELETE FROM tool_secrets",
		"DELETE FROM memberships",
	};
	struct store_call_end	 e;
	int64_t			 v, id;
	size_t			 i;

	open_engine(tc, pg);
	v = regv();
	/* The audit, the call ends and the daily counts leave it. */
	id = a_call();
	memset(&e, 0, sizeof(e));
	e.call_id = id;
	e.org_id = 1;
	e.created_at = "2026-01-02T00:00:01Z";
	ATF_REQUIRE(store_call_end_insert(&e) == 0);
	ATF_REQUIRE(store_call_cap_take(1, 1, "2026-01-02", 1, 5) == 0);
	ATF_CHECK_EQ(regv(), v);
	/* A rolled back change leaves it; a committed one moves it. */
	ATF_REQUIRE(store_begin() == 0);
	ATF_REQUIRE(store_call_cap_set(1, 1, 1, 3) == 0);
	store_rollback();
	ATF_CHECK_EQ(regv(), v);
	ATF_REQUIRE(store_call_cap_set(1, 1, 1, 3) == 0);
	ATF_CHECK(regv() > v);
	/* A secret's health (every run report writes it) leaves it. */
	sql(pg, "INSERT INTO secrets (org_id, name, kind, owner_id, sealed, "
	    "created_at) VALUES (1, 'h', 'env', 1, 'x', 'now')");
	v = regv();
	sql(pg, "UPDATE secrets SET status = 'ok', status_detail = 'd', "
	    "checked_at = 'now' WHERE name = 'h'");
	ATF_CHECK_EQ(regv(), v);
	/* Each table a call's decision reads, written from outside. */
	for (i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		v = regv();
		sql(pg, writes[i]);
		ATF_CHECK_MSG(regv() > v, "not moved by: %s", writes[i]);
	}
	store_close();
}

/* The ids, run ids and hosts of a page, in order. */
struct seen {
	int64_t		 id[8], run[8], requests[8];
	char		 host[8][64], place[8][16];
	int		 n;
};

static int
each_call(const struct store_calls_row *r, void *arg)
{
	struct seen	*s = arg;

	if (s->n < 8) {
		s->id[s->n] = r->id;
		s->run[s->n] = r->c.run_id;
		strlcpy(s->host[s->n], r->c.target_host != NULL ?
		    r->c.target_host : "(null)", sizeof(s->host[0]));
		strlcpy(s->place[s->n], r->c.place != NULL ? r->c.place :
		    "(null)", sizeof(s->place[0]));
		s->n++;
	}
	return (0);
}

static int
each_run(const struct store_runs_row *r, void *arg)
{
	struct seen	*s = arg;

	if (s->n < 8) {
		s->id[s->n] = r->id;
		s->requests[s->n++] = r->requests;
	}
	return (0);
}

/*
 * A keyless run's requests (schema 13): each a call record naming its
 * run, listed by run newest first and only in the run's org, counted
 * on the run's row as they are written, one rolled back not counted.
 */
static void
a_runs_requests_are_listed_and_counted_body(const atf_tc_t *tc, int pg)
{
	struct store_run	 r;
	struct store_call	 c;
	struct seen		 s;
	int64_t			 run1, run2, id[4];
	int			 i;

	open_engine(tc, pg);
	memset(&r, 0, sizeof(r));
	r.org_id = 1;
	r.user_id = 1;
	r.user_email = "a@example.com";
	r.tool = "v1";
	r.argv = "[]";
	r.created_at = "2026-01-02T00:00:00Z";
	ATF_REQUIRE(store_run_insert(&r, &run1) == 0);
	r.created_at = "2026-01-02T00:00:01Z";
	ATF_REQUIRE(store_run_insert(&r, &run2) == 0);
	memset(&c, 0, sizeof(c));
	c.org_id = 1;
	c.user_id = 1;
	c.user_email = "a@example.com";
	c.tool_name = "v1";
	c.method = "GET";
	c.path = "/user";
	c.kind = "call";
	c.created_at = "2026-01-02T00:00:02Z";
	c.place = "run";
	c.target_host = "api.x.com";
	for (i = 0; i < 4; i++) {
		/* run1, run2, run1, and a relayed call of no run. */
		c.run_id = i == 3 ? 0 : i == 1 ? run2 : run1;
		c.place = i == 3 ? NULL : "run";
		c.target_host = i == 3 ? NULL : i == 2 ? "uploads.x.com:8443" :
		    "api.x.com";
		ATF_REQUIRE(store_begin() == 0);
		ATF_REQUIRE(store_call_insert(&c, &id[i]) == 0);
		ATF_REQUIRE(store_commit() == 0);
	}
	/* A record rolled back is neither listed nor counted. */
	c.run_id = run1;
	ATF_REQUIRE(store_begin() == 0);
	ATF_REQUIRE(store_call_insert(&c, NULL) == 0);
	store_rollback();

	memset(&s, 0, sizeof(s));
	ATF_REQUIRE(store_calls_run_page(1, run1, 0, each_call, &s) == 0);
	ATF_REQUIRE_EQ(s.n, 2);
	ATF_CHECK_EQ(s.id[0], id[2]);
	ATF_CHECK_EQ(s.id[1], id[0]);
	ATF_CHECK_EQ(s.run[0], run1);
	ATF_CHECK_STREQ(s.host[0], "uploads.x.com:8443");
	ATF_CHECK_STREQ(s.host[1], "api.x.com");
	ATF_CHECK_STREQ(s.place[1], "run");
	/* Paged with before_id, as GET /calls. */
	memset(&s, 0, sizeof(s));
	ATF_REQUIRE(store_calls_run_page(1, run1, id[2], each_call, &s) == 0);
	ATF_CHECK(s.n == 1 && s.id[0] == id[0]);
	/* Another org's read of the run finds nothing. */
	memset(&s, 0, sizeof(s));
	ATF_REQUIRE(store_calls_run_page(2, run1, 0, each_call, &s) == 0);
	ATF_CHECK_EQ(s.n, 0);
	/* The whole log still lists every record, a relayed call's bare. */
	memset(&s, 0, sizeof(s));
	ATF_REQUIRE(store_calls_page(1, 0, each_call, &s) == 0);
	ATF_REQUIRE_EQ(s.n, 4);
	ATF_CHECK(s.run[0] == 0 && strcmp(s.place[0], "(null)") == 0 &&
	    strcmp(s.host[0], "(null)") == 0);
	/* GET /runs: each run's requests. */
	memset(&s, 0, sizeof(s));
	ATF_REQUIRE(store_runs_page(1, 0, 0, each_run, &s) == 0);
	ATF_REQUIRE_EQ(s.n, 2);
	ATF_CHECK(s.id[0] == run2 && s.requests[0] == 1);
	ATF_CHECK(s.id[1] == run1 && s.requests[1] == 2);
	store_close();
}

#define BOTH(name)							\
ATF_TC_WITHOUT_HEAD(name##_sqlite);					\
ATF_TC_BODY(name##_sqlite, tc) { name##_body(tc, 0); }			\
ATF_TC(name##_pg);							\
ATF_TC_HEAD(name##_pg, tc)						\
{									\
	atf_tc_set_md_var(tc, "require.config", "pg_host");		\
}									\
ATF_TC_BODY(name##_pg, tc) { name##_body(tc, 1); }

BOTH(a_cap_counts_up_to_it_and_no_further)
BOTH(several_calls_are_counted_together_or_not_at_all)
BOTH(the_cap_is_null_until_set)
BOTH(reads_share_a_read_transaction_ended_before_a_write)
BOTH(tools_by_host_are_the_orgs_own)
BOTH(a_call_end_shows_in_calls_page)
BOTH(the_registry_version_moves_with_registry_writes_only)
BOTH(a_runs_requests_are_listed_and_counted)

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, a_cap_counts_up_to_it_and_no_further_sqlite);
	ATF_TP_ADD_TC(tp, a_cap_counts_up_to_it_and_no_further_pg);
	ATF_TP_ADD_TC(tp,
	    several_calls_are_counted_together_or_not_at_all_sqlite);
	ATF_TP_ADD_TC(tp, several_calls_are_counted_together_or_not_at_all_pg);
	ATF_TP_ADD_TC(tp, the_cap_is_null_until_set_sqlite);
	ATF_TP_ADD_TC(tp, the_cap_is_null_until_set_pg);
	ATF_TP_ADD_TC(tp,
	    reads_share_a_read_transaction_ended_before_a_write_sqlite);
	ATF_TP_ADD_TC(tp,
	    reads_share_a_read_transaction_ended_before_a_write_pg);
	ATF_TP_ADD_TC(tp, tools_by_host_are_the_orgs_own_sqlite);
	ATF_TP_ADD_TC(tp, tools_by_host_are_the_orgs_own_pg);
	ATF_TP_ADD_TC(tp, a_call_end_shows_in_calls_page_sqlite);
	ATF_TP_ADD_TC(tp, a_call_end_shows_in_calls_page_pg);
	ATF_TP_ADD_TC(tp,
	    the_registry_version_moves_with_registry_writes_only_sqlite);
	ATF_TP_ADD_TC(tp,
	    the_registry_version_moves_with_registry_writes_only_pg);
	ATF_TP_ADD_TC(tp, a_runs_requests_are_listed_and_counted_sqlite);
	ATF_TP_ADD_TC(tp, a_runs_requests_are_listed_and_counted_pg);
	return (atf_no_error());
}
