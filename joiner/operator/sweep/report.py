"""``joiner sweep report``: statistics per variant, the Pareto plot and the recommendation.

1. Read the results rows (the last row of each cell counts; failed cells are counted apart,
   and so is a row whose summary does not match its digest or whose metrics are not finite
   numbers: ``results.usable``).
2. Group them by (variant, policy, multiplier) and compute, across seeds, the median and the
   5th and 95th percentiles (numpy's linear interpolation) of cost, p95 pending, pods lost
   and reclaims.
3. Mark the Pareto front of median cost against median p95 pending (no other group is at
   least as good on both and better on one).
4. With an objective, a *choice* is a (variant, policy) pair and its cells are every seed
   and multiplier it ran: it is feasible when every constraint holds in every one of its
   cells and none failed; the recommendation is the feasible choice with the best median
   of the objective's metric (ties: the name). Its NodePools are printed as v1 YAML.

Objective syntax: ``minimise METRIC [subject to CONSTRAINT {and|, CONSTRAINT}]`` (also
``min``/``minimize``/``max``/``maximise``), a constraint being ``METRIC OP NUMBER [s]`` with
OP one of ``<= < >= > ==``. Metrics: ``cost`` (USD), ``p95 pending`` (s,
``pendingP95Seconds``), ``pods lost`` (``podsLost``), ``reclaims``.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from joiner.api.errors import InputError
from joiner.api.grouping import plural
from joiner.operator.sweep.results import failure, usable
from joiner.sim.pages import figure_png, plot_label, png_data_uri, pyplot, render_page

#: Metric keys of a row's ``metrics``, in report order, with their labels.
METRICS = {
    "cost": "cost (USD)",
    "pendingP95Seconds": "p95 pending (s)",
    "podsLost": "pods lost",
    "reclaims": "reclaims",
}
_ALIASES = {
    "cost": "cost",
    "costusd": "cost",
    "p95pending": "pendingP95Seconds",
    "pendingp95": "pendingP95Seconds",
    "pendingp95seconds": "pendingP95Seconds",
    "p95pendingseconds": "pendingP95Seconds",
    "podslost": "podsLost",
    "lost": "podsLost",
    "lostpods": "podsLost",
    "reclaims": "reclaims",
    "spotreclaims": "reclaims",
}
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
    "==": operator.eq,
    "=": operator.eq,
}


@dataclass(frozen=True, slots=True)
class Stat:
    """Median and 5th/95th percentiles of one metric across a group's seeds."""

    median: float
    p5: float
    p95: float


@dataclass(frozen=True, slots=True)
class Group:
    """One (variant, policy, multiplier) of the sweep and its statistics."""

    variant: str
    policy: str
    multiplier: float
    seeds: int
    failed: int
    stats: dict[str, Stat]
    pareto: bool

    @property
    def label(self) -> str:
        return f"{self.variant} / {self.policy} / x{self.multiplier:g}"


@dataclass(frozen=True, slots=True)
class Failure:
    """Failed cells that share one reason (``results.failure``), in cell-id order."""

    reason: str
    cells: tuple[str, ...]


def failures(rows: Sequence[dict[str, Any]]) -> list[Failure]:
    """The failed cells (the last row of each) grouped by reason: the largest group first,
    then by reason."""
    by_reason: dict[str, list[str]] = {}
    for r in latest_rows(rows):
        why = failure(r)
        if why is not None:
            by_reason.setdefault(why, []).append(r["cellId"])
    found = [Failure(why, tuple(cells)) for why, cells in by_reason.items()]
    return sorted(found, key=lambda f: (-len(f.cells), f.reason))


def failure_lines(found: Sequence[Failure], *, shown: int | None = None) -> list[str]:
    """One line per reason: ``N failed cells (reason): id, id, ...``, naming the first
    ``shown`` cells and how many more (all when None)."""
    lines = []
    for f in found:
        head = f"{plural(len(f.cells), 'failed cell')} ({f.reason})"
        if shown is not None and len(f.cells) > shown:
            more = len(f.cells) - shown
            lines.append(f"{head}: {', '.join(f.cells[:shown])} and {more} more")
        else:
            lines.append(f"{head}: {', '.join(f.cells)}")
    return lines


