/*
 * The keyring and sealing of secret values.
 *
 * A sealed value is: key id (8 bytes) | nonce (24) | XChaCha20-Poly1305
 * ciphertext and tag, with the org id and secret id as associated data,
 * so a sealed value copied into another row does not open.
 *
 * The keyring is the directory keys/ of the state directory: one file
 * per key, keys/<id>.key (mode 0600, the 8-byte id then the 32-byte
 * key), and keys/current naming the key new values are sealed under.
 * Every key file is loaded at start; a value sealed under a key that
 * arrived later (another host, another worker wrote it) loads its file
 * when it is first opened, and keys/current is read at every seal, so
 * every vault of a host agrees on the sealing key.  The commands on the
 * keyring (new, use, retire, reload, rotate) are in vault_crypto.c.
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "vault.h"
#include "vault_keyring.h"

struct mkey {
	unsigned char	*buf;		/* id | key, sodium_malloc'd */
	char		 hex[KEY_HEX_LEN + 1];
	int		 loaded;
};

static struct mkey	 ring[KEYRING_MAX];
static int		 cur = -1;	/* the sealing key */
static char		 ring_dir[PATH_MAX];

static int	key_read_file(const char *, const char *, struct mkey *);
static int	keyring_put(const char *, const void *, size_t);
static int	key_slot_free(void);
static int	current_read(char *);
static void	make_ad(int64_t, int64_t, unsigned char[24]);
static int	seal_with(const struct mkey *, int64_t, int64_t,
		    const void *, size_t, void **, size_t *);

/* ------------------------------------------------------------------ */
/* Files.                                                              */

int
keyring_path(char *buf, size_t len, const char *name)
{
	if (snprintf(buf, len, "%s/%s", ring_dir, name) >= (int)len) {
		log_warnx("keyring: path too long");
		return (-1);
	}
	return (0);
}

int
keyring_hex_ok(const char *hex)
{
	size_t	 i;

	for (i = 0; i < KEY_HEX_LEN; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') ||
		    (hex[i] >= 'a' && hex[i] <= 'f')))
			return (0);
	return (hex[KEY_HEX_LEN] == '\0');
}

/* keys/<hex>.key into k; its id must be the one its name says. */
static int
key_read_file(const char *path, const char *hex, struct mkey *k)
{
	struct stat	 st;
	ssize_t		 n;
	char		 idhex[KEY_HEX_LEN + 1];
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return (-1);
	if (fstat(fd, &st) == -1 || st.st_size != KEYFILE_LEN) {
		log_warnx("%s: not a tregd key file", path);
		close(fd);
		errno = EINVAL;
		return (-1);
	}
	if ((st.st_mode & 077) != 0)
		log_warnx("%s: mode %o, should be 0600", path,
		    (unsigned)(st.st_mode & 0777));
	if ((k->buf = sodium_malloc(KEYFILE_LEN)) == NULL)
		fatal("%s: sodium_malloc", __func__);
	n = read(fd, k->buf, KEYFILE_LEN);
	close(fd);
	sodium_bin2hex(idhex, sizeof(idhex), k->buf, KEY_ID_LEN);
	if (n != KEYFILE_LEN || (hex != NULL && strcmp(idhex, hex) != 0)) {
		log_warnx("%s: %s", path, n != KEYFILE_LEN ? "short read" :
		    "holds another key id than its name");
		sodium_free(k->buf);
		k->buf = NULL;
		errno = EINVAL;
		return (-1);
	}
	strlcpy(k->hex, idhex, sizeof(k->hex));
	k->loaded = 1;
	return (0);
}

static int
key_slot_free(void)
{
	int	 i;

	for (i = 0; i < KEYRING_MAX; i++)
		if (!ring[i].loaded)
			return (i);
	return (-1);
}

/* The key of this id: its slot, loading keys/<hex>.key if need be. */
int
keyring_find(const char *hex)
{
	char	 name[KEY_HEX_LEN + 8], path[PATH_MAX];
	int	 i;

	for (i = 0; i < KEYRING_MAX; i++)
		if (ring[i].loaded && strcmp(ring[i].hex, hex) == 0)
			return (i);
	if (!keyring_hex_ok(hex) || (i = key_slot_free()) == -1)
		return (-1);
	snprintf(name, sizeof(name), "%s.key", hex);
	if (keyring_path(path, sizeof(path), name) == -1 ||
	    key_read_file(path, hex, &ring[i]) == -1)
		return (-1);
	log_info("keyring: loaded key %s", hex);
	return (i);
}

