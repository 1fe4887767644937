"""Karpenter's Kubernetes Events in controller mode, with Karpenter v1's reasons and wording.

* **Nominated** (Pod, Normal): ``Pod should schedule on: nodeclaim/<name>[, node/<name>]``
  (``provisioning/scheduling/events.go`` NominatePodEvent) for every pod a provisioning pass
  places: on a NodeClaim it creates (``provisioner.go`` Create, once launched) and on
  existing capacity (``scheduling/results.go`` Record: an in-flight NodeClaim, named without
  a node until it registers, a registered one with its node, or a node no NodePool manages,
  named alone). Deduplicated by pod (its UID) and rate-limited as
  ``PodNominationRateLimiter`` is: a token bucket of 10 refilled at 5 per second, shared by
  every Nominated Event; one over the limit is dropped.
* **Launched**, **Registered**, **Initialized** (NodeClaim, Normal): the status-condition
  transition Event operatorpkg's status controller posts for every NodeClaim condition,
  ``Status condition transitioned, Type: Launched, Status: Unknown -> True, Reason:
  Launched`` (``operatorpkg/status/controller.go``), once per NodeClaim and condition.
* **DisruptionBlocked** (Node and NodeClaim, Normal): a candidate a pod blocks
  (``Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=ns/name)``, ``Pdb prevents pod
  evictions (PodDisruptionBudget=[ns/name])``) or a node annotated do-not-disrupt
  (``Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation``)
  (``disruption/events/events.go`` Blocked, ``state/statenode.go``).
  On a NodePool whose budgets allow no disruption for a reason: ``No allowed disruptions
  for disruption reason <Reason> due to blocking budget`` (``disruption/helpers.go``
  BuildDisruptionBudgetMapping), 1 minute per NodePool and reason.
* **Unconsolidatable** (Node and NodeClaim, Normal): why consolidation leaves a candidate,
  for the reasons Karpenter words (``disruption/consolidation.go``: "Can't replace with a
  cheaper node", "SpotToSpotConsolidation is disabled, can't replace a spot node with a
  spot node", "SpotToSpotConsolidation requires 15 cheaper instance type options than the
  current candidate to consolidate, got N", "Can't remove without creating N candidates",
  ``NodePool "x" has consolidation disabled``, ``NodePool "x" has consolidation policy
  WhenEmpty, but node is not empty``). Joiner's other reasons (budgets, consolidateAfter,
  on-demand base) post no Event, as Karpenter posts none for them.

* **FailedScheduling** (Pod, Warning): ``Failed to schedule pod, <why>`` for each pod a
  provisioning pass could not place, ``why`` being the reason the scheduler computed
  (``provisioning/scheduling/events.go`` PodFailedToScheduleEvent, ``scheduling/results.go``
  Record); 5 minutes per pod.
* **NoCompatibleInstanceTypes** (NodePool, Warning): ``NodePool requirements filtered out all
  compatible available instance types`` (``... due to minValues incompatibility``) for a
  NodePool whose requirements leave no instance type with an available offering
  (``scheduling/scheduler.go`` NewScheduler); 1 minute per NodePool.
* **InsufficientCapacityError** (NodeClaim, Warning): ``NodeClaim <name> event: <error>``
  when the cloud provider's launch fails with its insufficient-capacity error, the error's
  text cut at 300 characters (``nodeclaim/lifecycle/events.go``, ``launch.go``
  launchNodeClaim, truncateMessage).
* **DisruptionLaunching**, **DisruptionWaitingReadiness** (replacement NodeClaim, Normal):
  ``Launching NodeClaim: <Reason>`` and, until it is initialized, ``Waiting on readiness to
  continue disruption`` while a disruption command waits for its replacements;
  **DisruptionTerminating** (candidate Node and NodeClaim, Normal): ``Disrupting Node:
  <Reason>`` / ``Disrupting NodeClaim: <Reason>`` when the command deletes them
  (``disruption/events/events.go``, ``disruption/queue.go`` waitOrTerminate).
* **Evicted** (Pod, Normal): ``Evicted pod: <reason>``, the node's NodeClaim's disruption
  reason or ``Forceful Termination``; **Disrupted** (Pod, Normal): a pod deleted to meet the
  node's ``terminationGracePeriod`` deadline (``terminator/events/events.go`` EvictPod,
  DisruptPodDelete; ``terminator/terminator.go`` DeleteExpiringPods).
* **FailedDraining** (Node, Warning): ``Failed to drain node, evicting pod violates a PDB
  (Pod=ns/name)`` when a PodDisruptionBudget refuses an eviction, ``Failed to drain node, N
  pods are waiting to be evicted`` while the drain is not done (``terminator/eviction.go``
  Reconcile, ``node/termination/controller.go`` awaitDrain); both share one 2-minute
  deduplication per node.
* **TerminationGracePeriodExpiring** (Node and NodeClaim, Warning): ``All pods will be
  deleted by <RFC 3339 time>`` when a drain gets a ``terminationGracePeriod`` deadline
  (``node/termination/controller.go`` nodeTerminationTime, ``nodeclaim/lifecycle/
  controller.go`` annotateTerminationGracePeriodTerminationTime).

Deduplication is Karpenter's recorder's (``events/recorder.go``): an Event with the same
reason and object is not posted again within 2 minutes (Unconsolidatable: 15 minutes),
on the injected clock (seconds). Wall-clock times in messages are ``wall_now`` (UTC) moved
by the clock's difference.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from joiner.cloudprovider.types import CloudProviderError, InsufficientCapacityError
from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.verdicts import Reason, Verdict, VerdictKind
from joiner.state.cluster import ClusterState, Node, NodeClaim, Pod

#: Karpenter's recorder: ``defaultDedupeTimeout`` and Unconsolidatable's ``DedupeTimeout``.
DEDUPE_S = 120.0
UNCONSOLIDATABLE_DEDUPE_S = 900.0
#: Karpenter's ``PodNominationRateLimiter`` (client-go ``NewTokenBucketRateLimiter(5, 10)``).
NOMINATION_QPS = 5.0
NOMINATION_BURST = 10
#: ``PodFailedToScheduleEvent``'s ``DedupeTimeout``; ``NoCompatibleInstanceTypes``' and
#: ``NodePoolBlockedForDisruptionReason``'s.
FAILED_SCHEDULING_DEDUPE_S = 300.0
NO_COMPATIBLE_DEDUPE_S = 60.0
#: ``lifecycle/launch.go`` truncateMessage: error text longer than this is cut.
ICE_MESSAGE_CHARS = 300
#: Karpenter's eviction reason for a node without a disruption reason
#: (``terminator/eviction.go`` evictionReason).
FORCEFUL_TERMINATION = "Forceful Termination"

_NO_COMPATIBLE = "NodePool requirements filtered out all compatible available instance types"

_CHEAPER = "Can't replace with a cheaper node"
_SPOT_TO_SPOT_DISABLED = (
    "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
)

#: Joiner's consolidation verdicts (``controllers/disruption/verdicts.py``) -> Karpenter's
#: Unconsolidatable message (``disruption/consolidation.go``), built from the verdict's
#: fields; a kind not listed posts no Event.
_UNCONSOLIDATABLE: dict[VerdictKind, Callable[[Verdict], str]] = {
    VerdictKind.SPOT_TO_SPOT_OFF: lambda _v: _SPOT_TO_SPOT_DISABLED,
    VerdictKind.SPOT_TO_SPOT_OFF_BECAUSE: lambda _v: _SPOT_TO_SPOT_DISABLED,
    VerdictKind.SPOT_TO_SPOT_TOO_FEW: lambda v: (
        f"SpotToSpotConsolidation requires {v.wanted} cheaper instance type options than "
        f"the current candidate to consolidate, got {v.count}"
    ),
    VerdictKind.NOT_CHEAPER: lambda _v: _CHEAPER,
    VerdictKind.NOT_CHEAPER_BECAUSE: lambda _v: _CHEAPER,
    VerdictKind.NOT_CHEAPER_SPOT: lambda _v: _CHEAPER,
    VerdictKind.STOPPED_NOT_CHEAPER: lambda _v: _CHEAPER,
    VerdictKind.TOO_MANY_NEW_NODES: lambda v: f"Can't remove without creating {v.count} candidates",
    VerdictKind.CONSOLIDATION_DISABLED: lambda v: f'NodePool "{v.pool}" has consolidation disabled',
    VerdictKind.WHEN_EMPTY: lambda v: (
        f'NodePool "{v.pool}" has consolidation policy WhenEmpty, but node is not empty'
    ),
}


#: Blocking verdicts -> Karpenter's DisruptionBlocked message: ``serrors.Wrap`` texts
#: sentence-cased (``statenode.go`` ValidatePodsDisruptable, ``pretty.Sentence``) and the
#: node annotation's (``state/statenode.go``).
_BLOCKED: dict[VerdictKind, Callable[[Verdict], str]] = {
    VerdictKind.POD_DO_NOT_DISRUPT: lambda v: (
        f'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod={v.pod})'
    ),
    VerdictKind.PDB_BLOCKS: lambda v: f"Pdb prevents pod evictions (PodDisruptionBudget=[{v.pdb}])",
    VerdictKind.NODE_DO_NOT_DISRUPT: lambda _v: (
        'Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation'
    ),
    # ``statenode.go`` ValidateNodeDisruptable's "state node is nominated for a pending pod".
    VerdictKind.NOMINATED: lambda _v: "State node is nominated for a pending pod",
}


class EventSink(Protocol):
    """Where Events go: ``KubeTimeline.post`` (an ObjectReference dict, reason, message)."""

    def post(
        self, involved: dict[str, Any], reason: str, message: str, *, warning: bool = False
    ) -> None: ...


def blocked_message(verdict: Verdict) -> str | None:
    """Karpenter's DisruptionBlocked message for a verdict that blocks disruption (a pod's
    or the node's do-not-disrupt annotation, a PDB), or None for any other verdict."""
    build = _BLOCKED.get(verdict.kind)
    return build(verdict) if build is not None else None


