/*
 * The egress proxy's own interface: egress_proxy.c (a run's grant, its
 * connections, their request heads, the vault's verdicts) and
 * egress_req.c (one admitted request: substitution, SigV4, the upstream
 * through the relay's client, the answer back to the run).
 */

#ifndef EGRESS_INT_H
#define EGRESS_INT_H

#include <sys/queue.h>

#include <stdint.h>

#include <event.h>
#include <openssl/ssl.h>

#include "http_parse.h"
#include "relay.h"

#define EGRESS_HOSTS_MAX	256	/* egress list entries of a grant */
#define EGRESS_SUBST_MAX	REDSET_MAX	/* placeholders of a grant */
#define EGRESS_GRANT_SLACK	60	/* seconds past the run's timeout */
#define EGRESS_VERDICT_SECS	10	/* the vault answers within */
#define EGRESS_IDLE_SECS	60	/* a kept connection, no request */
#define EGRESS_HEAD_SECS	30	/* a request head comes within */
#define EGRESS_OUT_HIGH		(256 * 1024)	/* queued for the run */
#define EGRESS_UP_HIGH		(256 * 1024)	/* queued for the upstream */
#define EGRESS_SIGBODY_MAX	(8 * 1024 * 1024)	/* hashed for SigV4 */

/* A value of the grant: what the run holds, what it stands for. */
struct egress_val {
	char		*ph;
	size_t		 phlen;
	char		*val;
	size_t		 vallen;
	int		 sigv4;		/* sign "aws-sigv4" */
	char		*name;		/* env name, "" none */
};

/*
 * A run's grant: egress_run.grant points at its g (what egress_listen.c
 * reads) once its redaction set is ready; egrant_of() finds the rest.
 */
struct egrant {
	TAILQ_ENTRY(egrant)	 entry;
	uint32_t		 runid;
	int			 worker;	/* its vault worker */
	struct egress_grant	 g;		/* as the vault sent it */
	char			**hosts;
	size_t			 nhosts;
	struct egress_val	*vals;
	struct subst		*pairs;		/* egress_subst.c's view */
	size_t			 nvals;
	struct rcache		*rset;		/* the answers' masks, held */
	int			 waiting;	/* for it to be compiled */
	struct event		 expire;
	struct egress_run	*run;
	char			 tool[128];	/* its name, for the texts */
};

enum econn_state {
	EC_FIRST,		/* transparent: its first byte says TLS or not */
	EC_SNI,			/* passthrough: a ClientHello, read unanswered */
	EC_PASSUP,		/* passthrough: the upstream is being reached */
	EC_SPLICE,		/* passthrough: bytes both ways, unread */
	EC_TLS,			/* its handshake */
	EC_HEAD,		/* waiting for a request head */
	EC_VERDICT,		/* a request waits for the vault */
	EC_BODYHASH,		/* a SigV4 request's body, to hash */
	EC_UPSTREAM,		/* a request is with the upstream */
	EC_CLOSING		/* the answer goes, then the close */
};

struct egress_req;

struct egress_conn {
	TAILQ_ENTRY(egress_conn) entry;
	struct egress_run	*run;
	struct bufferevent	*bev;
	SSL			*ssl;		/* inside TLS: the run's */
	uint16_t		 port;		/* the listener's */
	uint16_t		 kind;
	enum econn_state	 state;
	int			 tunnel;	/* after CONNECT */
	char			 host[HOST_LEN_MAX];	/* CONNECT's, SNI's */
	uint16_t		 hport;
	struct egress_req	*req;		/* the request in flight */
	struct event		 tmo;
	int			 closing_ticks;	/* waiting for the output */
	/* EC_FIRST: the socket, before a bufferevent holds it. */
	int			 fd;
	struct event		 first;
	/* Passthrough (egress_pass.c): the upstream, spliced. */
	struct rcall		*rc;		/* its record, its addresses */
	int			 upfd;		/* connecting, or -1 */
	struct event		 upev;
	struct bufferevent	*up;
	int			 answered;	/* CONNECT's 200 went */
};

