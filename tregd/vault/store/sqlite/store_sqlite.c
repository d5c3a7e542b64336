/*
 * The sqlite engine of store.h: one connection per vault process (a
 * file in the state directory, WAL: readers never wait for the writer),
 * its statement cache, transactions, the checks at start and the online
 * backup.  Every statement of the engine lives in a store_sqlite*.c file
 * and binds its values by parameter name.
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "store_sqlite.h"
#include "util.h"

sqlite3			*vault_db;

struct stmt_cache {
	const char	*sql;		/* the caller's string constant */
	sqlite3_stmt	*st;
};
#define STMT_CACHE_MAX	256
#define SQ_SCHEMA_PERSIST_WAL	3	/* the first to keep its WAL */
/*
 * Waiting for the write lock blocks the whole vault worker, reads queued
 * behind it included.  Another worker holds it for milliseconds: a write
 * waits up to SQ_BUSY_WAIT_MS.  A lock held longer is another process's
 * (an operator's sqlite3, a backup tool): once a wait gave up, the next
 * ones wait SQ_BUSY_LOCKED_MS only, until a write gets the lock again,
 * so that reads keep their pace and writes answer 503 at once.
 */
#define SQ_BUSY_WAIT_MS		1000
#define SQ_BUSY_LOCKED_MS	20
#define SQ_LOCKED_MEMO_MS	2000	/* how long a give-up is remembered */
static int64_t			 busy_since;	/* ms, of this wait */
static int64_t			 db_locked;	/* ms of the last give-up, 0 */
static int			 db_unavailable; /* the last failure: busy, full */
static struct stmt_cache	 stmt_cache[STMT_CACHE_MAX];
static int			 nstmt_cache;
static int64_t			 seen_dataver = -1, seen_changes = -1;
static int64_t			 version;

static int	sq_open(const struct store_params *, char *, size_t);
static void	sq_close(void);
static int	sq_check(char *, size_t);
static int	sq_header(const char *, int *, int *, char *, size_t);
static int	sq_mark_open(const struct store_params *, int, char *, size_t);
static int	sq_mark_check(const char *, int, char *, size_t);
static int	sq_wal_hook(void *, sqlite3 *, const char *, int);
static int	sq_open_immutable(const char *, char *, size_t);
static int	sq_check_file(const char *, char *, size_t);
static int	sq_backup(const char *);
static int64_t	sq_version(void);
static const char *sq_error(void);
static int	sq_begin(void);
static int	sq_commit(void);
static void	sq_rollback(void);
static int	db_run(const char *);
static int	sq_busy(void *, int);
static int	sq_unavailable(void);
static int	sq_member_by_token(const uint8_t [STORE_HASH_LEN],
		    struct store_member *);
static int	sq_secret_get(int64_t, int64_t, struct store_secret *);
static int	sq_secret_set_sealed(int64_t, const void *, size_t);
static int	sq_sealed_rows(sqlite3_stmt *, store_sealed_fn, void *);
static int	sq_sealed_row(sqlite3_stmt *, void *);
static int	sq_secrets_each_sealed(store_sealed_fn, void *);
static int	sq_org_secrets_sealed(int64_t, store_sealed_fn, void *);
static int	sq_sealed_count(const void *, size_t, int64_t *);
static int	sq_tool_by_name(int64_t, const char *, struct store_tool *);
static int	sq_tool_secret_ids(int64_t, int64_t *, size_t, size_t *);
static int	sq_org_by_slug(const char *, int64_t *);

