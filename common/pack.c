/*
 * pack: length-prefixed strings for imsg payloads.
 */

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pack.h"

void
pack_init(struct pack *pk)
{
	memset(pk, 0, sizeof(*pk));
}

static void
pack_grow(struct pack *pk, size_t need)
{
	size_t	 cap;
	char	*nb;

	if (pk->cap - pk->len >= need)
		return;
	cap = pk->cap ? pk->cap : 256;
	while (cap - pk->len < need) {
		if (cap > SIZE_MAX / 2)
			fatalx("%s: too large", __func__);
		cap *= 2;
	}
	/* Not realloc: the old buffer may hold secret bytes. */
	if ((nb = malloc(cap)) == NULL)
		fatal("%s: malloc", __func__);
	if (pk->len > 0)
		memcpy(nb, pk->buf, pk->len);
	freezero(pk->buf, pk->cap);
	pk->buf = nb;
	pk->cap = cap;
}

void
pack_u32(struct pack *pk, uint32_t v)
{
	pack_grow(pk, sizeof(v));
	memcpy(pk->buf + pk->len, &v, sizeof(v));
	pk->len += sizeof(v);
}

void
pack_bytes(struct pack *pk, const void *p, size_t len)
{
	if (len > UINT32_MAX)
		fatalx("%s: too large", __func__);
	pack_u32(pk, len);
	pack_grow(pk, len + 1);
	if (len > 0)
		memcpy(pk->buf + pk->len, p, len);
	pk->buf[pk->len + len] = '\0';
	pk->len += len + 1;
}

void
pack_str(struct pack *pk, const char *s)
{
	pack_bytes(pk, s, strlen(s));
}

void
pack_free(struct pack *pk)
{
	freezero(pk->buf, pk->cap);
	memset(pk, 0, sizeof(*pk));
}

void
unpack_init(struct unpack *up, const void *p, size_t len)
{
	up->p = p;
	up->left = len;
	up->bad = 0;
}

uint32_t
unpack_u32(struct unpack *up)
{
	uint32_t	 v;

	if (up->bad || up->left < sizeof(v)) {
		up->bad = 1;
		return (0);
	}
	memcpy(&v, up->p, sizeof(v));
	up->p += sizeof(v);
	up->left -= sizeof(v);
	return (v);
}

const char *
unpack_bytes(struct unpack *up, size_t *lenp)
{
	const char	*s;
	uint32_t	 len;

	*lenp = 0;
	len = unpack_u32(up);
	if (up->bad || up->left < (size_t)len + 1 || up->p[len] != '\0') {
		up->bad = 1;
		return (NULL);
	}
	s = up->p;
	up->p += (size_t)len + 1;
	up->left -= (size_t)len + 1;
	*lenp = len;
	return (s);
}

const char *
unpack_str(struct unpack *up)
{
	const char	*s;
	size_t		 len;

	if ((s = unpack_bytes(up, &len)) == NULL)
		return (NULL);
	if (strlen(s) != len) {
		up->bad = 1;
		return (NULL);
	}
	return (s);
}

int
unpack_done(struct unpack *up)
{
	return (up->bad || up->left != 0 ? -1 : 0);
}
