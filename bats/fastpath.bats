#!/usr/bin/env bats
# trace_begin/trace_end have a fast path for the common case and a general
# path for everything else (docs/design.md, "The bash library"): both must
# write the same records and keep the same state. Span ids are a random
# per-process prefix and a counter: well-formed, never all zero, unique
# across processes and across a new prefix.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016,SC2030,SC2031  # quoted child scripts; each @test is a subshell

load test_helper

# normalize_log FILE: the records with ids, timestamps and pids replaced by
# the order in which each value first appears (so two runs compare equal).
normalize_log() {
  awk -F'\t' -v OFS='\t' '
    function id(v) { if (v == "-") return v; if (!(v in seen)) seen[v] = "id" (++n); return seen[v] }
    { $3 = "ts"; $4 = "pid"; $5 = id($5); $6 = id($6); if ($2 == "B") $7 = id($7); print }' "$1"
}

# A workload that takes every kind of call through both paths.
WORKLOAD='
trace_begin outer site=FNAL
for i in 1 2 3; do
  trace_begin "step $i" "i=$i" k2=v2
  trace_event tick n=$i
  false || trace_end
  trace_begin inner; trace_end 7
done
trace_begin four a=1 b=2 c=3 d=4; trace_end ok
trace_begin esc "v=a	b"; trace_end
trace_begin redact token=abc; trace_end 0 x=y
trace_run cmd true
f() { trace_begin in_f; trace_end; }
trace_run fn f
( trace_begin sub; trace_end )
trace_attr a=b
trace_end 0
trace_begin second; trace_begin nested; trace_end; trace_end 3
echo "status $? tp ${TRACEPARENT-unset}"
'

# COUNTING: count the calls of the general paths into $GWTRACE_DIR/general.
COUNTING='
eval "_orig$(declare -f _gwtrace_begin)"; eval "_orig$(declare -f _gwtrace_end)"
_gwtrace_begin() { echo b >>"$GWTRACE_DIR/general"; _orig_gwtrace_begin "$@"; }
_gwtrace_end() { echo e >>"$GWTRACE_DIR/general"; _orig_gwtrace_end "$@"; }
'

@test "the fast and the general path write the same records and leave the same state" {
  gw_run <<<"$COUNTING$WORKLOAD"
  assert_success
  local fast_out=$output
  normalize_log "$LOG" >"$BATS_TEST_TMPDIR/fast"
  # most calls took the fast path (the 7 failing ends take the general one, which notes where)
  run grep -c . "$GWTRACE_DIR/general"
  (( output < 23 )) || fail "$output of 32 calls took the general path"
  rm -f "$LOG" "$GWTRACE_DIR/general"
  # OTEL_SDK_DISABLED=false leaves tracing on but keeps every call off the fast path.
  OTEL_SDK_DISABLED=false gw_run <<<"$COUNTING$WORKLOAD"
  assert_success
  assert_equal "$output" "$fast_out"
  assert_output "status 3 tp unset"
  run grep -c . "$GWTRACE_DIR/general"
  assert_output 32
  normalize_log "$LOG" >"$BATS_TEST_TMPDIR/general"
  run diff "$BATS_TEST_TMPDIR/general" "$BATS_TEST_TMPDIR/fast"
  assert_success
  run parse_log
  assert_output "A=1 B=16 E=16 V=3 bad=0"
}

@test "span ids are 16 lower-case hex digits, never all zero, and TRACEPARENT carries them" {
  gw_run <<'EOF'
trace_begin a
for i in {1..30}; do trace_begin "s$i"; echo "$TRACEPARENT"; trace_end; done
trace_end
EOF
  assert_success
  local line
  while IFS= read -r line; do
    [[ $line =~ ^00-[0-9a-f]{32}-[0-9a-f]{16}-01$ ]] || fail "bad TRACEPARENT $line"
  done <<<"$output"
  while IFS= read -r line; do
    split_fields "$line"
    assert_hex_id "${F[5]}" 16
  done < <(events_of B)
}

@test "9100 spans in one process (past the end of a prefix's counter): ids stay unique and well-formed" {
  gw_run <<'EOF'
trace_begin outer
for ((i = 0; i < 9100; i++)); do trace_begin s; trace_end; done
trace_end
EOF
  assert_success
  assert_equal "$(count_of B)" 9101
  run bash -c "awk -F'\t' '\$2 == \"B\" {print \$6}' '$LOG' | sort | uniq -d"
  assert_output ""
  run bash -c "awk -F'\t' '\$2 == \"B\" {print \$6}' '$LOG' | grep -Evx '[0-9a-f]{16}'"
  assert_output ""
  # a new random prefix (the first 12 digits) once the counter runs out
  run bash -c "awk -F'\t' '\$2 == \"B\" {print substr(\$6, 1, 12)}' '$LOG' | sort -u | wc -l"
  assert_output 2
}

