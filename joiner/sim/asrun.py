"""The ``as-run`` row of a comparison: the nodes a cluster really ran (``spec.asRun``), priced.

It is a record, not a model: nothing is decided and no controller runs. Its ``summary.json``
block (``policies["as-run"]``) has the shape of a simulated policy's run:

* **nodes**: one per recorded node that ran within ``[0, duration]`` of the Scenario, its
  ``launchedAtSeconds`` the CSV's ``startSeconds`` and ``deletedAtSeconds`` its
  ``endSeconds`` (null when the node still ran at the Scenario's end); no ``readyAtSeconds``
  nor fleet ``allocation`` (the history has neither). Nodes that start at or after the end
  are left out, with a warning.
* **cost**: each node billed over its clipped lifetime. On-demand nodes at the packaged
  on-demand price of their instance type in the Scenario's region. Reserved nodes as the
  simulation prices reserved capacity (Karpenter-AWS's on-demand price / 10^7: already paid
  for, the reservation's own bill is not in any summary), with a warning when the Scenario
  declares no capacity reservation for their pool (the simulated policies then pay for that
  capacity). Spot nodes at the
  Scenario's Spot price history (``spec.cloud.spotPriceHistory``) for their type and zone,
  integrated over their lifetime (the latest row at or before each instant; earlier instants
  the earliest row, as the simulated market reads it), else at the packaged Spot estimate
  (on-demand x (1 - Spot Instance Advisor saving), ``catalog.spot_price``) with
  ``pricesEstimated`` and ``priceNote`` saying so. A node without a capacity type is priced
  on-demand, with a warning; a node whose instance type is unknown or unpriced in the region
  is left out of the cost (its node-hours still count in ``nodeHours``), with a warning
  naming it and its node-hours. A node's ``pricePerHour`` is its cost over its hours (the
  mean price for a Spot node under a price history).
* **pods**: from ``spec.asRun.pods`` when given, only the pods created within
  ``[0, duration)`` (the simulated policies start from an empty cluster: a pod created
  before the range has no counterpart in their figures): those scheduled by the end give
  ``pendingSeconds`` (creation to scheduling); ``scheduled`` counts those scheduled by the
  end, ``pending`` those not scheduled by its end (still pending, or deleted while
  pending: the history cannot tell, a warning says so). Without it the figures are zeros
  and a warning says that pending time could not be derived.
* **windows** (``spec.report.windows``, with ``pods``): per window, the pods created in it
  and scheduled by the end (pods.csv has no priority: every pod counts).
* provisioning, interruptions and disruptions are zero or empty; the timeline has the
  nodes' starts and ends (``nodeStarted``, ``nodeEnded``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.api import timeline as tl
from joiner.api.grouping import grouped, plural
from joiner.cloudprovider.catalog import Catalog, spot_price
from joiner.cloudprovider.reservations import RESERVED_PRICE_DIVISOR
from joiner.sim.asrun_files import AsRunNode, AsRunPod, AsRunRecord
from joiner.sim.report import SCHEMA_VERSION, no_disruptions, percentile
from joiner.sim.scenario import Scenario
from joiner.sim.windows import Window

#: The policy name (``spec.compare``, ``summary.json`` ``policies`` key).
AS_RUN = "as-run"


@dataclass(frozen=True)
class AsRunResult:
    """The as-run block of ``summary.json`` and what the HTML report plots of it.

    Attributes:
        summary: the ``PolicyRun``-shaped document (``policies["as-run"]``).
        pod_spans: each pod of ``spec.asRun.pods`` as (created, scheduled or None) seconds
            from the Scenario's start; empty without it.
        waits: the pending seconds ``pods.pendingSeconds`` is computed from.
    """

    summary: dict[str, Any]
    pod_spans: tuple[tuple[float, float | None], ...]
    waits: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class _Priced:
    """One node's bill over its clipped lifetime (USD); ``price`` None: left out of the
    cost (unknown or unpriced instance type)."""

    cost: float
    on_demand_cost: float
    price: float | None
    on_demand_price: float
    estimated: bool


def _r(x: float, digits: int = 6) -> float:
    return round(x + 0.0, digits)


def _integral(history: Sequence[tuple[float, float]], start: float, end: float) -> float:
    """USD over ``[start, end]`` seconds under a price history (``(seconds, USD per hour)``
    sorted by time; the latest row at or before each instant, the earliest row before it)."""
    times = [t for t, _ in history]
    i = max(bisect_right(times, start) - 1, 0)
    t = start
    total = 0.0
    while t < end:
        boundary = times[i + 1] if i + 1 < len(times) else end
        stop = min(end, max(boundary, t))
        total += (stop - t) / 3600.0 * history[i][1]
        t = stop
        i += 1
    return total


class _Pricer:
    """Prices recorded nodes in one region (module docstring); collects which instance
    types were priced at the packaged Spot estimate, which Spot types had no estimate, and
    which reserved nodes have no reservation in the Scenario."""

    def __init__(
        self,
        catalog: Catalog,
        region: str,
        history: Mapping[tuple[str, str], tuple[tuple[float, float], ...]],
        reserved_pools: Collection[tuple[str, str]] = (),
    ) -> None:
        self.catalog = catalog
        self.region = region
        self.history = history
        #: (instance type, zone) of the Scenario's capacity reservations.
        self.reserved_pools = frozenset(reserved_pools)
        #: Reserved nodes in a pool the Scenario declares no reservation for.
        self.undeclared: list[str] = []
        self.spot_estimated: set[str] = set()
        self.spot_unquoted: set[str] = set()
        self.notes: set[str] = set()

    def price(self, node: AsRunNode, start: float, end: float) -> _Priced:
        """``node``'s bill over ``[start, end]`` seconds."""
        hours = (end - start) / 3600.0
        od = (
            self.catalog.on_demand_price(self.region, node.instance_type)
            if node.instance_type
            else None
        )
        if od is None:
            return _Priced(0.0, 0.0, None, 0.0, False)
        if od.estimated:
            self.notes.add(od.note)
        od_cost = hours * od.price_per_hour
        if node.capacity_type == "reserved":
            price = od.price_per_hour / RESERVED_PRICE_DIVISOR
            if (node.instance_type, node.zone) not in self.reserved_pools:
                self.undeclared.append(node.node)
            return _Priced(hours * price, od_cost, price, od.price_per_hour, od.estimated)
        if node.capacity_type != "spot":
            return _Priced(od_cost, od_cost, od.price_per_hour, od.price_per_hour, od.estimated)
        history = self.history.get((node.instance_type, node.zone))
        if history:
            cost = _integral(history, start, end)
            mean = cost / hours if hours > 0 else _integral(history, start, start + 1.0) * 3600
            return _Priced(cost, od_cost, mean, od.price_per_hour, od.estimated)
        quote = self.catalog.spot_quote(self.region, node.instance_type)
        if quote is None:
            self.spot_unquoted.add(node.instance_type)
            return _Priced(od_cost, od_cost, od.price_per_hour, od.price_per_hour, True)
        self.spot_estimated.add(node.instance_type)
        if quote.estimated:
            self.notes.add(quote.note)
        price = spot_price(od.price_per_hour, quote.savings_pct)
        return _Priced(hours * price, od_cost, price, od.price_per_hour, True)

    def note(self) -> str:
        """``cost.priceNote``: where the estimated prices come from ("" when none is)."""
        parts = []
        if self.spot_estimated:
            parts.append(
                f"spot nodes of {', '.join(sorted(self.spot_estimated))} are priced at the "
                f"packaged Spot estimate for {self.region} (on-demand x (1 - Spot Instance "
                "Advisor saving)), not at what they paid: the Scenario has no "
                "spec.cloud.spotPriceHistory row for their pool"
            )
        if self.spot_unquoted:
            parts.append(
                f"spot nodes of {', '.join(sorted(self.spot_unquoted))} are priced on-demand: "
                f"the packaged data has no Spot estimate for them in {self.region}"
            )
        parts += sorted(n for n in self.notes if n)
        return "; ".join(parts)


