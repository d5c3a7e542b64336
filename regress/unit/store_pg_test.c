/*
 * store_pg_test: the PostgreSQL engine of store.h against a real server
 * (scripts/pg.sh; make check passes its socket directory as the kyua
 * variable pg_host).  Every test case gets a database of its own.  A
 * second libpq connection plays the other host.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tregd.h"
#include "store.h"
#include "pgdb.h"

static char	 conninfo[512];
static PGconn	*other;

#define NEED_PG(tc)							\
	atf_tc_set_md_var(tc, "require.config", "pg_host")

/* A fresh database, the engine open on it, and the "other host". */
static void
pg_setup(const atf_tc_t *tc)
{
	char		 err[STORE_ERROR_MAX];
	struct store_params sp;

	pgdb_create(tc, "store_test", conninfo, sizeof(conninfo));
	memset(&sp, 0, sizeof(sp));
	sp.engine = STORE_POSTGRESQL;
	sp.conninfo = conninfo;
	ATF_REQUIRE_MSG(store_pg_ops.open(&sp, err, sizeof(err)) == 0, "%s",
	    err);
	other = PQconnectdb(conninfo);
	ATF_REQUIRE(PQstatus(other) == CONNECTION_OK);
}

static void
other_exec(const char *sql)
{
	PGresult	*res = PQexec(other, sql);

	ATF_REQUIRE_MSG(PQresultStatus(res) == PGRES_COMMAND_OK ||
	    PQresultStatus(res) == PGRES_TUPLES_OK, "%s: %s", sql,
	    PQerrorMessage(other));
	PQclear(res);
}

static int
other_fails(const char *sql)
{
	PGresult	*res = PQexec(other, sql);
	int		 bad = PQresultStatus(res) == PGRES_FATAL_ERROR;

	PQclear(res);
	return (bad);
}

/* One org, one user, one membership whose token hash is 32 x 'A'. */
static void
fixture_member(void)
{
	other_exec("INSERT INTO users (email, created_at) VALUES "
	    "('ann@example.com', '2026-01-01T00:00:00Z');"
	    "INSERT INTO orgs (slug, name, created_at) VALUES "
	    "('acme', 'Acme', '2026-01-01T00:00:00Z');"
	    "INSERT INTO memberships (user_id, org_id, role, token_hash, "
	    "tool_access, created_at) VALUES (1, 1, 'admin', "
	    "convert_to(repeat('A', 32), 'UTF8'), '[\"gh\"]', "
	    "'2026-01-01T00:00:00Z')");
}

