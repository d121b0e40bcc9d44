#!/bin/bash
# Scripts that unset or make readonly things: variables, functions,
# FUNCNAME, TRACEPARENT, IFS games, set -f, noclobber.
# expect:
#   unset_readonly.sh OK
#     early OK
#     helper OK
#     helper OK
#     late OK
early() { echo "early"; }
helper() { echo "helper ${1-}"; }
early
readonly CONFIG=/etc/example
readonly -f helper
helper 1
unset -f early
declare -F early >/dev/null || echo "early is gone"
unset TRACEPARENT
readonly TRACEPARENT=00-00000000000000000000000000000000-0000000000000000-00
helper 2
set -o noclobber
set -f
IFS=:
words="a:b:c"
for w in $words; do echo "word $w"; done
unset IFS
late() { echo "late *"; }
late
CONFIG=/tmp 2>/dev/null || echo "cannot change readonly"
echo "end"
