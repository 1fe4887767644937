"""Per-solve bookkeeping of the provisioning simulation (``scheduler``): the NodeClaims a
solve opens (``_Claim``, with ``_ClaimIndex``'s column arrays over them), the existing nodes
(``_Existing``), one placement attempt (``_Attempt``) and what is still in force for a pod
(``_Prefs``, relaxed in Karpenter's ``preferences.go`` order); the taint and host-port
predicates; the queue that tries failed pods again (``_Queue``, Karpenter ``queue.go``), and
the queue and NodePool orders (Karpenter ``queue.go``, kube-scheduler ``PrioritySort``,
Karpenter ``utils/nodepool.OrderByWeight``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from joiner.api import labels, quantity
from joiner.api.objects import (
    PREFER_NO_SCHEDULE,
    SCHEDULE_ANYWAY,
    HostPort,
    PodTemplate,
    Taint,
    tolerates_all,
)
from joiner.api.quantity import Resources
from joiner.api.requirements import Requirements
from joiner.scheduling import claimorder
from joiner.scheduling.base import NodeBase
from joiner.scheduling.claimorder import ClaimOrder
from joiner.scheduling.pool import HEADROOM, BoolArray, IntArray, PreparedPool
from joiner.scheduling.topology import Active, Summary
from joiner.scheduling.types import BoundPod, ExistingNode, NodePoolTemplate, PodRequest


@dataclass
class _Claim:
    pool: PreparedPool
    requirements: Requirements
    options: IntArray
    requests: IntArray
    index: int
    pods: list[str] = field(default_factory=list)
    ports: list[HostPort] = field(default_factory=list)
    templates: list[PodTemplate] = field(default_factory=list)
    #: The placeholder hostname its pods' hostname topology counts them under (built once:
    #: every attempt on the NodeClaim reads it).
    hostname: str = field(init=False)
    #: ``pool.headroom_net`` at its largest over ``options`` (``headroom_top``), kept
    #: while ``tops_of`` is ``options``: what the headroom index is kept from.
    tops: _Tops | None = None
    tops_of: IntArray | None = None
    #: The maximum taken plainly (``headroom_top``) while ``top_of`` is ``options``, and
    #: how many times it was: a NodeClaim whose options narrowed more than twice gets
    #: ``tops`` (building it costs more than a few plain maxima; most NodeClaims of a
    #: hostname-spread solve never narrow).
    top: IntArray | None = None
    top_of: IntArray | None = None
    taken: int = 0
    #: ``pool.net[options]`` while ``rows_of`` is ``options`` (``net_rows``).
    rows: IntArray | None = None
    rows_of: IntArray | None = None

    def __post_init__(self) -> None:
        self.hostname = f"hostname-placeholder-{self.index:05d}"

    def net_rows(self) -> IntArray:
        """``pool.net[options]``: each option's allocatable less DaemonSet overhead, rows
        in ``options``' order, kept while the options are the same array."""
        if self.rows is None or self.rows_of is not self.options:
            self.rows = self.pool.net[self.options]
            self.rows_of = self.options
        return self.rows

    def narrow_to(
        self, rows: IntArray, fits: BoolArray, matching: IntArray, options: IntArray
    ) -> None:
        """Take ``options``: the rows of ``matching`` (a subset of the options, ``rows``
        their ``pool.net`` rows) that ``fits`` keeps. Their rows are kept, so the next
        ``net_rows`` needs no gather, and, where ``matching`` is the options themselves,
        their headroom maximum follows the options dropped instead of being taken again."""
        same = options.size == rows.shape[0]
        self.rows = rows if same else rows[fits]
        self.rows_of = options
        tops = self.tops
        if tops is not None and self.tops_of is self.options and matching is self.options:
            if not same:
                tops.remove(matching[~fits].tolist())
            self.tops_of = options
        if same and self.top_of is self.options:
            self.top_of = options
        self.options = options

    def headroom_top(self) -> IntArray:
        """``pool.headroom_net[options].max(axis=0)``: taken plainly the first two times
        the options change, then followed through ``narrow_to`` by ``_Tops``."""
        if self.tops is not None and self.tops_of is self.options:
            return self.tops.top
        if self.top is not None and self.top_of is self.options:
            return self.top
        self.taken += 1
        if self.taken > 2:
            self.tops = _Tops(self.pool.headroom_net, self.options)
            self.tops_of = self.options
            return self.tops.top
        self.top = self.pool.headroom_net[self.options].max(axis=0)
        self.top_of = self.options
        return self.top


