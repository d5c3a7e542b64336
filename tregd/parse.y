/*
 * parse.y: the tregd.conf grammar.
 *
 * Read by the parent only, before any privilege is dropped.  The result
 * is a flat struct tregd_conf the parent sends to its children in one
 * imsg.  Errors are printed as "file:line: message" on stderr and the
 * caller's configuration is left untouched unless the whole file (with
 * its includes) parses and passes the validation pass.
 *
 * The lexer keeps a stack of files for "include", expands $macros outside
 * quotes by pushing their text back onto the input, and looks words up
 * in a sorted keyword table.  Every string the lexer hands to the grammar
 * is kept on a list and zeroed when the parse ends: a file may hold the
 * run proof, and error recovery would otherwise leak discarded tokens.
 */

%{
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tregd.h"
#include "conf.h"

#define PARSE_INCLUDE_MAX	8	/* nested include files */
#define PARSE_UNGET_MAX		4096	/* pushed back: macro text */
#define PARSE_WORD_MAX		8192	/* longest token */
#define EXPAND_DONE		0x100	/* end of a macro's text */


TAILQ_HEAD(files, file);
struct file {
	TAILQ_ENTRY(file)	 entry;
	FILE			*stream;
	char			*name;
	int			 lineno;
	int			 errors;
	int			 lastc;		/* last byte read */
	int			 eof_nl;	/* final '\n' supplied */
	int			 expanding;	/* in a macro's text */
	size_t			 nunget;
	int			 unget[PARSE_UNGET_MAX];
	char			 iobuf[BUFSIZ];	/* zeroed at close */
};

struct lexstr {
	TAILQ_ENTRY(lexstr)	 entry;
	size_t			 len;
	char			 s[];
};
TAILQ_HEAD(lexstrs, lexstr);

/* Where a setting was made, for the errors of the validation pass. */
struct where {
	char			 file[PATH_MAX];
	int			 line;
};

typedef struct {
	union {
		long long	 number;
		char		*string;
	} v;
	int lineno;
} YYSTYPE;
#define YYSTYPE_IS_DECLARED 1

static struct files	 files = TAILQ_HEAD_INITIALIZER(files);
static struct lexstrs	 lexstrs = TAILQ_HEAD_INITIALIZER(lexstrs);
static struct file	*file, *topfile;
static int		 nfiles;
static int		 quiet_syntax;	/* the lexer already said why */
static char		 lexbuf[PARSE_WORD_MAX];

static struct tregd_conf *conf;
static int		 listen_explicit;
static struct where	 at_slots, at_state, at_rundir, at_users, at_runpath;
static struct where	 at_dbpass;

int		 yyparse(void);
static int	 yylex(void);
static int	 lex_macro(void);
static int	 lex_quoted(void);
static void	 conf_err(const char *, ...)
		    __attribute__((__format__ (printf, 1, 2)));
static int	 yyerror(const char *, ...)
		    __attribute__((__format__ (printf, 1, 2)));
static int	 kw_cmp(const void *, const void *);
static int	 lookup(const char *);
static int	 lgetc(int);
static int	 lungetc(int);
static int	 findeol(void);
static int	 macro_push(const char *);
static char	*lex_strdup(const char *);
static void	 lex_strs_free(void);
static struct file *pushfile(const char *, int);
static int	 popfile(void);
static void	 closefile(struct file *);
static void	 where_set(struct where *);
static int	 listen_add(const char *, long long, int, int);
static int	 http_seconds(long long, const char *, int *);
static int	 abspath_set(char *, size_t, const char *, const char *);
static int	 runpath_ok(const char *);
static int	 proof_ok(const char *);
static int	 allow_add(const char *);
static int	 conf_validate(const struct tregd_conf *);
static int	 uidrange_set(const char *);

%}

%token	ALLOW ALLOW_PRIVATE BODY_LIMIT CLOSED CPU DIRECTORY FILESIZE GROUP
%token	HTTP INCLUDE LISTEN MAX_CONNECTIONS NO ON OPEN PATH PER_ORG PER_USER PORT
%token	PROOF RELAY RLIMITS RUN SIGNUP SLOTS SOCKET STATE TIMEOUT YES
%token	BODY BUFFER CERTIFICATE CONNECTIONS HEADER IDLE KEY LOG PER_ADDRESS
%token	REQUESTS TLS TOTAL WRITE
%token	MEMORY NETWORK PROCESSES TMPSIZE USERS
%token	DATABASE PASSWORD_FILE POSTGRESQL SQLITE
%token	POOL EGRESS
%token	METRICS
%token	VAULT WORKERS
%token	CA CONNECT
%token	DEVELOPMENT FROM MAIL SENDMAIL
%token	HEALTH INTERVAL
%token	ERROR
%token	<v.string>	STRING
%token	<v.number>	NUMBER
%type	<v.number>	yesno size peruser perorg peraddr listentls buftotal
%type	<v.number>	interval

%%

grammar		: /* empty */
		| grammar '\n'
		| grammar include '\n'
		| grammar varset '\n'
		| grammar main '\n'
		| grammar error '\n' {
			/* Report the errors of the next lines too. */
			file->errors++;
			yyerrok;
		}
		;

include		: INCLUDE STRING {
			struct file	*nfile;

			if (nfiles > PARSE_INCLUDE_MAX) {
				yyerror("include nesting too deep");
				YYERROR;
			}
			if ((nfile = pushfile($2, 1)) == NULL) {
				yyerror("cannot include %s: %s", $2,
				    strerror(errno));
				YYERROR;
			}
			file = nfile;
			/* The grammar wants the newline that ends "include". */
			lungetc('\n');
		}
		;

varset		: STRING '=' STRING {
			if (!macro_name_ok($1, strlen($1))) {
				yyerror("invalid macro name \"%s\"", $1);
				YYERROR;
			}
			if (symset($1, $3, 0) == -1) {
				yyerror("cannot set macro %s", $1);
				YYERROR;
			}
		}
		;

