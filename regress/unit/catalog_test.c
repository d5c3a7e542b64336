/*
 * catalog_test: treg's CLI catalog as data (tregd/vault/catalog.c) and the
 * request forms of treg's clients (tregd/vault/compat.c): every built-in
 * run allow-list CLI has a row, deny defaults compile and catch what they
 * are for, a profile takes its catalog row's inject, errors and
 * mechanism, deny_defaults false drops the defaults, and the tool
 * shorthand becomes exactly one binding.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "compat.h"
#include "vault.h"

extern const char *const run_builtin_allow[];	/* conf.c */

static json_t	*parse(const char *);
static int	 denied(const char *, const char *const *);

static json_t *
parse(const char *s)
{
	json_error_t	 e;
	json_t		*v;

	if ((v = json_loads(s, JSON_DECODE_ANY, &e)) == NULL)
		atf_tc_fail("bad test JSON: %s", e.text);
	return (v);
}

/*
 * Whether a run of profile cli with args is refused by a deny pattern of
 * its own or a catalog default, as cli_deny_refuse() asks.
 */
static int
denied(const char *cli, const char *const *args)
{
	json_t		*c, *argv;
	const char	*why;
	char		 pat[DENY_LEN_MAX + 1];
	static int64_t	 tool = 1;
	int		 hit;

	c = parse(cli);
	argv = json_array();
	for (; *args != NULL; args++)
		json_array_append_new(argv, json_string(*args));
	hit = deny_match(tool++, c, argv, pat, sizeof(pat), &why) ||
	    catalog_deny(c, argv, pat, sizeof(pat), &why);
	json_decref(argv);
	json_decref(c);
	return (hit);
}

/* denied() of a bin's plain profile, with args as one string list. */
#define GH_DENIED(...) \
	denied("{\"bin\": \"gh\"}", (const char *const []){ __VA_ARGS__, NULL })
#define AWS_DENIED(...) \
	denied("{\"bin\": \"aws\"}", (const char *const []){ __VA_ARGS__, NULL })

ATF_TC_WITHOUT_HEAD(every_builtin_cli_has_a_catalog_row);
ATF_TC_BODY(every_builtin_cli_has_a_catalog_row, tc)
{
	const struct catalog_cli	*c;
	size_t				 i, j, n = 0;

	for (i = 0; run_builtin_allow[i] != NULL; i++)
		ATF_CHECK_MSG(catalog_find(run_builtin_allow[i]) != NULL,
		    "no catalog row for %s", run_builtin_allow[i]);
	for (c = catalog_clis; c->bin != NULL; c++) {
		n++;
		ATF_CHECK_MSG(bin_valid(c->bin), "bad bin %s", c->bin);
		ATF_CHECK(c->auth_mechanism != NULL);
		for (j = 0; c->env[j].name != NULL; j++)
			ATF_CHECK_MSG(env_name_refusal(c->env[j].name) ==
			    NULL, "%s injects a refused name", c->bin);
		ATF_CHECK(c->away == NULL ||
		    env_name_refusal(c->away) == NULL);
		/* The key never on the command line (/proc/PID/cmdline). */
		ATF_CHECK_MSG(c->argv_flag == NULL, "%s: key in argv", c->bin);
		ATF_CHECK_MSG((c->unsupported != NULL) ==
		    (strcmp(c->auth_mechanism, "device") == 0),
		    "%s: only device CLIs are unsupported", c->bin);
	}
	ATF_CHECK_EQ(n, i);
	ATF_CHECK(catalog_find("bash") == NULL);
	ATF_CHECK(catalog_find(NULL) == NULL);
}

