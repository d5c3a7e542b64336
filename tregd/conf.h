/*
 * The defaults and limits of tregd.conf, shared by the grammar (parse.y,
 * which checks the ranges in its actions) and the canonical printer
 * (print_config() in conf.c, which prints what differs from a default).
 */

#ifndef CONF_H
#define CONF_H

#define MACRO_NAME_MAX		64	/* $name */

#define KILO			1024LL
#define MEGA			(1024LL * 1024)
#define GIGA			(1024LL * 1024 * 1024)

/* Defaults; the ranges are checked in the grammar actions. */
#define DEF_LISTEN_ADDR		"127.0.0.1"
#define DEF_LISTEN_PORT		8790
#define DEF_RUN_TIMEOUT		120
#define DEF_RELAY_T_CONNECT	10
#define DEF_RELAY_T_TOTAL	300
#define RELAY_TIMEOUT_MAX	3600
/* health interval: off (treg schedules none itself), else 10 s .. 30 days */
#define HEALTH_INTERVAL_MIN	10
#define HEALTH_INTERVAL_MAX	(30 * 86400)
#define DEF_RUN_SLOTS		4
#define DEF_RUN_SLOTS_USER	2
#define DEF_VAULT_WORKERS	2	/* one answers while one is busy */
#define DEF_RUN_CPU		300
#define DEF_RUN_FILESIZE	(100 * MEGA)
#define DEF_RUN_UID_FIRST	61000
#define DEF_RUN_UID_LAST	61999
#define DEF_RUN_TMPSIZE		(256 * MEGA)
#define DEF_RUN_PROCESSES	256
#define DEF_RUN_POOL		4
#define RUN_POOL_MAX		64
#define DEF_RUN_EGRESS_CONNS	32	/* per run (SPEC 6a) */
#define RUN_EGRESS_CONNS_MIN	1
#define RUN_EGRESS_CONNS_MAX	1024
#define DEF_RUN_MEMORY		GIGA
#define DEF_HTTP_CONNS		1000
#define RUN_SLOTS_MAX		1024
#define RUN_CPU_MAX		86400
#define RUN_FILESIZE_MIN	KILO
#define RUN_FILESIZE_MAX	(64 * GIGA)
#define RUN_UID_MIN		1000
#define RUN_UID_MAX		2000000000
#define RUN_TMPSIZE_MIN		MEGA
#define RUN_TMPSIZE_MAX		(64 * GIGA)
#define RUN_PROCESSES_MIN	8
#define RUN_PROCESSES_MAX	65536
#define RUN_MEMORY_MIN		(16 * MEGA)
#define RUN_MEMORY_MAX		(1024 * GIGA)
#define HTTP_BODY_MIN		KILO
#define HTTP_BODY_LIMIT_MAX	(64 * MEGA)
#define HTTP_CONNS_MIN		16
#define HTTP_TIMEOUT_MIN	5
#define HTTP_TIMEOUT_MAX	3600
#define PROOF_LEN_MIN		16
#define DEF_HTTP_PER_ADDR	64
#define DEF_HTTP_T_HEADER	10
#define DEF_HTTP_T_BODY		30
#define DEF_HTTP_T_WRITE	30
#define DEF_HTTP_BUFFER		(256 * KILO)
#define DEF_HTTP_BUFFER_TOTAL	(64 * MEGA)
#define HTTP_T_MIN		1
#define HTTP_BUFFER_MIN		(16 * KILO)
#define HTTP_BUFFER_MAX		(4 * GIGA)

/* conf.c: checks of single values, without parser state. */
int	 macro_name_ok(const char *, size_t);
int	 listen_fill(struct conf_listen *, const char *, int, const char *,
	    int);
int	 listen_same(const struct conf_listen *, const struct conf_listen *);
int	 bin_name_ok(const char *);
int	 group_name_ok(const char *);
int	 conf_mail_address(const char *);
int	 size_parse(const char *, long long *);
long long duration_parse(const char *);
int	 path_within(const char *, const char *);

/* conf_macro.c: the macros parse.y's lexer expands. */
int		 symset(const char *, const char *, int);
const char	*symget(const char *);
void		 symclear(int);

#endif /* CONF_H */
