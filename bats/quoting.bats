#!/usr/bin/env bats
# Values reach the log intact: the only escapes are protocol.py's (\\ \t \n
# \r); unescaping a field gives back the exact bytes the script passed.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016,SC1003  # the literal '$' and '\\' are the point
# shellcheck disable=SC2030,SC2031  # each @test is its own subshell

load test_helper

setup() {
  gw_setup
  VALS=(
    'hello world'
    'a=b=c'
    "it's \"quoted\""
    $'tab\there'
    $'line1\nline2'
    $'cr\rhere'
    $'crlf\r\n'
    $'\n'
    "ends with newline"$'\n'
    'back\slash'
    '\t\n\r are not escapes here'
    '\\double'
    'trailing\'
    '$HOME $(id) `uname` ${x:-y} $((1+1))'
    '*'
    '/*'
    '[a-z]? *.log'
    'ünïcødé 日本語 🚀'
    ''
    '  padded  '
    '-n'
    '-e'
    '%s%d%%\n'
    $'\x01\x1b[31mred\x7f'
    $'\x01\\\t\x01\x7f\n\x01\r\x01\x01'
    $'\xff\xfe not utf-8'
    '!history !!'
    '~'
    ';|&<>(){}'
  )
  # over 256 characters: escaped a piece at a time (_gwtrace_esc_long), with
  # escapes and multi-byte characters across the pieces' edges; short enough that a line of two
  # such fields fits the 1000 characters of a non-ASCII line
  local i long=''
  for i in {1..20}; do long+=$'ab\\c\td\ne\rf\xc3\xa9\xe6\x97\xa5'"$i"; done
  VALS+=("$long")
  write_vals
  # files for a glob to match, if anything globbed a value
  mkdir "$BATS_TEST_TMPDIR/cwd"
  touch "$BATS_TEST_TMPDIR/cwd/a.log" "$BATS_TEST_TMPDIR/cwd/b"
}

# write_vals: VALS as a script that sets them again, read back from NUL-separated
# bytes. Not declare -p: bash 4.2's doubles a \001 (CTLESC) and puts one before
# \177 in an array element's text; nor printf %q: 4.2's leaves a leading ~ bare.
write_vals() {
  printf '%s\0' "${VALS[@]}" >"$BATS_TEST_TMPDIR/vals.nul"
  # shellcheck disable=SC2016  # expanded by the script
  printf 'VALS=(); while IFS= read -r -d "" _val; do VALS+=("$_val"); done <%q\n' \
    "$BATS_TEST_TMPDIR/vals.nul" >"$BATS_TEST_TMPDIR/vals.sh"
}

# check_field KIND N PREFIX: field N of the KIND lines, unescaped, equals
# PREFIX + VALS[i] byte for byte, for every value i in order.
check_field() {
  local lines i bad=0
  mapfile -t lines < <(events_of "$1")
  assert_equal "${#lines[@]}" "${#VALS[@]}"
  for i in "${!VALS[@]}"; do
    split_fields "${lines[i]}"
    gw_unescape "${F[$2]}"
    assert_bytes "$REPLY" "$3${VALS[i]}" "value #$i" || bad=1
  done
  return "$bad"
}

run_each() {
  cd "$BATS_TEST_TMPDIR/cwd" || return
  gw_run "$BATS_TEST_TMPDIR/vals.sh" <<EOF
source "\$1"
trace_begin quoting
for v in "\${VALS[@]}"; do
  $1
done
trace_end 0
EOF
  assert_success
  assert_output ""
  assert_equal "$stderr" ""
}

@test "attribute values with spaces, =, quotes, TAB, LF, CR, backslashes, \$, globs and UTF-8 round-trip byte for byte" {
  run_each 'trace_attr "k=$v"'
  check_field A 6 "k="
}

