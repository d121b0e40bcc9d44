"""The trace-id ratio rule agrees with the OpenTelemetry SDK's sampler on every id tried."""

import random

import pytest
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

from gwtrace.wire.sampling import new_trace_id, ratio_bound, sampled, traceparent_flags


@pytest.mark.parametrize("ratio", [0.0, 0.001, 0.1, 0.25, 0.5, 0.999, 1.0])
def test_same_decision_as_the_sdk(ratio):
    sdk = TraceIdRatioBased(ratio)
    rng = random.Random(7)
    ids = [f"{rng.getrandbits(128):032x}" for _ in range(3000)]
    ids += ["0" * 31 + "1", "f" * 32, f"{ratio_bound(ratio) - 1:032x}" if ratio else "0" * 31 + "1"]
    for trace_id in ids:
        want = sdk.should_sample(None, int(trace_id, 16), "x").decision is Decision.RECORD_AND_SAMPLE
        assert sampled(trace_id, ratio) is want, (trace_id, ratio)


def test_ratio_is_about_right_and_bad_input_refused():
    ids = [new_trace_id() for _ in range(4000)]
    share = sum(sampled(t, 0.25) for t in ids) / len(ids)
    assert 0.2 < share < 0.3
    assert len(set(ids)) == len(ids)
    with pytest.raises(ValueError):
        sampled("abc", 0.5)
    with pytest.raises(ValueError):
        ratio_bound(1.5)
    assert traceparent_flags(True) == "03" and traceparent_flags(False) == "02"
