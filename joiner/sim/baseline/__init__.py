"""The Cluster Autoscaler baseline: CA's loop over Auto Scaling groups (``autoscaler``),
its node groups (``groups``) and parameters (``settings``)."""

from __future__ import annotations

import random
from collections.abc import Callable

from joiner.api.clock import Clock
from joiner.api.errors import InputError
from joiner.api.timeline import Timeline
from joiner.cloudprovider.types import CloudProvider
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.controllers.termination.controller import Terminator
from joiner.sim.baseline.autoscaler import ClusterAutoscaler
from joiner.sim.baseline.groups import NodeGroup, derive_groups, resolve_group
from joiner.sim.baseline.settings import AutoscalerSettings, NodeGroupSpec
from joiner.state.cluster import ClusterState, Pod

#: Policy names (``spec.compare``; ``summary.json`` ``policies`` keys).
JOINER = "joiner"
#: Joiner with ``packing: cost-optimal`` whatever the scenario's own setting.
COST_OPTIMAL = "cost-optimal"
CLUSTER_AUTOSCALER = "cluster-autoscaler"
POLICIES = (JOINER, COST_OPTIMAL, CLUSTER_AUTOSCALER)


def build_autoscaler(
    state: ClusterState,
    cloud: CloudProvider,
    lifecycle: Lifecycle,
    clock: Clock,
    rng: random.Random,
    terminator: Terminator,
    timeline: Timeline,
    settings: AutoscalerSettings,
    *,
    replicated: Callable[[Pod], bool],
) -> ClusterAutoscaler:
    """The baseline's Cluster Autoscaler with its node groups: ``settings.node_groups`` when
    declared, else derived from the NodePools (``groups.derive_groups``).

    Raises:
        InputError: a declared group's types or zones do not resolve in its NodeClass.
    """
    specs: tuple[NodeGroupSpec, ...] | list[NodeGroupSpec] = settings.node_groups
    if not specs:
        specs = derive_groups(
            state.nodepools,
            cloud,
            max_size=settings.derived_max_size,
            derivation=settings.derived_groups,
        )
    groups: list[NodeGroup] = []
    for i, spec in enumerate(specs):
        pool = state.nodepools[spec.nodepool]
        try:
            groups.append(resolve_group(spec, pool, cloud))
        except ValueError as exc:
            raise InputError(
                f"node group {spec.name!r}: {exc}",
                field=f"spec.clusterAutoscaler.nodeGroups[{i}]",
            ) from exc
    ca = ClusterAutoscaler(
        state, cloud, lifecycle, clock, rng, terminator, timeline, settings, groups
    )
    ca.replicated = replicated
    return ca


__all__ = [
    "CLUSTER_AUTOSCALER",
    "COST_OPTIMAL",
    "JOINER",
    "POLICIES",
    "AutoscalerSettings",
    "ClusterAutoscaler",
    "NodeGroup",
    "NodeGroupSpec",
    "build_autoscaler",
]
