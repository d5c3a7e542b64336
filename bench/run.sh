#!/bin/sh
# bench/run.sh: POST /run of `true` over HTTP (p50, p99, runs/s with wrk at
# 1, 2 and 4 concurrent clients) beside a bare fork+exec+wait of /bin/true,
# `bwrap --ro-bind / / true`, bwrap with the isolation a tregd run has
# (pid and ipc namespaces, private /proc and /tmp, death with its parent),
# and a minimal unsandboxed Python asyncio server of the same endpoint
# (bench/run-py/server.py), and the floor: tregd's isolation in a minimal C
# loop, 1 and 4 at once (bench/run-floor.c).  Ratios are what matters:
# every figure is measured on this machine, load generator included.
#
#   sh bench/run.sh [-v] [seconds [tregd]]  (as root: installs wrk, bubblewrap)
#
# A second tregd binary (e.g. one built from an older commit) is measured
# the same way, as "tregd (other)", for a before/after comparison.
#
# -v: then a per-stage breakdown of one client's runs, from a tregd of
# its own started with -v, in ROUNDS (default 3) rounds alternating with
# the second binary's if one is given (each process logs its share from
# clock_gettime stamps: the frontend from the order sent to the vault to
# the run accepted, to exec's result, to the answer written; the vault
# its decision and the audit row's commit; exec its own stages, the
# CLI's stamp just before execve and the init's once the CLI was reaped)
# and a keep-alive client timing each request.  What the client sees
# beyond the frontend's time is HTTP and the hops; the same client's
# GET /meta says what HTTP and the client alone take.
# Then 4 clients for a few seconds on the same tregd: how many run ends
# each commit of the vault carried.

set -e
verbose=0
if [ "${1:-}" = "-v" ]; then
	verbose=1
	shift
fi
secs=${1:-5}
other=${2:-}
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
	echo "bench: run as root (tregd's privilege separation)" >&2
	exit 1
fi
for p in wrk bubblewrap; do
	dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q "ok installed" ||
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $p >/dev/null
done
sh "$top/scripts/deps.sh" users
[ -x "$top/tregd/tregd" ] || make -C "$top" >/dev/null

T=$(mktemp -d /tmp/tregd-bench-run.XXXXXX)
chmod 0711 "$T"
pid="" ppid="" opid="" vpid=""
trap 'kill $pid $ppid $opid $vpid 2>/dev/null; wait $pid $ppid $opid $vpid 2>/dev/null; rm -rf "$T"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
oport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pyport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# -------------------------------------------------------------------
# The baseline: fork + execve + waitpid in a loop, p50/p99 in µs.
cat > "$T/forkexec.c" <<'C'
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
extern char **environ;
static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}
int main(int argc, char **argv) {
	int n = atoi(argv[1]), i, st;
	double *t = calloc(n, sizeof(*t)), sum = 0;
	struct timespec a, b;
	pid_t p;
	for (i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		if ((p = fork()) == 0) {
			execve(argv[2], argv + 2, environ);
			_exit(127);
		}
		waitpid(p, &st, 0);
		clock_gettime(CLOCK_MONOTONIC, &b);
		t[i] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
		sum += t[i];
	}
	qsort(t, n, sizeof(*t), cmp);
	printf("%.0f %.0f %.1f\n", t[n / 2], t[n * 99 / 100], n / (sum / 1e6));
	return 0;
}
C
${CC:-cc} -O2 -o "$T/forkexec" "$T/forkexec.c"
# The floor: a tregd run's isolation in a minimal C loop (bench/run-floor.c,
# with tregd's own run child filter and mounts).
${CC:-cc} -O2 -std=gnu11 -D_GNU_SOURCE -I"$top/common" -I"$top/tregd" -I"$top/tregd/exec" \
    $(pkg-config --cflags libbsd-overlay jansson) -o "$T/run-floor" \
    "$top/bench/run-floor.c" "$top/tregd/exec/exec_child.c" \
    "$top/common/libcommon.a" \
    $(pkg-config --libs libbsd-overlay libseccomp jansson)

