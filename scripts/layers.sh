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
#                       included by the engines and store.c alone, the
#                       shared schema's (store_schema.h) by the engines
#   tregctl/            common/, tregd/tregd.h and itself
#   tregd/parent/restore.c  also the storage interface (tregd -R reads a
#                       backup's keyring rows with store_sqlite_inspect()
#                       offline, before any process runs); no other file
#                       names a header by a path with a folder in it
#   <sqlite3.h>         only in tregd/vault/store/sqlite/
#   <libpq-fe.h>        only in tregd/vault/store/pg/ and tregd/conf_db.c
#                       (libpq's connection-string grammar, no connection)
#
# A quoted include is looked up in the folders the file may see, in the
# order the compiler would; one found in none of them breaks the rule.
#
# The vault in layers, each calling its own layer or the ones below, never
# one above (read from the functions each file defines and calls):
#
#   7 vault.c           the process and its dispatch: imsgs in, handlers
#   6 vault_ctl.c       tregctl's commands, over the domain files
#   5 domain            orgs, members, me, identity, mail, tools, secrets,
#                       skills, runs, calls, egress (a run's requests),
#                       grants (policy), audit, key commands, projects
#                       and usage
#   4 rules             access, inject, mask, mask cost, deny, slots, the
#                       caches, hosts, the registry's rows, validation, the
#                       catalog, placeholders and egress lists (keyless)
#   3 crypto            the keyring (memory, database) and its commands
#   2 vault_req.c       the answers, the sends to the other processes,
#                       the request's fields, the process's state
#   1 vault_metrics.c   the counters
#   0.5 store/store.c   store.h's functions, each handed to the engine
#   0 store/sqlite/ and store/pg/, the engines: never call back up into
#                       store.c (what both need is in store.h)
#
# and nothing below vault.c but vault_req.c names an imsg.
#
# No header of common/, tregd/ or tregctl/ includes itself again through
# the headers it includes (an include circle): the line names the circle.

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
	tregd/parent/restore.c)
		echo "$d tregd common tregd:vault/store/store.h" ;;
	tregd/*/*)
		echo "$d tregd common" ;;
	tregd/*)
		echo "tregd common" ;;
	tregctl/*)
		echo "tregctl tregd:tregd.h common" ;;
	esac
}

# engine_header FILE H: 1 if H is an engine's header FILE may not name.
# The shared schema's header is the engines' alone: store.c and the vault
# above it never see SQL.
engine_header() {
	case "$2" in
	store_sqlite.h|store_pg.h)
		case "$1" in
		tregd/vault/store/*) return 1 ;;
		esac ;;
	store_schema.h)
		case "$1" in
		tregd/vault/store/sqlite/*|tregd/vault/store/pg/*) return 1 ;;
		tregd/vault/store/store_schema.[ch]) return 1 ;;
		esac ;;
	*)	return 1 ;;
	esac
	return 0
}

files=$(find common tregd tregctl -name '*.[chy]' ! -name parse.c \
    ! -name openapi_doc.c | sort)
edges=""
for f in $files; do
	dirs=$(allowed "$f")
	for h in $(sed -n 's/^#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f"); do
		found=""
		for a in $dirs; do
			case "$a" in
			*:*)	# a folder of which one header alone
				[ "${a#*:}" = "$h" ] && [ -f "${a%%:*}/$h" ] &&
				    found="${a%%:*}" ;;
			*)	case "$h" in
				*/*)	;;	# a path into another folder
				*)	[ -f "$a/$h" ] && found="$a" ;;
				esac ;;
			esac
			[ -n "$found" ] && break
		done
		if [ -z "$found" ]; then
			echo "$f: includes \"$h\", outside what it may see" \
			    "($dirs)"
			bad=1
		elif engine_header "$f" "$h"; then
			echo "$f: includes \"$h\": only the store engines" \
			    "(and store.c, their own headers) name it"
			bad=1
		fi
		case "$f" in
		*.h)	[ -n "$found" ] && edges="$edges$f ${found%%:*}/$h
