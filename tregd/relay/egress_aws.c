/*
 * egress_aws.c: AWS Signature Version 4 in the egress proxy (SPEC.md
 * section 6a, "Substitution").  A run holds placeholders for its access
 * key id and secret (marked "aws-sigv4", told apart by their env names)
 * and signs with them, in an Authorization header or a presigned URL's
 * query.  A request signed with this run's placeholder key id is checked
 * with the placeholder secret (egress_sigv4.c over the request as it
 * came): one that does not verify was not made by the run's CLI with the
 * run's credentials and is refused.  Once its placeholders are swapped
 * it is signed again with the real key id and secret, over what goes
 * upstream.  The real values stay in the grant; what is made from them
 * here is zeroed.
 */

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress_int.h"

#define AWS_ALGO	"AWS4-HMAC-SHA256"
#define AWS_SIGNED	"/aws4_request, SignedHeaders="
#define AWS_SIG		", Signature="
#define AWS_AUTHZ	"Authorization: " AWS_ALGO " Credential="

static int	 qparam(const char *, size_t, const char *, char *, size_t);
static int	 aws_auth(const struct egress_req *, struct sigv4_auth *,
		    char *, size_t);
static char	*aws_payload(const struct egress_req *,
		    const struct sigv4_auth *);

/* The grant's AWS key id or secret: by env name, else by its shape. */
const struct egress_val *
egress_aws_val(const struct egrant *gr, int which)
{
	static const char *const names[] = { "AWS_ACCESS_KEY_ID",
	    "AWS_SECRET_ACCESS_KEY" };
	const struct egress_val	*v;
	size_t			 i;
	int			 id;

	for (i = 0; i < gr->nvals; i++) {
		v = &gr->vals[i];
		if (v->sigv4 && strcmp(v->name, names[which]) == 0)
			return (v);
	}
	for (i = 0; i < gr->nvals; i++) {
		v = &gr->vals[i];
		if (!v->sigv4 || v->name[0] != '\0')
			continue;
		id = strncmp(v->ph, "AKIA", 4) == 0 ||
		    strncmp(v->ph, "ASIA", 4) == 0;
		if (id == (which == AWS_KEY_ID))
			return (v);
	}
	return (NULL);
}

/* A query parameter's value, percent-decoded, into out: 0, or -1. */
static int
qparam(const char *q, size_t qlen, const char *name, char *out, size_t outsz)
{
	const char	*p, *e = q + qlen, *amp;
	size_t		 nl = strlen(name), o;
	int		 hi, lo;

	for (p = q; p < e; p = amp + 1) {
		if ((amp = memchr(p, '&', e - p)) == NULL)
			amp = e;
		if ((size_t)(amp - p) <= nl || memcmp(p, name, nl) != 0 ||
		    p[nl] != '=')
			continue;
		for (p += nl + 1, o = 0; p < amp; o++) {
			if (o + 1 >= outsz)
				return (-1);
			if (*p == '%' && amp - p >= 3 &&
			    (hi = hexdigit((unsigned char)p[1])) != -1 &&
			    (lo = hexdigit((unsigned char)p[2])) != -1) {
				out[o] = hi << 4 | lo;
				p += 3;
			} else
				out[o] = *p++;
		}
		out[o] = '\0';
		return (0);
	}
	return (-1);
}

/*
 * The request's signature parts as the CLI sent them (Authorization, or
 * the presigned query) and its date (YYYYMMDDTHHMMSSZ).  0, or -1.
 */
