/*
 * vault_call_cache.c: what a call's decision reads, kept per registry
 * version (store_registry_version()).
 *
 * The registry version moves inside every transaction that changes a
 * user, org, membership (its token, role, access list, cap), invite,
 * bundle, secret, tool, tool secret or deny rule, on every host, and
 * never with the audit, the runs or the daily counts.  Each call reads it
 * first in its read transaction (ccache_begin()); when it is not the one
 * the cache was filled at, everything kept is dropped before anything is
 * read.  So an entry only ever serves calls that see the very data it was
 * read from: a revoked token, a removed member, a narrowed access list, a
 * new deny rule or a changed tool take effect on the next call, in every
 * vault worker and on every host.  On PostgreSQL (a snapshot per
 * statement) the version is read before the data, so what is kept is at
 * least as new as the version it is kept under.
 *
 * Kept: a membership by token hash (its auth and daily_call_cap), a tool
 * by name with its bindings (vault_call.c), the deny rules of a caller,
 * a secret's sealed row (a re-seal by tregctl key rotate moves the
 * version too).  Never an unsealed value: each call unseals its own and
 * zeroes it; the daily counts are never kept.
 */

#include <sys/types.h>

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "vault.h"

#define CC_AUTH_MAX	64	/* memberships */
#define CC_DENY_MAX	32	/* callers' rule lists */
#define CC_RULES_MAX	64	/* rules of one caller kept; more: read */
#define CC_SECRET_MAX	32	/* sealed rows */

struct cc_auth {
	uint8_t		 hash[TOKEN_HASH_LEN];
	struct auth	 a;
	int		 has_cap;
	int64_t		 cap;
	int		 cap_read;
	int		 set;
};

struct cc_rule {
	struct store_deny	 d;	/* its texts point into the strings */
	char			*host, *path, *method, *note;
};

struct cc_deny {
	int64_t		 org, user;
	struct cc_rule	 r[CC_RULES_MAX];
	size_t		 n;
	int		 set;
};

/* Reading the rules of a caller into an entry. */
struct cc_fill {
	struct cc_deny	*e;
	int		 over;
};

static int64_t		 cver = -1;	/* the version the entries are of */
static int64_t		 cur = -1;	/* this call's, -1: none (no cache) */
static struct cc_auth	 auths[CC_AUTH_MAX];
static unsigned int	 auths_next;
static struct cc_deny	 denies[CC_DENY_MAX];
static unsigned int	 denies_next;
static struct store_secret secrets[CC_SECRET_MAX];	/* id 0: free */
static unsigned int	 secrets_next;

static void	 cc_flush(void);
static void	 cc_auth_drop(struct cc_auth *);
static void	 cc_deny_drop(struct cc_deny *);
static struct cc_auth *cc_auth_find(int64_t, int64_t);
static int	 cc_fill_rule(const struct store_deny *, void *);
static char	*cc_strdup(const char *);
static void	 cc_secret_drop(struct store_secret *);
static void	 cc_secret_copy(struct store_secret *,
		    const struct store_secret *);

/*
 * First in a call's read transaction: 0, or -1 when the version cannot
 * be read (the call then reads everything from the database, and keeps
 * nothing).
 */
int
ccache_begin(void)
{
	int64_t	 v;

	if (store_registry_version(&v) == -1 || v < 0) {
		cur = -1;
		cc_flush();
		return (-1);
	}
	if (v != cver) {
		cc_flush();
		cver = v;
	}
	cur = v;
	return (0);
}

/* The version this call's entries are of, -1 when nothing is kept. */
int64_t
ccache_version(void)
{
	return (cur);
}

/* The call is decided: nothing is served until the next ccache_begin(). */
void
ccache_end(void)
{
	cur = -1;
}

static void
cc_flush(void)
{
	size_t	 i;

	for (i = 0; i < CC_AUTH_MAX; i++)
		cc_auth_drop(&auths[i]);
	for (i = 0; i < CC_DENY_MAX; i++)
		cc_deny_drop(&denies[i]);
	for (i = 0; i < CC_SECRET_MAX; i++)
		cc_secret_drop(&secrets[i]);
	cver = -1;
}

static void
cc_auth_drop(struct cc_auth *e)
{
	if (e->set)
		auth_clear(&e->a);
	explicit_bzero(e, sizeof(*e));
}

static void
cc_deny_drop(struct cc_deny *e)
{
	size_t	 i;

	for (i = 0; i < e->n; i++) {
		free(e->r[i].host);
		free(e->r[i].path);
		free(e->r[i].method);
		free(e->r[i].note);
	}
	memset(e, 0, sizeof(*e));
}

/* auth_lookup() through the cache: 0, 1 no such token, -1. */
int
ccache_auth(const uint8_t hash[TOKEN_HASH_LEN], struct auth *a)
{
	struct cc_auth	*e;
	size_t		 i;
	int		 rc;

	for (i = 0; cur != -1 && i < CC_AUTH_MAX; i++) {
		e = &auths[i];
		if (e->set && sodium_memcmp(e->hash, hash,
		    TOKEN_HASH_LEN) == 0) {
			*a = e->a;
			json_incref(a->tool_access);
			return (0);
		}
	}
	if ((rc = auth_lookup(hash, a)) != 0 || cur == -1)
		return (rc);
	e = &auths[auths_next++ % CC_AUTH_MAX];
	cc_auth_drop(e);
	memcpy(e->hash, hash, TOKEN_HASH_LEN);
	e->a = *a;
	json_incref(e->a.tool_access);
	e->set = 1;
	return (0);
}

