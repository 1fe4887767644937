"""DaemonSet overhead: what the DaemonSets that would run on a node ask of it.

Matches Karpenter's ``isDaemonPodCompatible``: a DaemonSet counts on a NodePool's node when
its pod tolerates the NodePool taints (PreferNoSchedule never blocks), its required terms are
compatible with the NodePool requirements (undefined well-known labels allowed) and intersect
the instance type's labels.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from joiner.api import labels, quantity
from joiner.api.objects import HostPort, NodePool, PodTemplate, Taint, tolerates_all
from joiner.api.quantity import Resources
from joiner.api.requirements import Requirements
from joiner.cloudprovider.types import InstanceType


def _runs_on(ds: PodTemplate, taints: tuple[Taint, ...], reqs: Requirements) -> list[Requirements]:
    """The DaemonSet's terms that are compatible with a node template; empty when it won't run."""
    if tolerates_all(ds.tolerations, taints) is not None:
        return []
    return [t for t in ds.requirement_terms() if reqs.compatible(t) is None]


def overhead_by_type(
    pool: NodePool, types: Sequence[InstanceType], daemonsets: Sequence[PodTemplate]
) -> dict[str, Resources]:
    """Per instance-type name, the summed requests of the DaemonSets that would run there."""
    applicable = [
        (ds, terms) for ds in daemonsets if (terms := _runs_on(ds, pool.taints, pool.requirements))
    ]
    out: dict[str, Resources] = {}
    for it in types:
        total: Resources = {}
        for ds, terms in applicable:
            if any(it.requirements.intersects(t) is None for t in terms):
                total = quantity.add(total, ds.requests)
        out[it.name] = total
    return out


def host_ports_on_pool(
    pool: NodePool, types: Sequence[InstanceType], daemonsets: Sequence[PodTemplate]
) -> tuple[HostPort, ...]:
    """The host ports of the DaemonSets that would run on a new node of ``pool`` (on at least
    one of its ``types``): a new NodeClaim starts with them in use (Karpenter
    ``NewNodeClaim`` seeds its ``HostPortUsage`` with the daemon overhead group's ports)."""
    out: list[HostPort] = []
    for ds in daemonsets:
        if not ds.host_ports:
            continue
        terms = _runs_on(ds, pool.taints, pool.requirements)
        if any(it.requirements.intersects(t) is None for t in terms for it in types):
            out.extend(ds.host_ports)
    return tuple(out)


def overhead_on_node(
    node_labels: dict[str, str], taints: tuple[Taint, ...], daemonsets: Sequence[PodTemplate]
) -> Resources:
    """Summed requests of the DaemonSets whose pods would run on a concrete node.

    Only the node's labels that some DaemonSet's node selection names can change the
    answer (``Requirements.compatible`` reads the keys of the term it is given), so the
    answer is remembered for those labels: nodes differing in hostname, instance id or
    other labels share it."""
    ds = tuple(daemonsets)
    keys = _term_keys(ds)
    # A label counts by its normalized key, the one ``Requirements`` reads it under: a node
    # with only ``failure-domain.beta.kubernetes.io/zone`` has a zone (Karpenter
    # pkg/apis/v1/labels.go NormalizedLabels).
    named = tuple(sorted((k, v) for k, v in node_labels.items() if labels.normalize_key(k) in keys))
    return dict(_overhead(named, taints, ds))


@functools.lru_cache(maxsize=256)
def _term_keys(daemonsets: tuple[PodTemplate, ...]) -> frozenset[str]:
    """Every label key the node selection of ``daemonsets`` names."""
    return frozenset(key for ds in daemonsets for term in ds.requirement_terms() for key in term)


@functools.lru_cache(maxsize=8192)
def _overhead(
    node_labels: tuple[tuple[str, str], ...],
    taints: tuple[Taint, ...],
    daemonsets: tuple[PodTemplate, ...],
) -> Resources:
    reqs = Requirements.from_label_items(node_labels)
    total: Resources = {}
    for ds in daemonsets:
        if tolerates_all(ds.tolerations, taints) is not None:
            continue
        if any(
            reqs.compatible(t, allow_undefined=frozenset()) is None for t in ds.requirement_terms()
        ):
            total = quantity.add(total, ds.requests)
    return total
