/*
 * imsgev: imsg over libevent, and the blob framing for large payloads.
 */

#include <sys/types.h>
#include <sys/uio.h>

#include <errno.h>
#include <event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imsg.h"
#include "log.h"
#include "proc.h"

static void	imsgev_handler(int, short, void *);
static void	imsgev_turn(int, short, void *);
static void	imsgev_write(struct imsgev *);

void
imsgev_init(struct imsgev *iev, int fd, int peer, const char *name,
    imsgev_fn dispatch, imsgev_closed_fn closed, void *arg)
{
	memset(iev, 0, sizeof(*iev));
	if (imsgbuf_init(&iev->ibuf, fd) == -1)
		fatal("%s: imsgbuf_init", __func__);
	iev->dispatch = dispatch;
	iev->closed = closed;
	iev->arg = arg;
	iev->peer = peer;
	iev->kind = peer;
	iev->name = name;
	iev->events = EV_READ | EV_PERSIST;
	event_set(&iev->ev, fd, iev->events, imsgev_handler, iev);
	event_add(&iev->ev, NULL);
	event_set(&iev->turn, -1, 0, imsgev_turn, iev);
}

void
imsgev_dispatch(const struct imsg_handler *h, size_t n, struct imsgev *iev,
    struct imsg *imsg)
{
	size_t	 i;
	int	 typed = 0;

	for (i = 0; i < n; i++) {
		if (h[i].type != imsg->hdr.type)
			continue;
		typed = 1;
		if (iev->kind < 0 || iev->kind >= 32 ||
		    (h[i].from & IMSG_FROM(iev->kind)) == 0)
			continue;
		if (h[i].len != IMSG_LEN_ANY && imsg->datalen != h[i].len)
			fatalx("bad imsg %u from %s: %zu bytes, not %zu",
			    imsg->hdr.type, iev->name, imsg->datalen,
			    h[i].len);
		h[i].fn(iev, imsg);
		return;
	}
	fatalx("bad imsg %u from %s: %s", imsg->hdr.type, iev->name,
	    typed ? "not this peer's to send" : "unknown type");
}

void
imsgev_clear(struct imsgev *iev)
{
	if (iev->dead == 2)
		return;
	event_del(&iev->ev);
	event_del(&iev->turn);
	close(iev->ibuf.fd);
	imsgbuf_clear(&iev->ibuf);
	iev->dead = 2;
}

/*
 * Send what is queued now rather than a loop turn later, and wait for
 * EV_WRITE only while the socket is full.  The event is persistent, so it
 * is touched (two epoll_ctl calls) only when that changes.
 */
void
imsgev_update(struct imsgev *iev)
{
	size_t	 qlen = imsgbuf_queuelen(&iev->ibuf);

	if (iev->dead || (iev->corked && qlen < IMSGEV_CORK_MAX))
		return;
	if (iev->coalesce && qlen > 0 && qlen < IMSGEV_CORK_MAX) {
		if (!event_pending(&iev->turn, EV_WRITE, NULL))
			event_active(&iev->turn, EV_WRITE, 1);
		return;
	}
	imsgev_write(iev);
}

/*
 * A channel whose writes wait for the end of the loop turn: what every
 * callback of one epoll_wait(2) composed leaves in one sendmsg, not one
 * each.  (Still at once past IMSGEV_CORK_MAX messages.)
 */
void
imsgev_coalesce(struct imsgev *iev)
{
	iev->coalesce = 1;
}

/* Run after the callbacks already active in this loop turn. */
static void
imsgev_turn(int fd, short event, void *arg)
{
	struct imsgev	*iev = arg;

	if (!iev->dead && iev->corked == 0)
		imsgev_write(iev);
}

