/*
 * store_project_test: projects and usage through store.h (migration 12):
 * a project per slug per org, its tool count, a tool filed under one,
 * deleting one freeing its tools, a membership's and an invite's
 * project_access, and the usage counts.  In make check's first pass on
 * an in-memory sqlite database; in the check-pg pass (kyua variables
 * engine=pg and pg_host) the same cases on a PostgreSQL database.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg.h"
#include "store_sqlite.h"
#include "pgdb.h"

#define AT	"2026-01-01T00:00:00Z"
#define LATER	"2026-01-03T10:00:00Z"

static int	 on_pg;

/* Empty database of this pass's engine: orgs acme 1, other 2; ann, bob. */
static void
setup(const atf_tc_t *tc)
{
	const char		*seed = "INSERT INTO users (email, created_at) "
	    "VALUES ('ann@example.com', '" AT "'), ('bob@example.com', '"
	    AT "');"
	    "INSERT INTO orgs (slug, name, created_at) VALUES "
	    "('acme', 'Acme', '" AT "'), ('other', 'Other', '" AT "')";

	on_pg = pgdb_store_open(tc, "store_project");
	ATF_REQUIRE((on_pg ? pg_exec(seed) : db_exec(seed)) == 0);
}

static int
add_project(int64_t org, const char *slug, int64_t *id)
{
	struct store_project	 p;

	memset(&p, 0, sizeof(p));
	p.org_id = org;
	p.name = slug;
	p.slug = slug;
	p.created_by = "ann@example.com";
	p.created_at = AT;
	return (store_project_insert(&p, id));
}

static int64_t
add_tool(int64_t org, const char *name)
{
	struct store_tool_item	 t;
	int64_t			 id = 0;

	memset(&t, 0, sizeof(t));
	t.org_id = org;
	t.name = name;
	t.owner_id = 1;
	t.base_url = "https://api.example.com";
	t.host = "api.example.com";
	t.bindings = "[]";
	t.examples = "[]";
	t.created_at = AT;
	ATF_REQUIRE(store_tool_insert(&t, &id) == 0);
	return (id);
}

/* A membership of user in org, its token hash made of the user id. */
static void
add_member(int64_t user, int64_t org)
{
	struct store_membership	 m;
	uint8_t			 hash[STORE_HASH_LEN];
	int64_t			 id;

	memset(&m, 0, sizeof(m));
	memset(hash, (int)(user * 16 + org), sizeof(hash));
	m.user_id = user;
	m.org_id = org;
	m.role = "member";
	m.local_run_enabled = 1;
	m.created_at = AT;
	ATF_REQUIRE(store_membership_insert(&m, hash, &id) == 0);
}

/* "slug=tools" per project of org, comma separated. */
static int
project_line(const struct store_project *p, void *arg)
{
	char	*out = arg;
	char	 one[160];

	snprintf(one, sizeof(one), "%s%s=%lld", *out ? "," : "", p->slug,
	    (long long)p->tool_count);
	strlcat(out, one, 512);
	return (0);
}

static int
tool_project(const struct store_tool_item *t, void *arg)
{
	*(int64_t *)arg = t->project_id;
	return (1);
}

/* The project of tool id (name) of org, as listings and runs read it. */
static int64_t
project_of(int64_t org, int64_t tool, const char *name)
{
	struct store_sel	 sel;
	struct store_tool	 st;
	int64_t			 p = -1;

	memset(&sel, 0, sizeof(sel));
	sel.org = org;
	sel.id = tool;
	ATF_REQUIRE(store_tools(&sel, tool_project, &p) == 0);
	ATF_REQUIRE(store_tool_by_name(org, name, &st) == 0);
	ATF_CHECK_EQ(st.project_id, p);
	store_tool_clear(&st);
	return (p);
}

