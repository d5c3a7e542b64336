/*
 * The sqlite engine: the keyring in the database (store.h, "the keyring
 * in the database") and the commit mark that tells, at start, whether
 * the database file holds every committed transaction (store_sqlite.c).
 */

#include <string.h>

#include "store_sqlite.h"

static int	sq_key_row(sqlite3_stmt *, void *);
static int	sq_host_row(sqlite3_stmt *, void *);

struct sq_key_each {
	store_key_fn		 fn;
	store_key_host_fn	 hfn;
	void			*arg;
};

static int
sq_key_row(sqlite3_stmt *st, void *arg)
{
	struct sq_key_each	*e = arg;
	struct store_key	 k;

	memset(&k, 0, sizeof(k));
	k.id = sq_ctext(st, "id");
	if (!sq_cnull(st, "wrapped")) {
		k.wrapped = sqlite3_column_blob(st, sq_col(st, "wrapped"));
		k.wrappedlen = sqlite3_column_bytes(st, sq_col(st, "wrapped"));
		k.wrapped_by = sq_cntext(st, "wrapped_by");
	}
	k.current = sq_cint(st, "current") != 0;
	k.retired_at = sq_cntext(st, "retired_at");
	k.created_at = sq_ctext(st, "created_at");
	return (e->fn(&k, e->arg));
}

int
sq_keys(const char *id, store_key_fn fn, void *arg)
{
	struct sq_key_each	 e = { fn, NULL, arg };
	sqlite3_stmt		*st;

	if (id == NULL) {
		if ((st = db_prepare("SELECT id, wrapped, wrapped_by, "
		    "current, retired_at, created_at FROM keys "
		    "ORDER BY created_at, rowid")) == NULL)
			return (-1);
		return (sq_each(st, sq_key_row, &e));
	}
	if ((st = db_prepare("SELECT id, wrapped, wrapped_by, current, "
	    "retired_at, created_at FROM keys WHERE id = :id")) == NULL)
		return (-1);
	sq_text(st, ":id", id);
	return (sq_one(st, sq_key_row, &e));
}

int
sq_key_insert(const struct store_key *k)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO keys (id, wrapped, wrapped_by, "
	    "current, created_at) VALUES (:id, :wrapped, :by, :current, "
	    ":at) ON CONFLICT DO NOTHING")) == NULL)
		return (-1);
	sq_text(st, ":id", k->id);
	if (k->wrapped != NULL)
		sq_blob(st, ":wrapped", k->wrapped, k->wrappedlen);
	else
		sq_null(st, ":wrapped");
	sq_text(st, ":by", k->wrapped_by);
	sq_int(st, ":current", k->current != 0);
	sq_text(st, ":at", k->created_at);
	switch (sq_insert(st, NULL)) {
	case 0:
		return (0);
	case STORE_CONFLICT:
		return (STORE_TAKEN);
	default:
		return (-1);
	}
}

int
sq_key_set_current(const char *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE keys SET current = (id = :id) "
	    "WHERE current != (id = :id)")) == NULL || sq_text(st, ":id",
	    id) == -1 || sq_done(st) == -1)
		return (-1);
	if ((st = db_prepare("SELECT 1 FROM keys WHERE id = :id AND "
	    "current = 1")) == NULL)
		return (-1);
	sq_text(st, ":id", id);
	return (sq_one(st, NULL, NULL));
}

int
sq_key_retire(const char *id, const char *at)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE keys SET retired_at = "
	    "coalesce(retired_at, :at) WHERE id = :id")) == NULL)
		return (-1);
	sq_text(st, ":id", id);
	sq_text(st, ":at", at);
	return (sq_affected(st));
}

int
sq_key_unlink(const char *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE keys SET wrapped = NULL, wrapped_by = "
	    "NULL WHERE wrapped_by = :id")) == NULL)
		return (-1);
	sq_text(st, ":id", id);
	return (sq_done(st));
}

int
sq_key_host_set(const char *host, const char *id, const char *at)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO key_hosts (host, key_id, seen_at) "
	    "VALUES (:host, :id, :at) ON CONFLICT (host) DO UPDATE SET "
	    "key_id = excluded.key_id, seen_at = excluded.seen_at "
	    "WHERE key_id != excluded.key_id")) == NULL)
		return (-1);
	sq_text(st, ":host", host);
	sq_text(st, ":id", id);
	sq_text(st, ":at", at);
	return (sq_done(st));
}

static int
sq_host_row(sqlite3_stmt *st, void *arg)
{
	struct sq_key_each	*e = arg;

	return (e->hfn(sq_cntext(st, "host"), sq_ctext(st, "id"),
	    sq_cint(st, "n"), e->arg));
}

int
sq_key_hosts(store_key_host_fn fn, void *arg)
{
	struct sq_key_each	 e = { NULL, fn, arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT host, key_id AS id, 0 AS n "
	    "FROM key_hosts ORDER BY host")) == NULL)
		return (-1);
	return (sq_each(st, sq_host_row, &e));
}

int
sq_sealed_keys(store_key_host_fn fn, void *arg)
{
	struct sq_key_each	 e = { NULL, fn, arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT NULL AS host, lower(hex(substr(sealed, "
	    "1, 8))) AS id, count(*) AS n FROM secrets GROUP BY 2 "
	    "ORDER BY 2")) == NULL)
		return (-1);
	return (sq_each(st, sq_host_row, &e));
}

/* The commit mark the database holds: 0, 1 none (an older schema), -1. */
int
sq_mark_read(int64_t *n)
{
	sqlite3_stmt	*st;

	*n = 0;
	if (sqlite3_table_column_metadata(vault_db, "main", "commit_mark",
	    "n", NULL, NULL, NULL, NULL, NULL) != SQLITE_OK)
		return (1);
	if ((st = db_prepare("SELECT n FROM commit_mark")) == NULL)
		return (-1);
	return (sq_value(st, n));
}
