/*
 * exec_rset.c: the compiled redaction sets of exec, one per tool and
 * version of its secrets, so a run does not build its automaton again.
 *
 * A set is found by the tool's id and a keyed BLAKE2b digest of the
 * secrets the run order carries (the key is random, made at start and
 * never leaves exec, so a digest says nothing about a secret).  Another
 * digest for the same tool means a secret changed: its old set is
 * dropped there and then (zeroed as soon as no run uses it), and the
 * new one compiled.  A set no run used for RSET_IDLE_S is dropped too, so
 * an old value of a secret whose tool is not run again does not stay
 * here for long.  At most RSET_MAX sets are kept.
 */

#include <sys/types.h>
#include <sys/queue.h>

#include <event.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec_rset.h"
#include "log.h"
#include "redact.h"
#include "tregd.h"
#include "exec.h"

#define RSET_MAX	64
#define RSET_IDLE_S	60

struct rset {
	TAILQ_ENTRY(rset)	 entry;
	int64_t			 tool_id;
	unsigned char		 digest[crypto_generichash_BYTES];
	struct redact_set	*set;
	int			 refs;		/* runs using it */
	int			 cached;	/* still on the list */
	time_t			 used;
};
TAILQ_HEAD(rset_list, rset);

static struct rset_list	 rsets = TAILQ_HEAD_INITIALIZER(rsets);
static size_t		 nrsets;
static unsigned char	 rset_key[crypto_generichash_KEYBYTES];
static struct event	 ev_idle;

static void	rset_unlink(struct rset *, const char *);
static void	rset_free(struct rset *);
static void	rset_idle(int, short, void *);
static time_t	rset_now(void);

void
rset_init(void)
{
	struct timeval	 tv = { RSET_IDLE_S, 0 };

	if (sodium_init() == -1)
		fatalx("%s: sodium_init", __func__);
	randombytes_buf(rset_key, sizeof(rset_key));
	evtimer_set(&ev_idle, rset_idle, NULL);
	evtimer_add(&ev_idle, &tv);
}

/* The digest of a run's secrets, in order, each with its length. */
void
rset_digest_init(struct rset_digest *d)
{
	crypto_generichash_init(&d->st, rset_key, sizeof(rset_key),
	    sizeof(d->digest));
}

void
rset_digest_add(struct rset_digest *d, const void *p, size_t len)
{
	uint64_t	 n = len;

	crypto_generichash_update(&d->st, (const unsigned char *)&n,
	    sizeof(n));
	crypto_generichash_update(&d->st, p, len);
}

void
rset_digest_final(struct rset_digest *d)
{
	crypto_generichash_final(&d->st, d->digest, sizeof(d->digest));
}

/*
 * The compiled set of the tool for these secrets, from the cache; NULL
 * when there is none (the caller compiles one and adds it).
 */
struct rset *
rset_get(int64_t tool_id, const struct rset_digest *d)
{
	struct rset	*rs;

	TAILQ_FOREACH(rs, &rsets, entry)
		if (rs->tool_id == tool_id)
			break;
	if (rs == NULL)
		return (NULL);
	if (sodium_memcmp(rs->digest, d->digest, sizeof(rs->digest)) != 0) {
		rset_unlink(rs, "its secrets changed");
		return (NULL);
	}
	TAILQ_REMOVE(&rsets, rs, entry);
	TAILQ_INSERT_HEAD(&rsets, rs, entry);
	rs->refs++;
	rs->used = rset_now();
	log_debug("redaction set of tool %lld: from the cache",
	    (long long)tool_id);
	return (rs);
}

/* Keep set (compiled) for the tool; the caller's run holds it. */
struct rset *
rset_add(int64_t tool_id, const struct rset_digest *d,
    struct redact_set *set)
{
	struct rset	*rs, *old;

	if ((rs = calloc(1, sizeof(*rs))) == NULL)
		fatal("%s: calloc", __func__);
	rs->tool_id = tool_id;
	memcpy(rs->digest, d->digest, sizeof(rs->digest));
	rs->set = set;
	rs->refs = 1;
	rs->cached = 1;
	rs->used = rset_now();
	TAILQ_INSERT_HEAD(&rsets, rs, entry);
	nrsets++;
	log_debug("redaction set of tool %lld: compiled, %zu patterns",
	    (long long)tool_id, redact_set_npatterns(set));
	/* Full: the least recently used goes. */
	if (nrsets > RSET_MAX && (old = TAILQ_LAST(&rsets, rset_list)) != rs)
		rset_unlink(old, "the cache is full");
	return (rs);
}

/* A run is done with its set. */
void
rset_put(struct rset *rs)
{
	if (rs == NULL)
		return;
	if (--rs->refs == 0 && !rs->cached)
		rset_free(rs);
}

/* Every set, at exec's end: their patterns are zeroed. */
void
rset_clear(void)
{
	struct rset	*rs;

	while ((rs = TAILQ_FIRST(&rsets)) != NULL)
		rset_unlink(rs, NULL);
}

const struct redact_set *
rset_set(const struct rset *rs)
{
	return (rs->set);
}

size_t
rset_count(void)
{
	return (nrsets);
}

static void
rset_unlink(struct rset *rs, const char *why)
{
	TAILQ_REMOVE(&rsets, rs, entry);
	nrsets--;
	rs->cached = 0;
	if (why != NULL)
		log_debug("redaction set of tool %lld: dropped, %s",
		    (long long)rs->tool_id, why);
	if (rs->refs == 0)
		rset_free(rs);
}

static void
rset_free(struct rset *rs)
{
	redact_set_free(rs->set);
	freezero(rs, sizeof(*rs));
}

static void
rset_idle(int fd, short event, void *arg)
{
	struct rset	*rs, *prev;
	struct timeval	 tv = { RSET_IDLE_S / 4, 0 };
	time_t		 now = rset_now();

	for (rs = TAILQ_LAST(&rsets, rset_list); rs != NULL; rs = prev) {
		prev = TAILQ_PREV(rs, rset_list, entry);
		if (rs->refs == 0 && now - rs->used >= RSET_IDLE_S)
			rset_unlink(rs, "not used for a while");
	}
	evtimer_add(&ev_idle, &tv);
}

static time_t
rset_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec);
}
