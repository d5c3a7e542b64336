/*
 * vault_callcap.c: a member's daily call cap (treg's daily_call_cap), the
 * rule /call applies before anything is unsealed and again as the call's
 * row is written.  The count lives in the database, so it holds across
 * vault workers and hosts; vault_call.c takes the counts of one turn's
 * calls together (call_caps_take()) and falls back to call_cap() one by
 * one.  Reads the store and the call cache; answers nothing itself.
 */

#include <sys/types.h>
#include <sys/queue.h>

#include <stdint.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "vault.h"
#include "store.h"

/* The UTC day of t, as the counts are kept: YYYY-MM-DD. */
void
call_day(time_t t, char *buf, size_t len)
{
	struct tm	 tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d", &tm);
}

/*
 * With the decision's reads: a caller already at the cap is refused (1)
 * before anything is unsealed.  The count itself is taken with the
 * call's row (call_cap()).
 */
int
call_cap_check(const struct auth *a, const char *day,
    struct call_capv *cv, struct vault_resp *resp)
{
	int64_t		 used = 0;

	memset(cv, 0, sizeof(*cv));
	if (ccache_cap_get(a->org_id, a->user_id, &cv->has,
	    &cv->cap) == -1) {
		db_fail(resp, "daily call cap");
		return (-1);
	}
	if (!cv->has)
		return (0);
	if (store_call_used(a->org_id, a->user_id, day, &used) == -1) {
		db_fail(resp, "daily call count");
		return (-1);
	}
	if (used < cv->cap)
		return (0);
	resp_error(resp, 429, "daily usage limit reached (%lld/%lld) — ask "
	    "an admin to raise your cap", (long long)used,
	    (long long)cv->cap);
	return (1);
}

/* One call counted: 0, or -1 with the refusal (429) in resp. */
int
call_cap(const struct auth *a, const char *day,
    const struct call_capv *cv, struct vault_resp *resp)
{
	int64_t		 used = 0;
	int		 rc;

	rc = store_call_cap_take(a->org_id, a->user_id, day, 1,
	    cv->has ? cv->cap : INT64_MAX);
	if (rc == 1 && (rc = store_call_used(a->org_id, a->user_id, day,
	    &used)) == 0) {
		resp_error(resp, 429, "daily usage limit reached (%lld/%lld) "
		    "— ask an admin to raise your cap", (long long)used,
		    (long long)cv->cap);
		return (-1);
	}
	if (rc == -1) {
		db_fail(resp, "daily call count");
		return (-1);
	}
	return (0);
}

/* The membership's cap and today's count, for the member views. */
int
call_usage(int64_t org, int64_t user, json_t *view)
{
	char		 day[16];
	int64_t		 cap, used = 0;
	int		 has;

	call_day(time(NULL), day, sizeof(day));
	if (store_call_cap_get(org, user, &has, &cap) == -1 ||
	    store_call_used(org, user, day, &used) == -1)
		return (-1);
	/* No cap is -1, as treg shows it. */
	json_object_set_new(view, "daily_call_cap", json_integer(has ? cap :
	    -1));
	json_object_set_new(view, "used_today", json_integer(used));
	return (0);
}
