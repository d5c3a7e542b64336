/*
 * egress_req.c: one request of a run's CLI through the egress proxy
 * (SPEC.md section 6a), from its checks to its answer.
 *
 * Before the vault's verdict: the method the rules see (an override
 * header counts, a list of methods is refused), an AWS SigV4 signature
 * checked with the run's placeholder secret (the body hashed first when
 * the CLI did not send its hash), aws-chunked bodies refused.  After it:
 * placeholders swapped in the target and header values (egress_subst.c;
 * never in the body), a SigV4 request signed again with the real secret
 * and key id, hop-by-hop and proxy headers dropped, Accept-Encoding:
 * identity; then the relay's own client (relay.c, relay_http.c) takes
 * it, with the relay's checks (the SSRF guard, the upstream's
 * certificate) and a keep-alive pool of this run's only.  The body is
 * streamed from the run as it comes, its framing kept, never more than
 * EGRESS_UP_HIGH queued for the upstream.  The answer is read and masked
 * by relay_resp.c and written to the run's connection (the sink below),
 * chunked, the upstream paused while the run's side is behind.
 */

#include <sys/types.h>

#include <ctype.h>
#include <event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "egress.h"
#include "egress_int.h"
#include "redact_cache.h"

#define EQ_LINE_MAX	1024	/* a chunk's size line */

static int	 hdr_dropped(const struct egress_req *,
		    const struct http_hdr *);
static void	 req_refuse(struct egress_req *, int, const char *);
static void	 req_bodyhash(struct egress_req *);
static int	 pump_chunked(struct egress_req *, struct evbuffer *,
		    struct evbuffer *);
static void	 sk_request(struct rcall *, struct evbuffer *);
static void	 sk_written(struct rcall *);
static void	 sk_head(struct rcall *, int, const char *, size_t);
static void	 sk_body(struct rcall *, const void *, size_t);
static void	 sk_end(struct rcall *, int);
static void	 sk_refuse(struct rcall *, int, const char *);
static int	 sk_backlog(struct rcall *);

static const struct rsink egress_sink = {
	sk_request, sk_written, sk_head, sk_body, sk_end, sk_refuse,
	sk_backlog, NULL
};

const struct http_hdr *
egress_req_hdr(const struct egress_req *req, const char *name)
{
	size_t	 i, n = strlen(name);

	for (i = 0; i < req->h.nhdrs; i++)
		if (req->h.hdrs[i].name.len == n &&
		    strncasecmp(req->h.hdrs[i].name.p, name, n) == 0)
			return (&req->h.hdrs[i]);
	return (NULL);
}

char *
egress_hdr_dup(const struct http_hdr *h)
{
	char	*s;

	if ((s = strndup(h->value.p, h->value.len)) == NULL)
		fatal("%s: strndup", __func__);
	return (s);
}

/*
 * The method the deny rules see: the request line's, or the one an
 * override header names (servers honour them).  A list, or two headers
 * naming different methods, would let the rules see one and the server
 * act on another: -1.
 */
int
egress_method(const struct egress_req *req, char *out, size_t outsz)
{
	static const char *const over[] = { "X-HTTP-Method-Override",
	    "X-HTTP-Method", "X-Method-Override", NULL };
	const struct http_hdr	*h;
	size_t			 i, j, k, n;
	int			 seen = 0;

	n = strcspn(req->head, " ");
	if (n == 0 || n >= outsz)
		return (-1);
	memcpy(out, req->head, n);
	out[n] = '\0';
	for (i = 0; i < req->h.nhdrs; i++) {
		h = &req->h.hdrs[i];
		for (j = 0; over[j] != NULL; j++)
			if (h->name.len == strlen(over[j]) &&
			    strncasecmp(h->name.p, over[j], h->name.len) == 0)
				break;
		if (over[j] == NULL)
			continue;
		if (h->value.len == 0 || h->value.len >= outsz)
			return (-1);
		for (k = 0; k < h->value.len; k++)
			if (!http_tchar(h->value.p[k]))
				return (-1);	/* ",", " ": a list */
		if (seen && (strlen(out) != h->value.len ||
		    strncasecmp(out, h->value.p, h->value.len) != 0))
			return (-1);
		for (k = 0; k < h->value.len; k++)
			out[k] = toupper((unsigned char)h->value.p[k]);
		out[k] = '\0';
		seen = 1;
	}
	return (0);
}