ATF_TC_WITHOUT_HEAD(catalog_deny_defaults_compile);
ATF_TC_BODY(catalog_deny_defaults_compile, tc)
{
	const struct catalog_cli	*c;
	char				 err[256];
	size_t				 i;

	for (c = catalog_clis; c->bin != NULL; c++)
		for (i = 0; c->deny[i].what != NULL; i++) {
			ATF_CHECK(c->deny[i].path != NULL);
			ATF_CHECK(c->deny[i].value == NULL ||
			    c->deny[i].flags != NULL);
			ATF_CHECK_MSG(c->deny[i].value == NULL ||
			    deny_pattern_check(c->deny[i].value,
			    strlen(c->deny[i].value), err, sizeof(err)) == 0,
			    "%s: %s", c->bin, err);
		}
}

ATF_TC_WITHOUT_HEAD(deny_defaults_refuse_key_printing_subcommands);
ATF_TC_BODY(deny_defaults_refuse_key_printing_subcommands, tc)
{
	const char *const gh_token[] = { "auth", "token", NULL };
	const char *const gh_show[] = { "auth", "status", "--show-token",
	    NULL };
	const char *const gh_ext[] = { "extension", "install", "x", NULL };
	const char *const gh_ok[] = { "repo", "list", NULL };
	const char *const live[] = { "charges", "list", "--live", NULL };
	const char *const livemode[] = { "charges", "list", "--livemode",
	    NULL };
	const char *const run[] = { "run", "--", "env", NULL };
	const char *const dl[] = { "secrets", "download", NULL };
	const char *const exp[] = { "export", NULL };

	ATF_CHECK(denied("{\"bin\": \"gh\"}", gh_token));
	ATF_CHECK(denied("{\"bin\": \"gh\"}", gh_show));
	ATF_CHECK(denied("{\"bin\": \"gh\"}", gh_ext));
	ATF_CHECK(!denied("{\"bin\": \"gh\"}", gh_ok));
	ATF_CHECK(denied("{\"bin\": \"stripe\"}", live));
	ATF_CHECK(!denied("{\"bin\": \"stripe\"}", livemode));
	ATF_CHECK(denied("{\"bin\": \"flyctl\"}", gh_token));
	ATF_CHECK(denied("{\"bin\": \"turso\"}", gh_token));
	ATF_CHECK(denied("{\"bin\": \"doppler\"}", run));
	ATF_CHECK(denied("{\"bin\": \"doppler\"}", dl));
	ATF_CHECK(denied("{\"bin\": \"infisical\"}", run));
	ATF_CHECK(denied("{\"bin\": \"infisical\"}", exp));
	/* Not the catalog's CLI: its defaults do not apply. */
	ATF_CHECK(!denied("{\"bin\": \"sh\"}", gh_token));
}

ATF_TC_WITHOUT_HEAD(deny_defaults_false_keeps_only_the_own_list);
ATF_TC_BODY(deny_defaults_false_keeps_only_the_own_list, tc)
{
	const char *const gh_token[] = { "auth", "token", NULL };
	const char *const del[] = { "repo", "delete", NULL };
	const char *const environ[] = { "api", "-F", "bio=@/proc/self/environ",
	    NULL };

	ATF_CHECK(!denied("{\"bin\": \"gh\", \"deny_defaults\": false}",
	    gh_token));
	ATF_CHECK(!denied("{\"bin\": \"gh\", \"deny_defaults\": false}",
	    environ));
	ATF_CHECK(denied("{\"bin\": \"gh\", \"deny_defaults\": false, "
	    "\"deny\": [\"delete\"]}", del));
	/* The own list and the defaults, both. */
	ATF_CHECK(denied("{\"bin\": \"gh\", \"deny\": [\"delete\"]}", del));
	ATF_CHECK(denied("{\"bin\": \"gh\", \"deny\": [\"delete\"]}",
	    gh_token));
}

