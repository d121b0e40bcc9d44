# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh
#
# gwtrace-auto-extra.sh - what only some shells need, read by gwtrace-auto.sh
# when one does: the script's `trap` (its first call), the end of the spans of
# a bash that `exec`ed into this one, a subshell's EXIT trap.
#
# `trap` is a function here, and bash scopes DEBUG, RETURN and ERR traps to
# functions: inside one, `trap -p DEBUG` shows nothing, `trap - ERR` is undone
# when it returns, and a RETURN trap set in it fires when it returns. So the
# script's traps are kept in _gwtrace_au{x,d,e,r} (string + "set" flag); EXIT
# goes through _gwtrace_auto_exit_install (the script's handler between the
# two halves of ours); DEBUG, RETURN and the removal of ERR are applied by a
# one-shot DEBUG trap that `trap` installs as its very last command: it runs
# before the script's next command, in the script's own context, and runs the
# script's new DEBUG trap for that command too (it would have run there). If
# the script sets a DEBUG trap, ours runs it after our own, for the script's
# commands only (_gwtrace_auto_dbgtext); a RETURN trap is taken off while our
# `trap` and EXIT handler run their functions.

_gwtrace_aextra=1
# shellcheck source=gwtrace-auto-util.sh
[[ -n ${_gwtrace_autil-} ]] || builtin source "$_gwtrace_adir/gwtrace-auto-util.sh"
_gwtrace_aux='' _gwtrace_auxpid='' _gwtrace_atrc=0 _gwtrace_aoneshot=''
# shellcheck disable=SC2016
# (a call first: busy from its arguments on, which bash expands after the
# DEBUG trap it runs for the call; that trap sees BASH_COMMAND as the
# handler's first command would, where bash 4 shows a `((` as the command)
_gwtrace_aexit_pre='{ _gwtrace_auto_exit_pre "$?" "$(( ++_gwtrace_abusy ))" "$_" && : "$_"; } 2>&-'
# shellcheck disable=SC2016
# (busy from the redirection on, which bash expands before the group's first
# command and its DEBUG trap: the script's DEBUG trap does not run for ours)
_gwtrace_aexit_post='{ builtin trap - DEBUG RETURN; _gwtrace_auto_exit_post; } 2>&"${_gwtrace_anofd[++_gwtrace_abusy]--}"'
_gwtrace_aud='' _gwtrace_audset='' _gwtrace_aue='' _gwtrace_aueset='' _gwtrace_aur='' _gwtrace_aurset='' _gwtrace_aurx='' _gwtrace_aurw='' _gwtrace_aurraw='' _gwtrace_aurdep=0 _gwtrace_audl=-1 _gwtrace_audsl=0 _gwtrace_audoff=999999 _gwtrace_audk='' _gwtrace_audon=1 _gwtrace_audsv='' _gwtrace_audsvset='' _gwtrace_audsvoff='' _gwtrace_askipx=0 _gwtrace_audx=''
# (_gwtrace_aurT: gwtrace-auto-fn.sh sets it, to 0, when the script starts with functrace on)
_gwtrace_aurT=${_gwtrace_aurT-999999} _gwtrace_arv=0
_gwtrace_asigs=()
# (after the script's DEBUG trap run by an eval, _gwtrace_auto_dbgtext: its
# $_, which the eval's own would replace; not in the trap's text, whose
# lines LINENO counts)
# shellcheck disable=SC2016
_gwtrace_alk=$'\n''{ builtin printf -v _gwtrace_al %s "$_"; } 2>&-'
_gwtrace_ar='' _gwtrace_at=''
# bash < 4.4 leaves the functions of a -c or -s script, and imported ones,
# out of BASH_SOURCE: the DEBUG trap's texts count FUNCNAME there
# (gwtrace-auto-fn.sh, note 13; this file is read at the start on bash 4)
# shellcheck disable=SC2016
_gwtrace_abs='${#BASH_SOURCE[@]}' _gwtrace_adx='$(( ${FUNCNAME+${#FUNCNAME[@]}+0*}${#BASH_SOURCE[@]} ))'

