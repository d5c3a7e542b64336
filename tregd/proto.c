/*
 * proto.c: what two processes must read the same way, written once.  A
 * run's outcome is decided by exec (its answer to the frontend) and by
 * the vault (its record) from one struct run_exit; the run-latency
 * buckets are filled by the vault and printed by the frontend.
 *
 * A leaf: it includes tregd.h and libc only, and every process may call
 * it.
 */

#include <sys/types.h>

#include <stdint.h>
#include <stdio.h>

#include "tregd.h"

/* GET /metrics' tregd_run_duration_seconds buckets, in seconds. */
const double metrics_run_le[METRICS_RUN_BUCKETS] = {
	0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
};

/* exec's answer and the vault's record say the same. */
enum run_outcome
run_outcome_of(const struct run_exit *rx)
{
	if (rx->cancelled)
		return (RUN_CANCELLED);
	if (rx->timed_out)
		return (RUN_TIMED_OUT);
	return (rx->exit_code == 0 ? RUN_OK : RUN_FAILED);
}

const char *
run_outcome_name(uint32_t o)
{
	static const char *const names[] = {
		[RUN_OK] = "ok",
		[RUN_FAILED] = "failed",
		[RUN_TIMED_OUT] = "timed_out",
		[RUN_CANCELLED] = "cancelled",
		[RUN_INTERRUPTED] = "interrupted"
	};

	if (o >= sizeof(names) / sizeof(names[0]))
		return ("failed");
	return (names[o]);
}
