"""gone.py: the spans of a traced bash that never ran its EXIT trap (replaced
by exec of a program that is not bash, or killed) end when its process is gone,
and only those: the ones under its script span."""

from __future__ import annotations

import subprocess
import sys
import time

from gwtrace.sidecar.assembler import Assembler
from gwtrace.sidecar.gone import GoneProcesses
from gwtrace.wire.events import parse_text

T = "4bf92f3577b34da6a3ce929d0e0e4736"


def begin(pid: int, span: str, parent: str, name: str, *attrs: str) -> str:
    return "\t".join(["gw1", "B", "1700000000000000", str(pid), T, span, parent, "0", "01", "-", name, *attrs])


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_gone_bash_ends_its_script_subtree_only() -> None:
    pid = dead_pid()
    asm = Assembler()
    for line in (begin(pid, "a" * 16, "-", "outer.sh", "gwtrace.kind=script"),
                 begin(pid, "b" * 16, "a" * 16, "prepare"),
                 begin(pid, "c" * 16, "b" * 16, "inner"),
                 begin(pid, "d" * 16, "e" * 16, "glidein")):      # for another process to end
        asm.feed(parse_text(line))
    gone = GoneProcesses()
    assert gone.dead(asm) == {pid}
    done = gone.end(asm, {pid}, 1700000005000000)
    assert sorted(s.name for s in done) == ["inner", "outer.sh", "prepare"]
    assert [s.name for s in asm.open.values()] == ["glidein"]
    for span in done:
        assert span.status == "unset" and span.end_us == 1700000005000000
        assert span.attributes["gwtrace.process_gone"] is True and "process.exec" not in span.attributes
    assert asm.counters["spans_process_gone"] == 3


def test_a_live_process_running_another_program_is_noted_and_kept() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        asm = Assembler()
        asm.feed(parse_text(begin(proc.pid, "a" * 16, "-", "shim", "gwtrace.kind=script")))
        gone = GoneProcesses()
        assert gone.dead(asm) == set() and gone.replaced[proc.pid].startswith("python")
    finally:
        proc.kill()
        proc.wait()
    assert gone.dead(asm) == {proc.pid}
    (span,) = gone.end(asm, {proc.pid}, 1700000005000000)
    assert span.attributes["process.exec"] is True and span.attributes["gwtrace.replaced_by"].startswith("python")


def test_a_live_bash_is_left_alone() -> None:
    # "sleep" not last: bash would exec it, and the pid would then be a sleep, not a bash
    proc = subprocess.Popen(["bash", "-c", "sleep 30; :"])
    try:
        _wait_for_comm(proc.pid, "bash")
        asm = Assembler()
        asm.feed(parse_text(begin(proc.pid, "a" * 16, "-", "x.sh", "gwtrace.kind=script")))
        gone = GoneProcesses()
        assert gone.dead(asm) == set() and gone.replaced == {}
    finally:
        proc.kill()
        proc.wait()


def _wait_for_comm(pid: int, name: str) -> None:
    """Wait (at most 5 s) until PID has exec'd NAME: just after the fork it is still Python."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/comm") as comm:
            if comm.read().strip() == name:
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not become {name}")