class _Tops:
    """The largest value of each column of ``net`` over a shrinking set of rows: per
    column, the rows in descending order of it and the first one still in the set. Rows
    leave from the small end as a NodeClaim fills (its largest types stay longest), so
    the maximum rarely moves and is not taken again over every row that is left."""

    __slots__ = ("alive", "at", "order", "top", "values")

    def __init__(self, net: IntArray, rows: IntArray) -> None:
        part = net[rows]
        self.alive = set(rows.tolist())
        self.order: list[list[int]] = []
        self.values: list[list[int]] = []
        for c in range(part.shape[1]):
            by = np.argsort(-part[:, c], kind="stable")
            self.order.append(rows[by].tolist())
            self.values.append(part[by, c].tolist())
        self.at = [0] * part.shape[1]
        self.top: IntArray = part.max(axis=0)

    def remove(self, gone: list[int]) -> None:
        """Rows ``gone`` leave the set (at least one row stays)."""
        self.alive.difference_update(gone)
        moved = False
        for c, order in enumerate(self.order):
            j = self.at[c]
            while order[j] not in self.alive:
                j += 1
            if j != self.at[c]:
                self.at[c] = j
                moved = True
        if moved:
            self.top = np.array(
                [values[j] for values, j in zip(self.values, self.at, strict=True)], dtype=np.int64
            )


@dataclass(slots=True)
class _Existing:
    node: ExistingNode
    available: Resources
    requirements: Requirements
    domains: dict[str, str]
    ports: list[HostPort] = field(default_factory=list)


class _Nodes(Sequence[_Existing]):
    """A solve's existing nodes (``NodeBase`` of its snapshot, in try order), each made into
    its mutable ``_Existing`` the first time it is asked for."""

    def __init__(self, bases: Sequence[NodeBase]) -> None:
        self._bases = bases
        self._made: list[_Existing | None] = [None] * len(bases)

    def __len__(self) -> int:
        return len(self._bases)

    def name(self, i: int) -> str:
        """Node ``i``'s name (without making its ``_Existing``)."""
        return self._bases[i].node.name

    @overload
    def __getitem__(self, i: int) -> _Existing: ...
    @overload
    def __getitem__(self, i: slice) -> list[_Existing]: ...
    def __getitem__(self, i: int | slice) -> _Existing | list[_Existing]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        e = self._made[i]
        if e is None:
            b = self._bases[i]
            e = self._made[i] = _Existing(
                node=b.node,
                available=b.node.available,
                requirements=b.requirements,
                domains=b.domains,
                ports=list(b.ports),
            )
        return e


