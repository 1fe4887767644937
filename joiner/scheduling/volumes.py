"""Volume topology: where a pod's PersistentVolumeClaims let it run (Karpenter
``VolumeTopology``, kube-scheduler VolumeBinding).

A claim bound to a PersistentVolume with node affinity (an EBS volume lives in one zone)
restricts the node to those terms; an unbound claim whose StorageClass lists
``allowedTopologies`` restricts it to those. Several volumes combine as a cross product of
their alternatives, keeping the combinations that intersect; volumes with none in common
allow no node (``ConflictingVolumesError``). These requirements go on the NodeClaim only,
never into the pod's own affinity, so topology counting is unchanged.

A pod whose claims cannot be used yet is no demand at all (``MissingVolumeError``): a claim
or its bound volume missing or being deleted, or an unbound claim that names no
StorageClass, names one that does not exist, or whose StorageClass binds ``Immediate``ly
(the volume is made, in a zone of its own choosing, before the pod may schedule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from joiner.api.objects import PersistentVolume, PersistentVolumeClaim, PodTemplate, StorageClass
from joiner.api.requirements import Requirements

#: Cap on the alternatives a pod's volumes may produce (a cross product can explode).
MAX_ALTERNATIVES = 64

#: ``StorageClass.volumeBindingMode`` that binds (and provisions) a claim on its creation.
IMMEDIATE = "Immediate"


class MissingVolumeError(Exception):
    """A pod mounts a claim that cannot be used yet (missing, being deleted, or unbound and
    not bindable when the pod schedules): the pod cannot schedule, and is not provisioned
    for."""


class ConflictingVolumesError(MissingVolumeError):
    """A pod's volumes allow no common node (say, two EBS volumes in different zones): no
    node can ever hold it. Karpenter keeps the impossible merge and fails to schedule the
    pod; the outcome is the same, the message names the volumes."""


@dataclass(frozen=True, slots=True)
class ResolvedVolumes:
    """What a pod template's claims give: ``terms``, the node requirements as alternatives
    (empty for none), and ``described``, the claims that impose them with their volume's or
    StorageClass's requirements (``ns/claim (StorageClass gp3: ...)``, joined by "and"; empty
    for none), for reasons that name where a requirement comes from."""

    terms: tuple[Requirements, ...] = ()
    described: str = ""


def volume_terms(
    t: PodTemplate,
    pvcs: Sequence[PersistentVolumeClaim],
    pvs: Sequence[PersistentVolume],
    storage_classes: Sequence[StorageClass],
) -> tuple[Requirements, ...]:
    """The node requirements ``t``'s volumes impose, as alternatives; empty for none
    (``resolve_volumes(...).terms``).

    Raises:
        MissingVolumeError: as ``resolve_volumes``.
    """
    return resolve_volumes(t, pvcs, pvs, storage_classes).terms


def resolve_volumes(
    t: PodTemplate,
    pvcs: Sequence[PersistentVolumeClaim],
    pvs: Sequence[PersistentVolume],
    storage_classes: Sequence[StorageClass],
) -> ResolvedVolumes:
    """The node requirements ``t``'s volumes impose, and the claims imposing them.

    Karpenter ``pkg/controllers/provisioning/scheduling/volumetopology.go``
    ``GetRequirements`` (the alternatives) and ``ValidatePersistentVolumeClaims`` (the
    claims it refuses, which ``Provisioner.Validate`` drops from the pass).

    Raises:
        MissingVolumeError: a claim, or the volume a claim is bound to, is missing or being
            deleted; or an unbound claim names no StorageClass, a missing one, or one whose
            ``volumeBindingMode`` is ``Immediate``; ``ConflictingVolumesError`` when the
            claims' volumes allow no common node.
    """
    if not t.volume_claims:
        return ResolvedVolumes()
    claims = {(c.namespace, c.name): c for c in pvcs}
    volumes = {v.name: v for v in pvs}
    classes = {s.name: s for s in storage_classes}
    combos: list[Requirements] = [Requirements()]
    constrained: list[str] = []  # each constraining claim, described
    for name in t.volume_claims:
        claim = claims.get((t.namespace, name))
        if claim is None:
            raise MissingVolumeError(f"PersistentVolumeClaim {t.namespace}/{name} does not exist")
        if claim.deleting:
            raise MissingVolumeError(f"PersistentVolumeClaim {_key(claim)} is being deleted")
        if claim.volume_name:
            alternatives = _bound_terms(claim, volumes)
        else:
            alternatives = _unbound_terms(claim, classes)
        if alternatives:
            constrained.append(_described(claim, alternatives))
            combos = _merged(combos, alternatives, constrained)
    terms = tuple(c for c in combos if c)
    return ResolvedVolumes(terms, " and ".join(constrained) if terms else "")


def _merged(
    combos: Sequence[Requirements], alternatives: Sequence[Requirements], constrained: list[str]
) -> list[Requirements]:
    """The cross product of ``combos`` and one claim's ``alternatives``, keeping the pairs
    that intersect (Karpenter ``volumetopology.go`` ``mergeVolumeRequirementAlternatives``),
    at most ``MAX_ALTERNATIVES``.

    Raises:
        ConflictingVolumesError: no pair intersects; names the ``constrained`` claims.
    """
    merged = [c.merge(a) for c in combos for a in alternatives if c.intersects(a) is None]
    if not merged:
        raise ConflictingVolumesError(
            f"the volumes of PersistentVolumeClaims {' and '.join(constrained)} allow no "
            "common node"
        )
    return merged[:MAX_ALTERNATIVES]


def _described(claim: PersistentVolumeClaim, alternatives: Sequence[Requirements]) -> str:
    """``ns/name (PersistentVolume pv: <requirements>)``, or its StorageClass's, the
    alternatives joined by "or"."""
    origin = (
        f"PersistentVolume {claim.volume_name}"
        if claim.volume_name
        else f"StorageClass {claim.storage_class}"
    )
    return f"{_key(claim)} ({origin}: {' or '.join(a.describe() for a in alternatives)})"


def _key(claim: PersistentVolumeClaim) -> str:
    return f"{claim.namespace}/{claim.name}"


def _bound_terms(
    claim: PersistentVolumeClaim, volumes: Mapping[str, PersistentVolume]
) -> tuple[Requirements, ...]:
    """A bound claim's volume's node affinity (Karpenter ``validateVolume``: it must exist
    and not be being deleted)."""
    volume = volumes.get(claim.volume_name or "")
    if volume is None:
        raise MissingVolumeError(
            f"PersistentVolumeClaim {_key(claim)} is bound to PersistentVolume "
            f"{claim.volume_name}, which does not exist"
        )
    if volume.deleting:
        raise MissingVolumeError(
            f"PersistentVolumeClaim {_key(claim)} is bound to PersistentVolume "
            f"{claim.volume_name}, which is being deleted"
        )
    return volume.node_affinity


def _unbound_terms(
    claim: PersistentVolumeClaim, classes: Mapping[str, StorageClass]
) -> tuple[Requirements, ...]:
    """An unbound claim's StorageClass's allowed topologies; the claim must name a
    StorageClass that exists and waits for the first consumer (Karpenter
    ``ValidatePersistentVolumeClaims``; kube-scheduler's VolumeBinding refuses an unbound
    ``Immediate`` claim alike)."""
    if not claim.storage_class:
        raise MissingVolumeError(
            f"PersistentVolumeClaim {_key(claim)} is not bound and names no StorageClass"
        )
    storage_class = classes.get(claim.storage_class)
    if storage_class is None:
        raise MissingVolumeError(
            f"PersistentVolumeClaim {_key(claim)} names StorageClass {claim.storage_class}, "
            "which does not exist"
        )
    if storage_class.volume_binding_mode == IMMEDIATE:
        raise MissingVolumeError(
            f"PersistentVolumeClaim {_key(claim)} is not bound yet and StorageClass "
            f"{claim.storage_class} binds Immediate: the pod waits until it is bound"
        )
    return storage_class.allowed_topologies