ATF_TC(projects_are_unique_per_org_and_count_their_tools);
ATF_TC_HEAD(projects_are_unique_per_org_and_count_their_tools, tc)
{
	atf_tc_set_md_var(tc, "descr", "a slug is unique in its org "
	    "(STORE_CONFLICT), not across orgs; the listing counts each "
	    "project's tools; a tool is filed under one and back");
}
ATF_TC_BODY(projects_are_unique_per_org_and_count_their_tools, tc)
{
	char	 line[512] = "";
	int64_t	 apollo, gemini, other, a, b;

	setup(tc);
	ATF_REQUIRE(add_project(1, "apollo", &apollo) == 0);
	ATF_REQUIRE(add_project(1, "gemini", &gemini) == 0);
	ATF_CHECK_EQ(add_project(1, "apollo", &other), STORE_CONFLICT);
	ATF_REQUIRE(add_project(2, "apollo", &other) == 0);
	a = add_tool(1, "a");
	b = add_tool(1, "b");
	ATF_CHECK_EQ(project_of(1, a, "a"), 0);
	ATF_REQUIRE(store_tool_project_set(1, a, apollo) == 0);
	ATF_REQUIRE(store_tool_project_set(1, b, apollo) == 0);
	ATF_CHECK_EQ(project_of(1, a, "a"), apollo);
	/* Another org's tool id is no tool of this org. */
	ATF_CHECK_EQ(store_tool_project_set(2, a, other), 1);
	ATF_REQUIRE(store_projects(1, project_line, line) == 0);
	ATF_CHECK_STREQ(line, "apollo=2,gemini=0");
	ATF_REQUIRE(store_tool_project_set(1, b, 0) == 0);
	ATF_CHECK_EQ(project_of(1, b, "b"), 0);
	line[0] = '\0';
	ATF_REQUIRE(store_projects(2, project_line, line) == 0);
	ATF_CHECK_STREQ(line, "apollo=0");
	store_close();
}

ATF_TC(deleting_a_project_frees_its_tools);
ATF_TC_HEAD(deleting_a_project_frees_its_tools, tc)
{
	atf_tc_set_md_var(tc, "descr", "store_project_delete makes the "
	    "project's tools org-wide and says how many; another org's "
	    "project id is 1 (none), and nothing changed");
}
ATF_TC_BODY(deleting_a_project_frees_its_tools, tc)
{
	char	 line[512] = "";
	int64_t	 apollo, a, freed;

	setup(tc);
	ATF_REQUIRE(add_project(1, "apollo", &apollo) == 0);
	a = add_tool(1, "a");
	add_tool(1, "b");
	ATF_REQUIRE(store_tool_project_set(1, a, apollo) == 0);
	ATF_REQUIRE(store_begin() == 0);
	ATF_CHECK_EQ(store_project_delete(2, apollo, &freed), 1);
	ATF_CHECK_EQ(freed, 0);
	ATF_REQUIRE(store_project_delete(1, apollo, &freed) == 0);
	ATF_REQUIRE(store_commit() == 0);
	ATF_CHECK_EQ(freed, 1);
	ATF_CHECK_EQ(project_of(1, a, "a"), 0);
	ATF_REQUIRE(store_projects(1, project_line, line) == 0);
	ATF_CHECK_STREQ(line, "");
	store_close();
}

static int
access_line(int64_t user, const char *text, void *arg)
{
	char	*out = arg;
	char	 one[160];

	snprintf(one, sizeof(one), "%s%lld:%s", *out ? " " : "",
	    (long long)user, text);
	strlcat(out, one, 512);
	return (0);
}

