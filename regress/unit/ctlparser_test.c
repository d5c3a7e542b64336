/*
 * tregctl's command parser: unique prefixes, the "valid commands" help,
 * and the local checks on values before anything reaches the daemon.
 *
 * The unit tests link the daemon's objects, not tregctl's, so the parser
 * is compiled in here; that also lets a case drive parse_table() with a
 * table of its own where the real grammar has no ambiguous prefix.
 */

#include "../../tregctl/parser.c"

#include <atf-c.h>

#define WORDS_MAX	16
/* What "show" accepts, as the help lists it. */
#define SHOW_WORDS	"agents audit config members metrics orgs runs " \
			"secrets status tokens tools users"

static int	 parse_words(struct parse_result *, ...);
static int	 parse_words_table(const struct token *,
		    struct parse_result *, ...);
static int	 vparse(const struct token *, struct parse_result *,
		    va_list);
static void	 expect_cmd(enum ctl_cmd, ...);
static void	 expect_error(const char *, const char *, ...);

static int
vparse(const struct token *table, struct parse_result *res, va_list ap)
{
	char		*words[WORDS_MAX];
	const char	*w;
	int		 n = 0;

	while ((w = va_arg(ap, const char *)) != NULL) {
		ATF_REQUIRE(n < WORDS_MAX);
		words[n++] = (char *)w;
	}
	return (parse_table(table, n, words, res));
}

/* parse_words(&res, "show", "status", NULL) */
static int
parse_words(struct parse_result *res, ...)
{
	va_list	 ap;
	int	 r;

	va_start(ap, res);
	r = vparse(t_main, res, ap);
	va_end(ap);
	return (r);
}

static int
parse_words_table(const struct token *table, struct parse_result *res, ...)
{
	va_list	 ap;
	int	 r;

	va_start(ap, res);
	r = vparse(table, res, ap);
	va_end(ap);
	return (r);
}

/* The words parse into this command. */
static void
expect_cmd(enum ctl_cmd cmd, ...)
{
	struct parse_result	 res;
	va_list			 ap;
	int			 r;

	va_start(ap, cmd);
	r = vparse(t_main, &res, ap);
	va_end(ap);
	ATF_REQUIRE_MSG(r == 0, "parse failed: %s", res.error);
	ATF_CHECK_EQ_MSG(res.action, cmd, "action %d, expected %d",
	    res.action, cmd);
}

/* The words are refused with this error and (unless NULL) valid list. */
static void
expect_error(const char *error, const char *valid, ...)
{
	struct parse_result	 res;
	va_list			 ap;
	int			 r;

	va_start(ap, valid);
	r = vparse(t_main, &res, ap);
	va_end(ap);
	ATF_REQUIRE_EQ_MSG(r, -1, "parse accepted the words");
	ATF_CHECK_STREQ(res.error, error);
	if (valid != NULL)
		ATF_CHECK_STREQ(res.valid, valid);
}