ATF_TC_WITHOUT_HEAD(deny_defaults_match_commands_and_flags_not_words);
ATF_TC_BODY(deny_defaults_match_commands_and_flags_not_words, tc)
{
	/* Each spelling of a refused command or flag. */
	ATF_CHECK(GH_DENIED("auth", "token"));
	ATF_CHECK(GH_DENIED("auth", "token", "--hostname", "x"));
	ATF_CHECK(GH_DENIED("auth", "status", "-t"));
	ATF_CHECK(GH_DENIED("auth", "status", "--show-token"));
	ATF_CHECK(GH_DENIED("auth", "status", "--show-token=true"));
	ATF_CHECK(GH_DENIED("auth", "status", "-th", "github.com"));
	ATF_CHECK(GH_DENIED("auth", "status", "-h", "github.com", "-t"));
	ATF_CHECK(GH_DENIED("auth", "-t", "status"));
	ATF_CHECK(GH_DENIED("auth", "git-credential", "get"));
	ATF_CHECK(GH_DENIED("extension", "install", "o/gh-x"));
	ATF_CHECK(GH_DENIED("ext", "exec", "x"));
	ATF_CHECK(GH_DENIED("extensions", "list"));
	ATF_CHECK(GH_DENIED("-R", "o/r", "extension", "install", "x"));
	ATF_CHECK(GH_DENIED("--repo", "o/r", "alias", "set", "x", "y"));
	ATF_CHECK(GH_DENIED("api", "/user", "--jq", "$ENV.GH_TOKEN"));
	ATF_CHECK(GH_DENIED("api", "/user", "-q", "env | .GH_TOKEN"));
	ATF_CHECK(GH_DENIED("api", "/user", "--jq=$ENV"));
	ATF_CHECK(GH_DENIED("api", "/user", "-q$ ENV"));
	/* The same words as values, or as arguments of other commands. */
	ATF_CHECK(!GH_DENIED("search", "repos", "alias"));
	ATF_CHECK(!GH_DENIED("issue", "create", "--title",
	    "Support alias in config", "--body", "x"));
	ATF_CHECK(!GH_DENIED("issue", "comment", "1", "--body",
	    "rotate the auth token"));
	ATF_CHECK(!GH_DENIED("issue", "create", "-t", "auth status -t"));
	ATF_CHECK(!GH_DENIED("repo", "view", "extension"));
	ATF_CHECK(!GH_DENIED("auth", "status"));
	ATF_CHECK(!GH_DENIED("auth", "status", "-h", "github.com"));
	ATF_CHECK(!GH_DENIED("api", "/user", "--jq", ".login"));
	ATF_CHECK(!GH_DENIED("api", "/repos/o/r/deployments", "--jq",
	    ".[].environment, .[].env"));
	ATF_CHECK(!GH_DENIED("api", "/user", "-t", "{{.env}}"));
	ATF_CHECK(!GH_DENIED("pr", "list", "--search", "--show-token"));
	ATF_CHECK(!GH_DENIED("repo", "list"));
	/* aws: the commands that print or copy the key. */
	ATF_CHECK(AWS_DENIED("configure", "export-credentials"));
	ATF_CHECK(AWS_DENIED("--region", "eu-west-1", "configure",
	    "export-credentials", "--format", "env"));
	ATF_CHECK(AWS_DENIED("sts", "get-session-token"));
	ATF_CHECK(!AWS_DENIED("sts", "get-caller-identity"));
	ATF_CHECK(!AWS_DENIED("s3", "ls", "s3://configure/export-credentials"));
	ATF_CHECK(!AWS_DENIED("configure", "list"));
}

