/*
 * The vault's storage: the one interface between the domain files
 * (vault_org.c, vault_tool.c, vault_run.c, ...) and a database engine.
 * C structs go in and out; no SQL and no engine type appear here.  An
 * engine (store_sqlite.c, store_pg.c) fills a struct store_ops and owns
 * every statement, its statement cache, the migrations and the
 * transactions.  This interface only grows: a function is added, never
 * changed or removed.
 *
 * Conventions, for every function returning int: 0 done (or found), 1 no
 * such row, -1 the database failed (store_error() says why, without any
 * value that was bound).  Text fields are NUL-terminated; a NULL column
 * is "" (has_* flags tell the cases that matter).  JSON columns come out
 * as malloc'd text (NULL for NULL); the *_clear function of the struct
 * frees them.  Listings call a function per row, newest first, until it
 * returns non-zero or the page ends; their cost is O(log N + rows).
 */

#ifndef STORE_H
#define STORE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_NAME_MAX		128	/* NAME_LEN_MAX */
#define STORE_EMAIL_MAX		255
#define STORE_TIME_MAX		32	/* ISO 8601 UTC, "...Z" */
#define STORE_HASH_LEN		32	/* TOKEN_HASH_LEN */
#define STORE_ERROR_MAX		256

enum store_engine {
	STORE_SQLITE,
	STORE_POSTGRESQL
};

struct store_params {
	enum store_engine	 engine;
	const char		*path;		/* sqlite: the database file */
	const char		*conninfo;	/* postgresql: libpq string */
	const char		*password;	/* postgresql: or NULL */
	unsigned int		 worker;	/* this vault worker's index */
};

/*
 * How a vault reaches its database server again once it confined itself
 * (chroot, seccomp, Landlock): a server restarted under tregd is
 * reconnected to, not fatal.
 */
struct store_reach {
	char		 socket_dir[PATH_MAX];	/* a Unix socket's, or "" */
	int		 tcp_port;		/* a TCP connection's, or 0 */
};

/* One membership (a token): user, org and role. */
struct store_member {
	int64_t		 id;
	int64_t		 user_id;
	int64_t		 org_id;
	char		 role[16];		/* viewer ... owner */
	char		*tool_access;		/* JSON array, NULL: all */
	char		*project_access;	/* JSON array of project ids */
	int		 local_run_enabled;
	int		 is_agent;
	char		 email[STORE_EMAIL_MAX + 1];
	char		 org_slug[STORE_NAME_MAX + 1];
	uint8_t		 token_hash[STORE_HASH_LEN];
};

/* A secret and its sealed value (see vault_crypto.c). */
struct store_secret {
	int64_t		 id;
	int64_t		 org_id;
	char		 name[STORE_NAME_MAX + 1];
	char		 kind[16];		/* env oauth secret_file param */
	int64_t		 owner_id;
	int64_t		 bundle_id;		/* 0: none */
	void		*sealed;		/* malloc'd */
	size_t		 sealedlen;
	char		 status[16];
	char		 status_detail[STORE_ERROR_MAX];
	char		 checked_at[STORE_TIME_MAX];
	char		 created_at[STORE_TIME_MAX];
};

/* A tool as the run and grant paths need it. */
struct store_tool {
	int64_t		 id;
	int64_t		 org_id;
	char		 name[STORE_NAME_MAX + 1];
	int64_t		 owner_id;
	char		*base_url;
	char		*host;
	char		*bindings;		/* JSON array */
	char		*cli;			/* JSON object or NULL */
	int64_t		 bundle_id;		/* 0: none */
	char		 bundle[STORE_NAME_MAX + 1];	/* "" when none */
	int64_t		 project_id;		/* 0: org-wide */
};

/* A server run's first record, written before it starts. */
struct store_run {
	int64_t		 org_id;
	int64_t		 user_id;
	const char	*user_email;
	const char	*tool;
	const char	*argv;			/* JSON, masked */
	const char	*created_at;
	int64_t		 host;			/* the instance; 0: none */
	const char	*client;		/* X-Treg-Client, NULL: "" */
};

/* How a server run ended, appended (the run row never changes). */
struct store_run_end {
	int64_t		 run_id;
	int64_t		 org_id;
	const char	*outcome;	/* ok failed timed_out cancelled not_run */
	int		 has_exit;	/* 0: exit_code, duration_ms NULL */
	int64_t		 exit_code;
	int64_t		 duration_ms;
	int		 timed_out;
	int64_t		 redacted;
	int		 truncated;	/* 1 stdout, 2 stderr */
	const char	*created_at;
};

/* A call, grant, denial or run report (table calls); NULL: no value. */
struct store_call {
	int64_t		 org_id;
	int64_t		 user_id;
	const char	*user_email;
	const char	*client;	/* X-Treg-Client, NULL: "" */
	const char	*tool_name;
	const char	*method;
	const char	*path;
	int		 has_status;
	int64_t		 status_code;
	const char	*kind;		/* call, local_run */
	const char	*action;	/* GRANT DENY REPORT or NULL */
	const char	*refused_by;
	const char	*argv;		/* JSON, masked */
	int		 has_exit;
	int64_t		 exit_code;
	const char	*verdict;
	int64_t		 grant_id;	/* 0: none */
	int		 has_duration;
	int64_t		 duration_ms;
	const char	*created_at;
	int64_t		 host;		/* the instance that wrote it, 0 */
	/* A keyless run's request (SPEC 6a), schema 13; 0/NULL: none. */
	int64_t		 run_id;	/* its run's row (runs.id) */
	const char	*place;		/* "run"; NULL: the kind says */
	const char	*target_host;	/* the host it went to */
};

/*
 * One row of GET /runs: a server run (src 's') or a local grant ('l').
 * outcome "" is a server run without its end record (in flight or
 * interrupted) or a grant without a report.
 */
