# Shared helpers for the integration tests: a real tregd on a free loopback
# port with its own state, socket and run directories, and curl to talk to
# it.  Source it from an atf-sh test program:  . "$(atf_get_srcdir)/lib.sh"

TOP=$(cd "$(atf_get_srcdir)/../.." && pwd)
TREGD="$TOP/tregd/tregd"
TREGCTL="$TOP/tregctl/tregctl"

# A free TCP port on 127.0.0.1.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# tregd_start [config lines...]: write a configuration, start tregd -d in
# the background and wait until GET /meta answers.  Sets T (the test's
# directory), PORT, URL, SOCK, CONF, LOG, PID.
tregd_start() {
	T=$(mktemp -d /tmp/tregd-test.XXXXXX)
	chmod 0711 "$T"
	echo "$T" > tregd-test-dir
	PORT=$(free_port)
	URL="http://127.0.0.1:$PORT"
	SOCK="$T/tregd.sock"
	CONF="$T/tregd.conf"
	LOG="$T/tregd.log"
	cat > "$CONF" <<CONF
listen on 127.0.0.1 port $PORT
state "$T/state"
socket "$SOCK"
signup open
relay allow-private yes
run allow { "sh", "echo", "true", "false", "cat", "sleep", "treg-nonexistent-bin-xyz" }
run directory "$T/runs"
run timeout 30
CONF
	for line in "$@"; do
		echo "$line" >> "$CONF"
	done
	tregd_launch
}

# The database engine of this pass of make check: "sqlite" (the default)
# or "pg" (kyua -v test_suites.tregd.engine=pg, with pg_host the socket
# directory of scripts/pg.sh).
tregd_engine() {
	atf_config_get engine sqlite
}

# The "database postgresql" line for $CONF: a fresh database per daemon,
# or the one named by PG_DB (several hosts on one database).
tregd_pg_line() {
	pg_host=$(atf_config_get pg_host)
	if [ -z "${PG_DB:-}" ]; then
		PG_DB=$(basename "$T" | tr -c 'A-Za-z0-9\n' '_')
		sh "$TOP/scripts/pg.sh" createdb "$pg_host" "$PG_DB" ||
		    atf_fail "cannot create database $PG_DB"
		echo "$PG_DB" >> "$T/pg-dbs"
	fi
	echo "database postgresql \"host=$pg_host user=tregd dbname=$PG_DB\""
}

# tregd_sql SQL: SQL on the running daemon's database, whichever engine
# this pass uses; one "a|b" line per row.  For what the API cannot
# reach (expiring an invite, planting a row): keep it to SQL both
# engines speak.
tregd_sql() {
	if [ "$(tregd_engine)" = pg ]; then
		psql -X -q -At -v ON_ERROR_STOP=1 -d "$(sed -n \
		    's/^database postgresql "\(.*\)"$/\1/p' "$CONF")" -c "$1"
	else
		sqlite3 -cmd ".timeout 5000" "$T/state/tregd.db" "$1"
	fi
}

# Run users of the suite's daemons: a block of RUN_BLOCK uids of the
# default range 61000-61999 per daemon, held by a lock directory under
# /tmp/tregd-test-uids while its test directory lives, so that daemons
# running at once (kyua parallelism, other checkouts) never share a run
# uid nor the run cgroups named after it.  Block 0 (61000-61063) is left
# to daemons on the default range (make run), whose first runs take it.
RUN_BLOCK=64
RUN_BLOCKS=15
RUN_LOCKS=/tmp/tregd-test-uids

