/*
 * The redaction-set cache of exec and the relay (common/redact_cache.c):
 * sets are compiled on its thread and handed back on the loop, found
 * again by their secrets, kept within a byte bound and a count, dropped
 * when unused for a while, and never while a run or call holds one.
 */

#include <sys/types.h>

#include <event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atf-c.h>

#include "pack.h"
#include "redact.h"
#include "redact_cache.h"

static struct rcache	*got;
static int		 called;

static void	 ready(void *, struct rcache *);
static void	 setup(void);
static struct rcache *get(int64_t, const char *, size_t);
static time_t	 mono(void);

static void
ready(void *arg, struct rcache *ent)
{
	ATF_REQUIRE(arg == &got);
	got = ent;
	called++;
}

static void
setup(void)
{
	static int	 done;

	if (!done) {
		event_init();
		rcache_init();
		rcache_start();
		done = 1;
	}
}

/* The set of one secret: `n' copies of s with a counter, compiled. */
static struct rcache *
get(int64_t owner, const char *s, size_t n)
{
	struct pack	 pk;
	char		*v;
	size_t		 i, len = strlen(s);
	int		 rc;

	ATF_REQUIRE((v = malloc(n * len + 1)) != NULL);
	for (i = 0; i < n; i++)
		memcpy(v + i * len, s, len);
	pack_init(&pk);
	pack_u32(&pk, 1);
	pack_bytes(&pk, v, n * len);
	got = NULL;
	called = 0;
	rc = rcache_get(owner, pk.buf, pk.len, ready, &got, &got);
	ATF_REQUIRE(rc == 0 || rc == 1);
	/* Compiled on the thread: the loop turns until it is back. */
	while (rc == 1 && called == 0)
		event_loop(EVLOOP_ONCE);
	ATF_REQUIRE(got != NULL);
	ATF_REQUIRE(redact_set_npatterns(rcache_set(got)) > 0);
	pack_free(&pk);
	free(v);
	return (got);
}

static time_t
mono(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec);
}

ATF_TC_WITHOUT_HEAD(same_secrets_are_served_from_the_cache);
ATF_TC_BODY(same_secrets_are_served_from_the_cache, tc)
{
	struct rcache	*a, *b;

	setup();
	a = get(1, "tok-0123456789-same", 1);
	ATF_REQUIRE_EQ(called, 1);		/* compiled, called back */
	b = get(1, "tok-0123456789-same", 1);
	ATF_REQUIRE_EQ(called, 0);		/* from the cache */
	ATF_REQUIRE(a == b);
	rcache_put(a);
	rcache_put(b);
	ATF_REQUIRE_EQ(rcache_count(), 1);
	rcache_clear();
	ATF_REQUIRE_EQ(rcache_count(), 0);
	ATF_REQUIRE_EQ(rcache_bytes(), 0);
}

ATF_TC_WITHOUT_HEAD(cache_stays_within_its_byte_bound);
ATF_TC_BODY(cache_stays_within_its_byte_bound, tc)
{
	struct rcache	*e, *held;
	char		 s[64];
	size_t		 one, i;

	setup();
	rcache_clear();
	e = get(0, "bound-probe-0123456789", 40);
	one = redact_set_memsize(rcache_set(e));
	rcache_put(e);
	rcache_clear();
	/* Room for three sets of that size. */
	rcache_limits(3 * one + one / 2, 64, 60);
	held = get(0, "held-by-a-run-0123456789", 40);
	for (i = 0; i < 20; i++) {
		snprintf(s, sizeof(s), "bound-%02zu-0123456789", i);
		e = get(0, s, 40);
		rcache_put(e);
		/* What no one holds goes first; the held one stays. */
		ATF_REQUIRE_MSG(rcache_bytes() <= 3 * one + one / 2,
		    "%zu bytes kept, bound %zu", rcache_bytes(),
		    3 * one + one / 2);
		ATF_REQUIRE(rcache_count() <= 3);
	}
	e = get(0, "held-by-a-run-0123456789", 40);
	ATF_REQUIRE_EQ(called, 0);		/* still there */
	ATF_REQUIRE(e == held);
	rcache_put(e);
	rcache_put(held);
	/* A set larger than the bound serves its run, and is not kept. */
	rcache_limits(one / 2, 64, 60);
	ATF_REQUIRE_EQ(rcache_bytes(), 0);
	e = get(0, "larger-than-the-bound-0123456789", 40);
	ATF_REQUIRE(rcache_set(e) != NULL);
	rcache_put(e);
	ATF_REQUIRE_EQ(rcache_count(), 0);
	/* And a count bound. */
	rcache_limits(RCACHE_BYTES, 2, 60);
	for (i = 0; i < 5; i++) {
		snprintf(s, sizeof(s), "count-%02zu-0123456789", i);
		rcache_put(get(0, s, 1));
		ATF_REQUIRE(rcache_count() <= 2);
	}
	rcache_clear();
	rcache_limits(RCACHE_BYTES, RCACHE_SETS, RCACHE_IDLE_S);
}

ATF_TC_WITHOUT_HEAD(unused_sets_expire_and_held_ones_do_not);
ATF_TC_BODY(unused_sets_expire_and_held_ones_do_not, tc)
{
	struct rcache	*held, *e;

	setup();
	rcache_clear();
	held = get(0, "expiry-held-0123456789", 1);
	e = get(0, "expiry-free-0123456789", 1);
	rcache_put(e);
	ATF_REQUIRE_EQ(rcache_count(), 2);
	rcache_expire(mono() + RCACHE_IDLE_S - 2);
	ATF_REQUIRE_EQ(rcache_count(), 2);
	rcache_expire(mono() + RCACHE_IDLE_S + 1);
	ATF_REQUIRE_EQ(rcache_count(), 1);	/* the held one stays */
	rcache_put(held);
	rcache_expire(mono() + RCACHE_IDLE_S + 1);
	ATF_REQUIRE_EQ(rcache_count(), 0);
	ATF_REQUIRE_EQ(rcache_bytes(), 0);
}

ATF_TC_WITHOUT_HEAD(changed_secrets_drop_the_owners_old_set);
ATF_TC_BODY(changed_secrets_drop_the_owners_old_set, tc)
{
	setup();
	rcache_clear();
	rcache_put(get(7, "owner-old-value-0123456789", 1));
	rcache_put(get(8, "other-owner-value-0123456789", 1));
	ATF_REQUIRE_EQ(rcache_count(), 2);
	rcache_put(get(7, "owner-new-value-0123456789", 1));
	ATF_REQUIRE_EQ(called, 1);
	ATF_REQUIRE_EQ(rcache_count(), 2);	/* old one of 7 gone */
	rcache_put(get(8, "other-owner-value-0123456789", 1));
	ATF_REQUIRE_EQ(called, 0);
	rcache_clear();
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, same_secrets_are_served_from_the_cache);
	ATF_TP_ADD_TC(tp, cache_stays_within_its_byte_bound);
	ATF_TP_ADD_TC(tp, unused_sets_expire_and_held_ones_do_not);
	ATF_TP_ADD_TC(tp, changed_secrets_drop_the_owners_old_set);
	return atf_no_error();
}
