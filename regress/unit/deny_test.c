/*
 * deny_test: cli.deny patterns (tregd/vault/vault_deny.c): treg's catalog
 * syntax compiles and matches as PCRE2, patterns that would cost the
 * vault unbounded memory are refused at registration, a match that hits
 * a limit counts as a match, and a tool's changed list is never matched
 * with its old patterns.  And the path of a base_url, read one way.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "vault.h"

static json_t	*cli(const char *);
static json_t	*argv1(const char *, const char *);
static int	 matches(int64_t, json_t *, json_t *, const char **);
static long	 ms_since(const struct timespec *);

static json_t *
cli(const char *pattern)
{
	json_t	*c;

	c = json_pack("{s:s, s:[s]}", "bin", "sh", "deny", pattern);
	ATF_REQUIRE(c != NULL);
	return (c);
}

static json_t *
argv1(const char *a, const char *b)
{
	json_t	*v;

	v = b != NULL ? json_pack("[s, s]", a, b) : json_pack("[s]", a);
	ATF_REQUIRE(v != NULL);
	return (v);
}

static int
matches(int64_t tool, json_t *c, json_t *argv, const char **why)
{
	char	 pat[DENY_LEN_MAX + 1];
	int	 rc;

	rc = deny_match(tool, c, argv, pat, sizeof(pat), why);
	json_decref(argv);
	return (rc);
}

static long
ms_since(const struct timespec *t0)
{
	struct timespec	 t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ((t1.tv_sec - t0->tv_sec) * 1000 +
	    (t1.tv_nsec - t0->tv_nsec) / 1000000);
}

ATF_TC_WITHOUT_HEAD(catalog_syntax_compiles_and_matches);
ATF_TC_BODY(catalog_syntax_compiles_and_matches, tc)
{
	const char	*why;
	json_t		*c;
	char		 err[256];

	ATF_CHECK(deny_pattern_check("\\bauth\\s+token\\b", 17, err,
	    sizeof(err)) == 0);
	c = cli("\\bauth\\s+token\\b");
	ATF_CHECK(matches(1, c, argv1("auth", "token"), &why) == 1);
	ATF_CHECK(why == NULL);
	ATF_CHECK(matches(1, c, argv1("authtoken", NULL), &why) == 0);
	ATF_CHECK(matches(1, c, argv1("reauth", "token"), &why) == 0);
	json_decref(c);
	c = cli("(?i)--live");
	ATF_CHECK(matches(2, c, argv1("deploy", "--LIVE"), &why) == 1);
	ATF_CHECK(matches(2, c, argv1("deploy", "--test"), &why) == 0);
	json_decref(c);
	c = cli("^(?:delete|destroy)\\b");
	ATF_CHECK(matches(3, c, argv1("destroy", "all"), &why) == 1);
	ATF_CHECK(matches(3, c, argv1("destroyer", NULL), &why) == 0);
	json_decref(c);
}

ATF_TC_WITHOUT_HEAD(costly_patterns_are_refused_quickly);
ATF_TC_BODY(costly_patterns_are_refused_quickly, tc)
{
	const char *const bad[] = {
		"((((((((((a{1,100}){1,100}){1,100}){1,100}))))))",
		"(((((((((a{1,100}){1,100}){1,100}){1,100}))))))",
		"((((a{1,65535}){1,65535}){1,65535}){1,65535})",
		"((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))"
		    "))))))))",
		"(unclosed",
		"a{2,1}",
		NULL
	};
	struct timespec	 t0;
	char		 err[256], big[DENY_LEN_MAX + 2];
	size_t		 i;

	for (i = 0; bad[i] != NULL; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ATF_CHECK_MSG(deny_pattern_check(bad[i], strlen(bad[i]), err,
		    sizeof(err)) == -1, "accepted: %s", bad[i]);
		ATF_CHECK(strstr(err, "invalid deny pattern") != NULL);
		ATF_CHECK_MSG(ms_since(&t0) < 1000, "%s took %ld ms", bad[i],
		    ms_since(&t0));
	}
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ATF_CHECK(deny_pattern_check(big, strlen(big), err,
	    sizeof(err)) == -1);
	ATF_CHECK(deny_pattern_check(big, DENY_LEN_MAX, err,
	    sizeof(err)) == 0);
}

ATF_TC_WITHOUT_HEAD(a_match_that_hits_a_limit_is_a_match);
ATF_TC_BODY(a_match_that_hits_a_limit_is_a_match, tc)
{
	struct timespec	 t0;
	const char	*why;
	json_t		*c, *argv;
	char		 s[30002];
	int		 i;

	memset(s, 'a', sizeof(s) - 2);
	s[sizeof(s) - 2] = '!';
	s[sizeof(s) - 1] = '\0';
	c = cli("^(a|a?)+$");
	argv = json_array();
	for (i = 0; i < 200; i++)
		json_array_append_new(argv, json_string(s));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ATF_CHECK(matches(4, c, argv, &why) == 1);
	ATF_CHECK(ms_since(&t0) < 1000);
	ATF_REQUIRE(why != NULL);
	ATF_CHECK_MSG(strstr(why, "limit") != NULL, "why: %s", why);
	json_decref(c);
}

ATF_TC_WITHOUT_HEAD(a_changed_tool_is_matched_with_its_new_patterns);
ATF_TC_BODY(a_changed_tool_is_matched_with_its_new_patterns, tc)
{
	const char	*why;
	json_t		*c;

	c = cli("^old$");
	ATF_CHECK(matches(5, c, argv1("old", NULL), &why) == 1);
	ATF_CHECK(matches(5, c, argv1("new", NULL), &why) == 0);
	json_decref(c);
	c = cli("^new$");
	ATF_CHECK(matches(5, c, argv1("new", NULL), &why) == 1);
	ATF_CHECK(matches(5, c, argv1("old", NULL), &why) == 0);
	json_decref(c);
}

/*
 * A base_url's path is read one way by runs and grants (url_path, for
 * deny rules) and calls (url_path_prefix, where the call's path goes):
 * a query or fragment is never a path, so "https://h?x=/a" has none.
 */
