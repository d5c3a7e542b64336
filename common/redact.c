/*
 * The streaming redactor.  See redact.h for the promises.
 *
 * Every form of every secret goes into one trie, compiled into an
 * Aho-Corasick automaton.  The states near the root, where scanning
 * ordinary output spends its time, get dense transition rows indexed by
 * byte class; deeper states keep only their trie edges and a failure link,
 * so a run with a large multi-line secret (a service account key) costs
 * megabytes less.
 *
 * Whitespace is transparent: patterns are stored without space, tab,
 * '\r', '\n', '\v' and '\f', and the scan steps over them (at most
 * REDACT_MAXWS in a row inside a match), so hex or base64 in any layout matches: wrapped
 * at any width, a space or tab between every unit or every group, with
 * or without a leading one on each line, wrapped irregularly.  The rule
 * is the matcher's, not a list of tools' layouts.  A ring of the stream
 * offsets of the last bytes stepped gives each match its span.
 *
 * A write is scanned in the caller's buffer; only the undecided tail is
 * copied, to be scanned on with the next write.
 *
 * Scanning mostly never enters the automaton.  While no match is in
 * progress, a hashed bitmap of W-grams (W is 2 to 4, from the shortest
 * pattern) is probed every K bytes: it holds the W-grams at offsets 0 to
 * K - 1 of every pattern, and every pattern is at least W + K - 1 long,
 * so a probe that misses rules out a match starting in the K positions
 * before it (whitespace there only brings later W-grams closer).  K is
 * at most 16; a probe whose window holds whitespace looks at the next W
 * bytes that are not, and text between windows needs no look.
 *
 * Union of spans: every state knows the longest pattern ending in it
 * (outlen), so each position yields at most one match, the longest; a
 * position's match contains every other ending there.  Matches are
 * merged into a stack of disjoint spans (a new one swallows those it
 * overlaps or touches) and counted on a second stack of starts (a new
 * match cancels the earlier ones it contains).  Every state also knows
 * how far back a match still in progress may start (pend): bytes before
 * that are decided and leave, one mask per span.  The bytes a stream
 * holds back are those of the match in progress, never more than
 * (REDACT_MAXWS + 1) * maxlen.
 */

#include <sys/types.h>

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "redact.h"

/* Transition rows kept dense; deeper states walk failure links. */
#define REDACT_DENSE_BUDGET	(512 * 1024)
/* Bytes of a write scanned before what is decided leaves. */
#define REDACT_CHUNK		(64 * 1024)
#define REDACT_MAXSTATES	(UINT32_MAX / 2)
/* The start filter: 2^19 bits, 64 KiB, in L2 beside the text. */
#define REDACT_FILTER_BITS	19
#define REDACT_FILTER_MAXSTRIDE	16
/* Whitespace: space, tab, '\n', '\r' (and '\v', '\f': isspace(3)). */
#define REDACT_ISWS(c)		((c) == ' ' || ((c) >= '\t' && (c) <= '\r'))
#define RS_ONES64	0x0101010101010101ULL
#define RS_HIGH64	0x8080808080808080ULL
#define REDACT_FILTER_HASH(v) \
	((uint32_t)((v) * 0x9e3779b1U) >> (32 - REDACT_FILTER_BITS))

struct rnode {				/* the trie while secrets are added */
	uint32_t	 child;		/* first child, 0 if none */
	uint32_t	 sibling;
	uint32_t	 depth;
	uint8_t		 byte;
	uint8_t		 term;		/* a pattern ends here */
};

struct rstate {
	uint32_t	 outlen;	/* longest pattern ending here, or 0 */
	uint32_t	 pend;		/* bytes a match in progress spans */
};

struct redact_set {
	struct rnode	*nodes;
	size_t		 nnodes;
	size_t		 nodecap;
	int		 compiled;
	size_t		 maxlen;
	size_t		 minlen;
	size_t		 npatterns;

	/* The automaton; states are numbered breadth first, root is 0. */
	uint32_t	 nstates;
	uint32_t	 ndense;
	uint32_t	 nclasses;
	uint16_t	 cls[256];	/* byte -> class, 0: in no pattern */
	uint32_t	*dense;		/* ndense rows of nclasses */
	struct rstate	*st;
	uint32_t	*fail;
	uint32_t	*estart;	/* nstates + 1, edges of each state */
	uint8_t		*ebyte;
	uint32_t	*eto;
	size_t		 memsize;
	uint32_t	 fwidth;	/* W: bytes the start filter sees */
	uint32_t	 fstride;	/* K: bytes between two probes */
	uint32_t	 fmask;		/* the low W bytes of a word */
	uint8_t		 filter[(1U << REDACT_FILTER_BITS) / 8];
};

/* A masked span [a, b) of the stream; starred: its mask has left. */
struct rspan {
	uint64_t	 a;
	uint64_t	 b;
	int		 starred;
};

/* A stack of the undecided spans or match starts, oldest first. */
struct rstack {
	void		*v;
	size_t		 head;
	size_t		 tail;
	size_t		 cap;
};

struct redact {
	const struct redact_set	*rs;
	uint8_t		*buf;		/* the held-back tail */
	size_t		 bufsz;
	size_t		 buflen;
	/*
	 * The bytes scanned: the caller's buffer during a write, right
	 * after the held-back tail in the stream, or the tail itself.
	 */
	const uint8_t	*w;
	uint64_t	 wbase;		/* stream offset of w[0] */
	size_t		 wlen;
	/* Scan state; positions are stream offsets, buf[0] is at base. */
	uint64_t	 base;
	uint64_t	 pos;		/* next byte to scan */
	uint64_t	 done;		/* output before this is decided */
	uint64_t	 guard;		/* no skipping before this */
	uint64_t	 seen;		/* matches ending up to here known */
	uint32_t	 q;
	uint32_t	 lbrun;		/* whitespace since the last byte */
	uint64_t	*ring;		/* offsets of the last bytes stepped */
	uint64_t	 rmask;
	uint64_t	 vi;		/* bytes stepped */
	struct rstack	 spans;		/* struct rspan */
	struct rstack	 starts;	/* uint64_t: counted, not contained */
	int		 finished;
	int		 truncated;
	size_t		 cap;
	size_t		 emitted;
	size_t		 count;
};

