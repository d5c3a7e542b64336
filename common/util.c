/*
 * Small helpers shared by the processes.
 */

#include <ctype.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <jansson.h>
#include <sodium.h>

#include "util.h"

static void *
zmalloc(size_t n)
{
	return (malloc(n));
}

/* jansson's free: the block may have held a secret value or a token. */
static void
zfree(void *p)
{
	if (p == NULL)
		return;
	explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

void
json_zero_alloc(void)
{
	json_set_alloc_funcs(zmalloc, zfree);
}

/* realloc that never leaves the old bytes behind in freed memory. */
static void *
zrealloc(void *p, size_t n)
{
	size_t	 old;
	void	*q;

	if (p == NULL)
		return (malloc(n));
	if (n == 0) {
		zfree(p);
		return (NULL);
	}
	if ((q = malloc(n)) == NULL)
		return (NULL);
	old = malloc_usable_size(p);
	memcpy(q, p, old < n ? old : n);
	zfree(p);
	return (q);
}

/*
 * libevent's buffers carry request and response bodies, and a grant's
 * answer holds a secret: zero them when freed.  Before any event call.
 */
void
event_zero_alloc(void)
{
	event_set_mem_functions(zmalloc, zrealloc, zfree);
}

void
token_hash(const char *token, size_t len, uint8_t out[32])
{
	crypto_generichash(out, 32, (const unsigned char *)token, len,
	    NULL, 0);
}

void
token_new(char out[TOKEN_LEN + 1], uint8_t hash[32])
{
	unsigned char	 raw[32];

	randombytes_buf(raw, sizeof(raw));
	sodium_bin2base64(out, TOKEN_LEN + 1, raw, sizeof(raw),
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	sodium_memzero(raw, sizeof(raw));
	token_hash(out, TOKEN_LEN, hash);
}

int
token_wellformed(const char *s, size_t len)
{
	size_t	 i;

	if (len != TOKEN_LEN)
		return (0);
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
			return (0);
	return (1);
}

int64_t
mono_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

/*
 * The len bytes at in percent-encoded into out (room for 3 * len): the
 * unreserved characters of RFC 3986 as they are, every other byte as %XX.
 * Returns the bytes written (no NUL).
 */
size_t
pct_encode(char *out, const char *in, size_t len)
{
	static const char	 hex[] = "0123456789ABCDEF";
	size_t			 i, n = 0;
	unsigned char		 c;

	for (i = 0; i < len; i++) {
		c = (unsigned char)in[i];
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			out[n++] = c;
		else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 0xf];
		}
	}
	return (n);
}
