/*
 * The sqlite engine's identity rows: users and orgs, totals, the
 * members, agents and secrets of an org as tregctl lists them, a user's
 * deletion, and the one-row helpers the engine's files share.
 */

#include <string.h>

#include "log.h"
#include "store_sqlite.h"

static int64_t	sq_count(const char *);
static int	sq_member_row(sqlite3_stmt *, void *);
static int	sq_secret_row(sqlite3_stmt *, void *);
static int	sq_org_row(sqlite3_stmt *, void *);
static int	sq_user_row(sqlite3_stmt *, void *);
static int	sq_org_full_row(sqlite3_stmt *, void *);

int
sq_each(sqlite3_stmt *st, int (*row)(sqlite3_stmt *, void *), void *arg)
{
	int	 rc, stop = 0;

	while (!stop && (rc = sq_step(st)) == SQLITE_ROW)
		stop = row(st, arg);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (stop)
		return (stop < 0 ? -1 : 0);
	return (rc == SQLITE_DONE ? 0 : -1);
}

/* An id list being filled, for sq_id_row(). */
struct sq_idlist {
	int64_t		*ids;
	size_t		 max;
	size_t		*n;
};

static int
sq_id_row(sqlite3_stmt *st, void *arg)
{
	struct sq_idlist	*l = arg;

	l->ids[(*l->n)++] = sqlite3_column_int64(st, 0);
	return (*l->n >= l->max);
}

int
sq_ids(sqlite3_stmt *st, int64_t *ids, size_t max, size_t *n)
{
	struct sq_idlist	 l = { ids, max, n };

	if (*n >= max) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return (0);
	}
	return (sq_each(st, sq_id_row, &l));
}

static int64_t
sq_count(const char *sql)
{
	sqlite3_stmt	*st;
	int64_t		 n = -1;

	if ((st = db_prepare(sql)) == NULL)
		return (-1);
	return (sq_value(st, &n) == 0 ? n : -1);
}

int
sq_counts(struct store_counts *c)
{
	c->users = sq_count("SELECT count(*) FROM users");
	c->orgs = sq_count("SELECT count(*) FROM orgs");
	c->tools = sq_count("SELECT count(*) FROM tools");
	c->secrets = sq_count("SELECT count(*) FROM secrets");
	c->runs = sq_count("SELECT count(*) FROM runs");
	c->redacted = sq_count("SELECT (SELECT coalesce(sum(redacted), 0) "
	    "FROM runs) + (SELECT coalesce(sum(redacted), 0) FROM run_ends)");
	c->refusals = sq_count("SELECT count(*) FROM calls "
	    "WHERE refused_by IS NOT NULL OR action = 'DENY'");
	c->grants = sq_count("SELECT count(*) FROM calls "
	    "WHERE action = 'GRANT'");
	if (c->users < 0 || c->orgs < 0 || c->tools < 0 || c->secrets < 0 ||
	    c->runs < 0 || c->redacted < 0 || c->refusals < 0 ||
	    c->grants < 0)
		return (-1);
	return (0);
}

static int
sq_member_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_org_member	 m;

	memset(&m, 0, sizeof(m));
	m.user_id = sq_cint(st, "user_id");
	m.email = sq_ctext(st, "email");
	m.role = sq_ctext(st, "role");
	m.tool_access = sq_cntext(st, "tool_access");
	m.local_run_enabled = sq_cint(st, "local_run_enabled") != 0;
	m.agent_name = sq_ctext(st, "agent_name");
	m.created_at = sq_ctext(st, "created_at");
	return (e->fn.member(&m, e->arg));
}

int
sq_org_members(int64_t org, int agents, store_org_member_fn fn, void *arg)
{
	struct store_each	 e = { .fn.member = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT m.user_id AS user_id, u.email AS email, "
	    "m.role AS role, m.tool_access AS tool_access, "
	    "m.local_run_enabled AS local_run_enabled, "
	    "m.agent_name AS agent_name, m.created_at AS created_at "
	    "FROM memberships m JOIN users u ON u.id = m.user_id "
	    "WHERE m.org_id = :org AND u.is_agent = :agents "
	    "ORDER BY m.id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":agents", agents != 0);
	return (sq_each(st, sq_member_row, &e));
}

static int
sq_secret_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_secret_row	 s;

	memset(&s, 0, sizeof(s));
	s.id = sq_cint(st, "id");
	s.name = sq_ctext(st, "name");
	s.kind = sq_ctext(st, "kind");
	s.owner_email = sq_ctext(st, "owner");
	s.bundle_id = sq_cint(st, "bundle_id");
	s.status = sq_ctext(st, "status");
	s.status_detail = sq_cntext(st, "status_detail");
	s.checked_at = sq_cntext(st, "checked_at");
	s.created_at = sq_ctext(st, "created_at");
	return (e->fn.secret_row(&s, e->arg));
}

