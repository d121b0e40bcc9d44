"""Whether a trace is sampled at a ratio: one rule for the factory, the glidein, its jobs and any SDK.

A trace crosses processes that decide on their own (the controller, the
glidein's sidecar, a job's wrapper, an OpenTelemetry SDK inside the job). They
agree only if each derives the same answer from what they all share, the trace
id. The rule is the OpenTelemetry SDKs' ``TraceIdRatioBased`` (Python and Go
compare the trace id's low 64 bits with ``round(ratio * 2**64)``), so that an
SDK configured from the same ratio (``/api/sampling``) decides as gwtrace does.
W3C trace-context level 2 says those low bits are random when the ``random``
flag (0x02) is set, which is how gwtrace makes its trace ids; the flags of a
``traceparent`` gwtrace writes carry it.

Standard library only: the node imports this before anything else is loaded.
"""

from __future__ import annotations

import os

from gwtrace.wire.traceparent import RANDOM, SAMPLED

_LOW64 = (1 << 64) - 1


def ratio_bound(ratio: float) -> int:
    """The bound the low 64 bits of a sampled trace id are under (the SDKs' ``get_bound_for_rate``)."""
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"sampling ratio {ratio!r} is not between 0 and 1")
    return round(ratio * (_LOW64 + 1))


def sampled(trace_id: str, ratio: float) -> bool:
    """Whether the trace with this id (32 hex digits) is sampled at ``ratio``.

    An id that is not 32 hex digits raises ``ValueError``: a caller deciding
    for a trace must have a real one.
    """
    if len(trace_id) != 32:
        raise ValueError(f"trace id {trace_id!r} is not 32 hex digits")
    return int(trace_id, 16) & _LOW64 < ratio_bound(ratio)


def new_trace_id() -> str:
    """A trace id whose every bit is random (so the ``random`` flag may be set), never all zeros."""
    while True:
        value = os.urandom(16).hex()
        if value != "0" * 32:
            return value


def traceparent_flags(is_sampled: bool) -> str:
    """The flags field of a ``traceparent`` for a random trace id: ``03`` sampled, ``02`` not."""
    return f"{RANDOM | (SAMPLED if is_sampled else 0):02x}"
