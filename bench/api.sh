#!/bin/sh
# bench/api.sh: authenticated GET /tools throughput and latency with wrk at
# several connection counts, beside nginx serving a static file of the same
# size, and the RSS of all tregd processes idle and under load; then the
# same over TLS at 64 and 256 connections, tregd and nginx on one
# throwaway certificate (ECDSA P-256).  Both without a request log.
#
#   sh bench/api.sh [seconds]        (as root: installs wrk and nginx)

set -e
secs=${1:-5}
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" -eq 0 ]; then
	for p in wrk nginx-light; do
		dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q "ok installed" ||
		    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $p >/dev/null
	done
	sh "$top/scripts/deps.sh" users
fi
command -v wrk >/dev/null || { echo "bench: wrk is not installed" >&2; exit 1; }

T=$(mktemp -d /tmp/tregd-bench.XXXXXX)
chmod 0711 "$T"
port=18990
tport=18992
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/key.pem" -out "$T/cert.pem" -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 2>/dev/null
cat > "$T/tregd.conf" <<CONF
listen on 127.0.0.1 port $port
listen on 127.0.0.1 port $tport tls
tls certificate "$T/cert.pem"
tls key "$T/key.pem"
state "$T/state"
socket "$T/tregd.sock"
signup open
run directory "$T/runs"
http connections 2048 per-address 2048
log requests no
CONF
"$top/tregd/tregd" -d -f "$T/tregd.conf" 2> "$T/log" &
pid=$!
trap 'kill $pid 2>/dev/null; [ -n "$npid" ] && kill $npid 2>/dev/null; rm -rf "$T"' EXIT
while ! curl -sf -o /dev/null "http://127.0.0.1:$port/meta"; do sleep 0.1; done

tok=$(curl -s -X POST "http://127.0.0.1:$port/users" \
    -d '{"email": "bench@example.com"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
for i in 1 2 3 4 5 6 7 8 9 10; do
	curl -s -o /dev/null -X POST -H "X-Treg-Token: $tok" \
	    "http://127.0.0.1:$port/tools" \
	    -d "{\"name\": \"tool$i\", \"base_url\": \"https://api$i.example.com/v1\", \"cli\": {\"bin\": \"gh\"}}"
done
curl -s -H "X-Treg-Token: $tok" "http://127.0.0.1:$port/tools" > "$T/tools.json"
size=$(wc -c < "$T/tools.json")

# The sum of every process's RSS counts the shared libraries once per
# process; PSS shares them out, so both are printed.
rss() {
	total=0 pss=0
	for p in $pid $(pgrep -P $pid); do
		kb=$(awk '/^VmRSS/ {print $2}' /proc/$p/status)
		ps=$(awk '/^Pss:/ {print $2}' /proc/$p/smaps_rollup)
		total=$((total + kb))
		pss=$((pss + ps))
	done
	echo "RSS sum $total KiB, PSS sum $pss KiB"
}

echo "GET /tools: $size bytes of JSON, 10 tools"
echo "tregd idle, all processes: $(rss)"

cat > "$T/auth.lua" <<LUA
wrk.headers["X-Treg-Token"] = "$tok"
LUA

npid=""
if command -v nginx >/dev/null; then
	mkdir -p "$T/www"
	cp "$T/tools.json" "$T/www/tools.json"
	cat > "$T/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $T/nginx.pid;
error_log $T/nginx.err;
events { worker_connections 4096; }
http {
	access_log off;
	server {
		listen 127.0.0.1:18991;
		listen 127.0.0.1:18993 ssl;
		ssl_certificate $T/cert.pem;
		ssl_certificate_key $T/key.pem;
		ssl_protocols TLSv1.2 TLSv1.3;
		root $T/www;
	}
}
NGX
	nginx -c "$T/nginx.conf" &
	npid=$!
	sleep 0.5
fi

printf "%-8s %12s %12s %12s %14s\n" conns "tregd req/s" "p50" "p99" "nginx req/s"
for c in 1 16 64 256; do
	t=$(( c < 2 ? 1 : 2 ))
	out=$(wrk -t$t -c$c -d${secs}s --latency -s "$T/auth.lua" \
	    "http://127.0.0.1:$port/tools")
	[ $c -eq 64 ] && load_rss=$(rss)
	rps=$(echo "$out" | awk '/^Requests\/sec/ {print $2}')
	p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
	p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
	nrps="-"
	if [ -n "$npid" ]; then
		nrps=$(wrk -t$t -c$c -d${secs}s \
		    "http://127.0.0.1:18991/tools.json" |
		    awk '/^Requests\/sec/ {print $2}')
	fi
	printf "%-8s %12s %12s %12s %14s\n" $c "$rps" "$p50" "$p99" "$nrps"
done
echo "tregd under load (64 connections), all processes: ${load_rss:-?}"

echo "over TLS (keep-alive: one handshake per connection)"
printf "%-8s %12s %12s %12s %14s\n" conns "tregd req/s" "p50" "p99" "nginx req/s"
for c in 64 256; do
	out=$(wrk -t2 -c$c -d${secs}s --latency -s "$T/auth.lua" \
	    "https://127.0.0.1:$tport/tools")
	rps=$(echo "$out" | awk '/^Requests\/sec/ {print $2}')
	p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
	p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
	nrps="-"
	if [ -n "$npid" ]; then
		nrps=$(wrk -t2 -c$c -d${secs}s \
		    "https://127.0.0.1:18993/tools.json" |
		    awk '/^Requests\/sec/ {print $2}')
	fi
	printf "%-8s %12s %12s %12s %14s\n" $c "$rps" "$p50" "$p99" "$nrps"
done
