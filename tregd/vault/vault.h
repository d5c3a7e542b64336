/*
 * The vault's internal interface, shared by its files: vault.c (process,
 * dispatch, authentication), vault_keyring.c (keys, sealing),
 * vault_org.c (users, orgs, invites, members, agents), vault_tool.c
 * (tools; with vault_secret.c, vault_skill.c and vault_registry.c the
 * registry: secrets, skills and bundles), vault_run.c (server runs, grants,
 * audit reads, deny rules), vault_ctl.c (the tregctl commands).  They
 * reach the database only through store.h.
 */

#ifndef VAULT_H
#define VAULT_DB_SOCKET_DIR	".pgsocket"	/* a Unix socket's, bound in */
#define VAULT_H

#include <jansson.h>

#include "proc.h"
#include "store.h"
#include "tregd.h"
#include "util.h"

enum role {
	ROLE_NONE,
	ROLE_VIEWER,
	ROLE_MEMBER,
	ROLE_ADMIN,
	ROLE_OWNER
};

/*
 * How the caller authenticated: a membership's token (a person's or an
 * agent's, one org), or a person's identity token (vault_identity.c),
 * acting in the org X-Treg-Org names, or in none (membership_id 0).
 */
enum auth_kind {
	AUTH_MEMBERSHIP,
	AUTH_IDENTITY
};

/* The projects a membership may use: at most this many ids. */
#define PROJECT_ACCESS_MAX	64

/* The caller: one membership, i.e. one (user, org) pair and a role. */
struct auth {
	enum auth_kind	 kind;
	int64_t		 membership_id;
	int64_t		 user_id;
	int64_t		 org_id;
	enum role	 role;
	int		 is_agent;
	int		 local_run_enabled;
	json_t		*tool_access;	/* NULL: every tool; else an array */
	/* project_access: scoped 0, every project; else these ids only. */
	int		 projects_scoped;
	size_t		 nprojects;
	int64_t		 projects[PROJECT_ACCESS_MAX];
	char		 email[256];
	char		 org_slug[NAME_LEN_MAX + 1];
	/* X-Treg-Client of this request, for its audit row (never cached). */
	char		 client[CLIENT_NAME_MAX + 1];
};

struct vault_req {
	uint32_t	 reqid;		/* the frontend's request id */
	enum api_route	 route;
	struct auth	*auth;		/* NULL on open routes */
	int64_t		 id1;
	int64_t		 id2;
	const char	*name;		/* path parameter, "" when none */
	const char	*query;		/* raw query string, "" when none */
	json_t		*body;		/* parsed object, NULL when no body */
	int		 proof_ok;
	int		 stream;
	int64_t		 t_in;		/* mono_ns() when it came in */
	int64_t		 oauth_wait;	/* answered after this secret's
					   refresh, asked again (vault.c) */
};

/*
 * A handler fills the response: status and a JSON body.  status 0 means
 * the answer goes another way (a server run answers through exec).
 */
struct vault_resp {
	int		 status;
	json_t		*body;
	char		*text;		/* or the body as JSON text (resp_text) */
	size_t		 textlen;
};

typedef void (*vault_handler)(struct vault_req *, struct vault_resp *);

/*
 * Each file of the vault exports its routes.  min_role ROLE_NONE: open
 * (no token needed); ROLE_VIEWER: any valid token; higher: that role or
 * above in the token's org, else 403 with the role's phrase.
 */
struct vault_route {
	enum api_route	 route;
	enum role	 min_role;
	vault_handler	 handler;
};
extern const struct vault_route vault_org_routes[];	/* vault_org.c */
extern const struct vault_route vault_tool_routes[];	/* vault_tool.c */
extern const struct vault_route vault_secret_routes[];	/* vault_secret.c */
extern const struct vault_route vault_skill_routes[];	/* vault_skill.c */
extern const struct vault_route vault_run_routes[];	/* vault_run.c */
extern const struct vault_route vault_me_routes[];	/* vault_me.c */
extern const struct vault_route vault_identity_routes[];
							/* vault_identity.c */
/*
 * vault_identity.c: hash, X-Treg-Org: an identity token's caller (0),
 * 2 when X-Treg-Org names no org of theirs (none chosen then), 1 no
 * such token, -1 the database failed.
 */