static void	*rs_grow(void *, size_t *, size_t, size_t);
static int	 rs_insert(struct redact_set *, const uint8_t *, size_t);
static int	 rs_add_forms(struct redact_set *, const uint8_t *, size_t);
static int	 rs_add_lines(struct redact_set *, const uint8_t *, size_t);
static size_t	 rs_base64(const uint8_t *, size_t, size_t, const char *, int,
		    int, uint8_t *);
static size_t	 rs_percent(const uint8_t *, size_t, const char *, int, int,
		    uint8_t *);
static size_t	 rs_utf8(const uint8_t *, size_t, uint32_t *);
static size_t	 rs_uescape(uint32_t, const char *, uint8_t *);
static size_t	 rs_json(const uint8_t *, size_t, int, int, const char *,
		    uint8_t *);
static size_t	 rs_hex(const uint8_t *, size_t, const char *, int,
		    uint8_t *);
static void	 rs_free_automaton(struct redact_set *);
static void	 rs_number(struct redact_set *, uint32_t *, uint32_t *);
static int	 rs_classes(struct redact_set *);
static void	 rs_links(struct redact_set *, const uint32_t *);
static inline uint32_t rs_step(const struct redact_set *, uint32_t, uint8_t);
static int	 rs_probe_ws(const struct redact_set *, const uint8_t *, size_t,
		    size_t);
static inline uint64_t rs_ws64(uint64_t);
static inline uint64_t rs_squeeze(uint64_t, uint32_t *);
#ifdef __SSE2__
static inline __m128i rs_squeeze2(__m128i, uint32_t *);
#endif
static inline size_t rs_skip(struct redact *, size_t, size_t);
static void	 rs_filter_add(struct redact_set *, uint32_t, uint32_t,
		    uint8_t *);
static void	 redact_emit(struct redact *, const void *, size_t,
		    redact_out_fn, void *);
static void	 redact_emit_range(struct redact *, uint64_t, uint64_t,
		    redact_out_fn, void *);
static int	 rstack_push(struct rstack *, const void *, size_t);
static inline uint64_t redact_bound(const struct redact *);
static int	 redact_match(struct redact *, uint64_t, uint64_t);
static void	 redact_settle(struct redact *, uint64_t, int,
		    redact_out_fn, void *);
static int	 redact_scan(struct redact *, int, redact_out_fn, void *);

static const char b64std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char hexup[] = "0123456789ABCDEF";
static const char hexlo[] = "0123456789abcdef";

struct redact_set *
redact_set_new(void)
{
	struct redact_set	*rs;

	if ((rs = calloc(1, sizeof(*rs))) == NULL)
		return NULL;
	rs->nodecap = 64;
	if ((rs->nodes = calloc(rs->nodecap, sizeof(*rs->nodes))) == NULL) {
		free(rs);
		return NULL;
	}
	rs->nnodes = 1;			/* the root */
	return rs;
}

/*
 * Like reallocarray, but the old block held secret bytes: copy and zero
 * it instead of letting realloc free it dirty.
 */
static void *
rs_grow(void *old, size_t *nmemb, size_t want, size_t size)
{
	void	*new;
	size_t	 n = *nmemb;

	while (n < want) {
		if (n > SIZE_MAX / 2 / size) {
			errno = ENOMEM;
			return NULL;
		}
		n *= 2;
	}
	if ((new = calloc(n, size)) == NULL)
		return NULL;
	memcpy(new, old, *nmemb * size);
	freezero(old, *nmemb * size);
	*nmemb = n;
	return new;
}

/* Insert p without its whitespace (the scan steps over it). */
static int
rs_insert(struct redact_set *rs, const uint8_t *p, size_t len)
{
	struct rnode	*nodes;
	uint32_t	 u = 0, c;
	size_t		 i, d = 0;

	if (len == 0)
		return 0;
	if (len > REDACT_MAXSTATES || rs->nnodes > REDACT_MAXSTATES - len) {
		errno = E2BIG;
		return -1;
	}
	if (rs->nnodes + len > rs->nodecap) {
		nodes = rs_grow(rs->nodes, &rs->nodecap, rs->nnodes + len,
		    sizeof(*nodes));
		if (nodes == NULL)
			return -1;
		rs->nodes = nodes;
	}
	nodes = rs->nodes;
	for (i = 0; i < len; i++) {
		if (REDACT_ISWS(p[i]))
			continue;
		for (c = nodes[u].child; c != 0; c = nodes[c].sibling)
			if (nodes[c].byte == p[i])
				break;
		if (c == 0) {
			c = rs->nnodes++;
			nodes[c].byte = p[i];
			nodes[c].depth = d + 1;
			nodes[c].sibling = nodes[u].child;
			nodes[u].child = c;
		}
		u = c;
		d++;
	}
	if (d > 0 && !nodes[u].term) {
		nodes[u].term = 1;
		rs->npatterns++;
		if (d > rs->maxlen)
			rs->maxlen = d;
		if (rs->minlen == 0 || d < rs->minlen)
			rs->minlen = d;
	}
	return 0;
}

int
redact_set_add(struct redact_set *rs, const void *secret, size_t len)
{
	const uint8_t	*s = secret;

	if (rs->compiled) {
		errno = EINVAL;
		return -1;
	}
	if (len == 0)
		return 0;
	if (rs_insert(rs, s, len) == -1)
		return -1;
	if (len < REDACT_MINFORMS)
		return 0;
	if (rs_add_forms(rs, s, len) == -1)
		return -1;
	return rs_add_lines(rs, s, len);
}

/*
 * Base64 of s as it appears after `align' (0-2) bytes of unknown data:
 * only the characters that depend on s alone.  With tail, the character
 * that mixes the last bits of s with the next data (taken as zero bits, as
 * at the end of the encoding), and with pad, the padding after it.
 */
