/*
 * egress_pass.c: "tls": "passthrough" (SPEC.md section 6a, "TLS"), for a
 * "keyless": false profile whose CLI pins its server's certificate: its
 * connections to egress hosts are spliced unread.  There is no
 * placeholder to swap (the run holds the key), nothing can be masked
 * and no request seen: one call record per connection, method CONNECT.
 *
 * CONNECT host:port on the proxy listener, the host on the list
 * (egress_proxy.c checked it): recorded (IMSG_EGRESS_CALL, the verdict
 * awaited: no record, no connection), the upstream reached through the
 * relay's resolution and SSRF guard (relay.c: a call whose sink is a
 * tunnel; each address checked again at connect), 200, then the CLI's
 * ClientHello read without answering it (tls_hello.c): a server name
 * other than the CONNECT's host is refused with an alert, audited
 * (requests would go on to the host the list allowed under another
 * name); the same name or none, spliced.  On a transparent listener the
 * ClientHello comes first: its server name (without one, the one
 * address the list has on the port) must be on the list for that port;
 * then the record, the upstream, the hello forwarded as read, spliced.
 *
 * Spliced: bytes both ways as they come; reading one side stops while
 * EGRESS_UP_HIGH (to the upstream) or EGRESS_OUT_HIGH (to the run) waits
 * on the other; as long as the run may last without a byte ends it (a
 * long-poll waits as long through a tunnel as an intercepted request,
 * whose total is the run's timeout; the run's end closes it anyway).  Its
 * record
 * ends (IMSG_CALL_DONE: 200, the bytes the run got, the duration) when
 * the connection does.
 */

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "egress_int.h"
#include "log.h"
#include "tls_hello.h"

#define TLS_ALERT_UNRECOGNIZED_NAME	112
#define TLS_ALERT_INTERNAL_ERROR	80
#define PASS_RESOLVE_SECS		5	/* past the connect timeout */

static void	 pass_tunnel(struct rcall *);
static void	 pass_end(struct rcall *, int);
static void	 pass_refused(struct rcall *, int, const char *);
static void	 pass_next(struct egress_conn *);
static void	 pass_connected(int, short, void *);
static void	 pass_splice(struct egress_conn *);
static void	 pass_idle(struct egress_conn *);
static void	 pass_unhook(struct egress_conn *);
static void	 pass_drop_up(struct egress_conn *);
static void	 pass_fail(struct egress_conn *, int, const char *);
static void	 pass_deny(struct egress_conn *, const char *, const char *);
static void	 up_read(struct bufferevent *, void *);
static void	 up_write(struct bufferevent *, void *);
static void	 up_event(struct bufferevent *, short, void *);

/* The relay's call only resolves, checks and records: no HTTP. */
static const struct rsink pass_sink = {
	NULL, NULL, NULL, NULL, pass_end, pass_refused, NULL, pass_tunnel
};

/*
 * CONNECT to a host of the list on a passthrough grant: its record
 * first (0: it waits for the verdict, egress_proxy.c's).
 */
int
egress_pass_connect(struct egress_conn *ec, struct egress_req *req)
{
	ec->tunnel = 1;
	req->tunnel = 1;
	strlcpy(req->method, "CONNECT", sizeof(req->method));
	strlcpy(req->host, ec->host, sizeof(req->host));
	req->port = ec->hport;
	egress_req_call(req);
	return (0);
}

/*
 * The ClientHello, as much as came: after CONNECT its name must be the
 * tunnel's host (or none); on a transparent listener, a host of the list
 * on this port, then it is recorded.
 */
