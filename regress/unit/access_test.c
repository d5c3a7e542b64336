/*
 * access_test: may this member use this tool (tregd/vault/vault_access.c),
 * the one rule that runs, grants, calls, the listings and the logs ask,
 * and its one refusal.
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
	ATF_CHECK(tool_usable(&a, "a", NULL));
	ATF_CHECK(tool_usable(&a, "a", ""));
	ATF_CHECK(tool_usable(&a, "b", "sk"));
	ATF_CHECK(!tool_usable(&a, "b", NULL));
	ATF_CHECK(!tool_usable(&a, "b", ""));
	ATF_CHECK(!tool_usable(&a, "b", "other"));
	/* A skill's name is not a tool's: "sk" with no skill is not "a". */
	ATF_CHECK(!tool_usable(&a, "ab", "s"));
	auth_clear(&a);

	member(&a, ROLE_MEMBER, NULL);		/* no list: every tool */
	ATF_CHECK(tool_usable(&a, "b", NULL));
	auth_clear(&a);
	member(&a, ROLE_MEMBER, "[]");		/* empty list: none */
	ATF_CHECK(!tool_usable(&a, "b", "sk"));
	auth_clear(&a);
	member(&a, ROLE_OWNER, "[]");		/* owners: never restricted */
	ATF_CHECK(tool_usable(&a, "b", NULL));
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

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, a_tool_is_usable_by_its_name_or_its_skill);
	ATF_TP_ADD_TC(tp, a_refused_tool_reads_the_same_for_runs_grants_calls);
	return (atf_no_error());
}
