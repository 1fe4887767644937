"""The HorizontalPodAutoscaler controller for ``autoscaling/v2`` objects in the manifests,
fed by the scenario's traffic trace.

Every ``sync_s`` (15 s, kube-controller-manager ``--horizontal-pod-autoscaler-sync-period``)
``HpaState.reconcile`` does what ``reconcileAutoscaler`` does in
``pkg/controller/podautoscaler/horizontal.go`` (k8s.io/kubernetes):

- current replicas 0 with ``minReplicas`` > 0: autoscaling is off (no change); above
  ``maxReplicas``: scale to max; below ``minReplicas``: scale to min (no rate limit);
- otherwise each metric proposes ``replica_calculator.go``'s count and the largest wins:
  ``usageRatio = metric / target`` (per pod for ``AverageValue`` and ``Utilization``); within
  the tolerance (0.1, ``--horizontal-pod-autoscaler-tolerance``, or the behavior's alpha
  per-direction ``tolerance``) the count stays; else ``ceil(usageRatio x current)``
  (``ceil(metric / target)`` for Object and External ``AverageValue``). CPU utilization is
  the integer percent ``floor(100 x use / requests)`` (``GetResourceUtilizationRatio``);
- with no ``spec.behavior`` (``normalizeDesiredReplicas``): the highest recommendation of the
  last 300 s (``--horizontal-pod-autoscaler-downscale-stabilization``, the window's start
  included), then clamped to ``[minReplicas, min(maxReplicas, max(2 x current, 4))]``
  (``convertDesiredReplicasWithRules``);
- with ``spec.behavior`` (``normalizeDesiredReplicasWithBehaviors``): the recommendation is
  held between the lowest of the scale-up window's recommendations and the highest of the
  scale-down window's (``stabilizeRecommendationWithBehaviors``, windows' starts excluded);
  then a scale-up is capped by the policies (``calculateScaleUpLimitWithScalingRules``: per
  policy, the replicas at the start of its period, i.e. current minus the scale-ups plus the
  scale-downs of the last ``periodSeconds``, plus ``value`` pods or ``ceil`` of ``value`` percent
  more; ``selectPolicy`` Max takes the largest limit, Min the smallest, Disabled no change)
  and a scale-down likewise (``calculateScaleDownLimitWithBehaviors``, percent rounded down).

Simplifications, by design: the metric is the trace's rate (times ``cpuPerRequest`` for CPU)
spread evenly over every replica the HPA counts, pending ones included (upstream gives pods
without metrics 0 use when scaling up, which is the same total, and the target when scaling
down); metrics are read at the sync instant, without the metrics pipeline's lag.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from joiner.api.errors import InputError
from joiner.api.manifests.hpa import DEFAULT_TOLERANCE, HorizontalPodAutoscaler, Metric
from joiner.api.manifests.hpa import ScalingRules as Rules
from joiner.api.objects import Workload
from joiner.sim.clock import SimClock
from joiner.sim.workloads import DeploymentController, Traffic, raise_minimum

#: ``--horizontal-pod-autoscaler-sync-period``.
SYNC_S = 15.0
#: ``--horizontal-pod-autoscaler-downscale-stabilization``.
DOWNSCALE_STABILIZATION_S = 300.0
#: ``scaleUpLimitFactor`` and ``scaleUpLimitMinimum`` (no ``behavior``).
SCALE_UP_FACTOR, SCALE_UP_MINIMUM = 2.0, 4.0


@dataclass(frozen=True, slots=True)
class HpaRun:
    """A manifest HPA as the simulation runs it: the object, its workload's traffic (None:
    no metric, the HPA only keeps replicas within [min, max]), the CPU cores one unit of
    rate uses (``cpuPerRequest``) and the pods' CPU request in millicores."""

    hpa: HorizontalPodAutoscaler
    traffic: Traffic | None
    cpu_per_request: float | None = None
    cpu_request_m: int = 0
    sync_s: float = SYNC_S


def _within(ratio: float, up: float, down: float) -> bool:
    return 1.0 - down <= ratio <= 1.0 + up


