"""Roles and tokens at the controller's HTTP API: each role within its bounds, no escalation between any pair,
tokens verified against a local issuer's keys (loopback), and every change in the audit log."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any, Dict, Iterator

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from control_issuer import AUDIENCE, ROLE_MAP, Issuer, controlled_client, issuer_fixture
from gwtrace.controller.tokens import BadRoleMap, RoleMap, TokenVerifier
from gwtrace.server.app import create_app
from gwtrace.store import TraceStore

PILOT_TOKEN = "pilot-secret"


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    yield from issuer_fixture()


@pytest.fixture
def client(tmp_path: Any, issuer: Issuer) -> Iterator[Any]:
    with controlled_client(tmp_path, issuer, PILOT_TOKEN) as (test_client, _):
        yield test_client


@pytest.fixture(scope="module")
def tokens(issuer: Issuer) -> Dict[str, str]:
    return {"admin": issuer.token("root", groups=["/vo/admins"]), "shifter": issuer.token("sam", groups=["/vo/ops"]),
            "siteadmin": issuer.token("bob", groups=["/vo/sites/S1"]), "siteadmin2": issuer.token("carol",
                                                                                                 groups=["/vo/sites/S2"]),
            "user": issuer.token("alice"), "user2": issuer.token("dave"), "pilot": PILOT_TOKEN,
            "scope_admin": issuer.token("eve", scope="openid gwtrace.admin")}


def auth(token: str) -> Dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def put(client: Any, token: str, body: Dict[str, Any]) -> Any:
    return client.post("/api/control/rules", json=body, headers=auth(token))


SET_CASES = [
    # (who, scope, allowed)
    ("admin", {}, True), ("admin", {"site": "S2"}, True), ("scope_admin", {"owner": "dave"}, True),
    ("shifter", {"site": "S1"}, True), ("shifter", {"job_id": "1.0", "owner": "dave"}, True),
    ("siteadmin", {"site": "S1"}, True), ("siteadmin", {"site": "S1", "owner": "alice"}, True),
    ("siteadmin", {"site": "S2"}, False), ("siteadmin", {}, False), ("siteadmin", {"owner": "bob"}, False),
    ("user", {"owner": "alice"}, True), ("user", {"owner": "alice", "job_id": "7.0"}, True),
    ("user", {"owner": "dave"}, False), ("user", {"site": "S1"}, False), ("user", {}, False),
    ("user", {"job_id": "7.0"}, False),
    ("pilot", {}, False), ("pilot", {"site": "S1"}, False),
]


@pytest.mark.parametrize("who, scope, allowed", SET_CASES)
def test_who_may_set_which_rule(client: Any, tokens: Dict[str, str], who: str, scope: Dict[str, str],
                                allowed: bool) -> None:
    resp = put(client, tokens[who], {"scope": scope, "level": "commands", "reason": "test"})
    assert resp.status_code == (201 if allowed else 403), resp.get_json()
    if allowed:
        rule = resp.get_json()["rule"]
        assert rule["set_by"] != "" and rule["role"] in ("admin", "shifter", "siteadmin", "user")
    else:
        assert "\n" not in resp.get_json()["error"]


@pytest.mark.parametrize("who, scope, allowed", SET_CASES)
def test_who_may_set_which_operation_rule(client: Any, tokens: Dict[str, str], who: str, scope: Dict[str, str],
                                          allowed: bool) -> None:
    """An operation rule's scope is checked exactly as any rule's: the operation widens nobody's reach."""
    resp = put(client, tokens[who], {"scope": scope, "operation": "cmsRun", "sample_ratio": 1.0, "reason": "test"})
    assert resp.status_code == (201 if allowed else 403), resp.get_json()
    if allowed:
        assert resp.get_json()["rule"]["operation"] == "cmsRun"
    else:
        assert "\n" not in resp.get_json()["error"]


def test_nobody_names_their_own_role_or_author(client: Any, tokens: Dict[str, str], issuer: Issuer) -> None:
    for field, value in (("role", "admin"), ("set_by", "root")):
        resp = put(client, tokens["user"], {"scope": {"owner": "alice"}, "level": "off", field: value})
        assert resp.status_code == 400 and field in resp.get_json()["error"]
    # a group the role map does not know grants nothing beyond user
    self_made = issuer.token("mallory", groups=["/vo/admins-not", "/vo/sites"], scope="gwtrace.root", role="admin")
    assert put(client, self_made, {"scope": {"site": "S1"}, "level": "off"}).status_code == 403


