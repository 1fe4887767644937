"""The disruption methods and the consolidation decision (karpenter
``pkg/controllers/disruption/``: ``emptiness.go``, ``drift.go``, ``multinodeconsolidation.go``,
``singlenodeconsolidation.go``, ``consolidation.go`` ``computeConsolidation`` and
``computeSpotToSpotConsolidation``).

Methods run in Karpenter's order, and the first to produce a command ends the pass:

1. **Emptiness** (reason ``Empty``): consolidatable nodes with no pod to move, any policy,
   in savings-ratio order while the budget allows; one command deletes them all.
2. **StaticDrift** (``Drifted``): a drifted node of a static NodePool is replaced one for
   one by a NodeClaim of the pool's template (``staticdrift``).
3. **Drift** (``Drifted``): drifted nodes of the other pools, empty ones first, then
   oldest; the first whose pods all reschedule gets a command with whatever replacements
   that needs (no price rule).
4. **MultiNodeConsolidation** (``Underutilized``): the longest prefix (at least 2, at most
   100, binary search) of the budget-filtered candidates that consolidates.
5. **SingleNodeConsolidation** (``Underutilized``): candidates by savings ratio, interleaved
   across NodePools; the first that consolidates wins.

The consolidation decision (``consolidation.go``): simulate rescheduling the candidates'
pods onto the rest of the cluster (pending pods and pods on deleting nodes take their share
first; a pod landing on a node not initialized yet is a failure). No new NodeClaim: Delete.
More than one: rejected (consolidation is only ever many-to-one). Exactly one: Replace when
its instance types can be cut to those whose *worst* launch price is strictly below the
candidates' summed price (minValues re-checked; the worst price is that of the capacity type
a launch uses: reserved, then spot, then on-demand); a replacement that can take a reserved
offering is pinned to reserved (Karpenter's scheduler pins it), else one allowing both spot
and on-demand is pinned to spot. All-spot candidates whose replacement's requirements allow
spot (whatever its types are offered as) take the spot-to-spot path, which needs the
``SpotToSpotConsolidation`` feature gate and, for a single node, at least 15 cheaper spot
types (the launch list is cut to the 15 cheapest).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial

from joiner.api import labels
from joiner.api.logkeys import log_keys
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.types import InstanceType
from joiner.controllers.disruption.candidates import Candidate, reschedule_cost
from joiner.controllers.disruption.command import (
    Command,
    Context,
    Replacement,
    Simulation,
    allowed_offerings,
    capacity_types,
    expected_launch,
    min_values_short,
    simulate,
    worst_launch_price,
)
from joiner.controllers.disruption.drift import TypesByName, drift_reason
from joiner.controllers.disruption.room import Room
from joiner.controllers.disruption.staticdrift import static_drift
from joiner.controllers.disruption.verdicts import (
    DisruptionMethod,
    Reason,
    Verdict,
    VerdictKind,
)
from joiner.scheduling import NewNodeClaim
from joiner.scheduling.static import is_static

EMPTINESS = DisruptionMethod.EMPTINESS
DRIFT = DisruptionMethod.DRIFT
MULTI_NODE = DisruptionMethod.MULTI_NODE
SINGLE_NODE = DisruptionMethod.SINGLE_NODE
#: A multi-node batch the room test proves cannot consolidate (``room.Room.stranded``).
STRANDED = Verdict(VerdictKind.STRANDED)
METHODS = tuple(DisruptionMethod)

EMPTY = Reason.EMPTY
DRIFTED = Reason.DRIFTED

log = logging.getLogger(__name__)
UNDERUTILIZED = Reason.UNDERUTILIZED

#: Karpenter ``MinInstanceTypesForSpotToSpotConsolidation``.
MIN_SPOT_TO_SPOT_TYPES = 15
#: Karpenter multi-node consolidation's batch cap.
MAX_MULTI_NODE_CANDIDATES = 100


def _replacement(
    new: NewNodeClaim, types: Sequence[InstanceType], cts: Sequence[str]
) -> Replacement | Verdict:
    reqs = new.requirements.add(Requirement.in_(labels.CAPACITY_TYPE, *cts))
    launch = expected_launch(types, reqs)
    if launch is None:
        return Verdict(VerdictKind.NO_OFFERING)
    return Replacement(new, tuple(types), tuple(sorted(cts)), launch[0], launch[1])


# -- the consolidation decision ------------------------------------------------------------


#: Karpenter's ``BalancedK``: a Balanced move needs a score of at least 1/k.
BALANCED_K = 2.0


def balanced_score(ctx: Context, command: Command) -> float:
    """Karpenter's Balanced consolidation score (``balanced.go``): the fraction of the
    NodePools' hourly price the command saves, divided by the fraction of their disruption
    it causes: each node costs 1 plus the positive eviction costs of its pods that must move
    (``RescheduleDisruptionCost`` for candidates, ``statenode.go`` ``DisruptionCost`` for
    the others; ``candidates.reschedule_cost``), over the pools' nodes."""
    pools = {c.pool.name for c in command.candidates}
    total_price = 0.0
    total_disruption = 0.0
    for claim in ctx.state.live_nodeclaims():
        node = ctx.state.node_of_claim(claim)
        if claim.nodepool not in pools or claim.instance is None or node is None:
            continue
        total_price += claim.instance.offering.price_per_hour
        total_disruption += reschedule_cost(
            [p for p in ctx.state.pods_on(node.name) if not p.daemon]
        )
    disruption = sum(c.reschedule_cost for c in command.candidates)
    if total_price <= 0 or total_disruption <= 0 or disruption <= 0:
        return 0.0
    return (command.savings_per_hour / total_price) / (disruption / total_disruption)


