# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh
#
# gwtrace-auto-fn.sh - function and sourced-file spans for gwtrace-auto.sh
# (GWTRACE_AUTO_LEVEL functions or commands), which sources it once it has
# opened the script span: frame 0 is that span. The commands level's own code
# is in gwtrace-auto-cmd.sh, read at that level only.
#
# A DEBUG trap with functrace (set -T) runs before every simple command, in
# functions and subshells too, and bash parses its text anew each time. Its
# fast path is one arithmetic command that keeps $? and compares
# ${#BASH_SOURCE[@]} with the depth it saw last; only when the depth changed
# (a function or sourced file was entered, or returned) does it call
# _gwtrace_auto_dbg, passing $_ as its last argument: the call gives $_ back
# to the script when it returns. Bash saves and restores $?, PIPESTATUS and
# BASH_COMMAND around traps; `((` and `[[` leave $_ alone.
#
# Under `set -x` every command of the trap would be printed, so it then runs
# with fd 2 closed (_gwtrace_adbg_fnx). Closing and restoring fd 2 costs
# three system calls on every command, so while xtrace is off the trap runs
# unguarded (_gwtrace_adbg_fn) and also calls _gwtrace_auto_dbg before any
# command that may turn xtrace on, which switches to the guarded trap before
# the command runs (_gwtrace_auto_dbgmode): every command that starts with
# se, sh, bu or co (set -x, set -o xtrace, shopt -so xtrace, builtin set,
# command set; a false alarm costs a few microseconds). A `set -x` reached
# through a variable ("$@", $cmd) is not seen: the trap's commands are then
# printed until the next function call or return.
#
# Event lines are written with literal TAB characters between the fields
# (a ${tab} expansion costs a microsecond each): keep them tabs.

# shellcheck source=gwtrace-auto-util.sh
builtin source "$_gwtrace_adir/gwtrace-auto-util.sh"   # the clock and escaping
{
  # Span ids: a random 40-bit prefix (10 hex digits) drawn per process, then a
  # counter kept in decimal digits (6 of them, valid hex): no printf, no long
  # arithmetic. A new prefix in every new process ($BASHPID) and every 999 999
  # spans; the first process's comes with its script span (gwtrace-auto.sh).
  # Frames: span id ('' = a frame only kept to track depth: ours, the library's),
  # BASH_SOURCE depth inside it, owner $BASHPID, name, parent span, TRACEPARENT
  # before it (+ whether it was set). Frame 0 is the script span.
  _gwtrace_an=1 _gwtrace_asp=("$_gwtrace_asp0") _gwtrace_adep=("$_gwtrace_abd") _gwtrace_apid=("${_gwtrace_aroot:-$_gwtrace_amain}")
  _gwtrace_aname=('') _gwtrace_apar=("$_gwtrace_abase")
  _gwtrace_aotp=("$_gwtrace_aotp0") _gwtrace_aotpset=("$_gwtrace_aotpset0")
  _gwtrace_acur=$_gwtrace_asp0             # span id of the innermost frame with a span
  _gwtrace_aown=$_gwtrace_amain            # the process whose ids, GWTRACE_AUTO_OPEN and EXIT trap are set up
  _gwtrace_aexp=${TRACEPARENT-}            # the TRACEPARENT we exported last
  _gwtrace_ad=$_gwtrace_abd                # BASH_SOURCE depth at the last slow path
  _gwtrace_arc=0 _gwtrace_asub=''          # $? before the command; a subshell with our EXIT trap
  _gwtrace_asl=$BASH_SUBSHELL              # the subshell level the DEBUG trap saw last
  declare -gA _gwtrace_afn=()              # the functions entered so far: name -> 1
  _gwtrace_aps=0 _gwtrace_acs='' _gwtrace_ast=0  # PIPESTATUS[0] (a returned function's own status), call site, status field
  _gwtrace_asite=('') _gwtrace_accs=''     # call site per frame, of the pending command
  _gwtrace_aspend=''                       # a `source` just ran: "depth _gwtrace_ad time"
  _gwtrace_actxt='' _gwtrace_abang='' _gwtrace_abgpid=() _gwtrace_abgsp=()  # commands: text, $! at begin; background jobs
  _gwtrace_acsp='' _gwtrace_acts='' _gwtrace_acotp='' _gwtrace_acotpset='' _gwtrace_acpid=''
  # The DEBUG trap's texts: bash parses the text before every command (~500
  # instructions a character), so the one that runs most is short, and keeps
  # $? and PIPESTATUS only when it goes the slow way (an arithmetic expansion
  # inside the [[ ]]: $? is still the script's while [[ ]] evaluates, and the
  # right side of || is not expanded when the left holds). _gwtrace_ak is
  # "depth.subshell" as the trap sees them at the last slow path. With the
  # script's own DEBUG trap chained after ours (it needs $? every time) the
  # capturing text; with xtrace on, that one in a group with fd 2 closed.
  _gwtrace_ak=$_gwtrace_ad.$_gwtrace_asl
  # shellcheck disable=SC2016
  _gwtrace_adbg_fn='[[ ${#BASH_SOURCE[@]}.$BASH_SUBSHELL == $_gwtrace_ak && $BASH_COMMAND != [sbc.][ehuo\ ]* || $((_gwtrace_arc=$?,_gwtrace_aps=PIPESTATUS[0])) == - ]]||_gwtrace_auto_dbg "$_"'
  # shellcheck disable=SC2016
  _gwtrace_adbg_fnc='((_gwtrace_arc=$?,${#BASH_SOURCE[@]}==_gwtrace_ad&&BASH_SUBSHELL==_gwtrace_asl||(_gwtrace_aps=PIPESTATUS[0],0)))&&[[ $BASH_COMMAND != [sbc.][ehuo\ ]* ]]||_gwtrace_auto_dbg "$_"'
  # shellcheck disable=SC2016
  _gwtrace_adbg_fnx='{ ((_gwtrace_arc=$?,${#BASH_SOURCE[@]}==_gwtrace_ad&&BASH_SUBSHELL==_gwtrace_asl||(_gwtrace_aps=PIPESTATUS[0],0)))||_gwtrace_auto_dbg "$_";} 2>&-'
}

