# shellcheck shell=bash
# gwtrace-auto-argv.sh - the script's path on bash < 5.2, read by gwtrace-auto.sh.
# Bash before 5.2 reads BASH_ENV before it sets $0 to the script: $0 is still
# the shell's own name there ("bash", "/bin/bash"), on every EL7-EL9 worker
# node. The script is the first operand of the shell's command line, which
# the kernel keeps in /proc/PID/cmdline (NUL-separated; `read -d ''` reads it
# without a fork). Bash's options before it: single-letter groups (-e, +x,
# -xe), where o and O take the next word (-o pipefail, -eo pipefail);
# --rcfile and --init-file take the next word, other long options do not;
# -- or - ends the options. `bash -c` never comes here (BASH_EXECUTION_STRING).
# Prints nothing; sets _gwtrace_l0, what gwtrace-auto.sh takes from $0 on
# bash 5.2: the script operand, or '' when bash reads its script from stdin
# (-s, or no operand).

_gwtrace_auto_argv() {
  builtin local _gwtrace_la _gwtrace_lnext='' _gwtrace_lscript=''
  _gwtrace_l0=''
  {
    builtin read -r -d '' _gwtrace_la || builtin return 0            # argv[0]: the shell
    while builtin read -r -d '' _gwtrace_la; do
      if [[ -n $_gwtrace_lnext ]]; then _gwtrace_lnext=''; continue; fi
      case $_gwtrace_la in
        --|-) builtin read -r -d '' _gwtrace_lscript || :; break ;;
        --rcfile|--init-file) _gwtrace_lnext=1 ;;
        --*) ;;
        [-+]*[sc]*) return 0 ;;                              # -s: stdin; -c: not a file
        [-+]*[oO]*) _gwtrace_lnext=1 ;;
        [-+]?*) ;;
        *) _gwtrace_lscript=$_gwtrace_la; break ;;
      esac
    done
  } </proc/"$BASHPID"/cmdline || builtin return 0
  _gwtrace_l0=$_gwtrace_lscript
}
