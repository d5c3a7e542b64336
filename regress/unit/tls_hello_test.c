/*
 * tls_hello_test: the ClientHello's server name as the egress proxy's
 * passthrough reads it (relay/tls_hello.c; SPEC.md section 6a "TLS"):
 * OpenSSL's own hellos, with a name and without; every truncation asks
 * for more; a hello split over records of any size; each length of a
 * hand-made hello lying by one either way, and the forms that could be
 * read two ways, refused.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "tls_hello.h"

/* OpenSSL's ClientHello for sni (NULL: none): its bytes, *len. */
static unsigned char *
openssl_hello(const char *sni, size_t *len)
{
	SSL_CTX		*ctx;
	SSL		*ssl;
	BIO		*rb, *wb;
	unsigned char	*buf;
	long		 n;
	char		*p;

	ATF_REQUIRE((ctx = SSL_CTX_new(TLS_client_method())) != NULL);
	ATF_REQUIRE((ssl = SSL_new(ctx)) != NULL);
	rb = BIO_new(BIO_s_mem());
	wb = BIO_new(BIO_s_mem());
	SSL_set_bio(ssl, rb, wb);
	if (sni != NULL)
		ATF_REQUIRE(SSL_set_tlsext_host_name(ssl, sni) == 1);
	SSL_set_connect_state(ssl);
	ATF_REQUIRE(SSL_do_handshake(ssl) <= 0);
	n = BIO_get_mem_data(wb, &p);
	ATF_REQUIRE(n > 0);
	ATF_REQUIRE((buf = malloc(n)) != NULL);
	memcpy(buf, p, n);
	*len = n;
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return (buf);
}

/* The hello's handshake message split into records of at most step. */
static unsigned char *
resplit(const unsigned char *in, size_t inlen, size_t step, size_t *len)
{
	const unsigned char	*hs = in + 5;
	size_t			 hslen = inlen - 5, off, n, o = 0;
	unsigned char		*out;

	ATF_REQUIRE((out = malloc(hslen + 5 * (hslen / step + 1))) != NULL);
	for (off = 0; off < hslen; off += n) {
		n = hslen - off < step ? hslen - off : step;
		out[o++] = 22;
		out[o++] = 3;
		out[o++] = 1;
		out[o++] = n >> 8;
		out[o++] = n & 0xff;
		memcpy(out + o, hs + off, n);
		o += n;
	}
	*len = o;
	return (out);
}

/*
 * A hand-made hello (one record): offsets of its lengths in off[] (the
 * record's, the message's, session id, suites, compressions,
 * extensions, server_name's, its list's, the name's).
 */
enum { L_REC, L_HS, L_SID, L_CS, L_COMP, L_EXTS, L_SNI, L_LIST, L_NAME,
    L_N };
static size_t	off[L_N];

static size_t
put16(unsigned char *b, size_t o, size_t v)
{
	b[o] = v >> 8;
	b[o + 1] = v & 0xff;
	return (o + 2);
}

static size_t
made_hello(unsigned char *b, const char *name)
{
	size_t	 o = 0, nl = strlen(name), e;

	b[o++] = 22; b[o++] = 3; b[o++] = 1;
	off[L_REC] = o; o += 2;
	b[o++] = 1;
	off[L_HS] = o; o += 3;
	b[o++] = 3; b[o++] = 3;
	memset(b + o, 0x5a, 32); o += 32;
	off[L_SID] = o; b[o++] = 32;
	memset(b + o, 0xa5, 32); o += 32;
	off[L_CS] = o; o = put16(b, o, 4);
	b[o++] = 0x13; b[o++] = 0x01; b[o++] = 0x13; b[o++] = 0x02;
	off[L_COMP] = o; b[o++] = 1; b[o++] = 0;
	off[L_EXTS] = o; o += 2;
	e = o;
	o = put16(b, o, 10);		/* supported_groups: x25519 */
	o = put16(b, o, 4);
	o = put16(b, o, 2);
	o = put16(b, o, 0x1d);
	o = put16(b, o, 0);		/* server_name */
	off[L_SNI] = o; o = put16(b, o, 2 + 1 + 2 + nl);
	off[L_LIST] = o; o = put16(b, o, 1 + 2 + nl);
	b[o++] = 0;
	off[L_NAME] = o; o = put16(b, o, nl);
	memcpy(b + o, name, nl); o += nl;
	put16(b, off[L_EXTS], o - e);
	put16(b, off[L_REC], o - 5);
	b[off[L_HS]] = 0;
	put16(b, off[L_HS] + 1, o - 9);
	return (o);
}

