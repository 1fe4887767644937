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
it has an available offering, the host ports its DaemonSets bind, the capacity reservations
it offers, and its labels and requirements on the keys the pods, their topology
constraints, the bound pods' anti-affinity or minValues refer to. With a broad NodePool the
spot and on-demand groups of one type, and types of one size whose other labels no pod asks
about, share an estimate. When every pending pod has one template (a scale-up of
one Deployment), the allocatable matters only through how many of those pods a node holds
(``_per_node``), so types of different sizes that hold as many share it too. Template pools
and their prepared arrays are built once per group and reused across scans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from joiner.api import labels, quantity
from joiner.api.objects import PodTemplate
from joiner.api.pods import Toleration
from joiner.scheduling import (
    BoundPod,
    NodePoolTemplate,
    PodRequest,
    Scheduler,
    SchedulingInput,
    provisioning_order,
)
from joiner.scheduling.placement import referenced_keys
from joiner.scheduling.pool import prepare
from joiner.sim.baseline.groups import NodeGroup

#: CA's template node for a node group holds a kube-proxy static pod requesting 100m CPU
#: (``cloudprovider.BuildKubeProxy``, ``KubeProxyCpuRequestMillis``; the AWS provider's
#: ``AwsNodeGroup.TemplateNodeInfo`` and the kwok provider's add it alike). Real nodes of the
#: group have no such pod, so CA's estimates (and its upcoming nodes) count 100m less room
#: than the nodes it gets. Passed to the estimate as a DaemonSet that runs on every node.
KUBE_PROXY_CPU_MILLIS = 100
TEMPLATE_STATIC_PODS: tuple[PodTemplate, ...] = (
    PodTemplate(
        requests={quantity.CPU: KUBE_PROXY_CPU_MILLIS, quantity.PODS: 1},
        tolerations=(Toleration(operator="Exists"),),
        labels=(("component", "kube-proxy"), ("tier", "node")),
        namespace="kube-system",
        critical=True,
    ),
)


@dataclass(frozen=True, slots=True)
class Estimate:
    """The new template nodes the pods need, each as the uids of the pods it takes (in the
    solve's order)."""

    nodes: tuple[tuple[str, ...], ...]