int	identity_auth(const uint8_t [TOKEN_HASH_LEN], const char *,
	    struct auth *);
int	identity_call_auth(const struct call_request *, struct auth *,
	    struct vault_resp *);
/*
 * The caller may take the route (identity_auth's rc): in an org, with
 * the role it needs; an identity token in none, the person's routes
 * only.  0, or -1 answered.
 */
int	auth_enter(struct vault_req *, struct vault_resp *, int, enum role);
/* A new identity token of the user into token (IDENTITY_TOKEN_LEN + 1). */
int	identity_mint(int64_t, char *);
#define IDENTITY_TOKEN_PREFIX	"eyJzY3AiOiJ0ZWFtIn0."
#define IDENTITY_TOKEN_LEN	(sizeof(IDENTITY_TOKEN_PREFIX) - 1 + TOKEN_LEN)
/* treg's words, which its client reads to say how to pick an org. */
#define IDENTITY_CHOOSE_ORG	"choose an org (send X-Treg-Org)"
extern const struct vault_route vault_mail_routes[];	/* vault_mail.c */

/*
 * vault_req.c: the process's state (set by vault.c), the answers and the
 * sends to the other processes (the only imsgs below vault.c), the
 * fields of a request.
 */
extern struct tregd_conf	 vault_conf;
extern const char		*vault_root;	/* "" after the chroot */
extern struct procinfo		 vault_procs[PROCINFO_MAX];
extern struct imsgev		*vault_parent, *vault_frontend, *vault_exec;
extern struct imsgev		*vault_relay;
void		 vault_asker(int64_t, int64_t);	/* org, user answered */
void		 vault_send(uint32_t, int, const char *, size_t);
void		 vault_respond(uint32_t, struct vault_resp *);
void		 vault_keyring_changed(void);	/* tell the other workers */
void		 vault_ctl_reload(uint32_t);	/* the parent reloads */
void		 vault_log_verbose(int);	/* the parent tells everyone */
/* A run order to exec, "accepted" (org, user) to the frontend. */
void		 vault_run_start(uint32_t, const struct run_start *,
		    const void *, size_t, int64_t, int64_t);
void		 vault_call_start(uint32_t, const struct call_start *,
		    const void *, size_t);		/* to the relay */
/* Keyless runs' egress, to the relay (tregd.h's seam). */
void		 vault_egress_grant(const struct egress_grant *, const void *,
		    size_t);
void		 vault_egress_revoke(uint32_t);
void		 vault_egress_verdict(const struct egress_verdict *,
		    const char *);
/* A refused call's status and JSON detail (org, user: 0 unknown). */
void		 vault_call_refused(uint32_t, int, int64_t, int64_t,
		    const char *, size_t);
/* What a peer sent, taken in now: 0, or -1 when it cannot be read. */
int		 vault_read_peer(struct imsgev *);
void		 vault_cork(int);	/* 1: hold the sends, 0: send */
void		 vault_mail_send(const struct mail_send *);
/*
 * fetchid, allow_private, timeout, packed request: IMSG_FETCH_START (the
 * relay).
 */
void		 vault_fetch_start(uint32_t, int, uint32_t, const void *,
		    size_t);	/* by the parent */
