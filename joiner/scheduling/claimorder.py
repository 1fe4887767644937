"""The NodeClaims a solve opened, kept in the order a pod tries them and grouped by what the
candidate filters of ``scheduler._Solve._try_claims`` read, so that finding the NodeClaim a
pod goes to costs about the same with 100 NodeClaims open as with 100,000.

The order is Karpenter's (``pkg/controllers/provisioning/scheduling/scheduler.go``
``Scheduler.add`` sorts ``newNodeClaims`` by pod count, then ``addToInflightNode`` takes
the first in that order that can add the pod): fewest pods first, then as that in-place
re-sort leaves NodeClaims of equal counts (``_Solve._claim_order``,
``placement._ClaimIndex.counted``: a tie key per NodeClaim). Each NodeClaim sits in one
bucket per (class, pod count), a sorted list of (tie key, NodeClaim index); its class is
what the filters read of it: its domain code on each topology key (-1 while undecided) and,
per hostname spread or anti-affinity group, how many of the group's pods it holds, capped
one above the largest limit a pod can put on that group. A pod's summary admits or refuses
a whole class at once, and the admitted classes' buckets are merged in (pod count, tie key)
order. What only a pod's requests and relaxation step decide (headroom on cpu, memory and
pods; NodeClaims that can never take the pod) is checked per NodeClaim as they come. A
NodeClaim whose headroom is below the smallest request of every pod of the solve on cpu,
memory or pods can take no pod and leaves its bucket.

The buckets are built once a solve has ``ACTIVE_FROM`` NodeClaims; a smaller solve takes the
arrays throughout. The answer is the numpy filter's exactly (``_Solve._masked_claims``): the
same NodeClaims in the same order. When the classes are too many or too many NodeClaims fail
a pod's own checks (this index would then cost more than the arrays), ``candidates`` yields
None and the caller takes the arrays for the rest.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: A NodeClaim's class: its domain code per topology key, then its capped count per
#: hostname group (``ClaimOrder.host_ids`` order).
ClassKey = tuple[int, ...]

#: Past this many classes a pod's candidates come from the arrays (matching every class
#: would cost more than one comparison over every NodeClaim).
CLASSES_MAX = 128
#: NodeClaims a pod's own checks may refuse before ``candidates`` gives up.
SKIPS_MAX = 64
#: The buckets are built once a solve has this many NodeClaims: below, one numpy filter
#: over every NodeClaim costs less than keeping them (most solves never get there).
ACTIVE_FROM = 512
#: Past this many hostname groups the classes are not kept (each commit would build a long
#: key, and NodeClaims would spread over too many classes): the arrays answer every pod.
HOST_GROUPS_MAX = 16


@dataclass(frozen=True, slots=True)
class ClassFilter:
    """What one pod's topology summary admits, as positions in a ``ClassKey``: ``allowed``
    (position, codes allowed; -1, undecided, always is), ``forbidden`` (position, codes
    refused) and ``host`` (position, the most of that group's pods a NodeClaim may hold)."""

    allowed: tuple[tuple[int, frozenset[int]], ...]
    forbidden: tuple[tuple[int, frozenset[int]], ...]
    host: tuple[tuple[int, int], ...]

    def admits(self, key: ClassKey) -> bool:
        """Whether NodeClaims of class ``key`` pass the topology filters."""
        for pos, codes in self.allowed:
            if key[pos] not in codes:
                return False
        for pos, codes in self.forbidden:
            if key[pos] in codes:
                return False
        return all(key[pos] <= limit for pos, limit in self.host)


class ClaimOrder:
    """The buckets of one solve's NodeClaims (see the module docstring).

    ``n_keys``: how many topology keys lead a ``ClassKey``; ``host_caps``: per hostname
    group (by id), the count at which its NodeClaims are capped (one above the largest limit
    any pod of the solve can set on it); ``floor``: per ``pool.HEADROOM`` resource, the
    smallest request among the solve's pods. Up to ``HOST_GROUPS_MAX`` hostname groups."""

    def __init__(self, n_keys: int, host_caps: dict[int, int], floor: Sequence[int]) -> None:
        #: Whether the classes are kept (``HOST_GROUPS_MAX``); when not, ``candidates``
        #: always leaves the answer to the arrays.
        self.enabled = len(host_caps) <= HOST_GROUPS_MAX
        #: Whether the buckets are built (``ACTIVE_FROM``; ``_ClaimIndex.place`` builds them).
        self.active = False
        self.n_keys = n_keys
        self.host_ids = tuple(host_caps)
        self.caps = tuple(host_caps.values())
        self._host_pos = {g: n_keys + j for j, g in enumerate(self.host_ids)}
        self._floor = tuple(floor)
        #: class -> pod count -> (tie key, NodeClaim index), ascending.
        self._classes: dict[ClassKey, dict[int, list[tuple[int, int]]]] = {}
        #: NodeClaim index -> its (class, pod count, tie key), while it is in a bucket.
        self._where: dict[int, tuple[ClassKey, int, int]] = {}
        #: NodeClaim index -> its headroom on ``pool.HEADROOM``.
        self._headroom: dict[int, tuple[int, ...]] = {}

    def host_position(self, group_id: int, limit: int) -> int | None:
        """The ``ClassKey`` position of hostname group ``group_id``; None when the group is
        not in the key or ``limit`` reaches its cap (the capped count cannot answer)."""
        pos = self._host_pos.get(group_id)
        if pos is None or limit >= self.caps[pos - self.n_keys]:
            return None
        return pos

    def place(self, i: int, key: ClassKey, pods: int, tie: int, headroom: tuple[int, ...]) -> None:
        """NodeClaim ``i`` now has class ``key``, ``pods`` pods, tie key ``tie`` and
        ``headroom``."""
        old = self._where.pop(i, None)
        if old is not None:
            levels = self._classes[old[0]]
            bucket = levels[old[1]]
            del bucket[bisect_left(bucket, (old[2], i))]
            if not bucket:
                del levels[old[1]]
                if not levels:
                    del self._classes[old[0]]
        self._headroom[i] = headroom
        if any(h < f for h, f in zip(headroom, self._floor, strict=True)):
            return  # full for every pod of the solve: never a candidate again
        insort(self._classes.setdefault(key, {}).setdefault(pods, []), (tie, i))
        self._where[i] = (key, pods, tie)

    def candidates(
        self, admits: ClassFilter, need: tuple[int, ...], dead: npt.NDArray[np.bool_]
    ) -> Iterator[int | None]:
        """The NodeClaims a pod may go to, fewest pods first, then by tie key: those of the
        classes ``admits`` passes with headroom for ``need`` and not ``dead``. Yields None
        (and stops) when the arrays would answer for less; the caller then takes the arrays'
        candidates after those already yielded. Valid while no NodeClaim changes."""
        if not (self.enabled and self.active) or len(self._classes) > CLASSES_MAX:
            yield None
            return
        matching = [levels for key, levels in self._classes.items() if admits.admits(key)]
        headroom = self._headroom
        skipped = 0
        for pods in sorted({p for levels in matching for p in levels}):
            lists = [levels[pods] for levels in matching if pods in levels]
            for _tie, i in lists[0] if len(lists) == 1 else heapq.merge(*lists):
                room = headroom[i]
                if dead[i] or any(r < n for r, n in zip(room, need, strict=True)):
                    skipped += 1
                    if skipped > SKIPS_MAX:
                        yield None
                        return
                    continue
                yield i
