/*
 * conf_test: the tregd.conf parser, without the daemon around it.
 *
 * The configurations live in regress/config: every N.conf must parse
 * and print exactly N.ok; every bad-N.conf must fail, and its first line
 * ("# expect FILE:LINE: message") says which error it must print.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>

#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tregd.h"
#include "conf.h"

#define CONFIGS_GOOD_MIN	12
#define CONFIGS_BAD_MIN		10

struct parsed {
	int			 rc;
	struct tregd_conf	 conf;
	char			*err;	/* parse_config's stderr */
};

static char	*slurp(const char *);
static int	 exists(const char *);
static void	 config_path(const atf_tc_t *, char *, size_t, const char *);
static int	 parse_into(const char *, struct tregd_conf *, char **);
static void	 parse_capture(const char *, struct parsed *);
static char	*print_str(const struct tregd_conf *);
static char	*write_temp(const char *);
static int	 count_configs(const atf_tc_t *, const char *);

static char *
slurp(const char *path)
{
	FILE	*fp;
	char	*buf;
	long	 len;

	if ((fp = fopen(path, "r")) == NULL)
		atf_tc_fail("%s: %s", path, strerror(errno));
	ATF_REQUIRE(fseek(fp, 0, SEEK_END) == 0);
	ATF_REQUIRE((len = ftell(fp)) >= 0);
	rewind(fp);
	ATF_REQUIRE((buf = malloc(len + 1)) != NULL);
	ATF_REQUIRE(fread(buf, 1, len, fp) == (size_t)len);
	buf[len] = '\0';
	fclose(fp);
	return (buf);
}

static int
exists(const char *path)
{
	return (access(path, R_OK) == 0);
}

/* kyua runs us in a scratch directory; the files sit next to srcdir. */
static void
config_path(const atf_tc_t *tc, char *buf, size_t len, const char *name)
{
	const char	*srcdir = atf_tc_get_config_var(tc, "srcdir");

	ATF_REQUIRE((size_t)snprintf(buf, len, "%s/../config/%s", srcdir,
	    name) < len);
}

/* parse_config prints on stderr: catch it in a file to look at it. */
static int
parse_into(const char *path, struct tregd_conf *c, char **err)
{
	FILE	*tmp;
	long	 len;
	int	 saved, rc;

	ATF_REQUIRE((tmp = tmpfile()) != NULL);
	fflush(stderr);
	ATF_REQUIRE((saved = dup(STDERR_FILENO)) != -1);
	ATF_REQUIRE(dup2(fileno(tmp), STDERR_FILENO) != -1);
	rc = parse_config(path, c);
	fflush(stderr);
	ATF_REQUIRE(dup2(saved, STDERR_FILENO) != -1);
	close(saved);

	ATF_REQUIRE(fseek(tmp, 0, SEEK_END) == 0);
	len = ftell(tmp);
	rewind(tmp);
	ATF_REQUIRE((*err = calloc(1, len + 1)) != NULL);
	ATF_REQUIRE(fread(*err, 1, len, tmp) == (size_t)len);
	fclose(tmp);
	return (rc);
}

static void
parse_capture(const char *path, struct parsed *p)
{
	memset(p, 0, sizeof(*p));
	p->rc = parse_into(path, &p->conf, &p->err);
}

static char *
print_str(const struct tregd_conf *c)
{
	FILE	*fp;
	char	*buf = NULL;
	size_t	 len = 0;

	ATF_REQUIRE((fp = open_memstream(&buf, &len)) != NULL);
	print_config(c, fp);
	ATF_REQUIRE(fclose(fp) == 0);
	return (buf);
}

static char *
write_temp(const char *text)
{
	const char	*dir = getenv("TMPDIR");
	char		*path;
	int		 fd;

	if (dir == NULL || *dir == '\0')
		dir = "/tmp";
	ATF_REQUIRE(asprintf(&path, "%s/conf_test.XXXXXX", dir) != -1);
	ATF_REQUIRE((fd = mkstemp(path)) != -1);
	ATF_REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	return (path);
}

