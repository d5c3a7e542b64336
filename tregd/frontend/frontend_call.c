/*
 * frontend_call.c: the frontend's side of the relay (/call/...).
 *
 * A call goes to the vault as the client sent it, minus the headers that
 * are never relayed (every X-Treg-*, hop-by-hop, X-Forwarded-*,
 * Forwarded, Via, the tunnel's ngrok-skip-browser-warning that treg's
 * client sends, and those the relay sets itself: Host, Content-Length,
 * Expect) and the cookies of tregd's own (treg_*, as treg strips them:
 * a browser session must not reach a vendor).  The vault refuses it
 * (IMSG_CALL_REFUSED) or hands it, with the key, to the relay; the relay
 * answers here directly:
 * the upstream's status and headers, the body in pieces, an end with the
 * count of what was masked (sent as the trailer X-Treg-Redacted).  The
 * frontend never sees a secret: the relay redacted what comes back.
 *
 * Back-pressure: past `http buffer' of answer waiting for the client the
 * relay is told to stop reading the upstream, and to go on once the
 * client caught up.  A client that leaves cancels the call.
 */

#include <sys/types.h>
#include <sys/tree.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "proc.h"
#include "tregd.h"
#include "frontend.h"
#include "util.h"

#define CALL_PREFIX		"/call/"
#define CALL_HEAD_MAX		(256 * 1024)	/* relay: header lines */

struct fcall {
	RB_ENTRY(fcall)		 by_id;
	RB_ENTRY(fcall)		 by_ptr;
	uint32_t		 id;
	struct http_conn	*conn;		/* NULL: gone or answered */
	int			 started;	/* the relayed head was sent */
	int			 paused;
	int			 recancel;	/* tell the relay again */
	int			 worker;	/* the vault worker asked */
	int			 at_vault;	/* counted in its load */
};
RB_HEAD(fcall_ids, fcall);
RB_HEAD(fcall_ptrs, fcall);

static int	fcall_id_cmp(struct fcall *, struct fcall *);
static int	fcall_ptr_cmp(struct fcall *, struct fcall *);
RB_PROTOTYPE_STATIC(fcall_ids, fcall, by_id, fcall_id_cmp);
RB_GENERATE_STATIC(fcall_ids, fcall, by_id, fcall_id_cmp);
RB_PROTOTYPE_STATIC(fcall_ptrs, fcall, by_ptr, fcall_ptr_cmp);
RB_GENERATE_STATIC(fcall_ptrs, fcall, by_ptr, fcall_ptr_cmp);

static struct fcall_ids		 fcalls = RB_INITIALIZER(&fcalls);
static struct fcall_ptrs	 fcall_ptrs = RB_INITIALIZER(&fcall_ptrs);
static struct blob_list		 call_blobs =
				    TAILQ_HEAD_INITIALIZER(call_blobs);
static const struct tregd_conf	*fc_conf;
static struct imsgev		*fc_relay;

static int	 header_relayed(const char *, size_t, const char *, size_t);
static size_t	 call_headers(struct http_conn *, char *, size_t);
static size_t	 cookie_line(const char *, size_t, char *, size_t);
static const char *list_next(const char **, const char *, int, size_t *);
static void	 fcall_free(struct fcall *);
static struct fcall *fcall_find(uint32_t, const char *);
static void	 fcall_to_relay(struct fcall *, int);
static void	 fcall_head(struct blob *);
static void	 fcall_body(struct imsg *);
static void	 fcall_end(struct imsg *);
static void	 fcall_drain(struct http_conn *, void *);

static int
fcall_id_cmp(struct fcall *a, struct fcall *b)
{
	return (a->id < b->id ? -1 : a->id > b->id);
}

static int
fcall_ptr_cmp(struct fcall *a, struct fcall *b)
{
	return ((uintptr_t)a < (uintptr_t)b ? -1 : (uintptr_t)a > (uintptr_t)b);
}

void
front_call_init(const struct tregd_conf *conf, struct imsgev *relay)
{
	fc_conf = conf;
	fc_relay = relay;
}

/* The vault worker is done with the call (refused, or at the relay). */
static void
fcall_vault_done(struct fcall *fc)
{
	if (!fc->at_vault)
		return;
	fc->at_vault = 0;
	front_vault_give(fc->worker);
}

int
front_call_path(const char *path)
{
	return (strncmp(path, CALL_PREFIX, strlen(CALL_PREFIX)) == 0);
}

static int
name_eq(const char *p, size_t len, const char *name)
{
	return (strlen(name) == len && strncasecmp(p, name, len) == 0);
}

