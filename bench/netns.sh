#!/bin/sh
# bench/netns.sh: what a run's network namespace costs (SPEC.md 6a).
# POST /run of `true` with one client (wrk, p50 and runs/s), in rounds
# that alternate between tregd daemons, each with "run pool 4":
#
#   sh bench/netns.sh [seconds [rounds [OLD-TREGD]]]   (as root)
#
#   new proxy   this tregd, "run network proxy" (the default): a network
#               namespace per run, its listener on 127.0.0.1:3128 made
#               in it and handed to the relay
#   new no      this tregd, "run network no": the namespace, no listener
#   new host    this tregd, "run network host": the host's network
#   old         OLD-TREGD (e.g. main's), "run network yes": the host's
#   old no      OLD-TREGD, "run network no": its namespace, loopback only
#
# The median of each daemon's rounds is printed; rounds alternate so a
# busy moment of the machine falls on all of them alike.

set -e
secs=${1:-5}
rounds=${2:-5}
other=${3:-}
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
	echo "bench: run as root (tregd's privilege separation)" >&2
	exit 1
fi
command -v wrk >/dev/null || {
	echo "bench: wrk is missing (sh bench/run.sh installs it)" >&2
	exit 1
}
T=$(mktemp -d /tmp/tregd-bench-netns.XXXXXX)
chmod 0711 "$T"
pids=""
trap 'kill $pids 2>/dev/null; wait $pids 2>/dev/null; rm -rf "$T"' EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# up NAME BINARY NETWORK: a tregd with the tool t (CLI true), uids of
# its own; its port and wrk script in $T/NAME.
nup=0
up() {
	nup=$((nup + 1))
	d="$T/$1" p=$(free_port)
	mkdir -p "$d"
	cat > "$d/tregd.conf" <<CONF
listen on 127.0.0.1 port $p
state "$d/state"
socket "$d/tregd.sock"
signup open
run allow { "true" }
run directory "$d/runs"
run slots 16 per-user 16
run pool 4
run network $3
run users $((62000 + 100 * nup))-$((62099 + 100 * nup))
CONF
	"$2" -d -f "$d/tregd.conf" 2> "$d/log" &
	pids="$pids $!"
	while ! curl -sf -o /dev/null "http://127.0.0.1:$p/meta"; do
		sleep 0.1
	done
	t=$(curl -s -X POST "http://127.0.0.1:$p/users" \
	    -d "{\"email\": \"$1@example.com\"}" |
	    sed 's/.*"token":"\([^"]*\)".*/\1/')
	# The host's network cannot swap placeholders: not keyless there.
	keyless=true
	[ "$3" = host ] && keyless=false
	curl -s -o /dev/null -X POST -H "X-Treg-Token: $t" \
	    "http://127.0.0.1:$p/tools" -d '{"name": "t",
	    "base_url": "https://api.example.com", "cli": {"bin": "true",
	    "keyless": '$keyless'}}'
	check=$(curl -s -X POST -H "X-Treg-Token: $t" \
	    "http://127.0.0.1:$p/run" -d '{"tool": "t", "args": []}')
	case $check in
	*'"exit_code":0'*) ;;
	*) echo "bench: $1: the run failed: $check" >&2; exit 1 ;;
	esac
	cat > "$d/run.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"tool": "t", "args": []}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Treg-Token"] = "$t"
LUA
	echo "$p" > "$d/port"
}

# one NAME: "p50_us runs_per_s" of one wrk round at one client.
one() {
	wrk -t1 -c1 -d"${secs}s" --latency -s "$T/$1/run.lua" \
	    "http://127.0.0.1:$(cat "$T/$1/port")/run" |
	    awk 'function us(v) {
		if (v ~ /us$/) return v + 0;
		if (v ~ /ms$/) return v * 1000;
		if (v ~ /s$/) return v * 1000000;
		return v }
	    $1 == "50%" { p50 = us($2) }
	    /^Requests\/sec/ { rps = $2 }
	    END { printf "%.0f %.0f\n", p50, rps }'
}

names="new-proxy new-no new-host"
up new-proxy "$top/tregd/tregd" proxy
up new-no "$top/tregd/tregd" no
up new-host "$top/tregd/tregd" host
if [ -n "$other" ]; then
	up old "$other" yes
	up old-no "$other" no
	names="$names old old-no"
fi
sleep 1
r=0
while [ $r -lt "$rounds" ]; do
	for n in $names; do
		one "$n" >> "$T/$n.out"
	done
	r=$((r + 1))
done
echo "POST /run of true, 1 client, run pool 4, median of $rounds rounds" \
    "of ${secs}s ($(nproc) cores, $(uname -r))"
printf "%-12s %8s %8s   %s\n" "" "p50 µs" "runs/s" "rounds' p50"
for n in $names; do
	printf "%-12s %8s %8s   %s\n" "$n" \
	    "$(cut -d' ' -f1 "$T/$n.out" | sort -n | awk '{ a[NR] = $1 }
	    END { print a[int((NR + 1) / 2)] }')" \
	    "$(cut -d' ' -f2 "$T/$n.out" | sort -n | awk '{ a[NR] = $1 }
	    END { print a[int((NR + 1) / 2)] }')" \
	    "$(cut -d' ' -f1 "$T/$n.out" | tr '\n' ' ')"
done
