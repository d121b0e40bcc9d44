# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh
#
# gwtrace-auto-fn.sh - function and sourced-file spans for gwtrace-auto.sh
# (GWTRACE_AUTO_LEVEL functions or commands), which sources it once it has
# opened the script span: frame 0 is that span. What most processes run is
# here; the rarer half is in gwtrace-auto-frames.sh, the commands level's own
# code in gwtrace-auto-cmd.sh. Every bash at this level parses this file
# (~450 instructions a byte of code, ~120 a byte of comment): the reasons
# behind it are in the notes at its end, after a `return` (bash stops
# reading there). Event lines have literal TABs between their fields.

{
  # Frames (note 1): span id ('' = depth only), BASH_SOURCE depth, owner
  # $BASHPID, name, parent span, TRACEPARENT before it (+ whether set).
  _gwtrace_an=1 _gwtrace_asp=("$_gwtrace_asp0") _gwtrace_adep=("$_gwtrace_abd") _gwtrace_apid=("${_gwtrace_aroot:-$_gwtrace_amain}")
  _gwtrace_aname=('') _gwtrace_apar=("$_gwtrace_abase")
  _gwtrace_aotp=("$_gwtrace_aotp0") _gwtrace_aotpset=("$_gwtrace_aotpset0")
  _gwtrace_acur=$_gwtrace_asp0             # span id of the innermost frame with a span
  _gwtrace_aown=$_gwtrace_amain            # the process whose ids, GWTRACE_AUTO_OPEN and EXIT trap are set up
  _gwtrace_aexp=${TRACEPARENT-}            # the TRACEPARENT we exported last
  _gwtrace_ad=$(( ${#BASH_SOURCE[@]} - 1 ))  # BASH_SOURCE depth at the last slow path (note 10)
  _gwtrace_arc=0 _gwtrace_asub=''          # $? before the command; a subshell with our EXIT trap
  _gwtrace_asl=$BASH_SUBSHELL              # the subshell level the DEBUG trap saw last
  builtin declare -gA _gwtrace_afn; _gwtrace_afn=()  # the functions entered so far: name -> 1
  _gwtrace_aps=0 _gwtrace_acs='' _gwtrace_ast=0  # PIPESTATUS[0] (a returned function's own status), call site, status field
  _gwtrace_asite=('') _gwtrace_accs=''     # call site per frame, of the pending command
  _gwtrace_aspend=''                       # a `source` just ran: "depth _gwtrace_ad time"
  _gwtrace_actxt='' _gwtrace_abang='' _gwtrace_abgpid=() _gwtrace_abgsp=()  # commands: text, $! at begin; background jobs
  _gwtrace_acsp='' _gwtrace_acts='' _gwtrace_acotp='' _gwtrace_acotpset='' _gwtrace_acpid=''
  # The DEBUG trap's text (note 2), with its keys (_gwtrace_auto_key). Its
  # other texts (xtrace on, the script's own DEBUG trap chained) are in
  # gwtrace-auto-frames.sh.
  # shellcheck disable=SC2016
  _gwtrace_adbg_fn='case ${#BASH_SOURCE[@]}.$BASH_SUBSHELL.$BASH_COMMAND in $_gwtrace_af|$_gwtrace_ag) ;; *) _gwtrace_auto_dbg "$_";; esac'
  (( _gwtrace_a44 )) || { _gwtrace_auto_extra; _gwtrace_adbg_fn=${_gwtrace_adbg_fn//"$_gwtrace_abs"/$_gwtrace_adx}; }   # note 13
  # A subshell's EXIT trap: the rest is skipped unless a frame of its own is
  # still open or a command pending (note 3).
  # shellcheck disable=SC2016
  _gwtrace_aexit1='{ (( _gwtrace_aexit = $?, ++_gwtrace_abusy )); builtin trap - DEBUG RETURN; [[ ${_gwtrace_apid[_gwtrace_an>0?_gwtrace_an-1:0]} != "$BASHPID" && -z $_gwtrace_acmd${_gwtrace_abgpid-} ]] || _gwtrace_auto_exit_post; } 2>&"${_gwtrace_anofd[_gwtrace_askipx = 1]--}"'
}

# _gwtrace_auto_key: what the DEBUG trap's fast path compares, from the
# depth and subshell the last slow path saw: _gwtrace_af and _gwtrace_ag
# match "depth.subshell.command" for a command that cannot be set, shopt,
# builtin, command or source; _gwtrace_ak, "depth.subshell", is the commands
# level's. The two slow paths that run the most write them out instead of
# calling this: _gwtrace_auto_dbg (the first two) and a subshell's first
# program in _gwtrace_auto_subenter (all three).
_gwtrace_auto_key() {
  _gwtrace_ak=$_gwtrace_ad.$_gwtrace_asl _gwtrace_af="$_gwtrace_ad.$_gwtrace_asl.[!sbc.]*" _gwtrace_ag="$_gwtrace_ad.$_gwtrace_asl.?[!ehuo ]*"
}
_gwtrace_auto_key

# _gwtrace_auto_seed: a new id prefix in a new process (note 4): the random
# digits of a kernel uuid; splitmix64 (gwtrace-auto-frames.sh) otherwise.
_gwtrace_auto_seed() {
  builtin local _gwtrace_lu='' _gwtrace_lz
  if [[ $_gwtrace_arngpid != "$BASHPID" ]]; then
    builtin read -r _gwtrace_lu </proc/sys/kernel/random/uuid || _gwtrace_lu=''
    _gwtrace_lz=${_gwtrace_lu:24:12}                 # the uuid's last group: 48 random bits
    if [[ ${#_gwtrace_lz} -eq 12 && $_gwtrace_lz != *[!0-9a-f]* ]]; then
      _gwtrace_apfx=${_gwtrace_lz:0:10} _gwtrace_actr=1000000 _gwtrace_arngpid=$BASHPID _gwtrace_arng=$(( 16#$_gwtrace_lz ^ (BASHPID << 48) ))
      builtin return 0
    fi
  fi
  _gwtrace_auto_cold
  _gwtrace_auto_seed_mix "$_gwtrace_lu"
}

# The rarer half (gwtrace-auto-frames.sh, and gwtrace-auto-util.sh with it),
# read the first time this process needs it (a subshell that reads it keeps
# it to itself).
_gwtrace_auto_cold() {
  # shellcheck source=gwtrace-auto-frames.sh
  [[ -n ${_gwtrace_aframes-} ]] || builtin source "$_gwtrace_adir/gwtrace-auto-frames.sh"
}

# GWTRACE_AUTO_OPEN ("pid:trace,span,span...") names this process and the
# spans it has open, so that a bash started by `exec` (same pid) can end them.
_gwtrace_auto_own() {
  builtin export GWTRACE_AUTO_OPEN="$BASHPID:$_gwtrace_atr"
}

# At exit: the pending command, every frame this process opened (innermost
# first, one append), and no more DEBUG trap (note 5).
_gwtrace_auto_exit_frames() {
  [[ -z $_gwtrace_acmd ]] || _gwtrace_auto_cmd_end "$1"
  (( ${#_gwtrace_abgpid[@]} == 0 )) || _gwtrace_auto_bg_reap process.still_running=true
  _gwtrace_at=${EPOCHREALTIME-}
  [[ -n $_gwtrace_at ]] || { _gwtrace_auto_cold; _gwtrace_auto_now; }
  _gwtrace_dn=$_gwtrace_an _gwtrace_dw=''
  while (( _gwtrace_dn > 0 )) && [[ ${_gwtrace_apid[_gwtrace_dn-1]} == "$BASHPID" ]]; do
    _gwtrace_dn=$((_gwtrace_dn - 1))
    [[ -z ${_gwtrace_asp[_gwtrace_dn]} ]] || _gwtrace_dw+="gw1	E	$_gwtrace_at	$BASHPID	$_gwtrace_atr	${_gwtrace_asp[_gwtrace_dn]}	${1:-0}"
    if [[ -n ${_gwtrace_asp[_gwtrace_dn]} && ${1:-0} == [1-9]* ]]; then   # a failure: where (the call site)
      _gwtrace_auto_cold
      if [[ -n ${_gwtrace_asite[_gwtrace_dn]-} ]]; then _gwtrace_auto_where "${_gwtrace_asite[_gwtrace_dn]}"; else _gwtrace_auto_failed_cmd; fi
      _gwtrace_dw+=$_gwtrace_awh
    fi
    [[ -z ${_gwtrace_asp[_gwtrace_dn]} ]] || _gwtrace_dw+=$'\n'
  done
  _gwtrace_an=0
  [[ -z $_gwtrace_dw ]] || builtin printf '%s' "$_gwtrace_dw" >>"$_gwtrace_alog" || :
  [[ -z $_gwtrace_audbg ]] || builtin trap - DEBUG
}

# --- functions and commands (DEBUG trap) ------------------------------------

# _gwtrace_auto_subenter: the first command of a new subshell. Before a
# function call, our EXIT trap goes in (note 6); a subshell that runs a
# program is left alone, and the slow path ends here (status 1) when that is
# all it had to see.
_gwtrace_auto_subenter() {
  _gwtrace_asl=$BASH_SUBSHELL _gwtrace_dw=${BASH_COMMAND%% *}
  [[ -n $_gwtrace_dw ]] || builtin return 0
  if [[ -z ${_gwtrace_afn[$_gwtrace_dw]-} ]]; then
    if [[ $_gwtrace_dw == */* || $_gwtrace_dw == *=* ]] || ! builtin declare -F -- "$_gwtrace_dw" >/dev/null; then
      # not a function's call: nothing more to do if nothing else changed
      [[ ${#FUNCNAME[@]} == $((_gwtrace_ad + 2)) && $_gwtrace_amode$- != *x* && $BASH_COMMAND != [sbc.][ehuo\ ]* ]] || builtin return 0
      _gwtrace_ak=$_gwtrace_ad.$_gwtrace_asl _gwtrace_af="$_gwtrace_ad.$_gwtrace_asl.[!sbc.]*" _gwtrace_ag="$_gwtrace_ad.$_gwtrace_asl.?[!ehuo ]*"   # _gwtrace_auto_key's
      builtin return 1
    fi
  fi
  _gwtrace_asub=$BASHPID
  builtin trap -- "$_gwtrace_aexit1" EXIT
  (( _gwtrace_a52 )) || { _gwtrace_auto_cold; _gwtrace_auto_subold; }   # note 14
  _gwtrace_auto_seed                           # ready for _gwtrace_auto_enter's written-out entry
  _gwtrace_auto_own
  _gwtrace_aown=$BASHPID
}

# The DEBUG trap past its fast path (note 7): the depth changed, a new
# subshell, or the command may turn xtrace on, source a file or `set`
# options. $1 is the script's $_, given back when this call returns.
_gwtrace_auto_dbg() {
  {                                            # nothing of ours reaches stderr
    # $? and PIPESTATUS[0] are still the script's (a second argument: the
    # trap's text kept them); our own `trap` and EXIT handlers return here
    (( $# > 1 || (_gwtrace_arc = $?, _gwtrace_aps = PIPESTATUS), _gwtrace_abusy )) && builtin return 0
    (( BASH_SUBSHELL == _gwtrace_asl )) || _gwtrace_auto_subenter || builtin return 0
    # xtrace on, a `set` or `source` pending, the trap guarded
    # (_gwtrace_amode: x), or a command that may turn xtrace on (the fast
    # path tests the first two characters: `cut`, `chmod`, `set_var` come
    # here too; bash shows a command's words one space apart)
    if [[ $_gwtrace_amode$- == *x* ]]; then
      _gwtrace_auto_cold; _gwtrace_auto_dbg_pre "$1"
    elif [[ $BASH_COMMAND == [sbc][ehuo]* ]]; then
      case ${BASH_COMMAND%% *} in set|shopt|builtin|command) _gwtrace_auto_cold; _gwtrace_auto_dbg_pre "$1" ;; esac
    fi
    case $(( ${#FUNCNAME[@]} - 1 - _gwtrace_ad )) in
      0) ;;
      -*) _gwtrace_auto_leave ;;
      *) _gwtrace_auto_enter ;;
    esac
    case $BASH_COMMAND in
      [sbc.]*) case ${BASH_COMMAND%% *} in source|.|set|shopt|builtin|command) _gwtrace_auto_dbg_post ;; esac ;;
    esac
    _gwtrace_af="$_gwtrace_ad.$_gwtrace_asl.[!sbc.]*" _gwtrace_ag="$_gwtrace_ad.$_gwtrace_asl.?[!ehuo ]*"   # _gwtrace_auto_key's
  } 2>&-
  builtin return 0
}

# Before a `source` or a `set`.
_gwtrace_auto_dbg_post() {
  _gwtrace_auto_cold
  [[ $BASH_COMMAND != source\ * && $BASH_COMMAND != .\ * ]] || _gwtrace_auto_src_begin
  [[ $BASH_COMMAND != *set\ [-+\"]* && $BASH_COMMAND != *shopt\ * ]] || _gwtrace_auto_functrace
  builtin return 0
}

# One level deeper: a function entered, written out for the common case
# (note 8); anything else through _gwtrace_auto_sync.
_gwtrace_auto_enter() {
  _gwtrace_dn=$(( ${#FUNCNAME[@]} - 2 )) _gwtrace_dw=${FUNCNAME[2]-}
  case $_gwtrace_dw in
    source|trap|exit|_gwtrace_*|trace_*|*[$'\\\t\n\r']*) _gwtrace_auto_cold; _gwtrace_auto_sync "$_gwtrace_dn" 3; builtin return 0 ;;   # the general path knows these
  esac
  if (( _gwtrace_dn == _gwtrace_ad + 1 && _gwtrace_adep[_gwtrace_an-1] < _gwtrace_dn && (_gwtrace_actr += 1) < 2000000 )) \
      && [[ $BASHPID == "$_gwtrace_aown" && ${TRACEPARENT-} == "$_gwtrace_aexp" && -n ${EPOCHREALTIME-} && -n ${TRACEPARENT+x} && ${TRACEPARENT@a} != *r* ]]; then
    _gwtrace_dz=$_gwtrace_apfx${_gwtrace_actr:1}
    builtin printf '%s\n' "gw1	B	$EPOCHREALTIME	$BASHPID	$_gwtrace_atr	$_gwtrace_dz	${_gwtrace_acur:--}	0	$_gwtrace_afl	${_gwtrace_ats:--}	$_gwtrace_dw" >>"$_gwtrace_alog" || :
    _gwtrace_apar[_gwtrace_an]=$_gwtrace_acur _gwtrace_asp[_gwtrace_an]=$_gwtrace_dz _gwtrace_adep[_gwtrace_an]=$_gwtrace_dn \
      _gwtrace_apid[_gwtrace_an]=$BASHPID _gwtrace_aname[_gwtrace_an]=$_gwtrace_dw _gwtrace_afn[$_gwtrace_dw]=1 \
      _gwtrace_asite[_gwtrace_an]="${BASH_LINENO[2]} $_gwtrace_dw ${BASH_SOURCE[3]-}" _gwtrace_aotp[_gwtrace_an]=$_gwtrace_aexp \
      _gwtrace_aotpset[_gwtrace_an]=${TRACEPARENT+1} _gwtrace_an=$((_gwtrace_an + 1)) _gwtrace_ad=$_gwtrace_dn _gwtrace_acur=$_gwtrace_dz \
      _gwtrace_aexp=00-$_gwtrace_atr-$_gwtrace_dz-$_gwtrace_afl GWTRACE_AUTO_OPEN+=,$_gwtrace_dz \
      TRACEPARENT=00-$_gwtrace_atr-$_gwtrace_dz-$_gwtrace_afl      # not readonly (note 8)
  else
    _gwtrace_auto_cold
    _gwtrace_auto_sync "$_gwtrace_dn" 3
  fi
}

# Shallower: functions returned, with the status the trap saw (note 9).
_gwtrace_auto_leave() {
  _gwtrace_dn=$(( ${#FUNCNAME[@]} - 2 )) _gwtrace_di=$((_gwtrace_an - 1))
  # (bash 4, no EPOCHREALTIME: the clock is the cold half's, needed only when
  # a frame ends: not for the first command of a -c or -s script, note 10;
  # bash < 4.4 has no ${TRACEPARENT@a}, needed only then too)
  if [[ $BASHPID != "$_gwtrace_aown" || ${TRACEPARENT-} != "$_gwtrace_aexp" || -z ${TRACEPARENT+x} \
        || ( -z ${EPOCHREALTIME-} && ${_gwtrace_adep[_gwtrace_di]} -gt $_gwtrace_dn ) \
        || ${_gwtrace_a44:+${TRACEPARENT@a}} == *r* ]]; then
    _gwtrace_auto_cold
    _gwtrace_auto_sync "$_gwtrace_dn" 3
    builtin return 0
  fi
  _gwtrace_ast=0
  if (( _gwtrace_aps || _gwtrace_arc )); then       # a failure: _gwtrace_auto_leave_err ends the frames, noting where
    _gwtrace_auto_cold; _gwtrace_auto_leave_status
    [[ $_gwtrace_ast != [1-9]* ]] || _gwtrace_auto_leave_err
  fi
  while (( _gwtrace_di > 0 && _gwtrace_adep[_gwtrace_di] > _gwtrace_dn )); do
    _gwtrace_dz=${_gwtrace_asp[_gwtrace_di]}
    if [[ -n $_gwtrace_dz && -n ${_gwtrace_aotpset[_gwtrace_di]} && ${_gwtrace_apid[_gwtrace_di]} == "$BASHPID" ]]; then
      builtin printf '%s\n' "gw1	E	$EPOCHREALTIME	$BASHPID	$_gwtrace_atr	$_gwtrace_dz	$_gwtrace_ast" >>"$_gwtrace_alog" || :
      GWTRACE_AUTO_OPEN=${GWTRACE_AUTO_OPEN%,"$_gwtrace_dz"} _gwtrace_aexp=${_gwtrace_aotp[_gwtrace_di]} \
        _gwtrace_acur=${_gwtrace_apar[_gwtrace_di]} _gwtrace_an=$_gwtrace_di _gwtrace_di=$((_gwtrace_di - 1)) TRACEPARENT=$_gwtrace_aexp
    elif [[ -n $_gwtrace_dz ]]; then
      _gwtrace_auto_cold; _gwtrace_auto_pop "$_gwtrace_ast"; _gwtrace_di=$((_gwtrace_di - 1))
    else
      _gwtrace_an=$_gwtrace_di _gwtrace_di=$((_gwtrace_di - 1))
    fi
  done
  _gwtrace_ad=$_gwtrace_dn
  (( _gwtrace_adep[_gwtrace_di] >= _gwtrace_dn )) || { _gwtrace_auto_cold; _gwtrace_auto_sync "$_gwtrace_dn" 3; }
}

# Arm the DEBUG trap: functrace makes functions and subshells inherit it.
if (( _gwtrace_alevel == 3 )); then
  _gwtrace_amode='' _gwtrace_axg=0
  _gwtrace_auto_cold
  # shellcheck source=gwtrace-auto-cmd.sh
  builtin source "$_gwtrace_adir/gwtrace-auto-cmd.sh"
  _gwtrace_audbg=$_gwtrace_adbg_cmd
else
  # shellcheck disable=SC2016  # the trap's text, expanded when it runs
  [[ -z $_gwtrace_aso ]] || ! builtin enable -f "$_gwtrace_aso" _gwtrace_adbgc || _gwtrace_adbg_fn='_gwtrace_adbgc "$_"'   # note 11
  _gwtrace_audbg=$_gwtrace_adbg_fn _gwtrace_axg=0 _gwtrace_amode=''
  [[ $- != *x* ]] || { _gwtrace_auto_cold; _gwtrace_audbg=$_gwtrace_adbg_fnx _gwtrace_axg=1 _gwtrace_amode=x; }
fi
_gwtrace_dn=0 _gwtrace_di=0 _gwtrace_dz=0 _gwtrace_dw='' _gwtrace_auT='' _gwtrace_asetpend='' _gwtrace_asetoff=''
[[ $- != *T* ]] || _gwtrace_auT=1 _gwtrace_aurT=0
[[ $_gwtrace_arngpid == "$BASHPID" ]] || _gwtrace_auto_seed
builtin set -T
_gwtrace_adbg=$_gwtrace_audbg           # installed by gwtrace-auto.sh, last
builtin return 0

# --- Notes (bash does not read past the `return` above) ---------------------
# 1. Frames. Arrays indexed by frame; frame 0 is the script span. A frame with
#    span id '' only keeps its place in the call stack (our functions, the
#    library's). Span ids: a random 40-bit prefix per process (10 hex digits)
#    then a counter kept in decimal digits (6 of them, valid hex): no printf,
#    no long arithmetic; a new prefix in every new process ($BASHPID) and
#    every 999 999 spans. The first process's prefix comes with its script
#    span (gwtrace-auto.sh).
#
# 2. The DEBUG trap. With functrace (set -T) it runs before every simple
#    command, in functions and subshells too, and bash parses its text anew
#    each time (~450 instructions a character of a word), so the text that
#    runs most is short. Its fast path matches "${#BASH_SOURCE[@]}.$BASH_SUBSHELL.$BASH_COMMAND"
#    against two patterns the last slow path set (_gwtrace_af, _gwtrace_ag):
#    the same depth and subshell, and a command that cannot start with set,
#    shopt, builtin, command, source or `.` (bash shows a command's words one
#    space apart; `cut`, `chmod`, `set_var` are false alarms that cost a
#    call). It is a `case`, not a `[[ ]]`, because a case leaves $? and
#    PIPESTATUS alone until it ends: the slow path reads the script's values
#    itself, as its first command, and the text needs no expansion to keep
#    them (round 12: 72 800 instructions a command instead of 95 600). The
#    slow path gets $_ as its last argument: the call gives $_ back to the
#    script when it returns. Bash saves and restores $?, PIPESTATUS and
#    BASH_COMMAND around traps; `case`, `((` and `[[` leave $_ alone.
#    Under `set -x` every command of the trap would be printed, so it then
#    runs with fd 2 closed (_gwtrace_adbg_fnx, gwtrace-auto-frames.sh).
#    Closing and restoring fd 2 costs three system calls on every command, so
#    while xtrace is off the trap runs unguarded and the slow path also runs
#    before any command that may turn xtrace on (set -x, set -o xtrace,
#    shopt -so xtrace, builtin set, command set), which switches to the
#    guarded text before the command runs (_gwtrace_auto_dbgmode). A `set -x`
#    reached through a variable ("$@", $cmd) is not seen: the trap's commands
#    are then printed until the next function call or return. With the
#    script's own DEBUG trap chained after ours (it needs $? every time) the
#    trap is _gwtrace_adbg_fnc, which keeps $? before every command.
#
# 3. A subshell's EXIT trap: its functions have mostly returned by then (the
#    DEBUG trap runs before the handler's first command and ends them).
#
# 4. _gwtrace_auto_seed: in a new process, the last group of a kernel uuid
#    (48 random bits: a prefix, and the state for later ones); if that read
#    fails, or when the counter runs out, splitmix64 over a state seeded from
#    the kernel or the clock, mixed with $BASHPID.
#
# 5. At exit: a process's own frames are the top of the stack (a subshell
#    pushes its frames above the ones it inherited), so the walk stops at the
#    first that is not; the others are their owners' to end. Nothing runs
#    after this: no TRACEPARENT to give back.
#
# 6. _gwtrace_auto_subenter. BASH_SUBSHELL changed: a new process (the
#    commands of a pipeline are not: bash runs the DEBUG trap for them in the
#    parent). When it calls a function ($(f), `f`), our EXIT trap must be set
#    before bash runs the function: a command substitution execs the
#    function's last command without a fork when no EXIT trap is set as the
#    function is entered, and the spans the subshell opened were then never
#    ended (tests/corpus/comsub_last_external.sh). A word that names a
#    function entered so far (_gwtrace_afn, inherited) is one; a path or an
#    assignment is not; anything else is looked up with `declare -F` (its
#    redirection costs four system calls and ~25 000 instructions). Not
#    BASH_CMDS: bash rebuilds that whole array from its hash table at each
#    reference (~110 000 instructions with 40 programs hashed, as a glidein
#    has). Nor a `case` over bash's builtins and keywords: 180 000 for a word
#    that is none of them, such as `date`.
#
# 7. The slow path. Functions are kept small, each doing one case: bash
#    copies a function's body at every call (~36 instructions a byte), and in
#    a new subshell every page that copy touches is a page fault. The common
#    cases, one function entered (_gwtrace_auto_enter) and functions returned
#    (_gwtrace_auto_leave) in a process whose ids, GWTRACE_AUTO_OPEN and EXIT
#    trap are set up (_gwtrace_aown: the main process, a subshell once it
#    opened a frame or began with a function call), are written out with as
#    few commands as possible, their scratch state global (_gwtrace_d*: this
#    never runs twice at once); anything else goes through _gwtrace_auto_sync
#    (gwtrace-auto-frames.sh). The stack indices count our two functions.
#
# 8. _gwtrace_auto_enter's written-out case: exactly one level deeper, a name
#    of the script's, this process's ids set up and TRACEPARENT still ours
#    and not readonly; the span is a child of the innermost one. Assigning a
#    readonly variable is fatal under `set -e` whatever `|| :` follows (and
#    without it abandons the script's whole command), so it is never tried:
#    ${TRACEPARENT@a} (bash 5 here: EPOCHREALTIME; only when set: `set -u`)
#    sends a readonly one, or an unset one, to the general path, which
#    leaves a readonly one alone (gwtrace-auto-util.sh's _gwtrace_auto_tp).
#
# 9. _gwtrace_auto_leave: a function whose last command was a call returns
#    that call's status, tested or not as the outermost one that returns now
#    (gwtrace-auto-util.sh's _gwtrace_auto_status). Written out for this
#    process's own frames while TRACEPARENT is still ours.
#
# 10. The depth the DEBUG trap first compares is the one of the file that
#    reads this one: gwtrace-auto.sh, which runs a command or two after
#    installing the trap (BASH_SOURCE depth 1 when it is the BASH_ENV, more
#    when a BASH_ENV of the user's sources it). A script file runs at 1 too;
#    `bash -c` and `bash -s` run theirs at depth 0, so their first command
#    is one slow path (a return to the script span, nothing to end) where a
#    depth of 0 here would have made gwtrace-auto.sh's own last commands look
#    like a call, read gwtrace-auto-frames.sh and gwtrace-auto-util.sh for it
#    (~8 M instructions; round 13).
#
# 11. The accelerator (bash/accel/functions.c, built by `make accel`): a
#    loadable builtin that runs the common cases of notes 2, 6, 8 and 9 in C
#    and calls _gwtrace_auto_dbg for anything else, before changing anything.
#    Its text is a single builtin call, so the `case` and its two patterns
#    are not needed then. gwtrace-auto.sh decides whether to load it
#    (_gwtrace_aso: the copy the load check verified for this bash binary,
#    its note 7, unless GWTRACE_ACCEL=0); where bash cannot load it even so
#    (a noexec mount) `enable -f` fails silently (fd 2 is closed here) and
#    the text stays the `case`.
#
# 12. Bash < 4.4 puts back, when a function returns, the DEBUG trap it had
#    when it was called while functrace was off (execute_function's
#    set_debug_trap; 4.4 made it maybe_set_debug_trap, which keeps a trap
#    set inside). Functrace is off between a script's `set +T` and the slow
#    path after it, which turns it back on and switches the trap's text
#    (_gwtrace_auto_functrace_done, _gwtrace_auto_dbgmode): on 4.2 that
#    switch was undone when _gwtrace_auto_dbg returned, and the text put back
#    (the guarded one, which skips the slow path at the same depth) never saw
#    the script's `set -T` after it, so the script's own DEBUG trap stopped
#    running in the functions it called (bats' `run`, then a failing helper:
#    no "from function" frame). The trace attribute makes bash skip that save
#    and restore for _gwtrace_auto_dbg and _gwtrace_auto_dbg_pre (the two
#    calls between the trap and that switch): nothing else changes, the DEBUG
#    trap does not run inside them (they run in it). gwtrace-auto-frames.sh
#    sets it (bash 4 reads that file in every process that reaches a slow
#    path needing it, a `set` among them, before functrace can be off): the
#    common half of bash 5 parses nothing more.
#
# 13. The depth. Bash < 4.4 pushes no BASH_SOURCE entry for a function
#    without a file: one a -c or -s script defines, or one imported from the
#    environment (4.4 and later: "environment", "main" or $BASH), so on EL7
#    such calls were invisible. ${#FUNCNAME[@]} counts every frame once a
#    function runs, and equals ${#BASH_SOURCE[@]} there on 4.4 and later
#    (functions, sourced files, both nested, BASH_ENV's `source` frame; our
#    slow paths always run in a function of ours, so they count FUNCNAME on
#    every bash). At the top level of the script or of a file it sources,
#    FUNCNAME is unset (4.2, 5.x) or counts 0 (4.4) while BASH_SOURCE is
#    right: the trap's texts, run at the script's level, count
#    $(( ${FUNCNAME+${#FUNCNAME[@]}+0*}${#BASH_SOURCE[@]} )) on bash < 4.4
#    only (_gwtrace_adx, gwtrace-auto-extra.sh; `set -u`-safe) and BASH_SOURCE elsewhere: bash
#    5's fast path is unchanged. The accelerator counts the same way
#    (functions.c trap_depth). BASH_SOURCE[i] stays aligned with FUNCNAME[i]
#    on 4.2 (a frame without a file is a hole, or missing at the bottom):
#    the call sites' files read it by index as before.
#
# 14. Subshells of bash < 5.2 (_gwtrace_auto_subenter; gwtrace-auto-frames.sh's
#    _gwtrace_auto_subold). Bash 4 runs no EXIT trap when a pipeline element
#    that is a function call ends (execute_subshell_builtin_or_function exits
#    without it; 5.0 added subshell_exit), and 5.0-5.1 run it with the $? of
#    before the function's `return N`, which then becomes the element's
#    status (PIPESTATUS 0 for `return 3`, traced only): the spans stayed
#    open, or the status changed. Such a subshell's first command is the
#    function's entry, one level deeper than the parent's last slow path,
#    and the function is its command word: there our EXIT trap goes (5.x)
#    and a RETURN trap (inherited under functrace) ends the process's frames
#    when that depth returns, at their true time. A RETURN trap of the
#    script's carries ours in front there (gwtrace-auto-extra.sh's
#    _gwtrace_auto_rettext): a slow path cannot install one, bash puts back
#    the RETURN trap a function called from the DEBUG trap found. Bash 4.2
#    also frees every trap a subshell inherited at its first `trap` (trap.c
#    free_trap_strings; 4.4 keeps DEBUG, ERR and RETURN), our EXIT trap
#    included, which took the DEBUG trap with it: functions in `( )` and
#    `$( )` had no span. They go back (_gwtrace_auto_retrap). The
#    accelerator leaves such a subshell's entry to this shell code.
