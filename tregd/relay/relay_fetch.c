/*
 * relay_fetch.c: requests the vault makes for itself (credential health:
 * a tool's probe, an OAuth token refresh, an owner's webhook alert).
 *
 * Each is an rcall like a /call's, so it goes through the same name
 * resolution, SSRF guard (relay.c: relay_addr_ok, `relay allow-private')
 * and TLS verification (relay_http.c); only its answer differs: the
 * status and at most FETCH_BODY_MAX bytes of the body go back to the
 * vault worker that asked, in one IMSG_FETCH_DONE, and nothing reaches
 * the frontend.  The body is not masked: a token endpoint's answer is
 * the new token, which the vault seals; the vault never passes a fetched
 * body on to a client.  What is held here is zeroed when freed.
 */

#include <sys/types.h>
#include <sys/uio.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pack.h"
#include "redact.h"
#include "redact_cache.h"
#include "relay.h"

struct rfetch {
	uint32_t	 fetchid;
	size_t		 len;
	int		 truncated;
	char		 body[FETCH_BODY_MAX];
};

/* No secret is masked in what comes back to the vault: an empty set. */
static struct redact_set	*empty_set;

static int	rfetch_unpack(struct rcall *, const void *, size_t);

void
rfetch_imsg_start(struct imsgev *iev, struct imsg *imsg)
{
	struct fetch_start	 fs;
	struct rcall		*rc;
	size_t			 len = imsg->hdr.len - IMSG_HEADER_SIZE;
	struct pack		 pk;

	if (len < sizeof(fs) || len - sizeof(fs) > FETCH_REQ_MAX)
		fatalx("bad IMSG_FETCH_START from %s", iev->name);
	memcpy(&fs, imsg->data, sizeof(fs));
	if (empty_set == NULL) {
		pack_init(&pk);
		pack_u32(&pk, 0);
		if ((empty_set = rcache_compile(pk.buf, pk.len)) == NULL)
			fatal("%s: rcache_compile", __func__);
		pack_free(&pk);
	}
	if ((rc = calloc(1, sizeof(*rc))) == NULL ||
	    (rc->fetch = calloc(1, sizeof(*rc->fetch))) == NULL)
		fatal("%s: calloc", __func__);
	rc->fetch->fetchid = fs.fetchid;
	rc->worker = iev->peer - PROC_WORKER(0);
	rc->allow_private = fs.allow_private != 0;
	rc->total_s = fs.timeout_s > 0 && fs.timeout_s < 3600 ?
	    (int)fs.timeout_s : 0;
	rc->set = empty_set;
	if (rfetch_unpack(rc, (const char *)imsg->data + sizeof(fs),
	    len - sizeof(fs)) == -1)
		fatalx("bad IMSG_FETCH_START strings from %s", iev->name);
	relay_call(rc);
}

/* method, url, nheaders, headers[], body: as a call's, without a set. */
static int
rfetch_unpack(struct rcall *rc, const void *data, size_t datalen)
{
	struct unpack	 u;

	unpack_init(&u, data, datalen);
	if (relay_unpack_request(rc, &u) == -1)
		return (-1);
	return (unpack_done(&u));
}

/* The head: its status; a refusal's JSON detail is its body. */
void
rfetch_head(struct rcall *rc, int status, int refused, const char *data,
    size_t len)
{
	rc->status = status;
	rc->head_sent = 1;
	if (refused)
		rfetch_body(rc, data, len);
}

/* Kept up to FETCH_BODY_MAX; the rest is read and dropped. */
void
rfetch_body(struct rcall *rc, const void *data, size_t len)
{
	struct rfetch	*f = rc->fetch;
	size_t		 n;

	n = sizeof(f->body) - f->len;
	if (len > n)
		f->truncated = 1;
	else
		n = len;
	memcpy(f->body + f->len, data, n);
	f->len += n;
	rc->bytes += len;
}

/* How it ended, to the worker that asked. */
void
rfetch_done(struct rcall *rc)
{
	struct fetch_done	 fd;
	struct rfetch		*f = rc->fetch;
	struct iovec		 iov[2];

	memset(&fd, 0, sizeof(fd));
	fd.fetchid = f->fetchid;
	fd.status = rc->refused == CALL_OK ? rc->status : 0;
	fd.refused = rc->refused;
	fd.truncated = f->truncated;
	iov[0].iov_base = &fd;
	iov[0].iov_len = sizeof(fd);
	iov[1].iov_base = f->body;
	iov[1].iov_len = f->len;
	/* One message: FETCH_BODY_MAX keeps it under IMSG_DATA_MAX. */
	if (imsgev_composev(relay_vault(rc->worker), IMSG_FETCH_DONE, 0, -1,
	    iov, 2) == -1)
		fatal("%s: compose", __func__);
}

void
rfetch_free(struct rfetch *f)
{
	if (f != NULL)
		freezero(f, sizeof(*f));
}
