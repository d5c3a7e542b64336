/*
 * The PostgreSQL engine of store.h (libpq), for several tregd hosts on
 * one database.  One connection per vault worker, opened before the
 * vault confines itself; a lost one is made again (store_pg_conn.c)
 * while requests answer 503.
 *
 * Every statement is prepared once, on first use, and answers in libpq's
 * binary format: integers are BIGINT, booleans are 0/1 BIGINTs, times
 * are ISO 8601 text exactly as the sqlite engine keeps them.  Errors
 * keep only the server's primary message, never a DETAIL (which can
 * quote a bound value).
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <endian.h>
#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

PGconn			*pg_conn;
static char		 pg_errbuf[STORE_ERROR_MAX];
static char		 pg_state[6];	/* SQLSTATE of the last failure */
static int		 pg_lost;
static int		 pg_generation;	/* of the connection */
static int64_t		 pg_seen;	/* pg_version_seen() */
static int		 pg_seen_ok;

static int		 pg_open(const struct store_params *, char *, size_t);
static void		 pg_close(void);
static int		 pg_check(char *, size_t);
static int		 pg_backup(const char *);
static int64_t		 pg_version(void);

static int		 pg_begin(void);
static int		 pg_commit(void);
static void		 pg_rollback(void);
static int		 pg_unavailable(void);
static void		 pg_notice(void *, const char *);
static void		 pg_seterr(const char *);

const struct store_ops store_pg_ops = {
	.name = "postgresql",
	.open = pg_open,
	.close = pg_close,
	.check = pg_check,
	.backup = pg_backup,
	.version = pg_version,
	.error = pg_error,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.unavailable = pg_unavailable,
	.reach = pg_reach,
	.reach_dir = pg_reach_dir,
	.member_by_token = pg_member_by_token,
	.secret_get = pg_secret_get,
	.secret_set_sealed = pg_secret_set_sealed,
	.secrets_each_sealed = pg_secrets_each_sealed,
	.tool_by_name = pg_tool_by_name,
	.tool_secret_ids = pg_tool_secret_ids,
	.run_insert = pg_run_insert,
	.host_beat = pg_host_beat,
	.hosts_retire = pg_hosts_retire,
	.hosts_live = pg_hosts_live,
	.run_end_insert = pg_run_end_insert,
	.call_insert = pg_call_insert,
	.runs_page = pg_runs_page,
	.calls_page = pg_calls_page,
	.org_by_slug = pg_org_by_slug,
	.org_secrets_sealed = pg_org_secrets_sealed,
	.sealed_count = pg_sealed_count,
	.counts = pg_counts,
	.org_members = pg_org_members,
	.org_secrets = pg_org_secrets,
	.user_by_email = pg_user_by_email,
	.user_sole_owned = pg_user_sole_owned,
	.user_first_org = pg_user_first_org,
	.user_delete = pg_user_delete,
	.member_of = pg_member_of,
	.deny_rules = pg_deny_rules,
	.deny_count = pg_deny_count,
	.deny_insert = pg_deny_insert,
	.deny_get = pg_deny_get,
	.deny_delete = pg_deny_delete,

	/* vault_org.c, vault_policy.c, vault_ctl.c */
	.user_insert = pg_user_insert,
	.users_each = pg_users_each,
	.org_insert = pg_org_insert,
	.org_remove = pg_org_remove,
	.org_find = pg_org_find,
	.orgs_each = pg_orgs_each,
	.org_tool_count = pg_org_tool_count,
	.org_has_tool = pg_org_has_tool,
	.membership_insert = pg_membership_insert,
	.membership_get = pg_membership_get,
	.memberships = pg_memberships,
	.user_memberships = pg_user_memberships,
	.membership_update = pg_membership_update,
	.membership_remove = pg_membership_remove,
	.owner_count = pg_owner_count,
	.user_org_ids = pg_user_org_ids,
	.invite_insert = pg_invite_insert,
	.invites_each = pg_invites_each,
	.invite_by_code = pg_invite_by_code,
	.invite_use = pg_invite_use,
	.invite_delete = pg_invite_delete,
	.identity_insert = pg_identity_insert,
	.identity_by_token = pg_identity_by_token,
	.identity_member_hash = pg_identity_member_hash,
	.identity_count = pg_identity_count,
	.identity_trim = pg_identity_trim,
	.identity_revoke = pg_identity_revoke,
	.identity_tokens = pg_identity_tokens,
	.email_code_get = pg_email_code_get,
	.email_code_put = pg_email_code_put,
	.invites_of_email = pg_invites_of_email,
	.invite_by_id = pg_invite_by_id,
	.grant_find = pg_grant_find,
	.tool_secrets_mark = pg_tool_secrets_mark,
	.health = pg_health,
	.secret_mark = pg_secret_mark,
	.webhook_set = pg_webhook_set,
	.webhook_find = pg_webhook_find,

	/* vault_tool.c */
	.ref_get = pg_ref_get,
	.secrets = pg_secrets,
	.secret_insert = pg_secret_insert,
	.secret_set_value = pg_secret_set_value,
	.secret_update = pg_secret_update,
	.secret_users = pg_secret_users,
	.secret_delete = pg_secret_delete,
	.tools = pg_tools,
	.tools_by_slug = pg_tools_by_slug,
	.tool_name_used = pg_tool_name_used,
	.tool_insert = pg_tool_insert,
	.tool_update = pg_tool_update,
	.tool_secrets_set = pg_tool_secrets_set,
	.tool_delete = pg_tool_delete,
	.bundles = pg_bundles,
	.bundle_insert = pg_bundle_insert,
	.bundle_set_recipe = pg_bundle_set_recipe,
	.bundle_outside_user = pg_bundle_outside_user,
	.bundle_delete = pg_bundle_delete,

	/* calls and daily caps (the relay) */
	.read_begin = pg_read_begin,
	.read_end = pg_read_end,
	.call_end_insert = pg_call_end_insert,
	.call_cap_take = pg_call_cap_take,
	.call_used = pg_call_used,
	.call_cap_get = pg_call_cap_get,
	.call_cap_set = pg_call_cap_set,
	.tools_by_host = pg_tools_by_host,
	.registry_version = pg_registry_version,

	/* batched run ends */
	.run_ends_insert = pg_run_ends_insert,
	.runs_tools = pg_runs_tools,

	/* keyless runs' requests */
	.calls_run_page = pg_calls_run_page,

	/* treg compatibility */

	/* the keyring in the database (storage helper) */
	.keys = pg_keys,
	.key_insert = pg_key_insert,
	.key_set_current = pg_key_set_current,
	.key_retire = pg_key_retire,
	.key_unlink = pg_key_unlink,
	.key_host_set = pg_key_host_set,
	.key_hosts = pg_key_hosts,
	.sealed_keys = pg_sealed_keys,

	/* projects and usage (store_pg_project.c) */
	.project_insert = pg_project_insert,
	.projects = pg_projects,
	.project_delete = pg_project_delete,
	.tool_project_set = pg_tool_project_set,
	.member_projects = pg_member_projects,
	.member_projects_set = pg_member_projects_set,
	.invite_projects = pg_invite_projects,
	.invite_projects_set = pg_invite_projects_set,
	.usage = pg_usage,

	/* the observed agents (store_pg_audit.c) */
	.observed = pg_observed,
};