def test_a_token_of_another_key_issuer_audience_or_an_expired_one_is_refused(client: Any, issuer: Issuer) -> None:
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    bad = {"forged": issuer.token("root", groups=["/vo/admins"], key=other_key),
           "audience": issuer.token("root", groups=["/vo/admins"], audience="https://elsewhere"),
           "issuer": issuer.token("root", groups=["/vo/admins"], issuer="https://evil.example.org"),
           "expired": issuer.token("root", groups=["/vo/admins"], lifetime=-120),
           "garbage": "not.a.token"}
    for what, token in bad.items():
        resp = put(client, token, {"scope": {}, "level": "off"})
        assert resp.status_code == 401, what
        assert resp.headers["WWW-Authenticate"].startswith("Bearer")
        assert "\n" not in resp.get_json()["error"] and "Traceback" not in resp.get_json()["error"]
    assert client.get("/api/control/rules").status_code == 401          # no token at all


def test_the_pilots_token_asks_and_answers_only(client: Any, tokens: Dict[str, str]) -> None:
    assert client.post("/v1/gwtrace/decide", json={"subject": "glidein"}, headers=auth(PILOT_TOKEN)).status_code == 200
    assert client.post("/v1/gwtrace/control/results", json={"key": "k", "results": []},
                       headers=auth(PILOT_TOKEN)).status_code == 200
    for method, path in (("get", "/api/control/rules"), ("get", "/api/control/audit"),
                         ("get", "/api/control/explain?site=S1"), ("delete", "/api/control/rules/r1")):
        assert getattr(client, method)(path, headers=auth(PILOT_TOKEN)).status_code == 403, path
    # and a person's token is not the pilots': decide without the static token is refused
    assert client.post("/v1/gwtrace/decide", json={"subject": "glidein"}).status_code == 401


REMOVE_CASES = [
    # (rule set by, remover, allowed)
    ("admin", "shifter", False), ("admin", "siteadmin", False), ("admin", "user", False), ("admin", "admin", True),
    ("shifter", "siteadmin", False), ("shifter", "shifter", True), ("shifter", "admin", True),
    ("siteadmin", "user", False), ("siteadmin", "siteadmin2", False), ("siteadmin", "siteadmin", True),
    ("siteadmin", "shifter", True),
    ("user", "user2", False), ("user", "siteadmin2", False), ("user", "siteadmin", True), ("user", "user", True),
    ("user", "pilot", False),
]


@pytest.mark.parametrize("owner, remover, allowed", REMOVE_CASES)
def test_who_may_remove_whose_rule(client: Any, tokens: Dict[str, str], owner: str, remover: str,
                                   allowed: bool) -> None:
    scope = {"site": "S1", "owner": "alice"}
    rid = put(client, tokens[owner], {"scope": scope, "level": "off"}).get_json()["rule"]["id"]
    resp = client.delete(f"/api/control/rules/{rid}", headers=auth(tokens[remover]))
    assert resp.status_code == (200 if allowed else 403), resp.get_json()
    listed = [r["id"] for r in client.get("/api/control/rules", headers=auth(tokens["admin"])).get_json()["rules"]]
    assert (rid in listed) is not allowed


@pytest.mark.parametrize("owner, remover, allowed", REMOVE_CASES)
def test_who_may_remove_whose_operation_rule(client: Any, tokens: Dict[str, str], owner: str, remover: str,
                                             allowed: bool) -> None:
    body = {"scope": {"site": "S1", "owner": "alice"}, "operation": "cmsRun", "sample_ratio": 0.5}
    rid = put(client, tokens[owner], body).get_json()["rule"]["id"]
    resp = client.delete(f"/api/control/rules/{rid}", headers=auth(tokens[remover]))
    assert resp.status_code == (200 if allowed else 403), resp.get_json()
    listed = [r["id"] for r in client.get("/api/control/rules", headers=auth(tokens["admin"])).get_json()["rules"]]
    assert (rid in listed) is not allowed