main		: LISTEN ON STRING PORT NUMBER listentls {
			if (listen_add($3, $5, $6, 0) == -1)
				YYERROR;
		}
		| METRICS LISTEN ON STRING PORT NUMBER {
			if (listen_add($4, $6, 0, 1) == -1)
				YYERROR;
		}
		| TLS CERTIFICATE STRING {
			if (abspath_set(conf->tls_cert, sizeof(conf->tls_cert),
			    $3, "tls certificate") == -1)
				YYERROR;
		}
		| TLS KEY STRING {
			if (abspath_set(conf->tls_key, sizeof(conf->tls_key),
			    $3, "tls key") == -1)
				YYERROR;
		}
		| LOG REQUESTS yesno	{ conf->log_requests = $3; }
		| STATE STRING {
			if (abspath_set(conf->state, sizeof(conf->state), $2,
			    "state") == -1)
				YYERROR;
			where_set(&at_state);
		}
		| SOCKET STRING {
			struct sockaddr_un	 sun;

			if (strlen($2) >= sizeof(sun.sun_path)) {
				yyerror("socket path too long (max %zu bytes)",
				    sizeof(sun.sun_path) - 1);
				YYERROR;
			}
			if (abspath_set(conf->socket, sizeof(conf->socket),
			    $2, "socket") == -1)
				YYERROR;
		}
		| SOCKET GROUP STRING {
			if (!group_name_ok($3) ||
			    strlen($3) >= sizeof(conf->socket_group)) {
				yyerror("invalid socket group \"%s\"", $3);
				YYERROR;
			}
			strlcpy(conf->socket_group, $3,
			    sizeof(conf->socket_group));
		}
		| SIGNUP OPEN		{ conf->signup_open = 1; }
		| SIGNUP CLOSED		{ conf->signup_open = 0; }
		| RUN runopt
		| RELAY relayopt
		| MAIL mailopt
		| HTTP httpopt
		| DATABASE dbopt
		| HEALTH INTERVAL NO	{ conf->health_interval = 0; }
		| HEALTH INTERVAL interval {
			if ($3 < HEALTH_INTERVAL_MIN ||
			    $3 > HEALTH_INTERVAL_MAX) {
				yyerror("health interval %llds out of range "
				    "(%ds..%dd)", $3, HEALTH_INTERVAL_MIN,
				    HEALTH_INTERVAL_MAX / 86400);
				YYERROR;
			}
			conf->health_interval = $3;
		}
		| VAULT WORKERS NUMBER {
			if ($3 < 1 || $3 > VAULT_WORKERS_MAX) {
				yyerror("vault workers %lld out of range "
				    "(1..%d)", $3, VAULT_WORKERS_MAX);
				YYERROR;
			}
			conf->vault_workers = $3;
		}
		;

/* A duration: seconds, or a count of s, m, h or d ("6h"). */
interval	: NUMBER		{ $$ = $1; }
		| STRING {
			if (($$ = duration_parse($1)) == -1) {
				yyerror("\"%s\" is not a duration (such as "
				    "90s, 30m, 6h or 1d)", $1);
				YYERROR;
			}
		}
		;

/* Email sign-in codes (vault_mail.c), mailed by parent/mail.c. */
mailopt		: SENDMAIL STRING {
			if ($2[0] != '/' ||
			    strlen($2) >= sizeof(conf->mail_sendmail)) {
				yyerror("mail sendmail: an absolute path is "
				    "needed");
				YYERROR;
			}
			strlcpy(conf->mail_sendmail, $2,
			    sizeof(conf->mail_sendmail));
		}
		| FROM STRING {
			if (!conf_mail_address($2) ||
			    strlen($2) >= sizeof(conf->mail_from)) {
				yyerror("mail from: \"%s\" is not an address",
				    $2);
				YYERROR;
			}
			strlcpy(conf->mail_from, $2, sizeof(conf->mail_from));
		}
		| DEVELOPMENT yesno	{ conf->mail_development = $2; }
		;

relayopt	: ALLOW_PRIVATE yesno	{ conf->relay_allow_private = $2; }
		| CA STRING {
			if ($2[0] != '/' ||
			    strlen($2) >= sizeof(conf->relay_ca)) {
				yyerror("relay ca: an absolute path is needed");
				YYERROR;
			}
			strlcpy(conf->relay_ca, $2, sizeof(conf->relay_ca));
		}
		| TIMEOUT CONNECT NUMBER {
			if ($3 < 1 || $3 > RELAY_TIMEOUT_MAX) {
				yyerror("relay timeout connect %lld out of "
				    "range (1..%d)", $3, RELAY_TIMEOUT_MAX);
				YYERROR;
			}
			conf->relay_timeout_connect = $3;
		}
		| TIMEOUT TOTAL NUMBER {
			if ($3 < 1 || $3 > RELAY_TIMEOUT_MAX) {
				yyerror("relay timeout total %lld out of "
				    "range (1..%d)", $3, RELAY_TIMEOUT_MAX);
				YYERROR;
			}
			conf->relay_timeout_total = $3;
		}
		;

dbopt		: SQLITE		{ conf->db_engine = DB_SQLITE; }
		| POSTGRESQL STRING {
			char	 why[256];

			if (strlen($2) >= sizeof(conf->db_conninfo)) {
				yyerror("database postgresql: connection "
				    "string too long (max %zu bytes)",
				    sizeof(conf->db_conninfo) - 1);
				YYERROR;
			}
			if (pg_conninfo_check($2, why, sizeof(why)) == -1) {
				yyerror("database postgresql: %s", why);
				YYERROR;
			}
			strlcpy(conf->db_conninfo, $2,
			    sizeof(conf->db_conninfo));
			conf->db_engine = DB_POSTGRESQL;
		}
		| PASSWORD_FILE STRING {
			if (abspath_set(conf->db_password_file,
			    sizeof(conf->db_password_file), $2,
			    "database password-file") == -1)
				YYERROR;
			where_set(&at_dbpass);
		}
		;