" ;;
		esac
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
# Include circles among the headers: a walk from each header along its
# includes; meeting a header still on the path closes a circle.
out=$(printf '%s' "$edges" | awk '
	{ n[$1]++; to[$1, n[$1]] = $2; node[$1]; node[$2] }
	# path: the headers from the start to h, each followed by a blank.
	function walk(h, path,    i, c) {
		if (h in onpath) {
			c = substr(path, index(" " path, " " h " "))
			gsub(/ /, " -> ", c)
			c = c h
			if (!(c in said)) {
				said[c]
				printf "%s: an include circle: %s\n", h, c
			}
			return
		}
		if (h in done)
			return
		onpath[h]
		for (i = 1; i <= n[h]; i++)
			walk(to[h, i], path h " ")
		delete onpath[h]
		done[h]
	}
	END { for (h in node) walk(h, "") }')
if [ -n "$out" ]; then
	echo "$out"
	bad=1
fi

# vault_layer FILE: the layer of a file of tregd/vault/ (above), or "".
vault_layer() {
	case "$1" in
	tregd/vault/store/store.c)
		echo 0.5 ;;
	tregd/vault/store/*)
		echo 0 ;;
	tregd/vault/vault.c)
		echo 7 ;;
	tregd/vault/vault_ctl.c)
		echo 6 ;;
	tregd/vault/vault_org.c|tregd/vault/vault_member.c|\
	tregd/vault/vault_me.c|tregd/vault/vault_tool.c|\
	tregd/vault/vault_secret.c|tregd/vault/vault_skill.c|\
	tregd/vault/vault_run.c|tregd/vault/vault_call.c|\
	tregd/vault/vault_policy.c|tregd/vault/vault_audit.c|\
	tregd/vault/vault_ctl_key.c|tregd/vault/vault_identity.c|\
	tregd/vault/vault_mail.c|tregd/vault/vault_project.c|\
	tregd/vault/vault_egress.c|tregd/vault/vault_health.c|\
	tregd/vault/vault_oauth.c|tregd/vault/vault_observed.c)
		echo 5 ;;
	tregd/vault/vault_crypto.c|tregd/vault/vault_keyring.c|\
	tregd/vault/vault_keydb.c)
		echo 3 ;;
	tregd/vault/vault_req.c)
		echo 2 ;;
	tregd/vault/vault_metrics.c)
		echo 1 ;;
	tregd/vault/*.c)
		echo 4 ;;
	esac
}

vfiles=$(find tregd/vault -name '*.c' | sort)
if [ -n "$vfiles" ]; then
	out=$(for f in $vfiles; do
		l=$(vault_layer "$f")
		[ -n "$l" ] && echo "$f $l"
	done | awk '
	# The first input is "file layer" lines; then each file, twice: once
	# for the functions it defines (KNF: the name at column 0, its type
	# on the line before), once for the calls its code makes.
	FILENAME == "-" { layer[$1] = $2; next }
	FNR == 1 { pass[FILENAME]++; incomment = 0; prev = "" }
	{
		line = $0
		# Comments out (they may name any function).
		if (incomment) {
			if ((i = index(line, "*/")) == 0) { prev = ""; next }
			line = substr(line, i + 2); incomment = 0
		}
		while ((i = index(line, "/*")) > 0) {
			rest = substr(line, i + 2)
			if ((j = index(rest, "*/")) == 0) {
				line = substr(line, 1, i - 1); incomment = 1
				break
			}
			line = substr(line, 1, i - 1) " " substr(rest, j + 2)
		}
		gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
	}
	pass[FILENAME] == 1 {
		if (match(line, /^[a-z_][a-z0-9_]*\(/) && prev !~ /^static/ &&
		    prev !~ /;[ \t]*$/ && prev != "")
			def[substr(line, 1, RLENGTH - 1)] = FILENAME
		prev = line
		next
	}
	{
		f = FILENAME
		if (f != "tregd/vault/vault.c" && f != "tregd/vault/vault_req.c" &&
		    (line ~ /(^|[^a-z0-9_])imsg[a-z0-9_]*[ \t]*\(/ ||
		    line ~ /struct[ \t]+imsg([^a-z0-9_]|$)/))
			printf "%s:%d: names an imsg: only vault.c and " \
			    "vault_req.c talk to the other processes\n", f, FNR
		s = line
		while (match(s, /[a-z_][a-z0-9_]*[ \t]*\(/)) {
			name = substr(s, RSTART, RLENGTH)
			sub(/[ \t]*\($/, "", name)
			before = substr(s, 1, RSTART - 1)
			s = substr(s, RSTART + RLENGTH)
			if (before ~ /(->|\.)[ \t]*$/)
				continue	# a member, not a function

			if (!(name in def) || def[name] == f)
				continue
			d = def[name]
			if (layer[d] + 0 > layer[f] + 0)
				printf "%s:%d: calls %s() of %s, a layer above " \
				    "(%s over %s)\n", f, FNR, name, d,
				    layer[d], layer[f]
		}
	}' - $vfiles $vfiles)
	if [ -n "$out" ]; then
		echo "$out"
		bad=1
	fi
fi

[ $bad -eq 0 ] && echo "layers: every #include keeps to its layer," \
    "every vault file calls its own layer or below"
exit $bad
