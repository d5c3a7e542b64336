/*
 * tregctl key new | use ID | retire ID | list | reload: the control
 * socket's keyring commands (vault_crypto.c does the work).  Answers
 * name key ids only, never a key.
 */

#include <sys/types.h>

#include <stdio.h>
#include <string.h>

#include "vault.h"

static int	ctl_key_new(json_t **);
static int	ctl_key_use(const char *, json_t **);
static int	ctl_key_retire(const char *, json_t **);
static int	ctl_key_list(json_t **);
static int	ctl_key_reload(json_t **);

int
ctl_key(const struct ctl_request *cr, json_t **reply)
{
	switch (cr->cmd) {
	case CTL_KEY_NEW:
		return (ctl_key_new(reply));
	case CTL_KEY_USE:
		return (ctl_key_use(cr->key, reply));
	case CTL_KEY_RETIRE:
		return (ctl_key_retire(cr->key, reply));
	case CTL_KEY_LIST:
		return (ctl_key_list(reply));
	case CTL_KEY_RELOAD:
		return (ctl_key_reload(reply));
	}
	*reply = ctl_errorf("unknown key command %u", cr->cmd);
	return (-1);
}

static int
ctl_key_new(json_t **reply)
{
	char	 hex[CTL_KEY_HEX + 1], err[256];

	if (crypto_key_new(hex, err, sizeof(err)) == -1) {
		*reply = ctl_errorf("%s", err);
		return (-1);
	}
	*reply = json_pack("{s:s,s:o}", "key_id", hex, "file",
	    json_sprintf("%s/%s/%s.key", vault_conf.state, TREGD_KEYRING,
	    hex));
	return (0);
}

static int
ctl_key_use(const char *hex, json_t **reply)
{
	char	 err[256];
	int64_t	 n;

	if (crypto_key_use(hex, &n, err, sizeof(err)) == -1) {
		*reply = ctl_errorf("%s", err);
		return (-1);
	}
	*reply = json_pack("{s:s,s:I}", "key_id", hex, "resealed",
	    (json_int_t)n);
	return (0);
}

static int
ctl_key_retire(const char *hex, json_t **reply)
{
	char	 err[768];

	if (crypto_key_retire(hex, err, sizeof(err)) == -1) {
		*reply = ctl_errorf("%s", err);
		return (-1);
	}
	*reply = json_pack("{s:s}", "retired", hex);
	if (err[0] != '\0')
		json_object_set_new(*reply, "note", json_string(err));
	return (0);
}

static int
ctl_key_list(json_t **reply)
{
	if ((*reply = crypto_key_list()) == NULL) {
		*reply = ctl_errorf("database error");
		return (-1);
	}
	return (0);
}

static int
ctl_key_reload(json_t **reply)
{
	int	 n;

	if ((n = crypto_reload()) == -1) {
		*reply = ctl_errorf("the keyring could not be read (see the "
		    "log)");
		return (-1);
	}
	*reply = json_pack("{s:i,s:s}", "keys", n, "key_id", keyring_current_hex());
	return (0);
}