static int
pg_open(const struct store_params *sp, char *err, size_t errlen)
{
	const char	*keys[] = { "dbname", "password",
			    "fallback_application_name", NULL };
	const char	*vals[] = { sp->conninfo, sp->password, "tregd",
			    NULL };
	const char	*msg;

	if (sp->password == NULL) {
		keys[1] = "fallback_application_name";
		vals[1] = "tregd";
		keys[2] = vals[2] = NULL;
	}
	/* expand_dbname: the first value is the whole connection string. */
	pg_conn = PQconnectdbParams(keys, vals, 1);
	if (pg_conn == NULL || PQstatus(pg_conn) != CONNECTION_OK) {
		msg = pg_conn != NULL ? PQerrorMessage(pg_conn) :
		    "out of memory";
		snprintf(err, errlen, "cannot connect to PostgreSQL: %s", msg);
		err[strcspn(err, "\n")] = '\0';
		pg_close();
		return (-1);
	}
	if (pg_session() == -1 || pg_migrate() == -1) {
		snprintf(err, errlen, "PostgreSQL database %s: %s",
		    PQdb(pg_conn), pg_errbuf);
		pg_close();
		return (-1);
	}
	if (pg_pin(pg_conn) == -1) {
		snprintf(err, errlen, "PostgreSQL: too many connection "
		    "parameters to keep");
		pg_close();
		return (-1);
	}
	log_info("database: PostgreSQL %s on %s, %s", PQdb(pg_conn),
	    PQhost(pg_conn), PQsslInUse(pg_conn) ? "TLS" : "no TLS");
	return (0);
}

static void
pg_close(void)
{
	pg_unpin();
	if (pg_conn != NULL)
		PQfinish(pg_conn);
	pg_conn = NULL;
}

/*
 * A connection's session, the first or a new one: statements prepared
 * on an earlier connection are gone.
 */
