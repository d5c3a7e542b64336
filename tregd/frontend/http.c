/*
 * The frontend's HTTP/1.1 connections, plain or TLS, on libevent
 * bufferevents.  tregd owns every byte it sends: protocol errors are
 * JSON like every other answer.  Each connection has one deadline at a
 * time (the whole head, the whole body, idle keep-alive, a lingering
 * close) and a write timeout; connections are capped in total and per
 * client address, and the excess is refused at once.  Requests on a
 * connection are served one at a time, in order (pipelining).
 *
 * A plain connection writes what a loop turn queued at the end of that
 * turn, in one writev, and waits for EV_WRITE only while the socket is
 * full: an answer costs no epoll_ctl and no extra wake-up.  It reads
 * with an event of its own, without the FIONREAD ioctl libevent's
 * evbuffer_read() makes before every read.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/tree.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <event.h>
#include <stdarg.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "http.h"
#include "tregd.h"

#define HTTP_LINGER_BYTES	(16 * 1024 * 1024)
#define HTTP_READ_MAX		(64 * 1024)	/* one read(2), plain */
#define HTTP_HSTS		"max-age=31536000"
#define TLS_CIPHERS		"ECDHE+AESGCM:ECDHE+CHACHA20"

enum hc_state {
	HC_HEAD,	/* reading a request head (or idle before one) */
	HC_BODY,	/* reading its body */
	HC_BUSY,	/* the frontend has it */
	HC_DONE,	/* answered: flushing */
	HC_LINGER	/* closing: our side shut, reading what still comes */
};

/* Connections per client address. */
struct http_addr {
	RB_ENTRY(http_addr)	 entry;
	uint8_t			 key[17];	/* family, then the address */
	int			 n;
};
RB_HEAD(addr_tree, http_addr);

struct http_conn {
	TAILQ_ENTRY(http_conn)	 entry;
	struct bufferevent	*bev;
	int			 fd;
	int			 tls;
	int			 metrics;	/* a metrics listener's */
	int			 counted;	/* in the metrics */
	struct http_addr	*addr;
	char			 peer[INET6_ADDRSTRLEN];
	enum hc_state		 state;
	struct event		 timer;
	int			 has_bytes;	/* of the head being read */
	char			*head;		/* NUL-terminated copy */
	size_t			 headlen;
	struct http_head	 h;
	uint64_t		 need;		/* body bytes */
	size_t			 lingered;
	int			 close;		/* after this answer */
	int			 head_only;
	int			 minor;		/* HTTP/1.minor */
	int			 chunked;
	int			 allow;		/* 405: the methods there are */
	int			 dispatched;
	/* The request log. */
	struct timespec		 start;
	int			 status;
	size_t			 sent;
	int			 method;
	const char		*route;
	int64_t			 org_id, user_id;
	char			 reqid[HTTP_REQID_MAX + 1];
	/* The frontend's request while it has one. */
	void			*arg;
	http_drain_fn		 drain;
	/* A relayed answer (/call): headers of the upstream's, added. */
	int			 relayed;
	char			*extra;
	size_t			 extralen;
	/* Output queued this loop turn (plain connections). */
	struct evbuffer_cb_entry *outcb;
	TAILQ_ENTRY(http_conn)	 wentry;
	int			 wqueued;
	/* Reading (plain connections): up to rmax bytes held. */
	struct event		 rev;
	int			 rev_set;
	int			 rpaused;
	int			 reof;
	size_t			 rmax;
};
TAILQ_HEAD(conn_list, http_conn);

static int	addr_cmp(struct http_addr *, struct http_addr *);
RB_PROTOTYPE_STATIC(addr_tree, http_addr, entry, addr_cmp);
RB_GENERATE_STATIC(addr_tree, http_addr, entry, addr_cmp);

static struct event_base	*http_base;
static http_request_fn		 http_request_cb;
static http_gone_fn		 http_gone_cb;
static struct conn_list		 conns = TAILQ_HEAD_INITIALIZER(conns);
static struct conn_list		 wconns = TAILQ_HEAD_INITIALIZER(wconns);
static struct event		 wturn;
static struct addr_tree		 addrs = RB_INITIALIZER(&addrs);
static int			 nconns;
static struct evconnlistener	*listeners[2 * CONF_LISTEN_MAX];
static int			 nlisteners;
static SSL_CTX			*tls_ctx;
static struct {
	int		 conns, per_addr, log;
	uint64_t	 body_max;
	struct timeval	 header, body, idle, write;
} hc = { 1000, 64, 1, HTTP_BODY_MAX, { 10, 0 }, { 30, 0 }, { 60, 0 },
    { 30, 0 } };

static void	http_accept(struct evconnlistener *, evutil_socket_t,
		    struct sockaddr *, int, void *);
