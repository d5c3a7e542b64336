/*
 * vault_mail.c: email sign-in (treg's third door), POST /auth/email/start
 * and /auth/email/verify.  Proving an email gives its person an identity
 * token (vault_identity.c).
 *
 * A code is 6 digits, lives CODE_TTL seconds, takes CODE_ATTEMPTS wrong
 * guesses and then is gone, and is used once.  Only a hash of it is
 * stored, keyed with a random salt of its own; a guess is hashed alike
 * and the hashes compared with sodium_memcmp (constant time).  An email
 * is sent at most SEND_MAX codes per SEND_WINDOW: with the attempts,
 * that bounds how fast anyone may guess.  The code never reaches a log
 * line or the database.
 *
 * The vault starts no program: the parent mails the code through the
 * host's sendmail (parent/mail.c).  "mail development yes" returns the
 * code in the answer instead, as treg's development server does, and
 * says so in the log at start and on every code.
 */

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "log.h"
#include "compat.h"
#include "vault.h"

#define CODE_TTL	600	/* seconds */
#define CODE_ATTEMPTS	5
#define SEND_WINDOW	900	/* seconds */
#define SEND_MAX	5
#define CODE_DIGITS	6

static void	code_hash(const char *, const uint8_t *, uint8_t *);
static int	code_send_allowed(struct store_email_code *, int64_t);
static void	code_deliver(const char *, const char *, struct vault_resp *);
static int	code_take(const char *, const char *, struct vault_resp *);
static int	code_person(const char *, int64_t *, struct vault_resp *);
static void	email_start(struct vault_req *, struct vault_resp *);
static void	email_verify(struct vault_req *, struct vault_resp *);

const struct vault_route vault_mail_routes[] = {
	{ ROUTE_EMAIL_START,	ROLE_NONE,	email_start },
	{ ROUTE_EMAIL_VERIFY,	ROLE_NONE,	email_verify },
	{ ROUTE_NONE,		ROLE_NONE,	NULL }
};

static void
code_hash(const char *code, const uint8_t *salt, uint8_t *out)
{
	crypto_generichash(out, STORE_HASH_LEN, (const unsigned char *)code,
	    strlen(code), salt, STORE_HASH_LEN);
}

/* Within the email's sending limit: 1 (the row counts this one), 0. */
static int
code_send_allowed(struct store_email_code *c, int64_t now)
{
	if (c->window_start + SEND_WINDOW <= now) {
		c->window_start = now;
		c->sent = 0;
	}
	if (c->sent >= SEND_MAX)
		return (0);
	c->sent++;
	return (1);
}

/* Mailed by the parent, or shown (development); the answer either way. */
static void
code_deliver(const char *email, const char *code, struct vault_resp *resp)
{
	struct mail_send	 m;

	if (vault_conf.mail_development) {
		log_warnx("mail development: the sign-in code for %s is in "
		    "the answer, not mailed", email);
		resp_ok(resp, json_pack("{s:b,s:s,s:s}", "sent", 1, "email",
		    email, "dev_code", code));
		return;
	}
	memset(&m, 0, sizeof(m));
	strlcpy(m.to, email, sizeof(m.to));
	strlcpy(m.code, code, sizeof(m.code));
	m.ttl_minutes = CODE_TTL / 60;
	vault_mail_send(&m);
	explicit_bzero(&m, sizeof(m));
	resp_ok(resp, json_pack("{s:b,s:s}", "sent", 1, "email", email));
}

static void
email_start(struct vault_req *req, struct vault_resp *resp)
{
	struct store_email_code	 c;
	char			 email[STORE_EMAIL_MAX + 1];
	char			 code[CODE_DIGITS + 1];
	int64_t			 now = (int64_t)time(NULL), uid;
	int			 rc, is_agent;

	if (vault_conf.mail_sendmail[0] == '\0' &&
	    !vault_conf.mail_development) {
		resp_error(resp, 501, "email sign-in is not set up on this "
		    "server (mail sendmail in tregd.conf)");
		return;
	}
	if (body_email(req, resp, email, sizeof(email)) == -1 ||
	    body_email_person(resp, email) == -1 || db_begin(resp) == -1)
		return;
	if ((rc = store_email_code_get(email, &c)) == -1 ||
	    (rc = store_user_by_email(email, &uid, &is_agent)) == -1) {
		db_fail(resp, "start a sign-in");
		return;
	}
	/*
	 * Nobody to sign in (closed signup): the same answer, no mail, so
	 * that neither the answer nor an inbox tells who has an account.
	 */
	if (rc == 1 && !vault_conf.signup_open && !vault_conf.mail_development) {
		store_rollback();
		resp_ok(resp, json_pack("{s:b,s:s}", "sent", 1, "email",
		    email));
		return;
	}
	if (!code_send_allowed(&c, now)) {
		resp_refuse(resp, 429, "too many code requests — please wait "
		    "a few minutes");
		return;
	}
	snprintf(code, sizeof(code), "%0*u", CODE_DIGITS,
	    randombytes_uniform(1000000));
	randombytes_buf(c.salt, sizeof(c.salt));
	code_hash(code, c.salt, c.hash);
	c.expires_at = now + CODE_TTL;
	c.attempts = CODE_ATTEMPTS;
	if (store_email_code_put(email, &c) == -1) {
		explicit_bzero(code, sizeof(code));
		db_fail(resp, "start a sign-in");
		return;
	}
	explicit_bzero(&c, sizeof(c));
	if (db_commit(resp) == 0)
		code_deliver(email, code, resp);
	explicit_bzero(code, sizeof(code));
}

