"""``gwtrace serve``: the trace store, Jaeger-compatible API and web UI in one process (``gwtrace.server``).

The options, and the refusals that need no store (a non-loopback address without a token, a bad
port or retention); ``gwtrace.server.serve`` does the serving. Importing this module imports Flask:
in the .pyz, which has none, the command dispatcher says so in one line.
"""

from __future__ import annotations

import argparse
import os
from typing import List, Optional

from gwtrace.server.serve import TOKEN_ENV, fail, is_loopback, serve
from gwtrace.store import default_store_path


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gwtrace serve",
        description="Trace store with an OTLP/HTTP receiver (POST /v1/traces), the Jaeger query API "
        "(/api, /api/v3) and a web UI, in one process.",
        epilog=f"Binding to a non-loopback address requires {TOKEN_ENV}; clients then send "
        f"'Authorization: Bearer <token>'.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=4318, help="port (default: 4318, the OTLP/HTTP port; 0 picks one)")
    p.add_argument("--db", "--store", dest="db", help=f"store file (default: {default_store_path()})")
    p.add_argument(
        "--retention-days", type=float, default=None,
        help="delete traces that ended more than this many days ago (default: keep everything)",
    )
    p.add_argument("--control-issuer", metavar="URL",
                   help="the controller's token issuer (its /.well-known/openid-configuration gives the keys): "
                   "people's bearer tokens are verified against it (docs/control.md)")
    p.add_argument("--control-audience", metavar="AUD", help="the audience those tokens must name")
    p.add_argument("--control-roles", metavar="FILE",
                   help="JSON role map: WLCG groups or scopes -> admin|shifter|siteadmin|user (docs/control.md)")
    p.add_argument(
        "--metrics-retention-days", type=float, default=None,
        help="delete resource metrics sampled more than this many days ago (default: as --retention-days)",
    )
    return p


def _control_verifier(args: argparse.Namespace) -> Optional[object]:
    """The controller's token verifier from the --control-* options, or None; ValueError in one line."""
    given = [args.control_issuer, args.control_audience, args.control_roles]
    if not any(given):
        return None
    if not all(given):
        raise ValueError("--control-issuer, --control-audience and --control-roles go together")
    from gwtrace.controller.tokens import RoleMap, TokenVerifier

    return TokenVerifier(args.control_issuer, args.control_audience, RoleMap.from_file(args.control_roles))


def _usage_error(args: argparse.Namespace, token: Optional[str]) -> Optional[str]:
    """Why these arguments cannot be served, or None."""
    if not is_loopback(args.host) and token is None:
        return (
            f"refusing to listen on {args.host} without {TOKEN_ENV}: anyone on the network could read and "
            f"write traces; set {TOKEN_ENV} or use --host 127.0.0.1"
        )
    if args.retention_days is not None and not args.retention_days > 0:
        return "--retention-days must be a positive number"
    if args.metrics_retention_days is not None and not args.metrics_retention_days > 0:
        return "--metrics-retention-days must be a positive number"
    if not 0 <= args.port <= 65535:
        return "--port must be between 0 and 65535"
    return None


def main(argv: List[str]) -> int:
    """Entry point of ``gwtrace serve``; returns the exit status."""
    args = build_parser().parse_args(argv)
    token = os.environ.get(TOKEN_ENV) or None
    problem = _usage_error(args, token)
    if problem is not None:
        return fail(problem)
    try:
        verifier = _control_verifier(args)
    except ValueError as exc:
        return fail(str(exc))
    return serve(args.host, args.port, args.db, args.retention_days, token, verifier,
                 metrics_retention_days=args.metrics_retention_days)
