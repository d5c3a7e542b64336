/*
 * The request helper of the vault: the one file below vault.c that talks
 * to the other processes (answers to the frontend, a run to exec, a call
 * to the relay, a word to the parent), the answer of a handler (resp_*,
 * db_*) and the fields of a request (body_*, query_param).  Domain files
 * call these with C structs and never name an imsg.  It also holds the
 * process's state that vault.c sets and every layer reads.
 */

#include <sys/types.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pack.h"
#include "vault.h"

struct tregd_conf	 vault_conf;
const char		*vault_root;	/* the state directory, seen from here */
struct procinfo		 vault_procs[PROCINFO_MAX];
struct imsgev		*vault_parent, *vault_frontend, *vault_exec;
struct imsgev		*vault_relay;

/* Who the request being answered came from, for the request log. */
static int64_t	 asker_org, asker_user;

static json_t	*body_field(struct vault_req *, struct vault_resp *,
		    const char *, int);
static int	 hexval(int);
static void	 answer_send(uint32_t, uint32_t, int, int64_t, int64_t,
		    const char *, size_t);

/* The caller of the request being answered (0, 0: none yet). */
void
vault_asker(int64_t org, int64_t user)
{
	asker_org = org;
	asker_user = user;
}

/* An answer to the frontend: its status, who asked, its JSON text. */
static void
answer_send(uint32_t type, uint32_t reqid, int status, int64_t org,
    int64_t user, const char *text, size_t len)
{
	struct api_response	 ar;

	memset(&ar, 0, sizeof(ar));
	ar.status = status;
	ar.org_id = org;
	ar.user_id = user;
	if (imsgev_send_blob(vault_frontend, type, reqid, &ar, sizeof(ar),
	    text, len) == -1)
		fatal("%s: send", __func__);
}

void
vault_send(uint32_t reqid, int status, const char *text, size_t len)
{
	answer_send(IMSG_API_RESPONSE, reqid, status, asker_org, asker_user,
	    text, len);
}

void
vault_respond(uint32_t reqid, struct vault_resp *resp)
{
	char	*text;

	if (resp->text != NULL) {
		vault_send(reqid, resp->status, resp->text, resp->textlen);
		return;
	}
	if (resp->body == NULL)
		resp->body = json_object();
	if ((text = json_dumps(resp->body, JSON_COMPACT)) == NULL)
		fatalx("%s: json_dumps", __func__);
	vault_send(reqid, resp->status, text, strlen(text));
	freezero(text, strlen(text));
}

static void
resp_verror(struct vault_resp *resp, int status, const char *fmt, va_list ap)
{
	char	 msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	json_decref(resp->body);
	free(resp->text);
	resp->text = NULL;
	resp->status = status;
	resp->body = json_pack("{s:s}", "detail", msg);
}

void
resp_error(struct vault_resp *resp, int status, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	resp_verror(resp, status, fmt, ap);
	va_end(ap);
}

/*
 * A refusal in the middle of a transaction: nothing of it stays (rolled
 * back), and the answer says why.
 */
void
resp_refuse(struct vault_resp *resp, int status, const char *fmt, ...)
{
	va_list	 ap;

	store_rollback();
	va_start(ap, fmt);
	resp_verror(resp, status, fmt, ap);
	va_end(ap);
}

void
resp_ok(struct vault_resp *resp, json_t *body)
{
	json_decref(resp->body);
	resp->status = 200;
	resp->body = body;
}

void
resp_text(struct vault_resp *resp, char *text, size_t len)
{
	json_decref(resp->body);
	free(resp->text);
	resp->status = 200;
	resp->body = NULL;
	resp->text = text;
	resp->textlen = len;
}

void
db_fail(struct vault_resp *resp, const char *what)
{
	int	 unavailable = store_unavailable();

	log_warnx("database error (%s): %s", what, store_error());
	vault_metrics_db_error();
	store_rollback();
	/* Locked by another process, full, unreachable: not tregd's fault. */
	if (unavailable)
		resp_error(resp, 503, "the database is unavailable (locked, "
		    "full or unreachable) — nothing was changed, try again "
		    "in a moment");
	else
		resp_error(resp, 500, "internal error: the database failed "
		    "(%s)", what);
}

int
db_begin(struct vault_resp *resp)
{
	if (store_begin() == -1) {
		db_fail(resp, "begin");
		return (-1);
	}
	return (0);
}

int
db_commit(struct vault_resp *resp)
{
	if (store_commit() == -1) {
		db_fail(resp, "commit");
		return (-1);
	}
	return (0);
}

