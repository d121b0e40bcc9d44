"""The trace page's span panel in headless Chromium shows a failed span in its own words (issue 30
§1): where it failed and its stderr's last lines, from a real `gwtrace run` (the sidecar's embedded
store), text from the node shown as text and never run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import GWTRACE, clean_env
from gwtrace.store import TraceStore
from test_ui_browser import css, driver, open_page, severe_console_messages, start_server, stop_server, wait  # noqa: F401

HOSTILE = '<img src=x onerror="window.__gwtraceXss = 5">'
SCRIPT = f"""\
fix_config() {{
  echo '{HOSTILE}' >&2
  sed -e '/unterminated' /dev/null
}}
fix_config
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("failure")
    script = tmp / "job.sh"
    script.write_text(SCRIPT)
    env = clean_env(GWTRACE_HOME=str(tmp / "home"))
    with open(tmp / "stderr.txt", "wb") as err:
        out = subprocess.run([GWTRACE, "run", "--level", "functions", "bash", str(script)], env=env,
                             stdout=subprocess.DEVNULL, stderr=err, timeout=120)
    assert out.returncode == 1
    db = tmp / "home" / "traces.db"
    with TraceStore(db, create=False) as store:
        trace_id = store.last_trace_id()
    proc, url = start_server(db)
    yield url, trace_id, script
    stop_server(proc)


def test_the_span_panel_shows_where_and_the_stderr_tail(served, driver, tmp_path: Path) -> None:
    url, trace_id, script = served
    d = driver
    open_page(d, f"{url}/trace/{trace_id}")
    rows = css(d, ".wf-row")
    names = [r.find_element("css selector", ".span-name").text for r in rows]
    rows[names.index("fix_config")].click()
    wait(d, lambda d: css(d, "#detail .detail-title") and css(d, "#detail .detail-title")[0].text == "fix_config")
    assert css(d, "#detail .failure h3")[0].text.lower() == "failure"
    assert css(d, "#detail .failure-where")[0].text == f"at {script}:5 in fix_config"
    stderr = css(d, "#detail .failure-stderr")[0].text
    assert stderr.splitlines() == [HOSTILE, "sed: -e expression #1, char 13: unterminated address regex"]
    assert d.execute_script("return window.__gwtraceXss") is None and css(d, "#detail img") == []
    d.save_screenshot(str(tmp_path / "failure.png"))
    # the run span failed too (exit 1): its box holds the whole tail
    rows[names.index("bash")].click()
    wait(d, lambda d: css(d, "#detail .detail-title")[0].text == "bash")
    assert css(d, "#detail .failure h3")[0].text.lower() == "failure"      # the run failed too (exit 1)
    assert severe_console_messages(d) == []


def test_the_job_page_shows_the_failed_step_in_its_own_words(driver, tmp_path: Path) -> None:
    from test_failure_words import SED, _job_store

    proc, url = start_server(_job_store(tmp_path))
    try:
        d = driver
        open_page(d, f"{url}/job/77.0")
        wait(d, lambda d: css(d, "#journey tr.jr-failure"))
        [box] = css(d, "#journey tr.jr-failure")
        assert box.get_attribute("data-span-id") == "aaaaaaaaaaaaaaa1"
        assert box.find_element("css selector", ".failure-where").text == "at /srv/job.sh:8 in fix_config"
        assert box.find_element("css selector", ".failure-stderr").text.splitlines() == ["patching config", SED]
        d.save_screenshot(str(tmp_path / "job-failure.png"))
        assert severe_console_messages(d) == []
    finally:
        stop_server(proc)
