# shellcheck shell=bash
# The subshells in _gwtrace_readonly_context assign TRACEPARENT/TRACESTATE on
# purpose, only to see whether they can be assigned:
# shellcheck disable=SC2030,SC2031
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
#   - no command may fail under `set -euo pipefail`, even with a readonly
#     TRACEPARENT; every variable, local ones included, is named _gwtrace_*
#     (a local named like a readonly host variable would fail); no shell
#     option or trap is left changed;
#   - globs instead of =~ (which would overwrite the host's BASH_REMATCH),
#     and `builtin` before printf/read/export/unset, which hosts may redefine.
#
# Speed: a simple command costs 1-2.5 us here, a function call as much as the
# write itself. trace_begin and trace_end therefore have a fast path, written
# out with as few commands as possible, for the common case: an open parent
# span, sampled, no TRACESTATE, nothing to escape or redact, the event log
# unchanged since the last call, no `set -a`. Everything else (root spans,
# the first span of a process, escaping, redaction, TRACESTATE, status words,
# readonly TRACEPARENT, switches) goes through _gwtrace_begin/_gwtrace_end,
# which hold the general rules. Both keep the same span stack.
#
# Re-entrancy: a trap handler may call trace_* between any two commands of
# another trace_* call. State that must survive from one command to the next
# is therefore local ($? to give back), and each fast path takes its span id,
# pushes or pops in one command; a handler that ends what it begins leaves
# the stack as it found it.

# Loaded already in this shell (or the shell it was forked from)? The flag is
# never exported, so a child process started under `set -a` loads afresh.
if [[ -n ${_gwtrace_loaded-} ]] && builtin declare -F trace_end >/dev/null 2>&1; then
  builtin return 0
fi

_gwtrace_loaded=1
builtin export -n _gwtrace_loaded
# The spans open in this shell share one trace: its id, flags and tracestate
# are kept once, the innermost span id in a scalar, the rest per level
# (1 = outermost).
builtin declare -gi _gwtrace_depth=0 _gwtrace_ctr=1000   # open spans; span-id counter
_gwtrace_tr=''          # trace id (32 hex) of the open spans
_gwtrace_fl=''          # their W3C trace flags (2 hex)
_gwtrace_st=''          # their tracestate ('' if none)
_gwtrace_sp=''          # the innermost span id (16 hex), '' when none is open
_gwtrace_pa=''          # the id of its parent in this shell ('' for level 1)
_gwtrace_up=()          # per level: _gwtrace_pa before the span was pushed
_gwtrace_otp=()         # per level: TRACEPARENT before the span ('' if unset)
_gwtrace_ots=()         # per level: TRACESTATE before the span, x<value>/s<value>
_gwtrace_mk=''          # one letter per level (the innermost last): TRACEPARENT
                        #   before it was x: set and exported, s: set only, u: unset;
                        #   y, t, v: the same, and TRACESTATE was set too
_gwtrace_base_tr=''     # incoming context, read from TRACEPARENT when sourced
_gwtrace_base_sp=''
_gwtrace_base_fl=''
_gwtrace_base_ts=''
_gwtrace_rng=0          # splitmix64 state, seeded per process from the kernel
_gwtrace_pid=''         # the $BASHPID the state and the span-id prefix belong to
_gwtrace_pfx=''         # span ids: 12 random hex digits, then the counter (1001-9000)
_gwtrace_boot_us=0      # wall-clock time of boot, for the bash < 5 clock
_gwtrace_attr_ok=0      # 1 if ${var@a} exists (bash 4.4+)
# bash < 4.4 does not restore, after a function returns, the line its ERR
# trap reports (execute_cmd.c's line_number_for_err_trap, unwind-protected
# from 4.4 on): a host's trap after a trace_* call that keeps a failing $?
# would see the line of our last command. There a public function that gives
# back a failing $? returns through `eval`, with LINENO set to the caller's
# line while eval's words are expanded, so that the eval'd `return` is parsed
# on that line. Unset on bash >= 4.4; a status of 0 takes the `return 0` of
# `set -e` (no trap fires), so that the common case costs nothing more.
builtin unset -v _gwtrace_eret _gwtrace_nil
_gwtrace_ro_tp=0        # 1 if the host made TRACEPARENT readonly: leave it alone
_gwtrace_ro_ts=0        # the same for TRACESTATE
_gwtrace_ksock=''       # the event log: GWTRACE_SOCKET and GWTRACE_DIR as last seen,
_gwtrace_kdir=''        #   and the file they name ('' if none)
_gwtrace_file=''
_gwtrace_key=-          # what the fast paths compare (see _gwtrace_rekey)
_gwtrace_ekey=-
_gwtrace_tab=$'\t'
_gwtrace_r=''           # scratch results of the helpers (avoids $(...) forks)
_gwtrace_rcode=0
_gwtrace_clock=''

# --- public API ------------------------------------------------------------

