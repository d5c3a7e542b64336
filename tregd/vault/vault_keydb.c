/*
 * The keyring in the database (tregd(8), KEYS ON SEVERAL HOSTS).
 *
 * Every key that seals a value is in the database too, sealed under a
 * key registered before it (the first key of a database only by its
 * id), and the database names the sealing key of every host (current).
 * So a host picks up a key another host made: a value, or the sealing
 * key, under a key it lacks is opened by unwrapping that key with one
 * it holds, down the chain, and the key file is written to its keys/.
 * No host seals under a key the database does not hold, so no host
 * ever meets a value it cannot open, whichever host rotated.
 *
 * A chain link (a key sealed under an older one) is dropped when the
 * older key is retired and every host seals under the current key
 * (table key_hosts): from then on the retired key opens nothing, not
 * even from the database.
 */

#include <sys/types.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vault.h"
#include "vault_keyring.h"

#define KEYDB_DEPTH	KEYRING_MAX	/* links followed at most */
#define KEYDB_ROWS	64
#define WRAPPED_LEN	(KEY_ID_LEN + NONCE_LEN + KEY_LEN + TAG_LEN)

/* One key row read. */
struct keydb_row {
	char		 id[KEY_HEX_LEN + 1];
	char		 by[KEY_HEX_LEN + 1];
	unsigned char	 w[WRAPPED_LEN];
	size_t		 wlen;
	int		 current;
	int		 retired;
};

/* Every key row, and which is current ("" none). */
struct keydb_all {
	struct keydb_row rows[KEYDB_ROWS];
	int		 n;
	char		 current[KEY_HEX_LEN + 1];
};

/* What keydb_start found missing. */
struct keydb_missing {
	char		 id[KEY_HEX_LEN + 1];
	int64_t		 n;
	int		 keys;
};

/* Hosts not sealing under the current key. */
struct keydb_hosts {
	const char	*current;
	char		 lagging[400];
	int		 n;
};

static char	 seen_file[KEY_HEX_LEN + 1];	/* keys/current, as seen */
static char	 seen_db[KEY_HEX_LEN + 1];	/* the database's, as seen */

static int	 keydb_copy(const struct store_key *, void *);
static int	 keydb_collect(const struct store_key *, void *);
static int	 keydb_get(const char *, struct keydb_row *);
static int	 keydb_all(struct keydb_all *);
static int	 keydb_pickup(const char *, int);
static void	 keydb_adopt(int);
static const char *keydb_host(void);
static int	 keydb_missing_one(const char *, const char *, int64_t,
		    void *);
static int	 keydb_host_lags(const char *, const char *, int64_t,
		    void *);
static int	 keydb_sealed_add(const char *, const char *, int64_t,
		    void *);

static void
keydb_row_fill(const struct store_key *k, struct keydb_row *r)
{
	memset(r, 0, sizeof(*r));
	strlcpy(r->id, k->id, sizeof(r->id));
	if (k->wrapped != NULL && k->wrappedlen == WRAPPED_LEN &&
	    k->wrapped_by != NULL) {
		memcpy(r->w, k->wrapped, WRAPPED_LEN);
		r->wlen = WRAPPED_LEN;
		strlcpy(r->by, k->wrapped_by, sizeof(r->by));
	}
	r->current = k->current;
	r->retired = k->retired_at != NULL;
}

static int
keydb_copy(const struct store_key *k, void *arg)
{
	keydb_row_fill(k, arg);
	return (0);
}

static int
keydb_collect(const struct store_key *k, void *arg)
{
	struct keydb_all	*a = arg;

	if (k->current)
		strlcpy(a->current, k->id, sizeof(a->current));
	if (a->n < KEYDB_ROWS)
		keydb_row_fill(k, &a->rows[a->n++]);
	return (0);
}

/* 0 found, 1 none, -1 the database failed. */
static int
keydb_get(const char *hex, struct keydb_row *r)
{
	return (store_keys(hex, keydb_copy, r));
}

static int
keydb_all(struct keydb_all *a)
{
	memset(a, 0, sizeof(*a));
	return (store_keys(NULL, keydb_collect, a));
}

