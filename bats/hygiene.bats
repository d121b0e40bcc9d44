#!/usr/bin/env bats
# No leaks: the library adds only _gwtrace_* variables (and TRACEPARENT /
# TRACESTATE while a span is open), changes no option, trap, IFS or
# BASH_REMATCH, and survives host functions named like builtins.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016  # scripts are quoted for the child bash

load test_helper

# Every call of the API once, with nesting, failures and a subshell.
USE_ALL='
trace_begin outer site=FNAL
trace_run cmd true
trace_run fn eval ":"
trace_event e k=v
trace_attr a=b
trace_begin inner; false || trace_end
trace_begin inner2; trace_end "a message" k=v
( trace_begin sub; trace_end )
trace_end ok
'

# Variables whose value bash itself changes from one command to the next.
DYNAMIC_NAMES='_|BASH_COMMAND|BASH_LINENO|BASH_SOURCE|BASH_ARGC|BASH_ARGV|EPOCHREALTIME|EPOCHSECONDS|LINENO|RANDOM|SRANDOM|SECONDS|FUNCNAME|PIPESTATUS|BASHPID|BASH_SUBSHELL|HISTCMD|PIPESTATUS'

@test "after sourcing and using the library only _gwtrace_* variables are new" {
  gw_run_raw <<EOF
compgen -v >"\$GWTRACE_DIR/before"
source "\$GWTRACE_LIB"
$USE_ALL
compgen -v >"\$GWTRACE_DIR/after"
EOF
  assert_success
  run comm -13 "$GWTRACE_DIR/before" "$GWTRACE_DIR/after"
  assert_line _gwtrace_depth              # the library does keep state...
  run grep -v -e '^_gwtrace_' -e '^PIPESTATUS$' <<<"$output"
  assert_output ""                       # ...only under _gwtrace_ (PIPESTATUS is bash's)
  run comm -23 "$GWTRACE_DIR/before" "$GWTRACE_DIR/after"
  assert_output ""
}

@test "while a span is open only _gwtrace_* and TRACEPARENT are new" {
  gw_run_raw <<'EOF'
source "$GWTRACE_LIB"
compgen -v >"$GWTRACE_DIR/before"
trace_begin outer
trace_begin inner
compgen -v >"$GWTRACE_DIR/during"
trace_end
trace_end
EOF
  assert_success
  run comm -13 "$GWTRACE_DIR/before" "$GWTRACE_DIR/during"
  assert_output "TRACEPARENT"
}

@test "with an incoming TRACESTATE, an open span adds no variable but _gwtrace_*" {
  export TRACEPARENT=$TP_VALID TRACESTATE=rojo=00f067aa0ba902b7
  gw_run_raw <<'EOF'
compgen -v >"$GWTRACE_DIR/before"
source "$GWTRACE_LIB"
trace_begin outer
compgen -v | grep -v -e '^_gwtrace_' -e '^PIPESTATUS$' >"$GWTRACE_DIR/during"
trace_end
EOF
  assert_success
  run diff "$GWTRACE_DIR/before" "$GWTRACE_DIR/during"
  assert_success
}

@test "the values and attributes of every other variable are unchanged, including names the library uses locally" {
  gw_run_raw <<EOF
d=host_d t=host_t path=/host_path status=host_status a=host_a k=host_k z=7
trace=host_trace span=host_span parent=host_parent flags=host_flags state=host_state
up=host_up now=host_now u=host_u hi=host_hi max=host_max code=host_code tp=host_tp
declare -i remote=5
declare -a arr=(x "y z")
declare -A map=([k]=v)
export EXPORTED=yes
declare -p | grep -Ev '^declare -[-a-zA-Z]* ($DYNAMIC_NAMES)(=|\$)' >"\$GWTRACE_DIR/before"
source "\$GWTRACE_LIB"
$USE_ALL
declare -p | grep -Ev '^declare -[-a-zA-Z]* (_gwtrace_[a-z_]*|$DYNAMIC_NAMES)(=|\$)' >"\$GWTRACE_DIR/after"
EOF
  assert_success
  run diff "$GWTRACE_DIR/before" "$GWTRACE_DIR/after"
  assert_success
  run grep -c 'host_' "$GWTRACE_DIR/after"
  assert_output 18
}