def _clipped(node: AsRunNode, duration_s: float) -> tuple[float, float] | None:
    """The node's lifetime within ``[0, duration_s]`` (``duration_s`` > 0), or None when it
    starts at or after the end."""
    if node.start_s >= duration_s:
        return None
    end = duration_s if node.end_s is None else min(node.end_s, duration_s)
    return max(0.0, node.start_s), end


@dataclass
class _Nodes:
    """The nodes' section, figures and warnings as they are accumulated."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    total: float = 0.0
    on_demand_total: float = 0.0
    spot_hours: float = 0.0
    on_demand_hours: float = 0.0
    #: (node, instance type, hours) of the nodes left out of the cost.
    unpriced: list[tuple[str, str, float]] = field(default_factory=list)
    #: (node, hours) of the nodes without a capacity type.
    unknown_capacity: list[tuple[str, float]] = field(default_factory=list)
    #: Nodes that start at or after the end.
    after_end: list[str] = field(default_factory=list)


def _node_entry(
    node: AsRunNode, start: float, end: float, duration_s: float, priced: _Priced
) -> dict[str, Any]:
    """One ``SummaryNode`` of the record."""
    return {
        "name": node.node,
        "instanceType": node.instance_type,
        "zone": node.zone,
        "capacityType": node.capacity_type,
        "nodePool": node.node_pool,
        "launchedAtSeconds": _r(start, 3),
        "readyAtSeconds": None,
        "deletedAtSeconds": _r(end, 3) if node.end_s is not None and end < duration_s else None,
        "pricePerHour": _r(priced.price if priced.price is not None else 0.0),
        "onDemandPricePerHour": _r(priced.on_demand_price),
        "priceEstimated": priced.estimated,
        "allocation": None,
    }


def _price_nodes(record: AsRunRecord, pricer: _Pricer, duration_s: float) -> _Nodes:
    """Every recorded node clipped to the Scenario's duration and priced."""
    acc = _Nodes()
    for node in record.nodes:
        span = _clipped(node, duration_s)
        if span is None:
            acc.after_end.append(node.node)
            continue
        start, end = span
        hours = (end - start) / 3600.0
        priced = pricer.price(node, start, end)
        acc.nodes.append(_node_entry(node, start, end, duration_s, priced))
        if node.capacity_type == "spot":
            acc.spot_hours += hours
        else:
            acc.on_demand_hours += hours
        if priced.price is None:
            # Left out of the cost: not also "priced on-demand" for want of a capacity type.
            acc.unpriced.append((node.node, node.instance_type, hours))
            continue
        if not node.capacity_type:
            acc.unknown_capacity.append((node.node, hours))
        acc.total += priced.cost
        acc.on_demand_total += priced.on_demand_cost
    return acc


