/*
 * The master key and sealing of secret values.
 *
 * A sealed value is: key id (8 bytes) | nonce (24) | XChaCha20-Poly1305
 * ciphertext and tag, with the org id and secret id as associated data,
 * so a sealed value copied into another row does not open.  The key lives
 * in the state directory (mode 0600) and in locked memory here.
 *
 * Rotation writes master.key.new, re-seals every secret under it in one
 * transaction, then renames it over master.key after zeroing the old
 * file.  If the vault dies in between, the next start finishes (secrets
 * already under the new key) or abandons (none are) the rotation.
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "vault.h"

#define KEY_ID_LEN	8
#define KEY_LEN		crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define NONCE_LEN	crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_LEN		crypto_aead_xchacha20poly1305_ietf_ABYTES
#define KEYFILE_LEN	(KEY_ID_LEN + KEY_LEN)

struct mkey {
	unsigned char	*buf;		/* id | key, sodium_malloc'd */
	int		 loaded;
};

static struct mkey	 cur, next;
static char		 key_path[PATH_MAX];
static char		 npath[PATH_MAX + 8];	/* key_path.new */
static char		 key_id_hex[KEY_ID_LEN * 2 + 1];

static int	key_load(const char *, struct mkey *);
static int	key_create(const char *, struct mkey *);
static void	key_unload(struct mkey *);
static int	key_reseal_all(const struct mkey *, const struct mkey *);
static int	key_count(const struct mkey *);
static int	key_reseal_one(int64_t, int64_t, const void *, size_t, void *);
static int	key_finish_rotation(void);

static void
key_alloc(struct mkey *k)
{
	if ((k->buf = sodium_malloc(KEYFILE_LEN)) == NULL)
		fatal("%s: sodium_malloc", __func__);
}

static void
key_unload(struct mkey *k)
{
	if (k->buf != NULL)
		sodium_free(k->buf);
	k->buf = NULL;
	k->loaded = 0;
}

static int
key_load(const char *path, struct mkey *k)
{
	struct stat	 st;
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return (-1);
	if (fstat(fd, &st) == -1 || st.st_size != KEYFILE_LEN) {
		log_warnx("%s: not a tregd master key", path);
		close(fd);
		errno = EINVAL;
		return (-1);
	}
	if ((st.st_mode & 077) != 0)
		log_warnx("%s: mode %o, should be 0600", path,
		    (unsigned)(st.st_mode & 0777));
	key_alloc(k);
	n = read(fd, k->buf, KEYFILE_LEN);
	close(fd);
	if (n != KEYFILE_LEN) {
		key_unload(k);
		errno = EIO;
		return (-1);
	}
	k->loaded = 1;
	return (0);
}

static int
key_create(const char *path, struct mkey *k)
{
	int	 fd;

	key_alloc(k);
	randombytes_buf(k->buf, KEYFILE_LEN);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd == -1) {
		log_warn("create %s", path);
		key_unload(k);
		return (-1);
	}
	if (write(fd, k->buf, KEYFILE_LEN) != KEYFILE_LEN || fsync(fd) == -1) {
		log_warn("write %s", path);
		close(fd);
		unlink(path);
		key_unload(k);
		return (-1);
	}
	close(fd);
	k->loaded = 1;
	return (0);
}

static void
key_set_id(void)
{
	sodium_bin2hex(key_id_hex, sizeof(key_id_hex), cur.buf, KEY_ID_LEN);
}

int
crypto_init(const char *path)
{
	if (strlcpy(key_path, path, sizeof(key_path)) >= sizeof(key_path))
		return (-1);
	snprintf(npath, sizeof(npath), "%s.new", key_path);
	if (key_load(key_path, &cur) == -1) {
		if (errno != ENOENT) {
			log_warn("master key %s", key_path);
			return (-1);
		}
		if (key_create(key_path, &cur) == -1)
			return (-1);
		log_info("created a new master key");
	}
	key_set_id();
	if (key_load(npath, &next) == 0)
		log_warnx("found an unfinished key rotation");
	return (0);
}

/* After the schema exists: settle a rotation a crash interrupted. */
static int
key_finish_rotation(void)
{
	if (!next.loaded)
		return (0);
	if (key_count(&next) > 0 && key_count(&cur) == 0) {
		if (rename(npath, key_path) == -1)
			return (-1);
		key_unload(&cur);
		cur = next;
		memset(&next, 0, sizeof(next));
		key_set_id();
		log_info("finished the interrupted key rotation");
	} else if (key_count(&next) == 0) {
		unlink(npath);
		key_unload(&next);
		log_info("abandoned the interrupted key rotation");
	}
	return (0);
}