void		 db_fail(struct vault_resp *, const char *);	/* 500, 503 + log */
/* store_begin(), store_commit(), or db_fail(): 0, or -1 with resp set. */
int		 db_begin(struct vault_resp *);
int		 db_commit(struct vault_resp *);
void		 resp_error(struct vault_resp *, int, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
/* The transaction rolled back, then resp_error(). */
void		 resp_refuse(struct vault_resp *, int, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
void		 resp_ok(struct vault_resp *, json_t *);	/* steals */
/* 200 with a body already written as JSON text (malloc'd; steals). */
void		 resp_text(struct vault_resp *, char *, size_t);
void		 now_iso(char *, size_t);		/* ISO 8601 UTC */
void		 iso_time(int64_t, char *, size_t);
/* Field access: 0 ok (absent optional: *out untouched), -1 response set. */
int		 body_str(struct vault_req *, struct vault_resp *,
		    const char *, int, size_t, const char **);
int		 body_bool(struct vault_req *, struct vault_resp *,
		    const char *, int, int *);
int		 body_int(struct vault_req *, struct vault_resp *,
		    const char *, int, int64_t, int64_t, int64_t *);
int		 valid_name(const char *);	/* 1..128 bytes, no controls */
int		 json_has_nul(json_t *);	/* any string with a NUL */
int		 query_param(const char *, const char *, char *, size_t);
/* A tregctl answer's {"error": "..."}. */
json_t		*ctl_errorf(const char *, ...)
		    __attribute__((__format__ (printf, 1, 2)));

/* vault_access.c: who a token is, the roles, who may use a tool. */
int		 auth_lookup(const uint8_t [TOKEN_HASH_LEN], struct auth *);
void		 auth_clear(struct auth *);
enum role	 role_from_name(const char *);
const char	*role_name(enum role);
int		 require_role(struct vault_req *, struct vault_resp *,
		    enum role);
/* The access list names it; owners and a null list: every name. */
int		 access_allows(const struct auth *, const char *);
/*
 * May the member use the tool: its access list names the tool or the
 * skill it came with (bundle, "" or NULL: none), and the tool is
 * org-wide (project 0) or in one of the member's projects (treg's two
 * axes, AND).  The one rule for runs, grants, calls, listings and the
 * logs; tool_access_check() answers 403 when not, in treg's wording.
 */
int		 tool_usable(const struct auth *, const char *, const char *,
		    int64_t);
/* The project scope alone: tool project 0 (org-wide) or one of them. */
int		 project_allows(const struct auth *, int64_t);
/* A project_access column (JSON, NULL) into the caller: 0, -1 bad. */
int		 project_access_load(const char *, struct auth *);
struct tool_row;
int		 tool_access_check(const struct auth *, const struct tool_row *,
		    struct vault_resp *);
/* The caller's membership in the org named by the path (/orgs/{id}). */
struct org_ctx {
	int64_t		 org_id;
	int64_t		 membership_id;
	enum role	 role;
	char		 slug[NAME_LEN_MAX + 1];
	char		 name[NAME_LEN_MAX + 1];
};
/* Membership of at least the role, else 404 or 403 set: 0 or -1. */
int		 org_enter(struct vault_req *, struct vault_resp *, enum role,
		    struct org_ctx *);

/*
 * tregctl commands served by the vault's files (vault_ctl.c dispatches).
 * Each returns 0 with *reply the JSON answer, or -1 with *reply
 * {"error": "..."}.
 */
int		 ctl_show_users(const struct ctl_request *, json_t **);
int		 ctl_show_orgs(const struct ctl_request *, json_t **);
int		 ctl_user_add(const struct ctl_request *, json_t **);
int		 ctl_token_revoke(const struct ctl_request *, json_t **);
int		 ctl_org_delete(const struct ctl_request *, json_t **);
int		 ctl_show_tools(const struct ctl_request *, json_t **);
int		 ctl_key_rotate(const struct ctl_request *, json_t **);
int		 ctl_show_runs(const struct ctl_request *, json_t **);
int		 ctl_show_audit(const struct ctl_request *, json_t **);
int		 ctl_show_tokens(const struct ctl_request *, json_t **);
int		 ctl_identity_revoke(const struct ctl_request *, json_t **);
/* vault_org.c, for the others: logged, rolled back, *reply said: -1. */
int		 ctl_fail(const char *, json_t **);
/* cr->email's user, a transaction begun: 0; or -1 with *reply. */
int		 ctl_user_of(const struct ctl_request *, char *, size_t,
		    int64_t *, json_t **);

/* vault_org.c */
int		 email_normalize(const char *, char *, size_t);
void		 org_slugify(const char *, char *, size_t);
/* An agent's token acting as a user: 403 set, -1; else 0. */
int		 org_refuse_machine(struct vault_req *, struct vault_resp *);
/* The user of an email, made unless it exists: its id, is it an agent. */
int		 user_ensure(const char *, int, int64_t *, int *);
/* user, org, role, access, local_run, agent_name, token: 0, -1, conflict */
int		 membership_new(int64_t, int64_t, enum role, const char *, int,
		    const char *, char *);
int		 body_email(struct vault_req *, struct vault_resp *, char *,
		    size_t);
int		 body_email_person(struct vault_resp *, const char *);

/* vault_member.c */
extern const struct vault_route vault_member_routes[];
/* An invite being accepted (vault_member.c, vault_identity.c). */
struct invite_found {
	int64_t		 id;
	int64_t		 org_id;
	int64_t		 expires;
	enum role	 role;
	int		 local_run;
	int		 used;
	char		*access;
	char		 email[STORE_EMAIL_MAX + 1];
	char		 slug[NAME_LEN_MAX + 1];
	char		 name[NAME_LEN_MAX + 1];
};
int		 invite_copy(const struct store_invite *, void *);
/* The invite found (rc 1: none) for this email: 0, or -1 answered. */
int		 invite_check(int, const struct invite_found *, const char *,
		    struct vault_resp *);
/* Its person joins (a membership, its token into token): 0, -1. */
int		 invite_join(const struct invite_found *, const char *, char *,
		    int64_t *, struct vault_resp *);

/* vault_ctl.c: a tregctl command (vault.c holds the connections). */
#define CTL_LATER		1	/* the parent answers: a reload */
int		 ctl_command(uint32_t, const struct ctl_request *, json_t **);
json_t		*ctl_reload_reply(const struct ctl_reload_done *, int *);

/* vault_run.c */
/* IMSG_RUN_EXIT from exec, for the run of request reqid. */
void		 run_exit(uint32_t, const struct run_exit *);
void		 run_ends_flush(void);	/* the ends queued, committed */
void		 run_exits_read(void);	/* exec's word taken in, committed */
int		 run_slots_used(void);

/* vault_hosts.c: the hosts alive on the database */
void		 hosts_prepare(const char *);
void		 hosts_start(int);
void		 hosts_stop(void);
int64_t		*hosts_alive(size_t *);
int		 hosts_is_alive(int64_t, const int64_t *, size_t);

/* vault_slots.c: the host's run slots, shared by the workers. */
#define SLOTS_FULL		1	/* every run slot is taken */
#define SLOTS_USER		2	/* the user's share is */
#define SLOTS_ORG		3	/* the org's share is */
void		 slots_init(int, uint32_t);
uint32_t	 slots_worker(void);
int		 slots_claim(int64_t, int64_t, int, int, int, int *, int *);
void		 slots_started(int, int64_t);
void		 slots_release(int);
int		 slots_in_flight(int64_t);
int64_t		*slots_in_flight_ids(size_t *);
int64_t		 slots_instance(void);	/* this start of tregd */
int		 slots_used(int);	/* 1: this worker's only */

/* vault_inject.c: a secret turned into what a CLI sees; a run's mask set. */
/* The bytes of one set (vault_maskcost.c says why and how much). */
#define REDSET_BYTES_MAX	(16 * 1024)
struct isecret {
	int64_t		 id;
	int		 param;		/* kind "param": never redacted */
	char		 kind[16];
	char		 name[NAME_LEN_MAX + 1];
	unsigned char	*val;		/* freezero'd by secret_free, NUL-term. */
	size_t		 len;
};
struct redset {
	char		*v[REDSET_MAX];
	size_t		 len[REDSET_MAX];
	size_t		 n;
	size_t		 bytes;
};
/*
 * Unseal secret id of org for tool: 0, or -1 with resp set (502 when it
 * is gone or does not open).
 */
int		 isecret_open(int64_t, int64_t, const char *, struct isecret *,
		    struct vault_resp *);
/* isecret_open() with the sealed row read through get (store_secret_get). */
typedef int	(*secret_get_fn)(int64_t, int64_t, struct store_secret *);
int		 isecret_open_by(secret_get_fn, int64_t, int64_t, const char *,
		    struct isecret *, struct vault_resp *);
void		 isecret_close(struct isecret *);
/* Unsealed secrets of one run, each once (secs_clear zeroes them). */
#define RUN_SECRETS_MAX		512
struct secs {
	struct isecret	 s[RUN_SECRETS_MAX];
	size_t		 n;
};
struct secs	*secs_new(void);
/* Secret id of org for tool, unsealed once: NULL with resp set (502). */
struct isecret	*secs_get(struct secs *, int64_t, int64_t, const char *,
		    struct vault_resp *);
void		 secs_clear(struct secs *);
/*
 * The bytes a CLI or upstream gets for one template (NULL: "{secret}")
 * of binding or inject entry e of tool: the value trimmed, the field of
 * a JSON secret (the access-token leaf unless e names another; of an
 * oauth secret only that), {secret} replaced.  The one rule for runs,
 * grants and the relay.  0 and *out (NUL-terminated, freezero it), or
 * -1 with resp set: 502, a detail naming the tool, never the value.
 */
int		 inject_value(const struct isecret *, json_t *, const char *,
		    const char *, struct vault_resp *, char **, size_t *);
/* tmpl (NULL: "{secret}") applied to val; freezero() it. */
char		*inject_format(const char *, const char *, size_t, size_t *);
/* Whether a binding or inject entry may name field of a kind secret. */
int		 inject_field_allowed(const char *, const char *);
/* Shorter than 8 bytes once trimmed: "too short to be masked reliably". */
int		 value_too_short(const void *, size_t);
/*
 * Add bytes (copied, once) / a secret's raw, trimmed and JSON leaves:
 * -1 past REDSET_MAX parts or REDSET_BYTES_MAX bytes.
 */
int		 redset_add(struct redset *, const void *, size_t);
int		 redset_secret(struct redset *, const struct isecret *);
void		 redset_clear(struct redset *);

/* vault_mask.c: credential-looking arguments and secret values masked. */
json_t		*argv_mask(int64_t, json_t *);

/* vault_maskcost.c: a tool's set within REDSET_BYTES_MAX, or 422. */
int		 mask_cost_check(int64_t, const char *, json_t *, json_t *,
		    struct vault_resp *);
int		 mask_cost_users(int64_t, int64_t, struct vault_resp *);

/* vault_policy.c: deny rules' routes, grants, reports, the call log */
extern const struct vault_route vault_policy_routes[];
/* vault_health.c: POST /health/run; a probe's answer (vault.c). */
extern const struct vault_route vault_health_routes[];
int		 health_secret_view(int64_t, const struct store_secret_row *,
		    json_t **);
/* vault_oauth.c: OAuth access tokens refreshed server-side. */
typedef void	(*oauth_done_fn)(void *, int64_t, int, const char *);
int		 oauth_stale(secret_get_fn, int64_t, int64_t);
enum { OAUTH_NONE, OAUTH_FRESH, OAUTH_STALE };
int		 oauth_state(secret_get_fn, int64_t, int64_t);
int		 oauth_failed(int64_t, int64_t, char *, size_t);
void		 oauth_refresh(int64_t, int64_t, oauth_done_fn, void *);
int		 oauth_fetch_done(const struct fetch_done *, const char *,
		    size_t);
/* Before a key is used: 0, or -1 waiting (*wait) or refused (502). */
int		 oauth_check_ids(secret_get_fn, int64_t, const int64_t *,
		    size_t, const char *, struct vault_resp *, int64_t *);
int		 oauth_check(secret_get_fn, int64_t, json_t *, const char *,
		    struct vault_resp *, int64_t *);
/*
 * treg's provider, refreshable, expiry_state and expires_at of secret
 * (org, id, kind) set on a health view: 1 when only a person can renew
 * it soon (treg's needs_reconnect), else 0.
 */
int		 oauth_expiry_view(secret_get_fn, int64_t, int64_t,
		    const char *, json_t *);
/* vault_org.c: treg's sign-up webhook_url, checked (NULL: none). */
int		 body_webhook(struct vault_req *, struct vault_resp *,
		    const char **);
void		 health_fetch_done(const struct fetch_done *, const char *,
		    size_t);
/* The periodic run ("health interval"), (re)armed on worker 0. */
void		 health_sched(int);

/* vault_audit.c: the local-run audit rows and the refusals on record */
/* One row of the local-run audit (calls, kind 'local_run'). */
struct local_audit {
	const char	*kind;		/* NULL: local_run */
	const char	*tool;
	const char	*action;	/* GRANT, DENY, REPORT */
	const char	*refused_by;	/* DENY only */
	int		 status;
	json_t		*argv;		/* masked here before it is stored */
	int		 has_exit;
	int64_t		 exit_code;
	const char	*verdict;
	int64_t		 grant_id;
	const char	*path;		/* REPORT: "exit=N verdict=V" */
};
/* A calls row begun: who, tool, method, path, refusal, this instance. */
void		 audit_call_init(struct store_call *, const struct auth *,
		    const char *, const char *, const char *, const char *,
		    int, const char *);
/* Write one local-run audit row (its argv masked): its id, or -1. */
int64_t		 audit_local(const struct auth *, const struct local_audit *);
/* The row could not be written: rolled back, 503 "... — what". */
void		 audit_unwritable(struct vault_resp *, const char *);
/*
 * cli.deny of the tool against argv, for a grant or a server run (kind
 * "local_run" or "server_run"): 0 allowed; -1 refused and audited as
 * DENY (403), or the audit could not be written (503): resp set.
 */
struct tool_row;
int		 cli_deny_refuse(const struct auth *, const struct tool_row *,
		    json_t *, const char *, struct vault_resp *);
/* A run or grant whose injection does not resolve: its 502, on record. */
void		 resolution_refuse(const struct auth *, const char *, json_t *,
		    const char *, struct vault_resp *);

/* validate.c */
#define URL_LEN_MAX		2048
#define DENY_MAX		64
#define DENY_LEN_MAX		512
#define SKILL_FILES_MAX		256
#define SKILL_FILE_LEN_MAX	(256 * 1024)
#define SKILL_PATH_MAX		1024
int		 url_check_base(const char *, int, char *, size_t, char *,
		    size_t);
int		 host_is_internal(const char *);
int		 ip4_parse_loose(const char *, uint32_t *);
const char	*env_name_refusal(const char *);
int		 bin_valid(const char *);
int		 format_check(const char *);
int		 file_path_allowed(const char *);
int		 bindings_check(json_t *, int, json_t **, char *, size_t);
int		 cli_check(json_t *, int, json_t **, char *, size_t);
int		 cli_check_host(json_t *, const char *, int, json_t **, char *,
		    size_t);
/* cli.egress (SPEC 6a): an entry read, and spelled canonically. */
#define EGRESS_HOSTS_MAX	32	/* entries of cli.egress */
#define EGRESS_ENTRY_MAX	260	/* bytes of one entry */
struct egress_host {
	char		 host[254];	/* lower case, without "*." */
	uint16_t	 port;
	int		 wildcard;	/* "*.host": any name below it */
	int		 http;		/* "http://": plain HTTP */
};
int		 egress_entry_parse(const char *, struct egress_host *, char *,
		    size_t);
void		 egress_entry_print(const struct egress_host *, char *, size_t);

/* vault_registry.c (with vault_registry.h): a tool as the run path needs it. */
struct tool_row {
	int64_t		 id;
	char		 name[NAME_LEN_MAX + 1];
	int64_t		 owner_id;
	char		 base_url[URL_LEN_MAX + 1];
	char		 host[HOST_LEN_MAX];
	json_t		*bindings;	/* array, canonical */
	json_t		*cli;		/* object, NULL: no CLI profile */
	int64_t		 bundle_id;	/* 0: none */
	char		 bundle[NAME_LEN_MAX + 1];	/* "" when none */
	int64_t		 project_id;	/* 0: org-wide */
};
/* tool_load: 0 found, 1 no such tool in the org, -1 database error. */
int		 tool_load(int64_t, const char *, struct tool_row *);
int		 tool_find(int64_t, const char *, struct tool_row *,
		    struct vault_resp *);
void		 tool_row_clear(struct tool_row *);
/* base_url, host, bindings, cli as stored into a row. */
void		 tool_row_fill(struct tool_row *, const char *, const char *,
		    const char *, const char *);
/* The secret an inject entry uses: 0 and *id, or -1 (none, ambiguous). */
int		 inject_resolve(const struct tool_row *, json_t *, int64_t *);

/*
 * vault_deny.c: cli.deny patterns, and the deny rules (SPEC section 9) for
 * a use of host/path by the caller through a tool of project (0: an
 * org-wide tool); method NULL for runs and grants.  0 allowed; -1
 * refused, resp set to 403 "blocked by a policy rule ...".
 */
#define DENY_METHOD_MAX		32	/* a rule's method, in bytes */
#define DENY_NOTE_MAX		256
#define DENY_PATH_MAX		1024
int		 deny_check(const struct auth *, const char *, const char *,
		    const char *, int64_t, struct vault_resp *);
/* deny_check() with the rules read through rules (store_deny_rules()). */
typedef int	(*deny_rules_fn)(int64_t, int64_t, store_deny_fn, void *);
int		 deny_check_by(deny_rules_fn, const struct auth *,
		    const char *, const char *, const char *, int64_t,
		    struct vault_resp *);
int		 deny_pattern_check(const char *, size_t, char *, size_t);
/*
 * The path of a base_url, read one way by runs, grants and calls: its
 * span (0: none), as a prefix without trailing slashes, as a string for
 * the deny rules ("/": none).
 */
size_t		 url_path_span(const char *, const char **);
size_t		 url_path_prefix(const char *, const char **);
void		 url_path(const char *, char *, size_t);
char		*argv_join(json_t *, size_t *);
/* 1: a pattern (copied out) matched, or a limit decided (why); 0: none. */
int		 deny_match(int64_t, json_t *, json_t *, char *, size_t,
		    const char **);

/* vault_call.c: the relay's requests, their audit and the daily caps */
void		 call_request(struct blob *);	/* IMSG_CALL_REQUEST */
void		 call_done(const struct call_done *);	/* from the relay */
void		 call_flush(void);		/* the pending end records */
void		 call_exits_read(void);	/* the relay's word, committed */
/* daily_call_cap and used_today of a membership into a view: 0 or -1. */
/* vault_callcap.c: the membership's daily_call_cap, read with a decision. */
struct call_capv {
	int			 has;
	int64_t			 cap;
};
int		 call_cap_check(const struct auth *, const char *,
		    struct call_capv *, struct vault_resp *);
int		 call_cap(const struct auth *, const char *,
		    const struct call_capv *, struct vault_resp *);
int		 call_usage(int64_t, int64_t, json_t *);
void		 call_day(time_t, char *, size_t);
/* Around the member routes: daily_call_cap checked, stored, shown. */
int		 call_view_before(struct vault_req *, struct vault_resp *);
int		 call_cap_field(json_t *, int *, int *, int64_t *,
		    struct vault_resp *);
void		 call_view_after(struct vault_req *, struct vault_resp *);

/* A record whose end the relay tells with IMSG_CALL_DONE: its callid. */
uint32_t	 call_track(int64_t, int64_t);

/*
 * vault_egress.c: the requests of a keyless run's CLI (SPEC 6a), each
 * judged by the deny rules and on record before it goes upstream.
 */
struct egress_who {
	uint32_t	 runid;
	int64_t		 audit_id;	/* the run's row */
	const struct auth *who;		/* who ran it, as the request named */
	const char	*tool;
	int64_t		 project_id;	/* the tool's: deny rules */
};
/* The run's grant to the relay (packed: tregd.h), the run known here. */
void		 egress_run_start(const struct egress_who *,
		    const struct egress_grant *, const void *, size_t);
void		 vault_egress_end(uint32_t);	/* revoked, forgotten */
void		 egress_call(struct blob *);	/* IMSG_EGRESS_CALL */
void		 egress_flush(void);		/* the pending, decided */

/* vault_call_cache.c: a call's decision's reads per registry version */
int		 ccache_begin(void);
int64_t		 ccache_version(void);
void		 ccache_end(void);
int		 ccache_auth(const uint8_t [TOKEN_HASH_LEN], struct auth *);
int		 ccache_cap_get(int64_t, int64_t, int *, int64_t *);
int		 ccache_deny_rules(int64_t, int64_t, store_deny_fn, void *);
int		 ccache_secret_get(int64_t, int64_t, struct store_secret *);

/* vault_keyring.c: the keys in memory, their files, sealing. */
int		 secret_seal(int64_t, int64_t, const void *, size_t,
		    void **, size_t *);
int		 secret_unseal(int64_t, int64_t, const void *, size_t,
		    unsigned char **, size_t *);	/* secret_free() it */
void		 secret_free(unsigned char *, size_t);
const char	*keyring_current_hex(void);	/* the sealing key's, in hex */

/*
 * vault_crypto.c: the keyring at start, its migration, the key commands;
 * err gets why a command failed.
 */
int		 crypto_init(const char *);	/* the state directory */
int		 crypto_rotate(const char *);
int		 crypto_settle(void);
int		 crypto_key_new(char *, char *, size_t);
int		 crypto_key_use(const char *, int64_t *, char *, size_t);
int		 crypto_key_retire(const char *, char *, size_t);
int		 crypto_reload(void);
json_t		*crypto_key_list(void);
json_t		*crypto_key_files(void);	/* relative to the state dir */

/* vault_ctl_key.c */
int		 ctl_key(const struct ctl_request *, json_t **);

/*
 * vault_project.c: projects (treg's sub-scope of an org), a tool's
 * project, a membership's or an invite's project_access, and
 * GET /orgs/{id}/usage.
 */
extern const struct vault_route vault_project_routes[];

/*
 * vault_observed.c: GET /orgs/{id}/agents/observed, treg's roster of the
 * runtimes (X-Treg-Client) the org's people call from.
 */
extern const struct vault_route vault_observed_routes[];
/*
 * Around the member, agent and invite routes (as call_view_*): the
 * project_access a body sends, checked before, stored and shown after.
 */
int		 project_view_before(struct vault_req *, struct vault_resp *);
void		 project_view_after(struct vault_req *, struct vault_resp *);
/*
 * A tool's "project" (a slug or an id, null: org-wide) of a body, for
 * POST /tools and PATCH /tools/{id}: 0 and *id (0: org-wide; *sent 0
 * when absent), or -1 with resp set (404 no such project).
 */
int		 project_field(struct vault_req *, struct vault_resp *, json_t *,
		    int *, int64_t *);
/*
 * The names of the org's tools a caller may use (tool_usable()), for a
 * listing kept by name (GET /runs of a caller scoped to projects); NULL
 * when the database failed.
 */
json_t		*project_tool_names(int64_t, const struct auth *);
/* An accepted invite's project_access onto its new membership: 0, -1. */
int		 project_invite_carry(int64_t, int64_t, int64_t);
/*
 * Each row of list (objects with a user_id, of org) gets its member's
 * "project_access": null (the whole org) or the project ids.
 */
void		 project_access_views(int64_t, json_t *);
/* Org, project id: 0 when the org has it, 1 when not, -1 (database). */
int		 project_of_org(int64_t, int64_t);

/* vault_metrics.c */
const struct metrics_vault *vault_metrics_now(int, int);
void	 vault_metrics_run(uint32_t, uint32_t, uint32_t);
void	 vault_metrics_db_error(void);
void	 vault_metrics_request(void);


/* vault_placeholder.c: a keyless run's stand-in for a value (SPEC 6a) */
#define PLACEHOLDER_MIN		24
#define PLACEHOLDER_LEN(n)	((n) < PLACEHOLDER_MIN ? PLACEHOLDER_MIN : (n))
size_t		 placeholder_prefix(const char *, size_t);
int		 placeholder_make(const char *, size_t, char *, size_t,
		    size_t *);

/*
 * vault_keyless.c: what a keyless run holds in place of its values, and
 * the hosts its egress may reach (SPEC 6a).
 */
struct psub {
	char		*ph;		/* the placeholder */
	size_t		 phlen;
	char		*val;		/* the real value (freezero'd) */
	size_t		 len;
	const char	*sign;		/* "" or "aws-sigv4" */
	char		 name[NAME_LEN_MAX + 1];	/* env name, "" */
};
#define PSUBS_MAX	INJECT_MAX	/* one value per inject entry */
struct psubs {
	struct psub	 v[PSUBS_MAX];
	size_t		 n;
};
struct psubs	*psubs_new(void);
void		 psubs_free(struct psubs *);
/*
 * The placeholder of the len bytes at val, made once per value of a run
 * (sign, name: of the inject entry that first used it).  NULL when the
 * value has too few letters and digits to stand in for.
 */
const struct psub *psubs_get(struct psubs *, const char *, size_t,
		    const char *, const char *);
/* The egress list of a run of tool t (cli.egress, or the default). */
json_t		*egress_list(const struct tool_row *);
/* Its entries that name one host, as "host:port", for exec. */
size_t		 egress_list_hosts(json_t *, const char **, size_t);
/* The grant's packed part (tregd.h): hosts, placeholders, mask. */
struct pack;
void		 egress_grant_pack(struct pack *, json_t *,
		    const struct psubs *, const struct redset *);

#endif /* VAULT_H */
