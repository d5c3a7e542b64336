/*
 * The PostgreSQL engine's identity tokens (a person across their orgs)
 * and email sign-in codes, for vault_identity.c; the same rows as the
 * sqlite engine's store_sqlite_identity.c.
 */

#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

static int	pg_hash_copy(const PGresult *, int, uint8_t *);

/* Column c of row 0, STORE_HASH_LEN bytes, into out: 0, or -1. */
static int
pg_hash_copy(const PGresult *res, int c, uint8_t *out)
{
	if (PQgetisnull(res, 0, c) || PQgetlength(res, 0, c) !=
	    STORE_HASH_LEN)
		return (-1);
	memcpy(out, PQgetvalue(res, 0, c), STORE_HASH_LEN);
	return (0);
}

int
pg_identity_insert(int64_t user, const uint8_t hash[STORE_HASH_LEN],
    const char *at)
{
	static struct pg_stmt	 st = { "INSERT INTO identity_tokens "
	    "(user_id, token_hash, created_at) VALUES ($1, $2, $3)", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, user);
	pgq_blob(&q, hash, STORE_HASH_LEN);
	pgq_text(&q, at);
	return (pg_changed(&st, &q) == 0 ? 0 : -1);
}

int
pg_identity_by_token(const uint8_t hash[STORE_HASH_LEN], int64_t *user,
    char *email, size_t len, int *is_agent)
{
	static struct pg_stmt	 st = { "SELECT u.id, u.email, u.is_agent "
	    "FROM identity_tokens i JOIN users u ON u.id = i.user_id WHERE "
	    "i.token_hash = $1", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 rc;

	pgq_init(&q);
	pgq_blob(&q, hash, STORE_HASH_LEN);
	if ((rc = pg_row(&st, &q, &res)) != 0)
		return (rc);
	*user = pg_int(res, 0, 0);
	pg_copy(email, len, res, 0, 1);
	*is_agent = pg_int(res, 0, 2) != 0;
	PQclear(res);
	return (0);
}

int
pg_identity_member_hash(const uint8_t hash[STORE_HASH_LEN], const char *org,
    uint8_t out[STORE_HASH_LEN])
{
	static struct pg_stmt	 st = { "SELECT m.token_hash FROM "
	    "identity_tokens i JOIN memberships m ON m.user_id = i.user_id "
	    "JOIN orgs o ON o.id = m.org_id WHERE i.token_hash = $1 AND "
	    "(o.slug = $2 OR o.id::text = $2)", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 rc;

	pgq_init(&q);
	pgq_blob(&q, hash, STORE_HASH_LEN);
	pgq_text(&q, org);
	if ((rc = pg_row(&st, &q, &res)) != 0)
		return (rc);
	rc = pg_hash_copy(res, 0, out) == 0 ? 0 : 1;
	PQclear(res);
	return (rc);
}

int
pg_identity_count(int64_t user, int64_t *n)
{
	static struct pg_stmt	 st = { "SELECT count(*) FROM "
	    "identity_tokens WHERE user_id = $1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, user);
	return (pg_value(&st, &q, n) == 0 ? 0 : -1);
}

int
pg_identity_trim(int64_t user, int64_t keep)
{
	static struct pg_stmt	 st = { "DELETE FROM identity_tokens WHERE "
	    "user_id = $1 AND id NOT IN (SELECT id FROM identity_tokens "
	    "WHERE user_id = $1 ORDER BY id DESC LIMIT $2)", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, user);
	pgq_int(&q, keep);
	return (pg_changed(&st, &q) == -1 ? -1 : 0);
}

int
pg_identity_revoke(int64_t user)
{
	static struct pg_stmt	 st = { "DELETE FROM identity_tokens WHERE "
	    "user_id = $1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, user);
	return (pg_changed(&st, &q) == -1 ? -1 : 0);
}

int
pg_identity_tokens(int64_t user, store_access_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT id, created_at FROM "
	    "identity_tokens WHERE user_id = $1 ORDER BY id", 0 };
	struct store_each	 e = { .fn.access = fn, .arg = arg };

	return (pg_each_of(&st, user, pg_access_row, &e));
}

int
pg_email_code_get(const char *email, struct store_email_code *c)
{
	/*
	 * Locked to the end of the transaction: two guesses at once take
	 * turns, so each counts and a code is used once (sqlite's write
	 * transactions take turns already).
	 */
	static struct pg_stmt	 st = { "SELECT salt, code_hash, expires_at, "
	    "attempts, window_start, sent FROM email_codes WHERE email = $1 "
	    "FOR UPDATE", 0 };
	PGresult		*res;
	int			 rc;

	if ((rc = pg_row_of_text(&st, email, &res)) != 0)
		return (rc);
	if (pg_hash_copy(res, 0, c->salt) == -1 ||
	    pg_hash_copy(res, 1, c->hash) == -1)
		c->expires_at = 0;	/* no code: none to take */
	else
		c->expires_at = pg_int(res, 0, 2);
	c->attempts = pg_int(res, 0, 3);
	c->window_start = pg_int(res, 0, 4);
	c->sent = pg_int(res, 0, 5);
	PQclear(res);
	return (0);
}

int
pg_email_code_put(const char *email, const struct store_email_code *c)
{
	static struct pg_stmt	 st = { "INSERT INTO email_codes (email, "
	    "salt, code_hash, expires_at, attempts, window_start, sent) "
	    "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (email) DO "
	    "UPDATE SET salt = excluded.salt, code_hash = excluded.code_hash, "
	    "expires_at = excluded.expires_at, attempts = excluded.attempts, "
	    "window_start = excluded.window_start, sent = excluded.sent", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, email);
	pgq_blob(&q, c->salt, STORE_HASH_LEN);
	pgq_blob(&q, c->hash, STORE_HASH_LEN);
	pgq_int(&q, c->expires_at);
	pgq_int(&q, c->attempts);
	pgq_int(&q, c->window_start);
	pgq_int(&q, c->sent);
	return (pg_changed(&st, &q) == -1 ? -1 : 0);
}
