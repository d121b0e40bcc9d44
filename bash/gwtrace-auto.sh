# shellcheck shell=bash
# gwtrace-auto.sh - tracing bash scripts without changing them (docs/shim.md).
# `gwtrace run` points BASH_ENV here: every bash below it reads this file,
# so it holds only the script span and the EXIT trap; the other
# gwtrace-auto-*.sh files are read by the shells that need them (notes at
# the end of this file, which bash does not read). Nothing is printed, fd 2
# is closed around everything (invisible to set -x), only _gwtrace_* names
# are used.

{
[[ -z ${_gwtrace_auto_loaded-} ]] || return 0
_gwtrace_auto_loaded=1 _gwtrace_adir=${BASH_SOURCE[0]%/*} _gwtrace_alevel=0 _gwtrace_amain=$BASHPID
_gwtrace_ar='' _gwtrace_awh='' _gwtrace_abusy=0 _gwtrace_atop='' _gwtrace_adbg='' _gwtrace_atsp='' _gwtrace_aw='' _gwtrace_aprem=0 _gwtrace_a44='' _gwtrace_a52=''
_gwtrace_atend=(_gwtrace_auto_top_end) _gwtrace_aso='' _gwtrace_apfx='' _gwtrace_actr=1999999 _gwtrace_arngpid='' _gwtrace_arng=0 _gwtrace_aroot='' _gwtrace_aadopt='' _gwtrace_aexit='' _gwtrace_auxset='' _gwtrace_audbg='' _gwtrace_acmd='' _gwtrace_apend=''
# The EXIT trap: record the status, end the spans (around a handler of the
# script's own: gwtrace-auto-extra.sh); its redirection: note 9.
# shellcheck disable=SC2016
_gwtrace_aexit0='{ (( _gwtrace_aexit = $?, ++_gwtrace_abusy )); builtin trap - DEBUG RETURN; _gwtrace_auto_exit_post; } 2>&"${_gwtrace_anofd[_gwtrace_askipx = 1]--}"'

_gwtrace_auto_extra() {
  [[ -n ${_gwtrace_aextra-} ]] || builtin source "$_gwtrace_adir/gwtrace-auto-extra.sh"
}

# The end of the EXIT trap: end the spans this process opened.
_gwtrace_auto_exit_post() {
  [[ -n $_gwtrace_aexit ]] || builtin return 0
  if (( _gwtrace_alevel >= 2 )); then
    _gwtrace_auto_exit_frames "$_gwtrace_aexit"
  elif [[ $BASHPID == "$_gwtrace_amain" && -n $_gwtrace_asp0 && -z $_gwtrace_aroot ]]; then
    [[ -z $_gwtrace_atsp ]] || "${_gwtrace_atend[@]}" "$_gwtrace_aexit"
    [[ -n ${EPOCHREALTIME-} ]] || { _gwtrace_auto_extra; _gwtrace_auto_now; }
    _gwtrace_awh=''
    if [[ $_gwtrace_aexit != 0 ]]; then       # a failure: the command that made the shell exit
      [[ -n ${_gwtrace_autil-} ]] || builtin source "$_gwtrace_adir/gwtrace-auto-util.sh"
      _gwtrace_auto_failed_cmd
    fi
    builtin printf '%s\n' "gw1	E	${EPOCHREALTIME:-$_gwtrace_at}	$BASHPID	$_gwtrace_atr	$_gwtrace_asp0	$_gwtrace_aexit$_gwtrace_awh" >>"$_gwtrace_alog" || :
    _gwtrace_asp0=''
  fi
  [[ -z $_gwtrace_atsp || $BASHPID != "$_gwtrace_amain" ]] || "${_gwtrace_atend[@]}" "$_gwtrace_aexit"
  [[ -z $_gwtrace_aadopt || $BASHPID != "$_gwtrace_amain" ]] || _gwtrace_auto_adopt_end "$_gwtrace_aexit"
  _gwtrace_aexit=''
}

# Level, event log, context (an invalid TRACEPARENT: a new trace), the script
# span (the script's basename or "bash -c"; its path, never its arguments),
# TRACEPARENT for the children, the EXIT trap; what is rare is in
# gwtrace-auto-extra.sh.
while :; do                # once: `break` ends the set-up early (note 1)
  _gwtrace_ltp=${TRACEPARENT-} _gwtrace_lu='' _gwtrace_lname=${0##*/} _gwtrace_lpath='' _gwtrace_lremote=1 _gwtrace_lacc=''
  [[ ${GWTRACE_DISABLED-} != 1 && ${OTEL_SDK_DISABLED-} != [Tt][Rr][Uu][Ee] ]] || break
  case ${GWTRACE_AUTO_LEVEL:-functions} in
    scripts) _gwtrace_alevel=1 ;; functions) _gwtrace_alevel=2 ;; commands) _gwtrace_alevel=3 ;; *) break ;;
  esac
  _gwtrace_alog=${GWTRACE_SOCKET:-${GWTRACE_DIR:+file://$GWTRACE_DIR/events.log}}
  [[ $_gwtrace_alog == file://?* ]] || { _gwtrace_alevel=0; break; }
  _gwtrace_alog=${_gwtrace_alog#file://}
  # only an event log of gwtrace's (note 8)
  if [[ -f $_gwtrace_alog ]]; then
    _gwtrace_l0=''
    # shellcheck disable=SC2015  # the read's status does not matter, the test after it does
    [[ -O $_gwtrace_alog ]] && { [[ ! -s $_gwtrace_alog ]] || { IFS= builtin read -r -N 4 _gwtrace_l0 <"$_gwtrace_alog"; [[ $_gwtrace_l0 == gw1$'\t' || ( $_gwtrace_alog == */events.log && -e ${_gwtrace_alog%/*}/sidecar.lock ) ]]; }; } \
      || { _gwtrace_alevel=0; break; }
  elif [[ -e $_gwtrace_alog || -L $_gwtrace_alog || $_gwtrace_alog != */* || ! -O ${_gwtrace_alog%/*}/ ]]; then
    _gwtrace_alevel=0; break
  fi
  IFS= builtin read -r _gwtrace_lu </proc/sys/kernel/random/uuid || _gwtrace_lu=''
  _gwtrace_lu=${_gwtrace_lu//-/}
  [[ ${#_gwtrace_lu} -eq 32 && $_gwtrace_lu != *[!0-9a-f]* ]] || { _gwtrace_auto_extra; _gwtrace_auto_hex; _gwtrace_lu=$_gwtrace_ar; }
  # TRACEPARENT by the library's rule (note 2)
  [[ ${#_gwtrace_ltp} -eq 55 && ${_gwtrace_ltp:0:3} == 00- || -z $_gwtrace_ltp ]] || { _gwtrace_auto_extra; _gwtrace_auto_tp_norm; }
  if [[ ${_gwtrace_ltp:35:1}${_gwtrace_ltp:52:1} == -- && ${_gwtrace_ltp:3:32}${_gwtrace_ltp:36:16}${_gwtrace_ltp:53:2} != *[!0-9a-f]* \
        && ${_gwtrace_ltp:3:32} == *[1-9a-f]* && ${_gwtrace_ltp:36:16} == *[1-9a-f]* ]]; then
    [[ ${_gwtrace_ltp:54:1} == [13579bdf] ]] || { _gwtrace_alevel=0; break; }   # not sampled: nothing to record
    _gwtrace_atr=${_gwtrace_ltp:3:32} _gwtrace_abase=${_gwtrace_ltp:36:16} _gwtrace_afl=0$(( 16#${_gwtrace_ltp:54:1} & 3 )) _gwtrace_ats=${TRACESTATE-}
  else
    _gwtrace_atr=$_gwtrace_lu _gwtrace_abase='' _gwtrace_afl=01 _gwtrace_ats='' _gwtrace_lremote=0
    IFS= builtin read -r _gwtrace_lu </proc/sys/kernel/random/uuid || _gwtrace_lu=''
    _gwtrace_lu=${_gwtrace_lu//-/}
  fi
  _gwtrace_l0=$0 _gwtrace_lv=$(( BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] ))   # 502 for bash 5.2
  (( _gwtrace_lv >= 502 )) || [[ -n ${BASH_EXECUTION_STRING+x} ]] \
    || { builtin source "$_gwtrace_adir/gwtrace-auto-argv.sh" && _gwtrace_auto_argv; }   # $0 is bash's before 5.2
  if [[ -n ${BASH_EXECUTION_STRING+x} ]]; then
    _gwtrace_lname="${BASH##*/} -c" _gwtrace_abd=0     # $0 is the first argument after CMD: never a name
  elif [[ -n $_gwtrace_l0 && $_gwtrace_l0 != "$BASH" && -f $_gwtrace_l0 ]]; then   # `/bin/bash <x`: $0 is bash
    _gwtrace_lpath=$_gwtrace_l0 _gwtrace_lname=${_gwtrace_l0##*/} _gwtrace_abd=1
    [[ $_gwtrace_lpath == /* ]] || _gwtrace_lpath=$PWD/${_gwtrace_lpath#./}
  else
    _gwtrace_lname+=" -s" _gwtrace_abd=0
  fi
  [[ $_gwtrace_lname$_gwtrace_lpath$_gwtrace_ats$_gwtrace_lu == *[$'\\\t\n\r']* || -z ${EPOCHREALTIME-} || ${GWTRACE_AUTO_OPEN%%:*} == "$$" ]] \
    && _gwtrace_auto_extra && _gwtrace_auto_slow_start
  (( ${#_gwtrace_lpath} <= 1000 )) || { _gwtrace_auto_extra; _gwtrace_auto_cut _gwtrace_lpath; }
  [[ -z $_gwtrace_lpath ]] || _gwtrace_lpath="	code.file.path=$_gwtrace_lpath"
  _gwtrace_asp0=${_gwtrace_lu:0:16} _gwtrace_aotp0=${TRACEPARENT-} _gwtrace_aotpset0=${TRACEPARENT+1}
  # The ids of the spans this process opens next (note 3)
  if [[ ${#_gwtrace_lu} -eq 32 && $_gwtrace_lu != *[!0-9a-f]* ]]; then
    _gwtrace_apfx=${_gwtrace_lu:17:10} _gwtrace_actr=1000000 _gwtrace_arngpid=$BASHPID _gwtrace_arng=$(( 16#${_gwtrace_lu:17:15} ))
  fi
  (( _gwtrace_lv >= 404 )) && _gwtrace_a44=1
  (( _gwtrace_lv >= 502 )) && _gwtrace_a52=1
  # the accelerator: only the copy the load check verified for this bash binary (note 7)
  _gwtrace_aso=$_gwtrace_adir/gwtrace-accel.d/gwa1_$BASH_VERSION${BASH//\//%}.so
  if [[ ${GWTRACE_ACCEL-} == 0 ]]; then
    _gwtrace_aso=''
  elif [[ $_gwtrace_aso -nt $BASH || $_gwtrace_aso -ot $BASH ]]; then
    _gwtrace_aso='' && [[ ! -f $_gwtrace_adir/gwtrace-accel.so ]] || _gwtrace_lacc='	gwtrace.accel=unverified'
  fi
  if [[ ${GWTRACE_AUTO_ROOT-} == "$PPID:$_gwtrace_abase" && -n $_gwtrace_abase ]]; then
    _gwtrace_auto_extra; _gwtrace_auto_root_start   # `gwtrace run` ran this script
  else
    builtin printf '%s\n' "gw1	B	${_gwtrace_at:-$EPOCHREALTIME}	$BASHPID	$_gwtrace_atr	$_gwtrace_asp0	${_gwtrace_abase:--}	$_gwtrace_lremote	$_gwtrace_afl	${_gwtrace_ats:--}	$_gwtrace_lname	gwtrace.kind=script	process.pid=$$$_gwtrace_lpath$_gwtrace_lacc" >>"$_gwtrace_alog" || :
    builtin export GWTRACE_AUTO_OPEN="$BASHPID:$_gwtrace_atr,$_gwtrace_asp0" TRACEPARENT="00-$_gwtrace_atr-$_gwtrace_asp0-$_gwtrace_afl" || :
  fi
  [[ $_gwtrace_asp0 != "$_gwtrace_abase" ]] || _gwtrace_aprem=1   # a child of the script span is remote when the script span is
  builtin trap -- "$_gwtrace_aexit0" EXIT
  if (( _gwtrace_alevel == 1 && _gwtrace_abd == 1 )) && [[ $- != *T* ]]; then
    # functions called from the script's top level: in C where the accelerator loads (note 7)
    if [[ -n $_gwtrace_aso ]] && builtin enable -f "$_gwtrace_aso" _gwtrace_atopc; then
      # shellcheck disable=SC2016  # the trap's text
      builtin declare -gA _gwtrace_atw && _gwtrace_atw=() _gwtrace_atl='' _gwtrace_atn='' _gwtrace_atotp='' _gwtrace_atotpset='' _gwtrace_atop='{ _gwtrace_atopc "$_"; } 2>&-' _gwtrace_atend=(_gwtrace_atopc --end) && _gwtrace_adbg=$_gwtrace_atop
    else
      # shellcheck source=gwtrace-auto-top.sh
      builtin source "$_gwtrace_adir/gwtrace-auto-top.sh" || :
    fi
  elif (( _gwtrace_alevel >= 2 )); then
    # shellcheck source=gwtrace-auto-fn.sh
    builtin source "$_gwtrace_adir/gwtrace-auto-fn.sh" || _gwtrace_alevel=1
  fi
  break
done
builtin unset _gwtrace_ltp _gwtrace_lu _gwtrace_lname _gwtrace_lpath _gwtrace_lremote _gwtrace_l0 _gwtrace_lv _gwtrace_lacc

# The script's `trap` (note 4): gwtrace-auto-extra.sh's _gwtrace_auto_trap_cmd.
trap() {
  { (( ++_gwtrace_abusy )); [[ -z ${_gwtrace_aurset-} ]] || { builtin trap - RETURN; _gwtrace_apend=1; }; _gwtrace_auto_extra; } 2>&-
  { _gwtrace_auto_trap_cmd "$@"; } 203>&2 2>&-
}
(( _gwtrace_alevel > 0 )) || builtin unset -f trap
# Last: the DEBUG trap, so that it runs for the script's commands only.
[[ -z $_gwtrace_adbg ]] || builtin trap -- "$_gwtrace_adbg" DEBUG
if [[ -z ${GWTRACE_AUTO_BASH_ENV-} ]]; then return 0; fi   # $? 0 (note 6); before the script: no function of its yet
} 2>&-

# Only with GWTRACE_AUTO_BASH_ENV set (note 5).
# shellcheck source=gwtrace-auto-benv.sh
{ _gwtrace_abenvfd=203; builtin source "$_gwtrace_adir/gwtrace-auto-benv.sh"; } 203>&2 2>&-
# shellcheck source=gwtrace-auto-benv.sh
{ [[ -n ${_gwtrace_adone-} ]] || { _gwtrace_abenvfd=-; builtin source "$_gwtrace_adir/gwtrace-auto-benv.sh"; }; } 2>&-

# --- Notes ------------------------------------------------------------------
# Every bash below `gwtrace run` reads this file before its script, and
# parses what it reads: ~450 instructions a byte of code, ~120 a byte of
# comment, and a function costs a copy of its body when it is defined and at
# each call. So this file holds what every traced bash runs, and explains
# itself here, where bash stops reading: the group above returns unless the
# user had a BASH_ENV of their own (GWTRACE_AUTO_BASH_ENV). The rest is read
# by the shells that need it: gwtrace-auto-top.sh (the scripts level's spans
# of top-level function calls), gwtrace-auto-fn.sh (function spans; its
# rarer half in gwtrace-auto-frames.sh), gwtrace-auto-cmd.sh (command spans,
# at the commands level), gwtrace-auto-extra.sh (the script's `trap`, exec,
# bash 4, escaping, an unusual TRACEPARENT, a BASH_ENV of the user's). All of
# it runs in one group with fd 2 closed: a redirection costs a dozen system
# calls, and a VM's system calls cost microseconds each.
#
# 1. The set-up is a loop that runs once rather than a function: it runs once
#    per process, and a function would cost two copies of its body. Its
#    scratch variables (_gwtrace_l*, read by gwtrace-auto-extra.sh's
#    _gwtrace_auto_slow_start and _gwtrace_auto_root_start) are unset after.
#    It is written for the common case: bash 5, a TRACEPARENT as this layer
#    writes it, `gwtrace run` not the parent. Event lines have literal TABs
#    between their fields.
#
# 2. TRACEPARENT: the library's rule (_gwtrace_read_context;
#    bats/auto_truth.bats compares them): version 00 and 55 characters here,
#    anything else through _gwtrace_auto_tp_norm; lower-case hex, ids not all
#    zero. An invalid one starts a new trace; one not sampled records nothing.
#
# 3. Span ids: the next spans of this process get a 40-bit prefix from the
#    digits of the uuid the script span left unused (17-31: random in a v4
#    uuid), then a counter (gwtrace-auto-frames.sh's _gwtrace_auto_id).
#
# 4. The script's `trap` is a function: gwtrace-auto-extra.sh has its
#    emulation (_gwtrace_auto_trap_cmd: here only a call, as most scripts
#    never call `trap`). The script's RETURN trap goes first: it must not
#    fire for our functions. Every command of ours in it runs with fd 2 closed;
#    fd 203 carries the script's stderr for bash's own messages. Installing
#    the script's DEBUG trap is its last command: nothing of ours runs after.
#
# 5. With GWTRACE_AUTO_BASH_ENV set: the user's own BASH_ENV, with the
#    script's stderr if it has one (if it has none, `203>&2` fails and the
#    first line does not run).
#
# 6. The test that ends the file leaves $? and PIPESTATUS at 0: under
#    `bash -c` the script's first command comes next, and the DEBUG trap's
#    slow path takes them for the status a function returned (a non-zero one
#    reads gwtrace-auto-util.sh to find out whether it was tested).
#
# 7. The accelerator (bash/gwtrace-accel.so, docs/shim.md): the DEBUG traps'
#    common slow paths as loadable builtins, loaded with `enable -f` only
#    from the copy the load check (gwtrace/shim/accel.py, run by `gwtrace
#    run` in a child of this very bash binary) verified: named with the
#    library stamp these files were written for (gwa1, bash/accel/shellvars.h),
#    this bash's version and $BASH, and carrying $BASH's mtime, which the
#    two tests compare (four stat calls, no fork). None (a bash no check saw,
#    one replaced since, another stamp): the shell code, and the script span
#    says gwtrace.accel=unverified (the sidecar counts it) when a library was
#    shipped. GWTRACE_ACCEL=0 turns it off. _gwtrace_aso names the copy for
#    gwtrace-auto-fn.sh too. At the scripts level _gwtrace_atopc does what
#    gwtrace-auto-top.sh does in its common cases, so that file is read only
#    when a status has to be judged; _gwtrace_atend says who ends a pending
#    top-level span (at exit, or when the script sets its own DEBUG trap).
#    Its text is guarded with fd 2 closed, as the shell's, for `bash -x`.
#
# 8. The event log is written only if it is gwtrace's, by the library's rule
#    (bash/gwtrace.sh _gwtrace_is_log): a regular file of this user's, empty
#    or starting with "gw1<TAB>", or none yet in a directory of this user's.
#    A FIFO would block the script at its first append; a file of someone
#    else's (a copy of /etc/passwd) would get lines appended. Once per
#    process: a stat or two and a 4-byte read; the accelerator writes to
#    _gwtrace_alog only when this set-up kept the level.
#
# 9. The EXIT trap's redirection, which bash expands before the group's
#    first command and the DEBUG trap it runs for that command, tells the
#    script's own DEBUG trap (chained after ours: gwtrace-auto-extra.sh) to
#    skip that command: bash 5 leaves BASH_COMMAND at the script's last
#    command in a trap (running_trap; 4.x showed the `((`), so that trap
#    would otherwise run once more at exit. Ours runs there as before.
#    (_gwtrace_anofd is never set: "-", fd 2 closed).
