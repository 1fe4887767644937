"""The baseline's scale-up estimate: how many template nodes of each node group the pending
pods need (Cluster Autoscaler's binpacking estimator over the group's template node).

CA builds one template node per node group (``TemplateNodeInfoProvider``) and, in
``core/scaleup/orchestrator/orchestrator.go`` ``ScaleUp``, runs
``ComputeExpansionOption`` -> ``Estimate`` once per node group over the pods its sample pod
predicate check admits. Each estimate here is ``Scheduler.solve`` over a NodePool narrowed to
the group's template type, capacity types and zones (``NodeGroup.template_pool``).

An estimate is a pure function of what the solve can observe of the group, so groups whose
templates look the same to these pods share one solve (the answer is the one CA would compute
for each): the template's allocatable after DaemonSet overhead, its taints, the zones where
it has an available offering, and its labels and requirements on the keys the pods, their
topology constraints, the bound pods' anti-affinity or minValues refer to. With a broad
NodePool the spot and on-demand groups of one type, and types of one size whose other labels
no pod asks about, share an estimate. Template pools and their prepared arrays are built once
per group and reused across scans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from joiner.api import labels
from joiner.api.objects import PodTemplate
from joiner.scheduling import (
    BoundPod,
    NodePoolTemplate,
    PodRequest,
    Scheduler,
    SchedulingInput,
)
from joiner.scheduling.pool import PreparedPool, prepare
from joiner.sim.baseline.groups import NodeGroup


@dataclass(frozen=True, slots=True)
class Estimate:
    """The new template nodes the pods need, each as the uids of the pods it takes (in the
    solve's order)."""

    nodes: tuple[tuple[str, ...], ...]


def referenced_keys(
    pods: Sequence[PodRequest], bound: Sequence[BoundPod], daemonsets: Sequence[PodTemplate]
) -> frozenset[str]:
    """Label keys whose value on a template node can change where these pods go: node
    selection (required, preferred, volume topology), topology keys of spread and pod
    (anti-)affinity, bound pods' anti-affinity keys, and the zone (a group's zones)."""
    keys = {labels.ZONE}
    seen: set[int] = set()
    for p in pods:
        for terms in (p.volume_terms,):
            for term in terms:
                keys.update(term.keys())
        t = p.template
        if id(t) in seen:
            continue
        seen.add(id(t))
        for term in t.requirement_terms():
            keys.update(term.keys())
        for _, reqs in t.preferred_affinity:
            keys.update(reqs.keys())
        keys.update(c.key for c in t.spread)
        for term in (
            *t.pod_affinity,
            *t.pod_anti_affinity,
            *(w[1] for w in t.preferred_pod_affinity),
            *(w[1] for w in t.preferred_pod_anti_affinity),
        ):
            keys.add(term.key)
    for b in bound:
        keys.update(term.key for term in b.anti_affinity)
    del daemonsets  # their selection of a type is already in its net allocatable
    return frozenset(keys)


class Estimator:
    """Scale-up estimates for a set of node groups, shared between equivalent templates."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._templates: dict[str, NodePoolTemplate] = {}
        self._prepared: dict[tuple[object, ...], PreparedPool] = {}
        self.solves = 0
        self.shared = 0

    def template(self, g: NodeGroup) -> NodePoolTemplate:
        """The group's single-type NodePool (built once per group)."""
        found = self._templates.get(g.name)
        if found is None:
            found = NodePoolTemplate(g.template_pool(), (g.template,))
            self._templates[g.name] = found
        return found

    def _key(
        self,
        g: NodeGroup,
        keys: frozenset[str],
        daemonsets: tuple[PodTemplate, ...],
        extra: Sequence[str],
    ) -> tuple[object, ...]:
        t = self.template(g)
        pool = t.nodepool
        pkey = (g.name, daemonsets, tuple(extra))
        prepared = self._prepared.get(pkey)
        if prepared is None:
            if len(self._prepared) > 16384:
                self._prepared.clear()
            prepared = prepare(pool, t.instance_types, daemonsets, {}, extra)
            self._prepared[pkey] = prepared
        it = g.template
        reqs = pool.requirements
        return (
            tuple(sorted((k, r) for k, r in reqs.items() if k in keys or r.min_values)),
            tuple(sorted((k, r) for k, r in it.requirements.items() if k in keys)),
            tuple(sorted((k, v) for k, v in pool.node_labels().items() if k in keys)),
            pool.taints,
            pool.startup_taints,
            len(prepared.types),
            tuple(prepared.resources),
            prepared.net.tobytes(),
            tuple(
                sorted(
                    {
                        (
                            o.zone,
                            o.zone_id if labels.ZONE_ID in keys else "",
                            o.capacity_type if labels.CAPACITY_TYPE in keys else "",
                        )
                        for o in it.offerings
                        if o.available and o.compatible(reqs)
                    }
                )
            ),
        )

    def estimate(
        self,
        groups: Sequence[NodeGroup],
        pods: tuple[PodRequest, ...],
        bound: tuple[BoundPod, ...],
        daemonsets: tuple[PodTemplate, ...],
    ) -> dict[str, Estimate]:
        """Per group name, the nodes and pods of its estimate (groups in order)."""
        keys = referenced_keys(pods, bound, daemonsets)
        extra = sorted({k for p in pods for k in p.template.requests})
        done: dict[tuple[object, ...], Estimate] = {}
        out: dict[str, Estimate] = {}
        for g in groups:
            key = self._key(g, keys, daemonsets, extra)
            found = done.get(key)
            if found is None:
                self.solves += 1
                result = self._scheduler.solve(
                    SchedulingInput(
                        pods=pods,
                        bound_pods=bound,
                        nodepools=(self.template(g),),
                        daemonsets=daemonsets,
                    )
                )
                found = Estimate(tuple(tuple(c.pods) for c in result.new_nodeclaims))
                done[key] = found
            else:
                self.shared += 1
            out[g.name] = found
        return out
