#!/bin/sh
# Install what tregd needs to build and test, when run as root on Debian:
# the packages, the system users and /var/empty.  As another user it only
# says what is missing.  "deps.sh users" does the users alone.

PKGS="build-essential pkg-config byacc libevent-dev libjansson-dev
libsqlite3-dev libsodium-dev libbsd-dev libseccomp-dev libatf-dev atf-sh
kyua mandoc curl jq sqlite3 procps iproute2 util-linux python3 xxd
systemd python3-jsonschema libpcre2-dev
libssl-dev openssl clang libclang-rt-14-dev libpq-dev postgresql-15 zlib1g-dev
python3-prometheus-client gh awscli"
USERS="_tregd _tregvault _tregrelay"

need_pkgs() {
	missing=""
	for p in $PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		    grep -q "ok installed" || missing="$missing $p"
	done
	echo $missing
}

add_users() {
	[ -d /var/empty ] || install -d -m 0755 -o root -g root /var/empty
	for u in $USERS; do
		id "$u" >/dev/null 2>&1 && continue
		useradd --system --no-create-home --home-dir /var/empty \
		    --shell /usr/sbin/nologin --user-group "$u" ||
		    { echo "deps: cannot create user $u" >&2; exit 1; }
	done
}

if [ "$(id -u)" -ne 0 ]; then
	m=$(need_pkgs)
	[ -z "$m" ] || echo "deps: not root; missing packages:$m" >&2
	exit 0
fi

if [ "$1" = users ]; then
	add_users
	exit 0
fi

m=$(need_pkgs)
if [ -n "$m" ]; then
	echo "deps: installing$m"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || exit 1
	apt-get install -y -qq $m || exit 1
fi
add_users
