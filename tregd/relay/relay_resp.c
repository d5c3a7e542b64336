/*
 * relay_resp.c: reading an upstream's HTTP/1.1 answer as it arrives.
 * The head (status line and header lines, at most RELAY_HEAD_MAX bytes;
 * 1xx heads skipped, a 101 refused) is filtered, redacted and sent on;
 * the body is framed by Transfer-Encoding: chunked, Content-Length or
 * the end of the connection, and none after HEAD, 204 and 304.  Body bytes go
 * through the call's redactor to the frontend as they come, decoded
 * first when the upstream encoded them anyway (relay_decode.c; an answer
 * in a coding tregd cannot read is refused); a paused call (a slow
 * client) reads nothing more until resumed, and a call whose turn is
 * spent (RELAY_TURN decoded bytes, or the frontend behind) goes on at
 * the next one.  Trailers are read (bounded) and not relayed.
 */

#include <sys/types.h>

#include <event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_parse.h"
#include "redact.h"
#include "relay.h"

#define RR_CHUNK_LINE_MAX	1024	/* a chunk's size line */

static int	 rr_head(struct rcall *, struct evbuffer *);
static int	 rr_head_done(struct rcall *);
static int	 rr_header_ok(const char *, size_t);
static int	 rr_framing(struct rcall *, int, int);
static size_t	 rr_value(const char *, const char *, const char **);
static void	 rr_mode(struct rcall *, int, int, long long);
static int	 rr_head_kept(const char *, size_t);
static void	 rr_head_send(struct rcall *, int);
static int	 rr_body(struct rcall *, struct evbuffer *);
static int	 rr_chunked(struct rcall *, struct evbuffer *);
static int	 rr_data(struct rcall *, struct evbuffer *, int);
static int	 rr_decode(struct rcall *, struct evbuffer *, size_t, int);
static int	 rr_consumed(struct rcall *, size_t, int);
static int	 rr_codings(struct rcall *, int);
static void	 rr_stall(struct rcall *, int);
static void	 rr_stalled(int, short, void *);
static void	 rr_plain(void *, const void *, size_t);
static int	 rr_line(struct rcall *, struct evbuffer *, size_t, size_t *);
static void	 rr_out(void *, const void *, size_t);
static void	 rr_line_out(void *, const void *, size_t);
static int	 rr_complete(struct rcall *);

/*
 * What came: as much as can be read this turn.  rc may be gone after it.
 * After the upstream's close, an answer that waits for bytes was cut.
 */
void
rresp_input(struct rcall *rc)
{
	struct evbuffer	*in = rhttp_input(rc);
	int		 r;

	if (rc->stalled)
		return;
	rc->budget = RELAY_TURN;
	do {
		if (rc->paused)
			return;
		if (rc->head_sent && relay_backlog(rc)) {
			rr_stall(rc, 1);
			return;
		}
		r = rc->head_sent ? rr_body(rc, in) : rr_head(rc, in);
	} while (r > 0);
	if (r == 0 && rc->eof && !rc->stalled && !rc->paused)
		rhttp_fail(rc, 502, "the upstream's answer was cut short");
}

/*
 * The upstream closed: 0 when the answer goes on from what was read
 * before (the end of a close-delimited body, or bytes the call had no
 * turn for yet), -1 when it was cut.
 */
int
rresp_eof(struct rcall *rc)
{
	if (!rc->head_sent || (rc->mode != RB_CLOSE && rc->mode != RB_DRAIN &&
	    evbuffer_get_length(rhttp_input(rc)) == 0 &&
	    (rc->dec == NULL || !rdec_pending(rc->dec))))
		return (-1);
	rc->eof = 1;
	rc->keepalive = 0;
	rresp_input(rc);
	return (0);
}

/* The turn is spent: the call goes on at the next (soon, if behind). */
static void
rr_stall(struct rcall *rc, int behind)
{
	struct timeval	 tv = { 0, behind ? 2000 : 0 };

	rc->stalled = 1;
	evtimer_set(&rc->stall, rr_stalled, rc);
	evtimer_add(&rc->stall, &tv);
}

static void
rr_stalled(int fd, short ev, void *arg)
{
	struct rcall	*rc = arg;

	rc->stalled = 0;
	relay_cork(1);
	rresp_input(rc);
	relay_cork(0);
}

