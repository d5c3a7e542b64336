/*
 * vault_hosts.c: which tregd hosts on the database are alive, so that a
 * server run without its end reads "running" while the host that runs it
 * lives, and "interrupted" once that host is gone (GET /runs, tregctl
 * show runs), whichever host serves the read.
 *
 * Each start of tregd is an instance (slots_instance()) and its runs
 * rows carry it.  Worker 0 of each instance writes into hosts the time
 * it was last alive, every HOSTS_BEAT_S, and removes its row at a clean
 * stop; an instance not seen for HOSTS_DEAD_S is gone.  At start the
 * other instances of the same host (its name: host name and state
 * directory) are removed: a host started again knows at once that the
 * runs of its earlier start were cut off.  The runs of this instance
 * are judged by the run slots (vault_run.c), not by this table.
 */

#include <sys/types.h>

#include <event.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vault.h"

#define HOSTS_BEAT_S	5	/* how often a host says it is alive */
#define HOSTS_DEAD_S	30	/* unseen this long: gone */
#define HOSTS_MAX	256	/* alive at once, at most */

static char		 host_name[HOST_NAME_MAX + PATH_MAX + 2];
static struct event	 beat_ev;
static int		 beating;

static void	hosts_beat(int, short, void *);

/* Before the sandbox: the host's name on the database. */
void
hosts_prepare(const char *state)
{
	char	 h[HOST_NAME_MAX + 1];

	if (gethostname(h, sizeof(h)) == -1)
		strlcpy(h, "localhost", sizeof(h));
	h[sizeof(h) - 1] = '\0';
	snprintf(host_name, sizeof(host_name), "%s:%s", h, state);
}

/* Once the database is open: worker 0 speaks for the instance. */
void
hosts_start(int worker)
{
	int64_t	 now = time(NULL);

	if (worker != 0)
		return;
	if (store_hosts_retire(slots_instance(), host_name,
	    now - 24 * 60 * 60) == -1)
		log_warnx("hosts: the earlier starts of this host cannot be "
		    "retired: %s", store_error());
	evtimer_set(&beat_ev, hosts_beat, NULL);
	beating = 1;
	hosts_beat(-1, 0, NULL);
}

static void
hosts_beat(int fd, short event, void *arg)
{
	struct timeval	 tv = { HOSTS_BEAT_S, 0 };

	/* A locked database: the next beat, well before HOSTS_DEAD_S. */
	if (store_host_beat(slots_instance(), host_name, time(NULL)) == -1)
		log_debug("hosts: not marked alive: %s", store_error());
	evtimer_add(&beat_ev, &tv);
}

/* A clean stop: this instance's runs are interrupted from now on. */
void
hosts_stop(void)
{
	if (!beating)
		return;
	evtimer_del(&beat_ev);
	beating = 0;
	(void)store_host_beat(slots_instance(), host_name, 0);
}

/*
 * Whether the instance host is alive by alive[n] (hosts_alive()): this
 * one always is.
 */
int
hosts_is_alive(int64_t host, const int64_t *alive, size_t n)
{
	size_t	 i;

	if (host == slots_instance())
		return (1);
	for (i = 0; i < n; i++)
		if (alive[i] == host)
			return (1);
	return (0);
}

/*
 * The instances alive now, in a new array of *n (NULL: the database
 * failed).
 */
int64_t *
hosts_alive(size_t *n)
{
	int64_t	*ids;

	if ((ids = calloc(HOSTS_MAX, sizeof(*ids))) == NULL)
		fatal("%s: calloc", __func__);
	if (store_hosts_live(time(NULL) - HOSTS_DEAD_S, ids, HOSTS_MAX,
	    n) == -1) {
		free(ids);
		return (NULL);
	}
	return (ids);
}
