/*
 * Run output comes back as UTF-8: ill-formed bytes become U+FFFD, one per
 * maximal subpart, and where the stream was cut does not matter.
 */

#include <sys/types.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atf-c.h>

#include "redact.h"
#include "utf8.h"

#define R	UTF8_REPLACEMENT
/* String literals, which may hold NULs. */
#define CHECK(in, want)	check(in, sizeof(in) - 1, want, sizeof(want) - 1)

struct obuf {
	char		 p[4096];
	size_t		 len;
};

static size_t	 sanitize(const void *, size_t, const size_t *, size_t,
		    char *, size_t);
static void	 check(const char *, size_t, const char *, size_t);
static void	 redact_out(void *, const void *, size_t);
static uint32_t	 rnd(uint32_t *);

/* Sanitize in, cut at the given lengths (cycled), into out. */
static size_t
sanitize(const void *in, size_t n, const size_t *cuts, size_t ncuts,
    char *out, size_t outsz)
{
	struct utf8_state	 st;
	const uint8_t		*p = in;
	size_t			 off = 0, o = 0, k = 0, len, w;

	utf8_init(&st);
	do {
		len = ncuts == 0 ? n - off : cuts[k++ % ncuts];
		if (len > n - off)
			len = n - off;
		ATF_REQUIRE(outsz - o >= UTF8_SANITIZE_BOUND(len));
		w = utf8_sanitize(&st, p + off, len, out + o, outsz - o,
		    off + len == n);
		ATF_REQUIRE(w != (size_t)-1);
		/* Only whole characters ever leave. */
		ATF_REQUIRE(utf8_valid(out + o, w));
		o += w;
		off += len;
	} while (off < n);
	return o;
}

/* in must come out as want, however it is cut. */
static void
check(const char *in, size_t n, const char *want, size_t wantlen)
{
	char	 out[1024];
	size_t	 i, j, cuts[3], one = 1, len;

	len = sanitize(in, n, NULL, 0, out, sizeof(out));
	ATF_REQUIRE_MSG(len == wantlen && memcmp(out, want, len) == 0,
	    "got %.*s want %s", (int)len, out, want);
	ATF_REQUIRE(sanitize(in, n, &one, 1, out, sizeof(out)) == len &&
	    memcmp(out, want, len) == 0);
	for (i = 0; i <= n; i++)
		for (j = 0; j <= n - i; j++) {
			cuts[0] = i;
			cuts[1] = j;
			cuts[2] = n;
			ATF_REQUIRE(sanitize(in, n, cuts, 3, out,
			    sizeof(out)) == len && memcmp(out, want, len) == 0);
		}
}

static void
redact_out(void *arg, const void *buf, size_t len)
{
	struct obuf	*ob = arg;

	ATF_REQUIRE(len <= sizeof(ob->p) - ob->len);
	memcpy(ob->p + ob->len, buf, len);
	ob->len += len;
}

static uint32_t
rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

