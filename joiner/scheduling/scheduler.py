"""Karpenter's provisioning simulation: place pending pods, open NodeClaims for the rest.

Per pod, in queue order (CPU desc, memory desc, creation order, uid; Karpenter ``queue.go``):

1. existing nodes and in-flight NodeClaims, initialized first, then by name;
2. NodeClaims opened earlier in this solve, emptiest first (fewest pods, then creation order);
3. a new NodeClaim from each NodePool in weight order (higher first, then name).

A NodeClaim keeps the list of instance types that still fit all its pods plus their
DaemonSet overhead and have an available offering its requirements allow; adding a pod
narrows both. Limits are accounted pessimistically: a new NodeClaim subtracts the largest
capacity among its options (Karpenter ``subtractMax``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from joiner.api import quantity
from joiner.api.objects import PodTemplate, Taint, tolerates_all
from joiner.api.quantity import Resources
from joiner.api.requirements import Requirements
from joiner.cloudprovider.types import InstanceType, order_by_price
from joiner.scheduling.daemonsets import overhead_by_type
from joiner.scheduling.types import (
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
    SchedulingInput,
    SchedulingResult,
)

_NO_UNDEFINED: frozenset[str] = frozenset()


@dataclass
class _Pool:
    template: NodePoolTemplate
    types: list[InstanceType]
    daemon_overhead: dict[str, Resources]
    remaining: dict[str, int]
    #: Why the pool offers nothing at all (set when ``types`` is empty).
    empty_reason: str | None = None

    @property
    def name(self) -> str:
        return self.template.nodepool.name

    @property
    def taints(self) -> tuple[Taint, ...]:
        return self.template.nodepool.taints


@dataclass
class _Claim:
    pool: _Pool
    requirements: Requirements
    options: list[InstanceType]
    requests: Resources = field(default_factory=dict)
    pods: list[str] = field(default_factory=list)
    index: int = 0


class Scheduler:
    """Stateless solver; one instance may be reused across solves."""

    def solve(self, inp: SchedulingInput) -> SchedulingResult:
        """Place ``inp.pods``; see the module docstring for the order of attempts.

        Returns a ``SchedulingResult`` whose ``unschedulable`` entries carry a reason a person
        can act on (which NodePool rejected the pod and why). Deterministic for equal inputs.
        """
        return _Solve(inp).run()


class _Solve:
    def __init__(self, inp: SchedulingInput) -> None:
        self.inp = inp
        self.pools = [
            self._prepare_pool(p)
            for p in sorted(inp.nodepools, key=lambda p: (-p.nodepool.weight, p.nodepool.name))
        ]
        self.existing = sorted(inp.existing, key=lambda n: (not n.initialized, n.name))
        self.available = {n.name: dict(n.available) for n in inp.existing}
        self.claims: list[_Claim] = []
        self._type_ok_cache: dict[tuple[str, Requirements], bool] = {}

    def _prepare_pool(self, t: NodePoolTemplate) -> _Pool:
        reqs = t.nodepool.requirements
        types = [
            it
            for it in t.instance_types
            if it.requirements.intersects(reqs) is None and it.available_offerings(reqs)
        ]
        reason = None
        if not types:
            reason = (
                f"NodePool {t.nodepool.name} has no instance type with an available offering "
                f"that satisfies its requirements ({reqs.describe()})"
            )
        return _Pool(
            template=t,
            types=types,
            daemon_overhead=overhead_by_type(t.nodepool, types, self.inp.daemonsets),
            remaining=dict(t.remaining),
            empty_reason=reason,
        )

    # -- the three tiers ------------------------------------------------------------------

    def run(self) -> SchedulingResult:
        placements: list[tuple[str, str]] = []
        unschedulable: list[tuple[str, str]] = []
        for pod in sorted(self.inp.pods, key=_queue_key):
            node = self._try_existing(pod.template)
            if node is not None:
                placements.append((pod.uid, node))
                continue
            reasons: list[str] = []
            if self._try_claims(pod, reasons) or self._try_new_claim(pod, reasons):
                continue
            unschedulable.append((pod.uid, _explain(reasons, self.pools)))
        return SchedulingResult(
            new_nodeclaims=tuple(self._finish(c) for c in self.claims),
            existing_placements=tuple(placements),
            unschedulable=tuple(unschedulable),
        )

    def _try_existing(self, tmpl: PodTemplate) -> str | None:
        for node in self.existing:
            if tolerates_all(tmpl.tolerations, node.taints) is not None:
                continue
            avail = self.available[node.name]
            if not quantity.fits(tmpl.requests, avail):
                continue
            if node.requirements is not None:
                reqs, undefined = node.requirements, None
            else:
                reqs, undefined = Requirements.from_labels(dict(node.labels)), _NO_UNDEFINED
            terms = tmpl.requirement_terms()
            if undefined is None:
                ok = any(reqs.compatible(t) is None for t in terms)
            else:
                ok = any(reqs.compatible(t, allow_undefined=undefined) is None for t in terms)
            if not ok:
                continue
            self.available[node.name] = quantity.subtract(avail, tmpl.requests)
            return node.name
        return None

    def _try_claims(self, pod: PodRequest, reasons: list[str]) -> bool:
        for claim in sorted(self.claims, key=lambda c: (len(c.pods), c.index)):
            if self._add(claim, pod, reasons) is not None:
                return True
        return False

    def _try_new_claim(self, pod: PodRequest, reasons: list[str]) -> bool:
        for pool in self.pools:
            if not pool.types:
                continue
            options = self._within_limits(pool)
            if not options:
                reasons.append(f"NodePool {pool.name}: its limits leave no room for another node")
                continue
            claim = _Claim(
                pool, pool.template.nodepool.requirements, options, index=len(self.claims)
            )
            if self._add(claim, pod, reasons) is None:
                continue
            self.claims.append(claim)
            self._subtract_max(pool, claim.options)
            return True
        return False

    # -- one NodeClaim ---------------------------------------------------------------------

    def _add(self, claim: _Claim, pod: PodRequest, reasons: list[str]) -> _Claim | None:
        tmpl = pod.template
        pool = claim.pool
        taint = tolerates_all(tmpl.tolerations, pool.taints)
        if taint is not None:
            reasons.append(f"NodePool {pool.name}: the pod does not tolerate taint {taint}")
            return None
        total = quantity.add(claim.requests, tmpl.requests)
        for term in tmpl.requirement_terms():
            conflict = claim.requirements.compatible(term)
            if conflict is not None:
                reasons.append(f"NodePool {pool.name}: {conflict}")
                continue
            merged = claim.requirements.merge(term)
            survivors = [it for it in claim.options if self._type_ok(it, merged, total, pool)]
            if not survivors:
                reasons.append(
                    f"NodePool {pool.name}: no instance type fits "
                    f"{quantity.format_resources(total)} (plus DaemonSet overhead) with an "
                    f"available offering for {merged.describe()}"
                )
                continue
            claim.requirements = merged
            claim.options = survivors
            claim.requests = total
            claim.pods.append(pod.uid)
            return claim
        return None

    def _type_ok(
        self, it: InstanceType, merged: Requirements, total: Resources, pool: _Pool
    ) -> bool:
        key = (it.name, merged)
        compatible = self._type_ok_cache.get(key)
        if compatible is None:
            compatible = it.requirements.intersects(merged) is None and bool(
                it.available_offerings(merged)
            )
            self._type_ok_cache[key] = compatible
        if not compatible:
            return False
        needed = quantity.add(total, pool.daemon_overhead.get(it.name, {}))
        return quantity.fits(needed, it.allocatable)

    # -- limits ----------------------------------------------------------------------------

    def _within_limits(self, pool: _Pool) -> list[InstanceType]:
        if not pool.remaining:
            return pool.types
        if pool.remaining.get("nodes", 1) < 1:
            return []
        limited = [(k, v) for k, v in pool.remaining.items() if k != "nodes"]
        return [it for it in pool.types if all(it.capacity.get(k, 0) <= v for k, v in limited)]

    def _subtract_max(self, pool: _Pool, options: list[InstanceType]) -> None:
        if not pool.remaining:
            return
        for k in list(pool.remaining):
            if k == "nodes":
                pool.remaining[k] -= 1
            else:
                pool.remaining[k] -= max(it.capacity.get(k, 0) for it in options)

    # -- result ----------------------------------------------------------------------------

    def _finish(self, claim: _Claim) -> NewNodeClaim:
        ordered = order_by_price(claim.options, claim.requirements)[: self.inp.max_instance_types]
        overheads = [claim.pool.daemon_overhead.get(it.name, {}) for it in ordered]
        min_overhead: Resources = {}
        if overheads:
            keys = sorted({k for o in overheads for k in o})
            min_overhead = {k: min(o.get(k, 0) for o in overheads) for k in keys}
        return NewNodeClaim(
            nodepool=claim.pool.name,
            requirements=claim.requirements,
            instance_types=tuple(ordered),
            pods=tuple(claim.pods),
            requests=quantity.add(claim.requests, min_overhead),
        )


def _queue_key(pod: PodRequest) -> tuple[int, int, int, str]:
    r = pod.template.requests
    return (-r.get(quantity.CPU, 0), -r.get(quantity.MEMORY, 0), pod.order, pod.uid)


def _explain(reasons: list[str], pools: list[_Pool]) -> str:
    if not pools:
        return "no NodePool is defined"
    parts = list(dict.fromkeys(reasons))
    parts += [p.empty_reason for p in pools if p.empty_reason]
    return "; ".join(parts) if parts else "no NodePool can launch a node for it"
