"""``/ui/api/glidein-records``: the glideins behind a number, a page at a time, sorted and filtered.

Why server-side: the page listed the first 5 000 of a pool's glideins and
said "5000+"; an operator looking for one entry's held or failed glideins
of last Tuesday had no way to them. Now the server counts, sorts and cuts
(``store.glidein_reads.page``: SQLite does it on the narrow columns and decodes
the page's records only), and the page asks for one page at a time.

Query parameters, beside the accounting ones (``since``, ``until``,
``site``, ``entry``, ``frontend``): ``status`` (OK, ERROR...),
``incomplete`` (1/0), ``category`` (with time in it), ``sort`` (a column of
``SORTS``), ``order`` (asc/desc), ``page`` (from 1) and ``per_page`` (at most
``MAX_PER_PAGE``). The analysis links' filters (``phase``, ``failed``,
``day``, ``script_failed``: ``analysis.record_filter``) need each record's
phases: with them the records are read one at a time and only the page's
are kept (``heapq``), so memory stays that of a page.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Dict, List, Optional, Tuple

from flask import request

from ..factory.canonical import CATEGORIES
from ..store.glidein_reads import SORTS

PER_PAGE = 100
MAX_PER_PAGE = 1000


class BadPage(ValueError):
    """A paging parameter that cannot be used; its message is the answer's one line."""


def paging() -> Dict[str, Any]:
    """``sort``, ``order``, ``page``, ``per_page``, ``status``, ``incomplete`` from the request."""
    args = request.args
    sort = args.get("sort") or "started"
    if sort not in SORTS:
        raise BadPage(f"sort must be one of {', '.join(SORTS)}")
    order = args.get("order") or "asc"
    if order not in ("asc", "desc"):
        raise BadPage("order must be asc or desc")
    try:
        number = int(args.get("page") or 1)
        per_page = int(args.get("per_page") or args.get("limit") or PER_PAGE)
    except ValueError:
        raise BadPage("page and per_page must be whole numbers") from None
    if number < 1 or not 1 <= per_page <= MAX_PER_PAGE or number * per_page > 10**9:
        raise BadPage(f"page must be at least 1 and per_page from 1 to {MAX_PER_PAGE}")
    incomplete = args.get("incomplete")
    if incomplete not in (None, "", "0", "1"):
        raise BadPage("incomplete must be 1 or 0")
    status = args.get("status") or None
    if status is not None and (len(status) > 40 or not status.replace("_", "").isalnum()):
        raise BadPage("status must be a word such as OK or ERROR")
    return {"sort": sort, "descending": order == "desc", "page": number, "per_page": per_page, "status": status,
            "incomplete": None if not incomplete else incomplete == "1"}


def _sort_value(rec: Dict[str, Any], sort: str) -> Any:
    if sort in CATEGORIES or sort == "total":
        return (rec.get("canonical") or {}).get(sort, 0.0)
    return rec.get("cluster" if sort == "glidein" else sort)


def filtered_page(records: Any, keep: Callable[[Dict[str, Any]], Optional[float]], p: Dict[str, Any],
                  category: Optional[str]) -> Tuple[int, List[Tuple[Dict[str, Any], Optional[float]]]]:
    """(count, the page's (record, phase seconds)) of the records ``keep`` keeps, sorted as asked; only the
    records up to the page's end are held at any time."""
    wanted = p["page"] * p["per_page"]
    heap: List[Tuple[Any, ...]] = []
    total = 0
    sign = -1 if p["descending"] else 1
    for index, rec in enumerate(records):
        if category and not (rec.get("canonical") or {}).get(category):
            continue
        if p["status"] and rec.get("status") != p["status"]:
            continue
        if p["incomplete"] is not None and bool(rec.get("incomplete")) != p["incomplete"]:
            continue
        seconds = keep(rec)
        if seconds is None:
            continue
        total += 1
        value = _sort_value(rec, p["sort"])
        # unknown values last either way; ties in reading order; the heap keeps the ``wanted`` first
        key = (value is None, _Signed(value, sign), index)
        item = (_Reverse(key), rec, seconds)
        if len(heap) < wanted:
            heapq.heappush(heap, item)
        elif item[0] > heap[0][0]:
            heapq.heapreplace(heap, item)
    ordered = sorted(heap, key=lambda item: item[0].key)
    start = (p["page"] - 1) * p["per_page"]
    return total, [(rec, seconds) for _, rec, seconds in ordered[start:start + p["per_page"]]]


class _Signed:
    """A value compared ascending or descending (any type the records hold: numbers or text)."""

    __slots__ = ("value", "sign")

    def __init__(self, value: Any, sign: int) -> None:
        self.value, self.sign = value, sign

    def __lt__(self, other: "_Signed") -> bool:
        if self.value is None or other.value is None or self.value == other.value:
            return False
        try:
            less = self.value < other.value
        except TypeError:
            less = str(self.value) < str(other.value)
        return less if self.sign > 0 else not less

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Signed) and self.value == other.value


class _Reverse:
    """The heap keeps the smallest on top: reversed, it holds the ``wanted`` first keys."""

    __slots__ = ("key",)

    def __init__(self, key: Tuple[Any, ...]) -> None:
        self.key = key

    def __lt__(self, other: "_Reverse") -> bool:
        return other.key < self.key

    def __gt__(self, other: "_Reverse") -> bool:
        return self.key < other.key
