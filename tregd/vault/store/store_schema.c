/*
 * The schema the store engines share: for each migration, the tables,
 * columns and indexes that sqlite and PostgreSQL both make, written once
 * so that a column added to one engine cannot be forgotten in the other.
 * Migration N of an engine is this text N, in the engine's words, then
 * the engine's own text N (store_sqlite_schema.c, store_pg_schema.c:
 * triggers, PL/pgSQL functions, sqlite's commit mark and table rebuilds,
 * the version counters), in one transaction.  Never edit a released
 * migration; add the next one (and raise SCHEMA_VERSIONS).
 *
 * The engines differ here only in type words, written as placeholders:
 *
 *   @ID     a table's id, never given twice: sqlite INTEGER PRIMARY KEY
 *           AUTOINCREMENT, PostgreSQL an identity column
 *   @ROWID  migration 1's ids: sqlite INTEGER PRIMARY KEY (its migration
 *           10 rebuilds those tables with AUTOINCREMENT), PostgreSQL the
 *           identity column of @ID.  A new table uses @ID.
 *   @INT    a 64-bit integer: INTEGER, BIGINT
 *   @BYTES  raw bytes: BLOB, BYTEA
 *
 * A plain INTEGER below is INTEGER on both (a 32-bit column on
 * PostgreSQL), as those columns were first made.
 *
 * Why words expanded at migration time and not C macros pasted between
 * string literals: the text stays SQL one can read and copy into a
 * shell, a placeholder without a word fails the migration (logged)
 * instead of compiling into wrong SQL, and the expander is small enough
 * to test alone (regress/unit/schema_test.c).  It runs once per
 * migration at open, so its cost is nothing.
 *
 * sqlite keeps each CREATE's text as written and its migration 10
 * parses it (sq_autoinc_sql()): the sqlite words expand to exactly the
 * text earlier releases wrote.
 */

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_schema.h"

