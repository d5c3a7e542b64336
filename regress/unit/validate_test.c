/*
 * validate_test: the registry's pure checks (tregd/vault/validate.c): the
 * base_url SSRF guard in every numeric spelling, env names that would
 * hijack a CLI, bin names, templates, companion file paths, and the
 * canonical form of bindings and CLI profiles.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "vault.h"

static int	 url_ok(const char *, int, char *, size_t);
static json_t	*parse(const char *);

static int
url_ok(const char *url, int allow_private, char *host, size_t hostlen)
{
	char	 err[256], h[HOST_LEN_MAX];

	if (host == NULL) {
		host = h;
		hostlen = sizeof(h);
	}
	return (url_check_base(url, allow_private, host, hostlen, err,
	    sizeof(err)) == 0);
}

static json_t *
parse(const char *s)
{
	json_error_t	 e;
	json_t		*v;

	v = json_loads(s, JSON_DECODE_ANY, &e);
	if (v == NULL)
		atf_tc_fail("bad test JSON: %s", e.text);
	return (v);
}

ATF_TC_WITHOUT_HEAD(base_url_refuses_internal_spellings);
ATF_TC_BODY(base_url_refuses_internal_spellings, tc)
{
	const char *const refused[] = {
		"http://127.0.0.1/", "http://127.0.0.1:8080/x",
		"http://2130706433/", "http://0x7f000001/",
		"http://0X7F000001/", "http://127.1/", "http://127.0.1/",
		"http://0177.0.0.1/", "http://0177.1/", "http://017700000001/",
		"http://0x7f.1/", "http://127.0.0.1./",
		"http://[::1]/", "http://[::ffff:127.0.0.1]/",
		"http://[::ffff:7f00:1]/", "http://[0:0:0:0:0:0:0:1]:80/",
		"http://[::]/", "http://[fe80::1]/", "http://[fc00::1]/",
		"http://[fd12:3456::1]/", "http://[ff02::1]/",
		"http://[64:ff9b::a9fe:a9fe]/", "http://[2002:7f00:1::]/",
		"http://[2001:db8::1]/", "http://[::127.0.0.1]/",
		"http://10.1.2.3/", "http://172.16.0.1/",
		"http://172.31.255.255/",
		"http://192.168.1.1/", "http://100.64.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://0.0.0.0/", "http://0/", "http://224.0.0.1/",
		"http://255.255.255.255/", "http://240.0.0.1/",
		"http://localhost/", "http://LOCALHOST:9000/",
		"http://localhost./", "http://foo.localhost/",
		"http://foo.local/", "http://printer.LOCAL/",
		"http://x.internal/", "http://metadata.google.internal/",
		NULL
	};
	size_t	 i;

	for (i = 0; refused[i] != NULL; i++)
		ATF_CHECK_MSG(!url_ok(refused[i], 0, NULL, 0),
		    "%s was accepted", refused[i]);
}

ATF_TC_WITHOUT_HEAD(base_url_accepts_public_hosts);
ATF_TC_BODY(base_url_accepts_public_hosts, tc)
{
	const char *const ok[] = {
		"https://api.example.com", "https://api.example.com/v1",
		"http://8.8.8.8/", "https://[2606:4700::1111]/",
		"https://172.32.0.1/", "https://100.128.0.1/",
		"https://[::ffff:8.8.8.8]/", "https://1e100.net/",
		"https://my_host.example.org:8443/path?q=1",
		"https://api.local.example.com/",
		NULL
	};
	size_t	 i;

	for (i = 0; ok[i] != NULL; i++)
		ATF_CHECK_MSG(url_ok(ok[i], 0, NULL, 0), "%s was refused",
		    ok[i]);
}

ATF_TC_WITHOUT_HEAD(base_url_allow_private_relaxes_only_addresses);
ATF_TC_BODY(base_url_allow_private_relaxes_only_addresses, tc)
{
	ATF_CHECK(url_ok("http://127.0.0.1:9/", 1, NULL, 0));
	ATF_CHECK(url_ok("http://localhost/", 1, NULL, 0));
	ATF_CHECK(url_ok("http://[::1]:8080/", 1, NULL, 0));
	/* Shape rules hold regardless. */
	ATF_CHECK(!url_ok("ftp://example.com/", 1, NULL, 0));
	ATF_CHECK(!url_ok("http://user:pw@example.com/", 1, NULL, 0));
	ATF_CHECK(!url_ok("http:///path", 1, NULL, 0));
}

