#!/usr/bin/env bats
# Nothing printed: a traced script's stdout, stderr and exit status are
# byte-identical to the same script with the trace_* calls as no-ops, and
# `set -x` shows only the script's own lines.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016  # scripts are quoted for the child bash

load test_helper

# A glidein-like script that prints on both streams and uses every function.
workload() {
  cat <<'EOF'
echo "start $*"
echo "to stderr" >&2
trace_begin validate_node site=FNAL cores=8
  trace_run check_disk ls -d /tmp
  trace_run noisy sh -c 'echo out; echo err >&2; exit 3'; echo "noisy=$?"
  trace_event "disk ok" free_gb=120; echo "event=$?"
  trace_attr node.kind=worker; echo "attr=$?"
  trace_begin inner; false; trace_end; echo "end=$?"
  trace_begin inner2; trace_end 4 why=test; echo "end=$?"
  trace_begin inner3; trace_end "message here"; echo "end=$?"
  ( trace_begin sub; echo "in subshell"; trace_end )
  v=$(trace_begin cs; echo captured; trace_end); echo "v=$v"
  { trace_begin bg; echo background; trace_end; } & wait
  printf '%s\n' "a" "b" | { trace_begin pipe; cat; trace_end; }
trace_end
trace_event after-the-end; echo "after=$?"
echo "end of script" >&2
EOF
}

@test "stdout, stderr and status are byte-identical to no-op stubs" {
  { echo 'source "$TRACE_IMPL"'; workload; } >"$BATS_TEST_TMPDIR/w.sh"
  compare_with_stubs arg1 <"$BATS_TEST_TMPDIR/w.sh"
  assert_success
  assert_output --partial "noisy=3"
  assert_output --partial "v=captured"
  assert_equal "$(count_of B)" 10
}

@test "under set -euo pipefail, output and status are byte-identical to no-op stubs" {
  { echo 'set -euo pipefail'; echo 'source "$TRACE_IMPL"'; workload | sed -e 's/^\(  trace_run noisy.*\); echo/\1 || echo/' -e 's/; false; trace_end;/; false || trace_end;/'; } \
    >"$BATS_TEST_TMPDIR/w.sh"
  compare_with_stubs arg1 <"$BATS_TEST_TMPDIR/w.sh"
  assert_success
  assert_output --partial "noisy=3"
  assert_output --partial "end=0"
}

@test "a failing script exits with the same status and output as with no-op stubs" {
  compare_with_stubs <<'EOF'
set -e
source "$TRACE_IMPL"
trace_begin outer
echo "before"
trace_run fails sh -c 'echo "failing" >&2; exit 9'
echo "never"
EOF
  assert_failure 9
  assert_output "before"
  assert_equal "$stderr" "failing"
}

@test "with the event log unwritable, output and status are byte-identical to no-op stubs" {
  rm -rf "$GWTRACE_DIR"
  { echo 'source "$TRACE_IMPL"'; workload; } >"$BATS_TEST_TMPDIR/w.sh"
  compare_with_stubs <"$BATS_TEST_TMPDIR/w.sh"
  assert_success
}

@test "under set -x, trace_begin/event/attr/end show only their call lines" {
  compare_with_stubs <<'EOF'
source "$TRACE_IMPL"
set -x
trace_begin validate_node site=FNAL
trace_event "disk ok" free_gb=120
trace_attr node.kind=worker
trace_begin inner
false
trace_end
trace_end ok
set +x
EOF
  assert_success
  assert_equal "$stderr" "$(printf '%s\n' "+ trace_begin validate_node site=FNAL" "+ trace_event 'disk ok' free_gb=120" \
    "+ trace_attr node.kind=worker" "+ trace_begin inner" "+ false" "+ trace_end" "+ trace_end ok" "+ set +x")"
}

@test "under set -x, no line mentions the library's internals" {
  gw_run <<'EOF'
set -x
trace_begin a k=v
trace_event e
trace_attr x=y
trace_end 0
set +x
EOF
  assert_success
  refute_regex "$stderr" '_gwtrace|local |builtin |printf'
  assert_equal "$(count_of B)" 1
}

@test "under set -x, trace_run shows its call and the command, not its internals" {
  gw_run <<'EOF'
set -x
trace_run step true arg
set +x
EOF
  assert_success
  assert_equal "$stderr" $'+ trace_run step true arg\n+ true arg\n+ set +x'
}

@test "with BASH_XTRACEFD set, set -x still shows no library internals" {
  skip "LIMIT (docs/design.md, Known limits): the internals are hidden only by closing fd 2; with BASH_XTRACEFD=N set -x writes every internal line of trace_* to fd N"
  gw_run <<'EOF'
exec 5>"$GWTRACE_DIR/xtrace"
BASH_XTRACEFD=5
set -x
trace_begin a
trace_end
set +x
EOF
  assert_success
  run cat "$GWTRACE_DIR/xtrace"
  assert_output $'+ trace_begin a\n+ trace_end\n+ set +x'
}

@test "an xtrace change made by the command trace_run runs is kept, as with a direct call" {
  gw_run <<'EOF'
debug_on() { set -x; }
trace_run on debug_on
echo "after on: ${-//[!x]/}"
trace_run off set +x
echo "after off: ${-//[!x]/}"
EOF
  assert_success
  assert_output $'after on: x\nafter off: '
  # Only the script's own lines and the commands trace_run ran are traced.
  run grep -c '_gwtrace' <<<"$stderr"
  assert_output 0
}
