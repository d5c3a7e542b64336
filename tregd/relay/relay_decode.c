/*
 * relay_decode.c: the content and transfer codings of an upstream's
 * answer, undone before the redactor reads the body.
 *
 * The relay asks for identity; an answer encoded anyway would carry an
 * echoed key past the redactor in a form the caller can undo.  So gzip,
 * x-gzip and deflate (zlib, or raw as some servers send it), stacked up
 * to RDEC_CODINGS_MAX times, as content or transfer codings, are decoded
 * as a stream, and any other coding (br, zstd, compress, unknown ones)
 * refuses the answer.  Whatever the ratio (a zip bomb), a decoder holds
 * a fixed amount of memory: a write decodes at most the caller's budget
 * and leaves the rest of its input unread, so the decoded stream goes at
 * the pace of the redactor and the client.  Nothing of the daemon but
 * the caller's output function: the egress proxy (SPEC 6a) uses it too.
 */

#include <sys/types.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "relay.h"

#define RDEC_BUF	(32 * 1024)	/* between two stages */
#define RDEC_OUT	(32 * 1024)	/* the last stage's, per inflate */
#define RDEC_ROOM_MIN	64		/* less: the budget is spent */

enum rkind { RK_GZIP, RK_DEFLATE };

/* One coding undone: zlib's stream and what it made for the next. */
struct rstage {
	z_stream	 z;
	enum rkind	 kind;
	int		 init;		/* inflateInit2() done */
	int		 started;	/* a byte came in */
	int		 ended;		/* at the end of a whole stream */
	int		 full;		/* filled its output: more may come */
	unsigned char	 hdr[2];	/* deflate: zlib's header, or raw */
	size_t		 nhdr;
	unsigned char	*buf;		/* not the last stage: its output */
	size_t		 off, len;
};

struct rdec {
	enum rkind	 ce[RDEC_CODINGS_MAX];	/* in the order applied */
	enum rkind	 te[RDEC_CODINGS_MAX];
	int		 nce, nte;
	int		 chunked;	/* the last transfer coding */
	const char	*why;		/* refused: why (no upstream byte) */
	char		 whybuf[160];
	struct rstage	 st[RDEC_CODINGS_MAX];	/* in the order undone */
	int		 nst;
	int		 built;
	int		 more;		/* stopped at the budget */
};

static unsigned char	 rdec_out[RDEC_OUT];

static int	 rdec_coding(struct rdec *, int, const char *, size_t);
static int	 rdec_build(struct rdec *);
static int	 rdec_step(struct rdec *, int, const unsigned char **,
		    size_t *, size_t *, rdec_out_fn, void *);
static int	 rs_run(struct rstage *, const unsigned char **, size_t *,
		    unsigned char *, size_t, size_t *);
static int	 rs_init(struct rstage *);
static int	 rs_inflate(struct rstage *, const unsigned char **, size_t *,
		    unsigned char *, size_t, size_t *);
static voidpf	 rs_zalloc(voidpf, uInt, uInt);
static void	 rs_zfree(voidpf, voidpf);

struct rdec *
rdec_new(void)
{
	struct rdec	*d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		fatal("%s: calloc", __func__);
	return (d);
}

void
rdec_free(struct rdec *d)
{
	int	 i;

	if (d == NULL)
		return;
	for (i = 0; i < d->nst; i++) {
		if (d->st[i].init)
			inflateEnd(&d->st[i].z);
		if (d->st[i].buf != NULL)
			freezero(d->st[i].buf, RDEC_BUF);
	}
	freezero(d, sizeof(*d));
}

/*
 * A Content-Encoding (te 0) or Transfer-Encoding (1) line's value, in
 * the order of the head: 0, or -1 when the answer cannot be read (the
 * reason in rdec_refused()).
 */
