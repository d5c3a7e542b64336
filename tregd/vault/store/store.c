/*
 * The storage interface of store.h, dispatched to the engine chosen when
 * the database is opened.  Nothing here knows an engine's types.
 */

#include <stdlib.h>
#include <string.h>

#include "store.h"

static const struct store_ops	*ops;

int
store_open(const struct store_params *p, char *err, size_t len)
{
	switch (p->engine) {
	case STORE_SQLITE:
		ops = &store_sqlite_ops;
		break;
	case STORE_POSTGRESQL:
		ops = &store_pg_ops;
		break;
	default:
		strlcpy(err, "this tregd has no such database engine", len);
		return (-1);
	}
	return (ops->open(p, err, len));
}

void
store_close(void)
{
	if (ops != NULL)
		ops->close();
}

int
store_check(char *buf, size_t len)
{
	return (ops->check(buf, len));
}

int
store_reach(struct store_reach *r)
{
	memset(r, 0, sizeof(*r));
	return (ops->reach != NULL ? ops->reach(r) : 0);
}

void
store_reach_dir(const char *dir)
{
	if (ops->reach_dir != NULL)
		ops->reach_dir(dir);
}

int
store_backup(const char *path)
{
	return (ops->backup(path));
}

int64_t
store_version(void)
{
	return (ops->version());
}

const char *
store_error(void)
{
	return (ops != NULL ? ops->error() : "no database");
}

int
store_begin(void)
{
	return (ops->begin());
}

int
store_commit(void)
{
	return (ops->commit());
}

void
store_rollback(void)
{
	ops->rollback();
}

int
store_unavailable(void)
{
	return (ops != NULL && ops->unavailable());
}

int
store_member_by_token(const uint8_t hash[STORE_HASH_LEN],
    struct store_member *m)
{
	memset(m, 0, sizeof(*m));
	return (ops->member_by_token(hash, m));
}

void
store_member_clear(struct store_member *m)
{
	free(m->tool_access);
	free(m->project_access);
	memset(m, 0, sizeof(*m));
}

int
store_secret_get(int64_t org, int64_t id, struct store_secret *s)
{
	memset(s, 0, sizeof(*s));
	return (ops->secret_get(org, id, s));
}

void
store_secret_clear(struct store_secret *s)
{
	free(s->sealed);
	memset(s, 0, sizeof(*s));
}

int
store_secret_set_sealed(int64_t id, const void *sealed, size_t len)
{
	return (ops->secret_set_sealed(id, sealed, len));
}

int
store_secrets_each_sealed(store_sealed_fn fn, void *arg)
{
	return (ops->secrets_each_sealed(fn, arg));
}

int
store_tool_by_name(int64_t org, const char *name, struct store_tool *t)
{
	memset(t, 0, sizeof(*t));
	return (ops->tool_by_name(org, name, t));
}

void
store_tool_clear(struct store_tool *t)
{
	free(t->base_url);
	free(t->host);
	free(t->bindings);
	free(t->cli);
	memset(t, 0, sizeof(*t));
}

int
store_tool_secret_ids(int64_t tool, int64_t *ids, size_t max, size_t *n)
{
	*n = 0;
	return (ops->tool_secret_ids(tool, ids, max, n));
}

int
store_host_beat(int64_t instance, const char *name, int64_t seen)
{
	return (ops->host_beat(instance, name, seen));
}

int
store_hosts_retire(int64_t instance, const char *name, int64_t before)
{
	return (ops->hosts_retire(instance, name, before));
}

int
store_hosts_live(int64_t since, int64_t *ids, size_t max, size_t *n)
{
	return (ops->hosts_live(since, ids, max, n));
}

int
store_run_insert(const struct store_run *r, int64_t *id)
{
	return (ops->run_insert(r, id));
}

int
store_run_end_insert(const struct store_run_end *e)
{
	return (ops->run_end_insert(e));
}

int
store_call_insert(const struct store_call *c, int64_t *id)
{
	return (ops->call_insert(c, id));
}

int
store_runs_page(int64_t org, char before_src, int64_t before_id,
    store_runs_fn fn, void *arg)
{
	return (ops->runs_page(org, before_src, before_id, fn, arg));
}

int
store_calls_run_page(int64_t org, int64_t run_id, int64_t before_id,
    store_calls_fn fn, void *arg)
{
	return (ops->calls_run_page(org, run_id, before_id, fn, arg));
}

int
store_calls_page(int64_t org, int64_t before_id, store_calls_fn fn,
    void *arg)
{
	return (ops->calls_page(org, before_id, fn, arg));
}

