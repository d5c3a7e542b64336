/*
 * imsg: framing, descriptor passing, non-blocking writes and the checks
 * on a corrupt or truncated stream, over real AF_UNIX socketpairs.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <atf-c.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event.h>

#include "imsg.h"
#include "proc.h"

#define WAIT_MS		5000

static void	 socket_pair(int [2]);
static void	 imsg_pair(int [2], struct imsgbuf *, struct imsgbuf *);
static void	 fill(unsigned char *, size_t, uint32_t);
static int	 check(const unsigned char *, size_t, uint32_t);
static void	 compose_pattern(struct imsgbuf *, uint32_t, uint32_t, int,
		    size_t);
static void	 recv_one(struct imsgbuf *, struct imsgbuf *, struct imsg *);
static void	 wait_readable(int);
static void	 write_raw(int, const void *, size_t);
static int	 writers_gone(int);
static int	 count_fds(void);
static void	 dispatch_handled(struct imsgev *, struct imsg *);
static int	 dispatch_status(int, uint32_t, size_t);

static void
socket_pair(int sv[2])
{
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
}

static void
imsg_pair(int sv[2], struct imsgbuf *w, struct imsgbuf *r)
{
	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(w, sv[0]) == 0);
	ATF_REQUIRE(imsgbuf_init(r, sv[1]) == 0);
}

/* A pattern that differs per message and per offset. */
static void
fill(unsigned char *p, size_t len, uint32_t seed)
{
	size_t	 i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

static int
check(const unsigned char *p, size_t len, uint32_t seed)
{
	size_t	 i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(seed * 131 + i * 7 + (i >> 8)))
			return 0;
	return 1;
}

/* Queue a message of len pattern bytes seeded by its id. */
static void
compose_pattern(struct imsgbuf *w, uint32_t type, uint32_t id, int fd,
    size_t len)
{
	unsigned char	*p = NULL;

	if (len > 0) {
		ATF_REQUIRE((p = malloc(len)) != NULL);
		fill(p, len, id);
	}
	ATF_REQUIRE(imsg_compose(w, type, id, fd, p, len) == 0);
	free(p);
}

/*
 * Take the next message from r, reading as needed; w (if not NULL) is
 * written on the way so that more than a socket buffer can be exchanged
 * in one thread.
 */
static void
recv_one(struct imsgbuf *w, struct imsgbuf *r, struct imsg *imsg)
{
	ssize_t	 n;
	int	 rv;

	for (;;) {
		if (w != NULL)
			ATF_REQUIRE(imsgbuf_write(w) == 0);
		if ((rv = imsg_get(r, imsg)) == 1)
			return;
		ATF_REQUIRE_MSG(rv == 0, "imsg_get: %s", strerror(errno));
		n = imsgbuf_read(r);
		if (n == -1 && errno == EAGAIN) {
			wait_readable(r->fd);
			continue;
		}
		ATF_REQUIRE_MSG(n != -1, "imsgbuf_read: %s", strerror(errno));
		ATF_REQUIRE_MSG(n != 0, "unexpected EOF");
	}
}

static void
wait_readable(int fd)
{
	struct pollfd	 pfd;

	pfd.fd = fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	ATF_REQUIRE_MSG(poll(&pfd, 1, WAIT_MS) == 1, "nothing to read");
}

static void
write_raw(int fd, const void *buf, size_t len)
{
	ATF_REQUIRE(write(fd, buf, len) == (ssize_t)len);
}

/* Whether every write end of the pipe read by fd is closed. */
static int
writers_gone(int fd)
{
	char	 c;
	int	 flags;

	flags = fcntl(fd, F_GETFL);
	ATF_REQUIRE(flags != -1);
	ATF_REQUIRE(fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0);
	return read(fd, &c, 1) == 0;
}