/* N.conf or bad-N.conf for N = 1, 2, ... until one is missing. */
static int
count_configs(const atf_tc_t *tc, const char *prefix)
{
	char	 name[64], path[PATH_MAX];
	int	 n;

	for (n = 1;; n++) {
		snprintf(name, sizeof(name), "%s%d.conf", prefix, n);
		config_path(tc, path, sizeof(path), name);
		if (!exists(path))
			return (n - 1);
	}
}

ATF_TC(keyword_table_is_sorted);
ATF_TC_HEAD(keyword_table_is_sorted, tc)
{
	atf_tc_set_md_var(tc, "descr", "lookup() bsearches the keywords");
}
ATF_TC_BODY(keyword_table_is_sorted, tc)
{
	ATF_REQUIRE_EQ(parse_keywords_sorted(), 1);
}

ATF_TC(defaults_print_as_the_empty_config);
ATF_TC_HEAD(defaults_print_as_the_empty_config, tc)
{
	atf_tc_set_md_var(tc, "descr", "conf_defaults prints as 1.ok");
}
ATF_TC_BODY(defaults_print_as_the_empty_config, tc)
{
	struct tregd_conf	 c;
	char			 path[PATH_MAX], *want, *got;

	conf_defaults(&c);
	config_path(tc, path, sizeof(path), "1.ok");
	want = slurp(path);
	got = print_str(&c);
	ATF_REQUIRE_STREQ(got, want);
	ATF_REQUIRE(strstr(got, "listen on 127.0.0.1 port 8790\n") != NULL);
	ATF_REQUIRE(strstr(got, "signup closed\n") != NULL);
	free(want);
	free(got);
}

ATF_TC(good_configs_print_as_their_ok);
ATF_TC_HEAD(good_configs_print_as_their_ok, tc)
{
	atf_tc_set_md_var(tc, "descr", "N.conf parses and prints N.ok");
}
ATF_TC_BODY(good_configs_print_as_their_ok, tc)
{
	struct parsed	 p;
	char		 name[64], path[PATH_MAX], *want, *got;
	int		 i, n;

	n = count_configs(tc, "");
	ATF_REQUIRE_MSG(n >= CONFIGS_GOOD_MIN, "only %d good configs", n);
	for (i = 1; i <= n; i++) {
		snprintf(name, sizeof(name), "%d.conf", i);
		config_path(tc, path, sizeof(path), name);
		parse_capture(path, &p);
		if (p.rc != 0) {
			atf_tc_fail_nonfatal("%s failed: %s", name, p.err);
			free(p.err);
			continue;
		}
		snprintf(name, sizeof(name), "%d.ok", i);
		config_path(tc, path, sizeof(path), name);
		want = slurp(path);
		got = print_str(&p.conf);
		if (strcmp(want, got) != 0)
			atf_tc_fail_nonfatal("%d.conf printed\n%s\nnot %s\n%s",
			    i, got, name, want);
		free(want);
		free(got);
		free(p.err);
	}
}

