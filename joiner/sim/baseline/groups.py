"""Node groups for the baseline: derived from the NodePools, or declared in the scenario.

Derived groups match what Joiner may launch: for each NodePool (by name), each instance type
its NodeClass offers that the pool's requirements allow, and each capacity type the pool
allows with an offering of that type, one single-type Auto Scaling group over the zones the
pool and its NodeClass's subnets allow: ``<pool>-<type>-<spot|od>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from joiner.api import labels
from joiner.api.objects import NodePool
from joiner.api.requirements import Requirement
from joiner.cloudprovider.types import CloudProvider, InstanceType, NodeClassNotReadyError
from joiner.sim.baseline.settings import NodeGroupSpec


def derive_groups(
    nodepools: dict[str, NodePool], cloud: CloudProvider, *, max_size: int
) -> list[NodeGroupSpec]:
    """One group per (NodePool, allowed instance type, allowed capacity type), spot first.

    NodePools whose NodeClass does not resolve contribute nothing (Joiner skips them too).
    """
    out: list[NodeGroupSpec] = []
    for name in sorted(nodepools):
        pool = nodepools[name]
        try:
            types = cloud.get_instance_types(pool.node_class_ref.name)
        except NodeClassNotReadyError:
            continue
        allowed_ct = pool.requirements.get_or_exists(labels.CAPACITY_TYPE)
        for it in sorted(types, key=lambda t: t.name):
            if it.requirements.intersects(pool.requirements) is not None:
                continue
            for ct, suffix, pct in (("spot", "spot", 0), ("on-demand", "od", 100)):
                if not allowed_ct.has(ct):
                    continue
                zones = sorted(
                    {
                        o.zone
                        for o in it.offerings
                        if o.capacity_type == ct and o.compatible(pool.requirements)
                    }
                )
                if not zones:
                    continue
                out.append(
                    NodeGroupSpec(
                        name=f"{name}-{it.name}-{suffix}",
                        nodepool=name,
                        instance_types=(it.name,),
                        on_demand_percentage=pct,
                        max_size=max_size,
                        zones=tuple(zones),
                    )
                )
    return out


@dataclass
class NodeGroup:
    """A node group at run time: its spec, resolved types, and the ASG's state.

    ``desired`` is the ASG's desired capacity; ``members`` the NodeClaim names of its live
    instances (launching, registered or Ready); ``launching`` the launch activities under way.
    """

    spec: NodeGroupSpec
    pool: NodePool
    types: tuple[InstanceType, ...]
    zones: tuple[str, ...]
    desired: int = 0
    members: list[str] = field(default_factory=list)
    launching: int = 0
    #: Members a rebalance recommendation put at risk (Capacity Rebalancing replaces them).
    at_risk: set[str] = field(default_factory=set)
    #: Nodes lost or at risk whose replacement has not launched yet (for the timeline).
    to_replace: list[str] = field(default_factory=list)
    #: Since when the group has had fewer registered nodes than desired (provision timeout).
    waiting_since_s: float | None = None
    backoff_until_s: float = 0.0
    backoff_s: float = 0.0
    last_failure_s: float | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def template(self) -> InstanceType:
        """CA's template node: the first override (field-landscape §1.4)."""
        return self.types[0]

    def template_pool(self) -> NodePool:
        """The NodePool narrowed to the template type, the group's capacity types and zones:
        what the scheduler packs pods onto to estimate a scale-up (CA's binpacking
        estimator over the template node)."""
        reqs = self.pool.requirements.add(
            Requirement.in_(labels.INSTANCE_TYPE, self.template.name),
            Requirement.in_(labels.CAPACITY_TYPE, *self.spec.capacity_types),
            Requirement.in_(labels.ZONE, *self.zones),
        )
        return replace(self.pool, name=self.name, requirements=reqs, limits=(), weight=0)

    def template_labels(self) -> dict[str, str]:
        """Labels a template node carries (first zone, first capacity type)."""
        it = self.template
        out: dict[str, str] = {}
        for key, req in it.requirements.items():
            value = req.any()
            if value is not None and key not in (labels.ZONE, labels.ZONE_ID):
                out[key] = value
        out.update(self.pool.requirements.labels())
        out.update(self.pool.node_labels())
        out[labels.ZONE] = self.zones[0]
        out[labels.CAPACITY_TYPE] = self.spec.capacity_types[0]
        out[labels.INSTANCE_TYPE] = it.name
        return out


def resolve_group(spec: NodeGroupSpec, pool: NodePool, cloud: CloudProvider) -> NodeGroup:
    """Bind a spec to its NodePool's instance types.

    Raises:
        ValueError: an instance type is not offered to the NodeClass, or no zone remains.
    """
    by_name = {it.name: it for it in cloud.get_instance_types(pool.node_class_ref.name)}
    types = []
    for t in spec.instance_types:
        it = by_name.get(t)
        if it is None:
            raise ValueError(f"instance type {t!r} is not offered in the NodeClass's zones")
        types.append(it)
    zones = sorted(
        {
            o.zone
            for it in types
            for o in it.offerings
            if o.capacity_type in spec.capacity_types
            and (spec.zones is None or o.zone in spec.zones)
        }
    )
    if not zones:
        raise ValueError("no zone offers these instance types with its capacity types")
    return NodeGroup(spec=spec, pool=pool, types=tuple(types), zones=tuple(zones))
