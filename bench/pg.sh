#!/bin/sh
# bench/pg.sh: authenticated GET /tools with wrk at 64 connections, the
# same daemon and data on sqlite and on a PostgreSQL server on this
# machine (scripts/pg.sh: a throwaway server on a Unix socket).  Goal
# (issue 12): PostgreSQL >= 0.5x the sqlite req/s.
#
#   sh bench/pg.sh [seconds [tools]]      (as root)

set -e
secs=${1:-5}
ntools=${2:-100}
top=$(cd "$(dirname "$0")/.." && pwd)
command -v wrk >/dev/null || { echo "bench: wrk is not installed" >&2; exit 1; }
[ "$(id -u)" -ne 0 ] || sh "$top/scripts/deps.sh" users

T=$(mktemp -d /tmp/tregd-bench.XXXXXX)
chmod 0711 "$T"
pg=$(sh "$top/scripts/pg.sh" start)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; sleep 0.5;
    sh "$top/scripts/pg.sh" stop "$pg"; rm -rf "$T"' EXIT
sh "$top/scripts/pg.sh" createdb "$pg" bench

# daemon NAME PORT [database line]: start one, sign up, make the tools;
# sets tok.  Not in a $(...): the daemon would hold its pipe open.
daemon() {
	d="$T/$1"
	mkdir -p "$d"
	cat > "$d/tregd.conf" <<CONF
listen on 127.0.0.1 port $2
state "$d/state"
socket "$d/tregd.sock"
signup open
run directory "$d/runs"
http max-connections 2048
$3
CONF
	"$top/tregd/tregd" -d -f "$d/tregd.conf" > "$d/log" 2>&1 &
	pids="$pids $!"
	while ! curl -sf -o /dev/null "http://127.0.0.1:$2/meta"; do
		sleep 0.1
	done
	tok=$(curl -s -X POST "http://127.0.0.1:$2/users" \
	    -d '{"email": "bench@example.com"}' |
	    sed 's/.*"token":"\([^"]*\)".*/\1/')
	i=0
	while [ $i -lt "$ntools" ]; do
		i=$((i + 1))
		curl -s -o /dev/null -X POST -H "X-Treg-Token: $tok" \
		    "http://127.0.0.1:$2/tools" -d "{\"name\": \"tool$i\", \
		    \"base_url\": \"https://api$i.example.com/v1\", \
		    \"cli\": {\"bin\": \"gh\"}}"
	done
}

daemon sqlite 18992
tok_sq=$tok
daemon pg 18993 "database postgresql \"host=$pg user=tregd dbname=bench\""
tok_pg=$tok

measure() {
	printf 'wrk.headers["X-Treg-Token"] = "%s"\n' "$2" > "$T/auth.lua"
	wrk -t2 -c64 -d"${secs}s" --latency -s "$T/auth.lua" \
	    "http://127.0.0.1:$1/tools" > "$T/wrk.out"
	rps=$(awk '/^Requests\/sec/ {print $2}' "$T/wrk.out")
	p50=$(awk '$1 == "50%" {print $2}' "$T/wrk.out")
	p99=$(awk '$1 == "99%" {print $2}' "$T/wrk.out")
}

size=$(curl -s -H "X-Treg-Token: $tok_sq" http://127.0.0.1:18992/tools |
    wc -c)
echo "GET /tools, $ntools tools ($size bytes), 64 connections, ${secs}s"
printf "%-12s %12s %10s %10s\n" engine "req/s" p50 p99
measure 18992 "$tok_sq"
sq=$rps
printf "%-12s %12s %10s %10s\n" sqlite "$rps" "$p50" "$p99"
measure 18993 "$tok_pg"
printf "%-12s %12s %10s %10s\n" postgresql "$rps" "$p50" "$p99"
echo "postgresql / sqlite: $(echo "$rps $sq" | awk '{printf "%.2f", $1 / $2}')"
