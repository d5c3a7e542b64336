/*
 * The sqlite schema, versioned with PRAGMA user_version: each entry of
 * migrations[] moves the schema one version forward inside a transaction.
 * Never edit a released migration; add the next one.  Every engine
 * numbers its migrations alike: version N means the same tables and
 * indexes on sqlite and on PostgreSQL.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_sqlite.h"

/* A table whose every row written moves the registry version. */
#define SQ_REG_BUMP_AS(t, name, op)					\
	"CREATE TRIGGER " t "_reg_" name " AFTER " op " ON " t " BEGIN"	\
	"  UPDATE registry_version SET v = v + 1; END;"
#define SQ_REG_BUMP1(t, op)	SQ_REG_BUMP_AS(t, op, op)
#define SQ_REG_BUMP(t)							\
	SQ_REG_BUMP1(t, "INSERT") SQ_REG_BUMP1(t, "UPDATE")		\
	SQ_REG_BUMP1(t, "DELETE")
/*
 * Secrets: not their health (status, status_detail, checked_at), which
 * every member's run report writes and no call reads.
 */
/*
 * Every row written moves the commit mark in the writing transaction:
 * the database file holds the mark of the last transaction it holds
 * (store_sqlite.c compares it with the mark each commit wrote beside it).
 */
#define SQ_MARK1(t, op)							\
	"CREATE TRIGGER " t "_mark_" op " AFTER " op " ON " t " BEGIN"	\
	"  UPDATE commit_mark SET n = n + 1; END;"
#define SQ_MARK(t)							\
	SQ_MARK1(t, "INSERT") SQ_MARK1(t, "UPDATE") SQ_MARK1(t, "DELETE")
#define SQ_REG_BUMP_SECRETS						\
	SQ_REG_BUMP1("secrets", "INSERT") SQ_REG_BUMP1("secrets", "DELETE")	\
	SQ_REG_BUMP_AS("secrets", "UPDATE", "UPDATE OF org_id, name, kind, "	\
	    "owner_id, bundle_id, sealed")

