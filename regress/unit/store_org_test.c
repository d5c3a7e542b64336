/*
 * store_org_test: the store.h functions of users, orgs, memberships,
 * invites, local grants and credential health, each case run on both
 * engines: on an in-memory sqlite database (sqlite_*), and on a fresh
 * PostgreSQL database (pg_*) when make check-pg passes its server as the
 * kyua variable pg_host.  The cases see the engine through store.h
 * only; rows that belong to other domains (tools, secrets) come from
 * plain SQL that both engines accept.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tregd.h"
#include "store_sqlite.h"
#include "pgdb.h"

#define AT	"2026-01-01T00:00:00Z"

/* Both engines, one body: sqlite_NAME and pg_NAME run NAME(). */
#define BOTH_ENGINES(name)						\
	static void name(void);						\
	ATF_TC_WITHOUT_HEAD(sqlite_##name);				\
	ATF_TC_BODY(sqlite_##name, tc)					\
	{								\
		open_sqlite();						\
		name();							\
	}								\
	ATF_TC(pg_##name);						\
	ATF_TC_HEAD(pg_##name, tc)					\
	{								\
		atf_tc_set_md_var(tc, "require.config", "pg_host");	\
	}								\
	ATF_TC_BODY(pg_##name, tc)					\
	{								\
		open_pg(tc);						\
		name();							\
	}

#define ADD_BOTH(tp, name) do {						\
	ATF_TP_ADD_TC(tp, sqlite_##name);				\
	ATF_TP_ADD_TC(tp, pg_##name);					\
} while (0)

/* What a listing saw: its rows' ids and one text each, in order. */
struct seen {
	int64_t		 ids[16];
	char		 text[16][64];
	size_t		 n;
};

static PGconn	*raw_pg;		/* NULL: the engine is sqlite */

static void	 open_sqlite(void);
static void	 open_pg(const atf_tc_t *);
static void	 raw(const char *);
static int64_t	 user(const char *, int);
static int64_t	 org(const char *);
static void	 join(int64_t, int64_t, const char *, int, const char *);
static int	 seen_membership(const struct store_membership *, void *);
static int	 seen_invite(const struct store_invite *, void *);
static int	 seen_secret(const struct store_secret_row *, void *);
static int	 seen_text(const char *, void *);
static int	 copy_membership(const struct store_membership *, void *);
static int	 seen_user(const struct store_user *, void *);
static int	 seen_org(const struct store_org_row *, void *);
static void	 fixture_tools(int64_t, int64_t);

static void
open_sqlite(void)
{
	struct store_params	 p;
	char			 err[STORE_ERROR_MAX];

	memset(&p, 0, sizeof(p));
	p.engine = STORE_SQLITE;
	p.path = ":memory:";
	err[0] = '\0';
	ATF_REQUIRE_MSG(store_open(&p, err, sizeof(err)) == 0, "%s", err);
}

/* A database of its own on the test server, and a raw connection. */
static void
open_pg(const atf_tc_t *tc)
{
	static char	 conninfo[512];
	char		 err[STORE_ERROR_MAX];
	struct store_params p;

	pgdb_create(tc, "store_org", conninfo, sizeof(conninfo));
	memset(&p, 0, sizeof(p));
	p.engine = STORE_POSTGRESQL;
	p.conninfo = conninfo;
	ATF_REQUIRE_MSG(store_open(&p, err, sizeof(err)) == 0, "%s", err);
	raw_pg = PQconnectdb(conninfo);
	ATF_REQUIRE(PQstatus(raw_pg) == CONNECTION_OK);
}

/* SQL both engines read alike; "SEALED" stands for a one-byte blob. */
static void
raw(const char *sql)
{
	char		 buf[2048], *p;
	PGresult	*res;

	strlcpy(buf, sql, sizeof(buf));
	while ((p = strstr(buf, "SEALED")) != NULL)
		memcpy(p, raw_pg != NULL ? "'\\x00'" : "x'00'  ", 6);
	if (raw_pg == NULL) {
		ATF_REQUIRE_MSG(db_exec(buf) == 0, "%s", buf);
		return;
	}
	res = PQexec(raw_pg, buf);
	ATF_REQUIRE_MSG(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s",
	    buf, PQerrorMessage(raw_pg));
	PQclear(res);
}

static int64_t
user(const char *email, int is_agent)
{
	int64_t	 id = 0;

	ATF_REQUIRE(store_user_insert(email, is_agent, AT, &id) == 0);
	ATF_REQUIRE(id > 0);
	return (id);
}

static int64_t
org(const char *slug)
{
	int64_t	 id = 0;

	ATF_REQUIRE(store_org_insert(slug, slug, AT, &id) == 0);
	ATF_REQUIRE(id > 0);
	return (id);
}

/* A membership whose token hash is 32 times the byte tag. */
static void
join(int64_t u, int64_t o, const char *role, int tag, const char *agent)
{
	struct store_membership	 m;
	uint8_t			 h[STORE_HASH_LEN];

	memset(&m, 0, sizeof(m));
	memset(h, tag, sizeof(h));
	m.user_id = u;
	m.org_id = o;
	m.role = role;
	m.local_run_enabled = 1;
	m.agent_name = agent;
	m.created_at = AT;
	ATF_REQUIRE(store_membership_insert(&m, h, NULL) == 0);
}

static int
seen_membership(const struct store_membership *m, void *arg)
{
	struct seen	*s = arg;

	ATF_REQUIRE(s->n < 16);
	s->ids[s->n] = m->user_id;
	snprintf(s->text[s->n++], sizeof(s->text[0]), "%s %s %s", m->email,
	    m->role, m->org_slug);
	return (0);
}

static int
seen_invite(const struct store_invite *iv, void *arg)
{
	struct seen	*s = arg;

	ATF_REQUIRE(s->n < 16);
	s->ids[s->n] = iv->id;
	snprintf(s->text[s->n++], sizeof(s->text[0]), "%s %s %d %s",
	    iv->email, iv->role, iv->used, iv->org_slug);
	return (0);
}

static int
seen_secret(const struct store_secret_row *r, void *arg)
{
	struct seen	*s = arg;

	ATF_REQUIRE(s->n < 16);
	s->ids[s->n] = r->id;
	snprintf(s->text[s->n++], sizeof(s->text[0]), "%s %s", r->name,
	    r->status);
	return (0);
}

static int
seen_text(const char *name, void *arg)
{
	struct seen	*s = arg;

	ATF_REQUIRE(s->n < 16);
	strlcpy(s->text[s->n++], name, sizeof(s->text[0]));
	return (0);
}

/* role, tool_access ("-" for NULL), local_run, agent_name or "-". */
static int
copy_membership(const struct store_membership *m, void *arg)
{
	snprintf(arg, 128, "%s %s %d %s %d", m->role, m->tool_access != NULL ?
	    m->tool_access : "-", m->local_run_enabled, m->agent_name != NULL ?
	    m->agent_name : "-", m->is_agent);
	return (0);
}

static int
seen_user(const struct store_user *u, void *arg)
{
	struct seen	*s = arg;

	ATF_REQUIRE(s->n < 16);
	s->ids[s->n] = u->id;
	snprintf(s->text[s->n++], sizeof(s->text[0]), "%s %d", u->email,
	    u->is_agent);
	return (0);
}

static int
seen_org(const struct store_org_row *o, void *arg)
{
	struct seen	*s = arg;

	ATF_REQUIRE(s->n < 16);
	s->ids[s->n] = o->id;
	snprintf(s->text[s->n++], sizeof(s->text[0]), "%s %s %lld %lld %lld",
	    o->slug, o->name, (long long)o->members, (long long)o->tools,
	    (long long)o->secrets);
	return (0);
}

BOTH_ENGINES(a_taken_email_or_slug_is_a_conflict)
static void
a_taken_email_or_slug_is_a_conflict(void)
{
	int64_t	 id, again = 0;
	int	 is_agent = -1;

	id = user("ann@example.com", 0);
	ATF_REQUIRE_EQ(store_user_insert("ann@example.com", 0, AT, &again),
	    STORE_CONFLICT);
	ATF_REQUIRE_EQ(again, 0);
	ATF_REQUIRE(store_user_by_email("ann@example.com", &again,
	    &is_agent) == 0);
	ATF_REQUIRE_EQ(again, id);
	ATF_REQUIRE_EQ(is_agent, 0);
	org("acme");
	ATF_REQUIRE_EQ(store_org_insert("acme", "Other", AT, &again),
	    STORE_CONFLICT);
	ATF_REQUIRE(store_org_by_slug("acme", &again) == 0);
}

BOTH_ENGINES(a_second_membership_of_one_org_is_a_conflict)
static void
a_second_membership_of_one_org_is_a_conflict(void)
{
	struct store_membership	 m;
	uint8_t			 h[STORE_HASH_LEN];
	char			 got[128];
	int64_t			 u = user("ann@example.com", 0);
	int64_t			 o = org("acme");

	join(u, o, "admin", 'A', NULL);
	memset(&m, 0, sizeof(m));
	memset(h, 'B', sizeof(h));
	m.user_id = u;
	m.org_id = o;
	m.role = "viewer";
	m.created_at = AT;
	ATF_REQUIRE_EQ(store_membership_insert(&m, h, NULL), STORE_CONFLICT);
	ATF_REQUIRE(store_membership_get(u, o, copy_membership, got) == 0);
	ATF_REQUIRE_STREQ(got, "admin - 1 - 0");
	ATF_REQUIRE(store_membership_get(u, o + 1, copy_membership,
	    got) == 1);
}

BOTH_ENGINES(an_update_changes_only_what_it_is_given)
static void
an_update_changes_only_what_it_is_given(void)
{
	struct store_membership_set	 set;
	struct store_member		 mb;
	uint8_t				 h[STORE_HASH_LEN];
	char				 got[128];
	int64_t				 u = user("ann@example.com", 0);
	int64_t				 o = org("acme");

	join(u, o, "member", 'A', NULL);
	memset(&set, 0, sizeof(set));
	set.local_run_enabled = -1;
	set.role = "admin";
	ATF_REQUIRE(store_membership_update(u, o, &set) == 0);
	ATF_REQUIRE(store_membership_get(u, o, copy_membership, got) == 0);
	ATF_REQUIRE_STREQ(got, "admin - 1 - 0");

	memset(&set, 0, sizeof(set));
	set.access_sent = 1;
	set.tool_access = "[\"gh\"]";
	set.local_run_enabled = 0;
	ATF_REQUIRE(store_membership_update(u, o, &set) == 0);
	ATF_REQUIRE(store_membership_get(u, o, copy_membership, got) == 0);
	ATF_REQUIRE_STREQ(got, "admin [\"gh\"] 0 - 0");

	/* A new token: the old hash finds nothing, the new one the row. */
	memset(&set, 0, sizeof(set));
	memset(h, 'C', sizeof(h));
	set.token_hash = h;
	set.local_run_enabled = -1;
	ATF_REQUIRE(store_membership_update(u, o, &set) == 0);
	ATF_REQUIRE(store_member_by_token(h, &mb) == 0);
	ATF_REQUIRE_STREQ(mb.tool_access, "[\"gh\"]");
	store_member_clear(&mb);
	memset(h, 'A', sizeof(h));
	ATF_REQUIRE(store_member_by_token(h, &mb) == 1);
	ATF_REQUIRE(store_membership_update(u, o + 1, &set) == 1);
}

BOTH_ENGINES(removing_a_membership_takes_its_deny_rules_and_its_agent)
static void
removing_a_membership_takes_its_deny_rules_and_its_agent(void)
{
	struct store_deny	 d;
	int64_t			 ann = user("ann@example.com", 0);
	int64_t			 bot = user("agent-acme-bot@agents.local", 1);
	int64_t			 o = org("acme"), id, n;
	int			 is_agent;

	join(ann, o, "owner", 'A', NULL);
	join(bot, o, "member", 'B', "bot");
	memset(&d, 0, sizeof(d));
	d.org_id = o;
	d.host = "api.example.com";
	d.user_id = bot;
	d.created_by = ann;
	d.created_at = AT;
	ATF_REQUIRE(store_deny_insert(&d, &id) == 0);
	ATF_REQUIRE(store_membership_remove(bot, o) == 0);
	ATF_REQUIRE(store_deny_count(o, &n) == 0);
	ATF_REQUIRE_EQ(n, 0);
	ATF_REQUIRE(store_user_by_email("agent-acme-bot@agents.local", &id,
	    &is_agent) == 1);
	ATF_REQUIRE(store_membership_remove(ann, o) == 0);
	ATF_REQUIRE(store_user_by_email("ann@example.com", &id,
	    &is_agent) == 0);
}

BOTH_ENGINES(memberships_list_people_agents_or_both_oldest_first)
static void
memberships_list_people_agents_or_both_oldest_first(void)
{
	struct seen	 all = { .n = 0 }, people = { .n = 0 };
	struct seen	 agents = { .n = 0 }, mine = { .n = 0 };
	int64_t		 bob = user("bob@example.com", 0);
	int64_t		 bot = user("agent-acme-bot@agents.local", 1);
	int64_t		 ann = user("ann@example.com", 0);
	int64_t		 o = org("acme"), p = org("beta");
	int64_t		 owners;

	join(bob, o, "owner", 'A', NULL);
	join(bot, o, "member", 'B', "bot");
	join(ann, o, "owner", 'C', NULL);
	join(bob, p, "viewer", 'D', NULL);
	ATF_REQUIRE(store_memberships(o, -1, seen_membership, &all) == 0);
	ATF_REQUIRE(store_memberships(o, 0, seen_membership, &people) == 0);
	ATF_REQUIRE(store_memberships(o, 1, seen_membership, &agents) == 0);
	ATF_REQUIRE_EQ(all.n, 3);
	ATF_REQUIRE(all.ids[0] == bob && all.ids[1] == bot &&
	    all.ids[2] == ann);
	ATF_REQUIRE_EQ(people.n, 2);
	ATF_REQUIRE(people.ids[0] == bob && people.ids[1] == ann);
	ATF_REQUIRE_EQ(agents.n, 1);
	ATF_REQUIRE_STREQ(agents.text[0],
	    "agent-acme-bot@agents.local member acme");
	ATF_REQUIRE(store_user_memberships(bob, seen_membership, &mine) == 0);
	ATF_REQUIRE_EQ(mine.n, 2);
	ATF_REQUIRE_STREQ(mine.text[0], "bob@example.com owner acme");
	ATF_REQUIRE_STREQ(mine.text[1], "bob@example.com viewer beta");
	ATF_REQUIRE(store_owner_count(o, &owners) == 0);
	ATF_REQUIRE_EQ(owners, 2);
}

BOTH_ENGINES(an_org_is_found_by_slug_else_by_a_name_only_one_has)
static void
an_org_is_found_by_slug_else_by_a_name_only_one_has(void)
{
	char	 slug[64];
	int64_t	 a, b, id = 0;

	ATF_REQUIRE(store_org_insert("acme", "Acme Inc", AT, &a) == 0);
	ATF_REQUIRE(store_org_insert("acme-2", "Twin", AT, &b) == 0);
	ATF_REQUIRE(store_org_insert("twin", "Twin", AT, &id) == 0);
	ATF_REQUIRE(store_org_find("acme-2", &id, slug, sizeof(slug)) == 0);
	ATF_REQUIRE_EQ(id, b);
	ATF_REQUIRE(store_org_find("Acme Inc", &id, slug, sizeof(slug)) == 0);
	ATF_REQUIRE_EQ(id, a);
	ATF_REQUIRE_STREQ(slug, "acme");
	/* "twin" is a slug: the org named Twin elsewhere does not count. */
	ATF_REQUIRE(store_org_find("twin", &id, NULL, 0) == 0);
	ATF_REQUIRE_EQ(store_org_find("Twin", &id, NULL, 0), 2);
	ATF_REQUIRE_EQ(store_org_find("nobody", &id, NULL, 0), 1);
}

BOTH_ENGINES(removing_an_org_takes_its_agents_but_not_its_people)
static void
removing_an_org_takes_its_agents_but_not_its_people(void)
{
	int64_t			 ann = user("ann@example.com", 0);
	int64_t			 bot = user("agent-acme-bot@agents.local", 1);
	int64_t			 o = org("acme"), id, ids[4];
	size_t			 n;
	int			 is_agent;

	join(ann, o, "owner", 'A', NULL);
	join(bot, o, "member", 'B', "bot");
	ATF_REQUIRE(store_user_org_ids(ann, "", ids, 4, &n) == 0);
	ATF_REQUIRE_EQ(n, 1);
	ATF_REQUIRE(store_org_remove(o) == 0);
	ATF_REQUIRE_EQ(store_org_by_slug("acme", &id), 1);
	ATF_REQUIRE_EQ(store_user_by_email("agent-acme-bot@agents.local",
	    &id, &is_agent), 1);
	ATF_REQUIRE(store_user_by_email("ann@example.com", &id,
	    &is_agent) == 0);
	ATF_REQUIRE(store_user_org_ids(ann, "", ids, 4, &n) == 0);
	ATF_REQUIRE_EQ(n, 0);
}

BOTH_ENGINES(a_users_orgs_are_picked_by_slug_or_name)
static void
a_users_orgs_are_picked_by_slug_or_name(void)
{
	int64_t	 ann = user("ann@example.com", 0), a, b, ids[4];
	size_t	 n;

	ATF_REQUIRE(store_org_insert("acme", "Acme Inc", AT, &a) == 0);
	ATF_REQUIRE(store_org_insert("beta", "Beta", AT, &b) == 0);
	join(ann, a, "owner", 'A', NULL);
	join(ann, b, "member", 'B', NULL);
	ATF_REQUIRE(store_user_org_ids(ann, "", ids, 4, &n) == 0);
	ATF_REQUIRE(n == 2 && ids[0] == a && ids[1] == b);
	ATF_REQUIRE(store_user_org_ids(ann, "Beta", ids, 4, &n) == 0);
	ATF_REQUIRE(n == 1 && ids[0] == b);
	ATF_REQUIRE(store_user_org_ids(ann, "acme", ids, 4, &n) == 0);
	ATF_REQUIRE(n == 1 && ids[0] == a);
	ATF_REQUIRE(store_user_org_ids(ann, "", ids, 1, &n) == 0);
	ATF_REQUIRE_EQ(n, 1);
}

BOTH_ENGINES(an_invite_is_used_once_and_listed_until_then)
static void
an_invite_is_used_once_and_listed_until_then(void)
{
	struct store_invite	 iv;
	struct seen		 before = { .n = 0 }, after = { .n = 0 };
	struct seen		 byc = { .n = 0 };
	uint8_t			 h[STORE_HASH_LEN];
	int64_t			 ann = user("ann@example.com", 0);
	int64_t			 o = org("acme"), id, old;
	int64_t			 now = (int64_t)time(NULL);

	memset(&iv, 0, sizeof(iv));
	iv.org_id = o;
	iv.email = "bob@example.com";
	iv.role = "member";
	iv.local_run_enabled = 1;
	iv.expires_at = now + 3600;
	iv.created_by = ann;
	iv.created_at = AT;
	memset(h, 'I', sizeof(h));
	ATF_REQUIRE(store_invite_insert(&iv, h, &id) == 0);
	ATF_REQUIRE_EQ(store_invite_insert(&iv, h, &old), STORE_CONFLICT);
	iv.expires_at = now - 1;
	memset(h, 'J', sizeof(h));
	ATF_REQUIRE(store_invite_insert(&iv, h, &old) == 0);
	ATF_REQUIRE(store_invites_each(o, now, seen_invite, &before) == 0);
	ATF_REQUIRE(before.n == 1 && before.ids[0] == id);
	memset(h, 'I', sizeof(h));
	ATF_REQUIRE(store_invite_by_code(h, seen_invite, &byc) == 0);
	ATF_REQUIRE_STREQ(byc.text[0], "bob@example.com member 0 acme");
	ATF_REQUIRE(store_invite_use(id) == 0);
	ATF_REQUIRE_EQ(store_invite_use(id), 1);
	ATF_REQUIRE(store_invites_each(o, now, seen_invite, &after) == 0);
	ATF_REQUIRE_EQ(after.n, 0);
	/* A used invite is not revoked: it is gone from the list already. */
	ATF_REQUIRE_EQ(store_invite_delete(o, id), 1);
	ATF_REQUIRE(store_invite_delete(o, old) == 0);
	ATF_REQUIRE_EQ(store_invite_delete(o, old), 1);
	memset(h, 'K', sizeof(h));
	ATF_REQUIRE_EQ(store_invite_by_code(h, seen_invite, &byc), 1);
}

/* Org acme: tools gh (in no skill) and aws (in skill cloud), a param. */
static void
fixture_tools(int64_t o, int64_t owner)
{
	char	 sql[1024];

	snprintf(sql, sizeof(sql),
	    "INSERT INTO bundles (org_id, name, owner_id, recipe, created_at) "
	    "VALUES (%lld, 'cloud', %lld, '{}', '" AT "');"
	    "INSERT INTO tools (org_id, name, owner_id, base_url, host, "
	    "bundle_id, created_at) VALUES "
	    "(%lld, 'gh', %lld, 'https://gh', 'gh', NULL, '" AT "'), "
	    "(%lld, 'aws', %lld, 'https://aws', 'aws', 1, '" AT "');"
	    "INSERT INTO secrets (org_id, name, kind, owner_id, sealed, "
	    "created_at) VALUES "
	    "(%lld, 'GH_TOKEN', 'env', %lld, SEALED, '" AT "'), "
	    "(%lld, 'AWS_KEY', 'env', %lld, SEALED, '" AT "'), "
	    "(%lld, 'REGION', 'param', %lld, SEALED, '" AT "'), "
	    "(%lld, 'MINE', 'env', %lld, SEALED, '" AT "');"
	    "INSERT INTO tool_secrets (tool_id, secret_id) VALUES "
	    "(1, 1), (2, 2), (2, 3)",
	    (long long)o, (long long)owner, (long long)o, (long long)owner,
	    (long long)o, (long long)owner, (long long)o, (long long)owner,
	    (long long)o, (long long)owner, (long long)o, (long long)owner,
	    (long long)o, (long long)owner + 1);
	raw(sql);
}

BOTH_ENGINES(tools_are_counted_and_found_through_the_access_list)
static void
tools_are_counted_and_found_through_the_access_list(void)
{
	int64_t	 ann = user("ann@example.com", 0);
	int64_t	 o = org("acme"), other = org("beta"), n;

	user("bob@example.com", 0);
	fixture_tools(o, ann);
	ATF_REQUIRE(store_org_tool_count(o, NULL, &n) == 0);
	ATF_REQUIRE_EQ(n, 2);
	ATF_REQUIRE(store_org_tool_count(o, "[\"gh\"]", &n) == 0);
	ATF_REQUIRE_EQ(n, 1);
	ATF_REQUIRE(store_org_tool_count(o, "[\"cloud\"]", &n) == 0);
	ATF_REQUIRE_EQ(n, 1);
	ATF_REQUIRE(store_org_tool_count(o, "[]", &n) == 0);
	ATF_REQUIRE_EQ(n, 0);
	ATF_REQUIRE(store_org_has_tool(o, "gh") == 0);
	ATF_REQUIRE(store_org_has_tool(o, "cloud") == 0);
	ATF_REQUIRE_EQ(store_org_has_tool(o, "nope"), 1);
	ATF_REQUIRE_EQ(store_org_has_tool(other, "gh"), 1);
}

BOTH_ENGINES(health_shows_a_gated_member_its_tools_secrets_and_its_own)
static void
health_shows_a_gated_member_its_tools_secrets_and_its_own(void)
{
	struct seen	 owner = { .n = 0 }, gated = { .n = 0 };
	struct seen	 skill = { .n = 0 };
	int64_t		 ann = user("ann@example.com", 0);
	int64_t		 bob = user("bob@example.com", 0);
	int64_t		 o = org("acme");

	fixture_tools(o, ann);
	ATF_REQUIRE(store_health(o, NULL, ann, seen_secret, &owner) == 0);
	ATF_REQUIRE_EQ(owner.n, 4);	/* the param too (treg: "unknown") */
	ATF_REQUIRE(store_health(o, "[\"gh\"]", bob, seen_secret,
	    &gated) == 0);
	ATF_REQUIRE_EQ(gated.n, 2);
	ATF_REQUIRE_STREQ(gated.text[0], "GH_TOKEN unknown");
	ATF_REQUIRE_STREQ(gated.text[1], "MINE unknown");
	/* A user of no secret of its own: only the skill's. */
	ATF_REQUIRE(store_health(o, "[\"cloud\"]", bob + 100, seen_secret,
	    &skill) == 0);
	ATF_REQUIRE_EQ(skill.n, 2);	/* its param is listed too */
	ATF_REQUIRE_STREQ(skill.text[0], "AWS_KEY unknown");
	ATF_REQUIRE_STREQ(skill.text[1], "REGION unknown");
}

BOTH_ENGINES(a_run_report_marks_the_tools_credentials_but_not_its_params)
static void
a_run_report_marks_the_tools_credentials_but_not_its_params(void)
{
	struct seen	 marked = { .n = 0 }, after = { .n = 0 };
	int64_t		 ann = user("ann@example.com", 0);
	int64_t		 o = org("acme");

	user("bob@example.com", 0);
	fixture_tools(o, ann);
	ATF_REQUIRE(store_tool_secrets_mark(o, 2, "invalid", "exit 1", AT,
	    seen_text, &marked) == 0);
	ATF_REQUIRE_EQ(marked.n, 1);
	ATF_REQUIRE_STREQ(marked.text[0], "AWS_KEY");
	ATF_REQUIRE(store_health(o, NULL, ann, seen_secret, &after) == 0);
	ATF_REQUIRE_STREQ(after.text[1], "AWS_KEY invalid");
	ATF_REQUIRE_STREQ(after.text[0], "GH_TOKEN unknown");
	/* Another org's tool id marks nothing here. */
	marked.n = 0;
	ATF_REQUIRE(store_tool_secrets_mark(o + 1, 2, "ok", "x", AT,
	    seen_text, &marked) == 0);
	ATF_REQUIRE_EQ(marked.n, 0);
}

BOTH_ENGINES(a_grant_is_found_only_for_its_user_and_tool)
static void
a_grant_is_found_only_for_its_user_and_tool(void)
{
	struct store_call	 c;
	int64_t			 ann = user("ann@example.com", 0);
	int64_t			 bob = user("bob@example.com", 0);
	int64_t			 o = org("acme"), grant, call;

	memset(&c, 0, sizeof(c));
	c.org_id = o;
	c.user_id = ann;
	c.user_email = "ann@example.com";
	c.tool_name = "gh";
	c.kind = "local_run";
	c.action = "GRANT";
	c.argv = "[]";
	c.created_at = AT;
	ATF_REQUIRE(store_call_insert(&c, &grant) == 0);
	c.action = NULL;
	c.kind = "call";
	ATF_REQUIRE(store_call_insert(&c, &call) == 0);
	ATF_REQUIRE(store_grant_find(o, ann, grant, "gh") == 0);
	ATF_REQUIRE_EQ(store_grant_find(o, bob, grant, "gh"), 1);
	ATF_REQUIRE_EQ(store_grant_find(o, ann, grant, "aws"), 1);
	ATF_REQUIRE_EQ(store_grant_find(o + 1, ann, grant, "gh"), 1);
	ATF_REQUIRE_EQ(store_grant_find(o, ann, call, "gh"), 1);
}

BOTH_ENGINES(tregctl_sees_every_user_and_each_orgs_totals)
static void
tregctl_sees_every_user_and_each_orgs_totals(void)
{
	struct seen	 users = { .n = 0 }, orgs = { .n = 0 };
	int64_t		 ann = user("ann@example.com", 0);
	int64_t		 bot = user("agent-acme-bot@agents.local", 1);
	int64_t		 o = org("acme");

	org("beta");
	user("bob@example.com", 0);
	join(ann, o, "owner", 'A', NULL);
	join(bot, o, "member", 'B', "bot");
	fixture_tools(o, ann);
	ATF_REQUIRE(store_users_each(seen_user, &users) == 0);
	ATF_REQUIRE_EQ(users.n, 3);
	ATF_REQUIRE_STREQ(users.text[1], "agent-acme-bot@agents.local 1");
	ATF_REQUIRE(store_orgs_each(seen_org, &orgs) == 0);
	ATF_REQUIRE_EQ(orgs.n, 2);
	ATF_REQUIRE_STREQ(orgs.text[0], "acme acme 2 2 4");
	ATF_REQUIRE_STREQ(orgs.text[1], "beta beta 0 0 0");
}

ATF_TP_ADD_TCS(tp)
{
	ADD_BOTH(tp, a_taken_email_or_slug_is_a_conflict);
	ADD_BOTH(tp, a_second_membership_of_one_org_is_a_conflict);
	ADD_BOTH(tp, an_update_changes_only_what_it_is_given);
	ADD_BOTH(tp, removing_a_membership_takes_its_deny_rules_and_its_agent);
	ADD_BOTH(tp, memberships_list_people_agents_or_both_oldest_first);
	ADD_BOTH(tp, an_org_is_found_by_slug_else_by_a_name_only_one_has);
	ADD_BOTH(tp, removing_an_org_takes_its_agents_but_not_its_people);
	ADD_BOTH(tp, a_users_orgs_are_picked_by_slug_or_name);
	ADD_BOTH(tp, an_invite_is_used_once_and_listed_until_then);
	ADD_BOTH(tp, tools_are_counted_and_found_through_the_access_list);
	ADD_BOTH(tp, health_shows_a_gated_member_its_tools_secrets_and_its_own);
	ADD_BOTH(tp,
	    a_run_report_marks_the_tools_credentials_but_not_its_params);
	ADD_BOTH(tp, a_grant_is_found_only_for_its_user_and_tool);
	ADD_BOTH(tp, tregctl_sees_every_user_and_each_orgs_totals);
	return (atf_no_error());
}
