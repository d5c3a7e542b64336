/*
 * store_test: the sqlite engine of store.h on an in-memory database:
 * migrations, tokens, the audit's keyset pages (server runs and grants
 * merged newest first, each row once), append-only records and the
 * version the listing cache is keyed on.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <string.h>

#include "store_sqlite.h"

#define RUNS_MAX	64

struct collect {
	char	 ids[RUNS_MAX][24];
	size_t	 n;
	size_t	 limit;
};

static void	 open_memory(void);
static void	 seed(void);
static void	 add_run(const char *, const char *);
static void	 add_grant(const char *, const char *);
static int	 collect_run(const struct store_runs_row *, void *);
static int	 collect_call(const struct store_calls_row *, void *);
static void	 walk_pages(const char *const *, size_t, int,
		    const struct collect *);

static void
open_memory(void)
{
	struct store_params	 p;
	char			 err[256];

	memset(&p, 0, sizeof(p));
	p.engine = STORE_SQLITE;
	p.path = ":memory:";
	err[0] = '\0';
	ATF_REQUIRE_MSG(store_open(&p, err, sizeof(err)) == 0, "%s", err);
}

static void
seed(void)
{
	open_memory();
	ATF_REQUIRE(db_exec("INSERT INTO users (id, email, created_at) "
	    "VALUES (1, 'a@example.com', '2026-01-01T00:00:00Z');"
	    "INSERT INTO orgs (id, slug, name, created_at) VALUES "
	    "(1, 'a', 'A', '2026-01-01T00:00:00Z'), "
	    "(2, 'b', 'B', '2026-01-01T00:00:00Z');"
	    "INSERT INTO memberships (user_id, org_id, role, token_hash, "
	    "created_at) VALUES (1, 1, 'owner', "
	    "x'0101010101010101010101010101010101010101010101010101010101010101',"
	    " '2026-01-01T00:00:00Z')") == 0);
}

static void
add_run(const char *tool, const char *at)
{
	struct store_run	 r;
	int64_t			 id;

	memset(&r, 0, sizeof(r));
	r.org_id = 1;
	r.user_id = 1;
	r.user_email = "a@example.com";
	r.tool = tool;
	r.argv = "[]";
	r.created_at = at;
	ATF_REQUIRE(store_run_insert(&r, &id) == 0);
}

static void
add_grant(const char *tool, const char *at)
{
	struct store_call	 c;
	int64_t			 id;

	memset(&c, 0, sizeof(c));
	c.org_id = 1;
	c.user_id = 1;
	c.user_email = "a@example.com";
	c.tool_name = tool;
	c.kind = "local_run";
	c.action = "GRANT";
	c.argv = "[]";
	c.created_at = at;
	ATF_REQUIRE(store_call_insert(&c, &id) == 0);
}

static int
collect_run(const struct store_runs_row *r, void *arg)
{
	struct collect	*c = arg;

	ATF_REQUIRE(c->n < RUNS_MAX);
	snprintf(c->ids[c->n++], sizeof(c->ids[0]), "%c%lld:%s", r->src,
	    (long long)r->id, r->tool);
	return (c->n >= c->limit);
}

/*
 * Page through org 1 by before_id, limit rows a page (store_runs_page_tools
 * of tools, or store_runs_page when tools is NULL): want's rows, in order,
 * each once.
 */
static void
walk_pages(const char *const *tools, size_t ntools, int limit,
    const struct collect *want)
{
	struct collect	 pg;
	char		 src = 0;
	long long	 id = 0;
	size_t		 i, seen = 0;

	for (;;) {
		memset(&pg, 0, sizeof(pg));
		pg.limit = tools == NULL ? (size_t)limit : RUNS_MAX;
		if (tools == NULL)
			ATF_REQUIRE(store_runs_page(1, src, id, collect_run,
			    &pg) == 0);
		else
			ATF_REQUIRE(store_runs_page_tools(1, tools, ntools,
			    src, id, limit, collect_run, &pg) == 0);
		ATF_REQUIRE(pg.n <= (size_t)limit);
		if (pg.n == 0)
			break;
		for (i = 0; i < pg.n; i++, seen++) {
			ATF_REQUIRE(seen < want->n);
			ATF_CHECK_STREQ(pg.ids[i], want->ids[seen]);
		}
		ATF_REQUIRE(sscanf(pg.ids[pg.n - 1], "%c%lld", &src, &id) ==
		    2);
	}
	ATF_CHECK_EQ(seen, want->n);
}

static int
collect_call(const struct store_calls_row *r, void *arg)
{
	struct collect	*c = arg;

	ATF_REQUIRE(c->n < RUNS_MAX);
	snprintf(c->ids[c->n++], sizeof(c->ids[0]), "%lld",
	    (long long)r->id);
	ATF_CHECK(r->c.path == NULL);		/* NULL stays NULL */
	return (c->n >= c->limit);
}

