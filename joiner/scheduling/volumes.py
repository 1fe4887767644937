"""Volume topology: where a pod's PersistentVolumeClaims let it run (Karpenter
``VolumeTopology``, kube-scheduler VolumeBinding).

A claim bound to a PersistentVolume with node affinity (an EBS volume lives in one zone)
restricts the node to those terms; an unbound claim whose StorageClass lists
``allowedTopologies`` restricts it to those. Several volumes combine as a cross product of
their alternatives. These requirements go on the NodeClaim only, never into the pod's own
affinity, so topology counting is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from joiner.api.objects import PersistentVolume, PersistentVolumeClaim, PodTemplate, StorageClass
from joiner.api.requirements import Requirements

#: Cap on the alternatives a pod's volumes may produce (a cross product can explode).
MAX_ALTERNATIVES = 64


class MissingVolumeError(Exception):
    """A pod mounts a claim (or a bound volume) that does not exist: it cannot schedule."""


def volume_terms(
    t: PodTemplate,
    pvcs: Sequence[PersistentVolumeClaim],
    pvs: Sequence[PersistentVolume],
    storage_classes: Sequence[StorageClass],
) -> tuple[Requirements, ...]:
    """The node requirements ``t``'s volumes impose, as alternatives; empty for none.

    Raises:
        MissingVolumeError: a claim, or the volume a claim is bound to, is missing.
    """
    if not t.volume_claims:
        return ()
    claims = {(c.namespace, c.name): c for c in pvcs}
    volumes = {v.name: v for v in pvs}
    classes = {s.name: s for s in storage_classes}
    combos: list[Requirements] = [Requirements()]
    for name in t.volume_claims:
        claim = claims.get((t.namespace, name))
        if claim is None:
            raise MissingVolumeError(f"PersistentVolumeClaim {t.namespace}/{name} does not exist")
        alternatives: tuple[Requirements, ...] = ()
        if claim.volume_name:
            volume = volumes.get(claim.volume_name)
            if volume is None:
                raise MissingVolumeError(
                    f"PersistentVolumeClaim {t.namespace}/{name} is bound to PersistentVolume "
                    f"{claim.volume_name}, which does not exist"
                )
            alternatives = volume.node_affinity
        elif claim.storage_class and claim.storage_class in classes:
            alternatives = classes[claim.storage_class].allowed_topologies
        if alternatives:
            combos = [c.merge(a) for c in combos for a in alternatives][:MAX_ALTERNATIVES]
    return tuple(c for c in combos if c) or ()