ATF_TC_WITHOUT_HEAD(every_command_parses_in_full);
ATF_TC_BODY(every_command_parses_in_full, tc)
{
	expect_cmd(CTL_SHOW_STATUS, "show", "status", NULL);
	expect_cmd(CTL_SHOW_USERS, "show", "users", NULL);
	expect_cmd(CTL_SHOW_ORGS, "show", "orgs", NULL);
	expect_cmd(CTL_SHOW_TOOLS, "show", "tools", NULL);
	expect_cmd(CTL_SHOW_TOOLS, "show", "tools", "acme", NULL);
	expect_cmd(CTL_SHOW_RUNS, "show", "runs", NULL);
	expect_cmd(CTL_SHOW_AUDIT, "show", "audit", "acme", NULL);
	expect_cmd(CTL_METRICS, "show", "metrics", NULL);
	expect_cmd(CTL_SHOW_MEMBERS, "show", "members", "acme", NULL);
	expect_cmd(CTL_SHOW_AGENTS, "show", "agents", "acme", NULL);
	expect_cmd(CTL_SHOW_SECRETS, "show", "secrets", "acme", NULL);
	expect_cmd(CTL_SHOW_CONFIG, "show", "config", NULL);
	expect_cmd(CTL_USER_DELETE, "user", "delete", "a@example.com", NULL);
	expect_cmd(CTL_USER_DELETE, "user", "delete", "a@example.com",
	    "force", NULL);
	expect_cmd(CTL_USER_ADD, "user", "add", "a@example.com", NULL);
	expect_cmd(CTL_TOKEN_REVOKE, "token", "revoke", "a@example.com",
	    NULL);
	expect_cmd(CTL_IDENTITY_REVOKE, "token", "revoke", "a@example.com",
	    "identity", NULL);
	expect_cmd(CTL_SHOW_TOKENS, "show", "tokens", "a@example.com", NULL);
	expect_cmd(CTL_ORG_DELETE, "org", "delete", "acme", NULL);
	expect_cmd(CTL_KEY_ROTATE, "key", "rotate", NULL);
	expect_cmd(CTL_KEY_NEW, "key", "new", NULL);
	expect_cmd(CTL_KEY_LIST, "key", "list", NULL);
	expect_cmd(CTL_KEY_RELOAD, "key", "reload", NULL);
	expect_cmd(CTL_KEY_USE, "key", "use", "0123456789abcdef", NULL);
	expect_cmd(CTL_KEY_RETIRE, "key", "retire", "0123456789abcdef",
	    NULL);
	expect_cmd(CTL_RELOAD, "reload", NULL);
	expect_cmd(CTL_LOG_VERBOSE, "log", "verbose", NULL);
	expect_cmd(CTL_LOG_BRIEF, "log", "brief", NULL);
}

ATF_TC_WITHOUT_HEAD(unique_prefixes_select_the_command);
ATF_TC_BODY(unique_prefixes_select_the_command, tc)
{
	expect_cmd(CTL_SHOW_STATUS, "sh", "st", NULL);
	expect_cmd(CTL_SHOW_STATUS, "s", "st", NULL);
	expect_cmd(CTL_SHOW_SECRETS, "s", "se", "acme", NULL);
	expect_cmd(CTL_SHOW_MEMBERS, "sh", "mem", "acme", NULL);
	expect_cmd(CTL_SHOW_AGENTS, "sh", "ag", "acme", NULL);
	expect_cmd(CTL_SHOW_CONFIG, "sh", "c", NULL);
	expect_cmd(CTL_USER_DELETE, "u", "d", "a@example.com", "f", NULL);
	expect_cmd(CTL_SHOW_USERS, "sho", "u", NULL);
	expect_cmd(CTL_SHOW_RUNS, "sh", "r", "acme", "lim", "3", NULL);
	expect_cmd(CTL_USER_ADD, "u", "a", "a@example.com", "r", "adm",
	    NULL);
	expect_cmd(CTL_KEY_ROTATE, "k", "rot", NULL);
	expect_cmd(CTL_RELOAD, "rel", NULL);
	expect_cmd(CTL_LOG_BRIEF, "l", "b", NULL);
	expect_cmd(CTL_LOG_VERBOSE, "lo", "verb", NULL);
	expect_cmd(CTL_TOKEN_REVOKE, "to", "rev", "a@example.com", "o",
	    "acme", NULL);
	expect_cmd(CTL_ORG_DELETE, "o", "d", "acme", NULL);
	expect_cmd(CTL_BACKUP, "b", "/var/backups/tregd", NULL);
}

ATF_TC_WITHOUT_HEAD(a_word_longer_than_the_keyword_is_refused);
ATF_TC_BODY(a_word_longer_than_the_keyword_is_refused, tc)
{
	expect_error("unknown argument: showx",
	    "backup key log org reload show token user", "showx", "status",
	    NULL);
	expect_error("unknown argument: statuses",
	    SHOW_WORDS, "show", "statuses",
	    NULL);
}

/* A table of its own: prefixes of prefixes, which the grammar lacks. */
static const struct token t_test_end[] = {
	{ ENDTOKEN,	"",		CTL_NONE,	NULL },
	TABLE_END
};
static const struct token t_test[] = {
	{ KEYWORD,	"stat",		CTL_SHOW_STATUS, t_test_end },
	{ KEYWORD,	"stats",	CTL_METRICS,	t_test_end },
	{ KEYWORD,	"status",	CTL_SHOW_ORGS,	t_test_end },
	{ KEYWORD,	"users",	CTL_SHOW_USERS,	t_test_end },
	TABLE_END
};