static const char *const migrations[] = {
	/* 1: identity, registry and audit. */
	"CREATE TABLE users ("
	"  id INTEGER PRIMARY KEY,"
	"  email TEXT NOT NULL UNIQUE,"
	"  is_agent INTEGER NOT NULL DEFAULT 0,"
	"  created_at TEXT NOT NULL);"
	"CREATE TABLE orgs ("
	"  id INTEGER PRIMARY KEY,"
	"  slug TEXT NOT NULL UNIQUE,"
	"  name TEXT NOT NULL,"
	"  created_at TEXT NOT NULL);"
	/* A membership is a token: one (user, org) pair with a role. */
	"CREATE TABLE memberships ("
	"  id INTEGER PRIMARY KEY,"
	"  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  role TEXT NOT NULL CHECK (role IN"
	"    ('viewer', 'member', 'admin', 'owner')),"
	"  token_hash BLOB NOT NULL UNIQUE,"
	"  tool_access TEXT,"			/* JSON array, NULL = all */
	"  local_run_enabled INTEGER NOT NULL DEFAULT 1,"
	"  agent_name TEXT,"			/* agents only */
	"  created_at TEXT NOT NULL,"
	"  UNIQUE (user_id, org_id));"
	"CREATE INDEX memberships_org ON memberships(org_id);"
	"CREATE TABLE invites ("
	"  id INTEGER PRIMARY KEY,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  email TEXT NOT NULL,"
	"  role TEXT NOT NULL,"
	"  code_hash BLOB NOT NULL UNIQUE,"
	"  tool_access TEXT,"
	"  local_run_enabled INTEGER NOT NULL DEFAULT 1,"
	"  expires_at INTEGER NOT NULL,"	/* unix time */
	"  used INTEGER NOT NULL DEFAULT 0,"
	"  created_by INTEGER,"
	"  created_at TEXT NOT NULL);"
	"CREATE TABLE bundles ("
	"  id INTEGER PRIMARY KEY,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  owner_id INTEGER NOT NULL,"
	"  recipe TEXT NOT NULL,"
	"  files TEXT NOT NULL DEFAULT '{}',"	/* JSON object */
	"  created_at TEXT NOT NULL,"
	"  UNIQUE (org_id, name));"
	"CREATE TABLE secrets ("
	"  id INTEGER PRIMARY KEY,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  kind TEXT NOT NULL CHECK (kind IN"
	"    ('env', 'oauth', 'secret_file', 'param')),"
	"  owner_id INTEGER NOT NULL,"
	"  bundle_id INTEGER REFERENCES bundles(id) ON DELETE CASCADE,"
	"  sealed BLOB NOT NULL,"		/* see vault_crypto.c */
	"  status TEXT NOT NULL DEFAULT 'unknown',"
	"  status_detail TEXT,"
	"  checked_at TEXT,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX secrets_org ON secrets(org_id);"
	"CREATE TABLE tools ("
	"  id INTEGER PRIMARY KEY,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  owner_id INTEGER NOT NULL,"
	"  base_url TEXT NOT NULL,"
	"  host TEXT NOT NULL,"
	"  bindings TEXT NOT NULL DEFAULT '[]',"	/* JSON */
	"  cli TEXT,"					/* JSON or NULL */
	"  health_check TEXT,"				/* JSON or NULL */
	"  examples TEXT NOT NULL DEFAULT '[]',"	/* JSON */
	"  bundle_id INTEGER REFERENCES bundles(id) ON DELETE CASCADE,"
	"  created_at TEXT NOT NULL,"
	"  UNIQUE (org_id, name));"
	/* Which secrets a tool's bindings and inject entries use. */
	"CREATE TABLE tool_secrets ("
	"  tool_id INTEGER NOT NULL REFERENCES tools(id) ON DELETE CASCADE,"
	"  secret_id INTEGER NOT NULL REFERENCES secrets(id),"
	"  PRIMARY KEY (tool_id, secret_id));"
	"CREATE INDEX tool_secrets_secret ON tool_secrets(secret_id);"
	"CREATE TABLE deny_rules ("
	"  id INTEGER PRIMARY KEY,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  host TEXT,"
	"  path_prefix TEXT,"
	"  method TEXT,"
	"  user_id INTEGER,"
	"  note TEXT,"
	"  created_by INTEGER,"
	"  created_at TEXT NOT NULL);"
	/* Audit: server runs, and calls/grants/denials/reports. */
	"CREATE TABLE runs ("
	"  id INTEGER PRIMARY KEY,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  user_id INTEGER,"
	"  user_email TEXT NOT NULL,"
	"  tool TEXT NOT NULL,"
	"  argv TEXT NOT NULL,"			/* JSON, masked */
	"  exit_code INTEGER,"
	"  duration_ms INTEGER,"
	"  timed_out INTEGER NOT NULL DEFAULT 0,"
	"  redacted INTEGER NOT NULL DEFAULT 0,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX runs_org ON runs(org_id, id);"
	"CREATE TABLE calls ("
	"  id INTEGER PRIMARY KEY,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  user_id INTEGER,"
	"  user_email TEXT NOT NULL,"
	"  tool_name TEXT,"
	"  method TEXT,"
	"  path TEXT,"
	"  status_code INTEGER,"
	"  kind TEXT NOT NULL,"			/* call, local_run */
	"  action TEXT,"			/* GRANT, DENY, REPORT */
	"  refused_by TEXT,"
	"  argv TEXT,"				/* JSON, masked */
	"  exit_code INTEGER,"
	"  verdict TEXT,"
	"  grant_id INTEGER,"			/* REPORT: its GRANT */
	"  duration_ms INTEGER,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX calls_org ON calls(org_id, id);"
	/*
	 * Append-only: no update ever, and no delete while the org exists
	 * (deleting an org removes its records through the cascade).
	 */
	"CREATE TRIGGER runs_no_update BEFORE UPDATE ON runs BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;"
	"CREATE TRIGGER calls_no_update BEFORE UPDATE ON calls BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;"
	"CREATE TRIGGER runs_no_delete BEFORE DELETE ON runs"
	"  WHEN EXISTS (SELECT 1 FROM orgs WHERE id = OLD.org_id) BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;"
	"CREATE TRIGGER calls_no_delete BEFORE DELETE ON calls"
	"  WHEN EXISTS (SELECT 1 FROM orgs WHERE id = OLD.org_id) BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;",

	/*
	 * 2: a server run's row is written before it starts; how it ended
	 * is a second, append-only record.  A row without one is a run in
	 * flight, or one whose end was never recorded (interrupted).
	 */
	"CREATE TABLE run_ends ("
	"  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  outcome TEXT NOT NULL CHECK (outcome IN"
	"    ('ok', 'failed', 'timed_out', 'cancelled', 'not_run')),"
	"  exit_code INTEGER,"
	"  duration_ms INTEGER,"
	"  timed_out INTEGER NOT NULL DEFAULT 0,"
	"  redacted INTEGER NOT NULL DEFAULT 0,"
	"  truncated INTEGER NOT NULL DEFAULT 0,"	/* 1 stdout, 2 stderr */
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX calls_grant ON calls(grant_id)"
	"  WHERE grant_id IS NOT NULL;"
	"CREATE TRIGGER run_ends_no_update BEFORE UPDATE ON run_ends BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;"
	"CREATE TRIGGER run_ends_no_delete BEFORE DELETE ON run_ends"
	"  WHEN EXISTS (SELECT 1 FROM orgs WHERE id = OLD.org_id) BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;",

	/*
	 * 3: listings cost O(log N + page): GET /runs walks server runs and
	 * grants newest first, each on its own index, and merges them.
	 */
	"CREATE INDEX runs_org_time ON runs(org_id, created_at, id);"
	"CREATE INDEX runs_time ON runs(created_at, id);"
	"CREATE INDEX calls_grants_org_time ON calls(org_id, created_at, id)"
	"  WHERE kind = 'local_run' AND action = 'GRANT';"
	"CREATE INDEX calls_grants_time ON calls(created_at, id)"
	"  WHERE kind = 'local_run' AND action = 'GRANT';"
	"CREATE INDEX tools_org_bundle ON tools(bundle_id);"
	"CREATE INDEX secrets_bundle ON secrets(bundle_id);",

	/*
	 * 4: the relay.  A call's row is written before the upstream is
	 * asked; how it ended is a second, append-only record.  Daily call
	 * caps per membership, counted per UTC day in one upsert.
	 */
	"ALTER TABLE memberships ADD COLUMN daily_call_cap INTEGER;"
	"CREATE TABLE call_caps ("
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  user_id INTEGER NOT NULL,"
	"  day TEXT NOT NULL,"			/* YYYY-MM-DD, UTC */
	"  n INTEGER NOT NULL,"
	"  PRIMARY KEY (org_id, user_id, day));"
	"CREATE TABLE call_ends ("
	"  call_id INTEGER PRIMARY KEY REFERENCES calls(id) ON DELETE CASCADE,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  status_code INTEGER,"
	"  refused_by TEXT,"
	"  duration_ms INTEGER,"
	"  bytes INTEGER NOT NULL DEFAULT 0,"
	"  redacted INTEGER NOT NULL DEFAULT 0,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX tools_org_host ON tools(org_id, host);"
	"CREATE TRIGGER call_ends_no_update BEFORE UPDATE ON call_ends BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;"
	"CREATE TRIGGER call_ends_no_delete BEFORE DELETE ON call_ends"
	"  WHEN EXISTS (SELECT 1 FROM orgs WHERE id = OLD.org_id) BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;",

	/*
	 * 5: GET /runs of a caller restricted to some tools walks each
	 * allowed tool's runs and grants newest first on its own index.
	 */
	"CREATE INDEX runs_org_tool_time ON runs(org_id, tool, created_at, id);"
	"CREATE INDEX calls_grants_org_tool_time ON calls(org_id, tool_name,"
	"  created_at, id) WHERE kind = 'local_run' AND action = 'GRANT';",

	/*
	 * 6: the registry version moves, inside the writing transaction,
	 * with every change of what a call's decision reads (not with the
	 * audit, the runs or the daily counts): what the relay cached at
	 * one version is what the database holds while it stays.
	 */
	"CREATE TABLE registry_version (one INTEGER PRIMARY KEY"
	"  CHECK (one = 1), v INTEGER NOT NULL);"
	"INSERT INTO registry_version VALUES (1, 1);"
	SQ_REG_BUMP("users") SQ_REG_BUMP("orgs") SQ_REG_BUMP("memberships")
	SQ_REG_BUMP("invites") SQ_REG_BUMP("bundles") SQ_REG_BUMP_SECRETS
	SQ_REG_BUMP("tools") SQ_REG_BUMP("tool_secrets")
	SQ_REG_BUMP("deny_rules"),

	/*
	 * 7: the keyring in the database, every key but
	 * the first sealed under the key before it, so that a host picks
	 * up a key another host made (vault_keyring.c); which key each
	 * host seals under; and sqlite's commit mark (store_sqlite.c).  A
	 * table added later needs its SQ_MARK too.
	 */
	"CREATE TABLE keys ("
	"  id TEXT PRIMARY KEY,"		/* hex */
	"  wrapped BLOB,"			/* NULL: a first key */
	"  wrapped_by TEXT,"
	"  current INTEGER NOT NULL DEFAULT 0,"
	"  retired_at TEXT,"
	"  created_at TEXT NOT NULL);"
	"CREATE TABLE key_hosts ("
	"  host TEXT PRIMARY KEY,"
	"  key_id TEXT NOT NULL,"
	"  seen_at TEXT NOT NULL);"
	"CREATE TABLE commit_mark (one INTEGER PRIMARY KEY"
	"  CHECK (one = 1), n INTEGER NOT NULL);"
	"INSERT INTO commit_mark VALUES (1, 0);"
	SQ_MARK("users") SQ_MARK("orgs") SQ_MARK("memberships")
	SQ_MARK("invites") SQ_MARK("bundles") SQ_MARK("secrets")
	SQ_MARK("tools") SQ_MARK("tool_secrets") SQ_MARK("deny_rules")
	SQ_MARK("runs") SQ_MARK("calls") SQ_MARK("run_ends")
	SQ_MARK("call_caps") SQ_MARK("call_ends") SQ_MARK("keys")
	SQ_MARK("key_hosts"),

	/*
	 * 8: the host instance that started a server run or a relayed
	 * call, and the instances serving, each with the time it was last
	 * seen alive: a run without its end is interrupted only when its
	 * host is gone (vault_hosts.c).  hosts has no SQ_MARK: it is
	 * a heartbeat, and losing it loses nothing.
	 */
	"ALTER TABLE runs ADD COLUMN host INTEGER;"
	"ALTER TABLE calls ADD COLUMN host INTEGER;"
	"CREATE TABLE hosts ("
	"  instance INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  seen_at INTEGER NOT NULL);",

	/*
	 * 9: identity tokens, a person across their orgs (only a hash,
	 * like a membership's), and the email sign-in codes: a salted
	 * hash, its expiry, the wrong codes it still takes and the
	 * sending window (vault_identity.c).
	 */
	"CREATE TABLE identity_tokens ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
	"  token_hash BLOB NOT NULL UNIQUE,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX identity_tokens_user ON identity_tokens(user_id);"
	"CREATE TABLE email_codes ("
	"  email TEXT PRIMARY KEY,"
	"  salt BLOB NOT NULL,"
	"  code_hash BLOB NOT NULL,"
	"  expires_at INTEGER NOT NULL,"
	"  attempts INTEGER NOT NULL,"
	"  window_start INTEGER NOT NULL,"
	"  sent INTEGER NOT NULL);"
	SQ_MARK("identity_tokens") SQ_MARK("email_codes"),

	/*
	 * 10 (issue 24): ids are never used again
	 * after a delete, so that an audit row never names a later object:
	 * each table with an id is rebuilt with AUTOINCREMENT, which SQL
	 * in a transaction cannot do (sq_autoincrement()).  PostgreSQL's
	 * identity columns never reuse a value: its 10 changes nothing.
	 */
	NULL,

	/*
	 * 11: nothing.  It was held for keyless runs' calls, which came
	 * as 13 so that a database that passed 12 meanwhile gets them too.
	 */
	"SELECT 1;",

	/*
	 * 12 (issue 24): projects, a sub-scope of an org.  A tool is filed
	 * under one or is org-wide (NULL); a member's or an invite's
	 * project_access is a JSON array of project ids, NULL for the
	 * whole org.  Deleting a project frees its tools (vault_project.c
	 * says how many), never deletes them.
	 */
	"CREATE TABLE projects ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  slug TEXT NOT NULL,"
	"  created_by TEXT NOT NULL,"
	"  created_at TEXT NOT NULL,"
	"  UNIQUE (org_id, slug));"
	"ALTER TABLE tools ADD COLUMN project_id INTEGER REFERENCES"
	"  projects(id) ON DELETE SET NULL;"
	"CREATE INDEX tools_project ON tools(project_id);"
	"ALTER TABLE memberships ADD COLUMN project_access TEXT;"
	"ALTER TABLE invites ADD COLUMN project_access TEXT;"
	SQ_REG_BUMP("projects") SQ_MARK("projects"),

	/*
	 * 13 (issue 23): each request of a keyless run's CLI is a call
	 * record naming its run (runs.id), where it came from ("run") and
	 * the host it went to; a run's requests are listed on their own
	 * index and counted as they are written (GET /runs' requests: one
	 * row read per run, not a count over its requests).
	 */
	"ALTER TABLE calls ADD COLUMN run_id INTEGER;"
	"ALTER TABLE calls ADD COLUMN place TEXT;"
	"ALTER TABLE calls ADD COLUMN target_host TEXT;"
	"CREATE INDEX calls_run ON calls(run_id, id) WHERE run_id IS NOT NULL;"
	"CREATE TABLE run_requests ("
	"  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	"  org_id INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  n INTEGER NOT NULL);"
	SQ_MARK("run_requests"),

	/*
	 * 14 (issue 24): credential health's owner alerts.  A membership's
	 * webhook_url (treg's, set at sign-up) gets the invalid credentials
	 * of a health run (vault_health.c); NULL: none.
	 */
	"ALTER TABLE memberships ADD COLUMN webhook_url TEXT;",

	/*
	 * 15 (issue 24): the runtime a server run, a call or a grant came
	 * from, as treg's client says it in X-Treg-Client ("claude-code",
	 * "codex", "cli"), normalised (http_client_copy()): attribution on
	 * the audit rows, never authentication.  NULL on older rows: "".
	 */
	"ALTER TABLE runs ADD COLUMN client TEXT;"
	"ALTER TABLE calls ADD COLUMN client TEXT;",

	/*
	 * 16 (issue 24): treg's observed-agents roster reads the last 30
	 * days of the rows that name a runtime; these partial indexes hold
	 * only those (a plain terminal, "cli", and older rows, "" or NULL,
	 * are left out), so the roster costs the window's rows, not the
	 * org's whole history.  sq_observed() repeats the WHERE exactly.
	 */
	"CREATE INDEX calls_org_client_time ON calls(org_id, created_at)"
	"  WHERE client NOT IN ('', 'cli');"
	"CREATE INDEX runs_org_client_time ON runs(org_id, created_at)"
	"  WHERE client NOT IN ('', 'cli');",

	/*
	 * 17 (issue 24): a deny rule scoped to a project binds only calls,
	 * runs and grants through that project's tools (treg's
	 * DenyRule.project_id); NULL: every tool.  Deleting the project
	 * deletes its rules, which could never fire again.
	 */
	"ALTER TABLE deny_rules ADD COLUMN project_id INTEGER REFERENCES"
	"  projects(id) ON DELETE CASCADE;",
};
#define NMIGRATIONS	((int)(sizeof(migrations) / sizeof(migrations[0])))

