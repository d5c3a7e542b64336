/*
 * The PostgreSQL engine: memberships by token, secrets and tools (the
 * rows a request and a run read), and the registry's listings and
 * writes (secrets, tools, skills).  Sealed values travel as bytea in
 * binary; they are ciphertext, opened only by vault_crypto.c.
 */

#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

static struct pg_stmt *pg_sel(struct pg_stmt [], const struct store_sel *,
		    struct pgq *);
static int	 pg_ref_row(const PGresult *, int, void *);
static int	 pg_secret_row(const PGresult *, int, void *);
static int	 pg_user_row(const PGresult *, int, void *);
static int	 pg_tool_row(const PGresult *, int, void *);
static void	 pg_tool_params(struct pgq *, const struct store_tool_item *);
static int	 pg_bundle_row(const PGresult *, int, void *);
static int	 pg_write_in(struct pg_stmt *, int64_t, int64_t);

int
pg_member_by_token(const uint8_t hash[STORE_HASH_LEN],
    struct store_member *m)
{
	static struct pg_stmt	 st = { "SELECT m.id, m.user_id, m.org_id, "
	    "m.role, m.tool_access, m.local_run_enabled, u.email, u.is_agent, "
	    "o.slug, m.token_hash, (SELECT v FROM tregd_version), "
	    "m.project_access FROM "
	    "memberships m JOIN users u ON u.id = m.user_id JOIN orgs o ON "
	    "o.id = m.org_id WHERE m.token_hash = $1", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 rc;

	memset(m, 0, sizeof(*m));
	pgq_init(&q);
	pgq_blob(&q, hash, STORE_HASH_LEN);
	if ((rc = pg_row(&st, &q, &res)) != 0)
		return (rc);
	if (PQgetlength(res, 0, 9) != STORE_HASH_LEN) {
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
	m->project_access = pg_strdup(res, 0, 11);
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
	int			 rc;

	memset(s, 0, sizeof(*s));
	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, id);
	if ((rc = pg_row(&st, &q, &res)) != 0)
		return (rc);
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

	pgq_init(&q);
	pgq_blob(&q, sealed, len);
	pgq_int(&q, id);
	return (pg_changed(&st, &q));	/* id is the key: 0 or 1 row */
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

	pgq_init(&q);
	pgq_int(&q, len);
	pgq_blob(&q, prefix, len);
	*n = 0;
	return (pg_value(&st, &q, n) == -1 ? -1 : 0);
}

int
pg_org_by_slug(const char *slug, int64_t *id)
{
	static struct pg_stmt	 st = { "SELECT id FROM orgs WHERE slug = $1",
	    0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, slug);
	return (pg_value(&st, &q, id));
}

int
pg_tool_by_name(int64_t org, const char *name, struct store_tool *t)
{
	static struct pg_stmt	 st = { "SELECT t.id, t.org_id, t.name, "
	    "t.owner_id, t.base_url, t.host, t.bindings, t.cli, t.bundle_id, "
	    "b.name, t.project_id FROM tools t LEFT JOIN bundles b ON "
	    "b.id = t.bundle_id "
	    "WHERE t.org_id = $1 AND t.name = $2", 0 };
	struct pgq		 q;
	PGresult		*res;
	int			 rc;

	memset(t, 0, sizeof(*t));
	pgq_init(&q);
	pgq_int(&q, org);
	pgq_text(&q, name);
	if ((rc = pg_row(&st, &q, &res)) != 0)
		return (rc);
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
	t->project_id = pg_int(res, 0, 10);
	PQclear(res);
	return (0);
}

int
pg_tool_secret_ids(int64_t tool, int64_t *ids, size_t max, size_t *n)
{
	static struct pg_stmt	 st = { "SELECT secret_id FROM tool_secrets "
	    "WHERE tool_id = $1 ORDER BY secret_id", 0 };
	struct pgq		 q;

	*n = 0;
	pgq_init(&q);
	pgq_int(&q, tool);
	return (pg_ids(&st, &q, ids, max, n));
}

/* ------------------------------------------------------------------ */
/* The registry (vault_tool.c): owners and names, secrets, tools and   */
/* skills.  A listing's statement is chosen by its selection.          */

/* The statement of sel among st[], and its parameters ($1 org, $2). */
static struct pg_stmt *
pg_sel(struct pg_stmt st[], const struct store_sel *sel,
    struct pgq *q)
{
	enum store_sel_by	 which = store_sel_by(sel);

