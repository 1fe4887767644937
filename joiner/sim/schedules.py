"""Scheduled scaling (``spec.schedules``): a minimum raised at times of day, as teams do for
known peaks with a CronJob that patches an HPA's ``minReplicas`` (or a Deployment's or a
CapacityBuffer's ``replicas``) before the peak and restores it after.

Each entry names a ``workload`` or a CapacityBuffer (``buffer``), a ``cron`` schedule (UTC,
as ``startTime``; robfig/cron rules, computed with croniter), ``minReplicas`` and a
``duration`` (a Go duration): from each fire time for ``duration`` the target's minimum is at
least ``minReplicas``. Overlapping windows of one target take the highest minimum. A window
that began before run time 0 and is still open then is in force from time 0. Everything is in
virtual time, so a run is deterministic.

What the minimum raises: an HPA-scaled workload's ``minReplicas`` (the scenario's ``hpa``
shorthand or a manifest HPA: the HPA scales up to it at once, as the HPA controller does on
the object's update; after the window it scales down by its usual rules); a workload with
fixed replicas or a trace: its replica count; a CapacityBuffer: its size (its
``computeReplicas`` result).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from joiner.api import cron
from joiner.api.errors import InputError
from joiner.sim.clock import SimClock
from joiner.sim.scenario_sections import FireTimes

if TYPE_CHECKING:
    from joiner.api.manifests import ManifestSet
    from joiner.sim.scenario_schema import ScheduleSpec


@dataclass(frozen=True)
class ScheduledMinimum:
    """One ``spec.schedules`` entry: ``kind`` ``workload`` or ``buffer``, ``target``
    (``namespace/name``), when (``fire_times``: seconds of run time, from before 0 when a
    window is still open at 0), ``min_replicas`` and ``duration_s``."""

    kind: str
    target: str
    schedule: str
    min_replicas: int
    duration_s: float
    fire_times: FireTimes


def fire_times(
    schedule: str, start: datetime, duration_s: float, run_s: float, *, field: str
) -> FireTimes:
    """The fire times of ``schedule`` (UTC) whose windows of ``duration_s`` overlap the run
    (run time 0 is ``start``; ``run_s`` long).

    Raises:
        InputError: not a cron schedule (naming ``field``).
    """
    from croniter import croniter

    text = cron.check_schedule(schedule, field=field)
    # Of the windows opened before the run, only the last fire's can matter (the windows of
    # one schedule merge, ``ScheduleRunner``), so iteration starts there: at most one fire
    # before run time 0, however long ``duration_s`` is.
    last = croniter(text, start).get_prev(datetime)
    first = last if last > start - timedelta(seconds=duration_s) else start
    return FireTimes(text, start, first, run_s)


class ScheduleRunner:
    """Plays the schedules on the clock; ``apply(kind, target, minimum)`` sets a target's
    minimum (0: none). A schedule's overlapping windows merge into one (each fire while it
    is open extends it), so open windows and clock events stay one per schedule however
    often it fires or however long its duration."""

    def __init__(
        self,
        schedules: tuple[ScheduledMinimum, ...],
        clock: SimClock,
        apply: Callable[[str, str, int], None],
    ) -> None:
        self._schedules = schedules
        self._clock = clock
        self._apply = apply
        self._open: dict[tuple[str, str], list[int]] = {}
        #: Per schedule (its index), when its open window closes.
        self._until: dict[int, float] = {}

    def start(self) -> None:
        """Schedule every window's opening (lazily: one pending fire per schedule)."""
        for i, s in enumerate(self._schedules):
            self._next(i, iter(s.fire_times))

    def _next(self, i: int, times: Iterator[float]) -> None:
        s = self._schedules[i]
        for at in times:
            if at + s.duration_s <= 0:
                continue  # closed before the run began
            self._clock.at(max(at, 0.0), partial(self._fire, i, at, times), label="schedule")
            return

    def _fire(self, i: int, at: float, times: Iterator[float]) -> None:
        s = self._schedules[i]
        until = at + s.duration_s
        if i in self._until:  # still open: the window now lasts until this fire's end
            self._until[i] = max(self._until[i], until)
        else:
            self._until[i] = until
            key = (s.kind, s.target)
            self._open.setdefault(key, []).append(s.min_replicas)
            self._apply(s.kind, s.target, max(self._open[key]))
            self._clock.at(until, partial(self._close, i), label="schedule-end")
        self._next(i, times)

    def _close(self, i: int) -> None:
        until = self._until[i]
        if until > self._clock.now():  # extended since this close was set
            self._clock.at(until, partial(self._close, i), label="schedule-end")
            return
        del self._until[i]
        s = self._schedules[i]
        key = (s.kind, s.target)
        self._open[key].remove(s.min_replicas)
        self._apply(s.kind, s.target, max(self._open[key], default=0))


