/*
 * access_test: may this member use this tool (tregd/vault/vault_access.c),
 * the one rule that runs, grants, calls, the listings and the logs ask,
 * and its refusals: treg's two axes, the tool list and the projects.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <jansson.h>
#include <string.h>

#include "vault.h"

static void	 member(struct auth *, enum role, const char *);

/* A member of role with the access list list (JSON; NULL: none). */
static void
member(struct auth *a, enum role role, const char *list)
{
	memset(a, 0, sizeof(*a));
	a->role = role;
	a->tool_access = list != NULL ? json_loads(list, 0, NULL) : NULL;
}

ATF_TC_WITHOUT_HEAD(a_tool_is_usable_by_its_name_or_its_skill);
ATF_TC_BODY(a_tool_is_usable_by_its_name_or_its_skill, tc)
{
	struct auth	 a;

	member(&a, ROLE_MEMBER, "[\"a\", \"sk\"]");
	ATF_CHECK(tool_usable(&a, "a", NULL, 0));
	ATF_CHECK(tool_usable(&a, "a", "", 0));
	ATF_CHECK(tool_usable(&a, "b", "sk", 0));
	ATF_CHECK(!tool_usable(&a, "b", NULL, 0));
	ATF_CHECK(!tool_usable(&a, "b", "", 0));
	ATF_CHECK(!tool_usable(&a, "b", "other", 0));
	/* A skill's name is not a tool's: "sk" with no skill is not "a". */
	ATF_CHECK(!tool_usable(&a, "ab", "s", 0));
	auth_clear(&a);

	member(&a, ROLE_MEMBER, NULL);		/* no list: every tool */
	ATF_CHECK(tool_usable(&a, "b", NULL, 0));
	auth_clear(&a);
	member(&a, ROLE_MEMBER, "[]");		/* empty list: none */
	ATF_CHECK(!tool_usable(&a, "b", "sk", 0));
	auth_clear(&a);
	member(&a, ROLE_OWNER, "[]");		/* owners: never restricted */
	ATF_CHECK(tool_usable(&a, "b", NULL, 0));
	auth_clear(&a);
}

ATF_TC_WITHOUT_HEAD(a_refused_tool_reads_the_same_for_runs_grants_calls);
ATF_TC_BODY(a_refused_tool_reads_the_same_for_runs_grants_calls, tc)
{
	struct auth		 a;
	struct tool_row		 t;
	struct vault_resp	 resp;
	const char		*d;

	member(&a, ROLE_MEMBER, "[\"a\"]");
	memset(&t, 0, sizeof(t));
	strlcpy(t.name, "b", sizeof(t.name));
	memset(&resp, 0, sizeof(resp));
	ATF_REQUIRE_EQ(tool_access_check(&a, &t, &resp), -1);
	ATF_CHECK_EQ(resp.status, 403);
	d = json_string_value(json_object_get(resp.body, "detail"));
	ATF_REQUIRE(d != NULL);
	ATF_CHECK_STREQ(d, "you don't have access to the tool 'b' in this "
	    "team — ask an admin to add it to your access list");
	json_decref(resp.body);

	strlcpy(t.bundle, "a", sizeof(t.bundle));
	memset(&resp, 0, sizeof(resp));
	ATF_CHECK_EQ(tool_access_check(&a, &t, &resp), 0);
	ATF_CHECK_EQ(resp.status, 0);
	auth_clear(&a);
}

ATF_TC_WITHOUT_HEAD(a_project_scope_and_the_tool_list_compose_as_and);
ATF_TC_BODY(a_project_scope_and_the_tool_list_compose_as_and, tc)
{
	struct auth	 a;

	/* Unscoped: every project, as before projects existed. */
	member(&a, ROLE_MEMBER, NULL);
	ATF_REQUIRE_EQ(project_access_load(NULL, &a), 0);
	ATF_CHECK(tool_usable(&a, "x", NULL, 7));
	/* Scoped to 3: its tools and the org-wide ones (project 0). */
	ATF_REQUIRE_EQ(project_access_load("[3]", &a), 0);
	ATF_CHECK(tool_usable(&a, "x", NULL, 3));
	ATF_CHECK(tool_usable(&a, "x", NULL, 0));
	ATF_CHECK(!tool_usable(&a, "x", NULL, 7));
	/* [] is no project: org-wide tools only, never "every project". */
	ATF_REQUIRE_EQ(project_access_load("[]", &a), 0);
	ATF_CHECK(tool_usable(&a, "x", NULL, 0));
	ATF_CHECK(!tool_usable(&a, "x", NULL, 3));
	auth_clear(&a);
	/* AND: in the project but off the tool list is refused. */
	member(&a, ROLE_MEMBER, "[\"shared\"]");
	ATF_REQUIRE_EQ(project_access_load("[3]", &a), 0);
	ATF_CHECK(tool_usable(&a, "shared", NULL, 0));
	ATF_CHECK(!tool_usable(&a, "a-tool", NULL, 3));
	auth_clear(&a);
	/* Owners are never scoped. */
	member(&a, ROLE_OWNER, NULL);
	ATF_REQUIRE_EQ(project_access_load("[3]", &a), 0);
	ATF_CHECK(tool_usable(&a, "x", NULL, 7));
	auth_clear(&a);
	/* A column that does not read is refused, not taken as null. */
	member(&a, ROLE_MEMBER, NULL);
	ATF_CHECK_EQ(project_access_load("{\"a\": 1}", &a), -1);
	ATF_CHECK_EQ(project_access_load("[\"apollo\"]", &a), -1);
	ATF_CHECK_EQ(project_access_load("[0]", &a), -1);
	auth_clear(&a);
}

ATF_TC_WITHOUT_HEAD(a_tool_outside_the_projects_is_refused_naming_them);
ATF_TC_BODY(a_tool_outside_the_projects_is_refused_naming_them, tc)
{
	struct auth		 a;
	struct tool_row		 t;
	struct vault_resp	 resp;
	const char		*d;

	member(&a, ROLE_MEMBER, NULL);
	ATF_REQUIRE_EQ(project_access_load("[1]", &a), 0);
	memset(&t, 0, sizeof(t));
	strlcpy(t.name, "g-tool", sizeof(t.name));
	t.project_id = 2;
	memset(&resp, 0, sizeof(resp));
	ATF_REQUIRE_EQ(tool_access_check(&a, &t, &resp), -1);
	ATF_CHECK_EQ(resp.status, 403);
	d = json_string_value(json_object_get(resp.body, "detail"));
	ATF_REQUIRE(d != NULL);
	ATF_CHECK(strstr(d, "the tool 'g-tool' belongs to a project you're "
	    "not scoped to") == d);
	json_decref(resp.body);
	t.project_id = 1;
	memset(&resp, 0, sizeof(resp));
	ATF_CHECK_EQ(tool_access_check(&a, &t, &resp), 0);
	auth_clear(&a);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, a_project_scope_and_the_tool_list_compose_as_and);
	ATF_TP_ADD_TC(tp, a_tool_outside_the_projects_is_refused_naming_them);
	ATF_TP_ADD_TC(tp, a_tool_is_usable_by_its_name_or_its_skill);
	ATF_TP_ADD_TC(tp, a_refused_tool_reads_the_same_for_runs_grants_calls);
	return (atf_no_error());
}
