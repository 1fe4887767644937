"""The Auto Scaling groups the Cluster Autoscaler baseline drives, in virtual time.

A desired capacity above the live instances starts launch activities, each launching
``asg_launch_delay`` (60-120 s) later into the zone with the fewest of the group's instances
that has an available offering (ASG AZ balancing); the group's MixedInstancesPolicy decides
spot or on-demand (``OnDemandBaseCapacity``, ``OnDemandPercentageAboveBaseCapacity``) and the
NodeClaim lifecycle buys from the simulated cloud with the group's allocation strategies. A
failed launch is retried after another delay (CA times the group out). An instance lost
without CA asking (a Spot reclaim, a drain by the interruption handler) is replaced to keep
the desired capacity. With Capacity Rebalancing, a rebalance recommendation launches the
replacement first and the at-risk node is drained once a node of the group turns Ready
(EC2 Auto Scaling "Capacity Rebalancing").
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from functools import partial

from joiner.api import labels
from joiner.api.clock import Clock
from joiner.api.requirements import Requirement
from joiner.cloudprovider.types import CloudProvider, CloudProviderError, InstanceType
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.controllers.termination.controller import Terminator, cordon
from joiner.sim.baseline.groups import NodeGroup
from joiner.sim.baseline.settings import AutoscalerSettings
from joiner.state.cluster import ClusterState, Node, NodeClaim

log = logging.getLogger(__name__)


@dataclass
class AutoscalerStats:
    """Counters for the summary's ``provisioning`` block."""

    scans: int = 0
    scans_skipped: int = 0
    scale_ups: int = 0
    nodes_requested: int = 0
    launches: int = 0
    launch_failures: int = 0
    replacements: int = 0
    scale_downs: int = 0
    provision_timeouts: int = 0


_SUFFIX = "abcdefghijklmnopqrstuvwxyz0123456789"


