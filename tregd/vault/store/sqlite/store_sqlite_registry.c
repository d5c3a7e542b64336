/*
 * The sqlite engine's registry: secrets (never their values here except
 * as sealed bytes), tools, the secrets each tool uses, and skills.  A
 * listing's statement is chosen by its selection (one per kind, so each
 * walks its own index) and its rows are read by one function per object.
 */

#include <string.h>

#include "log.h"
#include "store_sqlite.h"

/* The caller's function and argument, and where the row's columns are. */
struct reg_each {
	struct store_each	 each;
	int			 col[16];	/* by the row's names */
	int			 ncol;
};

static sqlite3_stmt *sq_sel(const char *const [STORE_SEL_MAX],
		    const struct store_sel *);
static void	 sq_colmap(struct reg_each *, sqlite3_stmt *,
		    const char *const [], int);
static const char *sq_ntext(sqlite3_stmt *, int);
static int	 sq_write(sqlite3_stmt *);
static int	 sq_write_id(sqlite3_stmt *, int64_t *);
static int	 sq_updated(sqlite3_stmt *);
static int	 sq_changed(sqlite3_stmt *);
static int	 sq_secret_row(sqlite3_stmt *, void *);
static int	 sq_user_row(sqlite3_stmt *, void *);
static int	 sq_tool_row(sqlite3_stmt *, void *);
static int	 sq_tools_each(sqlite3_stmt *, store_tool_item_fn, void *);
static void	 sq_tool_bind(sqlite3_stmt *, const struct store_tool_item *);
static int	 sq_bundle_row(sqlite3_stmt *, void *);

/* ------------------------------------------------------------------ */
/* Helpers.                                                            */

/* The statement of sel among sql[] (one per kind), bound. */
static sqlite3_stmt *
sq_sel(const char *const sql[STORE_SEL_MAX], const struct store_sel *sel)
{
	sqlite3_stmt		*st;
	enum store_sel_by	 which = store_sel_by(sel);

	if (sql[which] == NULL)
		fatalx("%s: no such selection", __func__);
	if ((st = db_prepare(sql[which])) == NULL)
		return (NULL);
	sq_int(st, ":org", sel->org);
	if (which == STORE_SEL_ID)
		sq_int(st, ":id", sel->id);
	else if (which == STORE_SEL_NAME)
		sq_text(st, ":name", sel->name);
	else if (which == STORE_SEL_BUNDLE)
		sq_int(st, ":bundle", sel->bundle);
	return (st);
}

/* The index of each named column (-1: not selected), looked up once. */
static void
sq_colmap(struct reg_each *e, sqlite3_stmt *st, const char *const names[],
    int n)
{
	int	 i, j, ncol = sqlite3_column_count(st);

	if (n > (int)(sizeof(e->col) / sizeof(e->col[0])))
		fatalx("%s: too many columns", __func__);
	for (i = 0; i < n; i++) {
		e->col[i] = -1;
		for (j = 0; j < ncol; j++)
			if (strcmp(sqlite3_column_name(st, j), names[i]) == 0)
				e->col[i] = j;
	}
	e->ncol = n;
}

static const char *
sq_ntext(sqlite3_stmt *st, int col)
{
	if (col < 0)
		return (NULL);
	return ((const char *)sqlite3_column_text(st, col));
}

/* Step a write: 0 done, STORE_TAKEN a UNIQUE refused it, -1 failed. */
static int
sq_write(sqlite3_stmt *st)
{
	int	 rc, ext;

	rc = sq_step(st);
	ext = sqlite3_extended_errcode(vault_db);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_DONE)
		return (0);
	if (ext == SQLITE_CONSTRAINT_UNIQUE ||
	    ext == SQLITE_CONSTRAINT_PRIMARYKEY)
		return (STORE_TAKEN);
	return (-1);
}

/* An insert's sq_write(), and its rowid in *id when done. */
static int
sq_write_id(sqlite3_stmt *st, int64_t *id)
{
	int	 rc;

	if ((rc = sq_write(st)) == 0)
		*id = sqlite3_last_insert_rowid(vault_db);
	return (rc);
}

/* A write of one row by id: 0 done, 1 no such row, STORE_TAKEN, -1. */
static int
sq_updated(sqlite3_stmt *st)
{
	int	 rc;

	if ((rc = sq_write(st)) != 0)
		return (rc);
	return (sqlite3_changes(vault_db) > 0 ? 0 : 1);
}

/* The same where no UNIQUE can refuse it: 0, 1, -1. */
static int
sq_changed(sqlite3_stmt *st)
{
	int	 rc;

	return ((rc = sq_updated(st)) == STORE_TAKEN ? -1 : rc);
}

