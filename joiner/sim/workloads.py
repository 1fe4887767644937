"""Workloads: pods from Deployments (fixed replicas or following a trace) and bare Pods.

A trace is a CSV with header ``minute,value``; at minute ``m`` the Deployment wants
``clamp(ceil(value / targetPerReplica), min, max)`` replicas (the last row holds after the
trace ends). Scaling down deletes pending pods first, then the newest (ReplicaSet order);
a deleted pod ended gracefully and is not lost.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from joiner.api.errors import InputError
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

    def create(self, owner: str, template: PodTemplate, *, daemon: bool = False) -> Pod:
        """Create one pod owned by ``owner`` (``namespace/name``)."""
        self._count += 1
        namespace, _, name = owner.partition("/")
        pod = Pod(
            uid=f"pod-{self._count:06d}",
            namespace=namespace,
            name=f"{name}-{self._count}",
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
        wanted = math.ceil(value / self.target_per_replica)
        return max(self.min_replicas, min(self.max_replicas, wanted))


def load_trace(
    path: Path, *, target_per_replica: float, min_replicas: int, max_replicas: int
) -> Trace:
    """Read a ``minute,value`` CSV. Minutes must start at 0 and increase by 1.

    Raises:
        InputError: missing file, wrong header, or a bad row (named by line number).
    """
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read trace: {exc}", file=str(path)) from exc
    values: list[float] = []
    with handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or [h.strip() for h in header[:2]] != ["minute", "value"]:
            raise InputError(
                f"trace header must be 'minute,value', got {','.join(header or [])!r}",
                file=str(path),
            )
        for line_no, row in enumerate(reader, start=2):
            if not row:
                continue
            try:
                minute = int(row[0])
                value = float(row[1])
            except (ValueError, IndexError) as exc:
                raise InputError(
                    f"line {line_no}: expected 'minute,value' numbers, got {row!r}", file=str(path)
                ) from exc
            if minute != len(values):
                raise InputError(
                    f"line {line_no}: minute {minute} out of sequence (expected {len(values)})",
                    file=str(path),
                )
            if value < 0 or not math.isfinite(value):
                raise InputError(f"line {line_no}: value {value} must be >= 0", file=str(path))
            values.append(value)
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
    ) -> None:
        self.key = key
        self._template = template
        self._state = state
        self._clock = clock
        self._pods = pods
        self._fixed = replicas
        self._trace = trace
        self._on_deleted = on_deleted

    def start(self, duration_s: float) -> None:
        """Create the initial pods; with a trace, re-evaluate at every minute of the run."""
        self._reconcile(0)
        if self._trace is not None:
            for minute in range(1, int(duration_s // 60) + 1):
                self._clock.at(minute * 60.0, partial(self._reconcile, minute), label="trace")

    def desired(self, minute: int) -> int:
        """Desired replicas at ``minute``."""
        return self._trace.replicas_at(minute) if self._trace is not None else self._fixed

    def _live(self) -> list[Pod]:
        return [p for p in self._state.live_pods() if p.owner == self.key and not p.daemon]

    def _reconcile(self, minute: int) -> None:
        live = self._live()
        want = self.desired(minute)
        for _ in range(want - len(live)):
            self._pods.create(self.key, self._template)
        if len(live) > want:
            victims = sorted(live, key=lambda p: (p.node_name is not None, -p.order))
            for pod in victims[: len(live) - want]:
                pod.deleted_at_s = self._clock.now()
                if self._on_deleted is not None:
                    self._on_deleted(pod)