ATF_TC_WITHOUT_HEAD(ambiguous_prefix_lists_the_candidates);
ATF_TC_BODY(ambiguous_prefix_lists_the_candidates, tc)
{
	struct parse_result	 res;

	ATF_REQUIRE_EQ(parse_words_table(t_test, &res, "st", NULL), -1);
	ATF_CHECK_STREQ(res.error, "ambiguous argument: st");
	ATF_CHECK_STREQ(res.valid, "stat stats status");

	ATF_REQUIRE_EQ(parse_words_table(t_test, &res, "statu", NULL), 0);
	ATF_CHECK_EQ(res.action, CTL_SHOW_ORGS);
	ATF_REQUIRE_EQ(parse_words_table(t_test, &res, "u", NULL), 0);
	ATF_CHECK_EQ(res.action, CTL_SHOW_USERS);
}

ATF_TC_WITHOUT_HEAD(shared_prefixes_of_show_are_ambiguous);
ATF_TC_BODY(shared_prefixes_of_show_are_ambiguous, tc)
{
	expect_error("ambiguous argument: s", "secrets status", "show", "s",
	    NULL);
	expect_error("ambiguous argument: m", "members metrics", "show", "m",
	    NULL);
	expect_error("ambiguous argument: to", "tokens tools", "show", "to",
	    NULL);
	expect_error("ambiguous argument: a", "agents audit", "show", "a",
	    NULL);
}

ATF_TC_WITHOUT_HEAD(user_delete_takes_force_once);
ATF_TC_BODY(user_delete_takes_force_once, tc)
{
	struct parse_result	 res;

	ATF_REQUIRE_EQ(parse_words(&res, "user", "delete", "a@example.com",
	    NULL), 0);
	ATF_CHECK_EQ(res.force, 0);
	ATF_CHECK_STREQ(res.email, "a@example.com");
	ATF_REQUIRE_EQ(parse_words(&res, "user", "delete", "a@example.com",
	    "force", NULL), 0);
	ATF_CHECK_EQ(res.force, 1);
	expect_error("unknown argument: force", "<end>", "user", "delete",
	    "a@example.com", "force", "force", NULL);
	expect_error("missing argument", "EMAIL", "user", "delete", NULL);
	expect_error("unknown argument: now", "<end> force", "user", "delete",
	    "a@example.com", "now", NULL);
}

ATF_TC_WITHOUT_HEAD(org_listings_need_an_org);
ATF_TC_BODY(org_listings_need_an_org, tc)
{
	struct parse_result	 res;

	expect_error("missing argument", "ORG", "show", "members", NULL);
	expect_error("missing argument", "ORG", "show", "agents", NULL);
	expect_error("missing argument", "ORG", "show", "secrets", NULL);
	expect_error("unknown argument: x", "<end>", "show", "config", "x",
	    NULL);
	ATF_REQUIRE_EQ(parse_words(&res, "show", "secrets", "acme", NULL), 0);
	ATF_CHECK_STREQ(res.org, "acme");
}

ATF_TC_WITHOUT_HEAD(exact_keyword_wins_over_a_longer_one);
ATF_TC_BODY(exact_keyword_wins_over_a_longer_one, tc)
{
	struct parse_result	 res;

	ATF_REQUIRE_EQ(parse_words_table(t_test, &res, "stat", NULL), 0);
	ATF_CHECK_EQ(res.action, CTL_SHOW_STATUS);
	ATF_REQUIRE_EQ(parse_words_table(t_test, &res, "stats", NULL), 0);
	ATF_CHECK_EQ(res.action, CTL_METRICS);
}

ATF_TC_WITHOUT_HEAD(unknown_command_lists_valid_commands);
ATF_TC_BODY(unknown_command_lists_valid_commands, tc)
{
	expect_error("unknown argument: frobnicate",
	    "backup key log org reload show token user", "frobnicate", NULL);
	expect_error("unknown argument: everything",
	    SHOW_WORDS, "show",
	    "everything", NULL);
	expect_error("unknown argument: loud", "brief verbose", "log",
	    "loud", NULL);
}