const struct store_ops store_sqlite_ops = {
	.name = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.check = sq_check,
	.backup = sq_backup,
	.version = sq_version,
	.error = sq_error,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_rollback,
	.unavailable = sq_unavailable,
	.member_by_token = sq_member_by_token,
	.secret_get = sq_secret_get,
	.secret_set_sealed = sq_secret_set_sealed,
	.secrets_each_sealed = sq_secrets_each_sealed,
	.tool_by_name = sq_tool_by_name,
	.tool_secret_ids = sq_tool_secret_ids,
	.run_insert = sq_run_insert,
	.host_beat = sq_host_beat,
	.hosts_retire = sq_hosts_retire,
	.hosts_live = sq_hosts_live,
	.run_end_insert = sq_run_end_insert,
	.call_insert = sq_call_insert,
	.runs_page = sq_runs_page,
	.calls_page = sq_calls_page,
	.org_by_slug = sq_org_by_slug,
	.org_secrets_sealed = sq_org_secrets_sealed,
	.sealed_count = sq_sealed_count,
	.counts = sq_counts,
	.org_members = sq_org_members,
	.org_secrets = sq_org_secrets,
	.user_by_email = sq_user_by_email,
	.user_sole_owned = sq_user_sole_owned,
	.user_first_org = sq_user_first_org,
	.user_delete = sq_user_delete,
	.member_of = sq_member_of,
	.deny_rules = sq_deny_rules,
	.deny_count = sq_deny_count,
	.deny_insert = sq_deny_insert,
	.deny_get = sq_deny_get,
	.deny_delete = sq_deny_delete,

	/* vault_org.c, vault_policy.c, vault_ctl.c */
	.user_insert = sq_user_insert,
	.users_each = sq_users_each,
	.org_insert = sq_org_insert,
	.org_remove = sq_org_remove,
	.org_find = sq_org_find,
	.orgs_each = sq_orgs_each,
	.org_tool_count = sq_org_tool_count,
	.org_has_tool = sq_org_has_tool,
	.membership_insert = sq_membership_insert,
	.membership_get = sq_membership_get,
	.memberships = sq_memberships,
	.user_memberships = sq_user_memberships,
	.membership_update = sq_membership_update,
	.membership_remove = sq_membership_remove,
	.owner_count = sq_owner_count,
	.user_org_ids = sq_user_org_ids,
	.invite_insert = sq_invite_insert,
	.invites_each = sq_invites_each,
	.invite_by_code = sq_invite_by_code,
	.invite_use = sq_invite_use,
	.invite_delete = sq_invite_delete,
	.identity_insert = sq_identity_insert,
	.identity_by_token = sq_identity_by_token,
	.identity_member_hash = sq_identity_member_hash,
	.identity_count = sq_identity_count,
	.identity_trim = sq_identity_trim,
	.identity_revoke = sq_identity_revoke,
	.identity_tokens = sq_identity_tokens,
	.email_code_get = sq_email_code_get,
	.email_code_put = sq_email_code_put,
	.invites_of_email = sq_invites_of_email,
	.invite_by_id = sq_invite_by_id,
	.grant_find = sq_grant_find,
	.tool_secrets_mark = sq_tool_secrets_mark,
	.health = sq_health,
	.secret_mark = sq_secret_mark,
	.webhook_set = sq_webhook_set,
	.webhook_find = sq_webhook_find,

	/* vault_tool.c */
	.ref_get = sq_ref_get,
	.secrets = sq_secrets,
	.secret_insert = sq_secret_insert,
	.secret_set_value = sq_secret_set_value,
	.secret_update = sq_secret_update,
	.secret_users = sq_secret_users,
	.secret_delete = sq_secret_delete,
	.tools = sq_tools,
	.tools_by_slug = sq_tools_by_slug,
	.tool_name_used = sq_tool_name_used,
	.tool_insert = sq_tool_insert,
	.tool_update = sq_tool_update,
	.tool_secrets_set = sq_tool_secrets_set,
	.tool_delete = sq_tool_delete,
	.bundles = sq_bundles,
	.bundle_insert = sq_bundle_insert,
	.bundle_set_recipe = sq_bundle_set_recipe,
	.bundle_outside_user = sq_bundle_outside_user,
	.bundle_delete = sq_bundle_delete,

	/* calls and daily caps (the relay) */
	.read_begin = sq_read_begin,
	.read_end = sq_read_end,
	.call_end_insert = sq_call_end_insert,
	.call_cap_take = sq_call_cap_take,
	.call_used = sq_call_used,
	.call_cap_get = sq_call_cap_get,
	.call_cap_set = sq_call_cap_set,
	.tools_by_host = sq_tools_by_host,
	.registry_version = sq_registry_version,

	/* batched run ends */
	.run_ends_insert = sq_run_ends_insert,
	.runs_tools = sq_runs_tools,

	/* keyless runs' requests */
	.calls_run_page = sq_calls_run_page,

	/* treg compatibility */

	/* the keyring in the database (storage helper) */
	.keys = sq_keys,
	.key_insert = sq_key_insert,
	.key_set_current = sq_key_set_current,
	.key_retire = sq_key_retire,
	.key_unlink = sq_key_unlink,
	.key_host_set = sq_key_host_set,
	.key_hosts = sq_key_hosts,
	.sealed_keys = sq_sealed_keys,

	/* projects and usage (store_sqlite_project.c) */
	.project_insert = sq_project_insert,
	.projects = sq_projects,
	.project_delete = sq_project_delete,
	.tool_project_set = sq_tool_project_set,
	.member_projects = sq_member_projects,
	.member_projects_set = sq_member_projects_set,
	.invite_projects = sq_invite_projects,
	.invite_projects_set = sq_invite_projects_set,
	.usage = sq_usage,

	/* the observed agents (store_sqlite_audit.c) */
	.observed = sq_observed,
};

/* ------------------------------------------------------------------ */
/* Opening and checking.                                               */

/*
 * The commit mark.  Every row written moves a counter in the database
 * (commit_mark, by triggers, inside the writing transaction), and after
 * each commit the vault writes the counter it committed into
 * tregd.db-mark beside the database (one slot per worker).  A database
 * file whose WAL is gone holds every committed row exactly when its
 * counter is not behind the file's: a checkpoint by another program
 * (the sqlite3 shell removes the WAL at its exit) lost nothing, a WAL
 * removed or left behind with rows is told apart, and by how many.
 */
