"""`gwtrace ingest --condor-log` on an event log holding one huge event (issue 28: a 1 GB line cost 5.3 GB,
then DataError, and no offset was saved, so every later run failed the same way). Here 50 MB: skipped with
one line, memory bounded, the offset saved, the events after it read, and the next run goes on."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import journey_gen as gen
from conftest import GWTRACE, clean_env
from test_abuse_ingest import MEASURE

pytest.importorskip("htcondor2", reason="job event logs are read with HTCondor's bindings ([factory] extra)")

T0 = 1_790_000_000
PEAK_RSS_BYTES = 300 << 20


def run(*argv: str, home) -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE, GWTRACE, *argv], capture_output=True, text=True,
                         timeout=400, env=clean_env(GWTRACE_HOME=str(home)))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_50_mb_event_is_skipped_with_one_line_and_the_offset_saved(tmp_path):
    before = gen.submitted(5, 0, T0) + gen.executing(5, 0, T0 + 10)
    huge = gen.held(5, 0, T0 + 20, "x" * (50 << 20), 34, 102)
    after = gen.released(5, 0, T0 + 30) + gen.terminated(5, 0, T0 + 40, 0)
    log = tmp_path / "user.log"
    log.write_text(before + huge + after)
    db = tmp_path / "traces.db"
    first = run("ingest", "--condor-log", str(log), "--store", str(db), home=tmp_path / "home")
    lines = [line for line in first["err"].splitlines() if "over the" in line]
    assert lines == [f"gwtrace: {log}: skipped an event of {len(huge.encode())} bytes at byte {len(before)} "
                     "(over the 1 MiB limit)"], first["err"]
    assert "ingested 4 job event(s) of 1 job(s)" in first["err"], first["err"]
    assert first["peak"] < PEAK_RSS_BYTES, f"peak RSS {first['peak'] >> 20} MB"
    assert first["rc"] == 0, first["err"]
    again = run("ingest", "--condor-log", str(log), "--store", str(db), home=tmp_path / "home")
    assert "ingested 0 job event(s)" in again["err"] and "over the" not in again["err"], again["err"]
    assert again["rc"] == 0
