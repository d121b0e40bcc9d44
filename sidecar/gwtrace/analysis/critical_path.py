"""The critical path of a trace, and each operation's self-time.

The critical path is the chain of work that set the trace's length: make any
piece of it shorter and the trace ends sooner. It is found as Jaeger's UI
finds it: start at the root's end and walk back in time; at each point the
span that was "holding up" the parent is the child that finished last before
that point; its stretch is followed into its own children the same way, the
parent owns the gaps between children, and the walk continues from the
child's start. Children are first clipped to their parent (clock skew between
hosts makes a child start before or end after its parent), a child wholly
outside its parent is left out, and spans whose parent is not in the trace
hang under the root, so a partial trace still has a path.

Self-time is what a span spent not covered by any of its (clipped) children:
the time its own code ran, or waited on something it did not trace.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

Span = Dict[str, Any]


@dataclass
class PathSegment:
    """A stretch of the critical path [start_ns, end_ns) spent in one span (not in its children)."""

    span_id: str
    start_ns: int
    end_ns: int


class _Tree:
    """Spans by id, children by parent, clipped bounds: what both walks need."""

    def __init__(self, spans: List[Span]) -> None:
        self.spans = {s["span_id"]: s for s in spans}
        parentless = [s for s in spans if (s.get("parent_span_id") or "") not in self.spans
                      or s.get("parent_span_id") == s["span_id"]]
        self.root: Optional[Span] = min(parentless, key=lambda s: (s["start_ns"], -s["end_ns"]), default=None)
        self.children: Dict[str, List[str]] = defaultdict(list)
        self.bounds: Dict[str, Tuple[int, int]] = {}
        if self.root is None:
            return
        for span in spans:
            if span is self.root:
                continue
            parent = span.get("parent_span_id") or ""
            if parent not in self.spans or parent == span["span_id"]:
                parent = self.root["span_id"]          # orphans (and other roots) hang under the root
            self.children[parent].append(span["span_id"])
        self._clip(self.root["span_id"], self.root["start_ns"], self.root["end_ns"])

    def _clip(self, span_id: str, lo: int, hi: int) -> None:
        """Bounds of every span inside its parent's (iteratively: traces can be deep)."""
        stack = [(span_id, lo, hi)]
        while stack:
            sid, lo, hi = stack.pop()
            span = self.spans[sid]
            start, end = max(span["start_ns"], lo), min(max(span["end_ns"], span["start_ns"]), hi)
            if end < start:
                continue                                 # wholly outside its parent: not on any path
            self.bounds[sid] = (start, end)
            stack.extend((child, start, end) for child in self.children.get(sid, ()))

    def kids(self, span_id: str) -> List[str]:
        return [c for c in self.children.get(span_id, ()) if c in self.bounds]


def critical_path(spans: List[Span]) -> List[PathSegment]:
    """The critical path, in time order; [] for an empty trace."""
    tree = _Tree(spans)
    if tree.root is None:
        return []
    out: List[PathSegment] = []
    # (span, the point in time the walk comes back from): explicit stack instead of recursion
    stack: List[Tuple[str, int]] = [(tree.root["span_id"], tree.bounds[tree.root["span_id"]][1])]
    while stack:
        sid, cursor = stack.pop()
        start, _ = tree.bounds[sid]
        pending = sorted(tree.kids(sid), key=lambda c: tree.bounds[c][1], reverse=True)
        walked: List[Tuple[str, int]] = []
        for child in pending:
            c_start, c_end = tree.bounds[child]
            if c_end > cursor or c_start < start:
                continue                                 # overlaps the part already on the path
            if cursor > c_end:
                out.append(PathSegment(sid, c_end, cursor))
            walked.append((child, c_end))
            cursor = c_start
        if cursor > start:
            out.append(PathSegment(sid, start, cursor))
        stack.extend(walked)
    out.sort(key=lambda seg: (seg.start_ns, seg.end_ns))
    return out


def path_share(spans: List[Span]) -> Dict[str, int]:
    """Nanoseconds of the critical path spent in each span (its own part, children excluded)."""
    share: Dict[str, int] = defaultdict(int)
    for seg in critical_path(spans):
        share[seg.span_id] += seg.end_ns - seg.start_ns
    return dict(share)


def on_path(spans: List[Span]) -> set:
    """The spans the critical path passes through: those with a share, and their ancestors."""
    tree = _Tree(spans)
    marked = set()
    for sid in path_share(spans):
        while sid and sid not in marked and sid in tree.spans:
            marked.add(sid)
            parent = tree.spans[sid].get("parent_span_id") or ""
            sid = parent if parent in tree.spans else (tree.root["span_id"] if tree.root else "")
    return marked


def self_times(spans: List[Span]) -> Dict[str, int]:
    """Per span: its (clipped) duration not covered by the union of its children."""
    tree = _Tree(spans)
    out = {}
    for sid, (start, end) in tree.bounds.items():
        covered, reach = 0, start
        for c_start, c_end in sorted(tree.bounds[c] for c in tree.kids(sid)):
            c_start = max(c_start, reach)
            if c_end > c_start:
                covered += c_end - c_start
                reach = c_end
        out[sid] = (end - start) - covered
    return out


def self_time_by_operation(spans: List[Span]) -> List[Tuple[str, int, int]]:
    """(operation, total self-time ns, spans) per span name, largest first."""
    names = {s["span_id"]: s["name"] for s in spans}
    totals: Dict[str, List[int]] = defaultdict(lambda: [0, 0])
    for sid, value in self_times(spans).items():
        acc = totals[names[sid]]
        acc[0] += value
        acc[1] += 1
    return sorted(((name, t, n) for name, (t, n) in totals.items()), key=lambda row: (-row[1], row[0]))
