"""What a solve derives from its existing nodes and bound pods alone, kept across solves.

A consolidation pass solves once per candidate over one snapshot of the cluster, each time
without the candidate's node (``SchedulingInput.exclude_nodes``). Everything here depends
only on ``SchedulingInput.existing`` and ``bound_pods``, so it is computed once per snapshot
(the same tuple objects) and each solve takes it minus its excluded nodes:

* the existing nodes in try order (initialized first, then by name), with their
  requirements, label domains and taken host ports;
* running pods alike (node, namespace, labels, required anti-affinity) counted together,
  in first-seen order;
* per constraint shape (topology key, selector, namespaces), the matching running pods'
  count per domain and each node's share of it, so a solve's group counts are the total
  minus its excluded nodes' shares;
* the nodes' free room as arrays (``room.NodeArrays``), per set of requested resources;
* per topology key, each value's nodes (a solve takes the distinct taint sets of the kept
  ones), the topology hosts, and the nodes with a PreferNoSchedule taint.

Answers equal those of computing everything from the filtered inputs (the golden summaries
check it); only the work is shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from joiner.api import labels
from joiner.api.objects import PREFER_NO_SCHEDULE, HostPort, PodAffinityTerm, Taint
from joiner.api.requirements import Requirements
from joiner.scheduling.room import IntArray, NodeArrays
from joiner.scheduling.topology import Group, _selects
from joiner.scheduling.types import BoundPod, ExistingNode

#: (node, namespace, labels, required anti-affinity) of running pods counted together.
AlikeKey = tuple[str, str, tuple[tuple[str, str], ...], tuple[PodAffinityTerm, ...]]
#: (hostname, requirements, taints, whether its labels are exact) of an existing node.
Host = tuple[str, Requirements, tuple[Taint, ...], bool]
#: What a group's counts depend on: (topology key, selector, owner namespace, namespaces).
ShapeKey = tuple[str, Requirements, str, tuple[str, ...] | None]


@dataclass(frozen=True, slots=True)
class NodeBase:
    """One existing node as every solve sees it before placing pods."""

    node: ExistingNode
    requirements: Requirements
    domains: dict[str, str]
    ports: tuple[HostPort, ...]


@dataclass
class SolveBase:
    """The shared part of solves over one (existing, bound pods) pair; see the module
    docstring. ``nodes`` in try order; ``alike`` maps each alike key (its node among
    ``nodes``) to its pod count, in first-seen order; ``anti_keys`` are (node, topology
    key) of every bound pod's required anti-affinity term, its node existing or not."""

    nodes: list[NodeBase]
    alike: dict[AlikeKey, int]
    anti_keys: list[tuple[str, str]]
    #: Some alike key has a required anti-affinity (its pods must be recorded per solve).
    any_anti: bool = False
    #: Names of the nodes with a PreferNoSchedule taint.
    prefer_no_schedule: frozenset[str] = frozenset()
    _shapes: dict[ShapeKey, tuple[dict[str, int], dict[str, list[tuple[str, int]]]]] = field(
        default_factory=dict
    )
    _arrays: dict[tuple[str, ...], NodeArrays] = field(default_factory=dict)
    _domains: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    _combos: dict[tuple[str, ...], tuple[IntArray, list[int]]] = field(default_factory=dict)
    _hosts: list[Host] | None = None

    def domains(self, key: str, exclude: frozenset[str]) -> dict[str, set[tuple[Taint, ...]]]:
        """Per value of ``key`` on the nodes not in ``exclude``, the distinct taint sets of
        those nodes (the per-key node index is built once per snapshot)."""
        nodes = self.nodes
        by_value = self._domains.get(key)
        if by_value is None:
            by_value = {}
            for i, b in enumerate(nodes):
                value = b.domains.get(key)
                if value is not None:
                    by_value.setdefault(value, []).append(i)
            self._domains[key] = by_value
        out: dict[str, set[tuple[Taint, ...]]] = {}
        for value, members in by_value.items():
            sets = {nodes[i].node.taints for i in members if nodes[i].node.name not in exclude}
            if sets:
                out[value] = sets
        return out

    def domain_combos(self, keys: tuple[str, ...]) -> tuple[IntArray, list[int]]:
        """The distinct combinations of the nodes' values of ``keys`` (a missing label is a
        value of its own): each node's combination as a number 0..m-1, over ``nodes``, and
        per combination the first node that has it (its index in ``nodes``); built once
        per key tuple."""
        found = self._combos.get(keys)
        if found is None:
            combos: dict[tuple[str | None, ...], int] = {}
            reps: list[int] = []
            codes = np.empty(len(self.nodes), dtype=np.int64)
            for i, b in enumerate(self.nodes):
                values = tuple(b.domains.get(k) for k in keys)
                code = combos.get(values)
                if code is None:
                    code = combos[values] = len(reps)
                    reps.append(i)
                codes[i] = code
            found = self._combos[keys] = (codes, reps)
        return found

    def hosts(self, exclude: frozenset[str]) -> list[Host]:
        """(hostname, requirements, taints, whether its labels are exact) of each node not in
        ``exclude``, in try order (``Topology``'s existing hosts)."""
        if self._hosts is None:
            self._hosts = [
                (
                    b.domains[labels.HOSTNAME],
                    b.requirements,
                    b.node.taints,
                    b.node.requirements is None,
                )
                for b in self.nodes
            ]
        if not exclude:
            return self._hosts
        return [
            h for h, b in zip(self._hosts, self.nodes, strict=True) if b.node.name not in exclude
        ]

    def arrays(self, resources: tuple[str, ...]) -> NodeArrays:
        """``nodes``' free room over ``resources`` as arrays (``room.NodeArrays``), built
        once per resource tuple."""
        found = self._arrays.get(resources)
        if found is None:
            found = NodeArrays.build([b.node for b in self.nodes], resources)
            self._arrays[resources] = found
        return found

    def group_counts(self, g: Group, exclude: frozenset[str]) -> dict[str, int]:
        """``g``'s per-domain counts of matching running pods on nodes not in ``exclude``
        (what ``Topology.record_bound`` would count over them)."""
        sk: ShapeKey = (g.key, g.selector, g.owner_namespace, g.namespaces)
        found = self._shapes.get(sk)
        if found is None:
            found = self._count(g)
            self._shapes[sk] = found
        total, by_node = found
        counts = dict(total)
        for name in exclude:
            for d, n in by_node.get(name, ()):
                counts[d] -= n
        return counts

    def _count(self, g: Group) -> tuple[dict[str, int], dict[str, list[tuple[str, int]]]]:
        domains = {b.node.name: b.domains for b in self.nodes}
        total: dict[str, int] = {}
        by_node: dict[str, list[tuple[str, int]]] = {}
        for (node, namespace, pod_labels, _anti), count in self.alike.items():
            d = domains[node].get(g.key)
            if d is None:
                continue
            reqs = Requirements.from_label_items(tuple(sorted(pod_labels)))
            if _selects(g, namespace, reqs):
                total[d] = total.get(d, 0) + count
                by_node.setdefault(node, []).append((d, count))
        return total, by_node