/* The tables whose "id INTEGER PRIMARY KEY" becomes AUTOINCREMENT. */
static const char *const autoinc_tables[] = {
	"users", "orgs", "memberships", "invites", "bundles", "secrets",
	"tools", "deny_rules", "runs", "calls", NULL
};

static int	sq_autoincrement(int);
static int	sq_autoinc_table(const char *);
static char	*sq_autoinc_sql(const char *, const char *);

int
sq_migrate(void)
{
	sqlite3_stmt	*st;
	char		 sql[64];
	int		 version = -1, v;

	if (sqlite3_prepare_v2(vault_db, "PRAGMA user_version", -1, &st,
	    NULL) != SQLITE_OK)
		return (-1);
	if (sq_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version < 0)
		return (-1);
	if (version > NMIGRATIONS) {
		log_warnx("database schema version %d is newer than this "
		    "tregd (%d)", version, NMIGRATIONS);
		return (-1);
	}
	for (v = version; v < NMIGRATIONS; v++) {
		if (migrations[v] == NULL) {
			if (sq_autoincrement(v + 1) == -1) {
				log_warnx("database migration to version %d "
				    "failed", v + 1);
				return (-1);
			}
			log_info("database schema migrated to version %d",
			    v + 1);
			continue;
		}
		if (db_exec("BEGIN IMMEDIATE") == -1)
			return (-1);
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
		if (db_exec(migrations[v]) == -1 || db_exec(sql) == -1 ||
		    db_exec("COMMIT") == -1) {
			if (!sqlite3_get_autocommit(vault_db))
				db_exec("ROLLBACK");
			log_warnx("database migration to version %d failed",
			    v + 1);
			return (-1);
		}
		log_info("database schema migrated to version %d", v + 1);
	}
	return (0);
}

