/*
 * The PostgreSQL engine's memberships (a membership is a token) and
 * invites, for vault_org.c and vault_member.c.
 */

#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

#define MEMBERSHIP_SELECT						\
	"SELECT m.id, m.user_id, m.org_id, m.role, m.tool_access, "	\
	"m.local_run_enabled, m.agent_name, m.created_at, u.is_agent, "	\
	"u.email, o.slug, o.name FROM memberships m "			\
	"JOIN users u ON u.id = m.user_id JOIN orgs o ON o.id = m.org_id "

#define INVITE_SELECT							\
	"SELECT i.id, i.org_id, i.email, i.role, i.tool_access, "	\
	"i.local_run_enabled, i.expires_at, i.used, i.created_by, "	\
	"i.created_at, o.slug, o.name, b.email FROM invites i "	\
	"JOIN orgs o ON o.id = i.org_id "				\
	"LEFT JOIN users b ON b.id = i.created_by "

static int	pg_membership_row(const PGresult *, int, void *);
static int	pg_invite_row(const PGresult *, int, void *);

static int
pg_membership_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_membership	 m;

	memset(&m, 0, sizeof(m));
	m.id = pg_int(res, i, 0);
	m.user_id = pg_int(res, i, 1);
	m.org_id = pg_int(res, i, 2);
	m.role = pg_text(res, i, 3);
	m.tool_access = pg_ntext(res, i, 4);
	m.local_run_enabled = pg_int(res, i, 5) != 0;
	m.agent_name = pg_ntext(res, i, 6);
	m.created_at = pg_text(res, i, 7);
	m.is_agent = pg_int(res, i, 8) != 0;
	m.email = pg_text(res, i, 9);
	m.org_slug = pg_text(res, i, 10);
	m.org_name = pg_text(res, i, 11);
	return (e->fn.membership(&m, e->arg));
}

int
pg_membership_insert(const struct store_membership *m,
    const uint8_t hash[STORE_HASH_LEN], int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO memberships (user_id, "
	    "org_id, role, token_hash, tool_access, local_run_enabled, "
	    "agent_name, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
	    "ON CONFLICT DO NOTHING RETURNING id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, m->user_id);
	pgq_int(&q, m->org_id);
	pgq_text(&q, m->role);
	pgq_blob(&q, hash, STORE_HASH_LEN);
	pgq_text(&q, m->tool_access);
	pgq_int(&q, m->local_run_enabled != 0);
	pgq_text(&q, m->agent_name);
	pgq_text(&q, m->created_at);
	return (pg_insert(&st, &q, id));
}

int
pg_membership_get(int64_t user, int64_t org, store_membership_fn fn,
    void *arg)
{
	static struct pg_stmt	 st = { MEMBERSHIP_SELECT "WHERE "
	    "m.user_id = $1 AND m.org_id = $2", 0 };
	struct store_each	 e = { .fn.membership = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, user);
	pgq_int(&q, org);
	return (pg_one(&st, &q, pg_membership_row, &e));
}

int
pg_memberships(int64_t org, int agents, store_membership_fn fn, void *arg)
{
	static struct pg_stmt	 st = { MEMBERSHIP_SELECT "WHERE "
	    "m.org_id = $1 AND ($2::bigint < 0 OR u.is_agent = $2::bigint) "
	    "ORDER BY m.id", 0 };
	struct store_each	 e = { .fn.membership = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, agents < 0 ? -1 : agents != 0);
	return (pg_each(&st, &q, pg_membership_row, &e));
}

int
pg_user_memberships(int64_t user, store_membership_fn fn, void *arg)
{
	static struct pg_stmt	 st = { MEMBERSHIP_SELECT "WHERE "
	    "m.user_id = $1 ORDER BY o.id", 0 };
	struct store_each	 e = { .fn.membership = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, user);
	return (pg_each(&st, &q, pg_membership_row, &e));
}

int
pg_membership_update(int64_t user, int64_t org,
    const struct store_membership_set *s)
{
	static struct pg_stmt	 st = { "UPDATE memberships SET "
	    "token_hash = coalesce($1::bytea, token_hash), "
	    "role = coalesce($2::text, role), "
	    "tool_access = CASE WHEN $3::bigint = 1 THEN $4::text "
	    "ELSE tool_access END, "
	    "local_run_enabled = CASE WHEN $5::bigint >= 0 THEN $5::bigint "
	    "ELSE local_run_enabled END "
	    "WHERE user_id = $6 AND org_id = $7", 0 };
	struct pgq		 q;

	pgq_init(&q);
	if (s->token_hash != NULL)
		pgq_blob(&q, s->token_hash, STORE_HASH_LEN);
	else
		pgq_null(&q);
	pgq_text(&q, s->role);
	pgq_int(&q, s->access_sent != 0);
	pgq_text(&q, s->tool_access);
	pgq_int(&q, s->local_run_enabled < 0 ? -1 :
	    s->local_run_enabled != 0);
	pgq_int(&q, user);
	pgq_int(&q, org);
	return (pg_changed(&st, &q));
}

int
pg_membership_remove(int64_t user, int64_t org)
{
	static struct pg_stmt	 deny = { "DELETE FROM deny_rules WHERE "
	    "org_id = $1 AND user_id = $2", 0 };
	static struct pg_stmt	 mem = { "DELETE FROM memberships WHERE "
	    "org_id = $1 AND user_id = $2", 0 };
	static struct pg_stmt	 agent = { "DELETE FROM users WHERE "
	    "id = $1 AND is_agent = 1 AND "
	    "NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = $1)", 0 };
	struct pgq		 q, u;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, user);
	pgq_init(&u);
	pgq_int(&u, user);
	if (pg_changed(&deny, &q) == -1 || pg_changed(&mem, &q) == -1 ||
	    pg_changed(&agent, &u) == -1)
		return (-1);
	return (0);
}

