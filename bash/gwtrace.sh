# shellcheck shell=bash
#
# gwtrace.sh - zero-fork OpenTelemetry tracing for bash scripts (bash 4.2+).
#
#   source "$(gwtrace lib)"
#   trace_begin validate_node site=FNAL cores=8
#     trace_run check_disk df -h /tmp
#     trace_event "disk ok" free_gb=120
#     trace_attr node.kind=worker
#   trace_end
#
# Each call appends one line (docs/protocol.md) to the sidecar's event log,
# named by GWTRACE_SOCKET (file:///path) or, without it, GWTRACE_DIR/events.log.
# An append to a regular file never blocks, never raises SIGPIPE and survives
# a SIGKILL of the sidecar; docs/design.md explains why this is the transport.
#
# Rules every function here keeps (the host script must never notice us):
#   - no forks: builtins, parameter expansion and arithmetic only;
#   - $? after a call is what it was before it (0 under `set -e`, so that
#     `cmd || trace_end` never turns into an exit);
#   - nothing is printed: the public functions run with fd 2 closed, which
#     also hides their internals from `set -x`;
#   - no command may fail under `set -euo pipefail`, no variable leaks except
#     the _gwtrace_* state, no shell option or trap is touched;
#   - globs instead of =~ (which would overwrite the host's BASH_REMATCH).

[[ -n ${_gwtrace_loaded-} ]] && return 0

_gwtrace_loaded=1
_gwtrace_depth=0        # number of open spans in this shell
_gwtrace_tr=()          # per open span: trace id (32 hex)
_gwtrace_sp=()          # per open span: span id (16 hex)
_gwtrace_fl=()          # per open span: W3C trace flags (2 hex)
_gwtrace_ts=()          # per open span: tracestate ('' if none)
_gwtrace_otp=()         # per open span: TRACEPARENT before it ('' + _gwtrace_otpset=0 if unset)
_gwtrace_otpset=()
_gwtrace_ots=()         # per open span: TRACESTATE before it
_gwtrace_otsset=()
_gwtrace_base_tr=''     # incoming context, read from TRACEPARENT when sourced
_gwtrace_base_sp=''
_gwtrace_base_fl=''
_gwtrace_base_ts=''
_gwtrace_rng=0          # splitmix64 state, reseeded in every new process
_gwtrace_rng_pid=''
_gwtrace_boot_us=0      # wall-clock time of boot, for the bash < 5 clock
_gwtrace_r=''           # scratch results of the helpers (avoids $(...) forks)
_gwtrace_t=''
_gwtrace_line=''

# --- public API ------------------------------------------------------------

