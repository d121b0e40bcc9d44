#!/bin/bash
# A script replaced by `exec` ends with the status of the program that
# replaced it (127 here), and that program's span is a child of the script's,
# which is still open while it runs (issue 9: it was OK, ended before it).
# expect:
#   exec_nested.sh OK
#     exec_child.sh ERROR
#       bash -c ERROR
here=$(dirname "$0")
bash "$here/data/exec_child.sh"
echo "child status: $?"