class _ClaimIndex:
    """Column arrays over this solve's NodeClaims, so choosing candidates for a pod is a few
    numpy operations instead of a Python loop over thousands of NodeClaims; and the same
    NodeClaims in try order, by class (``order``, ``claimorder``), so that most pods read
    only the few NodeClaims they may go to.

    ``keys``: the topology keys other than the hostname; ``host_caps`` and ``floor`` as
    ``ClaimOrder`` takes them."""

    def __init__(
        self,
        keys: Sequence[str],
        host_caps: dict[int, int] | None = None,
        floor: Sequence[int] = (0,) * len(HEADROOM),
        *,
        karpenter_ties: bool = True,
    ) -> None:
        self.order = ClaimOrder(len(keys), dict(host_caps or {}), floor)
        self.karpenter_ties = karpenter_ties
        self.capacity = 64
        self.n = 0
        self.pods = np.zeros(self.capacity, dtype=np.int64)
        self.codes = {k: np.full(self.capacity, -1, dtype=np.int64) for k in keys}
        self.code_of: dict[str, dict[str, int]] = {k: {} for k in keys}
        #: Per key, its position in a ``claimorder.ClassKey``.
        self.position = {k: j for j, k in enumerate(keys)}
        self.host: dict[int, IntArray] = {}
        #: ``existing.DeadKey`` -> the NodeClaims that can never take such a pod.
        self.dead: dict[tuple[object, ...], npt.NDArray[np.bool_]] = {}
        #: Per NodeClaim, its headroom on ``HEADROOM`` (cpu, memory, pods): the most any of
        #: its options offers after DaemonSet overhead, less its pods' requests. A pod
        #: requesting more of one of them fits none of its options (set at every commit).
        self.headroom = np.zeros((self.capacity, len(HEADROOM)), dtype=np.int64)
        #: Per NodeClaim, its place among NodeClaims of as many pods (``claim_order``):
        #: its index while it holds one pod, then minus the serial of the commit that
        #: last gave it a pod (the latest first).
        self.tie = np.zeros(self.capacity, dtype=np.int64)
        self._commits = 0

    def counted(self, index: int, pods: int) -> None:
        """NodeClaim ``index`` now holds ``pods`` pods (one more than before).

        Karpenter re-sorts ``newNodeClaims`` by pod count before each pod tries them
        (``pkg/controllers/provisioning/scheduling/scheduler.go`` ``Scheduler.add``), in
        place and from the order the last sort left, with one NodeClaim changed since. A new
        NodeClaim is appended, so it comes last among those of one pod; a NodeClaim that
        gains a pod was before every NodeClaim that already had its new count, so it comes
        first among them. That is what Go's ``sort.Slice`` (``sort/zsortfunc.go``
        ``pdqsort_func``) gives up to 12 NodeClaims (an insertion sort, stable) and from 50
        (``partialInsertionSort_func`` shifts the one misplaced NodeClaim into place), unless
        a pivot sample of ``choosePivot_func`` falls on it; between 13 and 49 it partitions,
        and its order among equal counts is not followed. Without ``karpenter_ties`` the tie
        key is the index: creation order."""
        self.pods[index] = pods
        if pods == 1 or not self.karpenter_ties:
            self.tie[index] = index
        else:
            self._commits += 1
            self.tie[index] = -self._commits

    def _grow(self) -> None:
        old = self.capacity
        self.capacity *= 2

        def widen(a: Any, fill: Any) -> Any:
            out = np.full(self.capacity, fill, dtype=a.dtype)
            out[:old] = a
            return out

        self.pods = widen(self.pods, 0)
        self.tie = widen(self.tie, 0)
        self.codes = {k: widen(v, -1) for k, v in self.codes.items()}
        self.host = {k: widen(v, 0) for k, v in self.host.items()}
        self.dead = {k: widen(v, False) for k, v in self.dead.items()}
        headroom = np.zeros((self.capacity, len(HEADROOM)), dtype=np.int64)
        headroom[:old] = self.headroom
        self.headroom = headroom

    def append(self) -> None:
        if self.n == self.capacity:
            self._grow()
        self.n += 1

    def set_domains(self, index: int, reqs: Requirements) -> None:
        for key, arr in self.codes.items():
            r = reqs.get(key)
            if r is not None and not r.complement and len(r.values) == 1:
                value = next(iter(r.values))
                arr[index] = self.code_of[key].setdefault(value, len(self.code_of[key]))

    def host_counts(self, group_id: int) -> IntArray:
        found = self.host.get(group_id)
        if found is None:
            found = np.zeros(self.capacity, dtype=np.int64)
            self.host[group_id] = found
        return found

    def codes_of(self, key: str, values: Iterable[str]) -> list[int]:
        """The codes of those of ``values`` some NodeClaim has had as its ``key`` domain."""
        code_of = self.code_of[key]
        return [code_of[v] for v in values if v in code_of]

    def place(self, index: int) -> None:
        """Move NodeClaim ``index`` to its bucket in ``order`` after a commit changed it.
        The buckets are built once the solve has ``claimorder.ACTIVE_FROM`` NodeClaims
        (below, the arrays cost less); until then this only counts."""
        order = self.order
        if not order.enabled:
            return
        if not order.active:
            if self.n < claimorder.ACTIVE_FROM:
                return
            order.active = True
            for i in range(self.n):
                if i != index and self.pods[i] > 0:  # placed NodeClaims, not one being tried
                    self._move(i)
        self._move(index)

    def _move(self, index: int) -> None:
        key = [int(arr[index]) for arr in self.codes.values()]
        for group_id, cap in zip(self.order.host_ids, self.order.caps, strict=True):
            counts = self.host.get(group_id)
            key.append(0 if counts is None else min(int(counts[index]), cap))
        room = tuple(int(v) for v in self.headroom[index])
        self.order.place(index, tuple(key), int(self.pods[index]), int(self.tie[index]), room)

    def dead_mask(self, key: tuple[object, ...]) -> npt.NDArray[np.bool_]:
        found = self.dead.get(key)
        if found is None:
            found = np.zeros(self.capacity, dtype=np.bool_)
            self.dead[key] = found
        return found


