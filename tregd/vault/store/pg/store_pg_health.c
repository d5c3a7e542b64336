/*
 * The PostgreSQL engine's side of credential health: one secret's
 * verdict, and the owners' alerts (a membership's webhook_url,
 * migration 14).
 */

#include <string.h>

#include "log.h"
#include "store_pg.h"

int
pg_webhook_set(int64_t org, int64_t user, const char *url)
{
	static struct pg_stmt	 st = { "UPDATE memberships SET webhook_url "
	    "= $1 WHERE org_id = $2 AND user_id = $3", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, url);
	pgq_int(&q, org);
	pgq_int(&q, user);
	return (pg_write(&st, &q, NULL) == -1 ? -1 : 0);
}

/* The user's own in org first, then another of theirs, then an owner's. */
int
pg_webhook_find(int64_t org, int64_t user, store_text_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT webhook_url FROM memberships "
	    "WHERE webhook_url IS NOT NULL AND webhook_url <> '' AND "
	    "(user_id = $2 OR (org_id = $1 AND role = 'owner')) ORDER BY "
	    "(user_id = $2 AND org_id = $1) DESC, (user_id = $2) DESC, id "
	    "LIMIT 1", 0 };
	struct store_each	 e = { .fn.text = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, user);
	return (pg_one(&st, &q, pg_text_row, &e));
}

int
pg_secret_mark(int64_t org, int64_t id, const char *status,
    const char *detail, const char *at, store_text_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "UPDATE secrets SET status = $1, "
	    "status_detail = $2, checked_at = $3 WHERE org_id = $4 AND id = "
	    "$5 AND kind <> 'param' RETURNING name", 0 };

	return (pg_marks(&st, org, id, status, detail, at, fn, arg));
}

/* Also pg_tool_secrets_mark()'s (store_pg_policy.c): the same binding. */
int
pg_marks(struct pg_stmt *st, int64_t org, int64_t id, const char *status,
    const char *detail, const char *at, store_text_fn fn, void *arg)
{
	struct store_each	 e = { .fn.text = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, status);
	pgq_text(&q, detail);
	pgq_text(&q, at);
	pgq_int(&q, org);
	pgq_int(&q, id);
	return (pg_each(st, &q, pg_text_row, &e));
}