struct store_runs_row {
	char		 src;
	int64_t		 id;
	const char	*user_email;
	const char	*tool;
	const char	*argv;
	int		 has_exit;
	int64_t		 exit_code;
	int		 has_duration;
	int64_t		 duration_ms;
	const char	*outcome;
	const char	*created_at;
	const char	*org_slug;
	int64_t		 host;		/* 's': the instance that ran it, 0 */
	int64_t		 requests;	/* 's': its egress requests, schema 13 */
	const char	*client;	/* X-Treg-Client, schema 15; NULL: "" */
};
typedef int	(*store_runs_fn)(const struct store_runs_row *, void *);

/* One row of GET /calls. */
struct store_calls_row {
	int64_t		 id;
	struct store_call c;		/* its fields; NULL: a NULL column */
	int		 has_grant;
	const char	*org_slug;
	int		 has_bytes;	/* a relayed call that ended */
	int64_t		 bytes;
};
typedef int	(*store_calls_fn)(const struct store_calls_row *, void *);

/* Totals for tregctl show status and show metrics. */
struct store_counts {
	int64_t		 users;
	int64_t		 orgs;
	int64_t		 tools;
	int64_t		 secrets;
	int64_t		 runs;
	int64_t		 redacted;	/* secret occurrences masked */
	int64_t		 refusals;	/* calls refused or denied */
	int64_t		 grants;
};

/* A membership of an org, for tregctl's listings. */
struct store_org_member {
	int64_t		 user_id;
	const char	*email;
	const char	*role;
	const char	*tool_access;	/* JSON array, NULL: every tool */
	int		 local_run_enabled;
	const char	*agent_name;	/* "" for people */
	const char	*created_at;
};
typedef int	(*store_org_member_fn)(const struct store_org_member *,
		    void *);

/* A secret without its value, for tregctl's listings. */
struct store_secret_row {
	int64_t		 id;
	const char	*name;
	const char	*kind;
	const char	*owner_email;	/* "" when the owner is gone */
	int64_t		 bundle_id;	/* 0: none */
	const char	*status;
	const char	*status_detail;	/* NULL: none */
	const char	*checked_at;	/* NULL: never */
	const char	*created_at;
};
typedef int	(*store_secret_row_fn)(const struct store_secret_row *,
		    void *);
typedef int	(*store_org_fn)(int64_t, const char *, void *);

/* A deny rule (SPEC section 9); NULL texts and 0 ids: not set. */
struct store_deny {
	int64_t		 id;
	int64_t		 org_id;
	const char	*host;
	const char	*path_prefix;
	const char	*method;
	int64_t		 user_id;
	int64_t		 project_id;	/* 0: any tool; else its tools only */
	const char	*note;
	int64_t		 created_by;
	const char	*created_by_email;	/* read only; "" when gone */
	const char	*created_at;
};
typedef int	(*store_deny_fn)(const struct store_deny *, void *);

/*
 * A membership with its user and its org (vault_org.c); NULL texts are
 * NULL columns.  store_membership_insert reads user_id to created_at.
 */
struct store_membership {
	int64_t		 id;
	int64_t		 user_id;
	int64_t		 org_id;
	const char	*role;
	const char	*tool_access;	/* JSON array, NULL: every tool */
	int		 local_run_enabled;
	const char	*agent_name;	/* NULL for people */
	const char	*created_at;
	int		 is_agent;
	const char	*email;
	const char	*org_slug;
	const char	*org_name;
};
typedef int	(*store_membership_fn)(const struct store_membership *,
		    void *);

/* What store_membership_update changes: NULL or -1 keeps a column. */
struct store_membership_set {
	const uint8_t	*token_hash;		/* STORE_HASH_LEN bytes */
	const char	*role;
	int		 access_sent;	/* 1: tool_access is set, NULL too */
	const char	*tool_access;
	int		 local_run_enabled;
};

/* An invite; its code's hash is a parameter of its own. */
struct store_invite {
	int64_t		 id;
	int64_t		 org_id;
	const char	*email;
	const char	*role;
	const char	*tool_access;	/* JSON array, NULL: every tool */
	int		 local_run_enabled;
	int64_t		 expires_at;	/* seconds since the epoch */
	int		 used;
	int64_t		 created_by;
	const char	*created_at;
	const char	*org_slug;	/* read only */
	const char	*org_name;
	const char	*invited_by;	/* read only: the inviter's email */
};
typedef int	(*store_invite_fn)(const struct store_invite *, void *);

/*
 * An email's sign-in code (vault_identity.c): only a salted hash of the
 * code, when it expires, the wrong codes it still takes, and how many
 * codes were sent since window_start (the sending limit).
 */
struct store_email_code {
	uint8_t		 salt[STORE_HASH_LEN];
	uint8_t		 hash[STORE_HASH_LEN];
	int64_t		 expires_at;	/* seconds since the epoch; 0 none */
	int64_t		 attempts;
	int64_t		 window_start;
	int64_t		 sent;
};

/* A user, for tregctl show users. */
struct store_user {
	int64_t		 id;
	const char	*email;
	int		 is_agent;
	const char	*created_at;
};
typedef int	(*store_user_fn)(const struct store_user *, void *);

/* An org and its totals, for tregctl show orgs. */
struct store_org_row {
	int64_t		 id;
	const char	*slug;
	const char	*name;
	int64_t		 members;
	int64_t		 tools;
	int64_t		 secrets;
	const char	*created_at;
};
typedef int	(*store_org_row_fn)(const struct store_org_row *, void *);
typedef int	(*store_text_fn)(const char *, void *);

/* How a relayed call ended (table call_ends), appended after it. */
struct store_call_end {
	int64_t		 call_id;
	int64_t		 org_id;
	int		 has_status;	/* 0: no answer from the upstream */
	int64_t		 status_code;
	const char	*refused_by;	/* ssrf, upstream or NULL */
	int64_t		 duration_ms;
	int64_t		 bytes;		/* body bytes to the client */
	int64_t		 redacted;
	const char	*created_at;
};

