/*
 * The relay (_tregrelay, chroot /var/empty): performs /call requests.
 *
 * It may make outbound TCP and UDP connections and nothing else: no
 * listening socket, no program, no file once it started (seccomp; the CA
 * bundle and the resolver's files are read before the chroot).  The
 * vault sends it a call with the bindings applied and the call's
 * redaction set (IMSG_CALL_START); it resolves the upstream's name
 * (evdns), checks every address against the rules base_url obeys
 * (loopback, private, link-local, CGNAT, multicast, IPv4-mapped, ...
 * unless `relay allow-private yes') and connects to the checked
 * addresses only (relay_http.c), so a second resolution can never lead
 * elsewhere.  What comes back is
 * redacted before it leaves this process: headers line by line, the
 * body as a stream.  The frontend gets the answer; the vault how it
 * ended, for the audit.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <event.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "egress.h"
#include "pack.h"
#include "proc.h"
#include "redact.h"
#include "redact_cache.h"
#include "relay.h"
#include "egress.h"
#include "sandbox.h"

#define CA_FILE_MAX	(4 * 1024 * 1024)
struct tregd_conf		 relay_conf;
static struct imsgev		 iev_parent, iev_frontend, iev_exec;
static struct imsgev		 iev_vaults[VAULT_WORKERS_MAX];
static int			 nvaults;
static struct blob_list		 relay_blobs =
				    TAILQ_HEAD_INITIALIZER(relay_blobs);
static struct rcall_list	 rcalls = TAILQ_HEAD_INITIALIZER(rcalls);
static int			 ncalls;
static struct evdns_base	*dns;

static void	relay_dispatch(struct imsgev *, struct imsg *);
static void	relay_imsg_reload_end(struct imsgev *, struct imsg *);
static void	relay_imsg_call_start(struct imsgev *, struct imsg *);
static void	relay_imsg_call_data(struct imsgev *, struct imsg *);
static void	relay_imsg_call_cancel(struct imsgev *, struct imsg *);
static void	relay_imsg_call_pause(struct imsgev *, struct imsg *);
static void	relay_imsg_egress_blob(struct imsgev *, struct imsg *);
static void	relay_imsg_egress_revoke(struct imsgev *, struct imsg *);
static void	relay_blob_done(struct blob *);
static void	relay_closed(struct imsgev *);
static void	relay_imsg_egress_listen(struct imsgev *, struct imsg *);
static void	relay_imsg_egress_end(struct imsgev *, struct imsg *);
static void	relay_egress_ca(void);
static void	relay_sig(int, short, void *);
static char	*relay_ca_load(size_t *, size_t *);
static int	relay_read(const char *, char **, size_t *);
static void	relay_start(struct blob *);
static int	relay_unpack(struct rcall *, struct blob *);
static void	relay_resolved(int, struct evutil_addrinfo *, void *);
static void	relay_resolved_go(int, short, void *);
static int	relay_literal(struct rcall *);
static void	relay_go(struct rcall *, int);
static struct rcall *relay_find(uint32_t);
static void	relay_free(struct rcall *);
static void	relay_set_ready(void *, struct rcache *);
static void	relay_begin(struct rcall *);

#define FROM_PARENT	IMSG_FROM(PROC_PARENT)
#define FROM_FRONTEND	IMSG_FROM(PROC_FRONTEND)
#define FROM_VAULT	IMSG_FROM(PROC_VAULT)
#define FROM_EXEC	IMSG_FROM(PROC_EXEC)

/* Every message the relay takes once it serves, and from whom. */
static const struct imsg_handler relay_imsgs[] = {
	/* A reload: timeouts apply to new calls; the CA stays. */
	{ IMSG_CONF,	FROM_PARENT, sizeof(struct tregd_conf),	proc_imsg_conf },
	{ IMSG_CONF_END, FROM_PARENT, 0,		relay_imsg_reload_end },
	{ IMSG_LOG_VERBOSE, FROM_PARENT, sizeof(int),	proc_log_verbose },
	/* A call the vault decided: a blob from that worker. */
	{ IMSG_CALL_START, FROM_VAULT, IMSG_LEN_ANY,	relay_imsg_call_start },
	{ IMSG_DATA,	FROM_VAULT, IMSG_LEN_ANY,	relay_imsg_call_data },
	/* A request of the vault's own: credential health. */
	{ IMSG_FETCH_START, FROM_VAULT, IMSG_LEN_ANY,	rfetch_imsg_start },
	/* The frontend speaks for a call's client. */
	{ IMSG_CALL_CANCEL, FROM_FRONTEND, 0,		relay_imsg_call_cancel },
	{ IMSG_CALL_PAUSE, FROM_FRONTEND, 0,		relay_imsg_call_pause },
	{ IMSG_CALL_RESUME, FROM_FRONTEND, 0,		relay_imsg_call_pause },
	/* A keyless run's listeners and its end (egress_listen.c). */
	{ IMSG_EGRESS_LISTEN, FROM_EXEC, sizeof(struct egress_listen),
	    relay_imsg_egress_listen },
	{ IMSG_EGRESS_END, FROM_EXEC, sizeof(struct egress_end),
	    relay_imsg_egress_end },
	/* Keyless runs: a run's grant, its end, a verdict (egress_proxy.c). */
	{ IMSG_EGRESS_GRANT, FROM_VAULT, IMSG_LEN_ANY,
	    relay_imsg_egress_blob },
	{ IMSG_EGRESS_REVOKE, FROM_VAULT, sizeof(struct egress_end),
	    relay_imsg_egress_revoke },
	{ IMSG_EGRESS_VERDICT, FROM_VAULT, IMSG_LEN_ANY,
	    relay_imsg_egress_blob },
};