ATF_TC_WITHOUT_HEAD(base_url_refuses_bad_shapes);
ATF_TC_BODY(base_url_refuses_bad_shapes, tc)
{
	const char *const bad[] = {
		"", "example.com", "ftp://example.com/", "file:///etc/passwd",
		"javascript:alert(1)", "http://", "https:///x",
		"http://user@example.com/", "http://a:b@example.com/",
		"http://example.com:0/", "http://example.com:65536/",
		"http://example.com:/", "http://example.com:8a/",
		"http://exa mple.com/", "http://example.com\\@evil.com/",
		"http://[::1/", "http://[fe80::1%25eth0]/", "http://[]/",
		"http://256.1.1.1/", "http://1.2.3.4.5/", "http://09.1.1.1/",
		"http://example.123/", "http://-bad..name/", "http://%41.com/",
		NULL
	};
	size_t	 i;

	for (i = 0; bad[i] != NULL; i++)
		ATF_CHECK_MSG(!url_ok(bad[i], 1, NULL, 0), "'%s' was accepted",
		    bad[i]);
}

ATF_TC_WITHOUT_HEAD(base_url_host_is_lowercased_authority);
ATF_TC_BODY(base_url_host_is_lowercased_authority, tc)
{
	char	 host[HOST_LEN_MAX];

	ATF_REQUIRE(url_ok("HTTPS://API.Example.COM/V1", 0, host,
	    sizeof(host)));
	ATF_CHECK_STREQ(host, "api.example.com");
	ATF_REQUIRE(url_ok("https://Api.Example.com:8443/x", 0, host,
	    sizeof(host)));
	ATF_CHECK_STREQ(host, "api.example.com:8443");
	ATF_REQUIRE(url_ok("http://[2606:4700::1111]:8080", 0, host,
	    sizeof(host)));
	ATF_CHECK_STREQ(host, "[2606:4700::1111]:8080");
}

ATF_TC_WITHOUT_HEAD(ip4_loose_parsing_matches_inet_aton);
ATF_TC_BODY(ip4_loose_parsing_matches_inet_aton, tc)
{
	uint32_t	 a;

	ATF_REQUIRE(ip4_parse_loose("2130706433", &a) == 0);
	ATF_CHECK_EQ(a, 0x7f000001);
	ATF_REQUIRE(ip4_parse_loose("0x7f000001", &a) == 0);
	ATF_CHECK_EQ(a, 0x7f000001);
	ATF_REQUIRE(ip4_parse_loose("127.1", &a) == 0);
	ATF_CHECK_EQ(a, 0x7f000001);
	ATF_REQUIRE(ip4_parse_loose("0177.0.0.1", &a) == 0);
	ATF_CHECK_EQ(a, 0x7f000001);
	ATF_REQUIRE(ip4_parse_loose("10.0x10.258", &a) == 0);
	ATF_CHECK_EQ(a, 0x0a100102);
	ATF_CHECK(ip4_parse_loose("4294967296", &a) == -1);
	ATF_CHECK(ip4_parse_loose("256.0.0.1", &a) == -1);
	ATF_CHECK(ip4_parse_loose("1.2.3.4.5", &a) == -1);
	ATF_CHECK(ip4_parse_loose("08.1.1.1", &a) == -1);
	ATF_CHECK(ip4_parse_loose("1..2", &a) == -1);
	ATF_CHECK(ip4_parse_loose("", &a) == -1);
}