/* A tool of a host, for resolving /call/<full URL>. */
struct store_tool_url {
	int64_t		 id;
	const char	*name;
	const char	*base_url;
};
typedef int	(*store_tool_url_fn)(const struct store_tool_url *, void *);

/* A sealed value, for re-sealing every secret under a new key. */
typedef int	(*store_sealed_fn)(int64_t id, int64_t org, const void *,
		    size_t, void *);

/*
 * A key as the database holds it (vault_keyring.c): its id, and the key
 * sealed under the key before it (wrapped_by), never the key in clear.
 */
struct store_key {
	const char	*id;		/* hex */
	const void	*wrapped;	/* NULL: a first key, or unlinked */
	size_t		 wrappedlen;
	const char	*wrapped_by;	/* hex, NULL with wrapped */
	int		 current;	/* the key of the last key use */
	const char	*retired_at;	/* NULL: not retired */
	const char	*created_at;
};
typedef int	(*store_key_fn)(const struct store_key *, void *);
/* A host and the key it seals under; a key id and its sealed values. */
typedef int	(*store_key_host_fn)(const char *, const char *, int64_t,
		    void *);

/* Types of the registry (vault_tool.c). */
/*
 * The registry: secrets, tools and skills (bundles).  A write that a
 * UNIQUE name refuses returns STORE_TAKEN (the engines tell it by its
 * error code, never by its text); in a transaction the caller then
 * rolls back.  Listings give rows by id, ascending.
 */
#define STORE_TAKEN	2

enum store_object {
	STORE_SECRET,
	STORE_TOOL,
	STORE_BUNDLE
};

/*
 * Which rows of org a listing gives: id > 0 that one; else name != NULL
 * the one of that name; else bundle > 0 those of that skill; else all.
 * brief: skills without their recipe and files ("").
 */
struct store_sel {
	int64_t		 org;
	int64_t		 id;
	const char	*name;
	int64_t		 bundle;
	int		 brief;
};
/* Which of those rules applies: an engine's statement for each. */
enum store_sel_by {
	STORE_SEL_ID,
	STORE_SEL_NAME,
	STORE_SEL_BUNDLE,
	STORE_SEL_ALL,
	STORE_SEL_MAX
};

/* For the engines: the rule of store_sel that picks the rows. */
static inline enum store_sel_by
store_sel_by(const struct store_sel *sel)
{
	if (sel->id > 0)
		return (STORE_SEL_ID);
	if (sel->name != NULL)
		return (STORE_SEL_NAME);
	if (sel->bundle > 0)
		return (STORE_SEL_BUNDLE);
	return (STORE_SEL_ALL);
}

/*
 * An object's owner and names, for the edit and reference checks; the
 * detail is a secret's kind or a tool's skill ("" when none).
 */
struct store_ref {
	int64_t		 id;
	int64_t		 owner_id;
	char		 name[STORE_NAME_MAX + 1];
	char		 detail[STORE_NAME_MAX + 1];	/* kind; skill */
};

/* A secret without its value. */
struct store_secret_item {
	int64_t		 id;
	const char	*name;
	const char	*kind;
	int64_t		 owner_id;
	const char	*owner_email;	/* NULL: the owner is gone */
	int64_t		 bundle_id;	/* 0: none */
};
typedef int	(*store_secret_item_fn)(const struct store_secret_item *,
		    void *);
/* A tool using a secret (tool NULL: the secret's own skill). */
typedef int	(*store_secret_user_fn)(const char *, const char *, void *);

/*
 * A tool, read or written.  JSON columns are their stored text (cli and
 * health_check NULL when none).  Writes use org_id, name, owner_id (on
 * insert), base_url, host, the JSON texts, bundle_id and created_at
 * (insert) or id (update).
 */
struct store_tool_item {
	int64_t		 id;
	int64_t		 org_id;
	const char	*name;
	int64_t		 owner_id;
	const char	*owner_email;	/* NULL: the owner is gone */
	const char	*base_url;
	const char	*host;
	const char	*bindings;
	const char	*cli;
	const char	*health_check;
	const char	*examples;
	int64_t		 bundle_id;	/* 0: none */
	const char	*bundle;	/* its name, "" when none */
	const char	*org_slug;	/* store_tools_by_slug only */
	const char	*created_at;
	int64_t		 project_id;	/* read only (store_tool_project_set) */
};
typedef int	(*store_tool_item_fn)(const struct store_tool_item *, void *);

/* A skill; files is its JSON object's text. */
struct store_bundle_item {
	int64_t		 id;
	int64_t		 org_id;
	const char	*name;
	int64_t		 owner_id;
	const char	*owner_email;	/* NULL: the owner is gone */
	const char	*recipe;
	const char	*files;
	const char	*created_at;
};
typedef int	(*store_bundle_item_fn)(const struct store_bundle_item *,
		    void *);

/*
 * A project: a sub-scope of an org that tools are filed under and
 * members scoped to (vault_project.c); tool_count is read only.
 */
struct store_project {
	int64_t		 id;
	int64_t		 org_id;
	const char	*name;
	const char	*slug;
	const char	*created_by;	/* the creator's email */
	const char	*created_at;
	int64_t		 tool_count;
};
typedef int	(*store_project_fn)(const struct store_project *, void *);
/*
 * An id and a text of a row: a membership's project_access (user, JSON
 * array of ids, not NULL), an identity token (its id, created_at).
 */
typedef int	(*store_access_fn)(int64_t, const char *, void *);

/*
 * One count of GET /orgs/{id}/usage: what 'u' (key a user's email,
 * kind call, local_run or server_run), 't' (key a tool) or 'd' (key a
 * day, YYYY-MM-DD), and how many records.
 */
struct store_usage_row {
	char		 what;
	const char	*key;
	const char	*kind;
	int64_t		 n;
};
typedef int	(*store_usage_fn)(const struct store_usage_row *, void *);