def unconsolidatable_message(verdict: Verdict) -> str | None:
    """Karpenter's Unconsolidatable message for Joiner's consolidation ``verdict``, or None
    when Karpenter posts no Event for it. A simulation stopped because the replacement
    could launch as spot with spot-to-spot off (``Verdict.spot_to_spot_off``) is Karpenter's
    spot-to-spot message, whatever its kind."""
    if verdict.spot_to_spot_off:
        return _SPOT_TO_SPOT_DISABLED
    build = _UNCONSOLIDATABLE.get(verdict.kind)
    return build(verdict) if build is not None else None


class TokenBucket:
    """client-go's token-bucket rate limiter (``flowcontrol.NewTokenBucketRateLimiter``)
    on an injected clock: starts full with ``burst`` tokens, refills ``qps`` per second up to
    ``burst``; ``try_accept`` takes one if there is one."""

    def __init__(self, qps: float, burst: int, now_s: Callable[[], float]) -> None:
        self._qps = qps
        self._burst = float(burst)
        self._tokens = float(burst)
        self._now_s = now_s
        self._last: float | None = None

    def try_accept(self) -> bool:
        """True (a token taken) or False (none left: the caller drops its action)."""
        now = self._now_s()
        if self._last is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


class KarpenterEvents:
    """Posts the Events in the module docstring to ``sink``; ``now_s`` is the clock."""

    def __init__(
        self,
        sink: EventSink,
        state: ClusterState,
        now_s: Callable[[], float],
        wall_now: Callable[[], datetime] | None = None,
    ) -> None:
        self._sink = sink
        self._state = state
        self._now_s = now_s
        self._wall_now = wall_now or (lambda: datetime.fromtimestamp(0, UTC))
        self._posted: dict[tuple[str, str, str], float] = {}
        self._nominations = TokenBucket(NOMINATION_QPS, NOMINATION_BURST, now_s)

    def _post(
        self,
        involved: dict[str, Any],
        reason: str,
        message: str,
        key: str,
        dedupe_s: float,
        limiter: TokenBucket | None = None,
        *,
        warning: bool = False,
    ) -> None:
        """Karpenter's recorder (``events/recorder.go`` publishEvent): deduplicated first
        (the entry is kept even when the limiter then drops the Event), then rate-limited."""
        now = self._now_s()
        k = (reason, f"{involved['kind']}/{involved.get('namespace', '')}/{involved['name']}", key)
        last = self._posted.get(k)
        if last is not None and now - last < dedupe_s:
            return
        self._posted[k] = now
        if limiter is not None and not limiter.try_accept():
            return
        self._sink.post(involved, reason, message, warning=warning)

    # -- provisioning and the NodeClaim lifecycle ---------------------------------------------

    def nominated(self, claim: NodeClaim) -> None:
        """Nominated on each pod the provisioner placed on ``claim``, a NodeClaim it created
        (Karpenter's ``Provisioner.Create``)."""
        for uid in claim.nominated:
            self._nominate(uid, claim.name, claim.node_name)

    def nominated_existing(self, uid: str, where: str) -> None:
        """Nominated on pod ``uid``, which a provisioning pass placed on existing capacity
        ``where``: a NodeClaim's name (in flight or registered) or an unmanaged node's
        (Karpenter's ``Results.Record``: ``NominatePodEvent(pod, existing.Node,
        existing.NodeClaim)``)."""
        claim = self._state.nodeclaims.get(where)
        if claim is not None:
            self._nominate(uid, claim.name, claim.node_name)
        elif where in self._state.nodes:
            self._nominate(uid, None, where)

    def _nominate(self, uid: str, claim: str | None, node: str | None) -> None:
        pod = self._state.pods.get(uid)
        if pod is None:
            return
        where = [f"nodeclaim/{claim}"] if claim else []
        if node:
            where.append(f"node/{node}")
        self._post(
            {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name},
            "Nominated",
            f"Pod should schedule on: {', '.join(where)}",
            uid,
            DEDUPE_S,
            self._nominations,
        )

    def condition(self, claim: NodeClaim, condition: str) -> None:
        """The ``condition`` (Launched, Registered, Initialized) became True on ``claim``."""
        self._post(
            _nodeclaim_ref(claim.name),
            condition,
            f"Status condition transitioned, Type: {condition}, Status: Unknown -> True, "
            f"Reason: {condition}",
            "",
            float("inf"),
        )

    # -- disruption ----------------------------------------------------------------------------

    def disruption_pass(self, reasons: dict[str, Verdict], candidates: list[Candidate]) -> None:
        """DisruptionBlocked and Unconsolidatable from one pass: ``reasons`` by node name
        (the pass context's verdicts), ``candidates`` the pass's candidates."""
        by_name = {c.name: c for c in candidates}
        for c in candidates:
            blocked = blocked_message(c.blocked) if c.blocked is not None else None
            if blocked is not None:
                self._on_node(c.name, c.claim.name, "DisruptionBlocked", blocked, DEDUPE_S)
        for name, reason in sorted(reasons.items()):
            cand = by_name.get(name)
            if cand is None:
                blocked = blocked_message(reason)
                if blocked is not None:
                    node = self._state.nodes.get(name)
                    claim = node.nodeclaim if node is not None else None
                    self._on_node(name, claim, "DisruptionBlocked", blocked, DEDUPE_S)
                continue
            if cand.blocked is not None:
                continue
            message = unconsolidatable_message(reason)
            if message is not None:
                self._on_node(
                    name, cand.claim.name, "Unconsolidatable", message, UNCONSOLIDATABLE_DEDUPE_S
                )

    def budgets_blocked(self, blocked: set[tuple[str, str]]) -> None:
        """DisruptionBlocked on each NodePool whose budgets allow no disruption for a reason
        (``blocked``: (NodePool, reason) pairs, ``BudgetMapping.blocked``): ``No allowed
        disruptions for disruption reason <reason> due to blocking budget``, 1 minute per
        NodePool and reason (Karpenter ``disruption/events/events.go``
        NodePoolBlockedForDisruptionReason)."""
        for pool, reason in sorted(blocked):
            self._post(
                {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": pool},
                "DisruptionBlocked",
                f"No allowed disruptions for disruption reason {reason} due to blocking budget",
                reason,
                NO_COMPATIBLE_DEDUPE_S,
            )

    def _on_node(
        self, node: str, claim: str | None, reason: str, message: str, dedupe_s: float
    ) -> None:
        self._post(_node_ref(node), reason, message, "", dedupe_s)
        if claim is not None:
            self._post(_nodeclaim_ref(claim), reason, message, "", dedupe_s)

    def disruption_waiting(self, reason: Reason, replacements: list[NodeClaim]) -> None:
        """A disruption command for ``reason`` waits on its ``replacements``: each one not
        yet initialized gets DisruptionLaunching and DisruptionWaitingReadiness, as
        Karpenter's orchestration queue posts them on each look (``disruption/queue.go``
        waitOrTerminate; ``disruption/events/events.go`` Launching, WaitingOnReadiness)."""
        for claim in replacements:
            if claim.deleted_at_s is not None or claim.initialized_at_s is not None:
                continue
            self._post(
                _nodeclaim_ref(claim.name),
                "DisruptionLaunching",
                f"Launching NodeClaim: {_title(reason.value)}",
                reason.value,
                DEDUPE_S,
            )
            self._post(
                _nodeclaim_ref(claim.name),
                "DisruptionWaitingReadiness",
                "Waiting on readiness to continue disruption",
                "",
                DEDUPE_S,
            )

    def disruption_terminating(self, reason: Reason, node: str, claim: str) -> None:
        """A disruption command for ``reason`` deletes candidate ``node`` and its NodeClaim
        ``claim``: DisruptionTerminating on both (``disruption/events/events.go``
        Terminating, deduplicated per object and reason)."""
        title = _title(reason.value)
        self._post(
            _node_ref(node),
            "DisruptionTerminating",
            f"Disrupting Node: {title}",
            reason.value,
            DEDUPE_S,
        )
        self._post(
            _nodeclaim_ref(claim),
            "DisruptionTerminating",
            f"Disrupting NodeClaim: {title}",
            reason.value,
            DEDUPE_S,
        )

    # -- provisioning failures -----------------------------------------------------------------

    def failed_scheduling(self, uid: str, why: str) -> None:
        """FailedScheduling (Warning) on pod ``uid``, which a provisioning pass could not
        place; ``why`` is the reason the scheduler computed for it (Karpenter
        ``scheduling/events.go`` PodFailedToScheduleEvent: 5 minutes per pod)."""
        pod = self._state.pods.get(uid)
        if pod is None:
            return
        self._post(
            _pod_ref(pod),
            "FailedScheduling",
            f"Failed to schedule pod, {why}",
            uid,
            FAILED_SCHEDULING_DEDUPE_S,
            warning=True,
        )

    def no_compatible_instance_types(self, nodepool: str, min_values: bool) -> None:
        """NoCompatibleInstanceTypes (Warning) on NodePool ``nodepool``, whose requirements
        leave no instance type (``min_values``: because of a ``minValues``); Karpenter
        ``scheduling/events.go`` NoCompatibleInstanceTypes, 1 minute per NodePool."""
        message = _NO_COMPATIBLE + (" due to minValues incompatibility" if min_values else "")
        self._post(
            {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": nodepool},
            "NoCompatibleInstanceTypes",
            message,
            "",
            NO_COMPATIBLE_DEDUPE_S,
            warning=True,
        )

    def launch_failed(self, claim: NodeClaim, error: CloudProviderError) -> None:
        """InsufficientCapacityError (Warning) on ``claim`` when its launch failed with the
        cloud provider's ``InsufficientCapacityError``; other errors post nothing here
        (Karpenter ``nodeclaim/lifecycle/launch.go`` launchNodeClaim,
        ``lifecycle/events.go`` InsufficientCapacityErrorEvent)."""
        if not isinstance(error, InsufficientCapacityError):
            return
        text = str(error)
        if len(text) >= ICE_MESSAGE_CHARS:
            text = text[:ICE_MESSAGE_CHARS] + "..."
        self._post(
            _nodeclaim_ref(claim.name),
            "InsufficientCapacityError",
            f"NodeClaim {claim.name} event: {text}",
            "",
            DEDUPE_S,
            warning=True,
        )

    # -- termination ---------------------------------------------------------------------------

    def evicted(self, namespace: str, name: str, node: str | None) -> None:
        """Evicted on pod ``namespace/name``, evicted from ``node``: ``Evicted pod:`` and
        the node's NodeClaim's disruption reason, ``Forceful Termination`` without one,
        nothing for a node without a NodeClaim (Karpenter ``terminator/eviction.go``
        Reconcile and evictionReason, ``terminator/events/events.go`` EvictPod)."""
        st_node = self._state.nodes.get(node or "")
        claim = self._state.claim_of(st_node) if st_node is not None else None
        reason = "" if claim is None else claim.disruption_reason or FORCEFUL_TERMINATION
        ref = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name}
        self._post(ref, "Evicted", f"Evicted pod: {reason}", name, DEDUPE_S)

    def eviction_refused(self, namespace: str, name: str, node: str | None) -> None:
        """FailedDraining (Warning) on ``node``: a PodDisruptionBudget refused evicting pod
        ``namespace/name`` (Karpenter ``terminator/eviction.go`` Reconcile on 429,
        ``terminator/events/events.go`` NodeFailedToDrain)."""
        if node is None:
            return
        self._failed_draining(node, f"evicting pod violates a PDB (Pod={namespace}/{name})")

    def drain_waiting(self, node: Node, pods: int) -> None:
        """FailedDraining (Warning) on ``node``, whose drain still waits on ``pods`` pods
        (Karpenter ``node/termination/controller.go`` awaitDrain, ``terminator.go`` Drain's
        NodeDrainError)."""
        self._failed_draining(node.name, f"{pods} pods are waiting to be evicted")

    def _failed_draining(self, node: str, error: str) -> None:
        self._post(
            _node_ref(node),
            "FailedDraining",
            f"Failed to drain node, {error}",
            "",
            DEDUPE_S,
            warning=True,
        )

    def grace_period_expiring(self, node: Node, deadline_s: float, *, claim: bool) -> None:
        """TerminationGracePeriodExpiring (Warning) on ``node`` (and, ``claim``, on its
        NodeClaim): its pods are deleted by ``deadline_s`` (clock seconds), shown as RFC 3339
        (Karpenter ``node/termination/controller.go`` nodeTerminationTime,
        ``nodeclaim/lifecycle/controller.go`` annotateTerminationGracePeriodTerminationTime,
        ``terminator/events/events.go``)."""
        when = self._wall_at(deadline_s).strftime("%Y-%m-%dT%H:%M:%SZ")
        message = f"All pods will be deleted by {when}"
        reason = "TerminationGracePeriodExpiring"
        self._post(_node_ref(node.name), reason, message, "", DEDUPE_S, warning=True)
        if claim and node.nodeclaim is not None:
            self._post(_nodeclaim_ref(node.nodeclaim), reason, message, "", DEDUPE_S, warning=True)

    def disrupted(self, pod: Pod, grace_s: int, deadline_s: float) -> None:
        """Disrupted on ``pod``, deleted with ``grace_s`` seconds of grace to meet its node's
        ``terminationGracePeriod`` deadline ``deadline_s`` (clock seconds), bypassing its
        PDB and do-not-disrupt (Karpenter ``terminator/terminator.go`` DeleteExpiringPods,
        ``terminator/events/events.go`` DisruptPodDelete; the time as Go prints one)."""
        when = self._wall_at(deadline_s).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")
        own_s = round(pod.template.termination_grace_period_s)
        self._post(
            _pod_ref(pod),
            "Disrupted",
            f"Deleting the pod to accommodate the terminationTime {when} of the node. The pod "
            f"was granted {grace_s} seconds of grace-period of its {own_s} "
            "terminationGracePeriodSeconds. This bypasses the PDB of the pod and the "
            "do-not-disrupt annotation.",
            pod.name,
            DEDUPE_S,
        )

    def _wall_at(self, at_s: float) -> datetime:
        """The UTC wall time of clock instant ``at_s``, to the second."""
        wall = self._wall_now() + timedelta(seconds=at_s - self._now_s())
        return wall.replace(microsecond=0)


def _title(word: str) -> str:
    """golang.org/x/text ``cases.Title(language.Und, cases.NoLower)``: each word's first
    letter upper-cased, the rest kept."""
    return " ".join(w[:1].upper() + w[1:] for w in word.split(" "))


def _pod_ref(pod: Pod) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name}


def _node_ref(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "name": name}


def _nodeclaim_ref(name: str) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": name}