ATF_TC_WITHOUT_HEAD(missing_argument_lists_what_may_follow);
ATF_TC_BODY(missing_argument_lists_what_may_follow, tc)
{
	expect_error("missing argument",
	    "backup key log org reload show token user", NULL);
	expect_error("missing argument",
	    SHOW_WORDS, "show", NULL);
	expect_error("missing argument", "EMAIL", "user", "add", NULL);
	expect_error("missing argument", "ORG", "org", "delete", NULL);
	expect_error("missing argument", "ORG", "user", "add",
	    "a@example.com", "org", NULL);
	expect_error("missing argument", "admin member owner viewer", "user",
	    "add", "a@example.com", "role", NULL);
	expect_error("missing argument", "N", "show", "runs", "limit", NULL);
	expect_error("missing argument", "list new reload retire rotate use",
	    "key", NULL);
	expect_error("missing argument", "ID", "key", "use", NULL);
}

ATF_TC_WITHOUT_HEAD(trailing_words_are_refused);
ATF_TC_BODY(trailing_words_are_refused, tc)
{
	expect_error("unknown argument: now", "<end>", "reload", "now", NULL);
	expect_error("unknown argument: x", "<end>", "show", "status", "x",
	    NULL);
	expect_error("unknown argument: extra", "<end>", "show", "tools",
	    "acme", "extra", NULL);
}

ATF_TC_WITHOUT_HEAD(show_runs_takes_an_org_and_a_limit);
ATF_TC_BODY(show_runs_takes_an_org_and_a_limit, tc)
{
	struct parse_result	 res;

	ATF_REQUIRE_EQ(parse_words(&res, "show", "runs", NULL), 0);
	ATF_CHECK_EQ(res.limit, 0);
	ATF_CHECK_STREQ(res.org, "");

	ATF_REQUIRE_EQ(parse_words(&res, "show", "runs", "acme", "limit",
	    "20", NULL), 0);
	ATF_CHECK_EQ(res.action, CTL_SHOW_RUNS);
	ATF_CHECK_STREQ(res.org, "acme");
	ATF_CHECK_EQ(res.limit, 20);

	ATF_REQUIRE_EQ(parse_words(&res, "show", "runs", "limit", "500",
	    NULL), 0);
	ATF_CHECK_STREQ(res.org, "");
	ATF_CHECK_EQ(res.limit, 500);

	ATF_REQUIRE_EQ(parse_words(&res, "show", "runs", "limit", "1",
	    NULL), 0);
	ATF_CHECK_EQ(res.limit, 1);

	/* The org comes first, as in the synopsis. */
	expect_error("unknown argument: acme", "<end>", "show", "runs",
	    "limit", "5", "acme", NULL);
}

ATF_TC_WITHOUT_HEAD(bad_limit_is_refused);
ATF_TC_BODY(bad_limit_is_refused, tc)
{
	expect_error("limit 0: too small (1 to 500)", NULL, "show", "runs",
	    "limit", "0", NULL);
	expect_error("limit 501: too large (1 to 500)", NULL, "show", "runs",
	    "limit", "501", NULL);
	expect_error("limit -3: too small (1 to 500)", NULL, "show", "runs",
	    "limit", "-3", NULL);
	expect_error("limit ten: invalid (1 to 500)", NULL, "show", "runs",
	    "limit", "ten", NULL);
	expect_error("limit 5x: invalid (1 to 500)", NULL, "show", "runs",
	    "acme", "limit", "5x", NULL);
	expect_error("limit : invalid (1 to 500)", NULL, "show", "runs",
	    "limit", "", NULL);
}

ATF_TC_WITHOUT_HEAD(show_tools_and_audit_take_an_optional_org);
ATF_TC_BODY(show_tools_and_audit_take_an_optional_org, tc)
{
	struct parse_result	 res;

	ATF_REQUIRE_EQ(parse_words(&res, "show", "tools", NULL), 0);
	ATF_CHECK_STREQ(res.org, "");
	ATF_REQUIRE_EQ(parse_words(&res, "show", "tools", "acme", NULL), 0);
	ATF_CHECK_STREQ(res.org, "acme");
	ATF_REQUIRE_EQ(parse_words(&res, "sh", "au", "beta-2", NULL), 0);
	ATF_CHECK_EQ(res.action, CTL_SHOW_AUDIT);
	ATF_CHECK_STREQ(res.org, "beta-2");
}

