/*
 * Inside the PostgreSQL engine (store_pg*.c) only: the connection, the
 * prepared statements and the helpers that bind and read them.  Nothing
 * outside the engine includes this header.
 */

#ifndef STORE_PG_H
#define STORE_PG_H

#include <libpq-fe.h>

#include "store.h"

#define PGQ_MAX		24	/* parameters of one statement */
#define PG_PAGE		64	/* rows fetched per keyset step */

/* The parameters of one statement, as libpq wants them. */
struct pgq {
	const char	*vals[PGQ_MAX];
	int		 lens[PGQ_MAX];
	int		 fmts[PGQ_MAX];
	char		 nums[PGQ_MAX][24];
	int		 n;
};

/* A statement, prepared on first use under its index. */
struct pg_stmt {
	const char	*sql;
	int		 prepared;	/* the connection it was prepared on */
};

extern PGconn	*pg_conn;

void		 pgq_init(struct pgq *);
void		 pgq_int(struct pgq *, int64_t);
void		 pgq_text(struct pgq *, const char *);	/* NULL: NULL */
void		 pgq_blob(struct pgq *, const void *, size_t);
void		 pgq_null(struct pgq *);
void		 pgq_intif(struct pgq *, int, int64_t);	/* 0: NULL */
/* Rows (or none) in binary, or NULL with store_error() set. */
PGresult	*pg_run(struct pg_stmt *, const struct pgq *);
/* pg_run() and the result cleared: 0, or -1. */
int		 pg_do(struct pg_stmt *, const struct pgq *);
/* Reads row i of a result; non-zero stops a walk (< 0: a failure). */
typedef int	(*pg_row_fn)(const PGresult *, int, void *);
/* Every row to row() until it stops: 0, or -1. */
int		 pg_each(struct pg_stmt *, const struct pgq *, pg_row_fn,
		    void *);
/* pg_each() of a statement whose one parameter is an id. */
int		 pg_each_of(struct pg_stmt *, int64_t, pg_row_fn, void *);
/* A result with a row in *res (the caller clears it): 0, 1 none, -1. */
int		 pg_row(struct pg_stmt *, const struct pgq *, PGresult **);
/* pg_row() of a statement whose one parameter is an id, or a text. */
int		 pg_row_of(struct pg_stmt *, int64_t, PGresult **);
int		 pg_row_of_text(struct pg_stmt *, const char *, PGresult **);
/* The first row to row() (NULL: only whether any): 0, 1 none, -1. */
int		 pg_one(struct pg_stmt *, const struct pgq *, pg_row_fn,
		    void *);
/* A row_fn: the first column, text, to a store_each's fn.text. */
int		 pg_text_row(const PGresult *, int, void *);
/* A write: 0 done (*id from RETURNING), 1 no row, STORE_TAKEN, -1. */
int		 pg_write(struct pg_stmt *, const struct pgq *, int64_t *);
/* Up to max ids from the first column; *n how many. */
int		 pg_ids(struct pg_stmt *, const struct pgq *, int64_t *,
		    size_t, size_t *);
void		 pg_version_seen(int64_t);
int		 pg_exec(const char *);
int		 pg_fail(PGresult *, const char *);
int64_t		 pg_int(const PGresult *, int, int);
const char	*pg_text(const PGresult *, int, int);	/* NULL: "" */
const char	*pg_ntext(const PGresult *, int, int);	/* NULL: NULL */
int		 pg_null(const PGresult *, int, int);
int64_t		 pg_intif(const PGresult *, int, int, int *);
char		*pg_strdup(const PGresult *, int, int);	/* NULL: NULL */
void		 pg_copy(char *, size_t, const PGresult *, int, int);

/* store_pg.c: the connection's session */
int		 pg_session(void);
void		 pg_found(void);

const char	*pg_error(void);

/* store_pg_conn.c: a lost connection made again */
int		 pg_pin(PGconn *);
void		 pg_unpin(void);
int		 pg_reach(struct store_reach *);
void		 pg_reach_dir(const char *);
void		 pg_lost_start(void);

/* store_pg_key.c */
int		 pg_keys(const char *, store_key_fn, void *);
int		 pg_key_insert(const struct store_key *);
int		 pg_key_set_current(const char *);
int		 pg_key_retire(const char *, const char *);
int		 pg_key_unlink(const char *);
int		 pg_key_host_set(const char *, const char *, const char *);
int		 pg_key_hosts(store_key_host_fn, void *);
int		 pg_sealed_keys(store_key_host_fn, void *);

/* store_pg_schema.c */
int		 pg_migrate(void);

/* the domain parts */
int	pg_member_by_token(const uint8_t [STORE_HASH_LEN],
	    struct store_member *);
