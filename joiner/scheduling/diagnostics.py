"""Configuration that can never take effect, found before anything launches.

``dead_values`` reports, per NodePool, each ``In`` value on an instance-type label (instance
type, family, arch, zone, capacity type, ...) that no launchable instance type can satisfy
under the pool's other requirements, and names the requirement that excludes it. The classic
case is the seed Provisioner: ``c6g.xlarge`` is arm64, and the legacy webhook's default
``kubernetes.io/arch In [amd64]`` removes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from joiner.api.objects import NodePool
from joiner.api.requirements import IN, Requirements
from joiner.cloudprovider.types import InstanceType


def _label_values(it: InstanceType, key: str) -> set[str]:
    r = it.requirements.get(key)
    if r is None or r.complement:
        return set()
    return set(r.values)


def dead_values(pool: NodePool, types: Sequence[InstanceType]) -> list[str]:
    """Human-readable warnings, one per dead value, in requirement-key order."""
    reqs = pool.requirements
    launchable = [
        it
        for it in types
        if it.requirements.intersects(reqs) is None and it.available_offerings(reqs)
    ]
    warnings: list[str] = []
    where = f"{pool.source.ref} ({pool.source.file})"
    if not launchable:
        warnings.append(
            f"{where}: no instance type can be launched under its requirements "
            f"({reqs.describe()}); pods that need it will stay pending"
        )
        return warnings
    for key in sorted(reqs):
        req = reqs[key]
        if req.operator != IN or not any(key in it.requirements for it in types):
            continue
        for value in sorted(req.values):
            if any(value in _label_values(it, key) for it in launchable):
                continue
            carriers = [it for it in types if value in _label_values(it, key)]
            if not carriers:
                warnings.append(
                    f"{where}: {key} value {value!r} matches no instance type offered in the "
                    "NodeClass's zones and region; it has no effect"
                )
                continue
            blockers = _blockers(reqs, key, carriers)
            because = (
                "; ".join(
                    b
                    + (
                        " (a default the legacy v1alpha5 webhook added because the "
                        "Provisioner does not set this key)"
                        if b in pool.defaulted
                        else ""
                    )
                    for b in blockers
                )
                or "no available offering in the allowed zones and capacity types"
            )
            warnings.append(
                f"{where}: {key} value {value!r} can never be launched: excluded by {because}"
            )
    return warnings


def _blockers(reqs: Requirements, key: str, carriers: Sequence[InstanceType]) -> list[str]:
    found: list[str] = []
    for other in sorted(reqs):
        if other == key:
            continue
        r = reqs[other]
        if all(
            other in it.requirements and len(it.requirements[other].intersection(r)) == 0
            for it in carriers
        ):
            found.append(r.describe())
    return found
