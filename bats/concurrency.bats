#!/usr/bin/env bats
# Subshells, command substitutions, pipelines, background jobs and
# concurrent writer processes.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run

load test_helper

# assert_unique_ids FIELD: values of FIELD over all B records are distinct,
# valid ids; prints how many there are into N_IDS.
assert_unique_ids() {
  local lines line ids=() len=16
  [[ $1 == 4 ]] && len=32
  mapfile -t lines < <(events_of B)
  for line in "${lines[@]}"; do
    split_fields "$line"
    assert_hex_id "${F[$1]}" "$len"
    ids+=("${F[$1]}")
  done
  N_IDS=${#ids[@]}
  local dups
  dups=$(printf '%s\n' "${ids[@]}" | sort | uniq -d)
  [[ -z $dups ]] || { echo "duplicate ids: $dups"; return 1; }
}

@test "a span begun in ( ... ) is a child of the open span with its own id, and the parent's stack is unaffected" {
  gw_run <<'EOF'
trace_begin outer
before=$TRACEPARENT
( trace_begin sub; trace_event inside; )
[[ $TRACEPARENT == "$before" ]] && echo "TRACEPARENT unchanged"
trace_event after
trace_end 0
echo "after end: ${TRACEPARENT-unset}"
EOF
  assert_success
  assert_output $'TRACEPARENT unchanged\nafter end: unset'
  nth_event B 1; local tr=${F[4]} outer=${F[5]}
  nth_event B 2
  assert_equal "${F[4]}" "$tr"
  assert_equal "${F[6]}" "$outer"
  assert_not_equal "${F[5]}" "$outer"
  local sub=${F[5]}
  nth_event V 1; assert_equal "${F[5]}" "$sub"
  nth_event V 2; assert_equal "${F[5]}" "$outer"    # the parent's innermost span
  assert_equal "$(count_of E)" 1
  nth_event E 1; assert_equal "${F[5]}" "$outer"
}

@test "a subshell's records carry the subshell's pid" {
  gw_run <<'EOF'
trace_begin outer
echo "$BASHPID"
( echo "$BASHPID"; trace_begin sub; trace_end )
trace_end
EOF
  assert_success
  nth_event B 1; assert_equal "${F[3]}" "${lines[0]}"
  nth_event B 2; assert_equal "${F[3]}" "${lines[1]}"
  assert_not_equal "${lines[0]}" "${lines[1]}"
}

@test "a span begun in \$( ... ) is a child of the open span and prints nothing into the capture" {
  gw_run <<'EOF'
trace_begin outer
got=$(trace_begin captured; echo "$TRACEPARENT"; trace_event e; trace_end)
echo "$got"
echo "$TRACEPARENT"
trace_end
EOF
  assert_success
  nth_event B 1; local tr=${F[4]} outer=${F[5]}
  nth_event B 2
  assert_equal "${F[6]}" "$outer"
  assert_equal "${lines[0]}" "00-$tr-${F[5]}-01"
  assert_equal "${lines[1]}" "00-$tr-$outer-01"
}

@test "spans begun in a pipeline's elements get distinct ids under the same parent" {
  gw_run <<'EOF'
trace_begin outer
{ trace_begin left; echo data; trace_end; } | { trace_begin right; cat >/dev/null; trace_end; }
trace_end
EOF
  assert_success
  nth_event B 1; local outer=${F[5]}
  assert_equal "$(count_of B)" 3
  nth_event B 2; assert_equal "${F[6]}" "$outer"
  nth_event B 3; assert_equal "${F[6]}" "$outer"
  assert_unique_ids 5
}

@test "50 parallel background jobs (101 spans) get distinct, non-zero span ids; each job span is a child of the open span" {
  gw_run <<'EOF'
trace_begin outer
for i in {1..50}; do
  { trace_begin "job$i"; trace_begin "nested$i"; trace_end; trace_end; } &
done
wait
trace_end
EOF
  assert_success
  assert_equal "$(count_of B)" 101
  assert_equal "$(count_of E)" 101
  assert_unique_ids 5
  assert_equal "$N_IDS" 101
  nth_event B 1; local tr=${F[4]} outer=${F[5]}
  local line jobs=0
  while IFS= read -r line; do
    split_fields "$line"
    assert_equal "${F[4]}" "$tr"
    if [[ ${F[10]} == job* ]]; then
      assert_equal "${F[6]}" "$outer"
      jobs=$((jobs + 1))
    fi
  done < <(events_of B)
  assert_equal "$jobs" 50
}

@test "nested spans in a background job are children of the job's span" {
  gw_run <<'EOF'
trace_begin outer
{ trace_begin job; trace_begin nested; trace_end; trace_end; } &
wait
trace_end
EOF
  assert_success
  local job nested
  nth_event B 2; job=${F[5]}; assert_equal "${F[10]}" job
  nth_event B 3; nested=${F[6]}; assert_equal "${F[10]}" nested
  assert_equal "$nested" "$job"
}

@test "50 parallel background jobs with no open span start 50 distinct traces" {
  gw_run <<'EOF'
for i in {1..50}; do { trace_begin "root$i"; trace_end; } & done
wait
EOF
  assert_success
  assert_equal "$(count_of B)" 50
  assert_unique_ids 4
  assert_unique_ids 5
  local line
  while IFS= read -r line; do
    assert_equal "$(field 6 "$line")" -
  done < <(events_of B)
}

@test "spans begun in the parent after subshells never reuse a subshell's id" {
  gw_run <<'EOF'
trace_begin outer
for i in 1 2 3 4 5; do
  ( trace_begin "sub$i"; trace_end )
  x=$(trace_begin "cs$i"; trace_end)
  trace_begin "parent$i"; trace_end
done
trace_end
EOF
  assert_success
  assert_equal "$(count_of B)" 16
  assert_unique_ids 5
}

@test "a background job keeps running its spans while the parent ends its own" {
  gw_run <<'EOF'
trace_begin outer
{ trace_begin slow; sleep 0.2; trace_end; } &
trace_end
echo "parent: ${TRACEPARENT-unset}"
wait
EOF
  assert_success
  assert_output "parent: unset"
  nth_event B 1; local outer=${F[5]}
  nth_event B 2; assert_equal "${F[6]}" "$outer"
  assert_equal "$(count_of E)" 2
}

@test "4 concurrent writer processes x 500 span pairs: exactly 4000 B and 4000 E records, every line parses, none torn" {
  local writer=$BATS_TEST_TMPDIR/writer.sh
  cat >"$writer" <<'EOF'
source "$GWTRACE_LIB"
pad=$(printf '%*s' "$2" '' | tr ' ' "$1")
for ((i = 0; i < 500; i++)); do
  trace_begin "span$1.$i" "pad=$pad"
  trace_begin "child$1.$i"
  trace_end 0 "pad=$pad"
  trace_end
done
EOF
  local pids=() w
  # lines from about 100 bytes to nearly the 4 KB atomic-write limit
  for w in a:10 b:900 c:2000 d:3800; do
    bash "$writer" "${w%%:*}" "${w#*:}" &
    pids+=($!)
  done
  for w in "${pids[@]}"; do wait "$w"; done
  run parse_log
  assert_output "B=4000 E=4000 bad=0"
  # every writer's spans are intact and their pad has the full length
  run "$GW_PY" - "$LOG" <<'EOF'
import sys, collections
from gwtrace.wire.events import parse_line
want = {"a": 10, "b": 900, "c": 2000, "d": 3800}
spans = collections.Counter()
for raw in open(sys.argv[1], "rb").read().split(b"\n")[:-1]:
    assert len(raw) < 4096, len(raw)
    e = parse_line(raw)
    attrs = dict(e.attributes)
    if "pad" in attrs:
        w = attrs["pad"][0]
        assert attrs["pad"] == w * want[w], (e.kind, len(attrs["pad"]))
        spans[w, e.kind] += 1
print(sorted(spans.items()))
EOF
  assert_success
  assert_output "[(('a', 'B'), 500), (('a', 'E'), 500), (('b', 'B'), 500), (('b', 'E'), 500), (('c', 'B'), 500), (('c', 'E'), 500), (('d', 'B'), 500), (('d', 'E'), 500)]"
}