int
pg_session(void)
{
	pg_generation++;
	PQsetNoticeProcessor(pg_conn, pg_notice, NULL);
	if (pg_exec("SET client_min_messages = warning") == -1 ||
	    pg_exec("SET TIME ZONE 'UTC'") == -1)
		return (-1);
	return (0);
}

/* A new connection serves (store_pg_conn.c). */
void
pg_found(void)
{
	pg_lost = 0;
	pg_state[0] = '\0';
}

/*
 * PostgreSQL checks its own pages and WAL; what can be wrong here is a
 * connection that no longer answers.
 */
static int
pg_check(char *buf, size_t len)
{
	if (pg_exec("SELECT 1") == -1) {
		snprintf(buf, len, "PostgreSQL: %s", pg_errbuf);
		return (-1);
	}
	return (0);
}

static int
pg_backup(const char *path)
{
	pg_seterr("a PostgreSQL database is backed up with pg_dump "
	    "(see tregd.conf(5)), not by tregd");
	return (-1);
}

/*
 * The counter every write statement on every host bumps in its own
 * transaction (store_pg_schema.c): read before the data, it can only be
 * older than what is read next, never newer.
 */
static int64_t
pg_version(void)
{
	static struct pg_stmt	 st = { "SELECT v FROM tregd_version", 0 };
	int64_t			 v;

	/* Read with the token's membership: one round trip less. */
	if (pg_seen_ok) {
		pg_seen_ok = 0;
		return (pg_seen);
	}
	return (pg_value(&st, NULL, &v) == 0 ? v : -1);
}

/*
 * The counter as a statement just read it: the next pg_version() takes
 * it instead of asking, unless another statement ran in between.  It
 * is as old as the data that statement read, never newer.
 */
void
pg_version_seen(int64_t v)
{
	pg_seen = v;
	pg_seen_ok = 1;
}

/* The last error's text (also for store_pg_conn.c, not through store.c). */
const char *
pg_error(void)
{
	return (pg_errbuf);
}

static int
pg_begin(void)
{
	return (pg_exec("BEGIN"));
}

static int
pg_commit(void)
{
	if (pg_exec("COMMIT") == -1) {
		pg_rollback();
		return (-1);
	}
	return (0);
}

/*
 * The server's state, not a fault: no connection (class 08), out of disk
 * or memory (53), shutting down (57), a lock not granted (55P03), a
 * transaction to try again (40).
 */
static int
pg_unavailable(void)
{
	static const char *const classes[] = { "08", "53", "57", "40",
	    "55P03", NULL };
	size_t	 i;

	if (pg_conn == NULL || PQstatus(pg_conn) == CONNECTION_BAD)
		return (1);
	for (i = 0; classes[i] != NULL; i++)
		if (strncmp(pg_state, classes[i], strlen(classes[i])) == 0)
			return (1);
	return (0);
}

static void
pg_rollback(void)
{
	PGresult	*res;

	if (pg_conn == NULL || PQtransactionStatus(pg_conn) == PQTRANS_IDLE)
		return;
	res = PQexec(pg_conn, "ROLLBACK");
	PQclear(res);
}

/* ------------------------------------------------------------------ */
/* Statements and their parameters.                                    */

void
pgq_init(struct pgq *q)
{
	memset(q, 0, sizeof(*q));
}

static int
pgq_next(struct pgq *q)
{
	if (q->n >= PGQ_MAX)
		fatalx("%s: too many parameters", __func__);
	return (q->n++);
}

void
pgq_int(struct pgq *q, int64_t v)
{
	int	 i = pgq_next(q);

	snprintf(q->nums[i], sizeof(q->nums[i]), "%lld", (long long)v);
	q->vals[i] = q->nums[i];
}

void
pgq_text(struct pgq *q, const char *s)
{
	q->vals[pgq_next(q)] = s;
}

void
pgq_blob(struct pgq *q, const void *p, size_t len)
{
	int	 i = pgq_next(q);

	q->vals[i] = p;
	q->lens[i] = len;
	q->fmts[i] = 1;
}

void
pgq_null(struct pgq *q)
{
	q->vals[pgq_next(q)] = NULL;
}

void
pgq_intif(struct pgq *q, int has, int64_t v)
{
	if (has)
		pgq_int(q, v);
	else
		pgq_null(q);
}

