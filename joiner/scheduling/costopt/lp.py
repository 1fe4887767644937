"""Linear programs of the cost-optimal packing, solved with HiGHS (highspy).

* ``lower_bound``: the cost lower bound of a launch. For pods with no placement constraints:
  minimise ``sum(price_j * n_j)`` over instance types ``j`` that hold at least one of the
  pods (each at its cheapest available offering the NodePool allows: type, zone and capacity
  type; a type that holds no pod is never launched) subject to, for every resource
  (cpu, memory, pods, extended resources), ``sum(n_j * net_j) >= demand``, ``n_j >= 0`` real,
  where ``net_j`` is the type's allocatable minus the NodePool's DaemonSet overhead on it.
  Any plan that places the pods on new NodeClaims costs at least this much, whatever its
  constraints (each NodeClaim holds its pods' requests plus DaemonSet overhead within its
  type's allocatable, and costs at least its type's cheapest offering).
* ``solve_lp``: one LP in column form, the primitive both this bound and the solver's
  assignment LP (``solver``) use.

HiGHS runs single-threaded with its default seed, so results are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from joiner.api.extras import require
from joiner.scheduling.pool import FloatArray, PreparedPool, prepare
from joiner.scheduling.types import SchedulingInput

if TYPE_CHECKING:
    import highspy

#: HiGHS's infinity (``highspy.kHighsInf`` is IEEE infinity); highspy itself is imported only
#: when an LP is solved, so the CLI starts without it.
INF = math.inf


@dataclass(frozen=True)
class LpSolution:
    """An optimal LP solution: column values and the objective (None when not optimal)."""

    x: FloatArray
    objective: float
    optimal: bool


def solve_lp(
    cost: Sequence[float] | FloatArray,
    columns: Sequence[tuple[Sequence[int], Sequence[float]]],
    row_lower: Sequence[float] | FloatArray,
    row_upper: Sequence[float] | FloatArray,
) -> LpSolution:
    """Minimise ``cost @ x`` subject to ``row_lower <= A x <= row_upper``, ``x >= 0``.

    ``columns[k]`` is column ``k`` of ``A`` as (row indices, values). Rows unbounded on one
    side take ``highspy.kHighsInf`` (``INF``) or ``-INF``. Returns ``optimal=False`` (and
    zeros) when HiGHS does not report an optimum (infeasible or unbounded).
    """
    hs = highspy_module()

    n = len(cost)
    m = len(row_lower)
    lp = hs.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = m
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.full(n, INF)
    lp.row_lower_ = np.asarray(row_lower, dtype=np.float64)
    lp.row_upper_ = np.asarray(row_upper, dtype=np.float64)
    starts = np.zeros(n + 1, dtype=np.int32)
    index: list[int] = []
    value: list[float] = []
    for k, (rows, vals) in enumerate(columns):
        index.extend(rows)
        value.extend(vals)
        starts[k + 1] = len(index)
    lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = np.asarray(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.asarray(value, dtype=np.float64)
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != hs.HighsModelStatus.kOptimal:
        return LpSolution(np.zeros(n), 0.0, False)
    x = np.asarray(h.getSolution().col_value, dtype=np.float64)
    return LpSolution(x, float(h.getInfo().objective_function_value), True)


def new_highs() -> highspy.Highs:
    """A HiGHS instance that prints nothing: ``highspy.Highs()`` (1.16) prints its banner
    on stdout from C++ as it wires Python callbacks, before any option can be set; the
    core class does not, and the callbacks are not used here."""
    hs = highspy_module()
    core = getattr(hs, "_core", None)
    cls: Callable[[], highspy.Highs] = getattr(core, "_Highs", None) or hs.Highs
    return cls()


def highspy_module() -> ModuleType:
    """highspy, imported on first use: only ``packing: cost-optimal`` solves LPs, and the
    ``lp`` extra brings it (``pip install 'joiner[lp]'``).

    Raises:
        MissingExtraError: highspy is not installed.
    """
    return require("highspy", "lp", "packing: cost-optimal")


def prepared_pools(inp: SchedulingInput) -> list[PreparedPool]:
    """The input's NodePools prepared as ``Scheduler.solve`` prepares them, by weight."""
    extra = sorted({k for p in inp.pods for k in p.template.requests})
    return [
        prepare(t.nodepool, t.instance_types, inp.daemonsets, dict(t.remaining), extra)
        for t in sorted(inp.nodepools, key=lambda p: (-p.nodepool.weight, p.nodepool.name))
    ]


def offer_columns(pools: Sequence[PreparedPool]) -> tuple[list[str], FloatArray, FloatArray]:
    """Every launchable (pool, type) as a column: resource names, ``net`` (columns x
    resources, allocatable minus DaemonSet overhead) and ``price`` (cheapest available
    offering the NodePool's requirements allow, USD/hour). Types with no such offering or
    whose DaemonSets need a resource they lack are left out."""
    names = sorted({r for p in pools for r in p.resources})
    rows: list[npt.NDArray[np.float64]] = []
    prices: list[float] = []
    for pool in pools:
        price = pool.prices(pool.nodepool.requirements)
        where = [names.index(r) for r in pool.resources]
        for i in range(len(pool.types)):
            if not np.isfinite(price[i]) or (pool.net[i] < 0).any():
                continue
            row = np.zeros(len(names))
            row[where] = pool.net[i]
            rows.append(row)
            prices.append(float(price[i]))
    net = np.array(rows, dtype=np.float64).reshape(len(rows), len(names))
    return names, net, np.array(prices, dtype=np.float64)