static struct cc_auth *
cc_auth_find(int64_t org, int64_t user)
{
	size_t	 i;

	for (i = 0; cur != -1 && i < CC_AUTH_MAX; i++)
		if (auths[i].set && auths[i].a.org_id == org &&
		    auths[i].a.user_id == user)
			return (&auths[i]);
	return (NULL);
}

/* store_call_cap_get() of a caller ccache_auth() returned. */
int
ccache_cap_get(int64_t org, int64_t user, int *has, int64_t *cap)
{
	struct cc_auth	*e;
	int		 rc;

	if ((e = cc_auth_find(org, user)) != NULL && e->cap_read) {
		*has = e->has_cap;
		*cap = e->cap;
		return (0);
	}
	if ((rc = store_call_cap_get(org, user, has, cap)) != 0 || e == NULL)
		return (rc);
	e->has_cap = *has;
	e->cap = *cap;
	e->cap_read = 1;
	return (0);
}

static char *
cc_strdup(const char *s)
{
	char	*p;

	if (s == NULL)
		return (NULL);
	if ((p = strdup(s)) == NULL)
		fatal("%s: strdup", __func__);
	return (p);
}

static int
cc_fill_rule(const struct store_deny *d, void *arg)
{
	struct cc_fill	*f = arg;
	struct cc_rule	*r;

	if (f->e->n == CC_RULES_MAX) {
		f->over = 1;
		return (1);
	}
	r = &f->e->r[f->e->n++];
	r->d = *d;
	r->d.host = r->host = cc_strdup(d->host);
	r->d.path_prefix = r->path = cc_strdup(d->path_prefix);
	r->d.method = r->method = cc_strdup(d->method);
	r->d.note = r->note = cc_strdup(d->note);
	r->d.created_at = NULL;
	r->d.created_by_email = NULL;
	return (0);
}

/*
 * store_deny_rules() through the cache, for deny_check_by(): the rules
 * of org that bind user, in the order the store gives them.
 */
int
ccache_deny_rules(int64_t org, int64_t user, store_deny_fn fn, void *arg)
{
	struct cc_deny	*e = NULL;
	struct cc_fill	 f;
	size_t		 i;
	int		 rc;

	for (i = 0; cur != -1 && i < CC_DENY_MAX; i++)
		if (denies[i].set && denies[i].org == org &&
		    denies[i].user == user) {
			e = &denies[i];
			break;
		}
	if (e == NULL && cur != -1) {
		e = &denies[denies_next++ % CC_DENY_MAX];
		cc_deny_drop(e);
		memset(&f, 0, sizeof(f));
		f.e = e;
		if (store_deny_rules(org, user, cc_fill_rule, &f) == -1) {
			cc_deny_drop(e);
			return (-1);
		}
		if (f.over) {
			cc_deny_drop(e);
			return (store_deny_rules(org, user, fn, arg));
		}
		e->org = org;
		e->user = user;
		e->set = 1;
	}
	if (e == NULL)
		return (store_deny_rules(org, user, fn, arg));
	for (i = 0; i < e->n; i++)
		if ((rc = fn(&e->r[i].d, arg)) != 0)
			return (rc < 0 ? -1 : 0);
	return (0);
}

static void
cc_secret_drop(struct store_secret *s)
{
	if (s->sealed != NULL)
		freezero(s->sealed, s->sealedlen);
	explicit_bzero(s, sizeof(*s));
}

/* A row with its own copy of the sealed bytes. */
static void
cc_secret_copy(struct store_secret *to, const struct store_secret *from)
{
	*to = *from;
	if ((to->sealed = malloc(from->sealedlen > 0 ?
	    from->sealedlen : 1)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(to->sealed, from->sealed, from->sealedlen);
}

/*
 * store_secret_get() through the cache, for isecret_open_by(): the row
 * is the caller's to store_secret_clear().  Only the sealed value is
 * kept; a secret that is not there is read again each time.
 */
int
ccache_secret_get(int64_t org, int64_t id, struct store_secret *s)
{
	struct store_secret	*e;
	size_t			 i;
	int			 rc;

	for (i = 0; cur != -1 && i < CC_SECRET_MAX; i++) {
		e = &secrets[i];
		if (e->id != 0 && e->id == id && e->org_id == org) {
			cc_secret_copy(s, e);
			return (0);
		}
	}
	if ((rc = store_secret_get(org, id, s)) != 0 || cur == -1)
		return (rc);
	/* The row names its org: only what was asked for is kept. */
	if (s->id != id || s->org_id != org)
		return (0);
	e = &secrets[secrets_next++ % CC_SECRET_MAX];
	cc_secret_drop(e);
	cc_secret_copy(e, s);
	return (0);
}
