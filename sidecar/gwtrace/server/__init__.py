"""``gwtrace serve``: the embedded trace back end.

One process that receives OTLP/HTTP (``POST /v1/traces``), keeps spans in the
SQLite store (``gwtrace.store``), answers the Jaeger query API (``/api``,
``/api/v3``) and serves a web UI, so that a single machine needs no Jaeger
and moving to Jaeger or Tempo later is a change of URL.
"""

from __future__ import annotations

from .app import create_app
from .serve import serve

__all__ = ["create_app", "serve"]
