"""The functions level's accelerator (bash/gwtrace-accel.so) records what the shell code records.

The accelerator is a bash loadable builtin that runs the DEBUG trap's common slow paths in C
(docs/shim.md, "The accelerator"). It must never be a second opinion: for every workload here the
event log with it and without it (GWTRACE_ACCEL=0) must be the same, line for line, once ids, times
and process ids are replaced by their order of appearance; and the script must print and exit the
same. The rest of the suite runs with it loaded (the Makefile builds it), and bats runs twice.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import REPO, clean_env

AUTO = REPO / "bash" / "gwtrace-auto.sh"
SO = REPO / "bash" / "gwtrace-accel.so"
#: Other bash builds to check against (GWTRACE_TEST_BASHES, space-separated paths).
OLD_BASHES = [b for b in os.environ.get("GWTRACE_TEST_BASHES", "").split() if b]
needs_so = pytest.mark.skipif(not SO.is_file(), reason="bash/gwtrace-accel.so is not built (`make accel`: no C compiler?)")

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


def run(script: str, work: Path, accel: str, bash: str = "bash", level: str = "functions") -> subprocess.CompletedProcess:
    """SCRIPT (written beside WORK, so that its path is the same for every run) under the auto
    layer, its events in WORK/events.log."""
    env = clean_env(BASH_ENV=str(AUTO), GWTRACE_DIR=str(work), GWTRACE_AUTO_LEVEL=level, GWTRACE_ACCEL=accel,
                    WORK=str(work.parent), LC_ALL="C")
    path = work.parent / "s.sh"
    path.write_text(script)
    return subprocess.run([bash, str(path)], env=env, capture_output=True, text=True, timeout=60,
                          cwd=work, stdin=subprocess.DEVNULL)


def normalized(log: Path) -> List[str]:
    """The event lines with span/trace ids, times and process ids replaced by their order of
    appearance: what two runs of one script must share."""
    names: Dict[str, str] = {}

    def alias(kind: str, value: str) -> str:
        return names.setdefault(kind + value, f"{kind}{sum(1 for k in names if k.startswith(kind))}")

    out = []
    for line in log.read_text().splitlines():
        fields = line.split("\t")
        fields[2] = "T"                                   # the time
        fields[3] = alias("p", fields[3])                 # the process
        fields = [alias("s", f) if re.fullmatch(r"[0-9a-f]{16}", f) else f for f in fields]
        fields = [alias("t", f) if re.fullmatch(r"[0-9a-f]{32}", f) else f for f in fields]
        fields = [re.sub(r"^process\.pid=\d+$", "process.pid=P", f) for f in fields]
        out.append("\t".join(fields))
    return out


def compare(tmp_path: Path, script: str, bash: str = "bash", level: str = "functions") -> List[str]:
    results = {}
    for accel in ("1", "0"):
        work = tmp_path / f"{level}-accel{accel}"
        work.mkdir()
        proc = run(script, work, accel, bash, level)
        results[accel] = (proc.returncode, proc.stdout, proc.stderr, normalized(work / "events.log"))
    assert results["1"] == results["0"]
    return results["1"][3]


def loaded(tmp_path: Path, accel: str = "1", bash: str = "bash", level: str = "functions") -> bool:
    """Whether a traced script's bash has the level's builtin."""
    work = tmp_path / f"probe-{level}{accel}"
    work.mkdir()
    builtin = "_gwtrace_adbgc" if level == "functions" else "_gwtrace_atopc"
    proc = run(f"enable | grep -c {builtin} || :\n", work, accel, bash, level)
    return proc.stdout.strip() == "1"


@needs_so
@pytest.mark.parametrize("level", ["functions", "scripts"])
def test_each_level_loads_it_and_the_switch_turns_it_off(tmp_path: Path, level: str) -> None:
    assert loaded(tmp_path, level=level)
    assert not loaded(tmp_path, accel="0", level=level)


@needs_so
def test_the_workload_is_recorded_the_same_with_and_without_it(tmp_path: Path) -> None:
    events = compare(tmp_path, WORKLOAD)
    begun = [line.split("\t")[10] for line in events if line.split("\t")[1] == "B"]
    # every function span is there: the comparison is not between two empty logs
    for name in ("deep", "two", "leaf", "fails", "rec", "getv", "sourced", "f"):
        assert name in begun, name
    assert "trace_like" not in begun                # trace_* is the library's API: the shell path's rule
    assert begun.count("rec") == 5 and begun.count("getv") == 5


@needs_so
def test_a_deep_and_wide_call_tree_is_the_same(tmp_path: Path) -> None:
    script = "\n".join(f"f{i}() {{ f{i + 1} \"$@\"; r=$(f{i + 1} x); : \"$r\"; }}" for i in range(5))
    script += "\nf5() { echo \"$#\"; return 0; }\nfor n in 1 2; do f0 $n; done\n"
    events = compare(tmp_path, script)
    assert sum(1 for line in events if line.split("\t")[1] == "B") == 1 + 2 * (2 ** 6 - 1)


#: The scripts level's top-level function spans: statuses tested and not, children that read
#: TRACEPARENT (it must be the span's, then the script's again), a readonly TRACEPARENT, a sourced
#: file's top level, a pipeline and a subshell at the top level, the script's own DEBUG trap (ours
#: goes), and an exit inside a top-level call.
TOP_WORKLOAD = r"""
f() { echo "f $1"; bash -c 'echo "child ${TRACEPARENT:36:16}"' | tr -d '0-9a-f' ; }
fails() { return 3; }
f 1
x=1
if ! fails; then echo tested; fi
fails || echo or
fails
echo after
f 2 | cat
( f 3 )
printf 'f in-source\n' > "$WORK/top-lib.sh"
source "$WORK/top-lib.sh"
f 4
readonly TRACEPARENT
f 5
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
    events = compare(tmp_path, TOP_WORKLOAD, bash, level="scripts")
    begun = [line.split("\t")[10] for line in events if line.split("\t")[1] == "B"]
    assert begun.count("f") >= 4 and begun.count("fails") == 3 and "quit" in begun
    ends = [line.split("\t")[6:] for line in events if line.split("\t")[1] == "E"]
    assert ["ok", "process.exit.code=3", "gwtrace.status.tested=true"] in ends and ["3"] in ends and ["4"] in ends
    (tmp_path / "own").mkdir()
    events = compare(tmp_path / "own", TOP_OWN_TRAP, bash, level="scripts")
    assert [line.split("\t")[10] for line in events if line.split("\t")[1] == "B"] == ["s.sh", "f"]


