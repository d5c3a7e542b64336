/*
 * egress_match_test: the egress proxy's decisions that need no network
 * (relay/egress_proxy.c, egress_req.c; SPEC.md section 6a): which hosts
 * a run's egress list lets through, the method the deny rules see when
 * a request carries an override header, and the path a call record
 * keeps.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <event.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "egress_int.h"

static char	*hosts[] = { "api.example.com:443", "*.example.org:443",
		    "http://localhost:8080", "[::1]:8443", NULL };

static void
grant_init(struct egrant *gr)
{
	static struct egress_val	 v;

	memset(gr, 0, sizeof(*gr));
	gr->hosts = hosts;
	gr->nhosts = 4;
	v.ph = "sk_live_PH0123456789";
	v.phlen = strlen(v.ph);
	gr->vals = &v;
	gr->nvals = 1;
}

ATF_TC_WITHOUT_HEAD(host_list);
ATF_TC_BODY(host_list, tc)
{
	struct egrant	 gr;

	grant_init(&gr);
	ATF_CHECK(egress_host_ok(&gr, "api.example.com", 443, 0));
	ATF_CHECK(egress_host_ok(&gr, "API.Example.COM", 443, 0));
	ATF_CHECK(!egress_host_ok(&gr, "api.example.com", 8443, 0));
	ATF_CHECK(!egress_host_ok(&gr, "api.example.com", 443, 1));
	ATF_CHECK(!egress_host_ok(&gr, "xapi.example.com", 443, 0));
	ATF_CHECK(!egress_host_ok(&gr, "api.example.com.evil", 443, 0));
	/* A wildcard: any subdomain, not the domain itself. */
	ATF_CHECK(egress_host_ok(&gr, "a.example.org", 443, 0));
	ATF_CHECK(egress_host_ok(&gr, "a.b.example.org", 443, 0));
	ATF_CHECK(!egress_host_ok(&gr, "example.org", 443, 0));
	ATF_CHECK(!egress_host_ok(&gr, "evilexample.org", 443, 0));
	ATF_CHECK(!egress_host_ok(&gr, ".example.org", 443, 0));
	ATF_CHECK(!egress_host_ok(&gr, "a.example.org", 80, 0));
	/* http:// only where the list says so, and only there. */
	ATF_CHECK(egress_host_ok(&gr, "localhost", 8080, 1));
	ATF_CHECK(!egress_host_ok(&gr, "localhost", 8080, 0));
	ATF_CHECK(!egress_host_ok(&gr, "api.example.com", 443, 1));
	ATF_CHECK(egress_host_ok(&gr, "[::1]", 8443, 0));
}

/* req from a head; 0 or -1 as egress_method; the method in out. */
static int
method_of(const char *head, char *out, size_t outsz)
{
	static struct egress_req	 req;

	memset(&req, 0, sizeof(req));
	req.head = (char *)head;
	req.headlen = strlen(head);
	ATF_REQUIRE_EQ(http_parse_proxy_head(req.head, req.headlen, &req.h,
	    req.hdrs, HTTP_NHEADERS_MAX), 0);
	return (egress_method(&req, out, outsz));
}

ATF_TC_WITHOUT_HEAD(method_override);
ATF_TC_BODY(method_override, tc)
{
	char	 m[32];

	ATF_CHECK_EQ(method_of("POST /a HTTP/1.1\r\nHost: a\r\n\r\n", m,
	    sizeof(m)), 0);
	ATF_CHECK_STREQ(m, "POST");
	ATF_CHECK_EQ(method_of("POST /a HTTP/1.1\r\nHost: a\r\n"
	    "X-HTTP-Method-Override: delete\r\n\r\n", m, sizeof(m)), 0);
	ATF_CHECK_STREQ(m, "DELETE");
	ATF_CHECK_EQ(method_of("GET /a HTTP/1.1\r\nHost: a\r\n"
	    "X-Method-Override: PUT\r\n\r\n", m, sizeof(m)), 0);
	ATF_CHECK_STREQ(m, "PUT");
	/* A list, two that differ, an empty one: refused. */
	ATF_CHECK_EQ(method_of("GET /a HTTP/1.1\r\nHost: a\r\n"
	    "X-HTTP-Method-Override: DELETE,GET\r\n\r\n", m, sizeof(m)), -1);
	ATF_CHECK_EQ(method_of("GET /a HTTP/1.1\r\nHost: a\r\n"
	    "X-HTTP-Method-Override: DELETE GET\r\n\r\n", m, sizeof(m)), -1);
	ATF_CHECK_EQ(method_of("GET /a HTTP/1.1\r\nHost: a\r\n"
	    "X-HTTP-Method: GET\r\nX-HTTP-Method-Override: DELETE\r\n\r\n", m,
	    sizeof(m)), -1);
	ATF_CHECK_EQ(method_of("GET /a HTTP/1.1\r\nHost: a\r\n"
	    "X-HTTP-Method: \r\n\r\n", m, sizeof(m)), -1);
	/* The same twice is one method. */
	ATF_CHECK_EQ(method_of("GET /a HTTP/1.1\r\nHost: a\r\n"
	    "X-HTTP-Method: PATCH\r\nX-Method-Override: patch\r\n\r\n", m,
	    sizeof(m)), 0);
	ATF_CHECK_STREQ(m, "PATCH");
}

ATF_TC_WITHOUT_HEAD(record_path);
ATF_TC_BODY(record_path, tc)
{
	struct egrant		 gr;
	struct http_head	 h;
	struct http_hdr		 hdrs[8];
	char			 out[256];
	const char		*head = "GET /v1/sk_live_PH0123456789/x?"
				    "key=sk_live_PH0123456789&q=secret&flag "
				    "HTTP/1.1\r\nHost: a\r\n\r\n";

	grant_init(&gr);
	ATF_REQUIRE_EQ(http_parse_proxy_head(head, strlen(head), &h, hdrs, 8),
	    0);
	egress_pathmask(&gr, &h, out, sizeof(out));
	ATF_CHECK_STREQ(out, "/v1/***/x?key&q&flag");
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, host_list);
	ATF_TP_ADD_TC(tp, method_override);
	ATF_TP_ADD_TC(tp, record_path);
	return (atf_no_error());
}
