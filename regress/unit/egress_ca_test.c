/*
 * egress_ca_test: the egress proxy's run CA and its leaves
 * (relay/egress_ca.c, SPEC.md section 6a "TLS"), through real TLS
 * handshakes over a socketpair: a client that trusts only the run CA
 * and checks the host name accepts the leaf made for that host (a DNS
 * name, an IP literal) and refuses it for any other.
 */

#include <sys/types.h>
#include <sys/socket.h>

#include <atf-c.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "relay.h"

static int	 servername(SSL *, int *, void *);
static SSL_CTX	*client_ctx(void);
static long	 handshake(const char *, const char *, X509 **);

/* The server side: the leaf of the name the client asked for. */
static int
servername(SSL *ssl, int *alert, void *arg)
{
	const char	*host = SSL_get_servername(ssl,
			    TLSEXT_NAMETYPE_host_name);

	if (host == NULL)
		return (SSL_TLSEXT_ERR_NOACK);	/* set before (CONNECT) */
	if (egress_ca_use(ssl, host) == -1) {
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return (SSL_TLSEXT_ERR_ALERT_FATAL);
	}
	return (SSL_TLSEXT_ERR_OK);
}

/* A client that trusts the run CA alone. */
static SSL_CTX *
client_ctx(void)
{
	SSL_CTX		*ctx;
	BIO		*bio;
	X509		*ca;
	char		*pem;
	size_t		 len;

	ATF_REQUIRE((pem = egress_ca_pem(&len)) != NULL);
	ATF_REQUIRE(strstr(pem, "-----BEGIN CERTIFICATE-----") == pem);
	ATF_REQUIRE((bio = BIO_new_mem_buf(pem, len)) != NULL);
	ATF_REQUIRE((ca = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL);
	ATF_CHECK_EQ(X509_check_ca(ca), 1);
	ATF_REQUIRE((ctx = SSL_CTX_new(TLS_client_method())) != NULL);
	ATF_REQUIRE(X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca));
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	X509_free(ca);
	BIO_free(bio);
	free(pem);
	return (ctx);
}

/*
 * A handshake of a client that asks for host and checks the certificate
 * names want; the verify result (X509_V_OK or why not), the leaf in *leaf
 * (the caller frees it).
 */
static long
handshake(const char *host, const char *want, X509 **leaf)
{
	SSL_CTX	*sctx, *cctx;
	SSL	*s, *c;
	int	 sv[2], rs = 0, rc = 0, i, ip;
	long	 v;

	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	ATF_REQUIRE((sctx = SSL_CTX_new(TLS_server_method())) != NULL);
	SSL_CTX_set_tlsext_servername_callback(sctx, servername);
	ip = strspn(host, "0123456789.:") == strlen(host);
	cctx = client_ctx();
	ATF_REQUIRE((s = SSL_new(sctx)) != NULL);
	ATF_REQUIRE((c = SSL_new(cctx)) != NULL);
	/* No SNI for an address: the proxy knows it from CONNECT. */
	if (ip)
		ATF_REQUIRE(egress_ca_use(s, host) == 0);
	SSL_set_fd(s, sv[0]);
	SSL_set_fd(c, sv[1]);
	if (!ip)
		SSL_set_tlsext_host_name(c, host);
	if (strspn(want, "0123456789.:") == strlen(want))
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c), want);
	else
		SSL_set1_host(c, want);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	for (i = 0; i < 1000 && (rs != 1 || rc != 1); i++) {
		if (rc != 1 && (rc = SSL_do_handshake(c)) <= 0 &&
		    SSL_get_error(c, rc) != SSL_ERROR_WANT_READ)
			break;
		if (rs != 1 && (rs = SSL_do_handshake(s)) <= 0 &&
		    SSL_get_error(s, rs) != SSL_ERROR_WANT_READ)
			break;
	}
	v = SSL_get_verify_result(c);
	if (rc != 1 && v == X509_V_OK)
		v = -1;			/* no handshake, no verdict */
	if (v == X509_V_OK && leaf != NULL)
		*leaf = SSL_get1_peer_certificate(c);
	SSL_free(s);
	SSL_free(c);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	close(sv[0]);
	close(sv[1]);
	ERR_clear_error();
	return (v);
}