class Estimator:
    """Scale-up estimates for a set of node groups, shared between equivalent templates."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._templates: dict[str, NodePoolTemplate] = {}
        #: (referenced keys, DaemonSets, requested resources) -> a small integer.
        self._contexts: dict[tuple[object, ...], int] = {}
        self._keys: dict[tuple[str, int], tuple[object, ...]] = {}
        #: (group key, pod signature) -> the new nodes as positions in queue order.
        self._memo: dict[tuple[object, ...], tuple[tuple[int, ...], ...]] = {}
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
        extra: tuple[str, ...],
        sole: tuple[int, ...] | None = None,
    ) -> tuple[object, ...]:
        """What a solve can observe of ``g`` for pods that refer to ``keys`` and request
        ``extra`` resources (computed once per group and such pods: the template type and
        its offerings are fixed when the group is resolved). ``sole``: when every pod has
        one template, its requests over ``extra``; the allocatable then matters only through
        how many such pods a node holds (``_per_node``)."""
        context = self._contexts.get((keys, daemonsets, extra, sole))
        if context is None:
            context = len(self._contexts)
            self._contexts[(keys, daemonsets, extra, sole)] = context
        ckey = (g.name, context)
        found = self._keys.get(ckey)
        if found is not None:
            return found
        if len(self._keys) > _CACHE_MAX:
            self._keys.clear()
        t = self.template(g)
        pool = t.nodepool
        prepared = prepare(pool, t.instance_types, daemonsets, {}, extra)
        it = g.template
        reqs = pool.requirements
        requested = [prepared.resources.index(r) for r in extra]
        found = (
            tuple(sorted((k, r) for k, r in reqs.items() if k in keys or r.min_values)),
            tuple(sorted((k, r) for k, r in it.requirements.items() if k in keys)),
            tuple(sorted((k, v) for k, v in pool.node_labels().items() if k in keys)),
            pool.taints,
            pool.startup_taints,
            len(prepared.types),
            # Allocatable after DaemonSet overhead on the requested resources (for pods of one
            # template, how many of them it holds); elsewhere only whether it went negative
            # (then nothing fits) matters.
            prepared.net[:, requested].tobytes()
            if sole is None or not prepared.types  # no type: nothing fits, nothing to count
            else _per_node(prepared.net[0, requested].tolist(), sole),
            bool((prepared.net >= 0).all()),
            # Host ports its DaemonSets bind: a pod binding one fits none of its nodes.
            prepared.daemon_ports,
            # Capacity reservations it offers: they bound how many NodeClaims may hold them.
            tuple(
                sorted(
                    (o.reservation_id, o.reservation_capacity, o.zone)
                    for o in it.offerings
                    if o.reservation_id and o.available
                )
            ),
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
        self._keys[ckey] = found
        return found

    def estimate(
        self,
        groups: Sequence[NodeGroup],
        pods: tuple[PodRequest, ...],
        bound: tuple[BoundPod, ...],
        daemonsets: tuple[PodTemplate, ...],
    ) -> dict[str, Estimate]:
        """Per group name, the new nodes of its estimate, each as the uids of its pods.

        Groups whose ``_key`` is equal share one solve; a solve is also reused from an
        earlier scan when the pods, in the solve's queue order, have the same templates and
        volume terms (``provisioning_order``): only their uids differ, and uids only label
        the answer.
        """
        keys = referenced_keys(pods, bound, daemonsets)
        ordered = provisioning_order(pods)
        extra = tuple(sorted({k for p in ordered for k in p.template.requests}))
        signature = _signature(ordered)
        sole = (
            tuple(ordered[0].template.requests.get(r, 0) for r in extra)
            if len(signature) == 1
            else None
        )
        out: dict[str, Estimate] = {}
        #: This call's answers by group key: equivalent groups share one Estimate object.
        built: dict[tuple[object, ...], Estimate] = {}
        for g in groups:
            key = (self._key(g, keys, daemonsets, extra, sole), signature)
            done = built.get(key)
            if done is not None:
                self.shared += 1
                out[g.name] = done
                continue
            positions = self._memo.get(key)
            if positions is None:
                self.solves += 1
                result = self._scheduler.solve(
                    SchedulingInput(
                        pods=tuple(ordered),
                        bound_pods=bound,
                        nodepools=(self.template(g),),
                        daemonsets=daemonsets,
                    )
                )
                at = {p.uid: i for i, p in enumerate(ordered)}
                positions = tuple(tuple(at[u] for u in c.pods) for c in result.new_nodeclaims)
                if len(self._memo) > _CACHE_MAX:
                    self._memo.clear()
                self._memo[key] = positions
            else:
                self.shared += 1
            out[g.name] = built[key] = Estimate(
                tuple(tuple(ordered[i].uid for i in c) for c in positions)
            )
        return out


def _per_node(net: list[int], requests: tuple[int, ...]) -> int:
    """How many pods requesting ``requests`` fit a node whose allocatable after DaemonSet
    overhead is ``net`` (both over the same resources), at least 0.

    For pods of one template on a single-type NodePool, every fit test of a solve
    (``scheduler._Solve._add``: ``count * requests + requests <= net`` on each resource) is
    ``count < _per_node(net, requests)``, so two templates with the same count (and the same
    labels, taints and zones) give the same placements."""
    fit: int | None = None
    for have, want in zip(net, requests, strict=True):
        if want > 0:
            k = have // want
            fit = k if fit is None else min(fit, k)
        elif have < 0:
            return 0
    return max(fit, 0) if fit is not None else 1 << 62


#: Bound on each of the estimator's caches (cleared when exceeded).
_CACHE_MAX = 65536


def _signature(ordered: Sequence[PodRequest]) -> tuple[tuple[object, ...], ...]:
    """Run-length form of the (template, volume terms) sequence of ``ordered``."""
    runs: list[list[object]] = []
    for p in ordered:
        if runs and runs[-1][0] is p.template and runs[-1][1] == p.volume_terms:
            runs[-1][2] = int(runs[-1][2]) + 1  # type: ignore[call-overload]
        else:
            runs.append([p.template, p.volume_terms, 1])
    return tuple(tuple(r) for r in runs)
