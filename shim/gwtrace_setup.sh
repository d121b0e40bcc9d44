#!/bin/bash
#
# gwtrace_setup.sh - glidein custom script: trace this glidein with gwtrace.
#
# Put it in the factory's global file list (an "exec" file, docs/deploy.md)
# with gwtrace-sidecar.pyz, gwtrace.sh and gwtrace-job-wrapper before it.
# Called as every custom script is: gwtrace_setup.sh glidein_config ID
#
# What it does, without any change to glidein_startup.sh:
# - starts the sidecar (the .pyz, any python3 >= 3.9 on the node, after
#   checking the archive) with the glidein's identity from glidein_config;
# - opens the root span, "glidein", at the glidein's own start (the start of
#   glidein_startup.sh's process), with the ids `gwtrace ingest
#   --factory-logs` derives for the same glidein;
# - records every script that ran before it from GlideinWMS's own per-script
#   results (otr_outlist.list: 1 s resolution);
# - puts a step hook in front of the glidein's error_augment.sh, which
#   glidein_startup.sh runs before (-init) and after (-process) every script,
#   HTCondor's condor_startup.sh included: each later script becomes a span
#   with microsecond times, its exit status and, on failure, GlideinWMS's own
#   message (<detail>);
# - installs two clean-up scripts (.gwms.d/exec/cleanup, run by
#   glidein_exit, also after SIGTERM) that record the clean-up, end the root
#   with the glidein's exit status and final CPUs, memory and GPUs, and stop
#   the sidecar, which ships what it could not deliver home in the .err;
# - publishes, in glidein_config, GWTRACE_DIR GWTRACE_SOCKET GWTRACE_BOOT_US
#   GWTRACE_LIB GWTRACE_PYTHON GWTRACE_PYZ GWTRACE_GLIDEIN_TRACEPARENT (the
#   HTCondor span, the user jobs' parent) and TRACEPARENT, the first five and
#   the context also for user jobs (condor_vars), and chains the job wrapper
#   into GLIDEIN_WRAPPER_EXEC (one span per user job).
#
# Exporter: GWTRACE_OTLP_ENDPOINT or GWTRACE_OTLP_TRACES_ENDPOINT (and
# GWTRACE_OTLP_HEADERS, GWTRACE_OTLP_TOKEN_FILE, GWTRACE_SERVICE_NAME,
# GWTRACE_JOB_SERVICE_NAME) from
# glidein_config. Without one the node sends nothing (GWTRACE_EXPORT=ship-home).
# GWTRACE_DISABLE=1 turns tracing off.
#
# Tracing trouble never fails a glidein: it reports OK, with the metrics
# GWTrace=off and GWTraceReason=<why>.
#
# The step hook's functions below run only from steps.sh, which this script
# writes: shellcheck cannot see them called.
# shellcheck disable=SC2317

glidein_config=$1
gwtrace_id=${2:-main}
gwtrace_me=gwtrace_setup.sh
gwtrace_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gwtrace_started=${EPOCHREALTIME:-}

# The glidein's config functions (the custom script contract).
add_config_line_source=$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" 2>/dev/null | cut -d ' ' -f 2-)
if [[ -z $add_config_line_source || ! -r $add_config_line_source ]]; then
  echo "$gwtrace_me: no ADD_CONFIG_LINE_SOURCE in '$glidein_config'; tracing off" >&2
  exit 0
