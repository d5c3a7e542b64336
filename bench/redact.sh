#!/bin/sh
# Build bench/redact.c with -O2 against common/redact.c and run it on one
# core.  Arguments go to the benchmark: [-c] [-m MiB] [-r rounds] [-S len].
set -eu
cd "$(dirname "$0")/.."
out="${TMPDIR:-/tmp}/tregd-bench-redact"
${CC:-cc} -O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror \
    -Wno-unused-parameter -Icommon \
    $(pkg-config --cflags libbsd-overlay) \
    -o "$out" bench/redact.c common/redact.c \
    $(pkg-config --libs libbsd-overlay)
echo "redactor throughput, one core ($(uname -m), \
$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'))"
if command -v taskset >/dev/null 2>&1; then
	exec taskset -c 0 "$out" "$@"
fi
exec "$out" "$@"
