/*
 * proto.c: what two processes must read the same way, written once.  A
 * run's outcome is decided by exec (its answer to the frontend) and by
 * the vault (its record) from one struct run_exit; the run-latency
 * buckets are filled by the vault and printed by the frontend.
 *
 * A run's order is packed by the vault and unpacked by exec here, its
 * limits written once in tregd.h.
 *
 * A leaf: it includes tregd.h, common/ and libc only, and every process
 * may call it.
 */

#include <sys/types.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pack.h"
#include "tregd.h"

/* GET /metrics' tregd_run_duration_seconds buckets, in seconds. */
const double metrics_run_le[METRICS_RUN_BUCKETS] = {
	0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
};

/* exec's answer and the vault's record say the same. */
enum run_outcome
run_outcome_of(const struct run_exit *rx)
{
	if (rx->cancelled)
		return (RUN_CANCELLED);
	if (rx->timed_out)
		return (RUN_TIMED_OUT);
	return (rx->exit_code == 0 ? RUN_OK : RUN_FAILED);
}

const char *
run_outcome_name(uint32_t o)
{
	static const char *const names[] = {
		[RUN_OK] = "ok",
		[RUN_FAILED] = "failed",
		[RUN_TIMED_OUT] = "timed_out",
		[RUN_CANCELLED] = "cancelled",
		[RUN_INTERRUPTED] = "interrupted"
	};

	if (o >= sizeof(names) / sizeof(names[0]))
		return ("failed");
	return (names[o]);
}

/* The vault's order for exec (run_order_unpack() reads it). */
void
run_order_pack(struct pack *pk, const struct run_order *o)
{
	size_t	 i;

	pack_str(pk, o->bin);
	pack_u32(pk, o->argc);
	for (i = 0; i < o->argc; i++)
		pack_bytes(pk, o->argv[i], o->argvlen[i]);
	pack_u32(pk, o->envc);
	for (i = 0; i < o->envc; i++)
		pack_bytes(pk, o->env[i], o->envlen[i]);
	pack_u32(pk, o->nmask);
	for (i = 0; i < o->nmask; i++)
		pack_bytes(pk, o->mask[i], o->masklen[i]);
	pack_u32(pk, o->nhosts);
	for (i = 0; i < o->nhosts; i++)
		pack_str(pk, o->hosts[i]);
}

/*
 * An egress host for a run's /etc/hosts and its listeners: "name:port"
 * (letters, digits, '.', '-', '_') or "[IPv6]:port", port 1..65535.
 * Nothing else may reach a line of /etc/hosts.
 */
int
run_host_ok(const char *s, char *name, size_t namelen, uint16_t *port)
{
	const char	*colon = strrchr(s, ':'), *p, *end;
	char		*ep;
	unsigned long	 v;
	size_t		 n;

	if (colon == NULL || colon == s || colon[1] == '\0' ||
	    colon[1] == '0' || strlen(colon + 1) > 5)
		return (0);
	for (p = colon + 1; *p != '\0'; p++)
		if (*p < '0' || *p > '9')
			return (0);
	v = strtoul(colon + 1, &ep, 10);
	if (v < 1 || v > 65535)
		return (0);
	p = s;
	end = colon;
	if (*s == '[') {
		if (end[-1] != ']' || end - s < 4)
			return (0);
		for (p = s + 1; p < end - 1; p++)
			if (!((*p >= '0' && *p <= '9') || (*p >= 'a' &&
			    *p <= 'f') || (*p >= 'A' && *p <= 'F') ||
			    *p == ':' || *p == '.'))
				return (0);
		p = s + 1;
		end--;
	} else
		for (; p < end; p++)
			if (!((*p >= '0' && *p <= '9') || (*p >= 'a' &&
			    *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			    *p == '.' || *p == '-' || *p == '_'))
				return (0);
	n = end - (*s == '[' ? s + 1 : s);
	if (n == 0 || n >= namelen || n >= HOST_LEN_MAX)
		return (0);
	memcpy(name, *s == '[' ? s + 1 : s, n);
	name[n] = '\0';
	*port = (uint16_t)v;
	return (1);
}

/* An entry is "NAME=value" with a non-empty name of safe characters. */
static int
env_entry_ok(const char *s)
{
	const char	*eq = strchr(s, '=');
	const char	*p;

	if (eq == NULL || eq == s)
		return (0);
	for (p = s; p < eq; p++)
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= 'a' && *p <= 'z') || (p > s && *p >= '0' &&
		    *p <= '9')))
			return (0);
	return (1);
}

int
run_order_unpack(const void *buf, size_t len, size_t envskip,
    struct run_order *o, const char **why)
{
	struct unpack	 up;
	const char	*s, **argv;
	char		**env, name[HOST_LEN_MAX];
	size_t		 i, n;
	uint16_t	 port;

	memset(o, 0, sizeof(*o));
	unpack_init(&up, buf, len);
	o->bin = unpack_str(&up);
	o->argc = unpack_u32(&up);
	*why = "argv";
	if (up.bad || o->argc < 1 || o->argc > RUN_ARGC_MAX)
		return (-1);
	if ((argv = calloc(o->argc + 1, sizeof(*argv))) == NULL)
		fatal("%s: calloc", __func__);
	o->argv = argv;
	for (i = 0; i < o->argc; i++)
		if ((argv[i] = unpack_str(&up)) == NULL)
			return (-1);
	o->envc = unpack_u32(&up);
	*why = "env";
	if (up.bad || o->envc > RUN_ENVC_MAX)
		return (-1);
	if ((env = calloc(envskip + o->envc + 1, sizeof(*env))) == NULL)
		fatal("%s: calloc", __func__);
	o->env = env;
	for (i = 0; i < o->envc; i++) {
		if ((s = unpack_str(&up)) == NULL || !env_entry_ok(s))
			return (-1);
		env[envskip + i] = (char *)s;
	}
	/* The rest is the mask, packed: the redaction set's cache key. */
	o->packed_mask = up.p;
	o->packed_masklen = up.left;
	o->nmask = unpack_u32(&up);
	*why = "secrets";
	if (up.bad || o->nmask > REDSET_MAX)
		return (-1);
	for (i = 0; i < o->nmask; i++)
		if (unpack_bytes(&up, &n) == NULL)
			return (-1);
	o->packed_masklen = up.p - o->packed_mask;
	*why = "hosts";
	if (!up.bad && up.left > 0) {
		o->nhosts = unpack_u32(&up);
		if (up.bad || o->nhosts > RUN_HOSTS_MAX)
			return (-1);
		if ((o->hosts = calloc(o->nhosts + 1, sizeof(*o->hosts))) ==
		    NULL)
			fatal("%s: calloc", __func__);
		for (i = 0; i < o->nhosts; i++) {
			if ((s = unpack_str(&up)) == NULL ||
			    !run_host_ok(s, name, sizeof(name), &port))
				return (-1);
			o->hosts[i] = s;
		}
	}
	*why = "bin";
	if (unpack_done(&up) == -1 || o->bin == NULL || *o->bin == '\0' ||
	    strchr(o->bin, '/') != NULL || strlen(o->bin) >= CONF_BIN_LEN)
		return (-1);
	return (0);
}
