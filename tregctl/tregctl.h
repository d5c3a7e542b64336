/*
 * tregctl: the output interface.  The daemon answers every command with
 * a JSON document; an output backend renders it, as text for a person
 * or as JSON (-j) for a script.
 */

#ifndef TREGCTL_H
#define TREGCTL_H

#include <jansson.h>

#include "tregd.h"

struct output {
	/* Render the answer to a successful command on stdout. */
	void	(*result)(enum ctl_cmd, const json_t *);
	/* The daemon refused: its {"error": ...} document. */
	void	(*failed)(const json_t *);
	/* tregctl's own failure, with the words that were valid or NULL. */
	void	(*error)(const char *, const char *);
};

/* output.c */
extern const struct output	text_output;
extern const struct output	json_output;

/* backup.c */
void		 backup_prepare(const char *);
json_t		*backup_finish(const char *, json_t *);

#endif /* TREGCTL_H */
