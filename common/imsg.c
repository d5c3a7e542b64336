/*
 * imsg: framed messages and descriptor passing over non-blocking AF_UNIX
 * stream sockets.  The contract is in imsg.h.
 *
 * A descriptor travels with the first byte of the message that claims it,
 * so the receiver sees descriptors in the order of the messages and hands
 * them out in that order.  Every buffer that held message bytes is zeroed
 * before it is freed or reused.
 */

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imsg.h"

/* Our peers pass one descriptor per sendmsg(); room for a few more. */
#define IMSG_RECV_MAXFDS	8
/*
 * Each queued descriptor belongs to a message whose first byte is in
 * rbuf, so more than this many means the peer sends descriptors that no
 * message claims.
 */
#define IMSG_MAXQUEUEDFDS	(IMSG_MAXSIZE / IMSG_HEADER_SIZE + 1)
/* Messages gathered into one sendmsg(). */
#define IMSG_WRITE_IOV		64

struct imsg_wbuf {
	TAILQ_ENTRY(imsg_wbuf)	 entry;
	int			 fd;	/* -1 when none or once sent */
	size_t			 len;	/* header + data */
	size_t			 off;	/* bytes already written */
	unsigned char		 buf[];
};

struct imsg_fdq {
	TAILQ_ENTRY(imsg_fdq)	 entry;
	int			 fd;
};

static int	 imsg_hdr_valid(const struct imsg_hdr *);
static int	 imsg_complete(struct imsgbuf *);
static void	 imsg_rbuf_compact(struct imsgbuf *);
static int	 imsg_recv_fds(struct imsgbuf *, struct msghdr *);
static void	 imsg_close_fds(struct msghdr *);
static int	 imsg_fd_push(struct imsgbuf *, int);
static int	 imsg_fd_pop(struct imsgbuf *);
static ssize_t	 imsg_send(struct imsgbuf *);
static void	 imsg_consume(struct imsgbuf *, size_t);
static void	 imsg_wbuf_free(struct imsg_wbuf *);

int
imsgbuf_init(struct imsgbuf *ibuf, int fd)
{
	int	 flags;

	memset(ibuf, 0, sizeof(*ibuf));
	ibuf->fd = -1;
	TAILQ_INIT(&ibuf->rfds);
	TAILQ_INIT(&ibuf->wq);

	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	if ((flags = fcntl(fd, F_GETFL)) == -1)
		return -1;
	if ((flags & O_NONBLOCK) == 0 &&
	    fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1)
		return -1;
	if ((ibuf->rbuf = calloc(1, IMSG_MAXSIZE)) == NULL)
		return -1;
	ibuf->fd = fd;
	return 0;
}

void
imsgbuf_clear(struct imsgbuf *ibuf)
{
	struct imsg_wbuf	*wb;
	int			 fd;

	freezero(ibuf->rbuf, IMSG_MAXSIZE);
	ibuf->rbuf = NULL;
	ibuf->roff = ibuf->rlen = 0;

	while ((fd = imsg_fd_pop(ibuf)) != -1)
		close(fd);

	while ((wb = TAILQ_FIRST(&ibuf->wq)) != NULL) {
		TAILQ_REMOVE(&ibuf->wq, wb, entry);
		imsg_wbuf_free(wb);
	}
	ibuf->wqlen = 0;
}

ssize_t
imsgbuf_read(struct imsgbuf *ibuf)
{
	union {
		struct cmsghdr	 hdr;
		unsigned char	 buf[CMSG_SPACE(sizeof(int) *
				    IMSG_RECV_MAXFDS)];
	}		 cmsgbuf;
	struct msghdr	 msg;
	struct iovec	 iov;
	ssize_t		 n;

	if (ibuf->rbuf == NULL) {
		errno = EINVAL;
		return -1;
	}
	imsg_rbuf_compact(ibuf);
	if (ibuf->rlen == IMSG_MAXSIZE) {
		/* A whole message always fits: the caller must take it. */
		errno = imsg_complete(ibuf) ? EAGAIN : ENOBUFS;
		return -1;
	}

	for (;;) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = ibuf->rbuf + ibuf->rlen;
		iov.iov_len = IMSG_MAXSIZE - ibuf->rlen;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cmsgbuf.buf;
		msg.msg_controllen = sizeof(cmsgbuf.buf);
		if ((n = recvmsg(ibuf->fd, &msg, MSG_CMSG_CLOEXEC)) != -1)
			break;
		if (errno != EINTR)
			return -1;
	}

	if (msg.msg_flags & MSG_CTRUNC) {
		/* Descriptors were dropped: they can't be matched any more. */
		imsg_close_fds(&msg);
		explicit_bzero(iov.iov_base, n);
		errno = EBADMSG;
		return -1;
	}
	if (imsg_recv_fds(ibuf, &msg) == -1) {
		explicit_bzero(iov.iov_base, n);
		return -1;
	}
	ibuf->rlen += n;
	return n;
}