/* What the redactor still holds (masked) goes: the answer ended. */
void
rresp_flush(struct rcall *rc)
{
	if (redact_finish(rc->rd, rr_out, rc) == -1)
		fatal("%s: redact_finish", __func__);
}

/*
 * The answer was read to its end: -1 (rc is gone), or 0 while the
 * decoder still has bytes for the next turns.
 */
static int
rr_complete(struct rcall *rc)
{
	if (rc->dec != NULL) {
		switch (rdec_finish(rc->dec, &rc->budget, rr_plain, rc)) {
		case RDEC_MORE:
			rc->mode = RB_DRAIN;
			rr_stall(rc, 0);
			return (0);
		case RDEC_ERR:
			rhttp_fail(rc, 502, "the upstream's encoded answer "
			    "ends short");
			return (-1);
		}
	}
	rresp_flush(rc);
	rhttp_end(rc, 1);
	relay_finish(rc, 0);
	return (-1);
}

/*
 * A line of at most max bytes, its end included (*len; 0: not complete
 * yet): 0, or -1 when it is too long (the call failed).
 */
static int
rr_line(struct rcall *rc, struct evbuffer *in, size_t max, size_t *len)
{
	struct evbuffer_ptr	 ptr;
	size_t			 eol;

	*len = 0;
	ptr = evbuffer_search_eol(in, NULL, &eol, EVBUFFER_EOL_CRLF);
	if (ptr.pos == -1) {
		if (evbuffer_get_length(in) <= max)
			return (0);
	} else if ((size_t)ptr.pos + eol <= max) {
		*len = ptr.pos + eol;
		return (0);
	}
	rhttp_fail(rc, 502, "the upstream's answer has a line too long");
	return (-1);
}

/* Header lines into rc->head until the empty one. */
static int
rr_head(struct rcall *rc, struct evbuffer *in)
{
	size_t	 n, size;
	char	*p;

	for (;;) {
		if (rr_line(rc, in, RELAY_HEAD_MAX - rc->headseen, &n) == -1)
			return (-1);
		if (n == 0)
			return (0);
		if (rc->headlen + n > rc->headsize) {
			size = rc->headsize ? rc->headsize * 2 : 1024;
			while (size < rc->headlen + n)
				size *= 2;
			/* Unredacted (an echoed key): the old block zeroed. */
			if ((p = recallocarray(rc->head, rc->headsize, size,
			    1)) == NULL)
				fatal("%s: recallocarray", __func__);
			rc->head = p;
			rc->headsize = size;
		}
		if (evbuffer_remove(in, rc->head + rc->headlen, n) != (int)n)
			fatalx("%s: evbuffer_remove", __func__);
		rc->headseen += n;
		p = rc->head + rc->headlen;
		if (p[0] == '\n' || (p[0] == '\r' && n == 2)) {
			if (rc->headlen == 0)
				continue;	/* before the status line */
			rc->headlen += n;
			return (rr_head_done(rc));
		}
		if (rc->headlen > 0 && !rr_header_ok(p, n)) {
			rhttp_fail(rc, 502, "the upstream's answer has a "
			    "malformed header line");
			return (-1);
		}
		rc->headlen += n;
	}
}

/*
 * A header line of n bytes, its end included, as http_parse.c's
 * parse_header takes a client's: 1*tchar ":" and a value without NUL,
 * CR or another control byte than HTAB.  Anything else (a fold, white
 * space before the colon, an empty name) would reach the client as
 * other lines than the upstream meant, or past the drop list.
 */
static int
rr_header_ok(const char *p, size_t n)
{
	size_t	 i, name;

	n -= (n >= 2 && p[n - 2] == '\r') ? 2 : 1;
	for (name = 0; name < n && http_tchar(p[name]); name++)
		;
	if (name == 0 || name == n || p[name] != ':')
		return (0);
	for (i = name + 1; i < n; i++)
		if (((unsigned char)p[i] < 0x20 && p[i] != '\t') ||
		    p[i] == 0x7f)
			return (0);
	return (1);
}

