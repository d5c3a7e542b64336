/*
 * The schema both store engines share (store_schema.c): the tables,
 * columns and indexes of each migration, written once with placeholder
 * words that each engine expands in its own words.  Included by the
 * engines' schema files (store_sqlite_schema.c, store_pg_schema.c) and
 * the expander's unit test only: the rest of the vault knows no SQL.
 */

#ifndef STORE_SCHEMA_H
#define STORE_SCHEMA_H

/*
 * How many migrations there are.  Both engines number theirs 1..this
 * alike; their own parts are arrays of this size + 1, indexed by
 * version, so an engine cannot hold a migration the other lacks.
 */
#define SCHEMA_VERSIONS		17

/* The longest text a migration may expand to (the largest is ~4 KB). */
#define SCHEMA_TEXT_MAX		65536

/*
 * The tables a call's decision reads (migration 6; projects joined in
 * 12): each engine moves its registry version with every write to them,
 * REG(t) its trigger for table t and SECRETS its trigger for secrets,
 * in this order.  Secrets move it only through the columns a call reads
 * (SCHEMA_SECRETS_READ), not their health (status, status_detail,
 * checked_at), which every member's run report writes and no call reads.
 */
#define SCHEMA_REGISTRY_TABLES(REG, SECRETS)				\
	REG("users") REG("orgs") REG("memberships") REG("invites")	\
	REG("bundles") SECRETS REG("tools") REG("tool_secrets")		\
	REG("deny_rules")
#define SCHEMA_SECRETS_READ	"org_id, name, kind, owner_id, bundle_id, sealed"

/*
 * An engine's word for each placeholder of the shared text.  A
 * placeholder is '@' and upper-case letters; the shared text holds no
 * other '@'.
 */
struct schema_words {
	const char	*id;		/* @ID: a table's id, never given twice */
	const char	*rowid;		/* @ROWID: migration 1's ids (sqlite
					   rebuilds them with AUTOINCREMENT
					   in migration 10) */
	const char	*integer;	/* @INT: a 64-bit integer column */
	const char	*bytes;		/* @BYTES: raw bytes (hashes, sealed) */
};

/*
 * The migrations after version from, each by the engine's step(v)
 * (which runs migration v and records version v), logged; -1 (logged)
 * when from is newer than this tregd or a step fails.
 */
int	 schema_walk(int, int (*)(int));
/*
 * Migration v's statements in the engine's open transaction: the shared
 * text in the engine's words, then own (NULL: none), each through exec;
 * an empty text is not run.  0, or -1 when one failed.
 */
int	 schema_run(int, const struct schema_words *, const char *,
	    int (*)(const char *));
/*
 * Migration v's shared text (1 <= v <= SCHEMA_VERSIONS) in the engine's
 * words, to free(); "" when v shares nothing; NULL (logged) when v is
 * out of range or a placeholder has no word.
 */
char	*schema_migration(int, const struct schema_words *);
/* Any text expanded the same way (what schema_migration() runs). */
char	*schema_expand(const char *, const struct schema_words *);

#endif /* STORE_SCHEMA_H */
