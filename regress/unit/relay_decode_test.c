/*
 * relay_decode_test: the codings of an upstream's answer undone
 * (relay/relay_decode.c, SPEC.md sections 6a and 10): gzip, x-gzip and
 * deflate (zlib and raw), stacked, as content and transfer codings, at
 * any split of the input and any budget; corrupt and cut streams are
 * errors; codings tregd cannot decode are refused without echoing what
 * the upstream wrote; a bomb never gives more than the budget at once.
 */

#include <atf-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "relay.h"

struct sink {
	unsigned char	*p;
	size_t		 len, size;
	size_t		 call;		/* this write's output */
};

static void
sink_out(void *arg, const void *p, size_t len)
{
	struct sink	*s = arg;

	if (s->len + len > s->size) {
		s->size = (s->len + len) * 2;
		s->p = realloc(s->p, s->size);
		ATF_REQUIRE(s->p != NULL);
	}
	memcpy(s->p + s->len, p, len);
	s->len += len;
	s->call += len;
}

/* data in one coding: bits 31 gzip, 15 zlib, -15 raw. */
static unsigned char *
enc(const unsigned char *data, size_t len, int bits, size_t *outlen)
{
	z_stream	 z;
	unsigned char	*out;
	size_t		 size = len + len / 100 + 64;

	memset(&z, 0, sizeof(z));
	ATF_REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, bits, 8,
	    Z_DEFAULT_STRATEGY) == Z_OK);
	ATF_REQUIRE((out = malloc(size)) != NULL);
	z.next_in = (Bytef *)data;
	z.avail_in = len;
	z.next_out = out;
	z.avail_out = size;
	ATF_REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
	*outlen = z.total_out;
	deflateEnd(&z);
	return (out);
}

static struct rdec *
dec(const char *ce, const char *te)
{
	struct rdec	*d = rdec_new();

	if (te != NULL)
		ATF_REQUIRE(rdec_header(d, 1, te, strlen(te)) == 0);
	if (ce != NULL)
		ATF_REQUIRE(rdec_header(d, 0, ce, strlen(ce)) == 0);
	return (d);
}

/*
 * The encoded bytes in pieces of split, each write with budget: what
 * came out (s), RDEC_DONE or RDEC_ERR.  No write gives more than budget.
 */
static int
run(struct rdec *d, const unsigned char *p, size_t len, size_t split,
    size_t budget, struct sink *s)
{
	size_t	 n, used, b;
	int	 r;

	memset(s, 0, sizeof(*s));
	while (len > 0 || rdec_pending(d)) {
		n = len < split ? len : split;
		b = budget;
		s->call = 0;
		r = rdec_write(d, p, n, &used, &b, sink_out, s);
		ATF_REQUIRE_MSG(s->call <= budget, "%zu > budget %zu",
		    s->call, budget);
		if (r == RDEC_ERR)
			return (r);
		ATF_REQUIRE(used <= n);
		ATF_REQUIRE(r == RDEC_MORE || used == n);
		p += used;
		len -= used;
	}
	do {
		b = budget;
		s->call = 0;
		r = rdec_finish(d, &b, sink_out, s);
		ATF_REQUIRE(s->call <= budget);
	} while (r == RDEC_MORE);
	return (r);
}

static unsigned char *
text(size_t len)
{
	unsigned char	*p;
	size_t		 i;

	ATF_REQUIRE((p = malloc(len)) != NULL);
	for (i = 0; i < len; i++)	/* compressible, not trivially */
		p[i] = "sk_live_0123456789 {\"you_sent\": \"Bearer \"}\n"
		    [(i * 7 + i / 13) % 44];
	return (p);
}

static void
round_trip(const char *ce, const char *te, const unsigned char *e,
    size_t elen, const unsigned char *want, size_t wantlen)
{
	static const size_t	 splits[] = { 1, 2, 3, 7, 1000, 65536 };
	static const size_t	 budgets[] = { 64, 1000, 1 << 20 };
	struct sink		 s;
	struct rdec		*d;
	size_t			 i, j;

	for (i = 0; i < sizeof(splits) / sizeof(splits[0]); i++)
		for (j = 0; j < sizeof(budgets) / sizeof(budgets[0]); j++) {
			d = dec(ce, te);
			ATF_REQUIRE(rdec_active(d));
			ATF_CHECK_EQ_MSG(run(d, e, elen, splits[i],
			    budgets[j], &s), RDEC_DONE, "%s/%s split %zu "
			    "budget %zu", ce, te, splits[i], budgets[j]);
			ATF_CHECK_MSG(s.len == wantlen &&
			    memcmp(s.p, want, wantlen) == 0,
			    "%s/%s split %zu budget %zu: %zu bytes", ce, te,
			    splits[i], budgets[j], s.len);
			free(s.p);
			rdec_free(d);
		}
}

