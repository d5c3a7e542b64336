/*
 * libFuzzer target: the bytes a client sends to the frontend, through
 * the code that parses them before any check of a token (tregd/
 * http_parse.c): where a request head ends, the head itself, the route
 * matcher on its path, the request id test, the body's nesting check and
 * JSON decoding as frontend.c does it, the 405 Allow list and the JSON
 * escaping of run output.  The invariants checked are the ones
 * frontend.c relies on.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "http_parse.h"

/* The shapes of frontend.c's routes[] (ids, names, depths). */
static const struct route_pat fuzz_routes[] = {
	{ HTTP_M_POST,		"/users",			1 },
	{ HTTP_M_DELETE,	"/orgs/#",			2 },
	{ HTTP_M_DELETE,	"/orgs/#/invites/#",		3 },
	{ HTTP_M_PATCH,		"/orgs/#/members/#/access",	4 },
	{ HTTP_M_GET,		"/tools/by-name/*",		5 },
	{ HTTP_M_POST,		"/tools/*/grant",		6 },
	{ HTTP_M_GET,		"/tools",			7 },
	{ HTTP_M_POST,		"/tools",			8 },
	{ HTTP_M_POST,		"/run",				9 },
};

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_str(const struct http_str *s, const char *buf, size_t len)
{
	if (s->p == NULL)
		return;
	if (s->p < buf || s->p + s->len > buf + len)
		abort();
	if (memchr(s->p, '\r', s->len) != NULL ||
	    memchr(s->p, '\n', s->len) != NULL)
		abort();
}

static void
check_route(const struct http_head *h)
{
	struct http_match	 m;
	char			 path[HTTP_LINE_MAX + 1];
	int			 r, i;

	memcpy(path, h->path.p, h->path.len);
	path[h->path.len] = '\0';
	r = http_route_match(fuzz_routes, sizeof(fuzz_routes) /
	    sizeof(fuzz_routes[0]), path, h->method, &m);
	if (r != 0 && r != 404 && r != 405)
		abort();
	if (r == 405 && (m.allow == 0 || m.pattern == NULL))
		abort();
	if (r != 0)
		return;
	if (m.nids < 0 || m.nids > 2 || m.pattern == NULL)
		abort();
	for (i = 0; i < m.nids; i++)
		if (m.ids[i] < 1 || m.ids[i] > (1LL << 53))
			abort();
	if (m.name.p != NULL && (m.name.p < path ||
	    m.name.p + m.name.len > path + h->path.len || m.name.len == 0 ||
	    memchr(m.name.p, '/', m.name.len) != NULL))
		abort();
}

/* What follows the head, decoded as frontend.c decodes a body. */
static void
check_body(const char *p, size_t len)
{
	json_error_t	 jerr;
	json_t		*j;

	if (!json_depth_ok(p, len))
		return;
	j = json_loadb(p, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
	    &jerr);
	json_decref(j);
}

static void
check_head(const char *buf, size_t len)
{
	struct http_head	 h;
	size_t			 end, skip;
	int			 r;

	end = http_head_end(buf, len, &skip);
	if (end > len || skip > len)
		abort();
	if (end == 0)
		end = len;
	r = http_parse_head(buf + skip, end - skip, &h);
	if (r != 0) {
		if (h.detail == NULL || r < 400 || r > 505)
			abort();
		return;
	}
	if (h.method == 0 || h.path.p == NULL || h.path.len == 0 ||
	    h.path.p[0] != '/' || memchr(h.path.p, '?', h.path.len) != NULL)
		abort();
	if (h.path.len > HTTP_LINE_MAX || (h.minor != 0 && h.minor != 1))
		abort();
	check_str(&h.path, buf + skip, end - skip);
	check_str(&h.query, buf + skip, end - skip);
	check_str(&h.token, buf + skip, end - skip);
	check_str(&h.proof, buf + skip, end - skip);
	check_str(&h.reqid, buf + skip, end - skip);
	if (h.reqid.p != NULL)
		(void)http_reqid_ok(h.reqid.p, h.reqid.len);
	check_route(&h);
	check_body(buf + end, len - end);
}

/*
 * The same head as the egress proxy reads a run's request: CONNECT's
 * authority, the absolute-form, chunked; every header kept in place.
 */
static void
check_proxy_head(const char *buf, size_t len)
{
	struct http_head	 h;
	struct http_hdr		 hd[HTTP_NHEADERS_MAX];
	size_t			 end, skip, i;
	int			 r;

	end = http_head_end(buf, len, &skip);
	if (end == 0)
		end = len;
	r = http_parse_proxy_head(buf + skip, end - skip, &h, hd,
	    HTTP_NHEADERS_MAX);
	if (r != 0) {
		if (h.detail == NULL || r < 400 || r > 505)
			abort();
		return;
	}
	if (h.method == 0 || h.nhdrs > HTTP_NHEADERS_MAX ||
	    (h.method == HTTP_M_CONNECT && h.authority.len == 0) ||
	    (h.absolute && h.authority.len == 0) ||
	    (h.method != HTTP_M_CONNECT && (h.path.len == 0 ||
	    h.path.p[0] != '/')) || (h.chunked && h.has_clen))
		abort();
	check_str(&h.authority, buf + skip, end - skip);
	/* An absolute-form target without a path reads "/", not in buf. */
	if (!(h.absolute && h.path.len == 1 &&
	    (h.path.p < buf + skip || h.path.p >= buf + end)))
		check_str(&h.path, buf + skip, end - skip);
	check_str(&h.query, buf + skip, end - skip);
	for (i = 0; i < h.nhdrs; i++) {
		check_str(&hd[i].name, buf + skip, end - skip);
		check_str(&hd[i].value, buf + skip, end - skip);
		if (hd[i].name.len == 0)
			abort();
	}
}

/* Escaped text: no raw control byte, no half character, within budget. */
static void
check_escape(const uint8_t *data, size_t size)
{
	char	 out[8192];
	size_t	 used, n, budget, i;

	budget = size > 0 ? data[0] * 8 : 0;
	if (budget > sizeof(out))
		budget = sizeof(out);
	n = json_escape(data, size, &used, out, budget);
	if (n > budget || used > size)
		abort();
	for (i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20)
			abort();
	if (json_escape(data, size, &used, NULL, budget) != n)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	 allow[128];

	check_head((const char *)data, size);
	check_proxy_head((const char *)data, size);
	check_escape(data, size);
	if (size >= 2)
		(void)http_methods_print(data[0] | data[1] << 8, allow,
		    sizeof(allow));
	return (0);
}
