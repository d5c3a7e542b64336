/*
 * vault_run.c: server runs (POST /run), their slots and audit rows, the
 * run log (GET /runs, tregctl show runs).  The argv of its record is
 * masked by vault_mask.c.
 *
 * A run is decided here, in the order of SPEC.md section 6.  Its audit
 * row is committed before anything is sent to exec (no row, no run: 503).
 * exec answers the frontend itself once the run is over (IMSG_RUN_EOF
 * with the result) and tells the vault (IMSG_RUN_EXIT): the slot is
 * free, and the end is appended as a second record (run_ends), batched:
 * the ends that come in one turn of the vault's loop are committed
 * together at the end of that turn.  An end is acknowledged when that
 * commit returned, and not before: the client's answer does not wait for
 * it, so a vault that dies within that turn loses the ends of the batch,
 * and those runs show what a row without an end shows, "interrupted" (as
 * a run in flight when tregd died does).  A stop (SIGTERM) commits the
 * batch first; reads of the run log commit it before they read.
 */

#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "pack.h"
#include "vault.h"

#define RUNS_LIMIT_DEF		50
#define RUNS_LIMIT_MAX		500
#define RUN_ENDS_RETRY_MS	250	/* an end not committed: again */

/* run_inject() */
#define RUN_INJECT_OK		0
#define RUN_INJECT_FAIL		-1	/* resp set */
#define RUN_INJECT_TOOMANY	-2	/* more forms than a set holds */

/* A run handed to exec: what its audit row needs. */
struct vrun {
	TAILQ_ENTRY(vrun)	 entry;
	uint32_t		 runid;
	uint32_t		 reqid;
	int64_t			 audit_id;	/* its runs row */
	int			 slot;		/* vault_slots.c */
	int			 granted;	/* the relay holds its grant */
	int64_t			 org_id;
	int64_t			 user_id;
	char			 tool[NAME_LEN_MAX + 1];
	char			 bin[CONF_BIN_LEN];
	char			*argv;		/* masked JSON */
};
TAILQ_HEAD(vrun_list, vrun);

/* An end waiting for its batch's commit. */
struct vend {
	struct store_run_end	 e;
	char			 at[32];
	char			 tool[NAME_LEN_MAX + 1];
	int			 slot;	/* held until the end is on record */
};

/* Strings that may hold secrets: each freezero'd by strv_clear. */
struct strv {
	char		*v[INJECT_MAX * INJECT_ARGV_MAX];
	size_t		 len[INJECT_MAX * INJECT_ARGV_MAX];
	size_t		 n;
};

/* A run being decided: what the steps of run_post() hand on. */
struct runp {
	struct tool_row	 t;
	const char	*name;		/* asked for, in the body */
	const char	*bin;		/* in t.cli */
	json_t		*args;		/* an array, maybe empty */
	int		 timeout;
	int		 slot;		/* claimed, -1: none */
	struct secs	*secs;
	struct redset	*mask;		/* what exec masks in the output */
	struct strv	 env, xargs;
	int		 network;	/* RUN_NET_* */
	struct psubs	*subs;		/* keyless: placeholders, else NULL */
	json_t		*egress;	/* RUN_NET_PROXY: the egress list */
	struct pack	 order;		/* for exec */
	char		*argv;		/* masked JSON, for the record */
	int64_t		 t_in, t_audit;
};

static struct vrun_list	 vruns = TAILQ_HEAD_INITIALIZER(vruns);
/*
 * A run id is the worker's index in the top 8 bits and a count below:
 * the relay and exec know a run by it whichever worker started it.
 */
#define RUNID_COUNT_MASK	0x00ffffffU
static uint32_t		 next_runid = 1;
/*
 * The ends waiting for their commit: kept until it succeeds, each with
 * its run's slot, so there are never more than the host has slots.
 */
static struct vend	*vends;
static size_t		 nvends, capvends;
static int		 ends_failed;	/* tries that failed in a row */
static struct event	 ev_ends;
static int		 ev_ends_set;

static void	run_post(struct vault_req *, struct vault_resp *);
static void	runs_get(struct vault_req *, struct vault_resp *);
struct runp;
static int	run_args(struct vault_req *, struct vault_resp *,
		    struct runp *);
static void	runp_init(struct runp *);
static void	runp_clear(struct runp *);
static int	run_tool(const struct auth *, struct runp *,
		    struct vault_resp *);
static int	run_tool_access(const struct auth *, struct runp *,
		    struct vault_resp *);
static int	run_tool_bin(struct runp *, struct vault_resp *);
static int	run_network(struct runp *, struct vault_resp *);
static int	run_cli_deny(const struct auth *, struct runp *,
		    struct vault_resp *);
static int	run_slot(const struct auth *, struct runp *,
		    struct vault_resp *);
static int	run_secrets(const struct auth *, struct runp *,
		    struct vault_resp *);
static int	run_argv_mask(const struct auth *, struct runp *);
static struct vrun *run_record(struct vault_req *, struct runp *,
		    struct vault_resp *);
static void	run_order(struct runp *);
static void	run_send(struct vault_req *, struct runp *, struct vrun *);
static void	run_grant(struct runp *, const struct vrun *,
		    const struct auth *);
static int	secs_tool(struct secs *, int64_t, const struct tool_row *,
		    struct vault_resp *);
static int	run_inject(int64_t, const struct tool_row *, struct secs *,
		    struct redset *, struct strv *, struct strv *,
		    struct psubs *, struct vault_resp *);
static int	run_inject_argv(const struct tool_row *, struct isecret *,
		    json_t *, struct redset *, struct strv *, struct psubs *,
		    struct vault_resp *);
static int	run_keyless_value(const struct tool_row *, struct isecret *,
		    json_t *, const char *, struct redset *, struct psubs *,
		    struct vault_resp *, char **, size_t *);
