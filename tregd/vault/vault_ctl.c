/*
 * The control socket, served by the vault with a fixed command set.
 *
 * The parent binds the socket (mode 0600, or 0660 with "socket group"),
 * accepts each connection and checks its peer (parent.c: credentials as
 * configured, no run's uid, the daemon's own pid namespace), then hands
 * it to a worker: what arrives here was checked.  vault.c holds the
 * connections (a malformed message closes that connection only) and
 * hands each request to ctl_command(), which answers JSON.
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

static int	ctl_log(const struct ctl_request *, json_t **);
static int	ctl_status(const struct ctl_request *, json_t **);
static int	ctl_metrics(const struct ctl_request *, json_t **);
static int	ctl_org_id(const char *, int64_t *, json_t **);
static json_t	*ctl_access(const char *);
static int	ctl_member_view(const struct store_org_member *, void *);
static int	ctl_agent_view(const struct store_org_member *, void *);
static int	ctl_secret_view(const struct store_secret_row *, void *);
static int	ctl_org_sole(int64_t, const char *, void *);
static int	ctl_org_of(const struct ctl_request *, int64_t *, json_t **);
static int	ctl_listed(int, json_t *, json_t **);
static int	ctl_show_members(const struct ctl_request *, json_t **);
static int	ctl_show_agents(const struct ctl_request *, json_t **);
static int	ctl_show_secrets(const struct ctl_request *, json_t **);
static int	ctl_show_config(const struct ctl_request *, json_t **);
static int	ctl_user_delete(const struct ctl_request *, json_t **);
static int	ctl_backup(const struct ctl_request *, json_t **);
static int	ctl_sole_owned(int64_t, json_t **);
static int	ctl_user_find(const char *, int64_t *, int *);
static void	ctl_slugs(const json_t *, char *, size_t);
static int	ctl_user_remove(int64_t, const json_t *);
static json_t	*ctl_listeners(void);

/* The commands, a table as the imsgs are. */
static const struct ctl_command {
	uint32_t	 cmd;
	int		(*fn)(const struct ctl_request *, json_t **);
	int		 keyring;	/* done: the other workers reload it */
} ctl_cmds[] = {
	{ CTL_SHOW_STATUS,	ctl_status,		0 },
	{ CTL_SHOW_USERS,	ctl_show_users,		0 },
	{ CTL_SHOW_ORGS,	ctl_show_orgs,		0 },
	{ CTL_SHOW_TOOLS,	ctl_show_tools,		0 },
	{ CTL_SHOW_RUNS,	ctl_show_runs,		0 },
	{ CTL_SHOW_AUDIT,	ctl_show_audit,		0 },
	{ CTL_USER_ADD,		ctl_user_add,		0 },
	{ CTL_TOKEN_REVOKE,	ctl_token_revoke,	0 },
	{ CTL_IDENTITY_REVOKE,	ctl_identity_revoke,	0 },
	{ CTL_SHOW_TOKENS,	ctl_show_tokens,	0 },
	{ CTL_ORG_DELETE,	ctl_org_delete,		0 },
	{ CTL_KEY_ROTATE,	ctl_key_rotate,		1 },
	{ CTL_KEY_NEW,		ctl_key,		1 },
	{ CTL_KEY_USE,		ctl_key,		1 },
	{ CTL_KEY_RETIRE,	ctl_key,		1 },
	{ CTL_KEY_LIST,		ctl_key,		0 },
	{ CTL_KEY_RELOAD,	ctl_key,		1 },
	{ CTL_METRICS,		ctl_metrics,		0 },
	{ CTL_SHOW_MEMBERS,	ctl_show_members,	0 },
	{ CTL_SHOW_AGENTS,	ctl_show_agents,	0 },
	{ CTL_SHOW_SECRETS,	ctl_show_secrets,	0 },
	{ CTL_SHOW_CONFIG,	ctl_show_config,	0 },
	{ CTL_USER_DELETE,	ctl_user_delete,	0 },
	{ CTL_BACKUP,		ctl_backup,		0 },
	{ CTL_RELOAD,		NULL,			0 },	/* the parent's */
	{ CTL_LOG_VERBOSE,	ctl_log,		0 },
	{ CTL_LOG_BRIEF,	ctl_log,		0 },
};

