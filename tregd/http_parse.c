/*
 * HTTP/1.1 request heads (RFC 9112) as a client sent them, and the JSON
 * string escaping of run output.  Pure functions on buffers: no I/O and
 * no allocation, so that regress/fuzz drives exactly what clients reach.
 *
 * Two readers of one grammar: the frontend's API takes origin-form
 * targets and Content-Length bodies only; the egress proxy (a run's
 * requests) also takes CONNECT's authority-form, the absolute-form of a
 * plain proxy request and chunked bodies, and keeps every header line.
 */

#include <sys/types.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http_parse.h"

static int	name_is(const char *, size_t, const char *);
static int	parse_line(const char *, size_t, struct http_head *, int);
static int	parse_target(const char *, size_t, struct http_head *, int);
static int	parse_authority(const char *, size_t);
static int	parse_header(const char *, size_t, struct http_head *,
		    int *, int *);
static int	parse_head(const char *, size_t, struct http_head *, int);
static int	parse_clen(const char *, size_t, uint64_t *);
static int	seg_id(const char *, size_t, int64_t *);

static const struct {
	const char	*name;
	int		 bit;
} methods[] = {
	{ "GET",	HTTP_M_GET },
	{ "POST",	HTTP_M_POST },
	{ "HEAD",	HTTP_M_HEAD },
	{ "PUT",	HTTP_M_PUT },
	{ "DELETE",	HTTP_M_DELETE },
	{ "OPTIONS",	HTTP_M_OPTIONS },
	{ "TRACE",	HTTP_M_TRACE },
	{ "CONNECT",	HTTP_M_CONNECT },
	{ "PATCH",	HTTP_M_PATCH },
};
#define NMETHODS	(sizeof(methods) / sizeof(methods[0]))

/*
 * The length of the head at buf (blank lines before it included, their
 * count in *skip), up to and including the empty line that ends it;
 * 0 while incomplete.  Lines end in CRLF or a bare LF.
 */
size_t
http_head_end(const char *buf, size_t len, size_t *skip)
{
	size_t	 i = 0;

	while (i < len && (buf[i] == '\r' || buf[i] == '\n')) {
		if (buf[i] == '\r' && (i + 1 >= len || buf[i + 1] != '\n'))
			break;
		i += buf[i] == '\r' ? 2 : 1;
	}
	*skip = i;
	for (; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (i + 1 < len && buf[i + 1] == '\n')
			return (i + 2);
		if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
			return (i + 3);
	}
	return (0);
}

