#!/usr/bin/env bats
# The host is never harmed: no sidecar, a vanished or odd destination,
# huge values, secrets, closed or redirected file descriptors.
# shellcheck disable=SC2154  # status/output/stderr are set by bats' run
# shellcheck disable=SC2016,SC2030,SC2031  # quoted child scripts; each @test is a subshell

load test_helper

# A script whose exit status and output depend on $? around every call.
PROBE='
false; trace_begin outer k=v; echo "begin=$?"
(exit 3); trace_event e; echo "event=$?"
(exit 4); trace_attr a=b; echo "attr=$?"
trace_run r sh -c "exit 6"; echo "run=$?"
(exit 5); trace_end; echo "end=$?"
exit 7
'
PROBE_OUT=$'begin=1\nevent=3\nattr=4\nrun=6\nend=5'

@test "with no sidecar ever started, records go to \$GWTRACE_DIR/events.log and nothing is printed" {
  gw_run <<<"$PROBE"
  assert_failure 7
  assert_output "$PROBE_OUT"
  assert_equal "$stderr" ""
  run parse_log
  assert_output "B=2 E=2 V=1 A=1 bad=0" || assert_output "A=1 B=2 E=2 V=1 bad=0"
}

@test "GWTRACE_SOCKET=file:///path wins over GWTRACE_DIR" {
  export GWTRACE_SOCKET="file://$BATS_TEST_TMPDIR/other.log"
  gw_run <<<"$PROBE"
  assert_failure 7
  assert_output "$PROBE_OUT"
  assert_no_log
  run parse_log "$BATS_TEST_TMPDIR/other.log"
  assert_output "A=1 B=2 E=2 V=1 bad=0"
}

@test "GWTRACE_DIR that was deleted: no output, no error, same exit status and \$? values" {
  rm -rf "$GWTRACE_DIR"
  gw_run <<<"$PROBE"
  assert_failure 7
  assert_output "$PROBE_OUT"
  assert_equal "$stderr" ""
  [[ ! -e $GWTRACE_DIR ]]
}

@test "GWTRACE_DIR deleted while spans are open: the rest of the run is silent and unharmed" {
  gw_run <<'EOF'
trace_begin outer
rm -rf "$GWTRACE_DIR"
trace_event e; trace_attr k=v
trace_begin inner; trace_end 3; echo "rc=$?"
trace_end
echo "${TRACEPARENT-unset}"
EOF
  assert_success
  assert_output $'rc=3\nunset'
  assert_equal "$stderr" ""
}

@test "no GWTRACE_DIR and no GWTRACE_SOCKET: nothing written, nothing printed, TRACEPARENT still propagated" {
  unset GWTRACE_DIR
  cd "$BATS_TEST_TMPDIR" || return
  gw_run <<<'trace_begin s; bash -c "echo \${TRACEPARENT:0:3}"; trace_end; ls -A'
  assert_success
  assert_equal "$stderr" ""
  assert_equal "${lines[0]}" "00-"
  refute_output --partial events.log
}

@test "GWTRACE_SOCKET with a scheme other than file:// is silently ignored, a FIFO is never opened" {
  mkfifo "$BATS_TEST_TMPDIR/fifo"
  local url
  for url in "tcp://127.0.0.1:9" "udp://127.0.0.1:9" "unix://$BATS_TEST_TMPDIR/sock" \
             "fifo://$BATS_TEST_TMPDIR/fifo" "http://127.0.0.1:9/x" "garbage" "file://"; do
    GWTRACE_SOCKET=$url run --separate-stderr timeout 10 bash -c "source \"\$GWTRACE_LIB\"; $PROBE"
    assert_failure 7            # not 124: nothing blocked on the FIFO
    assert_output "$PROBE_OUT"
    assert_equal "$stderr" ""
    assert_no_log
  done
}

@test "an event log that cannot be opened (it is a directory) is silently skipped" {
  mkdir "$LOG"
  gw_run <<<"$PROBE"
  assert_failure 7
  assert_output "$PROBE_OUT"
  assert_equal "$stderr" ""
}

