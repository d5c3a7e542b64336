/*
 * vault_egress.c: the vault's side of a keyless run's egress (SPEC.md
 * section 6a, "Policy and audit").  The relay's egress proxy asks here
 * before each request a run's CLI makes goes upstream
 * (IMSG_EGRESS_CALL): the org's deny rules judge its method, host and
 * path as they judge /call (refused_by "policy", 403), and its call
 * record (where "run", the run's row, the host) is committed before the
 * verdict says go (fail closed: no record, 503, nothing sent).  A
 * request the proxy refused itself (a host off the list, a signature
 * that does not verify) is only put on record (refused_by "egress").
 * The end comes as IMSG_CALL_DONE and is appended as a relayed call's
 * (vault_call.c).  Egress requests do not count against daily call
 * caps: the run was counted as a run.
 *
 * The requests of one turn of the event loop are judged in one read
 * and written in one transaction, as /call's are, at the end of the
 * turn (egress_turn()), never in the middle of another request's.  A
 * run is known here from its grant (egress_run_start()) until exec says
 * it ended; a request for a run this worker does not know is refused
 * unrecorded.
 */

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event.h>

#include "pack.h"
#include "vault.h"

#define EGRESS_METHOD_MAX	32
#define EGRESS_PATH_MAX		1024	/* the audited path */
#define EGRESS_DETAIL_MAX	512

/* A run whose requests come here: who ran it, for their records. */
struct erun {
	TAILQ_ENTRY(erun)	 entry;
	uint32_t		 runid;
	int64_t			 audit_id;
	struct auth		 who;		/* org, user, email, client */
	int64_t			 project_id;	/* its tool's */
	char			 tool[NAME_LEN_MAX + 1];
};
TAILQ_HEAD(erun_list, erun);

/* A request of this turn. */
struct epend {
	TAILQ_ENTRY(epend)	 entry;
	struct egress_call	 c;
	struct erun		*run;		/* NULL: no run of ours */
	char			 method[EGRESS_METHOD_MAX + 1];
	char			 host[HOST_LEN_MAX + 8];
	char			 path[EGRESS_PATH_MAX + 1];
	char			 detail[EGRESS_DETAIL_MAX + 1];
	const char		*refused_by;	/* NULL: goes upstream */
	int			 status;	/* of a refusal */
	int64_t			 audit_id;	/* its record */
};
TAILQ_HEAD(epend_list, epend);

static struct erun_list	 eruns = TAILQ_HEAD_INITIALIZER(eruns);
/* Ended runs whose requests are still pending: freed once judged. */
static struct erun_list	 edead = TAILQ_HEAD_INITIALIZER(edead);
static struct epend_list epends = TAILQ_HEAD_INITIALIZER(epends);
static int		 nepends;
static struct event	 eturn_ev;
static int		 eturn_armed;

static struct erun	*erun_find(uint32_t);
static void		 egress_unpack(struct epend *, struct blob *);
static void		 egress_turn(int, short, void *);
static void		 egress_judge(struct epend *);
static int		 egress_write(void);
static int		 egress_row(struct epend *, const char *);
static void		 egress_answer(struct epend *, int);

static struct erun *
erun_find(uint32_t runid)
{
	struct erun	*r;

	TAILQ_FOREACH(r, &eruns, entry)
		if (r->runid == runid)
			return (r);
	return (NULL);
}

void
egress_run_start(const struct egress_who *w, const struct egress_grant *g,
    const void *pk, size_t len)
{
	struct erun	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		fatal("%s: calloc", __func__);
	r->runid = w->runid;
	r->audit_id = w->audit_id;
	/*
	 * Only who it is, for the deny rules and the records: its role and
	 * access were judged when the run started.  No role, no project:
	 * were this copy ever asked for access, it would grant nothing.
	 */
	r->who.role = ROLE_NONE;
	r->who.projects_scoped = 1;
	r->who.org_id = w->who->org_id;
	r->who.user_id = w->who->user_id;
	strlcpy(r->who.email, w->who->email, sizeof(r->who.email));
	strlcpy(r->who.client, w->who->client, sizeof(r->who.client));
	r->project_id = w->project_id;
	strlcpy(r->tool, w->tool, sizeof(r->tool));
	TAILQ_INSERT_TAIL(&eruns, r, entry);
	vault_egress_grant(g, pk, len);
}

