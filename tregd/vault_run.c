/*
 * vault_run.c: placeholder, being written (server runs, grants, audit
 * reads, deny rules).
 */

#include "vault.h"

const struct vault_route vault_run_routes[] = {
	{ ROUTE_NONE, ROLE_NONE, NULL }
};

void
run_exit(struct imsg *imsg)
{
	fatalx("%s: no run in flight", __func__);
}

int
run_slots_used(void)
{
	return (0);
}

int
ctl_show_runs(const struct ctl_request *cr, json_t **reply)
{
	*reply = json_array();
	return (0);
}


json_t *
argv_mask(int64_t org, json_t *argv)
{
	return (json_deep_copy(argv));
}
