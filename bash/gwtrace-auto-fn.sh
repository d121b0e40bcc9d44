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
  # A subshell's EXIT trap: its functions have mostly returned by then (the
  # DEBUG trap runs before the handler's first command and ends them), so the
  # rest is skipped unless a frame of its own is still open or a command
  # pending (commands level).
  # shellcheck disable=SC2016
  _gwtrace_aexit1='{ (( _gwtrace_aexit = $?, ++_gwtrace_abusy )); builtin trap - DEBUG RETURN; [[ ${_gwtrace_apid[_gwtrace_an>0?_gwtrace_an-1:0]} != "$BASHPID" && -z $_gwtrace_acmd${_gwtrace_abgpid-} ]] || _gwtrace_auto_exit_post; } 2>&-'
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
    builtin read -r _gwtrace_lu </proc/sys/kernel/random/uuid || _gwtrace_lu=''
    _gwtrace_lz=${_gwtrace_lu:24:12}                 # the uuid's last group: 48 random bits
    if [[ ${#_gwtrace_lz} -eq 12 && $_gwtrace_lz != *[!0-9a-f]* ]]; then
      _gwtrace_apfx=${_gwtrace_lz:0:10} _gwtrace_actr=1000000 _gwtrace_arngpid=$BASHPID _gwtrace_arng=$(( 16#$_gwtrace_lz ^ (BASHPID << 48) ))
      return 0
    fi
    _gwtrace_lu=${_gwtrace_lu//-/}
    if [[ ${#_gwtrace_lu} -ge 30 && $_gwtrace_lu != *[!0-9a-f]* ]]; then
      _gwtrace_arng=$(( (16#${_gwtrace_lu:0:15} << 4) ^ 16#${_gwtrace_lu:15:15} ))
    else
      _gwtrace_auto_cold; _gwtrace_auto_now
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

# The rarer half (gwtrace-auto-frames.sh, and gwtrace-auto-util.sh with it),
# read the first time this process needs it (a subshell that reads it keeps
# it to itself: what is read before a fork is the children's too).
_gwtrace_auto_cold() {
  # shellcheck source=gwtrace-auto-frames.sh
  [[ -n ${_gwtrace_aframes-} ]] || builtin source "$_gwtrace_adir/gwtrace-auto-frames.sh"
}

# GWTRACE_AUTO_OPEN ("pid:trace,span,span...") names this process and the
# spans it has open, so that a bash started by `exec` (same pid) can end them:
# nothing of ours runs after an exec. A subshell starts its own list.
_gwtrace_auto_own() {
  builtin export GWTRACE_AUTO_OPEN="$BASHPID:$_gwtrace_atr"
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
  [[ -n $_gwtrace_at ]] || { _gwtrace_auto_cold; _gwtrace_auto_now; }
  _gwtrace_dn=$_gwtrace_an _gwtrace_dw=''
  while (( _gwtrace_dn > 0 )) && [[ ${_gwtrace_apid[_gwtrace_dn-1]} == "$BASHPID" ]]; do
    _gwtrace_dn=$((_gwtrace_dn - 1))
    [[ -z ${_gwtrace_asp[_gwtrace_dn]} ]] || _gwtrace_dw+="gw1	E	$_gwtrace_at	$BASHPID	$_gwtrace_atr	${_gwtrace_asp[_gwtrace_dn]}	${1:-0}"$'\n'
  done
  _gwtrace_an=0
  [[ -z $_gwtrace_dw ]] || builtin printf '%s' "$_gwtrace_dw" >>"$_gwtrace_alog" || :
  [[ -z $_gwtrace_audbg ]] || builtin trap - DEBUG
}

# --- functions and commands (DEBUG trap) ------------------------------------

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
  builtin trap -- "$_gwtrace_aexit1" EXIT
  _gwtrace_auto_seed                           # ready for _gwtrace_auto_enter's written-out entry
  _gwtrace_auto_own
  _gwtrace_aown=$BASHPID
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
    # xtrace on, or a command that may turn it on (the fast path tests the
    # first two characters: `cut`, `chmod`, `set_var` come here too; bash
    # shows a command's words one space apart)
    if [[ -n $_gwtrace_asetpend$_gwtrace_aspend || $- == *x* || $_gwtrace_axg == 1
          || ( $BASH_COMMAND == [sbc][ehuo]* && " set shopt builtin command " == *" ${BASH_COMMAND%% *} "* ) ]]; then
      _gwtrace_auto_dbg_pre "$1"
    fi
    if (( ${#BASH_SOURCE[@]} - 1 > _gwtrace_ad )); then
      _gwtrace_auto_enter
    elif (( ${#BASH_SOURCE[@]} - 1 < _gwtrace_ad )); then
      _gwtrace_auto_leave
    fi
    [[ $BASH_COMMAND != [sbc.]* || " source . set builtin command " != *" ${BASH_COMMAND%% *} "* ]] || _gwtrace_auto_dbg_post
    _gwtrace_ak=$_gwtrace_ad.$_gwtrace_asl
  } 2>&-
  return 0
}

# _gwtrace_auto_dbg_pre LASTARG: after a `set` or a `source`; xtrace on, or
# maybe about to be (the trap with fd 2 closed), or off again.
_gwtrace_auto_dbg_pre() {
  [[ -z $_gwtrace_asetpend ]] || { _gwtrace_auto_cold; _gwtrace_auto_functrace_done "$1"; }
  if [[ $- == *x* || ( $BASH_COMMAND == [sbc][ehuo]* && " set shopt builtin command " == *" ${BASH_COMMAND%% *} "* ) ]]; then
    (( _gwtrace_axg )) || _gwtrace_auto_dbgmode 1
  elif (( _gwtrace_axg )); then
    _gwtrace_auto_dbgmode 0
  fi
  [[ -z $_gwtrace_aspend ]] || { _gwtrace_auto_cold; _gwtrace_auto_src_done "$1"; }
  return 0
}

# Before a `source` or a `set`.
_gwtrace_auto_dbg_post() {
  _gwtrace_auto_cold
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
    source|trap|exit|_gwtrace_*|trace_*|*[$'\\\t\n\r']*) _gwtrace_auto_cold; _gwtrace_auto_sync "$_gwtrace_dn" 3; return 0 ;;   # the general path knows these
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
    _gwtrace_auto_cold
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
    _gwtrace_auto_cold
    _gwtrace_auto_sync "$_gwtrace_dn" 3
    return 0
  fi
  if (( _gwtrace_aps || _gwtrace_arc )); then
    _gwtrace_auto_cold
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
      _gwtrace_auto_cold; _gwtrace_auto_pop "$_gwtrace_ast"; _gwtrace_di=$((_gwtrace_di - 1))
    else
      _gwtrace_an=$_gwtrace_di _gwtrace_di=$((_gwtrace_di - 1))
    fi
  done
  _gwtrace_ad=$_gwtrace_dn
  (( _gwtrace_adep[_gwtrace_di] >= _gwtrace_dn )) || { _gwtrace_auto_cold; _gwtrace_auto_sync "$_gwtrace_dn" 3; }
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
  if (( _gwtrace_alevel == 3 )); then
    _gwtrace_audbg=$_gwtrace_adbg_cmd
    [[ -z ${_gwtrace_audx-} ]] || _gwtrace_audbg=$_gwtrace_adbg_cmdc
  elif (( _gwtrace_axg )); then
    _gwtrace_audbg=$_gwtrace_adbg_fnx
  elif [[ -n ${_gwtrace_audx-} ]]; then
    _gwtrace_audbg=$_gwtrace_adbg_fnc
  else
    _gwtrace_audbg=$_gwtrace_adbg_fn
  fi
}

# Arm the DEBUG trap: functrace makes functions and subshells inherit it.
if (( _gwtrace_alevel == 3 )); then
  _gwtrace_auto_cold
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
_gwtrace_adbg=$_gwtrace_audbg           # installed by gwtrace-auto.sh, last
