/*
 * The frontend's request parser and output escaping (tregd/http_parse.c):
 * what a client's bytes turn into, and which of them are refused with
 * which status.
 */

#include <sys/types.h>

#include <stdio.h>
#include <string.h>

#include <atf-c.h>

#include "http.h"

/* Parse a literal head; the status http_parse_head answered. */
static int
parse(const char *s, struct http_head *h)
{
	return (http_parse_head(s, strlen(s), h));
}

static int	parse_proxy(const char *, struct http_head *,
		    struct http_hdr *, size_t);

static int
str_is(const struct http_str *s, const char *want)
{
	return (s->p != NULL && s->len == strlen(want) &&
	    memcmp(s->p, want, s->len) == 0);
}

ATF_TC_WITHOUT_HEAD(head_ends_at_the_first_empty_line);
ATF_TC_BODY(head_ends_at_the_first_empty_line, tc)
{
	const char	*a = "GET / HTTP/1.1\r\nHost: t\r\n\r\nGET /2";
	const char	*b = "\r\n\nGET / HTTP/1.0\n\n";
	size_t		 skip;

	ATF_CHECK_EQ(http_head_end(a, strlen(a), &skip), strlen(a) - 6);
	ATF_CHECK_EQ(skip, 0);
	ATF_CHECK_EQ(http_head_end(b, strlen(b), &skip), strlen(b));
	ATF_CHECK_EQ(skip, 3);
	ATF_CHECK_EQ(http_head_end(a, 20, &skip), 0);
}

ATF_TC_WITHOUT_HEAD(a_request_gives_its_parts);
ATF_TC_BODY(a_request_gives_its_parts, tc)
{
	struct http_head	 h;

	ATF_REQUIRE_EQ(parse("POST /tools/x?limit=2 HTTP/1.1\r\n"
	    "host: t\r\nX-Treg-Token:  abc \r\ncontent-length: 12\r\n"
	    "X-Request-Id: r-1\r\nExpect: 100-continue\r\n\r\n", &h), 0);
	ATF_CHECK_EQ(h.method, HTTP_M_POST);
	ATF_CHECK(str_is(&h.path, "/tools/x"));
	ATF_CHECK(str_is(&h.query, "limit=2"));
	ATF_CHECK(str_is(&h.token, "abc"));
	ATF_CHECK(str_is(&h.reqid, "r-1"));
	ATF_CHECK_EQ(h.clen, 12);
	ATF_CHECK(h.has_clen && h.keepalive && h.expect_continue);
	ATF_REQUIRE_EQ(parse("GET / HTTP/1.0\r\n\r\n", &h), 0);
	ATF_CHECK(!h.keepalive);
	ATF_REQUIRE_EQ(parse("GET / HTTP/1.1\r\nHost: t\r\n"
	    "Connection: Keep-Alive, close\r\n\r\n", &h), 0);
	ATF_CHECK(!h.keepalive);
	ATF_REQUIRE_EQ(parse("GET / HTTP/1.7\r\nHost: t\r\n\r\n", &h), 0);
	ATF_CHECK_EQ(h.minor, 1);
}

ATF_TC_WITHOUT_HEAD(bad_heads_get_their_status);
ATF_TC_BODY(bad_heads_get_their_status, tc)
{
	struct http_head	 h;
	char			 longline[HTTP_LINE_MAX + 64];

	ATF_CHECK_EQ(parse("garbage\r\n\r\n", &h), 400);
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\n\r\n", &h), 400);
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	    &h), 400);
	ATF_CHECK_EQ(parse("GET http://x/ HTTP/1.1\r\nHost: a\r\n\r\n", &h),
	    400);
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\n x: folded\r\n\r\n",
	    &h), 400);
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\nHost : a\r\n\r\n", &h), 400);
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
	    "Content-Length: 1\r\n\r\n", &h), 400);
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n"
	    "\r\n", &h), 400);
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", &h), 400);
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nX-Treg-Token: a\r\n"
	    "X-Treg-Token: b\r\n\r\n", &h), 400);
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", &h), 501);
	ATF_CHECK_EQ(parse("TRACE / HTTP/1.1\r\nHost: a\r\n\r\n", &h), 501);
	ATF_CHECK_EQ(parse("BREW / HTTP/1.1\r\nHost: a\r\n\r\n", &h), 501);
	ATF_CHECK_EQ(parse("GET / HTTP/2.0\r\nHost: a\r\n\r\n", &h), 505);
	memset(longline, 'a', sizeof(longline));
	memcpy(longline, "GET /", 5);
	snprintf(longline + sizeof(longline) - 20, 20, " HTTP/1.1\r\n\r\n");
	ATF_CHECK_EQ(parse(longline, &h), 414);
	ATF_CHECK(h.detail != NULL);
}