int
sq_org_secrets(int64_t org, store_secret_row_fn fn, void *arg)
{
	struct store_each	 e = { .fn.secret_row = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT s.id AS id, s.name AS name, "
	    "s.kind AS kind, coalesce(u.email, '') AS owner, "
	    "s.bundle_id AS bundle_id, s.status AS status, "
	    "s.status_detail AS status_detail, s.checked_at AS checked_at, "
	    "s.created_at AS created_at FROM secrets s "
	    "LEFT JOIN users u ON u.id = s.owner_id WHERE s.org_id = :org "
	    "ORDER BY s.id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	return (sq_each(st, sq_secret_row, &e));
}

/* GET /health's rows have the shape of tregctl's, without the owner. */
int
sq_health(int64_t org, const char *access, int64_t user,
    store_secret_row_fn fn, void *arg)
{
	struct store_each	 e = { .fn.secret_row = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT s.id AS id, s.name AS name, "
	    "s.kind AS kind, coalesce((SELECT u.email FROM users u "
	    "WHERE u.id = s.owner_id), '') AS owner, NULL AS bundle_id, "
	    "s.status AS status, s.status_detail AS status_detail, "
	    "s.checked_at AS checked_at, '' AS created_at "
	    "FROM secrets s LEFT JOIN bundles sb ON sb.id = s.bundle_id "
	    "WHERE s.org_id = :org AND (:access IS NULL "
	    "OR s.owner_id = :user OR "
	    "sb.name IN (SELECT value FROM json_each(:access)) OR EXISTS "
	    "(SELECT 1 FROM tool_secrets ts JOIN tools t ON t.id = ts.tool_id "
	    "LEFT JOIN bundles b ON b.id = t.bundle_id WHERE "
	    "ts.secret_id = s.id AND (t.name IN (SELECT value FROM "
	    "json_each(:access)) OR b.name IN (SELECT value FROM "
	    "json_each(:access))))) ORDER BY s.id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_text(st, ":access", access);
	sq_int(st, ":user", user);
	return (sq_each(st, sq_secret_row, &e));
}

int
sq_user_by_email(const char *email, int64_t *id, int *is_agent)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT id, is_agent FROM users "
	    "WHERE email = :email")) == NULL)
		return (-1);
	sq_text(st, ":email", email);
	if ((rc = sq_step(st)) == SQLITE_ROW) {
		*id = sq_cint(st, "id");
		*is_agent = sq_cint(st, "is_agent") != 0;
	}
	return (sq_row_end(st, rc));
}

static int
sq_org_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;

	return (e->fn.org(sq_cint(st, "id"), sq_ctext(st, "slug"), e->arg));
}

int
sq_user_sole_owned(int64_t uid, store_org_fn fn, void *arg)
{
	struct store_each	 e = { .fn.org = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT o.id AS id, o.slug AS slug "
	    "FROM memberships m JOIN orgs o ON o.id = m.org_id "
	    "WHERE m.user_id = :uid AND m.role = 'owner' AND NOT EXISTS "
	    "(SELECT 1 FROM memberships x WHERE x.org_id = m.org_id AND "
	    "x.role = 'owner' AND x.user_id != :uid) ORDER BY o.id")) == NULL)
		return (-1);
	sq_int(st, ":uid", uid);
	return (sq_each(st, sq_org_row, &e));
}

int
sq_user_first_org(int64_t uid, int64_t *org)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT org_id FROM memberships "
	    "WHERE user_id = :uid ORDER BY org_id LIMIT 1")) == NULL)
		return (-1);
	sq_int(st, ":uid", uid);
	return (sq_value(st, org));
}

int
sq_user_delete(int64_t uid)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM users WHERE id = :uid")) == NULL)
		return (-1);
	sq_int(st, ":uid", uid);
	return (sq_done(st));
}

int
sq_member_of(int64_t user, int64_t org)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT 1 FROM memberships WHERE "
	    "user_id = :user AND org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	sq_int(st, ":org", org);
	return (sq_one(st, NULL, NULL));
}

/* ------------------------------------------------------------------ */
/* Shared by the engine's files: one row, one value, one write.        */

int
sq_one(sqlite3_stmt *st, int (*row)(sqlite3_stmt *, void *), void *arg)
{
	int	 rc;

	if ((rc = sq_step(st)) == SQLITE_ROW && row != NULL)
		row(st, arg);
	return (sq_row_end(st, rc));
}

/* A row's first column to e->fn.text, whatever the callback answers. */
int
sq_text_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;

	e->fn.text(db_text(st, 0), e->arg);
	return (0);
}

int
sq_value(sqlite3_stmt *st, int64_t *v)
{
	int	 rc;

	if ((rc = sq_step(st)) == SQLITE_ROW)
		*v = sqlite3_column_int64(st, 0);
	return (sq_row_end(st, rc));
}

/* An INSERT: its rowid, or STORE_CONFLICT (ON CONFLICT DO NOTHING). */
int
sq_insert(sqlite3_stmt *st, int64_t *id)
{
	if (sq_done(st) == -1)
		return (-1);
	if (sqlite3_changes(vault_db) == 0)
		return (STORE_CONFLICT);
	if (id != NULL)
		*id = sqlite3_last_insert_rowid(vault_db);
	return (0);
}

