/*
 * vault_org.c: placeholder, being written.
 */

#include "vault.h"

const struct vault_route vault_org_routes[] = {
	{ ROUTE_NONE, ROLE_NONE, NULL }
};
