/*
 * vault_mask.c: the argv an audit record keeps (runs, grants, reports):
 * credential flags' values, the org's registered secret values and
 * anything shaped like a key become "***".  A rule below the domain
 * files: it reads the org's sealed secrets and nothing else.
 */

#include <sys/types.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vault.h"

#define MASK			"***"
#define MASK_TOKEN_MIN		24	/* a bare token this long is a key */
#define MASK_SECRET_MIN		3	/* shorter values would mask noise */

static int	mask_secret_open(int64_t, int64_t, const void *, size_t,
		    void *);
static void	mask_append(char **, size_t *, size_t *, const char *,
		    size_t);
static char	*mask_secrets(const char *, struct secs *);
static int	tok_char(int);
static int	tok_is_key(const char *, size_t);
static int	b64url_part(const char *, size_t);
static char	*mask_tokens(const char *);
static int	flag_is_credential(const char *, size_t);

static int
mask_secret_open(int64_t id, int64_t org, const void *sealed, size_t len,
    void *arg)
{
	struct secs	*ss = arg;

	if (ss->n >= RUN_SECRETS_MAX)
		return (1);
	if (secret_unseal(org, id, sealed, len, &ss->s[ss->n].val,
	    &ss->s[ss->n].len) == 0)
		ss->n++;
	return (0);
}

static void
mask_append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	char	*nb;
	size_t	 nc;

	if (*len + n + 1 > *cap) {
		nc = (*len + n + 1) * 2;
		/* Not realloc: the old buffer may hold a secret. */
		if ((nb = malloc(nc)) == NULL)
			fatal("%s: malloc", __func__);
		if (*len > 0)
			memcpy(nb, *buf, *len);
		freezero(*buf, *cap);
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
}

/* Every occurrence of a registered secret value, longest first. */
static char *
mask_secrets(const char *s, struct secs *ss)
{
	char		*cur, *buf;
	const char	*p, *q;
	size_t		 len, cap, i, j, best;

	if ((cur = strdup(s)) == NULL)
		fatal("%s: strdup", __func__);
	for (i = 0; i < ss->n; i++) {
		/* Longest remaining first, so a prefix secret cannot split it. */
		best = i;
		for (j = i + 1; j < ss->n; j++)
			if (ss->s[j].len > ss->s[best].len)
				best = j;
		if (best != i) {
			struct isecret	 t = ss->s[i];

			ss->s[i] = ss->s[best];
			ss->s[best] = t;
		}
		if (ss->s[i].len < MASK_SECRET_MIN ||
		    memmem(cur, strlen(cur), ss->s[i].val, ss->s[i].len) ==
		    NULL)
			continue;
		buf = NULL;
		len = cap = 0;
		for (p = cur; (q = memmem(p, strlen(p), ss->s[i].val,
		    ss->s[i].len)) != NULL; p = q + ss->s[i].len) {
			mask_append(&buf, &len, &cap, p, q - p);
			mask_append(&buf, &len, &cap, MASK, strlen(MASK));
		}
		mask_append(&buf, &len, &cap, p, strlen(p));
		freezero(cur, strlen(cur) + 1);
		cur = buf;
	}
	return (cur);
}

static int
tok_char(int c)
{
	return (isalnum((unsigned char)c) || c == '_' || c == '-');
}

/* A run of [A-Za-z0-9_-] that looks like a credential. */
static int
tok_is_key(const char *p, size_t n)
{
	static const char *const prefixes[] = {
		"sk_", "sk-", "rk_", "pk_live_", "ghp_", "gho_", "ghu_",
		"ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-",
		"xoxa-", "xoxr-", "xoxs-", "xapp-", "AKIA", "ASIA", "AIza",
		"npm_", "pypi-", "dop_v1_", "SG.", NULL
	};
	size_t	 i, pl;

	if (n >= MASK_TOKEN_MIN && *p != '-')
		return (1);
	for (i = 0; prefixes[i] != NULL; i++) {
		pl = strlen(prefixes[i]);
		if (n >= pl + 6 && strncmp(p, prefixes[i], pl) == 0)
			return (1);
	}
	return (0);
}

/*
 * Bare values that look like keys: JWTs (three base64url parts, the
 * first a JSON header "eyJ..."), vendor prefixes, long tokens.
 */
