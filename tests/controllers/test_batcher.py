"""Batcher windows in virtual time: 1 s idle, 10 s max (Karpenter defaults)."""

from __future__ import annotations

from joiner.controllers.provisioning.batcher import Batcher
from joiner.sim.clock import SimClock


def _setup():
    clock = SimClock()
    flushes: list[float] = []
    batcher = Batcher(clock, lambda: flushes.append(clock.now()))
    return clock, batcher, flushes


def test_single_trigger_flushes_after_idle():
    clock, batcher, flushes = _setup()
    batcher.trigger()
    clock.run_until(30)
    assert flushes == [1.0]


def test_triggers_within_idle_extend_the_window():
    clock, batcher, flushes = _setup()
    for t in (0.0, 0.5, 1.2, 2.0):
        clock.at(t, batcher.trigger)
    clock.run_until(30)
    assert flushes == [3.0]


def test_continuous_triggers_are_cut_at_max_duration():
    clock, batcher, flushes = _setup()
    for i in range(40):
        clock.at(i * 0.5, batcher.trigger)
    clock.run_until(60)
    # Window opens at 0 and is forced shut at 10; the next opens at 10.5 and shuts at 20.5;
    # the last trigger is at 19.5, so the third window (opened at 21? no trigger) never opens.
    assert flushes == [10.0, 20.5]


def test_trigger_after_flush_opens_new_window():
    clock, batcher, flushes = _setup()
    clock.at(0, batcher.trigger)
    clock.at(5, batcher.trigger)
    clock.run_until(30)
    assert flushes == [1.0, 6.0]