fi
# shellcheck source=/dev/null
source "$add_config_line_source"
# setting KEY: KEY's value in glidein_config into gwtrace_r (the last line
# wins, as gconfig_get). The file is read once (read_settings): a gconfig_get
# per setting costs three processes, and the set-up reads thirty of them.
declare -A gwtrace_settings=()
read_settings() {
  local line
  gwtrace_settings=()
  while IFS= read -r line || [[ -n $line ]]; do
    [[ $line == *' '* ]] && gwtrace_settings[${line%% *}]=${line#* }
  done <"$glidein_config"
}
setting() {
  gwtrace_r=${gwtrace_settings[$1]-}
}
read_settings
setting ERROR_GEN_PATH; error_gen=$gwtrace_r
setting CONDOR_VARS_FILE; condor_vars_file=$gwtrace_r

# tracing_off REASON: report OK (the glidein goes on) and why tracing is off.
tracing_off() {
  echo "$gwtrace_me: tracing off: $1" >&2
  "$error_gen" -ok "$gwtrace_me" GWTrace off GWTraceReason "$1"
  exit 0
}

# find_python: a python3 >= 3.9 that also finds the archive whole
# (check_pyz), into gwtrace_python; the reason of the last refusal into
# gwtrace_reason. One python run per candidate: the version and the archive.
find_python() {
  local py
  gwtrace_reason="no python3 >= 3.9"
  setting GWTRACE_PYTHON
  for py in "$gwtrace_r" python3 python gwms-python; do
    if [[ -z $py ]] || ! command -v "$py" >/dev/null 2>&1; then continue; fi
    gwtrace_python=$(command -v "$py")
    if gwtrace_reason=$(check_pyz); then
      return 0
    fi
    [[ $gwtrace_reason == "python < 3.9" ]] || return 1    # the archive is bad: another python will not mend it
    gwtrace_reason="no python3 >= 3.9"
  done
  return 1
}

# The directory of the sidecar: private, next to the glidein's work directory.
state_dir() {
  local work
  setting GLIDEIN_WORK_DIR; work=$gwtrace_r
  work=${work:-$PWD}
  gwtrace_dir=$(dirname "$work")/gwtrace
  mkdir -p "$gwtrace_dir" && chmod 0700 "$gwtrace_dir" && [[ -w $gwtrace_dir ]]
}

# Exporter settings from glidein_config; without an endpoint, ship-home only.
# The token file is passed by its path (absolute, or relative to the glidein's
# work directory): the sidecar reads it, so the token is never in glidein_config,
# an environment or a command line.
exporter_env() {
  local endpoint traces headers service job_service token_file
  setting GWTRACE_OTLP_ENDPOINT; endpoint=$gwtrace_r
  setting GWTRACE_OTLP_TRACES_ENDPOINT; traces=$gwtrace_r
  setting GWTRACE_OTLP_HEADERS; headers=$gwtrace_r
  setting GWTRACE_SERVICE_NAME; service=$gwtrace_r
  setting GWTRACE_JOB_SERVICE_NAME; job_service=$gwtrace_r
  setting GWTRACE_OTLP_TOKEN_FILE; token_file=$gwtrace_r
  token_file=${token_file:-${GWTRACE_OTLP_TOKEN_FILE-}}
  setting GLIDEIN_WORK_DIR
  [[ -z $token_file || $token_file == /* ]] || token_file=$gwtrace_r/$token_file
  [[ -n $endpoint ]] && export OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint
  [[ -n $traces ]] && export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=$traces
  [[ -n $headers ]] && export OTEL_EXPORTER_OTLP_HEADERS=$headers
  [[ -n $service ]] && export OTEL_SERVICE_NAME=$service
  [[ -n $job_service ]] && export GWTRACE_JOB_SERVICE_NAME=$job_service
  [[ -n $token_file ]] && export GWTRACE_OTLP_TOKEN_FILE=$token_file
  # The controller the sidecar asks (docs/deploy.md); unset: no question, the factory's defaults.
  setting GWTRACE_CONTROLLER
  [[ -n $gwtrace_r ]] && export GWTRACE_CONTROLLER=$gwtrace_r
  # The clean-up's stop waits this long for a collector that does not answer,
  # then ships the rest home: a glidein's end is not delayed by tracing.
  export GWTRACE_STOP_TIMEOUT=${GWTRACE_STOP_TIMEOUT:-2}
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
# SIGTERMed; its own start-up errors go to start.err for the metric. The
# archive was checked first (check_pyz); -I -S as it would re-execute itself.
start_sidecar() {
  local out level ratio
  local -a ask=()
  if [[ -n ${GWTRACE_CONTROLLER-} ]]; then
    setting GWTRACE_SCRIPTS_LEVEL; level=$gwtrace_r
    setting GWTRACE_SAMPLE_RATIO; ratio=$gwtrace_r
    ask=(--ask-trace-id "$gwtrace_trace" --default-level "$level" --default-ratio "${ratio:-1}")
  fi
  if ! out=$("$gwtrace_python" -I -S "$gwtrace_pyz" sidecar start --dir "$gwtrace_dir/sidecar" \
             --glidein-config "$glidein_config" --ship-to /dev/fd/3 "${ask[@]}" 3>&2 2>"$gwtrace_dir/start.err"); then
    tracing_off "sidecar did not start: $(head -c 200 "$gwtrace_dir/start.err" | tr '\n<>&' '    ')"
  fi
  [[ $out == export\ GWTRACE_DIR=* ]] || tracing_off "unexpected output from sidecar start"
  eval "$out"
}

# control_decision: what the controller decided (start_sidecar's
# gwtrace_control_* assignments), or the factory's defaults, into
# gwtrace_level (the glidein scripts' level: steps, off, scripts, functions
# or commands), gwtrace_sampled (1 or 0) and gwtrace_flags (the flags of the
# traceparents handed down: W3C level 2, 0x02 "random" for the trace ids
# derived here, whose low 64 bits are a sha256's; a factory's own flags kept
# otherwise), and the root span's gwtrace.control.* attributes into
# gwtrace_control_attrs. The level is also written to the level file
# ($GWTRACE_DIR/level), where the next script and the step hook read it and
# where the back channel changes it.
control_decision() {
  local sampled=true random=2
  setting GWTRACE_SCRIPTS_LEVEL; gwtrace_level=${gwtrace_r:-steps}
  gwtrace_sampled=1 gwtrace_control_attrs=()
  if [[ -n ${gwtrace_control_source-} ]]; then
    [[ -z ${gwtrace_control_level-} ]] || gwtrace_level=$gwtrace_control_level
    [[ ${gwtrace_control_sampled-} == 0 ]] && gwtrace_sampled=0 sampled=false
    gwtrace_control_attrs=("gwtrace.control.level=$gwtrace_level" "gwtrace.control.source=$gwtrace_control_source"
      "gwtrace.control.reason=${gwtrace_control_why-}" "gwtrace.control.sampled=$sampled")
    [[ -z ${gwtrace_control_rule-} ]] || gwtrace_control_attrs+=("gwtrace.control.rule=$gwtrace_control_rule")
    [[ -z ${gwtrace_control_ratio-} ]] || gwtrace_control_attrs+=("gwtrace.control.sample_ratio=$gwtrace_control_ratio")
  fi
  # A trace id from elsewhere keeps its own random bit.
  [[ $gwtrace_parent == - ]] || random=$(( 16#${gwtrace_given:-01} & 2 ))
  gwtrace_flags=0$(( random | gwtrace_sampled ))
  [[ -z ${GWTRACE_DIR-} ]] || printf '%s\n' "$gwtrace_level" >"$GWTRACE_DIR/level" 2>/dev/null || :
}

# check_pyz: in gwtrace_python, python >= 3.9 ("python < 3.9" otherwise),
# and the archive opens, every member's CRC holds and it has a __main__.py (a
# damaged download must report GWTrace=off, not "on" and then lose the
# spans). No import of the archive's code.
check_pyz() {
  "$gwtrace_python" -I -S -c '
import sys, zipfile
if sys.version_info < (3, 9):
    sys.exit("python < 3.9")
try:
    with zipfile.ZipFile(sys.argv[1]) as z:
        bad = z.testzip()
        names = set(z.namelist())
except Exception as err:
    sys.exit("gwtrace-sidecar.pyz: not a readable archive: %s" % (str(err).splitlines() or ["?"])[0][:120])
if bad:
    sys.exit("gwtrace-sidecar.pyz: damaged member " + bad[:120])
if "__main__.py" not in names:
    sys.exit("gwtrace-sidecar.pyz: not a Python application archive (no __main__.py)")
' "$gwtrace_pyz" 2>&1
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
  setting GLIDEIN_WRAPPER_EXEC; current=$gwtrace_r
  [[ -n $current ]] || current='"$@"'
  [[ $current == *gwtrace-job-wrapper* ]] && return 0
  gconfig_add GLIDEIN_WRAPPER_EXEC "\"$wrapper\" $current"
}

# derive_id KEY: the first 16 hex digits of sha256(KEY) into gwtrace_r: the
# span-id derivation `gwtrace ingest --factory-logs` uses
# (gwtrace.factory.to_trace.span_id), so the live spans and the backfill of
# the same glidein are one trace with one span per step.
derive_id() {
  _gwtrace_gl_id "$1" || return 1
  gwtrace_r=$_gwtrace_gl_r
}

# derive_trace FORMAT ARGS...: the first 32 hex digits of sha256 of printf
# FORMAT ARGS (the format holds the NUL separators) into gwtrace_r.
derive_trace() {
  local sum
  # shellcheck disable=SC2059  # the format is ours
  sum=$(printf "$@" | sha256sum) || return 1
  gwtrace_r=${sum:0:32}
}

# glidein_context: the glidein's trace id and root span (gwtrace_trace,
# gwtrace_root, gwtrace_parent). The trace id hashes "gwtrace-glidein-v1",
# the factory, the schedd, cluster.proc and the glidein's GLIDEIN_UUID (so a
# resubmitted cluster.proc is another trace), NUL-separated; the root is
# sha256("<trace>/glidein")[:16]. A factory that traces its submissions passes
# GLIDEIN_TRACEPARENT: the root is then its child, in its trace. Under a
# tracing wrapper (a TRACEPARENT in the environment) the root is its child.
glidein_context() {
  local factory schedd cluster proc uuid given
  setting GLIDEIN_TRACEPARENT; given=$gwtrace_r
  given=${given:-${TRACEPARENT-}}
  if [[ $given =~ ^[[:space:]]*00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})[[:space:]]*$ ]]; then
    gwtrace_trace=${BASH_REMATCH[1]} gwtrace_parent=${BASH_REMATCH[2]} gwtrace_given=${BASH_REMATCH[3]}
    derive_id "$gwtrace_trace/glidein/$gwtrace_started/$$" && gwtrace_root=$gwtrace_r
    return
  fi
  setting GLIDEIN_Factory; factory=$gwtrace_r
  setting CONDORG_SCHEDD; schedd=$gwtrace_r
  setting CONDORG_CLUSTER; cluster=$gwtrace_r
  setting CONDORG_SUBCLUSTER; proc=$gwtrace_r
  setting GLIDEIN_UUID; uuid=$gwtrace_r
  gwtrace_parent=-
  if [[ -n $cluster && -n $proc && -n $uuid ]]; then
    derive_trace 'gwtrace-glidein-v1\0%s\0%s\0%s.%s\0%s' "$factory" "$schedd" "$cluster" "$proc" "$uuid"
  elif [[ -n $cluster && -n $proc ]]; then
    derive_trace 'gwtrace-glidein-v1\0%s\0%s\0%s.%s' "$factory" "$schedd" "$cluster" "$proc"
  else
    derive_trace 'gwtrace-glidein-random/%s/%s/%s' "$gwtrace_started" "$$" "$RANDOM$RANDOM"
  fi || return 1
  gwtrace_trace=$gwtrace_r
  derive_id "$gwtrace_trace/glidein" && gwtrace_root=$gwtrace_r
}

# glidein_start: the glidein's own start, "seconds.micros", into gwtrace_r:
# the start of glidein_startup.sh's process (GLIDEIN_STARTUP_PID; its start
# tick in /proc/PID/stat after the boot time), else the first script's start.
glidein_start() {
  local pid stat ticks btime='' key value hz
  setting GLIDEIN_STARTUP_PID; pid=$gwtrace_r
  gwtrace_r=''
  if [[ $pid == +([0-9]) && -r /proc/$pid/stat ]] && read -r stat <"/proc/$pid/stat"; then
    stat=${stat##*) }
    read -r -a stat <<<"$stat"
    ticks=${stat[19]-}
    while read -r key value; do
      [[ $key == btime ]] && { btime=$value; break; }
    done </proc/stat
    hz=$(getconf CLK_TCK 2>/dev/null) || hz=100
    if [[ $ticks == +([0-9]) && $btime == +([0-9]) && $hz == +([0-9]) && $hz -gt 0 ]]; then
      printf -v gwtrace_r '%d.%06d' $(( btime + ticks / hz )) $(( (ticks % hz) * 1000000 / hz ))
    fi
  fi
}

# The earlier steps: every OSGTestResult glidein_startup.sh has appended to
# otr_outlist.list before this script (their order is their index), as spans
# at 1 s resolution (GlideinWMS's tStart/tEnd, whole seconds: a time before
# the glidein's own start, START, is its start). One `date` for all the times.
record_earlier_steps() {
  local list=$1 first=${2%.*} line id='' status='' detail='' in_detail=0 i n begin end
  local -a ids=() starts=() ends=() states=() details=() epochs=()
  [[ -r $list ]] || return 0
  while IFS= read -r line; do
    if [[ $line =~ \<OSGTestResult\ id=\"([^\"]*)\" ]]; then
      ids+=("${BASH_REMATCH[1]}") starts+=('') ends+=('') states+=('') details+=('')
    fi
    n=$(( ${#ids[@]} - 1 ))
    (( n >= 0 )) || continue
    if (( in_detail )); then
      [[ $line == *'</detail>'* ]] && { in_detail=0; line=${line%%</detail>*}; }
      details[n]+=" $line"
      continue
    fi
    case $line in
      *'<tStart>'*) line=${line#*<tStart>}; starts[n]=${line%%<*} ;;
      *'<tEnd>'*) line=${line#*<tEnd>}; ends[n]=${line%%<*} ;;
      *'<status>'*) line=${line#*<status>}; states[n]=${line%%<*} ;;
      *'<detail>'*)
        line=${line#*<detail>}
        if [[ $line == *'</detail>'* ]]; then details[n]=${line%%</detail>*}; else details[n]=$line in_detail=1; fi ;;
    esac
  done <"$list"
  (( ${#ids[@]} )) || return 0
  mapfile -t epochs < <(for i in "${!ids[@]}"; do printf '%s\n%s\n' "${starts[i]:-@0}" "${ends[i]:-@0}"; done |
                        date -f - +%s 2>/dev/null)
  (( ${#epochs[@]} == 2 * ${#ids[@]} )) || return 0   # a time date could not read: none rather than wrong ones
  for i in "${!ids[@]}"; do
    derive_id "$gwtrace_trace/script/$i/${ids[i]}" || return 0
    status=0
    if [[ ${states[i]} != OK ]]; then
      status=error
      _gwtrace_gl_text "${details[i]}"
      [[ -z $_gwtrace_gl_r ]] || status=$_gwtrace_gl_r
    fi
    begin=${epochs[2*i]}.000000 end=${epochs[2*i+1]}.000000
    [[ $first != +([0-9]) ]] || (( ${epochs[2*i]} > first )) || begin=$2
    [[ $first != +([0-9]) ]] || (( ${epochs[2*i+1]} > first )) || end=$2
    _gwtrace_put_begin "$begin" "$gwtrace_trace" "$gwtrace_r" "$gwtrace_root" "${ids[i]}" \
      "glidein.script=${ids[i]}" gwtrace.resolution=1s
    _gwtrace_put_end "$end" "$gwtrace_trace" "$gwtrace_r" "$status"
  done
}

# ---- The step hook: copied (declare -f) into the state directory's steps.sh,
# which the glidein's error_augment.sh sources first. It runs in
# error_augment.sh's process, never in a glidein script, and must not change
# what error_augment.sh does: no exit, no output, no shell option, locals
# only, errors to /dev/null. Its settings are the _gwtrace_gl_* variables.

# The hook's settings, here empty; steps.sh sets them (write_hook_file).
_gwtrace_gl_log='' _gwtrace_gl_boot='' _gwtrace_gl_dir='' _gwtrace_gl_libfile='' _gwtrace_gl_trace=''
_gwtrace_gl_root='' _gwtrace_gl_condor='' _gwtrace_gl_python='' _gwtrace_gl_pyz='' _gwtrace_gl_sidecar=''
_gwtrace_gl_out='' _gwtrace_gl_err='' _gwtrace_gl_r='' _gwtrace_gl_sampled=1

# _gwtrace_gl_hook ARGS...: error_augment.sh's own arguments.
_gwtrace_gl_hook() {
  local now=${EPOCHREALTIME-}
  case ${1-} in
    -init)
      # shellcheck disable=SC2154  # _gwtrace_clock: gwtrace.sh's clock for bash < 5
      if [[ -z $now ]]; then _gwtrace_gl_lib && _gwtrace_now && now=$_gwtrace_clock; fi
      printf '%s\n' "$now" >"$_gwtrace_gl_dir/step.$PPID" ;;
    -process)
      _gwtrace_gl_lib || return 0
      [[ -n $now ]] || { _gwtrace_now; now=$_gwtrace_clock; }
      _gwtrace_gl_step "$now" "${@:2}" ;;
  esac
  return 0
}

# _gwtrace_gl_lib: gwtrace.sh, writing to the glidein's event log.
_gwtrace_gl_lib() {
  [[ -n ${_gwtrace_loaded-} ]] && return 0
  GWTRACE_SOCKET=file://$_gwtrace_gl_log GWTRACE_BOOT_US=$_gwtrace_gl_boot
  # shellcheck source=/dev/null
  [[ -r $_gwtrace_gl_libfile ]] && source "$_gwtrace_gl_libfile"
}

# _gwtrace_gl_id KEY: the first 16 hex digits of sha256(KEY), never all
# zero, into _gwtrace_gl_r: gwtrace.factory.to_trace.span_id's derivation.
_gwtrace_gl_id() {
  local sum
  sum=$(printf '%s' "$1" | sha256sum) || return 1
  _gwtrace_gl_r=${sum:0:16}
  [[ $_gwtrace_gl_r == *[!0]* ]] || _gwtrace_gl_r=0000000000000001
}

# _gwtrace_gl_text TEXT: GlideinWMS's <detail> text as one line into
# _gwtrace_gl_r: white space folded, XML's five entities decoded, at most
# 1000 characters.
_gwtrace_gl_text() {
  local text=$1
  text=${text//[$'\t\n\r']/ }
  while [[ $text == *'  '* ]]; do text=${text//  / }; done
  text=${text# } text=${text% }
  text=${text//&lt;/<} text=${text//&gt;/>} text=${text//&quot;/\"} text=${text//&apos;/\'} text=${text//&amp;/&}
  _gwtrace_gl_r=${text:0:1000}
}

# _gwtrace_gl_step NOW RET ID PWD CMD START END: the step that just ended
# (-process's arguments), as a span with the derived id of its place in
# otr_outlist.list; condor_startup.sh also gets HTCondor's own span.
_gwtrace_gl_step() {
  local now=$1 ret=$2 id=$3 start='' list=otr_outlist.list index span status=0 detail='' xml='' level=''
  [[ $_gwtrace_gl_sampled == 1 ]] || return 0
  # The level now (the controller's, changed by the back channel): off = no span of the step,
  # HTCondor's span kept (the jobs' parent).
  { read -r level <"$_gwtrace_gl_sidecar/level"; } 2>/dev/null
  if [[ $level == off ]]; then
    [[ $id != *condor_startup.sh ]] && return 0
    read -r start <"$_gwtrace_gl_dir/step.$PPID" || start=${6:-0}.000000
    _gwtrace_gl_condor "$start" "$now" "$_gwtrace_gl_root"
    return 0
  fi
  read -r start <"$_gwtrace_gl_dir/step.$PPID" || start=${6:-0}.000000
  [[ -f $list ]] || list=${0%/*}/../otr_outlist.list
  index=$(grep -c '<OSGTestResult ' "$list" 2>/dev/null) || index=0
  _gwtrace_gl_id "$_gwtrace_gl_trace/script/$index/$id" || return 0
  span=$_gwtrace_gl_r
  if [[ $ret != 0 ]]; then
    status=$ret
    [[ -r otrb_output.xml ]] && read -r -d '' xml <otrb_output.xml
    if [[ $xml == *'<detail>'*'</detail>'* ]]; then
      detail=${xml#*<detail>}
      _gwtrace_gl_text "${detail%%</detail>*}"
      detail=$_gwtrace_gl_r
      [[ -z $detail ]] || status=$detail
    fi
  fi
  _gwtrace_put_begin "$start" "$_gwtrace_gl_trace" "$span" "$_gwtrace_gl_root" "$id" "glidein.script=$id"
  [[ $id != *condor_startup.sh ]] || _gwtrace_gl_condor "$start" "$now" "$span"
  if [[ $ret != 0 ]]; then
    _gwtrace_put_end "$now" "$_gwtrace_gl_trace" "$span" "$status" "process.exit.code=$ret" "gwtrace.failed.command=${id##*/}"
  else
    _gwtrace_put_end "$now" "$_gwtrace_gl_trace" "$span" "$status" "process.exit.code=$ret"
  fi
  printf '%s\t%s\t%s\n' "$id" "$ret" "$detail" >"$_gwtrace_gl_dir/last"
}

# _gwtrace_gl_condor START END PARENT: HTCondor's own life inside
# condor_startup.sh, from its "=== Condor starting/ended ... (EPOCH)" lines
# in the glidein's stdout (the copy glidein_startup.sh's logging keeps under
# GLIDEIN_LOGDIR, else its stdout itself when that is a file), else the
# step's times. The user jobs' spans are its children (GWTRACE_GLIDEIN_TRACEPARENT).
_gwtrace_gl_condor() {
  local begin=$1 end=$2 out=${_gwtrace_gl_out:-/proc/$PPID/fd/1} line
  if [[ -f $out ]]; then
    while IFS= read -r line; do
      [[ $line =~ ^===\ Condor\ starting.*\(([0-9]+)\)\ ===$ ]] && begin=${BASH_REMATCH[1]}.000000
      [[ $line =~ ^===\ Condor\ ended.*\(([0-9]+)\) ]] && end=${BASH_REMATCH[1]}.000000
    done < <(grep -a '^=== Condor \(starting\|ended\)' "$out" 2>/dev/null)
  fi
  _gwtrace_put_begin "$begin" "$_gwtrace_gl_trace" "$_gwtrace_gl_condor" "$3" condor
  _gwtrace_put_end "$end" "$_gwtrace_gl_trace" "$_gwtrace_gl_condor" ok
}

# _gwtrace_gl_cleanup PHASE GLIDEIN_CONFIG: the clean-up scripts' work.
# "begin" (sorted first) notes the time; "end" (sorted last) records the
# clean-up span, ends the root with the glidein's status and final
# resources, and stops the sidecar (it ships what is left into the .err).
_gwtrace_gl_cleanup() {
  local now=${EPOCHREALTIME-} start='' span
  _gwtrace_gl_lib || return 0
  [[ -n $now ]] || { _gwtrace_now; now=$_gwtrace_clock; }
  if [[ $1 == begin ]]; then
    printf '%s\n' "$now" >"$_gwtrace_gl_dir/cleanup"
    return 0
  fi
  read -r start <"$_gwtrace_gl_dir/cleanup" || start=$now
  [[ $_gwtrace_gl_sampled == 1 ]] || { _gwtrace_gl_stop; return 0; }
  _gwtrace_gl_id "$_gwtrace_gl_trace/cleanup" && span=$_gwtrace_gl_r
  _gwtrace_put_begin "$start" "$_gwtrace_gl_trace" "$span" "$_gwtrace_gl_root" cleanup
  _gwtrace_put_end "$now" "$_gwtrace_gl_trace" "$span" ok
  _gwtrace_gl_end_root "$now" "${2-}"
  _gwtrace_gl_stop
}

# _gwtrace_gl_stop: stop the sidecar (it ships what is left into the .err).
_gwtrace_gl_stop() {
  [[ -z $_gwtrace_gl_pyz ]] ||
    GWTRACE_EXPORT=ship-home "$_gwtrace_gl_python" -I -S "$_gwtrace_gl_pyz" sidecar stop --dir "$_gwtrace_gl_sidecar" \
      --ship-to stderr >/dev/null </dev/null || :
}

# _gwtrace_gl_end_root NOW GLIDEIN_CONFIG: the root's end. ERROR when the
# glidein was signalled (glidein_startup.sh's on_die line in the .err) or
# its last step failed (a validation script, or HTCondor); attributes: the
# exit code, the failing script, CPUs, memory and GPUs as GlideinWMS set them.
_gwtrace_gl_end_root() {
  local id='' ret=0 detail='' status=ok key value cpus='' memory='' gpus='' signal='' line code err
  local -a attrs=()
  IFS=$'\t' read -r id ret detail <"$_gwtrace_gl_dir/last" || :
  err=${_gwtrace_gl_err:-/proc/$PPID/fd/2}
  if [[ -f $err ]]; then
    line=$(grep -a -m1 '^Received kill signal' "$err" 2>/dev/null) || line=''
    [[ $line =~ forwarding\ ([A-Z0-9]+)\ signal ]] && signal=${BASH_REMATCH[1]}
  fi
  if [[ -r ${2-} ]]; then
    while read -r key value; do
      case $key in
        GLIDEIN_CPUS) cpus=$value ;;
        MEMORY|GLIDEIN_MaxMemMBs) memory=$value ;;
        GLIDEIN_GPUS) gpus=$value ;;
      esac
    done <"$2"
  fi
  code=$ret
  [[ $id == *condor_startup.sh || $ret == 0 ]] || code=1
  if [[ -n $signal ]]; then
    status="killed by $signal while running ${id:-its first steps}"
  elif [[ $ret != 0 ]]; then
    status="${id:-a step} failed (exit $ret)${detail:+: $detail}"
    attrs+=("glidein.failed_script=$id")
  fi
  attrs+=("glidein.exit_code=$code")
  [[ -z $signal ]] || attrs+=("glidein.signal=$signal")
  [[ -z $cpus ]] || attrs+=("glidein.cpus=$cpus")
  [[ -z $memory ]] || attrs+=("glidein.memory_mb=$memory")
  [[ -z $gpus ]] || attrs+=("glidein.gpus=$gpus")
  [[ ! -f $_gwtrace_gl_sidecar/stderr/$_gwtrace_gl_trace-$_gwtrace_gl_root ]] || attrs+=("gwtrace.stderr.registered=true")
  _gwtrace_put_end "$1" "$_gwtrace_gl_trace" "$_gwtrace_gl_root" "$status" "${attrs[@]}"
}
# ---- end of the step hook

