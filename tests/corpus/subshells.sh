#!/bin/bash
# Subshells, command substitution, process substitution, here-strings.
# expect:
#   subshells.sh OK
#     get OK
#     get OK
#     nested OK
#       get OK
#     twice OK
#       get OK
#       get OK
#     get OK
#     get OK
get() { echo "value-$1"; }
nested() { local v; v=$(get inner); echo "nested saw $v"; }
twice() { echo "$(get a) $(get b)"; }
x=$(get one)
echo "x=$x"
( y=$(get two); echo "in subshell: $y"; exit 3 )
echo "subshell status=$?"
nested
twice
: "a function span ends at the caller's next simple command; the loop's < <(...) starts before one (docs/shim.md, Limits)"
while read -r line; do echo "read: $line"; done < <(get three)
read -r z <<<"$(get four)"
echo "z=$z"
echo "count=$( (echo a; echo b) | wc -l)"
