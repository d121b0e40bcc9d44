"""How many data points an OTLP ``ExportMetricsServiceRequest`` holds, every kind of metric counted.

Why here: the sidecar counts the points of what it ships home (``export.metrics``) and the store
counts them to refuse a huge request before looking further (``store.metrics``); those two layers
may not import each other, so the one count lives below both.
"""

from __future__ import annotations

from typing import Any


def points_of(metric: Any) -> int:
    """The data points of one ``Metric``, whatever its kind (none for a metric without data)."""
    kind = metric.WhichOneof("data")
    return len(getattr(metric, kind).data_points) if kind is not None else 0


def count_points(request: Any) -> int:
    """The data points of a whole request (every resource, scope and metric)."""
    return sum(points_of(metric) for rm in request.resource_metrics for sm in rm.scope_metrics
               for metric in sm.metrics)
