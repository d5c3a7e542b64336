/*
 * vault_observed.c: GET /orgs/{id}/agents/observed, treg's roster of
 * the agents already at work under the org's people's own tokens.
 *
 * treg's client says which runtime it runs inside (X-Treg-Client:
 * "claude-code", "codex", ...; "cli" for a person at a prompt), and
 * every call, grant, report and server run keeps it (migration 15).
 * The roster is one row per (person, runtime) seen in the last 30 days:
 * {member, client, calls_30d, used_today, last_seen}, by member then
 * client, as treg's list_observed_agents() answers it.  Left out, as
 * treg leaves them out: a plain terminal ("cli") and rows that name no
 * runtime ("", older rows), which would list every person again, and
 * the machine identities (@agents.local), whose calls already carry
 * their own name.  Self-reported attribution, never authentication:
 * the roster only informs, and only an admin reads it.
 */

#include <sys/types.h>

#include <string.h>
#include <time.h>

#include "vault.h"

#define OBSERVED_DAYS	30	/* treg's window */
#define OBSERVED_MAX	1000	/* rows of one answer */

static void	observed_list(struct vault_req *, struct vault_resp *);
static int	observed_row(const struct store_observed_row *, void *);

const struct vault_route vault_observed_routes[] = {
	{ ROUTE_AGENTS_OBSERVED,	ROLE_VIEWER,	observed_list },
	{ ROUTE_NONE,			ROLE_NONE,	NULL }
};

static int
observed_row(const struct store_observed_row *r, void *arg)
{
	json_t	*list = arg, *o;

	if ((o = json_pack("{s:s,s:s,s:I,s:I,s:s}", "member", r->member,
	    "client", r->client, "calls_30d", (json_int_t)r->n, "used_today",
	    (json_int_t)r->today, "last_seen", r->last_seen)) == NULL)
		fatalx("%s: json_pack", __func__);
	json_array_append_new(list, o);
	return (0);
}

/*
 * The window is the last 30 days to the second, "today" the UTC day,
 * as treg counts them (its used_today is the UTC day's too).
 */
static void
observed_list(struct vault_req *req, struct vault_resp *resp)
{
	struct org_ctx	 ctx;
	json_t		*list;
	char		 since[32], today[32];
	time_t		 now;

	if (org_enter(req, resp, ROLE_ADMIN, &ctx) == -1)
		return;
	now = time(NULL);
	iso_time((int64_t)now - (int64_t)OBSERVED_DAYS * 86400, since,
	    sizeof(since));
	iso_time((int64_t)now - (int64_t)(now % 86400), today, sizeof(today));
	if ((list = json_array()) == NULL)
		fatalx("%s: json_array", __func__);
	if (store_observed(ctx.org_id, since, today, OBSERVED_MAX,
	    observed_row, list) == -1) {
		json_decref(list);
		db_fail(resp, "observed agents");
		return;
	}
	resp_ok(resp, list);
}