def lower_bound(inp: SchedulingInput) -> float:
    """The LP lower bound (module docstring) on the hourly price, in USD, of the new
    NodeClaims any plan for ``inp.pods`` launches. Existing nodes' free capacity
    (``inp.existing``) is subtracted from the demand first.

    Resources no instance type offers are left out (pods asking for them are unschedulable
    in any plan). Returns 0.0 when there is nothing to launch.

    Raises:
        RuntimeError: HiGHS reports no optimum for a bounded, feasible LP (a solver fault).
    """
    pools = prepared_pools(inp)
    names, net, price = offer_columns(pools)
    demand = np.zeros(len(names))
    index = {r: i for i, r in enumerate(names)}
    for p in inp.pods:
        for k, v in p.template.requests.items():
            if k in index and v > 0:
                demand[index[k]] += v
    for e in inp.existing:
        if e.name in inp.exclude_nodes:
            continue
        for k, v in e.available.items():
            if k in index and v > 0:
                demand[index[k]] -= v
    holds = _holds_a_pod(inp, names, net)
    net, price = net[holds], price[holds]
    offered = net.max(axis=0, initial=0.0) > 0
    keep = (demand > 0) & offered
    if not keep.any() or len(price) == 0:
        return 0.0
    scale = net[:, keep].max(axis=0)
    a = net[:, keep] / scale
    columns = [(list(range(int(keep.sum()))), list(a[j])) for j in range(len(price))]
    sol = solve_lp(price, columns, demand[keep] / scale, np.full(int(keep.sum()), INF))
    if not sol.optimal:
        raise RuntimeError("HiGHS found no optimum for the packing lower bound")
    return sol.objective


def _holds_a_pod(
    inp: SchedulingInput, names: Sequence[str], net: FloatArray
) -> npt.NDArray[np.bool_]:
    """Per column of ``net``: whether its type (after DaemonSet overhead) holds at least one
    of ``inp.pods`` by requests. A plan launches a NodeClaim only for pods it holds, so a
    type that holds none is never bought; leaving it in would let the bound buy, say, the
    packaged catalog's t3.nano Spot (4 pod slots and 1.93 CPU for $0.0011/hour, but 74 MiB
    of memory, less than any pod of Karpenter's benchmark asks) for CPU and pod slots."""
    index = {r: i for i, r in enumerate(names)}
    vectors = set()
    for p in inp.pods:
        vec = np.zeros(len(names))
        for k, v in p.template.requests.items():
            if v > 0:
                if k not in index:
                    break  # a resource no type offers: no type holds it
                vec[index[k]] = v
        else:
            vectors.add(tuple(vec))
    if not vectors:
        return np.zeros(len(net), dtype=np.bool_)
    asked = np.array(sorted(vectors), dtype=np.float64)
    fits: npt.NDArray[np.bool_] = np.all(net[:, None, :] >= asked[None, :, :], axis=2)
    return np.asarray(np.any(fits, axis=1), dtype=np.bool_)


def assignment_bound(inp: SchedulingInput) -> float:
    """A tighter LP lower bound (USD/hour) for pods with no placement constraints: pods are
    grouped by requests, ``x[c, j]`` of group ``c`` go on type ``j`` (only where one fits),
    and each type's NodeClaims ``n[j]`` must hold what is put on that type, resource by
    resource: a NodeClaim's memory cannot serve pods whose CPU another type provides, which
    ``lower_bound`` allows. Any plan is such an assignment with integer values, so its cost
    is at least this. Existing nodes are not counted (use it for launches from scratch).

    Raises:
        RuntimeError: HiGHS reports no optimum although every group fits some type.
    """
    pools = prepared_pools(inp)
    names, net, price = offer_columns(pools)
    # A type another one beats (no dearer, at least as much of everything) never helps.
    no_dearer = price[None, :] <= price[:, None]
    covers = (net[None, :, :] >= net[:, None, :]).all(axis=2)
    strictly = (price[None, :] < price[:, None]) | (net[None, :, :] > net[:, None, :]).any(axis=2)
    beaten = (no_dearer & covers & strictly).any(axis=1)
    net, price = net[~beaten], price[~beaten]
    index = {r: i for i, r in enumerate(names)}
    groups: dict[tuple[tuple[int, float], ...], int] = {}
    for p in inp.pods:
        asked = {k: float(v) for k, v in p.template.requests.items() if v > 0}
        if any(k not in index for k in asked):
            continue  # a resource no type offers: unschedulable in any plan
        vec = tuple(sorted((index[k], v) for k, v in asked.items()))
        groups[vec] = groups.get(vec, 0) + 1
    if not groups or len(price) == 0:
        return 0.0
    width = len(names)
    scale = np.maximum(net.max(axis=0), 1.0)
    cost: list[float] = [float(v) for v in price]
    columns: list[tuple[list[int], list[float]]] = [
        ([j * width + r for r in range(width)], list(-net[j] / scale)) for j in range(len(price))
    ]
    for g, (vec, _) in enumerate(groups.items()):
        q = np.zeros(width)
        for i, v in vec:
            q[i] = v
        fits = np.flatnonzero((net >= q).all(axis=1))
        used = np.flatnonzero(q > 0)
        for j in fits:
            rows = [int(j) * width + int(r) for r in used] + [len(price) * width + g]
            columns.append((rows, [*(q[used] / scale[used]), 1.0]))
            cost.append(0.0)
    counts = [float(n) for n in groups.values()]
    lower = [-INF] * (len(price) * width) + counts
    upper = [0.0] * (len(price) * width) + counts
    sol = solve_lp(cost, columns, lower, upper)
    if not sol.optimal:
        raise RuntimeError("HiGHS found no optimum for the assignment lower bound")
    return sol.objective


__all__ = [
    "INF",
    "LpSolution",
    "assignment_bound",
    "lower_bound",
    "offer_columns",
    "prepared_pools",
    "solve_lp",
]
