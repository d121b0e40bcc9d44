# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh
#
# gwtrace-auto-util.sh - the clock and protocol escaping, for
# gwtrace-auto-fn.sh and gwtrace-auto-extra.sh. Apart, because every bash at
# the functions level reads gwtrace-auto-fn.sh, and parsing costs ~1 ms per
# 10 KB: gwtrace-auto-extra.sh is read only by the shells that need it.

_gwtrace_autil=1 _gwtrace_ar='' _gwtrace_at=''
[[ -n ${GWTRACE_BOOT_US-} && $GWTRACE_BOOT_US != *[!0-9]* ]] && _gwtrace_aboot=$GWTRACE_BOOT_US || _gwtrace_aboot=0

# _gwtrace_auto_now: the time as seconds.microseconds into _gwtrace_at; bash 4
# has no EPOCHREALTIME: /proc/uptime (10 ms) plus the boot time.
_gwtrace_auto_now() {
  local _gwtrace_lup='' _gwtrace_lus
  if [[ -n ${EPOCHREALTIME-} ]]; then
    _gwtrace_at=$EPOCHREALTIME
    return 0
  fi
  IFS= builtin read -r _gwtrace_lup </proc/uptime || _gwtrace_lup=''
  _gwtrace_lup=${_gwtrace_lup%% *}
  if [[ $_gwtrace_lup == [0-9]*.[0-9][0-9] && $_gwtrace_lup != *[!0-9.]* ]]; then
    _gwtrace_lus=$(( _gwtrace_aboot + 10#${_gwtrace_lup/./} * 10000 ))
    builtin printf -v _gwtrace_at '%d.%06d' $((_gwtrace_lus / 1000000)) $((_gwtrace_lus % 1000000))
  else
    builtin printf -v _gwtrace_at '%(%s)T.000000' -1
  fi
}

# _gwtrace_auto_esc TEXT: protocol escaping into _gwtrace_ar.
_gwtrace_auto_esc() {
  _gwtrace_ar=$1
  if [[ $_gwtrace_ar == *[$'\\\t\n\r']* ]]; then
    local _gwtrace_lbs=\\
    _gwtrace_ar=${_gwtrace_ar//"$_gwtrace_lbs"/"$_gwtrace_lbs$_gwtrace_lbs"}
    _gwtrace_ar=${_gwtrace_ar//$'\t'/"${_gwtrace_lbs}t"}
    _gwtrace_ar=${_gwtrace_ar//$'\n'/"${_gwtrace_lbs}n"}
    _gwtrace_ar=${_gwtrace_ar//$'\r'/"${_gwtrace_lbs}r"}
  fi
}
