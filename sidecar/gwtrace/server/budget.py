"""How much memory the requests being decoded may take together.

Why: each request is bounded on its own (``store.limits.MAX_DECODE_COST``), but waitress runs
several at once, and four costly requests in flight were what took the server to 8 GB.  A request
holds its estimated cost (``store.limits.decode_cost``) from before it is decoded until it is
stored; one that does not fit within a short wait is answered 503 with ``Retry-After``, which
exporters retry, instead of being decoded.  Cheap requests (a real batch costs a few MB) never
wait on each other.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

#: what the requests being decoded may take together (the server's target is 300 MB in all)
DEFAULT_DECODE_BUDGET = 128 << 20
#: how long a request waits for room before it is answered 503
DEFAULT_WAIT_SECONDS = 0.25


class BudgetExhausted(Exception):
    """No room for this request now; it should be sent again later."""


class DecodeBudget:
    """A counting semaphore of bytes, with a bounded wait."""

    def __init__(self, total: int = DEFAULT_DECODE_BUDGET, wait_s: float = DEFAULT_WAIT_SECONDS) -> None:
        self.total, self.wait_s = total, wait_s
        self._held = 0
        self._cv = threading.Condition()

    @contextmanager
    def hold(self, cost: int) -> Iterator[None]:
        """Hold ``cost`` bytes for the block (at most the whole budget); raise BudgetExhausted when
        they are not free within ``wait_s``."""
        cost = min(cost, self.total)
        deadline = time.monotonic() + self.wait_s
        with self._cv:
            while self._held + cost > self.total:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BudgetExhausted(f"{self._held >> 20} MiB of requests are being decoded")
                self._cv.wait(left)
            self._held += cost
        try:
            yield
        finally:
            with self._cv:
                self._held -= cost
                self._cv.notify_all()

    @property
    def held(self) -> int:
        return self._held