/* Refused by the relay before the vault: recorded, answered, closed. */
static void
req_refuse(struct egress_req *req, int status, const char *detail)
{
	char	 path[2048];

	egress_pathmask(req->gr, &req->h, path, sizeof(path));
	egress_audit_refusal(req->ec, req->method, req->host, req->port, path,
	    detail, status);
	egress_answer(req->ec, status, detail, 1);
}

/*
 * Before the vault: aws-chunked refused; a SigV4 request made with this
 * run's key id checked (its body hashed first when it must be).  -1 when
 * it was answered here; 0 when it goes on (to the vault, or to its body).
 */
int
egress_req_check(struct egress_req *req)
{
	const struct http_hdr	*sha, *ce;
	unsigned char		 h[crypto_hash_sha256_BYTES];
	int			 needbody;

	sha = egress_req_hdr(req, "X-Amz-Content-Sha256");
	ce = egress_req_hdr(req, "Content-Encoding");
	if ((sha != NULL && sha->value.len >= 10 &&
	    strncasecmp(sha->value.p, "STREAMING-", 10) == 0) ||
	    (ce != NULL && http_list_has(ce->value.p, ce->value.len,
	    "aws-chunked"))) {
		req_refuse(req, 501, "aws-chunked (streaming signed) bodies "
		    "are not supported by tregd's egress proxy: turn off "
		    "payload signing for uploads");
		return (-1);
	}
	if (egress_aws_detect(req, &needbody) == -1) {
		req_refuse(req, 403, "the request's AWS signature cannot be "
		    "checked: it is not signed with this run's credentials");
		return (-1);
	}
	if (!req->sigv4) {
		egress_req_call(req);
		return (0);
	}
	if (needbody && req->body) {
		/* The hash the CLI signed is its body's: read it first. */
		if (req->h.chunked || req->left > EGRESS_SIGBODY_MAX) {
			req_refuse(req, 413, "a SigV4 request's body must "
			    "have a length of at most 8 MiB, or an "
			    "X-Amz-Content-Sha256 header");
			return (-1);
		}
		req->ec->state = EC_BODYHASH;
		bufferevent_setwatermark(req->ec->bev, EV_READ, 0,
		    req->left + 1);
		req_bodyhash(req);
		return (0);
	}
	if (needbody) {
		crypto_hash_sha256(h, (const unsigned char *)"", 0);
		if ((req->bodyhash = malloc(65)) == NULL)
			fatal("%s: malloc", __func__);
		sodium_bin2hex(req->bodyhash, 65, h, sizeof(h));
	}
	if (egress_aws_check(req) == -1) {
		req_refuse(req, 403, "the request's AWS signature does not "
		    "verify with this run's credentials");
		return (-1);
	}
	egress_req_call(req);
	return (0);
}

/* A SigV4 request's body, whole in the buffer: hashed, then checked. */
static void
req_bodyhash(struct egress_req *req)
{
	struct evbuffer		*in = bufferevent_get_input(req->ec->bev);
	unsigned char		 h[crypto_hash_sha256_BYTES];
	struct egress_conn	*ec = req->ec;

	if (evbuffer_get_length(in) < req->left)
		return;
	crypto_hash_sha256(h, evbuffer_pullup(in, req->left), req->left);
	if ((req->bodyhash = malloc(65)) == NULL)
		fatal("%s: malloc", __func__);
	sodium_bin2hex(req->bodyhash, 65, h, sizeof(h));
	bufferevent_setwatermark(ec->bev, EV_READ, 0, EGRESS_UP_HIGH);
	if (egress_aws_check(req) == -1) {
		req_refuse(req, 403, "the request's AWS signature does not "
		    "verify with this run's credentials");
		ec->req = NULL;
		egress_req_free(req);
		return;
	}
	egress_req_call(req);
}

