/*
 * egress_proxy.c: the egress proxy of keyless runs (SPEC.md section 6a),
 * in the relay process: what a run may reach and with what (its grant,
 * IMSG_EGRESS_GRANT from a vault worker) and each connection a run's CLI
 * opens (egress_listen.c accepts it within the run's cap).
 *
 * On the proxy listener a connection starts with a request head: CONNECT
 * host:port to a host of the egress list is answered 200 and becomes TLS
 * with a leaf of the run CA for that host (egress_ca.c), HTTP/1.1 inside,
 * kept alive; an absolute-form http:// request goes only to a host:port
 * the list names with http://.  On a transparent listener the first
 * byte says TLS (the host from SNI) or HTTP (the host from Host, which
 * the list must name with http://).  After CONNECT, a ClientHello naming
 * another host is refused.  Anything else is refused (403 with a
 * one-line text, a handshake alert for an SNI), and each refusal is
 * recorded by the vault (IMSG_EGRESS_CALL, refused).  A passthrough
 * grant's TLS is not terminated but spliced (egress_pass.c).
 *
 * Each request is recorded and judged by the run's vault worker before
 * it goes anywhere (IMSG_EGRESS_CALL, then IMSG_EGRESS_VERDICT; no
 * verdict in time: 503); egress_req.c then swaps its placeholders and
 * sends it upstream through the relay's own client.
 *
 * The grant holds real values: zeroed when it goes (revoked by the
 * vault, the run's end, or its timeout and a slack).
 */

#include <sys/types.h>
#include <sys/socket.h>

#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <event.h>
#include <event2/bufferevent_ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "egress.h"
#include "egress_int.h"
#include "pack.h"
#include "redact_cache.h"

#define EGRESS_HEAD_MAX	HTTP_HEADERS_MAX	/* as for /call */

static TAILQ_HEAD(, egress_req) verdicts = TAILQ_HEAD_INITIALIZER(verdicts);
static TAILQ_HEAD(, egrant) grants = TAILQ_HEAD_INITIALIZER(grants);
static uint32_t		 egress_reqids;
static SSL_CTX		*srv_ctx;

static int	 grant_unpack(struct egrant *, const char *, size_t,
		    const char **, size_t *);
static void	 grant_set_ready(void *, struct rcache *);
static void	 grant_expire(int, short, void *);
static void	 grant_free(struct egrant *);
static struct egrant *grant_find(uint32_t);
static int	 host_split(const char *, size_t, char *, size_t, uint16_t *,
		    uint16_t);
static void	 ec_first(int, short, void *);
static void	 ec_attach(struct egress_conn *, int, int);
static SSL	*ec_ssl(struct egress_conn *);
static int	 ec_sni(SSL *, int *, void *);
static int	 ec_alpn(SSL *, const unsigned char **, unsigned char *,
		    const unsigned char *, unsigned int, void *);
static void	 ec_read(struct bufferevent *, void *);
static void	 ec_write(struct bufferevent *, void *);
static void	 ec_event(struct bufferevent *, short, void *);
static void	 ec_timeout(int, short, void *);
static void	 ec_head(struct egress_conn *);
static int	 ec_route(struct egress_conn *, struct egress_req *);
static int	 ec_connect(struct egress_conn *, struct egress_req *);
static void	 verdict_timeout(int, short, void *);

/* ------------------------------------------------------------------ */
/* A run's grant.                                                      */

/*
 * The grant's packed part (tregd.h): hosts, values, the redaction set
 * (*key, *keylen: its bytes, the cache's key), then optionally the
 * tool's name.  0, or -1 when anything is malformed.
 */
static int
grant_unpack(struct egrant *gr, const char *data, size_t len,
    const char **key, size_t *keylen)
{
	struct unpack	 u;
	struct egress_val *v;
	const char	*s, *sign;
	size_t		 i, n, l;
	char		 host[HOST_LEN_MAX];
	uint16_t	 port;

	unpack_init(&u, data, len);
	n = unpack_u32(&u);
	if (u.bad || n > EGRESS_HOSTS_MAX ||
	    (gr->hosts = calloc(n + 1, sizeof(char *))) == NULL)
		return (-1);
	for (i = 0; i < n; i++) {
		if ((s = unpack_str(&u)) == NULL)
			return (-1);
		l = strncasecmp(s, "http://", 7) == 0 ? 7 : 0;
		if (host_split(s + l, strlen(s + l), host, sizeof(host), &port,
		    0) == -1 || (gr->hosts[i] = strdup(s)) == NULL)
			return (-1);
		gr->nhosts++;
	}
	n = unpack_u32(&u);
	if (u.bad || n > EGRESS_SUBST_MAX ||
	    (gr->vals = calloc(n + 1, sizeof(*gr->vals))) == NULL ||
	    (gr->pairs = calloc(n + 1, sizeof(*gr->pairs))) == NULL)
		return (-1);
	for (i = 0; i < n; i++) {
		v = &gr->vals[i];
		if ((s = unpack_bytes(&u, &v->phlen)) == NULL ||
		    v->phlen == 0 || (v->ph = malloc(v->phlen + 1)) == NULL)
			return (-1);
		memcpy(v->ph, s, v->phlen + 1);
		gr->nvals++;
		if ((s = unpack_bytes(&u, &v->vallen)) == NULL ||
		    (v->val = malloc(v->vallen + 1)) == NULL)
			return (-1);
		memcpy(v->val, s, v->vallen + 1);
		if ((sign = unpack_str(&u)) == NULL ||
		    (sign[0] != '\0' && strcmp(sign, "aws-sigv4") != 0))
			return (-1);
		v->sigv4 = sign[0] != '\0';
		if ((s = unpack_str(&u)) == NULL ||
		    (v->name = strdup(s)) == NULL)
			return (-1);
		gr->pairs[i].ph = v->ph;
		gr->pairs[i].phlen = v->phlen;
		gr->pairs[i].val = v->val;
		gr->pairs[i].vallen = v->vallen;
	}
	/* The rest is the redaction set: its bytes are the cache's key. */
	*key = u.p;
	n = unpack_u32(&u);
	if (u.bad || n > REDSET_MAX)
		return (-1);
	for (i = 0; i < n; i++)
		if (unpack_bytes(&u, &l) == NULL)
			return (-1);
	*keylen = u.p - *key;
	/* The tool's name, for the texts a run gets (optional). */
	if (u.left > 0 && (s = unpack_str(&u)) != NULL)
		strlcpy(gr->tool, s, sizeof(gr->tool));
	return (unpack_done(&u));
}

