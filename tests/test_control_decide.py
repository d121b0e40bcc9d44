"""The controller's precedence (docs/control.md, "Precedence"): most specific wins per field, newest breaks ties,
expired rules are ignored, an admin's or site admin's rule for a site caps users' rules; explain says why."""

from __future__ import annotations

from typing import Any

import pytest

from gwtrace.controller.decide import DEFAULT_TTL_S, RuleIndex, decide, decide_operations, explain
from gwtrace.controller.rules import BadRule, Rule, rule_from_request, specificity

NOW = 1_800_000_000.0
ALICE_AT_S1 = {"owner": "alice", "site": "S1", "entry": "E1", "factory": "F", "frontend": "VO", "job_id": "7.0"}


def rule(rid: str, scope: dict, level: Any = None, ratio: Any = None, role: str = "admin", created: float = 0.0,
         expires: Any = None, set_by: str = "x", operation: Any = None) -> Rule:
    return Rule(scope=scope, level=level, sample_ratio=ratio, role=role, created=NOW - 1000 + created, id=rid,
                expires=expires, set_by=set_by, operation=operation)


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
    ({"scope": {}, "operation": "cmsRun", "level": "off", "sample_ratio": 0.5}, "sets only a sample_ratio"),
    ({"scope": {}, "operation": "cmsRun", "level": "commands"}, "sets only a sample_ratio"),
    ({"scope": {}, "operation": "cmsRun"}, "sets only a sample_ratio"),
    ({"scope": {}, "operation": "", "sample_ratio": 0.5}, "operation is empty"),
    ({"scope": {}, "operation": 7, "sample_ratio": 0.5}, "operation must be a string"),
    ({"scope": {}, "operation": "x" * 257, "sample_ratio": 0.5}, "operation is longer than 256"),
    ({"scope": {}, "operation": "a\tb", "sample_ratio": 0.5}, "operation holds control characters"),
])
def test_bad_rules_are_one_clear_line(body: dict, words: str) -> None:
    with pytest.raises(BadRule, match=words):
        rule_from_request(body, NOW)


def test_the_index_finds_only_matching_rules_among_many() -> None:
    many = [rule(f"j{i}", {"job_id": f"{i}.0"}, "commands") for i in range(5000)]
    index = RuleIndex(many + [rule("g", {}, "scripts")])
    assert [r.id for r in index.candidates({"job_id": "42.0"})] == ["g", "j42"]


# ------------------------------------------------------------------ operation rules (Jaeger per-operation)


def ops(*rules: Rule, query: dict = ALICE_AT_S1) -> dict:
    index = RuleIndex(rules)
    return {name: (c.value, c.rule.id, c.capped_by.id if c.capped_by else None)
            for name, c in decide_operations(index, query, NOW, decide(index, query, NOW)).items()}


def test_an_operation_rule_is_kept_from_a_request_and_never_decides_for_a_node() -> None:
    kept = rule_from_request({"scope": {"site": "S1"}, "operation": "cmsRun", "sample_ratio": 0.5}, NOW)
    assert (kept.operation, kept.sample_ratio, kept.level) == ("cmsRun", 0.5, None)
    assert kept.to_dict()["operation"] == "cmsRun"
    d = made(rule("r1", {"job_id": "7.0"}, ratio=1.0, operation="cmsRun"), rule("r2", {"site": "S1"}, ratio=0.1))
    assert (d.sample_ratio.value, d.sample_ratio.rule.id) == (0.1, "r2")     # a node's question: no operation
    assert made(rule("r1", {}, ratio=1.0, operation="cmsRun")).sample_ratio.value is None


def test_an_operation_rule_beats_the_services_rule_and_the_most_specific_newest_one_wins() -> None:
    service = rule("r1", {"owner": "alice", "job_id": "7.0"}, ratio=0.1)
    assert ops(service, rule("r2", {"frontend": "VO"}, ratio=0.9, operation="cmsRun")) == {
        "cmsRun": (0.9, "r2", None)}                                       # however specific the service's
    many = [rule("r2", {}, ratio=0.2, operation="cmsRun"), rule("r3", {"site": "S1"}, ratio=0.3, operation="cmsRun"),
            rule("r4", {"site": "S1"}, ratio=0.4, operation="cmsRun", created=5),
            rule("r5", {"site": "S1"}, ratio=0.5, operation="stageout", expires=NOW - 1),
            rule("r6", {"site": "S2"}, ratio=0.6, operation="merge"), rule("r7", {}, ratio=0.7, operation="merge")]
    for order in (many, many[::-1]):
        assert ops(service, *order) == {"cmsRun": (0.4, "r4", None), "merge": (0.7, "r7", None)}
    assert ops(service, *many, query=dict(ALICE_AT_S1, site="S2"))["merge"] == (0.6, "r6", None)