# -------------------------------------------------------------------
# tregd with a tool whose CLI is `true`, and the Python server.
# tregd_up BINARY PORT DIR [FLAG]: a tregd with the tool, its token in $tok.
tregd_up() {
	mkdir -p "$3"
	cat > "$3/tregd.conf" <<CONF
listen on 127.0.0.1 port $2
state "$3/state"
socket "$3/tregd.sock"
signup open
run allow { "true" }
run directory "$3/runs"
run slots 16 per-user 16
CONF
	"$1" -d ${4:-} -f "$3/tregd.conf" 2> "$3/log" &
	upid=$!
	while ! curl -sf -o /dev/null "http://127.0.0.1:$2/meta"; do
		sleep 0.1
	done
	tok=$(curl -s -X POST "http://127.0.0.1:$2/users" \
	    -d '{"email": "bench@example.com"}' |
	    sed 's/.*"token":"\([^"]*\)".*/\1/')
	curl -s -o /dev/null -X POST -H "X-Treg-Token: $tok" \
	    "http://127.0.0.1:$2/secrets" \
	    -d '{"name": "k", "value": "s3cr3t-value-bench"}'
	curl -s -o /dev/null -X POST -H "X-Treg-Token: $tok" \
	    "http://127.0.0.1:$2/tools" -d '{"name": "t",
	    "base_url": "https://api.example.com", "cli": {"bin": "true",
	    "inject": [{"via": "env", "name": "MY_SECRET", "secret_id": 1}]}}'
	check=$(curl -s -X POST -H "X-Treg-Token: $tok" \
	    "http://127.0.0.1:$2/run" -d '{"tool": "t", "args": []}')
	case $check in
	*'"exit_code":0'*) ;;
	*) echo "bench: the tregd run failed: $check" >&2; exit 1 ;;
	esac
}
if [ -n "$other" ]; then
	tregd_up "$other" "$oport" "$T/other"
	opid=$upid
	otok=$tok
fi
tregd_up "$top/tregd/tregd" "$port" "$T/tregd"
pid=$upid

python3 "$top/bench/run-py/server.py" "$pyport" "$tok" true &
ppid=$!
while ! curl -sf -o /dev/null "http://127.0.0.1:$pyport/meta"; do sleep 0.1; done

# run_lua TOKEN: wrk's script of POST /run of the tool t.
run_lua() {
	cat <<LUA
wrk.method = "POST"
wrk.body = '{"tool": "t", "args": []}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Treg-Token"] = "$1"
LUA
}
run_lua "$tok" > "$T/run.lua"
# The Python server names the tool after its bin.
sed 's/"tool": "t"/"tool": "true"/' "$T/run.lua" > "$T/runpy.lua"
[ -z "$other" ] || sed "s/$tok/$otok/" "$T/run.lua" > "$T/runother.lua"

# wrk_run URL SCRIPT CONNS: "p50_us p99_us runs_per_s non2xx"
wrk_run() {
	wrk -t"$3" -c"$3" -d"${secs}s" --latency -s "$2" "$1/run" |
	    awk 'function us(v) {
		if (v ~ /us$/) return v + 0;
		if (v ~ /ms$/) return v * 1000;
		if (v ~ /s$/) return v * 1000000;
		return v }
	    $1 == "50%" { p50 = us($2) }
	    $1 == "99%" { p99 = us($2) }
	    /^Requests\/sec/ { rps = $2 }
	    /Non-2xx/ { bad = $NF }
	    END { printf "%.0f %.0f %.0f %d\n", p50, p99, rps, bad }'
}

echo "POST /run of true, ${secs}s per point ($(nproc) cores, $(uname -r))"
set -- $("$T/forkexec" 2000 /bin/true)
fe50=$1 fe99=$2 fers=$3
set -- $("$T/forkexec" 300 /usr/bin/bwrap --ro-bind / / /bin/true)
bw50=$1 bw99=$2 bwrs=$3
# The isolation-equivalent peer of a tregd run.
set -- $("$T/forkexec" 300 /usr/bin/bwrap --ro-bind / / --dev /dev \
    --proc /proc --tmpfs /tmp --unshare-pid --unshare-ipc --die-with-parent \
    /bin/true)
bi50=$1 bi99=$2 birs=$3
printf "%-34s %8s %8s %9s\n" "" "p50 µs" "p99 µs" "runs/s"
printf "%-34s %8s %8s %9s\n" "fork+exec+wait /bin/true" $fe50 $fe99 $fers
printf "%-34s %8s %8s %9s\n" "bwrap --ro-bind / / true" $bw50 $bw99 $bwrs
printf "%-34s %8s %8s %9s\n" "bwrap, tregd's isolation, true" $bi50 $bi99 $birs
for j in 1 4; do
	set -- $("$T/run-floor" -j $j -n 500 /bin/true)
	eval "fl50_$j=$1 flrs_$j=$3"
	printf "%-34s %8s %8s %9s  (CPU %s µs a run, child %s µs)\n" \
	    "floor: that isolation in C, $j loop" $1 $2 $3 $4 $5
done
for c in 1 2 4; do
	set -- $(wrk_run "http://127.0.0.1:$port" "$T/run.lua" $c)
	eval "t50_$c=$1 trs_$c=$3"
	printf "%-34s %8s %8s %9s%s\n" "tregd POST /run, $c client(s)" $1 $2 $3 \
	    "$([ "$4" -gt 0 ] && echo "  ($4 non-2xx)")"