/*
 * The run ended: its grant revoked.  Its requests still pending were
 * made while it lived: they are judged and recorded with the others of
 * the turn (not here: a run's end may be read in the middle of another
 * request's transaction), and the run forgotten after them.
 */
void
vault_egress_end(uint32_t runid)
{
	struct erun	*r;
	struct epend	*p;

	if ((r = erun_find(runid)) == NULL)
		return;
	vault_egress_revoke(runid);
	TAILQ_REMOVE(&eruns, r, entry);
	TAILQ_FOREACH(p, &epends, entry)
		if (p->run == r)
			break;
	if (p != NULL)
		TAILQ_INSERT_TAIL(&edead, r, entry);
	else
		free(r);
}

/*
 * The packed strings of an IMSG_EGRESS_CALL (tregd.h): method, host,
 * path, detail.  A relay that sends anything else is not reasoned with.
 */
static void
egress_unpack(struct epend *p, struct blob *b)
{
	struct unpack	 up;
	const char	*m, *h, *path, *d;

	memcpy(&p->c, b->head, sizeof(p->c));
	unpack_init(&up, b->data, b->datalen);
	m = unpack_str(&up);
	h = unpack_str(&up);
	path = unpack_str(&up);
	d = unpack_str(&up);
	if (unpack_done(&up) == -1 || m == NULL || h == NULL ||
	    path == NULL || d == NULL || strlen(m) > EGRESS_METHOD_MAX ||
	    strlen(h) >= HOST_LEN_MAX || p->c.port > 65535 ||
	    (p->c.refused != 0 && p->c.refused != EGRESS_REFUSED_EGRESS))
		fatalx("bad IMSG_EGRESS_CALL from relay");
	strlcpy(p->method, m, sizeof(p->method));
	/* The host as the record shows it: its port unless the default. */
	if (p->c.port == 0 || p->c.port == 443)
		strlcpy(p->host, h, sizeof(p->host));
	else
		snprintf(p->host, sizeof(p->host), "%s:%u", h, p->c.port);
	/* Longer than the record takes: cut, as /call's are. */
	strlcpy(p->path, *path != '\0' ? path : "/", sizeof(p->path));
	strlcpy(p->detail, d, sizeof(p->detail));
}

/* IMSG_EGRESS_CALL: queued for this turn's read and write. */
void
egress_call(struct blob *b)
{
	struct timeval	 tv = { 0, 0 };
	struct epend	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		fatal("%s: calloc", __func__);
	egress_unpack(p, b);
	blob_free(b);
	p->run = erun_find(p->c.runid);
	TAILQ_INSERT_TAIL(&epends, p, entry);
	nepends++;
	/*
	 * Judged at the end of this turn of the loop, never here: a relay's
	 * message may be read in the middle of another transaction.
	 */
	if (!eturn_armed) {
		evtimer_set(&eturn_ev, egress_turn, NULL);
		evtimer_add(&eturn_ev, &tv);
		eturn_armed = 1;
	}
}

static void
egress_turn(int fd, short ev, void *arg)
{
	eturn_armed = 0;
	egress_flush();
}

/*
 * The pending requests: judged in one read, their records in one
 * transaction, then each answered.  When the transaction fails, every
 * one is refused (503) and none goes upstream.
 */
void
egress_flush(void)
{
	struct epend	*p;
	struct erun	*r;
	int		 fail, rc;

	if (eturn_armed) {
		evtimer_del(&eturn_ev);
		eturn_armed = 0;
	}
	if (nepends == 0)
		return;
	rc = store_read_begin();
	TAILQ_FOREACH(p, &epends, entry) {
		if (rc == 0)
			egress_judge(p);
		else if (p->run != NULL && p->refused_by == NULL) {
			/* Rules unread: nothing is sent, nothing recorded. */
			p->refused_by = "";
			p->status = 503;
			strlcpy(p->detail, "the database cannot be read — "
			    "try again in a moment", sizeof(p->detail));
		}
	}
	if (rc == 0)
		store_read_end();
	fail = egress_write();
	vault_cork(1);
	while ((p = TAILQ_FIRST(&epends)) != NULL) {
		TAILQ_REMOVE(&epends, p, entry);
		egress_answer(p, fail);
		explicit_bzero(p, sizeof(*p));
		free(p);
	}
	vault_cork(0);
	nepends = 0;
	while ((r = TAILQ_FIRST(&edead)) != NULL) {
		TAILQ_REMOVE(&edead, r, entry);
		free(r);
	}
}