static struct proc_peer	 relay_peers[] = {
	{ PROC_FRONTEND,	&iev_frontend,	relay_dispatch, 0 },
	{ PROC_EXEC,		&iev_exec,	relay_dispatch, 0 },
};
#define NPEERS	(sizeof(relay_peers) / sizeof(relay_peers[0]))

static const struct proc_child relay_child = {
	PROC_RELAY, &relay_conf, relay_peers, NPEERS, iev_vaults, &nvaults,
	relay_dispatch, relay_closed
};

__dead void
relay_main(int debug, int verbose)
{
	struct sandbox_paths	 paths;
	struct passwd		*pw = NULL;
	char			*ca;
	size_t			 calen, casys;
	int			 i;

	proc_child_init(&relay_child, &iev_parent, debug, verbose, NULL,
	    0);
	if (geteuid() == 0)
		pw = proc_getpw(TREGD_RELAY_USER);

	/* Everything from the filesystem now: nothing is opened later. */
	ca = relay_ca_load(&calen, &casys);
	if ((dns = evdns_base_new(proc_base, 0)) == NULL)
		fatalx("evdns_base_new");
	if (evdns_base_resolv_conf_parse(dns, DNS_OPTIONS_ALL,
	    "/etc/resolv.conf") != 0)
		log_warnx("relay: /etc/resolv.conf: using the defaults");
	evdns_base_load_hosts(dns, "/etc/hosts");
	rhttp_init(ca, calen, casys);
	free(ca);
	relay_egress_ca();

	sandbox_nodump();
	if (pw != NULL)
		sandbox_demote(pw, TREGD_EMPTY);
	memset(&paths, 0, sizeof(paths));
	sandbox_confine(SANDBOX_RELAY, &paths);
	/* Its compiling thread inherits the filter. */
	rcache_init();
	rcache_start();

	/* What the calls of one loop turn send a peer: one sendmsg. */
	imsgev_coalesce(&iev_frontend);
	for (i = 0; i < nvaults; i++)
		imsgev_coalesce(&iev_vaults[i]);
	proc_child_run(relay_sig);
}

/*
 * The run CA (egress_ca.c), made now, its certificate to exec for the
 * runs' CA bundle.  Without it keyless runs' TLS cannot be intercepted:
 * the relay stops (so does tregd) rather than serve half.
 */
static void
relay_egress_ca(void)
{
	char	*pem;
	size_t	 len;

	if (egress_ca_init() == -1 || (pem = egress_ca_pem(&len)) == NULL)
		fatalx("relay: cannot make the run CA");
	if (imsgev_compose(&iev_exec, IMSG_EGRESS_CA, 0, -1, pem, len) == -1)
		fatal("%s: compose", __func__);
	free(pem);
}

