/*
 * egress_subst_test: a keyless run's placeholders swapped for their
 * values (relay/egress_subst.c, SPEC.md section 6a "Substitution"): in
 * the request target raw and percent-encoded (each byte of the value
 * spelled as the placeholder's was), in header values, in Basic
 * credentials decoded and encoded again; nothing else is touched.
 */

#include <atf-c.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"

static const struct subst pairs[] = {
	{ "ghp_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789", 40,
	  "ghp_REALrealREALrealREALrealREAL01234567", 40 },
	{ "k9/Zx+Qw=Lp.Rt-Yu~Io", 20, "s3/Cr+Et=Va.Lu-Es~Xy", 20 },
};
#define NPAIRS	(sizeof(pairs) / sizeof(pairs[0]))

static void	target_is(const char *, const char *, int);
static void	header_is(const char *, const char *, const char *, int);

static void
target_is(const char *in, const char *want, int nwant)
{
	char	*out;
	size_t	 len;
	int	 n;

	out = egress_subst_target(pairs, NPAIRS, in, strlen(in), &len, &n);
	ATF_REQUIRE(out != NULL);
	ATF_CHECK_STREQ_MSG(out, want, "target %s", in);
	ATF_CHECK_EQ_MSG(len, strlen(want), "length of %s", out);
	ATF_CHECK_EQ_MSG(n, nwant, "swaps in %s", in);
	free(out);
}

static void
header_is(const char *name, const char *in, const char *want, int nwant)
{
	char	*out;
	size_t	 len;
	int	 n;

	out = egress_subst_header(pairs, NPAIRS, name, in, strlen(in), &len,
	    &n);
	ATF_REQUIRE(out != NULL);
	ATF_CHECK_STREQ_MSG(out, want, "%s: %s", name, in);
	ATF_CHECK_EQ(len, strlen(want));
	ATF_CHECK_EQ_MSG(n, nwant, "swaps in %s", in);
	free(out);
}

ATF_TC_WITHOUT_HEAD(the_target_gets_the_value_raw_and_encoded);
ATF_TC_BODY(the_target_gets_the_value_raw_and_encoded, tc)
{
	target_is("/user?t=ghp_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789",
	    "/user?t=ghp_REALrealREALrealREALrealREAL01234567", 1);
	/* Percent-encoded, upper and lower case hex, partly. */
	target_is("/x?k=k9%2FZx%2bQw%3DLp.Rt-Yu~Io&k=k9/Zx+Qw=Lp.Rt-Yu~Io",
	    "/x?k=s3%2FCr%2BEt%3DVa.Lu-Es~Xy&k=s3/Cr+Et=Va.Lu-Es~Xy", 2);
	/* Every byte encoded still matches. */
	target_is("/%67%68%70_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789",
	    "/%67%68%70_REALrealREALrealREALrealREAL01234567", 1);
}

ATF_TC_WITHOUT_HEAD(what_is_not_a_placeholder_is_left_alone);
ATF_TC_BODY(what_is_not_a_placeholder_is_left_alone, tc)
{
	target_is("/repos/a/b?q=ghp_QwErTy", "/repos/a/b?q=ghp_QwErTy", 0);
	target_is("/%zz/%2", "/%zz/%2", 0);
	target_is("", "", 0);
	header_is("Accept", "application/json", "application/json", 0);
}

ATF_TC_WITHOUT_HEAD(header_values_get_the_value_literally);
ATF_TC_BODY(header_values_get_the_value_literally, tc)
{
	header_is("Authorization",
	    "Bearer ghp_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789",
	    "Bearer ghp_REALrealREALrealREALrealREAL01234567", 1);
	/* A header is not a URL: %XX there is not the placeholder. */
	header_is("X-Key", "k9%2FZx+Qw=Lp.Rt-Yu~Io", "k9%2FZx+Qw=Lp.Rt-Yu~Io",
	    0);
	header_is("X-Key", "k9/Zx+Qw=Lp.Rt-Yu~Io,k9/Zx+Qw=Lp.Rt-Yu~Io",
	    "s3/Cr+Et=Va.Lu-Es~Xy,s3/Cr+Et=Va.Lu-Es~Xy", 2);
}

ATF_TC_WITHOUT_HEAD(basic_credentials_are_decoded_swapped_and_encoded);
ATF_TC_BODY(basic_credentials_are_decoded_swapped_and_encoded, tc)
{
	const char	*user = "x-access-token:"
			    "ghp_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789";
	const char	*real = "x-access-token:"
			    "ghp_REALrealREALrealREALrealREAL01234567";
	char		 in[256], want[256];

	ATF_REQUIRE(sodium_init() != -1);
	memcpy(in, "Basic ", 6);
	sodium_bin2base64(in + 6, sizeof(in) - 6, (const unsigned char *)user,
	    strlen(user), sodium_base64_VARIANT_ORIGINAL);
	memcpy(want, "Basic ", 6);
	sodium_bin2base64(want + 6, sizeof(want) - 6,
	    (const unsigned char *)real, strlen(real),
	    sodium_base64_VARIANT_ORIGINAL);
	header_is("Authorization", in, want, 1);
	/* Basic credentials without a placeholder stay as they were. */
	header_is("authorization", "Basic dXNlcjpwYXNz", "Basic dXNlcjpwYXNz",
	    0);
	/* Not base64: left as it is. */
	header_is("Authorization", "Basic !!!", "Basic !!!", 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, the_target_gets_the_value_raw_and_encoded);
	ATF_TP_ADD_TC(tp, what_is_not_a_placeholder_is_left_alone);
	ATF_TP_ADD_TC(tp, header_values_get_the_value_literally);
	ATF_TP_ADD_TC(tp, basic_credentials_are_decoded_swapped_and_encoded);
	return (atf_no_error());
}
