/*
 * tregd: shared definitions of the privilege-separated daemon.
 *
 * One header for the program (and tregctl, for the control messages):
 * limits, paths, the configuration, the imsg types grouped by channel
 * with who sends each, the message structs, and the prototypes grouped
 * by the file that defines them.
 */

#ifndef TREGD_H
#define TREGD_H

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/queue.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "imsg.h"
#include "log.h"
#include "proc.h"

#define TREGD_VERSION		"0.1.0"
/* The level of treg's API that tregd speaks (README "treg compatibility"). */
#define TREG_API_VERSION	"0.18.0"
#define TREGD_CONF		"/etc/tregd.conf"
#define TREGD_SOCKET		"/var/run/tregd.sock"
#define TREGD_STATE		"/var/lib/tregd"
#define TREGD_RUN_DIR		"/var/tmp/tregd"
#define TREGD_RUN_PATH		"/usr/local/bin:/usr/bin:/bin"
#define TREGD_EMPTY		"/var/empty"
#define TREGD_USER		"_tregd"	/* frontend */
#define TREGD_VAULT_USER	"_tregvault"	/* vault */
#define TREGD_RELAY_USER	"_tregrelay"	/* relay */
#define TREGD_CA_BUNDLE		"/etc/ssl/certs/ca-certificates.crt"
/* The system's bundle and `relay ca', for runs: in the run directory. */
#define RUN_CA_BUNDLE		"ca-bundle.pem"
#define TREGD_DB		"tregd.db"	/* in the state directory */
#define TREGD_KEYRING		"keys"	/* in the state directory: <id>.key */
#define TREGD_BACKUP		"tregd-backup.db"	/* tregctl backup's copy */

/* Descriptor a re-executed child finds its parent channel on. */
#define PROC_PARENT_FD		3

/* Limits (SPEC.md section 13). */
#define CONF_LISTEN_MAX		16
#define CONF_ALLOW_MAX		64
#define CONF_BIN_LEN		64	/* bin names, with the NUL */
#define CONF_STR_LEN		1024
#define CONF_PROOF_LEN		256
#define CONF_CONNINFO_LEN	1024	/* database postgresql "..." */
#define CONF_MAIL_FROM_LEN	256	/* an address, with the NUL */
#define HTTP_BODY_MAX		(1024 * 1024)
#define HTTP_HEADERS_MAX	(16 * 1024)
#define HTTP_CONNS_MAX		2048
#define HTTP_TIMEOUT		60
#define NAME_LEN_MAX		128
#define ARGV_MAX		256
#define ARG_LEN_MAX		(32 * 1024)
#define RUN_OUTPUT_MAX		1000000
#define RUN_TIMEOUT_MAX		600
#define RUN_USERS_MAX		65536	/* uids in "run users" */
#define TOKEN_HASH_LEN		32
#define ORG_SEL_MAX		NAME_LEN_MAX	/* X-Treg-Org: a slug or an id */
#define CLIENT_NAME_MAX		32	/* X-Treg-Client, normalised */

/* What the vault sends exec and the relay: both check it on receipt. */
#define REDSET_MAX		512	/* values of one redaction set */
#define SECRET_LEN_MAX		(64 * 1024)
#define HOST_LEN_MAX		264	/* [IPv6] or a DNS name, ":port" */
#define BINDINGS_MAX		32

#define VAULT_WORKERS_MAX	16	/* vault workers */
#define PROCINFO_MAX		(4 + VAULT_WORKERS_MAX)
#define RUN_SLOTS_TABLE_SIZE	(64 * 1024)	/* vault_slots.c's memfd */

/* Processes.  The numbers index the parent's table and tag senders. */
enum tregd_proc {
	PROC_PARENT,
	PROC_FRONTEND,
	PROC_VAULT,
	PROC_EXEC,
	PROC_RELAY,		/* /call: outbound HTTP(S) */
	PROC_CONTROL,		/* a tregctl connection to the vault */
	PROC_MAX
};
/* Sender tags of vault worker n's messages (blob lists, checks). */
#define PROC_WORKER(n)		(PROC_MAX + (n))

/* ------------------------------------------------------------------ */
/* Configuration: a flat struct without pointers, sent in one imsg.    */

struct conf_listen {
	struct sockaddr_storage	 ss;
	socklen_t		 sslen;
	uint16_t		 port;
	char			 name[64];	/* the address as written */
	int			 tls;
};

enum db_engine {
	DB_SQLITE,		/* TREGD_DB in the state directory */
	DB_POSTGRESQL		/* db_conninfo, several hosts on one database */
};

