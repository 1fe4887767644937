"""The configuration (pattern) LP lower bound of a launch, by column generation.

Pods are grouped in classes: the same requests (over the resources some pod asks for) and
the same hostname group (``prepack.per_node``: at most one pod of a group under a required
hostname anti-affinity selecting itself, at most ``maxSkew`` under a DoNotSchedule hostname
spread selecting itself, per node). A *pattern* is one NodeClaim of one instance type with a
whole number ``a[c]`` of pods of each class ``c`` that fits the type's allocatable minus
DaemonSet overhead (``PreparedPool.net``) in every resource and keeps each hostname group
within its cap. The master LP (Gilmore and Gomory's relaxation of cutting stock) is::

    minimise   sum_k price[k] * x[k]
    subject to sum_k a_k[c] * x[k] >= n[c]   for every class c,   x >= 0 real,

over every pattern ``k``, with ``n[c]`` the class's pod count and ``price[k]`` its type's
cheapest available offering the NodePool allows (USD/hour). Every plan is an integer point
of it: each new NodeClaim holds a pattern (whole pods, within its type's net allocatable,
hostname rules kept) and costs at least that price. So its LP optimum is at most any plan's
cost, and at least ``lp.assignment_bound`` (which lets each type hold a fraction of a pod).

Types are those a plan buys (``solver.plan_cost``): an exotic type (metal, GPU,
accelerator) is left out when a non-exotic type of its pool holds at least as much of
everything and no pod asks for node selection, since a NodeClaim that fits it then
launches a non-exotic option (``_never_launched``).

What the bound relaxes (a relaxation only lowers it, so it stays valid): zones (a type is
priced at its cheapest zone, and zonal spread and zone affinity are not modelled), node
selection, taints and NodePool weights (a class may use every pool's types), existing nodes
(the bound is for a launch from scratch) and other resources' limits. Hostname spread is
capped per node as both packings place pods: each new NodeClaim is an empty hostname
domain, so one with more than ``maxSkew`` pods of the group would exceed the skew.

Column generation: the restricted master starts with one single-class pattern per class
and grows by the patterns of negative reduced cost. Pricing solves, per type, the integer
knapsack ``max pi . a`` (``pi`` the master's row duals) in every resource and hostname cap
with HiGHS (a small MIP), and reads its proven upper bound (``mip_dual_bound``). With
``lambda = max(1, max_k (pi . a_k) / price[k])`` over all patterns (bounded by those upper
bounds, and by a per-resource bound for the types not solved), ``pi / lambda`` is feasible
for the master's dual, so ``n . pi / lambda <= `` the LP optimum (Farley's bound; when no
pattern has negative reduced cost, ``lambda`` is 1 and it is the LP optimum). That is the
value returned, valid whether or not the generation converged.

HiGHS runs single-threaded with its default seed, so results are deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from joiner.cloudprovider.launch import kept_out_as_exotic
from joiner.scheduling.costopt import prepack
from joiner.scheduling.costopt.lp import INF, highspy_module, new_highs, prepared_pools
from joiner.scheduling.pool import BoolArray, FloatArray, IntArray
from joiner.scheduling.types import SchedulingInput

if TYPE_CHECKING:
    import highspy

#: A pattern's reduced cost below ``-TOLERANCE * price`` makes it enter the master.
TOLERANCE = 1e-7
#: Relative gap of each pricing MIP.
MIP_GAP = 2e-3
#: Branch-and-bound nodes per pricing MIP (its proven bound stays valid when it stops early).
MIP_NODES = 200
#: Generation stops when the bound is within this share of the restricted master's value
#: (so within it of the LP optimum).
GAP = 2e-3
#: At most this many types are priced exactly per round (most promising first).
PRICED_PER_ROUND = 8
#: Rounds of column generation before the Farley bound is taken as it stands.
MAX_ROUNDS = 400


@dataclass(frozen=True)
class Classes:
    """Pod classes: ``vectors`` (classes x resources, requests in the resources' units),
    ``counts`` (pods per class), ``group`` (each class's hostname group index, -1 for
    none) and ``caps`` (per group, pods per node)."""

    resources: list[str]
    vectors: IntArray
    counts: IntArray
    group: IntArray
    caps: IntArray


@dataclass(frozen=True)
class Offers:
    """Launchable types: ``names``, ``net`` (types x ``Classes.resources``, allocatable
    minus DaemonSet overhead) and ``price`` (USD/hour, cheapest offering the NodePool allows)."""

    names: list[str]
    net: IntArray
    price: FloatArray


@dataclass(frozen=True)
class Pattern:
    """A master column in the final solution: type, price, pods per class, NodeClaims."""

    type_name: str
    price: float
    pods: dict[int, int]
    count: float


@dataclass(frozen=True)
class PatternBound:
    """The bound (``value``, USD/hour), the restricted master's optimum (``master``, at
    least ``value``), whether pricing proved no column has negative reduced cost
    (``converged``), rounds run, columns generated and the master's positive columns."""

    value: float
    master: float
    converged: bool
    rounds: int
    columns: int
    patterns: list[Pattern]


