"""Hand-edited addresses in headless Chromium (issue 28): a malformed %-escape in /job/..., /trace/...,
/glidein/... or the trace page's #... is a message on the page, never a blank page or an uncaught error."""

from __future__ import annotations

import pytest

from test_ui_browser import css, data_db, driver, open_page, server, severe_console_messages  # noqa: F401


@pytest.mark.parametrize("path, what", [
    ("/job/1%zz.0", "job"), ("/job/%E0%A4%A", "job"), ("/trace/%E0%A4%A", "trace"), ("/trace/0af7%", "trace"),
    ("/glidein/%ZZ", "glidein"), ("/glidein/g-ok%C3%28", "glidein"),
])
def test_a_malformed_escape_in_the_path_is_a_message(server, driver, path, what):  # noqa: F811
    driver.get_log("browser")   # earlier pages' messages
    open_page(driver, server + path)
    message = css(driver, "#message")[0]
    assert message.is_displayed(), path
    assert f"This address names no {what}: it holds a malformed %-escape" in message.text
    assert severe_console_messages(driver) == []


def test_a_malformed_hash_on_the_trace_page_is_ignored_with_a_note(server, driver):  # noqa: F811
    open_page(driver, server + "/")
    trace_url = css(driver, "#results .trace-link")[0].get_attribute("href")
    driver.get_log("browser")
    open_page(driver, trace_url + "#%zz")
    assert css(driver, ".wf-row"), "the trace is drawn"
    assert "Ignored the #… part of the address" in css(driver, "#message")[0].text
    assert severe_console_messages(driver) == []