/* ------------------------------------------------------------------ */
/* Any object: its owner and names.                                    */

int
sq_ref_get(enum store_object what, int64_t org, int64_t id,
    const char *name, struct store_ref *ref)
{
	static const char *const sql[][2] = {
		[STORE_SECRET] = {
		    "SELECT id, owner_id, name, kind AS detail FROM secrets "
		    "WHERE org_id = :org AND id = :id",
		    NULL },
		[STORE_TOOL] = {
		    "SELECT t.id AS id, t.owner_id AS owner_id, "
		    "t.name AS name, b.name AS detail FROM tools t LEFT JOIN "
		    "bundles b ON b.id = t.bundle_id WHERE t.org_id = :org AND "
		    "t.id = :id",
		    "SELECT t.id AS id, t.owner_id AS owner_id, "
		    "t.name AS name, b.name AS detail FROM tools t LEFT JOIN "
		    "bundles b ON "
		    "b.id = t.bundle_id WHERE t.org_id = :org AND "
		    "t.name = :name" },
		[STORE_BUNDLE] = {
		    "SELECT id, owner_id, name, '' AS detail FROM bundles "
		    "WHERE org_id = :org AND id = :id",
		    "SELECT id, owner_id, name, '' AS detail FROM bundles "
		    "WHERE org_id = :org AND name = :name" },
	};
	sqlite3_stmt	*st;
	const char	*q;
	int		 rc;

	if ((unsigned)what > STORE_BUNDLE ||
	    (q = sql[what][name != NULL]) == NULL)
		fatalx("%s: no such lookup", __func__);
	if ((st = db_prepare(q)) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	if (name != NULL)
		sq_text(st, ":name", name);
	else
		sq_int(st, ":id", id);
	if ((rc = sq_step(st)) == SQLITE_ROW) {
		ref->id = sq_cint(st, "id");
		ref->owner_id = sq_cint(st, "owner_id");
		sq_ccopy(st, "name", ref->name, sizeof(ref->name));
		sq_ccopy(st, "detail", ref->detail, sizeof(ref->detail));
	}
	return (sq_row_end(st, rc));
}

/* ------------------------------------------------------------------ */
/* Secrets.                                                            */

#define SECRET_COLS	"SELECT s.id AS id, s.name AS name, s.kind AS kind, " \
			"s.owner_id AS owner_id, u.email AS email, " \
			"s.bundle_id AS bundle_id FROM secrets s LEFT JOIN " \
			"users u ON u.id = s.owner_id WHERE s.org_id = :org "

static const char *const secret_cols[] = {
	"id", "name", "kind", "owner_id", "email", "bundle_id"
};

static int
sq_secret_row(sqlite3_stmt *st, void *arg)
{
	struct reg_each		*e = arg;
	struct store_secret_item s;

	s.id = sqlite3_column_int64(st, e->col[0]);
	s.name = db_text(st, e->col[1]);
	s.kind = db_text(st, e->col[2]);
	s.owner_id = sqlite3_column_int64(st, e->col[3]);
	s.owner_email = sq_ntext(st, e->col[4]);
	s.bundle_id = sqlite3_column_int64(st, e->col[5]);
	return (e->each.fn.secret(&s, e->each.arg));
}

int
sq_secrets(const struct store_sel *sel, store_secret_item_fn fn, void *arg)
{
	static const char *const sql[STORE_SEL_MAX] = {
		[STORE_SEL_ID] = SECRET_COLS "AND s.id = :id",
		[STORE_SEL_BUNDLE] = SECRET_COLS "AND s.bundle_id = :bundle "
		    "ORDER BY s.id",
		[STORE_SEL_ALL] = SECRET_COLS "ORDER BY s.id",
	};
	struct reg_each	 e;
	sqlite3_stmt	*st;

	if ((st = sq_sel(sql, sel)) == NULL)
		return (-1);
	e.each.fn.secret = fn;
	e.each.arg = arg;
	sq_colmap(&e, st, secret_cols, 6);
	return (sq_each(st, sq_secret_row, &e));
}

int
sq_secret_insert(const struct store_secret *s, int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO secrets (org_id, name, kind, "
	    "owner_id, bundle_id, sealed, created_at) VALUES (:org, :name, "
	    ":kind, :owner, :bundle, x'', :at)")) == NULL)
		return (-1);
	sq_int(st, ":org", s->org_id);
	sq_text(st, ":name", s->name);
	sq_text(st, ":kind", s->kind);
	sq_int(st, ":owner", s->owner_id);
	if (s->bundle_id > 0)
		sq_int(st, ":bundle", s->bundle_id);
	sq_text(st, ":at", s->created_at);
	return (sq_write_id(st, id));
}

