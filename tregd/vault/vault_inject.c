/*
 * vault_inject.c: a stored secret turned into what a CLI sees, and the
 * redaction set of a run.
 *
 * Runs (vault_run.c) and grants (vault_policy.c) both go through
 * inject_value(), so what a server run's child receives and what a local
 * runner is handed are the same bytes: the value trimmed, the secret_field
 * of a JSON secret taken (of an oauth secret only the access-token leaf,
 * SPEC.md section 3), and the format or argv template applied.
 *
 * The redaction set of a run (SPEC.md section 6) is what the child
 * received: every injected value exactly as injected, plus each secret's
 * stored value raw and trimmed, plus every string leaf of 8 bytes or more
 * of a JSON secret (the redactor adds the lines of a multi-line one).
 */

#include <sys/types.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "vault.h"

static const char *const oauth_leaves[] = {
	"access_token", "token", "id_token", NULL
};

static void	 trim(const char **, size_t *);
static char	*subst(const char *, const char *, size_t, size_t *);
static int	 redset_leaves(struct redset *, json_t *, int);

static void
trim(const char **p, size_t *len)
{
	while (*len > 0 && isspace((unsigned char)**p)) {
		(*p)++;
		(*len)--;
	}
	while (*len > 0 && isspace((unsigned char)(*p)[*len - 1]))
		(*len)--;
}

int
value_too_short(const void *p, size_t len)
{
	const char	*s = p;

	trim(&s, &len);
	return (len < REDACT_MINFORMS);
}

int
inject_field_allowed(const char *kind, const char *field)
{
	if (kind == NULL || strcmp(kind, "oauth") != 0 || field == NULL)
		return (1);
	return (strcmp(field, oauth_leaves[0]) == 0);
}

int
isecret_open(int64_t org, int64_t id, struct isecret *sc,
    struct vault_resp *resp, int gone)
{
	return (isecret_open_by(store_secret_get, org, id, sc, resp, gone));
}

int
isecret_open_by(secret_get_fn get, int64_t org, int64_t id,
    struct isecret *sc, struct vault_resp *resp, int gone)
{
	struct store_secret	 ss;
	int			 rc;

	memset(sc, 0, sizeof(*sc));
	memset(&ss, 0, sizeof(ss));
	if ((rc = get(org, id, &ss)) == 0) {
		sc->id = id;
		strlcpy(sc->kind, ss.kind, sizeof(sc->kind));
		sc->param = strcmp(sc->kind, "param") == 0;
		strlcpy(sc->name, ss.name, sizeof(sc->name));
		rc = secret_unseal(org, id, ss.sealed, ss.sealedlen, &sc->val,
		    &sc->len);
	} else if (rc == -1)
		rc = -2;
	store_secret_clear(&ss);
	if (rc == 1) {
		resp_error(resp, gone, "a secret the tool uses (id %lld) no "
		    "longer exists", (long long)id);
		return (-1);
	}
	if (rc == -2) {
		db_fail(resp, "secret lookup");
		return (-1);
	}
	if (rc != 0) {
		log_warnx("secret %lld of org %lld does not open",
		    (long long)id, (long long)org);
		resp_error(resp, 500, "internal error: the secret '%s' could "
		    "not be opened", sc->name);
		sc->val = NULL;
		sc->len = 0;
		return (-1);
	}
	return (0);
}

void
isecret_close(struct isecret *sc)
{
	if (sc->val != NULL)
		secret_free(sc->val, sc->len);
	explicit_bzero(sc, sizeof(*sc));
}

/* Every "{secret}" of tmpl replaced by val; the caller freezero()s it. */
static char *
subst(const char *tmpl, const char *val, size_t vlen, size_t *outlen)
{
	static const char	 ph[] = "{secret}";
	const char		*p, *q;
	size_t			 n = 0, len = 1;
	char			*out;

	*outlen = 0;
	for (p = tmpl; (q = strstr(p, ph)) != NULL; p = q + sizeof(ph) - 1)
		n++;
	len += strlen(tmpl) - n * (sizeof(ph) - 1) + n * vlen;
	if ((out = malloc(len)) == NULL)
		fatal("%s: malloc", __func__);
	for (p = tmpl; (q = strstr(p, ph)) != NULL; p = q + sizeof(ph) - 1) {
		memcpy(out + *outlen, p, q - p);
		*outlen += q - p;
		memcpy(out + *outlen, val, vlen);
		*outlen += vlen;
	}
	memcpy(out + *outlen, p, strlen(p));
	*outlen += strlen(p);
	out[*outlen] = '\0';
	return (out);
}

