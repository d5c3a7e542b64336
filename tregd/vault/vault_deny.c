/*
 * vault_deny.c: the deny rules of an org (SPEC.md section 9) and
 * cli.deny patterns (section 4), with PCRE2.  A rule file: runs, grants
 * and calls ask here; the rules' routes are vault_policy.c's.
 *
 * A pattern comes from a member and is matched against what a caller
 * sends, so neither step may cost the vault more than a bounded amount:
 * compiling is limited in pattern length, nesting and memory (a general
 * context whose allocator refuses past a budget), and every match in the
 * number of backtracking steps, its depth and its heap, and a request's
 * matches together in time.  A match that hits a limit counts as a match.
 *
 * Compiled patterns are kept per tool, keyed by the tool's deny list as
 * stored, so a changed or deleted tool never matches with stale patterns
 * and a request never compiles what an earlier one did.
 */

#define PCRE2_CODE_UNIT_WIDTH	8

#include <ctype.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vault.h"

#define DENY_COMPILE_MEM	(256 * 1024)	/* bytes, per pattern */
#define DENY_NEST_MAX		32
#define DENY_MATCH_LIMIT	100000
#define DENY_DEPTH_LIMIT	1000
#define DENY_HEAP_LIMIT		1024		/* KiB */
#define DENY_BUDGET_MS		250		/* one request's matches */
#define DENY_CACHE_MAX		256		/* tools */
#define DENY_CACHE_BYTES	(16 * 1024 * 1024)
/* A profile's own patterns (the catalog's are catalog_deny.c's). */
#define DENY_SET_MAX		DENY_MAX

/* A memory budget for one pattern's compilation, or for matching. */
struct deny_mem {
	size_t		 used;
	size_t		 max;
	int		 refused;	/* a request past the budget came */
};

struct deny_set {
	int64_t		 tool_id;
	char		*key;		/* the deny array as stored */
	size_t		 n;
	pcre2_code	*re[DENY_SET_MAX];	/* NULL: did not compile */
	struct deny_mem	*mem[DENY_SET_MAX];	/* each code's allocator */
	const char	*pat[DENY_SET_MAX];	/* into key's array copy */
	json_t		*pats;
	size_t		 bytes;
	uint64_t	 used;
};

static struct deny_set	 deny_cache[DENY_CACHE_MAX];
static size_t		 deny_cache_bytes;
static uint64_t		 deny_tick;
static pcre2_match_context *deny_mctx;
static pcre2_match_data	*deny_mdata;

static void	*deny_malloc(PCRE2_SIZE, void *);
static void	 deny_free(void *, void *);
static pcre2_code *deny_compile(const char *, size_t, struct deny_mem **,
		    char *, size_t);
static void	 deny_set_drop(struct deny_set *);
static struct deny_set *deny_set_get(int64_t, json_t *);
static int	 deny_match_one(pcre2_code *, const char *, size_t,
		    const char **);
static int64_t	 deny_now_ms(void);
static int	 host_match(const char *, const char *);
static int	 path_match(const char *, const char *);
static const char *host_port(const char *);
static void	 host_undot(const char *, char *, size_t);
static void	 path_plain(const char *, char *, size_t);
static void	 path_dots(char *);
static int	 deny_matches(const struct store_deny *, void *);

/*
 * The allocator of a compilation: a size header in front of each block
 * so the budget counts what is freed, and a refusal past the budget,
 * which PCRE2 reports as a compile error.
 */
static void *
deny_malloc(PCRE2_SIZE len, void *arg)
{
	struct deny_mem	*m = arg;
	size_t		*p;

	if (len > m->max || m->used + len + sizeof(size_t) > m->max) {
		m->refused = 1;
		return (NULL);
	}
	if ((p = malloc(sizeof(size_t) + len)) == NULL)
		return (NULL);
	*p = len;
	m->used += len + sizeof(size_t);
	return (p + 1);
}