ATF_TC_WITHOUT_HEAD(gzip_zlib_and_raw_deflate_at_any_split_and_budget);
ATF_TC_BODY(gzip_zlib_and_raw_deflate_at_any_split_and_budget, tc)
{
	unsigned char	*t = text(20000), *e;
	size_t		 elen;

	e = enc(t, 20000, 31, &elen);
	round_trip("gzip", NULL, e, elen, t, 20000);
	round_trip("X-GZIP", NULL, e, elen, t, 20000);
	round_trip(NULL, "gzip, chunked", e, elen, t, 20000);
	free(e);
	e = enc(t, 20000, 15, &elen);
	round_trip("deflate", NULL, e, elen, t, 20000);
	free(e);
	e = enc(t, 20000, -15, &elen);
	round_trip("deflate", NULL, e, elen, t, 20000);
	round_trip(" identity , deflate ,", "identity", e, elen, t, 20000);
	free(e);
	free(t);
}

ATF_TC_WITHOUT_HEAD(stacked_codings_are_undone_in_reverse);
ATF_TC_BODY(stacked_codings_are_undone_in_reverse, tc)
{
	unsigned char	*t = text(50000), *e1, *e2, *e3;
	size_t		 l1, l2, l3;

	/* Content-Encoding: deflate, gzip; then Transfer-Encoding: gzip. */
	e1 = enc(t, 50000, 15, &l1);
	e2 = enc(e1, l1, 31, &l2);
	e3 = enc(e2, l2, 31, &l3);
	round_trip("deflate", "gzip, chunked", e2, l2, t, 50000);
	round_trip("deflate, gzip", "gzip", e3, l3, t, 50000);
	free(e1);
	free(e2);
	free(e3);
	free(t);
}

ATF_TC_WITHOUT_HEAD(gzip_members_follow_each_other);
ATF_TC_BODY(gzip_members_follow_each_other, tc)
{
	unsigned char	*t = text(30000), *a, *b, *both;
	size_t		 la, lb;

	a = enc(t, 10000, 31, &la);
	b = enc(t + 10000, 20000, 31, &lb);
	ATF_REQUIRE((both = malloc(la + lb)) != NULL);
	memcpy(both, a, la);
	memcpy(both + la, b, lb);
	round_trip("gzip", NULL, both, la + lb, t, 30000);
	free(a);
	free(b);
	free(both);
	free(t);
}

ATF_TC_WITHOUT_HEAD(corrupt_cut_and_trailing_bytes_are_errors);
ATF_TC_BODY(corrupt_cut_and_trailing_bytes_are_errors, tc)
{
	unsigned char	*t = text(20000), *e, *more;
	struct sink	 s;
	struct rdec	*d;
	size_t		 elen;

	e = enc(t, 20000, 31, &elen);
	d = dec("gzip", NULL);
	ATF_CHECK_EQ(run(d, e, elen - 5, 100, 1 << 20, &s), RDEC_ERR);
	free(s.p);
	rdec_free(d);
	e[elen / 2] ^= 0x55;
	d = dec("gzip", NULL);
	ATF_CHECK_EQ(run(d, e, elen, 100, 1 << 20, &s), RDEC_ERR);
	free(s.p);
	rdec_free(d);
	free(e);
	/* Bytes after a deflate stream's end, a lone byte of a header. */
	e = enc(t, 20000, 15, &elen);
	ATF_REQUIRE((more = malloc(elen + 3)) != NULL);
	memcpy(more, e, elen);
	memcpy(more + elen, "xyz", 3);
	d = dec("deflate", NULL);
	ATF_CHECK_EQ(run(d, more, elen + 3, 100, 1 << 20, &s), RDEC_ERR);
	free(s.p);
	rdec_free(d);
	d = dec("deflate", NULL);
	ATF_CHECK_EQ(run(d, e, 1, 100, 1 << 20, &s), RDEC_ERR);
	free(s.p);
	rdec_free(d);
	/* An empty body is no stream, and no error. */
	d = dec("gzip, deflate", NULL);
	ATF_CHECK_EQ(run(d, e, 0, 100, 1 << 20, &s), RDEC_DONE);
	ATF_CHECK_EQ(s.len, 0);
	free(s.p);
	rdec_free(d);
	free(more);
	free(e);
	free(t);
}

