# shellcheck shell=bash
# shellcheck disable=SC2154  # the _gwtrace_a* state comes from gwtrace-auto.sh
#
# gwtrace-auto-benv.sh - the BASH_ENV the user had before `gwtrace run` took
# BASH_ENV (GWTRACE_AUTO_BASH_ENV), read by gwtrace-auto.sh at the top level
# (so that the user's file defines globals, as a BASH_ENV does) with fd 2
# closed and the script's stderr on fd 203, or with _gwtrace_abenvfd=- when
# the script has no stderr. Expanded as bash expands BASH_ENV.

_gwtrace_adone=1 _gwtrace_abenv=${GWTRACE_AUTO_BASH_ENV-}
[[ $_gwtrace_abenv != *[\$\`]* ]] || builtin eval "_gwtrace_abenv=\"$_gwtrace_abenv\""
if [[ ! -f $_gwtrace_abenv || $_gwtrace_abenv -ef $_gwtrace_adir/gwtrace-auto.sh ]]; then
  :
elif [[ $_gwtrace_abenvfd == - ]]; then
  # shellcheck disable=SC1090
  builtin source "$_gwtrace_abenv"
else
  # shellcheck disable=SC1090
  builtin source "$_gwtrace_abenv" 2>&203 203>&-
fi
