"""The Clock port: the only source of time for controllers.

``SimClock`` (``joiner.sim``) advances virtual time; a wall clock serves controller mode.
Controllers never read ``time.time()`` themselves, so a seeded simulation is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    """Time source and timer service, in seconds since the run started."""

    def now(self) -> float:
        """Current time in seconds."""
        ...

    def after(self, delay_s: float, callback: Callable[[], None], *, label: str = "") -> None:
        """Run ``callback`` once, ``delay_s`` seconds from now (0: after the current event)."""
        ...
