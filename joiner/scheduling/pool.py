"""A NodePool prepared for one solve: its instance types as numpy arrays.

Filtering instance types is the scheduler's inner loop (Karpenter
``filterInstanceTypesByRequirements``), so it is vectorised: every type's allocatable minus
its DaemonSet overhead is a row of ``net``; a NodeClaim keeps its options as an index array;
"which options still fit these requests" is one comparison over the array. Requirement
compatibility (labels intersect, and an available offering the requirements allow) is a
boolean mask cached per distinct requirement set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
import numpy.typing as npt

from joiner.api import labels, quantity
from joiner.api.objects import HostPort, NodePool, PodTemplate, Taint
from joiner.api.quantity import Resources
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.types import InstanceType
from joiner.scheduling.daemonsets import host_ports_on_pool, overhead_by_type

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

#: Resources every prepared pool has (``_prepare``): a NodeClaim's headroom on them is an
#: array over all NodeClaims of a solve (``placement._ClaimIndex.headroom``).
HEADROOM = (quantity.CPU, quantity.MEMORY, quantity.PODS)

#: The key ``PreparedPool._offered_by`` holds once built (no zone is empty).
_BUILT = ("", "")
#: Requirement keys that select offerings (not instance types).
_OFFERING_KEYS = (
    labels.ZONE,
    labels.CAPACITY_TYPE,
    labels.ZONE_ID,
    labels.CAPACITY_RESERVATION_ID,
)


@dataclass
class PreparedPool:
    """One NodePool's launchable instance types and the arrays the scheduler filters."""

    nodepool: NodePool
    types: list[InstanceType]
    resources: list[str]
    net: IntArray
    capacity: IntArray
    daemon: IntArray
    daemon_overhead: list[Resources]
    remaining: dict[str, int]
    empty_reason: str | None = None
    #: Host ports the DaemonSets that run on its nodes bind (in use on every new NodeClaim).
    daemon_ports: tuple[HostPort, ...] = ()
    _masks: dict[Requirements, BoolArray] = field(default_factory=dict)
    _prices: dict[tuple[Requirement, ...], FloatArray] = field(default_factory=dict)
    _values: dict[str, BoolArray] = field(default_factory=dict)
    _domains: dict[str, frozenset[str]] = field(default_factory=dict)
    _offered: dict[tuple[str, frozenset[str] | None], BoolArray] = field(default_factory=dict)
    #: ``_offered_table``'s answer, filled in place (so copies from ``prepare`` share it).
    _offered_by: dict[tuple[str, str], BoolArray] = field(default_factory=dict)
    _signatures: dict[frozenset[str], IntArray] = field(default_factory=dict)
    #: ``stop.launches_as`` answers by (zones, capacity types, keys, options' bytes).
    dominance: dict[tuple[object, ...], bool] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.nodepool.name

    @property
    def taints(self) -> tuple[Taint, ...]:
        return self.nodepool.taints

    def vector(self, requests: Resources) -> IntArray | None:
        """``requests`` over ``resources``; None when it asks for a resource no type has."""
        out = np.zeros(len(self.resources), dtype=np.int64)
        index = self._index
        for k, v in requests.items():
            if v <= 0:
                continue
            i = index.get(k)
            if i is None:
                return None
            out[i] = v
        return out

    def mask(self, reqs: Requirements) -> BoolArray:
        """Types whose labels intersect ``reqs`` and that have an available offering ``reqs``
        allow (cached per distinct requirement set)."""
        found = self._masks.get(reqs)
        if found is None:
            found = np.fromiter(
                (
                    it.requirements.intersects(reqs) is None
                    and any(o.available and o.compatible(reqs) for o in it.offerings)
                    for it in self.types
                ),
                dtype=np.bool_,
                count=len(self.types),
            )
            self._masks[reqs] = found
        return found

    def prices(self, reqs: Requirements) -> FloatArray:
        """Each type's cheapest available offering price that ``reqs`` allow (inf if none)."""
        key = tuple(reqs.get_or_exists(k) for k in _OFFERING_KEYS)
        found = self._prices.get(key)
        if found is None:
            found = np.array(
                [
                    min(
                        (
                            o.price_per_hour
                            for o in it.offerings
                            if o.available and o.compatible(reqs)
                        ),
                        default=np.inf,
                    )
                    for it in self.types
                ],
                dtype=np.float64,
            )
            self._prices[key] = found
        return found

    def offered_in(self, zone: str, capacity_types: frozenset[str] | None = None) -> BoolArray:
        """Types with an available offering in ``zone`` that the NodePool's requirements
        allow, of one of ``capacity_types`` (None: of any), cached.

        Built for every (zone, capacity type) in one walk over the offerings: an offering
        is allowed under the requirements plus ``zone`` and ``capacity_types`` exactly when
        the requirements allow it and its own zone and capacity type are those
        (``Offering.compatible`` tests each key on its own)."""
        key = (zone, capacity_types)
        found = self._offered.get(key)
        if found is None:
            table = self._offered_table()
            found = np.zeros(len(self.types), dtype=np.bool_)
            for (z, ct), mask in table.items():
                if (
                    (z, ct) != _BUILT
                    and z == zone
                    and (capacity_types is None or ct in capacity_types)
                ):
                    found |= mask
            self._offered[key] = found
        return found

    def _offered_table(self) -> dict[tuple[str, str], BoolArray]:
        """Per (zone, capacity type), the types with an available offering there that the
        NodePool's requirements allow (built once)."""
        table = self._offered_by
        if not table:
            reqs = self.nodepool.requirements
            table[_BUILT] = np.zeros(0, dtype=np.bool_)
            n = len(self.types)
            for i, it in enumerate(self.types):
                for o in it.offerings:
                    if o.available and o.compatible(reqs):
                        mask = table.get((o.zone, o.capacity_type))
                        if mask is None:
                            mask = table[(o.zone, o.capacity_type)] = np.zeros(n, dtype=np.bool_)
                        mask[i] = True
        return table

    def signature(self, keys: frozenset[str]) -> IntArray:
        """Per type, a number equal for two types exactly when their labels on ``keys`` are
        equal (cached per key set)."""
        found = self._signatures.get(keys)
        if found is None:
            ordered = sorted(keys)
            seen: dict[tuple[object, ...], int] = {}
            found = np.array(
                [
                    seen.setdefault(
                        tuple(
                            (r.complement, tuple(sorted(r.values))) if r is not None else None
                            for r in (it.requirements.get(k) for k in ordered)
                        ),
                        len(seen),
                    )
                    for it in self.types
                ],
                dtype=np.int64,
            )
            self._signatures[keys] = found
        return found

    def domains(self, key: str) -> frozenset[str]:
        """The values of ``key`` this pool can launch into: its requirement's values when it
        lists them, else every type's single values that the requirement allows (cached)."""
        found = self._domains.get(key)
        if found is None:
            r = self.nodepool.requirements.get(key)
            if r is not None and not r.complement:
                values = set(r.values)
            else:
                values = set()
                for it in self.types:
                    tr = it.requirements.get(key)
                    if tr is not None and not tr.complement:
                        values |= tr.values
                if r is not None:
                    values = {v for v in values if r.has(v)}
            found = frozenset(values)
            self._domains[key] = found
        return found

    def values_matrix(self, key: str) -> BoolArray:
        """Per type (rows), which of the values for ``key`` any type has (columns) it has:
        every value of its requirement, so a type offered in three zones or as spot and
        on-demand has three or two (Karpenter ``InstanceTypes.SatisfiesMinValues`` unions
        ``it.Requirements.Get(key).Values()`` over the types)."""
        found = self._values.get(key)
        if found is None:
            index: dict[str, int] = {}
            rows: list[list[int]] = []
            for it in self.types:
                r = it.requirements.get(key)
                vals = sorted(r.values) if r is not None and not r.complement else []
                rows.append([index.setdefault(v, len(index)) for v in vals])
            found = np.zeros((len(self.types), len(index)), dtype=np.bool_)
            for i, cols in enumerate(rows):
                found[i, cols] = True
            self._values[key] = found
        return found

    def __post_init__(self) -> None:
        self._index = {r: i for i, r in enumerate(self.resources)}
        #: The columns of ``HEADROOM`` in ``resources``.
        self.headroom_columns = np.array([self._index[r] for r in HEADROOM], dtype=np.int64)
        #: ``net`` on the ``HEADROOM`` columns only, gathered once (``net`` is never changed in
        #: place): a NodeClaim's headroom reads its options' rows of it at every commit.
        self.headroom_net: IntArray = np.ascontiguousarray(self.net[:, self.headroom_columns])