ATF_TC_WITHOUT_HEAD(x_treg_org_names_an_org_once);
ATF_TC_BODY(x_treg_org_names_an_org_once, tc)
{
	struct http_head	 h;
	char			 org[129], big[192];	/* ORG_SEL_MAX + 1 */
	char			 req[sizeof(big) + 64];

	ATF_REQUIRE_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &h), 0);
	ATF_CHECK_EQ(http_org_copy(&h, org, sizeof(org)), 0);
	ATF_CHECK_STREQ(org, "");
	ATF_REQUIRE_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\n"
	    "x-treg-org:  acme-2 \r\n\r\n", &h), 0);
	ATF_CHECK_EQ(http_org_copy(&h, org, sizeof(org)), 0);
	ATF_CHECK_STREQ(org, "acme-2");
	ATF_REQUIRE_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\n"
	    "X-Treg-Org: 12\r\n\r\n", &h), 0);
	ATF_CHECK_EQ(http_org_copy(&h, org, sizeof(org)), 0);
	ATF_CHECK_STREQ(org, "12");
	ATF_CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nX-Treg-Org: a\r\n"
	    "X-Treg-Org: b\r\n\r\n", &h), 400);
	ATF_REQUIRE_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\n"
	    "X-Treg-Org: a b'\r\n\r\n", &h), 0);
	ATF_CHECK_EQ(http_org_copy(&h, org, sizeof(org)), -1);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: a\r\n"
	    "X-Treg-Org: %s\r\n\r\n", big);
	ATF_REQUIRE_EQ(parse(req, &h), 0);
	ATF_CHECK_EQ(http_org_copy(&h, org, sizeof(org)), -1);
}

ATF_TC_WITHOUT_HEAD(request_ids_are_short_and_plain);
ATF_TC_BODY(request_ids_are_short_and_plain, tc)
{
	char	 id[HTTP_REQID_MAX + 2];

	ATF_CHECK(http_reqid_ok("a-b_c.9", 7));
	ATF_CHECK(!http_reqid_ok("a b", 3));
	ATF_CHECK(!http_reqid_ok("<x>", 3));
	ATF_CHECK(!http_reqid_ok("", 0));
	memset(id, 'a', sizeof(id));
	ATF_CHECK(http_reqid_ok(id, HTTP_REQID_MAX));
	ATF_CHECK(!http_reqid_ok(id, HTTP_REQID_MAX + 1));
}

ATF_TC_WITHOUT_HEAD(escaping_keeps_whole_characters_within_the_budget);
ATF_TC_BODY(escaping_keeps_whole_characters_within_the_budget, tc)
{
	char	 out[64];
	size_t	 used, n;

	n = json_escape((const unsigned char *)"a\0\"\\\n\xe2\x82\xac", 8,
	    &used, out, sizeof(out));
	ATF_CHECK_EQ(used, 8);
	ATF_CHECK_EQ(n, 16);
	ATF_CHECK(memcmp(out, "a\\u0000\\\"\\\\\\n\xe2\x82\xac", 16) == 0);
	/* The euro sign does not fit in 2 bytes: it is left whole. */
	n = json_escape((const unsigned char *)"a\xe2\x82\xac", 4, &used,
	    out, 3);
	ATF_CHECK_EQ(n, 1);
	ATF_CHECK_EQ(used, 1);
	/* A NUL escape is six bytes or nothing. */
	n = json_escape((const unsigned char *)"\0", 1, &used, out, 5);
	ATF_CHECK_EQ(n, 0);
	ATF_CHECK_EQ(used, 0);
	/* Bytes that are not UTF-8 never go out raw. */
	n = json_escape((const unsigned char *)"\xc1\x14", 2, &used, out,
	    sizeof(out));
	ATF_CHECK_EQ(n, 12);
	ATF_CHECK(memcmp(out, "\\ufffd\\u0014", 12) == 0);
	/* Counting alone gives the same length. */
	ATF_CHECK_EQ(json_escape((const unsigned char *)"\0\0", 2, &used,
	    NULL, 100), 12);
}

ATF_TC_WITHOUT_HEAD(allow_lists_head_with_get);
ATF_TC_BODY(allow_lists_head_with_get, tc)
{
	char	 buf[128];

	http_methods_print(HTTP_M_GET | HTTP_M_DELETE, buf, sizeof(buf));
	ATF_CHECK_STREQ(buf, "GET, HEAD, DELETE");
	http_methods_print(HTTP_M_POST, buf, sizeof(buf));
	ATF_CHECK_STREQ(buf, "POST");
}

/* Parse a literal head as the egress proxy does. */
static int
parse_proxy(const char *s, struct http_head *h, struct http_hdr *hdrs,
    size_t max)
{
	return (http_parse_proxy_head(s, strlen(s), h, hdrs, max));
}

