#!/bin/bash
#
# gwtrace_setup.sh - glidein custom script: trace this glidein with gwtrace.
#
# Put it in the glidein's file list (an "exec" file, early: the scripts after
# it are traced) with gwtrace-sidecar.pyz, gwtrace.sh and gwtrace-job-wrapper
# next to it. Called as every custom script is: gwtrace_setup.sh glidein_config ID
#
# It starts the sidecar (the .pyz, any python3 >= 3.9 on the node) with the
# glidein's identity from glidein_config, opens the "glidein" span (a child of
# GLIDEIN_TRACEPARENT if the factory passed one) and publishes, in
# glidein_config, for the scripts that follow:
#   GWTRACE_DIR GWTRACE_SOCKET GWTRACE_SIDECAR_PID GWTRACE_BOOT_US GWTRACE_LIB
#   GWTRACE_PYTHON GWTRACE_PYZ GWTRACE_GLIDEIN_TRACEPARENT TRACEPARENT
# and, for the user jobs (condor_vars: job environment), GWTRACE_DIR,
# GWTRACE_SOCKET, GWTRACE_BOOT_US and GWTRACE_GLIDEIN_TRACEPARENT. The job
# wrapper is chained into GLIDEIN_WRAPPER_EXEC (one span per user job), and a
# clean-up script in .gwms.d/exec/cleanup ends the glidein span and stops the
# sidecar (flushing) when the glidein exits.
#
# Exporter: GWTRACE_OTLP_ENDPOINT or GWTRACE_OTLP_TRACES_ENDPOINT (and
# GWTRACE_OTLP_HEADERS, GWTRACE_OTLP_TOKEN_FILE, GWTRACE_SERVICE_NAME) from
# glidein_config. Without one
# the node sends nothing (GWTRACE_EXPORT=ship-home). Either way, what was not
# delivered when the glidein ends rides home in its .err for `gwtrace ingest`
# (docs/deploy.md). GWTRACE_DISABLE=1 turns tracing off.
#
# Tracing trouble never fails a glidein: it reports OK, with the metrics
# GWTrace=off and GWTraceReason=<why>.

glidein_config=$1
gwtrace_id=${2:-main}
gwtrace_me=gwtrace_setup.sh
gwtrace_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The glidein's config functions (the custom script contract).
add_config_line_source=$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" 2>/dev/null | cut -d ' ' -f 2-)
if [[ -z $add_config_line_source || ! -r $add_config_line_source ]]; then
  echo "$gwtrace_me: no ADD_CONFIG_LINE_SOURCE in '$glidein_config'; tracing off" >&2
  exit 0
fi
# shellcheck source=/dev/null
source "$add_config_line_source"
error_gen=$(gconfig_get ERROR_GEN_PATH "$glidein_config")
condor_vars_file=$(gconfig_get CONDOR_VARS_FILE "$glidein_config")

# tracing_off REASON: report OK (the glidein goes on) and why tracing is off.
tracing_off() {
  echo "$gwtrace_me: tracing off: $1" >&2
  "$error_gen" -ok "$gwtrace_me" GWTrace off GWTraceReason "$1"
  exit 0
}

# find_python: a python3 >= 3.9 (the .pyz needs it), into gwtrace_python.
find_python() {
  local py
  for py in "$(gconfig_get GWTRACE_PYTHON "$glidein_config")" python3 python gwms-python; do
    if [[ -z $py ]] || ! command -v "$py" >/dev/null 2>&1; then continue; fi
    if "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' >/dev/null 2>&1; then
      gwtrace_python=$(command -v "$py")
      return 0
    fi
  done
  return 1
}

# The directory of the sidecar: private, next to the glidein's work directory.
state_dir() {
  local work
  work=$(gconfig_get GLIDEIN_WORK_DIR "$glidein_config")
  work=${work:-$PWD}
  gwtrace_dir=$(dirname "$work")/gwtrace
  mkdir -p "$gwtrace_dir" && chmod 0700 "$gwtrace_dir"
}

