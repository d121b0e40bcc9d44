#!/bin/bash
# A user job that traces itself when the glidein runs gwtrace, and runs the
# same without it (docs/deploy.md, "User jobs"). Safe under set -euo pipefail.
set -euo pipefail

# The one safe idiom: the library if the glidein published it, else no-ops
# (trace_run still runs its command and returns its status; trace_end returns
# 0, as the library's does under set -e).
if [[ -r ${GWTRACE_LIB:-} ]]; then
  # shellcheck source=/dev/null
  source "$GWTRACE_LIB"
else
  trace_begin() { :; }
  trace_end() { :; }
  trace_event() { :; }
  trace_attr() { :; }
  trace_run() { shift; "$@"; }
fi

echo "TRACEPARENT=${TRACEPARENT:-}"
trace_begin analysis events=10
trace_run compute sleep 0.1
trace_event checkpoint
trace_end

# A span around any command, from the .pyz the glidein shipped (any language).
if [[ -n ${GWTRACE_PYZ:-} && -n ${GWTRACE_PYTHON:-} ]]; then
  "$GWTRACE_PYTHON" "$GWTRACE_PYZ" span stage_out -- cp "$0" "${TMPDIR:-/tmp}/stage_out.$$"
else
  cp "$0" "${TMPDIR:-/tmp}/stage_out.$$"
fi
rm -f "${TMPDIR:-/tmp}/stage_out.$$"
