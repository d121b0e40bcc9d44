#!/usr/bin/env bash
# A glidein-like run traced with the gwtrace library: start-up, ordered validation
# scripts, a condor stand-in running two user jobs (child processes that continue
# the trace through TRACEPARENT), clean-up. Used by `make demo`.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../bash/gwtrace.sh
source "$(gwtrace lib)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

validate() {  # validate NAME SECONDS [STATUS]
  trace_begin "$1" script="$1" glidein.phase=validation
  sleep "$2"
  trace_end "${3:-0}"
}

user_job() {  # a payload in its own bash process: it sources the library and joins the trace
  bash -c 'source "$(gwtrace lib)"
           trace_begin "user_job $1" job.id="$1" owner=alice
             trace_run analyse sleep 0.2
             trace_event "output written" bytes=1048576
           trace_end' _ "$1"
}

trace_begin glidein_startup glidein.entry=DEMO_Entry glidein.site=DEMO_Site
  trace_begin setup
    trace_run create_work_dir mkdir -p "$work/main"
    trace_attr work_dir.free_gb=120
  trace_end
  trace_begin validation
    validate setup_script.sh 0.05
    validate check_proxy.sh 0.02
    validate validate_node.sh 0.1
    validate check_blacklist.sh 0.01 || true
    trace_event "validation OK" scripts=4
  trace_end
  trace_begin condor_startup
    trace_event "condor started" slots=2
    user_job 1001.0 & user_job 1001.1 & wait
    trace_event "condor ended" reason=idle
  trace_end
  trace_run cleanup rm -rf "$work/main"
trace_end
echo "glidein-like run finished"
