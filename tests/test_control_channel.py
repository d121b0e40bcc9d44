"""The node-facing half of the controller: ``POST /v1/gwtrace/decide`` as the contract says (briefs c32), the back
channel (commands queued by whom may, riding snapshot answers in ``Gwtrace-Commands``, results kept and audited,
expired after an hour), and the Jaeger remote-sampling answer validated against Jaeger's schema."""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Iterator

import jsonschema
import pytest

from control_issuer import Issuer, controlled_client, issuer_fixture
from gwtrace.controller.book import controller_for
from gwtrace.store import TraceStore
from gwtrace.wire.sampling import new_trace_id, sampled
from test_live_store import request, span

PILOT = {"Authorization": "Bearer pilot-secret"}
PROTO = {"Content-Type": "application/x-protobuf", **PILOT}


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    yield from issuer_fixture()


@pytest.fixture
def served(tmp_path: Any, issuer: Issuer) -> Iterator[Any]:
    with controlled_client(tmp_path, issuer, "pilot-secret") as served:
        yield served


def bearer(issuer: Issuer, name: str, groups: Any = None) -> Dict[str, str]:
    return {"Authorization": "Bearer " + issuer.token(name, groups=groups)}


def decide(client: Any, body: Any, **headers: str) -> Any:
    return client.post("/v1/gwtrace/decide", data=json.dumps(body), headers={"Content-Type": "application/json",
                                                                              **PILOT, **headers})


def test_decide_answers_the_contract(served: Any, issuer: Issuer) -> None:
    client, _ = served
    none = decide(client, {"subject": "glidein", "site": "FNAL", "glidein_id": "g-1", "future_field": [1]})
    assert none.status_code == 200
    assert none.get_json() == {"level": None, "sample_ratio": None, "sampled": None, "rule": None,
                               "reason": "no rule matches: use your own default", "ttl_s": 300}
    admin = bearer(issuer, "root", ["/vo/admins"])
    rid = client.post("/api/control/rules", json={"scope": {"frontend": "VO"}, "level": "scripts",
                                                  "sample_ratio": 0.5, "reason": "half"},
                      headers=admin).get_json()["rule"]["id"]
    ids = [new_trace_id() for _ in range(64)]
    answers = [decide(client, {"subject": "job", "frontend": "VO", "trace_id": t.upper()}).get_json() for t in ids]
    assert {(a["level"], a["sample_ratio"], a["rule"], a["ttl_s"]) for a in answers} == {("scripts", 0.5, rid, 300)}
    # consistent: the controller's answer is the shared trace-id rule, the one the node and SDKs apply
    assert [a["sampled"] for a in answers] == [sampled(t, 0.5) for t in ids]
    assert 0 < sum(a["sampled"] for a in answers) < 64


@pytest.mark.parametrize("body", [[], {"subject": "robot"}, {"subject": "job", "site": 5},
                                  {"subject": "job", "trace_id": "xyz"}, {"subject": "job", "owner": "a" * 257}])
def test_decide_refuses_a_bad_body_in_one_line(served: Any, body: Any) -> None:
    client, _ = served
    resp = decide(client, body)
    assert resp.status_code == 400 and set(resp.get_json()) == {"error"}
    assert "\n" not in resp.get_json()["error"]
    too_big = client.post("/v1/gwtrace/decide", data=b"{" + b" " * 20000 + b"}",
                          headers={"Content-Type": "application/json", **PILOT})
    assert too_big.status_code == 413
    assert client.post("/v1/gwtrace/decide", data=b"{not json", headers={"Content-Type": "application/json",
                                                                         **PILOT}).status_code == 400


def live(client: Any, key: str = "u-1", owner: str = "alice") -> Any:
    now = time.time()
    spans = [span("a1", "", "glidein", now - 60),
             span("a2", "a1", "user_job", now - 30, **{"htcondor.job.id": "7.0", "htcondor.job.owner": owner})]
    return client.post("/v1/gwtrace/snapshot", data=request(spans, 1, now, key=key).SerializeToString(), headers=PROTO)


