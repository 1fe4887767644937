"""The scenario's sections turned into what the simulation runs: CronJob fire times, HPA
settings, the Cluster Autoscaler baseline's settings and node groups, the NTH values, and the
NodeClass selector checks against the simulated VPC. ``load_scenario`` calls these.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter

from joiner.api import cron
from joiner.api.errors import InputError
from joiner.api.manifests import ManifestSet
from joiner.api.manifests.yamlio import read_documents
from joiner.api.objects import CronJob
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.types import SecurityGroup, Subnet
from joiner.controllers.interruption.settings import REBALANCE_REPLACEMENT, InterruptionSettings
from joiner.sim.baseline.limits import ClusterLimits, parse_min_max
from joiner.sim.baseline.settings import (
    EXPANDERS,
    SPOT_FIRST_PRIORITIES,
    AutoscalerSettings,
    NodeGroupSpec,
)
from joiner.sim.scenario_schema import DailyMultiplierSpec, HpaSpec, NodeGroupModel, ScenarioSpec
from joiner.sim.workloads import DailyMultiplier, Hpa, Trace


@dataclass(frozen=True)
class FireTimes:
    """Seconds of run time at which a CronJob's schedule fires, up to ``duration_s``,
    computed lazily (a per-minute schedule over a year is half a million fires: the
    simulation asks for the next one only when the previous fired)."""

    schedule: str
    start: datetime
    local_start: datetime
    duration_s: float

    def __iter__(self) -> Iterator[float]:
        delay_s = cron.every_seconds(self.schedule)
        if delay_s is not None:
            # robfig/cron ConstantDelaySchedule: each fire ``delay_s`` after the previous,
            # the first after the CronJob's creation (the run's start here).
            yield from itertools.takewhile(
                lambda at: at <= self.duration_s, itertools.count(float(delay_s), float(delay_s))
            )
            return
        it = croniter(self.schedule, self.local_start - timedelta(microseconds=1))
        while True:
            at = (it.get_next(datetime) - self.start).total_seconds()
            if at > self.duration_s:
                return
            yield at

    def __bool__(self) -> bool:
        """It fires at least once within the run."""
        return next(iter(self), None) is not None


def fire_times(cj: CronJob, start: datetime, duration_s: float) -> FireTimes:
    """When ``cj``'s schedule fires (read in its ``spec.timeZone``, default UTC; ``start``
    is run time 0), as the CronJob controller computes them (robfig/cron semantics, via
    croniter).

    Raises:
        InputError: the schedule is not a cron expression (naming the CronJob's field).
    """
    try:
        text = cron.check_schedule(cj.schedule, field="spec.schedule", every=True)
    except InputError as exc:
        raise exc.located(file=cj.source.file, obj=cj.source.ref) from exc
    local = start.astimezone(ZoneInfo(cj.time_zone)) if cj.time_zone else start
    return FireTimes(text, start, local, duration_s)


def find_cronjob(cronjobs: list[CronJob], key: str) -> CronJob | None:
    if "/" not in key:
        key = f"default/{key}"
    return next((c for c in cronjobs if c.key == key), None)


def positive_run_for(value: float, fail: Any, field: str) -> float:
    if value <= 0:
        raise fail("runFor must be positive", f"{field}.runFor")
    return value


def daily_multipliers(
    specs: list[DailyMultiplierSpec], seconds: Any, fail: Any, field: str
) -> tuple[DailyMultiplier, ...]:
    """``dailyMultipliers`` (of an ``hpa`` shorthand or a ``traffic``) as run-time values.

    Raises:
        InputError: a duration outside 1m-24h (naming the field).
    """
    out = []
    for i, m in enumerate(specs):
        where = f"{field}.dailyMultipliers[{i}]"
        minutes = seconds(m.duration, f"{where}.duration") / 60
        if not 1 <= minutes <= 1440:
            raise fail("duration must be between 1m and 24h", f"{where}.duration")
        hh, mm = (int(x) for x in m.start.split(":"))
        out.append(DailyMultiplier(hh * 60 + mm, int(minutes), m.factor, m.name))
    return tuple(out)


def hpa_settings(
    spec: HpaSpec, trace: Trace, start: datetime, seconds: Any, fail: Any, field: str
) -> Hpa:
    sync_s = seconds(spec.syncPeriod, f"{field}.syncPeriod")
    if sync_s < 1:
        raise fail("syncPeriod must be at least 1s", f"{field}.syncPeriod")
    multipliers = daily_multipliers(spec.dailyMultipliers, seconds, fail, field)
    return Hpa(
        trace=trace,
        sync_s=sync_s,
        scale_down_stabilization_s=seconds(
            spec.scaleDownStabilization, f"{field}.scaleDownStabilization"
        ),
        tolerance=spec.tolerance,
        multipliers=multipliers,
        start_minute_of_day=start.hour * 60 + start.minute,
    )


def autoscaler_settings(
    spec: ScenarioSpec,
    region: str,
    manifests: ManifestSet,
    subnets: tuple[Subnet, ...],
    catalog: Catalog,
    seconds: Any,
    fail: Any,
) -> AutoscalerSettings:
    """``spec.clusterAutoscaler``: the Cluster Autoscaler baseline's flags and node groups
    (durations in seconds), warning in ``manifests.warnings`` about settings that do nothing.

    Raises:
        InputError: the first bad expander, priority, node group, duration or limit.
    """
    ca = spec.clusterAutoscaler
    base = "spec.clusterAutoscaler"
    chain = _expander_chain(ca.expander, fail)
    priorities = _priorities(ca.priorities, fail)
    groups = _node_groups(ca.nodeGroups, region, manifests, subnets, catalog, fail)
    delay_min = seconds(ca.asgLaunchDelay.min, f"{base}.asgLaunchDelay.min")
    delay_max = seconds(ca.asgLaunchDelay.max, f"{base}.asgLaunchDelay.max")
    if delay_min > delay_max:
        raise fail("min exceeds max", f"{base}.asgLaunchDelay")
    scan = seconds(ca.scanInterval, f"{base}.scanInterval")
    if scan < 1:
        raise fail("scanInterval must be at least 1s", f"{base}.scanInterval")

    def warn(message: str, field: str) -> None:
        manifests.warnings.append(str(fail(message, field)))

    settings = AutoscalerSettings(
        limits=_cluster_limits(ca, base, fail),
        scan_interval_s=scan,
        new_pod_scale_up_delay_s=seconds(ca.newPodScaleUpDelay, f"{base}.newPodScaleUpDelay"),
        expander=chain,
        priorities=priorities,
        max_node_provision_time_s=seconds(ca.maxNodeProvisionTime, f"{base}.maxNodeProvisionTime"),
        initial_node_group_backoff_s=seconds(
            ca.initialNodeGroupBackoffDuration, f"{base}.initialNodeGroupBackoffDuration"
        ),
        max_node_group_backoff_s=seconds(
            ca.maxNodeGroupBackoffDuration, f"{base}.maxNodeGroupBackoffDuration"
        ),
        node_group_backoff_reset_s=seconds(
            ca.nodeGroupBackoffResetTimeout, f"{base}.nodeGroupBackoffResetTimeout"
        ),
        scale_down_utilization_threshold=ca.scaleDownUtilizationThreshold,
        scale_down_unneeded_time_s=seconds(
            ca.scaleDownUnneededTime, f"{base}.scaleDownUnneededTime"
        ),
        scale_down_delay_after_add_s=seconds(
            ca.scaleDownDelayAfterAdd, f"{base}.scaleDownDelayAfterAdd"
        ),
        scale_down_delay_after_delete_s=seconds(
            ca.scaleDownDelayAfterDelete, f"{base}.scaleDownDelayAfterDelete"
        ),
        scale_down_delay_after_failure_s=seconds(
            ca.scaleDownDelayAfterFailure, f"{base}.scaleDownDelayAfterFailure"
        ),
        max_scale_down_parallelism=_parallelism(ca, warn),
        max_drain_parallelism=ca.maxDrainParallelism,
        blocking_system_pod_disruption_timeout_s=seconds(
            ca.blockingSystemPodDisruptionTimeout, f"{base}.blockingSystemPodDisruptionTimeout"
        ),
        asg_launch_delay_min_s=delay_min,
        asg_launch_delay_max_s=delay_max,
        capacity_rebalance=ca.capacityRebalance,
        node_groups=groups,
        derived_max_size=ca.derivedGroupMaxSize,
        derived_groups=ca.derivedGroups,
        balance_similar_node_groups=ca.balanceSimilarNodeGroups,
        skip_nodes_with_system_pods=ca.skipNodesWithSystemPods,
        skip_nodes_with_local_storage=ca.skipNodesWithLocalStorage,
    )
    _warn_dead_settings(settings, seconds(spec.duration, "spec.duration"), warn)
    return settings


def _expander_chain(expander: str, fail: Any) -> tuple[str, ...]:
    """``spec.clusterAutoscaler.expander`` (comma-separated, as CA's ``--expander``) as a chain.

    Raises:
        InputError: an expander Cluster Autoscaler does not have (via ``fail``).
    """
    chain = tuple(e.strip() for e in expander.split(","))
    for e in chain:
        if e not in EXPANDERS:
            raise fail(
                f"unknown expander {e!r}; known: {', '.join(EXPANDERS)}",
                "spec.clusterAutoscaler.expander",
            )
    return chain


def _priorities(raw: dict[str, list[str]], fail: Any) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """``spec.clusterAutoscaler.priorities`` (the priority expander's ConfigMap: priority to
    node-group name regexes), sorted by key; Joiner's spot-first default when empty.

    Raises:
        InputError: a key that is not an integer or a pattern that is not a regex.
    """
    base = "spec.clusterAutoscaler"
    priorities: list[tuple[int, tuple[str, ...]]] = []
    for key, patterns in sorted(raw.items()):
        if not key.lstrip("-").isdigit():
            raise fail(f"priority {key!r} is not an integer", f"{base}.priorities")
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise fail(f"bad regex {p!r}: {exc}", f"{base}.priorities[{key}]") from exc
        priorities.append((int(key), tuple(patterns)))
    return tuple(priorities) if priorities else tuple(SPOT_FIRST_PRIORITIES)


def _node_groups(
    specs: list[NodeGroupModel],
    region: str,
    manifests: ManifestSet,
    subnets: tuple[Subnet, ...],
    catalog: Catalog,
    fail: Any,
) -> tuple[NodeGroupSpec, ...]:
    """``spec.clusterAutoscaler.nodeGroups`` as node-group specs.

    Raises:
        InputError: a repeated name, a NodePool not in the manifests, an instance type the
            region does not offer, a zone without a subnet, or ``minSize`` above ``maxSize``.
    """
    zones = {s.zone for s in subnets}
    offered = set(catalog.offered_types(region))
    pools = {p.name for p in manifests.nodepools}
    groups = []
    seen: set[str] = set()
    for i, g in enumerate(specs):
        where = f"spec.clusterAutoscaler.nodeGroups[{i}]"
        if g.name in seen:
            raise fail(f"duplicate node group name {g.name!r}", f"{where}.name")
        seen.add(g.name)
        _check_node_group(g, where, region, pools, offered, zones, fail)
        groups.append(
            NodeGroupSpec(
                name=g.name,
                nodepool=g.nodePool,
                instance_types=tuple(g.instanceTypes),
                on_demand_base=g.onDemandBaseCapacity,
                on_demand_percentage=g.onDemandPercentageAboveBaseCapacity,
                spot_allocation_strategy=g.spotAllocationStrategy,
                on_demand_allocation_strategy=g.onDemandAllocationStrategy,
                min_size=g.minSize,
                max_size=g.maxSize,
                zones=tuple(g.zones) if g.zones is not None else None,
            )
        )
    return tuple(groups)


def _check_node_group(
    g: NodeGroupModel,
    where: str,
    region: str,
    pools: set[str],
    offered: set[str],
    zones: set[str],
    fail: Any,
) -> None:
    """One node group's references: its NodePool, instance types and zones, and its sizes.

    Raises:
        InputError: the first bad reference or size (via ``fail``, at ``where``).
    """
    if g.nodePool not in pools:
        raise fail(
            f"NodePool {g.nodePool!r} is not in the manifests (have: "
            f"{', '.join(sorted(pools)) or 'none'})",
            f"{where}.nodePool",
        )
    for j, t in enumerate(g.instanceTypes):
        if t not in offered:
            raise fail(
                f"instance type {t!r} is not offered in {region}",
                f"{where}.instanceTypes[{j}]",
            )
    for j, z in enumerate(g.zones or []):
        if z not in zones:
            raise fail(
                f"zone {z!r} has no subnet (subnets' zones: {', '.join(sorted(zones))})",
                f"{where}.zones[{j}]",
            )
    if g.minSize > g.maxSize:
        raise fail(f"minSize {g.minSize} exceeds maxSize {g.maxSize}", f"{where}.minSize")


def _parallelism(ca: Any, warn: Any) -> int:
    """``maxScaleDownParallelism``, or the removed ``maxEmptyBulkDelete`` read as it when
    that is not set (with a warning either way: Cluster Autoscaler 1.3x dropped
    ``--max-empty-bulk-delete``)."""
    field = "spec.clusterAutoscaler.maxEmptyBulkDelete"
    if ca.maxEmptyBulkDelete is None:
        return int(ca.maxScaleDownParallelism)
    if "maxScaleDownParallelism" in ca.model_fields_set:
        warn(
            "Cluster Autoscaler no longer has --max-empty-bulk-delete; ignored, "
            f"maxScaleDownParallelism {ca.maxScaleDownParallelism} is set",
            field,
        )
        return int(ca.maxScaleDownParallelism)
    warn(
        "Cluster Autoscaler no longer has --max-empty-bulk-delete; read as "
        f"maxScaleDownParallelism {ca.maxEmptyBulkDelete} (empty and drained nodes deleted "
        "at once)",
        field,
    )
    return int(ca.maxEmptyBulkDelete)


def _warn_dead_settings(settings: AutoscalerSettings, duration_s: float, warn: Any) -> None:
    """Warn about flags that leave the baseline unable to do what they are for within the
    run: limits that admit no node, a minimum the cluster may never reach, a new-pod delay
    as long as the run, group minimums above the node total."""
    base = "spec.clusterAutoscaler"
    lim = settings.limits
    for field, (low, high) in (("coresTotal", lim.cores), ("memoryTotal", lim.memory_gib)):
        if high == 0:
            warn("a maximum of 0 lets Cluster Autoscaler add no node at all", f"{base}.{field}")
        elif low > 0:
            warn(
                f"scale-down stops at the minimum {low}; Cluster Autoscaler never adds nodes "
                "to reach it",
                f"{base}.{field}",
            )
    if settings.new_pod_scale_up_delay_s >= duration_s:
        warn(
            "as long as the run: no pod is ever old enough to trigger a scale-up",
            f"{base}.newPodScaleUpDelay",
        )
    minimums = sum(g.min_size for g in settings.node_groups)
    if lim.max_nodes_total and minimums > lim.max_nodes_total:
        warn(
            f"the node groups' minSize add up to {minimums}, above maxNodesTotal "
            f"{lim.max_nodes_total}: the ASGs start at their minimum regardless",
            f"{base}.maxNodesTotal",
        )


def _cluster_limits(ca: Any, base: str, fail: Any) -> ClusterLimits:
    """``maxNodesTotal``, ``coresTotal`` and ``memoryTotal`` as CA reads its flags."""
    ranges = []
    for name in ("coresTotal", "memoryTotal"):
        try:
            ranges.append(parse_min_max(getattr(ca, name)))
        except ValueError as exc:
            raise fail(str(exc), f"{base}.{name}") from exc
    return ClusterLimits(max_nodes_total=ca.maxNodesTotal, cores=ranges[0], memory_gib=ranges[1])


def interruption_settings(
    spec: ScenarioSpec, base: Path, file: str, obj: str
) -> InterruptionSettings:
    """``spec.interruption``: NTH Helm values inline or ``{file: values.yaml}``, plus Joiner's
    own ``rebalanceReplacement`` beside them (make before break, off by default)."""
    values = spec.interruption
    if values is None:
        return InterruptionSettings()
    values = dict(values)
    replacement = values.pop(REBALANCE_REPLACEMENT, False)
    if not isinstance(replacement, bool):
        raise InputError(
            f"must be true or false, got {replacement!r}",
            file=file,
            obj=obj,
            field=f"spec.interruption.{REBALANCE_REPLACEMENT}",
        )
    if "file" in values:
        if set(values) != {"file"} or not isinstance(values["file"], str):
            raise InputError(
                "give either {file: path} or the NTH values themselves, not both",
                file=file,
                obj=obj,
                field="spec.interruption",
            )
        path = base / values["file"]
        try:
            docs = read_documents(path)
        except InputError as exc:
            raise InputError(f"{exc}", file=file, obj=obj, field="spec.interruption.file") from exc
        if len(docs) != 1:
            raise InputError("expected one YAML document of NTH values", file=str(path))
        try:
            return InterruptionSettings.from_helm_values(
                docs[0], file=str(path), rebalance_replacement=replacement
            )
        except InputError as exc:
            raise InputError(f"{exc}", file=file, obj=obj, field="spec.interruption.file") from exc
    if not values:
        return InterruptionSettings(rebalance_replacement=replacement)
    try:
        return InterruptionSettings.from_helm_values(
            values, field="spec.interruption", rebalance_replacement=replacement
        )
    except InputError as exc:
        raise exc.located(file=file, obj=obj) from exc


def check_node_classes(
    manifests: ManifestSet, subnets: tuple[Subnet, ...], groups: tuple[SecurityGroup, ...]
) -> None:
    """Every selector term must match something in the simulated cloud (no silent guesses)."""
    from joiner.cloudprovider.simulated.provider import _matches

    for nc in manifests.nodeclasses:
        legacy = nc.source.kind == "AWSNodeTemplate"
        for i, t in enumerate(nc.subnet_selector_terms):
            if not any(_matches(t, s.id, dict(s.tags).get("Name", ""), s.tags) for s in subnets):
                have = ", ".join(f"{s.id} ({s.zone})" for s in subnets) or "none declared"
                raise InputError(
                    f"subnet {t.describe()} does not exist in the simulated cloud "
                    f"(subnets: {have}); "
                    "declare it under spec.cloud.subnets of the scenario",
                    file=nc.source.file,
                    obj=nc.source.ref,
                    field="spec.subnetSelector" if legacy else f"spec.subnetSelectorTerms[{i}]",
                )
        for i, t in enumerate(nc.security_group_selector_terms):
            if not any(_matches(t, g.id, g.name, g.tags) for g in groups):
                have = ", ".join(g.id for g in groups) or "none"
                raise InputError(
                    f"security group {t.describe()} does not exist in the simulated cloud "
                    f"(security groups: {have}); declare it under spec.cloud.securityGroups",
                    file=nc.source.file,
                    obj=nc.source.ref,
                    field="spec.securityGroupSelector"
                    if legacy
                    else f"spec.securityGroupSelectorTerms[{i}]",
                )
