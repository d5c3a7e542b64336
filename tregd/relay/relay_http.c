/*
 * relay_http.c: the relay's HTTP/1.1 client on libevent bufferevents
 * (README: why not libcurl).  A call connects to the addresses relay.c
 * resolved and checked, one after the other, and to no other: the
 * socket is the relay's own, the address checked once more just before
 * connect(2).  HTTPS is a bufferevent_openssl over that socket, verified
 * against the CA bundle read at start (system + `relay ca'), the
 * upstream's name checked and sent as SNI.  Redirects are answers like
 * any other, no proxy is ever used, `relay timeout connect' covers the
 * TCP connect and the TLS handshake, `relay timeout total' the call.
 * A connection whose answer ended cleanly goes to the idle pool, keyed
 * by the org, scheme, host, port and the checked address, for the
 * org's next call (keep-alive: a connection never serves two orgs; a
 * keyless run's serve that run only, relay/egress_req.c);
 * an idle one that the upstream closes or talks on is dropped.  Reading the answer is relay_resp.c's.
 */

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <event.h>
#include <event2/bufferevent_ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "redact.h"
#include "relay.h"

#define RH_IDLE_MAX	256	/* idle connections kept */
#define RH_IDLE_SECS	118	/* and for how long at most */
#define RH_READ_HIGH	(256 * 1024)	/* read ahead of the redactor */

struct rconn {
	TAILQ_ENTRY(rconn)	 entry;		/* the idle pool */
	struct bufferevent	*bev;
	SSL			*ssl;		/* the bufferevent's */
	struct rcall		*rc;		/* NULL: idle */
	int64_t			 org_id;	/* the only org it serves */
	uint32_t		 runid;		/* and run, */
	int			 run;		/* if it is a run's */
	int			 tls;
	char			 host[HOST_LEN_MAX];
	long			 port;
	union raddr		 addr;
	int			 reused;	/* served a call before */
};
TAILQ_HEAD(rconn_list, rconn);

static struct rconn_list idle = TAILQ_HEAD_INITIALIZER(idle);
static int		 nidle;
static SSL_CTX		*tls_ctx;	/* every upstream TLS */

static int	 rh_ca_parse(X509_STORE *, const char *, size_t, int *);
static socklen_t rh_salen(const union raddr *);
static struct rconn *rh_idle_find(struct rcall *);
static void	 rh_connect(struct rcall *);
static void	 rh_connected(int, short, void *);
static void	 rh_attach(struct rcall *, int);
static char	*rh_headers(struct rcall *, char *, int *);
static void	 rh_request(struct rcall *);
static void	 rh_read(struct bufferevent *, void *);
static void	 rh_write(struct bufferevent *, void *);
static void	 rh_event(struct bufferevent *, short, void *);
static void	 rh_idle_event(struct bufferevent *, short, void *);
static void	 rh_idle_read(struct bufferevent *, void *);
static void	 rh_conn_free(struct rconn *);
static void	 rh_tmo_connect(int, short, void *);
static void	 rh_tmo_total(int, short, void *);
static void	 rh_zero(const void *, size_t, void *);
static int	 rh_idempotent(const char *);