# run_users_take DIR: print the "run users" line of the daemon whose
# directory is DIR, taking a free block (one a lock whose owner's
# directory is gone is free again).
run_users_take() {
	if [ -f "$1/run-users" ]; then
		cat "$1/run-users"
		return 0
	fi
	mkdir -p "$RUN_LOCKS"
	_rw=0
	while [ $_rw -lt 300 ]; do
		_rk=1
		while [ $_rk -lt $RUN_BLOCKS ]; do
			_rl="$RUN_LOCKS/$_rk"
			if mkdir "$_rl" 2>/dev/null; then
				echo "$1" > "$_rl/owner"
				echo "$_rl" > "$1/run-users.lock"
				_rf=$((61000 + _rk * RUN_BLOCK))
				echo "run users $_rf-$((_rf + RUN_BLOCK - 1))" |
				    tee "$1/run-users"
				return 0
			fi
			run_users_reclaim "$_rl" || _rk=$((_rk + 1))
		done
		_rw=$((_rw + 1))
		sleep 0.1
	done
	atf_fail "no free block of run users in $RUN_LOCKS"
}

# run_users_reclaim LOCK: remove LOCK if its owner is gone (under a mutex,
# so that a fresh lock taken meanwhile stays); 0 if done.
run_users_reclaim() {
	_ro=$(cat "$1/owner" 2>/dev/null)
	[ -n "$_ro" ] && run_users_gone "$_ro" || return 1
	mkdir "$1/reclaim" 2>/dev/null || return 1
	if [ "$(cat "$1/owner" 2>/dev/null)" = "$_ro" ] && run_users_gone "$_ro"
	then
		rm -rf "$1"
		return 0
	fi
	rmdir "$1/reclaim"
	return 1
}

# run_users_gone DIR: the test of DIR is over: DIR is gone, or its daemon
# died more than ten minutes ago (a run of kyua killed before the
# cleanup), or it never started one and its lock is that old.
run_users_gone() {
	[ -d "$1" ] || return 0
	if [ ! -f "$1/tregd.pid" ]; then
		[ -f "$1/run-users" ] && [ -n "$(find "$1/run-users" -mmin +10)" ]
		return
	fi
	! alive "$(cat "$1/tregd.pid")" &&
	    [ -n "$(find "$1/tregd.pid" -mmin +10)" ]
}

# run_users_free DIR: give back the block of DIR's daemon, once stopped.
run_users_free() {
	[ -f "$1/run-users.lock" ] || return 0
	_rl=$(cat "$1/run-users.lock")
	[ "$(cat "$_rl/owner" 2>/dev/null)" = "$1" ] && rm -rf "$_rl"
	rm -f "$1/run-users.lock"
}

