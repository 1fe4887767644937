"""Lint: configuration a person wants to hear about before anything launches.

Pure checks over NodePools, the instance types each may launch, and the pods of the
manifests. Each ``LintWarning`` names the object and field and says what to change:

* ``dead-value``: an ``In`` value (instance type, family, arch, zone...) that the pool's other
  requirements rule out, e.g. the seed's arm64 ``c6g.xlarge`` under a defaulted
  ``kubernetes.io/arch In [amd64]``;
* ``no-launchable-type``: the pool can launch nothing at all;
* ``spot-flexibility``: a Spot pool with fewer than 15 instance types across its zones
  (interruption risk, and Karpenter's spot-to-spot consolidation needs 15);
* ``unused-nodepool``: no pod in the manifests can use the pool;
* ``overlapping-nodepools``: two pools with equal weight that can launch the same types,
  so the choice between them falls to name order;
* ``limit-below-one-node``: a limit smaller than the smallest node the pool can launch;
* ``min-values-unsatisfiable``: a requirement's ``minValues`` above the distinct values the
  launchable types have for its key (counted as Karpenter's ``SatisfiesMinValues`` counts:
  a type offered as spot and on-demand, or in three zones, brings every value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import is_

from joiner.api import labels, quantity
from joiner.api.objects import NodePool, PodTemplate, tolerates_all
from joiner.api.requirements import IN, Requirement, Requirements
from joiner.cloudprovider.types import InstanceType

#: Karpenter's spot-to-spot consolidation needs at least this many cheaper spot types, and
#: AWS advises flexibility across many pools; below it interruptions hit harder.
MIN_SPOT_INSTANCE_TYPES = 15


@dataclass(frozen=True, slots=True)
class LintWarning:
    """One finding: where (file, ``Kind/name``, field), what, and what to change."""

    code: str
    file: str
    obj: str
    field: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.file}: {self.obj}: field {self.field}: {self.message}. {self.fix}"


def requirements_field(pool: NodePool) -> str:
    """Where a pool's requirements live in its manifest."""
    return (
        "spec.requirements"
        if pool.source.kind == "Provisioner"
        else ("spec.template.spec.requirements")
    )


def launchable(pool: NodePool, types: Sequence[InstanceType]) -> list[InstanceType]:
    """Types the pool's requirements allow that have an available compatible offering
    (none when a requirement excludes the pool's own labels).

    Every check of ``lint`` asks this of the same pool and types, so the last few answers
    are kept: a hit needs the same pool requirements and the very same type objects in the
    same order (``InstanceType`` is immutable), and returns a fresh list.
    """
    reqs = pool.requirements
    if pool.own_label_conflict() is not None:
        return []
    found = _LAUNCHABLE.get(reqs)
    if found is not None and len(found[0]) == len(types) and all(map(is_, found[0], types)):
        return list(found[1])
    ok = [
        it
        for it in types
        if it.requirements.intersects(reqs) is None
        and any(o.available and o.compatible(reqs) for o in it.offerings)
    ]
    if len(_LAUNCHABLE) >= 16:
        _LAUNCHABLE.clear()
    _LAUNCHABLE[reqs] = (tuple(types), tuple(ok))
    return ok


#: ``launchable``'s recent answers: pool requirements -> (the types asked about, the answer).
_LAUNCHABLE: dict[Requirements, tuple[tuple[InstanceType, ...], tuple[InstanceType, ...]]] = {}


def _values(it: InstanceType, key: str) -> set[str]:
    r = it.requirements.get(key)
    return set() if r is None or r.complement else set(r.values)


