#!/bin/bash
# exec replaces the shell: a bash started by exec takes over its spans and
# ends them with its status (run by `gwtrace run`, the root is the script);
# exec with redirections only keeps the shell.
# expect:
#   exec_tail.sh ERROR
#     setup OK
setup() { exec 3>&1; echo "fd 3 open" >&3; }
setup
exec 4>/dev/null
echo "still here"
exec bash -c 'echo "replaced by bash -c, status 5"; exit 5'
echo "not reached"
