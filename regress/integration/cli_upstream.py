#!/usr/bin/env python3
"""A fake GitHub Enterprise and AWS STS upstream for real vendor CLIs.

HTTPS with the certificate given (made by the test under a throwaway CA).
Every request is appended to LOGFILE as one JSON line: method, target,
headers (as a list of [name, value]) and the body as text.  Answers:

  GET  /api/v3/user          a GitHub user whose "bio" is the request's
                             Authorization header (an upstream echoing the
                             key back: the run must mask it)
  PATCH /api/v3/user         the same, "bio" being the body sent
  POST / Action=GetCallerIdentity
                             STS XML whose Arn names the Authorization
                             header's credential (the access key id);
                             with UPSTREAM_AWS_SECRET in the environment
                             the SigV4 signature is verified with it
                             first (403 SignatureDoesNotMatch if not)
  /echo                      200 JSON: the Authorization header, the
                             target and the body as received
  /gzip-echo                 the same, gzip-encoded whatever the request
                             accepted (an upstream that ignores identity)
  /slow?s=N                  the echo after N seconds (a slow upstream)
  anything else              404 {"message": "Not Found"}

Usage: cli_upstream.py PORTFILE LOGFILE CERT KEY [ADDR PORT]
       (CERT "-": plain HTTP; ADDR PORT: where to listen, 127.0.0.1 and a
       free port by default)
"""

import gzip
import hashlib
import hmac
import json
import os
import re
import ssl
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, body):
        with open(self.server.logfile, "a") as f:
            f.write(json.dumps({
                "method": self.command, "target": self.path,
                "headers": [[k, v] for k, v in self.headers.items()],
                "body": body.decode("utf-8", "replace")}) + "\n")

    def send(self, status, data, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sigv4_ok(self, body, auth):
        """The request's SigV4 signature, made again with the real secret."""
        secret = os.environ.get("UPSTREAM_AWS_SECRET")
        if not secret:
            return True
        m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/([^/]+)/([^/]+)/"
                     r"([^/]+)/aws4_request, ?SignedHeaders=([^,]+), ?"
                     r"Signature=([0-9a-f]+)$", auth)
        if not m:
            return False
        _, day, region, service, signed, sig = m.groups()
        split = urllib.parse.urlsplit(self.path)
        query = sorted(urllib.parse.parse_qsl(split.query,
                                              keep_blank_values=True))
        cq = "&".join("%s=%s" % (urllib.parse.quote(k, safe="-_.~"),
                                 urllib.parse.quote(v, safe="-_.~"))
                      for k, v in query)
        heads = "".join("%s:%s\n" % (h, " ".join(
            (self.headers.get(h) or "").split())) for h in signed.split(";"))
        payload = self.headers.get("x-amz-content-sha256") or \
            hashlib.sha256(body).hexdigest()
        creq = "\n".join([self.command, split.path or "/", cq, heads, signed,
                          payload])
        scope = "%s/%s/%s/aws4_request" % (day, region, service)
        sts = "\n".join(["AWS4-HMAC-SHA256", self.headers.get("x-amz-date"),
                         scope, hashlib.sha256(creq.encode()).hexdigest()])
        k = ("AWS4" + secret).encode()
        for part in (day, region, service, "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        mine = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
        return hmac.compare_digest(mine, sig)

    def echo(self, body, auth, gz):
        data = json.dumps({"authorization": auth, "target": self.path,
                           "body": body.decode("utf-8", "replace")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if gz:
            data = gzip.compress(data)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def user(self, bio):
        self.send(200, json.dumps({"login": "octocat", "id": 1,
                                   "bio": bio}).encode())

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        self.record(body)
        path = urllib.parse.urlsplit(self.path).path
        auth = self.headers.get("Authorization", "")
        if path == "/slow":
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            time.sleep(float(q.get("s", ["5"])[0]))
            return self.echo(body, auth, False)
        if path in ("/echo", "/gzip-echo"):
            return self.echo(body, auth, path == "/gzip-echo")
        if path == "/api/v3/user" and self.command == "GET":
            return self.user(auth)
        if path == "/api/v3/user" and self.command == "PATCH":
            return self.user(body.decode("utf-8", "replace"))
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
        if form.get("Action") == ["GetCallerIdentity"]:
            if not self.sigv4_ok(body, auth):
                return self.send(403, b"<ErrorResponse><Error><Code>"
                                 b"SignatureDoesNotMatch</Code></Error>"
                                 b"</ErrorResponse>", "text/xml")
            m = re.search(r"Credential=([^/,]+)", auth)
            who = m.group(1) if m else "none"
            xml = ("<GetCallerIdentityResponse xmlns=\"https://sts."
                   "amazonaws.com/doc/2011-06-15/\"><GetCallerIdentity"
                   "Result><Arn>arn:aws:iam::123456789012:user/%s</Arn>"
                   "<UserId>%s</UserId><Account>123456789012</Account>"
                   "</GetCallerIdentityResult><ResponseMetadata><RequestId>"
                   "1</RequestId></ResponseMetadata></GetCallerIdentity"
                   "Response>" % (who, who))
            return self.send(200, xml.encode(), "text/xml")
        self.send(404, b'{"message": "Not Found"}')

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = handle_any


def main():
    portfile, logfile, cert, key = sys.argv[1:5]
    addr = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1"
    port = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    srv = ThreadingHTTPServer((addr, port), Handler)
    srv.logfile = logfile
    if cert != "-":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))

    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


if __name__ == "__main__":
    main()
