/*
 * catalog.c: the vendor CLIs of treg's catalog, as data (SPEC.md sections
 * 0, 4 and 7).  One row per CLI: where its key goes (an environment
 * variable or a flag), how it authenticates, the subcommands that would
 * print the injected key back or run other code with it (deny defaults,
 * applied to server runs and local grants alike unless a profile says
 * "deny_defaults": false), and, for a CLI tregd cannot drive, why.
 *
 * A tool picks a row up by its cli.bin: registration fills in what the
 * profile leaves out (auth_mechanism, inject, errors); the deny defaults
 * are added when a run or grant is checked, so a later catalog change
 * reaches every tool.  tregd.8 shows this table; keep the two alike.
 */

#include <string.h>

#include "catalog.h"
#include "log.h"

/* Deny patterns (PCRE2, as treg writes them in Python's dialect). */
#define AUTH_TOKEN	"(^|\\s)auth\\s+token(\\s|$)"
#define RUN_SUB		"(^|\\s)run(\\s|$)"

const struct catalog_cli catalog_clis[] = {
	{ "gcloud", "config_file", "CLOUDSDK_AUTH_ACCESS_TOKEN", NULL,
	    "token", { NULL }, NULL },
	{ "az", "device", NULL, NULL, NULL, { NULL },
	    "az has no token-override env var (device/browser login only) — "
	    "register an Azure service principal as an HTTP tool instead" },
	{ "supabase", "env", "SUPABASE_ACCESS_TOKEN", NULL, NULL, { NULL },
	    NULL },
	{ "openai", "env", "OPENAI_API_KEY", NULL, NULL, { NULL }, NULL },
	{ "stripe", "env", "STRIPE_API_KEY", NULL, NULL,
	    { "(^|\\s)--live\\b", NULL }, NULL },
	{ "gh", "env", "GH_TOKEN", NULL, NULL,
	    { "(^|\\s)(extension|alias)(\\s|$)", AUTH_TOKEN,
	    "--show-token\\b", NULL }, NULL },
	{ "glab", "env", "GITLAB_TOKEN", NULL, NULL, { NULL }, NULL },
	{ "render", "env", "RENDER_API_KEY", NULL, NULL, { NULL }, NULL },
	{ "vercel", "argv", NULL, "--token", NULL, { NULL }, NULL },
	{ "wrangler", "env", "CLOUDFLARE_API_TOKEN", NULL, NULL, { NULL },
	    NULL },
	{ "doctl", "env", "DIGITALOCEAN_ACCESS_TOKEN", NULL, NULL, { NULL },
	    NULL },
	{ "netlify", "env", "NETLIFY_AUTH_TOKEN", NULL, NULL, { NULL },
	    NULL },
	{ "heroku", "env", "HEROKU_API_KEY", NULL, NULL, { NULL }, NULL },
	{ "flyctl", "env", "FLY_API_TOKEN", NULL, NULL,
	    { AUTH_TOKEN, NULL }, NULL },
	{ "railway", "env", "RAILWAY_TOKEN", NULL, NULL, { NULL }, NULL },
	{ "neonctl", "env", "NEON_API_KEY", NULL, NULL, { NULL }, NULL },
	{ "pscale", "config_file", NULL, NULL, NULL, { NULL }, NULL },
	{ "turso", "env", "TURSO_API_TOKEN", NULL, NULL,
	    { AUTH_TOKEN, NULL }, NULL },
	{ "doppler", "env", "DOPPLER_TOKEN", NULL, NULL,
	    { RUN_SUB, "(^|\\s)secrets\\s+download(\\s|$)", NULL }, NULL },
	{ "infisical", "env", "INFISICAL_TOKEN", NULL, NULL,
	    { RUN_SUB, "(^|\\s)export(\\s|$)", NULL }, NULL },
	{ "sentry-cli", "env", "SENTRY_AUTH_TOKEN", NULL, NULL, { NULL },
	    NULL },
	{ NULL }
};

/* treg's output patterns that mean the org's key is bad. */
#define ERR_AUTH_PATTERN \
	"(?i)\\b401\\b|unauthorized|invalid.{0,10}(api.)?key|authentication"
#define ERR_AUTH_MESSAGE "the org's credential is invalid or expired"

const struct catalog_cli *
catalog_find(const char *bin)
{
	const struct catalog_cli	*c;

	if (bin == NULL)
		return (NULL);
	for (c = catalog_clis; c->bin != NULL; c++)
		if (strcmp(c->bin, bin) == 0)
			return (c);
	return (NULL);
}