/* Headers that do not go upstream: hop-by-hop, the proxy's, ours. */
static int
hdr_dropped(const struct egress_req *req, const struct http_hdr *h)
{
	static const char *const drop[] = { "Connection", "Keep-Alive",
	    "Proxy-Authorization", "Proxy-Connection", "Proxy-Authenticate",
	    "TE", "Trailer", "Upgrade", "Accept-Encoding", "Expect", "Host",
	    NULL };
	const struct http_hdr	*c;
	char			*name;
	size_t			 i;
	int			 named = 0;

	for (i = 0; drop[i] != NULL; i++)
		if (h->name.len == strlen(drop[i]) &&
		    strncasecmp(h->name.p, drop[i], h->name.len) == 0)
			return (1);
	if (req->sigv4 == 1 && h->name.len == 13 &&
	    strncasecmp(h->name.p, "Authorization", 13) == 0)
		return (1);
	/* What the run's Connection header names is hop-by-hop too. */
	for (i = 0; i < req->h.nhdrs; i++) {
		c = &req->h.hdrs[i];
		if (c->name.len != 10 ||
		    strncasecmp(c->name.p, "Connection", 10) != 0)
			continue;
		if ((name = strndup(h->name.p, h->name.len)) == NULL)
			fatal("%s: strndup", __func__);
		named |= http_list_has(c->value.p, c->value.len, name);
		free(name);
	}
	return (named);
}

/* The Host the upstream gets: the run's when it names the same host. */
static void
req_host(struct egress_req *req, struct ebuf *o)
{
	const struct http_hdr	*hh = egress_req_hdr(req, "Host");
	size_t			 hl = strlen(req->host);
	char			 port[16];

	ebuf_add(o, "Host: ", 6);
	if (hh != NULL && hh->value.len >= hl &&
	    strncasecmp(hh->value.p, req->host, hl) == 0 &&
	    (hh->value.len == hl || hh->value.p[hl] == ':')) {
		ebuf_add(o, hh->value.p, hh->value.len);
	} else {
		ebuf_add(o, req->host, hl);
		if (req->port != (req->https ? 443 : 80)) {
			snprintf(port, sizeof(port), ":%u", req->port);
			ebuf_add(o, port, strlen(port));
		}
	}
	ebuf_add(o, "\r\n", 2);
}

/*
 * The upstream's request head, the run's placeholders swapped (it holds
 * real values: req->out, zeroed at the end).  -1: it cannot be signed.
 */
