/*
 * keyless_test: what a keyless run is made of besides its order
 * (vault_keyless.c, SPEC.md section 6a): the egress list of a tool (its
 * profile's, or its base_url's host and its catalog CLI's), the hosts of
 * it exec names in a run's /etc/hosts, one placeholder per value, and
 * the grant's packed part as the relay reads it.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <sodium.h>
#include <string.h>

#include "pack.h"
#include "vault.h"

static json_t	*list_of(const char *, const char *, const char *);

/* The egress list of a tool of base_url on host with profile cli. */
static json_t *
list_of(const char *base_url, const char *host, const char *cli)
{
	struct tool_row	 t;
	json_t		*l;

	memset(&t, 0, sizeof(t));
	tool_row_fill(&t, base_url, host, NULL, cli);
	l = egress_list(&t);
	tool_row_clear(&t);
	return (l);
}

ATF_TC_WITHOUT_HEAD(egress_list_defaults_to_base_url_and_catalog_hosts);
ATF_TC_BODY(egress_list_defaults_to_base_url_and_catalog_hosts, tc)
{
	json_t		*l;
	const char	*hosts[RUN_HOSTS_MAX];
	char		*s;
	size_t		 n;

	/* gh: the base_url's host once, then the catalog's. */
	l = list_of("https://api.github.com", "api.github.com",
	    "{\"bin\": \"gh\"}");
	s = json_dumps(l, JSON_COMPACT);
	ATF_CHECK_STREQ(s, "[\"api.github.com:443\",\"uploads.github.com:443\","
	    "\"github.com:443\",\"codeload.github.com:443\","
	    "\"objects.githubusercontent.com:443\"]");
	free(s);
	json_decref(l);

	/* A plain http base_url on a port of its own, no catalog CLI. */
	l = list_of("http://127.0.0.1:8080/v1", "127.0.0.1:8080",
	    "{\"bin\": \"sh\"}");
	s = json_dumps(l, JSON_COMPACT);
	ATF_CHECK_STREQ(s, "[\"http://127.0.0.1:8080\"]");
	free(s);
	n = egress_list_hosts(l, hosts, RUN_HOSTS_MAX);
	ATF_REQUIRE_EQ(n, 1);
	ATF_CHECK_STREQ(hosts[0], "127.0.0.1:8080");
	json_decref(l);

	/* aws: a wildcard, which names no host for /etc/hosts. */
	l = list_of("https://sts.amazonaws.com", "sts.amazonaws.com",
	    "{\"bin\": \"aws\"}");
	n = egress_list_hosts(l, hosts, RUN_HOSTS_MAX);
	ATF_CHECK_EQ(json_array_size(l), 2);
	ATF_REQUIRE_EQ(n, 1);
	ATF_CHECK_STREQ(hosts[0], "sts.amazonaws.com:443");
	json_decref(l);
}

ATF_TC_WITHOUT_HEAD(egress_list_of_the_profile_replaces_the_default);
ATF_TC_BODY(egress_list_of_the_profile_replaces_the_default, tc)
{
	json_t		*l;
	const char	*hosts[RUN_HOSTS_MAX];
	char		*s;
	size_t		 n;

	l = list_of("https://api.github.com", "api.github.com",
	    "{\"bin\": \"gh\", \"egress\": [\"ghe.example.com:443\", "
	    "\"*.example.net:443\", \"http://localhost:8080\", "
	    "\"ghe.example.com:443\"]}");
	s = json_dumps(l, JSON_COMPACT);
	ATF_CHECK_STREQ(s, "[\"ghe.example.com:443\",\"*.example.net:443\","
	    "\"http://localhost:8080\"]");
	free(s);
	n = egress_list_hosts(l, hosts, RUN_HOSTS_MAX);
	ATF_REQUIRE_EQ(n, 2);
	ATF_CHECK_STREQ(hosts[0], "ghe.example.com:443");
	ATF_CHECK_STREQ(hosts[1], "localhost:8080");
	json_decref(l);
	/* An empty list: the run reaches nothing. */
	l = list_of("https://api.github.com", "api.github.com",
	    "{\"bin\": \"gh\", \"egress\": []}");
	ATF_CHECK_EQ(json_array_size(l), 0);
	json_decref(l);
}