int
rdec_header(struct rdec *d, int te, const char *v, size_t vn)
{
	const char	*e, *end = v + vn;
	size_t		 n;

	for (; v < end; v = e + 1) {
		if ((e = memchr(v, ',', end - v)) == NULL)
			e = end;
		for (; v < e && (*v == ' ' || *v == '\t'); v++)
			;
		for (n = e - v; n > 0 && (v[n - 1] == ' ' ||
		    v[n - 1] == '\t'); n--)
			;
		if (n > 0 && rdec_coding(d, te, v, n) == -1)
			return (-1);
		if (e == end)
			break;
	}
	return (0);
}

/* One coding of a list. */
static int
rdec_coding(struct rdec *d, int te, const char *v, size_t n)
{
	static const char *const known[] = {
		"br", "zstd", "compress", "x-compress", "exi", "pack200-gzip",
		"aes128gcm", "dcb", "dcz", NULL
	};
	enum rkind	 k;
	size_t		 i;

	if (d->why != NULL)
		return (-1);
	if (te && d->chunked) {
		d->why = "the upstream's answer has a transfer coding after "
		    "chunked";
		return (-1);
	}
	if (te && n == 7 && strncasecmp(v, "chunked", n) == 0) {
		d->chunked = 1;
		return (0);
	}
	if (n == 8 && strncasecmp(v, "identity", n) == 0)
		return (0);
	if ((n == 4 && strncasecmp(v, "gzip", n) == 0) ||
	    (n == 6 && strncasecmp(v, "x-gzip", n) == 0))
		k = RK_GZIP;
	else if (n == 7 && strncasecmp(v, "deflate", n) == 0)
		k = RK_DEFLATE;
	else {
		/* Named only when it is a known one: an echo is no name. */
		for (i = 0; known[i] != NULL; i++)
			if (strlen(known[i]) == n &&
			    strncasecmp(v, known[i], n) == 0)
				break;
		snprintf(d->whybuf, sizeof(d->whybuf), "the upstream's "
		    "answer is encoded with %s%s: tregd cannot decode it to "
		    "mask the call's secrets", known[i] != NULL ? known[i] :
		    "an unknown ", known[i] != NULL ? "" : te ?
		    "transfer coding" : "content coding");
		d->why = d->whybuf;
		return (-1);
	}
	if (d->nce + d->nte >= RDEC_CODINGS_MAX) {
		snprintf(d->whybuf, sizeof(d->whybuf), "the upstream's "
		    "answer is encoded more than %d times", RDEC_CODINGS_MAX);
		d->why = d->whybuf;
		return (-1);
	}
	if (te)
		d->te[d->nte++] = k;
	else
		d->ce[d->nce++] = k;
	return (0);
}

const char *
rdec_refused(const struct rdec *d)
{
	return (d->why);
}

int
rdec_chunked(const struct rdec *d)
{
	return (d->chunked);
}

/* Whether a coding is to be undone. */
int
rdec_active(const struct rdec *d)
{
	return (d->nce + d->nte > 0);
}

/*
 * The stages in the order undone: the transfer codings (applied last),
 * then the content codings, each list from its end.
 */
static int
rdec_build(struct rdec *d)
{
	int	 i;

	d->built = 1;
	for (i = d->nte - 1; i >= 0; i--)
		d->st[d->nst++].kind = d->te[i];
	for (i = d->nce - 1; i >= 0; i--)
		d->st[d->nst++].kind = d->ce[i];
	for (i = 0; i < d->nst - 1; i++)
		if ((d->st[i].buf = malloc(RDEC_BUF)) == NULL)
			fatal("%s: malloc", __func__);
	return (0);
}

/*
 * len bytes of the encoded body (NULL, 0: what the decoder still holds):
 * the decoded bytes to out(), at most *budget of them (less what went).
 * *used says how much of the input was read; RDEC_DONE when all of it
 * and nothing is held, RDEC_MORE when the budget stopped it (call again,
 * with the rest), RDEC_ERR when the stream is corrupt.
 */