static void
imsgev_write(struct imsgev *iev)
{
	short	 events = EV_READ | EV_PERSIST;

	if (imsgbuf_queuelen(&iev->ibuf) > 0)
		(void)imsgbuf_write(&iev->ibuf);	/* errors: see handler */
	if (imsgbuf_queuelen(&iev->ibuf) > 0)
		events |= EV_WRITE;
	if (events == iev->events)
		return;
	event_del(&iev->ev);
	iev->events = events;
	event_set(&iev->ev, iev->ibuf.fd, events, imsgev_handler, iev);
	event_add(&iev->ev, NULL);
}

/*
 * Messages composed between these two leave in one write (one sendmsg
 * for what fits), not one each: a blob's head and data, or every answer
 * one event produced.  Nested corks are counted.  A corked queue is
 * written all the same once it holds IMSGEV_CORK_MAX messages, so a
 * stream of body chunks is not held back (memory stays bounded).
 */
void
imsgev_cork(struct imsgev *iev)
{
	iev->corked++;
}

void
imsgev_uncork(struct imsgev *iev)
{
	if (iev->corked > 0 && --iev->corked == 0)
		imsgev_update(iev);
}

int
imsgev_compose(struct imsgev *iev, uint32_t type, uint32_t id, int fd,
    const void *data, size_t len)
{
	if (iev->dead) {
		if (fd != -1)
			close(fd);
		errno = EPIPE;
		return (-1);
	}
	if (imsg_compose(&iev->ibuf, type, id, fd, data, len) == -1)
		return (-1);
	imsgev_update(iev);
	return (0);
}

int
imsgev_composev(struct imsgev *iev, uint32_t type, uint32_t id, int fd,
    const struct iovec *iov, int iovcnt)
{
	if (iev->dead) {
		if (fd != -1)
			close(fd);
		errno = EPIPE;
		return (-1);
	}
	if (imsg_composev(&iev->ibuf, type, id, fd, iov, iovcnt) == -1)
		return (-1);
	imsgev_update(iev);
	return (0);
}

/*
 * The head (blob_hdr + head struct), then the payload in IMSG_BLOB_DATA
 * chunks, queued whole (corked) and written at once: the peer wakes for
 * the blob, not for its head alone.
 */
int
imsgev_send_blob(struct imsgev *iev, uint32_t type, uint32_t id,
    const void *head, size_t headlen, const void *data, size_t datalen)
{
	struct blob_hdr	 bh;
	struct iovec	 iov[2];
	const char	*p = data;
	size_t		 n;

	if (datalen > UINT32_MAX) {
		errno = EMSGSIZE;
		return (-1);
	}
	if (iev->dead) {
		errno = EPIPE;
		return (-1);
	}
	bh.datalen = datalen;
	iov[0].iov_base = &bh;
	iov[0].iov_len = sizeof(bh);
	iov[1].iov_base = (void *)head;
	iov[1].iov_len = headlen;
	imsgev_cork(iev);
	if (imsgev_composev(iev, type, id, -1, iov, 2) == -1)
		goto fail;
	while (datalen > 0) {
		n = datalen > IMSG_DATA_MAX ? IMSG_DATA_MAX : datalen;
		if (imsgev_compose(iev, IMSG_BLOB_DATA, id, -1, p, n) == -1)
			goto fail;
		p += n;
		datalen -= n;
	}
	imsgev_uncork(iev);
	return (0);
 fail:
	imsgev_uncork(iev);
	return (-1);
}

void
imsgev_drain(struct imsgev *iev)
{
	struct imsg	 imsg;
	int		 r;

	while (!iev->dead) {
		r = imsg_get(&iev->ibuf, &imsg);
		if (r == -1)
			fatalx("corrupt message stream from %s", iev->name);
		if (r == 0)
			break;
		iev->dispatch(iev, &imsg);
		imsg_free(&imsg);
	}
}

