"""`gwtrace ingest` on hostile glidein output (issue 28): a block that inflates to 1 GiB is skipped with one
line naming the file and the offset, in bounded memory; XML with entity declarations is refused."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from conftest import GWTRACE, clean_env

#: the issue saw 2.1 GB for these files
PEAK_RSS_BYTES = 300 << 20
GIB = 1 << 30
XML_HEAD = b"=== Encoded XML description of glidein activity ===\nbegin-base64 644 -\n"

# Runs one command and prints its peak RSS (the only child this interpreter waits for); its address space is
# capped at 2 GiB, so that a regression fails here instead of exhausting the machine.
MEASURE = ("import json, resource, subprocess, sys\n"
           "cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
           "out = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=300, preexec_fn=cap)\n"
           "print(json.dumps({'rc': out.returncode, 'err': out.stderr, "
           "'peak': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))\n")


def zeros_gzip(size: int) -> bytes:
    """gzip of ``size`` zero bytes, made 1 MiB at a time (1 GiB becomes ~1 MB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(1 << 20)
    parts = [packer.compress(chunk) for _ in range(size >> 20)]
    return b"".join(parts) + packer.flush()


def base64_lines(packed: bytes) -> bytes:
    return base64.encodebytes(packed)


def measured(*argv: str, home: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, timeout=400,
                         env=clean_env(GWTRACE_HOME=str(home)))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def gib_of_zeros():
    return zeros_gzip(GIB)


def test_factory_logs_skip_an_encoded_xml_of_1_gib(tmp_path, gib_of_zeros):
    """The issue's 1.4 MB .err whose encoded XML inflates to 1 GiB: skipped with one line naming the file and
    the block's offset, memory bounded, exit 1."""
    entry = tmp_path / "client" / "user_fe" / "glidein_gf" / "entry_SITE_A"
    entry.mkdir(parents=True)
    err = entry / "job.42.0.err"
    head = b"WARN generated stderr for a gwtrace test\n" + XML_HEAD
    err.write_bytes(head + base64_lines(gib_of_zeros) + b"====\n")
    assert 1_000_000 < err.stat().st_size < 2_000_000
    result = measured(GWTRACE, "ingest", "--factory-logs", str(tmp_path / "client"), home=tmp_path / "home")
    assert result["rc"] == 1, result
    lines = [line for line in result["err"].splitlines() if "skipped the" in line]
    assert lines == [f"gwtrace ingest: {err}: byte {len(head)}: skipped the encoded XML block: inflates to "
                     "more than 4 MiB"], result["err"]
    assert "1 file(s) unreadable or block(s) skipped" in result["err"]
    assert result["peak"] < PEAK_RSS_BYTES, f"peak RSS {result['peak'] >> 20} MB"


def test_ingest_skips_gwtrace_blocks_over_the_limit(tmp_path, gib_of_zeros):
    """gwtrace blocks whose payload is 1 GiB: one refused by its header, one that lies about its size refused
    while inflating; each one line with file and offset, memory bounded, exit 1."""
    body = base64_lines(gib_of_zeros)
    honest = (b"=== gwtrace block v1 begin kind=otlp spans=1 bytes=1073741824 sha256=" + b"a" * 64 + b" host=wn ===\n"
              + body + b"=== gwtrace block v1 end sha256=" + b"a" * 64 + b" ===\n")
    lying = honest.replace(b"bytes=1073741824", b"bytes=100")
    path = tmp_path / "job.7.0.err"
    path.write_bytes(b"stderr\n" + honest + lying)
    result = measured(GWTRACE, "ingest", str(path), home=tmp_path / "home")
    assert result["rc"] == 1, result
    skipped = [line for line in result["err"].splitlines() if "skipped block" in line]
    assert skipped == [
        f"gwtrace: {path}:7: skipped block: over the limit: 1073741824 bytes, at most 64 MiB",
        f"gwtrace: {path}:{7 + len(honest)}: skipped block: over the limit: inflates to more than 64 MiB",
    ], result["err"]
    assert result["peak"] < PEAK_RSS_BYTES, f"peak RSS {result['peak'] >> 20} MB"


@pytest.mark.parametrize("xml", [
    b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><OSGTestResult id="x">&c;</OSGTestResult>',
    b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">]><OSGTestResult>&e;'
    b'</OSGTestResult>',
])
@pytest.mark.parametrize("defused", [True, False])
def test_xml_results_with_entities_are_refused(xml, defused, monkeypatch):
    from gwtrace.factory import xmlresult

    if not defused:   # the fallback when the [factory] extra is not installed
        monkeypatch.setitem(sys.modules, "defusedxml", None)
        monkeypatch.setitem(sys.modules, "defusedxml.ElementTree", None)
    with pytest.raises(ValueError, match="refused"):
        xmlresult.parse_xml_result(xml)


def test_an_xml_result_over_the_limit_is_refused_unparsed():
    from gwtrace.factory import xmlresult

    with pytest.raises(ValueError, match="over the 4 MiB limit"):
        xmlresult.parse_xml_result(b"<OSGTestResult>" + b" " * (5 << 20) + b"</OSGTestResult>")
