/*
 * vault_deny.c: cli.deny patterns (SPEC.md section 4), with PCRE2.
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

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog.h"
#include "vault.h"

#define DENY_COMPILE_MEM	(256 * 1024)	/* bytes, per pattern */
#define DENY_NEST_MAX		32
#define DENY_MATCH_LIMIT	100000
#define DENY_DEPTH_LIMIT	1000
#define DENY_HEAP_LIMIT		1024		/* KiB */
#define DENY_BUDGET_MS		250		/* one request's matches */
#define DENY_CACHE_MAX		256		/* tools */
#define DENY_CACHE_BYTES	(16 * 1024 * 1024)
/* A profile's own patterns and its catalog defaults. */
#define DENY_SET_MAX		(DENY_MAX + CATALOG_DENY_MAX)

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
 * limit decided it), 0 when none matches.
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
	/* The profile's own patterns, then the catalog's for its bin. */
	deny = catalog_effective_deny(cli, NULL);
	if (json_array_size(deny) == 0) {
		json_decref(deny);
		return (0);
	}
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
	json_decref(deny);
	return (hit);
}
