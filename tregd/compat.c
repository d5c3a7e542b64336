/*
 * compat.c: treg's request forms that tregd takes as their explicit
 * equivalent, so that treg's own clients work unchanged (SPEC.md
 * section 4).  Each function rewrites a tool's spec in place before it is
 * validated, so the explicit form's checks and refusals apply to it
 * exactly: nothing here decides what is allowed.
 */

#include <stdio.h>
#include <string.h>

#include "compat.h"
#include "log.h"

/* treg's flat single-binding fields and the binding field each means. */
static const struct {
	const char	*flat;
	const char	*field;
} shorthand[] = {
	{ "secret_id",		"secret_id" },
	{ "secret",		"secret" },
	{ "injector",		"injector" },
	{ "auth_in",		"location" },
	{ "auth_name",		"name" },
	{ "auth_format",	"format" },
	{ "secret_field",	"secret_field" },
};
#define NSHORTHAND	(sizeof(shorthand) / sizeof(shorthand[0]))

/*
 * The top-level shorthand of spec, if any, becomes its one binding.
 * "secret" (a skill's local name) counts only where local names exist.
 * A null field counts as absent.  0, or -1 with err set (both forms).
 */
int
compat_tool_shorthand(json_t *spec, int local, char *err, size_t errlen)
{
	json_t	*b, *v, *bindings;
	size_t	 i;

	if (!json_is_object(spec))
		return (0);
	if ((b = json_object()) == NULL)
		fatal("%s: json_object", __func__);
	for (i = 0; i < NSHORTHAND; i++) {
		if (!local && strcmp(shorthand[i].flat, "secret") == 0)
			continue;
		v = json_object_get(spec, shorthand[i].flat);
		if (v != NULL && !json_is_null(v))
			json_object_set(b, shorthand[i].field, v);
	}
	for (i = 0; i < NSHORTHAND; i++)
		if (local || strcmp(shorthand[i].flat, "secret") != 0)
			json_object_del(spec, shorthand[i].flat);
	if (json_object_size(b) == 0) {
		json_decref(b);
		return (0);
	}
	bindings = json_object_get(spec, "bindings");
	if (bindings != NULL && !json_is_null(bindings)) {
		json_decref(b);
		snprintf(err, errlen, "give 'bindings' or the one-binding "
		    "shorthand (secret_id, injector, auth_in, auth_name, "
		    "auth_format, secret_field), not both");
		return (-1);
	}
	json_object_set_new(spec, "bindings", json_pack("[o]", b));
	return (0);
}

/* A CLI profile without a bin runs the command named like the tool. */
void
compat_cli_bin(json_t *spec, const char *name)
{
	json_t	*cli, *bin;

	cli = json_object_get(spec, "cli");
	if (!json_is_object(cli) || name == NULL)
		return;
	bin = json_object_get(cli, "bin");
	if (bin == NULL || json_is_null(bin))
		json_object_set_new(cli, "bin", json_string(name));
}
