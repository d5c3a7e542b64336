#!/bin/sh
# bench/relay.sh: GET /call/<tool>/x through tregd to a local nginx
# upstream, beside the same request straight to nginx and beside the
# peer, nginx proxy_pass adding an Authorization header; req/s and p50 at
# 1, 16 and 64 connections with wrk, and the ratios from the same run:
# tregd's req/s against the peer's, and the latency each adds to the
# direct request.  Keep-alive to the upstream in both relays; no request
# log anywhere.  On a shared machine give several rounds: the three are
# measured in turn in each round, and the medians are printed, with the
# load average before and after.
#
#   sh bench/relay.sh [seconds [rounds]]   (as root: installs wrk and nginx)

set -e
secs=${1:-5}
rounds=${2:-1}
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" -eq 0 ]; then
	for p in wrk nginx-light; do
		dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q "ok installed" ||
		    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $p >/dev/null
	done
	sh "$top/scripts/deps.sh" users
fi
for c in wrk nginx; do
	command -v $c >/dev/null || { echo "bench: $c is not installed" >&2; exit 1; }
done

T=$(mktemp -d /tmp/tregd-bench.XXXXXX)
chmod 0711 "$T"
port=18994		# tregd
up=18995		# nginx: the upstream
peer=18996		# nginx: proxy_pass to the upstream, adding the key
cat > "$T/tregd.conf" <<CONF
listen on 127.0.0.1 port $port
state "$T/state"
socket "$T/tregd.sock"
signup open
relay allow-private yes
run directory "$T/runs"
http connections 2048 per-address 2048
log requests no
CONF
mkdir -p "$T/www"
printf '{"ok": true, "items": [1, 2, 3]}\n' > "$T/www/x"
cat > "$T/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $T/nginx.pid;
error_log $T/nginx.err;
events { worker_connections 4096; }
http {
	access_log off;
	upstream api { server 127.0.0.1:$up; keepalive 64; }
	server {
		listen 127.0.0.1:$up;
		keepalive_requests 100000;
		root $T/www;
		default_type application/json;
	}
	server {
		listen 127.0.0.1:$peer;
		keepalive_requests 100000;
		location / {
			proxy_pass http://api;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Authorization "Bearer sk_live_bench_0123456789";
		}
	}
}
NGX
nginx -c "$T/nginx.conf" &
npid=$!
"$top/tregd/tregd" -d -f "$T/tregd.conf" 2> "$T/log" &
pid=$!
trap 'kill $pid $npid 2>/dev/null; rm -rf "$T"' EXIT
while ! curl -sf -o /dev/null "http://127.0.0.1:$port/meta"; do
	kill -0 $pid 2>/dev/null ||
	    { echo "bench: tregd did not start" >&2; cat "$T/log" >&2; exit 1; }
	sleep 0.1
done
while ! curl -sf -o /dev/null "http://127.0.0.1:$up/x"; do sleep 0.1; done

H="Content-Type: application/json"
tok=$(curl -s -X POST "http://127.0.0.1:$port/users" \
    -d '{"email": "bench@example.com"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
sid=$(curl -s -X POST -H "X-Treg-Token: $tok" "http://127.0.0.1:$port/secrets" \
    -d '{"name": "k", "value": "sk_live_bench_0123456789"}' |
    sed 's/.*"id":\([0-9]*\).*/\1/')
curl -s -o /dev/null -X POST -H "X-Treg-Token: $tok" \
    "http://127.0.0.1:$port/tools" -d "{\"name\": \"api\",
    \"base_url\": \"http://127.0.0.1:$up\", \"bindings\": [{\"secret_id\": $sid}]}"
curl -sf -o /dev/null -H "X-Treg-Token: $tok" "http://127.0.0.1:$port/call/api/x" ||
    { echo "bench: the call does not work" >&2; cat "$T/log" >&2; exit 1; }
cat > "$T/auth.lua" <<LUA
wrk.headers["X-Treg-Token"] = "$tok"
LUA

# ms URL CONNS [script]: "req/s p50-in-ms"
measure() {
	t=$(( $2 < 2 ? 1 : 2 ))
	out=$(wrk -t$t -c$2 -d${secs}s --latency ${3:+-s "$3"} "$1")
	echo "$out" | awk '/^Requests\/sec/ { r = $2 }
	    $1 == "50%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
	    if (u == "us") v /= 1000; else if (u == "s") v *= 1000; p = v }
	    END { printf "%s %.3f\n", r, p }'
}

# median: of the numbers on stdin
median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]
	    else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $rounds round(s) of ${secs}s"
printf "%-6s %22s %22s %22s %10s %12s\n" conns "direct req/s p50ms" \
    "nginx-proxy req/s p50" "tregd req/s p50" "req/s x" "added p50 x"
for c in 1 16 64; do
	: > "$T/r"
	r=0
	while [ $r -lt $rounds ]; do
		r=$((r + 1))
		echo "$(measure "http://127.0.0.1:$up/x" $c) $(measure \
		    "http://127.0.0.1:$peer/x" $c) $(measure \
		    "http://127.0.0.1:$port/call/api/x" $c "$T/auth.lua")" >> "$T/r"
	done
	for i in 1 2 3 4 5 6; do
		eval m$i=$(cut -d' ' -f$i "$T/r" | median)
	done
	awk -v c=$c -v dr=$m1 -v dp=$m2 -v nr=$m3 -v np=$m4 -v tr=$m5 -v tp=$m6 \
	    'BEGIN { na = np - dp; ta = tp - dp
	    printf "%-6s %12d %9.3f %12d %9.3f %12d %9.3f %10.2f ", c, dr, dp,
	    nr, np, tr, tp, tr / nr
	    if (na < 0.005) print "           -"; else printf "%12.2f\n", ta / na }'
done
echo "req/s x: tregd / nginx proxy_pass; added p50 x: (tregd - direct) / (proxy_pass - direct), - when proxy_pass adds under 5 us"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
