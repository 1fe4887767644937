"""Typed disruption decisions: the methods' traits and the verdicts that leave a node alone.

Karpenter keeps a disruption method's reason, class and consolidation type on the method
itself (kubernetes-sigs/karpenter, ``pkg/controllers/disruption/types.go``, the ``Method``
interface: ``Reason()``, ``Class()``, ``ConsolidationType()``). ``DisruptionMethod`` does the
same for Joiner's four methods, so metrics, Events, summaries and logs read the fields
rather than a method's name.

A ``Verdict`` says why a method did not disrupt a node (cannot disrupt, cannot schedule its
pods elsewhere, not consolidatable): a ``VerdictKind`` plus the fields that kind needs.
Decisions pass verdicts around; English is made only at the edge, by ``Verdict.message``
(CLI, logs, Events, summaries), so rewording a message cannot change which Event a verdict
posts (``joiner.cluster.kube.events`` maps the kind, not the words).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from joiner.api import labels
from joiner.api.durations import format_seconds


class Reason(StrEnum):
    """A disruption reason (karpenter ``v1.DisruptionReason``): budgets and the
    ``karpenter_voluntary_disruption_decisions_total`` ``reason`` label (lower-cased)."""

    EMPTY = "Empty"
    DRIFTED = "Drifted"
    UNDERUTILIZED = "Underutilized"


class DisruptionClass(StrEnum):
    """Karpenter's disruption class (``types.go`` ``GracefulDisruptionClass`` /
    ``EventualDisruptionClass``): whether blocking pods hold the method back (graceful) or
    only delay the drain of a pool with a ``terminationGracePeriod`` (eventual)."""

    GRACEFUL = "graceful"
    EVENTUAL = "eventual"


class ConsolidationType(StrEnum):
    """Karpenter's ``ConsolidationType()``: the ``consolidation_type`` metric label, empty
    for a method that is not consolidation (drift)."""

    NONE = ""
    EMPTY = "empty"
    SINGLE = "single"
    MULTI = "multi"


@dataclass(frozen=True)
class MethodTraits:
    """What Karpenter's ``Method`` interface reports about one method."""

    reason: Reason
    disruption_class: DisruptionClass
    consolidation_type: ConsolidationType


class DisruptionMethod(StrEnum):
    """Joiner's disruption methods, in Karpenter's order; the value is the method's name
    (as Karpenter's ``disruption.Controller`` logs it). ``reason``, ``disruption_class`` and
    ``consolidation_type`` are the method's traits (``types.go`` ``Method``)."""

    EMPTINESS = "Emptiness"
    DRIFT = "Drift"
    MULTI_NODE = "MultiNodeConsolidation"
    SINGLE_NODE = "SingleNodeConsolidation"

    @property
    def traits(self) -> MethodTraits:
        """The method's reason, class and consolidation type."""
        return _TRAITS[self]

    @property
    def reason(self) -> Reason:
        """The disruption reason its commands carry (``Method.Reason``)."""
        return _TRAITS[self].reason

    @property
    def disruption_class(self) -> DisruptionClass:
        """Graceful or eventual (``Method.Class``)."""
        return _TRAITS[self].disruption_class

    @property
    def consolidation_type(self) -> ConsolidationType:
        """``empty``, ``single``, ``multi`` or empty (``Method.ConsolidationType``)."""
        return _TRAITS[self].consolidation_type


_G, _E = DisruptionClass.GRACEFUL, DisruptionClass.EVENTUAL
#: karpenter ``emptiness.go``, ``drift.go``, ``multinodeconsolidation.go``,
#: ``singlenodeconsolidation.go``: each method's Reason, Class and ConsolidationType.
_TRAITS: dict[DisruptionMethod, MethodTraits] = {
    DisruptionMethod.EMPTINESS: MethodTraits(Reason.EMPTY, _G, ConsolidationType.EMPTY),
    DisruptionMethod.DRIFT: MethodTraits(Reason.DRIFTED, _E, ConsolidationType.NONE),
    DisruptionMethod.MULTI_NODE: MethodTraits(Reason.UNDERUTILIZED, _G, ConsolidationType.MULTI),
    DisruptionMethod.SINGLE_NODE: MethodTraits(Reason.UNDERUTILIZED, _G, ConsolidationType.SINGLE),
}

#: Why a spot node is not replaced by another spot node.
SPOT_TO_SPOT_OFF = (
    "spot-to-spot consolidation is off (--feature-gates SpotToSpotConsolidation=true)"
)