int
store_org_by_slug(const char *slug, int64_t *id)
{
	return (ops->org_by_slug(slug, id));
}

int
store_org_secrets_sealed(int64_t org, store_sealed_fn fn, void *arg)
{
	return (ops->org_secrets_sealed(org, fn, arg));
}

int
store_sealed_count(const void *prefix, size_t len, int64_t *n)
{
	return (ops->sealed_count(prefix, len, n));
}

int
store_counts(struct store_counts *c)
{
	memset(c, 0, sizeof(*c));
	return (ops->counts(c));
}

int
store_org_members(int64_t org, int agents, store_org_member_fn fn,
    void *arg)
{
	return (ops->org_members(org, agents, fn, arg));
}

int
store_org_secrets(int64_t org, store_secret_row_fn fn, void *arg)
{
	return (ops->org_secrets(org, fn, arg));
}

int
store_user_by_email(const char *email, int64_t *id, int *is_agent)
{
	return (ops->user_by_email(email, id, is_agent));
}

int
store_user_sole_owned(int64_t uid, store_org_fn fn, void *arg)
{
	return (ops->user_sole_owned(uid, fn, arg));
}

int
store_user_first_org(int64_t uid, int64_t *org)
{
	return (ops->user_first_org(uid, org));
}

int
store_user_delete(int64_t uid)
{
	return (ops->user_delete(uid));
}

int
store_member_of(int64_t user, int64_t org)
{
	return (ops->member_of(user, org));
}

int
store_deny_rules(int64_t org, int64_t user, store_deny_fn fn, void *arg)
{
	return (ops->deny_rules(org, user, fn, arg));
}

int
store_deny_count(int64_t org, int64_t *n)
{
	*n = 0;
	return (ops->deny_count(org, n));
}

int
store_deny_insert(const struct store_deny *d, int64_t *id)
{
	return (ops->deny_insert(d, id));
}

int
store_deny_get(int64_t id, store_deny_fn fn, void *arg)
{
	return (ops->deny_get(id, fn, arg));
}

int
store_deny_delete(int64_t org, int64_t id)
{
	return (ops->deny_delete(org, id));
}

/* vault_org.c, vault_policy.c, vault_ctl.c */

int
store_user_insert(const char *email, int is_agent, const char *at,
    int64_t *id)
{
	return (ops->user_insert(email, is_agent, at, id));
}

int
store_users_each(store_user_fn fn, void *arg)
{
	return (ops->users_each(fn, arg));
}

int
store_org_insert(const char *slug, const char *name, const char *at,
    int64_t *id)
{
	return (ops->org_insert(slug, name, at, id));
}

int
store_org_remove(int64_t org)
{
	return (ops->org_remove(org));
}

int
store_org_find(const char *what, int64_t *id, char *slug, size_t len)
{
	return (ops->org_find(what, id, slug, len));
}

int
store_orgs_each(store_org_row_fn fn, void *arg)
{
	return (ops->orgs_each(fn, arg));
}

int
store_org_tool_count(int64_t org, const char *access, int64_t *n)
{
	*n = 0;
	return (ops->org_tool_count(org, access, n));
}

int
store_org_has_tool(int64_t org, const char *name)
{
	return (ops->org_has_tool(org, name));
}

int
store_membership_insert(const struct store_membership *m,
    const uint8_t hash[STORE_HASH_LEN], int64_t *id)
{
	return (ops->membership_insert(m, hash, id));
}

int
store_membership_get(int64_t user, int64_t org, store_membership_fn fn,
    void *arg)
{
	return (ops->membership_get(user, org, fn, arg));
}

int
store_memberships(int64_t org, int agents, store_membership_fn fn,
    void *arg)
{
	return (ops->memberships(org, agents, fn, arg));
}

int
store_user_memberships(int64_t user, store_membership_fn fn, void *arg)
{
	return (ops->user_memberships(user, fn, arg));
}

int
store_membership_update(int64_t user, int64_t org,
    const struct store_membership_set *set)
{
	return (ops->membership_update(user, org, set));
}

int
store_membership_remove(int64_t user, int64_t org)
{
	return (ops->membership_remove(user, org));
}

int
store_owner_count(int64_t org, int64_t *n)
{
	*n = 0;
	return (ops->owner_count(org, n));
}

int
store_user_org_ids(int64_t user, const char *org, int64_t *ids, size_t max,
    size_t *n)
{
	*n = 0;
	return (ops->user_org_ids(user, org, ids, max, n));
}

int
store_invite_insert(const struct store_invite *iv,
    const uint8_t hash[STORE_HASH_LEN], int64_t *id)
{
	return (ops->invite_insert(iv, hash, id));
}

