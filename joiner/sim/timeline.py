"""The simulation's timeline: every interruption-related fact with its virtual time, for
``summary.json`` (``timeline`` and the ``interruptions`` figures derived from it)."""

from __future__ import annotations

from dataclasses import dataclass

from joiner.api.clock import Clock


@dataclass(frozen=True, slots=True)
class Entry:
    """One fact: what happened, when (seconds of run time), to which node or pod."""

    at_s: float
    kind: str
    node: str | None
    pod: str | None
    detail: str


class SimTimeline:
    """Implements the ``Timeline`` port on the virtual clock."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.entries: list[Entry] = []

    def record(
        self, kind: str, *, node: str | None = None, pod: str | None = None, detail: str = ""
    ) -> None:
        """Append an entry at the current virtual time."""
        self.entries.append(Entry(self._clock.now(), kind, node, pod, detail))