void
iso_time(int64_t t, char *buf, size_t len)
{
	time_t		 tt = t;
	struct tm	 tm;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void
now_iso(char *buf, size_t len)
{
	iso_time(time(NULL), buf, len);
}

int
valid_name(const char *s)
{
	size_t	 n = strlen(s);
	size_t	 i;

	if (n < 1 || n > NAME_LEN_MAX)
		return (0);
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return (0);
	return (1);
}

int
json_has_nul(json_t *v)
{
	const char	*k;
	json_t		*e;
	size_t		 i;

	if (json_is_string(v))
		return (memchr(json_string_value(v), '\0',
		    json_string_length(v)) != NULL);
	if (json_is_array(v)) {
		json_array_foreach(v, i, e)
			if (json_has_nul(e))
				return (1);
	} else if (json_is_object(v)) {
		json_object_foreach(v, k, e)
			if (json_has_nul(e))
				return (1);
	}
	return (0);
}

static json_t *
body_field(struct vault_req *req, struct vault_resp *resp, const char *f,
    int required)
{
	json_t	*v = req->body ? json_object_get(req->body, f) : NULL;

	if (v == NULL && required)
		resp_error(resp, 422, "field '%s' is required", f);
	return (v);
}

int
body_str(struct vault_req *req, struct vault_resp *resp, const char *f,
    int required, size_t maxlen, const char **out)
{
	json_t	*v;

	if ((v = body_field(req, resp, f, required)) == NULL)
		return (required ? -1 : 0);
	if (!json_is_string(v)) {
		resp_error(resp, 422, "field '%s' must be a string", f);
		return (-1);
	}
	if (json_string_length(v) > maxlen) {
		resp_error(resp, 422, "field '%s' is too long (at most %zu "
		    "bytes)", f, maxlen);
		return (-1);
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		resp_error(resp, 422, "field '%s' contains a NUL byte", f);
		return (-1);
	}
	*out = json_string_value(v);
	return (0);
}

int
body_bool(struct vault_req *req, struct vault_resp *resp, const char *f,
    int required, int *out)
{
	json_t	*v;

	if ((v = body_field(req, resp, f, required)) == NULL)
		return (required ? -1 : 0);
	if (!json_is_boolean(v)) {
		resp_error(resp, 422, "field '%s' must be true or false", f);
		return (-1);
	}
	*out = json_is_true(v);
	return (0);
}

int
body_int(struct vault_req *req, struct vault_resp *resp, const char *f,
    int required, int64_t min, int64_t max, int64_t *out)
{
	json_t	*v;

	if ((v = body_field(req, resp, f, required)) == NULL)
		return (required ? -1 : 0);
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max) {
		resp_error(resp, 422, "field '%s' must be an integer from "
		    "%lld to %lld", f, (long long)min, (long long)max);
		return (-1);
	}
	*out = json_integer_value(v);
	return (0);
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (c - 'A' + 10);
	return (-1);
}

/* The percent-decoded value of key in a query string; 0 found, -1 not. */
int
query_param(const char *query, const char *key, char *buf, size_t len)
{
	const char	*p = query, *end, *eq;
	size_t		 klen = strlen(key), o;
	int		 h, l;

	while (*p != '\0') {
		end = strchr(p, '&');
		if (end == NULL)
			end = p + strlen(p);
		eq = memchr(p, '=', end - p);
		if (eq != NULL && (size_t)(eq - p) == klen &&
		    strncmp(p, key, klen) == 0) {
			for (o = 0, p = eq + 1; p < end && o + 1 < len; p++) {
				if (*p == '%' && end - p >= 3 &&
				    (h = hexval(p[1])) != -1 &&
				    (l = hexval(p[2])) != -1) {
					buf[o++] = h * 16 + l;
					p += 2;
				} else
					buf[o++] = *p == '+' ? ' ' : *p;
			}
			buf[o] = '\0';
			if (memchr(buf, '\0', o) != NULL)
				return (-1);
			return (0);
		}
		p = *end ? end + 1 : end;
	}
	return (-1);
}

/* A tregctl command here changed the keyring: the others reload it. */
void
vault_keyring_changed(void)
{
	if (vault_conf.vault_workers > 1)
		imsgev_compose(vault_parent, IMSG_KEYRING, 0, -1, NULL, 0);
}

/* tregctl reload, from connection conn: the parent does it and answers. */
void
vault_ctl_reload(uint32_t conn)
{
	imsgev_compose(vault_parent, IMSG_CTL_RELOAD, conn, -1, NULL, 0);
}

/* tregctl log verbose or brief: the parent tells every process. */
void
vault_log_verbose(int v)
{
	imsgev_compose(vault_parent, IMSG_CTL_LOG_VERBOSE, 0, -1, &v,
	    sizeof(v));
}