/* The status line, the body's framing, the head sent on. */
static int
rr_head_done(struct rcall *rc)
{
	const char	*p = rc->head;
	int		 code, minor;

	if (rc->headlen < 12 || strncmp(p, "HTTP/1.", 7) != 0 ||
	    p[7] < '0' || p[7] > '9' || p[8] != ' ' ||
	    p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' ||
	    p[11] < '0' || p[11] > '9' ||
	    (rc->headlen > 12 && p[12] != ' ' && p[12] != '\r' &&
	    p[12] != '\n')) {
		rhttp_fail(rc, 502, "the upstream's answer is not HTTP/1.1");
		return (-1);
	}
	minor = p[7] - '0';
	code = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (code == 101) {
		/* The relay never asks for an upgrade (nor relays one). */
		rhttp_fail(rc, 502, "the upstream switched protocols");
		return (-1);
	}
	if (code < 200) {
		rc->headlen = 0;	/* 100 Continue and its kind */
		return (1);
	}
	if (rr_framing(rc, code, minor) == -1 || rr_codings(rc, code) == -1)
		return (-1);
	rr_head_send(rc, code);
	explicit_bzero(rc->head, rc->headsize);
	rc->headlen = 0;
	if (rc->mode == RB_NONE || (rc->mode == RB_LENGTH && rc->left == 0))
		return (rr_complete(rc));
	return (1);
}

/* A header line's value, without the white space around it: its length. */
static size_t
rr_value(const char *colon, const char *e, const char **v)
{
	size_t	 vn;

	for (colon++; colon < e && (*colon == ' ' || *colon == '\t'); colon++)
		;
	for (vn = e - colon; vn > 0 && (colon[vn - 1] == '\r' ||
	    colon[vn - 1] == ' ' || colon[vn - 1] == '\t'); vn--)
		;
	*v = colon;
	return (vn);
}

/* Content-Length, Transfer-Encoding, Connection: how the body ends. */
static int
rr_framing(struct rcall *rc, int code, int minor)
{
	const char	*p, *e, *end = rc->head + rc->headlen, *v;
	long long	 len = -1, l;
	size_t		 n, vn, i;
	int		 te = 0, close = 0;

	rc->keepalive = minor >= 1;
	rc->dec = rdec_new();
	p = (const char *)memchr(rc->head, '\n', rc->headlen) + 1;
	for (; p < end; p = e + 1) {
		e = memchr(p, '\n', end - p);
		if ((v = memchr(p, ':', e - p)) == NULL)
			continue;
		n = v - p;
		vn = rr_value(v, e, &v);
		if (n == 14 && strncasecmp(p, "Content-Length", n) == 0) {
			/* 1*DIGIT, at most 18 of them (no sign, no space). */
			if (vn == 0 || vn > 18)
				goto bad;
			for (i = 0, l = 0; i < vn; i++) {
				if (v[i] < '0' || v[i] > '9')
					goto bad;
				l = l * 10 + (v[i] - '0');
			}
			if (len != -1 && l != len)
				goto bad;
			len = l;
		} else if (n == 17 &&
		    strncasecmp(p, "Transfer-Encoding", n) == 0) {
			te = 1;
			rdec_header(rc->dec, 1, v, vn);
		} else if (n == 16 &&
		    strncasecmp(p, "Content-Encoding", n) == 0) {
			rdec_header(rc->dec, 0, v, vn);
		} else if (n == 10 && strncasecmp(p, "Connection", n) == 0) {
			if (http_list_has(v, vn, "close"))
				close = 1;
			else if (http_list_has(v, vn, "keep-alive"))
				rc->keepalive = 1;
		}
	}
	if (close)
		rc->keepalive = 0;	/* close wins, in any line */
	if (te && len != -1) {
		/* Which one frames it?  Read either way, it smuggles. */
		rhttp_fail(rc, 502, "the upstream's answer has both "
		    "Content-Length and Transfer-Encoding");
		return (-1);
	}
	rr_mode(rc, code, te ? rdec_chunked(rc->dec) : -1, len);
	return (0);
 bad:
	rhttp_fail(rc, 502, "the upstream's answer has a bad Content-Length");
	return (-1);
}

/*
 * A body in codings tregd cannot decode would carry an echoed key past
 * the redactor: refused (no body, nothing to read: relayed).  So is a
 * range of an encoded body, which cannot be decoded alone.
 */
static int
rr_codings(struct rcall *rc, int code)
{
	const char	*why;

	why = rdec_refused(rc->dec);
	if (rc->mode == RB_NONE || (why == NULL && !rdec_active(rc->dec))) {
		rdec_free(rc->dec);
		rc->dec = NULL;
		return (0);
	}
	if (why == NULL && code == 206)
		why = "the upstream's answer is a range of an encoded body: "
		    "tregd cannot decode it to mask the call's secrets";
	if (why == NULL)
		return (0);
	rhttp_fail(rc, 502, why);
	return (-1);
}