/* A key file of another layout (master.key) into the ring, not written. */
int
keyring_adopt(const char *path, char *hex)
{
	struct mkey	 k;
	int		 i;

	memset(&k, 0, sizeof(k));
	if (key_read_file(path, NULL, &k) == -1)
		return (-1);
	strlcpy(hex, k.hex, KEY_HEX_LEN + 1);
	for (i = 0; i < KEYRING_MAX; i++)
		if (ring[i].loaded && strcmp(ring[i].hex, k.hex) == 0) {
			sodium_free(k.buf);
			return (i);
		}
	if ((i = key_slot_free()) == -1) {
		sodium_free(k.buf);
		return (-1);
	}
	ring[i] = k;
	return (i);
}

/* keys/NAME := buf, whole or not at all: temporary file, fsync, rename. */
static int
keyring_put(const char *name, const void *buf, size_t len)
{
	char	 path[PATH_MAX], tmp[PATH_MAX];
	int	 fd;

	if (keyring_path(path, sizeof(path), name) == -1 ||
	    keyring_path(tmp, sizeof(tmp), "new.tmp") == -1)
		return (-1);
	unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1) {
		log_warn("keyring: create %s", tmp);
		return (-1);
	}
	if (write(fd, buf, len) != (ssize_t)len || fsync(fd) == -1 ||
	    close(fd) == -1 || rename(tmp, path) == -1) {
		log_warn("keyring: write %s", path);
		unlink(tmp);
		return (-1);
	}
	return (keyring_sync_dir());
}

/* Slot i's key as keys/<hex>.key. */
int
keyring_write(int i)
{
	char	 name[KEY_HEX_LEN + 8];

	snprintf(name, sizeof(name), "%s.key", ring[i].hex);
	return (keyring_put(name, ring[i].buf, KEYFILE_LEN));
}

