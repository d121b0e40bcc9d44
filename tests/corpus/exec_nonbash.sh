#!/bin/bash
# A script replaced by a program that is not bash (pyenv's shims do
# `exec pyenv exec python`; here dash) runs no EXIT trap of ours: the sidecar
# ends its spans when the process is gone, UNSET (the program's outcome is
# not bash's to know; its status is still the process's, unchanged), with
# process.exec=true and the program's name when it saw it run (issue 9:
# they stayed open until the sidecar stopped). The pause lets it look.
# expect:
#   exec_nonbash.sh OK
#     exec_sh.sh UNSET
#       prepare UNSET
here=$(dirname "$0")
bash "$here/data/exec_sh.sh"
echo "child status: $?"
sleep 1
