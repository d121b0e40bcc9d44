# shellcheck shell=bash
#
# gwtrace-auto.sh - tracing bash scripts without changing them.
#
# `gwtrace run` points BASH_ENV here, so every non-interactive bash it starts,
# all the way down the process tree, sources this file before its script:
#
#   GWTRACE_AUTO_LEVEL=scripts    one span per script run (EXIT trap)
#   GWTRACE_AUTO_LEVEL=functions  + one span per function call and sourced file
#                                 (DEBUG trap with functrace; the default)
#   GWTRACE_AUTO_LEVEL=commands   + one span per external command
#
# Spans go to the sidecar's event log (docs/protocol.md) exactly as the
# library's do; a BASH_ENV the user had is kept in GWTRACE_AUTO_BASH_ENV and
# sourced after this file. docs/shim.md explains the design; the rules are
# those of gwtrace.sh, because the script must never notice us:
#   - no forks; nothing printed; $?, $_, PIPESTATUS and set -x output are
#     what they would be; every handler runs with fd 2 closed so that its
#     commands stay out of set -x and its errors out of the script's stderr;
#   - the script's own traps win: `trap` is a function here that keeps our EXIT
#     handler chained to the script's and gives up function tracing (not the
#     script) when the script sets a DEBUG or RETURN trap; `trap -p` prints
#     what the script set, never ours;
#   - only _gwtrace_* variables and functions, plus `trap` (and `exit` while
#     the EXIT trap runs), TRACEPARENT and GWTRACE_AUTO_OPEN in the environment.

# Everything at the top level runs in groups with fd 2 closed: with `bash -x`,
# BASH_ENV is read under xtrace too.
{ [[ -z ${_gwtrace_auto_loaded-} ]] || return 0; } 2>&-
{
  _gwtrace_auto_loaded=1

  _gwtrace_alevel=0       # 0 off, 1 scripts, 2 functions, 3 commands
  _gwtrace_alog=''        # event log path
  _gwtrace_atr=''         # trace id, flags, tracestate of this process's spans
  _gwtrace_afl=''
  _gwtrace_ats=''
  _gwtrace_abase=''       # parent span of the script span (from TRACEPARENT), '' = root
  _gwtrace_amain=''       # $BASHPID of the process that sourced this file
  _gwtrace_an=0           # frames: span id ('' = frame kept only to track depth),
  _gwtrace_asp=()         #   BASH_SOURCE depth inside it, owner $BASHPID, name,
  _gwtrace_adep=()        #   TRACEPARENT before it (+ whether it was set)
  _gwtrace_apid=()
  _gwtrace_aname=()
  _gwtrace_aotp=()
  _gwtrace_aotpset=()
  _gwtrace_aexp=''        # the TRACEPARENT we exported last
  _gwtrace_ad=1           # BASH_SOURCE depth at the last DEBUG slow path
  _gwtrace_arc=0          # $? before the command the DEBUG trap runs for
  _gwtrace_arng=0         # splitmix64 state, reseeded in every new process
  _gwtrace_arngpid=''
  _gwtrace_aboot=0        # wall-clock time of boot (µs), for the bash < 5 clock
  _gwtrace_ar=''          # scratch results
  _gwtrace_at=''
  _gwtrace_asub=''        # $BASHPID of a subshell whose EXIT trap is ours
  _gwtrace_aux=''         # the script's EXIT, DEBUG, ERR, RETURN traps (+ whether set)
  _gwtrace_auxset=''
  _gwtrace_aud='' _gwtrace_audset='' _gwtrace_aue='' _gwtrace_aueset='' _gwtrace_aur='' _gwtrace_aurset=''
  _gwtrace_apend=''       # DEBUG/ERR/RETURN changes waiting for the one-shot trap
  _gwtrace_aoneshot=''
  _gwtrace_auxpid=''      # the process it was set in (a subshell does not run it)
  _gwtrace_audbg=''       # the DEBUG trap string we installed ('' = none/yielded)
  _gwtrace_aexit=''       # status recorded when the EXIT trap began
  _gwtrace_acmd=''        # commands level: pending external command (name, span, start, TP)
  _gwtrace_acsp=''
  _gwtrace_acts=''
  _gwtrace_acotp=''
  _gwtrace_acotpset=''
  _gwtrace_acpid=''
  _gwtrace_apar=()        #   parent span of each frame
  _gwtrace_acur=''        # span id of the innermost frame with a span ('' = none)
  _gwtrace_abusy=0
  _gwtrace_asigs=()       # 1..64, for `trap -p` without arguments
  _gwtrace_abd=1          # BASH_SOURCE depth of the script's top level (0 for -c, stdin)

  # The strings of our traps. The DEBUG fast path is one arithmetic command that
  # keeps $? and compares the BASH_SOURCE depth; the slow path gets $_ as its
  # last argument, which gives it back to the script when the call returns.
  # _gwtrace_abusy is set while our own functions run outside the DEBUG trap
  # (EXIT handler, `trap`): functrace makes the DEBUG trap fire in them too.
  # shellcheck disable=SC2016
  _gwtrace_aexit_pre='{ (( _gwtrace_aexit = $?, ++_gwtrace_abusy )); _gwtrace_auto_exit_pre "$_" && : "$_"; } 2>&-'
  # shellcheck disable=SC2016
  _gwtrace_aexit_post='{ (( ++_gwtrace_abusy )); _gwtrace_auto_exit_post; } 2>&-'
  # shellcheck disable=SC2016
  _gwtrace_adbg_fn='{ (( _gwtrace_arc = $?, _gwtrace_abusy || ${#BASH_SOURCE[@]} == _gwtrace_ad )) || _gwtrace_auto_dbg "$_"; } 2>&-'
  # shellcheck disable=SC2016
  _gwtrace_adbg_cmd='{ (( _gwtrace_arc = $?, _gwtrace_abusy )) || _gwtrace_auto_cmd "$_"; } 2>&-'
} 2>&-