ATF_TC_WITHOUT_HEAD(base_url_path_reads_the_same_everywhere);
ATF_TC_BODY(base_url_path_reads_the_same_everywhere, tc)
{
	static const struct {
		const char	*url, *path;
	} t[] = {
		{ "https://h?x=/a",	"/" },
		{ "https://h/a?x=/b",	"/a" },
		{ "https://h#x",	"/" },
		{ "https://h",		"/" },
		{ "https://h/a/#x/b",	"/a/" },
	};
	const char	*p;
	char		 buf[64], pre[64];
	size_t		 i, n;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		url_path(t[i].url, buf, sizeof(buf));
		ATF_CHECK_STREQ_MSG(buf, t[i].path, "%s", t[i].url);
		n = url_path_prefix(t[i].url, &p);
		snprintf(pre, sizeof(pre), "%.*s/", (int)n, p);
		/* The prefix is the path less its trailing slash. */
		ATF_CHECK_MSG(strncmp(buf, pre, strlen(buf)) == 0 &&
		    strlen(pre) <= strlen(buf) + 1, "%s: %s and %s",
		    t[i].url, buf, pre);
		/* And it begins where the authority ends. */
		ATF_CHECK_MSG(p == t[i].url + strlen("https://h"), "%s",
		    t[i].url);
	}
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, base_url_path_reads_the_same_everywhere);
	ATF_TP_ADD_TC(tp, catalog_syntax_compiles_and_matches);
	ATF_TP_ADD_TC(tp, costly_patterns_are_refused_quickly);
	ATF_TP_ADD_TC(tp, a_match_that_hits_a_limit_is_a_match);
	ATF_TP_ADD_TC(tp, a_changed_tool_is_matched_with_its_new_patterns);
	return (atf_no_error());
}