static int
count_fds(void)
{
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	ATF_REQUIRE((d = opendir("/proc/self/fd")) != NULL);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

ATF_TC_WITHOUT_HEAD(round_trip_preserves_sizes_contents_type_and_id);
ATF_TC_BODY(round_trip_preserves_sizes_contents_type_and_id, tc)
{
	static const size_t	 fixed[] = { 0, 1, 2, 100, 4095, 4096,
				    IMSG_DATA_MAX - 1, IMSG_DATA_MAX };
	size_t			 sizes[40];
	struct imsgbuf		 w, r;
	struct imsg		 imsg;
	size_t			 i, n = 0;
	int			 sv[2];

	ATF_REQUIRE(IMSG_DATA_MAX == 65535 - 15);
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		sizes[n++] = fixed[i];
	while (n < sizeof(sizes) / sizeof(sizes[0]))
		sizes[n++] = arc4random_uniform(IMSG_DATA_MAX + 1);

	imsg_pair(sv, &w, &r);
	for (i = 0; i < n; i++)
		compose_pattern(&w, 1000 + i, i * 7919, -1, sizes[i]);
	ATF_REQUIRE_EQ(imsgbuf_queuelen(&w), n);

	for (i = 0; i < n; i++) {
		recv_one(&w, &r, &imsg);
		ATF_REQUIRE_EQ(imsg.hdr.type, 1000 + i);
		ATF_REQUIRE_EQ(imsg.hdr.id, i * 7919);
		ATF_REQUIRE_EQ(imsg.hdr.len, IMSG_HEADER_SIZE + sizes[i]);
		ATF_REQUIRE_EQ(imsg.hdr.flags, 0);
		ATF_REQUIRE_EQ(imsg.datalen, sizes[i]);
		ATF_REQUIRE_EQ(imsg.fd, -1);
		if (sizes[i] == 0)
			ATF_REQUIRE(imsg.data == NULL);
		else
			ATF_REQUIRE_MSG(check(imsg.data, sizes[i], i * 7919),
			    "message %zu (%zu bytes) corrupted", i, sizes[i]);
		imsg_free(&imsg);
	}
	ATF_REQUIRE_EQ(imsgbuf_queuelen(&w), 0);
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 0);
	ATF_REQUIRE(!imsgbuf_pending(&r));
	imsgbuf_clear(&w);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(many_messages_queued_arrive_in_one_read);
ATF_TC_BODY(many_messages_queued_arrive_in_one_read, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	uint32_t	 i;
	int		 sv[2];

	imsg_pair(sv, &w, &r);
	for (i = 0; i < 100; i++)
		compose_pattern(&w, i, i, -1, i * 3);
	ATF_REQUIRE(imsgbuf_flush(&w) == 0);
	ATF_REQUIRE_EQ(imsgbuf_queuelen(&w), 0);

	ATF_REQUIRE(imsgbuf_read(&r) > 0);
	for (i = 0; i < 100; i++) {
		ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 1);
		ATF_REQUIRE_EQ(imsg.hdr.type, i);
		ATF_REQUIRE_EQ(imsg.datalen, i * 3);
		ATF_REQUIRE(imsg.datalen == 0 ||
		    check(imsg.data, imsg.datalen, i));
		imsg_free(&imsg);
	}
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 0);
	/* Nothing more in the socket: a non-blocking read says so. */
	ATF_REQUIRE_EQ(imsgbuf_read(&r), -1);
	ATF_REQUIRE_EQ(errno, EAGAIN);
	imsgbuf_clear(&w);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(compose_refuses_data_larger_than_the_maximum);
ATF_TC_BODY(compose_refuses_data_larger_than_the_maximum, tc)
{
	struct imsgbuf	 w;
	struct iovec	 iov[2];
	unsigned char	*p;
	int		 sv[2];

	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(&w, sv[0]) == 0);
	ATF_REQUIRE((p = calloc(1, IMSG_DATA_MAX + 1)) != NULL);

	errno = 0;
	ATF_REQUIRE_EQ(imsg_compose(&w, 1, 1, -1, p, IMSG_DATA_MAX + 1), -1);
	ATF_REQUIRE_EQ(errno, EMSGSIZE);

	/* The limit is on the sum of the pieces. */
	iov[0].iov_base = p;
	iov[0].iov_len = IMSG_DATA_MAX;
	iov[1].iov_base = p;
	iov[1].iov_len = 1;
	errno = 0;
	ATF_REQUIRE_EQ(imsg_composev(&w, 1, 1, -1, iov, 2), -1);
	ATF_REQUIRE_EQ(errno, EMSGSIZE);
	iov[1].iov_len = SIZE_MAX;
	errno = 0;
	ATF_REQUIRE_EQ(imsg_composev(&w, 1, 1, -1, iov, 2), -1);
	ATF_REQUIRE_EQ(errno, EMSGSIZE);
	ATF_REQUIRE_EQ(imsgbuf_queuelen(&w), 0);

	ATF_REQUIRE_EQ(imsg_compose(&w, 1, 1, -1, p, IMSG_DATA_MAX), 0);
	ATF_REQUIRE_EQ(imsgbuf_queuelen(&w), 1);
	free(p);
	imsgbuf_clear(&w);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(passed_descriptor_works_and_sender_copy_is_closed);