@dataclass(frozen=True, slots=True)
class Constraint:
    metric: str
    op: str
    value: float

    def holds(self, x: float) -> bool:
        return _OPS[self.op](x, self.value)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.value:g}"


@dataclass(frozen=True, slots=True)
class Objective:
    """What to optimise (``minimise`` or not) and the constraints every cell must meet."""

    metric: str
    minimise: bool
    constraints: tuple[Constraint, ...]


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The outcome of an objective: the chosen (variant, policy) or ``None``, its median
    metric, its NodePools as YAML, and why each other choice was rejected."""

    variant: str | None
    policy: str | None
    value: float | None
    node_pools_yaml: str | None
    rejected: dict[str, str]


def _metric(name: str, text: str) -> str:
    key = re.sub(r"[\s_-]", "", name).lower()
    if key not in _ALIASES:
        raise InputError(
            f"unknown metric {name.strip()!r} in {text!r}; known: cost, p95 pending, pods lost, "
            "reclaims",
            field="--objective",
        )
    return _ALIASES[key]


def parse_objective(text: str) -> Objective:
    """Parse an objective (syntax in the module doc).

    Raises:
        InputError: naming ``--objective`` and what could not be read.
    """
    m = re.fullmatch(
        r"\s*(min|minimi[sz]e|max|maximi[sz]e)\s+(.+?)(?:\s+(?:subject\s+to|s\.t\.|where)\s+(.+))?\s*",
        text,
        flags=re.IGNORECASE,
    )
    if m is None:
        raise InputError(
            f"cannot read {text!r}; write e.g. 'minimise cost subject to p95 pending <= 60 s "
            "and pods lost == 0'",
            field="--objective",
        )
    constraints = []
    for part in re.split(r"\s*(?:,|\band\b)\s*", m.group(3) or "", flags=re.IGNORECASE):
        if not part.strip():
            continue
        c = re.fullmatch(
            r"\s*(.+?)\s*(<=|>=|==|=|<|>)\s*([-+]?\d+(?:\.\d+)?)\s*(?:s|sec|seconds|usd)?\s*",
            part,
            flags=re.IGNORECASE,
        )
        if c is None:
            raise InputError(
                f"cannot read the constraint {part!r}; write METRIC OP NUMBER, e.g. "
                "'p95 pending <= 60'",
                field="--objective",
            )
        constraints.append(Constraint(_metric(c.group(1), text), c.group(2), float(c.group(3))))
    return Objective(
        metric=_metric(m.group(2), text),
        minimise=m.group(1).lower().startswith("min"),
        constraints=tuple(constraints),
    )


def latest_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last row of each cell, sorted by cell id."""
    by_id = {r["cellId"]: r for r in rows}
    return [by_id[k] for k in sorted(by_id)]


def _stat(values: list[float]) -> Stat:
    if not values:
        return Stat(float("nan"), float("nan"), float("nan"))
    a = np.asarray(values, dtype=float)
    p5, med, p95 = np.percentile(a, [5, 50, 95])
    return Stat(float(med), float(p5), float(p95))


def groups(rows: Sequence[dict[str, Any]]) -> list[Group]:
    """Statistics per (variant, policy, multiplier), in first-seen order, Pareto marked."""
    keyed: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for r in latest_rows(rows):
        keyed.setdefault((r["variant"], r["policy"], r["interruptionRateMultiplier"]), []).append(r)
    order: dict[tuple[str, str, float], int] = {}
    for r in rows:
        order.setdefault((r["variant"], r["policy"], r["interruptionRateMultiplier"]), len(order))
    out = []
    for key in sorted(keyed, key=lambda k: order[k]):
        good = [r for r in keyed[key] if usable(r)]
        stats = {m: _stat([float(r["metrics"][m]) for r in good]) for m in METRICS}
        out.append(Group(*key, len(good), len(keyed[key]) - len(good), stats, False))
    front = _pareto([(g.stats["cost"].median, g.stats["pendingP95Seconds"].median) for g in out])
    return [
        Group(g.variant, g.policy, g.multiplier, g.seeds, g.failed, g.stats, i in front)
        for i, g in enumerate(out)
    ]


