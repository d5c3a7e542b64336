/*
 * vault_tool.c: placeholder, being written.
 */

#include "vault.h"

const struct vault_route vault_tool_routes[] = {
	{ ROUTE_NONE, ROLE_NONE, NULL }
};
