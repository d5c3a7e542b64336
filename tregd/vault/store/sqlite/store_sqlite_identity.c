/*
 * The sqlite engine's identity tokens (a person across their orgs) and
 * email sign-in codes, for vault_identity.c.  Like a membership's, an
 * identity token is only its hash here.
 */

#include <string.h>

#include "log.h"
#include "store_sqlite.h"

static int	sq_blob_copy(sqlite3_stmt *, const char *, uint8_t *);

/* A column of STORE_HASH_LEN bytes into out: 0, or -1 when it is not. */
static int
sq_blob_copy(sqlite3_stmt *st, const char *col, uint8_t *out)
{
	const void	*b;
	int		 i = sq_col(st, col);

	b = sqlite3_column_blob(st, i);
	if (b == NULL || sqlite3_column_bytes(st, i) != STORE_HASH_LEN)
		return (-1);
	memcpy(out, b, STORE_HASH_LEN);
	return (0);
}

int
sq_identity_insert(int64_t user, const uint8_t hash[STORE_HASH_LEN],
    const char *at)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO identity_tokens (user_id, "
	    "token_hash, created_at) VALUES (:user, :hash, :at)")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	sq_blob(st, ":hash", hash, STORE_HASH_LEN);
	sq_text(st, ":at", at);
	return (sq_insert(st, NULL) == 0 ? 0 : -1);
}

int
sq_identity_by_token(const uint8_t hash[STORE_HASH_LEN], int64_t *user,
    char *email, size_t len, int *is_agent)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT u.id AS id, u.email AS email, "
	    "u.is_agent AS is_agent FROM identity_tokens i JOIN users u ON "
	    "u.id = i.user_id WHERE i.token_hash = :hash")) == NULL)
		return (-1);
	sq_blob(st, ":hash", hash, STORE_HASH_LEN);
	if ((rc = sq_step(st)) == SQLITE_ROW) {
		*user = sq_cint(st, "id");
		sq_ccopy(st, "email", email, len);
		*is_agent = sq_cint(st, "is_agent") != 0;
	}
	return (sq_row_end(st, rc));
}

int
sq_identity_member_hash(const uint8_t hash[STORE_HASH_LEN], const char *org,
    uint8_t out[STORE_HASH_LEN])
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT m.token_hash AS hash FROM identity_tokens "
	    "i JOIN memberships m ON m.user_id = i.user_id JOIN orgs o ON "
	    "o.id = m.org_id WHERE i.token_hash = :hash AND (o.slug = :org "
	    "OR CAST(o.id AS TEXT) = :org)")) == NULL)
		return (-1);
	sq_blob(st, ":hash", hash, STORE_HASH_LEN);
	sq_text(st, ":org", org);
	if ((rc = sq_step(st)) == SQLITE_ROW && sq_blob_copy(st, "hash",
	    out) == -1)
		rc = SQLITE_DONE;
	return (sq_row_end(st, rc));
}

int
sq_identity_count(int64_t user, int64_t *n)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT count(*) FROM identity_tokens WHERE "
	    "user_id = :user")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	return (sq_value(st, n) == 0 ? 0 : -1);
}

int
sq_identity_trim(int64_t user, int64_t keep)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM identity_tokens WHERE user_id = "
	    ":user AND id NOT IN (SELECT id FROM identity_tokens WHERE "
	    "user_id = :user ORDER BY id DESC LIMIT :keep)")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	sq_int(st, ":keep", keep);
	return (sq_done(st));
}

int
sq_identity_revoke(int64_t user)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM identity_tokens WHERE user_id = "
	    ":user")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	return (sq_done(st));
}

int
sq_identity_tokens(int64_t user, store_access_fn fn, void *arg)
{
	struct store_each	 e = { .fn.access = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT id AS user_id, created_at AS access "
	    "FROM identity_tokens WHERE user_id = :user ORDER BY id")) ==
	    NULL)
		return (-1);
	sq_int(st, ":user", user);
	return (sq_each(st, sq_access_row, &e));
}

int
sq_email_code_get(const char *email, struct store_email_code *c)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT salt, code_hash, expires_at, attempts, "
	    "window_start, sent FROM email_codes WHERE email = :email")) ==
	    NULL)
		return (-1);
	sq_text(st, ":email", email);
	if ((rc = sq_step(st)) == SQLITE_ROW) {
		if (sq_blob_copy(st, "salt", c->salt) == -1 ||
		    sq_blob_copy(st, "code_hash", c->hash) == -1)
			c->expires_at = 0;	/* no code: none to take */
		else
			c->expires_at = sq_cint(st, "expires_at");
		c->attempts = sq_cint(st, "attempts");
		c->window_start = sq_cint(st, "window_start");
		c->sent = sq_cint(st, "sent");
	}
	return (sq_row_end(st, rc));
}

int
sq_email_code_put(const char *email, const struct store_email_code *c)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO email_codes (email, salt, "
	    "code_hash, expires_at, attempts, window_start, sent) VALUES "
	    "(:email, :salt, :hash, :expires, :attempts, :window, :sent) "
	    "ON CONFLICT (email) DO UPDATE SET salt = excluded.salt, "
	    "code_hash = excluded.code_hash, expires_at = excluded.expires_at, "
	    "attempts = excluded.attempts, window_start = "
	    "excluded.window_start, sent = excluded.sent")) == NULL)
		return (-1);
	sq_text(st, ":email", email);
	sq_blob(st, ":salt", c->salt, STORE_HASH_LEN);
	sq_blob(st, ":hash", c->hash, STORE_HASH_LEN);
	sq_int(st, ":expires", c->expires_at);
	sq_int(st, ":attempts", c->attempts);
	sq_int(st, ":window", c->window_start);
	sq_int(st, ":sent", c->sent);
	return (sq_done(st));
}
