/*
 * The frontend's HTTP/1.1 layer (http.c): connections on libevent
 * bufferevents, plain or TLS, with tregd's own request parser
 * (http_parse.h, the grammar the relay reads upstreams' answers with),
 * deadlines, caps and answers.  frontend.c sees requests and answers;
 * only this layer touches sockets.
 */

#ifndef HTTP_H
#define HTTP_H

#include "http_parse.h"

#define HTTP_LINGER_MS		2000		/* after a closing answer */

/* http.c */
struct http_conn;
struct tregd_conf;
struct event_base;

/* Called by the layer: a complete request, a client that went away. */
typedef void	(*http_request_fn)(struct http_conn *,
		    const struct http_head *, const char *, size_t);
typedef int	(*http_gone_fn)(void *, int);
/* The output drained below the connection's bound. */
typedef void	(*http_drain_fn)(struct http_conn *, void *);

void	 http_init(struct event_base *, http_request_fn, http_gone_fn);
void	 http_conf(const struct tregd_conf *);
void	 http_listen(int, int);
void	 http_serve(void);
int	 http_tls_load(char *, size_t, char *, size_t);
int	 http_tls_enabled(void);
void	 http_attach(struct http_conn *, void *, http_drain_fn);
void	 http_set_log(struct http_conn *, const char *, int64_t, int64_t);
const char *http_peer(struct http_conn *);
int	 http_is_head(struct http_conn *);
void	 http_reply(struct http_conn *, int, const char *, const char *,
	    size_t);
void	 http_error(struct http_conn *, int, const char *);
void	 http_reply_start(struct http_conn *, int, const char *, int64_t);
void	 http_write(struct http_conn *, const void *, size_t);
void	 http_reply_end(struct http_conn *);
size_t	 http_pending(struct http_conn *);
void	 http_allow(struct http_conn *, int);
/* The relay's answers (frontend_call.c). */
void	 http_add_header(struct http_conn *, const char *, size_t);
const char *http_head_raw(struct http_conn *, size_t *);
void	 http_reply_relayed(struct http_conn *, int);
void	 http_reply_end_trailer(struct http_conn *, const char *);
void	 http_abort(struct http_conn *);

#define HTTP_LISTEN_TLS		0x1	/* http_listen flags */
#define HTTP_LISTEN_METRICS	0x2	/* GET /metrics only */
int	 http_is_metrics(struct http_conn *);

/* metrics.c: the frontend's counters and their text for GET /metrics. */
struct imsg;
struct timespec;
void	 metrics_http(const char *, int, const struct timespec *);
void	 metrics_vault_report(int, struct imsg *);
void	 metrics_vault_workers(int);
void	 metrics_exec_report(struct imsg *);
struct evbuffer;
void	 metrics_text(struct evbuffer *);

#endif /* HTTP_H */