int
pg_owner_count(int64_t org, int64_t *n)
{
	static struct pg_stmt	 st = { "SELECT count(*) FROM memberships "
	    "WHERE org_id = $1 AND role = 'owner'", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	return (pg_value(&st, &q, n) == -1 ? -1 : 0);
}

int
pg_user_org_ids(int64_t user, const char *org, int64_t *ids, size_t max,
    size_t *n)
{
	static struct pg_stmt	 st = { "SELECT m.org_id FROM memberships m "
	    "JOIN orgs o ON o.id = m.org_id WHERE m.user_id = $1 AND "
	    "($2 = '' OR o.slug = $2 OR o.name = $2) ORDER BY m.id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, user);
	pgq_text(&q, org);
	return (pg_ids(&st, &q, ids, max, n));
}

static int
pg_invite_row(const PGresult *res, int i, void *arg)
{
	struct store_each	*e = arg;
	struct store_invite	 iv;

	memset(&iv, 0, sizeof(iv));
	iv.id = pg_int(res, i, 0);
	iv.org_id = pg_int(res, i, 1);
	iv.email = pg_text(res, i, 2);
	iv.role = pg_text(res, i, 3);
	iv.tool_access = pg_ntext(res, i, 4);
	iv.local_run_enabled = pg_int(res, i, 5) != 0;
	iv.expires_at = pg_int(res, i, 6);
	iv.used = pg_int(res, i, 7) != 0;
	iv.created_by = pg_int(res, i, 8);
	iv.created_at = pg_text(res, i, 9);
	iv.org_slug = pg_text(res, i, 10);
	iv.org_name = pg_text(res, i, 11);
	iv.invited_by = pg_ntext(res, i, 12);
	return (e->fn.invite(&iv, e->arg));
}

int
pg_invite_insert(const struct store_invite *iv,
    const uint8_t hash[STORE_HASH_LEN], int64_t *id)
{
	static struct pg_stmt	 st = { "INSERT INTO invites (org_id, email, "
	    "role, code_hash, tool_access, local_run_enabled, expires_at, "
	    "created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
	    "$9) ON CONFLICT DO NOTHING RETURNING id", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, iv->org_id);
	pgq_text(&q, iv->email);
	pgq_text(&q, iv->role);
	pgq_blob(&q, hash, STORE_HASH_LEN);
	pgq_text(&q, iv->tool_access);
	pgq_int(&q, iv->local_run_enabled != 0);
	pgq_int(&q, iv->expires_at);
	pgq_int(&q, iv->created_by);
	pgq_text(&q, iv->created_at);
	return (pg_insert(&st, &q, id));
}

int
pg_invites_each(int64_t org, int64_t now, store_invite_fn fn, void *arg)
{
	static struct pg_stmt	 st = { INVITE_SELECT "WHERE i.org_id = $1 "
	    "AND i.used = 0 AND i.expires_at > $2 ORDER BY i.id", 0 };
	struct store_each	 e = { .fn.invite = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, org);
	pgq_int(&q, now);
	return (pg_each(&st, &q, pg_invite_row, &e));
}

int
pg_invite_by_code(const uint8_t hash[STORE_HASH_LEN], store_invite_fn fn,
    void *arg)
{
	static struct pg_stmt	 st = { INVITE_SELECT "WHERE "
	    "i.code_hash = $1", 0 };
	struct store_each	 e = { .fn.invite = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_blob(&q, hash, STORE_HASH_LEN);
	return (pg_one(&st, &q, pg_invite_row, &e));
}

int
pg_invites_of_email(const char *email, int64_t now, store_invite_fn fn,
    void *arg)
{
	static struct pg_stmt	 st = { INVITE_SELECT "WHERE i.email = $1 "
	    "AND i.used = 0 AND i.expires_at > $2 ORDER BY i.id", 0 };
	struct store_each	 e = { .fn.invite = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_text(&q, email);
	pgq_int(&q, now);
	return (pg_each(&st, &q, pg_invite_row, &e));
}

int
pg_invite_by_id(int64_t id, store_invite_fn fn, void *arg)
{
	static struct pg_stmt	 st = { INVITE_SELECT "WHERE i.id = $1", 0 };
	struct store_each	 e = { .fn.invite = fn, .arg = arg };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, id);
	return (pg_one(&st, &q, pg_invite_row, &e));
}

int
pg_invite_use(int64_t id)
{
	static struct pg_stmt	 st = { "UPDATE invites SET used = 1 WHERE "
	    "id = $1 AND used = 0", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, id);
	return (pg_changed(&st, &q));
}

int
pg_invite_delete(int64_t org, int64_t id)
{
	static struct pg_stmt	 st = { "DELETE FROM invites WHERE id = $1 "
	    "AND org_id = $2 AND used = 0", 0 };
	struct pgq		 q;

	pgq_init(&q);
	pgq_int(&q, id);
	pgq_int(&q, org);
	return (pg_changed(&st, &q));
}