/*
 * None after HEAD, 204 and 304; chunked (1), or another coding (0): to
 * the close, as without a length.
 */
static void
rr_mode(struct rcall *rc, int code, int chunked, long long len)
{
	if (rc->head_req || code == 204 || code == 304)
		rc->mode = RB_NONE;
	else if (chunked == 1) {
		rc->mode = RB_CHUNKED;
		rc->chunk = RC_SIZE;
	} else if (chunked == 0 || len == -1) {
		rc->mode = RB_CLOSE;
		rc->keepalive = 0;
	} else {
		rc->mode = RB_LENGTH;
		rc->left = len;
	}
}

/* Upstream header lines tregd does not pass on. */
static int
rr_head_kept(const char *line, size_t len)
{
	static const char *const drop[] = {
		"Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Connection", "TE", "Trailer", "Transfer-Encoding",
		"Upgrade", "Content-Length", "Content-Encoding",
		"X-Content-Type-Options",
		"Content-Security-Policy", "X-Request-Id", NULL
	};
	const char	*colon;
	size_t		 i, n;

	if ((colon = memchr(line, ':', len)) == NULL)
		return (0);
	n = colon - line;
	if (n >= 7 && strncasecmp(line, "X-Treg-", 7) == 0)
		return (0);
	for (i = 0; drop[i] != NULL; i++)
		if (strlen(drop[i]) == n && strncasecmp(line, drop[i], n) == 0)
			return (0);
	return (1);
}

static void
rr_line_out(void *arg, const void *p, size_t len)
{
	struct evbuffer	*b = arg;

	evbuffer_add(b, p, len);
}

/*
 * The head, filtered and redacted, to the frontend.  One stream (a
 * redactor's window is 64 KiB) over the kept lines with a NUL between
 * them, which no pattern holds: a mask never joins two lines.
 */
static void
rr_head_send(struct rcall *rc, int code)
{
	struct evbuffer	*raw, *out;
	struct redact	*rd;
	const char	*p, *e, *end = rc->head + rc->headlen, *r, *z;
	size_t		 n;

	if ((raw = evbuffer_new()) == NULL || (out = evbuffer_new()) == NULL)
		fatal("%s: evbuffer_new", __func__);
	if ((rd = redact_new(rc->set, SIZE_MAX)) == NULL)
		fatal("%s: redact_new", __func__);
	/* The first line is the status line. */
	p = (const char *)memchr(rc->head, '\n', rc->headlen) + 1;
	for (; p < end; p = e + 1) {
		e = memchr(p, '\n', end - p);
		if (!rr_head_kept(p, e - p))
			continue;
		if (redact_write(rd, p, e - p - (e > p && e[-1] == '\r'),
		    rr_line_out, raw) == -1 ||
		    redact_write(rd, "", 1, rr_line_out, raw) == -1)
			fatal("%s: redact_write", __func__);
	}
	if (redact_finish(rd, rr_line_out, raw) == -1)
		fatal("%s: redact_finish", __func__);
	rc->redacted += redact_count(rd);
	redact_free(rd);
	n = evbuffer_get_length(raw);
	r = (const char *)evbuffer_pullup(raw, -1);
	for (p = r; p != NULL && p < r + n; p = z + 1) {
		if ((z = memchr(p, '\0', r + n - p)) == NULL)
			break;
		evbuffer_add(out, p, z - p);
		evbuffer_add(out, "\r\n", 2);
	}
	relay_send_head(rc, code, 0, (const char *)evbuffer_pullup(out, -1),
	    evbuffer_get_length(out));
	evbuffer_free(raw);
	evbuffer_free(out);
}

static void
rr_out(void *arg, const void *p, size_t len)
{
	relay_send_body(arg, p, len);
}

/* Decoded bytes: to the redactor, as an unencoded body's. */
static void
rr_plain(void *arg, const void *p, size_t len)
{
	struct rcall	*rc = arg;

	if (redact_write(rc->rd, p, len, rr_out, rc) == -1)
		fatal("%s: redact_write", __func__);
}

