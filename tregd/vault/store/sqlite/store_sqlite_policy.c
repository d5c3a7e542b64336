/*
 * The sqlite engine's deny rules (SPEC section 9), and the local grants
 * and the credential health they report.
 */

#include <string.h>

#include "log.h"
#include "store_sqlite.h"

#define DENY_SELECT							\
	"SELECT id, org_id, host, path_prefix, method, user_id, note, "	\
	"created_by, created_at, project_id, coalesce((SELECT email "	\
	"FROM users WHERE users.id = deny_rules.created_by), '') AS "	\
	"created_by_email FROM deny_rules "

static int	sq_deny_row(sqlite3_stmt *, void *);

static int
sq_deny_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_deny	 d;

	memset(&d, 0, sizeof(d));
	d.id = sq_cint(st, "id");
	d.org_id = sq_cint(st, "org_id");
	d.host = sq_cntext(st, "host");
	d.path_prefix = sq_cntext(st, "path_prefix");
	d.method = sq_cntext(st, "method");
	d.user_id = sq_cint(st, "user_id");
	d.project_id = sq_cint(st, "project_id");
	d.note = sq_cntext(st, "note");
	d.created_by = sq_cint(st, "created_by");
	d.created_at = sq_ctext(st, "created_at");
	d.created_by_email = sq_ctext(st, "created_by_email");
	return (e->fn.deny(&d, e->arg));
}

int
sq_deny_rules(int64_t org, int64_t user, store_deny_fn fn, void *arg)
{
	struct store_each	 e = { .fn.deny = fn, .arg = arg };
	sqlite3_stmt		*st;

	if (user >= 0) {
		if ((st = db_prepare(DENY_SELECT "WHERE org_id = :org AND "
		    "(user_id IS NULL OR user_id = :user) ORDER BY id")) ==
		    NULL)
			return (-1);
		sq_int(st, ":user", user);
	} else if ((st = db_prepare(DENY_SELECT "WHERE org_id = :org "
	    "ORDER BY id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	return (sq_each(st, sq_deny_row, &e));
}

int
sq_deny_count(int64_t org, int64_t *n)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT count(*) AS n FROM deny_rules "
	    "WHERE org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	return (sq_value(st, n) == 0 ? 0 : -1);
}

int
sq_deny_insert(const struct store_deny *d, int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO deny_rules (org_id, host, "
	    "path_prefix, method, user_id, note, created_by, created_at, "
	    "project_id) VALUES (:org, NULLIF(:host, ''), NULLIF(:path, ''), "
	    "NULLIF(:method, ''), :user, NULLIF(:note, ''), :by, :at, "
	    ":project)")) == NULL)
		return (-1);
	sq_int(st, ":org", d->org_id);
	sq_text(st, ":host", d->host);
	sq_text(st, ":path", d->path_prefix);
	sq_text(st, ":method", d->method);
	if (d->user_id != 0)
		sq_int(st, ":user", d->user_id);
	if (d->project_id != 0)
		sq_int(st, ":project", d->project_id);
	sq_text(st, ":note", d->note);
	sq_int(st, ":by", d->created_by);
	sq_text(st, ":at", d->created_at);
	return (sq_insert(st, id));
}

int
sq_deny_get(int64_t id, store_deny_fn fn, void *arg)
{
	struct store_each	 e = { .fn.deny = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare(DENY_SELECT "WHERE id = :id")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	return (sq_one(st, sq_deny_row, &e));
}

int
sq_deny_delete(int64_t org, int64_t id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM deny_rules WHERE id = :id AND "
	    "org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	sq_int(st, ":org", org);
	return (sq_affected(st));
}

int
sq_grant_find(int64_t org, int64_t user, int64_t grant, const char *tool)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT 1 FROM calls WHERE id = :id AND "
	    "org_id = :org AND user_id = :user AND kind = 'local_run' AND "
	    "action = 'GRANT' AND tool_name = :tool")) == NULL)
		return (-1);
	sq_int(st, ":id", grant);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	sq_text(st, ":tool", tool);
	return (sq_one(st, NULL, NULL));
}

int
sq_tool_secrets_mark(int64_t org, int64_t tool, const char *status,
    const char *detail, const char *at, store_text_fn fn, void *arg)
{
	struct store_each	 e = { .fn.text = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("UPDATE secrets SET status = :status, "
	    "status_detail = :detail, checked_at = :at WHERE org_id = :org "
	    "AND kind != 'param' AND id IN (SELECT secret_id FROM "
	    "tool_secrets WHERE tool_id = :tool) RETURNING name")) == NULL)
		return (-1);
	sq_text(st, ":status", status);
	sq_text(st, ":detail", detail);
	sq_text(st, ":at", at);
	sq_int(st, ":org", org);
	sq_int(st, ":tool", tool);
	return (sq_each(st, sq_text_row, &e));
}
