#!/usr/bin/env bats
# End to end with the real sidecar and the embedded store:
# eval "$(gwtrace sidecar start)" -> traced script -> gwtrace sidecar stop
# -> gwtrace show --last / the store's decoded spans.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016,SC2030,SC2031  # quoted child scripts; each @test is a subshell
# shellcheck disable=SC1003  # literal backslashes in values

load test_helper

setup() {
  gw_setup
  unset GWTRACE_DIR OTEL_SERVICE_NAME OTEL_RESOURCE_ATTRIBUTES
  SC_DIR=$BATS_TEST_TMPDIR/sc
}

teardown() {
  local pid
  [[ -f $BATS_TEST_TMPDIR/sidecar.pid ]] || return 0
  pid=$(<"$BATS_TEST_TMPDIR/sidecar.pid")
  if kill -0 "$pid" 2>/dev/null; then
    gwtrace sidecar stop --dir "$SC_DIR" --timeout 15 >/dev/null 2>&1 || kill -9 "$pid" 2>/dev/null || true
  fi
}

# start_sidecar: the documented eval, on $SC_DIR; remembers the pid.
start_sidecar() {
  local exports
  exports=$(gwtrace sidecar start --dir "$SC_DIR") || fail "gwtrace sidecar start failed"
  eval "$exports"
  echo "$GWTRACE_SIDECAR_PID" >"$BATS_TEST_TMPDIR/sidecar.pid"
}

stop_sidecar() {
  run gwtrace sidecar stop --dir "$SC_DIR" --timeout 30
  assert_success
}

# spans_json [TRACE_ID]: the spans of a trace (default: the last one) as
# decoded by the store, one JSON object per line, ordered by start time.
spans_json() {
  "$GW_PY" - "${1-}" <<'EOF'
import json, sys
from gwtrace.store import TraceStore
store = TraceStore(None)
tid = sys.argv[1] or store.last_trace_id()
for s in sorted(store.get_trace(tid), key=lambda s: s["start_ns"]):
    print(json.dumps({k: s[k] for k in ("name", "trace_id", "span_id", "parent_span_id", "start_ns",
                                          "end_ns", "status_code", "status_message", "attributes", "events")},
                     sort_keys=True))
EOF
}

@test "gwtrace sidecar start prints export lines for eval: dir, file:// socket, live pid, boot time" {
  run gwtrace sidecar start --dir "$SC_DIR"
  assert_success
  eval "$output"
  echo "$GWTRACE_SIDECAR_PID" >"$BATS_TEST_TMPDIR/sidecar.pid"
  assert_line --regexp '^export GWTRACE_DIR=.*;$'
  assert_equal "$GWTRACE_DIR" "$SC_DIR"
  assert_equal "$GWTRACE_SOCKET" "file://$SC_DIR/events.log"
  kill -0 "$GWTRACE_SIDECAR_PID"
  assert_regex "$GWTRACE_BOOT_US" '^[0-9]{16}$'
  run stat -c %a "$SC_DIR"
  assert_output 700
}

@test "the documented session: nested names, durations, OK/ERROR with exit code in gwtrace show --last" {
  start_sidecar
  gw_run_raw <<'EOF'
source "$(gwtrace lib)"
trace_begin validate_node site=FNAL cores=8
  trace_run check_disk ls -d /tmp
  trace_begin nap; sleep 0.25; trace_end
  trace_run stage_out sh -c 'exit 3'
  trace_event "disk ok" free_gb=120
  trace_attr node.kind=worker
trace_end
echo "script rc=$?"
EOF
  assert_success
  assert_output $'/tmp\nscript rc=3'
  stop_sidecar
  run gwtrace show --last
  assert_success
  assert_line --index 0 --regexp '^trace [0-9a-f]{32}  service=glidein  spans=4$'
  assert_line --index 1 --regexp '^validate_node  [0-9.]+ (us|ms|s)  ERROR  \(exit code 3\)$'
  # where each failed (its trace_end's, its trace_run's line; no stderr file was registered)
  assert_line --index 2 "    at $SCRIPT:8"
  assert_line --index 3 --regexp '^  check_disk  [0-9.]+ (us|ms|s)  OK$'
  assert_line --index 4 --regexp '^  nap  (2[5-9][0-9]|[3-9][0-9][0-9])\.[0-9] ms  OK$'
  assert_line --index 5 --regexp '^  stage_out  [0-9.]+ (us|ms|s)  ERROR  \(exit code 3\)$'
  assert_line --index 6 "      at $SCRIPT:5"
  assert_equal "${#lines[@]}" 7
}

@test "the store holds the attributes, the event and the parent links the script wrote" {
  start_sidecar
  gw_run_raw <<'EOF'
source "$(gwtrace lib)"
trace_begin validate_node site=FNAL cores=8
  trace_run check_disk ls -d /tmp
  trace_event "disk ok" free_gb=120
  trace_attr node.kind=worker
trace_end ok
EOF
  assert_success
  stop_sidecar
  run spans_json ""
  assert_success
  assert_equal "${#lines[@]}" 2
  run "$GW_PY" -c '
import json, sys
# by their links, not their order: with the 10 ms clock of bash 4 both can start in one tick
outer, child = sorted((json.loads(l) for l in sys.stdin), key=lambda s: s["parent_span_id"] != "")
assert outer["parent_span_id"] == "", outer
assert child["parent_span_id"] == outer["span_id"], (child, outer)
assert child["trace_id"] == outer["trace_id"]
assert outer["attributes"]["site"] == "FNAL" and outer["attributes"]["cores"] == 8, outer["attributes"]
assert outer["attributes"]["node.kind"] == "worker"
assert outer["events"][0]["name"] == "disk ok" and outer["events"][0]["attributes"] == {"free_gb": 120}
assert child["attributes"]["process.executable.name"] == "ls", child["attributes"]
assert outer["start_ns"] <= child["start_ns"] <= child["end_ns"] <= outer["end_ns"]
print("ok")' <<<"$(spans_json "")"
  assert_success
  assert_output ok
}

