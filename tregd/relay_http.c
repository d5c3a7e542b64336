/*
 * relay_http.c: the relay's HTTP client, libcurl's multi interface driven
 * by the relay's libevent loop (README: why libcurl).  One easy handle
 * per call; connections stay in the multi handle's pool and are reused
 * (keep-alive).  Every transfer: HTTP and HTTPS only, TLS verified
 * against the CA bundle read at start, redirects never followed, no
 * proxy (the environment is ignored), HTTP/1.1, `relay timeout connect'
 * and `relay timeout total', the resolved and checked addresses pinned
 * (CURLOPT_RESOLVE) and checked once more at the socket (the exact
 * address curl connects to, CURLOPT_OPENSOCKETFUNCTION).
 */

#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "redact.h"
#include "relay.h"

struct rsock {
	struct event	 ev;
	int		 added;
};

/*
 * Easy handles of ended calls, reset (every option back to its default:
 * nothing of a call's request stays set) and kept for the next ones:
 * a new handle and its buffers per call cost more than the rest of
 * curl's work for a small answer.
 */
#define RH_SPARE_MAX	64

static CURLM		*multi;
static CURL		*spare[RH_SPARE_MAX];
static int		 nspare;
static struct event	 multi_timer;
static X509_STORE	*ca_store;	/* parsed once, shared by every TLS */

static int	 rh_socket(CURL *, curl_socket_t, int, void *, void *);
static int	 rh_timer(CURLM *, long, void *);
static void	 rh_event(int, short, void *);
static void	 rh_ca_parse(const char *, size_t);
static void	 rh_timeout(int, short, void *);
static void	 rh_check(void);
static curl_socket_t rh_open(void *, curlsocktype, struct curl_sockaddr *);
static size_t	 rh_header(char *, size_t, size_t, void *);
static size_t	 rh_write(char *, size_t, size_t, void *);
static void	 rh_out(void *, const void *, size_t);
static void	 rh_head_done(struct rcall *);
static int	 rh_head_kept(const char *, size_t);
static void	 rh_done(struct rcall *, CURLcode);
static int	 rh_setup(struct rcall *);
static void	 rh_slist_free(struct curl_slist *);
static CURLcode	 rh_ssl_ctx(CURL *, void *, void *);

void
rhttp_init(const char *ca, size_t calen)
{
	if ((multi = curl_multi_init()) == NULL)
		fatalx("%s: curl_multi_init", __func__);
	curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, rh_socket);
	curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, rh_timer);
	curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, 256L);
	evtimer_set(&multi_timer, rh_timeout, NULL);
	rh_ca_parse(ca, calen);
}

/*
 * The CA bundle as an X509_STORE, once: curl would otherwise parse (and,
 * given as a blob, copy) the whole bundle for every new connection.
 */
static void
rh_ca_parse(const char *ca, size_t calen)
{
	X509	*x;
	BIO	*bio;
	int	 n = 0;

	if ((ca_store = X509_STORE_new()) == NULL)
		fatalx("%s: X509_STORE_new", __func__);
	if (ca == NULL || calen == 0)
		return;
	if ((bio = BIO_new_mem_buf(ca, calen)) == NULL)
		fatalx("%s: BIO_new_mem_buf", __func__);
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		if (X509_STORE_add_cert(ca_store, x) == 1)
			n++;
		X509_free(x);
	}
	BIO_free(bio);
	log_debug("relay: %d CA certificates", n);
}

/* Every TLS context of the relay trusts the store, and only it. */
static CURLcode
rh_ssl_ctx(CURL *e, void *sslctx, void *arg)
{
	if (X509_STORE_up_ref(ca_store) != 1)
		return (CURLE_SSL_CACERT_BADFILE);
	SSL_CTX_set_cert_store(sslctx, ca_store);
	return (CURLE_OK);
}

/* ------------------------------------------------------------------ */
/* The multi handle on libevent.                                       */

