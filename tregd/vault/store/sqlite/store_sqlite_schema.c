/*
 * The sqlite schema, versioned with PRAGMA user_version: migration N
 * moves the schema from version N - 1 to N inside a transaction.  Its
 * tables, columns and indexes are migration N of store_schema.c, shared
 * with PostgreSQL, in sqlite's words (sq_words); what is sqlite's own
 * (own[N]: triggers, the registry version, the commit mark, the rebuild
 * of migration 10) follows it.  Never edit a released migration; add
 * the next one.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_schema.h"
#include "store_sqlite.h"

/*
 * A table whose every row written moves the registry version; secrets
 * only through the columns a call reads (store_schema.h).
 */
#define SQ_REG_BUMP_AS(t, name, op)					\
	"CREATE TRIGGER " t "_reg_" name " AFTER " op " ON " t " BEGIN"	\
	"  UPDATE registry_version SET v = v + 1; END;"
#define SQ_REG_BUMP1(t, op)	SQ_REG_BUMP_AS(t, op, op)
#define SQ_REG_BUMP(t)							\
	SQ_REG_BUMP1(t, "INSERT") SQ_REG_BUMP1(t, "UPDATE")		\
	SQ_REG_BUMP1(t, "DELETE")
#define SQ_REG_BUMP_SECRETS						\
	SQ_REG_BUMP1("secrets", "INSERT") SQ_REG_BUMP1("secrets", "DELETE")	\
	SQ_REG_BUMP_AS("secrets", "UPDATE", "UPDATE OF " SCHEMA_SECRETS_READ)
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

/* The sqlite words of the shared text (store_schema.c). */
static const struct schema_words sq_words = {
	.id = "INTEGER PRIMARY KEY AUTOINCREMENT",
	.rowid = "INTEGER PRIMARY KEY",
	.integer = "INTEGER",
	.bytes = "BLOB",
};

/* Migration 10 is no SQL: sq_autoincrement() rebuilds the tables. */
#define SQ_AUTOINC_VERSION	10

/*
 * Each migration's own part, run after its shared text: the triggers
 * (sqlite has no functions), the registry version and the commit mark.
 */
static const char *const own[SCHEMA_VERSIONS + 1] = {
	/*
	 * 1: audit records are append-only: no update ever, and no delete
	 * while the org exists (deleting an org removes its records
	 * through the cascade).
	 */
	[1] =
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

	/* 2: a run's end is append-only too. */
	[2] =
	"CREATE TRIGGER run_ends_no_update BEFORE UPDATE ON run_ends BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;"
	"CREATE TRIGGER run_ends_no_delete BEFORE DELETE ON run_ends"
	"  WHEN EXISTS (SELECT 1 FROM orgs WHERE id = OLD.org_id) BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;",

	/* 4: and a call's end. */
	[4] =
	"CREATE TRIGGER call_ends_no_update BEFORE UPDATE ON call_ends BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;"
	"CREATE TRIGGER call_ends_no_delete BEFORE DELETE ON call_ends"
	"  WHEN EXISTS (SELECT 1 FROM orgs WHERE id = OLD.org_id) BEGIN"
	"  SELECT RAISE(ABORT, 'audit records are append-only'); END;",

	/*
	 * 6: the registry version moves, inside the writing transaction,
	 * with every change of what a call's decision reads (not with the
	 * audit, the runs or the daily counts): what the relay cached at
	 * one version is what the database holds while it stays.
	 */
	[6] =
	"CREATE TABLE registry_version (one INTEGER PRIMARY KEY"
	"  CHECK (one = 1), v INTEGER NOT NULL);"
	"INSERT INTO registry_version VALUES (1, 1);"
	SCHEMA_REGISTRY_TABLES(SQ_REG_BUMP, SQ_REG_BUMP_SECRETS),

	/*
	 * 7: the commit mark (store_sqlite.c) of every table so far.  A
	 * table added later needs its SQ_MARK too.
	 */
	[7] =
	SQ_MARK("users") SQ_MARK("orgs") SQ_MARK("memberships")
	SQ_MARK("invites") SQ_MARK("bundles") SQ_MARK("secrets")
	SQ_MARK("tools") SQ_MARK("tool_secrets") SQ_MARK("deny_rules")
	SQ_MARK("runs") SQ_MARK("calls") SQ_MARK("run_ends")
	SQ_MARK("call_caps") SQ_MARK("call_ends") SQ_MARK("keys")
	SQ_MARK("key_hosts"),

	/*
	 * 8: hosts has no SQ_MARK: it is a heartbeat, and losing it loses
	 * nothing.
	 */

	[9] =
	SQ_MARK("identity_tokens") SQ_MARK("email_codes"),

	/* 10: SQ_AUTOINC_VERSION.  11: nothing. */

	[12] =
	SQ_REG_BUMP("projects") SQ_MARK("projects"),

	[13] =
	SQ_MARK("run_requests"),
};

/* The tables whose "id INTEGER PRIMARY KEY" becomes AUTOINCREMENT. */
static const char *const autoinc_tables[] = {
	"users", "orgs", "memberships", "invites", "bundles", "secrets",
	"tools", "deny_rules", "runs", "calls", NULL
};

static int	sq_migration(int);
static int	sq_autoincrement(int);
static int	sq_autoinc_table(const char *);
static char	*sq_autoinc_sql(const char *, const char *);

int
sq_migrate(void)
{
	sqlite3_stmt	*st;
	int		 version = -1;

	if (sqlite3_prepare_v2(vault_db, "PRAGMA user_version", -1, &st,
	    NULL) != SQLITE_OK)
		return (-1);
	if (sq_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version < 0)
		return (-1);
	return (schema_walk(version, sq_migration));
}

/*
 * Migration v: the shared text, then sqlite's own, in one transaction;
 * migration 10 rebuilds tables instead.
 */
static int
sq_migration(int v)
{
	char	 sql[64];

	if (v == SQ_AUTOINC_VERSION)
		return (sq_autoincrement(v));
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v);
	if (db_exec("BEGIN IMMEDIATE") == -1)
		return (-1);
	if (schema_run(v, &sq_words, own[v], db_exec) == 0 &&
	    db_exec(sql) == 0 && db_exec("COMMIT") == 0)
		return (0);
	if (!sqlite3_get_autocommit(vault_db))
		db_exec("ROLLBACK");
	return (-1);
}

int
sq_schema_touch(void)
{
	char	 sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
	    SCHEMA_VERSIONS);
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
