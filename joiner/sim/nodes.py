"""Node boot model: what the kubelet and the DaemonSet controller do after a launch.

A launched instance registers its node ``ready_delay_s - registration_lead_s`` after launch
and turns Ready at ``ready_delay_s``, drawn uniformly from 25-45 s (the published 24-30 s
Node-Ready breakdown for c6a.large plus image and user-data spread; field-landscape §4).
DaemonSet pods are created and bound on each node that they tolerate and select when it
registers; they take the template's ``karpenter.sh/do-not-disrupt`` (``PodFactory``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from joiner.api.objects import tolerates_all
from joiner.api.requirements import Requirements
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.sim.clock import SimClock
from joiner.sim.workloads import PodFactory
from joiner.state.cluster import ClusterState, NodeClaim


@dataclass(frozen=True, slots=True)
class BootModel:
    """Launch-to-Ready latency bounds in seconds, and the registration lead before Ready."""

    ready_min_s: float = 25.0
    ready_max_s: float = 45.0
    registration_lead_s: float = 5.0


class KubeletModel:
    """Turns launched NodeClaims into registered, then Ready, nodes."""

    def __init__(
        self,
        state: ClusterState,
        clock: SimClock,
        rng: random.Random,
        lifecycle: Lifecycle,
        pods: PodFactory,
        *,
        boot: BootModel | None = None,
    ) -> None:
        self._state = state
        self._clock = clock
        self._rng = rng
        self._lifecycle = lifecycle
        self._pods = pods
        self.boot = boot or BootModel()
        self.on_ready: list[Callable[[NodeClaim], None]] = []
        lifecycle.launch_listeners.append(self._launched)

    def _launched(self, claim: NodeClaim) -> None:
        ready = self._rng.uniform(self.boot.ready_min_s, self.boot.ready_max_s)
        register = max(1.0, ready - self.boot.registration_lead_s)
        self._clock.after(register, lambda: self._register(claim), label="node-register")
        self._clock.after(ready, lambda: self._ready(claim), label="node-ready")

    def _register(self, claim: NodeClaim) -> None:
        if claim.deleted_at_s is not None:
            return
        node = self._lifecycle.register(claim, claim.name)
        reqs = Requirements.from_labels(node.labels)
        for key in sorted(self._state.daemonsets):
            tmpl = self._state.daemonsets[key]
            if tolerates_all(tmpl.tolerations, node.taints) is not None:
                continue
            if not any(
                reqs.compatible(t, allow_undefined=frozenset()) is None
                for t in tmpl.requirement_terms()
            ):
                continue
            pod = self._pods.create(key, tmpl, daemon=True)
            pod.node_name = node.name
            pod.bound_at_s = self._clock.now()

    def ready(self, claim: NodeClaim) -> None:
        """The registered node of ``claim`` turns Ready now and is initialized (a node of
        the starting cluster whose initialization the dump shows pending)."""
        self._ready(claim)

    def _ready(self, claim: NodeClaim) -> None:
        if claim.deleted_at_s is not None:
            return
        self._lifecycle.initialize(claim)
        for listener in self.on_ready:
            listener(claim)
