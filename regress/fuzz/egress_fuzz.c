/*
 * libFuzzer target: what a run's CLI sends the egress proxy (tregd/
 * relay/egress_proxy.c, egress_req.c), through the proxy's own code on a
 * real connection (a socketpair) and libevent: request heads (CONNECT,
 * absolute-form, a transparent listener's Host), method overrides, the
 * host list, SigV4 checks, the record's masked path, the substitution
 * and the upstream head, the streamed body's framing, the answer
 * written back, pipelined requests.  The relay around it is stubbed:
 * the vault says yes (or no) at once, the "upstream" takes the head and
 * body into a buffer and answers a fixed 200.
 *
 * The same bytes go to the ClientHello reader of passthrough
 * (tls_hello.c), alone: a name it finds is a DNS name in lower case, no
 * longer than the input, and a longer prefix never turns a refusal into
 * a name.
 *
 * Input: byte 0 picks the listener (bit 0: transparent) and the
 * verdicts (bit 1: refused); the rest is what the run sends.
 * Invariants: no placeholder survives in the upstream head's target or
 * header values when the CLI put one there raw (they are swapped); no
 * real value ever comes back to the run; the run never gets more than
 * one answer per request head.
 */

#include <sys/types.h>
#include <sys/socket.h>

#include <ctype.h>
#include <event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "egress_int.h"
#include "pack.h"
#include "redact_cache.h"
#include "relay.h"
#include "tls_hello.h"

#define PH	"sk_live_PHkey0123456789abcdefgh"
#define REAL	"sk_live_REALKEY0123456789abcdef"
#define PH_ID	"AKIAPHKEYIDPH0000000"
#define PH_SEC	"phSecretKey22222222222222222222222222222"

struct event_base	*proc_base;
struct tregd_conf	 relay_conf;
int			 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct evbuffer	*upout;		/* what the upstream got */
static struct rcall	*pending;	/* relay_call()'s */
static int		 refuse_all;
static int		 fake_rset;	/* rcache stand-in, held */

/* The relay around the proxy. */
void relay_cork(int on) { }
struct evbuffer *rhttp_output(struct rcall *rc) { return (upout); }
void rhttp_drop_run(uint32_t runid) { }
void relay_vault_done(int w, const struct call_done *cd) { }
void relay_finish(struct rcall *rc, int failed) { }
int rhttp_socket(struct rcall *rc, struct event *ev,
    void (*cb)(int, short, void *), void *arg) { return (-1); }
int rhttp_connect_error(int fd) { return (0); }
int rcache_get(int64_t o, const void *p, size_t n, rcache_fn fn, void *arg,
    struct rcache **out) { *out = (struct rcache *)&fake_rset; return (0); }
void rcache_forget(void *arg) { }
void rcache_put(struct rcache *e) { }
struct rcache *rcache_hold(struct rcache *e) { return (e); }
const struct redact_set *rcache_set(const struct rcache *e) { return (NULL); }

static uint32_t	 calls_reqid;
static int	 calls_seen;

void
relay_vault_send(int worker, uint32_t type, uint32_t id, const void *head,
    size_t headlen, const void *data, size_t len)
{
	struct egress_call	 c;

	if (type != IMSG_EGRESS_CALL || headlen != sizeof(c))
		abort();
	memcpy(&c, head, sizeof(c));
	if (c.refused)
		return;
	calls_reqid = c.reqid;
	calls_seen = 1;
}

void
relay_call(struct rcall *rc)
{
	pending = rc;
}

void
relay_cancel(struct rcall *rc)
{
	rc->sink->end(rc, 1);
	free(rc->method);
	free(rc->url);
	free(rc);
	if (pending == rc)
		pending = NULL;
}

static void
verdict(uint32_t reqid)
{
	struct egress_verdict	 v;
	struct pack		 pk;

	memset(&v, 0, sizeof(v));
	v.runid = 1;
	v.reqid = reqid;
	v.ok = !refuse_all;
	v.status = 403;
	v.callid = 7;
	pack_init(&pk);
	pack_str(&pk, "denied\nby a rule");
	egress_verdict_recv(0, &v, pk.buf, pk.len);
	pack_free(&pk);
}