/* Body bytes: 1 while the call goes on and more may be read, 0, -1. */
static int
rr_body(struct rcall *rc, struct evbuffer *in)
{
	switch (rc->mode) {
	case RB_LENGTH:
		return (rr_data(rc, in, 1));
	case RB_CLOSE:
		return (rr_data(rc, in, 0));
	case RB_CHUNKED:
		return (rr_chunked(rc, in));
	case RB_DRAIN:
		return (rr_complete(rc));
	default:
		return (0);
	}
}

/*
 * Up to rc->left bytes (counted), or what there is, through the decoder
 * if any and the redactor: 1 while the call goes on and more may be
 * read, 0, -1.
 */
static int
rr_data(struct rcall *rc, struct evbuffer *in, int counted)
{
	size_t		 n;
	unsigned char	*p;

	n = evbuffer_get_contiguous_space(in);
	if (counted && n > rc->left)
		n = rc->left;
	if (rc->dec != NULL)
		return (rr_decode(rc, in, n, counted));
	if (n == 0)
		return (rc->eof && !counted ? rr_complete(rc) : 0);
	p = evbuffer_pullup(in, n);
	if (redact_write(rc->rd, p, n, rr_out, rc) == -1)
		fatal("%s: redact_write", __func__);
	evbuffer_drain(in, n);
	return (rr_consumed(rc, n, counted));
}

/*
 * n bytes of the encoded body, or none when the decoder has more of what
 * it read: as much as this turn's budget allows, the rest stays.
 */
static int
rr_decode(struct rcall *rc, struct evbuffer *in, size_t n, int counted)
{
	size_t	 used;
	int	 r;

	if (n == 0 && !rdec_pending(rc->dec))
		return (rc->eof && !counted ? rr_complete(rc) : 0);
	r = rdec_write(rc->dec, n > 0 ? evbuffer_pullup(in, n) : NULL, n,
	    &used, &rc->budget, rr_plain, rc);
	evbuffer_drain(in, used);
	if (r == RDEC_ERR) {
		rhttp_fail(rc, 502, "the upstream's encoded answer is "
		    "corrupt");
		return (-1);
	}
	if (r == RDEC_MORE) {
		if (counted)
			rc->left -= used;
		rr_stall(rc, 0);
		return (0);
	}
	return (rr_consumed(rc, used, counted));
}

/* n bytes of the body were read: 1 while more may be, 0, -1 (its end). */
static int
rr_consumed(struct rcall *rc, size_t n, int counted)
{
	if (!counted)
		return (1);
	rc->left -= n;
	if (rc->left > 0)
		return (1);
	if (rc->mode == RB_CHUNKED) {
		rc->chunk = RC_CRLF;
		return (1);
	}
	return (rr_complete(rc));
}

static int
rr_chunked(struct rcall *rc, struct evbuffer *in)
{
	char		 line[RR_CHUNK_LINE_MAX + 1], *end;
	size_t		 n;
	uint64_t	 size;

	if (rc->chunk == RC_DATA)
		return (rr_data(rc, in, 1));
	if (rr_line(rc, in, rc->chunk == RC_TRAILER ? RELAY_HEAD_MAX -
	    rc->trailerlen : RR_CHUNK_LINE_MAX, &n) == -1)
		return (-1);
	if (n == 0)
		return (0);
	if (rc->chunk == RC_TRAILER) {
		rc->trailerlen += n;
		evbuffer_copyout(in, line, 1);
		evbuffer_drain(in, n);
		if (n == 1 || (n == 2 && line[0] == '\r'))
			return (rr_complete(rc));	/* the empty line */
		return (1);
	}
	if (evbuffer_remove(in, line, n) != (int)n)
		fatalx("%s: evbuffer_remove", __func__);
	line[n] = '\0';
	if (rc->chunk == RC_CRLF) {
		if (n > 2 || (n == 2 && line[0] != '\r'))
			goto bad;
		rc->chunk = RC_SIZE;
		return (1);
	}
	if (strspn(line, "0123456789abcdefABCDEF") == 0 ||
	    strspn(line, "0123456789abcdefABCDEF") > 15)
		goto bad;
	size = strtoull(line, &end, 16);
	if (*end != ';' && *end != ' ' && *end != '\t' && *end != '\r' &&
	    *end != '\n')
		goto bad;
	rc->left = size;
	rc->chunk = size > 0 ? RC_DATA : RC_TRAILER;
	return (1);
 bad:
	rhttp_fail(rc, 502, "the upstream's chunked answer is not valid");
	return (-1);
}