/* Whether the client's header name is relayed (conn: its Connection). */
static int
header_relayed(const char *name, size_t len, const char *conn, size_t clen)
{
	static const char *const never[] = {
		"Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Proxy-Connection", "TE", "Trailer",
		"Transfer-Encoding", "Upgrade", "Forwarded", "Via", "Host",
		"Content-Length", "Expect", "ngrok-skip-browser-warning", NULL
	};
	const char	*s, *e = conn + clen, *c;
	size_t		 i, n;

	if (len >= 7 && strncasecmp(name, "X-Treg-", 7) == 0)
		return (0);
	if (len >= 12 && strncasecmp(name, "X-Forwarded-", 12) == 0)
		return (0);
	for (i = 0; never[i] != NULL; i++)
		if (name_eq(name, len, never[i]))
			return (0);
	/* Headers the client's Connection names are hop-by-hop too. */
	for (c = conn; conn != NULL &&
	    (s = list_next(&c, e, ',', &n)) != NULL; )
		if (n == len && strncasecmp(s, name, n) == 0)
			return (0);
	return (1);
}

/* The client's header lines that are relayed, CRLF each, into out. */
static size_t
call_headers(struct http_conn *conn, char *out, size_t size)
{
	const char	*head, *p, *e, *nl, *colon, *cv = NULL;
	size_t		 len, n = 0, cvlen = 0, ll;
	int		 pass;

	if ((head = http_head_raw(conn, &len)) == NULL)
		return (0);
	e = head + len;
	for (pass = 0; pass < 2; pass++) {
		/* Skip the request line. */
		if ((p = memchr(head, '\n', len)) == NULL)
			return (0);
		for (p++; p < e; p = nl + 1) {
			if ((nl = memchr(p, '\n', e - p)) == NULL)
				nl = e;
			ll = nl - p;
			if (ll > 0 && p[ll - 1] == '\r')
				ll--;
			if (ll == 0 || (colon = memchr(p, ':', ll)) == NULL)
				continue;
			if (pass == 0) {
				if (name_eq(p, colon - p, "Connection")) {
					cv = colon + 1;
					cvlen = p + ll - cv;
				}
				continue;
			}
			if (!header_relayed(p, colon - p, cv, cvlen) ||
			    n + ll + 2 > size)
				continue;
			if (name_eq(p, colon - p, "Cookie")) {
				n += cookie_line(colon + 1, p + ll - colon - 1,
				    out + n, size - n);
				continue;
			}
			memcpy(out + n, p, ll);
			memcpy(out + n + ll, "\r\n", 2);
			n += ll + 2;
		}
	}
	return (n);
}

/*
 * The next item of the list at *p (up to e, items split at sep), blanks
 * around it left out: its start, its length in *len, *p past it; NULL
 * at the end of the list.
 */
static const char *
list_next(const char **p, const char *e, int sep, size_t *len)
{
	const char	*s = *p, *c;

	if (s >= e)
		return (NULL);
	if ((c = memchr(s, sep, e - s)) == NULL)
		c = e;
	*p = c < e ? c + 1 : e;
	while (s < c && (*s == ' ' || *s == '\t'))
		s++;
	for (*len = c - s; *len > 0 && (s[*len - 1] == ' ' ||
	    s[*len - 1] == '\t'); (*len)--)
		;
	return (s);
}

/*
 * A Cookie line without tregd's own cookies (treg_*), CRLF, into out of
 * size bytes: its length, 0 when none is left (or it does not fit).
 */
static size_t
cookie_line(const char *v, size_t vlen, char *out, size_t size)
{
	const char	*e = v + vlen, *c = v;
	size_t		 n = 0, pl;

	while ((v = list_next(&c, e, ';', &pl)) != NULL) {
		if (pl == 0 || (pl >= 5 && strncasecmp(v, "treg_", 5) == 0))
			continue;
		/* "Cookie: " or "; ", the pair, and room for the CRLF. */
		if (8 + n + pl + 2 > size)
			return (0);
		if (n == 0) {
			memcpy(out, "Cookie: ", 8);
			n = 8;
		} else {
			memcpy(out + n, "; ", 2);
			n += 2;
		}
		memcpy(out + n, v, pl);
		n += pl;
	}
	if (n == 0)
		return (0);
	memcpy(out + n, "\r\n", 2);
	return (n + 2);
}