#: The ``NodeBase`` of each ExistingNode object (which it keeps alive, so the id stays its
#: own), reused by later snapshots holding the same object; cleared past the bound.
_NODE_BASES: dict[int, NodeBase] = {}
_NODE_BASES_MAX = 4096


def build(existing: tuple[ExistingNode, ...], bound: tuple[BoundPod, ...]) -> SolveBase:
    """The ``SolveBase`` of ``existing`` and ``bound``."""
    ports_by_node: dict[str, list[HostPort]] = {}
    for bp in bound:
        if bp.host_ports:
            ports_by_node.setdefault(bp.node, []).extend(bp.host_ports)
    nodes: list[NodeBase] = []
    if len(_NODE_BASES) > _NODE_BASES_MAX:
        _NODE_BASES.clear()
    for n in sorted(existing, key=lambda n: (not n.initialized, n.name)):
        ports = tuple(ports_by_node.get(n.name, ()))
        # Snapshots reuse the ExistingNode of a node that did not change: so does this.
        hit = _NODE_BASES.get(id(n))
        if hit is not None and hit.node is n and hit.ports == ports:
            nodes.append(hit)
            continue
        node_labels = dict(n.labels)
        label_items = n.labels
        if labels.HOSTNAME not in node_labels:
            node_labels[labels.HOSTNAME] = n.name
            label_items = tuple(sorted(node_labels.items()))
        made = NodeBase(
            node=n,
            requirements=n.requirements
            if n.requirements is not None
            else Requirements.from_label_items(label_items),
            domains=node_labels,
            ports=ports,
        )
        _NODE_BASES[id(n)] = made
        nodes.append(made)
    names = {b.node.name for b in nodes}
    alike: dict[AlikeKey, int] = {}
    anti_keys: list[tuple[str, str]] = []
    for bp in bound:
        for term in bp.anti_affinity:
            anti_keys.append((bp.node, term.key))
        if bp.node in names:
            k = (bp.node, bp.namespace, bp.labels, bp.anti_affinity)
            alike[k] = alike.get(k, 0) + 1
    return SolveBase(
        nodes,
        alike,
        anti_keys,
        any_anti=any(k[3] for k in alike),
        prefer_no_schedule=frozenset(
            b.node.name for b in nodes if any(t.effect == PREFER_NO_SCHEDULE for t in b.node.taints)
        ),
    )


#: The last few bases by the identity of their (existing, bound pods) tuples; the entries
#: hold the tuples, so an id is never reused while its entry lives.
_BASES: list[tuple[tuple[ExistingNode, ...], tuple[BoundPod, ...], SolveBase]] = []
_KEEP = 4


def base_of(existing: tuple[ExistingNode, ...], bound: tuple[BoundPod, ...]) -> SolveBase:
    """``build(existing, bound)``, reused while the very same tuples come back."""
    for e, b, base in _BASES:
        if e is existing and b is bound:
            return base
    base = build(existing, bound)
    _BASES.insert(0, (existing, bound, base))
    del _BASES[_KEEP:]
    return base