	if (st[which].sql == NULL)
		fatalx("%s: no such selection", __func__);
	pgq_init(q);
	pgq_int(q, sel->org);
	if (which == STORE_SEL_ID)
		pgq_int(q, sel->id);
	else if (which == STORE_SEL_NAME)
		pgq_text(q, sel->name);
	else if (which == STORE_SEL_BUNDLE)
		pgq_int(q, sel->bundle);
	return (&st[which]);
}

int
pg_ref_get(enum store_object what, int64_t org, int64_t id,
    const char *name, struct store_ref *ref)
{
	static struct pg_stmt	 st[][2] = {
		[STORE_SECRET] = {
		    { "SELECT id, owner_id, name, kind FROM secrets "
		    "WHERE org_id = $1 AND id = $2", 0 },
		    { NULL, 0 } },
		[STORE_TOOL] = {
		    { "SELECT t.id, t.owner_id, t.name, b.name FROM tools t "
		    "LEFT JOIN bundles b ON b.id = t.bundle_id WHERE "
		    "t.org_id = $1 AND t.id = $2", 0 },
		    { "SELECT t.id, t.owner_id, t.name, b.name FROM tools t "
		    "LEFT JOIN bundles b ON b.id = t.bundle_id WHERE "
		    "t.org_id = $1 AND t.name = $2", 0 } },
		[STORE_BUNDLE] = {
		    { "SELECT id, owner_id, name, '' FROM bundles "
		    "WHERE org_id = $1 AND id = $2", 0 },
		    { "SELECT id, owner_id, name, '' FROM bundles "
		    "WHERE org_id = $1 AND name = $2", 0 } },
	};
	struct pg_stmt	*s;
	struct pgq	 q;

	if ((unsigned)what > STORE_BUNDLE ||
	    (s = &st[what][name != NULL])->sql == NULL)
		fatalx("%s: no such lookup", __func__);
	pgq_init(&q);
	pgq_int(&q, org);
	if (name != NULL)
		pgq_text(&q, name);
	else
		pgq_int(&q, id);
	return (pg_one(s, &q, pg_ref_row, ref));
}

static int
pg_ref_row(const PGresult *res, int i, void *arg)
{
	struct store_ref	*ref = arg;

	ref->id = pg_int(res, i, 0);
	ref->owner_id = pg_int(res, i, 1);
	pg_copy(ref->name, sizeof(ref->name), res, i, 2);
	pg_copy(ref->detail, sizeof(ref->detail), res, i, 3);
	return (0);
}

#define PG_SECRET_COLS	"SELECT s.id, s.name, s.kind, s.owner_id, u.email, " \
			"s.bundle_id FROM secrets s LEFT JOIN users u ON " \
			"u.id = s.owner_id WHERE s.org_id = $1 "

int
pg_secrets(const struct store_sel *sel, store_secret_item_fn fn, void *arg)
{
	static struct pg_stmt	 st[STORE_SEL_MAX] = {
		[STORE_SEL_ID] = { PG_SECRET_COLS "AND s.id = $2", 0 },
		[STORE_SEL_BUNDLE] = { PG_SECRET_COLS "AND s.bundle_id = $2 "
		    "ORDER BY s.id", 0 },
		[STORE_SEL_ALL] = { PG_SECRET_COLS "ORDER BY s.id", 0 },
	};
	struct store_each	 e = { .fn.secret = fn, .arg = arg };
	struct pg_stmt		*s;
	struct pgq		 q;

	s = pg_sel(st, sel, &q);
	return (pg_each(s, &q, pg_secret_row, &e));
}

static int
pg_secret_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_secret_item s;

	s.id = pg_int(res, i, 0);
	s.name = pg_text(res, i, 1);
	s.kind = pg_text(res, i, 2);
	s.owner_id = pg_int(res, i, 3);
	s.owner_email = pg_ntext(res, i, 4);
	s.bundle_id = pg_int(res, i, 5);
	return (e->fn.secret(&s, e->arg));
}

