"""Where the sidecar's spans (and resource metrics) go: a collector, home at stop, or the embedded store.

The exporter (``gwtrace.export``) knows how to send OTLP; the store knows how
to keep it; the sidecar, which uses both, chooses between them from the
environment (docs/deploy.md, "Where spans go").
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Optional, Tuple

from gwtrace.export.metrics import MetricsOutcome, OtlpMetricsSender, to_request
from gwtrace.export.otlp import Delivery, ShipHomeDelivery, make_otlp_exporter
from gwtrace.export.otlpenv import metrics_endpoint, otlp_env
from gwtrace.export.reachability import endpoint_problem
from gwtrace.store.exporter import StoreSpanExporter
from gwtrace.wire.redact import strip_userinfo

log = logging.getLogger("gwtrace.export.otlp")


def make_delivery(store_path: Optional[str] = None) -> Delivery:
    """The configured exporter: nothing but ship-home if GWTRACE_EXPORT says so,
    OTLP/HTTP if an endpoint is set, else the store."""
    if os.environ.get("GWTRACE_EXPORT", "").strip().lower() == "ship-home":
        return ShipHomeDelivery()
    settings = otlp_env()
    if settings.configured and settings.token_problem:
        # Unauthenticated, the collector would refuse them for good (401):
        # keep them, as a node with no collector does, to ride home at stop.
        log.warning("%s: spans are kept, not sent", settings.token_problem)
        return ShipHomeDelivery("no usable token")
    if settings.configured:
        problem = endpoint_problem()
        if problem:
            log.warning("%s", problem)
        exporter, session, endpoint = make_otlp_exporter()
        return Delivery(exporter, f"OTLP/HTTP {strip_userinfo(endpoint)}", session)
    store = StoreSpanExporter(store_path)
    return Delivery(store, f"embedded store {store.path}")


class StoreMetricsSender:
    """Resource metrics into the embedded store, by ``TraceStore.put_metrics`` where the store has it
    (docs/resources.md). The store is opened on first use, in the sampling thread, and only then."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._store: Optional[Any] = None

    @staticmethod
    def keeps_metrics() -> bool:
        """True if this gwtrace's store keeps metrics (``put_metrics``, the factory side's store/metrics.py)."""
        from gwtrace.store import TraceStore
        return callable(getattr(TraceStore, "put_metrics", None))

    def send(self, data: Any) -> MetricsOutcome:
        if self._store is None:
            from gwtrace.store import TraceStore
            self._store = TraceStore(self.path)
        put = getattr(self._store, "put_metrics", None)
        if put is None:
            return MetricsOutcome(False, True, "this embedded store keeps no metrics")
        put(to_request(data))
        return MetricsOutcome(True)

    def shutdown(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def make_metrics_send(delivery: Delivery, store_path: Optional[str] = None
                      ) -> "Tuple[Optional[Callable[[Any], MetricsOutcome]], str]":
    """Where resource metrics go, beside the spans: (send, where). ``send`` is None when they are held
    for the stop's ship-home: ship-home delivery, no usable token, no metrics endpoint to derive, or an
    embedded store without ``put_metrics``."""
    if delivery.holds:
        return None, "held for ship-home"
    settings = otlp_env()
    if settings.configured:
        endpoint = metrics_endpoint()
        if not endpoint:
            return None, "held for ship-home (no OTLP metrics endpoint: set OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)"
        return OtlpMetricsSender(endpoint, settings).send, f"OTLP/HTTP {strip_userinfo(endpoint)}"
    path = store_path or str(getattr(getattr(delivery.exporter, "store", None), "path", "") or "")
    if not path:
        return None, "held for ship-home"
    if not StoreMetricsSender.keeps_metrics():
        return None, "held for ship-home (this embedded store keeps no metrics)"
    return StoreMetricsSender(path).send, f"embedded store {path}"
