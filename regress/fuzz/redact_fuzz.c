/*
 * libFuzzer target for the redactor and the UTF-8 sanitizer.
 *
 * The input gives 1-5 secrets, an output cap, four write sizes and a
 * text in which 0xfe k stands for the k-th pattern of the set (so every
 * encoded form is reachable) and 0xfd k w for it laid out: whitespace
 * ("\n", "\r\n", " ", "\t", "\n " or "\r\n\t  " by w % 6) after every
 * 1 + (w / 6) % 8 bytes, and before the first when w / 48 is odd.
 * Checked: the stream equals the naive reference (regress/lib) over the
 * whole text with the same count, no secret free of '*' (with a byte
 * that is not whitespace, and no longer run of it than a match steps
 * over) survives in the output, and the sanitized output is valid UTF-8
 * whatever the cuts.
 */

#include <sys/types.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "redact_ref.h"
#include "utf8.h"

#define MAXTEXT		4096

struct obuf {
	uint8_t		*p;
	size_t		 len;
	size_t		 cap;
};

struct patlist {
	uint8_t		*pat[512];
	size_t		 len[512];
	size_t		 n;
};

int		 LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	 ob_out(void *, const void *, size_t);
static void	 pl_add(void *, const void *, size_t);
static size_t	 wrap(const uint8_t *, size_t, int, uint8_t *, size_t);
static int	 maskable(const uint8_t *, size_t);
static size_t	 sanitize(const uint8_t *, size_t, const size_t *, size_t,
		    char *);
static size_t	 text_build(const uint8_t *, const uint8_t *,
		    const struct patlist *, uint8_t *);
static void	 sanitize_check(const struct obuf *, const size_t *);

static void
ob_out(void *arg, const void *buf, size_t len)
{
	struct obuf	*ob = arg;

	if (len == 0)
		abort();
	if (ob->len + len > ob->cap) {
		ob->cap = (ob->len + len) * 2;
		if ((ob->p = realloc(ob->p, ob->cap)) == NULL)
			abort();
	}
	memcpy(ob->p + ob->len, buf, len);
	ob->len += len;
}

static void
pl_add(void *arg, const void *pat, size_t len)
{
	struct patlist	*pl = arg;

	if (pl->n == sizeof(pl->pat) / sizeof(pl->pat[0]))
		abort();
	if ((pl->pat[pl->n] = malloc(len)) == NULL)
		abort();
	memcpy(pl->pat[pl->n], pat, len);
	pl->len[pl->n++] = len;
}

/* p with whitespace after every few bytes, at most room bytes. */
static size_t
wrap(const uint8_t *p, size_t len, int w, uint8_t *out, size_t room)
{
	static const char	*seps[] = { "\n", "\r\n", " ", "\t", "\n ",
	    "\r\n\t  " };
	const char		*sep = seps[w % 6];
	size_t			 every = 1 + (w / 6) % 8, i, j, o = 0;

	for (i = 0; i < len; i++) {
		if ((i > 0 && i % every == 0) || (i == 0 && (w / 48) % 2))
			for (j = 0; sep[j] != '\0' && o < room; j++)
				out[o++] = sep[j];
		if (o < room)
			out[o++] = p[i];
	}
	return o;
}

/* A secret the scan must find as it is: whitespace runs it steps over. */
static int
maskable(const uint8_t *s, size_t len)
{
	size_t	 i, ws = 0, other = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '*')
			return 0;
		if (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
			if (++ws > REDACT_MAXWS)
				return 0;
			continue;
		}
		ws = 0;
		other++;
	}
	return other > 0;
}

static size_t
sanitize(const uint8_t *in, size_t n, const size_t *cuts, size_t ncuts,
    char *out)
{
	struct utf8_state	 st;
	size_t			 off = 0, o = 0, k = 0, len, w;

	utf8_init(&st);
	do {
		len = ncuts == 0 ? n - off : cuts[k++ % ncuts];
		if (len > n - off)
			len = n - off;
		w = utf8_sanitize(&st, in + off, len, out + o,
		    UTF8_SANITIZE_BOUND(len), off + len == n);
		if (w == (size_t)-1 || !utf8_valid(out + o, w))
			abort();
		o += w;
		off += len;
	} while (off < n);
	return o;
}

/*
 * The text: input bytes as they are, 0xfe K a whole pattern, 0xfd K W a
 * pattern wrapped by W; at most MAXTEXT bytes.  Its length.
 */
