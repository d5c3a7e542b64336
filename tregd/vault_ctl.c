/*
 * The control socket, served by the vault with a fixed command set.
 *
 * The parent binds the socket (mode 0600, or 0660 with "socket group");
 * every connection is checked again here with SO_PEERCRED: root, or a
 * process of the configured group, primary or supplementary
 * (SO_PEERGROUPS).  A malformed message closes that connection only.
 * A request is one IMSG_CTL_REQUEST; the answer one IMSG_CTL_REPLY blob
 * holding JSON.
 * reload and log go through the parent, which owns those.
 */

#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vault.h"

struct ctl_conn {
	TAILQ_ENTRY(ctl_conn)	 entry;
	uint32_t		 id;
	struct imsgev		 iev;
};
TAILQ_HEAD(, ctl_conn)		 ctl_conns = TAILQ_HEAD_INITIALIZER(ctl_conns);

static struct event		 ctl_ev;
static int			 ctl_fd = -1;
static gid_t			 ctl_gid = (gid_t)-1;
static uint32_t			 ctl_next_id = 1;
static int			 ctl_nconns;
#define CTL_CONNS_MAX		 32
#define CTL_GROUPS_MAX		 1024

static int	ctl_peer_in_group(int);
static void	ctl_accept(int, short, void *);
static void	ctl_dispatch(struct imsgev *, struct imsg *);
static void	ctl_closed(struct imsgev *);
static void	ctl_reply(struct ctl_conn *, uint32_t, int, json_t *);
static int	ctl_status(const struct ctl_request *, json_t **);
static int	ctl_metrics(const struct ctl_request *, json_t **);

void
ctl_init(int fd, gid_t gid)
{
	ctl_fd = fd;
	ctl_gid = gid;
	event_set(&ctl_ev, fd, EV_READ | EV_PERSIST, ctl_accept, NULL);
	event_add(&ctl_ev, NULL);
}

json_t *
ctl_errorf(const char *fmt, ...)
{
	char	 msg[512];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return (json_pack("{s:s}", "error", msg));
}

/*
 * Whether the peer has the socket group among its supplementary groups
 * (SO_PEERGROUPS, Linux 4.13: the groups it had when it connected).
 */
