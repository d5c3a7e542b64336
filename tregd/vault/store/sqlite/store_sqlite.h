/*
 * The sqlite engine's internals, shared by its files store_sqlite*.c:
 * the connection, the statement cache and binding by parameter name.
 */

#ifndef STORE_SQLITE_H
#define STORE_SQLITE_H

#include <sqlite3.h>

#include "store.h"

extern sqlite3	*vault_db;

/* Cached by the address of the SQL text; comes back reset and unbound. */
sqlite3_stmt	*db_prepare(const char *);
int		 db_exec(const char *);
const char	*db_text(sqlite3_stmt *, int);	/* "" for NULL */
/* Bind by name (":org"); NULL text binds NULL.  -1: no such parameter. */
int		 sq_int(sqlite3_stmt *, const char *, int64_t);
int		 sq_text(sqlite3_stmt *, const char *, const char *);
int		 sq_blob(sqlite3_stmt *, const char *, const void *, size_t);
int		 sq_null(sqlite3_stmt *, const char *);
/* The column named so in the current row ("" / 0 for NULL or none). */
int		 sq_col(sqlite3_stmt *, const char *);
const char	*sq_ctext(sqlite3_stmt *, const char *);
int64_t		 sq_cint(sqlite3_stmt *, const char *);
int		 sq_cnull(sqlite3_stmt *, const char *);
int64_t		 sq_cintif(sqlite3_stmt *, const char *, int *);
char		*sq_cdup(sqlite3_stmt *, const char *);	/* NULL for NULL */
const char	*sq_cntext(sqlite3_stmt *, const char *);	/* NULL too */
void		 sq_ccopy(sqlite3_stmt *, const char *, char *, size_t);
/*
 * The rows of a prepared and bound statement as a JSON array, view(st,
 * arg) each; NULL when a step fails.  For the vault files whose
 * statements have not moved behind store.h yet.
 */
#include <jansson.h>
typedef json_t	*(*db_row_view)(sqlite3_stmt *, const void *);
json_t		*db_rows(sqlite3_stmt *, db_row_view, const void *);
/* Step a write: 0 done, -1 failed; st reset and unbound either way. */
int		 sq_step(sqlite3_stmt *);	/* sqlite3_step, failures classed */
int		 sq_done(sqlite3_stmt *);
/* After one step rc (its row read): reset, unbind; 0 a row, 1 none, -1. */
int		 sq_row_end(sqlite3_stmt *, int);

/* store_sqlite_schema.c */
int		 sq_migrate(void);
int		 sq_schema_touch(void);	/* rewrite the version: a write */

/* store_sqlite_org.c */
int		 sq_counts(struct store_counts *);
int		 sq_org_members(int64_t, int, store_org_member_fn, void *);
int		 sq_org_secrets(int64_t, store_secret_row_fn, void *);
int		 sq_user_by_email(const char *, int64_t *, int *);
int		 sq_user_sole_owned(int64_t, store_org_fn, void *);
int		 sq_user_first_org(int64_t, int64_t *);
int		 sq_user_delete(int64_t);
int		 sq_member_of(int64_t, int64_t);

/* store_sqlite_policy.c */
int		 sq_deny_rules(int64_t, int64_t, store_deny_fn, void *);
int		 sq_deny_count(int64_t, int64_t *);
int		 sq_deny_insert(const struct store_deny *, int64_t *);
int		 sq_deny_get(int64_t, store_deny_fn, void *);
int		 sq_deny_delete(int64_t, int64_t);

/* Step st, fn per row until it returns non-zero: 0, or -1. */
int		 sq_each(sqlite3_stmt *, int (*)(sqlite3_stmt *, void *),
		    void *);
/* Up to max ids from the first column; *n how many: 0, or -1. */
int		 sq_ids(sqlite3_stmt *, int64_t *, size_t, size_t *);

/* store_sqlite_key.c */
int		 sq_keys(const char *, store_key_fn, void *);
int		 sq_key_insert(const struct store_key *);
int		 sq_key_set_current(const char *);
int		 sq_key_retire(const char *, const char *);
int		 sq_key_unlink(const char *);
int		 sq_key_host_set(const char *, const char *, const char *);
int		 sq_key_hosts(store_key_host_fn, void *);
int		 sq_sealed_keys(store_key_host_fn, void *);
int		 sq_mark_read(int64_t *);