def consolidate(
    ctx: Context, candidates: Sequence[Candidate], method: DisruptionMethod
) -> Command | Verdict:
    """Karpenter's ``computeConsolidation``: a Delete or many-to-one Replace command for
    ``candidates``, or the reason there is none. Under a ``Balanced`` policy the command
    must also score at least 1/``BALANCED_K`` (``balanced_score``)."""
    got = _consolidate(ctx, candidates, method)
    if isinstance(got, Command) and any(
        c.pool.consolidation_policy == "Balanced" for c in got.candidates
    ):
        score = balanced_score(ctx, got)
        if score < 1 / BALANCED_K:
            return Verdict(
                VerdictKind.BALANCED,
                price=got.savings_per_hour,
                score=score,
                threshold=1 / BALANCED_K,
            )
    return got


def _on_demand_base_short(
    ctx: Context,
    cands: Sequence[Candidate],
    replacement_pool: str | None,
    replacement_on_demand: bool = False,
) -> str | None:
    """The NodePool whose ``joiner.dev/on-demand-base`` removing ``cands`` (and adding one
    node of ``replacement_pool``, on-demand or not, if any) would break, or None. Joiner's
    own setting: consolidation keeps the base as the provisioner does at launch."""
    for pool in {c.pool.name: c.pool for c in cands}.values():
        if pool.on_demand_base is None:
            continue
        live = [c for c in ctx.state.live_nodeclaims() if c.nodepool == pool.name]
        on_demand = sum(
            1
            for c in live
            if c.instance is not None
            and c.instance.offering.capacity_type == labels.CAPACITY_TYPE_ON_DEMAND
        )
        gone = [c for c in cands if c.pool.name == pool.name]
        gone_od = sum(1 for c in gone if c.capacity_type == labels.CAPACITY_TYPE_ON_DEMAND)
        if not gone_od:
            continue
        added = 1 if replacement_pool == pool.name else 0
        added_od = added if replacement_on_demand else 0
        total = len(live) - len(gone) + added
        if on_demand - gone_od + added_od < pool.on_demand_nodes_wanted(total):
            return pool.name
    return None