@dataclass
class _Attempt:
    """One try at placing one pod under one relaxation step."""

    pod: PodRequest
    prefs: _Prefs
    terms: list[Requirements]
    active: Active
    #: Why targets refused the pod, each a text or a function giving it (formatted only if
    #: the pod ends unschedulable: most refusals are followed by a placement elsewhere).
    reasons: list[str | Callable[[], str]]
    summaries: dict[Requirements, Summary] = field(default_factory=dict)

    def scratch(self) -> _Attempt:
        """This attempt with an empty list of reasons (the same summaries): what
        ``dataclasses.replace(self, reasons=[])`` gives, without its field walk."""
        return _Attempt(self.pod, self.prefs, self.terms, self.active, [], self.summaries)


class _Prefs:
    """What is still in force for one pod; ``relax`` drops one preference (Karpenter order)."""

    def __init__(self, t: PodTemplate, pns_exists: bool) -> None:
        self.t = t
        self.pod_affinity = [w[1] for w in t.preferred_pod_affinity]
        self.pod_anti = [w[1] for w in t.preferred_pod_anti_affinity]
        self.node = [w[1] for w in t.preferred_affinity]
        self.anyway = [c for c in t.spread if c.when_unsatisfiable == SCHEDULE_ANYWAY]
        self.tolerate_pns = not pns_exists
        self.step = 0
        #: Each term ``terms`` gave -> its required part (``strict``).
        self.strict_of: dict[Requirements, Requirements] = {}

    def active(self) -> Active:
        base = Active.required(self.t)
        if not (self.anyway or self.pod_affinity or self.pod_anti):
            return base
        return Active(
            (*base.spread, *self.anyway),
            (*base.affinity, *self.pod_affinity),
            (*base.anti_affinity, *self.pod_anti),
        )

    def terms(self, volume_terms: Sequence[Requirements]) -> list[Requirements]:
        """The alternatives a node must satisfy one of: each required term with the
        heaviest preferred node term still in force and each volume term merged in. Each
        one's required term alone is remembered in ``strict_of`` (nothing to remember, and
        nothing built, when no preference or volume is merged: most pods, on the
        scheduler's per-attempt path)."""
        self.strict_of = {}
        if not self.node and not volume_terms:
            return list(self.t.requirement_terms())
        out = []
        for base in self.t.requirement_terms():
            term = base.merge(self.node[0]) if self.node else base
            for merged in [term.merge(v) for v in volume_terms] if volume_terms else [term]:
                self.strict_of.setdefault(merged, base)
                out.append(merged)
        return out

    def strict(self, term: Requirements) -> Requirements:
        """``term``'s required part: the pod's node selector and required affinity term,
        without the preferred node term or the volumes' zones, which is what topology spread
        counts domains by (Karpenter ``scheduler.go`` ``updateCachedPodData``
        ``StrictRequirements``: "only required node affinities can actually reduce pod
        domains"; ``nodeclaim.go`` and ``existingnode.go`` ``CanAdd`` pass it to
        ``Topology.AddRequirements``)."""
        return self.strict_of.get(term, term)

    def relax(self) -> bool:
        self.step += 1
        for prefs in (self.pod_affinity, self.pod_anti, self.node, self.anyway):
            if prefs:
                prefs.pop(0)
                return True
        if not self.tolerate_pns:
            self.tolerate_pns = True
            return True
        return False


def order_by_weight(templates: Sequence[NodePoolTemplate]) -> list[NodePoolTemplate]:
    """NodePools in the order a pod tries them for a new NodeClaim: higher ``weight`` first,
    equal weights by name in descending order (Karpenter ``pkg/utils/nodepool``
    ``OrderByWeight``: ``nps[a].Name > nps[b].Name``). Found by ``make diff-karpenter``
    (case taint-two-pools)."""
    by_name = sorted(templates, key=lambda t: t.nodepool.name, reverse=True)
    return sorted(by_name, key=lambda t: -t.nodepool.weight)