/* store_sqlite_audit.c */
int		 sq_run_insert(const struct store_run *, int64_t *);
int		 sq_host_beat(int64_t, const char *, int64_t);
int		 sq_hosts_retire(int64_t, const char *, int64_t);
int		 sq_hosts_live(int64_t, int64_t *, size_t, size_t *);
int		 sq_run_end_insert(const struct store_run_end *);
int		 sq_call_insert(const struct store_call *, int64_t *);
int		 sq_runs_page(int64_t, char, int64_t, store_runs_fn, void *);
int		 sq_calls_page(int64_t, int64_t, store_calls_fn, void *);
int		 sq_calls_run_page(int64_t, int64_t, int64_t, store_calls_fn,
		    void *);

/* vault_org.c, vault_policy.c, vault_ctl.c */
/* store_sqlite_org.c, store_sqlite_member.c, store_sqlite_policy.c */
/* One row to row(): 0, 1 none, -1; the first column's value likewise. */
int		 sq_one(sqlite3_stmt *, int (*)(sqlite3_stmt *, void *),
		    void *);
/* A row function: the first column, text, to a store_each's fn.text. */
int		 sq_text_row(sqlite3_stmt *, void *);
int		 sq_value(sqlite3_stmt *, int64_t *);
/* Step an INSERT ... ON CONFLICT DO NOTHING: 0, STORE_CONFLICT, -1. */
int		 sq_insert(sqlite3_stmt *, int64_t *);
/* Step an UPDATE or DELETE: 0 a row changed, 1 none, -1. */
int		 sq_affected(sqlite3_stmt *);
int		 sq_user_insert(const char *, int, const char *, int64_t *);
int		 sq_users_each(store_user_fn, void *);
int		 sq_org_insert(const char *, const char *, const char *,
		    int64_t *);
int		 sq_org_remove(int64_t);
int		 sq_org_find(const char *, int64_t *, char *, size_t);
int		 sq_orgs_each(store_org_row_fn, void *);
int		 sq_org_tool_count(int64_t, const char *, int64_t *);
int		 sq_org_has_tool(int64_t, const char *);
int		 sq_membership_insert(const struct store_membership *,
		    const uint8_t [STORE_HASH_LEN], int64_t *);
int		 sq_membership_get(int64_t, int64_t, store_membership_fn,
		    void *);
int		 sq_memberships(int64_t, int, store_membership_fn, void *);
int		 sq_user_memberships(int64_t, store_membership_fn, void *);
int		 sq_membership_update(int64_t, int64_t,
		    const struct store_membership_set *);
int		 sq_membership_remove(int64_t, int64_t);
int		 sq_owner_count(int64_t, int64_t *);
int		 sq_user_org_ids(int64_t, const char *, int64_t *, size_t,
		    size_t *);
int		 sq_invite_insert(const struct store_invite *,
		    const uint8_t [STORE_HASH_LEN], int64_t *);
int		 sq_invites_each(int64_t, int64_t, store_invite_fn, void *);
int		 sq_invite_by_code(const uint8_t [STORE_HASH_LEN],
		    store_invite_fn, void *);
int		 sq_invites_of_email(const char *, int64_t, store_invite_fn,
		    void *);
int		 sq_invite_by_id(int64_t, store_invite_fn, void *);
int		 sq_invite_use(int64_t);
int		 sq_invite_delete(int64_t, int64_t);
int		 sq_grant_find(int64_t, int64_t, int64_t, const char *);
/* store_sqlite_health.c */
int		 sq_secret_mark(int64_t, int64_t, const char *,
		    const char *, const char *, store_text_fn, void *);
int		 sq_webhook_set(int64_t, int64_t, const char *);
int		 sq_webhook_find(int64_t, int64_t, store_text_fn, void *);
int		 sq_tool_secrets_mark(int64_t, int64_t, const char *,
		    const char *, const char *, store_text_fn, void *);
