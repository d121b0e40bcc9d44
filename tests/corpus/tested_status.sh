#!/bin/bash
# A status the caller tests is an answer, not a failure: the span is OK and
# keeps process.exit.code; `if ! f` records f's own status, not the negated
# one. Only a status nobody tested is an ERROR. (GlideinWMS's
# condor_startup.sh: `if [[ "$var_req" == "Y" ]] || is_var_required "$v"`.)
# expect:
#   tested_status.sh OK
#     yes OK
#     no OK
#     no OK
#     yes OK
#     no OK
#     no OK
#     no OK
#     no OK
#     no OK
#     wrapper OK
#       no OK
#     no OK
#     no OK
#     no ERROR
set -u
yes() { return 0; }
no() { return 3; }
wrapper() { no; }
if ! yes; then echo "not reached"; fi
if ! no; then echo "negated: $?"; fi
if no; then echo "not reached"; fi
echo "after if: $?"
if yes && no; then :; else echo "else"; fi
while no; do :; done
no || echo "or: $?"
no && echo "not reached"
echo "and: done"
if [[ -z ${UNSET_VAR-} ]] &&
   no; then :; fi
wrapper || echo "wrapper tested"
no
rc=$?
no; echo "rc read: $?"
no
echo "untested ends OK"