static void	http_accept_error(struct evconnlistener *, void *);
static void	http_refuse(int, int, const char *);
static void	accept_refuse(int, int, int, const char *);
static struct http_addr *addr_get(const struct sockaddr *);
static void	http_peek(int, short, void *);
static void	http_start(struct http_conn *);
static void	http_readcb(struct bufferevent *, void *);
static void	http_read_plain(int, short, void *);
static void	http_incb(struct evbuffer *, const struct evbuffer_cb_info *,
		    void *);
static void	http_read_max(struct http_conn *, size_t);
static void	http_writecb(struct bufferevent *, void *);
static void	http_outcb(struct evbuffer *, const struct evbuffer_cb_info *,
		    void *);
static void	http_write_turn(int, short, void *);
static void	http_flush(struct http_conn *);
static void	http_eventcb(struct bufferevent *, short, void *);
static void	http_timer(int, short, void *);
static void	http_deadline(struct http_conn *, const struct timeval *);
static void	http_process(struct http_conn *);
static int	http_read_head(struct http_conn *);
static void	http_dispatch(struct http_conn *);
static void	head_add(char *, size_t *, size_t, const char *, ...)
		    __attribute__((__format__(printf, 4, 5)));
static void	http_head_out(struct http_conn *, int, const char *, int64_t);
static void	http_finish(struct http_conn *);
static void	http_log(struct http_conn *, const char *);
static void	http_free(struct http_conn *);
static void	http_new_reqid(char *, size_t);

static int
addr_cmp(struct http_addr *a, struct http_addr *b)
{
	return (memcmp(a->key, b->key, sizeof(a->key)));
}

void
http_init(struct event_base *base, http_request_fn req, http_gone_fn gone)
{
	http_base = base;
	http_request_cb = req;
	http_gone_cb = gone;
	OPENSSL_init_ssl(0, NULL);
}

/* Settings a reload may change (the ones of open connections too). */
void
http_conf(const struct tregd_conf *c)
{
	hc.conns = c->http_max_conns;
	hc.per_addr = c->http_per_addr;
	hc.log = c->log_requests;
	hc.body_max = c->http_body_max;
	hc.header.tv_sec = c->http_timeout_header;
	hc.body.tv_sec = c->http_timeout_body;
	hc.idle.tv_sec = c->http_timeout;
	hc.write.tv_sec = c->http_timeout_write;
}

/*
 * Listeners start disabled: connections wait in the kernel's backlog
 * until http_serve(), once every process of tregd is ready, so an
 * answer (even GET /meta) means the whole daemon serves.
 */
void
http_listen(int fd, int flags)
{
	struct evconnlistener	*lev;

	if (nlisteners >= (int)(sizeof(listeners) / sizeof(listeners[0])))
		fatalx("too many listeners");
	lev = evconnlistener_new(http_base, http_accept,
	    (void *)(intptr_t)flags, LEV_OPT_CLOSE_ON_FREE |
	    LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_DISABLED, -1, fd);
	if (lev == NULL)
		fatalx("evconnlistener_new");
	evconnlistener_set_error_cb(lev, http_accept_error);
	listeners[nlisteners++] = lev;
}

void
http_serve(void)
{
	int	 i;

	event_set(&wturn, -1, 0, http_write_turn, NULL);
	for (i = 0; i < nlisteners; i++)
		if (evconnlistener_enable(listeners[i]) == -1)
			fatalx("evconnlistener_enable");
}

/*
 * A new certificate and key (PEM) for the TLS listeners: TLS 1.2 and
 * later, forward-secret AEAD ciphers only.  Connections already open
 * keep the context they started with.
 */
int
http_tls_load(char *cert, size_t certlen, char *key, size_t keylen)
{
	SSL_CTX		*ctx;
	BIO		*bio = NULL;
	X509		*x = NULL;
	EVP_PKEY	*pk = NULL;
	int		 ok = 0;

	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL)
		goto done;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION |
	    SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_set_cipher_list(ctx, TLS_CIPHERS) != 1)
		goto done;
	if ((bio = BIO_new_mem_buf(cert, certlen)) == NULL ||
	    (x = PEM_read_bio_X509_AUX(bio, NULL, NULL, NULL)) == NULL ||
	    SSL_CTX_use_certificate(ctx, x) != 1)
		goto done;
	X509_free(x);
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1)
			goto done;
	ERR_clear_error();
	BIO_free(bio);
	if ((bio = BIO_new_mem_buf(key, keylen)) == NULL ||
	    (pk = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL)) == NULL ||
	    SSL_CTX_use_PrivateKey(ctx, pk) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1)
		goto done;
	ok = 1;
 done:
	EVP_PKEY_free(pk);
	BIO_free(bio);
	if (!ok) {
		X509_free(x);
		SSL_CTX_free(ctx);
		log_warnx("tls: the certificate or key is not usable");
		ERR_clear_error();
		return (-1);
	}
	SSL_CTX_free(tls_ctx);
	tls_ctx = ctx;
	return (0);
}

