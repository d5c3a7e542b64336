#!/bin/sh
# make run: a development tregd in the foreground on 127.0.0.1:8790, state
# under ./run/, open signup.  As root it runs fully privilege-separated
# (the system users are created if missing); as another user it runs the
# same processes without chroot or uid changes.

set -e
top=$(pwd)
mkdir -p run
if [ "$(id -u)" -eq 0 ]; then
	sh scripts/deps.sh users
fi
# As root, run children (uids of run users) must be able to reach their
# directory, and the checkout may sit under a private home: keep it in
# /var/tmp, where it must be root's.  Another user's children run as that
# user: their directory stays with the state, and never collides with
# root's (tregd would refuse a run directory root does not own, and a
# normal user cannot list root's).
if [ "$(id -u)" -eq 0 ]; then
	rundir=/var/tmp/tregd-dev-runs
else
	rundir="$top/run/runs"
fi
cat > run/tregd.conf <<CONF
# Development configuration written by "make run".
listen on 127.0.0.1 port 8790
state "$top/run/state"
socket "$top/run/tregd.sock"
signup open
run allow { "sh", "echo", "true", "cat" }
run directory "$rundir"
CONF
cat <<MSG
tregd: starting on http://127.0.0.1:8790 (state in $top/run/state)

Create a user and keep the token it prints (shown once):
  curl -s -X POST http://127.0.0.1:8790/users -d '{"email": "you@example.com"}'
Then, for instance:
  curl -s -H "X-Treg-Token: TOKEN" http://127.0.0.1:8790/tools
The operator's tool:
  ./tregctl/tregctl -s $top/run/tregd.sock show status

Stop with ^C.
MSG
exec ./tregd/tregd -d -f run/tregd.conf
