"""The fast parsing paths give exactly what the straightforward ones gave.

Each ``_reference_*`` below is the earlier, obviously-correct implementation
(one regex per job, ``MARKER.finditer``, one pattern per key family...) kept
here as the oracle.  Every generated variant, and every variant cut at many
offsets (a killed glidein's truncated files), must parse identically.
"""

import re
from typing import Dict, Iterator, List, Tuple

import pytest

import factory_gen as gen
from gwtrace.factory import outfile
from gwtrace.factory.outfile import CONFIG_KEYS, MARKER, SlotStats, StarterJob, markers, parse_stats, read_config

pytestmark = pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")


def _reference_family(prefix: str) -> "re.Pattern[bytes]":
    rests = sorted((k[len(prefix):] for k in CONFIG_KEYS if k.startswith(prefix)), key=len, reverse=True)
    return re.compile(b"\n(" + re.escape(prefix.encode()) + b"(?:" + "|".join(rests).encode() + b")) ([^\n]*)")


REF_CONFIG = (_reference_family("GLIDE"), _reference_family("CONDORG_"))
REF_COUNT = re.compile(rb"Total(.*)jobs (\d+) .*utilization (\d+)")
REF_START = re.compile(rb"^(\d\d/\d\d(?:/\d\d)?) (\d\d:\d\d:\d\d) Starting job (\S+) from (\S+)", re.M)
REF_END = re.compile(
    rb"^(\d\d/\d\d(?:/\d\d)?) (\d\d:\d\d:\d\d) Terminated job (\S+) from (\S+) (\S+) (\S+) duration (-?\d+)", re.M)


def _reference_config(data: bytes, limit: int) -> Dict[str, str]:
    config: Dict[str, str] = {}
    for pattern in REF_CONFIG:
        for found in pattern.finditer(data, 0, limit):
            config[found.group(1).decode()] = found.group(2).decode("utf-8", "replace").strip()
    return config


def _reference_stats(content: bytes, slot: str) -> SlotStats:
    stats = SlotStats(slot=slot)
    for line in content.split(b"\n"):
        found = REF_COUNT.search(line) if b"Total" in line else None
        if found:
            name = found.group(1).decode("utf-8", "replace")
            name = "Total" if name == " " else name[1:-1]
            stats.counts.setdefault(name, (int(found.group(2)), int(found.group(3))))
            stats.real_format = stats.real_format or line.startswith(b"(Real)")
    norm = outfile.NORMALIZATION.search(content)
    stats.normalization = int(norm.group(1)) if norm else None
    jobs: Dict[str, StarterJob] = {}
    for found in REF_START.finditer(content):
        job = StarterJob(job_id=found.group(3).decode(), start=(found.group(1) + b" " + found.group(2)).decode())
        jobs[job.job_id] = job
        stats.jobs.append(job)
    for found in REF_END.finditer(content):
        jid = found.group(3).decode()
        job = jobs.pop(jid, None)
        if job is None:
            job = StarterJob(job_id=jid)
            stats.jobs.append(job)
        job.end = (found.group(1) + b" " + found.group(2)).decode()
        job.reason, job.value = found.group(5).decode(), found.group(6).decode()
        job.duration = int(found.group(7))
    return stats


def _jobs() -> List[gen.Job]:
    return [gen.Job(60 + 700 * i, 600 + 37 * i, "signal" if i % 5 == 4 else ("other" if i % 7 == 6 else "status"),
                    i % 3) for i in range(9)]


def _outs() -> Iterator[Tuple[str, bytes]]:
    """Every generated .out variant (the factory_dir mix, the bench mix, both samples)."""
    jobs = _jobs()
    yield "cms sample", gen.CMS_OUT.read_bytes()
    yield "real glidein", gen.REAL_OUT.read_bytes()
    yield "failed validation", gen.failed_validation_out().encode()
    for fmt in ("real", "old"):
        for count in (0, 1, 4, 9):
            yield f"cms {fmt} {count} jobs", gen.cms_out(jobs[:count], fmt=fmt).encode()
    yield "short condor", gen.cms_out([], condor_duration=3, glidein_duration=70).encode()
    yield "gpus", gen.cms_out(jobs[:1], gpus=2).encode()
    yield "hard killed", gen.cms_out(jobs, hard_killed=True).encode()
    yield "error", gen.cms_out(jobs[:2], status="ERROR").encode()
    yield "no stats", gen.cms_out(jobs[:2], with_stats=False).encode()


