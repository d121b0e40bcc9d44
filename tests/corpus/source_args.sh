#!/bin/bash
# source with arguments, return from a sourced file, functions it defines.
# expect:
#   source_args.sh OK
#     source lib.source ERROR
#     from_lib OK
#     source lib.source OK
#       from_lib OK
#     source early_return.source OK
here=$(cd "$(dirname "$0")" && pwd)
set -- outer1 outer2
source "$here/data/lib.source" first second
from_lib
echo "args after source: $*"
. "$here/data/lib.source" again
source "$here/data/early_return.source"
echo "early_return status=$?"
