# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh
#
# gwtrace-auto-cmd.sh - the commands level's spans (GWTRACE_AUTO_LEVEL
# commands), read by gwtrace-auto-fn.sh at that level only: the functions
# level does not parse them (every bash parses what it sources, ~20 bytes a
# microsecond).

{
  # The commands level's fast path: no command pending, nothing to catch up
  # on (_gwtrace_ak, "depth.subshell" as the trap sees them, is '-' while a
  # command, a `source`, a `set` or a background job is pending), and a
  # builtin or keyword that is never a span (not wait, source, set, exec,
  # eval, builtin, command, trap, exit: those go the slow way), an arithmetic
  # command (`((i++))`), or an assignment alone (one word: no command follows
  # it). $? and PIPESTATUS are kept past it (see gwtrace-auto-fn.sh); the
  # second text keeps them every time, for the script's own DEBUG trap
  # chained after ours (_gwtrace_auto_ourtext).
  # shellcheck disable=SC2016
  _gwtrace_adbg_cmd='{ [[ $_gwtrace_abusy != 0 || ${#BASH_SOURCE[@]}.$BASH_SUBSHELL == $_gwtrace_ak && ( -n ${_gwtrace_acbi[${BASH_COMMAND%% *}]-} || $BASH_COMMAND == \(\(* || ( $BASH_COMMAND == [A-Za-z_]*=* && $BASH_COMMAND != *\ * ) ) || $((_gwtrace_arc=$?,_gwtrace_aps=PIPESTATUS[0])) == - ]]||_gwtrace_auto_cmd "$_";} 2>&-'
  # shellcheck disable=SC2016
  _gwtrace_adbg_cmdc='{ ((_gwtrace_arc=$?,_gwtrace_aps=PIPESTATUS[0],_gwtrace_abusy))||{ [[ -z $_gwtrace_acmd$_gwtrace_aspend$_gwtrace_asetpend && ( -n ${_gwtrace_acbi[${BASH_COMMAND%%[[:space:]]*}]-} || ( $BASH_COMMAND == [A-Za-z_]*=* && $BASH_COMMAND != *[[:space:]]* ) || $BASH_COMMAND == \(\(* ) ]]&&((${#BASH_SOURCE[@]}==_gwtrace_ad&&BASH_SUBSHELL==_gwtrace_asl&&${#_gwtrace_abgpid[@]}==0));}||_gwtrace_auto_cmd "$_";} 2>&-'
  # shellcheck disable=SC2016  # bash < 4.4: FUNCNAME's depth (gwtrace-auto-fn.sh, note 13)
  (( _gwtrace_a44 )) || _gwtrace_adbg_cmd=${_gwtrace_adbg_cmd//"$_gwtrace_abs"/$_gwtrace_adx} _gwtrace_adbg_cmdc=${_gwtrace_adbg_cmdc//"$_gwtrace_abs"/$_gwtrace_adx}
  builtin declare -gA _gwtrace_acbi
  _gwtrace_acbi=(['[']=1 ['[[']=1 ['((']=1 [:]=1 [echo]=1 [printf]=1 [test]=1 [true]=1 [false]=1 [local]=1
    [declare]=1 [typeset]=1 [export]=1 [readonly]=1 [unset]=1 [shift]=1 [return]=1 [break]=1 [continue]=1 [read]=1
    [let]=1 [cd]=1 [pushd]=1 [popd]=1 [pwd]=1 [getopts]=1 [hash]=1 [type]=1 [umask]=1 [ulimit]=1 [alias]=1 [unalias]=1
    [mapfile]=1 [readarray]=1 [caller]=1 [compgen]=1 [complete]=1 [compopt]=1 [dirs]=1 [disown]=1 [enable]=1 [fc]=1
    [help]=1 [history]=1 [jobs]=1 [kill]=1 [logout]=1 [suspend]=1 [times]=1 [bg]=1 [fg]=1 [bind]=1 [for]=1 [case]=1
    [select]=1)
  # what _gwtrace_auto_cmd_begin never takes for a program (_gwtrace_auto_comsub)
  _gwtrace_acnot=' [ [[ (( . : alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend test times trap true type typeset ulimit umask unalias unset for case select if while until function { } ! '
  _gwtrace_acsx='' _gwtrace_acst=''        # a program alone in $(...): "ID N WORD PID SUBSHELL", its status (_gwtrace_auto_comsub)
}

# Commands level: every command comes here. An external command gets a span
# written when the next command starts (its status is then known): a shell
# that execs its last command leaves nothing open.
#
# In a trap BASH_COMMAND stays the interrupted command while the line number
# restarts at 1 (or is one of our functions'): that command is not begun
# again (an identical command on an earlier line just after it would be
# taken for one; a loop repeats the same line). A pending
# command after which $! changed was started in the background: its span is
# begun now and ended when the job is gone (reaped by `wait`, which has a
# span of its own, or by bash), or at exit (process.still_running).
_gwtrace_auto_cmd() {
  if [[ -n $_gwtrace_acsx ]]; then        # a program alone in $(...): its subshell, or its end here
    if (( BASH_SUBSHELL != _gwtrace_asl )); then _gwtrace_auto_comsub_enter && builtin return 0
    elif _gwtrace_auto_comsub_end; then builtin return 0; fi
  fi
  builtin local _gwtrace_ln="$(( ${#FUNCNAME[@]} - 1 ))" _gwtrace_lagain=''
  if [[ $BASH_COMMAND == "$_gwtrace_actxt" ]] && (( BASH_LINENO[0] < ${_gwtrace_accs%% *}+0 )) \
     || [[ ${FUNCNAME[1]-} == _gwtrace_* ]]; then
    _gwtrace_lagain=1
  fi
  if [[ -n $_gwtrace_acmd ]]; then
    if [[ ${!-} != "$_gwtrace_abang" && $_gwtrace_acpid == "$BASHPID" ]]; then
      _gwtrace_auto_bg_begin
    elif (( _gwtrace_aps || _gwtrace_arc )); then
      _gwtrace_auto_status "$_gwtrace_accs"
      _gwtrace_auto_cmd_end "$_gwtrace_ast"
    else
      _gwtrace_auto_cmd_end 0
    fi
  fi
  if [[ -n $_gwtrace_asetpend$_gwtrace_aspend ]] || (( ${#_gwtrace_abgpid[@]} || BASH_SUBSHELL != _gwtrace_asl )); then
    _gwtrace_auto_cmd_more "$1"
  fi
  if (( _gwtrace_ln > _gwtrace_ad )); then         # functions entered or returned (gwtrace-auto-fn.sh)
    _gwtrace_auto_enter
  elif (( _gwtrace_ln < _gwtrace_ad )); then
    _gwtrace_auto_leave
  fi
  [[ $BASH_COMMAND != [sbc.]* ]] || _gwtrace_auto_dbg_post   # before a `source` or a `set` (gwtrace-auto-fn.sh)
  [[ -n $_gwtrace_lagain ]] || _gwtrace_auto_cmd_begin "$BASH_COMMAND"
  _gwtrace_ak=$_gwtrace_ad.$_gwtrace_asl
  [[ -z $_gwtrace_acmd$_gwtrace_aspend$_gwtrace_asetpend${_gwtrace_abgpid-} ]] || _gwtrace_ak=-
  builtin return 0
}

# _gwtrace_auto_cmd_more LASTARG: what is not the common case (a command
# after a command, in the same process), before functions entered or
# returned are seen to: background jobs, a `set` or `source` just run, a
# new subshell.
_gwtrace_auto_cmd_more() {
  # shellcheck disable=SC2119
  (( ${#_gwtrace_abgpid[@]} == 0 )) || _gwtrace_auto_bg_reap
  [[ -z $_gwtrace_asetpend ]] || _gwtrace_auto_functrace_done "$1"
  [[ -z $_gwtrace_aspend ]] || _gwtrace_auto_src_done "$1"
  (( BASH_SUBSHELL == _gwtrace_asl )) || _gwtrace_auto_subenter || :
  builtin return 0
}

# The pending command runs in the background (as $!): write its begin.
_gwtrace_auto_bg_begin() {
  builtin local _gwtrace_lt=$'\t' _gwtrace_lname="$_gwtrace_acmd"
  [[ $_gwtrace_lname == *[$'\\\t\n\r']* ]] && { _gwtrace_auto_esc "$_gwtrace_lname"; _gwtrace_lname=$_gwtrace_ar; }
  _gwtrace_auto_emit "gw1${_gwtrace_lt}B${_gwtrace_lt}${_gwtrace_acts}${_gwtrace_lt}${BASHPID}${_gwtrace_lt}${_gwtrace_atr}${_gwtrace_lt}${_gwtrace_acsp}${_gwtrace_lt}${_gwtrace_acur:--}${_gwtrace_lt}0${_gwtrace_lt}${_gwtrace_afl}${_gwtrace_lt}${_gwtrace_ats:--}${_gwtrace_lt}${_gwtrace_lname}${_gwtrace_lt}gwtrace.kind=command${_gwtrace_lt}process.executable.name=${_gwtrace_lname}${_gwtrace_lt}process.pid=$!${_gwtrace_lt}gwtrace.background=true"
  _gwtrace_abgpid+=("$!") _gwtrace_abgsp+=("$_gwtrace_acsp")
  [[ $_gwtrace_acotpset == k ]] || _gwtrace_auto_tp "$_gwtrace_acotp" "$_gwtrace_acotpset"
  _gwtrace_acmd=''
}

# _gwtrace_auto_bg_reap [KEY=VALUE]: end the spans of background commands
# that are gone (all of them with an argument: at exit). The job that a
# `wait PID` just returned has its $? as status (a job that ended before is
# left for the `wait PID` about to run); one bash reaped on its own: ok.
# shellcheck disable=SC2120  # _gwtrace_auto_exit_frames (gwtrace-auto-fn.sh) passes one
_gwtrace_auto_bg_reap() {
  builtin local _gwtrace_li _gwtrace_lt=$'\t' _gwtrace_lst _gwtrace_lpids _gwtrace_lsps _gwtrace_lwaited=''; _gwtrace_lpids=() _gwtrace_lsps=()
  [[ $_gwtrace_actxt == wait\ [!-]* && $_gwtrace_actxt != *\ *\ * ]] && _gwtrace_lwaited=1
  [[ -z ${1-} && -z $_gwtrace_lwaited && $BASH_COMMAND == wait\ [!-]* ]] && builtin return 0   # its status comes with the wait
  for _gwtrace_li in "${!_gwtrace_abgpid[@]}"; do
    if [[ -z ${1-} ]] && builtin kill -0 "${_gwtrace_abgpid[_gwtrace_li]}"; then
      _gwtrace_lpids+=("${_gwtrace_abgpid[_gwtrace_li]}") _gwtrace_lsps+=("${_gwtrace_abgsp[_gwtrace_li]}")
      continue
    fi
    _gwtrace_lst=ok
    [[ -z ${1-} && -n $_gwtrace_lwaited ]] && _gwtrace_lst=$_gwtrace_arc _gwtrace_lwaited=''    # `wait PID` returned its status
    [[ -z ${1-} ]] || _gwtrace_lst="ok$_gwtrace_lt$1"
    _gwtrace_auto_now
    _gwtrace_auto_emit "gw1${_gwtrace_lt}E${_gwtrace_lt}${_gwtrace_at}${_gwtrace_lt}${BASHPID}${_gwtrace_lt}${_gwtrace_atr}${_gwtrace_lt}${_gwtrace_abgsp[_gwtrace_li]}${_gwtrace_lt}${_gwtrace_lst}"
  done
  _gwtrace_abgpid=("${_gwtrace_lpids[@]}") _gwtrace_abgsp=("${_gwtrace_lsps[@]}")
}

# _gwtrace_auto_cmd_word COMMAND: the command word of a command line as bash
# shows it (BASH_COMMAND, unexpanded) into _gwtrace_ar, '' if not knowable.
_gwtrace_auto_cmd_word() {
  builtin local _gwtrace_lc="$1" _gwtrace_lw _gwtrace_lname
  while :; do
    _gwtrace_lc=${_gwtrace_lc#"${_gwtrace_lc%%[![:space:]]*}"}
    _gwtrace_lw=${_gwtrace_lc%%[[:space:]]*}
    _gwtrace_lname=${_gwtrace_lw%%=*} _gwtrace_lname=${_gwtrace_lname%+} _gwtrace_lname=${_gwtrace_lname%%\[*}
    if [[ $_gwtrace_lw == *=* && $_gwtrace_lname == [A-Za-z_]* && $_gwtrace_lname != *[!A-Za-z0-9_]* ]]; then
      if [[ ${_gwtrace_lw#*=} == [\"\'\(]* || ${_gwtrace_lw#*=} == *\$\(* || ${_gwtrace_lw#*=} == *\`* ]]; then
        _gwtrace_ar=''; builtin return 0              # quoted value, an array's (...) or $(...): give up
                                              # (what runs inside $(...) has spans of its own)
      fi
      _gwtrace_lc=${_gwtrace_lc:${#_gwtrace_lw}}
      continue
    fi
    case $_gwtrace_lw in
      exec) _gwtrace_ar=''; builtin return 0 ;;     # the process goes on as CMD: see _gwtrace_auto_adopt
      command|nohup|time|builtin) _gwtrace_lc=${_gwtrace_lc:${#_gwtrace_lw}}; _gwtrace_lc=${_gwtrace_lc#"${_gwtrace_lc%%[![:space:]]*}"}
        [[ $_gwtrace_lc == -* ]] && { _gwtrace_ar=''; builtin return 0; }
        [[ $_gwtrace_lw == builtin ]] && { _gwtrace_ar=''; builtin return 0; }
        continue ;;
    esac
    break
  done
  if [[ $_gwtrace_lw == \$[A-Za-z_]* && ${_gwtrace_lw:1} != *[!A-Za-z0-9_]* ]]; then
    _gwtrace_lw=${_gwtrace_lw:1}; _gwtrace_lw=${!_gwtrace_lw-}
    _gwtrace_auto_first_field
  elif [[ $_gwtrace_lw == \$\{[A-Za-z_]*\} && ${_gwtrace_lw:2:${#_gwtrace_lw}-3} != *[!A-Za-z0-9_]* ]]; then
    _gwtrace_lw=${_gwtrace_lw:2:${#_gwtrace_lw}-3}; _gwtrace_lw=${!_gwtrace_lw-}
    _gwtrace_auto_first_field
  elif [[ $_gwtrace_lw == \"*\" ]]; then
    _gwtrace_lw=${_gwtrace_lw:1:${#_gwtrace_lw}-2}
  fi
  [[ $_gwtrace_lw == *[\$\`\"\'\\\(\)\<\>\|\&\;]* ]] && _gwtrace_lw=''
  _gwtrace_ar=$_gwtrace_lw
}

# _gwtrace_auto_first_field: _gwtrace_lw, an unquoted variable's value, cut to the
# field bash runs as the command (`cmd="curl -u user:pw URL"; $cmd`): the rest
# are its arguments, which are never recorded.
_gwtrace_auto_first_field() {
  _gwtrace_lw=${_gwtrace_lw#"${_gwtrace_lw%%[![:space:]]*}"}
  _gwtrace_lw=${_gwtrace_lw%%[[:space:]]*}
}

_gwtrace_auto_cmd_begin() {
  builtin local _gwtrace_lw="${1%%[[:space:]]*}"
  case $_gwtrace_lw in        # a plain word is the command word; one with $( or ` never is (NAME=$(...))
    *\$\(*|*\`*) _gwtrace_lw='' ;;
    ''|*[=\$\"\'\\\(\)\<\>\|\&\;]*|exec|command|nohup|time|builtin) _gwtrace_auto_cmd_word "$1"; _gwtrace_lw=$_gwtrace_ar ;;
  esac
  # (not a program: the program alone in its $(...) may be recorded from here)
  [[ -n $_gwtrace_lw ]] || { [[ $1 != *\$\([!\(]* && $1 != *\`* ]] || _gwtrace_auto_comsub "$1" 1; builtin return 0; }
  case $_gwtrace_lw in
    for|select) builtin return 0 ;;       # its DEBUG trap runs after the words are expanded
    '['|'[['|'(('|'.'|':'|alias|bg|bind|break|builtin|caller|cd|command|compgen|complete|compopt|\
    continue|declare|dirs|disown|echo|enable|eval|exec|exit|export|false|fc|fg|getopts|hash|help|\
    history|jobs|kill|let|local|logout|mapfile|popd|printf|pushd|pwd|read|readarray|readonly|return|\
    set|shift|shopt|source|suspend|test|times|trap|true|type|typeset|ulimit|umask|unalias|unset|\
    case|if|while|until|function|'{'|'}'|'!'|*=*) [[ $1 != *\$\([!\(]* && $1 != *\`* ]] || _gwtrace_auto_comsub "$1" ''; builtin return 0 ;;
  esac
  [[ -z ${_gwtrace_afn[$_gwtrace_lw]-} ]] || builtin return 0      # a function entered before
  builtin declare -F -- "$_gwtrace_lw" >/dev/null && builtin return 0
  [[ -z $_gwtrace_acsx ]] || ! _gwtrace_auto_comsub_child || builtin return 0   # the program its parent records
  if [[ $_gwtrace_arngpid == "$BASHPID" ]] && (( (_gwtrace_actr += 1) < 2000000 )); then
    _gwtrace_ar=$_gwtrace_apfx${_gwtrace_actr:1}           # _gwtrace_auto_id, written out
  else
    _gwtrace_auto_id
  fi
  _gwtrace_at=${EPOCHREALTIME-}
  [[ -n $_gwtrace_at ]] || _gwtrace_auto_now
  _gwtrace_accs="${BASH_LINENO[1]-} $_gwtrace_lw ${BASH_SOURCE[2]-}" _gwtrace_actxt=$1 _gwtrace_abang=${!-}
  _gwtrace_acmd=${_gwtrace_lw##*/} _gwtrace_acsp=$_gwtrace_ar _gwtrace_acts=$_gwtrace_at _gwtrace_acpid=$BASHPID
  _gwtrace_acotp=${TRACEPARENT-} _gwtrace_acotpset=${TRACEPARENT+1}
  _gwtrace_auto_tp "00-$_gwtrace_atr-$_gwtrace_acsp-$_gwtrace_afl" 1
}

# _gwtrace_auto_comsub TEXT KNOWN: _gwtrace_auto_cmd_begin for TEXT, a
# command that is not a program (an assignment, a builtin) with one $(...)
# or `...` whose last command is a program, which bash runs in place of the
# subshell (no EXIT trap, nothing sees it end): that program is the pending
# command here, and the subshell is told: "ID N WORD PID SUBSHELL" in
# _gwtrace_acsx (N: how many commands of that word the $(...) has; the
# subshell's DEBUG trap gives the last of them our span as TRACEPARENT);
# _gwtrace_acst, the status its span gets: '' ($? tells: KNOWN, and TEXT is
# NAME=$(...) alone) or ok. Nothing pending if none. One function, the id
# and the clock written out as in _gwtrace_auto_cmd_begin: each call copies
# the body (gwtrace-auto-fn.sh, note 7).
_gwtrace_auto_comsub() {
  builtin local _gwtrace_lb _gwtrace_lr _gwtrace_lp _gwtrace_ln=0 _gwtrace_lw
  if [[ $1 == *\$\([!\(]* ]]; then
    _gwtrace_lb=${1#*\$\(}
    [[ $1 != *\`* && $_gwtrace_lb != *\$\(* ]] || builtin return 0      # one only
    _gwtrace_lr=${_gwtrace_lb#*\)} _gwtrace_lb=${_gwtrace_lb%%\)*}
  elif [[ $1 == *\`*\`* && $1 != *\`*\`*\`* && $1 != *\$\(* ]]; then
    _gwtrace_lb=${1#*\`} _gwtrace_lr=${_gwtrace_lb#*\`} _gwtrace_lb=${_gwtrace_lb%%\`*}
  else
    builtin return 0
  fi
  # simple commands in pipelines and `;` lists: the last one runs last (its
  # first `)` closes it: no other parenthesis)
  _gwtrace_lp=${_gwtrace_lb//[<>]&/} _gwtrace_lp=${_gwtrace_lp//&>/}   # 2>&1, &>FILE: not a background job
  _gwtrace_lp=${_gwtrace_lp//\$\{/}                                       # ${x}: not a group
  [[ $_gwtrace_lp != *[\&\(\)\{\`$'\n']* && $_gwtrace_lb != *\|\|* && $_gwtrace_lr != *[\(\)]* ]] || builtin return 0
  _gwtrace_lp=${_gwtrace_lb##*[;|]} _gwtrace_lp=${_gwtrace_lp#"${_gwtrace_lp%%[![:space:]]*}"}
  _gwtrace_lw=${_gwtrace_lp%%[[:space:]]*}
  case $_gwtrace_lw in        # a plain word is the command word (as in _gwtrace_auto_cmd_begin)
    ''|*[=\$\`\"\'\\\(\)\<\>\|\&\;]*|exec|command|nohup|time|builtin) _gwtrace_auto_cmd_word "$_gwtrace_lp"; _gwtrace_lw=$_gwtrace_ar ;;
  esac
  [[ -n $_gwtrace_lw && $_gwtrace_acnot != *" $_gwtrace_lw "* && -z ${_gwtrace_afn[$_gwtrace_lw]-} ]] || builtin return 0
  ! builtin declare -F -- "$_gwtrace_lw" >/dev/null || builtin return 0
  if [[ $_gwtrace_lb != *"$_gwtrace_lw"*"$_gwtrace_lw"* ]]; then
    _gwtrace_ln=1                  # the word is there once
  else
    while [[ -n $_gwtrace_lb ]]; do
      _gwtrace_lp=${_gwtrace_lb%%[;|]*}
      [[ $_gwtrace_lb == *[\;\|]* ]] && _gwtrace_lb=${_gwtrace_lb#*[;|]} || _gwtrace_lb=''
      _gwtrace_auto_cmd_word "$_gwtrace_lp"
      [[ $_gwtrace_ar != "$_gwtrace_lw" ]] || _gwtrace_ln=$((_gwtrace_ln + 1))
    done
  fi
  _gwtrace_acst=$'ok\tgwtrace.status.unknown=true' _gwtrace_lb=${1#*=}
  if [[ -n $2 && ${1%%=*} == [A-Za-z_]* && ${1%%=*} != *[!A-Za-z0-9_+]* && ${1%%=*} != ?*+?* ]] \
     && [[ $_gwtrace_lb == \$\(*\) || $_gwtrace_lb == \"\$\(*\)\" || $_gwtrace_lb == \`*\` || $_gwtrace_lb == \"\`*\`\" ]]; then
    _gwtrace_acst=''
  fi
  if [[ $_gwtrace_arngpid == "$BASHPID" ]] && (( (_gwtrace_actr += 1) < 2000000 )); then
    _gwtrace_ar=$_gwtrace_apfx${_gwtrace_actr:1}           # _gwtrace_auto_id, written out
  else
    _gwtrace_auto_id
  fi
  _gwtrace_at=${EPOCHREALTIME-}
  [[ -n $_gwtrace_at ]] || _gwtrace_auto_now
  _gwtrace_accs="${BASH_LINENO[2]-} $_gwtrace_lw ${BASH_SOURCE[3]-}" _gwtrace_actxt=$1 _gwtrace_abang=${!-}
  _gwtrace_acmd=${_gwtrace_lw##*/} _gwtrace_acsp=$_gwtrace_ar _gwtrace_acts=$_gwtrace_at _gwtrace_acpid=$BASHPID
  _gwtrace_acotp='' _gwtrace_acotpset=k     # TRACEPARENT is left as it is here: nothing to give back at its end
  _gwtrace_acsx="$_gwtrace_ar $_gwtrace_ln $_gwtrace_lw $BASHPID $BASH_SUBSHELL"   # (the subshell sets TRACEPARENT)
}

# _gwtrace_auto_comsub_child: in the subshell of the $(...) whose last
# program its parent records (_gwtrace_acsx, "ID N WORD PID SUBSHELL" as the
# parent set it), before each of its commands (_gwtrace_lw: the word): true
# for that program, which gets the parent's span as its TRACEPARENT and no
# span of ours.
_gwtrace_auto_comsub_child() {
  builtin local _gwtrace_lid="${_gwtrace_acsx%% *}" _gwtrace_lk _gwtrace_lr
  _gwtrace_lr=${_gwtrace_acsx#* } _gwtrace_lk=${_gwtrace_lr%% *} _gwtrace_lr=${_gwtrace_lr#* }
  [[ ${_gwtrace_lr#* } != "$BASHPID "* ]] || builtin return 1
  [[ ${_gwtrace_lr##* } == $(( BASH_SUBSHELL - 1 )) ]] || { _gwtrace_acsx=''; builtin return 1; }
  [[ $_gwtrace_lw == "${_gwtrace_lr% * *}" ]] || builtin return 1
  if (( _gwtrace_lk > 1 )); then
    _gwtrace_acsx="$_gwtrace_lid $(( _gwtrace_lk - 1 )) $_gwtrace_lr"
    builtin return 1
  fi
  _gwtrace_acsx=''
  _gwtrace_auto_tp "00-$_gwtrace_atr-$_gwtrace_lid-$_gwtrace_afl" 1
}

# _gwtrace_auto_comsub_enter: the first command of the $(...) whose last
# program its parent records (_gwtrace_acsx, "ID N WORD PID SUBSHELL"), when
# it is that program and nothing else is to be seen (the same depth, no
# `source`, `set` or background job pending): what the slow path would do
# (_gwtrace_auto_cmd_end of the parent's pending command, _gwtrace_auto_subenter,
# _gwtrace_auto_comsub_child), without the word's two `declare -F` (the
# parent looked it up). False for anything else: the slow path.
_gwtrace_auto_comsub_enter() {
  [[ $_gwtrace_acsx == *" 1 ${BASH_COMMAND%%[[:space:]]*} "*" $((BASH_SUBSHELL - 1))" && $_gwtrace_acpid != "$BASHPID" \
     && ${#FUNCNAME[@]} == $((_gwtrace_ad + 2)) && -z $_gwtrace_aspend$_gwtrace_asetpend${_gwtrace_abgpid-} ]] || builtin return 1
  _gwtrace_auto_tp "00-$_gwtrace_atr-${_gwtrace_acsx%% *}-$_gwtrace_afl" 1
  _gwtrace_asl=$BASH_SUBSHELL _gwtrace_acmd='' _gwtrace_acsx='' _gwtrace_acst=''
  _gwtrace_ak=$_gwtrace_ad.$_gwtrace_asl
}

# _gwtrace_auto_comsub_end: the end of the program alone in $(...) pending
# here, when the command after it is one the trap's fast path takes (a
# builtin, keyword, arithmetic command or lone assignment, with no $(...) of
# its own; `$((` is arithmetic), in the same process and depth, it ended with 0 or its status is
# not $? (_gwtrace_acst), and nothing else is to be seen: its span, and the
# fast path's key again. False for anything else: _gwtrace_auto_cmd's
# general way.
_gwtrace_auto_comsub_end() {
  [[ $_gwtrace_acpid == "$BASHPID" && ${!-} == "$_gwtrace_abang" && ${#FUNCNAME[@]} == $((_gwtrace_ad + 2)) \
     && -z $_gwtrace_aspend$_gwtrace_asetpend${_gwtrace_abgpid-} && $BASH_COMMAND != "$_gwtrace_actxt" && ${FUNCNAME[2]-} != _gwtrace_* \
     && ( -n ${_gwtrace_acbi[${BASH_COMMAND%% *}]-} || $BASH_COMMAND == \(\(* || ( $BASH_COMMAND == [A-Za-z_]*=* && $BASH_COMMAND != *\ * ) ) \
     && $BASH_COMMAND != *\$\([!\(]* && $BASH_COMMAND != *\`* && $BASH_COMMAND != [sbc.]* ]] \
     && { (( !(_gwtrace_aps || _gwtrace_arc) )) || [[ -n $_gwtrace_acst ]]; } || builtin return 1
  _gwtrace_auto_cmd_end 0
  _gwtrace_ak=$_gwtrace_ad.$_gwtrace_asl
}

# _gwtrace_auto_cmd_end STATUS: write the pending command's span, after the fact.
_gwtrace_auto_cmd_end() {
  if [[ $_gwtrace_acpid == "$BASHPID" ]]; then
    _gwtrace_at=${EPOCHREALTIME-}
    [[ -n $_gwtrace_at ]] || _gwtrace_auto_now
    _gwtrace_ar=$_gwtrace_acmd
    [[ $_gwtrace_ar != *[$'\\\t\n\r']* ]] || _gwtrace_auto_esc "$_gwtrace_acmd"
    _gwtrace_acsx='' _gwtrace_awh=''
    if [[ ${_gwtrace_acst:-${1:-0}} == [1-9]* ]]; then          # a failure: where (the command's own line)
      _gwtrace_dw=$_gwtrace_ar; _gwtrace_auto_where "$_gwtrace_accs" command; _gwtrace_ar=$_gwtrace_dw
    fi
    # begin and end in one append (literal TABs)
    builtin printf '%s\n' "gw1	B	$_gwtrace_acts	$BASHPID	$_gwtrace_atr	$_gwtrace_acsp	${_gwtrace_acur:--}	0	$_gwtrace_afl	${_gwtrace_ats:--}	$_gwtrace_ar	gwtrace.kind=command	process.executable.name=$_gwtrace_ar" \
      "gw1	E	$_gwtrace_at	$BASHPID	$_gwtrace_atr	$_gwtrace_acsp	${_gwtrace_acst:-${1:-0}}$_gwtrace_awh" >>"$_gwtrace_alog" || :
    _gwtrace_acst=''
  fi
  [[ $_gwtrace_acotpset == k ]] || _gwtrace_auto_tp "$_gwtrace_acotp" "$_gwtrace_acotpset"
  _gwtrace_acmd=''
}