static const char *const shared[SCHEMA_VERSIONS + 1] = {
	/* 1: identity, registry and audit. */
	[1] =
	"CREATE TABLE users ("
	"  id @ROWID,"
	"  email TEXT NOT NULL UNIQUE,"
	"  is_agent @INT NOT NULL DEFAULT 0,"
	"  created_at TEXT NOT NULL);"
	"CREATE TABLE orgs ("
	"  id @ROWID,"
	"  slug TEXT NOT NULL UNIQUE,"
	"  name TEXT NOT NULL,"
	"  created_at TEXT NOT NULL);"
	/* A membership is a token: one (user, org) pair with a role. */
	"CREATE TABLE memberships ("
	"  id @ROWID,"
	"  user_id @INT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  role TEXT NOT NULL CHECK (role IN"
	"    ('viewer', 'member', 'admin', 'owner')),"
	"  token_hash @BYTES NOT NULL UNIQUE,"
	"  tool_access TEXT,"			/* JSON array, NULL = all */
	"  local_run_enabled @INT NOT NULL DEFAULT 1,"
	"  agent_name TEXT,"			/* agents only */
	"  created_at TEXT NOT NULL,"
	"  UNIQUE (user_id, org_id));"
	"CREATE INDEX memberships_org ON memberships(org_id);"
	"CREATE TABLE invites ("
	"  id @ROWID,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  email TEXT NOT NULL,"
	"  role TEXT NOT NULL,"
	"  code_hash @BYTES NOT NULL UNIQUE,"
	"  tool_access TEXT,"
	"  local_run_enabled @INT NOT NULL DEFAULT 1,"
	"  expires_at @INT NOT NULL,"		/* unix time */
	"  used @INT NOT NULL DEFAULT 0,"
	"  created_by @INT,"
	"  created_at TEXT NOT NULL);"
	"CREATE TABLE bundles ("
	"  id @ROWID,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  owner_id @INT NOT NULL,"
	"  recipe TEXT NOT NULL,"
	"  files TEXT NOT NULL DEFAULT '{}',"	/* JSON object */
	"  created_at TEXT NOT NULL,"
	"  UNIQUE (org_id, name));"
	"CREATE TABLE secrets ("
	"  id @ROWID,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  kind TEXT NOT NULL CHECK (kind IN"
	"    ('env', 'oauth', 'secret_file', 'param')),"
	"  owner_id @INT NOT NULL,"
	"  bundle_id @INT REFERENCES bundles(id) ON DELETE CASCADE,"
	"  sealed @BYTES NOT NULL,"		/* see vault_crypto.c */
	"  status TEXT NOT NULL DEFAULT 'unknown',"
	"  status_detail TEXT,"
	"  checked_at TEXT,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX secrets_org ON secrets(org_id);"
	"CREATE TABLE tools ("
	"  id @ROWID,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  owner_id @INT NOT NULL,"
	"  base_url TEXT NOT NULL,"
	"  host TEXT NOT NULL,"
	"  bindings TEXT NOT NULL DEFAULT '[]',"	/* JSON */
	"  cli TEXT,"					/* JSON or NULL */
	"  health_check TEXT,"				/* JSON or NULL */
	"  examples TEXT NOT NULL DEFAULT '[]',"	/* JSON */
	"  bundle_id @INT REFERENCES bundles(id) ON DELETE CASCADE,"
	"  created_at TEXT NOT NULL,"
	"  UNIQUE (org_id, name));"
	/* Which secrets a tool's bindings and inject entries use. */
	"CREATE TABLE tool_secrets ("
	"  tool_id @INT NOT NULL REFERENCES tools(id) ON DELETE CASCADE,"
	"  secret_id @INT NOT NULL REFERENCES secrets(id),"
	"  PRIMARY KEY (tool_id, secret_id));"
	"CREATE INDEX tool_secrets_secret ON tool_secrets(secret_id);"
	"CREATE TABLE deny_rules ("
	"  id @ROWID,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  host TEXT,"
	"  path_prefix TEXT,"
	"  method TEXT,"
	"  user_id @INT,"
	"  note TEXT,"
	"  created_by @INT,"
	"  created_at TEXT NOT NULL);"
	/*
	 * Audit: server runs, and calls/grants/denials/reports.  Each
	 * engine makes them append-only: no update ever, and no delete
	 * while the org exists (deleting an org removes its records
	 * through the cascade).
	 */
	"CREATE TABLE runs ("
	"  id @ROWID,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  user_id @INT,"
	"  user_email TEXT NOT NULL,"
	"  tool TEXT NOT NULL,"
	"  argv TEXT NOT NULL,"			/* JSON, masked */
	"  exit_code @INT,"
	"  duration_ms @INT,"
	"  timed_out @INT NOT NULL DEFAULT 0,"
	"  redacted @INT NOT NULL DEFAULT 0,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX runs_org ON runs(org_id, id);"
	"CREATE TABLE calls ("
	"  id @ROWID,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  user_id @INT,"
	"  user_email TEXT NOT NULL,"
	"  tool_name TEXT,"
	"  method TEXT,"
	"  path TEXT,"
	"  status_code @INT,"
	"  kind TEXT NOT NULL,"			/* call, local_run */
	"  action TEXT,"			/* GRANT, DENY, REPORT */
	"  refused_by TEXT,"
	"  argv TEXT,"				/* JSON, masked */
	"  exit_code @INT,"
	"  verdict TEXT,"
	"  grant_id @INT,"			/* REPORT: its GRANT */
	"  duration_ms @INT,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX calls_org ON calls(org_id, id);",

	/*
	 * 2: a server run's row is written before it starts; how it ended
	 * is a second, append-only record.  A row without one is a run in
	 * flight, or one whose end was never recorded (interrupted).
	 */
	[2] =
	"CREATE TABLE run_ends ("
	"  run_id @INT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  outcome TEXT NOT NULL CHECK (outcome IN"
	"    ('ok', 'failed', 'timed_out', 'cancelled', 'not_run')),"
	"  exit_code @INT,"
	"  duration_ms @INT,"
	"  timed_out @INT NOT NULL DEFAULT 0,"
	"  redacted @INT NOT NULL DEFAULT 0,"
	"  truncated @INT NOT NULL DEFAULT 0,"	/* 1 stdout, 2 stderr */
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX calls_grant ON calls(grant_id)"
	"  WHERE grant_id IS NOT NULL;",

	/*
	 * 3: listings cost O(log N + page): GET /runs walks server runs and
	 * grants newest first, each on its own index, and merges them.
	 */
	[3] =
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
	[4] =
	"ALTER TABLE memberships ADD COLUMN daily_call_cap @INT;"
	"CREATE TABLE call_caps ("
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  user_id @INT NOT NULL,"
	"  day TEXT NOT NULL,"			/* YYYY-MM-DD, UTC */
	"  n @INT NOT NULL,"
	"  PRIMARY KEY (org_id, user_id, day));"
	"CREATE TABLE call_ends ("
	"  call_id @INT PRIMARY KEY REFERENCES calls(id) ON DELETE CASCADE,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  status_code @INT,"
	"  refused_by TEXT,"
	"  duration_ms @INT,"
	"  bytes @INT NOT NULL DEFAULT 0,"
	"  redacted @INT NOT NULL DEFAULT 0,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX tools_org_host ON tools(org_id, host);",

	/*
	 * 5: GET /runs of a caller restricted to some tools walks each
	 * allowed tool's runs and grants newest first on its own index.
	 */
	[5] =
	"CREATE INDEX runs_org_tool_time ON runs(org_id, tool, created_at, id);"
	"CREATE INDEX calls_grants_org_tool_time ON calls(org_id, tool_name,"
	"  created_at, id) WHERE kind = 'local_run' AND action = 'GRANT';",

	/*
	 * 6: the registry version, moved inside the writing transaction by
	 * every change of what a call's decision reads: each engine's own
	 * counter and triggers, nothing shared.
	 */

	/*
	 * 7: the keyring in the database, every key but the first sealed
	 * under the key before it, so that a host picks up a key another
	 * host made (vault_keyring.c); which key each host seals under;
	 * and sqlite's commit mark (store_sqlite.c), made on PostgreSQL
	 * too, where it stays unused.
	 */
	[7] =
	"CREATE TABLE keys ("
	"  id TEXT PRIMARY KEY,"		/* hex */
	"  wrapped @BYTES,"			/* NULL: a first key */
	"  wrapped_by TEXT,"
	"  current INTEGER NOT NULL DEFAULT 0,"
	"  retired_at TEXT,"
	"  created_at TEXT NOT NULL);"
	"CREATE TABLE key_hosts ("
	"  host TEXT PRIMARY KEY,"
	"  key_id TEXT NOT NULL,"
	"  seen_at TEXT NOT NULL);"
	"CREATE TABLE commit_mark (one INTEGER PRIMARY KEY"
	"  CHECK (one = 1), n @INT NOT NULL);"
	"INSERT INTO commit_mark VALUES (1, 0);",

	/*
	 * 8: the host instance that started a server run or a relayed
	 * call, and the instances serving, each with the time it was last
	 * seen alive: a run without its end is interrupted only when its
	 * host is gone (vault_hosts.c).
	 */
	[8] =
	"ALTER TABLE runs ADD COLUMN host @INT;"
	"ALTER TABLE calls ADD COLUMN host @INT;"
	"CREATE TABLE hosts ("
	"  instance @INT PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  seen_at @INT NOT NULL);",

	/*
	 * 9: identity tokens, a person across their orgs (only a hash,
	 * like a membership's), and the email sign-in codes: a salted
	 * hash, its expiry, the wrong codes it still takes and the
	 * sending window (vault_identity.c).
	 */
	[9] =
	"CREATE TABLE identity_tokens ("
	"  id @ID,"
	"  user_id @INT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
	"  token_hash @BYTES NOT NULL UNIQUE,"
	"  created_at TEXT NOT NULL);"
	"CREATE INDEX identity_tokens_user ON identity_tokens(user_id);"
	"CREATE TABLE email_codes ("
	"  email TEXT PRIMARY KEY,"
	"  salt @BYTES NOT NULL,"
	"  code_hash @BYTES NOT NULL,"
	"  expires_at @INT NOT NULL,"
	"  attempts @INT NOT NULL,"
	"  window_start @INT NOT NULL,"
	"  sent @INT NOT NULL);",

	/*
	 * 10 (issue 24): ids are never used again after a delete, so that
	 * an audit row never names a later object.  Nothing shared: sqlite
	 * rebuilds migration 1's tables with AUTOINCREMENT
	 * (sq_autoincrement()); PostgreSQL's identity columns never reuse
	 * a value.
	 *
	 * 11: nothing.  It was held for keyless runs' calls, which came as
	 * 13 so that a database that passed 12 meanwhile gets them too.
	 */

	/*
	 * 12 (issue 24): projects, a sub-scope of an org.  A tool is filed
	 * under one or is org-wide (NULL); a member's or an invite's
	 * project_access is a JSON array of project ids, NULL for the
	 * whole org.  Deleting a project frees its tools (vault_project.c
	 * says how many), never deletes them.
	 */
	[12] =
	"CREATE TABLE projects ("
	"  id @ID,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  slug TEXT NOT NULL,"
	"  created_by TEXT NOT NULL,"
	"  created_at TEXT NOT NULL,"
	"  UNIQUE (org_id, slug));"
	"ALTER TABLE tools ADD COLUMN project_id @INT REFERENCES"
	"  projects(id) ON DELETE SET NULL;"
	"CREATE INDEX tools_project ON tools(project_id);"
	"ALTER TABLE memberships ADD COLUMN project_access TEXT;"
	"ALTER TABLE invites ADD COLUMN project_access TEXT;",

	/*
	 * 13 (issue 23): each request of a keyless run's CLI is a call
	 * record naming its run (runs.id), where it came from ("run") and
	 * the host it went to; a run's requests are listed on their own
	 * index and counted as they are written (GET /runs' requests: one
	 * row read per run, not a count over its requests).
	 */
	[13] =
	"ALTER TABLE calls ADD COLUMN run_id @INT;"
	"ALTER TABLE calls ADD COLUMN place TEXT;"
	"ALTER TABLE calls ADD COLUMN target_host TEXT;"
	"CREATE INDEX calls_run ON calls(run_id, id) WHERE run_id IS NOT NULL;"
	"CREATE TABLE run_requests ("
	"  run_id @INT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	"  org_id @INT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,"
	"  n @INT NOT NULL);",

	/*
	 * 14 (issue 24): credential health's owner alerts.  A membership's
	 * webhook_url (treg's, set at sign-up) gets the invalid credentials
	 * of a health run (vault_health.c); NULL: none.
	 */
	[14] =
	"ALTER TABLE memberships ADD COLUMN webhook_url TEXT;",

	/*
	 * 15 (issue 24): the runtime a server run, a call or a grant came
	 * from, as treg's client says it in X-Treg-Client ("claude-code",
	 * "codex", "cli"), normalised (http_client_copy()): attribution on
	 * the audit rows, never authentication.  NULL on older rows: "".
	 */
	[15] =
	"ALTER TABLE runs ADD COLUMN client TEXT;"
	"ALTER TABLE calls ADD COLUMN client TEXT;",

	/*
	 * 16 (issue 24): treg's observed-agents roster reads the last 30
	 * days of the rows that name a runtime; these partial indexes hold
	 * only those (a plain terminal, "cli", and older rows, "" or NULL,
	 * are left out), so the roster costs the window's rows, not the
	 * org's whole history.  sq_observed() repeats the WHERE exactly.
	 */
	[16] =
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
	[17] =
	"ALTER TABLE deny_rules ADD COLUMN project_id @INT REFERENCES"
	"  projects(id) ON DELETE CASCADE;",
};

