"""The free room of a solve's existing nodes as arrays, so finding the nodes a pod fits on is
one numpy comparison instead of a Python loop over every node.

A consolidation pass solves once per candidate over one snapshot of a cluster of hundreds of
nodes, and each pod of each solve used to test every node's free room in Python
(``quantity.fits``), and in ``kube-scheduler`` mode also score every node. ``SolveBase``
builds the arrays once per snapshot (``NodeArrays``); a solve takes the rows of the nodes it
keeps (``FreeRoom``) and updates a row when it places a pod.

Answers are those of the per-node Python checks, exactly: free room is compared as integers
with ``quantity.fits``'s rule (an amount of zero or less always fits, a resource a node lacks
is zero), and the LeastAllocated score is computed with the same IEEE operations as
``placement._least_allocated`` (each share a correctly rounded quotient of two integers below
2**53, their sum divided by their count). When an amount does not fit in 64 bits, the arrays
are not built (``NodeArrays.free`` is None) and every node is left to the exact check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from joiner.api import quantity
from joiner.api.quantity import Resources
from joiner.scheduling.types import ExistingNode

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

#: Resources kube-scheduler's LeastAllocated scores (``noderesources/least_allocated.go``
#: with the default cpu and memory weights of 1).
SCORED = (quantity.CPU, quantity.MEMORY)

#: Integers exactly representable as float64: scores are exact only below this.
_EXACT = 1 << 53


@dataclass(frozen=True, slots=True)
class NodeArrays:
    """Per node of a snapshot (rows in its try order): free room per resource column, the
    cpu and memory allocatable LeastAllocated divides by, and the rank of its name.

    ``free`` is None when an amount does not fit in int64 or a score would not be exact;
    then no vector answer is given."""

    resources: tuple[str, ...]
    free: IntArray | None
    scored_total: FloatArray
    scored_count: FloatArray
    name_rank: IntArray

    @staticmethod
    def build(nodes: Sequence[ExistingNode], resources: Sequence[str]) -> NodeArrays:
        """The arrays of ``nodes`` over ``resources`` (``SCORED`` are always columns)."""
        cols = tuple(sorted(set(resources) | set(SCORED)))
        n = len(nodes)
        names = [node.name for node in nodes]
        rank = np.empty(n, dtype=np.int64)
        rank[sorted(range(n), key=names.__getitem__)] = np.arange(n, dtype=np.int64)
        rows = [_row(node, cols) for node in nodes]
        totals = np.array([r[1] for r in rows], dtype=np.float64).reshape(n, len(SCORED))
        free: IntArray | None = None
        if not any(r[2] for r in rows):
            try:
                free = np.array([r[0] for r in rows], dtype=np.int64).reshape(n, len(cols))
            except OverflowError:
                free = None
        if free is not None:
            scored = [cols.index(r) for r in SCORED]
            if n and (np.abs(free[:, scored]) >= _EXACT // 4).any():
                free = None
        return NodeArrays(
            resources=cols,
            free=free,
            scored_total=totals,
            scored_count=(totals > 0).sum(axis=1).astype(np.float64),
            name_rank=rank,
        )


#: A node's ``NodeArrays`` row: free room per column, the scored allocatable (0 when
#: unusable), whether an allocatable is too large for an exact score.
_Row = tuple[list[int], list[int], bool]
#: ``_row`` answers by (ExistingNode id, columns), with the node (kept alive so its id stays
#: its own) and copies of the resources read: snapshots reuse the ExistingNode of a node
#: that did not change, and an answer is reused only while those are equal (a caller that
#: changed the node's dicts in place gets a fresh row).
_ROWS: dict[
    tuple[int, tuple[str, ...]], tuple[ExistingNode, Resources, Resources | None, _Row]
] = {}
_ROWS_MAX = 8192


def _row(node: ExistingNode, cols: tuple[str, ...]) -> _Row:
    hit = _ROWS.get((id(node), cols))
    if (
        hit is not None
        and hit[0] is node
        and hit[1] == node.available
        and hit[2] == node.allocatable
    ):
        return hit[3]
    alloc = node.allocatable or {}
    totals = [alloc.get(r, 0) for r in SCORED]
    row: _Row = (
        [node.available.get(r, 0) for r in cols],
        [max(t, 0) for t in totals],
        any(t >= _EXACT for t in totals),
    )
    if len(_ROWS) >= _ROWS_MAX:
        _ROWS.clear()
    kept_alloc = dict(node.allocatable) if node.allocatable is not None else None
    _ROWS[(id(node), cols)] = (node, dict(node.available), kept_alloc, row)
    return row


class FreeRoom:
    """One solve's view of ``NodeArrays``: the rows of its kept nodes (``keep``, in the
    solve's order), updated as pods are placed. ``active`` is False when the arrays could not
    be built; then ``fitting`` admits every node and callers check each one exactly."""

    def __init__(self, arrays: NodeArrays, keep: IntArray) -> None:
        self._cols = {r: j for j, r in enumerate(arrays.resources)}
        self._free = arrays.free[keep] if arrays.free is not None else None
        self._total = arrays.scored_total[keep]
        self._count = arrays.scored_count[keep]
        self._rank = arrays.name_rank[keep]
        self._n = len(keep)
        self._scored = np.array([self._cols[r] for r in SCORED], dtype=np.int64)
        self._positive = self._total > 0
        self._need: dict[int, tuple[list[int], IntArray] | None] = {}
        self._scored_need: dict[int, IntArray] = {}

    @property
    def active(self) -> bool:
        """Whether the arrays were built (else every answer is left to the exact checks)."""
        return self._free is not None

    def _columns(self, requests: Mapping[str, int]) -> tuple[list[int], IntArray] | None:
        """Columns and amounts of the positive requests; None when one is not a column or
        not an int64 (no vector answer)."""
        key = id(requests)
        if key in self._need:
            return self._need[key]
        cols: list[int] = []
        amounts: list[int] = []
        out: tuple[list[int], IntArray] | None
        try:
            for r, v in requests.items():
                if v <= 0:
                    continue
                cols.append(self._cols[r])
                amounts.append(v)
            out = (cols, np.array(amounts, dtype=np.int64))
        except (KeyError, OverflowError):
            out = None
        self._need[key] = out
        return out

    def fitting(self, requests: Mapping[str, int]) -> BoolArray:
        """Which kept nodes have room for ``requests`` now (``quantity.fits``); all True when
        there is no vector answer. ``requests`` must be a mapping that is not mutated during
        the solve (a ``PodTemplate``'s): its answer columns are memoised by identity."""
        free = self._free
        need = self._columns(requests) if free is not None else None
        if free is None or need is None or not need[0]:
            return np.ones(self._n, dtype=np.bool_)
        cols, amounts = need
        return np.asarray((free[:, cols] >= amounts).all(axis=1))

    def take(self, i: int, requests: Mapping[str, int]) -> None:
        """Node ``i`` took a pod requesting ``requests``."""
        free = self._free
        if free is None:
            return
        for r, v in requests.items():
            j = self._cols.get(r)
            if j is not None:
                free[i, j] -= v

    def _scored_requests(self, requests: Mapping[str, int]) -> IntArray:
        """The requests of the ``SCORED`` resources, memoised by identity as ``_columns``."""
        key = id(requests)
        found = self._scored_need.get(key)
        if found is None:
            found = np.array([requests.get(r, 0) for r in SCORED], dtype=np.int64)
            self._scored_need[key] = found
        return found

    def least_allocated_order(self, rows: IntArray, requests: Mapping[str, int]) -> IntArray | None:
        """``rows`` in kube-scheduler's order: highest LeastAllocated score first, then by
        name (``placement._least_allocated``, the same value); None when the arrays cannot
        give it exactly (no arrays, or a request that is not an int64 column or too large
        for an exact score): the caller scores each node itself."""
        free = self._free
        if free is None or self._columns(requests) is None:
            return None
        if any(abs(requests.get(r, 0)) >= _EXACT // 4 for r in SCORED):
            return None
        # Each share is a correctly rounded quotient of two integers below 2**53, added in
        # SCORED order and divided by the count: ``_least_allocated``'s operations, for all
        # rows and both resources at once.
        after = (free[rows][:, self._scored] - self._scored_requests(requests)).astype(np.float64)
        shares = np.divide(
            after, self._total[rows], out=np.zeros_like(after), where=self._positive[rows]
        )
        score = shares[:, 0] + shares[:, 1]
        count = self._count[rows]
        score = np.divide(score, count, out=np.zeros_like(score), where=count > 0)
        return rows[np.lexsort((self._rank[rows], -score))]