static size_t
rs_base64(const uint8_t *s, size_t n, size_t align, const char *alpha,
    int tail, int pad, uint8_t *out)
{
	size_t		 total = align + n, skip, i, j, o = 0, ci = 0, r;
	uint32_t	 v;

	/* Characters carrying bits of the unknown leading bytes. */
	skip = align == 0 ? 0 : align == 1 ? 2 : 3;
	for (i = 0; i + 3 <= total; i += 3) {
		v = 0;
		for (j = i; j < i + 3; j++)
			v = v << 8 | (j < align ? 0 : s[j - align]);
		for (j = 0; j < 4; j++, ci++)
			if (ci >= skip)
				out[o++] = alpha[(v >> (18 - 6 * j)) & 63];
	}
	if ((r = total - i) == 0)
		return o;
	/* n >= 8, so the partial group holds secret bytes only. */
	v = s[i - align] << 16;
	if (r == 2)
		v |= s[i + 1 - align] << 8;
	for (j = 0; j < r; j++)
		out[o++] = alpha[(v >> (18 - 6 * j)) & 63];
	if (tail) {
		out[o++] = alpha[(v >> (18 - 6 * r)) & 63];
		for (j = 0; pad && j < 3 - r; j++)
			out[o++] = '=';
	}
	return o;
}

/*
 * Percent-encoding: every byte as %XX, or (unreserved) the URL form that
 * keeps RFC 3986 unreserved characters, or (plus) the form-encoding that
 * also writes a space as '+'.
 */
