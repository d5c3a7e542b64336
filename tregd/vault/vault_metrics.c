/*
 * The vault's counters for GET /metrics: runs by outcome and how long
 * they took, redactions, database errors, run slots, requests answered.
 * Kept in memory (since the vault started) and sent to the frontend every
 * second as one struct metrics_vault; a scrape never waits on the vault.
 * Each worker reports its own (the slots it holds, not the host's): the
 * frontend adds them up.
 */

#include <sys/types.h>

#include <event.h>
#include <string.h>

#include "vault.h"

static struct metrics_vault	 vm;
static struct event		 ev_report;

static void	vault_metrics_send(int, short, void *);

void
vault_metrics_start(void)
{
	evtimer_set(&ev_report, vault_metrics_send, NULL);
	vault_metrics_send(0, 0, NULL);
}

static void
vault_metrics_send(int fd, short event, void *arg)
{
	struct timeval	 tv = { 1, 0 };

	vm.slots_in_use = slots_used(1);
	vm.slots_max = vault_conf.run_slots;
	if (imsgev_compose(vault_frontend, IMSG_METRICS_VAULT, 0, -1, &vm,
	    sizeof(vm)) == -1)
		fatal("%s: send to frontend", __func__);
	evtimer_add(&ev_report, &tv);
}

/* A server run ended (enum run_outcome), in ms, with its redactions. */
void
vault_metrics_run(uint32_t outcome, uint32_t ms, uint32_t redacted)
{
	int	 i;

	if (outcome <= RUN_INTERRUPTED)
		vm.runs[outcome]++;
	for (i = 0; i < METRICS_RUN_BUCKETS; i++)
		if (ms <= metrics_run_le[i] * 1000) {
			vm.run_le[i]++;
			break;
		}
	vm.run_ms += ms;
	vm.redactions += redacted;
}

void
vault_metrics_db_error(void)
{
	vm.db_errors++;
}

void
vault_metrics_request(void)
{
	vm.requests++;
}