# glidein_log NAME: the copy of the glidein's stdout (GLIDEIN_STDOUT_LOGFILE)
# or stderr that glidein_startup.sh's logging keeps (its output goes through
# `tee` into GLIDEIN_LOGDIR), into gwtrace_r; '' when it keeps none.
glidein_log() {
  local base dir file
  setting GLIDEIN_LOG_RELATIVE_BASEPATH; base=$gwtrace_r
  setting GLIDEIN_LOGDIR; dir=$gwtrace_r
  setting "$1"; file=$gwtrace_r
  gwtrace_r=''
  [[ -n $base && -n $dir && -n $file && -f $base/$dir/$file ]] && gwtrace_r=$base/$dir/$file
  return 0
}

# write_hook_file: steps.sh in the state directory: the settings and the
# hook's functions, as this script has them.
write_hook_file() {
  local condor out err
  glidein_log GLIDEIN_STDOUT_LOGFILE; out=$gwtrace_r
  glidein_log GLIDEIN_STDERR_LOGFILE; err=$gwtrace_r
  derive_id "$gwtrace_trace/condor" && condor=$gwtrace_r
  gwtrace_condor_tp=00-$gwtrace_trace-$condor-$gwtrace_flags
  {
    echo '# Written by gwtrace_setup.sh: the glidein step hook (docs/deploy.md).'
    printf '_gwtrace_gl_%s=%q\n' log "${GWTRACE_SOCKET#file://}" boot "${GWTRACE_BOOT_US-}" dir "$gwtrace_dir" \
      libfile "$gwtrace_here/gwtrace.sh" trace "$gwtrace_trace" root "$gwtrace_root" condor "$condor" \
      python "$gwtrace_python" pyz "$gwtrace_pyz" sidecar "$GWTRACE_DIR" out "$out" err "$err" \
      sampled "$gwtrace_sampled"
    declare -f _gwtrace_gl_hook _gwtrace_gl_lib _gwtrace_gl_id _gwtrace_gl_text _gwtrace_gl_step _gwtrace_gl_condor \
      _gwtrace_gl_cleanup _gwtrace_gl_stop _gwtrace_gl_end_root
  } >"$gwtrace_dir/steps.sh.tmp" && mv -f "$gwtrace_dir/steps.sh.tmp" "$gwtrace_dir/steps.sh"
  register_stderr "$err"
}