static char *
mask_tokens(const char *s)
{
	char		*buf = NULL;
	const char	*p = s, *e, *d1, *d2;
	size_t		 len = 0, cap = 0, n;

	mask_append(&buf, &len, &cap, "", 0);
	while (*p != '\0') {
		if (!tok_char(*p)) {
			mask_append(&buf, &len, &cap, p, 1);
			p++;
			continue;
		}
		/* The longest run of token characters and dots. */
		for (e = p; tok_char(*e) || *e == '.'; e++)
			;
		n = e - p;
		if (n > 3 && strncmp(p, "eyJ", 3) == 0 &&
		    (d1 = memchr(p, '.', n)) != NULL &&
		    (d2 = memchr(d1 + 1, '.', e - d1 - 1)) != NULL &&
		    memchr(d2 + 1, '.', e - d2 - 1) == NULL &&
		    b64url_part(p, d1 - p) && b64url_part(d1 + 1, d2 - d1 - 1) &&
		    b64url_part(d2 + 1, e - d2 - 1)) {
			mask_append(&buf, &len, &cap, MASK, strlen(MASK));
			p = e;
			continue;
		}
		/* Otherwise each dot-separated part on its own. */
		for (e = p; tok_char(*e); e++)
			;
		if (tok_is_key(p, e - p))
			mask_append(&buf, &len, &cap, MASK, strlen(MASK));
		else
			mask_append(&buf, &len, &cap, p, e - p);
		p = e;
	}
	return (buf);
}

/* --token, --api-key, --password, -p... : a flag whose value is a key. */
static int
flag_is_credential(const char *s, size_t n)
{
	static const char *const words[] = {
		"token", "secret", "password", "passwd", "apikey", "api-key",
		"api_key", "key", "auth", "credential", "bearer", "cookie",
		NULL
	};
	char	 name[64];
	size_t	 i;

	while (n > 0 && *s == '-') {
		s++;
		n--;
	}
	if (n == 0 || n >= sizeof(name))
		return (0);
	for (i = 0; i < n; i++)
		name[i] = tolower((unsigned char)s[i]);
	name[n] = '\0';
	for (i = 0; words[i] != NULL; i++)
		if (strstr(name, words[i]) != NULL)
			return (1);
	return (0);
}

/*
 * The argv an audit row keeps: credential flags' values, registered
 * secret values of the org and anything shaped like a key become "***".
 * The caller owns the new array.
 */
json_t *
argv_mask(int64_t org, json_t *argv)
{
	struct secs	*ss;
	json_t		*out, *v;
	const char	*s, *eq, *b;
	char		*m1, *m2, *tmp;
	size_t		 i, n;
	int		 next_is_value = 0;

	/* No argument, nothing to mask: no secret of the org unsealed. */
	if ((out = json_array()) == NULL || !json_is_array(argv) ||
	    json_array_size(argv) == 0)
		return (out);
	ss = secs_new();
	/* A secret that cannot be read is masked by the token rules only. */
	(void)store_org_secrets_sealed(org, mask_secret_open, ss);

	json_array_foreach(argv, i, v) {
		if (!json_is_string(v)) {
			json_array_append(out, v);
			continue;
		}
		s = json_string_value(v);
		if (next_is_value) {
			next_is_value = 0;
			json_array_append_new(out, json_string(MASK));
			continue;
		}
		if (*s == '-') {
			eq = strchr(s, '=');
			n = eq ? (size_t)(eq - s) : strlen(s);
			if (flag_is_credential(s, n)) {
				if (eq == NULL) {
					next_is_value = 1;
					json_array_append(out, v);
				} else {
					if (asprintf(&tmp, "%.*s=%s", (int)n,
					    s, MASK) == -1)
						fatal("%s: asprintf", __func__);
					json_array_append_new(out,
					    json_string(tmp));
					free(tmp);
				}
				continue;
			}
		}
		m1 = mask_secrets(s, ss);
		/* "Authorization: Bearer X" and the like. */
		if ((b = strcasestr(m1, "bearer ")) != NULL ||
		    (b = strcasestr(m1, "basic ")) != NULL) {
			b = strchr(b, ' ') + 1;
			if (*b != '\0' && strcmp(b, MASK) != 0) {
				n = b - m1;
				tmp = m1;
				if (asprintf(&m1, "%.*s%s", (int)n, tmp,
				    MASK) == -1)
					fatal("%s: asprintf", __func__);
				freezero(tmp, strlen(tmp) + 1);
			}
		}
		m2 = mask_tokens(m1);
		if ((v = json_string(m2)) == NULL)
			v = json_string(MASK);	/* not UTF-8 after all */
		json_array_append_new(out, v);
		freezero(m1, strlen(m1) + 1);
		freezero(m2, strlen(m2) + 1);
	}
	secs_clear(ss);
	free(ss);
	return (out);
}

static int
b64url_part(const char *p, size_t n)
{
	size_t	 i;

	if (n == 0)
		return (0);
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '_' &&
		    p[i] != '-')
			return (0);
	return (1);
}
