#!/bin/bash
# Scripts that close or redirect fds 0-9: stdin closed, stderr closed or
# redirected, high fds in use, fd 3 closed in the middle of functions.
# expect:
#   fds.sh OK
#     writer OK
#     closer OK
#     writer OK
#     quiet OK
#     noisy OK
writer() { echo "to fd $1" >&"$1"; }
closer() { exec 3>&-; }
quiet() { echo "stderr closed inside" 2>&-; ls /nonexistent 2>&-; return 0; }
noisy() { echo "to stderr" >&2; }
exec 3>&1 4>&2 5>/dev/null 9>&1
writer 9
closer
writer 1
exec 0<&-
read -r line || echo "stdin closed: read failed"
exec 2>&1
quiet
noisy
exec 2>&4 4>&-
exec 5>&- 9>&-
ls /proc/self/fd/ | sort -n | tr '\n' ' '; echo
