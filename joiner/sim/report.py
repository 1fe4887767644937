"""The run summary: ``summary.json`` (camelCase keys, units in names) and the terminal table.

Cost bills each node from launch to deletion (or the end of the run) at its offering's
price; ``onDemandEquivalent`` prices the same node-hours on-demand. Pod waits are creation
to binding; a pod still pending at the end counts with its wait so far.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from joiner.api import timeline as tl
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.simulated.market import ReclaimEvent
from joiner.cloudprovider.types import Instance
from joiner.sim.timeline import Entry
from joiner.state.cluster import ClusterState

SCHEMA_VERSION = "joiner.dev/v1alpha1"
#: The month the comparison with the as-run record scales costs to, hours (30 days).
HOURS_PER_MONTH = 720.0


def cost_per_month(summary: Mapping[str, Any]) -> float:
    """The run's cost (``cost.total`` over ``durationSeconds``) scaled to a
    ``HOURS_PER_MONTH`` month, USD; 0.0 for a run of no duration."""
    seconds = float(summary["durationSeconds"])
    if seconds <= 0:
        return 0.0
    return float(summary["cost"]["total"]) / seconds * 3600 * HOURS_PER_MONTH


def with_month_figures(
    summaries: Mapping[str, Mapping[str, Any]], base: str
) -> dict[str, dict[str, Any]]:
    """Copies of ``summaries`` (one per policy) whose ``cost`` also gives ``perMonth``
    (``cost_per_month``) and, but for ``base`` (the as-run record), ``vsAsRunPerMonth``:
    its ``perMonth`` less ``base``'s, USD (negative: cheaper than what the cluster ran)."""
    reference = cost_per_month(summaries[base])
    out: dict[str, dict[str, Any]] = {}
    for name, summary in summaries.items():
        month = cost_per_month(summary)
        cost = {**summary["cost"], "perMonth": round(month, 6)}
        if name != base:
            cost["vsAsRunPerMonth"] = round(month - reference, 6)
        out[name] = {**summary, "cost": cost}
    return out


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of ``values``; 0.0 for an empty list."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def _r(x: float, digits: int = 6) -> float:
    return round(x + 0.0, digits)