int
http_tls_enabled(void)
{
	return (tls_ctx != NULL);
}

/* ------------------------------------------------------------------ */
/* Accepting.                                                          */

static struct http_addr *
addr_get(const struct sockaddr *sa)
{
	struct http_addr	 key, *a;

	memset(&key, 0, sizeof(key));
	key.key[0] = sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(key.key + 1, &((const struct sockaddr_in *)sa)->sin_addr,
		    4);
	else if (sa->sa_family == AF_INET6)
		memcpy(key.key + 1,
		    &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	if ((a = RB_FIND(addr_tree, &addrs, &key)) != NULL)
		return (a);
	if ((a = calloc(1, sizeof(*a))) == NULL)
		fatal("%s: calloc", __func__);
	memcpy(a->key, key.key, sizeof(a->key));
	RB_INSERT(addr_tree, &addrs, a);
	return (a);
}

static void
addr_put(struct http_addr *a)
{
	if (--a->n > 0)
		return;
	RB_REMOVE(addr_tree, &addrs, a);
	free(a);
}

/* Past a cap: a short answer written at once, and the socket closed. */
static void
http_refuse(int fd, int status, const char *detail)
{
	char	 buf[512], id[HTTP_REQID_MAX + 1];
	int	 n, blen;

	http_new_reqid(id, sizeof(id));
	blen = (int)strlen(detail) + 13;	/* {"detail":"..."} */
	n = snprintf(buf, sizeof(buf), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: application/json\r\nContent-Length: %d\r\n"
	    "X-Request-Id: %s\r\nX-Content-Type-Options: nosniff\r\n"
	    "X-Frame-Options: DENY\r\nCache-Control: no-store\r\n"
	    "%sConnection: close\r\n\r\n"
	    "{\"detail\":\"%s\"}", status, http_reason(status), blen, id,
	    status == 400 ? "" : "Retry-After: 1\r\n", detail);
	if (n > 0 && (size_t)n < sizeof(buf))
		(void)send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	close(fd);
}

/*
 * A connection over a limit, counted: a plain one is told why; a TLS
 * one is closed (no handshake is spent on it).
 */
static void
accept_refuse(int fd, int tls, int status, const char *why)
{
	if (tls)
		close(fd);
	else
		http_refuse(fd, status, why);
	metrics_http(NULL, status, NULL);
}

static void
http_accept(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct http_conn	*c;
	struct http_addr	*a;
	int			 flags = (intptr_t)arg, one = 1;
	int			 tls = flags & HTTP_LISTEN_TLS;
	const void		*ap;

	if (tls && tls_ctx == NULL) {
		close(fd);
		return;
	}
	if (nconns >= hc.conns) {
		accept_refuse(fd, tls, 503, "too many connections - try "
		    "again in a moment");
		return;
	}
	a = addr_get(sa);
	if (a->n >= hc.per_addr) {
		accept_refuse(fd, tls, 429, "too many connections from "
		    "this address");
		return;
	}
	/* An answer in several TLS records must not wait for an ACK. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		log_warn("TCP_NODELAY");
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("%s: calloc", __func__);
	a->n++;
	nconns++;
	c->addr = a;
	c->fd = fd;
	c->tls = tls;
	c->metrics = (flags & HTTP_LISTEN_METRICS) != 0;
	ap = sa->sa_family == AF_INET6 ?
	    (const void *)&((struct sockaddr_in6 *)sa)->sin6_addr :
	    (const void *)&((struct sockaddr_in *)sa)->sin_addr;
	if (inet_ntop(sa->sa_family, ap, c->peer, sizeof(c->peer)) == NULL)
		strlcpy(c->peer, "?", sizeof(c->peer));
	TAILQ_INSERT_TAIL(&conns, c, entry);
	evtimer_set(&c->timer, http_timer, c);
	c->state = HC_HEAD;
	if (!tls) {
		if ((c->bev = bufferevent_socket_new(http_base, fd,
		    BEV_OPT_CLOSE_ON_FREE)) == NULL)
			fatalx("%s: bufferevent", __func__);
		http_start(c);
		return;
	}
	/* The first byte tells a TLS handshake from plain HTTP. */
	event_set(&c->timer, fd, EV_READ, http_peek, c);
	event_add(&c->timer, &hc.header);
}

static void
http_peek(int fd, short ev, void *arg)
{
	struct http_conn	*c = arg;
	SSL			*ssl;
	unsigned char		 b;

	evtimer_set(&c->timer, http_timer, c);
	if ((ev & EV_TIMEOUT) || recv(fd, &b, 1, MSG_PEEK) != 1) {
		http_free(c);
		return;
	}
	if (b != 0x16) {
		http_refuse(fd, 400, "this port speaks TLS: use https");
		c->fd = -1;
		http_free(c);
		return;
	}
	if ((ssl = SSL_new(tls_ctx)) == NULL)
		fatalx("%s: SSL_new", __func__);
	if ((c->bev = bufferevent_openssl_socket_new(http_base, fd, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE)) == NULL)
		fatalx("%s: bufferevent", __func__);
	http_start(c);
}

static void
http_start(struct http_conn *c)
{
	bufferevent_setcb(c->bev, http_readcb, http_writecb, http_eventcb, c);
	bufferevent_set_timeouts(c->bev, NULL, &hc.write);
	if (c->tls)
		bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	else {
		c->outcb = evbuffer_add_cb(bufferevent_get_output(c->bev),
		    http_outcb, c);
		if (c->outcb == NULL ||
		    evbuffer_add_cb(bufferevent_get_input(c->bev), http_incb,
		    c) == NULL)
			fatalx("%s: evbuffer_add_cb", __func__);
		/* A new bufferevent has EV_WRITE enabled. */
		bufferevent_disable(c->bev, EV_READ | EV_WRITE);
		event_set(&c->rev, c->fd, EV_READ | EV_PERSIST,
		    http_read_plain, c);
		c->rev_set = 1;
		c->rpaused = 1;
	}
	/* A head and its body; less while a request is served. */
	http_read_max(c, hc.body_max + HTTP_HEADERS_MAX + 4096);
	http_deadline(c, &hc.header);
}

/*
 * Out of descriptors: stop accepting for a moment instead of spinning on
 * accept(2); the connections already open keep being served.
 */
static void
http_accept_resume(int fd, short ev, void *arg)
{
	evconnlistener_enable(arg);
}

static void
http_accept_error(struct evconnlistener *lev, void *arg)
{
	static struct event	 ev;
	static int		 warned;
	struct timeval		 tv = { 0, 100 * 1000 };

	if (errno != EMFILE && errno != ENFILE) {
		log_warn("accept");
		return;
	}
	if (!warned++)
		log_warnx("out of descriptors at %d connections", nconns);
	evconnlistener_disable(lev);
	evtimer_set(&ev, http_accept_resume, lev);
	evtimer_add(&ev, &tv);
}

/* ------------------------------------------------------------------ */
/* Reading requests.                                                   */

static void
http_deadline(struct http_conn *c, const struct timeval *tv)
{
	evtimer_del(&c->timer);
	if (tv != NULL)
		evtimer_add(&c->timer, tv);
}

static void
http_timer(int fd, short ev, void *arg)
{
	struct http_conn	*c = arg;

	switch (c->state) {
	case HC_HEAD:
		if (!c->has_bytes) {
			http_free(c);	/* idle */
			return;
		}
		c->close = 1;
		http_error(c, 408, "the request head took too long");
		break;
	case HC_BODY:
		c->close = 1;
		http_error(c, 408, "the request body took too long");
		break;
	case HC_LINGER:
		http_free(c);
		break;
	default:
		break;
	}
}

static void
http_readcb(struct bufferevent *bev, void *arg)
{
	http_process(arg);
}

/* How much input a connection holds before it stops reading. */
static void
http_read_max(struct http_conn *c, size_t max)
{
	if (c->tls) {
		bufferevent_setwatermark(c->bev, EV_READ, 0, max);
		return;
	}
	c->rmax = max;
	http_incb(bufferevent_get_input(c->bev), NULL, c);
}

/* Input was consumed (or its bound moved): read again below the bound. */
static void
http_incb(struct evbuffer *in, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct http_conn	*c = arg;

	if (!c->rpaused || c->reof || evbuffer_get_length(in) >= c->rmax)
		return;
	c->rpaused = 0;
	event_add(&c->rev, NULL);
}

/* One read(2) into the input, then the requests it completes. */
static void
http_read_plain(int fd, short ev, void *arg)
{
	struct http_conn	*c = arg;
	struct evbuffer		*in = bufferevent_get_input(c->bev);
	struct evbuffer_iovec	 v[2];
	struct iovec		 iov[2];
	size_t			 len = evbuffer_get_length(in), want, left;
	ssize_t			 n;
	int			 nv, i, err;

	if (len >= c->rmax) {
		event_del(&c->rev);
		c->rpaused = 1;
		return;
	}
	want = c->rmax - len < HTTP_READ_MAX ? c->rmax - len : HTTP_READ_MAX;
	/* The bufferevent keeps its input's end frozen but to read. */
	evbuffer_unfreeze(in, 0);
	if ((nv = evbuffer_reserve_space(in, want, v, 2)) <= 0)
		fatalx("%s: evbuffer_reserve_space", __func__);
	for (i = 0, left = want; i < nv; i++) {
		iov[i].iov_base = v[i].iov_base;
		iov[i].iov_len = left < v[i].iov_len ? left : v[i].iov_len;
		left -= iov[i].iov_len;
	}
	n = readv(fd, iov, nv);
	err = errno;
	for (i = 0, left = n > 0 ? n : 0; i < nv && left > 0; i++) {
		v[i].iov_len = left < iov[i].iov_len ? left : iov[i].iov_len;
		left -= v[i].iov_len;
	}
	evbuffer_commit_space(in, v, i);
	evbuffer_freeze(in, 0);
	if (n == -1 && (err == EAGAIN || err == EINTR))
		return;
	if (n <= 0) {
		event_del(&c->rev);
		c->rpaused = c->reof = 1;
		http_eventcb(c->bev, BEV_EVENT_READING |
		    (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR), c);
		return;
	}
	http_process(c);
}

static void
http_process(struct http_conn *c)
{
	struct evbuffer	*in = bufferevent_get_input(c->bev);
	size_t		 len;

	for (;;) {
		len = evbuffer_get_length(in);
		switch (c->state) {
		case HC_HEAD:
			if (!http_read_head(c))
				return;
			break;
		case HC_BODY:
			if (len < c->need)
				return;
			http_dispatch(c);
			break;
		case HC_LINGER:
			c->lingered += len;
			evbuffer_drain(in, len);
			if (c->lingered > HTTP_LINGER_BYTES)
				http_free(c);
			return;
		default:
			return;		/* the next request waits its turn */
		}
	}
}

/*
 * Request ids from a pool refilled 64 at a time: arc4random_buf() checks
 * for a fork (a getpid(2)) on every call.
 */
static void
http_new_reqid(char *buf, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	static uint8_t		 pool[64 * 8];
	static size_t		 used = sizeof(pool);
	uint8_t			*r;
	size_t			 i;

	if (used == sizeof(pool)) {
		arc4random_buf(pool, sizeof(pool));
		used = 0;
	}
	r = pool + used;
	used += 8;
	for (i = 0; i < 8 && 2 * i + 2 < len; i++) {
		buf[2 * i] = hex[r[i] >> 4];
		buf[2 * i + 1] = hex[r[i] & 0xf];
	}
	buf[2 * i] = '\0';
}

/* Returns 1 when the connection moved on (a request or an answer). */
static int
http_read_head(struct http_conn *c)
{
	struct evbuffer	*in = bufferevent_get_input(c->bev);
	struct evbuffer	*out = bufferevent_get_output(c->bev);
	size_t		 len = evbuffer_get_length(in), n, end, skip;
	const char	*p;
	int		 r;

	if (len == 0)
		return (0);
	n = len < HTTP_HEADERS_MAX + 4 ? len : HTTP_HEADERS_MAX + 4;
	p = (const char *)evbuffer_pullup(in, n);
	end = http_head_end(p, n, &skip);
	if (skip > 0 && skip == len) {
		/* Blank lines between requests. */
		evbuffer_drain(in, skip);
		return (0);
	}
	if (!c->has_bytes) {
		c->has_bytes = 1;
		clock_gettime(CLOCK_MONOTONIC, &c->start);
		http_deadline(c, &hc.header);
	}
	if (end == 0 || end - skip > HTTP_HEADERS_MAX) {
		if (len <= HTTP_HEADERS_MAX && end == 0)
			return (0);
		http_new_reqid(c->reqid, sizeof(c->reqid));
		c->close = 1;
		if (memchr(p + skip, '\n', n - skip < HTTP_LINE_MAX + 2 ?
		    n - skip : HTTP_LINE_MAX + 2) == NULL)
			http_error(c, 414, "request line too long");
		else
			http_error(c, 431, "request head too large");
		return (1);
	}
	c->headlen = end - skip;
	if ((c->head = malloc(c->headlen + 1)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(c->head, p + skip, c->headlen);
	c->head[c->headlen] = '\0';
	explicit_bzero((void *)p, end);
	evbuffer_drain(in, end);

	r = http_parse_head(c->head, c->headlen, &c->h);
	http_new_reqid(c->reqid, sizeof(c->reqid));
	c->minor = c->h.minor;
	c->method = c->h.method;
	c->head_only = c->h.method == HTTP_M_HEAD;
	c->close = !c->h.keepalive;
	if (c->h.reqid.p != NULL &&
	    http_reqid_ok(c->h.reqid.p, c->h.reqid.len)) {
		memcpy(c->reqid, c->h.reqid.p, c->h.reqid.len);
		c->reqid[c->h.reqid.len] = '\0';
	}
	if (r != 0) {
		c->close = 1;
		http_error(c, r, c->h.detail);
		return (1);
	}
	if (c->h.has_clen && c->h.clen > hc.body_max) {
		/* Read while the answer leaves, so the client sees it. */
		c->close = 1;
		http_error(c, 413, "request body too large");
		return (1);
	}
	c->need = c->h.has_clen ? c->h.clen : 0;
	if (c->need == 0) {
		http_dispatch(c);
		return (1);
	}
	if (c->h.expect_continue && c->minor >= 1)
		evbuffer_add_printf(out, "HTTP/1.1 100 Continue\r\n\r\n");
	c->state = HC_BODY;
	http_deadline(c, &hc.body);
	return (1);
}

/* A complete request: to the frontend, which answers now or later. */
static void
http_dispatch(struct http_conn *c)
{
	struct evbuffer	*in = bufferevent_get_input(c->bev);
	const char	*body = NULL;

	c->state = HC_BUSY;
	c->dispatched = 1;
	http_deadline(c, NULL);
	/* What a client pipelines meanwhile waits, up to one head. */
	http_read_max(c, HTTP_HEADERS_MAX + 4096);
	if (c->need > 0)
		body = (const char *)evbuffer_pullup(in, c->need);
	http_request_cb(c, &c->h, body, c->need);
	/* The body and the head may hold secrets. */
	if (body != NULL)
		explicit_bzero((void *)body, c->need);
	evbuffer_drain(in, c->need);
	c->need = 0;
	freezero(c->head, c->headlen + 1);
	c->head = NULL;
	memset(&c->h, 0, sizeof(c->h));
}

/* ------------------------------------------------------------------ */
/* Answers.                                                            */

void
http_attach(struct http_conn *c, void *arg, http_drain_fn drain)
{
	c->arg = arg;
	c->drain = drain;
}

void
http_set_log(struct http_conn *c, const char *route, int64_t org,
    int64_t user)
{
	if (route != NULL)
		c->route = route;
	c->org_id = org;
	c->user_id = user;
}

void
http_allow(struct http_conn *c, int mask)
{
	c->allow = mask;
}

const char *
http_peer(struct http_conn *c)
{
	return (c->peer);
}

int
http_is_metrics(struct http_conn *c)
{
	return (c->metrics);
}

int
http_is_head(struct http_conn *c)
{
	return (c->head_only);
}

size_t
http_pending(struct http_conn *c)
{
	return (evbuffer_get_length(bufferevent_get_output(c->bev)));
}

/* Append to a head being built; tregd's own strings, well within size. */
static void
head_add(char *h, size_t *n, size_t size, const char *fmt, ...)
{
	va_list	 ap;
	int	 r;

	va_start(ap, fmt);
	r = vsnprintf(h + *n, size - *n, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= size - *n)
		fatalx("%s: head too long", __func__);
	*n += r;
}

/* The status line and headers, in one write to the connection. */
static void
http_head_out(struct http_conn *c, int status, const char *type,
    int64_t clen)
{
	char	 h[1024], allow[128];
	size_t	 n = 0;

	c->status = status;
	if (clen < 0 && c->method != HTTP_M_HEAD && !c->chunked)
		c->close = 1;		/* HTTP/1.0: the end is the close */
	if (c->relayed)
		head_add(h, &n, sizeof(h), "HTTP/1.1 %d %s\r\n"
		    "X-Request-Id: %s\r\nX-Content-Type-Options: nosniff\r\n",
		    status, http_reason(status), c->reqid);
	else
		head_add(h, &n, sizeof(h), "HTTP/1.1 %d %s\r\n"
		    "Content-Type: %s\r\nX-Request-Id: %s\r\n"
		    "X-Content-Type-Options: nosniff\r\n"
		    "X-Frame-Options: DENY\r\nCache-Control: no-store\r\n"
		    "Server: tregd\r\n", status, http_reason(status), type,
		    c->reqid);
	if (clen >= 0)
		head_add(h, &n, sizeof(h), "Content-Length: %lld\r\n",
		    (long long)clen);
	else if (c->chunked)
		head_add(h, &n, sizeof(h), "Transfer-Encoding: chunked\r\n");
	if (c->tls)
		head_add(h, &n, sizeof(h), "Strict-Transport-Security: "
		    HTTP_HSTS "\r\n");
	if (status == 405 && http_methods_print(c->allow, allow,
	    sizeof(allow)) > 0)
		head_add(h, &n, sizeof(h), "Allow: %s\r\n", allow);
	if (status == 429 || status == 503)
		head_add(h, &n, sizeof(h), "Retry-After: 1\r\n");
	if (c->close)
		head_add(h, &n, sizeof(h), "Connection: close\r\n");
	else if (c->minor == 0)
		head_add(h, &n, sizeof(h), "Connection: keep-alive\r\n");
	if (c->extra != NULL) {
		evbuffer_add(bufferevent_get_output(c->bev), h, n);
		evbuffer_add(bufferevent_get_output(c->bev), c->extra,
		    c->extralen);
		n = 0;
	}
	head_add(h, &n, sizeof(h), "\r\n");
	evbuffer_add(bufferevent_get_output(c->bev), h, n);
}

/*
 * Header lines ("Name: value" and CRLF each) for the next answer's head:
 * X-Treg-Error on a /call refusal, the upstream's on a relayed answer.
 */
void
http_add_header(struct http_conn *c, const char *lines, size_t len)
{
	char	*p;

	if ((p = realloc(c->extra, c->extralen + len)) == NULL)
		fatal("%s: realloc", __func__);
	memcpy(p + c->extralen, lines, len);
	c->extra = p;
	c->extralen += len;
}

/* The raw request head (request line and headers) while it is served. */
const char *
http_head_raw(struct http_conn *c, size_t *len)
{
	*len = c->head != NULL ? c->headlen : 0;
	return (c->head);
}

/*
 * A relayed answer: the upstream's status and headers (added before),
 * then the body in chunks; tregd's own headers are the few that say
 * where it came from.
 */
void
http_reply_relayed(struct http_conn *c, int status)
{
	c->relayed = 1;
	/* No body, so no chunks: the end is the close. */
	if (status == 204 || status == 304)
		c->close = 1;
	http_reply_start(c, status, NULL, -1);
}

/* The end of a chunked answer with a trailer line (with its CRLF). */
void
http_reply_end_trailer(struct http_conn *c, const char *trailer)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);

	if (c->chunked && !c->head_only) {
		evbuffer_add(out, "0\r\n", 3);
		evbuffer_add(out, trailer, strlen(trailer));
		evbuffer_add(out, "\r\n", 2);
		c->chunked = 0;
	}
	http_reply_end(c);
}

/* The answer cannot be completed: drop the connection, the client sees it. */
void
http_abort(struct http_conn *c)
{
	c->arg = NULL;
	http_free(c);
}

/* The whole answer at once. */
void
http_reply(struct http_conn *c, int status, const char *type,
    const char *body, size_t len)
{
	c->chunked = 0;
	http_head_out(c, status, type, len);
	if (!c->head_only && len > 0)
		evbuffer_add(bufferevent_get_output(c->bev), body, len);
	c->sent = c->head_only ? 0 : len;
	c->arg = NULL;
	c->state = HC_DONE;
	http_deadline(c, NULL);
}

void
http_error(struct http_conn *c, int status, const char *detail)
{
	char	 buf[512];
	size_t	 used, n;

	/* detail is tregd's own text; escaped all the same. */
	memcpy(buf, "{\"detail\":\"", 11);
	n = json_escape((const unsigned char *)detail, strlen(detail), &used,
	    buf + 11, sizeof(buf) - 14);
	memcpy(buf + 11 + n, "\"}", 2);
	http_reply(c, status, "application/json", buf, 11 + n + 2);
}

/* An answer in pieces: clen bytes, or chunked when clen is -1. */
void
http_reply_start(struct http_conn *c, int status, const char *type,
    int64_t clen)
{
	c->chunked = clen < 0 && !c->close && c->minor >= 1;
	http_head_out(c, status, type, clen);
}

void
http_write(struct http_conn *c, const void *data, size_t len)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);

	if (c->head_only || len == 0)
		return;
	if (c->chunked)
		evbuffer_add_printf(out, "%zx\r\n", len);
	evbuffer_add(out, data, len);
	if (c->chunked)
		evbuffer_add(out, "\r\n", 2);
	c->sent += len;
}

