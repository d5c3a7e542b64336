/*
 * The relay process's internal interface (relay.c: the process, its
 * channels, name resolution and the SSRF guard; relay_http.c: tregd's
 * own HTTP/1.1 client on libevent bufferevents, its connections and
 * their pool; relay_resp.c: reading an answer, head and body;
 * relay_decode.c: the codings of an answer's body, undone).
 */

#ifndef RELAY_H
#define RELAY_H

#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <stdint.h>
#include <time.h>

#include <event.h>
#include <openssl/ssl.h>

#include "tregd.h"

#define RELAY_CALLS_MAX		1024	/* in flight at once */
#define RELAY_HEAD_MAX		(128 * 1024)	/* an upstream head, 1xx ones too */
#define RELAY_ADDRS_MAX		16	/* pinned per call */
#define RELAY_HEADERS_MAX	(100 + BINDINGS_MAX)	/* of a request */
#define RELAY_TURN		(256 * 1024)	/* decoded bytes a turn */
#define RELAY_BACKLOG_MAX	32	/* messages to the frontend, queued */
#define RDEC_CODINGS_MAX	4	/* codings on one answer */

struct redact_set;
struct redact;
struct rcache;
struct evdns_getaddrinfo_request;
struct evutil_addrinfo;
struct rdec;

/* How the body of an answer ends (RB_DRAIN: it did, the decoder not). */
enum rbody { RB_NONE, RB_LENGTH, RB_CHUNKED, RB_CLOSE, RB_DRAIN };
/* Where a chunked body is. */
enum rchunk { RC_SIZE, RC_DATA, RC_CRLF, RC_TRAILER };

struct rconn;
struct rcall;
struct rfetch;

/*
 * Where a call's answer goes when it is not the frontend's: the egress
 * proxy writes it to a run's connection (egress_req.c).  The same reading
 * (relay_resp.c) and the same client (relay_http.c) serve both.
 *   request  the request to the upstream, written by the owner (its
 *            body streamed from the run);
 *   written  the upstream took what was queued (more body may go);
 *   head, body, end  the answer, as relay_send_head/body, relay_finish;
 *   refuse   tregd's own refusal (detail: one line, no secret);
 *   backlog  1: the run's side has too much queued, wait.
 *   tunnel   not NULL: a passthrough tunnel's (egress_pass.c), which
 *            has only end, refuse and this: the checked addresses are
 *            in the call, the owner connects and splices itself (no
 *            HTTP, no masking); the call ends when it says.
 */
struct rsink {
	void	(*request)(struct rcall *, struct evbuffer *);
	void	(*written)(struct rcall *);
	void	(*head)(struct rcall *, int, const char *, size_t);
	void	(*body)(struct rcall *, const void *, size_t);
	void	(*end)(struct rcall *, int);
	void	(*refuse)(struct rcall *, int, const char *);
	int	(*backlog)(struct rcall *);
	void	(*tunnel)(struct rcall *);
};

/* An upstream's address (IPv4 or IPv6, with the port). */
union raddr {
	struct sockaddr		 sa;
	struct sockaddr_in	 sin;
	struct sockaddr_in6	 sin6;
};

struct rcall {
	TAILQ_ENTRY(rcall)	 entry;
	uint32_t		 reqid;		/* the frontend's */
	uint32_t		 callid;	/* the vault's */
	int			 worker;	/* the vault worker that sent it */
	const struct rsink	*sink;		/* NULL: the frontend's */
	struct rfetch		*fetch;		/* the vault's own (relay_fetch.c) */
	void			*sink_arg;
	uint32_t		 runid;		/* a run's request: its pool */
	int			 total_s;	/* its timeout, 0: the conf's */
	int			 allow_private;
	int64_t			 org_id;	/* for the request log */
	int64_t			 user_id;
	char			*method;
	char			*url;
	int			 tls;		/* https */
	char			 host[HOST_LEN_MAX];	/* no brackets */
	int			 literal;	/* the host is an address */
	long			 port;
	const char		*authority;	/* in url: the Host header */
	size_t			 authlen;
	const char		*target;	/* in url: path and query */
	char			**headers;	/* "Name: value" */
	size_t			 nheaders;
	char			*body;
	size_t			 bodylen;
	const struct redact_set	*set;
	struct rcache		*rset;		/* the cache's, held */
	int			 waiting;	/* for it to be compiled */
	struct redact		*rd;
	struct evdns_getaddrinfo_request *dns;
	int			 resolving;	/* until relay_resolved_go() */
	int			 dns_done;
	int			 dns_err;
	struct evutil_addrinfo	*dns_res;
	union raddr		 addrs[RELAY_ADDRS_MAX];	/* checked */
	int			 naddrs;
	int			 nextaddr;	/* the next one to try */
	/* relay_http.c: the transfer. */
	struct rconn		*conn;
	int			 cfd;		/* connecting, or -1 */
	struct event		 cev;		/* its connect */
	struct event		 tmo_connect;
	struct event		 tmo_total;
	int			 timers;	/* added: deleted at the end */
	int			 head_req;	/* HEAD: no body comes */
	int			 retried;	/* once, on a reused connection */
	int			 got;		/* a byte of the answer came */
	enum rbody		 mode;
	enum rchunk		 chunk;
	uint64_t		 left;		/* of the length or the chunk */
	int			 keepalive;
	size_t			 trailerlen;
	char			*head;		/* response header lines */
	size_t			 headlen;
	size_t			 headsize;
	size_t			 headseen;	/* 1xx heads, empty lines too */
	int			 status;
	int			 head_sent;
	int			 paused;
	int			 eof;		/* the upstream closed */
	struct rdec		*dec;		/* the codings to undo, or NULL */
	size_t			 budget;	/* decoded bytes left this turn */
	int			 stalled;	/* waits for the next turn */
	struct event		 stall;
	int			 cancelled;
	uint32_t		 refused;	/* enum call_refusal */
	uint64_t		 bytes;
	uint32_t		 redacted;
	struct timespec		 start;
};
TAILQ_HEAD(rcall_list, rcall);