class VerdictKind(StrEnum):
    """Why a method left a node alone; the ``Verdict`` fields each kind reads are listed."""

    # -- candidate collection (candidates.collect) -----------------------------------------
    #: The Node has no ``karpenter.sh/nodepool`` label: static capacity, never a candidate.
    NOT_MANAGED = "not-managed"
    #: ``pool``: the node's NodePool is not in the manifests.
    POOL_UNKNOWN = "pool-unknown"
    #: ``detail``: the well-known label (instance type, zone) the node lacks, so it cannot
    #: be priced or replaced.
    LABEL_MISSING = "label-missing"
    #: ``pool``, ``detail`` (``<instance type> in <zone>``): its NodePool has no such
    #: offering, so it cannot be priced or replaced.
    OFFERING_UNKNOWN = "offering-unknown"
    #: ``detail``: why the dry run could not take the Node over as a running NodeClaim (its
    #: capacity type has no offering there, its instance backs another Node, ...).
    NOT_ADOPTED = "not-adopted"
    BEING_DELETED = "being-deleted"
    NOT_INITIALIZED = "not-initialized"
    #: The node is annotated ``karpenter.sh/do-not-disrupt``.
    NODE_DO_NOT_DISRUPT = "node-do-not-disrupt"
    #: A provisioning pass placed a pending pod on the node within the nomination window.
    NOMINATED = "nominated"
    #: ``pod`` (namespace/name): a pod annotated ``karpenter.sh/do-not-disrupt`` blocks a
    #: graceful method.
    POD_DO_NOT_DISRUPT = "pod-do-not-disrupt"
    #: ``pdb``, ``pod`` (namespace/name each): the PDB allows no eviction of the pod.
    PDB_BLOCKS = "pdb-blocks"
    # -- budgets ------------------------------------------------------------------------------
    #: ``pool``, ``reason``; ``detail``: the budgets holding the pool at 0, if any.
    BUDGET = "budget"
    # -- emptiness ----------------------------------------------------------------------------
    #: ``node``: a CapacityBuffer's pods hold the node.
    BUFFER_PODS = "buffer-pods"
    #: ``seconds``: consolidateAfter has not passed.
    EMPTY_NOT_YET = "empty-not-yet"
    #: ``pool``: the pool has ``consolidateAfter: Never``.
    EMPTY_NEVER = "empty-never"
    # -- consolidation eligibility (Karpenter ``ShouldDisrupt``) -----------------------------
    #: ``pool``: ``consolidateAfter: Never``.
    CONSOLIDATION_DISABLED = "consolidation-disabled"
    #: ``pool``: a static NodePool (``spec.replicas``): never emptied nor consolidated.
    STATIC_POOL = "static-pool"
    #: ``pool``: policy ``WhenEmpty`` and the node is not empty.
    WHEN_EMPTY = "when-empty"
    #: ``seconds``: consolidateAfter has not passed since the last pod change.
    NOT_CONSOLIDATABLE_YET = "not-consolidatable-yet"
    # -- the scheduling simulation (command.simulate) --------------------------------------
    #: ``detail``: why the solve stopped early; ``spot_to_spot_off``: spot was rejected too.
    STOPPED = "stopped"
    #: ``detail``: the price rule stopped the solve (no cheaper instance type).
    STOPPED_NOT_CHEAPER = "stopped-not-cheaper"
    #: ``pod`` (namespace/name), ``detail``: the scheduler's reason.
    POD_FITS_NOWHERE = "pod-fits-nowhere"
    #: ``pod``, ``node``: the pod would need a node not initialized yet.
    POD_NEEDS_UNINITIALIZED = "pod-needs-uninitialized"
    # -- the consolidation decision ------------------------------------------------------------
    #: ``count``: new NodeClaims the pods need (more than one).
    TOO_MANY_NEW_NODES = "too-many-new-nodes"
    #: ``price``: the candidates' summed price, $/h.
    NOT_CHEAPER = "not-cheaper"
    #: ``detail``: why no cheaper replacement (minValues, the room test's proof).
    NOT_CHEAPER_BECAUSE = "not-cheaper-because"
    #: No cheaper spot type; ``detail`` (optional): minValues.
    NOT_CHEAPER_SPOT = "not-cheaper-spot"
    #: The spot-to-spot feature gate is off.
    SPOT_TO_SPOT_OFF = "spot-to-spot-off"
    #: ``detail``: the room test's proof that the replacement could launch as spot.
    SPOT_TO_SPOT_OFF_BECAUSE = "spot-to-spot-off-because"
    #: ``wanted``, ``count``: cheaper spot types needed and allowed.
    SPOT_TO_SPOT_TOO_FEW = "spot-to-spot-too-few"
    #: ``pool``: deleting would break its on-demand base.
    ON_DEMAND_BASE_DELETE = "on-demand-base-delete"
    #: ``pool``: the replacement could not be on-demand to keep the base.
    ON_DEMAND_BASE_REPLACE = "on-demand-base-replace"
    #: ``price`` (savings $/h), ``score``, ``threshold``: Balanced policy score too low.
    BALANCED = "balanced"
    NO_OFFERING = "no-offering"
    #: A multi-node batch the room test proves cannot consolidate.
    STRANDED = "stranded"
    # -- drift ------------------------------------------------------------------------------------
    #: ``detail``: the drift reason; ``cause``: why the drifted node was not replaced.
    DRIFTED_BUT = "drifted-but"
    #: ``pool``: a static pool runs more NodeClaims than ``replicas``: StaticDrift waits for
    #: the scale-down.
    STATIC_OVER_REPLICAS = "static-over-replicas"
    #: ``pool``: the static pool's ``limits.nodes`` leaves no room for a replacement.
    STATIC_NODE_LIMIT = "static-node-limit"
    # -- the pass -------------------------------------------------------------------------------
    #: An earlier command ended the pass before a method looked at the node (Karpenter
    #: ``controller.go`` ``Controller.disrupt``: the first method with a command wins).
    NOT_REACHED = "not-reached"