static const char	*schema_word(const char *, size_t,
			    const struct schema_words *);
static long		 schema_fill(const char *, const struct schema_words *,
			    char *);

int
schema_walk(int from, int (*step)(int))
{
	int	 v;

	if (from > SCHEMA_VERSIONS) {
		log_warnx("database schema version %d is newer than this "
		    "tregd (%d)", from, SCHEMA_VERSIONS);
		return (-1);
	}
	for (v = from + 1; v <= SCHEMA_VERSIONS; v++) {
		if (step(v) == -1) {
			log_warnx("database migration to version %d failed",
			    v);
			return (-1);
		}
		log_info("database schema migrated to version %d", v);
	}
	return (0);
}

/*
 * An empty text is skipped: libpq answers one PGRES_EMPTY_QUERY, which
 * pg_exec() takes for a failure.
 */
int
schema_run(int v, const struct schema_words *w, const char *own,
    int (*exec)(const char *))
{
	char	*text;
	int	 rc = -1;

	if ((text = schema_migration(v, w)) == NULL)
		return (-1);
	if ((*text == '\0' || exec(text) == 0) &&
	    (own == NULL || exec(own) == 0))
		rc = 0;
	free(text);
	return (rc);
}

char *
schema_migration(int v, const struct schema_words *w)
{
	if (v < 1 || v > SCHEMA_VERSIONS) {
		log_warnx("schema: no migration %d", v);
		return (NULL);
	}
	return (schema_expand(shared[v] != NULL ? shared[v] : "", w));
}

