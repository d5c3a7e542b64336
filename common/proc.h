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
void	 imsgev_flush(struct imsgev *);
void	 imsgev_coalesce(struct imsgev *);

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
