/*
 * Pure validation of registry objects: no database, no process state.
 * The vault's handlers call these before they touch a row, and the unit
 * tests call them directly.
 *
 * base_url and the SSRF check: a registered base_url must name a public
 * host.  Names that only resolve inside a network (localhost, *.local,
 * *.internal) are refused, and so is every IP literal outside the public
 * unicast ranges, in any spelling a resolver or browser would accept
 * (inet_aton's decimal, hex, octal and short forms, IPv6 with embedded
 * IPv4).  The relay checks the resolved addresses again at call time;
 * this check is what keeps an obviously internal target out of the
 * registry in the first place.
 */

#include <sys/types.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "vault.h"

#define ERRORS_MAX	64	/* cli.errors entries, as treg */
#define CLI_ENV_VALUE_MAX 4096	/* bytes of one */

static int	 url_authority(const char *, char *, size_t, char *, size_t);
static int	 authority_host(const char *, char *, size_t, char *, size_t);
static int	 host_check(char *, int, int, char *, size_t);
static int	 host_name_valid(const char *);
static int	 binding_check(json_t *, json_t *, int, const char *, char *,
		    size_t);
static int	 bindings_unique(json_t *, char *, size_t);
static int	 host_numeric_looking(const char *);
static int	 ip4_part(const char *, size_t, uint64_t *);
static int	 ends_with_ci(const char *, const char *);
static int	 header_name_valid(const char *);
static int	 plain_valid(const char *, size_t);
static int	 str_field(json_t *, const char *, int, size_t, const char **,
		    const char *, char *, size_t);
static int	 secret_ref(json_t *, json_t *, int, int, const char *, char *,
		    size_t);
static int	 enum_field(json_t *, const char *, const char *const *,
		    const char *, const char **, const char *, char *, size_t);
static int	 bool_field(json_t *, const char *, int *, char *, size_t);
static int	 errors_check(json_t *, const struct catalog_cli *, json_t *,
		    char *, size_t);
static const char *env_plain_refusal(const char *);
static int	 inject_list_check(json_t *, const struct catalog_cli *,
		    const char *, int, json_t *, char *, size_t);
static int	 env_plain_check(json_t *, json_t *, char *, size_t);
static int	 inject_check(json_t *, int, json_t **, const char *, char *,
		    size_t);
static int	 keyless_check(json_t *, json_t *, char *, size_t);
static int	 sign_check(json_t *, json_t *, const char *, const char *,
		    char *, size_t);
static int	 egress_list_check(json_t *, json_t *, char *, size_t);

/* ------------------------------------------------------------------ */
/* base_url and the SSRF check.                                        */

/*
 * url_check_base: 0 when url is an acceptable base_url; host gets the
 * lower-cased authority (host, or host:port when a port is written).
 * -1 with a reason in err otherwise.  allow_private relaxes only the
 * public-address rule, never the shape rules.
 */
int
url_check_base(const char *url, int allow_private, char *host,
    size_t hostlen, char *err, size_t errlen)
{
	char		 auth[HOST_LEN_MAX], name[HOST_LEN_MAX];

	if (url_authority(url, auth, sizeof(auth), err, errlen) == -1 ||
	    authority_host(auth, name, sizeof(name), err, errlen) == -1 ||
	    host_check(name, auth[0] == '[', allow_private, err,
	    errlen) == -1)
		return (-1);
	if (strlcpy(host, auth, hostlen) >= hostlen) {
		snprintf(err, errlen, "base_url host is too long");
		return (-1);
	}
	return (0);
}

/*
 * The authority of an http(s) URL of a sane shape, lower-cased into
 * auth: 0, or -1 with a reason in err.
 */
static int
url_authority(const char *url, char *auth, size_t authlen, char *err,
    size_t errlen)
{
	const char	*p;
	size_t		 len, i, n;

	len = strlen(url);
	if (len == 0 || len > URL_LEN_MAX) {
		snprintf(err, errlen, "base_url must be 1 to %d bytes",
		    URL_LEN_MAX);
		return (-1);
	}
	for (i = 0; i < len; i++)
		if ((unsigned char)url[i] <= 0x20 || url[i] == 0x7f ||
		    url[i] == '\\') {
			snprintf(err, errlen, "base_url may not contain "
			    "spaces, control characters or backslashes");
			return (-1);
		}
	if (strncasecmp(url, "https://", 8) == 0)
		p = url + 8;
	else if (strncasecmp(url, "http://", 7) == 0)
		p = url + 7;
	else {
		snprintf(err, errlen, "base_url must be an http or https URL");
		return (-1);
	}
	n = strcspn(p, "/?#");
	if (n == 0) {
		snprintf(err, errlen, "base_url has no host");
		return (-1);
	}
	if (n >= authlen) {
		snprintf(err, errlen, "base_url host is too long");
		return (-1);
	}
	memcpy(auth, p, n);
	auth[n] = '\0';
	if (strchr(auth, '@') != NULL) {
		snprintf(err, errlen, "base_url may not carry credentials "
		    "(user@host)");
		return (-1);
	}
	for (i = 0; i < n; i++)
		auth[i] = tolower((unsigned char)auth[i]);
	return (0);
}

/*
 * The host of an authority ("[v6]" without its brackets) into name, its
 * port checked: 0, or -1 with a reason in err.
 */
static int
authority_host(const char *auth, char *name, size_t namelen, char *err,
    size_t errlen)
{
	const char	*p, *port = NULL, *errstr;
	size_t		 n;

	if (auth[0] == '[') {
		if ((p = strchr(auth, ']')) == NULL ||
		    (n = p - auth - 1) == 0 || n >= namelen ||
		    (p[1] != ':' && p[1] != '\0')) {
			snprintf(err, errlen, "base_url has a bad IPv6 "
			    "literal");
			return (-1);
		}
		memcpy(name, auth + 1, n);
		name[n] = '\0';
		if (p[1] == ':')
			port = p + 2;
	} else {
		n = strcspn(auth, ":");
		memcpy(name, auth, n);
		name[n] = '\0';
		if (auth[n] == ':')
			port = auth + n + 1;
	}
	if (port != NULL) {
		if (*port == '\0' || strspn(port, "0123456789") !=
		    strlen(port) || strlen(port) > 5) {
			snprintf(err, errlen, "base_url has a bad port");
			return (-1);
		}
		(void)strtonum(port, 1, 65535, &errstr);
		if (errstr != NULL) {
			snprintf(err, errlen, "base_url has a bad port");
			return (-1);
		}
	}
	if (name[0] == '\0') {
		snprintf(err, errlen, "base_url has no host");
		return (-1);
	}
	return (0);
}