ATF_TC(canonical_print_parses_back_to_itself);
ATF_TC_HEAD(canonical_print_parses_back_to_itself, tc)
{
	atf_tc_set_md_var(tc, "descr", "print, parse the print, print again");
}
ATF_TC_BODY(canonical_print_parses_back_to_itself, tc)
{
	struct parsed	 p, q;
	char		 name[64], path[PATH_MAX], *tmp, *at;
	char		*first, *second;
	int		 i, n;

	n = count_configs(tc, "");
	for (i = 1; i <= n; i++) {
		snprintf(name, sizeof(name), "%d.conf", i);
		config_path(tc, path, sizeof(path), name);
		parse_capture(path, &p);
		ATF_REQUIRE_MSG(p.rc == 0, "%s: %s", name, p.err);
		first = print_str(&p.conf);
		tmp = write_temp(first);
		parse_capture(tmp, &q);
		ATF_REQUIRE_MSG(q.rc == 0, "print of %s does not parse: %s",
		    name, q.err);
		second = print_str(&q.conf);
		/*
		 * The proof is printed as a comment, so it cannot come
		 * back; everything else must.
		 */
		if (p.conf.run_proof[0] != '\0') {
			ATF_REQUIRE((at = strstr(first,
			    "# run proof is set\n")) != NULL);
			memmove(at, at + 19, strlen(at + 19) + 1);
			memset(p.conf.run_proof, 0, sizeof(p.conf.run_proof));
		}
		ATF_CHECK_MSG(strcmp(first, second) == 0,
		    "%s: reprint differs\n%s\n---\n%s", name, first, second);
		ATF_CHECK_MSG(memcmp(&p.conf, &q.conf, sizeof(p.conf)) == 0,
		    "%s: reparsed configuration differs", name);
		unlink(tmp);
		free(tmp);
		free(first);
		free(second);
		free(p.err);
		free(q.err);
	}
}

ATF_TC(bad_configs_fail_at_their_line);
ATF_TC_HEAD(bad_configs_fail_at_their_line, tc)
{
	atf_tc_set_md_var(tc, "descr",
	    "bad-N.conf fails with the file:line: message of its first line");
}
ATF_TC_BODY(bad_configs_fail_at_their_line, tc)
{
	struct parsed	 p;
	char		 name[64], path[PATH_MAX], *text, *expect, *nl, *at;
	int		 i, n;

	n = count_configs(tc, "bad-");
	ATF_REQUIRE_MSG(n >= CONFIGS_BAD_MIN, "only %d bad configs", n);
	for (i = 1; i <= n; i++) {
		snprintf(name, sizeof(name), "bad-%d.conf", i);
		config_path(tc, path, sizeof(path), name);
		text = slurp(path);
		ATF_REQUIRE_MSG(strncmp(text, "# expect ", 9) == 0,
		    "%s: no expect line", name);
		expect = text + 9;
		if ((nl = strchr(expect, '\n')) != NULL)
			*nl = '\0';
		parse_capture(path, &p);
		if (p.rc != -1)
			atf_tc_fail_nonfatal("%s was accepted", name);
		/* The file name is printed as opened: a path ending in it. */
		at = strstr(p.err, expect);
		if (at == NULL || (at != p.err && at[-1] != '/'))
			atf_tc_fail_nonfatal("%s: expected \"%s\", got \"%s\"",
			    name, expect, p.err);
		free(p.err);
		free(text);
	}
}

ATF_TC(failed_parse_leaves_config_untouched);
ATF_TC_HEAD(failed_parse_leaves_config_untouched, tc)
{
	atf_tc_set_md_var(tc, "descr", "a reload with a bad file changes "
	    "nothing");
}
ATF_TC_BODY(failed_parse_leaves_config_untouched, tc)
{
	struct tregd_conf	 c, before;
	char			 path[PATH_MAX], *err;

	memset(&c, 0x5a, sizeof(c));
	before = c;
	/* bad-7 fails only in the validation pass, after every directive. */
	config_path(tc, path, sizeof(path), "bad-7.conf");
	ATF_REQUIRE_EQ(parse_into(path, &c, &err), -1);
	free(err);
	ATF_REQUIRE(memcmp(&c, &before, sizeof(c)) == 0);
	ATF_REQUIRE_EQ(parse_into("/nonexistent/tregd.conf", &c, &err), -1);
	free(err);
	ATF_REQUIRE(memcmp(&c, &before, sizeof(c)) == 0);
}

