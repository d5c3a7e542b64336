#!/bin/sh
# make bench: every benchmark, one after the other.
set -e
cd "$(dirname "$0")/.."
sh bench/redact.sh
sh bench/api.sh
[ -f bench/run.sh ] && sh bench/run.sh