# --- size limit --------------------------------------------------------------

# assert_cut_line KIND FIELD ORIGINAL: the one KIND line is below 4096 bytes,
# ends with gwtrace.truncated=true, parses, and field FIELD unescaped is a
# prefix of ORIGINAL.
assert_cut_line() {
  local line bytes
  line=$(events_of "$1")
  [[ -n $line && $line != *$'\n'* ]] || fail "expected exactly one $1 line"
  bytes=$(LC_ALL=C; echo "${#line}")
  (( bytes + 1 < 4096 )) || fail "$1 line is $((bytes + 1)) bytes"
  split_fields "$line"
  assert_equal "${F[${#F[@]}-1]}" gwtrace.truncated=true
  gw_unescape "${F[$2]}"
  [[ $3 == "$REPLY"* ]] || fail "field $2 is not a prefix of the original: ${REPLY:0:80}..."
  (( ${#REPLY} > 500 )) || fail "only ${#REPLY} characters kept"
}

long_value_run() {
  printf '%s' "$1" >"$BATS_TEST_TMPDIR/long"
  gw_run "$BATS_TEST_TMPDIR/long" <<'EOF'
IFS= read -r -d '' v <"$1"
trace_begin "$v" "k=$v"
trace_event "$v" "k=$v"
trace_attr "k=$v"
trace_end 0 "k=$v"
EOF
  assert_success
  assert_equal "$stderr" ""
  run parse_log
  assert_output "A=1 B=1 E=1 V=1 bad=0"
}

# repeat TEXT BYTES: TEXT doubled until it is at least BYTES long, into REPLY
# (fast: no quadratic ${v//x/y} on a 100 KB string).
repeat() {
  REPLY=$1
  while (( ${#REPLY} < $2 )); do REPLY+=$REPLY; done
}

@test "a 100 KB ASCII value gives one line per call, below 4096 bytes, marked gwtrace.truncated=true" {
  repeat x 102400; local v=$REPLY
  long_value_run "$v"
  assert_cut_line B 10 "$v"
  assert_cut_line V 6 "$v"
  assert_cut_line A 6 "k=$v"
  assert_cut_line E 7 "k=$v"
}

@test "a 100 KB UTF-8 value is cut below 4096 bytes too" {
  repeat 'é日🚀' 102400; local v=$REPLY
  long_value_run "$v"
  assert_cut_line B 10 "$v"
  assert_cut_line A 6 "k=$v"
}

@test "100 KB of multi-line text with TABs and backslashes is cut below 4096 bytes" {
  repeat $'C:\\glidein\tcondor_startd exited with status 0, see the log for more lines.....\n' 102400
  local v=$REPLY
  long_value_run "$v"
  assert_cut_line V 6 "$v"
  assert_cut_line A 6 "k=$v"
}

@test "a line cut next to an escape never leaves half of it (either parity)" {
  local v pre
  for pre in "" x; do
    rm -f "$LOG"
    repeat \\ 2500; v=$pre$REPLY
    long_value_run "$v"
    assert_cut_line A 6 "k=$v"
    assert_cut_line B 10 "$v"
  done
}

# A value full of escapes is cut to 4096 characters before it is escaped, and escaped 256
# characters at a time: bash's ${v//x/y} costs more than linearly in the length (a 100 KB value
# escaped whole took seconds). Checked by what is written and by counting the pieces in an xtrace
# of _gwtrace_esc (one `_gwtrace_out+=` a piece), not by the clock: what a call costs is measured
# by bench/escaping.
@test "a 100 KB value full of TABs, newlines and backslashes is cut, then escaped 256 characters at a time" {
  repeat $'\\\t\n' 102400; local v=$REPLY
  long_value_run "$v"
  assert_cut_line B 10 "$v"
  assert_cut_line V 6 "$v"
  assert_cut_line A 6 "k=$v"
  assert_cut_line E 7 "k=$v"
  gw_run "$BATS_TEST_TMPDIR/long" "$BATS_TEST_TMPDIR/xtrace" <<'EOF'
IFS= read -r -d '' v <"$1"
for n in 300 4096 102400; do
  exec 9>"$2"; BASH_XTRACEFD=9
  set -x; _gwtrace_esc "${v:0:n}"; set +x
  exec 9>&-
  printf '%s %s %s\n' "$n" "$(grep -c '^+* _gwtrace_out+=' "$2")" "${#_gwtrace_r}"
  printf '%s' "$_gwtrace_r" >"$2.$n"
done
EOF
  assert_success
  assert_output $'300 2 600\n4096 16 8192\n102400 16 8192'
  # 4096 characters: 1365 times backslash, TAB and newline, then one more backslash
  repeat '\\\t\n' 8192; local want=${REPLY:0:8192} got
  IFS= read -r -d '' got <"$BATS_TEST_TMPDIR/xtrace.102400" || :
  assert_equal "$got" "$want"
  IFS= read -r -d '' got <"$BATS_TEST_TMPDIR/xtrace.4096" || :
  assert_equal "$got" "$want"
}

@test "long values are cut, and the attributes after them are kept whole" {
  repeat x 102400; printf '%s' "$REPLY" >"$BATS_TEST_TMPDIR/long"
  repeat 'é日' 3000; printf '%s' "$REPLY" >"$BATS_TEST_TMPDIR/utf8"
  gw_run "$BATS_TEST_TMPDIR/long" "$BATS_TEST_TMPDIR/utf8" <<'EOF'
IFS= read -r -d '' v <"$1"
IFS= read -r -d '' u <"$2"
trace_begin s a=1 "big=$v" c=3 "d=${v:0:3000}" "token=$v" e=5
trace_attr "big=$v" after=kept
trace_event e "big=$u" after=kept "w=$u" last=1
trace_end 0 "big=$v" after=kept
EOF
  assert_success
  local kind line want
  for kind in B A V E; do
    line=$(events_of "$kind")
    (( $(LC_ALL=C; echo "${#line}") < 4096 )) || fail "$kind line too long"
    [[ $line == *$'\t'gwtrace.truncated=true ]] || fail "$kind not marked truncated"
  done
  nth_event B 1
  assert_equal "${F[11]}" a=1
  assert_equal "${F[13]}" c=3
  assert_equal "${F[15]}" "token=[REDACTED]"
  assert_equal "${F[16]}" e=5
  [[ ${F[12]} == big=xxxxxxxxxx* && ${#F[12]} -gt 1000 && ${F[14]} == d=xxxxxxxxxx* && ${#F[14]} -gt 1000 ]] \
    || fail "cut values not kept as long prefixes"
  for want in A:7 V:8 E:8; do
    nth_event "${want%:*}" 1
    assert_equal "${F[${want#*:}]}" after=kept
  done
  nth_event V 1
  assert_equal "${F[10]}" last=1
  [[ ${F[7]} == big=é日* && ${F[9]} == w=é日* ]] || fail "UTF-8 values not kept as prefixes"
  run parse_log
  assert_output "A=1 B=1 E=1 V=1 bad=0"
}

@test "hundreds of attributes are cut below 4096 bytes" {
  gw_run <<'EOF'
args=()
for i in {1..500}; do args+=("attribute_$i=value_$i"); done
trace_begin many "${args[@]}"
trace_end
EOF
  assert_success
  local line
  line=$(events_of B)
  (( ${#line} < 4096 )) || fail "B line is ${#line} bytes"
  [[ $line == *$'\t'gwtrace.truncated=true ]] || fail "not marked truncated"
  run parse_log
  assert_output "B=1 E=1 bad=0"
}

# --- secrets ---------------------------------------------------------------

@test "attributes whose keys name secrets are written as [REDACTED]" {
  gw_run <<'EOF'
trace_begin s token=s3cr3t-1 X509_USER_PROXY=/tmp/x509up_s3cr3t-2 password=s3cr3t-3 site=FNAL
trace_attr GITHUB_TOKEN=s3cr3t-4 client_secret=s3cr3t-5 Authorization=s3cr3t-6 api_key=s3cr3t-7
trace_event e db_passwd=s3cr3t-8 session_cookie=s3cr3t-9 apikey=s3cr3t-10 ssh_private_key=s3cr3t-11
trace_end 0 credentials=s3cr3t-12 node=worker
EOF
  assert_success
  run grep -c s3cr3t "$LOG"
  assert_output 0
  nth_event B 1
  assert_equal "${F[11]}" "token=[REDACTED]"
  assert_equal "${F[12]}" "X509_USER_PROXY=[REDACTED]"
  assert_equal "${F[13]}" "password=[REDACTED]"
  assert_equal "${F[14]}" "site=FNAL"
  nth_event A 1
  assert_equal "${F[6]}" "GITHUB_TOKEN=[REDACTED]"
  nth_event E 1
  assert_equal "${F[7]}" "credentials=[REDACTED]"
  assert_equal "${F[8]}" "node=worker"
}

@test "values that look like bearer tokens or JWTs are written as [REDACTED]" {
  local jwt=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX3MzY3IzdA
  gw_run "$jwt" <<'EOF'
trace_begin s header="Bearer abc.s3cr3t" lower="bearer s3cr3t"
trace_attr scitoken="$1" plain="$1"
trace_event e auth="$1"
trace_end 0 h="Bearer s3cr3t"
EOF
  assert_success
  run grep -c -e s3cr3t -e eyJ "$LOG"
  assert_output 0
  nth_event B 1
  assert_equal "${F[11]}" "header=[REDACTED]"
  assert_equal "${F[12]}" "lower=[REDACTED]"
  nth_event A 1
  assert_equal "${F[7]}" "plain=[REDACTED]"
}

# --- file descriptors ------------------------------------------------------

@test "a script that closed stdout and stderr still traces and finishes" {
  gw_run <<'EOF'
exec 1>&- 2>&-
trace_begin s
trace_event e
trace_run r true
trace_end
exit 3
EOF
  assert_failure 3
  run parse_log
  assert_output "B=2 E=2 V=1 bad=0"
}

@test "a script with fds 0-9 closed traces, and its fds stay closed (nothing leaks into the log)" {
  gw_run <<'EOF'
exec 0<&- 1>&- 2>&- 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
trace_begin s; trace_end
echo LEAKED-1 ; echo LEAKED-2 >&2
trace_begin t; trace_event e; trace_end
for n in 0 1 2 3 4 5 6 7 8 9; do { true 11>&"$n"; } && open+=" $n"; done
exec 1>"$GWTRACE_DIR/fds"
echo "open:${open-}"
EOF
  assert_success
  run grep -c LEAKED "$LOG"
  assert_output 0
  run cat "$GWTRACE_DIR/fds"
  assert_output "open:"
  run parse_log
  assert_output "B=2 E=2 V=1 bad=0"
}

@test "the script's own fds 3-9 still carry exactly what it writes to them" {
  gw_run <<'EOF'
for fd in 3 4 5 6 7 8 9; do eval "exec $fd>\"\$GWTRACE_DIR/fd$fd\""; done
trace_begin s
for fd in 3 4 5 6 7 8 9; do echo "host wrote to $fd" >&"$fd"; trace_event "e$fd"; done
trace_end
for fd in 3 4 5 6 7 8 9; do echo "again $fd" >&"$fd"; done
EOF
  assert_success
  local fd
  for fd in 3 4 5 6 7 8 9; do
    run cat "$GWTRACE_DIR/fd$fd"
    assert_output "host wrote to $fd"$'\n'"again $fd"
  done
  assert_equal "$(count_of V)" 7
}

@test "stdin is neither read nor closed by the library" {
  run bash -c 'source "$GWTRACE_LIB"; trace_begin s; trace_event e; trace_end; cat' <<<"input for the host"
  assert_success
  assert_output "input for the host"
}

@test "a stderr redirected to a file gets nothing from the library" {
  gw_run <<'EOF'
exec 2>"$GWTRACE_DIR/err"
trace_begin s; trace_event e; trace_attr k=v; trace_end error
echo "host error" >&2
EOF
  assert_success
  run cat "$GWTRACE_DIR/err"
  assert_output "host error"
}
