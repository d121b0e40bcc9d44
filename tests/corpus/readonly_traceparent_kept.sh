#!/bin/bash
# set -eu and `readonly TRACEPARENT` without a value (the value it has stays,
# readonly; or it stays unset): the tracer must never try to assign it (under
# set -e that ends the script, whatever `|| :` follows), in the functions'
# fast paths too, with and without the accelerator.
# expect:
#   readonly_traceparent_kept.sh OK
#     before OK
#     f OK
#     g OK
#       f OK
#     g OK
#       f OK
#     g OK
#       f OK
set -eu
before() { echo "before"; }
f() { echo "in f"; }
g() { f; }
before
readonly TRACEPARENT
f
g
x=$(g)
echo "sub: $x"
g
echo done