ATF_TC_BODY(passed_descriptor_works_and_sender_copy_is_closed, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	char		 buf[16];
	int		 sv[2], p[2], flags;

	imsg_pair(sv, &w, &r);
	ATF_REQUIRE(pipe(p) == 0);
	ATF_REQUIRE(imsg_compose(&w, 7, 42, p[1], "pipe", 4) == 0);
	ATF_REQUIRE(imsgbuf_flush(&w) == 0);

	recv_one(NULL, &r, &imsg);
	ATF_REQUIRE_EQ(imsg.hdr.type, 7);
	ATF_REQUIRE_EQ(imsg.hdr.id, 42);
	ATF_REQUIRE(imsg.hdr.flags & IMSG_F_HASFD);
	ATF_REQUIRE_EQ(imsg.datalen, 4);
	ATF_REQUIRE(memcmp(imsg.data, "pipe", 4) == 0);
	ATF_REQUIRE(imsg.fd >= 0);
	ATF_REQUIRE((flags = fcntl(imsg.fd, F_GETFD)) != -1);
	ATF_REQUIRE_MSG(flags & FD_CLOEXEC, "received fd is not close-on-exec");

	ATF_REQUIRE(write(imsg.fd, "hello", 5) == 5);
	ATF_REQUIRE(read(p[0], buf, sizeof(buf)) == 5);
	ATF_REQUIRE(memcmp(buf, "hello", 5) == 0);

	/* imsg_free closes the received copy; the sender closed its own. */
	imsg_free(&imsg);
	ATF_REQUIRE_EQ(imsg.fd, -1);
	ATF_REQUIRE_MSG(writers_gone(p[0]), "a write end is still open");
	close(p[0]);
	imsgbuf_clear(&w);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(descriptors_on_consecutive_messages_keep_order);
ATF_TC_BODY(descriptors_on_consecutive_messages_keep_order, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	int		 sv[2], p[6][2];
	uint32_t	 i;
	char		 c;

	imsg_pair(sv, &w, &r);
	/* Three with a descriptor back to back, then interleaved. */
	for (i = 0; i < 6; i++) {
		ATF_REQUIRE(pipe(p[i]) == 0);
		if (i >= 3)
			compose_pattern(&w, 1, 100 + i, -1, 10 + i);
		compose_pattern(&w, 2, i, p[i][1], i);
	}
	compose_pattern(&w, 1, 200, -1, 5);
	ATF_REQUIRE(imsgbuf_flush(&w) == 0);

	for (i = 0; i < 6; i++) {
		if (i >= 3) {
			recv_one(NULL, &r, &imsg);
			ATF_REQUIRE_EQ(imsg.hdr.type, 1);
			ATF_REQUIRE_EQ(imsg.hdr.id, 100 + i);
			ATF_REQUIRE_EQ(imsg.fd, -1);
			ATF_REQUIRE(check(imsg.data, imsg.datalen, 100 + i));
			imsg_free(&imsg);
		}
		recv_one(NULL, &r, &imsg);
		ATF_REQUIRE_EQ(imsg.hdr.type, 2);
		ATF_REQUIRE_EQ(imsg.hdr.id, i);
		ATF_REQUIRE(imsg.fd >= 0);
		c = 'a' + i;
		ATF_REQUIRE(write(imsg.fd, &c, 1) == 1);
		imsg_free(&imsg);
		ATF_REQUIRE(read(p[i][0], &c, 1) == 1);
		ATF_REQUIRE_EQ_MSG(c, 'a' + (int)i,
		    "message %u got the descriptor of another", i);
		ATF_REQUIRE(writers_gone(p[i][0]));
		close(p[i][0]);
	}
	recv_one(NULL, &r, &imsg);
	ATF_REQUIRE_EQ(imsg.hdr.id, 200);
	ATF_REQUIRE_EQ(imsg.fd, -1);
	imsg_free(&imsg);
	imsgbuf_clear(&w);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(message_claiming_a_missing_descriptor_is_rejected);
ATF_TC_BODY(message_claiming_a_missing_descriptor_is_rejected, tc)
{
	struct imsgbuf	 r;
	struct imsg	 imsg;
	struct imsg_hdr	 hdr;
	int		 sv[2];

	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = 1;
	hdr.len = IMSG_HEADER_SIZE;
	hdr.flags = IMSG_F_HASFD;
	write_raw(sv[0], &hdr, sizeof(hdr));

	ATF_REQUIRE_EQ(imsgbuf_read(&r), (ssize_t)sizeof(hdr));
	errno = 0;
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), -1);
	ATF_REQUIRE_EQ(errno, EBADMSG);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(garbage_stream_is_reported_as_bad_message);
ATF_TC_BODY(garbage_stream_is_reported_as_bad_message, tc)
{
	static const uint32_t	 lens[] = { 0, 1, 3, IMSG_HEADER_SIZE - 1,
				    IMSG_MAXSIZE + 1, 1 << 20, UINT32_MAX };
	struct imsgbuf		 r;
	struct imsg		 imsg;
	struct imsg_hdr		 hdr;
	unsigned char		 junk[256];
	size_t			 i;
	int			 sv[2];

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		socket_pair(sv);
		ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
		memset(&hdr, 0, sizeof(hdr));
		hdr.type = 1;
		hdr.len = lens[i];
		write_raw(sv[0], &hdr, sizeof(hdr));
		write_raw(sv[0], junk, sizeof(junk));
		ATF_REQUIRE(imsgbuf_read(&r) > 0);
		errno = 0;
		ATF_REQUIRE_EQ_MSG(imsg_get(&r, &imsg), -1,
		    "len %u accepted", lens[i]);
		ATF_REQUIRE_EQ(errno, EBADMSG);
		imsgbuf_clear(&r);
		close(sv[0]);
		close(sv[1]);
	}

	/* Unknown flags are as suspect as a bad length. */
	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
	memset(&hdr, 0, sizeof(hdr));
	hdr.len = IMSG_HEADER_SIZE;
	hdr.flags = 0x80;
	write_raw(sv[0], &hdr, sizeof(hdr));
	ATF_REQUIRE(imsgbuf_read(&r) > 0);
	errno = 0;
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), -1);
	ATF_REQUIRE_EQ(errno, EBADMSG);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);

	/* Random bytes: a valid header by chance is about 2^-47. */
	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
	arc4random_buf(junk, sizeof(junk));
	write_raw(sv[0], junk, sizeof(junk));
	ATF_REQUIRE(imsgbuf_read(&r) > 0);
	errno = 0;
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), -1);
	ATF_REQUIRE_EQ(errno, EBADMSG);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(truncated_stream_leaves_pending_bytes_at_eof);