# register_stderr [FILE]: tell the sidecar where the glidein scripts' stderr
# goes (the copy GLIDEIN_LOGDIR keeps, else our own stderr when it is a
# file, the glidein's .err): for a step that fails it adds that file's last
# lines to the step's span (gwtrace/sidecar/failure.py); GlideinWMS's
# <detail> stays the span's message. Once, at set-up.
register_stderr() {
  local file=${1-} dir=${GWTRACE_DIR-}/stderr
  [[ -n $file ]] || { [[ -f /proc/$$/fd/2 ]] && file=$(readlink /proc/$$/fd/2 2>/dev/null); } || file=''
  [[ $file == /* && $file != *$'\n'* && $file != *' (deleted)' && -d $dir && -O $dir ]] || return 0
  printf '%s\n' "$file" >"$dir/$gwtrace_trace-$gwtrace_root" 2>/dev/null || :
}

# hook_error_augment: error_augment.sh first sources steps.sh with its own
# arguments, then does what it always did (its code follows, unchanged). The
# file is replaced atomically, and only if the new one could be written whole.
hook_error_augment() {
  local target first
  target=$(dirname "$error_gen")/error_augment.sh
  [[ -f $target && -w ${target%/*} ]] || return 1
  grep -q '^# gwtrace step hook' "$target" && return 0
  IFS= read -r first <"$target" || return 1
  {
    echo '#!/bin/bash'
    echo '# gwtrace step hook (gwtrace_setup.sh): record this step, then run error_augment.sh as it was.'
    printf '[[ -r %q ]] && source %q "$@" >/dev/null 2>&1 && _gwtrace_gl_hook "$@" >/dev/null 2>&1\n' \
      "$gwtrace_dir/steps.sh" "$gwtrace_dir/steps.sh"
    if [[ $first == '#!'* ]]; then tail -n +2 "$target"; else cat "$target"; fi
  } >"$target.gwtrace" && chmod --reference="$target" "$target.gwtrace" && mv -f "$target.gwtrace" "$target"
}

# scripts_level: with GWTRACE_SCRIPTS_LEVEL (scripts, functions or commands)
# and a glidein_startup.sh that reads GLIDEIN_SCRIPTS_BASH_ENV (the change in
# deploy/glidein_startup-scripts-bash-env.patch), each later script runs with
# BASH_ENV on script_env.sh: the auto layer traces inside it (docs/shim.md),
# under the script's step span. Into gwtrace_scripts: the level, or "steps"
# (one span per script).
scripts_level() {
  local level=$gwtrace_level startup auto
  gwtrace_scripts=$level
  [[ $gwtrace_sampled == 1 ]] || { gwtrace_scripts=unsampled; return 0; }
  [[ $level == off ]] || gwtrace_scripts=steps
  # With a controller, script_env.sh is installed even at "steps" or "off": the level file may rise later.
  [[ -n $level && $level != @(steps|off) ]] || [[ -n ${GWTRACE_CONTROLLER-} ]] || return 0
  if [[ $level != @(steps|off|scripts|functions|commands) ]]; then
    echo "$gwtrace_me: GWTRACE_SCRIPTS_LEVEL=$level is not scripts, functions or commands: one span per script" >&2
    return 0
  fi
  startup=$(readlink "/proc/$PPID/fd/255" 2>/dev/null) || startup=''
  if [[ ! -r $startup ]] || ! grep -q GLIDEIN_SCRIPTS_BASH_ENV "$startup"; then
    [[ $level == @(steps|off) ]] ||      # nothing lost at steps or off: no line in the .err
      echo "$gwtrace_me: this glidein_startup.sh does not read GLIDEIN_SCRIPTS_BASH_ENV: one span per script" >&2
    return 0
  fi
  auto=$("$gwtrace_python" -I -S "$gwtrace_pyz" lib --auto --dir "$gwtrace_dir/auto" 2>/dev/null) && [[ -r $auto ]] || return 0
  write_script_env "$level" "$auto" || return 0
  gconfig_add GLIDEIN_SCRIPTS_BASH_ENV "$gwtrace_dir/script_env.sh"
  gwtrace_scripts=$level
}

# write_script_env LEVEL AUTO: script_env.sh, which bash sources before each
# script glidein_startup.sh runs (and, inherited, before every bash below
# it). In the script itself (its parent is glidein_startup.sh) it points
# TRACEPARENT at the script's step span (the id the step hook will give it:
# its place in otr_outlist.list and GlideinWMS's id, "ID/name" from the
# script's arguments); the auto layer does the rest. The level is the level
# file's ($GWTRACE_DIR/level, read with `read -r`, no process) when the script
# starts: the controller's, changed by the back channel while the glidein
# runs; "steps" or "off" there: the script runs untraced.
write_script_env() {
  local pid
  setting GLIDEIN_STARTUP_PID; pid=$gwtrace_r
  {
    echo '# Written by gwtrace_setup.sh: BASH_ENV of the glidein scripts (GLIDEIN_SCRIPTS_BASH_ENV).'
    printf '_gwtrace_se_pid=%q _gwtrace_se_trace=%q _gwtrace_se_auto=%q _gwtrace_se_levelfile=%q\n' \
      "$pid" "$gwtrace_trace" "$2" "$GWTRACE_DIR/level"
    printf 'export GWTRACE_SOCKET=%q GWTRACE_BOOT_US=%q\n' "$GWTRACE_SOCKET" "${GWTRACE_BOOT_US-}"
    cat <<EOF
if [[ \$PPID == "\$_gwtrace_se_pid" && -z \${GWTRACE_AUTO_LEVEL-} ]]; then
  _gwtrace_se_level=$1
  { read -r _gwtrace_se_level <"\$_gwtrace_se_levelfile"; } 2>/dev/null
  case \$_gwtrace_se_level in
    scripts|functions|commands)
      export GWTRACE_AUTO_LEVEL=\$_gwtrace_se_level
      _gwtrace_se_id=\$(grep -c '<OSGTestResult ' otr_outlist.list 2>/dev/null)/\${2:+\$2/}\${0##*/}
      _gwtrace_se_id=\$(printf '%s' "\$_gwtrace_se_trace/script/\$_gwtrace_se_id" | sha256sum) &&
        export TRACEPARENT=00-\$_gwtrace_se_trace-\${_gwtrace_se_id:0:16}-$gwtrace_flags ;;
  esac
  unset _gwtrace_se_id _gwtrace_se_level
fi
unset _gwtrace_se_pid _gwtrace_se_trace _gwtrace_se_levelfile
[[ -n \${GWTRACE_AUTO_LEVEL-} && -r \$_gwtrace_se_auto ]] && source "\$_gwtrace_se_auto"
unset _gwtrace_se_auto
EOF
  } >"$gwtrace_dir/script_env.sh"
}

