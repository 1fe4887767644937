"""The interruption controller: cloud events -> cordon, replacement capacity, drain.

Event sequences (``settings`` decide which apply):

* Spot interruption warning (2 minutes before the reclaim): the offering (type, zone, spot)
  is marked unavailable for 3 minutes, the node is cordoned (``karpenter.sh/disrupted``) and
  marked for deletion, so its pods count as demand at once and the provisioner launches
  their replacement elsewhere; the drain starts at the same time and must finish before the
  reclaim. (Karpenter's behaviour.)
* Rebalance recommendation, with Joiner's ``rebalance_replacement``: make before break. Mark
  the pool unavailable, cordon, count the pods as demand (the replacement launches now), and
  start the drain once the pods fit on Ready capacity elsewhere, or when the 2-minute warning
  comes, whichever is first. With NTH's ``enableRebalanceDraining``: cordon and drain now,
  as NTH does (it launches nothing; the evicted pods are pending like any other). With only
  ``enableRebalanceMonitoring``: cordon. Otherwise (Karpenter): record it and do nothing.
* Scheduled change (``scheduled_draining``) and an ending state change: cordon, count as
  demand, drain now.

NTH's ``cordonOnly`` turns every drain into a cordon (the pods stay until the instance goes)
and ``dryRun`` leaves nodes alone (aws-node-termination-handler ``cmd/node-termination-
handler.go``: ``drainOrCordonIfNecessary``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from joiner.api import timeline
from joiner.api.clock import Clock
from joiner.api.logkeys import log_keys
from joiner.api.timeline import Timeline
from joiner.cloudprovider.events import (
    REBALANCE_RECOMMENDATION,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    CloudEvent,
    MessageKind,
    message_kind,
)
from joiner.controllers.interruption.settings import InterruptionSettings
from joiner.controllers.termination.controller import DISRUPTED_TAINT, Terminator, cordon
from joiner.scheduling import Scheduler, SchedulingInput
from joiner.state.cluster import ClusterState, Node, NodeClaim
from joiner.state.snapshot import pod_requests, ready_nodes

log = logging.getLogger(__name__)

NOTICE_S = 120.0


class OfferingCache(Protocol):
    """Where the interruption controller marks reclaimed pools unavailable."""

    def mark_unavailable(
        self, instance_type: str, zone: str, capacity_type: str, ttl_s: float = ...
    ) -> None:
        """Skip this offering for a while."""
        ...


class InterruptionController:
    """Handles ``CloudEvent``s (see the module docstring)."""

    def __init__(
        self,
        state: ClusterState,
        offerings: OfferingCache,
        clock: Clock,
        timeline_: Timeline,
        terminator: Terminator,
        trigger_provisioning: Callable[[], None],
        settings: InterruptionSettings | None = None,
    ) -> None:
        self._state = state
        self._offerings = offerings
        self._clock = clock
        self._timeline = timeline_
        self._terminator = terminator
        self._trigger = trigger_provisioning
        self.settings = settings or InterruptionSettings()
        #: Nodes replaced before break (rebalance): drain when their pods fit elsewhere.
        self._awaiting: set[str] = set()
        self.handled: dict[str, int] = {}

    def _claim(self, instance_id: str) -> NodeClaim | None:
        for claim in self._state.live_nodeclaims():
            if claim.instance is not None and claim.instance.instance_id == instance_id:
                return claim
        return None

    def handle(self, event: CloudEvent) -> None:
        """React to one event, for every instance it names that Joiner manages."""
        react = {
            SPOT_INTERRUPTION: self._spot_interruption,
            REBALANCE_RECOMMENDATION: self._rebalance,
            SCHEDULED_CHANGE: self._scheduled_change,
            STATE_CHANGE: self._state_change,
        }.get(event.kind)
        for iid in event.instance_ids:
            claim = self._claim(iid)
            if claim is None:
                log.info("event for unknown instance kind=%s instance=%s", event.kind, iid)
                continue
            node = self._state.node_of_claim(claim)
            self.handled[event.kind] = self.handled.get(event.kind, 0) + 1
            # karpenter-provider-aws pkg/controllers/interruption/utils.go
            # InterruptionHandler.handleNodeClaim (keys NodeClaim, Node)
            log.info(
                "interruption message kind=%s nodeclaim=%s instance=%s",
                event.kind,
                claim.name,
                iid,
                extra=log_keys(
                    NodeClaim=claim.name,
                    NodePool=claim.nodepool,
                    Node=node.name if node is not None else None,
                ),
            )
            if react is not None:
                react(event, claim, node)

    def _spot_interruption(self, event: CloudEvent, claim: NodeClaim, node: Node | None) -> None:
        """Spot interruption warning: the offering is marked unavailable; the node gets its
        deadline and is drained (``spot_draining``); a NodeClaim not registered yet is
        deleted at once (no pod runs there)."""
        name = node.name if node is not None else claim.name
        self._timeline.record(timeline.NOTICE, node=name, detail=event.action or "terminate")
        self._mark_pool(claim)
        if node is None:
            self._terminator.delete_unregistered(claim, "spot interruption warning")
            self._trigger()
            return
        node.deadline_s = self._clock.now() + NOTICE_S
        if self.settings.spot_draining:
            self._drain_or_cordon(node, "spot interruption warning", message_kind(event))

    def _rebalance(self, event: CloudEvent, claim: NodeClaim, node: Node | None) -> None:
        """Rebalance recommendation, for a node the settings select: replace before break,
        drain, or only cordon (monitoring), as the settings say."""
        self._timeline.record(
            timeline.REBALANCE, node=node.name if node is not None else claim.name
        )
        if node is None or not self.settings.selects(node.labels):
            return
        if self.settings.rebalance_replacement:
            self._mark_pool(claim)
            self._disrupt(node, "rebalance recommendation", message_kind(event), drain=False)
            self._awaiting.add(node.name)
            self.node_ready()
        elif self.settings.rebalance_draining:
            self._drain_or_cordon(node, "rebalance recommendation", message_kind(event))
        elif self.settings.rebalance_monitoring and not self.settings.dry_run:
            self._cordon(node, "rebalance recommendation")

    def _scheduled_change(self, event: CloudEvent, claim: NodeClaim, node: Node | None) -> None:
        """Scheduled change (maintenance): drain under ``scheduled_draining``."""
        self._timeline.record(
            timeline.SCHEDULED_CHANGE, node=node.name if node is not None else claim.name
        )
        if not self.settings.scheduled_draining:
            return
        if node is None:
            self._terminator.delete_unregistered(claim, "scheduled change")
            self._trigger()
        else:
            self._drain_or_cordon(node, "scheduled change", message_kind(event))

    def _state_change(self, event: CloudEvent, claim: NodeClaim, node: Node | None) -> None:
        """Instance state change: stopping, stopped, shutting-down and terminated all delete
        the NodeClaim (Karpenter's interruption controller); for a terminated instance still
        held by a live NodeClaim (EC2 took it out of band) the drain's evictions let the
        workloads replace the pods, and the instance delete finds it gone."""
        name = node.name if node is not None else claim.name
        self._timeline.record(timeline.STATE_CHANGE, node=name, detail=event.state or "")
        if node is None:
            self._terminator.delete_unregistered(claim, f"instance {event.state}")
            self._trigger()
        else:
            self._disrupt(node, f"instance {event.state}", message_kind(event), drain=True)

    def _mark_pool(self, claim: NodeClaim) -> None:
        inst = claim.instance
        if inst is not None:
            self._offerings.mark_unavailable(
                inst.instance_type.name, inst.offering.zone, inst.offering.capacity_type
            )

    def _cordon(self, node: Node, reason: str) -> None:
        """Cordon only: no new pod lands there, the running ones stay."""
        if DISRUPTED_TAINT not in node.taints:
            cordon(node)
            self._timeline.record(timeline.CORDON, node=node.name, detail=reason)

    def _drain_or_cordon(self, node: Node, reason: str, kind: MessageKind) -> None:
        """Drain, or only cordon under NTH's ``cordonOnly``; nothing under ``dryRun``."""
        if self.settings.dry_run:
            return
        if self.settings.cordon_only:
            self._cordon(node, reason)
            return
        self._disrupt(node, reason, kind, drain=True)

    def _disrupt(self, node: Node, reason: str, kind: MessageKind, *, drain: bool) -> None:
        """Cordon ``node`` and mark it (and its NodeClaim, with the message ``kind``) for
        deletion; drain it when ``drain``. ``reason`` is the English for logs and the
        timeline."""
        if not node.deleting:
            node.deleting = True
            claim = self._state.claim_of(node)
            if claim is not None:
                claim.interruption = kind
            cordon(node)
            self._timeline.record(timeline.CORDON, node=node.name, detail=reason)
            self._trigger()
        if drain:
            self._awaiting.discard(node.name)
            self._terminator.drain(node, reason)

    def node_ready(self) -> None:
        """A node became Ready: start the drains whose pods now fit elsewhere."""
        for name in sorted(self._awaiting):
            node = self._state.nodes.get(name)
            if node is None or node.deleted_at_s is not None:
                self._awaiting.discard(name)
                continue
            if self._fits_elsewhere(node):
                self._awaiting.discard(name)
                self._terminator.drain(node, "replacement ready (rebalance)")

    def _fits_elsewhere(self, node: Node) -> bool:
        pods = [p for p in self._state.pods_on(node.name) if not p.daemon]
        if not pods:
            return True
        existing, bound = ready_nodes(self._state)
        result = Scheduler().solve(
            SchedulingInput(
                pods=pod_requests(self._state, pods),
                existing=tuple(existing),
                bound_pods=tuple(bound),
                mode="kube-scheduler",
            )
        )
        return len(result.existing_placements) == len(pods)
