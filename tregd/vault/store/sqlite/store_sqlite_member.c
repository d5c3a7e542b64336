/*
 * The sqlite engine's memberships (a membership is a token) and
 * invites, for vault_org.c and vault_member.c.
 */

#include <string.h>

#include "log.h"
#include "store_sqlite.h"

#define MEMBERSHIP_SELECT						\
	"SELECT m.id AS id, m.user_id AS user_id, m.org_id AS org_id, "	\
	"m.role AS role, m.tool_access AS tool_access, "		\
	"m.local_run_enabled AS local_run_enabled, "			\
	"m.agent_name AS agent_name, m.created_at AS created_at, "	\
	"u.is_agent AS is_agent, u.email AS email, o.slug AS slug, "	\
	"o.name AS name FROM memberships m "				\
	"JOIN users u ON u.id = m.user_id JOIN orgs o ON o.id = m.org_id "

#define INVITE_SELECT							\
	"SELECT i.id AS id, i.org_id AS org_id, i.email AS email, "	\
	"i.role AS role, i.tool_access AS tool_access, "		\
	"i.local_run_enabled AS local_run_enabled, "			\
	"i.expires_at AS expires_at, i.used AS used, "			\
	"i.created_by AS created_by, i.created_at AS created_at, "	\
	"o.slug AS slug, o.name AS name, b.email AS invited_by "	\
	"FROM invites i JOIN orgs o ON o.id = i.org_id "		\
	"LEFT JOIN users b ON b.id = i.created_by "

static int	sq_membership_row(sqlite3_stmt *, void *);
static int	sq_invite_row(sqlite3_stmt *, void *);

static int
sq_membership_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_membership	 m;

	memset(&m, 0, sizeof(m));
	m.id = sq_cint(st, "id");
	m.user_id = sq_cint(st, "user_id");
	m.org_id = sq_cint(st, "org_id");
	m.role = sq_ctext(st, "role");
	m.tool_access = sq_cntext(st, "tool_access");
	m.local_run_enabled = sq_cint(st, "local_run_enabled") != 0;
	m.agent_name = sq_cntext(st, "agent_name");
	m.created_at = sq_ctext(st, "created_at");
	m.is_agent = sq_cint(st, "is_agent") != 0;
	m.email = sq_ctext(st, "email");
	m.org_slug = sq_ctext(st, "slug");
	m.org_name = sq_ctext(st, "name");
	return (e->fn.membership(&m, e->arg));
}

int
sq_membership_insert(const struct store_membership *m,
    const uint8_t hash[STORE_HASH_LEN], int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO memberships (user_id, org_id, "
	    "role, token_hash, tool_access, local_run_enabled, agent_name, "
	    "created_at) VALUES (:user, :org, :role, :hash, :access, :local, "
	    ":agent, :at) ON CONFLICT DO NOTHING")) == NULL)
		return (-1);
	sq_int(st, ":user", m->user_id);
	sq_int(st, ":org", m->org_id);
	sq_text(st, ":role", m->role);
	sq_blob(st, ":hash", hash, STORE_HASH_LEN);
	sq_text(st, ":access", m->tool_access);
	sq_int(st, ":local", m->local_run_enabled != 0);
	sq_text(st, ":agent", m->agent_name);
	sq_text(st, ":at", m->created_at);
	return (sq_insert(st, id));
}

int
sq_membership_get(int64_t user, int64_t org, store_membership_fn fn,
    void *arg)
{
	struct store_each	 e = { .fn.membership = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare(MEMBERSHIP_SELECT "WHERE m.user_id = :user AND "
	    "m.org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	sq_int(st, ":org", org);
	return (sq_one(st, sq_membership_row, &e));
}

int
sq_memberships(int64_t org, int agents, store_membership_fn fn, void *arg)
{
	struct store_each	 e = { .fn.membership = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare(MEMBERSHIP_SELECT "WHERE m.org_id = :org AND "
	    "(:agents < 0 OR u.is_agent = :agents) ORDER BY m.id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":agents", agents < 0 ? -1 : agents != 0);
	return (sq_each(st, sq_membership_row, &e));
}

int
sq_user_memberships(int64_t user, store_membership_fn fn, void *arg)
{
	struct store_each	 e = { .fn.membership = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare(MEMBERSHIP_SELECT "WHERE m.user_id = :user "
	    "ORDER BY o.id")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	return (sq_each(st, sq_membership_row, &e));
}

int
sq_membership_update(int64_t user, int64_t org,
    const struct store_membership_set *s)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE memberships SET "
	    "token_hash = coalesce(:hash, token_hash), "
	    "role = coalesce(:role, role), "
	    "tool_access = CASE WHEN :sent THEN :access ELSE tool_access END, "
	    "local_run_enabled = CASE WHEN :local >= 0 THEN :local "
	    "ELSE local_run_enabled END "
	    "WHERE user_id = :user AND org_id = :org")) == NULL)
		return (-1);
	if (s->token_hash != NULL)
		sq_blob(st, ":hash", s->token_hash, STORE_HASH_LEN);
	sq_text(st, ":role", s->role);
	sq_int(st, ":sent", s->access_sent != 0);
	sq_text(st, ":access", s->tool_access);
	sq_int(st, ":local", s->local_run_enabled < 0 ? -1 :
	    s->local_run_enabled != 0);
	sq_int(st, ":user", user);
	sq_int(st, ":org", org);
	return (sq_affected(st));
}

int
sq_membership_remove(int64_t user, int64_t org)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM deny_rules WHERE org_id = :org AND "
	    "user_id = :user")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	if (sq_done(st) == -1 || (st = db_prepare("DELETE FROM memberships "
	    "WHERE org_id = :org AND user_id = :user")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":user", user);
	if (sq_done(st) == -1 || (st = db_prepare("DELETE FROM users WHERE "
	    "id = :user AND is_agent = 1 AND NOT EXISTS (SELECT 1 FROM "
	    "memberships WHERE user_id = :user)")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	return (sq_done(st));
}

int
sq_owner_count(int64_t org, int64_t *n)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT count(*) FROM memberships WHERE "
	    "org_id = :org AND role = 'owner'")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	return (sq_value(st, n) == 0 ? 0 : -1);
}