def _consolidate(
    ctx: Context, candidates: Sequence[Candidate], method: DisruptionMethod
) -> Command | Verdict:
    sim = simulate(ctx, candidates, consolidating=True)
    if sim.failure is not None:
        return sim.failure
    cands = list(candidates)
    if not sim.new_claims:
        base = _on_demand_base_short(ctx, cands, None)
        if base is not None:
            return Verdict(VerdictKind.ON_DEMAND_BASE_DELETE, pool=base)
        return Command(method, cands, placements=sim.placements)
    if len(sim.new_claims) > 1:
        return Verdict(VerdictKind.TOO_MANY_NEW_NODES, count=len(sim.new_claims))
    return _replace(ctx, cands, sim, method)


def _launch_requirements(
    ctx: Context, cands: Sequence[Candidate], new: NewNodeClaim
) -> tuple[set[str], Requirements] | Verdict:
    """The capacity types the replacement ``new`` may launch as and the requirements it is
    priced under (its launch's capacity types), or why no replacement keeps a NodePool's
    on-demand base (then only an on-demand replacement in that pool would)."""
    cts = capacity_types(new.instance_types, new.requirements)
    base = _on_demand_base_short(ctx, cands, new.nodepool)
    if base is None:
        return cts, new.requirements
    if labels.CAPACITY_TYPE_ON_DEMAND not in cts or _on_demand_base_short(
        ctx, cands, new.nodepool, replacement_on_demand=True
    ):
        return Verdict(VerdictKind.ON_DEMAND_BASE_REPLACE, pool=base)
    on_demand = Requirement.in_(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_ON_DEMAND)
    return {labels.CAPACITY_TYPE_ON_DEMAND}, new.requirements.add(on_demand)


def _pinned(cheaper: Sequence[InstanceType], price_reqs: Requirements, cts: set[str]) -> list[str]:
    """The capacity types a replacement launching as one of ``cheaper`` is pinned to."""
    reserved = labels.CAPACITY_TYPE_RESERVED
    if any(
        o.capacity_type == reserved for it in cheaper for o in allowed_offerings(it, price_reqs)
    ):
        # Karpenter's scheduler pins a NodeClaim that took a reserved offering to reserved
        # (FinalizeScheduling), so the replacement launches into the reservation.
        return [reserved]
    if {labels.CAPACITY_TYPE_SPOT, labels.CAPACITY_TYPE_ON_DEMAND} <= cts:
        return [labels.CAPACITY_TYPE_SPOT]
    return sorted(cts)


def _replace(
    ctx: Context, cands: list[Candidate], sim: Simulation, method: DisruptionMethod
) -> Command | Verdict:
    """The many-to-one Replace command for ``cands``, whose pods need the one new NodeClaim
    of ``sim``, or why there is none (the price rule, minValues, spot-to-spot)."""
    new = sim.new_claims[0]
    candidate_price = sum(c.price_per_hour for c in cands)
    launch = _launch_requirements(ctx, cands, new)
    if isinstance(launch, Verdict):
        return launch
    cts, price_reqs = launch
    all_spot = all(c.capacity_type == labels.CAPACITY_TYPE_SPOT for c in cands)
    # Karpenter ``computeConsolidation``: the replacement's *requirements* allowing spot
    # (``Requirements.Get(capacity-type).Has(spot)``) send all-spot candidates down the
    # spot-to-spot path, whether or not any of its remaining types is offered as spot.
    if all_spot and price_reqs.allows(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_SPOT):
        return _spot_to_spot(ctx, cands, new, candidate_price, method, sim)
    cheaper = [
        it
        for it in new.instance_types
        if (p := worst_launch_price(it, price_reqs)) is not None and p < candidate_price
    ]
    if method == MULTI_NODE:
        cheaper = _filter_out_same_type(cands, cheaper, price_reqs)
    if not cheaper:
        return Verdict(VerdictKind.NOT_CHEAPER, price=candidate_price)
    short = min_values_short(cheaper, new.requirements)
    if short is not None:
        return Verdict(VerdictKind.NOT_CHEAPER_BECAUSE, detail=short)
    rep = _replacement(new, cheaper, _pinned(cheaper, price_reqs, cts))
    if isinstance(rep, Verdict):
        return rep
    return Command(method, cands, [rep], sim.placements)