/* A token character (RFC 9110, section 5.6.2). */
int
http_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return (1);
	return (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int
name_is(const char *p, size_t len, const char *name)
{
	return (strlen(name) == len && strncasecmp(p, name, len) == 0);
}

/* Method SP request-target SP HTTP-version. */
static int
parse_line(const char *p, size_t len, struct http_head *h, int proxy)
{
	const char	*sp1, *sp2, *t, *q;
	size_t		 mlen, tlen, i;

	if (len > HTTP_LINE_MAX) {
		h->detail = "request line too long";
		return (414);
	}
	if ((sp1 = memchr(p, ' ', len)) == NULL ||
	    (sp2 = memchr(sp1 + 1, ' ', len - (sp1 + 1 - p))) == NULL) {
		h->detail = "malformed request line";
		return (400);
	}
	mlen = sp1 - p;
	for (i = 0; i < mlen; i++)
		if (!http_tchar(p[i])) {
			h->detail = "malformed request line";
			return (400);
		}
	if (mlen == 0) {
		h->detail = "malformed request line";
		return (400);
	}
	t = sp1 + 1;
	tlen = sp2 - t;
	if (!proxy && (tlen == 0 || *t != '/')) {
		h->detail = "the request target must be a path";
		return (400);
	}
	for (i = 0; i < tlen; i++)
		if ((unsigned char)t[i] <= 0x20 ||
		    (unsigned char)t[i] >= 0x7f || t[i] == '#') {
			h->detail = "malformed request target";
			return (400);
		}
	q = sp2 + 1;
	i = len - (q - p);
	if (i != 8 || memcmp(q, "HTTP/", 5) != 0 || q[6] != '.' ||
	    q[5] < '0' || q[5] > '9' || q[7] < '0' || q[7] > '9') {
		h->detail = "malformed HTTP version";
		return (400);
	}
	if (q[5] != '1') {
		h->detail = "only HTTP/1.0 and HTTP/1.1 are supported";
		return (505);
	}
	/* A later 1.x is answered as 1.1 (RFC 9110, section 6.2). */
	h->minor = q[7] >= '1' ? 1 : 0;
	h->keepalive = h->minor >= 1;
	for (i = 0; i < NMETHODS; i++)
		if (strlen(methods[i].name) == mlen &&
		    memcmp(methods[i].name, p, mlen) == 0)
			h->method = methods[i].bit;
	if (h->method == 0 || h->method == HTTP_M_TRACE ||
	    (h->method == HTTP_M_CONNECT && !proxy)) {
		h->method = 0;
		h->detail = "method not implemented";
		return (501);
	}
	return (parse_target(t, tlen, h, proxy));
}

/* host ":" port, the host a name, an IPv4 or a bracketed IPv6 address. */
static int
parse_authority(const char *p, size_t len)
{
	const char	*colon;
	size_t		 i, hlen;

	if ((colon = memrchr(p, ':', len)) == NULL || colon == p)
		return (-1);
	hlen = colon - p;
	if (len - hlen - 1 == 0 || len - hlen - 1 > 5)
		return (-1);
	for (i = hlen + 1; i < len; i++)
		if (p[i] < '0' || p[i] > '9')
			return (-1);
	if (p[0] == '[')
		return (p[hlen - 1] == ']' && hlen > 2 &&
		    strspn(p + 1, "0123456789abcdefABCDEF:.") == hlen - 2 ?
		    0 : -1);
	return (strspn(p, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == hlen ? 0 : -1);
}

/*
 * The request target: origin-form ("/path?query"); for a proxy also
 * CONNECT's authority-form and a plain request's absolute-form.
 */
static int
parse_target(const char *t, size_t tlen, struct http_head *h, int proxy)
{
	const char	*q, *slash;

	if (h->method == HTTP_M_CONNECT) {
		if (parse_authority(t, tlen) == -1) {
			h->detail = "CONNECT needs host:port";
			return (400);
		}
		h->authority.p = t;
		h->authority.len = tlen;
		h->path.p = h->query.p = t + tlen;
		return (0);
	}
	if (proxy && tlen > 7 && strncasecmp(t, "http://", 7) == 0) {
		h->absolute = 1;
		t += 7;
		tlen -= 7;
		if ((slash = memchr(t, '/', tlen)) == NULL)
			slash = t + tlen;
		if ((q = memchr(t, '?', slash - t)) != NULL)
			slash = q;
		h->authority.p = t;
		h->authority.len = slash - t;
		tlen -= slash - t;
		t = slash;
		if (h->authority.len == 0) {
			h->detail = "malformed request target";
			return (400);
		}
		if (tlen == 0) {
			h->path.p = "/";
			h->path.len = 1;
			h->query.p = t;
			return (0);
		}
	}
	if (tlen == 0 || *t != '/') {
		h->detail = "the request target must be a path";
		return (400);
	}
	h->path.p = t;
	h->path.len = tlen;
	if ((q = memchr(t, '?', tlen)) != NULL) {
		h->path.len = q - t;
		h->query.p = q + 1;
		h->query.len = tlen - h->path.len - 1;
	} else {
		h->query.p = t + tlen;
		h->query.len = 0;
	}
	return (0);
}

/* 1*DIGIT, at most 18 of them. */
static int
parse_clen(const char *p, size_t len, uint64_t *out)
{
	uint64_t	 v = 0;
	size_t		 i;

	if (len == 0 || len > 18)
		return (-1);
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return (-1);
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	return (0);
}

/* Does the comma-separated list hold the token (any case)? */
int
http_list_has(const char *p, size_t len, const char *tok)
{
	const char	*e = p + len, *s, *c;
	size_t		 n;

	for (s = p; s < e; s = c + 1) {
		if ((c = memchr(s, ',', e - s)) == NULL)
			c = e;
		while (s < c && (*s == ' ' || *s == '\t'))
			s++;
		n = c - s;
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (name_is(s, n, tok))
			return (1);
	}
	return (0);
}

static int
parse_header(const char *p, size_t len, struct http_head *h, int *host,
    int *te)
{
	const char	*colon, *v;
	size_t		 nlen, vlen, i;

	if (len > 0 && (*p == ' ' || *p == '\t')) {
		h->detail = "folded header lines are not accepted";
		return (400);
	}
	if ((colon = memchr(p, ':', len)) == NULL || colon == p) {
		h->detail = "malformed header line";
		return (400);
	}
	nlen = colon - p;
	for (i = 0; i < nlen; i++)
		if (!http_tchar(p[i])) {
			h->detail = "malformed header name";
			return (400);
		}
	v = colon + 1;
	vlen = len - nlen - 1;
	while (vlen > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	for (i = 0; i < vlen; i++)
		if (((unsigned char)v[i] < 0x20 && v[i] != '\t') ||
		    v[i] == 0x7f) {
			h->detail = "malformed header value";
			return (400);
		}
	if (h->hdrs != NULL) {
		if (h->nhdrs == h->maxhdrs) {
			h->detail = "too many header lines";
			return (431);
		}
		h->hdrs[h->nhdrs].name.p = p;
		h->hdrs[h->nhdrs].name.len = nlen;
		h->hdrs[h->nhdrs].value.p = v;
		h->hdrs[h->nhdrs++].value.len = vlen;
	}

	if (name_is(p, nlen, "Content-Length")) {
		if (h->has_clen) {
			h->detail = "more than one Content-Length";
			return (400);
		}
		if (parse_clen(v, vlen, &h->clen) == -1) {
			h->detail = "invalid Content-Length";
			return (400);
		}
		h->has_clen = 1;
	} else if (name_is(p, nlen, "Transfer-Encoding")) {
		/* chunked alone: any other coding is a body not read here */
		if ((*te)++ == 0 && name_is(v, vlen, "chunked"))
			h->chunked = 1;
		else
			h->chunked = 0;
	}
	else if (name_is(p, nlen, "Host")) {
		if ((*host)++) {
			h->detail = "more than one Host";
			return (400);
		}
	} else if (name_is(p, nlen, "Connection")) {
		if (http_list_has(v, vlen, "close"))
			h->keepalive = 0;
		else if (http_list_has(v, vlen, "keep-alive"))
			h->keepalive = 1;
	} else if (name_is(p, nlen, "Expect")) {
		if (http_list_has(v, vlen, "100-continue"))
			h->expect_continue = 1;
	} else if (name_is(p, nlen, "X-Treg-Token") ||
	    name_is(p, nlen, "X-Treg-Run-Proof")) {
		struct http_str	*s = name_is(p, nlen, "X-Treg-Token") ?
		    &h->token : &h->proof;

		if (s->p != NULL) {
			h->detail = "a credential header appears twice";
			return (400);
		}
		s->p = v;
		s->len = vlen;
	} else if (name_is(p, nlen, "X-Treg-Org")) {
		/* The org an identity token acts in (vault_identity.c). */
		if (h->org.p != NULL) {
			h->detail = "X-Treg-Org appears twice";
			return (400);
		}
		h->org.p = v;
		h->org.len = vlen;
	} else if (name_is(p, nlen, "X-Request-Id")) {
		h->reqid.p = v;
		h->reqid.len = vlen;
	} else if (name_is(p, nlen, "X-Treg-Client") && h->client.p == NULL) {
		h->client.p = v;
		h->client.len = vlen;
	}
	return (0);
}

/*
 * Parse a complete head (as http_head_end delimited it, without the
 * leading blank lines).  Returns 0, or the status to refuse it with and
 * h->detail saying why.
 */
int
http_parse_head(const char *buf, size_t len, struct http_head *h)
{
	memset(h, 0, sizeof(*h));
	return (parse_head(buf, len, h, 0));
}

/*
 * A request to the egress proxy: as http_parse_head, and CONNECT, the
 * absolute-form and chunked bodies; every header line into hdrs.
 */
int
http_parse_proxy_head(const char *buf, size_t len, struct http_head *h,
    struct http_hdr *hdrs, size_t maxhdrs)
{
	memset(h, 0, sizeof(*h));
	h->hdrs = hdrs;
	h->maxhdrs = maxhdrs;
	return (parse_head(buf, len, h, 1));
}

static int
parse_head(const char *buf, size_t len, struct http_head *h, int proxy)
{
	const char	*p = buf, *e = buf + len, *nl;
	size_t		 n;
	int		 r, lines = 0, host = 0, te = 0;

	while (p < e) {
		if ((nl = memchr(p, '\n', e - p)) == NULL) {
			h->detail = "malformed request head";
			return (400);
		}
		n = nl - p;
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (memchr(p, '\r', n) != NULL || memchr(p, '\0', n) != NULL) {
			h->detail = "malformed request head";
			return (400);
		}
		if (lines == 0) {
			if ((r = parse_line(p, n, h, proxy)) != 0)
				return (r);
		} else if (n == 0)
			break;
		else if (lines > HTTP_NHEADERS_MAX) {
			h->detail = "too many header lines";
			return (431);
		} else if ((r = parse_header(p, n, h, &host, &te)) != 0)
			return (r);
		lines++;
		p = nl + 1;
	}
	if (lines == 0) {
		h->detail = "malformed request head";
		return (400);
	}
	if (te && h->has_clen) {
		h->detail = "Transfer-Encoding with Content-Length";
		return (400);
	}
	if (te && (!proxy || !h->chunked)) {
		h->detail = proxy ? "only Transfer-Encoding: chunked is "
		    "supported" : "Transfer-Encoding is not supported: send a "
		    "Content-Length";
		return (501);
	}
	if (h->minor >= 1 && host != 1) {
		h->detail = "HTTP/1.1 needs a Host header";
		return (400);
	}
	return (0);
}

/* A client's X-Request-Id is echoed only when it is short and plain. */
int
http_reqid_ok(const char *p, size_t len)
{
	size_t	 i;

	if (len == 0 || len > HTTP_REQID_MAX)
		return (0);
	for (i = 0; i < len; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') ||
		    (p[i] >= 'A' && p[i] <= 'Z') ||
		    (p[i] >= '0' && p[i] <= '9') ||
		    p[i] == '-' || p[i] == '_' || p[i] == '.'))
			return (0);
	return (1);
}

const char *
http_reason(int status)
{
	switch (status) {
	case 100: return ("Continue");
	case 200: return ("OK");
	case 400: return ("Bad Request");
	case 401: return ("Unauthorized");
	case 403: return ("Forbidden");
	case 404: return ("Not Found");
	case 405: return ("Method Not Allowed");
	case 408: return ("Request Timeout");
	case 409: return ("Conflict");
	case 410: return ("Gone");
	case 413: return ("Content Too Large");
	case 414: return ("URI Too Long");
	case 422: return ("Unprocessable Content");
	case 429: return ("Too Many Requests");
	case 431: return ("Request Header Fields Too Large");
	case 500: return ("Internal Server Error");
	case 501: return ("Not Implemented");
	case 503: return ("Service Unavailable");
	case 505: return ("HTTP Version Not Supported");
	default: return ("Error");
	}
}

/* "GET, HEAD, POST": the methods of a mask, for Allow. */
size_t
http_methods_print(int mask, char *buf, size_t len)
{
	size_t	 i, n = 0;
	int	 w;

	if (mask & HTTP_M_GET)
		mask |= HTTP_M_HEAD;
	if (len > 0)
		buf[0] = '\0';
	for (i = 0; i < NMETHODS; i++) {
		if (!(mask & methods[i].bit))
			continue;
		w = snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
		    methods[i].name);
		if (w < 0 || (size_t)w >= len - n)
			break;
		n += w;
	}
	return (n);
}

/*
 * Escape valid UTF-8 for the inside of a JSON string, whole characters
 * only, while they fit in out (out may be NULL to only count, outlen is
 * then the budget).  *used is set to the input consumed; the number of
 * bytes written is returned.
 */
size_t
json_escape(const unsigned char *in, size_t inlen, size_t *used, char *out,
    size_t outlen)
{
	static const char	 hex[] = "0123456789abcdef";
	char			 e[6];
	size_t			 i = 0, o = 0, n, k;
	unsigned char		 c;

	while (i < inlen) {
		c = in[i];
		n = 1;
		if (c == '"' || c == '\\') {
			e[0] = '\\';
			e[1] = c;
			k = 2;
		} else if (c < 0x20) {
			e[0] = '\\';
			k = 2;
			switch (c) {
			case '\n': e[1] = 'n'; break;
			case '\r': e[1] = 'r'; break;
			case '\t': e[1] = 't'; break;
			case '\b': e[1] = 'b'; break;
			case '\f': e[1] = 'f'; break;
			default:
				memcpy(e, "\\u00", 4);
				e[4] = hex[c >> 4];
				e[5] = hex[c & 0xf];
				k = 6;
			}
		} else {
			if (c >= 0xf0)
				n = 4;
			else if (c >= 0xe0)
				n = 3;
			else if (c >= 0xc0)
				n = 2;
			if (n > inlen - i)
				break;		/* never half a character */
			for (k = 1; k < n; k++)
				if ((in[i + k] & 0xc0) != 0x80)
					break;
			if (c >= 0x80 && (k < n || c < 0xc2 || c > 0xf4)) {
				/* Not UTF-8 after all: U+FFFD, never raw. */
				memcpy(e, "\\ufffd", 6);
				n = 1;
				k = 6;
			} else
				k = n;
		}
		if (k > outlen - o)
			break;
		if (out != NULL) {
			if (k == n && c >= 0x20 && c != '"' && c != '\\')
				memcpy(out + o, in + i, n);
			else
				memcpy(out + o, e, k);
		}
		o += k;
		i += n;
	}
	*used = i;
	return (o);
}

/* A path segment as an id: digits only, 1..2^53. */
static int
seg_id(const char *s, size_t len, int64_t *out)
{
	int64_t	 v = 0;
	size_t	 i;

	if (len == 0 || len > 16)
		return (-1);
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > (1LL << 53))
		return (-1);
	*out = v;
	return (0);
}

