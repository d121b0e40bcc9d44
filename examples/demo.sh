#!/usr/bin/env bash
# make demo: a glidein-like run (examples/glidein) traced by `gwtrace run` with no
# change to its scripts, on the embedded default store; prints the trace tree
# and where to browse it. (examples/glidein_like.sh shows the bash API itself.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/glidein/run_demo.sh"
trace_id=$(gwtrace show --last | awk 'NR == 1 { print $2 }')
echo
echo "Browse it: run 'gwtrace serve' (it reads the same store), then open"
echo "  http://127.0.0.1:4318/trace/$trace_id"
