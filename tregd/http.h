/*
 * The frontend's HTTP/1.1 layer (http.c, http_parse.c): connections on
 * libevent bufferevents, plain or TLS, with tregd's own request parser,
 * deadlines, caps and answers.  frontend.c sees requests and answers;
 * only this layer touches sockets.
 */

#ifndef HTTP_H
#define HTTP_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_LINE_MAX		(8 * 1024)	/* request line: else 414 */
#define HTTP_NHEADERS_MAX	100		/* else 431 */
#define HTTP_REQID_MAX		64
#define HTTP_LINGER_MS		2000		/* after a closing answer */

/* Methods, as the bits of libevent's enum evhttp_cmd_type. */
#define HTTP_M_GET		(1 << 0)
#define HTTP_M_POST		(1 << 1)
#define HTTP_M_HEAD		(1 << 2)
#define HTTP_M_PUT		(1 << 3)
#define HTTP_M_DELETE		(1 << 4)
#define HTTP_M_OPTIONS		(1 << 5)
#define HTTP_M_TRACE		(1 << 6)
#define HTTP_M_CONNECT		(1 << 7)
#define HTTP_M_PATCH		(1 << 8)

struct http_str {
	const char	*p;
	size_t		 len;
};

/* A parsed request head; the strings point into the head's buffer. */
struct http_head {
	int		 method;	/* HTTP_M_*, 0 when unknown */
	struct http_str	 path;		/* raw, still percent-encoded */
	struct http_str	 query;		/* raw, without the '?' */
	int		 minor;		/* HTTP/1.minor */
	int		 keepalive;
	int		 has_clen;
	uint64_t	 clen;
	int		 expect_continue;
	struct http_str	 token;		/* X-Treg-Token */
	struct http_str	 proof;		/* X-Treg-Run-Proof */
	struct http_str	 reqid;		/* X-Request-Id */
	const char	*detail;	/* why the head was refused */
};

/* A route of the API: method, path pattern ('#' an id, '*' a name). */
struct route_pat {
	int		 method;	/* HTTP_M_*, as EVHTTP_REQ_* */
	const char	*pattern;
	int		 route;		/* enum api_route */
};

#define HTTP_PATH_SEGS_MAX	8
#define JSON_DEPTH_MAX		32

struct http_match {
	int		 route;
	int64_t		 ids[2];
	int		 nids;
	struct http_str	 name;		/* the '*' segment, still encoded */
	const char	*pattern;	/* of the shape that matched */
	int		 allow;		/* the methods of that shape */
};

/* http_parse.c: pure functions on the bytes a client sent. */
size_t	 http_head_end(const char *, size_t, size_t *);
int	 http_parse_head(const char *, size_t, struct http_head *);
int	 http_reqid_ok(const char *, size_t);
int	 http_tchar(unsigned char);
int	 http_list_has(const char *, size_t, const char *);
const char *http_reason(int);
size_t	 http_methods_print(int, char *, size_t);
size_t	 json_escape(const unsigned char *, size_t, size_t *, char *,
	    size_t);
int	 http_route_match(const struct route_pat *, size_t, const char *, int,
	    struct http_match *);
int	 json_depth_ok(const char *, size_t);

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

/* metrics.c: the frontend's counters and GET /metrics. */
struct imsg;
struct timespec;
void	 metrics_http(const char *, int, const struct timespec *);
void	 metrics_vault_report(int, struct imsg *);
void	 metrics_vault_workers(int);
void	 metrics_exec_report(struct imsg *);
void	 metrics_serve(struct http_conn *, const struct http_head *);

#endif /* HTTP_H */