@test "50 sibling subshells, command substitutions and nested subshells forked at the same counter value get distinct ids" {
  gw_run <<'EOF'
trace_begin outer
for i in {1..50}; do ( trace_begin "sub$i"; trace_end ) & done
wait
for i in {1..10}; do x=$(trace_begin "cs$i"; trace_end); ( ( trace_begin "nest$i"; trace_end ) ); done
trace_begin after; trace_end
trace_end
EOF
  assert_success
  assert_equal "$(count_of B)" 72
  run bash -c "awk -F'\t' '\$2 == \"B\" {print \$6}' '$LOG' | sort | uniq -d"
  assert_output ""
  run bash -c "awk -F'\t' '\$2 == \"B\" {print \$6}' '$LOG' | grep -Evx '[0-9a-f]{16}'"
  assert_output ""
}

@test "the bash < 5 clock and reseeding (no EPOCHREALTIME, no SRANDOM): sibling subshells get distinct ids" {
  { printf '%s\n' 'unset EPOCHREALTIME SRANDOM' 'source "$GWTRACE_LIB"'
    printf '%s\n' 'trace_begin outer' 'for i in {1..30}; do ( trace_begin "j$i"; trace_begin n; trace_end; trace_end ) & done; wait' 'trace_end'
  } >"$BATS_TEST_TMPDIR/b4.sh"
  gw_run_raw <"$BATS_TEST_TMPDIR/b4.sh"
  assert_success
  assert_equal "$(count_of B)" 61
  run bash -c "awk -F'\t' '\$2 == \"B\" {print \$6}' '$LOG' | sort | uniq -d"
  assert_output ""
  run parse_log
  assert_output "B=61 E=61 bad=0"
}

@test "TRACEPARENT unset by the host inside a span: the next span exports its own, and unset comes back after it" {
  gw_run <<'EOF'
trace_begin outer
unset TRACEPARENT
trace_begin inner
bash -c 'echo "child ${TRACEPARENT:0:3}"'
trace_end
echo "after inner: ${TRACEPARENT-unset}"
trace_end
echo "after outer: ${TRACEPARENT-unset}"
EOF
  assert_success
  assert_output $'child 00-\nafter inner: unset\nafter outer: unset'
}

@test "GWTRACE_DIR changed between calls: the next record goes to the new event log" {
  mkdir -m 700 "$BATS_TEST_TMPDIR/gw2"
  gw_run "$BATS_TEST_TMPDIR/gw2" <<'EOF'
trace_begin outer
trace_begin one; trace_end
GWTRACE_DIR=$1
trace_begin two; trace_end
trace_end
EOF
  assert_success
  run cut -f2,11 "$LOG"
  assert_output $'B\touter\nB\tone\nE'
  LOG=$BATS_TEST_TMPDIR/gw2/events.log
  run cut -f2,11 "$LOG"
  assert_output $'B\ttwo\nE\nE'
}

@test "an event log directory whose name has glob characters works (general path)" {
  local dir=$BATS_TEST_TMPDIR/'g[1]*?'
  mkdir -m 700 "$dir"
  GWTRACE_DIR=$dir gw_run <<'EOF'
trace_begin outer; trace_begin inner k=v; trace_end; trace_end
EOF
  assert_success
  LOG=$dir/events.log
  run parse_log
  assert_output "B=2 E=2 bad=0"
}

@test "a signal trap that traces, firing during 2000 span pairs, leaves every record valid and ids unique" {
  gw_run <<'EOF'
trap 'trace_begin in_trap; trace_event t; trace_end' USR1
trace_begin outer
( for i in {1..40}; do kill -USR1 $$ 2>/dev/null; sleep 0.01; done ) &
for ((i = 0; i < 2000; i++)); do trace_begin s "i=$i"; trace_end; done
wait
trace_end
echo "depth $_gwtrace_depth tp ${TRACEPARENT-unset}"
EOF
  assert_success
  assert_output "depth 0 tp unset"
  run bash -c "awk -F'\t' '\$2 == \"B\" {print \$6}' '$LOG' | sort | uniq -d"
  assert_output ""
  run bash -c "awk -F'\t' '\$2 == \"B\" {b++} \$2 == \"E\" {e++} \$2 == \"B\" && \$11 == \"in_trap\" {t++} END {print (b == e), (t > 0)}' '$LOG'"
  assert_output "1 1"
  run parse_log
  assert_line --regexp 'bad=0$'
}