ATF_TC_WITHOUT_HEAD(valid_text_passes_split_anywhere);
ATF_TC_BODY(valid_text_passes_split_anywhere, tc)
{
	const char	 s[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z\x00"
	    "\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf\xc2\x80";

	check(s, sizeof(s) - 1, s, sizeof(s) - 1);
	ATF_REQUIRE(utf8_valid(s, sizeof(s) - 1));
	CHECK("", "");
}

ATF_TC_WITHOUT_HEAD(invalid_bytes_become_replacement_characters);
ATF_TC_BODY(invalid_bytes_become_replacement_characters, tc)
{
	CHECK("\x80", R);
	CHECK("a\xff" "b\xfe", "a" R "b" R);
	CHECK("\xbf\xbf", R R);
	CHECK("a\xc3(", "a" R "(");
	CHECK("\xe2\x82" "A", R "A");
	CHECK("\xf0\x9f\x98" "\xc3\xa9", R "\xc3\xa9");
	CHECK("\xf5\x80\x80\x80", R R R R);
	ATF_REQUIRE(!utf8_valid("\xe2\x82", 2));
	ATF_REQUIRE(!utf8_valid("\xff", 1));
}

ATF_TC_WITHOUT_HEAD(overlong_encodings_are_replaced);
ATF_TC_BODY(overlong_encodings_are_replaced, tc)
{
	CHECK("\xc0\x80", R R);
	CHECK("\xc1\xbf", R R);
	CHECK("\xe0\x80\x80", R R R);
	CHECK("\xe0\x9f\xbf", R R R);
	CHECK("\xf0\x80\x80\x80", R R R R);
	CHECK("\xf0\x8f\xbf\xbf", R R R R);
	ATF_REQUIRE(!utf8_valid("\xc0\xaf", 2));
}

ATF_TC_WITHOUT_HEAD(surrogates_and_past_max_are_replaced);
ATF_TC_BODY(surrogates_and_past_max_are_replaced, tc)
{
	CHECK("\xed\xa0\x80", R R R);
	CHECK("\xed\xbf\xbf", R R R);
	CHECK("\xed\xa0\x80\xed\xb0\x80", R R R R R R);
	CHECK("\xf4\x90\x80\x80", R R R R);
	ATF_REQUIRE(!utf8_valid("\xed\xa0\x80", 3));
}

ATF_TC_WITHOUT_HEAD(truncated_sequence_at_end_of_stream);
ATF_TC_BODY(truncated_sequence_at_end_of_stream, tc)
{
	struct utf8_state	 st;
	char			 out[64];
	size_t			 n;

	CHECK("ab\xe2\x82", "ab" R);
	CHECK("\xf0\x9f", R);
	/* Not final: held, then completed by the next write. */
	utf8_init(&st);
	n = utf8_sanitize(&st, "ab\xe2\x82", 4, out, sizeof(out), 0);
	ATF_REQUIRE(n == 2 && memcmp(out, "ab", 2) == 0);
	n = utf8_sanitize(&st, "\xac", 1, out, sizeof(out), 0);
	ATF_REQUIRE(n == 3 && memcmp(out, "\xe2\x82\xac", 3) == 0);
	n = utf8_sanitize(&st, "\xc3", 1, out, sizeof(out), 0);
	ATF_REQUIRE_EQ(n, 0);
	n = utf8_sanitize(&st, "", 0, out, sizeof(out), 1);
	ATF_REQUIRE(n == 3 && memcmp(out, R, 3) == 0);
}

ATF_TC_WITHOUT_HEAD(small_output_buffer_is_refused);
ATF_TC_BODY(small_output_buffer_is_refused, tc)
{
	struct utf8_state	 st;
	char			 out[16];

	utf8_init(&st);
	ATF_REQUIRE(utf8_sanitize(&st, "abcd", 4, out, 20, 1) == (size_t)-1);
	ATF_REQUIRE_EQ(errno, ENOSPC);
	ATF_REQUIRE_EQ(utf8_sanitize(&st, "abcd", 2, out, 15, 1), 2);
}

/* Redact first (raw bytes), then sanitize what leaves. */
ATF_TC_WITHOUT_HEAD(invalid_utf8_next_to_a_redacted_secret);
ATF_TC_BODY(invalid_utf8_next_to_a_redacted_secret, tc)
{
	const char		*secret = "p\xc3\xa4ssw\xc3\xb6rd-1234";
	const char		*text = "\xff" "p\xc3\xa4ssw\xc3\xb6rd-1234"
	    "\xc3" "p\xc3\xa4ssw\xc3\xb6rd-1234" "\xa9 \xe2\x82"
	    "p\xc3\xa4ssw\xc3\xb6rd-123";
	const char		*want = R "***" R "***" R " " R
	    "p\xc3\xa4ssw\xc3\xb6rd-123";
	struct redact_set	*rs;
	struct redact		*r;
	struct obuf		 ob = { .len = 0 };
	char			 out[1024];
	size_t			 i, n = strlen(text), len;

	ATF_REQUIRE((rs = redact_set_new()) != NULL);
	ATF_REQUIRE(redact_set_add(rs, secret, strlen(secret)) == 0);
	ATF_REQUIRE(redact_set_compile(rs) == 0);
	ATF_REQUIRE((r = redact_new(rs, SIZE_MAX)) != NULL);
	for (i = 0; i < n; i++)
		ATF_REQUIRE(redact_write(r, text + i, 1, redact_out, &ob) ==
		    0);
	ATF_REQUIRE(redact_finish(r, redact_out, &ob) == 0);
	ATF_REQUIRE_EQ(redact_count(r), 2);
	redact_free(r);
	redact_set_free(rs);
	len = sanitize(ob.p, ob.len, NULL, 0, out, sizeof(out));
	ATF_REQUIRE_MSG(len == strlen(want) && memcmp(out, want, len) == 0,
	    "got %.*s", (int)len, out);
}

/* Random bytes: the same valid output whatever the cuts. */
ATF_TC_WITHOUT_HEAD(random_input_is_cut_independent);
ATF_TC_BODY(random_input_is_cut_independent, tc)
{
	uint8_t		 in[200];
	char		 whole[700], cut[700];
	size_t		 iter, i, n, cuts[3], a, b;
	uint32_t	 seed = 5;

	for (iter = 0; iter < 5000; iter++) {
		n = rnd(&seed) % sizeof(in);
		for (i = 0; i < n; i++)
			in[i] = iter % 2 ? (uint8_t)"\x80\xbf\xc2\xe0\xed"
			    "\xf0\xf4" "a"[rnd(&seed) % 8] : rnd(&seed);
		for (i = 0; i < 3; i++)
			cuts[i] = rnd(&seed) % 7 + (i == 2);
		a = sanitize(in, n, NULL, 0, whole, sizeof(whole));
		b = sanitize(in, n, cuts, 3, cut, sizeof(cut));
		ATF_REQUIRE(a == b && memcmp(whole, cut, a) == 0);
		ATF_REQUIRE(utf8_valid(whole, a));
		if (utf8_valid(in, n))
			ATF_REQUIRE(a == n && memcmp(whole, in, n) == 0);
	}
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, valid_text_passes_split_anywhere);
	ATF_TP_ADD_TC(tp, invalid_bytes_become_replacement_characters);
	ATF_TP_ADD_TC(tp, overlong_encodings_are_replaced);
	ATF_TP_ADD_TC(tp, surrogates_and_past_max_are_replaced);
	ATF_TP_ADD_TC(tp, truncated_sequence_at_end_of_stream);
	ATF_TP_ADD_TC(tp, small_output_buffer_is_refused);
	ATF_TP_ADD_TC(tp, invalid_utf8_next_to_a_redacted_secret);
	ATF_TP_ADD_TC(tp, random_input_is_cut_independent);
	return atf_no_error();
}