@needs_so
def test_many_frames_ending_at_once_all_end(tmp_path: Path) -> None:
    """120 nested calls return together: one slow path writes 120 end lines (more than one buffer)."""
    script = "\n".join(f"f{i}() {{ f{i + 1}; }}" for i in range(120)) + "\nf120() { echo deep; }\nf0; echo back\n"
    events = compare(tmp_path, script)
    kinds = [line.split("\t")[1] for line in events]
    assert kinds.count("B") == kinds.count("E") == 122


@needs_so
def test_a_library_that_cannot_be_loaded_changes_nothing(tmp_path: Path) -> None:
    """A glidein on another architecture, or a truncated copy: bash refuses it silently and the
    shell code does the work."""
    layer = tmp_path / "layer"
    shutil.copytree(REPO / "bash", layer, ignore=shutil.ignore_patterns("__pycache__", "accel", "*.py"))
    (layer / "gwtrace-accel.so").write_bytes(b"\x7fELF not really")
    shell = tmp_path / "shell"
    shell.mkdir()
    expected = run(WORKLOAD, shell, "0")
    work = tmp_path / "broken"
    work.mkdir()
    env = clean_env(BASH_ENV=str(layer / "gwtrace-auto.sh"), GWTRACE_DIR=str(work), GWTRACE_AUTO_LEVEL="functions",
                    WORK=str(work.parent), LC_ALL="C")
    proc = subprocess.run(["bash", str(tmp_path / "s.sh")], env=env, capture_output=True, text=True, timeout=60,
                          cwd=work, stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stdout, proc.stderr) == (expected.returncode, expected.stdout, expected.stderr)
    assert normalized(work / "events.log") == normalized(shell / "events.log")


@needs_so
def test_it_needs_nothing_newer_than_el7s_glibc() -> None:
    """Worker nodes run EL7 (glibc 2.17) and later: the symbol versions it needs must be older."""
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    out = subprocess.run([objdump, "-T", str(SO)], capture_output=True, text=True, check=True).stdout
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", out)}
    assert versions and max(versions) <= (2, 17), sorted(versions)




@needs_so
@pytest.mark.skipif(not OLD_BASHES, reason="set GWTRACE_TEST_BASHES to other bash builds (4.2, 4.4, 5.1: the ARRAY "
                    "header bash exports changed in 5.2) to check the accelerator against them")
@pytest.mark.parametrize("bash", OLD_BASHES)
def test_other_bash_versions_record_the_same(tmp_path: Path, bash: str) -> None:
    assert loaded(tmp_path, bash=bash)
    events = compare(tmp_path, WORKLOAD, bash)
    # and the script span is the script's, although $0 is still bash's when BASH_ENV runs (< 5.2)
    assert events[0].split("\t")[10] == "s.sh" and events[0].endswith(f"code.file.path={tmp_path}/s.sh")
