#!/usr/bin/env bats
# The auto layer (BASH_ENV=gwtrace-auto.sh) tells the truth (issue 9): command
# spans named after the command, background commands and `wait` timed, no
# span recorded twice. Events are read from $LOG, no sidecar.

load test_helper

# auto_run LEVEL: run $SCRIPT traced at LEVEL.
auto_run() {
  run --separate-stderr env BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL="$1" bash "$SCRIPT"
}

# begins KIND: the names of the spans begun with gwtrace.kind=KIND, in order.
begins() {
  awk -F'\t' -v k="gwtrace.kind=$1" '$2 == "B" { for (i = 12; i <= NF; i++) if ($i == k) print $11 }' "$LOG"
}

# span_end NAME: the E fields 7.. (status and attributes) of the span NAME.
span_end() {
  local id
  id=$(awk -F'\t' -v n="$1" '$2 == "B" && $11 == n { print $6; exit }' "$LOG")
  awk -F'\t' -v id="$id" '$2 == "E" && $6 == id { s = $7; for (i = 8; i <= NF; i++) s = s " " $i; print s }' "$LOG"
}

@test "commands: spans are named after the command, not an argument of \$(...) or an assignment" {
  cat >"$SCRIPT" <<'EOS'
v=$(wget --version 2>&1 | head -1)
x="$(echo hi | tr a-z A-Z)"
y=`uname -s`
LC_ALL=C grep -c nothing /dev/null || :
cfg=$(cat /dev/null)
wget_args=("http://x" "--user-agent" "wget/x" "--quiet")
EOS
  auto_run commands
  assert_success
  run begins command
  refute_output --partial -- "--version"
  refute_output --partial -- "--user-agent"
  refute_output --partial -- "-s"
  assert_output --partial "grep"
  assert_output --partial "wget"
  run grep -c $'\tE\t' "$LOG"
  (( output == $(grep -c $'\tB\t' "$LOG") ))
}

@test "commands: a command run from an unquoted variable is named by its first field, never its arguments" {
  cat >"$SCRIPT" <<'EOS'
cmd="/bin/true --password=hunter2"
$cmd >/dev/null
c2="  /bin/echo secret-arg"
${c2} >/dev/null
EOS
  auto_run commands
  assert_success
  run begins command
  assert_output $'true\necho'
  refute grep -q -e hunter2 -e secret-arg "$LOG"
}

@test "commands: the last command of a script and a command before a trap are recorded once" {
  cat >"$SCRIPT" <<'EOS'
trap 'echo bye' EXIT
cat /dev/null
grep -q x /dev/null
EOS
  auto_run commands
  assert_failure 1
  assert_output "bye"
  run begins command
  assert_output $'cat\ngrep'
  run span_end grep
  assert_output "1 code.line.number=3 code.file.path=$SCRIPT gwtrace.failed.command=grep"
}

@test "commands: a background command and wait are timed, with the job's status" {
  cat >"$SCRIPT" <<'EOS'
sleep 0.3 &
pid=$!
sh -c 'exit 4' &
wait "$!"
wait "$pid"
sleep 5 &
EOS
  auto_run commands
  assert_success
  run begins command
  assert_output $'sleep\nsh\nwait\nwait\nsleep'
  # the first sleep lasted its 0.3 s: begin and end are 0.3 s apart
  run awk -F'\t' '$2 == "B" && $11 == "sleep" && !b { b = $3; id = $6 } $2 == "E" && $6 == id { print ($3 - b >= 0.25) ? "long" : "short" }' "$LOG"
  assert_output "long"
  run span_end sh
  assert_output "4"
  run bash -c "grep -c 'process.still_running=true' '$LOG'"
  assert_output "1"
}

@test "commands: a program alone in \$(...) is recorded from the parent: name, status, duration, its children's parent (issue 27 §4)" {
  cat >"$SCRIPT" <<'EOS'
printf 'x\nyx\n' >"$T/f"
v=$(grep -c x "$T/f")
n=$(date | head -1)
w=$(grep -c nothing /dev/null 2>&1)
u=`sleep 0.2`
b=$(bash -c 'echo "${TRACEPARENT:0:3}"')
f() { cat /dev/null; local z=$(uname -s); echo "$v ${#n} $w $z $b"; }
f
EOS
  T=$BATS_TEST_TMPDIR auto_run commands
  assert_success
  assert_output "2 $(date | head -1 | wc -L) 0 $(uname -s) 00-"
  run begins command
  assert_output $'grep\ndate\nhead\ngrep\nsleep\nbash\ncat\nuname'
  run awk -F'\t' '$2 == "B" && $11 == "grep" { id[$6] = 1 } $2 == "E" && id[$6] { print $7 }' "$LOG"
  assert_output $'0\n1'
  run span_end uname
  assert_output "ok gwtrace.status.unknown=true"
  # sleep's span lasts its 0.2 s
  run awk -F'\t' '$2 == "B" && $11 == "sleep" { b = $3; id = $6 } $2 == "E" && $6 == id { print ($3 - b >= 0.15) ? "long" : "short" }' "$LOG"
  assert_output "long"
  # the bash in $(...) is the child of the parent's span: its TRACEPARENT
  run awk -F'\t' '$2 == "B" && $11 == "bash" && $12 == "gwtrace.kind=command" { c = $6 } $2 == "B" && $11 == "bash -c" { p = $7 } END { print (c != "" && c == p) ? "child" : c " " p }' "$LOG"
  assert_output "child"
  run grep -c $'\tE\t' "$LOG"
  (( output == $(grep -c $'\tB\t' "$LOG") ))
}

