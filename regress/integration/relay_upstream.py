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
  /encoded?ce=&te=&frame=&pad=&cut=&bad=
                   the Authorization header back in the body, encoded
                   anyway: ce (Content-Encoding) and te (Transfer-Encoding,
                   with frame=chunked) are comma lists of codings applied
                   in order: gzip, x-gzip, deflate (zlib), rawdeflate
                   (raw, sent as deflate), gzip2 (two gzip members, sent
                   as gzip), identity, br (sent as br, not encoded);
                   frame: length (the default), chunked or close; pad: N
                   bytes before the echo; cut: the encoded body without
                   its last N bytes; bad: a byte of the middle changed;
                   status: the answer's (200)
  /bomb?n=BYTES    gzip of BYTES zeros (about 1 KiB a MiB), chunked

Usage: relay_upstream.py PORTFILE [CERT KEY]
"""

import base64
import gzip
import hashlib
import os
import urllib.parse
import json
import socketserver
import ssl
import sys
import time
import zlib
from http.server import BaseHTTPRequestHandler, HTTPServer


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def encode(data, coding):
    """data in one coding of /encoded: (the bytes, its name in the head)."""
    if coding in ("gzip", "x-gzip"):
        return gzip.compress(data), coding
    if coding == "gzip2":
        half = len(data) // 2
        return gzip.compress(data[:half]) + gzip.compress(data[half:]), "gzip"
    if coding == "deflate":
        return zlib.compress(data), "deflate"
    if coding == "rawdeflate":
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush(), "deflate"
    return data, coding         # identity, and codings tregd must refuse


MIB_OF_ZEROS = bytes(1 << 20)


def bomb(n):
    """gzip of n zeros (n a multiple of 1 MiB), piece by piece: one raw
    deflate block of a MiB of zeros, repeated (a full flush starts each
    anew), between gzip's header and trailer."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(MIB_OF_ZEROS) + c.flush(zlib.Z_FULL_FLUSH)
    yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    crc = 0
    for _ in range(n >> 20):
        crc = zlib.crc32(MIB_OF_ZEROS, crc)
        yield block
    yield zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    yield crc.to_bytes(4, "little") + (n & 0xffffffff).to_bytes(4, "little")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            # The egress proxy streams a run's chunked body as it came.
            data = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n",
                                                        b""):
                        pass
                    return data
                data += self.rfile.read(n)
                self.rfile.readline()
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
        elif path == "/encoded":
            self.encoded(urllib.parse.parse_qs(self.path.split("?", 1)[1]
                                               if "?" in self.path else ""))
        elif path == "/bomb":
            n = int(self.path.split("n=")[1])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in bomb(n):
                self.chunk(piece)
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/binary":
            self.send(200, bytes(range(256)), "application/octet-stream")
        elif path == "/echo-auth":
            auth = self.headers.get("Authorization", "")
            self.send(200, json.dumps({"you_sent": auth}).encode(),
                      extra=[("X-Echo", auth)])
        else:
            self.send(200, self.echo(body))

    def encoded(self, q):
        arg = lambda k, d="": q.get(k, [d])[0]
        data = (b"x" * int(arg("pad", "0")) + json.dumps(
            {"you_sent": self.headers.get("Authorization", "")}).encode())
        ce, te = [], []
        for name, names in (("ce", ce), ("te", te)):
            for coding in filter(None, arg(name).split(",")):
                data, label = encode(data, coding)
                names.append(label)
        if arg("cut"):
            data = data[:-int(arg("cut"))]
        if arg("bad"):
            mid = len(data) // 2
            data = data[:mid] + bytes([data[mid] ^ 0x55]) + data[mid + 1:]
        frame = arg("frame", "length")
        self.send_response(int(arg("status", "200")))
        self.send_header("Content-Type", "application/json")
        if ce:
            self.send_header("Content-Encoding", ", ".join(ce))
        if frame == "chunked":
            self.send_header("Transfer-Encoding",
                             ", ".join(te + ["chunked"]))
        elif te:
            self.send_header("Transfer-Encoding", ", ".join(te))
        if frame == "length":
            self.send_header("Content-Length", str(len(data)))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        if frame == "chunked":
            for i in range(0, len(data), 1000):
                self.chunk(data[i:i + 1000])
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(data)
        if frame == "close":
            self.close_connection = True

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