def dead_values(pool: NodePool, types: Sequence[InstanceType]) -> list[LintWarning]:
    """``In`` values of instance-type labels that can never be launched, with the blocker."""
    reqs = pool.requirements
    ok = launchable(pool, types)
    src = pool.source
    field = requirements_field(pool)
    if not ok:
        conflict = pool.own_label_conflict()
        return [
            LintWarning(
                "no-launchable-type",
                src.file,
                src.ref,
                field,
                f"the NodePool can launch nothing: {conflict}"
                if conflict
                else f"no instance type can be launched under {reqs.describe()}",
                "Relax the requirements; pods that need this pool stay pending",
            )
        ]
    out: list[LintWarning] = []
    for key in sorted(reqs):
        req = reqs[key]
        if req.operator != IN or not any(key in it.requirements for it in types):
            continue
        for value in sorted(req.values):
            if any(value in _values(it, key) for it in ok):
                continue
            carriers = [it for it in types if value in _values(it, key)]
            if not carriers:
                out.append(
                    LintWarning(
                        "dead-value",
                        src.file,
                        src.ref,
                        field,
                        f"{key} value {value!r} matches no instance type offered in the "
                        "NodeClass's zones and region",
                        _dead_value_hint(key, value),
                    )
                )
                continue
            blockers = _blockers(reqs, key, carriers)
            traits = _traits(carriers, [b[0] for b in blockers])
            because = (
                "; ".join(
                    b[1]
                    + (
                        " (a default the legacy v1alpha5 webhook added because the Provisioner "
                        "does not set this key)"
                        if b[1] in pool.defaulted
                        else ""
                    )
                    for b in blockers
                )
                or "no available offering in the allowed zones and capacity types"
            )
            fix = (
                f"To launch it, {_additions(carriers, [b[0] for b in blockers])}; otherwise "
                f"remove {value!r}"
                if blockers
                else f"Remove {value!r} or allow a zone or capacity type that offers it"
            )
            out.append(
                LintWarning(
                    "dead-value",
                    src.file,
                    src.ref,
                    field,
                    f"{key} value {value!r}{_trait_note(traits)} can never be launched: "
                    f"excluded by {because}",
                    fix,
                )
            )
    return out


def _blockers(
    reqs: Requirements, key: str, carriers: Sequence[InstanceType]
) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for other in sorted(reqs):
        if other == key:
            continue
        r = reqs[other]
        if all(
            other in it.requirements and len(it.requirements[other].intersection(r)) == 0
            for it in carriers
        ):
            found.append((other, r.describe()))
    return found


def _traits(carriers: Sequence[InstanceType], keys: Sequence[str]) -> str:
    parts = []
    for k in keys:
        vals = sorted({v for it in carriers for v in _values(it, k)})
        if vals:
            parts.append(f"{k}={'|'.join(vals)}")
    return ", ".join(parts)


def _additions(carriers: Sequence[InstanceType], keys: Sequence[str]) -> str:
    parts = []
    for k in keys:
        vals = sorted({v for it in carriers for v in _values(it, k)})
        if vals:
            parts.append(f"add {', '.join(vals)} to {k}")
    return " and ".join(parts) or "relax " + ", ".join(keys)


def _trait_note(traits: str) -> str:
    return f" ({traits})" if traits else ""


def spot_flexibility(pool: NodePool, types: Sequence[InstanceType]) -> list[LintWarning]:
    """A pool that allows spot but can launch fewer than 15 types as spot."""
    if not pool.requirements.get_or_exists(labels.CAPACITY_TYPE).has(labels.CAPACITY_TYPE_SPOT):
        return []
    spot_reqs = pool.requirements.add(
        Requirement.in_(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_SPOT)
    )
    # Only whether fewer than MIN_SPOT_INSTANCE_TYPES qualify matters: stop at that many.
    spot_types = islice(
        (
            it.name
            for it in types
            if it.requirements.intersects(spot_reqs) is None and it.available_offerings(spot_reqs)
        ),
        MIN_SPOT_INSTANCE_TYPES,
    )
    names = sorted(spot_types)
    if not names or len(names) >= MIN_SPOT_INSTANCE_TYPES:
        return []
    return [
        LintWarning(
            "spot-flexibility",
            pool.source.file,
            pool.source.ref,
            requirements_field(pool),
            f"allows spot but only {len(names)} instance type(s) can launch as spot in its zones "
            f"({', '.join(names)}); with fewer than {MIN_SPOT_INSTANCE_TYPES}, one reclaimed "
            "capacity pool hits every node and spot-to-spot consolidation cannot run",
            "Allow more types, e.g. with instance-category/-generation/-cpu requirements "
            "instead of a fixed instance-type list",
        )
    ]


