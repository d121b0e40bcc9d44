#!/usr/bin/env bats
# Zero forks on the hot path: strace counts every clone/fork/exec of a
# traced script (the one execve is bash itself).
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016  # quoted child scripts

load test_helper

setup() {
  gw_setup
  command -v strace >/dev/null || skip "strace is not installed"
  strace -qq -o /dev/null true 2>/dev/null || skip "ptrace is not permitted here"
}

# count_forks: run $SCRIPT under strace; FORKS = clones/forks, EXECS = execs.
count_forks() {
  strace -f -qq -e trace=clone,clone3,fork,vfork,execve -o "$BATS_TEST_TMPDIR/strace" bash "$SCRIPT"
  FORKS=$(grep -cE '(clone3?|v?fork)\(' "$BATS_TEST_TMPDIR/strace" || true)
  EXECS=$(grep -c 'execve(' "$BATS_TEST_TMPDIR/strace" || true)
}

@test "sourcing the library and every call of trace_begin/event/attr/end fork nothing" {
  cat >"$SCRIPT" <<'EOF'
source "$GWTRACE_LIB"
trace_begin outer site=FNAL "msg=a	b"
trace_event e k=v
trace_attr x=y token=secret
trace_begin inner; trace_end 3; trace_end "went wrong"
trace_begin third; trace_end ok
trace_end
trace_end; trace_event none
EOF
  count_forks
  assert_equal "$FORKS" 0
  assert_equal "$EXECS" 1
  assert_equal "$(count_of B)" 3
}

@test "a host's noclobber, a readonly and an unexported TRACEPARENT fork nothing (bash < 4.4 reads their attributes back from a file)" {
  cat >"$SCRIPT" <<EOF
set -C
readonly TRACESTATE=rojo=1
TRACEPARENT=$TP_VALID
source "\$GWTRACE_LIB"
trace_begin outer; trace_event e; trace_end
declare -p TRACEPARENT
EOF
  count_forks
  assert_equal "$FORKS" 0
  assert_equal "$(count_of B)" 1
  assert_equal "$(bash "$SCRIPT")" "declare -- TRACEPARENT=\"$TP_VALID\""
}

@test "the bash < 5 clock path forks nothing" {
  cat >"$SCRIPT" <<'EOF'
unset EPOCHREALTIME SRANDOM
source "$GWTRACE_LIB"
trace_begin outer; trace_event e; trace_attr k=v; trace_end
EOF
  count_forks
  assert_equal "$FORKS" 0
  assert_equal "$(count_of B)" 1
}

@test "an incoming TRACEPARENT, an 8 KB value and a sampled-out child fork nothing" {
  cat >"$SCRIPT" <<EOF
export TRACEPARENT=$TP_VALID TRACESTATE=rojo=1
source "\$GWTRACE_LIB"
v=x; while (( \${#v} < 8000 )); do v+=\$v; done
trace_begin outer "k=\$v"; trace_end
TRACEPARENT=00-$TP_TRACE-$TP_PARENT-00 bash -c 'source "\$GWTRACE_LIB"; trace_begin s; trace_end'
EOF
  count_forks
  assert_equal "$FORKS" 1       # the script's own `bash -c`
  assert_equal "$EXECS" 2
  assert_equal "$(count_of B)" 1
}

@test "trace_run forks only to run an external command" {
  cat >"$SCRIPT" <<'EOF'
source "$GWTRACE_LIB"
f() { :; }
trace_run fn f
trace_run ev eval ':'
trace_run ext /bin/true
EOF
  count_forks
  assert_equal "$FORKS" 1
  assert_equal "$EXECS" 2
  assert_equal "$(count_of B)" 3
}

@test "a failing span notes where it failed (line, file, function), forking nothing" {
  cat >"$SCRIPT" <<'EOF2'
source "$GWTRACE_LIB"
set -u
fix_config() {
  trace_begin fix_config
  builtin false
  trace_end
}
trace_begin outer
fix_config
trace_run step builtin false
trace_end 0
EOF2
  count_forks
  assert_equal "$FORKS" 0
  assert_equal "$EXECS" 1
  local ends
  ends=$(grep -P '^gw1\tE\t' "$LOG")
  [[ $ends == *$'\t1\tcode.line.number=6\tcode.file.path='"$SCRIPT"$'\tcode.function.name=fix_config'* ]]
  [[ $ends == *$'\t1\tcode.line.number=10\tcode.file.path='"$SCRIPT"* ]]
  # a span that ends well carries nothing more
  [[ $(grep -P '^gw1\tE\t' "$LOG" | tail -1) == *$'\t0' ]]
}

@test "the auto layer notes where a span failed, at every level, forking only for the script's own command" {
  local level acc
  cat >"$BATS_TEST_TMPDIR/failing.sh" <<'EOF2'
fix_config() {
  sed -e '/unterminated' /dev/null
}
fix_config
echo after
EOF2
  for level in scripts functions commands; do
    for acc in 1 0; do
      rm -f "$LOG"
      printf '%s\n' "export GWTRACE_ACCEL=$acc GWTRACE_AUTO_LEVEL=$level BASH_ENV=$GW_ROOT/bash/gwtrace-auto.sh" \
        "bash $BATS_TEST_TMPDIR/failing.sh 2>/dev/null" >"$SCRIPT"
      count_forks
      assert_equal "$FORKS $EXECS" "2 3"      # the traced bash, and its sed
      grep -qP '^gw1\tE\t.*\t1\tcode.line.number=4\tcode.file.path='"$BATS_TEST_TMPDIR"'/failing.sh\tcode.function.name=fix_config$' "$LOG" \
        || fail "$level (accelerator $acc): no E line with where for fix_config: $(cat "$LOG")"
      if [[ $level == commands ]]; then
        grep -qP '^gw1\tE\t.*\t1\tcode.line.number=2\tcode.file.path=.*\tgwtrace.failed.command=sed$' "$LOG" \
          || fail "commands (accelerator $acc): no E line with where for sed"
      fi
    done
  done
}

@test "commands: recording a program alone in \$(...) forks nothing more than the script does (issue 27 §4)" {
  cat >"$SCRIPT" <<'EOF'
v=$(grep -c x /dev/null)
n=$(date | head -1)
u=`true`
f() { cat /dev/null; local z=$(uname -s); }
f
EOF
  count_forks
  local plain=$FORKS
  GWTRACE_AUTO_LEVEL=commands BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" count_forks
  assert_equal "$FORKS" "$plain"
  run awk -F'\t' '$2 == "B" && $12 == "gwtrace.kind=command" { print $11 }' "$LOG"
  assert_output $'grep\ndate\nhead\ncat\nuname'
}