def build_summary(
    *,
    name: str,
    region: str,
    seed: int,
    duration_s: float,
    state: ClusterState,
    catalog: Catalog,
    warnings: list[str],
    provisioning: dict[str, int],
    timeline: Sequence[Entry] = (),
    pdb_violations: int = 0,
    disruptions: dict[str, Any] | None = None,
    policy: dict[str, Any] | None = None,
    reclaim_events: Sequence[ReclaimEvent] = (),
) -> dict[str, Any]:
    """The ``summary.json`` document for one run ending at ``duration_s``.

    ``policy`` is the ``policy`` block (name, parameters, counters); absent: Joiner's.
    ``reclaim_events`` are the Spot market's pool events that took instances.
    """
    nodes = []
    total = 0.0
    on_demand_total = 0.0
    node_hours: dict[str, float] = {"spot": 0.0, "onDemand": 0.0}
    steps: list[tuple[float, float]] = []
    for claim in sorted(state.nodeclaims.values(), key=lambda c: (c.created_at_s, c.name)):
        if claim.instance is None or claim.launched_at_s is None:
            continue
        inst = claim.instance
        start = claim.launched_at_s
        end = claim.deleted_at_s if claim.deleted_at_s is not None else duration_s
        hours = max(0.0, end - start) / 3600.0
        price = inst.offering.cost_per_hour
        od = catalog.on_demand_price(region, inst.instance_type.name)
        od_price = od.price_per_hour if od is not None else price
        total += hours * price
        on_demand_total += hours * od_price
        ct_key = "spot" if inst.offering.capacity_type == "spot" else "onDemand"
        node_hours[ct_key] += hours
        steps.append((start, price))
        steps.append((end, -price))
        nodes.append(
            {
                "name": claim.name,
                "instanceType": inst.instance_type.name,
                "zone": inst.offering.zone,
                "capacityType": inst.offering.capacity_type,
                "nodePool": claim.nodepool,
                "launchedAtSeconds": _r(start, 3),
                "readyAtSeconds": _r(claim.initialized_at_s, 3)
                if claim.initialized_at_s is not None
                else None,
                "deletedAtSeconds": _r(claim.deleted_at_s, 3)
                if claim.deleted_at_s is not None
                else None,
                "pricePerHour": _r(price),
                "onDemandPricePerHour": _r(od_price),
                "priceEstimated": inst.offering.price_estimated,
                "allocation": _allocation(inst),
            }
        )
    running = 0.0
    peak = 0.0
    # Deletions before launches at the same instant: a replacement is not double-counted.
    for _, delta in sorted(steps, key=lambda s: (s[0], s[1])):
        running += delta
        peak = max(peak, running)

    workload = [p for p in state.pods.values() if not p.daemon]
    waits = pod_waits(state, duration_s)
    pending = [p for p in workload if p.pending]
    latencies = scale_up_latencies(state)
    reasons = Counter(p.unschedulable_reason for p in pending if p.unschedulable_reason)
    savings = (1 - total / on_demand_total) * 100 if on_demand_total > 0 else 0.0
    estimated = sorted({str(n["instanceType"]) for n in nodes if n["priceEstimated"]})
    return {
        "apiVersion": SCHEMA_VERSION,
        "kind": "SimulationSummary",
        "scenario": name,
        "region": region,
        "seed": seed,
        "durationSeconds": _r(duration_s, 3),
        "nodes": nodes,
        "cost": {
            "total": _r(total),
            "onDemandEquivalent": _r(on_demand_total),
            "perHourPeak": _r(peak),
            "savingsPercent": _r(savings, 2),
            "currency": "USD",
            "pricesEstimated": bool(estimated),
            "priceNote": price_note(catalog, region, estimated),
        },
        "pods": {
            "scheduled": sum(1 for p in workload if p.bound_at_s is not None),
            "pending": len(pending),
            "lost": sum(1 for p in workload if p.lost),
            "pendingSeconds": {
                "p50": _r(percentile(waits, 0.50), 3),
                "p95": _r(percentile(waits, 0.95), 3),
                "max": _r(max(waits) if waits else 0.0, 3),
            },
            "scaleUpLatencySeconds": {
                "pods": len(latencies),
                "p50": _r(percentile(latencies, 0.50), 3),
                "p95": _r(percentile(latencies, 0.95), 3),
            },
            "unschedulableReasons": [
                {"reason": r, "pods": n}
                for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0]))
            ],
        },
        "nodeHours": {k: _r(v, 4) for k, v in node_hours.items()},
        "provisioning": provisioning,
        "policy": policy or {"name": "joiner", "parameters": joiner_parameters(), "stats": {}},
        "interruptions": {
            **interruptions(state, timeline, pdb_violations),
            "reclaimEvents": [
                {
                    "atSeconds": _r(e.at_s, 3),
                    "instanceType": e.instance_type,
                    "zone": e.zone,
                    "nodes": e.nodes,
                }
                for e in reclaim_events
            ],
        },
        "disruptions": disruptions or no_disruptions(),
        "timeline": [
            {
                "atSeconds": _r(e.at_s, 3),
                "kind": e.kind,
                "node": e.node,
                "pod": e.pod,
                "detail": e.detail,
            }
            for e in timeline
        ],
        "warnings": warnings,
    }


def no_disruptions() -> dict[str, Any]:
    """The ``disruptions`` section of a run that executed no disruption command."""
    return {
        "byMethod": {},
        "podsEvicted": 0,
        "savingsPerHour": 0.0,
        "expired": 0,
        "rejected": 0,
        "commands": [],
    }


def price_note(catalog: Catalog, region: str, estimated: Sequence[str]) -> str:
    """Where estimated prices come from, in words ("" when none is estimated)."""
    if not estimated:
        return ""
    notes = []
    od = catalog.on_demand_price(region, estimated[0])
    if od is not None and od.estimated:
        notes.append(od.note)
    medians = [t for t in estimated if (q := catalog.spot_quote(region, t)) and q.estimated]
    if medians:
        notes.append(
            f"no Spot Advisor row for {', '.join(medians)}: their Spot saving and "
            "interruption bucket are family medians"
        )
    return "; ".join(notes) or "prices are estimated"


def _allocation(inst: Instance) -> dict[str, Any] | None:
    a = inst.allocation
    if a is None:
        return None
    return {
        "strategy": a.strategy,
        "pool": f"{inst.instance_type.name}/{inst.offering.zone}",
        "pricePerHour": _r(a.price_per_hour),
        "capacityScore": _r(a.capacity_score, 3) if a.capacity_score is not None else None,
        "pools": a.pools,
        "reason": a.reason,
    }


