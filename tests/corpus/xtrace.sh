#!/bin/bash
# set -x output (stderr) is unchanged: nothing of ours shows, in functions,
# subshells, traps, or after set +x / set -x again.
# expect:
#   xtrace.sh OK
#     f OK
#       g OK
#       g OK
#     f OK
#       g OK
#       g OK
PS4='+ ${FUNCNAME[0]:-main}:$LINENO: '
g() { local v="$1"; echo "g $v"; }
f() { g "$@"; v=$(g sub); }
set -x
f one
trap 'echo trapped' EXIT
x=$(echo cmdsub)
( echo subshell )
set +x
echo quiet
set -x
f two
: "$_"