#define SQ_MARK_SLOTS		16	/* VAULT_WORKERS_MAX */
#define SQ_AUTOCHECKPOINT	1000	/* sqlite's default, in frames */

static int		 mark_fd = -1;
static unsigned int	 mark_slot;
static int		 mark_known;	/* tregd.db-mark was there */
static int64_t		 mark_want;	/* the highest mark it holds */
static char		 mark_path[1024];

/*
 * The database file's header: *walmode 1 in WAL mode; *walgone 1 when
 * a database that keeps its WAL (schema 3 on, or 0: a schema only ever
 * in the WAL) has none.  Older tregds removed the WAL at a clean stop,
 * as does any other program that opens the database.
 */
static int
sq_header(const char *path, int *walmode, int *walgone, char *err,
    size_t len)
{
	unsigned char	 hdr[64];
	uint32_t	 uv;
	char		 wal[1024];
	struct stat	 sb;
	int		 fd;
	ssize_t		 n;

	*walmode = *walgone = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (errno == ENOENT ? 0 : -1);
	n = read(fd, hdr, sizeof(hdr));
	close(fd);
	if (n == 0)
		return (0);
	/* Bytes 18 and 19 of the header are 2 in WAL mode. */
	if (n != sizeof(hdr) || memcmp(hdr, "SQLite format 3", 16) != 0) {
		snprintf(err, len, "%s is not a tregd database", path);
		return (-1);
	}
	/* Bytes 60..63: user_version, big-endian. */
	uv = (uint32_t)hdr[60] << 24 | (uint32_t)hdr[61] << 16 |
	    (uint32_t)hdr[62] << 8 | hdr[63];
	*walmode = hdr[18] == 2 && hdr[19] == 2;
	if (!*walmode || (uv != 0 && uv < SQ_SCHEMA_PERSIST_WAL))
		return (0);
	if (snprintf(wal, sizeof(wal), "%s-wal", path) >= (int)sizeof(wal))
		return (-1);
	*walgone = stat(wal, &sb) == -1;
	return (0);
}

/*
 * tregd.db-mark: opened (made if absent) and read.  A database not in
 * WAL mode is a new one or a restored backup: its marks start again.
 */
static int
sq_mark_open(const struct store_params *p, int walmode, char *err,
    size_t len)
{
	int64_t		 slots[SQ_MARK_SLOTS];
	ssize_t		 n;
	int		 i;

	if (snprintf(mark_path, sizeof(mark_path), "%s-mark", p->path) >=
	    (int)sizeof(mark_path))
		return (-1);
	mark_slot = p->worker % SQ_MARK_SLOTS;
	mark_known = access(mark_path, F_OK) == 0;
	if ((mark_fd = open(mark_path, O_RDWR | O_CREAT | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1) {
		snprintf(err, len, "%s: %s", mark_path, strerror(errno));
		return (-1);
	}
	if (!walmode) {
		mark_known = 0;
		return (0);
	}
	memset(slots, 0, sizeof(slots));
	if ((n = pread(mark_fd, slots, sizeof(slots), 0)) == -1) {
		snprintf(err, len, "%s: %s", mark_path, strerror(errno));
		return (-1);
	}
	mark_want = 0;
	for (i = 0; i < n / (ssize_t)sizeof(slots[0]); i++)
		if (slots[i] > mark_want)
			mark_want = slots[i];
	return (0);
}

/* The database file against tregd.db-mark: 0 nothing lost, or -1. */
static int
sq_mark_check(const char *path, int walgone, char *err, size_t len)
{
	int64_t	 have;
	int	 r;

	if ((r = sq_mark_read(&have)) == -1) {
		snprintf(err, len, "%s: cannot read its commit mark: %s",
		    path, sqlite3_errmsg(vault_db));
		return (-1);
	}
	if (walgone && (r == 1 || !mark_known)) {
		snprintf(err, len, "%s: its write-ahead log %s-wal is "
		    "missing and no %s says what it held: committed rows may "
		    "be lost; restore a backup (tregd -R, see tregd(8))",
		    path, path, mark_path);
		return (-1);
	}
	if (r == 1 || !mark_known || have >= mark_want) {
		if (walgone)
			log_info("%s: its write-ahead log was checkpointed "
			    "into it and removed (by another program); "
			    "nothing was lost", path);
		return (0);
	}
	snprintf(err, len, "%s: %lld row changes tregd committed are not "
	    "in it (%s: its write-ahead log %s); they are lost: restore a "
	    "backup (tregd -R, see tregd(8))", path,
	    (long long)(mark_want - have), walgone ? "removed before they "
	    "were checkpointed" : "the database file is older than",
	    walgone ? "was removed" : "does not hold them");
	return (-1);
}

/*
 * After each commit of this connection: sqlite's auto-checkpoint (a
 * WAL hook replaces it), then the mark committed into tregd.db-mark.
 */
static int
sq_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	static int	 warned;
	int64_t		 n;

	if (frames >= SQ_AUTOCHECKPOINT)
		sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE,
		    NULL, NULL);
	if (mark_fd == -1 || sq_mark_read(&n) != 0)
		return (SQLITE_OK);
	if (pwrite(mark_fd, &n, sizeof(n), mark_slot * sizeof(n)) !=
	    sizeof(n) && !warned) {
		log_warn("%s", mark_path);
		warned = 1;
	}
	return (SQLITE_OK);
}