@test "tricky values arrive intact in the store: spaces, =, quotes, TAB, LF, CR, backslashes, \$, globs, UTF-8" {
  local vals=('hello world' 'a=b=c' "it's \"quoted\"" $'tab\there' $'line1\nline2' $'cr\rhere'
              'back\slash \t not a tab' 'trailing\' '$HOME $(id) `uname`' '*' 'ünïcødé 日本語 🚀' '  padded  ')
  printf '%s\0' "${vals[@]}" >"$BATS_TEST_TMPDIR/vals.bin"
  start_sidecar
  gw_run_raw "$BATS_TEST_TMPDIR/vals.bin" <<'EOF'
source "$(gwtrace lib)"
trace_begin quoting
i=0
while IFS= read -r -d '' v; do trace_attr "v$i=$v"; trace_event "$v"; i=$((i + 1)); done <"$1"
trace_end
EOF
  assert_success
  stop_sidecar
  run "$GW_PY" -c '
import json, sys
want = open(sys.argv[1], "rb").read().split(b"\0")[:-1]
span = json.loads(sys.stdin.readline())
bad = 0
for i, raw in enumerate(want):
    v = raw.decode()
    got_attr = span["attributes"].get("v%d" % i)
    got_event = span["events"][i]["name"]
    if got_attr != v:
        print("attribute %d: %r != %r" % (i, got_attr, v)); bad += 1
    if got_event != v:
        print("event %d: %r != %r" % (i, got_event, v)); bad += 1
print("checked", len(want), "bad", bad)' "$BATS_TEST_TMPDIR/vals.bin" <<<"$(spans_json "")"
  assert_success
  assert_output "checked ${#vals[@]} bad 0"
}

@test "an incoming TRACEPARENT: the script's spans are stored in that trace under that parent" {
  start_sidecar
  TRACEPARENT=$TP_VALID gw_run_raw <<'EOF'
source "$(gwtrace lib)"
trace_begin pilot_step; trace_begin inner; trace_end; trace_end
EOF
  assert_success
  stop_sidecar
  run spans_json "$TP_TRACE"
  assert_success
  assert_equal "${#lines[@]}" 2
  assert_line --partial "\"parent_span_id\": \"$TP_PARENT\""
  run gwtrace show "$TP_TRACE"
  assert_line --index 1 --regexp '^pilot_step  .*  OK$'
  assert_line --index 2 --regexp '^  inner  .*  OK$'
}

@test "sidecar killed with SIGKILL mid-run: the script is unharmed and a restarted sidecar exports every span" {
  start_sidecar
  local pid=$GWTRACE_SIDECAR_PID
  gw_run_raw "$pid" <<'EOF'
source "$(gwtrace lib)"
trace_begin job
trace_run before true
kill -9 "$1"; while kill -0 "$1" 2>/dev/null; do sleep 0.05; done
trace_run after_kill sh -c 'echo still running; exit 2'
trace_event survived
trace_end 0
EOF
  assert_success
  assert_output "still running"
  assert_equal "$stderr" ""
  # the documented takeover: a new sidecar on the dead one's directory
  start_sidecar
  assert_not_equal "$GWTRACE_SIDECAR_PID" "$pid"
  stop_sidecar
  run gwtrace show --last
  assert_success
  assert_line --index 0 --partial "spans=3"
  assert_line --index 1 --regexp '^job  .*  OK$'
  assert_line --index 2 --regexp '^  before  .*  OK$'
  assert_line --index 3 --regexp '^  after_kill  .*  ERROR  \(exit code 2\)$'
}

@test "no sidecar ever started: events wait in GWTRACE_DIR and gwtrace sidecar stop exports them" {
  export GWTRACE_DIR=$BATS_TEST_TMPDIR/nosc
  mkdir -m 700 "$GWTRACE_DIR"
  gw_run_raw <<'EOF'
source "$(gwtrace lib)"
trace_begin offline; trace_run step ls -d /; trace_end
EOF
  assert_success
  assert_output "/"
  run gwtrace sidecar stop --dir "$GWTRACE_DIR" --timeout 30
  assert_success
  run gwtrace show --last
  assert_line --index 1 --regexp '^offline  .*  OK$'
  assert_line --index 2 --regexp '^  step  .*  OK$'
}

@test "a set -e script that exits inside a trace_run function leaves the span to be ended as incomplete" {
  start_sidecar
  gw_run_raw <<'EOF'
set -e
source "$(gwtrace lib)"
step() { false; }
trace_begin job
trace_run doomed step
EOF
  assert_failure 1
  stop_sidecar
  run gwtrace show --last
  assert_line --index 1 --regexp '^job  .*  ERROR.*\[incomplete\]$'
  assert_line --index 2 --regexp '^  doomed  .*  ERROR.*\[incomplete\]$'
}