void
egress_grant_recv(int worker, const void *head, const char *data, size_t len)
{
	struct egrant		*gr;
	struct egress_run	*run;
	struct timeval		 tv;
	const char		*key;
	size_t			 keylen;

	if ((gr = calloc(1, sizeof(*gr))) == NULL)
		fatal("%s: calloc", __func__);
	memcpy(&gr->g, head, sizeof(gr->g));
	evtimer_set(&gr->expire, grant_expire, gr);
	gr->runid = gr->g.runid;
	gr->worker = worker;
	strlcpy(gr->tool, "this run's tool", sizeof(gr->tool));
	if (grant_unpack(gr, data, len, &key, &keylen) == -1)
		fatalx("bad IMSG_EGRESS_GRANT from vault %d", worker);
	/* A worker's run ids carry its index in their top 8 bits. */
	if ((gr->runid >> 24) != (uint32_t)worker) {
		log_warnx("egress: vault %d granted run %u, not its own",
		    worker, gr->runid);
		grant_free(gr);
		return;
	}
	run = egress_run_get(gr->runid, 1);
	if (grant_find(gr->runid) != NULL) {
		/* Once per run: a second one replaces it, connections too. */
		log_warnx("egress: run %u granted twice", gr->runid);
		egress_run_free(run);
	}
	gr->run = run;
	TAILQ_INSERT_TAIL(&grants, gr, entry);
	tv.tv_sec = (time_t)gr->g.timeout_s + EGRESS_GRANT_SLACK;
	tv.tv_usec = 0;
	evtimer_add(&gr->expire, &tv);
	/* Compiled by the cache's thread when it has not got it. */
	switch (rcache_get(gr->g.tool_id, key, keylen, grant_set_ready, gr,
	    &gr->rset)) {
	case 0:
		run->grant = &gr->g;
		egress_run_ready(run);
		break;
	case 1:
		gr->waiting = 1;
		break;
	default:
		fatalx("bad IMSG_EGRESS_GRANT redaction set from vault %d",
		    worker);
	}
}

/* The answers' masks are ready (NULL: out of memory, requests get 503). */
static void
grant_set_ready(void *arg, struct rcache *ent)
{
	struct egrant	*gr = arg;

	gr->waiting = 0;
	gr->rset = ent;
	if (ent == NULL)
		log_warnx("egress: run %u: its redaction set cannot be made",
		    gr->runid);
	gr->run->grant = &gr->g;
	egress_run_ready(gr->run);
}

static void
grant_expire(int fd, short ev, void *arg)
{
	struct egrant	*gr = arg;

	/* The run is over, whatever else said so or not. */
	log_debug("egress: run %u: its grant expired", gr->runid);
	egress_run_end(gr->runid);
}

/*
 * The vault says the run ended: its listeners, connections and grant go
 * (egress_listen.c; exec's IMSG_EGRESS_END may follow, or come first).
 */
void
egress_revoke(int worker, uint32_t runid)
{
	if ((runid >> 24) != (uint32_t)worker) {
		log_warnx("egress: run %u revoked by vault %d, not its own",
		    runid, worker);
		return;
	}
	egress_run_end(runid);
}

static struct egrant *
grant_find(uint32_t runid)
{
	struct egrant	*gr;

	TAILQ_FOREACH(gr, &grants, entry)
		if (gr->runid == runid)
			return (gr);
	return (NULL);
}

/* The grant around the run's egress_grant (NULL: none ready). */
struct egrant *
egrant_of(const struct egress_run *run)
{
	if (run->grant == NULL)
		return (NULL);
	return ((struct egrant *)((char *)run->grant -
	    offsetof(struct egrant, g)));
}

static void
grant_free(struct egrant *gr)
{
	struct egress_val	*v;
	size_t			 i;

	if (gr->run != NULL) {
		TAILQ_REMOVE(&grants, gr, entry);
		if (gr->run->grant == &gr->g)
			gr->run->grant = NULL;
	}
	evtimer_del(&gr->expire);
	if (gr->waiting)
		rcache_forget(gr);
	rcache_put(gr->rset);
	for (i = 0; i < gr->nhosts; i++)
		free(gr->hosts[i]);
	free(gr->hosts);
	for (i = 0; i < gr->nvals; i++) {
		v = &gr->vals[i];
		freezero(v->ph, v->phlen + 1);
		if (v->val != NULL)
			freezero(v->val, v->vallen + 1);
		free(v->name);
	}
	free(gr->vals);
	free(gr->pairs);
	rhttp_drop_run(gr->runid);
	freezero(gr, sizeof(*gr));
}