ATF_TC_BODY(truncated_stream_leaves_pending_bytes_at_eof, tc)
{
	struct imsgbuf	 r;
	struct imsg	 imsg;
	struct imsg_hdr	 hdr;
	unsigned char	 data[100];
	int		 sv[2];

	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = 1;
	hdr.len = IMSG_HEADER_SIZE + sizeof(data);
	fill(data, sizeof(data), 1);
	write_raw(sv[0], &hdr, sizeof(hdr));
	write_raw(sv[0], data, sizeof(data) / 2);
	close(sv[0]);

	ATF_REQUIRE_EQ(imsgbuf_read(&r),
	    (ssize_t)(sizeof(hdr) + sizeof(data) / 2));
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 0);
	ATF_REQUIRE_EQ(imsgbuf_read(&r), 0);
	ATF_REQUIRE_MSG(imsgbuf_pending(&r), "truncation not visible");
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 0);
	imsgbuf_clear(&r);
	close(sv[1]);

	/* Half a header is as truncated as half a body. */
	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
	write_raw(sv[0], &hdr, 5);
	close(sv[0]);
	ATF_REQUIRE_EQ(imsgbuf_read(&r), 5);
	ATF_REQUIRE_EQ(imsgbuf_read(&r), 0);
	ATF_REQUIRE(imsgbuf_pending(&r));
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 0);
	imsgbuf_clear(&r);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(clean_eof_leaves_nothing_pending);
ATF_TC_BODY(clean_eof_leaves_nothing_pending, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	int		 sv[2];

	imsg_pair(sv, &w, &r);
	compose_pattern(&w, 1, 1, -1, 50);
	ATF_REQUIRE(imsgbuf_flush(&w) == 0);
	imsgbuf_clear(&w);
	close(sv[0]);

	recv_one(NULL, &r, &imsg);
	imsg_free(&imsg);
	ATF_REQUIRE_EQ(imsgbuf_read(&r), 0);
	ATF_REQUIRE(!imsgbuf_pending(&r));
	imsgbuf_clear(&r);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(request_ids_are_preserved);
ATF_TC_BODY(request_ids_are_preserved, tc)
{
	static const uint32_t	 ids[] = { 0, 1, 0x7fffffff, 0x80000000,
				    0xfffffffe, 0xffffffff };
	struct imsgbuf		 w, r;
	struct imsg		 imsg;
	size_t			 i;
	int			 sv[2];

	imsg_pair(sv, &w, &r);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		ATF_REQUIRE(imsg_compose(&w, UINT32_MAX - i, ids[i], -1,
		    NULL, 0) == 0);
	ATF_REQUIRE(imsgbuf_flush(&w) == 0);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		recv_one(NULL, &r, &imsg);
		ATF_REQUIRE_EQ(imsg.hdr.id, ids[i]);
		ATF_REQUIRE_EQ(imsg.hdr.type, UINT32_MAX - i);
		ATF_REQUIRE(imsg.data == NULL);
		imsg_free(&imsg);
	}
	imsgbuf_clear(&w);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(partial_writes_resume_and_deliver_all_in_order);
ATF_TC_BODY(partial_writes_resume_and_deliver_all_in_order, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	size_t		 left;
	uint32_t	 i, n = 64;
	int		 sv[2], p[2], sz = 4096;
	char		 c;

	socket_pair(sv);
	ATF_REQUIRE(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz,
	    sizeof(sz)) == 0);
	ATF_REQUIRE(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz,
	    sizeof(sz)) == 0);
	ATF_REQUIRE(imsgbuf_init(&w, sv[0]) == 0);
	ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
	ATF_REQUIRE(pipe(p) == 0);

	/* Odd sizes so that writes stop in the middle of messages. */
	for (i = 0; i < n; i++)
		compose_pattern(&w, 3, i, i == 20 ? p[1] : -1, 3001 + i);

	ATF_REQUIRE_EQ(imsgbuf_write(&w), 0);
	left = imsgbuf_queuelen(&w);
	ATF_REQUIRE_MSG(left > 0 && left < n, "%zu of %u left", left, n);
	/* The socket is full: no progress, and no blocking. */
	ATF_REQUIRE_EQ(imsgbuf_write(&w), 0);
	ATF_REQUIRE_EQ(imsgbuf_queuelen(&w), left);

	for (i = 0; i < n; i++) {
		recv_one(&w, &r, &imsg);
		ATF_REQUIRE_EQ(imsg.hdr.id, i);
		ATF_REQUIRE_EQ(imsg.datalen, 3001 + i);
		ATF_REQUIRE_MSG(check(imsg.data, imsg.datalen, i),
		    "message %u corrupted", i);
		if (i == 20) {
			ATF_REQUIRE(imsg.fd >= 0);
			ATF_REQUIRE(write(imsg.fd, "x", 1) == 1);
			ATF_REQUIRE(read(p[0], &c, 1) == 1);
			ATF_REQUIRE_EQ(c, 'x');
		} else
			ATF_REQUIRE_EQ(imsg.fd, -1);
		imsg_free(&imsg);
	}
	ATF_REQUIRE_EQ(imsgbuf_queuelen(&w), 0);
	ATF_REQUIRE(writers_gone(p[0]));
	close(p[0]);
	imsgbuf_clear(&w);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(flush_waits_until_a_slow_peer_has_read_everything);
