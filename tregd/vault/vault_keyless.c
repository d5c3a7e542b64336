/*
 * vault_keyless.c: the two things a keyless run (SPEC.md section 6a) is
 * made of besides its order: the placeholders that stand in for its
 * values (one per value of a run, made by vault_placeholder.c), and the
 * hosts its egress may reach: the profile's cli.egress, or the host of
 * the tool's base_url and its catalog CLI's hosts.  The relay gets both
 * in the run's grant; exec gets the hosts that name one host, which a
 * run's /etc/hosts points at the proxy.
 */

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "pack.h"
#include "vault.h"

static void	 egress_add(json_t *, const char *);

struct psubs *
psubs_new(void)
{
	struct psubs	*ps;

	if ((ps = malloc(sizeof(*ps))) == NULL)
		fatal("%s: malloc", __func__);
	ps->n = 0;
	return (ps);
}

void
psubs_free(struct psubs *ps)
{
	size_t	 i;

	if (ps == NULL)
		return;
	for (i = 0; i < ps->n; i++) {
		freezero(ps->v[i].ph, ps->v[i].phlen + 1);
		freezero(ps->v[i].val, ps->v[i].len + 1);
	}
	explicit_bzero(ps->v, ps->n * sizeof(ps->v[0]));
	free(ps);
}

const struct psub *
psubs_get(struct psubs *ps, const char *val, size_t len, const char *sign,
    const char *name)
{
	struct psub	*p;
	size_t		 i, n = PLACEHOLDER_LEN(len) + 1;

	for (i = 0; i < ps->n; i++)
		if (ps->v[i].len == len && memcmp(ps->v[i].val, val, len) == 0)
			return (&ps->v[i]);
	if (ps->n >= PSUBS_MAX)
		return (NULL);
	p = &ps->v[ps->n];
	memset(p, 0, sizeof(*p));
	if ((p->ph = malloc(n)) == NULL || (p->val = malloc(len + 1)) == NULL)
		fatal("%s: malloc", __func__);
	if (placeholder_make(val, len, p->ph, n, &p->phlen) == -1) {
		free(p->ph);
		free(p->val);
		return (NULL);
	}
	memcpy(p->val, val, len);
	p->val[len] = '\0';
	p->len = len;
	p->sign = sign != NULL && strcmp(sign, "aws-sigv4") == 0 ?
	    "aws-sigv4" : "";
	strlcpy(p->name, name != NULL ? name : "", sizeof(p->name));
	ps->n++;
	return (p);
}

/* An entry in its canonical spelling, once; a bad one is left out. */
static void
egress_add(json_t *list, const char *s)
{
	struct egress_host	 eh;
	json_t			*v;
	char			 buf[EGRESS_ENTRY_MAX + 16], err[256];
	size_t			 i;

	if (egress_entry_parse(s, &eh, err, sizeof(err)) == -1) {
		log_warnx("egress entry '%.64s' left out: %s", s, err);
		return;
	}
	egress_entry_print(&eh, buf, sizeof(buf));
	json_array_foreach(list, i, v)
		if (strcmp(json_string_value(v), buf) == 0)
			return;
	json_array_append_new(list, json_string(buf));
}

/*
 * cli.egress when the profile gives one (checked at registration, read
 * again here), else the base_url's host and port (http:// kept) and the
 * catalog's hosts of the profile's bin.
 */
json_t *
egress_list(const struct tool_row *t)
{
	json_t		*list, *eg, *v;
	const char	*cat, *p;
	char		 buf[EGRESS_ENTRY_MAX + 16];
	size_t		 i, n;

	if ((list = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	eg = json_object_get(t->cli, "egress");
	if (json_is_array(eg)) {
		json_array_foreach(eg, i, v)
			if (json_is_string(v))
				egress_add(list, json_string_value(v));
		return (list);
	}
	if (t->host[0] != '\0' && t->host[0] != '[') {
		snprintf(buf, sizeof(buf), "%s%s",
		    strncasecmp(t->base_url, "http://", 7) == 0 ? "http://" :
		    "", t->host);
		egress_add(list, buf);
	}
	cat = catalog_egress(json_string_value(json_object_get(t->cli,
	    "bin")));
	for (p = cat; p != NULL && *p != '\0'; p += n + strspn(p + n, " ")) {
		n = strcspn(p, " ");
		if (n == 0 || n >= sizeof(buf))
			break;
		memcpy(buf, p, n);
		buf[n] = '\0';
		egress_add(list, buf);
	}
	return (list);
}

/*
 * The entries of list that name one host, scheme left off ("host:port"),
 * into hosts (max of them; they point into list): how many.
 */
size_t
egress_list_hosts(json_t *list, const char **hosts, size_t max)
{
	const char	*s, *h;
	json_t		*v;
	size_t		 i, j, n = 0;

	json_array_foreach(list, i, v) {
		s = json_string_value(v);
		h = strncmp(s, "http://", 7) == 0 ? s + 7 : s;
		if (strncmp(h, "*.", 2) == 0)
			continue;
		for (j = 0; j < n && strcmp(hosts[j], h) != 0; j++)
			;
		if (j == n && n < max)
			hosts[n++] = h;
	}
	return (n);
}

/*
 * IMSG_EGRESS_GRANT's packed part (tregd.h): the egress list, each
 * placeholder with its value, sign and env name, then the run's
 * redaction set (the relay masks the answers with it).
 */
void
egress_grant_pack(struct pack *pk, json_t *list, const struct psubs *ps,
    const struct redset *mask)
{
	json_t	*v;
	size_t	 i;

	pack_u32(pk, json_array_size(list));
	json_array_foreach(list, i, v)
		pack_str(pk, json_string_value(v));
	pack_u32(pk, ps != NULL ? ps->n : 0);
	for (i = 0; ps != NULL && i < ps->n; i++) {
		pack_bytes(pk, ps->v[i].ph, ps->v[i].phlen);
		pack_bytes(pk, ps->v[i].val, ps->v[i].len);
		pack_str(pk, ps->v[i].sign);
		pack_str(pk, ps->v[i].name);
	}
	pack_u32(pk, mask->n);
	for (i = 0; i < mask->n; i++)
		pack_bytes(pk, mask->v[i], mask->len[i]);
}