/*
 * The run's connections and its grant (the run ended, or the grant
 * went); the run itself stays egress_listen.c's.
 */
void
egress_run_free(struct egress_run *run)
{
	struct egress_conn	*ec;
	struct egrant		*gr;

	while ((ec = TAILQ_FIRST(&run->conns)) != NULL)
		egress_conn_free(ec);
	if ((gr = grant_find(run->runid)) != NULL)
		grant_free(gr);
	run->grant = NULL;
}

/* ------------------------------------------------------------------ */
/* The egress list.                                                    */

/*
 * "host:port" (the host a name, an IPv4 address or a bracketed IPv6 one,
 * kept with its brackets): the host in lower case, the port (defport
 * when there is none and defport is not 0).  0, or -1.
 */
static int
host_split(const char *p, size_t len, char *host, size_t hostsz,
    uint16_t *port, uint16_t defport)
{
	const char	*colon, *errstr;
	char		 num[8];
	size_t		 hl, i;

	colon = memrchr(p, ':', len);
	if (colon != NULL && p[0] == '[' && memchr(colon, ']', len -
	    (colon - p)) != NULL)
		colon = NULL;		/* "[::1]" alone */
	if (colon == NULL) {
		if (defport == 0)
			return (-1);
		hl = len;
		*port = defport;
	} else {
		hl = colon - p;
		i = len - hl - 1;
		if (i == 0 || i >= sizeof(num))
			return (-1);
		memcpy(num, colon + 1, i);
		num[i] = '\0';
		*port = strtonum(num, 1, 65535, &errstr);
		if (errstr != NULL)
			return (-1);
	}
	if (hl == 0 || hl >= hostsz)
		return (-1);
	for (i = 0; i < hl; i++) {
		if (!isalnum((unsigned char)p[i]) &&
		    strchr(".-_[]:*", p[i]) == NULL)
			return (-1);
		host[i] = tolower((unsigned char)p[i]);
	}
	host[hl] = '\0';
	if (host[0] == '[' && host[hl - 1] != ']')
		return (-1);
	return (0);
}

/*
 * Does the grant's list name host:port?  plain: as "http://host:port";
 * else as "host:port" or "*.domain:port" (a subdomain, not the domain).
 */
int
egress_host_ok(const struct egrant *gr, const char *host, uint16_t port,
    int plain)
{
	char		 eh[HOST_LEN_MAX];
	const char	*e;
	uint16_t	 ep;
	size_t		 i, hl, dl;
	int		 http;

	hl = strlen(host);
	for (i = 0; i < gr->nhosts; i++) {
		e = gr->hosts[i];
		http = strncasecmp(e, "http://", 7) == 0;
		if (http != plain)
			continue;
		if (http)
			e += 7;
		if (host_split(e, strlen(e), eh, sizeof(eh), &ep, 0) == -1 ||
		    ep != port)
			continue;
		if (eh[0] == '*' && eh[1] == '.') {
			dl = strlen(eh + 1);	/* ".domain" */
			if (hl > dl && host[hl - dl - 1] != '.' &&
			    strcasecmp(host + hl - dl, eh + 1) == 0)
				return (1);
			continue;
		}
		if (strcasecmp(host, eh) == 0)
			return (1);
	}
	return (0);
}

/*
 * The address a TLS client without SNI reached on this port: clients
 * send no server name for an address (RFC 6066), so when the list has
 * exactly one https address entry on the port, that is it.  0 with it
 * in out, -1 when there is none or more than one.
 */
int
egress_addr_on_port(const struct egrant *gr, uint16_t port, char *out,
    size_t outsz)
{
	char		 eh[HOST_LEN_MAX];
	struct in6_addr	 a;
	uint16_t	 ep;
	size_t		 i;
	int		 n = 0;

	for (i = 0; i < gr->nhosts; i++) {
		if (strncasecmp(gr->hosts[i], "http://", 7) == 0 ||
		    host_split(gr->hosts[i], strlen(gr->hosts[i]), eh,
		    sizeof(eh), &ep, 0) == -1 || ep != port)
			continue;
		if (inet_pton(AF_INET, eh, &a) != 1 &&
		    inet_pton(AF_INET6, eh, &a) != 1)
			continue;
		if (n++ == 0)
			strlcpy(out, eh, outsz);
	}
	return (n == 1 ? 0 : -1);
}

/* ------------------------------------------------------------------ */
/* A run's connection.                                                 */

void
egress_conn_start(struct egress_run *run, int fd, uint16_t port,
    uint16_t kind)
{
	struct egress_conn	*ec;
	struct timeval		 tv = { EGRESS_HEAD_SECS, 0 };

	if (egrant_of(run) == NULL ||
	    evutil_make_socket_nonblocking(fd) == -1) {
		close(fd);
		egress_conn_closed(run);
		return;
	}
	if ((ec = calloc(1, sizeof(*ec))) == NULL)
		fatal("%s: calloc", __func__);
	ec->run = run;
	ec->port = port;
	ec->kind = kind;
	ec->hport = port;
	ec->fd = -1;
	ec->upfd = -1;
	evtimer_set(&ec->tmo, ec_timeout, ec);
	TAILQ_INSERT_TAIL(&run->conns, ec, entry);
	evtimer_add(&ec->tmo, &tv);
	if (kind == EGRESS_TRANSPARENT) {
		/*
		 * TLS or HTTP: its first byte says (a port may be listed for
		 * both), read without taking it (ec_first).
		 */
		ec->fd = fd;
		ec->state = EC_FIRST;
		event_set(&ec->first, fd, EV_READ, ec_first, ec);
		event_add(&ec->first, NULL);
		return;
	}
	ec_attach(ec, fd, 0);
}