int
keyring_sync_dir(void)
{
	int	 fd;

	if ((fd = open(ring_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fsync(fd) == -1) {
		log_warn("keyring: fsync %s", ring_dir);
		if (fd != -1)
			close(fd);
		return (-1);
	}
	close(fd);
	return (0);
}

/* A new random key in a free slot (not written): the slot, or -1. */
int
keyring_generate(void)
{
	int	 i;

	if ((i = key_slot_free()) == -1) {
		log_warnx("keyring: %d keys already, retire one first",
		    KEYRING_MAX);
		return (-1);
	}
	if ((ring[i].buf = sodium_malloc(KEYFILE_LEN)) == NULL)
		fatal("%s: sodium_malloc", __func__);
	do
		randombytes_buf(ring[i].buf, KEYFILE_LEN);
	while (keyring_find_id(ring[i].buf) != -1);
	sodium_bin2hex(ring[i].hex, sizeof(ring[i].hex), ring[i].buf,
	    KEY_ID_LEN);
	ring[i].loaded = 1;
	return (i);
}

/* The slot holding this raw id, without loading anything. */
int
keyring_find_id(const unsigned char *id)
{
	int	 i;

	for (i = 0; i < KEYRING_MAX; i++)
		if (ring[i].loaded && ring[i].buf != NULL &&
		    sodium_memcmp(ring[i].buf, id, KEY_ID_LEN) == 0)
			return (i);
	return (-1);
}

void
keyring_unload(int i)
{
	if (ring[i].buf != NULL)
		sodium_free(ring[i].buf);	/* zeroes */
	memset(&ring[i], 0, sizeof(ring[i]));
	if (cur == i)
		cur = -1;
}

const char *
keyring_hex(int i)
{
	return (ring[i].loaded ? ring[i].hex : NULL);
}

/* The raw id of slot i, for store_sealed_count(). */
const unsigned char *
keyring_id(int i)
{
	return (ring[i].buf);
}

int
keyring_current(void)
{
	return (cur);
}

void
keyring_set_current(int i)
{
	cur = i;
}

/* keys/current into hex: 0, or -1 (absent or malformed). */
static int
current_read(char *hex)
{
	char	 path[PATH_MAX], buf[KEY_HEX_LEN + 2];
	ssize_t	 n;
	int	 fd;

	if (keyring_path(path, sizeof(path), KEY_CURRENT) == -1 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return (-1);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < KEY_HEX_LEN || (n > KEY_HEX_LEN && buf[KEY_HEX_LEN] != '\n'))
		return (-1);
	buf[KEY_HEX_LEN] = '\0';
	if (!keyring_hex_ok(buf))
		return (-1);
	strlcpy(hex, buf, KEY_HEX_LEN + 1);
	return (0);
}

/* The key keys/current names, loaded: its slot, or -1. */
int
keyring_current_file(void)
{
	char	 hex[KEY_HEX_LEN + 1];

	if (current_read(hex) == -1)
		return (-1);
	return (keyring_find(hex));
}

/* keys/current := slot i's id. */
int
keyring_current_write(int i)
{
	char	 line[KEY_HEX_LEN + 2];

	snprintf(line, sizeof(line), "%s\n", ring[i].hex);
	if (keyring_put(KEY_CURRENT, line, KEY_HEX_LEN + 1) == -1)
		return (-1);
	cur = i;
	return (0);
}

/*
 * Load every keys/<id>.key not loaded yet; with drop, unload the keys
 * whose file is gone (never the sealing key).  The number of keys.
 */
int
keyring_scan(int drop)
{
	DIR		*d;
	struct dirent	*de;
	char		 hex[KEY_HEX_LEN + 1], path[PATH_MAX], name[32];
	int		 i, n = 0;

	if ((d = opendir(ring_dir)) == NULL) {
		log_warn("keyring: %s", ring_dir);
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != KEY_HEX_LEN + 4 ||
		    strcmp(de->d_name + KEY_HEX_LEN, ".key") != 0)
			continue;
		memcpy(hex, de->d_name, KEY_HEX_LEN);
		hex[KEY_HEX_LEN] = '\0';
		if (keyring_find(hex) == -1)
			log_warnx("keyring: %s not loaded", de->d_name);
	}
	closedir(d);
	for (i = 0; i < KEYRING_MAX; i++) {
		if (!ring[i].loaded)
			continue;
		snprintf(name, sizeof(name), "%s.key", ring[i].hex);
		if (drop && i != cur && keyring_path(path, sizeof(path),
		    name) == 0 && access(path, F_OK) == -1 &&
		    errno == ENOENT) {
			log_info("keyring: key %s unloaded, its file is gone",
			    ring[i].hex);
			keyring_unload(i);
			continue;
		}
		n++;
	}
	return (n);
}

/* Where the keyring lives: "<state>/keys", made if absent. */
int
keyring_open(const char *state)
{
	if (snprintf(ring_dir, sizeof(ring_dir), "%s/%s", state,
	    TREGD_KEYRING) >= (int)sizeof(ring_dir))
		return (-1);
	if (mkdir(ring_dir, 0700) == -1 && errno != EEXIST) {
		log_warn("keyring: mkdir %s", ring_dir);
		return (-1);
	}
	return (0);
}

/* ------------------------------------------------------------------ */
/* Sealing.                                                            */

const char *
keyring_current_hex(void)
{
	return (cur >= 0 ? ring[cur].hex : "");
}

static void
make_ad(int64_t org, int64_t id, unsigned char ad[24])
{
	memcpy(ad, "tregdsv1", 8);
	memcpy(ad + 8, &org, 8);
	memcpy(ad + 16, &id, 8);
}

static int
seal_with(const struct mkey *k, int64_t org, int64_t id, const void *pt,
    size_t ptlen, void **out, size_t *outlen)
{
	unsigned char		 ad[24], *o;
	unsigned long long	 clen;
	size_t			 len = KEY_ID_LEN + NONCE_LEN + ptlen + TAG_LEN;

	if ((o = malloc(len)) == NULL)
		return (-1);
	make_ad(org, id, ad);
	memcpy(o, k->buf, KEY_ID_LEN);
	randombytes_buf(o + KEY_ID_LEN, NONCE_LEN);
	crypto_aead_xchacha20poly1305_ietf_encrypt(o + KEY_ID_LEN + NONCE_LEN,
	    &clen, pt, ptlen, ad, sizeof(ad), NULL, o + KEY_ID_LEN,
	    k->buf + KEY_ID_LEN);
	*out = o;
	*outlen = KEY_ID_LEN + NONCE_LEN + clen;
	return (0);
}

/* Under slot i's key (re-sealing), or i -1: under keys/current's. */
int
keyring_seal(int i, int64_t org, int64_t id, const void *pt, size_t ptlen,
    void **out, size_t *outlen)
{
	int	 k;

	if (i < 0) {
		/* The database's sealing key, which every host can have. */
		if ((k = keydb_sealing()) != -1)
			cur = k;
		if ((i = k) < 0) {
			log_warnx("keyring: no sealing key");
			return (-1);
		}
	}
	return (seal_with(&ring[i], org, id, pt, ptlen, out, outlen));
}

/*
 * Key i sealed under key under, for the database's keyring: under's id
 * | nonce | the key sealed, with "tregdkw1" and i's id as associated
 * data (a wrapped key copied into another row does not open).
 */
int
keyring_wrap(int i, int under, void **out, size_t *outlen)
{
	unsigned char		 ad[16], *o;
	unsigned long long	 clen;
	size_t			 len = KEY_ID_LEN + NONCE_LEN + KEY_LEN + TAG_LEN;

	if ((o = malloc(len)) == NULL)
		return (-1);
	memcpy(ad, "tregdkw1", 8);
	memcpy(ad + 8, ring[i].buf, KEY_ID_LEN);
	memcpy(o, ring[under].buf, KEY_ID_LEN);
	randombytes_buf(o + KEY_ID_LEN, NONCE_LEN);
	crypto_aead_xchacha20poly1305_ietf_encrypt(o + KEY_ID_LEN + NONCE_LEN,
	    &clen, ring[i].buf + KEY_ID_LEN, KEY_LEN, ad, sizeof(ad), NULL,
	    o + KEY_ID_LEN, ring[under].buf + KEY_ID_LEN);
	*out = o;
	*outlen = KEY_ID_LEN + NONCE_LEN + clen;
	return (0);
}

/*
 * The key hex, wrapped under key under, opened into a free slot and
 * written to keys/: its slot, or -1.
 */
int
keyring_unwrap(const char *hex, const void *w, size_t len, int under)
{
	const unsigned char	*s = w;
	unsigned char		 ad[16];
	unsigned long long	 klen;
	int			 i;

	if (len != KEY_ID_LEN + NONCE_LEN + KEY_LEN + TAG_LEN ||
	    sodium_memcmp(s, ring[under].buf, KEY_ID_LEN) != 0 ||
	    (i = key_slot_free()) == -1)
		return (-1);
	if ((ring[i].buf = sodium_malloc(KEYFILE_LEN)) == NULL)
		fatal("%s: sodium_malloc", __func__);
	if (sodium_hex2bin(ring[i].buf, KEY_ID_LEN, hex, KEY_HEX_LEN, NULL,
	    NULL, NULL) != 0)
		goto fail;
	memcpy(ad, "tregdkw1", 8);
	memcpy(ad + 8, ring[i].buf, KEY_ID_LEN);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(ring[i].buf +
	    KEY_ID_LEN, &klen, NULL, s + KEY_ID_LEN + NONCE_LEN, len -
	    KEY_ID_LEN - NONCE_LEN, ad, sizeof(ad), s + KEY_ID_LEN,
	    ring[under].buf + KEY_ID_LEN) != 0 || klen != KEY_LEN)
		goto fail;
	strlcpy(ring[i].hex, hex, sizeof(ring[i].hex));
	ring[i].loaded = 1;
	if (keyring_write(i) == -1) {
		keyring_unload(i);
		return (-1);
	}
	return (i);
 fail:
	sodium_free(ring[i].buf);
	ring[i].buf = NULL;
	return (-1);
}

