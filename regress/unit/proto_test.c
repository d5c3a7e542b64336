/*
 * proto_test: a run order packed by the vault reads back the same in
 * exec (tregd/proto.c, the one place that knows its layout and limits),
 * and a malformed one is refused with the part that is wrong.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <stdlib.h>
#include <string.h>

#include "pack.h"
#include "tregd.h"

static void	 order(struct run_order *, const char *, size_t, size_t,
		    const char *);

static const char	*argv_[RUN_ARGC_MAX + 1];
static size_t		 argvlen[RUN_ARGC_MAX + 1];
static char		*env_[RUN_ENVC_MAX + 1];
static size_t		 envlen[RUN_ENVC_MAX + 1];
static char		*mask_[] = { "s3cr3t-value", "other" };
static size_t		 masklen[] = { 12, 5 };

/* bin, argc words "a", envc entries envword, the two mask values. */
static void
order(struct run_order *o, const char *bin, size_t argc, size_t envc,
    const char *envword)
{
	size_t	 i;

	memset(o, 0, sizeof(*o));
	o->bin = bin;
	argv_[0] = bin;
	argvlen[0] = strlen(bin);
	for (i = 1; i < argc; i++) {
		argv_[i] = "a";
		argvlen[i] = 1;
	}
	for (i = 0; i < envc; i++) {
		env_[i] = (char *)envword;
		envlen[i] = strlen(envword);
	}
	o->argv = argv_;
	o->argvlen = argvlen;
	o->argc = argc;
	o->env = env_;
	o->envlen = envlen;
	o->envc = envc;
	o->mask = mask_;
	o->masklen = masklen;
	o->nmask = 2;
}

ATF_TC_WITHOUT_HEAD(run_order_reads_back_as_packed);
ATF_TC_BODY(run_order_reads_back_as_packed, tc)
{
	struct run_order	 o, u;
	struct pack		 pk;
	struct unpack		 up;
	const char		*why, *s;
	size_t			 n;

	order(&o, "gh", 3, 2, "GH_TOKEN=x");
	pack_init(&pk);
	run_order_pack(&pk, &o);
	ATF_REQUIRE_EQ(run_order_unpack(pk.buf, pk.len, 4, &u, &why), 0);
	ATF_CHECK_STREQ(u.bin, "gh");
	ATF_REQUIRE_EQ(u.argc, 3);
	ATF_CHECK_STREQ(u.argv[0], "gh");
	ATF_CHECK_STREQ(u.argv[2], "a");
	ATF_CHECK(u.argv[3] == NULL);
	ATF_REQUIRE_EQ(u.envc, 2);
	/* exec's own variables go first: the order's come after. */
	ATF_CHECK(u.env[0] == NULL && u.env[3] == NULL);
	ATF_CHECK_STREQ(u.env[4], "GH_TOKEN=x");
	ATF_CHECK_STREQ(u.env[5], "GH_TOKEN=x");
	ATF_CHECK(u.env[6] == NULL);
	/* The mask as packed: the redaction set's cache key. */
	unpack_init(&up, u.packed_mask, u.packed_masklen);
	ATF_CHECK_EQ(unpack_u32(&up), 2);
	s = unpack_bytes(&up, &n);
	ATF_CHECK(s != NULL && n == 12 && memcmp(s, "s3cr3t-value", 12) == 0);
	ATF_CHECK(unpack_bytes(&up, &n) != NULL && unpack_done(&up) == 0);
	free(u.argv);
	free(u.env);
	pack_free(&pk);
}

