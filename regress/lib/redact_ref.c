/*
 * The naive redactor: see redact_ref.h.  Deliberately simple, never
 * fast: the view of the stream without its whitespace is built first,
 * every pattern is tried at every position of it, and the masked bytes
 * and the count follow from the list of matches.
 */

#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "redact_ref.h"

#define BARRIER		256	/* in the view: matches no pattern byte */

static void	*xcalloc(size_t, size_t);

static void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if ((p = calloc(n + 1, size)) == NULL)
		abort();
	return p;
}

size_t
redact_ref(uint8_t *const *pat, const size_t *plen, size_t npat,
    const uint8_t *in, size_t n, uint8_t **out, size_t *outlen)
{
	uint16_t	*view = xcalloc(n, sizeof(*view));
	size_t		*at = xcalloc(n, sizeof(*at));	/* stream offset */
	size_t		*start = xcalloc(n + 1, sizeof(*start));
	uint8_t		*mask = xcalloc(n, 1), *o = xcalloc(3 * n + 3, 1);
	size_t		 nv = 0, lb = 0, i, j, k, s, e, min, count = 0;

	/*
	 * Whitespace (space, tab, '\n', '\v', '\f', '\r') vanishes from
	 * the view; more than REDACT_MAXWS bytes of it in a row leave a
	 * barrier.
	 */
	for (i = 0; i < n; i++) {
		if (in[i] == ' ' || (in[i] >= '\t' && in[i] <= '\r')) {
			if (++lb == REDACT_MAXWS + 1) {
				view[nv] = BARRIER;
				at[nv++] = i;
			}
			continue;
		}
		lb = 0;
		view[nv] = in[i];
		at[nv++] = i;
	}

	/* Each match spans its first byte to its last in the stream. */
	for (e = 0; e <= n; e++)
		start[e] = SIZE_MAX;
	for (i = 0; i < nv; i++)
		for (j = 0; j < npat; j++) {
			if (plen[j] == 0 || plen[j] > nv - i)
				continue;
			for (k = 0; k < plen[j]; k++)
				if (view[i + k] != pat[j][k])
					break;
			if (k < plen[j])
				continue;
			s = at[i];
			e = at[i + plen[j] - 1] + 1;
			for (k = s; k < e; k++)
				mask[k] = 1;
			/* Of the matches ending at e the longest holds all. */
			if (s < start[e])
				start[e] = s;
		}

	/* Counted: the matches no later-ending match starts before. */
	for (e = n + 1, min = SIZE_MAX; e-- > 0; ) {
		if (start[e] == SIZE_MAX)
			continue;
		if (start[e] < min)
			count++;
		if (start[e] < min)
			min = start[e];
	}

	/* One mask per run of masked bytes. */
	for (i = 0, k = 0; i < n; i++) {
		if (!mask[i])
			o[k++] = in[i];
		else if (i == 0 || !mask[i - 1]) {
			memcpy(o + k, REDACT_MASK, 3);
			k += 3;
		}
	}
	*out = o;
	*outlen = k;
	free(view);
	free(at);
	free(start);
	free(mask);
	return count;
}
