#!/bin/bash
# A function whose last command is external, called in a command
# substitution: bash execs that command in place of the subshell when no
# EXIT trap is set as the function is entered, and the function's span was
# left open until the sidecar stopped (issue 9). Also through a function
# that calls it, in backquotes, with a failing last command (tested by ||,
# and not), and with a process id the script prints as it would.
# expect:
#   comsub_last_external.sh OK
#     f OK
#     f OK
#     g OK
#       f OK
#     fails OK
#     fails ERROR
#     pid OK
f() { echo "in f"; cat /dev/null; }
g() { f; }
fails() { grep -q nothing /dev/null; }
pid() { sh -c 'echo $$'; }
v=$(f); echo "v=$v"
v=`f`; echo "v=$v"
v=$(g); echo "v=$v"
v=$(fails) || echo "fails: $?"
v=$(fails)
echo "after: $?"
p=$(pid); [ "$p" -gt 0 ] && echo "pid ok"
