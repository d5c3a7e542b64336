#!/bin/sh
# bench/egress.sh: what the egress proxy of keyless runs costs (SPEC 6a),
# side by side in one run against a local TLS nginx under a throwaway CA:
#
#   keyless  the default: the run holds a placeholder, its requests leave
#            through the proxy (CONNECT, the run CA's leaf, substitution,
#            a call record each, the upstream over a kept-alive pool);
#   direct   "run network host" and "keyless": false: the key in the
#            run's environment, straight to nginx (what runs did before).
#
# Inside one run a python3 client times requests on one kept-alive
# connection (p50 per request) and on a new connection each (p50 per
# connection, TLS handshake included); curl and `gh api /user` are timed
# per invocation; and POST /run of `true` gives a run's p50 setup with
# and without its network namespace.  Goals (issue 23): +1 ms p50 per
# kept-alive request, 1.5x a direct handshake per new connection, 1.1x
# the run p50.
#
#   sh bench/egress.sh [requests [runs]]   (as root: installs nginx)

set -e
n=${1:-300}
nruns=${2:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" -eq 0 ]; then
	dpkg-query -W -f='${Status}' nginx-light 2>/dev/null |
	    grep -q "ok installed" || DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq nginx-light >/dev/null
	sh "$top/scripts/deps.sh" users
fi

T=$(mktemp -d /tmp/tregd-bench.XXXXXX)
chmod 0755 "$T"
port=18984
up=18985
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -days 2 -subj "/CN=bench CA" -keyout "$T/ca.key" -out "$T/ca.pem" \
    >/dev/null 2>&1
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=localhost" -keyout "$T/up.key" -out "$T/up.csr" >/dev/null 2>&1
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$T/up.ext"
openssl x509 -req -in "$T/up.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
    -CAcreateserial -days 2 -extfile "$T/up.ext" -out "$T/up.pem" >/dev/null 2>&1
chmod 0644 "$T"/*.pem "$T/up.key"
# What a run must read lies outside /tmp (a run has a /tmp of its own).
P=$(mktemp -d /var/lib/tregd-bench.XXXXXX)
chmod 0755 "$P"
cat "/etc/ssl/certs/ca-certificates.crt" "$T/ca.pem" > "$P/direct-bundle.pem"
chmod 0644 "$P/direct-bundle.pem"
mkdir -p "$T/www/api/v3"
printf '{"login": "octocat", "id": 1}\n' > "$T/www/api/v3/user"
printf '{"ok": true, "items": [1, 2, 3]}\n' > "$T/www/x"
chmod -R a+rX "$T/www"
cat > "$T/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $T/nginx.pid;
error_log $T/nginx.err;
events { worker_connections 4096; }
http {
	access_log off;
	server {
		listen 127.0.0.1:$up ssl;
		ssl_certificate $T/up.pem;
		ssl_certificate_key $T/up.key;
		keepalive_requests 100000;
		root $T/www;
		default_type application/json;
	}
}
NGX
nginx -c "$T/nginx.conf" &
ngx=$!

# The client inside a run: p50 ms per kept-alive request and per new
# connection, through the proxy when HTTPS_PROXY is set.
cat > "$P/client.py" <<'PY'
import http.client, os, ssl, statistics, sys, time
host, port, n = "127.0.0.1", int(sys.argv[1]), int(sys.argv[2])
ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
auth = {"Authorization": "Bearer " + os.environ["KEY"]}
proxied = bool(os.environ.get("HTTPS_PROXY"))
def conn():
    if proxied:
        c = http.client.HTTPSConnection("127.0.0.1", 3128, context=ctx)
        c.set_tunnel(host, port)
    else:
        c = http.client.HTTPSConnection(host, port, context=ctx)
    return c
def get(c):
    c.request("GET", "/x", headers=auth)
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
c, ka = conn(), []
get(c)
for _ in range(n):
    t = time.perf_counter(); get(c); ka.append(time.perf_counter() - t)
c.close()
new = []
for _ in range(max(n // 6, 20)):
    t = time.perf_counter(); c = conn(); get(c); c.close()
    new.append(time.perf_counter() - t)
print("%.3f %.3f" % (statistics.median(ka) * 1e3,
                     statistics.median(new) * 1e3))
PY
chmod 0644 "$P/client.py"

# start MODE: tregd in MODE (keyless or direct), a user, the tool.
start() {
	mkdir -p "$T/$1"
	net=proxy
	[ "$1" = direct ] && net=host
	cat > "$T/$1/tregd.conf" <<CONF
listen on 127.0.0.1 port $port
state "$T/$1/state"
socket "$T/$1/tregd.sock"
signup open
relay allow-private yes
relay ca "$T/ca.pem"
run network $net
run allow { "sh", "python3", "curl", "gh", "true" }
run directory "$T/$1/runs"
log requests no
CONF
	"$top/tregd/tregd" -d -f "$T/$1/tregd.conf" > "$T/$1/log" 2>&1 &
	tpid=$!
	i=0
	until curl -sf -o /dev/null "http://127.0.0.1:$port/meta"; do
		i=$((i + 1)); [ $i -lt 100 ] || { cat "$T/$1/log"; exit 1; }
		sleep 0.1
	done
	tok=$(curl -s -d '{"email": "bench@example.com"}' \
	    "http://127.0.0.1:$port/users" | jq -r .token)
	sid=$(curl -s -H "X-Treg-Token: $tok" -d '{"name": "k", "kind": "env",
	    "value": "ghp_benchkey0123456789abcdefABCDEF"}' \
	    "http://127.0.0.1:$port/secrets" | jq -r .id)
	keyless=true
	if [ "$1" = direct ]; then
		keyless=false
	fi
	curl -sf -o /dev/null -H "X-Treg-Token: $tok" -d "$(jq -cn \
	    --arg u "https://127.0.0.1:$up" --argjson k $keyless \
	    --argjson s "$sid" '{name: "b", base_url: $u, cli: {bin: "sh",
	    enabled: true, keyless: $k, inject: [{secret_id: $s, via: "env",
	    name: "KEY"}, {secret_id: $s, via: "env",
	    name: "GH_ENTERPRISE_TOKEN"}]}}')" \
	    "http://127.0.0.1:$port/tools" || { echo "bench: no tool" >&2; exit 1; }
}

stop() {
	kill $tpid; wait $tpid 2>/dev/null || true
}

# run SCRIPT: its stdout.
run() {
	curl -s -H "X-Treg-Token: $tok" -d "$(jq -cn --arg s "$1" \
	    '{tool: "b", args: ["-c", $s], timeout_s: 300}')" \
	    "http://127.0.0.1:$port/run" > "$T/run.json"
	jq -r .stdout "$T/run.json"
	[ "$(jq -r .exit_code "$T/run.json")" = 0 ] ||
	    echo "bench: a run failed: $(jq -c . "$T/run.json" | cut -c1-600)" >&2
}

# runs_p50: p50 ms of POST /run of `true`.
runs_p50() {
	for i in $(seq "$nruns"); do
		curl -s -o /dev/null -w '%{time_total}\n' -H "X-Treg-Token: $tok" \
		    -d '{"tool": "b", "args": ["-c", "true"]}' \
		    "http://127.0.0.1:$port/run"
	done | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] * 1000 }'
}

# tool_p50 CMD: p50 ms of 20 invocations of CMD inside one run.
tool_p50() {
	run "for i in \$(seq 20); do s=\$(date +%s%N); $1 > /dev/null 2>&1 || echo fail; e=\$(date +%s%N); echo \$(((e - s) / 1000)); done" |
	    sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] / 1000 }'
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in direct keyless; do
	start $mode
	env=""
	[ $mode = direct ] && env="SSL_CERT_FILE=$P/direct-bundle.pem CURL_CA_BUNDLE=$P/direct-bundle.pem"
	set -- $(run "$env python3 $P/client.py $up $n")
	curl_ms=$(tool_p50 "$env curl -sf -H \"Authorization: Bearer \$KEY\" https://127.0.0.1:$up/x")
	gh_ms=$(tool_p50 "$env GH_HOST=127.0.0.1:$up gh api https://127.0.0.1:$up/api/v3/user")
	r=$(runs_p50)
	printf '%-8s kept-alive p50 %s ms  new connection p50 %s ms  curl %s ms  gh api /user %s ms  run p50 %s ms\n' \
	    $mode "$1" "$2" "$curl_ms" "$gh_ms" "$r"
	stop
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
kill $ngx 2>/dev/null || true
rm -rf "$T" "$P"
