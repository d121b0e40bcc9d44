"""The controller's precedence (docs/control.md, "Precedence"): most specific wins per field, newest breaks ties,
expired rules are ignored, an admin's or site admin's rule for a site caps users' rules; explain says why."""

from __future__ import annotations

from typing import Any

import pytest

from gwtrace.controller.decide import DEFAULT_TTL_S, RuleIndex, decide, explain
from gwtrace.controller.rules import BadRule, Rule, rule_from_request, specificity

NOW = 1_800_000_000.0
ALICE_AT_S1 = {"owner": "alice", "site": "S1", "entry": "E1", "factory": "F", "frontend": "VO", "job_id": "7.0"}


def rule(rid: str, scope: dict, level: Any = None, ratio: Any = None, role: str = "admin", created: float = 0.0,
         expires: Any = None, set_by: str = "x") -> Rule:
    return Rule(scope=scope, level=level, sample_ratio=ratio, role=role, created=NOW - 1000 + created, id=rid,
                expires=expires, set_by=set_by)


def made(*rules: Rule, query: dict = ALICE_AT_S1) -> Any:
    return decide(RuleIndex(rules), query, NOW)


def test_no_rule_means_your_own_default() -> None:
    d = made(rule("r1", {"site": "S2"}, "off"))
    assert (d.level.value, d.sample_ratio.value, d.rule, d.ttl_s) == (None, None, None, DEFAULT_TTL_S)


def test_most_specific_wins_whatever_the_order() -> None:
    rules = [rule("r1", {}, "scripts"), rule("r2", {"frontend": "VO"}, "functions"),
             rule("r3", {"site": "S1"}, "off"), rule("r4", {"owner": "alice"}, "commands"),
             rule("r5", {"job_id": "7.0"}, "functions")]
    for order in (rules, rules[::-1]):
        assert made(*order).level.rule.id == "r5"
    assert made(*rules[:4]).level.value == "commands"             # owner beats site
    assert made(*rules[:3]).level.value == "off"                  # site beats frontend
    # two fields beat one at the same top field: owner+site over owner
    assert made(rule("a", {"owner": "alice"}, "scripts"),
                rule("b", {"owner": "alice", "site": "S1"}, "functions")).level.rule.id == "b"
    assert specificity({"trace_id": "x"}) > specificity({"job_id": "x", "owner": "y", "site": "z"})


def test_each_field_is_decided_on_its_own() -> None:
    d = made(rule("r1", {"site": "S1"}, ratio=0.25), rule("r2", {"owner": "alice"}, level="commands"))
    assert (d.level.value, d.level.rule.id, d.sample_ratio.value, d.sample_ratio.rule.id) == \
        ("commands", "r2", 0.25, "r1")
    assert d.rule.id == "r2"                                          # the level's rule decides


def test_ties_go_to_the_newest_and_expired_rules_are_ignored() -> None:
    assert made(rule("r1", {"site": "S1"}, "off", created=1),
                rule("r2", {"site": "S1"}, "commands", created=2)).level.value == "commands"
    assert made(rule("r1", {"site": "S1"}, "off", created=1),
                rule("r2", {"site": "S1"}, "commands", created=2, expires=NOW - 1)).level.value == "off"
    d = made(rule("r1", {"site": "S1"}, "off", expires=NOW + 40))
    assert d.ttl_s == 40                                             # a node never keeps it past its expiry


@pytest.mark.parametrize("limit_role", ["siteadmin", "admin"])
def test_a_site_admins_off_binds_a_users_more_specific_rule(limit_role: str) -> None:
    limit = rule("r1", {"site": "S1"}, "off", ratio=0.1, role=limit_role, set_by="bob")
    mine = rule("r2", {"owner": "alice", "job_id": "7.0"}, "commands", ratio=1.0, role="user", set_by="alice",
                created=5)
    d = made(limit, mine)
    assert (d.level.value, d.level.capped_by.id, d.sample_ratio.value) == ("off", "r1", 0.1)
    assert d.rule.id == "r1"
    assert "capped by r1" in d.reason()
    # less than the limit is always allowed
    lower = rule("r3", {"owner": "alice"}, "scripts", role="user", set_by="alice")
    assert made(rule("r1", {"site": "S1"}, "functions", role=limit_role), lower).level.value == "scripts"
    # elsewhere the limit does not apply
    assert made(limit, mine, query=dict(ALICE_AT_S1, site="S2")).level.value == "commands"


