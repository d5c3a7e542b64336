/*
 * tregctl: the command-line parser.
 *
 * Each position of a command line has a static table of the tokens it
 * accepts; a matched token names the table for the next word.  Keywords
 * match on any unique prefix ("sh st" is "show status"); a keyword, even
 * abbreviated, wins over a free value (an org name) in the same table, so
 * the grammar stays predictable.  Values are checked here, before
 * anything is sent, with the daemon's own limits.
 */

#include <sys/types.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"

enum token_type {
	ENDTOKEN,	/* the command may end here */
	KEYWORD,	/* a fixed word, abbreviated to a unique prefix */
	EMAIL,		/* a user's email */
	ORGNAME,	/* an org's slug or, for user add, its name */
	ROLE,		/* a role keyword, copied into the request */
	LIMIT,		/* a number of rows, 1..PARSE_RUNS_LIMIT_MAX */
	FORCE,		/* the keyword "force": res->force */
	DIRECTORY,	/* a directory: res->dir */
	KEYID		/* a key id, 16 hex digits: res->key */
};

struct token {
	enum token_type		 type;
	const char		*keyword;
	int			 value;	/* enum ctl_cmd or CTL_NONE */
	const struct token	*next;
};

static const struct token t_main[];
static const struct token t_backup[];
static const struct token t_show[];
static const struct token t_show_org[];
static const struct token t_show_email[];
static const struct token t_org_required[];
static const struct token t_show_runs[];
static const struct token t_runs_limit[];
static const struct token t_limit[];
static const struct token t_user[];
static const struct token t_user_email[];
static const struct token t_user_opts[];
static const struct token t_user_org[];
static const struct token t_user_role[];
static const struct token t_delete_email[];
static const struct token t_delete_opts[];
static const struct token t_token[];
static const struct token t_revoke_email[];
static const struct token t_revoke_opts[];
static const struct token t_revoke_org[];
static const struct token t_org[];
static const struct token t_org_slug[];
static const struct token t_key[];
static const struct token t_key_id[];
static const struct token t_log[];
static const struct token t_end[];

/* Every table ends with a KEYWORD entry whose keyword is NULL. */
#define TABLE_END	{ KEYWORD, NULL, CTL_NONE, NULL }

static const struct token t_main[] = {
	{ KEYWORD,	"backup",	CTL_BACKUP,	t_backup },
	{ KEYWORD,	"key",		CTL_NONE,	t_key },
	{ KEYWORD,	"log",		CTL_NONE,	t_log },
	{ KEYWORD,	"org",		CTL_NONE,	t_org },
	{ KEYWORD,	"reload",	CTL_RELOAD,	t_end },
	{ KEYWORD,	"show",		CTL_NONE,	t_show },
	{ KEYWORD,	"token",	CTL_NONE,	t_token },
	{ KEYWORD,	"user",		CTL_NONE,	t_user },
	TABLE_END
};

static const struct token t_backup[] = {
	{ DIRECTORY,	"",		CTL_NONE,	t_end },
	TABLE_END
};

static const struct token t_show[] = {
	{ KEYWORD,	"agents",	CTL_SHOW_AGENTS, t_org_required },
	{ KEYWORD,	"audit",	CTL_SHOW_AUDIT,	t_show_org },
	{ KEYWORD,	"config",	CTL_SHOW_CONFIG, t_end },
	{ KEYWORD,	"members",	CTL_SHOW_MEMBERS, t_org_required },
	{ KEYWORD,	"metrics",	CTL_METRICS,	t_end },
	{ KEYWORD,	"orgs",		CTL_SHOW_ORGS,	t_end },
	{ KEYWORD,	"runs",		CTL_SHOW_RUNS, t_show_runs },
	{ KEYWORD,	"secrets",	CTL_SHOW_SECRETS, t_org_required },
	{ KEYWORD,	"status",	CTL_SHOW_STATUS, t_end },
	{ KEYWORD,	"tokens",	CTL_SHOW_TOKENS, t_show_email },
	{ KEYWORD,	"tools",	CTL_SHOW_TOOLS,	t_show_org },
	{ KEYWORD,	"users",	CTL_SHOW_USERS,	t_end },
	TABLE_END
};