ATF_TC(missing_file_is_an_error);
ATF_TC_HEAD(missing_file_is_an_error, tc)
{
	atf_tc_set_md_var(tc, "descr", "a missing file is named on stderr");
}
ATF_TC_BODY(missing_file_is_an_error, tc)
{
	struct parsed	 p;

	parse_capture("/nonexistent/tregd.conf", &p);
	ATF_REQUIRE_EQ(p.rc, -1);
	ATF_REQUIRE_MSG(strstr(p.err, "/nonexistent/tregd.conf: ") != NULL,
	    "%s", p.err);
	free(p.err);
}

ATF_TC(cmdline_macro_wins_over_file);
ATF_TC_HEAD(cmdline_macro_wins_over_file, tc)
{
	atf_tc_set_md_var(tc, "descr", "-D lport=9999 beats lport = \"8790\"");
}
ATF_TC_BODY(cmdline_macro_wins_over_file, tc)
{
	struct parsed	 p;
	char		 arg[] = "lport=9999", arg2[] = "dir=/srv/x";
	char		*tmp;

	ATF_REQUIRE_EQ(cmdline_symset(arg), 0);
	ATF_REQUIRE_EQ(cmdline_symset(arg2), 0);
	tmp = write_temp("lport = \"8790\"\n"
	    "listen on 127.0.0.1 port $lport\n"
	    "state $dir\n");
	parse_capture(tmp, &p);
	ATF_REQUIRE_MSG(p.rc == 0, "%s", p.err);
	ATF_REQUIRE_EQ(p.conf.nlisten, 1);
	ATF_REQUIRE_EQ(p.conf.listen[0].port, 9999);
	ATF_REQUIRE_EQ(ntohs(((struct sockaddr_in *)
	    &p.conf.listen[0].ss)->sin_port), 9999);
	ATF_REQUIRE_STREQ(p.conf.state, "/srv/x");
	/* -D macros outlive a parse: a reload sees them again. */
	free(p.err);
	parse_capture(tmp, &p);
	ATF_REQUIRE_EQ(p.rc, 0);
	ATF_REQUIRE_EQ(p.conf.listen[0].port, 9999);
	unlink(tmp);
	free(tmp);
	free(p.err);
}

ATF_TC(file_macros_do_not_outlive_the_parse);
ATF_TC_HEAD(file_macros_do_not_outlive_the_parse, tc)
{
	atf_tc_set_md_var(tc, "descr", "a reload forgets the file's macros");
}
ATF_TC_BODY(file_macros_do_not_outlive_the_parse, tc)
{
	struct parsed	 p;
	char		*a, *b;

	a = write_temp("t = \"30\"\nrun timeout $t\n");
	b = write_temp("run timeout $t\n");
	parse_capture(a, &p);
	ATF_REQUIRE_MSG(p.rc == 0, "%s", p.err);
	ATF_REQUIRE_EQ(p.conf.run_timeout, 30);
	free(p.err);
	parse_capture(b, &p);
	ATF_REQUIRE_EQ(p.rc, -1);
	ATF_REQUIRE(strstr(p.err, ":1: macro 't' not defined") != NULL);
	unlink(a);
	unlink(b);
	free(a);
	free(b);
	free(p.err);
}

ATF_TC(cmdline_symset_rejects_malformed);
ATF_TC_HEAD(cmdline_symset_rejects_malformed, tc)
{
	atf_tc_set_md_var(tc, "descr", "-D needs name=value, name a word");
}
ATF_TC_BODY(cmdline_symset_rejects_malformed, tc)
{
	char	 noeq[] = "novalue", noname[] = "=x", digit[] = "1abc=x";
	char	 dash[] = "a-b=x", empty[] = "", spaced[] = "a b=c";
	char	 nl[] = "two_lines=a\nb", ok[] = "empty_value=";

	ATF_CHECK_EQ(cmdline_symset(noeq), -1);
	ATF_CHECK_EQ(cmdline_symset(noname), -1);
	ATF_CHECK_EQ(cmdline_symset(digit), -1);
	ATF_CHECK_EQ(cmdline_symset(dash), -1);
	ATF_CHECK_EQ(cmdline_symset(empty), -1);
	ATF_CHECK_EQ(cmdline_symset(spaced), -1);
	ATF_CHECK_EQ(cmdline_symset(NULL), -1);
	ATF_CHECK_EQ(cmdline_symset(nl), -1);
	ATF_CHECK_EQ(cmdline_symset(ok), 0);
}