const char *
crypto_key_id(void)
{
	return (key_id_hex);
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

int
secret_seal(int64_t org, int64_t id, const void *pt, size_t ptlen,
    void **out, size_t *outlen)
{
	return (seal_with(&cur, org, id, pt, ptlen, out, outlen));
}

int
secret_unseal(int64_t org, int64_t id, const void *sealed, size_t len,
    unsigned char **out, size_t *outlen)
{
	const unsigned char	*s = sealed;
	const struct mkey	*k;
	unsigned char		 ad[24], *pt;
	unsigned long long	 plen;

	*out = NULL;
	*outlen = 0;
	if (len < KEY_ID_LEN + NONCE_LEN + TAG_LEN)
		return (-1);
	if (cur.loaded && sodium_memcmp(s, cur.buf, KEY_ID_LEN) == 0)
		k = &cur;
	else if (next.loaded && sodium_memcmp(s, next.buf, KEY_ID_LEN) == 0)
		k = &next;
	else
		return (-1);
	/* One spare byte: callers may treat the value as a C string. */
	if ((pt = sodium_malloc(len - KEY_ID_LEN - NONCE_LEN - TAG_LEN + 1)) ==
	    NULL)
		return (-1);
	make_ad(org, id, ad);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(pt, &plen, NULL,
	    s + KEY_ID_LEN + NONCE_LEN, len - KEY_ID_LEN - NONCE_LEN, ad,
	    sizeof(ad), s + KEY_ID_LEN, k->buf + KEY_ID_LEN) != 0) {
		sodium_free(pt);
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
		sodium_free(pt);	/* zeroes */
}

static int
key_count(const struct mkey *k)
{
	int64_t		 n;

	if (store_sealed_count(k->buf, KEY_ID_LEN, &n) == -1)
		return (-1);
	return (n > INT_MAX ? INT_MAX : (int)n);
}

struct reseal {
	const struct mkey	*to;
	int			 failed;
};

static int
key_reseal_one(int64_t id, int64_t org, const void *old, size_t oldlen,
    void *arg)
{
	struct reseal	*rs = arg;
	unsigned char	*pt;
	void		*sealed;
	size_t		 ptlen, slen;
	int		 r;

	if (secret_unseal(org, id, old, oldlen, &pt, &ptlen) == -1) {
		log_warnx("key rotate: secret %lld does not open",
		    (long long)id);
		rs->failed = 1;
		return (-1);
	}
	r = seal_with(rs->to, org, id, pt, ptlen, &sealed, &slen);
	secret_free(pt, ptlen);
	if (r == -1) {
		rs->failed = 1;
		return (-1);
	}
	r = store_secret_set_sealed(id, sealed, slen);
	free(sealed);
	if (r == -1) {
		rs->failed = 1;
		return (-1);
	}
	return (0);
}

/* Re-seal every secret sealed under from with to; inside a transaction. */
static int
key_reseal_all(const struct mkey *from, const struct mkey *to)
{
	struct reseal	 rs;

	rs.to = to;
	rs.failed = 0;
	(void)from;
	if (store_secrets_each_sealed(key_reseal_one, &rs) == -1 ||
	    rs.failed)
		return (-1);
	return (0);
}

/* Overwrite the old key file's bytes before it is replaced. */
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
}

int
crypto_rotate(const char *why)
{
	if (key_finish_rotation() == -1)
		return (-1);
	unlink(npath);
	if (key_create(npath, &next) == -1)
		return (-1);
	if (store_begin() == -1)
		goto fail;
	if (key_reseal_all(&cur, &next) == -1 || store_commit() == -1) {
		store_rollback();
		goto fail;
	}
	key_wipe_file(key_path);
	if (rename(npath, key_path) == -1) {
		log_warn("rename %s", npath);
		return (-1);	/* the next start finishes it */
	}
	key_unload(&cur);
	cur = next;
	memset(&next, 0, sizeof(next));
	key_set_id();
	log_info("master key rotated (%s), new key id %s", why, key_id_hex);
	return (0);
 fail:
	unlink(npath);
	key_unload(&next);
	return (-1);
}

/* Called once the schema is in place. */
int
crypto_settle(void)
{
	return (key_finish_rotation());
}

const char *
crypto_key_file(void)
{
	return (TREGD_KEY);
}