static uint32_t	run_id_next(void);
static char	*env_kv(const char *, const char *, size_t, size_t *);
static void	strv_add(struct strv *, char *, size_t);
static void	strv_clear(struct strv *);
static int64_t	run_audit_start(const struct auth *, const char *,
		    const char *);
static void	run_audit_end(const struct vrun *, const struct run_exit *,
		    const char *);
static void	run_ends_commit(int, short, void *);
static int	run_in_flight(int64_t);
struct runs_page;
static int	runs_row_running(const struct runs_page *,
		    const struct store_runs_row *);
static int	runs_row(const struct store_runs_row *, void *);
static int	runs_access_tool(const struct store_tool_item *, void *);
static json_t	*runs_access_names(int64_t, json_t *);
static json_t	*runs_query(int64_t, const struct auth *, int, char,
		    int64_t, int *);

const struct vault_route vault_run_routes[] = {
	{ ROUTE_RUN,		ROLE_MEMBER,	run_post },
	{ ROUTE_RUNS_LIST,	ROLE_VIEWER,	runs_get },
	{ ROUTE_NONE,		ROLE_NONE,	NULL }
};

/* ------------------------------------------------------------------ */
/* POST /run                                                           */

/* args, timeout_s: the shapes (400/422 before any lookup). */
static int
run_args(struct vault_req *req, struct vault_resp *resp, struct runp *rp)
{
	json_t	*a, *v;
	size_t	 i;

	if (body_str(req, resp, "tool", 1, NAME_LEN_MAX, &rp->name) == -1)
		return (-1);
	a = json_object_get(req->body, "args");
	if (a != NULL && !json_is_null(a)) {
		if (!json_is_array(a) || json_array_size(a) > ARGV_MAX) {
			resp_error(resp, 422, "field 'args' must be an array "
			    "of at most %d strings", ARGV_MAX);
			return (-1);
		}
		json_array_foreach(a, i, v) {
			if (!json_is_string(v)) {
				resp_error(resp, 422, "args[%zu] must be a "
				    "string", i);
				return (-1);
			}
			if (json_string_length(v) > ARG_LEN_MAX) {
				resp_error(resp, 422, "args[%zu] is too long "
				    "(at most %d bytes)", i, ARG_LEN_MAX);
				return (-1);
			}
			if (strlen(json_string_value(v)) !=
			    json_string_length(v)) {
				resp_error(resp, 422, "args[%zu] contains a "
				    "NUL byte", i);
				return (-1);
			}
		}
		json_decref(rp->args);
		rp->args = json_incref(a);
	}
	v = json_object_get(req->body, "timeout_s");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_integer(v)) {
			resp_error(resp, 422, "field 'timeout_s' must be an "
			    "integer (seconds, 1 to %d)", RUN_TIMEOUT_MAX);
			return (-1);
		}
		/* Clamped, as treg does, rather than refused. */
		if (json_integer_value(v) < 1)
			rp->timeout = 1;
		else if (json_integer_value(v) > RUN_TIMEOUT_MAX)
			rp->timeout = RUN_TIMEOUT_MAX;
		else
			rp->timeout = json_integer_value(v);
	}
	v = json_object_get(req->body, "stream");
	if (v != NULL && !json_is_boolean(v) && !json_is_null(v)) {
		resp_error(resp, 422, "field 'stream' must be true or false");
		return (-1);
	}
	return (0);
}

/*
 * POST /run, in the order of SPEC.md section 6.  The token, tool and
 * rules are read in one snapshot (opened in vault.c, ended by
 * run_cli_deny()); a refusal's row and exec's ends are written outside
 * it.  Once the row is committed, exec and run_exit() answer.
 */
static void
run_post(struct vault_req *req, struct vault_resp *resp)
{
	struct auth	*a = req->auth;
	struct runp	 rp;
	struct vrun	*vr;

	runp_init(&rp);
	if (run_args(req, resp, &rp) == -1 ||
	    run_tool(a, &rp, resp) == -1 ||
	    run_tool_access(a, &rp, resp) == -1 ||
	    run_tool_bin(&rp, resp) == -1 ||
	    run_network(&rp, resp) == -1 ||
	    run_cli_deny(a, &rp, resp) == -1 ||
	    run_slot(a, &rp, resp) == -1 ||
	    run_secrets(a, &rp, resp) == -1 ||
	    run_argv_mask(a, &rp) == -1 ||
	    (vr = run_record(req, &rp, resp)) == NULL)
		goto out;
	run_order(&rp);
	run_send(req, &rp, vr);
	resp->status = 0;	/* exec and run_exit() answer */
 out:
	runp_clear(&rp);
}

