/*
 * vault_run.c: placeholder, being written.
 */

#include "vault.h"

const struct vault_route vault_run_routes[] = {
	{ ROUTE_NONE, ROLE_NONE, NULL }
};
