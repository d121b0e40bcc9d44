"""Shared fixtures: a real OTLP receiver, real sidecar processes, and planted demo factories and their store."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Dict, Iterator, Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from otlp_receiver import OtlpReceiver  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "bash" / "gwtrace.sh"
GWTRACE = shutil.which("gwtrace") or str(Path(sys.executable).parent / "gwtrace")
#: Other bash builds to check the auto layer and its accelerator against (GWTRACE_TEST_BASHES,
#: space-separated paths; `make test` sets it to the 4.2 ... 5.3 that `make bashes` built).
TEST_BASHES = [b for b in os.environ.get("GWTRACE_TEST_BASHES", "").split() if b]


@pytest.fixture(scope="session", autouse=True)
def accelerator_checked() -> Dict[str, bool]:
    """The accelerator's load check (gwtrace/shim/accel.py) for the bash binaries the tests run.

    `gwtrace run` does it for the bash its command runs; the tests that point BASH_ENV at the auto
    layer themselves would otherwise run the shell code alone (and mark their spans
    gwtrace.accel=unverified). Once per session, a few stat calls when the verdicts are kept."""
    from gwtrace.shim import accel

    bashes = accel.candidate_bashes([], os.environ) + [b for b in TEST_BASHES if os.path.isabs(b)]
    return {v.bash: v.ok for v in accel.prepare(str(REPO / "bash"), bashes)}


def demo_factory(needs_htcondor: bool = True) -> ModuleType:
    """examples/demo_factory.py as a module, loaded once for every test module that plants problems with it.

    It is a script, not a package module, so it is loaded from its path and registered as
    ``demo_factory`` before it runs (its dataclasses look their module up there). With
    ``needs_htcondor`` the calling test module is skipped without HTCondor's Python bindings ([factory]
    extra): the demo's Condor-G event logs are read with them.
    """
    if needs_htcondor:
        try:
            import htcondor2  # noqa: F401
        except ImportError:
            pytest.importorskip("htcondor", reason="the Condor-G event logs are read with HTCondor's bindings "
                                "([factory] extra)")
    module = sys.modules.get("demo_factory")
    if module is None:
        spec = importlib.util.spec_from_file_location("demo_factory", REPO / "examples" / "demo_factory.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["demo_factory"] = module
        spec.loader.exec_module(module)
    return module


#: The planted demo factory most tests read: 400 glideins over 2 days, every problem of demo.PLANTS planted.
PLANTED = dict(glideins=400, seed=5, days=2.0, end=1790000000)


@pytest.fixture(scope="session")
def planted_factory(tmp_path_factory: pytest.TempPathFactory) -> "tuple[Path, Dict[str, str]]":
    """A demo factory with every problem planted (``PLANTED``), written once for the session: (its directory,
    where each problem was planted). Read it only; a test that changes a factory writes its own."""
    demo = demo_factory()
    root = tmp_path_factory.mktemp("planted") / "factory"
    glideins, where = demo.generate(PLANTED["glideins"], PLANTED["seed"], demo.PLANTS, PLANTED["days"],
                                    PLANTED["end"])
    demo.write_factory(root, glideins)
    return root, where


@pytest.fixture(scope="session")
def planted_store(planted_factory: "tuple[Path, Dict[str, str]]",
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``planted_factory`` backfilled into a store as ``gwtrace ingest --factory-logs`` does (its spans, its
    glidein records and summaries, the book of files read), once for the session: the path of the store.

    Open it to read only: a test that writes (ingests, purges) works on ``copy_store(planted_store, ...)``.
    At the end of the session its traces and records are counted again: a test that wrote into it fails
    the session here rather than another test, later, in whatever order they ran."""
    import io

    from gwtrace.factory.backfill import backfill
    from gwtrace.store import TraceStore

    path = tmp_path_factory.mktemp("planted_store") / "traces.db"
    with TraceStore(path) as store:
        backfill([str(planted_factory[0])], store.ingest, io.StringIO(), store.put_glidein_records, store)
    kept = _store_counts(path)
    yield path
    assert _store_counts(path) == kept, "a test wrote into the shared planted_store: give it copy_store()"


def _store_counts(path: Path) -> "tuple[int, ...]":
    """How many traces, chunks and glidein records a store holds (read with sqlite3 alone: no upkeep runs)."""
    import contextlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                     for table in ("traces", "chunks", "glideins"))


@pytest.fixture(scope="session")
def planted_pool(tmp_path_factory: pytest.TempPathFactory) -> "tuple[Path, Dict[str, str]]":
    """A larger planted demo factory (1200 glideins over 3 days: enough per entry for every hint's thresholds),
    written once for the session: (its directory, where each problem was planted). Read it only."""
    demo = demo_factory()
    root = tmp_path_factory.mktemp("planted_pool")
    glideins, where = demo.generate(1200, 5, demo.PLANTS, 3.0, 1790000000)
    demo.write_factory(root, glideins)
    return root, where


def copy_store(source: Path, target: Path) -> Path:
    """A copy of the SQLite store at ``source`` (its WAL included, through SQLite's backup) at ``target``."""
    import contextlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(target)) as dst:
        src.backup(dst)
    return target


def clean_env(**extra: str) -> Dict[str, str]:
    """The test process's environment without any tracing configuration."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GWTRACE_", "OTEL_")) and k not in ("TRACEPARENT", "TRACESTATE")}
    env["PATH"] = f"{Path(GWTRACE).parent}:{env.get('PATH', '')}"
    env.update(extra)
    return env


class Sidecar:
    """Drives `gwtrace sidecar ...` for one state directory."""

    def __init__(self, directory: Path, env: Dict[str, str]) -> None:
        self.dir = directory
        self.env = dict(env)
        self.pid: Optional[int] = None

    def start(self) -> Dict[str, str]:
        out = subprocess.run([GWTRACE, "sidecar", "start", "--dir", str(self.dir)], env=self.env,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        for name, value in re.findall(r"^export (\w+)=(.*);$", out.stdout, re.M):
            self.env[name] = value.strip("'")
        self.pid = int(self.env["GWTRACE_SIDECAR_PID"])
        return self.env

    def stop(self, timeout: float = 60) -> subprocess.CompletedProcess:
        out = subprocess.run([GWTRACE, "sidecar", "stop", "--dir", str(self.dir)], env=self.env,
                             capture_output=True, text=True, timeout=timeout + 30)
        self.pid = None
        return out

    def kill(self) -> None:
        assert self.pid is not None
        os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.01)
        self.pid = None

    def status(self) -> Dict[str, str]:
        out = subprocess.run([GWTRACE, "sidecar", "status", "--dir", str(self.dir)], env=self.env,
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        return dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)

    def running(self) -> bool:
        return self.pid is not None


def run_bash(script: str, env: Dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a script in a real bash that sources the library first."""
    full = f'source "{LIB}"\n{script}'
    return subprocess.run(["bash", "-c", full], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver().start()
    yield r
    r.stop()


@pytest.fixture
def sidecar(tmp_path: Path, receiver: OtlpReceiver) -> Iterator[Sidecar]:
    """A sidecar (not started yet) exporting to the test receiver."""
    env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint,
                    GWTRACE_HOME=str(tmp_path / "home"), OTEL_EXPORTER_OTLP_TIMEOUT="2000",
                    GWTRACE_STOP_TIMEOUT="10")
    sc = Sidecar(tmp_path / "gw", env)
    yield sc
    if sc.running():
        sc.stop()
