"""Workloads: pods from Deployments (fixed replicas or following a trace) and bare Pods.

A trace is a CSV with header ``minute,value``; at minute ``m`` the Deployment wants
``clamp(ceil(value / targetPerReplica), min, max)`` replicas (the last row holds after the
trace ends). Scaling down deletes pending pods first, then the newest (ReplicaSet order);
a deleted pod ended gracefully and is not lost.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from joiner.api.errors import InputError
from joiner.api.manifests.yamlio import read_text
from joiner.api.objects import PodTemplate
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
        ``<owner name>-<n>``."""
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
    return Trace(tuple(values), target_per_replica, min_replicas, max_replicas, str(path))


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
        """Desired replicas at ``minute``."""
        return self._trace.replicas_at(minute) if self._trace is not None else self._fixed

    def _live(self) -> list[Pod]:
        return [p for p in self._state.live_pods() if p.owner == self.key and not p.daemon]

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