ATF_TC_WITHOUT_HEAD(env_names_that_hijack_are_refused);
ATF_TC_BODY(env_names_that_hijack_are_refused, tc)
{
	const char *const refused[] = {
		"PATH", "path", "IFS", "SHELL", "ENV", "BASH_ENV", "PS4",
		"PROMPT_COMMAND", "NODE_OPTIONS", "PYTHONPATH",
		"PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT",
		"PYTHONUSERBASE", "PYTHONEXECUTABLE", "PYTHONWARNINGS",
		"pythonpath", "PERL5LIB", "PERL5OPT", "RUBYOPT", "RUBYLIB",
		"GEM_PATH", "CLASSPATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
		"GIT_SSH", "GIT_SSH_COMMAND", "git_ssh_variant",
		"GIT_EXTERNAL_DIFF", "CDPATH", "GLOBIGNORE", "ZDOTDIR",
		"LD_PRELOAD", "ld_library_path", "LD_AUDIT",
		"DYLD_INSERT_LIBRARIES",
		"BASH_FUNC_foo%%", "BASH_FUNC_x",
		"", "1ABC", "A-B", "A B", "A=B", "ÄB",
		NULL
	};
	const char *const ok[] = {
		"GITHUB_TOKEN", "OPENAI_API_KEY", "_X", "a", "STRIPE_API_KEY",
		"MY_SECRET", "LDAP_PASSWORD", "PATHNAME", "SHELLY", "PS1",
		NULL
	};
	size_t	 i;

	for (i = 0; refused[i] != NULL; i++)
		ATF_CHECK_MSG(env_name_refusal(refused[i]) != NULL,
		    "'%s' was accepted", refused[i]);
	for (i = 0; ok[i] != NULL; i++)
		ATF_CHECK_MSG(env_name_refusal(ok[i]) == NULL,
		    "'%s' was refused", ok[i]);
}

ATF_TC_WITHOUT_HEAD(bin_is_a_bare_command_name);
ATF_TC_BODY(bin_is_a_bare_command_name, tc)
{
	char	 longname[80];

	ATF_CHECK(bin_valid("gh"));
	ATF_CHECK(bin_valid("sentry-cli"));
	ATF_CHECK(bin_valid("python3.11"));
	ATF_CHECK(bin_valid("g++"));
	ATF_CHECK(bin_valid("a_b"));
	ATF_CHECK(!bin_valid(""));
	ATF_CHECK(!bin_valid("/bin/sh"));
	ATF_CHECK(!bin_valid("./sh"));
	ATF_CHECK(!bin_valid("../sh"));
	ATF_CHECK(!bin_valid("sh -c"));
	ATF_CHECK(!bin_valid("-sh"));
	ATF_CHECK(!bin_valid(".hidden"));
	ATF_CHECK(!bin_valid("a/b"));
	ATF_CHECK(!bin_valid("a;b"));
	memset(longname, 'a', 63);
	longname[63] = '\0';
	ATF_CHECK(bin_valid(longname));
	memset(longname, 'a', 64);
	longname[64] = '\0';
	ATF_CHECK(!bin_valid(longname));
}

ATF_TC_WITHOUT_HEAD(format_allows_only_the_secret_placeholder);
ATF_TC_BODY(format_allows_only_the_secret_placeholder, tc)
{
	ATF_CHECK_EQ(format_check("Bearer {secret}"), 1);
	ATF_CHECK_EQ(format_check("{secret}"), 1);
	ATF_CHECK_EQ(format_check("{secret}:{secret}"), 2);
	ATF_CHECK_EQ(format_check("plain"), 0);
	ATF_CHECK_EQ(format_check("{token}"), -1);
	ATF_CHECK_EQ(format_check("{secret} {user}"), -1);
	ATF_CHECK_EQ(format_check("{secret"), -1);
	ATF_CHECK_EQ(format_check("secret}"), -1);
	ATF_CHECK_EQ(format_check("{SECRET}"), -1);
}

