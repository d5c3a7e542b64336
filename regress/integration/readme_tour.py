#!/usr/bin/env python3
"""Run the tour of README.md as it is written and check what it shows.

    readme_tour.py README PORT

Takes the ```sh blocks of the "A five-minute tour" section after the
first (make run, which the caller has started on PORT), runs them in one
sh -e with 127.0.0.1:8790 replaced by 127.0.0.1:PORT and a leading
"sudo " dropped, in the current directory.  A block followed by a
commented JSON answer (# {...}, continued on "#  " lines) must print an
answer with those members and values (duration_ms: any integer); every
other JSON object a block prints must not be an error ({"detail"}).
Prints one line per failure and exits 1, or exits 0.
"""

import json
import re
import subprocess
import sys

readme, port = sys.argv[1], sys.argv[2]
text = open(readme).read()
m = re.search(r"^## A five-minute tour\n(.*?)^## ", text, re.S | re.M)
if m is None:
    sys.exit("no tour section in " + readme)
blocks = re.findall(r"^```sh\n(.*?)^```\n", m.group(1), re.S | re.M)
if len(blocks) < 5 or blocks[0].strip() != "make run":
    sys.exit("the tour must start with make run, then its commands")

script, expected = ["set -e"], []
for i, block in enumerate(blocks[1:]):
    cmds, want = [], []
    for line in block.splitlines():
        if line.startswith("# {") or (want and line.startswith("#  ")):
            want.append(line[2:].strip())
            continue
        line = line.replace("127.0.0.1:8790", "127.0.0.1:" + port)
        cmds.append(re.sub(r"^sudo ", "", line))
    script.append("echo; echo '@@ %d'" % i)
    script.extend(cmds)
    expected.append(json.loads("".join(want)) if want else None)
script.append("echo; echo '@@ end'")

r = subprocess.run(["sh", "-c", "\n".join(script)], capture_output=True,
                   text=True, timeout=120)
failures = []
if r.returncode != 0:
    failures.append("the tour failed (%d): %s" % (r.returncode, r.stderr))
outs = re.split(r"^@@ (\S+)\n", r.stdout, flags=re.M)
got = dict(zip(outs[1::2], outs[2::2]))
if "end" not in got:
    failures.append("the tour stopped early: %s" % r.stdout[-500:])
for i, want in enumerate(expected):
    out = got.get(str(i), "")
    objs = []
    for line in out.splitlines():
        try:
            objs.append(json.loads(line))
        except ValueError:
            pass
    for o in objs:
        if isinstance(o, dict) and "detail" in o:
            failures.append("block %d: an error: %s" % (i + 1, o))
    if want is None:
        continue
    if not objs or not isinstance(objs[-1], dict):
        failures.append("block %d: no JSON answer: %r" % (i + 1, out))
        continue
    for k, v in want.items():
        a = objs[-1].get(k)
        ok = isinstance(a, int) if k == "duration_ms" else a == v
        if not ok:
            failures.append("block %d: %s is %r, the README shows %r" %
                            (i + 1, k, a, v))
for f in failures:
    print(f)
sys.exit(1 if failures else 0)