# trace_begin NAME [KEY=VALUE...]: open a span, child of the innermost open
# span (or of the incoming TRACEPARENT), and export TRACEPARENT for children.
# The hot path is written inline: a bash function call costs as much as the
# write itself, so begin and end make as few of them as possible.
trace_begin() {
  local _gwtrace_rc=$? d=$_gwtrace_depth trace parent remote flags state span z name=${1-} path a t=$'\t'
  if [[ -z $name || -n ${GWTRACE_DISABLED-}${OTEL_SDK_DISABLED-} ]] && _gwtrace_skip "$#"; then
    [[ -o errexit ]] && return 0
    return "$_gwtrace_rc"
  fi
  if (( d > 0 )); then
    trace=${_gwtrace_tr[d-1]} parent=${_gwtrace_sp[d-1]} remote=0 flags=${_gwtrace_fl[d-1]} state=${_gwtrace_ts[d-1]}
  elif [[ -n $_gwtrace_base_tr ]]; then
    trace=$_gwtrace_base_tr parent=$_gwtrace_base_sp remote=1 flags=$_gwtrace_base_fl state=$_gwtrace_base_ts
  else
    _gwtrace_trace_id; trace=$_gwtrace_r parent=- remote=0 flags=01 state=''
  fi
  # Span id: one splitmix64 step (see _gwtrace_rand64), never zero.
  [[ $_gwtrace_rng_pid == "$BASHPID" ]] || _gwtrace_reseed
  builtin printf -v span '%016x' $(( z = (_gwtrace_rng += -7046029254386353131),
        z = (z ^ ((z >> 30) & 0x3FFFFFFFF)) * -4658895280553007687,
        z = (z ^ ((z >> 27) & 0x1FFFFFFFFF)) * -7723592293110705685,
        z = z ^ ((z >> 31) & 0x1FFFFFFFF), z ? z : 1 ))
  if [[ $flags == ?[13579bdf] ]]; then
    [[ $name$state == *[$'\\\t\n\r']* ]] && { _gwtrace_esc "$name"; name=$_gwtrace_r; _gwtrace_esc "$state"; state=$_gwtrace_r; }
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    _gwtrace_line="gw1${t}B${t}${EPOCHREALTIME:-$_gwtrace_t}${t}${BASHPID}${t}${trace}${t}${span}${t}${parent}${t}${remote}${t}${flags}${t}${state:--}${t}${name}"
    shift
    for a in "$@"; do   # as _gwtrace_attrs, inline
      case ${a,,} in
        *token*=*|*secret*=*|*passw*=*|*proxy*=*|*credential*=*|*cookie*=*|*authorization*=*|\
        *apikey*=*|*api_key*=*|*private_key*=*|*=bearer\ *|*=eyj*.*.*) a="${a%%=*}=[REDACTED]" ;;
      esac
      [[ $a == *[$'\\\t\n\r']* ]] && { _gwtrace_esc "$a"; a=$_gwtrace_r; }
      _gwtrace_line+=$t$a
    done
    path=${GWTRACE_SOCKET:-${GWTRACE_DIR:+file://$GWTRACE_DIR/events.log}}
    if [[ $path == file://?* ]]; then
      (( ${#_gwtrace_line} < 1000 )) || _gwtrace_shrink
      builtin printf '%s\n' "$_gwtrace_line" >>"${path#file://}" || :
    fi
  fi
  # Push the span, remembering the TRACEPARENT/TRACESTATE it hides.
  _gwtrace_tr[d]=$trace _gwtrace_sp[d]=$span _gwtrace_fl[d]=$flags _gwtrace_ts[d]=$state \
    _gwtrace_otp[d]=${TRACEPARENT-} _gwtrace_otpset[d]=${TRACEPARENT+1} \
    _gwtrace_ots[d]=${TRACESTATE-} _gwtrace_otsset[d]=${TRACESTATE+1} _gwtrace_depth=$((d + 1))
  builtin export TRACEPARENT="00-$trace-$span-$flags"
  if [[ -n $state${TRACESTATE+1} ]]; then
    if [[ -n $state ]]; then builtin export TRACESTATE="${_gwtrace_ts[d]}"; else builtin unset TRACESTATE; fi
  fi
  [[ -o errexit ]] && return 0
  return "$_gwtrace_rc"
} 2>&-

# trace_end [STATUS] [KEY=VALUE...]: end the innermost span. STATUS is an exit
# code (default: $?), `ok`, `error` or an error message; it is also returned.
trace_end() {
  local _gwtrace_rc=$? d=$((_gwtrace_depth - 1)) status=$? code=$? path a t=$'\t'
  if [[ $d -lt 0 || -n ${GWTRACE_DISABLED-}${OTEL_SDK_DISABLED-} ]] && _gwtrace_skip "$((d + 1))"; then
    [[ -o errexit ]] && return 0
    return "$_gwtrace_rc"
  fi
  if [[ -n ${1-} && $1 != *=* ]]; then
    status=$1; shift
    case $status in
      ok|OK) code=0 ;;
      error|ERROR) status=error code=1 ;;
      *) if [[ -n $status && $status != *[!0-9]* && ${#status} -lt 10 ]]; then
           code=$((10#$status)) status=$((10#$status))
         else
           _gwtrace_esc "$status"; status="error:$_gwtrace_r" code=1
         fi ;;
    esac
  fi
  if [[ ${_gwtrace_fl[d]} == ?[13579bdf] ]]; then
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    _gwtrace_line="gw1${t}E${t}${EPOCHREALTIME:-$_gwtrace_t}${t}${BASHPID}${t}${_gwtrace_tr[d]}${t}${_gwtrace_sp[d]}${t}${status}"
    for a in "$@"; do   # as _gwtrace_attrs, inline
      case ${a,,} in
        *token*=*|*secret*=*|*passw*=*|*proxy*=*|*credential*=*|*cookie*=*|*authorization*=*|\
        *apikey*=*|*api_key*=*|*private_key*=*|*=bearer\ *|*=eyj*.*.*) a="${a%%=*}=[REDACTED]" ;;
      esac
      [[ $a == *[$'\\\t\n\r']* ]] && { _gwtrace_esc "$a"; a=$_gwtrace_r; }
      _gwtrace_line+=$t$a
    done
    path=${GWTRACE_SOCKET:-${GWTRACE_DIR:+file://$GWTRACE_DIR/events.log}}
    if [[ $path == file://?* ]]; then
      (( ${#_gwtrace_line} < 1000 )) || _gwtrace_shrink
      builtin printf '%s\n' "$_gwtrace_line" >>"${path#file://}" || :
    fi
  fi
  # Pop the span and give back the TRACEPARENT/TRACESTATE it hid.
  _gwtrace_depth=$d
  if [[ -n ${_gwtrace_otpset[d]} ]]; then
    builtin export TRACEPARENT="${_gwtrace_otp[d]}"
  else
    builtin unset TRACEPARENT
  fi
  if [[ -n ${_gwtrace_otsset[d]}${TRACESTATE+1} ]]; then
    if [[ -n ${_gwtrace_otsset[d]} ]]; then builtin export TRACESTATE="${_gwtrace_ots[d]}"; else builtin unset TRACESTATE; fi
  fi
  [[ -o errexit ]] && return 0
  return "$code"
} 2>&-

# trace_event NAME [KEY=VALUE...]: a timestamped event on the innermost span.
trace_event() {
  local _gwtrace_rc=$?
  if _gwtrace_off || (( _gwtrace_depth == 0 || $# == 0 )); then
    _gwtrace_keep "$_gwtrace_rc"; return
  fi
  local d=$((_gwtrace_depth - 1)) t=$'\t'
  if _gwtrace_sampled "${_gwtrace_fl[d]}"; then
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    _gwtrace_esc "$1"
    _gwtrace_line="gw1${t}V${t}${EPOCHREALTIME:-$_gwtrace_t}${t}${BASHPID}${t}${_gwtrace_tr[d]}${t}${_gwtrace_sp[d]}${t}${_gwtrace_r}"
    shift
    _gwtrace_attrs "$@"
    _gwtrace_emit
  fi
  _gwtrace_keep "$_gwtrace_rc"
} 2>&-

# trace_attr KEY=VALUE...: set attributes on the innermost span.
trace_attr() {
  local _gwtrace_rc=$?
  if _gwtrace_off || (( _gwtrace_depth == 0 || $# == 0 )); then
    _gwtrace_keep "$_gwtrace_rc"; return
  fi
  local d=$((_gwtrace_depth - 1)) t=$'\t'
  if _gwtrace_sampled "${_gwtrace_fl[d]}"; then
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    _gwtrace_line="gw1${t}A${t}${EPOCHREALTIME:-$_gwtrace_t}${t}${BASHPID}${t}${_gwtrace_tr[d]}${t}${_gwtrace_sp[d]}"
    _gwtrace_attrs "$@"
    _gwtrace_emit
  fi
  _gwtrace_keep "$_gwtrace_rc"
} 2>&-

# trace_run NAME CMD [ARGS...]: run CMD inside a span named NAME and return
# its status. Only the command's basename is recorded, never its arguments.
# Shell functions, eval and source run as plain commands so that `set -e`
# keeps working inside them; if they make the shell exit, the sidecar ends
# the span as incomplete.
trace_run() {
  local _gwtrace_rc=$?
  if (( $# < 2 )); then
    _gwtrace_keep "$_gwtrace_rc"; return
  fi
  local _gwtrace_name=$1
  shift
  trace_begin "$_gwtrace_name" "process.executable.name=${1##*/}"
  if _gwtrace_is_shell_code "$1"; then
    "$@"
    _gwtrace_rc=$?
  elif "$@"; then
    _gwtrace_rc=0
  else
    _gwtrace_rc=$?
  fi
  trace_end "$_gwtrace_rc"
  return "$_gwtrace_rc"
}

# --- internals -------------------------------------------------------------

# _gwtrace_skip COUNT: true when a call must do nothing: tracing is off, or
# COUNT (arguments for trace_begin, open spans for trace_end) is zero.
_gwtrace_skip() {
  (( $1 == 0 )) || _gwtrace_off
}

# True when tracing is switched off (GWTRACE_DISABLED=1, OTEL_SDK_DISABLED=true).
_gwtrace_off() {
  [[ ${GWTRACE_DISABLED-} == 1 || ${OTEL_SDK_DISABLED-} == [Tt][Rr][Uu][Ee] ]]
}

# Return $1, or 0 under `set -e`: a handled failure must never become an exit.
_gwtrace_keep() {
  [[ -o errexit ]] && return 0
  return "$1"
}

_gwtrace_sampled() {
  [[ $1 == ?[13579bdf] ]]
}

_gwtrace_is_shell_code() {
  case $1 in
    eval|source|.) return 0 ;;
  esac
  declare -F -- "$1" >/dev/null 2>&1
}

# _gwtrace_now: the time as "seconds.microseconds" (the form of bash 5's
# EPOCHREALTIME) into _gwtrace_t, for bash 4: /proc/uptime (10 ms resolution)
# plus the boot time, without forking.
_gwtrace_now() {
  local up='' us
  IFS= builtin read -r up </proc/uptime || up=''
  up=${up%% *}
  if [[ $up == [0-9]*.[0-9][0-9] && $up != *[!0-9.]* ]]; then
    us=$(( _gwtrace_boot_us + 10#${up/./} * 10000 ))
    builtin printf -v _gwtrace_t '%d.%06d' $((us / 1000000)) $((us % 1000000))
  else
    builtin printf -v _gwtrace_t '%(%s)T.000000' -1
  fi
  return 0
}

# _gwtrace_rand64: 16 hex digits, never all zero, into _gwtrace_r. splitmix64
# over a per-process state: a subshell inherits the state, so a new BASHPID
# reseeds it from the kernel (fork-free read of /proc/sys/kernel/random/uuid).
_gwtrace_rand64() {
  [[ $_gwtrace_rng_pid == "$BASHPID" ]] || _gwtrace_reseed
  local z=0
  while (( z == 0 )); do
    _gwtrace_rng=$(( _gwtrace_rng + -7046029254386353131 ))
    z=$_gwtrace_rng
    z=$(( (z ^ ((z >> 30) & 0x3FFFFFFFF)) * -4658895280553007687 ))
    z=$(( (z ^ ((z >> 27) & 0x1FFFFFFFFF)) * -7723592293110705685 ))
    z=$(( z ^ ((z >> 31) & 0x1FFFFFFFF) ))
  done
  builtin printf -v _gwtrace_r '%016x' "$z"
}

_gwtrace_trace_id() {
  local hi
  _gwtrace_rand64; hi=$_gwtrace_r
  _gwtrace_rand64; _gwtrace_r=$hi$_gwtrace_r
}

_gwtrace_reseed() {
  local u=''
  IFS= builtin read -r u </proc/sys/kernel/random/uuid || u=''
  u=${u//-/}
  if [[ ${#u} -ge 30 && $u != *[!0-9a-f]* ]]; then
    _gwtrace_rng=$(( (16#${u:0:15} << 4) ^ 16#${u:15:15} ))
  else
    # No kernel randomness: mix the clock (digits only: it is "S.UUUUUU").
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    u=${EPOCHREALTIME:-$_gwtrace_t}
    u=${u//[!0-9]/}
    _gwtrace_rng=$(( _gwtrace_rng ^ (10#${u:-0} * 2654435761) ^ (RANDOM << 16) ))
  fi
  _gwtrace_rng=$(( _gwtrace_rng ^ (BASHPID << 40) ))
  _gwtrace_rng_pid=$BASHPID
}

# _gwtrace_esc STRING: escape backslash, tab, newline and CR into _gwtrace_r.
_gwtrace_esc() {
  _gwtrace_r=$1
  if [[ $_gwtrace_r == *[$'\\\t\n\r']* ]]; then
    local bs=\\
    _gwtrace_r=${_gwtrace_r//"$bs"/"$bs$bs"}
    _gwtrace_r=${_gwtrace_r//$'\t'/"${bs}t"}
    _gwtrace_r=${_gwtrace_r//$'\n'/"${bs}n"}
    _gwtrace_r=${_gwtrace_r//$'\r'/"${bs}r"}
  fi
}

# _gwtrace_attrs KEY=VALUE...: append escaped fields to _gwtrace_line. Values
# of keys that name secrets, and values that look like tokens, never leave
# the process.
_gwtrace_attrs() {
  local a
  for a in "$@"; do
    case ${a,,} in
      *token*=*|*secret*=*|*passw*=*|*proxy*=*|*credential*=*|*cookie*=*|*authorization*=*|\
      *apikey*=*|*api_key*=*|*private_key*=*|*=bearer\ *|*=eyj*.*.*)
        a="${a%%=*}=[REDACTED]" ;;
    esac
    [[ $a == *[$'\\\t\n\r']* ]] && { _gwtrace_esc "$a"; a=$_gwtrace_r; }
    _gwtrace_line+=$'\t'$a
  done
}

# _gwtrace_emit: append _gwtrace_line to the event log (trace_begin and
# trace_end carry an inline copy of these lines: it saves a call per event).
_gwtrace_emit() {
  local path=${GWTRACE_SOCKET:-${GWTRACE_DIR:+file://$GWTRACE_DIR/events.log}}
  [[ $path == file://?* ]] || return 0
  (( ${#_gwtrace_line} < 1000 )) || _gwtrace_shrink
  builtin printf '%s\n' "$_gwtrace_line" >>"${path#file://}" || :
}

# _gwtrace_shrink: one printf is one write(2) below 4096 bytes, and O_APPEND
# writes of one call never interleave with other writers; a longer line is cut
# to stay below that, and marked. (Up to 4 bytes per character when not ASCII.)
_gwtrace_shrink() {
  local max=4000
  [[ $_gwtrace_line == *[![:ascii:]]* ]] && max=1000
  (( ${#_gwtrace_line} > max )) || return 0
  _gwtrace_line=${_gwtrace_line:0:max}
  [[ $_gwtrace_line == *\\ ]] && _gwtrace_line=${_gwtrace_line%\\}
  _gwtrace_line+=$'\tgwtrace.truncated=true'
}

# _gwtrace_is_hex STRING LENGTH: lower-case hex of that length, not all zero.
_gwtrace_is_hex() {
  [[ ${#1} -eq $2 && $1 != *[!0-9a-f]* && $1 == *[1-9a-f]* ]]
}

# Read the W3C context this process was started with (TRACEPARENT and
# TRACESTATE). An invalid traceparent is ignored as a whole: new root spans.
_gwtrace_read_context() {
  local tp=${TRACEPARENT-} ver tr sp fl
  tp=${tp#"${tp%%[![:space:]]*}"}
  tp=${tp%"${tp##*[![:space:]]}"}
  (( ${#tp} >= 55 )) || return 0
  ver=${tp:0:2} tr=${tp:3:32} sp=${tp:36:16} fl=${tp:53:2}
  [[ ${tp:2:1}${tp:35:1}${tp:52:1} == --- ]] || return 0
  [[ $ver != *[!0-9a-f]* && $ver != ff && $fl != *[!0-9a-f]* ]] || return 0
  if [[ $ver == 00 ]]; then
    (( ${#tp} == 55 )) || return 0
  elif (( ${#tp} > 55 )); then
    [[ ${tp:55:1} == - ]] || return 0
  fi
  _gwtrace_is_hex "$tr" 32 && _gwtrace_is_hex "$sp" 16 || return 0
  # Only the sampled (01) and random (02) bits are defined; others go out as 0.
  builtin printf -v fl '%02x' $(( 16#$fl & 3 ))
  _gwtrace_base_tr=$tr _gwtrace_base_sp=$sp _gwtrace_base_fl=$fl
  _gwtrace_base_ts=${TRACESTATE-}
  return 0
}

_gwtrace_init() {
  local up='' now=''
  if [[ -n ${GWTRACE_BOOT_US-} && $GWTRACE_BOOT_US != *[!0-9]* ]]; then
    _gwtrace_boot_us=$GWTRACE_BOOT_US
  elif [[ -z ${EPOCHREALTIME-} ]]; then
    IFS= builtin read -r up </proc/uptime || up=''
    up=${up%% *}
    builtin printf -v now '%(%s)T' -1
    if [[ $up == [0-9]*.[0-9][0-9] && $up != *[!0-9.]* ]]; then
      _gwtrace_boot_us=$(( now * 1000000 - 10#${up/./} * 10000 ))
    fi
  fi
  _gwtrace_read_context
  return 0
}

_gwtrace_init 2>&-
