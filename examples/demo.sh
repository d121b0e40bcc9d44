#!/usr/bin/env bash
# make demo: start a sidecar on the embedded default store, trace a glidein-like
# run, stop the sidecar (flushing), print the trace tree and where to browse it.
set -euo pipefail
cd "$(dirname "$0")"
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT GWTRACE_DIR GWTRACE_SOCKET
eval "$(gwtrace sidecar start)"
bash ./glidein_like.sh
gwtrace sidecar stop
echo
tree=$(gwtrace show --last)
printf '%s\n\n' "$tree"
trace_id=$(printf '%s\n' "$tree" | awk 'NR == 1 { print $2 }')
echo "Browse it: run 'gwtrace serve' (it reads the same store), then open"
echo "  http://127.0.0.1:4318/trace/$trace_id"
