/*
 * The sqlite engine's identity rows as tregctl reads and removes them:
 * totals, the members, agents and secrets of an org, and a user's
 * deletion.
 */

#include <string.h>

#include "log.h"
#include "store_sqlite.h"

/* The caller's function and argument, for sq_each's row functions. */
struct each {
	union {
		store_org_member_fn	 member;
		store_secret_row_fn	 secret;
		store_org_fn		 org;
	}		 fn;
	void		*arg;
};

static int64_t	sq_count(const char *);
static int	sq_member_row(sqlite3_stmt *, void *);
static int	sq_secret_row(sqlite3_stmt *, void *);
static int	sq_org_row(sqlite3_stmt *, void *);

int
sq_each(sqlite3_stmt *st, int (*row)(sqlite3_stmt *, void *), void *arg)
{
	int	 rc, stop = 0;

	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
		stop = row(st, arg);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (stop)
		return (stop < 0 ? -1 : 0);
	return (rc == SQLITE_DONE ? 0 : -1);
}

static int64_t
sq_count(const char *sql)
{
	sqlite3_stmt	*st;
	int64_t		 n = -1;

	if ((st = db_prepare(sql)) == NULL)
		return (-1);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return (n);
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
	struct each		*e = arg;
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
	struct each	 e = { .fn.member = fn, .arg = arg };
	sqlite3_stmt	*st;

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
	struct each		*e = arg;
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
	return (e->fn.secret(&s, e->arg));
}

int
sq_org_secrets(int64_t org, store_secret_row_fn fn, void *arg)
{
	struct each	 e = { .fn.secret = fn, .arg = arg };
	sqlite3_stmt	*st;

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

int
sq_user_by_email(const char *email, int64_t *id, int *is_agent)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT id, is_agent FROM users "
	    "WHERE email = :email")) == NULL)
		return (-1);
	sq_text(st, ":email", email);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*id = sq_cint(st, "id");
		*is_agent = sq_cint(st, "is_agent") != 0;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_ROW)
		return (0);
	return (rc == SQLITE_DONE ? 1 : -1);
}

static int
sq_org_row(sqlite3_stmt *st, void *arg)
{
	struct each	*e = arg;

	return (e->fn.org(sq_cint(st, "id"), sq_ctext(st, "slug"), e->arg));
}

int
sq_user_sole_owned(int64_t uid, store_org_fn fn, void *arg)
{
	struct each	 e = { .fn.org = fn, .arg = arg };
	sqlite3_stmt	*st;

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
	int		 rc;

	if ((st = db_prepare("SELECT org_id FROM memberships "
	    "WHERE user_id = :uid ORDER BY org_id LIMIT 1")) == NULL)
		return (-1);
	sq_int(st, ":uid", uid);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		*org = sq_cint(st, "org_id");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_ROW)
		return (0);
	return (rc == SQLITE_DONE ? 1 : -1);
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
	int		 rc;

	if ((st = db_prepare("SELECT 1 FROM memberships WHERE "
	    "user_id = :user AND org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	sq_int(st, ":org", org);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_ROW)
		return (0);
	return (rc == SQLITE_DONE ? 1 : -1);
}
