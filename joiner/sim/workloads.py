"""Workloads: pods from Deployments (fixed replicas, a trace, or a HorizontalPodAutoscaler
following a request-rate trace), Jobs and CronJobs run to completion, and bare Pods.

A trace is a CSV with header ``minute,value``; at minute ``m`` the Deployment wants
``clamp(ceil(value / targetPerReplica), min, max)`` replicas (the last row holds after the
trace ends). ``Hpa`` instead syncs every 15 s with the HPA controller's tolerance, scale-up
rate limit and scale-down stabilisation. Scaling down deletes pending pods first, then the
newest (ReplicaSet order); a deleted pod ended gracefully and is not lost.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any

from joiner.api import durations
from joiner.api.errors import InputError
from joiner.api.manifests.yamlio import read_text
from joiner.api.objects import CronJob, PodTemplate
from joiner.sim.clock import SimClock
from joiner.state.cluster import ClusterState, Pod


class PodFactory:
    """Creates pods with sequential uids (``pod-000001``) and names ``<owner>-<n>``."""

    def __init__(self, state: ClusterState, clock: SimClock) -> None:
        self._state = state
        self._clock = clock
        self._count = 0
        self.on_created: list[Callable[[Pod], None]] = []

    def create(
        self, owner: str, template: PodTemplate, *, daemon: bool = False, name: str | None = None
    ) -> Pod:
        """Create one pod owned by ``owner`` (``namespace/name``), named ``name`` or
        ``<owner name>-<n>``; it takes its template's ``karpenter.sh/do-not-disrupt``
        annotation, as every pod a controller makes from a template does."""
        self._count += 1
        namespace, _, owner_name = owner.partition("/")
        pod = Pod(
            uid=f"pod-{self._count:06d}",
            namespace=namespace,
            name=name or f"{owner_name}-{self._count}",
            template=template,
            owner=owner,
            created_at_s=self._clock.now(),
            order=self._count,
            daemon=daemon,
        )
        pod.do_not_disrupt, pod.do_not_disrupt_for_s = durations.do_not_disrupt(
            template.do_not_disrupt
        )
        self._state.pods[pod.uid] = pod
        for listener in self.on_created:
            listener(pod)
        return pod


@dataclass(frozen=True, slots=True)
class Trace:
    """Per-minute demand values and how they map to replicas."""

    values: tuple[float, ...]
    target_per_replica: float
    min_replicas: int
    max_replicas: int
    file: str

    def replicas_at(self, minute: int) -> int:
        """Desired replicas at ``minute`` (last value held past the end)."""
        value = self.values[min(minute, len(self.values) - 1)]
        ratio = value / self.target_per_replica
        if not math.isfinite(ratio) or ratio >= self.max_replicas:
            return self.max_replicas
        return max(self.min_replicas, min(self.max_replicas, math.ceil(ratio)))


_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?", re.ASCII)


def load_trace(
    path: Path, *, target_per_replica: float, min_replicas: int, max_replicas: int
) -> Trace:
    """Read a ``minute,value`` CSV. Minutes must start at 0 and increase by 1; values are
    finite non-negative decimal numbers; exactly two columns.

    Raises:
        InputError: missing file, wrong header, or a bad row (named by line number).
    """
    text = read_text(path, what="trace")
    values = _clean_values(text)
    if values is None:
        values = _values_by_row(text, path)
    return Trace(values, target_per_replica, min_replicas, max_replicas, str(path))


def _values_by_row(text: str, path: Path) -> tuple[float, ...]:
    """The values of trace ``text`` (read from ``path``), read as CSV row by row.

    Raises:
        InputError: wrong header or a bad row (named by line number), or no rows.
    """
    values: list[float] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None or [h.strip() for h in header] != ["minute", "value"]:
            raise InputError(
                f"trace header must be 'minute,value', got {','.join(header or [])[:80]!r}",
                file=str(path),
            )
        for line_no, row in enumerate(reader, start=2):
            if not row:
                continue
            cells = [c.strip() for c in row]
            if len(cells) == 2 and cells[0][1:].isdigit() and cells[0][:1] == "-":
                raise InputError(
                    f"line {line_no}: minute {cells[0]} is negative (minutes count from 0)",
                    file=str(path),
                )
            if len(cells) == 2 and cells[1][:1] == "-" and _NUMBER.fullmatch(cells[1][1:]):
                raise InputError(f"line {line_no}: value {cells[1]} is negative", file=str(path))
            if (
                len(cells) != 2
                or not cells[0].isascii()
                or not cells[0].isdigit()
                or len(cells[0]) > 9
                or not (_NUMBER.fullmatch(cells[1]))
            ):
                raise InputError(
                    f"line {line_no}: expected two numbers 'minute,value', got "
                    f"{','.join(row)[:80]!r}",
                    file=str(path),
                )
            minute, value = int(cells[0]), float(cells[1])
            if minute != len(values):
                raise InputError(
                    f"line {line_no}: minute {minute} out of sequence (expected {len(values)})",
                    file=str(path),
                )
            if not math.isfinite(value):
                raise InputError(f"line {line_no}: value {cells[1]!r} is too large", file=str(path))
            values.append(value)
    except csv.Error as exc:
        raise InputError(f"not a CSV file: {exc}", file=str(path)) from exc
    if not values:
        raise InputError("trace has no rows", file=str(path))
    return tuple(values)


#: A trace in its plain form: the header, then rows ``<minute>,<value>`` each ending in a
#: newline (the last may not), no spaces, quotes or blank lines. What this admits, the
#: ``csv`` reading of ``_values_by_row`` reads alike, row for row. ``_NUMBER`` with
#: possessive quantifiers: each is followed by a character it cannot take, so they match
#: the same text, without keeping places to backtrack to.
_CLEAN = re.compile(
    r"minute,value\n"
    r"(?:[0-9]{1,9},[0-9]++(?:\.[0-9]*+)?+(?:[eE][+-]?[0-9]++)?+\n)*+"
    rf"(?:[0-9]{{1,9}},{_NUMBER.pattern})?",
    re.ASCII,
)
#: ``str(m)`` for m = 0, 1, ... (grown as traces need).
_MINUTES: list[str] = []


def _clean_values(text: str) -> tuple[float, ...] | None:
    """The values of a trace in its plain form (``_CLEAN``) whose minutes are written 0, 1,
    ... (no leading zeros) and whose values are finite, with at least one row; None for any
    other text (then ``_values_by_row`` reads it and names the first bad line). One pattern
    match, one comparison and one conversion over the whole text instead of checks per row."""
    if not _CLEAN.fullmatch(text):
        return None
    body = text[len("minute,value\n") :].removesuffix("\n")
    if not body:
        return None
    cells = body.replace("\n", ",").split(",")
    rows = len(cells) // 2
    if len(_MINUTES) < rows:
        _MINUTES.extend(str(m) for m in range(len(_MINUTES), rows))
    if cells[0::2] != _MINUTES[:rows]:
        return None
    values = tuple(map(float, cells[1::2]))
    if math.inf in values:  # a number beyond float's range
        return None
    return values


class DeploymentController:
    """Keeps one Deployment's live pod count at its desired replicas."""

    def __init__(
        self,
        key: str,
        template: PodTemplate,
        state: ClusterState,
        clock: SimClock,
        pods: PodFactory,
        *,
        replicas: int = 0,
        trace: Trace | None = None,
        on_deleted: Callable[[Pod], None] | None = None,
        do_not_disrupt: bool = False,
        do_not_disrupt_for_s: float | None = None,
    ) -> None:
        self.key = key
        self._template = template
        self._state = state
        self._clock = clock
        self._pods = pods
        self._fixed = replicas
        self._trace = trace
        self._on_deleted = on_deleted
        self._do_not_disrupt = do_not_disrupt
        self._do_not_disrupt_for_s = do_not_disrupt_for_s
        self._minute = 0
        self._floor = 0
        #: The trace value ``desired`` read last and its replicas (``Trace.replicas_at``).
        self._seen_value: float | None = None
        self._seen_replicas = 0
        #: Our pods not deleted yet, in creation order (None until first needed): seeded from
        #: the cluster once, then kept from ``PodFactory``'s creations, the simulation's only
        #: way pods come to be (so an eviction's ``replace`` need not walk every pod).
        self._mine: list[Pod] | None = None
        pods.on_created.append(self._created)

    def _created(self, pod: Pod) -> None:
        if self._mine is not None and pod.owner == self.key:
            self._mine.append(pod)

    def start(self, duration_s: float) -> None:
        """Create the initial pods; with a trace, re-evaluate at every minute of the run
        (one event at a time, so a long run holds one pending trace event, not thousands)."""
        self._end_minute = int(duration_s // 60)
        self._reconcile(0)
        if self._trace is not None:
            self._schedule_next(1)

    def _schedule_next(self, minute: int) -> None:
        if minute <= self._end_minute:
            self._clock.at(minute * 60.0, partial(self._tick, minute), label="trace")

    def _tick(self, minute: int) -> None:
        self._reconcile(minute)
        self._schedule_next(minute + 1)

    def desired(self, minute: int) -> int:
        """Desired replicas at ``minute`` (at least a scheduled minimum in force). A trace's
        replicas are a function of the minute's value alone, so the last value's replicas
        serve while the value repeats (most minutes of a trace)."""
        trace = self._trace
        if trace is None:
            return max(self._fixed, self._floor)
        values = trace.values
        value = values[min(minute, len(values) - 1)]
        if value != self._seen_value:
            self._seen_value, self._seen_replicas = value, trace.replicas_at(minute)
        return max(self._seen_replicas, self._floor)

    def set_floor(self, minimum: int) -> None:
        """A scheduled minimum (``joiner.sim.schedules``; 0: none) for a workload no HPA
        scales: its replicas are at least ``minimum`` while it holds."""
        self._floor = minimum
        self._reconcile(self._minute)

    def set_replicas(self, replicas: int) -> None:
        """Scale to ``replicas`` now (a HorizontalPodAutoscaler's decision)."""
        self._fixed = replicas
        self._reconcile(self._minute)

    def _live(self) -> list[Pod]:
        # A ReplicaSet does not count terminating pods: an evicted pod shutting down is
        # replaced at once.
        if self._mine is None:
            self._mine = [p for p in self._state.live_pods() if p.owner == self.key]
        else:
            self._mine = [p for p in self._mine if p.deleted_at_s is None]
        return [p for p in self._mine if not p.daemon and p.terminating_until_s is None]

    def replace(self, gone: Pod) -> Pod | None:
        """A pod of ours was evicted or lost: make its replacement if we are below the
        desired count (the ReplicaSet controller's job)."""
        if len(self._live()) >= self.desired(self._minute):
            return None
        pod = self._create()
        pod.replaces = gone.uid
        return pod

    def _create(self) -> Pod:
        pod = self._pods.create(self.key, self._template)
        pod.do_not_disrupt = self._do_not_disrupt
        pod.do_not_disrupt_for_s = self._do_not_disrupt_for_s
        return pod

    def _reconcile(self, minute: int) -> None:
        self._minute = minute
        live = self._live()
        want = self.desired(minute)
        for _ in range(want - len(live)):
            self._create()
        if len(live) > want:
            victims = sorted(live, key=lambda p: (p.node_name is not None, -p.order))
            for pod in victims[: len(live) - want]:
                pod.deleted_at_s = self._clock.now()
                self._state.pod_event(pod, pod.deleted_at_s)
                if self._on_deleted is not None:
                    self._on_deleted(pod)


@dataclass(frozen=True, slots=True)
class DailyMultiplier:
    """Traffic times ``factor`` from ``start_minute`` of each day (minutes after midnight of
    the scenario's wall clock) for ``duration_minutes``."""

    start_minute: int
    duration_minutes: int
    factor: float
    name: str = ""

    def applies(self, minute_of_day: int) -> bool:
        """True when ``minute_of_day`` (0-1439) is inside the window (which may wrap)."""
        offset = (minute_of_day - self.start_minute) % 1440
        return offset < self.duration_minutes


@dataclass(frozen=True, slots=True)
class Traffic:
    """A workload's request rate: per-minute ``values`` (the last holds past the end) times
    the ``multipliers`` whose daily window covers the minute; ``start_minute_of_day`` is the
    wall-clock minute of run time 0."""

    values: tuple[float, ...]
    multipliers: tuple[DailyMultiplier, ...] = ()
    start_minute_of_day: int = 0

    def rate_at(self, t_s: float) -> float:
        """The rate at run time ``t_s``."""
        return _rate_at(self.values, self.multipliers, self.start_minute_of_day, t_s)


def _rate_at(
    values: tuple[float, ...],
    multipliers: tuple[DailyMultiplier, ...],
    start_minute_of_day: int,
    t_s: float,
) -> float:
    """``Traffic.rate_at`` over its fields (the HPA asks every sync without building one)."""
    minute = int(t_s // 60)
    value = values[min(minute, len(values) - 1)]
    of_day = (start_minute_of_day + minute) % 1440
    for m in multipliers:
        if m.applies(of_day):
            value *= m.factor
    return value


@dataclass(frozen=True, slots=True)
class Hpa:
    """A HorizontalPodAutoscaler on a request-rate metric (``AverageValue`` target).

    Every ``sync_s`` (15 s, kube-controller-manager ``--horizontal-pod-autoscaler-sync-period``)
    the recommendation is ``ceil(rate / target_per_replica)``, unchanged while the usage
    ratio is within ``tolerance`` (0.1) of 1; scale-up is limited per sync to
    ``max(2 x current, current + 4)`` (the default ``behavior.scaleUp`` policies: 100 % or 4
    pods per 15 s, the larger); scale-down takes the highest recommendation of the last
    ``scale_down_stabilization_s`` (300 s, the default ``behavior.scaleDown``
    stabilization window); the result is clamped to [min, max].

    ``trace`` gives the rate per minute; ``multipliers`` scale it at daily times;
    ``start_minute_of_day`` is the wall-clock minute of run time 0.
    """

    trace: Trace
    sync_s: float = 15.0
    scale_down_stabilization_s: float = 300.0
    tolerance: float = 0.1
    multipliers: tuple[DailyMultiplier, ...] = ()
    start_minute_of_day: int = 0

    def rate_at(self, t_s: float) -> float:
        """The metric at run time ``t_s`` (per-minute trace value times the multipliers)."""
        return _rate_at(self.trace.values, self.multipliers, self.start_minute_of_day, t_s)

    @property
    def traffic(self) -> Traffic:
        """The trace and multipliers as a ``Traffic``."""
        return Traffic(self.trace.values, self.multipliers, self.start_minute_of_day)

    def raw(self, t_s: float, current: int) -> int:
        """The unstabilised recommendation at ``t_s`` with ``current`` replicas."""
        tr = self.trace
        want = self.rate_at(t_s) / tr.target_per_replica
        if current > 0 and abs(want / current - 1.0) <= self.tolerance:
            return current
        if not math.isfinite(want) or want >= tr.max_replicas:
            return tr.max_replicas
        return max(tr.min_replicas, min(tr.max_replicas, math.ceil(want)))


class HpaController:
    """Drives a ``DeploymentController``'s desired replicas with the ``Hpa`` model."""

    def __init__(self, hpa: Hpa, deployment: DeploymentController, clock: SimClock) -> None:
        self.hpa = hpa
        self._deployment = deployment
        self._clock = clock
        self._history: deque[tuple[float, int]] = deque()
        self.replicas = self.initial_replicas(hpa)
        self.min_floor = 0

    def set_floor(self, minimum: int) -> None:
        """A scheduled minimum (``raise_minimum``)."""
        raise_minimum(self, minimum, self.hpa.trace.min_replicas, self.hpa.trace.max_replicas)

    @property
    def deployment(self) -> DeploymentController:
        """The scaled workload."""
        return self._deployment

    @staticmethod
    def initial_replicas(hpa: Hpa) -> int:
        """Replicas at run time 0: the recommendation for the first minute's rate."""
        return max(hpa.trace.min_replicas, hpa.raw(0.0, 0))

    def start(self, duration_s: float) -> None:
        """Sync every ``sync_s`` until ``duration_s``."""
        self._end_s = duration_s
        self._history.append((0.0, self.replicas))
        self._clock.at(self.hpa.sync_s, self._sync, label="hpa")

    def _sync(self) -> None:
        now = self._clock.now()
        hpa = self.hpa
        current = self.replicas
        raw = hpa.raw(now, current)
        history = self._history
        history.append((now, raw))
        window = now - hpa.scale_down_stabilization_s
        while history[0][0] < window:  # times ascend: the oldest leave first
            history.popleft()
        if raw > current:
            target = min(raw, max(2 * current, current + 4))
        else:
            target = min(current, max(map(itemgetter(1), history)))
        tr = hpa.trace
        minimum = max(tr.min_replicas, min(self.min_floor, tr.max_replicas))
        target = max(minimum, min(tr.max_replicas, target))
        if target != current:
            self.replicas = target
            self._deployment.set_replicas(target)
        nxt = now + hpa.sync_s
        if nxt <= self._end_s:
            self._clock.at(nxt, self._sync, label="hpa")


def raise_minimum(ctl: Any, minimum: int, min_replicas: int, max_replicas: int) -> None:
    """A scheduled minimum for an HPA controller (``min_floor``; 0: none): the HPA scales up
    to it at once (the HPA controller reconciles on its object's update); scale-down after
    it ends follows the HPA's usual rules."""
    ctl.min_floor = minimum
    low = max(min_replicas, min(minimum, max_replicas))
    if ctl.replicas < low:
        ctl.replicas = low
        ctl.deployment.set_replicas(low)


class JobController:
    """A Job run to completion: ``parallelism`` pods at a time, each running ``run_for_s``
    once bound, until ``completions`` have succeeded. An evicted or lost pod is replaced
    (it did not complete). A finished pod is deleted (Succeeded: it holds no capacity)."""

    def __init__(
        self,
        key: str,
        template: PodTemplate,
        state: ClusterState,
        clock: SimClock,
        pods: PodFactory,
        *,
        parallelism: int,
        completions: int,
        run_for_s: float,
    ) -> None:
        self.key = key
        self._template = template
        self._state = state
        self._clock = clock
        self._pods = pods
        self.parallelism = parallelism
        self.completions = completions
        self.run_for_s = run_for_s
        self.succeeded = 0
        self.completed_at_s: float | None = None
        self._active: set[str] = set()

    def start(self, duration_s: float = 0.0) -> None:
        """Create the first wave of pods."""
        self._fill()

    @property
    def done(self) -> bool:
        """All completions succeeded."""
        return self.succeeded >= self.completions

    def _fill(self) -> None:
        want = min(self.parallelism, self.completions - self.succeeded - 0)
        while len(self._active) < want and self.succeeded + len(self._active) < self.completions:
            pod = self._pods.create(self.key, self._template)
            self._active.add(pod.uid)

    def bound(self, pod: Pod) -> None:
        """The pod started running: it succeeds ``run_for_s`` later."""
        uid = pod.uid
        self._clock.after(self.run_for_s, lambda: self._finish(uid), label="job-pod-done")

    def _finish(self, uid: str) -> None:
        pod = self._state.pods[uid]
        if uid not in self._active or pod.deleted_at_s is not None:
            return
        pod.deleted_at_s = self._clock.now()
        self._active.discard(uid)
        self.succeeded += 1
        if self.done:
            self.completed_at_s = self._clock.now()
            return
        self._fill()

    def replace(self, gone: Pod) -> Pod | None:
        """A pod was evicted or lost before it finished: run another."""
        self._active.discard(gone.uid)
        if self.done:
            return None
        before = set(self._active)
        self._fill()
        fresh = sorted(self._active - before)
        if not fresh:
            return None
        pod = self._state.pods[fresh[0]]
        pod.replaces = gone.uid
        return pod

    def stop(self) -> None:
        """Delete the running pods (CronJob ``Replace``)."""
        now = self._clock.now()
        for uid in sorted(self._active):
            self._state.pods[uid].deleted_at_s = now
        self._active.clear()


class CronJobController:
    """A CronJob: at each fire time (seconds of run time) it creates a Job of its template,
    named ``<cronjob>-<minute of the run>``, honouring ``suspend`` and
    ``concurrencyPolicy`` (Allow; Forbid skips while a Job runs; Replace stops it)."""

    def __init__(
        self,
        cronjob: CronJob,
        fire_times_s: Iterable[float],
        state: ClusterState,
        clock: SimClock,
        pods: PodFactory,
        *,
        run_for_s: float,
        register: Callable[[JobController], None],
    ) -> None:
        self.cronjob = cronjob
        self.fire_times_s = fire_times_s
        self._next: Iterator[float] = iter(())
        self._state = state
        self._clock = clock
        self._pods = pods
        self.run_for_s = run_for_s
        self._register = register
        self.jobs: list[JobController] = []

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return self.cronjob.key

    def start(self, duration_s: float) -> None:
        """Schedule the first fire time; each fire schedules the next (lazily computed)."""
        self._next = iter(self.fire_times_s)
        self._schedule_next()

    def _schedule_next(self) -> None:
        t = next(self._next, None)
        if t is not None:
            self._clock.at(t, partial(self._fire, t), label="cronjob")

    def _fire(self, at_s: float) -> None:
        self._schedule_next()
        cj = self.cronjob
        if cj.suspend:
            return
        running = [j for j in self.jobs if not j.done]
        if running and cj.concurrency_policy == "Forbid":
            return
        if running and cj.concurrency_policy == "Replace":
            for j in running:
                j.stop()
        job = JobController(
            f"{cj.namespace}/{cj.name}-{int(at_s // 60)}",
            cj.template,
            self._state,
            self._clock,
            self._pods,
            parallelism=cj.parallelism,
            completions=cj.completions if cj.completions is not None else cj.parallelism,
            run_for_s=self.run_for_s,
        )
        self.jobs.append(job)
        self._register(job)
        job.start()