ATF_TC_WITHOUT_HEAD(fresh_database_migrates_and_checks_ok);
ATF_TC_BODY(fresh_database_migrates_and_checks_ok, tc)
{
	char	 why[256];

	open_memory();
	ATF_CHECK(store_check(why, sizeof(why)) == 0);
	ATF_CHECK(store_version() > 0);
	store_close();
}

ATF_TC_WITHOUT_HEAD(member_by_token_finds_only_its_hash);
ATF_TC_BODY(member_by_token_finds_only_its_hash, tc)
{
	struct store_member	 m;
	uint8_t			 h[STORE_HASH_LEN];

	seed();
	memset(h, 1, sizeof(h));
	ATF_REQUIRE(store_member_by_token(h, &m) == 0);
	ATF_CHECK_STREQ(m.role, "owner");
	ATF_CHECK_STREQ(m.email, "a@example.com");
	ATF_CHECK_STREQ(m.org_slug, "a");
	ATF_CHECK(m.tool_access == NULL);
	store_member_clear(&m);
	h[31] = 2;
	ATF_CHECK(store_member_by_token(h, &m) == 1);
	store_member_clear(&m);
	store_close();
}

ATF_TC_WITHOUT_HEAD(runs_page_merges_runs_and_grants_newest_first);
ATF_TC_BODY(runs_page_merges_runs_and_grants_newest_first, tc)
{
	struct collect	 c;

	seed();
	add_run("r1", "2026-01-01T00:00:01Z");
	add_grant("g1", "2026-01-01T00:00:02Z");
	add_run("r2", "2026-01-01T00:00:03Z");
	add_grant("g2", "2026-01-01T00:00:03Z");
	memset(&c, 0, sizeof(c));
	c.limit = RUNS_MAX;
	ATF_REQUIRE(store_runs_page(1, 0, 0, collect_run, &c) == 0);
	ATF_REQUIRE_EQ(c.n, 4);
	/* One second: the server run first. */
	ATF_CHECK_STREQ(c.ids[0], "s2:r2");
	ATF_CHECK_STREQ(c.ids[1], "l2:g2");
	ATF_CHECK_STREQ(c.ids[2], "l1:g1");
	ATF_CHECK_STREQ(c.ids[3], "s1:r1");
	memset(&c, 0, sizeof(c));
	c.limit = RUNS_MAX;
	ATF_REQUIRE(store_runs_page(2, 0, 0, collect_run, &c) == 0);
	ATF_CHECK_EQ(c.n, 0);		/* another org sees none of it */
	store_close();
}

ATF_TC_WITHOUT_HEAD(runs_pages_by_before_id_see_each_row_once);
ATF_TC_BODY(runs_pages_by_before_id_see_each_row_once, tc)
{
	struct collect	 all, pg;
	int		 t;

	seed();
	for (t = 0; t < 10; t++) {
		char	 at[32];

		/* Pairs share a second, as a busy org's rows do. */
		snprintf(at, sizeof(at), "2026-01-01T00:00:%02dZ", t / 2);
		if (t % 3 == 0)
			add_grant("g", at);
		else
			add_run("r", at);
	}
	memset(&all, 0, sizeof(all));
	all.limit = RUNS_MAX;
	ATF_REQUIRE(store_runs_page(1, 0, 0, collect_run, &all) == 0);
	ATF_REQUIRE_EQ(all.n, 10);
	walk_pages(NULL, 0, 3, &all);
	ATF_CHECK(store_runs_page(1, 's', 999, collect_run, &pg) == 1);
	store_close();
}

ATF_TC_WITHOUT_HEAD(runs_page_tools_pages_only_the_listed_tools);
ATF_TC_BODY(runs_page_tools_pages_only_the_listed_tools, tc)
{
	static const char *const tools[] = { "c", "a", "c" };
	static const char *const names[] = { "a", "b", "c" };
	struct collect	 all, want, pg;
	size_t		 i;
	int		 t;

	seed();
	for (t = 0; t < 18; t++) {
		char	 at[32];

		snprintf(at, sizeof(at), "2026-01-01T00:00:%02dZ", t / 4);
		if (t % 2 == 0)
			add_grant(names[t % 3], at);
		else
			add_run(names[t % 3], at);
	}
	memset(&all, 0, sizeof(all));
	all.limit = RUNS_MAX;
	ATF_REQUIRE(store_runs_page(1, 0, 0, collect_run, &all) == 0);
	ATF_REQUIRE_EQ(all.n, 18);
	memset(&want, 0, sizeof(want));
	for (i = 0; i < all.n; i++)
		if (strstr(all.ids[i], ":b") == NULL)
			strlcpy(want.ids[want.n++], all.ids[i],
			    sizeof(want.ids[0]));
	ATF_REQUIRE_EQ(want.n, 12);
	/* Pages of 2, "c" listed twice: the listed tools' rows, once. */
	walk_pages(tools, 3, 2, &want);
	/* NULL: every tool, as store_runs_page; none: an empty page. */
	memset(&pg, 0, sizeof(pg));
	pg.limit = RUNS_MAX;
	ATF_REQUIRE(store_runs_page_tools(1, NULL, 0, 0, 0, RUNS_MAX,
	    collect_run, &pg) == 0);
	ATF_REQUIRE_EQ(pg.n, all.n);
	for (i = 0; i < pg.n; i++)
		ATF_CHECK_STREQ(pg.ids[i], all.ids[i]);
	memset(&pg, 0, sizeof(pg));
	pg.limit = RUNS_MAX;
	ATF_REQUIRE(store_runs_page_tools(1, tools, 0, 0, 0, RUNS_MAX,
	    collect_run, &pg) == 0);
	ATF_CHECK_EQ(pg.n, 0);
	ATF_CHECK(store_runs_page_tools(1, tools, 0, 's', 999, RUNS_MAX,
	    collect_run, &pg) == 1);
	ATF_CHECK(store_runs_page_tools(1, tools, 3, 'l', 999, RUNS_MAX,
	    collect_run, &pg) == 1);
	store_close();
}