struct tregd_conf {
	struct conf_listen	 listen[CONF_LISTEN_MAX];
	int			 nlisten;
	struct conf_listen	 metrics[CONF_LISTEN_MAX];	/* /metrics */
	int			 nmetrics;
	char			 state[PATH_MAX];
	int			 db_engine;		/* DB_SQLITE, ... */
	char			 db_conninfo[CONF_CONNINFO_LEN];
	char			 db_password_file[PATH_MAX];	/* "" = none */
	char			 socket[PATH_MAX];
	char			 socket_group[64];	/* "" = root only */
	int			 signup_open;
	char			 run_allow[CONF_ALLOW_MAX][CONF_BIN_LEN];
	int			 nrun_allow;		/* added to builtin */
	int			 run_rlimits;
	int			 run_timeout;		/* seconds, 1..600 */
	int			 run_slots;
	int			 run_slots_user;
	int			 run_slots_org;		/* 0: the run slots */
	long long		 run_cpu;		/* seconds */
	long long		 run_filesize;		/* bytes */
	unsigned int		 run_uid_first;		/* run users */
	unsigned int		 run_uid_last;
	long long		 run_tmpsize;		/* bytes */
	int			 run_processes;		/* RLIMIT_NPROC */
	long long		 run_memory;		/* bytes */
	int			 run_network;		/* RUN_NET_* */
	int			 run_egress_conns;	/* per run, default 32 */
	uint64_t		 run_have_builtin;	/* conf_run_scan() */
	uint64_t		 run_have_allow;
	int			 run_pool;		/* sandboxes made ahead */
	char			 run_path[CONF_STR_LEN];
	char			 run_dir[PATH_MAX];
	char			 run_proof[CONF_PROOF_LEN];	/* "" = none */
	int			 relay_allow_private;
	char			 relay_ca[PATH_MAX];	/* "" = system only */
	int			 relay_timeout_connect;	/* seconds */
	int			 relay_timeout_total;	/* seconds */
	long long		 http_body_max;		/* bytes */
	int			 http_max_conns;
	int			 http_timeout;		/* seconds */
	int			 http_timeout_header;	/* seconds, whole head */
	int			 http_timeout_body;	/* seconds, whole body */
	int			 http_timeout_write;	/* seconds */
	int			 http_per_addr;
	long long		 http_buffer;		/* bytes, per connection */
	long long		 http_buffer_total;	/* bytes, all of them */
	int			 log_requests;
	char			 tls_cert[PATH_MAX];	/* read by the parent */
	char			 tls_key[PATH_MAX];
	/* The parent sends the run proof as its hash, to the frontend only. */
	uint8_t			 run_proof_hash[32];
	int			 run_proof_set;
	int			 vault_workers;		/* 1..VAULT_WORKERS_MAX */
	char			 mail_sendmail[PATH_MAX];	/* "" = none */
	char			 mail_from[CONF_MAIL_FROM_LEN];	/* "" = none */
	int			 mail_development;	/* codes in answers */
	int			 health_interval;	/* seconds, 0: none */
};

/*
 * vault -> parent: mail a sign-in code (the vault starts no program;
 * parent/mail.c hands it to the configured sendmail).
 */
struct mail_send {
	char		 to[CONF_MAIL_FROM_LEN];
	char		 code[16];
	uint32_t	 ttl_minutes;
};

/* ------------------------------------------------------------------ */
/* imsg types, by channel.                                             */

enum imsg_type {
	IMSG_NONE,
	/* any blob sender: a chunk of the payload a head message announced */
	IMSG_DATA = IMSG_BLOB_DATA,	/* common/proc.h */

	/* parent -> every child */
	IMSG_CONF,		/* struct tregd_conf */
	IMSG_CONF_LISTEN,	/* fd: a bound listening socket (frontend) */
	IMSG_CTL_CONN,		/* fd: a tregctl, accepted and checked (vault) */
	IMSG_CONF_PEER,		/* fd + uint32_t proc: a channel to a peer */
	IMSG_CONF_END,		/* configuration complete: serve */
	IMSG_LOG_VERBOSE,	/* int */
	IMSG_PROCINFO,		/* struct procinfo[PROC_MAX] (vault) */
	IMSG_CTL_RELOAD_DONE,	/* struct ctl_reload_done (vault) */
	IMSG_CONF_TLS_CERT,	/* blob: PEM certificate chain (frontend) */
	IMSG_CONF_TLS_KEY,	/* blob: PEM private key (frontend) */
	IMSG_CONF_METRICS,	/* fd: a bound metrics socket (frontend) */
	IMSG_CONF_VAULT,	/* fd + uint32_t worker: a vault worker's channel */
	IMSG_CONF_WORKER,	/* fd: slot table + struct conf_worker (vault) */
	IMSG_KEYRING_RELOAD,	/* no data: another worker changed the keyring */
	IMSG_SERVE,		/* no data: every child is ready (frontend) */

	/* every child -> parent */
	IMSG_LOG,		/* int priority, then the line with its NUL */
	IMSG_READY,		/* no data: configured, serving (sd_notify) */

