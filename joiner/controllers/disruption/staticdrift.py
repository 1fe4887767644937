"""StaticDrift: a drifted NodeClaim of a static NodePool is replaced one for one (karpenter
``pkg/controllers/disruption/staticdrift.go`` ``ShouldDisrupt`` and ``ComputeCommands``).

Its candidates are the drifted nodes of static pools (Drift leaves them to it). Per pool, by
name: nothing while the pool's budget for ``Drifted`` is 0, nor while a scale-down is due
(active plus pending-disruption NodeClaims above ``replicas``); else up to the budget and
within ``limits.nodes`` (``scheduling.static.drift_replacements``), each drifted node gets a
command replacing it with a NodeClaim of the pool's template (``template_claim``: no pods,
the cloud chooses the offering). Upstream returns every such command at once; Joiner's
pass takes one command, so the next pass takes the next.
"""

from __future__ import annotations

from collections.abc import Sequence

from joiner.api.nodepools import NodePool
from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.command import (
    Command,
    Context,
    Replacement,
    capacity_types,
    expected_launch,
)
from joiner.controllers.disruption.drift import TypesByName, drift_reason
from joiner.controllers.disruption.verdicts import DisruptionMethod, Reason, Verdict, VerdictKind
from joiner.scheduling.static import drift_replacements, is_static, template_claim
from joiner.state.staticcount import pool_count


def _drifted(ctx: Context, candidates: Sequence[Candidate]) -> dict[str, list[Candidate]]:
    """The drifted candidates of static pools, by pool (``ShouldDisrupt``)."""
    types = TypesByName(ctx.types_of)
    out: dict[str, list[Candidate]] = {}
    for c in candidates:
        if not is_static(c.pool):
            continue
        c.drifted = drift_reason(c.claim, c.node, c.pool, types, ctx.cloud_drift)
        if c.drifted is not None:
            out.setdefault(c.pool.name, []).append(c)
    return out


def _replacement(ctx: Context, c: Candidate) -> Replacement | Verdict:
    """A NodeClaim of ``c``'s pool's template, or why none can launch."""
    new = template_claim(c.pool, ctx.provisioner.pool_types(c.pool))
    cts = sorted(capacity_types(new.instance_types, new.requirements))
    launch = expected_launch(new.instance_types, new.requirements) if cts else None
    if launch is None:
        return Verdict(VerdictKind.NO_OFFERING)
    return Replacement(new, new.instance_types, tuple(cts), launch[0], launch[1])


def _held(ctx: Context, pool: NodePool) -> Verdict | None:
    """Why StaticDrift replaces none of ``pool``'s nodes now (its budget, a scale-down
    due, ``limits.nodes``), or None."""
    budget = ctx.budgets.left(pool.name, Reason.DRIFTED)
    if budget < 1:
        detail = ctx.budgets.limiting.get((pool.name, Reason.DRIFTED), "")
        return Verdict(VerdictKind.BUDGET, pool=pool.name, reason=Reason.DRIFTED, detail=detail)
    count = pool_count(ctx.state, pool.name, ctx.pending)
    if pool.replicas is not None and count.active + count.pending_disruption > pool.replicas:
        return Verdict(VerdictKind.STATIC_OVER_REPLICAS, pool=pool.name)
    if drift_replacements(pool, count, budget, 1) < 1:
        return Verdict(VerdictKind.STATIC_NODE_LIMIT, pool=pool.name)
    return None


def static_drift(ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
    """The first StaticDrift command (module docstring), or None."""
    for name, drifted in sorted(_drifted(ctx, candidates).items()):
        pool = drifted[0].pool
        held = _held(ctx, pool)
        for c in drifted:
            why: Verdict | Replacement | None = None
            if c.blocked is not None and pool.termination_grace_period_s is None:
                why = c.blocked
            elif held is not None:
                why = held
            else:
                why = _replacement(ctx, c)
            if isinstance(why, Replacement):
                ctx.budgets.take(name, Reason.DRIFTED)
                return Command(DisruptionMethod.DRIFT, [c], [why])
            ctx.reasons[c.name] = Verdict(
                VerdictKind.DRIFTED_BUT, detail=c.drifted or "", cause=why
            )
    return None
