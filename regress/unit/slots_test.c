/*
 * slots_test: the run slots the vault workers share (tregd/vault/vault_slots.c):
 * the server's limit and the user's share, a slot freed for the next
 * run, a run in flight seen by its audit row, the list of the runs in
 * flight, and several processes claiming at once on one table never
 * taking more than the limit.
 */

#include <sys/types.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <atf-c.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vault.h"

ATF_TC_WITHOUT_HEAD(server_limit_then_user_share);
ATF_TC_BODY(server_limit_then_user_share, tc)
{
	int	 s[4], used, slot;

	ATF_REQUIRE_EQ(slots_claim(1, 3, 2, &s[0], &used), 0);
	ATF_REQUIRE_EQ(slots_claim(1, 3, 2, &s[1], &used), 0);
	/* The user's share is taken, the server has room. */
	ATF_REQUIRE_EQ(slots_claim(1, 3, 2, &slot, &used), SLOTS_USER);
	ATF_CHECK_EQ(used, 2);
	ATF_REQUIRE_EQ(slots_claim(2, 3, 2, &s[2], &used), 0);
	/* Every slot is taken: the server refuses before the share. */
	ATF_REQUIRE_EQ(slots_claim(3, 3, 2, &slot, &used), SLOTS_FULL);
	ATF_CHECK_EQ(slots_used(0), 3);
	slots_release(s[0]);
	ATF_CHECK_EQ(slots_used(0), 2);
	ATF_REQUIRE_EQ(slots_claim(3, 3, 2, &s[3], &used), 0);
	slots_release(s[1]);
	slots_release(s[2]);
	slots_release(s[3]);
	ATF_CHECK_EQ(slots_used(0), 0);
}

ATF_TC_WITHOUT_HEAD(in_flight_by_audit_row);
ATF_TC_BODY(in_flight_by_audit_row, tc)
{
	int	 slot, used;

	ATF_REQUIRE_EQ(slots_claim(7, 4, 2, &slot, &used), 0);
	/* Claimed, but no audit row yet: no run is "running". */
	ATF_CHECK(!slots_in_flight(42));
	slots_started(slot, 42);
	ATF_CHECK(slots_in_flight(42));
	ATF_CHECK(!slots_in_flight(43));
	slots_release(slot);
	ATF_CHECK(!slots_in_flight(42));
}

/*
 * Workers 0..3 on one shared table, each claiming as fast as it can:
 * none may ever see more than max slots taken, and every claim it got
 * it frees again.
 */
#define WORKERS	4
#define ROUNDS	20000
#define MAX	3

ATF_TC_WITHOUT_HEAD(in_flight_ids_are_the_started_runs);
ATF_TC_BODY(in_flight_ids_are_the_started_runs, tc)
{
	int64_t	*ids;
	size_t	 n;
	int	 s[3], used;

	ATF_REQUIRE_EQ(slots_claim(1, 4, 4, &s[0], &used), 0);
	ATF_REQUIRE_EQ(slots_claim(1, 4, 4, &s[1], &used), 0);
	ATF_REQUIRE_EQ(slots_claim(2, 4, 4, &s[2], &used), 0);
	slots_started(s[0], 42);
	slots_started(s[2], 44);
	/* s[1] is claimed, not yet handed to exec: it has no row yet. */
	ids = slots_in_flight_ids(&n);
	ATF_REQUIRE_EQ(n, 2);
	ATF_CHECK((ids[0] == 42 && ids[1] == 44) ||
	    (ids[0] == 44 && ids[1] == 42));
	free(ids);
	slots_release(s[0]);
	ids = slots_in_flight_ids(&n);
	ATF_REQUIRE_EQ(n, 1);
	ATF_CHECK_EQ(ids[0], 44);
	free(ids);
	slots_release(s[1]);
	slots_release(s[2]);
	ids = slots_in_flight_ids(&n);
	ATF_CHECK_EQ(n, 0);
	free(ids);
}

ATF_TC_WITHOUT_HEAD(workers_never_exceed_the_limit);
ATF_TC_BODY(workers_never_exceed_the_limit, tc)
{
	pid_t	 pid[WORKERS];
	int	 fd, w, i, status, slot, used, over;

	fd = memfd_create("slots_test", MFD_CLOEXEC);
	ATF_REQUIRE(fd != -1);
	ATF_REQUIRE(ftruncate(fd, RUN_SLOTS_TABLE_SIZE) == 0);
	for (w = 0; w < WORKERS; w++) {
		ATF_REQUIRE((pid[w] = fork()) != -1);
		if (pid[w] != 0)
			continue;
		slots_init(dup(fd), w);
		over = 0;
		for (i = 0; i < ROUNDS; i++) {
			if (slots_claim(w, MAX, MAX, &slot, &used) != 0)
				continue;
			if (slots_used(0) > MAX)
				over = 1;
			slots_release(slot);
		}
		_exit(over ? 2 : slots_used(1) != 0 ? 3 : 0);
	}
	for (w = 0; w < WORKERS; w++) {
		ATF_REQUIRE(waitpid(pid[w], &status, 0) == pid[w]);
		ATF_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		    "worker %d: status %d", w, status);
	}
	close(fd);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, server_limit_then_user_share);
	ATF_TP_ADD_TC(tp, in_flight_by_audit_row);
	ATF_TP_ADD_TC(tp, in_flight_ids_are_the_started_runs);
	ATF_TP_ADD_TC(tp, workers_never_exceed_the_limit);
	return (atf_no_error());
}
