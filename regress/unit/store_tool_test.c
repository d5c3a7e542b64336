/*
 * store_tool_test: the registry's store functions (secrets, tools, the
 * secrets a tool uses, skills) through store.h.  In make check's first
 * pass they run on an in-memory sqlite database; in the check-pg pass
 * (kyua variables engine=pg and pg_host, see scripts/pg.sh) the same
 * cases run on a PostgreSQL database of their own.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store_pg.h"
#include "store_sqlite.h"
#include "pgdb.h"

#define AT	"2026-01-01T00:00:00Z"
#define ROWS_MAX	16

static int	 on_pg;

/* What a listing gave: "id:name:detail" per row. */
struct rows {
	char	 r[ROWS_MAX][160];
	size_t	 n;
};

/*
 * The engine of this pass, open on an empty database, with two orgs
 * (acme 1, other 2) and two users (ann 1, bob 2).
 */
static void
setup(const atf_tc_t *tc)
{
	const char		*seed = "INSERT INTO users (email, created_at) "
	    "VALUES ('ann@example.com', '" AT "'), ('bob@example.com', '"
	    AT "');"
	    "INSERT INTO orgs (slug, name, created_at) VALUES "
	    "('acme', 'Acme', '" AT "'), ('other', 'Other', '" AT "')";

	on_pg = pgdb_store_open(tc, "store_tool");
	ATF_REQUIRE((on_pg ? pg_exec(seed) : db_exec(seed)) == 0);
}

static int64_t
add_secret(int64_t org, const char *name, int64_t bundle)
{
	struct store_secret	 s;
	int64_t			 id = 0;

	memset(&s, 0, sizeof(s));
	s.org_id = org;
	strlcpy(s.name, name, sizeof(s.name));
	strlcpy(s.kind, "env", sizeof(s.kind));
	s.owner_id = 1;
	s.bundle_id = bundle;
	strlcpy(s.created_at, AT, sizeof(s.created_at));
	ATF_REQUIRE(store_secret_insert(&s, &id) == 0);
	ATF_REQUIRE(id > 0);
	return (id);
}

/* A tool: 0 and *id, or what the store answered. */
static int
add_tool(int64_t org, const char *name, const char *cli, int64_t bundle,
    int64_t *id)
{
	struct store_tool_item	 t;

	memset(&t, 0, sizeof(t));
	t.org_id = org;
	t.name = name;
	t.owner_id = 2;
	t.base_url = "https://api.example.com/v1";
	t.host = "api.example.com";
	t.bindings = "[]";
	t.cli = cli;
	t.examples = "[]";
	t.bundle_id = bundle;
	t.created_at = AT;
	return (store_tool_insert(&t, id));
}

static int64_t
add_bundle(int64_t org, const char *name)
{
	struct store_bundle_item b;
	int64_t			 id = 0;

	memset(&b, 0, sizeof(b));
	b.org_id = org;
	b.name = name;
	b.owner_id = 1;
	b.recipe = "do it";
	b.files = "{\"a.md\":\"x\"}";
	b.created_at = AT;
	ATF_REQUIRE(store_bundle_insert(&b, &id) == 0);
	return (id);
}

static void
row_add(struct rows *r, int64_t id, const char *name, const char *detail)
{
	ATF_REQUIRE(r->n < ROWS_MAX);
	snprintf(r->r[r->n++], sizeof(r->r[0]), "%lld:%s:%s", (long long)id,
	    name, detail != NULL ? detail : "(null)");
}

static int
see_tool(const struct store_tool_item *t, void *arg)
{
	char	 d[128];

	snprintf(d, sizeof(d), "%s/%s/%s", t->owner_email ? t->owner_email :
	    "(null)", t->cli ? t->cli : "(null)", t->bundle);
	row_add(arg, t->id, t->name, d);
	return (0);
}

static int
see_secret(const struct store_secret_item *s, void *arg)
{
	row_add(arg, s->id, s->name, s->owner_email);
	return (0);
}

static int
see_user(const char *tool, const char *bundle, void *arg)
{
	row_add(arg, 0, tool != NULL ? tool : "(skill)", bundle);
	return (0);
}

