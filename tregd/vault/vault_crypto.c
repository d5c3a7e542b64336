/*
 * The keyring at start and its commands (tregctl key ...).
 *
 * Start: every keys/<id>.key is loaded and keys/current names the
 * sealing key.  A state directory of the earlier layout (master.key,
 * and master.key.new left by an interrupted rotation) is moved into the
 * keyring: both files are written to keys/ first, and once the database
 * says which of them seals the secrets (crypto_settle) that one becomes
 * current and the old files are wiped.  Each step is repeated safely if
 * the vault dies in between.
 *
 * Several hosts or vault workers share one database: a key is added
 * everywhere (key new, its file copied, key reload), then sealed under
 * (key use, which re-seals every secret), then retired, which is refused
 * while any secret is still sealed under it.  No host ever meets a value
 * it cannot open, as long as it holds every key not yet retired.
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vault.h"
#include "vault_keyring.h"

#define LEGACY_KEY	"master.key"
#define LEGACY_NEW	"master.key.new"

struct reseal {
	int	 to;		/* slot */
	int64_t	 n;		/* values re-sealed */
	int	 failed;
};

static char	 legacy_key[PATH_MAX], legacy_new[PATH_MAX + 8];
static int	 legacy_old = -1, legacy_next = -1;
static int	 legacy;		/* master.key found: settle finishes */

static int	 key_migrate_start(const char *);
static int	 key_migrate_finish(void);
static int64_t	 key_sealed(int);
static int	 key_reseal_one(int64_t, int64_t, const void *, size_t,
		    void *);
static void	 key_wipe_file(const char *);
static int	 key_err(char *, size_t, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));

static int
key_err(char *err, size_t len, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return (-1);
}

/* How many secrets are sealed under slot i: n, or -1. */
static int64_t
key_sealed(int i)
{
	int64_t	 n;

	if (store_sealed_count(keyring_id(i), KEY_ID_LEN, &n) == -1)
		return (-1);
	return (n);
}