int
secret_seal(int64_t org, int64_t id, const void *pt, size_t ptlen,
    void **out, size_t *outlen)
{
	return (keyring_seal(-1, org, id, pt, ptlen, out, outlen));
}

/* The key id a sealed value carries, in hex: 0, or -1 (too short). */
int
keyring_sealed_hex(const void *sealed, size_t len, char *hex)
{
	if (len < KEY_ID_LEN + NONCE_LEN + TAG_LEN)
		return (-1);
	sodium_bin2hex(hex, KEY_HEX_LEN + 1, sealed, KEY_ID_LEN);
	return (0);
}

int
secret_unseal(int64_t org, int64_t id, const void *sealed, size_t len,
    unsigned char **out, size_t *outlen)
{
	const unsigned char	*s = sealed;
	unsigned char		 ad[24], *pt;
	unsigned long long	 plen;
	char			 hex[KEY_HEX_LEN + 1];
	int			 k;

	*out = NULL;
	*outlen = 0;
	if (keyring_sealed_hex(sealed, len, hex) == -1)
		return (-1);
	if ((k = keyring_find_id(s)) == -1 && (k = keydb_find(hex)) == -1) {
		log_warnx("secret %lld is sealed under key %s, which is not "
		    "in this host's keyring nor in the database's", (long long)id,
		    hex);
		return (-1);
	}
	/*
	 * One spare byte: callers may treat the value as a C string.  A
	 * plain buffer, zeroed when freed: a value lives for one request,
	 * and guarded pages cost ten system calls each (mmap, mprotect,
	 * mlock, ...), more than the rest of a relayed call.
	 */
	if ((pt = malloc(len - KEY_ID_LEN - NONCE_LEN - TAG_LEN + 1)) == NULL)
		return (-1);
	make_ad(org, id, ad);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(pt, &plen, NULL,
	    s + KEY_ID_LEN + NONCE_LEN, len - KEY_ID_LEN - NONCE_LEN, ad,
	    sizeof(ad), s + KEY_ID_LEN, ring[k].buf + KEY_ID_LEN) != 0) {
		freezero(pt, len - KEY_ID_LEN - NONCE_LEN - TAG_LEN + 1);
		return (-1);
	}
	pt[plen] = '\0';
	*out = pt;
	*outlen = plen;
	return (0);
}

void
secret_free(unsigned char *pt, size_t len)
{
	if (pt != NULL)
		freezero(pt, len + 1);
}