int
sq_user_org_ids(int64_t user, const char *org, int64_t *ids, size_t max,
    size_t *n)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT m.org_id FROM memberships m JOIN orgs o "
	    "ON o.id = m.org_id WHERE m.user_id = :user AND (:org = '' OR "
	    "o.slug = :org OR o.name = :org) ORDER BY m.id")) == NULL)
		return (-1);
	sq_int(st, ":user", user);
	sq_text(st, ":org", org);
	return (sq_ids(st, ids, max, n));
}

static int
sq_invite_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;
	struct store_invite	 iv;

	memset(&iv, 0, sizeof(iv));
	iv.id = sq_cint(st, "id");
	iv.org_id = sq_cint(st, "org_id");
	iv.email = sq_ctext(st, "email");
	iv.role = sq_ctext(st, "role");
	iv.tool_access = sq_cntext(st, "tool_access");
	iv.local_run_enabled = sq_cint(st, "local_run_enabled") != 0;
	iv.expires_at = sq_cint(st, "expires_at");
	iv.used = sq_cint(st, "used") != 0;
	iv.created_by = sq_cint(st, "created_by");
	iv.created_at = sq_ctext(st, "created_at");
	iv.org_slug = sq_ctext(st, "slug");
	iv.org_name = sq_ctext(st, "name");
	iv.invited_by = sq_cntext(st, "invited_by");
	return (e->fn.invite(&iv, e->arg));
}

int
sq_invite_insert(const struct store_invite *iv,
    const uint8_t hash[STORE_HASH_LEN], int64_t *id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("INSERT INTO invites (org_id, email, role, "
	    "code_hash, tool_access, local_run_enabled, expires_at, "
	    "created_by, created_at) VALUES (:org, :email, :role, :hash, "
	    ":access, :local, :expires, :by, :at) ON CONFLICT DO NOTHING")) ==
	    NULL)
		return (-1);
	sq_int(st, ":org", iv->org_id);
	sq_text(st, ":email", iv->email);
	sq_text(st, ":role", iv->role);
	sq_blob(st, ":hash", hash, STORE_HASH_LEN);
	sq_text(st, ":access", iv->tool_access);
	sq_int(st, ":local", iv->local_run_enabled != 0);
	sq_int(st, ":expires", iv->expires_at);
	sq_int(st, ":by", iv->created_by);
	sq_text(st, ":at", iv->created_at);
	return (sq_insert(st, id));
}

int
sq_invites_each(int64_t org, int64_t now, store_invite_fn fn, void *arg)
{
	struct store_each	 e = { .fn.invite = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare(INVITE_SELECT "WHERE i.org_id = :org AND "
	    "i.used = 0 AND i.expires_at > :now ORDER BY i.id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_int(st, ":now", now);
	return (sq_each(st, sq_invite_row, &e));
}

int
sq_invite_by_code(const uint8_t hash[STORE_HASH_LEN], store_invite_fn fn,
    void *arg)
{
	struct store_each	 e = { .fn.invite = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare(INVITE_SELECT "WHERE i.code_hash = :hash")) ==
	    NULL)
		return (-1);
	sq_blob(st, ":hash", hash, STORE_HASH_LEN);
	return (sq_one(st, sq_invite_row, &e));
}

int
sq_invites_of_email(const char *email, int64_t now, store_invite_fn fn,
    void *arg)
{
	struct store_each	 e = { .fn.invite = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare(INVITE_SELECT "WHERE i.email = :email AND "
	    "i.used = 0 AND i.expires_at > :now ORDER BY i.id")) == NULL)
		return (-1);
	sq_text(st, ":email", email);
	sq_int(st, ":now", now);
	return (sq_each(st, sq_invite_row, &e));
}

int
sq_invite_by_id(int64_t id, store_invite_fn fn, void *arg)
{
	struct store_each	 e = { .fn.invite = fn, .arg = arg };
	sqlite3_stmt		*st;

	if ((st = db_prepare(INVITE_SELECT "WHERE i.id = :id")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	return (sq_one(st, sq_invite_row, &e));
}

int
sq_invite_use(int64_t id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE invites SET used = 1 WHERE id = :id AND "
	    "used = 0")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	return (sq_affected(st));
}

int
sq_invite_delete(int64_t org, int64_t id)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("DELETE FROM invites WHERE id = :id AND "
	    "org_id = :org AND used = 0")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	sq_int(st, ":org", org);
	return (sq_affected(st));
}
