/*
 * tls_hello.c: the server name (SNI) of a TLS ClientHello, read by hand
 * from what the client sent, its TLS left alone (tls_hello.h).
 *
 * The first flight as RFC 8446 (sections 5.1 and 4.1.2) frames it:
 * records of type handshake (22), version 3.x, 1 to 2^14 bytes each,
 * whose fragments make exactly one handshake message, a ClientHello (1)
 * of at most TLS_HELLO_MAX bytes; its fields up to the extensions; the
 * extensions to the message's exact end; server_name (0, RFC 6066
 * section 3) at most once, its list to the extension's exact end, at
 * most one host_name.  Every length is checked against what holds it
 * before a byte under it is read: a lying length is a refusal, never a
 * read past the input.  The name is what the proxy checks against the
 * egress list, so anything that could be read two ways (a second name,
 * a second extension, bytes after the hello in its record) is refused.
 */

#include <sys/types.h>

#include <ctype.h>
#include <string.h>

#include "tls_hello.h"

#define TLS_REC_HEAD	5
#define TLS_REC_MAX	16384		/* a record's fragment, 2^14 */
#define TLS_HS_HEAD	4
#define TLS_CT_HANDSHAKE 22
#define TLS_HT_CLIENT_HELLO 1
#define TLS_EXT_SNI	0
#define TLS_NT_HOST	0

/* A bounded reader: each read checks what is left first. */
struct rd {
	const unsigned char	*p;
	size_t			 left;
};

static int
rd_u8(struct rd *r, size_t *v)
{
	if (r->left < 1)
		return (-1);
	*v = r->p[0];
	r->p++;
	r->left--;
	return (0);
}

static int
rd_u16(struct rd *r, size_t *v)
{
	if (r->left < 2)
		return (-1);
	*v = (size_t)r->p[0] << 8 | r->p[1];
	r->p += 2;
	r->left -= 2;
	return (0);
}

/* The next n bytes as a reader of their own (sub may be NULL: skipped). */
static int
rd_sub(struct rd *r, size_t n, struct rd *sub)
{
	if (r->left < n)
		return (-1);
	if (sub != NULL) {
		sub->p = r->p;
		sub->left = n;
	}
	r->p += n;
	r->left -= n;
	return (0);
}

/*
 * The handshake message from the records' fragments into hs (at least
 * TLS_HELLO_MAX bytes), its length in *hslen: TLS_PEEK_NAME when it is
 * whole (its name not read yet).
 */
static enum tls_peek
hello_gather(const unsigned char *buf, size_t len, unsigned char *hs,
    size_t *hslen)
{
	const unsigned char	*frag;
	size_t			 off = 0, have = 0, need = 0, rl, k;

	while (need == 0 || have < need) {
		if (len - off >= 1 && buf[off] != TLS_CT_HANDSHAKE)
			return (TLS_PEEK_BAD);
		if (len - off >= 2 && buf[off + 1] != 3)
			return (TLS_PEEK_BAD);
		if (len - off < TLS_REC_HEAD)
			return (TLS_PEEK_MORE);
		rl = (size_t)buf[off + 3] << 8 | buf[off + 4];
		if (rl == 0 || rl > TLS_REC_MAX)
			return (TLS_PEEK_BAD);
		if (len - off - TLS_REC_HEAD < rl)
			return (TLS_PEEK_MORE);
		frag = buf + off + TLS_REC_HEAD;
		off += TLS_REC_HEAD + rl;
		if (have < TLS_HS_HEAD) {
			k = TLS_HS_HEAD - have < rl ? TLS_HS_HEAD - have : rl;
			memcpy(hs + have, frag, k);
			have += k;
			frag += k;
			rl -= k;
			if (have < TLS_HS_HEAD)
				continue;
			if (hs[0] != TLS_HT_CLIENT_HELLO)
				return (TLS_PEEK_BAD);
			need = TLS_HS_HEAD + ((size_t)hs[1] << 16 |
			    (size_t)hs[2] << 8 | hs[3]);
			if (need == TLS_HS_HEAD || need > TLS_HELLO_MAX)
				return (TLS_PEEK_BAD);
		}
		/* Nothing after the hello in its records. */
		if (rl > need - have)
			return (TLS_PEEK_BAD);
		memcpy(hs + have, frag, rl);
		have += rl;
	}
	*hslen = have;
	return (TLS_PEEK_NAME);
}