	/* vault -> parent (from tregctl) */
	IMSG_CTL_RELOAD,
	IMSG_CTL_LOG_VERBOSE,	/* int */
	IMSG_KEYRING,		/* no data: the keyring changed (tregctl key) */
	IMSG_MAIL_SEND,		/* struct mail_send: a sign-in code to mail */

	/* frontend -> vault */
	IMSG_API_REQUEST,	/* blob: struct api_request + payload */
	IMSG_ENDS_SYNC,		/* uint32_t runs and calls answered: take in
				   the ends exec and the relay told (and
				   back, the same: done) */

	/* vault -> frontend */
	IMSG_API_RESPONSE,	/* blob: struct api_response + JSON body */
	IMSG_RUN_ACCEPTED,	/* struct api_response: handed to exec */
	IMSG_METRICS_VAULT,	/* struct metrics_vault, every second */

	/* vault -> exec */
	IMSG_RUN_START,		/* blob: struct run_start + packed strings */

	/* exec -> frontend */
	IMSG_RUN_OUTPUT,	/* uint8_t stream (1, 2) + redacted bytes */
	IMSG_RUN_EOF,		/* struct run_result: every chunk was sent */
	IMSG_METRICS_EXEC,	/* struct metrics_exec, every second */

	/* exec -> vault */
	IMSG_RUN_EXIT,		/* struct run_exit */

	/* frontend -> exec (hdr.id: the frontend's request) */
	IMSG_RUN_CANCEL,	/* no data: the client went away, kill it */
	IMSG_RUN_PAUSE,		/* no data: the client is not reading */
	IMSG_RUN_RESUME,	/* no data: read the run's pipes again */

	/* frontend -> vault (the relay, /call) */
	IMSG_CALL_REQUEST,	/* blob: struct call_request + payload */

	/* vault -> frontend */
	IMSG_CALL_REFUSED,	/* blob: struct api_response + JSON detail */

	/* vault -> relay */
	IMSG_CALL_START,	/* blob: struct call_start + packed strings */

	/* relay -> frontend (hdr.id: the frontend's request) */
	IMSG_CALL_HEAD,		/* blob: struct call_head + header lines */
	IMSG_CALL_BODY,		/* redacted body bytes */
	IMSG_CALL_END,		/* struct call_end */

	/* relay -> vault */
	IMSG_CALL_DONE,		/* struct call_done */

	/* frontend -> relay (hdr.id: the frontend's request) */
	IMSG_CALL_CANCEL,	/* no data: the client went away */
	IMSG_CALL_PAUSE,	/* no data: the client is not reading */
	IMSG_CALL_RESUME,	/* no data: read the upstream again */

	/*
	 * Keyless runs' egress (SPEC 6a).  relay/egress.h is the relay's
	 * side; exec <-> relay is a channel of its own, made by the parent.
	 */
	/* relay -> exec, once at start */
	IMSG_EGRESS_CA,		/* PEM of the run CA's certificate, one
				   message (exec takes at most 16 KB) */
	/* exec -> relay */
	IMSG_EGRESS_LISTEN,	/* fd + struct egress_listen */
	IMSG_EGRESS_END,	/* struct egress_end: the run ended */
	/* vault -> relay, before the vault sends IMSG_RUN_START */
	IMSG_EGRESS_GRANT,	/* blob: struct egress_grant + packed */
	IMSG_EGRESS_REVOKE,	/* struct egress_end: the run ended (vault) */
	/* relay -> vault: a request a run's CLI made, before upstream */
	IMSG_EGRESS_CALL,	/* blob: struct egress_call + packed */
	/* vault -> relay: its record and verdict */
	IMSG_EGRESS_VERDICT,	/* blob: struct egress_verdict + packed */

	/*
	 * Credential health (vault_health.c, relay_fetch.c): a bounded
	 * request the vault itself makes (a probe, a token refresh, an
	 * owner's webhook), through the relay's SSRF guard and TLS.
	 */
	IMSG_FETCH_START,	/* struct fetch_start + packed (vault) */
	IMSG_FETCH_DONE,	/* struct fetch_done + body (relay) */

	/* tregctl <-> vault (control socket) */
	IMSG_CTL_REQUEST,	/* struct ctl_request */
	IMSG_CTL_REPLY,		/* blob: struct ctl_reply + JSON document */
};

/* IMSG_PROCINFO: struct procinfo[PROCINFO_MAX], name "" after the last. */
struct procinfo {
	pid_t		 pid;
	int64_t		 started;	/* time(3) */
	char		 name[16];	/* "parent", "vault 0" ... */
};

/* parent -> vault: which worker it is, of how many. */
struct conf_worker {
	uint32_t	 index;		/* 0 .. count - 1 */
	uint32_t	 count;
};

