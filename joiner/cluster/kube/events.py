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
* **Unconsolidatable** (Node and NodeClaim, Normal): why consolidation leaves a candidate,
  for the reasons Karpenter words (``disruption/consolidation.go``: "Can't replace with a
  cheaper node", "SpotToSpotConsolidation is disabled, can't replace a spot node with a
  spot node", "SpotToSpotConsolidation requires 15 cheaper instance type options than the
  current candidate to consolidate, got N", "Can't remove without creating N candidates",
  ``NodePool "x" has consolidation disabled``, ``NodePool "x" has consolidation policy
  WhenEmpty, but node is not empty``). Joiner's other reasons (budgets, consolidateAfter,
  on-demand base) post no Event, as Karpenter posts none for them.

Deduplication is Karpenter's recorder's (``events/recorder.go``): an Event with the same
reason and object is not posted again within 2 minutes (Unconsolidatable: 15 minutes),
on the injected clock (seconds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.verdicts import Verdict, VerdictKind
from joiner.state.cluster import ClusterState, NodeClaim

#: Karpenter's recorder: ``defaultDedupeTimeout`` and Unconsolidatable's ``DedupeTimeout``.
DEDUPE_S = 120.0
UNCONSOLIDATABLE_DEDUPE_S = 900.0
#: Karpenter's ``PodNominationRateLimiter`` (client-go ``NewTokenBucketRateLimiter(5, 10)``).
NOMINATION_QPS = 5.0
NOMINATION_BURST = 10

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

    def __init__(self, sink: EventSink, state: ClusterState, now_s: Callable[[], float]) -> None:
        self._sink = sink
        self._state = state
        self._now_s = now_s
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
        self._sink.post(involved, reason, message)

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

    def _on_node(
        self, node: str, claim: str | None, reason: str, message: str, dedupe_s: float
    ) -> None:
        node_ref = {"apiVersion": "v1", "kind": "Node", "name": node}
        self._post(node_ref, reason, message, "", dedupe_s)
        if claim is not None:
            self._post(_nodeclaim_ref(claim), reason, message, "", dedupe_s)


def _nodeclaim_ref(name: str) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": name}
