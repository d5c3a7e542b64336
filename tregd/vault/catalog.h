/*
 * catalog.h: the vendor CLIs tregd knows as treg's catalog does (catalog.c).
 */

#ifndef CATALOG_H
#define CATALOG_H

#include <jansson.h>

#define CATALOG_DENY_MAX	4

struct catalog_cli {
	const char	*bin;
	const char	*auth_mechanism;	/* env argv config_file device */
	const char	*env;		/* the variable the key goes into */
	const char	*argv_flag;	/* or: the flag before the key */
	const char	*secret_field;	/* NULL: the secret as stored */
	const char	*deny[CATALOG_DENY_MAX + 1];
	const char	*unsupported;	/* NULL, or why tregd cannot run it */
};

extern const struct catalog_cli	 catalog_clis[];

const struct catalog_cli *catalog_find(const char *);
/* The entry's inject list, in the canonical form of cli_check. */
json_t		*catalog_inject(const struct catalog_cli *);
/* treg's errors list: output pattern -> run-report verdict. */
json_t		*catalog_errors(const struct catalog_cli *);
/*
 * The deny patterns a run or grant of profile cli is checked against:
 * its own plus the catalog's for its bin, unless deny_defaults is false.
 * A new reference; *own gets how many come first from the profile.
 */
json_t		*catalog_effective_deny(json_t *, size_t *);
int		 catalog_deny_is_default(json_t *, const char *);
/* A mechanism the server can inject: env or argv. */
int		 catalog_mechanism_injectable(const char *);
const char	*catalog_unsupported(json_t *);
const char	*catalog_unsupported_name(const char *);
int		 catalog_server_runnable(json_t *, int);
/* The "cli" block a tool without one could take (the 409 template). */
json_t		*catalog_template(const char *);

#endif