static int
req_build(struct egress_req *req)
{
	struct ebuf		 t = { NULL, 0, 0 }, hb = { NULL, 0, 0 };
	struct ebuf		*o = &req->out;
	struct sigv4_hdr	 sh[HTTP_NHEADERS_MAX + 1];
	const struct http_hdr	*h;
	const struct egrant	*gr = req->gr;
	char			*tgt, *v;
	size_t			 i, n = 0, tlen, vlen;
	int			 cnt, rv = 0;

	ebuf_add(&t, req->h.path.p, req->h.path.len);
	if (req->h.query.len > 0) {
		ebuf_add(&t, "?", 1);
		ebuf_add(&t, req->h.query.p, req->h.query.len);
	}
	tgt = egress_subst_target(gr->pairs, gr->nvals, t.p, t.len, &tlen,
	    &cnt);
	freezero(t.p, t.cap);
	req_host(req, &hb);
	for (i = 0; i < req->h.nhdrs; i++) {
		h = &req->h.hdrs[i];
		if (hdr_dropped(req, h))
			continue;
		if ((sh[n].name = strndup(h->name.p, h->name.len)) == NULL)
			fatal("%s: strndup", __func__);
		v = egress_hdr_dup(h);
		sh[n].value = egress_subst_header(gr->pairs, gr->nvals,
		    sh[n].name, v, h->value.len, &vlen, &cnt);
		free(v);
		ebuf_add(&hb, h->name.p, h->name.len);
		ebuf_add(&hb, ": ", 2);
		ebuf_add(&hb, sh[n].value, vlen);
		ebuf_add(&hb, "\r\n", 2);
		n++;
	}
	if (req->sigv4) {
		/* The Host header is signed as the CLI sent it. */
		h = egress_req_hdr(req, "Host");
		sh[n].name = strdup("Host");
		sh[n].value = h != NULL ? egress_hdr_dup(h) : strdup(req->host);
		if (sh[n].name == NULL || sh[n].value == NULL)
			fatal("%s: strdup", __func__);
		n++;
		rv = egress_aws_resign(req, tgt, sh, n, &hb);
	}
	ebuf_add(o, req->head, strcspn(req->head, " "));
	ebuf_add(o, " ", 1);
	ebuf_add(o, tgt, tlen);
	ebuf_add(o, " HTTP/1.1\r\n", 11);
	ebuf_add(o, hb.p, hb.len);
	ebuf_add(o, "Accept-Encoding: identity\r\n\r\n", 29);
	for (i = 0; i < n; i++) {
		free((char *)sh[i].name);
		freezero((char *)sh[i].value, strlen(sh[i].value));
	}
	freezero(hb.p, hb.cap);
	freezero(tgt, tlen + 1);
	return (rv);
}

/*
 * The relay's call for a recorded request of the run (or a passthrough
 * connection): its record, the run's org, user and pool, the grant's
 * SSRF rule; the caller sets its method.
 */
struct rcall *
egress_rcall(const struct egress_req *req, const char *url,
    const struct rsink *sink, void *arg)
{
	struct rcall	*rc;

	if ((rc = calloc(1, sizeof(*rc))) == NULL ||
	    (rc->url = strdup(url)) == NULL)
		fatal("%s: calloc", __func__);
	rc->reqid = req->reqid;
	rc->callid = req->callid;
	rc->worker = req->worker;
	rc->allow_private = req->gr->g.allow_private != 0;
	rc->org_id = req->gr->g.org_id;
	rc->user_id = req->gr->g.user_id;
	rc->sink = sink;
	rc->sink_arg = arg;
	rc->runid = req->runid;
	return (rc);
}

/* The vault recorded it: swapped, then to the upstream. */
void
egress_req_go(struct egress_req *req)
{
	struct egress_conn	*ec = req->ec;
	struct egrant		*gr = req->gr;
	struct rcall		*rc;
	struct call_done	 cd;
	char			 url[HOST_LEN_MAX + 32];

	if (gr->rset == NULL || req_build(req) == -1) {
		memset(&cd, 0, sizeof(cd));
		cd.callid = req->callid;
		cd.status = gr->rset == NULL ? 503 : 403;
		cd.refused = CALL_UPSTREAM;
		relay_vault_done(req->worker, &cd);
		egress_answer(ec, cd.status, gr->rset == NULL ? "the answer "
		    "cannot be masked: the relay is out of memory" : "the "
		    "request cannot be signed again", 1);
		ec->req = NULL;
		egress_req_free(req);
		return;
	}
	if (req->h.expect_continue && req->h.minor >= 1)
		evbuffer_add_printf(bufferevent_get_output(ec->bev),
		    "HTTP/1.1 100 Continue\r\n\r\n");
	snprintf(url, sizeof(url), "%s://%s:%u/", req->https ? "https" :
	    "http", req->host, req->port);
	rc = egress_rcall(req, url, &egress_sink, req);
	if ((rc->method = strndup(req->head, strcspn(req->head, " "))) ==
	    NULL)
		fatal("%s: strndup", __func__);
	rc->total_s = gr->g.timeout_s;
	rc->rset = rcache_hold(gr->rset);
	rc->set = rcache_set(rc->rset);
	/* A body read from the run cannot be sent twice. */
	rc->retried = req->body;
	req->rc = rc;
	ec->state = EC_UPSTREAM;
	relay_call(rc);
}