/*
 * A tregctl's command (conn: its connection, cr checked by vault.c): 0
 * with *reply, -1 with an error *reply, CTL_LATER when the answer comes
 * later (ctl_reload_reply()).
 */
int
ctl_command(uint32_t conn, const struct ctl_request *cr, json_t **reply)
{
	size_t	 i;
	int	 rc;

	*reply = NULL;
	for (i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		if (ctl_cmds[i].cmd == cr->cmd)
			break;
	if (i == sizeof(ctl_cmds) / sizeof(ctl_cmds[0])) {
		*reply = ctl_errorf("unknown command %u", cr->cmd);
		return (-1);
	}
	if (ctl_cmds[i].fn == NULL) {
		/* The parent answers: ctl_reload_reply(). */
		vault_ctl_reload(conn);
		return (CTL_LATER);
	}
	rc = ctl_cmds[i].fn(cr, reply);
	if (rc == 0 && ctl_cmds[i].keyring)
		vault_keyring_changed();
	return (rc);
}

/* log verbose, log brief: the parent's, for every process. */
static int
ctl_log(const struct ctl_request *cr, json_t **reply)
{
	int	 v = cr->cmd == CTL_LOG_VERBOSE;

	vault_log_verbose(v);
	*reply = json_pack("{s:s}", "log", v ? "verbose" : "brief");
	return (0);
}

/* The parent's answer to a reload: the reply to its tregctl. */
json_t *
ctl_reload_reply(const struct ctl_reload_done *rd, int *status)
{
	*status = rd->result == 0 ? 0 : 1;
	if (rd->result == 0)
		return (json_pack("{s:b}", "reloaded", 1));
	return (ctl_errorf("%s; the running configuration stays in force",
	    rd->error[0] != '\0' ? rd->error :
	    "the configuration has errors"));
}

static int
ctl_status(const struct ctl_request *cr, json_t **reply)
{
	struct store_counts	 n;
	json_t	*procs, *j;
	time_t	 now = time(NULL);
	char	 db[PATH_MAX + 32];
	int	 i;

	procs = json_array();
	for (i = 0; i < PROCINFO_MAX && vault_procs[i].name[0] != '\0'; i++)
		json_array_append_new(procs, json_pack("{s:s,s:i,s:I}",
		    "name", vault_procs[i].name, "pid", (int)vault_procs[i].pid,
		    "uptime_s", (json_int_t)(vault_procs[i].started ?
		    now - vault_procs[i].started : 0)));
	if (store_counts(&n) == -1) {
		*reply = ctl_errorf("database error");
		return (-1);
	}
	/* Not the conninfo: it may hold a password. */
	if (vault_conf.db_engine == DB_POSTGRESQL)
		strlcpy(db, "postgresql", sizeof(db));
	else
		snprintf(db, sizeof(db), "sqlite %s/%s", vault_conf.state,
		    TREGD_DB);
	j = json_pack("{s:s,s:s,s:o,s:s,s:s,s:I,s:o,s:{s:i,s:i,s:i,s:i},"
	    "s:{s:I,s:I,s:I,s:I,s:I}}",
	    "version", TREGD_VERSION,
	    "key_id", keyring_current_hex(),
	    "listen", ctl_listeners(),
	    "signup", vault_conf.signup_open ? "open" : "closed",
	    "database", db,
	    "uptime_s", (json_int_t)(vault_procs[0].started ?
	    now - vault_procs[0].started : 0),
	    "processes", procs,
	    "run_slots", "used", run_slots_used(), "max", vault_conf.run_slots,
	    "per_user", vault_conf.run_slots_user,
	    "per_org", vault_conf.run_slots_org != 0 ?
	    vault_conf.run_slots_org : vault_conf.run_slots,
	    "counts",
	    "users", (json_int_t)n.users, "orgs", (json_int_t)n.orgs,
	    "tools", (json_int_t)n.tools, "secrets", (json_int_t)n.secrets,
	    "runs", (json_int_t)n.runs);
	if (j == NULL)
		fatalx("%s: json_pack", __func__);
	*reply = j;
	return (0);
}

/* Prometheus text format. */
static int
ctl_metrics(const struct ctl_request *cr, json_t **reply)
{
	struct store_counts	 c;
	const char		*name, *w;
	char			 buf[4096];
	int			 n = 0, i;

	if (store_counts(&c) == -1) {
		*reply = ctl_errorf("database error");
		return (-1);
	}
	n += snprintf(buf + n, sizeof(buf) - n,
	    "# HELP tregd_up Whether a tregd process is running.\n"
	    "# TYPE tregd_up gauge\n");
	/* "vault 1": process="vault",worker="1". */
	for (i = 0; i < PROCINFO_MAX && vault_procs[i].name[0] != '\0'; i++) {
		name = vault_procs[i].name;
		if ((w = strchr(name, ' ')) == NULL)
			n += snprintf(buf + n, sizeof(buf) - n,
			    "tregd_up{process=\"%s\"} %d\n", name,
			    vault_procs[i].pid > 0);
		else
			n += snprintf(buf + n, sizeof(buf) - n,
			    "tregd_up{process=\"%.*s\",worker=\"%s\"} %d\n",
			    (int)(w - name), name, w + 1,
			    vault_procs[i].pid > 0);
	}
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
	    (long long)c.runs, (long long)c.redacted, (long long)c.refusals,
	    (long long)c.grants,
	    run_slots_used());
	*reply = json_pack("{s:s}", "text", buf);
	return (0);
}