ATF_TC_BODY(flush_waits_until_a_slow_peer_has_read_everything, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	pid_t		 pid;
	uint32_t	 i, n = 100;
	int		 sv[2], status, rv;
	ssize_t		 nr;

	socket_pair(sv);
	if ((pid = fork()) == 0) {
		/* No ATF_REQUIRE here: the parent judges by exit status. */
		close(sv[0]);
		if (imsgbuf_init(&r, sv[1]) == -1)
			_exit(2);
		for (i = 0; i < n; ) {
			if ((rv = imsg_get(&r, &imsg)) == -1)
				_exit(3);
			if (rv == 1) {
				if (imsg.hdr.id != i ||
				    imsg.datalen != 60000 ||
				    !check(imsg.data, imsg.datalen, i))
					_exit(4);
				imsg_free(&imsg);
				i++;
				continue;
			}
			usleep(1000);
			nr = imsgbuf_read(&r);
			if (nr == 0 || (nr == -1 && errno != EAGAIN))
				_exit(5);
		}
		_exit(0);
	}
	ATF_REQUIRE(pid != -1);
	close(sv[1]);
	ATF_REQUIRE(imsgbuf_init(&w, sv[0]) == 0);
	for (i = 0; i < n; i++)
		compose_pattern(&w, 1, i, -1, 60000);
	ATF_REQUIRE_EQ(imsgbuf_flush(&w), 0);
	ATF_REQUIRE_EQ(imsgbuf_queuelen(&w), 0);
	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	ATF_REQUIRE_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "reader failed, status %#x", status);
	imsgbuf_clear(&w);
	close(sv[0]);
}

ATF_TC_WITHOUT_HEAD(write_to_a_closed_peer_fails_with_epipe_not_sigpipe);
ATF_TC_BODY(write_to_a_closed_peer_fails_with_epipe_not_sigpipe, tc)
{
	struct imsgbuf	 w;
	int		 sv[2];

	/* With the default action a SIGPIPE would kill the test. */
	ATF_REQUIRE(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(&w, sv[0]) == 0);
	close(sv[1]);

	compose_pattern(&w, 1, 1, -1, 10);
	errno = 0;
	ATF_REQUIRE_EQ(imsgbuf_write(&w), -1);
	ATF_REQUIRE_EQ(errno, EPIPE);
	errno = 0;
	ATF_REQUIRE_EQ(imsgbuf_flush(&w), -1);
	ATF_REQUIRE_EQ(errno, EPIPE);
	imsgbuf_clear(&w);
	close(sv[0]);
}