/*
 * A database whose WAL is gone is checked as its file stands, through a
 * connection that makes no WAL (immutable): a refused start leaves the
 * files as it found them.
 */
static int
sq_open_immutable(const char *path, char *err, size_t len)
{
	char	 uri[2048];
	size_t	 i, o;

	o = strlcpy(uri, "file:", sizeof(uri));
	for (i = 0; path[i] != '\0' && o + 4 < sizeof(uri); i++) {
		if (path[i] == '%' || path[i] == '?' || path[i] == '#')
			o += snprintf(uri + o, sizeof(uri) - o, "%%%02x",
			    (unsigned char)path[i]);
		else
			uri[o++] = path[i];
	}
	uri[o] = '\0';
	if (path[i] != '\0' || strlcat(uri, "?immutable=1", sizeof(uri)) >=
	    sizeof(uri)) {
		snprintf(err, len, "%s: path too long", path);
		return (-1);
	}
	if (sqlite3_open_v2(uri, &vault_db, SQLITE_OPEN_READONLY |
	    SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, len, "sqlite3_open %s: %s", path, vault_db ?
		    sqlite3_errmsg(vault_db) : "out of memory");
		sq_close();
		return (-1);
	}
	return (0);
}

static int
sq_check_file(const char *path, char *err, size_t len)
{
	int	 rc;

	if (sq_open_immutable(path, err, len) == -1)
		return (-1);
	rc = sq_check(err, len) == -1 || sq_mark_check(path, 1, err,
	    len) == -1 ? -1 : 0;
	sq_close();
	return (rc);
}

/*
 * A database file not in use (tregd -R): whole (quick_check), and fn
 * per key id its sealed values carry.  Nothing is written, no WAL made.
 */
int
store_sqlite_inspect(const char *path, store_key_host_fn fn, void *arg,
    char *err, size_t len)
{
	int	 rc;

	*err = '\0';
	if (sq_open_immutable(path, err, len) == -1)
		return (-1);
	if ((rc = sq_check(err, len)) == 0 && (rc = sq_sealed_keys(fn,
	    arg)) == -1)
		snprintf(err, len, "%s: %s", path, sqlite3_errmsg(vault_db));
	sq_close();
	return (rc);
}

static int
sq_open(const struct store_params *p, char *err, size_t len)
{
	int	 one = 1, walmode, walgone;

	if (sq_header(p->path, &walmode, &walgone, err, len) == -1 ||
	    sq_mark_open(p, walmode, err, len) == -1) {
		if (*err == '\0')
			snprintf(err, len, "%s: %s", p->path, strerror(errno));
		return (-1);
	}
	sqlite3_initialize();
	if (walgone && sq_check_file(p->path, err, len) == -1)
		return (-1);
	if (sqlite3_open_v2(p->path, &vault_db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, len, "sqlite3_open %s: %s", p->path, vault_db ?
		    sqlite3_errmsg(vault_db) : "out of memory");
		return (-1);
	}
	sqlite3_busy_handler(vault_db, sq_busy, NULL);
	sqlite3_file_control(vault_db, "main", SQLITE_FCNTL_PERSIST_WAL, &one);
	/* Nothing is written before the file is known whole. */
	if (sq_check(err, len) == -1 ||
	    sq_mark_check(p->path, 0, err, len) == -1)
		return (-1);
	/*
	 * WAL with synchronous NORMAL: a committed row survives the vault
	 * being killed (only an OS crash can lose the last transactions).
	 * A new database gets its schema before it enters WAL mode, so a
	 * database in WAL mode at version 0 only ever had it in a WAL.
	 */
	if (db_exec("PRAGMA synchronous = NORMAL") == -1 ||
	    db_exec("PRAGMA foreign_keys = ON") == -1 ||
	    db_exec("PRAGMA temp_store = MEMORY") == -1 ||
	    db_exec("PRAGMA secure_delete = ON") == -1) {
		snprintf(err, len, "cannot configure the database: %s",
		    sqlite3_errmsg(vault_db));
		return (-1);
	}
	if (sq_migrate() == -1) {
		snprintf(err, len, "cannot migrate the database schema");
		return (-1);
	}
	if (!walmode && ftruncate(mark_fd, 0) == -1) {
		snprintf(err, len, "%s: %s", mark_path, strerror(errno));
		return (-1);
	}
	sqlite3_wal_hook(vault_db, sq_wal_hook, NULL);
	/* Enter WAL mode and write once, so that the kept WAL exists. */
	if (db_exec("PRAGMA journal_mode = WAL") == -1 ||
	    sq_schema_touch() == -1) {
		snprintf(err, len, "cannot configure the database: %s",
		    sqlite3_errmsg(vault_db));
		return (-1);
	}
	return (0);
}