void
http_reply_end(struct http_conn *c)
{
	if (c->chunked && !c->head_only)
		evbuffer_add(bufferevent_get_output(c->bev), "0\r\n\r\n", 5);
	c->arg = NULL;
	c->state = HC_DONE;
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		http_finish(c);
}

/* Bytes were queued on a plain connection: written at the turn's end. */
static void
http_outcb(struct evbuffer *out, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct http_conn	*c = arg;

	if (info->n_added == 0 || c->wqueued)
		return;
	c->wqueued = 1;
	TAILQ_INSERT_TAIL(&wconns, c, wentry);
	if (!event_pending(&wturn, EV_WRITE, NULL))
		event_active(&wturn, EV_WRITE, 1);
}

/* Run once the loop turn's other callbacks ran. */
static void
http_write_turn(int fd, short ev, void *arg)
{
	struct http_conn	*c;

	while ((c = TAILQ_FIRST(&wconns)) != NULL) {
		TAILQ_REMOVE(&wconns, c, wentry);
		c->wqueued = 0;
		http_flush(c);
	}
}

/*
 * One writev of what is queued; EV_WRITE (and its timeout) only for what
 * the socket did not take.
 */
static void
http_flush(struct http_conn *c)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);
	int		 n;

	if ((bufferevent_get_enabled(c->bev) & EV_WRITE) ||
	    evbuffer_get_length(out) == 0)
		return;
	/* The bufferevent keeps its output's start frozen but to write. */
	evbuffer_unfreeze(out, 1);
	while ((n = evbuffer_write(out, c->fd)) == -1 && errno == EINTR)
		;
	evbuffer_freeze(out, 1);
	if (n == -1 && errno != EAGAIN) {
		http_eventcb(c->bev, BEV_EVENT_WRITING | BEV_EVENT_ERROR, c);
		return;
	}
	if (evbuffer_get_length(out) > 0) {
		bufferevent_enable(c->bev, EV_WRITE);
		return;
	}
	http_writecb(c->bev, c);
}

