/*
 * egress_listen.c: a keyless run's listeners in the relay (SPEC.md
 * section 6a, "How the run reaches it" and "Limits").
 *
 * exec hands over each listening socket its run's CLI made inside the
 * run's network namespace (127.0.0.1:3128 for the proxy, one per egress
 * port for the transparent way), IMSG_EGRESS_LISTEN, and says when the
 * run ended, IMSG_EGRESS_END.  The relay never binds or listens itself:
 * it accepts on these only.  A run is known by the vault's run id; its
 * grant (egress_proxy.c, from the vault) and its listeners come on two
 * channels in either order, and a listener accepts only once the grant
 * is there: until then a connection waits in the listener's backlog,
 * made by the kernel in the run's namespace.  Past the per-run cap
 * ("run egress connections", the grant's maxconns) a connection is
 * accepted and closed at once.  Each accepted one goes to
 * egress_conn_start(), whose connection calls egress_conn_closed() at
 * its end.
 */

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "relay.h"
#include "egress.h"

/* How many a listener accepts in one wake-up: the others get a turn. */
#define EGRESS_ACCEPT_BURST	16

static TAILQ_HEAD(, egress_run)	 egress_runs =
				    TAILQ_HEAD_INITIALIZER(egress_runs);

static void	 egress_accept(int, short, void *);
static void	 egress_resume(int, short, void *);
static void	 egress_resume_soon(void);
static unsigned int egress_cap(const struct egress_run *);

/* Where an accepted connection goes: the proxy's (a unit test's own). */
void		(*egress_accepted)(struct egress_run *, int, uint16_t,
		    uint16_t) = egress_conn_start;
static struct event	 ev_resume;	/* after EMFILE: accept again */

/* The run runid, made (with make) when it is not known yet; or NULL. */
struct egress_run *
egress_run_get(uint32_t runid, int make)
{
	struct egress_run	*run;

	TAILQ_FOREACH(run, &egress_runs, entry)
		if (run->runid == runid)
			return (run);
	if (!make)
		return (NULL);
	if ((run = calloc(1, sizeof(*run))) == NULL)
		fatal("%s: calloc", __func__);
	run->runid = runid;
	TAILQ_INIT(&run->lsns);
	TAILQ_INIT(&run->conns);
	TAILQ_INSERT_TAIL(&egress_runs, run, entry);
	return (run);
}

/*
 * exec's IMSG_EGRESS_LISTEN: fd listens on 127.0.0.1:port in the run's
 * namespace.  It accepts once the run's grant is there.
 */
void
egress_listen_add(uint32_t runid, uint16_t port, uint16_t kind, int fd)
{
	struct egress_run	*run;
	struct egress_lsn	*l;

	/* Accepted in bursts: a blocking accept would stall every run. */
	if (evutil_make_socket_nonblocking(fd) == -1) {
		log_warn("run %u: listener on port %u", runid, port);
		close(fd);
		return;
	}
	run = egress_run_get(runid, 1);
	if ((l = calloc(1, sizeof(*l))) == NULL)
		fatal("%s: calloc", __func__);
	l->run = run;
	l->fd = fd;
	l->port = port;
	l->kind = kind;
	event_set(&l->ev, fd, EV_READ | EV_PERSIST, egress_accept, l);
	TAILQ_INSERT_TAIL(&run->lsns, l, entry);
	if (run->grant != NULL)
		event_add(&l->ev, NULL);
	log_debug("run %u: listener on port %u (%s)", runid, port,
	    kind == EGRESS_PROXY ? "proxy" : "transparent");
}

/* Its grant arrived (egress_proxy.c): its listeners accept from now. */
void
egress_run_ready(struct egress_run *run)
{
	struct egress_lsn	*l;

	TAILQ_FOREACH(l, &run->lsns, entry)
		if (!event_pending(&l->ev, EV_READ, NULL))
			event_add(&l->ev, NULL);
}

/*
 * The run ended (exec's IMSG_EGRESS_END, or the vault's revocation):
 * its listeners close, so nothing more of it connects; its grant and
 * connections go (egress_proxy.c), then the run.  A run not known is
 * no error: it had no listener, or ended already.
 */
void
egress_run_end(uint32_t runid)
{
	struct egress_run	*run;
	struct egress_lsn	*l;

	if ((run = egress_run_get(runid, 0)) == NULL)
		return;
	run->ended = 1;
	while ((l = TAILQ_FIRST(&run->lsns)) != NULL) {
		TAILQ_REMOVE(&run->lsns, l, entry);
		event_del(&l->ev);
		close(l->fd);
		free(l);
	}
	egress_run_free(run);
	TAILQ_REMOVE(&egress_runs, run, entry);
	free(run);
	log_debug("run %u: egress ended", runid);
}

/* One of the run's connections closed: room for another. */
void
egress_conn_closed(struct egress_run *run)
{
	if (run->nconns > 0)
		run->nconns--;
}

/* The run's cap: its grant's, else the configured one. */
static unsigned int
egress_cap(const struct egress_run *run)
{
	if (run->grant != NULL && run->grant->maxconns > 0)
		return (run->grant->maxconns);
	return ((unsigned int)relay_conf.run_egress_conns);
}

static void
egress_accept(int fd, short event, void *arg)
{
	struct egress_lsn	*l = arg;
	struct egress_run	*run = l->run;
	int			 s, i, one = 1;

	for (i = 0; i < EGRESS_ACCEPT_BURST; i++) {
		if (run->ended || run->grant == NULL)
			return;
		if ((s = accept4(fd, NULL, NULL, SOCK_NONBLOCK |
		    SOCK_CLOEXEC)) == -1) {
			if (errno == EMFILE || errno == ENFILE) {
				/* Not a busy loop: a second's pause. */
				log_warn("run %u: accept", run->runid);
				event_del(&l->ev);
				egress_resume_soon();
			} else if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("run %u: accept on port %u",
				    run->runid, l->port);
			return;
		}
		if (run->nconns >= egress_cap(run)) {
			/* Refused at accept: the CLI sees its connection end. */
			log_debug("run %u: connection over the cap of %u, "
			    "closed", run->runid, egress_cap(run));
			close(s);
			continue;
		}
		/*
		 * Answers go out as they come (a head, then a body): with
		 * Nagle a CLI that delays its ACKs waited 40 ms for each.
		 */
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		run->nconns++;
		egress_accepted(run, s, l->port, l->kind);
	}
}

/* Out of descriptors: the listeners accept again in a second. */
static void
egress_resume_soon(void)
{
	struct timeval	 tv = { 1, 0 };

	if (!event_initialized(&ev_resume))
		evtimer_set(&ev_resume, egress_resume, NULL);
	if (!evtimer_pending(&ev_resume, NULL))
		evtimer_add(&ev_resume, &tv);
}

static void
egress_resume(int fd, short event, void *arg)
{
	struct egress_run	*run;

	TAILQ_FOREACH(run, &egress_runs, entry)
		if (run->grant != NULL && !run->ended)
			egress_run_ready(run);
}