static size_t
rs_percent(const uint8_t *s, size_t n, const char *hexd, int unreserved,
    int plus, uint8_t *out)
{
	size_t	 i, o = 0;
	uint8_t	 c;

	for (i = 0; i < n; i++) {
		c = s[i];
		if (unreserved && ((c >= 'A' && c <= 'Z') ||
		    (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~'))
			out[o++] = c;
		else if (plus && c == ' ')
			out[o++] = '+';
		else {
			out[o++] = '%';
			out[o++] = hexd[c >> 4];
			out[o++] = hexd[c & 15];
		}
	}
	return o;
}

/*
 * One UTF-8 sequence at s (n bytes left): its length and code point, or
 * 0 when it is not well formed.
 */
static size_t
rs_utf8(const uint8_t *s, size_t n, uint32_t *cp)
{
	static const uint32_t	 min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t			 len, i;
	uint32_t		 v;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		v = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		v = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		v = s[0] & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

static size_t
rs_uescape(uint32_t v, const char *hexd, uint8_t *out)
{
	out[0] = '\\';
	out[1] = 'u';
	out[2] = hexd[(v >> 12) & 15];
	out[3] = hexd[(v >> 8) & 15];
	out[4] = hexd[(v >> 4) & 15];
	out[5] = hexd[v & 15];
	return 6;
}

/*
 * The body of a JSON string holding s, as common encoders write it; with
 * ascii, non-ASCII characters as \uXXXX (UTF-16), as Python's json.dumps.
 */
static size_t
rs_json(const uint8_t *s, size_t n, int slash, int ascii, const char *hexd,
    uint8_t *out)
{
	size_t		 i, o = 0, len;
	uint32_t	 cp;
	uint8_t		 c, e;

	for (i = 0; i < n; i++) {
		c = s[i];
		if (ascii && c >= 0x80 && (len = rs_utf8(s + i, n - i, &cp)) >
		    0) {
			if (cp >= 0x10000) {
				cp -= 0x10000;
				o += rs_uescape(0xd800 | cp >> 10, hexd,
				    out + o);
				cp = 0xdc00 | (cp & 0x3ff);
			}
			o += rs_uescape(cp, hexd, out + o);
			i += len - 1;
			continue;
		}
		switch (c) {
		case '"':
		case '\\':
			e = c;
			break;
		case '/':
			e = slash ? '/' : 0;
			break;
		case '\b':
			e = 'b';
			break;
		case '\f':
			e = 'f';
			break;
		case '\n':
			e = 'n';
			break;
		case '\r':
			e = 'r';
			break;
		case '\t':
			e = 't';
			break;
		default:
			e = c < 0x20 ? 'u' : 0;
			break;
		}
		if (e == 0) {
			out[o++] = c;
			continue;
		}
		if (e == 'u') {
			o += rs_uescape(c, hexd, out + o);
			continue;
		}
		out[o++] = '\\';
		out[o++] = e;
	}
	return o;
}

/*
 * Hex, with sep (if not 0) between bytes, as openssl's colon lists.
 * Whitespace between bytes (od, xxd, Python's " ".join) is the scan's.
 */
static size_t
rs_hex(const uint8_t *s, size_t n, const char *hexd, int sep, uint8_t *out)
{
	size_t	 i, o = 0;

	for (i = 0; i < n; i++) {
		if (sep != 0 && i > 0)
			out[o++] = sep;
		out[o++] = hexd[s[i] >> 4];
		out[o++] = hexd[s[i] & 15];
	}
	return o;
}

static int
rs_add_forms(struct redact_set *rs, const uint8_t *s, size_t n)
{
	static const char	*alphas[] = { b64std, b64url };
	static const char	*hexds[] = { hexup, hexlo };
	static const int	 seps[] = { 0, ':' };
	uint8_t			*tmp;
	size_t			 tmpsz, len, align, a, h, v, k;
	int			 rv = -1;

	/* \u00XX is the widest form: six bytes per byte. */
	if (n > (SIZE_MAX - 8) / 6) {
		errno = E2BIG;
		return -1;
	}
	tmpsz = 6 * n + 8;
	if ((tmp = malloc(tmpsz)) == NULL)
		return -1;
	for (align = 0; align < 3; align++)
		for (a = 0; a < 2; a++)
			for (v = 0; v < 3; v++) {
				len = rs_base64(s, n, align, alphas[a], v > 0,
				    v > 1, tmp);
				if (rs_insert(rs, tmp, len) == -1)
					goto out;
			}
	for (h = 0; h < 2; h++) {
		len = rs_percent(s, n, hexds[h], 0, 0, tmp);
		if (rs_insert(rs, tmp, len) == -1)
			goto out;
		len = rs_percent(s, n, hexds[h], 1, 0, tmp);
		if (rs_insert(rs, tmp, len) == -1)
			goto out;
		len = rs_percent(s, n, hexds[h], 1, 1, tmp);
		if (rs_insert(rs, tmp, len) == -1)
			goto out;
		for (k = 0; k < 4; k++) {
			len = rs_json(s, n, k & 1, k >> 1, hexds[h], tmp);
			if (rs_insert(rs, tmp, len) == -1)
				goto out;
		}
		for (k = 0; k < 2; k++) {
			len = rs_hex(s, n, hexds[h], seps[k], tmp);
			if (rs_insert(rs, tmp, len) == -1)
				goto out;
		}
	}
	rv = 0;
 out:
	freezero(tmp, tmpsz);
	return rv;
}

/* A multi-line value (a PEM key) often leaks one line at a time. */
static int
rs_add_lines(struct redact_set *rs, const uint8_t *s, size_t n)
{
	const uint8_t	*p = s, *end = s + n, *nl, *q;
	size_t		 len;

	if (memchr(s, '\n', n) == NULL)
		return 0;
	while (p < end) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		/* Its bytes that are not whitespace, as it is stored. */
		for (len = 0, q = p; q < nl; q++)
			if (!REDACT_ISWS(*q))
				len++;
		if (len >= REDACT_MINFORMS && rs_insert(rs, p, nl - p) == -1)
			return -1;
		p = nl + 1;
	}
	return 0;
}

/*
 * Breadth-first numbering (order: the nodes by number, id: the number of
 * each node), so that failure links point to lower numbers; the edges of
 * each state in estart, ebyte and eto.
 */
static void
rs_number(struct redact_set *rs, uint32_t *order, uint32_t *id)
{
	struct rnode	*nodes = rs->nodes;
	uint32_t	 n = rs->nstates, head, tail, c, q, e;

	order[0] = 0;
	for (head = 0, tail = 1; head < tail; head++)
		for (c = nodes[order[head]].child; c != 0;
		    c = nodes[c].sibling)
			order[tail++] = c;
	for (q = 0; q < n; q++)
		id[order[q]] = q;
	for (q = 0, e = 0; q < n; q++) {
		rs->estart[q] = e;
		for (c = nodes[order[q]].child; c != 0; c = nodes[c].sibling) {
			rs->ebyte[e] = nodes[c].byte;
			rs->eto[e++] = id[c];
		}
	}
	rs->estart[n] = e;
}

/*
 * The byte classes (the bytes some edge reads, each its own class) and
 * room for the dense rows of the states nearest the root, within
 * REDACT_DENSE_BUDGET.
 */
static int
rs_classes(struct redact_set *rs)
{
	uint32_t	 n = rs->nstates, c, k, e;
	size_t		 ncls, ndense;

	memset(rs->cls, 0, sizeof(rs->cls));
	for (e = 0; e < rs->estart[n]; e++)
		rs->cls[rs->ebyte[e]] = 1;
	for (c = 0, k = 1; c < 256; c++)
		if (rs->cls[c] != 0)
			rs->cls[c] = k++;
	rs->nclasses = ncls = k;
	ndense = REDACT_DENSE_BUDGET / (ncls * sizeof(uint32_t));
	if (ndense < 1)
		ndense = 1;
	if (ndense > n)
		ndense = n;
	rs->ndense = ndense;
	if ((rs->dense = calloc(ndense * ncls, sizeof(uint32_t))) == NULL)
		return -1;
	return 0;
}

/*
 * The dense rows and the failure links, in one breadth-first walk: each
 * state's failure link is one transition of its parent's failure state,
 * and a state near the root (where chains of links are long and rows are
 * wide) answers it from its row, built from its own failure state's row
 * as the walk reaches it.
 */
static void
rs_links(struct redact_set *rs, const uint32_t *order)
{
	struct rnode	*nodes = rs->nodes;
	uint32_t	 n = rs->nstates, q, f, e, *row;
	size_t		 ncls = rs->nclasses, ndense = rs->ndense;

	for (q = 0; q < n; q++) {
		f = rs->fail[q];
		if (q < ndense) {
			row = rs->dense + (size_t)q * ncls;
			if (q != 0)
				memcpy(row, rs->dense + (size_t)f * ncls,
				    ncls * sizeof(uint32_t));
			for (e = rs->estart[q]; e < rs->estart[q + 1]; e++)
				row[rs->cls[rs->ebyte[e]]] = rs->eto[e];
		}
		for (e = rs->estart[q]; e < rs->estart[q + 1]; e++)
			rs->fail[rs->eto[e]] = q == 0 ? 0 :
			    rs_step(rs, f, rs->ebyte[e]);
		if (q == 0)
			continue;
		rs->st[q].outlen = nodes[order[q]].term ?
		    nodes[order[q]].depth : rs->st[f].outlen;
		/* A leaf continues exactly like its failure state. */
		rs->st[q].pend = rs->estart[q + 1] > rs->estart[q] ?
		    nodes[order[q]].depth : rs->st[f].pend;
	}
}

int
redact_set_compile(struct redact_set *rs)
{
	uint32_t	*order = NULL, *id = NULL;
	uint32_t	 n;
	uint8_t		 path[REDACT_FILTER_MAXSTRIDE + 4];
	size_t		 ncls, ndense;
	int		 rv = -1;

	if (rs->compiled) {
		errno = EINVAL;
		return -1;
	}
	n = rs->nstates = rs->nnodes;
	if ((order = reallocarray(NULL, n, sizeof(*order))) == NULL ||
	    (id = reallocarray(NULL, n, sizeof(*id))) == NULL ||
	    (rs->estart = reallocarray(NULL, n + 1, sizeof(uint32_t))) ==
	    NULL ||
	    (rs->ebyte = malloc(n)) == NULL ||
	    (rs->eto = reallocarray(NULL, n, sizeof(uint32_t))) == NULL ||
	    (rs->fail = calloc(n, sizeof(uint32_t))) == NULL ||
	    (rs->st = calloc(n, sizeof(*rs->st))) == NULL)
		goto out;

	rs_number(rs, order, id);
	if (rs_classes(rs) == -1)
		goto out;
	rs_links(rs, order);
	ndense = rs->ndense;
	ncls = rs->nclasses;

	rs->fwidth = rs->minlen < 2 ? 2 : rs->minlen > 4 ? 4 : rs->minlen;
	rs->fmask = rs->fwidth == 4 ? 0xffffffffU :
	    (1U << (8 * rs->fwidth)) - 1;
	rs->fstride = rs->minlen < rs->fwidth ? 1 : rs->minlen - rs->fwidth + 1;
	if (rs->fstride > REDACT_FILTER_MAXSTRIDE)
		rs->fstride = REDACT_FILTER_MAXSTRIDE;
	rs_filter_add(rs, 0, 0, path);

	rs->memsize = ndense * ncls * sizeof(uint32_t) +
	    (size_t)n * (sizeof(*rs->st) + 3 * sizeof(uint32_t) + 1);
	freezero(rs->nodes, rs->nodecap * sizeof(*rs->nodes));
	rs->nodes = NULL;
	rs->nnodes = rs->nodecap = 0;
	rs->compiled = 1;
	rv = 0;
 out:
	free(order);
	free(id);
	if (rv == -1)
		rs_free_automaton(rs);
	return rv;
}

/*
 * Mark the W-grams at offsets 0 to K - 1 of every pattern below state q
 * (reached by the d bytes in path) in the start filter.  A pattern
 * shorter than W (only with W = 2, K = 1) marks every W-gram it starts.
 */
static void
rs_filter_add(struct redact_set *rs, uint32_t q, uint32_t d, uint8_t *path)
{
	uint32_t	 e, c, h, v, i, w = rs->fwidth;

	if (d >= w || (d > 0 && rs->st[q].outlen == d)) {
		for (c = 0; c < (d >= w ? 1U : 256U); c++) {
			/* The last W bytes of the path, or all and c. */
			v = d >= w ? 0 : c << (8 * d);
			for (i = d >= w ? d - w : 0; i < d; i++)
				v |= (uint32_t)path[i] <<
				    (8 * (d >= w ? i + w - d : i));
			h = REDACT_FILTER_HASH(v);
			rs->filter[h >> 3] |= 1U << (h & 7);
		}
		if (d == w + rs->fstride - 1)
			return;
	}
	for (e = rs->estart[q]; e < rs->estart[q + 1]; e++) {
		path[d] = rs->ebyte[e];
		rs_filter_add(rs, rs->eto[e], d + 1, path);
	}
}

size_t
redact_set_maxlen(const struct redact_set *rs)
{
	return rs->maxlen;
}

size_t
redact_set_npatterns(const struct redact_set *rs)
{
	return rs->npatterns;
}

size_t
redact_set_memsize(const struct redact_set *rs)
{
	return rs->memsize;
}

int
redact_set_foreach(const struct redact_set *rs, redact_pattern_fn fn,
    void *arg)
{
	uint8_t		*path;
	uint32_t	*state, *cur, q, v;
	size_t		 d, max = rs->maxlen + 1;

	if (!rs->compiled) {
		errno = EINVAL;
		return -1;
	}
	path = malloc(max);
	state = reallocarray(NULL, max, sizeof(*state));
	cur = reallocarray(NULL, max, sizeof(*cur));
	if (path == NULL || state == NULL || cur == NULL) {
		free(path);
		free(state);
		free(cur);
		return -1;
	}
	d = 0;
	state[0] = 0;
	cur[0] = rs->estart[0];
	for (;;) {
		q = state[d];
		if (cur[d] == rs->estart[q + 1]) {
			if (d-- == 0)
				break;
			continue;
		}
		path[d] = rs->ebyte[cur[d]];
		v = rs->eto[cur[d]++];
		state[++d] = v;
		cur[d] = rs->estart[v];
		if (rs->st[v].outlen == d)
			fn(arg, path, d);
	}
	freezero(path, max);
	free(state);
	free(cur);
	return 0;
}

static void
rs_free_automaton(struct redact_set *rs)
{
	size_t	 n = rs->nstates;

	freezero(rs->dense, (size_t)rs->ndense * rs->nclasses *
	    sizeof(uint32_t));
	freezero(rs->st, n * sizeof(*rs->st));
	freezero(rs->fail, n * sizeof(uint32_t));
	freezero(rs->estart, (n + 1) * sizeof(uint32_t));
	freezero(rs->ebyte, n);
	freezero(rs->eto, n * sizeof(uint32_t));
	rs->dense = NULL;
	rs->st = NULL;
	rs->fail = rs->estart = rs->eto = NULL;
	rs->ebyte = NULL;
	rs->nstates = rs->ndense = 0;
	explicit_bzero(rs->filter, sizeof(rs->filter));
	explicit_bzero(rs->cls, sizeof(rs->cls));
}

void
redact_set_free(struct redact_set *rs)
{
	if (rs == NULL)
		return;
	if (rs->nodes != NULL)
		freezero(rs->nodes, rs->nodecap * sizeof(*rs->nodes));
	rs_free_automaton(rs);
	freezero(rs, sizeof(*rs));
}

struct redact *
redact_new(const struct redact_set *rs, size_t cap)
{
	struct redact	*r;
	size_t		 ring = 1;

	if (!rs->compiled) {
		errno = EINVAL;
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->rs = rs;
	r->cap = cap;
	if (rs->npatterns == 0)
		return r;
	while (ring <= rs->maxlen)
		ring <<= 1;
	r->rmask = ring - 1;
	r->bufsz = (REDACT_MAXWS + 1) * (rs->maxlen + 1);
	if ((r->buf = malloc(r->bufsz)) == NULL ||
	    (r->ring = calloc(ring, sizeof(*r->ring))) == NULL) {
		free(r->buf);
		free(r);
		return NULL;
	}
	r->w = r->buf;
	return r;
}

/* The cap cuts the redacted stream, so no secret byte can pass it. */
static void
redact_emit(struct redact *r, const void *p, size_t len, redact_out_fn out,
    void *arg)
{
	if (len == 0)
		return;
	if (len > r->cap - r->emitted) {
		len = r->cap - r->emitted;
		r->truncated = 1;
		if (len == 0)
			return;
	}
	out(arg, p, len);
	r->emitted += len;
}

/* Stream bytes [a, b): the held-back tail first, then the window. */
static void
redact_emit_range(struct redact *r, uint64_t a, uint64_t b,
    redact_out_fn out, void *arg)
{
	uint64_t	 held = r->base + r->buflen, m;

	if (a < held && r->w != r->buf) {
		m = b < held ? b : held;
		redact_emit(r, r->buf + (a - r->base), m - a, out, arg);
		a = m;
	}
	if (a < b)
		redact_emit(r, r->w + (a - r->wbase), b - a, out, arg);
}

/* Transition of the automaton. */
static inline uint32_t
rs_step(const struct redact_set *rs, uint32_t q, uint8_t c)
{
	uint32_t	 k = rs->cls[c], e;

	if (k == 0)
		return 0;
	while (q >= rs->ndense) {
		for (e = rs->estart[q]; e < rs->estart[q + 1]; e++)
			if (rs->ebyte[e] == c)
				return rs->eto[e];
		q = rs->fail[q];
	}
	return rs->dense[(size_t)q * rs->nclasses + k];
}

/*
 * A probe at p that holds whitespace: the W-gram a match stepping over
 * it would show is the next W bytes that are not whitespace.  1 when a
 * match may be there (or the window cannot tell), 0 when not.
 */
static int
rs_probe_ws(const struct redact_set *rs, const uint8_t *w, size_t p,
    size_t n)
{
	uint32_t	 v = 0, h, got = 0, ws = 0;

	while (got < rs->fwidth) {
		if (p >= n)
			return 1;
		if (REDACT_ISWS(w[p])) {
			if (++ws > REDACT_MAXWS)
				return 1;
			p++;
			continue;
		}
		ws = 0;
		v |= (uint32_t)w[p++] << (8 * got++);
	}
	h = REDACT_FILTER_HASH(v);
	return (rs->filter[h >> 3] >> (h & 7)) & 1;
}

/*
 * 0x80 in each byte of x that is whitespace (0x20, or 0x09 to 0x0d), and
 * only there: the space by the exact zero byte test, the others by two
 * compares of the low 7 bits, no carry crossing a byte.
 */
static inline uint64_t
rs_ws64(uint64_t x)
{
	uint64_t	 t = x ^ (0x20 * RS_ONES64), lo = x & ~RS_HIGH64;
	uint64_t	 sp, ctl;

	sp = ~(((t & ~RS_HIGH64) + ~RS_HIGH64) | t);
	ctl = (lo + (0x80 - 0x09) * RS_ONES64) &
	    ~(lo + (0x80 - 0x0e) * RS_ONES64) & ~x;
	return (sp | ctl) & RS_HIGH64;
}

/*
 * The 8 bytes of x (the first is the lowest) with their whitespace
 * squeezed out, the rest moved down in order; *nws is how many went.
 * Without a branch: each byte moves down by the whitespace before it,
 * in steps of 1, 2 and 4 bytes (a compress network: bytes never meet).
 */
static inline uint64_t
rs_squeeze(uint64_t x, uint32_t *nws)
{
	uint64_t	 ind, c, mv;
	int		 k;

	ind = rs_ws64(x) >> 7;
	c = ind * RS_ONES64;		/* whitespace up to each byte */
	*nws = c >> 56;
	ind = (ind << 8) - ind;		/* 0xff in each */
	x &= ~ind;
	c &= ~ind;
	for (k = 0; k < 3; k++) {
		mv = (c >> k) & RS_ONES64;
		mv = (mv << 8) - mv;
		x = (x & ~mv) | ((x & mv) >> (8 << k));
		c = (c & ~mv) | ((c & mv) >> (8 << k));
	}
	return x;
}

#ifdef __SSE2__
/*
 * rs_squeeze() of two words at once, one in each half of x: the grams of
 * two probes in the low 32 bits of each half, *nws the whitespace of the
 * first (low 16 bits) and of the second.
 */
static inline __m128i
rs_squeeze2(__m128i x, uint32_t *nws)
{
	const __m128i	 one = _mm_set1_epi8(1);
	__m128i		 ws, c, mv, bit;

	ws = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')),
	    _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('\t' - 1)),
	    _mm_cmpgt_epi8(_mm_set1_epi8('\r' + 1), x)));
	c = _mm_and_si128(ws, one);
	c = _mm_add_epi8(c, _mm_slli_epi64(c, 8));
	c = _mm_add_epi8(c, _mm_slli_epi64(c, 16));
	c = _mm_add_epi8(c, _mm_slli_epi64(c, 32));
	*nws = (uint32_t)_mm_extract_epi16(c, 3) >> 8 |
	    ((uint32_t)_mm_extract_epi16(c, 7) >> 8) << 16;
	x = _mm_andnot_si128(ws, x);
	c = _mm_andnot_si128(ws, c);
	bit = one;
	mv = _mm_cmpeq_epi8(_mm_and_si128(c, bit), bit);
	x = _mm_or_si128(_mm_andnot_si128(mv, x),
	    _mm_srli_epi64(_mm_and_si128(mv, x), 8));
	c = _mm_or_si128(_mm_andnot_si128(mv, c),
	    _mm_srli_epi64(_mm_and_si128(mv, c), 8));
	bit = _mm_add_epi8(bit, bit);
	mv = _mm_cmpeq_epi8(_mm_and_si128(c, bit), bit);
	x = _mm_or_si128(_mm_andnot_si128(mv, x),
	    _mm_srli_epi64(_mm_and_si128(mv, x), 16));
	c = _mm_or_si128(_mm_andnot_si128(mv, c),
	    _mm_srli_epi64(_mm_and_si128(mv, c), 16));
	bit = _mm_add_epi8(bit, bit);
	mv = _mm_cmpeq_epi8(_mm_and_si128(c, bit), bit);
	return _mm_or_si128(_mm_andnot_si128(mv, x),
	    _mm_srli_epi64(_mm_and_si128(mv, x), 32));
}
#endif

/*
 * The first position from i where a pattern may start, or where fewer
 * than 8 bytes remain after a probe, so the automaton decides alone.
 * A probe hashes the first W bytes at it that are not whitespace (the
 * 8 bytes there squeezed, no branch on the text); four go at once, with
 * one branch for all (with SSE2, two in each vector).  Only with fewer
 * than W such bytes in the 8 does a probe look further, byte by byte.
 */
static inline size_t
rs_skip(struct redact *r, size_t i, size_t n)
{
	const struct redact_set	*rs = r->rs;
	const uint8_t		*f = rs->filter, *w = r->w;
	uint32_t		 m = rs->fmask, k = rs->fstride, h0, h1, h2, h3;
	uint32_t		 lim = 8 - rs->fwidth, n0, n1, j;
	uint64_t		 x0;
	size_t			 p = i + k - 1;
#ifdef __SSE2__
	__m128i			 v0, v1;
	uint32_t		 lim2 = lim | lim << 16, hi = 0x80008000U;
#else
	uint64_t		 x1, x2, x3;
	uint32_t		 n2, n3;
#endif

#define LOAD(x, off) do {						\
	memcpy(&(x), w + p + (off), sizeof(x));				\
	(x) = le64toh(x);						\
} while (0)
#define PROBE(h, x, nws) \
	((h) = REDACT_FILTER_HASH((uint32_t)rs_squeeze((x), &(nws)) & m))
#define HASH(h, g)	((h) = REDACT_FILTER_HASH((uint32_t)(g) & m))
#define HIT(h)	((f[(h) >> 3] >> ((h) & 7)) & 1)
	for (;;) {
		while (p + 3 * k + 8 <= n) {
#ifdef __SSE2__
			v0 = _mm_unpacklo_epi64(_mm_loadl_epi64(
			    (const __m128i *)(w + p)), _mm_loadl_epi64(
			    (const __m128i *)(w + p + k)));
			v1 = _mm_unpacklo_epi64(_mm_loadl_epi64(
			    (const __m128i *)(w + p + 2 * k)), _mm_loadl_epi64(
			    (const __m128i *)(w + p + 3 * k)));
			v0 = rs_squeeze2(v0, &n0);
			v1 = rs_squeeze2(v1, &n1);
			HASH(h0, _mm_cvtsi128_si32(v0));
			HASH(h1, _mm_cvtsi128_si32(_mm_srli_si128(v0, 8)));
			HASH(h2, _mm_cvtsi128_si32(v1));
			HASH(h3, _mm_cvtsi128_si32(_mm_srli_si128(v1, 8)));
			/* Either half over lim: its high bit borrows. */
			if ((((lim2 | hi) - n0) & hi) != hi ||
			    (((lim2 | hi) - n1) & hi) != hi ||
			    (HIT(h0) | HIT(h1) | HIT(h2) | HIT(h3)))
				break;
#else
			LOAD(x0, 0);
			LOAD(x1, k);
			LOAD(x2, 2 * k);
			LOAD(x3, 3 * k);
			PROBE(h0, x0, n0);
			PROBE(h1, x1, n1);
			PROBE(h2, x2, n2);
			PROBE(h3, x3, n3);
			if ((n0 > lim) | (n1 > lim) | (n2 > lim) |
			    (n3 > lim) | HIT(h0) | HIT(h1) | HIT(h2) | HIT(h3))
				break;
#endif
			p += 4 * k;
		}
		for (j = 0; j < 4; j++, p += k) {
			if (p + 8 > n)
				return p - (k - 1);
			LOAD(x0, 0);
			PROBE(h0, x0, n0);
			if (n0 > lim ? rs_probe_ws(rs, w, p, n) : HIT(h0))
				return p - (k - 1);
		}
	}
#undef LOAD
#undef PROBE
#undef HASH
#undef HIT
}

