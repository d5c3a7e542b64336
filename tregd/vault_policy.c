/*
 * vault_policy.c: placeholder, being written (deny rules, local grants,
 * run reports, /calls, /health).
 */

#include "vault.h"

const struct vault_route vault_policy_routes[] = {
	{ ROUTE_NONE, ROLE_NONE, NULL }
};

int
deny_check(const struct auth *a, const char *host, const char *path,
    const char *method, struct vault_resp *resp)
{
	return (0);
}

int
ctl_show_audit(const struct ctl_request *cr, json_t **reply)
{
	*reply = json_array();
	return (0);
}
