#!/bin/sh
# bench/scale.sh: does the API's cost stay flat as the history grows?
# p50 latency of GET /runs?limit=50, GET /tools/by-name/X and GET /tools
# (1,000 tools) on an empty database and on one with 1,000,000 audit
# rows, 10,000 tools in one org and 1,000 orgs; then GET /tools/by-name/X
# while another client polls /runs (the owner's, an index walk, and an
# agent's allowed no tool, an empty page the store answers without
# walking the history, once a slow request the other vault workers kept
# away from the rest).  The
# history is written straight into the database while tregd is stopped
# (sqlite3 CLI, keeping the WAL).
#
# "uncached" requests differ by a query string the route ignores, so the
# vault's listing cache never answers them.
#
#   sh bench/scale.sh [requests] [vault workers]  (default 200, 2)
#   TREGD=path/to/tregd PORT=N sh bench/scale.sh    (another build, port)

set -e
n=${1:-200}
workers=${2:-2}
top=$(cd "$(dirname "$0")/.." && pwd)
tregd=${TREGD:-$top/tregd/tregd}
command -v sqlite3 >/dev/null || { echo "bench: needs sqlite3" >&2; exit 1; }

T=$(mktemp -d /tmp/tregd-scale.XXXXXX)
chmod 0711 "$T"
port=${PORT:-${SCALE_PORT:-18991}}
url="http://127.0.0.1:$port"
cat > "$T/tregd.conf" <<CONF
listen on 127.0.0.1 port $port
state "$T/state"
socket "$T/tregd.sock"
signup open
run directory "$T/runs"
vault workers $workers
CONF
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$T"' EXIT

start() {
	"$tregd" -d -f "$T/tregd.conf" 2>> "$T/log" &
	pid=$!
	while ! curl -sf -o /dev/null "$url/meta"; do sleep 0.1; done
}
stop() {
	kill $pid
	while kill -0 $pid 2>/dev/null; do sleep 0.1; done
	pid=
}
sq() {
	sqlite3 -cmd '.output /dev/null' -cmd '.filectrl persist_wal 1' \
	    -cmd '.output stdout' "$T/state/tregd.db" "$@"
}
# p50 PATH [uncached]: the median of n requests, in ms.
p50() {
	i=0
	while [ $i -lt $n ]; do
		q=
		[ -z "$2" ] || q="?uncached=$i"
		curl -s -o /dev/null -w '%{time_total}\n' \
		    -H "X-Treg-Token: $tok" "$url$1$q"
		i=$((i + 1))
	done | sort -n | awk '{ t[NR] = $1 } END {
	    printf "%.2f", t[int((NR + 1) / 2)] * 1000 }'
}
figures() {
	echo "$1: GET /runs?limit=50 $(p50 '/runs?limit=50') ms," \
	    "GET /tools/by-name/tool7 $(p50 /tools/by-name/tool7) ms," \
	    "GET /tools $(p50 /tools) ms," \
	    "GET /tools uncached $(p50 /tools 1) ms"
}

start
tok=$(curl -s -X POST "$url/users" -d '{"email": "scale@example.com"}' |
    sed 's/.*"token":"\([^"]*\)".*/\1/')
agent=$(curl -s -X POST -H "X-Treg-Token: $tok" "$url/orgs/1/agents" \
    -d '{"name": "poller", "tool_access": []}' |
    sed 's/.*"token":"\([^"]*\)".*/\1/')
i=0
while [ $i -lt 1000 ]; do
	curl -s -o /dev/null -X POST -H "X-Treg-Token: $tok" "$url/tools" \
	    -d "{\"name\": \"tool$i\", \"base_url\": \"https://api$i.example.com/v1\", \"cli\": {\"bin\": \"gh\"}}"
	i=$((i + 1))
done
figures "empty history, 1,000 tools"
echo "vault workers $workers"
stop

# 1,000 orgs, 9,000 more tools in a second org (10,000 in one org would
# change GET /tools of the first), 500,000 runs and 500,000 grants.
sq <<'SQL' >/dev/null
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
INSERT INTO orgs (slug, name, created_at)
    SELECT 'org' || i, 'Org ' || i, '2026-01-01T00:00:00Z' FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
INSERT INTO tools (org_id, name, owner_id, base_url, host, created_at)
    SELECT 2, 'big' || i, 1, 'https://big.example.com', 'big.example.com',
    '2026-01-01T00:00:00Z' FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500000)
INSERT INTO runs (org_id, user_id, user_email, tool, argv, created_at)
    SELECT 1 + (i % 3 = 0), 1, 'scale@example.com', 'tool7', '["x"]',
    strftime('%Y-%m-%dT%H:%M:%SZ', 1600000000 + i, 'unixepoch') FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500000)
INSERT INTO calls (org_id, user_id, user_email, tool_name, kind, action,
    argv, created_at)
    SELECT 1 + (i % 3 = 0), 1, 'scale@example.com', 'tool7', 'local_run',
    'GRANT', '["x"]', strftime('%Y-%m-%dT%H:%M:%SZ', 1600000000 + i,
    'unixepoch') FROM n;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
start
figures "1,000,000 audit rows, 10,000 tools in one org, 1,000 orgs"
# poll TOKEN WHAT: GET /tools/by-name/tool7 while TOKEN polls /runs.
poll() {
	rm -f "$T/stop"
	( while [ ! -f "$T/stop" ]; do
		curl -s -o /dev/null -H "X-Treg-Token: $1" "$url/runs?limit=50"
	done ) &
	poller=$!
	echo "while $2 polls /runs: GET /tools/by-name/tool7" \
	    "$(p50 /tools/by-name/tool7) ms"
	touch "$T/stop"
	wait $poller
}
poll "$tok" "the owner"
slow=$(n=5; tok=$agent; p50 '/runs?limit=50')
poll "$agent" "an agent allowed no tool ($slow ms a poll)"
