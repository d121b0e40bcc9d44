#!/bin/bash
# A function run from an EXIT trap while the shell exits, as bats-core's
# bats_gather_tests_source_exit_trap does it (a subshell whose function sets
# the trap; the handler takes the traps off and calls `exit "$status"`): its
# span ends with the status it exits with (issue 27: it stayed open, and a
# handler's `exit N` with N under nine digits ended the subshell with
# another status, the one it was exiting with). Also `trap ... 0`, and the
# script's own handler calling a function, then exit.
# expect:
#   exit_trap_function.sh ERROR
#     gather OK
#     on_exit OK
#     gather OK
#     on_exit ERROR
#     on_exit OK
#     cleanup ERROR
#       helper OK
on_exit() {
  local st=$?
  trap - ERR EXIT DEBUG
  if (( st != 0 )); then echo "failed: $st"; fi
  exit "$st"
}
gather() { trap on_exit EXIT; echo "gathering"; }
( set -eET; gather )
echo "gather: $?"
( set -eET; gather; exit 5 )
echo "gather 5: $?"
( trap 'exit 12' EXIT; exit 5 )
echo "exit 12: $?"
( trap 'echo "zero: $?"' 0; exit 4 )
echo "trap 0: $?"
r=$(trap on_exit EXIT; echo "in comsub")
echo "r=$r"
helper() { echo "helper"; }
cleanup() { echo "cleanup: $?"; helper; exit 3; }
trap cleanup EXIT
echo "main"
