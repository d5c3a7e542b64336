/*
 * The keyring between vault_keyring.c (the keys in memory, their files,
 * sealing) and vault_crypto.c (start, migration, the key commands).
 * Keys are named by slot, 0..KEYRING_MAX-1.
 */

#ifndef VAULT_KEYRING_H
#define VAULT_KEYRING_H

#include <jansson.h>
#include <sodium.h>

#define KEY_ID_LEN	8
#define KEY_HEX_LEN	(KEY_ID_LEN * 2)
#define KEY_LEN		crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define NONCE_LEN	crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_LEN		crypto_aead_xchacha20poly1305_ietf_ABYTES
#define KEYFILE_LEN	(KEY_ID_LEN + KEY_LEN)
#define KEYRING_MAX	16
#define KEY_CURRENT	"current"	/* keys/current: the sealing key */

int		 keyring_open(const char *);
int		 keyring_path(char *, size_t, const char *);
int		 keyring_hex_ok(const char *);
int		 keyring_find(const char *);
int		 keyring_find_id(const unsigned char *);
int		 keyring_adopt(const char *, char *);
int		 keyring_write(int);
int		 keyring_sync_dir(void);
int		 keyring_generate(void);
void		 keyring_unload(int);
const char	*keyring_hex(int);
const unsigned char *keyring_id(int);
int		 keyring_current(void);
void		 keyring_set_current(int);
int		 keyring_current_file(void);
int		 keyring_current_write(int);
int		 keyring_scan(int);
int		 keyring_seal(int, int64_t, int64_t, const void *, size_t,
		    void **, size_t *);
int		 keyring_sealed_hex(const void *, size_t, char *);
int		 keyring_wrap(int, int, void **, size_t *);
int		 keyring_unwrap(const char *, const void *, size_t, int);

/* vault_keydb.c: the keyring in the database */
int		 keydb_find(const char *);
int		 keydb_sealing(void);
int		 keydb_start(char *, size_t);
int		 keydb_register(int);
int		 keydb_use(int);
void		 keydb_used(int);
int		 keydb_retire(const char *, int, char *, size_t);
int		 keydb_reload(void);
void		 keydb_list(json_t *);

#endif /* VAULT_KEYRING_H */