ATF_TC_WITHOUT_HEAD(companion_file_paths_are_sanitised);
ATF_TC_BODY(companion_file_paths_are_sanitised, tc)
{
	const char *const dropped[] = {
		"/etc/passwd", "../x", "a/../b", "a/..", "..", ".", "./a",
		"a//b", "a/", "", "SKILL.md", "skill.md", "docs/SKILL.md",
		".secret/key", ".secrets/key", "a/.secrets/b", "A/.Secret/b",
		"a\\b", "..\\x", "~/x", "a\nb",
		NULL
	};
	const char *const kept[] = {
		"README.md", "scripts/run.sh", "docs/SKILL.md.txt",
		"a/b/c.txt", ".secretsfile", "x/.secret", "notes..txt",
		".gitignore",
		NULL
	};
	size_t	 i;

	for (i = 0; dropped[i] != NULL; i++)
		ATF_CHECK_MSG(!file_path_allowed(dropped[i]),
		    "'%s' was kept", dropped[i]);
	for (i = 0; kept[i] != NULL; i++)
		ATF_CHECK_MSG(file_path_allowed(kept[i]), "'%s' was dropped",
		    kept[i]);
}

ATF_TC_WITHOUT_HEAD(bindings_get_defaults_and_refuse_duplicates);
ATF_TC_BODY(bindings_get_defaults_and_refuse_duplicates, tc)
{
	json_t	*in, *out, *b;
	char	 err[256];

	in = parse("[{\"secret_id\": 3}, {\"secret_id\": 4, "
	    "\"location\": \"query\", \"name\": \"key\"}]");
	ATF_REQUIRE(bindings_check(in, 0, &out, err, sizeof(err)) == 0);
	b = json_array_get(out, 0);
	ATF_CHECK_EQ(json_integer_value(json_object_get(b, "secret_id")), 3);
	ATF_CHECK_STREQ(json_string_value(json_object_get(b, "injector")),
	    "env");
	ATF_CHECK_STREQ(json_string_value(json_object_get(b, "location")),
	    "header");
	ATF_CHECK_STREQ(json_string_value(json_object_get(b, "name")),
	    "Authorization");
	ATF_CHECK_STREQ(json_string_value(json_object_get(b, "format")),
	    "Bearer {secret}");
	b = json_array_get(out, 1);
	ATF_CHECK_STREQ(json_string_value(json_object_get(b, "format")),
	    "{secret}");
	json_decref(in);
	json_decref(out);

	in = parse("[{\"secret_id\": 1, \"name\": \"X-Key\"}, "
	    "{\"secret_id\": 2, \"name\": \"x-key\"}]");
	ATF_CHECK(bindings_check(in, 0, &out, err, sizeof(err)) == -1);
	ATF_CHECK(strstr(err, "duplicate") != NULL);
	json_decref(in);
	/* Same name in a header and in the query is two places. */
	in = parse("[{\"secret_id\": 1, \"name\": \"key\"}, "
	    "{\"secret_id\": 2, \"name\": \"key\", \"location\": \"query\"}]");
	ATF_CHECK(bindings_check(in, 0, &out, err, sizeof(err)) == 0);
	json_decref(out);
	json_decref(in);
	in = parse("[{\"secret_id\": 1, \"format\": \"Token {token}\"}]");
	ATF_CHECK(bindings_check(in, 0, &out, err, sizeof(err)) == -1);
	json_decref(in);
	in = parse("[{\"secret\": \"local\"}]");
	ATF_CHECK(bindings_check(in, 0, &out, err, sizeof(err)) == -1);
	ATF_CHECK(bindings_check(in, 1, &out, err, sizeof(err)) == 0);
	json_decref(out);
	json_decref(in);
	in = parse("[{\"injector\": \"env\"}]");
	ATF_CHECK(bindings_check(in, 0, &out, err, sizeof(err)) == -1);
	json_decref(in);
	in = parse("[{\"secret_id\": 1, \"injector\": \"magic\"}]");
	ATF_CHECK(bindings_check(in, 0, &out, err, sizeof(err)) == -1);
	json_decref(in);
	in = parse("[{\"secret_id\": 1, \"name\": \"Bad Header\"}]");
	ATF_CHECK(bindings_check(in, 0, &out, err, sizeof(err)) == -1);
	json_decref(in);
}