/*
 * One row of GET /orgs/{id}/agents/observed: a person and the runtime
 * (X-Treg-Client) their calls, grants and server runs came from, with
 * how many since the window began, how many today, and the last one.
 */
struct store_observed_row {
	const char	*member;	/* the user's email */
	const char	*client;
	int64_t		 n;
	int64_t		 today;
	const char	*last_seen;
};
typedef int	(*store_observed_fn)(const struct store_observed_row *,
		    void *);

/*
 * Inside the engines: a listing's callback and its argument, handed
 * through the engine's row walk to the function that reads one row.
 */
struct store_each {
	union {
		store_org_member_fn	 member;
		store_secret_row_fn	 secret_row;
		store_org_fn		 org;
		store_deny_fn		 deny;
		store_membership_fn	 membership;
		store_invite_fn		 invite;
		store_user_fn		 user;
		store_org_row_fn	 org_row;
		store_text_fn		 text;
		store_secret_item_fn	 secret;
		store_secret_user_fn	 secret_user;
		store_tool_item_fn	 tool;
		store_bundle_item_fn	 bundle;
		store_runs_fn		 runs;
		store_calls_fn		 calls;
		store_sealed_fn		 sealed;
		store_project_fn	 project;
		store_access_fn		 access;
		store_usage_fn		 usage;
		store_observed_fn	 observed;
	}		 fn;
	void		*arg;
};

struct store_ops {
	const char	*name;
	int	(*open)(const struct store_params *, char *, size_t);
	void	(*close)(void);
	int	(*check)(char *, size_t);
	int	(*backup)(const char *);
	int64_t	(*version)(void);
	const char *(*error)(void);
	int	(*begin)(void);
	int	(*commit)(void);
	void	(*rollback)(void);
	int	(*unavailable)(void);
	int	(*reach)(struct store_reach *);		/* NULL: a file */
	void	(*reach_dir)(const char *);
	int	(*member_by_token)(const uint8_t [STORE_HASH_LEN],
		    struct store_member *);
	int	(*secret_get)(int64_t, int64_t, struct store_secret *);
	int	(*secret_set_sealed)(int64_t, const void *, size_t);
	int	(*secrets_each_sealed)(store_sealed_fn, void *);
	int	(*tool_by_name)(int64_t, const char *, struct store_tool *);
	int	(*tool_secret_ids)(int64_t, int64_t *, size_t, size_t *);
	int	(*run_insert)(const struct store_run *, int64_t *);
	int	(*host_beat)(int64_t, const char *, int64_t);
	int	(*hosts_retire)(int64_t, const char *, int64_t);
	int	(*hosts_live)(int64_t, int64_t *, size_t, size_t *);
	int	(*run_end_insert)(const struct store_run_end *);
	int	(*call_insert)(const struct store_call *, int64_t *);
	int	(*runs_page)(int64_t, char, int64_t, store_runs_fn, void *);
	int	(*calls_page)(int64_t, int64_t, store_calls_fn, void *);
	int	(*org_by_slug)(const char *, int64_t *);
	int	(*org_secrets_sealed)(int64_t, store_sealed_fn, void *);
	int	(*sealed_count)(const void *, size_t, int64_t *);
	int	(*counts)(struct store_counts *);
	int	(*org_members)(int64_t, int, store_org_member_fn, void *);
	int	(*org_secrets)(int64_t, store_secret_row_fn, void *);
	int	(*user_by_email)(const char *, int64_t *, int *);
	int	(*user_sole_owned)(int64_t, store_org_fn, void *);
	int	(*user_first_org)(int64_t, int64_t *);
	int	(*user_delete)(int64_t);
	int	(*member_of)(int64_t, int64_t);
	int	(*deny_rules)(int64_t, int64_t, store_deny_fn, void *);
	int	(*deny_count)(int64_t, int64_t *);
	int	(*deny_insert)(const struct store_deny *, int64_t *);
	int	(*deny_get)(int64_t, store_deny_fn, void *);
	int	(*deny_delete)(int64_t, int64_t);

	/* ops: vault_org.c, vault_policy.c, vault_ctl.c */
	int	(*user_insert)(const char *, int, const char *, int64_t *);
	int	(*users_each)(store_user_fn, void *);
	int	(*org_insert)(const char *, const char *, const char *,
		    int64_t *);
	int	(*org_remove)(int64_t);
	int	(*org_find)(const char *, int64_t *, char *, size_t);
	int	(*orgs_each)(store_org_row_fn, void *);
	int	(*org_tool_count)(int64_t, const char *, int64_t *);
	int	(*org_has_tool)(int64_t, const char *);
	int	(*membership_insert)(const struct store_membership *,
		    const uint8_t [STORE_HASH_LEN], int64_t *);
	int	(*membership_get)(int64_t, int64_t, store_membership_fn,
		    void *);
	int	(*memberships)(int64_t, int, store_membership_fn, void *);
	int	(*user_memberships)(int64_t, store_membership_fn, void *);
	int	(*membership_update)(int64_t, int64_t,
		    const struct store_membership_set *);
	int	(*membership_remove)(int64_t, int64_t);
	int	(*owner_count)(int64_t, int64_t *);
	int	(*user_org_ids)(int64_t, const char *, int64_t *, size_t,
		    size_t *);
	int	(*invite_insert)(const struct store_invite *,
		    const uint8_t [STORE_HASH_LEN], int64_t *);
	int	(*invites_each)(int64_t, int64_t, store_invite_fn, void *);
	int	(*invite_by_code)(const uint8_t [STORE_HASH_LEN],
		    store_invite_fn, void *);
	int	(*invite_use)(int64_t);
	int	(*invite_delete)(int64_t, int64_t);
	int	(*grant_find)(int64_t, int64_t, int64_t, const char *);
	int	(*tool_secrets_mark)(int64_t, int64_t, const char *,
		    const char *, const char *, store_text_fn, void *);
	int	(*health)(int64_t, const char *, int64_t, store_secret_row_fn,
		    void *);
	int	(*secret_mark)(int64_t, int64_t, const char *, const char *,
		    const char *, store_text_fn, void *);
	int	(*webhook_set)(int64_t, int64_t, const char *);
	int	(*webhook_find)(int64_t, int64_t, store_text_fn, void *);