int
pg_secret_insert(const struct store_secret *s, int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO secrets (org_id, name, "
	    "kind, owner_id, bundle_id, sealed, created_at) VALUES ($1, $2, "
	    "$3, $4, $5, '\\x', $6) RETURNING id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, s->org_id);
	pgq_text(&q, s->name);
	pgq_text(&q, s->kind);
	pgq_int(&q, s->owner_id);
	pgq_intif(&q, s->bundle_id > 0, s->bundle_id);
	pgq_text(&q, s->created_at);
	return (pg_write(&st, &q, id));
}

int
pg_secret_set_value(int64_t org, int64_t id, const void *sealed,
    size_t len)
{
	static struct pg_stmt	 st = { "UPDATE secrets SET sealed = $1, "
	    "status = 'unknown', status_detail = NULL, checked_at = NULL "
	    "WHERE id = $2 AND org_id = $3", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_blob(&q, sealed, len);
	pgq_int(&q, id);
	pgq_int(&q, org);
	return (pg_write(&st, &q, NULL));
}

int
pg_secret_update(int64_t org, int64_t id, const char *name,
    const char *kind)
{
	static struct pg_stmt	 st = { "UPDATE secrets SET name = "
	    "coalesce($1, name), kind = $2 WHERE id = $3 AND org_id = $4", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, name);
	pgq_text(&q, kind);
	pgq_int(&q, id);
	pgq_int(&q, org);
	return (pg_write(&st, &q, NULL));
}

int
pg_secret_users(int64_t id, store_secret_user_fn fn, void *arg)
{
	static struct pg_stmt	 st = { "SELECT 0 AS own, t.name AS tool, "
	    "b.name FROM tool_secrets ts JOIN tools t ON t.id = ts.tool_id "
	    "LEFT JOIN bundles b ON b.id = t.bundle_id WHERE ts.secret_id = $1 "
	    "UNION ALL SELECT 1, NULL, b.name FROM secrets s JOIN bundles b ON "
	    "b.id = s.bundle_id WHERE s.id = $1 ORDER BY own, tool", 0 };
	struct store_each	 e = { .fn.secret_user = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, id);
	return (pg_each(&st, &q, pg_user_row, &e));
}

static int
pg_user_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;

	return (e->fn.secret_user(pg_ntext(res, i, 1), pg_text(res, i, 2),
	    e->arg));
}

/* A write to row id ($1) of org ($2): as pg_write(). */
static int
pg_write_in(struct pg_stmt *st, int64_t org, int64_t id)
{
	struct pgq	 q;

	pgq_init(&q);
	pgq_int(&q, id);
	pgq_int(&q, org);
	return (pg_write(st, &q, NULL));
}

int
pg_secret_delete(int64_t org, int64_t id)
{
	static struct pg_stmt	 st = { "DELETE FROM secrets WHERE id = $1 "
	    "AND org_id = $2", 0 };

	return (pg_write_in(&st, org, id));
}

#define PG_TOOL_COLS	"SELECT t.id, t.org_id, t.name, t.owner_id, u.email, " \
			"t.base_url, t.host, t.bindings, t.cli, " \
			"t.health_check, t.examples, t.bundle_id, b.name, " \
			"t.created_at, t.project_id"
#define PG_TOOL_FROM	" FROM tools t LEFT JOIN users u ON " \
			"u.id = t.owner_id LEFT JOIN bundles b ON " \
			"b.id = t.bundle_id "

/* A row of a tools statement; column 15, if any, is the org's slug. */
static int
pg_tool_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_tool_item	 t;

	t.id = pg_int(res, i, 0);
	t.org_id = pg_int(res, i, 1);
	t.name = pg_text(res, i, 2);
	t.owner_id = pg_int(res, i, 3);
	t.owner_email = pg_ntext(res, i, 4);
	t.base_url = pg_text(res, i, 5);
	t.host = pg_text(res, i, 6);
	t.bindings = pg_text(res, i, 7);
	t.cli = pg_ntext(res, i, 8);
	t.health_check = pg_ntext(res, i, 9);
	t.examples = pg_text(res, i, 10);
	t.bundle_id = pg_int(res, i, 11);
	t.bundle = pg_text(res, i, 12);
	t.created_at = pg_text(res, i, 13);
	t.project_id = pg_int(res, i, 14);
	t.org_slug = PQnfields(res) > 15 ? pg_text(res, i, 15) : "";
	return (e->fn.tool(&t, e->arg));
}