/* Routes of the HTTP API, matched by the frontend, served by the vault. */
enum api_route {
	ROUTE_NONE,
	ROUTE_USERS_CREATE,		/* POST /users */
	ROUTE_ORGS_CREATE,		/* POST /orgs */
	ROUTE_ORGS_LIST,		/* GET /orgs */
	ROUTE_ORG_DELETE,		/* DELETE /orgs/{id}?confirm= */
	ROUTE_INVITES_CREATE,		/* POST /orgs/{id}/invites */
	ROUTE_INVITES_LIST,		/* GET /orgs/{id}/invites */
	ROUTE_INVITE_DELETE,		/* DELETE /orgs/{id}/invites/{id} */
	ROUTE_INVITE_ACCEPT,		/* POST /invites/accept */
	ROUTE_MEMBERS_LIST,		/* GET /orgs/{id}/members */
	ROUTE_MEMBER_ROLE,		/* PATCH /orgs/{id}/members/{id} */
	ROUTE_MEMBER_ACCESS,		/* PATCH /orgs/{id}/members/{id}/access */
	ROUTE_MEMBER_DELETE,		/* DELETE /orgs/{id}/members/{id} */
	ROUTE_ORG_LEAVE,		/* POST /orgs/{id}/leave */
	ROUTE_AGENTS_CREATE,		/* POST /orgs/{id}/agents */
	ROUTE_AGENTS_LIST,		/* GET /orgs/{id}/agents */
	ROUTE_AGENT_DELETE,		/* DELETE /orgs/{id}/agents/{id} */
	ROUTE_DENY_CREATE,		/* POST /orgs/{id}/deny */
	ROUTE_DENY_LIST,		/* GET /orgs/{id}/deny */
	ROUTE_DENY_DELETE,		/* DELETE /orgs/{id}/deny/{id} */
	ROUTE_SECRETS_CREATE,		/* POST /secrets */
	ROUTE_SECRETS_LIST,		/* GET /secrets */
	ROUTE_SECRET_PATCH,		/* PATCH /secrets/{id} */
	ROUTE_SECRET_DELETE,		/* DELETE /secrets/{id} */
	ROUTE_TOOLS_CREATE,		/* POST /tools */
	ROUTE_TOOLS_LIST,		/* GET /tools */
	ROUTE_TOOL_BY_NAME,		/* GET /tools/by-name/{name} */
	ROUTE_TOOL_PATCH,		/* PATCH /tools/{id} */
	ROUTE_TOOL_DELETE,		/* DELETE /tools/{id} */
	ROUTE_TOOL_GRANT,		/* POST /tools/{name}/grant */
	ROUTE_TOOL_RUN_REPORT,		/* POST /tools/{name}/run-report */
	ROUTE_SKILLS_CREATE,		/* POST /skills */
	ROUTE_BUNDLES_LIST,		/* GET /bundles */
	ROUTE_BUNDLE_GET,		/* GET /bundles/{id} */
	ROUTE_BUNDLE_BY_NAME,		/* GET /bundles/by-name/{name} */
	ROUTE_BUNDLE_PATCH,		/* PATCH /bundles/{id} */
	ROUTE_BUNDLE_DELETE,		/* DELETE /bundles/{id} */
	ROUTE_RUN,			/* POST /run */
	ROUTE_RUNS_LIST,		/* GET /runs */
	ROUTE_CALLS_LIST,		/* GET /calls */
	ROUTE_HEALTH,			/* GET /health */
	ROUTE_HEALTH_RUN,		/* POST /health/run */
	ROUTE_OPENAPI,			/* GET /openapi.json (frontend) */
	ROUTE_SKILL_MD,			/* GET /skill.md (frontend) */
	ROUTE_AUTH_ME,			/* GET /auth/me */
	ROUTE_AUTH_CLI_TOKEN,		/* POST|GET /auth/cli-token */
	ROUTE_AUTH_REVOKE,		/* POST /auth/revoke-tokens */
	ROUTE_INVITES_MINE,		/* GET /invites/mine */
	ROUTE_INVITE_ACCEPT_ID,		/* POST /invites/{id}/accept */
	ROUTE_EMAIL_START,		/* POST /auth/email/start */
	ROUTE_EMAIL_VERIFY,		/* POST /auth/email/verify */
	ROUTE_PROJECTS_CREATE,		/* POST /orgs/{id}/projects */
	ROUTE_PROJECTS_LIST,		/* GET /orgs/{id}/projects */
	ROUTE_PROJECT_DELETE,		/* DELETE /orgs/{id}/projects/{id} */
	ROUTE_ORG_USAGE,		/* GET /orgs/{id}/usage */
	ROUTE_AGENTS_OBSERVED,		/* GET /orgs/{id}/agents/observed */
	ROUTE_MAX
};

/*
 * An API request as the frontend forwards it.  The payload that follows
 * is name (namelen bytes, a path parameter such as a tool name), query
 * (querylen bytes, the raw query string) and body (bodylen bytes of
 * JSON the frontend has checked to be well formed); no NULs inside.
 * The token never leaves the frontend: only its hash does.
 */
