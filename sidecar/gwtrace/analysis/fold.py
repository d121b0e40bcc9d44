"""Folding glidein summaries through accumulators, the parts of a period side by side.

Why: one pass over a pool's 100 000 glideins is ~60 µs a glidein of Python
(decoding the summary, then the statistics and the hint inputs), several
seconds on one core, and the factory machines that run ``gwtrace analyze``
have more than one. The store hands out the period in parts by start (each
part read through its own SQLite connection); each part after the first is
folded in a forked child, which sends back its accumulators (pickled: a few
arrays and counters per group, not the summaries), and they are merged in
the order of the parts, so the answer is the one a single pass gives
(``Accumulator.merge``; a test holds them equal).

Fork, not a process pool: the child needs nothing but the part's reader and
the accumulators' classes, starts in about a millisecond and shares the
parent's imports. Only where ``os.fork`` exists and the caller has no threads
(the CLI; the web server stays on one pass).
"""

from __future__ import annotations

import os
import pickle
import signal
from typing import Any, Callable, Iterable, List, Sequence, Tuple

from .summary import Accumulator, as_summary

Part = Callable[[], Iterable[Any]]   # opens its own reader, yields records or summaries
Make = Callable[[], Sequence[Accumulator]]


def default_workers() -> int:
    """How many parts to fold at once: the usable CPUs, at most 4 (past that, merging eats the gain)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    return max(1, min(4, usable))


def run_part(part: Part, make: Make) -> Sequence[Accumulator]:
    """One part through fresh accumulators."""
    accs = make()
    for item in part():
        s = as_summary(item)
        for acc in accs:
            acc.add(s)
    return accs


def fold(parts: Sequence[Part], make: Make) -> Sequence[Accumulator]:
    """The accumulators ``make`` gives, fed every part in order: the first here, the others in children."""
    if len(parts) == 1 or not hasattr(os, "fork"):
        accs = run_part(parts[0], make)
        for part in parts[1:]:
            _merge(accs, run_part(part, make))
        return accs
    children: List[Tuple[int, int]] = []
    try:
        for part in parts[1:]:
            children.append(_spawn(part, make))
        accs = run_part(parts[0], make)
        while children:
            _merge(accs, _collect(*children.pop(0)))
        return accs
    finally:
        for pid, fd in children:   # only after an error here: the rest are not waited for
            os.close(fd)
            _reap(pid, kill=True)


def _merge(accs: Sequence[Accumulator], later: Sequence[Accumulator]) -> None:
    for mine, theirs in zip(accs, later):
        mine.merge(theirs)


def _spawn(part: Part, make: Make) -> Tuple[int, int]:
    """A child folding ``part``; its result comes back through a pipe (pid, read end)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: fold, send, leave without running the parent's exit handlers
        status = 0
        try:
            os.close(read)
            try:
                payload = pickle.dumps(("ok", run_part(part, make)), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # noqa: B902 - whatever it was, the parent reports it
                payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
            with os.fdopen(write, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: B902 - the parent sees a short read and says so
            status = 1
        finally:
            os._exit(status)
    os.close(write)
    return pid, read


def _collect(pid: int, fd: int) -> Sequence[Accumulator]:
    """The child's accumulators, or its error raised here."""
    with os.fdopen(fd, "rb") as pipe:
        payload = pipe.read()
    _reap(pid, kill=False)
    try:
        kind, body = pickle.loads(payload)
    except Exception as exc:
        raise RuntimeError(f"a part of the analysis (process {pid}) ended without its result") from exc
    if kind != "ok":
        raise RuntimeError(f"a part of the analysis failed: {body}")
    return body


def _reap(pid: int, kill: bool) -> None:
    if kill:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
