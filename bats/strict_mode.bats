#!/usr/bin/env bats
# Host scripts under `set -euo pipefail`, and $? preservation without it.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run

load test_helper

@test "under set -euo pipefail a script using every function runs to its end" {
  gw_run_raw <<'EOF'
set -euo pipefail
source "$GWTRACE_LIB"
trace_begin validate_node site=FNAL cores=8
trace_run check_disk true
trace_event "disk ok" free_gb=120
trace_attr node.kind=worker
trace_begin inner
trace_end ok
trace_begin failing
trace_end error
trace_begin failing2
trace_end "a message"
trace_begin failing3
trace_end 3
trace_end
echo "reached the end"
EOF
  assert_success
  assert_output "reached the end"
  assert_equal "$stderr" ""
  assert_equal "$(count_of B)" 6   # 5 spans + the trace_run span
  assert_equal "$(count_of E)" 6
}

@test "under set -e, 'cmd || trace_end' after a failure records it and does not exit" {
  gw_run_raw <<'EOF'
set -euo pipefail
source "$GWTRACE_LIB"
trace_begin stage_in
false || trace_end
echo "still running rc=$?"
EOF
  assert_success
  assert_output "still running rc=0"
  nth_event E 1
  assert_equal "${F[6]}" 1
}

@test "under set -e, trace_end in an else branch records the failure and does not exit" {
  gw_run_raw <<'EOF'
set -euo pipefail
source "$GWTRACE_LIB"
trace_begin probe
if (exit 4); then trace_end; else trace_end; fi
echo "still running"
EOF
  assert_success
  assert_output "still running"
  nth_event E 1
  assert_equal "${F[6]}" 4
}

@test "under set -e, trace_end with a failing STATUS returns 0" {
  gw_run_raw <<'EOF'
set -e
source "$GWTRACE_LIB"
trace_begin a; trace_end 7
trace_begin b; trace_end error
trace_begin c; trace_end "went wrong"
echo "rc=$?"
EOF
  assert_success
  assert_output "rc=0"
  assert_equal "$(count_of E)" 3
}

@test "under set -e every function returns 0 after a handled failure" {
  gw_run_raw <<'EOF'
set -euo pipefail
source "$GWTRACE_LIB"
false || trace_begin s;  echo "begin=$?"
false || trace_event e;  echo "event=$?"
false || trace_attr k=v; echo "attr=$?"
false || trace_end;      echo "end=$?"
EOF
  assert_success
  assert_output $'begin=0\nevent=0\nattr=0\nend=0'
}

@test "without set -e, \$? after trace_begin, trace_event and trace_attr is what it was before" {
  gw_run <<'EOF'
false; trace_begin s; echo "begin=$?"
(exit 42); trace_event e; echo "event=$?"
(exit 3); trace_attr k=v; echo "attr=$?"
true; trace_event e; echo "event=$?"
EOF
  assert_success
  assert_output $'begin=1\nevent=42\nattr=3\nevent=0'
  assert_equal "$(count_of B)" 1
  assert_equal "$(count_of V)" 2
}

@test "without set -e, \$? is kept by calls that have no open span" {
  gw_run <<'EOF'
false; trace_event x; echo "event=$?"
false; trace_attr k=v; echo "attr=$?"
false; trace_end; echo "end=$?"
EOF
  assert_success
  assert_output $'event=1\nattr=1\nend=1'
  assert_no_log
}

@test "calls with no open span are silent no-ops under set -euo pipefail" {
  gw_run_raw <<'EOF'
set -euo pipefail
source "$GWTRACE_LIB"
trace_end
trace_end 3
trace_end error
trace_event orphan k=v
trace_attr k=v
trace_begin s; trace_end; trace_end; trace_end
echo done
EOF
  assert_success
  assert_output "done"
  assert_equal "$stderr" ""
  log_lines
  assert_equal "${#LINES[@]}" 2
}

