/*
 * tregctl: the operator's tool.  One command per run: parse it, send one
 * IMSG_CTL_REQUEST over the control socket, read the one answer (an
 * IMSG_CTL_REPLY head and the JSON document in IMSG_DATA chunks), print
 * it and exit with the daemon's verdict.
 *
 * The daemon decides who may ask (root, or the socket group); tregctl
 * only checks the words so a typo never reaches it.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tregd.h"
#include "util.h"
#include "parser.h"
#include "tregctl.h"

/* A sanity cap on the answer: a full audit listing is far smaller. */
#define CTL_REPLY_MAX	(64 * 1024 * 1024)
#define CTL_REQUEST_ID	1
/* Every command is quick; silence this long means a stuck daemon. */
#define CTL_TIMEOUT	120

struct reply {
	int32_t		 status;
	uint32_t	 datalen;
	int		 have_head;
	unsigned char	*data;
	size_t		 len;
};

static const struct output	*out = &text_output;

__dead static void usage(void);
__dead static void die(int, const char *, ...)
		    __attribute__((__format__ (printf, 2, 3)));
__dead static void hung_up(void);
static int	 ctl_connect(const char *);
static void	 ctl_send(struct imsgbuf *, const struct parse_result *);
static void	 ctl_receive(struct imsgbuf *, struct reply *);
static int	 reply_take(struct reply *, struct imsg *);
static json_t	*reply_json(struct reply *);

__dead static void
usage(void)
{
	fprintf(stderr, "usage: tregctl [-j] [-s socket] command "
	    "[argument ...]\n");
	exit(1);
}

/* A failure, said the way -j or text asks for (errno's text with 1). */
__dead static void
die(int with_errno, const char *fmt, ...)
{
	char	 msg[512];
	va_list	 ap;
	int	 saved = errno, n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (with_errno && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(saved));
	out->error(msg, NULL);
	exit(1);
}

/*
 * The daemon hangs up on a peer it does not trust; depending on timing
 * that is EOF, a reset or a broken pipe.  Say it one way.
 */
__dead static void
hung_up(void)
{
	die(0, "tregd closed the connection without an answer "
	    "(permission denied?)");
}

