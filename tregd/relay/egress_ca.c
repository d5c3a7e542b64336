/*
 * egress_ca.c: the run CA of the egress proxy (SPEC.md section 6a,
 * "TLS").  The relay makes it at start with OpenSSL (ECDSA P-256); its
 * key lives in this process only, is never written anywhere and is
 * freed (OpenSSL clears EC private keys) when the relay ends.  Its
 * certificate goes to exec, which puts it in the CA bundle each run
 * sees.
 *
 * Leaf certificates are made per host on demand, signed by the run CA,
 * with one leaf key for them all (a leaf proves nothing beyond this
 * host's runs, which trust the CA only inside their own sandbox), and
 * cached: a CLI that opens a connection per request costs one signature
 * the first time only.  A leaf names its host in subjectAltName (a DNS
 * name, or an IP address for a literal), as Go, OpenSSL and Python
 * check it.
 */

#include <sys/types.h>
#include <sys/tree.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "relay.h"

#define CA_DAYS		3650	/* as long as the process: it ends first */
#define LEAF_SECS	(7 * 24 * 3600)
#define LEAF_RENEW	(24 * 3600)	/* made again this long before */

struct leaf {
	RB_ENTRY(leaf)	 entry;
	char		 host[HOST_LEN_MAX];
	X509		*cert;
	time_t		 until;		/* its notAfter */
	uint64_t	 used;		/* for the eviction */
};
RB_HEAD(leaf_tree, leaf);

static int	 leaf_cmp(struct leaf *, struct leaf *);
RB_PROTOTYPE_STATIC(leaf_tree, leaf, entry, leaf_cmp);
RB_GENERATE_STATIC(leaf_tree, leaf, entry, leaf_cmp);

static EVP_PKEY		*ca_key, *leaf_key;
static X509		*ca_cert;
static struct leaf_tree	 leaves = RB_INITIALIZER(&leaves);
static size_t		 nleaves;
static uint64_t		 leaf_clock;

static X509	*cert_new(const char *, time_t, EVP_PKEY *);
static int	 cert_ext(X509 *, X509 *, int, const char *);
static X509	*leaf_make(const char *);
static void	 leaf_evict(void);

static int
leaf_cmp(struct leaf *a, struct leaf *b)
{
	return (strcmp(a->host, b->host));
}

/* A certificate of subject CN cn with key's public half, valid secs. */
static X509 *
cert_new(const char *cn, time_t secs, EVP_PKEY *key)
{
	X509		*x;
	X509_NAME	*name;
	unsigned char	 serial[16];
	BIGNUM		*bn;

	if ((x = X509_new()) == NULL)
		return (NULL);
	RAND_bytes(serial, sizeof(serial));
	serial[0] &= 0x7f;		/* a positive serial */
	if ((bn = BN_bin2bn(serial, sizeof(serial), NULL)) == NULL ||
	    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL ||
	    !X509_set_version(x, 2) ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), secs) == NULL ||
	    !X509_set_pubkey(x, key) ||
	    (name = X509_get_subject_name(x)) == NULL ||
	    !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
	    (const unsigned char *)"tregd", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0)) {
		BN_free(bn);
		X509_free(x);
		return (NULL);
	}
	BN_free(bn);
	return (x);
}

/* Add extension nid = value to x, issued by issuer. */
static int
cert_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX	 ctx;
	X509_EXTENSION	*ext;
	int		 ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return (0);
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return (ok);
}

/* The run CA and the leaves' key: at start, before the sandbox. */
int
egress_ca_init(void)
{
	if ((ca_key = EVP_EC_gen("P-256")) == NULL ||
	    (leaf_key = EVP_EC_gen("P-256")) == NULL) {
		log_warnx("run CA: cannot make a key");
		return (-1);
	}
	if ((ca_cert = cert_new("tregd run CA", CA_DAYS * 24L * 3600,
	    ca_key)) == NULL ||
	    !X509_set_issuer_name(ca_cert, X509_get_subject_name(ca_cert)) ||
	    !cert_ext(ca_cert, ca_cert, NID_basic_constraints,
	    "critical,CA:TRUE,pathlen:0") ||
	    !cert_ext(ca_cert, ca_cert, NID_key_usage,
	    "critical,keyCertSign,cRLSign") ||
	    !cert_ext(ca_cert, ca_cert, NID_subject_key_identifier, "hash") ||
	    !X509_sign(ca_cert, ca_key, EVP_sha256())) {
		log_warnx("run CA: cannot make its certificate");
		return (-1);
	}
	return (0);
}