/* ca: the system's bundle (sys bytes), then `relay ca'. */
void
rhttp_init(const char *ca, size_t calen, size_t sys)
{
	X509_STORE	*store;
	int		 n, bad = 0;

	if ((tls_ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		fatalx("%s: SSL_CTX_new", __func__);
	if (SSL_CTX_set_min_proto_version(tls_ctx, TLS1_2_VERSION) != 1)
		fatalx("%s: SSL_CTX_set_min_proto_version", __func__);
	SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(tls_ctx, SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_set_alpn_protos(tls_ctx,
	    (const unsigned char *)"\x08http/1.1", 9) != 0)
		fatalx("%s: SSL_CTX_set_alpn_protos", __func__);
	/* The CA bundle as the context's X509_STORE, parsed once, only it. */
	if ((store = X509_STORE_new()) == NULL)
		fatalx("%s: X509_STORE_new", __func__);
	SSL_CTX_set_cert_store(tls_ctx, store);
	n = rh_ca_parse(store, ca, sys, &bad);
	log_debug("relay: %d CA certificates of the system", n);
	if (relay_conf.relay_ca[0] == '\0')
		return;
	bad = 0;
	n = rh_ca_parse(store, ca + sys, calen - sys, &bad);
	if (bad)
		log_warnx("relay ca %s: a malformed certificate after %d, "
		    "the rest not read", relay_conf.relay_ca, n);
	else if (n == 0)
		log_warnx("relay ca %s: no certificate in it",
		    relay_conf.relay_ca);
	else
		log_debug("relay ca %s: %d certificates", relay_conf.relay_ca,
		    n);
}

/*
 * The PEM certificates of len bytes into the store: how many; *bad when
 * a block could not be read (the rest of the file is not).
 */
static int
rh_ca_parse(X509_STORE *store, const char *ca, size_t len, int *bad)
{
	X509		*x;
	BIO		*bio;
	unsigned long	 e;
	int		 n = 0;

	if (ca == NULL || len == 0)
		return (0);
	if ((bio = BIO_new_mem_buf(ca, len)) == NULL)
		fatalx("%s: BIO_new_mem_buf", __func__);
	ERR_clear_error();
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		if (X509_STORE_add_cert(store, x) == 1)
			n++;
		X509_free(x);
	}
	BIO_free(bio);
	/* No more BEGIN line is the end; anything else a broken block. */
	e = ERR_peek_last_error();
	*bad = e != 0 && !(ERR_GET_LIB(e) == ERR_LIB_PEM &&
	    ERR_GET_REASON(e) == PEM_R_NO_START_LINE);
	ERR_clear_error();
	return (n);
}

static socklen_t
rh_salen(const union raddr *ra)
{
	return (ra->sa.sa_family == AF_INET6 ? sizeof(ra->sin6) :
	    sizeof(ra->sin));
}

/* ------------------------------------------------------------------ */
/* A call's connection.                                                */

int
rhttp_start(struct rcall *rc)
{
	struct timeval	 tv;
	struct rconn	*c;

	rc->head_req = strcmp(rc->method, "HEAD") == 0;
	evtimer_set(&rc->tmo_connect, rh_tmo_connect, rc);
	evtimer_set(&rc->tmo_total, rh_tmo_total, rc);
	rc->timers = 1;
	tv.tv_sec = rc->total_s > 0 ? rc->total_s :
	    relay_conf.relay_timeout_total;
	tv.tv_usec = 0;
	evtimer_add(&rc->tmo_total, &tv);
	if ((c = rh_idle_find(rc)) != NULL) {
		TAILQ_REMOVE(&idle, c, entry);
		nidle--;
		c->rc = rc;
		c->reused = 1;
		rc->conn = c;
		bufferevent_set_timeouts(c->bev, NULL, NULL);
		bufferevent_setcb(c->bev, rh_read, NULL, rh_event, rc);
		bufferevent_enable(c->bev, EV_READ | EV_WRITE);
		rh_request(rc);
		return (0);
	}
	tv.tv_sec = relay_conf.relay_timeout_connect;
	evtimer_add(&rc->tmo_connect, &tv);
	rh_connect(rc);
	return (0);
}

/*
 * An idle connection of the call's org to this scheme, host and port, at
 * a checked address.
 */
static struct rconn *
rh_idle_find(struct rcall *rc)
{
	struct rconn	*c;
	int		 i;

	TAILQ_FOREACH(c, &idle, entry) {
		if (c->org_id != rc->org_id || c->runid != rc->runid ||
		    c->run != (rc->sink != NULL) || c->tls != rc->tls ||
		    c->port != rc->port ||
		    strcasecmp(c->host, rc->host) != 0)
			continue;
		for (i = 0; i < rc->naddrs; i++)
			if (memcmp(&c->addr, &rc->addrs[i],
			    rh_salen(&rc->addrs[i])) == 0)
				return (c);
	}
	return (NULL);
}

/*
 * The call's next checked address from rc->nextaddr on, the guard asked
 * again: a socket of the relay's own connecting to it (rc->nextaddr
 * names it), ev set to call cb(arg) once it is writable; or -1 when none
 * is left.  A passthrough tunnel's too.
 */
int
rhttp_socket(struct rcall *rc, struct event *ev,
    void (*cb)(int, short, void *), void *arg)
{
	union raddr	*ra;
	int		 fd, one = 1;

	for (; rc->nextaddr < rc->naddrs; rc->nextaddr++) {
		ra = &rc->addrs[rc->nextaddr];
		if (!relay_addr_ok(rc, &ra->sa))
			continue;
		if ((fd = socket(ra->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, IPPROTO_TCP)) == -1) {
			log_warn("relay: socket");
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, &ra->sa, rh_salen(ra)) == 0 ||
		    errno == EINPROGRESS) {
			event_set(ev, fd, EV_WRITE, cb, arg);
			event_add(ev, NULL);
			return (fd);
		}
		close(fd);
	}
	return (-1);
}

/* How a socket's connect ended: 0, or its errno. */
int
rhttp_connect_error(int fd)
{
	socklen_t	 len = sizeof(int);
	int		 err = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	return (err);
}