static size_t
text_build(const uint8_t *data, const uint8_t *end, const struct patlist *pl,
    uint8_t *text)
{
	size_t	 n, k, len;

	for (n = 0; data < end; data++) {
		if (*data == 0xfe && end - data > 1 && pl->n > 0) {
			k = *++data % pl->n;
			len = pl->len[k];
			if (len > MAXTEXT - n)
				break;
			memcpy(text + n, pl->pat[k], len);
			n += len;
		} else if (*data == 0xfd && end - data > 2 && pl->n > 0) {
			k = *++data % pl->n;
			data++;
			n += wrap(pl->pat[k], pl->len[k], *data, text + n,
			    MAXTEXT - n);
		} else if (n < MAXTEXT)
			text[n++] = *data;
		else
			break;
	}
	return (n);
}

/*
 * Whole or cut, the same sanitized output: at most 3 bytes per byte,
 * plus one U+FFFD for a sequence cut at the end.
 */
static void
sanitize_check(const struct obuf *got, const size_t *cuts)
{
	char	*s1, *s2;
	size_t	 a, b;

	if ((s1 = malloc(UTF8_SANITIZE_BOUND(got->len))) == NULL ||
	    (s2 = malloc(UTF8_SANITIZE_BOUND(got->len))) == NULL)
		abort();
	a = sanitize(got->p, got->len, NULL, 0, s1);
	b = sanitize(got->p, got->len, cuts, 4, s2);
	if (a != b || memcmp(s1, s2, a) != 0 || a > 3 * got->len + 3)
		abort();
	free(s1);
	free(s2);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct redact_set	*rs;
	struct redact		*r;
	struct patlist		 pl;
	struct obuf		 got = { 0 }, want = { 0 };
	const uint8_t		*secret[5], *end = data + size;
	uint8_t			*text, *chunk;
	size_t			 slen[5], ns, i, k, n, len, cap, cuts[4];
	size_t			 count, off;

	if (size < 6)
		return 0;
	ns = 1 + *data++ % 5;
	for (i = 0; i < ns; i++) {
		if (data == end)
			return 0;
		slen[i] = 1 + *data++ % 32;
		if ((size_t)(end - data) < slen[i])
			return 0;
		secret[i] = data;
		data += slen[i];
	}
	if (end - data < 5)
		return 0;
	cap = *data < 128 ? SIZE_MAX : (size_t)(*data - 128) * 5;
	data++;
	for (i = 0; i < 4; i++, data++)
		cuts[i] = *data % 16 == 0 ? 1 + *data * 40 : 1 + *data % 48;

	if ((rs = redact_set_new()) == NULL)
		abort();
	for (i = 0; i < ns; i++)
		if (redact_set_add(rs, secret[i], slen[i]) == -1)
			abort();
	if (redact_set_compile(rs) == -1)
		abort();
	memset(&pl, 0, sizeof(pl));
	if (redact_set_foreach(rs, pl_add, &pl) == -1 ||
	    pl.n != redact_set_npatterns(rs))
		abort();

	if ((text = malloc(MAXTEXT)) == NULL)
		abort();
	n = text_build(data, end, &pl, text);

	count = redact_ref(pl.pat, pl.len, pl.n, text, n, &want.p, &want.len);
	if ((r = redact_new(rs, cap)) == NULL)
		abort();
	for (off = 0, k = 0; off < n; off += len) {
		len = cuts[k++ % 4];
		if (len > n - off)
			len = n - off;
		/*
		 * Each write its own block, wiped and freed after the call:
		 * ASan sees a read past it or a use of it later.
		 */
		if ((chunk = malloc(len == 0 ? 1 : len)) == NULL)
			abort();
		memcpy(chunk, text + off, len);
		if (redact_write(r, chunk, len, ob_out, &got) == -1)
			abort();
		memset(chunk, 0, len);
		free(chunk);
	}
	if (redact_finish(r, ob_out, &got) == -1)
		abort();
	if (redact_count(r) != count || redact_emitted(r) != got.len ||
	    redact_truncated(r) != (want.len > cap) ||
	    got.len != (want.len > cap ? cap : want.len) ||
	    (got.len > 0 && memcmp(got.p, want.p, got.len) != 0))
		abort();
	for (i = 0; i < ns; i++)
		if (maskable(secret[i], slen[i]) && got.len > 0 &&
		    memmem(got.p, got.len, secret[i], slen[i]) != NULL)
			abort();

	if (got.len > 0)
		sanitize_check(&got, cuts);
	redact_free(r);
	redact_set_free(rs);
	for (i = 0; i < pl.n; i++)
		free(pl.pat[i]);
	free(text);
	free(got.p);
	free(want.p);
	return 0;
}
