#!/usr/bin/env python3
"""The SigV4 oracle of egress_proxy_test: does the Authorization the
upstream got (relay_upstream.py's echo: header lines masked, their
SHA-256 not) verify with the real key id and secret?

Usage: egress_sigv4_check.py ECHO.json KEY_ID SECRET
Prints "ok", or why not, and exits 1.  Independent of relay/egress_sigv4.c:
the canonical request as AWS documents it, for requests without a body,
signed in an Authorization header or presigned (an S3 URL's query).
"""

import hashlib
import hmac
import json
import re
import sys
import urllib.parse


def h(data):
    return hashlib.sha256(data.encode()).hexdigest()


def mac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def presigned(echo, hdrs, key_id, secret):
    # The real key id is masked in the echo's target: put back.
    target = echo["target"].replace("***", key_id)
    path, _, query = target.partition("?")
    q = dict((urllib.parse.unquote(k), urllib.parse.unquote(v))
             for k, _, v in (p.partition("=") for p in query.split("&")))
    cred = q["X-Amz-Credential"].split("/")
    if cred[0] != key_id:
        sys.exit("the presigned URL does not name the real key id")
    params = sorted((k, v) for k, v in q.items() if k != "X-Amz-Signature")
    cq = "&".join(urllib.parse.quote(k, safe="-_.~") + "=" +
                  urllib.parse.quote(v, safe="-_.~") for k, v in params)
    signed = q["X-Amz-SignedHeaders"]
    ch = "".join(n + ":" + " ".join(hdrs[n].split()) + "\n"
                 for n in signed.split(";"))
    creq = "\n".join([echo["method"], path, cq, ch, signed,
                      "UNSIGNED-PAYLOAD"])
    sts = "\n".join(["AWS4-HMAC-SHA256", q["X-Amz-Date"],
                     "/".join(cred[1:]), h(creq)])
    k = mac(("AWS4" + secret).encode(), cred[1])
    for part in cred[2:]:
        k = mac(k, part)
    want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    if want != q["X-Amz-Signature"]:
        sys.exit("the presigned signature does not verify with the real "
                 "secret")
    print("ok")


def main():
    echo = json.load(open(sys.argv[1]))
    key_id, secret = sys.argv[2], sys.argv[3]
    hdrs = {k.lower(): v for k, v in echo["headers"]}
    if "X-Amz-Signature=" in echo["target"]:
        return presigned(echo, hdrs, key_id, secret)
    auth = hdrs["authorization"]
    m = re.match(r"AWS4-HMAC-SHA256 Credential=[^/]*/(\d{8})/([^/]+)/"
                 r"([^/]+)/aws4_request, SignedHeaders=([^,]+), "
                 r"Signature=([0-9a-f]{64})$", auth)
    if not m:
        sys.exit("not a SigV4 Authorization: " + auth)
    date, region, service, signed, sig = m.groups()
    path, _, query = echo["target"].partition("?")
    params = sorted((urllib.parse.unquote(k), urllib.parse.unquote(v))
                    for k, _, v in (p.partition("=")
                                    for p in query.split("&") if p))
    cq = "&".join(urllib.parse.quote(k, safe="-_.~") + "=" +
                  urllib.parse.quote(v, safe="-_.~") for k, v in params)
    ch = "".join(n + ":" + " ".join(hdrs[n].split()) + "\n"
                 for n in signed.split(";"))
    creq = "\n".join(["GET" if echo["method"] == "GET" else echo["method"],
                      path, cq, ch, signed, h("")])
    sts = "\n".join(["AWS4-HMAC-SHA256", hdrs["x-amz-date"],
                     "/".join([date, region, service, "aws4_request"]),
                     h(creq)])
    k = mac(("AWS4" + secret).encode(), date)
    for part in (region, service, "aws4_request"):
        k = mac(k, part)
    want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    if want != sig:
        sys.exit("the signature does not verify with the real secret")
    # The key id is masked in the echo: its full header's hash tells it.
    full = auth.replace("Credential=***/", "Credential=" + key_id + "/")
    if hashlib.sha256(full.encode()).hexdigest() != \
            echo["header_sha256"]["authorization"]:
        sys.exit("the upstream did not get the real key id")
    print("ok")


if __name__ == "__main__":
    main()