ATF_TC_WITHOUT_HEAD(process_file_reads_are_refused_in_every_spelling);
ATF_TC_BODY(process_file_reads_are_refused_in_every_spelling, tc)
{
	const char *const bad[] = {
		"/proc/self/environ", "/proc/1/environ", "/proc",
		"//proc//self/environ", "/./proc/self/cmdline",
		"/dev/../proc/self/mem", "/dev/fd/3", "/dev/stdin",
		"/dev/fd/../environ", "/dev//fd/0",
		"../../../../../proc/self/environ",
		"./../../../../../../proc/thread-self/environ",
		"~/../../../../proc/self/environ",
		"$HOME/../../../../proc/self/environ",
		"${TMPDIR}/../../../../../proc/self/environ",
		NULL
	};
	const char *const good[] = {
		"/procfs/x", "/etc/passwd", "./notes.md", "../notes.md",
		"proc/self/environ", "/home/me/proc/self/environ",
		"/dev/null", "/dev/fdx", "see /proc/self/environ",
		"~/notes.md", "$HOME/notes.md", "", "/", ".", "..",
		NULL
	};
	size_t	 i;

	for (i = 0; bad[i] != NULL; i++)
		ATF_CHECK_MSG(catalog_path_is_process_file(bad[i]), "%s",
		    bad[i]);
	for (i = 0; good[i] != NULL; i++)
		ATF_CHECK_MSG(!catalog_path_is_process_file(good[i]), "%s",
		    good[i]);

	/* Where a CLI reads a file: whole, after = or @, behind file:. */
	ATF_CHECK(GH_DENIED("api", "-X", "PATCH", "/user", "-F",
	    "bio=@/proc/self/environ"));
	ATF_CHECK(GH_DENIED("api", "--field=bio=@/proc/1/environ"));
	ATF_CHECK(GH_DENIED("api", "-Fbio=@/proc/self/environ"));
	ATF_CHECK(GH_DENIED("api", "--input", "/proc/self/environ"));
	ATF_CHECK(GH_DENIED("api", "--input=/proc/self/environ"));
	ATF_CHECK(GH_DENIED("api", "-f", "bio=@/dev/fd/../environ"));
	ATF_CHECK(GH_DENIED("issue", "create", "-F", "/proc/self/environ"));
	ATF_CHECK(GH_DENIED("gist", "create", "--", "/proc/self/environ"));
	ATF_CHECK(AWS_DENIED("s3", "cp", "/proc/self/environ", "s3://b/k"));
	ATF_CHECK(AWS_DENIED("iam", "tag-user", "--tags",
	    "file:///proc/self/environ"));
	ATF_CHECK(AWS_DENIED("s3api", "put-object", "--body",
	    "fileb://$HOME/../../../../../proc/self/environ"));
	/* Text that mentions a process file reads nothing. */
	ATF_CHECK(!GH_DENIED("issue", "comment", "1", "--body",
	    "gh read /proc/self/environ, see the report"));
	ATF_CHECK(!GH_DENIED("api", "-F", "bio=@notes.md"));
	/* Not a catalog CLI: its profile's own rules only. */
	ATF_CHECK(!denied("{\"bin\": \"sh\"}", (const char *const []){
	    "/proc/self/environ", NULL }));
}

ATF_TC_WITHOUT_HEAD(gh_on_another_host_gets_the_enterprise_variable);
ATF_TC_BODY(gh_on_another_host_gets_the_enterprise_variable, tc)
{
	json_t	*in, *out;
	char	 err[256];

	in = parse("{\"bin\": \"gh\"}");
	ATF_REQUIRE(cli_check_host(in, "api.github.com", 0, &out, err,
	    sizeof(err)) == 0);
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(out, "inject"), 0), "name")), "GH_TOKEN");
	json_decref(out);
	ATF_REQUIRE(cli_check_host(in, "ghe.example.com:8443", 0, &out, err,
	    sizeof(err)) == 0);
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(out, "inject"), 0), "name")),
	    "GH_ENTERPRISE_TOKEN");
	json_decref(out);
	json_decref(in);
	/* aws: one JSON key, two variables. */
	in = parse("{\"bin\": \"aws\"}");
	ATF_REQUIRE(cli_check(in, 0, &out, err, sizeof(err)) == 0);
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(out, "inject"), 1), "name")),
	    "AWS_SECRET_ACCESS_KEY");
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(out, "inject"), 1), "secret_field")),
	    "secret_access_key");
	json_decref(out);
	json_decref(in);
}