# _gwtrace_auto_id: a span id (16 hex digits, never all zero) into _gwtrace_ar.
_gwtrace_auto_id() {
  if [[ $_gwtrace_arngpid != "$BASHPID" ]] || (( (_gwtrace_actr += 1) >= 2000000 )); then
    _gwtrace_auto_seed
  fi
  _gwtrace_ar=$_gwtrace_apfx${_gwtrace_actr:1}
}

# _gwtrace_auto_seed: a new prefix, counter back to 0. In a new process the
# random digits of a kernel uuid (as gwtrace-auto.sh takes the first
# process's); else splitmix64 over a state seeded from the kernel, mixed with
# $BASHPID (a counter that ran out, or no uuid).
_gwtrace_auto_seed() {
  local _gwtrace_lu='' _gwtrace_lz
  if [[ $_gwtrace_arngpid != "$BASHPID" ]]; then
    IFS= builtin read -r _gwtrace_lu </proc/sys/kernel/random/uuid || _gwtrace_lu=''
    _gwtrace_lu=${_gwtrace_lu//-/}
    if [[ ${#_gwtrace_lu} -eq 32 && $_gwtrace_lu != *[!0-9a-f]* ]]; then
      _gwtrace_apfx=${_gwtrace_lu:17:10} _gwtrace_actr=1000000 _gwtrace_arngpid=$BASHPID _gwtrace_arng=$(( 16#${_gwtrace_lu:17:15} ^ (BASHPID << 40) ))
      return 0
    elif [[ ${#_gwtrace_lu} -ge 30 && $_gwtrace_lu != *[!0-9a-f]* ]]; then
      _gwtrace_arng=$(( (16#${_gwtrace_lu:0:15} << 4) ^ 16#${_gwtrace_lu:15:15} ))
    else
      _gwtrace_auto_now
      _gwtrace_arng=$(( ${_gwtrace_at//[!0-9]/} * 2654435761 ^ ${SRANDOM:-0} ))
    fi
    _gwtrace_arng=$(( _gwtrace_arng ^ (BASHPID << 40) ))
    _gwtrace_arngpid=$BASHPID
  fi
  builtin printf -v _gwtrace_apfx '%010x' $(( _gwtrace_lz = (_gwtrace_arng += -7046029254386353131),
      _gwtrace_lz = (_gwtrace_lz ^ ((_gwtrace_lz >> 30) & 0x3FFFFFFFF)) * -4658895280553007687,
      _gwtrace_lz = (_gwtrace_lz ^ ((_gwtrace_lz >> 27) & 0x1FFFFFFFFF)) * -7723592293110705685,
      _gwtrace_lz = (_gwtrace_lz ^ ((_gwtrace_lz >> 31) & 0x1FFFFFFFF)) & 0xFFFFFFFFFF, _gwtrace_lz ? _gwtrace_lz : 1 ))
  _gwtrace_actr=1000000
}

# _gwtrace_auto_emit LINE: one append, one write(2) (lines stay below 4096 bytes).
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
  local _gwtrace_lname=$1 _gwtrace_ldep=$2 _gwtrace_li=$_gwtrace_an _gwtrace_lparent _gwtrace_lremote=0 _gwtrace_lspan='' _gwtrace_la _gwtrace_lline _gwtrace_lt=$'\t'
  shift 2
  if [[ -n $_gwtrace_lname && ${TRACEPARENT-} != "$_gwtrace_aexp" ]] && _gwtrace_auto_adoptparent; then
    _gwtrace_acur=$_gwtrace_ar _gwtrace_aexp=$TRACEPARENT
  fi
  _gwtrace_lparent=$_gwtrace_acur
  _gwtrace_apid[_gwtrace_li]=$BASHPID _gwtrace_adep[_gwtrace_li]=$_gwtrace_ldep _gwtrace_aname[_gwtrace_li]=$_gwtrace_lname _gwtrace_apar[_gwtrace_li]=$_gwtrace_acur _gwtrace_asite[_gwtrace_li]=$_gwtrace_acs \
    _gwtrace_aotp[_gwtrace_li]=${TRACEPARENT-} _gwtrace_aotpset[_gwtrace_li]=${TRACEPARENT+1}
  if [[ -n $_gwtrace_lname ]]; then
    [[ $_gwtrace_lparent == "$_gwtrace_abase" && -n $_gwtrace_lparent ]] && _gwtrace_lremote=1
    _gwtrace_auto_id; _gwtrace_lspan=$_gwtrace_ar
    _gwtrace_auto_now
    [[ $_gwtrace_lname == *[$'\\\t\n\r']* ]] && { _gwtrace_auto_esc "$_gwtrace_lname"; _gwtrace_lname=$_gwtrace_ar; }
    _gwtrace_lline="gw1${_gwtrace_lt}B${_gwtrace_lt}${_gwtrace_at}${_gwtrace_lt}${BASHPID}${_gwtrace_lt}${_gwtrace_atr}${_gwtrace_lt}${_gwtrace_lspan}${_gwtrace_lt}${_gwtrace_lparent:--}${_gwtrace_lt}${_gwtrace_lremote}${_gwtrace_lt}${_gwtrace_afl}${_gwtrace_lt}${_gwtrace_ats:--}${_gwtrace_lt}${_gwtrace_lname}"
    for _gwtrace_la in "$@"; do
      [[ $_gwtrace_la == *[$'\\\t\n\r']* ]] && { _gwtrace_auto_esc "$_gwtrace_la"; _gwtrace_la=$_gwtrace_ar; }
      _gwtrace_lline+=$_gwtrace_lt${_gwtrace_la:0:1000}
    done
    builtin printf '%s\n' "$_gwtrace_lline" >>"$_gwtrace_alog" || :
    _gwtrace_aexp="00-$_gwtrace_atr-$_gwtrace_lspan-$_gwtrace_afl" _gwtrace_acur=$_gwtrace_lspan
    _gwtrace_auto_tp "$_gwtrace_aexp" 1
    [[ ${GWTRACE_AUTO_OPEN-} == "$BASHPID:"* ]] || _gwtrace_auto_own
    GWTRACE_AUTO_OPEN+=,$_gwtrace_lspan
  fi
  _gwtrace_asp[_gwtrace_li]=$_gwtrace_lspan _gwtrace_an=$((_gwtrace_li + 1))
}

# _gwtrace_auto_pop STATUS [KEY=VALUE...]: end the innermost frame. A frame
# that another process opened (we are a subshell of it) is dropped silently:
# its owner ends it.
_gwtrace_auto_pop() {
  local _gwtrace_li=$((_gwtrace_an - 1)) _gwtrace_lt=$'\t' _gwtrace_lline _gwtrace_la
  (( _gwtrace_li >= 0 )) || return 0
  if [[ -n ${_gwtrace_asp[_gwtrace_li]} ]]; then
    if [[ ${_gwtrace_apid[_gwtrace_li]} == "$BASHPID" ]]; then
      _gwtrace_auto_now
      _gwtrace_lline="gw1${_gwtrace_lt}E${_gwtrace_lt}${_gwtrace_at}${_gwtrace_lt}${BASHPID}${_gwtrace_lt}${_gwtrace_atr}${_gwtrace_lt}${_gwtrace_asp[_gwtrace_li]}${_gwtrace_lt}${1:-0}"
      shift
      for _gwtrace_la in "$@"; do _gwtrace_lline+=$_gwtrace_lt$_gwtrace_la; done
      builtin printf '%s\n' "$_gwtrace_lline" >>"$_gwtrace_alog" || :
      GWTRACE_AUTO_OPEN=${GWTRACE_AUTO_OPEN%,"${_gwtrace_asp[_gwtrace_li]}"}
    fi
    _gwtrace_auto_tp "${_gwtrace_aotp[_gwtrace_li]}" "${_gwtrace_aotpset[_gwtrace_li]}"
    _gwtrace_acur=${_gwtrace_apar[_gwtrace_li]}
  fi
  _gwtrace_an=$_gwtrace_li
}

# _gwtrace_auto_tp (TRACEPARENT for the children) is in gwtrace-auto-util.sh.

# GWTRACE_AUTO_OPEN ("pid:trace,span,span...") names this process and the
# spans it has open, so that a bash started by `exec` (same pid) can end them:
# nothing of ours runs after an exec. A subshell starts its own list.
_gwtrace_auto_own() {
  builtin export GWTRACE_AUTO_OPEN="$BASHPID:$_gwtrace_atr"
}

# The script opened a span of its own with the library (TRACEPARENT is not
# what we exported): make it the parent, into _gwtrace_ar.
_gwtrace_auto_adoptparent() {
  local _gwtrace_ltp=${TRACEPARENT-}
  [[ ${#_gwtrace_ltp} -eq 55 && $_gwtrace_ltp == 00-"$_gwtrace_atr"-* ]] || return 1
  _gwtrace_ar=${_gwtrace_ltp:36:16}
  [[ $_gwtrace_ar != *[!0-9a-f]* ]]
}

# At exit: the pending command, every frame, and no more DEBUG trap. The
# frames this process opened end in one append, innermost first (nothing runs
# after this: no TRACEPARENT to give back); the others are their owners'. A
# process's own frames are the top of the stack (a subshell pushes its frames
# above the ones it inherited), so the walk stops at the first that is not.
_gwtrace_auto_exit_frames() {
  [[ -z $_gwtrace_acmd ]] || _gwtrace_auto_cmd_end "$1"
  (( ${#_gwtrace_abgpid[@]} == 0 )) || _gwtrace_auto_bg_reap process.still_running=true
  _gwtrace_at=${EPOCHREALTIME-}
  [[ -n $_gwtrace_at ]] || _gwtrace_auto_now
  _gwtrace_dn=$_gwtrace_an _gwtrace_dw=''
  while (( _gwtrace_dn > 0 )) && [[ ${_gwtrace_apid[_gwtrace_dn-1]} == "$BASHPID" ]]; do
    _gwtrace_dn=$((_gwtrace_dn - 1))
    [[ -z ${_gwtrace_asp[_gwtrace_dn]} ]] || _gwtrace_dw+="gw1	E	$_gwtrace_at	$BASHPID	$_gwtrace_atr	${_gwtrace_asp[_gwtrace_dn]}	${1:-0}"$'\n'
  done
  _gwtrace_an=0
  [[ -z $_gwtrace_dw ]] || builtin printf '%s' "$_gwtrace_dw" >>"$_gwtrace_alog" || :
  [[ -z $_gwtrace_audbg ]] || builtin trap - DEBUG
}

# --- status: _gwtrace_auto_status and _gwtrace_auto_site are in gwtrace-auto-util.sh
# (the scripts level's top-level function spans use them too).

# --- functions and commands (DEBUG trap) ------------------------------------

# _gwtrace_auto_sync DEPTH [OFFSET]: make the frames match the shell's call
# stack (BASH_SOURCE/FUNCNAME, DEPTH frames deep; OFFSET: the stack index of
# the script's innermost frame here, 2 when our caller is the trap's): frames
# below it have returned (status: the $? the DEBUG trap saw), new ones are entered.
_gwtrace_auto_sync() {
  local _gwtrace_ln=$1 _gwtrace_lo=${2:-2} _gwtrace_lk _gwtrace_li _gwtrace_lname _gwtrace_ltop
  if (( _gwtrace_an > 1 && _gwtrace_adep[_gwtrace_an-1] > _gwtrace_ln )); then
    for (( _gwtrace_li = _gwtrace_an - 1; _gwtrace_li > 1 && _gwtrace_adep[_gwtrace_li-1] > _gwtrace_ln; _gwtrace_li-- )); do :; done
    _gwtrace_auto_status "${_gwtrace_asite[_gwtrace_li]-}"    # the outermost that returns now
  else
    _gwtrace_ast=$_gwtrace_arc
  fi
  while (( _gwtrace_an > 1 )); do
    _gwtrace_ltop=${_gwtrace_adep[_gwtrace_an-1]}
    (( _gwtrace_ltop > _gwtrace_ln )) || [[ ${_gwtrace_aname[_gwtrace_an-1]} != "${FUNCNAME[_gwtrace_ln-_gwtrace_ltop+_gwtrace_lo]-}" ]] || break
    _gwtrace_auto_pop "$_gwtrace_ast"
  done
  _gwtrace_ltop=${_gwtrace_adep[_gwtrace_an-1]:-$_gwtrace_abd}
  for (( _gwtrace_lk = _gwtrace_ltop + 1; _gwtrace_lk <= _gwtrace_ln; _gwtrace_lk++ )); do
    _gwtrace_li=$(( _gwtrace_ln - _gwtrace_lk + _gwtrace_lo ))   # FUNCNAME/BASH_SOURCE index of depth _gwtrace_lk
    _gwtrace_lname=${FUNCNAME[_gwtrace_li]-} _gwtrace_acs="${BASH_LINENO[_gwtrace_li]-} ${FUNCNAME[_gwtrace_li]-} ${BASH_SOURCE[_gwtrace_li+1]-}"
    case $_gwtrace_lname in
      source)
        if [[ ${BASH_SOURCE[_gwtrace_li]##*/} == gwtrace-auto*.sh || ${BASH_SOURCE[_gwtrace_li]##*/} == gwtrace.sh ]]; then
          _gwtrace_auto_push '' "$_gwtrace_lk"            # ours (BASH_ENV), or the library: it
                                                # reads TRACEPARENT while it is sourced
        else
          _gwtrace_auto_push "source ${BASH_SOURCE[_gwtrace_li]##*/}" "$_gwtrace_lk" gwtrace.kind=source "code.file.path=${BASH_SOURCE[_gwtrace_li]}"
        fi ;;
      _gwtrace_*|trace_*|trap|exit|'')
        _gwtrace_auto_push '' "$_gwtrace_lk" ;;
      *)
        _gwtrace_afn[$_gwtrace_lname]=1
        _gwtrace_auto_push "$_gwtrace_lname" "$_gwtrace_lk" ;;
    esac
    _gwtrace_aname[_gwtrace_an-1]=$_gwtrace_lname
  done
  _gwtrace_ad=$_gwtrace_ln
  # A subshell that opened spans ends them on its own EXIT.
  if [[ $BASHPID != "$_gwtrace_amain" && $_gwtrace_asub != "$BASHPID" ]] && (( _gwtrace_an > 0 )) \
     && [[ ${_gwtrace_apid[_gwtrace_an-1]} == "$BASHPID" ]]; then
    _gwtrace_asub=$BASHPID
    if [[ -n $_gwtrace_auxset && $_gwtrace_auxpid == "$BASHPID" ]]; then
      _gwtrace_auto_exit_install             # the subshell set an EXIT handler of its own
    else
      builtin trap -- "$_gwtrace_aexit0" EXIT  # no need to read gwtrace-auto-extra.sh
    fi
  fi
  [[ $_gwtrace_asub != "$BASHPID" || $_gwtrace_arngpid != "$BASHPID" || ${GWTRACE_AUTO_OPEN-} != "$BASHPID:"* ]] \
    || _gwtrace_aown=$BASHPID
}

# _gwtrace_auto_subenter: the first command of a new subshell (BASH_SUBSHELL
# changed: a new process; the commands of a pipeline are not: bash runs the
# DEBUG trap for them in the parent). When it calls a function ($(f), `f`),
# our EXIT trap goes in before bash runs the function: a command
# substitution execs the function's last command without a fork when no
# EXIT trap is set as the function is entered, and the spans the subshell
# opened were then never ended. A subshell that runs a program is left alone
# (its exec saves a fork, untraced too). A word that names a function
# entered so far (_gwtrace_afn, inherited) is one; a program bash has hashed
# (BASH_CMDS), a builtin or keyword (the case below) or a path is not;
# anything else is looked up with `declare -F`. (Written out in the DEBUG
# trap's text this would save the call, but bash parses the whole text
# before every command, ~500 instructions a character.)
_gwtrace_auto_subenter() {
  _gwtrace_asl=$BASH_SUBSHELL _gwtrace_dw=${BASH_COMMAND%% *}
  [[ -n $_gwtrace_dw ]] || return 0
  if [[ -z ${_gwtrace_afn[$_gwtrace_dw]-} ]]; then
    [[ -z ${BASH_CMDS[$_gwtrace_dw]-} ]] || return 0
    case $_gwtrace_dw in      # a builtin, keyword or path: no function
      */*|'['|'[['|'(('|.|:|alias|bg|bind|break|builtin|caller|cd|command|compgen|complete|compopt|continue|\
      declare|dirs|disown|echo|enable|eval|exec|export|false|fc|fg|getopts|hash|help|history|jobs|kill|let|local|\
      logout|mapfile|popd|printf|pushd|pwd|read|readarray|readonly|return|set|shift|shopt|source|suspend|test|times|\
      true|type|typeset|ulimit|umask|unalias|unset|wait|for|case|select|if|while|until|'{'|'!'|*=*) return 0 ;;
    esac
    builtin declare -F -- "$_gwtrace_dw" >/dev/null || return 0
  fi
  _gwtrace_asub=$BASHPID
  builtin trap -- "$_gwtrace_aexit0" EXIT
  _gwtrace_auto_seed                           # ready for _gwtrace_auto_enter's written-out entry
  _gwtrace_auto_own
  _gwtrace_aown=$BASHPID
}

# A sourced file that runs no command (it only defines functions) gives the
# DEBUG trap nothing to see inside it: before `source`/`.` the depth and time
# are kept and the next command takes the slow path (_gwtrace_ad = -1); if
# the depth is then the same, the file ran nothing: its span is written there,
# named after $_ (the file, as expanded, the last argument of `source`).
_gwtrace_auto_src_begin() {
  local _gwtrace_la=${BASH_COMMAND#* }
  _gwtrace_auto_now
  [[ $_gwtrace_la == *[[:space:]]* ]] || _gwtrace_la=''      # one argument: $_ will be the file
  _gwtrace_aspend="$(( ${#BASH_SOURCE[@]} - 3 )) $_gwtrace_ad $BASHPID $_gwtrace_at ${_gwtrace_la%%[[:space:]]*}"
  _gwtrace_ad=-1
}

# _gwtrace_auto_src_done FILE: after the command that followed a `source`.
_gwtrace_auto_src_done() {
  local _gwtrace_lt=$'\t' _gwtrace_lp=$_gwtrace_aspend _gwtrace_lf=$1 _gwtrace_ldep _gwtrace_lpid _gwtrace_lts
  _gwtrace_ldep=${_gwtrace_lp%% *} _gwtrace_lp=${_gwtrace_lp#* } _gwtrace_ad=${_gwtrace_lp%% *} _gwtrace_lp=${_gwtrace_lp#* }
  _gwtrace_lpid=${_gwtrace_lp%% *} _gwtrace_lp=${_gwtrace_lp#* } _gwtrace_lts=${_gwtrace_lp%% *} _gwtrace_lp=${_gwtrace_lp#* }
  _gwtrace_aspend=''
  [[ -z $_gwtrace_lp ]] || { _gwtrace_lf=${_gwtrace_lp//[\"\']/}; [[ $_gwtrace_lf != *[\$\`]* ]] || _gwtrace_lf=${_gwtrace_lf##*/}; }
  (( ${#BASH_SOURCE[@]} - 3 == _gwtrace_ldep )) && [[ -n $_gwtrace_lf && $_gwtrace_lpid == "$BASHPID" ]] || return 0
  _gwtrace_auto_id
  _gwtrace_auto_now
  [[ $_gwtrace_lf == *[$'\\\t\n\r']* ]] && { _gwtrace_auto_esc "$_gwtrace_lf"; _gwtrace_lf=$_gwtrace_ar; _gwtrace_auto_id; }
  _gwtrace_auto_emit "gw1${_gwtrace_lt}B${_gwtrace_lt}${_gwtrace_lts}${_gwtrace_lt}${BASHPID}${_gwtrace_lt}${_gwtrace_atr}${_gwtrace_lt}${_gwtrace_ar}${_gwtrace_lt}${_gwtrace_acur:--}${_gwtrace_lt}0${_gwtrace_lt}${_gwtrace_afl}${_gwtrace_lt}${_gwtrace_ats:--}${_gwtrace_lt}source ${_gwtrace_lf##*/}${_gwtrace_lt}gwtrace.kind=source${_gwtrace_lt}code.file.path=${_gwtrace_lf:0:1000}"
  _gwtrace_auto_emit "gw1${_gwtrace_lt}E${_gwtrace_lt}${_gwtrace_at}${_gwtrace_lt}${BASHPID}${_gwtrace_lt}${_gwtrace_atr}${_gwtrace_lt}${_gwtrace_ar}${_gwtrace_lt}${_gwtrace_arc}"
}

# The DEBUG trap (functions level). Past the fast path: the depth changed,
# a new subshell, or the command may turn xtrace on, source a file or `set`
# options. $1 is the script's $_, given back when this call returns.
# Functions are kept small and each does one case: bash copies a function's
# body at every call (~20 instructions a byte), and in a new subshell every
# page that copy touches is a page fault. The common cases, one function
# entered (_gwtrace_auto_enter) and functions returned (_gwtrace_auto_leave)
# in a process whose ids, GWTRACE_AUTO_OPEN and EXIT trap are set up
# (_gwtrace_aown: the main process, a subshell once it opened a frame or
# began with a function call), are written out with as few commands as
# possible, scratch state global (_gwtrace_d*: this never runs twice at
# once); anything else goes through _gwtrace_auto_sync.
_gwtrace_auto_dbg() {
  {                                            # nothing of ours reaches stderr
    (( _gwtrace_abusy )) && return 0           # our own `trap` and EXIT handlers
    (( BASH_SUBSHELL == _gwtrace_asl )) || _gwtrace_auto_subenter
    if [[ -n $_gwtrace_asetpend$_gwtrace_aspend || $- == *x* || $_gwtrace_axg == 1 ]] \
       || { [[ $BASH_COMMAND == [sbc][ehuo]* ]] && _gwtrace_auto_xrisk; }; then
      _gwtrace_auto_dbg_pre "$1"
    fi
    if (( ${#BASH_SOURCE[@]} - 1 > _gwtrace_ad )); then
      _gwtrace_auto_enter
    elif (( ${#BASH_SOURCE[@]} - 1 < _gwtrace_ad )); then
      _gwtrace_auto_leave
    fi
    [[ $BASH_COMMAND != [sbc.]* ]] || _gwtrace_auto_dbg_post
    _gwtrace_ak=$_gwtrace_ad.$_gwtrace_asl
  } 2>&-
  return 0
}

# Whether the command may turn xtrace on: `set`, `shopt` (-o xtrace),
# `builtin`/`command` in front of them (the fast path's test is only the
# first two characters: `cut`, `chmod`, `sed`, `set_var` come here too).
_gwtrace_auto_xrisk() {
  [[ " set shopt builtin command " == *" ${BASH_COMMAND%% *} "* ]]
}

# _gwtrace_auto_dbg_pre LASTARG: after a `set` or a `source`; xtrace on, or
# maybe about to be (the trap with fd 2 closed), or off again.
_gwtrace_auto_dbg_pre() {
  [[ -z $_gwtrace_asetpend ]] || _gwtrace_auto_functrace_done "$1"
  if [[ $- == *x* ]] || { [[ $BASH_COMMAND == [sbc][ehuo]* ]] && _gwtrace_auto_xrisk; }; then
    (( _gwtrace_axg )) || _gwtrace_auto_dbgmode 1
  elif (( _gwtrace_axg )); then
    _gwtrace_auto_dbgmode 0
  fi
  [[ -z $_gwtrace_aspend ]] || _gwtrace_auto_src_done "$1"
  return 0
}

# Before a `source` or a `set`.
_gwtrace_auto_dbg_post() {
  [[ $BASH_COMMAND != source\ * && $BASH_COMMAND != .\ * ]] || _gwtrace_auto_src_begin
  [[ $BASH_COMMAND != *set\ [-+\"]* ]] || _gwtrace_auto_functrace
  return 0
}

# One level deeper (called by _gwtrace_auto_dbg: the stack indices count
# both): a function entered. Written out when it is the common case: exactly
# one level, a name of the script's, this process's ids set up and
# TRACEPARENT still ours; its span is a child of the innermost one.
_gwtrace_auto_enter() {
  _gwtrace_dn=$(( ${#BASH_SOURCE[@]} - 2 )) _gwtrace_dw=${FUNCNAME[2]-}
  case $_gwtrace_dw in
    source|trap|exit|_gwtrace_*|trace_*|*[$'\\\t\n\r']*) _gwtrace_auto_sync "$_gwtrace_dn" 3; return 0 ;;   # the general path knows these
  esac
  if (( _gwtrace_dn == _gwtrace_ad + 1 && _gwtrace_adep[_gwtrace_an-1] < _gwtrace_dn && (_gwtrace_actr += 1) < 2000000 )) \
      && [[ $BASHPID == "$_gwtrace_aown" && ${TRACEPARENT-} == "$_gwtrace_aexp" && -n ${EPOCHREALTIME-} ]]; then
    _gwtrace_dz=$_gwtrace_apfx${_gwtrace_actr:1}
    builtin printf '%s\n' "gw1	B	$EPOCHREALTIME	$BASHPID	$_gwtrace_atr	$_gwtrace_dz	${_gwtrace_acur:--}	0	$_gwtrace_afl	${_gwtrace_ats:--}	$_gwtrace_dw" >>"$_gwtrace_alog" || :
    _gwtrace_apar[_gwtrace_an]=$_gwtrace_acur _gwtrace_asp[_gwtrace_an]=$_gwtrace_dz _gwtrace_adep[_gwtrace_an]=$_gwtrace_dn \
      _gwtrace_apid[_gwtrace_an]=$BASHPID _gwtrace_aname[_gwtrace_an]=$_gwtrace_dw _gwtrace_afn[$_gwtrace_dw]=1 \
      _gwtrace_asite[_gwtrace_an]="${BASH_LINENO[2]} $_gwtrace_dw ${BASH_SOURCE[3]-}" _gwtrace_aotp[_gwtrace_an]=$_gwtrace_aexp \
      _gwtrace_aotpset[_gwtrace_an]=${TRACEPARENT+1} _gwtrace_an=$((_gwtrace_an + 1)) _gwtrace_ad=$_gwtrace_dn _gwtrace_acur=$_gwtrace_dz \
      _gwtrace_aexp=00-$_gwtrace_atr-$_gwtrace_dz-$_gwtrace_afl GWTRACE_AUTO_OPEN+=,$_gwtrace_dz \
      TRACEPARENT=00-$_gwtrace_atr-$_gwtrace_dz-$_gwtrace_afl || :      # last: the script may have made it readonly
  else
    _gwtrace_auto_sync "$_gwtrace_dn" 3
  fi
}

# Shallower: functions returned. Their spans end with the status the trap
# saw (a function whose last command was a call returns that call's status:
# tested or not as the outermost one that returns now). Written out for this
# process's own frames while TRACEPARENT is still ours.
_gwtrace_auto_leave() {
  _gwtrace_dn=$(( ${#BASH_SOURCE[@]} - 2 )) _gwtrace_di=$((_gwtrace_an - 1))
  if [[ $BASHPID != "$_gwtrace_aown" || ${TRACEPARENT-} != "$_gwtrace_aexp" || -z ${EPOCHREALTIME-} ]]; then
    _gwtrace_auto_sync "$_gwtrace_dn" 3
    return 0
  fi
  if (( _gwtrace_aps || _gwtrace_arc )); then
    _gwtrace_dz=$_gwtrace_di
    while (( _gwtrace_dz > 1 && _gwtrace_adep[_gwtrace_dz-1] > _gwtrace_dn )); do _gwtrace_dz=$((_gwtrace_dz - 1)); done
    _gwtrace_auto_status "${_gwtrace_asite[_gwtrace_dz]}"
  else
    _gwtrace_ast=0
  fi
  while (( _gwtrace_di > 0 && _gwtrace_adep[_gwtrace_di] > _gwtrace_dn )); do
    _gwtrace_dz=${_gwtrace_asp[_gwtrace_di]}
    if [[ -n $_gwtrace_dz && -n ${_gwtrace_aotpset[_gwtrace_di]} && ${_gwtrace_apid[_gwtrace_di]} == "$BASHPID" ]]; then
      builtin printf '%s\n' "gw1	E	$EPOCHREALTIME	$BASHPID	$_gwtrace_atr	$_gwtrace_dz	$_gwtrace_ast" >>"$_gwtrace_alog" || :
      GWTRACE_AUTO_OPEN=${GWTRACE_AUTO_OPEN%,"$_gwtrace_dz"} _gwtrace_aexp=${_gwtrace_aotp[_gwtrace_di]} \
        _gwtrace_acur=${_gwtrace_apar[_gwtrace_di]} _gwtrace_an=$_gwtrace_di _gwtrace_di=$((_gwtrace_di - 1)) TRACEPARENT=$_gwtrace_aexp || :
    elif [[ -n $_gwtrace_dz ]]; then
      _gwtrace_auto_pop "$_gwtrace_ast"; _gwtrace_di=$((_gwtrace_di - 1))
    else
      _gwtrace_an=$_gwtrace_di _gwtrace_di=$((_gwtrace_di - 1))
    fi
  done
  _gwtrace_ad=$_gwtrace_dn
  (( _gwtrace_adep[_gwtrace_di] >= _gwtrace_dn )) || _gwtrace_auto_sync "$_gwtrace_dn" 3
}

# Whether the script itself wants functrace (_gwtrace_auT): a DEBUG or RETURN
# trap of the script's runs in every function only then. A `set` may change
# it (`set +eET`, `set "-$flags"`): at the next command (it takes the slow
# path) $_ is the set's last argument, expanded, and $- shows a T turned off;
# functrace is then turned back on for our trap (the script's traps stay
# gated as bash would gate them).
_gwtrace_auto_functrace() {
  [[ -z $_gwtrace_asetpend ]] || return 0
  _gwtrace_asetpend="$_gwtrace_ad" _gwtrace_ad=-1 _gwtrace_asetcmd=$BASH_COMMAND
}

# _gwtrace_auto_functrace_done LASTARG: after the `set`.
_gwtrace_auto_functrace_done() {
  local _gwtrace_lon=$_gwtrace_auT
  _gwtrace_ad=$_gwtrace_asetpend _gwtrace_asetpend=''
  if [[ $- != *T* || ( $1 == +[!+]* && $1 == *T* ) || ( $1 == functrace && $_gwtrace_asetcmd == *+o* ) ]]; then
    _gwtrace_auT=''
    [[ $- == *T* ]] || set -T
  elif [[ ( $1 == -[!-]* && $1 == *T* ) || $1 == functrace ]]; then
    _gwtrace_auT=1
  fi
  [[ $_gwtrace_lon != "$_gwtrace_auT" && -n ${_gwtrace_aurset-} ]] || return 0
  _gwtrace_auto_rettext
  builtin trap -- "$_gwtrace_aurx" RETURN
}

# _gwtrace_auto_dbgmode 1|0: the DEBUG trap with fd 2 closed (xtrace is or
# may soon be on), or without (the capturing text while the script's own
# DEBUG trap is chained after ours: _gwtrace_audx). Not once the script's
# own DEBUG trap has taken over (_gwtrace_audbg is then something else).
_gwtrace_auto_dbgmode() {
  [[ $_gwtrace_audbg == "$_gwtrace_adbg_fn" || $_gwtrace_audbg == "$_gwtrace_adbg_fnc" || $_gwtrace_audbg == "$_gwtrace_adbg_fnx" ]] || return 0
  _gwtrace_axg=$1
  _gwtrace_auto_ourtext
  builtin trap -- "$_gwtrace_audbg${_gwtrace_audx-}" DEBUG
}

# _gwtrace_auto_ourtext: our DEBUG trap's text for the functions level now,
# into _gwtrace_audbg (see the texts above).
_gwtrace_auto_ourtext() {
  if (( _gwtrace_axg )); then
    _gwtrace_audbg=$_gwtrace_adbg_fnx
  elif [[ -n ${_gwtrace_audx-} ]]; then
    _gwtrace_audbg=$_gwtrace_adbg_fnc
  else
    _gwtrace_audbg=$_gwtrace_adbg_fn
  fi
}

# Arm the DEBUG trap: functrace makes functions and subshells inherit it.
if (( _gwtrace_alevel == 3 )); then
  # shellcheck source=gwtrace-auto-cmd.sh
  builtin source "$_gwtrace_adir/gwtrace-auto-cmd.sh"
  _gwtrace_audbg=$_gwtrace_adbg_cmd
else
  _gwtrace_audbg=$_gwtrace_adbg_fn _gwtrace_axg=0
  [[ $- != *x* ]] || _gwtrace_audbg=$_gwtrace_adbg_fnx _gwtrace_axg=1
fi
_gwtrace_dn=0 _gwtrace_di=0 _gwtrace_dz=0 _gwtrace_dw='' _gwtrace_auT='' _gwtrace_asetpend='' _gwtrace_asetcmd=''
[[ $- != *T* ]] || _gwtrace_auT=1
[[ $_gwtrace_arngpid == "$BASHPID" ]] || _gwtrace_auto_seed
set -T
builtin trap -- "$_gwtrace_audbg" DEBUG