ATF_TC_WITHOUT_HEAD(a_leaf_for_a_name_verifies_against_the_run_ca);
ATF_TC_BODY(a_leaf_for_a_name_verifies_against_the_run_ca, tc)
{
	X509	*leaf = NULL;

	ATF_REQUIRE(egress_ca_init() == 0);
	ATF_CHECK_EQ(handshake("api.github.com", "api.github.com", &leaf),
	    X509_V_OK);
	ATF_REQUIRE(leaf != NULL);
	ATF_CHECK_EQ(X509_check_host(leaf, "api.github.com", 0, 0, NULL), 1);
	ATF_CHECK_EQ(X509_check_ca(leaf), 0);
	X509_free(leaf);
	egress_ca_free();
}

ATF_TC_WITHOUT_HEAD(a_leaf_for_an_ip_literal_names_the_address);
ATF_TC_BODY(a_leaf_for_an_ip_literal_names_the_address, tc)
{
	ATF_REQUIRE(egress_ca_init() == 0);
	ATF_CHECK_EQ(handshake("127.0.0.1", "127.0.0.1", NULL), X509_V_OK);
	ATF_CHECK(handshake("127.0.0.1", "127.0.0.2", NULL) != X509_V_OK);
	egress_ca_free();
}

ATF_TC_WITHOUT_HEAD(a_leaf_is_refused_for_another_host);
ATF_TC_BODY(a_leaf_is_refused_for_another_host, tc)
{
	ATF_REQUIRE(egress_ca_init() == 0);
	ATF_CHECK_EQ(handshake("api.github.com", "evil.example", NULL),
	    X509_V_ERR_HOSTNAME_MISMATCH);
	egress_ca_free();
}

/* A CN holds 64 bytes: a longer name (an S3 bucket's) is in SAN only. */
ATF_TC_WITHOUT_HEAD(a_leaf_for_a_name_longer_than_a_cn);
ATF_TC_BODY(a_leaf_for_a_name_longer_than_a_cn, tc)
{
	const char	*h = "my-rather-long-bucket-name-for-the-logs-of-2026.s3.us-west-2."
			    "amazonaws.com";

	ATF_REQUIRE(strlen(h) > 64);
	ATF_REQUIRE(egress_ca_init() == 0);
	ATF_CHECK_EQ(handshake(h, h, NULL), X509_V_OK);
	egress_ca_free();
}

ATF_TC_WITHOUT_HEAD(leaves_are_kept_and_the_cache_is_bounded);
ATF_TC_BODY(leaves_are_kept_and_the_cache_is_bounded, tc)
{
	X509	*a = NULL, *b = NULL, *c = NULL;
	SSL_CTX	*ctx;
	SSL	*ssl;
	char	 host[64];
	int	 i;

	ATF_REQUIRE(egress_ca_init() == 0);
	ATF_CHECK_EQ(handshake("a.example", "a.example", &a), X509_V_OK);
	ATF_CHECK_EQ(handshake("a.example", "a.example", &b), X509_V_OK);
	ATF_REQUIRE(a != NULL && b != NULL);
	ATF_CHECK_MSG(X509_cmp(a, b) == 0, "a second leaf for one host");
	/* Fill the cache past its bound: a.example's leaf is made anew. */
	ATF_REQUIRE((ctx = SSL_CTX_new(TLS_server_method())) != NULL);
	for (i = 0; i < EGRESS_LEAVES_MAX; i++) {
		ATF_REQUIRE((ssl = SSL_new(ctx)) != NULL);
		snprintf(host, sizeof(host), "h%d.example", i);
		ATF_REQUIRE(egress_ca_use(ssl, host) == 0);
		SSL_free(ssl);
	}
	ATF_CHECK_EQ(handshake("a.example", "a.example", &c), X509_V_OK);
	ATF_REQUIRE(c != NULL);
	ATF_CHECK_MSG(X509_cmp(a, c) != 0, "the evicted leaf came back");
	/* A name no certificate can carry is refused. */
	ATF_REQUIRE((ssl = SSL_new(ctx)) != NULL);
	ATF_CHECK_EQ(egress_ca_use(ssl, ""), -1);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	X509_free(a);
	X509_free(b);
	X509_free(c);
	egress_ca_free();
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, a_leaf_for_a_name_verifies_against_the_run_ca);
	ATF_TP_ADD_TC(tp, a_leaf_for_an_ip_literal_names_the_address);
	ATF_TP_ADD_TC(tp, a_leaf_is_refused_for_another_host);
	ATF_TP_ADD_TC(tp, a_leaf_for_a_name_longer_than_a_cn);
	ATF_TP_ADD_TC(tp, leaves_are_kept_and_the_cache_is_bounded);
	return (atf_no_error());
}
