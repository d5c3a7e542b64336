/*
 * compat.h: treg's request forms rewritten to tregd's (compat.c).
 */

#ifndef COMPAT_H
#define COMPAT_H

#include <jansson.h>

int	compat_tool_shorthand(json_t *, int, char *, size_t);
void	compat_cli_bin(json_t *, const char *);

#endif