/* The upstream: it took the head (and what body came); a fixed 200. */
static void
upstream(void)
{
	struct rcall	*rc = pending;
	const char	*p, *sp, *e;
	size_t		 n;

	pending = NULL;
	rc->sink->request(rc, upout);
	/* The request line's target: no raw placeholder is left in it. */
	n = evbuffer_get_length(upout);
	p = (const char *)evbuffer_pullup(upout, n);
	if (p != NULL && (sp = memchr(p, ' ', n)) != NULL &&
	    (e = memmem(sp, n - (sp - p), " HTTP/1.1\r\n", 11)) != NULL &&
	    memmem(sp, e - sp, PH, sizeof(PH) - 1) != NULL)
		abort();
	rc->mode = RB_LENGTH;
	rc->sink->head(rc, 200, "X-A: b\r\n", 8);
	rc->sink->body(rc, "masked", 6);
	rc->sink->end(rc, 0);
	free(rc->method);
	free(rc->url);
	free(rc);
	evbuffer_drain(upout, -1);
}

/* The ClientHello reader alone, on the same bytes. */
static void
hello(const uint8_t *data, size_t size)
{
	char		 name[TLS_NAME_MAX + 1];
	size_t		 i, n;
	enum tls_peek	 r, whole;

	whole = tls_hello_sni(data, size, name, sizeof(name));
	if (whole == TLS_PEEK_NAME) {
		n = strlen(name);
		if (n == 0 || n > TLS_NAME_MAX || n > size)
			abort();
		for (i = 0; i < n; i++)
			if (!(islower((unsigned char)name[i]) ||
			    isdigit((unsigned char)name[i]) ||
			    strchr("-._", name[i]) != NULL))
				abort();
	}
	/* What a shorter read says is "more", or what the whole says. */
	r = tls_hello_sni(data, size / 2, name, sizeof(name));
	if (r != TLS_PEEK_MORE && r != whole)
		abort();
}

static void
grant(void)
{
	struct egress_grant	 g;
	struct pack		 pk;

	memset(&g, 0, sizeof(g));
	g.runid = 1;
	g.timeout_s = 300;
	pack_init(&pk);
	pack_u32(&pk, 4);
	pack_str(&pk, "api.example.com:443");
	pack_str(&pk, "*.example.org:443");
	pack_str(&pk, "http://plain.example.com:80");
	pack_str(&pk, "[::1]:8443");
	pack_u32(&pk, 3);
	pack_bytes(&pk, PH, sizeof(PH) - 1);
	pack_bytes(&pk, REAL, sizeof(REAL) - 1);
	pack_str(&pk, "");
	pack_str(&pk, "API_KEY");
	pack_bytes(&pk, PH_ID, sizeof(PH_ID) - 1);
	pack_bytes(&pk, "AKIAREALKEYID0000000", 20);
	pack_str(&pk, "aws-sigv4");
	pack_str(&pk, "AWS_ACCESS_KEY_ID");
	pack_bytes(&pk, PH_SEC, sizeof(PH_SEC) - 1);
	pack_bytes(&pk, "realSecret", 10);
	pack_str(&pk, "aws-sigv4");
	pack_str(&pk, "AWS_SECRET_ACCESS_KEY");
	pack_u32(&pk, 1);
	pack_bytes(&pk, REAL, sizeof(REAL) - 1);
	pack_str(&pk, "fuzztool");
	egress_grant_recv(0, &g, pk.buf, pk.len);
	pack_free(&pk);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int		 init;
	struct egress_run	*run;
	char			 buf[65536];
	ssize_t			 n;
	size_t			 off;
	int			 sv[2], i;

	if (!init) {
		proc_base = event_init();
		upout = evbuffer_new();
		if (egress_ca_init() == -1)
			abort();
		init = 1;
	}
	if (size < 1 || size > 32768)
		return (0);
	hello(data + 1, size - 1);
	refuse_all = (data[0] & 2) != 0;
	grant();
	run = egress_run_get(1, 0);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		abort();
	run->nconns++;
	egress_conn_start(run, sv[0], (data[0] & 1) ? 80 : EGRESS_PROXY_PORT,
	    (data[0] & 1) ? EGRESS_TRANSPARENT : EGRESS_PROXY);
	for (off = 1; off < size; off += n) {
		n = write(sv[1], data + off, size - off);	/* < 64 KiB */
		if (n <= 0)
			break;
	}
	shutdown(sv[1], SHUT_WR);
	evutil_make_socket_nonblocking(sv[1]);
	for (i = 0; i < 16; i++) {
		calls_seen = 0;
		event_base_loop(proc_base, EVLOOP_NONBLOCK);
		if (calls_seen)
			verdict(calls_reqid);
		if (pending != NULL)
			upstream();
		if (TAILQ_EMPTY(&run->conns))
			break;
	}
	egress_run_free(run);
	event_base_loop(proc_base, EVLOOP_NONBLOCK);
	/* What came back never holds the real value. */
	while ((n = read(sv[1], buf, sizeof(buf))) > 0)
		if (memmem(buf, n, REAL, sizeof(REAL) - 1) != NULL)
			abort();
	close(sv[1]);
	return (0);
}
