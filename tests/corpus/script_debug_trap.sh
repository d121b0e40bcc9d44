#!/bin/bash
# The script's own DEBUG and RETURN traps, with functrace on (bats does this
# before every test): they see exactly what they see untraced ($?, $_,
# LINENO, BASH_COMMAND, FUNCNAME, the number of calls), never a command of
# ours, and the script's functions are still traced.
# expect:
#   script_debug_trap.sh OK
#     outer OK
#       inner OK
#       inner ERROR
#     helper OK
#     outer ERROR
#       inner OK
#       inner ERROR
#     late OK
set -T
n=0
trap 'n=$((n + 1)); echo "dbg $n [$BASH_COMMAND] rc=$? _=$_ line=$LINENO fn=${FUNCNAME[*]-main} at=${BASH_LINENO[*]}"' DEBUG
trap 'echo "ret from ${FUNCNAME[0]} rc=$?"' RETURN
inner() { false; }
outer() {
  echo "in outer $1"
  inner || :
  inner
  return 3
}
helper() { local x=$1; echo "helper $x"; }
outer one || echo "outer=$?"
trap -p DEBUG RETURN
helper two
trap 'echo "ERR at $LINENO"' ERR
outer three
echo "outer=$?"
trap - RETURN
trap -p
trap - DEBUG
late() { echo "late: $n"; }
late
trap - ERR