/* The next checked address: a socket of the relay's own, connecting. */
static void
rh_connect(struct rcall *rc)
{
	if ((rc->cfd = rhttp_socket(rc, &rc->cev, rh_connected, rc)) == -1)
		rhttp_fail(rc, 502, "the upstream could not be reached");
}

static void
rh_connected(int fd, short ev, void *arg)
{
	struct rcall	*rc = arg;
	int		 err = rhttp_connect_error(fd);

	rc->cfd = -1;
	if (err != 0) {
		close(fd);
		rc->nextaddr++;
		rh_connect(rc);
		return;
	}
	rh_attach(rc, fd);
}

/* The connected socket becomes the call's connection (TLS: handshake). */
static void
rh_attach(struct rcall *rc, int fd)
{
	struct rconn	*c;
	SSL		*ssl = NULL;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("%s: calloc", __func__);
	c->org_id = rc->org_id;
	c->runid = rc->runid;
	c->run = rc->sink != NULL;
	c->tls = rc->tls;
	c->port = rc->port;
	strlcpy(c->host, rc->host, sizeof(c->host));
	memcpy(&c->addr, &rc->addrs[rc->nextaddr], sizeof(c->addr));
	c->rc = rc;
	rc->conn = c;
	if (!rc->tls) {
		evtimer_del(&rc->tmo_connect);
		c->bev = bufferevent_socket_new(proc_base, fd,
		    BEV_OPT_CLOSE_ON_FREE);
	} else {
		if ((ssl = SSL_new(tls_ctx)) == NULL)
			fatalx("%s: SSL_new", __func__);
		SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		if (rc->literal) {
			if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
			    rc->host) != 1)
				fatalx("%s: X509_VERIFY_PARAM_set1_ip_asc",
				    __func__);
		} else if (SSL_set_tlsext_host_name(ssl, rc->host) != 1 ||
		    SSL_set1_host(ssl, rc->host) != 1)
			fatalx("%s: SSL_set1_host", __func__);
		c->ssl = ssl;
		/*
		 * Deferred: libevent's TLS read loop reports an EOF before
		 * the bytes read with it are in the input, so the answer's
		 * last bytes (a close-delimited body's, or a whole small
		 * answer) came after its end.  Deferred callbacks run the
		 * read first.  A close without close_notify stays an error
		 * (OpenSSL 3 makes it one whatever libevent's dirty shutdown
		 * says): a close-delimited answer cut by an attacker never
		 * ends as complete.
		 */
		c->bev = bufferevent_openssl_socket_new(proc_base, fd, ssl,
		    BUFFEREVENT_SSL_CONNECTING,
		    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	}
	if (c->bev == NULL)
		fatalx("%s: bufferevent", __func__);
	bufferevent_setwatermark(c->bev, EV_READ, 0, RH_READ_HIGH);
	bufferevent_setcb(c->bev, rh_read, NULL, rh_event, rc);
	if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) == -1)
		fatalx("%s: bufferevent_enable", __func__);
	if (!rc->tls)
		rh_request(rc);
}

/* An evbuffer reference to a request's bytes: zeroed once sent. */
static void
rh_zero(const void *data, size_t len, void *arg)
{
	freezero((void *)data, len);
}

/*
 * The caller's headers as the vault made them, but the framing ones
 * (the relay sets the length) and Accept-Encoding: *host if one is Host.
 */
static char *
rh_headers(struct rcall *rc, char *p, int *host)
{
	const char	*h, *colon;
	size_t		 i, n;

	for (i = 0; i < rc->nheaders; i++) {
		h = rc->headers[i];
		if ((colon = strchr(h, ':')) == NULL)
			continue;
		n = colon - h;
		if ((n == 15 && strncasecmp(h, "Accept-Encoding", n) == 0) ||
		    (n == 14 && strncasecmp(h, "Content-Length", n) == 0) ||
		    (n == 17 && strncasecmp(h, "Transfer-Encoding", n) == 0))
			continue;
		if (n == 4 && strncasecmp(h, "Host", n) == 0)
			*host = 1;
		n = strlen(h);
		memcpy(p, h, n);
		p += n;
		*p++ = '\r';
		*p++ = '\n';
	}
	return (p);
}

/*
 * The request line, Host, the headers (the bound ones carry a secret:
 * the buffer is zeroed once written), identity encoding only (a
 * compressed answer could not be masked), the body's length and the
 * body, in one buffer.
 */
