#!/usr/bin/env python3
# memscan.py MARKER PID...: read every readable mapping of each PID
# through /proc/PID/mem (as root) and print "PID FORM" for each process
# whose memory holds MARKER raw, in hex or in base64 (any alignment).
# Exit 0 when nothing was found, 1 when something was, 2 when a process
# could not be read at all.

import base64
import binascii
import re
import sys


def forms(marker):
    m = marker.encode()
    out = {"raw": [m], "hex": [binascii.hexlify(m),
                               binascii.hexlify(m).upper()]}
    b64 = []
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + m)
        # Drop what depends on the bytes around the marker.
        start = (pad * 4 + 2) // 3 + (1 if pad else 0)
        core = enc[start:].rstrip(b"=")
        b64.append(core[:len(core) - 2])
    out["base64"] = b64
    return out


CHUNK = 1 << 20
OVERLAP = 4096      # longer than any form of the marker
HUGE = 1 << 36      # a sanitizer's shadow: reserved, not data


def scan_range(mem, lo, hi, fm, found):
    read = 0
    tail = b""
    for at in range(lo, hi, CHUNK):
        try:
            mem.seek(at)
            data = mem.read(min(CHUNK, hi - at))
        except (OSError, ValueError, OverflowError):
            tail = b""
            continue
        read += len(data)
        data = tail + data
        for name, pats in fm.items():
            if any(p in data for p in pats):
                found.add(name)
        tail = data[-OVERLAP:]
    return read


def scan(pid, fm):
    found = set()
    read = 0
    with open("/proc/%d/maps" % pid) as maps, \
            open("/proc/%d/mem" % pid, "rb", 0) as mem:
        for line in maps:
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            if f[1][0] != "r" or (len(f) > 5 and f[5] == "[vvar]"):
                continue
            if hi - lo >= HUGE:
                print("%d: %s left out (%d GiB reserved)" %
                      (pid, f[0], (hi - lo) >> 30), file=sys.stderr)
                continue
            read += scan_range(mem, lo, hi, fm, found)
    if read == 0:
        raise OSError("nothing readable")
    return found


def main():
    fm = forms(sys.argv[1])
    rc = 0
    for p in sys.argv[2:]:
        try:
            found = scan(int(p), fm)
        except (OSError, ValueError) as e:
            if re.search("No such process|No such file", str(e)):
                continue
            print("%s unreadable: %s" % (p, e))
            rc = max(rc, 2)
            continue
        for name in sorted(found):
            print("%s %s" % (p, name))
            rc = max(rc, 1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