def _cuts(data: bytes) -> Iterator[bytes]:
    """The file, then cut at markers, line ends and arbitrary offsets."""
    yield data
    points = {m.start() for m in MARKER.finditer(data)} | {m.end() - 2 for m in MARKER.finditer(data)}
    points |= set(range(0, len(data), max(1, len(data) // 40)))
    for point in sorted(points):
        yield data[:point]


ALL_OUTS = list(_outs()) if gen.samples_present() else []


@pytest.mark.parametrize("name, data", ALL_OUTS, ids=[n for n, _ in ALL_OUTS])
def test_marker_scan_finds_what_finditer_found(name, data):
    for cut in _cuts(data):
        for start in (0, max(cut.find(b"=== Last script starting "), 0), len(cut) // 2):
            expected = [(m.start(), m.end(), m.group(1)) for m in MARKER.finditer(cut, start)]
            assert markers(cut, start) == expected, (name, len(cut), start)


@pytest.mark.parametrize("name, data", ALL_OUTS, ids=[n for n, _ in ALL_OUTS])
def test_one_pass_config_scan_reads_what_the_per_family_scans_read(name, data):
    for cut in _cuts(data):
        for limit in (len(cut), max(cut.find(b"=== Last script starting"), 0), len(cut) // 3):
            found: Dict[str, str] = {}
            read_config(cut, found, limit)
            assert found == _reference_config(cut, limit), (name, len(cut), limit)


@pytest.mark.parametrize("name, data", ALL_OUTS, ids=[n for n, _ in ALL_OUTS])
def test_stats_scan_reads_what_the_per_line_scan_read(name, data):
    begin = data.find(b"=== Stats of ")
    if begin < 0:
        pytest.skip("no stats section in this variant")
    content = data[data.index(b"===\n", begin + 4) + 3 : data.rfind(b"=== End Stats of ")]
    for cut in [content[:n] for n in range(0, len(content), 7)] + [content]:
        assert parse_stats(cut, "main") == _reference_stats(cut, "main")


def test_stats_scan_on_odd_lines():
    content = (b"(Real) Total jobs 3 utilization 9\nxx Total foo jobs 2 (1%) utilization 4 (2%) Total jobs 1 "
               b"utilization 1\n(Real)Total jobs 7 utilization 8\nTotal jobs x utilization 1\n"
               b"01/02 03:04:05 Terminated job 9.0 from <a> status 0 duration 5\n"
               b"01/02 03:04:00 Starting job 9.0 from <a>\n01/02/22 03:04:09 Starting job 9.0 from <a>\n")
    assert parse_stats(content, "x") == _reference_stats(content, "x")


def _with_early_markers(data: bytes) -> bytes:
    """A prefix that defeats the "no ``===`` before the walk" shortcut: early marker-like lines."""
    return (b"=== Last script ended odd (12) with code 3 after 4 ===\n=== XML description of glidein activity ===\n"
            b"x=== Foo === Last script ended (5) with code 1 after 2 ===\n" + data)


@pytest.mark.parametrize("name, data", ALL_OUTS, ids=[n for n, _ in ALL_OUTS])
def test_searches_from_the_walk_start_find_what_searches_from_byte_0_found(name, data, monkeypatch):
    variants = [cut for cut in _cuts(data)] + [_with_early_markers(data), b"\n==" + data, b"==" + data]
    fast = [outfile.parse_out(v) for v in variants]
    monkeypatch.setattr(outfile._Walk, "searches_from", lambda self: 0)
    assert fast == [outfile.parse_out(v) for v in variants]


def test_marker_scan_on_odd_lines():
    text = (b"=== a ===\n=== Abc===\n=== A ===\n==== B ===\n=== Foo === Last ended ===\n=== X\n ===\n=== Y ==="
            b"=== Z ===\n=== =\n=== Q ==")
    for start in range(len(text)):
        assert markers(text, start) == [(m.start(), m.end(), m.group(1)) for m in MARKER.finditer(text, start)]


def _reference_ads(text: str) -> List[Dict[str, object]]:
    from gwtrace.factory.startd_history import WANTED_LINE
    chunks = ("\n" + text).split("\n*** Offset = ")
    ads = [{m.group(1).lower(): _reference_literal(m.group(2)) for m in WANTED_LINE.finditer(c)} for c in chunks]
    return [ad for ad in ads if ad]


def _reference_literal(text: str) -> object:
    text = text.strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("undefined", "error", ""):
        return None
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _histories() -> Iterator[str]:
    jobs = _jobs() + [gen.Job(5, 20, "signal", 9, cpus=4, memory_mb=8000, gpus=1, preempted=True)]
    yield gen.SAMPLES.joinpath("job_classad_long_form.ad").read_text()
    for count in range(len(jobs) + 1):
        yield "".join(gen.history_ad(job, i, 1656036390) for i, job in enumerate(jobs[:count]))
    yield ("*** Offset = 0 ClusterId = 1\nclusterid= 7\nPROCID =3\nExitCode = 1.5\nExitSignal = ²\nRequestCpus = +4\n"
           "RequestMemory = 1_000\nJobStatus = UNDEFINED\nTraceParent = \"00-ab\"\n\n*** Offset = 9\n*** Offset = 1\n"
           "RemoteWallClockTime = .5e1\nCompletionDate = 12 \nExitBySignal = TRUE\nRequestGpus = \"\"\nClusterId = 1 + 2\n")


def test_one_pass_history_scan_reads_what_split_and_scan_read():
    from gwtrace.factory.startd_history import iter_ads
    for text in _histories():
        for cut in [text[:n] for n in range(0, len(text), 13)] + [text]:
            assert list(iter_ads(cut)) == _reference_ads(cut)


@pytest.mark.parametrize("text", ["4", " 12 ", "1.5", "1e3", ".5", "+4", "1_000", "²", "٣", "-3", "true", "x + 1",
                                  '"a\\"b"', "", "ERROR", "nan", "1.2.3", "0x10"])
def test_literal_fast_paths_give_what_the_plain_rules_gave(text):
    from gwtrace.factory.startd_history import literal
    assert repr(literal(text)) == repr(_reference_literal(text))