int
main(int argc, char *argv[])
{
	struct parse_result	 res;
	struct imsgbuf		 ibuf;
	struct reply		 reply;
	const char		*sockpath = TREGD_SOCKET;
	json_t			*doc;
	int			 ch, fd;

	while ((ch = getopt(argc, argv, "js:")) != -1) {
		switch (ch) {
		case 'j':
			out = &json_output;
			break;
		case 's':
			sockpath = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0)
		usage();

	if (parse(argc, argv, &res) == -1) {
		out->error(res.error, res.valid[0] != '\0' ? res.valid : NULL);
		exit(1);
	}

	/* The answer to user add carries a token: zero what jansson frees. */
	json_zero_alloc();

	if (res.action == CTL_BACKUP)
		backup_prepare(res.dir);
	fd = ctl_connect(sockpath);
	if (imsgbuf_init(&ibuf, fd) == -1)
		die(1, "imsgbuf_init");
	ctl_send(&ibuf, &res);
	memset(&reply, 0, sizeof(reply));
	ctl_receive(&ibuf, &reply);
	imsgbuf_clear(&ibuf);
	close(fd);

	doc = reply_json(&reply);
	if (reply.status != 0) {
		out->failed(doc);
		json_decref(doc);
		exit(1);
	}
	if (res.action == CTL_BACKUP)
		doc = backup_finish(res.dir, doc);
	out->result(res.action, doc);
	json_decref(doc);
	if (fflush(stdout) == EOF || ferror(stdout))
		err(1, "stdout");
	return (0);
}

static int
ctl_connect(const char *path)
{
	struct sockaddr_un	 sun;
	int			 fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		die(0, "socket path too long: %s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		die(1, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		die(1, "connect %s", path);
	return (fd);
}

static void
ctl_send(struct imsgbuf *ibuf, const struct parse_result *res)
{
	struct ctl_request	 req;

	memset(&req, 0, sizeof(req));
	req.cmd = res->action;
	req.limit = res->limit;
	req.force = res->force;
	/* The parser bounded every field to the request's sizes. */
	strlcpy(req.email, res->email, sizeof(req.email));
	strlcpy(req.org, res->org, sizeof(req.org));
	strlcpy(req.role, res->role, sizeof(req.role));
	strlcpy(req.key, res->key, sizeof(req.key));
	if (imsg_compose(ibuf, IMSG_CTL_REQUEST, CTL_REQUEST_ID, -1, &req,
	    sizeof(req)) == -1)
		die(1, "imsg_compose");
	if (imsgbuf_flush(ibuf) == -1) {
		if (errno == EPIPE || errno == ECONNRESET)
			hung_up();
		die(1, "send to tregd");
	}
}

/* Wait for the head and every byte it announced. */
static void
ctl_receive(struct imsgbuf *ibuf, struct reply *reply)
{
	struct pollfd	 pfd;
	struct imsg	 imsg;
	ssize_t		 n;
	int		 r;

	pfd.fd = ibuf->fd;
	pfd.events = POLLIN;
	for (;;) {
		while ((r = imsg_get(ibuf, &imsg)) == 1) {
			r = reply_take(reply, &imsg);
			imsg_free(&imsg);
			if (r == 1)
				return;
		}
		if (r == -1)
			die(1, "reading from tregd");
		if ((r = poll(&pfd, 1, CTL_TIMEOUT * 1000)) == -1) {
			if (errno == EINTR)
				continue;
			die(1, "poll");
		}
		if (r == 0)
			die(0, "no answer from tregd in %d seconds",
			    CTL_TIMEOUT);
		if ((n = imsgbuf_read(ibuf)) == -1) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			if (errno == ECONNRESET)
				hung_up();
			die(1, "reading from tregd");
		}
		if (n == 0)
			hung_up();
	}
}

/* 1: the answer is complete; 0: more to come.  Anything odd is fatal. */
static int
reply_take(struct reply *reply, struct imsg *imsg)
{
	struct blob_hdr		 bh;
	struct ctl_reply	 cr;

	if (imsg->hdr.id != CTL_REQUEST_ID)
		die(0, "bad answer from tregd: id %u", imsg->hdr.id);
	switch (imsg->hdr.type) {
	case IMSG_CTL_REPLY:
		if (reply->have_head ||
		    imsg->datalen != sizeof(bh) + sizeof(cr))
			die(0, "bad answer from tregd: head");
		memcpy(&bh, imsg->data, sizeof(bh));
		memcpy(&cr, (unsigned char *)imsg->data + sizeof(bh),
		    sizeof(cr));
		if (bh.datalen > CTL_REPLY_MAX)
			die(0, "bad answer from tregd: %u bytes",
			    bh.datalen);
		reply->have_head = 1;
		reply->status = cr.status;
		reply->datalen = bh.datalen;
		if ((reply->data = malloc(bh.datalen + 1)) == NULL)
			die(1, "malloc");
		break;
	case IMSG_DATA:
		if (!reply->have_head ||
		    imsg->datalen > reply->datalen - reply->len)
			die(0, "bad answer from tregd: data");
		if (imsg->datalen > 0)
			memcpy(reply->data + reply->len, imsg->data,
			    imsg->datalen);
		reply->len += imsg->datalen;
		break;
	default:
		die(0, "bad answer from tregd: type %u", imsg->hdr.type);
	}
	return (reply->len == reply->datalen);
}

/* Parse the document and zero the raw bytes: they may hold a token. */
static json_t *
reply_json(struct reply *reply)
{
	json_error_t	 jerr;
	json_t		*doc;

	doc = json_loadb((char *)reply->data, reply->len, 0, &jerr);
	freezero(reply->data, reply->datalen + 1);
	reply->data = NULL;
	if (doc == NULL)
		die(0, "bad answer from tregd: %s", jerr.text);
	return (doc);
}
