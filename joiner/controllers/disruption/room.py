"""Single-node consolidation's pre-check: candidates whose pods cannot possibly move.

Karpenter's ``SingleNodeConsolidation.ComputeCommands`` (``singlenodeconsolidation.go``)
simulates every candidate in turn until one consolidates; it bounds that search by a 3-minute
wall-clock timeout, which a deterministic simulation cannot reproduce. Joiner instead skips
the simulation of a candidate that provably cannot consolidate, so the decision is the one
the simulation would reach and only the work is saved.

The proof (``Room.hopeless``): a consolidation of candidate ``c`` (``methods._consolidate``)
needs every pod of ``c`` to land either on an *initialized* other node (a pod placed on a
node not initialized yet fails the simulation) or on one new NodeClaim (two are rejected)
whose instance type is cheaper than ``c`` (with spot-to-spot consolidation off and ``c``
spot, only its offerings that are not spot can be). Pending pods, pods of deleting nodes and
DaemonSet overhead only take room away, so leaving them out keeps the test necessary. For
every resource ``r`` the pods request (``pods: 1`` included), a node with free ``F_r`` holds
at most ``k = min_r floor(F_r / smallest request of r)`` of them, and at most
``min(F_r, k * largest request of r)`` of ``r``; the new node at most the largest CPU and,
separately, memory of any cheaper type. When the pods outnumber the sum of those counts, or
their requests of a resource exceed the sum of those amounts, no placement exists and the
simulation is skipped.

A second, joint test (``Room._stranded``): a pod of ``c`` whose requests fit no other
initialized node's free room on its own (``quantity.fits``, the scheduler's test for an
existing node) can only land on the new NodeClaim, so every such pod lands there together.
That NodeClaim's instance type has allocatable at least the sum of their requests in every
resource (the scheduler keeps only types whose allocatable minus DaemonSet overhead holds
the NodeClaim's pods), and it must be cheaper than ``c`` (the solve's ``StopRule`` floor,
then ``methods._consolidate``'s worst launch price, which is never below the cheapest
price). When no cheaper type (as above, per capacity type) holds those pods together, the
simulation is skipped: it could only fail. The same holds for a multi-node command
(``Room.stranded``): the simulation excludes every candidate's node, so "other node" means
outside the candidates, and the replacement must be cheaper than their summed prices (other
than as spot when all are spot and spot-to-spot consolidation is off).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from joiner.api import labels
from joiner.api.pods import tolerates_all
from joiner.api.quantity import CPU, MEMORY, Resources
from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.command import SPOT_TO_SPOT_OFF, Context, allowed_offerings
from joiner.scheduling import NodePoolTemplate

#: A count no node reaches (a resource the pods do not request bounds nothing).
_UNBOUNDED = 1 << 40


class Room:
    """Free capacity of the initialized nodes of one pass, for ``hopeless``.

    Built once per pass from the provisioner's snapshot (``Provisioner.snapshot``): per
    node, the free amount of every resource as a numpy vector (nodes in snapshot order).
    """

    def __init__(self, ctx: Context) -> None:
        existing, _ = ctx.provisioner.snapshot()
        nodes = [e for e in existing if e.initialized]
        self._index = {e.name: i for i, e in enumerate(nodes)}
        self._available = [e.available for e in nodes]
        self._taints = [e.taints for e in nodes]
        self._free: dict[str, np.ndarray] = {}
        self._templates = ctx.provisioner.templates()
        self._spot_to_spot = ctx.spot_to_spot
        self._cheaper: dict[frozenset[str], Cheaper] = {}

    def _free_of(self, resource: str) -> np.ndarray:
        """Free ``resource`` per initialized node (never negative), int64."""
        free = self._free.get(resource)
        if free is None:
            free = np.fromiter(
                (max(a.get(resource, 0), 0) for a in self._available),
                dtype=np.int64,
                count=len(self._available),
            )
            self._free[resource] = free
        return free

    def _table(self, exclude: frozenset[str]) -> Cheaper:
        table = self._cheaper.get(exclude)
        if table is None:  # once per pass: its key alone walks every instance type
            table = self._cheaper[exclude] = cheaper_table(self._templates, exclude)
        return table

    def stranded(self, cands: Sequence[Candidate]) -> bool:
        """True when consolidating ``cands`` together (a multi-node command) provably
        fails by the module docstring's joint test: the pods of ``cands`` that fit no
        initialized node outside ``cands`` on their own need one new NodeClaim cheaper than
        ``cands`` together (other than as spot when every candidate is spot and spot-to-spot
        consolidation is off), and no such type holds them. Raises nothing."""
        exclude = (
            frozenset({labels.CAPACITY_TYPE_SPOT})
            if not self._spot_to_spot
            and all(c.capacity_type == labels.CAPACITY_TYPE_SPOT for c in cands)
            else frozenset()
        )
        prices = self._table(exclude).bounds[0]
        n = bisect.bisect_left(prices, sum(c.price_per_hour for c in cands))
        return self._stranded(cands, exclude, n)

    def _stranded(self, cands: Sequence[Candidate], exclude: frozenset[str], n: int) -> bool:
        """True when the pods of ``cands`` that fit no initialized node outside ``cands``
        on their own (some do) together outgrow every one of the ``n`` cheapest launchable
        types of the ``exclude`` table (the module docstring's joint test)."""
        own = [i for c in cands if (i := self._index.get(c.claim.name)) is not None]
        fits_by_template: dict[int, bool] = {}
        total: dict[str, int] = {}
        for p in (p for c in cands for p in c.pods):
            t = p.template
            fits = fits_by_template.get(id(t))
            if fits is None:
                ok = np.ones(len(self._available), dtype=np.bool_)
                for r, v in t.requests.items():
                    if v > 0:
                        ok &= self._free_of(r) >= v
                ok[own] = False
                fits = fits_by_template[id(t)] = any(
                    tolerates_all(t.tolerations, self._taints[i]) is None
                    for i in np.flatnonzero(ok)
                )
            if not fits:
                for r, v in t.requests.items():
                    if v > 0:
                        total[r] = total.get(r, 0) + v
        if not total:
            return False
        if n == 0:
            return True
        table = self._table(exclude)
        holds = np.ones(n, dtype=np.bool_)
        for r, need in total.items():
            holds &= table.column(r)[:n] >= need
        return not bool(holds.any())

    def hopeless(self, c: Candidate) -> str | None:
        """Why ``c``'s pods cannot move anywhere cheaper (the module docstring's proof), or
        None when they might. Raises nothing."""
        if not c.pods:
            return None
        requests = [p.template.requests for p in c.pods]
        resources = sorted({r for req in requests for r, v in req.items() if v > 0})
        own = self._index.get(c.claim.name)
        exclude = (
            frozenset({labels.CAPACITY_TYPE_SPOT})
            if c.capacity_type == labels.CAPACITY_TYPE_SPOT and not self._spot_to_spot
            else frozenset()
        )
        prices, max_cpu, max_mem = self._table(exclude).bounds
        n = bisect.bisect_left(prices, c.price_per_hour)  # types strictly cheaper
        best = {CPU: max_cpu[n - 1] if n else 0, MEMORY: max_mem[n - 1] if n else 0}
        count = np.full(len(self._available), _UNBOUNDED, dtype=np.int64)
        count_new = _UNBOUNDED
        low: dict[str, int] = {}
        high: dict[str, int] = {}
        for r in resources:
            amounts = [req.get(r, 0) for req in requests]
            low[r], high[r] = min(amounts), max(amounts)
            if low[r] > 0:
                count = np.minimum(count, self._free_of(r) // low[r])
                if r in best:
                    count_new = min(count_new, best[r] // low[r])
        if own is not None:
            count[own] = 0
        fits = len(requests) <= int(count.sum()) + count_new
        for r in resources:
            if not fits:
                break
            free = self._free_of(r)
            # In float64: ``count`` may be huge where a resource bounds nothing; the minimum
            # with the (exact, < 2**53) free amounts brings it back.
            room = np.minimum(free, count * float(high[r]))
            need = sum(req.get(r, 0) for req in requests)
            # A resource other than CPU and memory bounds the new node by nothing known.
            extra = best.get(r, need)
            fits = need <= int(room.sum()) + extra
        if fits:
            if not self._stranded([c], exclude, n):
                return None
            what = "the pods that fit no other node do not fit together on any"
        else:
            what = "its pods fit neither on the other nodes nor on any"
        return "can't replace with a cheaper node: " + (
            f"{SPOT_TO_SPOT_OFF}, and {what} instance type cheaper other than as spot"
            if exclude
            else f"{what} cheaper instance type"
        )


class Cheaper:
    """Every launchable (pool, type) of a pass, cheapest allowed price ascending
    (``cheaper_table``): ``bounds`` is (prices, running maximum of allocatable CPU, of
    memory); ``column(r)`` is each row's allocatable ``r`` (int64, 0 where a type has none)."""

    def __init__(self, rows: list[tuple[float, Resources]]) -> None:
        self._allocatable = [a for _, a in rows]
        max_cpu: list[int] = []
        max_mem: list[int] = []
        cpu = mem = 0
        for _, a in rows:
            cpu, mem = max(cpu, a.get(CPU, 0)), max(mem, a.get(MEMORY, 0))
            max_cpu.append(cpu)
            max_mem.append(mem)
        self.bounds = ([p for p, _ in rows], max_cpu, max_mem)
        self._columns: dict[str, np.ndarray] = {}

    def column(self, resource: str) -> np.ndarray:
        """Each row's allocatable ``resource`` (cached)."""
        found = self._columns.get(resource)
        if found is None:
            found = self._columns[resource] = np.fromiter(
                (a.get(resource, 0) for a in self._allocatable),
                dtype=np.int64,
                count=len(self._allocatable),
            )
        return found


#: The last ``cheaper_table`` answer per excluded capacity types, by its templates' pools
#: and instance-type identities (the types themselves are kept so the identities stay valid).
_CHEAPER: dict[frozenset[str], tuple[object, object, Cheaper]] = {}


def cheaper_table(
    templates: Sequence[NodePoolTemplate], exclude: frozenset[str] = frozenset()
) -> Cheaper:
    """Every launchable (pool, type): cheapest allowed price ascending (offerings of
    ``exclude`` capacity types left out), with its allocatable (``Cheaper``). Reused while
    the pools and the cloud's type objects are the same (the cloud hands out new objects
    when availability changes)."""
    key = tuple((t.nodepool, tuple(map(id, t.instance_types))) for t in templates)
    hit = _CHEAPER.get(exclude)
    if hit is not None and hit[0] == key:
        return hit[2]
    rows: list[tuple[float, Resources]] = []
    for t in templates:
        reqs = t.nodepool.requirements
        for it in t.instance_types:
            if it.requirements.intersects(reqs) is not None:
                continue
            prices = [
                o.price_per_hour
                for o in allowed_offerings(it, reqs)
                if o.capacity_type not in exclude
            ]
            if prices:
                rows.append((min(prices), it.allocatable))
    # By price, then CPU and memory (as the old (price, cpu, memory) tuples sorted).
    rows.sort(key=lambda r: (r[0], r[1].get(CPU, 0), r[1].get(MEMORY, 0)))
    answer = Cheaper(rows)
    _CHEAPER[exclude] = (key, tuple(t.instance_types for t in templates), answer)
    return answer