# The run users of the daemon of $CONF (the default without it): sets
# RUN_FIRST and RUN_LAST.
run_users_range() {
	RUN_FIRST=61000 RUN_LAST=61999
	_r=$(sed -n 's/^run users \([0-9]*-[0-9]*\)$/\1/p' \
	    "${CONF:-/dev/null}" 2>/dev/null | tail -1)
	[ -z "$_r" ] || { RUN_FIRST=${_r%-*}; RUN_LAST=${_r#*-}; }
}

# alive PID: PID is a process that has not exited (a zombie has: an
# orphaned daemon waits for init to reap it).
alive() {
	[ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' \
	    "/proc/$1/status" 2>/dev/null
}

# Start tregd on the configuration already in $CONF.
tregd_launch() {
	if [ "$(tregd_engine)" = pg ] && ! grep -q '^database ' "$CONF"; then
		tregd_pg_line >> "$CONF"
	fi
	if ! grep -q '^run users ' "$CONF"; then
		run_users_take "$T" >> "$CONF"
	fi
	_tries=0
	while ! tregd_spawn; do
		# free_port gave the port to a test running beside this one
		# too, and its daemon took it first: another port.
		_tries=$((_tries + 1))
		[ $_tries -lt 5 ] || atf_fail "no free port after 5 tries"
		_np=$(free_port)
		sed -i "s/ port $PORT\$/ port $_np/" "$CONF"
		URL=$(echo "$URL" | sed "s/:$PORT\$/:$_np/")
		PORT=$_np
	done
}

# tregd_spawn: start tregd -d on $CONF, wait until GET /meta answers from
# it (its parent holds the listening socket of $PORT: another daemon may
# answer there first); 1 if the port was taken, its lines left out of
# the log.
tregd_spawn() {
	_logsize=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
	# Sanitizer builds: LeakSanitizer cannot read /proc inside a chroot,
	# so leaks are checked by the unit tests, not in the daemon.
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	    ${TREGD_ENV:-} "$TREGD" -d -f "$CONF" >> "$LOG" 2>&1 &
	PID=$!
	echo "$PID" > "$T/tregd.pid"
	i=0
	until curl -sf -o /dev/null "$URL/meta" &&
	    ss -Htlnp "sport = :$PORT" | grep -q "pid=$PID,"; do
		i=$((i + 1))
		if ! alive "$PID" && tail -n 3 "$LOG" |
		    grep -q "port $PORT: Address already in use"; then
			wait "$PID"
			truncate -s "$_logsize" "$LOG"
			return 1
		fi
		if [ $i -gt 200 ] || ! alive "$PID"; then
			cat "$LOG" >&2
			atf_fail "tregd did not start"
		fi
		sleep 0.05
	done
}

# Stop tregd and remove its directory; safe to call from a cleanup.
tregd_stop() {
	[ -f tregd-test-dir ] || return 0
	T=$(cat tregd-test-dir)
	if [ -f "$T/tregd.pid" ]; then
		pid=$(cat "$T/tregd.pid")
		kill -TERM "$pid" 2>/dev/null
		i=0
		while alive "$pid" && [ $i -lt 500 ]; do
			sleep 0.02
			i=$((i + 1))
		done
		kill -KILL "$pid" 2>/dev/null
	fi
	if [ -f "$T/pg-dbs" ]; then
		while read -r db; do
			sh "$TOP/scripts/pg.sh" dropdb \
			    "$(atf_config_get pg_host)" "$db"
		done < "$T/pg-dbs"
		PG_DB=		# the next tregd_start makes a fresh one
	fi
	run_users_free "$T"
	rm -rf "$T"
	rm -f tregd-test-dir
}

# api METHOD PATH [JSON [TOKEN]]: sets STATUS and writes the body to
# $PWD/body; TOKEN defaults to $TOKEN.  BODY holds the body too.
api() {
	_m=$1 _p=$2 _d=${3:-} _t=${4:-${TOKEN:-}}
	set -- -s -o body -w '%{http_code}' -X "$_m" \
	    -H 'Content-Type: application/json'
	[ -n "$_t" ] && set -- "$@" -H "X-Treg-Token: $_t"
	[ -n "$_d" ] && set -- "$@" --data-binary "$_d"
	STATUS=$(curl "$@" "$URL$_p")
	BODY=$(cat body)
}

# expect_status CODE: the last api call answered CODE.
expect_status() {
	[ "$STATUS" = "$1" ] ||
	    atf_fail "expected HTTP $1, got $STATUS: $BODY"
}

# expect_detail PHRASE: the error detail contains PHRASE.
expect_detail() {
	jq -e --arg p "$1" '.detail | contains($p)' body >/dev/null ||
	    atf_fail "expected detail containing '$1', got: $BODY"
}

# jget FILTER: a jq filter over the last body, raw output.
jget() {
	jq -r "$1" body
}

# new_user EMAIL: sign up and print the token.
new_user() {
	api POST /users "{\"email\": \"$1\"}" ""
	expect_status 200
	jget .token
}

# The daemon log must never carry a secret or a token.
expect_not_in_log() {
	if grep -qF -- "$1" "$LOG"; then
		atf_fail "the daemon log contains '$1'"
	fi
}

# runs_left DIR: what is left in a run directory base but the CA bundle
# exec keeps there for every run (made at its start, not a run's).
runs_left() {
	ls -A "$1" | grep -vx 'ca-bundle.pem'
}

# run_procs PATTERN: pids of run processes whose command line matches the
# awk regular expression PATTERN.  Under a root daemon a run has a uid of
# the daemon's "run users" (run_users_range); otherwise the daemon's own
# user.
run_procs() {
	if [ "$(id -u)" -eq 0 ]; then
		run_users_range
		ps -eo pid=,uid=,args= | awk -v p="$1" -v f="$RUN_FIRST" \
		    -v l="$RUN_LAST" '$2 >= f && $2 <= l && $0 ~ p { print $1 }'
	else
		pgrep -u "$(id -un)" -f "$1"
	fi
}

# expect_no_run_process PATTERN: within 2 s no run process matches.
expect_no_run_process() {
	i=0
	while [ -n "$(run_procs "$1")" ]; do
		i=$((i + 1))
		[ $i -lt 20 ] || atf_fail "a run process survived: $(run_procs \
		    "$1" | tr "\n" " ")"
		sleep 0.1
	done
}

# upstream_start [tls]: the local upstream of the relay tests
# (relay_upstream.py) on a free loopback port; sets UP (its URL) and
# UP_PORT.  With tls: HTTPS under a throwaway CA, $T/ca.pem, made here.
upstream_start() {
	_f="$T/up$$.port"
	rm -f "$_f"
	if [ "${1:-}" = tls ]; then
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 \
		    -subj "/CN=tregd test CA" -keyout "$T/ca.key" \
		    -out "$T/ca.pem" >/dev/null 2>&1 || atf_fail "openssl CA"
		openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
		    -keyout "$T/up.key" -out "$T/up.csr" >/dev/null 2>&1 ||
		    atf_fail "openssl key"
		printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' \
		    > "$T/up.ext"
		openssl x509 -req -in "$T/up.csr" -CA "$T/ca.pem" \
		    -CAkey "$T/ca.key" -CAcreateserial -days 2 \
		    -extfile "$T/up.ext" -out "$T/up.pem" >/dev/null 2>&1 ||
		    atf_fail "openssl certificate"
		python3 "$TOP/regress/integration/relay_upstream.py" "$_f" \
		    "$T/up.pem" "$T/up.key" &
		_s=https
	else
		python3 "$TOP/regress/integration/relay_upstream.py" "$_f" &
		_s=http
	fi
	echo $! >> "$T/upstream.pids"
	_i=0
	while [ ! -s "$_f" ]; do
		_i=$((_i + 1))
		[ $_i -lt 100 ] || atf_fail "the upstream did not start"
		sleep 0.05
	done
	UP_PORT=$(cat "$_f")
	UP="$_s://127.0.0.1:$UP_PORT"
}

# upstream_stop: from a cleanup, before tregd_stop.
upstream_stop() {
	[ -f tregd-test-dir ] || return 0
	_t=$(cat tregd-test-dir)
	[ -f "$_t/upstream.pids" ] || return 0
	while read -r _p; do
		kill "$_p" 2>/dev/null
	done < "$_t/upstream.pids"
}

# runs_settled [TOKEN]: GET /runs once the newest run is no longer
# "running": a server run's end is appended in its worker's next batch,
# a moment after its answer, and another vault worker may answer the
# read.  Up to 5 s; BODY and body hold the last read.
runs_settled() {
	_n=0
	while :; do
		api GET /runs "" "${1:-$TOKEN}"
		jq -e '.[0].outcome != "running"' body >/dev/null && return 0
		_n=$((_n + 1))
		[ $_n -lt 50 ] || return 0
		sleep 0.1
	done
}

# calls_settled [TOKEN]: GET /calls once the newest call has its end (a
# status or a refusal): the end of a relayed call is appended a moment
# after its answer, and another vault worker may answer the read.  Up to
# 5 s; BODY and body hold the last read.
calls_settled() {
	_n=0
	while :; do
		api GET /calls "" "${1:-$TOKEN}"
		jq -e '.[0] | .status_code != null or .refused_by != null' \
		    body >/dev/null && return 0
		_n=$((_n + 1))
		[ $_n -lt 50 ] || return 0
		sleep 0.1
	done
}