#: Prepared pools by (NodePool, instance-type identities, DaemonSets, extra resources), with
#: the instance types they were built from (kept alive so the identities stay valid).
#: Callers pass the cloud's cached type lists, so consecutive solves (a provisioning pass,
#: each consolidation simulation, each baseline estimate) share the arrays and mask caches.
_PREPARED: dict[tuple[object, ...], tuple[tuple[InstanceType, ...], PreparedPool]] = {}
_PREPARED_MAX = 4096
#: The last prepared pool per (NodePool, type list) identity, with the objects themselves
#: (kept alive, so their ids are not reused while the entry lives).
_BY_IDENTITY: dict[
    tuple[int, int],
    tuple[NodePool, Sequence[InstanceType], tuple[PodTemplate, ...], tuple[str, ...], PreparedPool],
] = {}


#: Rows from which ``rows_fit`` compares column by column.
_COLUMNWISE_FROM = 32


def rows_fit(rows: IntArray, need: IntArray) -> BoolArray:
    """``(rows >= need).all(axis=1)``: which rows (an ``(n, r)`` array) have at least
    ``need`` (``r`` values) in every column. Past a few dozen rows it compares column by
    column: numpy reduces along a short last axis several times slower than it compares a
    column (400 rows of 3: about 11 against 4 microseconds)."""
    if rows.shape[0] < _COLUMNWISE_FROM or rows.shape[1] == 0:
        return cast("BoolArray", (rows >= need).all(axis=1))
    out: BoolArray = rows[:, 0] >= need[0]
    for j in range(1, rows.shape[1]):
        out &= rows[:, j] >= need[j]
    return out