def pod_classes(inp: SchedulingInput, resources: list[str]) -> Classes:
    """Group ``inp.pods`` by request vector over ``resources`` and hostname group.

    Pods asking for a resource not in ``resources`` are left out (no type offers it)."""
    index = {r: i for i, r in enumerate(resources)}
    keys: dict[tuple[tuple[int, ...], object], int] = {}
    groups: dict[object, int] = {}
    caps: list[int] = []
    rows: list[tuple[int, ...]] = []
    counts: list[int] = []
    group_of: list[int] = []
    for p in inp.pods:
        asked = {k: v for k, v in p.template.requests.items() if v > 0}
        if any(k not in index for k in asked):
            continue
        vec = [0] * len(resources)
        for k, v in asked.items():
            vec[index[k]] = int(v)
        cap, key = prepack.per_node(p.template)
        if cap is not None and key not in groups:
            groups[key] = len(caps)
            caps.append(max(int(cap), 1))
        g = groups[key] if cap is not None else -1
        at = keys.setdefault((tuple(vec), key if cap is not None else None), len(rows))
        if at == len(rows):
            rows.append(tuple(vec))
            counts.append(0)
            group_of.append(g)
        counts[at] += 1
    return Classes(
        resources,
        np.array(rows, dtype=np.int64).reshape(len(rows), len(resources)),
        np.array(counts, dtype=np.int64),
        np.array(group_of, dtype=np.int64),
        np.array(caps, dtype=np.int64),
    )


def offers(inp: SchedulingInput) -> tuple[Offers, list[str]]:
    """Every launchable (pool, type) over the resources some pod asks for, types another
    beats left out; and those resources.

    A type is left out when another costs no more and has at least as much of every asked
    resource (and is cheaper or larger somewhere): every pattern of the first is one of
    the second at no higher price, so the LP optimum is unchanged."""
    pools = prepared_pools(inp)
    asked = sorted({k for p in inp.pods for k, v in p.template.requests.items() if v > 0})
    resources = [r for r in asked if any(r in pool.resources for pool in pools)]
    names: list[str] = []
    rows: list[list[int]] = []
    prices: list[float] = []
    exotic: list[bool] = []
    pool_of: list[int] = []
    for p, pool in enumerate(pools):
        reqs = pool.nodepool.requirements
        price = pool.prices(reqs)
        where = {r: i for i, r in enumerate(pool.resources)}
        for i, it in enumerate(pool.types):
            if not np.isfinite(price[i]) or (pool.net[i] < 0).any():
                continue
            names.append(it.name)
            rows.append([int(pool.net[i][where[r]]) if r in where else 0 for r in resources])
            prices.append(float(price[i]))
            exotic.append(kept_out_as_exotic(it, reqs))
            pool_of.append(p)
    net = np.array(rows, dtype=np.int64).reshape(len(rows), len(resources))
    price_arr = np.array(prices, dtype=np.float64)
    # Exotic types first: one a plan never buys must not make others look beaten.
    keep = np.ones(len(prices), dtype=np.bool_)
    if not any(p.template.node_selector or p.template.required_affinity for p in inp.pods):
        keep = ~_never_launched(net, np.array(exotic, dtype=np.bool_), np.array(pool_of))
    keep[keep] = ~_beaten(net[keep], price_arr[keep])
    return Offers([n for n, k in zip(names, keep, strict=True) if k], net[keep], price_arr[keep]), (
        resources
    )