ATF_TC_WITHOUT_HEAD(bindings_are_capped);
ATF_TC_BODY(bindings_are_capped, tc)
{
	json_t	*in, *out;
	char	 err[256], name[16];
	int	 i;

	in = json_array();
	for (i = 0; i <= BINDINGS_MAX; i++) {
		snprintf(name, sizeof(name), "H%d", i);
		json_array_append_new(in, json_pack("{s:i,s:s}", "secret_id",
		    1, "name", name));
	}
	ATF_CHECK(bindings_check(in, 0, &out, err, sizeof(err)) == -1);
	json_array_remove(in, 0);
	ATF_CHECK(bindings_check(in, 0, &out, err, sizeof(err)) == 0);
	json_decref(out);
	json_decref(in);
}

ATF_TC_WITHOUT_HEAD(cli_profile_is_checked_and_canonical);
ATF_TC_BODY(cli_profile_is_checked_and_canonical, tc)
{
	json_t	*in, *out, *e;
	char	 err[256];

	in = parse("{\"bin\": \"gh\", \"inject\": [{\"via\": \"env\", "
	    "\"name\": \"GH_TOKEN\", \"secret_id\": 7}, {\"via\": \"argv\", "
	    "\"argv\": [\"--token\", \"{secret}\"], \"from_binding\": "
	    "\"authorization\"}], \"deny\": [\"^repo delete\"]}");
	ATF_REQUIRE_MSG(cli_check(in, 0, &out, err, sizeof(err)) == 0, "%s",
	    err);
	ATF_CHECK(json_is_true(json_object_get(out, "enabled")));
	ATF_CHECK_STREQ(json_string_value(json_object_get(out,
	    "auth_mechanism")), "env");
	e = json_array_get(json_object_get(out, "inject"), 0);
	ATF_CHECK_STREQ(json_string_value(json_object_get(e, "format")),
	    "{secret}");
	ATF_CHECK_EQ(json_integer_value(json_object_get(e, "secret_id")), 7);
	e = json_array_get(json_object_get(out, "inject"), 1);
	ATF_CHECK_STREQ(json_string_value(json_object_get(e,
	    "from_binding")), "authorization");
	ATF_CHECK_EQ(json_array_size(json_object_get(out, "deny")), 1);
	json_decref(out);
	json_decref(in);

	ATF_CHECK(cli_check(json_null(), 0, &out, err, sizeof(err)) == 0);
	ATF_CHECK(out == NULL);
}