static int
aws_auth(const struct egress_req *req, struct sigv4_auth *a, char *date,
    size_t datesz)
{
	const struct http_hdr	*h;
	char			*s, cred[SIGV4_FIELD_MAX];
	int			 r;

	memset(a, 0, sizeof(*a));
	if (req->sigv4 == 1) {
		if ((h = egress_req_hdr(req, "Authorization")) == NULL)
			return (-1);
		s = egress_hdr_dup(h);
		r = sigv4_parse_auth(s, a);
		free(s);
		if (r == -1 || (h = egress_req_hdr(req, "X-Amz-Date")) ==
		    NULL || h->value.len != 16 || datesz < 17)
			return (-1);
		memcpy(date, h->value.p, 16);
		date[16] = '\0';
		return (0);
	}
	if (qparam(req->h.query.p, req->h.query.len, "X-Amz-Algorithm", cred,
	    sizeof(cred)) == -1 || strcmp(cred, AWS_ALGO) != 0 ||
	    qparam(req->h.query.p, req->h.query.len, "X-Amz-Credential", cred,
	    sizeof(cred)) == -1 || sigv4_parse_scope(cred, a) == -1 ||
	    qparam(req->h.query.p, req->h.query.len, "X-Amz-SignedHeaders",
	    a->signed_headers, sizeof(a->signed_headers)) == -1 ||
	    qparam(req->h.query.p, req->h.query.len, "X-Amz-Signature",
	    a->signature, sizeof(a->signature)) == -1 ||
	    strlen(a->signature) != 64 ||
	    qparam(req->h.query.p, req->h.query.len, "X-Amz-Date", date,
	    datesz) == -1 || strlen(date) != 16)
		return (-1);
	return (0);
}

/*
 * The payload hash the CLI signed: its X-Amz-Content-Sha256, a presigned
 * S3 URL's UNSIGNED-PAYLOAD, or the body's (hashed before: bodyhash).
 */
static char *
aws_payload(const struct egress_req *req, const struct sigv4_auth *a)
{
	const struct http_hdr	*h;
	char			*s;

	if ((h = egress_req_hdr(req, "X-Amz-Content-Sha256")) != NULL)
		return (egress_hdr_dup(h));
	if (req->sigv4 == 2 && strcmp(a->service, "s3") == 0)
		s = strdup("UNSIGNED-PAYLOAD");
	else if (req->bodyhash != NULL)
		s = strdup(req->bodyhash);
	else
		return (NULL);
	if (s == NULL)
		fatal("%s: strdup", __func__);
	return (s);
}

/*
 * Is the request signed with this run's placeholder key id (req->sigv4:
 * 1 header, 2 presigned)?  *needbody: its body must be hashed before it
 * can be checked.  -1: it says it is but cannot be read.
 */
int
egress_aws_detect(struct egress_req *req, int *needbody)
{
	const struct egress_val	*id;
	const struct http_hdr	*h;
	struct sigv4_auth	 a;
	char			 date[32];

	*needbody = 0;
	if ((id = egress_aws_val(req->gr, AWS_KEY_ID)) == NULL)
		return (0);
	h = egress_req_hdr(req, "Authorization");
	if (h != NULL && h->value.len > sizeof(AWS_ALGO) &&
	    strncmp(h->value.p, AWS_ALGO " ", sizeof(AWS_ALGO)) == 0 &&
	    memmem(h->value.p, h->value.len, id->ph, id->phlen) != NULL)
		req->sigv4 = 1;
	else if (memmem(req->h.query.p, req->h.query.len, "X-Amz-Signature=",
	    16) != NULL && memmem(req->h.query.p, req->h.query.len, id->ph,
	    id->phlen) != NULL)
		req->sigv4 = 2;
	else
		return (0);
	if (aws_auth(req, &a, date, sizeof(date)) == -1 ||
	    strcmp(a.key_id, id->ph) != 0 ||
	    egress_aws_val(req->gr, AWS_SECRET) == NULL)
		return (-1);
	*needbody = egress_req_hdr(req, "X-Amz-Content-Sha256") == NULL &&
	    !(req->sigv4 == 2 && strcmp(a.service, "s3") == 0);
	return (0);
}

