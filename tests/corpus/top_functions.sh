#!/bin/bash
# Shaped like glidein_startup.sh: the top level calls functions that download
# files and run validation scripts, checks signatures with `if !`, reads
# values in $(...). At the scripts level each function called from the top
# level has a span (the script's phases), its child scripts under it; calls
# inside functions and in $(...) have none (tests/test_shim_corpus.py).
# expect:
#   top_functions.sh OK
#     get_id OK
#     fetch_file OK
#       run_script OK
#         bash -c OK
#     check_signature OK
#     get_id OK
#     fetch_file OK
#       run_script OK
#         bash -c OK
#     check_signature OK
#     report OK
get_id() { echo "id-$1"; }
run_script() { bash -c 'echo "validating $0"' "$1"; }
fetch_file() { echo "fetching $1"; run_script "$1"; }
check_signature() { [ "$1" != main ]; }
report() { echo "done: $*"; }
for gs_id in main entry; do
  id=$(get_id "$gs_id")
  fetch_file "$id"
  if ! check_signature "$gs_id"; then
    echo "no signature check for $gs_id"
  fi
done
report "$gs_id"