ATF_TC_WITHOUT_HEAD(profile_takes_what_the_catalog_knows);
ATF_TC_BODY(profile_takes_what_the_catalog_knows, tc)
{
	json_t	*in, *out;
	char	 err[256];

	in = parse("{\"bin\": \"gh\"}");
	ATF_REQUIRE(cli_check(in, 0, &out, err, sizeof(err)) == 0);
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(out, "inject"), 0), "name")), "GH_TOKEN");
	ATF_CHECK_STREQ(json_string_value(json_object_get(out,
	    "auth_mechanism")), "env");
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(out, "errors"), 0), "verdict")),
	    "credential_invalid");
	json_decref(out);
	json_decref(in);

	/* An explicit empty inject stays empty (a self-authenticating CLI). */
	in = parse("{\"bin\": \"gh\", \"inject\": []}");
	ATF_REQUIRE(cli_check(in, 0, &out, err, sizeof(err)) == 0);
	ATF_CHECK_EQ(json_array_size(json_object_get(out, "inject")), 0);
	json_decref(out);
	json_decref(in);

	/* vercel reads VERCEL_TOKEN: the key stays off the command line. */
	in = parse("{\"bin\": \"vercel\"}");
	ATF_REQUIRE(cli_check(in, 0, &out, err, sizeof(err)) == 0);
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(out, "inject"), 0), "name")), "VERCEL_TOKEN");
	ATF_CHECK_STREQ(json_string_value(json_object_get(out,
	    "auth_mechanism")), "env");
	json_decref(out);
	json_decref(in);

	in = parse("{\"bin\": \"pscale\"}");
	ATF_REQUIRE(cli_check(in, 0, &out, err, sizeof(err)) == 0);
	ATF_CHECK(!catalog_mechanism_injectable(json_string_value(
	    json_object_get(out, "auth_mechanism"))));
	json_decref(out);
	json_decref(in);
}

ATF_TC_WITHOUT_HEAD(cli_errors_are_validated_and_kept);
ATF_TC_BODY(cli_errors_are_validated_and_kept, tc)
{
	json_t	*in, *out, *e;
	char	 err[256];

	/* The shapes refused are in validate_test's cli_profile_refusals. */
	in = parse("{\"bin\": \"sh\", \"deny_defaults\": \"no\"}");
	ATF_REQUIRE(cli_check(in, 0, &out, err, sizeof(err)) == -1);
	ATF_CHECK(strstr(err, "boolean") != NULL);
	json_decref(in);
	in = parse("{\"bin\": \"sh\", \"errors\": [{\"pattern\": \"(\"}]}");
	ATF_REQUIRE(cli_check(in, 0, &out, err, sizeof(err)) == -1);
	ATF_CHECK(strstr(err, "regex") != NULL);
	json_decref(in);

	in = parse("{\"bin\": \"sh\", \"deny_defaults\": false, \"errors\": "
	    "[{\"pattern\": \"quota\", \"verdict\": \"unknown_error\", "
	    "\"message\": \"out of quota\"}, {\"pattern\": \"401\"}]}");
	ATF_REQUIRE_MSG(cli_check(in, 0, &out, err, sizeof(err)) == 0, "%s",
	    err);
	ATF_CHECK(json_is_false(json_object_get(out, "deny_defaults")));
	e = json_array_get(json_object_get(out, "errors"), 0);
	ATF_CHECK_STREQ(json_string_value(json_object_get(e, "message")),
	    "out of quota");
	e = json_array_get(json_object_get(out, "errors"), 1);
	ATF_CHECK_STREQ(json_string_value(json_object_get(e, "verdict")),
	    "unknown_error");
	json_decref(out);
	json_decref(in);
}