int		 sq_health(int64_t, const char *, int64_t,
		    store_secret_row_fn, void *);

/* vault_tool.c: store_sqlite_registry.c */
int		 sq_ref_get(enum store_object, int64_t, int64_t, const char *,
		    struct store_ref *);
int		 sq_secrets(const struct store_sel *, store_secret_item_fn,
		    void *);
int		 sq_secret_insert(const struct store_secret *, int64_t *);
int		 sq_secret_set_value(int64_t, int64_t, const void *, size_t);
int		 sq_secret_update(int64_t, int64_t, const char *,
		    const char *);
int		 sq_secret_users(int64_t, store_secret_user_fn, void *);
int		 sq_secret_delete(int64_t, int64_t);
int		 sq_tools(const struct store_sel *, store_tool_item_fn, void *);
int		 sq_tools_by_slug(const char *, store_tool_item_fn, void *);
int		 sq_tool_name_used(int64_t, const char *, int64_t);
int		 sq_tool_insert(const struct store_tool_item *, int64_t *);
int		 sq_tool_update(const struct store_tool_item *);
int		 sq_tool_secrets_set(int64_t, const int64_t *, size_t);
int		 sq_tool_delete(int64_t, int64_t);
int		 sq_bundles(const struct store_sel *, store_bundle_item_fn,
		    void *);
int		 sq_bundle_insert(const struct store_bundle_item *, int64_t *);
int		 sq_bundle_set_recipe(int64_t, int64_t, const char *);
int		 sq_bundle_outside_user(int64_t, char *, char *, size_t);
int		 sq_bundle_delete(int64_t, int64_t);

/* calls and daily caps (the relay) */
int		 sq_read_begin(void);
void		 sq_read_end(void);
int		 sq_call_end_insert(const struct store_call_end *);
int		 sq_call_cap_take(int64_t, int64_t, const char *, int64_t,
		    int64_t);
int		 sq_call_used(int64_t, int64_t, const char *, int64_t *);
int		 sq_call_cap_get(int64_t, int64_t, int *, int64_t *);
int		 sq_call_cap_set(int64_t, int64_t, int, int64_t);
int		 sq_tools_by_host(int64_t, const char *, store_tool_url_fn,
		    void *);
int		 sq_registry_version(int64_t *);

/* batched run ends */
int		 sq_run_ends_insert(const struct store_run_end *, size_t);
int		 sq_runs_tools(int64_t, const char *const *, size_t, char,
		    int64_t, int, store_runs_fn, void *);

/* treg compatibility */

/* store_sqlite_identity.c */
int		 sq_identity_insert(int64_t, const uint8_t [STORE_HASH_LEN],
		    const char *);
int		 sq_identity_by_token(const uint8_t [STORE_HASH_LEN],
		    int64_t *, char *, size_t, int *);
int		 sq_identity_member_hash(const uint8_t [STORE_HASH_LEN],
		    const char *, uint8_t [STORE_HASH_LEN]);
int		 sq_identity_count(int64_t, int64_t *);
int		 sq_identity_trim(int64_t, int64_t);
int		 sq_identity_revoke(int64_t);
int		 sq_identity_tokens(int64_t, store_access_fn, void *);
int		 sq_access_row(sqlite3_stmt *, void *);
int		 sq_email_code_get(const char *, struct store_email_code *);
int		 sq_email_code_put(const char *,
		    const struct store_email_code *);

/* store_sqlite_project.c: projects and usage */
int		 sq_project_insert(const struct store_project *, int64_t *);
int		 sq_projects(int64_t, store_project_fn, void *);
int		 sq_project_delete(int64_t, int64_t, int64_t *);
int		 sq_tool_project_set(int64_t, int64_t, int64_t);
int		 sq_member_projects(int64_t, store_access_fn, void *);
int		 sq_member_projects_set(int64_t, int64_t, const char *);
int		 sq_invite_projects(int64_t, char **);
int		 sq_invite_projects_set(int64_t, const char *);
int		 sq_usage(int64_t, const char *, store_usage_fn, void *);
int		 sq_observed(int64_t, const char *, const char *, int64_t,
		    store_observed_fn, void *);

#endif /* STORE_SQLITE_H */
