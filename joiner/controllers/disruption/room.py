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

"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from joiner.api import labels
from joiner.api.quantity import CPU, MEMORY
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
        self._free: dict[str, np.ndarray] = {}
        self._templates = ctx.provisioner.templates()
        self._spot_to_spot = ctx.spot_to_spot
        self._cheaper: dict[frozenset[str], tuple[list[float], list[int], list[int]]] = {}

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
        table = self._cheaper.get(exclude)
        if table is None:  # once per pass: its key alone walks every instance type
            table = self._cheaper[exclude] = cheaper_types(self._templates, exclude)
        prices, max_cpu, max_mem = table
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
            return None
        return "can't replace with a cheaper node: " + (
            f"{SPOT_TO_SPOT_OFF}, and its pods fit neither on the other nodes nor on any "
            "instance type cheaper other than as spot"
            if exclude
            else "its pods fit neither on the other nodes nor on any cheaper instance type"
        )


#: The last ``cheaper_types`` answer per excluded capacity types, by its templates' pools
#: and instance-type identities (the types themselves are kept so the identities stay valid).
_CHEAPER: dict[frozenset[str], tuple[object, object, tuple[list[float], list[int], list[int]]]] = {}


def cheaper_types(
    templates: Sequence[NodePoolTemplate], exclude: frozenset[str] = frozenset()
) -> tuple[list[float], list[int], list[int]]:
    """Every launchable (pool, type): cheapest allowed price ascending (offerings of
    ``exclude`` capacity types left out), with the running maximum of allocatable CPU and
    memory. Reused while the pools and the cloud's type objects are the same (the cloud
    hands out new objects when availability changes)."""
    key = tuple((t.nodepool, tuple(map(id, t.instance_types))) for t in templates)
    hit = _CHEAPER.get(exclude)
    if hit is not None and hit[0] == key:
        return hit[2]
    rows: list[tuple[float, int, int]] = []
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
                alloc = it.allocatable
                rows.append((min(prices), alloc.get(CPU, 0), alloc.get(MEMORY, 0)))
    rows.sort()
    max_cpu: list[int] = []
    max_mem: list[int] = []
    cpu = mem = 0
    for _, c, m_ in rows:
        cpu, mem = max(cpu, c), max(mem, m_)
        max_cpu.append(cpu)
        max_mem.append(mem)
    answer = ([r[0] for r in rows], max_cpu, max_mem)
    _CHEAPER[exclude] = (key, tuple(t.instance_types for t in templates), answer)
    return answer
