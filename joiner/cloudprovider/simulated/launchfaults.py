"""Injected launch failures: FIS ``aws:ec2:api-insufficient-instance-capacity-error`` and
the launch side of ``aws:network:disrupt-connectivity`` (``faults.experiment``)."""

from __future__ import annotations

import random


class LaunchFailures:
    """Rules (zones or None for every zone, percentage, until) that fail launches with ICE."""

    def __init__(self) -> None:
        self._rules: list[tuple[frozenset[str] | None, int, float]] = []

    def add(self, zones: frozenset[str] | None, percentage: int, until_s: float) -> None:
        """Until ``until_s``, ``percentage`` % of launches fail in ``zones`` (None: every
        zone; an empty set blocks nothing)."""
        if zones is not None and not zones:
            return
        self._rules.append((zones, percentage, until_s))

    def blocked(self, now_s: float, rng: random.Random) -> frozenset[str] | None:
        """Zones where this launch fails (empty set: all zones), or None when none does; one
        draw from ``rng`` per rule still in force."""
        zones: set[str] = set()
        hit = False
        for rule_zones, pct, until in self._rules:
            if until <= now_s or rng.uniform(0, 100) >= pct:
                continue
            if rule_zones is None:
                return frozenset()
            hit = True
            zones |= rule_zones
        return frozenset(zones) if hit else None