int	pg_secret_get(int64_t, int64_t, struct store_secret *);
int	pg_secret_set_sealed(int64_t, const void *, size_t);
int	pg_secrets_each_sealed(store_sealed_fn, void *);
int	pg_tool_by_name(int64_t, const char *, struct store_tool *);
int	pg_tool_secret_ids(int64_t, int64_t *, size_t, size_t *);
int	pg_run_insert(const struct store_run *, int64_t *);
int	pg_host_beat(int64_t, const char *, int64_t);
int	pg_hosts_retire(int64_t, const char *, int64_t);
int	pg_hosts_live(int64_t, int64_t *, size_t, size_t *);
int	pg_run_end_insert(const struct store_run_end *);
int	pg_call_insert(const struct store_call *, int64_t *);
int	pg_runs_page(int64_t, char, int64_t, store_runs_fn, void *);
int	pg_calls_page(int64_t, int64_t, store_calls_fn, void *);
int	pg_calls_run_page(int64_t, int64_t, int64_t, store_calls_fn, void *);
int	pg_org_by_slug(const char *, int64_t *);
int	pg_org_secrets_sealed(int64_t, store_sealed_fn, void *);
int	pg_sealed_count(const void *, size_t, int64_t *);
int	pg_counts(struct store_counts *);
int	pg_org_members(int64_t, int, store_org_member_fn, void *);
int	pg_org_secrets(int64_t, store_secret_row_fn, void *);
int	pg_user_by_email(const char *, int64_t *, int *);
int	pg_user_sole_owned(int64_t, store_org_fn, void *);
int	pg_user_first_org(int64_t, int64_t *);
int	pg_user_delete(int64_t);
int	pg_member_of(int64_t, int64_t);
int	pg_deny_rules(int64_t, int64_t, store_deny_fn, void *);
int	pg_deny_count(int64_t, int64_t *);
int	pg_deny_insert(const struct store_deny *, int64_t *);
int	pg_deny_get(int64_t, store_deny_fn, void *);
int	pg_deny_delete(int64_t, int64_t);

/* vault_org.c, vault_policy.c, vault_ctl.c */
/* store_pg_org.c, store_pg_member.c, store_pg_policy.c */
/* The first column of the first row: 0, 1 no row, -1. */
int		 pg_value(struct pg_stmt *, const struct pgq *, int64_t *);
/* INSERT ... ON CONFLICT DO NOTHING RETURNING id: 0, STORE_CONFLICT. */
int		 pg_insert(struct pg_stmt *, const struct pgq *, int64_t *);
/* An UPDATE or DELETE: 0 a row changed, 1 none, -1. */
int		 pg_changed(struct pg_stmt *, const struct pgq *);
int		 pg_user_insert(const char *, int, const char *, int64_t *);
int		 pg_users_each(store_user_fn, void *);
int		 pg_org_insert(const char *, const char *, const char *,
		    int64_t *);
int		 pg_org_remove(int64_t);
int		 pg_org_find(const char *, int64_t *, char *, size_t);
int		 pg_orgs_each(store_org_row_fn, void *);
int		 pg_org_tool_count(int64_t, const char *, int64_t *);
int		 pg_org_has_tool(int64_t, const char *);
int		 pg_membership_insert(const struct store_membership *,
		    const uint8_t [STORE_HASH_LEN], int64_t *);
int		 pg_membership_get(int64_t, int64_t, store_membership_fn,
		    void *);
int		 pg_memberships(int64_t, int, store_membership_fn, void *);
int		 pg_user_memberships(int64_t, store_membership_fn, void *);
int		 pg_membership_update(int64_t, int64_t,
		    const struct store_membership_set *);
int		 pg_membership_remove(int64_t, int64_t);
int		 pg_owner_count(int64_t, int64_t *);
int		 pg_user_org_ids(int64_t, const char *, int64_t *, size_t,
		    size_t *);
int		 pg_invite_insert(const struct store_invite *,
		    const uint8_t [STORE_HASH_LEN], int64_t *);
int		 pg_invites_each(int64_t, int64_t, store_invite_fn, void *);
int		 pg_invite_by_code(const uint8_t [STORE_HASH_LEN],
		    store_invite_fn, void *);
int		 pg_invites_of_email(const char *, int64_t, store_invite_fn,
		    void *);
int		 pg_invite_by_id(int64_t, store_invite_fn, void *);
int		 pg_invite_use(int64_t);
int		 pg_invite_delete(int64_t, int64_t);
int		 pg_grant_find(int64_t, int64_t, int64_t, const char *);
/* store_pg_health.c */
int		 pg_secret_mark(int64_t, int64_t, const char *,
		    const char *, const char *, store_text_fn, void *);