	/* ops: vault_tool.c */
	int	(*ref_get)(enum store_object, int64_t, int64_t, const char *,
		    struct store_ref *);
	int	(*secrets)(const struct store_sel *, store_secret_item_fn,
		    void *);
	int	(*secret_insert)(const struct store_secret *, int64_t *);
	int	(*secret_set_value)(int64_t, int64_t, const void *, size_t);
	int	(*secret_update)(int64_t, int64_t, const char *, const char *);
	int	(*secret_users)(int64_t, store_secret_user_fn, void *);
	int	(*secret_delete)(int64_t, int64_t);
	int	(*tools)(const struct store_sel *, store_tool_item_fn, void *);
	int	(*tools_by_slug)(const char *, store_tool_item_fn, void *);
	int	(*tool_name_used)(int64_t, const char *, int64_t);
	int	(*tool_insert)(const struct store_tool_item *, int64_t *);
	int	(*tool_update)(const struct store_tool_item *);
	int	(*tool_secrets_set)(int64_t, const int64_t *, size_t);
	int	(*tool_delete)(int64_t, int64_t);
	int	(*bundles)(const struct store_sel *, store_bundle_item_fn,
		    void *);
	int	(*bundle_insert)(const struct store_bundle_item *, int64_t *);
	int	(*bundle_set_recipe)(int64_t, int64_t, const char *);
	int	(*bundle_outside_user)(int64_t, char *, char *, size_t);
	int	(*bundle_delete)(int64_t, int64_t);

	/* ops: calls and daily caps (the relay) */
	int	(*read_begin)(void);
	void	(*read_end)(void);
	int	(*call_end_insert)(const struct store_call_end *);
	int	(*call_cap_take)(int64_t, int64_t, const char *, int64_t,
		    int64_t);
	int	(*call_used)(int64_t, int64_t, const char *, int64_t *);
	int	(*call_cap_get)(int64_t, int64_t, int *, int64_t *);
	int	(*call_cap_set)(int64_t, int64_t, int, int64_t);
	int	(*tools_by_host)(int64_t, const char *, store_tool_url_fn,
		    void *);
	int	(*registry_version)(int64_t *);

	/* ops: batched run ends */
	int	(*run_ends_insert)(const struct store_run_end *, size_t);
	int	(*runs_tools)(int64_t, const char *const *, size_t, char,
		    int64_t, int, store_runs_fn, void *);

	/* ops: keyless runs' requests (schema 13) */
	int	(*calls_run_page)(int64_t, int64_t, int64_t, store_calls_fn,
		    void *);

	/* ops: treg compatibility */
	/* identity tokens and sign-in codes (store_*_identity.c) */
	int	(*identity_insert)(int64_t, const uint8_t [STORE_HASH_LEN],
		    const char *);
	int	(*identity_by_token)(const uint8_t [STORE_HASH_LEN], int64_t *,
		    char *, size_t, int *);
	int	(*identity_member_hash)(const uint8_t [STORE_HASH_LEN],
		    const char *, uint8_t [STORE_HASH_LEN]);
	int	(*identity_count)(int64_t, int64_t *);
	int	(*identity_trim)(int64_t, int64_t);
	int	(*identity_revoke)(int64_t);
	int	(*identity_tokens)(int64_t, store_access_fn, void *);
	int	(*email_code_get)(const char *, struct store_email_code *);
	int	(*email_code_put)(const char *,
		    const struct store_email_code *);
	int	(*invites_of_email)(const char *, int64_t, store_invite_fn,
		    void *);
	int	(*invite_by_id)(int64_t, store_invite_fn, void *);

	/* ops: the keyring in the database (storage helper) */
	int	(*keys)(const char *, store_key_fn, void *);
	int	(*key_insert)(const struct store_key *);
	int	(*key_set_current)(const char *);
	int	(*key_retire)(const char *, const char *);
	int	(*key_unlink)(const char *);
	int	(*key_host_set)(const char *, const char *, const char *);
	int	(*key_hosts)(store_key_host_fn, void *);
	int	(*sealed_keys)(store_key_host_fn, void *);

	/* ops: projects and usage (vault_project.c) */
	int	(*project_insert)(const struct store_project *, int64_t *);
	int	(*projects)(int64_t, store_project_fn, void *);
	int	(*project_delete)(int64_t, int64_t, int64_t *);
	int	(*tool_project_set)(int64_t, int64_t, int64_t);
	int	(*member_projects)(int64_t, store_access_fn, void *);
	int	(*member_projects_set)(int64_t, int64_t, const char *);
	int	(*invite_projects)(int64_t, char **);
	int	(*invite_projects_set)(int64_t, const char *);
	int	(*usage)(int64_t, const char *, store_usage_fn, void *);

	/* ops: the observed agents (vault_observed.c) */
	int	(*observed)(int64_t, const char *, const char *, int64_t,
		    store_observed_fn, void *);
};
extern const struct store_ops	store_sqlite_ops;	/* store_sqlite.c */
/* A database file at rest: quick_check, then fn per sealed key id. */
int		 store_sqlite_inspect(const char *, store_key_host_fn, void *,
		    char *, size_t);
extern const struct store_ops	store_pg_ops;		/* store_pg.c */

/* store.c: the engine chosen at open. */
/*
 * Open, check (PRAGMA quick_check or the engine's equivalent, a missing
 * WAL) and migrate; refuse a damaged database with why in err.
 */