ATF_TC_WITHOUT_HEAD(consumed_bytes_are_zeroed_in_the_read_buffer);
ATF_TC_BODY(consumed_bytes_are_zeroed_in_the_read_buffer, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	unsigned char	*zero;
	size_t		 first;
	int		 sv[2];

	imsg_pair(sv, &w, &r);
	ATF_REQUIRE((zero = calloc(1, IMSG_MAXSIZE)) != NULL);
	compose_pattern(&w, 1, 1, -1, 300);
	compose_pattern(&w, 1, 2, -1, 200);
	ATF_REQUIRE(imsgbuf_flush(&w) == 0);
	ATF_REQUIRE_EQ(imsgbuf_read(&r), (ssize_t)(2 * IMSG_HEADER_SIZE +
	    500));

	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 1);
	imsg_free(&imsg);
	first = IMSG_HEADER_SIZE + 300;
	ATF_REQUIRE_MSG(memcmp(r.rbuf, zero, first) == 0,
	    "first message left in rbuf");

	/* A read moves the rest down; what it leaves behind is zeroed too. */
	compose_pattern(&w, 1, 3, -1, 10);
	ATF_REQUIRE(imsgbuf_flush(&w) == 0);
	ATF_REQUIRE(imsgbuf_read(&r) > 0);
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 1);
	ATF_REQUIRE_EQ(imsg.hdr.id, 2);
	imsg_free(&imsg);
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 1);
	ATF_REQUIRE_EQ(imsg.hdr.id, 3);
	ATF_REQUIRE(check(imsg.data, 10, 3));
	imsg_free(&imsg);
	ATF_REQUIRE_MSG(memcmp(r.rbuf, zero, IMSG_MAXSIZE) == 0,
	    "message bytes left in rbuf");
	free(zero);
	imsgbuf_clear(&w);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(full_read_buffer_asks_for_imsg_get_first);