def _pod_fits_pool(tmpl: PodTemplate, pool: NodePool, types: Sequence[InstanceType]) -> bool:
    if tolerates_all(tmpl.tolerations, pool.taints) is not None:
        return False
    for term in tmpl.requirement_terms():
        if pool.requirements.compatible(term) is not None:
            continue
        merged = pool.requirements.merge(term)
        for it in types:
            if (
                it.requirements.intersects(merged) is None
                and quantity.fits(tmpl.requests, it.allocatable)
                and it.available_offerings(merged)
            ):
                return True
    return False


def unused_pools(
    pools: Sequence[NodePool],
    types_by_pool: Mapping[str, Sequence[InstanceType]],
    pods: Sequence[tuple[str, PodTemplate]],
) -> list[LintWarning]:
    """Pools that none of ``pods`` (name, template) could use; silent when there are no pods."""
    if not pods:
        return []
    out = []
    for pool in pools:
        types = launchable(pool, types_by_pool.get(pool.name, ()))
        if not types:
            continue
        if any(_pod_fits_pool(t, pool, types) for _, t in pods):
            continue
        field = "spec.taints" if pool.source.kind == "Provisioner" else "spec.template.spec.taints"
        if not pool.taints:
            field = requirements_field(pool)
        out.append(
            LintWarning(
                "unused-nodepool",
                pool.source.file,
                pool.source.ref,
                field,
                f"none of the {len(pods)} pods in the manifests can use this pool (taints, "
                "requirements or size rule every one out)",
                "Check its taints and labels against the pods' tolerations and node selectors, "
                "or remove the pool",
            )
        )
    return out


def _own(pool: NodePool) -> Requirements:
    """A pool's requirements without its own name labels (every pool differs there)."""
    return Requirements(
        r
        for k, r in pool.requirements.items()
        if k not in (labels.NODEPOOL, labels.LEGACY_PROVISIONER_NAME)
    )


def overlapping_pools(
    pools: Sequence[NodePool], types_by_pool: Mapping[str, Sequence[InstanceType]]
) -> list[LintWarning]:
    """Pairs of equal-weight pools that can launch the same instance types."""
    out = []
    ordered = sorted(pools, key=lambda p: p.name)
    for i, a in enumerate(ordered):
        a_types = {it.name for it in launchable(a, types_by_pool.get(a.name, ()))}
        for b in ordered[i + 1 :]:
            if a.weight != b.weight or _own(a).intersects(_own(b)) is not None:
                continue
            shared = a_types & {it.name for it in launchable(b, types_by_pool.get(b.name, ()))}
            if not shared:
                continue
            field = "spec.weight"
            out.append(
                LintWarning(
                    "overlapping-nodepools",
                    b.source.file,
                    b.source.ref,
                    field,
                    f"overlaps {a.source.ref} (both weight {a.weight}, {len(shared)} instance "
                    f"types in common): a pod both accept goes to {a.name}, by name order only",
                    "Give the preferred pool a higher spec.weight, or make their requirements "
                    "disjoint",
                )
            )
    return out


def small_limits(pool: NodePool, types: Sequence[InstanceType]) -> list[LintWarning]:
    """Limits below the capacity of the smallest node the pool can launch."""
    ok = launchable(pool, types)
    out = []
    for resource, limit in pool.limits:
        if resource == "nodes":
            if limit < 1:
                smallest = 1
            else:
                continue
        else:
            sizes = [it.capacity.get(resource, 0) for it in ok if it.capacity.get(resource, 0) > 0]
            if not sizes:
                continue
            smallest = min(sizes)
            if limit >= smallest:
                continue
        base = "spec.limits.resources" if pool.source.kind == "Provisioner" else "spec.limits"
        out.append(
            LintWarning(
                "limit-below-one-node",
                pool.source.file,
                pool.source.ref,
                f"{base}.{resource}",
                f"limit {quantity.format_resources({resource: limit})} is smaller than the "
                f"smallest node it can launch ({quantity.format_resources({resource: smallest})})"
                ": the pool can never launch",
                "Raise the limit or remove it",
            )
        )
    return out


#: Below this, ``expireAfter`` deletes nodes about as soon as they are Ready (boot takes
#: about a minute), so pods are evicted over and over.
MIN_USEFUL_EXPIRE_AFTER_S = 600.0


