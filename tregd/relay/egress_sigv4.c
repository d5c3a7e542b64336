/*
 * egress_sigv4.c: AWS Signature Version 4 for keyless runs (SPEC.md
 * section 6a, "Substitution").  A run holds placeholders for its access
 * key id and secret access key and signs its requests with them; the
 * egress proxy checks that signature with the placeholder secret (a
 * request that does not verify is refused: it was not made by the run's
 * CLI with the run's credentials) and signs the request again with the
 * real secret.  The same canonical request serves both, so what the CLI
 * signed is exactly what goes upstream.
 *
 * The canonical request as the specification builds it: the method; the
 * path as sent, URI-encoded once more except for S3; the query's
 * parameters decoded, encoded again (RFC 3986 unreserved bytes kept),
 * sorted by name then value (a presigned URL's X-Amz-Signature left
 * out); the signed headers, names in lower case, values trimmed with
 * runs of spaces folded, repeats joined with ','; the signed header
 * list; the payload's hash.  Pure functions: no I/O, no process state.
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

#define SIGV4_ALGO	"AWS4-HMAC-SHA256"

struct qparam {
	char	*k, *v;
};

static void	 buf_str(struct ebuf *, const char *);
static void	 buf_enc(struct ebuf *, const char *, size_t, int);
static char	*pct_decode(const char *, size_t);
static int	 qparam_cmp(const void *, const void *);
static int	 canon_query(struct ebuf *, const char *, int);
static void	 canon_headers(struct ebuf *, const struct sigv4_req *,
		    const char *);
static int	 field(const char *, const char *, char *, size_t);

static void
buf_str(struct ebuf *b, const char *s)
{
	ebuf_add(b, s, strlen(s));
}

/* URI-encode as SigV4 does: unreserved bytes kept, '/' kept if slash. */
static void
buf_enc(struct ebuf *b, const char *p, size_t n, int slash)
{
	char	 hex[4];
	size_t	 i;

	for (i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (isalnum(c) || c == '-' || c == '_' || c == '.' ||
		    c == '~' || (slash && c == '/'))
			ebuf_add(b, (const char *)&c, 1);
		else {
			snprintf(hex, sizeof(hex), "%%%02X", c);
			ebuf_add(b, hex, 3);
		}
	}
}

/* n bytes at p with %XX decoded (a malformed one kept as it is). */
static char *
pct_decode(const char *p, size_t n)
{
	char	*out;
	size_t	 i, o = 0;
	int	 hi, lo;

	if ((out = malloc(n + 1)) == NULL)
		fatal("%s: malloc", __func__);
	for (i = 0; i < n; i++) {
		if (p[i] == '%' && i + 2 < n &&
		    (hi = hexdigit((unsigned char)p[i + 1])) != -1 &&
		    (lo = hexdigit((unsigned char)p[i + 2])) != -1) {
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else
			out[o++] = p[i];
	}
	out[o] = '\0';
	return (out);
}

static int
qparam_cmp(const void *a, const void *b)
{
	const struct qparam	*x = a, *y = b;
	int			 r;

	if ((r = strcmp(x->k, y->k)) != 0)
		return (r);
	return (strcmp(x->v, y->v));
}

/* The canonical query string; presigned: without X-Amz-Signature. */
static int
canon_query(struct ebuf *b, const char *q, int presigned)
{
	struct qparam	*ps = NULL;
	const char	*p, *amp, *eq;
	size_t		 n = 0, i, cap = 0;
	int		 first = 1;

	for (p = q; *p != '\0'; p = *amp ? amp + 1 : amp) {
		if ((amp = strchr(p, '&')) == NULL)
			amp = p + strlen(p);
		if (amp == p)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			if (cap > SIGV4_QUERY_MAX ||
			    (ps = reallocarray(ps, cap, sizeof(*ps))) == NULL)
				goto fail;
		}
		eq = memchr(p, '=', amp - p);
		ps[n].k = pct_decode(p, (eq ? eq : amp) - p);
		ps[n].v = eq ? pct_decode(eq + 1, amp - eq - 1) : strdup("");
		if (ps[n].v == NULL)
			fatal("%s: strdup", __func__);
		if (presigned && strcmp(ps[n].k, "X-Amz-Signature") == 0) {
			free(ps[n].k);
			free(ps[n].v);
			continue;
		}
		n++;
	}
	if (n > 0)
		qsort(ps, n, sizeof(*ps), qparam_cmp);
	for (i = 0; i < n; i++) {
		if (!first)
			ebuf_add(b, "&", 1);
		first = 0;
		buf_enc(b, ps[i].k, strlen(ps[i].k), 0);
		ebuf_add(b, "=", 1);
		buf_enc(b, ps[i].v, strlen(ps[i].v), 0);
	}
	for (i = 0; i < n; i++) {
		free(ps[i].k);
		freezero(ps[i].v, strlen(ps[i].v));
	}
	free(ps);
	return (0);
 fail:
	for (i = 0; i < n; i++) {
		free(ps[i].k);
		freezero(ps[i].v, strlen(ps[i].v));
	}
	free(ps);
	return (-1);
}