int
sq_secret_set_value(int64_t org, int64_t id, const void *sealed,
    size_t len)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE secrets SET sealed = :sealed, "
	    "status = 'unknown', status_detail = NULL, checked_at = NULL "
	    "WHERE id = :id AND org_id = :org")) == NULL)
		return (-1);
	sq_blob(st, ":sealed", sealed, len);
	sq_int(st, ":id", id);
	sq_int(st, ":org", org);
	return (sq_changed(st));
}

int
sq_secret_update(int64_t org, int64_t id, const char *name,
    const char *kind)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE secrets SET name = coalesce(:name, "
	    "name), kind = :kind WHERE id = :id AND org_id = :org")) == NULL)
		return (-1);
	sq_text(st, ":name", name);
	sq_text(st, ":kind", kind);
	sq_int(st, ":id", id);
	sq_int(st, ":org", org);
	return (sq_changed(st));
}

static int
sq_user_row(sqlite3_stmt *st, void *arg)
{
	struct reg_each	*e = arg;

	return (e->each.fn.secret_user(sq_ntext(st, e->col[0]),
	    db_text(st, e->col[1]), e->each.arg));
}

int
sq_secret_users(int64_t id, store_secret_user_fn fn, void *arg)
{
	static const char *const cols[] = { "tool", "bundle" };
	struct reg_each	 e;
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT 0 AS own, t.name AS tool, b.name AS "
	    "bundle FROM tool_secrets ts JOIN tools t ON t.id = ts.tool_id "
	    "LEFT JOIN bundles b ON b.id = t.bundle_id WHERE ts.secret_id = "
	    ":id UNION ALL SELECT 1, NULL, b.name FROM secrets s JOIN "
	    "bundles b ON b.id = s.bundle_id WHERE s.id = :id "
	    "ORDER BY own, tool")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	e.each.fn.secret_user = fn;
	e.each.arg = arg;
	sq_colmap(&e, st, cols, 2);
	return (sq_each(st, sq_user_row, &e));
}

int
sq_secret_delete(int64_t org, int64_t id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM secrets WHERE id = :id AND "
	    "org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	sq_int(st, ":org", org);
	return (sq_changed(st));
}

/* ------------------------------------------------------------------ */
/* Tools.                                                              */

#define TOOL_COLS	"SELECT t.id AS id, t.org_id AS org_id, " \
			"t.name AS name, t.owner_id AS owner_id, " \
			"u.email AS email, " \
			"t.base_url AS base_url, t.host AS host, " \
			"t.bindings AS bindings, t.cli AS cli, " \
			"t.health_check AS health_check, " \
			"t.examples AS examples, t.bundle_id AS bundle_id, " \
			"b.name AS bundle, t.created_at AS created_at, " \
			"t.project_id AS project_id"
#define TOOL_FROM	" FROM tools t LEFT JOIN users u ON " \
			"u.id = t.owner_id LEFT JOIN bundles b ON " \
			"b.id = t.bundle_id "

static const char *const tool_cols[] = {
	"id", "org_id", "name", "owner_id", "email", "base_url", "host",
	"bindings", "cli", "health_check", "examples", "bundle_id", "bundle",
	"created_at", "slug", "project_id"
};

static int
sq_tool_row(sqlite3_stmt *st, void *arg)
{
	struct reg_each		*e = arg;
	struct store_tool_item	 t;

	t.id = sqlite3_column_int64(st, e->col[0]);
	t.org_id = sqlite3_column_int64(st, e->col[1]);
	t.name = db_text(st, e->col[2]);
	t.owner_id = sqlite3_column_int64(st, e->col[3]);
	t.owner_email = sq_ntext(st, e->col[4]);
	t.base_url = db_text(st, e->col[5]);
	t.host = db_text(st, e->col[6]);
	t.bindings = db_text(st, e->col[7]);
	t.cli = sq_ntext(st, e->col[8]);
	t.health_check = sq_ntext(st, e->col[9]);
	t.examples = db_text(st, e->col[10]);
	t.bundle_id = sqlite3_column_int64(st, e->col[11]);
	t.bundle = db_text(st, e->col[12]);
	t.created_at = db_text(st, e->col[13]);
	t.org_slug = e->col[14] >= 0 ? db_text(st, e->col[14]) : "";
	t.project_id = sqlite3_column_int64(st, e->col[15]);
	return (e->each.fn.tool(&t, e->each.arg));
}