def prepare(
    nodepool: NodePool,
    instance_types: Sequence[InstanceType],
    daemonsets: Sequence[PodTemplate],
    remaining: dict[str, int],
    extra_resources: Sequence[str] = (),
) -> PreparedPool:
    """Keep the types the pool can launch and build their arrays.

    A pure function of its arguments, memoised: a hit shares the arrays and requirement
    masks of an earlier call (none of which a solve mutates) with its own ``remaining``.
    """
    ds, extra = tuple(daemonsets), tuple(extra_resources)
    # Fast path: the very same NodePool and type list objects as a recent call (callers keep
    # the cloud's list), so the key below (one id per type) need not be built.
    same = _BY_IDENTITY.get((id(nodepool), id(instance_types)))
    if (
        same is not None
        and same[0] is nodepool
        and same[1] is instance_types
        and same[2] == ds
        and same[3] == extra
    ):
        return replace(same[4], remaining=dict(remaining))
    key = (nodepool, tuple(map(id, instance_types)), ds, extra)
    hit = _PREPARED.get(key)
    if hit is not None and len(hit[0]) == len(instance_types):
        pool = hit[1]
    else:
        pool = _prepare(nodepool, instance_types, daemonsets, remaining, extra_resources)
        if len(_PREPARED) >= _PREPARED_MAX:
            _PREPARED.clear()
        _PREPARED[key] = (tuple(instance_types), pool)
    if len(_BY_IDENTITY) >= _PREPARED_MAX:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[(id(nodepool), id(instance_types))] = (nodepool, instance_types, ds, extra, pool)
    return replace(pool, remaining=dict(remaining))


def _prepare(
    nodepool: NodePool,
    instance_types: Sequence[InstanceType],
    daemonsets: Sequence[PodTemplate],
    remaining: dict[str, int],
    extra_resources: Sequence[str],
) -> PreparedPool:
    reqs = nodepool.requirements
    conflict = nodepool.own_label_conflict()
    types = [
        it
        for it in instance_types
        if conflict is None
        and it.requirements.intersects(reqs) is None
        and it.available_offerings(reqs)
    ]
    overhead = overhead_by_type(nodepool, types, daemonsets)
    names = sorted(
        {k for it in types for k in it.allocatable} | set(extra_resources) | set(HEADROOM)
    )
    index = {r: i for i, r in enumerate(names)}
    net = np.zeros((len(types), len(names)), dtype=np.int64)
    cap = np.zeros((len(types), len(names)), dtype=np.int64)
    dsm = np.zeros((len(types), len(names)), dtype=np.int64)
    ds_list: list[Resources] = []
    for row, it in enumerate(types):
        ds = overhead.get(it.name, {})
        ds_list.append(ds)
        for k, v in it.allocatable.items():
            net[row, index[k]] = v - ds.get(k, 0)
        for k, v in ds.items():
            if k in index:
                dsm[row, index[k]] = v
            else:
                net[row, :] = -1  # a DaemonSet needs a resource the type lacks: nothing fits
        for k, v in it.capacity.items():
            if k in index:
                cap[row, index[k]] = v
    reason = None
    if conflict is not None:
        reason = f"NodePool {nodepool.name} can launch nothing: {conflict}"
    elif not types:
        reason = (
            f"NodePool {nodepool.name} has no instance type with an available offering that "
            f"satisfies its requirements ({reqs.describe()})"
        )
    return PreparedPool(
        nodepool=nodepool,
        types=types,
        resources=names,
        net=net,
        capacity=cap,
        daemon=dsm,
        daemon_overhead=ds_list,
        remaining=dict(remaining),
        empty_reason=reason,
        daemon_ports=host_ports_on_pool(nodepool, types, daemonsets),
    )
