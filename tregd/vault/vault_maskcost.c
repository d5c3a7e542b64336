/*
 * vault_maskcost.c: what one tool's redaction set may cost, checked when
 * the set could grow: a tool registered or changed (POST and PATCH
 * /tools, the tools of POST /skills), and a secret a tool uses changed
 * (PATCH /secrets: a new value, or a kind that is masked).
 *
 * Exec and the relay compile a tool's set on a thread of their own
 * (common/redact_cache.c), never on the loop that serves every org, but
 * the compile still costs time and memory in proportion to the set's
 * bytes: about 7 us and 1 KB for each byte of an ASCII value, 15 us and
 * 2.4 KB for binary ones (every form of every secret: base64, hex,
 * percent and JSON escapes; bench/RESULTS.md).  So the bytes of a set
 * are bounded, REDSET_BYTES_MAX (16 KiB: the worst set compiles in about
 * a quarter of a second and 40 MB, an ASCII one in about 0.1 s and
 * 20 MB), counted as the run and call paths build it (vault_inject.c:
 * each secret raw and trimmed, the string leaves of a JSON secret, and
 * each value a binding or an inject entry makes of it), and refused there
 * too.  Here that count is bounded from above without opening a secret,
 * from the sealed lengths: each masked secret twice (three times an
 * oauth or secret_file one, for its leaves), and each binding's or inject
 * entry's template, with the secret once for each {secret} in it.
 * Storing a secret costs nothing until a tool uses it.
 */

#include <sys/types.h>

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vault.h"
#include "vault_keyring.h"

#define MC_SECRETS	(BINDINGS_MAX + INJECT_MAX)
#define MC_USERS	256	/* tools of one secret looked at */

struct mc_secret {
	int64_t		 id;
	size_t		 len;
	int		 param;		/* never masked */
	int		 json;		/* its leaves are masked too */
};

struct mc {
	struct mc_secret s[MC_SECRETS];
	size_t		 n;
	size_t		 cost;
};

static int	 mc_secret(struct mc *, int64_t, int64_t,
		    struct mc_secret **, struct vault_resp *);
static size_t	 mc_value(const char *, const struct mc_secret *);
static int	 mc_use(struct mc *, int64_t, int64_t, const char *,
		    struct vault_resp *);
static int	 mc_user(const char *, const char *, void *);

/* The secret id of org, read once: its length from the sealed row. */
static int
mc_secret(struct mc *m, int64_t org, int64_t id, struct mc_secret **out,
    struct vault_resp *resp)
{
	struct store_secret	 ss;
	struct mc_secret	*e;
	size_t			 i, over = KEY_ID_LEN + NONCE_LEN + TAG_LEN;
	int			 rc;

	for (i = 0; i < m->n; i++)
		if (m->s[i].id == id) {
			*out = &m->s[i];
			return (0);
		}
	if (m->n == MC_SECRETS) {
		resp_error(resp, 422, "the tool uses too many secrets");
		return (-1);
	}
	if ((rc = store_secret_get(org, id, &ss)) == -1) {
		db_fail(resp, "secret lookup");
		return (-1);
	}
	e = &m->s[m->n++];
	memset(e, 0, sizeof(*e));
	e->id = id;
	if (rc == 0) {
		e->len = ss.sealedlen > over ? ss.sealedlen - over : 0;
		e->param = strcmp(ss.kind, "param") == 0;
		e->json = strcmp(ss.kind, "oauth") == 0 ||
		    strcmp(ss.kind, "secret_file") == 0;
		m->cost += e->param ? 0 : (e->json ? 3 : 2) * e->len;
	}
	store_secret_clear(&ss);
	*out = e;
	return (0);
}

