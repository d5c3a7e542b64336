#!/usr/bin/env python3
"""Check the API's manual page against the OpenAPI document.

    api_page.py PAGE DOC

Every route the ROUTES section of PAGE (man/tregd-api.7) documents, as
".It Li METHOD[ , METHOD ...] /path", must be an operation of DOC
(doc/openapi.json), and every operation of DOC must be documented there,
with the same method and the same path, parameters spelled as in DOC.
Prints one line per difference and exits 1, or exits 0.
"""

import json
import re
import sys

METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

page, doc = sys.argv[1], sys.argv[2]
text = open(page).read()
m = re.search(r"^\.Sh ROUTES\n(.*?)^\.Sh ", text, re.S | re.M)
if m is None:
    sys.exit("%s: no ROUTES section" % page)
documented, failures = set(), []
for line in m.group(1).splitlines():
    if not line.startswith(".It Li "):
        continue
    words = [w for w in line.split()[2:] if w != ","]
    methods = [w for w in words if w in METHODS]
    paths = [w for w in words if w.startswith("/")]
    if not methods or len(paths) != 1 or \
            len(methods) + len(paths) != len(words):
        failures.append("%s: not METHOD /path: %s" % (page, line))
        continue
    for meth in methods:
        documented.add((meth, paths[0]))
described = set()
for path, ops in json.load(open(doc))["paths"].items():
    for meth in ops:
        described.add((meth.upper(), path))
for meth, path in sorted(described - documented, key=lambda r: r[1]):
    failures.append("%s %s: in %s, not documented in %s" %
                    (meth, path, doc, page))
for meth, path in sorted(documented - described, key=lambda r: r[1]):
    failures.append("%s %s: documented in %s, not in %s" %
                    (meth, path, page, doc))
if len(documented) < 30:
    failures.append("%s: only %d routes found" % (page, len(documented)))
for f in failures:
    print(f)
sys.exit(1 if failures else 0)