ATF_TC_WITHOUT_HEAD(cli_profile_refusals);
ATF_TC_BODY(cli_profile_refusals, tc)
{
	const char *const bad[] = {
		"{}",
		"{\"bin\": \"/bin/sh\"}",
		"{\"bin\": \"sh -c\"}",
		"{\"bin\": \"sh\", \"enabled\": \"yes\"}",
		"{\"bin\": \"sh\", \"auth_mechanism\": \"telepathy\"}",
		"{\"bin\": \"sh\", \"deny\": [\"(unclosed\"]}",
		"{\"bin\": \"sh\", \"deny\": [\"a{2,1}\"]}",
		"{\"bin\": \"sh\", \"deny\": [\"\"]}",
		"{\"bin\": \"sh\", \"deny\": \"rm\"}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"env\", "
		    "\"name\": \"LD_PRELOAD\"}]}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"env\", "
		    "\"name\": \"PATH\"}]}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"env\"}]}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"env\", "
		    "\"name\": \"A\", \"format\": \"{x}\"}]}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"env\", "
		    "\"name\": \"A\"}, {\"via\": \"env\", \"name\": \"A\"}]}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"argv\", "
		    "\"argv\": [\"--token\"]}]}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"argv\", "
		    "\"argv\": [\"{secret}\", \"{other}\"]}]}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"pipe\", "
		    "\"name\": \"A\"}]}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"env\", "
		    "\"name\": \"A\", \"secret\": \"x\"}]}",
		"{\"bin\": \"sh\", \"inject\": [{\"via\": \"env\", "
		    "\"name\": \"A\", \"secret_id\": 1, \"from_binding\": "
		    "\"b\"}]}",
		"[\"sh\"]",
		"{\"bin\": \"sh\", \"errors\": \"401\"}",
		"{\"bin\": \"sh\", \"errors\": [\"401\"]}",
		"{\"bin\": \"sh\", \"errors\": [{\"verdict\": \"ok\"}]}",
		"{\"bin\": \"sh\", \"errors\": [{\"pattern\": \"(\"}]}",
		"{\"bin\": \"sh\", \"errors\": [{\"pattern\": \"x\", "
		    "\"verdict\": \"bad\"}]}",
		"{\"bin\": \"sh\", \"deny_defaults\": \"no\"}",
				NULL
	};
	json_t	*in, *out;
	char	 err[256];
	size_t	 i;

	for (i = 0; bad[i] != NULL; i++) {
		in = parse(bad[i]);
		ATF_CHECK_MSG(cli_check(in, 0, &out, err, sizeof(err)) == -1,
		    "accepted: %s", bad[i]);
		json_decref(in);
	}
	in = parse("{\"bin\": \"sh\", \"deny\": [\"(unclosed\"]}");
	ATF_REQUIRE(cli_check(in, 0, &out, err, sizeof(err)) == -1);
	ATF_CHECK(strstr(err, "invalid deny pattern") != NULL);
	json_decref(in);
}

ATF_TC_WITHOUT_HEAD(cli_limits);
ATF_TC_BODY(cli_limits, tc)
{
	json_t	*in, *deny, *inj, *out;
	char	 err[256], name[16];
	int	 i;

	in = json_pack("{s:s}", "bin", "sh");
	deny = json_array();
	for (i = 0; i <= DENY_MAX; i++)
		json_array_append_new(deny, json_string("^x"));
	json_object_set_new(in, "deny", deny);
	ATF_CHECK(cli_check(in, 0, &out, err, sizeof(err)) == -1);
	json_array_remove(deny, 0);
	ATF_CHECK(cli_check(in, 0, &out, err, sizeof(err)) == 0);
	json_decref(out);
	inj = json_array();
	for (i = 0; i <= INJECT_MAX; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		json_array_append_new(inj, json_pack("{s:s,s:s}", "via", "env",
		    "name", name));
	}
	json_object_set_new(in, "inject", inj);
	ATF_CHECK(cli_check(in, 0, &out, err, sizeof(err)) == -1);
	json_array_remove(inj, 0);
	ATF_CHECK(cli_check(in, 0, &out, err, sizeof(err)) == 0);
	json_decref(out);
	json_decref(in);
}

