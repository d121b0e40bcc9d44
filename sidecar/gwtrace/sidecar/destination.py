"""Where the sidecar's spans go: a collector, home at stop, or the embedded store.

The exporter (``gwtrace.export``) knows how to send OTLP; the store knows how
to keep it; the sidecar, which uses both, chooses between them from the
environment (docs/deploy.md, "Where spans go").
"""

from __future__ import annotations

import logging
import os
from typing import Optional

from gwtrace.export.otlp import Delivery, ShipHomeDelivery, make_otlp_exporter
from gwtrace.export.otlpenv import otlp_env
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