def _never_launched(net: IntArray, exotic: BoolArray, pool_of: IntArray) -> BoolArray:
    """Per type: exotic (``launch.is_exotic``, no reserved offering, no ``minValues``) and
    some other type of its pool that is not has at least as much of every resource. A
    NodeClaim holding pods that fit such a type also has that other type among its
    options when its pods ask for no node selection (every type of the pool admits them),
    and it launches as a non-exotic option (``solver.plan_cost``, after Karpenter-AWS
    ``pkg/providers/instance/instance.go`` ``filterInstanceTypes``), so no plan buys it."""
    covers = (net[None, :, :] >= net[:, None, :]).all(axis=2)
    usable = ~exotic[None, :] & (pool_of[None, :] == pool_of[:, None])
    return np.asarray(exotic & (covers & usable).any(axis=1), dtype=np.bool_)


def _beaten(net: IntArray, price: FloatArray) -> BoolArray:
    """Per type: another type costs no more, has at least as much of every resource and is
    cheaper or larger somewhere (ties between equal types keep the first)."""
    no_dearer = price[None, :] <= price[:, None]
    covers = (net[None, :, :] >= net[:, None, :]).all(axis=2)
    strictly = (price[None, :] < price[:, None]) | (net[None, :, :] > net[:, None, :]).any(axis=2)
    equal = ~strictly & no_dearer & covers
    earlier = np.tril(np.ones((len(price), len(price)), dtype=np.bool_), k=-1)
    return np.asarray(((no_dearer & covers & strictly) | (equal & earlier)).any(axis=1))


def fits(classes: Classes, offer: Offers) -> IntArray:
    """Pods of each class one NodeClaim of each type holds alone (types x classes): by
    resources, at most the class's count and its group's cap."""
    net = offer.net[:, None, :].astype(np.float64)
    vec = classes.vectors[None, :, :].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(vec > 0, np.floor(net / np.where(vec > 0, vec, 1)), np.inf)
    out = ratio.min(axis=2)
    out = np.minimum(out, classes.counts[None, :].astype(np.float64))
    caps = np.append(classes.caps, 0).astype(np.float64)
    cap = np.where(classes.group >= 0, caps[classes.group], np.inf)
    out = np.minimum(out, cap[None, :])
    return np.asarray(out, dtype=np.int64)


class _Master:
    """The restricted master LP, kept in one HiGHS model that grows by columns."""

    def __init__(self, counts: IntArray) -> None:
        self.hs = highspy_module()
        self.h = new_highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        m = len(counts)
        self.h.addRows(
            m,
            counts.astype(np.float64),
            np.full(m, INF),
            0,
            np.zeros(m, dtype=np.int32),
            np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.float64),
        )
        self.columns: list[tuple[int, IntArray]] = []

    def add(self, offer: Offers, j: int, a: IntArray) -> None:
        rows = np.flatnonzero(a).astype(np.int32)
        self.h.addCol(float(offer.price[j]), 0.0, INF, len(rows), rows, a[rows].astype(np.float64))
        self.columns.append((j, a))

    def solve(self) -> tuple[float, FloatArray, FloatArray]:
        """Objective, row duals (clipped at 0) and column values.

        Raises:
            RuntimeError: HiGHS reports no optimum (every class has a column: a fault)."""
        self.h.run()
        if self.h.getModelStatus() != self.hs.HighsModelStatus.kOptimal:
            raise RuntimeError("HiGHS found no optimum for the pattern master LP")
        sol = self.h.getSolution()
        duals = np.maximum(np.asarray(sol.row_dual, dtype=np.float64), 0.0)
        x = np.asarray(sol.col_value, dtype=np.float64)
        return float(self.h.getInfo().objective_function_value), duals, x


