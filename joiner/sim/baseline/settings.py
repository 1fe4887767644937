"""Cluster Autoscaler's parameters, with its AWS defaults, and the node groups it scales.

Every default matches Cluster Autoscaler's flag of the same name (field-landscape §1:
``cluster-autoscaler/FAQ.md`` and its options code), except where AWS's guidance for
running CA with Spot (EKS Best Practices, "Cluster Autoscaler"; CA
``cloudprovider/aws/README.md``) sets another value, which the baseline follows so the
comparison is against CA as AWS users run it:

* ``expander``: ``priority,least-waste`` (CA's flag default is ``random``) with
  ``priorities`` ``{50: [".*-spot"], 10: [".*"]}``: Spot groups first, on-demand as the
  fallback, least waste among equals;
* ``balance_similar_node_groups``: true (CA's default is false);
* node groups: a Spot and an on-demand MixedInstancesPolicy group per NodePool and
  instance shape (``groups.derive_groups``).

The ASG launch delay is not a CA flag: it is the time an Auto Scaling group takes from a
desired-capacity change to a running instance, on top of the node's boot (field-landscape
§1.3: 3-5 minutes end to end with ASGs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from joiner.sim.baseline.limits import ClusterLimits

#: The expanders Joiner's baseline implements (CA ``--expander``; ``price`` is GCE-only).
EXPANDERS = ("random", "most-pods", "least-waste", "priority")

#: AWS's guidance: Spot groups first, every other group (on-demand) as the fallback.
SPOT_FIRST_PRIORITIES: tuple[tuple[int, tuple[str, ...]], ...] = (
    (50, (".*-spot",)),
    (10, (".*",)),
)


@dataclass(frozen=True, slots=True)
class NodeGroupSpec:
    """One Auto Scaling group, as CA sees it.

    Attributes:
        name: the group's name (what the ``priority`` expander's patterns match).
        nodepool: the NodePool whose NodeClass, labels, taints and requirements the group's
            launch template carries.
        instance_types: the mixed-instances policy's overrides; CA builds its template node
            from the first one only (field-landscape §1.4).
        on_demand_base: ``OnDemandBaseCapacity``: the first n instances are on-demand.
        on_demand_percentage: ``OnDemandPercentageAboveBaseCapacity`` (0-100): the share of
            instances above the base that are on-demand (rounded up, as EC2 does); 0 is an
            all-spot group, 100 an all-on-demand one.
        min_size / max_size: the ASG's bounds; CA never goes outside them.
        zones: the group's subnets' zones (None: every zone of the NodeClass).
        spot_allocation_strategy: ``SpotAllocationStrategy`` of the group's
            InstancesDistribution. Default ``price-capacity-optimized``, which AWS recommends
            for Auto Scaling groups (EC2 Auto Scaling User Guide, "Allocation strategies";
            the API's own default is ``lowest-price``).
        on_demand_allocation_strategy: ``OnDemandAllocationStrategy``; default
            ``prioritized`` (the API's default: the overrides' order).
    """

    name: str
    nodepool: str
    instance_types: tuple[str, ...]
    on_demand_base: int = 0
    on_demand_percentage: int = 100
    min_size: int = 0
    max_size: int = 1000
    zones: tuple[str, ...] | None = None
    spot_allocation_strategy: str = "price-capacity-optimized"
    on_demand_allocation_strategy: str = "prioritized"

    @property
    def capacity_types(self) -> tuple[str, ...]:
        """The capacity types the group may launch (spot first)."""
        out = []
        if self.on_demand_percentage < 100:
            out.append("spot")
        if self.on_demand_percentage > 0 or self.on_demand_base > 0:
            out.append("on-demand")
        return tuple(out)

    def on_demand_wanted(self, size: int) -> int:
        """How many of ``size`` instances the mixed-instances policy makes on-demand."""
        base = min(self.on_demand_base, size)
        above = size - base
        return base + -(-above * self.on_demand_percentage // 100)


@dataclass(frozen=True, slots=True)
class AutoscalerSettings:
    """Cluster Autoscaler flags (seconds where CA takes a duration) and the ASG model.

    Raises nothing itself; ``scenario.py`` validates user input into it.
    """

    scan_interval_s: float = 10.0
    #: ``--new-pod-scale-up-delay``: pods younger than this trigger no scale-up.
    new_pod_scale_up_delay_s: float = 0.0
    #: A chain such as ``("priority", "least-waste")``: each filters the options for the
    #: next, the last tie is broken by the seeded RNG (CA >= 1.23).
    expander: tuple[str, ...] = ("priority", "least-waste")
    #: ``priority`` expander ConfigMap: (priority, regexes), any order.
    priorities: tuple[tuple[int, tuple[str, ...]], ...] = SPOT_FIRST_PRIORITIES
    #: ``--balance-similar-node-groups``: a scale-up is split across groups similar to the
    #: chosen one (same template capacity, labels but zone, taints), smallest first.
    balance_similar_node_groups: bool = True
    #: ``--skip-nodes-with-system-pods``: a kube-system pod without a PDB (not a DaemonSet
    #: pod) blocks removing its node.
    skip_nodes_with_system_pods: bool = True
    #: ``--skip-nodes-with-local-storage``: a pod with an emptyDir (not in memory) or
    #: hostPath volume blocks removing its node.
    skip_nodes_with_local_storage: bool = True
    max_node_provision_time_s: float = 900.0
    initial_node_group_backoff_s: float = 300.0
    max_node_group_backoff_s: float = 1800.0
    node_group_backoff_reset_s: float = 3 * 3600.0
    scale_down_utilization_threshold: float = 0.5
    scale_down_unneeded_time_s: float = 600.0
    scale_down_delay_after_add_s: float = 600.0
    #: None: the scan interval (CA before 1.2x); CA 1.36's flag default is 0s.
    scale_down_delay_after_delete_s: float | None = 0.0
    scale_down_delay_after_failure_s: float = 180.0
    #: ``--max-scale-down-parallelism``: nodes (empty and drained) deleted at once, those
    #: still being deleted included (CA ``budgets.ScaleDownBudgetProcessor.CropNodes``).
    max_scale_down_parallelism: int = 10
    #: ``--max-drain-parallelism``: non-empty nodes drained at once.
    max_drain_parallelism: int = 1
    #: ``--blocking-system-pod-distruption-timeout``: a kube-system pod without a PDB blocks
    #: its node's removal only this long after its creation (CA ``drainability/rules/system``).
    blocking_system_pod_disruption_timeout_s: float = 3600.0
    #: ``--max-nodes-total``, ``--cores-total``, ``--memory-total`` (``limits``).
    limits: ClusterLimits = field(default_factory=ClusterLimits)
    #: ASG: from a desired-capacity change (or a lost instance) to the instance launching.
    asg_launch_delay_min_s: float = 60.0
    asg_launch_delay_max_s: float = 120.0
    #: ASG Capacity Rebalancing: a rebalance recommendation launches a replacement, and the
    #: at-risk instance is drained and terminated once it is in service.
    capacity_rebalance: bool = False
    #: Declared node groups; empty: derived from the NodePools.
    node_groups: tuple[NodeGroupSpec, ...] = ()
    #: ``maxSize`` of derived groups.
    derived_max_size: int = 1000
    #: How groups are derived from NodePools: ``shape`` (a Spot and an on-demand
    #: mixed-instances group per shape) or ``instance-type`` (one per type and capacity type).
    derived_groups: str = "shape"

    @property
    def delay_after_delete_s(self) -> float:
        """``--scale-down-delay-after-delete`` (defaults to the scan interval)."""
        if self.scale_down_delay_after_delete_s is None:
            return self.scan_interval_s
        return self.scale_down_delay_after_delete_s

    def priority_of(self, group: str) -> int | None:
        """The highest priority whose pattern matches ``group`` (full match), or None."""
        best: int | None = None
        for prio, patterns in self.priorities:
            if any(re.fullmatch(p, group) for p in patterns) and (best is None or prio > best):
                best = prio
        return best

    def parameters(self) -> dict[str, Any]:
        """Every parameter as the report lists it (camelCase, units in names)."""
        return {
            "scanIntervalSeconds": self.scan_interval_s,
            "newPodScaleUpDelaySeconds": self.new_pod_scale_up_delay_s,
            "expander": ",".join(self.expander),
            "priorities": {str(p): list(pats) for p, pats in sorted(self.priorities)},
            "estimator": "binpacking",
            "maxNodeProvisionTimeSeconds": self.max_node_provision_time_s,
            "initialNodeGroupBackoffSeconds": self.initial_node_group_backoff_s,
            "maxNodeGroupBackoffSeconds": self.max_node_group_backoff_s,
            "nodeGroupBackoffResetSeconds": self.node_group_backoff_reset_s,
            "scaleDownUtilizationThreshold": self.scale_down_utilization_threshold,
            "scaleDownUnneededTimeSeconds": self.scale_down_unneeded_time_s,
            "scaleDownDelayAfterAddSeconds": self.scale_down_delay_after_add_s,
            "scaleDownDelayAfterDeleteSeconds": self.delay_after_delete_s,
            "scaleDownDelayAfterFailureSeconds": self.scale_down_delay_after_failure_s,
            "maxScaleDownParallelism": self.max_scale_down_parallelism,
            "maxDrainParallelism": self.max_drain_parallelism,
            "blockingSystemPodDisruptionTimeoutSeconds": (
                self.blocking_system_pod_disruption_timeout_s
            ),
            **self.limits.parameters(),
            "balanceSimilarNodeGroups": self.balance_similar_node_groups,
            "skipNodesWithSystemPods": self.skip_nodes_with_system_pods,
            "skipNodesWithLocalStorage": self.skip_nodes_with_local_storage,
            "asgLaunchDelaySeconds": {
                "min": self.asg_launch_delay_min_s,
                "max": self.asg_launch_delay_max_s,
            },
            "capacityRebalance": self.capacity_rebalance,
            "nodeGroupsDeclared": bool(self.node_groups),
            "derivedGroupMaxSize": self.derived_max_size,
            "derivedGroups": self.derived_groups,
        }
