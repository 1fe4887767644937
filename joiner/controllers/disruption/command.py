"""Disruption commands and what a pass reads: ``Replacement``, ``Command``, the pass
``Context``, the scheduling simulation (Karpenter's ``SimulateScheduling``) and the launch
price helpers the consolidation price rules use (``WorstLaunchPrice``, minValues).

The methods that produce commands are in ``methods``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from joiner.api import labels
from joiner.api.requirements import Requirements
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.controllers.disruption.budgets import BudgetMapping
from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.drift import CloudDrift, TypesOf
from joiner.controllers.disruption.memo import VerdictMemo
from joiner.controllers.disruption.verdicts import (
    DisruptionMethod,
    Reason,
    Verdict,
    VerdictKind,
)
from joiner.controllers.provisioning.provisioner import Provisioner
from joiner.scheduling import NewNodeClaim, Scheduler, SchedulingInput, StopRule
from joiner.scheduling.types import SchedulingResult, StopReason
from joiner.state.cluster import ClusterState
from joiner.state.snapshot import pod_requests


@dataclass(frozen=True)
class Replacement:
    """A NodeClaim a command launches.

    Attributes:
        new: the scheduling result it comes from (pods, requirements).
        instance_types: the options it may launch, cheapest first (price-filtered for
            consolidation).
        capacity_types: the capacity types it may launch as (pinned to spot when both were
            allowed).
        instance_type / offering: what it is expected to launch as (the cheapest available
            offering of the preferred capacity type), for reports.
    """

    new: NewNodeClaim
    instance_types: tuple[InstanceType, ...]
    capacity_types: tuple[str, ...]
    instance_type: InstanceType
    offering: Offering

    @property
    def price_per_hour(self) -> float:
        """Expected price, USD per hour."""
        return self.offering.price_per_hour


@dataclass
class Command:
    """One disruption decision: delete ``candidates``, launching ``replacements`` first.

    ``method`` is the method that made it (its traits give the reason, class and
    consolidation type). ``savings_per_hour`` is the candidates' summed price minus the
    replacements' expected price (negative for a drift replacement that costs more).
    """

    method: DisruptionMethod
    candidates: list[Candidate]
    replacements: list[Replacement] = field(default_factory=list)
    #: Where the simulation put the candidates' pods that fit existing nodes: (pod uid,
    #: NodeClaim name).
    placements: tuple[tuple[str, str], ...] = ()

    @property
    def reason(self) -> Reason:
        """The disruption reason: the method's (``Method.Reason``)."""
        return self.method.reason

    @property
    def savings_per_hour(self) -> float:
        """USD per hour saved once the command completes."""
        return sum(c.price_per_hour for c in self.candidates) - sum(
            r.price_per_hour for r in self.replacements
        )

    @property
    def names(self) -> list[str]:
        """Candidate node names."""
        return [c.name for c in self.candidates]

    @property
    def action(self) -> str:
        """``Delete`` or ``Replace``."""
        return "Replace" if self.replacements else "Delete"


@dataclass
class Context:
    """What a pass reads: cluster state, the provisioner (for its snapshot and templates),
    time, budgets and settings."""

    state: ClusterState
    provisioner: Provisioner
    types_of: TypesOf
    now_s: float
    now: datetime
    budgets: BudgetMapping
    spot_to_spot: bool = False
    #: The cloud provider's drift check (``CloudProvider.is_drifted``), if any.
    cloud_drift: CloudDrift | None = None
    #: Per node: the latest reason a method gave for not disrupting it (for ``disrupt``).
    reasons: dict[str, Verdict] = field(default_factory=dict)
    #: Per node: the method that gave its reason (none for candidate selection's); kept
    #: only when asked for (a ``history.VerdictHistory`` listens), else None.
    reason_methods: dict[str, DisruptionMethod] | None = None
    scheduler: Scheduler = field(default_factory=Scheduler)
    #: Consolidation failures of earlier passes in the same world (the controller's), if any.
    memo: VerdictMemo | None = None
    #: The pass's ``room.Room`` once a method has built it (``methods.room_of``).
    room: object | None = None
    #: NodeClaims of commands not yet deleted (Karpenter ``NodePoolState``'s pending
    #: disruption), for static pools' counts (``staticdrift``).
    pending: frozenset[str] = frozenset()


# -- scheduling simulation -----------------------------------------------------------------