static void
rh_request(struct rcall *rc)
{
	struct evbuffer	*out = bufferevent_get_output(rc->conn->bev);
	char		*buf, *p;
	size_t		 i, len;
	int		 body, host = 0;

	/* A run's request: its owner writes it and streams its body. */
	if (rc->sink != NULL) {
		bufferevent_setcb(rc->conn->bev, rh_read, rh_write, rh_event,
		    rc);
		rc->sink->request(rc, out);
		return;
	}
	body = rc->bodylen > 0 || strcmp(rc->method, "POST") == 0 ||
	    strcmp(rc->method, "PUT") == 0 || strcmp(rc->method, "PATCH") == 0;
	/* The fixed parts below take 88 bytes at most. */
	len = strlen(rc->method) + strlen(rc->target) + 128 + rc->authlen +
	    rc->bodylen;
	for (i = 0; i < rc->nheaders; i++)
		len += strlen(rc->headers[i]) + 2;
	if ((buf = malloc(len)) == NULL)
		fatal("%s: malloc", __func__);
	p = buf;
	p += snprintf(p, len, "%s %s%s HTTP/1.1\r\n", rc->method,
	    rc->target[0] == '/' ? "" : "/", rc->target);
	p = rh_headers(rc, p, &host);
	if (!host) {
		memcpy(p, "Host: ", 6);
		memcpy(p + 6, rc->authority, rc->authlen);
		p += 6 + rc->authlen;
		*p++ = '\r';
		*p++ = '\n';
	}
	p += snprintf(p, buf + len - p, "Accept-Encoding: identity\r\n");
	if (body)
		p += snprintf(p, buf + len - p, "Content-Length: %zu\r\n",
		    rc->bodylen);
	*p++ = '\r';
	*p++ = '\n';
	memcpy(p, rc->body, rc->bodylen);
	p += rc->bodylen;
	/* Not copied into the buffer's chains: rh_zero() frees it. */
	if (evbuffer_add_reference(out, buf, p - buf, rh_zero, NULL) == -1)
		fatal("%s: evbuffer_add_reference", __func__);
}

/* ------------------------------------------------------------------ */
/* Events.                                                             */

static void
rh_read(struct bufferevent *bev, void *arg)
{
	struct rcall	*rc = arg;

	relay_cork(1);
	rc->got = 1;
	rresp_input(rc);
	relay_cork(0);
}

/* The upstream took what was queued: a run's body may go on. */
static void
rh_write(struct bufferevent *bev, void *arg)
{
	struct rcall	*rc = arg;

	relay_cork(1);
	rc->sink->written(rc);
	relay_cork(0);
}

static void
rh_event(struct bufferevent *bev, short what, void *arg)
{
	struct rcall	*rc = arg;
	struct rconn	*c = rc->conn;
	struct timeval	 tv;
	char		 why[160];
	long		 v;

	relay_cork(1);
	if (what & BEV_EVENT_CONNECTED) {
		/* The TLS handshake is done, verified. */
		evtimer_del(&rc->tmo_connect);
		rh_request(rc);
		relay_cork(0);
		return;
	}
	if ((what & BEV_EVENT_EOF) && rresp_eof(rc) == 0) {
		relay_cork(0);
		return;
	}
	/*
	 * Nothing came on a kept connection: it was closed; once anew if
	 * the method may be sent twice (the upstream may have acted on it).
	 */
	if (!rc->got && c->reused && !rc->retried && !rc->head_sent &&
	    rh_idempotent(rc->method)) {
		rc->retried = 1;
		rh_conn_free(c);
		rc->conn = NULL;
		rc->nextaddr = 0;
		tv.tv_sec = relay_conf.relay_timeout_connect;
		tv.tv_usec = 0;
		evtimer_add(&rc->tmo_connect, &tv);
		rh_connect(rc);
		relay_cork(0);
		return;
	}
	if (c->ssl != NULL && evtimer_pending(&rc->tmo_connect, NULL) &&
	    (v = SSL_get_verify_result(c->ssl)) != X509_V_OK) {
		/* OpenSSL's reason: a fixed text, nothing of the peer's. */
		snprintf(why, sizeof(why), "the upstream's TLS certificate "
		    "is not trusted: %s", X509_verify_cert_error_string(v));
		rhttp_fail(rc, 502, why);
	} else if (c->ssl != NULL && evtimer_pending(&rc->tmo_connect, NULL))
		rhttp_fail(rc, 502, "the TLS handshake with the upstream "
		    "failed");
	else
		rhttp_fail(rc, 502, rc->got ? "the upstream's answer was cut "
		    "short" : "the upstream closed the connection without an "
		    "answer");
	ERR_clear_error();
	relay_cork(0);
}