runopt		: ALLOW allowlist
		| RLIMITS yesno		{ conf->run_rlimits = $2; }
		| TIMEOUT NUMBER {
			if ($2 < 1 || $2 > RUN_TIMEOUT_MAX) {
				yyerror("run timeout %lld out of range "
				    "(1..%d)", $2, RUN_TIMEOUT_MAX);
				YYERROR;
			}
			conf->run_timeout = $2;
		}
		| SLOTS NUMBER peruser perorg {
			if ($2 < 1 || $2 > RUN_SLOTS_MAX) {
				yyerror("run slots %lld out of range (1..%d)",
				    $2, RUN_SLOTS_MAX);
				YYERROR;
			}
			conf->run_slots = $2;
			if ($3 != -1)
				conf->run_slots_user = $3;
			if ($4 != -1)
				conf->run_slots_org = $4;
			where_set(&at_slots);
		}
		| PATH STRING {
			if (!runpath_ok($2))
				YYERROR;
			where_set(&at_runpath);
			if (strlcpy(conf->run_path, $2,
			    sizeof(conf->run_path)) >= sizeof(conf->run_path)) {
				yyerror("run path too long");
				YYERROR;
			}
		}
		| DIRECTORY STRING {
			if (abspath_set(conf->run_dir, sizeof(conf->run_dir),
			    $2, "run directory") == -1)
				YYERROR;
			where_set(&at_rundir);
		}
		| CPU NUMBER {
			if ($2 < 1 || $2 > RUN_CPU_MAX) {
				yyerror("run cpu %lld out of range (1..%d)",
				    $2, RUN_CPU_MAX);
				YYERROR;
			}
			conf->run_cpu = $2;
		}
		| FILESIZE size {
			if ($2 < RUN_FILESIZE_MIN || $2 > RUN_FILESIZE_MAX) {
				yyerror("run filesize %lld out of range "
				    "(1K..64G)", $2);
				YYERROR;
			}
			conf->run_filesize = $2;
		}
		| USERS STRING {
			if (uidrange_set($2) == -1)
				YYERROR;
			where_set(&at_users);
		}
		| TMPSIZE size {
			if ($2 < RUN_TMPSIZE_MIN || $2 > RUN_TMPSIZE_MAX) {
				yyerror("run tmpsize %lld out of range "
				    "(1M..64G)", $2);
				YYERROR;
			}
			conf->run_tmpsize = $2;
		}
		| PROCESSES NUMBER {
			if ($2 < RUN_PROCESSES_MIN || $2 > RUN_PROCESSES_MAX) {
				yyerror("run processes %lld out of range "
				    "(%d..%d)", $2, RUN_PROCESSES_MIN,
				    RUN_PROCESSES_MAX);
				YYERROR;
			}
			conf->run_processes = $2;
		}
		| MEMORY size {
			if ($2 < RUN_MEMORY_MIN || $2 > RUN_MEMORY_MAX) {
				yyerror("run memory %lld out of range "
				    "(16M..1024G)", $2);
				YYERROR;
			}
			conf->run_memory = $2;
		}
		| NETWORK NO		{ conf->run_network = RUN_NET_NONE; }
		| NETWORK YES		{ conf->run_network = RUN_NET_PROXY; }
		| NETWORK STRING {
			/* "yes" (older configurations) is "proxy". */
			if (strcmp($2, "proxy") == 0)
				conf->run_network = RUN_NET_PROXY;
			else if (strcmp($2, "host") == 0)
				conf->run_network = RUN_NET_HOST;
			else {
				yyerror("run network %s: proxy, no or host",
				    $2);
				YYERROR;
			}
		}
		| EGRESS CONNECTIONS NUMBER {
			if ($3 < RUN_EGRESS_CONNS_MIN ||
			    $3 > RUN_EGRESS_CONNS_MAX) {
				yyerror("run egress connections %lld out of "
				    "range (%d..%d)", $3, RUN_EGRESS_CONNS_MIN,
				    RUN_EGRESS_CONNS_MAX);
				YYERROR;
			}
			conf->run_egress_conns = $3;
		}
		| POOL NUMBER {
			if ($2 < 0 || $2 > RUN_POOL_MAX) {
				yyerror("run pool %lld out of range (0..%d)",
				    $2, RUN_POOL_MAX);
				YYERROR;
			}
			conf->run_pool = $2;
		}
		| PROOF STRING {
			if (!proof_ok($2))
				YYERROR;
			strlcpy(conf->run_proof, $2, sizeof(conf->run_proof));
			if (file->stream != NULL) {
				struct stat	 st;

				if (fstat(fileno(file->stream), &st) == 0 &&
				    (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
					conf_err("%s:%d: warning: run "
					    "proof in a file readable by group "
					    "or others", file->name,
					    yylval.lineno);
			}
		}
		;

listentls	: /* empty */		{ $$ = 0; }
		| TLS			{ $$ = 1; }
		;

peraddr		: /* empty */		{ $$ = -1; }
		| PER_ADDRESS NUMBER {
			if ($2 < 1 || $2 > HTTP_CONNS_MAX) {
				yyerror("http per-address %lld out of range "
				    "(1..%d)", $2, HTTP_CONNS_MAX);
				YYERROR;
			}
			$$ = $2;
		}
		;

buftotal	: /* empty */		{ $$ = -1; }
		| TOTAL size		{ $$ = $2; }
		;

peruser		: /* empty */		{ $$ = -1; }
		| PER_USER NUMBER {
			if ($2 < 1 || $2 > RUN_SLOTS_MAX) {
				yyerror("run slots per-user %lld out of range "
				    "(1..slots)", $2);
				YYERROR;
			}
			$$ = $2;
		}
		;

perorg		: /* empty */		{ $$ = -1; }
		| PER_ORG NUMBER {
			if ($2 < 1 || $2 > RUN_SLOTS_MAX) {
				yyerror("run slots per-org %lld out of range "
				    "(1..slots)", $2);
				YYERROR;
			}
			$$ = $2;
		}
		;

allowlist	: allowname
		| '{' optnl allownames '}'
		;

allownames	: /* empty */
		| allownames allowname allowsep
		;

allowsep	: optnl
		| ',' optnl
		;

allowname	: STRING {
			if (allow_add($1) == -1)
				YYERROR;
		}
		;

optnl		: /* empty */
		| optnl '\n'
		;

httpopt		: BODY_LIMIT size {
			if ($2 < HTTP_BODY_MIN || $2 > HTTP_BODY_LIMIT_MAX) {
				yyerror("http body-limit %lld out of range "
				    "(1K..64M)", $2);
				YYERROR;
			}
			conf->http_body_max = $2;
		}
		| MAX_CONNECTIONS NUMBER {
			if ($2 < HTTP_CONNS_MIN || $2 > HTTP_CONNS_MAX) {
				yyerror("http max-connections %lld out of "
				    "range (%d..%d)", $2, HTTP_CONNS_MIN,
				    HTTP_CONNS_MAX);
				YYERROR;
			}
			conf->http_max_conns = $2;
		}
		| TIMEOUT NUMBER {
			if ($2 < HTTP_TIMEOUT_MIN || $2 > HTTP_TIMEOUT_MAX) {
				yyerror("http timeout %lld out of range "
				    "(%d..%d)", $2, HTTP_TIMEOUT_MIN,
				    HTTP_TIMEOUT_MAX);
				YYERROR;
			}
			conf->http_timeout = $2;
		}
		| CONNECTIONS NUMBER peraddr {
			if ($2 < HTTP_CONNS_MIN || $2 > HTTP_CONNS_MAX) {
				yyerror("http connections %lld out of "
				    "range (%d..%d)", $2, HTTP_CONNS_MIN,
				    HTTP_CONNS_MAX);
				YYERROR;
			}
			conf->http_max_conns = $2;
			if ($3 != -1)
				conf->http_per_addr = $3;
		}
		| TIMEOUT HEADER NUMBER {
			if (http_seconds($3, "header",
			    &conf->http_timeout_header) == -1)
				YYERROR;
		}
		| TIMEOUT BODY NUMBER {
			if (http_seconds($3, "body",
			    &conf->http_timeout_body) == -1)
				YYERROR;
		}
		| TIMEOUT IDLE NUMBER {
			if (http_seconds($3, "idle", &conf->http_timeout) == -1)
				YYERROR;
		}
		| TIMEOUT WRITE NUMBER {
			if (http_seconds($3, "write",
			    &conf->http_timeout_write) == -1)
				YYERROR;
		}
		| BUFFER size buftotal {
			if ($2 < HTTP_BUFFER_MIN || $2 > HTTP_BUFFER_MAX ||
			    ($3 != -1 && ($3 < $2 || $3 > HTTP_BUFFER_MAX))) {
				yyerror("http buffer out of range (16K..4G, "
				    "total at least the buffer)");
				YYERROR;
			}
			conf->http_buffer = $2;
			if ($3 != -1)
				conf->http_buffer_total = $3;
		}
		;

yesno		: YES			{ $$ = 1; }
		| NO			{ $$ = 0; }
		;

size		: NUMBER		{ $$ = $1; }
		| STRING {
			if (size_parse($1, &$$) == -1) {
				yyerror("invalid size \"%s\" (a number with "
				    "an optional K, M or G)", $1);
				YYERROR;
			}
		}
		;

%%

struct keyword {
	const char	*k_name;
	int		 k_val;
};

/* Sorted: lookup() uses bsearch and a unit test checks the order. */
static const struct keyword keywords[] = {
	{ "allow",		ALLOW },
	{ "allow-private",	ALLOW_PRIVATE },
	{ "body",		BODY },
	{ "body-limit",		BODY_LIMIT },
	{ "buffer",		BUFFER },
	{ "ca",			CA },
	{ "certificate",	CERTIFICATE },
	{ "closed",		CLOSED },
	{ "connect",		CONNECT },
	{ "connections",	CONNECTIONS },
	{ "cpu",		CPU },
	{ "database",		DATABASE },
	{ "development",	DEVELOPMENT },
	{ "directory",		DIRECTORY },
	{ "egress",		EGRESS },
	{ "filesize",		FILESIZE },
	{ "from",		FROM },
	{ "group",		GROUP },
	{ "header",		HEADER },
	{ "health",		HEALTH },
	{ "http",		HTTP },
	{ "idle",		IDLE },
	{ "include",		INCLUDE },
	{ "interval",		INTERVAL },
	{ "key",		KEY },
	{ "listen",		LISTEN },
	{ "log",		LOG },
	{ "mail",		MAIL },
	{ "max-connections",	MAX_CONNECTIONS },
	{ "memory",		MEMORY },
	{ "metrics",		METRICS },
	{ "network",		NETWORK },
	{ "no",			NO },
	{ "on",			ON },
	{ "open",		OPEN },
	{ "password-file",	PASSWORD_FILE },
	{ "path",		PATH },
	{ "per-address",	PER_ADDRESS },
	{ "per-org",		PER_ORG },
	{ "per-user",		PER_USER },
	{ "pool",		POOL },
	{ "port",		PORT },
	{ "postgresql",		POSTGRESQL },
	{ "processes",		PROCESSES },
	{ "proof",		PROOF },
	{ "relay",		RELAY },
	{ "requests",		REQUESTS },
	{ "rlimits",		RLIMITS },
	{ "run",		RUN },
	{ "sendmail",	SENDMAIL },
	{ "signup",		SIGNUP },
	{ "slots",		SLOTS },
	{ "socket",		SOCKET },
	{ "sqlite",		SQLITE },
	{ "state",		STATE },
	{ "timeout",		TIMEOUT },
	{ "tls",		TLS },
	{ "tmpsize",		TMPSIZE },
	{ "total",		TOTAL },
	{ "users",		USERS },
	{ "vault",		VAULT },
	{ "workers",		WORKERS },
	{ "write",		WRITE },
	{ "yes",		YES },
};

/*
 * A diagnostic: on stderr for tregd -n, in the log when a daemon reloads
 * (its stderr may be /dev/null by then).
 */
int	 parse_errors_to_log;
char	 parse_error[512];

static void
conf_err(const char *fmt, ...)
{
	va_list	 ap, aq;

	va_start(ap, fmt);
	/* The first error, for tregctl reload; warnings do not refuse. */
	if (parse_error[0] == '\0' && strstr(fmt, ": warning: ") == NULL) {
		va_copy(aq, ap);
		vsnprintf(parse_error, sizeof(parse_error), fmt, aq);
		va_end(aq);
	}
	if (parse_errors_to_log)
		vlog(LOG_ERR, fmt, ap);
	else {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

static int
yyerror(const char *fmt, ...)
{
	va_list		 ap;
	char		 msg[1024];

	file->errors++;
	/* The lexer printed the real reason before returning ERROR. */
	if (quiet_syntax && strcmp(fmt, "syntax error") == 0) {
		quiet_syntax = 0;
		return (0);
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	conf_err("%s:%d: %s", file->name, yylval.lineno, msg);
	return (0);
}

int
parse_keywords_sorted(void)
{
	size_t	 i;

	for (i = 1; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (strcmp(keywords[i - 1].k_name, keywords[i].k_name) >= 0)
			return (0);
	return (1);
}

static int
kw_cmp(const void *k, const void *e)
{
	return (strcmp(k, ((const struct keyword *)e)->k_name));
}

static int
lookup(const char *s)
{
	const struct keyword	*p;

	p = bsearch(s, keywords, sizeof(keywords) / sizeof(keywords[0]),
	    sizeof(keywords[0]), kw_cmp);
	return (p != NULL ? p->k_val : STRING);
}

/*
 * One byte of input: pushed back bytes (macro text) first, then the
 * current file; at its end, the file that included it.  Outside quotes
 * a backslash before a newline joins two lines.
 */
static int
lgetc(int inquote)
{
	int	 c, next;

	for (;;) {
		if (file->nunget > 0) {
			c = file->unget[--file->nunget];
			if (c == EXPAND_DONE) {
				file->expanding = 0;
				continue;
			}
			return (c);
		}
		c = getc(file->stream);
		if (c == '\\' && !inquote) {
			next = getc(file->stream);
			if (next == '\n') {
				file->lineno++;
				continue;
			}
			if (next != EOF)
				lungetc(next);
		}
		if (c != EOF) {
			file->lastc = c;
			return (c);
		}
		if (inquote)
			return (EOF);
		/* A last line without its newline still ends a directive. */
		if (!file->eof_nl) {
			file->eof_nl = 1;
			if (file->lastc != '\n')
				return ('\n');
		}
		if (file == topfile || popfile() == EOF)
			return (EOF);
	}
}

static int
lungetc(int c)
{
	if (c == EOF)
		return (EOF);
	if (file->nunget >= PARSE_UNGET_MAX)
		return (EOF);
	file->unget[file->nunget++] = c;
	return (c);
}

/*
 * Skip the rest of a bad line, but leave its newline for the grammar's
 * error rule, so the next line is parsed normally.
 */
static int
findeol(void)
{
	int	 c;

	while ((c = lgetc(0)) != '\n' && c != EOF)
		;
	lungetc(c);
	quiet_syntax = 1;
	return (ERROR);
}

/* Push a macro's text back; $ inside it is not expanded again. */
static int
macro_push(const char *val)
{
	size_t	 len = strlen(val);

	if (len + 1 > PARSE_UNGET_MAX - file->nunget)
		return (-1);
	lungetc(EXPAND_DONE);
	while (len > 0)
		lungetc((unsigned char)val[--len]);
	file->expanding = 1;
	return (0);
}

static int
word_char(int c)
{
	if (c == EOF || c > 0xff)
		return (0);
	return (isalnum(c) || (c != '\0' && strchr("-_.:+*/@%[]~^", c)));
}

/* After a $: the macro's value pushed back as input (0), or an error. */
static int
lex_macro(void)
{
	char		*p = lexbuf;
	const char	*val;
	int		 c;

	while ((c = lgetc(0)) != EOF && (isalnum(c) || c == '_')) {
		if (p - lexbuf >= MACRO_NAME_MAX) {
			yyerror("macro name too long");
			return (findeol());
		}
		*p++ = c;
	}
	lungetc(c);
	*p = '\0';
	if (p == lexbuf) {
		yyerror("missing macro name after $");
		return (findeol());
	}
	if ((val = symget(lexbuf)) == NULL) {
		yyerror("macro '%s' not defined", lexbuf);
		return (findeol());
	}
	if (macro_push(val) == -1) {
		yyerror("macro '%s' too long", lexbuf);
		return (findeol());
	}
	return (0);
}

/*
 * After a double quote: the string to the closing one (a secret may be
 * in it: the buffer is zeroed once copied).
 */
static int
lex_quoted(void)
{
	char	*p = lexbuf, *ebuf = lexbuf + sizeof(lexbuf) - 1;
	int	 c, next;

	for (;;) {
		if ((c = lgetc(1)) == EOF || c == '\n') {
			yyerror("unterminated quoted string");
			if (c == '\n')
				lungetc(c);
			explicit_bzero(lexbuf, p - lexbuf);
			quiet_syntax = 1;
			return (ERROR);
		}
		if (c == '"')
			break;
		if (c == '\\') {
			next = lgetc(1);
			if (next == '"' || next == '\\')
				c = next;
			else if (next == '\n') {
				file->lineno++;
				continue;
			} else
				lungetc(next);
		}
		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			yyerror("control character in quoted string");
			explicit_bzero(lexbuf, p - lexbuf);
			return (findeol());
		}
		if (p >= ebuf) {
			yyerror("string too long");
			explicit_bzero(lexbuf, p - lexbuf);
			return (findeol());
		}
		*p++ = c;
	}
	*p = '\0';
	yylval.v.string = lex_strdup(lexbuf);
	explicit_bzero(lexbuf, p - lexbuf);
	return (STRING);
}

static int
yylex(void)
{
	char		*p, *ebuf = lexbuf + sizeof(lexbuf) - 1;
	const char	*errstr;
	int		 c, token;

	quiet_syntax = 0;
 top:
	p = lexbuf;
	while ((c = lgetc(0)) == ' ' || c == '\t')
		;
	yylval.lineno = file->lineno;
	if (c == '#')
		while ((c = lgetc(0)) != '\n' && c != EOF)
			;
	if (c == '$' && !file->expanding) {
		if ((token = lex_macro()) != 0)
			return (token);
		goto top;
	}

	if (c == '"')
		return (lex_quoted());

	if (word_char(c)) {
		do {
			if (p >= ebuf) {
				yyerror("string too long");
				return (findeol());
			}
			*p++ = c;
		} while (word_char(c = lgetc(0)));
		lungetc(c);
		*p = '\0';
		if (strspn(lexbuf + (lexbuf[0] == '-'), "0123456789") ==
		    strlen(lexbuf + (lexbuf[0] == '-')) &&
		    strcmp(lexbuf, "-") != 0) {
			yylval.v.number = strtonum(lexbuf, LLONG_MIN,
			    LLONG_MAX, &errstr);
			if (errstr != NULL) {
				yyerror("number %s is %s", lexbuf, errstr);
				return (findeol());
			}
			return (NUMBER);
		}
		if ((token = lookup(lexbuf)) == STRING)
			yylval.v.string = lex_strdup(lexbuf);
		return (token);
	}

	if (c == '\n') {
		yylval.lineno = file->lineno;
		file->lineno++;
	}
	if (c == EOF)
		return (0);
	/* Token 0 is the end of input to the parser: never hand it a NUL. */
	if (c == '\0') {
		yyerror("NUL byte in configuration");
		return (findeol());
	}
	return (c);
}

/* Token strings live until the parse ends; see the comment at the top. */
static char *
lex_strdup(const char *s)
{
	struct lexstr	*ls;
	size_t		 len = strlen(s);

	if ((ls = malloc(sizeof(*ls) + len + 1)) == NULL)
		fatal("%s: malloc", __func__);
	ls->len = len;
	memcpy(ls->s, s, len + 1);
	TAILQ_INSERT_TAIL(&lexstrs, ls, entry);
	return (ls->s);
}

static void
lex_strs_free(void)
{
	struct lexstr	*ls;

	while ((ls = TAILQ_FIRST(&lexstrs)) != NULL) {
		TAILQ_REMOVE(&lexstrs, ls, entry);
		freezero(ls, sizeof(*ls) + ls->len + 1);
	}
}

/*
 * Open a configuration file.  An include names a file relative to the
 * directory of the file that includes it, so a configuration tree can
 * be checked from anywhere.
 */
static struct file *
pushfile(const char *name, int include)
{
	struct file	*nfile;
	struct stat	 st;
	char		 path[PATH_MAX];
	const char	*slash;
	int		 n, saved_errno;

	if (include && name[0] != '/' && file != NULL &&
	    (slash = strrchr(file->name, '/')) != NULL)
		n = snprintf(path, sizeof(path), "%.*s/%s",
		    (int)(slash - file->name), file->name, name);
	else
		n = snprintf(path, sizeof(path), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return (NULL);
	}
	if ((nfile = calloc(1, sizeof(*nfile))) == NULL)
		fatal("%s: calloc", __func__);
	if ((nfile->name = strdup(path)) == NULL)
		fatal("%s: strdup", __func__);
	if ((nfile->stream = fopen(path, "r")) == NULL)
		goto fail;
	if (fstat(fileno(nfile->stream), &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto fail;
	}
	setvbuf(nfile->stream, nfile->iobuf, _IOFBF, sizeof(nfile->iobuf));
	/* An include starts with the newline its action pushes back. */
	nfile->lineno = include ? 0 : 1;
	nfile->lastc = '\n';
	TAILQ_INSERT_TAIL(&files, nfile, entry);
	nfiles++;
	return (nfile);

 fail:
	saved_errno = errno;
	closefile(nfile);
	errno = saved_errno;
	return (NULL);
}

static void
closefile(struct file *f)
{
	if (f->stream != NULL)
		fclose(f->stream);
	free(f->name);
	freezero(f, sizeof(*f));
}

static int
popfile(void)
{
	struct file	*prev;

	if ((prev = TAILQ_PREV(file, files, entry)) != NULL)
		prev->errors += file->errors;
	TAILQ_REMOVE(&files, file, entry);
	nfiles--;
	closefile(file);
	file = prev;
	return (file != NULL ? 0 : EOF);
}

static void
where_set(struct where *w)
{
	strlcpy(w->file, file->name, sizeof(w->file));
	w->line = yylval.lineno;
}

/* ------------------------------------------------------------------ */
/* Directive helpers.                                                  */

/*
 * "*" is both wildcards and "localhost" the IPv4 loopback; both keep
 * their name, so print_config writes them back as written.
 */
static int
listen_add(const char *addr, long long port, int tls, int metrics)
{
	struct conf_listen	 l[2], *tab = conf->listen;
	int			*ntab = &conf->nlisten;
	const char		*what = metrics ? "metrics listen" : "listen";
	const char		*bare = addr;
	char			 buf[64];
	size_t			 len;
	int			 i, j, n;

	if (port < 1 || port > 65535) {
		yyerror("%s port %lld out of range (1..65535)", what, port);
		return (-1);
	}
	if (strlen(addr) >= sizeof(l[0].name)) {
		yyerror("%s address too long", what);
		return (-1);
	}
	/* [::1] is accepted for ::1. */
	len = strlen(addr);
	if (len > 2 && addr[0] == '[' && addr[len - 1] == ']') {
		snprintf(buf, sizeof(buf), "%.*s", (int)(len - 2), addr + 1);
		bare = buf;
	}
	if (strcmp(addr, "*") == 0) {
		n = 2;
		i = listen_fill(&l[0], "0.0.0.0", AF_INET, addr, port);
		i |= listen_fill(&l[1], "::", AF_INET6, addr, port);
	} else if (strcmp(addr, "localhost") == 0) {
		n = 1;
		i = listen_fill(&l[0], "127.0.0.1", AF_INET, addr, port);
	} else {
		n = 1;
		if (strchr(bare, ':') != NULL)
			i = listen_fill(&l[0], bare, AF_INET6, addr, port);
		else
			i = listen_fill(&l[0], bare, AF_INET, addr, port);
	}
	if (i != 0) {
		yyerror("%s address \"%s\" is not a numeric IPv4 or IPv6 "
		    "address, \"*\" or \"localhost\"", what, addr);
		return (-1);
	}
	if (metrics) {
		tab = conf->metrics;
		ntab = &conf->nmetrics;
	}
	/* The first listen replaces the default one. */
	if (!metrics && !listen_explicit) {
		listen_explicit = 1;
		conf->nlisten = 0;
	}
	for (j = 0; j < n; j++) {
		for (i = 0; i < *ntab; i++)
			if (listen_same(&tab[i], &l[j])) {
				yyerror("duplicate %s on %s port %lld",
				    what, addr, port);
				return (-1);
			}
		/* The other kind of listener on the same socket. */
		for (i = 0; i < (metrics ? conf->nlisten : conf->nmetrics);
		    i++)
			if (listen_same(metrics ? &conf->listen[i] :
			    &conf->metrics[i], &l[j]) &&
			    (!metrics || listen_explicit)) {
				yyerror("%s on %s port %lld is also a %s "
				    "address", what, addr, port,
				    metrics ? "listen" : "metrics listen");
				return (-1);
			}
	}
	if (*ntab + n > CONF_LISTEN_MAX) {
		yyerror("too many %s addresses (max %d)", what,
		    CONF_LISTEN_MAX);
		return (-1);
	}
	for (j = 0; j < n; j++) {
		l[j].tls = tls;
		tab[(*ntab)++] = l[j];
	}
	return (0);
}

/* http timeout header|body|idle|write N */
static int
http_seconds(long long n, const char *what, int *out)
{
	if (n < HTTP_T_MIN || n > HTTP_TIMEOUT_MAX) {
		yyerror("http timeout %s %lld out of range (%d..%d)", what, n,
		    HTTP_T_MIN, HTTP_TIMEOUT_MAX);
		return (-1);
	}
	*out = n;
	return (0);
}

static int
abspath_set(char *dst, size_t dstlen, const char *path, const char *what)
{
	if (path[0] != '/') {
		yyerror("%s \"%s\" is not an absolute path", what, path);
		return (-1);
	}
	if (strlcpy(dst, path, dstlen) >= dstlen) {
		yyerror("%s path too long", what);
		return (-1);
	}
	return (0);
}

/* An empty element would mean the current directory to a path search. */
static int
runpath_ok(const char *path)
{
	const char	*p = path, *colon;
	size_t		 len;

	for (;;) {
		colon = strchr(p, ':');
		len = colon != NULL ? (size_t)(colon - p) : strlen(p);
		if (len == 0) {
			yyerror("run path \"%s\" has an empty element", path);
			return (0);
		}
		if (p[0] != '/') {
			yyerror("run path element \"%.*s\" is not absolute",
			    (int)len, p);
			return (0);
		}
		if (colon == NULL)
			return (1);
		p = colon + 1;
	}
}

/* The proof travels in an HTTP header: printable, no spaces. */
static int
proof_ok(const char *s)
{
	size_t	 i, len = strlen(s);

	if (len < PROOF_LEN_MIN || len >= CONF_PROOF_LEN) {
		yyerror("run proof must be %d to %d characters",
		    PROOF_LEN_MIN, CONF_PROOF_LEN - 1);
		return (0);
	}
	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f) {
			yyerror("run proof must be printable ASCII without "
			    "spaces");
			return (0);
		}
	return (1);
}

static int
allow_add(const char *name)
{
	int	 i;

	if (!bin_name_ok(name) || strlen(name) >= CONF_BIN_LEN) {
		yyerror("invalid run allow name \"%s\" (a bare command name "
		    "of at most %d characters)", name, CONF_BIN_LEN - 1);
		return (-1);
	}
	for (i = 0; i < conf->nrun_allow; i++)
		if (strcmp(conf->run_allow[i], name) == 0)
			return (0);
	if (conf->nrun_allow >= CONF_ALLOW_MAX) {
		yyerror("too many run allow names (max %d)", CONF_ALLOW_MAX);
		return (-1);
	}
	strlcpy(conf->run_allow[conf->nrun_allow++], name, CONF_BIN_LEN);
	return (0);
}

/* ------------------------------------------------------------------ */
/* The validation pass, parse_config (defaults: conf.c).             */

/*
 * A run sees none of these (exec_child.c hides or covers them), so a
 * command found there by exec at start would not be there for the run.
 */
static int
conf_validate_runpath(const struct tregd_conf *c)
{
	const char *const	 hidden[] = { "/run", "/var/run", "/tmp",
				    "/var/tmp", "/dev/shm", c->state,
				    c->run_dir };
	const char		*p, *colon;
	char			 el[PATH_MAX];
	size_t			 i, len;

	for (p = c->run_path; *p != '\0'; p = colon + 1) {
		colon = strchr(p, ':');
		len = colon != NULL ? (size_t)(colon - p) : strlen(p);
		if (len >= sizeof(el))
			len = sizeof(el) - 1;
		memcpy(el, p, len);
		el[len] = '\0';
		for (i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
			if (path_within(el, hidden[i])) {
				conf_err("%s:%d: run path element %s is hidden "
				    "from runs (it is under %s)",
				    at_runpath.line != 0 ? at_runpath.file :
				    topfile->name, at_runpath.line, el,
				    hidden[i]);
				return (1);
			}
		if (colon == NULL)
			break;
	}
	return (0);
}

/* Rules that span directives; reported where the last one was set. */
static int
conf_validate(const struct tregd_conf *c)
{
	const struct where	*w;
	int			 errors = 0, i, j;

	if (c->run_slots_user > c->run_slots) {
		conf_err("%s:%d: run slots per-user %d exceeds run "
		    "slots %d", at_slots.file, at_slots.line,
		    c->run_slots_user, c->run_slots);
		errors++;
	}
	if (c->run_slots_org > c->run_slots) {
		conf_err("%s:%d: run slots per-org %d exceeds run "
		    "slots %d", at_slots.file, at_slots.line,
		    c->run_slots_org, c->run_slots);
		errors++;
	}
	/* Every run in flight needs a uid of its own. */
	if (c->run_uid_last - c->run_uid_first + 1 < c->run_slots) {
		w = at_users.line >= at_slots.line ? &at_users : &at_slots;
		conf_err("%s:%d: run users %u-%u has fewer uids than run "
		    "slots %d", w->line != 0 ? w->file : topfile->name,
		    w->line, c->run_uid_first,
		    c->run_uid_last, c->run_slots);
		errors++;
	}
	/* Run children must never get a directory near the master key. */
	if (path_within(c->run_dir, c->state) ||
	    path_within(c->state, c->run_dir)) {
		w = at_rundir.line >= at_state.line &&
		    at_rundir.line != 0 ? &at_rundir : &at_state;
		conf_err("%s:%d: run directory %s and state %s must "
		    "not contain one another", w->file, w->line,
		    c->run_dir, c->state);
		errors++;
	}
	errors += conf_validate_runpath(c);
	if (c->state[0] != '/' || c->socket[0] != '/' ||
	    c->run_dir[0] != '/') {
		conf_err("%s: state, socket and run directory must "
		    "be absolute paths", topfile->name);
		errors++;
	}
	if (c->nlisten < 1) {
		conf_err("%s: no listen address", topfile->name);
		errors++;
	}
	for (i = 0; i < c->nlisten; i++)
		if (c->listen[i].tls && (c->tls_cert[0] == '\0' ||
		    c->tls_key[0] == '\0')) {
			conf_err("%s: listen on %s port %u tls needs a tls "
			    "certificate and a tls key", topfile->name,
			    c->listen[i].name, c->listen[i].port);
			errors++;
			break;
		}
	if (c->db_password_file[0] != '\0' && c->db_engine != DB_POSTGRESQL) {
		conf_err("%s:%d: database password-file needs database "
		    "postgresql", at_dbpass.file, at_dbpass.line);
		errors++;
	}
	for (i = 0; i < c->nmetrics; i++)
		for (j = 0; j < c->nlisten; j++)
			if (listen_same(&c->metrics[i], &c->listen[j])) {
				conf_err("%s: metrics listen on %s port %u is "
				    "also an API listen address",
				    topfile->name, c->metrics[i].name,
				    c->metrics[i].port);
				errors++;
			}
	return (errors);
}

int
parse_config(const char *filename, struct tregd_conf *xconf)
{
	struct tregd_conf	*c;
	int			 errors;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("%s: calloc", __func__);
	conf_defaults(c);
	conf = c;
	listen_explicit = 0;
	quiet_syntax = 0;
	memset(&at_slots, 0, sizeof(at_slots));
	memset(&at_state, 0, sizeof(at_state));
	memset(&at_rundir, 0, sizeof(at_rundir));
	memset(&at_users, 0, sizeof(at_users));
	memset(&at_runpath, 0, sizeof(at_runpath));
	memset(&at_dbpass, 0, sizeof(at_dbpass));

	if ((file = pushfile(filename, 0)) == NULL) {
		conf_err("%s: %s", filename, strerror(errno));
		freezero(c, sizeof(*c));
		conf = NULL;
		return (-1);
	}
	topfile = file;

	yyparse();
	errors = file->errors;
	/* yyparse may stop inside an include; fold every file's count. */
	while (file != NULL && file != topfile) {
		popfile();
		errors = file->errors;
	}
	if (errors == 0)
		errors = conf_validate(c);
	popfile();
	topfile = NULL;
	symclear(0);
	lex_strs_free();
	explicit_bzero(lexbuf, sizeof(lexbuf));

	if (errors == 0) {
		conf_run_scan(c);
		memcpy(xconf, c, sizeof(*xconf));
	}
	freezero(c, sizeof(*c));
	conf = NULL;
	return (errors ? -1 : 0);
}

/* "FIRST-LAST": the uids (and gids) of concurrent runs. */
static int
uidrange_set(const char *s)
{
	char		 buf[32], *dash;
	const char	*errstr;
	long long	 first, last;

	if (strlcpy(buf, s, sizeof(buf)) >= sizeof(buf) ||
	    (dash = strchr(buf, '-')) == NULL)
		goto bad;
	*dash++ = '\0';
	first = strtonum(buf, RUN_UID_MIN, RUN_UID_MAX, &errstr);
	if (errstr != NULL)
		goto bad;
	last = strtonum(dash, RUN_UID_MIN, RUN_UID_MAX, &errstr);
	if (errstr != NULL || last < first || last - first >= RUN_USERS_MAX)
		goto bad;
	conf->run_uid_first = first;
	conf->run_uid_last = last;
	return (0);
 bad:
	yyerror("invalid run users \"%s\" (FIRST-LAST, uids %d..%d, at "
	    "most %d of them)", s, RUN_UID_MIN, RUN_UID_MAX, RUN_USERS_MAX);
	return (-1);
}