/* Only what is used is written, read and zeroed (they are big). */
static void
runp_init(struct runp *rp)
{
	memset(&rp->t, 0, sizeof(rp->t));
	rp->name = rp->bin = NULL;
	if ((rp->args = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	rp->timeout = vault_conf.run_timeout;
	rp->slot = -1;
	rp->secs = secs_new();
	if ((rp->mask = calloc(1, sizeof(*rp->mask))) == NULL)
		fatal("%s: calloc", __func__);
	rp->env.n = rp->xargs.n = 0;
	rp->network = RUN_NET_NONE;
	rp->subs = NULL;
	rp->egress = NULL;
	pack_init(&rp->order);
	rp->argv = NULL;
	rp->t_in = mono_ns();
	rp->t_audit = 0;
}

static void
runp_clear(struct runp *rp)
{
	store_read_end();
	if (rp->slot != -1)
		slots_release(rp->slot);
	redset_clear(rp->mask);
	free(rp->mask);
	pack_free(&rp->order);
	strv_clear(&rp->env);
	strv_clear(&rp->xargs);
	psubs_free(rp->subs);
	json_decref(rp->egress);
	secs_clear(rp->secs);
	free(rp->secs);
	free(rp->argv);
	json_decref(rp->args);
	tool_row_clear(&rp->t);
}

/* 2. The tool, in the caller's org only. */
static int
run_tool(const struct auth *a, struct runp *rp, struct vault_resp *resp)
{
	return (tool_find(a->org_id, rp->name, &rp->t, resp));
}

/* 3. Access list, then deny rules on the tool's base_url. */
static int
run_tool_access(const struct auth *a, struct runp *rp,
    struct vault_resp *resp)
{
	char	 path[URL_LEN_MAX + 1];

	if (tool_access_check(a, &rp->t, resp) == -1)
		return (-1);
	url_path(rp->t.base_url, path, sizeof(path));
	return (deny_check(a, rp->t.host, path, NULL, rp->t.project_id,
	    resp));
}

/* 4, 5. A CLI profile whose bin this server allows. */
static int
run_tool_bin(struct runp *rp, struct vault_resp *resp)
{
	const struct tool_row	*t = &rp->t;

	if (t->cli == NULL || (rp->bin = json_string_value(
	    json_object_get(t->cli, "bin"))) == NULL) {
		resp_error(resp, 422, "tool '%s' has no CLI profile — it's an "
		    "HTTP tool; call it through /call/%s/... instead", t->name,
		    t->name);
		return (-1);
	}
	if (!bin_valid(rp->bin) || strlen(rp->bin) >= CONF_BIN_LEN ||
	    !conf_run_allowed(&vault_conf, rp->bin)) {
		resp_error(resp, 422, "'%s' is not approved for server runs "
		    "on this treg server — ask the operator to add it to "
		    "'run allow'", rp->bin);
		return (-1);
	}
	return (0);
}

/*
 * 5b. How the run reaches the network (SPEC 6a): none when the profile
 * says "network": false or the server "run network no"; the host's when
 * the operator chose "run network host", which a keyless profile cannot
 * run with (nothing would swap its placeholders); else the egress proxy,
 * with the run's egress list.  A keyless profile's run through the proxy
 * holds placeholders (rp->subs); a "network": false one is not keyless.
 */
static int
run_network(struct runp *rp, struct vault_resp *resp)
{
	json_t	*cli = rp->t.cli;
	int	 keyless = !json_is_false(json_object_get(cli, "keyless"));

	if (json_is_false(json_object_get(cli, "network")) ||
	    vault_conf.run_network == RUN_NET_NONE)
		rp->network = RUN_NET_NONE;
	else if (vault_conf.run_network == RUN_NET_HOST) {
		if (keyless) {
			resp_error(resp, 422, "keyless runs need the egress "
			    "proxy: run network proxy");
			return (-1);
		}
		rp->network = RUN_NET_HOST;
	} else
		rp->network = RUN_NET_PROXY;
	if (rp->network != RUN_NET_PROXY)
		return (0);
	rp->egress = egress_list(&rp->t);
	if (keyless)
		rp->subs = psubs_new();
	return (0);
}

/*
 * 5a. cli.deny, as for grants: audited as DENY.  The decision's snapshot
 * ends here: the refusal's row is written outside it.
 */
static int
run_cli_deny(const struct auth *a, struct runp *rp, struct vault_resp *resp)
{
	store_read_end();
	return (cli_deny_refuse(a, &rp->t, rp->args, "server_run", resp));
}

/*
 * 6. Slots (the host's, every worker's): the server's, the user's, the
 * org's.  A run that ended may not be read yet: read exec's news first.
 */
static int
run_slot(const struct auth *a, struct runp *rp, struct vault_resp *resp)
{
	int	 rc, used;

	if ((rc = slots_claim(a->user_id, a->org_id, vault_conf.run_slots,
	    vault_conf.run_slots_user, vault_conf.run_slots_org, &rp->slot,
	    &used)) != 0) {
		run_exits_read();
		rc = slots_claim(a->user_id, a->org_id, vault_conf.run_slots,
		    vault_conf.run_slots_user, vault_conf.run_slots_org,
		    &rp->slot, &used);
	}
	switch (rc) {
	case SLOTS_FULL:
		resp_error(resp, 429, "the server is busy running other jobs "
		    "— try again in a moment");
		return (-1);
	case SLOTS_USER:
		resp_error(resp, 429, "you already have %d server runs in "
		    "flight — wait for one to finish", used);
		return (-1);
	case SLOTS_ORG:
		resp_error(resp, 429, "your organization already has %d server "
		    "runs in flight — wait for one to finish", used);
		return (-1);
	}
	return (0);
}

/*
 * What the CLI gets, in a snapshot of its own (ended by run_argv_mask()):
 * a failure to resolve is the tool's, a 502 on record.
 */
static int
run_secrets(const struct auth *a, struct runp *rp, struct vault_resp *resp)
{
	if (store_read_begin() == -1) {
		db_fail(resp, "secrets");
		return (-1);
	}
	switch (run_inject(a->org_id, &rp->t, rp->secs, rp->mask, &rp->env,
	    &rp->xargs, rp->subs, resp)) {
	case RUN_INJECT_OK:
		return (0);
	case RUN_INJECT_TOOMANY:
		resp_error(resp, 422, "the secrets of tool '%s' are too many "
		    "or too large to be masked (over %d parts or %d bytes) — "
		    "use fewer or smaller secrets", rp->t.name, REDSET_MAX,
		    REDSET_BYTES_MAX);
		return (-1);
	default:
		if (resp->status == 502) {
			store_read_end();
			resolution_refuse(a, rp->t.name, rp->args,
			    "server_run", resp);
		}
		return (-1);
	}
}

/* The argv as the record shows it, masked; the snapshot ends. */
static int
run_argv_mask(const struct auth *a, struct runp *rp)
{
	json_t	*masked;

	masked = argv_mask(a->org_id, rp->args);
	if (masked == NULL || (rp->argv = json_dumps(masked,
	    JSON_COMPACT)) == NULL)
		fatalx("%s: argv", __func__);
	json_decref(masked);
	store_read_end();
	return (0);
}

/*
 * Audit first: no committed row, nothing goes to exec (503).  The run,
 * which now holds the slot and the masked argv.
 */
static struct vrun *
run_record(struct vault_req *req, struct runp *rp, struct vault_resp *resp)
{
	const struct auth	*a = req->auth;
	struct vrun		*vr;
	int64_t			 audit_id;

	rp->t_audit = mono_ns();
	if ((audit_id = run_audit_start(a, rp->t.name, rp->argv)) == -1) {
		resp_error(resp, 503, "the audit log cannot be written — "
		    "nothing was run");
		return (NULL);
	}
	if ((vr = calloc(1, sizeof(*vr))) == NULL)
		fatal("%s: calloc", __func__);
	vr->runid = run_id_next();
	vr->reqid = req->reqid;
	vr->audit_id = audit_id;
	vr->slot = rp->slot;
	slots_started(rp->slot, audit_id);
	rp->slot = -1;
	vr->org_id = a->org_id;
	vr->user_id = a->user_id;
	strlcpy(vr->tool, rp->t.name, sizeof(vr->tool));
	strlcpy(vr->bin, rp->bin, sizeof(vr->bin));
	vr->argv = rp->argv;
	rp->argv = NULL;
	return (vr);
}

/* The worker's index above, a count below that never reads 0. */
static uint32_t
run_id_next(void)
{
	uint32_t	 id;

	id = (slots_worker() << 24) | (next_runid & RUNID_COUNT_MASK);
	if (++next_runid > RUNID_COUNT_MASK)
		next_runid = 1;
	return (id);
}

/*
 * The order for exec (proto.c): bin, argv (bin, args, inject's), env,
 * mask, and the egress hosts a run through the proxy names.
 */
static void
run_order(struct runp *rp)
{
	struct run_order	 o;
	const char		*hosts[RUN_HOSTS_MAX];
	const char		**argv;
	size_t			*len, i, n;
	json_t			*v;

	n = 1 + json_array_size(rp->args) + rp->xargs.n;
	if ((argv = calloc(n, sizeof(*argv))) == NULL ||
	    (len = calloc(n, sizeof(*len))) == NULL)
		fatal("%s: calloc", __func__);
	argv[0] = rp->bin;
	len[0] = strlen(rp->bin);
	n = 1;
	json_array_foreach(rp->args, i, v) {
		argv[n] = json_string_value(v);
		len[n++] = json_string_length(v);
	}
	for (i = 0; i < rp->xargs.n; i++) {
		argv[n] = rp->xargs.v[i];
		len[n++] = rp->xargs.len[i];
	}
	memset(&o, 0, sizeof(o));
	o.bin = rp->bin;
	o.argv = argv;
	o.argvlen = len;
	o.argc = n;
	o.env = rp->env.v;
	o.envlen = rp->env.len;
	o.envc = rp->env.n;
	o.mask = rp->mask->v;
	o.masklen = rp->mask->len;
	o.nmask = rp->mask->n;
	if (rp->network == RUN_NET_PROXY) {
		o.hosts = hosts;
		o.nhosts = egress_list_hosts(rp->egress, hosts, RUN_HOSTS_MAX);
	}
	run_order_pack(&rp->order, &o);
	free(argv);
	free(len);
}

/* The run to exec, "accepted" to the frontend; vr is in flight. */
static void
run_send(struct vault_req *req, struct runp *rp, struct vrun *vr)
{
	struct run_start	 rs;

	memset(&rs, 0, sizeof(rs));
	rs.runid = vr->runid;
	rs.timeout_s = rp->timeout;
	rs.rlimits = vault_conf.run_rlimits;
	rs.stream = req->stream;
	rs.cpu = vault_conf.run_cpu;
	rs.filesize = vault_conf.run_filesize;
	rs.network = rp->network;
	rs.tool_id = rp->t.id;
	/* The grant first: the run's first connection finds it there. */
	if (rp->network == RUN_NET_PROXY) {
		run_grant(rp, vr, req->auth);
		vr->granted = 1;
	}
	vault_run_start(req->reqid, &rs, rp->order.buf, rp->order.len,
	    req->auth->org_id, req->auth->user_id);
	TAILQ_INSERT_TAIL(&vruns, vr, entry);
	/* bench/run.sh -v: the vault's share, in µs. */
	if (log_getverbose() >= 1)
		log_debug("run %u: vault us: token %lld, decide %lld, "
		    "audit %lld", vr->runid,
		    (long long)(rp->t_in - req->t_in) / 1000,
		    (long long)(rp->t_audit - rp->t_in) / 1000,
		    (long long)(mono_ns() - rp->t_audit) / 1000);
}

/*
 * IMSG_EGRESS_GRANT (tregd.h) of a run through the proxy: what it may
 * reach, the placeholders of a keyless one with their values, its
 * redaction set; vault_egress.c keeps who ran it for its requests'
 * records.
 */
static void
run_grant(struct runp *rp, const struct vrun *vr, const struct auth *a)
{
	struct egress_grant	 g;
	struct egress_who	 w;
	struct pack		 pk;
	const char		*tls;

	tls = json_string_value(json_object_get(rp->t.cli, "tls"));
	memset(&g, 0, sizeof(g));
	g.runid = vr->runid;
	g.timeout_s = rp->timeout;
	g.allow_private = vault_conf.relay_allow_private;
	g.maxconns = vault_conf.run_egress_conns;
	g.passthrough = rp->subs == NULL && tls != NULL &&
	    strcmp(tls, "passthrough") == 0;
	g.org_id = vr->org_id;
	g.user_id = vr->user_id;
	g.tool_id = rp->t.id;
	g.audit_id = vr->audit_id;
	memset(&w, 0, sizeof(w));
	w.runid = vr->runid;
	w.audit_id = vr->audit_id;
	w.who = a;
	w.tool = vr->tool;
	w.project_id = rp->t.project_id;
	pack_init(&pk);
	egress_grant_pack(&pk, rp->egress, rp->subs, rp->mask);
	egress_run_start(&w, &g, pk.buf, pk.len);
	pack_free(&pk);
}

/* "NAME=value" in a fresh buffer (freezero'd with the strv). */
static char *
env_kv(const char *name, const char *val, size_t vlen, size_t *len)
{
	size_t	 n = strlen(name);
	char	*kv;

	if ((kv = malloc(n + 1 + vlen + 1)) == NULL)
		fatal("%s: malloc", __func__);
	memcpy(kv, name, n);
	kv[n] = '=';
	memcpy(kv + n + 1, val, vlen);
	kv[n + 1 + vlen] = '\0';
	*len = n + 1 + vlen;
	return (kv);
}

/*
 * A via: argv entry's words into xargs.  Only a word made of the secret
 * (one with the {secret} placeholder) is in the redaction set: "--token"
 * of ["--token", "{secret}"] is a flag's name, and masking it would mask
 * that word wherever the CLI prints it (its help text, say).
 */
static int
run_inject_argv(const struct tool_row *t, struct isecret *sc, json_t *e,
    struct redset *mask, struct strv *xargs, struct psubs *subs,
    struct vault_resp *resp)
{
	const char	*w;
	json_t		*v;
	char		*val;
	size_t		 n, vlen;
	int		 rc;

	json_array_foreach(json_object_get(e, "argv"), n, v) {
		w = json_string_value(v);
		if (subs != NULL && !sc->param && w != NULL &&
		    strstr(w, "{secret}") != NULL) {
			/* Keyless: the word holds the placeholder. */
			if ((rc = run_keyless_value(t, sc, e, w, mask, subs,
			    resp, &val, &vlen)) != RUN_INJECT_OK)
				return (rc);
			strv_add(xargs, val, vlen);
			continue;
		}
		if (inject_value(sc, e, w, t->name, resp, &val, &vlen) == -1)
			return (RUN_INJECT_FAIL);
		strv_add(xargs, val, vlen);
		if (!sc->param && w != NULL && strstr(w, "{secret}") != NULL &&
		    redset_add(mask, val, vlen) == -1)
			return (RUN_INJECT_TOOMANY);
	}
	return (RUN_INJECT_OK);
}

/*
 * A keyless run's value of inject entry e (SPEC 6a): the real value (as
 * inject_value() takes it out of the secret) into mask and subs, which
 * gives its placeholder; tmpl (a format or an argv word) applied to the
 * placeholder into *out.  A value too poor in letters and digits to
 * stand in for is the tool's to fix: 502.
 */
static int
run_keyless_value(const struct tool_row *t, struct isecret *sc, json_t *e,
    const char *tmpl, struct redset *mask, struct psubs *subs,
    struct vault_resp *resp, char **out, size_t *outlen)
{
	const struct psub	*ps;
	const char		*name;
	char			*val;
	size_t			 vlen;
	int			 rc;

	if (inject_value(sc, e, NULL, t->name, resp, &val, &vlen) == -1)
		return (RUN_INJECT_FAIL);
	name = json_string_value(json_object_get(e, "name"));
	ps = psubs_get(subs, val, vlen, json_string_value(json_object_get(e,
	    "sign")), name);
	rc = redset_add(mask, val, vlen);
	freezero(val, vlen + 1);
	if (rc == -1)
		return (RUN_INJECT_TOOMANY);
	if (ps == NULL) {
		resp_error(resp, 502, "tool '%s': the secret '%s' has too few "
		    "letters and digits for a placeholder — give the profile "
		    "\"keyless\": false", t->name, sc->name);
		return (RUN_INJECT_FAIL);
	}
	*out = inject_format(tmpl, ps->ph, ps->phlen, outlen);
	return (RUN_INJECT_OK);
}

/*
 * The inject entries, each with its secret put in (env entries as
 * NAME=value into env, argv words into xargs, what is secret of them
 * into mask), then the profile's plain settings (cli.env, never masked:
 * they are not secrets), then the other secrets the tool is bound to
 * into mask.  A keyless run (subs non-NULL) gets the placeholders of
 * its values instead, the values going into mask and subs; params are
 * settings and go in as they are.  RUN_INJECT_FAIL with resp set (502
 * when an entry does not resolve, the tool's fault).
 */
static int
run_inject(int64_t org, const struct tool_row *t, struct secs *secs,
    struct redset *mask, struct strv *env, struct strv *xargs,
    struct psubs *subs, struct vault_resp *resp)
{
	struct isecret	*sc;
	const char	*via, *name;
	json_t		*e;
	char		*val, *kv;
	size_t		 i, vlen, len;
	int64_t		 sid;
	int		 rc;

	json_array_foreach(json_object_get(t->cli, "inject"), i, e) {
		if (inject_resolve(t, e, &sid) == -1) {
			resp_error(resp, 502, "tool '%s': cli.inject[%zu] does "
			    "not resolve to exactly one secret — give the "
			    "entry a secret_id or from_binding", t->name, i);
			return (RUN_INJECT_FAIL);
		}
		if ((sc = secs_get(secs, org, sid, t->name, resp)) == NULL)
			return (RUN_INJECT_FAIL);
		via = json_string_value(json_object_get(e, "via"));
		if (via != NULL && strcmp(via, "argv") == 0) {
			if ((rc = run_inject_argv(t, sc, e, mask, xargs, subs,
			    resp)) != RUN_INJECT_OK)
				return (rc);
			continue;
		}
		name = json_string_value(json_object_get(e, "name"));
		if (name == NULL || *name == '\0') {
			resp_error(resp, 502, "tool '%s': cli.inject[%zu] has "
			    "no variable name", t->name, i);
			return (RUN_INJECT_FAIL);
		}
		if (subs != NULL && !sc->param) {
			if ((rc = run_keyless_value(t, sc, e, json_string_value(
			    json_object_get(e, "format")), mask, subs, resp,
			    &val, &vlen)) != RUN_INJECT_OK)
				return (rc);
			kv = env_kv(name, val, vlen, &len);
			strv_add(env, kv, len);
			freezero(val, vlen + 1);
			continue;
		}
		if (inject_value(sc, e, json_string_value(json_object_get(e,
		    "format")), t->name, resp, &val, &vlen) == -1)
			return (RUN_INJECT_FAIL);
		rc = !sc->param ? redset_add(mask, val, vlen) : 0;
		kv = env_kv(name, val, vlen, &len);
		strv_add(env, kv, len);
		freezero(val, vlen + 1);
		if (rc == -1)
			return (RUN_INJECT_TOOMANY);
	}
	json_object_foreach(json_object_get(t->cli, "env"), name, e) {
		if (!json_is_string(e))
			continue;
		kv = env_kv(name, json_string_value(e), json_string_length(e),
		    &len);
		strv_add(env, kv, len);
	}
	if (secs_tool(secs, org, t, resp) == -1)
		return (RUN_INJECT_FAIL);
	for (i = 0; i < secs->n; i++)
		if (redset_secret(mask, &secs->s[i]) == -1)
			return (RUN_INJECT_TOOMANY);
	return (RUN_INJECT_OK);
}

/* The host's, every worker's. */
int
run_slots_used(void)
{
	return (slots_used(0));
}

/*
 * The run's row, before it starts: who, what tool, the masked argv.  Its
 * id, or -1 when it could not be committed.
 */
static int64_t
run_audit_start(const struct auth *a, const char *tool, const char *argv)
{
	struct store_run	 r;
	char			 now[32];
	int64_t			 id;

	now_iso(now, sizeof(now));
	memset(&r, 0, sizeof(r));
	r.org_id = a->org_id;
	r.user_id = a->user_id;
	r.user_email = a->email;
	r.client = a->client;
	r.tool = tool;
	r.argv = argv;
	r.created_at = now;
	r.host = slots_instance();
	if (store_run_insert(&r, &id) == -1) {
		log_warnx("run of '%s': audit row not written, nothing run: %s",
		    tool, store_error());
		return (-1);
	}
	return (id);
}

/*
 * How it ended, appended (the runs row itself is never changed): queued
 * for the commit at the end of this turn of the loop.  outcome is a
 * static string.
 */
static void
run_audit_end(const struct vrun *vr, const struct run_exit *rx,
    const char *outcome)
{
	struct vend		*v;
	struct timeval		 tv = { 0, 0 };

	if (nvends == capvends) {
		v = recallocarray(vends, capvends, capvends + 64,
		    sizeof(*vends));
		if (v == NULL)
			fatal("%s: recallocarray", __func__);
		vends = v;
		capvends += 64;
	}
	v = &vends[nvends++];
	memset(v, 0, sizeof(*v));
	now_iso(v->at, sizeof(v->at));
	strlcpy(v->tool, vr->tool, sizeof(v->tool));
	v->e.run_id = vr->audit_id;
	v->e.org_id = vr->org_id;
	v->e.outcome = outcome;
	v->e.has_exit = strcmp(outcome, "not_run") != 0;
	v->e.exit_code = rx->exit_code;
	v->e.duration_ms = rx->duration_ms;
	v->e.timed_out = rx->timed_out != 0;
	v->e.redacted = rx->redacted;
	v->e.truncated = rx->truncated & (RUN_TRUNC_STDOUT | RUN_TRUNC_STDERR);
	v->e.created_at = v->at;
	v->slot = vr->slot;
	if (!ev_ends_set) {
		evtimer_set(&ev_ends, run_ends_commit, NULL);
		ev_ends_set = 1;
	}
	if (!evtimer_pending(&ev_ends, NULL))
		evtimer_add(&ev_ends, &tv);
}

static void
run_ends_commit(int fd, short event, void *arg)
{
	run_ends_flush();
}

/*
 * The queued ends, in one transaction.  One that cannot be committed
 * (the database locked by another process, full, unreachable) is kept,
 * its run still holding its slot (GET /runs shows it running), and
 * tried again every RUN_ENDS_RETRY_MS until it is on record: an answered
 * run never reads "interrupted" while tregd runs.
 */
void
run_ends_flush(void)
{
	struct store_run_end	*e;
	struct timeval		 tv = { 0, RUN_ENDS_RETRY_MS * 1000 };
	size_t			 i, n = nvends;
	int64_t			 t0 = mono_ns();

	if (n == 0)
		return;
	if (ev_ends_set && evtimer_pending(&ev_ends, NULL))
		evtimer_del(&ev_ends);
	if ((e = calloc(n, sizeof(*e))) == NULL)
		fatal("%s: calloc", __func__);
	for (i = 0; i < n; i++) {
		e[i] = vends[i].e;
		e[i].created_at = vends[i].at;
	}
	if (store_run_ends_insert(e, n) == -1) {
		free(e);
		if (ends_failed++ == 0)
			log_warnx("the end of %zu runs cannot be recorded yet, "
			    "kept and tried again: %s", n, store_error());
		vault_metrics_db_error();
		evtimer_add(&ev_ends, &tv);
		return;
	}
	free(e);
	if (ends_failed > 0)
		log_info("the end of %zu runs recorded after %d tries", n,
		    ends_failed + 1);
	ends_failed = 0;
	nvends = 0;
	/*
	 * Only now is the run no longer in flight for every worker: one
	 * that reads the log in between shows it running, never
	 * interrupted.
	 */
	for (i = 0; i < n; i++)
		slots_release(vends[i].slot);
	if (log_getverbose() >= 1)
		log_debug("run ends: %zu committed together in %lld us", n,
		    (long long)(mono_ns() - t0) / 1000);
}

/*
 * What exec has said already, then the queued ends committed: before a
 * read of the run log, and before a run is refused for its slots.  exec
 * writes a run's exit to the vault before it answers the frontend, so a
 * client that got its answer finds its run ended here.
 */
void
run_exits_read(void)
{
	if (vault_read_peer(vault_exec) == -1)
		return;		/* its handler sees the error too */
	run_ends_flush();
}

/* On any worker: each started it in the table of slots. */
static int
run_in_flight(int64_t audit_id)
{
	return (slots_in_flight(audit_id));
}

/* IMSG_RUN_EXIT from exec: the end record, the slot, an error's answer. */
void
run_exit(uint32_t reqid, const struct run_exit *rxp)
{
	struct run_exit		 rx = *rxp;
	struct vault_resp	 resp;
	struct vrun		*vr;
	enum run_outcome	 outcome;

	TAILQ_FOREACH(vr, &vruns, entry)
		if (vr->runid == rx.runid)
			break;
	if (vr == NULL || vr->reqid != reqid)
		fatalx("%s: IMSG_RUN_EXIT for no run from exec", __func__);
	TAILQ_REMOVE(&vruns, vr, entry);
	/* Its placeholders are worth nothing from now on. */
	if (vr->granted)
		vault_egress_end(vr->runid);

	/* The slot goes with the end's commit: see run_ends_flush(). */
	if (rx.notfound || rx.failed) {
		/* Nothing ran: an answer, and not a run in GET /runs. */
		run_audit_end(vr, &rx, "not_run");
		memset(&resp, 0, sizeof(resp));
		if (rx.notfound)
			resp_error(&resp, 422, "CLI '%s' is not installed on "
			    "the treg server", vr->bin);
		else
			resp_error(&resp, 500, "internal error: the run of "
			    "'%s' could not be started", vr->tool);
		vault_respond(vr->reqid, &resp);
		json_decref(resp.body);
		goto done;
	}

	/* exec answered the frontend itself: the end is for the record. */
	outcome = run_outcome_of(&rx);
	log_info("run %u ended: tool %s user %lld %s exit %d %u ms %u redacted",
	    vr->runid, vr->tool, (long long)vr->user_id,
	    run_outcome_name(outcome), rx.exit_code, rx.duration_ms,
	    rx.redacted);
	run_audit_end(vr, &rx, run_outcome_name(outcome));
	vault_metrics_run(outcome, rx.duration_ms, rx.redacted);
 done:
	free(vr->argv);
	free(vr);
}

/* ------------------------------------------------------------------ */
/* Secrets of a run.                                                   */

/* The secrets of the tool's bindings (and its recorded uses). */
static int
secs_tool(struct secs *ss, int64_t org, const struct tool_row *t,
    struct vault_resp *resp)
{
	json_t		*b;
	int64_t		 ids[RUN_SECRETS_MAX], id;
	size_t		 i, n = 0, m;

	json_array_foreach(t->bindings, i, b) {
		id = json_integer_value(json_object_get(b, "secret_id"));
		if (id > 0 && n < RUN_SECRETS_MAX)
			ids[n++] = id;
	}
	if (store_tool_secret_ids(t->id, ids + n, RUN_SECRETS_MAX - n,
	    &m) == -1) {
		db_fail(resp, "tool secrets");
		return (-1);
	}
	n += m;
	for (i = 0; i < n; i++)
		if (secs_get(ss, org, ids[i], t->name, resp) == NULL)
			return (-1);
	return (0);
}

/* Takes s (len bytes and a NUL). */
static void
strv_add(struct strv *sv, char *s, size_t len)
{
	if (sv->n >= sizeof(sv->v) / sizeof(sv->v[0]))
		fatalx("%s: too many strings", __func__);
	sv->v[sv->n] = s;
	sv->len[sv->n++] = len;
}

static void
strv_clear(struct strv *sv)
{
	size_t	 i;

	for (i = 0; i < sv->n; i++)
		freezero(sv->v[i], sv->len[i] + 1);
	sv->n = 0;
}

/* ------------------------------------------------------------------ */
/* The run log.                                                        */

/* A page of GET /runs being filled. */
struct runs_page {
	const struct auth	*auth;	/* NULL: tregctl, every tool */
	json_t			*list;
	size_t			 limit;
	int64_t			*flight;	/* in flight before the read */
	size_t			 nflight;
	int64_t			*alive;		/* hosts_alive() */
	size_t			 nalive;
};

/*
 * A row without its end is running if its run was in flight before the
 * read began (its end, committed after, is not in what the read sees;
 * its slot may be free by now) or is in flight now (its slot is marked
 * just after its row is committed).  A run another host started is
 * running while that host is alive (vault_hosts.c): only its host knows
 * its slots.
 */
static int
runs_row_running(const struct runs_page *pg, const struct store_runs_row *r)
{
	size_t	 i;

	if (r->host != 0 && r->host != slots_instance())
		return (hosts_is_alive(r->host, pg->alive, pg->nalive));
	for (i = 0; i < pg->nflight; i++)
		if (pg->flight[i] == r->id)
			return (1);
	return (run_in_flight(r->id));
}

static int
runs_row(const struct store_runs_row *r, void *arg)
{
	struct runs_page	*pg = arg;
	json_t			*o, *argv, *outcome;
	char			 id[32];

	/* The walk reads only the tools runs_access_names() allows. */
	snprintf(id, sizeof(id), "%c%lld", r->src, (long long)r->id);
	argv = json_loads(r->argv, 0, NULL);
	if (!json_is_array(argv)) {
		json_decref(argv);
		argv = json_array();
	}
	if (*r->outcome != '\0')
		outcome = json_string(r->outcome);
	else if (r->src == 's')
		outcome = json_string(runs_row_running(pg, r) ?
		    "running" : run_outcome_name(RUN_INTERRUPTED));
	else
		outcome = json_null();
	o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:s,s:s}",
	    "id", id, "user_email", r->user_email, "tool", r->tool,
	    "argv", argv,
	    "exit_code", r->has_exit ? json_integer(r->exit_code) :
	    json_null(),
	    "duration_ms", r->has_duration ? json_integer(r->duration_ms) :
	    json_null(),
	    "outcome", outcome,
	    "where", r->src == 's' ? "server" : "local",
	    "created_at", r->created_at);
	if (o == NULL)
		fatalx("%s: json", __func__);
	/* A server run's egress requests (GET /calls?run_id= lists them). */
	if (r->src == 's')
		json_object_set_new(o, "requests", json_integer(r->requests));
	else
		json_object_set_new(o, "requests", json_null());
	/* The runtime it came from (X-Treg-Client), "" unreported. */
	json_object_set_new(o, "client", json_string(r->client != NULL ?
	    r->client : ""));
	if (pg->auth == NULL)	/* tregctl names the org of each row */
		json_object_set_new(o, "org", json_string(r->org_slug));
	json_array_append_new(pg->list, o);
	return (json_array_size(pg->list) >= pg->limit);
}