def _pareto(points: list[tuple[float, float]]) -> set[int]:
    """Indices of the points no other point dominates (both coordinates minimised: at least
    as good on both and better on one); NaN points are never on the front. O(n log n): in
    order of x, a point is on the front when it has the least y of its x and that y is below
    every y at a smaller x (equal points do not dominate each other)."""
    valid = sorted(
        (x, y, i) for i, (x, y) in enumerate(points) if not (math.isnan(x) or math.isnan(y))
    )
    front: set[int] = set()
    best_y = math.inf
    for _, same_x in itertools.groupby(valid, key=lambda t: t[0]):
        group = list(same_x)
        least = group[0][1]
        if least < best_y:
            front.update(i for _, y, i in group if y == least)
            best_y = least
    return front


def recommend(rows: Sequence[dict[str, Any]], objective: Objective) -> Recommendation:
    """The best feasible (variant, policy) under ``objective`` (see the module doc)."""
    choices: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in latest_rows(rows):
        choices.setdefault((r["variant"], r["policy"]), []).append(r)
    rejected: dict[str, str] = {}
    feasible: list[tuple[float, str, str, str | None]] = []
    for (variant, policy), cells in sorted(choices.items()):
        name = f"{variant} / {policy}"
        failed = [(r["cellId"], why) for r in cells if (why := failure(r)) is not None]
        if failed:
            first, why = failed[0]
            rejected[name] = f"{plural(len(failed), 'cell')} failed (e.g. {first}: {why})"
            continue
        broken = next(
            (
                (c, r)
                for c in objective.constraints
                for r in cells
                if not c.holds(float(r["metrics"][c.metric]))
            ),
            None,
        )
        if broken is not None:
            c, r = broken
            rejected[name] = f"{c} fails in {r['cellId']} ({r['metrics'][c.metric]:g})"
            continue
        value = float(np.median([float(r["metrics"][objective.metric]) for r in cells]))
        feasible.append(
            (
                value if objective.minimise else -value,
                variant,
                policy,
                cells[0].get("nodePoolsYaml"),
            )
        )
    if not feasible:
        return Recommendation(None, None, None, None, rejected)
    value, variant, policy, pools = min(feasible)
    return Recommendation(variant, policy, value if objective.minimise else -value, pools, rejected)


#: The most groups the Pareto plot names: every group when there are no more, else the
#: first of the front by cost (each label is text matplotlib lays out one by one: 2,000
#: groups took 40 CPU seconds, 20,000 ran for many minutes). The table names every group.
MAX_PLOT_LABELS = 30


def _errorbars(ax: Any, part: Sequence[Group], fmt: str, color: str) -> None:
    """One errorbar call for ``part`` (median, 5th-95th percentile bars on both axes)."""
    if not part:
        return
    c = np.array([[g.stats["cost"].median, g.stats["cost"].p5, g.stats["cost"].p95] for g in part])
    p = np.array(
        [
            [
                g.stats["pendingP95Seconds"].median,
                g.stats["pendingP95Seconds"].p5,
                g.stats["pendingP95Seconds"].p95,
            ]
            for g in part
        ]
    )
    ax.errorbar(
        c[:, 0],
        p[:, 0],
        xerr=[c[:, 0] - c[:, 1], c[:, 2] - c[:, 0]],
        yerr=[p[:, 0] - p[:, 1], p[:, 2] - p[:, 0]],
        fmt=fmt,
        color=color,
        capsize=3,
        alpha=0.9,
    )


def plot_named(drawn: Sequence[Group]) -> list[Group]:
    """The groups the Pareto plot names: all of ``drawn`` when at most ``MAX_PLOT_LABELS``,
    else the first ``MAX_PLOT_LABELS`` of the front by median cost."""
    if len(drawn) <= MAX_PLOT_LABELS:
        return list(drawn)
    on_front = sorted((g for g in drawn if g.pareto), key=lambda g: g.stats["cost"].median)
    return on_front[:MAX_PLOT_LABELS]


