/*
 * The HTTP/1.1 grammar (http_parse.c): pure functions on bytes, no I/O
 * and no process state.  The frontend reads clients' request heads with
 * it and the relay reads upstreams' header lines with it, so the two
 * cannot take different views of one message.
 */

#ifndef HTTP_PARSE_H
#define HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_LINE_MAX		(8 * 1024)	/* request line: else 414 */
#define HTTP_NHEADERS_MAX	100		/* else 431 */
#define HTTP_REQID_MAX		64

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

/* A header line as sent: name, and value without surrounding blanks. */
struct http_hdr {
	struct http_str	 name;
	struct http_str	 value;
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
	struct http_str	 org;		/* X-Treg-Org */
	struct http_str	 reqid;		/* X-Request-Id */
	struct http_str	 client;	/* X-Treg-Client (the first) */
	const char	*detail;	/* why the head was refused */
	/* A proxy's request (http_parse_proxy_head) only: */
	struct http_str	 authority;	/* CONNECT's or absolute-form's */
	int		 absolute;	/* "http://authority/path" */
	int		 chunked;	/* Transfer-Encoding: chunked */
	struct http_hdr	*hdrs;		/* every header line, in order */
	size_t		 nhdrs, maxhdrs;
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
int	 http_parse_proxy_head(const char *, size_t, struct http_head *,
	    struct http_hdr *, size_t);
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

int	 http_org_copy(const struct http_head *, char *, size_t);
void	 http_client_copy(const struct http_head *, char *, size_t);

#endif /* HTTP_PARSE_H */