/* relay.c */
struct unpack;
int	 relay_unpack_request(struct rcall *, struct unpack *);
extern struct tregd_conf	 relay_conf;
int	 relay_addr_ok(const struct rcall *, const struct sockaddr *);
void	 relay_cork(int);
void	 relay_send_head(struct rcall *, int, int, const char *, size_t);
void	 relay_send_body(struct rcall *, const void *, size_t);
void	 relay_finish(struct rcall *, int);
void	 relay_refuse(struct rcall *, int, uint32_t, const char *);
int	 relay_backlog(struct rcall *);
void	 relay_call(struct rcall *);
void	 relay_cancel(struct rcall *);
void	 relay_vault_send(int, uint32_t, uint32_t, const void *, size_t,
	    const void *, size_t);
void	 relay_vault_done(int, const struct call_done *);
void	 relay_test_vault(int);
struct imsgev *relay_vault(int);

/* relay_fetch.c: the vault's own requests (credential health) */
void	 rfetch_imsg_start(struct imsgev *, struct imsg *);
void	 rfetch_head(struct rcall *, int, int, const char *, size_t);
void	 rfetch_body(struct rcall *, const void *, size_t);
void	 rfetch_done(struct rcall *);
void	 rfetch_free(struct rfetch *);

/* relay_http.c */
void	 rhttp_init(const char *, size_t, size_t);
int	 rhttp_start(struct rcall *);
int	 rhttp_socket(struct rcall *, struct event *,
	    void (*)(int, short, void *), void *);
int	 rhttp_connect_error(int);
void	 rhttp_stop(struct rcall *);
void	 rhttp_pause(struct rcall *, int);
void	 rhttp_end(struct rcall *, int);
void	 rhttp_fail(struct rcall *, int, const char *);
struct evbuffer *rhttp_input(struct rcall *);
struct evbuffer *rhttp_output(struct rcall *);
void	 rhttp_drop_run(uint32_t);

/* relay_resp.c */
void	 rresp_input(struct rcall *);
int	 rresp_eof(struct rcall *);
void	 rresp_flush(struct rcall *);

/* relay_decode.c */
enum { RDEC_DONE, RDEC_MORE, RDEC_ERR };
typedef void (*rdec_out_fn)(void *, const void *, size_t);
struct rdec	*rdec_new(void);
void	 rdec_free(struct rdec *);
int	 rdec_header(struct rdec *, int, const char *, size_t);
const char *rdec_refused(const struct rdec *);
int	 rdec_chunked(const struct rdec *);
int	 rdec_active(const struct rdec *);
int	 rdec_write(struct rdec *, const void *, size_t, size_t *, size_t *,
	    rdec_out_fn, void *);
int	 rdec_pending(const struct rdec *);
int	 rdec_finish(struct rdec *, size_t *, rdec_out_fn, void *);

/* egress_subst.c: a keyless run's placeholders, swapped on the way out */
struct ebuf {			/* grows zeroed: it may hold values */
	char		*p;
	size_t		 len, cap;
};
void	 ebuf_add(struct ebuf *, const char *, size_t);
int	 hexdigit(int);
struct subst {
	const char	*ph;		/* the placeholder the run holds */
	size_t		 phlen;
	const char	*val;		/* the value it stands for */
	size_t		 vallen;
};
char	*egress_subst_target(const struct subst *, size_t, const char *,
	    size_t, size_t *, int *);
char	*egress_subst_header(const struct subst *, size_t, const char *,
	    const char *, size_t, size_t *, int *);

/* egress_ca.c: the run CA and its leaves (SPEC 6a "TLS") */
#define EGRESS_LEAVES_MAX	1024	/* hosts whose leaf is kept */
int	 egress_ca_init(void);
char	*egress_ca_pem(size_t *);
int	 egress_ca_use(SSL *, const char *);
void	 egress_ca_free(void);

/* egress_sigv4.c: AWS Signature Version 4, checked and made again */
#define SIGV4_FIELD_MAX		1024	/* Credential, SignedHeaders */
#define SIGV4_QUERY_MAX		1024	/* query parameters signed */
struct sigv4_hdr {
	const char	*name;
	const char	*value;
};
struct sigv4_req {
	const char		*method;
	const char		*path;		/* as sent, still encoded */
	const char		*query;		/* as sent, without '?' */
	const struct sigv4_hdr	*hdrs;		/* as sent */
	size_t			 nhdrs;
	const char		*payload_hash;	/* hex, or UNSIGNED-PAYLOAD */
	int			 presigned;	/* the query holds it */
};
struct sigv4_auth {
	char		 key_id[128];
	char		 date[9];		/* YYYYMMDD */
	char		 region[64];
	char		 service[64];
	char		 signed_headers[SIGV4_FIELD_MAX];
	char		 signature[65];
};
int	 sigv4_parse_auth(const char *, struct sigv4_auth *);
int	 sigv4_parse_scope(char *, struct sigv4_auth *);
int	 sigv4_sign(const struct sigv4_req *, const struct sigv4_auth *,
	    const char *, const char *, size_t, char [65]);
void	 sigv4_hmac(unsigned char [32], const unsigned char *, size_t,
	    const char *);
int	 sigv4_equal(const char *, const char *);

#endif /* RELAY_H */