static void
sq_close(void)
{
	int	 i;

	for (i = 0; i < nstmt_cache; i++)
		sqlite3_finalize(stmt_cache[i].st);
	nstmt_cache = 0;
	sqlite3_close_v2(vault_db);
	vault_db = NULL;

}

/* PRAGMA quick_check: every page readable, every index consistent. */
static int
sq_check(char *buf, size_t len)
{
	sqlite3_stmt	*st;
	const char	*r;
	int		 rc;

	if (sqlite3_prepare_v2(vault_db, "PRAGMA quick_check(1)", -1, &st,
	    NULL) != SQLITE_OK) {
		snprintf(buf, len, "the database is damaged: %s",
		    sqlite3_errmsg(vault_db));
		return (-1);
	}
	rc = sq_step(st);
	r = (const char *)sqlite3_column_text(st, 0);
	if (rc != SQLITE_ROW || r == NULL || strcmp(r, "ok") != 0) {
		snprintf(buf, len, "the database is damaged (quick_check: "
		    "%s); restore a backup", rc == SQLITE_ROW && r != NULL ?
		    r : sqlite3_errmsg(vault_db));
		sqlite3_finalize(st);
		return (-1);
	}
	sqlite3_finalize(st);
	return (0);
}

/* The online backup API: a consistent copy while others write. */
static int
sq_backup(const char *path)
{
	sqlite3		*dst;
	sqlite3_backup	*b;
	int		 rc;

	if (sqlite3_open_v2(path, &dst, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		log_warnx("backup %s: %s", path, dst ? sqlite3_errmsg(dst) :
		    "out of memory");
		sqlite3_close(dst);
		return (-1);
	}
	if ((b = sqlite3_backup_init(dst, "main", vault_db, "main")) == NULL) {
		log_warnx("backup %s: %s", path, sqlite3_errmsg(dst));
		sqlite3_close(dst);
		return (-1);
	}
	while ((rc = sqlite3_backup_step(b, 256)) == SQLITE_OK ||
	    rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		;
	sqlite3_backup_finish(b);
	/* The copy is one file: rollback journal mode, no WAL. */
	if (rc == SQLITE_DONE && sqlite3_exec(dst, "PRAGMA journal_mode = "
	    "DELETE", NULL, NULL, NULL) != SQLITE_OK)
		rc = SQLITE_ERROR;
	if (rc != SQLITE_DONE)
		log_warnx("backup %s: %s", path, sqlite3_errmsg(dst));
	sqlite3_close(dst);
	return (rc == SQLITE_DONE ? 0 : -1);
}

/*
 * data_version changes with every commit by another connection (another
 * worker); total_changes with every row written through this one.
 */
static int64_t
sq_version(void)
{
	sqlite3_stmt	*st;
	int64_t		 dv = -1, ch;

	if ((st = db_prepare("PRAGMA data_version")) == NULL)
		return (-1);
	if (sq_step(st) == SQLITE_ROW)
		dv = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (dv == -1)
		return (-1);
	ch = sqlite3_total_changes64(vault_db);
	if (dv != seen_dataver || ch != seen_changes) {
		seen_dataver = dv;
		seen_changes = ch;
		version++;
	}
	return (version);
}

static const char *
sq_error(void)
{
	return (vault_db != NULL ? sqlite3_errmsg(vault_db) : "not open");
}

static int
sq_begin(void)
{
	if (db_run("BEGIN IMMEDIATE") == -1)
		return (-1);
	db_locked = 0;		/* the lock is ours: waits are short no more */
	return (0);
}

/* The write lock is taken: wait for it, or give up (SQLITE_BUSY). */
static int
sq_busy(void *arg, int count)
{
	int64_t	 now = mono_ns() / 1000000;

	if (count == 0)
		busy_since = now;
	if (now - busy_since >= (db_locked != 0 &&
	    now - db_locked < SQ_LOCKED_MEMO_MS ? SQ_BUSY_LOCKED_MS :
	    SQ_BUSY_WAIT_MS)) {
		db_locked = now;
		return (0);
	}
	sqlite3_sleep(count < 8 ? 1 : 5);
	return (1);
}

/*
 * Whether the last statement failed for the state of the database (its
 * lock held, the disk full) rather than for tregd's own fault: a 503,
 * not a 500.
 */
static int
sq_unavailable(void)
{
	return (db_unavailable);
}

int
sq_step(sqlite3_stmt *st)
{
	int	 rc = sqlite3_step(st);

	switch (rc & 0xff) {
	case SQLITE_ROW:
	case SQLITE_DONE:
		db_unavailable = 0;
		break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
	case SQLITE_FULL:
	case SQLITE_IOERR:
	case SQLITE_READONLY:
	case SQLITE_CANTOPEN:
		db_unavailable = 1;
		break;
	default:
		db_unavailable = 0;
		break;
	}
	return (rc);
}

static int
sq_commit(void)
{
	if (db_run("COMMIT") == -1) {
		sq_rollback();
		return (-1);
	}
	return (0);
}

static void
sq_rollback(void)
{
	sqlite3_stmt	*st;
	int		 unavailable = db_unavailable;

	if (sqlite3_get_autocommit(vault_db))
		return;
	if ((st = db_prepare("ROLLBACK")) == NULL || sq_done(st) == -1)
		sqlite3_exec(vault_db, "ROLLBACK", NULL, NULL, NULL);
	db_unavailable = unavailable;	/* why it was rolled back */
}

/* BEGIN and COMMIT of every transaction: prepared once, not parsed. */
static int
db_run(const char *sql)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare(sql)) == NULL)
		return (-1);
	if (sq_done(st) == -1) {
		/* A lock held elsewhere: the caller says what waits. */
		if (!db_unavailable)
			log_warnx("sqlite: %s", sqlite3_errmsg(vault_db));
		return (-1);
	}
	return (0);
}