/*
 * Server runs and local grants, newest first, of one org (0: all), older
 * than the row before ('s' or 'l' and its id; 0: none); auth non-NULL
 * hides the runs of tools it may not use.  NULL: the database failed;
 * *gone when the before row does not exist.
 */
static int
runs_access_tool(const struct store_tool_item *t, void *arg)
{
	json_array_append_new(arg, json_string(t->name));
	return (0);
}

/*
 * The tool names an access list lets a member see runs of: each name,
 * and the tools of each name that is a skill's.  NULL: the database
 * failed.
 */
static json_t *
runs_access_names(int64_t org, json_t *access)
{
	struct store_ref	 ref;
	struct store_sel	 sel;
	json_t			*names, *v;
	size_t			 i;
	int			 rc;

	if ((names = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	json_array_foreach(access, i, v) {
		if (!json_is_string(v))
			continue;
		json_array_append(names, v);
		rc = store_ref_get(STORE_BUNDLE, org, 0, json_string_value(v),
		    &ref);
		if (rc == 1)
			continue;
		memset(&sel, 0, sizeof(sel));
		sel.org = org;
		sel.bundle = ref.id;
		sel.brief = 1;
		if (rc == -1 || store_tools(&sel, runs_access_tool,
		    names) == -1) {
			json_decref(names);
			return (NULL);
		}
	}
	return (names);
}

static json_t *
runs_query(int64_t org, const struct auth *a, int limit, char bsrc,
    int64_t bid, int *gone)
{
	struct runs_page	 pg;
	const char		**tools = NULL;
	size_t			 i, n = 0;
	json_t			*v, *names;
	int			 rc;

	pg.auth = a;
	pg.limit = limit;
	if ((pg.list = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	*gone = 0;
	/*
	 * A restricted caller's page holds the tools it names and those of
	 * the skills it names, no other.
	 */
	names = NULL;
	if (a != NULL && a->role != ROLE_OWNER &&
	    (json_is_array(a->tool_access) || a->projects_scoped)) {
		/* Scoped to projects: the tools it may use, by name. */
		names = a->projects_scoped ? project_tool_names(org, a) :
		    runs_access_names(org, a->tool_access);
		if (names == NULL) {
			json_decref(pg.list);
			return (NULL);
		}
		if ((tools = calloc(json_array_size(names) + 1,
		    sizeof(*tools))) == NULL)
			fatal("%s: calloc", __func__);
		json_array_foreach(names, i, v)
			tools[n++] = json_string_value(v);
	}
	/* Before the read's snapshot: see runs_row_running(). */
	pg.flight = slots_in_flight_ids(&pg.nflight);
	if ((pg.alive = hosts_alive(&pg.nalive)) == NULL)
		rc = -1;
	else
		rc = store_runs_page_tools(org, tools, n, bsrc, bid, limit,
		    runs_row, &pg);
	free(pg.alive);
	free(pg.flight);
	free(tools);
	json_decref(names);
	if (rc != 0) {
		json_decref(pg.list);
		*gone = rc == 1;
		return (NULL);
	}
	return (pg.list);
}

static void
runs_get(struct vault_req *req, struct vault_resp *resp)
{
	char		 buf[32];
	const char	*err = NULL;
	json_t		*list;
	long long	 limit = RUNS_LIMIT_DEF, bid = 0;
	int		 gone;

	if (query_param(req->query, "limit", buf, sizeof(buf)) == 0) {
		limit = strtonum(buf, 1, RUNS_LIMIT_MAX, &err);
		if (err != NULL) {
			resp_error(resp, 422, "limit must be an integer from "
			    "1 to %d", RUNS_LIMIT_MAX);
			return;
		}
	}
	if (query_param(req->query, "before_id", buf, sizeof(buf)) == 0) {
		if ((buf[0] == 's' || buf[0] == 'l') && buf[1] != '\0')
			bid = strtonum(buf + 1, 1, LLONG_MAX, &err);
		if (bid == 0) {
			resp_error(resp, 422, "before_id must be the id of a "
			    "run (s12 or l7)");
			return;
		}
	}
	run_exits_read();
	if ((list = runs_query(req->auth->org_id, req->auth, limit, buf[0],
	    bid, &gone)) == NULL) {
		if (gone)
			resp_error(resp, 422, "before_id: no such run");
		else
			db_fail(resp, "runs");
		return;
	}
	resp_ok(resp, list);
}

int
ctl_show_runs(const struct ctl_request *cr, json_t **reply)
{
	int64_t		 org = 0;
	int		 limit = cr->limit, gone;

	if (limit <= 0)
		limit = RUNS_LIMIT_DEF;
	if (limit > RUNS_LIMIT_MAX)
		limit = RUNS_LIMIT_MAX;
	if (cr->org[0] != '\0') {
		switch (store_org_by_slug(cr->org, &org)) {
		case 0:
			break;
		case 1:
			*reply = ctl_errorf("no org '%s'", cr->org);
			return (-1);
		default:
			*reply = ctl_errorf("database error");
			return (-1);
		}
	}
	run_exits_read();
	if ((*reply = runs_query(org, NULL, limit, 0, 0, &gone)) == NULL) {
		*reply = ctl_errorf("database error: %s", store_error());
		return (-1);
	}
	return (0);
}