ATF_TC_BODY(full_read_buffer_asks_for_imsg_get_first, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	struct imsg_hdr	 hdr;
	unsigned char	*junk;
	ssize_t		 n;
	int		 sv[2];

	imsg_pair(sv, &w, &r);
	compose_pattern(&w, 1, 1, -1, IMSG_DATA_MAX);
	compose_pattern(&w, 1, 2, -1, IMSG_DATA_MAX);
	while (r.rlen < IMSG_MAXSIZE) {
		ATF_REQUIRE(imsgbuf_write(&w) == 0);
		wait_readable(r.fd);
		ATF_REQUIRE(imsgbuf_read(&r) > 0);
	}
	/* Full of one whole message: take it, then read on. */
	errno = 0;
	ATF_REQUIRE_EQ(imsgbuf_read(&r), -1);
	ATF_REQUIRE_EQ(errno, EAGAIN);
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 1);
	ATF_REQUIRE_EQ(imsg.hdr.id, 1);
	imsg_free(&imsg);
	recv_one(&w, &r, &imsg);
	ATF_REQUIRE_EQ(imsg.hdr.id, 2);
	ATF_REQUIRE(check(imsg.data, imsg.datalen, 2));
	imsg_free(&imsg);
	imsgbuf_clear(&w);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);

	/* Full without a whole message: nothing more can ever fit. */
	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
	ATF_REQUIRE((junk = calloc(1, IMSG_MAXSIZE)) != NULL);
	memset(&hdr, 0, sizeof(hdr));
	hdr.len = IMSG_MAXSIZE + 1;
	memcpy(junk, &hdr, sizeof(hdr));
	write_raw(sv[0], junk, IMSG_MAXSIZE);
	write_raw(sv[0], junk, 1);
	while (r.rlen < IMSG_MAXSIZE) {
		n = imsgbuf_read(&r);
		ATF_REQUIRE(n > 0);
	}
	errno = 0;
	ATF_REQUIRE_EQ(imsgbuf_read(&r), -1);
	ATF_REQUIRE_EQ(errno, ENOBUFS);
	free(junk);
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(lost_descriptors_are_an_error_and_leak_nothing);
ATF_TC_BODY(lost_descriptors_are_an_error_and_leak_nothing, tc)
{
	union {
		struct cmsghdr	 hdr;
		unsigned char	 buf[CMSG_SPACE(sizeof(int) * 64)];
	}		 cmsgbuf;
	struct imsgbuf	 r;
	struct msghdr	 msg;
	struct cmsghdr	*cmsg;
	struct iovec	 iov;
	int		 sv[2], fds[64], before, i;
	char		 c = 0;

	socket_pair(sv);
	ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
	before = count_fds();

	for (i = 0; i < 64; i++)
		ATF_REQUIRE((fds[i] = open("/dev/null", O_RDONLY)) != -1);
	memset(&msg, 0, sizeof(msg));
	memset(&cmsgbuf, 0, sizeof(cmsgbuf));
	iov.iov_base = &c;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cmsgbuf.buf;
	msg.msg_controllen = sizeof(cmsgbuf.buf);
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
	ATF_REQUIRE(sendmsg(sv[0], &msg, 0) == 1);
	for (i = 0; i < 64; i++)
		close(fds[i]);

	errno = 0;
	ATF_REQUIRE_EQ(imsgbuf_read(&r), -1);
	ATF_REQUIRE_EQ(errno, EBADMSG);
	ATF_REQUIRE_EQ_MSG(count_fds(), before, "received descriptors leaked");
	imsgbuf_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(clear_closes_queued_and_received_descriptors);
ATF_TC_BODY(clear_closes_queued_and_received_descriptors, tc)
{
	struct imsgbuf	 w, r;
	int		 sv[2], p[2], q[2];

	imsg_pair(sv, &w, &r);
	ATF_REQUIRE(pipe(p) == 0);
	ATF_REQUIRE(pipe(q) == 0);

	/* Received but never taken with imsg_get. */
	ATF_REQUIRE(imsg_compose(&w, 1, 1, p[1], NULL, 0) == 0);
	ATF_REQUIRE(imsgbuf_flush(&w) == 0);
	ATF_REQUIRE(imsgbuf_read(&r) > 0);
	/* Composed but never written. */
	ATF_REQUIRE(imsg_compose(&w, 1, 2, q[1], "x", 1) == 0);

	imsgbuf_clear(&r);
	ATF_REQUIRE_MSG(writers_gone(p[0]), "received fd left open");
	imsgbuf_clear(&w);
	ATF_REQUIRE_MSG(writers_gone(q[0]), "queued fd left open");
	ATF_REQUIRE_EQ(imsgbuf_queuelen(&w), 0);
	close(p[0]);
	close(q[0]);
	close(sv[0]);
	close(sv[1]);
}

/* A coalescing channel: what one loop turn composed, seen from its peer. */
struct turn_case {
	struct imsgev	 iev;
	int		 peer;		/* the other end */
	int		 n;		/* messages to compose */
	int		 early;		/* bytes seen before the turn ended */
};

static void
turn_noop(struct imsgev *iev, struct imsg *imsg)
{
}

static void
turn_compose(int fd, short ev, void *arg)
{
	struct turn_case	*tc = arg;
	char			 c;
	int			 i;

	for (i = 0; i < tc->n; i++)
		ATF_REQUIRE(imsgev_compose(&tc->iev, 7, i, -1, "abc", 3) == 0);
	tc->early = recv(tc->peer, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

/* Compose tc->n messages in one callback; returns how many arrived. */
static int
turn_run(struct turn_case *tc)
{
	struct event_base	*base;
	struct event		 ev;
	struct imsgbuf		 r;
	struct imsg		 imsg;
	struct timeval		 tv = { 0, 0 };
	int			 sv[2], got = 0;

	socket_pair(sv);
	ATF_REQUIRE((base = event_init()) != NULL);
	imsgev_init(&tc->iev, sv[0], 0, "peer", turn_noop, NULL, NULL);
	imsgev_coalesce(&tc->iev);
	tc->peer = sv[1];
	evtimer_set(&ev, turn_compose, tc);
	evtimer_add(&ev, &tv);
	ATF_REQUIRE(event_loop(EVLOOP_ONCE) == 0);
	ATF_REQUIRE(imsgbuf_init(&r, sv[1]) == 0);
	while (got < tc->n) {
		recv_one(NULL, &r, &imsg);
		ATF_REQUIRE_EQ(imsg.hdr.id, (uint32_t)got);
		imsg_free(&imsg);
		got++;
	}
	imsgbuf_clear(&r);
	imsgev_clear(&tc->iev);
	close(sv[1]);
	event_base_free(base);
	return got;
}

ATF_TC_WITHOUT_HEAD(coalesced_messages_leave_at_the_end_of_the_loop_turn);
ATF_TC_BODY(coalesced_messages_leave_at_the_end_of_the_loop_turn, tc)
{
	struct turn_case	 t;

	memset(&t, 0, sizeof(t));
	t.n = 3;
	ATF_REQUIRE_EQ(turn_run(&t), 3);
	ATF_REQUIRE_MSG(!t.early, "written before the turn ended");
}

ATF_TC_WITHOUT_HEAD(a_full_coalesced_queue_is_written_at_once);
ATF_TC_BODY(a_full_coalesced_queue_is_written_at_once, tc)
{
	struct turn_case	 t;

	memset(&t, 0, sizeof(t));
	t.n = IMSGEV_CORK_MAX;
	ATF_REQUIRE_EQ(turn_run(&t), IMSGEV_CORK_MAX);
	ATF_REQUIRE_MSG(t.early, "held back past IMSGEV_CORK_MAX messages");
}

/*
 * imsgev_dispatch: the handler of a row runs only for the type, a sender
 * of the kinds the row names and the exact length; anything else ends
 * the process (a fatalx, in a child here).
 */
#define DISPATCH_HANDLED	42
enum { KIND_PARENT, KIND_VAULT, KIND_EXEC };

static void
dispatch_handled(struct imsgev *iev, struct imsg *imsg)
{
	_exit(DISPATCH_HANDLED);
}

static const struct imsg_handler dispatch_rows[] = {
	{ 10,	IMSG_FROM(KIND_PARENT),	sizeof(int),	dispatch_handled },
	{ 11,	IMSG_FROM(KIND_VAULT) | IMSG_FROM(KIND_EXEC), IMSG_LEN_ANY,
	    dispatch_handled },
};

/* The exit status of a child handing (type, datalen) from kind over. */
static int
dispatch_status(int kind, uint32_t type, size_t datalen)
{
	struct imsgev	 iev;
	struct imsg	 imsg;
	char		 data[16] = { 0 };
	pid_t		 pid;
	int		 status;

	if ((pid = fork()) == 0) {
		memset(&iev, 0, sizeof(iev));
		iev.kind = kind;
		iev.name = "peer";
		memset(&imsg, 0, sizeof(imsg));
		imsg.hdr.type = type;
		imsg.data = data;
		imsg.datalen = datalen;
		imsg.fd = -1;
		imsgev_dispatch(IMSG_HANDLERS(dispatch_rows), &iev, &imsg);
		_exit(0);
	}
	ATF_REQUIRE(pid != -1);
	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	ATF_REQUIRE(WIFEXITED(status));
	return (WEXITSTATUS(status));
}

ATF_TC_WITHOUT_HEAD(a_row_handles_its_type_from_its_senders);
ATF_TC_BODY(a_row_handles_its_type_from_its_senders, tc)
{
	ATF_CHECK_EQ(dispatch_status(KIND_PARENT, 10, sizeof(int)),
	    DISPATCH_HANDLED);
	ATF_CHECK_EQ(dispatch_status(KIND_VAULT, 11, 0), DISPATCH_HANDLED);
	ATF_CHECK_EQ(dispatch_status(KIND_EXEC, 11, 16), DISPATCH_HANDLED);
}

ATF_TC_WITHOUT_HEAD(a_type_from_another_sender_ends_the_process);
ATF_TC_BODY(a_type_from_another_sender_ends_the_process, tc)
{
	int	 st;

	st = dispatch_status(KIND_VAULT, 10, sizeof(int));
	ATF_CHECK_MSG(st != DISPATCH_HANDLED && st != 0, "status %d", st);
	st = dispatch_status(KIND_PARENT, 11, 0);
	ATF_CHECK_MSG(st != DISPATCH_HANDLED && st != 0, "status %d", st);
	/* An unknown type, and a kind past the bits of a row. */
	st = dispatch_status(KIND_PARENT, 12, 0);
	ATF_CHECK_MSG(st != DISPATCH_HANDLED && st != 0, "status %d", st);
	st = dispatch_status(40, 11, 0);
	ATF_CHECK_MSG(st != DISPATCH_HANDLED && st != 0, "status %d", st);
}

ATF_TC_WITHOUT_HEAD(a_wrong_length_ends_the_process);
ATF_TC_BODY(a_wrong_length_ends_the_process, tc)
{
	int	 st;

	st = dispatch_status(KIND_PARENT, 10, sizeof(int) + 1);
	ATF_CHECK_MSG(st != DISPATCH_HANDLED && st != 0, "status %d", st);
	st = dispatch_status(KIND_PARENT, 10, 0);
	ATF_CHECK_MSG(st != DISPATCH_HANDLED && st != 0, "status %d", st);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, a_row_handles_its_type_from_its_senders);
	ATF_TP_ADD_TC(tp, a_type_from_another_sender_ends_the_process);
	ATF_TP_ADD_TC(tp, a_wrong_length_ends_the_process);
	ATF_TP_ADD_TC(tp, round_trip_preserves_sizes_contents_type_and_id);
	ATF_TP_ADD_TC(tp, many_messages_queued_arrive_in_one_read);
	ATF_TP_ADD_TC(tp, compose_refuses_data_larger_than_the_maximum);
	ATF_TP_ADD_TC(tp, passed_descriptor_works_and_sender_copy_is_closed);
	ATF_TP_ADD_TC(tp, descriptors_on_consecutive_messages_keep_order);
	ATF_TP_ADD_TC(tp, message_claiming_a_missing_descriptor_is_rejected);
	ATF_TP_ADD_TC(tp, garbage_stream_is_reported_as_bad_message);
	ATF_TP_ADD_TC(tp, truncated_stream_leaves_pending_bytes_at_eof);
	ATF_TP_ADD_TC(tp, clean_eof_leaves_nothing_pending);
	ATF_TP_ADD_TC(tp, request_ids_are_preserved);
	ATF_TP_ADD_TC(tp, partial_writes_resume_and_deliver_all_in_order);
	ATF_TP_ADD_TC(tp, flush_waits_until_a_slow_peer_has_read_everything);
	ATF_TP_ADD_TC(tp, write_to_a_closed_peer_fails_with_epipe_not_sigpipe);
	ATF_TP_ADD_TC(tp, consumed_bytes_are_zeroed_in_the_read_buffer);
	ATF_TP_ADD_TC(tp, full_read_buffer_asks_for_imsg_get_first);
	ATF_TP_ADD_TC(tp, lost_descriptors_are_an_error_and_leak_nothing);
	ATF_TP_ADD_TC(tp, clear_closes_queued_and_received_descriptors);
	ATF_TP_ADD_TC(tp, coalesced_messages_leave_at_the_end_of_the_loop_turn);
	ATF_TP_ADD_TC(tp, a_full_coalesced_queue_is_written_at_once);
	return atf_no_error();
}
