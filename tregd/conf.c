/*
 * conf.c: what of tregd.conf needs no parser state: the built-in run
 * allow list, the checks of single values the grammar actions call, and
 * the canonical form (tregd -nv), every setting in grammar order, the
 * ones at their default left out where the grammar allows.  The parser
 * and the printer run in the parent; the run allow list (conf_run_*) is
 * also asked by the vault (may this bin run) and exec (where it is), on
 * the settings the parent sent them.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tregd.h"
#include "conf.h"

static void	 print_string(FILE *, const char *);
static void	 print_size(FILE *, long long);
static void	 print_mail(const struct tregd_conf *, FILE *);
static void	 print_front(const struct tregd_conf *, FILE *);
static void	 print_interval(FILE *, const char *, int);
static void	 print_isolation(FILE *, const struct tregd_conf *);

/*
 * The vendor CLIs treg already knows how to inject (SPEC.md section 0);
 * "run allow" adds to these.
 */
const char *const run_builtin_allow[] = {
	"gcloud", "az", "supabase", "openai", "stripe", "gh", "glab",
	"render", "vercel", "wrangler", "doctl", "netlify", "heroku",
	"flyctl", "railway", "neonctl", "pscale", "turso", "doppler",
	"infisical", "sentry-cli", "aws", NULL
};

int
macro_name_ok(const char *s, size_t len)
{
	size_t	 i;

	if (len == 0 || len > MACRO_NAME_MAX || isdigit((unsigned char)s[0]))
		return (0);
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return (0);
	return (1);
}

int
listen_fill(struct conf_listen *l, const char *addr, int family,
    const char *name, int port)
{
	struct sockaddr_in	*sin;
	struct addrinfo		 hints, *res;

	memset(l, 0, sizeof(*l));
	if (strlcpy(l->name, name, sizeof(l->name)) >= sizeof(l->name))
		return (-1);
	l->port = port;
	if (family == AF_INET) {
		/* inet_pton: no "127.1" or octal spellings. */
		sin = (struct sockaddr_in *)&l->ss;
		if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
			return (-1);
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		l->sslen = sizeof(*sin);
		return (0);
	}
	/* getaddrinfo, not inet_pton, for scoped addresses (fe80::1%eth0). */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET6;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(addr, NULL, &hints, &res) != 0)
		return (-1);
	if (res->ai_addrlen > sizeof(l->ss)) {
		freeaddrinfo(res);
		return (-1);
	}
	memcpy(&l->ss, res->ai_addr, res->ai_addrlen);
	l->sslen = res->ai_addrlen;
	((struct sockaddr_in6 *)&l->ss)->sin6_port = htons(port);
	freeaddrinfo(res);
	return (0);
}

int
listen_same(const struct conf_listen *a, const struct conf_listen *b)
{
	const struct sockaddr_in	*a4, *b4;
	const struct sockaddr_in6	*a6, *b6;

	if (a->ss.ss_family != b->ss.ss_family || a->port != b->port)
		return (0);
	if (a->ss.ss_family == AF_INET) {
		a4 = (const struct sockaddr_in *)&a->ss;
		b4 = (const struct sockaddr_in *)&b->ss;
		return (a4->sin_addr.s_addr == b4->sin_addr.s_addr);
	}
	a6 = (const struct sockaddr_in6 *)&a->ss;
	b6 = (const struct sockaddr_in6 *)&b->ss;
	return (memcmp(&a6->sin6_addr, &b6->sin6_addr,
	    sizeof(a6->sin6_addr)) == 0 &&
	    a6->sin6_scope_id == b6->sin6_scope_id);
}

int
bin_name_ok(const char *s)
{
	size_t	 i;

	if (!isalnum((unsigned char)s[0]))
		return (0);
	for (i = 1; s[i] != '\0'; i++)
		if (!isalnum((unsigned char)s[i]) &&
		    strchr("._+-", s[i]) == NULL)
			return (0);
	return (1);
}

/*
 * An address a mail header and sendmail's argv may carry: printable
 * ASCII (or UTF-8) without spaces, exactly one '@' inside it, and no
 * leading '-' that sendmail would read as an option.
 */