@dataclass
class HpaState:
    """One HPA's controller memory: its recommendations and scale events (time, replicas)."""

    run: HpaRun
    recommendations: list[tuple[float, int]] = field(default_factory=list)
    up_events: list[tuple[float, int]] = field(default_factory=list)
    down_events: list[tuple[float, int]] = field(default_factory=list)

    def _tolerances(self) -> tuple[float, float]:
        b = self.run.hpa.behavior
        up = b.scale_up.tolerance if b is not None else None
        down = b.scale_down.tolerance if b is not None else None
        return (
            DEFAULT_TOLERANCE if up is None else up,
            DEFAULT_TOLERANCE if down is None else down,
        )

    def proposal(self, metric: Metric, t_s: float, current: int) -> int:
        """``replica_calculator.go``'s count for ``metric`` at ``t_s`` with ``current``
        replicas (> 0)."""
        run = self.run
        assert run.traffic is not None
        total = run.traffic.rate_at(t_s)
        if metric.source == "cpu":
            total *= run.cpu_per_request or 0.0
        up, down = self._tolerances()
        if metric.target_type == "Utilization":
            used_m = total * 1000.0
            utilization = math.floor(used_m * 100 / (current * run.cpu_request_m))
            ratio = utilization / metric.target
        elif metric.target_type == "AverageValue":
            ratio = total / current / metric.target
        else:
            ratio = total / metric.target
        if _within(ratio, up, down):
            return current
        if metric.target_type == "AverageValue" and metric.type in ("Object", "External"):
            return math.ceil(total / metric.target)  # GetObjectPerPodMetricReplicas
        return math.ceil(ratio * current)

    def reconcile(self, now: float, current: int, min_floor: int = 0) -> int:
        """The replicas the HPA sets at ``now`` from ``current``; ``min_floor`` raises
        ``minReplicas`` (a scheduled pre-scale, ``joiner.sim.schedules``)."""
        hpa = self.run.hpa
        minimum = max(hpa.min_replicas, min(min_floor, hpa.max_replicas))
        if current == 0 and minimum != 0:
            return current
        if current > hpa.max_replicas:
            desired = hpa.max_replicas
        elif current < minimum:
            desired = minimum
        elif self.run.traffic is None or not hpa.metrics:
            return current
        else:
            proposed = max(self.proposal(m, now, current) for m in hpa.metrics)
            if hpa.behavior is None:
                desired = self._normalize(now, current, proposed, minimum)
            else:
                desired = self._normalize_with_behavior(now, current, proposed, minimum)
        if desired != current and hpa.behavior is not None:
            self._store_event(now, current, desired)
        return desired

    def _normalize(self, now: float, current: int, proposed: int, minimum: int) -> int:
        cutoff = now - DOWNSCALE_STABILIZATION_S
        kept = [(t, r) for t, r in self.recommendations if not t < cutoff]
        stabilized = max([proposed, *(r for _, r in kept)])
        self.recommendations = [*kept, (now, proposed)]
        limit = int(max(SCALE_UP_FACTOR * current, SCALE_UP_MINIMUM))
        upper = min(self.run.hpa.max_replicas, limit)
        return max(minimum, min(upper, stabilized))

    def _normalize_with_behavior(
        self, now: float, current: int, proposed: int, minimum: int
    ) -> int:
        hpa = self.run.hpa
        assert hpa.behavior is not None
        up_rules, down_rules = hpa.behavior.scale_up, hpa.behavior.scale_down
        up_cut = now - (up_rules.stabilization_s or 0)
        down_window = down_rules.stabilization_s
        down_cut = now - (DOWNSCALE_STABILIZATION_S if down_window is None else down_window)
        up_rec = down_rec = proposed
        for t, r in self.recommendations:
            if t > up_cut:
                up_rec = min(up_rec, r)
            if t > down_cut:
                down_rec = max(down_rec, r)
        oldest = min(up_cut, down_cut)
        self.recommendations = [
            *((t, r) for t, r in self.recommendations if t >= oldest),
            (now, proposed),
        ]
        rec = min(max(current, up_rec), down_rec)
        if rec > current:
            limit = max(current, self._limit(now, current, up_rules, up=True))
            return min(rec, min(hpa.max_replicas, limit))
        if rec < current:
            limit = min(current, self._limit(now, current, down_rules, up=False))
            return max(rec, max(minimum, limit))
        return rec

    def _limit(self, now: float, current: int, rules: Rules, *, up: bool) -> int:
        """``calculateScaleUpLimitWithScalingRules`` / ``calculateScaleDownLimitWithBehaviors``."""
        if rules.select_policy == "Disabled":
            return current
        limits = []
        for p in rules.policies:
            cutoff = now - p.period_s
            added = sum(c for t, c in self.up_events if t > cutoff)
            deleted = sum(c for t, c in self.down_events if t > cutoff)
            start = current - added + deleted
            if up:
                limits.append(
                    start + p.value if p.type == "Pods" else math.ceil(start * (1 + p.value / 100))
                )
            else:
                limits.append(
                    start - p.value if p.type == "Pods" else int(start * (1 - p.value / 100))
                )
        # Max selects the largest change: the highest limit up, the lowest down.
        pick = max if (rules.select_policy == "Max") == up else min
        return pick(limits)

    def _store_event(self, now: float, current: int, desired: int) -> None:
        b = self.run.hpa.behavior
        assert b is not None
        longest = max(p.period_s for p in (*b.scale_up.policies, *b.scale_down.policies))
        self.up_events = [(t, c) for t, c in self.up_events if t > now - longest]
        self.down_events = [(t, c) for t, c in self.down_events if t > now - longest]
        if desired > current:
            self.up_events.append((now, desired - current))
        else:
            self.down_events.append((now, current - desired))


