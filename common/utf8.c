/*
 * Streaming UTF-8 sanitizer, see utf8.h.  The ranges are those of the
 * Unicode standard's table of well-formed byte sequences (3.9, D92).
 */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "utf8.h"

static int	 utf8_lead(uint8_t);
static void	 utf8_next_range(const struct utf8_state *, uint8_t *,
		    uint8_t *);

void
utf8_init(struct utf8_state *st)
{
	memset(st, 0, sizeof(*st));
}

/* Length of the sequence a lead byte starts, 1 for ASCII, 0 if none. */
static int
utf8_lead(uint8_t b)
{
	if (b < 0x80)
		return 1;
	if (b >= 0xc2 && b <= 0xdf)
		return 2;
	if (b >= 0xe0 && b <= 0xef)
		return 3;
	if (b >= 0xf0 && b <= 0xf4)
		return 4;
	return 0;
}

/* The bytes allowed next; the second byte rules out overlongs,
 * surrogates and code points past U+10FFFF. */
static void
utf8_next_range(const struct utf8_state *st, uint8_t *lo, uint8_t *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (st->len != 1)
		return;
	switch (st->buf[0]) {
	case 0xe0:
		*lo = 0xa0;
		break;
	case 0xed:
		*hi = 0x9f;
		break;
	case 0xf0:
		*lo = 0x90;
		break;
	case 0xf4:
		*hi = 0x8f;
		break;
	}
}

size_t
utf8_sanitize(struct utf8_state *st, const void *in, size_t len, char *out,
    size_t outsz, int final)
{
	const uint8_t	*p = in;
	size_t		 i, o = 0;
	uint8_t		 b, lo, hi;
	int		 n;

	if (len > SIZE_MAX / 3 - 3 || outsz < UTF8_SANITIZE_BOUND(len)) {
		errno = ENOSPC;
		return (size_t)-1;
	}
	for (i = 0; i < len; i++) {
		b = p[i];
		if (st->len > 0) {
			utf8_next_range(st, &lo, &hi);
			if (b >= lo && b <= hi) {
				st->buf[st->len++] = b;
				if (st->len == st->need) {
					memcpy(out + o, st->buf, st->len);
					o += st->len;
					st->len = 0;
				}
				continue;
			}
			/* The maximal subpart is one U+FFFD; b starts anew. */
			memcpy(out + o, UTF8_REPLACEMENT, 3);
			o += 3;
			st->len = 0;
		}
		switch ((n = utf8_lead(b))) {
		case 0:
			memcpy(out + o, UTF8_REPLACEMENT, 3);
			o += 3;
			break;
		case 1:
			out[o++] = b;
			break;
		default:
			st->buf[0] = b;
			st->len = 1;
			st->need = n;
			break;
		}
	}
	if (final && st->len > 0) {
		memcpy(out + o, UTF8_REPLACEMENT, 3);
		o += 3;
		st->len = 0;
	}
	return o;
}

int
utf8_valid(const void *buf, size_t len)
{
	struct utf8_state	 st;
	const uint8_t		*p = buf;
	size_t			 i;
	uint8_t			 lo, hi;
	int			 n;

	utf8_init(&st);
	for (i = 0; i < len; i++) {
		if (st.len == 0) {
			if ((n = utf8_lead(p[i])) == 0)
				return 0;
			if (n > 1) {
				st.buf[0] = p[i];
				st.len = 1;
				st.need = n;
			}
			continue;
		}
		utf8_next_range(&st, &lo, &hi);
		if (p[i] < lo || p[i] > hi)
			return 0;
		if (++st.len == st.need)
			st.len = 0;
	}
	return st.len == 0;
}