/* ------------------------------------------------------------------ */
/* The body, from the run to the upstream.                             */

/* Chunked: the framing as sent, read to know where the body ends. */
static int
pump_chunked(struct egress_req *req, struct evbuffer *in,
    struct evbuffer *out)
{
	struct evbuffer_ptr	 p;
	char			 line[EQ_LINE_MAX + 1], *end;
	size_t			 eol, n;

	if (req->chunk == RC_DATA) {
		n = evbuffer_get_length(in);
		if (n > req->left)
			n = req->left;
		if (n == 0)
			return (0);
		evbuffer_remove_buffer(in, out, n);
		if ((req->left -= n) == 0)
			req->chunk = RC_CRLF;
		return (1);
	}
	p = evbuffer_search_eol(in, NULL, &eol, EVBUFFER_EOL_CRLF);
	if (p.pos == -1)
		return (evbuffer_get_length(in) > EQ_LINE_MAX ? -1 : 0);
	n = p.pos + eol;
	if ((size_t)p.pos > EQ_LINE_MAX)
		return (-1);
	evbuffer_copyout(in, line, p.pos);
	line[p.pos] = '\0';
	evbuffer_remove_buffer(in, out, n);
	switch (req->chunk) {
	case RC_CRLF:
		if (p.pos != 0)
			return (-1);
		req->chunk = RC_SIZE;
		break;
	case RC_SIZE:
		if (strspn(line, "0123456789abcdefABCDEF") == 0 ||
		    strspn(line, "0123456789abcdefABCDEF") > 15)
			return (-1);
		req->left = strtoull(line, &end, 16);
		if (*end != '\0' && *end != ';' && *end != ' ' &&
		    *end != '\t')
			return (-1);
		req->chunk = req->left > 0 ? RC_DATA : RC_TRAILER;
		break;
	case RC_TRAILER:
		if (p.pos == 0)
			req->body_done = 1;
		break;
	}
	return (1);
}

/*
 * What the run sent of the body, to the upstream, while it takes it;
 * reading the run stops while EGRESS_UP_HIGH waits for the upstream.
 */
void
egress_req_pump(struct egress_req *req)
{
	struct egress_conn	*ec;
	struct evbuffer		*in, *out;
	size_t			 n;
	int			 r;

	if (req == NULL || (ec = req->ec) == NULL)
		return;
	if (ec->state == EC_BODYHASH) {
		req_bodyhash(req);
		return;
	}
	if (ec->state != EC_UPSTREAM || req->rc == NULL)
		return;
	if (!req->body || req->body_done) {
		bufferevent_disable(ec->bev, EV_READ);
		return;
	}
	/* Connecting, or a TLS handshake: the bytes wait for the head. */
	if (!req->head_out || (out = rhttp_output(req->rc)) == NULL)
		return;
	in = bufferevent_get_input(ec->bev);
	while (!req->body_done && evbuffer_get_length(out) < EGRESS_UP_HIGH) {
		if (req->h.chunked)
			r = pump_chunked(req, in, out);
		else {
			n = evbuffer_get_length(in);
			if (n > req->left)
				n = req->left;
			r = n > 0;
			if (n > 0) {
				evbuffer_remove_buffer(in, out, n);
				if ((req->left -= n) == 0)
					req->body_done = 1;
			}
		}
		if (r == 0)
			break;
		if (r == -1) {
			/* The upstream got a cut request: no answer for it. */
			egress_conn_free(ec);
			return;
		}
	}
	if (req->body_done || evbuffer_get_length(out) >= EGRESS_UP_HIGH)
		bufferevent_disable(ec->bev, EV_READ);
	else
		bufferevent_enable(ec->bev, EV_READ);
}

/* The run's connection went: the request ends where it is. */
void
egress_req_abort(struct egress_req *req)
{
	req->ec = NULL;
	if (req->waiting)
		return;		/* its verdict frees it */
	if (req->rc != NULL) {
		relay_cancel(req->rc);	/* sk_end frees it */
		return;
	}
	egress_req_free(req);
}

