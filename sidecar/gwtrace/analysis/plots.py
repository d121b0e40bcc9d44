"""The analysis as pictures, drawn by matplotlib: ``gwtrace analyze --plot DIR`` and the ``/analysis`` page.

Three charts, SVG (or PNG with ``--plot-format png``): where glidein time goes
per entry (stacked bars of canonical hours per phase), the distribution of
each phase's length (histograms on a log scale), and each site's failure rate
per day. The same library and rules as ``gwtrace account --plot``
(``factory/account_plot.py``): imported only when asked, one clear line
without it.

One function draws each chart into a file or a file-like object, so the CLI
(files in DIR) and the server (SVG answers) draw exactly the same picture.
The server passes a ``ChartLinks`` that names, for each bar, histogram bin and
failure-rate point, the URL of the glideins behind it: matplotlib writes it
as an SVG hyperlink on that mark (``set_url``). The CLI passes none: its files
have no server to link to.
"""

from __future__ import annotations

import math
from collections import defaultdict
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Callable, Dict, Iterator, List, Optional, Tuple, Union

from gwtrace.factory.account_plot import pyplot, label, plain_text
from .phases import phases
from .stats import ORDER, QUEUED
from .summary import PHASES

COLOURS = ("#2e7d32", "#9e9e9e", "#1565c0", "#ef6c00", "#6a1b9a", "#c62828", "#00838f", "#8d6e63", "#455a64",
           "#f9a825", "#ad1457")
Target = Union[str, Path, BinaryIO]


class ChartLinks:
    """Where each mark of a chart links to; this base links nowhere (files written by the CLI)."""

    def bar(self, by: str, group: str, kind: str) -> Optional[str]:
        """The glideins of ``group`` (an entry or site) that have time in phase ``kind``."""
        return None

    def bin(self, kind: str, low: float, high: float) -> Optional[str]:
        """The glideins whose time in phase ``kind`` (at least 1 s) is in [low, high)."""
        return None

    def point(self, site: str, day: int) -> Optional[str]:
        """The failed glideins of ``site`` on the UTC ``day`` (epoch of its midnight)."""
        return None


def kind_seconds(item: Any) -> Dict[str, float]:
    """Seconds per phase kind in one glidein (a record or its summary): what the histograms count (and what
    their links select)."""
    if isinstance(item, list):
        return {kind: seconds for kind, seconds, _ in item[PHASES]}
    out: Dict[str, float] = defaultdict(float)
    for phase in phases(item):
        out[phase.kind] += phase.seconds
    return out


def histogram_edges(largest: float) -> List[float]:
    """Bin edges, four per decade from 1 s, the last above ``largest`` (so every bin is [low, high))."""
    return [10 ** (x / 4) for x in range(0, int(4 * math.log10(max(largest, 1.0))) + 2)]


@contextmanager
def _figure(out: Target, fmt: str, *args: Any, **kwargs: Any) -> Iterator[Tuple[Any, Any]]:
    """A matplotlib figure (``plt.subplots(*args, **kwargs)``), laid out and
    saved to ``out`` when the block ends without error, closed in any case."""
    plt = pyplot()
    with plain_text():   # names from worker nodes are never markup (account_plot.plain_text)
        fig, axes = plt.subplots(*args, **kwargs)
        try:
            yield fig, axes
            fig.tight_layout()
            fig.savefig(out, format=fmt)
        finally:
            plt.close(fig)


