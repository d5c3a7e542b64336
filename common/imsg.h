/*
 * imsg: framed messages over AF_UNIX socketpairs, written for tregd.
 *
 * A message is a fixed header (type, total length, request id, flags)
 * followed by at most IMSG_MAXSIZE - IMSG_HEADER_SIZE bytes of data and,
 * optionally, one descriptor passed with SCM_RIGHTS.  Reads and writes
 * never block: imsgbuf_read() pulls what the socket has, imsg_get() hands
 * out whole messages, imsgbuf_write() pushes what the socket takes.
 *
 * Every buffer that held message bytes is zeroed before it is freed or
 * reused, because messages carry unsealed secrets between vault and exec.
 */

#ifndef IMSG_H
#define IMSG_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <stddef.h>
#include <stdint.h>

#define IMSG_MAXSIZE		65536	/* header included */
#define IMSG_F_HASFD		0x1

struct imsg_hdr {
	uint32_t	 type;
	uint32_t	 len;		/* header + data */
	uint32_t	 id;		/* request id, echoed in answers */
	uint32_t	 flags;
};
#define IMSG_HEADER_SIZE	sizeof(struct imsg_hdr)
#define IMSG_DATA_MAX		(IMSG_MAXSIZE - IMSG_HEADER_SIZE)

struct imsg {
	struct imsg_hdr	 hdr;
	int		 fd;		/* -1 when none */
	void		*data;		/* NULL when datalen == 0 */
	size_t		 datalen;
};

struct imsg_wbuf;
struct imsg_fdq;
TAILQ_HEAD(imsg_wqueue, imsg_wbuf);
TAILQ_HEAD(imsg_fdqueue, imsg_fdq);

struct imsgbuf {
	int			 fd;
	unsigned char		*rbuf;		/* IMSG_MAXSIZE bytes */
	size_t			 roff;		/* consumed bytes before rlen */
	size_t			 rlen;		/* unconsumed bytes in rbuf */
	struct imsg_fdqueue	 rfds;		/* received, not handed out */
	size_t			 rfdlen;	/* descriptors in rfds */
	struct imsg_wqueue	 wq;		/* composed, not yet written */
	size_t			 wqlen;		/* messages in wq */
};

/*
 * Set up / tear down.  imsgbuf_init() puts the socket in non-blocking
 * mode.  imsgbuf_clear() zeroes and frees all buffers and closes every
 * queued descriptor, but leaves the socket itself to the caller.
 */
int	 imsgbuf_init(struct imsgbuf *, int);
void	 imsgbuf_clear(struct imsgbuf *);

/*
 * Read what the socket has.  Returns the number of bytes read, 0 on EOF,
 * -1 on error (errno set; EAGAIN means nothing to read now, and also that
 * the read buffer is full of complete messages: call imsg_get() first;
 * ENOBUFS means the buffer is full without a complete message; EBADMSG
 * means descriptors were lost or unexpected, the stream is unusable).
 */
ssize_t	 imsgbuf_read(struct imsgbuf *);

/*
 * Nonzero when bytes of an incomplete message are buffered: at EOF this
 * means the peer stopped in the middle of a message.
 */
int	 imsgbuf_pending(struct imsgbuf *);

/*
 * Take the next complete message.  Returns 1 and fills *imsg, 0 when no
 * complete message is buffered, -1 when the stream is corrupt (a length
 * below the header size or above IMSG_MAXSIZE, an unknown flag, or a
 * message claiming a descriptor that did not arrive); errno is EBADMSG
 * then.  The consumed bytes are zeroed in the read buffer.
 */
int	 imsg_get(struct imsgbuf *, struct imsg *);

/* Zero and free the message's data; close its fd if the caller left it. */
void	 imsg_free(struct imsg *);

/*
 * Queue a message.  fd is -1 or a descriptor whose ownership passes to
 * the imsgbuf (closed once sent).  Returns 0, or -1 with errno (EMSGSIZE
 * when the data is larger than IMSG_DATA_MAX); on failure the caller
 * still owns fd.
 */
int	 imsg_compose(struct imsgbuf *, uint32_t, uint32_t, int,
	    const void *, size_t);
int	 imsg_composev(struct imsgbuf *, uint32_t, uint32_t, int,
	    const struct iovec *, int);

/*
 * Write queued messages.  imsgbuf_write() writes what the socket takes
 * without blocking (0 ok, possibly with messages left; -1 error, EPIPE
 * when the peer is gone).  imsgbuf_flush() blocks until the queue is empty.
 */
int	 imsgbuf_write(struct imsgbuf *);
int	 imsgbuf_flush(struct imsgbuf *);
size_t	 imsgbuf_queuelen(struct imsgbuf *);

#endif /* IMSG_H */
