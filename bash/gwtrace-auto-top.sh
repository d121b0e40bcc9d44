# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh
#
# gwtrace-auto-top.sh - the scripts level's spans for the functions a script
# calls from its top level (a glidein's downloads, signature checks, its
# validation scripts under them), read by gwtrace-auto.sh the first time such
# a call is seen. The DEBUG trap runs there without functrace: never inside
# functions, subshells or command substitutions, so a script pays for its
# top-level commands only. A span begins before the call and ends at the next
# top-level command (or at exit), with the status the trap sees then, tested
# or not as at the functions level.

# shellcheck source=gwtrace-auto-util.sh
[[ -n ${_gwtrace_autil-} ]] || builtin source "$_gwtrace_adir/gwtrace-auto-util.sh"

# _gwtrace_auto_top_begin NAME: its span, a child of the script's.
_gwtrace_auto_top_begin() {
  local _gwtrace_lu='' _gwtrace_lremote=0
  IFS= builtin read -r _gwtrace_lu </proc/sys/kernel/random/uuid || _gwtrace_lu=''
  _gwtrace_lu=${_gwtrace_lu//-/}
  [[ ${#_gwtrace_lu} -eq 32 && $_gwtrace_lu != *[!0-9a-f]* ]] || return 0
  [[ $_gwtrace_asp0 == "$_gwtrace_abase" && -n $_gwtrace_asp0 ]] && _gwtrace_lremote=1
  _gwtrace_auto_now
  _gwtrace_atsp=${_gwtrace_lu:16:16} _gwtrace_atsite="${BASH_LINENO[1]} $1 ${BASH_SOURCE[2]-}"
  builtin printf '%s\n' "gw1	B	$_gwtrace_at	$BASHPID	$_gwtrace_atr	$_gwtrace_atsp	$_gwtrace_asp0	$_gwtrace_lremote	$_gwtrace_afl	${_gwtrace_ats:--}	$1	gwtrace.kind=function" >>"$_gwtrace_alog" || :
  _gwtrace_atotp=${TRACEPARENT-} _gwtrace_atotpset=${TRACEPARENT+1}
  [[ ${GWTRACE_AUTO_OPEN-} == "$BASHPID:"* ]] && GWTRACE_AUTO_OPEN+=,$_gwtrace_atsp
  _gwtrace_auto_tp "00-$_gwtrace_atr-$_gwtrace_atsp-$_gwtrace_afl" 1
}

# _gwtrace_auto_top_end [STATUS]: end it (no STATUS: what the trap saw).
_gwtrace_auto_top_end() {
  if [[ -n ${1-} ]]; then
    _gwtrace_ast=$1
  else
    _gwtrace_auto_status "$_gwtrace_atsite"
  fi
  _gwtrace_auto_now
  builtin printf '%s\n' "gw1	E	$_gwtrace_at	$BASHPID	$_gwtrace_atr	$_gwtrace_atsp	$_gwtrace_ast" >>"$_gwtrace_alog" || :
  GWTRACE_AUTO_OPEN=${GWTRACE_AUTO_OPEN%,"$_gwtrace_atsp"} _gwtrace_atsp=''
  _gwtrace_auto_tp "$_gwtrace_atotp" "$_gwtrace_atotpset"
}

# The script sets a DEBUG trap of its own: ours goes (bash has one DEBUG trap;
# the script's then behaves exactly as untraced).
_gwtrace_auto_top_off() {
  [[ -z $_gwtrace_atsp ]] || _gwtrace_auto_top_end 0
  builtin trap - DEBUG
  _gwtrace_atop=''
}
