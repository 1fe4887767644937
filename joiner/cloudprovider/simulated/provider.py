"""A deterministic EC2 stand-in: subnets, security groups, instance types and launches.

Launch picks the offering as EC2 Fleet would for Karpenter's request (aws-semantics §1.6):
types whose cheapest offering costs more than the cheapest compatible on-demand offering are
dropped (``filterUnwantedSpot``), then the capacity type is chosen (spot before on-demand
when both are allowed and any compatible spot offering is available), then the lowest price
wins, ties broken by lower interruption rate,
then instance-type name, then zone.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from joiner.api import labels
from joiner.api.clock import Clock
from joiner.api.objects import NodeClass, SelectorTerm
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.instancetype import build_instance_types
from joiner.cloudprovider.types import (
    CreateError,
    Instance,
    InstanceType,
    InsufficientCapacityError,
    LaunchRequest,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    Offering,
    SecurityGroup,
    Subnet,
)


def default_subnets(catalog: Catalog, region: str) -> list[Subnet]:
    """One subnet per zone of ``region``: id ``subnet-<zone>``, tagged ``Name=<zone>``."""
    return [
        Subnet(id=f"subnet-{zone}", zone=zone, zone_id=zone_id, tags=(("Name", zone),))
        for zone, zone_id in catalog.zones(region)
    ]


def _matches(term: SelectorTerm, ident: str, name: str, tags: Sequence[tuple[str, str]]) -> bool:
    if term.id:
        return term.id == ident
    if term.name:
        return term.name == name
    have = dict(tags)
    # Karpenter: a tag value "*" matches any value of that key.
    return all(k in have and (v == "*" or have[k] == v) for k, v in term.tags)


def _filter_unwanted_spot(
    candidates: list[tuple[InstanceType, Offering]],
) -> list[tuple[InstanceType, Offering]]:
    """Drop types whose cheapest offering costs more than the cheapest on-demand offering.

    Karpenter AWS ``filterUnwantedSpot``: this keeps a large spot type from winning over a
    cheaper, sufficient on-demand one. The type holding the cheapest on-demand offering always
    survives, so the result is empty only when the input is.
    """
    on_demand = [o.price_per_hour for _, o in candidates if o.capacity_type == "on-demand"]
    if not on_demand:
        return candidates
    cheapest_od = min(on_demand)
    cheapest: dict[str, float] = {}
    for it, o in candidates:
        cheapest[it.name] = min(cheapest.get(it.name, o.price_per_hour), o.price_per_hour)
    return [(it, o) for it, o in candidates if cheapest[it.name] <= cheapest_od]


class SimulatedCloudProvider:
    """CloudProvider over the packaged catalog; see the module docstring for launch rules."""

    def __init__(
        self,
        catalog: Catalog,
        region: str,
        clock: Clock,
        rng: random.Random,
        *,
        subnets: Sequence[Subnet],
        security_groups: Sequence[SecurityGroup],
        node_classes: Sequence[NodeClass],
    ) -> None:
        self.catalog = catalog
        self.region = region
        self._clock = clock
        self._rng = rng
        self.subnets = list(subnets)
        self.security_groups = list(security_groups)
        self.node_classes = {n.name: n for n in node_classes}
        self._types: dict[str, list[InstanceType]] = {}
        self._instances: dict[str, Instance] = {}

    # -- NodeClass resolution ------------------------------------------------------------

    def resolve_subnets(self, node_class: NodeClass) -> list[Subnet]:
        """Subnets any selector term matches (terms OR, tags inside a term AND), by id."""
        found = {
            s.id: s
            for s in self.subnets
            for t in node_class.subnet_selector_terms
            if _matches(t, s.id, dict(s.tags).get("Name", ""), s.tags)
        }
        return [found[k] for k in sorted(found)]

    def resolve_security_groups(self, node_class: NodeClass) -> list[SecurityGroup]:
        """Security groups any selector term matches, by id."""
        found = {
            g.id: g
            for g in self.security_groups
            for t in node_class.security_group_selector_terms
            if _matches(t, g.id, g.name, g.tags)
        }
        return [found[k] for k in sorted(found)]

    def unresolved_terms(self, node_class: NodeClass) -> list[tuple[str, int, SelectorTerm]]:
        """Selector terms that match nothing: (field, index, term). Used to reject bad input."""
        out: list[tuple[str, int, SelectorTerm]] = []
        for i, t in enumerate(node_class.subnet_selector_terms):
            if not any(
                _matches(t, s.id, dict(s.tags).get("Name", ""), s.tags) for s in self.subnets
            ):
                out.append(("subnet", i, t))
        for i, t in enumerate(node_class.security_group_selector_terms):
            if not any(_matches(t, g.id, g.name, g.tags) for g in self.security_groups):
                out.append(("securityGroup", i, t))
        return out

    def _node_class(self, name: str) -> NodeClass:
        nc = self.node_classes.get(name)
        if nc is None:
            raise NodeClassNotReadyError(f"NodeClass {name!r} does not exist")
        return nc

    # -- CloudProvider -------------------------------------------------------------------

    def get_instance_types(self, node_class: str) -> list[InstanceType]:
        """Every catalog type offered in the region, with offerings in the NodeClass's zones."""
        cached = self._types.get(node_class)
        if cached is not None:
            return cached
        nc = self._node_class(node_class)
        subnets = self.resolve_subnets(nc)
        if not subnets:
            raise NodeClassNotReadyError(f"NodeClass {node_class!r} resolves to no subnet")
        if not self.resolve_security_groups(nc):
            raise NodeClassNotReadyError(f"NodeClass {node_class!r} resolves to no security group")
        zones = sorted({(s.zone, s.zone_id) for s in subnets})
        types = build_instance_types(
            self.catalog,
            self.region,
            zones,
            kubelet=nc.kubelet,
            ami_family=nc.ami_family,
            root_volume_bytes=nc.root_volume_bytes,
        )
        self._types[node_class] = types
        return types

    def create(self, request: LaunchRequest) -> Instance:
        """Launch one instance; see the module docstring for the choice of offering.

        Raises:
            NodeClassNotReadyError: the NodeClass does not resolve.
            InsufficientCapacityError: no allowed offering is available.
        """
        nc = self._node_class(request.node_class)
        reqs = request.requirements
        candidates: list[tuple[InstanceType, Offering]] = [
            (it, o)
            for it in request.instance_types
            for o in it.offerings
            if o.available and o.compatible(reqs)
        ]
        if not candidates:
            raise InsufficientCapacityError(
                f"no available offering for nodeclaim {request.nodeclaim_name} "
                f"({len(request.instance_types)} instance types)"
            )
        candidates = _filter_unwanted_spot(candidates)
        allowed_ct = reqs.get_or_exists(labels.CAPACITY_TYPE)
        capacity_type = next(
            ct
            for ct in labels.CAPACITY_TYPE_PRECEDENCE
            if allowed_ct.has(ct) and any(o.capacity_type == ct for _, o in candidates)
        )
        chosen = [(it, o) for it, o in candidates if o.capacity_type == capacity_type]
        it, offering = min(
            chosen,
            key=lambda c: (
                c[1].price_per_hour,
                c[1].interruption_rate_per_hour,
                c[0].name,
                c[1].zone,
            ),
        )
        subnet = next((s for s in self.resolve_subnets(nc) if s.zone == offering.zone), None)
        if subnet is None:
            raise CreateError("NoSubnet", f"no subnet of {nc.name} in zone {offering.zone}")
        instance_id = "i-" + "".join(self._rng.choice("0123456789abcdef") for _ in range(17))
        instance = Instance(
            provider_id=f"aws:///{offering.zone}/{instance_id}",
            instance_id=instance_id,
            instance_type=it,
            offering=offering,
            subnet_id=subnet.id,
            launched_at_s=self._clock.now(),
            tags=(*nc.tags, *request.tags),
        )
        self._instances[instance.provider_id] = instance
        return instance

    def delete(self, provider_id: str) -> None:
        """Terminate; raises ``NodeClaimNotFoundError`` once the instance is gone."""
        if self._instances.pop(provider_id, None) is None:
            raise NodeClaimNotFoundError(provider_id)

    def get(self, provider_id: str) -> Instance:
        """The running instance; raises ``NodeClaimNotFoundError`` when gone."""
        found = self._instances.get(provider_id)
        if found is None:
            raise NodeClaimNotFoundError(provider_id)
        return found

    def list(self) -> list[Instance]:
        """Running instances by provider id."""
        return [self._instances[k] for k in sorted(self._instances)]