int
inject_value(const struct isecret *sc, json_t *e, const char *tmpl,
    struct vault_resp *resp, int status, char **out, size_t *outlen)
{
	const char	*val = (const char *)sc->val, *field;
	json_t		*doc = NULL, *fv = NULL;
	size_t		 vlen = sc->len, i;
	int		 oauth = strcmp(sc->kind, "oauth") == 0;

	*out = NULL;
	*outlen = 0;
	if (tmpl == NULL)
		tmpl = "{secret}";
	trim(&val, &vlen);
	field = json_string_value(json_object_get(e, "secret_field"));
	if (!inject_field_allowed(sc->kind, field)) {
		resp_error(resp, status, "only the access token of the oauth "
		    "secret '%s' may be injected, not '%s'", sc->name, field);
		return (-1);
	}
	if (field != NULL || oauth) {
		doc = json_loadb(val, vlen, 0, NULL);
		if (oauth)
			for (i = 0; oauth_leaves[i] != NULL &&
			    !json_is_string(fv); i++)
				fv = json_object_get(doc, oauth_leaves[i]);
		else
			fv = json_object_get(doc, field);
		if (!json_is_string(fv)) {
			json_decref(doc);
			resp_error(resp, status, "the secret '%s' has no "
			    "string field '%s'", sc->name, field != NULL ?
			    field : oauth_leaves[0]);
			return (-1);
		}
		val = json_string_value(fv);
		vlen = json_string_length(fv);
	}
	if (memchr(val, '\0', vlen) != NULL) {
		json_decref(doc);
		resp_error(resp, status, "the secret '%s' contains a NUL byte "
		    "and cannot be handed to a CLI", sc->name);
		return (-1);
	}
	*out = subst(tmpl, val, vlen, outlen);
	json_decref(doc);
	return (0);
}

int
redset_add(struct redset *rs, const void *p, size_t len)
{
	size_t	 i;

	if (len == 0)
		return (0);
	for (i = 0; i < rs->n; i++)
		if (rs->len[i] == len && memcmp(rs->v[i], p, len) == 0)
			return (0);
	if (rs->n >= REDSET_MAX)
		return (-1);
	if ((rs->v[rs->n] = malloc(len)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(rs->v[rs->n], p, len);
	rs->len[rs->n++] = len;
	return (0);
}

/* Every string leaf of 8+ bytes below v (depth-limited by jansson). */
static int
redset_leaves(struct redset *rs, json_t *v, int depth)
{
	const char	*key;
	json_t		*c;
	size_t		 i;

	if (depth > 64)
		return (0);
	if (json_is_string(v)) {
		if (json_string_length(v) < REDACT_MINFORMS)
			return (0);
		return (redset_add(rs, json_string_value(v),
		    json_string_length(v)));
	}
	if (json_is_object(v)) {
		json_object_foreach(v, key, c)
			if (redset_leaves(rs, c, depth + 1) == -1)
				return (-1);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, c)
			if (redset_leaves(rs, c, depth + 1) == -1)
				return (-1);
	}
	return (0);
}

int
redset_secret(struct redset *rs, const struct isecret *sc)
{
	const char	*val = (const char *)sc->val;
	size_t		 vlen = sc->len;
	json_t		*doc;
	int		 rv;

	if (sc->param)
		return (0);
	if (redset_add(rs, val, vlen) == -1)
		return (-1);
	trim(&val, &vlen);
	if (redset_add(rs, val, vlen) == -1)
		return (-1);
	if (strcmp(sc->kind, "oauth") != 0 &&
	    strcmp(sc->kind, "secret_file") != 0)
		return (0);
	if ((doc = json_loadb(val, vlen, 0, NULL)) == NULL)
		return (0);
	rv = redset_leaves(rs, doc, 0);
	json_decref(doc);
	return (rv);
}

void
redset_clear(struct redset *rs)
{
	size_t	 i;

	for (i = 0; i < rs->n; i++)
		freezero(rs->v[i], rs->len[i]);
	explicit_bzero(rs, sizeof(*rs));
}