def _spot_to_spot(
    ctx: Context,
    cands: list[Candidate],
    new: NewNodeClaim,
    candidate_price: float,
    method: DisruptionMethod,
    sim: Simulation,
) -> Command | Verdict:
    if not ctx.spot_to_spot:
        return Verdict(VerdictKind.SPOT_TO_SPOT_OFF)
    reqs = new.requirements.add(Requirement.in_(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_SPOT))
    cheaper = [
        it
        for it in new.instance_types
        if (p := worst_launch_price(it, reqs)) is not None and p < candidate_price
    ]
    cheaper.sort(key=lambda it: (worst_launch_price(it, reqs) or 0.0, it.name))
    if not cheaper:  # Karpenter checks this before the 15-type rule: "Can't replace ..."
        return Verdict(VerdictKind.NOT_CHEAPER_SPOT)
    if len(cands) == 1:
        if len(cheaper) < MIN_SPOT_TO_SPOT_TYPES:
            return Verdict(
                VerdictKind.SPOT_TO_SPOT_TOO_FEW, wanted=MIN_SPOT_TO_SPOT_TYPES, count=len(cheaper)
            )
        keep = MIN_SPOT_TO_SPOT_TYPES
        for r in new.requirements.values():
            if r.min_values is not None:
                keep = max(keep, r.min_values)
        cheaper = cheaper[:keep]
    short = min_values_short(cheaper, reqs)
    if short is not None:
        return Verdict(VerdictKind.NOT_CHEAPER_SPOT, detail=short)
    rep = _replacement(new, cheaper, [labels.CAPACITY_TYPE_SPOT])
    if isinstance(rep, Verdict):
        return rep
    return Command(method, cands, [rep], sim.placements)


def _filter_out_same_type(
    cands: Sequence[Candidate], types: list[InstanceType], reqs: Requirements
) -> list[InstanceType]:
    """Karpenter ``filterOutSameInstanceType``: when the replacement could be a type being
    removed, keep only types cheaper than the cheapest such node, so 3 nodes -> 1 node of a
    type already there (really a plain delete of the others) is not chosen."""
    removing = {c.instance_type.name: c.price_per_hour for c in cands}
    same = [removing[it.name] for it in types if it.name in removing]
    if not same:
        return types
    ceiling = min(same)
    return [it for it in types if (p := worst_launch_price(it, reqs)) is not None and p < ceiling]


# -- methods -------------------------------------------------------------------------------


def _underutilized(c: Candidate) -> Verdict | None:
    """Why consolidation (not emptiness) may not take ``c`` (Karpenter ``ShouldDisrupt``)."""
    if is_static(c.pool):
        return Verdict(VerdictKind.STATIC_POOL, pool=c.pool.name)
    if c.pool.consolidate_after_s is None:
        return Verdict(VerdictKind.CONSOLIDATION_DISABLED, pool=c.pool.name)
    if c.pool.consolidation_policy == "WhenEmpty":
        return Verdict(VerdictKind.WHEN_EMPTY, pool=c.pool.name)
    if not c.consolidatable:
        return Verdict(VerdictKind.NOT_CONSOLIDATABLE_YET, seconds=c.pool.consolidate_after_s)
    return c.blocked


def _budget(ctx: Context, pool: str, reason: Reason) -> Verdict:
    """Why ``pool``'s budget for ``reason`` stops a disruption: the budgets holding it at 0
    (``BudgetMapping.limiting``), else its allowance used up in this pass."""
    return Verdict(
        VerdictKind.BUDGET,
        pool=pool,
        reason=reason,
        detail=ctx.budgets.limiting.get((pool, reason), ""),
    )


def _not_empty_yet(c: Candidate) -> Verdict | None:
    """Why emptiness may not take the empty candidate ``c`` yet, or None: a pod on it
    blocks a graceful disruption (Karpenter ``NewCandidate`` leaves such a node out of the
    graceful methods' candidates; an empty node may still carry DaemonSet pods and pods of
    eviction cost 0 or less), or ``consolidateAfter`` has not passed."""
    if c.blocked is not None:
        return c.blocked
    if c.pool.consolidate_after_s is None:
        return Verdict(VerdictKind.EMPTY_NEVER, pool=c.pool.name)
    if not c.consolidatable:
        return Verdict(VerdictKind.EMPTY_NOT_YET, seconds=c.pool.consolidate_after_s)
    return None


