#!/bin/bash
# set -u: bash's own error message, with the line number, and the exit status.
# expect:
#   nounset.sh ERROR
#     show OK
#     show ERROR
set -u
show() {
  echo "value=${1}" "set=${defined}"
  if [[ $1 == fail ]]; then echo "unset=${undefined_var}"; fi
}
defined=yes
show one
echo "${optional:-default}"
show fail
echo "not reached"