/* ------------------------------------------------------------------ */
/* Listings of one org, the configuration, user deletion.              */

/* "127.0.0.1 port 8790" for each listener, as tregd.conf writes it. */
static json_t *
ctl_listeners(void)
{
	json_t	*a;
	char	 buf[96];
	int	 i;

	a = json_array();
	for (i = 0; i < vault_conf.nlisten; i++) {
		snprintf(buf, sizeof(buf), "%s port %u",
		    vault_conf.listen[i].name, vault_conf.listen[i].port);
		json_array_append_new(a, json_string(buf));
	}
	return (a);
}

/* The org of a slug: 0, or -1 with *reply the error. */
static int
ctl_org_id(const char *slug, int64_t *id, json_t **reply)
{
	switch (store_org_by_slug(slug, id)) {
	case 0:
		return (0);
	case 1:
		*reply = ctl_errorf("no org with the slug '%s'", slug);
		return (-1);
	default:
		*reply = ctl_errorf("database error");
		return (-1);
	}
}

/* A tool_access column: null (every tool) or the list of names. */
static json_t *
ctl_access(const char *access)
{
	json_t	*a;

	if (access == NULL || (a = json_loads(access, 0, NULL)) == NULL)
		return (json_null());
	return (a);
}

static int
ctl_member_view(const struct store_org_member *m, void *arg)
{
	json_array_append_new(arg, json_pack("{s:I,s:s,s:s,s:o,s:b,s:s}",
	    "user_id", (json_int_t)m->user_id, "email", m->email,
	    "role", m->role, "tool_access", ctl_access(m->tool_access),
	    "local_run_enabled", m->local_run_enabled,
	    "created_at", m->created_at));
	return (0);
}

static int
ctl_agent_view(const struct store_org_member *m, void *arg)
{
	json_array_append_new(arg, json_pack("{s:I,s:s,s:s,s:s,s:o,s:b,s:s}",
	    "user_id", (json_int_t)m->user_id, "name", m->agent_name,
	    "email", m->email, "role", m->role,
	    "tool_access", ctl_access(m->tool_access),
	    "local_run_enabled", m->local_run_enabled,
	    "created_at", m->created_at));
	return (0);
}