def initial_replicas(run: HpaRun, replicas: int) -> int:
    """Replicas at run time 0: the workload's ``replicas`` clamped to [min, max], then one
    recommendation for minute 0's traffic without rate limits (the run starts from the
    HPA's steady state, as if it had been running before)."""
    hpa = run.hpa
    current = max(hpa.min_replicas, min(hpa.max_replicas, replicas))
    if run.traffic is None or not hpa.metrics or current == 0:
        return current
    state = HpaState(run)
    proposed = max(state.proposal(m, 0.0, current) for m in hpa.metrics)
    return max(hpa.min_replicas, min(hpa.max_replicas, proposed))


class ManifestHpaController:
    """Syncs one manifest HPA every ``sync_s`` and scales its ``DeploymentController``."""

    def __init__(self, run: HpaRun, deployment: DeploymentController, clock: SimClock) -> None:
        self.run = run
        self.state = HpaState(run)
        self._deployment = deployment
        self._clock = clock
        self.replicas = deployment.desired(0)
        self.min_floor = 0

    @property
    def deployment(self) -> DeploymentController:
        """The scaled workload."""
        return self._deployment

    def set_floor(self, minimum: int) -> None:
        """A scheduled minimum (``raise_minimum``)."""
        raise_minimum(self, minimum, self.run.hpa.min_replicas, self.run.hpa.max_replicas)

    def start(self, duration_s: float) -> None:
        """Sync every ``sync_s`` until ``duration_s``."""
        self._end_s = duration_s
        self._clock.at(self.run.sync_s, self._sync, label="hpa")

    def _sync(self) -> None:
        now = self._clock.now()
        target = self.state.reconcile(now, self.replicas, self.min_floor)
        if target != self.replicas:
            self.replicas = target
            self._deployment.set_replicas(target)
        nxt = now + self.run.sync_s
        if nxt <= self._end_s:
            self._clock.at(nxt, self._sync, label="hpa")


@dataclass(frozen=True, slots=True)
class WorkloadInputs:
    """What the scenario's ``spec.workloads[index]`` gives a workload the HPA may scale:
    ``source`` is ``replicas``, ``trace``, ``hpa`` (the shorthand) or ``traffic``."""

    index: int
    source: str
    traffic: Traffic | None
    cpu_per_request: float | None


