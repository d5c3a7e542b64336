/*
 * The egress proxy of keyless runs (SPEC 6a), in the relay process.
 *
 * Two halves meet here:
 *   egress_listen.c  a run's listeners, handed over by exec
 *                    (IMSG_EGRESS_LISTEN) and closed at its end
 *                    (IMSG_EGRESS_END); accepts connections within the
 *                    per-run cap ("run egress connections");
 *   egress_proxy.c   what a run may reach and with what
 *                    (IMSG_EGRESS_GRANT from the vault), and each
 *                    accepted connection: CONNECT or a plain proxy
 *                    request, TLS with a leaf of the run CA,
 *                    substitution, deny rules, a call record, upstream;
 *   egress_pass.c    a passthrough grant's TLS, spliced unread.
 * A run is known by the vault's run id.  Its grant and its listeners
 * arrive on two channels in either order: a listener accepts only once
 * the grant is there.
 */

#ifndef EGRESS_H
#define EGRESS_H

#include <sys/queue.h>

#include <stdint.h>

struct egress_grant;		/* tregd.h, in egress_proxy.c's grant */
struct egress_conn;		/* egress_proxy.c */

struct egress_lsn {
	TAILQ_ENTRY(egress_lsn)	 entry;
	struct egress_run	*run;
	struct event		 ev;
	int			 fd;
	uint16_t		 port;
	uint16_t		 kind;	/* EGRESS_PROXY, EGRESS_TRANSPARENT */
};

struct egress_run {
	TAILQ_ENTRY(egress_run)	 entry;
	uint32_t		 runid;
	TAILQ_HEAD(, egress_lsn) lsns;
	struct egress_grant	*grant;		/* NULL until the vault's */
	TAILQ_HEAD(, egress_conn) conns;
	unsigned int		 nconns;	/* open, against the cap */
	int			 ended;		/* exec said so */
};

/* egress_listen.c */
struct egress_run *egress_run_get(uint32_t, int);	/* 1: make it */
void	 egress_listen_add(uint32_t, uint16_t, uint16_t, int);
void	 egress_run_end(uint32_t);
void	 egress_run_ready(struct egress_run *);	/* its grant arrived */
void	 egress_conn_closed(struct egress_run *);	/* nconns-- */

/* egress_proxy.c */
void	 egress_conn_start(struct egress_run *, int, uint16_t, uint16_t);
void	 egress_run_free(struct egress_run *);	/* grant and connections */
/* from the vault (relay.c's dispatch): worker, head, packed data */
#define EGRESS_GRANT_MAX	((size_t)REDSET_MAX * 8 * SECRET_LEN_MAX)
#define EGRESS_VERDICT_MAX	4096
void	 egress_grant_recv(int, const void *, const char *, size_t);
void	 egress_verdict_recv(int, const void *, const char *, size_t);
void	 egress_revoke(int, uint32_t);

#endif /* EGRESS_H */