/*
 * Match a path (NUL-terminated, raw) against a route table.  Returns 0
 * and fills m, 404 when no pattern has this shape, 405 when one does but
 * not for this method (m->allow then lists the methods it has).
 */
int
http_route_match(const struct route_pat *tab, size_t n, const char *path,
    int method, struct http_match *m)
{
	const char	*segs[HTTP_PATH_SEGS_MAX], *p, *q;
	size_t		 lens[HTTP_PATH_SEGS_MAX], plen, i;
	int		 nsegs = 0, psegs, shape = 0, ok, namepos;

	memset(m, 0, sizeof(*m));
	if (path[0] != '/')
		return (404);
	for (p = path + 1; *p != '\0'; p = *q ? q + 1 : q) {
		if (nsegs == HTTP_PATH_SEGS_MAX)
			return (404);
		if ((q = strchr(p, '/')) == NULL)
			q = p + strlen(p);
		segs[nsegs] = p;
		lens[nsegs++] = q - p;
	}
	for (i = 0; i < n; i++) {
		p = tab[i].pattern + 1;
		m->nids = 0;
		namepos = -1;
		for (psegs = 0, ok = 1; *p != '\0' && ok; psegs++) {
			q = strchr(p, '/');
			plen = q ? (size_t)(q - p) : strlen(p);
			if (psegs >= nsegs)
				ok = 0;
			else if (plen == 1 && *p == '#')
				ok = m->nids < 2 && seg_id(segs[psegs],
				    lens[psegs], &m->ids[m->nids++]) == 0;
			else if (plen == 1 && *p == '*') {
				ok = lens[psegs] > 0;
				namepos = psegs;
			} else
				ok = plen == lens[psegs] &&
				    memcmp(p, segs[psegs], plen) == 0;
			p += plen;
			if (*p == '/')
				p++;
		}
		if (!ok || psegs != nsegs)
			continue;
		shape = 1;
		m->allow |= tab[i].method;
		m->pattern = tab[i].pattern;
		if (tab[i].method != method)
			continue;
		m->route = tab[i].route;
		if (namepos != -1) {
			m->name.p = segs[namepos];
			m->name.len = lens[namepos];
		}
		return (0);
	}
	if (!shape)
		m->pattern = NULL;
	m->ids[0] = m->ids[1] = 0;
	m->nids = 0;
	return (shape ? 405 : 404);
}