static const struct token t_show_email[] = {
	{ EMAIL,	"",		CTL_NONE,	t_end },
	TABLE_END
};

static const struct token t_show_org[] = {
	{ ENDTOKEN,	"",		CTL_NONE,	NULL },
	{ ORGNAME,	"",		CTL_NONE,	t_end },
	TABLE_END
};

static const struct token t_org_required[] = {
	{ ORGNAME,	"",		CTL_NONE,	t_end },
	TABLE_END
};

static const struct token t_show_runs[] = {
	{ ENDTOKEN,	"",		CTL_NONE,	NULL },
	{ KEYWORD,	"limit",	CTL_NONE,	t_limit },
	{ ORGNAME,	"",		CTL_NONE,	t_runs_limit },
	TABLE_END
};

static const struct token t_runs_limit[] = {
	{ ENDTOKEN,	"",		CTL_NONE,	NULL },
	{ KEYWORD,	"limit",	CTL_NONE,	t_limit },
	TABLE_END
};

static const struct token t_limit[] = {
	{ LIMIT,	"",		CTL_NONE,	t_end },
	TABLE_END
};

static const struct token t_user[] = {
	{ KEYWORD,	"add",		CTL_USER_ADD, t_user_email },
	{ KEYWORD,	"delete",	CTL_USER_DELETE, t_delete_email },
	TABLE_END
};

static const struct token t_delete_email[] = {
	{ EMAIL,	"",		CTL_NONE,	t_delete_opts },
	TABLE_END
};

static const struct token t_delete_opts[] = {
	{ ENDTOKEN,	"",		CTL_NONE,	NULL },
	{ FORCE,	"force",	CTL_NONE,	t_end },
	TABLE_END
};

static const struct token t_user_email[] = {
	{ EMAIL,	"",		CTL_NONE,	t_user_opts },
	TABLE_END
};

/* org and role may come in either order, each at most once. */
static const struct token t_user_opts[] = {
	{ ENDTOKEN,	"",		CTL_NONE,	NULL },
	{ KEYWORD,	"org",		CTL_NONE,	t_user_org },
	{ KEYWORD,	"role",		CTL_NONE,	t_user_role },
	TABLE_END
};

static const struct token t_user_org[] = {
	{ ORGNAME,	"",		CTL_NONE,	t_user_opts },
	TABLE_END
};

static const struct token t_user_role[] = {
	{ ROLE,		"admin",	CTL_NONE,	t_user_opts },
	{ ROLE,		"member",	CTL_NONE,	t_user_opts },
	{ ROLE,		"owner",	CTL_NONE,	t_user_opts },
	{ ROLE,		"viewer",	CTL_NONE,	t_user_opts },
	TABLE_END
};

static const struct token t_token[] = {
	{ KEYWORD,	"revoke",	CTL_TOKEN_REVOKE, t_revoke_email },
	TABLE_END
};

static const struct token t_revoke_email[] = {
	{ EMAIL,	"",		CTL_NONE,	t_revoke_opts },
	TABLE_END
};

static const struct token t_revoke_opts[] = {
	{ ENDTOKEN,	"",		CTL_NONE,	NULL },
	{ KEYWORD,	"identity",	CTL_IDENTITY_REVOKE, t_end },
	{ KEYWORD,	"org",		CTL_NONE,	t_revoke_org },
	TABLE_END
};

static const struct token t_revoke_org[] = {
	{ ORGNAME,	"",		CTL_NONE,	t_end },
	TABLE_END
};

static const struct token t_org[] = {
	{ KEYWORD,	"delete",	CTL_ORG_DELETE,	t_org_slug },
	TABLE_END
};

static const struct token t_org_slug[] = {
	{ ORGNAME,	"",		CTL_NONE,	t_end },
	TABLE_END
};

