"""kube-scheduler model: binds pending pods to Ready nodes (Joiner never binds).

Filters are the ones ``joiner.scheduling`` uses (taints, node selector and required node
affinity, resources); among feasible nodes the least-allocated one wins (kube-scheduler's
default NodeResourcesFit scoring), ties by name. Passes are coalesced: any number of
``kick`` calls at one instant give one pass.
"""

from __future__ import annotations

from collections.abc import Callable

from joiner.api import quantity
from joiner.api.clock import Clock
from joiner.api.objects import tolerates_all
from joiner.api.requirements import Requirements
from joiner.state.cluster import ClusterState, Node, Pod

_NO_UNDEFINED: frozenset[str] = frozenset()


def _score(node: Node, used: quantity.Resources) -> float:
    """LeastAllocated: mean free fraction of cpu and memory after placement."""
    fractions = []
    for res in (quantity.CPU, quantity.MEMORY):
        alloc = node.allocatable.get(res, 0)
        if alloc > 0:
            fractions.append((alloc - used.get(res, 0)) / alloc)
    return sum(fractions) / len(fractions) if fractions else 0.0


class KubeScheduler:
    """Binds pods; ``on_bound`` hears of each binding."""

    def __init__(self, state: ClusterState, clock: Clock) -> None:
        self._state = state
        self._clock = clock
        self._scheduled = False
        self.on_bound: list[Callable[[Pod], None]] = []

    def kick(self) -> None:
        """Request a binding pass at the current instant."""
        if not self._scheduled:
            self._scheduled = True
            self._clock.after(0.0, self._pass, label="kube-scheduler")

    def _pass(self) -> None:
        self._scheduled = False
        nodes = [n for n in self._state.ready_nodes() if not _cordoned(n)]
        if not nodes:
            return
        used = {n.name: self._state.requested_on(n.name) for n in nodes}
        node_reqs = {n.name: Requirements.from_labels(n.labels) for n in nodes}
        for pod in self._state.pending_pods():
            best: tuple[float, str] | None = None
            for n in nodes:
                if tolerates_all(pod.template.tolerations, n.taints) is not None:
                    continue
                after = quantity.add(used[n.name], pod.template.requests)
                if not quantity.fits(after, n.allocatable):
                    continue
                reqs = node_reqs[n.name]
                if not any(
                    reqs.compatible(t, allow_undefined=_NO_UNDEFINED) is None
                    for t in pod.template.requirement_terms()
                ):
                    continue
                key = (-_score(n, after), n.name)
                if best is None or key < best:
                    best = key
            if best is None:
                continue
            name = best[1]
            pod.node_name = name
            pod.bound_at_s = self._clock.now()
            pod.unschedulable_reason = None
            used[name] = quantity.add(used[name], pod.template.requests)
            for listener in self.on_bound:
                listener(pod)


def _cordoned(node: Node) -> bool:
    return node.deleted_at_s is not None
