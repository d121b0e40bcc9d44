#!/usr/bin/env bats
# GWTRACE_DISABLED=1 and OTEL_SDK_DISABLED=true make every function a no-op.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016,SC2030,SC2031  # quoted child scripts; each @test is a subshell

load test_helper

# A script that prints $? after every call and what a child sees.
DISABLED_SCRIPT='
false; trace_begin outer k=v; echo "begin=$?"
bash -c '\''echo "child=${TRACEPARENT-unset}"'\''
(exit 3); trace_event e; echo "event=$?"
(exit 4); trace_attr a=b; echo "attr=$?"
trace_run r sh -c "exit 6"; echo "run=$?"
(exit 5); trace_end; echo "end=$?"
echo "after=${TRACEPARENT-unset}"
'

@test "GWTRACE_DISABLED=1: no records, no TRACEPARENT, \$? kept, commands still run" {
  export GWTRACE_DISABLED=1
  gw_run <<<"$DISABLED_SCRIPT"
  assert_success
  assert_output $'begin=1\nchild=unset\nevent=3\nattr=4\nrun=6\nend=5\nafter=unset'
  assert_equal "$stderr" ""
  assert_no_log
  [[ ! -e $LOG ]]
}

@test "OTEL_SDK_DISABLED=true: no records, no TRACEPARENT, \$? kept" {
  export OTEL_SDK_DISABLED=true
  gw_run <<<"$DISABLED_SCRIPT"
  assert_success
  assert_output $'begin=1\nchild=unset\nevent=3\nattr=4\nrun=6\nend=5\nafter=unset'
  assert_no_log
}

@test "OTEL_SDK_DISABLED is case-insensitive (TRUE, True)" {
  local v
  for v in TRUE True; do
    OTEL_SDK_DISABLED=$v gw_run <<<"$DISABLED_SCRIPT"
    assert_success
    assert_no_log
  done
}

@test "when disabled, an incoming TRACEPARENT is left exactly as it was for children" {
  export GWTRACE_DISABLED=1 TRACEPARENT=$TP_VALID
  gw_run <<'EOF'
trace_begin outer
bash -c 'echo "$TRACEPARENT"'
trace_end
echo "$TRACEPARENT"
EOF
  assert_success
  assert_output "$TP_VALID"$'\n'"$TP_VALID"
  assert_no_log
}

@test "when disabled under set -euo pipefail nothing fails and trace_end keeps 0" {
  export OTEL_SDK_DISABLED=true
  gw_run_raw <<'EOF'
set -euo pipefail
source "$GWTRACE_LIB"
trace_begin s
false || trace_end
trace_end error
trace_event e; trace_attr k=v
echo "done"
EOF
  assert_success
  assert_output "done"
  assert_no_log
}

@test "GWTRACE_DISABLED=0, empty, and OTEL_SDK_DISABLED=false leave tracing on" {
  local setting
  for setting in GWTRACE_DISABLED=0 GWTRACE_DISABLED= OTEL_SDK_DISABLED=false OTEL_SDK_DISABLED=; do
    rm -f "$LOG"
    env "$setting" bash -c 'source "$GWTRACE_LIB"; trace_begin s; trace_end'
    assert_equal "$(count_of B)" 1
  done
}

@test "switching GWTRACE_DISABLED=1 on between spans stops recording from then on" {
  gw_run <<'EOF'
trace_begin recorded; trace_end
GWTRACE_DISABLED=1
trace_begin not_recorded; trace_end
echo "${TRACEPARENT-unset}"
EOF
  assert_success
  assert_output unset
  assert_equal "$(count_of B)" 1
  nth_event B 1
  assert_equal "${F[10]}" recorded
}
