/*
 * conf_macro.c: the configuration's macros ("name = value" in the file,
 * "tregd -D name=value" on the command line), expanded by parse.y's
 * lexer as $name outside quotes.  A -D macro outlives a parse (the
 * reload's file is read with it again) and beats one of the same name
 * in the file.  Values may be secrets (a proof, a password file's
 * path): they are zeroed when forgotten.
 */

#include <sys/types.h>
#include <sys/queue.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tregd.h"
#include "conf.h"

struct sym {
	TAILQ_ENTRY(sym)	 entry;
	int			 persist;	/* -D: beats the file */
	char			*name;
	char			*val;
};
TAILQ_HEAD(symhead, sym);

static struct symhead	 symhead = TAILQ_HEAD_INITIALIZER(symhead);

/* A -D macro (persist) wins over one of the same name in the file. */
int
symset(const char *name, const char *val, int persist)
{
	struct sym	*sym;

	TAILQ_FOREACH(sym, &symhead, entry)
		if (strcmp(sym->name, name) == 0)
			break;
	if (sym != NULL) {
		if (sym->persist && !persist)
			return (0);
		TAILQ_REMOVE(&symhead, sym, entry);
		free(sym->name);
		freezero(sym->val, strlen(sym->val) + 1);
		free(sym);
	}
	if ((sym = calloc(1, sizeof(*sym))) == NULL)
		return (-1);
	if ((sym->name = strdup(name)) == NULL) {
		free(sym);
		return (-1);
	}
	if ((sym->val = strdup(val)) == NULL) {
		free(sym->name);
		free(sym);
		return (-1);
	}
	sym->persist = persist;
	TAILQ_INSERT_TAIL(&symhead, sym, entry);
	return (0);
}

const char *
symget(const char *name)
{
	struct sym	*sym;

	TAILQ_FOREACH(sym, &symhead, entry)
		if (strcmp(sym->name, name) == 0)
			return (sym->val);
	return (NULL);
}

/* Forget the file's macros; with all set, the -D ones too. */
void
symclear(int all)
{
	struct sym	*sym, *next;

	for (sym = TAILQ_FIRST(&symhead); sym != NULL; sym = next) {
		next = TAILQ_NEXT(sym, entry);
		if (sym->persist && !all)
			continue;
		TAILQ_REMOVE(&symhead, sym, entry);
		free(sym->name);
		freezero(sym->val, strlen(sym->val) + 1);
		free(sym);
	}
}

int
cmdline_symset(char *s)
{
	const char	*eq, *p;
	char		*name;
	int		 ret;

	if (s == NULL || (eq = strchr(s, '=')) == NULL)
		return (-1);
	if (!macro_name_ok(s, eq - s))
		return (-1);
	/* A newline in a value would throw the line numbers off. */
	for (p = eq + 1; *p != '\0'; p++)
		if (iscntrl((unsigned char)*p) && *p != '\t')
			return (-1);
	if ((name = strndup(s, eq - s)) == NULL)
		return (-1);
	ret = symset(name, eq + 1, 1);
	free(name);
	return (ret);
}