/*
 * A base_url's host (an IPv6 literal when v6): a valid name or address,
 * and a public one unless allow_private.  0, or -1 with a reason in err.
 * name may lose one trailing dot.
 */
static int
host_check(char *name, int v6, int allow_private, char *err,
    size_t errlen)
{
	unsigned char	 a6[16];
	uint32_t	 a4;
	size_t		 n;

	if (v6) {
		/* No zone ids: they name an interface, never a public host. */
		if (strspn(name, "0123456789abcdef:.") != strlen(name) ||
		    inet_pton(AF_INET6, name, a6) != 1) {
			snprintf(err, errlen, "base_url has a bad IPv6 "
			    "literal");
			return (-1);
		}
		if (!allow_private && !ip6_is_public(a6))
			goto internal;
		return (0);
	}
	/* "localhost." is localhost: one trailing dot is allowed. */
	n = strlen(name);
	if (n > 1 && name[n - 1] == '.')
		name[n - 1] = '\0';
	if (host_numeric_looking(name)) {
		if (ip4_parse_loose(name, &a4) == -1) {
			snprintf(err, errlen, "base_url host '%s' is "
			    "neither a name nor an IP address", name);
			return (-1);
		}
		if (!allow_private && !ip4_is_public(a4))
			goto internal;
	} else if (!host_name_valid(name)) {
		snprintf(err, errlen, "base_url host '%s' is not a "
		    "valid host name", name);
		return (-1);
	} else if (!allow_private && host_is_internal(name))
		goto internal;
	return (0);
 internal:
	snprintf(err, errlen, "base_url must be a public address: '%s' is "
	    "loopback, private, link-local or reserved", name);
	return (-1);
}

/* Names that only mean something inside a host or a private network. */
int
host_is_internal(const char *name)
{
	return (strcasecmp(name, "localhost") == 0 ||
	    ends_with_ci(name, ".localhost") ||
	    strcasecmp(name, "local") == 0 || ends_with_ci(name, ".local") ||
	    strcasecmp(name, "internal") == 0 ||
	    ends_with_ci(name, ".internal"));
}

static int
ends_with_ci(const char *s, const char *suffix)
{
	size_t	 n = strlen(s), m = strlen(suffix);

	return (n >= m && strcasecmp(s + n - m, suffix) == 0);
}

