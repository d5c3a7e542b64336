#!/bin/sh
# layers.sh [DIR]: the include rules of the tree (README, "Layout"), read
# from the #include lines of DIR (default: the repository).  Prints one
# line per broken rule and exits 1 if there is any.
#
#   common/             includes only common/
#   tregd/*.[chy]       (the leaves) common/ and tregd/
#   tregd/P/...         common/, tregd/ and its own folder P, never
#                       another process's (P: parent frontend vault exec
#                       relay)
#   tregd/vault/store/  the storage interface: the engines' headers are
#                       included by the engines and store.c alone
#   tregctl/            common/, tregd/tregd.h and itself
#   <sqlite3.h>         only in tregd/vault/store/sqlite/
#   <libpq-fe.h>        only in tregd/vault/store/pg/ and tregd/conf_db.c
#                       (libpq's connection-string grammar, no connection)
#
# A quoted include is looked up in the folders the file may see, in the
# order the compiler would; one found in none of them breaks the rule.

top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 2
bad=0

# allowed FILE: the folders FILE's quoted includes may come from.
allowed() {
	d=$(dirname "$1")
	case "$1" in
	common/*)
		echo "common" ;;
	tregd/vault/store/sqlite/*|tregd/vault/store/pg/*)
		echo "$d tregd/vault/store tregd common" ;;
	tregd/vault/store/*)
		echo "tregd/vault/store tregd/vault/store/sqlite \
		    tregd/vault/store/pg tregd common" ;;
	tregd/vault/*)
		echo "tregd/vault tregd/vault/store tregd common" ;;
	tregd/*/*)
		echo "$d tregd common" ;;
	tregd/*)
		echo "tregd common" ;;
	tregctl/*)
		echo "tregctl tregd:tregd.h common" ;;
	esac
}

# engine_header FILE H: 1 if H is an engine's header FILE may not name.
engine_header() {
	case "$2" in
	store_sqlite.h|store_pg.h) ;;
	*) return 1 ;;
	esac
	case "$1" in
	tregd/vault/store/*) return 1 ;;
	esac
	return 0
}

files=$(find common tregd tregctl -name '*.[chy]' ! -name parse.c \
    ! -name openapi_doc.c | sort)
for f in $files; do
	dirs=$(allowed "$f")
	for h in $(sed -n 's/^#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f"); do
		found=""
		for a in $dirs; do
			case "$a" in
			*:*)	# a folder of which one header alone
				[ "${a#*:}" = "$h" ] && [ -f "${a%%:*}/$h" ] &&
				    found="${a%%:*}" ;;
			*)	[ -f "$a/$h" ] && found="$a" ;;
			esac
			[ -n "$found" ] && break
		done
		if [ -z "$found" ]; then
			echo "$f: includes \"$h\", outside what it may see" \
			    "($dirs)"
			bad=1
		elif engine_header "$f" "$h"; then
			echo "$f: includes \"$h\": only the store engines and" \
			    "store.c name an engine"
			bad=1
		fi
	done
	for h in $(sed -n 's/^#[ \t]*include[ \t]*<\(sqlite3\.h\|libpq-fe\.h\)>.*/\1/p' "$f"); do
		case "$h:$f" in
		sqlite3.h:tregd/vault/store/sqlite/*)
			;;
		libpq-fe.h:tregd/vault/store/pg/*|libpq-fe.h:tregd/conf_db.c)
			;;
		*)	echo "$f: includes <$h> outside its store engine"
			bad=1 ;;
		esac
	done
done
[ $bad -eq 0 ] && echo "layers: every #include keeps to its layer"
exit $bad