PGresult *
pg_run(struct pg_stmt *st, const struct pgq *q)
{
	PGresult	*res;
	char		 name[32];
	ExecStatusType	 s;

	pg_seen_ok = 0;		/* a statement since: no longer the latest */
	pg_state[0] = '\0';
	if (pg_conn == NULL) {
		pg_seterr("no database connection");
		return (NULL);
	}
	/* The statement's address names it: one per call site. */
	snprintf(name, sizeof(name), "s%lx", (unsigned long)(uintptr_t)st);
	if (st->prepared != pg_generation) {
		res = PQprepare(pg_conn, name, st->sql, 0, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			pg_fail(res, "prepare");
			return (NULL);
		}
		PQclear(res);
		st->prepared = pg_generation;
	}
	res = PQexecPrepared(pg_conn, name, q != NULL ? q->n : 0,
	    q != NULL ? q->vals : NULL, q != NULL ? q->lens : NULL,
	    q != NULL ? q->fmts : NULL, 1);
	s = PQresultStatus(res);
	if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
		pg_fail(res, "statement");
		return (NULL);
	}
	return (res);
}

/* A statement whose rows, if any, nobody reads: 0, or -1. */
int
pg_do(struct pg_stmt *st, const struct pgq *q)
{
	PGresult	*res;

	if ((res = pg_run(st, q)) == NULL)
		return (-1);
	PQclear(res);
	return (0);
}

int
pg_exec(const char *sql)
{
	PGresult	*res;
	ExecStatusType	 s;

	if (pg_conn == NULL) {
		pg_seterr("no database connection");
		return (-1);
	}
	pg_state[0] = '\0';
	res = PQexec(pg_conn, sql);
	s = PQresultStatus(res);
	if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK)
		return (pg_fail(res, "statement"));
	PQclear(res);
	return (0);
}

/*
 * Keep the server's primary message only.  A connection that is gone is
 * made again (store_pg_conn.c); meanwhile every request answers 503.
 */
int
pg_fail(PGresult *res, const char *what)
{
	const char	*m = NULL;

	pg_state[0] = '\0';
	if (res != NULL) {
		m = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		if (PQresultErrorField(res, PG_DIAG_SQLSTATE) != NULL)
			strlcpy(pg_state, PQresultErrorField(res,
			    PG_DIAG_SQLSTATE), sizeof(pg_state));
	}
	if (m == NULL)
		m = PQerrorMessage(pg_conn);
	snprintf(pg_errbuf, sizeof(pg_errbuf), "%s: %s", what,
	    m != NULL && *m != '\0' ? m : "failed");
	pg_errbuf[strcspn(pg_errbuf, "\n")] = '\0';
	PQclear(res);
	if (PQstatus(pg_conn) == CONNECTION_BAD && !pg_lost) {
		pg_lost = 1;
		pg_lost_start();
	}
	return (-1);
}

int
pg_unique_violation(void)
{
	return (strcmp(pg_state, "23505") == 0);
}

static void
pg_seterr(const char *s)
{
	strlcpy(pg_errbuf, s, sizeof(pg_errbuf));
}

/* Server notices go to the debug log, not to stderr. */
static void
pg_notice(void *arg, const char *msg)
{
	log_debug("database: %.*s", (int)strcspn(msg, "\n"), msg);
}

/* ------------------------------------------------------------------ */
/* Reading binary results.                                             */

int64_t
pg_int(const PGresult *res, int row, int col)
{
	const char	*p;
	uint64_t	 v8;
	uint32_t	 v4;
	uint16_t	 v2;

	if (PQgetisnull(res, row, col))
		return (0);
	p = PQgetvalue(res, row, col);
	switch (PQgetlength(res, row, col)) {
	case 8:
		memcpy(&v8, p, 8);
		return ((int64_t)be64toh(v8));
	case 4:
		memcpy(&v4, p, 4);
		return ((int32_t)be32toh(v4));
	case 2:
		memcpy(&v2, p, 2);
		return ((int16_t)be16toh(v2));
	case 1:
		return (*p != 0);		/* boolean */
	default:
		return (0);
	}
}

/* libpq ends every value with a NUL, binary ones too. */
const char *
pg_text(const PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return ("");
	return (PQgetvalue(res, row, col));
}

const char *
pg_ntext(const PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return (NULL);
	return (PQgetvalue(res, row, col));
}

int
pg_null(const PGresult *res, int row, int col)
{
	return (PQgetisnull(res, row, col));
}

/* An integer column that may be NULL: *has says whether it holds one. */
int64_t
pg_intif(const PGresult *res, int row, int col, int *has)
{
	*has = !PQgetisnull(res, row, col);
	return (pg_int(res, row, col));
}

char *
pg_strdup(const PGresult *res, int row, int col)
{
	char	*s;

	if (PQgetisnull(res, row, col))
		return (NULL);
	if ((s = strdup(PQgetvalue(res, row, col))) == NULL)
		fatal("%s: strdup", __func__);
	return (s);
}

void
pg_copy(char *dst, size_t len, const PGresult *res, int row, int col)
{
	strlcpy(dst, pg_text(res, row, col), len);
}
