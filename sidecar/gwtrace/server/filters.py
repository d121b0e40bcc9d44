"""The filters the accounting and analysis pages share: period, bucket, grouping, site/entry/frontend.

Kept apart from both pages' modules so that each imports it, and neither the
other (the glidein list behind an analysis chart uses the analysis's filters).
"""

from __future__ import annotations

import argparse
from typing import Any, Dict

from flask import request

from ..factory.account import BUCKETS
from ..factory.selection import parse_time

GROUPS = ("site", "entry", "frontend")


class BadQuery(ValueError):
    """A query parameter that cannot be used; its message is the answer's one line."""


def query() -> Dict[str, Any]:
    """The page's parameters: since/until (epoch or ISO-8601), bucket, by, site/entry/frontend filters."""
    args = request.args
    out: Dict[str, Any] = {"bucket": args.get("bucket") or "1d", "by": args.get("by") or None}
    if out["bucket"] not in BUCKETS:
        raise BadQuery(f"bucket must be one of {', '.join(sorted(BUCKETS))}")
    if out["by"] is not None and out["by"] not in GROUPS:
        raise BadQuery(f"by must be one of {', '.join(GROUPS)}")
    for key in ("since", "until"):
        try:
            out[key] = parse_time(args[key]) if args.get(key) else None
        except argparse.ArgumentTypeError as exc:
            raise BadQuery(str(exc)) from None
    for key in GROUPS:
        out[key] = args.get(key) or None
    return out