ATF_TC(self_referencing_macro_does_not_loop);
ATF_TC_HEAD(self_referencing_macro_does_not_loop, tc)
{
	atf_tc_set_md_var(tc, "descr", "macro text is not expanded again");
	atf_tc_set_md_var(tc, "timeout", "10");
}
ATF_TC_BODY(self_referencing_macro_does_not_loop, tc)
{
	struct parsed	 p;
	char		*tmp;

	tmp = write_temp("a = \"$a $a\"\nstate $a\n");
	parse_capture(tmp, &p);
	ATF_REQUIRE_EQ(p.rc, -1);
	ATF_REQUIRE_MSG(strstr(p.err, ":2: syntax error") != NULL, "%s",
	    p.err);
	unlink(tmp);
	free(tmp);
	free(p.err);
}

ATF_TC(nul_byte_is_an_error_not_the_end);
ATF_TC_HEAD(nul_byte_is_an_error_not_the_end, tc)
{
	atf_tc_set_md_var(tc, "descr",
	    "a NUL does not hide the lines after it");
}
ATF_TC_BODY(nul_byte_is_an_error_not_the_end, tc)
{
	static const char	 text[] = "signup open\nrun timeout 5\0x\n"
				    "run timeout 0\n";
	struct parsed		 p;
	char			*tmp;
	int			 fd;

	tmp = write_temp("");
	ATF_REQUIRE((fd = open(tmp, O_WRONLY | O_TRUNC)) != -1);
	ATF_REQUIRE(write(fd, text, sizeof(text) - 1) ==
	    (ssize_t)sizeof(text) - 1);
	close(fd);
	parse_capture(tmp, &p);
	ATF_REQUIRE_EQ(p.rc, -1);
	ATF_REQUIRE_MSG(strstr(p.err, ":2: NUL byte") != NULL, "%s", p.err);
	ATF_REQUIRE_MSG(strstr(p.err, ":3: run timeout 0") != NULL, "%s",
	    p.err);
	unlink(tmp);
	free(tmp);
	free(p.err);
}

ATF_TC(include_reads_the_file_next_to_the_includer);
ATF_TC_HEAD(include_reads_the_file_next_to_the_includer, tc)
{
	atf_tc_set_md_var(tc, "descr", "11.conf includes include-11.inc");
}
ATF_TC_BODY(include_reads_the_file_next_to_the_includer, tc)
{
	struct parsed	 p;
	char		 path[PATH_MAX];

	config_path(tc, path, sizeof(path), "11.conf");
	/* Not the config directory: the include must not depend on cwd. */
	ATF_REQUIRE(chdir("/") == 0);
	parse_capture(path, &p);
	ATF_REQUIRE_MSG(p.rc == 0, "%s", p.err);
	ATF_REQUIRE_EQ(p.conf.nlisten, 1);
	ATF_REQUIRE_STREQ(p.conf.listen[0].name, "198.51.100.7");
	ATF_REQUIRE_EQ(p.conf.run_slots_user, 3);
	ATF_REQUIRE_STREQ(p.conf.state, "/var/lib/tregd-main");
	ATF_REQUIRE_EQ(p.conf.run_timeout, 30);
	ATF_REQUIRE(conf_run_allowed(&p.conf, "jq"));
	free(p.err);
}