static const struct token t_key[] = {
	{ KEYWORD,	"list",		CTL_KEY_LIST,	t_end },
	{ KEYWORD,	"new",		CTL_KEY_NEW,	t_end },
	{ KEYWORD,	"reload",	CTL_KEY_RELOAD,	t_end },
	{ KEYWORD,	"retire",	CTL_KEY_RETIRE,	t_key_id },
	{ KEYWORD,	"rotate",	CTL_KEY_ROTATE,	t_end },
	{ KEYWORD,	"use",		CTL_KEY_USE,	t_key_id },
	TABLE_END
};

static const struct token t_key_id[] = {
	{ KEYID,	"",		CTL_NONE,	t_end },
	TABLE_END
};

static const struct token t_log[] = {
	{ KEYWORD,	"brief",	CTL_LOG_BRIEF,	t_end },
	{ KEYWORD,	"verbose",	CTL_LOG_VERBOSE, t_end },
	TABLE_END
};

static const struct token t_end[] = {
	{ ENDTOKEN,	"",		CTL_NONE,	NULL },
	TABLE_END
};

static int	 parse_table(const struct token *, int, char *[],
		    struct parse_result *);
static const struct token *match_keyword(const struct token *, const char *,
		    struct parse_result *);
static const struct token *match_value(const struct token *, const char *,
		    struct parse_result *);
static int	 apply_token(const struct token *, const char *,
		    struct parse_result *);
static int	 check_text(const char *, size_t, const char *,
		    struct parse_result *);
static int	 fail(struct parse_result *, const struct token *,
		    const char *, const char *, ...)
		    __attribute__((__format__ (printf, 4, 5)));
static void	 list_valid(struct parse_result *, const struct token *,
		    const char *);
static const char *token_name(const struct token *);
static int	 is_keyword(const struct token *);

int
parse(int argc, char *argv[], struct parse_result *res)
{
	return (parse_table(t_main, argc, argv, res));
}

/*
 * Walk the words through the tables.  At the end of the words the table
 * reached must allow the command to end.
 */
static int
parse_table(const struct token *table, int argc, char *argv[],
    struct parse_result *res)
{
	const struct token	*t;
	int			 i;

	memset(res, 0, sizeof(*res));
	res->action = CTL_NONE;

	for (i = 0; i < argc; i++) {
		if ((t = match_keyword(table, argv[i], res)) == NULL &&
		    res->error[0] != '\0')
			return (-1);
		if (t == NULL && (t = match_value(table, argv[i], res)) ==
		    NULL)
			return (-1);
		if (apply_token(t, argv[i], res) == -1)
			return (-1);
		table = t->next;
	}
	for (t = table; t->keyword != NULL; t++)
		if (t->type == ENDTOKEN)
			break;
	if (t->keyword == NULL || res->action == CTL_NONE)
		return (fail(res, table, NULL, "missing argument"));
	return (0);
}

/*
 * An exact keyword wins; otherwise a prefix must be unique.  NULL with
 * res->error empty: no keyword fits, the word may be a value.
 */
static const struct token *
match_keyword(const struct token *table, const char *word,
    struct parse_result *res)
{
	const struct token	*t, *found = NULL;
	size_t			 len = strlen(word);
	int			 n = 0;

	if (len == 0)
		return (NULL);
	for (t = table; t->keyword != NULL; t++) {
		if (!is_keyword(t))
			continue;
		if (strcmp(word, t->keyword) == 0)
			return (t);
		if (strncmp(word, t->keyword, len) == 0) {
			found = t;
			n++;
		}
	}
	if (n > 1) {
		fail(res, NULL, NULL, "ambiguous argument: %s", word);
		list_valid(res, table, word);
		return (NULL);
	}
	return (found);
}

/* The one value token of the table, if any; its check comes later. */
static const struct token *
match_value(const struct token *table, const char *word,
    struct parse_result *res)
{
	const struct token	*t;

	for (t = table; t->keyword != NULL; t++)
		if (t->type == EMAIL || t->type == ORGNAME ||
		    t->type == LIMIT || t->type == DIRECTORY ||
		    t->type == KEYID)
			return (t);
	fail(res, table, NULL, "unknown argument: %s", word);
	return (NULL);
}

static int
apply_token(const struct token *t, const char *word,
    struct parse_result *res)
{
	const char	*errstr;