struct api_request {
	uint32_t	 route;
	uint32_t	 has_token;
	uint8_t		 token_hash[TOKEN_HASH_LEN];
	int64_t		 id1;		/* first numeric path parameter */
	int64_t		 id2;		/* second numeric path parameter */
	uint32_t	 namelen;
	uint32_t	 querylen;
	uint32_t	 bodylen;
	uint32_t	 proof_ok;	/* X-Treg-Run-Proof matched (grants) */
	uint32_t	 stream;	/* POST /run asked for a stream */
	char		 peer[64];	/* client address, for the log */
	char		 org[ORG_SEL_MAX + 1];	/* X-Treg-Org, "" none */
	char		 client[CLIENT_NAME_MAX + 1];	/* X-Treg-Client */
};

struct api_response {
	uint32_t	 status;	/* HTTP status */
	int64_t		 org_id;	/* who asked, for the request log */
	int64_t		 user_id;
};

/*
 * frontend -> vault: a /call request.  The payload is target (the raw
 * path after "/call/", still percent-encoded, then '?' and the raw query
 * when there is one), headers (the client's header lines, "Name: value"
 * each ending in CRLF, those that are never relayed already removed)
 * and body, in that order.
 */
struct call_request {
	uint32_t	 has_token;
	uint8_t		 token_hash[TOKEN_HASH_LEN];
	char		 method[16];
	uint32_t	 targetlen;
	uint32_t	 headerslen;
	uint32_t	 bodylen;
	char		 peer[64];
	char		 org[ORG_SEL_MAX + 1];	/* X-Treg-Org, "" none */
	char		 client[CLIENT_NAME_MAX + 1];	/* X-Treg-Client */
};

/* vault -> relay: a call to make.  Strings follow, packed (pack.h). */
struct call_start {
	uint32_t	 callid;	/* the vault's, for IMSG_CALL_DONE */
	uint32_t	 allow_private;
	int64_t		 org_id;	/* the caller's, for the request log */
	int64_t		 user_id;
	/* packed: method, url, nheaders, headers[], body, nsecrets, secrets[] */
};

/* relay -> frontend: the upstream's status line and headers, redacted. */
struct call_head {
	uint32_t	 status;
	uint32_t	 refused;	/* 1: tregd's own refusal, JSON detail */
	int64_t		 org_id;	/* the caller's, for the request log */
	int64_t		 user_id;
};

struct call_end {
	uint32_t	 redacted;	/* masked in headers and body */
	uint32_t	 failed;	/* the upstream broke off mid-body */
};

/* Why the relay refused a call, for refused_by. */
enum call_refusal {
	CALL_OK,
	CALL_SSRF,
	CALL_UPSTREAM
};

/* relay -> vault: how a call ended, for its audit record. */
struct call_done {
	uint32_t	 callid;
	uint32_t	 status;	/* 0: no answer from the upstream */
	uint32_t	 refused;	/* enum call_refusal */
	uint32_t	 duration_ms;
	uint64_t	 bytes;		/* body bytes sent to the client */
	uint32_t	 redacted;
};

/*
 * vault -> relay: a request of the vault's own, in one message (its
 * size is bounded by FETCH_REQ_MAX).  Packed: method, url, nheaders,
 * headers[] ("Name: value"), body.  The answer comes back as
 * IMSG_FETCH_DONE to the worker that asked, its body cut at
 * FETCH_BODY_MAX; nothing of it reaches the frontend.
 */
struct fetch_start {
	uint32_t	 fetchid;	/* the vault's */
	uint32_t	 allow_private;
	uint32_t	 timeout_s;	/* whole request; 0: relay timeout */
};
#define FETCH_PROBE_S		15	/* treg's probe timeout */
#define FETCH_REFRESH_S		30
#define FETCH_ALERT_S		10	/* treg's webhook timeout */
#define FETCH_REQ_MAX	(IMSG_DATA_MAX - sizeof(struct fetch_start))
#define FETCH_BODY_MAX	(16 * 1024)
struct fetch_done {
	uint32_t	 fetchid;
	uint32_t	 status;	/* 0: no answer */
	uint32_t	 refused;	/* enum call_refusal */
	uint32_t	 truncated;	/* the body was longer */
};

/* vault -> exec: a run order.  Strings follow, packed (see pack.h). */
struct run_start {
	uint32_t	 runid;		/* the vault's run id */
	uint32_t	 timeout_s;
	uint32_t	 rlimits;
	uint32_t	 stream;
	int64_t		 cpu;
	int64_t		 filesize;
	uint32_t	 network;	/* RUN_NET_NONE, _PROXY, _HOST */
	int64_t		 tool_id;	/* its redaction set's cache key */
	/*
	 * packed: bin path, argc, argv[], envc, env[], nsecrets, secrets[],
	 * nhosts, hosts[]: with RUN_NET_PROXY the egress list's "host:port"
	 * entries that name one host (no wildcard, no scheme): exec writes
	 * them to the run's /etc/hosts as 127.0.0.1 and gives the run a
	 * transparent listener on each of their ports (SPEC 6a).
	 */
};
/*
 * How a run reaches the network (SPEC 6a): the vault's choice from "run
 * network" and the CLI profile's "network", in run_start.network; the
 * same values in tregd_conf.run_network ("run network no|proxy|host").
 */