ATF_TC(include_cannot_nest_forever);
ATF_TC_HEAD(include_cannot_nest_forever, tc)
{
	atf_tc_set_md_var(tc, "descr", "a file including itself is stopped");
	atf_tc_set_md_var(tc, "timeout", "10");
}
ATF_TC_BODY(include_cannot_nest_forever, tc)
{
	struct parsed	 p;
	FILE		*fp;
	char		*tmp, *text;

	tmp = write_temp("");
	ATF_REQUIRE(asprintf(&text, "include \"%s\"\n", tmp) != -1);
	/* Rewrite the file so that it includes itself. */
	ATF_REQUIRE((fp = fopen(tmp, "w")) != NULL);
	fputs(text, fp);
	fclose(fp);
	parse_capture(tmp, &p);
	ATF_REQUIRE_EQ(p.rc, -1);
	ATF_REQUIRE_MSG(strstr(p.err, ":1: include nesting too deep") != NULL,
	    "%s", p.err);
	unlink(tmp);
	free(tmp);
	free(text);
	free(p.err);
}

ATF_TC(run_proof_is_kept_but_never_printed);
ATF_TC_HEAD(run_proof_is_kept_but_never_printed, tc)
{
	atf_tc_set_md_var(tc, "descr", "the proof is a shared secret");
}
ATF_TC_BODY(run_proof_is_kept_but_never_printed, tc)
{
	struct parsed	 p;
	char		 path[PATH_MAX], *out;

	config_path(tc, path, sizeof(path), "10.conf");
	parse_capture(path, &p);
	ATF_REQUIRE_MSG(p.rc == 0, "%s", p.err);
	ATF_REQUIRE_STREQ(p.conf.run_proof, "s3cret-proof-0123456789");
	out = print_str(&p.conf);
	ATF_REQUIRE(strstr(out, "s3cret") == NULL);
	ATF_REQUIRE(strstr(out, "\n# run proof is set\n") != NULL);
	ATF_REQUIRE(strstr(p.err, "s3cret") == NULL);
	free(out);
	free(p.err);
}

