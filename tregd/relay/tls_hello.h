/*
 * tls_hello.c: the server name of a TLS ClientHello, read from the bytes
 * a client sent without terminating its TLS (the egress proxy's
 * passthrough, SPEC 6a "TLS").  Pure: no I/O, no allocation; the unit
 * test (regress/unit/tls_hello_test.c) and the egress fuzz target call
 * it as the proxy does.
 */

#ifndef TLS_HELLO_H
#define TLS_HELLO_H

#include <stddef.h>

#define TLS_HELLO_MAX	(16 * 1024)	/* a ClientHello's handshake bytes */
#define TLS_PEEK_MAX	(32 * 1024)	/* what is read to find them */
#define TLS_NAME_MAX	253		/* a DNS name, no trailing dot */

enum tls_peek {
	TLS_PEEK_MORE,		/* incomplete: read more (under TLS_PEEK_MAX) */
	TLS_PEEK_NAME,		/* a ClientHello naming a host_name */
	TLS_PEEK_NONAME,	/* a ClientHello with no server name */
	TLS_PEEK_BAD		/* not a ClientHello, or a malformed one */
};

enum tls_peek tls_hello_sni(const unsigned char *, size_t, char *, size_t);

#endif /* TLS_HELLO_H */