void
front_call(struct http_conn *conn, const struct http_head *h,
    const char *body, size_t bodylen, uint32_t id)
{
	static const struct { int bit; const char *name; } mn[] = {
		{ HTTP_M_GET, "GET" }, { HTTP_M_POST, "POST" },
		{ HTTP_M_HEAD, "HEAD" }, { HTTP_M_PUT, "PUT" },
		{ HTTP_M_DELETE, "DELETE" }, { HTTP_M_OPTIONS, "OPTIONS" },
		{ HTTP_M_PATCH, "PATCH" },
	};
	struct call_request	 cr;
	struct fcall		*fc;
	char			*payload;
	size_t			 tlen, hlen, i, off;

	http_set_log(conn, "/call", 0, 0);
	memset(&cr, 0, sizeof(cr));
	for (i = 0; i < sizeof(mn) / sizeof(mn[0]); i++)
		if (mn[i].bit == h->method)
			strlcpy(cr.method, mn[i].name, sizeof(cr.method));
	if (cr.method[0] == '\0') {
		http_add_header(conn, "X-Treg-Error: 1\r\n", 17);
		http_error(conn, 405, "method not allowed");
		return;
	}
	if (http_org_copy(h, cr.org, sizeof(cr.org)) == -1) {
		http_add_header(conn, "X-Treg-Error: 1\r\n", 17);
		http_error(conn, 400, "X-Treg-Org must name an org by its "
		    "slug or id");
		return;
	}
	if (h->token.p != NULL) {
		cr.has_token = 1;
		token_hash(h->token.p, h->token.len, cr.token_hash);
	}
	strlcpy(cr.peer, http_peer(conn), sizeof(cr.peer));
	http_client_copy(h, cr.client, sizeof(cr.client));

	tlen = h->path.len - strlen(CALL_PREFIX);
	if (h->query.len > 0)
		tlen += 1 + h->query.len;
	if ((payload = malloc(tlen + HTTP_HEADERS_MAX + bodylen + 1)) ==
	    NULL)
		fatal("%s: malloc", __func__);
	off = h->path.len - strlen(CALL_PREFIX);
	memcpy(payload, h->path.p + strlen(CALL_PREFIX), off);
	if (h->query.len > 0) {
		payload[off++] = '?';
		memcpy(payload + off, h->query.p, h->query.len);
	}
	hlen = call_headers(conn, payload + tlen, HTTP_HEADERS_MAX);
	if (bodylen > 0)
		memcpy(payload + tlen + hlen, body, bodylen);
	cr.targetlen = tlen;
	cr.headerslen = hlen;
	cr.bodylen = bodylen;

	if ((fc = calloc(1, sizeof(*fc))) == NULL)
		fatal("%s: calloc", __func__);
	fc->id = id;
	fc->conn = conn;
	RB_INSERT(fcall_ids, &fcalls, fc);
	RB_INSERT(fcall_ptrs, &fcall_ptrs, fc);
	http_attach(conn, fc, fcall_drain);
	fc->at_vault = 1;
	if (imsgev_send_blob(front_vault_take(&fc->worker), IMSG_CALL_REQUEST,
	    fc->id, &cr, sizeof(cr), payload, tlen + hlen + bodylen) == -1)
		fatal("%s: send to vault", __func__);
	/* Headers and body may hold the client's own credentials. */
	freezero(payload, tlen + hlen + bodylen);
	explicit_bzero(&cr, sizeof(cr));
}

/*
 * The client went away: -1 when arg is not a call, else 1 (let go).  A
 * half-closed client still gets its answer.
 */
int
front_call_gone(void *arg, int eof)
{
	struct fcall	*fc;

	if ((fc = RB_FIND(fcall_ptrs, &fcall_ptrs, arg)) == NULL)
		return (-1);
	if (eof)
		return (0);
	fc->conn = NULL;
	fc->recancel = 1;
	fcall_to_relay(fc, IMSG_CALL_CANCEL);
	return (1);
}

static void
fcall_free(struct fcall *fc)
{
	fcall_vault_done(fc);
	RB_REMOVE(fcall_ids, &fcalls, fc);
	RB_REMOVE(fcall_ptrs, &fcall_ptrs, fc);
	free(fc);
}

static struct fcall *
fcall_find(uint32_t id, const char *what)
{
	struct fcall	 key, *fc;

	key.id = id;
	if ((fc = RB_FIND(fcall_ids, &fcalls, &key)) == NULL)
		fatalx("%s for no call", what);
	return (fc);
}

static void
fcall_to_relay(struct fcall *fc, int type)
{
	if (imsgev_compose(fc_relay, type, fc->id, -1, NULL, 0) == -1)
		fatal("%s: compose", __func__);
}

/* The vault refused the call: its JSON detail, with X-Treg-Error. */
void
front_call_refused(struct blob *b, int w)
{
	struct api_response	 ar;
	struct fcall		*fc;

	memcpy(&ar, b->head, sizeof(ar));
	fc = fcall_find(b->id, "IMSG_CALL_REFUSED from vault");
	if (ar.status < 400 || ar.status > 599 || fc->worker != w ||
	    !fc->at_vault)
		fatalx("bad IMSG_CALL_REFUSED from vault");
	if (fc->conn != NULL) {
		if (ar.org_id != 0 || ar.user_id != 0)
			http_set_log(fc->conn, NULL, ar.org_id, ar.user_id);
		http_add_header(fc->conn, "X-Treg-Error: 1\r\n", 17);
		http_reply(fc->conn, ar.status, "application/json", b->data,
		    b->datalen);
	}
	fcall_free(fc);
	blob_free(b);
}

