/*
 * What every re-executed child does first, and helpers the processes
 * share.  Kept apart from main() so the unit tests can link the daemon's
 * modules.
 */

#include <sys/types.h>

#include <errno.h>
#include <event.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "tregd.h"
#include "util.h"

static void		child_log_sink(int, const char *);
static int		proc_peers_complete(const struct proc_peer *, size_t);

static struct imsgev	*log_iev;	/* the parent channel */
static const struct proc_child *child;	/* this process (proc_child_init) */

static void	proc_imsg_peer(struct imsgev *, struct imsg *);
static void	proc_imsg_vault(struct imsgev *, struct imsg *);

/* What every child takes from the parent at its start. */
static const struct imsg_handler child_start_imsgs[] = {
	{ IMSG_CONF, IMSG_FROM(PROC_PARENT), sizeof(struct tregd_conf),
	    proc_imsg_conf },
	{ IMSG_CONF_PEER, IMSG_FROM(PROC_PARENT), sizeof(uint32_t),
	    proc_imsg_peer },
	{ IMSG_CONF_VAULT, IMSG_FROM(PROC_PARENT), sizeof(uint32_t),
	    proc_imsg_vault },
};
struct event_base	*proc_base;	/* the event base */

const char *const proc_names[PROC_MAX] = {
	"parent", "frontend", "vault", "exec", "relay", "control"
};

/* "vault 0" ...: titles, log prefixes and channel names of the workers. */
static char		 worker_names[VAULT_WORKERS_MAX][16];

const char *
proc_worker_name(int n)
{
	if (n < 0 || n >= VAULT_WORKERS_MAX)
		fatalx("%s: worker %d", __func__, n);
	if (worker_names[n][0] == '\0')
		snprintf(worker_names[n], sizeof(worker_names[n]), "vault %d",
		    n);
	return (worker_names[n]);
}

static void
child_log_sink(int pri, const char *line)
{
	struct iovec	 iov[2];

	if (log_iev == NULL || log_iev->dead) {
		fprintf(stderr, "%s\n", line);
		return;
	}
	iov[0].iov_base = &pri;
	iov[0].iov_len = sizeof(pri);
	iov[1].iov_base = (void *)line;
	iov[1].iov_len = strlen(line) + 1;
	if (imsg_composev(&log_iev->ibuf, IMSG_LOG, 0, -1, iov, 2) == -1)
		return;
	/* A fatal() must reach the parent before the process exits. */
	if (pri <= LOG_CRIT)
		imsgbuf_flush(&log_iev->ibuf);
	else
		imsgev_update(log_iev);
}

/*
 * Set up a re-executed child: name it, route its log lines to the parent
 * and read its configuration synchronously (it needs it to know where to
 * chroot), leaving later messages buffered for the event loop.  The
 * settings, the peer channels of c and, where c takes them, a channel to
 * each vault worker are taken here, and must all have come; what else
 * the child takes at its start is in start (may be NULL).
 */