ATF_TC(project_access_is_kept_per_membership_and_invite);
ATF_TC_HEAD(project_access_is_kept_per_membership_and_invite, tc)
{
	atf_tc_set_md_var(tc, "descr", "a membership's project_access is set, "
	    "listed (only the scoped ones) and read with the token; NULL "
	    "clears it; an invite keeps its own");
}
ATF_TC_BODY(project_access_is_kept_per_membership_and_invite, tc)
{
	struct store_member	 m;
	struct store_invite	 iv;
	uint8_t			 hash[STORE_HASH_LEN];
	char			 line[512] = "", *json;
	int64_t			 inv;

	setup(tc);
	add_member(1, 1);
	add_member(2, 1);
	add_member(1, 2);
	ATF_REQUIRE(store_member_projects_set(1, 2, "[3]") == 0);
	ATF_REQUIRE(store_member_projects_set(2, 1, "[]") == 0);
	ATF_CHECK_EQ(store_member_projects_set(2, 2, "[1]"), 1);
	ATF_REQUIRE(store_member_projects(1, access_line, line) == 0);
	ATF_CHECK_STREQ(line, "2:[3]");
	memset(hash, 2 * 16 + 1, sizeof(hash));
	ATF_REQUIRE(store_member_by_token(hash, &m) == 0);
	ATF_CHECK_STREQ(m.project_access, "[3]");
	store_member_clear(&m);
	memset(hash, 1 * 16 + 1, sizeof(hash));
	ATF_REQUIRE(store_member_by_token(hash, &m) == 0);
	ATF_CHECK(m.project_access == NULL);
	store_member_clear(&m);
	ATF_REQUIRE(store_member_projects_set(1, 2, NULL) == 0);
	line[0] = '\0';
	ATF_REQUIRE(store_member_projects(1, access_line, line) == 0);
	ATF_CHECK_STREQ(line, "");

	memset(&iv, 0, sizeof(iv));
	iv.org_id = 1;
	iv.email = "new@example.com";
	iv.role = "member";
	iv.local_run_enabled = 1;
	iv.expires_at = 4102444800LL;
	iv.created_by = 1;
	iv.created_at = AT;
	memset(hash, 0x7e, sizeof(hash));
	ATF_REQUIRE(store_invite_insert(&iv, hash, &inv) == 0);
	ATF_REQUIRE(store_invite_projects(inv, &json) == 0);
	ATF_CHECK(json == NULL);
	ATF_REQUIRE(store_invite_projects_set(inv, "[5,6]") == 0);
	ATF_REQUIRE(store_invite_projects(inv, &json) == 0);
	ATF_CHECK_STREQ(json, "[5,6]");
	free(json);
	ATF_CHECK_EQ(store_invite_projects(inv + 100, &json), 1);
	store_close();
}

static int
usage_line(const struct store_usage_row *r, void *arg)
{
	char	*out = arg;
	char	 one[160];

	snprintf(one, sizeof(one), "%s%c:%s:%s=%lld", *out ? " " : "",
	    r->what, r->key, r->kind, (long long)r->n);
	strlcat(out, one, 1024);
	return (0);
}

static void
add_call(const char *email, const char *tool, const char *kind,
    const char *action, const char *at)
{
	struct store_call	 c;
	int64_t			 id;

	memset(&c, 0, sizeof(c));
	c.org_id = 1;
	c.user_id = 1;
	c.user_email = email;
	c.tool_name = tool;
	c.kind = kind;
	c.action = action;
	c.created_at = at;
	ATF_REQUIRE(store_call_insert(&c, &id) == 0);
}

ATF_TC(usage_counts_by_person_tool_and_day);
ATF_TC_HEAD(usage_counts_by_person_tool_and_day, tc)
{
	atf_tc_set_md_var(tc, "descr", "store_usage counts calls and local "
	    "runs (a report not again) per person and kind, server runs, "
	    "then per tool and per day, from the time given on, of the org "
	    "given");
}
ATF_TC_BODY(usage_counts_by_person_tool_and_day, tc)
{
	struct store_run	 r;
	char			 line[1024] = "";
	int64_t			 id;

	setup(tc);
	add_call("ann@example.com", "a", "call", NULL, LATER);
	add_call("ann@example.com", "a", "call", NULL, LATER);
	add_call("bob@example.com", "b", "local_run", "GRANT", LATER);
	add_call("bob@example.com", "b", "local_run", "REPORT", LATER);
	add_call("bob@example.com", "a", "call", NULL, AT);	/* too old */
	memset(&r, 0, sizeof(r));
	r.org_id = 1;
	r.user_id = 2;
	r.user_email = "bob@example.com";
	r.tool = "b";
	r.argv = "[]";
	r.created_at = LATER;
	ATF_REQUIRE(store_run_insert(&r, &id) == 0);
	r.org_id = 2;				/* another org's */
	ATF_REQUIRE(store_run_insert(&r, &id) == 0);
	ATF_REQUIRE(store_usage(1, "2026-01-02T00:00:00", usage_line,
	    line) == 0);
	ATF_CHECK_STREQ(line, "u:ann@example.com:call=2 "
	    "u:bob@example.com:local_run=1 u:bob@example.com:server_run=1 "
	    "t:a:=2 t:b:=2 d:2026-01-03:=4");
	store_close();
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, projects_are_unique_per_org_and_count_their_tools);
	ATF_TP_ADD_TC(tp, deleting_a_project_frees_its_tools);
	ATF_TP_ADD_TC(tp, project_access_is_kept_per_membership_and_invite);
	ATF_TP_ADD_TC(tp, usage_counts_by_person_tool_and_day);
	return (atf_no_error());
}
