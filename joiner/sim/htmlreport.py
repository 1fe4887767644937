"""``joiner simulate --report DIR``: a self-contained HTML page with plots, plus the PNGs.

Plots, one line per policy: nodes over time by capacity type, cost over time (cumulative
USD), pending pods over time, the CDF of pod pending time, and nodes by Spot pool (instance
type x zone; bars per policy, with the nodes each pool lost to reclaim events). The PNGs are
embedded as base64 data URIs, so the page needs no network and no other file. The page also
holds the side-by-side table, whether prices are estimated and from where, each policy's
Spot reclaim events, and every parameter each policy ran with (its summary's ``policy``).
The as-run record (``joiner.sim.asrun``) has no state: its pending plots come from its pods'
times, and the table marks what it does not record ``n/a``; with it, the table gives each
policy's cost per 720-hour month and its difference from as-run's.

Series are sampled every ``step_s`` = max(60 s, duration / 1500).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from joiner.api.grouping import plural
from joiner.api.inputfiles import check_output
from joiner.sim.pages import figure_png, plot_label, png_data_uri, pyplot, render_page
from joiner.sim.report import HOURS_PER_MONTH, cost_per_month, pod_waits
from joiner.state.cluster import ClusterState

FloatArray = npt.NDArray[np.float64]

#: Plot file names, in page order.
PLOTS = ("nodes", "cost", "pending", "pending-cdf", "spot-pools")

_COLORS = {
    "as-run": "#3f3f3f",
    "joiner": "#1f77b4",
    "cost-optimal": "#2ca02c",
    "cluster-autoscaler": "#d62728",
}

#: Line style per capacity type in the nodes plot ("": unknown, as the as-run record may
#: have it).
_CAPACITY_STYLES = (("spot", "-"), ("on-demand", "--"), ("reserved", ":"), ("", "-."))

#: Hours in the month the table's dollars-per-month difference uses (AWS's 720-hour month).


@dataclass(frozen=True)
class PolicyData:
    """What the report reads from one policy's run: its summary and final state; for a
    record without a state (the as-run row), its pods' (created, scheduled or None) seconds
    and the pending seconds its summary's percentiles are computed from."""

    summary: Mapping[str, Any]
    state: ClusterState | None
    pod_spans: tuple[tuple[float, float | None], ...] = ()
    waits: tuple[float, ...] = ()

    @property
    def has_pods(self) -> bool:
        """Whether pending pods can be plotted: a run's state, or a record with pods."""
        return self.state is not None or bool(self.pod_spans)

    def pod_waits(self, duration_s: float) -> list[float]:
        """Seconds each pod waited (``report.pod_waits`` of the state, else ``waits``)."""
        return pod_waits(self.state, duration_s) if self.state is not None else list(self.waits)

    def pending_spans(self) -> list[tuple[float, float]]:
        """Each workload pod's (created, no longer pending) seconds; inf while pending."""
        if self.state is None:
            return [(c, s if s is not None else np.inf) for c, s in self.pod_spans]
        out = []
        for p in self.state.pods.values():
            if p.daemon:
                continue
            done = [x for x in (p.bound_at_s, p.deleted_at_s) if x is not None]
            out.append((p.created_at_s, min(done) if done else np.inf))
        return out


def _times(duration_s: float) -> FloatArray:
    step = max(60.0, duration_s / 1500.0)
    return np.arange(0.0, duration_s + step / 2, step)


def _nodes_series(summary: Mapping[str, Any], ts: FloatArray, ct: str) -> FloatArray:
    nodes = [n for n in summary["nodes"] if n["capacityType"] == ct]
    if not nodes:
        return np.zeros_like(ts)
    start = np.array([n["launchedAtSeconds"] for n in nodes])
    end = np.array(
        [n["deletedAtSeconds"] if n["deletedAtSeconds"] is not None else np.inf for n in nodes]
    )
    return np.asarray(
        np.searchsorted(np.sort(start), ts, side="right")
        - np.searchsorted(np.sort(end), ts, side="right"),
        dtype=np.float64,
    )


def _cost_series(summary: Mapping[str, Any], ts: FloatArray) -> FloatArray:
    duration = float(summary["durationSeconds"])
    out = np.zeros_like(ts)
    for n in summary["nodes"]:
        end = n["deletedAtSeconds"] if n["deletedAtSeconds"] is not None else duration
        span = np.clip(ts - n["launchedAtSeconds"], 0.0, max(0.0, end - n["launchedAtSeconds"]))
        out += span / 3600.0 * n["pricePerHour"]
    return out