@test "commands: a script's own TRACEPARENT=\$(...) stays the script's after the program in it is recorded" {
  cat >"$SCRIPT" <<'EOS'
printf '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\n' >"$T/tp"
TRACEPARENT=$(cat "$T/tp")
echo "$TRACEPARENT"
export TRACEPARENT=`cat "$T/tp"`
echo "$TRACEPARENT"
EOS
  T=$BATS_TEST_TMPDIR auto_run commands
  assert_success
  assert_output $'00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\n00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
  run begins command
  assert_output cat        # (export's argument: the fast path's, see docs/shim.md Limits)
}

@test "functions: a tested status is OK with process.exit.code, an untested one is the error" {
  cat >"$SCRIPT" <<'EOS'
no() { return 3; }
if ! no; then :; fi
no || :
no
echo "$?"
no
true
EOS
  auto_run functions
  assert_success
  run awk -F'\t' '$2 == "E" { s = $7; for (i = 8; i <= NF; i++) s = s " " $i; print s }' "$LOG"
  assert_output $'ok process.exit.code=3 gwtrace.status.tested=true\nok process.exit.code=3 gwtrace.status.tested=true\nok process.exit.code=3 gwtrace.status.tested=true\n3 code.line.number=6 code.file.path='"$SCRIPT"$' code.function.name=no\n0'
}

@test "functions: bash -c and bash -s read only the common half of the layer, and trace as a script file does" {
  # The DEBUG trap runs for gwtrace-auto.sh's own last command, at depth 1,
  # where a -c or -s script runs at 0: that must not look like a call (which
  # read gwtrace-auto-frames.sh and -util.sh, ~8 M instructions, in every
  # such shell) nor leave a status the script's first command would take.
  # A status tested in a -c script is found in its text (BASH_EXECUTION_STRING).
  # shellcheck disable=SC2016  # expanded by the traced shell
  # (bash 4 reads -util.sh anyway, for its clock: it has no EPOCHREALTIME.)
  local probe='echo "frames=${_gwtrace_aframes-no} util=${_gwtrace_autil-no}"' util=no
  (( BASH_VERSINFO[0] >= 5 )) || util=1
  run --separate-stderr env BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL=functions \
    bash -c "$probe"$'\nno() { return 3; }\nno || :\nyes() { :; }\nyes'
  assert_success
  assert_output "frames=no util=$util"
  printf '%s\n' "$probe" >"$SCRIPT"
  run --separate-stderr env BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL=functions bash -s <"$SCRIPT"
  assert_success
  assert_output "frames=no util=$util"
  run awk -F'\t' -v OFS='\t' '$2 == "B" { print $11 } $2 == "E" { $1 = $2 = $3 = $4 = $5 = $6 = ""; sub(/^\t+/, ""); print }' "$LOG"
  assert_output $'bash -c\nno\nok\tprocess.exit.code=3\tgwtrace.status.tested=true\nyes\n0\n0\nbash -s\n0'
}

# tree: each span begun in $LOG as "PARENT-NAME>NAME" (the root's parent: -), in order.
tree() {
  awk -F'\t' '$2 == "B" { n[$6] = $11 ~ / -[cs]$/ ? "SCRIPT" : $11; print ($7 in n ? n[$7] : "-") ">" n[$6] }' "$LOG"
}