/* exec: a run's listener, made in its network namespace. */
static void
relay_imsg_egress_listen(struct imsgev *iev, struct imsg *imsg)
{
	struct egress_listen	 el;

	memcpy(&el, imsg->data, sizeof(el));
	if (imsg->fd == -1 || (el.kind != EGRESS_PROXY &&
	    el.kind != EGRESS_TRANSPARENT) || el.port == 0)
		fatalx("bad IMSG_EGRESS_LISTEN from %s", iev->name);
	egress_listen_add(el.runid, el.port, el.kind, imsg->fd);
	imsg->fd = -1;
}

/* exec: the run ended; its listeners and connections go. */
static void
relay_imsg_egress_end(struct imsgev *iev, struct imsg *imsg)
{
	struct egress_end	 ee;

	memcpy(&ee, imsg->data, sizeof(ee));
	egress_run_end(ee.runid);
}

static void
relay_sig(int sig, short event, void *arg)
{
	exit(0);
}

static int
relay_read(const char *path, char **buf, size_t *len)
{
	struct stat	 st;
	ssize_t		 n;
	char		*p;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > CA_FILE_MAX) {
		close(fd);
		errno = EFBIG;
		return (-1);
	}
	if ((p = realloc(*buf, *len + st.st_size + 1)) == NULL)
		fatal("%s: realloc", __func__);
	n = read(fd, p + *len, st.st_size);
	close(fd);
	*buf = p;
	if (n != st.st_size)
		return (-1);
	*len += n;
	(*buf)[(*len)++] = '\n';
	return (0);
}

/*
 * The system's CA bundle (*sys bytes), then `relay ca': parsed once
 * (relay_http.c).
 */
static char *
relay_ca_load(size_t *len, size_t *sys)
{
	char	*buf = NULL;

	*len = 0;
	if (relay_read(TREGD_CA_BUNDLE, &buf, len) == -1)
		log_warn("relay: %s", TREGD_CA_BUNDLE);
	*sys = *len;
	if (relay_conf.relay_ca[0] != '\0' &&
	    relay_read(relay_conf.relay_ca, &buf, len) == -1)
		fatal("relay ca %s", relay_conf.relay_ca);
	return (buf);
}

/* ------------------------------------------------------------------ */
/* Channels.                                                           */

static void
relay_dispatch(struct imsgev *iev, struct imsg *imsg)
{
	imsgev_dispatch(IMSG_HANDLERS(relay_imsgs), iev, imsg);
}

static void
relay_imsg_reload_end(struct imsgev *iev, struct imsg *imsg)
{
}

static void
relay_imsg_call_start(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;

	b = blob_start(&relay_blobs, imsg, iev->peer, sizeof(struct call_start),
	    (size_t)relay_conf.http_body_max + 2 * HTTP_HEADERS_MAX +
	    REDSET_MAX * (4 * SECRET_LEN_MAX));
	if (b == NULL)
		fatalx("bad IMSG_CALL_START from %s", iev->name);
	if (b->datalen == 0)
		relay_start(b);
}

/*
 * A run's grant (the egress list, its placeholders and their values,
 * the redaction set) or a verdict on one of its requests: blobs, as a
 * call.
 */
static void
relay_imsg_egress_blob(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;

	if (imsg->hdr.type == IMSG_EGRESS_GRANT)
		b = blob_start(&relay_blobs, imsg, iev->peer,
		    sizeof(struct egress_grant), EGRESS_GRANT_MAX);
	else
		b = blob_start(&relay_blobs, imsg, iev->peer,
		    sizeof(struct egress_verdict), EGRESS_VERDICT_MAX);
	if (b == NULL)
		fatalx("bad imsg %u from %s", imsg->hdr.type, iev->name);
	if (b->datalen == 0)
		relay_blob_done(b);
}

static void
relay_imsg_egress_revoke(struct imsgev *iev, struct imsg *imsg)
{
	struct egress_end	 ee;

	memcpy(&ee, imsg->data, sizeof(ee));
	egress_revoke(iev->peer - PROC_WORKER(0), ee.runid);
}

/* A whole blob, by its type; freed. */
static void
relay_blob_done(struct blob *b)
{
	int	 worker = b->peer - PROC_WORKER(0);

	switch (b->type) {
	case IMSG_CALL_START:
		relay_start(b);
		return;
	case IMSG_EGRESS_GRANT:
		egress_grant_recv(worker, b->head, b->data, b->datalen);
		break;
	case IMSG_EGRESS_VERDICT:
		egress_verdict_recv(worker, b->head, b->data, b->datalen);
		break;
	default:
		fatalx("%s: blob of type %u", __func__, b->type);
	}
	blob_free(b);
}

