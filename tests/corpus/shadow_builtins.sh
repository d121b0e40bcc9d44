#!/bin/bash
# The script's own functions named local, return, shift, declare, unset,
# export, read, printf, enable, eval, mapfile: the auto layer keeps calling
# bash's own (issue 27 §3: the script's `local` and `return` ran in place of
# ours, printed into its output and looped). Through a tested failing
# function, a subshell, $(...), a sourced file and the script's EXIT trap.
# expect:
#   shadow_builtins.sh ERROR
#     f OK
#       g OK
#     h OK
#     h OK
#     source shadow_lib.source OK
#     f OK
#       g OK
#     cleanup ERROR
local() { echo "host local $*"; }
return() { echo "host return $*"; }
shift() { echo "host shift $*"; }
declare() { echo "host declare $*"; }
unset() { echo "host unset $*"; }
export() { echo "host export $*"; }
read() { echo "host read $*"; }
printf() { echo "host printf $*"; }
enable() { echo "host enable $*"; }
eval() { echo "host eval $*"; }
mapfile() { echo "host mapfile $*"; }
g() { echo "in g: $*"; false; }
f() { echo "in f"; g a b || echo "g failed"; }
h() { echo "in h"; }
f
(h; echo "sub")
v=$(h); echo "v=$v"
source ./data/shadow_lib.source
f
cleanup() { echo "cleanup"; exit 4; }
trap cleanup EXIT
echo "end"