/* "name:value\n" of each signed header (names in lower case, sorted). */
static void
canon_headers(struct ebuf *b, const struct sigv4_req *r, const char *signed_)
{
	const char	*s, *e, *v;
	size_t		 i, nl, j;
	int		 any, space;

	for (s = signed_; *s != '\0'; s = *e ? e + 1 : e) {
		if ((e = strchr(s, ';')) == NULL)
			e = s + strlen(s);
		nl = e - s;
		ebuf_add(b, s, nl);
		ebuf_add(b, ":", 1);
		any = 0;
		for (i = 0; i < r->nhdrs; i++) {
			if (strlen(r->hdrs[i].name) != nl ||
			    strncasecmp(r->hdrs[i].name, s, nl) != 0)
				continue;
			if (any++)
				ebuf_add(b, ",", 1);
			v = r->hdrs[i].value;
			while (*v == ' ' || *v == '\t')
				v++;
			for (j = 0, space = 0; v[j] != '\0'; j++) {
				if (v[j] == ' ' || v[j] == '\t') {
					space = 1;
					continue;
				}
				if (space)
					ebuf_add(b, " ", 1);
				space = 0;
				ebuf_add(b, &v[j], 1);
			}
		}
		ebuf_add(b, "\n", 1);
	}
}

/* The value after "name=" in an Authorization header's list. */
static int
field(const char *authz, const char *name, char *out, size_t outsz)
{
	const char	*p = authz;
	size_t		 nl = strlen(name), n;

	while ((p = strstr(p, name)) != NULL) {
		if ((p == authz || p[-1] == ' ' || p[-1] == ',') &&
		    p[nl] == '=') {
			p += nl + 1;
			n = strcspn(p, ", ");
			if (n == 0 || n >= outsz)
				return (-1);
			memcpy(out, p, n);
			out[n] = '\0';
			return (0);
		}
		p += nl;
	}
	return (-1);
}

/*
 * An Authorization header's SigV4 parts: the credential (access key id,
 * date, region, service), the signed headers and the signature.
 */
int
sigv4_parse_auth(const char *authz, struct sigv4_auth *a)
{
	char	 cred[SIGV4_FIELD_MAX];

	memset(a, 0, sizeof(*a));
	if (strncmp(authz, SIGV4_ALGO " ", sizeof(SIGV4_ALGO)) != 0 ||
	    field(authz, "Credential", cred, sizeof(cred)) == -1 ||
	    field(authz, "SignedHeaders", a->signed_headers,
	    sizeof(a->signed_headers)) == -1 ||
	    field(authz, "Signature", a->signature,
	    sizeof(a->signature)) == -1 ||
	    sigv4_parse_scope(cred, a) == -1 || strlen(a->signature) != 64)
		return (-1);
	return (0);
}

/*
 * A credential, "id/date/region/service/aws4_request" (in the header or
 * a presigned query's X-Amz-Credential), into a; cred is cut up.
 */