static enum tls_peek
peek(const unsigned char *b, size_t len, char *name)
{
	return (tls_hello_sni(b, len, name, TLS_NAME_MAX + 1));
}

ATF_TC_WITHOUT_HEAD(openssl_hellos);
ATF_TC_BODY(openssl_hellos, tc)
{
	unsigned char	*b, *s;
	size_t		 len, slen, k, step;
	char		 name[TLS_NAME_MAX + 1];

	b = openssl_hello("API.Example.com", &len);
	ATF_CHECK_EQ(peek(b, len, name), TLS_PEEK_NAME);
	ATF_CHECK_STREQ(name, "api.example.com");
	/* What follows the hello (early data, say) is not its business. */
	ATF_REQUIRE((s = malloc(len + 6)) != NULL);
	memcpy(s, b, len);
	memcpy(s + len, "\x17\x03\x03\x00\x01\x00", 6);
	ATF_CHECK_EQ(peek(s, len + 6, name), TLS_PEEK_NAME);
	free(s);
	for (k = 0; k < len; k++)
		ATF_CHECK_MSG(peek(b, k, name) == TLS_PEEK_MORE,
		    "truncated at %zu of %zu", k, len);
	for (step = 1; step <= 300; step += step < 8 ? 1 : 37) {
		s = resplit(b, len, step, &slen);
		ATF_CHECK_MSG(peek(s, slen, name) == TLS_PEEK_NAME &&
		    strcmp(name, "api.example.com") == 0, "records of %zu",
		    step);
		for (k = 0; k < slen; k += 7)
			ATF_CHECK_EQ(peek(s, k, name), TLS_PEEK_MORE);
		free(s);
	}
	free(b);
	b = openssl_hello(NULL, &len);
	ATF_CHECK_EQ(peek(b, len, name), TLS_PEEK_NONAME);
	ATF_CHECK_STREQ(name, "");
	free(b);
}

ATF_TC_WITHOUT_HEAD(lying_lengths);
ATF_TC_BODY(lying_lengths, tc)
{
	unsigned char	 b[512], m[512];
	size_t		 len, i, v;
	char		 name[TLS_NAME_MAX + 1];
	int		 d, r;

	len = made_hello(b, "host.example");
	ATF_REQUIRE_EQ(peek(b, len, name), TLS_PEEK_NAME);
	ATF_CHECK_STREQ(name, "host.example");
	for (i = 0; i < L_N; i++)
		for (d = -1; d <= 1; d += 2) {
			memcpy(m, b, len);
			if (i == L_SID || i == L_COMP) {
				m[off[i]] += d;
			} else if (i == L_HS) {
				v = (size_t)m[off[i] + 1] << 8 | m[off[i] + 2];
				put16(m, off[i] + 1, v + d);
			} else {
				v = (size_t)m[off[i]] << 8 | m[off[i] + 1];
				put16(m, off[i], v + d);
			}
			r = peek(m, len, name);
			/* Longer than sent: it waits; else refused. */
			if ((i == L_REC || i == L_HS) && d == 1)
				ATF_CHECK_MSG(r == TLS_PEEK_MORE,
				    "length %zu %+d: %d", i, d, r);
			else
				ATF_CHECK_MSG(r == TLS_PEEK_BAD,
				    "length %zu %+d: %d", i, d, r);
			ATF_CHECK_MSG(r == TLS_PEEK_BAD || r == TLS_PEEK_MORE,
			    "length %zu %+d named '%s'", i, d, name);
		}
	/* Lengths at their largest: refused or waited for, never read. */
	for (i = 0; i < L_N; i++) {
		memcpy(m, b, len);
		if (i == L_SID || i == L_COMP)
			m[off[i]] = 0xff;
		else
			put16(m, off[i], 0xffff);
		r = peek(m, len, name);
		ATF_CHECK_MSG(r == TLS_PEEK_BAD || r == TLS_PEEK_MORE,
		    "length %zu at its largest: %d", i, r);
	}
}

