#!/bin/sh
# The kyua filters of make check's PostgreSQL pass: every case of every
# integration program registered in regress/integration/Kyuafile, less
# the ones listed in regress/integration/sqlite-only.  Run from regress/.
#
#   sh ../scripts/pg-cases.sh

dir=integration
progs=$(sed -n 's/^atf_test_program{name="\([a-z_]*\)"[,}].*$/\1/p' \
    "$dir/Kyuafile") || exit 1
[ -n "$progs" ] || { echo "pg-cases.sh: no programs" >&2; exit 1; }
skip=$(sed -e 's/#.*//' -e 's/[[:space:]].*//' "$dir/sqlite-only" |
    grep -v '^$')
all=$(for p in $progs; do "$dir/$p" -l | sed -n "s/^ident: /$p:/p"; done)
for s in $skip; do
	printf '%s\n' "$all" | grep -qxF "$s" ||
	    { echo "pg-cases.sh: sqlite-only names no case: $s" >&2; exit 1; }
done
for p in $progs; do
	cases=$("$dir/$p" -l | sed -n 's/^ident: //p')
	[ -n "$cases" ] || { echo "pg-cases.sh: $p lists no case" >&2; exit 1; }
	for c in $cases; do
		printf '%s\n' "$skip" | grep -qxF "$p:$c" && continue
		echo "$dir/$p:$c"
	done
done
