#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031  # each test exports its own GWTRACE_SOCKET
# Nothing gwtrace puts on a worker node blocks a script, writes where it
# should not or changes what the script does (issue 27 §3): the event log
# must be gwtrace's, the script's own functions named like builtins change
# nothing, and values are cut at the same place whatever the locale.

load test_helper

AUTO="$GW_ROOT/bash/gwtrace-auto.sh"

# traced LEVEL SCRIPT...: run bash SCRIPT at LEVEL under the auto layer, bounded.
traced() {
  local level=$1
  shift
  run --separate-stderr timeout 20 env BASH_ENV="$AUTO" GWTRACE_AUTO_LEVEL="$level" TRACEPARENT="$TP_VALID" bash "$@"
}

@test "GWTRACE_SOCKET naming a FIFO blocks neither the library nor the auto layer" {
  mkfifo "$BATS_TEST_TMPDIR/fifo"
  export GWTRACE_SOCKET="file://$BATS_TEST_TMPDIR/fifo"
  gw_run <<'EOF'
trace_begin a k=v
trace_run b true
trace_event e
trace_end
echo finished
EOF
  assert_success
  assert_output finished
  printf 'f() { echo in-f; }\nf\nls / >/dev/null\necho finished\n' >"$SCRIPT"
  for level in scripts functions commands; do
    traced "$level" "$SCRIPT"
    assert_success
    assert_output $'in-f\nfinished'
  done
}

@test "a file that is not an event log of gwtrace's (a copy of /etc/passwd) is never appended to" {
  printf 'root:x:0:0:root:/root:/bin/bash\n' >"$BATS_TEST_TMPDIR/passwd"
  cp "$BATS_TEST_TMPDIR/passwd" "$BATS_TEST_TMPDIR/passwd.orig"
  export GWTRACE_SOCKET="file://$BATS_TEST_TMPDIR/passwd"
  gw_run <<'EOF'
trace_begin a
trace_end
echo finished
EOF
  assert_success
  printf 'f() { :; }\nf\necho finished\n' >"$SCRIPT"
  for level in scripts functions commands; do
    traced "$level" "$SCRIPT"
    assert_success
  done
  run cmp "$BATS_TEST_TMPDIR/passwd" "$BATS_TEST_TMPDIR/passwd.orig"
  assert_success
}

@test "an event log of gwtrace's (empty, or starting with gw1) is appended to" {
  : >"$LOG"
  gw_run <<'EOF'
trace_begin first
trace_end
EOF
  assert_success
  gw_run <<'EOF'
trace_begin second
trace_end
EOF
  assert_equal "$(count_of B)" 2
}

@test "the script's own functions named shift, local, return, declare, set, shopt, printf change nothing the library does" {
  gw_run <<'EOF'
shift() { echo "host shift"; }
local() { echo "host local"; }
return() { echo "host return"; }
declare() { echo "host declare"; }
set() { echo "host set"; }
shopt() { echo "host shopt"; }
printf() { echo "host printf"; }
inner() { echo "inner ran with $#: $*"; }
trace_begin outer a=1
trace_run inner_span inner true
echo "rc=$?"
trace_event ev k=v
trace_attr x=y api_token=abc url=https://u:pw@h/x
trace_run failing_span builtin false
trace_end "failed with --password=hunter2"
echo end
EOF
  assert_success
  assert_output $'inner ran with 1: true\nrc=0\nend'
  refute grep -q -e abc -e u:pw -e hunter2 "$LOG"       # the secrets rule still redacts
  grep -q 'api_token=\[REDACTED\]' "$LOG"
  nth_event B 2
  assert_equal "${F[10]}" inner_span
  nth_event E 1
  assert_equal "${F[6]}" 0
}
