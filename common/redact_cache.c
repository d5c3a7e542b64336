/*
 * redact_cache.c: the compiled redaction sets of exec and the relay.  See
 * redact_cache.h.
 *
 * Why a thread: compiling a set costs time linear in its pattern bytes
 * (every form of every secret; about 7 us and 1 KB a secret byte, twice
 * that for binary values, bench/RESULTS.md), and exec and the relay
 * each serve every org from one event loop.  Compiled on the loop, one
 * org's large set stalled every other org's runs and calls (14 s for 32
 * secrets of 64 KiB).  The vault bounds what a tool's set may cost
 * (TOOL_MASK_MAX), and the compile runs on one worker thread that shares
 * nothing with the loop but a locked queue of jobs and a pipe that says
 * one is done: the loop only looks sets up, hands jobs over and calls
 * back.  The thread only allocates and computes (no descriptor, no log,
 * no libevent); it inherits the process's seccomp filter and blocks every
 * signal.  One thread: compiles queue behind each other, which bounds
 * the memory they take to one set in the making at a time.
 *
 * A set is found by a keyed BLAKE2b digest of the packed secrets (the key
 * is random, made at start, and never leaves the process, so a digest
 * says nothing about a secret).  Another digest for the same owner (a
 * tool whose secret changed) drops the owner's old set there and then.
 */

#include <sys/types.h>
#include <sys/queue.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pack.h"
#include "redact.h"
#include "redact_cache.h"

#define RCACHE_DIGEST	crypto_generichash_BYTES

struct rwait {
	TAILQ_ENTRY(rwait)	 entry;
	rcache_fn		 fn;
	void			*arg;
};
TAILQ_HEAD(rwait_list, rwait);

struct rcache {
	TAILQ_ENTRY(rcache)	 entry;		/* the cache */
	TAILQ_ENTRY(rcache)	 jentry;	/* the jobs (under mu) */
	int64_t			 owner;
	unsigned char		 digest[RCACHE_DIGEST];
	struct redact_set	*set;		/* NULL while compiling */
	size_t			 bytes;		/* its automaton */
	int			 refs;
	int			 cached;	/* on the list */
	int			 compiling;
	time_t			 used;
	struct rwait_list	 waits;
	/* The job: the packed secrets (zeroed after), the thread's set. */
	char			*job;
	size_t			 joblen;
	struct redact_set	*result;
};
TAILQ_HEAD(rcache_list, rcache);

static struct rcache_list	 ents = TAILQ_HEAD_INITIALIZER(ents);
static size_t			 nents, nbytes;
static size_t			 max_bytes = RCACHE_BYTES;
static size_t			 max_sets = RCACHE_SETS;
static int			 idle_s = RCACHE_IDLE_S;
static unsigned char		 rkey[crypto_generichash_KEYBYTES];
static struct event		 ev_idle, ev_done;
static int			 done_pipe[2] = { -1, -1 };

/* Shared with the thread, under mu. */
static pthread_mutex_t		 mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t		 cv = PTHREAD_COND_INITIALIZER;
static struct rcache_list	 todo = TAILQ_HEAD_INITIALIZER(todo);
static struct rcache_list	 done = TAILQ_HEAD_INITIALIZER(done);
static int			 started;

static void	 rc_digest(const void *, size_t, unsigned char *);
static void	 rc_log(const struct rcache *, const char *);
static void	 rc_unlink(struct rcache *, const char *);
static void	 rc_free(struct rcache *);
static void	 rc_trim(void);
static void	 rc_idle(int, short, void *);
static void	 rc_done(int, short, void *);
static void	*rc_thread(void *);
static time_t	 rc_now(void);

void
rcache_init(void)
{
	struct timeval	 tv = { RCACHE_IDLE_S / 4, 0 };

	if (sodium_init() == -1)
		fatalx("%s: sodium_init", __func__);
	randombytes_buf(rkey, sizeof(rkey));
	if (pipe2(done_pipe, O_CLOEXEC | O_NONBLOCK) == -1)
		fatal("%s: pipe2", __func__);
	event_set(&ev_done, done_pipe[0], EV_READ | EV_PERSIST, rc_done, NULL);
	event_add(&ev_done, NULL);
	evtimer_set(&ev_idle, rc_idle, NULL);
	evtimer_add(&ev_idle, &tv);
}

void
rcache_start(void)
{
	pthread_attr_t	 attr;
	pthread_t	 t;
	sigset_t	 all, old;

	if (started)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_attr_init(&attr) != 0 ||
	    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) != 0 ||
	    (errno = pthread_create(&t, &attr, rc_thread, NULL)) != 0)
		fatal("%s: pthread_create", __func__);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	started = 1;
}