ATF_TC_WITHOUT_HEAD(user_add_takes_org_and_role_in_any_order);
ATF_TC_BODY(user_add_takes_org_and_role_in_any_order, tc)
{
	struct parse_result	 res;

	ATF_REQUIRE_EQ(parse_words(&res, "user", "add", "alice@example.com",
	    NULL), 0);
	ATF_CHECK_EQ(res.action, CTL_USER_ADD);
	ATF_CHECK_STREQ(res.email, "alice@example.com");
	ATF_CHECK_STREQ(res.org, "");
	ATF_CHECK_STREQ(res.role, "");

	ATF_REQUIRE_EQ(parse_words(&res, "user", "add", "bob@example.com",
	    "org", "Acme Corp", "role", "member", NULL), 0);
	ATF_CHECK_STREQ(res.email, "bob@example.com");
	ATF_CHECK_STREQ(res.org, "Acme Corp");
	ATF_CHECK_STREQ(res.role, "member");

	ATF_REQUIRE_EQ(parse_words(&res, "user", "add", "bob@example.com",
	    "role", "v", "org", "acme", NULL), 0);
	ATF_CHECK_STREQ(res.org, "acme");
	ATF_CHECK_STREQ(res.role, "viewer");
}

ATF_TC_WITHOUT_HEAD(user_add_refuses_a_bad_or_repeated_role);
ATF_TC_BODY(user_add_refuses_a_bad_or_repeated_role, tc)
{
	expect_error("unknown argument: root", "admin member owner viewer",
	    "user", "add", "a@example.com", "role", "root", NULL);
	expect_error("role given twice", NULL, "user", "add",
	    "a@example.com", "role", "admin", "role", "owner", NULL);
	expect_error("org given twice", NULL, "user", "add",
	    "a@example.com", "org", "a", "org", "b", NULL);
}

ATF_TC_WITHOUT_HEAD(token_revoke_takes_an_optional_org);
ATF_TC_BODY(token_revoke_takes_an_optional_org, tc)
{
	struct parse_result	 res;

	ATF_REQUIRE_EQ(parse_words(&res, "token", "revoke", "a@example.com",
	    NULL), 0);
	ATF_CHECK_STREQ(res.email, "a@example.com");
	ATF_CHECK_STREQ(res.org, "");
	ATF_REQUIRE_EQ(parse_words(&res, "token", "revoke", "a@example.com",
	    "org", "acme", NULL), 0);
	ATF_CHECK_EQ(res.action, CTL_TOKEN_REVOKE);
	ATF_CHECK_STREQ(res.org, "acme");
	expect_error("missing argument", "EMAIL", "token", "revoke", NULL);
}

ATF_TC_WITHOUT_HEAD(email_and_org_lengths_match_the_request);
ATF_TC_BODY(email_and_org_lengths_match_the_request, tc)
{
	struct parse_result	 res;
	char			 email[300], org[200];

	/* 255 bytes fit the request's email with its NUL; 256 do not. */
	memset(email, 'a', sizeof(email));
	memcpy(email + 243, "@example.com", 12);
	email[255] = '\0';
	ATF_REQUIRE_EQ(parse_words(&res, "user", "add", email + 0, NULL), 0);
	ATF_CHECK_EQ(strlen(res.email), 255);
	memmove(email + 1, email, 256);
	ATF_REQUIRE_EQ(strlen(email), 256);
	ATF_REQUIRE_EQ(parse_words(&res, "user", "add", email, NULL), -1);
	ATF_CHECK_STREQ(res.error, "email too long (256 bytes, at most 255)");

	memset(org, 'o', sizeof(org));
	org[128] = '\0';
	ATF_REQUIRE_EQ(parse_words(&res, "org", "delete", org, NULL), 0);
	ATF_CHECK_EQ(strlen(res.org), 128);
	org[128] = 'o';
	org[129] = '\0';
	ATF_REQUIRE_EQ(parse_words(&res, "org", "delete", org, NULL), -1);
	ATF_CHECK_STREQ(res.error, "org too long (129 bytes, at most 128)");
}