int
rdec_write(struct rdec *d, const void *data, size_t len, size_t *used,
    size_t *budget, rdec_out_fn out, void *arg)
{
	const unsigned char	*in = data;
	size_t			 inlen = len;
	int			 k, moved, r = RDEC_DONE;

	if (!d->built)
		rdec_build(d);
	d->more = 0;
	for (;;) {
		if (*budget < RDEC_ROOM_MIN) {
			d->more = 1;
			r = RDEC_MORE;
			break;
		}
		/* From the last stage back: room is made before it fills. */
		for (moved = 0, k = d->nst - 1; k >= 0; k--) {
			if ((r = rdec_step(d, k, &in, &inlen, budget, out,
			    arg)) == -1)
				break;
			moved |= r;
		}
		if (r == -1) {
			r = RDEC_ERR;
			break;
		}
		if (!moved) {
			/* Nothing can move: anything left is stuck. */
			r = inlen == 0 ? RDEC_DONE : RDEC_ERR;
			break;
		}
	}
	explicit_bzero(rdec_out, sizeof(rdec_out));
	*used = len - inlen;
	return (r);
}

/* Whether the decoder holds more than it gave (the budget stopped it). */
int
rdec_pending(const struct rdec *d)
{
	return (d->more);
}

/*
 * The encoded body ended: what is held, then RDEC_DONE if every stream
 * that began was whole, RDEC_ERR if one was cut, or RDEC_MORE.
 */
int
rdec_finish(struct rdec *d, size_t *budget, rdec_out_fn out, void *arg)
{
	size_t	 used;
	int	 i, r;

	if ((r = rdec_write(d, NULL, 0, &used, budget, out, arg)) !=
	    RDEC_DONE)
		return (r);
	for (i = 0; i < d->nst; i++)
		if (d->st[i].started && !d->st[i].ended)
			return (RDEC_ERR);
	return (RDEC_DONE);
}

/* Stage k once: 1 if it read or made a byte, 0, -1 (corrupt). */
static int
rdec_step(struct rdec *d, int k, const unsigned char **in, size_t *inlen,
    size_t *budget, rdec_out_fn out, void *arg)
{
	struct rstage		*s = &d->st[k], *prev = k > 0 ? s - 1 : NULL;
	const unsigned char	*src = *in;
	unsigned char		*dst;
	size_t			 srclen = *inlen, room, made, took;

	if (prev != NULL) {
		src = prev->buf + prev->off;
		srclen = prev->len;
	}
	if (k == d->nst - 1) {
		dst = rdec_out;
		room = *budget < sizeof(rdec_out) ? *budget : sizeof(rdec_out);
	} else {
		if (s->off > 0 && s->off + s->len + RDEC_ROOM_MIN > RDEC_BUF) {
			memmove(s->buf, s->buf + s->off, s->len);
			s->off = 0;
		}
		dst = s->buf + s->off + s->len;
		room = RDEC_BUF - s->off - s->len;
		if (room < RDEC_ROOM_MIN)
			return (0);
	}
	if (srclen == 0 && !s->full)
		return (0);
	took = srclen;
	if (rs_run(s, &src, &srclen, dst, room, &made) == -1)
		return (-1);
	took -= srclen;
	if (prev != NULL) {
		prev->off += took;
		prev->len -= took;
		if (prev->len == 0)
			prev->off = 0;
	} else {
		*in = src;
		*inlen = srclen;
	}
	if (k < d->nst - 1)
		s->len += made;
	else if (made > 0) {
		out(arg, dst, made);
		*budget -= made;
	}
	return (took > 0 || made > 0);
}

