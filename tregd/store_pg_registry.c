/*
 * The PostgreSQL engine: memberships by token, secrets and tools (the
 * rows a request and a run read).  Sealed values travel as bytea in
 * binary; they are ciphertext, opened only by vault_crypto.c.
 */

#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

int
pg_member_by_token(const uint8_t hash[STORE_HASH_LEN],
    struct store_member *m)
{
	static struct pg_stmt	 st = { "SELECT m.id, m.user_id, m.org_id, "
	    "m.role, m.tool_access, m.local_run_enabled, u.email, u.is_agent, "
	    "o.slug, m.token_hash, (SELECT v FROM tregd_version) FROM "
	    "memberships m JOIN users u ON u.id = m.user_id JOIN orgs o ON "
	    "o.id = m.org_id WHERE m.token_hash = $1", 0 };
	struct pgq		 q;
	PGresult		*res;

	memset(m, 0, sizeof(*m));
	pgq_init(&q);
	pgq_blob(&q, hash, STORE_HASH_LEN);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	if (PQntuples(res) != 1 || PQgetlength(res, 0, 9) != STORE_HASH_LEN) {
		PQclear(res);
		return (1);
	}
	m->id = pg_int(res, 0, 0);
	m->user_id = pg_int(res, 0, 1);
	m->org_id = pg_int(res, 0, 2);
	pg_copy(m->role, sizeof(m->role), res, 0, 3);
	m->tool_access = pg_strdup(res, 0, 4);
	m->local_run_enabled = pg_int(res, 0, 5);
	pg_copy(m->email, sizeof(m->email), res, 0, 6);
	m->is_agent = pg_int(res, 0, 7);
	pg_copy(m->org_slug, sizeof(m->org_slug), res, 0, 8);
	memcpy(m->token_hash, PQgetvalue(res, 0, 9), STORE_HASH_LEN);
	pg_version_seen(pg_int(res, 0, 10));
	PQclear(res);
	return (0);
}

int
pg_secret_get(int64_t org, int64_t id, struct store_secret *s)
{
	static struct pg_stmt	 st = { "SELECT id, org_id, name, kind, "
	    "owner_id, bundle_id, sealed, status, status_detail, checked_at, "
	    "created_at FROM secrets WHERE org_id = $1 AND id = $2", 0 };
	struct pgq		 q;
	PGresult		*res;
	size_t			 len;

	memset(s, 0, sizeof(*s));
	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, id);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	if (PQntuples(res) != 1) {
		PQclear(res);
		return (1);
	}
	s->id = pg_int(res, 0, 0);
	s->org_id = pg_int(res, 0, 1);
	pg_copy(s->name, sizeof(s->name), res, 0, 2);
	pg_copy(s->kind, sizeof(s->kind), res, 0, 3);
	s->owner_id = pg_int(res, 0, 4);
	s->bundle_id = pg_int(res, 0, 5);
	len = PQgetlength(res, 0, 6);
	if ((s->sealed = malloc(len > 0 ? len : 1)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(s->sealed, PQgetvalue(res, 0, 6), len);
	s->sealedlen = len;
	pg_copy(s->status, sizeof(s->status), res, 0, 7);
	pg_copy(s->status_detail, sizeof(s->status_detail), res, 0, 8);
	pg_copy(s->checked_at, sizeof(s->checked_at), res, 0, 9);
	pg_copy(s->created_at, sizeof(s->created_at), res, 0, 10);
	PQclear(res);
	return (0);
}

int
pg_secret_set_sealed(int64_t id, const void *sealed, size_t len)
{
	static struct pg_stmt	 st = { "UPDATE secrets SET sealed = $1 "
	    "WHERE id = $2", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 n;

	pgq_init(&q);
	pgq_blob(&q, sealed, len);
	pgq_int(&q, id);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	n = strtonum(PQcmdTuples(res), 0, 1, NULL);
	PQclear(res);
	return (n == 1 ? 0 : 1);
}

/*
 * Sealed values by id, PG_PAGE at a time, so the callback may re-seal
 * the rows it was given.  A callback's non-zero stops: < 0 is a failure.
 */
static int
pg_sealed_walk(struct pg_stmt *st, int64_t org, store_sealed_fn fn,
    void *arg)
{
	struct pgq	 q;
	PGresult	*res;
	int64_t		 last = 0;
	int		 i, n, stop = 0;

	do {
		pgq_init(&q);
		pgq_int(&q, last);
		pgq_int(&q, org);
		pgq_int(&q, PG_PAGE);
		if ((res = pg_run(st, &q)) == NULL)
			return (-1);
		n = PQntuples(res);
		for (i = 0; i < n && stop == 0; i++) {
			last = pg_int(res, i, 0);
			stop = fn(last, pg_int(res, i, 1),
			    PQgetvalue(res, i, 2), PQgetlength(res, i, 2),
			    arg);
		}
		PQclear(res);
	} while (n == PG_PAGE && stop == 0);
	return (stop < 0 ? -1 : 0);
}

/* Every sealed value, by id: the key rotation re-seals them all. */
int
pg_secrets_each_sealed(store_sealed_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT id, org_id, sealed FROM "
	    "secrets WHERE id > $1 AND $2::bigint = 0 ORDER BY id LIMIT $3",
	    0 };

	return (pg_sealed_walk(&st, 0, fn, arg));
}

int
pg_org_secrets_sealed(int64_t org, store_sealed_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT id, org_id, sealed FROM "
	    "secrets WHERE id > $1 AND org_id = $2 AND kind <> 'param' "
	    "ORDER BY id LIMIT $3", 0 };

	return (pg_sealed_walk(&st, org, fn, arg));
}

