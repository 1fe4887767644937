"""kube-scheduler model: binds pending pods to Ready nodes (Joiner never binds).

It runs ``joiner.scheduling.Scheduler`` in ``kube-scheduler`` mode over the Ready nodes and
no NodePools, so binding applies exactly the predicates provisioning planned with (taints,
node selection, resources, host ports, volume topology, spread and pod affinity counted over
every bound pod), with kube-scheduler's queue (creation order) and its default
NodeResourcesFit LeastAllocated choice. Passes are coalesced: any number of ``kick`` calls
at one instant give one pass.

The queue is kube-scheduler's ``PrioritySort`` (higher priority first, then creation). Pods
nominated to a node by an earlier preemption are placed first; the room they wait for is
held from the others of lower or equal priority (``addGENominatedPods``), and not scored.
A pod that fits nowhere may preempt lower-priority pods (``sim.preemption``): ``preempt``
deletes each victim (its grace period runs) and the pass is repeated when the last victim
is gone.

A pod whose PersistentVolumeClaims cannot be used (``ClusterState.volume_wait``) is never
tried: the VolumeBinding plugin finds it unschedulable (Kubernetes
``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go``
``VolumeBinding.PreFilter``).

A pass tries every other pending pod; those it leaves pending wait in kube-scheduler's
``unschedulablePods`` until a cluster event may make them schedulable (Kubernetes
``pkg/scheduler/backend/queue/scheduling_queue.go``). Two such moves are modelled, besides
a Ready node or a new pod kicking a pass: a pod bound by a pass that matches every required
pod-affinity term of a pod left pending requeues it (``AssignedPodAdded``,
``getUnschedulablePodsWithCrossTopologyTerm``, and the InterPodAffinity plugin's
``isSchedulableAfterPodChange``), and pods left pending longer than five minutes are
flushed back every 30 s (``flushUnschedulablePodsLeftover``). A requeued pod is tried in a
pass at once: its backoff (``DefaultPodInitialBackoffDuration`` 1 s, doubling to
``DefaultPodMaxBackoffDuration`` 10 s) does not hold it, since the active queue is empty
once a pass ends and kube-scheduler then pops the backoff queue (``activeQueue.unlockedPop``,
feature gate ``SchedulerPopFromBackoffQ``, on by default since 1.33).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace

from joiner.api import quantity
from joiner.api.clock import Clock
from joiner.api.objects import PodTemplate
from joiner.api.requirements import Requirements
from joiner.scheduling import Scheduler, SchedulingInput
from joiner.scheduling.types import held_for
from joiner.sim import preemption
from joiner.state.cluster import ClusterState, Pod
from joiner.state.snapshot import pod_requests, ready_snapshot

#: How long a pod may stay unschedulable before it is tried again whatever happened, in
#: seconds (Kubernetes ``pkg/scheduler/backend/queue/scheduling_queue.go``
#: ``DefaultPodMaxInUnschedulablePodsDuration``).
MAX_IN_UNSCHEDULABLE_S = 300.0
#: The period of that check from the scheduler's start, in seconds (``PriorityQueue.Run``
#: runs ``flushUnschedulablePodsLeftover`` every 30 s).
FLUSH_UNSCHEDULABLE_EVERY_S = 30.0


class KubeScheduler:
    """Binds pods; ``on_bound`` hears of each binding.

    ``preempt(victim, preemptor)`` deletes a preemption victim and returns its shutdown in
    seconds; without it (None) pods never preempt.
    """

    def __init__(
        self,
        state: ClusterState,
        clock: Clock,
        preempt: Callable[[Pod, Pod], float] | None = None,
    ) -> None:
        self._state = state
        self._clock = clock
        self._scheduled = False
        self._scheduler = Scheduler()
        self._preempt = preempt
        self.on_bound: list[Callable[[Pod], None]] = []
        #: Hear of a pass after which pods are still pending (the pods, creation order).
        self.on_unplaced: list[Callable[[list[Pod]], None]] = []
        #: Preemptions done: (preemptor uid, node, victim uids).
        self.preemptions: list[tuple[str, str, tuple[str, ...]]] = []
        #: Pods bound by the running pass, in binding order.
        self._bound: list[Pod] = []
        #: When a pass last left pods pending (their last scheduling attempt), or None.
        self._attempted_s: float | None = None
        self._flush_armed = False

    def kick(self) -> None:
        """Request a binding pass at the current instant."""
        if not self._scheduled:
            self._scheduled = True
            self._clock.after(0.0, self._pass, label="kube-scheduler")

    def _pass(self) -> None:
        self._scheduled = False
        self._bound = []
        self._bind_pass()
        left = self._state.placeable_pending_pods()
        if not left:
            return
        self._attempted_s = self._clock.now()
        self._arm_flush()
        if self._bound and _partner_bound(left, self._bound):
            self.kick()
        for listener in self.on_unplaced:
            listener(left)

    def _arm_flush(self) -> None:
        """Check at the first flush tick (every ``FLUSH_UNSCHEDULABLE_EVERY_S`` from the
        start) more than ``MAX_IN_UNSCHEDULABLE_S`` after the last attempt (Kubernetes
        ``scheduling_queue.go`` ``flushUnschedulablePodsLeftover``: a pod moves once
        ``now - Timestamp`` exceeds ``podMaxInUnschedulablePodsDuration``)."""
        if self._flush_armed or self._attempted_s is None:
            return
        self._flush_armed = True
        tick = math.floor(
            (self._attempted_s + MAX_IN_UNSCHEDULABLE_S) / FLUSH_UNSCHEDULABLE_EVERY_S
        )
        self._clock.after(
            max(0.0, (tick + 1) * FLUSH_UNSCHEDULABLE_EVERY_S - self._clock.now()),
            self._flush,
            label="kube-scheduler-flush",
        )

    def _flush(self) -> None:
        """A flush tick: pods still pending since an attempt more than
        ``MAX_IN_UNSCHEDULABLE_S`` ago are tried again; a later attempt re-arms the check."""
        self._flush_armed = False
        if self._attempted_s is None or not self._state.placeable_pending_pods():
            return
        if self._clock.now() - self._attempted_s > MAX_IN_UNSCHEDULABLE_S:
            self.kick()
        else:
            self._arm_flush()

    def _bind_pass(self) -> None:
        pending = self._state.placeable_pending_pods()
        if not pending or not self._state.ready_nodes():
            return
        nominated = [p for p in pending if p.nominated_node_name is not None]
        if nominated:
            self._bind(nominated, reserve=False)
            pending = [
                p for p in self._state.placeable_pending_pods() if p.nominated_node_name is None
            ]
        unplaced = self._bind(pending, reserve=bool(nominated)) if pending else set()
        if self._preempt is None or not (unplaced or nominated):
            return
        queue = sorted(
            (
                p
                for p in self._state.placeable_pending_pods()
                if p.uid in unplaced or p.nominated_node_name is not None
            ),
            key=lambda p: (-p.template.priority_value, p.order),
        )
        if not queue:
            return
        lowest = min(
            (
                p.template.priority_value
                for n in self._state.ready_nodes()
                for p in self._state.pods_on(n.name)
                if not p.daemon
            ),
            default=None,
        )
        failed: set[int] = set()  # templates that found no candidate in this pass
        for pod in queue:
            if lowest is None or pod.template.priority_value <= lowest:
                continue  # no pod of lower priority runs anywhere
            if id(pod.template) in failed:
                continue  # an identical pod found none, and preempting only takes room
            if not self._try_preempt(pod):
                failed.add(id(pod.template))

    def _bind(self, pods: list[Pod], *, reserve: bool) -> set[str]:
        """Bind ``pods``; returns the uids left unplaced. With ``reserve``, each pod finds
        the room of the pods nominated to a node of higher or equal priority held there
        (Kubernetes pkg/scheduler/framework/runtime/framework.go
        ``RunFilterPluginsWithNominatedPods``, ``addGENominatedPods``), so the pods are
        solved one priority level at a time, highest first (kube-scheduler's queue,
        ``PrioritySort``); the held room counts in the filters, not in the LeastAllocated
        score (``ExistingNode.held``: pkg/scheduler/schedule_one.go ``prioritizeNodes``
        scores the snapshot's nodes without the nominated pods)."""
        if not reserve:
            return self._solve_and_bind(pods, {})
        nominated = [
            (p.nominated_node_name, p.template.priority_value, p.template.requests)
            for p in self._state.pending_pods()
            if p.nominated_node_name is not None
        ]
        unplaced: set[str] = set()
        for level in sorted({p.template.priority_value for p in pods}, reverse=True):
            group = [p for p in pods if p.template.priority_value == level]
            unplaced |= self._solve_and_bind(group, held_for(nominated, level))
        return unplaced

    def _solve_and_bind(self, pods: list[Pod], held: dict[str, quantity.Resources]) -> set[str]:
        """One solve over ``pods`` with ``held`` (node -> requests) out of their nodes'
        room; each placement bound. Returns the uids left unplaced."""
        state = self._state
        # The cached snapshot: the same objects while nothing changed (a solve never
        # mutates them), so a pass after a pass without a binding rebuilds nothing.
        existing, bound = ready_snapshot(state)
        if held:
            existing = tuple(
                replace(
                    e, available=quantity.subtract(e.available, held[e.name]), held=held[e.name]
                )
                if e.name in held
                else e
                for e in existing
            )
        result = self._scheduler.solve(
            SchedulingInput(
                pods=pod_requests(state, pods),
                existing=existing,
                bound_pods=bound,
                mode="kube-scheduler",
            )
        )
        now = self._clock.now()
        for uid, node in result.existing_placements:
            pod = state.pods[uid]
            pod.node_name = node
            pod.bound_at_s = now
            pod.nominated_node_name = None
            pod.unschedulable_reason = None
            state.pod_event(pod, now)
            self._bound.append(pod)
            for listener in self.on_bound:
                listener(pod)
        return {uid for uid, _ in result.unschedulable}

    def _try_preempt(self, pod: Pod) -> bool:
        """Preempt for ``pod`` if kube-scheduler would; False when it found no candidate."""
        assert self._preempt is not None
        candidate = preemption.find(self._state, pod)
        if candidate is None:
            return not preemption.eligible(self._state, pod)
        preemption.nominate(self._state, pod, candidate)
        longest = 0.0
        for victim in candidate.victims:
            if victim.terminating_until_s is not None or victim.deleted_at_s is not None:
                continue  # already being deleted
            longest = max(longest, self._preempt(victim, pod))
        self.preemptions.append((pod.uid, candidate.node, tuple(v.uid for v in candidate.victims)))
        # The preemptor is tried again once its victims are gone.
        self._clock.after(longest, self.kick, label="kube-scheduler-preemption")
        return True


def _partner_bound(pending: list[Pod], bound: list[Pod]) -> bool:
    """Some pod of ``bound`` matches every required pod-affinity term of some pod of
    ``pending``, which kube-scheduler then moves out of its unschedulable pods (Kubernetes
    ``pkg/scheduler/backend/queue/scheduling_queue.go`` ``AssignedPodAdded`` with
    ``getUnschedulablePodsWithCrossTopologyTerm``; the InterPodAffinity plugin's
    ``isSchedulableAfterPodChange`` queues it when the added pod matches all its terms,
    ``podMatchesAllAffinityTerms``). Pods with such terms stand for pods that plugin
    rejected (Joiner's solve does not say which filter failed). Replicas share a template,
    so each distinct template is matched once."""
    waiting = {p.template for p in pending if p.template.pod_affinity}
    if not waiting:
        return False
    added = {b.template for b in bound}
    return any(_matches_all(w, a) for w in waiting for a in added)


def _matches_all(waiting: PodTemplate, added: PodTemplate) -> bool:
    """A pod of ``added`` is in the scope of every required pod-affinity term of a pod of
    ``waiting`` and selected by it."""
    return all(
        term.covers(waiting.namespace, added.namespace) and _selects(term.selector, added.labels)
        for term in waiting.pod_affinity
    )


@functools.lru_cache(maxsize=4096)
def _selects(selector: Requirements, pod_labels: tuple[tuple[str, str], ...]) -> bool:
    """Label-selector matching over a pod's labels (an empty selector matches all)."""
    have = Requirements.from_label_items(tuple(sorted(pod_labels)))
    return have.compatible(selector, allow_undefined=frozenset()) is None