int
imsgbuf_pending(struct imsgbuf *ibuf)
{
	return ibuf->rlen > 0;
}

int
imsg_get(struct imsgbuf *ibuf, struct imsg *imsg)
{
	struct imsg_hdr	 hdr;
	unsigned char	*p;
	void		*data = NULL;
	size_t		 datalen;
	int		 fd = -1;

	if (ibuf->rlen < IMSG_HEADER_SIZE)
		return 0;
	p = ibuf->rbuf + ibuf->roff;
	memcpy(&hdr, p, sizeof(hdr));	/* p may be unaligned */
	if (!imsg_hdr_valid(&hdr)) {
		errno = EBADMSG;
		return -1;
	}
	if (hdr.len > ibuf->rlen)
		return 0;
	/* The descriptor came with the message's first byte, or never. */
	if ((hdr.flags & IMSG_F_HASFD) && TAILQ_EMPTY(&ibuf->rfds)) {
		errno = EBADMSG;
		return -1;
	}

	datalen = hdr.len - IMSG_HEADER_SIZE;
	if (datalen > 0) {
		if ((data = malloc(datalen)) == NULL)
			return -1;
		memcpy(data, p + IMSG_HEADER_SIZE, datalen);
	}
	if (hdr.flags & IMSG_F_HASFD)
		fd = imsg_fd_pop(ibuf);

	/* Zero now; the bytes after it are moved down on the next read. */
	explicit_bzero(p, hdr.len);
	ibuf->roff += hdr.len;
	ibuf->rlen -= hdr.len;
	if (ibuf->rlen == 0)
		ibuf->roff = 0;

	imsg->hdr = hdr;
	imsg->fd = fd;
	imsg->data = data;
	imsg->datalen = datalen;
	return 1;
}

void
imsg_free(struct imsg *imsg)
{
	freezero(imsg->data, imsg->datalen);
	imsg->data = NULL;
	imsg->datalen = 0;
	if (imsg->fd >= 0)
		close(imsg->fd);
	imsg->fd = -1;
}

int
imsg_compose(struct imsgbuf *ibuf, uint32_t type, uint32_t id, int fd,
    const void *data, size_t datalen)
{
	struct iovec	 iov;

	iov.iov_base = (void *)data;
	iov.iov_len = datalen;
	return imsg_composev(ibuf, type, id, fd, &iov, 1);
}

int
imsg_composev(struct imsgbuf *ibuf, uint32_t type, uint32_t id, int fd,
    const struct iovec *iov, int iovcnt)
{
	struct imsg_wbuf	*wb;
	struct imsg_hdr		 hdr;
	unsigned char		*p;
	size_t			 datalen = 0, len;
	int			 i;

	if (fd < -1) {
		errno = EBADF;
		return -1;
	}
	if (iovcnt < 0 || (iovcnt > 0 && iov == NULL)) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > 0 && iov[i].iov_base == NULL) {
			errno = EINVAL;
			return -1;
		}
		/* Written so that the sum can't wrap. */
		if (iov[i].iov_len > IMSG_DATA_MAX - datalen) {
			errno = EMSGSIZE;
			return -1;
		}
		datalen += iov[i].iov_len;
	}

	len = IMSG_HEADER_SIZE + datalen;
	if ((wb = malloc(sizeof(*wb) + len)) == NULL)
		return -1;
	wb->fd = fd;
	wb->len = len;
	wb->off = 0;

	memset(&hdr, 0, sizeof(hdr));
	hdr.type = type;
	hdr.len = len;
	hdr.id = id;
	hdr.flags = fd == -1 ? 0 : IMSG_F_HASFD;
	memcpy(wb->buf, &hdr, sizeof(hdr));
	p = wb->buf + IMSG_HEADER_SIZE;
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len == 0)
			continue;
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}

	TAILQ_INSERT_TAIL(&ibuf->wq, wb, entry);
	ibuf->wqlen++;
	return 0;
}