# --- ids, clock, events -----------------------------------------------------

# _gwtrace_auto_id: 16 hex digits, never all zero, into _gwtrace_ar
# (splitmix64 over a per-process state seeded from the kernel).
_gwtrace_auto_id() {
  local z
  [[ $_gwtrace_arngpid == "$BASHPID" ]] || _gwtrace_auto_seed
  builtin printf -v _gwtrace_ar '%016x' $(( z = (_gwtrace_arng += -7046029254386353131),
      z = (z ^ ((z >> 30) & 0x3FFFFFFFF)) * -4658895280553007687,
      z = (z ^ ((z >> 27) & 0x1FFFFFFFFF)) * -7723592293110705685,
      z = z ^ ((z >> 31) & 0x1FFFFFFFF), z ? z : 1 ))
}

_gwtrace_auto_seed() {
  local u=''
  IFS= builtin read -r u </proc/sys/kernel/random/uuid || u=''
  u=${u//-/}
  if [[ ${#u} -ge 30 && $u != *[!0-9a-f]* ]]; then
    _gwtrace_arng=$(( (16#${u:0:15} << 4) ^ 16#${u:15:15} ))
  else
    _gwtrace_auto_now
    _gwtrace_arng=$(( ${_gwtrace_at//[!0-9]/} * 2654435761 ^ ${SRANDOM:-0} ))
  fi
  _gwtrace_arng=$(( _gwtrace_arng ^ (BASHPID << 40) ))
  _gwtrace_arngpid=$BASHPID
}

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

# _gwtrace_auto_emit LINE: one append, one write(2) (lines stay < 4096 bytes).
_gwtrace_auto_emit() {
  builtin printf '%s\n' "$1" >>"$_gwtrace_alog" || :
}

# --- frames -----------------------------------------------------------------
#
# A frame is a span this shell opened (or, with span id '', a place in the
# call stack we only keep track of: our own functions, the library's). Arrays
# indexed by frame: span id, parent span id, BASH_SOURCE depth inside it,
# owner $BASHPID, name, TRACEPARENT before it (+ whether it was set).

# _gwtrace_auto_push NAME DEPTH [KEY=VALUE...]: open a span, child of the
# innermost frame (or of a span the script opened itself with the library),
# and export TRACEPARENT for the children. NAME '' keeps a frame without span.
_gwtrace_auto_push() {
  local name=$1 dep=$2 i=$_gwtrace_an parent remote=0 span='' a line t=$'\t'
  shift 2
  if [[ -n $name && ${TRACEPARENT-} != "$_gwtrace_aexp" ]] && _gwtrace_auto_adoptparent; then
    _gwtrace_acur=$_gwtrace_ar _gwtrace_aexp=$TRACEPARENT
  fi
  parent=$_gwtrace_acur
  _gwtrace_apid[i]=$BASHPID _gwtrace_adep[i]=$dep _gwtrace_aname[i]=$name _gwtrace_apar[i]=$_gwtrace_acur \
    _gwtrace_aotp[i]=${TRACEPARENT-} _gwtrace_aotpset[i]=${TRACEPARENT+1}
  if [[ -n $name ]]; then
    [[ $parent == "$_gwtrace_abase" && -n $parent ]] && remote=1
    _gwtrace_auto_id; span=$_gwtrace_ar
    _gwtrace_auto_now
    [[ $name == *[$'\\\t\n\r']* ]] && { _gwtrace_auto_esc "$name"; name=$_gwtrace_ar; }
    line="gw1${t}B${t}${_gwtrace_at}${t}${BASHPID}${t}${_gwtrace_atr}${t}${span}${t}${parent:--}${t}${remote}${t}${_gwtrace_afl}${t}${_gwtrace_ats:--}${t}${name}"
    for a in "$@"; do
      [[ $a == *[$'\\\t\n\r']* ]] && { _gwtrace_auto_esc "$a"; a=$_gwtrace_ar; }
      line+=$t${a:0:1000}
    done
    builtin printf '%s\n' "$line" >>"$_gwtrace_alog" || :
    _gwtrace_aexp="00-$_gwtrace_atr-$span-$_gwtrace_afl" _gwtrace_acur=$span
    builtin export TRACEPARENT="$_gwtrace_aexp"
    [[ ${GWTRACE_AUTO_OPEN-} == "$BASHPID:"* ]] || _gwtrace_auto_own
    GWTRACE_AUTO_OPEN+=,$span
  fi
  _gwtrace_asp[i]=$span _gwtrace_an=$((i + 1))
}

# _gwtrace_auto_pop STATUS [KEY=VALUE...]: end the innermost frame. A frame
# that another process opened (we are a subshell of it) is dropped silently:
# its owner ends it.
_gwtrace_auto_pop() {
  local i=$((_gwtrace_an - 1)) t=$'\t' line a
  (( i >= 0 )) || return 0
  if [[ -n ${_gwtrace_asp[i]} ]]; then
    if [[ ${_gwtrace_apid[i]} == "$BASHPID" ]]; then
      _gwtrace_auto_now
      line="gw1${t}E${t}${_gwtrace_at}${t}${BASHPID}${t}${_gwtrace_atr}${t}${_gwtrace_asp[i]}${t}${1:-0}"
      shift
      for a in "$@"; do line+=$t$a; done
      builtin printf '%s\n' "$line" >>"$_gwtrace_alog" || :
      GWTRACE_AUTO_OPEN=${GWTRACE_AUTO_OPEN%,"${_gwtrace_asp[i]}"}
    fi
    if [[ -n ${_gwtrace_aotpset[i]} ]]; then
      builtin export TRACEPARENT="${_gwtrace_aotp[i]}"
    else
      builtin unset TRACEPARENT
    fi
    _gwtrace_aexp=${TRACEPARENT-} _gwtrace_acur=${_gwtrace_apar[i]}
  fi
  _gwtrace_an=$i
}

# GWTRACE_AUTO_OPEN ("pid:trace,span,span...") names this process and the
# spans it has open, so that a bash started by `exec` (same pid) can end them:
# nothing of ours runs after an exec. A subshell starts its own list.
_gwtrace_auto_own() {
  builtin export GWTRACE_AUTO_OPEN="$BASHPID:$_gwtrace_atr"
}

# The script opened a span of its own with the library (TRACEPARENT is not
# what we exported): make it the parent, into _gwtrace_ar.
_gwtrace_auto_adoptparent() {
  local tp=${TRACEPARENT-}
  [[ ${#tp} -eq 55 && $tp == 00-"$_gwtrace_atr"-* ]] || return 1
  _gwtrace_ar=${tp:36:16}
  [[ $_gwtrace_ar != *[!0-9a-f]* ]]
}

# _gwtrace_auto_unwind STATUS [KEY=VALUE...]: end every frame.
_gwtrace_auto_unwind() {
  while (( _gwtrace_an > 0 )); do
    _gwtrace_auto_pop "$@"
  done
}

# --- start ------------------------------------------------------------------

# Read TRACEPARENT/TRACESTATE (an invalid value means a new trace), the level
# and the event log. Returns 1 when this shell must not be traced.
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
  if [[ ${#tp} -eq 55 && $tp == 00-*-*-?? && ${tp:2:1}${tp:35:1}${tp:52:1} == --- ]] \
     && [[ ${tp:3:32} != *[!0-9a-f]* && ${tp:3:32} == *[1-9a-f]* ]] \
     && [[ ${tp:36:16} != *[!0-9a-f]* && ${tp:36:16} == *[1-9a-f]* && ${tp:53:2} != *[!0-9a-f]* ]]; then
    (( 16#${tp:53:2} & 1 )) || return 1       # not sampled: nothing to record
    _gwtrace_atr=${tp:3:32} _gwtrace_abase=${tp:36:16}
    builtin printf -v _gwtrace_afl '%02x' $(( 16#${tp:53:2} & 3 ))
    _gwtrace_ats=${TRACESTATE-}
    [[ -n $_gwtrace_ats ]] && { _gwtrace_auto_esc "$_gwtrace_ats"; _gwtrace_ats=$_gwtrace_ar; }
  else
    _gwtrace_auto_id; _gwtrace_atr=$_gwtrace_ar
    _gwtrace_auto_id; _gwtrace_atr+=$_gwtrace_ar
    _gwtrace_afl=01 _gwtrace_ats=''
  fi
  _gwtrace_acur=$_gwtrace_abase _gwtrace_aexp=${TRACEPARENT-}
  if [[ -n ${GWTRACE_BOOT_US-} && $GWTRACE_BOOT_US != *[!0-9]* ]]; then
    _gwtrace_aboot=$GWTRACE_BOOT_US
  fi
  return 0
}

# A bash started by `exec` from a traced bash has its pid: end what it left open.
_gwtrace_auto_adopt() {
  local open=${GWTRACE_AUTO_OPEN-} ids tr span t=$'\t'
  [[ ${open%%:*} == "$$" ]] || return 0
  open=${open#*:}
  tr=${open%%,*} ids=${open#*,}
  [[ ${#tr} -eq 32 && $tr != *[!0-9a-f]* ]] || return 0
  _gwtrace_auto_now
  while [[ -n $ids ]]; do
    span=${ids##*,}
    [[ $ids == *,* ]] && ids=${ids%,*} || ids=''
    [[ ${#span} -eq 16 && $span != *[!0-9a-f]* ]] || continue
    _gwtrace_auto_emit "gw1${t}E${t}${_gwtrace_at}${t}$$${t}${tr}${t}${span}${t}0${t}process.exec=true"
  done
  builtin unset GWTRACE_AUTO_OPEN
}

# The script span: name = the script's basename (bash -c / bash -s for inline
# code), its path as an attribute, never its arguments.
_gwtrace_auto_start() {
  local name path=''
  _gwtrace_amain=$BASHPID
  if [[ -n ${BASH_EXECUTION_STRING+x} ]]; then
    name="${0##*/} -c" _gwtrace_abd=0
  elif [[ -f $0 ]]; then
    name=${0##*/} path=$0 _gwtrace_abd=1
    [[ $path == /* ]] || path=$PWD/${path#./}
  else
    name="${0##*/} -s" _gwtrace_abd=0
  fi
  _gwtrace_ad=$_gwtrace_abd
  _gwtrace_auto_adopt
  _gwtrace_auto_push "$name" "$_gwtrace_abd" gwtrace.kind=script "process.pid=$$" ${path:+"code.file.path=$path"}
  builtin trap -- "$_gwtrace_aexit_pre"$'\n'"$_gwtrace_aexit_post" EXIT
  if (( _gwtrace_alevel == 2 )); then
    _gwtrace_audbg=$_gwtrace_adbg_fn
  elif (( _gwtrace_alevel == 3 )); then
    _gwtrace_audbg=$_gwtrace_adbg_cmd
  fi
  if [[ -n $_gwtrace_audbg ]]; then
    set -T
    builtin trap -- "$_gwtrace_audbg" DEBUG
  fi
}

_gwtrace_auto_init() {
  _gwtrace_auto_context || { _gwtrace_alevel=0; return 0; }
  _gwtrace_auto_start
  return 0
}

# --- functions and commands (DEBUG trap) ------------------------------------

# _gwtrace_auto_sync DEPTH: make the frames match the shell's call stack
# (BASH_SOURCE/FUNCNAME seen from our caller, DEPTH frames deep): frames below
# it have returned (status: the $? the DEBUG trap saw), new ones are entered.
_gwtrace_auto_sync() {
  local n=$1 k i name top
  while (( _gwtrace_an > 1 )); do
    top=${_gwtrace_adep[_gwtrace_an-1]}
    (( top > n )) || [[ ${_gwtrace_aname[_gwtrace_an-1]} != "${FUNCNAME[n-top+2]-}" ]] || break
    _gwtrace_auto_pop "$_gwtrace_arc"
  done
  top=${_gwtrace_adep[_gwtrace_an-1]:-$_gwtrace_abd}
  for (( k = top + 1; k <= n; k++ )); do
    i=$(( n - k + 2 ))        # FUNCNAME/BASH_SOURCE index of depth k, from here
    name=${FUNCNAME[i]-}
    case $name in
      source)
        if [[ ${BASH_SOURCE[i]} == "${BASH_SOURCE[0]}" || ${BASH_SOURCE[i]##*/} == gwtrace.sh ]]; then
          _gwtrace_auto_push '' "$k"            # this file (BASH_ENV), or the library: it
                                                # reads TRACEPARENT while it is sourced
        else
          _gwtrace_auto_push "source ${BASH_SOURCE[i]##*/}" "$k" gwtrace.kind=source "code.file.path=${BASH_SOURCE[i]}"
        fi ;;
      _gwtrace_*|trace_*|trap|exit|'')
        _gwtrace_auto_push '' "$k" ;;
      *)
        _gwtrace_auto_push "$name" "$k" ;;
    esac
    _gwtrace_aname[_gwtrace_an-1]=$name
  done
  _gwtrace_ad=$n
  # A subshell that opened spans ends them on its own EXIT.
  if [[ $BASHPID != "$_gwtrace_amain" && $_gwtrace_asub != "$BASHPID" ]] && (( _gwtrace_an > 0 )) \
     && [[ ${_gwtrace_apid[_gwtrace_an-1]} == "$BASHPID" ]]; then
    _gwtrace_asub=$BASHPID
    _gwtrace_auto_exit_install
  fi
}

# The DEBUG slow path (functions level): the depth changed. $1 is the
# script's $_, given back when this call returns. The two common cases, a
# function entered and functions returned in the main process, are written
# out here: every command costs about a microsecond, and they run per call.
_gwtrace_auto_dbg() {
  local n=$(( ${#BASH_SOURCE[@]} - 1 )) i=$((_gwtrace_an - 1)) t=$'\t' z span name
  if [[ $BASHPID != "$_gwtrace_amain" || -z ${EPOCHREALTIME-} || ${TRACEPARENT-} != "$_gwtrace_aexp" ]]; then
    _gwtrace_auto_sync "$n"
  elif (( n == _gwtrace_ad + 1 && _gwtrace_adep[i] < n )); then
    name=${FUNCNAME[1]-}
    case $name in
      source|_gwtrace_*|trace_*|trap|exit|''|*[$'\\\t\n\r']*) _gwtrace_auto_sync "$n"; return 0 ;;
    esac
    [[ $_gwtrace_arngpid == "$BASHPID" ]] || _gwtrace_auto_seed
    builtin printf -v span '%016x' $(( z = (_gwtrace_arng += -7046029254386353131),
        z = (z ^ ((z >> 30) & 0x3FFFFFFFF)) * -4658895280553007687,
        z = (z ^ ((z >> 27) & 0x1FFFFFFFFF)) * -7723592293110705685,
        z = z ^ ((z >> 31) & 0x1FFFFFFFF), z ? z : 1 ))
    builtin printf '%s\n' "gw1${t}B${t}${EPOCHREALTIME}${t}${BASHPID}${t}${_gwtrace_atr}${t}${span}${t}${_gwtrace_acur:--}${t}0${t}${_gwtrace_afl}${t}${_gwtrace_ats:--}${t}${name}" >>"$_gwtrace_alog" || :
    i=$((i + 1))
    _gwtrace_asp[i]=$span _gwtrace_apar[i]=$_gwtrace_acur _gwtrace_adep[i]=$n _gwtrace_apid[i]=$BASHPID \
      _gwtrace_aname[i]=$name _gwtrace_aotp[i]=${TRACEPARENT-} _gwtrace_aotpset[i]=${TRACEPARENT+1} \
      _gwtrace_an=$((i + 1)) _gwtrace_ad=$n _gwtrace_acur=$span _gwtrace_aexp="00-$_gwtrace_atr-$span-$_gwtrace_afl"
    builtin export TRACEPARENT="$_gwtrace_aexp"
    [[ ${GWTRACE_AUTO_OPEN-} == "$BASHPID:"* ]] || _gwtrace_auto_own
    GWTRACE_AUTO_OPEN+=,$span
  elif (( n < _gwtrace_ad )); then
    while (( i > 0 && _gwtrace_adep[i] > n )); do
      if [[ -n ${_gwtrace_asp[i]} ]]; then
        builtin printf '%s\n' "gw1${t}E${t}${EPOCHREALTIME}${t}${BASHPID}${t}${_gwtrace_atr}${t}${_gwtrace_asp[i]}${t}${_gwtrace_arc}" >>"$_gwtrace_alog" || :
        GWTRACE_AUTO_OPEN=${GWTRACE_AUTO_OPEN%,"${_gwtrace_asp[i]}"}
        if [[ -n ${_gwtrace_aotpset[i]} ]]; then
          builtin export TRACEPARENT="${_gwtrace_aotp[i]}"
        else
          builtin unset TRACEPARENT
        fi
        _gwtrace_aexp=${TRACEPARENT-} _gwtrace_acur=${_gwtrace_apar[i]}
      fi
      i=$((i - 1))
    done
    _gwtrace_an=$((i + 1)) _gwtrace_ad=$n
    (( _gwtrace_adep[i] >= n )) || _gwtrace_auto_sync "$n"
  else
    _gwtrace_auto_sync "$n"
  fi
  return 0
}

# Commands level: every command comes here. An external command gets a span
# written when the next command starts (its status is then known): a shell
# that execs its last command leaves nothing open.
_gwtrace_auto_cmd() {
  local n=$(( ${#BASH_SOURCE[@]} - 1 ))
  [[ -n $_gwtrace_acmd ]] && _gwtrace_auto_cmd_end "$_gwtrace_arc"
  (( n == _gwtrace_ad )) || _gwtrace_auto_sync "$n"
  _gwtrace_auto_cmd_begin "$BASH_COMMAND"
  return 0
}

# _gwtrace_auto_cmd_word COMMAND: the command word of a command line as bash
# shows it (BASH_COMMAND, unexpanded) into _gwtrace_ar, '' if not knowable.
_gwtrace_auto_cmd_word() {
  local c=$1 w
  while :; do
    c=${c#"${c%%[![:space:]]*}"}
    w=${c%%[[:space:]]*}
    if [[ $w == [A-Za-z_]*([A-Za-z0-9_])?(\[*\])?(+)=* ]]; then
      if [[ ${w#*=} == [\"\']* ]]; then
        _gwtrace_ar=''; return 0              # quoted value: give up, rarely a command
      fi
      c=${c:${#w}}
      continue
    fi
    case $w in
      exec) _gwtrace_ar=''; return 0 ;;     # the process goes on as CMD: see _gwtrace_auto_adopt
      command|nohup|time|builtin) c=${c:${#w}}; c=${c#"${c%%[![:space:]]*}"}
        [[ $c == -* ]] && { _gwtrace_ar=''; return 0; }
        [[ $w == builtin ]] && { _gwtrace_ar=''; return 0; }
        continue ;;
    esac
    break
  done
  if [[ $w == \$[A-Za-z_]*([A-Za-z0-9_]) ]]; then
    w=${w:1}; w=${!w-}
  elif [[ $w == \$\{[A-Za-z_]*([A-Za-z0-9_])\} ]]; then
    w=${w:2}; w=${w%\}}; w=${!w-}
  elif [[ $w == \"*\" ]]; then
    w=${w:1:${#w}-2}
  fi
  [[ $w == *[\$\`\"\'\\\(\)\<\>\|\&\;]* ]] && w=''
  _gwtrace_ar=$w
}

_gwtrace_auto_cmd_begin() {
  local w
  _gwtrace_auto_cmd_word "$1"
  w=$_gwtrace_ar
  [[ -n $w ]] || return 0
  case $w in
    '['|'[['|'(('|'.'|':'|alias|bg|bind|break|builtin|caller|cd|command|compgen|complete|compopt|\
    continue|declare|dirs|disown|echo|enable|eval|exec|exit|export|false|fc|fg|getopts|hash|help|\
    history|jobs|kill|let|local|logout|mapfile|popd|printf|pushd|pwd|read|readarray|readonly|return|\
    set|shift|shopt|source|suspend|test|times|trap|true|type|typeset|ulimit|umask|unalias|unset|wait|\
    for|case|select|if|while|until|function|'{'|'}'|'!'|*=*) return 0 ;;
  esac
  declare -F -- "$w" >/dev/null && return 0
  _gwtrace_auto_id
  _gwtrace_auto_now
  _gwtrace_acmd=${w##*/} _gwtrace_acsp=$_gwtrace_ar _gwtrace_acts=$_gwtrace_at _gwtrace_acpid=$BASHPID
  _gwtrace_acotp=${TRACEPARENT-} _gwtrace_acotpset=${TRACEPARENT+1}
  builtin export TRACEPARENT="00-$_gwtrace_atr-$_gwtrace_acsp-$_gwtrace_afl"
  _gwtrace_aexp=$TRACEPARENT
}

# _gwtrace_auto_cmd_end STATUS: write the pending command's span, after the fact.
_gwtrace_auto_cmd_end() {
  local t=$'\t' parent=$_gwtrace_acur name
  if [[ $_gwtrace_acpid == "$BASHPID" ]]; then
    _gwtrace_auto_now
    name=$_gwtrace_acmd
    [[ $name == *[$'\\\t\n\r']* ]] && { _gwtrace_auto_esc "$name"; name=$_gwtrace_ar; }
    _gwtrace_auto_emit "gw1${t}B${t}${_gwtrace_acts}${t}${BASHPID}${t}${_gwtrace_atr}${t}${_gwtrace_acsp}${t}${parent:--}${t}0${t}${_gwtrace_afl}${t}${_gwtrace_ats:--}${t}${name}${t}gwtrace.kind=command${t}process.executable.name=${name}"
    _gwtrace_auto_emit "gw1${t}E${t}${_gwtrace_at}${t}${BASHPID}${t}${_gwtrace_atr}${t}${_gwtrace_acsp}${t}${1:-0}"
  fi
  if [[ -n $_gwtrace_acotpset ]]; then
    builtin export TRACEPARENT="$_gwtrace_acotp"
  else
    builtin unset TRACEPARENT
  fi
  _gwtrace_aexp=${TRACEPARENT-} _gwtrace_acmd=''
}

# --- exit -------------------------------------------------------------------

# Our EXIT trap, with the script's own handler (if any) between our two parts:
# the first records the exit status, the second ends the spans after the
# script's handler ran (or from `exit`, if that handler calls it).
_gwtrace_auto_exit_install() {
  if [[ -n $_gwtrace_auxset && $_gwtrace_auxpid == "$BASHPID" ]]; then
    builtin trap -- "$_gwtrace_aexit_pre; $_gwtrace_aux"$'\n'"$_gwtrace_aexit_post" EXIT
  else
    builtin trap -- "$_gwtrace_aexit_pre"$'\n'"$_gwtrace_aexit_post" EXIT
  fi
}

# _gwtrace_auto_exit_pre LAST_ARG: returns the exit status, so that the
# script's handler sees $? (and $_) as they were.
_gwtrace_auto_exit_pre() {
  if [[ -n $_gwtrace_auxset && $_gwtrace_auxpid == "$BASHPID" ]]; then
    # The script's handler may call exit: end the spans there.
    exit() { _gwtrace_auto_exit_now "$?" "$@"; } 2>&-
  fi
  _gwtrace_abusy=0
  return "$_gwtrace_aexit"
}

_gwtrace_auto_exit_post() {
  [[ -n $_gwtrace_aexit ]] || return 0
  [[ -n $_gwtrace_acmd ]] && _gwtrace_auto_cmd_end "$_gwtrace_aexit"
  _gwtrace_auto_unwind "$_gwtrace_aexit"
  [[ -n $_gwtrace_audbg ]] && builtin trap - DEBUG
  _gwtrace_aexit=''
  return 0
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

# --- the script's traps -----------------------------------------------------
#
# `trap` below is a function, and bash scopes DEBUG, RETURN and ERR traps to
# functions: inside one, `trap -p DEBUG` shows nothing, `trap - ERR` is undone
# when it returns, and a RETURN trap set in it fires when it returns. So the
# script's traps are kept in _gwtrace_au{x,d,e,r} (string + "set" flag), and
# changes to DEBUG, RETURN and ERR are applied by a one-shot DEBUG trap that
# `trap` installs as its very last command: it runs before the script's next
# command, in the script's own context, and also runs the script's new DEBUG
# trap for that command (it would have run there).

# _gwtrace_auto_trap EFD ARGS...: the `trap` builtin as the script sees it.
# EFD is the script's stderr (or - if it has none); sets _gwtrace_atrc.
_gwtrace_auto_trap() {
  local efd=$1 print='' arg op s u
  local -a orig other=()
  shift
  orig=("$@") _gwtrace_atrc=0
  while [[ ${1-} == -?* ]]; do
    case $1 in
      --) shift; break ;;
      -p) print=1 ;;
      *) _gwtrace_auto_trap_builtin "$efd" "${orig[@]}"; return 0 ;;   # -l, or bash's usage error
    esac
    shift
  done
  if [[ -n $print || $# -eq 0 ]]; then
    _gwtrace_auto_trap_print "$efd" "$@"
    return 0
  fi
  if [[ $1 == +([0-9]) ]] && builtin trap -p "$1" >/dev/null; then
    op=revert
  elif [[ $# -eq 1 && $1 != - && :$SHELLOPTS: != *:posix:* ]] && builtin trap -p "$1" >/dev/null; then
    op=revert
  else
    arg=$1
    shift
    if (( $# == 0 )); then
      _gwtrace_auto_trap_builtin "$efd" "${orig[@]}"; return 0
    fi
    case $arg in
      '') op=ignore ;;
      -) op=revert ;;
      *) op=set ;;
    esac
  fi
  for s in "$@"; do
    _gwtrace_auto_trap_kind "$s"
    case $_gwtrace_ar in
      x|d|e|r)
        u=$_gwtrace_ar
        case $op in
          set) builtin printf -v "_gwtrace_au$u" '%s' "$arg"; builtin printf -v "_gwtrace_au${u}set" 1 ;;
          ignore) builtin printf -v "_gwtrace_au$u" ''; builtin printf -v "_gwtrace_au${u}set" 1 ;;
          revert) builtin printf -v "_gwtrace_au$u" ''; builtin printf -v "_gwtrace_au${u}set" '' ;;
        esac
        if [[ $u == x ]]; then
          _gwtrace_auxpid=$BASHPID
          _gwtrace_auto_exit_install
        elif [[ $u == e && ( $op != revert || $- == *E* ) ]]; then
          other+=("$s")        # an ERR trap set in the one-shot would miss the next command
        else
          _gwtrace_apend=1
        fi ;;
      '') other+=("$s") ;;
      *) _gwtrace_auto_trap_error "$efd" "$s" ;;
    esac
  done
  if (( ${#other[@]} )); then
    case $op in
      set) builtin trap -- "$arg" "${other[@]}" ;;
      ignore) builtin trap -- '' "${other[@]}" ;;
      revert) builtin trap - "${other[@]}" ;;
    esac
  fi
  return 0
}

# _gwtrace_auto_trap_kind SIGSPEC: x (EXIT), d (DEBUG), e (ERR), r (RETURN),
# '' (another valid signal) or ? (invalid), into _gwtrace_ar.
_gwtrace_auto_trap_kind() {
  case ${1^^} in
    EXIT) _gwtrace_ar=x ;;
    DEBUG) _gwtrace_ar=d ;;
    ERR) _gwtrace_ar=e ;;
    RETURN) _gwtrace_ar=r ;;
    *) if [[ $1 == +([0-9]) ]] && (( 10#${1: -9} == 0 )); then
         _gwtrace_ar=x
       elif builtin trap -p "$1" >/dev/null; then
         _gwtrace_ar=''
       else
         _gwtrace_ar='?'
       fi ;;
  esac
}

# Print traps as `trap -p` would: the script's EXIT, DEBUG, ERR and RETURN
# traps from our records, the others from bash.
_gwtrace_auto_trap_print() {
  local efd=$1 s
  shift
  if (( $# == 0 )); then
    [[ -z $_gwtrace_auxset ]] || _gwtrace_auto_trap_line "$_gwtrace_aux" EXIT
    (( ${#_gwtrace_asigs[@]} )) || _gwtrace_auto_sigs
    builtin trap -p "${_gwtrace_asigs[@]}"
    [[ -z $_gwtrace_audset ]] || _gwtrace_auto_trap_line "$_gwtrace_aud" DEBUG
    [[ -z $_gwtrace_aueset ]] || _gwtrace_auto_trap_line "$_gwtrace_aue" ERR
    [[ -z $_gwtrace_aurset ]] || _gwtrace_auto_trap_line "$_gwtrace_aur" RETURN
    return 0
  fi
  for s in "$@"; do
    _gwtrace_auto_trap_kind "$s"
    case $_gwtrace_ar in
      x) [[ -z $_gwtrace_auxset ]] || _gwtrace_auto_trap_line "$_gwtrace_aux" EXIT ;;
      d) [[ -z $_gwtrace_audset ]] || _gwtrace_auto_trap_line "$_gwtrace_aud" DEBUG ;;
      e) [[ -z $_gwtrace_aueset ]] || _gwtrace_auto_trap_line "$_gwtrace_aue" ERR ;;
      r) [[ -z $_gwtrace_aurset ]] || _gwtrace_auto_trap_line "$_gwtrace_aur" RETURN ;;
      '') builtin trap -p "$s" ;;
      *) _gwtrace_auto_trap_error "$efd" "$s" ;;
    esac
  done
}

_gwtrace_auto_trap_line() {
  _gwtrace_auto_quote "$1"
  builtin printf 'trap -- %s %s\n' "$_gwtrace_ar" "$2"
}

# _gwtrace_auto_quote TEXT: TEXT in single quotes (as bash prints traps).
_gwtrace_auto_quote() {
  local q=\'
  _gwtrace_ar="$q${1//$q/$q\\$q$q}$q"
}

# The one-shot DEBUG trap that applies the script's DEBUG, ERR and RETURN
# traps (see above). If the script now has a DEBUG or RETURN trap, function
# tracing gives way: functrace goes back off and open function spans end
# with the script.
_gwtrace_auto_oneshot() {
  # shellcheck disable=SC2016
  local c='{ (( _gwtrace_arc = $?, 1 )); ' yield=''
  [[ -n $_gwtrace_audbg && -n $_gwtrace_audset$_gwtrace_aurset ]] && yield=1
  if [[ -n $yield ]]; then
    c+='set +T; _gwtrace_audbg=; '
    [[ -z $_gwtrace_acmd ]] || _gwtrace_auto_cmd_end "$_gwtrace_arc"
  fi
  [[ -n $_gwtrace_aueset ]] || c+='builtin trap - ERR; '
  _gwtrace_auto_quote "$_gwtrace_aur"
  if [[ -n $_gwtrace_aurset ]]; then c+="builtin trap -- $_gwtrace_ar RETURN; "; else c+='builtin trap - RETURN; '; fi
  if [[ -n $_gwtrace_audbg && -z $yield ]]; then
    # shellcheck disable=SC2016
    c+='builtin trap -- "$_gwtrace_audbg" DEBUG; '
  elif [[ -n $_gwtrace_audset ]]; then
    _gwtrace_auto_quote "$_gwtrace_aud"
    c+="builtin trap -- $_gwtrace_ar DEBUG; "
  else
    c+='builtin trap - DEBUG; '
  fi
  # shellcheck disable=SC2016
  c+='_gwtrace_auto_rc "$_gwtrace_arc" "$_" && : "$_"; } 2>&-'
  # The script's DEBUG trap, now in force, runs for this command too.
  if [[ -n $_gwtrace_audset && -n $_gwtrace_aud && ( -n $yield || -z $_gwtrace_audbg ) ]]; then
    c+="; $_gwtrace_aud"
  fi
  _gwtrace_aoneshot=$c _gwtrace_apend=''
}

# The message bash gives for a bad signal, at the script's line.
_gwtrace_auto_trap_error() {
  _gwtrace_atrc=1
  [[ $1 == - ]] && return 0
  if [[ -n ${BASH_EXECUTION_STRING+x} && ${#FUNCNAME[@]} -le 3 ]]; then
    builtin printf '%s: trap: %s: invalid signal specification\n' "$0" "$2" >&"$1"
  else
    builtin printf '%s: line %s: trap: %s: invalid signal specification\n' "$0" "${BASH_LINENO[2]-0}" "$2" >&"$1"
  fi
}

_gwtrace_auto_trap_builtin() {
  local efd=$1
  shift
  if [[ $efd == - ]]; then
    builtin trap "$@"
  else
    builtin trap "$@" 2>&"$efd"
  fi
  _gwtrace_atrc=$?
}

# --- start ------------------------------------------------------------------

_gwtrace_auto_sigs() {
  local i
  for (( i = 1; i < 65; i++ )); do _gwtrace_asigs+=("$i"); done
}

_gwtrace_auto_init() {
  _gwtrace_auto_context || { _gwtrace_alevel=0; return 0; }
  _gwtrace_auto_start
  return 0
}

{ _gwtrace_auto_init; } 2>&-

# The script's `trap` (see _gwtrace_auto_trap). Every command here runs in a
# group with fd 2 closed, invisible to set -x; fd 203 carries the stderr.
trap() {
  { _gwtrace_atrc=-1 _gwtrace_aoneshot=''; (( ++_gwtrace_abusy )); } 2>&-
  { _gwtrace_auto_trap 203 "$@"; } 203>&2 2>&-
  { (( _gwtrace_atrc >= 0 )) || _gwtrace_auto_trap - "$@"
    [[ -z $_gwtrace_apend ]] || _gwtrace_auto_oneshot
    (( _gwtrace_abusy > 0 && _gwtrace_abusy--, 1 ))
    if [[ -z $_gwtrace_aoneshot ]]; then
      return "$_gwtrace_atrc"
    fi
    builtin trap -- "$_gwtrace_aoneshot" DEBUG    # last: nothing of ours runs after it
  } 2>&-
}
{ (( _gwtrace_alevel > 0 )) || builtin unset -f trap; } 2>&-

# The BASH_ENV the user had (gwtrace run keeps it in GWTRACE_AUTO_BASH_ENV),
# expanded as bash expands BASH_ENV, sourced with the script's stderr (and
# xtrace) but without a trace of the `source` command itself.
{
  _gwtrace_abenv=${GWTRACE_AUTO_BASH_ENV-} _gwtrace_adone=''
  [[ $_gwtrace_abenv != *[\$\`]* ]] || builtin eval "_gwtrace_abenv=\"$_gwtrace_abenv\""
  [[ -f $_gwtrace_abenv && ! $_gwtrace_abenv -ef ${BASH_SOURCE[0]} ]] || _gwtrace_abenv=''
} 2>&-
{ [[ -z $_gwtrace_abenv ]] || { _gwtrace_adone=1; builtin source "$_gwtrace_abenv" 2>&203 203>&-; }; } 203>&2 2>&-
{ [[ -z $_gwtrace_abenv || -n $_gwtrace_adone ]] || builtin source "$_gwtrace_abenv"; } 2>&-
