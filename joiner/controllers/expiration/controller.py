"""Expiration: a NodeClaim past its NodePool's ``expireAfter`` is deleted.

Matches Karpenter's ``nodeclaim/expiration`` (karpenter
``pkg/controllers/nodeclaim/expiration/controller.go`` ``Controller.Reconcile``): expiration
is not a disruption method. It ignores budgets, PodDisruptionBudgets and ``do-not-disrupt`` when it
decides; the drain that follows still respects them, but only until the NodePool's
``terminationGracePeriod``, after which whatever remains is evicted. Pods on the expiring node
are demand for the provisioner from the moment it is marked for deletion, so replacement
capacity is launched while the node drains. ``expireAfter`` counts from the NodeClaim's
creation; ``Never`` (None) never expires.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from joiner.api import timeline
from joiner.api.clock import Clock
from joiner.api.logkeys import log_keys
from joiner.api.timeline import Timeline
from joiner.controllers.termination.controller import Terminator, cordon
from joiner.state.cluster import ClusterState, NodeClaim

log = logging.getLogger(__name__)


class ExpirationController:
    """Schedules each NodeClaim's expiry when it launches (``watch``) and acts on it."""

    def __init__(
        self,
        state: ClusterState,
        terminator: Terminator,
        clock: Clock,
        timeline_: Timeline,
        *,
        trigger: Callable[[], None] | None = None,
    ) -> None:
        self._state = state
        self._terminator = terminator
        self._clock = clock
        self._timeline = timeline_
        self._trigger = trigger
        self.expired = 0
        #: Called with each NodeClaim whose deletion expiration started (and its Node's name,
        #: None before it registered).
        self.expired_listeners: list[Callable[[NodeClaim, str | None], None]] = []

    def watch(self, claim: NodeClaim) -> None:
        """Arm the expiry timer of ``claim`` (its NodePool's ``expireAfter`` from creation)."""
        pool = self._state.nodepools.get(claim.nodepool)
        if pool is None or pool.expire_after_s is None:
            return
        at = claim.created_at_s + pool.expire_after_s
        name = claim.name

        def fire() -> None:
            self.expire(name)

        self._clock.after(max(at - self._clock.now(), 0.0), fire, label="expiration")

    def expire(self, claim_name: str) -> bool:
        """Delete the NodeClaim now if it is still live and past ``expireAfter``.

        Returns True when it started the deletion.
        """
        claim = self._state.nodeclaims.get(claim_name)
        if claim is None or claim.deleted_at_s is not None:
            return False
        pool = self._state.nodepools.get(claim.nodepool)
        if pool is None or pool.expire_after_s is None:
            return False
        if self._clock.now() < claim.created_at_s + pool.expire_after_s:
            return False
        node = self._state.node_of_claim(claim)
        if node is None:
            # Its pods were nominated to it: the provisioner must place them again.
            self.expired += 1
            claim.disruption_reason = "Expired"
            self._terminator.delete_unregistered(claim, "expired before it registered")
            for listener in self.expired_listeners:
                listener(claim, None)
            self._state.touch()
            if self._trigger is not None:
                self._trigger()
            return True
        if node.draining:
            return False
        self.expired += 1
        claim.disruption_reason = "Expired"
        cordon(node)
        node.deleting = True
        self._state.touch()
        self._timeline.record(
            timeline.EXPIRED, node=node.name, detail=f"expireAfter {pool.expire_after_s:g}s"
        )
        log.info(
            "nodeclaim expired nodeclaim=%s",
            claim.name,
            extra=log_keys(NodeClaim=claim.name, NodePool=claim.nodepool, Node=node.name),
        )
        for listener in self.expired_listeners:
            listener(claim, node.name)
        if self._trigger is not None:
            self._trigger()
        self._terminator.drain(node, "expired")
        return True
