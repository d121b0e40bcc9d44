"""Durations as people read them: the one home of the three ways gwtrace prints a length of time.

Each way is a ladder of (below this, write it so) steps, so that a new unit is a row and
the three cannot drift into copies of one another:

- ``span_duration``: a span's length from nanoseconds (``gwtrace show``), precise down to microseconds;
- ``wait_duration``: a job's waits and lifetimes in words (``gwtrace job``, ``--why``), coarse above minutes;
- ``clock_duration``: compact ``1h02m`` / ``3m05s`` / ``7s`` for the columns of ``gwtrace now``.

Imports nothing of gwtrace: every layer may use it.
"""

from typing import Callable, Optional, Sequence, Tuple

Ladder = Sequence[Tuple[float, Callable[[int], str]]]


def _climb(value: int, ladder: Ladder, above: Callable[[int], str]) -> str:
    """The first step whose bound ``value`` is below, or ``above`` past the last one."""
    for bound, text in ladder:
        if value < bound:
            return text(value)
    return above(value)


def _minutes_hours(ns: int) -> str:
    minutes, seconds = divmod(ns / 1e9, 60)
    if minutes < 60:
        return f"{int(minutes)}m{seconds:04.1f}s"
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}h{minutes:02d}m{seconds:02.0f}s"


_SPAN: Ladder = ((1_000_000, lambda ns: f"{ns / 1000:.0f} us"), (1_000_000_000, lambda ns: f"{ns / 1e6:.1f} ms"),
                 (60_000_000_000, lambda ns: f"{ns / 1e9:.2f} s"))


def span_duration(ns: int) -> str:
    """A span's length: ``us`` below a millisecond, ``ms``, ``s`` below a minute, then ``1m02.5s``, ``1h02m03s``;
    ``?`` for a negative length (clocks that disagree)."""
    if ns < 0:
        return "?"
    return _climb(ns, _SPAN, _minutes_hours)


_WAIT: Ladder = ((120, lambda s: f"{s} s"), (7200, lambda s: f"{s // 60} min"),
                 (172800, lambda s: f"{s // 3600} h {s % 3600 // 60:02d} min"))


def wait_duration(seconds: Optional[float]) -> str:
    """A wait in words: ``ms`` below a second (a sub-second step is not "0 s"), tenths below ten seconds,
    then whole seconds, minutes, hours and minutes, days and hours; ``?`` when unknown."""
    if seconds is None:
        return "?"
    if 0 < seconds < 1:
        return f"{max(1, round(seconds * 1000))} ms"
    if seconds < 10 and seconds != int(seconds):
        return f"{seconds:.1f} s"
    return _climb(int(seconds), _WAIT, lambda s: f"{s // 86400} d {s % 86400 // 3600} h")


_CLOCK: Ladder = ((60, lambda s: f"{s}s"), (3600, lambda s: f"{s // 60}m{s % 60:02d}s"))


def clock_duration(seconds: Optional[float]) -> str:
    """A compact length for a column: ``7s``, ``3m05s``, ``1h02m``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    return _climb(int(seconds), _CLOCK, lambda s: f"{s // 3600}h{s % 3600 // 60:02d}m")