@dataclass(frozen=True)
class Verdict:
    """Why a method did not disrupt a node: ``kind`` plus the fields it reads (see
    ``VerdictKind``; the others keep their defaults). ``message()`` is its English."""

    kind: VerdictKind
    pool: str = ""
    node: str = ""
    pod: str = ""
    pdb: str = ""
    detail: str = ""
    reason: Reason | None = None
    count: int = 0
    wanted: int = 0
    #: USD per hour.
    price: float = 0.0
    seconds: float = 0.0
    score: float = 0.0
    threshold: float = 0.0
    spot_to_spot_off: bool = False
    cause: Verdict | None = None

    def message(self) -> str:
        """The verdict in English, for people (CLI, logs, summaries)."""
        return _RENDER[self.kind](self)


def _budget(v: Verdict) -> str:
    if v.detail:
        return v.detail
    if v.reason == Reason.EMPTY:
        return f"NodePool {v.pool} budget allows 0 Empty disruptions"
    if v.reason == Reason.DRIFTED:
        return f"NodePool {v.pool} budget allows 0 Drifted"
    return f"NodePool {v.pool} budget is used up"


def _stopped(v: Verdict) -> str:
    if v.spot_to_spot_off:
        return f"can't consolidate: {SPOT_TO_SPOT_OFF}, and {v.detail}"
    return f"can't consolidate: {v.detail}"


def _drifted_but(v: Verdict) -> str:
    cause = v.cause.message() if v.cause is not None else ""
    return f"drifted ({v.detail}), but {cause}"


_OD_BASE = f"on-demand base ({labels.ON_DEMAND_BASE}) needs its on-demand nodes"