static int
ctl_secret_view(const struct store_secret_row *s, void *arg)
{
	json_array_append_new(arg, json_pack("{s:I,s:s,s:s,s:s,s:o,s:s,"
	    "s:s?,s:s?,s:s}",
	    "id", (json_int_t)s->id, "name", s->name, "kind", s->kind,
	    "owner", s->owner_email, "bundle_id", s->bundle_id != 0 ?
	    json_integer(s->bundle_id) : json_null(), "status", s->status,
	    "detail", s->status_detail, "checked_at", s->checked_at,
	    "created_at", s->created_at));
	return (0);
}

/* The org of cr->org: 0 and *org, or -1 with *reply the error. */
static int
ctl_org_of(const struct ctl_request *cr, int64_t *org, json_t **reply)
{
	if (cr->org[0] == '\0') {
		*reply = ctl_errorf("which org? give its slug");
		return (-1);
	}
	return (ctl_org_id(cr->org, org, reply));
}

/* The listing in *list, or -1 with *reply the database error. */
static int
ctl_listed(int rc, json_t *list, json_t **reply)
{
	if (rc == -1) {
		json_decref(list);
		*reply = ctl_errorf("database error: %s", store_error());
		return (-1);
	}
	*reply = list;
	return (0);
}

static int
ctl_show_members(const struct ctl_request *cr, json_t **reply)
{
	json_t	*list;
	int64_t	 org;

	if (ctl_org_of(cr, &org, reply) == -1)
		return (-1);
	list = json_array();
	if (ctl_listed(store_org_members(org, 0, ctl_member_view, list),
	    list, reply) == -1)
		return (-1);
	project_access_views(org, list);
	return (0);
}

static int
ctl_show_agents(const struct ctl_request *cr, json_t **reply)
{
	json_t	*list;
	int64_t	 org;

	if (ctl_org_of(cr, &org, reply) == -1)
		return (-1);
	list = json_array();
	if (ctl_listed(store_org_members(org, 1, ctl_agent_view, list),
	    list, reply) == -1)
		return (-1);
	project_access_views(org, list);
	return (0);
}

static int
ctl_show_secrets(const struct ctl_request *cr, json_t **reply)
{
	json_t	*list;
	int64_t	 org;

	if (ctl_org_of(cr, &org, reply) == -1)
		return (-1);
	list = json_array();
	return (ctl_listed(store_org_secrets(org, ctl_secret_view, list),
	    list, reply));
}

/* The running configuration in canonical form; the run proof elided. */
static int
ctl_show_config(const struct ctl_request *cr, json_t **reply)
{
	char	*text = NULL;
	size_t	 len = 0;
	FILE	*fp;

	if ((fp = open_memstream(&text, &len)) == NULL)
		fatal("%s: open_memstream", __func__);
	print_config(&vault_conf, fp);
	if (fclose(fp) == EOF)
		fatal("%s: open_memstream", __func__);
	*reply = json_pack("{s:s}", "text", text);
	free(text);
	return (0);
}

/*
 * The orgs the user alone owns, as {"id","slug"} into *orgs: their
 * number, or -1.
 */
static int
ctl_org_sole(int64_t id, const char *slug, void *arg)
{
	json_array_append_new(arg, json_pack("{s:I,s:s}", "id",
	    (json_int_t)id, "slug", slug));
	return (0);
}

static int
ctl_sole_owned(int64_t uid, json_t **orgs)
{
	*orgs = json_array();
	if (store_user_sole_owned(uid, ctl_org_sole, *orgs) == -1)
		return (-1);
	return ((int)json_array_size(*orgs));
}

/* The user of an email: 1 found, 0 none, -1 error. */
static int
ctl_user_find(const char *email, int64_t *uid, int *is_agent)
{
	switch (store_user_by_email(email, uid, is_agent)) {
	case 0:
		return (1);
	case 1:
		return (0);
	default:
		return (-1);
	}
}

/* "a, b" of the orgs' slugs, for the refusal. */
static void
ctl_slugs(const json_t *orgs, char *buf, size_t len)
{
	const json_t	*o;
	size_t		 i;

	buf[0] = '\0';
	json_array_foreach(orgs, i, o) {
		if (i > 0)
			strlcat(buf, ", ", len);
		strlcat(buf, json_string_value(json_object_get(o, "slug")),
		    len);
	}
}