def _node_warnings(acc: _Nodes, file: str, region: str) -> list[str]:
    """What the node section left out or assumed, one grouped warning per kind."""
    out = []
    if acc.unpriced:
        hours = sum(h for _, _, h in acc.unpriced)
        out.append(
            grouped(
                f"{file}: as-run: {plural(len(acc.unpriced), 'node')} with an instance type that "
                f"is unknown or has no on-demand price in {region} "
                f"{'is' if len(acc.unpriced) == 1 else 'are'} left out of the cost "
                f"({hours:.1f} node-hours, counted in nodeHours)",
                [f"{n} ({t or 'no instanceType'}, {h:.1f} h)" for n, t, h in acc.unpriced],
            )
        )
    if acc.unknown_capacity:
        hours = sum(h for _, h in acc.unknown_capacity)
        out.append(
            grouped(
                f"{file}: as-run: {plural(len(acc.unknown_capacity), 'node')} without a "
                f"capacity type {'is' if len(acc.unknown_capacity) == 1 else 'are'} priced "
                f"on-demand ({hours:.1f} node-hours)",
                [n for n, _ in acc.unknown_capacity],
            )
        )
    if acc.after_end:
        out.append(
            grouped(
                f"{file}: as-run: {plural(len(acc.after_end), 'node')} "
                f"{'starts' if len(acc.after_end) == 1 else 'start'} at or after the "
                "Scenario's duration and "
                f"{'is' if len(acc.after_end) == 1 else 'are'} left out",
                acc.after_end,
            )
        )
    return out