/* An UPDATE or DELETE: 0 a row changed, 1 none. */
int
sq_affected(sqlite3_stmt *st)
{
	if (sq_done(st) == -1)
		return (-1);
	return (sqlite3_changes(vault_db) == 0 ? 1 : 0);
}

/* ------------------------------------------------------------------ */
/* Users and orgs.                                                     */

int
sq_user_insert(const char *email, int is_agent, const char *at, int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO users (email, is_agent, "
	    "created_at) VALUES (:email, :agent, :at) "
	    "ON CONFLICT DO NOTHING")) == NULL)
		return (-1);
	sq_text(st, ":email", email);
	sq_int(st, ":agent", is_agent != 0);
	sq_text(st, ":at", at);
	return (sq_insert(st, id));
}

static int
sq_user_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_user	 u;

	memset(&u, 0, sizeof(u));
	u.id = sq_cint(st, "id");
	u.email = sq_ctext(st, "email");
	u.is_agent = sq_cint(st, "is_agent") != 0;
	u.created_at = sq_ctext(st, "created_at");
	return (e->fn.user(&u, e->arg));
}

int
sq_users_each(store_user_fn fn, void *arg)
{
	struct store_each	 e = { .fn.user = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT id, email, is_agent, created_at FROM "
	    "users ORDER BY id")) == NULL)
		return (-1);
	return (sq_each(st, sq_user_row, &e));
}

int
sq_org_insert(const char *slug, const char *name, const char *at,
    int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO orgs (slug, name, created_at) "
	    "VALUES (:slug, :name, :at) ON CONFLICT DO NOTHING")) == NULL)
		return (-1);
	sq_text(st, ":slug", slug);
	sq_text(st, ":name", name);
	sq_text(st, ":at", at);
	return (sq_insert(st, id));
}

int
sq_org_remove(int64_t org)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM users WHERE is_agent = 1 AND id IN "
	    "(SELECT user_id FROM memberships WHERE org_id = :org)")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	if (sq_done(st) == -1 ||
	    (st = db_prepare("DELETE FROM orgs WHERE id = :org")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	return (sq_done(st));
}

int
sq_org_find(const char *what, int64_t *id, char *slug, size_t len)
{
	sqlite3_stmt	*st;
	int		 rc, n = 0;

	if ((st = db_prepare("SELECT id, slug FROM orgs WHERE slug = :what "
	    "UNION ALL SELECT id, slug FROM orgs WHERE name = :what AND "
	    "NOT EXISTS (SELECT 1 FROM orgs WHERE slug = :what)")) == NULL)
		return (-1);
	sq_text(st, ":what", what);
	while ((rc = sq_step(st)) == SQLITE_ROW)
		if (n++ == 0) {
			*id = sqlite3_column_int64(st, 0);
			if (slug != NULL)
				strlcpy(slug, db_text(st, 1), len);
		}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return (-1);
	return (n == 0 ? 1 : n == 1 ? 0 : 2);
}

static int
sq_org_full_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_org_row	 o;

	memset(&o, 0, sizeof(o));
	o.id = sq_cint(st, "id");
	o.slug = sq_ctext(st, "slug");
	o.name = sq_ctext(st, "name");
	o.members = sq_cint(st, "members");
	o.tools = sq_cint(st, "tools");
	o.secrets = sq_cint(st, "secrets");
	o.created_at = sq_ctext(st, "created_at");
	return (e->fn.org_row(&o, e->arg));
}

int
sq_orgs_each(store_org_row_fn fn, void *arg)
{
	struct store_each	 e = { .fn.org_row = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare("SELECT o.id AS id, o.slug AS slug, "
	    "o.name AS name, "
	    "(SELECT count(*) FROM memberships WHERE org_id = o.id) "
	    "AS members, "
	    "(SELECT count(*) FROM tools WHERE org_id = o.id) AS tools, "
	    "(SELECT count(*) FROM secrets WHERE org_id = o.id) AS secrets, "
	    "o.created_at AS created_at FROM orgs o ORDER BY o.id")) == NULL)
		return (-1);
	return (sq_each(st, sq_org_full_row, &e));
}

int
sq_org_tool_count(int64_t org, const char *access, int64_t *n)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT count(*) FROM tools t LEFT JOIN bundles b "
	    "ON b.id = t.bundle_id WHERE t.org_id = :org AND (:access IS NULL "
	    "OR t.name IN (SELECT value FROM json_each(:access)) OR "
	    "b.name IN (SELECT value FROM json_each(:access)))")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_text(st, ":access", access);
	return (sq_value(st, n) == 0 ? 0 : -1);
}

int
sq_org_has_tool(int64_t org, const char *name)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT 1 FROM tools WHERE org_id = :org AND "
	    "name = :name UNION ALL SELECT 1 FROM bundles WHERE "
	    "org_id = :org AND name = :name")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_text(st, ":name", name);
	return (sq_one(st, NULL, NULL));
}