static void
relay_imsg_call_data(struct imsgev *iev, struct imsg *imsg)
{
	struct blob	*b;
	int		 bad;

	b = blob_add(&relay_blobs, imsg, iev->peer, &bad);
	if (bad)
		fatalx("bad IMSG_DATA from %s", iev->name);
	if (b != NULL)
		relay_blob_done(b);
}

static void
relay_imsg_call_cancel(struct imsgev *iev, struct imsg *imsg)
{
	struct rcall	*rc;

	/* Not here yet (the vault has it): the frontend repeats. */
	if ((rc = relay_find(imsg->hdr.id)) == NULL)
		return;
	relay_cancel(rc);
}

/* The call's client went away: it ends, whatever it was doing. */
void
relay_cancel(struct rcall *rc)
{
	if (rc->cancelled)
		return;
	rc->cancelled = 1;
	if (rc->resolving) {
		/* relay_resolved_go() sees it and ends the call. */
		if (rc->dns != NULL)
			evdns_getaddrinfo_cancel(rc->dns);
		return;
	}
	/* Waiting for its set: nothing started yet. */
	if (!rc->waiting)
		rhttp_stop(rc);
	relay_finish(rc, 1);
}

static void
relay_imsg_call_pause(struct imsgev *iev, struct imsg *imsg)
{
	struct rcall	*rc;

	if ((rc = relay_find(imsg->hdr.id)) != NULL && !rc->resolving &&
	    !rc->waiting)
		rhttp_pause(rc, imsg->hdr.type == IMSG_CALL_PAUSE);
}

static void
relay_closed(struct imsgev *iev)
{
	proc_peer_lost(iev);
}

/* ------------------------------------------------------------------ */
/* A call.                                                             */

static struct rcall *
relay_find(uint32_t reqid)
{
	struct rcall	*rc;

	TAILQ_FOREACH(rc, &rcalls, entry)
		if (rc->sink == NULL && rc->fetch == NULL &&
		    rc->reqid == reqid)
			return (rc);
	return (NULL);
}

/*
 * method, url, nheaders, headers[], body of a request the vault asks
 * for (a call's, a fetch's), from u into rc: 0, or -1 (a bad message).
 */
int
relay_unpack_request(struct rcall *rc, struct unpack *u)
{
	const char	*s;
	size_t		 len, i, n;

	if ((s = unpack_str(u)) == NULL || (rc->method = strdup(s)) == NULL)
		return (-1);
	if ((s = unpack_str(u)) == NULL || (rc->url = strdup(s)) == NULL)
		return (-1);
	n = unpack_u32(u);
	if (n > RELAY_HEADERS_MAX ||
	    (rc->headers = calloc(n + 1, sizeof(char *))) == NULL)
		return (-1);
	for (i = 0; i < n; i++) {
		if ((s = unpack_str(u)) == NULL ||
		    (rc->headers[i] = strdup(s)) == NULL)
			return (-1);
		rc->nheaders++;
	}
	if ((s = unpack_bytes(u, &len)) == NULL ||
	    (rc->body = malloc(len + 1)) == NULL)
		return (-1);
	memcpy(rc->body, s, len);
	rc->bodylen = len;
	return (0);
}

static int
relay_unpack(struct rcall *rc, struct blob *b)
{
	struct unpack	 u;
	const char	*key;
	size_t		 len, i, n, keylen;

	unpack_init(&u, b->data, b->datalen);
	if (relay_unpack_request(rc, &u) == -1)
		return (-1);
	/* The rest is the redaction set: its bytes are the cache's key. */
	key = u.p;
	keylen = u.left;
	n = unpack_u32(&u);
	if (n > REDSET_MAX)
		return (-1);
	for (i = 0; i < n; i++)
		if (unpack_bytes(&u, &len) == NULL)
			return (-1);
	if (unpack_done(&u) != 0)
		return (-1);
	/* Compiled by the cache's thread when it has not got it. */
	switch (rcache_get(0, key, keylen, relay_set_ready, rc, &rc->rset)) {
	case 0:
		rc->set = rcache_set(rc->rset);
		break;
	case 1:
		rc->waiting = 1;
		break;
	default:
		return (-1);
	}
	return (0);
}

