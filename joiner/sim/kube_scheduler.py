"""kube-scheduler model: binds pending pods to Ready nodes (Joiner never binds).

It runs ``joiner.scheduling.Scheduler`` in ``kube-scheduler`` mode over the Ready nodes and
no NodePools, so binding applies exactly the predicates provisioning planned with (taints,
node selection, resources, host ports, volume topology, spread and pod affinity counted over
every bound pod), with kube-scheduler's queue (creation order) and its default
NodeResourcesFit LeastAllocated choice. Passes are coalesced: any number of ``kick`` calls
at one instant give one pass.
"""

from __future__ import annotations

from collections.abc import Callable

from joiner.api.clock import Clock
from joiner.scheduling import Scheduler, SchedulingInput
from joiner.state.cluster import ClusterState, Pod
from joiner.state.snapshot import pod_requests, ready_nodes


class KubeScheduler:
    """Binds pods; ``on_bound`` hears of each binding."""

    def __init__(self, state: ClusterState, clock: Clock) -> None:
        self._state = state
        self._clock = clock
        self._scheduled = False
        self._scheduler = Scheduler()
        self.on_bound: list[Callable[[Pod], None]] = []

    def kick(self) -> None:
        """Request a binding pass at the current instant."""
        if not self._scheduled:
            self._scheduled = True
            self._clock.after(0.0, self._pass, label="kube-scheduler")

    def _pass(self) -> None:
        self._scheduled = False
        state = self._state
        nodes = state.ready_nodes()
        pending = state.pending_pods()
        if not nodes or not pending:
            return
        existing, bound = ready_nodes(state)
        result = self._scheduler.solve(
            SchedulingInput(
                pods=pod_requests(state, pending),
                existing=tuple(existing),
                bound_pods=tuple(bound),
                mode="kube-scheduler",
            )
        )
        now = self._clock.now()
        for uid, node in result.existing_placements:
            pod = state.pods[uid]
            pod.node_name = node
            pod.bound_at_s = now
            pod.unschedulable_reason = None
            state.pod_event(pod, now)
            for listener in self.on_bound:
                listener(pod)