def test_a_users_operation_rule_cannot_lift_a_site_admins_ratio(client: Any, tokens: Dict[str, str]) -> None:
    put(client, tokens["siteadmin"], {"scope": {"site": "S1"}, "sample_ratio": 0.1})
    put(client, tokens["user"], {"scope": {"owner": "alice"}, "operation": "cmsRun", "sample_ratio": 1.0})
    answer = client.get("/api/sampling", query_string={"service": "cmsRun;site=S1;owner=alice"}).get_json()
    assert answer["operationSampling"]["perOperationStrategies"] == [
        {"operation": "cmsRun", "probabilisticSampling": {"samplingRate": 0.1}}]
    explained = client.get("/api/control/explain?owner=alice&site=S1&operation=cmsRun",
                           headers=auth(tokens["user"])).get_json()["operation"]
    assert (explained["sample_ratio"], explained["rule"]) == (0.1, "r2") and "capped by r1" in explained["why"]
    # a shifter's operation rule is not capped
    put(client, tokens["shifter"], {"scope": {"owner": "alice", "site": "S1"}, "operation": "cmsRun",
                                    "sample_ratio": 0.9})
    answer = client.get("/api/sampling", query_string={"service": "cmsRun;site=S1;owner=alice"}).get_json()
    assert answer["operationSampling"]["perOperationStrategies"][0]["probabilisticSampling"]["samplingRate"] == 0.9
    bad = client.get("/api/control/explain?owner=alice&operation=a%0Ab", headers=auth(tokens["user"]))
    assert bad.status_code == 400 and "operation holds control characters" in bad.get_json()["error"]


def test_a_user_rule_cannot_lift_a_site_admins_off(client: Any, tokens: Dict[str, str]) -> None:
    off = put(client, tokens["siteadmin"], {"scope": {"site": "S1"}, "level": "off", "sample_ratio": 0.0,
                                            "reason": "disk full"}).get_json()["rule"]["id"]
    put(client, tokens["user"], {"scope": {"owner": "alice", "job_id": "7.0"}, "level": "commands",
                                 "sample_ratio": 1.0})
    ask = {"subject": "job", "site": "S1", "owner": "alice", "job_id": "7.0", "trace_id": "ab" * 16}
    answer = client.post("/v1/gwtrace/decide", json=ask, headers=auth(PILOT_TOKEN)).get_json()
    assert (answer["level"], answer["sample_ratio"], answer["sampled"], answer["rule"]) == ("off", 0.0, False, off)
    elsewhere = client.post("/v1/gwtrace/decide", json=dict(ask, site="S2"), headers=auth(PILOT_TOKEN)).get_json()
    assert (elsewhere["level"], elsewhere["sampled"]) == ("commands", True)
    # a shifter's rule for the job is not capped: operations may look closer at a site that said less
    put(client, tokens["shifter"], {"scope": {"job_id": "7.0", "site": "S1", "owner": "alice"},
                                    "level": "functions"})
    assert client.post("/v1/gwtrace/decide", json=ask, headers=auth(PILOT_TOKEN)).get_json()["level"] == "functions"


def test_every_change_is_audited_and_a_user_sees_only_their_own(client: Any, tokens: Dict[str, str]) -> None:
    rid = put(client, tokens["user"], {"scope": {"owner": "alice"}, "level": "functions"}).get_json()["rule"]["id"]
    put(client, tokens["siteadmin"], {"scope": {"site": "S1"}, "level": "scripts"})
    client.delete(f"/api/control/rules/{rid}", headers=auth(tokens["user"]))
    rows = client.get("/api/control/audit", headers=auth(tokens["admin"])).get_json()["audit"]
    assert [(r["who"], r["role"], r["action"], r["target"]) for r in rows] == [
        ("alice", "user", "rule.set", rid), ("bob", "siteadmin", "rule.set", "r2"),
        ("alice", "user", "rule.remove", rid)]
    assert rows[0]["before"] is None and rows[0]["after"]["level"] == "functions"
    assert rows[2]["before"]["level"] == "functions" and rows[2]["after"] is None
    mine = client.get("/api/control/audit", headers=auth(tokens["user"])).get_json()["audit"]
    assert {r["who"] for r in mine} == {"alice"}


