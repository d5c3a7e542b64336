/*
 * Run slots shared by the vault workers.
 *
 * "run slots" and its per-user and per-org shares count for the host, whichever
 * worker took the run: the workers share one table, a memfd the parent
 * made and every worker maps.  A claim is made under a spin lock held
 * for a few loads and stores (never across anything that can block), so
 * two workers never both take the last slot; a worker frees only its own
 * claims.  A worker that dies ends tregd, so no claim outlives its owner.
 * Entries are read as numbers only: nothing in the table is a pointer
 * or a length.
 */

#include <sys/types.h>
#include <sys/mman.h>

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "vault.h"

#define SLOTS_MAX	1024	/* run slots' maximum (parse.y) */

struct slot {
	uint32_t	 used;		/* 0: free */
	uint32_t	 worker;	/* who claimed it */
	int64_t		 user_id;
	int64_t		 org_id;
	int64_t		 audit_id;	/* 0 until the run is handed to exec */
};

struct slot_table {
	uint32_t	 lock;
	uint32_t	 pad;
	int64_t		 instance;	/* this tregd's, on the database */
	struct slot	 s[SLOTS_MAX];
};

_Static_assert(sizeof(struct slot_table) <= RUN_SLOTS_TABLE_SIZE,
    "run slots table larger than its memfd");

static struct slot_table	*tab;
static uint32_t			 self;

static struct slot_table *
slots_table(void)
{
	/* No parent (unit tests, -T): a table of this process alone. */
	if (tab == NULL && (tab = calloc(1, sizeof(*tab))) == NULL)
		fatal("%s: calloc", __func__);
	return (tab);
}

/* IMSG_CONF_WORKER: map the table the parent made; fd is consumed. */
void
slots_init(int fd, uint32_t worker)
{
	void	*p;

	p = mmap(NULL, RUN_SLOTS_TABLE_SIZE, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		fatal("%s: mmap", __func__);
	close(fd);
	tab = p;
	self = worker;
}

/* This worker's index. */
uint32_t
slots_worker(void)
{
	return (self);
}

static void
slots_lock(struct slot_table *t)
{
	unsigned int	 spins = 0;

	while (__atomic_exchange_n(&t->lock, 1, __ATOMIC_ACQUIRE) != 0)
		if (++spins % 64 == 0)
			sched_yield();
}

static void
slots_unlock(struct slot_table *t)
{
	__atomic_store_n(&t->lock, 0, __ATOMIC_RELEASE);
}

/*
 * A slot for a run of user in org: 0 and *slot, or SLOTS_FULL (the
 * server's are taken), SLOTS_USER (the user's share is) or SLOTS_ORG
 * (the org's share is, max_org; 0: no share of its own), *used saying
 * how many that share holds.
 */
int
slots_claim(int64_t user, int64_t org, int max, int max_user, int max_org,
    int *slot, int *used)
{
	struct slot_table	*t = slots_table();
	int			 i, n = 0, mine = 0, ours = 0, free_at = -1, rc;

	if (max > SLOTS_MAX)
		max = SLOTS_MAX;
	if (max_org <= 0)
		max_org = max;
	slots_lock(t);
	for (i = 0; i < SLOTS_MAX; i++) {
		if (!t->s[i].used) {
			if (free_at == -1)
				free_at = i;
			continue;
		}
		n++;
		if (t->s[i].user_id == user)
			mine++;
		if (t->s[i].org_id == org)
			ours++;
	}
	*used = mine;
	if (n >= max || free_at == -1)
		rc = SLOTS_FULL;
	else if (mine >= max_user)
		rc = SLOTS_USER;
	else if (ours >= max_org) {
		*used = ours;
		rc = SLOTS_ORG;
	} else {
		t->s[free_at].used = 1;
		t->s[free_at].worker = self;
		t->s[free_at].user_id = user;
		t->s[free_at].org_id = org;
		t->s[free_at].audit_id = 0;
		*slot = free_at;
		rc = 0;
	}
	slots_unlock(t);
	return (rc);
}

/* The claimed slot's run has its audit row: GET /runs says "running". */
void
slots_started(int slot, int64_t audit_id)
{
	struct slot_table	*t = slots_table();

	if (slot < 0 || slot >= SLOTS_MAX)
		fatalx("%s: slot %d", __func__, slot);
	__atomic_store_n(&t->s[slot].audit_id, audit_id, __ATOMIC_RELEASE);
}

void
slots_release(int slot)
{
	struct slot_table	*t = slots_table();

	if (slot < 0 || slot >= SLOTS_MAX || !t->s[slot].used ||
	    t->s[slot].worker != self)
		fatalx("%s: slot %d is not ours", __func__, slot);
	slots_lock(t);
	memset(&t->s[slot], 0, sizeof(t->s[slot]));
	slots_unlock(t);
}

/* Whether the run of this audit row is in flight on any worker. */
int
slots_in_flight(int64_t audit_id)
{
	struct slot_table	*t = slots_table();
	int			 i;

	for (i = 0; i < SLOTS_MAX; i++)
		if (__atomic_load_n(&t->s[i].used, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&t->s[i].audit_id, __ATOMIC_ACQUIRE) ==
		    audit_id)
			return (1);
	return (0);
}

/*
 * The audit ids of the runs in flight now, every worker's, in a new
 * array of *n.
 */
int64_t *
slots_in_flight_ids(size_t *n)
{
	struct slot_table	*t = slots_table();
	int64_t			*ids, id;
	int			 i;

	if ((ids = calloc(SLOTS_MAX, sizeof(*ids))) == NULL)
		fatal("%s: calloc", __func__);
	*n = 0;
	for (i = 0; i < SLOTS_MAX; i++)
		if (__atomic_load_n(&t->s[i].used, __ATOMIC_ACQUIRE) &&
		    (id = __atomic_load_n(&t->s[i].audit_id,
		    __ATOMIC_ACQUIRE)) != 0)
			ids[(*n)++] = id;
	return (ids);
}

/*
 * This start of tregd on the database (its runs carry it, vault_hosts.c):
 * random, made by the first worker that asks, the same for every worker
 * (they share the table), never 0.
 */
int64_t
slots_instance(void)
{
	struct slot_table	*t = slots_table();
	int64_t			 id;

	slots_lock(t);
	while ((id = t->instance) <= 0) {
		randombytes_buf(&id, sizeof(id));
		t->instance = id & INT64_MAX;
	}
	slots_unlock(t);
	return (id);
}

/* Slots held on the host (mine: by this worker only). */
int
slots_used(int mine)
{
	struct slot_table	*t = slots_table();
	int			 i, n = 0;

	for (i = 0; i < SLOTS_MAX; i++)
		if (__atomic_load_n(&t->s[i].used, __ATOMIC_ACQUIRE) &&
		    (!mine || t->s[i].worker == self))
			n++;
	return (n);
}
