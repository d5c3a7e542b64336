#!/usr/bin/env python3
"""A local upstream for health_test: a probe, an OAuth token endpoint and
an owner's webhook receiver, in one HTTP server on a free loopback port.

  GET  /probe        200 when Authorization is "Bearer <GOOD>", else 401
  GET  /flaky        503 whatever it gets
  POST /token        an OAuth token endpoint (grant_type=refresh_token):
                     200 {"access_token": <NEW>, "expires_in": 3600} when
                     refresh_token is <RT>, else 400 invalid_grant
  POST /hook         a webhook receiver: 200
  GET  /echo         200 with the Authorization header it got
Every request is appended to LOG as one JSON line: method, path,
headers, body.

Usage: health_upstream.py PORTFILE LOG GOOD RT NEW
"""

import http.server
import json
import sys
import urllib.parse

PORTFILE, LOG, GOOD, RT, NEW = sys.argv[1:6]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self, body):
        with open(LOG, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "headers": dict(self.headers.items()),
                                "body": body}) + "\n")

    def handle_one(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
        self.record(body)
        path = urllib.parse.urlsplit(self.path).path
        auth = self.headers.get("Authorization", "")
        if path == "/probe":
            if auth == "Bearer " + GOOD:
                self.answer(200, {"ok": True})
            else:
                self.answer(401, {"error": "bad key"})
        elif path == "/flaky":
            self.answer(503, {"error": "down"})
        elif path == "/token":
            form = urllib.parse.parse_qs(body)
            if form.get("grant_type") == ["refresh_token"] and \
                    form.get("refresh_token") == [RT]:
                self.answer(200, {"access_token": NEW, "expires_in": 3600,
                                  "token_type": "Bearer"})
            else:
                self.answer(400, {"error": "invalid_grant"})
        elif path == "/hook":
            self.answer(200, {"ok": True})
        else:
            self.answer(200, {"authorization": auth})

    do_GET = do_POST = do_PUT = do_DELETE = handle_one


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