int
store_invites_each(int64_t org, int64_t now, store_invite_fn fn, void *arg)
{
	return (ops->invites_each(org, now, fn, arg));
}

int
store_invite_by_code(const uint8_t hash[STORE_HASH_LEN], store_invite_fn fn,
    void *arg)
{
	return (ops->invite_by_code(hash, fn, arg));
}

int
store_invite_use(int64_t id)
{
	return (ops->invite_use(id));
}

int
store_invite_delete(int64_t org, int64_t id)
{
	return (ops->invite_delete(org, id));
}

int
store_grant_find(int64_t org, int64_t user, int64_t grant, const char *tool)
{
	return (ops->grant_find(org, user, grant, tool));
}

int
store_tool_secrets_mark(int64_t org, int64_t tool, const char *status,
    const char *detail, const char *at, store_text_fn fn, void *arg)
{
	return (ops->tool_secrets_mark(org, tool, status, detail, at, fn,
	    arg));
}

int
store_secret_mark(int64_t org, int64_t id, const char *status,
    const char *detail, const char *at, store_text_fn fn, void *arg)
{
	return (ops->secret_mark(org, id, status, detail, at, fn, arg));
}

int
store_webhook_set(int64_t org, int64_t user, const char *url)
{
	return (ops->webhook_set(org, user, url));
}

int
store_webhook_find(int64_t org, int64_t user, store_text_fn fn, void *arg)
{
	return (ops->webhook_find(org, user, fn, arg));
}

int
store_health(int64_t org, const char *access, int64_t user,
    store_secret_row_fn fn, void *arg)
{
	return (ops->health(org, access, user, fn, arg));
}

/* vault_tool.c */

int
store_ref_get(enum store_object what, int64_t org, int64_t id,
    const char *name, struct store_ref *ref)
{
	memset(ref, 0, sizeof(*ref));
	return (ops->ref_get(what, org, id, name, ref));
}

int
store_secrets(const struct store_sel *sel, store_secret_item_fn fn,
    void *arg)
{
	return (ops->secrets(sel, fn, arg));
}

int
store_secret_insert(const struct store_secret *s, int64_t *id)
{
	return (ops->secret_insert(s, id));
}

int
store_secret_set_value(int64_t org, int64_t id, const void *sealed,
    size_t len)
{
	return (ops->secret_set_value(org, id, sealed, len));
}

int
store_secret_update(int64_t org, int64_t id, const char *name,
    const char *kind)
{
	return (ops->secret_update(org, id, name, kind));
}

int
store_secret_users(int64_t id, store_secret_user_fn fn, void *arg)
{
	return (ops->secret_users(id, fn, arg));
}

int
store_secret_delete(int64_t org, int64_t id)
{
	return (ops->secret_delete(org, id));
}

int
store_tools(const struct store_sel *sel, store_tool_item_fn fn, void *arg)
{
	return (ops->tools(sel, fn, arg));
}

int
store_tools_by_slug(const char *slug, store_tool_item_fn fn, void *arg)
{
	return (ops->tools_by_slug(slug, fn, arg));
}

int
store_tool_name_used(int64_t org, const char *name, int64_t except)
{
	return (ops->tool_name_used(org, name, except));
}

int
store_tool_insert(const struct store_tool_item *t, int64_t *id)
{
	return (ops->tool_insert(t, id));
}

int
store_tool_update(const struct store_tool_item *t)
{
	return (ops->tool_update(t));
}

int
store_tool_secrets_set(int64_t tool, const int64_t *ids, size_t n)
{
	return (ops->tool_secrets_set(tool, ids, n));
}

int
store_tool_delete(int64_t org, int64_t id)
{
	return (ops->tool_delete(org, id));
}

int
store_bundles(const struct store_sel *sel, store_bundle_item_fn fn,
    void *arg)
{
	return (ops->bundles(sel, fn, arg));
}

int
store_bundle_insert(const struct store_bundle_item *b, int64_t *id)
{
	return (ops->bundle_insert(b, id));
}

int
store_bundle_set_recipe(int64_t org, int64_t id, const char *recipe)
{
	return (ops->bundle_set_recipe(org, id, recipe));
}

int
store_bundle_outside_user(int64_t id, char *tool, char *secret, size_t len)
{
	return (ops->bundle_outside_user(id, tool, secret, len));
}

int
store_bundle_delete(int64_t org, int64_t id)
{
	return (ops->bundle_delete(org, id));
}

/* calls and daily caps (the relay) */

int
store_read_begin(void)
{
	return (ops->read_begin());
}

void
store_read_end(void)
{
	ops->read_end();
}

int
store_call_end_insert(const struct store_call_end *e)
{
	return (ops->call_end_insert(e));
}

