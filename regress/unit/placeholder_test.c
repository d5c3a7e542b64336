/*
 * placeholder_test: the stand-in a keyless run holds for a value
 * (vault_placeholder.c, SPEC.md section 6a): the prefix kept, every
 * other letter or digit replaced by one of its class, other bytes kept,
 * at least 24 bytes, a new one each time, never the value itself.
 */

#include <atf-c.h>
#include <ctype.h>
#include <sodium.h>
#include <string.h>

#include "vault.h"

static void	shape_holds(const char *, const char *);

/* The placeholder of v keeps prefix, each byte's class, its non-alnums. */
static void
shape_holds(const char *v, const char *prefix)
{
	char	 out[256];
	size_t	 len = strlen(v), n, i;

	ATF_REQUIRE(sodium_init() != -1);
	ATF_REQUIRE_EQ_MSG(placeholder_make(v, len, out, sizeof(out), &n), 0,
	    "no placeholder for %s", v);
	ATF_CHECK_EQ_MSG(n, len < 24 ? 24 : len, "%s: length %zu", v, n);
	ATF_CHECK_EQ(strlen(out), n);
	ATF_CHECK_MSG(strncmp(out, prefix, strlen(prefix)) == 0,
	    "%s -> %s: prefix %s lost", v, out, prefix);
	ATF_CHECK_EQ_MSG(placeholder_prefix(v, len), strlen(prefix),
	    "%s: prefix length", v);
	ATF_CHECK_MSG(strcmp(out, v) != 0, "%s: placeholder is the value", v);
	for (i = 0; i < len; i++) {
		unsigned char a = v[i], b = out[i];

		if (islower(a))
			ATF_CHECK_MSG(islower(b), "%s[%zu]: %c", v, i, b);
		else if (isupper(a))
			ATF_CHECK_MSG(isupper(b), "%s[%zu]: %c", v, i, b);
		else if (isdigit(a))
			ATF_CHECK_MSG(isdigit(b), "%s[%zu]: %c", v, i, b);
		else
			ATF_CHECK_MSG(a == b, "%s[%zu]: %c for %c", v, i, b,
			    a);
	}
	for (; i < n; i++)
		ATF_CHECK_MSG(isalnum((unsigned char)out[i]),
		    "%s: padding %c", v, out[i]);
}

ATF_TC_WITHOUT_HEAD(vendor_prefixes_are_kept);
ATF_TC_BODY(vendor_prefixes_are_kept, tc)
{
	shape_holds("sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUv", "sk_live_");
	shape_holds("ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "ghp_");
	shape_holds("xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", "xoxb-");
	shape_holds("github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
	    "github_pat_");
	shape_holds("AKIAIOSFODNN7EXAMPLE", "AKIA");
	shape_holds("ASIAIOSFODNN7EXAMPLE", "ASIA");
}

ATF_TC_WITHOUT_HEAD(a_value_without_a_prefix_keeps_none);
ATF_TC_BODY(a_value_without_a_prefix_keeps_none, tc)
{
	/* No separator in the first 12 bytes, or digits before it. */
	shape_holds("abcdefghijklmnop_qrstuvwxyz", "");
	shape_holds("1234_abcdefghijklmnopqrstuvwxyz", "");
	/* A third group is not a prefix. */
	shape_holds("ab_cd_ef_ghijklmnopqrstuvwxyz0123", "ab_cd_");
	/* AKIA only as an access key id's 20 upper-case bytes. */
	shape_holds("AKIAlowercase0123456789xyz", "");
}

ATF_TC_WITHOUT_HEAD(punctuation_stays_where_it_was);
ATF_TC_BODY(punctuation_stays_where_it_was, tc)
{
	shape_holds("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
	    "");
	shape_holds("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "");
	shape_holds("abc+def=ghi/jkl.mno~pqr-stu", "");
}

ATF_TC_WITHOUT_HEAD(a_short_value_gets_a_placeholder_of_24_bytes);
ATF_TC_BODY(a_short_value_gets_a_placeholder_of_24_bytes, tc)
{
	shape_holds("s3cr3t", "");
	shape_holds("sk_test_abc", "sk_test_");
	shape_holds("ABCDEFGH", "");
}

ATF_TC_WITHOUT_HEAD(each_placeholder_is_new);
ATF_TC_BODY(each_placeholder_is_new, tc)
{
	const char	*v = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
	char		 a[64], b[64];
	size_t		 na, nb;

	ATF_REQUIRE(sodium_init() != -1);
	ATF_REQUIRE(placeholder_make(v, strlen(v), a, sizeof(a), &na) == 0);
	ATF_REQUIRE(placeholder_make(v, strlen(v), b, sizeof(b), &nb) == 0);
	ATF_CHECK_EQ(na, nb);
	ATF_CHECK(strcmp(a, b) != 0);
}

ATF_TC_WITHOUT_HEAD(a_value_of_punctuation_has_no_placeholder);
ATF_TC_BODY(a_value_of_punctuation_has_no_placeholder, tc)
{
	const char	*v = "--------------------------------";
	char		 out[64];
	size_t		 n;

	ATF_REQUIRE(sodium_init() != -1);
	ATF_CHECK_EQ(placeholder_make(v, strlen(v), out, sizeof(out), &n), -1);
	/* Too small a buffer is refused, not overrun. */
	ATF_CHECK_EQ(placeholder_make("abc", 3, out, 24, &n), -1);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, vendor_prefixes_are_kept);
	ATF_TP_ADD_TC(tp, a_value_without_a_prefix_keeps_none);
	ATF_TP_ADD_TC(tp, punctuation_stays_where_it_was);
	ATF_TP_ADD_TC(tp, a_short_value_gets_a_placeholder_of_24_bytes);
	ATF_TP_ADD_TC(tp, each_placeholder_is_new);
	ATF_TP_ADD_TC(tp, a_value_of_punctuation_has_no_placeholder);
	return (atf_no_error());
}
