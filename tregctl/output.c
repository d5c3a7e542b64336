/*
 * tregctl: the output backends.
 *
 * json_output prints the daemon's document, indented.  text_output
 * renders it for a person: columns for lists, "key: value" lines for
 * objects.  Every string came from users of the server (emails, tool
 * names, argv), so the text backend escapes control bytes before they
 * reach a terminal.
 */

#include <sys/types.h>

#include <err.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tregctl.h"

struct column {
	const char	*title;
	const char	*key;
	/* NULL: fmt_value */
	char		*(*format)(const json_t *);
};

struct text_view {
	enum ctl_cmd		 cmd;
	void			 (*show)(const json_t *);
	const struct column	*columns;		/* for show_list */
};

static void	 json_result(enum ctl_cmd, const json_t *);
static void	 json_failed(const json_t *);
static void	 json_error(const char *, const char *);
static void	 text_result(enum ctl_cmd, const json_t *);
static void	 text_failed(const json_t *);
static void	 text_error(const char *, const char *);
static void	 show_text(const json_t *);
static void	 show_status(const json_t *);
static void	 show_user_add(const json_t *);
static void	 show_metrics(const json_t *);
static void	 show_user_delete(const json_t *);
static char	*fmt_access(const json_t *);
static void	 show_object(const json_t *);
static void	 show_list(const json_t *, const struct column *);
static char	*fmt_value(const json_t *);
static char	*fmt_memberships(const json_t *);
static char	*fmt_argv(const json_t *);
static char	*fmt_duration(int64_t);
static char	*escape(const char *, size_t);
static void	 put_escaped(FILE *, const char *, size_t, int);
static char	*xstrdup(const char *);
static char	*xasprintf(const char *, ...)
		    __attribute__((__format__ (printf, 1, 2)));

const struct output json_output = { json_result, json_failed, json_error };
const struct output text_output = { text_result, text_failed, text_error };

static const struct column users_columns[] = {
	{ "ID",		"id",		NULL },
	{ "EMAIL",	"email",	NULL },
	{ "AGENT",	"is_agent",	NULL },
	{ "MEMBERSHIPS", "memberships",	fmt_memberships },
	{ NULL,		NULL,		NULL }
};

static const struct column keys_columns[] = {
	{ "ID",		"id",		NULL },
	{ "CURRENT",	"current",	NULL },
	{ "SEALED",	"sealed",	NULL },
	{ "HELD",	"held",		NULL },
	{ "MISSING",	"missing",	NULL },
	{ NULL,		NULL,		NULL }
};

static const struct column orgs_columns[] = {
	{ "ID",		"id",		NULL },
	{ "SLUG",	"slug",		NULL },
	{ "MEMBERS",	"members",	NULL },
	{ "TOOLS",	"tools",	NULL },
	{ "SECRETS",	"secrets",	NULL },
	{ "NAME",	"name",		NULL },
	{ NULL,		NULL,		NULL }
};

static const struct column tools_columns[] = {
	{ "ORG",	"org",		NULL },
	{ "ID",		"id",		NULL },
	{ "NAME",	"name",		NULL },
	{ "HOST",	"host",		NULL },
	{ "BIN",	"bin",		NULL },
	{ "OWNER",	"owner",	NULL },
	{ NULL,		NULL,		NULL }
};

static const struct column runs_columns[] = {
	{ "ID",		"id",		NULL },
	{ "ORG",	"org",		NULL },
	{ "USER",	"user_email",	NULL },
	{ "TOOL",	"tool",		NULL },
	{ "EXIT",	"exit_code",	NULL },
	{ "MS",		"duration_ms",	NULL },
	{ "REQS",	"requests",	NULL },
	{ "WHERE",	"where",	NULL },
	{ "CREATED",	"created_at",	NULL },
	{ "ARGV",	"argv",		fmt_argv },
	{ NULL,		NULL,		NULL }
};