@test "each call stays one line whatever its value holds" {
  run_each 'trace_attr "k=$v"'
  log_lines
  assert_equal "${#LINES[@]}" $(( ${#VALS[@]} + 2 ))
}

@test "span names round-trip byte for byte" {
  run_each 'trace_begin "$v"; trace_end'
  local lines i
  mapfile -t lines < <(events_of B)
  lines=("${lines[@]:1}")       # drop the outer span
  assert_equal "${#lines[@]}" "${#VALS[@]}"
  for i in "${!VALS[@]}"; do
    split_fields "${lines[i]}"
    gw_unescape "${F[10]}"
    assert_bytes "$REPLY" "${VALS[i]}" "name #$i"
  done
}

@test "event names and event attribute values round-trip byte for byte" {
  run_each 'trace_event "$v" "v=$v"'
  check_field V 6 ""
  check_field V 7 "v="
}

@test "span attribute values given to trace_begin round-trip byte for byte" {
  run_each 'trace_begin s "k=$v"; trace_end'
  local lines i
  mapfile -t lines < <(events_of B)
  lines=("${lines[@]:1}")
  for i in "${!VALS[@]}"; do
    split_fields "${lines[i]}"
    gw_unescape "${F[11]}"
    assert_bytes "$REPLY" "k=${VALS[i]}" "value #$i"
  done
}

@test "trace_end attribute values round-trip byte for byte" {
  run_each 'trace_begin s; trace_end 0 "k=$v"'
  local lines i
  mapfile -t lines < <(events_of E)
  for i in "${!VALS[@]}"; do
    split_fields "${lines[i]}"
    gw_unescape "${F[7]}"
    assert_bytes "$REPLY" "k=${VALS[i]}" "value #$i"
  done
}

@test "trace_end error messages round-trip as error:MESSAGE" {
  local msgs=() v i lines
  for v in "${VALS[@]}"; do
    # the plain status forms (empty, digits, ok, error) and KEY=VALUE are not messages
    [[ -z $v || $v == *=* ]] && continue
    msgs+=("$v")
  done
  VALS=("${msgs[@]}")
  write_vals
  run_each 'trace_begin s; trace_end "$v"'
  mapfile -t lines < <(events_of E)
  assert_equal "${#lines[@]}" $(( ${#VALS[@]} + 1 ))
  for i in "${!VALS[@]}"; do
    split_fields "${lines[i]}"
    gw_unescape "${F[6]}"
    assert_bytes "$REPLY" "error:${VALS[i]}" "message #$i"
  done
}

@test "keys with spaces, dots and UTF-8 round-trip" {
  gw_run <<'EOF'
trace_begin s "my attr=1" "glidein.név=ő" $'tab\tfield=x'
trace_end
EOF
  assert_success
  nth_event B 1
  gw_unescape "${F[11]}"; assert_bytes "$REPLY" "my attr=1"
  gw_unescape "${F[12]}"; assert_bytes "$REPLY" "glidein.név=ő"
  gw_unescape "${F[13]}"; assert_bytes "$REPLY" $'tab\tfield=x'
}

@test "values round-trip in the C locale too" {
  export LC_ALL=C
  run_each 'trace_attr "k=$v"'
  check_field A 6 "k="
}

@test "the sidecar's parser decodes every value to the original text" {
  run_each 'trace_attr "k=$v"'
  printf '%s\0' "${VALS[@]}" >"$BATS_TEST_TMPDIR/vals.bin"
  run "$GW_PY" - "$LOG" "$BATS_TEST_TMPDIR/vals.bin" <<'EOF'
import sys
from gwtrace.wire.events import parse_line
lines = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
want = open(sys.argv[2], "rb").read().split(b"\0")[:-1]
got = [parse_line(raw) for raw in lines if raw.split(b"\t")[1] == b"A"]
assert len(got) == len(want), (len(got), len(want))
for i, (event, value) in enumerate(zip(got, want)):
    expected = value.decode("utf-8", "replace")
    if event.attributes != (("k", expected),):
        print(f"#{i}: expected {expected!r}, got {event.attributes!r}")
print("checked", len(want))
EOF
  assert_success
  assert_output "checked ${#VALS[@]}"
}