@dataclass(frozen=True)
class Simulation:
    """Rescheduling the candidates' pods: the new NodeClaims the solve needs (for them, for
    pending pods and for CapacityBuffer pods alike), or why one of them cannot move."""

    new_claims: tuple[NewNodeClaim, ...] = ()
    failure: Verdict | None = None
    placements: tuple[tuple[str, str], ...] = ()


def simulate(
    ctx: Context, candidates: Sequence[Candidate], *, consolidating: bool = False
) -> Simulation:
    """Karpenter's ``SimulateScheduling`` for ``candidates`` (see the module docstring).

    ``consolidating``: the caller only accepts at most one new NodeClaim for the moving pods,
    with an instance type cheaper than the candidates together, so the solve stops as soon
    as that is impossible (``StopRule``); the failure then names that reason."""
    state = ctx.state
    names = frozenset(c.claim.name for c in candidates)
    moving = {p.uid for c in candidates for p in c.pods}
    # The whole snapshot with the candidates excluded: every candidate of a pass shares
    # what the scheduler derives from it.
    existing, bound = ctx.provisioner.base_snapshot()
    others = [
        p
        for node in state.live_nodes()
        if node.deleting and node.nodeclaim not in names
        for p in state.pods_on(node.name)
        if not p.daemon and p.terminating_until_s is None
    ]
    buffer = ctx.provisioner.buffers
    virtual = buffer.virtual_pods() if buffer is not None else []
    pods = [
        # Karpenter ``GetPendingPods`` keeps provisionable pods only (``IsProvisionable``): a
        # preemptor nominated to a node (``IsPreempting``) waits for its victims there; a pod
        # whose claims cannot be used is refused (``ValidatePersistentVolumeClaims``).
        *(p for p in state.placeable_pending_pods() if p.nominated_node_name is None),
        # SimulateScheduling's pending pods include CapacityBuffer virtual pods; a
        # replacement must hold them too, so their new NodeClaims count (below).
        *virtual,
        *others,
        *sorted((p for c in candidates for p in c.pods), key=lambda p: p.order),
    ]
    stop = _stop_rule(ctx, candidates, moving) if consolidating else None
    result = ctx.scheduler.solve(
        SchedulingInput(
            pods=pod_requests(state, pods),
            existing=existing,
            bound_pods=bound,
            nodepools=tuple(ctx.provisioner.templates()),
            daemonsets=tuple(state.daemonsets[k] for k in sorted(state.daemonsets)),
            stop=stop,
            exclude_nodes=names,
        )
    )
    if result.stopped is not None:
        return Simulation(failure=_stopped(result, stop))
    for uid, reason in result.unschedulable:
        if uid in moving:
            pod = state.pods[uid]
            return Simulation(
                failure=Verdict(
                    VerdictKind.POD_FITS_NOWHERE, pod=f"{pod.namespace}/{pod.name}", detail=reason
                )
            )
    initialized = {e.name: e.initialized for e in existing}
    for uid, node in result.existing_placements:
        if uid in moving and not initialized.get(node, True):
            pod = state.pods[uid]
            return Simulation(
                failure=Verdict(
                    VerdictKind.POD_NEEDS_UNINITIALIZED,
                    pod=f"{pod.namespace}/{pod.name}",
                    node=node,
                )
            )
    # Every new NodeClaim counts, the pending pods' too (Karpenter's ``computeConsolidation``
    # counts all of ``results.NewNodeClaims``): a pending pod that had room on a node the
    # candidates' pods would take (nominated to it, kube-scheduler not having bound it yet)
    # needs a NodeClaim after the command, which the command must pay for.
    claims = tuple(result.new_nodeclaims)
    placed = tuple((u, n) for u, n in result.existing_placements if u in moving)
    return Simulation(new_claims=claims, placements=placed)


def _stopped(result: SchedulingResult, stop: StopRule | None) -> Verdict:
    """The verdict for a solve its ``StopRule`` stopped (``result.stopped_reason``, with
    ``result.stopped`` the English): the price rule's stop is a no-cheaper-node verdict,
    and with spot rejected (spot-to-spot off) the price and launch-as rules' stops are
    spot-to-spot ones."""
    reason = result.stopped_reason
    price_rule = reason is StopReason.NOT_CHEAPER
    spot_off = bool(
        stop is not None
        and stop.rejected_capacity_types
        and reason in (StopReason.NOT_CHEAPER, StopReason.REJECTED_CAPACITY_TYPE)
    )
    kind = VerdictKind.STOPPED_NOT_CHEAPER if price_rule else VerdictKind.STOPPED
    return Verdict(kind, detail=result.stopped or "", spot_to_spot_off=spot_off)


