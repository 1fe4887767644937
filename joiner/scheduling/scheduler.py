"""Karpenter's provisioning simulation: place pending pods, open NodeClaims for the rest.

Per pod, in queue order (CPU desc, memory desc, creation order, uid; Karpenter ``queue.go``):

1. existing nodes and in-flight NodeClaims, initialized first, then by name;
2. NodeClaims opened earlier in this solve, emptiest first (fewest pods, then creation order);
3. a new NodeClaim from each NodePool in weight order (higher first; equal weights by name
   in *descending* order, Karpenter ``utils/nodepool.OrderByWeight``).

Each attempt checks taints (PreferNoSchedule too, until relaxed), node selection (nodeSelector
AND one required node-affinity term, AND the heaviest preferred term until relaxed, AND the
pod's volume topology), host ports, topology (``topology``) and resources. A NodeClaim keeps
the instance types that still fit all its pods plus their DaemonSet overhead and have an
available offering its requirements allow; adding a pod narrows both, and a requirement's
``minValues`` must survive (``Strict``) or is relaxed (``BestEffort``). Limits are accounted
pessimistically: a new NodeClaim subtracts the largest capacity among its options. Reserved
capacity is held per NodeClaim as Karpenter's ``ReservationManager`` does
(``reservations``): a pod that finds it held elsewhere fails this pass, unrelaxed and
without falling back to lower-weight NodePools, and NodeClaims holding reservations are
pinned to them.

When a pod fits nowhere, one preference is relaxed and it is tried again, in Karpenter's
order (``preferences.go``): the heaviest preferred pod affinity, then pod anti-affinity, then
preferred node affinity, then one ScheduleAnyway spread constraint, then PreferNoSchedule
taints are tolerated.

A pod that fits nowhere goes to the back of the queue with its preferences in force again and
is tried again while other pods are being placed; the solve ends when a whole round of the
pods left places none (Karpenter ``queue.go`` ``Queue``, ``scheduler.go`` ``Solve``). So a pod
whose required pod affinity selects a pod later in the queue is placed in the same solve.
``mode="kube-scheduler"`` tries each pod once.

Speed: identical replicas share one ``PodTemplate``; a target that failed a template for a
reason that can only get worse (resources, requirements, taints, ports, anti-affinity on its
own hostname) is never tried again for it; NodeClaims whose best option has less cpu,
memory or pods left than a pod requests are not tried for it (``_ClaimIndex.headroom``); a
pod reads only the NodeClaims whose domains and hostname-group counts admit it, in try order
(``claimorder``), not every NodeClaim of the solve; instance-type filtering is numpy
(``pool``).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from dataclasses import replace
from functools import partial

import numpy as np

from joiner.api import labels
from joiner.api.objects import (
    PREFER_NO_SCHEDULE,
    PodTemplate,
    Taint,
)
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.types import InstanceType
from joiner.scheduling.base import base_of
from joiner.scheduling.claimorder import ClassFilter
from joiner.scheduling.existing import DeadKey, OnExisting, dead_key
from joiner.scheduling.limits import limit_reason, min_values_short, subtract_max, within_limits
from joiner.scheduling.placement import (
    _Attempt,
    _blocking_taint,
    _Claim,
    _ClaimIndex,
    _explain,
    _fifo_key,
    _no_offering,
    _no_room,
    _Nodes,
    _ports_conflict,
    _Prefs,
    _Queue,
    _queue_key,
    domain_universe,
    order_by_weight,
)
from joiner.scheduling.pool import HEADROOM, IntArray, PreparedPool, prepare, rows_fit
from joiner.scheduling.reservations import Reservations, offered
from joiner.scheduling.room import BoolArray, FreeRoom
from joiner.scheduling.stop import StopCheck, Stopped
from joiner.scheduling.topology import (
    ANTI,
    OK,
    SPREAD,
    Active,
    Group,
    Summary,
    Topology,
    Verdict,
)
from joiner.scheduling.types import (
    NewNodeClaim,
    PodRequest,
    SchedulingInput,
    SchedulingResult,
)

_EMPTY = Requirements()

#: Up to this many NodeClaims in a solve, candidates are chosen in plain Python
#: (``_Solve._few_claims``), past it with numpy (``_masked_claims``).
_FEW_CLAIMS = 24

#: A pod's preferences, terms and constraints for a try (``_Solve._first_try``).
FirstTry = tuple[_Prefs, list[Requirements], Active]


class Scheduler:
    """Stateless solver; one instance may be reused across solves."""

    #: A new NodeClaim's options start as every type within its NodePool's limits
    #: (``_Solve._new_claim_options``); a packing policy that starts from fewer says False,
    #: and pool-wide proofs about NodeClaims (``stop.every_claim_launches_as``) are then off.
    CLAIMS_START_WITH_EVERY_TYPE = True
    #: Whether NodeClaims of equal pod counts are tried as Karpenter's in-place re-sort
    #: leaves them (``_Solve.KARPENTER_TIES``); a packing policy of Joiner's own says False
    #: and breaks such ties by creation order, in the plans it compares with too.
    KARPENTER_TIES = True

    def feasible_nodes(self, inp: SchedulingInput, uid: str) -> list[str]:
        """kube-scheduler's Filter phase for one pod of ``inp``: the existing nodes that
        admit it now (taints, node selection, resources, host ports, volume topology, spread
        and pod affinity over ``inp.bound_pods``), without placing it. Uses
        ``mode="kube-scheduler"`` rules (PreferNoSchedule never blocks)."""
        pod = next(p for p in inp.pods if p.uid == uid)
        solve = _Solve(replace(inp, pods=(pod,), nodepools=(), mode="kube-scheduler"))
        prefs = _Prefs(pod.template, pns_exists=False)
        attempt = _Attempt(pod, prefs, prefs.terms(pod.volume_terms), prefs.active(), [])
        return [e.node.name for e in solve.existing if solve._admits(e, attempt)]

    def solve(self, inp: SchedulingInput) -> SchedulingResult:
        """Place ``inp.pods``; see the module docstring for the order of attempts.

        Returns a ``SchedulingResult`` whose ``unschedulable`` entries carry a reason a person
        can act on (which NodePool rejected the pod and why). Deterministic for equal inputs.
        """
        try:
            return (_Solve if self.KARPENTER_TIES else _CreationTieSolve)(inp).run()
        except Stopped as stop:
            return SchedulingResult(stopped=str(stop), stopped_reason=stop.reason)


class _Solve(OnExisting):
    #: An attempt reads only the pod's template and volume terms, so an alike pod
    #: may take an earlier one's failure (``run``); a subclass whose attempts read the pod
    #: itself (its uid) turns this off.
    SHARES_FAILURES = True
    #: NodeClaims of equal pod counts are tried as Karpenter's in-place re-sort leaves them
    #: (``_ClaimIndex.counted``); False: by creation order (a packing policy of Joiner's own).
    KARPENTER_TIES = True
    #: False (Karpenter): a group that counts the pod but is not one of its own constraints
    #: in force (another pod's spread or affinity, or its own ScheduleAnyway spread once
    #: relaxed) leaves an undecided NodeClaim undecided, and the pod is not counted
    #: (``topology.go`` ``AddRequirements`` narrows by the groups the pod owns,
    #: ``getMatchingTopologies``; ``Record`` counts a spread or affinity pod only where its
    #: domain is one value). True: the NodeClaim is pinned to the group's least-loaded
    #: domain so the pod is counted where kube-scheduler will see it (``_decide``; a
    #: packing policy of Joiner's own, whose plans must replay through kube-scheduler).
    PINS_COUNTED_DOMAINS = False

    def __init__(self, inp: SchedulingInput) -> None:
        if inp.first_fit is not None and inp.mode != "kube-scheduler":
            raise ValueError("SchedulingInput.first_fit needs mode='kube-scheduler'")
        self.inp = inp
        extra = sorted({k for p in inp.pods for k in p.template.requests})
        self.pools = [
            prepare(
                t.nodepool,
                t.instance_types,
                inp.daemonsets,
                dict(t.remaining),
                extra,
            )
            for t in order_by_weight(inp.nodepools)
        ]
        base = base_of(inp.existing, inp.bound_pods)
        exclude = inp.exclude_nodes
        if exclude:
            keep = [i for i, b in enumerate(base.nodes) if b.node.name not in exclude]
            kept = [base.nodes[i] for i in keep]
        else:
            keep, kept = list(range(len(base.nodes))), base.nodes
        #: This solve's view of each kept node, made when first asked for (most are only
        #: ever looked at through ``room``'s arrays).
        self.existing = _Nodes(kept)
        self._base, self._keep = base, np.array(keep, dtype=np.int64)
        #: Per tuple of topology keys, the kept nodes' ``SolveBase.domain_combos``.
        self._combos: dict[tuple[str, ...], IntArray] = {}
        self.room = FreeRoom(base.arrays(tuple(extra)), self._keep)
        self.claims: list[_Claim] = []
        #: Excluded nodes that still count as topology domains (``keep_domains``).
        gone = exclude - inp.keep_domains if inp.keep_domains else exclude
        universe, domain_taints, launchable = domain_universe(
            inp.pods,
            self.pools,
            partial(base.domains, exclude=gone),
            base.anti_keys,
            exclude,
        )
        self.topology = Topology(
            universe,
            domain_taints,
            base.hosts(gone),
            launchable,
            nodes_only=inp.mode == "kube-scheduler" and not inp.nodepools,
        )
        self.topology.register(p.template for p in inp.pods)
        #: Per template (by id: the pods hold them for the solve), ``_headroom_need``.
        self._needs: dict[int, IntArray] = {}
        self._need_tuples: dict[int, tuple[int, ...]] = {}
        self.index = self._claim_index(inp)
        # Running pods: alike ones (node, namespace, labels, anti-affinity) counted together,
        # the counts shared between solves over the same snapshot (``base``).
        for g in self.topology.groups():
            g.counts = base.group_counts(g, exclude)
        if base.any_anti:
            by_node = {b.node.name: b.domains for b in kept}
            for (node, namespace, _pod_labels, anti), _count in base.alike.items():
                if anti and node in by_node:
                    self.topology.record_anti(namespace, by_node[node], anti)
        self.pns_exists = any(
            t.effect == PREFER_NO_SCHEDULE for p in self.pools for t in p.taints
        ) or bool(base.prefer_no_schedule - exclude)
        self._dead: dict[DeadKey, BoolArray] = {}
        #: ``_code_table`` answers (read-only tables over a key's domain codes).
        self._tables: dict[tuple[str, tuple[int, ...], bool, int], BoolArray] = {}
        self._merged: dict[tuple[Requirements, Requirements], Requirements] = {}
        #: The shared first try of each template without preferences (``_first_try``).
        self._first: dict[tuple[int, tuple[Requirements, ...], bool], FirstTry] = {}
        #: Each (pool, template, PreferNoSchedule tolerated)'s blocking taint, if any.
        self._taints: dict[tuple[int, int, bool], Taint | None] = {}
        #: Each (pool, template)'s requests as the pool counts them (``_pool_vector``).
        self._vectors: dict[tuple[int, int], IntArray | None] = {}
        self._narrowed: dict[tuple[Requirements, tuple[Requirement, ...]], Requirements] = {}
        #: (existing node id, template id, relaxation step, whether PreferNoSchedule is
        #: tolerated, volume terms) -> the first term
        #: of the pod's node selection the node admits, None if its taints or labels refuse.
        self._static: dict[tuple[object, ...], Requirements | None] = {}
        self._stop = StopCheck(inp.stop, inp) if inp.stop is not None else None
        self.reservations = Reservations()
        #: The current attempt failed on reserved capacity (never relaxed, no fallback).
        self._reserved_failed = False
        #: Pods placed on existing nodes (uid, node), and how many pods are placed so far.
        self._placements: list[tuple[str, str]] = []
        self._placed = 0
        #: Per (template id, volume terms): ``_placed`` when an alike pod failed, and why.
        self._failed: dict[tuple[int, tuple[Requirements, ...]], tuple[int, str]] = {}

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> SchedulingResult:
        kube = self.inp.mode == "kube-scheduler"
        # Karpenter ``scheduler.go`` ``Scheduler.Solve``: a pod that failed goes to the back
        # of the queue (``queue.go`` ``Queue.Push``) and is tried again, its preferences in
        # force again (``Solve`` relaxes a copy in ``trySchedule``), until a whole round of
        # the pods left places none (``Queue.Pop``); its reason is its last failure's
        # (``podErrors``). So a pod whose required pod-affinity partner comes later in the
        # queue joins it in the same solve. kube-scheduler mode (and Cluster Autoscaler's
        # fit check, ``first_fit``) goes through its pods once.
        errors: dict[int, tuple[str, str]] = {}
        queue = _Queue(self._queue())
        while (item := queue.pop()) is not None:
            key, pod = item
            why = self._schedule(pod, kube)
            if why is None:
                errors.pop(key, None)
                continue
            errors[key] = (pod.uid, why)  # in the order pods first failed
            if not kube:
                queue.push(key, pod)
        return SchedulingResult(
            new_nodeclaims=tuple(self._finish(c) for c in self.claims),
            existing_placements=tuple(self._placements),
            unschedulable=tuple(errors.values()),
        )

    def _schedule(self, pod: PodRequest, kube: bool) -> str | None:
        """Place ``pod``, relaxing its preferences one by one (Karpenter ``scheduler.go``
        ``trySchedule``; never past a reserved-capacity failure): None when placed, else why
        it fits nowhere.

        A pod that failed, by (template, volume terms), leaves the placements made before it
        and its reason in ``_failed``. Until the next placement the solve is in the very same
        state, so an alike pod fails the same way (kube-scheduler's queue retries a whole
        Deployment's pending pods; each used to walk every node again). Only where an
        attempt depends on nothing of the pod but those (``SHARES_FAILURES``). With
        ``first_fit`` (Cluster Autoscaler's fit check) a failure is final for every alike
        pod of the solve, placements or not: CA's ``HintingSimulator.trySchedule`` skips a
        pod once a similar one failed (``SimilarPodsScheduling``, one per
        ``TrySchedulePods`` call); only the pod's hint is still tried
        (``tryScheduleUsingHints`` runs before that check)."""
        alike = (id(pod.template), pod.volume_terms)
        hit = self._failed.get(alike) if self.SHARES_FAILURES else None
        if hit is not None and (hit[0] == self._placed or self.inp.first_fit is not None):
            return self._failed_alike(pod, hit, kube)
        prefs, terms, active = self._first_try(pod, kube)
        while True:
            self._reserved_failed = False
            attempt = _Attempt(pod, prefs, terms, active, reasons=[])
            if self._place(attempt):
                return None
            if prefs.step == 0:  # possibly the shared first try: relax a copy of its own
                prefs = self._prefs(pod, kube)
            if self._reserved_failed or not prefs.relax():
                why = _explain(attempt.reasons, self.pools)
                self._failed[alike] = (self._placed, why)
                return why
            terms, active = prefs.terms(pod.volume_terms), prefs.active()

    def _first_try(self, pod: PodRequest, kube: bool) -> FirstTry:
        """``pod``'s preferences, terms and constraints for its first try. A template without
        preferences has the same ones for every pod (with the same volume terms), made once
        per solve and shared until a pod relaxes (``_schedule`` relaxes a copy)."""
        t = pod.template
        key = (id(t), pod.volume_terms, kube)  # templates live for the whole solve
        found = self._first.get(key)
        if found is None:
            prefs = self._prefs(pod, kube)
            found = (prefs, prefs.terms(pod.volume_terms), prefs.active())
            if not t.has_preferences and prefs.step == 0:
                self._first[key] = found
        return found

    def _place(self, attempt: _Attempt) -> bool:
        """One try under ``attempt``'s preferences, in the three tiers' order."""
        node = self._try_existing(attempt)
        if node is not None:
            self._placements.append((attempt.pod.uid, node))
        elif not (self._try_claims(attempt) or self._try_new_claim(attempt)):
            return False
        self._placed += 1
        return True

    def _failed_alike(self, pod: PodRequest, hit: tuple[int, str], kube: bool) -> str | None:
        """An alike pod's failure ``hit`` (placements before it, reason) taken for ``pod``;
        with ``first_fit`` after later placements, ``pod``'s hint is still tried."""
        first_fit = self.inp.first_fit
        if hit[0] != self._placed and first_fit is not None and self.existing:
            prefs = self._prefs(pod, kube)
            attempt = _Attempt(pod, prefs, prefs.terms(pod.volume_terms), prefs.active(), [])
            hinted = self._try_hint(attempt, first_fit)
            if hinted is not None:
                self._placements.append((pod.uid, hinted))
                self._placed += 1
                return None
        return hit[1]

    def _prefs(self, pod: PodRequest, kube: bool) -> _Prefs:
        """``pod``'s preferences as the solve first tries them; with ``first_fit`` all
        relaxed (CA's fit check runs the filters alone)."""
        prefs = _Prefs(pod.template, self.pns_exists and not kube)
        if self.inp.first_fit is not None:
            while prefs.relax():
                pass
        return prefs

    # -- decisions a packing policy may change (joiner.scheduling.costopt) -------------------
    # The predicates stay in this class; these four choose among what they admit.

    def _queue(self) -> list[PodRequest]:
        """The pods in the order they are placed (Karpenter ``queue.go``, or FIFO)."""
        kube = self.inp.mode == "kube-scheduler"
        return sorted(self.inp.pods, key=_fifo_key if kube else _queue_key)

    def _claim_order(self, attempt: _Attempt, candidates: IntArray) -> IntArray:
        """The NodeClaims of this solve to try, in order: emptiest first, then as
        Karpenter's in-place re-sort leaves NodeClaims of equal counts (``scheduler.go``
        sorts ``newNodeClaims`` by pod count; ``_ClaimIndex.counted``). While this is the
        order (``_default_claim_order``), ``claimorder`` gives it without the arrays."""
        index = self.index
        return candidates[np.lexsort((index.tie[candidates], index.pods[candidates]))]

    def _new_claim_options(self, pool: PreparedPool, attempt: _Attempt) -> IntArray | None:
        """Instance-type options of a new NodeClaim from ``pool`` (None: skip the pool):
        every type within the NodePool's limits."""
        return within_limits(pool)

    def _new_claim_requirements(self, pool: PreparedPool) -> Requirements:
        """What a new NodeClaim from ``pool`` requires before its first pod: the NodePool's
        requirements (Karpenter ``NewNodeClaimTemplate``)."""
        return pool.nodepool.requirements

    def _default_claim_order(self) -> bool:
        """Whether ``_claim_order`` is the default one (then ``claimorder`` answers it)."""
        return True

    def _try_claims(self, attempt: _Attempt) -> bool:
        if self.index.n == 0:
            return False
        dead = self.index.dead_mask(dead_key(attempt))
        summary = self._summary(attempt, attempt.terms[0])
        if summary.fail is not None:
            attempt.reasons.append(summary.fail)
            return False
        scratch = attempt.scratch()
        for i in self._claims_to_try(attempt, summary, dead):
            outcome = self._add(self.claims[i], scratch)
            if outcome is True:
                return True
            if outcome is None:
                dead[i] = True
        return False

    def _claims_to_try(self, attempt: _Attempt, summary: Summary, dead: BoolArray) -> Iterator[int]:
        """The NodeClaims of this solve ``attempt`` may go to, in the order it tries them:
        those the candidate filters (``_masked_claims``) admit, in ``_claim_order``. With the
        default order they come from ``index.order`` (Karpenter ``scheduler.go``
        ``Scheduler.add`` and ``addToInflightNode``: fewest pods first, the first that can
        add the pod wins) while it answers; the arrays give the rest, less those tried."""
        tried: set[int] = set()
        order = self.index.order
        ordered = order.enabled and order.active and self._default_claim_order()
        admits = self._class_filter(summary) if ordered else None
        if admits is not None:
            need = self._need_tuple(attempt.pod.template)
            for i in self.index.order.candidates(admits, need, dead):
                if i is None:
                    break
                tried.add(i)
                yield i
            else:
                return
        if not tried and self.index.n <= _FEW_CLAIMS and self._default_claim_order():
            yield from self._few_claims(attempt, summary, dead)
            return
        candidates = self._masked_claims(attempt, summary, dead)
        if candidates.size == 0:
            return
        for i in self._claim_order(attempt, candidates).tolist():
            if i not in tried:
                yield i

    def _few_claims(self, attempt: _Attempt, summary: Summary, dead: BoolArray) -> list[int]:
        """``_masked_claims`` in ``_claim_order`` (the default one), in plain Python for a
        solve of at most ``_FEW_CLAIMS`` NodeClaims, where a dozen numpy calls on arrays of
        a few entries cost more than the loop: not ``dead``, with headroom, within the
        per-host limits, on allowed and not forbidden domains (or undecided); fewest pods
        first, then ``index.tie``, then index."""
        index = self.index
        n = index.n
        need = self._need_tuple(attempt.pod.template)
        gone = dead[:n].tolist()
        room = index.headroom[:n].tolist()
        keep = [i for i in range(n) if not gone[i] and all(map(operator.ge, room[i], need))]
        if keep and not summary.trivial:
            keep = self._few_by_topology(keep, summary, n)
        if len(keep) > 1:
            pods, tie = index.pods[:n].tolist(), index.tie[:n].tolist()
            keep.sort(key=lambda i: (pods[i], tie[i]))
        return keep

    def _few_by_topology(self, keep: list[int], summary: Summary, n: int) -> list[int]:
        """Those of ``keep`` that ``summary``'s filters admit (``_topology_mask``)."""
        index = self.index
        for g, limit, _low in summary.host_max:
            counts = index.host_counts(id(g))[:n].tolist()
            keep = [i for i in keep if counts[i] <= limit]
        for key, allowed in summary.allowed.items():
            if allowed is None or key not in index.codes:
                continue
            ok = {-1, *index.codes_of(key, allowed)}
            codes = index.codes[key][:n].tolist()
            keep = [i for i in keep if codes[i] in ok]
        for key in index.codes:
            bad = set(index.codes_of(key, summary.forbidden_on(key)))
            if bad:
                codes = index.codes[key][:n].tolist()
                keep = [i for i in keep if codes[i] not in bad]
        return keep

    def _class_filter(self, summary: Summary) -> ClassFilter | None:
        """``summary``'s topology filters as ``index.order`` reads them; None when it
        cannot answer (a hostname group outside its classes)."""
        index = self.index
        host = []
        for g, limit, _low in summary.host_max:
            pos = index.order.host_position(id(g), limit)
            if pos is None:
                return None
            host.append((pos, limit))
        allowed = [
            (index.position[key], frozenset((-1, *index.codes_of(key, values))))
            for key, values in summary.allowed.items()
            if values is not None and key in index.codes
        ]
        forbidden = [
            (index.position[key], frozenset(index.codes_of(key, summary.forbidden_on(key))))
            for key in index.codes
        ]
        return ClassFilter(tuple(allowed), tuple(f for f in forbidden if f[1]), tuple(host))

    def _masked_claims(self, attempt: _Attempt, summary: Summary, dead: BoolArray) -> IntArray:
        """The NodeClaims the candidate filters admit for ``attempt``, by index: not
        ``dead``, with headroom for its requests, and, by the first term's topology
        ``summary``, within the per-host limits and on allowed, not forbidden domains (or
        undecided: the exact checks in ``_add`` follow)."""
        index = self.index
        n = index.n
        mask = ~dead[:n]
        # A NodeClaim with less headroom than the pod requests on cpu, memory or pods fails
        # ``_add`` on resources whatever else it checks (requests only grow and options only
        # narrow, so it stays so); its reasons would go to ``scratch``, unread.
        mask &= rows_fit(index.headroom[:n], self._headroom_need(attempt.pod.template))
        if not summary.trivial:  # else no topology filter applies
            self._topology_mask(mask, summary, n)
        return np.flatnonzero(mask)

    def _topology_mask(self, mask: BoolArray, summary: Summary, n: int) -> None:
        """Narrow ``mask`` (over the first ``n`` NodeClaims) by ``summary``: the per-host
        limits, the allowed domains and the forbidden ones."""
        index = self.index
        for g, limit, _low in summary.host_max:
            mask &= index.host_counts(id(g))[:n] <= limit
        # Per key, a table over the domain codes shifted by one (-1, no single domain yet,
        # is row 0): one lookup per NodeClaim where ``np.isin`` sorted every time.
        for key, allowed in summary.allowed.items():
            if allowed is None or key not in index.codes:
                continue
            table = self._code_table(key, index.codes_of(key, allowed), True)
            mask &= table[index.codes[key][:n] + 1]
        for key in index.codes:
            bad = index.codes_of(key, summary.forbidden_on(key))
            if bad:
                mask &= self._code_table(key, bad, False)[index.codes[key][:n] + 1]

    def _code_table(self, key: str, codes: list[int], allow: bool) -> BoolArray:
        """A table over ``key``'s domain codes shifted by one (row 0: no single domain yet):
        with ``allow``, True on row 0 and on ``codes`` only (undecided: the exact check in
        ``_add`` decides); otherwise False on ``codes`` only. Kept per (key, codes, allow,
        number of codes): the same few tables serve every pod of a mix."""
        size = len(self.index.code_of[key]) + 1
        cache_key = (key, tuple(sorted(codes)), allow, size)
        table = self._tables.get(cache_key)
        if table is None:
            table = np.ones(size, dtype=np.bool_)  # row 0 True either way
            if allow:
                table[1:] = False
            table[[c + 1 for c in codes]] = allow
            self._tables[cache_key] = table
        return table

    def _claim_index(self, inp: SchedulingInput) -> _ClaimIndex:
        """The NodeClaim index of this solve (after its groups are registered): classes over
        the topology keys other than the hostname and the hostname spread and anti-affinity
        groups (each capped one above the largest limit a pod can set: ``maxSkew`` for a
        spread, 0 for an anti-affinity), a NodeClaim leaving its class once below the
        smallest request of every template on cpu, memory or pods."""
        templates = {id(p.template): p.template for p in inp.pods}
        skew = max(
            (c.max_skew for t in templates.values() for c in t.spread if c.key == labels.HOSTNAME),
            default=0,
        )
        caps = {
            id(g): 1 if g.kind == ANTI else skew + 1
            for g in self.topology.groups()
            if g.key == labels.HOSTNAME and g.kind in (ANTI, SPREAD)
        }
        needs = []
        for t in templates.values():
            try:
                needs.append(self._headroom_need(t).tolist())
            except OverflowError:  # not an int64: above any other's, it lowers no minimum
                continue
        floor = [min(column) for column in zip(*needs, strict=True)] or [0] * len(HEADROOM)
        keys = [k for k in self.topology.universe if k != labels.HOSTNAME]
        return _ClaimIndex(keys, caps, floor, karpenter_ties=self.KARPENTER_TIES)

    def _headroom_need(self, t: PodTemplate) -> IntArray:
        """``_headroom_need(t)``, once per template."""
        found = self._needs.get(id(t))
        if found is None:
            found = self._needs[id(t)] = _headroom_need(t)
        return found

    def _need_tuple(self, t: PodTemplate) -> tuple[int, ...]:
        """``_headroom_need(t)`` as a tuple of ints, once per template."""
        found = self._need_tuples.get(id(t))
        if found is None:
            found = self._need_tuples[id(t)] = tuple(self._headroom_need(t).tolist())
        return found

    def _try_new_claim(self, attempt: _Attempt) -> bool:
        for pool in self.pools:
            if not pool.types:
                continue
            options = self._new_claim_options(pool, attempt)
            if options is None:
                continue
            if options.size == 0:
                attempt.reasons.append(f"NodePool {pool.name}: {limit_reason(pool)}")
                continue
            claim = _Claim(
                pool=pool,
                requirements=self._new_claim_requirements(pool),
                options=options,
                requests=np.zeros(len(pool.resources), dtype=np.int64),
                index=len(self.claims),
                ports=list(pool.daemon_ports),
            )
            self.claims.append(claim)
            self.index.append()
            if self._add(claim, attempt) is not True:
                self.claims.pop()
                self.index.n -= 1
                self._forget_claim(claim.index)
                if self._reserved_failed:  # Karpenter: no fallback to lower-weight pools
                    return False
                continue
            subtract_max(pool, claim.options)
            return True
        return False

    def _forget_claim(self, index: int) -> None:
        """Undo the index row of a NodeClaim that was never kept."""
        self.index.pods[index] = 0
        self.index.tie[index] = 0
        for arr in self.index.codes.values():
            arr[index] = -1
        for arr in self.index.host.values():
            arr[index] = 0
        for mask in self.index.dead.values():
            mask[index] = False

    # -- one NodeClaim ------------------------------------------------------------------------

    def _merge(self, a: Requirements, b: Requirements) -> Requirements:
        key = (a, b)
        found = self._merged.get(key)
        if found is None:
            found = a.merge(b)
            self._merged[key] = found
        return found

    def _narrow(self, reqs: Requirements, narrowing: tuple[Requirement, ...]) -> Requirements:
        """``reqs.add(*narrowing)``, memoised per solve (a topology choice recurs per pod)."""
        key = (reqs, narrowing)
        found = self._narrowed.get(key)
        if found is None:
            found = self._narrowed[key] = reqs.add(*narrowing)
        return found

    def _domains(self, claim: _Claim, reqs: Requirements) -> dict[str, str | None]:
        out: dict[str, str | None] = {labels.HOSTNAME: claim.hostname}
        for key in self.topology.universe:
            if key == labels.HOSTNAME:
                continue
            r = reqs.get(key)
            single = r is not None and not r.complement and len(r.values) == 1
            out[key] = next(iter(r.values)) if r is not None and single else None
        return out

    def _add(self, claim: _Claim, attempt: _Attempt) -> bool | None:
        """True when added; None when the claim can never take this template (monotonic
        failure); False when it failed on topology, which may change."""
        vec = self._claim_vector(claim, attempt)
        if vec is None:
            return None
        need = claim.requests + vec
        topology_failed = False
        for term in attempt.terms:
            if term:
                conflict = claim.requirements.compatible(term)
                if conflict is not None:
                    attempt.reasons.append(f"NodePool {claim.pool.name}: {conflict}")
                    continue
                merged = self._merge(claim.requirements, term)
            else:  # nothing to add: the claim's own requirements (no conflict possible)
                merged = claim.requirements
            verdict = self._verdict(claim, attempt, term, merged)
            if not verdict.ok:
                topology_failed = True
                attempt.reasons.append(f"NodePool {claim.pool.name}: {verdict.reason}")
                continue
            fitted = self._fit(claim, attempt, term, merged, verdict, need)
            if fitted:
                return True
            if fitted is False:
                topology_failed = True
        return False if topology_failed else None

    def _claim_vector(self, claim: _Claim, attempt: _Attempt) -> IntArray | None:
        """The pod's requests as ``claim``'s pool counts them; None (the reason added) when
        the claim can never take the pod: a taint it does not tolerate, a host port taken, a
        resource no instance type offers."""
        t = attempt.pod.template
        pool = claim.pool
        tolerate = attempt.prefs.tolerate_pns
        key_t = (id(pool), id(t), tolerate)  # both live for the whole solve
        if key_t in self._taints:
            taint = self._taints[key_t]
        else:
            taint = self._taints[key_t] = _blocking_taint(t, pool.taints, tolerate)
        if taint is not None:
            attempt.reasons.append(f"NodePool {pool.name}: the pod does not tolerate taint {taint}")
            return None
        if t.host_ports and _ports_conflict(t.host_ports, claim.ports):
            what = (
                "a DaemonSet that runs on its nodes binds the same host port"
                if _ports_conflict(t.host_ports, pool.daemon_ports)
                else "host port conflict on the NodeClaim"
            )
            attempt.reasons.append(f"NodePool {pool.name}: {what}")
            return None
        vec = self._pool_vector(pool, t)
        if vec is None:
            missing = sorted(k for k, v in t.requests.items() if v > 0 and k not in pool.resources)
            attempt.reasons.append(
                f"NodePool {pool.name}: no instance type offers {', '.join(missing)}"
            )
        return vec

    def _pool_vector(self, pool: PreparedPool, t: PodTemplate) -> IntArray | None:
        """``pool.vector(t.requests)``, once per pool and template in a solve (both live
        for the whole solve, so their ids are not reused)."""
        key = (id(pool), id(t))
        if key in self._vectors:
            return self._vectors[key]
        vec = self._vectors[key] = pool.vector(t.requests)
        return vec

    def _fit(
        self,
        claim: _Claim,
        attempt: _Attempt,
        term: Requirements,
        merged: Requirements,
        verdict: Verdict,
        need: IntArray,
    ) -> bool | None:
        """Commit the pod to ``claim`` under the first of ``verdict``'s narrowings that
        leaves an instance type with room for ``need``: True; None when none does; False when
        one failed only on its capacity reservations (which may free up)."""
        pool = claim.pool
        reasons = attempt.reasons
        reserved_failed: bool | None = None
        for narrowing in verdict.narrowings:
            final = self._narrow(merged, narrowing) if narrowing else merged
            if final is claim.requirements and claim.pods:
                # A placed NodeClaim's options already meet its requirements (``_commit``).
                matching, rows = claim.options, claim.net_rows()
            else:
                matching = claim.options[pool.mask(final)[claim.options]]
                rows = pool.net[matching]
            if matching.size == 0:
                wanted = term.add(*narrowing) if narrowing else term
                reasons.append(partial(_no_offering, pool, wanted, attempt.pod.volumes))
                continue
            fits = rows_fit(rows, need)
            cand = matching[fits]
            if cand.size == 0:
                reasons.append(
                    partial(
                        _no_room, pool, need, len(claim.pods), claim.options.size, matching.size
                    )
                )
                continue
            short = min_values_short(pool, final, cand, self.inp.min_values_policy)
            if short is not None:
                reasons.append(f"NodePool {pool.name}: {short}")
                continue
            reserved = offered(pool.types)  # else no NodeClaim of the pool holds any
            ids, why = (
                self.reservations.choose(claim.index, pool.types, cand, final)
                if reserved
                else (frozenset(), None)
            )
            if why is not None:
                reasons.append(f"NodePool {pool.name}: {why}")
                self._reserved_failed = True
                reserved_failed = False
                continue
            claim.narrow_to(rows, fits, matching, cand)
            self._commit(claim, attempt.pod, final, cand, need)
            if reserved:
                self.reservations.hold(claim.index, ids)
            return True
        return reserved_failed

    def _verdict(
        self, claim: _Claim, attempt: _Attempt, term: Requirements, merged: Requirements
    ) -> Verdict:
        """The topology verdict for ``attempt``'s pod on ``claim`` under ``term`` (``merged``:
        the claim's requirements with the term's). Where no constraint applies and no group
        counts the pod (nothing to decide), the answer needs no domains."""
        summary = self._summary(attempt, term)
        t = attempt.pod.template
        if (
            summary.fail is None
            and summary.trivial
            and not (self.PINS_COUNTED_DOMAINS and self.topology.groups_matching(t))
        ):
            return OK
        domains = self._domains(claim, merged)
        return summary.verdict(
            domains,
            merged,
            self.topology.universe,
            pending=partial(self._pending, claim),
            pending_repels=partial(self._pending_repels, claim, t),
            decide=self._decide(t, domains),
            launchable=self.topology.launchable,
        )

    def _decide(self, t: PodTemplate, domains: dict[str, str | None]) -> dict[str, Group]:
        """Keys where a group counts ``t`` but the NodeClaim has no domain yet: the claim is
        pinned there so the pod is counted where kube-scheduler will see it
        (``PINS_COUNTED_DOMAINS``; empty under Karpenter's rules)."""
        out: dict[str, Group] = {}
        if not self.PINS_COUNTED_DOMAINS:
            return out
        for g in self.topology.groups_matching(t):
            if g.kind == ANTI:
                continue  # counted in every domain the NodeClaim may take (``record``)
            if g.key != labels.HOSTNAME and domains.get(g.key) is None and g.key not in out:
                out[g.key] = g
        return out

    def _pending_repels(self, claim: _Claim, t: PodTemplate, key: str) -> bool:
        """A pod already on ``claim`` has a required anti-affinity on ``key`` selecting ``t``."""
        return any(self.topology.repels(o, t, key) for o in claim.templates)

    def _pending(self, claim: _Claim, g: Group) -> int:
        """Pods on ``claim`` that match ``g`` but whose domain for ``g.key`` is undecided."""
        r = claim.requirements.get(g.key)
        if r is not None and not r.complement and len(r.values) == 1:
            return 0
        return sum(1 for tt in claim.templates if self.topology.matches(g, tt))

    def _commit(
        self, claim: _Claim, pod: PodRequest, final: Requirements, cand: IntArray, need: IntArray
    ) -> None:
        t = pod.template
        # Unchanged requirements on a placed NodeClaim: no domain newly decided, none to set.
        same = final is claim.requirements and bool(claim.pods)
        if not same:
            before = self._domains(claim, claim.requirements)
            after = self._domains(claim, final)
            newly = {k: v for k, v in after.items() if v is not None and before.get(k) is None}
            # Earlier pods now have a domain for these keys: count them there.
            for earlier in claim.templates if newly else ():
                self.topology.record(earlier, newly, decided_late=True)
        claim.templates.append(t)
        claim.requirements = final
        claim.options = cand  # already so after ``_Claim.narrow_to``
        claim.requests = need
        claim.pods.append(pod.uid)
        claim.ports.extend(t.host_ports)
        groups = self.topology.groups_matching(t)
        if groups or t.pod_anti_affinity:  # else ``record`` has nothing to count
            self.topology.record(t, self._domains(claim, final), final)
        index = self.index
        index.counted(claim.index, len(claim.pods))
        columns = claim.pool.headroom_columns
        index.headroom[claim.index] = claim.headroom_top() - need[columns]
        if not same:
            index.set_domains(claim.index, final)
        for g in groups:
            if g.key == labels.HOSTNAME:
                index.host_counts(id(g))[claim.index] += 1
        index.place(claim.index)
        if self._stop is not None:
            self._stop.check(claim, pod)

    # -- result -------------------------------------------------------------------------------

    def _finish(self, claim: _Claim) -> NewNodeClaim:
        pool = claim.pool
        reqs = self.reservations.pinned(claim.index, claim.requirements)
        options = claim.options
        if reqs is not claim.requirements:  # pinned to its reservations: their types only
            options = options[np.isfinite(pool.prices(reqs)[options])]
        prices = pool.prices(reqs)[options]
        order = options[np.lexsort((options, prices))][: self.inp.max_instance_types]
        min_ds = pool.daemon[order].min(axis=0) if order.size else np.zeros(len(pool.resources))
        total = claim.requests + min_ds
        requests = {pool.resources[i]: int(v) for i, v in enumerate(total) if v > 0}
        return NewNodeClaim(
            nodepool=pool.name,
            requirements=reqs,
            instance_types=tuple(pool.types[i] for i in order),
            pods=tuple(claim.pods),
            requests=requests,
        )


def _headroom_need(t: PodTemplate) -> IntArray:
    """``t``'s requests on ``pool.HEADROOM`` (as ``PreparedPool.vector`` counts them: only
    positive ones)."""
    return np.array([max(t.requests.get(r, 0), 0) for r in HEADROOM], dtype=np.int64)


__all__ = ["InstanceType", "Scheduler"]


class CreationTieScheduler(Scheduler):
    """``Scheduler`` that tries new NodeClaims of equal pod counts in creation order, not as
    Karpenter's re-sort leaves them: for models of other autoscalers (the Cluster
    Autoscaler baseline's binpacking estimate), whose try order is not Karpenter's."""

    KARPENTER_TIES = False


class _CreationTieSolve(_Solve):
    """``_Solve`` with NodeClaims of equal pod counts tried in creation order, and a pod's
    NodeClaim pinned where the groups that count it will see it (``PINS_COUNTED_DOMAINS``):
    the solve of the other autoscalers' models and the faithful plan the cost-optimal
    packing compares with, whose plans must replay through kube-scheduler."""

    KARPENTER_TIES = False
    PINS_COUNTED_DOMAINS = True
