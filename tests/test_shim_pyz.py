"""dist/gwtrace-sidecar.pyz (shim/build_pyz.py): one file, any python3 >= 3.9.

Built once for the module (pip downloads the pure-Python wheels; without
network the module is skipped, saying so), then run as a glidein would run
it, with every interpreter at hand: this venv's, the system's, and a 3.9 if
one is installed.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Iterator, List

import pytest

from conftest import LIB, REPO, clean_env
from otlp_receiver import OtlpReceiver, any_value


def interpreters() -> List[str]:
    found = [sys.executable]
    for candidate in ["/usr/bin/python3", *sorted(glob.glob("/root/.pyenv/versions/3.9*/bin/python3"))[:1]]:
        if Path(candidate).exists() and candidate not in found:
            found.append(candidate)
    return found


@pytest.fixture(scope="module")
def pyz(tmp_path_factory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("dist") / "gwtrace-sidecar.pyz"
    build = subprocess.run([sys.executable, str(REPO / "shim" / "build_pyz.py"), "--output", str(out)],
                           capture_output=True, text=True, timeout=300)
    if build.returncode != 0 and "pip download failed" in build.stderr + build.stdout:
        pytest.skip("cannot download the wheels (no network?): " + build.stderr.strip()[-200:])
    assert build.returncode == 0, build.stderr
    yield out


def test_the_archive_is_pure_python_and_self_contained(pyz: Path) -> None:
    with zipfile.ZipFile(pyz) as zf:
        names = zf.namelist()
    assert "__main__.py" in names and "gwtrace/cli/__init__.py" in names and "gwtrace/bashlib/gwtrace.sh" in names
    assert any(n.startswith("google/protobuf/internal/python_message.py") for n in names)
    assert any(n.startswith("opentelemetry_sdk-") and n.endswith("entry_points.txt") for n in names)
    # no compiled Python: the one shared object is bash's accelerator, when `make accel` built it
    assert [n for n in names if n.endswith((".so", ".pyd"))] == \
        (["gwtrace/bashlib/gwtrace-accel.so"] if (REPO / "bash" / "gwtrace-accel.so").is_file() else [])


def test_the_archive_carries_its_licences_and_the_accelerators_source(pyz: Path) -> None:
    """Apache-2.0 for gwtrace; beside the GPL accelerator, its GPL text and the source it was built from."""
    with zipfile.ZipFile(pyz) as zf:
        names = set(zf.namelist())
        assert zf.read("LICENSE") == (REPO / "LICENSE").read_bytes()
        assert b"Apache License" in zf.read("LICENSE")
        if "gwtrace/bashlib/gwtrace-accel.so" in names:
            sources = sorted(p.name for p in (REPO / "bash" / "accel").iterdir())
            assert "COPYING" in sources and "probe.c" in sources
            for name in sources:
                assert zf.read(f"gwtrace/bashlib/accel/{name}") == (REPO / "bash" / "accel" / name).read_bytes()
            assert b"GNU GENERAL PUBLIC LICENSE" in zf.read("gwtrace/bashlib/accel/COPYING")


@pytest.mark.parametrize("python", interpreters())
def test_the_sidecar_runs_from_the_archive(python: str, pyz: Path, tmp_path: Path) -> None:
    receiver = OtlpReceiver().start()
    try:
        env = clean_env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint, OTEL_EXPORTER_OTLP_TIMEOUT="2000",
                        PATH="/usr/bin:/bin")
        config = tmp_path / "glidein_config"
        config.write_text("GLIDEIN_Site PYZ_Site\nGLIDEIN_UUID 0f0f0f0f-0000-1111-2222-333344445555\n"
                          f"GLIDEIN_STARTUP_PID {os.getpid()}\n")
        directory = tmp_path / "gw"
        start = subprocess.run([python, str(pyz), "sidecar", "start", "--dir", str(directory),
                                "--glidein-config", str(config)], env=env, capture_output=True, text=True, timeout=90)
        assert start.returncode == 0, start.stderr
        script = f'{start.stdout}\nsource "{LIB}"\ntrace_begin from_the_pyz; trace_end'
        assert subprocess.run(["bash", "-c", script], env=env, timeout=30).returncode == 0
        stop = subprocess.run([python, str(pyz), "sidecar", "stop", "--dir", str(directory)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert stop.returncode == 0, stop.stderr
        (span,) = receiver.wait_for(1)
        assert span.name == "from_the_pyz" and span.resource["glidein.site"] == "PYZ_Site"
        # the glidein's resource metrics (the test process as the glidein), from /proc, at start and at stop
        metrics = receiver.wait_for_metrics(lambda r: len(r) >= 1)
        resource = {kv.key: any_value(kv.value) for kv in metrics[0].resource_metrics[0].resource.attributes}
        names = {m.name for m in metrics[0].resource_metrics[0].scope_metrics[0].metrics}
        assert resource["gwtrace.subject"] == "glidein" and resource["glidein.site"] == "PYZ_Site"
        assert {"process.cpu.time", "process.memory.usage", "system.cpu.load_average.1m"} <= names
    finally:
        receiver.stop()


def test_gwtrace_run_works_from_the_archive(pyz: Path, tmp_path: Path) -> None:
    """gwtrace-auto.sh is inside the zip: `run` copies it out for bash to source."""
    env = clean_env(GWTRACE_HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path), PATH="/usr/bin:/bin")
    out = subprocess.run(["/usr/bin/python3", str(pyz), "run", "--", "bash", "-c",
                          "f() { echo in-f; }; f; enable | grep -c _gwtrace_adbgc || :"],
                         env=env, capture_output=True, text=True, timeout=90)
    # the accelerator, when built, is copied out with the bash files and loaded
    loaded = "1" if (REPO / "bash" / "gwtrace-accel.so").is_file() else "0"
    assert out.returncode == 0 and out.stdout == f"in-f\n{loaded}\n" and out.stderr == ""
    show = subprocess.run(["/usr/bin/python3", str(pyz), "show", "--last"], env=env, capture_output=True, text=True)
    # the root span is the bash script's own (no second "bash" span under it)
    assert [line.split()[0] for line in show.stdout.splitlines()[1:]] == ["bash", "f"]


def test_lib_from_the_archive_prints_a_file_bash_can_source(pyz: Path, tmp_path: Path) -> None:
    """Beside a gwtrace.sh with the same bytes (how a glidein ships them): that
    file; alone: a private copy, written once. Both must source."""
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / pyz.name).write_bytes(pyz.read_bytes())
    env = clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    printed = subprocess.run([sys.executable, str(alone / pyz.name), "lib"], env=env, capture_output=True,
                             text=True, timeout=60).stdout.strip()
    assert printed.startswith(str(tmp_path / "cache" / "gwtrace")) and Path(printed).read_bytes() == LIB.read_bytes()
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / pyz.name).write_bytes(pyz.read_bytes())
    (beside / "gwtrace.sh").write_bytes(LIB.read_bytes())
    printed2 = subprocess.run([sys.executable, str(beside / pyz.name), "lib"], env=env, capture_output=True,
                              text=True, timeout=60).stdout.strip()
    assert printed2 == str(beside / "gwtrace.sh")
    for path in (printed, printed2):
        out = subprocess.run(["bash", "-c", f'source "{path}" && type -t trace_begin'], env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.stdout == "function\n", out.stderr


def test_serve_from_the_archive_says_in_one_line_what_it_lacks(pyz: Path) -> None:
    out = subprocess.run([sys.executable, str(pyz), "serve"], env=clean_env(), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "needs the Python package 'flask'" in out.stderr


@pytest.mark.parametrize("python", interpreters())
def test_live_snapshots_from_the_archive(python: str, pyz: Path, tmp_path: Path) -> None:
    """The snapshot code runs on the node's python (3.9 too): the embedded store sees the open span."""
    import time

    from gwtrace.store import StoreUnreadable, TraceStore

    home = tmp_path / "home"
    env = clean_env(GWTRACE_HOME=str(home), GWTRACE_SNAPSHOT_INTERVAL="0.3", PATH="/usr/bin:/bin",
                    OTEL_RESOURCE_ATTRIBUTES="glidein.site=PYZ_Site,glidein.uuid=pyz-live")
    directory = tmp_path / "gw"
    start = subprocess.run([python, str(pyz), "sidecar", "start", "--dir", str(directory)], env=env,
                           capture_output=True, text=True, timeout=90)
    assert start.returncode == 0, start.stderr
    go = tmp_path / "go"
    script = f'{start.stdout}\nsource "{LIB}"\ntrace_begin glidein; trace_begin check.sh\n' \
             f'while [[ ! -e {go} ]]; do sleep 0.05; done\ntrace_end; trace_end'
    bash = subprocess.Popen(["bash", "-c", script], env=env)
    rows = []
    try:
        deadline = time.monotonic() + 30
        while not rows and time.monotonic() < deadline:
            time.sleep(0.2)
            if (home / "traces.db").exists():
                try:
                    with TraceStore(home / "traces.db", create=False) as store:
                        rows = store.live_snapshots()
                except StoreUnreadable:       # the sidecar is ready before its exporter made the store
                    continue
    finally:
        go.touch()
        assert bash.wait(timeout=30) == 0
    stop = subprocess.run([python, str(pyz), "sidecar", "stop", "--dir", str(directory)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert stop.returncode == 0, stop.stderr
    assert [(r["glidein_uuid"], r["site"], r["phase"]) for r in rows] == [("pyz-live", "PYZ_Site", "script:check.sh")]
    with TraceStore(home / "traces.db", create=False) as store:
        assert store.live_snapshots() == [] and store.span_count() == 2