ATF_TC_WITHOUT_HEAD(codings_it_cannot_decode_are_refused_unechoed);
ATF_TC_BODY(codings_it_cannot_decode_are_refused_unechoed, tc)
{
	static const struct {
		int		 te;
		const char	*v;
		const char	*why;
	} c[] = {
		{ 0, "br", "encoded with br:" },
		{ 0, "gzip, zstd", "encoded with zstd:" },
		{ 0, "x-compress", "encoded with x-compress:" },
		{ 1, "br, chunked", "encoded with br:" },
		{ 0, "sk_live_0123456789abcdef", "unknown content coding" },
		{ 1, "sk_live_0123456789abcdef", "unknown transfer coding" },
		{ 0, "gzip;q=1", "unknown content coding" },
		{ 0, "gzip gzip", "unknown content coding" },
		{ 0, "gzip,gzip,deflate,gzip,gzip", "more than 4 times" },
		{ 1, "chunked, gzip", "after chunked" },
		{ 1, "chunked, chunked", "after chunked" },
	};
	struct rdec	*d;
	size_t		 i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		d = rdec_new();
		ATF_CHECK_EQ_MSG(rdec_header(d, c[i].te, c[i].v,
		    strlen(c[i].v)), -1, "%s", c[i].v);
		ATF_REQUIRE(rdec_refused(d) != NULL);
		ATF_CHECK_MSG(strstr(rdec_refused(d), c[i].why) != NULL,
		    "%s: %s", c[i].v, rdec_refused(d));
		ATF_CHECK_MSG(strstr(rdec_refused(d), "sk_live") == NULL,
		    "the upstream's bytes in: %s", rdec_refused(d));
		rdec_free(d);
	}
	/* Identity and chunked alone: nothing to decode. */
	d = dec("identity", "chunked");
	ATF_CHECK(!rdec_active(d));
	ATF_CHECK(rdec_chunked(d));
	ATF_CHECK(rdec_refused(d) == NULL);
	rdec_free(d);
}

ATF_TC_WITHOUT_HEAD(a_bomb_gives_no_more_than_the_budget_at_once);
ATF_TC_BODY(a_bomb_gives_no_more_than_the_budget_at_once, tc)
{
	const size_t	 n = 64 << 20;
	unsigned char	*zeros, *e, *e1;
	struct sink	 s;
	struct rdec	*d;
	size_t		 elen, l1, i;

	ATF_REQUIRE((zeros = calloc(1, n)) != NULL);
	e1 = enc(zeros, n, 31, &l1);
	ATF_REQUIRE(l1 < n / 500);
	e = enc(e1, l1, 31, &elen);	/* a gzip transfer coding over it */
	free(e1);
	d = dec("gzip", "gzip");
	/* run() checks every write against the budget. */
	ATF_CHECK_EQ(run(d, e, elen, elen, 256 * 1024, &s), RDEC_DONE);
	ATF_CHECK_EQ(s.len, n);
	for (i = 0; i < s.len && s.p[i] == 0; i++)
		;
	ATF_CHECK_EQ(i, n);
	free(s.p);
	rdec_free(d);
	free(e);
	free(zeros);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, gzip_zlib_and_raw_deflate_at_any_split_and_budget);
	ATF_TP_ADD_TC(tp, stacked_codings_are_undone_in_reverse);
	ATF_TP_ADD_TC(tp, gzip_members_follow_each_other);
	ATF_TP_ADD_TC(tp, corrupt_cut_and_trailing_bytes_are_errors);
	ATF_TP_ADD_TC(tp, codings_it_cannot_decode_are_refused_unechoed);
	ATF_TP_ADD_TC(tp, a_bomb_gives_no_more_than_the_budget_at_once);
	return (0);
}