int
sigv4_parse_scope(char *cred, struct sigv4_auth *a)
{
	char	*parts[5], *p, *save = NULL;
	int	 n = 0;

	for (p = strtok_r(cred, "/", &save); p != NULL && n < 5;
	    p = strtok_r(NULL, "/", &save))
		parts[n++] = p;
	if (n != 5 || p != NULL || strcmp(parts[4], "aws4_request") != 0 ||
	    strlcpy(a->key_id, parts[0], sizeof(a->key_id)) >=
	    sizeof(a->key_id) ||
	    strlcpy(a->date, parts[1], sizeof(a->date)) >= sizeof(a->date) ||
	    strlcpy(a->region, parts[2], sizeof(a->region)) >=
	    sizeof(a->region) ||
	    strlcpy(a->service, parts[3], sizeof(a->service)) >=
	    sizeof(a->service))
		return (-1);
	return (0);
}

/*
 * The signature (64 hex digits and a NUL in out) of request r under the
 * credential scope of a, at amzdate (YYYYMMDDTHHMMSSZ), with secret.
 */
int
sigv4_sign(const struct sigv4_req *r, const struct sigv4_auth *a,
    const char *amzdate, const char *secret, size_t secretlen, char out[65])
{
	struct ebuf	 cr = { NULL, 0, 0 }, sts = { NULL, 0, 0 };
	unsigned char	 h[crypto_hash_sha256_BYTES];
	unsigned char	 k[crypto_auth_hmacsha256_BYTES];
	char		 hex[65], *ks;
	size_t		 kslen;

	if (strlen(amzdate) != 16 || strncmp(amzdate, a->date, 8) != 0)
		return (-1);
	buf_str(&cr, r->method);
	ebuf_add(&cr, "\n", 1);
	if (strcmp(a->service, "s3") == 0)
		buf_str(&cr, r->path);
	else
		buf_enc(&cr, r->path, strlen(r->path), 1);
	ebuf_add(&cr, "\n", 1);
	if (canon_query(&cr, r->query, r->presigned) == -1) {
		freezero(cr.p, cr.cap);
		return (-1);
	}
	ebuf_add(&cr, "\n", 1);
	canon_headers(&cr, r, a->signed_headers);
	ebuf_add(&cr, "\n", 1);
	buf_str(&cr, a->signed_headers);
	ebuf_add(&cr, "\n", 1);
	buf_str(&cr, r->payload_hash);

	crypto_hash_sha256(h, (unsigned char *)cr.p, cr.len);
	sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
	buf_str(&sts, SIGV4_ALGO "\n");
	buf_str(&sts, amzdate);
	ebuf_add(&sts, "\n", 1);
	buf_str(&sts, a->date);
	ebuf_add(&sts, "/", 1);
	buf_str(&sts, a->region);
	ebuf_add(&sts, "/", 1);
	buf_str(&sts, a->service);
	buf_str(&sts, "/aws4_request\n");
	buf_str(&sts, hex);

	/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" secret, date), ...))) */
	kslen = secretlen + 4;
	if ((ks = malloc(kslen)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(ks, "AWS4", 4);
	memcpy(ks + 4, secret, secretlen);
	sigv4_hmac(k, (unsigned char *)ks, kslen, a->date);
	freezero(ks, kslen);
	sigv4_hmac(k, k, sizeof(k), a->region);
	sigv4_hmac(k, k, sizeof(k), a->service);
	sigv4_hmac(k, k, sizeof(k), "aws4_request");
	sigv4_hmac(h, k, sizeof(k), sts.p);
	sodium_memzero(k, sizeof(k));
	sodium_bin2hex(out, 65, h, sizeof(h));
	freezero(cr.p, cr.cap);
	freezero(sts.p, sts.cap);
	return (0);
}

/* out = HMAC-SHA256(key, msg); out may be key. */
void
sigv4_hmac(unsigned char out[32], const unsigned char *key, size_t keylen,
    const char *msg)
{
	crypto_auth_hmacsha256_state	 st;

	crypto_auth_hmacsha256_init(&st, key, keylen);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)msg,
	    strlen(msg));
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

/* The two signatures are the same, in constant time. */
int
sigv4_equal(const char *a, const char *b)
{
	if (strlen(a) != 64 || strlen(b) != 64)
		return (0);
	return (sodium_memcmp(a, b, 64) == 0);
}
