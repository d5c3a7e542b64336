/*
 * vault_inject.c: a stored secret turned into what a CLI sees, and the
 * redaction set of a run.
 *
 * Runs (vault_run.c), grants (vault_policy.c) and the relay
 * (vault_call.c) all go through inject_value(), so what a server run's
 * child receives, what a local runner is handed and what an upstream gets
 * are the same bytes: the value trimmed, a field of a JSON secret taken
 * and never the whole (the access-token leaf unless another is named; of
 * an oauth secret only that, SPEC.md section 3), and the format or argv
 * template applied.  Whatever keeps it from being resolved when it is
 * used is a 502 naming the tool, which the caller puts on record.
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

/*
 * The names an OAuth access token goes by: access_token (RFC 6749) and
 * token (Google's token.json).  Nothing else of an oauth secret is an
 * access token: a refresh_token mints new ones, a client_secret is the
 * app's, an id_token says who the user is and opens no API.
 */
static const char *const oauth_leaves[] = {
	"access_token", "token", NULL
};

static void	 trim(const char **, size_t *);
static const char *json_what(json_t *);
static int	 inject_leaf(const struct isecret *, json_t *, const char *,
		    struct vault_resp *, json_t **, const char **, size_t *);
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

/*
 * Whether the field of a secret of that kind may leave the vault: any
 * field of a plain or secret_file secret the tool names, of an oauth
 * secret only its access token under one of its names.  The one rule of
 * it: the tool checks (vault_tool.c) and every use (inject_leaf) call it.
 */
int
inject_field_allowed(const char *kind, const char *field)
{
	size_t	 i;

	if (kind == NULL || strcmp(kind, "oauth") != 0 || field == NULL)
		return (1);
	for (i = 0; oauth_leaves[i] != NULL; i++)
		if (strcmp(field, oauth_leaves[i]) == 0)
			return (1);
	return (0);
}

int
isecret_open(int64_t org, int64_t id, const char *tool, struct isecret *sc,
    struct vault_resp *resp)
{
	return (isecret_open_by(store_secret_get, org, id, tool, sc, resp));
}

/*
 * A secret a tool uses, unsealed for its use.  One that is gone or does
 * not open is the tool's resolution failing (502: the request was fine,
 * the tool cannot be used as it is); a database that fails is not.
 */
int
isecret_open_by(secret_get_fn get, int64_t org, int64_t id,
    const char *tool, struct isecret *sc, struct vault_resp *resp)
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
		resp_error(resp, 502, "tool '%s': a secret it uses (id %lld) "
		    "no longer exists", tool, (long long)id);
		return (-1);
	}
	if (rc == -2) {
		db_fail(resp, "secret lookup");
		return (-1);
	}
	if (rc != 0) {
		log_warnx("secret %lld of org %lld does not open",
		    (long long)id, (long long)org);
		resp_error(resp, 502, "tool '%s': the secret '%s' cannot be "
		    "opened on this server (its log says more)", tool,
		    sc->name);
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

/*
 * A format or argv template applied to val (a keyless run's placeholder,
 * SPEC 6a): the same rule as inject_value()'s, for bytes already taken
 * out of a secret.  The caller freezero()s it.
 */
char *
inject_format(const char *tmpl, const char *val, size_t vlen, size_t *outlen)
{
	return (subst(tmpl != NULL ? tmpl : "{secret}", val, vlen, outlen));
}

/* What a JSON value is, for a detail that never shows the value. */
static const char *
json_what(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return ("an object");
	case JSON_ARRAY:
		return ("an array");
	case JSON_INTEGER:
	case JSON_REAL:
		return ("a number");
	case JSON_TRUE:
	case JSON_FALSE:
		return ("a boolean");
	default:
		return ("null");
	}
}

/*
 * The one rule of what leaves the vault of a secret, for a binding or
 * inject entry e (SPEC.md sections 3 and 4).  The secret's kind decides
 * its shape: env and param are plain strings, and take no field (treg's
 * client names "access_token" with every binding; treg ignores it for a
 * plain string too).  oauth and secret_file are JSON objects of which a
 * field leaves, never the whole: the secret_field named, or, when it
 * names none or "access_token", the access-token leaf (access_token,
 * then token); of an oauth secret nothing but that leaf.  A
 * binding whose injector takes a JSON secret (oauth, secret_file) does
 * not fit a plain one.  *doc holds what *val points into (decref it).
 */
static int
inject_leaf(const struct isecret *sc, json_t *e, const char *tool,
    struct vault_resp *resp, json_t **doc, const char **val, size_t *vlen)
{
	const char	*field, *injector, *f;
	json_t		*fv = NULL;
	size_t		 i;
	int		 json, leaf;

