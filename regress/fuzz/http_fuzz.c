/*
 * libFuzzer target: the bytes a client sends to the frontend, through
 * the code that parses them before any check of a token (tregd/
 * http_parse.c): where a request head ends, the head itself, the
 * request id test, the 405 Allow list and the JSON escaping of output.
 * The invariants checked are the ones frontend.c relies on.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_str(const struct http_str *s, const char *buf, size_t len)
{
	if (s->p == NULL)
		return;
	if (s->p < buf || s->p + s->len > buf + len)
		abort();
	if (memchr(s->p, '\r', s->len) != NULL ||
	    memchr(s->p, '\n', s->len) != NULL)
		abort();
}

static void
check_head(const char *buf, size_t len)
{
	struct http_head	 h;
	size_t			 end, skip;
	int			 r;

	end = http_head_end(buf, len, &skip);
	if (end > len || skip > len)
		abort();
	if (end == 0)
		end = len;
	r = http_parse_head(buf + skip, end - skip, &h);
	if (r != 0) {
		if (h.detail == NULL || r < 400 || r > 505)
			abort();
		return;
	}
	if (h.method == 0 || h.path.p == NULL || h.path.len == 0 ||
	    h.path.p[0] != '/' || memchr(h.path.p, '?', h.path.len) != NULL)
		abort();
	if (h.path.len > HTTP_LINE_MAX || (h.minor != 0 && h.minor != 1))
		abort();
	check_str(&h.path, buf + skip, end - skip);
	check_str(&h.query, buf + skip, end - skip);
	check_str(&h.token, buf + skip, end - skip);
	check_str(&h.proof, buf + skip, end - skip);
	check_str(&h.reqid, buf + skip, end - skip);
	if (h.reqid.p != NULL)
		(void)http_reqid_ok(h.reqid.p, h.reqid.len);
}

/* Escaped text: no raw control byte, no half character, within budget. */
static void
check_escape(const uint8_t *data, size_t size)
{
	char	 out[8192];
	size_t	 used, n, budget, i;

	budget = size > 0 ? data[0] * 8 : 0;
	if (budget > sizeof(out))
		budget = sizeof(out);
	n = json_escape(data, size, &used, out, budget);
	if (n > budget || used > size)
		abort();
	for (i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20)
			abort();
	if (json_escape(data, size, &used, NULL, budget) != n)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	 allow[128];

	check_head((const char *)data, size);
	check_escape(data, size);
	if (size >= 2)
		(void)http_methods_print(data[0] | data[1] << 8, allow,
		    sizeof(allow));
	return (0);
}