def _reserved_warnings(undeclared: Sequence[str], file: str) -> list[str]:
    """The warning naming reserved nodes whose pool the Scenario reserves nothing in."""
    if not undeclared:
        return []
    return [
        grouped(
            f"{file}: as-run: {plural(len(undeclared), 'reserved node')} "
            f"{'is' if len(undeclared) == 1 else 'are'} priced as already paid for (as the "
            "simulation prices reserved capacity), but spec.cloud.capacityReservations "
            "declares no reservation in their pool, so the simulated policies pay for that "
            "capacity; declare the reservations for a like-for-like comparison",
            list(undeclared),
        )
    ]


def _peak(nodes: Sequence[Mapping[str, Any]], duration_s: float) -> float:
    """The highest summed ``pricePerHour`` of the nodes running at once (deletions before
    launches at the same instant)."""
    steps: list[tuple[float, float]] = []
    for n in nodes:
        end = n["deletedAtSeconds"] if n["deletedAtSeconds"] is not None else duration_s
        steps += [(n["launchedAtSeconds"], n["pricePerHour"]), (end, -n["pricePerHour"])]
    running = peak = 0.0
    for _, delta in sorted(steps):
        running += delta
        peak = max(peak, running)
    return peak


def _pending_seconds(waits: Sequence[float]) -> dict[str, float]:
    """``pendingSeconds``: nearest-rank p50 and p95 and the maximum of ``waits``."""
    ordered = list(waits)
    return {
        "p50": _r(percentile(ordered, 0.50), 3),
        "p95": _r(percentile(ordered, 0.95), 3),
        "max": _r(max(ordered) if ordered else 0.0, 3),
    }


def _pods(
    pods: Sequence[AsRunPod] | None, duration_s: float, file: str | None
) -> tuple[dict[str, Any], list[float], list[str]]:
    """The ``pods`` section, the waits it is computed from, and its warnings."""
    waits: list[float] = []
    warnings: list[str] = []
    never: list[str] = []
    scheduled = 0
    for p in pods or ():
        # Only pods created within the range count: the simulated policies start from an
        # empty cluster, so a pod created before it has no counterpart in their figures.
        if not 0 <= p.created_s < duration_s:
            continue
        done = p.scheduled_s is not None and p.scheduled_s <= duration_s
        scheduled += done
        if done:
            assert p.scheduled_s is not None
            waits.append(p.scheduled_s - p.created_s)
        else:
            never.append(f"{p.namespace}/{p.pod}")
    if pods is None:
        warnings.append(
            "as-run: pending time could not be derived: spec.asRun.pods is not given (the "
            "pods' creation and scheduling times), so its pod figures are zeros"
        )
    elif never:
        warnings.append(
            grouped(
                f"{file}: as-run: {plural(len(never), 'pod')} created in the range "
                f"{'was' if len(never) == 1 else 'were'} not scheduled by its end (still "
                "pending, or deleted while pending: the history does not tell): counted "
                "pending, left out of the pending percentiles",
                never,
            )
        )
    section = {
        "scheduled": scheduled,
        "pending": len(never),
        "lost": 0,
        "pendingSeconds": _pending_seconds(waits),
        "scaleUpLatencySeconds": {"pods": 0, "p50": 0.0, "p95": 0.0},
        "unschedulableReasons": [],
    }
    return section, waits, warnings


def _windows(
    pods: Sequence[AsRunPod], windows: Sequence[Window], duration_s: float
) -> dict[str, Any]:
    """``windows``: per ``spec.report.windows`` window, the pods created in it and scheduled
    by the end and their pending seconds (pods.csv has no priority: every pod counts)."""
    out: dict[str, Any] = {}
    for w in windows:
        waits = [
            p.scheduled_s - p.created_s
            for p in pods
            if p.scheduled_s is not None
            and p.scheduled_s <= duration_s
            and any(a <= p.created_s < b for a, b in w.intervals)
        ]
        out[w.name] = {
            "pods": len(waits),
            "pendingSeconds": _pending_seconds(waits),
        }
    return out