static const struct column audit_columns[] = {
	{ "ID",		"id",		NULL },
	{ "ORG",	"org",		NULL },
	{ "USER",	"user_email",	NULL },
	{ "TOOL",	"tool_name",	NULL },
	{ "KIND",	"kind",		NULL },
	{ "ACTION",	"action",	NULL },
	{ "REFUSED",	"refused_by",	NULL },
	{ "STATUS",	"status_code",	NULL },
	{ "WHERE",	"where",	NULL },
	{ "RUN",	"run_id",	NULL },
	{ "HOST",	"host",		NULL },
	{ "CREATED",	"created_at",	NULL },
	{ NULL,		NULL,		NULL }
};

static const struct column members_columns[] = {
	{ "USER",	"user_id",	NULL },
	{ "EMAIL",	"email",	NULL },
	{ "ROLE",	"role",		NULL },
	{ "LOCAL",	"local_run_enabled", NULL },
	{ "TOOLS",	"tool_access",	fmt_access },
	{ "PROJECTS",	"project_access", fmt_access },
	{ NULL,		NULL,		NULL }
};

static const struct column agents_columns[] = {
	{ "USER",	"user_id",	NULL },
	{ "NAME",	"name",		NULL },
	{ "ROLE",	"role",		NULL },
	{ "LOCAL",	"local_run_enabled", NULL },
	{ "TOOLS",	"tool_access",	fmt_access },
	{ "PROJECTS",	"project_access", fmt_access },
	{ "EMAIL",	"email",	NULL },
	{ NULL,		NULL,		NULL }
};

static const struct column tokens_columns[] = {
	{ "KIND",	"kind",		NULL },
	{ "ID",		"id",		NULL },
	{ "ORG",	"org",		NULL },
	{ "ROLE",	"role",		NULL },
	{ "CREATED",	"created_at",	NULL },
	{ NULL,		NULL,		NULL }
};

static const struct column secrets_columns[] = {
	{ "ID",		"id",		NULL },
	{ "NAME",	"name",		NULL },
	{ "KIND",	"kind",		NULL },
	{ "HEALTH",	"status",	NULL },
	{ "CHECKED",	"checked_at",	NULL },
	{ "OWNER",	"owner",	NULL },
	{ NULL,		NULL,		NULL }
};

static const struct text_view text_views[] = {
	{ CTL_SHOW_STATUS,	show_status,	NULL },
	{ CTL_SHOW_USERS,	NULL,		users_columns },
	{ CTL_SHOW_ORGS,	NULL,		orgs_columns },
	{ CTL_SHOW_TOOLS,	NULL,		tools_columns },
	{ CTL_SHOW_RUNS,	NULL,		runs_columns },
	{ CTL_SHOW_AUDIT,	NULL,		audit_columns },
	{ CTL_USER_ADD,		show_user_add,	NULL },
	{ CTL_METRICS,		show_metrics,	NULL },
	{ CTL_SHOW_MEMBERS,	NULL,		members_columns },
	{ CTL_SHOW_AGENTS,	NULL,		agents_columns },
	{ CTL_SHOW_SECRETS,	NULL,		secrets_columns },
	{ CTL_SHOW_TOKENS,	NULL,		tokens_columns },
	{ CTL_SHOW_CONFIG,	show_text,	NULL },
	{ CTL_USER_DELETE,	show_user_delete, NULL },
	{ CTL_KEY_LIST,		NULL,		keys_columns },
};

static void
json_result(enum ctl_cmd cmd, const json_t *doc)
{
	char	*s;

	if ((s = json_dumps(doc, JSON_INDENT(2) | JSON_ENCODE_ANY)) == NULL)
		errx(1, "cannot print the answer as JSON");
	puts(s);
	/* The answer to user add holds a token. */
	explicit_bzero(s, strlen(s));
	free(s);
}

/* Errors are JSON on stdout too, so a script reads one stream. */
static void
json_failed(const json_t *doc)
{
	json_result(CTL_NONE, doc);
}

static void
json_error(const char *msg, const char *valid)
{
	json_t	*doc, *words;
	char	*copy, *w, *p;

	if ((doc = json_pack("{s:s}", "error", msg)) == NULL)
		errx(1, "%s", msg);
	if (valid != NULL) {
		words = json_array();
		copy = xstrdup(valid);
		for (p = copy; (w = strsep(&p, " ")) != NULL;)
			if (*w != '\0')
				json_array_append_new(words, json_string(w));
		free(copy);
		json_object_set_new(doc, "valid", words);
	}
	json_result(CTL_NONE, doc);
	json_decref(doc);
}