def _blocking_taint(t: PodTemplate, taints: tuple[Taint, ...], tolerate_pns: bool) -> Taint | None:
    taint = tolerates_all(t.tolerations, taints)
    if taint is not None or tolerate_pns:
        return taint
    for tt in taints:
        if tt.effect == PREFER_NO_SCHEDULE and not any(x.tolerates(tt) for x in t.tolerations):
            return tt
    return None


def _ports_conflict(wanted: Sequence[HostPort], used: Sequence[HostPort]) -> bool:
    return any(w.conflicts(u) for w in wanted for u in used)


def _describe_need(pool: PreparedPool, need: IntArray) -> str:
    return quantity.format_resources(
        {pool.resources[i]: int(v) for i, v in enumerate(need) if v > 0}
    )


def _no_offering(pool: PreparedPool, wanted: Requirements, volumes: str = "") -> str:
    """Why no offering of ``pool`` takes a pod wanting ``wanted``; ``volumes`` names the
    claims whose volumes impose part of it (``PodRequest.volumes``)."""
    return (
        f"NodePool {pool.name}: no instance type with an available offering satisfies "
        f"{wanted.describe() or 'the pod'} together with the NodePool's requirements "
        f"({pool.nodepool.requirements.describe()})"
        + (f"; the pod's volumes require: PersistentVolumeClaim {volumes}" if volumes else "")
    )


def _no_room(pool: PreparedPool, need: IntArray, pods: int, options: int, matching: int) -> str:
    what = _describe_need(pool, need)
    if pods:
        what = f"{what} (this pod plus the NodeClaim's other pods)"
    elif options < len(pool.types):
        what = (
            f"{what} (the NodePool's limits leave {options} of its "
            f"{len(pool.types)} instance types)"
        )
    return (
        f"NodePool {pool.name}: none of the {matching} matching instance types has room for "
        f"{what} plus DaemonSet overhead"
    )


def _fifo_key(pod: PodRequest) -> tuple[int, int, str]:
    """kube-scheduler's queue (``queuesort/PrioritySort``): higher priority first, then
    earlier creation."""
    return (-pod.template.priority_value, pod.order, pod.uid)


def _least_allocated(e: _Existing, requests: Resources) -> float:
    """kube-scheduler NodeResourcesFit LeastAllocated: mean free share of cpu and memory
    after placing the pod (higher is better); what the node's nominated pods hold
    (``ExistingNode.held``) counts as free, as kube-scheduler scores without them."""
    alloc = e.node.allocatable
    if not alloc:
        return 0.0
    held = e.node.held or {}
    shares = []
    for res in (quantity.CPU, quantity.MEMORY):
        total = alloc.get(res, 0)
        if total > 0:
            free = e.available.get(res, 0) + held.get(res, 0)
            shares.append((free - requests.get(res, 0)) / total)
    return sum(shares) / len(shares) if shares else 0.0


def _queue_key(pod: PodRequest) -> tuple[int, int, int, str]:
    r = pod.template.requests
    return (-r.get(quantity.CPU, 0), -r.get(quantity.MEMORY, 0), pod.order, pod.uid)


class _Queue:
    """Karpenter's scheduling queue (``pkg/controllers/provisioning/scheduling/queue.go``
    ``Queue``, driven by ``scheduler.go`` ``Scheduler.Solve``): ``pods`` in the order given
    (``_queue_key`` or ``_fifo_key``), popped from the front; a pod that failed is pushed to
    the back (``Queue.Push`` records the queue's length then), and ``pop`` returns None once
    the queue is empty or the pod at its front was pushed when the queue was as long as it
    is now (``Queue.Pop``): every pod left has failed since the last placement, so another
    round could only fail the same way. A pod is keyed by its position in ``pods`` (Karpenter
    keys by pod UID)."""

    def __init__(self, pods: Sequence[PodRequest]) -> None:
        self._pods: deque[tuple[int, PodRequest]] = deque(enumerate(pods))
        #: Position in ``pods`` -> the queue's length right after the pod was pushed back.
        self._last_len: dict[int, int] = {}

    def pop(self) -> tuple[int, PodRequest] | None:
        """The next pod and its position, or None when no progress is left to make."""
        if not self._pods:
            return None
        key = self._pods[0][0]
        if self._last_len.get(key) == len(self._pods):
            return None
        return self._pods.popleft()

    def push(self, key: int, pod: PodRequest) -> None:
        """Put ``pod`` (position ``key``), which failed, at the back to be tried again."""
        self._pods.append((key, pod))
        self._last_len[key] = len(self._pods)


