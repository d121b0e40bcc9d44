#!/usr/bin/env bash
# examples/glidein/run_demo.sh (make demo): a glidein-like run traced without
# changing any of its scripts: `gwtrace run` starts a private sidecar, every
# bash below it is traced through BASH_ENV, the user jobs through
# gwtrace-job-wrapper; then the trace is printed from the embedded store.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v gwtrace >/dev/null || { echo "run_demo.sh: gwtrace is not on PATH (make install, then PATH=.venv/bin:\$PATH)" >&2; exit 1; }
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT GWTRACE_DIR GWTRACE_SOCKET TRACEPARENT TRACESTATE
gwtrace run --name factory --level "${GWTRACE_AUTO_LEVEL:-functions}" -- bash "$here/factory.sh"
echo
gwtrace show --last