json_t *
catalog_inject(const struct catalog_cli *c)
{
	json_t	*arr, *e = NULL;

	if ((arr = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (c->env != NULL)
		e = json_pack("{s:s, s:s, s:s}", "via", "env", "name", c->env,
		    "format", "{secret}");
	else if (c->argv_flag != NULL)
		e = json_pack("{s:s, s:[s, s]}", "via", "argv", "argv",
		    c->argv_flag, "{secret}");
	if (e != NULL && c->secret_field != NULL)
		json_object_set_new(e, "secret_field",
		    json_string(c->secret_field));
	if (e != NULL)
		json_array_append_new(arr, e);
	return (arr);
}

json_t *
catalog_errors(const struct catalog_cli *c)
{
	json_t	*v;

	if (c->unsupported != NULL)
		return (json_array());
	v = json_pack("[{s:s, s:s, s:s}]", "pattern", ERR_AUTH_PATTERN,
	    "verdict", "credential_invalid", "message", ERR_AUTH_MESSAGE);
	if (v == NULL)
		fatalx("%s: json_pack", __func__);
	return (v);
}

json_t *
catalog_effective_deny(json_t *cli, size_t *own)
{
	const struct catalog_cli	*c;
	json_t				*deny, *mine, *v;
	size_t				 i, j;
	int				 dup;

	if ((deny = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	mine = json_object_get(cli, "deny");
	json_array_foreach(mine, i, v)
		if (json_is_string(v))
			json_array_append(deny, v);
	if (own != NULL)
		*own = json_array_size(deny);
	if (json_is_false(json_object_get(cli, "deny_defaults")))
		return (deny);
	c = catalog_find(json_string_value(json_object_get(cli, "bin")));
	for (i = 0; c != NULL && c->deny[i] != NULL; i++) {
		dup = 0;
		json_array_foreach(mine, j, v)
			if (json_is_string(v) &&
			    strcmp(json_string_value(v), c->deny[i]) == 0)
				dup = 1;
		if (!dup)
			json_array_append_new(deny, json_string(c->deny[i]));
	}
	return (deny);
}

int
catalog_mechanism_injectable(const char *mech)
{
	return (mech == NULL || strcmp(mech, "env") == 0 ||
	    strcmp(mech, "argv") == 0);
}

json_t *
catalog_template(const char *name)
{
	const struct catalog_cli	*c;
	json_t				*t, *inject, *e;
	size_t				 i;

	if ((c = catalog_find(name)) != NULL && c->unsupported == NULL) {
		inject = catalog_inject(c);
		json_array_foreach(inject, i, e)
			json_object_set_new(e, "secret",
			    json_string("<local secret name>"));
		t = json_pack("{s:{s:s, s:b, s:s, s:o}}", "cli", "bin",
		    c->bin, "enabled", 1, "auth_mechanism", c->auth_mechanism,
		    "inject", inject);
	} else
		t = json_pack("{s:{s:s, s:b, s:[{s:s, s:s, s:s}]}}", "cli",
		    "bin", name, "enabled", 1, "inject", "secret",
		    "<local secret name>", "via", "env", "name", "<ENV_VAR>");
	if (t == NULL)
		fatalx("%s: json_pack", __func__);
	return (t);
}

/* 1 when pattern pat of a refusal came from the catalog, not from cli. */
int
catalog_deny_is_default(json_t *cli, const char *pat)
{
	json_t	*v;
	size_t	 i;

	json_array_foreach(json_object_get(cli, "deny"), i, v)
		if (json_is_string(v) && strcmp(json_string_value(v),
		    pat) == 0)
			return (0);
	return (1);
}

/* Why tregd cannot drive the CLI of profile cli, or NULL when it can. */
const char *
catalog_unsupported(json_t *cli)
{
	const struct catalog_cli	*c;

	if (!json_is_object(cli))
		return (NULL);
	c = catalog_find(json_string_value(json_object_get(cli, "bin")));
	return (c != NULL ? c->unsupported : NULL);
}

/*
 * server_runnable of a tool view: a profile whose bin the server may run
 * and whose key the server holds (env or argv, not the CLI's own login).
 */
int
catalog_server_runnable(json_t *cli, int allowed)
{
	if (!json_is_object(cli) || !allowed || catalog_unsupported(cli))
		return (0);
	return (catalog_mechanism_injectable(json_string_value(
	    json_object_get(cli, "auth_mechanism"))));
}

/* The same for a tool without a profile, by its name. */
const char *
catalog_unsupported_name(const char *name)
{
	const struct catalog_cli	*c;

	return ((c = catalog_find(name)) != NULL ? c->unsupported : NULL);
}
