#!/bin/bash
# A subshell whose EXIT handler removes the traps and calls `exit` without a
# status: bash exits with the status the subshell was exiting with (3), and
# the spans it opened end (issue 9: they were left open, and the status
# became that of `trap -`, because running a DEBUG trap inside the handler
# overwrites what bash keeps for `exit`).
# expect:
#   subshell_exit_trap.sh OK
#     g OK
#     f ERROR
f() { sleep 0.01; exit 3; }
g() { echo g; }
(
  trap 'trap - ERR EXIT DEBUG; exit' EXIT
  g
  f
)
echo "subshell: $?"