def test_an_admins_default_for_everything_is_no_ceiling() -> None:
    default = rule("r1", {}, "scripts", ratio=0.1, role="admin")
    mine = rule("r2", {"owner": "alice"}, "commands", ratio=1.0, role="user")
    d = made(default, mine)
    assert (d.level.value, d.sample_ratio.value, d.level.capped_by) == ("commands", 1.0, None)
    assert made(rule("r1", {"frontend": "VO"}, "off", role="admin"), mine).level.value == "commands"
    # ... but an admin's rule for a site (an entry there too) is one
    assert made(rule("r1", {"site": "S1", "entry": "E1"}, "scripts", role="admin"), mine).level.value == "scripts"


def test_a_shifters_rule_is_not_capped_and_a_shifters_site_rule_is_no_limit() -> None:
    limit = rule("r1", {"site": "S1"}, "off", role="siteadmin")
    assert made(limit, rule("r2", {"job_id": "7.0"}, "commands", role="shifter")).level.value == "commands"
    assert made(rule("r1", {"site": "S1"}, "off", role="shifter"),
                rule("r2", {"owner": "alice"}, "commands", role="user")).level.value == "commands"
    # an admin's rule about a person is no limit either: it is a rule like any other
    assert made(rule("r1", {"owner": "alice", "site": "S1"}, "off", role="admin"),
                rule("r2", {"owner": "alice", "job_id": "7.0"}, "commands", role="user")).level.value == "commands"


def test_explain_names_the_winner_the_losers_and_why() -> None:
    rules = RuleIndex([rule("r1", {"site": "S1"}, "off", role="siteadmin"),
                       rule("r2", {"owner": "alice"}, "commands", role="user"),
                       rule("r3", {"frontend": "VO"}, "functions", ratio=0.5),
                       rule("r4", {"owner": "alice"}, "scripts", role="user", expires=NOW - 5),
                       rule("r5", {"site": "S9"}, "off")])
    out = explain(rules, ALICE_AT_S1, NOW)
    status = {m["rule"]["id"]: m["status"] for m in out["matched"]}
    assert out["level"] == "off" and out["rule"] == "r1" and out["sample_ratio"] == 0.5
    assert status["r2"].startswith("won level but was capped by r1")
    assert status["r1"].startswith("capped level of r2")
    assert status["r3"] == "lost level: less specific than r2; won sample_ratio"
    assert status["r4"] == "expired: ignored"
    assert "r5" not in status


def test_a_request_cannot_name_its_author_or_role() -> None:
    for field in ("set_by", "role", "id", "created"):
        with pytest.raises(BadRule, match=field):
            rule_from_request({"scope": {}, "level": "off", field: "admin"}, NOW)


@pytest.mark.parametrize("body, words", [
    ({"scope": {"colour": "x"}, "level": "off"}, "unknown scope field"),
    ({"scope": {"site": ""}, "level": "off"}, "scope site is empty"),
    ({"scope": {"trace_id": "xyz"}, "level": "off"}, "32 hex"),
    ({"scope": {}, "level": "loud"}, "level must be one of"),
    ({"scope": {}, "sample_ratio": 1.5}, "between 0 and 1"),
    ({"scope": {}, "sample_ratio": True}, "a number"),
    ({"scope": {}}, "sets a level, a sample_ratio or both"),
    ({"scope": {}, "level": "off", "expires": NOW - 1}, "in the past"),
    ({"scope": {"site": "a\nb"}, "level": "off"}, "control characters"),
])
def test_bad_rules_are_one_clear_line(body: dict, words: str) -> None:
    with pytest.raises(BadRule, match=words):
        rule_from_request(body, NOW)


def test_the_index_finds_only_matching_rules_among_many() -> None:
    many = [rule(f"j{i}", {"job_id": f"{i}.0"}, "commands") for i in range(5000)]
    index = RuleIndex(many + [rule("g", {}, "scripts")])
    assert [r.id for r in index.candidates({"job_id": "42.0"})] == ["g", "j42"]
