"""Node repair: a node unhealthy past its toleration is replaced (Karpenter core
``pkg/controllers/node/health/controller.go``, behind the ``NodeRepair`` feature gate, off by
default as upstream).

Rules, as ``Controller.Reconcile`` applies them to each Node a NodeClaim owns:

* ``findUnhealthyConditions``: every repair policy (the cloud provider's
  ``RepairPolicies()``, ``cloudprovider/repair.py``) whose condition type the Node has with
  the policy's status matches; the one whose ``lastTransitionTime + toleration`` comes first
  decides. A condition no policy names is ignored.
* Before that time nothing happens (upstream requeues at it; here a timer is set for it).
* ``isNodePoolHealthy``: the Nodes of the NodeClaim's NodePool that match any policy
  (whatever their toleration) are counted; when more than 20 % of the pool's Nodes, rounded
  up (``intstr.GetScaledValueFromIntOrPercent(20%, n, roundUp=true)``; one of three may be
  unhealthy), are unhealthy, repair is blocked: a ``NodeRepairBlocked`` warning ("more than
  20% nodes are unhealthy in the nodepool"), once per node until it is healthy again.
* Otherwise the NodeClaim is annotated with a termination timestamp of now
  (``annotateTerminationGracePeriod``) and deleted: the node is terminated at once, its pods
  deleted without waiting for PodDisruptionBudgets or ``do-not-disrupt``
  (``Terminator.force_terminate``), and the provisioner places them again.
* Metrics (``deleteNodeClaim``): ``karpenter_nodeclaims_disrupted_total{reason="unhealthy"}``
  and ``karpenter_nodeclaims_unhealthy_disrupted_total{condition, nodepool, capacity_type,
  image_id}``; here the timeline record ``unhealthy`` (detail: the condition type first),
  which controller mode's metrics wiring counts.

Nodes already being deleted, and Nodes no NodeClaim owns, are left alone. A pass runs every
``interval_s`` and at the earliest time a tolerated condition runs out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from joiner.api import timeline
from joiner.api.clock import Clock
from joiner.api.logkeys import log_keys
from joiner.api.nodepools import percent_rounded_up
from joiner.api.timeline import Timeline
from joiner.cloudprovider.repair import RepairPolicy
from joiner.controllers.termination.controller import Terminator, cordon
from joiner.state.cluster import ClusterState, Node

log = logging.getLogger(__name__)

#: Karpenter's ``allowedUnhealthyPercent``.
ALLOWED_UNHEALTHY_PERCENT = 20
#: How often nodes are checked for conditions that appeared since the last pass.
HEALTH_INTERVAL_S = 10.0
#: Karpenter's disruption reason for a repaired node (``metrics.UnhealthyReason``).
UNHEALTHY_REASON = "Unhealthy"


def allowed_unhealthy(total: int, percent: int = ALLOWED_UNHEALTHY_PERCENT) -> int:
    """How many of ``total`` Nodes may be unhealthy: ``percent`` % rounded up."""
    return percent_rounded_up(percent, total)


class HealthController:
    """Karpenter's node health controller (module docstring). ``repaired`` counts repairs,
    ``blocked`` the NodeRepairBlocked warnings."""

    def __init__(
        self,
        state: ClusterState,
        terminator: Terminator,
        clock: Clock,
        timeline_: Timeline,
        policies: Sequence[RepairPolicy],
        *,
        interval_s: float = HEALTH_INTERVAL_S,
        trigger: Callable[[], None] | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("node repair needs interval_s > 0")
        self._state = state
        self._terminator = terminator
        self._clock = clock
        self._timeline = timeline_
        self.policies = tuple(policies)
        self.interval_s = interval_s
        self._trigger = trigger
        self._wake_at: float | None = None
        self._blocked_noted: set[str] = set()
        self.repaired = 0
        self.blocked = 0

    def start(self) -> None:
        """Run a pass every ``interval_s`` from now on."""
        self._clock.after(self.interval_s, self._tick, label="node-health")

    def _tick(self) -> None:
        try:
            self.reconcile()
        finally:
            self._clock.after(self.interval_s, self._tick, label="node-health")

    def _wake(self) -> None:
        self._wake_at = None
        self.reconcile()

    def unhealthy(self, node: Node) -> tuple[RepairPolicy, float] | None:
        """The policy that decides ``node``'s repair and the time it is due (seconds), or
        None when no policy matches its conditions (``findUnhealthyConditions``)."""
        found: tuple[RepairPolicy, float] | None = None
        for policy in self.policies:
            cond = node.conditions.get(policy.condition_type)
            if cond is None or cond.status != policy.condition_status:
                continue
            due = cond.last_transition_s + policy.toleration_s
            if found is None or due < found[1]:
                found = (policy, due)
        return found

    def reconcile(self) -> None:
        """One pass over the managed Nodes: repair those due, unless their NodePool has too
        many unhealthy Nodes; set a timer for the next one due."""
        now = self._clock.now()
        nodes = [n for n in self._state.live_nodes() if n.nodeclaim is not None]
        pools: dict[str, list[Node]] = {}
        for n in nodes:
            claim = self._state.claim_of(n)
            if claim is not None:
                pools.setdefault(claim.nodepool, []).append(n)
        unhealthy = {
            pool: sum(1 for n in members if self.unhealthy(n) is not None)
            for pool, members in pools.items()
        }
        next_due: float | None = None
        for node in sorted(nodes, key=lambda n: n.name):
            claim = self._state.claim_of(node)
            found = self.unhealthy(node)
            if found is None or claim is None:
                self._blocked_noted.discard(node.name)
                continue
            if node.deleting or node.draining or claim.deleted_at_s is not None:
                continue
            policy, due = found
            if now < due:
                next_due = due if next_due is None else min(next_due, due)
                continue
            total = len(pools[claim.nodepool])
            if unhealthy[claim.nodepool] > allowed_unhealthy(total):
                if node.name not in self._blocked_noted:
                    self._blocked_noted.add(node.name)
                    self.blocked += 1
                    self._timeline.record(
                        timeline.NODE_REPAIR_BLOCKED,
                        node=node.name,
                        detail=f"more than {ALLOWED_UNHEALTHY_PERCENT}% nodes are unhealthy "
                        f"in the nodepool ({unhealthy[claim.nodepool]} of {total}; "
                        f"NodePool {claim.nodepool})",
                    )
                continue
            self._repair(node, policy, now - (due - policy.toleration_s))
        if next_due is not None and (self._wake_at is None or next_due < self._wake_at):
            self._wake_at = next_due
            self._clock.after(next_due - now, self._wake, label="node-health-due")

    def _repair(self, node: Node, policy: RepairPolicy, for_s: float) -> None:
        claim = self._state.claim_of(node)
        if claim is None:
            return
        self.repaired += 1
        self._blocked_noted.discard(node.name)
        claim.disruption_reason = UNHEALTHY_REASON
        claim.repaired_condition = policy.condition_type
        cordon(node)
        node.deleting = True
        self._state.touch()
        self._timeline.record(
            timeline.UNHEALTHY,
            node=node.name,
            detail=f"{policy.condition_type} {policy.condition_status} for {for_s:g} s "
            f"(toleration {policy.toleration_s:g} s): terminating without draining",
        )
        log.info(
            "repairing unhealthy node node=%s nodeclaim=%s condition=%s",
            node.name,
            claim.name,
            policy.condition_type,
            extra=log_keys(NodeClaim=claim.name, NodePool=claim.nodepool, Node=node.name),
        )
        if self._trigger is not None:
            self._trigger()
        self._terminator.force_terminate(node, "unhealthy")
