/*
 * slug_test: how an org's name becomes its slug and how an email address
 * is normalised before it is stored or compared (vault_org.c).
 */

#include <atf-c.h>
#include <string.h>

#include "vault.h"

static void	slug_is(const char *, const char *);
static void	email_is(const char *, const char *);
static void	email_refused(const char *);

static void
slug_is(const char *name, const char *want)
{
	char	 out[NAME_LEN_MAX + 1];

	memset(out, 'x', sizeof(out));
	org_slugify(name, out, sizeof(out));
	ATF_CHECK_STREQ_MSG(out, want, "slug of '%s'", name);
}

static void
email_is(const char *in, const char *want)
{
	char	 out[256];

	ATF_REQUIRE_EQ_MSG(email_normalize(in, out, sizeof(out)), 0,
	    "'%s' refused", in);
	ATF_CHECK_STREQ(out, want);
}

static void
email_refused(const char *in)
{
	char	 out[256];

	ATF_CHECK_EQ_MSG(email_normalize(in, out, sizeof(out)), -1,
	    "'%s' accepted", in);
}

ATF_TC_WITHOUT_HEAD(slug_lowercases_and_dashes_runs);
ATF_TC_BODY(slug_lowercases_and_dashes_runs, tc)
{
	slug_is("Acme Corp", "acme-corp");
	slug_is("alice@example.com", "alice-example-com");
	slug_is("a  --  b", "a-b");
	slug_is("Team_42!!x", "team-42-x");
}

ATF_TC_WITHOUT_HEAD(slug_has_no_dash_at_either_end);
ATF_TC_BODY(slug_has_no_dash_at_either_end, tc)
{
	slug_is("  --Hello--  ", "hello");
	slug_is("!x!", "x");
}

ATF_TC_WITHOUT_HEAD(slug_of_nothing_alphanumeric_is_org);
ATF_TC_BODY(slug_of_nothing_alphanumeric_is_org, tc)
{
	slug_is("", "org");
	slug_is("!!! ---", "org");
	slug_is("\xc3\xa9t\xc3\xa9", "t");
	slug_is("\xe6\x97\xa5\xe6\x9c\xac", "org");
}

ATF_TC_WITHOUT_HEAD(slug_is_cut_short_without_trailing_dash);
ATF_TC_BODY(slug_is_cut_short_without_trailing_dash, tc)
{
	char	 name[200], out[NAME_LEN_MAX + 1];
	size_t	 n;

	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	org_slugify(name, out, sizeof(out));
	ATF_CHECK_EQ(strlen(out), 64);

	/* A separator right at the cut must not leave a dangling '-'. */
	memset(name, 'b', 63);
	strlcpy(name + 63, " cdef", sizeof(name) - 63);
	org_slugify(name, out, sizeof(out));
	n = strlen(out);
	ATF_CHECK(n > 0 && n <= 64);
	ATF_CHECK(out[n - 1] != '-');
}

ATF_TC_WITHOUT_HEAD(email_is_trimmed_and_lowercased);
ATF_TC_BODY(email_is_trimmed_and_lowercased, tc)
{
	email_is("  Alice@Example.COM\t\n", "alice@example.com");
	email_is("bob@x", "bob@x");
}

ATF_TC_WITHOUT_HEAD(email_needs_one_at_with_both_sides);
ATF_TC_BODY(email_needs_one_at_with_both_sides, tc)
{
	email_refused("");
	email_refused("   ");
	email_refused("alice");
	email_refused("@example.com");
	email_refused("alice@");
	email_refused("a@b@c");
}

ATF_TC_WITHOUT_HEAD(email_refuses_spaces_controls_and_length);
ATF_TC_BODY(email_refuses_spaces_controls_and_length, tc)
{
	char	 big[300];

	email_refused("al ice@example.com");
	email_refused("alice@exa\tmple.com");
	email_refused("alice@\x01x.com");
	email_refused("alice@x\x7f.com");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[10] = '@';
	email_refused(big);
	big[254] = '\0';	/* 254 bytes: the longest allowed */
	email_is(big, big);
	big[253] = '\0';
	email_is(big, big);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, slug_lowercases_and_dashes_runs);
	ATF_TP_ADD_TC(tp, slug_has_no_dash_at_either_end);
	ATF_TP_ADD_TC(tp, slug_of_nothing_alphanumeric_is_org);
	ATF_TP_ADD_TC(tp, slug_is_cut_short_without_trailing_dash);
	ATF_TP_ADD_TC(tp, email_is_trimmed_and_lowercased);
	ATF_TP_ADD_TC(tp, email_needs_one_at_with_both_sides);
	ATF_TP_ADD_TC(tp, email_refuses_spaces_controls_and_length);
	return (atf_no_error());
}
