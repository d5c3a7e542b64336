#!/usr/bin/env python3
"""A local upstream that answers with raw bytes, for relay_upstream_test:
malformed and hostile answers an HTTP library would not send.

Each request is read (head and Content-Length body), logged as
"METHOD PATH PORT" to $RELAY_RAW_LOG if set, and answered by its path's
first segment (below).  The connection then stays open for the next
request, unless the answer says otherwise.  "{port}" in an answer is the
client's port: the same port is the same connection.

Usage: relay_raw.py PORTFILE [CERT KEY]
"""

import os
import socket
import ssl
import sys
import threading


def fixed(body, extra=b""):
    return (b"HTTP/1.1 200 OK\r\n" + extra +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


# path: (answer, then): then is "keep", "close" (no close_notify under
# TLS) or "shut" (close_notify, then close).
ANSWERS = {
    "nul": (b"HTTP/1.1 200 OK\r\nX-A: a\0X-Treg-Error: 1\r\n"
            b"Content-Length: 2\r\n\r\nok", "keep"),
    "cr": (b"HTTP/1.1 200 OK\r\nX-A: a\rX-Treg-Error: 1\r\n"
           b"Content-Length: 2\r\n\r\nok", "keep"),
    "ctl": (b"HTTP/1.1 200 OK\r\nX-A: a\x01b\r\n"
            b"Content-Length: 2\r\n\r\nok", "keep"),
    "fold": (b"HTTP/1.1 200 OK\r\nX-A: a\r\n ,gzip:1\r\n"
             b"Content-Length: 2\r\n\r\nok", "keep"),
    "spacecolon": (b"HTTP/1.1 200 OK\r\nX-A : b\r\n"
                   b"Content-Length: 2\r\n\r\nok", "keep"),
    "emptyname": (b"HTTP/1.1 200 OK\r\n:odd\r\n"
                  b"Content-Length: 2\r\n\r\nok", "keep"),
    "badname": (b"HTTP/1.1 200 OK\r\nX(A): b\r\n"
                b"Content-Length: 2\r\n\r\nok", "keep"),
    "okvalue": (b"HTTP/1.1 200 OK\r\nX-A: a\tb \xe9\r\n"
                b"Content-Length: 2\r\n\r\nok", "keep"),
    "conn": (fixed(b'{"port": {port}}'), "keep"),
    "connclose": (fixed(b'{"port": {port}}', b"Connection: close, TE\r\n"),
                  "keep"),
    "clte": (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
             "keep"),
    "plus": (b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", "keep"),
    "switch": (b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade"
               b"\r\nUpgrade: x\r\n\r\nhello", "close"),
    "drop": (b"", "close"),
    "continues": ((b"HTTP/1.1 100 Continue\r\nX-Pad: " + b"a" * 1000 +
                   b"\r\n\r\n") * 200 + fixed(b"ok"), "keep"),
    "blanks": (b"\r\n" * 70000 + fixed(b"ok"), "keep"),
    "toclose": (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" +
                b"y" * 40000 + b"\n", "shut"),
}


def request(f):
    """One request's line (None at the end), its body read."""
    line = f.readline()
    if not line:
        return None
    n = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v.strip())
    if n:
        f.read(n)
    return line.decode("latin-1").split()


def serve(conn, addr):
    f = conn.makefile("rb")
    try:
        while True:
            req = request(f)
            if req is None:
                break
            method, path = req[0], req[1]
            if os.environ.get("RELAY_RAW_LOG"):
                with open(os.environ["RELAY_RAW_LOG"], "a") as log:
                    log.write("%s %s %d\n" % (method, path, addr[1]))
            answer, then = ANSWERS.get(path.strip("/").split("/")[0],
                                       ANSWERS["conn"])
            answer = answer.replace(b"{port}", str(addr[1]).encode())
            if then == "shut":
                # The answer and its close_notify in one burst.
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
            conn.sendall(fixlen(answer))
            if then == "shut" and isinstance(conn, ssl.SSLSocket):
                try:
                    conn.unwrap()
                except (OSError, ssl.SSLError):
                    pass
            if then in ("close", "shut"):
                break
    except (OSError, ssl.SSLError, ValueError):
        pass
    try:
        f.close()
        conn.close()
    except OSError:
        pass


def fixlen(answer):
    """The Content-Length of a fixed() answer after {port} changed it."""
    head, sep, body = answer.rpartition(b"\r\n\r\n")
    marker = b"Content-Length: "
    if b'{"port": ' in body and marker in head:
        i = head.index(marker)
        head = head[:i] + marker + b"%d" % len(body)
    return head + sep + body


def main():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    ctx = None
    if len(sys.argv) == 4:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        conn, addr = srv.accept()
        if ctx is not None:
            try:
                conn = ctx.wrap_socket(conn, server_side=True)
            except (OSError, ssl.SSLError):
                conn.close()
                continue
        threading.Thread(target=serve, args=(conn, addr),
                         daemon=True).start()


if __name__ == "__main__":
    main()