int		 store_open(const struct store_params *, char *, size_t);
void		 store_close(void);
int		 store_check(char *, size_t);	/* 0 ok, -1 why in buf */
/* 1 and what to let through when the database is a server, else 0. */
int		 store_reach(struct store_reach *);
/* The socket directory as the confined vault sees it (a bind mount). */
void		 store_reach_dir(const char *);
/* A consistent copy of the database into path, while serving. */
int		 store_backup(const char *);
/*
 * A number that changes whenever anything was written by anyone (any
 * connection, any worker, any host): caches keyed by it stay correct.
 */
int64_t		 store_version(void);
const char	*store_error(void);
int		 store_begin(void);	/* a write transaction */
int		 store_commit(void);	/* rolls back when it fails */
void		 store_rollback(void);	/* no-op outside a transaction */
/*
 * Whether the last failure was the database's state (locked, full,
 * unreachable: try again later) rather than a fault: 503, not 500.
 */
int		 store_unavailable(void);

int		 store_member_by_token(const uint8_t [STORE_HASH_LEN],
		    struct store_member *);
void		 store_member_clear(struct store_member *);
/* Secret id of org. */
int		 store_secret_get(int64_t, int64_t, struct store_secret *);
void		 store_secret_clear(struct store_secret *);
int		 store_secret_set_sealed(int64_t, const void *, size_t);
int		 store_secrets_each_sealed(store_sealed_fn, void *);
/* Tool name of org (with its bundle's name). */
int		 store_tool_by_name(int64_t, const char *, struct store_tool *);
void		 store_tool_clear(struct store_tool *);
/* Up to max secret ids a tool uses, ascending; *n how many. */
int		 store_tool_secret_ids(int64_t, int64_t *, size_t, size_t *);
int		 store_run_insert(const struct store_run *, int64_t *);
/*
 * The hosts serving on the database (vault_hosts.c): instance, name and
 * time(3) it was last seen alive (0: stopped); the other instances of a
 * name (a host started again) and those unseen since a time are gone;
 * the instances seen since a time, at most max.
 */
int		 store_host_beat(int64_t, const char *, int64_t);
int		 store_hosts_retire(int64_t, const char *, int64_t);
int		 store_hosts_live(int64_t, int64_t *, size_t, size_t *);
int		 store_run_end_insert(const struct store_run_end *);
int		 store_call_insert(const struct store_call *, int64_t *);
/*
 * GET /runs of org (0: every org): server runs (without the not_run
 * ones) and local grants merged, newest first (created_at, then 's'
 * before 'l', then id), strictly older than the row (before_src,
 * before_id) when before_id > 0.
 */
int		 store_runs_page(int64_t, char, int64_t, store_runs_fn,
		    void *);
/* GET /calls of org (0: every org), ids below before_id (0: all). */
int		 store_calls_page(int64_t, int64_t, store_calls_fn, void *);
/*
 * GET /calls?run_id=: the requests of one run (its runs.id) of org,
 * newest first, ids below before_id (0: all), on their own index.  A
 * call written with run_id counts in that run's requests (GET /runs).
 */
int		 store_calls_run_page(int64_t, int64_t, int64_t,
		    store_calls_fn, void *);
int		 store_org_by_slug(const char *, int64_t *);
/* The sealed values of an org's secrets other than params. */
int		 store_org_secrets_sealed(int64_t, store_sealed_fn, void *);
/* How many secrets' sealed values start with these bytes (a key id). */
int		 store_sealed_count(const void *, size_t, int64_t *);
int		 store_counts(struct store_counts *);
/* The people (agents 0) or the agents (1) of an org, oldest first. */
int		 store_org_members(int64_t, int, store_org_member_fn, void *);
int		 store_org_secrets(int64_t, store_secret_row_fn, void *);
/* The user of an email: its id and whether it is an agent. */
int		 store_user_by_email(const char *, int64_t *, int *);
/* The orgs (id, slug) whose only owner the user is. */
int		 store_user_sole_owned(int64_t, store_org_fn, void *);
/* One org the user is a member of: 0, or 1 when none is left. */
int		 store_user_first_org(int64_t, int64_t *);
/* The user row (its memberships must be gone). */
int		 store_user_delete(int64_t);
/* Whether user is a member of org: 0 yes, 1 no. */
int		 store_member_of(int64_t, int64_t);
/*
 * The deny rules of org, oldest first: with user >= 0 the rules for
 * everyone and that user's, with user < 0 all of them.
 */
int		 store_deny_rules(int64_t, int64_t, store_deny_fn, void *);
int		 store_deny_count(int64_t, int64_t *);
/* "" texts are stored as NULL. */
int		 store_deny_insert(const struct store_deny *, int64_t *);
int		 store_deny_get(int64_t, store_deny_fn, void *);
/* Rule id of org: 0 deleted, 1 no such rule. */
int		 store_deny_delete(int64_t, int64_t);

/* vault_org.c, vault_policy.c, vault_ctl.c */
/* An insert that a unique key refused (the functions that say so). */
#define STORE_CONFLICT		2
/* A user row: its id, or STORE_CONFLICT when the email is taken. */
int		 store_user_insert(const char *, int, const char *,
		    int64_t *);
/* Every user, oldest first. */
int		 store_users_each(store_user_fn, void *);
/* slug, name, created_at: its id, or STORE_CONFLICT (the slug). */
int		 store_org_insert(const char *, const char *, const char *,
		    int64_t *);
/*
 * The org and all it holds (the schema's cascades); its agents' user
 * rows first, since an agent exists only for its org.
 */
int		 store_org_remove(int64_t);
/*
 * An org by slug, else by name when no slug is so: 0 found (its id and
 * slug), 1 none, 2 several have that name.
 */