int
sq_schema_touch(void)
{
	char	 sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", NMIGRATIONS);
	return (db_exec(sql));
}

/*
 * Migration to version v: each table of autoinc_tables[] made again as
 * it is, but with AUTOINCREMENT, its rows, indexes and triggers kept.
 * Foreign keys are off meanwhile (dropping a table with them on would
 * delete what references it) and checked before the commit; the legacy
 * rename leaves the other tables' references to the name as they are.
 */
static int
sq_autoincrement(int v)
{
	sqlite3_stmt	*st;
	char		 sql[64];
	size_t		 i;
	int		 rc = -1, bad;

	if (db_exec("PRAGMA foreign_keys = OFF") == -1 ||
	    db_exec("PRAGMA legacy_alter_table = ON") == -1)
		goto out;
	if (db_exec("BEGIN IMMEDIATE") == -1)
		goto out;
	for (i = 0; autoinc_tables[i] != NULL; i++)
		if (sq_autoinc_table(autoinc_tables[i]) == -1)
			goto fail;
	if (sqlite3_prepare_v2(vault_db, "PRAGMA foreign_key_check", -1,
	    &st, NULL) != SQLITE_OK)
		goto fail;
	bad = sq_step(st) != SQLITE_DONE;
	sqlite3_finalize(st);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v);
	if (bad || db_exec(sql) == -1 || db_exec("COMMIT") == -1)
		goto fail;
	rc = 0;
	goto out;
 fail:
	if (!sqlite3_get_autocommit(vault_db))
		db_exec("ROLLBACK");
 out:
	if (db_exec("PRAGMA legacy_alter_table = OFF") == -1 ||
	    db_exec("PRAGMA foreign_keys = ON") == -1)
		rc = -1;
	return (rc);
}

