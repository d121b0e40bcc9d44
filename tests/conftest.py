"""Shared fixtures: a real OTLP receiver and real sidecar processes."""

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
