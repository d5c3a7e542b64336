/*
 * compat.h: treg's request forms rewritten to tregd's (compat.c).
 */

#ifndef COMPAT_H
#define COMPAT_H

#include <stdint.h>

#include <jansson.h>

int	compat_tool_shorthand(json_t *, int, char *, size_t);
void	compat_cli_bin(json_t *, const char *);
int	compat_deny_host(const char *, char *, size_t);
int	compat_http_method(const char *, char *, size_t);
void	compat_clamp(json_t *, const char *, json_int_t, json_int_t);
int	compat_agent_email(const char *);
int	compat_tool_spec(json_t *, int, int, char *, size_t);
json_t	*compat_tool_secret_ids(json_t *, json_t *);
int	compat_ids_have(json_t *, int64_t);
json_t	*compat_argv_path(json_t *);

#endif
