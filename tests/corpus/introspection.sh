#!/bin/bash
# What a script sees of itself: $?, $_, PIPESTATUS, LINENO, FUNCNAME, caller,
# BASH_SOURCE, BASH_LINENO, BASH_COMMAND in a trap, $-.
# expect:
#   introspection.sh OK
#     report OK
#       where OK
#     status OK
#     report OK
#       where OK
where() {
  echo "LINENO=$LINENO FUNCNAME=${FUNCNAME[*]} BASH_LINENO=${BASH_LINENO[*]}"
  echo "caller0=$(caller 0) caller1=$(caller 1)"
  echo "BASH_SOURCE=${BASH_SOURCE[*]##*/}"
}
report() { where "$@"; }
report a b
status() { return 42; }
status
echo "status=$?"
mkdir -p /tmp/gwtrace-corpus-$$.d && cd "$_" && echo "cd \$_ worked" && cd / && rmdir /tmp/gwtrace-corpus-$$.d
echo one two three; echo "last arg: $_"
false | true; echo "pipestatus: ${PIPESTATUS[*]}"
trap 'echo "in ERR: $BASH_COMMAND"' ERR
ls /nonexistent/path 2>/dev/null
trap - ERR
echo "options: ${-//T/}"
report