def draw_phase_bars(report: Dict[str, Any], out: Target, fmt: str = "svg",
                    links: Optional[ChartLinks] = None) -> None:
    """Canonical hours per phase, one stacked bar per entry (or site): ``report["phases"]``."""
    links = links or ChartLinks()
    rows = report["phases"]
    group_key = next((k for k in ("entry", "site") if rows and k in rows[0]), "entry")
    groups = sorted({r[group_key] for r in rows})
    kinds = [k for k in ORDER if k not in QUEUED and any(r["phase"] == k for r in rows)]
    hours = {(r[group_key], r["phase"]): r["canonical_hours"] or 0.0 for r in rows}
    with _figure(out, fmt, figsize=(10, 0.4 * len(groups) + 2)) as (fig, ax):
        left = [0.0] * len(groups)
        rows_at = list(range(len(groups)))   # by position: two long names may share their shown label
        for colour, kind in zip(COLOURS, kinds):
            values = [hours.get((g, kind), 0.0) for g in groups]
            bars = ax.barh(rows_at, values, left=left, label=kind.replace("_", " "), color=colour)
            for rect, group, value in zip(bars, groups, values):
                if value > 0:
                    rect.set_url(links.bar(group_key, group, kind))
            left = [a + b for a, b in zip(left, values)]
        ax.set_yticks(rows_at)
        ax.set_yticklabels([label(g) for g in groups])
        ax.set_xlabel("canonical hours")
        ax.set_title(f"where glidein time goes, per {group_key}")
        ax.legend(fontsize="small", ncol=4, loc="lower right")


def draw_histograms(report: Dict[str, Any], out: Target, fmt: str = "svg",
                    links: Optional[ChartLinks] = None) -> None:
    """The length of each phase kind per glidein, one log-scale histogram per kind (``report["lengths"]``:
    ``stats.PhaseCells.lengths``, gathered in the analysis' one pass)."""
    links = links or ChartLinks()
    lengths = {kind: [max(v, 1.0) for v in values] for kind, values in report["lengths"].items()}
    kinds = [k for k in ORDER if lengths.get(k)]
    cols = 3
    rows = max(1, math.ceil(len(kinds) / cols))
    with _figure(out, fmt, rows, cols, figsize=(12, 2.6 * rows), squeeze=False) as (fig, axes):
        for ax, kind in zip([a for row in axes for a in row], kinds):
            values = lengths[kind]
            bins = histogram_edges(max(values))
            counts, _, patches = ax.hist(values, bins=bins, color="#1565c0")
            for patch, count, low, high in zip(patches, counts, bins, bins[1:]):
                if count:
                    patch.set_url(links.bin(kind, low, high))
            ax.set_xscale("log")
            ax.set_title(f"{kind.replace('_', ' ')} (n={len(values)})", fontsize="small")
            ax.set_xlabel("seconds", fontsize="small")
        for ax in [a for row in axes for a in row][len(kinds):]:
            ax.axis("off")
        fig.suptitle("length of each phase per glidein")


def draw_failure_rates(report: Dict[str, Any], out: Target, fmt: str = "svg",
                       links: Optional[ChartLinks] = None) -> None:
    """Each site's share of failed glideins per UTC day (``report["trends"]``); a point per day."""
    links = links or ChartLinks()
    trend_rows = report["trends"]
    with _figure(out, fmt, figsize=(10, 4)) as (fig, ax):
        for colour, site in zip(COLOURS * 4, trend_rows):
            days = [datetime.fromtimestamp(d["day"], tz=timezone.utc) for d in site["days"]]
            rates = [100 * d["failure_rate"] for d in site["days"]]
            ax.plot(days, rates, color=colour, label=label(site["site"]) + (" (worse)" if site["worse"] else ""))
            points = ax.scatter(days, rates, color=colour, s=30, zorder=3)
            urls = [links.point(site["site"], d["day"]) if d["failed"] else None for d in site["days"]]
            if any(urls):
                points.set_urls(urls)
        ax.set_ylabel("failed glideins, %")
        ax.set_title("failure rate per site and day")
        if trend_rows:
            ax.legend(fontsize="small", ncol=4)
        fig.autofmt_xdate()


#: chart name (its file name without the suffix, and its server path) -> the function drawing it
CHARTS: Dict[str, Callable[..., None]] = {"phases_by_group": draw_phase_bars, "phase_lengths": draw_histograms,
                                          "failure_rate_by_site": draw_failure_rates}


def plot_all(report: Dict[str, Any], directory: str, fmt: str = "svg") -> List[str]:
    """Write the three charts into ``directory`` (created if needed); return their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    pyplot()  # one clear error before any directory is filled
    paths = []
    for name, draw in CHARTS.items():
        path = out / f"{name}.{fmt}"
        draw(report, str(path), fmt)
        paths.append(str(path))
    return paths