/* RFC 9110, section 9.2.2 (TRACE and CONNECT are never relayed). */
static int
rh_idempotent(const char *method)
{
	return (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
	    strcmp(method, "OPTIONS") == 0 || strcmp(method, "PUT") == 0 ||
	    strcmp(method, "DELETE") == 0);
}

static void
rh_tmo_connect(int fd, short ev, void *arg)
{
	relay_cork(1);
	rhttp_fail(arg, 504, "the upstream could not be reached in time");
	relay_cork(0);
}

static void
rh_tmo_total(int fd, short ev, void *arg)
{
	relay_cork(1);
	rhttp_fail(arg, 504, "the upstream did not answer in time");
	relay_cork(0);
}

/* Before a head: tregd's own refusal; after it: a failed end. */
void
rhttp_fail(struct rcall *rc, int status, const char *detail)
{
	if (rc->head_sent) {
		rresp_flush(rc);	/* what came, to the cut */
		rhttp_end(rc, 0);
		relay_finish(rc, 1);
		return;
	}
	rhttp_stop(rc);
	relay_refuse(rc, status, CALL_UPSTREAM, detail);
}

/* ------------------------------------------------------------------ */
/* The end of a call, its connection kept or dropped.                  */

struct evbuffer *
rhttp_input(struct rcall *rc)
{
	return (bufferevent_get_input(rc->conn->bev));
}

/* NULL while there is no connection (connecting, or gone). */
struct evbuffer *
rhttp_output(struct rcall *rc)
{
	if (rc->conn == NULL || rc->cfd != -1)
		return (NULL);
	return (bufferevent_get_output(rc->conn->bev));
}

/* The run ended: its kept connections go (never another run's). */
void
rhttp_drop_run(uint32_t runid)
{
	struct rconn	*c, *t;

	TAILQ_FOREACH_SAFE(c, &idle, entry, t)
		if (c->run && c->runid == runid)
			rh_conn_free(c);
}

/*
 * The answer ended: a connection whose answer was read to its end,
 * whose request went out whole and that may stay open waits for the
 * next call; any other is closed.
 */
void
rhttp_end(struct rcall *rc, int keep)
{
	struct rconn	*c = rc->conn;
	struct timeval	 tv = { RH_IDLE_SECS, 0 };

	if (c != NULL && keep && rc->keepalive &&
	    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		rc->conn = NULL;
		c->rc = NULL;
		if (nidle >= RH_IDLE_MAX)
			rh_conn_free(TAILQ_FIRST(&idle));
		bufferevent_setcb(c->bev, rh_idle_read, NULL, rh_idle_event,
		    c);
		bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
		bufferevent_set_timeouts(c->bev, &tv, NULL);
		bufferevent_enable(c->bev, EV_READ);
		TAILQ_INSERT_TAIL(&idle, c, entry);
		nidle++;
	}
	rhttp_stop(rc);
}

/* The call's transfer goes (cancelled, ended): timers, socket, connection. */
void
rhttp_stop(struct rcall *rc)
{
	if (rc->timers) {
		evtimer_del(&rc->tmo_connect);
		evtimer_del(&rc->tmo_total);
		rc->timers = 0;
	}
	if (rc->stalled) {
		evtimer_del(&rc->stall);
		rc->stalled = 0;
	}
	if (rc->cfd != -1) {
		event_del(&rc->cev);
		close(rc->cfd);
		rc->cfd = -1;
	}
	if (rc->conn != NULL) {
		rh_conn_free(rc->conn);
		rc->conn = NULL;
	}
}

void
rhttp_pause(struct rcall *rc, int pause)
{
	if (rc->conn == NULL)
		return;
	rc->paused = pause;
	if (pause) {
		bufferevent_disable(rc->conn->bev, EV_READ);
		return;
	}
	/* After the close nothing more comes (TLS would call it an error). */
	if (!rc->eof)
		bufferevent_enable(rc->conn->bev, EV_READ);
	/* What was read before the pause, what the decoder holds. */
	relay_cork(1);
	rresp_input(rc);
	relay_cork(0);
}

static void
rh_idle_read(struct bufferevent *bev, void *arg)
{
	rh_conn_free(arg);		/* nothing was asked */
}

static void
rh_idle_event(struct bufferevent *bev, short what, void *arg)
{
	rh_conn_free(arg);		/* closed, broken, or idle too long */
}

static void
rh_conn_free(struct rconn *c)
{
	if (c->rc == NULL) {
		TAILQ_REMOVE(&idle, c, entry);
		nidle--;
	}
	bufferevent_free(c->bev);	/* and the SSL, and the socket */
	free(c);
}