int
store_call_cap_take(int64_t org, int64_t user, const char *day, int64_t n,
    int64_t cap)
{
	/* A first row of n would be past it. */
	if (n < 1 || n > cap)
		return (1);
	return (ops->call_cap_take(org, user, day, n, cap));
}

int
store_call_used(int64_t org, int64_t user, const char *day, int64_t *used)
{
	*used = 0;
	return (ops->call_used(org, user, day, used));
}

int
store_call_cap_get(int64_t org, int64_t user, int *has, int64_t *cap)
{
	*has = 0;
	*cap = 0;
	return (ops->call_cap_get(org, user, has, cap));
}

int
store_call_cap_set(int64_t org, int64_t user, int has, int64_t cap)
{
	return (ops->call_cap_set(org, user, has, cap));
}

int
store_tools_by_host(int64_t org, const char *host, store_tool_url_fn fn,
    void *arg)
{
	return (ops->tools_by_host(org, host, fn, arg));
}

int
store_registry_version(int64_t *v)
{
	*v = -1;
	return (ops->registry_version(v));
}

/* batched run ends */

int
store_run_ends_insert(const struct store_run_end *e, size_t n)
{
	return (ops->run_ends_insert(e, n));
}

/* The rows of the walks of store_runs_page_tools(), copied. */
struct runs_merge {
	struct store_runs_row	*v;
	size_t			 n, cap;
	int			 failed;
};

static int	runs_merge_add(const struct store_runs_row *, void *);
static int	runs_merge_cmp(const void *, const void *);
static void	runs_merge_free(struct runs_merge *);

int
store_runs_page_tools(int64_t org, const char *const *tools, size_t ntools,
    char before_src, int64_t before_id, int limit, store_runs_fn fn,
    void *arg)
{
	struct runs_merge	 m;
	const char		**uniq;
	size_t			 i, j, n = 0;
	int			 rc;

	if (tools == NULL)
		return (ops->runs_page(org, before_src, before_id, fn, arg));
	/* A name listed twice is walked once. */
	if ((uniq = calloc(ntools + 1, sizeof(*uniq))) == NULL)
		return (-1);
	for (i = 0; i < ntools; i++) {
		for (j = 0; j < n && strcmp(uniq[j], tools[i]) != 0; j++)
			;
		if (j == n)
			uniq[n++] = tools[i];
	}
	memset(&m, 0, sizeof(m));
	rc = ops->runs_tools(org, uniq, n, before_src, before_id, limit,
	    runs_merge_add, &m);
	free(uniq);
	if (rc == 0 && m.failed)
		rc = -1;
	if (rc == 0 && m.n > 0) {
		/* Each walk is newest first; so is the page. */
		qsort(m.v, m.n, sizeof(*m.v), runs_merge_cmp);
		for (i = 0; i < m.n && i < (size_t)limit && rc == 0; i++)
			rc = fn(&m.v[i], arg);
		rc = rc < 0 ? -1 : 0;
	}
	runs_merge_free(&m);
	return (rc);
}

static int
runs_merge_add(const struct store_runs_row *r, void *arg)
{
	struct runs_merge	*m = arg;
	struct store_runs_row	*c, *v;
	size_t			 cap;

	if (m->n == m->cap) {
		cap = m->cap == 0 ? 64 : m->cap * 2;
		if ((v = reallocarray(m->v, cap, sizeof(*v))) == NULL) {
			m->failed = 1;
			return (-1);
		}
		m->v = v;
		m->cap = cap;
	}
	c = &m->v[m->n];
	*c = *r;
	c->user_email = strdup(r->user_email);
	c->tool = strdup(r->tool);
	c->argv = strdup(r->argv);
	c->outcome = strdup(r->outcome);
	c->created_at = strdup(r->created_at);
	c->org_slug = strdup(r->org_slug);
	c->client = r->client != NULL ? strdup(r->client) : NULL;
	m->n++;
	if (c->user_email == NULL || c->tool == NULL || c->argv == NULL ||
	    c->outcome == NULL || c->created_at == NULL ||
	    c->org_slug == NULL || (r->client != NULL && c->client == NULL)) {
		m->failed = 1;
		return (-1);
	}
	return (0);
}

/* store_runs_page()'s order: created_at, then 's' before 'l', then id. */
static int
runs_merge_cmp(const void *pa, const void *pb)
{
	const struct store_runs_row	*a = pa, *b = pb;
	int				 c;

	if ((c = strcmp(b->created_at, a->created_at)) != 0)
		return (c);
	if (a->src != b->src)
		return (b->src - a->src);
	return (a->id < b->id ? 1 : a->id > b->id ? -1 : 0);
}

