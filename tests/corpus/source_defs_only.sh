#!/bin/bash
# A sourced file that only defines functions runs no command for the DEBUG
# trap to see inside it (GlideinWMS's b64uuencode.source): it still gets its
# span, and its functions theirs.
# expect:
#   source_defs_only.sh OK
#     source defs_only.source OK
#     b64_hello OK
#     source defs_only.source OK
here=$(dirname "$0")
source "$here/data/defs_only.source"
b64_hello one
. "$here/data/defs_only.source"
echo "sourced twice: $?"