/* SPEC 6a: keyless (default true), tls, egress, sign, as stored. */
ATF_TC_WITHOUT_HEAD(cli_keyless_fields_are_checked_and_canonical);
ATF_TC_BODY(cli_keyless_fields_are_checked_and_canonical, tc)
{
	json_t	*in, *out, *eg;
	char	 err[256];

	/* The defaults are not stored. */
	in = parse("{\"bin\": \"sh\", \"keyless\": true, \"tls\": "
	    "\"intercept\"}");
	ATF_REQUIRE_MSG(cli_check(in, 0, &out, err, sizeof(err)) == 0, "%s",
	    err);
	ATF_CHECK(json_object_get(out, "keyless") == NULL);
	ATF_CHECK(json_object_get(out, "tls") == NULL);
	ATF_CHECK(json_object_get(out, "egress") == NULL);
	json_decref(out);
	json_decref(in);

	in = parse("{\"bin\": \"sh\", \"keyless\": false, "
	    "\"egress\": [\"API.Example.com\", "
	    "\"api.example.com:443\", \"up.example.com:8443\", "
	    "\"*.AmazonAWS.com\", \"http://localhost:8080\", "
	    "\"http://h.example\"], \"inject\": [{\"via\": \"env\", "
	    "\"name\": \"AWS_SECRET_ACCESS_KEY\", \"secret_id\": 3, "
	    "\"sign\": \"aws-sigv4\"}]}");
	ATF_REQUIRE_MSG(cli_check(in, 0, &out, err, sizeof(err)) == 0, "%s",
	    err);
	ATF_CHECK(json_is_false(json_object_get(out, "keyless")));
	ATF_CHECK(json_object_get(out, "tls") == NULL);
	eg = json_object_get(out, "egress");
	/* Lower case, ports spelled out, each once. */
	ATF_REQUIRE_EQ(json_array_size(eg), 5);
	ATF_CHECK_STREQ(json_string_value(json_array_get(eg, 0)),
	    "api.example.com:443");
	ATF_CHECK_STREQ(json_string_value(json_array_get(eg, 1)),
	    "up.example.com:8443");
	ATF_CHECK_STREQ(json_string_value(json_array_get(eg, 2)),
	    "*.amazonaws.com:443");
	ATF_CHECK_STREQ(json_string_value(json_array_get(eg, 3)),
	    "http://localhost:8080");
	ATF_CHECK_STREQ(json_string_value(json_array_get(eg, 4)),
	    "http://h.example:80");
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(out, "inject"), 0), "sign")), "aws-sigv4");
	json_decref(out);
	json_decref(in);

	/* The aws catalog profile's entries are signed, its hosts known. */
	in = parse("{\"bin\": \"aws\"}");
	ATF_REQUIRE_MSG(cli_check(in, 0, &out, err, sizeof(err)) == 0, "%s",
	    err);
	ATF_CHECK_STREQ(json_string_value(json_object_get(json_array_get(
	    json_object_get(out, "inject"), 1), "sign")), "aws-sigv4");
	ATF_CHECK_STREQ(catalog_egress("aws"), "*.amazonaws.com");
	ATF_CHECK(strstr(catalog_egress("gh"), "codeload.github.com") !=
	    NULL);
	ATF_CHECK(catalog_egress("sh") == NULL);
	json_decref(out);
	json_decref(in);
}

