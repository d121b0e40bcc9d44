"""Where glidein time goes, per entry or site and phase, and the ranked hints: the one code path of
``gwtrace analyze`` (printed by ``gwtrace.cli.analyze``) and the analysis pages (``server/analysis.py``).

The phases, failing scripts and trends per site come from one pass over the glideins (records or
store summaries), read in parts side by side (``fold``) when the store holds many.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from gwtrace.gcpause import gc_paused
from .fold import Part, fold
from .hints import Hint, HintInputs, Thresholds, ranked
from .stats import PhaseCells, ScriptCells, TrendCells


def report_of(items: Iterable[Any], by: str = "entry") -> Dict[str, Any]:
    """The phases per ``by`` group, the scripts by site and the trends per site and day (records or summaries)."""
    return _one_pass(items, by, Thresholds(), full=True)[0]


def analysis_body(items: Iterable[Any], by: str = "entry", thresholds: Optional[Thresholds] = None,
                  hints_only: bool = False) -> Dict[str, Any]:
    """What ``gwtrace analyze [--hints] --format json`` prints: the one code path the web pages use too."""
    report, found, _ = _one_pass(items, by, thresholds or Thresholds(), full=not hints_only)
    return {**report, "hints": [h.to_dict() for h in found]}


def _one_pass(items: Iterable[Any], by: str, thresholds: Thresholds, full: bool
              ) -> Tuple[Dict[str, Any], List[Hint], Dict[str, Any]]:
    """The report (when ``full``), the ranked hints and the phase lengths, in one pass over the glideins
    (summaries, or records summarised on the way)."""
    return folded([lambda: items], by, thresholds, full)


def folded(parts: List[Part], by: str, thresholds: Thresholds, full: bool
            ) -> Tuple[Dict[str, Any], List[Hint], Dict[str, Any]]:
    """``_one_pass`` over the parts of a period, read side by side (``fold``) and merged in order."""
    with gc_paused():
        accs = fold(parts, lambda: (HintInputs(), PhaseCells(by), ScriptCells(), TrendCells()) if full
                    else (HintInputs(),))
    inputs = accs[0]
    if not full:
        return {}, ranked(inputs, thresholds), {}
    _, phase_cells, script_cells, trend_cells = accs
    report = {"phases": phase_cells.rows(), "scripts": script_cells.rows(), "trends": trend_cells.rows()}
    return report, ranked(inputs, thresholds), phase_cells.lengths()
