/*
 * frontend/: what the frontend's files share (HTTP to clients; no secret,
 * no database, no file, no program).  http.h is its HTTP/1.1 connections.
 */

#ifndef FRONTEND_H
#define FRONTEND_H

#include "tregd.h"

/* frontend.c: a call's vault worker, counted as a request's load. */
struct imsgev	*front_vault_take(int *);
void		 front_vault_give(int);
void		 front_end_answered(int);	/* a run or call of worker w ended */

/* frontend_call.c */
struct http_conn;
struct http_head;
struct blob;
void	 front_call_init(const struct tregd_conf *, struct imsgev *);
int	 front_call_path(const char *);
void	 front_call(struct http_conn *, const struct http_head *,
	    const char *, size_t, uint32_t);
int	 front_call_gone(void *, int);
void	 front_call_refused(struct blob *, int);
/* The relay's messages (rows of frontend.c's table). */
void	 front_call_imsg_head(struct imsgev *, struct imsg *);
void	 front_call_imsg_head_data(struct imsgev *, struct imsg *);
void	 front_call_imsg_body(struct imsgev *, struct imsg *);
void	 front_call_imsg_end(struct imsgev *, struct imsg *);
void	 front_call_print_routes(FILE *);

/* openapi_doc.c, made from doc/openapi.json by make */
extern const char openapi_doc[];
extern const size_t openapi_doc_len;
/* skill_doc.c, made from doc/skill.md by make */
extern const char skill_doc[];
extern const size_t skill_doc_len;

#endif /* FRONTEND_H */