ATF_TC_WITHOUT_HEAD(cli_keyless_refusals_say_why);
ATF_TC_BODY(cli_keyless_refusals_say_why, tc)
{
	static const struct {
		const char	*in, *why;
	} bad[] = {
		{ "{\"bin\": \"sh\", \"keyless\": \"no\"}",
		    "'keyless' must be true or false" },
		{ "{\"bin\": \"sh\", \"tls\": \"none\"}",
		    "'tls' must be one of intercept, passthrough" },
		{ "{\"bin\": \"sh\", \"tls\": \"passthrough\"}",
		    "'passthrough' needs \"keyless\": false" },
		{ "{\"bin\": \"sh\", \"egress\": \"api.example.com\"}",
		    "'egress' must be a list of at most 32 hosts" },
		{ "{\"bin\": \"sh\", \"egress\": [7]}",
		    "cli.egress[0] must be a string" },
		{ "{\"bin\": \"sh\", \"egress\": [\"\"]}",
		    "cli.egress[0] must be a string" },
		{ "{\"bin\": \"sh\", \"egress\": [\"ok.example\", "
		    "\"https://x.example\"]}",
		    "cli.egress[1]: 'https://x.example': only http://" },
		{ "{\"bin\": \"sh\", \"egress\": [\"x.example:0\"]}",
		    "the port must be a number from 1 to 65535" },
		{ "{\"bin\": \"sh\", \"egress\": [\"x.example:99999\"]}",
		    "the port must be a number from 1 to 65535" },
		{ "{\"bin\": \"sh\", \"egress\": [\"x.example:\"]}",
		    "the port must be a number" },
		{ "{\"bin\": \"sh\", \"egress\": [\"x.example/path\"]}",
		    "is not a host name" },
		{ "{\"bin\": \"sh\", \"egress\": [\"a*.example.com\"]}",
		    "is not a host name" },
		{ "{\"bin\": \"sh\", \"egress\": [\"user@x.example\"]}",
		    "is not a host name" },
		{ "{\"bin\": \"sh\", \"egress\": [\"[::1]:443\"]}",
		    "is not a host name" },
		{ "{\"bin\": \"sh\", \"egress\": [\"*.com\"]}",
		    "a wildcard needs a domain of two labels" },
		{ "{\"bin\": \"sh\", \"egress\": [\"http://*.x.example\"]}",
		    "not a *.domain" },
		{ "{\"bin\": \"sh\", \"inject\": [{\"via\": \"env\", "
		    "\"name\": \"A\", \"sign\": \"hmac\"}]}",
		    "'sign' must be one of aws-sigv4" },
		{ "{\"bin\": \"sh\", \"inject\": [{\"via\": \"argv\", "
		    "\"argv\": [\"{secret}\"], \"sign\": \"aws-sigv4\"}]}",
		    "'sign' needs via env" },
	};
	json_t	*in, *out, *eg;
	char	 err[256], host[300];
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		in = parse(bad[i].in);
		err[0] = '\0';
		ATF_CHECK_MSG(cli_check(in, 0, &out, err, sizeof(err)) == -1,
		    "accepted: %s", bad[i].in);
		ATF_CHECK_MSG(strstr(err, bad[i].why) != NULL, "%s: '%s'",
		    bad[i].in, err);
		json_decref(in);
	}
	/* Bounded: EGRESS_HOSTS_MAX entries of EGRESS_ENTRY_MAX bytes. */
	in = parse("{\"bin\": \"sh\"}");
	eg = json_array();
	for (i = 0; i <= EGRESS_HOSTS_MAX; i++) {
		snprintf(host, sizeof(host), "h%zu.example.com", i);
		json_array_append_new(eg, json_string(host));
	}
	json_object_set_new(in, "egress", eg);
	ATF_CHECK(cli_check(in, 0, &out, err, sizeof(err)) == -1);
	json_array_remove(eg, 0);
	ATF_CHECK(cli_check(in, 0, &out, err, sizeof(err)) == 0);
	json_decref(out);
	memset(host, 'a', sizeof(host));
	for (i = 60; i < EGRESS_ENTRY_MAX + 1; i += 61)
		host[i] = '.';
	host[EGRESS_ENTRY_MAX + 1] = '\0';
	json_array_set_new(eg, 0, json_string(host));
	ATF_CHECK(cli_check(in, 0, &out, err, sizeof(err)) == -1);
	ATF_CHECK(strstr(err, "cli.egress[0] must be a string of 1 to") !=
	    NULL);
	json_decref(in);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, base_url_refuses_internal_spellings);
	ATF_TP_ADD_TC(tp, base_url_accepts_public_hosts);
	ATF_TP_ADD_TC(tp, base_url_allow_private_relaxes_only_addresses);
	ATF_TP_ADD_TC(tp, base_url_refuses_bad_shapes);
	ATF_TP_ADD_TC(tp, base_url_host_is_lowercased_authority);
	ATF_TP_ADD_TC(tp, ip4_loose_parsing_matches_inet_aton);
	ATF_TP_ADD_TC(tp, env_names_that_hijack_are_refused);
	ATF_TP_ADD_TC(tp, bin_is_a_bare_command_name);
	ATF_TP_ADD_TC(tp, format_allows_only_the_secret_placeholder);
	ATF_TP_ADD_TC(tp, companion_file_paths_are_sanitised);
	ATF_TP_ADD_TC(tp, bindings_get_defaults_and_refuse_duplicates);
	ATF_TP_ADD_TC(tp, bindings_are_capped);
	ATF_TP_ADD_TC(tp, cli_profile_is_checked_and_canonical);
	ATF_TP_ADD_TC(tp, cli_profile_refusals);
	ATF_TP_ADD_TC(tp, cli_limits);
	ATF_TP_ADD_TC(tp, cli_keyless_fields_are_checked_and_canonical);
	ATF_TP_ADD_TC(tp, cli_keyless_refusals_say_why);
	return (atf_no_error());
}