def provisioning_order(pods: Sequence[PodRequest]) -> list[PodRequest]:
    """``pods`` in the order a ``provisioner``-mode solve places them (Karpenter's queue:
    CPU, then memory, descending; then creation order). A solve reads pods only through
    their templates and volume terms in this order (uids just label the result), so two
    inputs with the same sequence of those get the same answer up to the uids."""
    return sorted(pods, key=_queue_key)


def _explain(reasons: list[str | Callable[[], str]], pools: list[PreparedPool]) -> str:
    if not pools:
        return "no NodePool is defined"
    parts = list(dict.fromkeys(r if isinstance(r, str) else r() for r in reasons))
    parts += [p.empty_reason for p in pools if p.empty_reason]
    return "; ".join(parts) if parts else "no NodePool can launch a node for it"


def domain_universe(
    pods: Sequence[PodRequest],
    pools: Sequence[PreparedPool],
    node_domains: Callable[[str], dict[str, set[tuple[Taint, ...]]]],
    anti_keys: Sequence[tuple[str, str]],
    exclude: frozenset[str] | set[str],
) -> tuple[dict[str, set[str]], dict[str, dict[str, list[tuple[Taint, ...]]]], frozenset[str]]:
    """Per topology key the pods use (spread, pod (anti-)affinity, and running pods'
    required anti-affinity on nodes not in ``exclude``): every domain value (NodePools'
    requirements and labels over their instance types, plus existing nodes), the distinct
    taint sets offering each value, and the keys some NodePool can set (Karpenter
    ``topology.go`` ``buildDomainGroups``). ``node_domains(key)``: per value of ``key`` on
    the existing nodes, their distinct taint sets (``SolveBase.domains``)."""
    keys = {c.key for p in pods for c in p.template.spread}
    keys |= {
        term.key
        for p in pods
        for term in (
            *p.template.pod_affinity,
            *p.template.pod_anti_affinity,
            *(w[1] for w in p.template.preferred_pod_affinity),
            *(w[1] for w in p.template.preferred_pod_anti_affinity),
        )
    }
    keys |= {key for node, key in anti_keys if node not in exclude}
    universe: dict[str, set[str]] = {k: set() for k in keys}
    taints: dict[str, dict[str, list[tuple[Taint, ...]]]] = {k: {} for k in keys}
    launchable: set[str] = set()
    for key in keys:
        for pool in pools:
            values = pool.domains(key)
            universe[key] |= values
            if values:
                launchable.add(key)
            for v in values:
                taints[key].setdefault(v, []).append(pool.taints)
        for value, sets in node_domains(key).items():
            universe[key].add(value)
            offered = taints[key].setdefault(value, [])
            offered.extend(ts for ts in sets if ts not in offered)
    return universe, taints, frozenset(launchable)


def referenced_keys(
    pods: Sequence[PodRequest], bound: Sequence[BoundPod], daemonsets: Sequence[PodTemplate]
) -> frozenset[str]:
    """Label keys whose value on a template node can change where these pods go: node
    selection (required, preferred, volume topology), topology keys of spread and pod
    (anti-)affinity, bound pods' anti-affinity keys, and the zone (a group's zones)."""
    keys = {labels.ZONE}
    seen: set[int] = set()
    for p in pods:
        for volume in p.volume_terms:
            keys.update(volume.keys())
        t = p.template
        if id(t) in seen:
            continue
        seen.add(id(t))
        for term in t.requirement_terms():
            keys.update(term.keys())
        for _, reqs in t.preferred_affinity:
            keys.update(reqs.keys())
        keys.update(c.key for c in t.spread)
        for affinity in (
            *t.pod_affinity,
            *t.pod_anti_affinity,
            *(w[1] for w in t.preferred_pod_affinity),
            *(w[1] for w in t.preferred_pod_anti_affinity),
        ):
            keys.add(affinity.key)
    for b in bound:
        keys.update(term.key for term in b.anti_affinity)
    del daemonsets  # their selection of a type is already in its net allocatable
    return frozenset(keys)