static int
rh_socket(CURL *e, curl_socket_t s, int what, void *arg, void *sockp)
{
	struct rsock	*rs = sockp;
	short		 kind;

	if (what == CURL_POLL_REMOVE) {
		if (rs != NULL) {
			if (rs->added)
				event_del(&rs->ev);
			free(rs);
		}
		curl_multi_assign(multi, s, NULL);
		return (0);
	}
	if (rs == NULL) {
		if ((rs = calloc(1, sizeof(*rs))) == NULL)
			fatal("%s: calloc", __func__);
		curl_multi_assign(multi, s, rs);
	} else if (rs->added)
		event_del(&rs->ev);
	kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) |
	    ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
	event_set(&rs->ev, s, kind, rh_event, NULL);
	event_add(&rs->ev, NULL);
	rs->added = 1;
	return (0);
}

static int
rh_timer(CURLM *m, long ms, void *arg)
{
	struct timeval	 tv;

	if (ms < 0) {
		evtimer_del(&multi_timer);
		return (0);
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(&multi_timer, &tv);
	return (0);
}

static void
rh_event(int fd, short kind, void *arg)
{
	int	 running, action = 0;

	if (kind & EV_READ)
		action |= CURL_CSELECT_IN;
	if (kind & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	relay_cork(1);
	curl_multi_socket_action(multi, fd, action, &running);
	rh_check();
	relay_cork(0);
}

static void
rh_timeout(int fd, short kind, void *arg)
{
	int	 running;

	relay_cork(1);
	curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
	rh_check();
	relay_cork(0);
}

static void
rh_check(void)
{
	struct rcall	*rc;
	CURLMsg		*msg;
	int		 left;

	while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &rc);
		rh_done(rc, msg->data.result);
	}
}

/* ------------------------------------------------------------------ */
/* A transfer.                                                         */

int
rhttp_start(struct rcall *rc)
{
	if (rh_setup(rc) == -1)
		return (-1);
	if (curl_multi_add_handle(multi, rc->easy) != CURLM_OK)
		return (-1);
	return (0);
}

/* Header lines (the bound ones carry a secret): zeroed, then freed. */
static void
rh_slist_free(struct curl_slist *l)
{
	struct curl_slist	*n;

	for (n = l; n != NULL; n = n->next)
		explicit_bzero(n->data, strlen(n->data));
	curl_slist_free_all(l);
}

/* The call ends here (cancelled): the handle goes, the pool stays. */
void
rhttp_stop(struct rcall *rc)
{
	if (rc->easy == NULL)
		return;
	curl_multi_remove_handle(multi, rc->easy);
	if (nspare < RH_SPARE_MAX) {
		curl_easy_reset(rc->easy);
		spare[nspare++] = rc->easy;
	} else
		curl_easy_cleanup(rc->easy);
	rh_slist_free(rc->hlist);
	curl_slist_free_all(rc->rlist);
	rc->easy = NULL;
	rc->hlist = rc->rlist = NULL;
}

void
rhttp_pause(struct rcall *rc, int pause)
{
	rc->paused = pause;
	curl_easy_pause(rc->easy, pause ? CURLPAUSE_RECV : CURLPAUSE_CONT);
	if (!pause)
		rh_check();
}

static void
rh_headers(struct rcall *rc, int has_body)
{
	const char	*h, *colon;
	char		*line;
	size_t		 i, n;
	int		 ctype = 0, accept = 0;

	for (i = 0; i < rc->nheaders; i++) {
		h = rc->headers[i];
		if ((colon = strchr(h, ':')) == NULL)
			continue;
		n = colon - h;
		if (n == 12 && strncasecmp(h, "Content-Type", n) == 0)
			ctype = 1;
		if (n == 6 && strncasecmp(h, "Accept", n) == 0)
			accept = 1;
		/* A compressed answer could not be masked: identity only. */
		if (n == 15 && strncasecmp(h, "Accept-Encoding", n) == 0)
			continue;
		/* "Name:" alone makes curl drop it; "Name;" sends it empty. */
		if (colon[strspn(colon + 1, " \t") + 1] == '\0') {
			if ((line = strndup(h, n + 1)) == NULL)
				fatal("%s: strndup", __func__);
			line[n] = ';';
			rc->hlist = curl_slist_append(rc->hlist, line);
			free(line);
		} else
			rc->hlist = curl_slist_append(rc->hlist, h);
	}
	/* Nothing curl would add on its own. */
	rc->hlist = curl_slist_append(rc->hlist, "Expect:");
	rc->hlist = curl_slist_append(rc->hlist, "Accept-Encoding: identity");
	if (!accept)
		rc->hlist = curl_slist_append(rc->hlist, "Accept:");
	if (!ctype && has_body)
		rc->hlist = curl_slist_append(rc->hlist, "Content-Type:");
}