# bash 4.2 (EL7) leaves the functions of a -c or -s script out of BASH_SOURCE (a function
# defined in a file keeps its entry): the layer counts FUNCNAME there (gwtrace-auto-fn.sh, note 13).
@test "functions: a bash -c or -s script's nested calls, a file sourced in a function and its functions trace as a script file's" {
  local level text want
  printf '%s\n' 'lf() { :; }' 'lf' >"$BATS_TEST_TMPDIR/lib.sh"
  text=$'f() { g; }\ng() { source '"$BATS_TEST_TMPDIR/lib.sh"$'; lf; h; }\nh() { lf; }\nf\nlf\nsource '"$BATS_TEST_TMPDIR/lib.sh"$'\nx=$(h)\n(f)'
  printf '%s\n' "$text" >"$SCRIPT"
  for level in functions commands; do
    : >"$LOG"
    auto_run "$level"
    assert_success
    run tree
    want=${output//${SCRIPT##*/}/SCRIPT}
    [[ $want == *$'g>source lib.sh\nsource lib.sh>lf\ng>lf\ng>h\nh>lf'* ]]
    : >"$LOG"
    run --separate-stderr env BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL="$level" bash -c "$text"
    assert_success
    run tree
    assert_output "$want"
    : >"$LOG"
    run --separate-stderr env BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL="$level" bash -s <"$SCRIPT"
    assert_success
    run tree
    assert_output "$want"
  done
}

@test "a script span is named after the script however bash was started, also with \$0 still bash's (bash < 5.2)" {
  # Bash before 5.2 (every EL7-EL9 worker node) reads BASH_ENV before it sets
  # $0 to the script: gwtrace-auto-argv.sh reads the operand from the shell's
  # command line instead. Its parser is checked here on real command lines.
  local argv="$GW_ROOT/bash/gwtrace-auto-argv.sh"
  # shellcheck disable=SC2016  # expanded by the child shells
  printf '%s\n' "source '$argv'" '_gwtrace_auto_argv' 'echo "l0=$_gwtrace_l0"' >"$SCRIPT"
  local -a starts=("bash $SCRIPT" "bash -e $SCRIPT" "bash -eo pipefail $SCRIPT a b" "bash -o pipefail +x -- $SCRIPT"
                   "bash --norc --rcfile /dev/null $SCRIPT x" "bash -O extglob $SCRIPT")
  local start
  for start in "${starts[@]}"; do
    run $start
    assert_output "l0=$SCRIPT"
  done
  run bash -s x <"$SCRIPT"
  assert_output "l0="
  # shellcheck disable=SC2016  # expanded by the child shell
  printf '#!/bin/bash -e\nsource %q\n_gwtrace_auto_argv\necho "l0=$_gwtrace_l0"\n' "$argv" >"$BATS_TEST_TMPDIR/shebang.sh"
  chmod +x "$BATS_TEST_TMPDIR/shebang.sh"
  run "$BATS_TEST_TMPDIR/shebang.sh" arg
  assert_output "l0=$BATS_TEST_TMPDIR/shebang.sh"
  # end to end on this bash, and bash reading its script from stdin by its full path
  printf '%s\n' 'echo ran' >"$SCRIPT"
  auto_run functions
  assert_output ran
  run env BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL=functions "$BASH" <"$SCRIPT"
  assert_output ran
  run awk -F'\t' '$2 == "B" { print $11, $14 }' "$LOG"
  assert_output "${SCRIPT##*/} code.file.path=$SCRIPT"$'\n'"bash -s "
}

@test "a script's trap - EXIT and trap '' EXIT take its handler off at every level (bash 4.2: printf -v NAME '' set nothing)" {
  local level
  cat >"$SCRIPT" <<'EOS'
trap 'echo handler 1' EXIT
f() { trap - ERR EXIT; echo in f; }
f
trap 'echo handler 2' EXIT
trap '' EXIT
echo end
EOS
  for level in scripts functions commands; do
    auto_run "$level"
    assert_success
    assert_output $'in f\nend'
  done
}

@test "a code.file.path of over 1000 non-ASCII characters is cut on a character boundary under LC_ALL=C, as the library cuts" {
  local dir=$BATS_TEST_TMPDIR comp level
  comp=$(printf 'é%.0s' {1..120})
  for _ in 1 2 3 4 5 6 7 8 9; do dir+=/$comp; done
  mkdir -p "$dir"
  printf '%s\n' 'f() { return 3; }' >"$dir/lib.sh"
  # shellcheck disable=SC2016  # expanded by the traced shell
  printf '%s\n' 'source "${BASH_SOURCE%/*}/lib.sh"' 'f' 'true' >"$dir/s.sh"
  for level in scripts functions commands; do
    : >"$LOG"
    run env LC_ALL=C BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL="$level" bash "$dir/s.sh"
    assert_success
    run "$GW_PY" - "$LOG" "$dir" <<'EOF'
import sys
want = sys.argv[2].encode("utf-8", "surrogateescape").decode("utf-8")
paths = []
for raw in open(sys.argv[1], "rb").read().split(b"\n")[:-1]:
    for field in raw.split(b"\t")[10:]:
        if field.startswith(b"code.file.path="):
            value = field[len(b"code.file.path="):].decode("utf-8")  # strict: no cut character
            assert len(value) == 1000 and want.startswith(value), (len(value), value[-5:])
            paths.append(value)
print(len(paths))
EOF
    assert_success
    (( output >= 1 ))
  done
}

@test "functions: a function run as an element of a pipeline, in \$(...) too, has its span ended" {
  local level
  cat >"$SCRIPT" <<'EOS'
f() { echo a; echo b; }
n=$(f | wc -l)
f | cat >/dev/null
echo "n=$n"
EOS
  for level in functions commands; do
    : >"$LOG"
    auto_run "$level"
    assert_success
    assert_output "n=2"
    run awk -F'\t' '$2 == "B" { b[$6] = $11 } $2 == "E" { delete b[$6] } END { for (id in b) print "open: " b[id] }' "$LOG"
    assert_output ""
  done
}

# Bash < 5 runs no EXIT trap in a pipeline element that is a function, 5.0-5.1 run it with the $?
# of before a `return N` and make that the element's status: a RETURN trap ends its spans there
# (gwtrace-auto-fn.sh, note 14). Bash 4.2 frees every inherited trap at a subshell's first
# `trap`, ours for its EXIT included: the DEBUG trap (and the script's ERR and RETURN traps) went
# with it, and the functions a subshell or $(...) called had no span.
@test "functions: a pipeline element function ends with its status, and a subshell's functions have spans, the script's traps as untraced" {
  local level plain
  cat >"$SCRIPT" <<'EOS'
h() { :; }
f() { h; return 3; }
g() { local r=4; return $r; }
f | cat; echo "ps=${PIPESTATUS[*]}"
x=$(g | wc -l)
(f) || echo "sub=$?"
y=$(h)
set -E -T
trap 'echo "err ${FUNCNAME-} $BASH_SUBSHELL"' ERR
trap '[[ ${FUNCNAME-} != k ]] || echo "ret k $BASH_SUBSHELL"' RETURN
k() { false; }
k | cat
(k) || :
echo "x=$x y=$y"
EOS
  plain=$(env -u BASH_ENV bash "$SCRIPT" 2>&1)
  [[ $plain == *"ps=3 0"* && $plain == *"ret k 1"* && $plain == *"err k 1"* ]]
  for level in functions commands; do
    : >"$LOG"
    auto_run "$level"
    assert_success
    assert_output "$plain"
    run awk -F'\t' '$2 == "B" { b[$6] = $11; f[$6] = NF == 11 } $2 == "E" && f[$6] { print b[$6], $7, $8 } $2 == "E" { delete b[$6] }
                     END { for (id in b) print "open: " b[id] }' "$LOG"     # function spans (no attributes), and any left open
    [[ $output != *open:* ]]
    # f | cat, (f) || ..., k | cat, (k) || :; bash 5.2 ends the pipeline's g with its 4, an older one cannot read `return $r`
    [[ $output == *$'h 0 \nf 3 code.line.number=4\n'*$'h 0 \nf ok process.exit.code=3\nh 0 \n'*$'k 1 code.line.number=12\nk ok process.exit.code=1'* ]]
    [[ $output == *$'g 4 code.line.number=5\n'* || ( $output == *$'g ok gwtrace.status.unknown=true\n'* && ${BASH_VERSINFO[0]}${BASH_VERSINFO[1]} -lt 52 ) ]]
  done
}

# bats' `run` in small: a function turns functrace off and on again, then a
# function is called. The script's DEBUG trap must run in that function as
# untraced. On bash < 4.4 the layer's switch of its trap's text in the slow
# path after the `set +T` was undone when the slow path returned (bash put
# back the trap it had when called without functrace: gwtrace-auto-fn.sh,
# note 12), and the `set -T` went unseen.
@test "functions: the script's DEBUG trap runs in a function called after functrace went off and on again" {
  local level plain
  cat >"$SCRIPT" <<'EOS'
set -T
trap '[[ ${FUNCNAME-} != g ]] || echo "in g: $BASH_COMMAND"' DEBUG
g() { [ "$1" = ok ]; }
r() {
  set +T
  local x=1
  set -T
  : "$x"
}
r
g nope || echo "g failed"
EOS
  plain=$(env -u BASH_ENV bash "$SCRIPT")
  # shellcheck disable=SC2016  # the command as the trap shows it
  [[ $plain == *'in g: [ "$1" = ok ]'* ]]
  for level in functions commands; do
    : >"$LOG"
    auto_run "$level"
    assert_success
    assert_output "$plain"
  done
}

# as_untraced LEVEL...: $SCRIPT traced at each LEVEL prints exactly what it
# prints untraced (stdout and stderr, in order) and exits with the same status.
as_untraced() {
  local plain traced level
  plain=$(env -u BASH_ENV bash "$SCRIPT" 2>&1; echo "status $?")
  for level in "$@"; do
    : >"$LOG"
    traced=$(env BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL="$level" bash "$SCRIPT" 2>&1; echo "status $?")
    assert_equal "$traced" "$plain"
  done
}

# A script's own DEBUG trap and our EXIT trap: bash 5 runs the DEBUG trap for
# a trap's commands with BASH_COMMAND still the script's last command
# (running_trap), so the script's trap, chained after ours, ran once more
# at exit, whatever made the script exit; with an EXIT handler of the
# script's it runs before the handler's first command, as untraced (bash 4
# shows a `((` as the command there).
# shellcheck disable=SC2016  # the scripts' own text, expanded when they run
@test "functions: a script's own DEBUG trap runs at exit only as often as untraced" {
  local body
  for body in 'echo x' \
      'f() { echo in f; exit 3; }; f' \
      'set -e; f() { echo in f; false; echo not; }; f' \
      'set -e; f() { echo f; }; f' \
      '( echo sub; exit 2 ) || echo "sub $?"; g() { ( echo in-g; exit 6 ); }; g; echo "g $?"' \
      'trap '\''echo "exit $?"; echo two'\'' EXIT; f() { echo in f; return 4; }; f || echo failed; exit 5' \
      'trap "echo e1; echo e2" EXIT; echo x'; do
    printf '%s\n' 'set -T' 'trap '\''echo "dbg [$BASH_COMMAND] $LINENO ${FUNCNAME[*]-top} $?"'\'' DEBUG' "$body" >"$SCRIPT"
    as_untraced functions commands
  done
}

# bash takes a DEBUG trap out of a function (or sourced file, or subshell)
# entered while functrace is off, and leaves it in one entered while on,
# whatever functrace becomes inside: a `set +T` in a function does not stop
# the trap there, only in what the function calls next.
@test "functions: after set +T in a function the script's DEBUG trap still runs there, not in functions called next" {
  cat >"$SCRIPT" <<'EOS'
set -T
trap 'echo "dbg [$BASH_COMMAND] $LINENO ${FUNCNAME[*]-top}"' DEBUG
g() { echo g1; }
f() {
  echo f1
  set +o functrace
  echo f2
  g
  ( echo sub; g )
  echo "$(g)"
  echo f3
}
f
g
shopt -s extdebug
g
shopt -u extdebug
g
echo end
EOS
  as_untraced functions commands
}

# `set -T` as the last command of a function: the layer read the set's effect
# from $_, which is then the call's last argument.
@test "functions: a set -T that ends a function gives the script's DEBUG trap to the functions called after it" {
  cat >"$SCRIPT" <<'EOS'
trap 'echo "dbg [$BASH_COMMAND] ${FUNCNAME[*]-top}"' DEBUG
g() { echo g1; }
on() { echo on; set -T; }
off() { set +T; }
flags() { set "-$1"; }
on
g
off
g
flags T
g
EOS
  as_untraced functions commands
}

# Where bash takes the script's trap out: a trap set in a function stays
# after it returns but leaves functions entered without functrace; `trap -
# DEBUG` and `trap -p DEBUG` in a function that has none see none, and bash
# puts the trap back when it returns; a sourced file is scoped as a function.
# shellcheck disable=SC2016  # the scripts' own text, expanded when they run
@test "functions: the script's DEBUG trap is in force in functions, sourced files and subshells as untraced" {
  local body
  for body in \
      'f() { trap '\''echo "dbg [$BASH_COMMAND] $LINENO ${FUNCNAME[*]-top}"'\'' DEBUG; echo f1; h; }; h() { echo h1; }; g() { echo g1; }; f; g; echo end' \
      'trap '\''echo "dbg [$BASH_COMMAND] ${FUNCNAME[*]-top}"'\'' DEBUG; f() { echo f1; trap - DEBUG; echo f2; trap -p DEBUG; }; f; echo after; trap -p DEBUG | wc -l' \
      'trap '\''echo "dbg [$BASH_COMMAND] ${FUNCNAME[*]-top}"'\'' DEBUG; f() { trap -p; echo f1; }; f; trap -p DEBUG' \
      'printf "%s\n" "echo in-src" "set -T" "echo src2" >"$BATS_TEST_TMPDIR/src.sh"; trap '\''echo "dbg [$BASH_COMMAND]"'\'' DEBUG; source "$BATS_TEST_TMPDIR/src.sh"; g() { echo g1; }; g' \
      'set -T; trap '\''echo "dbg [$BASH_COMMAND]"'\'' DEBUG; f() { trap - DEBUG; echo f1; }; f; echo after; g() { echo g1; }; g'; do
    printf '%s\n' "BATS_TEST_TMPDIR='$BATS_TEST_TMPDIR'" "$body" >"$SCRIPT"
    as_untraced functions commands
  done
}