/* The bytes of the value a template (NULL: "{secret}") makes of s. */
static size_t
mc_value(const char *tmpl, const struct mc_secret *s)
{
	const char	*p;
	size_t		 n = 0;

	if (tmpl == NULL)
		return (s->len);
	for (p = tmpl; (p = strstr(p, "{secret}")) != NULL; p += 8)
		n++;
	return (strlen(tmpl) + n * s->len);
}

/* One use of secret id through tmpl. */
static int
mc_use(struct mc *m, int64_t org, int64_t id, const char *tmpl,
    struct vault_resp *resp)
{
	struct mc_secret	*s;

	if (id <= 0)
		return (0);
	if (mc_secret(m, org, id, &s, resp) == -1)
		return (-1);
	if (!s->param)
		m->cost += mc_value(tmpl, s);
	return (0);
}

/*
 * The cost of the set of tool name (its bindings and CLI profile): 0
 * when it is within REDSET_BYTES_MAX, or -1 with resp set (422).
 */
int
mask_cost_check(int64_t org, const char *name, json_t *bindings,
    json_t *cli, struct vault_resp *resp)
{
	struct mc	*m;
	struct tool_row	 t;
	json_t		*b, *e, *v;
	const char	*via;
	int64_t		 id;
	size_t		 i, j;
	int		 rv = -1;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		fatal("%s: calloc", __func__);
	json_array_foreach(bindings, i, b)
		if (mc_use(m, org, json_integer_value(json_object_get(b,
		    "secret_id")), json_string_value(json_object_get(b,
		    "format")), resp) == -1)
			goto out;
	memset(&t, 0, sizeof(t));
	t.bindings = bindings;
	json_array_foreach(json_object_get(cli, "inject"), i, e) {
		if (inject_resolve(&t, e, &id) == -1)
			continue;	/* refused when it is used */
		via = json_string_value(json_object_get(e, "via"));
		if (via != NULL && strcmp(via, "argv") == 0) {
			json_array_foreach(json_object_get(e, "argv"), j, v)
				if (mc_use(m, org, id, json_string_value(v),
				    resp) == -1)
					goto out;
		} else if (mc_use(m, org, id, json_string_value(
		    json_object_get(e, "format")), resp) == -1)
			goto out;
	}
	if (m->cost > REDSET_BYTES_MAX) {
		resp_error(resp, 422, "the secrets of tool '%s' are too large "
		    "to be masked: their forms would take %zu bytes of "
		    "patterns, over the bound of %d (each secret counts "
		    "twice, an oauth or secret_file one three times, and "
		    "each value a binding or inject entry makes of it once) "
		    "— use fewer or smaller secrets", name, m->cost,
		    REDSET_BYTES_MAX);
		goto out;
	}
	rv = 0;
 out:
	explicit_bzero(m, sizeof(*m));
	free(m);
	return (rv);
}

static int
mc_user(const char *tool, const char *bundle, void *arg)
{
	json_t	*names = arg;

	if (tool != NULL && json_array_size(names) < MC_USERS)
		json_array_append_new(names, json_string(tool));
	return (0);
}

/*
 * Secret id of org changed (inside the write's transaction): every tool
 * using it must still be within the bound.  0, or -1 with resp set.
 */
int
mask_cost_users(int64_t org, int64_t id, struct vault_resp *resp)
{
	struct tool_row	 t;
	json_t		*names, *n;
	size_t		 i;
	int		 rv = 0, rc;

	if ((names = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	if (store_secret_users(id, mc_user, names) == -1) {
		json_decref(names);
		db_fail(resp, "secret users");
		return (-1);
	}
	json_array_foreach(names, i, n) {
		if ((rc = tool_load(org, json_string_value(n), &t)) == 1)
			continue;
		if (rc == -1) {
			db_fail(resp, "tool lookup");
			rv = -1;
			break;
		}
		rc = mask_cost_check(org, t.name, t.bindings, t.cli, resp);
		tool_row_clear(&t);
		if (rc == -1) {
			rv = -1;
			break;
		}
	}
	json_decref(names);
	return (rv);
}