static void
deny_free(void *ptr, void *arg)
{
	struct deny_mem	*m = arg;
	size_t		*p = ptr;

	if (p == NULL)
		return;
	p--;
	m->used -= *p + sizeof(size_t);
	free(p);
}

/*
 * One pattern, compiled within every limit; NULL with err set when it is
 * refused.  The code keeps using the allocator state *memp: free it
 * (free(3)) after pcre2_code_free.
 */
static pcre2_code *
deny_compile(const char *pat, size_t len, struct deny_mem **memp,
    char *err, size_t errlen)
{
	struct deny_mem		*mem;
	pcre2_general_context	*gctx;
	pcre2_compile_context	*cctx;
	pcre2_code		*re;
	PCRE2_UCHAR		 why[128];
	PCRE2_SIZE		 off;
	int			 ec;

	if ((mem = calloc(1, sizeof(*mem))) == NULL)
		fatal("%s: calloc", __func__);
	mem->max = DENY_COMPILE_MEM;
	if ((gctx = pcre2_general_context_create(deny_malloc, deny_free,
	    mem)) == NULL || (cctx = pcre2_compile_context_create(gctx)) ==
	    NULL)
		fatalx("%s: pcre2 context", __func__);
	pcre2_set_max_pattern_length(cctx, DENY_LEN_MAX);
	pcre2_set_parens_nest_limit(cctx, DENY_NEST_MAX);
	re = pcre2_compile((PCRE2_SPTR)pat, len, PCRE2_UTF |
	    PCRE2_NEVER_BACKSLASH_C, &ec, &off, cctx);
	if (re == NULL) {
		if (pcre2_get_error_message(ec, why, sizeof(why)) < 0)
			strlcpy((char *)why, "error", sizeof(why));
		if (mem->refused)
			snprintf(err, errlen, "invalid deny pattern '%.128s': "
			    "too costly to compile (more than %d KiB)", pat,
			    DENY_COMPILE_MEM / 1024);
		else
			snprintf(err, errlen, "invalid deny pattern '%.128s': "
			    "not a valid regex: %s at offset %zu", pat, (char *)why, (size_t)off);
	}
	pcre2_compile_context_free(cctx);
	pcre2_general_context_free(gctx);
	if (re == NULL) {
		free(mem);
		mem = NULL;
	}
	*memp = mem;
	return (re);
}

/* validate.c: 0 when pattern compiles within the limits, else -1 + err. */
int
deny_pattern_check(const char *pat, size_t len, char *err, size_t errlen)
{
	struct deny_mem	*mem;
	pcre2_code	*re;

	if ((re = deny_compile(pat, len, &mem, err, errlen)) == NULL)
		return (-1);
	pcre2_code_free(re);
	free(mem);
	return (0);
}

static void
deny_set_drop(struct deny_set *ds)
{
	size_t	 i;

	for (i = 0; i < ds->n; i++) {
		pcre2_code_free(ds->re[i]);
		free(ds->mem[i]);
	}
	json_decref(ds->pats);
	free(ds->key);
	deny_cache_bytes -= ds->bytes;
	memset(ds, 0, sizeof(*ds));
}

