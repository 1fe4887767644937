"""The termination controller: drain a node through the Eviction API, then delete it.

Karpenter ``node/termination`` (karpenter ``pkg/controllers/node/termination/controller.go``
``Controller.finalize``), simplified to what the simulation needs:

1. The node is tainted ``karpenter.sh/disrupted:NoSchedule`` (by whoever asked).
2. Pods are evicted in tiers: workload pods first, DaemonSet pods last (they go with the
   node). An eviction a PodDisruptionBudget forbids is retried every ``retry_s``; a pod
   annotated ``karpenter.sh/do-not-disrupt`` is waited for. Without a NodePool
   ``terminationGracePeriod`` nothing is forced; at a Spot reclaim the cloud takes the node
   and whatever still runs there is lost. With one, the node's deadline is the drain's start
   plus that period, and each pod still on the node is deleted (PDB and do-not-disrupt
   bypassed) its own ``terminationGracePeriodSeconds`` before the deadline, at once when
   that time has passed, with the deadline's remaining seconds (at least 1) as its grace:
   Karpenter ``pkg/controllers/node/termination/terminator/terminator.go``
   ``DeleteExpiringPods`` and ``podDeleteTimeWithGracePeriod``. At the deadline whatever is
   left goes with the node.
3. An evicted pod shuts down for ``PodTemplate.shutdown_s`` (its preStop hooks within
   ``terminationGracePeriodSeconds``; kubelet ``killContainer``) and is gone then; its
   controller makes the replacement at once (a ReplicaSet does not count terminating
   pods). The drain waits for it; if the node goes first (a Spot reclaim), the pod is cut
   short and counts as lost. Karpenter's own drain waits the same way (``node/termination``
   ``Drain``: a node is drained when its evicted pods are gone).
4. When only DaemonSet pods remain, the instance is deleted (``CloudProvider.delete``; a
   ``NodeClaimNotFoundError`` means it is already gone) and the node and NodeClaim with it.

Transitions per node: draining -> drained -> terminated. ``on_evicted`` hears of each
eviction (a controller makes the replacement pod).

``evict`` is the Eviction port: in the simulation it is absent (an eviction always
succeeds); in controller mode it posts a ``policy/v1`` Eviction and returns False when the
API server refuses it (429: a PodDisruptionBudget the cluster computes disallows it), in
which case the pod stays and the drain retries, as Karpenter does. ``forced`` evictions
(``terminationGracePeriod``) delete the pod instead, with ``grace_s`` as the deletion's
``gracePeriodSeconds``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from joiner.api import labels, timeline
from joiner.api.clock import Clock
from joiner.api.logkeys import log_keys
from joiner.api.objects import NO_SCHEDULE, Taint
from joiner.api.timeline import Timeline
from joiner.cloudprovider.types import CloudProvider, NodeClaimNotFoundError
from joiner.controllers.termination.pdb import blocking
from joiner.state.cluster import ClusterState, Node, NodeClaim, Pod

log = logging.getLogger(__name__)

DISRUPTED_TAINT = Taint(labels.TAINT_DISRUPTED, NO_SCHEDULE)

#: Virtual-time slack when comparing a pod's deletion time with the clock's (timers add
#: delays to the start, so a sum may differ from the deadline's difference in the last bit).
_EPSILON_S = 1e-6


def _eviction_detail(forced: str, shutdown_s: float) -> str:
    """The timeline's detail of an eviction: why it was forced (empty: it was not), then
    its shutdown (empty for a plain eviction without one)."""
    stopping = f"shutting down for {shutdown_s:g} s" if shutdown_s > 0 else ""
    return "; ".join(part for part in (forced, stopping) if part)


def cordon(node: Node) -> None:
    """Add the ``karpenter.sh/disrupted:NoSchedule`` taint (idempotent)."""
    if DISRUPTED_TAINT not in node.taints:
        node.taints = (*node.taints, DISRUPTED_TAINT)


def lose(state: ClusterState, node: Node, now_s: float) -> None:
    """``node`` ends at ``now_s`` without a drain (its instance is gone): its workload
    pods are lost, its DaemonSet pods end with it."""
    for pod in state.pods_on(node.name):
        if not pod.daemon:
            pod.lost = True
        state.pod_event(pod, now_s)
        pod.deleted_at_s = now_s
    node.deleted_at_s = now_s


class Terminator:
    """Drains and deletes nodes; ``drain`` is idempotent."""

    def __init__(
        self,
        state: ClusterState,
        cloud: CloudProvider,
        clock: Clock,
        timeline_: Timeline,
        *,
        retry_s: float = 5.0,
        evict: Callable[[Pod, bool, int | None], bool] | None = None,
    ) -> None:
        self._state = state
        self._evict_port = evict
        self._cloud = cloud
        self._clock = clock
        self._timeline = timeline_
        self.retry_s = retry_s
        self.on_evicted: list[Callable[[Pod], None]] = []
        self.on_terminated: list[Callable[[Node], None]] = []
        self._blocked_noted: set[str] = set()
        #: Typed facts for Karpenter's termination Events in controller mode:
        #: (node, deadline s, whether the NodePool's ``terminationGracePeriod`` just set
        #: it) at a drain with a deadline and at each later step of it;
        self.deadline_listeners: list[Callable[[Node, float, bool], None]] = []
        #: (pod, its deletion's grace s, the node's deadline s) for each pod deleted to meet
        #: the deadline, PDB and do-not-disrupt bypassed;
        self.forced_listeners: list[Callable[[Pod, int, float], None]] = []
        #: (node name, pod) when a PodDisruptionBudget holds a pod's eviction back;
        self.pdb_listeners: list[Callable[[str, Pod], None]] = []
        #: (node, pods the drain still waits for) at each step that leaves the node.
        self.waiting_listeners: list[Callable[[Node, int], None]] = []
        #: Node name -> its drain's deadline (start plus the NodePool's
        #: ``terminationGracePeriod``), seconds.
        self._deadline_s: dict[str, float] = {}

    def drain(self, node: Node, reason: str) -> None:
        """Start draining ``node`` now (it must already be cordoned and marked deleting).

        With the NodePool's ``terminationGracePeriod``, each pod that still blocks the drain
        (a PDB, do-not-disrupt) is deleted anyway its own ``terminationGracePeriodSeconds``
        before the deadline that period sets (``_delete_expiring``), as Karpenter does.
        """
        if node.draining or node.deleted_at_s is not None:
            return
        node.draining = True
        cordon(node)
        self._timeline.record(timeline.DRAIN_STARTED, node=node.name, detail=reason)
        claim = self._state.claim_of(node)
        pool = self._state.nodepools.get(claim.nodepool) if claim is not None else None
        if pool is not None and pool.termination_grace_period_s is not None:
            self._set_deadline(node.name, pool.termination_grace_period_s)
        self._step(node.name)

    def _set_deadline(self, node_name: str, period_s: float) -> None:
        """The drain of ``node_name`` ends ``period_s`` (the NodePool's
        ``terminationGracePeriod``) from now: the forced end then, and a turn at each pod's
        own deletion time before it (``_delete_expiring``; times already past are the
        drain's first step's)."""
        deadline_s = self._deadline_s[node_name] = self._clock.now() + period_s
        node = self._state.nodes.get(node_name)
        for listener in self.deadline_listeners:
            if node is not None:
                listener(node, deadline_s, True)
        self._clock.after(period_s, lambda: self._force(node_name), label="drain-deadline")
        pods = [p for p in self._state.pods_on(node_name) if not p.daemon]
        delays = sorted({period_s - p.template.termination_grace_period_s for p in pods})
        for delay in delays:
            if 0 < delay < period_s:
                self._clock.after(
                    delay, lambda: self._delete_expiring(node_name), label="drain-pod-deadline"
                )

    def force_terminate(self, node: Node, reason: str) -> None:
        """Terminate ``node`` now without draining: its pods are deleted whatever their
        PodDisruptionBudgets or ``do-not-disrupt`` say, as when a NodeClaim's termination
        timestamp has passed (Karpenter node repair annotates it with now). The node must
        already be marked deleting."""
        if node.deleted_at_s is not None:
            return
        node.draining = True
        cordon(node)
        self._timeline.record(timeline.DRAIN_STARTED, node=node.name, detail=reason)
        for listener in self.deadline_listeners:
            listener(node, self._clock.now(), False)
        self._force(node.name)

    def _force(self, node_name: str) -> None:
        """The deadline: pods not yet deleted are deleted (1 s of grace, Karpenter's floor)
        and the node goes with whatever still runs there (pods shutting down are cut short
        at the deadline, as their deletion's grace ends there)."""
        node = self._state.nodes.get(node_name)
        if node is None or node.deleted_at_s is not None:
            return
        self._deadline_s[node_name] = self._clock.now()  # a forced end is the deadline
        for pod in self._state.pods_on(node_name):
            if not pod.daemon and pod.terminating_until_s is None:
                self._evict(pod, node_name, forced="terminationGracePeriod reached", grace_s=1)
        self._terminate(node)

    def _delete_expiring(self, node_name: str) -> None:
        """Delete each pod on ``node_name`` whose time has come: its node's deadline minus
        its ``terminationGracePeriodSeconds``, whatever its PodDisruptionBudgets or
        ``do-not-disrupt`` say; its deletion's grace is the deadline's remaining whole
        seconds, at least 1.

        Karpenter ``pkg/controllers/node/termination/terminator/terminator.go``
        ``DeleteExpiringPods`` (``podDeleteTimeWithGracePeriod``: deadline minus the pod's
        grace period). A pod already shutting down is left alone: Karpenter deletes it again
        only when its deletion ends after the deadline (``IsPodEligibleForForcedEviction``),
        and here such a pod is cut short at the deadline anyway. DaemonSet pods go with the
        node, as everywhere in this drain.
        """
        deadline = self._deadline_s.get(node_name)
        node = self._state.nodes.get(node_name)
        if deadline is None or node is None or node.deleted_at_s is not None:
            return
        now = self._clock.now()
        remaining_s = deadline - now
        grace_s = max(math.floor(remaining_s + _EPSILON_S), 1)
        why = f"terminationGracePeriod: deleted {remaining_s:g} s before the node's deadline"
        for pod in self._state.pods_on(node_name):
            if pod.daemon or pod.terminating_until_s is not None:
                continue
            if remaining_s <= pod.template.termination_grace_period_s + _EPSILON_S:
                self._evict(pod, node_name, forced=why, grace_s=grace_s)

    def _step(self, node_name: str) -> None:
        node = self._state.nodes.get(node_name)
        if node is None or node.deleted_at_s is not None:
            return
        if node_name in self._deadline_s:
            for on_deadline in self.deadline_listeners:
                on_deadline(node, self._deadline_s[node_name], False)
            self._delete_expiring(node_name)  # Karpenter's Drain deletes these first
        running = [p for p in self._state.pods_on(node_name) if not p.daemon]
        stopping = [p for p in running if p.terminating_until_s is not None]
        workload = [p for p in running if p.terminating_until_s is None]
        # Tiers: critical pods (system-*-critical) only once the others are gone.
        remaining = [p for p in workload if not p.template.critical] or workload
        waiting = len(remaining) < len(workload) or bool(stopping)
        for pod in remaining:
            if pod.blocks_disruption(self._clock.now()):
                waiting = True
                continue
            pdb = blocking(self._state, pod)
            if pdb is not None:
                waiting = True
                for listener in self.pdb_listeners:
                    listener(node_name, pod)
                if pod.uid not in self._blocked_noted:
                    self._blocked_noted.add(pod.uid)
                    self._timeline.record(
                        timeline.EVICTION_BLOCKED,
                        node=node_name,
                        pod=f"{pod.namespace}/{pod.name}",
                        detail=f"PodDisruptionBudget {pdb.namespace}/{pdb.name}",
                    )
                continue
            if not self._evict(pod, node_name):
                waiting = True
        if waiting:
            self._waiting(node)
            self._clock.after(self.retry_s, lambda: self._step(node_name), label="drain-retry")
            return
        self._terminate(node)

    def _waiting(self, node: Node) -> None:
        """Tell ``waiting_listeners`` how many pods ``node``'s drain still waits for: those
        Karpenter's drain counts (``terminator.go`` Drain, ``IsWaitingEviction``): every
        pod still there, shutting down or not, but DaemonSet pods that tolerate the
        disrupted taint."""
        if not self.waiting_listeners:
            return
        count = sum(
            1
            for p in self._state.pods_on(node.name)
            if not p.daemon or not any(t.tolerates(DISRUPTED_TAINT) for t in p.template.tolerations)
        )
        for listener in self.waiting_listeners:
            listener(node, count)

    def _evict(
        self, pod: Pod, node_name: str, *, forced: str = "", grace_s: int | None = None
    ) -> bool:
        """Evict ``pod``; ``forced`` (why, for the timeline): delete it instead, with
        ``grace_s`` seconds of grace. False when the Eviction port refused it (it stays,
        retried)."""
        port = self._evict_port
        if port is not None and not port(pod, bool(forced), grace_s):
            if pod.uid not in self._blocked_noted:
                self._blocked_noted.add(pod.uid)
                self._timeline.record(
                    timeline.EVICTION_BLOCKED,
                    node=node_name,
                    pod=f"{pod.namespace}/{pod.name}",
                    detail="refused by the API server",
                )
            return False
        if forced and grace_s is not None:
            deadline_s = self._deadline_s.get(node_name, self._clock.now())
            for on_forced in self.forced_listeners:
                on_forced(pod, grace_s, deadline_s)
        shutdown = self._delete(pod, forced=bool(forced), grace_s=grace_s)
        self._timeline.record(
            timeline.EVICTION,
            node=node_name,
            pod=f"{pod.namespace}/{pod.name}",
            detail=_eviction_detail(forced, shutdown),
        )
        for listener in self.on_evicted:
            listener(pod)
        return True

    def preempt(self, pod: Pod, preemptor: Pod) -> float:
        """kube-scheduler deleted ``pod`` to make room for ``preemptor`` (graceful deletion:
        no PodDisruptionBudget is consulted; ``prepareCandidate``). The pod shuts down as an
        evicted one does and its controller replaces it (``on_evicted``). Returns its
        shutdown, seconds."""
        pod.preempted_by = preemptor.uid
        shutdown = self._delete(pod, forced=False)
        self._timeline.record(
            timeline.PREEMPTED,
            node=pod.node_name,
            pod=f"{pod.namespace}/{pod.name}",
            detail=f"by {preemptor.namespace}/{preemptor.name}"
            + (f"; shutting down for {shutdown:g} s" if shutdown > 0 else ""),
        )
        for listener in self.on_evicted:
            listener(pod)
        return shutdown

    def _delete(self, pod: Pod, *, forced: bool, grace_s: int | None = None) -> float:
        """Start the pod's graceful deletion; returns its shutdown, seconds: its own
        (``PodTemplate.shutdown_s``), within ``grace_s`` when ``forced`` (at the deadline,
        none: the node goes now)."""
        now = self._clock.now()
        pod.evicted = True
        shutdown = pod.template.shutdown_s
        if forced:
            at_deadline = self._deadline_s.get(pod.node_name or "", now) <= now + _EPSILON_S
            shutdown = 0.0 if at_deadline or grace_s is None else min(shutdown, float(grace_s))
        if shutdown > 0:
            pod.terminating_until_s = now + shutdown
            self._clock.after(shutdown, lambda: self._stopped(pod), label="pod-shutdown")
        else:
            pod.deleted_at_s = now
            self._state.pod_event(pod, now)
        return shutdown

    def _stopped(self, pod: Pod) -> None:
        """An evicted pod finished its shutdown (unless its node went first)."""
        if pod.deleted_at_s is not None:
            return
        now = self._clock.now()
        pod.deleted_at_s = now
        self._state.pod_event(pod, now)

    def delete_unregistered(self, claim: NodeClaim, reason: str) -> None:
        """A NodeClaim whose node never registered: nothing to drain, delete the instance."""
        if claim.deleted_at_s is not None:
            return
        if claim.instance is not None:
            try:
                self._cloud.delete(claim.instance.provider_id)
            except NodeClaimNotFoundError:
                log.info(
                    "instance already gone nodeclaim=%s",
                    claim.name,
                    extra=log_keys(NodeClaim=claim.name),
                )
        claim.deleted_at_s = self._clock.now()
        self._timeline.record(timeline.TERMINATED, node=claim.name, detail=reason)

    def _terminate(self, node: Node) -> None:
        now = self._clock.now()
        self._timeline.record(timeline.DRAINED, node=node.name)
        claim = self._state.claim_of(node)
        if claim is not None and claim.instance is not None:
            try:
                self._cloud.delete(claim.instance.provider_id)
            except NodeClaimNotFoundError:
                log.info(
                    "instance already gone nodeclaim=%s",
                    claim.name,
                    extra=log_keys(NodeClaim=claim.name),
                )
            claim.deleted_at_s = now
        for pod in self._state.pods_on(node.name):
            pod.deleted_at_s = now  # DaemonSet pods go with their node
        node.deleted_at_s = now
        self._deadline_s.pop(node.name, None)
        self._timeline.record(timeline.TERMINATED, node=node.name)
        for listener in self.on_terminated:
            listener(node)