int
imsgbuf_write(struct imsgbuf *ibuf)
{
	ssize_t	 n;

	while (!TAILQ_EMPTY(&ibuf->wq)) {
		if ((n = imsg_send(ibuf)) == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		if (n == 0)
			return 0;
		imsg_consume(ibuf, n);
	}
	return 0;
}

int
imsgbuf_flush(struct imsgbuf *ibuf)
{
	struct pollfd	 pfd;
	int		 rv;

	for (;;) {
		if (imsgbuf_write(ibuf) == -1)
			return -1;
		if (TAILQ_EMPTY(&ibuf->wq))
			return 0;
		pfd.fd = ibuf->fd;
		pfd.events = POLLOUT;
		pfd.revents = 0;
		if ((rv = poll(&pfd, 1, -1)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (rv == 1 && (pfd.revents & POLLNVAL)) {
			errno = EBADF;
			return -1;
		}
		/* POLLHUP and POLLERR: the next write reports the error. */
	}
}

size_t
imsgbuf_queuelen(struct imsgbuf *ibuf)
{
	return ibuf->wqlen;
}

static int
imsg_hdr_valid(const struct imsg_hdr *hdr)
{
	if (hdr->len < IMSG_HEADER_SIZE || hdr->len > IMSG_MAXSIZE)
		return 0;
	if ((hdr->flags & ~(uint32_t)IMSG_F_HASFD) != 0)
		return 0;
	return 1;
}

/* Whether a whole, valid message starts at the head of rbuf. */
static int
imsg_complete(struct imsgbuf *ibuf)
{
	struct imsg_hdr	 hdr;

	if (ibuf->rlen < IMSG_HEADER_SIZE)
		return 0;
	memcpy(&hdr, ibuf->rbuf + ibuf->roff, sizeof(hdr));
	return imsg_hdr_valid(&hdr) && hdr.len <= ibuf->rlen;
}

/*
 * Move the unconsumed bytes to the front so a read has the most room.
 * Done here rather than in imsg_get() so that taking many small messages
 * does not move the buffer once per message.
 */
static void
imsg_rbuf_compact(struct imsgbuf *ibuf)
{
	if (ibuf->roff == 0)
		return;
	memmove(ibuf->rbuf, ibuf->rbuf + ibuf->roff, ibuf->rlen);
	/* The move leaves copies of the moved bytes behind. */
	explicit_bzero(ibuf->rbuf + ibuf->rlen, ibuf->roff);
	ibuf->roff = 0;
}

/* Queue the descriptors that came with a read; all or none stay open. */
static int
imsg_recv_fds(struct imsgbuf *ibuf, struct msghdr *msg)
{
	struct cmsghdr	*cmsg;
	unsigned char	*p;
	size_t		 i, nfds;
	int		 fd, error = 0;

	for (cmsg = CMSG_FIRSTHDR(msg); cmsg != NULL;
	    cmsg = CMSG_NXTHDR(msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		if (cmsg->cmsg_len < CMSG_LEN(0))
			continue;
		nfds = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		p = CMSG_DATA(cmsg);
		for (i = 0; i < nfds; i++) {
			memcpy(&fd, p + i * sizeof(int), sizeof(int));
			if (error != 0 || imsg_fd_push(ibuf, fd) == -1) {
				if (error == 0)
					error = errno;
				close(fd);
			}
		}
	}
	if (error != 0) {
		/* The queue no longer matches the stream: drop it all. */
		while ((fd = imsg_fd_pop(ibuf)) != -1)
			close(fd);
		errno = error;
		return -1;
	}
	return 0;
}

static void
imsg_close_fds(struct msghdr *msg)
{
	struct cmsghdr	*cmsg;
	unsigned char	*p;
	size_t		 i, nfds;
	int		 fd;

	for (cmsg = CMSG_FIRSTHDR(msg); cmsg != NULL;
	    cmsg = CMSG_NXTHDR(msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS ||
		    cmsg->cmsg_len < CMSG_LEN(0))
			continue;
		nfds = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		p = CMSG_DATA(cmsg);
		for (i = 0; i < nfds; i++) {
			memcpy(&fd, p + i * sizeof(int), sizeof(int));
			close(fd);
		}
	}
}

static int
imsg_fd_push(struct imsgbuf *ibuf, int fd)
{
	struct imsg_fdq	*q;

	if (ibuf->rfdlen >= IMSG_MAXQUEUEDFDS) {
		errno = EBADMSG;
		return -1;
	}
	if ((q = malloc(sizeof(*q))) == NULL)
		return -1;
	q->fd = fd;
	TAILQ_INSERT_TAIL(&ibuf->rfds, q, entry);
	ibuf->rfdlen++;
	return 0;
}

/* Returns the oldest received descriptor, or -1 when there is none. */
static int
imsg_fd_pop(struct imsgbuf *ibuf)
{
	struct imsg_fdq	*q;
	int		 fd;

	if ((q = TAILQ_FIRST(&ibuf->rfds)) == NULL)
		return -1;
	TAILQ_REMOVE(&ibuf->rfds, q, entry);
	ibuf->rfdlen--;
	fd = q->fd;
	free(q);
	return fd;
}

/*
 * One sendmsg() of as many queued bytes as possible.  A descriptor is
 * attached only when its message is at the head, and the gathering stops
 * before the next message with one, so each descriptor travels with the
 * first byte of its own message.
 */
static ssize_t
imsg_send(struct imsgbuf *ibuf)
{
	union {
		struct cmsghdr	 hdr;
		unsigned char	 buf[CMSG_SPACE(sizeof(int))];
	}			 cmsgbuf;
	struct iovec		 iov[IMSG_WRITE_IOV];
	struct msghdr		 msg;
	struct cmsghdr		*cmsg;
	struct imsg_wbuf	*wb, *head;
	ssize_t			 n;
	int			 niov = 0;

	head = TAILQ_FIRST(&ibuf->wq);
	TAILQ_FOREACH(wb, &ibuf->wq, entry) {
		if (niov == IMSG_WRITE_IOV || (wb != head && wb->fd != -1))
			break;
		iov[niov].iov_base = wb->buf + wb->off;
		iov[niov].iov_len = wb->len - wb->off;
		niov++;
	}

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = iov;
	msg.msg_iovlen = niov;
	if (head->fd != -1) {
		memset(&cmsgbuf, 0, sizeof(cmsgbuf));
		msg.msg_control = cmsgbuf.buf;
		msg.msg_controllen = sizeof(cmsgbuf.buf);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		memcpy(CMSG_DATA(cmsg), &head->fd, sizeof(int));
	}

	/* MSG_NOSIGNAL: a dead peer is an EPIPE to report, not a signal. */
	if ((n = sendmsg(ibuf->fd, &msg, MSG_NOSIGNAL)) == -1)
		return -1;
	if (n > 0 && head->fd != -1) {
		/* The peer has its own copy now. */
		close(head->fd);
		head->fd = -1;
	}
	return n;
}

/* Drop n written bytes from the head of the queue. */
static void
imsg_consume(struct imsgbuf *ibuf, size_t n)
{
	struct imsg_wbuf	*wb;
	size_t			 left;

	while (n > 0 && (wb = TAILQ_FIRST(&ibuf->wq)) != NULL) {
		left = wb->len - wb->off;
		if (n < left) {
			wb->off += n;
			return;
		}
		n -= left;
		TAILQ_REMOVE(&ibuf->wq, wb, entry);
		ibuf->wqlen--;
		imsg_wbuf_free(wb);
	}
}

static void
imsg_wbuf_free(struct imsg_wbuf *wb)
{
	if (wb->fd != -1)
		close(wb->fd);
	freezero(wb, sizeof(*wb) + wb->len);
}