static int
ctl_peer_in_group(int s)
{
	gid_t		 groups[CTL_GROUPS_MAX];
	socklen_t	 len = sizeof(groups);
	size_t		 i;

	if (getsockopt(s, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == -1) {
		if (errno == ERANGE)
			log_warnx("control: a peer with more than %d groups",
			    CTL_GROUPS_MAX);
		return (0);
	}
	for (i = 0; i < len / sizeof(groups[0]); i++)
		if (groups[i] == ctl_gid)
			return (1);
	return (0);
}

static void
ctl_accept(int fd, short event, void *arg)
{
	struct ctl_conn	*c;
	struct ucred	 cred;
	socklen_t	 len = sizeof(cred);
	int		 s;

	if ((s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) ==
	    -1) {
		if (errno != EAGAIN && errno != EINTR)
			log_warn("control accept");
		return;
	}
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1 ||
	    !(cred.uid == 0 || cred.uid == geteuid() ||
	    (ctl_gid != (gid_t)-1 && (cred.gid == ctl_gid ||
	    ctl_peer_in_group(s))))) {
		log_warnx("control: refused a connection from uid %u",
		    (unsigned)cred.uid);
		close(s);
		return;
	}
	if (ctl_nconns >= CTL_CONNS_MAX) {
		log_warnx("control: too many connections");
		close(s);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("%s: calloc", __func__);
	c->id = ctl_next_id++;
	imsgev_init(&c->iev, s, PROC_CONTROL, "tregctl", ctl_dispatch,
	    ctl_closed, c);
	c->iev.untrusted = 1;
	TAILQ_INSERT_TAIL(&ctl_conns, c, entry);
	ctl_nconns++;
}

static void
ctl_close(struct ctl_conn *c)
{
	TAILQ_REMOVE(&ctl_conns, c, entry);
	imsgev_clear(&c->iev);
	free(c);
	ctl_nconns--;
}

static void
ctl_closed(struct imsgev *iev)
{
	ctl_close(iev->arg);
}

static void
ctl_reply(struct ctl_conn *c, uint32_t id, int status, json_t *j)
{
	struct ctl_reply	 cr;
	char			*text;

	cr.status = status;
	if (j == NULL)
		j = json_object();
	if ((text = json_dumps(j, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	json_decref(j);
	if (imsgev_send_blob(&c->iev, IMSG_CTL_REPLY, id, &cr, sizeof(cr),
	    text, strlen(text)) == -1)
		log_warn("control reply");
	freezero(text, strlen(text));
}

static void
ctl_dispatch(struct imsgev *iev, struct imsg *imsg)
{
	struct ctl_conn		*c = iev->arg;
	struct ctl_request	 cr;
	json_t			*reply = NULL;
	int			 rc = 0, v;

	/*
	 * A bad message from a tregctl is refused, not fatal: the handler
	 * closes the connection once this returns (dead == 1).
	 */
	if (imsg->hdr.type != IMSG_CTL_REQUEST ||
	    imsg->datalen != sizeof(cr)) {
		log_warnx("control: bad message %u from connection %u, closed",
		    imsg->hdr.type, c->id);
		iev->dead = 1;
		return;
	}
	memcpy(&cr, imsg->data, sizeof(cr));
	cr.email[sizeof(cr.email) - 1] = '\0';
	cr.org[sizeof(cr.org) - 1] = '\0';
	cr.role[sizeof(cr.role) - 1] = '\0';

	switch (cr.cmd) {
	case CTL_SHOW_STATUS:
		rc = ctl_status(&cr, &reply);
		break;
	case CTL_SHOW_USERS:
		rc = ctl_show_users(&cr, &reply);
		break;
	case CTL_SHOW_ORGS:
		rc = ctl_show_orgs(&cr, &reply);
		break;
	case CTL_SHOW_TOOLS:
		rc = ctl_show_tools(&cr, &reply);
		break;
	case CTL_SHOW_RUNS:
		rc = ctl_show_runs(&cr, &reply);
		break;
	case CTL_SHOW_AUDIT:
		rc = ctl_show_audit(&cr, &reply);
		break;
	case CTL_USER_ADD:
		rc = ctl_user_add(&cr, &reply);
		break;
	case CTL_TOKEN_REVOKE:
		rc = ctl_token_revoke(&cr, &reply);
		break;
	case CTL_ORG_DELETE:
		rc = ctl_org_delete(&cr, &reply);
		break;
	case CTL_KEY_ROTATE:
		rc = ctl_key_rotate(&cr, &reply);
		break;
	case CTL_METRICS:
		rc = ctl_metrics(&cr, &reply);
		break;
	case CTL_RELOAD:
		/* The parent answers; the reply goes out in ctl_reload_done. */
		imsgev_compose(vault_parent, IMSG_CTL_RELOAD, c->id, -1,
		    NULL, 0);
		return;
	case CTL_LOG_VERBOSE:
	case CTL_LOG_BRIEF:
		v = cr.cmd == CTL_LOG_VERBOSE;
		imsgev_compose(vault_parent, IMSG_CTL_LOG_VERBOSE, 0, -1, &v,
		    sizeof(v));
		reply = json_pack("{s:s}", "log", v ? "verbose" : "brief");
		break;
	default:
		rc = -1;
		reply = ctl_errorf("unknown command %u", cr.cmd);
		break;
	}
	ctl_reply(c, imsg->hdr.id, rc == 0 ? 0 : 1, reply);
}

void
ctl_reload_done(uint32_t id, int result)
{
	struct ctl_conn	*c;

	TAILQ_FOREACH(c, &ctl_conns, entry)
		if (c->id == id)
			break;
	if (c == NULL)
		return;		/* tregctl went away */
	if (result == 0)
		ctl_reply(c, 1, 0, json_pack("{s:b}", "reloaded", 1));
	else
		ctl_reply(c, 1, 1, ctl_errorf("the configuration has errors "
		    "(see the log); the running one stays in force"));
}

static int64_t
ctl_count(const char *sql)
{
	sqlite3_stmt	*st;
	int64_t		 n = -1;

	if ((st = db_prepare(sql)) == NULL)
		return (-1);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return (n);
}

static int
ctl_status(const struct ctl_request *cr, json_t **reply)
{
	json_t	*procs, *j;
	time_t	 now = time(NULL);
	int	 i;

	procs = json_array();
	for (i = PROC_PARENT; i < PROC_CONTROL; i++)
		json_array_append_new(procs, json_pack("{s:s,s:i,s:I}",
		    "name", proc_names[i], "pid", (int)vault_procs[i].pid,
		    "uptime_s", (json_int_t)(vault_procs[i].started ?
		    now - vault_procs[i].started : 0)));
	j = json_pack("{s:s,s:s,s:I,s:o,s:{s:i,s:i,s:i},"
	    "s:{s:I,s:I,s:I,s:I,s:I}}",
	    "version", TREGD_VERSION,
	    "key_id", crypto_key_id(),
	    "uptime_s", (json_int_t)(vault_procs[PROC_PARENT].started ?
	    now - vault_procs[PROC_PARENT].started : 0),
	    "processes", procs,
	    "run_slots", "used", run_slots_used(), "max", vault_conf.run_slots,
	    "per_user", vault_conf.run_slots_user,
	    "counts",
	    "users", (json_int_t)ctl_count("SELECT count(*) FROM users"),
	    "orgs", (json_int_t)ctl_count("SELECT count(*) FROM orgs"),
	    "tools", (json_int_t)ctl_count("SELECT count(*) FROM tools"),
	    "secrets", (json_int_t)ctl_count("SELECT count(*) FROM secrets"),
	    "runs", (json_int_t)ctl_count("SELECT count(*) FROM runs"));
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	*reply = j;
	return (0);
}

/* Prometheus text format. */
static int
ctl_metrics(const struct ctl_request *cr, json_t **reply)
{
	char	 buf[4096];
	int	 n = 0, i;

	n += snprintf(buf + n, sizeof(buf) - n,
	    "# HELP tregd_up Whether a tregd process is running.\n"
	    "# TYPE tregd_up gauge\n");
	for (i = PROC_PARENT; i < PROC_CONTROL; i++)
		n += snprintf(buf + n, sizeof(buf) - n,
		    "tregd_up{process=\"%s\"} %d\n", proc_names[i],
		    vault_procs[i].pid > 0);
	n += snprintf(buf + n, sizeof(buf) - n,
	    "# HELP tregd_runs_total Server runs started.\n"
	    "# TYPE tregd_runs_total counter\n"
	    "tregd_runs_total %lld\n"
	    "# HELP tregd_redactions_total Secret occurrences masked in run "
	    "output.\n"
	    "# TYPE tregd_redactions_total counter\n"
	    "tregd_redactions_total %lld\n"
	    "# HELP tregd_refusals_total Requests refused by policy.\n"
	    "# TYPE tregd_refusals_total counter\n"
	    "tregd_refusals_total %lld\n"
	    "# HELP tregd_grants_total Local-run grants released.\n"
	    "# TYPE tregd_grants_total counter\n"
	    "tregd_grants_total %lld\n"
	    "# HELP tregd_run_slots_in_use Server runs in flight.\n"
	    "# TYPE tregd_run_slots_in_use gauge\n"
	    "tregd_run_slots_in_use %d\n",
	    (long long)ctl_count("SELECT count(*) FROM runs"),
	    (long long)ctl_count("SELECT (SELECT coalesce(sum(redacted), 0) "
	    "FROM runs) + (SELECT coalesce(sum(redacted), 0) FROM run_ends)"),
	    (long long)ctl_count("SELECT count(*) FROM calls "
	    "WHERE refused_by IS NOT NULL OR action = 'DENY'"),
	    (long long)ctl_count("SELECT count(*) FROM calls "
	    "WHERE action = 'GRANT'"),
	    run_slots_used());
	*reply = json_pack("{s:s}", "text", buf);
	return (0);
}