void
egress_pass_peek(struct egress_conn *ec)
{
	struct evbuffer		*in = bufferevent_get_input(ec->bev);
	struct egrant		*gr = egrant_of(ec->run);
	struct egress_req	*req;
	char			 name[HOST_LEN_MAX], bare[HOST_LEN_MAX];
	size_t			 n;
	enum tls_peek		 pk;

	if ((n = evbuffer_get_length(in)) > TLS_PEEK_MAX)
		n = TLS_PEEK_MAX;
	pk = tls_hello_sni(evbuffer_pullup(in, n), n, name, sizeof(name));
	if (pk == TLS_PEEK_MORE)
		return;
	if (pk == TLS_PEEK_BAD) {
		pass_deny(ec, ec->tunnel ? ec->host : "", "not a TLS "
		    "ClientHello that can be read");
		return;
	}
	if (ec->tunnel) {
		if (pk == TLS_PEEK_NAME && strcmp(name, egress_host_bare(
		    ec->host, bare, sizeof(bare))) != 0)
			pass_deny(ec, name, "the TLS server name is not the "
			    "host of the CONNECT");
		else
			pass_splice(ec);
		return;
	}
	/* A client names no address in SNI: the one the list has here. */
	if (pk == TLS_PEEK_NONAME && egress_addr_on_port(gr, ec->port, name,
	    sizeof(name)) == -1) {
		pass_deny(ec, "", "a TLS connection without a server name "
		    "(SNI)");
		return;
	}
	if (!egress_host_ok(gr, name, ec->port, 0)) {
		pass_deny(ec, name, "not on the egress list (TLS server name)");
		return;
	}
	strlcpy(ec->host, name, sizeof(ec->host));
	ec->hport = ec->port;
	evtimer_del(&ec->tmo);
	req = egress_req_new(ec);
	req->tunnel = 1;
	strlcpy(req->method, "CONNECT", sizeof(req->method));
	strlcpy(req->host, ec->host, sizeof(req->host));
	req->port = ec->hport;
	req->ec = ec;
	ec->req = req;
	egress_req_call(req);
}

/* A refusal of the relay's own: recorded (refused_by egress), closed. */
static void
pass_deny(struct egress_conn *ec, const char *host, const char *detail)
{
	egress_audit_refusal(ec, ec->tunnel ? "CONNECT" : "", host,
	    ec->hport, "", detail, 403);
	egress_pass_refuse(ec, 403, detail);
}

/*
 * The connection refused (the record is elsewhere): a CONNECT not yet
 * answered gets a status and a line; inside TLS the client gets a fatal
 * alert, as a server would send it before its hello.
 */
void
egress_pass_refuse(struct egress_conn *ec, int status, const char *detail)
{
	unsigned char	 alert[] = { 21, 3, 3, 0, 2, 2, 0 };

	pass_drop_up(ec);
	if (ec->kind == EGRESS_PROXY && !ec->answered) {
		egress_answer(ec, status, detail, 1);
		return;
	}
	alert[6] = status < 500 ? TLS_ALERT_UNRECOGNIZED_NAME :
	    TLS_ALERT_INTERNAL_ERROR;
	evbuffer_add(bufferevent_get_output(ec->bev), alert, sizeof(alert));
	evtimer_del(&ec->tmo);
	egress_conn_close(ec);
}

/* The vault recorded it: the upstream, resolved and checked by relay.c. */
void
egress_pass_go(struct egress_req *req)
{
	struct egress_conn	*ec = req->ec;
	struct rcall		*rc;
	struct timeval		 tv = { PASS_RESOLVE_SECS, 0 };
	char			 url[HOST_LEN_MAX + 32];

	snprintf(url, sizeof(url), "https://%s:%u/", ec->host, ec->hport);
	rc = egress_rcall(req, url, &pass_sink, ec);
	if ((rc->method = strdup("CONNECT")) == NULL)
		fatal("%s: strdup", __func__);
	ec->rc = rc;
	ec->req = NULL;
	egress_req_free(req);
	ec->state = EC_PASSUP;
	tv.tv_sec += relay_conf.relay_timeout_connect;
	evtimer_add(&ec->tmo, &tv);
	relay_call(rc);		/* may refuse at once (pass_refused) */
}