#define RUN_NET_NONE	0	/* a network namespace, loopback only */
#define RUN_NET_PROXY	1	/* that and the egress proxy's listeners */
#define RUN_NET_HOST	2	/* the host's network (operator's choice) */

/*
 * exec -> relay, with a listening socket made inside the run's network
 * namespace (bound to 127.0.0.1 there): a run's way out.
 */
struct egress_listen {
	uint32_t	 runid;		/* the vault's run id (run_start) */
	uint16_t	 port;		/* 127.0.0.1:port as the run sees it */
	uint16_t	 kind;		/* EGRESS_PROXY or EGRESS_TRANSPARENT */
};
#define EGRESS_PROXY		1	/* HTTP proxy: CONNECT, absolute-form */
#define EGRESS_TRANSPARENT	2	/* the host from SNI or Host */
#define EGRESS_PROXY_PORT	3128	/* HTTPS_PROXY=http://127.0.0.1:3128 */

/* exec -> relay: the run ended; close its listeners and connections. */
struct egress_end {
	uint32_t	 runid;
};

/*
 * vault -> relay: what a keyless run may reach and with what, sent on the
 * vault worker's channel before its IMSG_RUN_START (so the grant is there
 * before the run's first connection; the relay still accepts either
 * order).  runid is the vault's run id (struct run_start), unique across
 * workers (the worker's index in its top 8 bits); the relay sends the
 * run's IMSG_EGRESS_CALLs to the worker that sent the grant.
 *
 * packed (pack.h), in this order:
 *   nhosts, hosts[]     "host:port", "*.domain:port" or "http://host:port"
 *                       (SPEC 6a egress list, ports always spelled out)
 *   nsubst, then per value: placeholder, value, sign ("" or "aws-sigv4"),
 *                       name (the env name, "" for none: tells an AWS
 *                       key id from its secret and session token)
 *   nsecrets, secrets[] the run's redaction set (as IMSG_CALL_START's),
 *                       for the answers' masking
 *   tool                optional: the tool's name, for the one-line texts
 *                       a run gets ("... is not on the egress list of X")
 */
struct egress_grant {
	uint32_t	 runid;
	uint32_t	 timeout_s;	/* the run's: the grant dies with it */
	uint32_t	 allow_private;	/* relay allow-private */
	uint32_t	 maxconns;	/* run egress connections */
	uint32_t	 passthrough;	/* "tls": "passthrough" (a keyless
					   false profile): splice by SNI,
					   one record per connection */
	int64_t		 org_id;
	int64_t		 user_id;
	int64_t		 tool_id;	/* its redaction set's cache key */
	int64_t		 audit_id;	/* the run's row: GET /runs "s<id>" */
};

/*
 * relay -> vault: one request of a run's CLI, before it goes upstream
 * (SPEC 6a "Policy and audit"): the vault checks the org's deny rules and
 * commits its call record (where "run", run_id, host), then answers with
 * IMSG_EGRESS_VERDICT.  A refusal the relay made itself (a host not on
 * the list, a SigV4 signature that does not verify, the connection cap)
 * comes with refused = EGRESS_REFUSED_EGRESS and a status: the vault only
 * records it and still answers.  The request's end comes as IMSG_CALL_DONE
 * with the verdict's callid.
 *
 * packed: method (the effective one: override headers already read),
 * host, path (no query values, placeholders masked), detail ("" or why
 * the relay refused)
 */
struct egress_call {
	uint32_t	 runid;
	uint32_t	 reqid;		/* the relay's, echoed in the verdict */
	uint32_t	 port;
	uint32_t	 refused;	/* 0 or EGRESS_REFUSED_EGRESS */
	uint32_t	 status;	/* the relay's refusal status (403 ...) */
};
#define EGRESS_REFUSED_EGRESS	1

/*
 * vault -> relay: the verdict on an IMSG_EGRESS_CALL.  ok 1: recorded,
 * send it (callid then names the record for IMSG_CALL_DONE); ok 0:
 * refused with status (403 policy, 503 when the record cannot be
 * written) and the packed one-line detail the run's CLI gets.
 */
struct egress_verdict {
	uint32_t	 runid;
	uint32_t	 reqid;
	uint32_t	 callid;
	uint32_t	 ok;
	uint32_t	 status;
	/* packed: detail */
};