def disruption_settings(pool: NodePool) -> list[LintWarning]:
    """Disruption settings that defeat themselves: an ``expireAfter`` shorter than a node's
    useful life, and budgets that allow no disruption at any time."""
    out = []
    expire = pool.expire_after_s
    if expire is not None and expire < MIN_USEFUL_EXPIRE_AFTER_S:
        field = (
            "spec.ttlSecondsUntilExpired"
            if pool.source.kind == "Provisioner"
            else "spec.template.spec.expireAfter"
        )
        out.append(
            LintWarning(
                "expire-after-too-short",
                pool.source.file,
                pool.source.ref,
                field,
                f"nodes expire {expire:g}s after launch, about as soon as they are Ready, so "
                "their pods are evicted and rescheduled over and over",
                "Use hours or days (Karpenter's default is 720h), or Never",
            )
        )
    if any(
        b.schedule is None and b.allowed(1_000_000) == 0 and not b.reasons for b in pool.budgets
    ):
        out.append(
            LintWarning(
                "budget-blocks-all",
                pool.source.file,
                pool.source.ref,
                "spec.disruption.budgets",
                "a budget without a schedule allows 0 nodes for every reason, so emptiness, "
                "drift and consolidation never act on this pool (expiration still does)",
                "Give that budget a schedule and duration, or reasons, or remove it",
            )
        )
    return out


def min_values(pool: NodePool, types: Sequence[InstanceType]) -> list[LintWarning]:
    """Requirements whose ``minValues`` the pool's launchable types cannot reach: under
    Karpenter's default ``MIN_VALUES_POLICY=Strict`` every pod needing the pool stays
    pending."""
    ok = launchable(pool, types)
    if not ok:
        return []  # dead_values already says the pool launches nothing
    out: list[LintWarning] = []
    for key, r in sorted(pool.requirements.items()):
        if r.min_values is None:
            continue
        distinct = set().union(*(_values(it, key) for it in ok))
        if len(distinct) < r.min_values:
            out.append(
                LintWarning(
                    "min-values-unsatisfiable",
                    pool.source.file,
                    pool.source.ref,
                    requirements_field(pool),
                    f"{key} has minValues {r.min_values} but the {len(ok)} launchable instance "
                    f"types have only {len(distinct)} distinct value(s) "
                    f"({', '.join(sorted(distinct)) or 'none'})",
                    f"Lower minValues to {len(distinct)} or allow more values; with "
                    "MIN_VALUES_POLICY=Strict (the default) pods needing this pool stay pending",
                )
            )
    return out


def lint(
    pools: Sequence[NodePool],
    types_by_pool: Mapping[str, Sequence[InstanceType]],
    pods: Sequence[tuple[str, PodTemplate]] = (),
) -> list[LintWarning]:
    """Every check, pools in name order. A static pool (``replicas`` set: the
    ``StaticCapacity`` gate is on) is checked alone: pods never launch its nodes, so it is
    neither unused nor in competition with the other pools."""
    out: list[LintWarning] = []
    for pool in sorted(pools, key=lambda p: p.name):
        types = types_by_pool.get(pool.name, ())
        out += dead_values(pool, types)
        out += spot_flexibility(pool, types)
        out += small_limits(pool, types)
        out += min_values(pool, types)
        out += disruption_settings(pool)
    dynamic = [p for p in pools if p.replicas is None]
    out += unused_pools(dynamic, types_by_pool, pods)
    out += overlapping_pools(dynamic, types_by_pool)
    return out


def _dead_value_hint(key: str, value: str) -> str:
    """What to do about a requirement value no offering carries. ``reserved`` is offered only
    by capacity reservations the NodeClass selects (Karpenter-AWS), so its hint names them
    rather than the spelling."""
    if key == labels.CAPACITY_TYPE and value == "reserved":
        return (
            "Reserved capacity comes only from capacity reservations the EC2NodeClass's "
            "capacityReservationSelectorTerms select (active, in a zone of its subnets, with "
            "the ReservedCapacity gate on); fix the terms or the reservations, or remove "
            "'reserved'"
        )
    return f"Remove {value!r} or check its spelling"
