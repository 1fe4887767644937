"""Static capacity: each static NodePool keeps ``spec.replicas`` NodeClaims.

Karpenter's two controllers behind the ``StaticCapacity`` gate, on one reconcile:
``pkg/controllers/static/provisioning/controller.go`` ``Reconcile`` (create what is
missing) and ``pkg/controllers/static/deprovisioning/controller.go`` ``Reconcile`` (delete
what is over, in ``getDeprovisioningCandidates``' order). The counts and the order are
``scheduling.static``'s; NodeClaims launch through the provisioner's ``create_nodeclaim``
(the lifecycle, so the cloud picks the offering) and go through the Terminator. It runs at
start, a minute after each reconcile (upstream's ``RequeueAfter``), and when ``kick``ed by a
NodeClaim's deletion.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from joiner.api import timeline
from joiner.api.clock import Clock
from joiner.api.logkeys import log_keys
from joiner.api.nodepools import NodePool
from joiner.api.timeline import Timeline
from joiner.controllers.disruption.candidates import eviction_cost, lifetime_remaining
from joiner.controllers.provisioning.provisioner import Provisioner, static_capacity_types
from joiner.controllers.termination.controller import Terminator, cordon
from joiner.scheduling.static import (
    Member,
    deprovision_order,
    is_static,
    template_claim,
    to_deprovision,
    to_provision,
)
from joiner.state.cluster import ClusterState, NodeClaim, Pod
from joiner.state.staticcount import pool_count

log = logging.getLogger(__name__)

#: Upstream's ``RequeueAfter: time.Minute`` between reconciles of a pool.
POLL_S = 60.0
#: Karpenter ``static/deprovisioning`` ``TerminationReason``.
OVERPROVISIONED = "overprovisioned"


def members(
    state: ClusterState, pool: NodePool, pending: frozenset[str], now_s: float
) -> list[Member]:
    """``pool``'s active NodeClaims, by name, as deprovisioning ranks them (``Member``)."""
    out: list[Member] = []
    for claim in sorted(state.live_nodeclaims(), key=lambda c: c.name):
        if claim.nodepool != pool.name or claim.name in pending:
            continue
        node = state.node_of_claim(claim)
        if node is not None and (node.deleting or node.deleted_at_s is not None):
            continue
        pods = state.pods_on(node.name) if node is not None else []
        dnd = any(p.terminating_until_s is None and p.blocks_disruption(now_s) for p in pods)
        out.append(
            Member(
                name=claim.name,
                resolved=claim.instance is not None,
                empty=all(p.daemon for p in pods) and not dnd,
                do_not_disrupt=dnd,
                cost=rescheduling_cost(pods) * lifetime_remaining(claim, pool, now_s),
            )
        )
    return out


def rescheduling_cost(pods: list[Pod]) -> float:
    """Karpenter ``disruptionutils.ReschedulingCost``: the sum of the pods' eviction
    costs."""
    return sum(eviction_cost(p) for p in pods)


class StaticCapacityController:
    """Creates and deletes static pools' NodeClaims to keep ``replicas`` (module doc)."""

    def __init__(
        self,
        state: ClusterState,
        provisioner: Provisioner,
        terminator: Terminator,
        clock: Clock,
        timeline_: Timeline,
        *,
        pending_disruption: Callable[[], frozenset[str]] = frozenset,
        poll_s: float = POLL_S,
    ) -> None:
        self._state = state
        self._provisioner = provisioner
        self._terminator = terminator
        self._clock = clock
        self._timeline = timeline_
        self._pending = pending_disruption
        self.poll_s = poll_s
        self._due: float | None = None
        self._reconciling = False
        #: NodeClaims launched and deleted (for the summary).
        self.created = 0
        self.deleted = 0

    def start(self) -> None:
        """Reconcile now (after the current event), then every ``poll_s``."""
        self._at(0.0)

    def kick(self) -> None:
        """A NodeClaim went or is going: reconcile after the current event. A kick from
        within a reconcile (its own launch failed and deleted the NodeClaim) waits for the
        next poll instead, a minute on (upstream's failed reconcile is retried sooner, by
        controller-runtime's exponential backoff from 5 ms; Joiner keeps no retry loop at
        one instant)."""
        if not self._reconciling:
            self._at(0.0)

    def _at(self, delay_s: float) -> None:
        at = self._clock.now() + delay_s
        if self._due is not None and self._due <= at:
            return
        self._due = at
        self._clock.after(delay_s, lambda: self._run(at), label="static-capacity")

    def _run(self, at: float) -> None:
        if self._due != at:
            return
        self._due = None
        self.reconcile()
        self._at(self.poll_s)

    def reconcile(self) -> tuple[list[NodeClaim], list[str]]:
        """One reconcile of every static pool, by name: the NodeClaims created and the
        names of those whose deletion started."""
        self._reconciling = True
        try:
            return self._reconcile()
        finally:
            self._reconciling = False

    def _reconcile(self) -> tuple[list[NodeClaim], list[str]]:
        created: list[NodeClaim] = []
        deleted: list[str] = []
        pending = self._pending()
        for name in sorted(self._state.nodepools):
            pool = self._state.nodepools[name]
            if not is_static(pool):
                continue
            count = pool_count(self._state, name, pending)
            # Upstream provisions for a Ready pool only (its deprovisioning does not ask).
            ready = self._provisioner.pool_ready is None or self._provisioner.pool_ready(name)
            if ready:
                created += self._provision(pool, to_provision(pool, count))
            deleted += self._deprovision(pool, pending, to_deprovision(pool, count))
        return created, deleted

    def _provision(self, pool: NodePool, n: int) -> list[NodeClaim]:
        if n <= 0:
            return []
        new = template_claim(pool, self._provisioner.pool_types(pool))
        if not new.instance_types:
            log.warning(
                "static nodepool can launch no instance type nodepool=%s",
                pool.name,
                extra=log_keys(NodePool=pool.name),
            )
            return []
        log.info(
            "provisioning nodeclaims to satisfy replica count nodepool=%s desired=%s count=%s",
            pool.name,
            pool.replicas,
            n,
            extra=log_keys(NodePool=pool.name),
        )
        cts = static_capacity_types(new)
        out = [self._provisioner.create_nodeclaim(new, capacity_types=cts) for _ in range(n)]
        # A failed launch has deleted its NodeClaim already (the provisioner logged it).
        launched = [c for c in out if c.deleted_at_s is None]
        self.created += len(launched)
        return launched

    def _deprovision(self, pool: NodePool, pending: frozenset[str], n: int) -> list[str]:
        if n <= 0:
            return []
        now = self._clock.now()
        names = deprovision_order(members(self._state, pool, pending, now), n)
        for name in names:
            self._delete(self._state.nodeclaims[name])
        self.deleted += len(names)
        return names

    def _delete(self, claim: NodeClaim) -> None:
        """Delete ``claim`` as Karpenter's client Delete does: its node drains (its pods
        are demand again), one never registered goes at once."""
        log.info(
            "deleting nodeclaim nodeclaim=%s reason=%s",
            claim.name,
            OVERPROVISIONED,
            extra=log_keys(NodeClaim=claim.name, NodePool=claim.nodepool),
        )
        node = self._state.node_of_claim(claim)
        if node is None:
            self._terminator.delete_unregistered(claim, OVERPROVISIONED)
            self._state.touch()
            return
        cordon(node)
        node.deleting = True
        self._state.touch()
        self._timeline.record(
            timeline.DISRUPTION, node=node.name, detail=f"static delete ({OVERPROVISIONED})"
        )
        self._terminator.drain(node, OVERPROVISIONED)