done
for c in ${other:+1 2 4}; do
	set -- $(wrk_run "http://127.0.0.1:$oport" "$T/runother.lua" $c)
	eval "o50_$c=$1"
	printf "%-34s %8s %8s %9s%s\n" "tregd (other) POST /run, $c" $1 $2 $3 \
	    "$([ "$4" -gt 0 ] && echo "  ($4 non-2xx)")"
done
for c in 1 2 4; do
	set -- $(wrk_run "http://127.0.0.1:$pyport" "$T/runpy.lua" $c)
	eval "p50_$c=$1 prs_$c=$3"
	printf "%-34s %8s %8s %9s%s\n" "python asyncio POST /run, $c" $1 $2 $3 \
	    "$([ "$4" -gt 0 ] && echo "  ($4 non-2xx)")"
done
echo
# The targets are issue 16's.
awk -v t="$t50_1" -v f="$fe50" -v b="$bw50" -v p="$p50_1" -v i="$bi50" \
    -v o="${o50_1:-}" -v tr="$trs_4" -v pr="$prs_4" -v fl="$fl50_1" \
    -v flr="$flrs_4" 'BEGIN {
	printf "p50, 1 client: tregd / fork+exec = %.2fx (target <= 1.5x)\n", t / f
	printf "p50, 1 client: tregd / bwrap     = %.2fx\n", t / b
	printf "p50, 1 client: tregd / bwrap with tregd\047s isolation = %.2fx (target <= 0.4x)\n", t / i
	printf "p50, 1 client: tregd / python    = %.2fx (target < 1)\n", t / p
	printf "runs/s, 4 clients: tregd / python = %.2fx (target >= 1.2x)\n", tr / pr
	printf "p50, 1 client: tregd / floor     = %.2fx\n", t / fl
	printf "runs/s, 4 clients: tregd / floor (4 loops) = %.2fx\n", tr / flr
	if (o != "")
		printf "p50, 1 client: tregd - tregd (other) = %+d µs (target <= +300)\n", t - o }'
echo "tregd run slots: 16 (per user 16); the load generator shares the cores"

[ "$verbose" -eq 1 ] || exit 0