def resolve(
    hpas: list[HorizontalPodAutoscaler],
    workloads: list[Workload],
    inputs: dict[str, WorkloadInputs],
    fail: Callable[[str, str], InputError],
    warnings: list[str],
) -> dict[str, HpaRun]:
    """Each manifest HPA's run, by the key of the workload it scales.

    A manifest HPA wins over the scenario's ``hpa:`` shorthand for the same workload (its
    trace and multipliers become the HPA's traffic), with a warning; an HPA with no traffic
    keeps its workload within [min, max], with a warning; an HPA whose workload is not in
    the manifests is not run, with a warning.

    Raises:
        InputError: two HPAs scale one workload; the workload is also given a ``trace``;
            ``traffic`` is given for a workload no HPA scales; a cpu metric lacks the
            workload's ``cpuPerRequest`` or its pods request no CPU (naming the field).
    """
    by_key = {w.key: w for w in workloads}
    runs: dict[str, HpaRun] = {}
    owners: dict[str, HorizontalPodAutoscaler] = {}
    for hpa in hpas:
        where = f"{hpa.source.file}: {hpa.source.ref}"
        target = by_key.get(hpa.target_key)
        if target is None or target.kind != hpa.target_kind:
            warnings.append(
                f"{where}: field spec.scaleTargetRef: {hpa.target_kind} {hpa.target_key} is not "
                "in the manifests; this HPA is not run"
            )
            continue
        if hpa.target_key in owners:
            raise InputError(
                f"{hpa.target_kind} {hpa.target_key} is also scaled by "
                f"{owners[hpa.target_key].source.ref} (the HPA controller scales neither: "
                "AmbiguousSelector)",
                file=hpa.source.file,
                obj=hpa.source.ref,
                field="spec.scaleTargetRef",
            )
        owners[hpa.target_key] = hpa
        given = inputs.get(hpa.target_key)
        traffic = given.traffic if given is not None else None
        at = f"spec.workloads[{given.index}]" if given is not None else ""
        if given is not None and given.source == "trace":
            raise fail(
                f"{hpa.target_key} is scaled by {hpa.source.ref} in the manifests; give its "
                "request rate as 'traffic' (the HPA's metric), not a replica 'trace'",
                f"{at}.trace",
            )
        if given is not None and given.source == "hpa":
            warnings.append(
                f"{where}: overrides the scenario's hpa shorthand at {at}.hpa for "
                f"{hpa.target_key} (the manifest HPA wins; the shorthand's file and "
                "dailyMultipliers become its traffic)"
            )
        if traffic is None and hpa.metrics:
            warnings.append(
                f"{where}: no traffic for {hpa.target_key} (add spec.workloads[] "
                f"{{deployment: {hpa.target_key}, traffic: {{file: ...}}}} to the scenario): "
                "its metrics have no value, so it only keeps the replicas within "
                f"[{hpa.min_replicas}, {hpa.max_replicas}]"
            )
        cpu_metrics = [m for m in hpa.metrics if m.source == "cpu"]
        cpu = given.cpu_per_request if given is not None else None
        if traffic is not None and cpu_metrics and cpu is None:
            raise fail(
                f"required: {hpa.source.ref}'s {cpu_metrics[0].field} is a cpu Resource "
                "metric, which reads rate x cpuPerRequest",
                f"{at}.cpuPerRequest",
            )
        if cpu is not None and not cpu_metrics:
            warnings.append(
                f"{where}: {at}.cpuPerRequest has no effect: this HPA has no cpu metric"
            )
        request_m = target.template.requests.get("cpu", 0)
        utilization = [m for m in cpu_metrics if m.target_type == "Utilization"]
        if traffic is not None and utilization and request_m <= 0:
            raise InputError(
                f"a cpu Utilization target needs the pods' cpu request, and {hpa.target_key}'s "
                "pods request none (the HPA controller reports FailedGetResourceMetric)",
                file=hpa.source.file,
                obj=hpa.source.ref,
                field=utilization[0].field,
            )
        runs[hpa.target_key] = HpaRun(hpa, traffic, cpu, request_m)
    for key, given in inputs.items():
        if given.source == "traffic" and key not in runs:
            raise fail(
                f"'traffic' feeds a HorizontalPodAutoscaler's metrics, and no autoscaling/v2 "
                f"HorizontalPodAutoscaler in the manifests scales {key}",
                f"spec.workloads[{given.index}].traffic",
            )
        if given.cpu_per_request is not None and key not in runs:
            raise fail(
                "cpuPerRequest turns the request rate into a HorizontalPodAutoscaler's cpu "
                f"metric, and no autoscaling/v2 HorizontalPodAutoscaler in the manifests "
                f"scales {key}",
                f"spec.workloads[{given.index}].cpuPerRequest",
            )
    return runs