# A `set` that may change functrace runs with the script's own (off here):
# `set -- ...` only sets the arguments, and a subshell begun right after it
# keeps our DEBUG trap (its function spans).
@test "functions: set -- before a subshell leaves the subshell's function spans" {
  cat >"$SCRIPT" <<'EOS'
g() { echo g1; }
x="a b"
set -- $x "$x"
( g )
set -- "$@"
( g )
echo "$#"
EOS
  as_untraced functions
  run awk -F'\t' '$2 == "B" && $11 == "g"' "$LOG"
  (( ${#lines[@]} == 2 ))
}

# A subshell whose first command calls a function gets our EXIT trap first;
# bash < 4.4 freed every trap string with it (free_trap_strings), the
# script's DEBUG and ERR traps among them.
@test "functions: the script's DEBUG and ERR traps run in a function a subshell or \$(...) calls first" {
  cat >"$SCRIPT" <<'EOS'
set -ET
trap 'echo "dbg [$BASH_COMMAND] ${FUNCNAME[*]-top}"' DEBUG
trap 'echo "err [$BASH_COMMAND] $?"' ERR
f() { echo f; false; echo g; }
x=$(f)
echo "$x"
( f )
f | cat
EOS
  as_untraced functions commands
}

# bash < 4.4 puts back the DEBUG trap a function was entered with (without
# functrace) when it returns, even over one the function set (set_debug_trap;
# 4.4: maybe_set_debug_trap, only if none is set).
@test "functions: a DEBUG trap set in a function entered without functrace, on every bash" {
  cat >"$SCRIPT" <<'EOS'
trap 'echo "dbg [$BASH_COMMAND] $LINENO ${FUNCNAME[*]-top} $?"' DEBUG
f() { trap 'echo "new [$BASH_COMMAND] $LINENO"
echo "line 2: $LINENO"' DEBUG; echo f1; false; }
f
echo top
g() { echo g1; }
g
f || :
echo end
EOS
  as_untraced functions commands
}

# After a call, $_ is the call's last word: our `trap` applies a DEBUG trap
# with a one-shot trap before the next command, whose own `trap` builtins
# left $_ at DEBUG there (issue 27); bash < 4.4's eval of the trap it puts
# back left the eval's argument.
# shellcheck disable=SC2016  # the script's own text, expanded when it runs
@test "functions: \$_ after a function whose last command is trap ... DEBUG is the call's last word, as untraced" {
  local accel
  cat >"$SCRIPT" <<'EOS'
f() { echo f1; trap '(( n++ ))' DEBUG; }
f
echo "under [$_]"
g() { trap - DEBUG; }
g
echo "under2 [$_]"
h() { trap '(( n++ ))' DEBUG; }
h x y
echo "u3 [$_]"
k() { trap '' DEBUG; }
k a
echo "u4 [$_] $n"
EOS
  for accel in 1 0; do
    GWTRACE_ACCEL=$accel as_untraced functions commands
  done
}

# A bats file whose tests fail in a helper, after `run` (its `set +eET` ...
# `set "-$flags"`), and directly: bats' own DEBUG trap builds the stack
# frames it prints, so its output shows whether that trap saw exactly what
# it sees untraced.
@test "bats: a failing test's output is byte-identical traced and untraced, and its functions are traced" {
  local bats="$GW_ROOT/.tools/node_modules/bats/bin/bats" level plain
  [[ -x $bats ]] || skip "bats-core not installed under .tools"
  cat >"$BATS_TEST_TMPDIR/inner.bats" <<'EOS'
helper() { [ "$1" = ok ]; }
@test "passes" {
  helper ok
}
@test "fails in a helper after run" {
  run echo hi
  helper nope
}
@test "fails directly" {
  false
}
EOS
  plain=$(env -u BASH_ENV "$bats" "$BATS_TEST_TMPDIR/inner.bats" 2>&1) || :
  [[ $plain == *"from function \`helper'"* ]]
  for level in scripts functions commands; do
    : >"$LOG"
    run env BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL="$level" "$bats" "$BATS_TEST_TMPDIR/inner.bats"
    assert_failure 1
    assert_output "$plain"
    [[ $level == scripts ]] && continue
    run awk -F'\t' '$2 == "B" && $11 == "helper"' "$LOG"
    (( ${#lines[@]} == 2 ))
  done
}

# One rule, two copies (issue 10): the auto layer keeps fast copies of the
# library's TRACEPARENT parsing, escaping and bash 4 clock; these tests hold
# them equal to the library's on the same inputs.

# lib_context TP: what the library makes of TRACEPARENT=TP: "trace span flags" or "-".
lib_context() {
  # shellcheck disable=SC2016  # expanded by the inner bash
  TRACEPARENT=$1 bash -c 'source "$1"; [[ -n $_gwtrace_base_tr ]] && echo "$_gwtrace_base_tr $_gwtrace_base_sp $_gwtrace_base_fl" || echo -' _ "$GW_ROOT/bash/gwtrace.sh"
}

# auto_context TP: what the auto layer makes of it: the script span's "trace parent flags" or "-".
auto_context() {
  : >"$LOG"
  TRACEPARENT=$1 BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL=scripts bash -c ':'
  awk -F'\t' -v tp="$1" '$2 == "B" { if ($7 == "-") print "-"; else print $5, $7, $9; exit }' "$LOG"
}

@test "the auto layer parses TRACEPARENT by the library's rule" {
  local tp inputs=(
    "$TP_VALID" "00-$TP_TRACE-$TP_PARENT-03" "00-$TP_TRACE-$TP_PARENT-ff"
    "  $TP_VALID  " "01-$TP_TRACE-$TP_PARENT-01" "01-$TP_TRACE-$TP_PARENT-01-future"
    "cc-$TP_TRACE-$TP_PARENT-01-x" "ff-$TP_TRACE-$TP_PARENT-01" "00-$TP_TRACE-$TP_PARENT-01-extra"
    "01-$TP_TRACE-$TP_PARENT-01x" "00-${TP_TRACE^^}-$TP_PARENT-01" "00-00000000000000000000000000000000-$TP_PARENT-01"
    "00-$TP_TRACE-0000000000000000-01" "00-$TP_TRACE-$TP_PARENT-0g" "00_$TP_TRACE-$TP_PARENT-01"
    "00-$TP_TRACE-$TP_PARENT" "" "garbage")
  for tp in "${inputs[@]}"; do
    local lib auto
    lib=$(lib_context "$tp") auto=$(auto_context "$tp")
    echo "[$tp] library: $lib auto: $auto"
    [ "$lib" = "$auto" ]
  done
  # Not sampled: the library records (flags 00); the auto layer records nothing.
  [ "$(lib_context "00-$TP_TRACE-$TP_PARENT-00")" = "$TP_TRACE $TP_PARENT 00" ]
  [ -z "$(auto_context "00-$TP_TRACE-$TP_PARENT-00")" ]
}

@test "the auto layer escapes as the library does" {
  # shellcheck disable=SC2016  # expanded by the inner bash
  run bash -c '
    source "$1/bash/gwtrace.sh"; _gwtrace_adir=$1/bash; source "$1/bash/gwtrace-auto-util.sh"
    for s in "" plain "tab	x" "nl
x" "cr"$'"'"'\r'"'"' "back\\slash" "\\t literal" "mixed\\	
	\\n" "$(printf "%0900d" 0)	end"; do
      _gwtrace_esc "$s"; _gwtrace_auto_esc "$s"
      [[ $_gwtrace_r == "$_gwtrace_ar" ]] || { echo "differ on [$s]: [$_gwtrace_r] [$_gwtrace_ar]"; exit 1; }
      echo "same: $_gwtrace_ar"
    done' _ "$GW_ROOT"
  assert_success
  assert_output --partial 'same: tab\tx'
  assert_output --partial 'same: back\\slash'
  assert_output --partial 'same: cr\r'
}

@test "the auto layer's bash 4 clock is the library's, with and without GWTRACE_BOOT_US" {
  local boot
  for boot in 1700000000000000 ''; do
    # shellcheck disable=SC2016  # expanded by the inner bash
    run env ${boot:+GWTRACE_BOOT_US=$boot} bash -c '
      unset EPOCHREALTIME
      source "$1/bash/gwtrace.sh"; _gwtrace_adir=$1/bash; source "$1/bash/gwtrace-auto-util.sh"
      _gwtrace_now; _gwtrace_auto_now
      echo "$_gwtrace_clock $_gwtrace_at"' _ "$GW_ROOT"
    assert_success
    local lib=${output% *} auto=${output#* }
    [[ $lib =~ ^[0-9]+\.[0-9]{6}$ && $auto =~ ^[0-9]+\.[0-9]{6}$ ]]
    if [[ -n $boot ]]; then
      # one base: the same 10 ms tick of /proc/uptime or a later one (read
      # after the library's; 200 ms for a loaded machine)
      (( ${auto/./} - ${lib/./} >= 0 && ${auto/./} - ${lib/./} <= 200000 ))
    else
      # each takes its base from a whole-second clock minus the uptime, so
      # two bases taken a few ms apart differ by up to a second (a second
      # boundary between them); both within 2 s of date
      (( ${auto/./} - ${lib/./} >= -1200000 && ${auto/./} - ${lib/./} <= 1200000 ))
      (( ${auto%.*} - $(date +%s) <= 2 && $(date +%s) - ${auto%.*} <= 2 ))
      (( ${lib%.*} - $(date +%s) <= 2 && $(date +%s) - ${lib%.*} <= 2 ))
    fi
  done
}

@test "the auto layer's span-id prefix is the library's splitmix64 step on the same state" {
  # shellcheck disable=SC2016  # expanded by the inner bash
  run bash -c '
    source "$1/bash/gwtrace.sh"; _gwtrace_adir=$1/bash; _gwtrace_asp0=x _gwtrace_abd=1 _gwtrace_amain=$BASHPID
    source "$1/bash/gwtrace-auto-util.sh"; source "$1/bash/gwtrace-auto-fn.sh"; trap - DEBUG
    for state in 0 1 42 -1 1234567890123456789 -7046029254386353131 9223372036854775807; do
      _gwtrace_rng=$state; _gwtrace_rand64
      _gwtrace_arng=$state _gwtrace_arngpid=$BASHPID; _gwtrace_auto_seed
      [[ ${_gwtrace_r:6} == "$_gwtrace_apfx" || ( ${_gwtrace_r:6} == 0000000000 && $_gwtrace_apfx == 0000000001 ) ]] \
        || { echo "differ at $state: ${_gwtrace_r:6} $_gwtrace_apfx"; exit 1; }
      echo "same: $_gwtrace_apfx"
    done' _ "$GW_ROOT"
  assert_success
  [ "$(grep -c '^same: [0-9a-f]\{10\}$' <<<"$output")" -eq 7 ]
}
# A script's own RETURN trap fires only where bash leaves it in force: not as
# our functions return (the functrace code put it back from inside them),
# not in a function entered while functrace was off, nor in those it calls
# after a `set -T` there; in the functions entered while functrace was on,
# even after a `set +T` (issue 27 §1).
# shellcheck disable=SC2016  # the script's own text, expanded when it runs
@test "functions: a script's own RETURN trap fires only where it would untraced, never for our functions (issue 27 §1)" {
  local accel
  printf '%s\n' 'trap '\''echo "ret ${FUNCNAME-}"'\'' RETURN' 'h() { echo h; }' \
    'f() { set -T; trap '\''echo int'\'' INT; h; }; f' >"$SCRIPT"
  for accel in 1 0; do
    GWTRACE_ACCEL=$accel as_untraced functions commands
  done
  cat >"$SCRIPT" <<'EOS'
trap 'echo "ret ${FUNCNAME-} $? [$_]"' RETURN
h() { echo h; return 3; }
f() { set -T; trap 'echo int' INT; h; echo "h $?"; }; f
g() { h x; }; g; echo "g $?"
set -T
g; f
k() { set +T; h; }; k; g
EOS
  for accel in 1 0; do
    GWTRACE_ACCEL=$accel as_untraced functions commands
  done
}

# bash < 5.2: a function run as a pipeline element gets our RETURN trap
# (gwtrace-auto-frames.sh, _gwtrace_apret), which runs as every function
# there returns, in front of the script's own: the script's DEBUG trap must
# not run for its commands (bash 5.1 leaves BASH_COMMAND at the script's
# inside a trap), nor $? and $_ change, nested or not, with and without a
# RETURN trap of the script's; the script's traps run as often as untraced,
# the last one too, after the element's spans ended (issue 27 §2). Bash 4
# shows the script's RETURN trap (and the DEBUG trap run for its first
# command) its own command as BASH_COMMAND: docs/shim.md, Limits; the rest
# holds there.
@test "functions: a pipeline element's nested returns change nothing the script's DEBUG and RETURN traps see (issue 27 §2)" {
  local accel plain traced level
  cat >"$SCRIPT" <<'EOS'
set -T
trap 'echo "dbg [$BASH_COMMAND] ${FUNCNAME[*]-top} $?"' DEBUG
h() { return 4; }
g() { h; echo "h gave $? [$_]"; false; }
f() { g; echo "g gave $? [$_]"; g last-word; return 3; }
f | cat
echo "pipe ${PIPESTATUS[*]}"
x=$(f | tr a-z A-Z)
echo "$x"
EOS
  for accel in 1 0; do
    GWTRACE_ACCEL=$accel as_untraced functions commands
  done
  cat >>"$SCRIPT" <<'EOS'
trap 'echo "ret [$BASH_COMMAND] ${FUNCNAME[*]-top} $? [$_]"' RETURN
f | cat
echo "pipe ${PIPESTATUS[*]}"
EOS
  if (( $(bash -c 'echo "${BASH_VERSINFO[0]}"') >= 5 )); then
    for accel in 1 0; do
      GWTRACE_ACCEL=$accel as_untraced functions commands
    done
    return 0
  fi
  # bash 4: all but BASH_COMMAND in the script's traps' lines
  plain=$(env -u BASH_ENV bash "$SCRIPT" 2>&1 | no_bash_command; echo "status ${PIPESTATUS[0]}")
  for accel in 1 0; do
    for level in functions commands; do
      traced=$(env BASH_ENV="$GW_ROOT/bash/gwtrace-auto.sh" GWTRACE_AUTO_LEVEL="$level" GWTRACE_ACCEL=$accel bash "$SCRIPT" 2>&1 \
        | no_bash_command; echo "status ${PIPESTATUS[0]}")
      assert_equal "$traced" "$plain"
    done
  done
}

# no_bash_command: "dbg [COMMAND] FUNCNAME... STATUS" and "ret [COMMAND]
# FUNCNAME... STATUS [LASTARG]" lines with COMMAND as [-].
no_bash_command() {
  sed -E 's/\[dbg \[.*\] ((\w+ )*(main|top) [0-9]+)\]$/[dbg [-] \1]/; s/^(dbg|ret) \[.*\] ((\w+ )*(main|top) [0-9]+( \[.*\])?)$/\1 [-] \2/'
}

# A function whose last command is the script's `trap` returns before the
# next command, where our one-shot DEBUG trap put the RETURN trap back: the
# RETURN trap is back as `trap` returns. Bash < 5.2 ends a pipeline
# element's spans in it (f's span stayed open); a RETURN trap set in a
# function fires as it returns, not in the next function (issue 27 §3).
# shellcheck disable=SC2016  # the script's own text, expanded when it runs
@test "functions: a function ending with \`trap\` ends its spans and fires its RETURN trap as untraced (issue 27 §3)" {
  local accel level
  cat >"$SCRIPT" <<'EOS'
set -E
trap 'echo "err ${FUNCNAME-} $?"' ERR
trap 'echo "ret ${FUNCNAME-} $?"' RETURN
h() { echo h; }
f() { h; trap 'echo int' INT; }; f | cat
g() { h; trap - RETURN; }; g | cat
k() { h; trap 'echo "r2 ${FUNCNAME-}"' RETURN; }; k | cat
m() { trap 'echo "mret ${FUNCNAME-} $?"' RETURN; }; m; h
echo done
EOS
  for accel in 1 0; do
    GWTRACE_ACCEL=$accel as_untraced functions commands
  done
  for level in functions commands; do
    : >"$LOG"
    auto_run "$level"
    assert_success
    run awk -F'\t' '$2 == "B" && $11 ~ /^[fghkm]$/ { print $11 }' "$LOG"
    assert_output $'f\nh\ng\nh\nk\nh\nm\nh'
    run grep -c $'\tE\t' "$LOG"
    (( output == $(grep -c $'\tB\t' "$LOG") ))
  done
}


@test "functions: a file sourced as \$(dirname \"\$0\")/lib.sh that only defines functions is named by the file (issue 27 §4)" {
  mkdir -p "$BATS_TEST_TMPDIR/d"
  printf 'libf() { :; }\n' >"$BATS_TEST_TMPDIR/d/lib.sh"
  SCRIPT=$BATS_TEST_TMPDIR/d/main.sh
  cat >"$SCRIPT" <<'EOS'
source $(dirname "$0")/lib.sh
. "$(dirname "$0")/lib.sh"
source `dirname "$0"`/lib.sh
libf
EOS
  auto_run functions
  assert_success
  run begins source
  assert_output $'source lib.sh\nsource lib.sh\nsource lib.sh'
}