# -------------------------------------------------------------------
# -v: where one client's run goes, per stage (p50 of each, in µs), for
# this tregd and the other one if given: $ROUNDS (default 3) alternating
# rounds each of 500 runs 2 ms apart, on a tregd -v of its own per round.
rounds=${ROUNDS:-3}
# client PORT TOKEN METHOD PATH: p50 µs of 500 keep-alive requests.
client() {
	python3 - "$@" <<'PY'
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
post = sys.argv[3] == "POST"
# Bytes: http.client sends them with the head in one write (a str body
# goes in a second one, a second wake-up of the server), as wrk does.
body = b'{"tool": "t", "args": []}' if post else None
h = {"X-Treg-Token": sys.argv[2], "Content-Type": "application/json"}
t = []
for i in range(500):
    a = time.monotonic()
    c.request(sys.argv[3], sys.argv[4], body, h)
    r = c.getresponse()
    r.read()
    t.append((time.monotonic() - a) * 1e6)
    time.sleep(0.002)
t.sort()
print("%.0f" % t[len(t) // 2])
PY
}
# verbose_round BINARY NAME: one round; the logs and the client's p50s
# gather in $T/v-NAME.*.
verbose_round() {
	vport=$(free_port)
	tregd_up "$1" "$vport" "$T/v-$2-$r" -v
	vpid=$upid
	client "$vport" "$tok" POST /run >> "$T/v-$2.client"
	client "$vport" "$tok" GET /meta >> "$T/v-$2.meta"
	sleep 0.5
	kill $vpid
	wait $vpid 2>/dev/null || true
	vpid=""
	cat "$T/v-$2-$r/log" >> "$T/v-$2.log"
}
# stages NAME: "key p50" lines of the stamps of NAME's rounds.
stages() {
	sort -n "$T/v-$1.client" | awk '{ a[NR] = $1 }
	    END { print "client", a[int((NR + 1) / 2)] }' > "$T/v-$1.sum"
	sort -n "$T/v-$1.meta" | awk '{ a[NR] = $1 }
	    END { print "meta", a[int((NR + 1) / 2)] }' >> "$T/v-$1.sum"
	cat "$T/v-$1.sum" "$T/v-$1.log" | awk '
	function p50(name,    n, i, j, t, a) {
		n = cnt[name]
		if (n == 0) return -1
		for (i = 1; i <= n; i++) a[i] = v[name, i]
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return a[int((n + 1) / 2)]
	}
	NR <= 2 { one[$1] = $2; next }
	/(stages|vault|frontend) us:/ {
		sub(/.* us: /, "")
		n = split($0, f, ", ")
		for (i = 1; i <= n; i++) {
			split(f[i], kv, " ")
			v[kv[1], ++cnt[kv[1]]] = kv[2]
		}
	}
	/torn down/ {
		sub(/.*torn down /, ""); v["teardown", ++cnt["teardown"]] = $1 + 0
	}
	/pool: refill turn took/ {
		sub(/.*took /, ""); v["refill", ++cnt["refill"]] = $1 + 0
	}
	/run ends: [0-9]+ committed/ {
		sub(/.*run ends: /, ""); v["commit", ++cnt["commit"]] = $5 + 0
	}
	END {
		n = split("fe-in fe-accepted token decide audit setup " \
		    "spawn-to-execve child output answer fe-result fe-answer " \
		    "commit refill teardown", k, " ")
		for (i = 1; i <= n; i++) x[k[i]] = p50(k[i])
		x["hops-in"] = x["token"] < 0 ? -1 : x["fe-accepted"] - \
		    x["token"] - x["decide"] - x["audit"]
		x["exec"] = x["setup"] + x["spawn-to-execve"] + x["child"] + \
		    x["output"] + x["answer"]
		x["outside"] = one["client"] - x["fe-result"] - x["fe-answer"] - \
		    (x["fe-in"] < 0 ? 0 : x["fe-in"])
		x["client"] = one["client"]
		x["meta"] = one["meta"]
		for (i in x) print i, x[i]
	}'
}
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
r=1
while [ $r -le $rounds ]; do
	verbose_round "$top/tregd/tregd" this
	[ -z "$other" ] || verbose_round "$other" other
	r=$((r + 1))
done
stages this > "$T/this.p50"
if [ -n "$other" ]; then stages other > "$T/other.p50"; fi
echo
echo "Per-stage breakdown, 1 client, $rounds rounds of 500 runs 2 ms apart" \
    "(p50 of each, µs; -1: not stamped)$([ -n "$other" ] && echo ", this / other"):"
awk -v other="$other" '
FILENAME ~ /this.p50$/ { a[$1] = $2; next }
{ b[$1] = $2 }
END {
	n = split("fe-in|frontend: request in to order sent|" \
	    "fe-accepted|frontend: order sent to run accepted|" \
	    "token|  vault: request parse and token lookup|" \
	    "decide|  vault: tool, access, unseal, argv mask|" \
	    "audit|  vault: the start record committed|" \
	    "hops-in|  the two hops (accepted less the vault)|" \
	    "setup|exec setup (order in to sandbox handed)|" \
	    "spawn-to-execve|spawn to execve|" \
	    "child|child lifetime (execve to reaped)|" \
	    "output|output and redaction, to answer|" \
	    "answer|answer written to the frontend|" \
	    "exec|exec, sum of the above|" \
	    "fe-result|frontend: order sent to exec\047s result|" \
	    "fe-answer|frontend: exec\047s result to answer written|" \
	    "outside|HTTP and hops outside the frontend\047s stamps|" \
	    "meta|client p50 of GET /meta (HTTP alone)|" \
	    "client|client p50 (keep-alive, POST to answer)|" \
	    "commit|end record commit (after the answer)|" \
	    "refill|exec busy making a pool sandbox (after)|" \
	    "teardown|teardown (after the answer, off the path)", k, "|")
	for (i = 1; i < n; i += 2)
		if (other != "")
			printf "  %-46s %7d %7d\n", k[i + 1], a[k[i]], b[k[i]]
		else
			printf "  %-46s %7d\n", k[i + 1], a[k[i]]
}' "$T/this.p50" ${other:+"$T/other.p50"}

# Batching: 4 clients on a verbose tregd, the ends per commit.
vport=$(free_port)
tregd_up "$top/tregd/tregd" "$vport" "$T/verbose" -v
vpid=$upid
before=$(wc -l < "$T/verbose/log")
run_lua "$tok" > "$T/runv.lua"
wrk -t4 -c4 -d3s -s "$T/runv.lua" "http://127.0.0.1:$vport/run" >/dev/null
sleep 0.5
tail -n +$((before + 1)) "$T/verbose/log" | awk '
/run ends: [0-9]+ committed/ { sub(/.*run ends: /, ""); n++; s += $1; if ($1 > m) m = $1 }
END { if (n) printf "4 clients, 3 s: %d run ends in %d commits (%.2f a commit, at most %d)\n", s, n, s / n, m }'