/* Overwrite a key file's bytes before it is removed. */
static void
key_wipe_file(const char *path)
{
	unsigned char	 zero[KEYFILE_LEN];
	int		 fd;

	memset(zero, 0, sizeof(zero));
	if ((fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return;
	if (write(fd, zero, sizeof(zero)) != sizeof(zero))
		log_warn("wipe %s", path);
	fsync(fd);
	close(fd);
	if (unlink(path) == -1)
		log_warn("unlink %s", path);
}

/* master.key and master.key.new into keys/ (written, not yet current). */
static int
key_migrate_start(const char *state)
{
	char	 hex[KEY_HEX_LEN + 1];

	if (snprintf(legacy_key, sizeof(legacy_key), "%s/%s", state,
	    LEGACY_KEY) >= (int)sizeof(legacy_key))
		return (-1);
	snprintf(legacy_new, sizeof(legacy_new), "%s/%s", state, LEGACY_NEW);
	if ((legacy_old = keyring_adopt(legacy_key, hex)) == -1) {
		if (errno == ENOENT)
			return (0);
		log_warn("master key %s", legacy_key);
		return (-1);
	}
	if (keyring_write(legacy_old) == -1)
		return (-1);
	if ((legacy_next = keyring_adopt(legacy_new, hex)) != -1 &&
	    keyring_write(legacy_next) == -1)
		return (-1);
	legacy = 1;
	log_info("keyring: %s moved into %s/", LEGACY_KEY, TREGD_KEYRING);
	return (0);
}

/*
 * Once the database is open: the key that seals the secrets becomes
 * current (master.key.new if a rotation had moved every secret to it),
 * then the old files go.
 */
static int
key_migrate_finish(void)
{
	int	 use = legacy_old;

	if (keyring_current_file() == -1) {
		if (legacy_next != -1 && key_sealed(legacy_next) > 0 &&
		    key_sealed(legacy_old) == 0)
			use = legacy_next;
		if (keyring_current_write(use) == -1)
			return (-1);
	}
	key_wipe_file(legacy_key);
	if (legacy_next != -1)
		key_wipe_file(legacy_new);
	legacy = 0;
	log_info("keyring: sealing under key %s", keyring_current_hex());
	return (0);
}

/* state: the state directory ("" once chrooted into it). */
int
crypto_init(const char *state)
{
	int	 i, n;

	if (keyring_open(state) == -1 || key_migrate_start(state) == -1 ||
	    (n = keyring_scan(0)) == -1)
		return (-1);
	if (n == 0) {
		if ((i = keyring_generate()) == -1 || keyring_write(i) == -1 ||
		    keyring_current_write(i) == -1)
			return (-1);
		log_info("created a new key %s", keyring_hex(i));
		return (0);
	}
	if ((i = keyring_current_file()) != -1) {
		keyring_set_current(i);
		return (0);
	}
	if (legacy) {
		keyring_set_current(legacy_old);	/* settled next */
		return (0);
	}
	if (n == 1) {
		for (i = 0; keyring_hex(i) == NULL; i++)
			;
		return (keyring_current_write(i));
	}
	log_warnx("keyring: %d keys and no %s/%s naming the sealing key",
	    n, TREGD_KEYRING, KEY_CURRENT);
	return (-1);
}

/* Called once the database is open. */
int
crypto_settle(void)
{
	if (legacy)
		return (key_migrate_finish());
	return (0);
}

/* tregctl key new: a key written and loaded, not sealed under yet. */
int
crypto_key_new(char *hex, char *err, size_t errlen)
{
	int	 i;

	if ((i = keyring_generate()) == -1)
		return (key_err(err, errlen, "the keyring is full (%d keys): "
		    "retire one first", KEYRING_MAX));
	if (keyring_write(i) == -1) {
		keyring_unload(i);
		return (key_err(err, errlen, "cannot write the key file "
		    "(see the log)"));
	}
	strlcpy(hex, keyring_hex(i), KEY_HEX_LEN + 1);
	/* Every host can pick it up from the database. */
	if (keydb_register(i) == -1)
		log_warnx("keyring: key %s is not in the database yet", hex);
	log_info("keyring: new key %s", hex);
	return (0);
}

static int
key_reseal_one(int64_t id, int64_t org, const void *old, size_t oldlen,
    void *arg)
{
	struct reseal	*rs = arg;
	unsigned char	*pt;
	void		*sealed;
	size_t		 ptlen, slen;
	int		 r;

	if (oldlen >= KEY_ID_LEN && keyring_find_id(old) == rs->to)
		return (0);
	if (secret_unseal(org, id, old, oldlen, &pt, &ptlen) == -1) {
		log_warnx("key use: secret %lld does not open", (long long)id);
		rs->failed = 1;
		return (-1);
	}
	r = keyring_seal(rs->to, org, id, pt, ptlen, &sealed, &slen);
	secret_free(pt, ptlen);
	if (r == -1 || store_secret_set_sealed(id, sealed, slen) == -1) {
		if (r == 0)
			free(sealed);
		rs->failed = 1;
		return (-1);
	}
	free(sealed);
	rs->n++;
	return (0);
}

/*
 * tregctl key use: every secret re-sealed under the key in one
 * transaction, then keys/current names it.
 */
int
crypto_key_use(const char *hex, int64_t *resealed, char *err, size_t errlen)
{
	struct reseal	 rs;
	int		 i;

	if ((i = keyring_find(hex)) == -1)
		return (key_err(err, errlen, "no key %s in this host's "
		    "keyring (%s/%s.key)", hex, TREGD_KEYRING, hex));
	memset(&rs, 0, sizeof(rs));
	rs.to = i;
	if (store_begin() == -1)
		return (key_err(err, errlen, "database error"));
	/* The database names it first: a seal elsewhere waits, then moves. */
	if (keydb_use(i) == -1 ||
	    store_secrets_each_sealed(key_reseal_one, &rs) == -1 ||
	    rs.failed || store_commit() == -1) {
		store_rollback();
		return (key_err(err, errlen, "re-sealing failed, nothing "
		    "changed (see the log)"));
	}
	keydb_used(i);
	*resealed = rs.n;
	log_info("keyring: sealing under key %s, %lld secrets re-sealed",
	    hex, (long long)rs.n);
	return (0);
}

/*
 * tregctl key retire: refused for the sealing key or one still in use
 * (vault_keydb.c); the key file, if this host holds it, is wiped.  note:
 * what stays in the database, or "".
 */
int
crypto_key_retire(const char *hex, char *note, size_t notelen)
{
	char	 name[KEY_HEX_LEN + 8], path[PATH_MAX];
	int	 i;

	if (!keyring_hex_ok(hex))
		return (key_err(note, notelen, "no key %s", hex));
	i = keyring_find(hex);
	if (keydb_retire(hex, i != -1, note, notelen) == -1)
		return (-1);
	if (i == -1)
		return (0);
	snprintf(name, sizeof(name), "%s.key", hex);
	if (keyring_path(path, sizeof(path), name) == 0)
		key_wipe_file(path);
	keyring_sync_dir();
	keyring_unload(i);
	log_info("keyring: key %s retired", hex);
	return (0);
}

/* tregctl key reload (and SIGHUP): the files of keys/ as they are now. */
int
crypto_reload(void)
{
	int	 i, n;

	if (keyring_current() < 0)
		return (-1);	/* not started yet */
	if ((n = keyring_scan(1)) == -1)
		return (-1);
	if ((i = keyring_current_file()) != -1)
		keyring_set_current(i);
	if (keydb_reload() == -1)
		log_warnx("keyring: the database's sealing key not read");
	log_info("keyring reloaded: %d keys, sealing under %s", n,
	    keyring_current_hex());
	return (n);
}

/* tregctl key list: [{"id","current","sealed"}]; NULL on a database error. */
json_t *
crypto_key_list(void)
{
	json_t		*a;
	int64_t		 n;
	int		 i;

	a = json_array();
	for (i = 0; i < KEYRING_MAX; i++) {
		if (keyring_hex(i) == NULL)
			continue;
		if ((n = key_sealed(i)) == -1) {
			json_decref(a);
			return (NULL);
		}
		json_array_append_new(a, json_pack("{s:s,s:b,s:I,s:b}", "id",
		    keyring_hex(i), "current", i == keyring_current(),
		    "sealed", (json_int_t)n, "held", 1));
	}
	keydb_list(a);
	return (a);
}

/* The keyring's files, relative to the state directory (for backup). */
json_t *
crypto_key_files(void)
{
	json_t	*a;
	char	 name[KEY_HEX_LEN + 16];
	int	 i;

	a = json_array();
	json_array_append_new(a, json_string(TREGD_KEYRING "/" KEY_CURRENT));
	for (i = 0; i < KEYRING_MAX; i++) {
		if (keyring_hex(i) == NULL)
			continue;
		snprintf(name, sizeof(name), "%s/%s.key", TREGD_KEYRING,
		    keyring_hex(i));
		json_array_append_new(a, json_string(name));
	}
	return (a);
}

/* tregctl key rotate, for one host: new, use, retire the old. */
int
crypto_rotate(const char *why)
{
	char	 old[KEY_HEX_LEN + 1], hex[KEY_HEX_LEN + 1], err[768];
	int64_t	 n;

	strlcpy(old, keyring_current_hex(), sizeof(old));
	if (crypto_key_new(hex, err, sizeof(err)) == -1) {
		log_warnx("key rotate: %s", err);
		return (-1);
	}
	if (crypto_key_use(hex, &n, err, sizeof(err)) == -1) {
		log_warnx("key rotate: %s", err);
		/* It seals nothing: no trace of the attempt stays. */
		if (crypto_key_retire(hex, err, sizeof(err)) == -1)
			log_warnx("key rotate: %s", err);
		return (-1);
	}
	if (crypto_key_retire(old, err, sizeof(err)) == -1)
		log_warnx("key rotate: the old key stays: %s", err);
	else if (err[0] != '\0')
		log_info("key rotate: key %s retired; %s", old, err);
	log_info("master key rotated (%s), new key id %s", why, hex);
	return (0);
}
