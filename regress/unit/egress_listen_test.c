/*
 * egress_listen_test: a keyless run's listener in the relay
 * (tregd/relay/egress_listen.c): nothing is accepted before the run's
 * grant (connections wait in the backlog), then each is handed on up to
 * the grant's cap, one past it is closed at once, a closed one makes
 * room, and the run's end closes the listener.  A real listening socket
 * on 127.0.0.1 and libevent's loop; the accepted connections come here
 * instead of to the proxy.
 */

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <atf-c.h>
#include <errno.h>
#include <event.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "relay.h"
#include "egress.h"

extern void	(*egress_accepted)(struct egress_run *, int, uint16_t,
		    uint16_t);

static int	 got[8];
static int	 ngot;
static uint16_t	 got_port, got_kind;

static void
accepted(struct egress_run *run, int fd, uint16_t port, uint16_t kind)
{
	if (ngot < 8)
		got[ngot] = fd;
	ngot++;
	got_port = port;
	got_kind = kind;
}

/* A listener on 127.0.0.1, its port in *port. */
static int
listener(uint16_t *port)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ATF_REQUIRE(fd != -1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ATF_REQUIRE(bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	ATF_REQUIRE(listen(fd, 16) == 0);
	ATF_REQUIRE(getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
	*port = ntohs(sin.sin_port);
	return (fd);
}

/* A client of 127.0.0.1:port: connected (the kernel's backlog), or -1. */
static int
client(uint16_t port)
{
	struct sockaddr_in	 sin;
	int			 fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ATF_REQUIRE(fd != -1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return (-1);
	}
	return (fd);
}

static void
turns(void)
{
	int	 i;

	for (i = 0; i < 5; i++) {
		event_loop(EVLOOP_NONBLOCK);
		usleep(10000);
	}
}

/* The client's connection was closed by the other end. */
static int
closed(int fd)
{
	struct pollfd	 p = { fd, POLLIN, 0 };
	char		 c;

	return (poll(&p, 1, 1000) == 1 && read(fd, &c, 1) == 0);
}

ATF_TC_WITHOUT_HEAD(listener_accepts_after_the_grant_within_the_cap);
ATF_TC_BODY(listener_accepts_after_the_grant_within_the_cap, tc)
{
	struct egress_grant	 g;
	struct egress_run	*run;
	uint16_t		 port;
	int			 c[5], i, l;

	event_init();
	egress_accepted = accepted;
	l = listener(&port);
	egress_listen_add(7, 3128, EGRESS_PROXY, l);
	run = egress_run_get(7, 0);
	ATF_REQUIRE(run != NULL);

	/* No grant: the connection waits in the backlog. */
	ATF_REQUIRE((c[0] = client(port)) != -1);
	turns();
	ATF_CHECK_EQ(ngot, 0);

	memset(&g, 0, sizeof(g));
	g.runid = 7;
	g.maxconns = 2;
	run->grant = &g;
	egress_run_ready(run);
	turns();
	ATF_CHECK_EQ(ngot, 1);
	ATF_CHECK_EQ(got_port, 3128);
	ATF_CHECK_EQ(got_kind, EGRESS_PROXY);

	/* The cap: the second is handed on, the third closed at once. */
	ATF_REQUIRE((c[1] = client(port)) != -1);
	turns();
	ATF_CHECK_EQ(ngot, 2);
	ATF_CHECK_EQ(run->nconns, 2);
	ATF_REQUIRE((c[2] = client(port)) != -1);
	turns();
	ATF_CHECK_EQ(ngot, 2);
	ATF_CHECK(closed(c[2]));

	/* One ends: room for another. */
	close(got[0]);
	egress_conn_closed(run);
	ATF_REQUIRE((c[3] = client(port)) != -1);
	turns();
	ATF_CHECK_EQ(ngot, 3);
	ATF_CHECK_EQ(run->nconns, 2);

	/* The run's end: the listener closes, nothing more connects. */
	run->grant = NULL;	/* the test's, not the proxy's to free */
	egress_run_end(7);
	ATF_CHECK(egress_run_get(7, 0) == NULL);
	ATF_CHECK_EQ((c[4] = client(port)), -1);
	for (i = 0; i < 4; i++)
		close(c[i]);
	for (i = 1; i < ngot && i < 8; i++)
		close(got[i]);
	egress_run_end(7);	/* again: nothing */
}

ATF_TC_WITHOUT_HEAD(run_end_before_any_listener_is_no_error);
ATF_TC_BODY(run_end_before_any_listener_is_no_error, tc)
{
	event_init();
	egress_run_end(42);
	ATF_CHECK(egress_run_get(42, 0) == NULL);
	ATF_CHECK(egress_run_get(42, 1) != NULL);
	egress_run_end(42);
	ATF_CHECK(egress_run_get(42, 0) == NULL);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, listener_accepts_after_the_grant_within_the_cap);
	ATF_TP_ADD_TC(tp, run_end_before_any_listener_is_no_error);
	return (atf_no_error());
}