ATF_TC_WITHOUT_HEAD(a_proxy_takes_connect_and_the_absolute_form);
ATF_TC_BODY(a_proxy_takes_connect_and_the_absolute_form, tc)
{
	struct http_head	 h;
	struct http_hdr		 hd[8];

	ATF_REQUIRE_EQ(parse_proxy("CONNECT api.github.com:443 HTTP/1.1\r\n"
	    "Host: api.github.com:443\r\n\r\n", &h, hd, 8), 0);
	ATF_CHECK_EQ(h.method, HTTP_M_CONNECT);
	ATF_CHECK(str_is(&h.authority, "api.github.com:443"));
	ATF_REQUIRE_EQ(parse_proxy("CONNECT [::1]:8443 HTTP/1.1\r\n"
	    "Host: x\r\n\r\n", &h, hd, 8), 0);
	ATF_CHECK(str_is(&h.authority, "[::1]:8443"));
	ATF_REQUIRE_EQ(parse_proxy("GET http://Host.example:8080/a/b?c=d "
	    "HTTP/1.1\r\nHost: host.example:8080\r\nX-A: 1\r\n\r\n", &h, hd,
	    8), 0);
	ATF_CHECK(h.absolute);
	ATF_CHECK(str_is(&h.authority, "Host.example:8080"));
	ATF_CHECK(str_is(&h.path, "/a/b"));
	ATF_CHECK(str_is(&h.query, "c=d"));
	ATF_REQUIRE_EQ(h.nhdrs, 2);
	ATF_CHECK(str_is(&hd[1].name, "X-A") && str_is(&hd[1].value, "1"));
	ATF_REQUIRE_EQ(parse_proxy("GET http://h.example HTTP/1.1\r\n"
	    "Host: h.example\r\n\r\n", &h, hd, 8), 0);
	ATF_CHECK(str_is(&h.path, "/") && str_is(&h.authority, "h.example"));
	/* The transparent path: origin-form, the host from Host. */
	ATF_REQUIRE_EQ(parse_proxy("GET /user HTTP/1.1\r\nHost: a\r\n\r\n",
	    &h, hd, 8), 0);
	ATF_CHECK(!h.absolute && h.authority.p == NULL);
}

ATF_TC_WITHOUT_HEAD(a_proxy_refuses_what_it_cannot_read);
ATF_TC_BODY(a_proxy_refuses_what_it_cannot_read, tc)
{
	struct http_head	 h;
	struct http_hdr		 hd[4];

	ATF_CHECK_EQ(parse_proxy("CONNECT api.github.com HTTP/1.1\r\n"
	    "Host: x\r\n\r\n", &h, hd, 2), 400);
	ATF_CHECK_EQ(parse_proxy("CONNECT a b:443 HTTP/1.1\r\nHost: x\r\n"
	    "\r\n", &h, hd, 2), 400);
	ATF_CHECK_EQ(parse_proxy("CONNECT h:123456 HTTP/1.1\r\nHost: x\r\n"
	    "\r\n", &h, hd, 2), 400);
	ATF_CHECK_EQ(parse_proxy("GET http:///x HTTP/1.1\r\nHost: x\r\n\r\n",
	    &h, hd, 2), 400);
	ATF_CHECK_EQ(parse_proxy("TRACE / HTTP/1.1\r\nHost: x\r\n\r\n", &h,
	    hd, 2), 501);
	ATF_CHECK_EQ(parse_proxy("POST / HTTP/1.1\r\nHost: x\r\n"
	    "Transfer-Encoding: gzip, chunked\r\n\r\n", &h, hd, 2), 501);
	ATF_CHECK_EQ(parse_proxy("POST / HTTP/1.1\r\nHost: x\r\n"
	    "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", &h,
	    hd, 4), 400);
	ATF_CHECK_EQ(parse_proxy("GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\n"
	    "B: 2\r\n\r\n", &h, hd, 2), 431);
	ATF_REQUIRE_EQ(parse_proxy("POST / HTTP/1.1\r\nHost: x\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", &h, hd, 2), 0);
	ATF_CHECK(h.chunked);
}

ATF_TC_WITHOUT_HEAD(the_api_still_refuses_proxy_forms);
ATF_TC_BODY(the_api_still_refuses_proxy_forms, tc)
{
	struct http_head	 h;

	ATF_CHECK_EQ(parse("CONNECT h:443 HTTP/1.1\r\nHost: x\r\n\r\n", &h),
	    400);
	ATF_CHECK_EQ(parse("GET http://h/x HTTP/1.1\r\nHost: x\r\n\r\n", &h),
	    400);
	ATF_CHECK_EQ(parse("POST / HTTP/1.1\r\nHost: x\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", &h), 501);
	ATF_CHECK(h.hdrs == NULL && h.nhdrs == 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, a_proxy_takes_connect_and_the_absolute_form);
	ATF_TP_ADD_TC(tp, a_proxy_refuses_what_it_cannot_read);
	ATF_TP_ADD_TC(tp, the_api_still_refuses_proxy_forms);
	ATF_TP_ADD_TC(tp, head_ends_at_the_first_empty_line);
	ATF_TP_ADD_TC(tp, a_request_gives_its_parts);
	ATF_TP_ADD_TC(tp, bad_heads_get_their_status);
	ATF_TP_ADD_TC(tp, x_treg_org_names_an_org_once);
	ATF_TP_ADD_TC(tp, request_ids_are_short_and_plain);
	ATF_TP_ADD_TC(tp, escaping_keeps_whole_characters_within_the_budget);
	ATF_TP_ADD_TC(tp, allow_lists_head_with_get);
	return (atf_no_error());
}