def test_commands_ride_the_snapshot_answers_until_their_result_arrives(served: Any, issuer: Issuer) -> None:
    client, store = served
    assert "Gwtrace-Commands" not in live(client).headers
    alice = bearer(issuer, "alice")
    tail = client.post("/api/control/commands", json={"key": "u-1", "op": "tail", "job": "7.0",
                                                      "path": "_condor_stderr", "max_bytes": 4096}, headers=alice)
    assert tail.status_code == 201, tail.get_json()
    cid = tail.get_json()["command"]["id"]
    for _ in range(2):                                   # resent with every answer (at least once)
        header = live(client).headers["Gwtrace-Commands"]
        assert json.loads(header) == [{"id": cid, "op": "tail", "job": "7.0", "path": "_condor_stderr",
                                       "max_bytes": 4096}]
        assert header.isascii() and " " not in header
    assert "Gwtrace-Commands" not in live(client, key="u-2").headers      # another glidein's snapshot
    # a result for another glidein's key is not taken; the right one is, and the command stops riding
    result = {"id": cid, "ok": True, "text": "last lines", "truncated": False, "bytes": 10}
    assert client.post("/v1/gwtrace/control/results", json={"key": "u-2", "results": [result]},
                       headers=PILOT).get_json() == {"accepted": 0}
    assert client.post("/v1/gwtrace/control/results", json={"key": "u-1", "results": [result, {"id": "c99",
                                                                                                 "ok": False}]},
                       headers=PILOT).get_json() == {"accepted": 1}
    assert "Gwtrace-Commands" not in live(client).headers
    got = client.get(f"/api/control/commands/{cid}", headers=alice).get_json()["command"]
    assert (got["state"], got["result"]["text"]) == ("done", "last lines")
    # a second command: a secret in a job's file is redacted here too, whatever the node did
    again = client.post("/api/control/commands", json={"key": "u-1", "op": "tail", "job": "7.0", "path": "env.log"},
                        headers=alice).get_json()["command"]["id"]
    leaked = {"id": again, "ok": True, "text": "step 1\nAuthorization: Bearer eyJabc.def.ghi\nstep 2"}
    client.post("/v1/gwtrace/control/results", json={"key": "u-1", "results": [leaked]}, headers=PILOT)
    text = client.get(f"/api/control/commands/{again}", headers=alice).get_json()["command"]["result"]["text"]
    assert text == "step 1\n[REDACTED]\nstep 2"
    assert client.get(f"/api/control/commands/{cid}", headers=bearer(issuer, "dave")).status_code == 404
    audit = client.get("/api/control/audit", headers=bearer(issuer, "root", ["/vo/admins"])).get_json()["audit"]
    assert [(a["action"], a["target"]) for a in audit] == [("command.queue", cid), ("command.result", cid),
                                                           ("command.queue", again), ("command.result", again)]
    assert "text" not in audit[1]["after"]               # a job's file is not copied into the audit log


@pytest.mark.parametrize("who, groups, body, status", [
    ("dave", None, {"op": "tail", "job": "7.0", "path": "out.log"}, 403),        # not his job
    ("alice", None, {"op": "level", "level": "commands"}, 403),                 # the whole glidein: not a user's
    ("alice", None, {"op": "tail", "job": "8.0", "path": "out.log"}, 403),      # no such job on that glidein
    ("bob", ["/vo/sites/S1"], {"op": "level", "level": "off"}, 403),             # the glidein is at FNAL
    ("fnal", None, {"op": "level", "level": "off"}, 403),
    ("sam", ["/vo/ops"], {"op": "level", "level": "commands", "job": None}, 201),
    ("alice", None, {"op": "level", "level": "commands", "job": "7.0"}, 201),
    ("alice", None, {"op": "tail", "job": "7.0", "path": "../../etc/passwd"}, 400),
    ("alice", None, {"op": "tail", "job": "7.0", "path": "/etc/passwd"}, 400),
    ("alice", None, {"op": "tail", "job": "7.0", "path": "a//b"}, 400),
    ("alice", None, {"op": "tail", "job": "7.0", "path": "log", "max_bytes": (1 << 20) + 1}, 400),
    ("alice", None, {"op": "reboot"}, 400),
])
def test_who_may_queue_which_command(served: Any, issuer: Issuer, who: str, groups: Any, body: Dict[str, Any],
                                     status: int) -> None:
    client, _ = served
    live(client)
    resp = client.post("/api/control/commands", json=dict(body, key="u-1"), headers=bearer(issuer, who, groups))
    assert resp.status_code == status, resp.get_json()