void
front_call_imsg_head(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;

	b = blob_start(&call_blobs, imsg, PROC_RELAY, sizeof(struct call_head),
	    CALL_HEAD_MAX);
	if (b == NULL)
		fatalx("bad IMSG_CALL_HEAD from relay");
	if (b->datalen == 0)
		fcall_head(b);
}

void
front_call_imsg_head_data(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;
	int		 bad;

	b = blob_add(&call_blobs, imsg, PROC_RELAY, &bad);
	if (bad)
		fatalx("bad IMSG_DATA from relay");
	if (b != NULL)
		fcall_head(b);
}

void
front_call_imsg_body(struct imsgev *iev, struct imsg *imsg)
{
	fcall_body(imsg);
}

void
front_call_imsg_end(struct imsgev *iev, struct imsg *imsg)
{
	fcall_end(imsg);
}

static void
fcall_head(struct blob *b)
{
	static const char	 ours[] = "Content-Security-Policy: sandbox\r\n"
				    "Trailer: X-Treg-Redacted\r\n";
	struct call_head	 ch;
	struct fcall		*fc;

	memcpy(&ch, b->head, sizeof(ch));
	fc = fcall_find(b->id, "IMSG_CALL_HEAD from relay");
	if (ch.status < 100 || ch.status > 599 || fc->started)
		fatalx("bad IMSG_CALL_HEAD from relay");
	fcall_vault_done(fc);
	if (fc->conn != NULL && (ch.org_id != 0 || ch.user_id != 0))
		http_set_log(fc->conn, NULL, ch.org_id, ch.user_id);
	if (fc->conn == NULL) {
		if (fc->recancel) {
			fcall_to_relay(fc, IMSG_CALL_CANCEL);
			fc->recancel = 0;
		}
	} else if (ch.refused) {
		http_add_header(fc->conn, "X-Treg-Error: 1\r\n", 17);
		http_reply(fc->conn, ch.status, "application/json", b->data,
		    b->datalen);
		fc->conn = NULL;
	} else {
		fc->started = 1;
		http_add_header(fc->conn, b->data, b->datalen);
		http_add_header(fc->conn, ours, sizeof(ours) - 1);
		http_reply_relayed(fc->conn, ch.status);
	}
	blob_free(b);
}

static void
fcall_body(struct imsg *imsg)
{
	struct fcall	*fc;

	fc = fcall_find(imsg->hdr.id, "IMSG_CALL_BODY from relay");
	if (fc->conn == NULL)
		return;
	if (!fc->started)
		fatalx("IMSG_CALL_BODY before its head from relay");
	http_write(fc->conn, imsg->data, imsg->datalen);
	if (!fc->paused &&
	    http_pending(fc->conn) > (size_t)fc_conf->http_buffer) {
		fc->paused = 1;
		fcall_to_relay(fc, IMSG_CALL_PAUSE);
	}
}

static void
fcall_end(struct imsg *imsg)
{
	struct call_end	 ce;
	struct fcall	*fc;
	char		 trailer[64];

	if (imsg->datalen != sizeof(ce))
		fatalx("bad IMSG_CALL_END from relay");
	memcpy(&ce, imsg->data, sizeof(ce));
	fc = fcall_find(imsg->hdr.id, "IMSG_CALL_END from relay");
	/* The relay told the vault how it ended before it told us. */
	front_end_answered(fc->worker);
	if (fc->conn != NULL) {
		if (!fc->started)
			http_error(fc->conn, 502, "the relay gave no answer");
		else if (ce.failed)
			http_abort(fc->conn);	/* no last chunk: cut short */
		else {
			snprintf(trailer, sizeof(trailer),
			    "X-Treg-Redacted: %u\r\n", ce.redacted);
			http_reply_end_trailer(fc->conn, trailer);
		}
	}
	fcall_free(fc);
}

/* The client read what was queued: the relay may read the upstream again. */
static void
fcall_drain(struct http_conn *conn, void *arg)
{
	struct fcall	*fc = arg;

	if (fc->paused &&
	    http_pending(conn) <= (size_t)fc_conf->http_buffer / 2) {
		fc->paused = 0;
		fcall_to_relay(fc, IMSG_CALL_RESUME);
	}
}

/* tregd -T routes: the relay's, as the OpenAPI document names them. */
void
front_call_print_routes(FILE *fp)
{
	static const char *const m[] = {
		"GET", "POST", "PUT", "PATCH", "DELETE", NULL
	};
	size_t	 i;

	for (i = 0; m[i] != NULL; i++)
		fprintf(fp, "%s %s*/*\n", m[i], CALL_PREFIX);
}
