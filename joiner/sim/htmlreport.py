"""``joiner simulate --report DIR``: a self-contained HTML page with plots, plus the PNGs.

Plots, one line per policy: nodes over time by capacity type, cost over time (cumulative
USD), pending pods over time, the CDF of pod pending time, and nodes by Spot pool (instance
type x zone; bars per policy, with the nodes each pool lost to reclaim events). The PNGs are
embedded as base64 data URIs, so the page needs no network and no other file. The page also
holds the side-by-side table, whether prices are estimated and from where, each policy's
Spot reclaim events, and every parameter each policy ran with (its summary's ``policy``).

Series are sampled every ``step_s`` = max(60 s, duration / 1500).
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from joiner.api.extras import require
from joiner.sim.report import pod_waits
from joiner.state.cluster import ClusterState

FloatArray = npt.NDArray[np.float64]

#: Plot file names, in page order.
PLOTS = ("nodes", "cost", "pending", "pending-cdf", "spot-pools")

_COLORS = {"joiner": "#1f77b4", "cost-optimal": "#2ca02c", "cluster-autoscaler": "#d62728"}


@dataclass(frozen=True)
class PolicyData:
    """What the report reads from one policy's run."""

    summary: Mapping[str, Any]
    state: ClusterState


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


def _pending_series(state: ClusterState, ts: FloatArray) -> FloatArray:
    starts = []
    ends = []
    for p in state.pods.values():
        if p.daemon:
            continue
        starts.append(p.created_at_s)
        done = [x for x in (p.bound_at_s, p.deleted_at_s) if x is not None]
        ends.append(min(done) if done else np.inf)
    if not starts:
        return np.zeros_like(ts)
    return np.asarray(
        np.searchsorted(np.sort(np.array(starts)), ts, side="right")
        - np.searchsorted(np.sort(np.array(ends)), ts, side="right"),
        dtype=np.float64,
    )


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, imported on first use: only ``--report``
    draws, and importing matplotlib costs most of a second of start-up.

    Raises:
        MissingExtraError: matplotlib (the ``report`` extra) is not installed.
    """
    require("matplotlib", "report", "The HTML report").use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    _pyplot().close(fig)
    return buf.getvalue()


def render_plots(runs: Mapping[str, PolicyData], duration_s: float) -> dict[str, bytes]:
    """The four plots as PNG bytes, keyed by ``PLOTS`` name."""
    plt = _pyplot()
    ts = _times(duration_s)
    hours = ts / 3600.0
    out: dict[str, bytes] = {}

    fig, ax = plt.subplots(figsize=(10, 4))
    for name, run in runs.items():
        color = _COLORS.get(name)
        for ct, style in (("spot", "-"), ("on-demand", "--")):
            series = _nodes_series(run.summary, ts, ct)
            if series.any():
                ax.step(hours, series, style, where="post", color=color, label=f"{name} {ct}")
    ax.set(xlabel="hours", ylabel="nodes", title="Nodes over time by capacity type")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    out["nodes"] = _png(fig)

    fig, ax = plt.subplots(figsize=(10, 4))
    for name, run in runs.items():
        ax.plot(hours, _cost_series(run.summary, ts), color=_COLORS.get(name), label=name)
    ax.set(xlabel="hours", ylabel="USD (cumulative)", title="Cost over time")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    out["cost"] = _png(fig)

    fig, ax = plt.subplots(figsize=(10, 4))
    for name, run in runs.items():
        ax.step(
            hours, _pending_series(run.state, ts), where="post", color=_COLORS.get(name), label=name
        )
    ax.set(xlabel="hours", ylabel="pending pods", title="Pending pods over time")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    out["pending"] = _png(fig)

    fig, ax = plt.subplots(figsize=(10, 4))
    for name, run in runs.items():
        waits = np.sort(np.array(pod_waits(run.state, duration_s)))
        if waits.size:
            ax.step(
                waits,
                np.arange(1, waits.size + 1) / waits.size,
                where="post",
                color=_COLORS.get(name),
                label=name,
            )
    ax.set(
        xlabel="pod pending seconds (creation to binding)",
        ylabel="fraction of pods",
        title="CDF of pod pending time",
        xscale="symlog",
    )
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    out["pending-cdf"] = _png(fig)
    out["spot-pools"] = _spot_pools_plot(runs)
    return out


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
    pools = sorted({p for per in launched.values() for p in per})
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, max(2.5, 0.3 * len(pools) * max(1, len(runs)) + 1)))
    height = 0.8 / max(1, len(runs))
    y = np.arange(len(pools), dtype=np.float64)
    for i, name in enumerate(runs):
        color = _COLORS.get(name)
        counts = [launched.get(name, {}).get(p, 0) for p in pools]
        lost = [reclaimed.get(name, {}).get(p, 0) for p in pools]
        ax.barh(y + i * height, counts, height, color=color, label=f"{name} launched")
        if any(lost):
            ax.barh(
                y + i * height,
                lost,
                height,
                color="none",
                edgecolor="black",
                hatch="//",
                label=f"{name} reclaimed",
            )
    ax.set_yticks(y + height * (len(runs) - 1) / 2, pools if pools else [])
    ax.set(xlabel="Spot nodes", title="Nodes by Spot pool (instance type / zone)")
    if pools:
        ax.legend(loc="lower right")
    else:
        ax.text(0.5, 0.5, "no Spot nodes", ha="center", va="center", transform=ax.transAxes)
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    return _png(fig)


def comparison_rows(summaries: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """The side-by-side table: (metric, one cell per policy)."""

    def row(label: str, fn: Any) -> tuple[str, list[str]]:
        return label, [fn(s) for s in summaries.values()]

    return [
        row("total cost (USD)", lambda s: f"{s['cost']['total']:.2f}"),
        row(
            "cost vs all-on-demand",
            lambda s: (
                f"{100 - s['cost']['savingsPercent']:.1f}% "
                f"(of ${s['cost']['onDemandEquivalent']:.2f})"
            ),
        ),
        row("spot node-hours", lambda s: f"{s['nodeHours']['spot']:.1f}"),
        row("on-demand node-hours", lambda s: f"{s['nodeHours']['onDemand']:.1f}"),
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


_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.querySelectorAll('img.plot'));
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute('data-plots-rendered', String(ok));
  document.body.setAttribute('data-plots-expected', String(imgs.length));
});
"""


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
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = render_plots(runs, duration_s)
    for name, data in plots.items():
        (out_dir / f"{name}.png").write_bytes(data)
    summaries = {name: r.summary for name, r in runs.items()}
    head = "".join(f"<th>{html.escape(n)}</th>" for n in summaries)
    body = "".join(
        "<tr><td>"
        + html.escape(label)
        + "</td>"
        + "".join(f"<td>{html.escape(c)}</td>" for c in cells)
        + "</tr>"
        for label, cells in comparison_rows(summaries)
    )
    images = "".join(
        f'<figure><img class="plot" alt="{name}" src="data:image/png;base64,'
        f'{base64.b64encode(data).decode("ascii")}"></figure>'
        for name, data in plots.items()
    )
    config = "".join(
        f"<p>{html.escape(line)}</p>"
        for s in summaries.values()
        if (line := ca_configuration(s)) is not None
    )
    events = "".join(
        f"<h3>{html.escape(n)}</h3>"
        + (
            "<table><tr><th>at (h)</th><th>pool</th><th>nodes reclaimed</th></tr>"
            + "".join(
                f"<tr><td>{e['atSeconds'] / 3600:.2f}</td>"
                f"<td>{html.escape(e['instanceType'])}/{html.escape(e['zone'])}</td>"
                f"<td>{e['nodes']}</td></tr>"
                for e in s["interruptions"]["reclaimEvents"]
            )
            + "</table>"
            if s["interruptions"]["reclaimEvents"]
            else "<p>none</p>"
        )
        for n, s in summaries.items()
    )
    notes = sorted(
        {s["cost"]["priceNote"] for s in summaries.values() if s["cost"]["pricesEstimated"]}
    )
    estimated = "".join(
        f'<p class="estimated"><strong>Prices are estimated:</strong> {html.escape(x)}</p>'
        for x in notes
    )
    params = "".join(
        f"<h3>{html.escape(n)}</h3><pre>"
        + html.escape(json.dumps(s["policy"], indent=2))
        + "</pre>"
        for n, s in summaries.items()
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Joiner report: {html.escape(scenario)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1100px; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: 4px 10px; }}
td:not(:first-child) {{ text-align: right; }} img {{ max-width: 100%; }}
pre {{ background: #f6f6f6; padding: 1em; overflow-x: auto; }}
</style></head>
<body>
<h1>{html.escape(scenario)}</h1>
<p>{duration_s / 3600:g} virtual hours, seed {summaries[next(iter(summaries))]["seed"]}.</p>
{estimated}<table><tr><th></th>{head}</tr>{body}</table>
{config}
<h2>Plots</h2>{images}
<h2>Spot reclaim events</h2>{events}
<h2>Parameters</h2>{params}
<script>{_SCRIPT}</script>
</body></html>
"""
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