int
pg_sealed_count(const void *prefix, size_t len, int64_t *n)
{
	static struct pg_stmt	 st = { "SELECT count(*) FROM secrets "
	    "WHERE substr(sealed, 1, $1) = $2", 0 };
	struct pgq		 q;
	PGresult		*res;

	pgq_init(&q);
	pgq_int(&q, len);
	pgq_blob(&q, prefix, len);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	*n = PQntuples(res) == 1 ? pg_int(res, 0, 0) : 0;
	PQclear(res);
	return (0);
}

int
pg_org_by_slug(const char *slug, int64_t *id)
{
	static struct pg_stmt	 st = { "SELECT id FROM orgs WHERE slug = $1",
	    0 };
	struct pgq		 q;
	PGresult		*res;
	int			 rc = 1;

	pgq_init(&q);
	pgq_text(&q, slug);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	if (PQntuples(res) == 1) {
		*id = pg_int(res, 0, 0);
		rc = 0;
	}
	PQclear(res);
	return (rc);
}

int
pg_tool_by_name(int64_t org, const char *name, struct store_tool *t)
{
	static struct pg_stmt	 st = { "SELECT t.id, t.org_id, t.name, "
	    "t.owner_id, t.base_url, t.host, t.bindings, t.cli, t.bundle_id, "
	    "b.name FROM tools t LEFT JOIN bundles b ON b.id = t.bundle_id "
	    "WHERE t.org_id = $1 AND t.name = $2", 0 };
	struct pgq		 q;
	PGresult		*res;

	memset(t, 0, sizeof(*t));
	pgq_init(&q);
	pgq_int(&q, org);
	pgq_text(&q, name);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	if (PQntuples(res) != 1) {
		PQclear(res);
		return (1);
	}
	t->id = pg_int(res, 0, 0);
	t->org_id = pg_int(res, 0, 1);
	pg_copy(t->name, sizeof(t->name), res, 0, 2);
	t->owner_id = pg_int(res, 0, 3);
	t->base_url = pg_strdup(res, 0, 4);
	t->host = pg_strdup(res, 0, 5);
	t->bindings = pg_strdup(res, 0, 6);
	t->cli = pg_strdup(res, 0, 7);
	t->bundle_id = pg_int(res, 0, 8);
	pg_copy(t->bundle, sizeof(t->bundle), res, 0, 9);
	PQclear(res);
	return (0);
}

int
pg_tool_secret_ids(int64_t tool, int64_t *ids, size_t max, size_t *n)
{
	static struct pg_stmt	 st = { "SELECT secret_id FROM tool_secrets "
	    "WHERE tool_id = $1 ORDER BY secret_id", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 i;

	*n = 0;
	pgq_init(&q);
	pgq_int(&q, tool);
	if ((res = pg_run(&st, &q)) == NULL)
		return (-1);
	for (i = 0; i < PQntuples(res) && *n < max; i++)
		ids[(*n)++] = pg_int(res, i, 0);
	PQclear(res);
	return (0);
}