/* A transparent connection's first byte, peeked. */
static void
ec_first(int fd, short ev, void *arg)
{
	struct egress_conn	*ec = arg;
	unsigned char		 b;
	ssize_t			 n;

	if ((n = recv(fd, &b, 1, MSG_PEEK)) == -1 &&
	    (errno == EAGAIN || errno == EINTR)) {
		event_add(&ec->first, NULL);
		return;
	}
	relay_cork(1);
	if (n <= 0)
		egress_conn_free(ec);
	else {
		ec->fd = -1;
		/* 22: a TLS handshake record; anything else, HTTP. */
		ec_attach(ec, fd, b == 22);
	}
	relay_cork(0);
}

/*
 * The connection's bufferevent: TLS accepted here with the host from
 * SNI, a passthrough grant's ClientHello read unanswered (egress_pass.c),
 * or a request head in the clear.
 */
static void
ec_attach(struct egress_conn *ec, int fd, int tls)
{
	SSL	*ssl;

	if (tls && !egrant_of(ec->run)->g.passthrough) {
		/* The host comes with the ClientHello's SNI (ec_sni). */
		ssl = ec_ssl(ec);
		ec->bev = bufferevent_openssl_socket_new(proc_base, fd, ssl,
		    BUFFEREVENT_SSL_ACCEPTING,
		    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
		ec->state = EC_TLS;
	} else {
		ec->bev = bufferevent_socket_new(proc_base, fd,
		    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
		ec->state = tls ? EC_SNI : EC_HEAD;
	}
	if (ec->bev == NULL)
		fatalx("%s: bufferevent", __func__);
	bufferevent_setwatermark(ec->bev, EV_READ, 0, EGRESS_UP_HIGH);
	bufferevent_setcb(ec->bev, ec_read, ec_write, ec_event, ec);
	bufferevent_enable(ec->bev, EV_READ | EV_WRITE);
}

/* The server side of the run's TLS: ALPN http/1.1, the leaf by host. */
static SSL *
ec_ssl(struct egress_conn *ec)
{
	SSL	*ssl;

	if (srv_ctx == NULL) {
		if ((srv_ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
		    SSL_CTX_set_min_proto_version(srv_ctx,
		    TLS1_2_VERSION) != 1)
			fatalx("%s: SSL_CTX_new", __func__);
		SSL_CTX_set_mode(srv_ctx, SSL_MODE_RELEASE_BUFFERS);
		SSL_CTX_set_tlsext_servername_callback(srv_ctx, ec_sni);
		SSL_CTX_set_alpn_select_cb(srv_ctx, ec_alpn, NULL);
		/* No ticket: its key would be one more secret, for nothing. */
		SSL_CTX_set_options(srv_ctx, SSL_OP_NO_TICKET);
		SSL_CTX_set_session_cache_mode(srv_ctx, SSL_SESS_CACHE_OFF);
	}
	if ((ssl = SSL_new(srv_ctx)) == NULL)
		fatalx("%s: SSL_new", __func__);
	SSL_set_app_data(ssl, ec);
	ec->ssl = ssl;
	return (ssl);
}

/* An unbracketed copy of host, for a certificate. */
const char *
egress_host_bare(const char *host, char *buf, size_t bufsz)
{
	size_t	 n = strlen(host);

	if (host[0] != '[' || n < 3 || n - 2 >= bufsz)
		return (host);
	memcpy(buf, host + 1, n - 2);
	buf[n - 2] = '\0';
	return (buf);
}

/*
 * The ClientHello's server name: after CONNECT it must be the tunnel's
 * host or none (whose leaf is already on ssl): a request inside would
 * name another host than the one the list allowed; on a transparent
 * listener it must name a host of the list on this port.  Else the
 * handshake ends with an alert, audited.
 */
static int
ec_sni(SSL *ssl, int *al, void *arg)
{
	struct egress_conn	*ec = SSL_get_app_data(ssl);
	const char		*name;
	char			 lname[HOST_LEN_MAX], bare[HOST_LEN_MAX];
	size_t			 i;

	if (ec == NULL)
		return (SSL_TLSEXT_ERR_OK);
	name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	if (ec->tunnel && name == NULL)
		return (SSL_TLSEXT_ERR_OK);
	/* A client names no address in SNI: the one the list has here. */
	if (name == NULL && egress_addr_on_port(egrant_of(ec->run), ec->hport,
	    lname, sizeof(lname)) == 0)
		name = lname;
	if (name == NULL || strlen(name) >= sizeof(lname)) {
		*al = SSL_AD_UNRECOGNIZED_NAME;
		egress_audit_refusal(ec, "", "", ec->hport, "", "a TLS "
		    "connection without a server name (SNI)", 403);
		return (SSL_TLSEXT_ERR_ALERT_FATAL);
	}
	if (name != lname) {
		for (i = 0; name[i] != '\0'; i++)
			lname[i] = tolower((unsigned char)name[i]);
		lname[i] = '\0';
	}
	if (ec->tunnel) {
		if (strcmp(lname, egress_host_bare(ec->host, bare,
		    sizeof(bare))) == 0)
			return (SSL_TLSEXT_ERR_OK);
		*al = SSL_AD_UNRECOGNIZED_NAME;
		egress_audit_refusal(ec, "CONNECT", lname, ec->hport, "",
		    "the TLS server name is not the host of the CONNECT", 403);
		return (SSL_TLSEXT_ERR_ALERT_FATAL);
	}
	if (!egress_host_ok(egrant_of(ec->run), lname, ec->hport, 0)) {
		*al = SSL_AD_UNRECOGNIZED_NAME;
		egress_audit_refusal(ec, "", lname, ec->hport, "", "not on the "
		    "egress list (TLS server name)", 403);
		return (SSL_TLSEXT_ERR_ALERT_FATAL);
	}
	if (egress_ca_use(ssl, lname) == -1) {
		*al = SSL_AD_INTERNAL_ERROR;
		return (SSL_TLSEXT_ERR_ALERT_FATAL);
	}
	strlcpy(ec->host, lname, sizeof(ec->host));
	return (SSL_TLSEXT_ERR_OK);
}

/* http/1.1 or nothing: HTTP/2 is not spoken here. */
static int
ec_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char h1[] = "\x08http/1.1";

	if (SSL_select_next_proto((unsigned char **)out, outlen, h1,
	    sizeof(h1) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return (SSL_TLSEXT_ERR_NOACK);
	return (SSL_TLSEXT_ERR_OK);
}

static void
ec_read(struct bufferevent *bev, void *arg)
{
	struct egress_conn	*ec = arg;

	relay_cork(1);
	switch (ec->state) {
	case EC_HEAD:
		ec_head(ec);
		break;
	case EC_BODYHASH:
	case EC_UPSTREAM:
		egress_req_pump(ec->req);
		break;
	case EC_SNI:
		egress_pass_peek(ec);
		break;
	case EC_SPLICE:
		egress_pass_pump(ec);
		break;
	case EC_CLOSING:
		evbuffer_drain(bufferevent_get_input(bev), -1);
		break;
	default:
		break;		/* it waits in the buffer */
	}
	relay_cork(0);
}

/* All queued went: a closing connection ends, a spliced one reads on. */
static void
ec_write(struct bufferevent *bev, void *arg)
{
	struct egress_conn	*ec = arg;

	if (ec->state == EC_CLOSING)
		egress_conn_close(ec);
	else if (ec->state == EC_SPLICE)
		egress_pass_written(ec);
}

static void
ec_event(struct bufferevent *bev, short what, void *arg)
{
	struct egress_conn	*ec = arg;
	struct timeval		 tv = { EGRESS_HEAD_SECS, 0 };

	if (what & BEV_EVENT_CONNECTED) {
		/* The run's TLS handshake is done: a request head comes. */
		ec->state = EC_HEAD;
		evtimer_add(&ec->tmo, &tv);
		if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
			ec_head(ec);
		return;
	}
	relay_cork(1);
	if (ec->state == EC_SPLICE)
		egress_pass_eof(ec);	/* what came goes on first */
	else
		egress_conn_free(ec);
	ERR_clear_error();
	relay_cork(0);
}

static void
ec_timeout(int fd, short ev, void *arg)
{
	struct egress_conn	*ec = arg;

	relay_cork(1);
	if (ec->state == EC_CLOSING)
		egress_conn_close(ec);
	else if (ec->state == EC_PASSUP || ec->state == EC_SPLICE)
		egress_pass_timeout(ec);
	else
		egress_conn_free(ec);
	relay_cork(0);
}

/*
 * Closing: once what was queued went (under TLS, through the layer
 * below too; spliced, to the upstream too), or after 5 s.
 */
void
egress_conn_close(struct egress_conn *ec)
{
	struct bufferevent	*under;
	struct timeval		 tv = { 0, 20000 };

	ec->state = EC_CLOSING;
	bufferevent_disable(ec->bev, EV_READ);
	under = bufferevent_get_underlying(ec->bev);
	if ((evbuffer_get_length(bufferevent_get_output(ec->bev)) == 0 &&
	    (under == NULL ||
	    evbuffer_get_length(bufferevent_get_output(under)) == 0) &&
	    !egress_pass_pending(ec)) || ec->closing_ticks++ > 250) {
		egress_conn_free(ec);
		return;
	}
	evtimer_add(&ec->tmo, &tv);
}

/* The request's answer went: the next one, or the close. */
void
egress_conn_next(struct egress_conn *ec)
{
	struct timeval	 tv = { EGRESS_IDLE_SECS, 0 };

	if (ec->state == EC_CLOSING)
		return;
	ec->state = EC_HEAD;
	evtimer_add(&ec->tmo, &tv);
	bufferevent_enable(ec->bev, EV_READ);
	/* A request that came behind it: read at the next turn. */
	if (evbuffer_get_length(bufferevent_get_input(ec->bev)) > 0)
		bufferevent_trigger(ec->bev, EV_READ,
		    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

void
egress_conn_free(struct egress_conn *ec)
{
	struct egress_run	*run = ec->run;

	TAILQ_REMOVE(&run->conns, ec, entry);
	evtimer_del(&ec->tmo);
	if (ec->fd != -1) {
		event_del(&ec->first);
		close(ec->fd);
	}
	if (ec->req != NULL)
		egress_req_abort(ec->req);
	ec->req = NULL;
	egress_pass_free(ec);
	if (ec->bev != NULL)
		bufferevent_free(ec->bev);	/* the SSL and the socket */
	freezero(ec, sizeof(*ec));
	egress_conn_closed(run);
}

/*
 * tregd's own answer to the run: status and a one-line text.  close:
 * the connection ends once it went (the rest of a request is unread).
 */
void
egress_answer(struct egress_conn *ec, int status, const char *detail,
    int close)
{
	char	 body[512];
	int	 n;

	n = snprintf(body, sizeof(body), "tregd: %s\n", detail);
	if (n < 0 || (size_t)n >= sizeof(body)) {
		n = sizeof(body) - 1;
		body[n - 1] = '\n';
	}
	evbuffer_add_printf(bufferevent_get_output(ec->bev), "HTTP/1.1 %d "
	    "%s\r\nContent-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %d\r\n%s\r\n%.*s", status, http_reason(status),
	    n, close ? "Connection: close\r\n" : "", n, body);
	if (close) {
		ec->state = EC_CLOSING;
		bufferevent_disable(ec->bev, EV_READ);
		evtimer_del(&ec->tmo);
		egress_conn_close(ec);
	}
}

/*
 * A request the relay refuses itself: recorded by the vault all the
 * same (refused_by "egress"); its verdict is not waited for.
 */
void
egress_audit_refusal(struct egress_conn *ec, const char *method,
    const char *host, uint16_t port, const char *path, const char *detail,
    int status)
{
	struct egress_call	 c;
	struct pack		 pk;
	struct egrant		*gr = egrant_of(ec->run);

	memset(&c, 0, sizeof(c));
	c.runid = gr->runid;
	c.reqid = ++egress_reqids;
	c.port = port;
	c.refused = EGRESS_REFUSED_EGRESS;
	c.status = status;
	pack_init(&pk);
	pack_str(&pk, method);
	pack_str(&pk, host);
	pack_str(&pk, path);
	pack_str(&pk, detail);
	relay_vault_send(gr->worker, IMSG_EGRESS_CALL, c.reqid, &c, sizeof(c),
	    pk.buf, pk.len);
	pack_free(&pk);
}

/* ------------------------------------------------------------------ */
/* A request head.                                                     */

static void
ec_head(struct egress_conn *ec)
{
	struct evbuffer		*in = bufferevent_get_input(ec->bev);
	struct egress_req	*req;
	size_t			 len, n, end, skip;
	const char		*p;
	int			 r;

	if ((len = evbuffer_get_length(in)) == 0)
		return;
	n = len < EGRESS_HEAD_MAX + 4 ? len : EGRESS_HEAD_MAX + 4;
	p = (const char *)evbuffer_pullup(in, n);
	end = http_head_end(p, n, &skip);
	if (end == 0 || end - skip > EGRESS_HEAD_MAX) {
		if (end == 0 && n <= EGRESS_HEAD_MAX) {
			if (skip > 0)
				evbuffer_drain(in, skip);
			return;
		}
		egress_answer(ec, 431, "the request head is too large", 1);
		return;
	}
	evtimer_del(&ec->tmo);
	req = egress_req_new(ec);
	if ((req->head = malloc(end - skip + 1)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(req->head, p + skip, end - skip);
	req->head[end - skip] = '\0';
	req->headlen = end - skip;
	evbuffer_drain(in, end);
	r = http_parse_proxy_head(req->head, req->headlen, &req->h, req->hdrs,
	    HTTP_NHEADERS_MAX);
	if (r != 0) {
		egress_answer(ec, r, req->h.detail, 1);
		egress_req_free(req);
		return;
	}
	ec->req = req;
	req->ec = ec;
	if (ec_route(ec, req) == -1) {
		ec->req = NULL;
		egress_req_free(req);
	}
}

/* A request of the connection, not yet read or sent. */
struct egress_req *
egress_req_new(struct egress_conn *ec)
{
	struct egress_req	*req;

	if ((req = calloc(1, sizeof(*req))) == NULL)
		fatal("%s: calloc", __func__);
	req->reqid = ++egress_reqids;
	req->gr = egrant_of(ec->run);
	req->runid = req->gr->runid;
	req->worker = req->gr->worker;
	req->chunk = RC_SIZE;
	evtimer_set(&req->tmo, verdict_timeout, req);
	return (req);
}

/*
 * Where the request goes and whether it may: -1 when it was answered
 * here (refused, or an intercepted CONNECT), 0 when it waits for the
 * vault.
 */
static int
ec_route(struct egress_conn *ec, struct egress_req *req)
{
	struct http_head	*h = &req->h;
	struct egrant		*gr = egrant_of(ec->run);
	const struct http_hdr	*hh;
	char			 detail[HOST_LEN_MAX + 320], path[2048];
	size_t			 i;
	int			 plain = 0;

	if (h->method == HTTP_M_CONNECT)
		return (ec_connect(ec, req));
	if (ec->ssl != NULL) {
		if (h->absolute) {
			egress_answer(ec, 400, "an absolute URL inside TLS", 1);
			return (-1);
		}
		strlcpy(req->host, ec->host, sizeof(req->host));
		req->port = ec->hport;
		req->https = 1;
	} else if (h->absolute && ec->kind == EGRESS_PROXY) {
		if (host_split(h->authority.p, h->authority.len, req->host,
		    sizeof(req->host), &req->port, 80) == -1) {
			egress_answer(ec, 400, "malformed host in the request "
			    "target", 1);
			return (-1);
		}
		plain = 1;
	} else if (!h->absolute && ec->kind == EGRESS_TRANSPARENT) {
		for (i = 0, hh = NULL; i < h->nhdrs; i++)
			if (h->hdrs[i].name.len == 4 &&
			    strncasecmp(h->hdrs[i].name.p, "Host", 4) == 0)
				hh = &h->hdrs[i];
		if (hh == NULL || host_split(hh->value.p, hh->value.len,
		    req->host, sizeof(req->host), &req->port, ec->port) == -1) {
			egress_answer(ec, 400, "a request needs a Host", 1);
			return (-1);
		}
		req->port = ec->port;
		plain = 1;
	} else {
		egress_answer(ec, 400, "this is tregd's egress proxy: send "
		    "CONNECT host:port or an absolute http:// URL", 1);
		return (-1);
	}
	egress_pathmask(gr, h, path, sizeof(path));
	if (egress_method(req, req->method, sizeof(req->method)) == -1) {
		/* Recorded under the request line's method. */
		i = strcspn(req->head, " ");
		if (i >= sizeof(req->method))
			i = sizeof(req->method) - 1;
		memcpy(req->method, req->head, i);
		req->method[i] = '\0';
		egress_audit_refusal(ec, req->method, req->host, req->port,
		    path, "a method override header must name one method", 400);
		egress_answer(ec, 400, "a method override header must name "
		    "one method", 1);
		return (-1);
	}
	if (plain && !egress_host_ok(gr, req->host, req->port, 1)) {
		snprintf(detail, sizeof(detail), "http://%s:%u is not on the "
		    "egress list of %s", req->host, req->port, gr->tool);
		egress_audit_refusal(ec, req->method, req->host, req->port,
		    path, detail, 403);
		egress_answer(ec, 403, detail, 1);
		return (-1);
	}
	req->body = h->chunked || (h->has_clen && h->clen > 0);
	req->left = h->has_clen ? h->clen : 0;
	req->close = !h->keepalive;
	req->headonly = h->method == HTTP_M_HEAD;
	/* A SigV4 request is checked (its body hashed) before the vault. */
	return (egress_req_check(req) == -1 ? -1 : 0);
}

/*
 * CONNECT host:port: a tunnel to a host of the list, or a 403; -1, or
 * 0 when a passthrough tunnel waits for its record (egress_pass.c).
 */
static int
ec_connect(struct egress_conn *ec, struct egress_req *req)
{
	struct egrant		*gr = egrant_of(ec->run);
	struct bufferevent	*tls;
	struct timeval		 tv;
	char			 detail[HOST_LEN_MAX + 320], bare[HOST_LEN_MAX];
	SSL			*ssl;

	if (ec->kind != EGRESS_PROXY || ec->ssl != NULL) {
		egress_answer(ec, 400, "CONNECT only on the proxy's port", 1);
		return (-1);
	}
	if (host_split(req->h.authority.p, req->h.authority.len, ec->host,
	    sizeof(ec->host), &ec->hport, 0) == -1) {
		egress_answer(ec, 400, "CONNECT needs host:port", 1);
		return (-1);
	}
	if (!egress_host_ok(gr, ec->host, ec->hport, 0)) {
		snprintf(detail, sizeof(detail), "%s:%u is not on the egress "
		    "list of %s", ec->host, ec->hport, gr->tool);
		egress_audit_refusal(ec, "CONNECT", ec->host, ec->hport, "",
		    detail, 403);
		egress_answer(ec, 403, detail, 1);
		return (-1);
	}
	if (gr->g.passthrough)
		return (egress_pass_connect(ec, req));
	ssl = ec_ssl(ec);
	ec->tunnel = 1;
	if (egress_ca_use(ssl, egress_host_bare(ec->host, bare,
	    sizeof(bare))) == -1) {
		/* No bufferevent holds it yet. */
		SSL_free(ssl);
		ec->ssl = NULL;
		egress_answer(ec, 502, "no certificate can be made for this "
		    "host", 1);
		return (-1);
	}
	evbuffer_add_printf(bufferevent_get_output(ec->bev),
	    "HTTP/1.1 200 Connection established\r\n\r\n");
	/* The TLS layer stops writing down while this much waits. */
	bufferevent_setwatermark(ec->bev, EV_WRITE, 0, EGRESS_OUT_HIGH);
	/* TLS over the same bytes: the 200 goes first, in the clear. */
	tls = bufferevent_openssl_filter_new(proc_base, ec->bev, ssl,
	    BUFFEREVENT_SSL_ACCEPTING,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (tls == NULL)
		fatalx("%s: bufferevent_openssl_filter_new", __func__);
	ec->bev = tls;
	ec->state = EC_TLS;
	bufferevent_setwatermark(tls, EV_READ, 0, EGRESS_UP_HIGH);
	bufferevent_setcb(tls, ec_read, ec_write, ec_event, ec);
	bufferevent_enable(tls, EV_READ | EV_WRITE);
	tv.tv_sec = EGRESS_HEAD_SECS;
	tv.tv_usec = 0;
	evtimer_add(&ec->tmo, &tv);
	return (-1);
}

/* ------------------------------------------------------------------ */
/* The vault's record and verdict.                                     */

/*
 * The path as the record keeps it: placeholders masked, the query's
 * names without their values.
 */
int
egress_pathmask(const struct egrant *gr, const struct http_head *h,
    char *out, size_t outsz)
{
	struct ebuf	 b = { NULL, 0, 0 };
	const char	*p, *e, *amp, *eq;
	size_t		 i, j, m;

	for (i = 0; i < h->path.len; ) {
		for (j = 0, m = 0; j < gr->nvals; j++)
			if (gr->vals[j].phlen <= h->path.len - i &&
			    memcmp(h->path.p + i, gr->vals[j].ph,
			    gr->vals[j].phlen) == 0) {
				m = gr->vals[j].phlen;
				break;
			}
		if (m > 0) {
			ebuf_add(&b, "***", 3);
			i += m;
		} else
			ebuf_add(&b, h->path.p + i++, 1);
	}
	p = h->query.p;
	e = p + h->query.len;
	for (; p < e; p = amp + 1) {
		if ((amp = memchr(p, '&', e - p)) == NULL)
			amp = e;
		if ((eq = memchr(p, '=', amp - p)) == NULL)
			eq = amp;
		ebuf_add(&b, p == h->query.p ? "?" : "&", 1);
		ebuf_add(&b, p, eq - p);
		if (amp == e)
			break;
	}
	if (b.p == NULL)
		ebuf_add(&b, "/", 1);
	strlcpy(out, b.p, outsz);
	freezero(b.p, b.cap);
	return (0);
}

/* The request, to the run's vault worker: it waits for the verdict. */
void
egress_req_call(struct egress_req *req)
{
	struct egress_call	 c;
	struct pack		 pk;
	struct timeval		 tv = { EGRESS_VERDICT_SECS, 0 };
	char			 path[2048];

	egress_pathmask(req->gr, &req->h, path, sizeof(path));
	memset(&c, 0, sizeof(c));
	c.runid = req->runid;
	c.reqid = req->reqid;
	c.port = req->port;
	pack_init(&pk);
	pack_str(&pk, req->method);
	pack_str(&pk, req->host);
	pack_str(&pk, path);
	pack_str(&pk, "");
	relay_vault_send(req->worker, IMSG_EGRESS_CALL, c.reqid, &c, sizeof(c),
	    pk.buf, pk.len);
	pack_free(&pk);
	req->ec->state = EC_VERDICT;
	TAILQ_INSERT_TAIL(&verdicts, req, entry);
	req->waiting = 1;
	evtimer_add(&req->tmo, &tv);
}

void
egress_verdict_recv(int worker, const void *head, const char *data,
    size_t len)
{
	struct egress_verdict	 v;
	struct egress_req	*req;
	struct egress_conn	*ec;
	struct unpack		 u;
	struct call_done	 cd;
	const char		*detail;
	char			 line[256];
	size_t			 i;

	memcpy(&v, head, sizeof(v));
	/* The detail is packed; none at all reads as "". */
	unpack_init(&u, data, len);
	if (len == 0)
		detail = "";
	else if ((detail = unpack_str(&u)) == NULL || unpack_done(&u) != 0)
		fatalx("bad IMSG_EGRESS_VERDICT from vault %d", worker);
	TAILQ_FOREACH(req, &verdicts, entry)
		if (req->reqid == v.reqid && req->runid == v.runid &&
		    req->worker == worker)
			break;
	if (req == NULL || req->ec == NULL) {
		/* Its connection went (or it timed out): recorded, unsent. */
		if (v.ok) {
			memset(&cd, 0, sizeof(cd));
			cd.callid = v.callid;
			cd.refused = CALL_UPSTREAM;
			relay_vault_done(worker, &cd);
		}
		if (req != NULL)
			egress_req_free(req);
		return;
	}
	TAILQ_REMOVE(&verdicts, req, entry);
	req->waiting = 0;
	evtimer_del(&req->tmo);
	ec = req->ec;
	if (!v.ok) {
		/* One line, printable: what the CLI shows its user. */
		for (i = 0; detail[i] != '\0' && i < sizeof(line) - 1; i++)
			line[i] = (unsigned char)detail[i] < 0x20 ? ' ' :
			    detail[i];
		line[i] = '\0';
		if (req->tunnel) {
			ec->req = NULL;
			egress_req_free(req);
			egress_pass_refuse(ec, v.status >= 400 &&
			    v.status <= 599 ? (int)v.status : 403,
			    line[0] ? line : "refused by policy");
			return;
		}
		egress_answer(ec, v.status >= 400 && v.status <= 599 ?
		    (int)v.status : 403, line[0] ? line : "refused by policy",
		    req->body || req->close);
		ec->req = NULL;
		egress_req_free(req);
		egress_conn_next(ec);
		return;
	}
	req->callid = v.callid;
	if (req->tunnel)
		egress_pass_go(req);
	else
		egress_req_go(req);
}

static void
verdict_timeout(int fd, short ev, void *arg)
{
	struct egress_req	*req = arg;
	struct egress_conn	*ec = req->ec;
	struct timeval		 tv = { EGRESS_GRANT_SLACK, 0 };

	relay_cork(1);
	if (ec == NULL) {
		/* Long after: the vault will not answer it. */
		egress_req_free(req);
		relay_cork(0);
		return;
	}
	/* Stays listed a while: a late verdict still closes its record. */
	ec->req = NULL;
	req->ec = NULL;
	if (req->tunnel)
		egress_pass_refuse(ec, 503, "the vault did not record the "
		    "connection in time — try again later");
	else
		egress_answer(ec, 503, "the vault did not record the request "
		    "in time — try again later", 1);
	evtimer_add(&req->tmo, &tv);
	relay_cork(0);
}

/* Where the request is, it stops (its connection went). */
void
egress_req_free(struct egress_req *req)
{
	if (req->waiting) {
		TAILQ_REMOVE(&verdicts, req, entry);
		req->waiting = 0;
	}
	evtimer_del(&req->tmo);
	if (req->head != NULL)
		freezero(req->head, req->headlen + 1);
	if (req->out.p != NULL)
		freezero(req->out.p, req->out.cap);
	free(req->bodyhash);
	freezero(req, sizeof(*req));
}