ATF_TC_WITHOUT_HEAD(shorthand_becomes_one_binding);
ATF_TC_BODY(shorthand_becomes_one_binding, tc)
{
	json_t	*spec, *b, *out;
	char	 err[256];

	spec = parse("{\"name\": \"demo\", \"secret_id\": 7, \"injector\": "
	    "\"env\", \"auth_in\": \"header\", \"auth_name\": \"X-Key\", "
	    "\"auth_format\": \"{secret}\"}");
	ATF_REQUIRE(compat_tool_shorthand(spec, 0, err, sizeof(err)) == 0);
	ATF_CHECK(json_object_get(spec, "secret_id") == NULL);
	ATF_CHECK(json_object_get(spec, "auth_name") == NULL);
	ATF_REQUIRE_EQ(json_array_size(json_object_get(spec, "bindings")), 1);
	ATF_REQUIRE(bindings_check(json_object_get(spec, "bindings"), 0, &out,
	    err, sizeof(err)) == 0);
	b = json_array_get(out, 0);
	ATF_CHECK_EQ(json_integer_value(json_object_get(b, "secret_id")), 7);
	ATF_CHECK_STREQ(json_string_value(json_object_get(b, "location")),
	    "header");
	ATF_CHECK_STREQ(json_string_value(json_object_get(b, "name")),
	    "X-Key");
	ATF_CHECK_STREQ(json_string_value(json_object_get(b, "format")),
	    "{secret}");
	json_decref(out);
	json_decref(spec);

	/* Nothing of the shorthand: the spec is left as it is. */
	spec = parse("{\"name\": \"demo\", \"secret_id\": null}");
	ATF_REQUIRE(compat_tool_shorthand(spec, 0, err, sizeof(err)) == 0);
	ATF_CHECK(json_object_get(spec, "bindings") == NULL);
	json_decref(spec);

	/* Both forms at once: which would win is a guess; refused. */
	spec = parse("{\"secret_id\": 1, \"bindings\": []}");
	ATF_CHECK(compat_tool_shorthand(spec, 0, err, sizeof(err)) == -1);
	ATF_CHECK(strstr(err, "not both") != NULL);
	json_decref(spec);

	/* A binding's name may be left out, not given as null. */
	spec = parse("[{\"secret_id\": 1, \"name\": null}]");
	ATF_CHECK(bindings_check(spec, 0, &out, err, sizeof(err)) == -1);
	ATF_CHECK(strstr(err, "'name' may not be null") != NULL);
	json_decref(spec);

	/* A bad shorthand fails as the same binding would. */
	spec = parse("{\"secret_id\": 1, \"injector\": \"telepathy\"}");
	ATF_REQUIRE(compat_tool_shorthand(spec, 0, err, sizeof(err)) == 0);
	ATF_CHECK(bindings_check(json_object_get(spec, "bindings"), 0, &out,
	    err, sizeof(err)) == -1);
	ATF_CHECK(strstr(err, "injector") != NULL);
	json_decref(spec);
}

ATF_TC_WITHOUT_HEAD(cli_bin_defaults_to_the_tool_name);
ATF_TC_BODY(cli_bin_defaults_to_the_tool_name, tc)
{
	json_t	*spec;

	spec = parse("{\"name\": \"gh\", \"cli\": {\"enabled\": true}}");
	compat_cli_bin(spec, "gh");
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_object_get(
	    spec, "cli"), "bin")), "gh");
	json_decref(spec);
	spec = parse("{\"cli\": {\"bin\": \"sh\"}}");
	compat_cli_bin(spec, "other");
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_object_get(
	    spec, "cli"), "bin")), "sh");
	json_decref(spec);
}