static int
rstack_push(struct rstack *s, const void *e, size_t size)
{
	void	*v;
	size_t	 cap;

	if (s->tail == s->cap && s->head > 0) {
		memmove(s->v, (uint8_t *)s->v + s->head * size,
		    (s->tail - s->head) * size);
		s->tail -= s->head;
		s->head = 0;
	}
	if (s->tail == s->cap) {
		cap = s->cap == 0 ? 16 : s->cap * 2;
		if ((v = reallocarray(s->v, cap, size)) == NULL)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	memcpy((uint8_t *)s->v + s->tail++ * size, e, size);
	return 0;
}

/* Matches in progress start at or after this. */
static inline uint64_t
redact_bound(const struct redact *r)
{
	uint32_t	 pend = r->rs->st[r->q].pend;

	return pend == 0 ? r->pos : r->ring[(r->vi - pend) & r->rmask];
}

/* The longest match ending at e starts at s. */
static int
redact_match(struct redact *r, uint64_t s, uint64_t e)
{
	struct rspan	*sp = r->spans.v, nv;
	uint64_t	*st = r->starts.v;

	/* It contains the earlier matches starting at or after s. */
	while (r->starts.tail > r->starts.head && st[r->starts.tail - 1] >= s) {
		r->starts.tail--;
		r->count--;
	}
	if (rstack_push(&r->starts, &s, sizeof(s)) == -1)
		return -1;
	r->count++;
	/* And swallows the spans it overlaps or touches. */
	nv.a = s;
	nv.b = e;
	nv.starred = 0;
	while (r->spans.tail > r->spans.head &&
	    sp[r->spans.tail - 1].b >= s) {
		r->spans.tail--;
		if (sp[r->spans.tail].a < nv.a)
			nv.a = sp[r->spans.tail].a;
		nv.starred |= sp[r->spans.tail].starred;
	}
	return rstack_push(&r->spans, &nv, sizeof(nv));
}

/* Emit what is decided: nothing can start before bound any more. */
static void
redact_settle(struct redact *r, uint64_t bound, int final, redact_out_fn out,
    void *arg)
{
	struct rspan	*f = NULL;
	uint64_t	*st = r->starts.v, lim;

	while (r->spans.head < r->spans.tail) {
		f = (struct rspan *)r->spans.v + r->spans.head;
		if (!final && f->b >= bound) {
			/* Still growing, but its start is known. */
			if (!f->starred && f->a <= bound) {
				redact_emit_range(r, r->done, f->a, out, arg);
				redact_emit(r, REDACT_MASK,
				    sizeof(REDACT_MASK) - 1, out, arg);
				f->starred = 1;
			}
			break;
		}
		if (!f->starred) {
			redact_emit_range(r, r->done, f->a, out, arg);
			redact_emit(r, REDACT_MASK, sizeof(REDACT_MASK) - 1,
			    out, arg);
		}
		r->done = f->b;
		r->spans.head++;
	}
	if (r->spans.head == r->spans.tail) {
		r->spans.head = r->spans.tail = 0;
		lim = final ? r->wbase + r->wlen : bound;
	} else if (f->starred) {
		r->done = f->b;
		lim = r->done;
	} else
		lim = f->a < bound ? f->a : bound;
	if (lim > r->done) {
		redact_emit_range(r, r->done, lim, out, arg);
		r->done = lim;
	}
	/* Counted starts nothing can contain any more. */
	while (r->starts.head < r->starts.tail && st[r->starts.head] < bound)
		r->starts.head++;
	if (r->starts.head == r->starts.tail)
		r->starts.head = r->starts.tail = 0;
}

/* Scan the window from the saved state, then emit what is decided. */
static int
redact_scan(struct redact *r, int final, redact_out_fn out, void *arg)
{
	const struct redact_set	*rs = r->rs;
	const struct rstate	*st = rs->st;
	const uint8_t		*w = r->w;
	uint64_t		*ring = r->ring, rmask = r->rmask;
	uint64_t		 base = r->wbase, end = base + r->wlen;
	uint64_t		 pos = r->pos, guard = r->guard, vi = r->vi, p0;
	uint32_t		 q = r->q, lbrun = r->lbrun, len;
	uint8_t			 c;
	int			 rv = 0;

	for (;;) {
		/*
		 * Nothing deep in progress: skip to where a pattern may
		 * start.  The guard keeps the automaton going until what it
		 * holds starts past the last hit, so the skip moves on.
		 */
		if (st[q].pend < rs->fwidth) {
			p0 = st[q].pend == 0 ? pos :
			    ring[(vi - st[q].pend) & rmask];
			if (p0 >= guard) {
				pos = base + rs_skip(r, p0 - base, r->wlen);
				q = 0;
				lbrun = 0;
				if (pos >= end) {
					pos = end;
					break;
				}
				guard = pos + 1;
			}
		}
		if (pos == end)
			break;
		c = w[pos - base];
		if (REDACT_ISWS(c)) {
			if (q != 0 && ++lbrun > REDACT_MAXWS)
				q = 0;
			pos++;
			continue;
		}
		lbrun = 0;
		q = rs_step(rs, q, c);
		ring[vi++ & rmask] = pos++;
		/* A rescan after a skip finds nothing new before seen. */
		if ((len = st[q].outlen) != 0 && pos > r->seen) {
			r->seen = pos;
			if ((rv = redact_match(r, ring[(vi - len) & rmask],
			    pos)) == -1)
				break;
		}
	}
	r->pos = pos;
	r->guard = guard;
	r->vi = vi;
	r->q = q;
	r->lbrun = lbrun;
	if (rv == -1)
		return -1;
	redact_settle(r, final ? UINT64_MAX : redact_bound(r), final, out,
	    arg);
	return 0;
}

int
redact_write(struct redact *r, const void *p, size_t len, redact_out_fn out,
    void *arg)
{
	const uint8_t	*in = p;
	uint64_t	 keep, from, end;
	size_t		 n, old;

	if (r->finished) {
		errno = EINVAL;
		return -1;
	}
	if (r->rs->npatterns == 0) {
		redact_emit(r, in, len, out, arg);
		return 0;
	}
	if (len == 0)
		return 0;
	/*
	 * Scan the caller's bytes where they are, a chunk at a time so the
	 * stacks stay small.  No skip starts in the tail before them: the
	 * automaton steps on until its match in progress starts in them.
	 */
	r->w = in;
	r->wbase = r->base + r->buflen;
	r->wlen = 0;
	if (r->guard < r->wbase)
		r->guard = r->wbase;
	while (r->wlen < len) {
		n = len - r->wlen;
		r->wlen += n < REDACT_CHUNK ? n : REDACT_CHUNK;
		if (redact_scan(r, 0, out, arg) == -1) {
			/* The window is the caller's: never scan it again. */
			r->finished = 1;
			r->w = r->buf;
			r->wbase = r->base;
			r->wlen = r->buflen;
			return -1;
		}
	}
	/*
	 * Keep only the undecided tail, where a rescan may start: at most
	 * (REDACT_MAXWS + 1) * maxlen bytes, the old tail's end and the
	 * caller's last bytes.
	 */
	keep = redact_bound(r);
	if (r->done < keep)
		keep = r->done;
	end = r->wbase + r->wlen;
	old = 0;
	if (keep < r->wbase) {
		old = r->wbase - keep;
		memmove(r->buf, r->buf + (keep - r->base), old);
	}
	from = keep > r->wbase ? keep : r->wbase;
	memcpy(r->buf + old, in + (from - r->wbase), end - from);
	r->base = keep;
	r->buflen = old + (end - from);
	r->w = r->buf;
	r->wbase = r->base;
	r->wlen = r->buflen;
	return 0;
}

int
redact_finish(struct redact *r, redact_out_fn out, void *arg)
{
	int	 rv;

	if (r->finished) {
		errno = EINVAL;
		return -1;
	}
	r->finished = 1;
	if (r->rs->npatterns == 0)
		return 0;
	rv = redact_scan(r, 1, out, arg);
	explicit_bzero(r->buf, r->bufsz);
	r->buflen = 0;
	return rv;
}

size_t
redact_count(const struct redact *r)
{
	return r->count;
}

int
redact_truncated(const struct redact *r)
{
	return r->truncated;
}

size_t
redact_held(const struct redact *r)
{
	return r->buflen;
}

size_t
redact_emitted(const struct redact *r)
{
	return r->emitted;
}

void
redact_free(struct redact *r)
{
	if (r == NULL)
		return;
	if (r->buf != NULL)
		freezero(r->buf, r->bufsz);
	free(r->ring);
	free(r->spans.v);
	free(r->starts.v);
	freezero(r, sizeof(*r));
}