def test_a_site_admin_commands_glideins_at_their_site_and_nobody_an_unknown_one(served: Any, issuer: Issuer) -> None:
    client, _ = served
    live(client)
    fnal = {"Authorization": "Bearer " + issuer.token("fred", groups=["/vo/sites/FNAL"])}
    body = {"key": "u-1", "op": "level", "level": "off"}
    # the role map knows no FNAL site admin group: fred is a user
    assert client.post("/api/control/commands", json=body, headers=fnal).status_code == 403
    admin = bearer(issuer, "root", ["/vo/admins"])
    assert client.post("/api/control/commands", json=dict(body, key="nope"), headers=admin).status_code == 404


def test_commands_older_than_an_hour_expire_and_the_header_stays_under_4096_bytes(served: Any,
                                                                                  issuer: Issuer) -> None:
    client, store = served
    live(client)
    admin = bearer(issuer, "root", ["/vo/admins"])
    for i in range(80):
        client.post("/api/control/commands", json={"key": "u-1", "op": "tail", "job": "7.0",
                                                   "path": f"dir/file-{i:03d}.log"}, headers=admin)
    header = live(client).headers["Gwtrace-Commands"]
    assert len(header) <= 4096 and json.loads(header)[0]["path"] == "dir/file-000.log"
    ctl = controller_for(store)
    real = ctl.clock
    ctl.clock = lambda: real() + 3601
    try:
        ctl._checked = float("-inf")
        assert "Gwtrace-Commands" not in live(client).headers
    finally:
        ctl.clock = real


# The JSON Jaeger's collector serves for GET /api/sampling, written from Jaeger's own definition:
# jaegertracing/jaeger-idl, proto/api_v2/sampling.proto (SamplingStrategyResponse and its messages), as proto3
# JSON (enum names as strings, camelCase field names), and jaegertracing/documentation, content/docs/sampling.md.
JAEGER_STRATEGY_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["strategyType"],
    "properties": {
        "strategyType": {"enum": ["PROBABILISTIC", "RATE_LIMITING"]},
        "probabilisticSampling": {"$ref": "#/$defs/probabilistic"},
        "rateLimitingSampling": {"type": "object", "additionalProperties": False,
                                 "properties": {"maxTracesPerSecond": {"type": "integer"}}},
        "operationSampling": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "defaultSamplingProbability": {"type": "number", "minimum": 0, "maximum": 1},
                "defaultLowerBoundTracesPerSecond": {"type": "number", "minimum": 0},
                "defaultUpperBoundTracesPerSecond": {"type": "number", "minimum": 0},
                "perOperationStrategies": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "required": ["operation"],
                    "properties": {"operation": {"type": "string"},
                                   "probabilisticSampling": {"$ref": "#/$defs/probabilistic"}}}},
            },
        },
    },
    "$defs": {"probabilistic": {"type": "object", "additionalProperties": False, "required": ["samplingRate"],
                                "properties": {"samplingRate": {"type": "number", "minimum": 0, "maximum": 1}}}},
}


def test_jaeger_sampling_answer_follows_the_rules_and_jaegers_schema(served: Any, issuer: Issuer) -> None:
    client, _ = served
    admin = bearer(issuer, "root", ["/vo/admins"])
    client.post("/api/control/rules", json={"scope": {"site": "S1"}, "sample_ratio": 0.25}, headers=admin)
    client.post("/api/control/rules", json={"scope": {"site": "S2"}, "level": "off"}, headers=admin)
    cases = {"cmsRun": 1.0, "cmsRun;site=S1": 0.25, "cmsRun;site=S2": 0.0, "x;site=S1;owner=alice": 0.25}
    for service, rate in cases.items():
        resp = client.get("/api/sampling", query_string={"service": service})   # no token: SDKs send none
        assert resp.status_code == 200
        answer = resp.get_json()
        jsonschema.validate(answer, JAEGER_STRATEGY_SCHEMA)
        assert answer["strategyType"] == "PROBABILISTIC"
        assert answer["probabilisticSampling"]["samplingRate"] == rate
        assert answer["operationSampling"]["defaultSamplingProbability"] == rate
    assert client.get("/api/sampling", query_string={"service": "x", "site": "S1"}).get_json()[
        "probabilisticSampling"]["samplingRate"] == 0.25
    for bad in ("", "x;colour=red", "x;site="):
        resp = client.get("/api/sampling", query_string={"service": bad})
        assert resp.status_code == 400 and "\n" not in resp.get_json()["error"]
    # the schema itself refuses what Jaeger's clients would not read
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"strategyType": "PROBABILISTIC", "probabilisticSampling": {"rate": 1}},
                            JAEGER_STRATEGY_SCHEMA)


