#!/usr/bin/env python3
"""A local upstream for the relay tests: HTTP, or HTTPS with --tls.

It answers every request with what it got, as JSON: method, the raw
target (path and query as sent), the header lines in order and the body
in base64.  A few paths do something else:

  /status/N        answer with status N (and the echo)
  /redirect        302 to /landed
  /slow            chunked: "first\\n", 1.5 s of silence, "second\\n"
  /big?n=BYTES     BYTES of 'x', chunked, 64 KiB at a time
  /binary          the 256 byte values
  /echo-auth       the Authorization header back, in a header and the body

Usage: relay_upstream.py PORTFILE [CERT KEY]
"""

import base64
import hashlib
import os
import urllib.parse
import json
import socketserver
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send(self, status, data, ctype="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if status not in (204, 304):
            self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD" and status not in (204, 304):
            self.wfile.write(data)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def chunked_start(self, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def handle_any(self):
        body = self.body()
        if os.environ.get("RELAY_UPSTREAM_LOG"):
            with open(os.environ["RELAY_UPSTREAM_LOG"], "a") as f:
                f.write(self.path + "\n")
        path = self.path.split("?")[0]
        if path.startswith("/status/"):
            code = int(path.split("/")[2])
            self.send(code, self.echo(body))
        elif path == "/redirect":
            self.send(302, b"{}", extra=[("Location", "/landed")])
        elif path == "/slow":
            self.chunked_start()
            self.chunk(b"first\n")
            time.sleep(1.5)
            self.chunk(b"second\n")
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/big":
            n = int(self.path.split("n=")[1])
            self.chunked_start("application/octet-stream")
            piece = b"x" * 65536
            while n > 0:
                self.chunk(piece[:n])
                n -= len(piece)
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/conn":
            # Which connection: the same port is the same connection.
            self.send(200, json.dumps(
                {"port": self.client_address[1]}).encode())
        elif path == "/close":
            # No length, no chunks: the body ends with the connection.
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"until the end\n" * 1000)
        elif path == "/nul":
            # A NUL and a lone CR in header lines: the answer is refused.
            self.send(200, b"{}", extra=[
                ("X-Split", "a\0Content-Security-Policy: none"),
                ("X-Cr", "b\rX-Content-Type-Options: sniff"),
                ("X-Fine", "c")])
        elif path == "/hang":
            time.sleep(3)
            self.send(200, b"{}")
        elif path == "/binary":
            self.send(200, bytes(range(256)), "application/octet-stream")
        elif path == "/echo-auth":
            auth = self.headers.get("Authorization", "")
            self.send(200, json.dumps({"you_sent": auth}).encode(),
                      extra=[("X-Echo", auth)])
        else:
            self.send(200, self.echo(body))

    def echo(self, body):
        # What was injected comes back masked: its hashes say what it was.
        query = self.path.split("?", 1)[1] if "?" in self.path else ""
        return json.dumps({
            "method": self.command,
            "target": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "header_sha256": {k.lower(): sha(v)
                              for k, v in self.headers.items()},
            "query_sha256": [[p.split("=", 1)[0],
                              sha(urllib.parse.unquote(p.split("=", 1)[-1]))]
                             for p in query.split("&") if p],
            "body_b64": base64.b64encode(body).decode(),
            "sni": getattr(self.connection, "sni", None),
        }).encode()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = \
        do_OPTIONS = handle_any


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    srv = Server((os.environ.get("RELAY_UPSTREAM_HOST", "127.0.0.1"), 0),
                 Handler)
    if len(sys.argv) == 4:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[2], sys.argv[3])
        # The name the client sent (SNI) goes back in the echo.
        ctx.sni_callback = lambda sock, name, c: setattr(sock, "sni", name)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