def test_a_user_lists_the_general_rules_and_their_own_not_other_users(client: Any, tokens: Dict[str, str]) -> None:
    put(client, tokens["admin"], {"scope": {"site": "S1"}, "level": "off"})
    put(client, tokens["user"], {"scope": {"owner": "alice"}, "level": "commands"})
    put(client, tokens["user2"], {"scope": {"owner": "dave"}, "level": "commands"})
    put(client, tokens["shifter"], {"scope": {"owner": "dave", "job_id": "1.0"}, "level": "commands"})
    seen = {who: [r["id"] for r in client.get("/api/control/rules", headers=auth(tokens[who])).get_json()["rules"]]
            for who in ("user", "user2", "siteadmin")}
    assert seen == {"user": ["r1", "r2"], "user2": ["r1", "r3", "r4"], "siteadmin": ["r1", "r2", "r3", "r4"]}
    assert client.get("/api/control/explain?owner=dave", headers=auth(tokens["user"])).status_code == 403
    mine = client.get("/api/control/explain?owner=alice&site=S1", headers=auth(tokens["user"])).get_json()
    assert [m["rule"]["id"] for m in mine["matched"]] == ["r2", "r1"]


def test_the_issuers_keys_are_fetched_once(client: Any, tokens: Dict[str, str], issuer: Issuer) -> None:
    before = issuer.requests
    for _ in range(5):
        assert client.get("/api/control/rules", headers=auth(tokens["admin"])).status_code == 200
    assert issuer.requests - before <= 2                 # discovery + JWKS at most, for this app


@pytest.mark.parametrize("data, words", [
    ({"groups": {"/g": "root"}}, "role must be one of"), ({"groups": {"/g": "siteadmin"}}, "names its sites"),
    ({"colour": 1}, "unknown key"), ({"default_role": "admin"}, "default_role"),
])
def test_a_bad_role_map_is_one_line(data: Dict[str, Any], words: str) -> None:
    with pytest.raises(BadRoleMap, match=words):
        RoleMap.from_dict(data)


def test_made_up_key_ids_do_not_make_the_server_hammer_the_issuer(client: Any, issuer: Issuer,
                                                                   tokens: Dict[str, str]) -> None:
    assert client.get("/api/control/rules", headers=auth(tokens["admin"])).status_code == 200
    before = issuer.requests
    for i in range(10):
        forged = jwt.encode({"iss": issuer.url, "aud": AUDIENCE, "exp": int(time.time()) + 60, "sub": "x"},
                            issuer.key, algorithm="RS256", headers={"kid": f"k-{i}"})
        resp = client.get("/api/control/rules", headers=auth(forged))
        assert resp.status_code == 401 and "key the issuer does not list" in resp.get_json()["error"]
    assert issuer.requests - before <= 1


def test_an_issuer_that_is_down_is_one_line_and_not_asked_again_per_request(tmp_path: Any, issuer: Issuer) -> None:
    down = Issuer()
    url = down.url
    down.close()                                          # nothing listens there any more
    store = TraceStore(tmp_path / "t.db")
    verifier = TokenVerifier(url, AUDIENCE, RoleMap.from_dict(ROLE_MAP))
    client = create_app(store, PILOT_TOKEN, control_verifier=verifier).test_client()
    token = issuer.token("root", groups=["/vo/admins"])
    first = client.get("/api/control/rules", headers=auth(token))
    assert first.status_code == 401 and first.get_json()["error"].startswith("cannot read the issuer's keys")
    started = time.monotonic()
    assert client.get("/api/control/rules", headers=auth(token)).get_json() == first.get_json()
    assert time.monotonic() - started < 0.5
    store.close()


def test_an_issuer_must_be_https_or_loopback() -> None:
    with pytest.raises(BadRoleMap, match="https"):
        TokenVerifier("http://issuer.example.org", AUDIENCE, RoleMap())


def test_a_token_signed_with_the_public_key_as_a_shared_secret_is_refused(client: Any, issuer: Issuer) -> None:
    """The algorithm-confusion attack: HS256 keyed with the issuer's public key (which anyone can fetch)."""
    public = issuer.key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo)
    now = int(time.time())
    claims = {"iss": issuer.url, "sub": "x", "preferred_username": "root", "aud": AUDIENCE, "exp": now + 600,
              "wlcg.groups": ["/vo/admins"]}

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": issuer.kid}).encode())
    body = b64(json.dumps(claims).encode())
    sig = b64(hmac.new(public, f"{head}.{body}".encode(), hashlib.sha256).digest())
    resp = put(client, f"{head}.{body}.{sig}", {"scope": {}, "level": "off"})
    assert resp.status_code == 401 and "token refused" in resp.get_json()["error"]