/* ------------------------------------------------------------------ */
/* Statements and binding by name.                                     */

/*
 * Prepared statements are cached by the address of their SQL text (a
 * string constant at every call site) and come back reset and unbound.
 */
sqlite3_stmt *
db_prepare(const char *sql)
{
	sqlite3_stmt	*st;
	int		 i;

	for (i = 0; i < nstmt_cache; i++)
		if (stmt_cache[i].sql == sql) {
			st = stmt_cache[i].st;
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return (st);
		}
	if (sqlite3_prepare_v3(vault_db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	    &st, NULL) != SQLITE_OK) {
		log_warnx("prepare: %s", sqlite3_errmsg(vault_db));
		return (NULL);
	}
	if (nstmt_cache < STMT_CACHE_MAX) {
		stmt_cache[nstmt_cache].sql = sql;
		stmt_cache[nstmt_cache++].st = st;
	} else
		fatalx("%s: statement cache full", __func__);
	return (st);
}

int
db_exec(const char *sql)
{
	char	*err = NULL;

	if (sqlite3_exec(vault_db, sql, NULL, NULL, &err) != SQLITE_OK) {
		log_warnx("sqlite: %s", err ? err : "error");
		sqlite3_free(err);
		return (-1);
	}
	return (0);
}

const char *
db_text(sqlite3_stmt *st, int col)
{
	const unsigned char	*s = sqlite3_column_text(st, col);

	return (s != NULL ? (const char *)s : "");
}

json_t *
db_rows(sqlite3_stmt *st, db_row_view view, const void *arg)
{
	json_t	*list;
	int	 rc;

	if ((list = json_array()) == NULL)
		fatal("%s: json_array", __func__);
	while ((rc = sq_step(st)) == SQLITE_ROW)
		json_array_append_new(list, view(st, arg));
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		json_decref(list);
		return (NULL);
	}
	return (list);
}

static int
sq_param(sqlite3_stmt *st, const char *name)
{
	int	 i;

	if ((i = sqlite3_bind_parameter_index(st, name)) == 0)
		fatalx("%s: no parameter %s", __func__, name);
	return (i);
}

int
sq_int(sqlite3_stmt *st, const char *name, int64_t v)
{
	return (sqlite3_bind_int64(st, sq_param(st, name), v) == SQLITE_OK ?
	    0 : -1);
}

int
sq_text(sqlite3_stmt *st, const char *name, const char *v)
{
	int	 i = sq_param(st, name);

	if (v == NULL)
		return (sqlite3_bind_null(st, i) == SQLITE_OK ? 0 : -1);
	return (sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) ==
	    SQLITE_OK ? 0 : -1);
}

int
sq_blob(sqlite3_stmt *st, const char *name, const void *v, size_t len)
{
	return (sqlite3_bind_blob(st, sq_param(st, name), v, len,
	    SQLITE_TRANSIENT) == SQLITE_OK ? 0 : -1);
}

int
sq_null(sqlite3_stmt *st, const char *name)
{
	return (sqlite3_bind_null(st, sq_param(st, name)) == SQLITE_OK ?
	    0 : -1);
}

int
sq_col(sqlite3_stmt *st, const char *name)
{
	int	 i, n = sqlite3_column_count(st);

	for (i = 0; i < n; i++)
		if (strcmp(sqlite3_column_name(st, i), name) == 0)
			return (i);
	fatalx("%s: no column %s", __func__, name);
}

const char *
sq_ctext(sqlite3_stmt *st, const char *name)
{
	return (db_text(st, sq_col(st, name)));
}

