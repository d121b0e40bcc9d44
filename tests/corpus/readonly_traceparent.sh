#!/bin/bash
# set -e and a readonly TRACEPARENT: assigning a readonly variable ends a
# non-interactive bash, so the tracer must stop exporting TRACEPARENT.
# expect:
#   readonly_traceparent.sh OK
#     before OK
#     inner OK
#     outer OK
#       inner OK
#       inner OK
set -e
before() { echo "before"; }
inner() { echo "inner sees $TRACEPARENT"; }
outer() { inner; x=$(inner); echo "sub: $x"; }
before
readonly TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01
inner
outer
bash -c 'echo "a child runs"' >/dev/null
echo done