int
conf_mail_address(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 at = 0, n = 0, len = strlen(s);

	if (len < 3 || len > 254 || s[0] == '-')
		return (0);
	for (; *p != '\0'; p++) {
		if (*p <= 0x20 || *p == 0x7f || *p == '<' || *p == '>' ||
		    *p == ',' || *p == '"' || *p == '\\')
			return (0);
		if (*p == '@') {
			at = p - (const unsigned char *)s;
			n++;
		}
	}
	return (n == 1 && at > 0 && at < len - 1);
}

int
group_name_ok(const char *s)
{
	size_t	 i;

	if (s[0] == '\0' || s[0] == '-')
		return (0);
	for (i = 0; s[i] != '\0'; i++)
		if (!isalnum((unsigned char)s[i]) &&
		    strchr("._-$", s[i]) == NULL)
			return (0);
	return (1);
}

/* "90s", "30m", "6h", "1d": seconds, or -1. */
long long
duration_parse(const char *s)
{
	const char	*errstr;
	char		 num[16];
	size_t		 n = strlen(s);
	long long	 v, unit;

	if (n < 2 || n > sizeof(num))
		return (-1);
	switch (s[n - 1]) {
	case 's':
		unit = 1;
		break;
	case 'm':
		unit = 60;
		break;
	case 'h':
		unit = 3600;
		break;
	case 'd':
		unit = 86400;
		break;
	default:
		return (-1);
	}
	memcpy(num, s, n - 1);
	num[n - 1] = '\0';
	if (strspn(num, "0123456789") != n - 1)
		return (-1);
	v = strtonum(num, 0, LLONG_MAX / 86400, &errstr);
	if (errstr != NULL)
		return (-1);
	return (v * unit);
}

/* A number with an optional K, M or G suffix (powers of 1024). */
int
size_parse(const char *s, long long *out)
{
	char		 digits[32];
	const char	*errstr;
	size_t		 len = strlen(s);
	long long	 mult = 1;

	if (len == 0)
		return (-1);
	switch (s[len - 1]) {
	case 'k':
	case 'K':
		mult = KILO;
		break;
	case 'm':
	case 'M':
		mult = MEGA;
		break;
	case 'g':
	case 'G':
		mult = GIGA;
		break;
	}
	if (mult != 1)
		len--;
	if (len == 0 || len >= sizeof(digits) ||
	    strspn(s, "0123456789") != len)
		return (-1);
	memcpy(digits, s, len);
	digits[len] = '\0';
	*out = strtonum(digits, 0, LLONG_MAX / mult, &errstr);
	if (errstr != NULL)
		return (-1);
	*out *= mult;
	return (0);
}

/* Is dir equal to or below top? */
int
path_within(const char *dir, const char *top)
{
	size_t	 len = strlen(top);

	while (len > 1 && top[len - 1] == '/')
		len--;
	if (strncmp(dir, top, len) != 0)
		return (0);
	return (dir[len] == '\0' || dir[len] == '/' || len == 1);
}

