/*
 * compat.c: treg's request forms that tregd takes as their explicit
 * equivalent, so that treg's own clients work unchanged (SPEC.md
 * section 4).  Each function rewrites a tool's spec in place before it is
 * validated, so the explicit form's checks and refusals apply to it
 * exactly: nothing here decides what is allowed.
 */

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "compat.h"
#include "log.h"
#include "vault.h"

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

/*
 * A deny rule's host as treg takes it: a whole URL is reduced to its
 * lower-cased authority, the port kept (treg keeps the URL's netloc:
 * a rule for host:8443 is not one for every port of the host), without
 * scheme, credentials, path or query.  0, or -1 when nothing of a host
 * is left or it does not fit.
 */
int
compat_deny_host(const char *in, char *out, size_t outlen)
{
	const char	*p, *end, *at;
	size_t		 n, i;

	if ((p = strstr(in, "://")) != NULL)
		p += 3;
	else
		p = in;
	end = p + strcspn(p, "/?#");
	if ((at = memchr(p, '@', end - p)) != NULL)
		p = at + 1;
	n = end - p;
	if (n == 0 || *p == ':' || n >= outlen)
		return (-1);
	for (i = 0; i < n; i++)
		out[i] = tolower((unsigned char)p[i]);
	out[n] = '\0';
	return (0);
}

/* An HTTP method (any case) in upper case; -1 when it is none. */
int
compat_http_method(const char *in, char *out, size_t outlen)
{
	static const char *const methods[] = {
		"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
		"TRACE", "CONNECT", NULL
	};
	size_t	 i;

	for (i = 0; methods[i] != NULL; i++)
		if (strcasecmp(in, methods[i]) == 0)
			return (strlcpy(out, methods[i], outlen) < outlen ?
			    0 : -1);
	return (-1);
}

/* An integer field of o is brought into lo..hi, as treg clamps it. */
void
compat_clamp(json_t *o, const char *field, json_int_t lo, json_int_t hi)
{
	json_t		*v;
	json_int_t	 n;

	v = json_object_get(o, field);
	if (!json_is_integer(v))
		return;
	n = json_integer_value(v);
	if (n < lo || n > hi)
		json_object_set_new(o, field, json_integer(n < lo ? lo : hi));
}

/* An address of the machine identities' domain: never a person's login. */
int
compat_agent_email(const char *email)
{
	const char	*at;

	if ((at = strrchr(email, '@')) == NULL)
		return (0);
	return (strcasecmp(at + 1, "agents.local") == 0);
}

/*
 * A tool's spec (POST /tools, PATCH /tools/{id}, one of a skill's tools)
 * in treg's forms, brought to tregd's before it is checked: the shorthand
 * becomes its binding, a profile without a bin names the tool's command.
 * What treg refuses that tregd would take is refused here: base_url null
 * on a PATCH (422), a CLI the catalog knows tregd cannot drive (409).
 * 0, or the status with err set.
 */
int
compat_tool_spec(json_t *spec, int local, int partial, char *err,
    size_t errlen)
{
	const char	*why;
	json_t		*v;

	if (!json_is_object(spec))
		return (0);
	if (partial && (v = json_object_get(spec, "base_url")) != NULL &&
	    json_is_null(v)) {
		snprintf(err, errlen, "field 'base_url' may not be null: a tool "
		    "always has one");
		return (422);
	}
	if (compat_tool_shorthand(spec, local, err, errlen) == -1)
		return (422);
	compat_cli_bin(spec, json_string_value(json_object_get(spec,
	    "name")));
	if ((why = catalog_unsupported(json_object_get(spec, "cli"))) !=
	    NULL) {
		snprintf(err, errlen, "'%s' is not supported: %s",
		    json_string_value(json_object_get(json_object_get(spec,
		    "cli"), "bin")), why);
		return (409);
	}
	return (0);
}

/* The secret ids a tool's bindings and inject entries name (a new array). */
json_t *
compat_tool_secret_ids(json_t *bindings, json_t *cli)
{
	json_t	*ids, *e, *id;
	size_t	 i;

	if ((ids = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	json_array_foreach(bindings, i, e)
		if (json_is_integer(id = json_object_get(e, "secret_id")))
			json_array_append(ids, id);
	json_array_foreach(json_object_get(cli, "inject"), i, e)
		if (json_is_integer(id = json_object_get(e, "secret_id")))
			json_array_append(ids, id);
	return (ids);
}

/* Whether ids (an array of integers, or NULL) holds id. */
int
compat_ids_have(json_t *ids, int64_t id)
{
	json_t	*v;
	size_t	 i;

	json_array_foreach(ids, i, v)
		if (json_integer_value(v) == id)
			return (1);
	return (0);
}

/*
 * treg's path of a local-run audit row: its (masked) argv joined by
 * spaces, as treg's GET /calls shows it; null when there is none.
 */
json_t *
compat_argv_path(json_t *argv)
{
	json_t	*out;
	char	*s;
	size_t	 len;

	if (!json_is_array(argv) || json_array_size(argv) == 0)
		return (json_null());
	s = argv_join(argv, &len);
	out = json_stringn(s, len);
	free(s);
	return (out != NULL ? out : json_null());
}