static int
sq_tools_each(sqlite3_stmt *st, store_tool_item_fn fn, void *arg)
{
	struct reg_each	 e;

	e.each.fn.tool = fn;
	e.each.arg = arg;
	sq_colmap(&e, st, tool_cols, 16);
	return (sq_each(st, sq_tool_row, &e));
}

int
sq_tools(const struct store_sel *sel, store_tool_item_fn fn, void *arg)
{
	static const char *const sql[STORE_SEL_MAX] = {
		[STORE_SEL_ID] = TOOL_COLS TOOL_FROM "WHERE t.org_id = :org "
		    "AND t.id = :id",
		[STORE_SEL_NAME] = TOOL_COLS TOOL_FROM "WHERE t.org_id = :org "
		    "AND t.name = :name",
		[STORE_SEL_BUNDLE] = TOOL_COLS TOOL_FROM
		    "WHERE t.org_id = :org AND t.bundle_id = :bundle "
		    "ORDER BY t.id",
		[STORE_SEL_ALL] = TOOL_COLS TOOL_FROM "WHERE t.org_id = :org "
		    "ORDER BY t.id",
	};
	sqlite3_stmt	*st;

	if ((st = sq_sel(sql, sel)) == NULL)
		return (-1);
	return (sq_tools_each(st, fn, arg));
}

int
sq_tools_by_slug(const char *slug, store_tool_item_fn fn, void *arg)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare(TOOL_COLS ", o.slug AS slug" TOOL_FROM
	    "JOIN orgs o ON o.id = t.org_id WHERE :slug = '' OR "
	    "o.slug = :slug ORDER BY o.slug, t.name")) == NULL)
		return (-1);
	sq_text(st, ":slug", slug);
	return (sq_tools_each(st, fn, arg));
}

int
sq_tool_name_used(int64_t org, const char *name, int64_t except)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT 1 FROM tools WHERE org_id = :org AND "
	    "name = :name AND id != :except")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_text(st, ":name", name);
	sq_int(st, ":except", except);
	return (sq_row_end(st, sq_step(st)));
}

/* The columns a tool's insert and update both write. */
static void
sq_tool_bind(sqlite3_stmt *st, const struct store_tool_item *t)
{
	sq_int(st, ":org", t->org_id);
	sq_text(st, ":name", t->name);
	sq_text(st, ":base_url", t->base_url);
	sq_text(st, ":host", t->host);
	sq_text(st, ":bindings", t->bindings);
	sq_text(st, ":cli", t->cli);
	sq_text(st, ":hc", t->health_check);
	sq_text(st, ":examples", t->examples);
}

int
sq_tool_insert(const struct store_tool_item *t, int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO tools (org_id, name, owner_id, "
	    "base_url, host, bindings, cli, health_check, examples, "
	    "bundle_id, created_at) VALUES (:org, :name, :owner, :base_url, "
	    ":host, :bindings, :cli, :hc, :examples, :bundle, :at)")) == NULL)
		return (-1);
	sq_tool_bind(st, t);
	sq_int(st, ":owner", t->owner_id);
	if (t->bundle_id > 0)
		sq_int(st, ":bundle", t->bundle_id);
	sq_text(st, ":at", t->created_at);
	return (sq_write_id(st, id));
}

int
sq_tool_update(const struct store_tool_item *t)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE tools SET name = :name, base_url = "
	    ":base_url, host = :host, bindings = :bindings, cli = :cli, "
	    "health_check = :hc, examples = :examples WHERE id = :id AND "
	    "org_id = :org")) == NULL)
		return (-1);
	sq_tool_bind(st, t);
	sq_int(st, ":id", t->id);
	return (sq_updated(st));
}

int
sq_tool_secrets_set(int64_t tool, const int64_t *ids, size_t n)
{
	sqlite3_stmt	*st;
	size_t		 i;

	if ((st = db_prepare("DELETE FROM tool_secrets WHERE tool_id = "
	    ":tool")) == NULL)
		return (-1);
	sq_int(st, ":tool", tool);
	if (sq_done(st) == -1)
		return (-1);
	if ((st = db_prepare("INSERT INTO tool_secrets (tool_id, secret_id) "
	    "VALUES (:tool, :secret)")) == NULL)
		return (-1);
	for (i = 0; i < n; i++) {
		sq_int(st, ":tool", tool);
		sq_int(st, ":secret", ids[i]);
		if (sq_done(st) == -1)
			return (-1);
	}
	return (0);
}

int
sq_tool_delete(int64_t org, int64_t id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM tools WHERE id = :id AND "
	    "org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	sq_int(st, ":org", org);
	return (sq_changed(st));
}

