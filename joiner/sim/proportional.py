"""cluster-proportional-autoscaler in the simulation: every ``--poll-period-seconds`` (10 s)
it counts the cluster's Nodes and their allocatable cores and sets its target's replicas
(``pkg/autoscaler/autoscaler_server.go``'s poll loop; the rules are in
``joiner.api.manifests.proportional``).

A Node counts from registration until it is deleted; it is unschedulable while it carries
``node.kubernetes.io/unschedulable`` (cordoned). Cores are the allocatable CPU summed over
the counted nodes, rounded up to whole cores (``Quantity.Value``). The first poll is at run
time 0, when the autoscaler's pod starts.
"""

from __future__ import annotations

import math

from joiner.api import labels
from joiner.api.manifests.proportional import ProportionalAutoscaler, expected_replicas
from joiner.sim.clock import SimClock
from joiner.sim.workloads import DeploymentController
from joiner.state.cluster import ClusterState


def cluster_size(state: ClusterState, *, include_unschedulable: bool) -> tuple[int, int]:
    """(nodes, cores) as CPA counts them (module docstring)."""
    nodes = 0
    millicores = 0
    for node in state.live_nodes():
        if not include_unschedulable and any(
            t.key == labels.TAINT_UNSCHEDULABLE for t in node.taints
        ):
            continue
        nodes += 1
        millicores += node.allocatable.get("cpu", 0)
    return nodes, math.ceil(millicores / 1000)


class ProportionalController:
    """One CPA scaling its target ``DeploymentController``."""

    def __init__(
        self,
        cpa: ProportionalAutoscaler,
        target: DeploymentController,
        state: ClusterState,
        clock: SimClock,
    ) -> None:
        assert cpa.params is not None
        self.cpa = cpa
        self._params = cpa.params
        self._target = target
        self._state = state
        self._clock = clock
        self.replicas: int | None = None

    def start(self, duration_s: float) -> None:
        """Poll at 0 and every ``poll_s`` until ``duration_s``."""
        self._end_s = duration_s
        self._clock.at(0.0, self._poll, label="cpa")

    def _poll(self) -> None:
        include = self._params.include_unschedulable_nodes
        nodes, cores = cluster_size(self._state, include_unschedulable=include)
        want = expected_replicas(self._params, nodes, cores)
        if want != self.replicas:
            self.replicas = want
            self._target.set_replicas(want)
        nxt = self._clock.now() + self.cpa.poll_s
        if nxt <= self._end_s:
            self._clock.at(nxt, self._poll, label="cpa")