int		 store_org_find(const char *, int64_t *, char *, size_t);
int		 store_orgs_each(store_org_row_fn, void *);
/* The org's tools a JSON access list lets see (NULL: all of them). */
int		 store_org_tool_count(int64_t, const char *, int64_t *);
/* Whether org has a tool or a skill of that name: 0 yes, 1 no. */
int		 store_org_has_tool(int64_t, const char *);
/* Its id, or STORE_CONFLICT (already a member, or the token's hash). */
int		 store_membership_insert(const struct store_membership *,
		    const uint8_t [STORE_HASH_LEN], int64_t *);
/* The membership of user in org. */
int		 store_membership_get(int64_t, int64_t, store_membership_fn,
		    void *);
/* The org's people (0), agents (1) or both (-1), oldest first. */
int		 store_memberships(int64_t, int, store_membership_fn, void *);
/* The user's memberships, by org id. */
int		 store_user_memberships(int64_t, store_membership_fn, void *);
/* user, org: 0 changed, 1 no such membership. */
int		 store_membership_update(int64_t, int64_t,
		    const struct store_membership_set *);
/*
 * user, org: the membership (its token), the org's deny rules aimed at
 * the user, and the user row of an agent, which exists only for it.
 */
int		 store_membership_remove(int64_t, int64_t);
int		 store_owner_count(int64_t, int64_t *);
/*
 * Up to max orgs the user is a member of, by membership id: all, or
 * the ones whose slug or name is org ("" all).
 */
int		 store_user_org_ids(int64_t, const char *, int64_t *, size_t,
		    size_t *);
int		 store_invite_insert(const struct store_invite *,
		    const uint8_t [STORE_HASH_LEN], int64_t *);
/* The org's unused invites expiring after now, oldest first. */
int		 store_invites_each(int64_t, int64_t, store_invite_fn,
		    void *);
int		 store_invite_by_code(const uint8_t [STORE_HASH_LEN],
		    store_invite_fn, void *);
/* Mark it used: 0, or 1 when it was already (another request). */
int		 store_invite_use(int64_t);
/* org, id: an unused invite deleted (0) or none (1). */
int		 store_invite_delete(int64_t, int64_t);
/*
 * Identity tokens: a person across orgs, only their hash stored
 * (vault_identity.c).  user, hash, created_at.
 */
int		 store_identity_insert(int64_t, const uint8_t [STORE_HASH_LEN],
		    const char *);
/* hash: its user, the user's email (into email, len) and is_agent. */
int		 store_identity_by_token(const uint8_t [STORE_HASH_LEN],
		    int64_t *, char *, size_t, int *);
/*
 * hash, org (a slug or an id): the token hash of its user's membership
 * of that org (0), or 1 when the token or the membership is not there.
 */
int		 store_identity_member_hash(const uint8_t [STORE_HASH_LEN],
		    const char *, uint8_t [STORE_HASH_LEN]);
int		 store_identity_count(int64_t, int64_t *);
/* user, keep: all but the user's keep newest tokens deleted. */
int		 store_identity_trim(int64_t, int64_t);
/* Every identity token of the user deleted. */
int		 store_identity_revoke(int64_t);
/* The user's identity tokens, oldest first (never their hashes). */
int		 store_identity_tokens(int64_t, store_access_fn, void *);
/* email: its code (0), or 1 when none was ever sent. */
int		 store_email_code_get(const char *, struct store_email_code *);
int		 store_email_code_put(const char *,
		    const struct store_email_code *);
/* The unused invites of an email expiring after now, oldest first. */
int		 store_invites_of_email(const char *, int64_t, store_invite_fn,
		    void *);
int		 store_invite_by_id(int64_t, store_invite_fn, void *);
/* org, user, audit id, tool: whether it is that user's local grant. */
int		 store_grant_find(int64_t, int64_t, int64_t, const char *);
/*
 * org, tool, status, detail, checked_at: the health of the tool's
 * secrets but params; fn gets each name marked.
 */
int		 store_tool_secrets_mark(int64_t, int64_t, const char *,
		    const char *, const char *, store_text_fn, void *);
/*
 * GET /health: org, access list (JSON, NULL: no filter), user (whose
 * own secrets it sees too); the rows have no bundle_id or created_at.
 */
int		 store_health(int64_t, const char *, int64_t,
		    store_secret_row_fn, void *);
/*
 * org, secret, status, detail, checked_at: one secret's health (not a
 * param's); fn gets its name when it was marked.
 */
int		 store_secret_mark(int64_t, int64_t, const char *,
		    const char *, const char *, store_text_fn, void *);
/* org, user, url (NULL: none): the membership's owner-alert webhook. */
int		 store_webhook_set(int64_t, int64_t, const char *);
/*
 * org, user: fn gets the webhook an alert about the user's secrets in
 * org goes to (0), or is not called (1): the user's membership of org,
 * else another of theirs, else an owner's of org (treg's fallbacks).
 */
int		 store_webhook_find(int64_t, int64_t, store_text_fn, void *);

/* vault_tool.c */
/* Object id (name NULL) or name of org: 0 and *ref, 1 none, -1. */
int		 store_ref_get(enum store_object, int64_t, int64_t,
		    const char *, struct store_ref *);
int		 store_secrets(const struct store_sel *, store_secret_item_fn,
		    void *);
/* org_id, name, kind, owner_id, bundle_id, created_at; value empty. */
int		 store_secret_insert(const struct store_secret *, int64_t *);
/* A new sealed value of secret id of org: its status is unknown again. */
int		 store_secret_set_value(int64_t, int64_t, const void *,
		    size_t);
/* New name (NULL: kept) and kind of secret id of org. */
int		 store_secret_update(int64_t, int64_t, const char *,
		    const char *);
/* The tools that use secret id (by tool name), then its own skill. */
int		 store_secret_users(int64_t, store_secret_user_fn, void *);
int		 store_secret_delete(int64_t, int64_t);
int		 store_tools(const struct store_sel *, store_tool_item_fn,
		    void *);