int
pg_tools(const struct store_sel *sel, store_tool_item_fn fn, void *arg)
{
	static struct pg_stmt	 st[STORE_SEL_MAX] = {
		[STORE_SEL_ID] = { PG_TOOL_COLS PG_TOOL_FROM
		    "WHERE t.org_id = $1 AND t.id = $2", 0 },
		[STORE_SEL_NAME] = { PG_TOOL_COLS PG_TOOL_FROM
		    "WHERE t.org_id = $1 AND t.name = $2", 0 },
		[STORE_SEL_BUNDLE] = { PG_TOOL_COLS PG_TOOL_FROM "WHERE "
		    "t.org_id = $1 AND t.bundle_id = $2 ORDER BY t.id", 0 },
		[STORE_SEL_ALL] = { PG_TOOL_COLS PG_TOOL_FROM
		    "WHERE t.org_id = $1 ORDER BY t.id", 0 },
	};
	struct store_each	 e = { .fn.tool = fn, .arg = arg };
	struct pg_stmt		*s;
	struct pgq		 q;

	s = pg_sel(st, sel, &q);
	return (pg_each(s, &q, pg_tool_row, &e));
}

int
pg_tools_by_slug(const char *slug, store_tool_item_fn fn, void *arg)
{
	static struct pg_stmt	 st = { PG_TOOL_COLS ", o.slug" PG_TOOL_FROM
	    "JOIN orgs o ON o.id = t.org_id WHERE $1 = '' OR o.slug = $1 "
	    "ORDER BY o.slug, t.name", 0 };
	struct store_each	 e = { .fn.tool = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, slug);
	return (pg_each(&st, &q, pg_tool_row, &e));
}

int
pg_tool_name_used(int64_t org, const char *name, int64_t except)
{
	static struct pg_stmt	 st = { "SELECT 1 FROM tools WHERE "
	    "org_id = $1 AND name = $2 AND id <> $3", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_text(&q, name);
	pgq_int(&q, except);
	return (pg_value(&st, &q, NULL));
}

/* $1..$8: the columns a tool's insert and update both write. */
static void
pg_tool_params(struct pgq *q, const struct store_tool_item *t)
{
	pgq_init(q);
	pgq_int(q, t->org_id);
	pgq_text(q, t->name);
	pgq_text(q, t->base_url);
	pgq_text(q, t->host);
	pgq_text(q, t->bindings);
	pgq_text(q, t->cli);
	pgq_text(q, t->health_check);
	pgq_text(q, t->examples);
}

int
pg_tool_insert(const struct store_tool_item *t, int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO tools (org_id, name, "
	    "base_url, host, bindings, cli, health_check, examples, owner_id, "
	    "bundle_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
	    "$9, $10, $11) RETURNING id", 0 };
	struct pgq		 q;

	pg_tool_params(&q, t);
	pgq_int(&q, t->owner_id);
	pgq_intif(&q, t->bundle_id > 0, t->bundle_id);
	pgq_text(&q, t->created_at);
	return (pg_write(&st, &q, id));
}

int
pg_tool_update(const struct store_tool_item *t)
{
	static struct pg_stmt	 st = { "UPDATE tools SET name = $2, "
	    "base_url = $3, host = $4, bindings = $5, cli = $6, "
	    "health_check = $7, examples = $8 WHERE org_id = $1 AND "
	    "id = $9", 0 };
	struct pgq		 q;

	pg_tool_params(&q, t);
	pgq_int(&q, t->id);
	return (pg_write(&st, &q, NULL));
}

int
pg_tool_secrets_set(int64_t tool, const int64_t *ids, size_t n)
{
	static struct pg_stmt	 del = { "DELETE FROM tool_secrets WHERE "
	    "tool_id = $1", 0 };
	static struct pg_stmt	 ins = { "INSERT INTO tool_secrets (tool_id, "
	    "secret_id) VALUES ($1, $2)", 0 };
	struct pgq		 q;
	size_t			 i;

	pgq_init(&q);
	pgq_int(&q, tool);
	if (pg_write(&del, &q, NULL) == -1)
		return (-1);
	for (i = 0; i < n; i++) {
		pgq_init(&q);
		pgq_int(&q, tool);
		pgq_int(&q, ids[i]);
		if (pg_write(&ins, &q, NULL) != 0)
			return (-1);
	}
	return (0);
}

int
pg_tool_delete(int64_t org, int64_t id)
{
	static struct pg_stmt	 st = { "DELETE FROM tools WHERE id = $1 "
	    "AND org_id = $2", 0 };

	return (pg_write_in(&st, org, id));
}

#define PG_BUNDLE_COLS	"SELECT b.id, b.org_id, b.name, b.owner_id, u.email, " \
			"b.created_at"
#define PG_BUNDLE_FULL	", b.recipe, b.files"
#define PG_BUNDLE_FROM	" FROM bundles b LEFT JOIN users u ON " \
			"u.id = b.owner_id WHERE b.org_id = $1 "

int
pg_bundles(const struct store_sel *sel, store_bundle_item_fn fn, void *arg)
{
	static struct pg_stmt	 full[STORE_SEL_MAX] = {
		[STORE_SEL_ID] = { PG_BUNDLE_COLS PG_BUNDLE_FULL PG_BUNDLE_FROM
		    "AND b.id = $2", 0 },
		[STORE_SEL_NAME] = { PG_BUNDLE_COLS PG_BUNDLE_FULL
		    PG_BUNDLE_FROM "AND b.name = $2", 0 },
		[STORE_SEL_ALL] = { PG_BUNDLE_COLS PG_BUNDLE_FULL PG_BUNDLE_FROM
		    "ORDER BY b.id", 0 },
	};
	static struct pg_stmt	 brief[STORE_SEL_MAX] = {
		[STORE_SEL_ID] = { PG_BUNDLE_COLS PG_BUNDLE_FROM
		    "AND b.id = $2", 0 },
		[STORE_SEL_NAME] = { PG_BUNDLE_COLS PG_BUNDLE_FROM
		    "AND b.name = $2", 0 },
		[STORE_SEL_ALL] = { PG_BUNDLE_COLS PG_BUNDLE_FROM
		    "ORDER BY b.id", 0 },
	};
	struct store_each	 e = { .fn.bundle = fn, .arg = arg };
	struct pg_stmt		*s;
	struct pgq		 q;

	s = pg_sel(sel->brief ? brief : full, sel, &q);
	return (pg_each(s, &q, pg_bundle_row, &e));
}

/* A brief listing's rows end before the recipe and the files. */
static int
pg_bundle_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_bundle_item b;
	int			 full = PQnfields(res) > 6;

	b.id = pg_int(res, i, 0);
	b.org_id = pg_int(res, i, 1);
	b.name = pg_text(res, i, 2);
	b.owner_id = pg_int(res, i, 3);
	b.owner_email = pg_ntext(res, i, 4);
	b.created_at = pg_text(res, i, 5);
	b.recipe = full ? pg_text(res, i, 6) : "";
	b.files = full ? pg_text(res, i, 7) : "";
	return (e->fn.bundle(&b, e->arg));
}