/* Every setting before the configuration file is read. */
void
conf_defaults(struct tregd_conf *c)
{
	memset(c, 0, sizeof(*c));
	if (listen_fill(&c->listen[0], DEF_LISTEN_ADDR, AF_INET,
	    DEF_LISTEN_ADDR, DEF_LISTEN_PORT) == -1)
		fatalx("%s: default listen address", __func__);
	c->nlisten = 1;
	strlcpy(c->state, TREGD_STATE, sizeof(c->state));
	strlcpy(c->socket, TREGD_SOCKET, sizeof(c->socket));
	c->signup_open = 0;
	c->run_rlimits = 1;
	c->run_timeout = DEF_RUN_TIMEOUT;
	c->run_slots = DEF_RUN_SLOTS;
	c->vault_workers = DEF_VAULT_WORKERS;
	c->run_slots_user = DEF_RUN_SLOTS_USER;
	c->run_cpu = DEF_RUN_CPU;
	c->run_filesize = DEF_RUN_FILESIZE;
	c->run_uid_first = DEF_RUN_UID_FIRST;
	c->run_uid_last = DEF_RUN_UID_LAST;
	c->run_tmpsize = DEF_RUN_TMPSIZE;
	c->run_processes = DEF_RUN_PROCESSES;
	c->run_memory = DEF_RUN_MEMORY;
	c->run_network = RUN_NET_PROXY;
	c->run_egress_conns = DEF_RUN_EGRESS_CONNS;
	c->run_pool = DEF_RUN_POOL;
	strlcpy(c->run_path, TREGD_RUN_PATH, sizeof(c->run_path));
	strlcpy(c->run_dir, TREGD_RUN_DIR, sizeof(c->run_dir));
	c->relay_allow_private = 0;
	c->relay_timeout_connect = DEF_RELAY_T_CONNECT;
	c->relay_timeout_total = DEF_RELAY_T_TOTAL;
	c->health_interval = 0;		/* treg schedules no run itself */
	c->http_body_max = HTTP_BODY_MAX;
	c->http_max_conns = DEF_HTTP_CONNS;
	c->http_timeout = HTTP_TIMEOUT;
	c->http_timeout_header = DEF_HTTP_T_HEADER;
	c->http_timeout_body = DEF_HTTP_T_BODY;
	c->http_timeout_write = DEF_HTTP_T_WRITE;
	c->http_per_addr = DEF_HTTP_PER_ADDR;
	c->http_buffer = DEF_HTTP_BUFFER;
	c->http_buffer_total = DEF_HTTP_BUFFER_TOTAL;
	c->log_requests = 1;
}

/* Which allowed bin: 1 + index of the built-in list, or 0x100 + index. */
static int
conf_run_which(const struct tregd_conf *c, const char *bin)
{
	int	 i;

	if (bin == NULL || bin[0] == '\0')
		return (0);
	for (i = 0; run_builtin_allow[i] != NULL; i++)
		if (strcmp(run_builtin_allow[i], bin) == 0)
			return (1 + i);
	for (i = 0; i < c->nrun_allow; i++)
		if (strcmp(c->run_allow[i], bin) == 0)
			return (0x100 + i);
	return (0);
}

int
conf_run_allowed(const struct tregd_conf *c, const char *bin)
{
	return (conf_run_which(c, bin) != 0);
}

/*
 * The first executable regular file named bin on run path rp (absolute
 * directories only), in path: 0, or -1 when there is none.
 */
int
conf_run_resolve(const char *rp, const char *bin, char *path, size_t len)
{
	const char	*p, *end;
	struct stat	 st;
	size_t		 dlen;
	int		 n;

	for (p = rp; *p != '\0'; p = end) {
		if ((end = strchr(p, ':')) == NULL)
			end = p + strlen(p);
		dlen = end - p;
		if (*end == ':')
			end++;
		if (dlen == 0 || *p != '/')
			continue;
		n = snprintf(path, len, "%.*s/%s", (int)dlen, p, bin);
		if (n < 0 || (size_t)n >= len)
			continue;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    (st.st_mode & 0111) != 0 && access(path, X_OK) == 0)
			return (0);
	}
	return (-1);
}

/*
 * Which allowed CLIs the host has on the run path, looked up when the
 * configuration is read (start and reload): the tool view's
 * server_runnable says so without the vault touching the filesystem.
 */
void
conf_run_scan(struct tregd_conf *c)
{
	char	 path[PATH_MAX];
	int	 i;

	c->run_have_builtin = c->run_have_allow = 0;
	for (i = 0; run_builtin_allow[i] != NULL && i < 64; i++)
		if (conf_run_resolve(c->run_path, run_builtin_allow[i], path,
		    sizeof(path)) == 0)
			c->run_have_builtin |= 1ULL << i;
	for (i = 0; i < c->nrun_allow && i < 64; i++)
		if (conf_run_resolve(c->run_path, c->run_allow[i], path,
		    sizeof(path)) == 0)
			c->run_have_allow |= 1ULL << i;
}

int
conf_run_installed(const struct tregd_conf *c, const char *bin)
{
	int	 w = conf_run_which(c, bin);

	if (w == 0)
		return (0);
	if (w < 0x100)
		return ((c->run_have_builtin >> (w - 1)) & 1);
	return ((c->run_have_allow >> (w - 0x100)) & 1);
}