def test_jaeger_sampling_answers_per_operation_strategies_from_operation_rules(served: Any, issuer: Issuer) -> None:
    client, _ = served
    admin, bob = bearer(issuer, "root", ["/vo/admins"]), bearer(issuer, "bob", ["/vo/sites/S1"])
    alice = bearer(issuer, "alice")
    put = [({"scope": {"site": "S1"}, "sample_ratio": 0.25}, bob),
           ({"scope": {"site": "S1"}, "operation": "stageout", "sample_ratio": 1.0}, admin),
           ({"scope": {}, "operation": "merge", "sample_ratio": 0.5}, admin),
           ({"scope": {"owner": "alice"}, "operation": "cmsRun", "sample_ratio": 1.0}, alice),
           ({"scope": {"site": "S2"}, "level": "off"}, admin)]
    for body, who in put:
        assert client.post("/api/control/rules", json=body, headers=who).status_code == 201
    cases = {"cmsRun;site=S1;owner=alice": (0.25, {"cmsRun": 0.25, "merge": 0.5, "stageout": 1.0}),  # capped by bob
             "cmsRun;owner=alice": (1.0, {"cmsRun": 1.0, "merge": 0.5}),
             "x;site=S2;owner=alice": (0.0, {"cmsRun": 0.0, "merge": 0.0}),                        # level off
             "x": (1.0, {"merge": 0.5})}
    for service, (rate, per_op) in cases.items():
        answer = client.get("/api/sampling", query_string={"service": service}).get_json()
        jsonschema.validate(answer, JAEGER_STRATEGY_SCHEMA)
        sampling = answer["operationSampling"]
        assert (sampling["defaultSamplingProbability"], sampling["defaultLowerBoundTracesPerSecond"]) == (rate, 0.0)
        assert sampling["perOperationStrategies"] == [
            {"operation": name, "probabilisticSampling": {"samplingRate": r}} for name, r in per_op.items()]
    # the nodes' decisions never see an operation rule
    assert decide(client, {"subject": "job", "owner": "alice"}).get_json()["sample_ratio"] is None
    # a level beside an operation is one line, refused
    resp = client.post("/api/control/rules", json={"scope": {}, "operation": "merge", "level": "off"},
                       headers=admin)
    assert resp.status_code == 400 and resp.get_json()["error"].startswith("an operation rule sets only a sample")


def test_decide_does_no_sql_per_question_and_sees_changes(served: Any, issuer: Issuer) -> None:
    client, store = served
    ctl = controller_for(store)
    ctl.decide({"site": "S1"})                                   # loaded once
    statements: list = []
    store.reader().set_trace_callback(statements.append)
    try:
        for i in range(200):
            assert decide(client, {"subject": "job", "site": "S1", "job_id": f"{i}.0"}).status_code == 200
    finally:
        store.reader().set_trace_callback(None)
    assert statements == []
    # a change through the API is seen by the next question
    client.post("/api/control/rules", json={"scope": {"site": "S1"}, "level": "off"},
                headers=bearer(issuer, "root", ["/vo/admins"]))
    assert decide(client, {"subject": "job", "site": "S1"}).get_json()["level"] == "off"
    # a change by another process on the same store (gwtrace control --store) within recheck_s
    from gwtrace.controller.book import Controller
    from gwtrace.controller.roles import Principal

    with TraceStore(store.path) as other:
        Controller(other).set_rule(Principal("root", "admin"), {"scope": {"site": "S1"}, "level": "commands"})
    ctl._checked = float("-inf")                                 # as if recheck_s had passed
    assert decide(client, {"subject": "job", "site": "S1"}).get_json()["level"] == "commands"