@test "readonly host variables named like the library's locals (t, d, path, status) do not break it" {
  gw_run_raw <<'EOF'
set -e
readonly t=X d=5 path=/x status=0 a=1 z=2
source "$GWTRACE_LIB"
trace_begin s k=v
trace_end
echo alive
EOF
  assert_success
  assert_output alive
  run parse_log
  assert_output "B=1 E=1 bad=0"
}

# snapshot_script OPTIONS: a script that applies OPTIONS, then records $-,
# shopt -p, set -o and trap -p (without forking) before sourcing and after
# every call, into $GWTRACE_DIR/snap.N.
snapshot_script() {
  cat <<EOF
$1
n=0
snap() { { printf '%s\n' "\$-"; shopt -p; set -o; trap -p; } >"\$GWTRACE_DIR/snap.\$n"; n=\$((n + 1)); }
snap
source "\$GWTRACE_LIB"; snap
EOF
  local line
  while IFS= read -r line; do
    [[ -n $line ]] && printf '%s; snap\n' "$line"
  done <<<"$USE_ALL"
  echo 'trace_end; snap; trace_event orphan; snap; echo done'
}

assert_snapshots_equal() {
  local f n=0
  for f in "$GWTRACE_DIR"/snap.*; do
    n=$((n + 1))
    if ! cmp -s "$GWTRACE_DIR/snap.0" "$f"; then
      echo "${f##*/} differs from snap.0:"
      diff "$GWTRACE_DIR/snap.0" "$f"
      return 1
    fi
  done
  (( n > 10 )) || { echo "only $n snapshots"; return 1; }
}

@test "no shell option or trap changes, with default options" {
  snapshot_script "trap 'echo exiting' EXIT; trap ':' INT TERM USR1" >"$BATS_TEST_TMPDIR/snap.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/snap.sh"
  assert_success
  assert_output $'done\nexiting'
  assert_snapshots_equal
}

@test "no shell option or trap changes under set -euo pipefail -f -C and an ERR trap" {
  snapshot_script "set -euo pipefail -f -C; trap ':' ERR; trap 'echo bye' EXIT" >"$BATS_TEST_TMPDIR/snap.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/snap.sh"
  assert_success
  assert_output $'done\nbye'
  assert_snapshots_equal
}

@test "no shell option changes with nullglob, failglob, extglob, nocaseglob, nocasematch, dotglob, globstar, lastpipe and allexport set" {
  snapshot_script "shopt -s nullglob failglob extglob nocaseglob nocasematch dotglob globstar lastpipe; set -a" >"$BATS_TEST_TMPDIR/snap.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/snap.sh"
  assert_success
  assert_output "done"
  assert_snapshots_equal
  run parse_log
  assert_output "A=1 B=6 E=6 V=1 bad=0"
}

@test "under set -a, a child script that sources the library still records its spans" {
  gw_run_raw <<'EOF'
set -a
source "$GWTRACE_LIB"
trace_begin outer
bash -c 'source "$GWTRACE_LIB"; trace_begin child; trace_end'
trace_end
EOF
  assert_success
  nth_event B 1; local outer=${F[5]}
  nth_event B 2
  assert_equal "${F[10]}" child
  assert_equal "${F[6]}" "$outer"
}

@test "BASH_REMATCH from the host's last =~ is untouched" {
  gw_run <<EOF
[[ "glidein.site=FNAL" =~ ^([^=]*)=(.*)\$ ]]
declare -p BASH_REMATCH >"\$GWTRACE_DIR/before"
$USE_ALL
declare -p BASH_REMATCH >"\$GWTRACE_DIR/after"
EOF
  assert_success
  run cat "$GWTRACE_DIR/after"
  assert_output --partial '[1]="glidein.site"'
  run diff "$GWTRACE_DIR/before" "$GWTRACE_DIR/after"
  assert_success
}