/* exec -> vault: the run ended. */
struct run_exit {
	uint32_t	 runid;
	int32_t		 exit_code;	/* -signal when killed */
	uint32_t	 timed_out;
	uint32_t	 duration_ms;
	uint32_t	 redacted;
	uint32_t	 truncated;	/* RUN_TRUNC_STDOUT, RUN_TRUNC_STDERR */
	uint32_t	 notfound;	/* bin not on the run path: nothing ran */
	uint32_t	 failed;	/* the run could not be started */
	uint32_t	 cancelled;
};
#define RUN_TRUNC_STDOUT	0x1
#define RUN_TRUNC_STDERR	0x2

/* How a run ended, as GET /runs and the answer of POST /run say it. */
enum run_outcome {
	RUN_OK,
	RUN_FAILED,
	RUN_TIMED_OUT,
	RUN_CANCELLED,
	RUN_INTERRUPTED
};

/* exec -> frontend: the run's final status, after its last chunk. */
struct run_result {
	int32_t		 exit_code;
	uint32_t	 timed_out;
	uint32_t	 duration_ms;
	uint32_t	 redacted;
	uint32_t	 outcome;	/* enum run_outcome */
	uint32_t	 truncated;	/* RUN_TRUNC_STDOUT, RUN_TRUNC_STDERR */
};

/*
 * The counters the vault and exec report to the frontend every second,
 * for GET /metrics (metrics.c); each a running total since start.
 */
#define METRICS_RUN_BUCKETS	12	/* tregd_run_duration_seconds */
struct metrics_vault {
	uint64_t	 runs[RUN_INTERRUPTED + 1];	/* by run_outcome */
	uint64_t	 run_le[METRICS_RUN_BUCKETS];	/* not cumulative */
	uint64_t	 run_ms;			/* sum of durations */
	uint64_t	 redactions;
	uint64_t	 db_errors;
	uint32_t	 slots_in_use;
	uint32_t	 slots_max;
	uint64_t	 requests;			/* API requests answered */
};
struct metrics_exec {
	uint32_t	 running;	/* runs exec holds */
};

/* Control commands (tregctl). */
enum ctl_cmd {
	CTL_NONE,
	CTL_SHOW_STATUS,
	CTL_SHOW_USERS,
	CTL_SHOW_ORGS,
	CTL_SHOW_TOOLS,
	CTL_SHOW_RUNS,
	CTL_SHOW_AUDIT,
	CTL_USER_ADD,
	CTL_TOKEN_REVOKE,
	CTL_ORG_DELETE,
	CTL_KEY_ROTATE,
	CTL_RELOAD,
	CTL_LOG_VERBOSE,
	CTL_LOG_BRIEF,
	CTL_METRICS,
	CTL_SHOW_MEMBERS,
	CTL_SHOW_AGENTS,
	CTL_SHOW_SECRETS,
	CTL_SHOW_CONFIG,
	CTL_USER_DELETE,
	CTL_BACKUP,		/* tregctl copies the files named in the answer */
	CTL_KEY_NEW,
	CTL_KEY_USE,
	CTL_KEY_RETIRE,
	CTL_KEY_LIST,
	CTL_KEY_RELOAD,
	CTL_SHOW_TOKENS,
	CTL_IDENTITY_REVOKE,
	CTL_MAX
};

#define CTL_KEY_HEX	16	/* a key id in hex */
struct ctl_request {
	uint32_t	 cmd;
	int32_t		 limit;		/* show runs: 0 = default */
	char		 email[256];
	char		 org[NAME_LEN_MAX + 1];
	char		 role[16];
	uint32_t	 force;		/* user delete: sole-owned orgs too */
	char		 key[CTL_KEY_HEX + 1];	/* key use, key retire */
};

/* parent -> vault: the answer to tregctl reload. */
struct ctl_reload_done {
	int32_t		 result;	/* 0 reloaded, -1 refused */
	char		 error[512];	/* refused: the first file:line error */
};

struct ctl_reply {
	int32_t		 status;	/* 0 ok, else an error (message in JSON) */
};

/* ------------------------------------------------------------------ */
/* Prototypes.                                                         */

/* parse.y and conf.c */
void	 conf_defaults(struct tregd_conf *);
int	 parse_config(const char *, struct tregd_conf *);
int	 cmdline_symset(char *);
int	 conf_run_allowed(const struct tregd_conf *, const char *);
int	 conf_run_installed(const struct tregd_conf *, const char *);
int	 conf_run_resolve(const char *, const char *, char *, size_t);
void	 conf_run_scan(struct tregd_conf *);
void	 print_config(const struct tregd_conf *, FILE *);
extern int parse_errors_to_log;
extern char parse_error[512];	/* the first error of the last parse */
extern const char *const run_builtin_allow[];
int	 parse_keywords_sorted(void);