def _pending_series(run: PolicyData, ts: FloatArray) -> FloatArray:
    spans = run.pending_spans()
    if not spans:
        return np.zeros_like(ts)
    starts = np.sort(np.array([a for a, _ in spans]))
    ends = np.sort(np.array([b for _, b in spans]))
    return np.asarray(
        np.searchsorted(starts, ts, side="right") - np.searchsorted(ends, ts, side="right"),
        dtype=np.float64,
    )


def _legend(ax: Any, loc: str, empty_text: str) -> None:
    """Draw ``ax``'s legend at ``loc``, or, when nothing on it has a label (no policy drew
    a line: a Scenario without pods or nodes), write ``empty_text`` in its middle instead:
    matplotlib warns "No artists with labels found" for an empty legend."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc=loc)
    else:
        ax.text(0.5, 0.5, empty_text, ha="center", va="center", transform=ax.transAxes)


def render_plots(runs: Mapping[str, PolicyData], duration_s: float) -> dict[str, bytes]:
    """The four plots as PNG bytes, keyed by ``PLOTS`` name."""
    plt = pyplot()
    ts = _times(duration_s)
    hours = ts / 3600.0
    out: dict[str, bytes] = {}

    fig, ax = plt.subplots(figsize=(10, 4))
    for name, run in runs.items():
        color = _COLORS.get(name)
        for ct, style in _CAPACITY_STYLES:
            series = _nodes_series(run.summary, ts, ct)
            if series.any():
                label = f"{name} {ct or 'unknown capacity type'}"
                ax.step(hours, series, style, where="post", color=color, label=plot_label(label))
    ax.set(xlabel="hours", ylabel="nodes", title="Nodes over time by capacity type")
    _legend(ax, "upper left", "no nodes")
    ax.grid(alpha=0.3)
    out["nodes"] = figure_png(fig)

    fig, ax = plt.subplots(figsize=(10, 4))
    for name, run in runs.items():
        ax.plot(
            hours, _cost_series(run.summary, ts), color=_COLORS.get(name), label=plot_label(name)
        )
    ax.set(xlabel="hours", ylabel="USD (cumulative)", title="Cost over time")
    _legend(ax, "upper left", "no policies")
    ax.grid(alpha=0.3)
    out["cost"] = figure_png(fig)

    fig, ax = plt.subplots(figsize=(10, 4))
    for name, run in runs.items():
        if not run.has_pods:
            continue
        ax.step(
            hours,
            _pending_series(run, ts),
            where="post",
            color=_COLORS.get(name),
            label=plot_label(name),
        )
    ax.set(xlabel="hours", ylabel="pending pods", title="Pending pods over time")
    _legend(ax, "upper left", "no pods")
    ax.grid(alpha=0.3)
    out["pending"] = figure_png(fig)

    fig, ax = plt.subplots(figsize=(10, 4))
    for name, run in runs.items():
        waits = np.sort(np.array(run.pod_waits(duration_s)))
        if waits.size:
            ax.step(
                waits,
                np.arange(1, waits.size + 1) / waits.size,
                where="post",
                color=_COLORS.get(name),
                label=plot_label(name),
            )
    ax.set(
        xlabel="pod pending seconds (creation to binding)",
        ylabel="fraction of pods",
        title="CDF of pod pending time",
        xscale="symlog",
    )
    _legend(ax, "lower right", "no pod was bound")
    ax.grid(alpha=0.3)
    out["pending-cdf"] = figure_png(fig)
    out["spot-pools"] = _spot_pools_plot(runs)
    return out


#: The most Spot pools the pools plot draws a bar for; the rest are summed into one bar
#: (an as-run record of 1,200 pools drew a PNG 108,000 pixels high).
MAX_POOL_BARS = 40
#: The name of the bar the pools past ``MAX_POOL_BARS`` are summed into.
OTHER_POOLS = "other pools"


def _shown_pools(
    launched: dict[str, dict[str, int]], *, launched_or_lost: dict[str, dict[str, int]]
) -> list[str]:
    """The pools that get a bar, sorted: all when at most ``MAX_POOL_BARS``, else the
    ``MAX_POOL_BARS - 1`` with the most nodes launched (all policies together; ties by
    name), then ``OTHER_POOLS``; each policy's counts past them (launched and
    ``launched_or_lost``: reclaimed) are moved into the ``OTHER_POOLS`` bar in place."""
    totals: dict[str, int] = {}
    for per in launched.values():
        for pool, n in per.items():
            totals[pool] = totals.get(pool, 0) + n
    if len(totals) <= MAX_POOL_BARS:
        return sorted(totals)
    ranked = sorted(totals, key=lambda pool: (-totals[pool], pool))
    kept = set(ranked[: MAX_POOL_BARS - 1])
    for counts in (launched, launched_or_lost):
        for name, per in counts.items():
            rest = sum(n for pool, n in per.items() if pool not in kept)
            counts[name] = {pool: n for pool, n in per.items() if pool in kept}
            if rest:
                counts[name][OTHER_POOLS] = rest
    return [*sorted(kept), OTHER_POOLS]


def _spot_pools_plot(runs: Mapping[str, PolicyData]) -> bytes:
    """Horizontal bars: Spot nodes launched per pool and policy; hatched, those reclaimed."""
    launched: dict[str, dict[str, int]] = {}
    reclaimed: dict[str, dict[str, int]] = {}
    for name, run in runs.items():
        for n in run.summary["nodes"]:
            if n["capacityType"] == "spot":
                pool = f"{n['instanceType']}/{n['zone']}"
                launched.setdefault(name, {})[pool] = launched.get(name, {}).get(pool, 0) + 1
        for e in run.summary["interruptions"]["reclaimEvents"]:
            pool = f"{e['instanceType']}/{e['zone']}"
            reclaimed.setdefault(name, {})[pool] = reclaimed.get(name, {}).get(pool, 0) + e["nodes"]
    pools = _shown_pools(launched, launched_or_lost=reclaimed)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, max(2.5, 0.3 * len(pools) * max(1, len(runs)) + 1)))
    height = 0.8 / max(1, len(runs))
    y = np.arange(len(pools), dtype=np.float64)
    for i, name in enumerate(runs):
        color = _COLORS.get(name)
        counts = [launched.get(name, {}).get(p, 0) for p in pools]
        lost = [reclaimed.get(name, {}).get(p, 0) for p in pools]
        ax.barh(y + i * height, counts, height, color=color, label=plot_label(f"{name} launched"))
        if any(lost):
            ax.barh(
                y + i * height,
                lost,
                height,
                color="none",
                edgecolor="black",
                hatch="//",
                label=plot_label(f"{name} reclaimed"),
            )
    ax.set_yticks(y + height * (len(runs) - 1) / 2, [plot_label(p) for p in pools])
    ax.set(xlabel="Spot nodes", title="Nodes by Spot pool (instance type / zone)")
    if pools:
        ax.legend(loc="lower right")
    else:
        ax.text(0.5, 0.5, "no Spot nodes", ha="center", va="center", transform=ax.transAxes)
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    return figure_png(fig)


#: Rows the as-run record does not derive (it re-decides nothing and sees no interruption,
#: disruption or scale-up): shown as n/a in its column.
_NOT_RECORDED = frozenset(
    {
        "pods lost",
        "interruptions",
        "disruption commands",
        "Spot reclaim events",
        "largest simultaneous reclaim (nodes)",
        "scale-up latency p50 (s)",
        "scale-up latency p95 (s)",
    }
)
_PENDING_ROWS = frozenset(
    {
        "pods pending at the end",
        "pod pending p50 (s)",
        "pod pending p95 (s)",
        "pod pending max (s)",
    }
)
#: Marks a cost cell that leaves some nodes out (``comparison_notes`` says how many).
PARTIAL = " (partial)"


def unpriced_nodes(s: Mapping[str, Any]) -> tuple[int, float]:
    """How many of a run's nodes are left out of its cost, and their node-hours: the as-run
    record's nodes of an unknown or unpriced instance type (``joiner.sim.asrun``: no
    on-demand price, ``onDemandPricePerHour`` 0); (0, 0.0) for a simulated run."""
    if s.get("policy", {}).get("name") != "as-run":
        return 0, 0.0
    duration = float(s["durationSeconds"])
    left_out = [n for n in s["nodes"] if not n["onDemandPricePerHour"]]
    seconds = sum(
        (duration if n["deletedAtSeconds"] is None else n["deletedAtSeconds"])
        - n["launchedAtSeconds"]
        for n in left_out
    )
    return len(left_out), seconds / 3600.0


def comparison_notes(summaries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Notes under the comparison table: the runs whose cost leaves nodes out (their cost
    cells marked ``PARTIAL``), with how many node-hours are unpriced."""
    notes = []
    for name, s in summaries.items():
        count, hours = unpriced_nodes(s)
        if count:
            notes.append(
                f"{name}: {plural(count, 'node')} ({hours:.1f} node-hours) of an unknown or "
                "unpriced instance type left out of the cost, so its cost is a lower bound "
                "(see the warnings)"
            )
    return notes


