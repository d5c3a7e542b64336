/*
 * The redactor alone: whatever the write boundaries, its output equals
 * the naive reference over the whole stream (regress/lib/redact_ref.c),
 * and no form of a secret survives it, wrapped, separated or overlapped.
 */

#include <sys/types.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atf-c.h>

#include "redact.h"
#include "redact_ref.h"

struct obuf {
	uint8_t		*p;
	size_t		 len;
	size_t		 cap;
};

struct patlist {
	uint8_t		**pat;
	size_t		 *len;
	size_t		  n;
};

static void	 ob_out(void *, const void *, size_t);
static void	 ob_reset(struct obuf *);
static void	 pl_add(void *, const void *, size_t);
static void	 pl_free(struct patlist *);
static size_t	 reference(const struct patlist *, const uint8_t *, size_t,
		    size_t, struct obuf *, int *);
static struct redact_set *mkset(const char **, size_t);
static size_t	 run(const struct redact_set *, const void *, size_t,
		    const size_t *, size_t, size_t, struct obuf *, int *);
static size_t	 run_whole(const struct redact_set *, const char *,
		    struct obuf *);
static uint32_t	 rnd(uint32_t *);
static size_t	 b64(const uint8_t *, size_t, const char *, int, char *);
static int	 contains(const struct obuf *, const void *, size_t);
static void	 check_masked(const struct redact_set *, const char *,
		    size_t, size_t, size_t);
static void	 check_cuts(const struct redact_set *, const char *, size_t,
		    const char *, size_t);
static size_t	 strip(const uint8_t *, size_t, const char *, char *);
static void	 no_run_survives(const struct obuf *, const char *, size_t,
		    size_t);

static const char b64std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void
ob_out(void *arg, const void *buf, size_t len)
{
	struct obuf	*ob = arg;

	ATF_REQUIRE(len > 0);
	if (ob->len + len > ob->cap) {
		ob->cap = (ob->len + len) * 2 + 64;
		ATF_REQUIRE((ob->p = realloc(ob->p, ob->cap)) != NULL);
	}
	memcpy(ob->p + ob->len, buf, len);
	ob->len += len;
}

static void
ob_reset(struct obuf *ob)
{
	ob->len = 0;
}

static void
pl_add(void *arg, const void *pat, size_t len)
{
	struct patlist	*pl = arg;

	ATF_REQUIRE((pl->pat = reallocarray(pl->pat, pl->n + 1,
	    sizeof(*pl->pat))) != NULL);
	ATF_REQUIRE((pl->len = reallocarray(pl->len, pl->n + 1,
	    sizeof(*pl->len))) != NULL);
	ATF_REQUIRE((pl->pat[pl->n] = malloc(len)) != NULL);
	memcpy(pl->pat[pl->n], pat, len);
	pl->len[pl->n++] = len;
}

static void
pl_free(struct patlist *pl)
{
	size_t	 i;

	for (i = 0; i < pl->n; i++)
		free(pl->pat[i]);
	free(pl->pat);
	free(pl->len);
	memset(pl, 0, sizeof(*pl));
}

/* The naive reference, then the cap. */
static size_t
reference(const struct patlist *pl, const uint8_t *in, size_t n, size_t cap,
    struct obuf *ob, int *truncated)
{
	uint8_t	*o;
	size_t	 olen, count;

	count = redact_ref(pl->pat, pl->len, pl->n, in, n, &o, &olen);
	ob_reset(ob);
	if (olen > 0)
		ob_out(ob, o, olen);
	free(o);
	*truncated = ob->len > cap;
	if (ob->len > cap)
		ob->len = cap;
	return count;
}

static struct redact_set *
mkset(const char **secrets, size_t n)
{
	struct redact_set	*rs;
	size_t			 i;

	ATF_REQUIRE((rs = redact_set_new()) != NULL);
	for (i = 0; i < n; i++)
		ATF_REQUIRE(redact_set_add(rs, secrets[i],
		    strlen(secrets[i])) == 0);
	ATF_REQUIRE(redact_set_compile(rs) == 0);
	return rs;
}

/* Feed `in' cut at the given lengths (cycled), then finish. */
static size_t
run(const struct redact_set *rs, const void *in, size_t n,
    const size_t *cuts, size_t ncuts, size_t cap, struct obuf *ob,
    int *truncated)
{
	struct redact	*r;
	const uint8_t	*p = in;
	uint8_t		*chunk;
	size_t		 off = 0, k = 0, len, count;

	ob_reset(ob);
	ATF_REQUIRE((r = redact_new(rs, cap)) != NULL);
	while (off < n) {
		len = ncuts == 0 ? n - off : cuts[k++ % ncuts];
		if (len > n - off)
			len = n - off;
		/* A copy, wiped after the call: nothing of it may be used. */
		ATF_REQUIRE((chunk = malloc(len == 0 ? 1 : len)) != NULL);
		memcpy(chunk, p + off, len);
		ATF_REQUIRE(redact_write(r, chunk, len, ob_out, ob) == 0);
		memset(chunk, '\n', len);
		free(chunk);
		/* The held-back tail stays bounded. */
		ATF_REQUIRE_MSG(redact_held(r) <= (REDACT_MAXWS + 1) *
		    redact_set_maxlen(rs), "%zu held, maxlen %zu",
		    redact_held(r), redact_set_maxlen(rs));
		off += len;
	}
	ATF_REQUIRE(redact_finish(r, ob_out, ob) == 0);
	ATF_REQUIRE_EQ(redact_emitted(r), ob->len);
	count = redact_count(r);
	if (truncated != NULL)
		*truncated = redact_truncated(r);
	redact_free(r);
	return count;
}

static size_t
run_whole(const struct redact_set *rs, const char *in, struct obuf *ob)
{
	size_t	 count;

	count = run(rs, in, strlen(in), NULL, 0, SIZE_MAX, ob, NULL);
	ob_out(ob, "", 1);
	ob->len--;
	return count;
}

