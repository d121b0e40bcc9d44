# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh
#
# gwtrace-auto-top.sh - the scripts level's spans for the functions a script
# calls from its top level (a glidein's downloads, signature checks, its
# validation scripts under them), read by gwtrace-auto.sh at the start of a
# script at this level (note 1). The notes at the end (bash does not read them)
# say why it is written as it is.

# The DEBUG trap, installed last by gwtrace-auto.sh, without functrace; its
# fast path (note 2): a command word known not to name a function
# (_gwtrace_atw: "=" not a function, 1 a function), or not seen yet and
# holding a "=". The cache starts with the keywords and the words of
# gwtrace-auto.sh's last two commands.
# shellcheck disable=SC2016
builtin declare -gA _gwtrace_atw
_gwtrace_atw=(['[[']='=' ['((']='=' [case]='=' [for]='=' [return]='=') \
  && _gwtrace_atop='{ case $_gwtrace_atsp-${_gwtrace_atw[${BASH_COMMAND%% *}]-${BASH_COMMAND%% *}} in -*=*) ;; *) _gwtrace_auto_top "$_";; esac;} 2>&-' \
  && _gwtrace_adbg=$_gwtrace_atop

# Past the fast path: a pending top-level function span ends; a command word
# not seen yet is looked up; a function called from the top level gets a
# span. $1 is the script's $_, given back.
_gwtrace_auto_top() {
  { _gwtrace_arc=${2-$?} _gwtrace_aps=${3-${PIPESTATUS[0]}}   # still the script's: a case leaves them alone (the accelerator hands them over)
    [[ $BASHPID == "$_gwtrace_amain" && -n $_gwtrace_atop ]] && (( ! _gwtrace_abusy )) || builtin return 0
    _gwtrace_aw=${BASH_COMMAND%% *}
    [[ -n $_gwtrace_aw ]] || builtin return 0
    if [[ -z ${_gwtrace_atw[$_gwtrace_aw]-} ]]; then
      _gwtrace_atw[$_gwtrace_aw]='='
      if [[ $_gwtrace_aw != *=* ]] && builtin declare -F -- "$_gwtrace_aw" >/dev/null; then
        case $_gwtrace_aw in
          _gwtrace_*|trace_*|gwtrace_*|trap|exit|*[$'\\\t\n\r']*) ;;
          *) _gwtrace_atw[$_gwtrace_aw]=1 ;;
        esac
      fi
    fi
    (( ${#BASH_SOURCE[@]} == 2 )) || builtin return 0
    # shellcheck disable=SC2119  # no STATUS: the one the trap saw
    [[ -z $_gwtrace_atsp ]] || _gwtrace_auto_top_end
    [[ ${_gwtrace_atw[$_gwtrace_aw]} != 1 ]] || _gwtrace_auto_top_begin "$_gwtrace_aw"
  } 2>&-
  builtin return 0
}

# The constant fields of this process's lines (its main process only).
_gwtrace_atk="$BASHPID	$_gwtrace_atr" _gwtrace_atk2="$_gwtrace_asp0	$_gwtrace_aprem	$_gwtrace_afl	${_gwtrace_ats:--}"

# _gwtrace_auto_top_begin NAME: its span, a child of the script's, and
# TRACEPARENT for the children (note 3).
_gwtrace_auto_top_begin() {
  if [[ -n $_gwtrace_apfx ]] && (( (_gwtrace_actr += 1) < 2000000 )); then
    _gwtrace_atsp=$_gwtrace_apfx${_gwtrace_actr:1}
  else
    _gwtrace_auto_top_util; _gwtrace_auto_top_uuid
    [[ -n $_gwtrace_atsp ]] || builtin return 0
  fi
  _gwtrace_at=${EPOCHREALTIME-}
  [[ -n $_gwtrace_at ]] || { _gwtrace_auto_top_util; _gwtrace_auto_now; }
  _gwtrace_atl=${BASH_LINENO[1]} _gwtrace_atn=$1 _gwtrace_atotp=${TRACEPARENT-} _gwtrace_atotpset=${TRACEPARENT+1}
  builtin printf '%s\n' "gw1	B	$_gwtrace_at	$_gwtrace_atk	$_gwtrace_atsp	$_gwtrace_atk2	$1	gwtrace.kind=function" >>"$_gwtrace_alog" || :
  [[ ${GWTRACE_AUTO_OPEN-} != "$_gwtrace_amain:"* ]] || GWTRACE_AUTO_OPEN+=,$_gwtrace_atsp
  _gwtrace_auto_top_ro || builtin export TRACEPARENT="00-$_gwtrace_atr-$_gwtrace_atsp-$_gwtrace_afl"
}

# _gwtrace_auto_top_end [STATUS]: end it (no STATUS: what the trap saw), and
# TRACEPARENT as it was before it.
# shellcheck disable=SC2120  # STATUS: from the EXIT trap (gwtrace-auto.sh) and gwtrace-auto-extra.sh
_gwtrace_auto_top_end() {
  if [[ -n ${1-} ]]; then
    _gwtrace_ast=$1
  elif (( _gwtrace_aps || _gwtrace_arc )); then
    _gwtrace_auto_top_util
    _gwtrace_auto_status "$_gwtrace_atl $_gwtrace_atn ${BASH_SOURCE[${#BASH_SOURCE[@]}-1]}"
  else
    _gwtrace_ast=0
  fi
  if [[ $_gwtrace_ast == [1-9]* && $_gwtrace_ast != *[!0-9]* ]]; then    # a failure: where (the call site)
    _gwtrace_auto_top_util
    _gwtrace_auto_where "$_gwtrace_atl $_gwtrace_atn ${BASH_SOURCE[${#BASH_SOURCE[@]}-1]}"; _gwtrace_ast+=$_gwtrace_awh
  fi
  _gwtrace_at=${EPOCHREALTIME-}
  [[ -n $_gwtrace_at ]] || { _gwtrace_auto_top_util; _gwtrace_auto_now; }
  builtin printf '%s\n' "gw1	E	$_gwtrace_at	$_gwtrace_atk	$_gwtrace_atsp	$_gwtrace_ast" >>"$_gwtrace_alog" || :
  GWTRACE_AUTO_OPEN=${GWTRACE_AUTO_OPEN%,"$_gwtrace_atsp"} _gwtrace_atsp=''
  if _gwtrace_auto_top_ro; then
    builtin return 0
  elif [[ -n $_gwtrace_atotpset ]]; then
    builtin export TRACEPARENT="$_gwtrace_atotp"
  else
    builtin unset TRACEPARENT
  fi
}

# True if the script made TRACEPARENT readonly (note 3).
_gwtrace_auto_top_ro() {
  if (( _gwtrace_a44 )) && [[ -n ${TRACEPARENT+x} ]]; then
    [[ ${TRACEPARENT@a} == *r* ]]
  else
    ! builtin unset -v TRACEPARENT
  fi
}

# The status rules and the bash 4 clock (gwtrace-auto-util.sh), when needed.
_gwtrace_auto_top_util() {
  # shellcheck source=gwtrace-auto-util.sh
  [[ -n ${_gwtrace_autil-} ]] || builtin source "$_gwtrace_adir/gwtrace-auto-util.sh"
}
builtin return 0

# --- Notes (bash does not read past the `return` above) ---------------------
# 1. The DEBUG trap runs here without functrace: never inside functions,
#    subshells or command substitutions, so a script pays for its top-level
#    commands only. A span begins before the call and ends at the next
#    top-level command (or at exit), with the status the trap sees then,
#    tested or not as at the functions level. Written for the common case,
#    which runs for each such call: ids from the process's prefix and counter
#    (gwtrace-auto.sh; no kernel read), the time from EPOCHREALTIME, one
#    append each way. gwtrace-auto-util.sh is read only for what is rare: a
#    non-zero status (was it tested?), the bash 4 clock, a counter that ran
#    out.
#
# 2. bash parses the trap's text before every command (~450 instructions a
#    character), so it is short: one key, "${_gwtrace_atsp}-${cached word}"
#    or the word itself when it is not cached, matched against -*=* (no span
#    pending, and a word known not to be a function or an assignment). A
#    `case`: it leaves $? and PIPESTATUS alone, so _gwtrace_auto_top reads
#    them itself (gwtrace-auto-fn.sh, note 2). bash shows a command's words one
#    space apart. An unseen word holding a "=" (an assignment) stays on the
#    fast path: a glidein has hundreds of distinct ones.
#
# 3. TRACEPARENT is not assigned when the script made it readonly: assigning
#    a readonly variable ends a bash script under `set -e` (`export` and
#    `|| :` too). The rule is _gwtrace_auto_top_ro (gwtrace-auto-util.sh's
#    _gwtrace_auto_tp has it too: calling that would make every process at
#    this level read that file): ${TRACEPARENT@a} when set on bash 4.4+,
#    else an `unset`, harmless on a readonly variable (and the value is
#    assigned right after otherwise; bash 4.4 dies of ${TRACEPARENT[@]@a}
#    on a readonly variable without a value).