@test "IFS is untouched, whether custom, default or unset" {
  gw_run <<EOF
IFS=', '; $USE_ALL
declare -p IFS
unset IFS; $USE_ALL
echo "IFS \${IFS-is unset}"
IFS=\$' \t\n'; $USE_ALL
[[ \$IFS == \$' \t\n' && \$(declare -p IFS) == "declare -- IFS="* ]] && echo "IFS is the default again"
EOF
  assert_success
  # (not declare -p's text for the default: how it quotes a TAB and a newline differs between bash versions)
  assert_output $'declare -- IFS=", "\nIFS is unset\nIFS is the default again'
}

@test "a host IFS=',' does not change the records" {
  gw_run <<'EOF'
IFS=','
trace_begin "a,b c" "list=x,y,z" "t=1 2"
trace_event "e,1" "k=a,b"
trace_end 3
EOF
  nth_event B 1
  assert_equal "${F[10]}" "a,b c"
  assert_equal "${F[11]}" "list=x,y,z"
  assert_equal "${F[12]}" "t=1 2"
  nth_event V 1
  assert_equal "${F[6]}" "e,1"
  assert_equal "${F[7]}" "k=a,b"
  nth_event E 1
  assert_equal "${F[6]}" 3
  run parse_log
  assert_output "B=1 E=1 V=1 bad=0"
}

@test "host IFS of TAB, newline, digits or empty does not change the records" {
  local ifs
  for ifs in $'\t' $'\n' '' '0123456789' '-'; do
    rm -f "$LOG"
    gw_run "$ifs" <<'EOF'
IFS=$1
trace_begin "a b" "k=v 1-2"
trace_end 10
exit 0
EOF
    assert_success
    nth_event B 1
    # ids are hex and not all zero (an IFS of digits split the unquoted
    # $(( )) given to printf, which then printed 0)
    assert_regex "${F[4]}${F[5]}" '^[0-9a-f]{48}$'
    assert_regex "${F[4]}" '[1-9a-f]'
    assert_regex "${F[5]}" '[1-9a-f]'
    assert_equal "${F[10]}" "a b"
    assert_equal "${F[11]}" "k=v 1-2"
    nth_event E 1
    assert_equal "${F[6]}" 10
  done
}

@test "host functions named printf, read, echo, export, unset and local-free builtins do not break it" {
  gw_run_raw <<'EOF'
printf() { builtin echo HIJACKED-printf; }
read() { builtin echo HIJACKED-read; return 1; }
echo() { builtin printf 'HIJACKED-echo\n'; }
export() { builtin echo HIJACKED-export; }
unset() { builtin echo HIJACKED-unset; }
source "$GWTRACE_LIB"
trace_begin outer k=v
builtin printf 'child sees %s\n' "$(bash -c 'builtin echo "${TRACEPARENT:0:3}"')"
trace_run r true
trace_event e
trace_attr a=b
trace_end
builtin printf 'after %s\n' "${TRACEPARENT-unset}"
EOF
  assert_success
  assert_output $'child sees 00-\nafter unset'
  run parse_log
  assert_output "A=1 B=2 E=2 V=1 bad=0"
}

@test "host functions named printf and read do not break the bash < 5 clock path" {
  gw_run_raw <<'EOF'
unset EPOCHREALTIME SRANDOM
printf() { builtin echo HIJACKED; }
read() { builtin echo HIJACKED; return 1; }
source "$GWTRACE_LIB"
trace_begin s
trace_end
EOF
  assert_success
  assert_output ""
  run parse_log
  assert_output "B=1 E=1 bad=0"
}

@test "under set -a, the library's state is not exported into children's environment" {
  gw_run_raw <<'EOF'
set -a
source "$GWTRACE_LIB"
trace_begin s k=v
env | grep -c '_gwtrace' || true
trace_end
EOF
  # (anywhere in a line: bash >= 4.2.48 exports a function as BASH_FUNC_name%%)
  assert_success
  assert_output 0
}