static void
print_string(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

static void
print_size(FILE *fp, long long v)
{
	if (v != 0 && v % GIGA == 0)
		fprintf(fp, "%lldG", v / GIGA);
	else if (v != 0 && v % MEGA == 0)
		fprintf(fp, "%lldM", v / MEGA);
	else if (v != 0 && v % KILO == 0)
		fprintf(fp, "%lldK", v / KILO);
	else
		fprintf(fp, "%lld", v);
}

/* The isolation directives, printed when they are not the default. */
static void
print_isolation(FILE *fp, const struct tregd_conf *c)
{
	if (c->run_uid_first != DEF_RUN_UID_FIRST ||
	    c->run_uid_last != DEF_RUN_UID_LAST)
		fprintf(fp, "run users %u-%u\n", c->run_uid_first,
		    c->run_uid_last);
	if (c->run_tmpsize != DEF_RUN_TMPSIZE) {
		fputs("run tmpsize ", fp);
		print_size(fp, c->run_tmpsize);
		fputc('\n', fp);
	}
	if (c->run_processes != DEF_RUN_PROCESSES)
		fprintf(fp, "run processes %d\n", c->run_processes);
	if (c->run_memory != DEF_RUN_MEMORY) {
		fputs("run memory ", fp);
		print_size(fp, c->run_memory);
		fputc('\n', fp);
	}
	if (c->run_network == RUN_NET_NONE)
		fputs("run network no\n", fp);
	else if (c->run_network == RUN_NET_HOST)
		fputs("run network host\n", fp);
	if (c->run_egress_conns != DEF_RUN_EGRESS_CONNS)
		fprintf(fp, "run egress connections %d\n",
		    c->run_egress_conns);
	if (c->run_pool != DEF_RUN_POOL)
		fprintf(fp, "run pool %d\n", c->run_pool);
}

/* The mail lines: only those set. */
static void
print_mail(const struct tregd_conf *c, FILE *fp)
{
	if (c->mail_sendmail[0] != '\0') {
		fputs("mail sendmail ", fp);
		print_string(fp, c->mail_sendmail);
		fputc('\n', fp);
	}
	if (c->mail_from[0] != '\0') {
		fputs("mail from ", fp);
		print_string(fp, c->mail_from);
		fputc('\n', fp);
	}
	if (c->mail_development)
		fputs("mail development yes\n", fp);
}

void
print_config(const struct tregd_conf *c, FILE *fp)
{
	int	 i, j;

	for (i = 0; i < c->nlisten; i++) {
		/* "*" made two entries of one name: print it once. */
		for (j = 0; j < i; j++)
			if (strcmp(c->listen[j].name, c->listen[i].name) == 0 &&
			    c->listen[j].port == c->listen[i].port)
				break;
		if (j < i)
			continue;
		fprintf(fp, "listen on %s port %u%s\n", c->listen[i].name,
		    c->listen[i].port, c->listen[i].tls ? " tls" : "");
	}
	for (i = 0; i < c->nmetrics; i++) {
		for (j = 0; j < i; j++)
			if (strcmp(c->metrics[j].name, c->metrics[i].name) ==
			    0 && c->metrics[j].port == c->metrics[i].port)
				break;
		if (j < i)
			continue;
		fprintf(fp, "metrics listen on %s port %u\n",
		    c->metrics[i].name, c->metrics[i].port);
	}
	fputs("state ", fp);
	print_string(fp, c->state);
	fputc('\n', fp);
	if (c->db_engine == DB_POSTGRESQL) {
		fputs("database postgresql ", fp);
		print_string(fp, c->db_conninfo);
		fputc('\n', fp);
	} else
		fputs("database sqlite\n", fp);
	if (c->db_password_file[0] != '\0') {
		fputs("database password-file ", fp);
		print_string(fp, c->db_password_file);
		fputc('\n', fp);
	}
	fprintf(fp, "vault workers %d\n", c->vault_workers);
	fputs("socket ", fp);
	print_string(fp, c->socket);
	fputc('\n', fp);
	if (c->socket_group[0] != '\0') {
		fputs("socket group ", fp);
		print_string(fp, c->socket_group);
		fputc('\n', fp);
	}
	fprintf(fp, "signup %s\n", c->signup_open ? "open" : "closed");
	print_mail(c, fp);
	if (c->nrun_allow > 0) {
		fputs("run allow {", fp);
		for (i = 0; i < c->nrun_allow; i++) {
			fputs(i == 0 ? " " : ", ", fp);
			print_string(fp, c->run_allow[i]);
		}
		fputs(" }\n", fp);
	}
	fprintf(fp, "run rlimits %s\n", c->run_rlimits ? "yes" : "no");
	fprintf(fp, "run timeout %d\n", c->run_timeout);
	fprintf(fp, "run slots %d per-user %d", c->run_slots,
	    c->run_slots_user);
	if (c->run_slots_org != 0)
		fprintf(fp, " per-org %d", c->run_slots_org);
	fputc('\n', fp);
	fputs("run path ", fp);
	print_string(fp, c->run_path);
	fputs("\nrun directory ", fp);
	print_string(fp, c->run_dir);
	fprintf(fp, "\nrun cpu %lld\n", c->run_cpu);
	fputs("run filesize ", fp);
	print_size(fp, c->run_filesize);
	fputc('\n', fp);
	print_isolation(fp, c);
	/* The proof is a shared secret: say that it is set, never what. */
	if (c->run_proof[0] != '\0' || c->run_proof_set)
		fputs("# run proof is set\n", fp);
	fprintf(fp, "relay allow-private %s\n",
	    c->relay_allow_private ? "yes" : "no");
	if (c->relay_ca[0] != '\0') {
		fputs("relay ca ", fp);
		print_string(fp, c->relay_ca);
		fputc('\n', fp);
	}
	fprintf(fp, "relay timeout connect %d\nrelay timeout total %d\n",
	    c->relay_timeout_connect, c->relay_timeout_total);
	fputs("http body-limit ", fp);
	print_size(fp, c->http_body_max);
	fprintf(fp, "\nhttp max-connections %d\n", c->http_max_conns);
	fprintf(fp, "http timeout %d\n", c->http_timeout);
	print_front(c, fp);
}

/* The frontend's newer settings, printed where they differ from default. */
static void
print_front(const struct tregd_conf *c, FILE *fp)
{
	if (c->http_per_addr != DEF_HTTP_PER_ADDR)
		fprintf(fp, "http connections %d per-address %d\n",
		    c->http_max_conns, c->http_per_addr);
	if (c->http_timeout_header != DEF_HTTP_T_HEADER)
		fprintf(fp, "http timeout header %d\n", c->http_timeout_header);
	if (c->http_timeout_body != DEF_HTTP_T_BODY)
		fprintf(fp, "http timeout body %d\n", c->http_timeout_body);
	if (c->http_timeout_write != DEF_HTTP_T_WRITE)
		fprintf(fp, "http timeout write %d\n", c->http_timeout_write);
	if (c->http_buffer != DEF_HTTP_BUFFER ||
	    c->http_buffer_total != DEF_HTTP_BUFFER_TOTAL) {
		fputs("http buffer ", fp);
		print_size(fp, c->http_buffer);
		fputs(" total ", fp);
		print_size(fp, c->http_buffer_total);
		fputc('\n', fp);
	}
	if (c->tls_cert[0] != '\0') {
		fputs("tls certificate ", fp);
		print_string(fp, c->tls_cert);
		fputc('\n', fp);
	}
	if (c->tls_key[0] != '\0') {
		fputs("tls key ", fp);
		print_string(fp, c->tls_key);
		fputc('\n', fp);
	}
	if (!c->log_requests)
		fputs("log requests no\n", fp);
	print_interval(fp, "health interval", c->health_interval);
}

/* A duration in its largest whole unit; nothing when 0 (the default). */
static void
print_interval(FILE *fp, const char *what, int secs)
{
	if (secs == 0)
		return;
	if (secs % 86400 == 0)
		fprintf(fp, "%s %dd\n", what, secs / 86400);
	else if (secs % 3600 == 0)
		fprintf(fp, "%s %dh\n", what, secs / 3600);
	else if (secs % 60 == 0)
		fprintf(fp, "%s %dm\n", what, secs / 60);
	else
		fprintf(fp, "%s %ds\n", what, secs);
}
