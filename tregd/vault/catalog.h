/*
 * catalog.h: the vendor CLIs tregd knows as treg's catalog does (catalog.c).
 */

#ifndef CATALOG_H
#define CATALOG_H

#include <jansson.h>

#define CATALOG_ENV_MAX		3
#define CATALOG_RULE_MAX	8
#define CATALOG_RULE_LEN	256	/* a rule spelled out */

/* One variable the key goes into, or one field of a JSON key. */
struct catalog_env {
	const char	*name;
	const char	*field;		/* NULL: the secret as stored */
	const char	*sign;		/* NULL, or "aws-sigv4" (SPEC 6a) */
};

/*
 * A deny default, matched against the structure of the arguments
 * (catalog_deny.c), never against words inside values:
 *  - path: the subcommand words the arguments start with (flags and
 *    their values may come between), '|' between one command's names,
 *    "" for any command;
 *  - flags: space-separated "--long" and "-s" spellings, any of which
 *    refuses (also as --long=v, -sv and in a group -xs); NULL: the path
 *    alone refuses;
 *  - value: a PCRE2 the flag's value must match; NULL: any value.
 */
struct catalog_rule {
	const char	*path;
	const char	*flags;
	const char	*value;
	const char	*what;		/* what it would do, for the 403 */
};

struct catalog_cli {
	const char		*bin;
	const char		*auth_mechanism;  /* env argv config_file device */
	struct catalog_env	 env[CATALOG_ENV_MAX + 1];
	const char		*argv_flag;	/* or: the flag before the key */
	/*
	 * A tool whose host is none of home (space-separated) gets the
	 * key in away instead of env[0] (gh: GitHub Enterprise).
	 */
	const char		*home;
	const char		*away;
	struct catalog_rule	 deny[CATALOG_RULE_MAX + 1];
	const char		*unsupported;	/* NULL, or why not */
	/*
	 * The hosts its runs reach besides the base_url's (SPEC 6a),
	 * space-separated cli.egress entries; NULL: none.
	 */
	const char		*egress;
};

extern const struct catalog_cli	 catalog_clis[];

const struct catalog_cli *catalog_find(const char *);
/* The entry's inject list for a tool on host, as cli_check stores it. */
json_t		*catalog_inject(const struct catalog_cli *, const char *);
/* The egress hosts a CLI of bin reaches (cli.egress entries), or NULL. */
const char	*catalog_egress(const char *);
/* treg's errors list: output pattern -> run-report verdict. */
json_t		*catalog_errors(const struct catalog_cli *);
/* A mechanism the server can inject: env or argv. */
int		 catalog_mechanism_injectable(const char *);
const char	*catalog_unsupported(json_t *);
const char	*catalog_unsupported_name(const char *);
int		 catalog_server_runnable(json_t *, int, int);
/* The "cli" block a tool without one could take (the 409 template). */
json_t		*catalog_template(const char *);

/*
 * catalog_deny.c: 1 when a deny default of profile cli (its bin's rules,
 * and the reads of the run's process files every catalog CLI is refused)
 * refuses argv, with the rule spelled out in rule and what the command
 * would do in *why; 0 when none does, or the profile says
 * "deny_defaults": false.
 */
int		 catalog_deny(json_t *, json_t *, char *, size_t,
		    const char **);
/* 1 when s names a path under /proc, /dev/fd or /dev/std{in,out,err}. */
int		 catalog_path_is_process_file(const char *);

#endif