/* The call's redaction set is ready (NULL: it could not be made). */
static void
relay_set_ready(void *arg, struct rcache *ent)
{
	struct rcall	*rc = arg;

	rc->waiting = 0;
	if (ent == NULL) {
		relay_refuse(rc, 503, CALL_UPSTREAM, "the answer cannot be "
		    "masked: the relay is out of memory — try again later");
		return;
	}
	rc->rset = ent;
	rc->set = rcache_set(ent);
	relay_begin(rc);
}

/*
 * The URL's parts (the vault built it from a checked base_url): scheme,
 * host without brackets, port, the authority for the Host header and the
 * target (path and query, sent as they are).  0, or -1.
 */
static int
relay_host(struct rcall *rc)
{
	const char	*p = rc->url, *e, *h, *he, *errstr;
	char		 port[8];
	size_t		 n;

	/* No white space or control byte: the request line stays one. */
	for (e = p; *e != '\0'; e++)
		if ((unsigned char)*e <= 0x20 || *e == 0x7f)
			return (-1);
	if (strncasecmp(p, "http://", 7) == 0)
		p += 7;
	else if (strncasecmp(p, "https://", 8) == 0) {
		rc->tls = 1;
		p += 8;
	} else
		return (-1);
	e = p + strcspn(p, "/?#");
	rc->authority = p;
	rc->authlen = e - p;
	rc->target = e;
	if (memchr(p, '@', e - p) != NULL || *e == '#')
		return (-1);
	if (*p == '[') {
		h = p + 1;
		if ((he = memchr(h, ']', e - h)) == NULL)
			return (-1);
		p = he + 1;
	} else {
		h = p;
		he = p + strcspn(p, ":/?#");
		p = he;
	}
	n = he - h;
	if (n == 0 || n >= sizeof(rc->host))
		return (-1);
	memcpy(rc->host, h, n);
	rc->host[n] = '\0';
	rc->port = rc->tls ? 443 : 80;
	if (p < e && *p == ':') {
		n = e - p - 1;
		if (n == 0 || n >= sizeof(port))
			return (-1);
		memcpy(port, p + 1, n);
		port[n] = '\0';
		rc->port = strtonum(port, 1, 65535, &errstr);
		if (errstr != NULL)
			return (-1);
	} else if (p != e)
		return (-1);
	rc->literal = relay_literal(rc);
	return (0);
}

/* A host that is an address: the call's one address (1), or 0. */
static int
relay_literal(struct rcall *rc)
{
	union raddr	*ra = &rc->addrs[0];

	if (inet_pton(AF_INET, rc->host, &ra->sin.sin_addr) == 1) {
		ra->sin.sin_family = AF_INET;
		ra->sin.sin_port = htons(rc->port);
		return (1);
	}
	if (inet_pton(AF_INET6, rc->host, &ra->sin6.sin6_addr) == 1) {
		ra->sin6.sin6_family = AF_INET6;
		ra->sin6.sin6_port = htons(rc->port);
		return (1);
	}
	memset(ra, 0, sizeof(*ra));
	return (0);
}

static void
relay_start(struct blob *b)
{
	struct call_start	 cs;
	struct rcall		*rc;

	memcpy(&cs, b->head, sizeof(cs));
	if (relay_find(b->id) != NULL)
		fatalx("IMSG_CALL_START for a call in flight from vault");
	if ((rc = calloc(1, sizeof(*rc))) == NULL)
		fatal("%s: calloc", __func__);
	rc->reqid = b->id;
	rc->worker = b->peer - PROC_WORKER(0);
	rc->callid = cs.callid;
	rc->allow_private = cs.allow_private != 0;
	rc->org_id = cs.org_id;
	rc->user_id = cs.user_id;
	rc->cfd = -1;
	clock_gettime(CLOCK_MONOTONIC, &rc->start);
	TAILQ_INSERT_TAIL(&rcalls, rc, entry);
	ncalls++;
	if (relay_unpack(rc, b) == -1)
		fatalx("bad IMSG_CALL_START strings from vault");
	blob_free(b);
	if (!rc->waiting)
		relay_begin(rc);
}

/*
 * A call made here (a run's request, egress_req.c): its url, method,
 * sink and redaction set are set; the same checks, resolution, client
 * and answer as the vault's calls.
 */