/* server_name's data: one host_name, a DNS name's bytes (0, or -1). */
static int
sni_name(struct rd *ext, char *name, size_t namesz, int *got)
{
	struct rd	 list, nm;
	size_t		 n, type, nlen, i;
	int		 c;

	if (rd_u16(ext, &n) == -1 || n != ext->left || n == 0 ||
	    rd_sub(ext, n, &list) == -1)
		return (-1);
	while (list.left > 0) {
		if (rd_u8(&list, &type) == -1 || rd_u16(&list, &nlen) == -1 ||
		    rd_sub(&list, nlen, &nm) == -1)
			return (-1);
		if (type != TLS_NT_HOST)
			continue;
		if (*got || nlen == 0 || nlen > TLS_NAME_MAX || nlen >= namesz)
			return (-1);
		for (i = 0; i < nlen; i++) {
			c = nm.p[i];
			if (!isalnum(c) && c != '-' && c != '_' &&
			    (c != '.' || i == 0 || i == nlen - 1 ||
			    nm.p[i - 1] == '.'))
				return (-1);
			name[i] = tolower(c);
		}
		name[nlen] = '\0';
		*got = 1;
	}
	return (0);
}

/*
 * The host_name the ClientHello at the start of buf (len bytes, what was
 * read so far, at most TLS_PEEK_MAX of it) names, in name (namesz bytes,
 * lower case).  TLS_PEEK_MORE only while len < TLS_PEEK_MAX.
 */
enum tls_peek
tls_hello_sni(const unsigned char *buf, size_t len, char *name,
    size_t namesz)
{
	unsigned char	 hs[TLS_HELLO_MAX];
	struct rd	 r, ext;
	size_t		 hslen, n, type;
	enum tls_peek	 pk;
	int		 seen = 0, got = 0;

	if (namesz > 0)
		name[0] = '\0';
	if (len > TLS_PEEK_MAX)
		len = TLS_PEEK_MAX;
	pk = hello_gather(buf, len, hs, &hslen);
	if (pk == TLS_PEEK_MORE && len >= TLS_PEEK_MAX)
		return (TLS_PEEK_BAD);
	if (pk != TLS_PEEK_NAME)
		return (pk);
	r.p = hs + TLS_HS_HEAD;
	r.left = hslen - TLS_HS_HEAD;
	/* legacy_version, random, session id, suites, compressions */
	if (rd_sub(&r, 2 + 32, NULL) == -1 || rd_u8(&r, &n) == -1 ||
	    n > 32 || rd_sub(&r, n, NULL) == -1 ||
	    rd_u16(&r, &n) == -1 || n < 2 || n % 2 != 0 ||
	    rd_sub(&r, n, NULL) == -1 ||
	    rd_u8(&r, &n) == -1 || n < 1 || rd_sub(&r, n, NULL) == -1)
		return (TLS_PEEK_BAD);
	if (r.left == 0)
		return (TLS_PEEK_NONAME);	/* no extensions at all */
	if (rd_u16(&r, &n) == -1 || n != r.left)
		return (TLS_PEEK_BAD);
	while (r.left > 0) {
		if (rd_u16(&r, &type) == -1 || rd_u16(&r, &n) == -1 ||
		    rd_sub(&r, n, &ext) == -1)
			return (TLS_PEEK_BAD);
		if (type != TLS_EXT_SNI)
			continue;
		if (seen++ || sni_name(&ext, name, namesz, &got) == -1) {
			if (namesz > 0)
				name[0] = '\0';
			return (TLS_PEEK_BAD);
		}
	}
	return (got ? TLS_PEEK_NAME : TLS_PEEK_NONAME);
}