ATF_TC_WITHOUT_HEAD(what_reads_two_ways_is_refused);
ATF_TC_BODY(what_reads_two_ways_is_refused, tc)
{
	static const char *const bad[] = { "a..b", ".lead", "trail.",
	    "sp ace", "nul\001", "x/y", NULL };
	unsigned char	 b[512], m[1024];
	size_t		 len, i, n;
	char		 name[TLS_NAME_MAX + 1];

	/* Not TLS at all: refused from its first byte. */
	ATF_CHECK_EQ(peek((const unsigned char *)"GET / HTTP/1.1\r\n", 16,
	    name), TLS_PEEK_BAD);
	ATF_CHECK_EQ(peek((const unsigned char *)"\x16\x02", 2, name),
	    TLS_PEEK_BAD);
	ATF_CHECK_EQ(peek((const unsigned char *)"\x16", 1, name),
	    TLS_PEEK_MORE);
	/* A record of nothing, a record over 2^14, a ServerHello. */
	len = made_hello(b, "h.example");
	memcpy(m, b, len);
	put16(m, off[L_REC], 0);
	ATF_CHECK_EQ(peek(m, len, name), TLS_PEEK_BAD);
	put16(m, off[L_REC], 16385);
	ATF_CHECK_EQ(peek(m, len, name), TLS_PEEK_BAD);
	memcpy(m, b, len);
	m[off[L_HS] - 1] = 2;
	ATF_CHECK_EQ(peek(m, len, name), TLS_PEEK_BAD);
	/* A second server_name extension: which would the server read? */
	memcpy(m, b, len);
	n = len - off[L_SNI] + 2;	/* the extension, type to its end */
	memcpy(m + len, b + off[L_SNI] - 2, n);
	put16(m, off[L_EXTS], ((size_t)b[off[L_EXTS]] << 8 |
	    b[off[L_EXTS] + 1]) + n);
	put16(m, off[L_REC], len + n - 5);
	put16(m, off[L_HS] + 1, len + n - 9);
	ATF_CHECK_EQ(peek(m, len + n, name), TLS_PEEK_BAD);
	ATF_CHECK_STREQ(name, "");
	/* Names that are no DNS name. */
	for (i = 0; bad[i] != NULL; i++) {
		len = made_hello(b, bad[i]);
		ATF_CHECK_MSG(peek(b, len, name) == TLS_PEEK_BAD, "%s", bad[i]);
	}
	/* A name longer than the caller's buffer. */
	len = made_hello(b, "abcdefgh.example");
	ATF_CHECK_EQ(tls_hello_sni(b, len, name, 8), TLS_PEEK_BAD);
	/* What never ends is refused once TLS_PEEK_MAX was read. */
	{
		unsigned char	*big;

		ATF_REQUIRE((big = calloc(1, TLS_PEEK_MAX + 16)) != NULL);
		for (i = 0; i + 6 <= TLS_PEEK_MAX + 16; i += 6) {
			big[i] = 22; big[i + 1] = 3; big[i + 2] = 1;
			big[i + 4] = 1;
			big[i + 5] = i == 0 ? 1 : 0x20;
		}
		/* The message's first bytes: a ClientHello of 0x3f00. */
		big[11] = 0; big[17] = 0x3f; big[23] = 0;
		ATF_CHECK_EQ(tls_hello_sni(big, TLS_PEEK_MAX - 1, name,
		    sizeof(name)), TLS_PEEK_MORE);
		ATF_CHECK_EQ(tls_hello_sni(big, TLS_PEEK_MAX + 16, name,
		    sizeof(name)), TLS_PEEK_BAD);
		free(big);
	}
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, openssl_hellos);
	ATF_TP_ADD_TC(tp, lying_lengths);
	ATF_TP_ADD_TC(tp, what_reads_two_ways_is_refused);
	return (atf_no_error());
}