void
vault_run_start(uint32_t reqid, const struct run_start *rs,
    const void *order, size_t len, int64_t org, int64_t user)
{
	struct api_response	 who;

	if (imsgev_send_blob(vault_exec, IMSG_RUN_START, reqid, rs,
	    sizeof(*rs), order, len) == -1)
		fatal("%s: send to exec", __func__);
	memset(&who, 0, sizeof(who));
	who.status = 200;
	who.org_id = org;
	who.user_id = user;
	if (imsgev_compose(vault_frontend, IMSG_RUN_ACCEPTED, reqid, -1,
	    &who, sizeof(who)) == -1)
		fatal("%s: send to frontend", __func__);
}

void
vault_call_start(uint32_t reqid, const struct call_start *cs,
    const void *pk, size_t len)
{
	if (imsgev_send_blob(vault_relay, IMSG_CALL_START, reqid, cs,
	    sizeof(*cs), pk, len) == -1)
		fatal("%s: send to relay", __func__);
}

/* A keyless run's grant, before its IMSG_RUN_START (tregd.h). */
void
vault_egress_grant(const struct egress_grant *g, const void *pk, size_t len)
{
	if (imsgev_send_blob(vault_relay, IMSG_EGRESS_GRANT, g->runid, g,
	    sizeof(*g), pk, len) == -1)
		fatal("%s: send to relay", __func__);
}

/* The run ended: its grant goes (the relay closes what is left). */
void
vault_egress_revoke(uint32_t runid)
{
	struct egress_end	 ee;

	memset(&ee, 0, sizeof(ee));
	ee.runid = runid;
	if (imsgev_compose(vault_relay, IMSG_EGRESS_REVOKE, runid, -1, &ee,
	    sizeof(ee)) == -1)
		fatal("%s: send to relay", __func__);
}

/* The verdict on one request of a run's CLI, its detail packed. */
void
vault_egress_verdict(const struct egress_verdict *v, const char *detail)
{
	struct pack	 pk;

	pack_init(&pk);
	pack_str(&pk, detail != NULL ? detail : "");
	if (imsgev_send_blob(vault_relay, IMSG_EGRESS_VERDICT, v->reqid, v,
	    sizeof(*v), pk.buf, pk.len) == -1)
		fatal("%s: send to relay", __func__);
	pack_free(&pk);
}

void
vault_call_refused(uint32_t reqid, int status, int64_t org, int64_t user,
    const char *text, size_t len)
{
	answer_send(IMSG_CALL_REFUSED, reqid, status, org, user, text, len);
}

/*
 * A peer that has gone says nothing more (0); a read that fails is -1,
 * and its handler sees the error too.
 */
int
vault_read_peer(struct imsgev *iev)
{
	ssize_t	 n;

	if (iev->dead)
		return (0);
	n = imsgbuf_read(&iev->ibuf);
	if (n == -1 && errno != EAGAIN)
		return (-1);
	imsgev_drain(iev);
	return (0);
}

json_t *
ctl_errorf(const char *fmt, ...)
{
	char	 msg[512];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return (json_pack("{s:s}", "error", msg));
}

/*
 * on: what is sent to the relay and the frontend waits, to go out in one
 * write each when it is turned off (a turn's calls).
 */
void
vault_cork(int on)
{
	if (on) {
		imsgev_cork(vault_relay);
		imsgev_cork(vault_frontend);
	} else {
		imsgev_uncork(vault_frontend);
		imsgev_uncork(vault_relay);
	}
}

/* A sign-in code to mail: the parent runs sendmail. */
void
vault_mail_send(const struct mail_send *m)
{
	imsgev_compose(vault_parent, IMSG_MAIL_SEND, 0, -1, m, sizeof(*m));
}

/* A request of the vault's own (vault_health.c), in one message. */
void
vault_fetch_start(uint32_t fetchid, int allow_private, uint32_t timeout_s,
    const void *pk, size_t len)
{
	struct fetch_start	 fs;
	struct iovec		 iov[2];

	memset(&fs, 0, sizeof(fs));
	fs.fetchid = fetchid;
	fs.allow_private = allow_private != 0;
	fs.timeout_s = timeout_s;
	iov[0].iov_base = &fs;
	iov[0].iov_len = sizeof(fs);
	iov[1].iov_base = (void *)pk;
	iov[1].iov_len = len;
	if (len > FETCH_REQ_MAX || imsgev_composev(vault_relay,
	    IMSG_FETCH_START, 0, -1, iov, 2) == -1)
		fatal("%s: send to relay", __func__);
}
