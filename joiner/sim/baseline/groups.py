"""Node groups for the baseline: derived from the NodePools, or declared in the scenario.

The default derivation (``shape``) is what AWS's Cluster Autoscaler guidance recommends
(EKS Best Practices, "Cluster Autoscaler": Spot section; CA ``cloudprovider/aws/README.md``
"Using Mixed Instances Policies and Spot Instances"): for each NodePool, its launchable
instance types are grouped by shape (architecture, vCPUs, memory, GPUs: CA builds one
template node per group from the first override, so every override must have the same
vCPU and memory), and each shape becomes two Auto Scaling groups with a
MixedInstancesPolicy over those types: a Spot group (``OnDemandPercentageAboveBaseCapacity``
0) and an on-demand group (100), over the zones the pool and its NodeClass allow:
``<pool>-<arch>-<cpu>cpu-<mem>gib-<spot|on-demand>``. At most ``MAX_OVERRIDES`` types per
group (the policy's overrides limit), cheapest on-demand first. ``instance-type`` is the
older single-type derivation (``<pool>-<type>-<spot|od>``), kept for comparison.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from joiner.api import labels
from joiner.api.objects import NodePool
from joiner.api.requirements import Requirement
from joiner.cloudprovider.types import CloudProvider, InstanceType, NodeClassNotReadyError
from joiner.sim.baseline.settings import NodeGroupSpec

#: Launch-template overrides a MixedInstancesPolicy may list.
MAX_OVERRIDES = 40

#: Derivations of groups from NodePools (``spec.clusterAutoscaler.derivedGroups``).
DERIVATIONS = ("shape", "instance-type")


def _shape(it: InstanceType) -> tuple[str, int, int, int]:
    """(arch, vCPUs, memory MiB, GPUs): types of one shape share CA's template node."""

    def num(key: str) -> int:
        value = it.label(key)
        return int(value) if value is not None and value.isdigit() else 0

    return (
        it.label(labels.ARCH) or "",
        num(labels.INSTANCE_CPU),
        num(labels.INSTANCE_MEMORY),
        num(labels.INSTANCE_GPU_COUNT),
    )


def _shape_name(shape: tuple[str, int, int, int]) -> str:
    arch, cpu, mem, gpu = shape
    name = f"{arch}-{cpu}cpu-{mem / 1024:g}gib"
    return f"{name}-{gpu}gpu" if gpu else name


def _on_demand_price(it: InstanceType) -> float:
    prices = [o.price_per_hour for o in it.offerings if o.capacity_type == "on-demand"]
    return min(prices) if prices else float("inf")


def _pools(
    nodepools: dict[str, NodePool], cloud: CloudProvider
) -> Iterator[tuple[str, NodePool, list[InstanceType]]]:
    """Each NodePool (by name) whose NodeClass resolves and that can launch at all, with the
    instance types its requirements allow."""
    for name in sorted(nodepools):
        pool = nodepools[name]
        try:
            types = cloud.get_instance_types(pool.node_class_ref.name)
        except NodeClassNotReadyError:
            continue
        if pool.own_label_conflict() is None:
            yield (
                name,
                pool,
                [it for it in types if it.requirements.intersects(pool.requirements) is None],
            )


def derive_groups(
    nodepools: dict[str, NodePool],
    cloud: CloudProvider,
    *,
    max_size: int,
    derivation: str = "shape",
) -> list[NodeGroupSpec]:
    """The node groups AWS's guidance sets up for these NodePools (module docstring): per
    pool and shape, a Spot and an on-demand MixedInstancesPolicy group (``shape``), or one
    group per type and capacity type (``instance-type``). Spot groups come first.

    NodePools whose NodeClass does not resolve contribute nothing (Joiner skips them too).
    """
    if derivation == "instance-type":
        return _per_type_groups(nodepools, cloud, max_size=max_size)
    out: list[NodeGroupSpec] = []
    for name, pool, types in _pools(nodepools, cloud):
        allowed_ct = pool.requirements.get_or_exists(labels.CAPACITY_TYPE)
        shapes: dict[tuple[str, int, int, int], list[InstanceType]] = {}
        for it in types:
            shapes.setdefault(_shape(it), []).append(it)
        for shape in sorted(shapes):
            members = sorted(shapes[shape], key=lambda t: (_on_demand_price(t), t.name))
            for ct, pct in (("spot", 0), ("on-demand", 100)):
                if not allowed_ct.has(ct):
                    continue
                offered = [
                    it
                    for it in members
                    if any(
                        o.capacity_type == ct and o.compatible(pool.requirements)
                        for o in it.offerings
                    )
                ][:MAX_OVERRIDES]
                if not offered:
                    continue
                zones = sorted(
                    {
                        o.zone
                        for it in offered
                        for o in it.offerings
                        if o.capacity_type == ct and o.compatible(pool.requirements)
                    }
                )
                out.append(
                    NodeGroupSpec(
                        name=f"{name}-{_shape_name(shape)}-{ct}",
                        nodepool=name,
                        instance_types=tuple(it.name for it in offered),
                        on_demand_percentage=pct,
                        max_size=max_size,
                        zones=tuple(zones),
                    )
                )
    return out


def _per_type_groups(
    nodepools: dict[str, NodePool], cloud: CloudProvider, *, max_size: int
) -> list[NodeGroupSpec]:
    """One group per (NodePool, allowed instance type, allowed capacity type), spot first."""
    out: list[NodeGroupSpec] = []
    for name, pool, types in _pools(nodepools, cloud):
        allowed_ct = pool.requirements.get_or_exists(labels.CAPACITY_TYPE)
        for it in sorted(types, key=lambda t: t.name):
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
    by_name = _by_name(cloud.get_instance_types(pool.node_class_ref.name))
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


_INDEX: list[tuple[Sequence[InstanceType], dict[str, InstanceType]]] = []


def _by_name(types: Sequence[InstanceType]) -> dict[str, InstanceType]:
    """``types`` by name; the last list's index is kept (the cloud hands out the same list
    object until availability changes, and every group of a NodeClass resolves against it)."""
    if _INDEX and _INDEX[0][0] is types:
        return _INDEX[0][1]
    index = {it.name: it for it in types}
    _INDEX[:] = [(types, index)]
    return index
