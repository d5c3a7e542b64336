/*
 * catalog.c: the vendor CLIs of treg's catalog, as data (SPEC.md sections
 * 0, 4 and 7).  One row per CLI: where its key goes (environment
 * variables, fields of a JSON key, or a flag), how it authenticates, the
 * commands and flags that would print the injected key back or run other
 * code with it (deny defaults, rules over the arguments' structure that
 * catalog_deny.c matches, applied to server runs and local grants alike
 * unless a profile says "deny_defaults": false), and, for a CLI tregd
 * cannot drive, why.
 *
 * A tool picks a row up by its cli.bin: registration fills in what the
 * profile leaves out (auth_mechanism, inject, errors); the deny defaults
 * are added when a run or grant is checked, so a later catalog change
 * reaches every tool.  tregd.8 shows this table; keep the two alike.
 */

#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "log.h"

/* What the deny defaults say a refused command would do. */
#define PRINTS_KEY	"prints the key"
#define JQ_ENV		"\\$\\s*ENV\\b|(?<![\\w.$\"])env\\b"

const struct catalog_cli catalog_clis[] = {
	{ .bin = "gcloud", .auth_mechanism = "config_file",
	    .env = { { "CLOUDSDK_AUTH_ACCESS_TOKEN", "token" } } },
	{ .bin = "az", .auth_mechanism = "device",
	    .unsupported = "az has no token-override env var (device/browser "
	    "login only) — register an Azure service principal as an HTTP "
	    "tool instead" },
	{ .bin = "supabase", .auth_mechanism = "env",
	    .env = { { "SUPABASE_ACCESS_TOKEN" } } },
	{ .bin = "openai", .auth_mechanism = "env",
	    .env = { { "OPENAI_API_KEY" } } },
	{ .bin = "stripe", .auth_mechanism = "env",
	    .env = { { "STRIPE_API_KEY" } },
	    .egress = "api.stripe.com files.stripe.com",
	    .deny = { { "", "--live", NULL, "uses the live-mode key" } } },
	{ .bin = "gh", .auth_mechanism = "env",
	    .env = { { "GH_TOKEN" } },
	    .home = "github.com api.github.com", .away = "GH_ENTERPRISE_TOKEN",
	    .egress = "api.github.com uploads.github.com github.com "
		"codeload.github.com objects.githubusercontent.com",
	    .deny = {
		{ "extension|extensions|ext", NULL, NULL,
		    "runs an extension's code with the key" },
		{ "alias", NULL, NULL, "defines commands, shell ones too" },
		{ "auth token", NULL, NULL, PRINTS_KEY },
		{ "auth git-credential", NULL, NULL, PRINTS_KEY },
		{ "auth status", "-t --show-token", NULL, PRINTS_KEY },
		{ "", "-q --jq", JQ_ENV,
		    "reads the environment, where the key is" } } },
	{ .bin = "glab", .auth_mechanism = "env",
	    .env = { { "GITLAB_TOKEN" } } },
	{ .bin = "render", .auth_mechanism = "env",
	    .env = { { "RENDER_API_KEY" } } },
	{ .bin = "vercel", .auth_mechanism = "env",
	    .env = { { "VERCEL_TOKEN" } },
	    .egress = "api.vercel.com vercel.com" },
	{ .bin = "wrangler", .auth_mechanism = "env",
	    .env = { { "CLOUDFLARE_API_TOKEN" } } },
	{ .bin = "doctl", .auth_mechanism = "env",
	    .env = { { "DIGITALOCEAN_ACCESS_TOKEN" } } },
	{ .bin = "netlify", .auth_mechanism = "env",
	    .env = { { "NETLIFY_AUTH_TOKEN" } } },
	{ .bin = "heroku", .auth_mechanism = "env",
	    .env = { { "HEROKU_API_KEY" } } },
	{ .bin = "flyctl", .auth_mechanism = "env",
	    .env = { { "FLY_API_TOKEN" } },
	    .deny = { { "auth token", NULL, NULL, PRINTS_KEY } } },
	{ .bin = "railway", .auth_mechanism = "env",
	    .env = { { "RAILWAY_TOKEN" } } },
	{ .bin = "neonctl", .auth_mechanism = "env",
	    .env = { { "NEON_API_KEY" } } },
	{ .bin = "pscale", .auth_mechanism = "config_file" },
	{ .bin = "turso", .auth_mechanism = "env",
	    .env = { { "TURSO_API_TOKEN" } },
	    .deny = { { "auth token", NULL, NULL, PRINTS_KEY } } },
	{ .bin = "doppler", .auth_mechanism = "env",
	    .env = { { "DOPPLER_TOKEN" } },
	    .deny = {
		{ "run", NULL, NULL, "runs any command with the key" },
		{ "secrets download", NULL, NULL,
		    "writes the secrets out" } } },
	{ .bin = "infisical", .auth_mechanism = "env",
	    .env = { { "INFISICAL_TOKEN" } },
	    .deny = {
		{ "run", NULL, NULL, "runs any command with the key" },
		{ "export", NULL, NULL, "writes the secrets out" } } },
	{ .bin = "sentry-cli", .auth_mechanism = "env",
	    .env = { { "SENTRY_AUTH_TOKEN" } } },
	/*
	 * One JSON secret {"access_key_id", "secret_access_key"}; a session
	 * token is a third entry of the profile's own (tregd.8), marked
	 * "sign": "aws-sigv4" too: the egress proxy signs each request
	 * again with the real key (SPEC 6a).
	 */
	{ .bin = "aws", .auth_mechanism = "env",
	    .env = { { "AWS_ACCESS_KEY_ID", "access_key_id", "aws-sigv4" },
		{ "AWS_SECRET_ACCESS_KEY", "secret_access_key",
		    "aws-sigv4" } },
	    .egress = "*.amazonaws.com",
	    .deny = {
		{ "configure export-credentials", NULL, NULL, PRINTS_KEY },
		{ "sts get-session-token|get-federation-token", NULL, NULL,
		    "makes a copy of the key" } } },
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

/* Whether host (an authority, maybe with a port) is one of list's. */
static int
host_in(const char *list, const char *host)
{
	size_t	 n, hl;

	if (host == NULL)
		return (1);
	hl = strcspn(host, ":");
	for (; *list != '\0'; list += n + strspn(list + n, " ")) {
		n = strcspn(list, " ");
		if (n == hl && strncasecmp(list, host, n) == 0)
			return (1);
	}
	return (0);
}

json_t *
catalog_inject(const struct catalog_cli *c, const char *host)
{
	const struct catalog_env	*ce;
	const char			*name;
	json_t				*arr, *e;

	if ((arr = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (c->argv_flag != NULL) {
		e = json_pack("{s:s, s:[s, s]}", "via", "argv", "argv",
		    c->argv_flag, "{secret}");
		if (e == NULL || json_array_append_new(arr, e) == -1)
			fatalx("%s: json_pack", __func__);
	}
	for (ce = c->env; ce->name != NULL; ce++) {
		name = ce->name;
		if (ce == c->env && c->away != NULL && !host_in(c->home, host))
			name = c->away;
		e = json_pack("{s:s, s:s, s:s}", "via", "env", "name", name,
		    "format", "{secret}");
		if (e == NULL)
			fatalx("%s: json_pack", __func__);
		if (ce->field != NULL)
			json_object_set_new(e, "secret_field",
			    json_string(ce->field));
		if (ce->sign != NULL)
			json_object_set_new(e, "sign", json_string(ce->sign));
		json_array_append_new(arr, e);
	}
	return (arr);
}

const char *
catalog_egress(const char *bin)
{
	const struct catalog_cli	*c;

	return ((c = catalog_find(bin)) != NULL ? c->egress : NULL);
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
		inject = catalog_inject(c, NULL);
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
 * and has installed, and whose key the server holds (env or argv, not
 * the CLI's own login).
 */
int
catalog_server_runnable(json_t *cli, int allowed, int installed)
{
	if (!json_is_object(cli) || !allowed || !installed ||
	    catalog_unsupported(cli))
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