/* Its checked addresses: connected to by the tunnel itself. */
static void
pass_tunnel(struct rcall *rc)
{
	struct egress_conn	*ec = rc->sink_arg;

	if (ec == NULL) {
		relay_finish(rc, 1);
		return;
	}
	pass_next(ec);
}

/* The next checked address (relay_http.c asks the guard again). */
static void
pass_next(struct egress_conn *ec)
{
	if ((ec->upfd = rhttp_socket(ec->rc, &ec->upev, pass_connected,
	    ec)) == -1)
		pass_fail(ec, 502, "the upstream could not be reached");
}

static void
pass_connected(int fd, short ev, void *arg)
{
	struct egress_conn	*ec = arg;
	struct timeval		 tv = { EGRESS_HEAD_SECS, 0 };
	int			 err = rhttp_connect_error(fd);

	ec->upfd = -1;
	relay_cork(1);
	if (err != 0) {
		close(fd);
		ec->rc->nextaddr++;
		pass_next(ec);
		relay_cork(0);
		return;
	}
	if ((ec->up = bufferevent_socket_new(proc_base, fd,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS)) == NULL)
		fatalx("%s: bufferevent_socket_new", __func__);
	bufferevent_setwatermark(ec->up, EV_READ, 0, EGRESS_OUT_HIGH);
	bufferevent_setcb(ec->up, up_read, up_write, up_event, ec);
	ec->rc->status = 200;
	if (!ec->tunnel) {
		pass_splice(ec);	/* the hello was read and judged */
		relay_cork(0);
		return;
	}
	/* CONNECT: its answer, then the hello it names a host in. */
	evbuffer_add_printf(bufferevent_get_output(ec->bev),
	    "HTTP/1.1 200 Connection established\r\n\r\n");
	ec->answered = 1;
	ec->state = EC_SNI;
	evtimer_add(&ec->tmo, &tv);
	if (evbuffer_get_length(bufferevent_get_input(ec->bev)) > 0)
		egress_pass_peek(ec);
	relay_cork(0);
}

/* The hello goes as read, and everything after it, both ways. */
static void
pass_splice(struct egress_conn *ec)
{
	ec->state = EC_SPLICE;
	pass_idle(ec);
	bufferevent_enable(ec->up, EV_READ | EV_WRITE);
	bufferevent_enable(ec->bev, EV_READ | EV_WRITE);
	egress_pass_pump(ec);
}

/* A byte moved on a spliced connection: its idle time starts again. */
static void
pass_idle(struct egress_conn *ec)
{
	struct timeval	 tv = { EGRESS_IDLE_SECS, 0 };
	struct egrant	*gr;

	if (ec->run != NULL && (gr = egrant_of(ec->run)) != NULL &&
	    gr->g.timeout_s > 0)
		tv.tv_sec = gr->g.timeout_s;
	evtimer_add(&ec->tmo, &tv);
}

/* From the run to the upstream, while it takes it. */
void
egress_pass_pump(struct egress_conn *ec)
{
	struct evbuffer	*in = bufferevent_get_input(ec->bev), *out;

	if (ec->up == NULL)
		return;
	out = bufferevent_get_output(ec->up);
	if (evbuffer_get_length(in) > 0) {
		evbuffer_add_buffer(out, in);
		pass_idle(ec);
	}
	if (evbuffer_get_length(out) >= EGRESS_UP_HIGH)
		bufferevent_disable(ec->bev, EV_READ);
}

/* The run took all that was queued for it: the upstream is read again. */
void
egress_pass_written(struct egress_conn *ec)
{
	if (ec->up == NULL)
		return;
	bufferevent_enable(ec->up, EV_READ);
	up_read(ec->up, ec);
}