/* One table rebuilt with AUTOINCREMENT, in the open transaction. */
static int
sq_autoinc_table(const char *t)
{
	sqlite3_stmt	*st;
	char		*def = NULL, **keep = NULL, *q;
	size_t		 n = 0, i;
	int		 rc = -1;

	if (sqlite3_prepare_v2(vault_db, "SELECT type, sql FROM sqlite_master "
	    "WHERE tbl_name = ?1 AND sql IS NOT NULL ORDER BY type = 'table' "
	    "DESC", -1, &st, NULL) != SQLITE_OK)
		return (-1);
	sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
	while (sq_step(st) == SQLITE_ROW) {
		q = (char *)sqlite3_column_text(st, 1);
		if (strcmp((const char *)sqlite3_column_text(st, 0),
		    "table") == 0) {
			if (def == NULL && (def = sq_autoinc_sql(t, q)) == NULL)
				break;
			continue;
		}
		if ((keep = reallocarray(keep, n + 1, sizeof(*keep))) == NULL ||
		    (keep[n] = strdup(q)) == NULL)
			fatal("%s", __func__);
		n++;
	}
	sqlite3_finalize(st);
	if (def == NULL)
		goto out;
	/* Already done (a database made by a later tregd): nothing to do. */
	if (*def == '\0') {
		rc = 0;
		goto out;
	}
	if (db_exec(def) == -1)
		goto out;
	if ((q = sqlite3_mprintf("INSERT INTO \"%w__new\" SELECT * FROM "
	    "\"%w\"; DROP TABLE \"%w\"; ALTER TABLE \"%w__new\" RENAME TO "
	    "\"%w\";", t, t, t, t, t)) == NULL)
		fatalx("%s: sqlite3_mprintf", __func__);
	rc = db_exec(q);
	sqlite3_free(q);
	for (i = 0; rc == 0 && i < n; i++)
		rc = db_exec(keep[i]);
 out:
	for (i = 0; i < n; i++)
		free(keep[i]);
	free(keep);
	free(def);
	return (rc);
}

/*
 * The definition of table t (sql) for t__new with AUTOINCREMENT; "" when
 * it has it already; NULL (and logged) when it is not as tregd made it.
 */
static char *
sq_autoinc_sql(const char *t, const char *sql)
{
	static const char	 pk[] = "id INTEGER PRIMARY KEY,";
	char			 head[64], *out;
	const char		*p;
	size_t			 hl;

	if (strstr(sql, "AUTOINCREMENT") != NULL)
		return (strdup(""));
	hl = (size_t)snprintf(head, sizeof(head), "CREATE TABLE %s (", t);
	if (hl >= sizeof(head) || strncmp(sql, head, hl) != 0 ||
	    (p = strstr(sql, pk)) == NULL) {
		log_warnx("table %s is not as tregd made it", t);
		return (NULL);
	}
	if (asprintf(&out, "CREATE TABLE \"%s__new\" (%.*sid INTEGER PRIMARY "
	    "KEY AUTOINCREMENT,%s", t, (int)(p - sql - hl), sql + hl,
	    p + sizeof(pk) - 1) == -1)
		fatal("%s: asprintf", __func__);
	return (out);
}