/* "hostname:state directory": one row of key_hosts per host. */
static const char *
keydb_host(void)
{
	static char	 host[256 + PATH_MAX];
	char		 name[256];

	if (host[0] == '\0') {
		if (gethostname(name, sizeof(name)) == -1)
			strlcpy(name, "localhost", sizeof(name));
		name[sizeof(name) - 1] = '\0';
		snprintf(host, sizeof(host), "%s:%s", name, vault_conf.state);
	}
	return (host);
}

/* The key hex unwrapped from its row with a key held or picked up. */
static int
keydb_pickup(const char *hex, int depth)
{
	struct keydb_row	 r;
	int			 under, i;

	if (depth > KEYDB_DEPTH || !keyring_hex_ok(hex) ||
	    keydb_get(hex, &r) != 0 || r.wlen == 0)
		return (-1);
	if ((under = keyring_find(r.by)) == -1 &&
	    (under = keydb_pickup(r.by, depth + 1)) == -1)
		return (-1);
	if ((i = keyring_unwrap(hex, r.w, r.wlen, under)) == -1) {
		log_warnx("keyring: key %s does not open under key %s",
		    hex, r.by);
		return (-1);
	}
	log_info("keyring: picked up key %s from the database", hex);
	return (i);
}

/* The key of this id: held, or picked up from the database. */
int
keydb_find(const char *hex)
{
	int	 i;

	if ((i = keyring_find(hex)) != -1)
		return (i);
	return (keydb_pickup(hex, 0));
}

/*
 * Key i into the database if it is not there: sealed under the current
 * key (or another this host holds); the first key of a database goes
 * in by its id only.  0, or -1.
 */
int
keydb_register(int i)
{
	struct keydb_all	*a;
	struct store_key	 k;
	void			*w = NULL;
	size_t			 wlen = 0;
	char			 at[32];
	int			 j, under = -1, rc;

	if ((a = calloc(1, sizeof(*a))) == NULL || keydb_all(a) == -1) {
		free(a);
		return (-1);
	}
	for (j = 0; j < a->n; j++)
		if (strcmp(a->rows[j].id, keyring_hex(i)) == 0) {
			free(a);
			return (0);
		}
	if (a->current[0] != '\0')
		under = keydb_find(a->current);
	for (j = 0; under == -1 && j < a->n; j++)
		if (!a->rows[j].retired)
			under = keyring_find(a->rows[j].id);
	rc = a->n > 0 && under == -1 ? -1 : 0;
	free(a);
	if (rc == -1) {
		log_warnx("keyring: key %s cannot go into the database: this "
		    "host holds none of its keys", keyring_hex(i));
		return (-1);
	}
	if (under != -1 && keyring_wrap(i, under, &w, &wlen) == -1)
		return (-1);
	memset(&k, 0, sizeof(k));
	k.id = keyring_hex(i);
	k.wrapped = w;
	k.wrappedlen = wlen;
	k.wrapped_by = under != -1 ? keyring_hex(under) : NULL;
	now_iso(at, sizeof(at));
	k.created_at = at;
	rc = store_key_insert(&k);
	free(w);
	return (rc == -1 ? -1 : 0);
}

/* This host seals under slot i from now on: keys/current, key_hosts. */
static void
keydb_adopt(int i)
{
	char	 at[32];

	if (i != keyring_current() || strcmp(seen_file, keyring_hex(i)) != 0)
		if (keyring_current_write(i) == -1)
			log_warnx("keyring: %s/%s not written", TREGD_KEYRING,
			    KEY_CURRENT);
	strlcpy(seen_file, keyring_hex(i), sizeof(seen_file));
	strlcpy(seen_db, keyring_hex(i), sizeof(seen_db));
	now_iso(at, sizeof(at));
	if (store_key_host_set(keydb_host(), keyring_hex(i), at) == -1)
		log_warnx("keyring: key_hosts: %s", store_error());
}

/*
 * The key to seal under, in the sealing transaction: the database's
 * current key (picked up if need be).  A database with none yet takes
 * this host's keys/current as its first.
 */