ATF_TC_WITHOUT_HEAD(run_order_refuses_what_exec_must_not_run);
ATF_TC_BODY(run_order_refuses_what_exec_must_not_run, tc)
{
	static const struct {
		const char	*bin, *env, *why;
		size_t		 argc, envc;
	} t[] = {
		{ "gh",		"A=b",		"argv",	0, 0 },
		{ "gh",		"A=b",		"argv",	RUN_ARGC_MAX + 1, 0 },
		{ "gh",		"A=b",		"env",	1, RUN_ENVC_MAX + 1 },
		{ "gh",		"=b",		"env",	1, 1 },
		{ "gh",		"1A=b",		"env",	1, 1 },
		{ "gh",		"NOEQUALS",	"env",	1, 1 },
		{ "/bin/sh",	"A=b",		"bin",	1, 0 },
		{ "",		"A=b",		"bin",	1, 0 },
	};
	struct run_order	 o, u;
	struct pack		 pk;
	const char		*why;
	size_t			 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		order(&o, t[i].bin, t[i].argc, t[i].envc, t[i].env);
		pack_init(&pk);
		run_order_pack(&pk, &o);
		why = NULL;
		ATF_CHECK_EQ_MSG(run_order_unpack(pk.buf, pk.len, 0, &u, &why),
		    -1, "case %zu", i);
		ATF_CHECK_STREQ_MSG(why, t[i].why, "case %zu", i);
		free(u.argv);
		free(u.env);
		pack_free(&pk);
	}
	/* Cut short: never read past the end. */
	order(&o, "gh", 2, 1, "A=b");
	pack_init(&pk);
	run_order_pack(&pk, &o);
	ATF_CHECK_EQ(run_order_unpack(pk.buf, pk.len - 1, 0, &u, &why), -1);
	free(u.argv);
	free(u.env);
	pack_free(&pk);
}

ATF_TC_WITHOUT_HEAD(run_order_hosts);
ATF_TC_BODY(run_order_hosts, tc)
{
	static const char *good[] = { "api.github.com:443", "localhost:8080",
	    "[::1]:443" };
	static const char *bad[] = { "*.github.com:443", "http://x:80",
	    "x y:443", "x:0", "x:65536", "x", ":443", "x:44a", "[::1:443",
	    "x\n127.0.0.1 evil:443" };
	struct run_order	 o, u;
	struct pack		 pk;
	const char		*why, *one[1];
	char			 name[HOST_LEN_MAX];
	uint16_t		 port;
	size_t			 i, k;

	order(&o, "gh", 1, 0, "A=b");
	o.hosts = good;
	o.nhosts = 3;
	pack_init(&pk);
	run_order_pack(&pk, &o);
	ATF_REQUIRE_EQ(run_order_unpack(pk.buf, pk.len, 0, &u, &why), 0);
	ATF_REQUIRE_EQ(u.nhosts, 3);
	ATF_CHECK_STREQ(u.hosts[0], "api.github.com:443");
	ATF_CHECK_STREQ(u.hosts[2], "[::1]:443");
	ATF_CHECK(run_host_ok(u.hosts[2], name, sizeof(name), &port));
	ATF_CHECK_STREQ(name, "::1");
	ATF_CHECK_EQ(port, 443);
	ATF_CHECK(run_host_ok(u.hosts[1], name, sizeof(name), &port));
	ATF_CHECK_STREQ(name, "localhost");
	ATF_CHECK_EQ(port, 8080);
	free(u.argv);
	free(u.env);
	free(u.hosts);
	/* A vault that sends no hosts: an order of old, no host. */
	k = pk.len - 4 - 3 * 5 - strlen(good[0]) - strlen(good[1]) -
	    strlen(good[2]);
	ATF_REQUIRE_EQ(run_order_unpack(pk.buf, k, 0, &u, &why), 0);
	ATF_CHECK_EQ(u.nhosts, 0);
	ATF_CHECK(u.hosts == NULL);
	free(u.argv);
	free(u.env);
	pack_free(&pk);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		one[0] = bad[i];
		o.hosts = one;
		o.nhosts = 1;
		pack_init(&pk);
		run_order_pack(&pk, &o);
		ATF_CHECK_EQ_MSG(run_order_unpack(pk.buf, pk.len, 0, &u, &why),
		    -1, "case %zu", i);
		ATF_CHECK_STREQ_MSG(why, "hosts", "case %zu", i);
		free(u.argv);
		free(u.env);
		free(u.hosts);
		pack_free(&pk);
	}
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, run_order_hosts);
	ATF_TP_ADD_TC(tp, run_order_reads_back_as_packed);
	ATF_TP_ADD_TC(tp, run_order_refuses_what_exec_must_not_run);
	return (atf_no_error());
}