/* One request of a run's connection, until its answer went. */
struct egress_req {
	TAILQ_ENTRY(egress_req)	 entry;		/* waiting for a verdict */
	uint32_t		 reqid;
	struct egress_conn	*ec;		/* NULL: the run went */
	struct egrant		*gr;
	uint32_t		 runid;
	int			 worker;
	char			*head;		/* the run's, as read */
	size_t			 headlen;
	struct http_head	 h;
	struct http_hdr		 hdrs[HTTP_NHEADERS_MAX + 1];
	char			 method[32];	/* the effective one */
	char			 host[HOST_LEN_MAX];
	uint16_t		 port;
	int			 https;
	/* The body: from the run to the upstream, streamed. */
	int			 body;		/* there is one */
	uint64_t		 left;		/* of the length or chunk */
	int			 chunk;		/* enum rchunk */
	int			 body_done;
	int			 head_out;	/* the upstream has its head */
	int			 headonly;	/* HEAD: no body answers */
	char			*bodyhash;	/* SigV4 without the header */
	/* The answer to the run. */
	int			 chunked_out;
	int			 close;		/* the connection ends after */
	struct rcall		*rc;
	uint32_t		 callid;
	int			 waiting;	/* for its verdict (listed) */
	int			 sigv4;		/* 1: header, 2: presigned */
	int			 tunnel;	/* passthrough: the connection's */
	struct event		 tmo;		/* the verdict's */
	struct ebuf		 out;		/* the upstream request head */
};

/* egress_proxy.c */
struct egrant *egrant_of(const struct egress_run *);
int	 egress_host_ok(const struct egrant *, const char *, uint16_t, int);
void	 egress_answer(struct egress_conn *, int, const char *, int);
void	 egress_audit_refusal(struct egress_conn *, const char *,
	    const char *, uint16_t, const char *, const char *, int);
int	 egress_addr_on_port(const struct egrant *, uint16_t, char *,
	    size_t);
const char *egress_host_bare(const char *, char *, size_t);
struct egress_req *egress_req_new(struct egress_conn *);
void	 egress_conn_free(struct egress_conn *);
void	 egress_conn_next(struct egress_conn *);
void	 egress_conn_close(struct egress_conn *);
void	 egress_req_call(struct egress_req *);
void	 egress_req_free(struct egress_req *);
int	 egress_pathmask(const struct egrant *, const struct http_head *,
	    char *, size_t);

/* egress_aws.c: SigV4 checked, then made again with the real values */
#define AWS_KEY_ID	0
#define AWS_SECRET	1
const struct egress_val *egress_aws_val(const struct egrant *, int);
int	 egress_aws_detect(struct egress_req *, int *);
int	 egress_aws_check(const struct egress_req *);
int	 egress_aws_resign(const struct egress_req *, char *,
	    const struct sigv4_hdr *, size_t, struct ebuf *);

/* egress_pass.c: "tls": "passthrough", spliced unread */
int	 egress_pass_connect(struct egress_conn *, struct egress_req *);
void	 egress_pass_peek(struct egress_conn *);
void	 egress_pass_go(struct egress_req *);
void	 egress_pass_refuse(struct egress_conn *, int, const char *);
void	 egress_pass_pump(struct egress_conn *);
void	 egress_pass_written(struct egress_conn *);
void	 egress_pass_eof(struct egress_conn *);
void	 egress_pass_timeout(struct egress_conn *);
void	 egress_pass_free(struct egress_conn *);
int	 egress_pass_pending(const struct egress_conn *);

/* egress_req.c */
const struct http_hdr *egress_req_hdr(const struct egress_req *,
	    const char *);
char	*egress_hdr_dup(const struct http_hdr *);
int	 egress_method(const struct egress_req *, char *, size_t);
int	 egress_req_check(struct egress_req *);
struct rcall *egress_rcall(const struct egress_req *, const char *,
	    const struct rsink *, void *);
void	 egress_req_go(struct egress_req *);
void	 egress_req_abort(struct egress_req *);
void	 egress_req_pump(struct egress_req *);

#endif /* EGRESS_INT_H */