ATF_TC_WITHOUT_HEAD(empty_or_control_characters_are_refused);
ATF_TC_BODY(empty_or_control_characters_are_refused, tc)
{
	expect_error("email is empty", NULL, "user", "add", "", NULL);
	expect_error("org is empty", NULL, "org", "delete", "", NULL);
	expect_error("email contains a control character", NULL, "user",
	    "add", "a@example.com\n", NULL);
	expect_error("org contains a control character", NULL, "show",
	    "tools", "ac\033[2Jme", NULL);
}

ATF_TC_WITHOUT_HEAD(a_key_id_is_sixteen_lower_case_hex_digits);
ATF_TC_BODY(a_key_id_is_sixteen_lower_case_hex_digits, tc)
{
	struct parse_result	 res;

	ATF_REQUIRE_EQ(parse_words(&res, "key", "use", "00ff00ff00ff00ff",
	    NULL), 0);
	ATF_CHECK_STREQ(res.key, "00ff00ff00ff00ff");
	expect_error("key id 00FF00FF00FF00FF: not 16 lower-case hex digits "
	    "(see key list)", NULL, "key", "use", "00FF00FF00FF00FF", NULL);
	expect_error("key id 00ff: not 16 lower-case hex digits (see key "
	    "list)", NULL, "key", "retire", "00ff", NULL);
	expect_error("key id ../../etc/passwd: not 16 lower-case hex digits "
	    "(see key list)", NULL, "key", "use", "../../etc/passwd", NULL);
	expect_error("ambiguous argument: re", "reload retire", "key", "re",
	    NULL);
}

ATF_TC_WITHOUT_HEAD(a_failed_parse_leaves_no_command);
ATF_TC_BODY(a_failed_parse_leaves_no_command, tc)
{
	struct parse_result	 res;

	/* The earlier words matched an action; the command still fails. */
	ATF_REQUIRE_EQ(parse_words(&res, "show", "runs", "limit", NULL), -1);
	ATF_REQUIRE_EQ(parse_words(&res, "org", "delete", NULL), -1);
	ATF_CHECK_STREQ(res.error, "missing argument");
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, every_command_parses_in_full);
	ATF_TP_ADD_TC(tp, unique_prefixes_select_the_command);
	ATF_TP_ADD_TC(tp, a_word_longer_than_the_keyword_is_refused);
	ATF_TP_ADD_TC(tp, ambiguous_prefix_lists_the_candidates);
	ATF_TP_ADD_TC(tp, exact_keyword_wins_over_a_longer_one);
	ATF_TP_ADD_TC(tp, shared_prefixes_of_show_are_ambiguous);
	ATF_TP_ADD_TC(tp, user_delete_takes_force_once);
	ATF_TP_ADD_TC(tp, org_listings_need_an_org);
	ATF_TP_ADD_TC(tp, unknown_command_lists_valid_commands);
	ATF_TP_ADD_TC(tp, missing_argument_lists_what_may_follow);
	ATF_TP_ADD_TC(tp, trailing_words_are_refused);
	ATF_TP_ADD_TC(tp, show_runs_takes_an_org_and_a_limit);
	ATF_TP_ADD_TC(tp, bad_limit_is_refused);
	ATF_TP_ADD_TC(tp, show_tools_and_audit_take_an_optional_org);
	ATF_TP_ADD_TC(tp, user_add_takes_org_and_role_in_any_order);
	ATF_TP_ADD_TC(tp, user_add_refuses_a_bad_or_repeated_role);
	ATF_TP_ADD_TC(tp, token_revoke_takes_an_optional_org);
	ATF_TP_ADD_TC(tp, email_and_org_lengths_match_the_request);
	ATF_TP_ADD_TC(tp, empty_or_control_characters_are_refused);
	ATF_TP_ADD_TC(tp, a_key_id_is_sixteen_lower_case_hex_digits);
	ATF_TP_ADD_TC(tp, a_failed_parse_leaves_no_command);
	return (atf_no_error());
}
