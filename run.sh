#!/bin/sh
# make run: a development tregd in the foreground on 127.0.0.1:8790, state
# under ./run/, open signup.  As root it runs fully privilege-separated
# (the system users are created if missing); as another user it runs the
# same processes without chroot or uid changes.  PORT= changes the port;
# RUNDIR= the directory of the state, configuration and control socket.

set -e
top=$(pwd)
port=${PORT:-8790}
dir=${RUNDIR:-$top/run}
case $port in
''|*[!0-9]*) echo "make run: PORT must be a number, not '$port'" >&2; exit 1 ;;
esac
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ "$(id -u)" -eq 0 ]; then
	sh "$top/scripts/deps.sh" users
fi
# As root, run children (uids of run users) must be able to reach their
# directory, and the checkout may sit under a private home: keep it in
# /var/tmp, where it must be root's.  Another user's children run as that
# user: their directory stays with the state, and never collides with
# root's (tregd would refuse a run directory root does not own, and a
# normal user cannot list root's).
if [ "$(id -u)" -eq 0 ]; then
	rundir=/var/tmp/tregd-dev-runs-$port
else
	rundir="$dir/runs"
fi
cat > "$dir/tregd.conf" <<CONF
# Development configuration written by "make run".
listen on 127.0.0.1 port $port
state "$dir/state"
socket "$dir/tregd.sock"
signup open
relay allow-private yes
run allow { "sh", "echo", "true", "cat", "curl" }
run directory "$rundir"
CONF
cat <<MSG
tregd: starting on http://127.0.0.1:$port (state in $dir/state)

Create a user and keep the token it prints (shown once):
  curl -s -X POST http://127.0.0.1:$port/users -d '{"email": "you@example.com"}'
Then, for instance:
  curl -s -H "X-Treg-Token: TOKEN" http://127.0.0.1:$port/tools
The operator's tool:
  ./tregctl/tregctl -s $dir/tregd.sock show status

Stop with ^C.
MSG
exec "$top/tregd/tregd" -d -f "$dir/tregd.conf"