def _timeline(nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The nodes' starts and ends in time order (ends first at the same instant)."""
    entries: list[tuple[float, int, str, str, str]] = []
    for n in nodes:
        detail = f"{n['instanceType']}/{n['zone']}/{n['capacityType']}"
        entries.append((n["launchedAtSeconds"], 1, tl.NODE_STARTED, n["name"], detail))
        if n["deletedAtSeconds"] is not None:
            entries.append((n["deletedAtSeconds"], 0, tl.NODE_ENDED, n["name"], detail))
    return [
        {"atSeconds": at, "kind": kind, "node": node, "pod": None, "detail": detail}
        for at, _, kind, node, detail in sorted(entries)
    ]


def _policy(acc: _Nodes, record: AsRunRecord) -> dict[str, Any]:
    """The ``policy`` block: the record's files (as the Scenario names them) and counts."""
    return {
        "name": AS_RUN,
        "parameters": {
            "nodes": record.named[0],
            "pods": record.named[1],
            "pricing": "on-demand at the packaged on-demand price; reserved as already paid "
            "for (on-demand / 10^7, as the simulation); spot at spec.cloud.spotPriceHistory "
            "for the pool, else the packaged Spot estimate",
        },
        "stats": {
            "nodesRecorded": len(record.nodes),
            "nodes": len(acc.nodes),
            "nodesUnpriced": len(acc.unpriced),
            "pods": len(record.pods) if record.pods is not None else 0,
        },
    }


def as_run(scenario: Scenario, catalog: Catalog) -> AsRunResult:
    """The as-run block of ``scenario`` (module docstring), priced in its region.

    Raises:
        ValueError: the Scenario has no as-run record (``as-run`` not in ``spec.compare``).
    """
    record = scenario.as_run
    if record is None:
        raise ValueError("the Scenario has no as-run record (spec.asRun)")
    duration = scenario.duration_s
    pricer = _Pricer(
        catalog,
        scenario.region,
        scenario.market.prices,
        {(r.instance_type, r.zone) for r in scenario.capacity_reservations},
    )
    acc = _price_nodes(record, pricer, duration)
    pods, waits, pod_warnings = _pods(record.pods, duration, record.pods_file)
    note = pricer.note()
    savings = (1 - acc.total / acc.on_demand_total) * 100 if acc.on_demand_total > 0 else 0.0
    summary: dict[str, Any] = {
        "apiVersion": SCHEMA_VERSION,
        "kind": "SimulationSummary",
        "scenario": scenario.name,
        "region": scenario.region,
        "seed": scenario.seed,
        "durationSeconds": _r(duration, 3),
        "nodes": acc.nodes,
        "cost": {
            "total": _r(acc.total),
            "onDemandEquivalent": _r(acc.on_demand_total),
            "perHourPeak": _r(_peak(acc.nodes, duration)),
            "savingsPercent": _r(savings, 2),
            "currency": "USD",
            "pricesEstimated": bool(note),
            "priceNote": note,
        },
        "pods": pods,
        "nodeHours": {"spot": _r(acc.spot_hours, 4), "onDemand": _r(acc.on_demand_hours, 4)},
        "provisioning": {"passes": 0, "nodeClaimsCreated": 0, "launchFailures": 0},
        "policy": _policy(acc, record),
        "interruptions": {
            "count": 0,
            "byKind": {},
            "podsRescheduledBeforeReclaim": 0,
            "podsLost": 0,
            "pdbViolations": 0,
            "replacementLeadTimeSeconds": {"p50": None, "min": None},
            "reclaimEvents": [],
        },
        "disruptions": no_disruptions(),
        "timeline": _timeline(acc.nodes),
        "warnings": _node_warnings(acc, record.nodes_file, scenario.region)
        + _reserved_warnings(pricer.undeclared, record.nodes_file)
        + pod_warnings,
    }
    if scenario.windows and record.pods is not None:
        summary["windows"] = _windows(record.pods, scenario.windows, duration)
    spans = tuple((p.created_s, p.scheduled_s) for p in record.pods or () if p.created_s >= 0)
    return AsRunResult(summary, spans, tuple(waits))