def resolve(
    specs: list[ScheduleSpec],
    manifests: ManifestSet,
    ceilings: dict[str, int],
    start: datetime,
    run_s: float,
    *,
    seconds: Callable[[str, str], float],
    fail: Callable[[str, str], InputError],
    buffers_on: bool,
) -> tuple[ScheduledMinimum, ...]:
    """``spec.schedules`` checked against the manifests. ``ceilings`` gives the HPA
    ``maxReplicas`` (shorthand or manifest) of each HPA-scaled workload; load warnings go to
    ``manifests.warnings``.

    Raises:
        InputError: not exactly one of ``workload`` and ``buffer``; a target the manifests do
            not have (or a Job); a bad cron or duration; ``minReplicas`` above the HPA's
            ``maxReplicas`` (the API server would refuse the patch). Each names its field.
    """
    out = []
    workloads = {w.key: w.kind for w in manifests.workloads if w.kind != "Job"}
    buffers = {f"{b.namespace}/{b.name}": "CapacityBuffer" for b in manifests.capacitybuffers}
    for i, s in enumerate(specs):
        field = f"spec.schedules[{i}]"
        if (s.workload is None) == (s.buffer is None):
            raise fail("give exactly one of 'workload' or 'buffer'", field)
        kind = "workload" if s.workload is not None else "buffer"
        name = s.workload or s.buffer
        assert name is not None
        key = name if "/" in name else f"default/{name}"
        known: dict[str, Any] = workloads if kind == "workload" else buffers
        if key not in known:
            what = (
                "workload (Deployment, StatefulSet or ReplicaSet)"
                if kind == "workload"
                else "CapacityBuffer"
            )
            have = ", ".join(sorted(known)) or "none"
            raise fail(f"no {what} {name!r} in the manifests (have: {have})", f"{field}.{kind}")
        if key in ceilings and s.minReplicas > ceilings[key]:
            raise fail(
                f"minReplicas {s.minReplicas} exceeds the maxReplicas {ceilings[key]} of the "
                f"HPA that scales {key}",
                f"{field}.minReplicas",
            )
        duration_s = seconds(s.duration, f"{field}.duration")
        if duration_s < 1:
            raise fail("duration must be at least 1s", f"{field}.duration")
        try:
            times = fire_times(s.cron, start, duration_s, run_s, field=f"{field}.cron")
        except InputError as exc:
            raise fail(exc.detail, f"{field}.cron") from exc
        if kind == "buffer" and not buffers_on:
            manifests.warnings.append(
                f"{field}: buffer {key}: no effect (Karpenter's CapacityBuffer feature gate, "
                "spec.settings.featureGates.capacityBuffer, is off)"
            )
        if not any(at + duration_s > 0 for at in times):
            manifests.warnings.append(
                f"{field}: {s.cron!r} opens no window inside the run, so it has no effect"
            )
        out.append(ScheduledMinimum(kind, key, s.cron, s.minReplicas, duration_s, times))
    return tuple(out)