static void
text_failed(const json_t *doc)
{
	const char	*msg;

	if ((msg = json_string_value(json_object_get(doc, "error"))) == NULL)
		msg = "the command failed";
	text_error(msg, NULL);
}

/* The message may quote a user's input: no control bytes. */
static void
text_error(const char *msg, const char *valid)
{
	fputs("tregctl: ", stderr);
	put_escaped(stderr, msg, strlen(msg), 0);
	fputc('\n', stderr);
	if (valid != NULL) {
		fputs("valid commands/arguments are: ", stderr);
		put_escaped(stderr, valid, strlen(valid), 0);
		fputc('\n', stderr);
	}
}

static void
text_result(enum ctl_cmd cmd, const json_t *doc)
{
	size_t	 i;

	for (i = 0; i < sizeof(text_views) / sizeof(text_views[0]); i++) {
		if (text_views[i].cmd != cmd)
			continue;
		if (text_views[i].show != NULL)
			text_views[i].show(doc);
		else if (json_is_array(doc))
			show_list(doc, text_views[i].columns);
		else
			show_object(doc);
		return;
	}
	show_object(doc);
}

static void
show_status(const json_t *doc)
{
	static const char	*counts[] = {
		"users", "orgs", "tools", "secrets", "runs"
	};
	static const struct column procs_columns[] = {
		{ "PROCESS",	"name",		NULL },
		{ "PID",	"pid",		NULL },
		{ "UPTIME",	"uptime",	NULL },
		{ NULL,		NULL,		NULL }
	};
	const json_t	*slots, *count, *procs, *p;
	json_t		*rows, *row;
	char		*s;
	size_t		 i;

	s = fmt_value(json_object_get(doc, "version"));
	printf("version:   %s\n", s);
	free(s);
	s = fmt_value(json_object_get(doc, "key_id"));
	printf("key id:    %s\n", s);
	free(s);
	printf("listen:    ");
	json_array_foreach(json_object_get(doc, "listen"), i, p) {
		s = fmt_value(p);
		printf("%s%s", i == 0 ? "" : ", ", s);
		free(s);
	}
	printf("\n");
	s = fmt_value(json_object_get(doc, "signup"));
	printf("signup:    %s\n", s);
	free(s);
	s = fmt_value(json_object_get(doc, "database"));
	printf("database:  %s\n", s);
	free(s);
	s = fmt_duration(json_integer_value(json_object_get(doc,
	    "uptime_s")));
	printf("uptime:    %s\n", s);
	free(s);

	slots = json_object_get(doc, "run_slots");
	printf("run slots: %" JSON_INTEGER_FORMAT " used of %"
	    JSON_INTEGER_FORMAT ", %" JSON_INTEGER_FORMAT " per user, %"
	    JSON_INTEGER_FORMAT " per org\n",
	    json_integer_value(json_object_get(slots, "used")),
	    json_integer_value(json_object_get(slots, "max")),
	    json_integer_value(json_object_get(slots, "per_user")),
	    json_integer_value(json_object_get(slots, "per_org")));

	count = json_object_get(doc, "counts");
	printf("counts:   ");
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		printf("%s %s %" JSON_INTEGER_FORMAT, i == 0 ? "" : ",",
		    counts[i], json_integer_value(json_object_get(count,
		    counts[i])));
	printf("\n\n");

	/* The uptime column is formatted, so build the rows first. */
	if ((rows = json_array()) == NULL)
		errx(1, "out of memory");
	procs = json_object_get(doc, "processes");
	json_array_foreach(procs, i, p) {
		s = fmt_duration(json_integer_value(json_object_get(p,
		    "uptime_s")));
		row = json_pack("{s:O?,s:O?,s:s}", "name",
		    json_object_get(p, "name"), "pid",
		    json_object_get(p, "pid"), "uptime", s);
		free(s);
		if (row == NULL || json_array_append_new(rows, row) == -1)
			errx(1, "out of memory");
	}
	show_list(rows, procs_columns);
	json_decref(rows);
}