int
keydb_sealing(void)
{
	struct keydb_all	*a;
	char			 hex[KEY_HEX_LEN + 1];
	int			 i, rc;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return (-1);
	rc = keydb_all(a);
	strlcpy(hex, a->current, sizeof(hex));
	free(a);
	if (rc == -1)
		return (-1);
	if (hex[0] == '\0') {
		if ((i = keyring_current_file()) == -1 &&
		    (i = keyring_current()) == -1)
			return (-1);
		if (keydb_register(i) == -1 ||
		    store_key_set_current(keyring_hex(i)) != 0)
			return (-1);
		keydb_adopt(i);
		return (i);
	}
	if ((i = keydb_find(hex)) == -1) {
		log_warnx("keyring: the database seals under key %s, which "
		    "this host neither holds nor can pick up", hex);
		return (-1);
	}
	if (i != keyring_current() || strcmp(seen_db, hex) != 0)
		keydb_adopt(i);
	return (i);
}

static int
keydb_missing_one(const char *unused, const char *hex, int64_t n, void *arg)
{
	struct keydb_missing	*m = arg;

	if (keydb_find(hex) != -1)
		return (0);
	if (m->keys++ == 0)
		strlcpy(m->id, hex, sizeof(m->id));
	m->n += n;
	return (0);
}

/*
 * Once the database is open: every key its secrets are sealed under is
 * held or picked up, and so is its sealing key; else the start is
 * refused, saying what to restore.
 */
int
keydb_start(char *err, size_t len)
{
	struct keydb_missing	 m;
	int			 i;

	memset(&m, 0, sizeof(m));
	if (store_sealed_keys(keydb_missing_one, &m) == -1) {
		snprintf(err, len, "cannot read the sealed values: %s",
		    store_error());
		return (-1);
	}
	if (m.keys > 0) {
		snprintf(err, len, "%lld secrets are sealed under %d key(s) "
		    "(%s%s) that this host's keyring %s/ lacks and the "
		    "database cannot give it: restore %s/ with the database "
		    "(tregctl backup writes both, tregd -R restores both), or "
		    "copy the key files from a host that has them",
		    (long long)m.n, m.keys, m.id, m.keys > 1 ? ", ..." : "",
		    TREGD_KEYRING, TREGD_KEYRING);
		return (-1);
	}
	if ((i = keydb_sealing()) == -1) {
		snprintf(err, len, "the database's sealing key is not in this "
		    "host's keyring %s/ and cannot be picked up from the "
		    "database: copy %s/ from a host that has it",
		    TREGD_KEYRING, TREGD_KEYRING);
		return (-1);
	}
	keydb_adopt(i);
	return (0);
}

/* key use: slot i is registered and becomes the database's current. */
int
keydb_use(int i)
{
	if (keydb_register(i) == -1 || store_key_set_current(keyring_hex(i)) !=
	    0)
		return (-1);
	return (0);
}

/* After key use committed. */
void
keydb_used(int i)
{
	keydb_adopt(i);
}

static int
keydb_host_lags(const char *host, const char *hex, int64_t n, void *arg)
{
	struct keydb_hosts	*h = arg;

	if (strcmp(hex, h->current) == 0)
		return (0);
	if (h->n++ > 0)
		strlcat(h->lagging, ", ", sizeof(h->lagging));
	strlcat(h->lagging, host, sizeof(h->lagging));
	return (0);
}

/*
 * key retire, in one transaction: refused for the current key and for
 * a key any value is still sealed under (counted after the row is
 * locked, so a seal under it commits first); the links sealed under it
 * dropped once every host seals under the current key.  0 (note says
 * what stays), or -1 (err says why).
 */