ATF_TC_WITHOUT_HEAD(server_runnable_needs_a_key_the_server_holds);
ATF_TC_BODY(server_runnable_needs_a_key_the_server_holds, tc)
{
	json_t	*c;

	c = parse("{\"bin\": \"gh\", \"auth_mechanism\": \"env\"}");
	ATF_CHECK(catalog_server_runnable(c, 1, 1));
	ATF_CHECK(!catalog_server_runnable(c, 0, 1));
	/* Allowed but not installed on the host. */
	ATF_CHECK(!catalog_server_runnable(c, 1, 0));
	json_decref(c);
	c = parse("{\"bin\": \"gcloud\", \"auth_mechanism\": "
	    "\"config_file\"}");
	ATF_CHECK(!catalog_server_runnable(c, 1, 1));
	json_decref(c);
	c = parse("{\"bin\": \"az\", \"auth_mechanism\": \"env\"}");
	ATF_CHECK(!catalog_server_runnable(c, 1, 1));
	ATF_CHECK(strstr(catalog_unsupported(c), "service principal") != NULL);
	json_decref(c);
	ATF_CHECK(!catalog_server_runnable(NULL, 1, 1));
}

ATF_TC_WITHOUT_HEAD(tool_spec_in_treg_forms);
ATF_TC_BODY(tool_spec_in_treg_forms, tc)
{
	json_t	*spec, *ids;
	char	 err[256];

	spec = parse("{\"name\": \"gh\", \"secret_id\": 3, "
	    "\"cli\": {\"enabled\": true, \"inject\": [{\"name\": "
	    "\"X\", \"secret_id\": 4}]}}");
	ATF_REQUIRE(compat_tool_spec(spec, 0, 0, err, sizeof(err)) == 0);
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_object_get(
	    spec, "cli"), "bin")), "gh");
	ids = compat_tool_secret_ids(json_object_get(spec, "bindings"),
	    json_object_get(spec, "cli"));
	ATF_CHECK(compat_ids_have(ids, 3) && compat_ids_have(ids, 4));
	ATF_CHECK(!compat_ids_have(ids, 5));
	json_decref(ids);
	json_decref(spec);

	ids = parse("[\"list\", \"--all\"]");
	spec = compat_argv_path(ids);
	ATF_CHECK_STREQ(json_string_value(spec), "list --all");
	json_decref(spec);
	json_decref(ids);
	spec = compat_argv_path(NULL);
	ATF_CHECK(json_is_null(spec));
	json_decref(spec);
	ATF_CHECK(catalog_unsupported_name("az") != NULL);
	ATF_CHECK(catalog_unsupported_name("gh") == NULL);

	spec = parse("{\"base_url\": null}");
	ATF_CHECK(compat_tool_spec(spec, 0, 1, err, sizeof(err)) == 422);
	ATF_CHECK(strstr(err, "base_url") != NULL);
	ATF_CHECK(compat_tool_spec(spec, 0, 0, err, sizeof(err)) == 0);
	json_decref(spec);

	spec = parse("{\"name\": \"azure\", \"cli\": {\"bin\": \"az\"}}");
	ATF_CHECK(compat_tool_spec(spec, 0, 0, err, sizeof(err)) == 409);
	ATF_CHECK(strstr(err, "'az' is not supported") != NULL);
	json_decref(spec);
}

ATF_TC_WITHOUT_HEAD(template_names_the_catalog_variable);
ATF_TC_BODY(template_names_the_catalog_variable, tc)
{
	json_t	*t;

	t = catalog_template("stripe");
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(json_object_get(t, "cli"), "inject"), 0),
	    "name")), "STRIPE_API_KEY");
	json_decref(t);
	t = catalog_template("mytool");
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_object_get(t,
	    "cli"), "bin")), "mytool");
	json_decref(t);
}