/* Stage s on *in: what it made into dst (room bytes); 0, or -1. */
static int
rs_run(struct rstage *s, const unsigned char **in, size_t *inlen,
    unsigned char *dst, size_t room, size_t *made)
{
	const unsigned char	*h;
	size_t			 hl, m;

	*made = 0;
	if (*inlen > 0)
		s->started = 1;
	if (!s->init) {
		/* deflate: zlib's two byte header, or none (raw). */
		while (s->kind == RK_DEFLATE && s->nhdr < 2 && *inlen > 0) {
			s->hdr[s->nhdr++] = **in;
			(*in)++;
			(*inlen)--;
		}
		if (s->kind == RK_DEFLATE && s->nhdr < 2)
			return (0);
		if (rs_init(s) == -1)
			return (-1);
		if (s->kind == RK_DEFLATE) {
			/* Two bytes make no more than one: they all go in. */
			h = s->hdr;
			hl = 2;
			if (rs_inflate(s, &h, &hl, dst, room, made) == -1 ||
			    hl != 0)
				return (-1);
			dst += *made;
			room -= *made;
		}
	}
	if (s->ended) {
		if (*inlen == 0)
			return (0);
		/* gzip: members may follow each other; deflate ends. */
		if (s->kind != RK_GZIP || inflateReset(&s->z) != Z_OK)
			return (-1);
		s->ended = 0;
	}
	if ((*inlen == 0 && !s->full) || room == 0)
		return (0);
	if (rs_inflate(s, in, inlen, dst, room, &m) == -1)
		return (-1);
	*made += m;
	return (0);
}

static int
rs_init(struct rstage *s)
{
	int	 bits;

	s->z.zalloc = rs_zalloc;
	s->z.zfree = rs_zfree;
	if (s->kind == RK_GZIP)
		bits = 16 + MAX_WBITS;		/* gzip only */
	else if ((s->hdr[0] & 0x0f) == Z_DEFLATED && (s->hdr[0] >> 4) <= 7 &&
	    ((s->hdr[0] << 8) | s->hdr[1]) % 31 == 0)
		bits = MAX_WBITS;		/* zlib, as RFC 9110 says */
	else
		bits = -MAX_WBITS;		/* raw, as some servers send */
	if (inflateInit2(&s->z, bits) != Z_OK)
		return (-1);
	s->init = 1;
	return (0);
}

/* One inflate(3) of *in into dst: 0, or -1 (corrupt, or a dictionary). */
static int
rs_inflate(struct rstage *s, const unsigned char **in, size_t *inlen,
    unsigned char *dst, size_t room, size_t *made)
{
	uInt	 n = *inlen > UINT_MAX ? UINT_MAX : *inlen;
	int	 r;

	s->z.next_in = (Bytef *)*in;
	s->z.avail_in = n;
	s->z.next_out = dst;
	s->z.avail_out = room > UINT_MAX ? UINT_MAX : room;
	r = inflate(&s->z, Z_NO_FLUSH);
	*in += n - s->z.avail_in;
	*inlen -= n - s->z.avail_in;
	*made = (room > UINT_MAX ? UINT_MAX : room) - s->z.avail_out;
	s->full = s->z.avail_out == 0;
	if (r == Z_STREAM_END) {
		s->ended = 1;
		s->full = 0;
		return (0);
	}
	return (r == Z_OK || r == Z_BUF_ERROR ? 0 : -1);
}

/*
 * zlib's memory: its window holds decoded bytes (an echoed key), so it
 * is zeroed when freed; the size is kept in front of the block.
 */
static voidpf
rs_zalloc(voidpf opaque, uInt items, uInt size)
{
	size_t	*p, n;

	if (items != 0 && size > (SIZE_MAX - 2 * sizeof(size_t)) / items)
		return (Z_NULL);
	n = (size_t)items * size;
	if ((p = malloc(n + 2 * sizeof(size_t))) == NULL)
		return (Z_NULL);
	p[0] = n;
	return (p + 2);
}

static void
rs_zfree(voidpf opaque, voidpf addr)
{
	size_t	*p = (size_t *)addr - 2;

	freezero(p, p[0] + 2 * sizeof(size_t));
}