static void
http_writecb(struct bufferevent *bev, void *arg)
{
	struct http_conn	*c = arg;

	/* Drained: a plain connection writes from the loop turn again. */
	if (!c->tls)
		bufferevent_disable(bev, EV_WRITE);
	if (c->state == HC_DONE)
		http_finish(c);
	else if (c->state == HC_BUSY && c->arg != NULL && c->drain != NULL)
		c->drain(c, c->arg);
}

/* The answer left: log it, then the next request or the close. */
static void
http_finish(struct http_conn *c)
{
	http_log(c, "");
	if (c->close) {
		if (c->tls) {
			http_free(c);
			return;
		}
		/* Let a client still sending its body read the answer. */
		shutdown(c->fd, SHUT_WR);
		c->state = HC_LINGER;
		c->lingered = 0;
		http_deadline(c, &(struct timeval){ 0, HTTP_LINGER_MS * 1000 });
		http_process(c);
		return;
	}
	c->state = HC_HEAD;
	http_read_max(c, hc.body_max + HTTP_HEADERS_MAX + 4096);
	c->has_bytes = 0;
	c->dispatched = 0;
	c->status = 0;
	c->sent = 0;
	c->counted = 0;
	c->route = NULL;
	c->org_id = c->user_id = 0;
	c->allow = 0;
	c->chunked = 0;
	c->head_only = 0;
	c->relayed = 0;
	free(c->extra);
	c->extra = NULL;
	c->extralen = 0;
	http_deadline(c, &hc.idle);
	http_process(c);
}

