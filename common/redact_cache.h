/*
 * redact_cache.c: the compiled redaction sets of a process (exec for
 * runs, the relay for calls), one module for both.
 *
 * A set is asked for by its owner (a tool id, 0: none) and the packed
 * secrets it is made of (pack.h: a u32 count, then each as bytes).  It is
 * found by a keyed digest of those bytes; a set the cache does not hold is
 * compiled by a worker thread, never on the event loop, which goes on
 * serving other runs and calls meanwhile; the caller is called back on
 * the loop when it is ready.  What is kept is bounded in bytes and in
 * sets, least recently used first out, and a set no one used for a while
 * is dropped (its patterns zeroed).
 */

#ifndef REDACT_CACHE_H
#define REDACT_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct redact_set;
struct rcache;

/* ent is NULL when the set could not be compiled (out of memory). */
typedef void (*rcache_fn)(void *arg, struct rcache *ent);

#define RCACHE_BYTES	(64 * 1024 * 1024)	/* automata kept */
#define RCACHE_SETS	64
#define RCACHE_IDLE_S	60

/* At start, on the event loop's thread: the digest's key, the timer. */
void	 rcache_init(void);
/* After the sandbox: the worker thread (it inherits the filter). */
void	 rcache_start(void);
/*
 * 0 and *out (held: rcache_put() it) when the set is ready; 1 when it
 * is being compiled: fn(arg, ent) follows on the loop, ent held; -1
 * when packed is malformed.
 */
int	 rcache_get(int64_t, const void *, size_t, rcache_fn, void *,
	    struct rcache **);
/* arg goes away: no callback for it any more. */
void	 rcache_forget(void *);
void	 rcache_put(struct rcache *);
struct rcache *rcache_hold(struct rcache *);
const struct redact_set *rcache_set(const struct rcache *);
/* Every set, at the end: zeroed. */
void	 rcache_clear(void);

/* Figures and knobs (tests, metrics). */
size_t	 rcache_count(void);
size_t	 rcache_bytes(void);
void	 rcache_limits(size_t, size_t, int);
void	 rcache_expire(time_t);
/* Compile packed on the calling thread (tests, bench): NULL and errno. */
struct redact_set *rcache_compile(const void *, size_t);

#endif /* REDACT_CACHE_H */
