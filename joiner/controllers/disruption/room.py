"""Consolidation's pre-check: candidates whose pods cannot possibly move.

Karpenter's ``SingleNodeConsolidation.ComputeCommands`` (``singlenodeconsolidation.go``)
simulates every candidate in turn until one consolidates; it bounds that search by a 3-minute
wall-clock timeout, which a deterministic simulation cannot reproduce. Joiner instead skips
the simulation of a candidate that provably cannot consolidate, so the decision is the one
the simulation would reach and only the work is saved. ``MultiNodeConsolidation``'s binary
search (``firstNConsolidationOption``) likewise takes a batch that provably cannot
consolidate as failed without simulating it: the search visits the same prefixes.

The proof (``Room.hopeless``, ``Room.stranded`` for a batch): a consolidation of
candidates ``C`` (``methods._consolidate``) needs every pod of ``C`` to land either on an
*initialized* node not in ``C`` (a pod placed on a node not initialized yet fails the
simulation) or on one new NodeClaim (two are rejected) whose instance type is cheaper than
``C`` together (with spot-to-spot consolidation off and every candidate spot, only its
offerings that are not spot can be: the scheduler's ``StopRule`` and the price rule both
compare a price no lower than the type's cheapest allowed offering). Pending
pods, pods of deleting nodes and DaemonSet overhead only take room away (a node's free room
only shrinks within a solve; a NodeClaim's instance type holds its pods plus the overhead
within its allocatable), so leaving them out keeps every step below necessary.

Call ``S`` the candidates' pods that would go to the new NodeClaim; the proof bounds ``S``
from below and asks whether one cheaper instance type could hold that much:

1. *Forced pods*: a pod whose requests exceed, for some resource, the free room of every
   initialized node outside ``C`` that has no NoSchedule or NoExecute taint the pod does not
   tolerate (the scheduler relaxes only PreferNoSchedule ones) fits none of them and is in
   ``S``.
2. *Count*: for every resource ``r`` the remaining pods request (``pods: 1`` included), a
   node outside ``C`` with free ``F_r`` holds at most ``k = min_r floor(F_r / smallest
   request of r)`` of them; with ``K`` the sum of those counts, at least ``m = (remaining
   pods) - K`` of them are in ``S``, which then requests at least the sum of the ``m``
   smallest requests of each resource on top of the forced pods'.
3. *Amount*: those nodes take at most ``min(F_r, k * largest request of r)`` of ``r`` each,
   so ``S`` requests at least the pods' total of ``r`` minus the sum of those.

4. *Count per template*: a node outside ``C`` holds at most ``min_r floor(F_r / t_r)``
   pods requesting at least ``t`` of every resource (``t``: one of the pods' templates);
   the ones of those beyond the nodes' sum are in ``S``, so ``S`` requests at least that
   many times ``t``. (Step 2 counts by the smallest request of all the pods, which a few
   small pods make loose.)

When ``S`` must request something of some resource (a new NodeClaim is needed) and no
launchable type with an allowed offering cheaper than ``C`` has an allocatable of every
resource at least the largest of those lower bounds, no consolidation exists and the
simulation is skipped. With every candidate spot and spot-to-spot consolidation off, a
NodePool any new NodeClaim of which could launch as spot, whatever pods join it
(``stop.every_claim_launches_as``, the solve's own stop rule taken over the whole pool),
offers no replacement at all: the replacement would be rejected whatever its price.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from joiner.api import labels
from joiner.api.grouping import plural
from joiner.api.pods import PodTemplate, Toleration, tolerates_all
from joiner.api.quantity import Resources, format_resources
from joiner.cloudprovider.types import InstanceType
from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.command import Context, allowed_offerings
from joiner.controllers.disruption.verdicts import SPOT_TO_SPOT_OFF, Verdict, VerdictKind
from joiner.scheduling import NodePoolTemplate
from joiner.scheduling.base import base_of
from joiner.scheduling.placement import referenced_keys
from joiner.scheduling.pool import prepare
from joiner.scheduling.stop import every_claim_launches_as
from joiner.state.cluster import ClusterState, Pod
from joiner.state.snapshot import pod_requests

#: A count no node reaches (a resource the pods do not request bounds nothing).
_UNBOUNDED = 1 << 40
#: Requests from this much up are compared one template at a time (beyond int64's range).
_HUGE = 1 << 62


class Room:
    """Free capacity of the initialized nodes of one pass, for ``hopeless``.

    Built once per pass from the provisioner's snapshot (``Provisioner.snapshot``): per
    node, the free amount of every resource as a numpy vector (nodes in snapshot order).
    What several candidates ask the same of (which nodes fit a request, the per-node
    counts and room for given smallest and largest requests) is computed once per pass over
    every node; a candidate takes its own node's share back out.
    """

    def __init__(self, ctx: Context) -> None:
        #: The provisioner's snapshot this was built from (``base_snapshot``).
        self.snapshot = ctx.provisioner.base_snapshot()[0]
        nodes = [e for e in self.snapshot if e.initialized]
        self._index = {e.name: i for i, e in enumerate(nodes)}
        self._available = [e.available for e in nodes]
        self._free: dict[str, np.ndarray] = {}
        self._ctx = ctx
        self._templates = ctx.provisioner.templates()
        self._spot_to_spot = ctx.spot_to_spot
        #: NodePools every new NodeClaim of which could launch as spot (``_spot_only``).
        self._spot_pools: frozenset[str] | None = None
        self._cheaper: dict[tuple[frozenset[str], frozenset[str]], CheaperTypes] = {}
        self._taints = [e.taints for e in nodes]
        #: The nodes with a taint, by index.
        self._tainted = [i for i, taints in enumerate(self._taints) if taints]
        self._fits: dict[int, tuple[PodTemplate, list[bool], int]] = {}
        self._blocked: dict[int, tuple[tuple[Toleration, ...], list[int]]] = {}
        self._room_rows: tuple[dict[int, tuple[PodTemplate, int]], npt.NDArray[np.bool_]] | None = (
            None
        )
        self._count: dict[tuple[tuple[str, int], ...], tuple[np.ndarray, list[int], int]] = {}
        self._rooms: dict[tuple[object, ...], tuple[list[int], int]] = {}

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

    def hopeless(self, c: Candidate) -> Verdict | None:
        """Why ``c``'s pods cannot move anywhere cheaper (the module docstring's proof), or
        None when they might. Raises nothing."""
        return self._hopeless([c])

    def stranded(self, cands: Sequence[Candidate]) -> bool:
        """True when consolidating ``cands`` together (a multi-node command) provably fails
        (the module docstring's proof with ``C`` = ``cands``). Raises nothing."""
        return self._hopeless(cands, explain=False) is not None

    def _hopeless(self, cands: Sequence[Candidate], *, explain: bool = True) -> Verdict | None:
        """Why the pods of ``cands`` cannot move to the other nodes and one node cheaper than
        all of them together, or None when they might (without ``explain``, the
        ``STRANDED`` verdict: the caller only asks whether)."""
        if not any(c.pods for c in cands):
            return None
        own = [i for c in cands if (i := self._index.get(c.claim.name)) is not None]
        need = self._new_claim_needs(cands, own)
        if need is None:
            return None
        all_spot = all(c.capacity_type == labels.CAPACITY_TYPE_SPOT for c in cands)
        exclude = (
            frozenset({labels.CAPACITY_TYPE_SPOT})
            if all_spot and not self._spot_to_spot
            else frozenset()
        )
        price = sum(c.price_per_hour for c in cands)
        spot_pools: frozenset[str] = frozenset()
        if self._table(exclude, frozenset()).any_holds(need, price):
            if not exclude:
                return None
            # Second stage (spot candidates, spot-to-spot off): pools whose every new
            # NodeClaim could launch as spot offer no replacement.
            spot_pools = self._spot_only()
            if not spot_pools or self._table(exclude, spot_pools).any_holds(need, price):
                return None
        if not explain:
            return Verdict(VerdictKind.STRANDED)
        nowhere = [
            f"{p.namespace}/{p.name}"
            for c in cands
            for p in c.pods
            if not self._fits_elsewhere(p.template, own)
        ]
        needs = (
            f"its pods need at least {format_resources({k: v for k, v in need.items() if v})} "
            "on a new node"
            + (
                f" ({plural(len(nowhere), 'pod')} fit no other node by free room and taints: "
                f"{', '.join(nowhere[:3])}{', ...' if len(nowhere) > 3 else ''})"
                if nowhere
                else " (the other nodes' free room cannot hold them all)"
            )
        )
        if spot_pools and len(spot_pools) == len(self._templates):
            # What the solve's own stop (``stop.launches_as``) decides, with the detail.
            return Verdict(
                VerdictKind.SPOT_TO_SPOT_OFF_BECAUSE, detail=f"{needs}, which could launch as spot"
            )
        why = f"{needs}, and no instance type cheaper than ${price:.4f}/h holds that much"
        return Verdict(
            VerdictKind.NOT_CHEAPER_BECAUSE,
            detail=f"{SPOT_TO_SPOT_OFF}, and {why} other than as spot" if exclude else why,
        )

    def _table(self, exclude: frozenset[str], pools: frozenset[str]) -> CheaperTypes:
        """``cheaper_types`` of this pass's templates but those of ``pools``, offerings of
        ``exclude`` capacity types left out; once per pass (its key alone walks every
        instance type)."""
        key = (exclude, pools)
        table = self._cheaper.get(key)
        if table is None:
            templates = [t for t in self._templates if t.nodepool.name not in pools]
            table = self._cheaper[key] = cheaper_types(templates, exclude)
        return table

    def _spot_only(self) -> frozenset[str]:
        """The NodePools any new NodeClaim of which could launch as spot whatever pods join
        it (``stop.every_claim_launches_as``; once per pass): with spot-to-spot
        consolidation off, such a NodeClaim holding a spot candidate's pods is rejected
        whatever its price, so those pools offer no replacement. The label keys are those
        of every live pod and CapacityBuffer pod (a superset of any simulation's pods) and of
        the running pods' required anti-affinity. Empty when the scheduler's NodeClaims do
        not start from every type (a packing policy), or when a DaemonSet requests a
        resource no type of the pool has (its arrays would differ from the simulation's)."""
        if self._spot_pools is not None:
            return self._spot_pools
        ctx = self._ctx
        found: set[str] = set()
        if ctx.scheduler.CLAIMS_START_WITH_EVERY_TYPE:
            state = ctx.state
            one_per_template: dict[int, Pod] = {}
            buffer = ctx.provisioner.buffers
            virtual = buffer.virtual_pods() if buffer is not None else []
            for p in (*state.live_pods(), *virtual):
                if not p.daemon:
                    one_per_template.setdefault(id(p.template), p)
            existing, bound = ctx.provisioner.base_snapshot()
            keys = _pod_keys(state, list(one_per_template.values())) | {
                key for _node, key in base_of(existing, bound).anti_keys
            }
            daemonsets = tuple(state.daemonsets[k] for k in sorted(state.daemonsets))
            wanted = {r for d in daemonsets for r, v in d.requests.items() if v > 0}
            spot = frozenset({labels.CAPACITY_TYPE_SPOT})
            for t in self._templates:
                if t.remaining:
                    continue  # limits: every_claim_launches_as answers False
                pool = prepare(t.nodepool, t.instance_types, daemonsets, {})
                if wanted <= set(pool.resources) and every_claim_launches_as(pool, spot, keys):
                    found.add(t.nodepool.name)
        self._spot_pools = frozenset(found)
        return self._spot_pools

    def _new_claim_needs(self, cands: Sequence[Candidate], own: list[int]) -> dict[str, int] | None:
        """Per resource, a lower bound on what the pods of ``cands`` that the other
        initialized nodes cannot hold request together (steps 1-3 of the module docstring);
        None when the bounds allow every pod a place on those nodes. ``own``: the candidates'
        own node indexes, left out of "the other nodes"."""
        shape = shape_of(cands)
        split = shape.split(tuple(self._fits_elsewhere(t, own) for t, _ in shape.alike))
        _count, count, total = self._counts(split.lows)
        held = total - _share(count, own)
        must = max(split.rest_pods - held, 0)
        need: dict[str, int] = {}
        for r, forced, whole, ordered, high in split.per_resource:
            by_count = forced
            left = must
            for v, n in ordered:
                if left <= 0:
                    break
                by_count += v * min(n, left)  # the ``must`` smallest requests of r
                left -= n
            per_node, room = self._room(split.lows, r, high)
            room -= _share(per_node, own)
            need[r] = max(by_count, whole - room, 0)
        self._per_template_needs(shape.dominating, own, need)
        return need if any(need.values()) else None

    def _per_template_needs(
        self,
        dominating: Sequence[tuple[tuple[tuple[str, int], ...], int]],
        own: list[int],
        need: dict[str, int],
    ) -> None:
        """Step 4 of the module docstring, raising ``need`` in place: a node outside
        ``own`` holds at most ``min_r floor(F_r / t_r)`` pods that request at least ``t`` of
        every resource (``t``: the positive requests of one of the pods' templates); the
        rest of those go to the new NodeClaim. ``dominating``: per distinct ``t``, the
        number of the pods requesting at least ``t`` (``Shape.dominating``)."""
        for key, over_all in dominating:
            _count, count, total = self._counts(key)
            over = over_all - (total - _share(count, own))
            if over > 0:
                for r, v in key:
                    need[r] = max(need[r], over * v)

    def _fits_elsewhere(self, t: PodTemplate, own: list[int]) -> bool:
        """Some initialized node not in ``own`` has free room for ``t``'s requests and no
        NoSchedule or NoExecute taint it does not tolerate (the scheduler never relaxes
        those; PreferNoSchedule ones it does); per template, once per pass."""
        hit = self._fits.get(id(t))
        if hit is None or hit[0] is not t:
            mask = self._room_for(t)
            for i in self._untolerated(t.tolerations):
                mask[i] = False
            hit = self._fits[id(t)] = (t, mask.tolist(), int(mask.sum()))
        # Python lists and sums: ``own`` holds a node or a few, where numpy's per-call cost
        # is most of the work.
        _, fits, fitting = hit
        return fitting - _share(fits, own) > 0

    def _untolerated(self, tolerations: tuple[Toleration, ...]) -> list[int]:
        """The tainted nodes (indexes, ascending) with a NoSchedule or NoExecute taint
        ``tolerations`` do not tolerate (``tolerates_all``); once per tolerations object
        and pass (most templates share a few, the empty one above all)."""
        hit = self._blocked.get(id(tolerations))
        if hit is None or hit[0] is not tolerations:
            found = [
                i for i in self._tainted if tolerates_all(tolerations, self._taints[i]) is not None
            ]
            hit = self._blocked[id(tolerations)] = (tolerations, found)
        return hit[1]

    def _room_for(self, t: PodTemplate) -> npt.NDArray[np.bool_]:
        """Per initialized node, whether its free room holds ``t``'s positive requests (a
        new array). The first call answers for every live pod's template at once (one
        numpy comparison; a pass asks about most of them), later ones read that table."""
        if self._room_rows is None:
            self._room_rows = self._room_table()
        rows, table = self._room_rows
        row = rows.get(id(t))
        if row is not None and row[0] is t:
            known: npt.NDArray[np.bool_] = table[row[1]].copy()
            return known
        mask = np.ones(len(self._available), dtype=bool)
        for r, v in t.requests.items():
            if v > 0:
                mask &= self._free_of(r) >= v
        return mask

    def _room_table(
        self,
    ) -> tuple[dict[int, tuple[PodTemplate, int]], npt.NDArray[np.bool_]]:
        """``_room_for`` of every live non-DaemonSet pod's template (those requesting less
        than ``_HUGE`` of everything): their rows by template id, and the table
        (templates x initialized nodes)."""
        templates: dict[int, PodTemplate] = {}
        for p in self._ctx.state.live_pods():
            t = p.template
            if (
                not p.daemon
                and id(t) not in templates
                and max(t.requests.values(), default=0) < _HUGE
            ):
                templates[id(t)] = t
        names = tuple(
            sorted({r for t in templates.values() for r, v in t.requests.items() if v > 0})
        )
        floor = np.array([_floor(t, names) for t in templates.values()], dtype=np.int64).reshape(
            len(templates), len(names)
        )
        # One comparison per resource: numpy's reduction along a short last axis costs
        # more than the comparisons themselves.
        table: npt.NDArray[np.bool_] = np.ones((len(templates), len(self._available)), dtype=bool)
        for j, r in enumerate(names):
            table &= self._free_of(r)[None, :] >= floor[:, j, None]
        rows = {key: (t, i) for i, (key, t) in enumerate(templates.items())}
        return rows, table

    def _counts(self, lows: tuple[tuple[str, int], ...]) -> tuple[np.ndarray, list[int], int]:
        """Per initialized node, at most how many pods requesting at least ``lows`` it holds
        (``_UNBOUNDED`` when ``lows`` is empty), as an array and as a list, and their sum;
        once per pass."""
        hit = self._count.get(lows)
        if hit is None:
            count = np.full(len(self._available), _UNBOUNDED, dtype=np.int64)
            for r, low in lows:
                count = np.minimum(count, self._free_of(r) // low)
            hit = self._count[lows] = (count, count.tolist(), int(count.sum()))
        return hit

    def _room(self, lows: tuple[tuple[str, int], ...], r: str, high: int) -> tuple[list[int], int]:
        """Per initialized node, at most how much of ``r`` it gives pods requesting at least
        ``lows`` and at most ``high`` of ``r`` (a list), and the sum; once per pass."""
        key = (lows, r, high)
        hit = self._rooms.get(key)
        if hit is None:
            count, _, _ = self._counts(lows)
            # In float64: ``count`` may be huge where a resource bounds nothing; the minimum
            # with the (exact, < 2**53) free amounts brings it back.
            per_node = np.minimum(self._free_of(r), count * float(high)).astype(np.int64)
            hit = self._rooms[key] = (per_node.tolist(), int(per_node.sum()))
        return hit


#: A resource a template does not request (or requests zero of) bounds nothing.
_NO_FLOOR = int(np.iinfo(np.int64).min)
#: ``_floor``'s answers by template id: the template (kept so the id stays valid), the
#: resource names asked for, and the row.
_FLOORS: dict[int, tuple[PodTemplate, tuple[str, ...], tuple[int, ...]]] = {}
_FLOORS_MAX = 1 << 16


def _floor(t: PodTemplate, names: tuple[str, ...]) -> tuple[int, ...]:
    """``t``'s positive requests of ``names`` (in that order), ``_NO_FLOOR`` for the others:
    its row of ``Room._room_table``'s comparison; kept across passes (a template never
    changes, and passes ask the same names of the same templates)."""
    hit = _FLOORS.get(id(t))
    if hit is None or hit[0] is not t or hit[1] != names:
        row = tuple(v if (v := t.requests.get(r, 0)) > 0 else _NO_FLOOR for r in names)
        if len(_FLOORS) >= _FLOORS_MAX:
            _FLOORS.clear()
        hit = _FLOORS[id(t)] = (t, names, row)
    return hit[2]


def _share(values: list[int] | list[bool], own: list[int]) -> int:
    """The sum of ``values`` at the indexes ``own`` (a candidate's own nodes: one for a
    single-node candidate, read without a generator)."""
    if len(own) == 1:
        return int(values[own[0]])
    return sum(int(values[i]) for i in own)


#: ``_pod_keys``' last answer: the templates and volume terms it read, and the keys.
_POD_KEYS: list[tuple[tuple[PodTemplate, ...], tuple[object, ...], frozenset[str]]] = []


def _pod_keys(state: ClusterState, pods: list[Pod]) -> frozenset[str]:
    """``referenced_keys`` of ``pods`` (one per template; no bound pods): a function of
    their templates and those templates' volume terms alone, so the last answer serves
    while the very same templates (by identity, in the same order) with equal volume terms
    come back."""
    templates = tuple(p.template for p in pods)
    terms = state.volume_terms
    volumes = tuple(terms.get(t, ()) for t in templates) if terms else ()
    if _POD_KEYS:
        kept, kept_volumes, keys = _POD_KEYS[0]
        if (
            len(kept) == len(templates)
            and all(a is b for a, b in zip(kept, templates, strict=True))
            and kept_volumes == volumes
        ):
            return keys
    keys = referenced_keys(pod_requests(state, pods), (), ())
    _POD_KEYS[:] = [(templates, volumes, keys)]
    return keys


@dataclass(frozen=True, slots=True)
class Shape:
    """What the room proof reads of a set of pods alone, whatever the cluster around them:
    the same for the same pods (a pod's template never changes), so it is kept across
    passes (``shape_of``).

    Attributes:
        pods: the pods, candidate by candidate, each in its candidate's order.
        templates: each pod's template (held so the identities compared stay valid).
        alike: (template, pod count) per distinct template object, by first appearance
            (replicas share their template).
        resources: the resources some pod requests a positive amount of, sorted.
        dominating: step 4 of the module docstring: per distinct vector ``t`` of positive
            requests (by first appearance), the number of the pods requesting at least
            ``t`` of each of its resources; one numpy comparison of every vector with
            every other.
    """

    pods: tuple[Pod, ...]
    templates: tuple[PodTemplate, ...]
    alike: tuple[tuple[PodTemplate, int], ...]
    resources: tuple[str, ...]
    dominating: tuple[tuple[tuple[tuple[str, int], ...], int], ...]
    #: ``split``'s answers by ``fits``.
    splits: dict[tuple[bool, ...], Split] = field(default_factory=dict)

    def split(self, fits: tuple[bool, ...]) -> Split:
        """The ``Split`` of these pods when the templates of ``alike`` fit some other node
        as ``fits`` says (same order); once per distinct ``fits``."""
        hit = self.splits.get(fits)
        if hit is None:
            hit = self.splits[fits] = _make_split(self.alike, self.resources, fits)
        return hit

    def holds(self, pods: Sequence[Pod]) -> bool:
        """This is the shape of ``pods``: the very same pods with the same templates."""
        return len(pods) == len(self.pods) and all(
            p is q and p.template is t
            for p, q, t in zip(pods, self.pods, self.templates, strict=True)
        )


@dataclass(frozen=True, slots=True)
class Split:
    """Steps 1-3 of the module docstring for a ``Shape`` whose templates are split into
    *forced* ones (they fit no other node: step 1) and the *rest*, as far as they depend on
    the pods alone.

    Attributes:
        lows: per resource the rest request a positive amount of, the smallest such
            request (step 2's per-node count), by resource name.
        rest_pods: how many pods the rest are.
        per_resource: per resource of the shape (sorted): the forced pods' total request
            of it, all the pods' total, the rest's (request, pod count) pairs ascending,
            and the rest's largest request of it.
    """

    lows: tuple[tuple[str, int], ...]
    rest_pods: int
    per_resource: tuple[tuple[str, int, int, tuple[tuple[int, int], ...], int], ...]


def _make_split(
    alike: Sequence[tuple[PodTemplate, int]], resources: Sequence[str], fits: tuple[bool, ...]
) -> Split:
    """``Shape.split`` worked out: ``alike`` (template, pod count) pairs, ``fits`` per pair."""
    forced = [(t.requests, n) for (t, n), f in zip(alike, fits, strict=True) if not f]
    rest = [(t.requests, n) for (t, n), f in zip(alike, fits, strict=True) if f]
    lows: list[tuple[str, int]] = []
    per_resource = []
    for r in resources:
        amounts = [req.get(r, 0) for req, _ in rest]
        low = min(amounts, default=0)
        if low > 0:
            lows.append((r, low))
        per_resource.append(
            (
                r,
                sum(req.get(r, 0) * n for req, n in forced),
                sum(req.get(r, 0) * n for req, n in (*forced, *rest)),
                tuple(sorted((req.get(r, 0), n) for req, n in rest)),
                max(amounts, default=0),
            )
        )
    return Split(tuple(lows), sum(n for _, n in rest), tuple(per_resource))


#: ``shape_of``'s last answer per candidate set (NodeClaim names).
_SHAPES: dict[tuple[str, ...], Shape] = {}
#: At most this many candidate sets' shapes are kept.
_SHAPES_MAX = 1 << 12


def shape_of(cands: Sequence[Candidate]) -> Shape:
    """The ``Shape`` of the pods of ``cands``: the last one made for the same NodeClaims
    while it ``holds`` for their pods now, else a new one."""
    key = tuple(c.claim.name for c in cands)
    pods = [p for c in cands for p in c.pods]
    hit = _SHAPES.get(key)
    if hit is not None and hit.holds(pods):
        return hit
    if len(_SHAPES) >= _SHAPES_MAX:
        _SHAPES.clear()
    shape = _SHAPES[key] = _make_shape(pods)
    return shape


def _make_shape(pods: list[Pod]) -> Shape:
    """A new ``Shape`` of ``pods``."""
    alike: dict[int, tuple[PodTemplate, int]] = {}
    for p in pods:
        t = p.template
        alike[id(t)] = (t, alike[id(t)][1] + 1 if id(t) in alike else 1)
    resources = sorted({r for t, _ in alike.values() for r, v in t.requests.items() if v > 0})
    return Shape(
        tuple(pods),
        tuple(p.template for p in pods),
        tuple(alike.values()),
        tuple(resources),
        _dominating(alike.values()),
    )


def _dominating(
    alike: Iterable[tuple[PodTemplate, int]],
) -> tuple[tuple[tuple[tuple[str, int], ...], int], ...]:
    """``Shape.dominating`` of (template, pod count) pairs. Templates with the same positive
    requests give the same bound, so they count together; which request vectors dominate
    which is one numpy comparison (per vector, the pods requesting at least as much of each
    of its resources)."""
    counts: dict[tuple[tuple[str, int], ...], int] = {}
    for t, n in alike:
        key = tuple(sorted((r, v) for r, v in t.requests.items() if v > 0))
        if key:
            counts[key] = counts.get(key, 0) + n
    if not counts:
        return ()
    keys = list(counts)
    names = sorted({r for key in keys for r, _ in key})
    column = {r: j for j, r in enumerate(names)}
    amounts = np.zeros((len(keys), len(names)), dtype=np.int64)
    for i, key in enumerate(keys):
        for r, v in key:
            amounts[i, column[r]] = v
    # A zero amount (a resource the vector does not request) bounds nothing.
    floor = np.where(amounts > 0, amounts, np.iinfo(np.int64).min)
    dominates = (amounts[None, :, :] >= floor[:, None, :]).all(axis=2)
    big = dominates.astype(np.int64) @ np.fromiter(counts.values(), np.int64, len(keys))
    return tuple(zip(keys, big.tolist(), strict=True))


@dataclass
class CheaperTypes:
    """Every launchable (NodePool, instance type) by its cheapest allowed price, ascending,
    with each one's allocatable; ``any_holds`` answers "does a type cheaper than this hold
    that much" with one numpy comparison per resource."""

    prices: list[float]
    allocatable: list[Resources]
    _columns: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)

    def column(self, resource: str) -> npt.NDArray[np.int64]:
        """Allocatable ``resource`` per row (0 where a type has none), cached."""
        col = self._columns.get(resource)
        if col is None:
            col = self._columns[resource] = np.fromiter(
                (a.get(resource, 0) for a in self.allocatable),
                dtype=np.int64,
                count=len(self.allocatable),
            )
        return col

    def any_holds(self, need: dict[str, int], price_per_hour: float) -> bool:
        """Some row strictly cheaper than ``price_per_hour`` has at least ``need`` of every
        resource allocatable."""
        n = bisect.bisect_left(self.prices, price_per_hour)
        mask = np.ones(n, dtype=bool)
        for r, v in need.items():
            if v > 0:
                mask &= self.column(r)[:n] >= v
        return bool(mask.any())


#: The last ``cheaper_types`` answer per (excluded capacity types, NodePool names), by its
#: templates' pools and instance-type identities (the types themselves are kept so the
#: identities stay valid).
_CHEAPER: dict[
    tuple[frozenset[str], tuple[str, ...]],
    tuple[object, tuple[tuple[InstanceType, ...], ...], CheaperTypes],
] = {}


def cheaper_types(
    templates: Sequence[NodePoolTemplate], exclude: frozenset[str] = frozenset()
) -> CheaperTypes:
    """Every launchable (pool, type) with its cheapest allowed price (offerings of
    ``exclude`` capacity types left out), ascending. Reused while the pools and the cloud's
    type objects are the same (the cloud hands out new objects when availability changes)."""
    key = tuple((t.nodepool, tuple(map(id, t.instance_types))) for t in templates)
    slot = (exclude, tuple(t.nodepool.name for t in templates))
    hit = _CHEAPER.get(slot)
    if hit is not None and hit[0] == key:
        return hit[2]
    rows: list[tuple[float, int, Resources]] = []
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
                rows.append((min(prices), len(rows), it.allocatable))
    rows.sort(key=lambda row: (row[0], row[1]))
    answer = CheaperTypes([r[0] for r in rows], [r[2] for r in rows])
    if len(_CHEAPER) >= 64:
        _CHEAPER.clear()
    _CHEAPER[slot] = (key, tuple(t.instance_types for t in templates), answer)
    return answer