_RENDER: dict[VerdictKind, Callable[[Verdict], str]] = {
    VerdictKind.NOT_MANAGED: lambda _v: (
        "not managed by a NodePool (no karpenter.sh/nodepool label)"
    ),
    VerdictKind.POOL_UNKNOWN: lambda v: f"its NodePool {v.pool} is not in the manifests",
    VerdictKind.LABEL_MISSING: lambda v: f"node has no {v.detail} label",
    VerdictKind.OFFERING_UNKNOWN: lambda v: (
        f"instance type {v.detail} is not offered to NodePool {v.pool}"
    ),
    VerdictKind.NOT_ADOPTED: lambda v: v.detail,
    VerdictKind.BEING_DELETED: lambda _v: "already being deleted",
    VerdictKind.NOT_INITIALIZED: lambda _v: "not initialized yet",
    VerdictKind.NODE_DO_NOT_DISRUPT: lambda _v: "node has karpenter.sh/do-not-disrupt",
    VerdictKind.NOMINATED: lambda _v: "nominated for a pending pod",
    VerdictKind.POD_DO_NOT_DISRUPT: lambda v: f"pod {v.pod} has karpenter.sh/do-not-disrupt",
    VerdictKind.PDB_BLOCKS: lambda v: f"PDB {v.pdb} allows 0 disruptions (pod {v.pod})",
    VerdictKind.BUDGET: _budget,
    VerdictKind.BUFFER_PODS: lambda v: f"Node {v.node} has buffer pods",
    VerdictKind.EMPTY_NOT_YET: lambda v: (
        f"empty, but consolidateAfter ({format_seconds(v.seconds)}) has not passed"
    ),
    VerdictKind.EMPTY_NEVER: lambda v: f"empty, but NodePool {v.pool} has consolidateAfter: Never",
    VerdictKind.CONSOLIDATION_DISABLED: lambda v: f"NodePool {v.pool} has consolidateAfter: Never",
    VerdictKind.STATIC_POOL: lambda v: (
        f"NodePool {v.pool} is static (spec.replicas): it keeps its node count and is "
        "never emptied or consolidated"
    ),
    VerdictKind.WHEN_EMPTY: lambda v: (
        f"NodePool {v.pool} consolidates only empty nodes (policy WhenEmpty)"
    ),
    VerdictKind.NOT_CONSOLIDATABLE_YET: lambda v: (
        f"consolidateAfter ({format_seconds(v.seconds)}) has not passed since its last pod change"
    ),
    VerdictKind.STOPPED: _stopped,
    VerdictKind.STOPPED_NOT_CHEAPER: _stopped,
    VerdictKind.POD_FITS_NOWHERE: lambda v: f"pod {v.pod} fits nowhere else: {v.detail}",
    VerdictKind.POD_NEEDS_UNINITIALIZED: lambda v: (
        f"pod {v.pod} would need node {v.node}, which is not initialized yet"
    ),
    VerdictKind.TOO_MANY_NEW_NODES: lambda v: (
        f"its pods need {v.count} new nodes; consolidation only replaces nodes with one"
    ),
    VerdictKind.NOT_CHEAPER: lambda v: (
        "can't replace with a cheaper node: no instance type that fits its pods costs "
        f"less than ${v.price:.4f}/h at worst"
    ),
    VerdictKind.NOT_CHEAPER_BECAUSE: lambda v: f"can't replace with a cheaper node: {v.detail}",
    VerdictKind.NOT_CHEAPER_SPOT: lambda v: (
        "can't replace with a cheaper spot node" + (f": {v.detail}" if v.detail else "")
    ),
    VerdictKind.SPOT_TO_SPOT_OFF: lambda _v: (
        f"{SPOT_TO_SPOT_OFF}; spot nodes are only deleted, never replaced"
    ),
    VerdictKind.SPOT_TO_SPOT_OFF_BECAUSE: lambda v: f"{SPOT_TO_SPOT_OFF}: {v.detail}",
    VerdictKind.SPOT_TO_SPOT_TOO_FEW: lambda v: (
        f"spot-to-spot needs {v.wanted} cheaper instance types, {v.count} are allowed"
    ),
    VerdictKind.ON_DEMAND_BASE_DELETE: lambda v: (
        f"NodePool {v.pool}'s {_OD_BASE}; deleting them would leave fewer"
    ),
    VerdictKind.ON_DEMAND_BASE_REPLACE: lambda v: (
        f"NodePool {v.pool}'s {_OD_BASE}; the replacement could not be on-demand"
    ),
    VerdictKind.BALANCED: lambda v: (
        f"Balanced policy: saving {v.price:.4f} $/h is not worth the disruption "
        f"(score {v.score:.2f} < {v.threshold:g})"
    ),
    VerdictKind.NO_OFFERING: lambda _v: "no available offering for the replacement",
    VerdictKind.STRANDED: lambda _v: (
        "the other nodes and one cheaper node cannot hold these nodes' pods"
    ),
    VerdictKind.DRIFTED_BUT: _drifted_but,
    VerdictKind.STATIC_OVER_REPLICAS: lambda v: (
        f"NodePool {v.pool} runs more nodes than spec.replicas: its scale-down comes first"
    ),
    VerdictKind.STATIC_NODE_LIMIT: lambda v: (
        f"NodePool {v.pool}'s limits.nodes leaves no room for a replacement"
    ),
    VerdictKind.NOT_REACHED: lambda _v: "the pass's command was chosen before a method got to it",
}
