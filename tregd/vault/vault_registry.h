/*
 * Inside the registry only (vault_registry.c, vault_tool.c,
 * vault_secret.c, vault_skill.c): the checks and views its files share
 * and the handlers vault_tool.c's route table names.
 */

#ifndef VAULT_REGISTRY_H
#define VAULT_REGISTRY_H

#include "vault.h"

#define PHRASE_TOO_SHORT	"too short to be masked reliably"

/* vault_registry.c */
/* Members edit what they created; admins and owners edit everything. */
int		 reg_can_edit(const struct auth *, int64_t);
/*
 * Object id (name NULL) or name of the caller's org into *ref: 0, or -1
 * with resp set to "<what> not found" or a database failure; with verb,
 * also "you can only <verb> <what>s you created" for another's object.
 */
int		 reg_ref(struct vault_req *, struct vault_resp *,
		    enum store_object, int64_t, const char *, const char *,
		    struct store_ref *);
/* The view of secret or tool id of org; NULL if none or on failure. */
json_t		*reg_view(enum store_object, int64_t, int64_t);
json_t		*reg_secret_json(const struct store_secret_item *);
json_t		*reg_tool_json(const struct store_tool_item *);
struct evbuffer;
void		 reg_tool_text(struct evbuffer *,
		    const struct store_tool_item *);
json_t		*reg_json_text(const char *);	/* stored JSON, or null */
char		*reg_dumps(json_t *);
/* A string member of a nested object; ctx prefixes errors ("tools[1]"). */
int		 reg_spec_str(struct vault_resp *, json_t *, const char *,
		    const char *, int, size_t, const char **);

/* vault_tool.c */
/*
 * Check and insert one tool from spec, in the caller's transaction
 * (rolled back on any refusal); locals maps a skill's local secret
 * names to ids (NULL outside skills).
 */
int		 tool_create(struct vault_req *, struct vault_resp *, json_t *,
		    const char *, int64_t, json_t *, int64_t *);
/* A via: argv inject entry in tool: the warning, set on view. */
void		 tool_argv_warning(json_t *, json_t *);

/* vault_secret.c */
int		 secret_kind_valid(const char *);
/* The plaintext of value member v of a secret of kind, or -1 resp set. */
int		 secret_value(struct vault_resp *, json_t *, const char *,
		    const char *, char **, size_t *);
void		 secret_value_free(char *, size_t);
/* Whether a gated caller sees secret id (owned by owner): 1 or 0. */
int		 secret_visible(const struct auth *, int64_t, int64_t);
/* Insert a secret and seal its value into it, in a transaction. */
int		 secret_insert(struct vault_resp *, int64_t, int64_t,
		    const char *, const char *, const char *, size_t, int64_t,
		    int64_t *);
void		 secrets_create(struct vault_req *, struct vault_resp *);
void		 secrets_list(struct vault_req *, struct vault_resp *);
void		 secret_patch(struct vault_req *, struct vault_resp *);
void		 secret_delete(struct vault_req *, struct vault_resp *);

/* vault_skill.c */
void		 skills_create(struct vault_req *, struct vault_resp *);
void		 bundles_list(struct vault_req *, struct vault_resp *);
void		 bundle_get(struct vault_req *, struct vault_resp *);
void		 bundle_by_name(struct vault_req *, struct vault_resp *);
void		 bundle_patch(struct vault_req *, struct vault_resp *);
void		 bundle_delete(struct vault_req *, struct vault_resp *);

#endif /* VAULT_REGISTRY_H */