void
proc_child_init(const struct proc_child *c, struct imsgev *parent,
    int debug, int verbose, const struct imsg_handler *start, size_t nstart)
{
	struct imsg	 imsg;
	struct pollfd	 pfd;
	ssize_t		 n;
	int		 r, done = 0;

	child = c;
	log_init(1, verbose);
	log_procinit(proc_names[c->self]);
	setproctitle("%s", proc_names[c->self]);
	event_zero_alloc();
	proc_base = event_init();
	imsgev_init(parent, PROC_PARENT_FD, PROC_PARENT, "parent", c->dispatch,
	    c->closed, NULL);
	log_iev = parent;
	log_setsink(child_log_sink);

	while (!done) {
		r = imsg_get(&parent->ibuf, &imsg);
		if (r == -1)
			fatalx("corrupt message stream from parent");
		if (r == 0) {
			pfd.fd = PROC_PARENT_FD;
			pfd.events = POLLIN;
			if (poll(&pfd, 1, -1) == -1 && errno != EINTR)
				fatal("poll");
			n = imsgbuf_read(&parent->ibuf);
			if (n == 0)
				fatalx("parent went away");
			if (n == -1 && errno != EAGAIN && errno != EINTR)
				fatal("read from parent");
			continue;
		}
		if (imsg.hdr.type == IMSG_CONF_END) {
			if (imsg.datalen != 0)
				fatalx("bad IMSG_CONF_END");
			done = 1;
		} else if (imsg.hdr.type == IMSG_CONF ||
		    imsg.hdr.type == IMSG_CONF_PEER ||
		    (imsg.hdr.type == IMSG_CONF_VAULT && c->vaults != NULL))
			imsgev_dispatch(IMSG_HANDLERS(child_start_imsgs),
			    parent, &imsg);
		else
			imsgev_dispatch(start, nstart, parent, &imsg);
		imsg_free(&imsg);
	}
	if (!proc_peers_complete(c->peers, c->npeers) || (c->vaults != NULL &&
	    *c->nvaults != c->conf->vault_workers))
		fatalx("%s: incomplete configuration", proc_names[c->self]);
}

/* Copy IMSG_CONF into conf, checking the exact length and terminations. */
void
proc_conf_recv(struct imsg *imsg, struct tregd_conf *conf)
{
	if (imsg->datalen != sizeof(*conf))
		fatalx("bad IMSG_CONF length %zu", imsg->datalen);
	memcpy(conf, imsg->data, sizeof(*conf));
	conf_terminate(conf);
}

/* IMSG_CONF: the child's settings (at start, and each reload's). */
void
proc_imsg_conf(struct imsgev *iev, struct imsg *imsg)
{
	proc_conf_recv(imsg, child->conf);
}

/* Look a system user up, refusing to go on without it. */
struct passwd *
proc_getpw(const char *user)
{
	struct passwd	*pw;

	if ((pw = getpwnam(user)) == NULL)
		fatalx("unknown user %s: create it (make install does)", user);
	return (pw);
}

/* A configuration from a peer: every string terminated, counts in range. */
void
conf_terminate(struct tregd_conf *conf)
{
	int	 i;

	if (conf->nlisten < 0 || conf->nlisten > CONF_LISTEN_MAX ||
	    conf->nrun_allow < 0 || conf->nrun_allow > CONF_ALLOW_MAX)
		fatalx("bad configuration counts");
	for (i = 0; i < CONF_LISTEN_MAX; i++)
		conf->listen[i].name[sizeof(conf->listen[i].name) - 1] = '\0';
	for (i = 0; i < CONF_ALLOW_MAX; i++)
		conf->run_allow[i][CONF_BIN_LEN - 1] = '\0';
	conf->state[sizeof(conf->state) - 1] = '\0';
	conf->socket[sizeof(conf->socket) - 1] = '\0';
	conf->socket_group[sizeof(conf->socket_group) - 1] = '\0';
	conf->run_path[sizeof(conf->run_path) - 1] = '\0';
	conf->run_dir[sizeof(conf->run_dir) - 1] = '\0';
	conf->run_proof[sizeof(conf->run_proof) - 1] = '\0';
	conf->tls_cert[sizeof(conf->tls_cert) - 1] = '\0';
	conf->tls_key[sizeof(conf->tls_key) - 1] = '\0';
}

/*
 * IMSG_CONF_PEER: the parent hands over a channel to another core
 * process.  It must be one of the peers this process expects, once.
 */