static int
see_bundle(const struct store_bundle_item *b, void *arg)
{
	char	 d[128];

	snprintf(d, sizeof(d), "%s/%s", b->recipe, b->files);
	row_add(arg, b->id, b->name, d);
	return (0);
}

static struct rows
tools_of(int64_t org, int64_t id, const char *name, int64_t bundle)
{
	struct store_sel	 sel;
	struct rows		 r;

	memset(&r, 0, sizeof(r));
	memset(&sel, 0, sizeof(sel));
	sel.org = org;
	sel.id = id;
	sel.name = name;
	sel.bundle = bundle;
	ATF_REQUIRE(store_tools(&sel, see_tool, &r) == 0);
	return (r);
}

ATF_TC_WITHOUT_HEAD(secrets_are_found_only_in_their_org);
ATF_TC_BODY(secrets_are_found_only_in_their_org, tc)
{
	struct store_ref	 ref;
	struct store_sel	 sel;
	struct rows		 r;
	int64_t			 id;

	setup(tc);
	id = add_secret(1, "GH_TOKEN", 0);
	ATF_REQUIRE(store_ref_get(STORE_SECRET, 2, id, NULL, &ref) == 1);
	ATF_REQUIRE(store_ref_get(STORE_SECRET, 1, id, NULL, &ref) == 0);
	ATF_REQUIRE_EQ(ref.owner_id, 1);
	ATF_REQUIRE_STREQ(ref.name, "GH_TOKEN");
	ATF_REQUIRE_STREQ(ref.detail, "env");
	memset(&sel, 0, sizeof(sel));
	memset(&r, 0, sizeof(r));
	sel.org = 2;
	ATF_REQUIRE(store_secrets(&sel, see_secret, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 0);
	sel.org = 1;
	ATF_REQUIRE(store_secrets(&sel, see_secret, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 1);
	ATF_REQUIRE_STREQ(r.r[0] + strcspn(r.r[0], ":"),
	    ":GH_TOKEN:ann@example.com");
	ATF_REQUIRE(store_secret_delete(2, id) == 1);
	ATF_REQUIRE(store_secret_update(2, id, "X", "param") == 1);
}

ATF_TC_WITHOUT_HEAD(a_new_value_resets_the_secret_status);
ATF_TC_BODY(a_new_value_resets_the_secret_status, tc)
{
	struct store_secret	 s;
	int64_t			 id;
	const char		*mark = "UPDATE secrets SET status = 'failed', "
	    "checked_at = '" AT "'";

	setup(tc);
	id = add_secret(1, "GH_TOKEN", 0);
	ATF_REQUIRE((on_pg ? pg_exec(mark) : db_exec(mark)) == 0);
	ATF_REQUIRE(store_secret_set_value(1, id, "\0\1\2", 3) == 0);
	ATF_REQUIRE(store_secret_set_value(2, id, "\0\1\2", 3) == 1);
	ATF_REQUIRE(store_secret_get(1, id, &s) == 0);
	ATF_REQUIRE_EQ(s.sealedlen, 3);
	ATF_REQUIRE(memcmp(s.sealed, "\0\1\2", 3) == 0);
	ATF_REQUIRE_STREQ(s.status, "unknown");
	ATF_REQUIRE_STREQ(s.checked_at, "");
	store_secret_clear(&s);
	ATF_REQUIRE(store_secret_update(1, id, NULL, "param") == 0);
	ATF_REQUIRE(store_secret_get(1, id, &s) == 0);
	ATF_REQUIRE_STREQ(s.name, "GH_TOKEN");
	ATF_REQUIRE_STREQ(s.kind, "param");
	store_secret_clear(&s);
}

ATF_TC_WITHOUT_HEAD(a_taken_tool_name_answers_store_taken);
ATF_TC_BODY(a_taken_tool_name_answers_store_taken, tc)
{
	struct store_tool_item	 t;
	int64_t			 a, b, c;

	setup(tc);
	ATF_REQUIRE(add_tool(1, "gh", NULL, 0, &a) == 0);
	ATF_REQUIRE(add_tool(2, "gh", NULL, 0, &c) == 0);
	ATF_REQUIRE(store_begin() == 0);
	ATF_REQUIRE_EQ(add_tool(1, "gh", NULL, 0, &b), STORE_TAKEN);
	store_rollback();
	ATF_REQUIRE(add_tool(1, "jira", NULL, 0, &b) == 0);
	ATF_REQUIRE(store_tool_name_used(1, "gh", 0) == 0);
	ATF_REQUIRE(store_tool_name_used(1, "gh", a) == 1);
	ATF_REQUIRE(store_tool_name_used(1, "nope", 0) == 1);
	memset(&t, 0, sizeof(t));
	t.id = b;
	t.org_id = 1;
	t.name = "gh";
	t.base_url = "https://x.example.com";
	t.host = "x.example.com";
	t.bindings = "[]";
	t.examples = "[]";
	ATF_REQUIRE_EQ(store_tool_update(&t), STORE_TAKEN);
	t.name = "jira2";
	ATF_REQUIRE(store_tool_update(&t) == 0);
	ATF_REQUIRE_EQ(tools_of(1, 0, "jira2", 0).n, 1);
	t.org_id = 2;
	ATF_REQUIRE(store_tool_update(&t) == 1);
}

ATF_TC_WITHOUT_HEAD(tools_are_listed_by_selection_in_id_order);
ATF_TC_BODY(tools_are_listed_by_selection_in_id_order, tc)
{
	struct rows	 r;
	int64_t		 skill, a, b, c, d;

	setup(tc);
	skill = add_bundle(1, "ops");
	ATF_REQUIRE(add_tool(1, "zz", "{\"bin\":\"gh\"}", 0, &a) == 0);
	ATF_REQUIRE(add_tool(1, "aa", NULL, skill, &b) == 0);
	ATF_REQUIRE(add_tool(2, "mm", NULL, 0, &c) == 0);
	ATF_REQUIRE(add_tool(1, "bb", NULL, 0, &d) == 0);
	r = tools_of(1, 0, NULL, 0);
	ATF_REQUIRE_EQ(r.n, 3);
	ATF_REQUIRE(strstr(r.r[0], ":zz:bob@example.com/{\"bin\":\"gh\"}/") !=
	    NULL);
	ATF_REQUIRE(strstr(r.r[1], ":aa:bob@example.com/(null)/ops") != NULL);
	ATF_REQUIRE(strstr(r.r[2], ":bb:") != NULL);
	ATF_REQUIRE_EQ(tools_of(1, 0, NULL, skill).n, 1);
	ATF_REQUIRE_EQ(tools_of(1, c, NULL, 0).n, 0);
	ATF_REQUIRE_EQ(tools_of(2, c, NULL, 0).n, 1);
	ATF_REQUIRE_EQ(tools_of(2, 0, "zz", 0).n, 0);
	r = tools_of(1, 0, "zz", 0);
	ATF_REQUIRE_EQ(r.n, 1);
	ATF_REQUIRE(store_tool_delete(2, a) == 1);
	ATF_REQUIRE(store_tool_delete(1, a) == 0);
	ATF_REQUIRE_EQ(tools_of(1, 0, NULL, 0).n, 2);
}

ATF_TC_WITHOUT_HEAD(tools_by_slug_list_one_org_or_every_org);
ATF_TC_BODY(tools_by_slug_list_one_org_or_every_org, tc)
{
	struct rows	 r;
	int64_t		 id;

	setup(tc);
	ATF_REQUIRE(add_tool(2, "b", NULL, 0, &id) == 0);
	ATF_REQUIRE(add_tool(1, "z", NULL, 0, &id) == 0);
	ATF_REQUIRE(add_tool(1, "a", NULL, 0, &id) == 0);
	memset(&r, 0, sizeof(r));
	ATF_REQUIRE(store_tools_by_slug("", see_tool, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 3);
	ATF_REQUIRE(strstr(r.r[0], ":a:") && strstr(r.r[1], ":z:") &&
	    strstr(r.r[2], ":b:"));
	memset(&r, 0, sizeof(r));
	ATF_REQUIRE(store_tools_by_slug("other", see_tool, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 1);
	memset(&r, 0, sizeof(r));
	ATF_REQUIRE(store_tools_by_slug("none", see_tool, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 0);
}

ATF_TC_WITHOUT_HEAD(secret_users_are_its_tools_by_name_then_its_skill);
ATF_TC_BODY(secret_users_are_its_tools_by_name_then_its_skill, tc)
{
	struct rows	 r;
	int64_t		 skill, s, t1, t2, ids[1];

	setup(tc);
	skill = add_bundle(1, "ops");
	s = add_secret(1, "K", skill);
	ATF_REQUIRE(add_tool(1, "zeta", NULL, 0, &t1) == 0);
	ATF_REQUIRE(add_tool(1, "alpha", NULL, skill, &t2) == 0);
	ids[0] = s;
	ATF_REQUIRE(store_tool_secrets_set(t1, ids, 1) == 0);
	ATF_REQUIRE(store_tool_secrets_set(t2, ids, 1) == 0);
	memset(&r, 0, sizeof(r));
	ATF_REQUIRE(store_secret_users(s, see_user, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 3);
	ATF_REQUIRE_STREQ(r.r[0], "0:alpha:ops");
	ATF_REQUIRE_STREQ(r.r[1], "0:zeta:");
	ATF_REQUIRE_STREQ(r.r[2], "0:(skill):ops");
	ATF_REQUIRE(store_tool_secrets_set(t1, ids, 0) == 0);
	memset(&r, 0, sizeof(r));
	ATF_REQUIRE(store_secret_users(s, see_user, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 2);
}

ATF_TC_WITHOUT_HEAD(a_skill_goes_with_its_tools_and_secrets);
ATF_TC_BODY(a_skill_goes_with_its_tools_and_secrets, tc)
{
	struct store_ref	 ref;
	struct store_sel	 sel;
	struct rows		 r;
	char			 tool[64], secret[64];
	int64_t			 skill, s, t1, t2, ids[1];

	setup(tc);
	skill = add_bundle(1, "ops");
	s = add_secret(1, "K", skill);
	ATF_REQUIRE(add_tool(1, "inside", NULL, skill, &t1) == 0);
	ATF_REQUIRE(add_tool(1, "outside", NULL, 0, &t2) == 0);
	ids[0] = s;
	ATF_REQUIRE(store_tool_secrets_set(t1, ids, 1) == 0);
	ATF_REQUIRE(store_bundle_outside_user(skill, tool, secret,
	    sizeof(tool)) == 1);
	ATF_REQUIRE(store_tool_secrets_set(t2, ids, 1) == 0);
	ATF_REQUIRE(store_bundle_outside_user(skill, tool, secret,
	    sizeof(tool)) == 0);
	ATF_REQUIRE_STREQ(tool, "outside");
	ATF_REQUIRE_STREQ(secret, "K");
	ATF_REQUIRE(store_tool_secrets_set(t2, ids, 0) == 0);
	ATF_REQUIRE(store_bundle_delete(2, skill) == 1);
	ATF_REQUIRE_MSG(store_bundle_delete(1, skill) == 0, "%s",
	    store_error());
	ATF_REQUIRE_EQ(tools_of(1, 0, NULL, 0).n, 1);
	ATF_REQUIRE(store_ref_get(STORE_SECRET, 1, s, NULL, &ref) == 1);
	memset(&sel, 0, sizeof(sel));
	memset(&r, 0, sizeof(r));
	sel.org = 1;
	ATF_REQUIRE(store_bundles(&sel, see_bundle, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 0);
}

ATF_TC_WITHOUT_HEAD(skills_read_whole_or_brief_by_id_and_name);
ATF_TC_BODY(skills_read_whole_or_brief_by_id_and_name, tc)
{
	struct store_ref	 ref;
	struct store_sel	 sel;
	struct rows		 r;
	int64_t			 skill;
	struct store_bundle_item b;

	setup(tc);
	skill = add_bundle(1, "ops");
	memset(&b, 0, sizeof(b));
	b.org_id = 1;
	b.name = "ops";
	b.recipe = b.files = "";
	b.created_at = AT;
	ATF_REQUIRE_EQ(store_bundle_insert(&b, &b.id), STORE_TAKEN);
	ATF_REQUIRE(store_ref_get(STORE_BUNDLE, 1, 0, "ops", &ref) == 0);
	ATF_REQUIRE_EQ(ref.id, skill);
	ATF_REQUIRE(store_ref_get(STORE_BUNDLE, 2, 0, "ops", &ref) == 1);
	ATF_REQUIRE(store_bundle_set_recipe(1, skill, "again") == 0);
	memset(&sel, 0, sizeof(sel));
	memset(&r, 0, sizeof(r));
	sel.org = 1;
	sel.id = skill;
	ATF_REQUIRE(store_bundles(&sel, see_bundle, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 1);
	ATF_REQUIRE(strstr(r.r[0], ":ops:again/{\"a.md\":\"x\"}") != NULL);
	sel.id = 0;
	sel.brief = 1;
	ATF_REQUIRE(store_bundles(&sel, see_bundle, &r) == 0);
	ATF_REQUIRE_EQ(r.n, 2);
	ATF_REQUIRE(strstr(r.r[1], ":ops:/") != NULL);
}

ATF_TC_WITHOUT_HEAD(a_rolled_back_push_leaves_nothing);
ATF_TC_BODY(a_rolled_back_push_leaves_nothing, tc)
{
	struct store_ref	 ref;
	int64_t			 skill, s, t;

	setup(tc);
	ATF_REQUIRE(store_begin() == 0);
	skill = add_bundle(1, "ops");
	s = add_secret(1, "K", skill);
	ATF_REQUIRE(add_tool(1, "gh", NULL, skill, &t) == 0);
	store_rollback();
	ATF_REQUIRE(store_ref_get(STORE_BUNDLE, 1, skill, NULL, &ref) == 1);
	ATF_REQUIRE(store_ref_get(STORE_SECRET, 1, s, NULL, &ref) == 1);
	ATF_REQUIRE(store_ref_get(STORE_TOOL, 1, t, NULL, &ref) == 1);
	ATF_REQUIRE(add_tool(1, "gh", NULL, 0, &t) == 0);
}

ATF_TC_WITHOUT_HEAD(the_version_moves_with_every_registry_write);
ATF_TC_BODY(the_version_moves_with_every_registry_write, tc)
{
	int64_t	 v, id, skill;

	setup(tc);
	v = store_version();
	ATF_REQUIRE(add_tool(1, "gh", NULL, 0, &id) == 0);
	ATF_REQUIRE(store_version() != v);
	v = store_version();
	ATF_REQUIRE(store_version() == v);
	skill = add_bundle(1, "ops");
	ATF_REQUIRE(store_version() != v);
	v = store_version();
	ATF_REQUIRE(store_bundle_set_recipe(1, skill, "new") == 0);
	ATF_REQUIRE(store_version() != v);
	v = store_version();
	ATF_REQUIRE(store_tool_delete(1, id) == 0);
	ATF_REQUIRE(store_version() != v);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, secrets_are_found_only_in_their_org);
	ATF_TP_ADD_TC(tp, a_new_value_resets_the_secret_status);
	ATF_TP_ADD_TC(tp, a_taken_tool_name_answers_store_taken);
	ATF_TP_ADD_TC(tp, tools_are_listed_by_selection_in_id_order);
	ATF_TP_ADD_TC(tp, tools_by_slug_list_one_org_or_every_org);
	ATF_TP_ADD_TC(tp, secret_users_are_its_tools_by_name_then_its_skill);
	ATF_TP_ADD_TC(tp, a_skill_goes_with_its_tools_and_secrets);
	ATF_TP_ADD_TC(tp, skills_read_whole_or_brief_by_id_and_name);
	ATF_TP_ADD_TC(tp, a_rolled_back_push_leaves_nothing);
	ATF_TP_ADD_TC(tp, the_version_moves_with_every_registry_write);
	return (atf_no_error());
}