class AutoScalingGroups:
    """The ASG side of the baseline: desired capacity, launches, replacements, rebalancing.

    ``rng`` is the autoscaler's seeded stream (launch delays and instance names draw from
    it, in the order the events happen); ``stats`` is the autoscaler's, whose ``launches``,
    ``launch_failures`` and ``replacements`` the ASGs count.
    """

    def __init__(
        self,
        state: ClusterState,
        cloud: CloudProvider,
        lifecycle: Lifecycle,
        clock: Clock,
        rng: random.Random,
        terminator: Terminator,
        settings: AutoscalerSettings,
        stats: AutoscalerStats,
    ) -> None:
        self._state = state
        self._cloud = cloud
        self._lifecycle = lifecycle
        self._clock = clock
        self._rng = rng
        self._terminator = terminator
        self.settings = settings
        self._owner: dict[str, NodeGroup] = {}
        self.stats = stats
        #: Per group: (the cloud's type list, the group's type names, the group's types).
        self._types: dict[
            str, tuple[list[InstanceType], tuple[str, ...], tuple[InstanceType, ...]]
        ] = {}

    def owner(self, claim_name: str) -> NodeGroup | None:
        """The group whose instance the NodeClaim ``claim_name`` is, or ``None``."""
        return self._owner.get(claim_name)

    def node(self, claim_name: str) -> Node | None:
        """The Node of a group member's NodeClaim, once it registered."""
        claim = self._state.nodeclaims[claim_name]
        return self._state.node_of_claim(claim)

    def set_desired(self, g: NodeGroup, desired: int) -> None:
        """Set ``g``'s desired capacity (clamped to min/max size) and start launches."""
        if desired > g.desired:
            # CA's scale-up request: each new one restarts the provision timer.
            g.waiting_since_s = self._clock.now()
        g.desired = max(g.spec.min_size, min(g.spec.max_size, desired))
        self.reconcile(g)

    def live_members(self, g: NodeGroup) -> int:
        """Members not at risk (a rebalance recommendation marks them to be replaced)."""
        return sum(1 for m in g.members if m not in g.at_risk)

    def reconcile(self, g: NodeGroup) -> None:
        """Start launch activities until live instances plus launches reach desired."""
        while self.live_members(g) + g.launching < g.desired:
            g.launching += 1
            self._clock.after(self._launch_delay(), partial(self._launch, g), label="asg-launch")

    def adopt(self, g: NodeGroup, claim: NodeClaim) -> None:
        """``claim``, running before the simulation started, is an instance of ``g``: a
        member, counted in its desired capacity (an ASG's desired capacity counts its
        running instances)."""
        g.members.append(claim.name)
        g.desired = min(g.spec.max_size, g.desired + 1)
        self._owner[claim.name] = g

    def forget(self, g: NodeGroup, claim_name: str) -> None:
        """``claim_name`` is no longer an instance of ``g``."""
        if claim_name in g.members:
            g.members.remove(claim_name)
        g.at_risk.discard(claim_name)
        self._owner.pop(claim_name, None)

    def replace_lost(self, g: NodeGroup, claim: NodeClaim) -> None:
        """An instance of ``g`` is gone without CA asking: replace it while the live
        instances and launches are below the desired capacity."""
        if self.live_members(g) + g.launching < g.desired:
            self.stats.replacements += 1
            g.to_replace.append(claim.node_name or claim.name)
        self.reconcile(g)

    def rebalance(self, claim: NodeClaim) -> None:
        """A rebalance recommendation for ``claim``: with Capacity Rebalancing the ASG launches
        a replacement now and drains the at-risk node once the replacement is Ready."""
        g = self._owner.get(claim.name)
        if g is None or not self.settings.capacity_rebalance or claim.name in g.at_risk:
            return
        g.at_risk.add(claim.name)
        g.to_replace.append(claim.node_name or claim.name)
        self.reconcile(g)

    def node_ready(self, claim: NodeClaim) -> None:
        """A node of a group turned Ready: Capacity Rebalancing drains the group's first
        at-risk node (by name)."""
        g = self._owner.get(claim.name)
        if g is None:
            return
        for name in sorted(g.at_risk):
            node = self.node(name)
            if node is None:
                continue
            if not node.deleting:
                node.deleting = True
                cordon(node)
                self._terminator.drain(node, "capacity rebalance")
            break

    def _launch_delay(self) -> float:
        s = self.settings
        return self._rng.uniform(s.asg_launch_delay_min_s, s.asg_launch_delay_max_s)

    def _launch(self, g: NodeGroup) -> None:
        if g.launching <= 0:
            return  # cancelled by a provision timeout
        if self.live_members(g) >= g.desired:
            g.launching -= 1
            return
        size = len(g.members) + 1
        on_demand = sum(
            1
            for m in g.members
            if (c := self._state.nodeclaims[m]).instance is not None
            and c.instance.offering.capacity_type == labels.CAPACITY_TYPE_ON_DEMAND
        )
        ct = (
            labels.CAPACITY_TYPE_ON_DEMAND
            if on_demand < g.spec.on_demand_wanted(size)
            else labels.CAPACITY_TYPE_SPOT
        )
        zone = self._zone_for(g, ct)
        if zone is None:
            self._launch_failed(g, f"no available {ct} offering in {', '.join(g.zones)}")
            return
        types = self._group_types(g)
        reqs = g.pool.requirements.add(
            Requirement.in_(labels.INSTANCE_TYPE, *g.spec.instance_types),
            Requirement.in_(labels.CAPACITY_TYPE, ct),
            Requirement.in_(labels.ZONE, zone),
        )
        claim = NodeClaim(
            name=self._name(g),
            nodepool=g.pool.name,
            node_class=g.pool.node_class_ref.name,
            requirements=reqs,
            requests={},
            instance_type_options=types,
            created_at_s=self._clock.now(),
            replaces=(g.to_replace.pop(0),) if g.to_replace else (),
        )
        self._state.nodeclaims[claim.name] = claim
        self._owner[claim.name] = g
        g.members.append(claim.name)
        try:
            self._lifecycle.launch(
                claim,
                spot_allocation_strategy=g.spec.spot_allocation_strategy,
                on_demand_allocation_strategy=g.spec.on_demand_allocation_strategy,
            )
        except CloudProviderError as exc:
            self.forget(g, claim.name)
            self._launch_failed(g, str(exc))
            return
        g.launching -= 1
        self.stats.launches += 1

    def _launch_failed(self, g: NodeGroup, reason: str) -> None:
        """The ASG retries a failed launch after another delay (CA times it out)."""
        self.stats.launch_failures += 1
        log.info("asg launch failed group=%s reason=%s", g.name, reason)
        self._clock.after(self._launch_delay(), lambda: self._launch(g), label="asg-launch")

    def _group_types(self, g: NodeGroup) -> tuple[InstanceType, ...]:
        """The cloud's current types that are among ``g``'s, in the cloud's order; found once
        per group and type list (the cloud hands out the same list while its types and
        prices are unchanged)."""
        types = self._cloud.get_instance_types(g.pool.node_class_ref.name)
        hit = self._types.get(g.name)
        if hit is None or hit[0] is not types or hit[1] is not g.spec.instance_types:
            names = frozenset(g.spec.instance_types)
            hit = (types, g.spec.instance_types, tuple(it for it in types if it.name in names))
            self._types[g.name] = hit
        return hit[2]

    def _zone_for(self, g: NodeGroup, ct: str) -> str | None:
        """The zone with the fewest of the group's instances that has an available offering
        of ``ct`` for one of its types (ASG AZ balancing), ties by name."""
        types = self._group_types(g)
        counts: dict[str, int] = dict.fromkeys(g.zones, 0)
        for m in g.members:
            c = self._state.nodeclaims[m]
            if c.instance is not None and c.instance.offering.zone in counts:
                counts[c.instance.offering.zone] += 1
        usable = [
            z
            for z in g.zones
            if any(
                o.zone == z and o.capacity_type == ct and o.available
                for it in types
                for o in it.offerings
            )
        ]
        if not usable:
            return None
        return min(usable, key=lambda z: (counts[z], z))

    def _name(self, g: NodeGroup) -> str:
        while True:
            suffix = "".join(self._rng.choice(_SUFFIX) for _ in range(5))
            name = f"{g.name}-{suffix}"
            if name not in self._state.nodeclaims:
                return name