static void
runs_merge_free(struct runs_merge *m)
{
	size_t	 i;

	for (i = 0; i < m->n; i++) {
		free((char *)m->v[i].user_email);
		free((char *)m->v[i].tool);
		free((char *)m->v[i].argv);
		free((char *)m->v[i].outcome);
		free((char *)m->v[i].created_at);
		free((char *)m->v[i].org_slug);
		free((char *)m->v[i].client);
	}
	free(m->v);
}

/* treg compatibility */

/* the keyring in the database (storage helper) */

int
store_keys(const char *id, store_key_fn fn, void *arg)
{
	return (ops->keys(id, fn, arg));
}

int
store_key_insert(const struct store_key *k)
{
	return (ops->key_insert(k));
}

int
store_key_set_current(const char *id)
{
	return (ops->key_set_current(id));
}

int
store_key_retire(const char *id, const char *at)
{
	return (ops->key_retire(id, at));
}

int
store_key_unlink(const char *id)
{
	return (ops->key_unlink(id));
}

int
store_key_host_set(const char *host, const char *id, const char *at)
{
	return (ops->key_host_set(host, id, at));
}

int
store_key_hosts(store_key_host_fn fn, void *arg)
{
	return (ops->key_hosts(fn, arg));
}

int
store_sealed_keys(store_key_host_fn fn, void *arg)
{
	return (ops->sealed_keys(fn, arg));
}

int
store_identity_insert(int64_t user, const uint8_t hash[STORE_HASH_LEN],
    const char *at)
{
	return (ops->identity_insert(user, hash, at));
}

int
store_identity_by_token(const uint8_t hash[STORE_HASH_LEN], int64_t *user,
    char *email, size_t len, int *is_agent)
{
	return (ops->identity_by_token(hash, user, email, len, is_agent));
}

int
store_identity_member_hash(const uint8_t hash[STORE_HASH_LEN],
    const char *org, uint8_t out[STORE_HASH_LEN])
{
	return (ops->identity_member_hash(hash, org, out));
}

int
store_identity_count(int64_t user, int64_t *n)
{
	return (ops->identity_count(user, n));
}

int
store_identity_trim(int64_t user, int64_t keep)
{
	return (ops->identity_trim(user, keep));
}

int
store_identity_revoke(int64_t user)
{
	return (ops->identity_revoke(user));
}

int
store_identity_tokens(int64_t user, store_access_fn fn, void *arg)
{
	return (ops->identity_tokens(user, fn, arg));
}

int
store_email_code_get(const char *email, struct store_email_code *c)
{
	memset(c, 0, sizeof(*c));
	return (ops->email_code_get(email, c));
}

int
store_email_code_put(const char *email, const struct store_email_code *c)
{
	return (ops->email_code_put(email, c));
}

int
store_invites_of_email(const char *email, int64_t now, store_invite_fn fn,
    void *arg)
{
	return (ops->invites_of_email(email, now, fn, arg));
}

int
store_invite_by_id(int64_t id, store_invite_fn fn, void *arg)
{
	return (ops->invite_by_id(id, fn, arg));
}

/* projects and usage (vault_project.c) */

int
store_project_insert(const struct store_project *p, int64_t *id)
{
	return (ops->project_insert(p, id));
}

int
store_projects(int64_t org, store_project_fn fn, void *arg)
{
	return (ops->projects(org, fn, arg));
}

int
store_project_delete(int64_t org, int64_t id, int64_t *freed)
{
	*freed = 0;
	return (ops->project_delete(org, id, freed));
}

int
store_tool_project_set(int64_t org, int64_t tool, int64_t project)
{
	return (ops->tool_project_set(org, tool, project));
}

int
store_member_projects(int64_t org, store_access_fn fn, void *arg)
{
	return (ops->member_projects(org, fn, arg));
}

int
store_member_projects_set(int64_t org, int64_t user, const char *json)
{
	return (ops->member_projects_set(org, user, json));
}

int
store_invite_projects(int64_t id, char **json)
{
	*json = NULL;
	return (ops->invite_projects(id, json));
}

int
store_invite_projects_set(int64_t id, const char *json)
{
	return (ops->invite_projects_set(id, json));
}

int
store_usage(int64_t org, const char *since, store_usage_fn fn, void *arg)
{
	return (ops->usage(org, since, fn, arg));
}

/* the observed agents (vault_observed.c) */

int
store_observed(int64_t org, const char *since, const char *today,
    int64_t max, store_observed_fn fn, void *arg)
{
	return (ops->observed(org, since, today, max, fn, arg));
}