/* DNS labels of letters, digits, '-' and '_', 1..63 bytes, 253 in all. */
static int
host_name_valid(const char *name)
{
	size_t	 label = 0, n = strlen(name);
	const char *p;

	if (n == 0 || n > 253)
		return (0);
	for (p = name; *p != '\0'; p++) {
		if (*p == '.') {
			if (label == 0)
				return (0);
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return (0);
		if (++label > 63)
			return (0);
	}
	return (label > 0);
}

/*
 * A host whose last label starts with a digit is an address to every
 * resolver (no top-level domain starts with one), so it must parse as
 * one or be refused.
 */
static int
host_numeric_looking(const char *name)
{
	const char	*last = strrchr(name, '.');

	last = last != NULL ? last + 1 : name;
	return (isdigit((unsigned char)*last));
}

/* One part of an inet_aton address: decimal, 0x hex or 0 octal. */
static int
ip4_part(const char *s, size_t n, uint64_t *out)
{
	uint64_t	 v = 0;
	int		 base = 10, d;
	size_t		 i = 0;

	if (n == 0)
		return (-1);
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	} else if (n >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	for (; i < n; i++) {
		if (isdigit((unsigned char)s[i]))
			d = s[i] - '0';
		else if (base == 16 && isxdigit((unsigned char)s[i]))
			d = tolower((unsigned char)s[i]) - 'a' + 10;
		else
			return (-1);
		if (d >= base)
			return (-1);
		v = v * base + d;
		if (v > 0xffffffffULL)
			return (-1);
	}
	*out = v;
	return (0);
}

/*
 * inet_aton(3) semantics, which is what resolvers and browsers apply to
 * a numeric host: a, a.b, a.b.c or a.b.c.d, where the last part fills
 * the remaining bytes.  *out is in host byte order.
 */
int
ip4_parse_loose(const char *s, uint32_t *out)
{
	uint64_t	 part[4], v;
	const char	*p = s, *dot;
	int		 n = 0, i;

	for (;;) {
		if (n == 4)
			return (-1);
		dot = strchr(p, '.');
		if (ip4_part(p, dot ? (size_t)(dot - p) : strlen(p),
		    &part[n]) == -1)
			return (-1);
		n++;
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	for (i = 0; i < n - 1; i++)
		if (part[i] > 255)
			return (-1);
	if (part[n - 1] > (0xffffffffULL >> (8 * (n - 1))))
		return (-1);
	v = part[n - 1];
	for (i = 0; i < n - 1; i++)
		v |= part[i] << (8 * (3 - i));
	*out = (uint32_t)v;
	return (0);
}

/* ------------------------------------------------------------------ */
/* Environment names, bin names, formats, file paths.                  */

static const char *const env_refused[] = {
	"BASH_ENV", "CDPATH", "CLASSPATH", "ENV", "GCONV_PATH",
	"GEM_PATH", "GIT_EXEC_PATH", "GIT_EXTERNAL_DIFF", "GLOBIGNORE",
	"IFS", "JAVA_TOOL_OPTIONS", "NODE_OPTIONS", "NODE_PATH", "PATH",
	"PERL5DB", "PERL5LIB", "PERL5OPT", "PERLLIB", "PROMPT_COMMAND",
	"PS4", "RUBYLIB", "RUBYOPT", "SHELL", "ZDOTDIR", "_JAVA_OPTIONS",
	NULL
};

/*
 * Prefixes: the loader's (LD_, DYLD_), exported bash functions, git's
 * ssh and config overrides (each can name a program to run) and every
 * PYTHON* variable: the interpreter reads dozens, several of which load
 * code, so the family is refused as a whole.
 */
static const char *const env_refused_prefix[] = {
	"BASH_FUNC_", "DYLD_", "GIT_CONFIG", "GIT_SSH", "LD_", "PYTHON",
	NULL
};

/* NULL when name may carry a secret into a CLI's environment. */
const char *
env_name_refusal(const char *name)
{
	const char	*p;
	size_t		 i;

	if (name[0] == '\0' || strlen(name) > NAME_LEN_MAX)
		return ("env name must be 1 to 128 characters");
	if (!isalpha((unsigned char)name[0]) && name[0] != '_')
		return ("env name must match ^[A-Za-z_][A-Za-z0-9_]*$");
	for (p = name; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return ("env name must match "
			    "^[A-Za-z_][A-Za-z0-9_]*$");
	for (i = 0; env_refused[i] != NULL; i++)
		if (strcasecmp(name, env_refused[i]) == 0)
			return ("env name would hijack the CLI's execution");
	for (i = 0; env_refused_prefix[i] != NULL; i++)
		if (strncasecmp(name, env_refused_prefix[i],
		    strlen(env_refused_prefix[i])) == 0)
			return ("env name would hijack the CLI's execution");
	return (NULL);
}

/*
 * What tregd sets in a run itself (SPEC.md sections 6 and 6a): the run's
 * directories and locale, its way out (the egress proxy) and the CA
 * bundle that names.  A profile's plain settings may not replace them.
 */
static const char *const env_tregd[] = {
	"ALL_PROXY", "AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
	"HOME", "HTTPS_PROXY", "HTTP_PROXY", "LANG", "LC_ALL",
	"NODE_EXTRA_CA_CERTS", "NO_PROXY", "PATH", "REQUESTS_CA_BUNDLE",
	"SSL_CERT_DIR", "SSL_CERT_FILE", "TMPDIR", NULL
};

/* NULL when a CLI profile's plain "env" may set name. */
static const char *
env_plain_refusal(const char *name)
{
	const char	*why;
	size_t		 i;

	if ((why = env_name_refusal(name)) != NULL)
		return (why);
	for (i = 0; env_tregd[i] != NULL; i++)
		if (strcasecmp(name, env_tregd[i]) == 0)
			return ("tregd sets it in every run");
	if (strncasecmp(name, "XDG_", 4) == 0)
		return ("tregd sets it in every run");
	return (NULL);
}

/* A bare command name: ^[A-Za-z0-9][A-Za-z0-9._+-]*$, at most 63 bytes. */
int
bin_valid(const char *bin)
{
	const char	*p;

	if (bin[0] == '\0' || strlen(bin) >= CONF_BIN_LEN ||
	    !isalnum((unsigned char)bin[0]))
		return (0);
	for (p = bin; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' &&
		    *p != '+' && *p != '-')
			return (0);
	return (1);
}

/*
 * The number of {secret} placeholders in s, or -1 when s has any other
 * brace: a template may not refer to anything but the secret.
 */
int
format_check(const char *s)
{
	int	 n = 0;

	while (*s != '\0') {
		if (*s == '{') {
			if (strncmp(s, "{secret}", 8) != 0)
				return (-1);
			n++;
			s += 8;
			continue;
		}
		if (*s == '}')
			return (-1);
		s++;
	}
	return (n);
}

/*
 * Companion files of a skill: relative paths of plain segments only.
 * Dropped: absolute paths, empty, "." and ".." segments, backslashes,
 * control characters, a leading "~", SKILL.md at any depth (the recipe
 * is the bundle's SKILL.md) and anything under .secret/ or .secrets/.
 * Names are compared without case: the files may land on a
 * case-insensitive file system.
 */
int
file_path_allowed(const char *path)
{
	const char	*seg, *p;
	size_t		 n;

	n = strlen(path);
	if (n == 0 || n > SKILL_PATH_MAX || path[0] == '/' ||
	    path[0] == '~')
		return (0);
	for (p = path; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\')
			return (0);
	for (seg = path; ; seg = p + 1) {
		p = strchr(seg, '/');
		n = p != NULL ? (size_t)(p - seg) : strlen(seg);
		if (n == 0 || (n == 1 && seg[0] == '.') ||
		    (n == 2 && strncmp(seg, "..", 2) == 0))
			return (0);
		if (n == 8 && strncasecmp(seg, "SKILL.md", 8) == 0)
			return (0);
		if (p != NULL && ((n == 7 && strncasecmp(seg, ".secret",
		    7) == 0) || (n == 8 && strncasecmp(seg, ".secrets",
		    8) == 0)))
			return (0);
		if (p == NULL)
			break;
	}
	return (1);
}

/* ------------------------------------------------------------------ */
/* Bindings and CLI profiles: shape, defaults, canonical form.         */

static int
plain_valid(const char *s, size_t max)
{
	size_t	 n = strlen(s), i;

	if (n == 0 || n > max)
		return (0);
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return (0);
	return (1);
}

/* RFC 9110 token characters. */
static int
header_name_valid(const char *s)
{
	const char	*p;

	if (!plain_valid(s, NAME_LEN_MAX))
		return (0);
	for (p = s; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) &&
		    strchr("!#$%&'*+-.^_`|~", *p) == NULL)
			return (0);
	return (1);
}

/* An optional string member; -1 with err set when present but wrong. */
static int
str_field(json_t *o, const char *f, int required, size_t max,
    const char **out, const char *ctx, char *err, size_t errlen)
{
	json_t	*v = json_object_get(o, f);

	if (v == NULL || json_is_null(v)) {
		if (required) {
			snprintf(err, errlen, "%s: '%s' is required", ctx, f);
			return (-1);
		}
		return (0);
	}
	if (!json_is_string(v) || json_string_length(v) > max ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		snprintf(err, errlen, "%s: '%s' must be a string of at most "
		    "%zu bytes", ctx, f, max);
		return (-1);
	}
	*out = json_string_value(v);
	return (0);
}

/*
 * Copy the secret reference of in into out: "secret_id" (a positive
 * integer), or "secret" (a skill's local name) when local is set.  One
 * is required when required is set.
 */
static int
secret_ref(json_t *in, json_t *out, int local, int required,
    const char *ctx, char *err, size_t errlen)
{
	json_t		*id = json_object_get(in, "secret_id");
	json_t		*name = json_object_get(in, "secret");
	const char	*s;

	if (id != NULL && json_is_null(id))
		id = NULL;
	if (name != NULL && json_is_null(name))
		name = NULL;
	if (id != NULL && name != NULL) {
		snprintf(err, errlen, "%s: give 'secret_id' or 'secret', not "
		    "both", ctx);
		return (-1);
	}
	if (id != NULL) {
		if (!json_is_integer(id) || json_integer_value(id) <= 0) {
			snprintf(err, errlen, "%s: 'secret_id' must be a "
			    "positive integer", ctx);
			return (-1);
		}
		json_object_set_new(out, "secret_id",
		    json_integer(json_integer_value(id)));
		return (0);
	}
	if (name != NULL) {
		if (!local) {
			snprintf(err, errlen, "%s: 'secret' (a local name) is "
			    "only valid inside a skill; use 'secret_id'", ctx);
			return (-1);
		}
		if (str_field(in, "secret", 1, NAME_LEN_MAX, &s, ctx, err,
		    errlen) == -1)
			return (-1);
		json_object_set_new(out, "secret", json_string(s));
		return (0);
	}
	if (required) {
		snprintf(err, errlen, "%s: 'secret_id' is required", ctx);
		return (-1);
	}
	return (0);
}

static int
enum_field(json_t *o, const char *f, const char *const *values,
    const char *dflt, const char **out, const char *ctx, char *err,
    size_t errlen)
{
	const char	*s = dflt;
	size_t		 i;

	if (str_field(o, f, 0, 32, &s, ctx, err, errlen) == -1)
		return (-1);
	for (i = 0; values[i] != NULL; i++)
		if (strcmp(s, values[i]) == 0) {
			*out = values[i];
			return (0);
		}
	snprintf(err, errlen, "%s: '%s' must be one of", ctx, f);
	for (i = 0; values[i] != NULL; i++) {
		strlcat(err, i ? ", " : " ", errlen);
		strlcat(err, values[i], errlen);
	}
	return (-1);
}

static const char *const injectors[] = {
	"env", "cli_auth", "secret_file", "oauth", NULL
};
static const char *const locations[] = { "header", "query", NULL };

/*
 * bindings_check: in must be an array (or NULL/null: none) of at most
 * BINDINGS_MAX binding objects.  *out gets the canonical array:
 * {secret_id | secret, injector, location, name, format[, secret_field]}
 * with the defaults filled in.  Secrets are not looked up here.
 */
int
bindings_check(json_t *in, int local, json_t **out, char *err,
    size_t errlen)
{
	json_t		*b, *o, *arr;
	char		 ctx[48];
	size_t		 i;

	*out = NULL;
	if ((arr = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (in == NULL || json_is_null(in)) {
		*out = arr;
		return (0);
	}
	if (!json_is_array(in) || json_array_size(in) > BINDINGS_MAX) {
		snprintf(err, errlen, "bindings must be an array of at most "
		    "%d bindings", BINDINGS_MAX);
		goto fail;
	}
	json_array_foreach(in, i, b) {
		snprintf(ctx, sizeof(ctx), "bindings[%zu]", i);
		if (!json_is_object(b)) {
			snprintf(err, errlen, "%s must be an object", ctx);
			goto fail;
		}
		if ((o = json_object()) == NULL)
			fatal("%s: json_object", __func__);
		json_array_append_new(arr, o);
		if (binding_check(b, o, local, ctx, err, errlen) == -1)
			goto fail;
	}
	if (bindings_unique(arr, err, errlen) == -1)
		goto fail;
	*out = arr;
	return (0);
 fail:
	json_decref(arr);
	return (-1);
}

/* One binding b, canonical into o (bindings_check): 0 or -1 with err. */
static int
binding_check(json_t *b, json_t *o, int local, const char *ctx, char *err,
    size_t errlen)
{
	const char	*injector, *location, *name, *format, *field;

	if (secret_ref(b, o, local, 1, ctx, err, errlen) == -1 ||
	    enum_field(b, "injector", injectors, "env", &injector,
	    ctx, err, errlen) == -1 ||
	    enum_field(b, "location", locations, "header", &location,
	    ctx, err, errlen) == -1)
		return (-1);
	name = strcmp(location, "header") == 0 ? "Authorization" : NULL;
	/* Left out takes the default; an explicit null is a mistake. */
	if (json_is_null(json_object_get(b, "name"))) {
		snprintf(err, errlen, "%s: 'name' may not be null "
		    "(leave it out for the default)", ctx);
		return (-1);
	}
	if (str_field(b, "name", name == NULL, NAME_LEN_MAX, &name,
	    ctx, err, errlen) == -1)
		return (-1);
	if (strcmp(location, "header") == 0 ?
	    !header_name_valid(name) : !plain_valid(name, NAME_LEN_MAX)) {
		snprintf(err, errlen, "%s: '%s' is not a valid %s "
		    "name", ctx, name, location);
		return (-1);
	}
	/* The usual Authorization header carries a bearer token. */
	format = strcasecmp(name, "Authorization") == 0 &&
	    strcmp(location, "header") == 0 ? "Bearer {secret}" :
	    "{secret}";
	if (str_field(b, "format", 0, 1024, &format, ctx, err,
	    errlen) == -1)
		return (-1);
	if (format_check(format) != 1 || !plain_valid(format, 1024)) {
		snprintf(err, errlen, "%s: 'format' must contain the "
		    "{secret} placeholder once and no other "
		    "placeholder", ctx);
		return (-1);
	}
	/* A JSON secret's access-token leaf, never the whole blob. */
	field = strcmp(injector, "oauth") == 0 ||
	    strcmp(injector, "secret_file") == 0 ? "access_token" : NULL;
	if (str_field(b, "secret_field", 0, NAME_LEN_MAX, &field,
	    ctx, err, errlen) == -1)
		return (-1);
	json_object_set_new(o, "injector", json_string(injector));
	json_object_set_new(o, "location", json_string(location));
	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "format", json_string(format));
	if (field != NULL)
		json_object_set_new(o, "secret_field", json_string(field));
	return (0);
}

/* One value per header or query parameter, or the relay must guess. */
static int
bindings_unique(json_t *arr, char *err, size_t errlen)
{
	json_t		*b, *o;
	const char	*name, *location, *oname;
	size_t		 i, j;

	for (i = 0; i < json_array_size(arr); i++) {
		b = json_array_get(arr, i);
		name = json_string_value(json_object_get(b, "name"));
		location = json_string_value(json_object_get(b, "location"));
		for (j = 0; j < i; j++) {
			o = json_array_get(arr, j);
			oname = json_string_value(json_object_get(o, "name"));
			if (strcmp(location, json_string_value(
			    json_object_get(o, "location"))) != 0)
				continue;
			if (strcmp(location, "header") == 0 ?
			    strcasecmp(name, oname) == 0 :
			    strcmp(name, oname) == 0) {
				snprintf(err, errlen, "bindings: duplicate %s "
				    "name '%s'", location, name);
				return (-1);
			}
		}
	}
	return (0);
}

/* An optional boolean field of a CLI profile into *val (absent: kept). */
static int
bool_field(json_t *in, const char *f, int *val, char *err, size_t errlen)
{
	json_t	*e;

	if ((e = json_object_get(in, f)) == NULL || json_is_null(e))
		return (0);
	if (!json_is_boolean(e)) {
		snprintf(err, errlen, "cli: '%s' must be true or false (a "
		    "boolean)", f);
		return (-1);
	}
	*val = json_is_true(e);
	return (0);
}

static const char *const verdicts[] = {
	"ok", "credential_invalid", "unknown_error", NULL
};

/*
 * cli.errors: at most ERRORS_MAX {pattern, verdict, message} that map a
 * CLI's output to a run-report verdict (treg's client reads them); the
 * catalog's when left out.  Patterns compile as deny patterns do.
 */
static int
errors_check(json_t *in, const struct catalog_cli *cat, json_t *o,
    char *err, size_t errlen)
{
	json_t		*arr, *e, *p;
	const char	*verdict, *msg;
	char		 ctx[48];
	size_t		 i;

	if (in == NULL || json_is_null(in)) {
		if (cat != NULL)
			json_object_set_new(o, "errors", catalog_errors(cat));
		return (0);
	}
	if (!json_is_array(in) || json_array_size(in) > ERRORS_MAX) {
		snprintf(err, errlen, "cli: 'errors' must be a list of at most "
		    "%d entries (too many, or not a list)", ERRORS_MAX);
		return (-1);
	}
	if ((arr = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	json_object_set_new(o, "errors", arr);
	json_array_foreach(in, i, e) {
		snprintf(ctx, sizeof(ctx), "cli.errors[%zu]", i);
		p = json_object_get(e, "pattern");
		if (!json_is_object(e) || !json_is_string(p) ||
		    json_string_length(p) == 0 ||
		    json_string_length(p) > DENY_LEN_MAX ||
		    strlen(json_string_value(p)) != json_string_length(p)) {
			snprintf(err, errlen, "%s: cli.errors entries must be "
			    "objects with a 'pattern' (a regex of 1 to %d "
			    "bytes)", ctx, DENY_LEN_MAX);
			return (-1);
		}
		if (deny_pattern_check(json_string_value(p),
		    json_string_length(p), err, errlen) == -1)
			return (-1);
		verdict = NULL;
		msg = NULL;
		if (json_is_null(json_object_get(e, "verdict")))
			json_object_del(e, "verdict");
		if (enum_field(e, "verdict", verdicts, "unknown_error",
		    &verdict, ctx, err, errlen) == -1 ||
		    str_field(e, "message", 0, 512, &msg, ctx, err,
		    errlen) == -1)
			return (-1);
		if (json_array_append_new(arr, json_pack("{s:s, s:s}",
		    "pattern", json_string_value(p), "verdict", verdict)) == -1)
			fatalx("%s: json_pack", __func__);
		if (msg != NULL)
			json_object_set_new(json_array_get(arr, i), "message",
			    json_string(msg));
	}
	return (0);
}

static const char *const mechanisms[] = {
	"env", "argv", "config_file", "device", NULL
};
static const char *const vias[] = { "env", "argv", NULL };
static const char *const signs[] = { "aws-sigv4", NULL };
static const char *const tls_modes[] = { "intercept", "passthrough", NULL };

/*
 * An entry's "sign": a value the egress proxy signs again with (SPEC
 * 6a), of an env entry: the relay tells an AWS key id from its secret
 * by the variable's name.
 */
static int
sign_check(json_t *e, json_t *o, const char *via, const char *ctx,
    char *err, size_t errlen)
{
	const char	*sign = NULL;

	if (json_object_get(e, "sign") == NULL ||
	    json_is_null(json_object_get(e, "sign")))
		return (0);
	if (enum_field(e, "sign", signs, NULL, &sign, ctx, err, errlen) == -1)
		return (-1);
	if (strcmp(via, "env") != 0) {
		snprintf(err, errlen, "%s: 'sign' needs via env (the variable's "
		    "name says which part of the key it is)", ctx);
		return (-1);
	}
	json_object_set_new(o, "sign", json_string(sign));
	return (0);
}

/* One inject entry into its canonical form. */
static int
inject_check(json_t *e, int local, json_t **out, const char *ctx,
    char *err, size_t errlen)
{
	json_t		*o, *argv, *a, *copy;
	const char	*via, *name, *format = "{secret}", *from = NULL;
	const char	*why, *field = NULL;
	size_t		 i;
	int		 n = 0, k;

	*out = NULL;
	if (!json_is_object(e)) {
		snprintf(err, errlen, "%s must be an object", ctx);
		return (-1);
	}
	if ((o = json_object()) == NULL)
		fatal("%s: json_object", __func__);
	if (enum_field(e, "via", vias, "env", &via, ctx, err, errlen) == -1)
		goto fail;
	json_object_set_new(o, "via", json_string(via));
	if (strcmp(via, "env") == 0) {
		if (str_field(e, "name", 1, NAME_LEN_MAX, &name, ctx, err,
		    errlen) == -1)
			goto fail;
		if ((why = env_name_refusal(name)) != NULL) {
			snprintf(err, errlen, "%s: env var 'name' '%s' is not "
			    "allowed: %s", ctx, name, why);
			goto fail;
		}
		if (str_field(e, "format", 0, 1024, &format, ctx, err,
		    errlen) == -1)
			goto fail;
		if (format_check(format) != 1 || !plain_valid(format, 1024)) {
			snprintf(err, errlen, "%s: 'format' must contain the "
			    "{secret} placeholder once and no other "
			    "placeholder", ctx);
			goto fail;
		}
		json_object_set_new(o, "name", json_string(name));
	} else {
		argv = json_object_get(e, "argv");
		if (!json_is_array(argv) || json_array_size(argv) == 0 ||
		    json_array_size(argv) > INJECT_ARGV_MAX) {
			snprintf(err, errlen, "%s: 'argv' must be an array of "
			    "1 to %d strings", ctx, INJECT_ARGV_MAX);
			goto fail;
		}
		if ((copy = json_array()) == NULL)
			fatal("%s: json_array", __func__);
		json_object_set_new(o, "argv", copy);
		json_array_foreach(argv, i, a) {
			if (!json_is_string(a) || json_string_length(a) >
			    1024 || strlen(json_string_value(a)) !=
			    json_string_length(a) ||
			    (k = format_check(json_string_value(a))) == -1) {
				snprintf(err, errlen, "%s: 'argv' entries must "
				    "be strings with no placeholder but "
				    "{secret}", ctx);
				goto fail;
			}
			n += k;
			json_array_append_new(copy,
			    json_string(json_string_value(a)));
		}
		if (n == 0) {
			snprintf(err, errlen, "%s: 'argv' must use the "
			    "{secret} placeholder", ctx);
			goto fail;
		}
	}
	if (secret_ref(e, o, local, 0, ctx, err, errlen) == -1 ||
	    str_field(e, "from_binding", 0, NAME_LEN_MAX, &from, ctx, err,
	    errlen) == -1 ||
	    str_field(e, "secret_field", 0, NAME_LEN_MAX, &field, ctx, err,
	    errlen) == -1)
		goto fail;
	if (from != NULL) {
		if (json_object_get(o, "secret_id") != NULL ||
		    json_object_get(o, "secret") != NULL) {
			snprintf(err, errlen, "%s: give a secret or "
			    "'from_binding', not both", ctx);
			goto fail;
		}
		json_object_set_new(o, "from_binding", json_string(from));
	}
	if (strcmp(via, "env") == 0)
		json_object_set_new(o, "format", json_string(format));
	if (field != NULL)
		json_object_set_new(o, "secret_field", json_string(field));
	if (sign_check(e, o, via, ctx, err, errlen) == -1)
		goto fail;
	*out = o;
	return (0);
 fail:
	json_decref(o);
	return (-1);
}

/*
 * cli.inject into o: the catalog's for its bin when left out; no two
 * entries may set one variable (the CLI would see only one of them).
 */
static int
inject_list_check(json_t *e, const struct catalog_cli *cat,
    const char *host, int local, json_t *o, char *err, size_t errlen)
{
	json_t		*arr, *c, *ce;
	const char	*name, *oname;
	char		 ctx[48];
	size_t		 i, j;

	if ((e == NULL || json_is_null(e)) && cat != NULL) {
		json_object_set_new(o, "inject", catalog_inject(cat, host));
		return (0);
	}
	if ((arr = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	json_object_set_new(o, "inject", arr);
	if (e == NULL || json_is_null(e))
		return (0);
	if (!json_is_array(e) || json_array_size(e) > INJECT_MAX) {
		snprintf(err, errlen, "cli: 'inject' must be a list of at most "
		    "%d entries (too many, or not a list)", INJECT_MAX);
		return (-1);
	}
	json_array_foreach(e, i, c) {
		snprintf(ctx, sizeof(ctx), "cli.inject[%zu]", i);
		if (inject_check(c, local, &ce, ctx, err, errlen) == -1)
			return (-1);
		json_array_append_new(arr, ce);
	}
	json_array_foreach(arr, i, c) {
		if ((name = json_string_value(json_object_get(c,
		    "name"))) == NULL)
			continue;
		for (j = 0; j < i; j++) {
			oname = json_string_value(json_object_get(
			    json_array_get(arr, j), "name"));
			if (oname != NULL && strcmp(name, oname) == 0) {
				snprintf(err, errlen, "cli: duplicate inject "
				    "env name '%s'", name);
				return (-1);
			}
		}
	}
	return (0);
}

/*
 * cli.env: plain settings of the CLI ({"GH_HOST": "ghe.example.com"}),
 * put in its environment as they are and never masked: not secrets, so
 * no secret may be stored here and none is looked for.  At most
 * CLI_ENV_MAX, each name one an inject entry could use and not one tregd
 * sets itself nor one an inject entry of o sets, each value at most
 * CLI_ENV_VALUE_MAX bytes without control characters.  Left out or
 * empty: none, and nothing kept.
 */
static int
env_plain_check(json_t *in, json_t *o, char *err, size_t errlen)
{
	json_t		*env, *v, *e;
	const char	*name, *why, *p;
	size_t		 i, n;

	if (in == NULL || json_is_null(in) || (json_is_object(in) &&
	    json_object_size(in) == 0))
		return (0);
	if (!json_is_object(in) || json_object_size(in) > CLI_ENV_MAX) {
		snprintf(err, errlen, "cli: 'env' must be an object of at most "
		    "%d \"NAME\": \"value\" settings", CLI_ENV_MAX);
		return (-1);
	}
	if ((env = json_object()) == NULL)
		fatal("%s: json_object", __func__);
	json_object_set_new(o, "env", env);
	json_object_foreach(in, name, v) {
		if ((why = env_plain_refusal(name)) != NULL) {
			snprintf(err, errlen, "cli.env: the name '%.128s' is "
			    "not allowed: %s", name, why);
			return (-1);
		}
		if (!json_is_string(v) || (n = json_string_length(v)) >
		    CLI_ENV_VALUE_MAX) {
			snprintf(err, errlen, "cli.env: '%s' must be a string "
			    "of at most %d bytes", name, CLI_ENV_VALUE_MAX);
			return (-1);
		}
		for (p = json_string_value(v); n > 0; p++, n--)
			if ((unsigned char)*p < 0x20 || *p == 0x7f) {
				snprintf(err, errlen, "cli.env: the value of "
				    "'%s' has a control character", name);
				return (-1);
			}
		json_array_foreach(json_object_get(o, "inject"), i, e)
			if ((p = json_string_value(json_object_get(e,
			    "name"))) != NULL && strcmp(p, name) == 0) {
				snprintf(err, errlen, "cli: '%s' is both in "
				    "'env' and an inject entry's name", name);
				return (-1);
			}
		json_object_set(env, name, v);
	}
	return (0);
}

int
cli_check(json_t *in, int local, json_t **out, char *err, size_t errlen)
{
	return (cli_check_host(in, NULL, local, out, err, errlen));
}

/*
 * cli_check_host: in is a CLI profile object, or NULL/null (no profile:
 * *out NULL), of a tool on host (NULL: not known).  *out gets {bin,
 * enabled, auth_mechanism, inject, deny} and env, network, deny_defaults,
 * errors, keyless, tls, egress when they say something; each deny
 * pattern is compiled here (PCRE2, bounded) so a bad or too costly one
 * is refused at registration.
 */
int
cli_check_host(json_t *in, const char *host, int local, json_t **out,
    char *err, size_t errlen)
{
	const struct catalog_cli	*cat;
	json_t		*o, *arr, *e, *c;
	const char	*bin, *mech;
	size_t		 i;
	int		 enabled = 1, network, deny_defaults;

	*out = NULL;
	if (in == NULL || json_is_null(in))
		return (0);
	if (!json_is_object(in)) {
		snprintf(err, errlen, "cli must be an object or null");
		return (-1);
	}
	if ((o = json_object()) == NULL)
		fatal("%s: json_object", __func__);
	if (str_field(in, "bin", 1, CONF_BIN_LEN - 1, &bin, "cli", err,
	    errlen) == -1)
		goto fail;
	if (!bin_valid(bin)) {
		snprintf(err, errlen, "cli: 'bin' must be a plain command name "
		    "(no path separators or spaces) matching "
		    "^[A-Za-z0-9][A-Za-z0-9._+-]*$");
		goto fail;
	}
	network = deny_defaults = 1;
	if (bool_field(in, "enabled", &enabled, err, errlen) == -1 ||
	    bool_field(in, "network", &network, err, errlen) == -1 ||
	    bool_field(in, "deny_defaults", &deny_defaults, err,
	    errlen) == -1)
		goto fail;
	/* Only what differs from the default is kept. */
	if (!network)
		json_object_set_new(o, "network", json_false());
	if (!deny_defaults)
		json_object_set_new(o, "deny_defaults", json_false());
	cat = catalog_find(bin);
	if (enum_field(in, "auth_mechanism", mechanisms, cat != NULL ?
	    cat->auth_mechanism : "env", &mech, "cli", err, errlen) == -1 ||
	    errors_check(json_object_get(in, "errors"), cat, o, err,
	    errlen) == -1)
		goto fail;
	json_object_set_new(o, "bin", json_string(bin));
	json_object_set_new(o, "enabled", json_boolean(enabled));
	json_object_set_new(o, "auth_mechanism", json_string(mech));

	if (inject_list_check(json_object_get(in, "inject"), cat, host, local,
	    o, err, errlen) == -1 || env_plain_check(json_object_get(in, "env"),
	    o, err, errlen) == -1 || keyless_check(in, o, err, errlen) == -1 ||
	    egress_list_check(json_object_get(in, "egress"), o, err,
	    errlen) == -1)
		goto fail;

	if ((arr = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	json_object_set_new(o, "deny", arr);
	e = json_object_get(in, "deny");
	if (e != NULL && !json_is_null(e)) {
		if (!json_is_array(e) || json_array_size(e) > DENY_MAX) {
			snprintf(err, errlen, "cli: 'deny' must be a list of "
			    "at most %d patterns (too many, or not a list)",
			    DENY_MAX);
			goto fail;
		}
		json_array_foreach(e, i, c) {
			if (!json_is_string(c) || json_string_length(c) == 0 ||
			    json_string_length(c) > DENY_LEN_MAX ||
			    strlen(json_string_value(c)) !=
			    json_string_length(c)) {
				snprintf(err, errlen, "invalid deny pattern "
				    "#%zu: patterns are strings of 1 to %d "
				    "bytes", i, DENY_LEN_MAX);
				goto fail;
			}
			if (deny_pattern_check(json_string_value(c),
			    json_string_length(c), err, errlen) == -1)
				goto fail;
			json_array_append_new(arr,
			    json_string(json_string_value(c)));
		}
	}
	*out = o;
	return (0);
 fail:
	json_decref(o);
	return (-1);
}

/* ------------------------------------------------------------------ */
/* Keyless runs: the profile's keyless, tls and egress (SPEC 6a).      */

/*
 * "keyless" (default true) and "tls" ("intercept", the default, or
 * "passthrough"), kept in o only when they differ from the default.
 * Passthrough splices a connection unread (SPEC 6a): no placeholder
 * could be swapped in it, so only a profile whose run holds the real key
 * may ask.
 */
static int
keyless_check(json_t *in, json_t *o, char *err, size_t errlen)
{
	const char	*tls = "intercept";
	int		 keyless = 1;

	if (bool_field(in, "keyless", &keyless, err, errlen) == -1)
		return (-1);
	if (!json_is_null(json_object_get(in, "tls")) && enum_field(in, "tls",
	    tls_modes, "intercept", &tls, "cli", err, errlen) == -1)
		return (-1);
	if (strcmp(tls, "passthrough") == 0 && keyless) {
		snprintf(err, errlen, "cli: 'tls': 'passthrough' needs "
		    "\"keyless\": false (a connection passed through cannot "
		    "have a placeholder swapped for the key)");
		return (-1);
	}
	if (!keyless)
		json_object_set_new(o, "keyless", json_false());
	if (strcmp(tls, "passthrough") == 0)
		json_object_set_new(o, "tls", json_string(tls));
	return (0);
}

/*
 * One entry of an egress list: "host", "host:port", "*.domain" (any
 * host below domain, not domain itself) or "http://host:port" (plain
 * HTTP, that host and port only); port 443 unless given (80 for
 * http:// without one).  Names are lower-cased; no IPv6 literal, no
 * path, no user info.
 */
int
egress_entry_parse(const char *s, struct egress_host *eh, char *err,
    size_t errlen)
{
	const char	*p = s, *colon, *errstr = NULL;
	char		 port[8];
	size_t		 n, i;

	memset(eh, 0, sizeof(*eh));
	eh->port = 443;
	if (strncasecmp(p, "http://", 7) == 0) {
		eh->http = 1;
		eh->port = 80;
		p += 7;
	} else if (strstr(p, "://") != NULL) {
		snprintf(err, errlen, "'%.64s': only http:// may be named "
		    "(https is the default: name the host alone)", s);
		return (-1);
	}
	if (*p == '[') {
		snprintf(err, errlen, "'%.64s' is not a host name: an IPv6 "
		    "address cannot be named, name its host", s);
		return (-1);
	}
	if (strncmp(p, "*.", 2) == 0) {
		eh->wildcard = 1;
		p += 2;
	}
	if ((colon = strchr(p, ':')) != NULL) {
		n = strlen(colon + 1);
		if (n == 0 || n >= sizeof(port) ||
		    strspn(colon + 1, "0123456789") != n) {
			snprintf(err, errlen, "'%.64s': the port must be a "
			    "number from 1 to 65535", s);
			return (-1);
		}
		memcpy(port, colon + 1, n + 1);
		eh->port = strtonum(port, 1, 65535, &errstr);
		if (errstr != NULL) {
			snprintf(err, errlen, "'%.64s': the port must be a "
			    "number from 1 to 65535", s);
			return (-1);
		}
		n = colon - p;
	} else
		n = strlen(p);
	if (n == 0 || n >= sizeof(eh->host)) {
		snprintf(err, errlen, "'%.64s' names no host (or one over "
		    "%zu bytes)", s, sizeof(eh->host) - 1);
		return (-1);
	}
	for (i = 0; i < n; i++)
		eh->host[i] = tolower((unsigned char)p[i]);
	eh->host[n] = '\0';
	if (!host_name_valid(eh->host) || strchr(eh->host, '*') != NULL) {
		snprintf(err, errlen, "'%.64s' is not a host name, a "
		    "host:port, a *.domain or an http://host:port", s);
		return (-1);
	}
	if (eh->wildcard && eh->http) {
		snprintf(err, errlen, "'%.64s': plain http:// is allowed "
		    "only for one named host, not a *.domain", s);
		return (-1);
	}
	if (eh->wildcard && strchr(eh->host, '.') == NULL) {
		snprintf(err, errlen, "'%.64s': a wildcard needs a domain "
		    "of two labels at least (*.example.com)", s);
		return (-1);
	}
	return (0);
}

/* The canonical spelling: ports always written out. */
void
egress_entry_print(const struct egress_host *eh, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s:%u", eh->http ? "http://" : "",
	    eh->wildcard ? "*." : "", eh->host, eh->port);
}

/*
 * cli.egress: at most EGRESS_HOSTS_MAX entries, each a string of at
 * most EGRESS_ENTRY_MAX bytes that egress_entry_parse() reads; kept in
 * their canonical spelling, each once.  Left out or null: the default
 * (the base_url's host and the catalog's, at run time); an empty list
 * is a run that may reach no host.
 */
static int
egress_list_check(json_t *in, json_t *o, char *err, size_t errlen)
{
	struct egress_host	 eh;
	json_t			*arr, *v, *w;
	char			 buf[EGRESS_ENTRY_MAX + 16], why[256];
	size_t			 i, j;

	if (in == NULL || json_is_null(in))
		return (0);
	if (!json_is_array(in) || json_array_size(in) > EGRESS_HOSTS_MAX) {
		snprintf(err, errlen, "cli: 'egress' must be a list of at most "
		    "%d hosts (host, host:port, *.domain or "
		    "http://host:port)", EGRESS_HOSTS_MAX);
		return (-1);
	}
	if ((arr = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	json_object_set_new(o, "egress", arr);
	json_array_foreach(in, i, v) {
		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    json_string_length(v) > EGRESS_ENTRY_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(err, errlen, "cli.egress[%zu] must be a "
			    "string of 1 to %d bytes", i, EGRESS_ENTRY_MAX);
			return (-1);
		}
		if (egress_entry_parse(json_string_value(v), &eh, why,
		    sizeof(why)) == -1) {
			snprintf(err, errlen, "cli.egress[%zu]: %s", i, why);
			return (-1);
		}
		egress_entry_print(&eh, buf, sizeof(buf));
		json_array_foreach(arr, j, w)
			if (strcmp(json_string_value(w), buf) == 0)
				break;
		if (j == json_array_size(arr))
			json_array_append_new(arr, json_string(buf));
	}
	return (0);
}