int		 pg_webhook_set(int64_t, int64_t, const char *);
int		 pg_webhook_find(int64_t, int64_t, store_text_fn, void *);
int		 pg_tool_secrets_mark(int64_t, int64_t, const char *,
		    const char *, const char *, store_text_fn, void *);
/* Secrets' status set by st ($1-$3; org $4, id $5), their names to fn. */
int		 pg_marks(struct pg_stmt *, int64_t, int64_t, const char *,
		    const char *, const char *, store_text_fn, void *);
int		 pg_health(int64_t, const char *, int64_t,
		    store_secret_row_fn, void *);

/* vault_tool.c: store_pg_registry.c */
int	pg_ref_get(enum store_object, int64_t, int64_t, const char *,
	    struct store_ref *);
int	pg_secrets(const struct store_sel *, store_secret_item_fn, void *);
int	pg_secret_insert(const struct store_secret *, int64_t *);
int	pg_secret_set_value(int64_t, int64_t, const void *, size_t);
int	pg_secret_update(int64_t, int64_t, const char *, const char *);
int	pg_secret_users(int64_t, store_secret_user_fn, void *);
int	pg_secret_delete(int64_t, int64_t);
int	pg_tools(const struct store_sel *, store_tool_item_fn, void *);
int	pg_tools_by_slug(const char *, store_tool_item_fn, void *);
int	pg_tool_name_used(int64_t, const char *, int64_t);
int	pg_tool_insert(const struct store_tool_item *, int64_t *);
int	pg_tool_update(const struct store_tool_item *);
int	pg_tool_secrets_set(int64_t, const int64_t *, size_t);
int	pg_tool_delete(int64_t, int64_t);
int	pg_bundles(const struct store_sel *, store_bundle_item_fn, void *);
int	pg_bundle_insert(const struct store_bundle_item *, int64_t *);
int	pg_bundle_set_recipe(int64_t, int64_t, const char *);
int	pg_bundle_outside_user(int64_t, char *, char *, size_t);
int	pg_bundle_delete(int64_t, int64_t);
/* The last failed statement broke a UNIQUE constraint (SQLSTATE 23505). */
int	pg_unique_violation(void);

/* calls and daily caps (the relay) */
int		 pg_read_begin(void);
void		 pg_read_end(void);
int		 pg_call_end_insert(const struct store_call_end *);
int		 pg_call_cap_take(int64_t, int64_t, const char *, int64_t,
		    int64_t);
int		 pg_call_used(int64_t, int64_t, const char *, int64_t *);
int		 pg_call_cap_get(int64_t, int64_t, int *, int64_t *);
int		 pg_call_cap_set(int64_t, int64_t, int, int64_t);
int		 pg_tools_by_host(int64_t, const char *, store_tool_url_fn,
		    void *);
int		 pg_registry_version(int64_t *);

/* batched run ends */
int	pg_run_ends_insert(const struct store_run_end *, size_t);
int	pg_runs_tools(int64_t, const char *const *, size_t, char, int64_t,
	    int, store_runs_fn, void *);

/* treg compatibility */

/* store_pg_identity.c */
int	pg_identity_insert(int64_t, const uint8_t [STORE_HASH_LEN],
	    const char *);
int	pg_identity_by_token(const uint8_t [STORE_HASH_LEN], int64_t *,
	    char *, size_t, int *);
int	pg_identity_member_hash(const uint8_t [STORE_HASH_LEN], const char *,
	    uint8_t [STORE_HASH_LEN]);
int	pg_identity_count(int64_t, int64_t *);
int	pg_identity_trim(int64_t, int64_t);
int	pg_identity_revoke(int64_t);
int	pg_identity_tokens(int64_t, store_access_fn, void *);
int	pg_access_row(const PGresult *, int, void *);
int	pg_email_code_get(const char *, struct store_email_code *);
int	pg_email_code_put(const char *, const struct store_email_code *);

/* store_pg_project.c: projects and usage */
int		 pg_project_insert(const struct store_project *, int64_t *);
int		 pg_projects(int64_t, store_project_fn, void *);
int		 pg_project_delete(int64_t, int64_t, int64_t *);
int		 pg_tool_project_set(int64_t, int64_t, int64_t);
int		 pg_member_projects(int64_t, store_access_fn, void *);
int		 pg_member_projects_set(int64_t, int64_t, const char *);
int		 pg_invite_projects(int64_t, char **);
int		 pg_invite_projects_set(int64_t, const char *);
int		 pg_usage(int64_t, const char *, store_usage_fn, void *);
int		 pg_observed(int64_t, const char *, const char *, int64_t,
		    store_observed_fn, void *);

#endif /* STORE_PG_H */