void
relay_call(struct rcall *rc)
{
	rc->cfd = -1;
	clock_gettime(CLOCK_MONOTONIC, &rc->start);
	TAILQ_INSERT_TAIL(&rcalls, rc, entry);
	ncalls++;
	relay_begin(rc);
}

/* The call with its redaction set: check, resolve, connect. */
static void
relay_begin(struct rcall *rc)
{
	struct evdns_getaddrinfo_request *req;
	struct evutil_addrinfo	 hints;

	/* A tunnel's bytes are not read: nothing to mask. */
	if ((rc->sink == NULL || rc->sink->tunnel == NULL) &&
	    (rc->rd = redact_new(rc->set, SIZE_MAX)) == NULL)
		fatal("%s: redact_new", __func__);
	if (ncalls > RELAY_CALLS_MAX) {
		relay_refuse(rc, 503, CALL_UPSTREAM, "the relay is busy with "
		    "other calls — try again in a moment");
		return;
	}
	if (relay_host(rc) == -1) {
		relay_refuse(rc, 400, CALL_UPSTREAM, "the upstream URL is not "
		    "valid");
		return;
	}
	/* An address: nothing to resolve, the same check. */
	if (rc->literal) {
		if (relay_addr_ok(rc, &rc->addrs[0].sa))
			rc->naddrs = 1;
		relay_go(rc, rc->naddrs == 0);
		return;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	/* The callback may run at once (numbers, the hosts file). */
	rc->resolving = 1;
	req = evdns_getaddrinfo(dns, rc->host, NULL, &hints, relay_resolved,
	    rc);
	if (!rc->dns_done)
		rc->dns = req;
}

/* Never acted on inside evdns: the answer is taken up just after. */
static void
relay_resolved(int err, struct evutil_addrinfo *res, void *arg)
{
	struct rcall	*rc = arg;
	struct timeval	 tv = { 0, 0 };

	rc->dns = NULL;
	rc->dns_done = 1;
	rc->dns_err = err;
	rc->dns_res = res;
	if (event_base_once(proc_base, -1, EV_TIMEOUT, relay_resolved_go, rc,
	    &tv) == -1)
		fatalx("%s: event_base_once", __func__);
}

/* Every address the rules allow is kept, in order; none: refused. */
static void
relay_resolved_go(int fd, short ev, void *arg)
{
	struct rcall		*rc = arg;
	struct evutil_addrinfo	*ai, *res = rc->dns_res;
	union raddr		*ra;
	int			 refused = 0, err = rc->dns_err;

	rc->resolving = 0;
	rc->dns_res = NULL;
	if (rc->cancelled) {
		if (res != NULL)
			evutil_freeaddrinfo(res);
		relay_finish(rc, 1);
		return;
	}
	if (err != 0) {
		relay_refuse(rc, 502, CALL_UPSTREAM, "the upstream's name "
		    "does not resolve");
		return;
	}
	for (ai = res; ai != NULL && rc->naddrs < RELAY_ADDRS_MAX;
	    ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof(rc->addrs[0]))
			continue;
		if (!relay_addr_ok(rc, ai->ai_addr)) {
			refused++;
			continue;
		}
		ra = &rc->addrs[rc->naddrs++];
		memcpy(ra, ai->ai_addr, ai->ai_addrlen);
		if (ra->sa.sa_family == AF_INET)
			ra->sin.sin_port = htons(rc->port);
		else
			ra->sin6.sin6_port = htons(rc->port);
	}
	evutil_freeaddrinfo(res);
	relay_go(rc, refused);
}

/* The checked addresses, if any: connect; none: refused. */
static void
relay_go(struct rcall *rc, int refused)
{
	if (rc->naddrs == 0) {
		relay_refuse(rc, refused ? 403 : 502, refused ? CALL_SSRF :
		    CALL_UPSTREAM, refused ? "the upstream's address is not "
		    "public: tregd does not call private networks" :
		    "the upstream's name has no usable address");
		return;
	}
	if (rc->sink != NULL && rc->sink->tunnel != NULL) {
		rc->sink->tunnel(rc);
		return;
	}
	if (rhttp_start(rc) == -1)
		relay_refuse(rc, 502, CALL_UPSTREAM, "the call could not be "
		    "set up");
}

/*
 * The rules base_url obeys at registration (validate.c), on the exact
 * address: every IPv4 special range, and IPv6 ones including mapped,
 * NAT64 and compatible forms of them.
 */
