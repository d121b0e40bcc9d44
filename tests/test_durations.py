"""The one home of gwtrace's duration formats (gwtrace/durations.py) and the hold-code table as data."""

import zipfile
import subprocess
import sys
import sysconfig
from pathlib import Path

from gwtrace.durations import clock_duration, span_duration, wait_duration
from gwtrace.journey.holds import CODES, explain


def test_span_duration_each_step() -> None:
    assert [span_duration(ns) for ns in (-1, 999, 1_500_000, 2_340_000_000, 62_500_000_000, 3_723_000_000_000)] == \
        ["?", "1 us", "1.5 ms", "2.34 s", "1m02.5s", "1h02m03s"]


def test_wait_duration_each_step() -> None:
    assert [wait_duration(s) for s in (None, 0.0004, 2.5, 10, 119, 120, 7199, 7200, 172800 + 3600)] == \
        ["?", "1 ms", "2.5 s", "10 s", "119 s", "2 min", "119 min", "2 h 00 min", "2 d 1 h"]


def test_clock_duration_each_step() -> None:
    assert [clock_duration(s) for s in (None, 7.9, 185, 3720)] == ["?", "7s", "3m05s", "1h02m"]


def test_hold_codes_every_code_once_with_three_texts() -> None:
    assert sorted(CODES) == list(range(49))
    assert all(len(row) == 3 and all(isinstance(t, str) and t for t in row) for row in CODES.values())
    assert explain(37)["label"] == "EC2UserError"


def test_hold_codes_load_from_a_zip(tmp_path: Path) -> None:
    """The table is package data read with pkgutil: it loads from a .pyz as from a checkout."""
    package = Path(__file__).resolve().parents[1] / "sidecar" / "gwtrace"
    archive = tmp_path / "g.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in package.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, "gwtrace/" + path.relative_to(package).as_posix())
    # gwtrace from the zip alone (-S: no .pth, so not the checkout's editable finder); its dependencies
    # (the store needs opentelemetry) from site-packages, after it
    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.path.append(sys.argv[2]); "
            "from gwtrace.journey import holds; "
            "assert holds.__file__.startswith(sys.argv[1]); print(holds.CODES[34][0])")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(archive), sysconfig.get_paths()["purelib"]],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "JobOutOfResources"), done.stderr