/* ------------------------------------------------------------------ */
/* Skills (bundles).                                                   */

#define BUNDLE_COLS	"SELECT b.id AS id, b.org_id AS org_id, " \
			"b.name AS name, b.owner_id AS owner_id, " \
			"u.email AS email, b.created_at AS created_at"
#define BUNDLE_FULL	", b.recipe AS recipe, b.files AS files"
#define BUNDLE_FROM	" FROM bundles b LEFT JOIN users u ON " \
			"u.id = b.owner_id WHERE b.org_id = :org "

static const char *const bundle_cols[] = {
	"id", "org_id", "name", "owner_id", "email", "created_at", "recipe",
	"files"
};

static int
sq_bundle_row(sqlite3_stmt *st, void *arg)
{
	struct reg_each			*e = arg;
	struct store_bundle_item	 b;

	b.id = sqlite3_column_int64(st, e->col[0]);
	b.org_id = sqlite3_column_int64(st, e->col[1]);
	b.name = db_text(st, e->col[2]);
	b.owner_id = sqlite3_column_int64(st, e->col[3]);
	b.owner_email = sq_ntext(st, e->col[4]);
	b.created_at = db_text(st, e->col[5]);
	b.recipe = e->col[6] >= 0 ? db_text(st, e->col[6]) : "";
	b.files = e->col[7] >= 0 ? db_text(st, e->col[7]) : "";
	return (e->each.fn.bundle(&b, e->each.arg));
}

int
sq_bundles(const struct store_sel *sel, store_bundle_item_fn fn, void *arg)
{
	static const char *const full[STORE_SEL_MAX] = {
		[STORE_SEL_ID] = BUNDLE_COLS BUNDLE_FULL BUNDLE_FROM
		    "AND b.id = :id",
		[STORE_SEL_NAME] = BUNDLE_COLS BUNDLE_FULL BUNDLE_FROM
		    "AND b.name = :name",
		[STORE_SEL_ALL] = BUNDLE_COLS BUNDLE_FULL BUNDLE_FROM
		    "ORDER BY b.id",
	};
	static const char *const brief[STORE_SEL_MAX] = {
		[STORE_SEL_ID] = BUNDLE_COLS BUNDLE_FROM "AND b.id = :id",
		[STORE_SEL_NAME] = BUNDLE_COLS BUNDLE_FROM "AND b.name = :name",
		[STORE_SEL_ALL] = BUNDLE_COLS BUNDLE_FROM "ORDER BY b.id",
	};
	struct reg_each	 e;
	sqlite3_stmt	*st;

	if ((st = sq_sel(sel->brief ? brief : full, sel)) == NULL)
		return (-1);
	e.each.fn.bundle = fn;
	e.each.arg = arg;
	sq_colmap(&e, st, bundle_cols, 8);
	return (sq_each(st, sq_bundle_row, &e));
}

int
sq_bundle_insert(const struct store_bundle_item *b, int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO bundles (org_id, name, owner_id, "
	    "recipe, files, created_at) VALUES (:org, :name, :owner, "
	    ":recipe, :files, :at)")) == NULL)
		return (-1);
	sq_int(st, ":org", b->org_id);
	sq_text(st, ":name", b->name);
	sq_int(st, ":owner", b->owner_id);
	sq_text(st, ":recipe", b->recipe);
	sq_text(st, ":files", b->files);
	sq_text(st, ":at", b->created_at);
	return (sq_write_id(st, id));
}

int
sq_bundle_set_recipe(int64_t org, int64_t id, const char *recipe)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE bundles SET recipe = :recipe WHERE "
	    "id = :id AND org_id = :org")) == NULL)
		return (-1);
	sq_text(st, ":recipe", recipe);
	sq_int(st, ":id", id);
	sq_int(st, ":org", org);
	return (sq_changed(st));
}

int
sq_bundle_outside_user(int64_t id, char *tool, char *secret, size_t len)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT t.name AS tool, s.name AS secret FROM "
	    "tool_secrets ts JOIN tools t ON t.id = ts.tool_id JOIN secrets s "
	    "ON s.id = ts.secret_id WHERE s.bundle_id = :id AND "
	    "(t.bundle_id IS NULL OR t.bundle_id != :id) LIMIT 1")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	if ((rc = sq_step(st)) == SQLITE_ROW) {
		sq_ccopy(st, "tool", tool, len);
		sq_ccopy(st, "secret", secret, len);
	}
	return (sq_row_end(st, rc));
}

int
sq_bundle_delete(int64_t org, int64_t id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM bundles WHERE id = :id AND "
	    "org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	sq_int(st, ":org", org);
	return (sq_changed(st));
}
