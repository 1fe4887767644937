"""CapacityBuffer virtual pods for the provisioner (Karpenter
``pkg/controllers/provisioning/buffers.go``, behind the ``CapacityBuffer`` feature gate).

Each provisioning pass adds ``CapacityBuffer.desired(replicas)`` virtual pods per resolved
buffer to the pods it solves for: they take room on existing and in-flight nodes first and
make new NodeClaims for what is left, but they are never bound, never nominated, and their
failures are not reported. The nodes they were placed on are remembered: the Emptiness
method leaves those alone (``Emptiness.ShouldDisrupt``: ``cluster.HasBufferPods``), and
consolidation simulations must fit them too (``SimulateScheduling`` injects them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from joiner.api.manifests.capacitybuffer import MAX_BUFFER_PODS, CapacityBuffer
from joiner.state.cluster import Pod

log = logging.getLogger(__name__)

#: Creation order given to virtual pods (after every real pod).
_ORDER_BASE = 1 << 40


class Buffers:
    """The buffers in force and their virtual pods.

    ``replicas_of(workload_key)`` gives a scalable workload's current replicas (for
    ``percentage``).
    """

    def __init__(self, buffers: list[CapacityBuffer], replicas_of: Callable[[str], int]) -> None:
        self._buffers = [b for b in buffers if b.template is not None]
        self._replicas_of = replicas_of
        self._pods: dict[tuple[str, int], Pod] = {}
        #: (namespace, name) of buffers cut to ``MAX_BUFFER_PODS`` (each warned once).
        self.capped: set[tuple[str, str]] = set()
        #: Node (or in-flight NodeClaim) names hosting virtual pods after the last pass.
        self.nodes: frozenset[str] = frozenset()
        #: Scheduled minimum sizes by ``namespace/name`` (the simulation's ``spec.schedules``).
        self.floors: dict[str, int] = {}

    def virtual_pods(self) -> list[Pod]:
        """The virtual pods of every buffer now (objects reused across passes)."""
        out: list[Pod] = []
        for b in self._buffers:
            assert b.template is not None
            count = b.desired(self._replicas_of(b.workload) if b.workload else 0)
            count = max(count, self.floors.get(f"{b.namespace}/{b.name}", 0))
            if count > MAX_BUFFER_PODS:
                if (b.namespace, b.name) not in self.capped:
                    self.capped.add((b.namespace, b.name))
                    log.warning(
                        "CapacityBuffer %s/%s asks for %d virtual pods (from its percentage "
                        "or limits); Joiner simulates at most %d",
                        b.namespace,
                        b.name,
                        count,
                        MAX_BUFFER_PODS,
                    )
                count = MAX_BUFFER_PODS
            for i in range(1, count + 1):
                key = (f"{b.namespace}/{b.name}", i)
                pod = self._pods.get(key)
                if pod is None:
                    pod = Pod(
                        uid=f"capacity-buffer-{b.namespace}-{b.name}-{i}",
                        namespace=b.namespace,
                        name=f"capacity-buffer-{b.name}-{i}",
                        template=b.template,
                        owner=f"CapacityBuffer/{b.namespace}/{b.name}",
                        created_at_s=0.0,
                        order=_ORDER_BASE + len(self._pods),
                    )
                    self._pods[key] = pod
                out.append(pod)
        return out
