/*
 * store_health_test: credential health through store.h (migration 14):
 * one secret's verdict (never a param's), and the webhook an owner's
 * alert goes to (the owner's membership of the org, else another of
 * theirs, else an owner's of the org).  In make check's first pass on
 * an in-memory sqlite database; in the check-pg pass (kyua variables
 * engine=pg and pg_host) the same cases on a PostgreSQL database.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg.h"
#include "store_sqlite.h"
#include "pgdb.h"

#define AT	"2026-01-01T00:00:00Z"

/*
 * Empty database of this pass's engine: orgs acme 1, other 2; ann 1,
 * bob 2, cat 3; ann owns acme, bob and cat are its members, bob owns
 * other.
 */
static void
setup(const atf_tc_t *tc)
{
	const char		*seed = "INSERT INTO users (email, created_at) "
	    "VALUES ('ann@example.com', '" AT "'), ('bob@example.com', '"
	    AT "'), ('cat@example.com', '" AT "');"
	    "INSERT INTO orgs (slug, name, created_at) VALUES "
	    "('acme', 'Acme', '" AT "'), ('other', 'Other', '" AT "')";
	int			 on_pg;

	on_pg = pgdb_store_open(tc, "store_health");
	ATF_REQUIRE((on_pg ? pg_exec(seed) : db_exec(seed)) == 0);
}

static void
add_member(int64_t user, int64_t org, const char *role)
{
	struct store_membership	 m;
	uint8_t			 hash[STORE_HASH_LEN];
	int64_t			 id;

	memset(&m, 0, sizeof(m));
	memset(hash, (int)(user * 16 + org), sizeof(hash));
	m.user_id = user;
	m.org_id = org;
	m.role = role;
	m.local_run_enabled = 1;
	m.created_at = AT;
	ATF_REQUIRE(store_membership_insert(&m, hash, &id) == 0);
}

static int64_t
add_secret(const char *name, const char *kind)
{
	struct store_secret	 s;
	int64_t			 id = 0;

	memset(&s, 0, sizeof(s));
	s.org_id = 1;
	strlcpy(s.name, name, sizeof(s.name));
	strlcpy(s.kind, kind, sizeof(s.kind));
	s.owner_id = 1;
	s.sealed = "x";
	s.sealedlen = 1;
	strlcpy(s.created_at, AT, sizeof(s.created_at));
	ATF_REQUIRE(store_secret_insert(&s, &id) == 0);
	return (id);
}

static int
text_add(const char *t, void *arg)
{
	char	*buf = arg;

	if (*buf != '\0')
		strlcat(buf, ",", 256);
	strlcat(buf, t, 256);
	return (0);
}

static int
health_line(const struct store_secret_row *r, void *arg)
{
	char	 b[256];

	snprintf(b, sizeof(b), "%s:%s:%s:%s", r->name, r->status,
	    r->status_detail ? r->status_detail : "-",
	    r->checked_at ? r->checked_at : "-");
	return (text_add(b, arg));
}

ATF_TC(secret_mark_judges_one_secret_never_a_param);
ATF_TC_HEAD(secret_mark_judges_one_secret_never_a_param, tc)
{
	atf_tc_set_md_var(tc, "descr", "store_secret_mark writes one "
	    "secret's status, detail and checked_at and names it; a param "
	    "is never marked, another org's secret neither");
}
ATF_TC_BODY(secret_mark_judges_one_secret_never_a_param, tc)
{
	char	 names[256] = "", rows[256] = "";
	int64_t	 k, p, other;

	setup(tc);
	k = add_secret("k", "env");
	p = add_secret("p", "param");
	other = add_secret("o", "env");
	ATF_REQUIRE(store_secret_mark(1, k, "invalid", "probe HTTP 401",
	    AT, text_add, names) == 0);
	ATF_REQUIRE(store_secret_mark(1, p, "ok", "x", AT, text_add,
	    names) == 0);
	ATF_REQUIRE(store_secret_mark(2, other, "ok", "x", AT, text_add,
	    names) == 0);
	ATF_CHECK_STREQ(names, "k");
	ATF_REQUIRE(store_health(1, NULL, 0, health_line, rows) == 0);
	ATF_CHECK_STREQ(rows, "k:invalid:probe HTTP 401:" AT ","
	    "p:unknown:-:-,o:unknown:-:-");
	store_close();
}

static int
url_copy(const char *u, void *arg)
{
	strlcpy(arg, u, 256);
	return (0);
}

static void
expect_hook(int64_t org, int64_t user, const char *want)
{
	char	 url[256] = "";
	int	 rc;

	rc = store_webhook_find(org, user, url_copy, url);
	ATF_REQUIRE_MSG(rc == (*want != '\0' ? 0 : 1), "org %lld user %lld: "
	    "rc %d, want '%s'", (long long)org, (long long)user, rc, want);
	ATF_CHECK_STREQ(url, want);
}

ATF_TC(webhook_is_the_owners_else_an_org_owners);
ATF_TC_HEAD(webhook_is_the_owners_else_an_org_owners, tc)
{
	atf_tc_set_md_var(tc, "descr", "store_webhook_find: the user's "
	    "membership of the org first, then another of theirs, then an "
	    "owner's of the org; none when nobody has one");
}
ATF_TC_BODY(webhook_is_the_owners_else_an_org_owners, tc)
{
	setup(tc);
	add_member(1, 1, "owner");
	add_member(2, 1, "member");
	add_member(3, 1, "member");
	add_member(2, 2, "owner");
	expect_hook(1, 3, "");
	ATF_REQUIRE(store_webhook_set(1, 1, "https://ann.example/h") == 0);
	/* cat has none: acme's owner's. */
	expect_hook(1, 3, "https://ann.example/h");
	/* bob's of another org beats acme's owner's. */
	ATF_REQUIRE(store_webhook_set(2, 2, "https://bob.example/o") == 0);
	expect_hook(1, 2, "https://bob.example/o");
	/* bob's own in acme beats both. */
	ATF_REQUIRE(store_webhook_set(1, 2, "https://bob.example/a") == 0);
	expect_hook(1, 2, "https://bob.example/a");
	/* Cleared: back to the next. */
	ATF_REQUIRE(store_webhook_set(1, 2, NULL) == 0);
	expect_hook(1, 2, "https://bob.example/o");
	/* A member's webhook is not an owner's: bob only joined acme. */
	ATF_REQUIRE(store_webhook_set(1, 1, NULL) == 0);
	expect_hook(1, 3, "");
	store_close();
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, secret_mark_judges_one_secret_never_a_param);
	ATF_TP_ADD_TC(tp, webhook_is_the_owners_else_an_org_owners);
	return (atf_no_error());
}
