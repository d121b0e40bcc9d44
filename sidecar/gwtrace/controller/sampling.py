"""The Jaeger remote-sampling answer (``GET /api/sampling?service=NAME``) derived from the rules.

OpenTelemetry SDKs' Jaeger-remote samplers (and Jaeger's own clients) poll
this for their service and sample by trace-id ratio, the same rule gwtrace
uses (``wire.sampling``): an SDK inside a job that polls with the job's scope
agrees with the glidein and the controller on the job's trace.

The answer is the JSON of Jaeger's ``SamplingStrategyResponse``
(jaegertracing/jaeger-idl, proto/api_v2/sampling.proto): ``strategyType``
``PROBABILISTIC``, ``probabilisticSampling.samplingRate`` and the same ratio in
``operationSampling.defaultSamplingProbability``, and one
``perOperationStrategies`` entry (``{"operation", "probabilisticSampling":
{"samplingRate"}}``) per operation a rule in the service's scope names (its
ratio decided by ``decide.decide_operations``); other operations get the
default.

Service to scope: the rules' scope fields are read from the service name
written as ``NAME;field=value;...`` (``cmsRun;site=T2_US_Nebraska;owner=alice``)
and from the query string's own scope fields (``&site=...``), for samplers
whose URL can carry them. A question no rule sets a ratio for is answered 1.0
(everything sampled: what tracing does without a controller); one whose level is ``off`` 0.0.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from .decide import RuleIndex, decide, decide_operations
from .rules import SCOPE_FIELDS, BadRule

#: What ``defaultLowerBoundTracesPerSecond`` promises: nothing beyond the ratio.
LOWER_BOUND_PER_S = 0.0


def service_question(service: str, extra: Mapping[str, Any]) -> Dict[str, str]:
    """The scope question of a service name and query parameters; BadRule on a malformed one."""
    if not service or len(service) > 1024 or not service.isprintable():
        raise BadRule("service must be a printable name of 1..1024 characters")
    question: Dict[str, str] = {}
    for part in service.split(";")[1:]:
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or key not in SCOPE_FIELDS or not value.strip():
            raise BadRule(f"service part {part[:60]!r} is not field=value with a field of {', '.join(SCOPE_FIELDS)}")
        question[key] = value.strip()
    for key in SCOPE_FIELDS:
        value = extra.get(key)
        if isinstance(value, str) and value:
            question[key] = value[:256]
    return question


def strategy(index: RuleIndex, question: Mapping[str, str], now: float) -> Dict[str, Any]:
    """Jaeger's SamplingStrategyResponse for the question."""
    decision = decide(index, question, now)
    ratio = decision.sample_ratio.value
    rate = 0.0 if decision.level.value == "off" else 1.0 if ratio is None else float(ratio)
    operations = [{"operation": name, "probabilisticSampling": {"samplingRate": float(choice.value)}}
                  for name, choice in decide_operations(index, question, now, decision).items()]
    return {
        "strategyType": "PROBABILISTIC",
        "probabilisticSampling": {"samplingRate": rate},
        "operationSampling": {
            "defaultSamplingProbability": rate,
            "defaultLowerBoundTracesPerSecond": LOWER_BOUND_PER_S,
            "perOperationStrategies": operations,
        },
    }