/* The token is shown here and never again: label it plainly. */
static void
show_user_add(const json_t *doc)
{
	const char	*keys[] = { "email", "org", "org_id", "role" };
	char		*s;
	size_t		 i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		s = fmt_value(json_object_get(doc, keys[i]));
		printf("%s: %s\n", keys[i], s);
		free(s);
	}
	s = fmt_value(json_object_get(doc, "token"));
	printf("token: %s\n", s);
	explicit_bzero(s, strlen(s));
	free(s);
	printf("(the token is shown only once: store it now)\n");
}

/* Prometheus text, line breaks kept, anything else escaped. */
static void
show_metrics(const json_t *doc)
{
	show_text(doc);
}

/* {"text": ...} as it is, line breaks kept, control bytes escaped. */
static void
show_text(const json_t *doc)
{
	const json_t	*text = json_object_get(doc, "text");

	if (!json_is_string(text)) {
		show_object(doc);
		return;
	}
	put_escaped(stdout, json_string_value(text), json_string_length(text),
	    1);
}

static void
show_user_delete(const json_t *doc)
{
	const json_t	*o;
	char		*s;
	size_t		 i;

	s = fmt_value(json_object_get(doc, "deleted_user"));
	printf("deleted user %s\n", s);
	free(s);
	json_array_foreach(json_object_get(doc, "deleted_orgs"), i, o) {
		s = fmt_value(json_object_get(o, "slug"));
		printf("deleted org %s, which it alone owned\n", s);
		free(s);
	}
}

static void
show_object(const json_t *doc)
{
	const char	*key;
	const json_t	*v;
	char		*s;

	if (!json_is_object(doc)) {
		s = fmt_value(doc);
		printf("%s\n", s);
		free(s);
		return;
	}
	json_object_foreach((json_t *)doc, key, v) {
		put_escaped(stdout, key, strlen(key), 0);
		s = fmt_value(v);
		printf(": %s\n", s);
		free(s);
	}
}

/* Columns as wide as their widest cell; the last one is not padded. */
static void
show_list(const json_t *rows, const struct column *cols)
{
	const json_t	*row;
	char		**cells;
	size_t		*width, ncols, nrows, r, c, len;

	for (ncols = 0; cols[ncols].title != NULL; ncols++)
		;
	nrows = json_array_size(rows) + 1;
	if ((cells = calloc(nrows, ncols * sizeof(*cells))) == NULL ||
	    (width = calloc(ncols, sizeof(*width))) == NULL)
		err(1, "calloc");
	for (c = 0; c < ncols; c++)
		cells[c] = xstrdup(cols[c].title);
	for (r = 1; r < nrows; r++) {
		row = json_array_get(rows, r - 1);
		for (c = 0; c < ncols; c++)
			cells[r * ncols + c] = (cols[c].format != NULL ?
			    cols[c].format : fmt_value)(json_object_get(row,
			    cols[c].key));
	}
	for (r = 0; r < nrows; r++)
		for (c = 0; c < ncols; c++)
			if ((len = strlen(cells[r * ncols + c])) > width[c])
				width[c] = len;
	for (r = 0; r < nrows; r++) {
		for (c = 0; c < ncols; c++) {
			if (c + 1 < ncols)
				printf("%-*s  ", (int)width[c],
				    cells[r * ncols + c]);
			else
				printf("%s\n", cells[r * ncols + c]);
			free(cells[r * ncols + c]);
		}
	}
	free(cells);
	free(width);
}

/* One cell: "-" for nothing, yes/no, numbers, escaped strings. */
static char *
fmt_value(const json_t *v)
{
	char	*buf, *s;

	if (v == NULL)
		return (xstrdup("-"));
	switch (json_typeof(v)) {
	case JSON_STRING:
		return (escape(json_string_value(v), json_string_length(v)));
	case JSON_INTEGER:
		return (xasprintf("%" JSON_INTEGER_FORMAT,
		    json_integer_value(v)));
	case JSON_REAL:
		return (xasprintf("%g", json_real_value(v)));
	case JSON_TRUE:
		return (xstrdup("yes"));
	case JSON_FALSE:
		return (xstrdup("no"));
	case JSON_ARRAY:
		return (fmt_argv(v));
	case JSON_OBJECT:
		if ((s = json_dumps(v, JSON_COMPACT)) == NULL)
			errx(1, "out of memory");
		buf = escape(s, strlen(s));
		free(s);
		return (buf);
	case JSON_NULL:
		break;
	}
	return (xstrdup("-"));
}