	switch (t->type) {
	case KEYWORD:
		if (t->value != CTL_NONE)
			res->action = t->value;
		return (0);
	case FORCE:
		res->force = 1;
		return (0);
	case ROLE:
		if (res->role[0] != '\0')
			return (fail(res, NULL, NULL, "role given twice"));
		strlcpy(res->role, t->keyword, sizeof(res->role));
		return (0);
	case EMAIL:
		if (check_text(word, sizeof(res->email), "email", res) == -1)
			return (-1);
		strlcpy(res->email, word, sizeof(res->email));
		return (0);
	case ORGNAME:
		if (res->org[0] != '\0')
			return (fail(res, NULL, NULL, "org given twice"));
		if (check_text(word, sizeof(res->org), "org", res) == -1)
			return (-1);
		strlcpy(res->org, word, sizeof(res->org));
		return (0);
	case DIRECTORY:
		if (strlen(word) == 0 || strlcpy(res->dir, word,
		    sizeof(res->dir)) >= sizeof(res->dir))
			return (fail(res, NULL, NULL, "directory: bad path"));
		return (0);
	case KEYID:
		if (strlen(word) != PARSE_KEY_HEX ||
		    strspn(word, "0123456789abcdef") != PARSE_KEY_HEX)
			return (fail(res, NULL, NULL, "key id %s: not %d "
			    "lower-case hex digits (see key list)", word,
			    PARSE_KEY_HEX));
		strlcpy(res->key, word, sizeof(res->key));
		return (0);
	case LIMIT:
		res->limit = strtonum(word, 1, PARSE_RUNS_LIMIT_MAX, &errstr);
		if (errstr != NULL)
			return (fail(res, NULL, NULL, "limit %s: %s "
			    "(1 to %d)", word, errstr, PARSE_RUNS_LIMIT_MAX));
		return (0);
	case ENDTOKEN:
		break;
	}
	return (fail(res, NULL, NULL, "internal error: token %d", t->type));
}

/* Non-empty, shorter than the request's field, no control bytes. */
static int
check_text(const char *word, size_t size, const char *what,
    struct parse_result *res)
{
	const unsigned char	*p;
	size_t			 len = strlen(word);

	if (len == 0)
		return (fail(res, NULL, NULL, "%s is empty", what));
	if (len >= size)
		return (fail(res, NULL, NULL, "%s too long (%zu bytes, at "
		    "most %zu)", what, len, size - 1));
	for (p = (const unsigned char *)word; *p != '\0'; p++)
		if (iscntrl(*p))
			return (fail(res, NULL, NULL,
			    "%s contains a control character", what));
	return (0);
}

/* Record the error and, given a table, what it would have accepted. */
static int
fail(struct parse_result *res, const struct token *table, const char *prefix,
    const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(res->error, sizeof(res->error), fmt, ap);
	va_end(ap);
	if (table != NULL)
		list_valid(res, table, prefix);
	return (-1);
}

/* "show user ..." or, for an ambiguous prefix, only the candidates. */
static void
list_valid(struct parse_result *res, const struct token *table,
    const char *prefix)
{
	const struct token	*t;
	size_t			 plen;

	plen = prefix != NULL ? strlen(prefix) : 0;
	res->valid[0] = '\0';
	for (t = table; t->keyword != NULL; t++) {
		if (prefix != NULL && (!is_keyword(t) ||
		    strncmp(prefix, t->keyword, plen) != 0))
			continue;
		if (res->valid[0] != '\0')
			strlcat(res->valid, " ", sizeof(res->valid));
		strlcat(res->valid, token_name(t), sizeof(res->valid));
	}
}

static const char *
token_name(const struct token *t)
{
	switch (t->type) {
	case ENDTOKEN:
		return ("<end>");
	case EMAIL:
		return ("EMAIL");
	case ORGNAME:
		return ("ORG");
	case LIMIT:
		return ("N");
	case DIRECTORY:
		return ("DIR");
	case KEYID:
		return ("ID");
	case KEYWORD:
	case ROLE:
	case FORCE:
		break;
	}
	return (t->keyword);
}

static int
is_keyword(const struct token *t)
{
	return (t->type == KEYWORD || t->type == ROLE || t->type == FORCE);
}
