/*
 * egress_harness: the relay's egress proxy (relay/egress_proxy.c,
 * egress_req.c) alone, for egress_proxy_test.  It links the relay's own
 * code and stands for the rest: for vault worker 0 on a socketpair (the
 * relay's channel code and dispatch table on the other end: it sends
 * two runs' grants, records every IMSG_EGRESS_CALL and IMSG_CALL_DONE in
 * DIR/calls and answers the verdicts) and for egress_listen.c (it
 * listens on loopback ports and hands each accepted connection to
 * egress_conn_start() as a run's listener would).
 *
 * Usage: egress_harness DIR UPPORT [HTTPPORT]
 *   DIR/up-ca.pem     the upstream's CA (as `relay ca')
 *   DIR/runca.pem     written: the run CA's certificate
 *   DIR/ports         written last: "PROXY TRANSPARENT PROXY2 PLAIN"
 *                     (PLAIN: transparent on HTTPPORT, 0 without it)
 *   DIR/calls         one line per message from the relay
 * A verdict: DELETE is refused (403, as a deny rule); a path starting
 * with /novault gets none.  SIGUSR1: run 1's grant is revoked (the vault
 * says the run ended).
 */

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <err.h>
#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "pack.h"
#include "proc.h"
#include "redact_cache.h"
#include "relay.h"

#define REAL_KEY	"sk_live_REALKEY0123456789abcdef"
#define PH_KEY		"sk_live_PHkey0123456789abcdefgh"
#define REAL_ID		"AKIAREALKEYID0000000"
#define PH_ID		"AKIAPHKEYIDPH0000000"
#define REAL_SECRET	"realSecretKey1111111111111111111111111111"
#define PH_SECRET	"phSecretKey22222222222222222222222222222"
#define RUN2_REAL	"sk_live_RUN2REAL0123456789abcd"
#define RUN2_PH		"sk_live_RUN2PH0123456789abcdef"

static struct imsgbuf	 vb;		/* the vault's end */
static struct event	 vev;
static FILE		*calls;
static uint32_t		 callids;
static char		*blob;		/* an IMSG_EGRESS_CALL being read */
static size_t		 bloblen, blobhave;
static struct egress_call bcall;

static void
vault_send(uint32_t type, uint32_t id, const void *head, size_t headlen,
    const void *data, size_t len)
{
	struct blob_hdr	 bh = { len };
	struct iovec	 iov[2] = { { &bh, sizeof(bh) },
			    { (void *)head, headlen } };

	if (imsg_composev(&vb, type, id, -1, iov, 2) == -1 ||
	    (len > 0 && imsg_compose(&vb, IMSG_DATA, id, -1, data, len) ==
	    -1) || imsgbuf_flush(&vb) == -1)
		err(1, "vault send");
}

static void
grant(uint32_t runid, const char *const *hosts, const char *const *vals,
    const char *const *secrets)
{
	struct egress_grant	 g;
	struct pack		 pk;
	size_t			 n, i;

	memset(&g, 0, sizeof(g));
	g.runid = runid;
	g.timeout_s = 300;
	g.allow_private = 1;
	g.maxconns = 32;
	g.org_id = 1;
	g.user_id = 1;
	g.tool_id = runid;
	g.audit_id = runid;
	pack_init(&pk);
	for (n = 0; hosts[n] != NULL; n++)
		;
	pack_u32(&pk, n);
	for (i = 0; i < n; i++)
		pack_str(&pk, hosts[i]);
	for (n = 0; vals[n] != NULL; n += 4)
		;
	pack_u32(&pk, n / 4);
	for (i = 0; i < n; i += 4) {
		pack_bytes(&pk, vals[i], strlen(vals[i]));
		pack_bytes(&pk, vals[i + 1], strlen(vals[i + 1]));
		pack_str(&pk, vals[i + 2]);
		pack_str(&pk, vals[i + 3]);
	}
	for (n = 0; secrets[n] != NULL; n++)
		;
	pack_u32(&pk, n);
	for (i = 0; i < n; i++)
		pack_bytes(&pk, secrets[i], strlen(secrets[i]));
	pack_str(&pk, runid == 1 ? "uptool" : "othertool");
	vault_send(IMSG_EGRESS_GRANT, runid, &g, sizeof(g), pk.buf, pk.len);
	pack_free(&pk);
}

static void
verdict(const struct egress_call *c, int ok, int status, const char *detail)
{
	struct egress_verdict	 v;
	struct pack		 pk;

	memset(&v, 0, sizeof(v));
	v.runid = c->runid;
	v.reqid = c->reqid;
	v.ok = ok;
	v.status = status;
	v.callid = ok ? ++callids : 0;
	pack_init(&pk);
	pack_str(&pk, detail);
	vault_send(IMSG_EGRESS_VERDICT, c->reqid, &v, sizeof(v), pk.buf,
	    pk.len);
	pack_free(&pk);
}

