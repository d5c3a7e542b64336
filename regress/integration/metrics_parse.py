#!/usr/bin/env python3
# metrics_parse.py < text: parse a Prometheus text exposition with the
# Python client's own parser and print one line per family
# ("TYPE name type") and per sample ("name{k="v",...} value", labels
# sorted), so the shell tests can grep exact series.  Exits 1 when the
# parser refuses the text.
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = sys.stdin.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and others
        print("parse error: %s" % e, file=sys.stderr)
        return 1
    for f in families:
        print("TYPE %s %s" % (f.name, f.type))
        for s in f.samples:
            labels = ",".join('%s="%s"' % (k, s.labels[k])
                              for k in sorted(s.labels))
            print("%s{%s} %g" % (s.name, labels, s.value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
