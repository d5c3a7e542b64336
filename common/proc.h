/*
 * Glue between imsg and libevent, shared by every tregd process and
 * tregctl: an imsgev is an imsgbuf with a persistent event that reads,
 * writes what is queued, and hands each message to a handler.
 *
 * Blobs: payloads larger than one imsg travel as a head message (a
 * struct blob_hdr with the payload length, then a fixed head struct)
 * followed by IMSG_DATA chunks with the same request id.  The receiver
 * gathers them in a blob_list, bounded by a maximum size.
 */

#ifndef PROC_H
#define PROC_H

#include <sys/queue.h>

#include <event.h>
#include <stdint.h>

#include "imsg.h"

/*
 * The type of a blob's payload chunks: every program on these channels
 * numbers its own types after it (tregd.h's enum imsg_type starts so).
 */
#define IMSG_BLOB_DATA	1

/* Blob heads start with this: how many payload bytes follow. */
struct blob_hdr {
	uint32_t	 datalen;
};

struct imsgev;
typedef void (*imsgev_fn)(struct imsgev *, struct imsg *);
typedef void (*imsgev_closed_fn)(struct imsgev *);

struct imsgev {
	struct imsgbuf		 ibuf;
	struct event		 ev;
	short			 events;
	imsgev_fn		 dispatch;
	imsgev_closed_fn	 closed;	/* peer went away */
	void			*arg;
	int			 peer;		/* enum tregd_proc of the peer */
	int			 kind;		/* what a handler row names */
	const char		*name;		/* peer name, for messages */
	int			 dead;
	int			 untrusted;	/* a client: corrupt closes */
	int			 corked;	/* writes wait for the uncork */
	int			 coalesce;	/* writes wait for the turn's end */
	struct event		 turn;
};

void	 imsgev_init(struct imsgev *, int, int, const char *, imsgev_fn,
	    imsgev_closed_fn, void *);
void	 imsgev_clear(struct imsgev *);
int	 imsgev_compose(struct imsgev *, uint32_t, uint32_t, int,
	    const void *, size_t);
int	 imsgev_composev(struct imsgev *, uint32_t, uint32_t, int,
	    const struct iovec *, int);
int	 imsgev_send_blob(struct imsgev *, uint32_t, uint32_t,
	    const void *, size_t, const void *, size_t);
void	 imsgev_update(struct imsgev *);
#define IMSGEV_CORK_MAX	16	/* messages held back at the most */
void	 imsgev_cork(struct imsgev *);
void	 imsgev_uncork(struct imsgev *);
void	 imsgev_coalesce(struct imsgev *);

/*
 * A process's messages as a table, after gotd's verify_imsg_src(): a row
 * says which type, from which kind of peer, of what length, and who
 * handles it, so one place answers "may this process send this type
 * here".  imsgev_dispatch() finds the row or ends the process: a peer
 * that sends what it may not is not reasoned with.  A peer's kind is its
 * peer number unless set apart (the vault workers are one kind, each its
 * own peer for the blobs it sends).
 */
#define IMSG_FROM(kind)	(1U << (kind))
#define IMSG_LEN_ANY	SIZE_MAX	/* a blob, or the handler checks */
struct imsg_handler {
	uint32_t	 type;
	uint32_t	 from;		/* IMSG_FROM() bits */
	size_t		 len;		/* exact, or IMSG_LEN_ANY */
	imsgev_fn	 fn;
};
#define IMSG_HANDLERS(t)	(t), (sizeof(t) / sizeof((t)[0]))
void	 imsgev_dispatch(const struct imsg_handler *, size_t,
	    struct imsgev *, struct imsg *);

/* A payload being gathered. */
struct blob {
	TAILQ_ENTRY(blob)	 entry;
	uint32_t		 type;
	uint32_t		 id;
	int			 peer;
	void			*head;		/* the fixed head struct */
	size_t			 headlen;
	char			*data;		/* NUL-terminated for convenience */
	size_t			 datalen;
	size_t			 have;
};
TAILQ_HEAD(blob_list, blob);

/*
 * blob_start: the head message of a blob.  Checks the head is exactly
 * headlen bytes after the blob_hdr and the payload at most max bytes;
 * returns the blob (complete when datalen is 0) or NULL on a bad message.
 * blob_add: an IMSG_DATA chunk; returns the blob once complete (removed
 * from the list), NULL while incomplete; *bad is set on a bad message.
 */
struct blob	*blob_start(struct blob_list *, struct imsg *, int, size_t,
		    size_t);
struct blob	*blob_add(struct blob_list *, struct imsg *, int, int *);
void		 blob_free(struct blob *);
void		 blob_list_clear(struct blob_list *, int);

/* Hand messages already buffered in the imsgbuf to the dispatcher. */
void	 imsgev_drain(struct imsgev *);

#endif /* PROC_H */
