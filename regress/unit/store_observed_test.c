/*
 * store_observed_test: the observed agents through store.h (migration
 * 16): per (email, client) of an org's calls, grants, reports and server
 * runs since a time, today's apart, by email then client in byte order,
 * without "cli", "" or NULL clients, agents or other orgs, at most the
 * rows asked.  In make check's first pass on an in-memory sqlite
 * database; in the check-pg pass (kyua variables engine=pg and pg_host)
 * the same cases on a PostgreSQL database.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg.h"
#include "store_sqlite.h"
#include "pgdb.h"

#define OLD	"2026-01-01T00:00:00Z"		/* before the window */
#define SINCE	"2026-01-02T00:00:00Z"
#define DAY2	"2026-01-02T10:00:00Z"
#define TODAY	"2026-01-03T00:00:00Z"
#define DAY3	"2026-01-03T09:00:00Z"
#define DAY3B	"2026-01-03T11:00:00Z"

static int	 on_pg;

/* Empty database of this pass's engine: orgs acme 1, other 2. */
static void
setup(const atf_tc_t *tc)
{
	const char	*seed = "INSERT INTO orgs (slug, name, created_at) "
	    "VALUES ('acme', 'Acme', '" OLD "'), ('other', 'Other', '" OLD
	    "')";

	on_pg = pgdb_store_open(tc, "store_observed");
	ATF_REQUIRE((on_pg ? pg_exec(seed) : db_exec(seed)) == 0);
}

static void
add_call(int64_t org, const char *email, const char *client, const char *at)
{
	struct store_call	 c;
	int64_t			 id;

	memset(&c, 0, sizeof(c));
	c.org_id = org;
	c.user_email = email;
	c.client = client;
	c.kind = "call";
	c.created_at = at;
	ATF_REQUIRE(store_call_insert(&c, &id) == 0);
}

static void
add_run(const char *email, const char *client, const char *at)
{
	struct store_run	 r;
	int64_t			 id;

	memset(&r, 0, sizeof(r));
	r.org_id = 1;
	r.user_email = email;
	r.tool = "t";
	r.argv = "[]";
	r.created_at = at;
	r.client = client;
	ATF_REQUIRE(store_run_insert(&r, &id) == 0);
}

static int
observed_line(const struct store_observed_row *r, void *arg)
{
	char	*out = arg;
	char	 one[200];

	snprintf(one, sizeof(one), "%s%s/%s=%lld,%lld@%s", *out ? " " : "",
	    r->member, r->client, (long long)r->n, (long long)r->today,
	    r->last_seen);
	strlcat(out, one, 1024);
	return (0);
}

ATF_TC(observed_counts_per_person_and_runtime);
ATF_TC_HEAD(observed_counts_per_person_and_runtime, tc)
{
	atf_tc_set_md_var(tc, "descr", "store_observed adds up an org's "
	    "calls and server runs per email and client since the time "
	    "given, today's apart, the last one's time, by email then "
	    "client; cli, empty and absent clients, agents, other orgs and "
	    "older rows are left out");
}
ATF_TC_BODY(observed_counts_per_person_and_runtime, tc)
{
	char	 line[1024] = "";

	setup(tc);
	add_call(1, "sam@example.com", "codex", DAY2);
	add_call(1, "sam@example.com", "codex", DAY3);
	add_run("sam@example.com", "codex", DAY3B);
	add_call(1, "sam@example.com", "claude-code", DAY2);
	add_call(1, "Zed@example.com", "claude-code", DAY3);
	add_call(1, "ann@example.com", "cli", DAY3);
	add_call(1, "ann@example.com", "", DAY3);
	add_call(1, "ann@example.com", NULL, DAY3);
	add_run("ann@example.com", "cli", DAY3);
	add_call(1, "agent-acme-ci@agents.local", "codex", DAY3);
	add_call(2, "sam@example.com", "codex", DAY3);
	add_call(1, "sam@example.com", "codex", OLD);
	ATF_REQUIRE(store_observed(1, SINCE, TODAY, 10, observed_line,
	    line) == 0);
	/* Byte order: "Z" before "s", as treg's sorted() has it. */
	ATF_CHECK_STREQ(line, "Zed@example.com/claude-code=1,1@" DAY3 " "
	    "sam@example.com/claude-code=1,0@" DAY2 " "
	    "sam@example.com/codex=3,2@" DAY3B);
	line[0] = '\0';
	ATF_REQUIRE(store_observed(1, SINCE, TODAY, 2, observed_line,
	    line) == 0);
	ATF_CHECK_STREQ(line, "Zed@example.com/claude-code=1,1@" DAY3 " "
	    "sam@example.com/claude-code=1,0@" DAY2);
	line[0] = '\0';
	ATF_REQUIRE(store_observed(2, SINCE, TODAY, 10, observed_line,
	    line) == 0);
	ATF_CHECK_STREQ(line, "sam@example.com/codex=1,1@" DAY3);
	store_close();
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, observed_counts_per_person_and_runtime);
	return (atf_no_error());
}
