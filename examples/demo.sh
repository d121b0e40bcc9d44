#!/usr/bin/env bash
# make demo: start a sidecar on the embedded default store, trace a glidein-like
# run, stop the sidecar (flushing) and print the trace tree.
set -euo pipefail
cd "$(dirname "$0")"
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT GWTRACE_DIR GWTRACE_SOCKET
eval "$(gwtrace sidecar start)"
bash ./glidein_like.sh
gwtrace sidecar stop
echo
gwtrace show --last
echo
echo "Browse it: gwtrace serve, then open http://127.0.0.1:4318/"