static uint32_t
rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* A plain base64 encoder, written independently of redact.c. */
static size_t
b64(const uint8_t *in, size_t n, const char *alpha, int pad, char *out)
{
	size_t		 i, o = 0;
	uint32_t	 v;

	for (i = 0; i + 3 <= n; i += 3) {
		v = in[i] << 16 | in[i + 1] << 8 | in[i + 2];
		out[o++] = alpha[v >> 18];
		out[o++] = alpha[(v >> 12) & 63];
		out[o++] = alpha[(v >> 6) & 63];
		out[o++] = alpha[v & 63];
	}
	if (n - i == 1) {
		v = in[i] << 16;
		out[o++] = alpha[v >> 18];
		out[o++] = alpha[(v >> 12) & 63];
		if (pad) {
			out[o++] = '=';
			out[o++] = '=';
		}
	} else if (n - i == 2) {
		v = in[i] << 16 | in[i + 1] << 8;
		out[o++] = alpha[v >> 18];
		out[o++] = alpha[(v >> 12) & 63];
		out[o++] = alpha[(v >> 6) & 63];
		if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static int
contains(const struct obuf *ob, const void *needle, size_t len)
{
	/* memmem's haystack must not be NULL, even with a length of 0. */
	return ob->p != NULL && memmem(ob->p, ob->len, needle, len) != NULL;
}

/*
 * `text' (with no '*') must come out as text[0, a) "***" text[b, n) with
 * one mask covering text[lo, hi).
 */
static void
check_masked(const struct redact_set *rs, const char *text, size_t n,
    size_t lo, size_t hi)
{
	struct obuf	 ob = { 0 };
	const uint8_t	*star;
	size_t		 a, b;

	ATF_REQUIRE_EQ(run(rs, text, n, NULL, 0, SIZE_MAX, &ob, NULL), 1);
	star = memmem(ob.p, ob.len, "***", 3);
	ATF_REQUIRE(star != NULL);
	a = star - ob.p;
	b = n - (ob.len - a - 3);
	ATF_REQUIRE_MSG(a <= lo && b >= hi, "%.*s: masked [%zu,%zu) but the "
	    "secret is [%zu,%zu)", (int)n, text, a, b, lo, hi);
	ATF_REQUIRE(memcmp(ob.p, text, a) == 0);
	ATF_REQUIRE(memcmp(star + 3, text + b, n - b) == 0);
	free(ob.p);
}

/*
 * Whole, cut in two at every byte position, and one byte at a time:
 * always want, and count matches.
 */
static void
check_cuts(const struct redact_set *rs, const char *text, size_t n,
    const char *want, size_t count)
{
	struct obuf	 ob = { 0 };
	size_t		 i, cuts[2], one = 1;

	for (i = 0; i <= n + 1; i++) {
		cuts[0] = i;
		cuts[1] = n;
		if (i == n + 1)
			ATF_REQUIRE_EQ_MSG(run(rs, text, n, &one, 1, SIZE_MAX,
			    &ob, NULL), count, "one byte at a time");
		else
			ATF_REQUIRE_EQ_MSG(run(rs, text, n, i == 0 ? NULL :
			    cuts, i == 0 ? 0 : 2, SIZE_MAX, &ob, NULL), count,
			    "cut at %zu", i);
		ATF_REQUIRE_MSG(ob.len == strlen(want) &&
		    memcmp(ob.p, want, ob.len) == 0, "cut at %zu: %.*s, "
		    "not %s", i, (int)ob.len, ob.p, want);
	}
	free(ob.p);
}

/* p without the bytes in drop; out has room for n + 1. */
static size_t
strip(const uint8_t *p, size_t n, const char *drop, char *out)
{
	size_t	 i, o = 0;

	for (i = 0; i < n; i++)
		if (strchr(drop, p[i]) == NULL || p[i] == '\0')
			out[o++] = p[i];
	out[o] = '\0';
	return o;
}

/* No run of `run' bytes of secret[0, len) is left in ob. */
static void
no_run_survives(const struct obuf *ob, const char *secret, size_t len,
    size_t run)
{
	size_t	 i;

	for (i = 0; i + run <= len; i++)
		ATF_REQUIRE_MSG(!contains(ob, secret + i, run), "%.*s "
		    "survived in %.*s", (int)run, secret + i, (int)ob->len,
		    ob->p);
}

ATF_TC_WITHOUT_HEAD(empty_set_passes_bytes_through);
ATF_TC_BODY(empty_set_passes_bytes_through, tc)
{
	struct redact_set	*rs;
	struct obuf		 ob = { 0 };
	const char		*text = "nothing to hide\n\xff\x00 here";
	size_t			 cuts[] = { 1, 3 };
	int			 trunc;

	rs = mkset(NULL, 0);
	ATF_REQUIRE(redact_set_add(rs, "x", 1) == -1);
	ATF_REQUIRE_EQ(errno, EINVAL);
	ATF_REQUIRE_EQ(redact_set_npatterns(rs), 0);
	ATF_REQUIRE_EQ(run(rs, text, 22, cuts, 2, SIZE_MAX, &ob, &trunc), 0);
	ATF_REQUIRE_EQ(ob.len, 22);
	ATF_REQUIRE(memcmp(ob.p, text, 22) == 0);
	ATF_REQUIRE(!trunc);
	ATF_REQUIRE_EQ(run(rs, text, 22, cuts, 2, 5, &ob, &trunc), 0);
	ATF_REQUIRE_EQ(ob.len, 5);
	ATF_REQUIRE(trunc);
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(short_secret_is_masked_raw_only);
ATF_TC_BODY(short_secret_is_masked_raw_only, tc)
{
	const char		*s[] = { "pa/ss7", "" };
	struct redact_set	*rs = mkset(s, 2);
	struct obuf		 ob = { 0 };

	ATF_REQUIRE_EQ(redact_set_npatterns(rs), 1);
	ATF_REQUIRE_EQ(redact_set_maxlen(rs), 6);
	ATF_REQUIRE_EQ(run_whole(rs, "a pa/ss7 pa%2Fss7 70612f7373 "
	    "cGEvc3M3", &ob), 1);
	ATF_REQUIRE_STREQ((char *)ob.p, "a *** pa%2Fss7 70612f7373 cGEvc3M3");
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(secret_split_at_every_byte_position);
ATF_TC_BODY(secret_split_at_every_byte_position, tc)
{
	const char		*s[] = { "hunter2-is-my-password" };
	const char		*text = "login: hunter2-is-my-password ok "
	    "hunter2-is-my-passwor hunter2-is-my-password";
	const char		*want = "login: *** ok hunter2-is-my-passwor ***";
	struct redact_set	*rs = mkset(s, 1);
	struct obuf		 ob = { 0 };
	size_t			 n = strlen(text), i, j, cuts[3];

	for (i = 0; i <= n; i++) {
		cuts[0] = i;
		cuts[1] = n;
		ATF_REQUIRE_EQ(run(rs, text, n, cuts, 2, SIZE_MAX, &ob,
		    NULL), 2);
		ATF_REQUIRE_EQ(ob.len, strlen(want));
		ATF_REQUIRE(memcmp(ob.p, want, ob.len) == 0);
		/* And cut twice. */
		for (j = 0; j <= n - i; j += 3) {
			cuts[0] = i;
			cuts[1] = j;
			cuts[2] = n;
			ATF_REQUIRE_EQ(run(rs, text, n, cuts, 3, SIZE_MAX,
			    &ob, NULL), 2);
			ATF_REQUIRE(ob.len == strlen(want) &&
			    memcmp(ob.p, want, ob.len) == 0);
		}
	}
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(secret_written_one_byte_at_a_time);
ATF_TC_BODY(secret_written_one_byte_at_a_time, tc)
{
	const char		*s[] = { "sk_live_0123456789abcdef", "Zq" };
	const char		*text = "key=sk_live_0123456789abcdef;Zq;"
	    "c2tfbGl2ZV8wMTIzNDU2Nzg5YWJjZGVm\n";
	const char		*want = "key=***;***;***\n";
	struct redact_set	*rs = mkset(s, 2);
	struct obuf		 ob = { 0 };
	size_t			 one = 1;

	ATF_REQUIRE_EQ(run(rs, text, strlen(text), &one, 1, SIZE_MAX, &ob,
	    NULL), 3);
	ATF_REQUIRE_EQ(ob.len, strlen(want));
	ATF_REQUIRE(memcmp(ob.p, want, ob.len) == 0);
	redact_set_free(rs);
	free(ob.p);
}

/*
 * The start filter takes any byte from 0x08 to 0x0f in a probe for a
 * line break: tabs and form feeds beside a long secret change nothing.
 */
ATF_TC_WITHOUT_HEAD(secret_among_tabs_and_control_bytes_is_masked);
ATF_TC_BODY(secret_among_tabs_and_control_bytes_is_masked, tc)
{
	const char		*s[] = { "tok_9f8e7d6c5b4a39281706" };
	const char		*text = "a\tb\t\ttok_9f8e7d6c5b4a39281706\t\v"
	    "\f\bx\x0e\x0f\ttok_9f8e7d6c5b4a3928170\ttok_9f8e7d6c5b4a3928"
	    "\n1706\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
	const char		*want = "a\tb\t\t***\t\v\f\bx\x0e\x0f\t"
	    "tok_9f8e7d6c5b4a3928170\t***\t\t\t\t\t\t\t\t\t\t\t\t"
	    "\t\t\t\t\t\t\t\t\t\t";
	struct redact_set	*rs = mkset(s, 1);

	check_cuts(rs, text, strlen(text), want, 2);
	redact_set_free(rs);
}

/* A write is scanned in place: its buffer is free once the call returns. */
ATF_TC_WITHOUT_HEAD(written_buffer_is_not_used_after_the_call);
ATF_TC_BODY(written_buffer_is_not_used_after_the_call, tc)
{
	const char		*s[] = { "sk_live_0123456789abcdef" };
	struct redact_set	*rs = mkset(s, 1);
	struct redact		*r;
	struct obuf		 ob = { 0 };
	char			 buf[64];

	ATF_REQUIRE((r = redact_new(rs, SIZE_MAX)) != NULL);
	memcpy(buf, "key=sk_live_0123", 16);
	ATF_REQUIRE(redact_write(r, buf, 16, ob_out, &ob) == 0);
	memset(buf, 'Z', sizeof(buf));
	memcpy(buf, "456789abcdef ok sk_live_01", 26);
	ATF_REQUIRE(redact_write(r, buf, 26, ob_out, &ob) == 0);
	memset(buf, 'Z', sizeof(buf));
	ATF_REQUIRE(redact_write(r, "23", 2, ob_out, &ob) == 0);
	ATF_REQUIRE(redact_finish(r, ob_out, &ob) == 0);
	ATF_REQUIRE_EQ(redact_count(r), 1);
	ATF_REQUIRE_MSG(ob.len == 23 &&
	    memcmp(ob.p, "key=*** ok sk_live_0123", 23) == 0, "%.*s",
	    (int)ob.len, ob.p);
	redact_free(r);
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(overlapping_secrets_mask_their_union);
ATF_TC_BODY(overlapping_secrets_mask_their_union, tc)
{
	const char		*s[] = { "abcdefgh12", "defgh12345" };
	struct redact_set	*rs = mkset(s, 2);
	struct obuf		 ob = { 0 };

	ATF_REQUIRE_EQ(run_whole(rs, "xxabcdefgh12345yy", &ob), 2);
	ATF_REQUIRE_STREQ((char *)ob.p, "xx***yy");
	ATF_REQUIRE_EQ(run_whole(rs, "xxabcdefgh1defgh12345yy", &ob), 1);
	ATF_REQUIRE_STREQ((char *)ob.p, "xxabcdefgh1***yy");
	/* Touching spans are one. */
	ATF_REQUIRE_EQ(run_whole(rs, "abcdefgh12defgh12345", &ob), 2);
	ATF_REQUIRE_STREQ((char *)ob.p, "***");
	ATF_REQUIRE_EQ(run_whole(rs, "abcdefgh12 defgh12345", &ob), 2);
	ATF_REQUIRE_STREQ((char *)ob.p, "*** ***");
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(nested_secrets_mask_longest_match);
ATF_TC_BODY(nested_secrets_mask_longest_match, tc)
{
	const char		*s[] = { "secretvalue", "secretvalue-long",
	    "tvalu" };
	struct redact_set	*rs = mkset(s, 3);
	struct obuf		 ob = { 0 };
	size_t			 one = 1;

	ATF_REQUIRE_EQ(run_whole(rs, "a secretvalue-long b secretvalue c "
	    "secretvalue-lon", &ob), 3);
	ATF_REQUIRE_STREQ((char *)ob.p, "a *** b *** c ***-lon");
	ATF_REQUIRE_EQ(run_whole(rs, "secrettvalue", &ob), 1);
	ATF_REQUIRE_STREQ((char *)ob.p, "secret***e");
	ATF_REQUIRE_EQ(run(rs, "secretvalue-long", 16, &one, 1, SIZE_MAX,
	    &ob, NULL), 1);
	ATF_REQUIRE(ob.len == 3 && memcmp(ob.p, "***", 3) == 0);
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(duplicate_forms_are_stored_once);
ATF_TC_BODY(duplicate_forms_are_stored_once, tc)
{
	const char		*one[] = { "abcdefghijkl" };
	const char		*two[] = { "abcdefghijkl", "abcdefghijkl" };
	struct redact_set	*a = mkset(one, 1), *b = mkset(two, 2);

	ATF_REQUIRE(redact_set_npatterns(a) > 8);
	ATF_REQUIRE_EQ(redact_set_npatterns(a), redact_set_npatterns(b));
	ATF_REQUIRE_EQ(redact_set_maxlen(a), 36);	/* %XX */
	redact_set_free(a);
	redact_set_free(b);
}

/* Each form is built here independently and must come out masked. */
ATF_TC_WITHOUT_HEAD(every_encoded_form_is_masked);
ATF_TC_BODY(every_encoded_form_is_masked, tc)
{
	const char		*secret = "p@ss w/\"o\\rd\x01\t+~x";
	const char		*s[] = { secret };
	const char		*forms[] = {
		"p%40ss%20w%2F%22o%5Crd%01%09%2B~x",
		"p%40ss+w%2F%22o%5Crd%01%09%2B~x",
		"p%40ss%20w%2f%22o%5crd%01%09%2b~x",
		"%70%40%73%73%20%77%2F%22%6F%5C%72%64%01%09%2B%7E%78",
		"%70%40%73%73%20%77%2f%22%6f%5c%72%64%01%09%2b%7e%78",
		"p@ss w/\\\"o\\\\rd\\u0001\\t+~x",
		"p@ss w\\/\\\"o\\\\rd\\u0001\\t+~x",
		"7040737320772F226F5C72640109-2B7E78",
		"7040737320772f226f5c726401092b7e78",
		"7040737320772F226F5C726401092B7E78",
		"cEBzcyB3LyJvXHJkAQkrfng=",
		"cEBzcyB3LyJvXHJkAQkrfng",
		"cEBzcyB3LyJvXHJkAQkrfn",
	};
	struct redact_set	*rs = mkset(s, 1);
	struct obuf		 ob = { 0 };
	char			 text[256];
	size_t			 i, n;

	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		if (strchr(forms[i], '-') != NULL && forms[i][0] == '7')
			continue;	/* a near miss, below */
		n = snprintf(text, sizeof(text), "<%s>", forms[i]);
		ATF_REQUIRE_EQ_MSG(run(rs, text, n, NULL, 0, SIZE_MAX, &ob,
		    NULL), 1, "form %s", forms[i]);
		ATF_REQUIRE_MSG(ob.len == 5 && memcmp(ob.p, "<***>", 5) == 0,
		    "form %s came out as %.*s", forms[i], (int)ob.len, ob.p);
	}
	/* A hex run broken by other than whitespace is no form of it. */
	ATF_REQUIRE_EQ(run_whole(rs, forms[7], &ob), 0);
	redact_set_free(rs);

	/* \u escapes in either case, as jansson and Python write them. */
	s[0] = "esc\x1b[0m-key";
	rs = mkset(s, 1);
	ATF_REQUIRE_EQ(run_whole(rs, "\"esc\\u001b[0m-key\" "
	    "\"esc\\u001B[0m-key\" esc%1B%5B0m-key esc%1b%5b0m-key", &ob), 4);
	ATF_REQUIRE_STREQ((char *)ob.p, "\"***\" \"***\" *** ***");
	redact_set_free(rs);
	free(ob.p);
}

/*
 * Base64 of random data around the secret, at every alignment: every
 * character that depends only on secret bytes is under the mask.
 */
ATF_TC_WITHOUT_HEAD(base64_is_masked_at_every_alignment);
ATF_TC_BODY(base64_is_masked_at_every_alignment, tc)
{
	const char		*s[] = { "0123456789", "tok-ABCDEFGHIJK\xfe",
	    "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7" };
	struct redact_set	*rs = mkset(s, 3);
	uint8_t			 data[64];
	char			 enc[128];
	uint32_t		 seed = 7;
	size_t			 k, pre, post, len, n, i, lo, hi, a;
	int			 pad;

	for (k = 0; k < 3; k++) {
		len = strlen(s[k]);
		for (pre = 0; pre < 6; pre++)
			for (post = 0; post < 6; post++)
				for (a = 0; a < 4; a++) {
					pad = a & 1;
					for (i = 0; i < pre + post; i++)
						data[i < pre ? i : i + len] =
						    rnd(&seed);
					memcpy(data + pre, s[k], len);
					n = b64(data, pre + len + post, a < 2 ?
					    b64std : b64url, pad, enc);
					/* Characters made of secret bits. */
					lo = (8 * pre + 5) / 6;
					hi = 8 * (pre + len) / 6;
					check_masked(rs, enc, n, lo, hi);
				}
	}
	redact_set_free(rs);
}

ATF_TC_WITHOUT_HEAD(every_line_of_a_multiline_secret_is_masked);
ATF_TC_BODY(every_line_of_a_multiline_secret_is_masked, tc)
{
	const char		*s[] = { "-----BEGIN KEY-----\r\n"
	    "MIIEvQIBADANBgkqhkiG9w0B\r\nshort\nAQEFAASCBKcwggSjAgEAAoIB\n"
	    "-----END KEY-----\n" };
	struct redact_set	*rs = mkset(s, 1);
	struct obuf		 ob = { 0 };

	ATF_REQUIRE_EQ(run_whole(rs, "got MIIEvQIBADANBgkqhkiG9w0B and "
	    "AQEFAASCBKcwggSjAgEAAoIB\r\nand -----END KEY----- and short", &ob),
	    3);
	ATF_REQUIRE_STREQ((char *)ob.p, "got *** and ***\r\nand *** and "
	    "short");
	/* The final line break is no byte of the match. */
	ATF_REQUIRE_EQ(run_whole(rs, s[0], &ob), 1);
	ATF_REQUIRE_STREQ((char *)ob.p, "***\n");
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(secret_crossing_the_output_cap_does_not_leak);
ATF_TC_BODY(secret_crossing_the_output_cap_does_not_leak, tc)
{
	const char		*s[] = { "SECRETSECRET" };
	const char		*text = "hello SECRETSECRET world SECRETSECRET";
	const char		*full = "hello *** world ***";
	struct redact_set	*rs = mkset(s, 1);
	struct obuf		 ob = { 0 };
	size_t			 cap, one = 1, n = strlen(text);
	int			 trunc;

	for (cap = 0; cap <= strlen(full) + 1; cap++) {
		/* Counted even where the output was dropped. */
		ATF_REQUIRE_EQ(run(rs, text, n, &one, 1, cap, &ob, &trunc), 2);
		ATF_REQUIRE_EQ(ob.len, cap < strlen(full) ? cap :
		    strlen(full));
		/* At cap 0 nothing came out: ob.p is still NULL. */
		ATF_REQUIRE(ob.len == 0 || memcmp(ob.p, full, ob.len) == 0);
		ATF_REQUIRE_EQ(trunc, cap < strlen(full));
		ATF_REQUIRE(!contains(&ob, "S", 1));
	}
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(count_is_the_number_of_matches_not_contained);
ATF_TC_BODY(count_is_the_number_of_matches_not_contained, tc)
{
	const char		*s[] = { "aaaaaaaa", "xyz" };
	struct redact_set	*rs = mkset(s, 2);
	struct obuf		 ob = { 0 };

	/* 12 overlapping matches in 19 a's, one span. */
	ATF_REQUIRE_EQ(run_whole(rs, "aaaaaaaaaaaaaaaaaaa xyzxyz xy.z "
	    "YWFhYWFhYWE=", &ob), 15);
	ATF_REQUIRE_STREQ((char *)ob.p, "*** *** xy.z ***");
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(invalid_utf8_around_a_secret_is_kept);
ATF_TC_BODY(invalid_utf8_around_a_secret_is_kept, tc)
{
	const char		*s[] = { "\xc3\xa9t\xe9-secret\xff" };
	const char		*text = "\xff\xc3\xc3\xa9t\xe9-secret\xff\xc3"
	    "\xa9\x80";
	struct redact_set	*rs = mkset(s, 1);
	struct obuf		 ob = { 0 };
	size_t			 one = 1;

	ATF_REQUIRE_EQ(run(rs, text, strlen(text), &one, 1, SIZE_MAX, &ob,
	    NULL), 1);
	ATF_REQUIRE(ob.len == 8 &&
	    memcmp(ob.p, "\xff\xc3***\xc3\xa9\x80", 8) == 0);
	redact_set_free(rs);
	free(ob.p);
}

ATF_TC_WITHOUT_HEAD(misuse_is_refused);
ATF_TC_BODY(misuse_is_refused, tc)
{
	const char		*s[] = { "abc" };
	struct redact_set	*rs = mkset(s, 1), *raw;
	struct redact		*r;
	struct obuf		 ob = { 0 };

	ATF_REQUIRE(redact_set_add(rs, "def", 3) == -1 && errno == EINVAL);
	ATF_REQUIRE(redact_set_compile(rs) == -1 && errno == EINVAL);
	ATF_REQUIRE((raw = redact_set_new()) != NULL);
	ATF_REQUIRE(redact_new(raw, 10) == NULL && errno == EINVAL);
	ATF_REQUIRE(redact_set_foreach(raw, pl_add, NULL) == -1);
	redact_set_free(raw);
	ATF_REQUIRE((r = redact_new(rs, SIZE_MAX)) != NULL);
	ATF_REQUIRE(redact_write(r, "ab", 2, ob_out, &ob) == 0);
	ATF_REQUIRE(redact_finish(r, ob_out, &ob) == 0);
	ATF_REQUIRE(redact_finish(r, ob_out, &ob) == -1 && errno == EINVAL);
	ATF_REQUIRE(redact_write(r, "c", 1, ob_out, &ob) == -1);
	ATF_REQUIRE(ob.len == 2 && memcmp(ob.p, "ab", 2) == 0);
	redact_free(r);
	redact_set_free(rs);
	free(ob.p);
}

/*
 * Random secrets over a small alphabet, so matches overlap and nest all
 * the time, random text salted with pieces of the patterns, random write
 * sizes and caps: the stream must equal the naive reference.
 */
ATF_TC_WITHOUT_HEAD(random_streams_equal_the_reference);
ATF_TC_BODY(random_streams_equal_the_reference, tc)
{
	struct redact_set	*rs;
	struct patlist		 pl = { 0 };
	struct obuf		 got = { 0 }, want = { 0 };
	uint8_t			 secret[24], text[600];
	size_t			 cuts[4], iter, i, j, n, ns, len, cap, count;
	uint32_t		 seed = 2024;
	int			 tgot, twant;

	for (iter = 0; iter < 10000; iter++) {
		ATF_REQUIRE((rs = redact_set_new()) != NULL);
		ns = 1 + rnd(&seed) % 5;
		for (i = 0; i < ns; i++) {
			/* Long secrets only: the start filter strides. */
			if (iter % 4 >= 2)
				len = 7 + rnd(&seed) % 18;
			else
				len = 1 + rnd(&seed) % (i == 0 ? 20 : 10);
			for (j = 0; j < len; j++)
				secret[j] = "ab%c\n \t"[rnd(&seed) % (iter % 2 ?
				    3 : 7)];
			ATF_REQUIRE(redact_set_add(rs, secret, len) == 0);
		}
		ATF_REQUIRE(redact_set_compile(rs) == 0);
		ATF_REQUIRE(redact_set_foreach(rs, pl_add, &pl) == 0);
		ATF_REQUIRE_EQ(pl.n, redact_set_npatterns(rs));
		n = rnd(&seed) % sizeof(text);
		for (i = 0; i < n; ) {
			if (pl.n > 0 && rnd(&seed) % 4 == 0) {
				j = rnd(&seed) % pl.n;
				len = pl.len[j];
				if (len > n - i)
					len = n - i;
				memcpy(text + i, pl.pat[j], len);
				i += len;
			} else
				text[i++] = "abcYW%6\n \t\v"[rnd(&seed) % 11];
		}
		for (i = 0; i < 4; i++)
			cuts[i] = 1 + rnd(&seed) % (i * 40 + 1);
		cap = rnd(&seed) % 3 == 0 ? rnd(&seed) % (n + 1) : SIZE_MAX;
		count = reference(&pl, text, n, cap, &want, &twant);
		ATF_REQUIRE_EQ(run(rs, text, n, cuts, 4, cap, &got, &tgot),
		    count);
		ATF_REQUIRE_EQ_MSG(got.len, want.len, "iteration %zu", iter);
		ATF_REQUIRE_MSG(memcmp(got.p, want.p, got.len) == 0,
		    "iteration %zu", iter);
		ATF_REQUIRE_EQ(tgot, twant);
		pl_free(&pl);
		redact_set_free(rs);
	}
	free(got.p);
	free(want.p);
}

/* A large secret sends the automaton past its dense states. */
ATF_TC_WITHOUT_HEAD(large_secret_is_masked_in_every_form);
ATF_TC_BODY(large_secret_is_masked_in_every_form, tc)
{
	struct redact_set	*rs;
	struct patlist		 pl = { 0 };
	struct obuf		 got = { 0 }, want = { 0 };
	uint8_t			 big[3000], *text;
	size_t			 i, j, n = 0, cuts[] = { 4096, 1, 777 };
	uint32_t		 seed = 99;
	int			 t;

	for (i = 0; i < sizeof(big); i++)
		big[i] = i % 61 == 60 ? '\n' : ' ' + rnd(&seed) % 95;
	ATF_REQUIRE((rs = redact_set_new()) != NULL);
	ATF_REQUIRE(redact_set_add(rs, big, sizeof(big)) == 0);
	ATF_REQUIRE(redact_set_add(rs, "another-secret", 14) == 0);
	ATF_REQUIRE(redact_set_compile(rs) == 0);
	ATF_REQUIRE(redact_set_memsize(rs) < 4 * 1024 * 1024);
	ATF_REQUIRE(redact_set_foreach(rs, pl_add, &pl) == 0);
	for (i = 0; i < pl.n; i++)
		n += pl.len[i] * 2 + 10;
	ATF_REQUIRE((text = malloc(n)) != NULL);
	for (i = 0, n = 0; i < pl.n; i++) {
		memcpy(text + n, pl.pat[i], pl.len[i]);
		n += pl.len[i];
		/* A near miss: all but the last byte. */
		memcpy(text + n, pl.pat[i], pl.len[i] - 1);
		n += pl.len[i] - 1;
		for (j = 0; j < 10; j++)
			text[n++] = "xyz \n"[j % 5];
	}
	ATF_REQUIRE(reference(&pl, text, n, SIZE_MAX, &want, &t) >= pl.n);
	ATF_REQUIRE_EQ(run(rs, text, n, cuts, 3, SIZE_MAX, &got, &t),
	    reference(&pl, text, n, SIZE_MAX, &want, &t));
	ATF_REQUIRE(got.len == want.len &&
	    memcmp(got.p, want.p, got.len) == 0);
	free(text);
	pl_free(&pl);
	redact_set_free(rs);
	free(got.p);
	free(want.p);
}

/* base64 as `base64' (76), `base64 -w 64', PEM and MIME wrap it. */
ATF_TC_WITHOUT_HEAD(base64_wrapped_at_any_width_is_masked);
ATF_TC_BODY(base64_wrapped_at_any_width_is_masked, tc)
{
	const char		*s[] = { "tok-0123456789abcdef-XYZ-secret" };
	struct redact_set	*rs = mkset(s, 1);
	struct obuf		 ob = { 0 };
	uint8_t			 data[64];
	char			 enc[128], text[512], flat[512];
	uint32_t		 seed = 11;
	size_t			 len = strlen(s[0]), pre, width, i, n, o;
	size_t			 lo, hi, a, b, crlf;
	const char		*star;

	for (pre = 0; pre < 3; pre++)
		for (width = 1; width <= 80; width++)
			for (crlf = 0; crlf < 2; crlf++) {
				for (i = 0; i < pre + 4; i++)
					data[i < pre ? i : i + len] =
					    rnd(&seed);
				memcpy(data + pre, s[0], len);
				n = b64(data, pre + len + 4, b64std, 1, enc);
				for (i = 0, o = 0; i < n; i++) {
					if (i > 0 && i % width == 0) {
						if (crlf)
							text[o++] = '\r';
						text[o++] = '\n';
					}
					text[o++] = enc[i];
				}
				text[o++] = '\n';
				ATF_REQUIRE_EQ_MSG(run(rs, text, o, NULL, 0,
				    SIZE_MAX, &ob, NULL), 1, "width %zu",
				    width);
				/* Unwrapped, every secret-only character is
				 * under the one mask. */
				strip(ob.p, ob.len, "\r\n", flat);
				ATF_REQUIRE((star = strstr(flat, "***")) !=
				    NULL);
				ATF_REQUIRE(strstr(star + 3, "***") == NULL);
				a = star - flat;
				b = n - (strlen(flat) - a - 3);
				lo = (8 * pre + 5) / 6;
				hi = 8 * (pre + len) / 6;
				ATF_REQUIRE_MSG(a <= lo && b >= hi &&
				    memcmp(flat, enc, a) == 0 &&
				    memcmp(star + 3, enc + b, n - b) == 0,
				    "width %zu: %s", width, flat);
			}
	/* `base64' of the secret alone, cut everywhere. */
	check_cuts(rs, "dG9rLTAxMjM0NTY3ODlhYmNkZWYtWFlaLXNlY3JldA==\n",
	    45, "***\n", 1);
	check_cuts(rs, "dG9rLTAxMjM0NTY3ODlh\r\nYmNkZWYtWFlaLXNlY3JldA==\r\n",
	    48, "***\r\n", 1);
	/* A token inside a larger blob, wrapped at 64. */
	check_cuts(rs, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVp0b2stMDEyMzQ1Njc4"
	    "OWFiY2RlZi1Y\nWVotc2VjcmV0MDEyMzQ1Njc4OQ==\n", 94,
	    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVp***MDEyMzQ1Njc4OQ==\n", 1);
	/* More than REDACT_MAXWS (8) whitespace bytes in a row end one. */
	check_cuts(rs, "dG9rLTAxMjM0NTY3\n \t\n\r\n\n\n\nODlhYmNkZWYtWFlaLXNlY3Jl"
	    "dA==", 53, "dG9rLTAxMjM0NTY3\n \t\n\r\n\n\n\nODlhYmNkZWYtWFlaLXNlY3Jl"
	    "dA==", 0);
	check_cuts(rs, "dG9rLTAxMjM0NTY3\n \t\n\r\n\n\nODlhYmNkZWYtWFlaLXNlY3JldA"
	    "==", 52, "***", 1);
	redact_set_free(rs);
	free(ob.p);
}

/* Hex as xxd -p, od -An -tx1, openssl and colon lists print it. */
ATF_TC_WITHOUT_HEAD(hex_with_separators_and_wrapping_is_masked);
ATF_TC_BODY(hex_with_separators_and_wrapping_is_masked, tc)
{
	const char		*s[] = { "sk_test_4eC39HqLyjWDarjtT1zdp7dc" };
	struct redact_set	*rs = mkset(s, 1);
	struct obuf		 ob = { 0 };
	uint8_t			 data[64];
	char			 text[512], flat[512], h4[16];
	uint32_t		 seed = 5;
	size_t			 len = strlen(s[0]), pre, i, o, style, j;

	for (pre = 0; pre < 18; pre++)
		for (style = 0; style < 4; style++) {
			for (i = 0; i < pre; i++)
				data[i] = rnd(&seed);
			memcpy(data + pre, s[0], len);
			for (i = 0, o = 0; i < pre + len; i++) {
				switch (style) {
				case 0:		/* xxd -p: 30 bytes a line */
					if (i > 0 && i % 30 == 0)
						text[o++] = '\n';
					break;
				case 1:		/* od -An -tx1 */
					if (i > 0 && i % 16 == 0)
						text[o++] = '\n';
					text[o++] = ' ';
					break;
				case 2:		/* colons, 16 a line */
					if (i > 0)
						text[o++] = ':';
					if (i > 0 && i % 16 == 0)
						text[o++] = '\n';
					break;
				case 3:		/* spaces, upper case */
					if (i > 0)
						text[o++] = ' ';
					break;
				}
				o += snprintf(text + o, 3, style > 1 ?
				    "%02X" : "%02x", data[i]);
			}
			text[o++] = '\n';
			ATF_REQUIRE_EQ_MSG(run(rs, text, o, NULL, 0, SIZE_MAX,
			    &ob, NULL), 1, "style %zu pre %zu: %.*s", style,
			    pre, (int)o, text);
			/* No 4 bytes of the secret left in hex. */
			strip(ob.p, ob.len, " :\r\n", flat);
			for (i = 0; i + 4 <= len; i++) {
				for (j = 0; j < 4; j++)
					snprintf(h4 + 2 * j, 3, style > 1 ?
					    "%02X" : "%02x",
					    (uint8_t)s[0][i + j]);
				ATF_REQUIRE_MSG(strstr(flat, h4) == NULL,
				    "style %zu pre %zu: %s in %s", style, pre,
				    h4, flat);
			}
		}
	check_cuts(rs, " 73 6b 5f 74 65 73 74 5f 34 65 43 33 39 48 71 4c\n"
	    " 79 6a 57 44 61 72 6a 74 54 31 7a 64 70 37 64 63\n", 98,
	    " ***\n", 1);
	redact_set_free(rs);
	free(ob.p);
}

/*
 * Hex and base64 in layouts no tool list names: Python's
 * " ".join("%02x" % b ...), a space before every byte, tabs, groups of
 * four, CRLF and an indent, and whitespace of every kind at random
 * between any two units.  The matcher steps over it: one mask, and
 * nothing of the key is left, however the stream is cut.
 */
ATF_TC_WITHOUT_HEAD(hex_and_base64_in_any_whitespace_layout_are_masked);
ATF_TC_BODY(hex_and_base64_in_any_whitespace_layout_are_masked, tc)
{
	static const char	*ws = " \t\r\n";
	struct redact_set	*rs;
	struct obuf		 ob = { 0 };
	uint8_t			 key[24];
	char			 enc[64], text[1024], flat[1024], *want;
	uint32_t		 seed = 7;
	size_t			 i, j, k, n, o, style, units, per;

	for (i = 0; i < sizeof(key); i++)
		key[i] = rnd(&seed);
	ATF_REQUIRE((rs = redact_set_new()) != NULL);
	ATF_REQUIRE(redact_set_add(rs, key, sizeof(key)) == 0);
	ATF_REQUIRE(redact_set_compile(rs) == 0);
	for (style = 0; style < 14; style++) {
		/* Units: hex pairs (7: upper case) or base64 characters. */
		if (style < 8) {
			for (i = 0; i < sizeof(key); i++)
				snprintf(enc + 2 * i, 3, style == 7 ? "%02X" :
				    "%02x", key[i]);
			n = 2 * sizeof(key);
			per = 2;
		} else {
			n = b64(key, sizeof(key), b64std, 1, enc);
			per = style == 8 ? 4 : 1;
		}
		units = n / per;
		o = 0;
		text[o++] = '<';
		for (i = 0; i < units; i++) {
			switch (style) {
			case 0:		/* " ".join("%02x" % b ...) */
			case 7:
			case 8:		/* base64, a space every 4 */
				if (i > 0)
					text[o++] = ' ';
				break;
			case 1:		/* " %02x" each, 16 a line */
				if (i > 0 && i % 16 == 0)
					text[o++] = '\n';
				text[o++] = ' ';
				break;
			case 2:		/* tabs */
				if (i > 0)
					text[o++] = '\t';
				break;
			case 3:		/* groups of four, 8 groups a line */
				if (i > 0 && i % 32 == 0)
					text[o++] = '\n';
				else if (i > 0 && i % 4 == 0)
					text[o++] = ' ';
				break;
			case 4:		/* CRLF and an indent every 5 */
				if (i > 0 && i % 5 == 0) {
					memcpy(text + o, "\r\n    ", 6);
					o += 6;
				}
				break;
			default:	/* 1 to 8 of any, at random */
				if (i > 0 || style == 5)
					for (k = 1 + rnd(&seed) % REDACT_MAXWS;
					    k > 0; k--)
						text[o++] = ws[rnd(&seed) % 4];
				break;
			}
			for (j = 0; j < per; j++)
				text[o++] = enc[i * per + j];
		}
		text[o++] = '>';
		ATF_REQUIRE_EQ_MSG(run(rs, text, o, NULL, 0, SIZE_MAX, &ob,
		    NULL), 1, "style %zu: %.*s", style, (int)o, text);
		strip(ob.p, ob.len, ws, flat);
		ATF_REQUIRE_MSG(strcmp(flat, "<***>") == 0, "style %zu: %.*s "
		    "came out as %.*s", style, (int)o, text, (int)ob.len,
		    ob.p);
		ATF_REQUIRE((want = strndup((char *)ob.p, ob.len)) != NULL);
		check_cuts(rs, text, o, want, 1);
		free(want);
	}
	redact_set_free(rs);
	free(ob.p);
}

/* Python's json.dumps writes non-ASCII as \uXXXX (UTF-16). */
ATF_TC_WITHOUT_HEAD(json_escapes_of_non_ascii_are_masked);
ATF_TC_BODY(json_escapes_of_non_ascii_are_masked, tc)
{
	const char		*s[] = { "p\xc3\xa4ssw\xc3\xb6rd-\xe2\x82\xac-"
	    "\xf0\x9f\x98\x80/x" };
	struct redact_set	*rs = mkset(s, 1);
	const char		*lower = "{\"k\": \"p\\u00e4ssw\\u00f6rd-"
	    "\\u20ac-\\ud83d\\ude00/x\"}";
	const char		*upper = "{\"k\": \"p\\u00E4ssw\\u00F6rd-"
	    "\\u20AC-\\uD83D\\uDE00\\/x\"}";

	check_cuts(rs, lower, strlen(lower), "{\"k\": \"***\"}", 1);
	check_cuts(rs, upper, strlen(upper), "{\"k\": \"***\"}", 1);
	redact_set_free(rs);
}

/*
 * Two secrets printed overlapped by 1 to 19 bytes, or touching: one
 * mask, two counted, no 8 bytes of either left, however it is cut.
 */
ATF_TC_WITHOUT_HEAD(overlapped_secrets_leave_no_8_byte_run);
ATF_TC_BODY(overlapped_secrets_leave_no_8_byte_run, tc)
{
	const char		*a = "AKIAIOSFODNN7EXAMPLE";
	char			 b[32], text[64];
	const char		*s[2];
	struct redact_set	*rs;
	struct obuf		 ob = { 0 };
	size_t			 ov, n;

	for (ov = 0; ov < 20; ov++) {
		/* b starts with the last ov bytes of a. */
		memcpy(b, a + 20 - ov, ov);
		memcpy(b + ov, "wJalrXUtnFEMIK7MDENG", 20 - ov);
		b[20] = '\0';
		s[0] = a;
		s[1] = b;
		rs = mkset(s, 2);
		n = snprintf(text, sizeof(text), "x%s%sy", a, b + ov);
		check_cuts(rs, text, n, "x***y", 2);
		ATF_REQUIRE_EQ(run_whole(rs, text, &ob), 2);
		no_run_survives(&ob, a, 20, 8);
		no_run_survives(&ob, b, 20, 8);
		redact_set_free(rs);
	}
	free(ob.p);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, empty_set_passes_bytes_through);
	ATF_TP_ADD_TC(tp, short_secret_is_masked_raw_only);
	ATF_TP_ADD_TC(tp, secret_split_at_every_byte_position);
	ATF_TP_ADD_TC(tp, secret_written_one_byte_at_a_time);
	ATF_TP_ADD_TC(tp, secret_among_tabs_and_control_bytes_is_masked);
	ATF_TP_ADD_TC(tp, written_buffer_is_not_used_after_the_call);
	ATF_TP_ADD_TC(tp, overlapping_secrets_mask_their_union);
	ATF_TP_ADD_TC(tp, nested_secrets_mask_longest_match);
	ATF_TP_ADD_TC(tp, duplicate_forms_are_stored_once);
	ATF_TP_ADD_TC(tp, every_encoded_form_is_masked);
	ATF_TP_ADD_TC(tp, base64_is_masked_at_every_alignment);
	ATF_TP_ADD_TC(tp, every_line_of_a_multiline_secret_is_masked);
	ATF_TP_ADD_TC(tp, secret_crossing_the_output_cap_does_not_leak);
	ATF_TP_ADD_TC(tp, count_is_the_number_of_matches_not_contained);
	ATF_TP_ADD_TC(tp, invalid_utf8_around_a_secret_is_kept);
	ATF_TP_ADD_TC(tp, misuse_is_refused);
	ATF_TP_ADD_TC(tp, random_streams_equal_the_reference);
	ATF_TP_ADD_TC(tp, large_secret_is_masked_in_every_form);
	ATF_TP_ADD_TC(tp, base64_wrapped_at_any_width_is_masked);
	ATF_TP_ADD_TC(tp, hex_with_separators_and_wrapping_is_masked);
	ATF_TP_ADD_TC(tp, hex_and_base64_in_any_whitespace_layout_are_masked);
	ATF_TP_ADD_TC(tp, json_escapes_of_non_ascii_are_masked);
	ATF_TP_ADD_TC(tp, overlapped_secrets_leave_no_8_byte_run);
	return atf_no_error();
}
