# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh and gwtrace-auto-fn.sh
#
# gwtrace-auto-frames.sh - the rarer half of the functions level, read by
# gwtrace-auto-fn.sh (_gwtrace_auto_cold) the first time a process needs it:
# the general path that brings the frames back in line with bash's call stack
# (more than one level entered or left, a special name, TRACEPARENT changed
# by the script, frames another process opened), `source`d files, `set`
# changing functrace. Every bash at the functions level parses what it reads
# (~450 instructions a byte): most of a glidein's ~140 processes (error_gen.sh,
# error_augment.sh) never need this half. At the commands level it is read
# at once (gwtrace-auto-cmd.sh uses it for every command).

_gwtrace_aframes=1
# shellcheck source=gwtrace-auto-util.sh
[[ -n ${_gwtrace_autil-} ]] || builtin source "$_gwtrace_adir/gwtrace-auto-util.sh"   # the clock, escaping, statuses

# The DEBUG trap's other texts (gwtrace-auto-fn.sh, its note 2): keeping $?
# and PIPESTATUS before every command, for the script's own DEBUG trap
# chained after ours; the same in a group with fd 2 closed, while xtrace is
# or may soon be on. They kept $? themselves: the slow path's second argument
# says so.
# shellcheck disable=SC2016
_gwtrace_adbg_fnc='((_gwtrace_arc=$?,${#BASH_SOURCE[@]}==_gwtrace_ad&&BASH_SUBSHELL==_gwtrace_asl||(_gwtrace_aps=PIPESTATUS[0],0)))&&[[ $BASH_COMMAND != [sbc.][ehuo\ ]* ]]||_gwtrace_auto_dbg "$_" "$_"'
# shellcheck disable=SC2016
_gwtrace_adbg_fnx='{ ((_gwtrace_arc=$?,${#BASH_SOURCE[@]}==_gwtrace_ad&&BASH_SUBSHELL==_gwtrace_asl||(_gwtrace_aps=PIPESTATUS[0],0)))||_gwtrace_auto_dbg "$_" "$_";} 2>&-'
# shellcheck disable=SC2016  # bash < 4.4: FUNCNAME's depth (gwtrace-auto-fn.sh, note 13)
(( _gwtrace_a44 )) || _gwtrace_adbg_fnc=${_gwtrace_adbg_fnc//"$_gwtrace_abs"/$_gwtrace_adx} _gwtrace_adbg_fnx=${_gwtrace_adbg_fnx//"$_gwtrace_abs"/$_gwtrace_adx}

# _gwtrace_auto_id: a span id (16 hex digits, never all zero) into _gwtrace_ar.
_gwtrace_auto_id() {
  if [[ $_gwtrace_arngpid != "$BASHPID" ]] || (( (_gwtrace_actr += 1) >= 2000000 )); then
    _gwtrace_auto_seed
  fi
  _gwtrace_ar=$_gwtrace_apfx${_gwtrace_actr:1}
}

# _gwtrace_auto_seed_mix UUID: _gwtrace_auto_seed's rarer half: splitmix64
# over a state seeded from the kernel's uuid (else the clock), mixed with
# $BASHPID, for a process whose uuid read failed or whose counter ran out.
_gwtrace_auto_seed_mix() {
  builtin local _gwtrace_lu="${1//-/}" _gwtrace_lz
  if [[ $_gwtrace_arngpid != "$BASHPID" ]]; then
    if [[ ${#_gwtrace_lu} -ge 30 && $_gwtrace_lu != *[!0-9a-f]* ]]; then
      _gwtrace_arng=$(( (16#${_gwtrace_lu:0:15} << 4) ^ 16#${_gwtrace_lu:15:15} ))
    else
      _gwtrace_auto_now
      _gwtrace_arng=$(( ${_gwtrace_at//[!0-9]/} * 2654435761 ^ ${SRANDOM:-0} ))
    fi
    _gwtrace_arng=$(( _gwtrace_arng ^ (BASHPID << 40) ))
    _gwtrace_arngpid=$BASHPID
  fi
  builtin printf -v _gwtrace_apfx '%010x' "$(( _gwtrace_lz = (_gwtrace_arng += -7046029254386353131),
      _gwtrace_lz = (_gwtrace_lz ^ ((_gwtrace_lz >> 30) & 0x3FFFFFFFF)) * -4658895280553007687,
      _gwtrace_lz = (_gwtrace_lz ^ ((_gwtrace_lz >> 27) & 0x1FFFFFFFFF)) * -7723592293110705685,
      _gwtrace_lz = (_gwtrace_lz ^ ((_gwtrace_lz >> 31) & 0x1FFFFFFFF)) & 0xFFFFFFFFFF, _gwtrace_lz ? _gwtrace_lz : 1 ))"
  _gwtrace_actr=1000000
}

# _gwtrace_auto_leave_status: the status field of the functions that
# returned to depth _gwtrace_dn, from the frame of the outermost of them
# (gwtrace-auto-fn.sh's _gwtrace_auto_leave, for a non-zero status).
_gwtrace_auto_leave_status() {
  builtin local _gwtrace_li="$_gwtrace_di"
  while (( _gwtrace_li > 1 && _gwtrace_adep[_gwtrace_li-1] > _gwtrace_dn )); do _gwtrace_li=$((_gwtrace_li - 1)); done
  _gwtrace_auto_status "${_gwtrace_asite[_gwtrace_li]}"
}

# _gwtrace_auto_leave_err: _gwtrace_auto_leave's loop for functions that
# returned a failure (_gwtrace_ast a non-zero code): the same ends, each
# with where it was called (_gwtrace_auto_where), written out as there;
# anything else through _gwtrace_auto_pop, which notes it too. Leaves
# _gwtrace_di where _gwtrace_auto_leave's own loop then stops at once.
_gwtrace_auto_leave_err() {
  while (( _gwtrace_di > 0 && _gwtrace_adep[_gwtrace_di] > _gwtrace_dn )); do
    _gwtrace_dz=${_gwtrace_asp[_gwtrace_di]}
    if [[ -n $_gwtrace_dz && -n ${_gwtrace_aotpset[_gwtrace_di]} && ${_gwtrace_apid[_gwtrace_di]} == "$BASHPID" ]]; then
      _gwtrace_auto_where "${_gwtrace_asite[_gwtrace_di]-}"
      builtin printf '%s\n' "gw1	E	$EPOCHREALTIME	$BASHPID	$_gwtrace_atr	$_gwtrace_dz	$_gwtrace_ast$_gwtrace_awh" >>"$_gwtrace_alog" || :
      GWTRACE_AUTO_OPEN=${GWTRACE_AUTO_OPEN%,"$_gwtrace_dz"} _gwtrace_aexp=${_gwtrace_aotp[_gwtrace_di]} \
        _gwtrace_acur=${_gwtrace_apar[_gwtrace_di]} _gwtrace_an=$_gwtrace_di _gwtrace_di=$((_gwtrace_di - 1)) TRACEPARENT=$_gwtrace_aexp
    elif [[ -n $_gwtrace_dz ]]; then
      _gwtrace_auto_pop "$_gwtrace_ast"; _gwtrace_di=$((_gwtrace_di - 1))
    else
      _gwtrace_an=$_gwtrace_di _gwtrace_di=$((_gwtrace_di - 1))
    fi
  done
}

# _gwtrace_auto_dbg_pre LASTARG: after a `set` or a `source`; xtrace on, or
# maybe about to be (the trap with fd 2 closed), or off again.
_gwtrace_auto_dbg_pre() {
  [[ -z $_gwtrace_asetpend ]] || _gwtrace_auto_functrace_done
  if [[ $- == *x* || ( $BASH_COMMAND == [sbc][ehuo]* && " set shopt builtin command " == *" ${BASH_COMMAND%% *} "* ) ]]; then
    (( _gwtrace_axg )) || _gwtrace_auto_dbgmode 1
  elif (( _gwtrace_axg )); then
    _gwtrace_auto_dbgmode 0
  fi
  [[ -z $_gwtrace_aspend ]] || _gwtrace_auto_src_done "$1"
  builtin return 0
}
(( _gwtrace_a44 )) || builtin declare -ft _gwtrace_auto_dbg _gwtrace_auto_dbg_pre

# _gwtrace_auto_mode: _gwtrace_amode, x while a `set` or `source` is pending
# or the trap is guarded, for _gwtrace_auto_dbg's one test.
_gwtrace_auto_mode() {
  _gwtrace_amode=''
  [[ -z $_gwtrace_asetpend$_gwtrace_aspend && ${_gwtrace_axg-} != 1 ]] || _gwtrace_amode=x
}

# _gwtrace_auto_dbgmode 1|0: the DEBUG trap with fd 2 closed (xtrace is or
# may soon be on), or without (the capturing text while the script's own
# DEBUG trap is chained after ours: _gwtrace_audx). Not once the script's
# own DEBUG trap has taken over (_gwtrace_audbg is then something else).
_gwtrace_auto_dbgmode() {
  [[ $_gwtrace_audbg == "$_gwtrace_adbg_fn" || $_gwtrace_audbg == "$_gwtrace_adbg_fnc" || $_gwtrace_audbg == "$_gwtrace_adbg_fnx" ]] || builtin return 0
  _gwtrace_axg=$1
  _gwtrace_auto_mode
  _gwtrace_auto_ourtext
  builtin trap -- "$_gwtrace_audbg${_gwtrace_audx-}" DEBUG
}

# _gwtrace_auto_ourtext: our DEBUG trap's text for the functions level now,
# into _gwtrace_audbg.
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

# --- frames -----------------------------------------------------------------
#
# A frame is a span this shell opened (or, with span id '', a place in the
# call stack we only keep track of: our own functions, the library's). Arrays
# indexed by frame: span id, parent span id, BASH_SOURCE depth inside it,
# owner $BASHPID, name, TRACEPARENT before it (+ whether it was set).

# _gwtrace_auto_emit LINE: one append, one write(2) (lines stay below 4096 bytes).
_gwtrace_auto_emit() {
  builtin printf '%s\n' "$1" >>"$_gwtrace_alog" || :
}

# _gwtrace_auto_push NAME DEPTH [KEY=VALUE...]: open a span, child of the
# innermost frame (or of a span the script opened itself with the library),
# and export TRACEPARENT for the children. NAME '' keeps a frame without span.
_gwtrace_auto_push() {
  builtin local _gwtrace_lname="$1" _gwtrace_ldep="$2" _gwtrace_li="$_gwtrace_an" _gwtrace_lparent _gwtrace_lremote=0 _gwtrace_lspan='' _gwtrace_la _gwtrace_lline _gwtrace_lt=$'\t'
  builtin shift 2
  # (not a readonly TRACEPARENT: the script cannot have opened a span in it since)
  if [[ -n $_gwtrace_lname && ${TRACEPARENT-} != "$_gwtrace_aexp" && $_gwtrace_aexp != '(readonly)' ]] && _gwtrace_auto_adoptparent; then
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
      (( ${#_gwtrace_la} <= 1000 )) || { _gwtrace_auto_extra; _gwtrace_auto_cut _gwtrace_la; }
      _gwtrace_lline+=$_gwtrace_lt$_gwtrace_la
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
  builtin local _gwtrace_li="$((_gwtrace_an - 1))" _gwtrace_lt=$'\t' _gwtrace_lline _gwtrace_la
  (( _gwtrace_li >= 0 )) || builtin return 0
  if [[ -n ${_gwtrace_asp[_gwtrace_li]} ]]; then
    if [[ ${_gwtrace_apid[_gwtrace_li]} == "$BASHPID" ]]; then
      _gwtrace_auto_now
      _gwtrace_lline="gw1${_gwtrace_lt}E${_gwtrace_lt}${_gwtrace_at}${_gwtrace_lt}${BASHPID}${_gwtrace_lt}${_gwtrace_atr}${_gwtrace_lt}${_gwtrace_asp[_gwtrace_li]}${_gwtrace_lt}${1:-0}"
      if [[ $# == 1 && $1 == [1-9]* && $1 != *[!0-9]* ]]; then     # a failure: where (the call site)
        _gwtrace_auto_where "${_gwtrace_asite[_gwtrace_li]-}"; _gwtrace_lline+=$_gwtrace_awh
      fi
      builtin shift
      for _gwtrace_la in "$@"; do _gwtrace_lline+=$_gwtrace_lt$_gwtrace_la; done
      builtin printf '%s\n' "$_gwtrace_lline" >>"$_gwtrace_alog" || :
      GWTRACE_AUTO_OPEN=${GWTRACE_AUTO_OPEN%,"${_gwtrace_asp[_gwtrace_li]}"}
    fi
    _gwtrace_auto_tp "${_gwtrace_aotp[_gwtrace_li]}" "${_gwtrace_aotpset[_gwtrace_li]}"
    _gwtrace_acur=${_gwtrace_apar[_gwtrace_li]}
  fi
  _gwtrace_an=$_gwtrace_li
}

# The script opened a span of its own with the library (TRACEPARENT is not
# what we exported): make it the parent, into _gwtrace_ar.
_gwtrace_auto_adoptparent() {
  builtin local _gwtrace_ltp="${TRACEPARENT-}"
  [[ ${#_gwtrace_ltp} -eq 55 && $_gwtrace_ltp == 00-"$_gwtrace_atr"-* ]] || builtin return 1
  _gwtrace_ar=${_gwtrace_ltp:36:16}
  [[ $_gwtrace_ar != *[!0-9a-f]* ]]
}

# _gwtrace_auto_sync DEPTH [OFFSET]: make the frames match the shell's call
# stack (BASH_SOURCE/FUNCNAME, DEPTH frames deep; OFFSET: the stack index of
# the script's innermost frame here, 2 when our caller is the trap's): frames
# below it have returned (status: the $? the DEBUG trap saw), new ones are entered.
_gwtrace_auto_sync() {
  builtin local _gwtrace_ln="$1" _gwtrace_lo="${2:-2}" _gwtrace_lk _gwtrace_li _gwtrace_lname _gwtrace_ltop
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
        # shellcheck disable=SC2004  # an associative array (gwtrace-auto-fn.sh)
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
      builtin trap -- "$_gwtrace_aexit1" EXIT  # no need to read gwtrace-auto-extra.sh
    fi
    (( _gwtrace_a44 )) || _gwtrace_auto_retrap
  fi
  [[ $_gwtrace_asub != "$BASHPID" || $_gwtrace_arngpid != "$BASHPID" || ${GWTRACE_AUTO_OPEN-} != "$BASHPID:"* ]] \
    || _gwtrace_aown=$BASHPID
}

# --- bash < 5.2 subshells (gwtrace-auto-fn.sh, note 14) ------------------------

# The RETURN trap of such a pipeline element (_gwtrace_auto_subold), a no-op
# elsewhere (_gwtrace_apdep -1); its first simple command sees BASH_COMMAND
# (and $?, $_) as the function left them. The script's DEBUG trap must not
# run for its commands (bash 5.1 leaves BASH_COMMAND at the script's inside
# a trap, 4.x at the script's for the first one): the first is skipped
# (_gwtrace_askipx, set as the group's redirection is expanded, before any
# DEBUG run) and makes the others run busy; both are undone at its end.
# _gwtrace_aprbody: its commands, for _gwtrace_auto_rettext to put in front
# of the script's own RETURN trap (it cuts `_gwtrace_abusy -= 1, ` out of the
# last one, to stay busy until the script's text: keep those words as they are).
# shellcheck disable=SC2016  # the trap's text
_gwtrace_apdep=-1 _gwtrace_aprbody='_gwtrace_apr=$? _gwtrace_apc=$BASH_COMMAND _gwtrace_apl=$_ _gwtrace_abusy=$(( _gwtrace_abusy + 1 )); (( ${#FUNCNAME[@]} != _gwtrace_apdep )) || _gwtrace_auto_pipe_end "$_gwtrace_apc"; (( _gwtrace_abusy -= 1, _gwtrace_askipx = 0, 1 )); '
# shellcheck disable=SC2016  # the trap's text
_gwtrace_apret='{ '$_gwtrace_aprbody'} 2>&"${_gwtrace_anofd[_gwtrace_askipx = 1]--}"'

# _gwtrace_auto_subold: a subshell of bash < 5.2 that just got our EXIT trap
# (_gwtrace_auto_subenter): on 4.2 its traps as they were; when it is a
# function run as an element of a pipeline (its first command is the
# function's entry, one level deeper), a RETURN trap that ends its spans as
# that function returns. Bash 4 runs no EXIT trap there; 5.0 and 5.1 run it
# with the $? of before a `return N` and make that the element's status
# (PIPESTATUS 0 for `return 3`): ours goes.
_gwtrace_auto_subold() {
  builtin local _gwtrace_li=1                   # the script's frame: past ours
  (( _gwtrace_a44 )) || _gwtrace_auto_retrap
  while [[ ${FUNCNAME[_gwtrace_li]-} == _gwtrace_* ]]; do _gwtrace_li=$((_gwtrace_li + 1)); done
  (( _gwtrace_ad >= 0 && ${#FUNCNAME[@]} - _gwtrace_li == _gwtrace_ad + 1 )) && [[ ${FUNCNAME[_gwtrace_li]-} == "$_gwtrace_dw" ]] || builtin return 0
  _gwtrace_apdep=$(( ${#FUNCNAME[@]} - _gwtrace_li ))
  (( BASH_VERSINFO[0] < 5 )) || builtin trap - EXIT
  # A RETURN trap of the script's has ours in front already (gwtrace-auto-extra.sh's
  # _gwtrace_auto_rettext): bash puts back, as this slow path returns, the
  # RETURN trap it had when called (execute_function: a DEBUG trap runs).
  [[ -n ${_gwtrace_aurset-} ]] || builtin trap -- "$_gwtrace_apret" RETURN
}

# _gwtrace_auto_retrap: bash < 4.4 frees every trap string the first time a
# subshell sets a trap (trap.def: SUBSHELL_RESETTRAP, free_trap_strings; 4.4
# keeps DEBUG, ERR, RETURN and EXIT), ours for its EXIT included: the DEBUG
# trap in force (ours, the script's chained) and the script's RETURN trap go
# back, its ERR trap under errtrace only (bash keeps it in a subshell only then).
# Set from here, the RETURN trap fires as our functions return: the script's
# text alone becomes the one with ours in front, which skips them.
_gwtrace_auto_retrap() {
  [[ -z $_gwtrace_audbg${_gwtrace_audx-} ]] || builtin trap -- "$_gwtrace_audbg${_gwtrace_audx-}" DEBUG
  [[ -z ${_gwtrace_aurset-} ]] || { [[ -z ${_gwtrace_aurraw-} ]] || _gwtrace_auto_rettext; builtin trap -- "$_gwtrace_aurx" RETURN; }
  [[ -z ${_gwtrace_aueset-} || $- != *E* ]] || builtin trap -- "$_gwtrace_aue" ERR
}

# _gwtrace_auto_pipe_end COMMAND: the RETURN trap of _gwtrace_auto_subold, as
# the function returns: this process's frames end, at their true time, with
# its status, and the layer stays busy (the process exits next; a RETURN
# trap of the script's, chained after ours, is all that runs). The status
# is the trap's $? (_gwtrace_apr) unless the function ran `return N`: bash
# jumps out before N becomes $?, and BASH_COMMAND (COMMAND) is then that
# `return`: a literal N is read, anything else is ok with
# gwtrace.status.unknown.
_gwtrace_auto_pipe_end() {
  # (the status into a local: the trap gives the script's RETURN trap, after
  # this, the $? it has untraced: that of before the `return`)
  builtin local _gwtrace_audbg='' _gwtrace_ln="$_gwtrace_an" _gwtrace_lr="${1#return }" _gwtrace_lst="$_gwtrace_apr"
  (( ++_gwtrace_abusy ))
  if [[ $1 == 'return '* ]]; then
    if [[ $_gwtrace_lr == [0-9]* && $_gwtrace_lr != *[!0-9]* && ${#_gwtrace_lr} -le 9 ]]; then
      _gwtrace_lst=$(( 10#$_gwtrace_lr & 255 ))
    else
      _gwtrace_lst=$'ok\tgwtrace.status.unknown=true'
    fi
  fi
  while (( _gwtrace_ln > 0 )) && [[ ${_gwtrace_apid[_gwtrace_ln-1]} == "$BASHPID" ]]; do _gwtrace_ln=$((_gwtrace_ln - 1)); done
  _gwtrace_auto_exit_frames "$_gwtrace_lst"
  _gwtrace_an=$_gwtrace_ln _gwtrace_aown=''        # and busy from now on: the process ends
  # ... but for a RETURN trap of the script's, after ours: the script's
  # DEBUG trap alone from here (or none), which runs for it as untraced
  # (gwtrace-auto-extra.sh's _gwtrace_auto_rettext keeps the rest of ours busy)
  [[ -n ${_gwtrace_aurset-} ]] || builtin return 0
  _gwtrace_auto_dbgtext
  if [[ -n $_gwtrace_ar ]]; then builtin trap -- "$_gwtrace_ar" DEBUG; else builtin trap - DEBUG; fi
  (( _gwtrace_abusy -= 1, 1 ))
}

# A sourced file that runs no command (it only defines functions) gives the
# DEBUG trap nothing to see inside it: before `source`/`.` the depth and time
# are kept and the next command takes the slow path (_gwtrace_ad = -1); if
# the depth is then the same, the file ran nothing: its span is written there,
# named after $_ (the file, as expanded, the last argument of `source`).
_gwtrace_auto_src_begin() {
  builtin local _gwtrace_la="${BASH_COMMAND#* }"
  _gwtrace_auto_now
  # one argument (`source $(dirname "$0")/lib.sh` is one too): $_ will be the file
  [[ $_gwtrace_la == *[[:space:]]* ]] && ! _gwtrace_auto_one_word "$_gwtrace_la" || _gwtrace_la=
  _gwtrace_aspend="$(( ${#FUNCNAME[@]} - 3 )) $_gwtrace_ad $BASHPID $_gwtrace_at ${_gwtrace_la%%[[:space:]]*}"
  _gwtrace_ad=-1
  _gwtrace_auto_mode
}

# _gwtrace_auto_one_word TEXT: true if TEXT, a command's arguments as bash
# shows them, is one shell word: no blank outside quotes, $(...), ${...} and
# backquotes. Only for a `source` whose arguments hold a blank.
_gwtrace_auto_one_word() {
  builtin local _gwtrace_lt="$1" _gwtrace_li _gwtrace_lc _gwtrace_lq='' _gwtrace_ld=0
  for (( _gwtrace_li = 0; _gwtrace_li < ${#_gwtrace_lt}; _gwtrace_li++ )); do
    _gwtrace_lc=${_gwtrace_lt:_gwtrace_li:1}
    if [[ $_gwtrace_lq == "'" ]]; then
      [[ $_gwtrace_lc != "'" ]] || _gwtrace_lq=''
      continue
    fi
    case $_gwtrace_lc in
      \\) _gwtrace_li=$((_gwtrace_li + 1)) ;;
      "'") [[ -n $_gwtrace_lq || $_gwtrace_ld -gt 0 ]] || _gwtrace_lq="'" ;;
      '"') if [[ $_gwtrace_lq == '"' ]]; then _gwtrace_lq=''; else _gwtrace_lq='"'; fi ;;
      '$') [[ ${_gwtrace_lt:_gwtrace_li+1:1} != [\(\{] ]] || { _gwtrace_ld=$((_gwtrace_ld + 1)) _gwtrace_li=$((_gwtrace_li + 1)); } ;;
      ')'|'}') (( _gwtrace_ld == 0 )) || _gwtrace_ld=$((_gwtrace_ld - 1)) ;;
      '`') (( _gwtrace_ld == 0 )) && _gwtrace_ld=1 || _gwtrace_ld=0 ;;
      [[:space:]]) [[ -z $_gwtrace_lq && $_gwtrace_ld -eq 0 ]] && builtin return 1 ;;
    esac
  done
  builtin return 0
}

# _gwtrace_auto_src_done FILE: after the command that followed a `source`.
_gwtrace_auto_src_done() {
  builtin local _gwtrace_lt=$'\t' _gwtrace_lp="$_gwtrace_aspend" _gwtrace_lf="$1" _gwtrace_ldep _gwtrace_lpid _gwtrace_lts _gwtrace_lcut
  _gwtrace_ldep=${_gwtrace_lp%% *} _gwtrace_lp=${_gwtrace_lp#* } _gwtrace_ad=${_gwtrace_lp%% *} _gwtrace_lp=${_gwtrace_lp#* }
  _gwtrace_lpid=${_gwtrace_lp%% *} _gwtrace_lp=${_gwtrace_lp#* } _gwtrace_lts=${_gwtrace_lp%% *} _gwtrace_lp=${_gwtrace_lp#* }
  _gwtrace_aspend=''
  _gwtrace_auto_mode
  [[ -z $_gwtrace_lp ]] || { _gwtrace_lf=${_gwtrace_lp//[\"\']/}; [[ $_gwtrace_lf != *[\$\`]* ]] || _gwtrace_lf=${_gwtrace_lf##*/}; }
  (( ${#FUNCNAME[@]} - 3 == _gwtrace_ldep )) && [[ -n $_gwtrace_lf && $_gwtrace_lpid == "$BASHPID" ]] || builtin return 0
  _gwtrace_auto_id
  _gwtrace_auto_now
  [[ $_gwtrace_lf == *[$'\\\t\n\r']* ]] && { _gwtrace_auto_esc "$_gwtrace_lf"; _gwtrace_lf=$_gwtrace_ar; _gwtrace_auto_id; }
  _gwtrace_lcut=$_gwtrace_lf
  (( ${#_gwtrace_lcut} <= 1000 )) || { _gwtrace_auto_extra; _gwtrace_auto_cut _gwtrace_lcut; }
  _gwtrace_auto_emit "gw1${_gwtrace_lt}B${_gwtrace_lt}${_gwtrace_lts}${_gwtrace_lt}${BASHPID}${_gwtrace_lt}${_gwtrace_atr}${_gwtrace_lt}${_gwtrace_ar}${_gwtrace_lt}${_gwtrace_acur:--}${_gwtrace_lt}0${_gwtrace_lt}${_gwtrace_afl}${_gwtrace_lt}${_gwtrace_ats:--}${_gwtrace_lt}source ${_gwtrace_lf##*/}${_gwtrace_lt}gwtrace.kind=source${_gwtrace_lt}code.file.path=${_gwtrace_lcut}"
  _gwtrace_auto_emit "gw1${_gwtrace_lt}E${_gwtrace_lt}${_gwtrace_at}${_gwtrace_lt}${BASHPID}${_gwtrace_lt}${_gwtrace_atr}${_gwtrace_lt}${_gwtrace_ar}${_gwtrace_lt}${_gwtrace_arc}"
}

# Whether the script itself wants functrace (_gwtrace_auT): a DEBUG or RETURN
# trap of the script's runs in the functions it calls only then (bash looks
# at functrace when a function is entered). A `set` or `shopt` may change it
# (`set +eET`, `set "-$flags"`, `shopt -s extdebug`): one that may (its text
# names T, functrace or extdebug, or expands something; not `set -- ...`,
# which only sets the arguments) runs with functrace
# as the script has it, and at the next command (it takes the slow path) $-
# tells; functrace is then turned back on for our trap. Not $_, the set's
# last argument: a `set -T` that ends a function leaves $_ to the call.
_gwtrace_auto_functrace() {
  [[ -z $_gwtrace_asetpend ]] || builtin return 0
  _gwtrace_asetpend="$_gwtrace_ad" _gwtrace_ad=-1 _gwtrace_asetoff=''
  _gwtrace_auto_mode
  if [[ -z $_gwtrace_auT && $BASH_COMMAND != set\ --* && ( $BASH_COMMAND == *[T\$\`\'\"\\]* || $BASH_COMMAND == *functrace* || $BASH_COMMAND == *extdebug* ) ]]; then
    _gwtrace_asetoff=1
    builtin set +T
  fi
}

# _gwtrace_auto_functrace_done: after the `set`.
_gwtrace_auto_functrace_done() {
  builtin local _gwtrace_lon="$_gwtrace_auT"
  _gwtrace_ad=$_gwtrace_asetpend _gwtrace_asetpend=''
  _gwtrace_auto_mode
  if [[ $- != *T* ]]; then
    # (the functions entered while it was on keep the script's RETURN trap)
    (( ${_gwtrace_aurT-999999} > ${_gwtrace_aurdep-0} || ${_gwtrace_aurdep-0} >= _gwtrace_ad )) || _gwtrace_aurdep=$_gwtrace_ad
    _gwtrace_auT='' _gwtrace_aurT=999999
    builtin set -T
  elif [[ -n $_gwtrace_asetoff ]]; then
    _gwtrace_auT=1 _gwtrace_aurT=$_gwtrace_ad
  fi
  # (the script's RETURN trap text as it was, if ours in front: that one
  # reads _gwtrace_aurT as it runs; installed from here, it must not fire
  # for our own functions as they return: not the script's text alone)
  [[ $_gwtrace_lon != "$_gwtrace_auT" && -n ${_gwtrace_aurset-} && -n ${_gwtrace_aurraw-} ]] || builtin return 0
  _gwtrace_auto_rettext
  builtin trap -- "$_gwtrace_aurx" RETURN
}