const char *
sq_cntext(sqlite3_stmt *st, const char *name)
{
	return ((const char *)sqlite3_column_text(st, sq_col(st, name)));
}

int64_t
sq_cint(sqlite3_stmt *st, const char *name)
{
	return (sqlite3_column_int64(st, sq_col(st, name)));
}

int
sq_cnull(sqlite3_stmt *st, const char *name)
{
	return (sqlite3_column_type(st, sq_col(st, name)) == SQLITE_NULL);
}

/* An integer column that may be NULL: *has says whether it holds one. */
int64_t
sq_cintif(sqlite3_stmt *st, const char *name, int *has)
{
	*has = !sq_cnull(st, name);
	return (sq_cint(st, name));
}

char *
sq_cdup(sqlite3_stmt *st, const char *name)
{
	const unsigned char	*s;
	char			*d;

	if ((s = sqlite3_column_text(st, sq_col(st, name))) == NULL)
		return (NULL);
	if ((d = strdup((const char *)s)) == NULL)
		fatal("%s: strdup", __func__);
	return (d);
}

void
sq_ccopy(sqlite3_stmt *st, const char *name, char *buf, size_t len)
{
	strlcpy(buf, sq_ctext(st, name), len);
}

int
sq_done(sqlite3_stmt *st)
{
	int	 rc = sq_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return (rc == SQLITE_DONE ? 0 : -1);
}

int
sq_row_end(sqlite3_stmt *st, int rc)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_ROW)
		return (0);
	return (rc == SQLITE_DONE ? 1 : -1);
}

/* ------------------------------------------------------------------ */
/* Identity, secrets, tools.                                           */

static int
sq_member_by_token(const uint8_t hash[STORE_HASH_LEN], struct store_member *m)
{
	sqlite3_stmt	*st;
	const void	*stored;
	int		 rc;

	if ((st = db_prepare("SELECT m.id AS id, m.user_id AS user_id, "
	    "m.org_id AS org_id, m.role AS role, m.tool_access AS access, "
	    "m.project_access AS projects, "
	    "m.local_run_enabled AS local_run, u.email AS email, "
	    "u.is_agent AS is_agent, o.slug AS slug, m.token_hash AS hash "
	    "FROM memberships m JOIN users u ON u.id = m.user_id "
	    "JOIN orgs o ON o.id = m.org_id WHERE m.token_hash = :hash")) ==
	    NULL)
		return (-1);
	sq_blob(st, ":hash", hash, STORE_HASH_LEN);
	if ((rc = sq_step(st)) != SQLITE_ROW) {
		sqlite3_reset(st);
		return (rc == SQLITE_DONE ? 1 : -1);
	}
	stored = sqlite3_column_blob(st, sq_col(st, "hash"));
	if (stored == NULL || sqlite3_column_bytes(st, sq_col(st, "hash")) !=
	    STORE_HASH_LEN) {
		sqlite3_reset(st);
		return (1);
	}
	memcpy(m->token_hash, stored, STORE_HASH_LEN);
	m->id = sq_cint(st, "id");
	m->user_id = sq_cint(st, "user_id");
	m->org_id = sq_cint(st, "org_id");
	sq_ccopy(st, "role", m->role, sizeof(m->role));
	m->tool_access = sq_cdup(st, "access");
	m->project_access = sq_cdup(st, "projects");
	m->local_run_enabled = sq_cint(st, "local_run") != 0;
	sq_ccopy(st, "email", m->email, sizeof(m->email));
	m->is_agent = sq_cint(st, "is_agent") != 0;
	sq_ccopy(st, "slug", m->org_slug, sizeof(m->org_slug));
	sqlite3_reset(st);
	return (0);
}

static int
sq_secret_get(int64_t org, int64_t id, struct store_secret *s)
{
	sqlite3_stmt	*st;
	const void	*b;
	int		 rc;

	if ((st = db_prepare("SELECT id, org_id, name, kind, owner_id, "
	    "bundle_id, sealed, status, status_detail, checked_at, created_at "
	    "FROM secrets WHERE id = :id AND org_id = :org")) == NULL)
		return (-1);
	sq_int(st, ":id", id);
	sq_int(st, ":org", org);
	if ((rc = sq_step(st)) != SQLITE_ROW) {
		sqlite3_reset(st);
		return (rc == SQLITE_DONE ? 1 : -1);
	}
	s->id = sq_cint(st, "id");
	s->org_id = sq_cint(st, "org_id");
	sq_ccopy(st, "name", s->name, sizeof(s->name));
	sq_ccopy(st, "kind", s->kind, sizeof(s->kind));
	s->owner_id = sq_cint(st, "owner_id");
	s->bundle_id = sq_cint(st, "bundle_id");
	sq_ccopy(st, "status", s->status, sizeof(s->status));
	sq_ccopy(st, "status_detail", s->status_detail,
	    sizeof(s->status_detail));
	sq_ccopy(st, "checked_at", s->checked_at, sizeof(s->checked_at));
	sq_ccopy(st, "created_at", s->created_at, sizeof(s->created_at));
	b = sqlite3_column_blob(st, sq_col(st, "sealed"));
	s->sealedlen = sqlite3_column_bytes(st, sq_col(st, "sealed"));
	if ((s->sealed = malloc(s->sealedlen + 1)) == NULL)
		fatal("%s: malloc", __func__);
	if (s->sealedlen > 0)
		memcpy(s->sealed, b, s->sealedlen);
	sqlite3_reset(st);
	return (0);
}

