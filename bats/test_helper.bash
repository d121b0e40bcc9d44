# shellcheck shell=bash
# shellcheck disable=SC2034  # variables here are read by the .bats files
#
# Shared helpers for the bats suite of bash/gwtrace.sh.
#
# Every scenario runs in a new `bash` process (gw_run / gw_run_raw), because
# the library's contract is about what a host script sees. The scenario's
# events land in $LOG ($GWTRACE_DIR/events.log, no sidecar needed); helpers
# below split its TAB-separated lines the way sidecar/gwtrace/wire/events.py does.
#
# Field numbers are protocol.py's `fields[i]` (0-based):
#   0 gw1  1 kind  2 ts_us  3 pid  4 trace_id  5 span_id
#   B: 6 parent|-  7 remote  8 flags  9 tracestate|-  10 name  11.. k=v
#   E: 6 status  7.. k=v     V: 6 name  7.. k=v     A: 6.. k=v

bats_require_minimum_version 1.5.0

GW_ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
load "$GW_ROOT/.tools/node_modules/bats-support/load"
load "$GW_ROOT/.tools/node_modules/bats-assert/load"

export GWTRACE_LIB="$GW_ROOT/bash/gwtrace.sh"
GW_PY="$GW_ROOT/.venv/bin/python"
PATH="$GW_ROOT/.venv/bin:$PATH"

# A valid incoming W3C context used by several files.
TP_TRACE=4bf92f3577b34da6a3ce929d0e0e4736
TP_PARENT=00f067aa0ba902b7
TP_VALID="00-$TP_TRACE-$TP_PARENT-01"

# gw_setup: a clean tracing environment: no inherited context or switches,
# a private GWTRACE_DIR (mode 0700) and no sidecar.
gw_setup() {
  unset TRACEPARENT TRACESTATE GWTRACE_SOCKET GWTRACE_DISABLED OTEL_SDK_DISABLED \
        GWTRACE_BOOT_US GWTRACE_SIDECAR_PID OTEL_EXPORTER_OTLP_ENDPOINT \
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT GLIDEIN_CONFIG
  export GWTRACE_DIR="$BATS_TEST_TMPDIR/gw"
  export GWTRACE_HOME="$BATS_TEST_TMPDIR/home"
  mkdir -m 700 "$GWTRACE_DIR"
  LOG="$GWTRACE_DIR/events.log"
  SCRIPT="$BATS_TEST_TMPDIR/script.sh"
}

setup() {
  gw_setup
}

# gw_run [ARGS...] <<'EOF' ... EOF: run the script on stdin, after
# `source "$GWTRACE_LIB"`, in a new bash (ARGS become $1...). Sets
# $status, $output (stdout only) and $stderr.
gw_run() {
  # shellcheck disable=SC2016  # expanded by the script, not here
  { printf '%s\n' 'source "$GWTRACE_LIB"'; cat; } >"$SCRIPT"
  run --separate-stderr bash "$SCRIPT" "$@"
}

# gw_run_raw: like gw_run, but the script sources the library itself.
gw_run_raw() {
  cat >"$SCRIPT"
  run --separate-stderr bash "$SCRIPT" "$@"
}