def pareto_png(gs: Sequence[Group]) -> bytes:
    """The Pareto plot (median cost against median p95 pending, 5th-95th percentile bars,
    the front joined) as PNG bytes; at most ``MAX_PLOT_LABELS`` groups are named. Drawn in
    a few calls whatever the number of groups."""
    fig, ax = pyplot().subplots(figsize=(8, 5.5))
    drawn = [
        g
        for g in gs
        if not (np.isnan(g.stats["cost"].median) or np.isnan(g.stats["pendingP95Seconds"].median))
    ]
    _errorbars(ax, [g for g in drawn if g.pareto], "o", "#1f77b4")
    _errorbars(ax, [g for g in drawn if not g.pareto], "s", "#999999")
    named = plot_named(drawn)
    for g in named:
        ax.annotate(
            plot_label(g.label),
            (g.stats["cost"].median, g.stats["pendingP95Seconds"].median),
            textcoords="offset points",
            xytext=(6, 6),
            fontsize=8,
        )
    front = sorted(
        (g.stats["cost"].median, g.stats["pendingP95Seconds"].median) for g in gs if g.pareto
    )
    if len(front) > 1:
        ax.plot(*zip(*front, strict=True), color="#1f77b4", linestyle="--", linewidth=1)
    ax.set_xlabel("cost (USD), median across seeds")
    ax.set_ylabel("p95 pod pending (s), median across seeds")
    title = "Cost against p95 pending (bars: 5th-95th percentile; blue: Pareto front)"
    if len(named) < len(drawn):
        title += f"\n{len(named)} of {len(drawn)} groups named (the table lists all)"
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return figure_png(fig)


def _fmt(s: Stat, digits: int) -> str:
    if np.isnan(s.median):
        return "-"
    return f"{s.median:.{digits}f} [{s.p5:.{digits}f}-{s.p95:.{digits}f}]"


def table_rows(gs: Sequence[Group]) -> list[list[str]]:
    """The report table: group, seeds, failed, then ``median [p5-p95]`` per metric, Pareto."""
    digits = {"cost": 4, "pendingP95Seconds": 1, "podsLost": 1, "reclaims": 1}
    return [
        [
            g.variant,
            g.policy,
            f"x{g.multiplier:g}",
            str(g.seeds),
            str(g.failed),
            *(_fmt(g.stats[m], digits[m]) for m in METRICS),
            "yes" if g.pareto else "",
        ]
        for g in gs
    ]


TABLE_HEADER = ["variant", "policy", "rate", "seeds", "failed", *METRICS.values(), "Pareto"]


#: How many failed cells of one reason the HTML page names (the JSON document names all).
HTML_FAILED_SHOWN = 20


def render_html(
    name: str,
    gs: Sequence[Group],
    objective_text: str | None,
    rec: Recommendation | None,
    found: Sequence[Failure] = (),
) -> str:
    """One self-contained page: the table, the failed cells by reason, the Pareto plot
    (embedded PNG) and the recommendation with its NodePool YAML."""
    return render_page(
        "sweep.html.j2",
        name=name,
        header=TABLE_HEADER,
        rows=table_rows(gs),
        failures=failure_lines(found, shown=HTML_FAILED_SHOWN),
        pareto_uri=png_data_uri(pareto_png(gs)),
        objective=objective_text,
        rec=rec,
    )


def _stat_doc(s: Stat) -> dict[str, float | None]:
    def num(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {"median": num(s.median), "p5": num(s.p5), "p95": num(s.p95)}


def report_document(
    name: str,
    gs: Sequence[Group],
    found: Sequence[Failure],
    rec: Recommendation | None,
    objective_text: str | None,
    html: str | None,
) -> dict[str, Any]:
    """The ``-o json`` document (``api.outputs.SweepReport``) of a report; ``html`` is where
    the page was written (None: no page, for results from standard input)."""
    recommendation = None
    if rec is not None:
        recommendation = {
            "objective": objective_text or "",
            "variant": rec.variant,
            "policy": rec.policy,
            "value": rec.value,
            "nodePoolsYaml": rec.node_pools_yaml,
            "rejected": rec.rejected,
        }
    return {
        "apiVersion": "joiner.dev/v1alpha1",
        "kind": "SweepReport",
        "sweep": name,
        "groups": [
            {
                "variant": g.variant,
                "policy": g.policy,
                "interruptionRateMultiplier": g.multiplier,
                "seeds": g.seeds,
                "failed": g.failed,
                "metrics": {m: _stat_doc(g.stats[m]) for m in METRICS},
                "pareto": g.pareto,
            }
            for g in gs
        ],
        "failures": [
            {"reason": f.reason, "count": len(f.cells), "cells": list(f.cells)} for f in found
        ],
        "recommendation": recommendation,
        "html": html,
    }