ATF_TC_WITHOUT_HEAD(calls_page_stops_when_the_caller_has_enough);
ATF_TC_BODY(calls_page_stops_when_the_caller_has_enough, tc)
{
	struct collect	 c;
	int		 i;

	seed();
	for (i = 0; i < 5; i++)
		add_grant("g", "2026-01-01T00:00:00Z");
	memset(&c, 0, sizeof(c));
	c.limit = 2;
	ATF_REQUIRE(store_calls_page(1, 0, collect_call, &c) == 0);
	ATF_REQUIRE_EQ(c.n, 2);
	ATF_CHECK_STREQ(c.ids[0], "5");
	ATF_CHECK_STREQ(c.ids[1], "4");
	memset(&c, 0, sizeof(c));
	c.limit = 10;
	ATF_REQUIRE(store_calls_page(1, 4, collect_call, &c) == 0);
	ATF_REQUIRE_EQ(c.n, 3);
	ATF_CHECK_STREQ(c.ids[0], "3");
	store_close();
}

ATF_TC_WITHOUT_HEAD(run_end_is_recorded_once);
ATF_TC_BODY(run_end_is_recorded_once, tc)
{
	struct store_run_end	 e;

	seed();
	add_run("r", "2026-01-01T00:00:00Z");
	memset(&e, 0, sizeof(e));
	e.run_id = 1;
	e.org_id = 1;
	e.outcome = "ok";
	e.has_exit = 1;
	e.created_at = "2026-01-01T00:00:01Z";
	ATF_CHECK(store_run_end_insert(&e) == 0);
	ATF_CHECK(store_run_end_insert(&e) == -1);
	ATF_CHECK(db_exec("UPDATE runs SET tool = 'x'") == -1);
	store_close();
}

ATF_TC_WITHOUT_HEAD(run_ends_batch_commits_all_or_none);
ATF_TC_BODY(run_ends_batch_commits_all_or_none, tc)
{
	struct store_run_end	 e[3];
	int			 i;

	seed();
	memset(e, 0, sizeof(e));
	for (i = 0; i < 3; i++) {
		add_run("r", "2026-01-01T00:00:00Z");
		e[i].run_id = i + 1;
		e[i].org_id = 1;
		e[i].outcome = "ok";
		e[i].has_exit = 1;
		e[i].created_at = "2026-01-01T00:00:01Z";
	}
	/* Run 3 has its end: a batch with it again fails whole. */
	ATF_REQUIRE(store_run_end_insert(&e[2]) == 0);
	ATF_CHECK(store_run_ends_insert(e, 3) == -1);
	ATF_CHECK(store_run_end_insert(&e[0]) == 0);
	/* Ends of runs 2 and, again, 1: none of it stays. */
	ATF_CHECK(store_run_ends_insert(e, 2) == -1);
	ATF_CHECK(store_run_ends_insert(&e[1], 1) == 0);
	ATF_CHECK(store_run_end_insert(&e[1]) == -1);
	ATF_CHECK(store_run_ends_insert(e, 0) == 0);
	store_close();
}

ATF_TC_WITHOUT_HEAD(version_moves_with_every_write);
ATF_TC_BODY(version_moves_with_every_write, tc)
{
	int64_t	 v;

	seed();
	v = store_version();
	ATF_CHECK_EQ(store_version(), v);
	add_run("r", "2026-01-01T00:00:00Z");
	ATF_CHECK(store_version() != v);
	store_close();
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, fresh_database_migrates_and_checks_ok);
	ATF_TP_ADD_TC(tp, member_by_token_finds_only_its_hash);
	ATF_TP_ADD_TC(tp, runs_page_merges_runs_and_grants_newest_first);
	ATF_TP_ADD_TC(tp, runs_pages_by_before_id_see_each_row_once);
	ATF_TP_ADD_TC(tp, runs_page_tools_pages_only_the_listed_tools);
	ATF_TP_ADD_TC(tp, calls_page_stops_when_the_caller_has_enough);
	ATF_TP_ADD_TC(tp, run_end_is_recorded_once);
	ATF_TP_ADD_TC(tp, run_ends_batch_commits_all_or_none);
	ATF_TP_ADD_TC(tp, version_moves_with_every_write);
	return (atf_no_error());
}