/* The run CA's certificate in PEM; the caller frees it. */
char *
egress_ca_pem(size_t *len)
{
	BIO	*bio;
	char	*p, *out;
	long	 n;

	if (ca_cert == NULL || (bio = BIO_new(BIO_s_mem())) == NULL)
		return (NULL);
	if (!PEM_write_bio_X509(bio, ca_cert) ||
	    (n = BIO_get_mem_data(bio, &p)) <= 0 ||
	    (out = malloc(n + 1)) == NULL) {
		BIO_free(bio);
		return (NULL);
	}
	memcpy(out, p, n);
	out[n] = '\0';
	*len = n;
	BIO_free(bio);
	return (out);
}

/* A leaf for host (a DNS name or an IP literal), signed by the CA. */
static X509 *
leaf_make(const char *host)
{
	X509		*x;
	unsigned char	 a[16];
	char		 san[HOST_LEN_MAX + 8];
	int		 ip;

	ip = inet_pton(AF_INET, host, a) == 1 ||
	    inet_pton(AF_INET6, host, a) == 1;
	snprintf(san, sizeof(san), "%s:%s", ip ? "IP" : "DNS", host);
	/* A CN holds 64 bytes at most; clients read subjectAltName. */
	if ((x = cert_new(strlen(host) <= 64 ? host : "tregd run leaf",
	    LEAF_SECS, leaf_key)) == NULL)
		return (NULL);
	if (!X509_set_issuer_name(x, X509_get_subject_name(ca_cert)) ||
	    !cert_ext(x, ca_cert, NID_basic_constraints, "critical,CA:FALSE") ||
	    !cert_ext(x, ca_cert, NID_key_usage,
	    "critical,digitalSignature") ||
	    !cert_ext(x, ca_cert, NID_ext_key_usage, "serverAuth") ||
	    !cert_ext(x, ca_cert, NID_subject_alt_name, san) ||
	    !cert_ext(x, ca_cert, NID_authority_key_identifier, "keyid") ||
	    !X509_sign(x, ca_key, EVP_sha256())) {
		X509_free(x);
		return (NULL);
	}
	return (x);
}

/* The least recently used leaf goes when the cache is full. */
static void
leaf_evict(void)
{
	struct leaf	*l, *old = NULL;

	RB_FOREACH(l, leaf_tree, &leaves)
		if (old == NULL || l->used < old->used)
			old = l;
	if (old == NULL)
		return;
	RB_REMOVE(leaf_tree, &leaves, old);
	X509_free(old->cert);
	free(old);
	nleaves--;
}

/*
 * Put host's leaf and the leaf key on ssl (a server handshake about to
 * start, or in its servername callback).  -1 when host is not a name a
 * certificate can carry or a leaf cannot be made.
 */
int
egress_ca_use(SSL *ssl, const char *host)
{
	struct leaf	 key, *l;
	time_t		 now = time(NULL);

	if (ca_cert == NULL || strlcpy(key.host, host, sizeof(key.host)) >=
	    sizeof(key.host) || host[0] == '\0')
		return (-1);
	if ((l = RB_FIND(leaf_tree, &leaves, &key)) != NULL &&
	    l->until - LEAF_RENEW < now) {
		RB_REMOVE(leaf_tree, &leaves, l);
		X509_free(l->cert);
		free(l);
		nleaves--;
		l = NULL;
	}
	if (l == NULL) {
		if (nleaves >= EGRESS_LEAVES_MAX)
			leaf_evict();
		if ((l = calloc(1, sizeof(*l))) == NULL)
			fatal("%s: calloc", __func__);
		strlcpy(l->host, host, sizeof(l->host));
		if ((l->cert = leaf_make(host)) == NULL) {
			free(l);
			return (-1);
		}
		l->until = now + LEAF_SECS;
		RB_INSERT(leaf_tree, &leaves, l);
		nleaves++;
	}
	l->used = ++leaf_clock;
	if (SSL_use_certificate(ssl, l->cert) != 1 ||
	    SSL_use_PrivateKey(ssl, leaf_key) != 1)
		return (-1);
	return (0);
}

/* The keys go with the process; OpenSSL clears an EC key it frees. */
void
egress_ca_free(void)
{
	struct leaf	*l, *t;

	RB_FOREACH_SAFE(l, leaf_tree, &leaves, t) {
		RB_REMOVE(leaf_tree, &leaves, l);
		X509_free(l->cert);
		free(l);
	}
	nleaves = 0;
	X509_free(ca_cert);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(leaf_key);
	ca_cert = NULL;
	ca_key = leaf_key = NULL;
}
