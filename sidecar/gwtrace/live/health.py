"""Live site health: each site's failure rate in the last hour against its own baseline.

Why against itself: sites differ for good (a site whose glideins fail 20% of
the time every day is a known problem, not news), so a red light means *this
site got worse now*. The figures come from the glidein records the store
keeps (``store/glideins.py``: backfilled from the factory's files or made
from traces), keyed by when each glidein ended; a failed glidein is one whose
record says ``status == "ERROR"`` (a validation script failed, or the
glidein's span ended in error).

The rule (``Rule``, every threshold configurable on ``gwtrace now``):

* recent   = glideins that ended in the last ``window_s`` (default 3600 s);
* baseline = those that ended in the ``baseline_days`` (default 7) before it;
* red when the recent window has at least ``min_failures`` failures (3) and its
  failure rate is at least ``factor`` (2) times the baseline rate (never less
  than ``floor``, 2%, so that a site with a clean week is not red on one
  failure) *and* at least ``min_jump`` (0.10) above it.

A site with no baseline is compared with ``floor`` alone (and says so).

A site that has been failing all along gets an amber light (``light``:
red, amber or green), whatever its last hour: a failure rate over the window
and its baseline together of at least ``chronic`` (default 0.25), with at
least ``min_failures`` failures. Not red, which stays "worse now" (what
``--alerts`` wakes someone for), but not green either: without it, a site
losing 44% of its glideins every day was shown green.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterable, List, Tuple

from gwtrace.store.glideins import ROW_COLUMNS

_SITE, _ENDED, _STATUS = (ROW_COLUMNS.index(c) for c in ("site", "ended", "status"))
UNKNOWN_SITE = "(unknown site)"


@dataclass
class Rule:
    """When a site's light turns red (module docstring)."""

    window_s: float = 3600.0
    baseline_days: float = 7.0
    factor: float = 2.0
    min_jump: float = 0.10
    min_failures: int = 3
    floor: float = 0.02
    chronic: float = 0.25

    @property
    def span_s(self) -> float:
        """How far back the records are read."""
        return self.window_s + self.baseline_days * 86400


def _rate(failed: int, total: int) -> float:
    return failed / total if total else 0.0


def site_health(rows: Iterable[Tuple[Any, ...]], now: float, rule: Rule,
                columns: Tuple[int, int, int] = (_SITE, _ENDED, _STATUS)) -> List[Dict[str, Any]]:
    """One dict per site with glideins in the window or the baseline, red ones first, then amber, then by
    name."""
    cells: Dict[str, List[int]] = {}      # site -> [recent, recent failed, baseline, baseline failed]
    recent_from, baseline_from = now - rule.window_s, now - rule.span_s
    site_at, ended_at, status_at = columns
    for row in rows:
        ended = row[ended_at]
        if ended is None or ended < baseline_from or ended >= now:
            continue
        cell = cells.setdefault(row[site_at] or UNKNOWN_SITE, [0, 0, 0, 0])
        at = 0 if ended >= recent_from else 2
        cell[at] += 1
        cell[at + 1] += row[status_at] == "ERROR"
    out = []
    for site, (recent, failed, base, base_failed) in cells.items():
        rate, base_rate = _rate(failed, recent), _rate(base_failed, base)
        bar = rule.factor * max(base_rate, rule.floor)
        worse = failed >= rule.min_failures and rate >= bar and rate - base_rate >= rule.min_jump
        all_failed, all_glideins = failed + base_failed, recent + base
        all_rate = _rate(all_failed, all_glideins)
        chronic = all_failed >= rule.min_failures and all_rate >= rule.chronic
        red = worse
        why = ""
        if worse:
            against = f"{base_rate:.0%} over the previous {rule.baseline_days:g} days" if base else \
                f"no baseline (floor {rule.floor:.0%})"
            why = f"{failed}/{recent} glideins failed in the last {rule.window_s / 3600:g} h ({rate:.0%}) " \
                  f"against {against}"
        elif chronic:
            why = f"{all_failed}/{all_glideins} glideins failed over the last {rule.span_s / 86400:.1f} days " \
                  f"({all_rate:.0%}; amber from {rule.chronic:.0%})"
        out.append({"site": site, "red": red, "amber": chronic and not red,
                    "light": "red" if red else "amber" if chronic else "green", "why": why,
                    "recent_glideins": recent, "recent_failed": failed,
                    "recent_rate": round(rate, 3), "baseline_glideins": base, "baseline_failed": base_failed,
                    "baseline_rate": round(base_rate, 3)})
    out.sort(key=lambda s: (not s["red"], not s["amber"], s["site"]))
    return out


def health(store: Any, now: float, rule: Rule) -> Dict[str, Any]:
    """The sites' lights from a store's glidein records, with the rule that set them."""
    rows = store.glidein_outcomes(int(now - rule.span_s), int(now) + 1)
    sites = site_health(rows, now, rule, columns=(0, 1, 2))
    return {"rule": asdict(rule), "sites": sites, "red": [s["site"] for s in sites if s["red"]],
            "amber": [s["site"] for s in sites if s["amber"]]}