static int
rh_setup(struct rcall *rc)
{
	CURL	*e;
	int	 body;

	if (nspare > 0)
		e = spare[--nspare];
	else if ((e = curl_easy_init()) == NULL)
		return (-1);
	rc->easy = e;
	curl_easy_setopt(e, CURLOPT_PRIVATE, rc);
	curl_easy_setopt(e, CURLOPT_CURLU, rc->curlu);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");	/* no getenv either */
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_CONTENT_DECODING, 0L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT,
	    (long)relay_conf.relay_timeout_connect);
	curl_easy_setopt(e, CURLOPT_TIMEOUT,
	    (long)relay_conf.relay_timeout_total);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(e, CURLOPT_CAINFO, NULL);
	curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, rh_ssl_ctx);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, rh_open);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, rc);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, rh_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, rc);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rh_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, rc);
	/* An address is not resolved by curl: nothing to pin. */
	if (rc->resolve[0] != '\0' && !rc->literal) {
		rc->rlist = curl_slist_append(NULL, rc->resolve);
		curl_easy_setopt(e, CURLOPT_RESOLVE, rc->rlist);
	}
	body = rc->bodylen > 0 || strcmp(rc->method, "POST") == 0 ||
	    strcmp(rc->method, "PUT") == 0 || strcmp(rc->method, "PATCH") == 0;
	rh_headers(rc, body);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, rc->hlist);
	if (strcmp(rc->method, "HEAD") == 0)
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	else if (strcmp(rc->method, "GET") == 0 && !body)
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	else {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rc->method);
		if (body) {
			curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			    (curl_off_t)rc->bodylen);
			curl_easy_setopt(e, CURLOPT_POSTFIELDS, rc->body);
		}
	}
	return (0);
}

/* The exact address curl is about to connect to, checked once more. */
static curl_socket_t
rh_open(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct rcall	*rc = arg;

	if (purpose != CURLSOCKTYPE_IPCXN || !relay_addr_ok(rc, &a->addr)) {
		rc->refused = CALL_SSRF;
		return (CURL_SOCKET_BAD);
	}
	return (socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol));
}

/* Upstream header lines tregd does not pass on. */
static int
rh_head_kept(const char *line, size_t len)
{
	static const char *const drop[] = {
		"Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Connection", "TE", "Trailer", "Transfer-Encoding",
		"Upgrade", "Content-Length", "X-Content-Type-Options",
		"Content-Security-Policy", "X-Request-Id", NULL
	};
	const char	*colon;
	size_t		 i, n;

	if ((colon = memchr(line, ':', len)) == NULL)
		return (0);
	n = colon - line;
	if (n >= 7 && strncasecmp(line, "X-Treg-", 7) == 0)
		return (0);
	for (i = 0; drop[i] != NULL; i++)
		if (strlen(drop[i]) == n && strncasecmp(line, drop[i], n) == 0)
			return (0);
	return (1);
}

static void
rh_line_out(void *arg, const void *p, size_t len)
{
	struct evbuffer	*b = arg;

	evbuffer_add(b, p, len);
}

/*
 * The head is complete: filtered, redacted, sent; 1xx heads are skipped.
 * One stream (a redactor's window is 64 KiB) over the kept lines with a
 * NUL between them, which no pattern holds: a mask never joins two lines.
 */