ATF_TC_WITHOUT_HEAD(a_value_has_one_placeholder_per_run);
ATF_TC_BODY(a_value_has_one_placeholder_per_run, tc)
{
	static const char	 k1[] = "ghp_0123456789abcdefABCDEF0123456789ab";
	static const char	 k2[] = "AKIAIOSFODNN7EXAMPLE";
	struct psubs		*ps, *other;
	const struct psub	*a, *b, *c, *d;

	ATF_REQUIRE(sodium_init() != -1);
	ps = psubs_new();
	a = psubs_get(ps, k1, strlen(k1), NULL, "GH_TOKEN");
	b = psubs_get(ps, k1, strlen(k1), "aws-sigv4", "OTHER");
	c = psubs_get(ps, k2, strlen(k2), "aws-sigv4", "AWS_ACCESS_KEY_ID");
	ATF_REQUIRE(a != NULL && c != NULL);
	/* The same value, the same placeholder, its first entry's name. */
	ATF_CHECK(a == b);
	ATF_CHECK_EQ(ps->n, 2);
	ATF_CHECK_STREQ(a->name, "GH_TOKEN");
	ATF_CHECK_STREQ(a->sign, "");
	ATF_CHECK_STREQ(c->sign, "aws-sigv4");
	ATF_CHECK(strncmp(a->ph, "ghp_", 4) == 0 && strcmp(a->ph, k1) != 0);
	ATF_CHECK(strncmp(c->ph, "AKIA", 4) == 0 && c->phlen == 24);
	/* Another run: another placeholder of the same value. */
	other = psubs_new();
	d = psubs_get(other, k1, strlen(k1), NULL, "GH_TOKEN");
	ATF_REQUIRE(d != NULL);
	ATF_CHECK(strcmp(d->ph, a->ph) != 0);
	/* Punctuation alone cannot stand in for anything. */
	ATF_CHECK(psubs_get(ps, "----------------", 16, NULL, "X") == NULL);
	psubs_free(other);
	psubs_free(ps);
}

ATF_TC_WITHOUT_HEAD(the_grant_packs_hosts_pairs_and_the_mask);
ATF_TC_BODY(the_grant_packs_hosts_pairs_and_the_mask, tc)
{
	static const char	 k[] = "sk_live_0123456789abcdefXYZ";
	struct psubs		*ps;
	struct redset		 rs;
	struct pack		 pk;
	struct unpack		 up;
	json_t			*l;
	const char		*s;
	size_t			 n;

	ATF_REQUIRE(sodium_init() != -1);
	ps = psubs_new();
	ATF_REQUIRE(psubs_get(ps, k, strlen(k), NULL, "STRIPE_API_KEY") !=
	    NULL);
	memset(&rs, 0, sizeof(rs));
	ATF_REQUIRE(redset_add(&rs, k, strlen(k)) == 0);
	l = list_of("https://api.stripe.com", "api.stripe.com",
	    "{\"bin\": \"stripe\"}");
	pack_init(&pk);
	egress_grant_pack(&pk, l, ps, &rs);
	unpack_init(&up, pk.buf, pk.len);
	ATF_REQUIRE_EQ(unpack_u32(&up), 2);
	ATF_CHECK_STREQ(unpack_str(&up), "api.stripe.com:443");
	ATF_CHECK_STREQ(unpack_str(&up), "files.stripe.com:443");
	ATF_REQUIRE_EQ(unpack_u32(&up), 1);
	s = unpack_bytes(&up, &n);
	ATF_CHECK(s != NULL && n == strlen(k) && strncmp(s, "sk_live_", 8) ==
	    0 && strcmp(s, k) != 0);
	s = unpack_bytes(&up, &n);
	ATF_CHECK(s != NULL && n == strlen(k) && memcmp(s, k, n) == 0);
	ATF_CHECK_STREQ(unpack_str(&up), "");
	ATF_CHECK_STREQ(unpack_str(&up), "STRIPE_API_KEY");
	ATF_REQUIRE_EQ(unpack_u32(&up), 1);
	s = unpack_bytes(&up, &n);
	ATF_CHECK(s != NULL && n == strlen(k));
	ATF_CHECK_EQ(unpack_done(&up), 0);
	pack_free(&pk);
	redset_clear(&rs);
	json_decref(l);
	psubs_free(ps);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, egress_list_defaults_to_base_url_and_catalog_hosts);
	ATF_TP_ADD_TC(tp, egress_list_of_the_profile_replaces_the_default);
	ATF_TP_ADD_TC(tp, a_value_has_one_placeholder_per_run);
	ATF_TP_ADD_TC(tp, the_grant_packs_hosts_pairs_and_the_mask);
	return (atf_no_error());
}