# _gwtrace_auto_hex: 32 random hex digits into _gwtrace_ar (a kernel uuid,
# read without forking; the clock, pid and SRANDOM if there is none).
_gwtrace_auto_hex() {
  builtin local _gwtrace_lu=''
  IFS= builtin read -r _gwtrace_lu </proc/sys/kernel/random/uuid || _gwtrace_lu=''
  _gwtrace_lu=${_gwtrace_lu//-/}
  if [[ ${#_gwtrace_lu} -ne 32 || $_gwtrace_lu == *[!0-9a-f]* ]]; then
    _gwtrace_auto_now
    builtin printf -v _gwtrace_lu '%016x%016x' "$(( ${_gwtrace_at//[!0-9]/} * 2654435761 ^ BASHPID << 32 ))" \
      "$(( (${SRANDOM:-7} << 20 ^ BASHPID) | 1 ))"
  fi
  _gwtrace_ar=$_gwtrace_lu
}

# _gwtrace_auto_cut NAME: cut the variable NAME to its first 1000 characters,
# counted as under UTF-8 whatever the locale, as the library cuts (its
# _gwtrace_fit and _gwtrace_chars): under LC_ALL=C (common on worker nodes)
# bash counts bytes, and ${v:0:1000} could end inside a character. A value
# that was escaped does not end inside an escape: an odd trailing backslash
# is dropped. Called only for a value longer than 1000 (bytes or characters).
_gwtrace_auto_cut() {
  builtin local _gwtrace_le=$'\xc3\xa9' _gwtrace_ll
  if [[ ${!1} == *[![:ascii:]]* ]] && (( ${#_gwtrace_le} != 1 )); then
    # shellcheck disable=SC2034  # LC_ALL: for bash's lengths in this function
    builtin local LC_ALL=C.UTF-8 || :
    for _gwtrace_ll in C.UTF-8 C.utf8 en_US.UTF-8 en_US.utf8; do
      LC_ALL=$_gwtrace_ll 2>&-
      (( ${#_gwtrace_le} != 1 )) || break
    done
  fi
  builtin printf -v "$1" '%s' "${!1:0:1000}"
  _gwtrace_ll=${!1##*[!\\]}
  (( ${#_gwtrace_ll} % 2 == 0 )) || builtin printf -v "$1" '%s' "${!1%\\}"
}

# A bash started by `exec` from a traced bash has its pid: it takes over the
# spans that bash left open (GWTRACE_AUTO_OPEN is "pid:trace,span,span..."),
# ends them when it exits, with its own exit status (the process's), after
# its own spans, which are their children (process.exec=true).
_gwtrace_auto_adopt() {
  builtin local _gwtrace_lopen="${GWTRACE_AUTO_OPEN-}" _gwtrace_lids _gwtrace_ltr
  [[ ${_gwtrace_lopen%%:*} == "$$" ]] || builtin return 0
  _gwtrace_lopen=${_gwtrace_lopen#*:} _gwtrace_ltr=${_gwtrace_lopen%%,*} _gwtrace_lids=${_gwtrace_lopen#*,}
  [[ ${#_gwtrace_ltr} -eq 32 && $_gwtrace_ltr != *[!0-9a-f]* && $_gwtrace_lopen == *,* ]] || builtin return 0
  [[ $_gwtrace_lids != *[!0-9a-f,]* ]] && _gwtrace_aadopt="$_gwtrace_ltr,$_gwtrace_lids"
}

# _gwtrace_auto_adopt_end STATUS: end the spans taken over, innermost first.
_gwtrace_auto_adopt_end() {
  builtin local _gwtrace_lids="${_gwtrace_aadopt#*,}" _gwtrace_ltr="${_gwtrace_aadopt%%,*}" _gwtrace_lspan _gwtrace_lt=$'\t'
  _gwtrace_aadopt=''
  _gwtrace_auto_now
  while [[ -n $_gwtrace_lids ]]; do
    _gwtrace_lspan=${_gwtrace_lids##*,}
    if [[ $_gwtrace_lids == *,* ]]; then _gwtrace_lids=${_gwtrace_lids%,*}; else _gwtrace_lids=''; fi
    [[ ${#_gwtrace_lspan} -eq 16 ]] || continue
    builtin printf '%s\n' "gw1${_gwtrace_lt}E${_gwtrace_lt}${_gwtrace_at}${_gwtrace_lt}$$${_gwtrace_lt}${_gwtrace_ltr}${_gwtrace_lt}${_gwtrace_lspan}${_gwtrace_lt}$1${_gwtrace_lt}process.exec=true" >>"$_gwtrace_alog" || :
  done
}

# _gwtrace_auto_exit_pre STATUS BUSY LASTARG: the first half of the EXIT
# trap: returns the exit status, so that the script's handler sees $? (and
# $_) as they were.
_gwtrace_auto_exit_pre() {
  _gwtrace_aexit=$1
  [[ -z $_gwtrace_auxset ]] || _gwtrace_auto_exit_shim
  # The script's DEBUG trap ran before our first command, where it runs
  # before the handler's first one untraced: not again for our `: "$_"` (run
  # on status 0) and the handler's first command.
  [[ -z $_gwtrace_audx ]] || _gwtrace_askipx=$(( _gwtrace_aexit ? 1 : 2 ))
  _gwtrace_abusy=0
  builtin return "$_gwtrace_aexit"
}

# Our EXIT trap, with the script's own handler (if any) between our two parts:
# the first records the exit status (and gives the handler $? and $_ as they
# were), the second ends the spans after the handler (or in `exit`, if the
# handler calls it). The handler starts on line 1, as it would.
_gwtrace_auto_exit_install() {
  if [[ -n $_gwtrace_auxset && $_gwtrace_auxpid == "$BASHPID" ]]; then
    builtin trap -- "$_gwtrace_aexit_pre; $_gwtrace_aux"$'\n'"$_gwtrace_aexit_post" EXIT
  else
    builtin trap -- "$_gwtrace_aexit_pre"$'\n'"$_gwtrace_aexit_post" EXIT
  fi
}

# exit, while the script's EXIT handler runs: record the status it gives.
# `exit` without a status in a trap handler exits (bash 5) with the status
# the shell had when the trap began, which bash keeps in one place that
# running our DEBUG trap overwrites: that status is given explicitly.
_gwtrace_auto_exit_now() {
  builtin local _gwtrace_lrc="$1" _gwtrace_lsaved="$_gwtrace_aexit"
  (( ++_gwtrace_abusy ))
  builtin trap - RETURN
  builtin shift
  if [[ ${1-} == -- ]]; then _gwtrace_auto_exit_arg "${2-}"; else _gwtrace_auto_exit_arg "${1-}"; fi
  _gwtrace_auto_exit_post
  if [[ $# -eq 0 || ( $# -eq 1 && $1 == -- ) ]] && (( BASH_VERSINFO[0] >= 5 )) && [[ -n $_gwtrace_lsaved ]]; then
    _gwtrace_auto_rc "$_gwtrace_lrc"
    builtin exit "$_gwtrace_lsaved"
  fi
  _gwtrace_auto_rc "$_gwtrace_lrc"
  builtin exit "$@"
}

_gwtrace_auto_rc() {
  builtin return "$1"
}

# _gwtrace_auto_exit_arg ARG: the status `exit ARG` gives, into _gwtrace_aexit
# (left alone for anything but an optionally signed decimal number, which
# bash refuses). 10^9 is a multiple of 256: the last nine digits, padded with
# zeros (a shorter string has no "last nine": ${1: -9} would be empty and
# 10# an arithmetic error, which ends the shell), give the status.
_gwtrace_auto_exit_arg() {
  builtin local _gwtrace_ld="${1#[-+]}"
  [[ -n $_gwtrace_ld && $_gwtrace_ld != *[!0-9]* ]] || builtin return 0
  _gwtrace_ld=000000000$_gwtrace_ld
  if [[ $1 == -* ]]; then
    _gwtrace_aexit=$(( -10#${_gwtrace_ld: -9} & 255 ))
  else
    _gwtrace_aexit=$(( 10#${_gwtrace_ld: -9} & 255 ))
  fi
}

# _gwtrace_auto_tp_norm: a TRACEPARENT other than version 00 in 55 characters
# (gwtrace-auto.sh's init, its _gwtrace_ltp) by the library's whole rule:
# blanks trimmed, the version hex and not ff, 00 exactly 55 characters, a
# later version may go on after a '-'. Valid: as version 00, for init's check
# of the rest; not: ''.
_gwtrace_auto_tp_norm() {
  _gwtrace_ltp=${_gwtrace_ltp#"${_gwtrace_ltp%%[![:space:]]*}"} _gwtrace_ltp=${_gwtrace_ltp%"${_gwtrace_ltp##*[![:space:]]}"}
  if [[ ${#_gwtrace_ltp} -ge 55 && ${_gwtrace_ltp:2:1} == - && ${_gwtrace_ltp:0:2} != ff && ${_gwtrace_ltp:0:2} != *[!0-9a-f]* \
        && ( ${#_gwtrace_ltp} -eq 55 || ( ${_gwtrace_ltp:0:2} != 00 && ${_gwtrace_ltp:55:1} == - ) ) ]]; then
    _gwtrace_ltp=00-${_gwtrace_ltp:3:52}
  else
    _gwtrace_ltp=''
  fi
}

# `gwtrace run` ran this script (init's locals): its root span is the
# script's span (gwtrace run ends it with the exit status); this adds what
# only bash knows.
_gwtrace_auto_root_start() {
  _gwtrace_asp0=$_gwtrace_abase _gwtrace_aroot=$PPID
  builtin printf '%s\n' "gw1	A	${_gwtrace_at:-$EPOCHREALTIME}	$BASHPID	$_gwtrace_atr	$_gwtrace_asp0	process.pid=$$$_gwtrace_lpath$_gwtrace_lacc" >>"$_gwtrace_alog" || :
  builtin export GWTRACE_AUTO_OPEN="$BASHPID:$_gwtrace_atr" || :
}

# _gwtrace_auto_slow_start: what gwtrace-auto.sh's set-up leaves to us (it
# reads that loop's _gwtrace_lname and _gwtrace_lpath): escaping, the bash 4
# clock, exec.
_gwtrace_auto_slow_start() {
  _gwtrace_auto_esc "$_gwtrace_lname"; _gwtrace_lname=$_gwtrace_ar
  _gwtrace_auto_esc "$_gwtrace_lpath"; _gwtrace_lpath=$_gwtrace_ar
  _gwtrace_auto_esc "$_gwtrace_ats"; _gwtrace_ats=$_gwtrace_ar
  _gwtrace_auto_adopt
  _gwtrace_auto_now
  builtin return 0
}

# The script has its own EXIT handler, which may call exit: end the spans there.
_gwtrace_auto_exit_shim() {
  [[ $_gwtrace_auxpid == "$BASHPID" ]] || builtin return 0
  # shellcheck disable=SC2317  # called by the script's handler
  exit() { _gwtrace_auto_exit_now "$?" "$@"; } 2>&-
}

_gwtrace_auto_sigs() {
  builtin local _gwtrace_li
  for (( _gwtrace_li = 1; _gwtrace_li < 65; _gwtrace_li++ )); do _gwtrace_asigs+=("$_gwtrace_li"); done
}

# The script sets a DEBUG trap of its own at the scripts level: ours goes
# (bash has one DEBUG trap; the script's then behaves exactly as untraced).
_gwtrace_auto_top_off() {
  [[ -z $_gwtrace_atsp ]] || "${_gwtrace_atend[@]}" 0
  builtin trap - DEBUG
  _gwtrace_atop=''
}

# _gwtrace_auto_trap_cmd ARGS...: the script's `trap` (gwtrace-auto.sh's
# stub, which counts this as busy, takes the script's RETURN trap out of the
# way and gives fd 203, the script's stderr, with fd 2 closed). Its status is
# the builtin's; installing the script's own DEBUG trap (a one-shot that
# chains ours) is the last thing it does.
_gwtrace_auto_trap_cmd() {
  [[ -z $_gwtrace_atop || " $* " != *" DEBUG "* || $1 == -[pl] ]] || _gwtrace_auto_top_off
  _gwtrace_atrc=-1 _gwtrace_aoneshot=''
  _gwtrace_auto_trap 203 "$@"
  # shellcheck disable=SC2064  # the script's own arguments, passed on as they are
  (( _gwtrace_atrc >= 0 )) || _gwtrace_auto_trap - "$@" || builtin trap "$@"
  [[ -z $_gwtrace_apend ]] || _gwtrace_auto_oneshot
  # The RETURN trap back now, not only at the next command: the function may
  # return first, and its RETURN trap fires then (bash < 5.2, a function run
  # as a pipeline element: ours, that ends its spans; gwtrace-auto-frames.sh's
  # _gwtrace_auto_subold). One that skips our `trap` as it returns, until then.
  # (not without our DEBUG trap: the script's text alone, nothing skips them)
  if [[ -n $_gwtrace_aurset && -n $_gwtrace_apend$_gwtrace_aoneshot ]]; then
    if [[ -z $_gwtrace_aurraw ]]; then
      builtin trap -- "$_gwtrace_aurx" RETURN
    elif [[ -n $_gwtrace_audbg ]]; then
      _gwtrace_auto_rettext; builtin trap -- "$_gwtrace_aurx" RETURN; _gwtrace_auto_rettext raw
    fi
  elif (( _gwtrace_apdep >= 0 )); then
    builtin trap -- "$_gwtrace_apret" RETURN
  fi
  (( _gwtrace_abusy > 0 && _gwtrace_abusy--, 1 ))
  if [[ -z $_gwtrace_aoneshot ]]; then
    builtin return "$(( _gwtrace_atrc < 0 ? 1 : _gwtrace_atrc ))"
  fi
  builtin trap -- "$_gwtrace_aoneshot" DEBUG    # last: nothing of ours runs after it
}

# _gwtrace_auto_trap EFD ARGS...: the `trap` builtin as the script sees it.
# EFD is the script's stderr (or - if it has none); sets _gwtrace_atrc. Its
# caller is _gwtrace_auto_trap_cmd, called by `trap`: the script's frame is
# the fourth from the top here (FUNCNAME).
_gwtrace_auto_trap() {
  builtin local _gwtrace_lefd="$1" _gwtrace_lprint='' _gwtrace_larg _gwtrace_lop _gwtrace_ls _gwtrace_lu
  builtin local -a _gwtrace_lorig _gwtrace_lother; _gwtrace_lother=()
  builtin shift
  _gwtrace_lorig=("$@") _gwtrace_atrc=0
  while [[ ${1-} == -?* ]]; do
    case $1 in
      --) shift; break ;;
      -p) _gwtrace_lprint=1 ;;
      *) _gwtrace_auto_trap_builtin "$_gwtrace_lefd" "${_gwtrace_lorig[@]}"; builtin return 0 ;;   # -l, or bash's usage error
    esac
    builtin shift
  done
  if [[ -n $_gwtrace_lprint || $# -eq 0 ]]; then
    _gwtrace_auto_trap_print "$_gwtrace_lefd" "$@"
    builtin return 0
  fi
  if [[ -n $1 && $1 != *[!0-9]* ]] && builtin trap -p "$1" >/dev/null; then
    _gwtrace_lop=revert
  elif [[ $# -eq 1 && $1 != - && :$SHELLOPTS: != *:posix:* ]] && builtin trap -p "$1" >/dev/null; then
    _gwtrace_lop=revert
  else
    _gwtrace_larg=$1
    builtin shift
    if (( $# == 0 )); then
      _gwtrace_auto_trap_builtin "$_gwtrace_lefd" "${_gwtrace_lorig[@]}"; builtin return 0
    fi
    case $_gwtrace_larg in
      '') _gwtrace_lop=ignore ;;
      -) _gwtrace_lop=revert ;;
      *) _gwtrace_lop='set' ;;
    esac
  fi
  for _gwtrace_ls in "$@"; do
    _gwtrace_auto_trap_kind "$_gwtrace_ls"
    case $_gwtrace_ar in
      x|d|e|r)
        _gwtrace_lu=$_gwtrace_ar
        if [[ $_gwtrace_lu == d ]]; then
          # `trap - DEBUG` where bash took the script's out (_gwtrace_auto_udep)
          # changes nothing: bash puts it back on return
          [[ $_gwtrace_lop != revert ]] || (( ${#BASH_SOURCE[@]} - 3 < _gwtrace_audoff )) || continue
          # bash < 4.4 puts the one it took out back on return, over a new one (_gwtrace_auto_udep_back)
          (( _gwtrace_a44 || ${#BASH_SOURCE[@]} - 3 < _gwtrace_audoff )) || [[ -n $_gwtrace_audsvoff ]] \
            || _gwtrace_audsv=$_gwtrace_aud _gwtrace_audsvset=$_gwtrace_audset _gwtrace_audsvoff=$_gwtrace_audoff
          _gwtrace_audl=-1 _gwtrace_audoff=999999 _gwtrace_audk=''   # in force where it is set
        fi
        case $_gwtrace_lop in
          set) builtin printf -v "_gwtrace_au$_gwtrace_lu" '%s' "$_gwtrace_larg"; builtin printf -v "_gwtrace_au${_gwtrace_lu}set" 1 ;;
          ignore) builtin printf -v "_gwtrace_au$_gwtrace_lu" '%s' ''; builtin printf -v "_gwtrace_au${_gwtrace_lu}set" 1 ;;
          revert) builtin printf -v "_gwtrace_au$_gwtrace_lu" '%s' ''; builtin printf -v "_gwtrace_au${_gwtrace_lu}set" '%s' '' ;;
        esac
        [[ $_gwtrace_lu != r ]] || _gwtrace_aurdep=$(( ${#FUNCNAME[@]} - 3 ))
        if [[ $_gwtrace_lu == x ]]; then
          _gwtrace_auxpid=$BASHPID
          _gwtrace_auto_exit_install
        elif [[ $_gwtrace_lu == e && ( $_gwtrace_lop != revert || $- == *E* ) ]]; then
          _gwtrace_lother+=("$_gwtrace_ls")        # an ERR trap set in the one-shot would miss the next command
        else
          _gwtrace_apend=1
        fi ;;
      '') _gwtrace_lother+=("$_gwtrace_ls") ;;
      *) _gwtrace_auto_trap_error "$_gwtrace_lefd" "$_gwtrace_ls" ;;
    esac
  done
  if (( ${#_gwtrace_lother[@]} )); then
    case $_gwtrace_lop in
      set) builtin trap -- "$_gwtrace_larg" "${_gwtrace_lother[@]}" ;;
      ignore) builtin trap -- '' "${_gwtrace_lother[@]}" ;;
      revert) builtin trap - "${_gwtrace_lother[@]}" ;;
    esac
  fi
  builtin return 0
}

# _gwtrace_auto_trap_kind SIGSPEC: x (EXIT), d (DEBUG), e (ERR), r (RETURN),
# '' (another valid signal) or ? (invalid), into _gwtrace_ar.
_gwtrace_auto_trap_kind() {
  case ${1^^} in
    EXIT) _gwtrace_ar=x ;;
    DEBUG) _gwtrace_ar=d ;;
    ERR) _gwtrace_ar=e ;;
    RETURN) _gwtrace_ar=r ;;
    *) if [[ -n $1 && $1 != *[!0-9]* && $1 != *[1-9]* ]]; then     # 0, 00: EXIT
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
  builtin local _gwtrace_lefd="$1" _gwtrace_ls
  builtin shift
  if (( $# == 0 )); then
    [[ -z $_gwtrace_auxset ]] || _gwtrace_auto_trap_line "$_gwtrace_aux" EXIT
    (( ${#_gwtrace_asigs[@]} )) || _gwtrace_auto_sigs
    builtin trap -p "${_gwtrace_asigs[@]}"
    [[ -z $_gwtrace_audset ]] || (( ${#BASH_SOURCE[@]} - 4 >= _gwtrace_audoff )) || _gwtrace_auto_trap_line "$_gwtrace_aud" DEBUG
    [[ -z $_gwtrace_aueset ]] || _gwtrace_auto_trap_line "$_gwtrace_aue" ERR
    [[ -z $_gwtrace_aurset ]] || _gwtrace_auto_trap_line "$_gwtrace_aur" RETURN
    builtin return 0
  fi
  for _gwtrace_ls in "$@"; do
    _gwtrace_auto_trap_kind "$_gwtrace_ls"
    case $_gwtrace_ar in
      x) [[ -z $_gwtrace_auxset ]] || _gwtrace_auto_trap_line "$_gwtrace_aux" EXIT ;;
      d) [[ -z $_gwtrace_audset ]] || (( ${#BASH_SOURCE[@]} - 4 >= _gwtrace_audoff )) || _gwtrace_auto_trap_line "$_gwtrace_aud" DEBUG ;;
      e) [[ -z $_gwtrace_aueset ]] || _gwtrace_auto_trap_line "$_gwtrace_aue" ERR ;;
      r) [[ -z $_gwtrace_aurset ]] || _gwtrace_auto_trap_line "$_gwtrace_aur" RETURN ;;
      '') builtin trap -p "$_gwtrace_ls" ;;
      *) _gwtrace_auto_trap_error "$_gwtrace_lefd" "$_gwtrace_ls" ;;
    esac
  done
}

_gwtrace_auto_trap_line() {
  _gwtrace_auto_quote "$1"
  builtin printf 'trap -- %s %s\n' "$_gwtrace_ar" "$2"
}

# _gwtrace_auto_quote TEXT: TEXT in single quotes (as bash prints traps).
_gwtrace_auto_quote() {
  builtin local _gwtrace_lq=\'
  _gwtrace_ar="$_gwtrace_lq${1//$_gwtrace_lq/$_gwtrace_lq\\$_gwtrace_lq$_gwtrace_lq}$_gwtrace_lq"
}

# The one-shot DEBUG trap that applies the script's DEBUG, ERR and RETURN
# traps (see above), and runs the script's new DEBUG trap for this command.
_gwtrace_auto_oneshot() {
  # ($_ kept first: the `trap`s below change it, and after a function whose
  # last command was `trap` it is the call's last word, not DEBUG)
  # shellcheck disable=SC2016
  # Not in our functions: the RETURN trap in force as our `trap` returns
  # runs its commands, this trap too (_gwtrace_auto_trap_cmd).
  builtin local _gwtrace_lc='{ (( _gwtrace_arc = $?, 1 )); builtin printf -v _gwtrace_al %s "$_"; } 2>&-; if { [[ ${FUNCNAME-} != _gwtrace_* && ${FUNCNAME-} != trap ]]; } 2>&-; then { '
  [[ -n $_gwtrace_aueset ]] || _gwtrace_lc+='builtin trap - ERR; '
  # shellcheck disable=SC2016  # by name: a trap's text may span lines (LINENO)
  if [[ -n $_gwtrace_aurset ]]; then _gwtrace_lc+='builtin trap -- "$_gwtrace_aurx" RETURN; '
  elif (( _gwtrace_apdep >= 0 )); then _gwtrace_lc+='builtin trap -- "$_gwtrace_apret" RETURN; '   # (bash < 5.2: a pipeline element's)
  else _gwtrace_lc+='builtin trap - RETURN; '; fi
  _gwtrace_auto_rettext raw
  _gwtrace_auto_dbgtext
  if [[ -n $_gwtrace_ar ]]; then
    # shellcheck disable=SC2016
    _gwtrace_lc+='builtin trap -- "$_gwtrace_audbg$_gwtrace_audx" DEBUG; '
    [[ -n $_gwtrace_audbg ]] || _gwtrace_audx=$_gwtrace_ar
  else
    _gwtrace_lc+='builtin trap - DEBUG; '
  fi
  # shellcheck disable=SC2016
  _gwtrace_lc+='_gwtrace_auto_rc "$_gwtrace_arc" "$_gwtrace_al" && : "$_gwtrace_al"; } 2>&-'
  # The DEBUG trap now in force runs for this command too: ours (a function
  # may have been entered or left) and the script's.
  [[ -z $_gwtrace_ar ]] || _gwtrace_lc+="; $_gwtrace_ar"
  _gwtrace_aoneshot=$_gwtrace_lc$'\nfi' _gwtrace_apend=''
}

# _gwtrace_auto_rettext [RAW]: the RETURN trap to install, into _gwtrace_aurx.
# Our functrace makes every function inherit it, while untraced it fires only
# for `source`, and in a function only where bash left it in force: one at
# most _gwtrace_aurdep deep (where it was set, and the callers it went back
# to), or any entered once the script turned functrace on itself at such a
# depth (_gwtrace_aurT; 999999 while off) - a function entered while
# functrace was off took it out (execute_function: restore_default_signal),
# for the functions it calls too. Each return lowers both depths to the
# caller's. Never for our own functions: a RETURN trap installed from one
# (_gwtrace_auto_functrace_done) fires as each of ours returns. The script's
# text is run only then, with $? and $_ as they were, from the trap's first
# line. RAW (from the one-shot DEBUG trap, at the script's own level): the
# script's text alone where functrace is in force for every function.
_gwtrace_auto_rettext() {
  _gwtrace_aurx=$_gwtrace_aur _gwtrace_aurraw=1
  [[ -n $_gwtrace_audbg && -n $_gwtrace_aur ]] || builtin return 0
  # shellcheck disable=SC2016
  # (bash < 5.2: never the script's text alone, ours goes in front of it
  # below; and bash < 4.4 would put the old text back over one set from our
  # functions as they return: execute_function, set_return_trap)
  [[ -n ${1-} && -n ${_gwtrace_auT-} ]] && (( _gwtrace_aurT <= _gwtrace_aurdep && _gwtrace_a52 )) \
    || _gwtrace_aurraw='' _gwtrace_aurw='{ (( _gwtrace_arr = $?, 1 )); } 2>&-; if { [[ ${FUNCNAME-} != _gwtrace_* && ${FUNCNAME-} != trap ]] && { [[ ${FUNCNAME-} == source ]] || (( _gwtrace_arv = ${#FUNCNAME[@]} <= _gwtrace_aurdep || _gwtrace_aurT <= _gwtrace_aurdep, _gwtrace_aurdep < ${#FUNCNAME[@]} || (_gwtrace_aurdep = ${#FUNCNAME[@]} - 1), _gwtrace_aurT < ${#FUNCNAME[@]} || _gwtrace_aurT == 999999 || (_gwtrace_aurT = ${#FUNCNAME[@]} - 1), _gwtrace_arv )); }; } 2>&-; then { _gwtrace_auto_rc "$_gwtrace_arr" "$_" && : "$_"; } 2>&-; '"$_gwtrace_aur"
  [[ -n $_gwtrace_aurraw ]] || _gwtrace_aurx=$_gwtrace_aurw$'\nfi'
  # bash < 5.2: a pipeline element's RETURN trap in front, on the same line,
  # $? and $_ given back (gwtrace-auto-frames.sh's _gwtrace_auto_subold),
  # busy until the script's text: bash 5.1 leaves BASH_COMMAND at the
  # script's inside a trap, where the script's DEBUG trap would run for ours;
  # the two that give back $? and $_ (the second runs if $? is 0) are
  # skipped instead (_gwtrace_askipx), on bash 4 only `: "$_"` (it skips
  # the other by BASH_COMMAND, which there is ours: a count would stay)
  (( _gwtrace_a52 )) && builtin return 0
  _gwtrace_auto_cold
  builtin local _gwtrace_lskip='_gwtrace_arr == 0 ? 2 : 1'
  (( BASH_VERSINFO[0] >= 5 )) || _gwtrace_lskip='_gwtrace_arr == 0'
  # shellcheck disable=SC2016
  _gwtrace_aurx='{ '${_gwtrace_aprbody/_gwtrace_abusy -= 1, /}'_gwtrace_auto_rc "$_gwtrace_apr" "$_gwtrace_apl" && : "$_gwtrace_apl"; } 2>&"${_gwtrace_anofd[_gwtrace_askipx = 1]--}"; '
  # shellcheck disable=SC2016
  _gwtrace_aurx+=${_gwtrace_aurw/'2>&-; '"$_gwtrace_aur"/'2>&"${_gwtrace_anofd[(_gwtrace_abusy -= 1, _gwtrace_askipx = '"$_gwtrace_lskip"')]--}"; '"$_gwtrace_aur"}$'\nelse { (( _gwtrace_abusy -= 1, 1 )); } 2>&-\nfi'
}

# _gwtrace_auto_dbgtext: the DEBUG trap to install, into _gwtrace_ar: ours
# (function and command spans) and the script's after it, chained. The
# script's runs only for the script's own commands (not in our `trap`, our
# EXIT handler or our functions; in functions only if the script turned
# functrace on or set it there, as untraced), with $? and $_ as the command left them,
# and starts on the trap's first line (LINENO counts the trap's lines).
_gwtrace_auto_dbgtext() {
  _gwtrace_audx=''
  # shellcheck disable=SC2016
  builtin local _gwtrace_lrc='{ _gwtrace_auto_rc "$_gwtrace_arc" "$_" && : "$_"; } 2>&-; ' _gwtrace_ls=''
  [[ -z $_gwtrace_audset || -z $_gwtrace_aud ]] || _gwtrace_ls=$_gwtrace_aud$'\n'
  if [[ -n $_gwtrace_audsvoff && -n $_gwtrace_audsvset && -n $_gwtrace_audsv ]]; then
    # (bash < 4.4: the trap taken out comes back when the function that set
    # this one returns: _gwtrace_auto_udep_back makes it _gwtrace_aud, and
    # an eval runs it there, on the text's first line as this one's, and
    # leaves $_ as the text's last command did, not the eval's argument)
    # shellcheck disable=SC2016
    _gwtrace_ls="if { (( \${#BASH_SOURCE[@]} < $_gwtrace_audsvoff )); } 2>&-; then $_gwtrace_lrc"'builtin eval "$_gwtrace_aud$_gwtrace_alk"; { : "$_gwtrace_al"; } 2>&-; else '"$_gwtrace_lrc${_gwtrace_ls:-:$'\n'}"$'fi\n'
  fi
  if [[ -n $_gwtrace_ls ]]; then
    # shellcheck disable=SC2016
    _gwtrace_audx='; if { (( ! _gwtrace_abusy )) && [[ ${FUNCNAME-} != trap && ${FUNCNAME-} != _gwtrace_* && $BASH_COMMAND != *_gwtrace_a* ]]'
    # shellcheck disable=SC2016  # our functrace, not the script's: bash's inheritance
    [[ -z $_gwtrace_audbg ]] || _gwtrace_audx+=' && { [[ ${#BASH_SOURCE[@]}.$BASH_SUBSHELL == "$_gwtrace_audk" ]] || _gwtrace_auto_udep "$_"; } && (( _gwtrace_audon ))'
    # shellcheck disable=SC2016
    _gwtrace_audx+=' && (( _gwtrace_askipx <= 0 || (_gwtrace_askipx -= 1) < 0 )); } 2>&-; then '"$_gwtrace_lrc$_gwtrace_ls"'fi'
  fi
  # The script's trap needs $? before every command: the functions level's
  # text that keeps it every time (gwtrace-auto-fn.sh's _gwtrace_auto_ourtext).
  if [[ -n $_gwtrace_audbg && ( $_gwtrace_audbg == "${_gwtrace_adbg_fn-}" || $_gwtrace_audbg == "${_gwtrace_adbg_fnc-}"
        || $_gwtrace_audbg == "${_gwtrace_adbg_cmd-}" || $_gwtrace_audbg == "${_gwtrace_adbg_cmdc-}" ) ]]; then
    _gwtrace_auto_ourtext
  fi
  # shellcheck disable=SC2016
  _gwtrace_ar=${_gwtrace_audbg:-${_gwtrace_audx:+'{ (( _gwtrace_arc = $?, 1 )); } 2>&-'}}$_gwtrace_audx
}

# _gwtrace_auto_udep LASTARG: the script's DEBUG trap as bash scopes it, at a
# command of the script's at another depth (${#BASH_SOURCE[@]}) or in another
# subshell than its last one (_gwtrace_audk, "depth.subshell"): a function or
# sourced file entered while functrace was off takes it out until it returns
# (execute_function, source_builtin: restore_default_signal, then
# maybe_set_debug_trap), whatever functrace is afterwards, and a subshell
# begun while it was off has none; entered while on, they inherit it.
# _gwtrace_audoff: the depth where it went out (0: for good, 999999: in
# force); _gwtrace_audon: 1 if in force here. Our functrace makes bash run
# the DEBUG trap as each function or file is entered: every entry is seen
# here, one at a time.
_gwtrace_auto_udep() {
  builtin local _gwtrace_ln=$(( ${#BASH_SOURCE[@]} - 1 ))
  [[ -z $_gwtrace_audsvoff ]] || (( _gwtrace_ln >= _gwtrace_audsvoff )) || _gwtrace_auto_udep_back
  if (( _gwtrace_audl >= 0 )); then
    (( _gwtrace_ln >= _gwtrace_audl || _gwtrace_ln >= _gwtrace_audoff )) || _gwtrace_audoff=999999   # returned to where it is in force
    if (( BASH_SUBSHELL != _gwtrace_audsl )); then   # (begun at this depth or the last one, the lower)
      [[ -n $_gwtrace_auT ]] || (( _gwtrace_audoff <= (_gwtrace_ln < _gwtrace_audl ? _gwtrace_ln : _gwtrace_audl) )) || _gwtrace_audoff=0
    elif (( _gwtrace_ln > _gwtrace_audl )); then
      [[ -n $_gwtrace_auT ]] || (( _gwtrace_audoff <= _gwtrace_audl )) || _gwtrace_audoff=$(( _gwtrace_audl + 1 ))
    fi
  fi
  _gwtrace_audl=$_gwtrace_ln _gwtrace_audsl=$BASH_SUBSHELL _gwtrace_audk=$_gwtrace_ln.$BASH_SUBSHELL
  (( _gwtrace_audon = _gwtrace_ln < _gwtrace_audoff, 1 ))
}

# _gwtrace_auto_udep_back: bash < 4.4 put back the trap it took out as the
# function returned, even over one it set there (execute_function, source_builtin: set_debug_trap; 4.4 made it maybe_set_debug_trap):
# the script's again from the next command on (this one's text runs it).
_gwtrace_auto_udep_back() {
  _gwtrace_aud=$_gwtrace_audsv _gwtrace_audset=$_gwtrace_audsvset _gwtrace_audsvoff='' _gwtrace_audsv='' _gwtrace_audoff=999999
  _gwtrace_auto_dbgtext
  builtin trap -- "$_gwtrace_ar" DEBUG
}

# The message bash gives for a bad signal, at the script's line (that of its
# call of `trap`, our outermost frame).
_gwtrace_auto_trap_error() {
  builtin local _gwtrace_lk=1
  _gwtrace_atrc=1
  [[ $1 == - ]] && builtin return 0
  while [[ ${FUNCNAME[_gwtrace_lk]-trap} != trap ]]; do _gwtrace_lk=$((_gwtrace_lk + 1)); done
  if [[ -n ${BASH_EXECUTION_STRING+x} && ${#FUNCNAME[@]} -le $((_gwtrace_lk + 1)) ]]; then
    builtin printf '%s: trap: %s: invalid signal specification\n' "$0" "$2" >&"$1"
  else
    builtin printf '%s: line %s: trap: %s: invalid signal specification\n' "$0" "${BASH_LINENO[_gwtrace_lk]-0}" "$2" >&"$1"
  fi
}

# shellcheck disable=SC2064  # the script's own arguments, passed on as they are
_gwtrace_auto_trap_builtin() {
  builtin local _gwtrace_lefd="$1"
  builtin shift
  if [[ $_gwtrace_lefd == - ]]; then
    builtin trap "$@"
  else
    builtin trap "$@" 2>&"$_gwtrace_lefd"
  fi
  _gwtrace_atrc=$?
}