def _stop_rule(ctx: Context, candidates: Sequence[Candidate], moving: set[str]) -> StopRule:
    """When consolidating ``candidates`` is decided to fail mid-solve: a second new NodeClaim,
    or one with no instance type cheaper than the candidates together; with every candidate
    spot and spot-to-spot consolidation off, a replacement that could be spot is rejected
    too (``methods._consolidate``), so only its other offerings can make it cheaper."""
    all_spot = all(c.capacity_type == labels.CAPACITY_TYPE_SPOT for c in candidates)
    return StopRule(
        frozenset(moving),
        sum(c.price_per_hour for c in candidates),
        frozenset({labels.CAPACITY_TYPE_SPOT})
        if all_spot and not ctx.spot_to_spot
        else frozenset(),
    )


# -- prices --------------------------------------------------------------------------------


_OFFERINGS: dict[tuple[int, Requirements], tuple[InstanceType, tuple[Offering, ...]]] = {}


def allowed_offerings(it: InstanceType, reqs: Requirements) -> tuple[Offering, ...]:
    """Available offerings of ``it`` that ``reqs`` allow, memoised per (type object,
    requirements): instance types are immutable, and the cloud hands out new objects when
    availability changes."""
    key = (id(it), reqs)
    hit = _OFFERINGS.get(key)
    if hit is not None and hit[0] is it:
        return hit[1]
    if len(_OFFERINGS) > 65536:
        _OFFERINGS.clear()
    found = tuple(o for o in it.offerings if o.available and o.compatible(reqs))
    _OFFERINGS[key] = (it, found)
    return found


def worst_launch_price(it: InstanceType, reqs: Requirements) -> float | None:
    """The highest price among ``it``'s available offerings ``reqs`` allow of the capacity
    type a launch would use: the first of reserved, spot, on-demand with such an offering
    (Karpenter core ``Offerings.WorstLaunchPrice``), or None when none is allowed."""
    found = allowed_offerings(it, reqs)
    for ct in labels.CAPACITY_TYPE_PRECEDENCE:
        prices = [o.price_per_hour for o in found if o.capacity_type == ct]
        if prices:
            return max(prices)
    return None


def capacity_types(types: Sequence[InstanceType], reqs: Requirements) -> set[str]:
    """Capacity types some available, allowed offering of ``types`` has (the scan stops once
    every capacity type ``reqs`` allows is found)."""
    allowed = reqs.get(labels.CAPACITY_TYPE)
    every = allowed.values if allowed is not None and not allowed.complement else None
    found: set[str] = set()
    for it in types:
        found.update(o.capacity_type for o in allowed_offerings(it, reqs))
        if every is not None and len(found) >= len(every):
            break
    return found


def expected_launch(
    types: Sequence[InstanceType], reqs: Requirements
) -> tuple[InstanceType, Offering] | None:
    """What a launch is expected to get: the preferred capacity type (reserved, spot,
    on-demand), then the lowest price, then type name and zone."""
    pairs = [(it, o) for it in types for o in allowed_offerings(it, reqs)]
    if not pairs:
        return None
    rank = {ct: i for i, ct in enumerate(labels.CAPACITY_TYPE_PRECEDENCE)}
    return min(
        pairs,
        key=lambda p: (rank.get(p[1].capacity_type, 9), p[1].price_per_hour, p[0].name, p[1].zone),
    )


def min_values_short(types: Sequence[InstanceType], reqs: Requirements) -> str | None:
    for key, r in sorted(reqs.items()):
        if r.min_values is None:
            continue
        # Karpenter InstanceTypes.SatisfiesMinValues: every value of each type's requirement
        # (a type offered as spot and on-demand, or in three zones, has several).
        distinct = {
            v
            for it in types
            if (tr := it.requirements.get(key)) is not None and not tr.complement
            for v in tr.values
        }
        if len(distinct) < r.min_values:
            return f"{key} has {len(distinct)} values among cheaper types, minValues {r.min_values}"
    return None