/* The orgs, then every membership left, then the user: 0 or -1. */
static int
ctl_user_remove(int64_t uid, const json_t *orgs)
{
	const json_t	*o;
	int64_t		 oid;
	size_t		 i;
	int		 rc;

	json_array_foreach(orgs, i, o)
		if (store_org_remove(json_integer_value(json_object_get(o,
		    "id"))) == -1)
			return (-1);
	/* One at a time: a removal changes what the next lookup sees. */
	while ((rc = store_user_first_org(uid, &oid)) == 0)
		if (store_membership_remove(uid, oid) == -1)
			return (-1);
	if (rc == -1)
		return (-1);
	return (store_user_delete(uid));
}

/*
 * A user and every membership (its tokens die with them).  An org the
 * user alone owns would be left without an owner: refused, unless
 * "force", which deletes those orgs with everything they hold.
 */
static int
ctl_user_delete(const struct ctl_request *cr, json_t **reply)
{
	json_t		*orgs = NULL;
	char		 email[256], slugs[512];
	int64_t		 uid = 0;
	int		 rc, is_agent = 0;

	if (email_normalize(cr->email, email, sizeof(email)) == -1) {
		*reply = ctl_errorf("invalid email address");
		return (-1);
	}
	if (store_begin() == -1 ||
	    (rc = ctl_user_find(email, &uid, &is_agent)) == -1)
		goto fail;
	if (rc == 0 || is_agent) {
		store_rollback();
		*reply = rc == 0 ? ctl_errorf("no user %s", email) :
		    ctl_errorf("%s is an agent: revoke it through its org's "
		    "agents", email);
		return (-1);
	}
	if (ctl_sole_owned(uid, &orgs) == -1)
		goto fail;
	if (json_array_size(orgs) > 0 && !cr->force) {
		store_rollback();
		ctl_slugs(orgs, slugs, sizeof(slugs));
		*reply = ctl_errorf("%s is the only owner of %s: add another "
		    "owner first, or \"user delete %s force\" deletes %s too",
		    email, slugs, email, json_array_size(orgs) > 1 ?
		    "those orgs" : "that org");
		json_decref(orgs);
		return (-1);
	}
	if (ctl_user_remove(uid, orgs) == -1 || store_commit() == -1)
		goto fail;
	log_info("tregctl: user %lld deleted with %zu org(s)",
	    (long long)uid, json_array_size(orgs));
	*reply = json_pack("{s:s,s:o}", "deleted_user", email,
	    "deleted_orgs", orgs);
	return (0);
 fail:
	log_warnx("%s: database error: %s", __func__, store_error());
	store_rollback();
	json_decref(orgs);
	*reply = ctl_errorf("database error");
	return (-1);
}

/*
 * tregctl backup: a consistent copy of the database, written while the
 * vault serves, into the state directory; tregctl moves it out with the
 * keyring named here.  A PostgreSQL database is pg_dump's: the keyring
 * only.
 */
static int
ctl_backup(const struct ctl_request *cr, json_t **reply)
{
	char	 path[PATH_MAX];

	if (vault_conf.db_engine == DB_POSTGRESQL) {
		*reply = json_pack("{s:s, s:n, s:o}", "state",
		    vault_conf.state, "database", "keyring",
		    crypto_key_files());
		return (0);
	}
	if (snprintf(path, sizeof(path), "%s/%s", vault_root, TREGD_BACKUP) >=
	    (int)sizeof(path)) {
		*reply = ctl_errorf("state directory path too long");
		return (-1);
	}
	unlink(path);
	if (store_backup(path) == -1) {
		unlink(path);
		*reply = ctl_errorf("backup failed (see the daemon's log)");
		return (-1);
	}
	log_info("database backed up for tregctl");
	*reply = json_pack("{s:s, s:s, s:o}", "state", vault_conf.state,
	    "database", TREGD_BACKUP, "keyring", crypto_key_files());
	if (*reply == NULL)
		fatalx("%s: json_pack", __func__);
	return (0);
}