/* For tregctl: the tools of the org slug ("": of every org), by org. */
int		 store_tools_by_slug(const char *, store_tool_item_fn, void *);
/* 0 when another tool than except has the name in org, 1 when none. */
int		 store_tool_name_used(int64_t, const char *, int64_t);
int		 store_tool_insert(const struct store_tool_item *, int64_t *);
int		 store_tool_update(const struct store_tool_item *);
/* The secrets a tool uses, replacing the ones it used. */
int		 store_tool_secrets_set(int64_t, const int64_t *, size_t);
int		 store_tool_delete(int64_t, int64_t);
int		 store_bundles(const struct store_sel *, store_bundle_item_fn,
		    void *);
int		 store_bundle_insert(const struct store_bundle_item *,
		    int64_t *);
int		 store_bundle_set_recipe(int64_t, int64_t, const char *);
/*
 * A tool outside skill id using one of its secrets: 0 and their names
 * (tool, secret, each of len bytes), 1 none.
 */
int		 store_bundle_outside_user(int64_t, char *, char *, size_t);
/* The skill and, by the schema's cascades, its tools and secrets. */
int		 store_bundle_delete(int64_t, int64_t);

/* calls and daily caps (the relay) */
/*
 * The reads of one request in one read transaction (one snapshot, one
 * set of locks instead of one per statement); nothing is written
 * before store_read_end().  A no-op where statements cost no locks.
 */
int		 store_read_begin(void);
void		 store_read_end(void);
int		 store_call_end_insert(const struct store_call_end *);
/*
 * Count n calls of user in org on day ("YYYY-MM-DD", UTC) unless that
 * would pass cap: 0 taken, 1 not (nothing counted), -1.  Atomic across
 * workers and hosts.
 */
int		 store_call_cap_take(int64_t, int64_t, const char *, int64_t,
		    int64_t);
/* The calls counted for user in org on day (0 when none). */
int		 store_call_used(int64_t, int64_t, const char *, int64_t *);
/* The membership's daily_call_cap: *has 0 for none (null). */
int		 store_call_cap_get(int64_t, int64_t, int *, int64_t *);
int		 store_call_cap_set(int64_t, int64_t, int, int64_t);
/* The tools of org whose host is host (lower case), by id. */
int		 store_tools_by_host(int64_t, const char *, store_tool_url_fn,
		    void *);
/*
 * The registry version: moved in the writing transaction by every change
 * of users, orgs, memberships, invites, bundles, secrets, tools, their
 * secrets and deny rules, never by the audit, runs or daily counts.
 * Read first in a call's read transaction, it names the data read after.
 */
int		 store_registry_version(int64_t *);

/* batched run ends */
/* n ends in one transaction: all are committed, or none (-1). */
int		 store_run_ends_insert(const struct store_run_end *, size_t);
/*
 * store_runs_page() of one org restricted to the runs of some tools
 * (tools NULL: every tool; ntools 0: none, an empty page), at most limit
 * rows: one walk per tool, O(ntools * (log N + limit)).
 */
int		 store_runs_page_tools(int64_t, const char *const *, size_t,
		    char, int64_t, int, store_runs_fn, void *);

/* treg compatibility */

/* the keyring in the database (storage helper) */
/*
 * The keys (id NULL: every key, oldest first; else that one: 0, 1 none).
 * In a transaction, PostgreSQL locks the rows read until its end (FOR
 * SHARE): a retire waits for a seal under the key to commit.
 */
int		 store_keys(const char *, store_key_fn, void *);
/* 0, STORE_TAKEN: the id is there already, -1. */
int		 store_key_insert(const struct store_key *);
/* The key of id becomes the only current one: 0, 1 no such key. */
int		 store_key_set_current(const char *);
/* Marked retired at a time: 0, 1 no such key. */
int		 store_key_retire(const char *, const char *);
/* The wrapped copies sealed under the key of id are dropped. */
int		 store_key_unlink(const char *);
/* host seals under key id (an upsert). */
int		 store_key_host_set(const char *, const char *, const char *);
/* fn(host, key id, 0) per host. */
int		 store_key_hosts(store_key_host_fn, void *);
/* fn(NULL, key id in hex, sealed values) per key id sealed values carry. */
int		 store_sealed_keys(store_key_host_fn, void *);

/* projects and usage (vault_project.c) */
/* org_id, name, slug, created_by, created_at: its id, or STORE_CONFLICT. */
int		 store_project_insert(const struct store_project *,
		    int64_t *);
/* The org's projects with their tool counts, by id. */
int		 store_projects(int64_t, store_project_fn, void *);
/*
 * org, id: the project deleted, its tools made org-wide (*freed of
 * them): 0, or 1 when the org has no such project.
 */
int		 store_project_delete(int64_t, int64_t, int64_t *);
/* org, tool, project (0: org-wide): 0, 1 no such tool. */
int		 store_tool_project_set(int64_t, int64_t, int64_t);
/* The org's memberships scoped to projects, by user id. */
int		 store_member_projects(int64_t, store_access_fn, void *);
/* org, user, JSON array of ids (NULL: the whole org): 0, 1 none. */
int		 store_member_projects_set(int64_t, int64_t, const char *);
/* An invite's project_access into *json (malloc'd, NULL: whole org). */
int		 store_invite_projects(int64_t, char **);
int		 store_invite_projects_set(int64_t, const char *);
/*
 * What org's records since (an ISO time) count: calls and local runs
 * (their reports not again) per user and kind, server runs per user,
 * then per tool, then per day.
 */
int		 store_usage(int64_t, const char *, store_usage_fn, void *);

/* the observed agents (vault_observed.c) */
/*
 * org, since, today (ISO times), at most max rows: per (email, client)
 * of the org's calls, grants, reports and server runs since, that a
 * person (not an agent, an address @agents.local) made from a runtime
 * other than "" and "cli": counts and the last time, by email then
 * client, in byte order.
 */
int		 store_observed(int64_t, const char *, const char *, int64_t,
		    store_observed_fn, void *);

#endif /* STORE_H */
