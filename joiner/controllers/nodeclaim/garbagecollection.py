"""Garbage collection between NodeClaims and the cloud's instances (Karpenter
``nodeclaim/garbagecollection`` in core, and the AWS provider's instance garbage
collection):

* a launched NodeClaim whose instance the cloud no longer lists (terminated out of band)
  is deleted: its node's pods are lost (the instance is gone, nothing can be drained; as
  Karpenter's termination finalizer does for a NotReady node whose instance is gone) and
  the provisioner is triggered so they are placed again;
* an instance the cloud lists as this cluster's (``CloudProvider.list``: tagged with a
  NodePool and the cluster) that no live NodeClaim owns, seen so for at least
  ``instance_grace_s``, is terminated. The grace is counted from the first pass that saw
  it unowned (the clock is the controller's, whatever the cloud's time base), so an
  instance is never collected in the instant between its launch and its NodeClaim.

A pass runs every ``interval_s`` (Karpenter: 2 minutes); both are settings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from joiner.api import timeline
from joiner.api.clock import Clock
from joiner.api.logkeys import log_keys
from joiner.api.timeline import Timeline
from joiner.cloudprovider.types import CloudProvider, CloudProviderError, NodeClaimNotFoundError
from joiner.controllers.termination.controller import lose
from joiner.state.cluster import ClusterState, NodeClaim

log = logging.getLogger(__name__)

GC_INTERVAL_S = 120.0
INSTANCE_GRACE_S = 30.0
#: Timeline kind for a NodeClaim collected because its instance is gone.
INSTANCE_GONE = "instanceGone"
#: Timeline kind for an instance terminated because no NodeClaim owns it.
ORPHAN_INSTANCE = "orphanInstance"


class GarbageCollector:
    """Periodic reconciliation of NodeClaims against ``CloudProvider.list`` (module
    docstring). ``collected_claims`` and ``collected_instances`` count what it removed."""

    def __init__(
        self,
        state: ClusterState,
        cloud: CloudProvider,
        clock: Clock,
        timeline_: Timeline,
        *,
        interval_s: float = GC_INTERVAL_S,
        instance_grace_s: float = INSTANCE_GRACE_S,
        trigger: Callable[[], None] | None = None,
        on_claim_gone: Callable[[NodeClaim], None] | None = None,
    ) -> None:
        if interval_s <= 0 or instance_grace_s < 0:
            raise ValueError("garbage collection needs interval_s > 0 and instance_grace_s >= 0")
        self._state = state
        self._cloud = cloud
        self._clock = clock
        self._timeline = timeline_
        self.interval_s = interval_s
        self.instance_grace_s = instance_grace_s
        self._trigger = trigger
        self._on_claim_gone = on_claim_gone
        self._unowned_since: dict[str, float] = {}
        self.collected_claims = 0
        self.collected_instances = 0

    def start(self) -> None:
        """Run a pass every ``interval_s`` from now on."""
        self._clock.after(self.interval_s, self._tick, label="garbage-collection")

    def _tick(self) -> None:
        try:
            self.run_once()
        finally:
            self._clock.after(self.interval_s, self._tick, label="garbage-collection")

    def run_once(self) -> None:
        """One pass. A cloud error ends the pass (logged); the next one retries."""
        try:
            instances = self._cloud.list()
        except CloudProviderError as exc:
            log.warning("garbage collection: listing instances failed: %s", exc)
            return
        listed = {i.provider_id for i in instances}
        now = self._clock.now()
        changed = False
        for claim in sorted(self._state.live_nodeclaims(), key=lambda c: c.name):
            inst = claim.instance
            if inst is None or inst.provider_id in listed:
                continue
            self._instance_gone(claim, now)
            changed = True
        owned = {
            c.instance.provider_id for c in self._state.live_nodeclaims() if c.instance is not None
        }
        seen = set()
        for inst in instances:
            pid = inst.provider_id
            if pid in owned:
                continue
            seen.add(pid)
            since = self._unowned_since.setdefault(pid, now)
            if now - since < self.instance_grace_s:
                continue
            log.warning("garbage collection: instance %s has no NodeClaim; terminating", pid)
            try:
                self._cloud.delete(pid)
            except NodeClaimNotFoundError:
                pass
            except CloudProviderError as exc:
                log.warning("garbage collection: terminating %s failed: %s", pid, exc)
                continue
            self.collected_instances += 1
            self._timeline.record(ORPHAN_INSTANCE, detail=pid)
            seen.discard(pid)
        self._unowned_since = {k: v for k, v in self._unowned_since.items() if k in seen}
        if changed and self._trigger is not None:
            self._trigger()

    def _instance_gone(self, claim: NodeClaim, now: float) -> None:
        node = self._state.node_of_claim(claim)
        name = node.name if node is not None else claim.name
        log.warning(
            "garbage collection: nodeclaim %s lost its instance; deleting it",
            claim.name,
            extra=log_keys(NodeClaim=claim.name, Node=node.name if node is not None else None),
        )
        self.collected_claims += 1
        if node is not None and node.deleted_at_s is None:
            lose(self._state, node, now)
        claim.deleted_at_s = now
        self._timeline.record(INSTANCE_GONE, node=name, detail="instance no longer exists")
        self._timeline.record(timeline.TERMINATED, node=name, detail="instance gone")
        if self._on_claim_gone is not None:
            self._on_claim_gone(claim)