@pytest.mark.parametrize("limit_role", ["siteadmin", "admin"])
def test_a_site_ceiling_binds_a_users_operation_rule(limit_role: str) -> None:
    mine = rule("r2", {"owner": "alice"}, ratio=1.0, role="user", operation="cmsRun", created=5)
    # the site's ratio without an operation binds it, as it binds the user's other rules
    assert ops(rule("r1", {"site": "S1"}, ratio=0.1, role=limit_role), mine) == {"cmsRun": (0.1, "r2", "r1")}
    # a ceiling for that same operation too, one for another operation not
    assert ops(rule("r1", {"site": "S1"}, ratio=0.2, role=limit_role, operation="cmsRun"), mine) == {
        "cmsRun": (0.2, "r2", "r1"), }
    assert ops(rule("r1", {"site": "S1"}, ratio=0.2, role=limit_role, operation="merge"), mine)["cmsRun"] == (
        1.0, "r2", None)
    # asking for less is always allowed; elsewhere the ceiling does not apply
    lower = rule("r3", {"owner": "alice"}, ratio=0.05, role="user", operation="cmsRun", created=9)
    assert ops(rule("r1", {"site": "S1"}, ratio=0.1, role=limit_role), lower) == {"cmsRun": (0.05, "r3", None)}
    assert ops(rule("r1", {"site": "S1"}, ratio=0.1, role=limit_role), mine,
               query=dict(ALICE_AT_S1, site="S2")) == {"cmsRun": (1.0, "r2", None)}


def test_a_shifters_operation_rule_is_not_capped_and_level_off_is_zero_for_every_operation() -> None:
    limit = rule("r1", {"site": "S1"}, ratio=0.1, role="siteadmin")
    assert ops(limit, rule("r2", {"owner": "alice"}, ratio=1.0, role="shifter", operation="cmsRun")) == {
        "cmsRun": (1.0, "r2", None)}
    off = rule("r3", {"site": "S1"}, "off", role="siteadmin")
    assert ops(off, rule("r2", {"owner": "alice"}, ratio=1.0, role="shifter", operation="cmsRun")) == {
        "cmsRun": (0.0, "r2", "r3")}


def test_explain_says_which_operation_rule_applied() -> None:
    rules = RuleIndex([rule("r1", {"site": "S1"}, ratio=0.1, role="siteadmin"),
                       rule("r2", {"owner": "alice"}, ratio=1.0, role="user", operation="cmsRun"),
                       rule("r3", {}, ratio=0.5, operation="cmsRun"),
                       rule("r4", {}, ratio=0.7, operation="merge")])
    out = explain(rules, ALICE_AT_S1, NOW, "cmsRun")
    assert out["operation"] == {"name": "cmsRun", "sample_ratio": 0.1, "rule": "r2",
                                "why": "sample_ratio 0.1 for operation cmsRun from r2 (asked 1.0; capped by r1, "
                                       "a siteadmin's limit)"}
    status = {m["rule"]["id"]: m["status"] for m in out["matched"]}
    assert status == {"r2": "won operation cmsRun but was capped by r1", "r3": "lost operation cmsRun: less "
                      "specific than r2", "r1": "won sample_ratio; capped operation cmsRun of r2 (a siteadmin's "
                      "limit binds users' rules)"}                          # merge's rule: not this operation's
    assert [m["rule"]["id"] for m in out["matched"]] == ["r2", "r3", "r1"]
    none = explain(rules, ALICE_AT_S1, NOW, "stageout")["operation"]
    assert none == {"name": "stageout", "sample_ratio": None, "rule": None,
                    "why": "no operation rule for stageout: the service's ratio applies"}
    every = {m["rule"]["id"]: m["status"] for m in explain(rules, ALICE_AT_S1, NOW)["matched"]}
    assert every["r4"] == "won operation merge" and "operation" not in explain(rules, ALICE_AT_S1, NOW)