/* ------------------------------------------------------------------ */
/* The sink: the relay's client and reader write to the run.           */

static void
eq_zero(const void *data, size_t len, void *arg)
{
	freezero((void *)data, len);
}

/* Connected: the head (a copy, zeroed once sent), then the body. */
static void
sk_request(struct rcall *rc, struct evbuffer *out)
{
	struct egress_req	*req = rc->sink_arg;
	char			*buf;

	if ((buf = malloc(req->out.len)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(buf, req->out.p, req->out.len);
	if (evbuffer_add_reference(out, buf, req->out.len, eq_zero, NULL) ==
	    -1)
		fatal("%s: evbuffer_add_reference", __func__);
	req->head_out = 1;
	egress_req_pump(req);
}

static void
sk_written(struct rcall *rc)
{
	egress_req_pump(rc->sink_arg);
}

/* The upstream's head (filtered, masked), framed for the run. */
static void
sk_head(struct rcall *rc, int status, const char *data, size_t len)
{
	struct egress_req	*req = rc->sink_arg;
	struct evbuffer		*o;

	if (req->ec == NULL)
		return;
	o = bufferevent_get_output(req->ec->bev);
	evbuffer_add_printf(o, "HTTP/1.1 %d %s\r\n", status,
	    http_reason(status));
	evbuffer_add(o, data, len);
	if (rc->mode != RB_NONE && !req->headonly) {
		if (req->h.minor >= 1) {
			evbuffer_add_printf(o,
			    "Transfer-Encoding: chunked\r\n");
			req->chunked_out = 1;
		} else
			req->close = 1;	/* HTTP/1.0: to the close */
	}
	if (req->close || req->h.minor == 0)
		evbuffer_add_printf(o, "Connection: %s\r\n", req->close ?
		    "close" : "keep-alive");
	evbuffer_add(o, "\r\n", 2);
}

static void
sk_body(struct rcall *rc, const void *p, size_t len)
{
	struct egress_req	*req = rc->sink_arg;
	struct evbuffer		*o;

	if (req->ec == NULL || len == 0)
		return;
	o = bufferevent_get_output(req->ec->bev);
	if (req->chunked_out)
		evbuffer_add_printf(o, "%zx\r\n", len);
	evbuffer_add(o, p, len);
	if (req->chunked_out)
		evbuffer_add(o, "\r\n", 2);
}

/* The answer ended (failed: cut, the run sees it so); req goes. */
static void
sk_end(struct rcall *rc, int failed)
{
	struct egress_req	*req = rc->sink_arg;
	struct egress_conn	*ec = req->ec;

	req->rc = NULL;
	if (ec == NULL) {
		egress_req_free(req);
		return;
	}
	if (!failed && req->chunked_out)
		evbuffer_add(bufferevent_get_output(ec->bev), "0\r\n\r\n", 5);
	ec->req = NULL;
	if (failed || req->close || (req->body && !req->body_done)) {
		egress_req_free(req);
		egress_conn_close(ec);
		return;
	}
	egress_req_free(req);
	egress_conn_next(ec);
}

static void
sk_refuse(struct rcall *rc, int status, const char *detail)
{
	struct egress_req	*req = rc->sink_arg;

	if (req->ec != NULL)
		egress_answer(req->ec, status, detail,
		    req->body && !req->body_done);
}

static int
sk_backlog(struct rcall *rc)
{
	struct egress_req	*req = rc->sink_arg;
	struct bufferevent	*under;
	size_t			 n;

	if (req->ec == NULL)
		return (0);
	n = evbuffer_get_length(bufferevent_get_output(req->ec->bev));
	/* Under TLS after CONNECT, what the layer below still holds. */
	if ((under = bufferevent_get_underlying(req->ec->bev)) != NULL)
		n += evbuffer_get_length(bufferevent_get_output(under));
	return (n > EGRESS_OUT_HIGH);
}