	*doc = NULL;
	json = strcmp(sc->kind, "oauth") == 0 ||
	    strcmp(sc->kind, "secret_file") == 0;
	injector = json_string_value(json_object_get(e, "injector"));
	if (!json && injector != NULL && (strcmp(injector, "oauth") == 0 ||
	    strcmp(injector, "secret_file") == 0)) {
		resp_error(resp, 502, "tool '%s': the injector '%s' takes a "
		    "JSON secret (oauth or secret_file), but the secret '%s' "
		    "is of kind '%s'", tool, injector, sc->name, sc->kind);
		return (-1);
	}
	field = json_string_value(json_object_get(e, "secret_field"));
	if (!json) {
		/*
		 * A plain secret is injected whole; a field other than the
		 * access token that treg's client always names means the
		 * tool wanted part of it (the aws profile): refused, so that
		 * a JSON object of several keys never leaves whole.
		 */
		if (field != NULL && strcmp(field, oauth_leaves[0]) != 0 &&
		    *vlen > 0 && **val == '{') {
			resp_error(resp, 502, "tool '%s': it takes the field "
			    "'%s' of the secret '%s', which is of kind '%s' "
			    "(a plain string): store it as kind secret_file",
			    tool, field, sc->name, sc->kind);
			return (-1);
		}
		return (0);
	}
	if (!inject_field_allowed(sc->kind, field)) {
		resp_error(resp, 502, "tool '%s': only the access token of "
		    "the oauth secret '%s' (access_token or token) may be "
		    "injected, not '%s'", tool, sc->name, field);
		return (-1);
	}
	leaf = field == NULL || strcmp(field, oauth_leaves[0]) == 0;
	if ((*doc = json_loadb(*val, *vlen, 0, NULL)) == NULL ||
	    !json_is_object(*doc)) {
		json_decref(*doc);
		*doc = NULL;
		/* A secret_file of a file's text (a PEM key): it is whole. */
		if (leaf && strcmp(sc->kind, "secret_file") == 0)
			return (0);
		resp_error(resp, 502, "tool '%s': the %s secret '%s' is not "
		    "a JSON object%s", tool, sc->kind, sc->name, leaf ? "" :
		    ": it has no fields");
		return (-1);
	}
	f = leaf ? oauth_leaves[0] : field;
	if (!leaf)
		fv = json_object_get(*doc, field);
	for (i = 0; leaf && oauth_leaves[i] != NULL && fv == NULL; i++)
		if ((fv = json_object_get(*doc, oauth_leaves[i])) != NULL)
			f = oauth_leaves[i];
	if (fv == NULL) {
		if (leaf)
			resp_error(resp, 502, "tool '%s': the secret '%s' has "
			    "no access_token or token field", tool,
			    sc->name);
		else
			resp_error(resp, 502, "tool '%s': the secret '%s' has "
			    "no field '%s'", tool, sc->name, field);
		return (-1);
	}
	if (!json_is_string(fv)) {
		resp_error(resp, 502, "tool '%s': the field '%s' of the "
		    "secret '%s' is %s, not a string", tool, f, sc->name,
		    json_what(fv));
		return (-1);
	}
	*val = json_string_value(fv);
	*vlen = json_string_length(fv);
	trim(val, vlen);
	return (0);
}

int
inject_value(const struct isecret *sc, json_t *e, const char *tmpl,
    const char *tool, struct vault_resp *resp, char **out, size_t *outlen)
{
	const char	*val = (const char *)sc->val;
	json_t		*doc;
	size_t		 vlen = sc->len;

	*out = NULL;
	*outlen = 0;
	if (tmpl == NULL)
		tmpl = "{secret}";
	trim(&val, &vlen);
	if (inject_leaf(sc, e, tool, resp, &doc, &val, &vlen) == -1) {
		json_decref(doc);
		return (-1);
	}
	if (memchr(val, '\0', vlen) != NULL) {
		json_decref(doc);
		resp_error(resp, 502, "tool '%s': the secret '%s' contains a "
		    "NUL byte and cannot be injected", tool, sc->name);
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
	if (rs->n >= REDSET_MAX || len > REDSET_BYTES_MAX - rs->bytes)
		return (-1);
	if ((rs->v[rs->n] = malloc(len)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(rs->v[rs->n], p, len);
	rs->len[rs->n++] = len;
	rs->bytes += len;
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

/* Entries past n are never read: not zeroed (90 KB a run). */
struct secs *
secs_new(void)
{
	struct secs	*ss;

	if ((ss = malloc(sizeof(*ss))) == NULL)
		fatal("%s: malloc", __func__);
	ss->n = 0;
	return (ss);
}

struct isecret *
secs_get(struct secs *ss, int64_t org, int64_t id, const char *tool,
    struct vault_resp *resp)
{
	size_t		 i;

	for (i = 0; i < ss->n; i++)
		if (ss->s[i].id == id)
			return (&ss->s[i]);
	if (ss->n >= RUN_SECRETS_MAX) {
		resp_error(resp, 502, "tool '%s': it uses too many secrets",
		    tool);
		return (NULL);
	}
	if (isecret_open(org, id, tool, &ss->s[ss->n], resp) == -1)
		return (NULL);
	return (&ss->s[ss->n++]);
}

void
secs_clear(struct secs *ss)
{
	size_t	 i;

	for (i = 0; i < ss->n; i++)
		secret_free(ss->s[i].val, ss->s[i].len);
	explicit_bzero(ss->s, ss->n * sizeof(ss->s[0]));
	ss->n = 0;
}