/* child.c: what every re-executed child does first */
extern const char *const proc_names[PROC_MAX];
struct event_base;
extern struct event_base *proc_base;
struct imsgev;
struct passwd;
/* A channel a child expects from the parent, to a peer process. */
struct proc_peer {
	enum tregd_proc	 id;
	struct imsgev	*iev;
	void		(*dispatch)(struct imsgev *, struct imsg *);
	int		 have;
};
/*
 * A child as its start sees it: where IMSG_CONF goes, the peer channels
 * it expects (IMSG_CONF_PEER) and, unless vaults is NULL, a channel to
 * each vault worker (IMSG_CONF_VAULT); proc_child_init takes them.  A
 * reload's IMSG_CONF goes to proc_imsg_conf too.
 */
struct proc_child {
	enum tregd_proc		 self;
	struct tregd_conf	*conf;
	struct proc_peer	*peers;
	size_t			 npeers;
	struct imsgev		*vaults;	/* [VAULT_WORKERS_MAX] */
	int			*nvaults;
	void			(*dispatch)(struct imsgev *, struct imsg *);
	void			(*closed)(struct imsgev *);
};
void	 proc_child_init(const struct proc_child *, struct imsgev *, int,
	    int, const struct imsg_handler *, size_t);
void	 proc_conf_recv(struct imsg *, struct tregd_conf *);
void	 proc_imsg_conf(struct imsgev *, struct imsg *);
struct passwd *proc_getpw(const char *);
void	 conf_terminate(struct tregd_conf *);
const char *proc_worker_name(int);	/* "vault 0" ... */
void	 proc_log_verbose(struct imsgev *, struct imsg *);
void	 proc_peer_lost(struct imsgev *);
__dead void proc_child_run(void (*)(int, short, void *));

/*
 * The processes' entry points: tregd.c starts the one its -P names.
 * Everything else a process defines is in the header of its folder.
 */
__dead void parent_main(struct tregd_conf *, const char *, int, int);
/* parent/restore.c: tregd -R (tregd.c) */
__dead void restore_main(const struct tregd_conf *, const char *);
__dead void frontend_main(int, int);
void	 front_print_routes(FILE *);
__dead void vault_main(int, int);
__dead void exec_main(int, int);
int	 sbx_selftest(void);
__dead void relay_main(int, int);
int	 relay_selftest(void);

/*
 * proto.c: what two processes read the same way.  A run order (vault ->
 * exec, after struct run_start): bin, argc, argv[] (argv[0] is bin),
 * envc, env[] ("NAME=value"), nmask, mask[] (what exec masks in the
 * output; the packed mask is its redaction set's cache key).  Its limits
 * are the registry's: args, cli.inject entries and their argv words,
 * cli.env settings, a redaction set.
 */
#define INJECT_MAX		32	/* cli.inject entries */
#define INJECT_ARGV_MAX		32	/* words of one argv entry */
#define CLI_ENV_MAX		32	/* cli.env settings */
#define RUN_ARGC_MAX		(1 + ARGV_MAX + INJECT_MAX * INJECT_ARGV_MAX)
#define RUN_ENVC_MAX		(INJECT_MAX + CLI_ENV_MAX)
struct run_order {
	const char	*bin;
	const char	**argv;		/* argc of them (argv[0]: bin) */
	const size_t	*argvlen;
	size_t		 argc;
	char		**env;		/* envc, "NAME=value" */
	const size_t	*envlen;
	size_t		 envc;
	char *const	*mask;		/* nmask (packed: the vault's) */
	const size_t	*masklen;
	size_t		 nmask;
	const char	*packed_mask;	/* unpacked: exec's, and its bytes */
	size_t		 packed_masklen;
	const char	**hosts;	/* nhosts "host:port" (run_start) */
	size_t		 nhosts;
};
#define RUN_HOSTS_MAX		64	/* egress hosts a run's order names */
struct pack;
void	 run_order_pack(struct pack *, const struct run_order *);
/*
 * Unpacked in place: argv and env are calloc'd (env with envskip free
 * entries first, for exec's own), the strings point into buf, and so
 * does packed_mask.  -1 and *why on a malformed order (argv and env may
 * be set: the caller frees them, and hosts).  An order without its
 * hosts (a vault before keyless runs) has none.
 */
int	 run_order_unpack(const void *, size_t, size_t, struct run_order *,
	    const char **);
int	 run_host_ok(const char *, char *, size_t, uint16_t *);
extern const double metrics_run_le[METRICS_RUN_BUCKETS];
extern const double metrics_run_le[METRICS_RUN_BUCKETS];
const char *run_outcome_name(uint32_t);	/* enum run_outcome: "ok" ... */
enum run_outcome run_outcome_of(const struct run_exit *);

/* netaddr.c: public unicast addresses (the SSRF rule) */
int	 ip4_is_public(uint32_t);
int	 ip6_is_public(const unsigned char [16]);

/* conf_db.c: "database postgresql" and its password file */
int	 pg_conninfo_check(const char *, char *, size_t);
char	*pg_password_read(const char *, char *, size_t);
#define PG_PASSWORD_MAX	1024	/* freezero(pw, PG_PASSWORD_MAX + 1) */

#endif /* TREGD_H */
