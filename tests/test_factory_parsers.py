"""Parsers of the glidein's own files: bad input gives one clear message, never a crash."""

import pytest

import factory_gen as gen
from gwtrace.factory.errfile import parse_err
from gwtrace.factory.outfile import parse_out
from gwtrace.factory.startd_history import literal, parse_startd_history
from gwtrace.factory.xmlresult import iso_epoch, parse_xml_result

pytestmark = pytest.mark.skipif(not gen.samples_present(), reason="../shared/samples/glideinwms not found")


def test_out_markers_header_and_config_of_the_cms_sample():
    out = parse_out(gen.CMS_OUT.read_bytes())
    assert (out.started, out.last_script_start, out.condor_start, out.condor_end) == (
        1656036325, 1656036388, 1656036390, 1656044697)
    assert (out.glidein_end, out.glidein_code, out.last_script_code, out.activations) == (1656044701, 0, 0, 34)
    assert out.config["GLIDEIN_Site"] == "Hephy-Vienna" and out.config["GLIDEIN_CPUS"] == "8"
    assert out.header["glidein_uuid"] == "3ce9dfca-0e7f-4d69-bfc9-5f58cb266ab7"
    assert parse_xml_result(out.xml).glidein.metrics["CondorDuration"] == "8307"


def test_stats_block_jobs_and_formats():
    jobs = [gen.Job(10, 100), gen.Job(20, 50, "signal", 9)]
    real = parse_out(gen.cms_out(jobs, fmt="real").encode()).stats
    old = parse_out(gen.cms_out(jobs, fmt="old").encode()).stats
    assert real.real_format and not old.real_format and real.normalization == 8
    assert real.counts["Total"] == (2, 150) and old.counts["Total"] == (1, 18)
    assert [(j.job_id, j.reason, j.value, j.duration) for j in real.jobs] == [
        ("100.0", "status", "0", 100), ("101.0", "signal", "9", 50)]


def test_long_xml_from_err_is_a_per_script_timeline():
    err = parse_err(gen.REAL_ERR.read_bytes())
    result = parse_xml_result(err.long_xml())
    assert result.glidein.env["condorg_schedd"] == "schedd_glideins2@127.0.0.1"
    assert all(s.start is not None and s.end >= s.start for s in result.scripts)
    assert "GlideinLog" in err.blocks and err.log("GlideinLog")
    assert err.problems == []


def test_command_lines_are_not_kept():
    result = parse_xml_result(parse_err(gen.REAL_ERR.read_bytes()).long_xml())
    assert "cmd" not in repr(result) and "-sign" not in repr(result)


@pytest.mark.parametrize("data, message", [(b"", "empty"), (b"<OSGTestResult><test>", "malformed"),
                                           (b"<other/>", "not an OSGTestResult")])
def test_bad_xml_results_raise_one_clear_line(data, message):
    with pytest.raises(ValueError, match=message) as caught:
        parse_xml_result(data)
    assert "\n" not in str(caught.value)


def test_truncated_and_corrupt_err_blocks_are_reported():
    text = gen.REAL_ERR.read_text()
    cut = parse_err(text[: text.index("=== Encoded XML") + 200].encode())
    assert any("encoded XML: truncated" in p for p in cut.problems) and cut.xml_b64 is None
    marker = "=== Encoded XML description of glidein activity ===\nbegin-base64 644 -\nH4sI"
    corrupt = parse_err(text.replace(marker, marker[:-4] + "ZZZZ").encode())
    assert corrupt.long_xml() is None and any("cannot decode" in p for p in corrupt.problems)


def test_startd_history_sample_ad_and_literals():
    jobs = parse_startd_history(gen.SAMPLES.joinpath("job_classad_long_form.ad").read_text())
    assert len(jobs) == 1 and jobs[0].job_id == "15.0"
    assert [literal(x) for x in ('"a\\"b"', "true", "FALSE", "3", "2.5", "undefined", "x + 1")] == [
        'a"b', True, False, 3, 2.5, None, "x + 1"]


def test_startd_history_records_split_at_banners():
    text = "".join(gen.history_ad(job, i, 1000) for i, job in enumerate(
        [gen.Job(0, 10, preempted=True), gen.Job(5, 20, "signal", 9, cpus=4, memory_mb=8000, gpus=1)]))
    first, second = parse_startd_history(text)
    assert first.preempted and (first.start, first.end, first.wall) == (1000, 1010, 10)
    assert (second.exit_signal, second.exit_code, second.cpus, second.memory_mb, second.gpus) == (9, None, 4, 8000, 1)


def test_iso_times():
    assert iso_epoch("2022-06-24T04:05:25+02:00") == 1656036325
    assert iso_epoch("garbage") is None and iso_epoch(None) is None
