#!/bin/bash
# Background jobs, $!, wait and wait's status. (Jobs that run at the same
# time are listed by name, then status.)
# expect:
#   background.sh OK
#     job ERROR
#     job OK
#     job OK
tmp=${TMPDIR:-/tmp}/gwtrace-bg-$$
job() { : >"$tmp.started.$1"; sleep "0.0$1"; echo "job $1 done"; return "$2"; }
job 5 0 >"$tmp.out" &
first=$!
until [[ -e $tmp.started.5 ]]; do sleep 0.01; done
job 1 3 >/dev/null &
second=$!
wait "$first"; echo "first: $?"
wait "$second"; echo "second: $?"
cat "$tmp.out"
rm -f "$tmp".*
{ sleep 0.02; echo "group in background"; } &
wait
[[ $first =~ ^[0-9]+$ ]] && echo "\$! is a pid"
kill -0 "$first" 2>/dev/null || echo "first is gone"
job 1 0
rm -f "$tmp".*