/*
 * The email's code against the guess, inside the transaction: 0 it
 * matched (and is used up), or -1 with the answer (401 for any wrong,
 * used, expired or unknown code; one answer, so none tells which).
 */
static int
code_take(const char *email, const char *guess, struct vault_resp *resp)
{
	struct store_email_code	 c;
	uint8_t			 h[STORE_HASH_LEN];
	int64_t			 now = (int64_t)time(NULL);
	int			 rc, ok;

	if ((rc = store_email_code_get(email, &c)) == -1) {
		db_fail(resp, "verify a sign-in");
		return (-1);
	}
	if (rc == 1 || c.expires_at <= now || c.attempts <= 0) {
		resp_refuse(resp, 401, "invalid code");
		return (-1);
	}
	code_hash(guess, c.salt, h);
	ok = sodium_memcmp(h, c.hash, sizeof(h)) == 0;
	explicit_bzero(h, sizeof(h));
	if (ok || --c.attempts <= 0) {
		/* Used, or out of guesses: no code is left to take. */
		c.attempts = 0;
		c.expires_at = 0;
		randombytes_buf(c.hash, sizeof(c.hash));
	}
	rc = store_email_code_put(email, &c);
	explicit_bzero(&c, sizeof(c));
	if (rc == -1) {
		db_fail(resp, "verify a sign-in");
		return (-1);
	}
	if (!ok) {
		/* The wrong guess counts even though the answer is 401. */
		if (db_commit(resp) == 0)
			resp_error(resp, 401, "invalid code");
		return (-1);
	}
	return (0);
}

/* The person of a proven email, made if signup is open: 0, or -1. */
static int
code_person(const char *email, int64_t *uid, struct vault_resp *resp)
{
	char	 now[STORE_TIME_MAX];
	int	 rc, is_agent;

	if ((rc = store_user_by_email(email, uid, &is_agent)) == 1 &&
	    vault_conf.signup_open) {
		now_iso(now, sizeof(now));
		if ((rc = store_user_insert(email, 0, now, uid)) == 0)
			log_info("user %lld signed up by email",
			    (long long)*uid);
		is_agent = 0;
	}
	if (rc == -1 || rc == STORE_CONFLICT) {
		db_fail(resp, "sign in");
		return (-1);
	}
	if (rc == 1)
		resp_refuse(resp, 403, "signup is closed on this server: ask "
		    "an operator (tregctl user add)");
	else if (is_agent)
		resp_refuse(resp, 403, "this address cannot be used to sign "
		    "in");
	else
		return (0);
	return (-1);
}

static void
email_verify(struct vault_req *req, struct vault_resp *resp)
{
	char		 email[STORE_EMAIL_MAX + 1];
	char		 token[IDENTITY_TOKEN_LEN + 1];
	const char	*guess;
	int64_t		 uid;

	if (body_email(req, resp, email, sizeof(email)) == -1 ||
	    body_str(req, resp, "code", 1, 64, &guess) == -1 ||
	    db_begin(resp) == -1)
		return;
	if (code_take(email, guess, resp) == -1 ||
	    code_person(email, &uid, resp) == -1)
		return;
	if (identity_mint(uid, token) == -1) {
		db_fail(resp, "sign in");
		return;
	}
	if (db_commit(resp) == 0)
		resp_ok(resp, json_pack("{s:s,s:s,s:s,s:I}", "token", token,
		    "email", email, "kind", "identity", "user_id",
		    (json_int_t)uid));
	explicit_bzero(token, sizeof(token));
}
