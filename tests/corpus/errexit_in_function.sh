#!/bin/bash
# set -e: a failure inside a nested function stops the script right there,
# with the failing command's status; a handled failure does not.
# expect:
#   errexit_in_function.sh ERROR
#     check OK
#     outer ERROR
#       inner ERROR
set -e
inner() {
  echo "inner start"
  false
  echo "inner: not reached"
}
outer() {
  inner
  echo "outer: not reached"
}
check() { grep -q nothing /dev/null || echo "handled failure keeps going"; }
check
outer
echo "top: not reached"
