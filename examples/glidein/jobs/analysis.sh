#!/bin/bash
# A user job: it knows nothing of tracing (but gets TRACEPARENT).
input=$1 chunks=${2:-3}
process_chunk() { sleep 0.05; echo "chunk $1 of $input done"; }
for (( i = 1; i <= chunks; i++ )); do process_chunk "$i"; done
echo "analysis finished, trace context: ${TRACEPARENT:-none}"