int
keydb_retire(const char *hex, int held, char *note, size_t len)
{
	struct keydb_hosts	 h;
	struct keydb_all	*a;
	unsigned char		 id[KEY_ID_LEN];
	char			 at[32];
	int64_t			 n;
	int			 r;

	*note = '\0';
	if (sodium_hex2bin(id, sizeof(id), hex, KEY_HEX_LEN, NULL, NULL,
	    NULL) != 0)
		return (snprintf(note, len, "bad key id"), -1);
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return (-1);
	now_iso(at, sizeof(at));
	if (store_begin() == -1)
		goto dberr;
	if ((r = store_key_retire(hex, at)) == -1 || keydb_all(a) == -1 ||
	    store_sealed_count(id, KEY_ID_LEN, &n) == -1)
		goto dberr;
	if (r == 1 && !held) {
		snprintf(note, len, "no key %s in this host's keyring nor in "
		    "the database", hex);
		goto refused;
	}
	if (strcmp(a->current, hex) == 0 || (held && a->current[0] == '\0' &&
	    keyring_find(hex) == keyring_current())) {
		snprintf(note, len, "key %s seals new values: key use another "
		    "first", hex);
		goto refused;
	}
	if (n > 0) {
		snprintf(note, len, "%lld secrets are still sealed under key "
		    "%s: key use the new key on every host first",
		    (long long)n, hex);
		goto refused;
	}
	memset(&h, 0, sizeof(h));
	h.current = a->current;
	if (store_key_hosts(keydb_host_lags, &h) == -1)
		goto dberr;
	if (h.n == 0 && store_key_unlink(hex) == -1)
		goto dberr;
	if (store_commit() == -1)
		goto dberr;
	if (h.n > 0)
		snprintf(note, len, "its link to key %s stays in the database "
		    "until these hosts seal under it: %s", a->current,
		    h.lagging);
	free(a);
	return (0);
 dberr:
	snprintf(note, len, "database error");
 refused:
	store_rollback();
	free(a);
	return (-1);
}

/*
 * key reload: keys/current changed by hand since this host last saw it,
 * while the database kept the sealing key this host saw, names the new
 * sealing key (registered first: every host can have it).
 */
int
keydb_reload(void)
{
	struct keydb_all	*a;
	int			 i, rc;

	if ((i = keyring_current_file()) == -1 ||
	    strcmp(keyring_hex(i), seen_file) == 0)
		return (keydb_sealing() == -1 ? -1 : 0);
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return (-1);
	rc = keydb_all(a);
	if (rc == 0 && strcmp(a->current, seen_db) == 0) {
		free(a);
		if (keydb_use(i) == -1)
			return (-1);
		log_info("keyring: %s/%s names key %s: it seals new values",
		    TREGD_KEYRING, KEY_CURRENT, keyring_hex(i));
		keydb_adopt(i);
		return (0);
	}
	free(a);
	return (keydb_sealing() == -1 ? -1 : 0);
}

static int
keydb_sealed_add(const char *unused, const char *hex, int64_t n, void *arg)
{
	json_t	*a = arg, *v;
	size_t	 i;

	json_array_foreach(a, i, v)
		if (strcmp(json_string_value(json_object_get(v, "id")),
		    hex) == 0) {
			if (!json_is_true(json_object_get(v, "held")))
				json_object_set_new(v, "sealed",
				    json_integer(n));
			return (0);
		}
	json_array_append_new(a, json_pack("{s:s,s:b,s:I,s:b,s:b}", "id", hex,
	    "current", 0, "sealed", (json_int_t)n, "held", 0, "missing",
	    keydb_find(hex) == -1));
	return (0);
}

/*
 * key list, after the keys this host holds: the database's keys it does
 * not hold, and the key ids sealed values carry that neither has.
 */
void
keydb_list(json_t *list)
{
	struct keydb_all	*a;
	json_t			*v;
	size_t			 i;
	int			 j, seen;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return;
	if (keydb_all(a) == 0) {
		json_array_foreach(list, i, v)
			json_object_set_new(v, "current", json_boolean(
			    a->current[0] != '\0' ? strcmp(a->current,
			    json_string_value(json_object_get(v, "id"))) == 0 :
			    json_is_true(json_object_get(v, "current"))));
		for (j = 0; j < a->n; j++) {
			seen = a->rows[j].retired;	/* history */
			json_array_foreach(list, i, v)
				if (strcmp(json_string_value(json_object_get(v,
				    "id")), a->rows[j].id) == 0)
					seen = 1;
			if (!seen)
				json_array_append_new(list, json_pack(
				    "{s:s,s:b,s:I,s:b,s:b}", "id",
				    a->rows[j].id, "current",
				    a->rows[j].current, "sealed", (json_int_t)0,
				    "held", 0, "retired", a->rows[j].retired));
		}
	}
	free(a);
	store_sealed_keys(keydb_sealed_add, list);
}