/* One line per request: never a token, a body or a query string. */
static void
http_log(struct http_conn *c, const char *note)
{
	static const struct { int bit; const char *name; } mn[] = {
		{ HTTP_M_GET, "GET" }, { HTTP_M_POST, "POST" },
		{ HTTP_M_HEAD, "HEAD" }, { HTTP_M_PUT, "PUT" },
		{ HTTP_M_DELETE, "DELETE" }, { HTTP_M_OPTIONS, "OPTIONS" },
		{ HTTP_M_PATCH, "PATCH" },
	};
	struct timespec	 now;
	const char	*m = "-";
	long long	 ms;
	size_t		 i;

	if (c->status != 0 && !c->counted && !c->metrics) {
		c->counted = 1;
		metrics_http(c->route, c->status, &c->start);
	}
	if (!hc.log || c->status == 0)
		return;
	for (i = 0; i < sizeof(mn) / sizeof(mn[0]); i++)
		if (mn[i].bit == c->method)
			m = mn[i].name;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (now.tv_sec - c->start.tv_sec) * 1000LL +
	    (now.tv_nsec - c->start.tv_nsec) / 1000000;
	log_info("request %s %s %d %zu %lldms org %lld user %lld id %s "
	    "from %s%s", m, c->route ? c->route : "-", c->status, c->sent, ms,
	    (long long)c->org_id, (long long)c->user_id, c->reqid, c->peer,
	    note);
	c->status = 0;
}