int
relay_addr_ok(const struct rcall *rc, const struct sockaddr *sa)
{
	const struct sockaddr_in	*s4;
	const struct sockaddr_in6	*s6;

	if (sa->sa_family == AF_INET) {
		s4 = (const struct sockaddr_in *)sa;
		return (rc->allow_private ||
		    ip4_is_public(ntohl(s4->sin_addr.s_addr)));
	}
	if (sa->sa_family == AF_INET6) {
		s6 = (const struct sockaddr_in6 *)sa;
		return (rc->allow_private ||
		    ip6_is_public(s6->sin6_addr.s6_addr));
	}
	return (0);
}

/* ------------------------------------------------------------------ */
/* Answers.                                                            */

/*
 * Around each turn of the client's: what it produces (a head, a body,
 * the end to the frontend; how it ended to the vault) leaves in one
 * write per channel, not one per message.
 */
void
relay_cork(int on)
{
	int	 i;

	if (on)
		imsgev_cork(&iev_frontend);
	else
		imsgev_uncork(&iev_frontend);
	for (i = 0; i < nvaults; i++) {
		if (on)
			imsgev_cork(&iev_vaults[i]);
		else
			imsgev_uncork(&iev_vaults[i]);
	}
}

void
relay_send_head(struct rcall *rc, int status, int refused, const char *data,
    size_t len)
{
	struct call_head	 ch;

	memset(&ch, 0, sizeof(ch));
	ch.status = status;
	ch.refused = refused;
	ch.org_id = rc->org_id;
	ch.user_id = rc->user_id;
	rc->status = status;
	rc->head_sent = 1;
	if (rc->sink != NULL) {
		rc->sink->head(rc, status, data, len);
		return;
	}
	if (rc->fetch != NULL) {
		rfetch_head(rc, status, refused, data, len);
		return;
	}
	if (imsgev_send_blob(&iev_frontend, IMSG_CALL_HEAD, rc->reqid, &ch,
	    sizeof(ch), data, len) == -1)
		fatal("%s: send", __func__);
}

void
relay_send_body(struct rcall *rc, const void *data, size_t len)
{
	const char	*p = data;
	size_t		 n;

	if (rc->sink != NULL) {
		rc->bytes += len;
		rc->sink->body(rc, data, len);
		return;
	}
	if (rc->fetch != NULL) {
		rfetch_body(rc, data, len);
		return;
	}
	while (len > 0) {
		n = len < IMSG_DATA_MAX ? len : IMSG_DATA_MAX;
		if (imsgev_compose(&iev_frontend, IMSG_CALL_BODY, rc->reqid,
		    -1, p, n) == -1)
			fatal("%s: compose", __func__);
		rc->bytes += n;
		p += n;
		len -= n;
	}
}

/*
 * More answer queued for the frontend than it took: the calls wait a
 * little (relay_resp.c), so what the relay holds is bounded however fast
 * answers come (a decoded one can come a thousand times faster).
 */
int
relay_backlog(struct rcall *rc)
{
	if (rc->sink != NULL)
		return (rc->sink->backlog(rc));
	if (rc->fetch != NULL)		/* kept bounded in relay_fetch.c */
		return (0);
	return (imsgbuf_queuelen(&iev_frontend.ibuf) > RELAY_BACKLOG_MAX);
}

/* tregd's own answer: JSON detail (the frontend adds X-Treg-Error). */
void
relay_refuse(struct rcall *rc, int status, uint32_t why, const char *detail)
{
	char	 buf[512];
	int	 n;

	rc->refused = why;
	if (rc->sink != NULL) {
		rc->status = status;
		rc->head_sent = 1;
		rc->sink->refuse(rc, status, detail);
		relay_finish(rc, 0);
		return;
	}
	n = snprintf(buf, sizeof(buf), "{\"detail\":\"%s\"}", detail);
	relay_send_head(rc, status, 1, buf, n);
	relay_finish(rc, 0);
}

/*
 * How it went to the vault, then the end to the frontend; rc is freed.
 * The vault's message is written out first: a client that has its
 * answer finds the call's end when it reads GET /calls (the vault reads
 * what is waiting from here before it reads the calls).
 */