static void
imsgev_handler(int fd, short event, void *arg)
{
	struct imsgev	*iev = arg;
	struct imsg	 imsg;
	ssize_t		 n;
	int		 r;

	if (event & EV_WRITE) {
		if (imsgbuf_write(&iev->ibuf) == -1 && errno != EAGAIN) {
			if (errno != EPIPE)
				log_warn("write to %s", iev->name);
			goto dead;
		}
	}
	if (event & EV_READ) {
		n = imsgbuf_read(&iev->ibuf);
		if (n == -1 && errno != EAGAIN) {
			if (errno != ECONNRESET)
				log_warn("read from %s", iev->name);
			goto dead;
		}
		for (;;) {
			r = imsg_get(&iev->ibuf, &imsg);
			if (r == -1 && iev->untrusted) {
				/* A client is not a peer: it goes, we stay. */
				log_warnx("corrupt message stream from %s, "
				    "connection closed", iev->name);
				goto dead;
			}
			if (r == -1)
				fatalx("corrupt message stream from %s",
				    iev->name);
			if (r == 0)
				break;
			iev->dispatch(iev, &imsg);
			imsg_free(&imsg);
			/* The dispatcher gave up on it: close it here. */
			if (iev->dead == 1)
				goto dead;
			if (iev->dead)
				return;
		}
		if (n == 0)
			goto dead;
	}
	imsgev_update(iev);
	return;
 dead:
	iev->dead = 1;
	event_del(&iev->ev);
	if (iev->closed != NULL)
		iev->closed(iev);
}

/* ------------------------------------------------------------------ */

struct blob *
blob_start(struct blob_list *bl, struct imsg *imsg, int peer, size_t headlen,
    size_t max)
{
	struct blob_hdr	 bh;
	struct blob	*b;

	if (imsg->datalen != sizeof(bh) + headlen)
		return (NULL);
	memcpy(&bh, imsg->data, sizeof(bh));
	if (bh.datalen > max)
		return (NULL);
	TAILQ_FOREACH(b, bl, entry)
		if (b->id == imsg->hdr.id && b->peer == peer)
			return (NULL);		/* one blob per id */
	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    (b->head = malloc(headlen ? headlen : 1)) == NULL ||
	    (b->data = malloc(bh.datalen + 1)) == NULL)
		fatal("%s: malloc", __func__);
	b->type = imsg->hdr.type;
	b->id = imsg->hdr.id;
	b->peer = peer;
	b->headlen = headlen;
	memcpy(b->head, (char *)imsg->data + sizeof(bh), headlen);
	b->datalen = bh.datalen;
	b->data[b->datalen] = '\0';
	if (b->datalen > 0)
		TAILQ_INSERT_TAIL(bl, b, entry);
	return (b);
}

struct blob *
blob_add(struct blob_list *bl, struct imsg *imsg, int peer, int *bad)
{
	struct blob	*b;

	*bad = 0;
	TAILQ_FOREACH(b, bl, entry)
		if (b->id == imsg->hdr.id && b->peer == peer)
			break;
	if (b == NULL || imsg->datalen == 0 ||
	    imsg->datalen > b->datalen - b->have) {
		*bad = 1;
		return (NULL);
	}
	memcpy(b->data + b->have, imsg->data, imsg->datalen);
	b->have += imsg->datalen;
	if (b->have < b->datalen)
		return (NULL);
	TAILQ_REMOVE(bl, b, entry);
	return (b);
}

void
blob_free(struct blob *b)
{
	if (b == NULL)
		return;
	freezero(b->head, b->headlen ? b->headlen : 1);
	freezero(b->data, b->datalen + 1);
	free(b);
}

/* Drop the blobs of one peer (-1: all), e.g. when a connection closes. */
void
blob_list_clear(struct blob_list *bl, int peer)
{
	struct blob	*b, *t;

	TAILQ_FOREACH_SAFE(b, bl, entry, t) {
		if (peer != -1 && b->peer != peer)
			continue;
		TAILQ_REMOVE(bl, b, entry);
		blob_free(b);
	}
}