# Exporter settings from glidein_config; without an endpoint, the embedded store.
# The token file is passed by its path (absolute, or relative to the glidein's
# work directory): the sidecar reads it, so the token is never in glidein_config,
# an environment or a command line.
exporter_env() {
  local endpoint traces headers service token_file
  endpoint=$(gconfig_get GWTRACE_OTLP_ENDPOINT "$glidein_config")
  traces=$(gconfig_get GWTRACE_OTLP_TRACES_ENDPOINT "$glidein_config")
  headers=$(gconfig_get GWTRACE_OTLP_HEADERS "$glidein_config")
  service=$(gconfig_get GWTRACE_SERVICE_NAME "$glidein_config")
  token_file=$(gconfig_get GWTRACE_OTLP_TOKEN_FILE "$glidein_config")
  token_file=${token_file:-${GWTRACE_OTLP_TOKEN_FILE-}}
  [[ -z $token_file || $token_file == /* ]] ||
    token_file=$(gconfig_get GLIDEIN_WORK_DIR "$glidein_config")/$token_file
  [[ -n $endpoint ]] && export OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint
  [[ -n $traces ]] && export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=$traces
  [[ -n $headers ]] && export OTEL_EXPORTER_OTLP_HEADERS=$headers
  [[ -n $service ]] && export OTEL_SERVICE_NAME=$service
  [[ -n $token_file ]] && export GWTRACE_OTLP_TOKEN_FILE=$token_file
  # No collector configured: the node sends nothing and keeps no store in the
  # glidein's directory (deleted with it); every span rides home in the .err.
  [[ -n $endpoint$traces ]] || export GWTRACE_EXPORT=ship-home
}

# A sidecar already serves this environment (GWTRACE_DIR, its pid alive): use it.
running_sidecar() {
  local pid=''
  [[ -n ${GWTRACE_DIR-} && -r $GWTRACE_DIR/sidecar.pid ]] || return 1
  read -r pid <"$GWTRACE_DIR/sidecar.pid" || return 1
  [[ $pid == +([0-9]) ]] && kill -0 "$pid" 2>/dev/null || return 1
  export GWTRACE_SOCKET=${GWTRACE_SOCKET:-file://$GWTRACE_DIR/events.log} GWTRACE_SIDECAR_PID=$pid
  export GWTRACE_BOOT_US=${GWTRACE_BOOT_US-}
}

# The sidecar keeps the glidein's stderr (fd 3 here; the .err the factory
# collects) to ship there what it could not deliver when it is stopped or
# SIGTERMed; its own start-up errors go to start.err for the metric.
start_sidecar() {
  local out
  if ! out=$("$gwtrace_python" "$gwtrace_pyz" sidecar start --dir "$gwtrace_dir/sidecar" \
             --glidein-config "$glidein_config" --ship-to /dev/fd/3 3>&2 2>"$gwtrace_dir/start.err"); then
    tracing_off "sidecar did not start: $(head -c 200 "$gwtrace_dir/start.err" | tr '\n<>&' '    ')"
  fi
  [[ $out == export\ GWTRACE_DIR=* ]] || tracing_off "unexpected output from sidecar start"
  eval "$out"
}

# publish NAME VALUE [job]: in glidein_config, and in the user jobs' environment.
publish() {
  gconfig_add "$1" "$2"
  if [[ ${3-} == job && -n $condor_vars_file ]]; then
    add_condor_vars_line "$1" "S" "-" "+" "N" "N" "+"
  fi
}

# GLIDEIN_WRAPPER_EXEC is the (already quoted) exec line that ends
# condor_job_wrapper.sh: run the job through the wrapper, keeping what was there.
chain_job_wrapper() {
  local wrapper=$gwtrace_here/gwtrace-job-wrapper current
  [[ -f $wrapper && $wrapper != *\'* ]] || return 0
  [[ -x $wrapper ]] || chmod u+x "$wrapper" || return 0     # a downloaded file has no x bit
  current=$(gconfig_get GLIDEIN_WRAPPER_EXEC "$glidein_config")
  [[ -n $current ]] || current='"$@"'
  [[ $current == *gwtrace-job-wrapper* ]] && return 0
  gconfig_add GLIDEIN_WRAPPER_EXEC "\"$wrapper\" $current"
}

# shellcheck disable=SC2153  # GWTRACE_DIR comes from `sidecar start`
# A clean-up script (run by glidein_startup.sh when the glidein exits):
# end the glidein span, then stop the sidecar (ours, not one we reused),
# which flushes everything.
install_cleanup() {
  local dir=${GWMS_DIR:-$(dirname "$(gconfig_get GLIDEIN_WORK_DIR "$glidein_config")")/.gwms.d}/exec/cleanup
  local hook=$dir/gwtrace_cleanup.sh
  [[ -d $dir && -w $dir ]] || return 1
  {
    echo '#!/bin/bash'
    echo '# Written by gwtrace_setup.sh: end the glidein span, stop the gwtrace sidecar (it flushes).'
    printf 'log=%q\npython=%q\npyz=%q\ndir=%q\ntrace=%q\nspan=%q\n' "${GWTRACE_SOCKET#file://}" \
      "$gwtrace_python" "$gwtrace_pyz" "$GWTRACE_DIR" "${gwtrace_glidein_tp:3:32}" "${gwtrace_glidein_tp:36:16}"
    cat <<'EOF'
t=$'\t'
ts=${EPOCHREALTIME:-$(( $(date +%s) * 1000000 ))}
printf '%s\n' "gw1${t}E${t}${ts}${t}$$${t}${trace}${t}${span}${t}0" >>"$log" 2>/dev/null
# What could not be delivered rides home in the glidein's stderr (the .err).
# A live sidecar delivers with its own settings; with none left (it was
# killed), the drain ships everything home rather than guess an exporter.
[[ -z $pyz ]] || GWTRACE_EXPORT=ship-home "$python" "$pyz" sidecar stop --dir "$dir" --ship-to stderr >/dev/null || :
EOF
  } >"$hook" && chmod 0755 "$hook"
}

# glidein_traceparent: the glidein's context as the factory's backfill derives it
# (`gwtrace ingest --factory-logs`, docs/accounting.md): trace id
# sha256("gwtrace-glidein-v1\0<factory>\0<schedd>\0<cluster>.<proc>")[:32], parent
# the backfilled root span, sha256("<trace id>/glidein")[:16]. So the spans this
# glidein sends live and those made later from its .out/.err share one trace.
glidein_traceparent() {
  local factory schedd cluster proc trace_id span_id
  factory=$(gconfig_get GLIDEIN_Factory "$glidein_config")
  schedd=$(gconfig_get CONDORG_SCHEDD "$glidein_config")
  cluster=$(gconfig_get CONDORG_CLUSTER "$glidein_config")
  proc=$(gconfig_get CONDORG_SUBCLUSTER "$glidein_config")
  [[ -n $cluster && -n $proc ]] && command -v sha256sum >/dev/null || return 1
  trace_id=$(printf 'gwtrace-glidein-v1\0%s\0%s\0%s.%s' "$factory" "$schedd" "$cluster" "$proc" | sha256sum)
  span_id=$(printf '%s/glidein' "${trace_id:0:32}" | sha256sum)
  span_id=${span_id:0:16}
  [[ $span_id != 0000000000000000 ]] || span_id=0000000000000001
  printf '00-%s-%s-01\n' "${trace_id:0:32}" "$span_id"
}

main() {
  local disable
  disable=$(gconfig_get GWTRACE_DISABLE "$glidein_config")
  [[ $disable == [1Tt]* ]] && tracing_off "GWTRACE_DISABLE is set"
  [[ -r $gwtrace_here/gwtrace.sh ]] || tracing_off "gwtrace.sh not found"
  gwtrace_pyz='' gwtrace_python='' gwtrace_sidecar=started
  if running_sidecar; then
    gwtrace_sidecar=reused    # e.g. the whole glidein runs under `gwtrace run`
  else
    gwtrace_pyz=$(gconfig_get GWTRACE_PYZ "$glidein_config")
    gwtrace_pyz=${gwtrace_pyz:-$gwtrace_here/gwtrace-sidecar.pyz}
    [[ -r $gwtrace_pyz ]] || tracing_off "gwtrace-sidecar.pyz not found"
    find_python || tracing_off "no python3 >= 3.9"
    state_dir || tracing_off "cannot create a private directory for the sidecar"
    exporter_env
    start_sidecar
  fi

  # The glidein span, child of the factory's context if it gave one, else of
  # the context this script runs in, else of the glidein's own backfill root.
  local parent
  parent=$(gconfig_get GLIDEIN_TRACEPARENT "$glidein_config")
  [[ -n $parent || -n ${TRACEPARENT-} ]] || parent=$(glidein_traceparent) || parent=
  [[ -n $parent ]] && export TRACEPARENT=$parent
  # shellcheck source=/dev/null
  source "$gwtrace_here/gwtrace.sh"
  trace_begin glidein "glidein.script_id=$gwtrace_id"
  gwtrace_glidein_tp=$TRACEPARENT
  trace_begin "$gwtrace_me"

  publish GWTRACE_DIR "$GWTRACE_DIR" job
  publish GWTRACE_SOCKET "$GWTRACE_SOCKET" job
  publish GWTRACE_BOOT_US "$GWTRACE_BOOT_US" job
  publish GWTRACE_GLIDEIN_TRACEPARENT "$gwtrace_glidein_tp" job
  publish GWTRACE_SIDECAR_PID "$GWTRACE_SIDECAR_PID"
  publish GWTRACE_LIB "$gwtrace_here/gwtrace.sh" job
  [[ -z $gwtrace_python ]] || publish GWTRACE_PYTHON "$gwtrace_python" job
  [[ -z $gwtrace_pyz ]] || publish GWTRACE_PYZ "$gwtrace_pyz" job
  publish TRACEPARENT "$gwtrace_glidein_tp"
  chain_job_wrapper
  if install_cleanup; then
    trace_attr gwtrace.cleanup_hook=true
  else
    trace_attr gwtrace.cleanup_hook=false
  fi
  trace_end 0

  "$error_gen" -ok "$gwtrace_me" GWTrace on GWTraceDir "$GWTRACE_DIR" GWTraceSidecar "$gwtrace_sidecar"
  exit 0
}

main