/* The compiled deny list of a tool: from the cache, or compiled now. */
static struct deny_set *
deny_set_get(int64_t tool_id, json_t *deny)
{
	struct deny_set	*ds, *free_slot = NULL, *oldest = NULL;
	json_t		*p;
	char		*key, err[256];
	size_t		 i, sz;

	if ((key = json_dumps(deny, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	for (i = 0; i < DENY_CACHE_MAX; i++) {
		ds = &deny_cache[i];
		if (ds->key == NULL) {
			if (free_slot == NULL)
				free_slot = ds;
			continue;
		}
		if (ds->tool_id == tool_id) {
			if (strcmp(ds->key, key) == 0) {
				free(key);
				ds->used = ++deny_tick;
				return (ds);
			}
			/* The tool changed: its old patterns go. */
			deny_set_drop(ds);
			if (free_slot == NULL)
				free_slot = ds;
			continue;
		}
		if (oldest == NULL || ds->used < oldest->used)
			oldest = ds;
	}
	if ((ds = free_slot) == NULL) {
		ds = oldest;
		deny_set_drop(ds);
	}
	ds->tool_id = tool_id;
	ds->key = key;
	ds->pats = json_deep_copy(deny);
	ds->used = ++deny_tick;
	json_array_foreach(ds->pats, i, p) {
		if (ds->n >= DENY_SET_MAX)
			break;
		if (!json_is_string(p))
			continue;
		ds->pat[ds->n] = json_string_value(p);
		ds->re[ds->n] = deny_compile(json_string_value(p),
		    json_string_length(p), &ds->mem[ds->n], err, sizeof(err));
		if (ds->re[ds->n] == NULL)
			log_warnx("tool %lld: a stored %s", (long long)tool_id,
			    err);
		else if (pcre2_pattern_info(ds->re[ds->n], PCRE2_INFO_SIZE,
		    &sz) == 0)
			ds->bytes += sz;
		ds->n++;
	}
	ds->bytes += strlen(key);
	deny_cache_bytes += ds->bytes;
	/* Bounded in total: the least recently used tools make room. */
	while (deny_cache_bytes > DENY_CACHE_BYTES) {
		oldest = NULL;
		for (i = 0; i < DENY_CACHE_MAX; i++)
			if (deny_cache[i].key != NULL && &deny_cache[i] != ds &&
			    (oldest == NULL || deny_cache[i].used <
			    oldest->used))
				oldest = &deny_cache[i];
		if (oldest == NULL)
			break;
		deny_set_drop(oldest);
	}
	return (ds);
}

/* 1 match (or a limit reached: *why says which), 0 no match. */
static int
deny_match_one(pcre2_code *re, const char *s, size_t len, const char **why)
{
	int	 rc;

	rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, deny_mdata, deny_mctx);
	if (rc >= 0)
		return (1);
	switch (rc) {
	case PCRE2_ERROR_NOMATCH:
		return (0);
	case PCRE2_ERROR_MATCHLIMIT:
		*why = "match limit reached";
		break;
	case PCRE2_ERROR_DEPTHLIMIT:
		*why = "depth limit reached";
		break;
	case PCRE2_ERROR_HEAPLIMIT:
	case PCRE2_ERROR_NOMEMORY:
		*why = "heap limit reached";
		break;
	default:
		*why = "pattern error";
		break;
	}
	return (1);
}

static int64_t
deny_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* argv's strings joined by single spaces (freezero it: len + 1 bytes). */
char *
argv_join(json_t *argv, size_t *lenp)
{
	json_t	*v;
	char	*s;
	size_t	 i, len = 1, o = 0;

	json_array_foreach(argv, i, v)
		len += json_string_length(v) + 1;
	if ((s = malloc(len)) == NULL)
		fatal("%s: malloc", __func__);
	json_array_foreach(argv, i, v) {
		if (i > 0)
			s[o++] = ' ';
		memcpy(s + o, json_string_value(v), json_string_length(v));
		o += json_string_length(v);
	}
	s[o] = '\0';
	*lenp = o;
	return (s);
}

/*
 * The first pattern of the tool's cli.deny that matches the space-joined
 * argv or one argument: 1 with the pattern in pat (and *why set when a
 * limit decided it), 0 when none matches.  The catalog's defaults are
 * rules over the arguments' structure, not patterns: catalog_deny().
 */
int
deny_match(int64_t tool_id, json_t *cli, json_t *argv, char *pat,
    size_t patlen, const char **why)
{
	struct deny_set	*ds;
	json_t		*deny, *v;
	char		*joined;
	size_t		 i, j, len = 1, o = 0;
	int64_t		 start;
	int		 hit = 0;

	*why = NULL;
	deny = json_object_get(cli, "deny");
	if (!json_is_array(deny) || json_array_size(deny) == 0)
		return (0);
	if (deny_mctx == NULL) {
		if ((deny_mctx = pcre2_match_context_create(NULL)) == NULL ||
		    (deny_mdata = pcre2_match_data_create(1, NULL)) == NULL)
			fatalx("%s: pcre2 match context", __func__);
		pcre2_set_match_limit(deny_mctx, DENY_MATCH_LIMIT);
		pcre2_set_depth_limit(deny_mctx, DENY_DEPTH_LIMIT);
		pcre2_set_heap_limit(deny_mctx, DENY_HEAP_LIMIT);
	}
	ds = deny_set_get(tool_id, deny);

	joined = argv_join(argv, &o);
	len = o + 1;

	start = deny_now_ms();
	for (i = 0; i < ds->n && !hit; i++) {
		/* A stored pattern that no longer compiles refuses. */
		if (ds->re[i] == NULL) {
			*why = "the pattern does not compile";
			hit = 1;
		} else
			hit = deny_match_one(ds->re[i], joined, o, why);
		json_array_foreach(argv, j, v) {
			if (hit)
				break;
			hit = deny_match_one(ds->re[i], json_string_value(v),
			    json_string_length(v), why);
			if (!hit && deny_now_ms() - start > DENY_BUDGET_MS) {
				*why = "time budget of the patterns spent";
				hit = 1;
			}
		}
		if (!hit && deny_now_ms() - start > DENY_BUDGET_MS) {
			*why = "time budget of the patterns spent";
			hit = 1;
		}
		if (hit)
			strlcpy(pat, ds->pat[i], patlen);
	}
	freezero(joined, len);
	return (hit);
}

/*
 * A rule's host is equal to the used host, ignoring case; a rule without
 * a port also matches the host on any port, and one on port 80 or 443
 * the host written without a port (its scheme's default).
 */
static int
host_match(const char *rule_in, const char *host_in)
{
	char		 rule[HOST_LEN_MAX], host[HOST_LEN_MAX];
	const char	*rp, *hp;
	size_t		 n;

	host_undot(rule_in, rule, sizeof(rule));
	host_undot(host_in, host, sizeof(host));
	if (strcasecmp(rule, host) == 0)
		return (1);
	rp = host_port(rule);
	hp = host_port(host);
	if (rp != NULL && hp == NULL &&
	    (strcmp(rp, ":443") == 0 || strcmp(rp, ":80") == 0)) {
		n = rp - rule;
		return (strlen(host) == n && strncasecmp(rule, host, n) == 0);
	}
	if (rp != NULL || hp == NULL)
		return (0);
	n = hp - host;
	return (strlen(rule) == n && strncasecmp(rule, host, n) == 0);
}

/* The ":port" of a host ("[v6]:port" too), or NULL. */
static const char *
host_port(const char *h)
{
	const char	*p;

	if (*h == '[')
		return ((p = strstr(h, "]:")) != NULL ? p + 1 : NULL);
	if ((p = strchr(h, ':')) == NULL || strchr(p + 1, ':') != NULL)
		return (NULL);	/* none, or a bare IPv6 address */
	return (p);
}

/*
 * A host without the root's trailing dots: "example.com." and
 * "example.com.:443" name the hosts "example.com" and "example.com:443"
 * do, so a rule written one way holds for the other.
 */
static void
host_undot(const char *in, char *out, size_t len)
{
	const char	*port;
	size_t		 n;

	port = host_port(in);
	n = port != NULL ? (size_t)(port - in) : strlen(in);
	while (n > 0 && in[n - 1] == '.')
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(out, in, n);
	out[n] = '\0';
	if (port != NULL)
		strlcat(out, port, len);
}

/*
 * A path as an upstream may read it: percent-escapes decoded ("%61dmin"
 * is "admin", "%2F" a '/'), '\\' a '/', ";param" of a segment dropped,
 * every run of '/' one and "." and ".." segments resolved, up to the
 * query, which is kept as it is.  A rule matches a use when it matches
 * either spelling, so no other spelling of a denied path gets through.
 */
static void
path_plain(const char *in, char *out, size_t len)
{
	char	 hex[3];
	size_t	 o = 0;
	int	 c;

	for (; *in != '\0' && *in != '?' && o + 1 < len; in++) {
		c = (unsigned char)*in;
		if (c == '%' && isxdigit((unsigned char)in[1]) &&
		    isxdigit((unsigned char)in[2])) {
			hex[0] = in[1];
			hex[1] = in[2];
			hex[2] = '\0';
			if ((c = (int)strtol(hex, NULL, 16)) == 0)
				c = '%';	/* NUL ends nothing here */
			else
				in += 2;
		}
		if (c == ';') {
			while (in[1] != '\0' && strchr("/\\?", in[1]) == NULL)
				in++;
			continue;
		}
		if (c == '\\')
			c = '/';
		if (c == '/' && o > 0 && out[o - 1] == '/')
			continue;
		out[o++] = c;
	}
	out[o] = '\0';
	path_dots(out);
	strlcat(out, in, len);
}

/* Resolve the "." and ".." segments of a path in place. */
static void
path_dots(char *p)
{
	char	*r = p, *w = p;
	size_t	 n;

	while (*r == '/') {
		n = strcspn(r + 1, "/");
		if (n == 2 && r[1] == '.' && r[2] == '.') {
			while (w > p && *--w != '/')
				;
		} else if (n != 1 || r[1] != '.') {
			memmove(w, r, n + 1);
			w += n + 1;
		}
		r += n + 1;
	}
	if (w == p && *r == '\0')
		*w++ = '/';
	memmove(w, r, strlen(r) + 1);
}

/*
 * A path prefix matches on a segment boundary: "/v1" matches "/v1" and
 * "/v1/x" but not "/v10".  A trailing "/" in the rule is ignored, so "/"
 * matches every path.
 */
static int
path_match(const char *prefix, const char *path)
{
	size_t	 n = strlen(prefix);

	while (n > 0 && prefix[n - 1] == '/')
		n--;
	if (n == 0)
		return (1);
	if (strncmp(prefix, path, n) != 0)
		return (0);
	return (path[n] == '\0' || path[n] == '/' || path[n] == '?');
}

/* ------------------------------------------------------------------ */
/* A base_url's path, as every user of it reads it.                    */

/*
 * The path of a URL without its query and fragment: *path points at it
 * in url, its length is returned, 0 when it has none ("https://h",
 * "https://h?x=/a", "https://h#x").  The one reading of a base_url's path
 * for runs, grants, calls and deny rules.
 */
size_t
url_path_span(const char *url, const char **path)
{
	const char	*p;

	if ((p = strstr(url, "://")) != NULL)
		p += 3;
	else
		p = url;
	p += strcspn(p, "/?#");
	*path = p;
	return (*p == '/' ? strcspn(p, "?#") : 0);
}

/*
 * url_path_span() as a prefix, without trailing slashes: where a call's
 * path is put after the base_url's, and what /call/URL matches on.
 */
size_t
url_path_prefix(const char *url, const char **path)
{
	size_t	 n;

	n = url_path_span(url, path);
	while (n > 0 && (*path)[n - 1] == '/')
		n--;
	return (n);
}

/* url_path_span() as a string for deny rules: "/" when it has none. */
void
url_path(const char *url, char *buf, size_t len)
{
	const char	*p;
	size_t		 n;

	if ((n = url_path_span(url, &p)) == 0) {
		strlcpy(buf, "/", len);
		return;
	}
	if (n >= len)
		n = len - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
}

/*
 * The rules of the caller's org aimed at everyone or at the caller; the
 * first one whose every non-empty field matches refuses.  method NULL
 * (runs and grants) never matches a rule that names a method.  path may
 * also be a whole URL (its path is used) or NULL ("/").  A rule scoped
 * to a project binds only a use through one of that project's tools
 * (treg's enforce_deny): never one through an org-wide tool.
 */
/* A use checked against the rules, one at a time; the first match. */
struct deny_use {
	const char	*host, *path, *method;
	char		 plain[DENY_PATH_MAX + 1];	/* path_plain() */
	int64_t		 project;	/* the tool's, 0: org-wide */
	int64_t		 id;
	char		 note[DENY_NOTE_MAX + 1];
	int		 member;		/* aimed at the caller */
	int		 in_project;		/* scoped to the project */
	char		 what[DENY_METHOD_MAX + HOST_LEN_MAX + DENY_PATH_MAX +
			    4];				/* "GET host/path" */
};

static int
deny_matches(const struct store_deny *d, void *arg)
{
	struct deny_use	*u = arg;
	const char	*rh = d->host ? d->host : "";
	const char	*rp = d->path_prefix ? d->path_prefix : "";
	const char	*rm = d->method ? d->method : "";
	char		 plain[DENY_PATH_MAX + 1];

	if (*rh == '\0' && *rp == '\0' && *rm == '\0')
		return (0);	/* matches nothing, by definition */
	if (d->project_id != 0 && d->project_id != u->project)
		return (0);
	if (*rh != '\0' && !host_match(rh, u->host))
		return (0);
	if (*rm != '\0' && (u->method == NULL || strcmp(rm, u->method) != 0))
		return (0);
	if (*rp != '\0') {
		path_plain(rp, plain, sizeof(plain));
		if (!path_match(rp, u->path) && !path_match(plain, u->plain))
			return (0);
	}
	u->id = d->id;
	strlcpy(u->note, d->note ? d->note : "", sizeof(u->note));
	u->member = d->user_id != 0;
	u->in_project = d->project_id != 0;
	(void)snprintf(u->what, sizeof(u->what), "%s %s%s", *rm != '\0' ?
	    rm : "any", *rh != '\0' ? rh : "any host", rp);
	return (1);
}

int
deny_check(const struct auth *a, const char *host, const char *path,
    const char *method, int64_t project, struct vault_resp *resp)
{
	return (deny_check_by(store_deny_rules, a, host, path, method,
	    project, resp));
}

int
deny_check_by(deny_rules_fn rules, const struct auth *a, const char *host,
    const char *path, const char *method, int64_t project,
    struct vault_resp *resp)
{
	struct deny_use	 u;
	char		 pbuf[DENY_PATH_MAX + 1];

	if (host == NULL)
		host = "";
	if (path == NULL || *path == '\0')
		path = "/";
	else if (*path != '/') {
		url_path(path, pbuf, sizeof(pbuf));
		path = pbuf;
	}
	memset(&u, 0, sizeof(u));
	u.host = host;
	u.path = path;
	path_plain(path, u.plain, sizeof(u.plain));
	u.method = method;
	u.project = project;
	if (rules(a->org_id, a->user_id, deny_matches, &u) == -1) {
		db_fail(resp, "deny rules");
		return (-1);
	}
	if (u.id == 0)
		return (0);
	/*
	 * treg's words: whom the rule is on, its project, its note, what
	 * it blocks.
	 */
	resp_error(resp, 403, "blocked by a policy rule on %s%s%s%s%s — %s "
	    "(rule %lld)", u.member ? "you" : "this team",
	    u.in_project ? " in this project" : "",
	    u.note[0] != '\0' ? " (" : "", u.note,
	    u.note[0] != '\0' ? ")" : "", u.what, (long long)u.id);
	return (-1);
}