int
pg_bundle_insert(const struct store_bundle_item *b, int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO bundles (org_id, name, "
	    "owner_id, recipe, files, created_at) VALUES ($1, $2, $3, $4, $5, "
	    "$6) RETURNING id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, b->org_id);
	pgq_text(&q, b->name);
	pgq_int(&q, b->owner_id);
	pgq_text(&q, b->recipe);
	pgq_text(&q, b->files);
	pgq_text(&q, b->created_at);
	return (pg_write(&st, &q, id));
}

int
pg_bundle_set_recipe(int64_t org, int64_t id, const char *recipe)
{
	static struct pg_stmt	 st = { "UPDATE bundles SET recipe = $1 "
	    "WHERE id = $2 AND org_id = $3", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, recipe);
	pgq_int(&q, id);
	pgq_int(&q, org);
	return (pg_write(&st, &q, NULL));
}

int
pg_bundle_outside_user(int64_t id, char *tool, char *secret, size_t len)
{
	static struct pg_stmt	 st = { "SELECT t.name, s.name FROM "
	    "tool_secrets ts JOIN tools t ON t.id = ts.tool_id JOIN secrets s "
	    "ON s.id = ts.secret_id WHERE s.bundle_id = $1 AND "
	    "(t.bundle_id IS NULL OR t.bundle_id <> $1) LIMIT 1", 0 };
	PGresult		*res;
	int			 rc;

	if ((rc = pg_row_of(&st, id, &res)) != 0)
		return (rc);
	pg_copy(tool, len, res, 0, 0);
	pg_copy(secret, len, res, 0, 1);
	PQclear(res);
	return (0);
}

/*
 * The skill's tools go first, by a statement of their own: PostgreSQL
 * checks tool_secrets' reference to a cascaded secret before it has
 * cascaded the tools' rows of it away.  The caller holds a transaction.
 */
int
pg_bundle_delete(int64_t org, int64_t id)
{
	static struct pg_stmt	 tools = { "DELETE FROM tools WHERE "
	    "bundle_id = $1 AND org_id = $2", 0 };
	static struct pg_stmt	 st = { "DELETE FROM bundles WHERE id = $1 "
	    "AND org_id = $2", 0 };

	if (pg_write_in(&tools, org, id) == -1)
		return (-1);
	return (pg_write_in(&st, org, id));
}