static void
rc_digest(const void *p, size_t len, unsigned char *dg)
{
	crypto_generichash_state	 st;

	crypto_generichash_init(&st, rkey, sizeof(rkey), RCACHE_DIGEST);
	crypto_generichash_update(&st, p, len);
	crypto_generichash_final(&st, dg, RCACHE_DIGEST);
}

static void
rc_log(const struct rcache *e, const char *what)
{
	if (e->owner > 0)
		log_debug("redaction set of tool %lld: %s",
		    (long long)e->owner, what);
	else
		log_debug("redaction set: %s", what);
}

int
rcache_get(int64_t owner, const void *packed, size_t len, rcache_fn fn,
    void *arg, struct rcache **out)
{
	unsigned char	 dg[RCACHE_DIGEST];
	struct rcache	*e, *old = NULL;
	struct rwait	*w;
	struct unpack	 u;
	uint32_t	 i, n;
	size_t		 l;

	*out = NULL;
	unpack_init(&u, packed, len);
	n = unpack_u32(&u);
	for (i = 0; i < n && !u.bad; i++)
		(void)unpack_bytes(&u, &l);
	if (unpack_done(&u) != 0)
		return (-1);
	rc_digest(packed, len, dg);
	TAILQ_FOREACH(e, &ents, entry) {
		if (sodium_memcmp(e->digest, dg, sizeof(dg)) == 0)
			break;
		if (owner > 0 && e->owner == owner && !e->compiling)
			old = e;
	}
	explicit_bzero(dg, sizeof(dg));
	/* Another set of the same tool: its secrets changed. */
	if (e == NULL && old != NULL)
		rc_unlink(old, "dropped, its secrets changed");
	if (e != NULL && !e->compiling) {
		TAILQ_REMOVE(&ents, e, entry);
		TAILQ_INSERT_HEAD(&ents, e, entry);
		e->refs++;
		e->used = rc_now();
		rc_log(e, "from the cache");
		*out = e;
		return (0);
	}
	if ((w = calloc(1, sizeof(*w))) == NULL)
		fatal("%s: calloc", __func__);
	w->fn = fn;
	w->arg = arg;
	if (e != NULL) {		/* being compiled: wait for it too */
		TAILQ_INSERT_TAIL(&e->waits, w, entry);
		return (1);
	}
	if ((e = calloc(1, sizeof(*e))) == NULL ||
	    (e->job = malloc(len > 0 ? len : 1)) == NULL)
		fatal("%s: calloc", __func__);
	memcpy(e->job, packed, len);
	e->joblen = len;
	e->owner = owner;
	rc_digest(packed, len, e->digest);
	TAILQ_INIT(&e->waits);
	TAILQ_INSERT_TAIL(&e->waits, w, entry);
	e->compiling = 1;
	e->cached = 1;
	e->used = rc_now();
	TAILQ_INSERT_HEAD(&ents, e, entry);
	nents++;
	rc_log(e, "compiling");
	pthread_mutex_lock(&mu);
	TAILQ_INSERT_TAIL(&todo, e, jentry);
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	return (1);
}

/* No callback for arg any more (its run or call went away). */
void
rcache_forget(void *arg)
{
	struct rcache	*e;
	struct rwait	*w, *next;

	TAILQ_FOREACH(e, &ents, entry)
		for (w = TAILQ_FIRST(&e->waits); w != NULL; w = next) {
			next = TAILQ_NEXT(w, entry);
			if (w->arg == arg) {
				TAILQ_REMOVE(&e->waits, w, entry);
				free(w);
			}
		}
}

void
rcache_put(struct rcache *e)
{
	if (e == NULL)
		return;
	if (e->refs <= 0)
		fatalx("%s: a redaction set released twice", __func__);
	e->refs--;
	e->used = rc_now();
	if (e->refs == 0 && !e->cached)
		rc_free(e);
	else
		rc_trim();
}

/* One more holder of a held set (a run's request, as long as it runs). */
struct rcache *
rcache_hold(struct rcache *e)
{
	if (e->refs <= 0)
		fatalx("%s: a redaction set no one holds", __func__);
	e->refs++;
	return (e);
}

const struct redact_set *
rcache_set(const struct rcache *e)
{
	return (e->set);
}

void
rcache_clear(void)
{
	struct rcache	*e, *next;

	for (e = TAILQ_FIRST(&ents); e != NULL; e = next) {
		next = TAILQ_NEXT(e, entry);
		if (!e->compiling)
			rc_unlink(e, NULL);
	}
}

size_t
rcache_count(void)
{
	return (nents);
}

size_t
rcache_bytes(void)
{
	return (nbytes);
}

