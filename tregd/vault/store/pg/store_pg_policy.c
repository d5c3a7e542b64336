/*
 * The PostgreSQL engine's deny rules (SPEC section 9), and the local
 * grants and the credential health they report.
 */

#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

#define DENY_SELECT							\
	"SELECT id, org_id, host, path_prefix, method, user_id, note, "	\
	"created_by, created_at, project_id, coalesce((SELECT email "	\
	"FROM users WHERE users.id = deny_rules.created_by), '') "	\
	"FROM deny_rules "

static int	pg_deny_row(const PGresult *, int, void *);

static int
pg_deny_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_deny	 d;

	memset(&d, 0, sizeof(d));
	d.id = pg_int(res, i, 0);
	d.org_id = pg_int(res, i, 1);
	d.host = pg_ntext(res, i, 2);
	d.path_prefix = pg_ntext(res, i, 3);
	d.method = pg_ntext(res, i, 4);
	d.user_id = pg_int(res, i, 5);
	d.note = pg_ntext(res, i, 6);
	d.created_by = pg_int(res, i, 7);
	d.created_at = pg_text(res, i, 8);
	d.project_id = pg_int(res, i, 9);
	d.created_by_email = pg_text(res, i, 10);
	return (e->fn.deny(&d, e->arg));
}

int
pg_deny_rules(int64_t org, int64_t user, store_deny_fn fn, void *arg)
{
	static struct pg_stmt	 st = { DENY_SELECT "WHERE org_id = $1 AND "
	    "($2 < 0 OR user_id IS NULL OR user_id = $2) ORDER BY id", 0 };
	struct store_each	 e = { .fn.deny = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, user);
	return (pg_each(&st, &q, pg_deny_row, &e));
}

int
pg_deny_count(int64_t org, int64_t *n)
{
	static struct pg_stmt	 st = { "SELECT count(*) FROM deny_rules "
	    "WHERE org_id = $1", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	return (pg_value(&st, &q, n) == -1 ? -1 : 0);
}

int
pg_deny_insert(const struct store_deny *d, int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO deny_rules (org_id, "
	    "host, path_prefix, method, user_id, note, created_by, "
	    "created_at, project_id) VALUES ($1, NULLIF($2, ''), "
	    "NULLIF($3, ''), NULLIF($4, ''), $5, NULLIF($6, ''), $7, $8, $9) "
	    "RETURNING id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, d->org_id);
	pgq_text(&q, d->host);
	pgq_text(&q, d->path_prefix);
	pgq_text(&q, d->method);
	pgq_intif(&q, d->user_id != 0, d->user_id);
	pgq_text(&q, d->note);
	pgq_int(&q, d->created_by);
	pgq_text(&q, d->created_at);
	pgq_intif(&q, d->project_id != 0, d->project_id);
	*id = 0;
	return (pg_value(&st, &q, id) == -1 ? -1 : 0);
}

int
pg_deny_get(int64_t id, store_deny_fn fn, void *arg)
{
	static struct pg_stmt	 st = { DENY_SELECT "WHERE id = $1", 0 };
	struct store_each	 e = { .fn.deny = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, id);
	return (pg_one(&st, &q, pg_deny_row, &e));
}

int
pg_deny_delete(int64_t org, int64_t id)
{
	static struct pg_stmt	 st = { "DELETE FROM deny_rules WHERE "
	    "id = $1 AND org_id = $2", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, id);
	pgq_int(&q, org);
	return (pg_changed(&st, &q));
}

int
pg_grant_find(int64_t org, int64_t user, int64_t grant, const char *tool)
{
	static struct pg_stmt	 st = { "SELECT id FROM calls WHERE id = $1 "
	    "AND org_id = $2 AND user_id = $3 AND kind = 'local_run' AND "
	    "action = 'GRANT' AND tool_name = $4", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, grant);
	pgq_int(&q, org);
	pgq_int(&q, user);
	pgq_text(&q, tool);
	return (pg_value(&st, &q, NULL));
}

int
pg_tool_secrets_mark(int64_t org, int64_t tool, const char *status,
    const char *detail, const char *at, store_text_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "UPDATE secrets SET status = $1, "
	    "status_detail = $2, checked_at = $3 WHERE org_id = $4 AND "
	    "kind <> 'param' AND id IN (SELECT secret_id FROM tool_secrets "
	    "WHERE tool_id = $5) RETURNING name", 0 };

	return (pg_marks(&st, org, tool, status, detail, at, fn, arg));
}
