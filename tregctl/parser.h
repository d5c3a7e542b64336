/*
 * tregctl: the command-line parser.  A static table of tokens per
 * position; every keyword may be abbreviated to a unique prefix.
 */

#ifndef PARSER_H
#define PARSER_H

#include "tregd.h"

#define PARSE_RUNS_LIMIT_MAX	500
/* Field sizes with the NUL, as in struct ctl_request. */
#define PARSE_EMAIL_LEN		256
#define PARSE_ORG_LEN		(NAME_LEN_MAX + 1)
#define PARSE_ROLE_LEN		16
#define PARSE_KEY_HEX		CTL_KEY_HEX

struct parse_result {
	enum ctl_cmd	 action;
	int		 limit;		/* show runs: 0 = default */
	int		 force;		/* user delete ... force */
	char		 email[PARSE_EMAIL_LEN];
	char		 org[PARSE_ORG_LEN];
	char		 role[PARSE_ROLE_LEN];
	char		 dir[PATH_MAX];	/* backup DIR */
	char		 key[PARSE_KEY_HEX + 1];	/* key use|retire ID */
	/* On failure: why, and the words that would have been accepted. */
	char		 error[256];
	char		 valid[512];
};

/* 0 and *res filled, or -1 with res->error (and res->valid) set. */
int	 parse(int, char *[], struct parse_result *);

#endif /* PARSER_H */
