"""Virtual time: a discrete-event loop ordered by (time, sequence number).

``SimClock`` implements the ``Clock`` port. Callbacks scheduled for the same instant run in
the order they were scheduled, so a run is reproducible to the byte.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import NamedTuple


class _Event(NamedTuple):
    """A scheduled callback; the queue orders events by (``at_s``, ``seq``) as tuples (the
    sequence number is unique, so the callback is never compared)."""

    at_s: float
    seq: int
    callback: Callable[[], None]
    label: str = ""


class SimClock:
    """Virtual clock plus event queue; ``run_until`` advances time by running events."""

    def __init__(self) -> None:
        self._now = 0.0
        self._seq = 0
        self._queue: list[_Event] = []
        self.events_run = 0

    def now(self) -> float:
        """Current virtual time in seconds."""
        return self._now

    def after(self, delay_s: float, callback: Callable[[], None], *, label: str = "") -> None:
        """Schedule ``callback`` at ``now + delay_s``.

        Raises:
            ValueError: ``delay_s`` is negative.
        """
        if delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {delay_s}")
        self._seq += 1
        heapq.heappush(self._queue, _Event(self._now + delay_s, self._seq, callback, label))

    def at(self, time_s: float, callback: Callable[[], None], *, label: str = "") -> None:
        """Schedule ``callback`` at absolute time ``time_s`` (not in the past)."""
        self.after(max(0.0, time_s - self._now), callback, label=label)

    def run_until(self, end_s: float, *, progress: Callable[[float], None] | None = None) -> None:
        """Run every event with time <= ``end_s``, then set the clock to ``end_s``.

        ``progress`` is called with the virtual time every 1,000 events.
        """
        while self._queue and self._queue[0].at_s <= end_s:
            event = heapq.heappop(self._queue)
            self._now = event.at_s
            event.callback()
            self.events_run += 1
            if progress is not None and self.events_run % 1000 == 0:
                progress(self._now)
        self._now = end_s
