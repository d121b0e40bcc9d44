"""The accelerator (bash/gwtrace-accel.so) records what the shell code records, and is loaded only
where its load check passed.

The accelerator is a bash loadable builtin that runs the DEBUG traps' common slow paths in C
(docs/shim.md, "The accelerator"). It must never be a second opinion: for every workload here the
event log with it and without it (GWTRACE_ACCEL=0) must be the same, line for line, once ids, times
and process ids are replaced by their order of appearance; the script must print and exit the
same; and the C code must have done the slow paths itself (its `--count`), so that a library
handing everything to the shell code cannot pass. The rest of the suite runs with it loaded (the
Makefile builds it), and bats runs twice.

It declares bash's structures by hand, so a traced bash loads only a copy that the load check
(gwtrace/shim/accel.py) verified for its binary: a library that reads bash wrong (built with a
skewed layout, or run by a bash with another `struct variable`), lacks a symbol, carries another
stamp, or a bash replaced since, must leave the script's output, status and events as the shell
code's, and mark its span so that the sidecar counts it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from conftest import GWTRACE, REPO, TEST_BASHES, Sidecar, clean_env
from gwtrace.shim import accel, accel_check, accel_copies

sys.path.insert(0, str(REPO / "shim"))
from glibc_needed import glibc_versions, too_new  # noqa: E402

LAYER = REPO / "bash"
SO = LAYER / "gwtrace-accel.so"
SYSTEM_BASH = shutil.which("bash") or "/bin/bash"
#: Other bash builds to check against (conftest: GWTRACE_TEST_BASHES).
OLD_BASHES = TEST_BASHES
#: A bash 5.2 whose `struct variable` has one more field (`make bashes`: .ci/build-bash skew).
SKEW_BASH = os.environ.get("GWTRACE_TEST_SKEW_BASH", "")
needs_so = pytest.mark.skipif(not SO.is_file(), reason="bash/gwtrace-accel.so is not built (`make accel`: no C compiler?)")
UNVERIFIED = "gwtrace.accel=unverified"

#: Function calls at every depth, statuses the caller tests and does not, command substitutions
#: of functions and of programs, pipelines, `source`, a subshell that calls functions, recursion,
#: a function named like ours, set -e returning through frames, TRACEPARENT made readonly.
WORKLOAD = r"""
set -uo pipefail
leaf() { echo "leaf $1"; }
two() { leaf "$1"; leaf "$1$1"; }
fails() { return 3; }
rec() { (( $1 > 0 )) || return 0; rec $(( $1 - 1 )); }
getv() { echo "v$1"; }
trace_like() { :; }
deep() { two a; x=$(getv 1); y=$(/bin/echo p); echo "$x $y"; }
deep
if ! fails; then echo "tested $?"; fi
fails || echo "or $?"
fails; echo "untested $?"
rec 4
v=$(getv 2); echo "$v"
echo abc | while read -r l; do leaf "$l"; done
printf 'sourced() { leaf s; }\nsourced\n' > "$WORK/lib.sh"
source "$WORK/lib.sh"
( two sub; fails )
echo "sub $?"
for i in 1 2 3; do z=$(getv "$i"); leaf "$z"; done
trace_like
( set -e; f() { leaf e; false; leaf never; }; f ) || echo "errexit $?"
readonly TRACEPARENT
two ro
echo end
"""

#: Appended to a workload (or put in its place, #COUNT): what the C code handled in the script's process, in $GWTRACE_DIR/count
#: (only where the builtin is loaded: without it `builtin` fails, silently).
COUNT = """
{ builtin %s --count _gwtrace_tcount && printf '%%s\\n' "$_gwtrace_tcount" >"$GWTRACE_DIR/count"; } 2>/dev/null || :
"""


def run(script: str, work: Path, accel_switch: str, bash: str = "bash", level: str = "functions",
        layer: Path = LAYER) -> subprocess.CompletedProcess:
    """SCRIPT (written beside WORK, so that its path is the same for every run) under the auto
    layer in LAYER, its events in WORK/events.log; ACCEL_SWITCH is GWTRACE_ACCEL ("" unset)."""
    env = clean_env(BASH_ENV=str(layer / "gwtrace-auto.sh"), GWTRACE_DIR=str(work), GWTRACE_AUTO_LEVEL=level,
                    WORK=str(work.parent), LC_ALL="C")
    if accel_switch:
        env["GWTRACE_ACCEL"] = accel_switch
    path = work.parent / "s.sh"
    path.write_text(script)
    return subprocess.run([bash, str(path)], env=env, capture_output=True, text=True, timeout=60,
                          cwd=work, stdin=subprocess.DEVNULL)


def normalized(log: Path) -> List[str]:
    """The event lines with span/trace ids, times and process ids replaced by their order of
    appearance: what two runs of one script must share (the load check's own rule)."""
    return accel.normalized_events(log.read_text())


def counted(work: Path) -> Optional[Tuple[int, int]]:
    """(slow paths done in C, handed to the shell code) as the workload's COUNT line wrote them."""
    path = work / "count"
    if not path.is_file():
        return None
    done, shell = path.read_text().split()
    return int(done), int(shell)


def compare(tmp_path: Path, script: str, bash: str = "bash", level: str = "functions") -> Tuple[List[str], int]:
    """The events of SCRIPT, the same with the accelerator and without it; and the number of slow
    paths the C code did in the script's process (it must have done some: asserted by the callers)."""
    builtin = "_gwtrace_adbgc" if level == "functions" else "_gwtrace_atopc"
    results = {}
    counts = {}
    for switch in ("1", "0"):
        work = tmp_path / f"{level}-accel{switch}"
        work.mkdir()
        count = COUNT % builtin
        proc = run(script.replace("#COUNT\n", count) if "#COUNT\n" in script else script + count, work, switch,
                   bash, level)
        results[switch] = (proc.returncode, proc.stdout, proc.stderr, normalized(work / "events.log"))
        counts[switch] = counted(work)
    assert results["1"] == results["0"]
    assert counts["0"] is None                       # the shell code alone: no builtin
    assert counts["1"] is not None, "the accelerator was not loaded"
    return results["1"][3], counts["1"][0]


def loaded(tmp_path: Path, accel_switch: str = "", bash: str = "bash", level: str = "functions",
           layer: Path = LAYER) -> bool:
    """Whether a traced script's bash has the level's builtin."""
    work = tmp_path / f"probe-{level}{accel_switch}{len(list(tmp_path.iterdir()))}"
    work.mkdir()
    builtin = "_gwtrace_adbgc" if level == "functions" else "_gwtrace_atopc"
    proc = run(f"enable | grep -c {builtin} || :\n", work, accel_switch, bash, level, layer)
    return proc.stdout.strip() == "1"


def variant(tmp_path: Path, name: str, extra: str, make: bool = True) -> Path:
    """A copy of the auto layer with the accelerator built with EXTRA compiler flags: by the
    Makefile's rule (MAKE), or by a bare `cc` without -z now, as a build before this check was."""
    layer = tmp_path / name
    shutil.copytree(LAYER, layer, ignore=shutil.ignore_patterns("__pycache__", "accel", "*.py", "*.so",
                                                                accel.VERIFIED_DIR))
    target = layer / accel.SO_NAME
    if make:
        cmd = ["make", "-s", "--no-print-directory", "-C", str(REPO), "accel", f"ACCEL={target}", f"ACCEL_EXTRA={extra}"]
    else:
        cmd = ["cc", "-std=gnu99", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", *extra.split(), "-o", str(target),
               *sorted(str(p) for p in (REPO / "bash" / "accel").glob("*.c"))]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert build.returncode == 0 and target.is_file(), build.stderr
    return layer


def assert_unchanged(tmp_path: Path, layer: Path, bash: str = "bash", script: str = WORKLOAD) -> None:
    """SCRIPT under LAYER prints, exits and records what the shell code alone does, its script span
    marked: the accelerator was shipped and not trusted."""
    expected_dir, got_dir = tmp_path / "expected", tmp_path / "got"
    expected_dir.mkdir()
    got_dir.mkdir()
    expected = run(script, expected_dir, "0", bash)
    got = run(script, got_dir, "", bash, layer=layer)
    assert (got.returncode, got.stdout, got.stderr) == (expected.returncode, expected.stdout, expected.stderr)
    events = normalized(got_dir / "events.log")
    assert UNVERIFIED in events[0].split("\t")
    assert [line.replace("\t" + UNVERIFIED, "") for line in events] == normalized(expected_dir / "events.log")


@needs_so
@pytest.mark.parametrize("level", ["functions", "scripts"])
def test_each_level_loads_it_and_the_switch_turns_it_off(tmp_path: Path, level: str) -> None:
    assert loaded(tmp_path, level=level)
    assert not loaded(tmp_path, accel_switch="0", level=level)


@needs_so
def test_the_workload_is_recorded_the_same_with_and_without_it(tmp_path: Path) -> None:
    events, done = compare(tmp_path, WORKLOAD)
    begun = [line.split("\t")[10] for line in events if line.split("\t")[1] == "B"]
    # every function span is there: the comparison is not between two empty logs
    for name in ("deep", "two", "leaf", "fails", "rec", "getv", "sourced", "f"):
        assert name in begun, name
    assert "trace_like" not in begun                # trace_* is the library's API: the shell path's rule
    assert begun.count("rec") == 5 and begun.count("getv") == 5
    # and the C code did the work: the script's process alone enters and leaves a dozen functions
    assert done >= 20, done


@needs_so
def test_a_deep_and_wide_call_tree_is_the_same(tmp_path: Path) -> None:
    script = "\n".join(f"f{i}() {{ f{i + 1} \"$@\"; r=$(f{i + 1} x); : \"$r\"; }}" for i in range(5))
    script += "\nf5() { echo \"$#\"; return 0; }\nfor n in 1 2; do f0 $n; done\n"
    events, done = compare(tmp_path, script)
    assert sum(1 for line in events if line.split("\t")[1] == "B") == 1 + 2 * (2 ** 6 - 1)
    assert done >= 20, done


#: The scripts level's top-level function spans: statuses tested and not, children that read
#: TRACEPARENT (it must be the span's, then the script's again), a readonly TRACEPARENT, a sourced
#: file's top level, a pipeline and a subshell at the top level, the script's own DEBUG trap (ours
#: goes), and an exit inside a top-level call. (A top-level call in a pipeline has no child bash
#: here: its span ends at the DEBUG trap of the pipeline's next command, which bash runs in the
#: script's process while the call still runs, so a child's lines and that end would race.)
TOP_WORKLOAD = r"""
f() { echo "f $1"; bash -c 'echo "child ${TRACEPARENT:36:16}"' | tr -d '0-9a-f' ; }
fails() { return 3; }
f 1
x=1
if ! fails; then echo tested; fi
fails || echo or
fails
echo after
g() { echo "g $1"; }
g 2 | cat
( f 3 )
printf 'f in-source\n' > "$WORK/top-lib.sh"
source "$WORK/top-lib.sh"
f 4
readonly TRACEPARENT
f 5
#COUNT
quit() { exit 4; }
quit
"""

#: The script sets a DEBUG trap of its own while a top-level span is pending: ours goes.
TOP_OWN_TRAP = r"""
f() { echo "f $1"; }
f 1
trap 'echo own' DEBUG
f 2
trap - DEBUG
f 3
"""


@needs_so
@pytest.mark.parametrize("bash", ["bash"] + OLD_BASHES)
def test_the_scripts_level_is_recorded_the_same_with_and_without_it(tmp_path: Path, bash: str) -> None:
    assert loaded(tmp_path, bash=bash, level="scripts")
    events, done = compare(tmp_path, TOP_WORKLOAD, bash, level="scripts")
    begun = [line.split("\t")[10] for line in events if line.split("\t")[1] == "B"]
    assert begun.count("f") >= 3 and "g" in begun and begun.count("fails") == 3 and "quit" in begun
    ends = [line.split("\t")[6:] for line in events if line.split("\t")[1] == "E"]
    assert ["ok", "process.exit.code=3", "gwtrace.status.tested=true"] in ends
    # failures note where (the call site), both paths alike
    where = {(e[0], a) for e in ends for a in e[1:]}
    assert {("3", "code.line.number=8"), ("3", "code.function.name=fails")} <= where, ends
    assert {("4", "code.line.number=21"), ("4", "code.function.name=quit")} <= where, ends
    assert done >= 6, done                            # the f calls begun and ended in C
    (tmp_path / "own").mkdir()
    events, _ = compare(tmp_path / "own", TOP_OWN_TRAP, bash, level="scripts")
    assert [line.split("\t")[10] for line in events if line.split("\t")[1] == "B"] == ["s.sh", "f"]


@needs_so
def test_a_last_argument_named_like_the_builtins_options_is_only_an_argument(tmp_path: Path) -> None:
    """The DEBUG trap passes `$_`, the previous command's last argument, which may be `--end` or
    `--count`: the scripts level's next span must still begin, as the shell code begins it."""
    script = 'f() { echo "f $1"; }\nf 1\necho x --end\nf 2\necho y --count\nf 3\n'
    events, _ = compare(tmp_path, script, level="scripts")
    assert [line.split("\t")[10] for line in events if line.split("\t")[1] == "B"] == ["s.sh", "f", "f", "f"]


@needs_so
def test_many_frames_ending_at_once_all_end(tmp_path: Path) -> None:
    """120 nested calls return together: one slow path writes 120 end lines (more than one buffer)."""
    script = "\n".join(f"f{i}() {{ f{i + 1}; }}" for i in range(120)) + "\nf120() { echo deep; }\nf0; echo back\n"
    events, done = compare(tmp_path, script)
    kinds = [line.split("\t")[1] for line in events]
    assert kinds.count("B") == kinds.count("E") == 122
    assert done >= 121, done


@needs_so
def test_a_library_that_cannot_be_loaded_changes_nothing(tmp_path: Path) -> None:
    """A glidein on another architecture, or a truncated copy: the check refuses it, in one line,
    and the shell code does the work."""
    layer = tmp_path / "layer"
    shutil.copytree(LAYER, layer, ignore=shutil.ignore_patterns("__pycache__", "accel", "*.py", accel.VERIFIED_DIR))
    (layer / "gwtrace-accel.so").write_bytes(b"\x7fELF not really")
    [verdict] = accel.prepare(str(layer), [SYSTEM_BASH], memo_dir=str(tmp_path / "memo"))
    assert not verdict.ok and verdict.reason.startswith("enable -f failed (") and "\n" not in verdict.reason
    assert_unchanged(tmp_path, layer)


@needs_so
def test_it_needs_nothing_newer_than_el7s_glibc() -> None:
    """Worker nodes run EL7 (glibc 2.17) and later: the symbol versions it needs must be older
    (read from its ELF version needs, as `make dist` reads them)."""
    assert glibc_versions(str(SO)) and too_new(str(SO)) == []


def test_make_dist_refuses_a_library_that_needs_a_newer_glibc(tmp_path: Path) -> None:
    """getrandom is GLIBC_2.25: a library that calls it could not be loaded on EL7."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    src = tmp_path / "new.c"
    src.write_text("#include <sys/random.h>\nint f(char *b) { return (int)getrandom(b, 4, 0); }\n")
    lib = tmp_path / "gwtrace-accel.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=60)
    assert too_new(str(lib)) == ["GLIBC_2.25"]
    import build_pyz

    with pytest.raises(SystemExit) as exc:
        build_pyz.check_accelerator(lib)
    assert "needs GLIBC_2.25, newer than EL7's glibc 2.17" in str(exc.value)


@needs_so
def test_a_library_that_reads_bash_wrong_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    """Built with one more field in its `struct variable` than bash has: the probe reads a flag
    where bash keeps another, and the library is never loaded by a traced script."""
    layer = variant(tmp_path, "skew", "-DGWTRACE_TEST_SKEW")
    [verdict] = accel.prepare(str(layer), [SYSTEM_BASH], memo_dir=str(tmp_path / "memo"))
    assert not verdict.ok and verdict.reason.startswith("the library reads ") and verdict.reason.endswith(" wrong")
    assert not list((layer / accel.VERIFIED_DIR).glob("*.so"))
    assert not loaded(tmp_path, layer=layer)
    assert_unchanged(tmp_path, layer)


@needs_so
@pytest.mark.skipif(not SKEW_BASH, reason="GWTRACE_TEST_SKEW_BASH: a bash built with another struct variable "
                    "(`make bashes` builds one from bash 5.2's sources)")
def test_a_bash_with_another_struct_layout_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    """The other side of the same mismatch: a distribution's bash whose `struct variable` is not
    the one bash_abi.h declares. Loaded without the check, the library loses most of the trace."""
    layer = tmp_path / "layer"
    shutil.copytree(LAYER, layer, ignore=shutil.ignore_patterns("__pycache__", "accel", "*.py", accel.VERIFIED_DIR))
    [verdict] = accel.prepare(str(layer), [SKEW_BASH], memo_dir=str(tmp_path / "memo"))
    assert not verdict.ok and verdict.reason.startswith("the library reads "), verdict.reason
    assert not loaded(tmp_path, bash=SKEW_BASH, layer=layer)
    assert_unchanged(tmp_path, layer, SKEW_BASH)


@needs_so
@pytest.mark.parametrize("bound", ["now", "lazy"])
def test_a_library_that_needs_a_symbol_bash_lacks_is_refused(tmp_path: Path, bound: str) -> None:
    """A symbol this bash does not export: with -z now `enable -f` fails in the probe; bound
    lazily (a build without -z now), the canary's child dies with "symbol lookup error" (127),
    as every traced script would have."""
    layer = variant(tmp_path, bound, "-DGWTRACE_TEST_MISSING_SYMBOL", make=bound == "now")
    [verdict] = accel.prepare(str(layer), [SYSTEM_BASH], memo_dir=str(tmp_path / "memo"))
    assert not verdict.ok
    if bound == "now":
        assert verdict.reason.endswith("undefined symbol: gwtrace_no_such_symbol)"), verdict.reason
    else:
        assert verdict.reason == "the canary's events differ from the shell code's: status: '127' with it, '0' without"
    assert_unchanged(tmp_path, layer)


@needs_so
def test_a_library_with_another_stamp_is_refused(tmp_path: Path) -> None:
    """The shell files and the library agree on a stamp: an older or newer library is not used."""
    layer = variant(tmp_path, "stamp", '-DGWTRACE_ACCEL_STAMP=\\"gwa0\\"')
    [verdict] = accel.prepare(str(layer), [SYSTEM_BASH], memo_dir=str(tmp_path / "memo"))
    assert (verdict.ok, verdict.reason) == (False, "library stamp 'gwa0', the shell files want 'gwa1'")
    assert accel.shell_stamp(str(layer)) == "gwa1"
    assert_unchanged(tmp_path, layer)


def test_the_shell_files_and_the_library_name_one_stamp() -> None:
    header = (REPO / "bash" / "accel" / "state_names.h").read_text()    # from spec/accel-state.json
    assert f'#define GWTRACE_ACCEL_STAMP "{accel.shell_stamp(str(LAYER))}"' in header


@needs_so
def test_a_bash_replaced_since_the_check_is_not_trusted(tmp_path: Path) -> None:
    """The verified copy carries the bash binary's mtime: a bash upgraded in place, or another
    bash at the same path (a container's), finds none and runs the shell code."""
    layer = tmp_path / "layer"
    shutil.copytree(LAYER, layer, ignore=shutil.ignore_patterns("__pycache__", "accel", "*.py", accel.VERIFIED_DIR))
    bash = tmp_path / "bin" / "bash"
    bash.parent.mkdir()
    shutil.copy2(SYSTEM_BASH, bash)
    memo = str(tmp_path / "memo")
    [verdict] = accel.prepare(str(layer), [str(bash)], memo_dir=memo)
    assert verdict.ok and not verdict.cached
    assert loaded(tmp_path, bash=str(bash), layer=layer)
    assert accel.prepare(str(layer), [str(bash)], memo_dir=memo)[0].cached      # kept: checked once
    os.utime(bash, (time.time(), time.time() - 3600))                           # replaced
    assert not loaded(tmp_path, bash=str(bash), layer=layer)
    assert_unchanged(tmp_path, layer, str(bash))
    [verdict] = accel.prepare(str(layer), [str(bash)], memo_dir=memo)           # checked again
    assert verdict.ok and not verdict.cached
    assert loaded(tmp_path, bash=str(bash), layer=layer)


def test_a_check_that_hangs_is_bounded_and_not_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layer = tmp_path / "layer"
    layer.mkdir()
    shutil.copy2(LAYER / "gwtrace-auto.sh", layer)
    (layer / accel.SO_NAME).write_bytes(b"\x7fELF")
    hang = tmp_path / "bash"
    hang.write_text("#!/bin/sh\nsleep 30 & sleep 30\n")
    hang.chmod(0o755)
    monkeypatch.setattr(accel_check, "CHILD_TIMEOUT_S", 1.0)
    started = time.monotonic()
    [verdict] = accel.prepare(str(layer), [str(hang)], memo_dir=str(tmp_path / "memo"))
    assert (verdict.ok, verdict.reason) == (False, "timeout") and time.monotonic() - started < 5
    assert not (tmp_path / "memo").exists() or not list((tmp_path / "memo").iterdir())


def test_the_bashes_a_command_runs_are_the_ones_checked(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/usr/bin/env bash\necho\n")
    mine = tmp_path / "bin" / "bash"
    mine.parent.mkdir()
    shutil.copy2(SYSTEM_BASH, mine)
    other = tmp_path / "other.sh"
    other.write_text(f"#!{mine} -e\necho\n")
    env = {"PATH": f"{mine.parent}:/usr/bin:/bin"}
    assert accel.candidate_bashes([str(script)], env)[0] == str(mine)
    assert str(mine) in accel.candidate_bashes([str(other)], {"PATH": "/usr/bin:/bin"})
    assert str(mine) in accel.candidate_bashes([str(mine), "-c", ":"], {"PATH": "/usr/bin:/bin"})
    assert str(mine) not in accel.candidate_bashes(["python3", "x.py"], {"PATH": "/usr/bin:/bin"})


@needs_so
def test_gwtrace_run_checks_its_bash_and_the_sidecar_counts_the_others(tmp_path: Path, sidecar: Sidecar) -> None:
    """`gwtrace run` checks the bash it runs (here a copy no check has seen yet); a bash it could
    not foresee runs the shell code, marks its span, and `gwtrace sidecar status` counts it."""
    mine = tmp_path / "bin" / "bash"
    mine.parent.mkdir()
    shutil.copy2(SYSTEM_BASH, mine)
    unforeseen = tmp_path / "elsewhere" / "bash"
    unforeseen.parent.mkdir()
    shutil.copy2(SYSTEM_BASH, unforeseen)
    env = dict(sidecar.start(), PATH=f"{mine.parent}:{os.environ['PATH']}")
    script = (f'enable | grep -c _gwtrace_adbgc\n{unforeseen} -c "enable | grep -c _gwtrace_adbgc; :"\n')
    try:
        out = subprocess.run([GWTRACE, "run", "--", "bash", "-c", script], env=env, capture_output=True, text=True,
                             timeout=60)
    finally:   # the checkout's bash/ is the layer `gwtrace run` checked: leave no copy for a bash gone next
        accel_copies.discard(str(LAYER / accel.VERIFIED_DIR), "gwa1", str(mine))
    assert (out.returncode, out.stdout, out.stderr) == (0, "1\n0\n", "")
    sidecar.stop()
    assert sidecar.status()["bash_accel_unverified"] == "1"


@needs_so
@pytest.mark.skipif(not OLD_BASHES, reason="set GWTRACE_TEST_BASHES to other bash builds (4.2, 4.4, 5.1: the ARRAY "
                    "header bash exports changed in 5.2) to check the accelerator against them")
@pytest.mark.parametrize("bash", OLD_BASHES)
def test_other_bash_versions_record_the_same(tmp_path: Path, bash: str) -> None:
    """Each bash version worker nodes run: verified (then the comparison holds and the C code did
    the work) or refused (then the shell code does it, unchanged); never a crash."""
    [verdict] = accel.prepare(str(LAYER), [bash])
    if not verdict.ok:
        assert not loaded(tmp_path, bash=bash)
        assert_unchanged(tmp_path, LAYER, bash)
        return
    assert loaded(tmp_path, bash=bash)
    events, done = compare(tmp_path, WORKLOAD, bash)
    assert done >= 20, done
    # and the script span is the script's, although $0 is still bash's when BASH_ENV runs (< 5.2)
    assert events[0].split("\t")[10] == "s.sh" and events[0].endswith(f"code.file.path={tmp_path}/s.sh")
