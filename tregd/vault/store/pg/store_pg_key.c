/*
 * The PostgreSQL engine: the keyring in the database (store.h, "the
 * keyring in the database").  Keys read in a transaction are locked
 * FOR SHARE until its end: a retire (an UPDATE of the row) waits for a
 * value being sealed under the key to commit, then counts it.
 */

#include <string.h>

#include "store_pg.h"

static int	pg_key_row(const PGresult *, int, void *);
static int	pg_host_row(const PGresult *, int, void *);

struct pg_key_each {
	store_key_fn		 fn;
	store_key_host_fn	 hfn;
	void			*arg;
};

#define PG_KEY_COLS	"SELECT id, wrapped, wrapped_by, current::bigint, "\
	"retired_at, created_at FROM keys "

static int
pg_key_row(const PGresult *res, int i, void *arg)
{
	struct pg_key_each	*e = arg;
	struct store_key	 k;

	memset(&k, 0, sizeof(k));
	k.id = pg_text(res, i, 0);
	if (!pg_null(res, i, 1)) {
		k.wrapped = PQgetvalue(res, i, 1);
		k.wrappedlen = PQgetlength(res, i, 1);
		k.wrapped_by = pg_ntext(res, i, 2);
	}
	k.current = pg_int(res, i, 3) != 0;
	k.retired_at = pg_ntext(res, i, 4);
	k.created_at = pg_text(res, i, 5);
	return (e->fn(&k, e->arg));
}

int
pg_keys(const char *id, store_key_fn fn, void *arg)
{
	static struct pg_stmt	 all = { PG_KEY_COLS
	    "ORDER BY created_at, id FOR SHARE", 0 };
	static struct pg_stmt	 one = { PG_KEY_COLS "WHERE id = $1 "
	    "FOR SHARE", 0 };
	struct pg_key_each	 e = { fn, NULL, arg };
	struct pgq		 q;

	pgq_init(&q);
	if (id == NULL)
		return (pg_each(&all, &q, pg_key_row, &e));
	pgq_text(&q, id);
	return (pg_one(&one, &q, pg_key_row, &e));
}

int
pg_key_insert(const struct store_key *k)
{
	static struct pg_stmt	 st = { "INSERT INTO keys (id, wrapped, "
	    "wrapped_by, current, created_at) VALUES ($1, $2, $3, $4, $5) "
	    "ON CONFLICT DO NOTHING RETURNING 1::bigint", 0 };
	struct pgq		 q;
	int64_t			 one;

	pgq_init(&q);
	pgq_text(&q, k->id);
	if (k->wrapped != NULL)
		pgq_blob(&q, k->wrapped, k->wrappedlen);
	else
		pgq_null(&q);
	pgq_text(&q, k->wrapped_by);
	pgq_int(&q, k->current != 0);
	pgq_text(&q, k->created_at);
	switch (pg_value(&st, &q, &one)) {
	case 0:
		return (0);
	case 1:
		return (STORE_TAKEN);
	default:
		return (-1);
	}
}

int
pg_key_set_current(const char *id)
{
	static struct pg_stmt	 st = { "UPDATE keys SET current = "
	    "(id = $1)::int WHERE current <> (id = $1)::int", 0 };
	static struct pg_stmt	 is = { "SELECT 1::bigint FROM keys "
	    "WHERE id = $1 AND current = 1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, id);
	if (pg_changed(&st, &q) == -1)
		return (-1);
	return (pg_one(&is, &q, NULL, NULL));
}

int
pg_key_retire(const char *id, const char *at)
{
	static struct pg_stmt	 st = { "UPDATE keys SET retired_at = "
	    "coalesce(retired_at, $2) WHERE id = $1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, id);
	pgq_text(&q, at);
	return (pg_changed(&st, &q));
}

int
pg_key_unlink(const char *id)
{
	static struct pg_stmt	 st = { "UPDATE keys SET wrapped = NULL, "
	    "wrapped_by = NULL WHERE wrapped_by = $1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, id);
	return (pg_changed(&st, &q) == -1 ? -1 : 0);
}

int
pg_key_host_set(const char *host, const char *id, const char *at)
{
	static struct pg_stmt	 st = { "INSERT INTO key_hosts (host, "
	    "key_id, seen_at) VALUES ($1, $2, $3) ON CONFLICT (host) DO "
	    "UPDATE SET key_id = excluded.key_id, seen_at = "
	    "excluded.seen_at WHERE key_hosts.key_id <> excluded.key_id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, host);
	pgq_text(&q, id);
	pgq_text(&q, at);
	return (pg_changed(&st, &q) == -1 ? -1 : 0);
}

static int
pg_host_row(const PGresult *res, int i, void *arg)
{
	struct pg_key_each	*e = arg;

	return (e->hfn(pg_ntext(res, i, 0), pg_text(res, i, 1),
	    pg_int(res, i, 2), e->arg));
}

int
pg_key_hosts(store_key_host_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT host, key_id, 0::bigint "
	    "FROM key_hosts ORDER BY host", 0 };
	struct pg_key_each	 e = { NULL, fn, arg };
	struct pgq		 q;

	pgq_init(&q);
	return (pg_each(&st, &q, pg_host_row, &e));
}

int
pg_sealed_keys(store_key_host_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT NULL::text, "
	    "encode(substr(sealed, 1, 8), 'hex'), count(*) FROM secrets "
	    "GROUP BY 2 ORDER BY 2", 0 };
	struct pg_key_each	 e = { NULL, fn, arg };
	struct pgq		 q;

	pgq_init(&q);
	return (pg_each(&st, &q, pg_host_row, &e));
}
