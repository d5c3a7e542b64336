/*
 * egress_sigv4_test: AWS Signature Version 4 as the egress proxy checks
 * and makes it (relay/egress_sigv4.c), against the signatures of AWS's
 * own published examples: IAM's ListUsers, S3's GET with a range, and
 * the test suite's repeated query keys sorted by value.
 */

#include <atf-c.h>
#include <sodium.h>
#include <string.h>

#include "relay.h"

#define EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void	sig_is(const struct sigv4_req *, const char *, const char *,
		    const char *, const char *);

/* r signed under authz's scope at amzdate with secret gives want. */
static void
sig_is(const struct sigv4_req *r, const char *authz, const char *amzdate,
    const char *secret, const char *want)
{
	struct sigv4_auth	 a;
	char			 sig[65];

	ATF_REQUIRE(sodium_init() != -1);
	ATF_REQUIRE_EQ_MSG(sigv4_parse_auth(authz, &a), 0, "parse %s", authz);
	ATF_REQUIRE_EQ(sigv4_sign(r, &a, amzdate, secret, strlen(secret),
	    sig), 0);
	ATF_CHECK_STREQ(sig, want);
	ATF_CHECK(sigv4_equal(sig, a.signature) == (strcmp(want,
	    a.signature) == 0));
}

ATF_TC_WITHOUT_HEAD(iam_list_users_signs_as_aws_documents_it);
ATF_TC_BODY(iam_list_users_signs_as_aws_documents_it, tc)
{
	static const struct sigv4_hdr h[] = {
		{ "Content-Type",
		  "application/x-www-form-urlencoded; charset=utf-8" },
		{ "Host", "iam.amazonaws.com" },
		{ "X-Amz-Date", "20150830T123600Z" },
	};
	struct sigv4_req r = { "GET", "/", "Action=ListUsers&Version=2010-05-08",
	    h, 3, EMPTY_SHA256, 0 };

	sig_is(&r, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/"
	    "us-east-1/iam/aws4_request, SignedHeaders=content-type;host;"
	    "x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c"
	    "82c400e06b5924a6f2b5d7", "20150830T123600Z",
	    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	    "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

ATF_TC_WITHOUT_HEAD(s3_get_signs_as_aws_documents_it);
ATF_TC_BODY(s3_get_signs_as_aws_documents_it, tc)
{
	static const struct sigv4_hdr h[] = {
		{ "Host", "examplebucket.s3.amazonaws.com" },
		{ "Range", "bytes=0-9" },
		{ "x-amz-content-sha256", EMPTY_SHA256 },
		{ "x-amz-date", "20130524T000000Z" },
	};
	struct sigv4_req r = { "GET", "/test.txt", "", h, 4, EMPTY_SHA256, 0 };

	sig_is(&r, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/"
	    "20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;"
	    "x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857b"
	    "d35b5d6ed310bd44f0170aba48dd91039c6036bdb41", "20130524T000000Z",
	    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	    "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

ATF_TC_WITHOUT_HEAD(repeated_query_keys_sort_by_value);
ATF_TC_BODY(repeated_query_keys_sort_by_value, tc)
{
	static const struct sigv4_hdr h[] = {
		{ "Date", "Mon, 09 Sep 2011 23:36:00 GMT" },
		{ "Host", "host.foo.com" },
	};
	struct sigv4_req r = { "GET", "/", "foo=Zoo&foo=aha", h, 2,
	    EMPTY_SHA256, 0 };
	struct sigv4_req swapped = { "GET", "/", "foo=aha&foo=Zoo", h, 2,
	    EMPTY_SHA256, 0 };
	const char *authz = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"
	    "20110909/us-east-1/host/aws4_request, SignedHeaders=date;host, "
	    "Signature=be7148d34ebccdc6423b19085378aa0bee970bdc61d144bd1a8c48c"
	    "33079ab09";

	sig_is(&r, authz, "20110909T233600Z",
	    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	    "be7148d34ebccdc6423b19085378aa0bee970bdc61d144bd1a8c48c33079ab09");
	sig_is(&swapped, authz, "20110909T233600Z",
	    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	    "be7148d34ebccdc6423b19085378aa0bee970bdc61d144bd1a8c48c33079ab09");
}

ATF_TC_WITHOUT_HEAD(a_placeholder_signature_verifies_and_is_made_again);
ATF_TC_BODY(a_placeholder_signature_verifies_and_is_made_again, tc)
{
	static const struct sigv4_hdr h[] = {
		{ "Host", "sts.amazonaws.com" },
		{ "X-Amz-Date", "20261202T120000Z" },
	};
	struct sigv4_req r = { "POST", "/", "", h, 2, EMPTY_SHA256, 0 };
	struct sigv4_auth a;
	char		 fake[65], real[65];
	const char	*ph = "placeholder/secret+xyz", *rs = "real/secret+abc";

	ATF_REQUIRE(sodium_init() != -1);
	ATF_REQUIRE(sigv4_parse_auth("AWS4-HMAC-SHA256 Credential=AKIAPLACE"
	    "HOLDER00001/20261202/us-east-1/sts/aws4_request, SignedHeaders="
	    "host;x-amz-date, Signature=0000000000000000000000000000000000000"
	    "000000000000000000000000000", &a) == 0);
	ATF_CHECK_STREQ(a.key_id, "AKIAPLACEHOLDER00001");
	ATF_CHECK_STREQ(a.service, "sts");
	ATF_REQUIRE(sigv4_sign(&r, &a, "20261202T120000Z", ph, strlen(ph),
	    fake) == 0);
	ATF_REQUIRE(sigv4_sign(&r, &a, "20261202T120000Z", rs, strlen(rs),
	    real) == 0);
	ATF_CHECK(!sigv4_equal(fake, real));
	ATF_CHECK(sigv4_equal(fake, fake));
	/* A date other than the credential's, or a malformed one: refused. */
	ATF_CHECK_EQ(sigv4_sign(&r, &a, "20261203T120000Z", "x", 1, real), -1);
	ATF_CHECK_EQ(sigv4_sign(&r, &a, "2026", "x", 1, real), -1);
}

ATF_TC_WITHOUT_HEAD(malformed_authorization_is_refused);
ATF_TC_BODY(malformed_authorization_is_refused, tc)
{
	struct sigv4_auth a;

	ATF_CHECK_EQ(sigv4_parse_auth("Bearer x", &a), -1);
	ATF_CHECK_EQ(sigv4_parse_auth("AWS4-HMAC-SHA256 Credential=A/B/C/"
	    "aws4_request, SignedHeaders=host, Signature=" EMPTY_SHA256, &a),
	    -1);
	ATF_CHECK_EQ(sigv4_parse_auth("AWS4-HMAC-SHA256 Credential=A/2026/r/"
	    "s/aws4_request/x, SignedHeaders=host, Signature=" EMPTY_SHA256,
	    &a), -1);
	ATF_CHECK_EQ(sigv4_parse_auth("AWS4-HMAC-SHA256 Credential=A/2026/r/"
	    "s/aws4_request, SignedHeaders=host, Signature=abc", &a), -1);
	ATF_CHECK_EQ(sigv4_parse_auth("AWS4-HMAC-SHA256 Credential=A/2026/r/"
	    "s/aws4_request, Signature=" EMPTY_SHA256, &a), -1);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, iam_list_users_signs_as_aws_documents_it);
	ATF_TP_ADD_TC(tp, s3_get_signs_as_aws_documents_it);
	ATF_TP_ADD_TC(tp, repeated_query_keys_sort_by_value);
	ATF_TP_ADD_TC(tp, a_placeholder_signature_verifies_and_is_made_again);
	ATF_TP_ADD_TC(tp, malformed_authorization_is_refused);
	return (atf_no_error());
}
