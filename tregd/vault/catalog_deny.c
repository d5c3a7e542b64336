/*
 * catalog_deny.c: the catalog's deny defaults (catalog.c), matched over
 * the structure of a CLI's arguments, not over words inside them.
 *
 * A regex over the joined arguments cannot tell `gh alias set` from
 * `gh search repos alias` or an issue titled "Support alias in config",
 * and a list of words misses `-t` for --show-token.  A rule here names
 * the command words the arguments start with, and the flags (every
 * spelling: --long, --long=v, -s, -sv, -xs) that refuse under them.
 *
 * Which flags take a value only the CLI knows: a flag without "=" may
 * or may not have taken the next argument, and either reading counts,
 * so `gh -R o/r extension install x` is still `extension`.  An argument
 * is never a command word when it cannot be one (after the words of a
 * different command began), so a value that happens to spell a command
 * does not refuse.
 *
 * Every catalog CLI is also refused an argument that reads the run's
 * process files, where the key is while the run lives: its environment
 * (/proc/PID/environ), command line and memory, and its descriptors
 * (/dev/fd, /dev/stdin...), in any spelling a CLI would open: the
 * argument itself, the part after "=" or "@" (`-F bio=@/proc/self/
 * environ`), and after "file:"/"fileb:" (aws), with "." and ".." walked
 * as the kernel would through /dev/fd, and ".." past an unknown start
 * (a relative path, "~", "$VAR") taken to reach /.
 */

#define PCRE2_CODE_UNIT_WIDTH	8

#include <sys/types.h>

#include <pcre2.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "log.h"

#define PATH_WORDS_MAX	8

static int	 word_is(const char *, const char *, size_t);
static int	 is_flag(const char *);
static int	 path_matches(const char *, json_t *);
static int	 flag_named(const char *, const char *, size_t, int);
static int	 value_matches(const char *, const char *);
static int	 flag_hits(const struct catalog_rule *, json_t *);
static int	 comp_is(const char *, size_t, const char *);
static int	 reads_process_file(const char *);
static void	 rule_describe(const struct catalog_cli *,
		    const struct catalog_rule *, char *, size_t);

/* Whether s is one of a path word's '|'-separated names w[0..wl). */
static int
word_is(const char *s, const char *w, size_t wl)
{
	size_t	 n, sl = strlen(s);

	while (wl > 0) {
		for (n = 0; n < wl && w[n] != '|'; n++)
			;
		if (n == sl && strncmp(s, w, n) == 0)
			return (1);
		if (n == wl)
			break;
		w += n + 1;
		wl -= n + 1;
	}
	return (0);
}

/* "-x...", "--x...": a flag, "-" alone is an argument (stdin). */
static int
is_flag(const char *a)
{
	return (a[0] == '-' && a[1] != '\0');
}

/*
 * 1 when the leading command words of argv may be path's.  reach holds
 * (as bits) how many words may have matched before an argument that is
 * not a flag's value; val, before one that may be.
 */
static int
path_matches(const char *path, json_t *argv)
{
	const char	*w[PATH_WORDS_MAX], *a, *p;
	size_t		 wl[PATH_WORDS_MAX], k = 0, i, j;
	unsigned int	 reach = 1, val = 0, adv, all;
	json_t		*v;

	for (p = path; *p != '\0' && k < PATH_WORDS_MAX; k++) {
		w[k] = p;
		wl[k] = strcspn(p, " ");
		p += wl[k];
		p += strspn(p, " ");
	}
	if (k == 0)
		return (1);
	json_array_foreach(argv, i, v) {
		a = json_string_value(v);
		all = reach | val;
		if (strcmp(a, "--") == 0) {
			reach = all;
			val = 0;
		} else if (is_flag(a)) {
			/* It may also be the value of the flag before it. */
			reach = all;
			val = (a[1] == '-' && strchr(a, '=') != NULL) ? 0 : all;
		} else {
			adv = 0;
			for (j = 0; j < k; j++)
				if ((all & (1U << j)) && word_is(a, w[j], wl[j]))
					adv |= 1U << (j + 1);
			reach = adv | val;
			val = 0;
		}
		if ((reach | val) & (1U << k))
			return (1);
		if ((reach | val) == 0)
			return (0);
	}
	return (0);
}

/*
 * Whether name[0..len) is one of flags' spellings: long ones ("--x")
 * when is_long, else short ones ("-x").
 */
static int
flag_named(const char *flags, const char *name, size_t len, int is_long)
{
	const char	*f;
	size_t		 n, dashes = is_long ? 2 : 1;

	for (f = flags; *f != '\0'; f += n + strspn(f + n, " ")) {
		n = strcspn(f, " ");
		if (n > dashes && strspn(f, "-") == dashes &&
		    n - dashes == len && strncmp(f + dashes, name, len) == 0)
			return (1);
	}
	return (0);
}

/* A rule's value pattern (ours, simple and linear) against one value. */
static int
value_matches(const char *pat, const char *s)
{
	pcre2_code		*re;
	pcre2_match_data	*md;
	PCRE2_SIZE		 off;
	int			 ec, rc;

	if (s == NULL)
		return (0);
	if ((re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
	    PCRE2_UTF, &ec, &off, NULL)) == NULL)
		fatalx("%s: catalog pattern %s", __func__, pat);
	if ((md = pcre2_match_data_create_from_pattern(re, NULL)) == NULL)
		fatalx("%s: pcre2_match_data", __func__);
	rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
	pcre2_match_data_free(md);
	pcre2_code_free(re);
	/* A limit reached counts as a match, as for cli.deny. */
	return (rc != PCRE2_ERROR_NOMATCH);
}

