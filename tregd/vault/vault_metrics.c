/*
 * The vault's counters for GET /metrics: runs by outcome and how long
 * they took, redactions, database errors, run slots, requests answered.
 * Kept in memory (since the vault started) and sent to the frontend every
 * second as one struct metrics_vault (by vault.c); a scrape never waits on the vault.
 * Each worker reports its own (the slots it holds, not the host's): the
 * frontend adds them up.
 */

#include <sys/types.h>

#include <string.h>

#include "vault.h"

static struct metrics_vault	 vm;

/*
 * The counters as they are now, with this worker's run slots in use of
 * slots_max: what vault.c sends to the frontend every second.
 */
const struct metrics_vault *
vault_metrics_now(int in_use, int slots_max)
{
	vm.slots_in_use = in_use;
	vm.slots_max = slots_max;
	return (&vm);
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