/* Nesting depth of a JSON text, outside strings; 0 past the limit. */
int
json_depth_ok(const char *s, size_t len)
{
	size_t	 i;
	int	 depth = 0, instr = 0;

	for (i = 0; i < len; i++) {
		if (instr) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				instr = 0;
			continue;
		}
		switch (s[i]) {
		case '"':
			instr = 1;
			break;
		case '[':
		case '{':
			if (++depth > JSON_DEPTH_MAX)
				return (0);
			break;
		case ']':
		case '}':
			depth--;
			break;
		}
	}
	return (1);
}

/*
 * X-Treg-Client into out (len bytes, "" when absent): the runtime treg's
 * client says it runs in ("claude-code", "codex", "cli"), for the audit
 * rows only (attribution, never authentication).  As treg keeps it: the
 * part before a '/' (a version), lower case, letters, digits, '-', '_'
 * and '.' only, the rest dropped, at most len - 1 bytes.
 */
void
http_client_copy(const struct http_head *h, char *out, size_t len)
{
	size_t	 i, o = 0;
	int	 c;

	for (i = 0; h->client.p != NULL && i < h->client.len &&
	    h->client.p[i] != '/' && o + 1 < len; i++) {
		c = tolower((unsigned char)h->client.p[i]);
		if (isalnum(c) || c == '-' || c == '_' || c == '.')
			out[o++] = c;
	}
	out[o] = '\0';
}

/*
 * X-Treg-Org into out (len bytes, "" when absent): an org's slug or id,
 * so letters, digits, '-', '_' and '.' only.  -1 when it is not one.
 */
int
http_org_copy(const struct http_head *h, char *out, size_t len)
{
	size_t	 i;
	char	 c;

	out[0] = '\0';
	if (h->org.p == NULL)
		return (0);
	if (h->org.len >= len)
		return (-1);
	for (i = 0; i < h->org.len; i++) {
		c = h->org.p[i];
		if (!isalnum((unsigned char)c) && c != '-' && c != '_' &&
		    c != '.')
			return (-1);
	}
	memcpy(out, h->org.p, h->org.len);
	out[h->org.len] = '\0';
	return (0);
}