# trace_begin NAME [KEY=VALUE...]: open a span, child of the innermost open
# span (or of the incoming TRACEPARENT), and export TRACEPARENT for children.
#
# Fast path: a child of an open span, sampled, without tracestate; a name and
# at most 3 attributes, short, with nothing to escape or redact (the case is
# broader than the rules in _gwtrace_attrs); no `set -a`; TRACEPARENT set
# (the push assigns it, which keeps the export attribute the library gave
# it); the counter not at its end; and the key: same process, switches off,
# no TRACESTATE, same event log (see _gwtrace_rekey). It is written for as
# few bash instructions as possible: one [[ ]], one push, one write; $var
# rather than ${var}, literal TABs in the line (a TAB variable costs a third
# of the write). The push is one command (a trap handler may call trace_*
# between any two commands); the line follows it.
trace_begin() {
  builtin local _gwtrace_rc="$?"
  # shellcheck disable=SC2053  # the key is glob-free (_gwtrace_rekey)
  if [[ ${1:+x}$#${_gwtrace_sp:+x}${TRACEPARENT+x}$_gwtrace_st$_gwtrace_fl$_gwtrace_ctr == x[1234]xx?[13579bdf][12345678]??? \
        && ${GWTRACE_DISABLED-}${OTEL_SDK_DISABLED-}${TRACESTATE+x}:$BASHPID:${GWTRACE_SOCKET:-${GWTRACE_DIR-}} == $_gwtrace_key \
        && ${#1}${2+ + ${#2}}${3+ + ${#3}}${4+ + ${#4}} -lt 880 && ! -o allexport ]] \
    && case ${EPOCHREALTIME:-@}"${@,,}" in
         *[$'\\\t\n\r']*|*token*|*secret*|*pass*|*pw*|*auth*|*key*|*jwt*|*proxy*|*cred*|*cook*|*bearer\ *|*eyj*|\
         *s?g[=:]*|*s?gnat*|*_pat*|*://*@*) \
           builtin false ;;
         @*) _gwtrace_now ;;     # no EPOCHREALTIME (bash < 5): the clock
       esac
  then
    _gwtrace_depth+=1 _gwtrace_ctr+=1 _gwtrace_up[_gwtrace_depth]=$_gwtrace_pa _gwtrace_otp[_gwtrace_depth]=$TRACEPARENT \
      _gwtrace_mk+=x _gwtrace_pa=$_gwtrace_sp _gwtrace_sp=$_gwtrace_pfx$_gwtrace_ctr \
      TRACEPARENT=00-$_gwtrace_tr-$_gwtrace_pfx$_gwtrace_ctr-$_gwtrace_fl
    # (the separators in this line are TAB characters; `!`: a failed write is
    # not an error for `set -e`, as `|| :` would do, at a lower cost)
    ! builtin printf '%s\n' "gw1	B	${EPOCHREALTIME:-$_gwtrace_clock}	$BASHPID	$_gwtrace_tr	$_gwtrace_sp	$_gwtrace_pa	0	$_gwtrace_fl	-	$1${2+	$2}${3+	$3}${4+	$4}" >>"$_gwtrace_file"
  else
    _gwtrace_begin "$@"
  fi
  [[ $_gwtrace_rc == 0 || -o errexit ]] && builtin return 0
  [[ -z ${_gwtrace_eret-} ]] || builtin eval "builtin return $_gwtrace_rc${_gwtrace_nil[LINENO=BASH_LINENO[0]]-}"
  builtin return "$_gwtrace_rc"
} 2>&-

# trace_end [STATUS] [KEY=VALUE...]: end the innermost span. STATUS is an exit
# code (default: $?), `ok`, `error` or an error message; it is also returned.
# Fast path: a span that ends well (no argument with $? 0, or `0`), no `set
# -a`, the key (as in trace_begin), TRACEPARENT set now, and before the span
# set and exported with no TRACESTATE, the span sampled. A span that fails
# takes the general path, which notes where (_gwtrace_where).
trace_end() {
  builtin local _gwtrace_rc="$?"
  # shellcheck disable=SC2053  # the key is glob-free (_gwtrace_rekey)
  if [[ ( $#$_gwtrace_rc == 00 || $#${1-} == 10 ) \
        && ${TRACEPARENT+x}$_gwtrace_fl$_gwtrace_mk == x?[13579bdf]*x \
        && ${GWTRACE_DISABLED-}${OTEL_SDK_DISABLED-}${TRACESTATE+x}:${GWTRACE_SOCKET:-${GWTRACE_DIR-}} == $_gwtrace_ekey \
        && ! -o allexport ]]; then
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    # (the separators in this line are TAB characters; `!`: a failed write is
    # not an error for `set -e`, as `|| :` would do, at a lower cost)
    ! builtin printf '%s\n' "gw1	E	${EPOCHREALTIME:-$_gwtrace_clock}	$BASHPID	$_gwtrace_tr	$_gwtrace_sp	${1:-$_gwtrace_rc}" >>"$_gwtrace_file"
    _gwtrace_sp=$_gwtrace_pa _gwtrace_pa=${_gwtrace_up[_gwtrace_depth]} TRACEPARENT=${_gwtrace_otp[_gwtrace_depth]} \
      _gwtrace_mk=${_gwtrace_mk%?} _gwtrace_depth+=-1
    [[ -o errexit ]] && builtin return 0
    builtin return "${1:-$_gwtrace_rc}"
  fi
  _gwtrace_end "$@"
  [[ $_gwtrace_rc == 0 || -o errexit ]] && builtin return 0
  [[ -z ${_gwtrace_eret-} ]] || builtin eval "builtin return $_gwtrace_rc${_gwtrace_nil[LINENO=BASH_LINENO[0]]-}"
  builtin return "$_gwtrace_rc"
} 2>&-

# trace_event NAME [KEY=VALUE...]: a timestamped event on the innermost span.
trace_event() {
  builtin local _gwtrace_rc="$?" _gwtrace_line
  if (( _gwtrace_depth > 0 && $# > 0 )) && [[ $_gwtrace_fl == ?[13579bdf] ]] \
     && { [[ -z ${GWTRACE_DISABLED-}${OTEL_SDK_DISABLED-} ]] || ! _gwtrace_off; }; then
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    _gwtrace_esc "${1:0:4096}"
    _gwtrace_line="gw1${_gwtrace_tab}V${_gwtrace_tab}${EPOCHREALTIME:-$_gwtrace_clock}${_gwtrace_tab}${BASHPID}${_gwtrace_tab}${_gwtrace_tr}${_gwtrace_tab}${_gwtrace_sp}${_gwtrace_tab}${_gwtrace_r}"
    (( $# < 2 )) || _gwtrace_attrs "${@:2}"
    _gwtrace_emit
  fi
  [[ -o allexport ]] && _gwtrace_unexport
  [[ $_gwtrace_rc == 0 || -o errexit ]] && builtin return 0
  [[ -z ${_gwtrace_eret-} ]] || builtin eval "builtin return $_gwtrace_rc${_gwtrace_nil[LINENO=BASH_LINENO[0]]-}"
  builtin return "$_gwtrace_rc"
} 2>&-

# trace_attr KEY=VALUE...: set attributes on the innermost span.
trace_attr() {
  builtin local _gwtrace_rc="$?" _gwtrace_line
  if (( _gwtrace_depth > 0 && $# > 0 )) && [[ $_gwtrace_fl == ?[13579bdf] ]] \
     && { [[ -z ${GWTRACE_DISABLED-}${OTEL_SDK_DISABLED-} ]] || ! _gwtrace_off; }; then
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    _gwtrace_line="gw1${_gwtrace_tab}A${_gwtrace_tab}${EPOCHREALTIME:-$_gwtrace_clock}${_gwtrace_tab}${BASHPID}${_gwtrace_tab}${_gwtrace_tr}${_gwtrace_tab}${_gwtrace_sp}"
    _gwtrace_attrs "$@"
    _gwtrace_emit
  fi
  [[ -o allexport ]] && _gwtrace_unexport
  [[ $_gwtrace_rc == 0 || -o errexit ]] && builtin return 0
  [[ -z ${_gwtrace_eret-} ]] || builtin eval "builtin return $_gwtrace_rc${_gwtrace_nil[LINENO=BASH_LINENO[0]]-}"
  builtin return "$_gwtrace_rc"
} 2>&-

# trace_run NAME CMD [ARGS...]: run CMD inside a span named NAME and return
# its status. Only the command's basename is recorded, never its arguments.
# Shell functions, eval and source run as plain commands so that `set -e`
# keeps working inside them; if they make the shell exit, the sidecar ends
# the span as incomplete. Internals run with xtrace off, hidden by the
# groups' closed fd 2; the command itself runs with the host's options, so
# `set -x` shows the call and the command, as it would without tracing.
trace_run() {
  { builtin local _gwtrace_rc="$?" _gwtrace_x="$-" _gwtrace_name="${1-}"; builtin set +x; } 2>&-
  if (( $# < 2 )); then
    { [[ $_gwtrace_x == *x* ]] && builtin set -x; [[ $_gwtrace_rc == 0 || -o errexit ]] && builtin return 0
    [[ -z ${_gwtrace_eret-} ]] || builtin eval "builtin return $_gwtrace_rc${_gwtrace_nil[LINENO=BASH_LINENO[0]]-}"; builtin return "$_gwtrace_rc"; } 2>&-
  fi
  builtin shift
  trace_begin "$_gwtrace_name" "process.executable.name=${1##*/}"
  # `if` (not &&) so that the command starts with $? = 0, as after the
  # successful trace_begin a direct call would follow.
  if _gwtrace_is_shell_code "$1"; then
    if [[ $_gwtrace_x == *x* ]]; then builtin set -x; fi
    "$@"
    { _gwtrace_rc=$? _gwtrace_x=$-; builtin set +x; } 2>&-
  else
    if [[ $_gwtrace_x == *x* ]]; then builtin set -x; fi
    # $- again after the command: a `set -x`/`set +x` it made must stay.
    if "$@"; then { _gwtrace_rc=0 _gwtrace_x=$-; builtin set +x; } 2>&-; else { _gwtrace_rc=$? _gwtrace_x=$-; builtin set +x; } 2>&-; fi
  fi
  trace_end "$_gwtrace_rc"
  { [[ $_gwtrace_x == *x* ]] && builtin set -x; [[ $_gwtrace_rc == 0 ]] || [[ -z ${_gwtrace_eret-} ]] || builtin eval "builtin return $_gwtrace_rc${_gwtrace_nil[LINENO=BASH_LINENO[0]]-}"
    builtin return "$_gwtrace_rc"; } 2>&-
}

# --- internals -------------------------------------------------------------

# _gwtrace_begin NAME [KEY=VALUE...]: trace_begin's general path.
_gwtrace_begin() {
  builtin local _gwtrace_trace _gwtrace_parent _gwtrace_remote=0 _gwtrace_flags _gwtrace_state _gwtrace_span \
    _gwtrace_line _gwtrace_m
  if [[ -z ${1-} || -n ${GWTRACE_DISABLED-}${OTEL_SDK_DISABLED-} ]] && _gwtrace_skip "$#"; then
    [[ -o allexport ]] && _gwtrace_unexport
    builtin return 0
  fi
  # The span id: a new process (a subshell inherits the prefix) or a counter
  # at its end draws a new prefix first.
  if [[ $BASHPID != "$_gwtrace_pid" || $_gwtrace_ctr -ge 9000 ]]; then
    _gwtrace_newpfx
  fi
  _gwtrace_ctr+=1
  _gwtrace_span=$_gwtrace_pfx$_gwtrace_ctr
  if (( _gwtrace_depth > 0 )); then
    _gwtrace_trace=$_gwtrace_tr _gwtrace_parent=$_gwtrace_sp _gwtrace_flags=$_gwtrace_fl _gwtrace_state=$_gwtrace_st
  elif [[ -n $_gwtrace_base_tr ]]; then
    _gwtrace_trace=$_gwtrace_base_tr _gwtrace_parent=$_gwtrace_base_sp _gwtrace_remote=1 \
      _gwtrace_flags=$_gwtrace_base_fl _gwtrace_state=$_gwtrace_base_ts
  else
    _gwtrace_trace_id
    _gwtrace_trace=$_gwtrace_r _gwtrace_parent=- _gwtrace_flags=01 _gwtrace_state=''
  fi
  # Push the span, remembering the TRACEPARENT/TRACESTATE it hides (the
  # letter in _gwtrace_mk says how to give them back).
  if [[ -n ${TRACESTATE+x} ]]; then
    _gwtrace_m=${TRACEPARENT+y}
    _gwtrace_m=${_gwtrace_m:-v}
  else
    _gwtrace_m=${TRACEPARENT+x}
    _gwtrace_m=${_gwtrace_m:-u}
  fi
  _gwtrace_depth+=1
  _gwtrace_up[_gwtrace_depth]=$_gwtrace_pa _gwtrace_pa=$_gwtrace_sp _gwtrace_otp[_gwtrace_depth]=${TRACEPARENT-} _gwtrace_mk+=$_gwtrace_m \
    _gwtrace_ots[_gwtrace_depth]=${TRACESTATE+x}${TRACESTATE-} \
    _gwtrace_tr=$_gwtrace_trace _gwtrace_fl=$_gwtrace_flags _gwtrace_st=$_gwtrace_state _gwtrace_sp=$_gwtrace_span
  # Inner spans hide a TRACEPARENT the library exported itself; only the
  # outermost one can hide a value the host set without exporting.
  if (( _gwtrace_depth == 1 )) && [[ -n ${TRACEPARENT+x}${TRACESTATE+x} ]]; then
    _gwtrace_export_attrs
  fi
  (( _gwtrace_ro_tp )) || builtin export TRACEPARENT="00-$_gwtrace_trace-$_gwtrace_span-$_gwtrace_flags"
  if [[ -n $_gwtrace_state${TRACESTATE+x} ]]; then
    _gwtrace_set_tracestate "$_gwtrace_state" "${_gwtrace_state:+x}"
  fi
  if [[ $_gwtrace_flags == ?[13579bdf] ]]; then
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    _gwtrace_line="gw1${_gwtrace_tab}B${_gwtrace_tab}${EPOCHREALTIME:-$_gwtrace_clock}${_gwtrace_tab}${BASHPID}${_gwtrace_tab}${_gwtrace_trace}${_gwtrace_tab}${_gwtrace_span}${_gwtrace_tab}${_gwtrace_parent}${_gwtrace_tab}${_gwtrace_remote}${_gwtrace_tab}${_gwtrace_flags}${_gwtrace_tab}"
    if [[ -n $_gwtrace_state ]]; then
      _gwtrace_esc "$_gwtrace_state"; _gwtrace_line+=$_gwtrace_r
    else
      _gwtrace_line+=-
    fi
    _gwtrace_esc "${1:0:4096}"; _gwtrace_line+=$_gwtrace_tab$_gwtrace_r
    (( $# < 2 )) || _gwtrace_attrs "${@:2}"
    _gwtrace_emit
  fi
  [[ -o allexport ]] && _gwtrace_unexport
  builtin return 0
}

# _gwtrace_end [STATUS] [KEY=VALUE...]: trace_end's general path. Runs in
# trace_end's dynamic scope: sets its _gwtrace_rc to the code to return.
_gwtrace_end() {
  builtin local _gwtrace_status="$_gwtrace_rc" _gwtrace_line _gwtrace_m _gwtrace_wh
  if [[ $_gwtrace_depth -eq 0 || -n ${GWTRACE_DISABLED-}${OTEL_SDK_DISABLED-} ]] && _gwtrace_skip "$_gwtrace_depth"; then
    [[ -o allexport ]] && _gwtrace_unexport
    builtin return 0
  fi
  # A first argument is the status unless it reads as KEY=VALUE (no blank in KEY).
  if [[ -n ${1-} ]] && [[ $1 != *=* || ${1%%=*} == *[[:space:]]* ]]; then
    _gwtrace_status_of "$1"
    _gwtrace_status=$_gwtrace_r _gwtrace_rc=$_gwtrace_rcode
    builtin shift
  fi
  if [[ $_gwtrace_fl == ?[13579bdf] ]]; then
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    _gwtrace_line="gw1${_gwtrace_tab}E${_gwtrace_tab}${EPOCHREALTIME:-$_gwtrace_clock}${_gwtrace_tab}${BASHPID}${_gwtrace_tab}${_gwtrace_tr}${_gwtrace_tab}${_gwtrace_sp}${_gwtrace_tab}${_gwtrace_status}"
    if [[ $_gwtrace_status == 0 || $_gwtrace_status == ok ]]; then
      (( $# == 0 )) || _gwtrace_attrs "$@"
    else
      _gwtrace_where
      _gwtrace_attrs "$@" ${_gwtrace_wh[@]+"${_gwtrace_wh[@]}"}
    fi
    _gwtrace_emit
  fi
  # Pop the span and give back the TRACEPARENT/TRACESTATE it hid.
  _gwtrace_m=${_gwtrace_mk:${#_gwtrace_mk}-1}
  _gwtrace_sp=$_gwtrace_pa _gwtrace_pa=${_gwtrace_up[_gwtrace_depth]} _gwtrace_mk=${_gwtrace_mk%?} _gwtrace_depth+=-1
  (( _gwtrace_ro_tp )) || case $_gwtrace_m in
    [xy]) builtin export TRACEPARENT="${_gwtrace_otp[_gwtrace_depth+1]}" ;;
    [st]) TRACEPARENT=${_gwtrace_otp[_gwtrace_depth+1]}; builtin export -n TRACEPARENT ;;
    *) builtin unset TRACEPARENT ;;
  esac
  if [[ $_gwtrace_m == [ytv] ]]; then
    _gwtrace_m=${_gwtrace_ots[_gwtrace_depth+1]}
    _gwtrace_set_tracestate "${_gwtrace_m:1}" "${_gwtrace_m:0:1}"
  elif [[ -n ${TRACESTATE+x} ]]; then
    _gwtrace_set_tracestate '' ''
  fi
  [[ -o allexport ]] && _gwtrace_unexport
  builtin return 0
}

# _gwtrace_where: where a failing span ends, into the caller's _gwtrace_wh
# (KEY=VALUE words): the line, file and function of the first frame outside
# the library (the caller of trace_end, or of trace_run). Facts bash already
# has (BASH_LINENO, BASH_SOURCE, FUNCNAME): no fork, no system call. The
# sidecar puts them, with the stderr's last lines, into the span's exception
# event (gwtrace/sidecar/failure.py).
_gwtrace_where() {
  builtin local -i _gwtrace_k=1
  _gwtrace_wh=()
  while (( _gwtrace_k < ${#FUNCNAME[@]} )); do
    case ${FUNCNAME[_gwtrace_k]} in
      trace_*|_gwtrace_*) _gwtrace_k+=1 ;;
      *) break ;;
    esac
  done
  (( _gwtrace_k < ${#FUNCNAME[@]} + 1 )) || builtin return 0
  [[ ${BASH_LINENO[_gwtrace_k-1]-} == [123456789]* ]] && _gwtrace_wh+=("code.line.number=${BASH_LINENO[_gwtrace_k-1]}")
  [[ -n ${BASH_SOURCE[_gwtrace_k]-} ]] && _gwtrace_wh+=("code.file.path=${BASH_SOURCE[_gwtrace_k]:0:1000}")
  case ${FUNCNAME[_gwtrace_k]-main} in
    main|source) ;;
    *) _gwtrace_wh+=("code.function.name=${FUNCNAME[_gwtrace_k]}") ;;
  esac
  builtin return 0
}

# Under `set -a` every assignment exports: keep the state out of children.
_gwtrace_unexport() {
  builtin export -n _gwtrace_depth _gwtrace_ctr _gwtrace_tr _gwtrace_fl _gwtrace_st _gwtrace_sp _gwtrace_pa _gwtrace_mk \
    _gwtrace_rng _gwtrace_pid _gwtrace_pfx _gwtrace_r _gwtrace_rcode _gwtrace_clock _gwtrace_loaded \
    _gwtrace_base_tr _gwtrace_base_sp _gwtrace_base_fl _gwtrace_base_ts _gwtrace_boot_us _gwtrace_attr_ok \
    _gwtrace_ro_tp _gwtrace_ro_ts _gwtrace_ksock _gwtrace_kdir _gwtrace_file _gwtrace_key _gwtrace_ekey _gwtrace_tab \
    _gwtrace_eret
  builtin return 0
}

# _gwtrace_skip COUNT: true when a call must do nothing: tracing is off, or
# COUNT (arguments for trace_begin, open spans for trace_end) is zero.
_gwtrace_skip() {
  (( $1 == 0 )) || _gwtrace_off
}

# True when tracing is switched off (GWTRACE_DISABLED=1, OTEL_SDK_DISABLED=true).
_gwtrace_off() {
  [[ ${GWTRACE_DISABLED-} == 1 || ${OTEL_SDK_DISABLED-} == [Tt][Rr][Uu][Ee] ]]
}

_gwtrace_is_shell_code() {
  case $1 in
    eval|source|.) builtin return 0 ;;
  esac
  builtin declare -F -- "$1" >/dev/null 2>&1
}

# _gwtrace_status_of WORD: the wire status into _gwtrace_r (an exit code,
# ok, error or error:<message>) and the code to return into _gwtrace_rcode.
_gwtrace_status_of() {
  case $1 in
    [Oo][Kk]) _gwtrace_r=ok _gwtrace_rcode=0 ;;
    [Ee][Rr][Rr][Oo][Rr]) _gwtrace_r=error _gwtrace_rcode=1 ;;
    *)
      if [[ $1 != *[!0123456789]* && ${#1} -lt 10 ]]; then
        _gwtrace_r=$((10#$1)) _gwtrace_rcode=$((10#$1))
      else
        # A message: its secrets redacted (where the broad test of
        # _gwtrace_attrs says they may be: _gwtrace_message), escaped.
        _gwtrace_r=${1:0:4096}
        case ${_gwtrace_r,,} in
          *pass*|*pw*|*auth*|*key*|*jwt*|*token*|*secret*|*cred*|*cook*|*bearer[$' \t']*|*eyj*|*s?g[=:]*|*s?gnat*|\
          *_pat*|*://*@*) _gwtrace_message ;;
        esac
        _gwtrace_esc "$_gwtrace_r"
        _gwtrace_r=error:$_gwtrace_r _gwtrace_rcode=1
      fi ;;
  esac
  builtin return 0
}

# _gwtrace_message: the status message in _gwtrace_r (its first 4096
# characters, as _gwtrace_esc keeps) with its secrets redacted by the value
# rule: _gwtrace_redacts with no key, then _gwtrace_userinfo.
_gwtrace_message() {
  if _gwtrace_redacts '' "$_gwtrace_r"; then
    _gwtrace_r='[REDACTED]'
  elif [[ $_gwtrace_r == *://*@* ]]; then
    _gwtrace_userinfo "$_gwtrace_r"
  fi
  builtin return 0
}

# _gwtrace_now: the time as "seconds.microseconds" (the form of bash 5's
# EPOCHREALTIME) into _gwtrace_clock, for bash 4: /proc/uptime (10 ms
# resolution: "SECONDS.CC IDLE") plus the boot time, without forking.
_gwtrace_now() {
  builtin local _gwtrace_upt='' _gwtrace_cs='' _gwtrace_us
  IFS=' .' builtin read -r _gwtrace_upt _gwtrace_cs _gwtrace_us </proc/uptime || :
  if [[ $_gwtrace_upt == [0123456789]* && $_gwtrace_upt$_gwtrace_cs != *[!0123456789]* && $_gwtrace_cs == [0123456789][0123456789] ]]; then
    _gwtrace_us=$(( _gwtrace_boot_us + (10#$_gwtrace_upt * 100 + 10#$_gwtrace_cs) * 10000 ))
    _gwtrace_clock=${_gwtrace_us:0:${#_gwtrace_us}-6}.${_gwtrace_us:${#_gwtrace_us}-6}
  else
    builtin printf -v _gwtrace_clock '%(%s)T.000000' -1
  fi
  builtin return 0
}

# _gwtrace_rand64: 16 hex digits, never all zero, into _gwtrace_r: splitmix64
# over a state seeded per process from the kernel (_gwtrace_reseed), XOR
# $BASHPID << 40 (distinct ids even if the kernel gave nothing).
_gwtrace_rand64() {
  builtin local _gwtrace_z
  builtin printf -v _gwtrace_r '%016x' "$(( _gwtrace_z = (_gwtrace_rng += -7046029254386353131),
      _gwtrace_z = (_gwtrace_z ^ ((_gwtrace_z >> 30) & 0x3FFFFFFFF)) * -4658895280553007687,
      _gwtrace_z = (_gwtrace_z ^ ((_gwtrace_z >> 27) & 0x1FFFFFFFFF)) * -7723592293110705685,
      _gwtrace_z = _gwtrace_z ^ ((_gwtrace_z >> 31) & 0x1FFFFFFFF) ^ (BASHPID << 40), _gwtrace_z ? _gwtrace_z : 1 ))"
}

# _gwtrace_trace_id: 32 hex digits, random, into _gwtrace_r.
_gwtrace_trace_id() {
  builtin local _gwtrace_hi
  [[ $_gwtrace_pid == "$BASHPID" ]] || _gwtrace_newpfx
  _gwtrace_rand64; _gwtrace_hi=$_gwtrace_r
  _gwtrace_rand64; _gwtrace_r=$_gwtrace_hi$_gwtrace_r
}

# _gwtrace_newpfx: a new span-id prefix, 12 random hex digits, and the
# counter back to 1000: a span id is the prefix and the counter's 4 decimal
# digits (decimal digits are hex digits; 1001-9000, so never all zero). A new
# process (a subshell inherits the state) first reseeds the generator.
# docs/design.md gives the collision probability.
_gwtrace_newpfx() {
  [[ $_gwtrace_pid == "$BASHPID" ]] || _gwtrace_reseed
  _gwtrace_rand64
  _gwtrace_pfx=${_gwtrace_r:4} _gwtrace_ctr=1000
  builtin return 0
}

# _gwtrace_reseed: mix fresh kernel randomness into the state, for this
# $BASHPID: $SRANDOM (bash 5.1+, getrandom(2)) or, without it, one fork-free
# read of /proc/sys/kernel/random/uuid; with neither, the clock.
_gwtrace_reseed() {
  builtin local _gwtrace_u=''
  _gwtrace_pid=$BASHPID
  if [[ ${SRANDOM-} == [0123456789]* && $SRANDOM != *[!0123456789]* ]]; then
    _gwtrace_rng=$(( _gwtrace_rng ^ (SRANDOM << 32) ^ SRANDOM ^ (BASHPID << 40) ))
    _gwtrace_rekey
    builtin return 0
  fi
  IFS= builtin read -r _gwtrace_u </proc/sys/kernel/random/uuid || _gwtrace_u=''
  _gwtrace_u=${_gwtrace_u//-/}
  if [[ ${#_gwtrace_u} -ge 30 && $_gwtrace_u != *[!0123456789abcdef]* ]]; then
    _gwtrace_rng=$(( _gwtrace_rng ^ (16#${_gwtrace_u:0:15} << 4) ^ 16#${_gwtrace_u:15:15} ))
  else
    # No kernel randomness: mix the clock (digits only: it is "S.UUUUUU").
    [[ -n ${EPOCHREALTIME-} ]] || _gwtrace_now
    _gwtrace_u=${EPOCHREALTIME:-$_gwtrace_clock}
    _gwtrace_u=${_gwtrace_u//[!0123456789]/}
    _gwtrace_rng=$(( _gwtrace_rng ^ (10#${_gwtrace_u:-0} * 2654435761) ^ (RANDOM << 16) ^ (BASHPID << 40) ))
  fi
  _gwtrace_rekey
  builtin return 0
}

# _gwtrace_esc STRING: escape backslash, tab, newline and CR into _gwtrace_r.
# A value longer than a line can carry is cut first: escaping 100 KB in bash
# would take seconds, and the line would be cut anyway.
_gwtrace_esc() {
  _gwtrace_r=$1
  (( ${#_gwtrace_r} <= 256 )) || { _gwtrace_esc_long; builtin return 0; }
  if [[ $_gwtrace_r == *[$'\\\t\n\r']* ]]; then
    builtin local _gwtrace_bs=\\
    _gwtrace_r=${_gwtrace_r//"$_gwtrace_bs"/"$_gwtrace_bs$_gwtrace_bs"}
    _gwtrace_r=${_gwtrace_r//$'\t'/"${_gwtrace_bs}t"}
    _gwtrace_r=${_gwtrace_r//$'\n'/"${_gwtrace_bs}n"}
    _gwtrace_r=${_gwtrace_r//$'\r'/"${_gwtrace_bs}r"}
  fi
}

# _gwtrace_esc_long: _gwtrace_esc of a value over 256 characters, in
# _gwtrace_r: cut to 4096, then escaped 256 characters at a time. bash's
# ${v//pattern/string} costs more than linearly in the length: on 4096
# characters full of TABs and backslashes a call took 15 ms (bash 5.2) to
# 90 ms (4.2) in one piece, 3-8 ms in pieces (an escape never spans two).
_gwtrace_esc_long() {
  builtin local _gwtrace_bs=\\ _gwtrace_rest _gwtrace_c _gwtrace_out=''
  (( ${#_gwtrace_r} <= 4096 )) || _gwtrace_r=${_gwtrace_r:0:4096}
  [[ $_gwtrace_r == *[$'\\\t\n\r']* ]] || builtin return 0
  _gwtrace_rest=$_gwtrace_r
  while [[ -n $_gwtrace_rest ]]; do
    _gwtrace_c=${_gwtrace_rest:0:256} _gwtrace_rest=${_gwtrace_rest:256}
    if [[ $_gwtrace_c == *[$'\\\t\n\r']* ]]; then
      _gwtrace_c=${_gwtrace_c//"$_gwtrace_bs"/"$_gwtrace_bs$_gwtrace_bs"}
      _gwtrace_c=${_gwtrace_c//$'\t'/"${_gwtrace_bs}t"}
      _gwtrace_c=${_gwtrace_c//$'\n'/"${_gwtrace_bs}n"}
      _gwtrace_c=${_gwtrace_c//$'\r'/"${_gwtrace_bs}r"}
    fi
    _gwtrace_out+=$_gwtrace_c
  done
  _gwtrace_r=$_gwtrace_out
}

# _gwtrace_attrs KEY=VALUE...: append escaped fields to the caller's
# _gwtrace_line, secrets redacted (_gwtrace_redacts). Values are cut so that
# the line fits (_gwtrace_fit), keeping every attribute.
_gwtrace_attrs() {
  builtin local _gwtrace_a
  builtin local -a _gwtrace_f; _gwtrace_f=()
  for _gwtrace_a in "$@"; do
    # Only the first 4096 characters of a value are ever written: checking
    # (and escaping) the rest of a 100 KB value would take most of a second.
    (( ${#_gwtrace_a} <= 8192 )) || _gwtrace_a=${_gwtrace_a:0:8192}
    # The rule only where a broader, cheaper test says it might apply (the
    # test of trace_begin's fast path, with TAB; its words have no "i",
    # which a Turkish locale would not lower-case to ASCII: "?" stands for it).
    case ${_gwtrace_a,,} in
      *token*|*secret*|*pass*|*pw*|*auth*|*key*|*jwt*|*proxy*|*cred*|*cook*|*bearer[$' \t']*|*eyj*|\
      *s?g[=:]*|*s?gnat*|*_pat*|*://*@*)
        if [[ $_gwtrace_a == *=* ]] && _gwtrace_redacts "${_gwtrace_a%%=*}" "${_gwtrace_a#*=}"; then
          _gwtrace_a="${_gwtrace_a%%=*}=[REDACTED]"
        elif [[ $_gwtrace_a == *=*://*@* ]]; then
          _gwtrace_userinfo "${_gwtrace_a#*=}"
          _gwtrace_a="${_gwtrace_a%%=*}=$_gwtrace_r"
        fi ;;
    esac
    [[ $_gwtrace_a == *[$'\\\t\n\r']* ]] && { _gwtrace_esc "${_gwtrace_a:0:4096}"; _gwtrace_a=$_gwtrace_r; }
    _gwtrace_f+=("$_gwtrace_a")
  done
  _gwtrace_a="${_gwtrace_f[*]}"
  (( ${#_gwtrace_line} + ${#_gwtrace_a} + $# < 900 )) || _gwtrace_fit
  for _gwtrace_a in "${_gwtrace_f[@]}"; do
    _gwtrace_line+=$'\t'$_gwtrace_a
  done
}

# _gwtrace_redacts KEY VALUE: true if the attribute holds a secret, by the
# one rule of docs/protocol.md ("Secrets"), also in sidecar/gwtrace/wire/redact.py
# and shim/gwtrace-job-wrapper (tests/test_redact.py holds them equal). KEY ''
# for a status message (the value rule alone). Key and value are compared
# ASCII-case-insensitively, with explicit classes (no ${,,} and no ranges:
# both depend on the locale); the key is wrapped in "-" so that a word at
# either end of it has a boundary, the value led by one.
_gwtrace_redacts() {
  builtin local _gwtrace_w='[!ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789]'
  case -$1- in
    *[Tt][Oo][Kk][Ee][Nn]*|*[Ss][Ee][Cc][Rr][Ee][Tt]*|*[Pp][Aa][Ss][Ss][Ww]*|*[Pp][Aa][Ss][Ss][Pp][Hh][Rr][Aa][Ss][Ee]*|\
    *[Cc][Rr][Ee][Dd][Ee][Nn][Tt][Ii][Aa][Ll]*|*[Cc][Oo][Oo][Kk][Ii][Ee]*|*[Aa][Uu][Tt][Hh][Oo][Rr][Ii][Zz]*|\
    *[Aa][Uu][Tt][Hh][Ee][Nn][Tt]*|*[Aa][Pp][Ii][Kk][Ee][Yy]*|*[Pp][Rr][Ii][Vv][Aa][Tt][Ee][Kk][Ee][Yy]*|\
    *[Ss][Ss][Hh][Kk][Ee][Yy]*|*[Pp][Rr][Oo][Xx][Yy]*|*[Ss][Ss][Hh][Pp][Aa][Ss][Ss]*|\
    *[Ss][Ii][Gg][Nn][Aa][Tt][Uu][Rr][Ee]*|*[Gg][Ii][Tt][Hh][Uu][Bb]_[Pp][Aa][Tt]*|\
    *${_gwtrace_w}[Pp][Aa][Ss][Ss]$_gwtrace_w*|*${_gwtrace_w}[Pp][Ww][Dd]$_gwtrace_w*|*${_gwtrace_w}[Pp][Ww]$_gwtrace_w*|\
    *${_gwtrace_w}[Aa][Uu][Tt][Hh]$_gwtrace_w*|*${_gwtrace_w}[Kk][Ee][Yy]$_gwtrace_w*|\
    *${_gwtrace_w}[Jj][Ww][Tt]$_gwtrace_w*) builtin return 0 ;;
  esac
  case -$2 in
    *[Bb][Ee][Aa][Rr][Ee][Rr][$' \t']*|*eyJ?*.?*.*|*[Gg][Ii][Tt][Hh][Uu][Bb]_[Pp][Aa][Tt]*) builtin return 0 ;;
    *[=:]*)
      case -$2 in
        *[Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd][=:]*|*[Pp][Aa][Ss][Ss][Ww][Dd][=:]*|*[Pp][Aa][Ss][Ss][Pp][Hh][Rr][Aa][Ss][Ee][=:]*|\
        *[Ss][Ss][Hh][Pp][Aa][Ss][Ss][=:]*|*[Tt][Oo][Kk][Ee][Nn][=:]*|*[Ss][Ee][Cc][Rr][Ee][Tt][=:]*|\
        *[Aa][Pp][Ii][Kk][Ee][Yy][=:]*|*[Pp][Rr][Ii][Vv][Aa][Tt][Ee][Kk][Ee][Yy][=:]*|*[Ss][Ss][Hh][Kk][Ee][Yy][=:]*|\
        *[Aa][Uu][Tt][Hh][Oo][Rr][Ii][Zz][Aa][Tt][Ii][Oo][Nn][=:]*|*[Cc][Oo][Oo][Kk][Ii][Ee][=:]*|\
        *[Cc][Rr][Ee][Dd][Ee][Nn][Tt][Ii][Aa][Ll][=:]*|*[Cc][Rr][Ee][Dd][Ee][Nn][Tt][Ii][Aa][Ll][Ss][=:]*|\
        *[Ss][Ii][Gg][Nn][Aa][Tt][Uu][Rr][Ee][=:]*|\
        *${_gwtrace_w}[Pp][Aa][Ss][Ss][=:]*|*${_gwtrace_w}[Pp][Ww][Dd][=:]*|*${_gwtrace_w}[Pp][Ww][=:]*|\
        *${_gwtrace_w}[Aa][Uu][Tt][Hh][=:]*|*${_gwtrace_w}[Kk][Ee][Yy][=:]*|*${_gwtrace_w}[Jj][Ww][Tt][=:]*|\
        *${_gwtrace_w}[Ss][Ii][Gg][=:]*) builtin return 0 ;;
      esac ;;
  esac
  builtin return 1
}

# _gwtrace_userinfo VALUE: VALUE with the credentials of every URL in it
# replaced, into _gwtrace_r (the rule's last part; redact.py strip_userinfo):
# after each "://" the authority runs to the first / ? # or white space (or
# the next "://"); all before its last "@" becomes [REDACTED].
_gwtrace_userinfo() {
  builtin local _gwtrace_rest="$1" _gwtrace_p _gwtrace_h
  _gwtrace_r=${1%%://*}
  while [[ $_gwtrace_rest == *://* ]]; do
    _gwtrace_rest=${_gwtrace_rest#*://}
    _gwtrace_p=${_gwtrace_rest%%://*}
    _gwtrace_h=${_gwtrace_p%%[/?#$' \t\n\r']*}
    if [[ $_gwtrace_h == *@* ]]; then
      _gwtrace_h=${_gwtrace_h%@*}                             # the userinfo
      _gwtrace_p="[REDACTED]${_gwtrace_p:${#_gwtrace_h}}"
    fi
    _gwtrace_r+=://$_gwtrace_p
  done
  builtin return 0
}

# _gwtrace_fit: cut the longest values in the caller's _gwtrace_f (escaped
# KEY=VALUE fields) so that they and its _gwtrace_line fit in one line
# (_gwtrace_emit), every attribute kept: each field gets an equal share of
# what is left, a field shorter than its share gives the rest to the others.
# A cut field keeps its key whole and a prefix of its value; the line gets
# gwtrace.truncated=true. _gwtrace_shrink stays the last guard (a huge name).
_gwtrace_fit() {
  builtin local -i _gwtrace_max=4000 _gwtrace_total="${#_gwtrace_line}" _gwtrace_i _gwtrace_n _gwtrace_left _gwtrace_share \
    _gwtrace_more=1
  builtin local _gwtrace_a _gwtrace_bs
  if [[ $_gwtrace_line${_gwtrace_f[*]} == *[![:ascii:]]* ]]; then
    _gwtrace_max=1000
    # Lengths in characters, as under UTF-8, whatever the locale (_gwtrace_chars).
    _gwtrace_a=$'\xc3\xa9'
    # shellcheck disable=SC2015  # _gwtrace_chars returns 0; `|| :`: a readonly LC_ALL
    (( ${#_gwtrace_a} == 1 )) || { builtin local LC_ALL=C.UTF-8 && _gwtrace_chars || :; }
  fi
  for _gwtrace_a in "${_gwtrace_f[@]}"; do _gwtrace_total+=${#_gwtrace_a}+1; done
  (( _gwtrace_total > _gwtrace_max )) || builtin return 0
  _gwtrace_left=$(( _gwtrace_max - ${#_gwtrace_line} - 24 )) _gwtrace_n=${#_gwtrace_f[@]}
  builtin local -a _gwtrace_done; _gwtrace_done=()
  while (( _gwtrace_more && _gwtrace_n > 0 )); do
    _gwtrace_more=0 _gwtrace_share=$(( _gwtrace_left / _gwtrace_n - 1 ))
    for _gwtrace_i in "${!_gwtrace_f[@]}"; do
      [[ -z ${_gwtrace_done[_gwtrace_i]-} && ${#_gwtrace_f[_gwtrace_i]} -le $_gwtrace_share ]] || continue
      _gwtrace_done[_gwtrace_i]=1 _gwtrace_left+=-${#_gwtrace_f[_gwtrace_i]}-1 _gwtrace_n+=-1 _gwtrace_more=1
    done
  done
  (( _gwtrace_share >= 8 )) || _gwtrace_share=8
  for _gwtrace_i in "${!_gwtrace_f[@]}"; do
    [[ -z ${_gwtrace_done[_gwtrace_i]-} ]] || continue
    _gwtrace_a=${_gwtrace_f[_gwtrace_i]%%=*}          # the key stays whole
    _gwtrace_n=$(( ${#_gwtrace_a} + 1 > _gwtrace_share ? ${#_gwtrace_a} + 1 : _gwtrace_share ))
    _gwtrace_a=${_gwtrace_f[_gwtrace_i]:0:_gwtrace_n}
    # Never end inside an escape: drop an odd trailing backslash.
    _gwtrace_bs=${_gwtrace_a##*[!\\]}
    (( ${#_gwtrace_bs} % 2 == 0 )) || _gwtrace_a=${_gwtrace_a%\\}
    _gwtrace_f[_gwtrace_i]=$_gwtrace_a
  done
  _gwtrace_f+=(gwtrace.truncated=true)
}

# _gwtrace_emit: append the caller's _gwtrace_line to the event log.
_gwtrace_emit() {
  [[ ${GWTRACE_SOCKET-} == "$_gwtrace_ksock" && ${GWTRACE_DIR-} == "$_gwtrace_kdir" ]] || _gwtrace_logpath
  [[ -n $_gwtrace_file ]] || builtin return 0
  (( ${#_gwtrace_line} < 1000 )) || _gwtrace_shrink
  builtin printf '%s\n' "$_gwtrace_line" >>"$_gwtrace_file" || :
}

# _gwtrace_logpath: the event log named by GWTRACE_SOCKET (file:///path) or
# GWTRACE_DIR into _gwtrace_file ('' for none or another scheme), and the two
# values it was computed from (the fast paths compare them on every call).
_gwtrace_logpath() {
  _gwtrace_ksock=${GWTRACE_SOCKET-} _gwtrace_kdir=${GWTRACE_DIR-} \
    _gwtrace_file=${GWTRACE_SOCKET:-${GWTRACE_DIR:+file://$GWTRACE_DIR/events.log}}
  if [[ $_gwtrace_file == file://?* ]]; then
    _gwtrace_file=${_gwtrace_file#file://}
    _gwtrace_is_log "$_gwtrace_file" || _gwtrace_file=''
  else
    _gwtrace_file=''
  fi
  _gwtrace_rekey
}

# _gwtrace_is_log PATH: true if PATH is an event log of gwtrace's, the only
# kind of file the library appends to (docs/protocol.md, "Transport"): a
# regular file (not a FIFO, whose open would block, nor a device) owned by
# this user, empty or starting with "gw1<TAB>"; or no file yet in a directory
# of this user's (the append creates it); or a sidecar's own events.log (its
# directory holds sidecar.lock), whatever junk it starts with. A copy of
# /etc/passwd is none. Run
# when GWTRACE_SOCKET or GWTRACE_DIR changes (the verdict is kept with them):
# a stat or two and a read of 4 bytes, no fork.
_gwtrace_is_log() {
  builtin local _gwtrace_head=''
  if [[ -f $1 ]]; then
    [[ -O $1 ]] || builtin return 1
    [[ -s $1 ]] || builtin return 0
    IFS= builtin read -r -N 4 _gwtrace_head <"$1" || :
    [[ $_gwtrace_head == "gw1${_gwtrace_tab}" || ( $1 == */events.log && -e ${1%/*}/sidecar.lock ) ]]
  elif [[ -e $1 || -L $1 ]]; then
    builtin return 1
  elif [[ $1 == */* ]]; then
    [[ -d ${1%/*}/ && -O ${1%/*}/ ]]
  else
    [[ -O . ]]
  fi
}

# _gwtrace_rekey: the keys the fast paths compare with what they see:
# ":PID:LOG" for trace_begin, ":LOG" for trace_end, where LOG is
# GWTRACE_SOCKET, or GWTRACE_DIR if it is unset or empty, and PID the process
# the span-id prefix was drawn for; preceded by nothing, since
# GWTRACE_DISABLED, OTEL_SDK_DISABLED and TRACESTATE must be unset or empty.
# (A GWTRACE_SOCKET set later to exactly the former GWTRACE_DIR string, not
# a file:// URL, would go unnoticed: the events would still go to
# GWTRACE_DIR/events.log.) The fast paths match the keys unquoted (a quoted
# pattern costs twice as much), so a key with a glob character, or no event
# log, or a readonly TRACEPARENT, is "-", which nothing matches: those cases
# take the general paths.
_gwtrace_rekey() {
  _gwtrace_ekey=":${_gwtrace_ksock:-$_gwtrace_kdir}"
  _gwtrace_key=":$_gwtrace_pid$_gwtrace_ekey"
  if [[ -z $_gwtrace_file || $_gwtrace_ro_tp != 0 || $_gwtrace_key == *[][*?\\\(\)\|@!+]* ]]; then
    _gwtrace_key=- _gwtrace_ekey=-
  fi
}

# _gwtrace_shrink: one printf is one write(2) below 4096 bytes, and O_APPEND
# writes of one call never interleave with other writers; a longer line is cut
# to stay below that, and marked. (Up to 4 bytes per character when not ASCII.)
_gwtrace_shrink() {
  builtin local _gwtrace_max=4000 _gwtrace_e=$'\xc3\xa9'
  if [[ $_gwtrace_line == *[![:ascii:]]* ]]; then
    _gwtrace_max=1000
    # shellcheck disable=SC2015  # as in _gwtrace_fit
    (( ${#_gwtrace_e} == 1 )) || { builtin local LC_ALL=C.UTF-8 && _gwtrace_chars || :; }
  fi
  (( ${#_gwtrace_line} > _gwtrace_max )) || builtin return 0
  _gwtrace_line=${_gwtrace_line:0:_gwtrace_max}
  [[ $_gwtrace_line == *\\ ]] && _gwtrace_line=${_gwtrace_line%\\}
  _gwtrace_line+=$'\tgwtrace.truncated=true'
}

# _gwtrace_chars: make the caller's `local LC_ALL` (just set to C.UTF-8) a
# UTF-8 locale that bash can load: the lengths and cuts of _gwtrace_fit and
# _gwtrace_shrink are in characters (docs/protocol.md, "Transport"), and under
# LC_ALL=C (common on worker nodes) bash counts bytes, which would cut a
# non-ASCII value elsewhere, even inside a character. Only for a long line
# with a non-ASCII character; a locale bash cannot load leaves bytes (and a
# warning on the closed fd 2), the next one is tried. A readonly LC_ALL
# stays as it is (the `local` fails, harmlessly).
_gwtrace_chars() {
  builtin local _gwtrace_e=$'\xc3\xa9' _gwtrace_l
  (( ${#_gwtrace_e} == 1 )) && builtin return 0
  for _gwtrace_l in C.utf8 en_US.UTF-8 en_US.utf8; do
    LC_ALL=$_gwtrace_l
    (( ${#_gwtrace_e} == 1 )) && builtin return 0
  done
  builtin return 0
}

# _gwtrace_set_tracestate VALUE HOW: HOW is x (export VALUE), s (set VALUE,
# not exported) or '' (unset). A readonly TRACESTATE is left alone.
_gwtrace_set_tracestate() {
  (( _gwtrace_ro_ts )) && builtin return 0
  case $2 in
    x) builtin export TRACESTATE="$1" ;;
    s) TRACESTATE=$1; builtin export -n TRACESTATE ;;
    *) builtin unset TRACESTATE ;;
  esac
  builtin return 0
}

# _gwtrace_readonly_context: set _gwtrace_ro_tp/_gwtrace_ro_ts. Assigning a
# readonly variable aborts a bash script whatever `|| :` follows, so it must
# be known before. bash 4.4+ tells with ${var@a}; older bash with readonly -p
# (_gwtrace_readonly_old), or two subshells where that cannot be read.
_gwtrace_readonly_context() {
  builtin local _gwtrace_attrs _gwtrace_nounset=0
  if (( _gwtrace_attr_ok )); then
    # ${var@a} of an unset (maybe readonly) variable trips `set -u`.
    [[ -o nounset ]] && { _gwtrace_nounset=1; builtin set +u; }
    _gwtrace_attrs=${TRACEPARENT@a}
    [[ $_gwtrace_attrs == *r* ]] && _gwtrace_ro_tp=1
    _gwtrace_attrs=${TRACESTATE@a}
    [[ $_gwtrace_attrs == *r* ]] && _gwtrace_ro_ts=1
    (( _gwtrace_nounset )) && builtin set -u
  else
    # (subshells that try to assign only where readonly -p cannot be read)
    if ! _gwtrace_readonly_old; then
      ( TRACEPARENT=x ) 2>/dev/null || _gwtrace_ro_tp=1
      ( TRACESTATE=x ) 2>/dev/null || _gwtrace_ro_ts=1
    fi
  fi
  builtin return 0
}

# _gwtrace_export_attrs: for the outermost span, just pushed, record "set,
# not exported" (s or t in _gwtrace_mk, s in _gwtrace_ots) for the
# TRACEPARENT and TRACESTATE it hides (bash 4.4+: ${var@a}, older: _gwtrace_attrs_old; called before
# they change).
_gwtrace_export_attrs() {
  builtin local _gwtrace_attrs
  if [[ -n ${TRACEPARENT+x} ]]; then
    if (( _gwtrace_attr_ok )); then _gwtrace_attrs=${TRACEPARENT@a}; else _gwtrace_attrs_old TRACEPARENT; fi
    if [[ $_gwtrace_attrs != *x* ]]; then
      _gwtrace_mk=${_gwtrace_mk%?}
      if [[ -n ${TRACESTATE+x} ]]; then _gwtrace_mk+=t; else _gwtrace_mk+=s; fi
    fi
  fi
  if [[ -n ${TRACESTATE+x} ]]; then
    if (( _gwtrace_attr_ok )); then _gwtrace_attrs=${TRACESTATE@a}; else _gwtrace_attrs_old TRACESTATE; fi
    [[ $_gwtrace_attrs == *x* ]] || _gwtrace_ots[_gwtrace_depth]=s${_gwtrace_ots[_gwtrace_depth]:1}
  fi
  builtin return 0
}

# _gwtrace_attrs_old NAME: NAME's attributes (declare's letters: x when
# exported, r when readonly; empty when there is no such variable) into the
# caller's _gwtrace_attrs, on bash < 4.4, which has no ${var@a}. Without
# forking: declare -p writes into the file of a here-string (a temporary file
# bash made and unlinked; its fd is read-only, so the write reopens it through
# /proc), whose first line is then read back. Status 1, and x, when it cannot
# tell (POSIX mode, where a failed redirection of exec exits the shell; no
# writable TMPDIR; no /proc).
_gwtrace_attrs_old() {
  builtin local _gwtrace_fd _gwtrace_d='' _gwtrace_ok=1
  _gwtrace_attrs=x
  [[ -o posix ]] && builtin return 1
  { builtin exec {_gwtrace_fd}<<<''; } 2>&- || builtin return 1
  if { builtin : >|"/proc/$BASHPID/fd/$_gwtrace_fd"; } 2>&-; then
    _gwtrace_ok=0 _gwtrace_attrs=''
    if builtin declare -p "$1" >|"/proc/$BASHPID/fd/$_gwtrace_fd" 2>&- \
       && IFS= builtin read -r -u "$_gwtrace_fd" _gwtrace_d && [[ $_gwtrace_d == "declare -"* ]]; then
      _gwtrace_d=${_gwtrace_d#declare -}
      _gwtrace_attrs=${_gwtrace_d%% *}
    fi
  fi
  builtin exec {_gwtrace_fd}<&-
  builtin return "$_gwtrace_ok"
}

# _gwtrace_readonly_old: _gwtrace_ro_tp/_gwtrace_ro_ts from `readonly -p`,
# read back as in _gwtrace_attrs_old (declare -p of bash < 4.4 does not show
# a readonly variable without a value). Status 1 when it cannot tell.
_gwtrace_readonly_old() {
  builtin local _gwtrace_fd _gwtrace_d _gwtrace_n=0
  [[ -o posix ]] && builtin return 1
  { builtin exec {_gwtrace_fd}<<<''; } 2>&- || builtin return 1
  if ! { builtin readonly -p >|"/proc/$BASHPID/fd/$_gwtrace_fd"; } 2>&-; then
    builtin exec {_gwtrace_fd}<&-
    builtin return 1
  fi
  # (bounded: a host's readonly value with many lines is not read to its end)
  while (( _gwtrace_n++ < 1000 )) && IFS= builtin read -r -u "$_gwtrace_fd" _gwtrace_d; do
    case $_gwtrace_d in
      "declare -"*" TRACEPARENT"|"declare -"*" TRACEPARENT="*) _gwtrace_ro_tp=1 ;;
      "declare -"*" TRACESTATE"|"declare -"*" TRACESTATE="*) _gwtrace_ro_ts=1 ;;
    esac
  done
  builtin exec {_gwtrace_fd}<&-
  builtin return 0
}

# _gwtrace_is_hex STRING LENGTH: lower-case hex of that length, not all zero.
_gwtrace_is_hex() {
  [[ ${#1} -eq $2 && $1 != *[!0123456789abcdef]* && $1 == *[123456789abcdef]* ]]
}

# Read the W3C context this process was started with (TRACEPARENT and
# TRACESTATE). An invalid traceparent is ignored as a whole: new root spans.
_gwtrace_read_context() {
  builtin local _gwtrace_tp="${TRACEPARENT-}" _gwtrace_ver _gwtrace_tid _gwtrace_sid _gwtrace_fl2
  _gwtrace_tp=${_gwtrace_tp#"${_gwtrace_tp%%[![:space:]]*}"}
  _gwtrace_tp=${_gwtrace_tp%"${_gwtrace_tp##*[![:space:]]}"}
  (( ${#_gwtrace_tp} >= 55 )) || builtin return 0
  _gwtrace_ver=${_gwtrace_tp:0:2} _gwtrace_tid=${_gwtrace_tp:3:32} _gwtrace_sid=${_gwtrace_tp:36:16} \
    _gwtrace_fl2=${_gwtrace_tp:53:2}
  [[ ${_gwtrace_tp:2:1}${_gwtrace_tp:35:1}${_gwtrace_tp:52:1} == --- ]] || builtin return 0
  [[ $_gwtrace_ver != *[!0123456789abcdef]* && $_gwtrace_ver != ff && $_gwtrace_fl2 != *[!0123456789abcdef]* ]] || builtin return 0
  if [[ $_gwtrace_ver == 00 ]]; then
    (( ${#_gwtrace_tp} == 55 )) || builtin return 0
  elif (( ${#_gwtrace_tp} > 55 )); then
    [[ ${_gwtrace_tp:55:1} == - ]] || builtin return 0
  fi
  _gwtrace_is_hex "$_gwtrace_tid" 32 && _gwtrace_is_hex "$_gwtrace_sid" 16 || builtin return 0
  # Only the sampled (01) and random (02) bits are defined; others go out as 0.
  builtin printf -v _gwtrace_fl2 '%02x' "$(( 16#$_gwtrace_fl2 & 3 ))"
  _gwtrace_base_tr=$_gwtrace_tid _gwtrace_base_sp=$_gwtrace_sid _gwtrace_base_fl=$_gwtrace_fl2
  _gwtrace_base_ts=${TRACESTATE-}
  builtin return 0
}

# _gwtrace_put_begin TS TRACE SPAN PARENT NAME [KEY=VALUE...] and
# _gwtrace_put_end TS TRACE SPAN STATUS [KEY=VALUE...]: the B and E lines of
# a span whose ids and times the caller knows, outside the span stack. For
# gwtrace's own glidein hooks (shim/gwtrace_setup.sh): they learn of a
# glidein step after it ran and give it the ids `gwtrace ingest
# --factory-logs` derives for the same step (docs/deploy.md). TS is
# "seconds.microseconds" or integer microseconds, PARENT a span id or '-'.
# Names, values and statuses are escaped, fitted and redacted as trace_begin's.
_gwtrace_put_begin() {
  builtin local _gwtrace_line
  (( $# >= 5 )) && ! _gwtrace_off || builtin return 0
  _gwtrace_line="gw1${_gwtrace_tab}B${_gwtrace_tab}$1${_gwtrace_tab}${BASHPID}${_gwtrace_tab}$2${_gwtrace_tab}$3${_gwtrace_tab}${4:--}${_gwtrace_tab}0${_gwtrace_tab}01${_gwtrace_tab}-"
  _gwtrace_esc "${5:0:4096}"; _gwtrace_line+=$_gwtrace_tab$_gwtrace_r
  (( $# < 6 )) || _gwtrace_attrs "${@:6}"
  _gwtrace_emit
  builtin return 0
}

_gwtrace_put_end() {
  builtin local _gwtrace_line
  (( $# >= 4 )) && ! _gwtrace_off || builtin return 0
  _gwtrace_status_of "$4"
  _gwtrace_line="gw1${_gwtrace_tab}E${_gwtrace_tab}$1${_gwtrace_tab}${BASHPID}${_gwtrace_tab}$2${_gwtrace_tab}$3${_gwtrace_tab}$_gwtrace_r"
  (( $# < 5 )) || _gwtrace_attrs "${@:5}"
  _gwtrace_emit
  builtin return 0
}

_gwtrace_init() {
  builtin local _gwtrace_upt='' _gwtrace_now='' _gwtrace_nocase=0
  if [[ -n ${GWTRACE_BOOT_US-} && $GWTRACE_BOOT_US != *[!0123456789]* ]]; then
    _gwtrace_boot_us=$GWTRACE_BOOT_US
  elif [[ -z ${EPOCHREALTIME-} ]]; then
    IFS= builtin read -r _gwtrace_upt </proc/uptime || _gwtrace_upt=''
    _gwtrace_upt=${_gwtrace_upt%% *}
    builtin printf -v _gwtrace_now '%(%s)T' -1
    if [[ $_gwtrace_upt == [0123456789]*.[0123456789][0123456789] && $_gwtrace_upt != *[!0123456789.]* ]]; then
      _gwtrace_boot_us=$(( _gwtrace_now * 1000000 - 10#${_gwtrace_upt/./} * 10000 ))
    fi
  fi
  (( BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4) )) && _gwtrace_attr_ok=1
  (( _gwtrace_attr_ok )) || _gwtrace_eret=1
  # Hex checks are glob matches: a host's nocasematch must not make "ABC" valid.
  if builtin shopt -q nocasematch; then
    _gwtrace_nocase=1
    builtin shopt -u nocasematch
  fi
  _gwtrace_read_context
  (( _gwtrace_nocase )) && builtin shopt -s nocasematch
  _gwtrace_readonly_context
  _gwtrace_newpfx
  _gwtrace_logpath
  # Under `set -a` our functions and variables were exported: keep them out of children.
  if [[ -o allexport ]]; then
    _gwtrace_unexport
    builtin export -n -f trace_begin trace_end trace_event trace_attr trace_run \
      _gwtrace_attrs _gwtrace_attrs_old _gwtrace_readonly_old _gwtrace_begin _gwtrace_emit _gwtrace_end _gwtrace_esc _gwtrace_esc_long _gwtrace_export_attrs \
      _gwtrace_init _gwtrace_is_hex _gwtrace_is_log _gwtrace_is_shell_code _gwtrace_logpath _gwtrace_newpfx _gwtrace_now \
      _gwtrace_off _gwtrace_rand64 _gwtrace_read_context _gwtrace_readonly_context _gwtrace_rekey _gwtrace_reseed \
      _gwtrace_set_tracestate _gwtrace_shrink _gwtrace_fit _gwtrace_chars _gwtrace_redacts _gwtrace_skip _gwtrace_status_of \
      _gwtrace_trace_id _gwtrace_put_begin _gwtrace_put_end _gwtrace_userinfo _gwtrace_message _gwtrace_where \
      _gwtrace_unexport || :
  fi
  builtin return 0
}

_gwtrace_init 2>&-
