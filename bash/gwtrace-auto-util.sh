# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh
#
# gwtrace-auto-util.sh - the clock and protocol escaping, for
# gwtrace-auto-fn.sh and gwtrace-auto-extra.sh. Apart, because every bash at
# the functions level reads gwtrace-auto-fn.sh, and parsing costs ~1 ms per
# 10 KB: gwtrace-auto-extra.sh is read only by the shells that need it.

_gwtrace_autil=1 _gwtrace_ar='' _gwtrace_at=''
builtin declare -gA _gwtrace_atested; _gwtrace_atested=()  # call site -> 1 tested by its caller, 0 not
_gwtrace_asrcf='' _gwtrace_asrc=()         # the source file read last, its lines
_gwtrace_atestre='(^|[[:space:](])(if|elif|while|until|!)[[:space:]]'
_gwtrace_anegre='(^|[[:space:](])![[:space:]]+$' _gwtrace_acontre='(&&|\|\||\||\\)[[:space:]]*$'
# The boot time for the bash 4 clock, as the library works it out (_gwtrace_init):
# GWTRACE_BOOT_US (the sidecar's), else the clock's seconds minus the uptime.
if [[ -n ${GWTRACE_BOOT_US-} && $GWTRACE_BOOT_US != *[!0-9]* ]]; then
  _gwtrace_aboot=$GWTRACE_BOOT_US
