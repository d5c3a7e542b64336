/*
 * Streaming UTF-8 sanitizer: run output is returned as UTF-8, so every
 * ill-formed sequence becomes U+FFFD (EF BF BD), one per maximal subpart
 * as Unicode recommends (the WHATWG decoder's behaviour): overlong forms,
 * surrogates, code points past U+10FFFF, stray continuation bytes and
 * truncated sequences.  A sequence cut at the end of a chunk is held for
 * the next call, so a character is never split and the output does not
 * depend on where the input was cut.
 */

#ifndef UTF8_H
#define UTF8_H

#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT	"\xef\xbf\xbd"
/* Output room utf8_sanitize() needs for len input bytes. */
#define UTF8_SANITIZE_BOUND(len)	(((len) + 3) * 3)

struct utf8_state {
	uint8_t		 buf[4];	/* an incomplete sequence */
	uint8_t		 len;		/* bytes in buf */
	uint8_t		 need;		/* its full length */
};

void	 utf8_init(struct utf8_state *);
/*
 * Convert len bytes of in into out, holding an incomplete sequence at the
 * end unless final (which flushes it as U+FFFD).  Returns the bytes
 * written, or (size_t)-1 with errno ENOSPC if outsz is less than
 * UTF8_SANITIZE_BOUND(len) (len must be below SIZE_MAX / 3 - 3).
 */
size_t	 utf8_sanitize(struct utf8_state *, const void *, size_t, char *,
	    size_t, int);
/* Whether buf is well-formed UTF-8. */
int	 utf8_valid(const void *, size_t);

#endif /* UTF8_H */
