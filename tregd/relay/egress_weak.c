/*
 * egress_weak.c: stand-ins for egress_listen.c's functions (a run's
 * listeners; another part of the work on keyless runs), weak so that
 * its definitions replace them at link time once it is there: the proxy
 * and its harness (regress/unit/egress_harness.c) link without it.
 * A run here is known by its id only; it has no listener.
 */

#include <sys/types.h>
#include <sys/queue.h>

#include <event.h>
#include <stdlib.h>

#include "egress.h"
#include "log.h"

static TAILQ_HEAD(, egress_run) weak_runs = TAILQ_HEAD_INITIALIZER(weak_runs);

__attribute__((weak)) struct egress_run *
egress_run_get(uint32_t runid, int make)
{
	struct egress_run	*run;

	TAILQ_FOREACH(run, &weak_runs, entry)
		if (run->runid == runid)
			return (run);
	if (!make)
		return (NULL);
	if ((run = calloc(1, sizeof(*run))) == NULL)
		fatal("%s: calloc", __func__);
	run->runid = runid;
	TAILQ_INIT(&run->lsns);
	TAILQ_INIT(&run->conns);
	TAILQ_INSERT_TAIL(&weak_runs, run, entry);
	return (run);
}

__attribute__((weak)) void
egress_run_ready(struct egress_run *run)
{
}

/* The run ended: its grant and connections (egress_proxy.c), then it. */
__attribute__((weak)) void
egress_run_end(uint32_t runid)
{
	struct egress_run	*run;

	if ((run = egress_run_get(runid, 0)) == NULL)
		return;
	run->ended = 1;
	egress_run_free(run);
	TAILQ_REMOVE(&weak_runs, run, entry);
	free(run);
}

__attribute__((weak)) void
egress_conn_closed(struct egress_run *run)
{
	if (run->nconns > 0)
		run->nconns--;
}
