/*
 * egress_subst.c: a keyless run's placeholders swapped for their values
 * in a request the run sent through the egress proxy (SPEC.md section
 * 6a, "Substitution").  Only in the request target (path and query, the
 * placeholder raw or percent-encoded, in any mix of the two) and header
 * values (Authorization: Basic decoded, swapped and encoded again):
 * never in a body, which the CLI may fill with anything it read.
 *
 * The pairs are the run's own: the caller holds them per run and never
 * passes another run's.  What comes back holds real values: the caller
 * frees it with freezero().
 */

#include <sys/types.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "log.h"
#include "relay.h"

static size_t	 match_at(const struct subst *, const char *, size_t, int,
		    int *);
static void	 put_value(struct ebuf *, const struct subst *,
		    const char *);
static char	*swap(const struct subst *, size_t, const char *, size_t,
		    int, size_t *, int *);
static char	*swap_basic(const struct subst *, size_t, const char *,
		    size_t, size_t *, int *);

/* The value of a hex digit, -1 if c is none. */
int
hexdigit(int c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	return (-1);
}

/*
 * The length of the placeholder's spelling at p (0: none there), each of
 * its bytes literal or, where pct, as %XX; *encoded tells whether any was.
 */
static size_t
match_at(const struct subst *s, const char *p, size_t left, int pct,
    int *encoded)
{
	size_t	 i, o = 0;
	int	 hi, lo;

	*encoded = 0;
	for (i = 0; i < s->phlen; i++) {
		if (o < left && p[o] == s->ph[i]) {
			o++;
			continue;
		}
		if (!pct || o + 3 > left || p[o] != '%' ||
		    (hi = hexdigit((unsigned char)p[o + 1])) == -1 ||
		    (lo = hexdigit((unsigned char)p[o + 2])) == -1 ||
		    (hi << 4 | lo) != (unsigned char)s->ph[i])
			return (0);
		*encoded = 1;
		o += 3;
	}
	return (o);
}

/* Append n bytes; what grows may hold values already: never a copy left. */
void
ebuf_add(struct ebuf *o, const char *p, size_t n)
{
	size_t	 cap;
	char	*np;

	if (o->len + n + 1 > o->cap) {
		for (cap = o->cap ? o->cap : 256; cap < o->len + n + 1;
		    cap *= 2)
			;
		if ((np = recallocarray(o->p, o->cap, cap, 1)) == NULL)
			fatal("%s: recallocarray", __func__);
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
	o->p[o->len] = '\0';
}

/*
 * The value of s for the placeholder spelled at p, each byte spelled as
 * the placeholder's byte at its position was (raw, or %XX): the two have
 * the same punctuation at the same places, so a '/' the CLI sent raw in
 * a path stays a '/', and one it encoded stays encoded.
 */
static void
put_value(struct ebuf *o, const struct subst *s, const char *p)
{
	size_t	 i;
	char	 hex[4];

	for (i = 0; i < s->vallen; i++) {
		if (*p == s->ph[i]) {
			ebuf_add(o, &s->val[i], 1);
			p++;
			continue;
		}
		snprintf(hex, sizeof(hex), "%%%02X",
		    (unsigned char)s->val[i]);
		ebuf_add(o, hex, 3);
		p += 3;
	}
}

/*
 * in with every placeholder swapped; pct: also its percent-encoded
 * spellings.  *count gets the swaps.
 */
static char *
swap(const struct subst *s, size_t n, const char *in, size_t len, int pct,
    size_t *outlen, int *count)
{
	struct ebuf	 o = { NULL, 0, 0 };
	size_t			 i, j, m;
	int			 enc;

	*count = 0;
	for (i = 0; i < len; ) {
		for (j = 0, m = 0; j < n; j++)
			if ((m = match_at(&s[j], in + i, len - i, pct,
			    &enc)) != 0)
				break;
		if (m == 0) {
			ebuf_add(&o, in + i++, 1);
			continue;
		}
		put_value(&o, &s[j], in + i);
		(*count)++;
		i += m;
	}
	if (o.p == NULL)
		ebuf_add(&o, "", 0);
	*outlen = o.len;
	return (o.p);
}

/* "Basic " base64(user:password): decoded, swapped, encoded again. */
static char *
swap_basic(const struct subst *s, size_t n, const char *b64, size_t len,
    size_t *outlen, int *count)
{
	unsigned char	*raw;
	char		*swapped, *out;
	size_t		 rawlen, slen, olen;

	*count = 0;
	if ((raw = calloc(1, len + 1)) == NULL)
		fatal("%s: calloc", __func__);
	if (sodium_base642bin(raw, len, b64, len, NULL, &rawlen, NULL,
	    sodium_base64_VARIANT_ORIGINAL) != 0) {
		freezero(raw, len + 1);
		return (NULL);
	}
	swapped = swap(s, n, (char *)raw, rawlen, 0, &slen, count);
	freezero(raw, len + 1);
	if (*count == 0) {
		freezero(swapped, slen + 1);
		return (NULL);
	}
	olen = sodium_base64_ENCODED_LEN(slen, sodium_base64_VARIANT_ORIGINAL);
	if ((out = calloc(1, olen + 6)) == NULL)
		fatal("%s: calloc", __func__);
	memcpy(out, "Basic ", 6);
	sodium_bin2base64(out + 6, olen, (unsigned char *)swapped, slen,
	    sodium_base64_VARIANT_ORIGINAL);
	freezero(swapped, slen + 1);
	*outlen = strlen(out);
	return (out);
}

/* The request target (origin-form path and query). */
char *
egress_subst_target(const struct subst *s, size_t n, const char *target,
    size_t len, size_t *outlen, int *count)
{
	return (swap(s, n, target, len, 1, outlen, count));
}

/* A header's value; name decides whether it is Basic credentials. */
char *
egress_subst_header(const struct subst *s, size_t n, const char *name,
    const char *value, size_t len, size_t *outlen, int *count)
{
	char	*out;
	size_t	 i;

	if (strcasecmp(name, "Authorization") == 0 && len > 6 &&
	    strncasecmp(value, "Basic ", 6) == 0) {
		for (i = 6; i < len && value[i] == ' '; i++)
			;
		if ((out = swap_basic(s, n, value + i, len - i, outlen,
		    count)) != NULL)
			return (out);
	}
	return (swap(s, n, value, len, 0, outlen, count));
}