void
relay_finish(struct rcall *rc, int failed)
{
	struct call_end		 ce;
	struct call_done	 cd;
	struct timespec		 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (rc->rd != NULL)
		rc->redacted += redact_count(rc->rd);
	/* The vault's own request: its answer, no call record. */
	if (rc->fetch != NULL) {
		rfetch_done(rc);
		relay_free(rc);
		return;
	}
	memset(&cd, 0, sizeof(cd));
	cd.callid = rc->callid;
	cd.status = rc->status;
	cd.refused = rc->refused;
	cd.duration_ms = (now.tv_sec - rc->start.tv_sec) * 1000 +
	    (now.tv_nsec - rc->start.tv_nsec) / 1000000;
	cd.bytes = rc->bytes;
	cd.redacted = rc->redacted;
	if (imsgev_compose(&iev_vaults[rc->worker], IMSG_CALL_DONE, 0, -1, &cd,
	    sizeof(cd)) == -1)
		fatal("%s: compose", __func__);
	imsgev_flush(&iev_vaults[rc->worker]);
	if (rc->sink != NULL) {
		rc->sink->end(rc, failed);
		relay_free(rc);
		return;
	}
	memset(&ce, 0, sizeof(ce));
	ce.redacted = rc->redacted;
	ce.failed = failed;
	if (imsgev_compose(&iev_frontend, IMSG_CALL_END, rc->reqid, -1, &ce,
	    sizeof(ce)) == -1)
		fatal("%s: compose", __func__);
	relay_free(rc);
}

static void
relay_free(struct rcall *rc)
{
	size_t	 i;

	TAILQ_REMOVE(&rcalls, rc, entry);
	ncalls--;
	free(rc->method);
	if (rc->url != NULL)
		freezero(rc->url, strlen(rc->url));
	for (i = 0; i < rc->nheaders; i++)
		freezero(rc->headers[i], strlen(rc->headers[i]));
	free(rc->headers);
	if (rc->body != NULL)
		freezero(rc->body, rc->bodylen + 1);
	if (rc->head != NULL)
		freezero(rc->head, rc->headsize);
	if (rc->rd != NULL)
		redact_free(rc->rd);
	rdec_free(rc->dec);
	if (rc->stalled)		/* its next turn goes with it */
		evtimer_del(&rc->stall);
	if (rc->waiting)
		rcache_forget(rc);
	rcache_put(rc->rset);
	rfetch_free(rc->fetch);
	freezero(rc, sizeof(*rc));
}

/* Vault worker's channel (relay_fetch.c answers there). */
struct imsgev *
relay_vault(int worker)
{
	if (worker < 0 || worker >= nvaults)
		fatalx("%s: no vault worker %d", __func__, worker);
	return (&iev_vaults[worker]);
}

/* A blob to a vault worker (a run's request, for its verdict). */
void
relay_vault_send(int worker, uint32_t type, uint32_t id, const void *head,
    size_t headlen, const void *data, size_t len)
{
	if (worker < 0 || worker >= nvaults)
		fatalx("%s: no vault worker %d", __func__, worker);
	if (imsgev_send_blob(&iev_vaults[worker], type, id, head, headlen,
	    data, len) == -1)
		fatal("%s: send", __func__);
}

/* How a request that never went upstream ended, for its record. */
void
relay_vault_done(int worker, const struct call_done *cd)
{
	if (worker < 0 || worker >= nvaults)
		fatalx("%s: no vault worker %d", __func__, worker);
	if (imsgev_compose(&iev_vaults[worker], IMSG_CALL_DONE, 0, -1, cd,
	    sizeof(*cd)) == -1)
		fatal("%s: compose", __func__);
}

/*
 * The egress harness (regress/unit/egress_harness.c) stands for vault
 * worker 0 on fd: what the relay sends it and its answers go through the
 * relay's own channel code and dispatch table.
 */
void
relay_test_vault(int fd)
{
	imsgev_init(&iev_vaults[0], fd, PROC_WORKER(0), "vault 0",
	    relay_dispatch, relay_closed, NULL);
	iev_vaults[0].kind = PROC_VAULT;
	nvaults = 1;
	/* Names from the hosts file only (localhost). */
	if ((dns = evdns_base_new(proc_base, 0)) == NULL)
		fatalx("evdns_base_new");
	evdns_base_load_hosts(dns, "/etc/hosts");
}

/* tregd -T relay: the real filter, then what it must refuse. */
int
relay_selftest(void)
{
	return (sandbox_selftest("relay"));
}