static void
rh_head_done(struct rcall *rc)
{
	struct evbuffer	*raw, *out;
	struct redact	*rd;
	const char	*p, *e, *end = rc->head + rc->headlen, *r, *z;
	size_t		 n;
	long		 code = 0;

	curl_easy_getinfo(rc->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 100 && code < 200) {
		rc->headlen = 0;
		return;
	}
	if ((raw = evbuffer_new()) == NULL || (out = evbuffer_new()) == NULL)
		fatal("%s: evbuffer_new", __func__);
	if ((rd = redact_new(rc->set, SIZE_MAX)) == NULL)
		fatal("%s: redact_new", __func__);
	/* The first line is the status line. */
	if ((p = memchr(rc->head, '\n', rc->headlen)) != NULL)
		p++;
	for (; p != NULL && p < end; p = e + 1) {
		if ((e = memchr(p, '\n', end - p)) == NULL)
			break;
		if (!rh_head_kept(p, e - p))
			continue;
		if (redact_write(rd, p, e - p - (e > p && e[-1] == '\r'),
		    rh_line_out, raw) == -1 ||
		    redact_write(rd, "", 1, rh_line_out, raw) == -1)
			fatal("%s: redact_write", __func__);
	}
	if (redact_finish(rd, rh_line_out, raw) == -1)
		fatal("%s: redact_finish", __func__);
	rc->redacted += redact_count(rd);
	redact_free(rd);
	n = evbuffer_get_length(raw);
	r = (const char *)evbuffer_pullup(raw, -1);
	for (p = r; p != NULL && p < r + n; p = z + 1) {
		if ((z = memchr(p, '\0', r + n - p)) == NULL)
			break;
		evbuffer_add(out, p, z - p);
		evbuffer_add(out, "\r\n", 2);
	}
	relay_send_head(rc, code, 0, (const char *)evbuffer_pullup(out, -1),
	    evbuffer_get_length(out));
	evbuffer_free(raw);
	evbuffer_free(out);
}

static size_t
rh_header(char *buf, size_t size, size_t n, void *arg)
{
	struct rcall	*rc = arg;
	size_t		 len = size * n;
	char		*p;

	if (rc->head_sent)
		return (len);		/* trailers: not relayed */
	if (rc->headlen + len > RELAY_HEAD_MAX) {
		rc->head_over = 1;
		return (0);
	}
	if ((p = realloc(rc->head, rc->headlen + len)) == NULL)
		fatal("%s: realloc", __func__);
	memcpy(p + rc->headlen, buf, len);
	rc->head = p;
	rc->headlen += len;
	if (len <= 2 && (buf[0] == '\r' || buf[0] == '\n'))
		rh_head_done(rc);
	return (len);
}

static void
rh_out(void *arg, const void *p, size_t len)
{
	relay_send_body(arg, p, len);
}

static size_t
rh_write(char *buf, size_t size, size_t n, void *arg)
{
	struct rcall	*rc = arg;

	if (rc->paused)
		return (CURL_WRITEFUNC_PAUSE);
	if (!rc->head_sent)
		return (0);
	if (redact_write(rc->rd, buf, size * n, rh_out, rc) == -1)
		fatal("%s: redact_write", __func__);
	return (size * n);
}

static void
rh_done(struct rcall *rc, CURLcode res)
{
	long	 code = 0;

	if (!rc->head_sent) {
		curl_easy_getinfo(rc->easy, CURLINFO_RESPONSE_CODE, &code);
		rhttp_stop(rc);
		if (rc->refused == CALL_SSRF)
			relay_refuse(rc, 403, CALL_SSRF, "the upstream's "
			    "address is not public: tregd does not call "
			    "private networks");
		else if (res == CURLE_OPERATION_TIMEDOUT)
			relay_refuse(rc, 504, CALL_UPSTREAM, "the upstream did "
			    "not answer in time");
		else if (rc->head_over)
			relay_refuse(rc, 502, CALL_UPSTREAM, "the upstream's "
			    "headers are too large");
		else
			relay_refuse(rc, 502, CALL_UPSTREAM, res == CURLE_OK ?
			    "the upstream sent no answer" :
			    curl_easy_strerror(res));
		return;
	}
	if (redact_finish(rc->rd, rh_out, rc) == -1)
		fatal("%s: redact_finish", __func__);
	rhttp_stop(rc);
	relay_finish(rc, res != CURLE_OK);
}