def emptiness(ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
    """Delete every consolidatable empty node the ``Empty`` budgets allow."""
    chosen: list[Candidate] = []
    buffered = ctx.provisioner.buffers.nodes if ctx.provisioner.buffers is not None else ()
    for c in sorted(candidates, key=lambda c: (-c.savings_ratio, c.name)):
        if not c.empty:
            continue
        if is_static(c.pool):  # Karpenter emptiness.go ShouldDisrupt: OwnedByStaticNodePool
            ctx.reasons.setdefault(c.name, Verdict(VerdictKind.STATIC_POOL, pool=c.pool.name))
            continue
        if c.name in buffered or c.claim.name in buffered:  # Emptiness: HasBufferPods
            ctx.reasons.setdefault(c.name, Verdict(VerdictKind.BUFFER_PODS, node=c.name))
            continue
        not_yet = _not_empty_yet(c)
        if not_yet is not None:
            ctx.reasons.setdefault(c.name, not_yet)
            continue
        if ctx.budgets.left(c.pool.name, EMPTY) < 1:
            ctx.reasons[c.name] = _budget(ctx, c.pool.name, EMPTY)
            continue
        ctx.budgets.take(c.pool.name, EMPTY)
        chosen.append(c)
    return Command(EMPTINESS, chosen) if chosen else None


def drift(ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
    """Replace the first drifted node whose pods all reschedule."""
    drifted: list[Candidate] = []
    types = TypesByName(ctx.types_of)
    for c in candidates:
        if is_static(c.pool):  # Karpenter drift.go ShouldDisrupt: StaticDrift's instead
            continue
        c.drifted = drift_reason(c.claim, c.node, c.pool, types, ctx.cloud_drift)
        if c.drifted is not None:
            drifted.append(c)
    # Karpenter ``drift.go`` ``ComputeCommands``: nodes with no reschedulable pod first
    # (not ``IsEmpty``: a pod of eviction cost 0 or less still counts here).
    drifted.sort(key=lambda c: (bool(c.pods), c.claim.created_at_s, c.name))
    for c in drifted:
        got = _drift_one(ctx, c)
        if isinstance(got, Command):
            ctx.budgets.take(c.pool.name, DRIFTED)
            log.info(
                "drifted node=%s nodeclaim=%s: %s",
                c.name,
                c.claim.name,
                c.drifted,
                extra=log_keys(NodeClaim=c.claim.name, NodePool=c.pool.name, Node=c.name),
            )
            return got
        ctx.reasons[c.name] = Verdict(VerdictKind.DRIFTED_BUT, detail=c.drifted or "", cause=got)
    return None


def _drift_one(ctx: Context, c: Candidate) -> Command | Verdict:
    """The Drift command replacing the drifted candidate ``c``, or why there is none."""
    if c.blocked is not None and c.pool.termination_grace_period_s is None:
        return c.blocked
    if ctx.budgets.left(c.pool.name, DRIFTED) < 1:
        return _budget(ctx, c.pool.name, DRIFTED)
    sim = simulate(ctx, [c])
    if sim.failure is not None:
        return sim.failure
    reps: list[Replacement] = []
    for new in sim.new_claims:
        cts = sorted(capacity_types(new.instance_types, new.requirements))
        rep = _replacement(new, new.instance_types, cts)
        if isinstance(rep, Verdict):
            return rep
        reps.append(rep)
    return Command(DRIFT, [c], reps, sim.placements)


def _consolidation_candidates(ctx: Context, candidates: Sequence[Candidate]) -> list[Candidate]:
    out = []
    for c in candidates:
        if c.empty:
            continue
        why = _underutilized(c)
        if why is not None:
            ctx.reasons.setdefault(c.name, why)
            continue
        out.append(c)
    out.sort(key=lambda c: (-c.savings_ratio, c.name))
    return out


def multi_node(ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
    """The longest candidate prefix (>= 2) that consolidates, by binary search."""
    eligible = _consolidation_candidates(ctx, candidates)
    left = {k: v for k, v in ctx.budgets.remaining.items() if k[1] == UNDERUTILIZED}
    batch: list[Candidate] = []
    for c in eligible:
        key = (c.pool.name, UNDERUTILIZED)
        if left.get(key, 0) < 1:
            ctx.reasons.setdefault(c.name, _budget(ctx, c.pool.name, UNDERUTILIZED))
            continue
        left[key] -= 1
        batch.append(c)
    batch = batch[:MAX_MULTI_NODE_CANDIDATES]
    if len(batch) < 2:
        return None
    best: Command | None = None
    room = room_of(ctx)
    lo, hi = 1, len(batch) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        prefix = batch[: mid + 1]
        got = _memoized(ctx, MULTI_NODE, prefix, partial(_try_batch, ctx, room, prefix))
        if isinstance(got, Command):
            best = got
            lo = mid + 1
        else:
            hi = mid - 1
    if best is not None:
        for c in best.candidates:
            ctx.budgets.take(c.pool.name, UNDERUTILIZED)
    return best


def room_of(ctx: Context) -> Room:
    """The pass's ``Room``: built by the first method that asks, shared by the next ones
    while the provisioner's snapshot is the very same (nothing a pass does before its
    command changes the cluster; the check only guards that)."""
    snapshot = ctx.provisioner.base_snapshot()[0]
    if isinstance(ctx.room, Room) and ctx.room.snapshot is snapshot:
        return ctx.room
    room = Room(ctx)
    ctx.room = room
    return room


def _try_batch(ctx: Context, room: Room, cands: Sequence[Candidate]) -> Command | Verdict:
    """A multi-node command for ``cands``, or why not; a batch the room test proves
    hopeless fails the simulation too (``room``), so it is not simulated."""
    return STRANDED if room.stranded(cands) else consolidate(ctx, cands, MULTI_NODE)


def _try_single(ctx: Context, room: Room, c: Candidate) -> Command | Verdict:
    """A single-node command for ``c``, or why not (the room test first)."""
    hopeless = room.hopeless(c)
    return hopeless if hopeless is not None else consolidate(ctx, [c], SINGLE_NODE)


def _memoized(
    ctx: Context,
    method: DisruptionMethod,
    cands: Sequence[Candidate],
    compute: Callable[[], Command | Verdict],
) -> Command | Verdict:
    """``compute()``, or the failure an earlier pass in the same world gave for ``cands``
    (``ctx.memo``, when the pass has one)."""
    if ctx.memo is None:
        return compute()
    return ctx.memo.verdict(method, cands, compute)


def single_node(ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
    """The first candidate (savings ratio order, round-robin across pools) that
    consolidates on its own."""
    eligible = _consolidation_candidates(ctx, candidates)
    room = room_of(ctx) if eligible else None
    by_pool: dict[str, list[Candidate]] = {}
    for c in eligible:
        by_pool.setdefault(c.pool.name, []).append(c)
    order: list[Candidate] = []
    queues = [by_pool[k] for k in sorted(by_pool)]
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop(0))
    for c in order:
        if ctx.budgets.left(c.pool.name, UNDERUTILIZED) < 1:
            ctx.reasons.setdefault(c.name, _budget(ctx, c.pool.name, UNDERUTILIZED))
            continue
        assert room is not None
        got = _memoized(ctx, SINGLE_NODE, [c], partial(_try_single, ctx, room, c))
        if isinstance(got, Command):
            ctx.budgets.take(c.pool.name, UNDERUTILIZED)
            return got
        ctx.reasons[c.name] = got
    return None


Method = Callable[[Context, Sequence[Candidate]], Command | None]

#: Karpenter's order; the first method that produces a command ends the pass.
ORDER: tuple[tuple[DisruptionMethod, Method], ...] = (
    (EMPTINESS, emptiness),
    # Karpenter's StaticDrift: reason Drifted, eventual, as Drift (``staticdrift``).
    (DRIFT, static_drift),
    (DRIFT, drift),
    (MULTI_NODE, multi_node),
    (SINGLE_NODE, single_node),
)