class _Knapsack:
    """One type's pricing MIP: ``max pi . a`` over whole pods within its net allocatable and
    the hostname caps; the objective changes per round, the model stays."""

    def __init__(self, classes: Classes, net: IntArray, fit: IntArray) -> None:
        self.hs = highspy_module()
        self.cols = np.flatnonzero(fit > 0)
        self.h: highspy.Highs = new_highs()
        h = self.h
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("mip_rel_gap", MIP_GAP)
        h.setOptionValue("mip_max_nodes", MIP_NODES)
        n = len(self.cols)
        h.addVars(n, np.zeros(n), fit[self.cols].astype(np.float64))
        h.changeColsIntegrality(
            n,
            np.arange(n, dtype=np.int32),
            np.full(n, self.hs.HighsVarType.kInteger),
        )
        vec = classes.vectors[self.cols]
        for r in range(vec.shape[1]):
            used = np.flatnonzero(vec[:, r] > 0)
            if len(used) and (vec[used, r] * fit[self.cols][used]).sum() > net[r]:
                scale = float(max(net[r], 1))
                h.addRow(
                    -INF, net[r] / scale, len(used), used.astype(np.int32), vec[used, r] / scale
                )
        group = classes.group[self.cols]
        for g, cap in enumerate(classes.caps):
            used = np.flatnonzero(group == g)
            if len(used) > 1:
                h.addRow(-INF, float(cap), len(used), used.astype(np.int32), np.ones(len(used)))

    def solve(self, duals: FloatArray) -> tuple[float, IntArray]:
        """The best pattern's value, an upper bound on it (proven by the MIP) and the
        pattern over all classes."""
        n = len(self.cols)
        self.h.changeColsCost(n, np.arange(n, dtype=np.int32), -duals[self.cols])
        self.h.run()
        info = self.h.getInfo()
        a = np.rint(np.asarray(self.h.getSolution().col_value)).astype(np.int64)
        out = np.zeros(len(duals), dtype=np.int64)
        out[self.cols] = a
        return -float(info.mip_dual_bound), out


def _quick_upper(classes: Classes, offer: Offers, fit: IntArray, duals: FloatArray) -> FloatArray:
    """Per type, an upper bound on ``max pi . a`` over its patterns: the least over
    resources of the type's net times the best dual per unit of that resource among the
    classes it holds, and the sum of ``pi[c]`` times the class's pods that fit alone."""
    vec = classes.vectors.astype(np.float64)
    best = np.zeros((len(offer.price), vec.shape[1]))
    for r in range(vec.shape[1]):
        per = np.where(vec[:, r] > 0, duals / np.where(vec[:, r] > 0, vec[:, r], 1), np.inf)
        per = np.where((fit > 0) & np.isfinite(per)[None, :], per[None, :], 0.0)
        best[:, r] = per.max(axis=1) * offer.net[:, r]
    by_resource = np.where(vec.sum(axis=0)[None, :] > 0, best, np.inf).min(axis=1)
    alone = (fit * duals[None, :]).sum(axis=1)
    return np.asarray(np.minimum(by_resource, alone), dtype=np.float64)


