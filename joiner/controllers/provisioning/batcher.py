"""The provisioning batcher: coalesce pod triggers into one scheduling pass.

Karpenter ``provisioning/batcher.go``: the window closes once no trigger has arrived for
``idle_s`` (``BATCH_IDLE_DURATION``, 1 s) or ``max_s`` after it opened
(``BATCH_MAX_DURATION``, 10 s), whichever comes first.
"""

from __future__ import annotations

from collections.abc import Callable

from joiner.api.clock import Clock


class Batcher:
    """Calls ``flush`` once per batch window; ``trigger`` opens or extends the window."""

    def __init__(
        self, clock: Clock, flush: Callable[[], None], *, idle_s: float = 1.0, max_s: float = 10.0
    ) -> None:
        self._clock = clock
        self._flush = flush
        self.idle_s = idle_s
        self.max_s = max_s
        self._opened_at: float | None = None
        self._last_trigger: float = 0.0
        self._check_pending = False

    @property
    def open(self) -> bool:
        """True while a window is collecting triggers."""
        return self._opened_at is not None

    def trigger(self) -> None:
        """Note a reason to provision (a pod became pending, a node went away)."""
        now = self._clock.now()
        self._last_trigger = now
        if self._opened_at is None:
            self._opened_at = now
            self._schedule_check(now + self.idle_s)

    def _schedule_check(self, at: float) -> None:
        if self._check_pending:
            return
        self._check_pending = True
        self._clock.after(max(0.0, at - self._clock.now()), self._check, label="batcher")

    def _check(self) -> None:
        self._check_pending = False
        if self._opened_at is None:
            return
        now = self._clock.now()
        deadline = min(self._last_trigger + self.idle_s, self._opened_at + self.max_s)
        if now + 1e-9 < deadline:
            self._schedule_check(deadline)
            return
        self._opened_at = None
        self._flush()