ATF_TC(run_installed_says_which_clis_the_host_has);
ATF_TC_HEAD(run_installed_says_which_clis_the_host_has, tc)
{
	atf_tc_set_md_var(tc, "descr", "conf_run_scan: an allowed CLI is "
	    "installed when an executable of its name is on the run path");
}
ATF_TC_BODY(run_installed_says_which_clis_the_host_has, tc)
{
	struct tregd_conf	 c;
	char			 dir[512], path[PATH_MAX];
	FILE			*fp;

	ATF_REQUIRE(getcwd(dir, sizeof(dir)) != NULL);
	conf_defaults(&c);
	snprintf(c.run_path, sizeof(c.run_path), "relative:%s", dir);
	snprintf(path, sizeof(path), "%s/gh", dir);
	ATF_REQUIRE((fp = fopen(path, "w")) != NULL);
	fclose(fp);
	ATF_REQUIRE(chmod(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/stripe", dir);
	ATF_REQUIRE((fp = fopen(path, "w")) != NULL);
	fclose(fp);			/* not executable */
	conf_run_scan(&c);
	ATF_CHECK(conf_run_installed(&c, "gh"));
	ATF_CHECK(!conf_run_installed(&c, "stripe"));
	ATF_CHECK(!conf_run_installed(&c, "vercel"));
	ATF_CHECK(!conf_run_installed(&c, "sh"));	/* not allowed */
	ATF_CHECK(!conf_run_installed(&c, NULL));
}

ATF_TC(run_allowed_is_builtin_or_configured);
ATF_TC_HEAD(run_allowed_is_builtin_or_configured, tc)
{
	atf_tc_set_md_var(tc, "descr", "conf_run_allowed: exact names only");
}
ATF_TC_BODY(run_allowed_is_builtin_or_configured, tc)
{
	struct tregd_conf	 c;
	struct parsed		 p;
	char			 path[PATH_MAX];
	int			 i;

	conf_defaults(&c);
	for (i = 0; run_builtin_allow[i] != NULL; i++)
		ATF_CHECK(conf_run_allowed(&c, run_builtin_allow[i]));
	ATF_CHECK_EQ(i, 22);
	ATF_CHECK(conf_run_allowed(&c, "sentry-cli"));
	ATF_CHECK(conf_run_allowed(&c, "aws"));
	ATF_CHECK(!conf_run_allowed(&c, "sh"));
	ATF_CHECK(!conf_run_allowed(&c, ""));
	ATF_CHECK(!conf_run_allowed(&c, NULL));
	ATF_CHECK(!conf_run_allowed(&c, "/usr/bin/gh"));
	ATF_CHECK(!conf_run_allowed(&c, "gh "));

	config_path(tc, path, sizeof(path), "5.conf");
	parse_capture(path, &p);
	ATF_REQUIRE_MSG(p.rc == 0, "%s", p.err);
	ATF_CHECK(conf_run_allowed(&p.conf, "sh"));
	ATF_CHECK(conf_run_allowed(&p.conf, "g++"));
	ATF_CHECK(conf_run_allowed(&p.conf, "python3.11"));
	ATF_CHECK(conf_run_allowed(&p.conf, "gh"));
	ATF_CHECK(!conf_run_allowed(&p.conf, "python3"));
	ATF_CHECK(!conf_run_allowed(&p.conf, "bash"));
	/* sh and echo were given twice: kept once. */
	ATF_CHECK_EQ(p.conf.nrun_allow, 7);
	free(p.err);
}

ATF_TC(star_listens_on_both_families);
ATF_TC_HEAD(star_listens_on_both_families, tc)
{
	atf_tc_set_md_var(tc, "descr", "\"*\" is 0.0.0.0 and ::");
}
ATF_TC_BODY(star_listens_on_both_families, tc)
{
	struct parsed		 p;
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;
	char			 path[PATH_MAX];

	config_path(tc, path, sizeof(path), "3.conf");
	parse_capture(path, &p);
	ATF_REQUIRE_MSG(p.rc == 0, "%s", p.err);
	ATF_REQUIRE_EQ(p.conf.nlisten, 7);
	sin = (struct sockaddr_in *)&p.conf.listen[0].ss;
	ATF_CHECK_EQ(sin->sin_family, AF_INET);
	ATF_CHECK_EQ(sin->sin_addr.s_addr, htonl(INADDR_ANY));
	ATF_CHECK_EQ(ntohs(sin->sin_port), 8080);
	ATF_CHECK_EQ(p.conf.listen[0].sslen, sizeof(*sin));
	sin6 = (struct sockaddr_in6 *)&p.conf.listen[1].ss;
	ATF_CHECK_EQ(sin6->sin6_family, AF_INET6);
	ATF_CHECK(IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr));
	ATF_CHECK_EQ(ntohs(sin6->sin6_port), 8080);
	ATF_CHECK_EQ(p.conf.listen[1].sslen, sizeof(*sin6));
	ATF_CHECK_STREQ(p.conf.listen[1].name, "*");
	sin = (struct sockaddr_in *)&p.conf.listen[2].ss;
	ATF_CHECK_EQ(sin->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	ATF_CHECK_STREQ(p.conf.listen[2].name, "localhost");
	sin6 = (struct sockaddr_in6 *)&p.conf.listen[5].ss;
	ATF_CHECK(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
	ATF_CHECK_EQ(p.conf.listen[5].port, 9000);
	free(p.err);
}

ATF_TC(example_config_is_valid);
ATF_TC_HEAD(example_config_is_valid, tc)
{
	atf_tc_set_md_var(tc, "descr", "etc/tregd.conf parses");
}
ATF_TC_BODY(example_config_is_valid, tc)
{
	struct parsed	 p;
	char		 path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/../../etc/tregd.conf",
	    atf_tc_get_config_var(tc, "srcdir"));
	parse_capture(path, &p);
	ATF_REQUIRE_MSG(p.rc == 0, "%s", p.err);
	free(p.err);
}

ATF_TC_WITHOUT_HEAD(mail_addresses_are_plain);
ATF_TC_BODY(mail_addresses_are_plain, tc)
{
	ATF_CHECK(conf_mail_address("a@b.example"));
	ATF_CHECK(conf_mail_address("tregd+codes@host"));
	ATF_CHECK(!conf_mail_address("-oQ/tmp@x"));
	ATF_CHECK(!conf_mail_address("a b@x"));
	ATF_CHECK(!conf_mail_address("a@x\nBcc: c@d"));
	ATF_CHECK(!conf_mail_address("a@b@c"));
	ATF_CHECK(!conf_mail_address("@b"));
	ATF_CHECK(!conf_mail_address("a@"));
	ATF_CHECK(!conf_mail_address("Name <a@b>"));
	ATF_CHECK(!conf_mail_address(""));
}

ATF_TC_WITHOUT_HEAD(durations_have_one_unit);
ATF_TC_BODY(durations_have_one_unit, tc)
{
	ATF_CHECK_EQ(duration_parse("90s"), 90);
	ATF_CHECK_EQ(duration_parse("30m"), 1800);
	ATF_CHECK_EQ(duration_parse("6h"), 21600);
	ATF_CHECK_EQ(duration_parse("30d"), 2592000);
	ATF_CHECK_EQ(duration_parse("0s"), 0);
	ATF_CHECK_EQ(duration_parse("6"), -1);		/* no unit */
	ATF_CHECK_EQ(duration_parse("h"), -1);		/* no number */
	ATF_CHECK_EQ(duration_parse("6w"), -1);		/* no such unit */
	ATF_CHECK_EQ(duration_parse("-6h"), -1);
	ATF_CHECK_EQ(duration_parse("6 h"), -1);
	ATF_CHECK_EQ(duration_parse("1h30m"), -1);	/* one unit only */
	ATF_CHECK_EQ(duration_parse("99999999999999999999d"), -1);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, keyword_table_is_sorted);
	ATF_TP_ADD_TC(tp, mail_addresses_are_plain);
	ATF_TP_ADD_TC(tp, defaults_print_as_the_empty_config);
	ATF_TP_ADD_TC(tp, good_configs_print_as_their_ok);
	ATF_TP_ADD_TC(tp, canonical_print_parses_back_to_itself);
	ATF_TP_ADD_TC(tp, bad_configs_fail_at_their_line);
	ATF_TP_ADD_TC(tp, failed_parse_leaves_config_untouched);
	ATF_TP_ADD_TC(tp, missing_file_is_an_error);
	ATF_TP_ADD_TC(tp, cmdline_macro_wins_over_file);
	ATF_TP_ADD_TC(tp, file_macros_do_not_outlive_the_parse);
	ATF_TP_ADD_TC(tp, cmdline_symset_rejects_malformed);
	ATF_TP_ADD_TC(tp, self_referencing_macro_does_not_loop);
	ATF_TP_ADD_TC(tp, nul_byte_is_an_error_not_the_end);
	ATF_TP_ADD_TC(tp, include_reads_the_file_next_to_the_includer);
	ATF_TP_ADD_TC(tp, include_cannot_nest_forever);
	ATF_TP_ADD_TC(tp, run_proof_is_kept_but_never_printed);
	ATF_TP_ADD_TC(tp, run_allowed_is_builtin_or_configured);
	ATF_TP_ADD_TC(tp, run_installed_says_which_clis_the_host_has);
	ATF_TP_ADD_TC(tp, star_listens_on_both_families);
	ATF_TP_ADD_TC(tp, example_config_is_valid);
	ATF_TP_ADD_TC(tp, durations_have_one_unit);
	return (atf_no_error());
}