else
  _gwtrace_aboot=0
  if [[ -z ${EPOCHREALTIME-} ]]; then
    IFS= builtin read -r _gwtrace_at </proc/uptime || _gwtrace_at=''
    _gwtrace_at=${_gwtrace_at%% *}
    builtin printf -v _gwtrace_ar '%(%s)T' -1
    [[ $_gwtrace_at != [0-9]*.[0-9][0-9] || $_gwtrace_at == *[!0-9.]* ]] \
      || _gwtrace_aboot=$(( _gwtrace_ar * 1000000 - 10#${_gwtrace_at/./} * 10000 ))
    _gwtrace_at='' _gwtrace_ar=''
  fi
fi

# _gwtrace_auto_now: the time as seconds.microseconds into _gwtrace_at; bash 4
# has no EPOCHREALTIME: /proc/uptime (10 ms) plus the boot time.
_gwtrace_auto_now() {
  builtin local _gwtrace_lup='' _gwtrace_lus
  if [[ -n ${EPOCHREALTIME-} ]]; then
    _gwtrace_at=$EPOCHREALTIME
    builtin return 0
  fi
  IFS= builtin read -r _gwtrace_lup </proc/uptime || _gwtrace_lup=''
  _gwtrace_lup=${_gwtrace_lup%% *}
  if [[ $_gwtrace_lup == [0-9]*.[0-9][0-9] && $_gwtrace_lup != *[!0-9.]* ]]; then
    _gwtrace_lus=$(( _gwtrace_aboot + 10#${_gwtrace_lup/./} * 10000 ))
    builtin printf -v _gwtrace_at '%d.%06d' "$((_gwtrace_lus / 1000000))" "$((_gwtrace_lus % 1000000))"
  else
    builtin printf -v _gwtrace_at '%(%s)T.000000' -1
  fi
}

# _gwtrace_auto_where "LINE NAME FILE" [command]: where a span failed, as
# attributes of its E line (each after a TAB) into _gwtrace_awh: LINE and
# FILE of the call site (a function's call, or the failing command itself),
# NAME as code.function.name, or with `command` as gwtrace.failed.command
# (a command word, never its arguments). Facts the shell already has, no
# fork; the sidecar adds the stderr's last lines (gwtrace/sidecar/failure.py).
_gwtrace_auto_where() {
  builtin local _gwtrace_lline="${1%% *}" _gwtrace_lname="${1#* }" _gwtrace_lfile
  _gwtrace_lfile=${_gwtrace_lname#* } _gwtrace_lname=${_gwtrace_lname%% *} _gwtrace_awh=''
  [[ $1 == *' '*' '* && $_gwtrace_lname != source && $_gwtrace_lname != . ]] || builtin return 0   # a sourced file's span has its own code.file.path
  [[ $_gwtrace_lline == [1-9]* && $_gwtrace_lline != *[!0-9]* ]] && _gwtrace_awh+="	code.line.number=$_gwtrace_lline"
  if [[ -n $_gwtrace_lfile && $_gwtrace_lfile != environment ]]; then
    (( ${#_gwtrace_lfile} <= 1000 )) || { _gwtrace_auto_extra; _gwtrace_auto_cut _gwtrace_lfile; }
    _gwtrace_auto_esc "$_gwtrace_lfile"; _gwtrace_awh+="	code.file.path=$_gwtrace_ar"
  fi
  [[ -n $_gwtrace_lname ]] || builtin return 0
  _gwtrace_auto_esc "${_gwtrace_lname:0:255}"
  if [[ ${2-} == command ]]; then
    _gwtrace_awh+="	gwtrace.failed.command=${_gwtrace_ar##*/}"
  else
    _gwtrace_awh+="	code.function.name=$_gwtrace_ar"
  fi
  builtin return 0
}

# _gwtrace_auto_failed_cmd: the command that made the shell exit (in the
# EXIT trap BASH_COMMAND is still that command), its first word only and
# only a plain one, as gwtrace.failed.command after a TAB into _gwtrace_awh.
# Bash 5 only: before 5.0 a trap whose text holds `((` (ours) sees its own
# command there (bash's CHANGES, 5.0-rc1 d; 4.2 tested).
_gwtrace_auto_failed_cmd() {
  builtin local _gwtrace_lw="${BASH_COMMAND#"${BASH_COMMAND%%[![:space:]]*}"}"
  _gwtrace_lw=${_gwtrace_lw%%[[:space:]]*} _gwtrace_awh=''
  (( BASH_VERSINFO[0] >= 5 )) || builtin return 0
  [[ -n $_gwtrace_lw && $_gwtrace_lw != *[!A-Za-z0-9_./+:@%-]* ]] || builtin return 0
  _gwtrace_awh="	gwtrace.failed.command=${_gwtrace_lw##*/}"
}

# _gwtrace_auto_esc TEXT: protocol escaping into _gwtrace_ar.
_gwtrace_auto_esc() {
  _gwtrace_ar=$1
  if [[ $_gwtrace_ar == *[$'\\\t\n\r']* ]]; then
    builtin local _gwtrace_lbs=\\
    _gwtrace_ar=${_gwtrace_ar//"$_gwtrace_lbs"/"$_gwtrace_lbs$_gwtrace_lbs"}
    _gwtrace_ar=${_gwtrace_ar//$'\t'/"${_gwtrace_lbs}t"}
    _gwtrace_ar=${_gwtrace_ar//$'\n'/"${_gwtrace_lbs}n"}
    _gwtrace_ar=${_gwtrace_ar//$'\r'/"${_gwtrace_lbs}r"}
  fi
}

# _gwtrace_auto_top_uuid: gwtrace-auto-top.sh's span id when the counter ran
# out (or there is no prefix), from a kernel uuid, into _gwtrace_atsp ('' if
# none could be read).
_gwtrace_auto_top_uuid() {
  IFS= builtin read -r _gwtrace_atsp </proc/sys/kernel/random/uuid || _gwtrace_atsp=''
  _gwtrace_atsp=${_gwtrace_atsp//-/} _gwtrace_atsp=${_gwtrace_atsp:16:16}
  [[ ${#_gwtrace_atsp} -eq 16 && $_gwtrace_atsp != *[!0-9a-f]* ]] || _gwtrace_atsp=''
}

# --- status: a failure, or a status its caller tested --------------------------
#
# Bash gives no flag for "this status is tested". What the DEBUG trap sees at
# the caller's next command: $? (the caller's view: negated by `!`, 0 after an
# `if` whose condition failed, a `while` that ended) and PIPESTATUS[0] (the
# function's or command's own status). The span keeps its own status as
# process.exit.code; it is ERROR only if nothing tested it:
#  - $? differs from PIPESTATUS[0]: `if f`, `if ! f`, `while f`, `until f`;
#  - the caller's next command reads $? (`rc=$?`, `[ $? -ne 0 ]`);
#  - the call site's text (the line of the script, read once per file, the
#    line before too when it ends with && || | or \) has the call in an
#    if/elif/while/until condition, after `!`, or before && or ||.
# Only non-zero statuses pay for this.

# _gwtrace_auto_status SITE: the E status field for the function's or
# command's own status, into _gwtrace_ast. In an EXIT trap PIPESTATUS is 0
# whatever the status: $? then, unless the call was negated (`! f`).
_gwtrace_auto_status() {
  if (( _gwtrace_aps == 0 && _gwtrace_arc != 0 )); then
    _gwtrace_auto_site "$1"
    (( _gwtrace_ar == 2 )) || _gwtrace_aps=$_gwtrace_arc
  fi
  if (( _gwtrace_aps == 0 )); then
    _gwtrace_ast=0
    builtin return 0
  fi
  if (( _gwtrace_arc == _gwtrace_aps )) && [[ $BASH_COMMAND != *'$?'* || $BASH_COMMAND == *_gwtrace_* ]]; then
    _gwtrace_auto_site "$1"
    if (( _gwtrace_ar == 0 )); then
      _gwtrace_ast=$_gwtrace_aps
      builtin return 0
    fi
  fi
  _gwtrace_ast="ok	process.exit.code=$_gwtrace_aps	gwtrace.status.tested=true"
}

# _gwtrace_auto_site "LINE NAME FILE": how the caller's text uses the call
# of NAME at LINE of FILE, into _gwtrace_ar: 0 not tested, 1 tested, 2
# tested and negated (`! NAME`). Cached per call site.
_gwtrace_auto_site() {
  builtin local _gwtrace_lsite="$1" _gwtrace_lline _gwtrace_lname _gwtrace_lfile _gwtrace_ltext _gwtrace_lpre _gwtrace_lpost _gwtrace_lprev
  _gwtrace_ar=${_gwtrace_atested[$_gwtrace_lsite]-}
  [[ -z $_gwtrace_ar ]] || builtin return 0
  _gwtrace_ar=0
  _gwtrace_lline=${_gwtrace_lsite%% *} _gwtrace_lname=${_gwtrace_lsite#* } _gwtrace_lfile=${_gwtrace_lname#* } _gwtrace_lname=${_gwtrace_lname%% *}
  [[ -n $_gwtrace_lsite && $_gwtrace_lline == [1-9]* ]] || builtin return 0
  if [[ ( -z $_gwtrace_lfile || $_gwtrace_lfile == environment ) && -n ${BASH_EXECUTION_STRING-} ]]; then
    _gwtrace_lfile=$'\n-c'                   # bash -c: its text (its functions' "file" is "environment")
    # bash < 5 numbers a -c text's lines from 0 (LINENO and BASH_LINENO alike)
    (( BASH_VERSINFO[0] >= 5 )) || _gwtrace_lline=$(( _gwtrace_lline + 1 ))
  elif [[ -z $_gwtrace_lfile || ! -r $_gwtrace_lfile ]]; then
    builtin return 0
  fi
  _gwtrace_atested[$_gwtrace_lsite]=0
  if [[ $_gwtrace_lfile != "$_gwtrace_asrcf" ]]; then
    if [[ $_gwtrace_lfile == $'\n-c' ]]; then
      builtin mapfile -t _gwtrace_asrc <<<"$BASH_EXECUTION_STRING" || builtin return 0
    else
      builtin mapfile -t _gwtrace_asrc <"$_gwtrace_lfile" || builtin return 0
    fi
    _gwtrace_asrcf=$_gwtrace_lfile
  fi
  _gwtrace_ltext=${_gwtrace_asrc[_gwtrace_lline-1]-} _gwtrace_lprev=${_gwtrace_asrc[_gwtrace_lline-2]-}
  [[ $_gwtrace_ltext == *"$_gwtrace_lname"* ]] || builtin return 0
  _gwtrace_lpre=${_gwtrace_ltext%%"$_gwtrace_lname"*} _gwtrace_lpost=${_gwtrace_ltext#*"$_gwtrace_lname"}
  if [[ $_gwtrace_lpre != *[![:space:]]* && $_gwtrace_lline -gt 1 && $_gwtrace_lprev =~ $_gwtrace_acontre ]]; then
    _gwtrace_lpre=$_gwtrace_lprev
  fi
  _gwtrace_lpre=${_gwtrace_lpre##*;} _gwtrace_lpost=${_gwtrace_lpost%%;*}
  if [[ $_gwtrace_lpre =~ $_gwtrace_anegre ]]; then
    _gwtrace_ar=2
  elif [[ $_gwtrace_lpre =~ $_gwtrace_atestre || $_gwtrace_lpost == *'&&'* || $_gwtrace_lpost == *'||'* ]]; then
    _gwtrace_ar=1
  fi
  _gwtrace_atested[$_gwtrace_lsite]=$_gwtrace_ar
}

# _gwtrace_auto_tp VALUE SET: export TRACEPARENT=VALUE (SET '': unset it) and
# remember it in _gwtrace_aexp; unless the script made it readonly (assigning
# a readonly variable, even with `export` or `|| :`, ends a bash under
# `set -e` and abandons its command without): then _gwtrace_aexp can match
# nothing, which keeps the written-out paths of _gwtrace_auto_dbg away.
# Readonly: ${TRACEPARENT@a} when it is set (bash 4.4+); when unset, or
# before 4.4, an `unset`, which fails harmlessly on a readonly variable (and
# changes nothing on an unset one). Not ${TRACEPARENT[@]@a}: bash 4.4 dies
# of it (SIGSEGV) on a readonly variable without a value.
_gwtrace_auto_tp() {
  if [[ -n ${TRACEPARENT+x} ]] && (( BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4) )); then
    if [[ ${TRACEPARENT@a} == *r* ]]; then
      _gwtrace_aexp='(readonly)'
      builtin return 0
    fi
  elif ! builtin unset -v TRACEPARENT; then
    _gwtrace_aexp='(readonly)'
    builtin return 0
  fi
  _gwtrace_aexp=$1
  if [[ -n $2 ]]; then
    builtin export TRACEPARENT="$1"
  else
    builtin unset -v TRACEPARENT
  fi
  builtin return 0
}