def pod_waits(state: ClusterState, duration_s: float) -> list[float]:
    """Seconds each workload pod waited: creation to binding; a pod still pending at the end
    counts with its wait so far; a pod deleted before it ran is left out."""
    waits = []
    for p in state.pods.values():
        if p.daemon:
            continue
        if p.bound_at_s is not None:
            waits.append(p.bound_at_s - p.created_at_s)
        elif p.deleted_at_s is None:
            waits.append(duration_s - p.created_at_s)
    return waits


def scale_up_latencies(state: ClusterState) -> list[float]:
    """Pending-to-running seconds of the pods that waited for new capacity: bound to a node
    whose NodeClaim was created after the pod (the scale-up latency a user sees). A pod
    bound no later than its node's NodeClaim was created did not wait for it: the running
    cluster a run starts from (its nodes and their pods, both at t=0) is left out."""
    created = {c.node_name: c.created_at_s for c in state.nodeclaims.values() if c.node_name}
    out = []
    for p in state.pods.values():
        if p.daemon or p.bound_at_s is None or p.node_name is None:
            continue
        made = created.get(p.node_name)
        if made is not None and made >= p.created_at_s and p.bound_at_s > made:
            out.append(p.bound_at_s - p.created_at_s)
    return out


def joiner_parameters(
    *,
    batch_idle_s: float = 1.0,
    batch_max_s: float = 10.0,
    retry_s: float = 60.0,
    ready_min_s: float = 25.0,
    ready_max_s: float = 45.0,
    packing: str = "karpenter",
) -> dict[str, Any]:
    """Joiner's provisioning parameters as the report lists them (seconds); ``packing`` is
    listed when it is not the default ``karpenter``."""
    out: dict[str, Any] = {} if packing == "karpenter" else {"packing": packing}
    return out | {
        "batchIdleSeconds": batch_idle_s,
        "batchMaxSeconds": batch_max_s,
        "retryUnschedulableSeconds": retry_s,
        "launch": "EC2 Fleet for Karpenter: spot before on-demand; spot price-capacity-optimized "
        "over per-zone capacity pools, on-demand lowest-price",
        "nodeReadySeconds": {"min": ready_min_s, "max": ready_max_s},
        "disruption": "Karpenter's emptiness, drift and consolidation per the NodePools' "
        "disruption settings and budgets; expireAfter",
    }


_EVENT_KINDS = (tl.NOTICE, tl.REBALANCE, tl.SCHEDULED_CHANGE, tl.STATE_CHANGE)


def interruptions(
    state: ClusterState, timeline: Sequence[Entry], pdb_violations: int
) -> dict[str, Any]:
    """Interruption figures derived from the timeline.

    ``count`` is the number of nodes that received an interruption event; lead time is the
    node's reclaim deadline (notice + 2 min) minus the time its replacement was Ready (the
    latest replacement NodeClaim that became Ready before the deadline, or the notice itself
    when the pods fit existing capacity); positive means in time.
    """
    by_kind: Counter[str] = Counter()
    hit: set[str] = set()
    notice: dict[str, float] = {}
    ready: dict[str, float] = {}
    reclaimed: dict[str, float] = {}
    for e in timeline:
        if e.kind in _EVENT_KINDS and not (e.kind == tl.STATE_CHANGE and e.detail == "terminated"):
            by_kind[e.kind] += 1
            if e.node:
                hit.add(e.node)
        if e.kind == tl.NOTICE and e.node and e.node not in notice:
            notice[e.node] = e.at_s
        if e.kind == tl.REPLACEMENT_READY and e.node:
            ready[e.node] = max(ready.get(e.node, 0.0), e.at_s)
        if e.kind == tl.RECLAIMED and e.node:
            reclaimed[e.node] = e.at_s
    leads = []
    for node, at in notice.items():
        deadline = at + 120.0
        leads.append(deadline - ready.get(node, at))
    moved = 0
    for p in state.pods.values():
        if p.replaces is None or p.bound_at_s is None:
            continue
        old = state.pods.get(p.replaces)
        if old is None or old.lost or old.node_name not in hit:
            continue
        gone_at = reclaimed.get(old.node_name)
        if gone_at is None or p.bound_at_s <= gone_at:
            moved += 1
    return {
        "count": len(hit),
        "byKind": dict(sorted(by_kind.items())),
        "podsRescheduledBeforeReclaim": moved,
        "podsLost": sum(1 for p in state.pods.values() if p.lost and not p.daemon),
        "pdbViolations": pdb_violations,
        "replacementLeadTimeSeconds": {
            "p50": _r(percentile(leads, 0.5), 3) if leads else None,
            "min": _r(min(leads), 3) if leads else None,
        },
    }