def _cost_cell(s: Mapping[str, Any], value: str) -> str:
    return value + PARTIAL if unpriced_nodes(s)[0] else value


def _derived(label: str, s: Mapping[str, Any]) -> bool:
    """Whether row ``label`` has a figure in summary ``s``: every row of a simulated run;
    of the as-run record, cost and node-hours, and pending time when it had pods."""
    policy = s.get("policy", {})
    if policy.get("name") != "as-run":
        return True
    if label in _PENDING_ROWS:
        return policy.get("parameters", {}).get("pods") is not None
    return label not in _NOT_RECORDED


def comparison_rows(summaries: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """The side-by-side table: (metric, one cell per policy). With ``as-run`` compared, the
    cost per month (``HOURS_PER_MONTH`` hours) and each policy's difference from as-run's;
    a figure the as-run record does not have is ``n/a``."""

    def row(label: str, fn: Any) -> tuple[str, list[str]]:
        return label, [fn(s) if _derived(label, s) else "n/a" for s in summaries.values()]

    month = f"{HOURS_PER_MONTH:g} h"
    monthly: list[tuple[str, list[str]]] = []
    as_run = summaries.get("as-run")
    if as_run is not None:
        base = cost_per_month(as_run)
        monthly = [
            row(
                f"cost per month (USD, {month})",
                lambda s: _cost_cell(s, f"{cost_per_month(s):,.2f}"),
            ),
            row(
                f"vs as-run per month (USD, {month})",
                lambda s: "-" if s is as_run else f"{cost_per_month(s) - base:+,.2f}",
            ),
        ]
    return [
        row("total cost (USD)", lambda s: _cost_cell(s, f"{s['cost']['total']:.2f}")),
        *monthly,
        row(
            "cost vs all-on-demand",
            lambda s: (
                f"{100 - s['cost']['savingsPercent']:.1f}% "
                f"(of ${s['cost']['onDemandEquivalent']:.2f})"
            ),
        ),
        row("spot node-hours", lambda s: f"{s['nodeHours']['spot']:.1f}"),
        row("on-demand node-hours", lambda s: f"{s['nodeHours']['onDemand']:.1f}"),
        row("pods pending at the end", lambda s: str(s["pods"]["pending"])),
        row("pod pending p50 (s)", lambda s: f"{s['pods']['pendingSeconds']['p50']:.1f}"),
        row("pod pending p95 (s)", lambda s: f"{s['pods']['pendingSeconds']['p95']:.1f}"),
        row("pod pending max (s)", lambda s: f"{s['pods']['pendingSeconds']['max']:.1f}"),
        row("pods lost", lambda s: str(s["pods"]["lost"])),
        row("interruptions", lambda s: str(s["interruptions"]["count"])),
        row("disruption commands", lambda s: str(len(s["disruptions"]["commands"]))),
        row("Spot reclaim events", lambda s: str(len(s["interruptions"]["reclaimEvents"]))),
        row(
            "largest simultaneous reclaim (nodes)",
            lambda s: str(
                max((e["nodes"] for e in s["interruptions"]["reclaimEvents"]), default=0)
            ),
        ),
        row(
            "scale-up latency p50 (s)",
            lambda s: f"{s['pods']['scaleUpLatencySeconds']['p50']:.1f}",
        ),
        row(
            "scale-up latency p95 (s)",
            lambda s: f"{s['pods']['scaleUpLatencySeconds']['p95']:.1f}",
        ),
    ]


def ca_configuration(summary: Mapping[str, Any]) -> str | None:
    """One sentence stating the Cluster Autoscaler configuration a run used (its node
    groups, expander, balancing and scale-down rules), or None for a Joiner run."""
    policy = summary.get("policy", {})
    if policy.get("name") != "cluster-autoscaler":
        return None
    p = policy["parameters"]
    groups = p.get("nodeGroups", [])
    spot = sum(1 for g in groups if g["onDemandPercentageAboveBaseCapacity"] < 100)
    types = max((len(g["instanceTypes"]) for g in groups), default=0)
    how = (
        "declared"
        if p.get("nodeGroupsDeclared")
        else {
            "shape": "a Spot and an on-demand MixedInstancesPolicy group per NodePool and "
            "instance shape",
            "instance-type": "one group per instance type and capacity type",
        }.get(p.get("derivedGroups", ""), "derived")
    )
    prios = "; ".join(
        f"{k}: {', '.join(v)}"
        for k, v in sorted(p.get("priorities", {}).items(), key=lambda kv: -int(kv[0]))
    )
    expander = p["expander"] + (f" ({prios})" if "priority" in p["expander"] and prios else "")
    blockers = [
        name
        for name, key in (
            ("system pods", "skipNodesWithSystemPods"),
            ("local storage", "skipNodesWithLocalStorage"),
        )
        if p.get(key)
    ]
    return (
        f"Cluster Autoscaler: {len(groups)} node groups ({how}; {spot} with Spot, up to "
        f"{types} instance types each), expander {expander}, balance-similar-node-groups "
        f"{'on' if p.get('balanceSimilarNodeGroups') else 'off'}, scale-down under "
        f"{p['scaleDownUtilizationThreshold']:g} utilisation for "
        f"{p['scaleDownUnneededTimeSeconds']:g} s"
        + (f", skipping nodes with {' or '.join(blockers)}" if blockers else "")
        + _limits_text(p)
        + "."
    )


def _limits_text(p: Mapping[str, Any]) -> str:
    """The cluster-wide limits when any is set below CA's defaults (``, at most ...``)."""
    parts = []
    if p.get("maxNodesTotal"):
        parts.append(f"{p['maxNodesTotal']} nodes")
    for key, unit, default in (
        ("coresTotal", "cores", "0:320000"),
        ("memoryTotal", "GiB", "0:6400000"),
    ):
        value = p.get(key, default)
        if value != default:
            low, _, high = str(value).partition(":")
            parts.append(f"{high} {unit}" + (f" (at least {low})" if low not in ("", "0") else ""))
    return f", cluster limited to {', '.join(parts)}" if parts else ""


def write_report(
    out_dir: Path, scenario: str, runs: Mapping[str, PolicyData], duration_s: float
) -> Path:
    """Write ``index.html`` and ``<plot>.png`` into ``out_dir``; returns the page's path.

    Raises:
        OSError: the directory cannot be created or written.
        InputError: a file it would write is an input of the command (``api.inputfiles``).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = render_plots(runs, duration_s)
    path = out_dir / "index.html"
    for target in [path, *(out_dir / f"{name}.png" for name in plots)]:
        check_output(target, field="--report")
    for name, data in plots.items():
        (out_dir / f"{name}.png").write_bytes(data)
    summaries = {name: r.summary for name, r in runs.items()}
    page = render_page(
        "simulate.html.j2",
        scenario=scenario,
        hours=f"{duration_s / 3600:g}",
        seed=summaries[next(iter(summaries))]["seed"],
        price_notes=sorted(
            {s["cost"]["priceNote"] for s in summaries.values() if s["cost"]["pricesEstimated"]}
        ),
        policies=list(summaries),
        rows=comparison_rows(summaries),
        notes=comparison_notes(summaries),
        ca_lines=[line for s in summaries.values() if (line := ca_configuration(s)) is not None],
        plots=[(name, png_data_uri(data)) for name, data in plots.items()],
        reclaims=[(n, _reclaim_rows(s)) for n, s in summaries.items() if n != "as-run"],
        as_run="as-run" in summaries,
        month_hours=f"{HOURS_PER_MONTH:g}",
        parameters=[(n, json.dumps(s["policy"], indent=2)) for n, s in summaries.items()],
    )
    path.write_text(page, encoding="utf-8")
    return path


def _reclaim_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """One run's Spot reclaim events as table cells: (hours, ``type/zone`` pool, nodes)."""
    return [
        (f"{e['atSeconds'] / 3600:.2f}", f"{e['instanceType']}/{e['zone']}", e["nodes"])
        for e in summary["interruptions"]["reclaimEvents"]
    ]
