# shellcheck shell=bash
#
# gwtrace-auto.sh - tracing bash scripts without changing them (docs/shim.md).
#
# `gwtrace run` points BASH_ENV here, so every non-interactive bash below it
# sources this file before its script. GWTRACE_AUTO_LEVEL:
#   scripts    one span per script run: this file only (kept small: every
#              bash parses it)
#   functions  + one span per function call and sourced file (the default):
#              gwtrace-auto-fn.sh, a DEBUG trap with functrace
#   commands   + one span per external command (gwtrace-auto-fn.sh too)
# A BASH_ENV the user had (GWTRACE_AUTO_BASH_ENV) is sourced after this file.
#
# The script must never notice us: no forks, nothing printed, $? $_ PIPESTATUS
# and set -x output as they were (every handler runs with fd 2 closed), only
# _gwtrace_* names. `trap` is a function (gwtrace-auto-trap.sh, loaded on first
# use) that chains our EXIT handler with the script's and prints the script's
# traps, never ours. TRACEPARENT and GWTRACE_AUTO_OPEN go to the environment.

# Top-level commands run in groups with fd 2 closed: `bash -x` traces BASH_ENV too.
{ [[ -z ${_gwtrace_auto_loaded-} ]] || return 0; } 2>&-
{
  _gwtrace_auto_loaded=1
  _gwtrace_adir=${BASH_SOURCE[0]%/*}
  _gwtrace_alevel=0 _gwtrace_alog=''       # level (0 off, 1..3), event log path
  _gwtrace_atr='' _gwtrace_afl='' _gwtrace_ats='' _gwtrace_abase=''   # trace, flags, state, parent
  _gwtrace_amain='' _gwtrace_abd=1         # main $BASHPID; BASH_SOURCE depth of the top level
  _gwtrace_asp0='' _gwtrace_aotp0='' _gwtrace_aotpset0=''   # the script span, TRACEPARENT before it
  _gwtrace_aboot=0 _gwtrace_ar='' _gwtrace_at=''
  _gwtrace_aexit='' _gwtrace_abusy=0       # exit status being handled; our code is running
  _gwtrace_aux='' _gwtrace_auxset='' _gwtrace_auxpid=''     # the script's EXIT trap, set?, where
  _gwtrace_audbg='' _gwtrace_acmd=''       # our DEBUG trap; a pending command span (fn file)
  _gwtrace_atrc=0 _gwtrace_apend='' _gwtrace_aoneshot=''   # `trap` state (trap file)
  # shellcheck disable=SC2016
  _gwtrace_aexit_pre='{ (( _gwtrace_aexit = $?, ++_gwtrace_abusy )); _gwtrace_auto_exit_pre "$_" && : "$_"; } 2>&-'
  # shellcheck disable=SC2016
  _gwtrace_aexit_post='{ (( ++_gwtrace_abusy )); _gwtrace_auto_exit_post; } 2>&-'
} 2>&-

# _gwtrace_auto_now: the time as seconds.microseconds into _gwtrace_at; bash 4
# has no EPOCHREALTIME: /proc/uptime (10 ms) plus the boot time.
_gwtrace_auto_now() {
  local up='' us
  if [[ -n ${EPOCHREALTIME-} ]]; then
    _gwtrace_at=$EPOCHREALTIME
    return 0
  fi
  IFS= builtin read -r up </proc/uptime || up=''
  up=${up%% *}
  if [[ $up == [0-9]*.[0-9][0-9] && $up != *[!0-9.]* ]]; then
    us=$(( _gwtrace_aboot + 10#${up/./} * 10000 ))
    builtin printf -v _gwtrace_at '%d.%06d' $((us / 1000000)) $((us % 1000000))
  else
    builtin printf -v _gwtrace_at '%(%s)T.000000' -1
  fi
}

# _gwtrace_auto_hex: 32 random hex digits into _gwtrace_ar (a kernel uuid,
# read without forking; the clock, pid and SRANDOM if there is none).
_gwtrace_auto_hex() {
  local u=''
  IFS= builtin read -r u </proc/sys/kernel/random/uuid || u=''
  u=${u//-/}
  if [[ ${#u} -ne 32 || $u == *[!0-9a-f]* ]]; then
    _gwtrace_auto_now
    builtin printf -v u '%016x%016x' $(( ${_gwtrace_at//[!0-9]/} * 2654435761 ^ BASHPID << 32 )) \
      $(( (${SRANDOM:-7} << 20 ^ BASHPID) | 1 ))
  fi
  _gwtrace_ar=$u
}

# _gwtrace_auto_esc TEXT: protocol escaping into _gwtrace_ar.
_gwtrace_auto_esc() {
  _gwtrace_ar=$1
  if [[ $_gwtrace_ar == *[$'\\\t\n\r']* ]]; then
    local bs=\\
    _gwtrace_ar=${_gwtrace_ar//"$bs"/"$bs$bs"}
    _gwtrace_ar=${_gwtrace_ar//$'\t'/"${bs}t"}
    _gwtrace_ar=${_gwtrace_ar//$'\n'/"${bs}n"}
    _gwtrace_ar=${_gwtrace_ar//$'\r'/"${bs}r"}
  fi
}

# Read the level, the event log and TRACEPARENT/TRACESTATE (invalid: a new
# trace). Returns 1 when this shell must not be traced.
_gwtrace_auto_context() {
  local tp=${TRACEPARENT-}
  [[ ${GWTRACE_DISABLED-} == 1 || ${OTEL_SDK_DISABLED-} == [Tt][Rr][Uu][Ee] ]] && return 1
  case ${GWTRACE_AUTO_LEVEL:-functions} in
    scripts) _gwtrace_alevel=1 ;;
    functions) _gwtrace_alevel=2 ;;
    commands) _gwtrace_alevel=3 ;;
    *) return 1 ;;
  esac
  _gwtrace_alog=${GWTRACE_SOCKET:-${GWTRACE_DIR:+file://$GWTRACE_DIR/events.log}}
  [[ $_gwtrace_alog == file://?* ]] || return 1
  _gwtrace_alog=${_gwtrace_alog#file://}
  if [[ ${#tp} -eq 55 && $tp == 00-*-*-?? && ${tp:2:1}${tp:35:1}${tp:52:1} == --- \
        && ${tp:3:32}${tp:36:16}${tp:53:2} != *[!0-9a-f]* && ${tp:3:32} == *[1-9a-f]* && ${tp:36:16} == *[1-9a-f]* ]]; then
    (( 16#${tp:53:2} & 1 )) || return 1       # not sampled: nothing to record
    _gwtrace_atr=${tp:3:32} _gwtrace_abase=${tp:36:16}
    builtin printf -v _gwtrace_afl '%02x' $(( 16#${tp:53:2} & 3 ))
    _gwtrace_auto_esc "${TRACESTATE-}"; _gwtrace_ats=$_gwtrace_ar
  else
    _gwtrace_auto_hex; _gwtrace_atr=$_gwtrace_ar _gwtrace_afl=01 _gwtrace_ats=''
  fi
  [[ ${GWTRACE_BOOT_US-} != *[!0-9]* ]] && _gwtrace_aboot=${GWTRACE_BOOT_US:-0}
  return 0
}

# A bash started by `exec` from a traced bash has its pid: end the spans it
# left open (GWTRACE_AUTO_OPEN is "pid:trace,span,span...").
_gwtrace_auto_adopt() {
  local open=${GWTRACE_AUTO_OPEN-} ids tr span t=$'\t'
  [[ ${open%%:*} == "$$" ]] || return 0
  open=${open#*:} tr=${open%%,*} ids=${open#*,}
  [[ ${#tr} -eq 32 && $tr != *[!0-9a-f]* && $open == *,* ]] || return 0
  _gwtrace_auto_now
  while [[ -n $ids ]]; do
    span=${ids##*,}
    if [[ $ids == *,* ]]; then ids=${ids%,*}; else ids=''; fi
    [[ ${#span} -eq 16 && $span != *[!0-9a-f]* ]] || continue
    builtin printf '%s\n' "gw1${t}E${t}${_gwtrace_at}${t}$$${t}${tr}${t}${span}${t}0${t}process.exec=true" >>"$_gwtrace_alog" || :
  done
}

# The script span: name = the script's basename ("bash -c", "bash -s" for
# inline code), its path as an attribute, never its arguments.
_gwtrace_auto_start() {
  local name path='' remote=0 t=$'\t'
  _gwtrace_amain=$BASHPID
  if [[ -n ${BASH_EXECUTION_STRING+x} ]]; then
    name="${0##*/} -c" _gwtrace_abd=0
  elif [[ -f $0 ]]; then
    name=${0##*/} path=$0 _gwtrace_abd=1
    [[ $path == /* ]] || path=$PWD/${path#./}
    _gwtrace_auto_esc "${path:0:1000}"; path=${t}code.file.path=$_gwtrace_ar
  else
    name="${0##*/} -s" _gwtrace_abd=0
  fi
  _gwtrace_auto_adopt
  _gwtrace_auto_esc "$name"; name=$_gwtrace_ar
  _gwtrace_auto_hex; _gwtrace_asp0=${_gwtrace_ar:0:16}
  _gwtrace_auto_now
  [[ -n $_gwtrace_abase ]] && remote=1
  builtin printf '%s\n' "gw1${t}B${t}${_gwtrace_at}${t}${BASHPID}${t}${_gwtrace_atr}${t}${_gwtrace_asp0}${t}${_gwtrace_abase:--}${t}${remote}${t}${_gwtrace_afl}${t}${_gwtrace_ats:--}${t}${name}${t}gwtrace.kind=script${t}process.pid=$$${path}" >>"$_gwtrace_alog" || :
  _gwtrace_aotp0=${TRACEPARENT-} _gwtrace_aotpset0=${TRACEPARENT+1}
  builtin export TRACEPARENT="00-$_gwtrace_atr-$_gwtrace_asp0-$_gwtrace_afl"
  builtin export GWTRACE_AUTO_OPEN="$BASHPID:$_gwtrace_atr,$_gwtrace_asp0"
  builtin trap -- "$_gwtrace_aexit_pre"$'\n'"$_gwtrace_aexit_post" EXIT
}

_gwtrace_auto_init() {
  _gwtrace_auto_context || { _gwtrace_alevel=0; return 0; }
  _gwtrace_auto_start
  if (( _gwtrace_alevel >= 2 )); then
    # shellcheck source=gwtrace-auto-fn.sh
    builtin source "$_gwtrace_adir/gwtrace-auto-fn.sh" || _gwtrace_alevel=1
  fi
  return 0
}

# --- exit -------------------------------------------------------------------

# Our EXIT trap, with the script's own handler (if any) between our two parts:
# the first records the exit status (and gives the handler $? and $_ as they
# were), the second ends the spans after the handler (or in `exit`, if the
# handler calls it). The handler starts on line 1, as it would.
_gwtrace_auto_exit_install() {
  if [[ -n $_gwtrace_auxset && $_gwtrace_auxpid == "$BASHPID" ]]; then
    builtin trap -- "$_gwtrace_aexit_pre; $_gwtrace_aux"$'\n'"$_gwtrace_aexit_post" EXIT
  else
    builtin trap -- "$_gwtrace_aexit_pre"$'\n'"$_gwtrace_aexit_post" EXIT
  fi
}

_gwtrace_auto_exit_pre() {
  if [[ -n $_gwtrace_auxset && $_gwtrace_auxpid == "$BASHPID" ]]; then
    # shellcheck disable=SC2317  # called by the script's handler
    exit() { _gwtrace_auto_exit_now "$?" "$@"; } 2>&-
  fi
  _gwtrace_abusy=0
  return "$_gwtrace_aexit"
}

_gwtrace_auto_exit_post() {
  local t=$'\t'
  [[ -n $_gwtrace_aexit ]] || return 0
  if (( _gwtrace_alevel >= 2 )); then
    [[ -z $_gwtrace_acmd ]] || _gwtrace_auto_cmd_end "$_gwtrace_aexit"
    _gwtrace_auto_unwind "$_gwtrace_aexit"
    [[ -z $_gwtrace_audbg ]] || builtin trap - DEBUG
  elif [[ $BASHPID == "$_gwtrace_amain" && -n $_gwtrace_asp0 ]]; then
    _gwtrace_auto_now
    builtin printf '%s\n' "gw1${t}E${t}${_gwtrace_at}${t}${BASHPID}${t}${_gwtrace_atr}${t}${_gwtrace_asp0}${t}${_gwtrace_aexit}" >>"$_gwtrace_alog" || :
    _gwtrace_asp0=''
  fi
  _gwtrace_aexit=''
}

# exit, while the script's EXIT handler runs: record the status it gives.
_gwtrace_auto_exit_now() {
  local rc=$1
  (( ++_gwtrace_abusy ))
  shift
  [[ ${1-} == +([0-9]) ]] && _gwtrace_aexit=$(( 10#${1: -9} & 255 ))
  [[ ${1-} == -- && ${2-} == +([0-9]) ]] && _gwtrace_aexit=$(( 10#${2: -9} & 255 ))
  _gwtrace_auto_exit_post
  _gwtrace_auto_rc "$rc"
  builtin exit "$@"
}

_gwtrace_auto_rc() {
  return "$1"
}

# --- start ------------------------------------------------------------------

{ _gwtrace_auto_init; } 2>&-

# The script's `trap` (see gwtrace-auto-trap.sh, loaded on first use). Every
# command here runs in a group with fd 2 closed, invisible to set -x; fd 203
# carries the script's stderr for bash's own error messages.
trap() {
  { _gwtrace_atrc=-1 _gwtrace_aoneshot=''; (( ++_gwtrace_abusy ))
    [[ -n ${_gwtrace_atrap-} ]] || builtin source "$_gwtrace_adir/gwtrace-auto-trap.sh"; } 2>&-
  { _gwtrace_auto_trap 203 "$@"; } 203>&2 2>&-
  # shellcheck disable=SC2064  # the script's own arguments, passed on as they are
  { (( _gwtrace_atrc >= 0 )) || _gwtrace_auto_trap - "$@" || builtin trap "$@"
    [[ -z $_gwtrace_apend ]] || _gwtrace_auto_oneshot
    (( _gwtrace_abusy > 0 && _gwtrace_abusy--, 1 ))
    if [[ -z $_gwtrace_aoneshot ]]; then
      return "$(( _gwtrace_atrc < 0 ? 1 : _gwtrace_atrc ))"
    fi
    builtin trap -- "$_gwtrace_aoneshot" DEBUG    # last: nothing of ours runs after it
  } 2>&-
}
{ (( _gwtrace_alevel > 0 )) || builtin unset -f trap; } 2>&-

# The BASH_ENV the user had, expanded as bash expands BASH_ENV, sourced with
# the script's stderr (and xtrace) but without a trace of `source` itself.
{
  _gwtrace_abenv=${GWTRACE_AUTO_BASH_ENV-} _gwtrace_adone=''
  [[ $_gwtrace_abenv != *[\$\`]* ]] || builtin eval "_gwtrace_abenv=\"$_gwtrace_abenv\""
  [[ -f $_gwtrace_abenv && ! $_gwtrace_abenv -ef ${BASH_SOURCE[0]} ]] || _gwtrace_abenv=''
} 2>&-
{ [[ -z $_gwtrace_abenv ]] || { _gwtrace_adone=1; builtin source "$_gwtrace_abenv" 2>&203 203>&-; }; } 203>&2 2>&-
{ [[ -z $_gwtrace_abenv || -n $_gwtrace_adone ]] || builtin source "$_gwtrace_abenv"; } 2>&-