/* "acme:owner,beta:member" */
static char *
fmt_memberships(const json_t *v)
{
	const json_t	*m;
	char		*buf, *org, *role, *s;
	size_t		 i;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return (xstrdup("-"));
	buf = xstrdup("");
	json_array_foreach(v, i, m) {
		org = fmt_value(json_object_get(m, "org"));
		role = fmt_value(json_object_get(m, "role"));
		s = xasprintf("%s%s%s:%s", buf, i == 0 ? "" : ",", org, role);
		free(org);
		free(role);
		free(buf);
		buf = s;
	}
	return (buf);
}

/* A tool access list: "all" for null, else the names. */
static char *
fmt_access(const json_t *v)
{
	if (v == NULL || json_is_null(v))
		return (xstrdup("all"));
	if (json_is_array(v) && json_array_size(v) == 0)
		return (xstrdup("none"));
	return (fmt_argv(v));
}

/* Words joined by spaces; an empty word or one with a space is quoted. */
static char *
fmt_argv(const json_t *v)
{
	const json_t	*a;
	char		*buf, *word, *s;
	size_t		 i;
	int		 quote;

	if (!json_is_array(v))
		return (fmt_value(v));
	buf = xstrdup("");
	json_array_foreach(v, i, a) {
		word = fmt_value(a);
		quote = json_is_string(a) && (word[0] == '\0' ||
		    strpbrk(word, " '\"") != NULL);
		s = xasprintf("%s%s%s%s%s", buf, i == 0 ? "" : " ",
		    quote ? "'" : "", word, quote ? "'" : "");
		free(word);
		free(buf);
		buf = s;
	}
	return (buf);
}

/* 3:04:05 under a day, 2d03h04m beyond. */
static char *
fmt_duration(int64_t secs)
{
	if (secs < 0)
		secs = 0;
	if (secs < 86400)
		return (xasprintf("%" PRId64 ":%02" PRId64 ":%02" PRId64,
		    secs / 3600, secs / 60 % 60, secs % 60));
	return (xasprintf("%" PRId64 "d%02" PRId64 "h%02" PRId64 "m",
	    secs / 86400, secs / 3600 % 24, secs / 60 % 60));
}

static char *
escape(const char *s, size_t len)
{
	char	*buf = NULL;
	size_t	 size = 0;
	FILE	*fp;

	if ((fp = open_memstream(&buf, &size)) == NULL)
		err(1, "open_memstream");
	put_escaped(fp, s, len, 0);
	if (fclose(fp) == EOF)
		err(1, "open_memstream");
	return (buf);
}

/*
 * Control bytes (C0, DEL and the C1 range encoded in UTF-8) become \xHH
 * so a hostile name cannot move the cursor or retitle a terminal; a
 * backslash is doubled so the escapes stay unambiguous.  Prometheus text
 * keeps its newlines and its own backslash escapes.
 */
static void
put_escaped(FILE *fp, const char *s, size_t len, int keep_newlines)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i;

	for (i = 0; i < len; i++) {
		if (keep_newlines && p[i] == '\n')
			fputc('\n', fp);
		else if (p[i] < 0x20 || p[i] == 0x7f)
			fprintf(fp, "\\x%02x", p[i]);
		else if (p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 &&
		    p[i + 1] <= 0x9f) {
			fprintf(fp, "\\x%02x\\x%02x", p[i], p[i + 1]);
			i++;
		} else if (p[i] == '\\' && !keep_newlines)
			fputs("\\\\", fp);
		else
			fputc(p[i], fp);
	}
}

static char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		err(1, "strdup");
	return (p);
}

static char *
xasprintf(const char *fmt, ...)
{
	va_list	 ap;
	char	*s;
	int	 r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r == -1)
		err(1, "asprintf");
	return (s);
}
