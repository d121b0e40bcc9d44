"""The controller page in headless Chromium: the rules and the audit log, a hostile reason or scope shown as text
(never run), the same look as the other pages, nothing loaded from elsewhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gwtrace.controller.book import Controller
from gwtrace.controller.roles import Principal
from gwtrace.store import TraceStore
from test_ui_browser import (SERVE, css, driver, open_page, severe_console_messages, start_server,  # noqa: F401
                             stop_server, wait)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from control_issuer import AUDIENCE, ROLE_MAP, Issuer  # noqa: E402

HOSTILE = "<img src=x onerror=\"window.__gwtraceXss = 7\">"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("control") / "traces.db"
    with TraceStore(db) as store:
        ctl = Controller(store)
        bob = Principal("bob", "siteadmin", frozenset({"T2_US_Nebraska"}))
        ctl.set_rule(bob, {"scope": {"site": "T2_US_Nebraska"}, "level": "off", "reason": "scratch disk full"})
        ctl.set_rule(Principal("alice", "user"), {"scope": {"owner": "alice", "job_id": "7.0"},
                                                  "level": "commands", "sample_ratio": 1.0, "reason": HOSTILE})
        ctl.remove_rule(Principal("root", "admin"), "r1")
        ctl.set_rule(Principal("sam", "shifter"), {"scope": {"site": "S1"}, "operation": HOSTILE, "sample_ratio": 0.5})
    proc, url = start_server(db)
    yield url
    stop_server(proc)


def test_control_page_shows_rules_and_audit_as_text(server, driver):  # noqa: F811
    d = driver
    open_page(d, server + "/control")
    rows = css(d, "#rules tbody tr")
    assert [r.get_attribute("data-rule") for r in rows] == ["r2", "r3"]
    headers = [h.text for h in css(d, "#rules thead th")]
    assert headers[:5] == ["Id", "Scope", "Operation", "Level", "Ratio"]
    cells = [c.text for c in rows[0].find_elements("css selector", "td")]
    assert cells[:5] == ["r2", "job_id=7.0 owner=alice", "", "commands", "1"]
    assert cells[6] == "alice (user)" and cells[7] == HOSTILE          # shown, not run
    cells = [c.text for c in rows[1].find_elements("css selector", "td")]
    assert cells[:5] == ["r3", "site=S1", HOSTILE, "", "0.5"]          # an operation rule: its span name, as text
    assert d.execute_script("return window.__gwtraceXss") is None
    audit = [[c.text for c in r.find_elements("css selector", "td")] for r in css(d, "#audit tbody tr")]
    assert [(a[0], a[2], a[3], a[4]) for a in audit] == [("4", "sam (shifter)", "rule.set", "r3"),
                                                          ("3", "root (admin)", "rule.remove", "r1"),
                                                          ("2", "alice (user)", "rule.set", "r2"),
                                                          ("1", "bob (siteadmin)", "rule.set", "r1")]
    assert "scratch disk full" in audit[1][5]                          # the removed rule, before
    assert css(d, "#control-who")[0].text == "You: local (admin)"
    assert [a.text for a in css(d, ".topbar nav a")][-1] == "Control"
    assert severe_console_messages(d) == []
    # nothing but this server's own files
    urls = d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert urls and all(u.startswith(server) for u in urls)


def test_control_page_asks_for_a_persons_token_and_shows_who_they_are(tmp_path, driver):  # noqa: F811
    issuer = Issuer()
    roles = tmp_path / "roles.json"
    roles.write_text(json.dumps(ROLE_MAP))
    db = tmp_path / "traces.db"
    with TraceStore(db) as store:
        Controller(store).set_rule(Principal("root", "admin"), {"scope": {"site": "S1"}, "level": "off"})
    proc = subprocess.Popen([sys.executable, "-c", SERVE, "--port", "0", "--db", str(db), "--control-issuer",
                             issuer.url, "--control-audience", AUDIENCE, "--control-roles", str(roles)],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "GWTRACE_SERVER_TOKEN": "pilot"})
    d = driver
    try:
        url = re.search(r"listening on (http://\S+) ", proc.stderr.readline()).group(1)
        open_page(d, url + "/control")
        assert css(d, "#auth")[0].is_displayed() and css(d, "#rules tbody tr") == []
        css(d, "#auth-token")[0].send_keys(issuer.token("bob", groups=["/vo/sites/S1"]))
        css(d, "#auth-form button")[0].click()
        wait(d, lambda d: d.execute_script("return document.body.dataset.ready") == "1"
             and css(d, "#control-who")[0].text != "")
        assert [r.get_attribute("data-rule") for r in css(d, "#rules tbody tr")] == ["r1"]
        assert css(d, "#control-who")[0].text == "You: bob (siteadmin: S1)"
        assert len(css(d, "#audit tbody tr")) == 1
    finally:
        d.execute_script("sessionStorage.clear()")
        stop_server(proc)
        issuer.close()