ATF_TC(opens_and_migrates_twice);
ATF_TC_HEAD(opens_and_migrates_twice, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(opens_and_migrates_twice, tc)
{
	struct store_params	 sp;
	char			 err[STORE_ERROR_MAX];

	pg_setup(tc);
	store_pg_ops.close();
	memset(&sp, 0, sizeof(sp));
	sp.engine = STORE_POSTGRESQL;
	sp.conninfo = conninfo;
	ATF_REQUIRE_MSG(store_pg_ops.open(&sp, err, sizeof(err)) == 0, "%s",
	    err);
	ATF_REQUIRE(store_pg_ops.check(err, sizeof(err)) == 0);
	ATF_REQUIRE(store_pg_ops.version() > 0);
}

ATF_TC(a_wrong_password_is_refused_without_echoing_it);
ATF_TC_HEAD(a_wrong_password_is_refused_without_echoing_it, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(a_wrong_password_is_refused_without_echoing_it, tc)
{
	struct store_params	 sp;
	char			 err[STORE_ERROR_MAX], ci[512];

	snprintf(ci, sizeof(ci), "host=%s user=tregd dbname=no_such_db",
	    atf_tc_get_config_var(tc, "pg_host"));
	memset(&sp, 0, sizeof(sp));
	sp.engine = STORE_POSTGRESQL;
	sp.conninfo = ci;
	sp.password = "sekrit-pw-123";
	ATF_REQUIRE(store_pg_ops.open(&sp, err, sizeof(err)) == -1);
	ATF_REQUIRE_MSG(strstr(err, "no_such_db") != NULL, "%s", err);
	ATF_REQUIRE(strstr(err, "sekrit-pw-123") == NULL);
}

ATF_TC(conninfo_with_a_password_is_refused);
ATF_TC_HEAD(conninfo_with_a_password_is_refused, tc)
{
}
ATF_TC_BODY(conninfo_with_a_password_is_refused, tc)
{
	char	 why[256];

	ATF_REQUIRE(pg_conninfo_check("host=db dbname=t", why,
	    sizeof(why)) == 0);
	ATF_REQUIRE(pg_conninfo_check("host=db password=x", why,
	    sizeof(why)) == -1);
	ATF_REQUIRE(pg_conninfo_check("postgresql://u:pw@db/t", why,
	    sizeof(why)) == -1);
	ATF_REQUIRE(strstr(why, "pw") == NULL || strstr(why, "password"));
	ATF_REQUIRE(pg_conninfo_check("nonsense", why, sizeof(why)) == -1);
}

ATF_TC(member_by_token_finds_only_its_hash);
ATF_TC_HEAD(member_by_token_finds_only_its_hash, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(member_by_token_finds_only_its_hash, tc)
{
	struct store_member	 m;
	uint8_t			 h[STORE_HASH_LEN];

	pg_setup(tc);
	fixture_member();
	memset(h, 'A', sizeof(h));
	ATF_REQUIRE(store_pg_ops.member_by_token(h, &m) == 0);
	ATF_REQUIRE_STREQ(m.email, "ann@example.com");
	ATF_REQUIRE_STREQ(m.org_slug, "acme");
	ATF_REQUIRE_STREQ(m.role, "admin");
	ATF_REQUIRE_STREQ(m.tool_access, "[\"gh\"]");
	ATF_REQUIRE_EQ(m.local_run_enabled, 1);
	ATF_REQUIRE_EQ(m.org_id, 1);
	free(m.tool_access);
	h[31] = 'B';
	ATF_REQUIRE(store_pg_ops.member_by_token(h, &m) == 1);
}

ATF_TC(revoked_on_the_other_host_fails_at_once);
ATF_TC_HEAD(revoked_on_the_other_host_fails_at_once, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(revoked_on_the_other_host_fails_at_once, tc)
{
	struct store_member	 m;
	uint8_t			 h[STORE_HASH_LEN];
	int64_t			 v;

	pg_setup(tc);
	fixture_member();
	memset(h, 'A', sizeof(h));
	ATF_REQUIRE(store_pg_ops.member_by_token(h, &m) == 0);
	free(m.tool_access);
	v = store_pg_ops.version();
	other_exec("DELETE FROM memberships");
	ATF_REQUIRE(store_pg_ops.version() > v);
	ATF_REQUIRE(store_pg_ops.member_by_token(h, &m) == 1);
}

ATF_TC(version_moves_with_every_write_of_any_connection);
ATF_TC_HEAD(version_moves_with_every_write_of_any_connection, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(version_moves_with_every_write_of_any_connection, tc)
{
	int64_t		 v0, v1;

	pg_setup(tc);
	v0 = store_pg_ops.version();
	fixture_member();
	v1 = store_pg_ops.version();
	ATF_REQUIRE(v1 > v0);
	/* Not before its commit: a reader never sees a newer number. */
	other_exec("BEGIN; UPDATE orgs SET name = 'Acme 2'");
	ATF_REQUIRE_EQ(store_pg_ops.version(), v1);
	other_exec("COMMIT");
	ATF_REQUIRE(store_pg_ops.version() > v1);
	v1 = store_pg_ops.version();
	ATF_REQUIRE(store_pg_ops.begin() == 0);
	ATF_REQUIRE(store_pg_ops.secret_set_sealed(99, "x", 1) == 1);
	ATF_REQUIRE(store_pg_ops.commit() == 0);
	ATF_REQUIRE(store_pg_ops.version() > v1);
}

ATF_TC(sealed_values_round_trip_and_reseal);
ATF_TC_HEAD(sealed_values_round_trip_and_reseal, tc)
{
	NEED_PG(tc);
}

static int
count_sealed(int64_t id, int64_t org, const void *p, size_t len, void *arg)
{
	int	*n = arg;

	if (len == 3 && memcmp(p, "\0\1\2", 3) == 0)
		(*n)++;
	return (0);
}

ATF_TC_BODY(sealed_values_round_trip_and_reseal, tc)
{
	struct store_secret	 s;
	char			 sql[256];
	int			 i, n = 0;

	pg_setup(tc);
	fixture_member();
	for (i = 0; i < 70; i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO secrets (org_id, name, "
		    "kind, owner_id, sealed, created_at) VALUES (1, 'S%d', "
		    "'env', 1, '\\x00ff', '2026-01-01T00:00:00Z')", i);
		other_exec(sql);
	}
	ATF_REQUIRE(store_pg_ops.secret_get(1, 1, &s) == 0);
	ATF_REQUIRE_STREQ(s.name, "S0");
	ATF_REQUIRE_EQ(s.sealedlen, 2);
	ATF_REQUIRE(memcmp(s.sealed, "\0\377", 2) == 0);
	free(s.sealed);
	ATF_REQUIRE(store_pg_ops.secret_get(2, 1, &s) == 1);
	for (i = 1; i <= 70; i++)
		ATF_REQUIRE(store_pg_ops.secret_set_sealed(i, "\0\1\2", 3) ==
		    0);
	ATF_REQUIRE(store_pg_ops.secrets_each_sealed(count_sealed, &n) == 0);
	ATF_REQUIRE_EQ(n, 70);
}

ATF_TC(audit_rows_are_append_only);
ATF_TC_HEAD(audit_rows_are_append_only, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(audit_rows_are_append_only, tc)
{
	struct store_run	 r;
	struct store_run_end	 e;
	int64_t			 id = 0;

	pg_setup(tc);
	fixture_member();
	memset(&r, 0, sizeof(r));
	r.org_id = 1;
	r.user_id = 1;
	r.user_email = "ann@example.com";
	r.tool = "gh";
	r.argv = "[\"gh\"]";
	r.created_at = "2026-01-02T00:00:00Z";
	ATF_REQUIRE(store_pg_ops.run_insert(&r, &id) == 0);
	ATF_REQUIRE(id > 0);
	memset(&e, 0, sizeof(e));
	e.run_id = id;
	e.org_id = 1;
	e.outcome = "ok";
	e.has_exit = 1;
	e.created_at = r.created_at;
	ATF_REQUIRE(store_pg_ops.run_end_insert(&e) == 0);
	ATF_REQUIRE(store_pg_ops.run_end_insert(&e) == -1);
	ATF_REQUIRE(other_fails("UPDATE runs SET tool = 'x'"));
	ATF_REQUIRE(other_fails("DELETE FROM runs"));
	ATF_REQUIRE(other_fails("UPDATE run_ends SET outcome = 'failed'"));
	/* Deleting the org takes its records with it. */
	other_exec("DELETE FROM orgs");
	ATF_REQUIRE(!other_fails("SELECT 1"));
}

ATF_TC(run_ends_batch_commits_all_or_none);
ATF_TC_HEAD(run_ends_batch_commits_all_or_none, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(run_ends_batch_commits_all_or_none, tc)
{
	struct store_run	 r;
	struct store_run_end	 e[3];
	int64_t			 id;
	int			 i;

	pg_setup(tc);
	fixture_member();
	memset(&r, 0, sizeof(r));
	r.org_id = 1;
	r.user_email = "ann@example.com";
	r.tool = "gh";
	r.argv = "[]";
	r.created_at = "2026-01-02T00:00:00Z";
	memset(e, 0, sizeof(e));
	for (i = 0; i < 3; i++) {
		ATF_REQUIRE(store_pg_ops.run_insert(&r, &id) == 0);
		e[i].run_id = id;
		e[i].org_id = 1;
		e[i].outcome = "ok";
		e[i].has_exit = 1;
		e[i].created_at = r.created_at;
	}
	/* The last run has its end: a batch with it again fails whole. */
	ATF_REQUIRE(store_pg_ops.run_end_insert(&e[2]) == 0);
	ATF_CHECK(store_pg_ops.run_ends_insert(e, 3) == -1);
	ATF_CHECK(store_pg_ops.run_end_insert(&e[0]) == 0);
	ATF_CHECK(store_pg_ops.run_ends_insert(e, 2) == -1);
	ATF_CHECK(store_pg_ops.run_ends_insert(&e[1], 1) == 0);
	ATF_CHECK(store_pg_ops.run_end_insert(&e[1]) == -1);
	ATF_CHECK(store_pg_ops.run_ends_insert(e, 0) == 0);
}

struct seen {
	char	 ids[64][24];
	int	 n, stop;
};

static int
see_run(const struct store_runs_row *r, void *arg)
{
	struct seen	*s = arg;

	snprintf(s->ids[s->n++], sizeof(s->ids[0]), "%c%lld%s", r->src,
	    (long long)r->id, *r->outcome ? r->outcome : "-");
	return (s->n >= s->stop);
}

ATF_TC(runs_page_merges_newest_first_and_pages);
ATF_TC_HEAD(runs_page_merges_newest_first_and_pages, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(runs_page_merges_newest_first_and_pages, tc)
{
	struct store_run	 r;
	struct store_call	 c;
	struct store_run_end	 e;
	struct seen		 s;
	char			 at[32];
	int64_t			 id;
	int			 i;

	pg_setup(tc);
	fixture_member();
	memset(&r, 0, sizeof(r));
	memset(&c, 0, sizeof(c));
	r.org_id = c.org_id = 1;
	r.user_email = c.user_email = "ann@example.com";
	r.tool = c.tool_name = "gh";
	r.argv = c.argv = "[]";
	c.kind = "local_run";
	c.action = "GRANT";
	/* 100 server runs and 100 grants, pairs at one second each. */
	for (i = 0; i < 100; i++) {
		snprintf(at, sizeof(at), "2026-01-01T00:%02d:%02dZ", i / 60,
		    i % 60);
		r.created_at = c.created_at = at;
		ATF_REQUIRE(store_pg_ops.run_insert(&r, &id) == 0);
		ATF_REQUIRE(store_pg_ops.call_insert(&c, &id) == 0);
	}
	memset(&e, 0, sizeof(e));
	e.run_id = 100;
	e.org_id = 1;
	e.outcome = "not_run";
	e.created_at = at;
	ATF_REQUIRE(store_pg_ops.run_end_insert(&e) == 0);
	memset(&s, 0, sizeof(s));
	s.stop = 3;
	ATF_REQUIRE(store_pg_ops.runs_page(1, 0, 0, see_run, &s) == 0);
	/* run 100 never ran: not listed; 's' before 'l' at one time. */
	ATF_REQUIRE_STREQ(s.ids[0], "l100-");
	ATF_REQUIRE_STREQ(s.ids[1], "s99-");
	ATF_REQUIRE_STREQ(s.ids[2], "l99-");
	memset(&s, 0, sizeof(s));
	s.stop = 2;
	ATF_REQUIRE(store_pg_ops.runs_page(0, 's', 99, see_run, &s) == 0);
	ATF_REQUIRE_STREQ(s.ids[0], "l99-");
	ATF_REQUIRE_STREQ(s.ids[1], "s98-");
	/* Past the keyset page size, to the end. */
	memset(&s, 0, sizeof(s));
	s.stop = 64;
	ATF_REQUIRE(store_pg_ops.runs_page(1, 's', 40, see_run, &s) == 0);
	ATF_REQUIRE_EQ(s.n, 64);
	ATF_REQUIRE_STREQ(s.ids[63], "s8-");
	memset(&s, 0, sizeof(s));
	s.stop = 64;
	ATF_REQUIRE(store_pg_ops.runs_page(2, 0, 0, see_run, &s) == 0);
	ATF_REQUIRE_EQ(s.n, 0);
}

static int
see_call(const struct store_calls_row *r, void *arg)
{
	struct seen	*s = arg;

	snprintf(s->ids[s->n++ % 64], sizeof(s->ids[0]), "%lld:%s:%s",
	    (long long)r->id, r->c.kind, r->org_slug);
	return (s->n >= s->stop);
}

ATF_TC(calls_page_walks_ids_down);
ATF_TC_HEAD(calls_page_walks_ids_down, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(calls_page_walks_ids_down, tc)
{
	struct store_call	 c;
	struct seen		 s;
	int64_t			 id;
	int			 i;

	pg_setup(tc);
	fixture_member();
	memset(&c, 0, sizeof(c));
	c.org_id = 1;
	c.user_email = "ann@example.com";
	c.kind = "call";
	c.created_at = "2026-01-01T00:00:00Z";
	for (i = 0; i < 150; i++)
		ATF_REQUIRE(store_pg_ops.call_insert(&c, &id) == 0);
	memset(&s, 0, sizeof(s));
	s.stop = 1000;
	ATF_REQUIRE(store_pg_ops.calls_page(1, 0, see_call, &s) == 0);
	ATF_REQUIRE_EQ(s.n, 150);
	memset(&s, 0, sizeof(s));
	s.stop = 2;
	ATF_REQUIRE(store_pg_ops.calls_page(0, 100, see_call, &s) == 0);
	ATF_REQUIRE_STREQ(s.ids[0], "99:call:acme");
	ATF_REQUIRE_STREQ(s.ids[1], "98:call:acme");
}

static int
see_deny(const struct store_deny *d, void *arg)
{
	struct seen	*s = arg;

	snprintf(s->ids[s->n++ % 64], sizeof(s->ids[0]), "%s:%s:%lld",
	    d->host != NULL ? d->host : "NULL",
	    d->method != NULL ? d->method : "NULL", (long long)d->user_id);
	return (0);
}

ATF_TC(deny_rules_round_trip_with_null_for_empty);
ATF_TC_HEAD(deny_rules_round_trip_with_null_for_empty, tc)
{
	NEED_PG(tc);
}
ATF_TC_BODY(deny_rules_round_trip_with_null_for_empty, tc)
{
	struct store_deny	 d;
	struct store_counts	 c;
	struct seen		 s;
	int64_t			 id1, id2, n;

	pg_setup(tc);
	fixture_member();
	memset(&d, 0, sizeof(d));
	d.org_id = 1;
	d.host = "api.example.com";
	d.path_prefix = "";
	d.method = "";
	d.note = "";
	d.created_by = 1;
	d.created_at = "2026-01-01T00:00:00Z";
	ATF_REQUIRE(store_pg_ops.deny_insert(&d, &id1) == 0);
	d.user_id = 7;
	d.method = "POST";
	ATF_REQUIRE(store_pg_ops.deny_insert(&d, &id2) == 0);
	ATF_REQUIRE(id2 > id1);
	memset(&s, 0, sizeof(s));
	ATF_REQUIRE(store_pg_ops.deny_rules(1, 1, see_deny, &s) == 0);
	ATF_REQUIRE_EQ(s.n, 1);
	ATF_REQUIRE_STREQ(s.ids[0], "api.example.com:NULL:0");
	memset(&s, 0, sizeof(s));
	ATF_REQUIRE(store_pg_ops.deny_rules(1, -1, see_deny, &s) == 0);
	ATF_REQUIRE_EQ(s.n, 2);
	ATF_REQUIRE(store_pg_ops.deny_count(1, &n) == 0);
	ATF_REQUIRE_EQ(n, 2);
	ATF_REQUIRE(store_pg_ops.deny_get(id2, see_deny, &s) == 0);
	ATF_REQUIRE(store_pg_ops.deny_delete(2, id2) == 1);
	ATF_REQUIRE(store_pg_ops.deny_delete(1, id2) == 0);
	ATF_REQUIRE(store_pg_ops.deny_get(id2, see_deny, &s) == 1);
	ATF_REQUIRE(store_pg_ops.member_of(1, 1) == 0);
	ATF_REQUIRE(store_pg_ops.member_of(1, 2) == 1);
	ATF_REQUIRE(store_pg_ops.counts(&c) == 0);
	ATF_REQUIRE_EQ(c.users, 1);
	ATF_REQUIRE_EQ(c.orgs, 1);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, opens_and_migrates_twice);
	ATF_TP_ADD_TC(tp, a_wrong_password_is_refused_without_echoing_it);
	ATF_TP_ADD_TC(tp, conninfo_with_a_password_is_refused);
	ATF_TP_ADD_TC(tp, member_by_token_finds_only_its_hash);
	ATF_TP_ADD_TC(tp, revoked_on_the_other_host_fails_at_once);
	ATF_TP_ADD_TC(tp, version_moves_with_every_write_of_any_connection);
	ATF_TP_ADD_TC(tp, sealed_values_round_trip_and_reseal);
	ATF_TP_ADD_TC(tp, audit_rows_are_append_only);
	ATF_TP_ADD_TC(tp, run_ends_batch_commits_all_or_none);
	ATF_TP_ADD_TC(tp, runs_page_merges_newest_first_and_pages);
	ATF_TP_ADD_TC(tp, calls_page_walks_ids_down);
	ATF_TP_ADD_TC(tp, deny_rules_round_trip_with_null_for_empty);
	return (atf_no_error());
}