void
rcache_limits(size_t bytes, size_t sets, int idle)
{
	max_bytes = bytes;
	max_sets = sets;
	idle_s = idle;
	rc_trim();
}

/* Sets no one holds and no one used since now - idle_s go. */
void
rcache_expire(time_t now)
{
	struct rcache	*e, *prev;

	for (e = TAILQ_LAST(&ents, rcache_list); e != NULL; e = prev) {
		prev = TAILQ_PREV(e, rcache_list, entry);
		if (e->refs == 0 && !e->compiling && now - e->used >= idle_s)
			rc_unlink(e, "dropped, not used for a while");
	}
}

static void
rc_unlink(struct rcache *e, const char *why)
{
	TAILQ_REMOVE(&ents, e, entry);
	nents--;
	nbytes -= e->bytes;
	e->cached = 0;
	if (why != NULL)
		rc_log(e, why);
	if (e->refs == 0)
		rc_free(e);
}

static void
rc_free(struct rcache *e)
{
	redact_set_free(e->set);
	freezero(e, sizeof(*e));
}

/* Over a bound: the least recently used sets no one holds go. */
static void
rc_trim(void)
{
	struct rcache	*e, *prev;

	for (e = TAILQ_LAST(&ents, rcache_list); e != NULL &&
	    (nbytes > max_bytes || nents > max_sets); e = prev) {
		prev = TAILQ_PREV(e, rcache_list, entry);
		if (e->refs == 0 && !e->compiling)
			rc_unlink(e, "dropped, the cache is full");
	}
}

static void
rc_idle(int fd, short event, void *arg)
{
	struct timeval	 tv = { RCACHE_IDLE_S / 4, 0 };

	rcache_expire(rc_now());
	evtimer_add(&ev_idle, &tv);
}

/* On the loop: compiled sets, to their waiters. */
static void
rc_done(int fd, short event, void *arg)
{
	struct rcache	*e;
	struct rwait	*w;
	char		 buf[64];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	for (;;) {
		pthread_mutex_lock(&mu);
		if ((e = TAILQ_FIRST(&done)) != NULL)
			TAILQ_REMOVE(&done, e, jentry);
		pthread_mutex_unlock(&mu);
		if (e == NULL)
			break;
		e->compiling = 0;
		e->set = e->result;
		e->result = NULL;
		freezero(e->job, e->joblen);
		e->job = NULL;
		e->used = rc_now();
		if (e->set != NULL) {
			e->bytes = redact_set_memsize(e->set);
			nbytes += e->bytes;
			rc_log(e, "compiled");
		} else
			log_warnx("redaction set: cannot be compiled");
		/* Each waiter holds it; the callback may put it at once. */
		e->refs += 1;
		while ((w = TAILQ_FIRST(&e->waits)) != NULL) {
			TAILQ_REMOVE(&e->waits, w, entry);
			if (e->set != NULL)
				e->refs++;
			w->fn(w->arg, e->set != NULL ? e : NULL);
			free(w);
		}
		if (e->set == NULL)
			rc_unlink(e, NULL);
		rcache_put(e);
	}
}

struct redact_set *
rcache_compile(const void *packed, size_t len)
{
	struct redact_set	*set;
	struct unpack		 u;
	const char		*s;
	uint32_t		 i, n;
	size_t			 l;
	int			 saved;

	if ((set = redact_set_new()) == NULL)
		return (NULL);
	unpack_init(&u, packed, len);
	n = unpack_u32(&u);
	for (i = 0; i < n; i++) {
		if ((s = unpack_bytes(&u, &l)) == NULL) {
			errno = EINVAL;
			goto fail;
		}
		if (redact_set_add(set, s, l) == -1)
			goto fail;
	}
	if (redact_set_compile(set) == -1)
		goto fail;
	return (set);
 fail:
	saved = errno;
	redact_set_free(set);
	errno = saved;
	return (NULL);
}

/* The worker: jobs in, sets out; nothing else. */
static void *
rc_thread(void *arg)
{
	struct rcache	*e;
	char		 one = 1;

	for (;;) {
		pthread_mutex_lock(&mu);
		while ((e = TAILQ_FIRST(&todo)) == NULL)
			pthread_cond_wait(&cv, &mu);
		TAILQ_REMOVE(&todo, e, jentry);
		pthread_mutex_unlock(&mu);
		e->result = rcache_compile(e->job, e->joblen);
		pthread_mutex_lock(&mu);
		TAILQ_INSERT_TAIL(&done, e, jentry);
		pthread_mutex_unlock(&mu);
		/* A full pipe has a byte in it already: the loop will look. */
		if (write(done_pipe[1], &one, 1) == -1)
			continue;
	}
	return (NULL);
}

static time_t
rc_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec);
}
