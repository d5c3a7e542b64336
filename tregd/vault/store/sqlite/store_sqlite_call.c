/*
 * The sqlite engine's part of the relay: how a call ended (call_ends),
 * the daily call counts (call_caps) and each membership's cap, and the
 * tools of a host for /call/<full URL>.
 */

#include <stdint.h>
#include <string.h>

#include "store_sqlite.h"

/*
 * A deferred transaction: the shared lock and the WAL read mark are
 * taken at the first read and let go at the end, instead of a lock and
 * unlock (four fcntl calls) around every statement.
 */
int
sq_read_begin(void)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("BEGIN DEFERRED")) == NULL)
		return (-1);
	return (sq_done(st));
}

void
sq_read_end(void)
{
	sqlite3_stmt	*st;

	if (sqlite3_get_autocommit(vault_db))
		return;
	if ((st = db_prepare("COMMIT")) == NULL || sq_done(st) == -1)
		sqlite3_exec(vault_db, "ROLLBACK", NULL, NULL, NULL);
}

int
sq_call_end_insert(const struct store_call_end *e)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO call_ends (call_id, org_id, "
	    "status_code, refused_by, duration_ms, bytes, redacted, "
	    "created_at) VALUES (:call, :org, :status, :refused, :ms, "
	    ":bytes, :redacted, :at)")) == NULL)
		return (-1);
	sq_int(st, ":call", e->call_id);
	sq_int(st, ":org", e->org_id);
	if (e->has_status)
		sq_int(st, ":status", e->status_code);
	sq_text(st, ":refused", e->refused_by);
	sq_int(st, ":ms", e->duration_ms);
	sq_int(st, ":bytes", e->bytes);
	sq_int(st, ":redacted", e->redacted);
	sq_text(st, ":at", e->created_at);
	return (sq_done(st));
}

/*
 * One statement: the row is created or counted up by n, never past the
 * cap; whether it was is in the count of changed rows (RETURNING would
 * cost a temporary table per call).
 */
int
sq_call_cap_take(int64_t org, int64_t user, const char *day, int64_t n,
    int64_t cap)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO call_caps (org_id, user_id, day, "
	    "n) VALUES (:org, :user, :day, :n) ON CONFLICT (org_id, user_id, "
	    "day) DO UPDATE SET n = n + :n WHERE n <= :cap - :n")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	sq_text(st, ":day", day);
	sq_int(st, ":n", n);
	sq_int(st, ":cap", cap);
	if (sq_done(st) == -1)
		return (-1);
	return (sqlite3_changes(vault_db) == 1 ? 0 : 1);
}

int
sq_call_used(int64_t org, int64_t user, const char *day, int64_t *used)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT n FROM call_caps WHERE org_id = :org "
	    "AND user_id = :user AND day = :day")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	sq_text(st, ":day", day);
	if ((rc = sq_step(st)) == SQLITE_ROW)
		*used = sq_cint(st, "n");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return (rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1);
}

int
sq_call_cap_get(int64_t org, int64_t user, int *has, int64_t *cap)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT daily_call_cap FROM memberships WHERE "
	    "org_id = :org AND user_id = :user")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	if ((rc = sq_step(st)) == SQLITE_ROW)
		*cap = sq_cintif(st, "daily_call_cap", has);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_ROW)
		return (0);
	return (rc == SQLITE_DONE ? 1 : -1);
}

int
sq_call_cap_set(int64_t org, int64_t user, int has, int64_t cap)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE memberships SET daily_call_cap = :cap "
	    "WHERE org_id = :org AND user_id = :user")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	if (has)
		sq_int(st, ":cap", cap);
	return (sq_done(st));
}

int
sq_tools_by_host(int64_t org, const char *host, store_tool_url_fn fn,
    void *arg)
{
	struct store_tool_url	 t;
	sqlite3_stmt		*st;
	int			 rc, stop = 0;

	if ((st = db_prepare("SELECT id, name, base_url FROM tools WHERE "
	    "org_id = :org AND host = :host ORDER BY id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_text(st, ":host", host);
	while (!stop && (rc = sq_step(st)) == SQLITE_ROW) {
		memset(&t, 0, sizeof(t));
		t.id = sq_cint(st, "id");
		t.name = sq_ctext(st, "name");
		t.base_url = sq_ctext(st, "base_url");
		stop = fn(&t, arg);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (stop)
		return (stop < 0 ? -1 : 0);
	return (rc == SQLITE_DONE ? 0 : -1);
}

/* One row, moved by the triggers of migration 6. */
int
sq_registry_version(int64_t *v)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT v FROM registry_version")) == NULL)
		return (-1);
	if ((rc = sq_step(st)) == SQLITE_ROW)
		*v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return (rc == SQLITE_ROW ? 0 : -1);
}
