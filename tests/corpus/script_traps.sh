#!/bin/bash
# The script's own ERR, EXIT, RETURN, DEBUG and signal traps keep working,
# trap -p shows exactly what the script set, and the EXIT handler sees $?.
# expect:
#   script_traps.sh ERROR
#     work ERROR
#     helper OK
set -E
trap 'echo "ERR: [$BASH_COMMAND] status=$? line=$LINENO in ${FUNCNAME[0]:-main}"' ERR
trap 'rc=$?; echo "EXIT: status=$rc"; trap -p EXIT' EXIT
trap 'echo "USR1 caught"' USR1
trap -p
trap -p EXIT USR1 ERR
echo "---"
work() { echo "working"; false; echo "after false"; return 4; }
work
echo "work=$?"
kill -USR1 $$
echo "--- RETURN trap"
trap 'echo "RETURN from ${FUNCNAME[0]}"' RETURN
trap -p RETURN
helper() { :; }
helper
trap - RETURN
echo "--- DEBUG trap"
count=0
trap 'count=$((count + 1))' DEBUG
a=1
b=2
trap - DEBUG
echo "debug trap ran $count times"
trap -- '' INT
trap -p INT
trap - INT
trap - ERR
trap x NOSUCHSIGNAL
echo "bad signal: $?"
trap 'echo "ERR again: status=$?"' ERR
exit 7
