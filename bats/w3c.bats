#!/usr/bin/env bats
# W3C Trace Context: TRACEPARENT / TRACESTATE in, and out to child processes.
# Cases from /work/shared/notes/otlp-w3c-backends.md section 6.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016  # scripts are quoted for the child bash
# shellcheck disable=SC2030,SC2031  # each @test is its own subshell

load test_helper

@test "a valid TRACEPARENT at source time: the first span joins the trace as a remote child" {
  export TRACEPARENT=$TP_VALID
  gw_run <<'EOF'
trace_begin outer
trace_begin inner
trace_end
trace_end
EOF
  assert_success
  nth_event B 1
  assert_equal "${F[4]}" "$TP_TRACE"
  assert_equal "${F[6]}" "$TP_PARENT"
  assert_equal "${F[7]}" 1
  assert_equal "${F[8]}" 01
  local outer=${F[5]}
  nth_event B 2
  assert_equal "${F[4]}" "$TP_TRACE"
  assert_equal "${F[6]}" "$outer"
  assert_equal "${F[7]}" 0
}

@test "every top-level span of the script is a child of the incoming parent" {
  export TRACEPARENT=$TP_VALID
  gw_run <<'EOF'
trace_begin one; trace_end
trace_begin two; trace_end
EOF
  assert_success
  nth_event B 1; assert_equal "${F[6]}" "$TP_PARENT"; assert_equal "${F[4]}" "$TP_TRACE"
  nth_event B 2; assert_equal "${F[6]}" "$TP_PARENT"; assert_equal "${F[4]}" "$TP_TRACE"
}

@test "while a span is open a child process sees TRACEPARENT with that span's id; trace_end restores the outer value" {
  export TRACEPARENT=$TP_VALID
  gw_run <<'EOF'
child() { bash -c 'echo "${TRACEPARENT-unset}"'; }
trace_begin outer; child
trace_begin inner; child
trace_end; child
trace_end; child
EOF
  assert_success
  nth_event B 1; local outer=${F[5]}
  nth_event B 2; local inner=${F[5]}
  assert_equal "${lines[0]}" "00-$TP_TRACE-$outer-01"
  assert_equal "${lines[1]}" "00-$TP_TRACE-$inner-01"
  assert_equal "${lines[2]}" "00-$TP_TRACE-$outer-01"
  assert_equal "${lines[3]}" "$TP_VALID"
}

@test "with no incoming context TRACEPARENT is exported during the span and unset again after it" {
  gw_run <<'EOF'
trace_begin root
bash -c 'echo "${TRACEPARENT-unset}"'
trace_end
bash -c 'echo "${TRACEPARENT-unset}"'
echo "${TRACEPARENT-unset in the shell}"
EOF
  assert_success
  nth_event B 1
  assert_equal "${lines[0]}" "00-${F[4]}-${F[5]}-01"
  assert_equal "${lines[1]}" unset
  assert_equal "${lines[2]}" "unset in the shell"
}

@test "a child script that sources the library continues the trace under the open span" {
  gw_run <<'EOF'
trace_begin parent_script
bash -c 'source "$GWTRACE_LIB"; trace_begin child_script; trace_end'
trace_end
EOF
  assert_success
  nth_event B 1; local tr=${F[4]} parent=${F[5]}
  nth_event B 2
  assert_equal "${F[10]}" child_script
  assert_equal "${F[4]}" "$tr"
  assert_equal "${F[6]}" "$parent"
  assert_equal "${F[7]}" 1
}