/* A whole IMSG_EGRESS_CALL: recorded, judged. */
static void
call(void)
{
	struct unpack	 u;
	const char	*m, *h, *p, *d;

	unpack_init(&u, blob, bloblen);
	m = unpack_str(&u);
	h = unpack_str(&u);
	p = unpack_str(&u);
	d = unpack_str(&u);
	if (unpack_done(&u) != 0)
		errx(1, "a malformed IMSG_EGRESS_CALL");
	fprintf(calls, "CALL run=%u method=%s host=%s port=%u path=%s "
	    "refused=%u status=%u detail=%s\n", bcall.runid, m, h, bcall.port,
	    p, bcall.refused, bcall.status, d);
	fflush(calls);
	if (bcall.refused)
		verdict(&bcall, 0, bcall.status, "");
	else if (strcmp(m, "DELETE") == 0)
		verdict(&bcall, 0, 403, "denied by rule 7: no DELETE here");
	else if (strncmp(p, "/novault", 8) != 0)
		verdict(&bcall, 1, 0, "");
}

static void
vault_read(int fd, short ev, void *arg)
{
	struct imsg		 imsg;
	struct call_done	 cd;
	struct blob_hdr		 bh;
	ssize_t			 n;

	if ((n = imsgbuf_read(&vb)) == -1 && errno != EAGAIN)
		err(1, "vault read");
	if (n == 0)
		exit(0);
	while (imsg_get(&vb, &imsg) > 0) {
		switch (imsg.hdr.type) {
		case IMSG_EGRESS_CALL:
			if (imsg.datalen != sizeof(bh) + sizeof(bcall))
				errx(1, "IMSG_EGRESS_CALL of a bad size");
			memcpy(&bh, imsg.data, sizeof(bh));
			memcpy(&bcall, (char *)imsg.data + sizeof(bh),
			    sizeof(bcall));
			free(blob);
			bloblen = bh.datalen;
			blobhave = 0;
			if ((blob = malloc(bloblen + 1)) == NULL)
				err(1, NULL);
			break;
		case IMSG_DATA:
			n = imsg.datalen;
			if (blob == NULL || blobhave + n > bloblen)
				errx(1, "a stray IMSG_DATA");
			memcpy(blob + blobhave, imsg.data, n);
			if ((blobhave += n) == bloblen)
				call();
			break;
		case IMSG_CALL_DONE:
			if (imsg.datalen != sizeof(cd))
				errx(1, "IMSG_CALL_DONE of a bad size");
			memcpy(&cd, imsg.data, sizeof(cd));
			fprintf(calls, "DONE callid=%u status=%u refused=%u "
			    "bytes=%llu redacted=%u\n", cd.callid, cd.status,
			    cd.refused, (unsigned long long)cd.bytes,
			    cd.redacted);
			fflush(calls);
			break;
		default:
			errx(1, "the relay sent imsg %u", imsg.hdr.type);
		}
		imsg_free(&imsg);
	}
}

/* SIGUSR1: IMSG_EGRESS_REVOKE for run 1, as its worker sends it. */
static void
grant_revoke(int sig, short ev, void *arg)
{
	struct egress_end	 ee = { 1 };

	if (imsg_compose(&vb, IMSG_EGRESS_REVOKE, 0, -1, &ee, sizeof(ee)) ==
	    -1 || imsgbuf_flush(&vb) == -1)
		err(1, "revoke");
	fprintf(calls, "REVOKE run=1\n");
	fflush(calls);
}

struct lsn {
	struct event	 ev;
	uint32_t	 runid;
	uint16_t	 port;		/* as the run sees it */
	uint16_t	 kind;
	uint16_t	 real;		/* where it listens */
};

/* As egress_listen.c: an accepted connection, counted, to the proxy. */
static void
lsn_accept(int fd, short ev, void *arg)
{
	struct lsn		*l = arg;
	struct egress_run	*run;
	int			 s;

	if ((s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) ==
	    -1)
		return;
	run = egress_run_get(l->runid, 0);
	if (run == NULL || run->grant == NULL) {
		close(s);
		return;
	}
	run->nconns++;
	egress_conn_start(run, s, l->port, l->kind);
}

static void
lsn_open(struct lsn *l, uint32_t runid, uint16_t port, uint16_t kind)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 fd, one = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ==
	    -1 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 1024) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1)
		err(1, "listen");
	l->runid = runid;
	l->port = port;
	l->kind = kind;
	l->real = ntohs(sin.sin_port);
	event_set(&l->ev, fd, EV_READ | EV_PERSIST, lsn_accept, l);
	event_add(&l->ev, NULL);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE	*f;
	char	*buf;
	long	 n;

	if ((f = fopen(path, "r")) == NULL || fseek(f, 0, SEEK_END) == -1 ||
	    (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) == -1 ||
	    (buf = malloc(n + 1)) == NULL || fread(buf, 1, n, f) != (size_t)n)
		err(1, "%s", path);
	fclose(f);
	buf[n] = '\n';
	*len = n + 1;
	return (buf);
}