static void
http_eventcb(struct bufferevent *bev, short what, void *arg)
{
	struct http_conn	*c = arg;

	if (what & BEV_EVENT_CONNECTED)
		return;
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		/* Half closed: an answer in progress may still leave. */
		if (c->state == HC_DONE) {
			c->close = 1;
			return;
		}
		if (c->state == HC_BUSY && c->arg != NULL) {
			if (!http_gone_cb(c->arg, 1)) {
				c->close = 1;
				return;
			}
			c->arg = NULL;
		}
	}
	if ((what & BEV_EVENT_TIMEOUT) && c->state != HC_LINGER)
		log_debug("%s: not reading its answer: dropped", c->peer);
	http_free(c);
}

static void
http_free(struct http_conn *c)
{
	if (c->arg != NULL) {
		http_gone_cb(c->arg, 0);
		c->arg = NULL;
	}
	if (c->dispatched) {
		if (c->status == 0)
			c->status = 499;	/* nothing was answered */
		http_log(c, " (client gone)");
	}
	evtimer_del(&c->timer);
	if (c->rev_set)
		event_del(&c->rev);
	c->reof = 1;		/* the input's callback reads no more */
	if (c->wqueued)
		TAILQ_REMOVE(&wconns, c, wentry);
	if (c->outcb != NULL)
		evbuffer_remove_cb_entry(bufferevent_get_output(c->bev),
		    c->outcb);
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	else if (c->fd != -1)
		close(c->fd);
	if (c->head != NULL)
		freezero(c->head, c->headlen + 1);
	free(c->extra);
	addr_put(c->addr);
	nconns--;
	TAILQ_REMOVE(&conns, c, entry);
	free(c);
}