static int
sq_secret_set_sealed(int64_t id, const void *sealed, size_t len)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("UPDATE secrets SET sealed = :sealed "
	    "WHERE id = :id")) == NULL)
		return (-1);
	sq_blob(st, ":sealed", sealed, len);
	sq_int(st, ":id", id);
	return (sq_done(st));
}

/* fn per row (id, org_id, sealed) until it returns non-zero. */
static int
sq_sealed_rows(sqlite3_stmt *st, store_sealed_fn fn, void *arg)
{
	struct store_each	 e = { .fn.sealed = fn, .arg = arg };

	return (sq_each(st, sq_sealed_row, &e));
}

static int
sq_sealed_row(sqlite3_stmt *st, void *arg)
{
	struct store_each	*e = arg;

	return (e->fn.sealed(sq_cint(st, "id"), sq_cint(st, "org_id"),
	    sqlite3_column_blob(st, sq_col(st, "sealed")),
	    sqlite3_column_bytes(st, sq_col(st, "sealed")), e->arg));
}

static int
sq_secrets_each_sealed(store_sealed_fn fn, void *arg)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT id, org_id, sealed FROM secrets "
	    "ORDER BY id")) == NULL)
		return (-1);
	return (sq_sealed_rows(st, fn, arg));
}

static int
sq_org_secrets_sealed(int64_t org, store_sealed_fn fn, void *arg)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT id, org_id, sealed FROM secrets "
	    "WHERE org_id = :org AND kind != 'param' ORDER BY id")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	return (sq_sealed_rows(st, fn, arg));
}

static int
sq_sealed_count(const void *prefix, size_t len, int64_t *n)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT count(*) AS n FROM secrets "
	    "WHERE substr(sealed, 1, :len) = :prefix")) == NULL)
		return (-1);
	sq_int(st, ":len", len);
	sq_blob(st, ":prefix", prefix, len);
	return (sq_value(st, n) == 0 ? 0 : -1);
}

static int
sq_tool_by_name(int64_t org, const char *name, struct store_tool *t)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT t.id AS id, t.org_id AS org_id, "
	    "t.name AS name, t.owner_id AS owner_id, t.base_url AS base_url, "
	    "t.host AS host, t.bindings AS bindings, t.cli AS cli, "
	    "t.bundle_id AS bundle_id, b.name AS bundle, t.project_id AS "
	    "project_id FROM tools t LEFT JOIN bundles b ON b.id = "
	    "t.bundle_id WHERE t.org_id = :org AND t.name = :name")) == NULL)
		return (-1);
	sq_int(st, ":org", org);
	sq_text(st, ":name", name);
	if ((rc = sq_step(st)) == SQLITE_ROW) {
		t->id = sq_cint(st, "id");
		t->org_id = sq_cint(st, "org_id");
		sq_ccopy(st, "name", t->name, sizeof(t->name));
		t->owner_id = sq_cint(st, "owner_id");
		t->base_url = sq_cdup(st, "base_url");
		t->host = sq_cdup(st, "host");
		t->bindings = sq_cdup(st, "bindings");
		t->cli = sq_cdup(st, "cli");
		t->bundle_id = sq_cint(st, "bundle_id");
		sq_ccopy(st, "bundle", t->bundle, sizeof(t->bundle));
		t->project_id = sq_cint(st, "project_id");
	}
	return (sq_row_end(st, rc));
}

static int
sq_tool_secret_ids(int64_t tool, int64_t *ids, size_t max, size_t *n)
{
	sqlite3_stmt	*st;

	if ((st = db_prepare("SELECT secret_id FROM tool_secrets "
	    "WHERE tool_id = :tool ORDER BY secret_id")) == NULL)
		return (-1);
	sq_int(st, ":tool", tool);
	return (sq_ids(st, ids, max, n));
}

static int
sq_org_by_slug(const char *slug, int64_t *id)
{
	sqlite3_stmt	*st;
	int		 rc;

	if ((st = db_prepare("SELECT id FROM orgs WHERE slug = :slug")) ==
	    NULL)
		return (-1);
	sq_text(st, ":slug", slug);
	if ((rc = sq_step(st)) == SQLITE_ROW)
		*id = sq_cint(st, "id");
	return (sq_row_end(st, rc));
}
