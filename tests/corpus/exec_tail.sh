#!/bin/bash
# exec replaces the shell: the script's spans end there (a bash started by
# exec ends them); exec with redirections only keeps the shell.
# expect:
#   exec_tail.sh OK
#     setup OK
#     bash -c ERROR
setup() { exec 3>&1; echo "fd 3 open" >&3; }
setup
exec 4>/dev/null
echo "still here"
exec bash -c 'echo "replaced by bash -c, status 5"; exit 5'
echo "not reached"
