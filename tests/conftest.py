"""Shared fixtures: a real OTLP receiver and real sidecar processes."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from otlp_receiver import OtlpReceiver  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "bash" / "gwtrace.sh"
GWTRACE = shutil.which("gwtrace") or str(Path(sys.executable).parent / "gwtrace")


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
