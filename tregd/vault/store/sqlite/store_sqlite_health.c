/*
 * The sqlite engine's side of credential health: one secret's verdict,
 * and the owners' alerts (a membership's webhook_url, migration 14).
 */

#include <string.h>

#include "log.h"
#include "store_sqlite.h"

int
sq_webhook_set(int64_t org, int64_t user, const char *url)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE memberships SET webhook_url = :url "
	    "WHERE org_id = :org AND user_id = :user")) == NULL)
		return (-1);
	if (url != NULL)
		sq_text(st, ":url", url);
	else
		sq_null(st, ":url");
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	return (sq_done(st));
}

/* The user's own in org first, then another of theirs, then an owner's. */
int
sq_webhook_find(int64_t org, int64_t user, store_text_fn fn, void *arg)
{
	struct store_each	 e = { .fn.text = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT webhook_url FROM memberships WHERE "
	    "webhook_url IS NOT NULL AND webhook_url != '' AND (user_id = "
	    ":user OR (org_id = :org AND role = 'owner')) ORDER BY "
	    "(user_id = :user AND org_id = :org) DESC, (user_id = :user) "
	    "DESC, id LIMIT 1")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	return (sq_one(st, sq_text_row, &e));
}

int
sq_secret_mark(int64_t org, int64_t id, const char *status,
    const char *detail, const char *at, store_text_fn fn, void *arg)
{
	struct store_each	 e = { .fn.text = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("UPDATE secrets SET status = :status, "
	    "status_detail = :detail, checked_at = :at WHERE org_id = :org "
	    "AND id = :id AND kind != 'param' RETURNING name")) == NULL)
		return (-1);
	sq_text(st, ":status", status);
	sq_text(st, ":detail", detail);
	sq_text(st, ":at", at);
	sq_int(st, ":org", org);
	sq_int(st, ":id", id);
	return (sq_each(st, sq_text_row, &e));
}