# joins TRACEPARENT_VALUE: run a one-span script with that incoming value;
# sets JOINED=yes when the span joined its trace, no when it is a new root.
joins() {
  rm -f "$LOG"
  TRACEPARENT=$1 gw_run <<'EOF'
trace_begin s
echo "$TRACEPARENT"
trace_end
echo "${TRACEPARENT-unset}"
EOF
  assert_success
  assert_equal "$stderr" ""
  nth_event B 1
  assert_hex_id "${F[4]}" 32
  if [[ ${F[4]} == "$TP_TRACE" && ${F[6]} == "$TP_PARENT" && ${F[7]} == 1 ]]; then
    JOINED=yes
  elif [[ ${F[6]} == - && ${F[7]} == 0 && ${F[8]} == 01 ]]; then
    JOINED=no
  else
    JOINED="unexpected: ${F[*]}"
  fi
  assert_equal "${lines[0]}" "00-${F[4]}-${F[5]}-${F[8]}"   # re-emitted as version 00
  assert_equal "${lines[1]}" "$1"                           # restored as it was
}

@test "invalid TRACEPARENT values are ignored: new root, no error, value restored after the span" {
  local t=$TP_TRACE p=$TP_PARENT v
  local invalid=(
    "00-${t^^}-$p-01"                       # upper-case trace id
    "00-$t-${p^^}-01"                       # upper-case parent id
    "00-$t-$p-0A"                           # upper-case flags
    "00-00000000000000000000000000000000-$p-01"
    "00-$t-0000000000000000-01"
    "ff-$t-$p-01"                           # version ff
    "00-$t-$p-01."                          # version 00 with trailing data
    "00-$t-$p-01-what-the-future-will-be-like"
    "cc-$t-$p-01.what-the-future-will-be-like"
    "0-$t-$p-01" "000-$t-$p-01" ".0-$t-$p-01" "0.-$t-$p-01" "zz-$t-$p-01"
    "00-${t:1}-$p-01" "00-${t}0-$p-01"      # 31 / 33-digit trace id
    "00-$t-${p:1}-01" "00-$t-${p}0-01"      # 15 / 17-digit parent id
    "00-$t-$p-1" "00-$t-$p-001" "00-$t-$p-.0" "00-$t-$p-0g"
    "00_${t}_${p}_01" "00-$t-$p" "" "garbage" "00-$t-$p-01,00-$t-$p-01"
  )
  for v in "${invalid[@]}"; do
    joins "$v"
    assert_equal "$JOINED" no "joined from an invalid TRACEPARENT: '$v'"
  done
}

@test "valid TRACEPARENT variants are accepted: future versions, Level 2 flags, surrounding whitespace" {
  local t=$TP_TRACE p=$TP_PARENT v
  local valid=(
    "00-$t-$p-01"
    "cc-$t-$p-01"
    "cc-$t-$p-01-what-the-future-will-be-like"
    " 00-$t-$p-01"
    $'00-'"$t-$p"$'-01 \t'
  )
  for v in "${valid[@]}"; do
    joins "$v"
    assert_equal "$JOINED" yes "did not join a valid TRACEPARENT: '$v'"
  done
}

@test "flags 03 (sampled + random) are kept on the record and on the outgoing TRACEPARENT" {
  TRACEPARENT="00-$TP_TRACE-$TP_PARENT-03" gw_run <<'EOF'
trace_begin s; echo "$TRACEPARENT"; trace_end
EOF
  nth_event B 1
  assert_equal "${F[8]}" 03
  assert_equal "$output" "00-$TP_TRACE-${F[5]}-03"
}

@test "reserved flag bits are masked: 09 is sampled and goes out as 01" {
  TRACEPARENT="00-$TP_TRACE-$TP_PARENT-09" gw_run <<'EOF'
trace_begin s; echo "$TRACEPARENT"; trace_end
EOF
  nth_event B 1
  assert_equal "${F[8]}" 01
  assert_equal "$output" "00-$TP_TRACE-${F[5]}-01"
}