def pattern_bound(
    inp: SchedulingInput, max_rounds: int = MAX_ROUNDS, per_round: int = PRICED_PER_ROUND
) -> PatternBound:
    """The pattern LP lower bound (module docstring) on the hourly price, in USD, of the new
    NodeClaims any plan for ``inp.pods`` launches from scratch. 0.0 when no pod fits.

    ``max_rounds`` caps the column generation rounds and ``per_round`` the types priced
    exactly per round; the value is valid whatever they are (Farley's bound)."""
    offer, resources = offers(inp)
    classes = pod_classes(inp, resources)
    if len(offer.price) == 0 or len(classes.counts) == 0:
        return PatternBound(0.0, 0.0, True, 0, 0, [])
    fit = fits(classes, offer)
    held = np.asarray((fit > 0).any(axis=0), dtype=np.bool_)
    classes = _only(classes, held)
    fit = fit[:, held]
    if len(classes.counts) == 0:
        return PatternBound(0.0, 0.0, True, 0, 0, [])
    master = _Master(classes.counts)
    _seed(master, offer, fit)
    knapsacks: dict[int, _Knapsack] = {}
    rounds = 0
    best = 0.0
    while True:
        rounds += 1
        z, duals, x = master.solve()
        lam, entering = _price(classes, offer, fit, duals, knapsacks, per_round)
        best = max(best, float(classes.counts @ duals) / lam)
        if not entering or rounds >= max_rounds or best >= z * (1 - GAP):
            break
        for j, a in entering:
            master.add(offer, j, a)
    converged = best >= z * (1 - GAP)
    return PatternBound(best, z, converged, rounds, len(master.columns), _used(master, offer, x))


def _only(classes: Classes, keep: BoolArray) -> Classes:
    """The classes where ``keep``."""
    return Classes(
        classes.resources,
        classes.vectors[keep],
        classes.counts[keep],
        classes.group[keep],
        classes.caps,
    )


def _seed(master: _Master, offer: Offers, fit: IntArray) -> None:
    """One single-class pattern per class: its cheapest type per pod, as many as fit."""
    with np.errstate(divide="ignore"):
        per_pod = np.where(fit > 0, offer.price[:, None] / np.maximum(fit, 1), np.inf)
    for c in range(fit.shape[1]):
        j = int(np.argmin(per_pod[:, c]))
        a = np.zeros(fit.shape[1], dtype=np.int64)
        a[c] = fit[j, c]
        master.add(offer, j, a)


def _price(
    classes: Classes,
    offer: Offers,
    fit: IntArray,
    duals: FloatArray,
    knapsacks: dict[int, _Knapsack],
    per_round: int,
) -> tuple[float, list[tuple[int, IntArray]]]:
    """Price the types whose quick bound beats their price, most promising first: ``per_round``
    of them, or more until one gives an entering pattern (so an empty answer proves that
    none has negative reduced cost); returns Farley's ``lambda`` and the entering patterns."""
    upper = _quick_upper(classes, offer, fit, duals)
    ratio = upper / offer.price
    order = [int(j) for j in np.argsort(-ratio, kind="stable") if ratio[j] > 1 + TOLERANCE]
    entering: list[tuple[int, IntArray]] = []
    for k, j in enumerate(order):
        if k >= per_round and entering:
            break
        if j not in knapsacks:
            knapsacks[j] = _Knapsack(classes, offer.net[j], fit[j])
        bound, a = knapsacks[j].solve(duals)
        ratio[j] = min(ratio[j], bound / offer.price[j])
        value = float(duals @ a)
        if value > offer.price[j] * (1 + TOLERANCE) and _fits(classes, offer.net[j], a):
            entering.append((j, a))
    return max(1.0, float(ratio.max(initial=1.0))), entering


def _fits(classes: Classes, net: IntArray, a: IntArray) -> bool:
    """``a`` holds within ``net`` and the hostname caps, exactly (integers)."""
    if (a @ classes.vectors > net).any():
        return False
    return all(a[classes.group == g].sum() <= cap for g, cap in enumerate(classes.caps))


def _used(master: _Master, offer: Offers, x: FloatArray) -> list[Pattern]:
    out = []
    for (j, a), v in zip(master.columns, x, strict=True):
        if v > 1e-9:
            pods = {int(c): int(a[c]) for c in np.flatnonzero(a)}
            out.append(Pattern(offer.names[j], float(offer.price[j]), pods, float(v)))
    return sorted(out, key=lambda p: -p.count * p.price)


__all__ = ["Classes", "Offers", "Pattern", "PatternBound", "offers", "pattern_bound", "pod_classes"]