/*
 * A request of a known run: the relay's own refusal is recorded as it
 * is; else the deny rules, on the effective method, the host and the
 * path without its query, as for /call.
 */
static void
egress_judge(struct epend *p)
{
	struct vault_resp	 resp;
	char			 path[EGRESS_PATH_MAX + 1];
	json_t			*d;

	if (p->run == NULL)
		return;
	if (p->c.refused == EGRESS_REFUSED_EGRESS) {
		p->refused_by = "egress";
		p->status = p->c.status >= 400 && p->c.status <= 599 ?
		    p->c.status : 403;
		return;
	}
	memset(&resp, 0, sizeof(resp));
	strlcpy(path, p->path, sizeof(path));
	path[strcspn(path, "?")] = '\0';
	/* The record names host:port; the rules, the host. */
	p->host[strcspn(p->host, ":")] = '\0';
	if (deny_check(&p->run->who, p->host, path, p->method,
	    p->run->project_id, &resp) == -1) {
		p->refused_by = resp.status == 403 ? "policy" : "";
		p->status = resp.status;
		d = json_object_get(resp.body, "detail");
		strlcpy(p->detail, json_is_string(d) ? json_string_value(d) :
		    "refused", sizeof(p->detail));
	}
	if (p->c.port != 0 && p->c.port != 443)
		snprintf(p->host + strlen(p->host), sizeof(p->host) -
		    strlen(p->host), ":%u", p->c.port);
	json_decref(resp.body);
}

/* 0 when committed (or nothing to write), -1 when nothing of it was. */
static int
egress_write(void)
{
	struct epend	*p;
	char		 now[STORE_TIME_MAX];
	int		 rc = 0;

	TAILQ_FOREACH(p, &epends, entry)
		if (p->run != NULL && (p->refused_by == NULL ||
		    *p->refused_by != '\0'))
			break;
	if (p == NULL)
		return (0);
	now_iso(now, sizeof(now));
	if (store_begin() == -1)
		rc = -1;
	TAILQ_FOREACH(p, &epends, entry)
		if (rc == 0 && p->run != NULL && (p->refused_by == NULL ||
		    *p->refused_by != '\0'))
			rc = egress_row(p, now);
	if (rc == -1 || store_commit() == -1) {
		log_warnx("audit: a run's request cannot be recorded: %s",
		    store_error());
		vault_metrics_db_error();
		store_rollback();
		return (-1);
	}
	return (0);
}

/* One request's record: a relayed call's fields, and where and whose. */
static int
egress_row(struct epend *p, const char *now)
{
	struct store_call	 c;

	audit_call_init(&c, &p->run->who, p->run->tool, p->method, p->path,
	    p->refused_by, p->status, now);
	c.run_id = p->run->audit_id;
	c.place = "run";
	c.target_host = p->host;
	return (store_call_insert(&c, &p->audit_id));
}

/* The verdict: go (callid names the record for its end), or refused. */
static void
egress_answer(struct epend *p, int fail)
{
	struct egress_verdict	 v;
	const char		*detail = p->detail;

	memset(&v, 0, sizeof(v));
	v.runid = p->c.runid;
	v.reqid = p->c.reqid;
	if (p->run == NULL) {
		v.status = 403;
		detail = "tregd: this run has ended";
	} else if (p->refused_by == NULL && !fail) {
		v.ok = 1;
		v.callid = call_track(p->audit_id, p->run->who.org_id);
		detail = "";
	} else if (p->refused_by == NULL || (fail &&
	    p->c.refused != EGRESS_REFUSED_EGRESS)) {
		v.status = 503;
		detail = "tregd: the audit log cannot be written — nothing "
		    "was sent";
	} else
		v.status = p->status;
	vault_egress_verdict(&v, detail);
}
