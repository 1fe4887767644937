"""Wiring of the controller's Karpenter-named metrics (``joiner.cluster.kube.metrics``)
to its controllers: what each Karpenter counter counts, taken from the events Joiner's
controllers already publish (timeline records, disruption commands, interruption messages).

Kept apart from ``operator/controller.py`` so the controller's lifecycle code stays small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from joiner.api import timeline as tl
from joiner.cluster.kube.metrics import Metrics, snake_case
from joiner.controllers.disruption import budgets
from joiner.controllers.disruption.verdicts import Reason

if TYPE_CHECKING:
    from joiner.controllers.disruption.command import Context
    from joiner.state.cluster import ClusterState, Node, NodeClaim, Pod


def disrupted_reason(kind: str, claim: NodeClaim) -> str | None:
    """``karpenter_nodeclaims_disrupted_total``'s ``reason`` for a timeline record of
    ``kind`` about ``claim``'s node, read from the NodeClaim's typed fields, or None when the
    record is no disruption: a disruption command's candidate (its disruption reason in
    snake case), an expiry (``expired``), a node repair (``unhealthy``), an interruption
    that deletes the node (the message kind, karpenter-provider-aws
    ``pkg/controllers/interruption/controller.go`` ``deleteNodeClaim``)."""
    if kind == tl.DISRUPTION:
        reason = claim.disruption_reason
        return snake_case(reason) if reason else "unknown"
    if kind == tl.EXPIRED:
        return "expired"
    if kind == tl.UNHEALTHY:
        return "unhealthy"
    if kind == tl.CORDON and claim.interruption is not None:
        return claim.interruption.value
    return None


class MetricsWiring:
    """Counts what Karpenter counts from ``state``'s changes into ``metrics``.

    ``timeline(kind, node, pod, detail)`` is a KubeTimeline listener;
    ``command(cmd)`` a DisruptionController command listener, ``disruption_pass(ctx,
    candidates)`` a pass listener; ``refresh(synced)`` sets the
    gauges (call on the loop thread).
    """

    def __init__(self, metrics: Metrics, state: ClusterState) -> None:
        self.metrics = metrics
        self._state = state
        #: Uids of the pods seen pending and not bound or gone since.
        self._pending: set[str] = set()

    def timeline(self, kind: str, node: str | None, _pod: str | None, _detail: str) -> None:
        if node is None:
            return
        st_node = self._state.nodes.get(node)
        if kind == tl.DRAINED:
            self._drained(st_node)
            return
        if kind == tl.TERMINATED:
            self._terminated(st_node)
            return
        if kind == tl.CORDON and (st_node is None or not st_node.deleting):
            return  # a rebalance-monitoring cordon: no disruption
        claim = self._state.claim_of(st_node) if st_node else self._state.nodeclaims.get(node)
        if claim is None:
            return
        reason = disrupted_reason(kind, claim)
        if reason is None:
            return
        offering = claim.instance.offering if claim.instance is not None else None
        capacity_type = offering.capacity_type if offering is not None else ""
        self.metrics.nodeclaims_disrupted.labels(
            reason=reason, nodepool=claim.nodepool, capacity_type=capacity_type
        ).inc()
        if kind == tl.UNHEALTHY:
            # Karpenter's health controller: by the condition (snake case) and the image;
            # Joiner's state does not keep the image id, so it is "".
            self.metrics.nodeclaims_unhealthy_disrupted.labels(
                condition=snake_case(claim.repaired_condition or ""),
                nodepool=claim.nodepool,
                capacity_type=capacity_type,
                image_id="",
            ).inc()

    def _drained(self, st_node: Node | None) -> None:
        """A node's drain finished: Karpenter counts it only when the node has a NodeClaim
        (Karpenter ``pkg/controllers/node/termination/controller.go`` ``finalize``,
        ``NodesDrainedTotal``), by the node's NodePool."""
        claim = self._state.claim_of(st_node) if st_node is not None else None
        if claim is not None:
            self.metrics.nodes_drained.labels(nodepool=claim.nodepool).inc()

    def _terminated(self, st_node: Node | None) -> None:
        """A node with a NodeClaim terminated: its lifetime, creation to termination (Karpenter
        ``pkg/controllers/node/termination/controller.go`` ``removeFinalizer``,
        ``NodeLifetimeDurationSeconds``; Joiner's termination is its instance's deletion)."""
        claim = self._state.claim_of(st_node) if st_node is not None else None
        if st_node is None or claim is None or st_node.deleted_at_s is None:
            return
        lifetime_s = max(0.0, st_node.deleted_at_s - st_node.created_at_s)
        self.metrics.nodes_lifetime.labels(nodepool=claim.nodepool).observe(lifetime_s)

    def command(self, cmd: Any) -> None:
        """Count a disruption command: once, and once per distinct NodePool of its
        candidates (Karpenter ``pkg/controllers/disruption/queue.go`` ``StartCommand``:
        ``DecisionsPerformedTotal`` and ``NodepoolDecisionsPerformed``)."""
        self.metrics.disruption_decision(cmd.method, cmd.action)
        for pool in dict.fromkeys(c.pool.name for c in cmd.candidates):
            self.metrics.disruption_decision(cmd.method, cmd.action, nodepool=pool)

    def disruption_pass(self, ctx: Context, _candidates: Any) -> None:
        """A disruption pass's budgets, per NodePool and reason (Karpenter
        ``pkg/controllers/disruption/helpers.go`` ``BuildDisruptionBudgetMapping``): what the
        active budgets allow before subtracting, and the nodes already disrupting; the
        reason as Karpenter's ``DisruptionReason``, not lower-cased. A DisruptionController
        pass listener."""
        for name, pool in sorted(ctx.state.nodepools.items()):
            total, disrupting = budgets.pool_counts(ctx.state, name)
            for reason in Reason:
                allowed = budgets.allowed(pool, reason.value, total, ctx.now)
                labels = {"nodepool": name, "reason": reason.value}
                self.metrics.nodepools_allowed_disruptions.labels(**labels).set(allowed)
                self.metrics.nodepools_nodes_consuming_budgets.labels(**labels).set(disrupting)

    def pending(self, pod: Pod) -> None:
        """A pod seen unbound (a feed ``on_seen_unbound`` listener): ``bound`` times it."""
        self._pending.add(pod.uid)

    def gone(self, pod: Pod) -> None:
        """A pod deleted (a feed ``on_pod_gone`` listener)."""
        self._pending.discard(pod.uid)

    def bound(self, pod: Pod) -> None:
        """A pod seen pending was bound: the time from its creation, as the feed first saw
        it, to its binding (Karpenter ``pkg/controllers/metrics/pod/controller.go``
        ``PodBoundDurationSeconds``, from the pod's creation to its ``PodScheduled``
        condition, for the pods it saw unscheduled). A feed ``on_bound`` listener; a pod
        first seen bound is not timed."""
        if pod.uid in self._pending and pod.bound_at_s is not None:
            self._pending.discard(pod.uid)
            bound_s = max(0.0, pod.bound_at_s - pod.created_at_s)
            self.metrics.pod_bound_duration.observe(bound_s)

    def provisioned(self) -> None:
        """After a provisioning pass: the pending pods it left unschedulable (Karpenter
        ``pkg/controllers/provisioning/provisioner.go`` ``Schedule`` sets
        ``UnschedulablePodsCount`` from the pass's pod errors, controller ``provisioner``;
        a pass with nothing to schedule leaves 0 here)."""
        count = sum(1 for p in self._state.pending_pods() if p.unschedulable_reason is not None)
        self.metrics.unschedulable_pods.labels(controller="provisioner").set(count)

    def refresh(self, *, synced: bool) -> None:
        self.metrics.update_cluster_state(self._state, synced=synced)
