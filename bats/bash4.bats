#!/usr/bin/env bats
# The bash < 5 path, simulated by `unset EPOCHREALTIME SRANDOM` before
# sourcing in the same process: /proc/uptime (10 ms steps) plus boot time.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016,SC2030,SC2031  # quoted child scripts; each @test is a subshell

load test_helper


@test "bash<5 path: records are valid and ids well-formed" {
  { printf '%s\n' 'unset EPOCHREALTIME SRANDOM' 'source "$GWTRACE_LIB"'
    printf '%s\n' 'trace_begin outer k=v' 'trace_event e' 'trace_attr a=b' 'trace_run r true' 'trace_end' \
      'echo "${EPOCHREALTIME-no clock} ${SRANDOM-no srandom}"'
  } >"$BATS_TEST_TMPDIR/b4.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/b4.sh"
  assert_success
  assert_output "no clock no srandom"
  run parse_log
  assert_output "A=1 B=2 E=2 V=1 bad=0"
  nth_event B 2
  assert_hex_id "${F[4]}" 32
  assert_hex_id "${F[5]}" 16
}

@test "bash<5 path: timestamps are microseconds since the epoch, within 2 s of date +%s, in 10 ms steps" {
  local before after line ts
  before=$(date +%s)
  { printf '%s\n' 'unset EPOCHREALTIME SRANDOM' 'source "$GWTRACE_LIB"'
    printf '%s\n' 'trace_begin s' 'trace_event e' 'trace_end'; } >"$BATS_TEST_TMPDIR/b4.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/b4.sh"
  after=$(date +%s)
  assert_success
  log_lines
  assert_equal "${#LINES[@]}" 3
  for line in "${LINES[@]}"; do
    split_fields "$line"
    ts_us "${F[2]}"; ts=$REPLY
    (( ts >= (before - 2) * 1000000 && ts <= (after + 2) * 1000000 )) ||
      fail "timestamp $ts not within 2 s of [$before, $after]"
    (( ts % 10000 == 0 )) || fail "timestamp $ts is not from the 10 ms /proc/uptime clock"
  done
}

@test "bash<5 path: durations are non-negative and measure real time" {
  { printf '%s\n' 'unset EPOCHREALTIME SRANDOM' 'source "$GWTRACE_LIB"'
    printf '%s\n' 'trace_begin quick' 'trace_end' 'trace_begin nap' 'sleep 0.3' 'trace_end'; } >"$BATS_TEST_TMPDIR/b4.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/b4.sh"
  assert_success
  local b e
  nth_event B 1; ts_us "${F[2]}"; b=$REPLY
  nth_event E 1; ts_us "${F[2]}"; e=$REPLY
  (( e >= b )) || fail "negative duration: $b -> $e"
  nth_event B 2; ts_us "${F[2]}"; b=$REPLY
  nth_event E 2; ts_us "${F[2]}"; e=$REPLY
  (( e - b >= 280000 && e - b <= 2000000 )) || fail "sleep 0.3 measured as $((e - b)) us"
}

@test "bash<5 path: GWTRACE_BOOT_US, when set, is the base of every timestamp" {
  local up_before up_after
  read -r up_before _ </proc/uptime
  { printf '%s\n' 'unset EPOCHREALTIME SRANDOM' 'GWTRACE_BOOT_US=1000000000000000' 'source "$GWTRACE_LIB"'
    printf '%s\n' 'trace_begin s' 'trace_end'; } >"$BATS_TEST_TMPDIR/b4.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/b4.sh"
  read -r up_after _ </proc/uptime
  assert_success
  nth_event B 1
  ts_us "${F[2]}"
  local ts=$REPLY lo hi
  lo=$(( 1000000000000000 + 10#${up_before/./} * 10000 ))
  hi=$(( 1000000000000000 + 10#${up_after/./} * 10000 ))
  (( ts >= lo && ts <= hi )) || fail "timestamp $ts not in [$lo, $hi] (boot + uptime)"
}

@test "bash<5 path: a malformed GWTRACE_BOOT_US is ignored" {
  local before after
  before=$(date +%s)
  { printf '%s\n' 'unset EPOCHREALTIME SRANDOM' 'export GWTRACE_BOOT_US=12abc' 'source "$GWTRACE_LIB"'
    printf '%s\n' 'trace_begin s' 'trace_end'; } >"$BATS_TEST_TMPDIR/b4.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/b4.sh"
  after=$(date +%s)
  assert_success
  nth_event B 1
  ts_us "${F[2]}"
  (( REPLY >= (before - 2) * 1000000 && REPLY <= (after + 2) * 1000000 )) || fail "timestamp ${F[2]}"
}

@test "bash 5 path: GWTRACE_BOOT_US does not override EPOCHREALTIME" {
  (( BASH_VERSINFO[0] >= 5 )) || skip "bash ${BASH_VERSION%%(*} has no EPOCHREALTIME: the bash<5 tests below are its path"
  export GWTRACE_BOOT_US=1000000000000000
  local before
  before=$(date +%s)
  gw_run <<'EOF'
trace_begin s; trace_end
EOF
  nth_event B 1
  ts_us "${F[2]}"
  (( REPLY >= (before - 2) * 1000000 )) || fail "timestamp ${F[2]} does not come from EPOCHREALTIME"
}

@test "bash<5 path: 20 background jobs still get distinct span ids" {
  { printf '%s\n' 'unset EPOCHREALTIME SRANDOM RANDOM' 'source "$GWTRACE_LIB"'
    printf '%s\n' 'trace_begin outer' 'for i in {1..20}; do { trace_begin "j$i"; trace_end; } & done; wait' 'trace_end'
  } >"$BATS_TEST_TMPDIR/b4.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/b4.sh"
  assert_success
  assert_equal "$(count_of B)" 21
  run bash -c "grep -P '^gw1\\tB\\t' '$LOG' | cut -f6 | sort | uniq -d"
  assert_output ""
}

@test "with /proc/sys/kernel/random/uuid unreadable, trace_begin neither kills the script nor fails" {
  if [[ $EUID != 0 ]] || ! unshare -m true 2>/dev/null; then
    skip "needs root and unshare -m to hide the kernel's uuid source"
  fi
  run --separate-stderr unshare -m bash -c '
    mount --bind /dev/null /proc/sys/kernel/random/uuid || exit 99
    source "$GWTRACE_LIB"
    trace_begin s; echo alive; trace_end'
  assert_success
  assert_output alive
  run parse_log
  assert_output "B=1 E=1 bad=0"
}
