#!/bin/bash
# Recursion: each call is its own span, nested.
# expect:
#   recursion.sh OK
#     fact OK
#       fact OK
#         fact OK
#           fact OK
#     fact OK
#       fact OK
#         fact OK
#           fact OK
#     countdown OK
#       countdown OK
#         countdown OK
fact() {
  if (( $1 <= 1 )); then echo 1; return; fi
  local sub
  sub=$(fact $(( $1 - 1 )))
  echo $(( $1 * sub ))
}
countdown() { (( $1 > 0 )) || return 0; countdown $(( $1 - 1 )); }
echo "4! = $(fact 4)"
fact 4 >/dev/null
countdown 2
echo done