@test "a not-sampled parent (-00): nothing is recorded, TRACEPARENT still propagates with flags 00 and new span ids" {
  TRACEPARENT="00-$TP_TRACE-$TP_PARENT-00" gw_run <<'EOF'
trace_begin outer site=x; echo "$TRACEPARENT"
trace_event e; trace_attr k=v
trace_run r true
trace_begin inner; bash -c 'echo "$TRACEPARENT"'; trace_end 3
trace_end
echo "rc=$? ${TRACEPARENT}"
EOF
  assert_success
  assert_no_log
  assert_regex "${lines[0]}" "^00-$TP_TRACE-[0-9a-f]{16}-00\$"
  assert_regex "${lines[1]}" "^00-$TP_TRACE-[0-9a-f]{16}-00\$"
  local outer=${lines[0]:36:16} inner=${lines[1]:36:16}
  assert_hex_id "$outer" 16
  assert_not_equal "$outer" "$TP_PARENT"
  assert_not_equal "$inner" "$outer"
  assert_equal "${lines[2]}" "rc=3 00-$TP_TRACE-$TP_PARENT-00"
}

@test "flags 02 (random, not sampled): nothing recorded, 02 propagated" {
  TRACEPARENT="00-$TP_TRACE-$TP_PARENT-02" gw_run <<'EOF'
trace_begin s; echo "$TRACEPARENT"; trace_end
EOF
  assert_success
  assert_no_log
  assert_regex "$output" "^00-$TP_TRACE-[0-9a-f]{16}-02\$"
}

@test "TRACESTATE is passed through to the records and to children, then restored" {
  export TRACEPARENT=$TP_VALID TRACESTATE='rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'
  gw_run <<'EOF'
trace_begin outer
trace_begin inner
bash -c 'echo "$TRACESTATE"'
trace_end
trace_end
echo "$TRACESTATE"
EOF
  assert_success
  nth_event B 1; assert_equal "${F[9]}" "$TRACESTATE"
  nth_event B 2; assert_equal "${F[9]}" "$TRACESTATE"
  assert_equal "${lines[0]}" "$TRACESTATE"
  assert_equal "${lines[1]}" "$TRACESTATE"
}

@test "TRACESTATE with an invalid TRACEPARENT is discarded for the new trace, restored afterwards" {
  export TRACEPARENT="ff-$TP_TRACE-$TP_PARENT-01" TRACESTATE='rojo=00f067aa0ba902b7'
  gw_run <<'EOF'
trace_begin s
bash -c 'echo "${TRACESTATE-unset}"'
trace_end
echo "${TRACESTATE-unset}"
EOF
  assert_success
  nth_event B 1
  assert_equal "${F[9]}" -
  assert_equal "${lines[0]}" unset
  assert_equal "${lines[1]}" "rojo=00f067aa0ba902b7"
}

@test "TRACESTATE without TRACEPARENT is not attached to a new root" {
  export TRACESTATE='rojo=00f067aa0ba902b7'
  gw_run <<'EOF'
trace_begin s
bash -c 'echo "${TRACESTATE-unset}"'
trace_end
EOF
  assert_success
  nth_event B 1
  assert_equal "${F[9]}" -
  assert_equal "$output" unset
}

@test "a TRACEPARENT that the host did not export stays unexported after the span" {
  gw_run_raw <<EOF
TRACEPARENT=$TP_VALID
source "\$GWTRACE_LIB"
trace_begin s; trace_end
declare -p TRACEPARENT
EOF
  assert_success
  assert_output "declare -- TRACEPARENT=\"$TP_VALID\""
}

@test "a host's shopt -s nocasematch does not make upper-case TRACEPARENT ids valid" {
  gw_run_raw <<EOF
shopt -s nocasematch
TRACEPARENT=00-${TP_TRACE^^}-${TP_PARENT^^}-01
source "\$GWTRACE_LIB"
trace_begin s; trace_end
EOF
  assert_success
  run parse_log
  assert_output "B=1 E=1 bad=0"
}

@test "a tracestate with a backslash is escaped in the record but exported unchanged" {
  TRACEPARENT=$TP_VALID TRACESTATE='vendor=a\b' gw_run <<'EOF2'
trace_begin s
printf '%s\n' "$TRACESTATE"
trace_end
EOF2
  assert_success
  assert_output 'vendor=a\b'
  nth_event B 1
  assert_equal "${F[9]}" 'vendor=a\\b'
}