ATF_TC_WITHOUT_HEAD(deny_host_url_is_reduced_to_its_authority);
ATF_TC_BODY(deny_host_url_is_reduced_to_its_authority, tc)
{
	const char *const cases[][2] = {
		{ "api.example.com", "api.example.com" },
		{ "API.Example.COM", "api.example.com" },
		{ "https://API.example.com/v1/x?y=1", "api.example.com" },
		{ "http://user:pw@api.example.com:8443/",
		    "api.example.com:8443" },
		{ "api.example.com:443", "api.example.com:443" },
		{ "https://[2001:DB8::1]:443/x", "[2001:db8::1]:443" },
		{ "2001:db8::1", "2001:db8::1" },
	};
	char	 out[64];
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ATF_REQUIRE_MSG(compat_deny_host(cases[i][0], out,
		    sizeof(out)) == 0, "%s", cases[i][0]);
		ATF_CHECK_STREQ_MSG(out, cases[i][1], "%s", cases[i][0]);
	}
	ATF_CHECK(compat_deny_host("https:///path", out, sizeof(out)) == -1);
	ATF_CHECK(compat_deny_host("", out, sizeof(out)) == -1);
}

ATF_TC_WITHOUT_HEAD(http_methods_only);
ATF_TC_BODY(http_methods_only, tc)
{
	char	 out[16];

	ATF_CHECK(compat_http_method("delete", out, sizeof(out)) == 0);
	ATF_CHECK_STREQ(out, "DELETE");
	ATF_CHECK(compat_http_method("FETCH", out, sizeof(out)) == -1);
	ATF_CHECK(compat_http_method("GET ", out, sizeof(out)) == -1);
}

ATF_TC_WITHOUT_HEAD(clamp_and_agent_addresses);
ATF_TC_BODY(clamp_and_agent_addresses, tc)
{
	json_t	*o;

	o = parse("{\"a\": 0, \"b\": 100000, \"c\": 5, \"d\": \"x\"}");
	compat_clamp(o, "a", 1, 3650);
	compat_clamp(o, "b", 1, 3650);
	compat_clamp(o, "c", 1, 3650);
	compat_clamp(o, "d", 1, 3650);
	ATF_CHECK_EQ(json_integer_value(json_object_get(o, "a")), 1);
	ATF_CHECK_EQ(json_integer_value(json_object_get(o, "b")), 3650);
	ATF_CHECK_EQ(json_integer_value(json_object_get(o, "c")), 5);
	ATF_CHECK(json_is_string(json_object_get(o, "d")));
	json_decref(o);
	ATF_CHECK(compat_agent_email("agent-x-bot@agents.local"));
	ATF_CHECK(compat_agent_email("Bot@AGENTS.LOCAL"));
	ATF_CHECK(!compat_agent_email("agents.local@example.com"));
	ATF_CHECK(!compat_agent_email("nobody"));
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, every_builtin_cli_has_a_catalog_row);
	ATF_TP_ADD_TC(tp, catalog_deny_defaults_compile);
	ATF_TP_ADD_TC(tp, deny_defaults_refuse_key_printing_subcommands);
	ATF_TP_ADD_TC(tp, deny_defaults_false_keeps_only_the_own_list);
	ATF_TP_ADD_TC(tp, deny_defaults_match_commands_and_flags_not_words);
	ATF_TP_ADD_TC(tp, process_file_reads_are_refused_in_every_spelling);
	ATF_TP_ADD_TC(tp, gh_on_another_host_gets_the_enterprise_variable);
	ATF_TP_ADD_TC(tp, profile_takes_what_the_catalog_knows);
	ATF_TP_ADD_TC(tp, cli_errors_are_validated_and_kept);
	ATF_TP_ADD_TC(tp, shorthand_becomes_one_binding);
	ATF_TP_ADD_TC(tp, cli_bin_defaults_to_the_tool_name);
	ATF_TP_ADD_TC(tp, template_names_the_catalog_variable);
	ATF_TP_ADD_TC(tp, tool_spec_in_treg_forms);
	ATF_TP_ADD_TC(tp, server_runnable_needs_a_key_the_server_holds);
	ATF_TP_ADD_TC(tp, deny_host_url_is_reduced_to_its_authority);
	ATF_TP_ADD_TC(tp, http_methods_only);
	ATF_TP_ADD_TC(tp, clamp_and_agent_addresses);
	return (atf_no_error());
}
