"""``gwtrace serve``: the embedded trace back end.

One process that receives OTLP/HTTP (``POST /v1/traces``), keeps spans in the
SQLite store (``gwtrace.store``), answers the Jaeger query API (``/api``,
``/api/v3``) and serves a web UI, so that a single machine needs no Jaeger
and moving to Jaeger or Tempo later is a change of URL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .serve import serve

__all__ = ["create_app", "serve"]

if TYPE_CHECKING:
    from .app import create_app  # noqa: F401


def __getattr__(name: str) -> Any:
    """``create_app`` loads Flask and every blueprint on first use: ``gwtrace serve --help`` does not."""
    if name != "create_app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .app import create_app
    return create_app
