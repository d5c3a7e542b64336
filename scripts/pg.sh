#!/bin/sh
# A throwaway PostgreSQL for the tests (Debian postgresql-15):
#
#   pg.sh start            initdb into a new temporary directory as an
#                          unprivileged user, serve on a Unix socket in
#                          that directory only (no TCP, unless
#                          PG_TCP_PORT names a port on 127.0.0.1);
#                          prints the directory, the "host=" of every
#                          conninfo
#   pg.sh createdb DIR N   a new, empty database N (owner tregd)
#   pg.sh dropdb DIR N     drop it (connections are ended first)
#   pg.sh sql DIR SQL      run SQL in the database postgres
#   pg.sh down DIR         stop the server, keep its data
#   pg.sh up DIR           start it again (a restart: down, then up)
#   pg.sh stop DIR         stop the server and remove DIR
#
# The server trades durability for speed (fsync off): it lives as long
# as one "make check".

PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V |
    tail -n 1)}
PGUSER_OS=${PGUSER_OS:-postgres}

die() {
	echo "pg.sh: $*" >&2
	exit 1
}

# Run a PostgreSQL program as the unprivileged user (initdb refuses root).
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "$PGUSER_OS" -- "$@"
	else
		"$@"
	fi
}

pg_start() {
	[ -x "$PGBIN/initdb" ] || die "no PostgreSQL server (postgresql-15)"
	dir=$(mktemp -d /tmp/tregd-pg.XXXXXX) || die "mktemp"
	chmod 0755 "$dir"
	[ -z "${PG_TCP_PORT:-}" ] || echo "$PG_TCP_PORT" > "$dir/tcp-port"
	[ "$(id -u)" -ne 0 ] || chown "$PGUSER_OS" "$dir" || die "chown"
	as_pg "$PGBIN/initdb" -D "$dir/data" -U tregd -A trust -E UTF8 \
	    --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
	    { cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"; }
	pg_serve "$dir" ||
	    { cat "$dir/server.log" >&2; rm -rf "$dir"; die "start failed"; }
	echo "$dir"
}

# The server of DIR, started (again): on the TCP port in DIR/tcp-port
# too if there is one.
pg_serve() {
	_listen="''"
	[ -s "$1/tcp-port" ] &&
	    _listen="127.0.0.1 -c port=$(cat "$1/tcp-port")"
	as_pg "$PGBIN/pg_ctl" -D "$1/data" -l "$1/server.log" -w -s \
	    -o "-c listen_addresses=$_listen -k $1 -c fsync=off \
	    -c synchronous_commit=off -c full_page_writes=off \
	    -c max_connections=200" start
}

pg_sql() {
	_port=5432
	[ -s "$1/tcp-port" ] && _port=$(cat "$1/tcp-port")
	"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$1" -p "$_port" -U tregd \
	    -d postgres -c "$2" >/dev/null
}

case "$1" in
start)
	pg_start
	;;
createdb)
	[ $# -eq 3 ] || die "usage: pg.sh createdb DIR NAME"
	pg_sql "$2" "CREATE DATABASE \"$3\"" || die "createdb $3"
	;;
dropdb)
	[ $# -eq 3 ] || die "usage: pg.sh dropdb DIR NAME"
	pg_sql "$2" "DROP DATABASE IF EXISTS \"$3\" WITH (FORCE)" ||
	    die "dropdb $3"
	;;
sql)
	[ $# -eq 3 ] || die "usage: pg.sh sql DIR SQL"
	pg_sql "$2" "$3"
	;;
down)
	[ $# -eq 2 ] && [ -d "$2/data" ] || die "usage: pg.sh down DIR"
	as_pg "$PGBIN/pg_ctl" -D "$2/data" -m fast -w -s stop ||
	    die "stop failed"
	;;
up)
	[ $# -eq 2 ] && [ -d "$2/data" ] || die "usage: pg.sh up DIR"
	pg_serve "$2" || die "start failed"
	;;
stop)
	[ $# -eq 2 ] && [ -d "$2/data" ] || die "usage: pg.sh stop DIR"
	as_pg "$PGBIN/pg_ctl" -D "$2/data" -m fast -w -s stop
	rm -rf "$2"
	;;
*)
	die "usage: pg.sh start | createdb|dropdb DIR NAME | sql DIR SQL |" \
	    "down|up|stop DIR"
	;;
esac