@test "set -u with TRACEPARENT, TRACESTATE and every GWTRACE_/OTEL_ variable unset" {
  unset GWTRACE_DIR GWTRACE_HOME
  gw_run_raw <<'EOF'
set -euo pipefail
unset TRACEPARENT TRACESTATE GWTRACE_DIR GWTRACE_SOCKET GWTRACE_DISABLED GWTRACE_BOOT_US OTEL_SDK_DISABLED
source "$GWTRACE_LIB"
trace_begin s k=v
trace_event e; trace_attr a=b; trace_run r true
trace_end
echo "done TRACEPARENT=${TRACEPARENT-unset}"
EOF
  assert_success
  assert_output "done TRACEPARENT=unset"
  assert_equal "$stderr" ""
}

@test "set -u with the library sourced before set -u and arrays in use" {
  gw_run <<'EOF'
set -euo pipefail
for i in 1 2 3; do trace_begin "l$i"; done
for i in 1 2 3; do trace_end; done
trace_end
echo ok
EOF
  assert_success
  assert_output ok
  assert_equal "$(count_of E)" 3
}

@test "under set -e, trace_run of a failing command stops the script like the bare command, after recording it" {
  gw_run_raw <<'EOF'
set -e
source "$GWTRACE_LIB"
trace_run fails sh -c 'exit 5'
echo unreachable
EOF
  assert_failure 5
  assert_output ""
  nth_event E 1
  assert_equal "${F[6]}" 5
}

@test "under set -e, trace_run in an if condition hands the status to the if" {
  gw_run_raw <<'EOF'
set -euo pipefail
source "$GWTRACE_LIB"
if trace_run probe sh -c 'exit 2'; then echo yes; else echo "no rc=$?"; fi
trace_run ok true && echo "ok rc=$?"
EOF
  assert_success
  assert_output $'no rc=2\nok rc=0'
}

@test "under set -e, a failing command inside a trace_run shell function still stops the script" {
  gw_run_raw <<'EOF'
set -e
source "$GWTRACE_LIB"
step() { false; echo "not reached in step"; }
trace_run step step
echo "not reached after"
EOF
  assert_failure 1
  assert_output ""
  assert_equal "$(count_of B)" 1
  assert_equal "$(count_of E)" 0    # the sidecar ends it as incomplete
}

@test "with set -eE and an ERR trap, the trap fires only for the host's own failures" {
  compare_with_stubs <<'EOF'
set -eE
trap 'echo "ERR at line $LINENO"' ERR
source "$TRACE_IMPL"
trace_begin s
false || trace_end
trace_begin t
trace_event e; trace_attr k=v
trace_end 3
echo done
f() { return 6; }; f
EOF
  assert_failure 6
  # (f called on its own line: bash < 4.4 reports the line of f's last command)
  assert_output $'done\nERR at line 10'
}

@test "with set -E and an ERR trap (no -e), the trap fires as often as with no-op stubs" {
  compare_with_stubs <<'EOF'
set -E
trap 'echo "ERR ${FUNCNAME[0]-main}"' ERR
source "$TRACE_IMPL"
trace_begin s
false
trace_event e
trace_end
EOF
}

@test "with an ERR trap and no errtrace, the trap fires as often as with no-op stubs" {
  compare_with_stubs <<'EOF'
trap 'echo "ERR at line $LINENO"' ERR
source "$TRACE_IMPL"
trace_begin s
false
trace_event e
trace_end
trace_begin t
trace_run r false
trace_end
echo end
EOF
  # each call that keeps the failing $? fires the trap, on the caller's line
  # (not on one of the library's, as bash 4.2 reported it)
  assert_output "$(printf 'ERR at line %s\n' 4 5 6 7 8 9; echo end)"
}

@test "a readonly TRACEPARENT does not make trace_begin kill a set -e script" {
  gw_run_raw <<EOF
set -e
readonly TRACEPARENT=$TP_VALID
source "\$GWTRACE_LIB"
trace_begin s || true
echo alive
trace_end
EOF
  assert_success
  assert_output alive
}