/* The CLI's signature, made again with the placeholder secret: 0 same. */
int
egress_aws_check(const struct egress_req *req)
{
	const struct egress_val	*sec = egress_aws_val(req->gr, AWS_SECRET);
	struct sigv4_hdr	 hdrs[HTTP_NHEADERS_MAX];
	struct sigv4_auth	 a;
	struct sigv4_req	 r;
	char			 date[32], sig[65];
	size_t			 i, n;
	int			 ok = 0;

	if (sec == NULL || aws_auth(req, &a, date, sizeof(date)) == -1)
		return (-1);
	memset(&r, 0, sizeof(r));
	for (n = 0; n < req->h.nhdrs && n < HTTP_NHEADERS_MAX; n++) {
		if ((hdrs[n].name = strndup(req->h.hdrs[n].name.p,
		    req->h.hdrs[n].name.len)) == NULL)
			fatal("%s: strndup", __func__);
		hdrs[n].value = egress_hdr_dup(&req->h.hdrs[n]);
	}
	r.method = strndup(req->head, strcspn(req->head, " "));
	r.path = strndup(req->h.path.p, req->h.path.len);
	r.query = strndup(req->h.query.p, req->h.query.len);
	r.hdrs = hdrs;
	r.nhdrs = n;
	r.payload_hash = aws_payload(req, &a);
	r.presigned = req->sigv4 == 2;
	if (r.method != NULL && r.path != NULL && r.query != NULL &&
	    r.payload_hash != NULL && sigv4_sign(&r, &a, date, sec->ph,
	    sec->phlen, sig) == 0)
		ok = sigv4_equal(sig, a.signature);
	for (i = 0; i < n; i++) {
		free((char *)hdrs[i].name);
		free((char *)hdrs[i].value);
	}
	free((char *)r.method);
	free((char *)r.path);
	free((char *)r.query);
	free((char *)r.payload_hash);
	explicit_bzero(sig, sizeof(sig));
	return (ok ? 0 : -1);
}

/*
 * Signed again over what goes upstream (tgt: the swapped target; hdrs:
 * the swapped headers, Host too), with the real key id and secret: an
 * Authorization line added to hb, or the presigned target's signature
 * replaced in tgt (the same length).  0, or -1.
 */
int
egress_aws_resign(const struct egress_req *req, char *tgt,
    const struct sigv4_hdr *hdrs, size_t n, struct ebuf *hb)
{
	const struct egress_val	*id, *sec;
	struct sigv4_auth	 a;
	struct sigv4_req	 r;
	char			 date[32], sig[65], *path, *q, *s;
	int			 rv = -1;

	id = egress_aws_val(req->gr, AWS_KEY_ID);
	sec = egress_aws_val(req->gr, AWS_SECRET);
	if (id == NULL || sec == NULL ||
	    aws_auth(req, &a, date, sizeof(date)) == -1 ||
	    id->vallen >= sizeof(a.key_id))
		return (-1);
	memcpy(a.key_id, id->val, id->vallen);
	a.key_id[id->vallen] = '\0';
	if ((path = strdup(tgt)) == NULL)
		fatal("%s: strdup", __func__);
	if ((q = strchr(path, '?')) != NULL)
		*q++ = '\0';
	memset(&r, 0, sizeof(r));
	r.method = strndup(req->head, strcspn(req->head, " "));
	r.path = path;
	r.query = q != NULL ? q : "";
	r.hdrs = hdrs;
	r.nhdrs = n;
	r.payload_hash = aws_payload(req, &a);
	r.presigned = req->sigv4 == 2;
	if (r.method == NULL || r.payload_hash == NULL ||
	    sigv4_sign(&r, &a, date, sec->val, sec->vallen, sig) != 0)
		goto done;
	if (req->sigv4 == 1) {
		ebuf_add(hb, AWS_AUTHZ, sizeof(AWS_AUTHZ) - 1);
		ebuf_add(hb, a.key_id, strlen(a.key_id));
		ebuf_add(hb, "/", 1);
		ebuf_add(hb, a.date, strlen(a.date));
		ebuf_add(hb, "/", 1);
		ebuf_add(hb, a.region, strlen(a.region));
		ebuf_add(hb, "/", 1);
		ebuf_add(hb, a.service, strlen(a.service));
		ebuf_add(hb, AWS_SIGNED, sizeof(AWS_SIGNED) - 1);
		ebuf_add(hb, a.signed_headers, strlen(a.signed_headers));
		ebuf_add(hb, AWS_SIG, sizeof(AWS_SIG) - 1);
		ebuf_add(hb, sig, 64);
		ebuf_add(hb, "\r\n", 2);
		rv = 0;
	} else if ((s = strstr(tgt, "X-Amz-Signature=")) != NULL &&
	    strspn(s + 16, "0123456789abcdef") == 64) {
		memcpy(s + 16, sig, 64);
		rv = 0;
	}
 done:
	explicit_bzero(&a, sizeof(a));
	explicit_bzero(sig, sizeof(sig));
	free((char *)r.method);
	free((char *)r.payload_hash);
	freezero(path, strlen(tgt) + 1);
	return (rv);
}