char *
schema_expand(const char *text, const struct schema_words *w)
{
	char	*out;
	long	 n;

	/* Measured first, then written: no buffer is ever guessed. */
	if ((n = schema_fill(text, w, NULL)) == -1)
		return (NULL);
	if ((out = malloc((size_t)n + 1)) == NULL)
		fatal("%s", __func__);
	schema_fill(text, w, out);
	out[n] = '\0';
	return (out);
}

/* The engine's word for the placeholder name (len letters), or NULL. */
static const char *
schema_word(const char *name, size_t len, const struct schema_words *w)
{
	const struct {
		const char	*name;
		const char	*word;
	} words[] = {
		{ "ID", w->id },
		{ "ROWID", w->rowid },
		{ "INT", w->integer },
		{ "BYTES", w->bytes },
	};
	size_t	 i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i].name) == len &&
		    strncmp(words[i].name, name, len) == 0)
			return (words[i].word);
	return (NULL);
}

/*
 * text with each placeholder replaced, written to out unless it is
 * NULL; its length, or -1 (logged) for a placeholder without a word or
 * a result over SCHEMA_TEXT_MAX.
 */
static long
schema_fill(const char *text, const struct schema_words *w, char *out)
{
	const char	*p, *word;
	size_t		 n = 0, len, wl;

	for (p = text; *p != '\0'; p += len) {
		if (*p != '@') {
			len = 1;
			word = p;
			wl = 1;
		} else {
			for (len = 1; p[len] >= 'A' && p[len] <= 'Z'; len++)
				;
			if ((word = schema_word(p + 1, len - 1, w)) == NULL) {
				log_warnx("schema: no word for %.*s",
				    (int)(len < 16 ? len : 16), p);
				return (-1);
			}
			wl = strlen(word);
		}
		if (wl > SCHEMA_TEXT_MAX - n) {
			log_warnx("schema: a migration over %d bytes",
			    SCHEMA_TEXT_MAX);
			return (-1);
		}
		if (out != NULL)
			memcpy(out + n, word, wl);
		n += wl;
	}
	return ((long)n);
}