# install_cleanup: two clean-up scripts glidein_exit runs in name order,
# around the others: gwtrace-0-begin first, zz-gwtrace-end last.
install_cleanup() {
  local dir phase name
  setting GLIDEIN_WORK_DIR
  dir=${GWMS_DIR:-${gwtrace_r%/*}/.gwms.d}/exec/cleanup
  [[ -d $dir && -w $dir ]] || return 1
  for phase in begin end; do
    name=$dir/0-gwtrace-begin.sh
    [[ $phase == end ]] && name=$dir/zz-gwtrace-end.sh
    {
      echo '#!/bin/bash'
      echo "# Written by gwtrace_setup.sh: the glidein's clean-up ($phase) in its trace (docs/deploy.md)."
      # stderr stays the glidein's (.err): the sidecar's stop ships what is left there.
      # shellcheck disable=SC2016  # "$1" is the clean-up script's argument
      printf 'source %q && _gwtrace_gl_cleanup %s "$1" >/dev/null\nexit 0\n' "$gwtrace_dir/steps.sh" "$phase"
    } >"$name" && chmod 0755 "$name" || return 1
  done
}

main() {
  local disable start workspace
  setting GWTRACE_DISABLE; disable=$gwtrace_r
  [[ $disable == [1Tt]* ]] && tracing_off "GWTRACE_DISABLE is set"
  [[ -r $gwtrace_here/gwtrace.sh ]] || tracing_off "gwtrace.sh not found"
  gwtrace_pyz='' gwtrace_python='' gwtrace_sidecar=started
  state_dir || tracing_off "cannot create a private directory next to the glidein's work directory"
  if running_sidecar; then
    gwtrace_sidecar=reused    # e.g. the whole glidein runs under `gwtrace run`
    glidein_context || tracing_off "no sha256sum to derive the glidein's trace id"
  else
    setting GWTRACE_PYZ; gwtrace_pyz=$gwtrace_r
    gwtrace_pyz=${gwtrace_pyz:-$gwtrace_here/gwtrace-sidecar.pyz}
    [[ -r $gwtrace_pyz ]] || tracing_off "gwtrace-sidecar.pyz not found"
    find_python || tracing_off "$gwtrace_reason"
    exporter_env
    glidein_context || tracing_off "no sha256sum to derive the glidein's trace id"
    start_sidecar
  fi
  control_decision
  # shellcheck source=/dev/null
  source "$gwtrace_here/gwtrace.sh"
  glidein_start
  start=${gwtrace_r:-${gwtrace_started:-$(date +%s).000000}}
  # Unsampled: no span of the glidein at all (its jobs follow the flag).
  [[ $gwtrace_sampled == 0 ]] ||
    _gwtrace_put_begin "$start" "$gwtrace_trace" "$gwtrace_root" "$gwtrace_parent" glidein \
      "glidein.script_id=$gwtrace_id" "${gwtrace_control_attrs[@]}"
  setting GLIDEIN_WORKSPACE_ORIG; workspace=$gwtrace_r
  # Under a tracing wrapper every script is already a span (the auto layer).
  if [[ $gwtrace_sidecar == started && $gwtrace_sampled == 1 && $gwtrace_level != off ]]; then
    record_earlier_steps "${workspace:-$PWD}/otr_outlist.list" "$start"
    # This script's own step: the hook ends it (it began before the hook was there).
    [[ -z $gwtrace_started ]] || printf '%s\n' "$gwtrace_started" >"$gwtrace_dir/step.$PPID"
  fi
  write_hook_file
  gwtrace_steps=off
  [[ $gwtrace_sidecar == started ]] && hook_error_augment && gwtrace_steps=on

  publish GWTRACE_DIR "$GWTRACE_DIR" job
  publish GWTRACE_SOCKET "$GWTRACE_SOCKET" job
  publish GWTRACE_BOOT_US "$GWTRACE_BOOT_US" job
  # User jobs are children of HTCondor's span, which the step hook writes;
  # without the hook (under a tracing wrapper), of the root.
  [[ $gwtrace_steps == on ]] || gwtrace_condor_tp=00-$gwtrace_trace-$gwtrace_root-$gwtrace_flags
  publish GWTRACE_GLIDEIN_TRACEPARENT "$gwtrace_condor_tp" job
  publish GWTRACE_SIDECAR_PID "$GWTRACE_SIDECAR_PID"
  publish GWTRACE_LIB "$gwtrace_here/gwtrace.sh" job
  [[ -z $gwtrace_python ]] || publish GWTRACE_PYTHON "$gwtrace_python" job
  [[ -z $gwtrace_pyz ]] || publish GWTRACE_PYZ "$gwtrace_pyz" job
  publish TRACEPARENT "00-$gwtrace_trace-$gwtrace_root-$gwtrace_flags"
  chain_job_wrapper
  scripts_level
  gwtrace_cleanup=on
  install_cleanup || gwtrace_cleanup=off

  "$error_gen" -ok "$gwtrace_me" GWTrace on GWTraceSteps "$gwtrace_steps" GWTraceScripts "$gwtrace_scripts" \
    GWTraceCleanup "$gwtrace_cleanup" \
    GWTraceSidecar "$gwtrace_sidecar" GWTraceId "$gwtrace_trace"
  exit 0
}

main