# write_stubs FILE: trace_* defined as no-ops that keep the documented
# return values ($? kept, 0 under set -e; trace_end returns its STATUS;
# trace_run runs the command). Their bodies run with fd 2 closed, like the
# library's, so that `set -x` shows only their call lines.
write_stubs() {
  cat >"$1" <<'EOF'
trace_begin() { local rc=$?; [[ $- == *e* ]] && return 0; return "$rc"; } 2>&-
trace_event() { local rc=$?; [[ $- == *e* ]] && return 0; return "$rc"; } 2>&-
trace_attr() { local rc=$?; [[ $- == *e* ]] && return 0; return "$rc"; } 2>&-
trace_end() {
  local rc=$?
  if (( $# > 0 )) && [[ $1 != *=* ]]; then
    case $1 in
      ok|OK) rc=0 ;;
      error|ERROR) rc=1 ;;
      *) if [[ -n $1 && $1 != *[!0-9]* && ${#1} -lt 10 ]]; then rc=$((10#$1)); else rc=1; fi ;;
    esac
  fi
  [[ $- == *e* ]] && return 0
  return "$rc"
} 2>&-
trace_run() { shift; "$@"; }
EOF
  # On bash < 4.4 a host's ERR trap, fired by a function's failing status,
  # reports the line of the function's last command, not of the call
  # (line_number_for_err_trap is not restored): no-op functions would show
  # their own lines where an untraced script shows the caller's. Like the
  # library, they return through eval with LINENO set to the caller's line.
  # shellcheck disable=SC2016  # expanded by that bash
  if bash -c '(( BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 404 ))'; then
    sed -i -e 's/return "\$rc"/eval "return $rc${_stub_nil[LINENO=BASH_LINENO[0]]-}"/' \
      -e 's/^trace_run() { shift; "\$@"; }$/trace_run() { shift; "$@"; eval "return $?${_stub_nil[LINENO=BASH_LINENO[0]]-}"; }/' "$1"
  fi
}

# compare_with_stubs <<'EOF' ... EOF: run the script on stdin (which must
# `source "$TRACE_IMPL"`) once with write_stubs' no-ops and once with the
# library; stdout, stderr and the exit status must be byte-identical.
# Leaves the library run's results in $status, $output and $stderr.
compare_with_stubs() {
  local d=$BATS_TEST_TMPDIR/cmp rc_stub=0 rc_lib=0
  mkdir -p "$d"
  cat >"$SCRIPT"
  write_stubs "$d/stubs.sh"
  TRACE_IMPL=$d/stubs.sh bash "$SCRIPT" "$@" >"$d/stub.out" 2>"$d/stub.err" </dev/null || rc_stub=$?
  TRACE_IMPL=$GWTRACE_LIB bash "$SCRIPT" "$@" >"$d/lib.out" 2>"$d/lib.err" </dev/null || rc_lib=$?
  status=$rc_lib
  output=$(cat "$d/lib.out")
  stderr=$(cat "$d/lib.err")
  if ! cmp -s "$d/stub.out" "$d/lib.out"; then
    echo "stdout differs (- stubs, + library):"
    diff -u "$d/stub.out" "$d/lib.out" | tail -n +3
    return 1
  fi
  if ! cmp -s "$d/stub.err" "$d/lib.err"; then
    echo "stderr differs (- stubs, + library):"
    diff -u "$d/stub.err" "$d/lib.err" | tail -n +3
    return 1
  fi
  assert_equal "$rc_lib" "$rc_stub"
}

# log_lines: the event log into the array LINES (empty when there is none).
log_lines() {
  LINES=()
  [[ -f $LOG ]] && mapfile -t LINES <"$LOG"
  return 0
}

# events_of KIND: print the log lines of one kind (B, E, V or A), in order.
events_of() {
  local line
  log_lines
  for line in "${LINES[@]}"; do
    [[ $line == "gw1"$'\t'"$1"$'\t'* ]] && printf '%s\n' "$line"
  done
  return 0
}

# count_of KIND: number of log lines of that kind.
count_of() {
  local n=0 line
  log_lines
  for line in "${LINES[@]}"; do
    [[ $line == "gw1"$'\t'"$1"$'\t'* ]] && n=$((n + 1))
  done
  echo "$n"
}

# split_fields LINE: LINE cut at every TAB into the array F (empty fields
# kept, unlike `read -a`, which merges adjacent TABs). `read -d` keeps this
# linear: ${s%%$'\t'*} is quadratic on the 4 KB lines of the size tests.
split_fields() {
  local f
  F=()
  while IFS= read -r -d $'\t' f; do F+=("$f"); done <<<"$1"$'\t'
}

# field N LINE: print field N (0-based, as in protocol.py) of LINE.
field() {
  split_fields "$2"
  printf '%s\n' "${F[$1]-}"
}

# nth_event KIND N: the Nth (1-based) line of that kind into EVENT and F.
nth_event() {
  local lines
  mapfile -t lines < <(events_of "$1")
  EVENT=${lines[$(($2 - 1))]-}
  [[ -n $EVENT ]] || { echo "no event $1 #$2 in the log:"; cat "$LOG" 2>/dev/null; return 1; }
  split_fields "$EVENT"
}

# ts_us TEXT: a timestamp field as protocol.py reads it (S.UUUUUU with '.' or
# ',' as the decimal mark, or plain microseconds) into REPLY, in microseconds
# since the epoch; fails on anything else.
ts_us() {
  local s f
  if [[ $1 =~ ^([0-9]{1,12})[.,]([0-9]{1,6})$ ]]; then
    s=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}000000
    REPLY=$(( 10#$s * 1000000 + 10#${f:0:6} ))
  elif [[ $1 =~ ^[0-9]{1,19}$ ]]; then
    REPLY=$(( 10#$1 ))
  else
    echo "not a timestamp: '$1'"
    return 1
  fi
}

# gw_unescape TEXT: protocol.py's unescape() into REPLY (\\ \t \n \r; an
# unknown escape keeps its character; a lone trailing backslash stays).
# Few commands on purpose: bats' DEBUG trap makes every command of a helper
# slow, so the common case is four substitutions: escaped backslashes become
# a sentinel first (pairing backslashes left to right, as the regex does).
gw_unescape() {
  local s=$1 x=$'\x1f' parts=() p i n
  if [[ $s != *"$x"* && $s != *\\[!\\tnr]* ]]; then
    # shellcheck disable=SC1003  # a quoted pair of backslashes
    s=${s//'\\'/$x}
    s=${s//'\t'/$'\t'}
    s=${s//'\n'/$'\n'}
    s=${s//'\r'/$'\r'}
    REPLY=${s//$x/\\}
    return 0
  fi
  # General case: cut at every backslash (part i > 0 followed a backslash;
  # an empty part is a backslash escaping a backslash).
  while IFS= read -r -d \\ p; do parts+=("$p"); done <<<"$1\\"
  n=${#parts[@]}
  REPLY=${parts[0]}
  for ((i = 1; i < n; i++)); do
    p=${parts[i]}
    if [[ -z $p ]]; then
      REPLY+=\\
      (( i + 1 < n )) && { i=$((i + 1)); REPLY+=${parts[i]}; }
      continue
    fi
    case ${p:0:1} in
      t) REPLY+=$'\t' ;;
      n) REPLY+=$'\n' ;;
      r) REPLY+=$'\r' ;;
      *) REPLY+=${p:0:1} ;;
    esac
    REPLY+=${p:1}
  done
}

# assert_bytes GOT EXPECTED [WHAT]: byte-for-byte equality, shown with %q.
assert_bytes() {
  if [[ $1 != "$2" ]]; then
    printf '%s differs\n  expected: %q\n  actual:   %q\n' "${3:-value}" "$2" "$1"
    return 1
  fi
}

# assert_hex_id VALUE LENGTH: lower-case hex of that length, not all zero.
assert_hex_id() {
  if [[ ${#1} -ne $2 || $1 == *[!0-9a-f]* || $1 != *[1-9a-f]* ]]; then
    echo "not a valid ${2}-digit id: '$1'"
    return 1
  fi
}

# assert_no_log: the scenario wrote no event.
assert_no_log() {
  if [[ -s $LOG ]]; then
    echo "expected no events, the log holds:"
    cat "$LOG"
    return 1
  fi
}

# parse_log [FILE]: parse every line with the sidecar's own parser
# (protocol.parse_line); prints "B=n E=n ... bad=n" and the bad lines.
parse_log() {
  "$GW_PY" - "${1:-$LOG}" <<'EOF'
import sys
from gwtrace.wire.events import ProtocolError, parse_line
data = open(sys.argv[1], "rb").read()
if data and not data.endswith(b"\n"):
    print("log does not end with a newline")
kinds, bad = {}, 0
for n, raw in enumerate(data.split(b"\n")[:-1], 1):
    try:
        event = parse_line(raw)
    except ProtocolError as exc:
        bad += 1
        print(f"line {n}: {exc}: {raw[:160]!r}")
        continue
    kinds[event.kind] = kinds.get(event.kind, 0) + 1
print(" ".join(f"{k}={kinds[k]}" for k in sorted(kinds)), f"bad={bad}")
EOF
}

# attr_of KEY: the (unescaped) value of KEY among fields F[FROM..] into REPLY;
# FROM defaults to the first attribute field of the event kind in F[1].
attr_of() {
  local from=${2-} i kv
  if [[ -z $from ]]; then
    case ${F[1]} in B) from=11 ;; E|V) from=7 ;; *) from=6 ;; esac
  fi
  for ((i = from; i < ${#F[@]}; i++)); do
    gw_unescape "${F[i]}"
    kv=$REPLY
    if [[ $kv == "$1="* ]]; then
      REPLY=${kv#*=}
      return 0
    fi
  done
  echo "no attribute $1 in: ${F[*]}"
  return 1
}