/*
 * Whether one of the rule's flags is given (before "--"), with a value
 * its pattern matches if it has one: "--x=v" and "-xv" carry theirs, a
 * bare one may take the next argument.
 */
static int
flag_hits(const struct catalog_rule *r, json_t *argv)
{
	const char	*a, *next, *eq;
	size_t		 i, p, n = json_array_size(argv);

	for (i = 0; i < n; i++) {
		a = json_string_value(json_array_get(argv, i));
		next = i + 1 < n ? json_string_value(json_array_get(argv,
		    i + 1)) : NULL;
		if (strcmp(a, "--") == 0)
			break;
		if (!is_flag(a))
			continue;
		if (a[1] == '-') {
			eq = strchr(a, '=');
			if (!flag_named(r->flags, a + 2, eq != NULL ?
			    (size_t)(eq - a - 2) : strlen(a + 2), 1))
				continue;
			if (r->value == NULL || value_matches(r->value,
			    eq != NULL ? eq + 1 : next))
				return (1);
			continue;
		}
		/* A group -xyz: any letter may be the flag, the rest its value. */
		for (p = 1; a[p] != '\0'; p++) {
			if (!flag_named(r->flags, a + p, 1, 0))
				continue;
			if (r->value == NULL || value_matches(r->value,
			    a[p + 1] != '\0' ? a + p + 1 : next))
				return (1);
		}
	}
	return (0);
}

static int
comp_is(const char *c, size_t len, const char *s)
{
	return (strlen(s) == len && strncmp(c, s, len) == 0);
}

/*
 * Whether path s, walked component by component, passes through /proc
 * or /dev/fd, /dev/stdin, /dev/stdout, /dev/stderr (links into /proc).
 * Only the first two components decide, so only they are kept.
 */
int
catalog_path_is_process_file(const char *s)
{
	const char	*c[2] = { NULL, NULL };
	size_t		 cl[2] = { 0, 0 }, n = 0, len;
	int		 rooted = s[0] == '/', first = 1;

	while (*s != '\0') {
		s += strspn(s, "/");
		if ((len = strcspn(s, "/")) == 0)
			break;
		if (comp_is(s, len, ".")) {
			/* nothing */
		} else if (comp_is(s, len, "..")) {
			/* Past an unknown start: that may have been /. */
			if (n > 0)
				n--;
			else
				rooted = 1;
		} else if ((first && s[0] == '~') ||
		    memchr(s, '$', len) != NULL) {
			/* A directory of unknown depth ("~", "$HOME"). */
			rooted = 0;
			n = 0;
		} else {
			if (n < 2) {
				c[n] = s;
				cl[n] = len;
			}
			n++;
			if (rooted && comp_is(c[0], cl[0], "proc"))
				return (1);
			if (rooted && n >= 2 && comp_is(c[0], cl[0], "dev") &&
			    (comp_is(c[1], cl[1], "fd") ||
			    comp_is(c[1], cl[1], "stdin") ||
			    comp_is(c[1], cl[1], "stdout") ||
			    comp_is(c[1], cl[1], "stderr")))
				return (1);
		}
		first = 0;
		s += len;
	}
	return (0);
}

/*
 * Whether argument a names a process file where a CLI would read one:
 * as a whole, after any "=" or "@", each also behind "file:"/"fileb:".
 */
static int
reads_process_file(const char *a)
{
	const char	*s;

	for (s = a; s != NULL; s = strpbrk(s, "=@")) {
		if (s != a)
			s++;
		if (catalog_path_is_process_file(s))
			return (1);
		if (strncasecmp(s, "file:", 5) == 0 &&
		    catalog_path_is_process_file(s + 5))
			return (1);
		if (strncasecmp(s, "fileb:", 6) == 0 &&
		    catalog_path_is_process_file(s + 6))
			return (1);
		if (*s == '\0')
			break;
	}
	return (0);
}

/* "gh auth status -t|--show-token", for the 403. */
static void
rule_describe(const struct catalog_cli *c, const struct catalog_rule *r,
    char *rule, size_t len)
{
	char	 flags[128];
	size_t	 i;

	strlcpy(flags, r->flags != NULL ? r->flags : "", sizeof(flags));
	for (i = 0; flags[i] != '\0'; i++)
		if (flags[i] == ' ')
			flags[i] = '|';
	snprintf(rule, len, "%s%s%s%s%s%s%s%s", c->bin, r->path[0] != '\0' ?
	    " " : "", r->path, flags[0] != '\0' ? " " : "", flags,
	    r->value != NULL ? " /" : "", r->value != NULL ? r->value : "",
	    r->value != NULL ? "/" : "");
}

int
catalog_deny(json_t *cli, json_t *argv, char *rule, size_t len,
    const char **why)
{
	const struct catalog_cli	*c;
	const struct catalog_rule	*r;
	json_t				*v;
	size_t				 i;

	*why = NULL;
	if (json_is_false(json_object_get(cli, "deny_defaults")))
		return (0);
	if ((c = catalog_find(json_string_value(json_object_get(cli,
	    "bin")))) == NULL)
		return (0);
	json_array_foreach(argv, i, v) {
		if (!json_is_string(v) ||
		    !reads_process_file(json_string_value(v)))
			continue;
		snprintf(rule, len, "%s /proc/... or /dev/fd/...", c->bin);
		*why = "reads the run's process files, where the key is";
		return (1);
	}
	for (r = c->deny; r->what != NULL; r++) {
		if (!path_matches(r->path, argv))
			continue;
		if (r->flags != NULL && !flag_hits(r, argv))
			continue;
		rule_describe(c, r, rule, len);
		*why = r->what;
		return (1);
	}
	return (0);
}
