#!/bin/bash
# pipefail and PIPESTATUS, with functions inside pipelines (one per pipeline:
# the members of a pipeline start in the scheduler's order).
# expect:
#   pipefail.sh ERROR
#     produce OK
#     consume OK
#     produce OK
#     fail_in_pipe OK
set -o pipefail
produce() { printf '%s\n' a b c; }
consume() { while read -r line; do echo "got $line"; done; }
produce | while read -r line; do echo "loop got $line"; done
echo "status=$? pipestatus=${PIPESTATUS[*]}"
printf '%s\n' x y | consume
echo "status=$? pipestatus=${PIPESTATUS[*]}"
false | true | (exit 3) | true
echo "status=$? pipestatus=${PIPESTATUS[*]}"
produce | cat | grep -q zzz
echo "status=$? pipestatus=${PIPESTATUS[*]}"
fail_in_pipe() { true | false; }
fail_in_pipe
echo "fail_in_pipe=$?"
set -e
false | true