/* A port given on the command line (the test's), or exit. */
static uint16_t
port_arg(const char *s)
{
	const char	*errstr;
	long long	 n;

	n = strtonum(s, 1, 65535, &errstr);
	if (errstr != NULL)
		errx(1, "port %s is %s", s, errstr);
	return ((uint16_t)n);
}

/*
 * The relay's side as tregd sets it up: the upstream CA (DIR/up-ca.pem),
 * the run CA written to DIR/runca.pem for the clients, the call records
 * to DIR/calls, and a vault on a socketpair (vault_read answers it).
 */
static void
harness_setup(const char *dir)
{
	char	 path[1024], *ca, *pem;
	size_t	 calen, pemlen;
	int	 sv[2];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/up-ca.pem", dir);
	strlcpy(relay_conf.relay_ca, path, sizeof(relay_conf.relay_ca));
	ca = slurp(path, &calen);
	rhttp_init(ca, calen, 0);
	free(ca);
	if (egress_ca_init() == -1 || (pem = egress_ca_pem(&pemlen)) == NULL)
		errx(1, "run CA");
	snprintf(path, sizeof(path), "%s/runca.pem", dir);
	if ((f = fopen(path, "w")) == NULL || fwrite(pem, 1, pemlen, f) !=
	    pemlen || fclose(f) != 0)
		err(1, "%s", path);
	snprintf(path, sizeof(path), "%s/calls", dir);
	if ((calls = fopen(path, "a")) == NULL)
		err(1, "%s", path);
	rcache_init();
	rcache_start();

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == -1)
		err(1, "socketpair");
	relay_test_vault(sv[0]);
	if (imsgbuf_init(&vb, sv[1]) == -1)
		err(1, "imsgbuf_init");
	event_set(&vev, sv[1], EV_READ | EV_PERSIST, vault_read, NULL);
	event_add(&vev, NULL);
}

int
main(int argc, char *argv[])
{
	struct lsn	 lp, lt, lp2, lh2;
	struct event	 sigev;
	char		 path[1024], hp[64], tp[64], hh[64], lh[64];
	FILE		*f;
	const char	*hosts1[6], *hosts2[] = { NULL, NULL };
	const char	*vals1[] = {
		PH_KEY, REAL_KEY, "", "API_KEY",
		PH_ID, REAL_ID, "aws-sigv4", "AWS_ACCESS_KEY_ID",
		PH_SECRET, REAL_SECRET, "aws-sigv4", "AWS_SECRET_ACCESS_KEY",
		NULL };
	const char	*secrets1[] = { REAL_KEY, REAL_ID, REAL_SECRET, NULL };
	const char	*vals2[] = { RUN2_PH, RUN2_REAL, "", "API_KEY", NULL };
	const char	*secrets2[] = { RUN2_REAL, NULL };

	if (argc < 3)
		errx(2, "usage: egress_harness DIR UPPORT [HTTPPORT]");
	signal(SIGPIPE, SIG_IGN);
	log_init(1, 1);
	proc_base = event_init();
	relay_conf.relay_timeout_connect = 5;
	relay_conf.relay_timeout_total = 30;
	harness_setup(argv[1]);

	snprintf(hp, sizeof(hp), "127.0.0.1:%s", argv[2]);
	snprintf(lh, sizeof(lh), "localhost:%s", argv[2]);
	snprintf(tp, sizeof(tp), "*.localhost:%s", argv[2]);
	hosts1[0] = hp;
	hosts1[1] = lh;
	hosts1[2] = tp;
	hosts1[3] = NULL;
	if (argc > 3) {
		snprintf(hh, sizeof(hh), "http://127.0.0.1:%s", argv[3]);
		hosts1[3] = hh;
		hosts1[4] = NULL;
	}
	hosts2[0] = hp;
	grant(1, hosts1, vals1, secrets1);
	grant(2, hosts2, vals2, secrets2);
	lsn_open(&lp, 1, EGRESS_PROXY_PORT, EGRESS_PROXY);
	lsn_open(&lt, 1, port_arg(argv[2]), EGRESS_TRANSPARENT);
	lsn_open(&lp2, 2, EGRESS_PROXY_PORT, EGRESS_PROXY);
	memset(&lh2, 0, sizeof(lh2));
	if (argc > 3)
		lsn_open(&lh2, 1, port_arg(argv[3]), EGRESS_TRANSPARENT);

	snprintf(path, sizeof(path), "%s/ports.tmp", argv[1]);
	if ((f = fopen(path, "w")) == NULL)
		err(1, "%s", path);
	fprintf(f, "%u %u %u %u\n", lp.real, lt.real, lp2.real, lh2.real);
	fclose(f);
	snprintf(hp, sizeof(hp), "%s/ports", argv[1]);
	if (rename(path, hp) == -1)
		err(1, "rename");
	signal_set(&sigev, SIGUSR1, grant_revoke, NULL);
	signal_add(&sigev, NULL);
	event_dispatch();
	return (0);
}