/* From the upstream to the run, while it takes it. */
static void
up_read(struct bufferevent *bev, void *arg)
{
	struct egress_conn	*ec = arg;
	struct evbuffer		*in = bufferevent_get_input(bev), *out;
	size_t			 n;

	out = bufferevent_get_output(ec->bev);
	if ((n = evbuffer_get_length(in)) > 0) {
		if (ec->rc != NULL)
			ec->rc->bytes += n;
		evbuffer_add_buffer(out, in);
		if (ec->state == EC_SPLICE)
			pass_idle(ec);
	}
	if (evbuffer_get_length(out) >= EGRESS_OUT_HIGH)
		bufferevent_disable(bev, EV_READ);
}

/* The upstream took all that was queued: the run is read again. */
static void
up_write(struct bufferevent *bev, void *arg)
{
	struct egress_conn	*ec = arg;

	relay_cork(1);
	if (ec->state == EC_CLOSING)
		egress_conn_close(ec);
	else if (ec->state == EC_SPLICE) {
		bufferevent_enable(ec->bev, EV_READ);
		egress_pass_pump(ec);
	}
	relay_cork(0);
}

/* The upstream closed (or broke): what it sent reaches the run first. */
static void
up_event(struct bufferevent *bev, short what, void *arg)
{
	struct egress_conn	*ec = arg;

	relay_cork(1);
	up_read(bev, ec);
	pass_drop_up(ec);
	if (ec->state != EC_CLOSING) {
		evtimer_del(&ec->tmo);
		egress_conn_close(ec);
	}
	relay_cork(0);
}

/* The run closed (or broke): what it sent reaches the upstream first. */
void
egress_pass_eof(struct egress_conn *ec)
{
	if (ec->up != NULL)
		evbuffer_add_buffer(bufferevent_get_output(ec->up),
		    bufferevent_get_input(ec->bev));
	evtimer_del(&ec->tmo);
	egress_conn_close(ec);
}

/* Connecting too long, or spliced and idle too long. */
void
egress_pass_timeout(struct egress_conn *ec)
{
	if (ec->state == EC_PASSUP)
		pass_fail(ec, 504, "the upstream could not be reached in time");
	else
		egress_conn_free(ec);
}

/* Bytes still on their way to the upstream (a closing connection). */
int
egress_pass_pending(const struct egress_conn *ec)
{
	return (ec->up != NULL &&
	    evbuffer_get_length(bufferevent_get_output(ec->up)) > 0);
}

static void
pass_drop_up(struct egress_conn *ec)
{
	if (ec->upfd != -1) {
		event_del(&ec->upev);
		close(ec->upfd);
		ec->upfd = -1;
	}
	if (ec->up != NULL) {
		bufferevent_free(ec->up);
		ec->up = NULL;
	}
}

/*
 * The relay's call goes: its record ends (relay_cancel() finishes it,
 * or ends the resolution that would have).
 */
static void
pass_unhook(struct egress_conn *ec)
{
	struct rcall	*rc;

	if ((rc = ec->rc) == NULL)
		return;
	ec->rc = NULL;
	rc->sink_arg = NULL;
	relay_cancel(rc);
}

/* The upstream was not reached: recorded so, the run told. */
static void
pass_fail(struct egress_conn *ec, int status, const char *detail)
{
	if (ec->rc != NULL) {
		ec->rc->status = status;
		ec->rc->refused = CALL_UPSTREAM;
	}
	pass_unhook(ec);
	egress_pass_refuse(ec, status, detail);
}

/* The connection goes: the upstream and the record with it. */
void
egress_pass_free(struct egress_conn *ec)
{
	pass_drop_up(ec);
	pass_unhook(ec);
}

/* The relay refused the upstream (its name, the SSRF guard). */
static void
pass_refused(struct rcall *rc, int status, const char *detail)
{
	struct egress_conn	*ec = rc->sink_arg;

	if (ec == NULL)
		return;
	ec->rc = NULL;
	rc->sink_arg = NULL;	/* relay_finish() ends it */
	egress_pass_refuse(ec, status, detail);
}

static void
pass_end(struct rcall *rc, int failed)
{
	struct egress_conn	*ec = rc->sink_arg;

	if (ec != NULL)
		ec->rc = NULL;
}
