"""NodeClass selector terms over the simulated VPC (Karpenter ``pkg/providers/subnet`` and
``securitygroup``: terms OR, the tags of a term AND, a tag value ``*`` matches any value; an
``id`` term matches the id, a ``name`` term the ``Name`` tag of a subnet or the name of a
security group), and the default VPC (one subnet per zone).
"""

from __future__ import annotations

from collections.abc import Sequence

from joiner.api.objects import NodeClass, SelectorTerm
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.types import SecurityGroup, Subnet


def default_subnets(catalog: Catalog, region: str) -> list[Subnet]:
    """One subnet per zone of ``region``: id ``subnet-<zone>``, tagged ``Name=<zone>``."""
    return [
        Subnet(id=f"subnet-{zone}", zone=zone, zone_id=zone_id, tags=(("Name", zone),))
        for zone, zone_id in catalog.zones(region)
    ]


def matches(term: SelectorTerm, ident: str, name: str, tags: Sequence[tuple[str, str]]) -> bool:
    """True when ``term`` selects the resource with this id, name and tags."""
    if term.id:
        return term.id == ident
    if term.name:
        return term.name == name
    have = dict(tags)
    # Karpenter: a tag value "*" matches any value of that key.
    return all(k in have and (v == "*" or have[k] == v) for k, v in term.tags)


def _subnet_selected(term: SelectorTerm, s: Subnet) -> bool:
    return matches(term, s.id, dict(s.tags).get("Name", ""), s.tags)


def resolve_subnets(subnets: Sequence[Subnet], node_class: NodeClass) -> list[Subnet]:
    """Subnets any of the NodeClass's subnet terms selects, by id."""
    found = {
        s.id: s for s in subnets for t in node_class.subnet_selector_terms if _subnet_selected(t, s)
    }
    return [found[k] for k in sorted(found)]


class SubnetMemo:
    """``resolve_subnets`` answers by NodeClass identity (NodeClasses are immutable), valid
    while the subnets are the very same objects in the same order: every drift check of
    every disruption pass resolves its NodeClass's subnets."""

    __slots__ = ("_found",)

    def __init__(self) -> None:
        #: id -> (the NodeClass, kept alive so its id stays valid; the subnets it was
        #: resolved over; the answer).
        self._found: dict[int, tuple[NodeClass, tuple[Subnet, ...], tuple[Subnet, ...]]] = {}

    def resolve(self, subnets: Sequence[Subnet], node_class: NodeClass) -> list[Subnet]:
        """``resolve_subnets(subnets, node_class)``, remembered."""
        hit = self._found.get(id(node_class))
        if (
            hit is not None
            and hit[0] is node_class
            and len(hit[1]) == len(subnets)
            and all(a is b for a, b in zip(hit[1], subnets, strict=True))
        ):
            return list(hit[2])
        found = resolve_subnets(subnets, node_class)
        if len(self._found) >= 256:
            self._found.clear()
        self._found[id(node_class)] = (node_class, tuple(subnets), tuple(found))
        return found


def resolve_security_groups(
    groups: Sequence[SecurityGroup], node_class: NodeClass
) -> list[SecurityGroup]:
    """Security groups any of the NodeClass's security-group terms selects, by id."""
    found = {
        g.id: g
        for g in groups
        for t in node_class.security_group_selector_terms
        if matches(t, g.id, g.name, g.tags)
    }
    return [found[k] for k in sorted(found)]


def unresolved_terms(
    subnets: Sequence[Subnet], groups: Sequence[SecurityGroup], node_class: NodeClass
) -> list[tuple[str, int, SelectorTerm]]:
    """Selector terms that select nothing: (``subnet`` or ``securityGroup``, index, term)."""
    out: list[tuple[str, int, SelectorTerm]] = []
    for i, t in enumerate(node_class.subnet_selector_terms):
        if not any(_subnet_selected(t, s) for s in subnets):
            out.append(("subnet", i, t))
    for i, t in enumerate(node_class.security_group_selector_terms):
        if not any(matches(t, g.id, g.name, g.tags) for g in groups):
            out.append(("securityGroup", i, t))
    return out