static void
proc_imsg_peer(struct imsgev *iev, struct imsg *imsg)
{
	struct proc_peer	*peers = child->peers;
	uint32_t		 id;
	size_t			 i;

	if (imsg->fd == -1 || imsg->datalen != sizeof(id))
		fatalx("bad IMSG_CONF_PEER");
	memcpy(&id, imsg->data, sizeof(id));
	for (i = 0; i < child->npeers; i++)
		if (peers[i].id == id && !peers[i].have)
			break;
	if (i == child->npeers)
		fatalx("bad IMSG_CONF_PEER %u", id);
	imsgev_init(peers[i].iev, imsg->fd, id, proc_names[id],
	    peers[i].dispatch, child->closed, NULL);
	peers[i].have = 1;
	imsg->fd = -1;
}

/*
 * IMSG_CONF_VAULT (frontend, exec, relay): the channel to vault worker n,
 * each once, into the child's vaults[n]; *nvaults counts them.  Its
 * messages are tagged PROC_WORKER(n), so a worker can only answer what
 * was asked of it.
 */
static void
proc_imsg_vault(struct imsgev *iev, struct imsg *imsg)
{
	struct imsgev	*ievs = child->vaults;
	uint32_t	 n;

	if (imsg->fd == -1 || imsg->datalen != sizeof(n))
		fatalx("bad IMSG_CONF_VAULT");
	memcpy(&n, imsg->data, sizeof(n));
	if (n >= VAULT_WORKERS_MAX || ievs[n].dispatch != NULL)
		fatalx("bad IMSG_CONF_VAULT %u", n);
	imsgev_init(&ievs[n], imsg->fd, PROC_WORKER(n), proc_worker_name(n),
	    child->dispatch, child->closed, NULL);
	ievs[n].kind = PROC_VAULT;
	(*child->nvaults)++;
	imsg->fd = -1;
}

/* Every expected peer channel arrived. */
static int
proc_peers_complete(const struct proc_peer *peers, size_t npeers)
{
	size_t	 i;

	for (i = 0; i < npeers; i++)
		if (!peers[i].have)
			return (0);
	return (1);
}

/* IMSG_LOG_VERBOSE from the parent (tregctl log verbose | brief). */
void
proc_log_verbose(struct imsgev *iev, struct imsg *imsg)
{
	int	 v;

	if (imsg->datalen != sizeof(v))
		fatalx("bad IMSG_LOG_VERBOSE");
	memcpy(&v, imsg->data, sizeof(v));
	log_setverbose(v);
}

static struct event	 ev_lost;
static int		 lost_armed;
static char		 lost_name[32];

static void
proc_lost_timeout(int fd, short event, void *arg)
{
	fatalx("lost the channel to %s", lost_name);
}

/*
 * A peer's channel closed.  At shutdown the parent signals every child at
 * once and a peer may simply have exited first: give our own SIGTERM a
 * moment to arrive before calling it fatal.  A peer that really died is
 * named by the parent, which then stops everything anyway.
 */
void
proc_peer_lost(struct imsgev *iev)
{
	struct timeval	 tv = { 1, 0 };

	if (lost_armed++)
		return;
	strlcpy(lost_name, iev->name, sizeof(lost_name));
	log_debug("the channel to %s closed", iev->name);
	evtimer_set(&ev_lost, proc_lost_timeout, NULL);
	evtimer_add(&ev_lost, &tv);
}

static struct event	 ev_sigterm, ev_sigint;

/*
 * The end of every child's start: stop on SIGTERM/SIGINT through stop(),
 * hand over the messages that arrived with the configuration, and serve.
 */
__dead void
proc_child_run(void (*stop)(int, short, void *))
{
	struct imsgev	*parent = log_iev;

	signal(SIGPIPE, SIG_IGN);
	signal_set(&ev_sigterm, SIGTERM, stop, NULL);
	signal_set(&ev_sigint, SIGINT, stop, NULL);
	signal_add(&ev_sigterm, NULL);
	signal_add(&ev_sigint, NULL);

	imsgev_drain(parent);
	log_debug("ready");
	/* The parent tells the service manager when every child is here. */
	imsgev_compose(parent, IMSG_READY, 0, -1, NULL, 0);
	event_dispatch();
	fatalx("event loop ended");
}
