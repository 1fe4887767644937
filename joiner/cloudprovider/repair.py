"""Node repair policies: which Node conditions make a node unhealthy, and for how long they
are tolerated before it is replaced (Karpenter ``cloudprovider.RepairPolicy``, returned by
each CloudProvider's ``RepairPolicies()``).

``AWS_REPAIR_POLICIES`` are karpenter-provider-aws ``pkg/cloudprovider/cloudprovider.go``
``RepairPolicies``: the kubelet's ``Ready`` condition ``False`` or ``Unknown`` for 30
minutes, and the EKS node monitoring agent's conditions ``False``:
``AcceleratedHardwareReady`` for 10 minutes, ``StorageReady``, ``NetworkingReady``,
``KernelReady`` and ``ContainerRuntimeReady`` for 30 minutes. The simulated cloud models EC2,
so it answers the same policies; ``KWOK_REPAIR_POLICIES`` are Karpenter's kwok provider's.

``with_tolerations`` replaces tolerations by condition type (a setting, so tests run in
seconds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from joiner.api.errors import InputError

MINUTE_S = 60.0


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    """A node whose condition ``condition_type`` has had status ``condition_status`` for
    ``toleration_s`` seconds is unhealthy and may be repaired (replaced)."""

    condition_type: str
    condition_status: str
    toleration_s: float


AWS_REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", 30 * MINUTE_S),
    RepairPolicy("Ready", "Unknown", 30 * MINUTE_S),
    RepairPolicy("AcceleratedHardwareReady", "False", 10 * MINUTE_S),
    RepairPolicy("StorageReady", "False", 30 * MINUTE_S),
    RepairPolicy("NetworkingReady", "False", 30 * MINUTE_S),
    RepairPolicy("KernelReady", "False", 30 * MINUTE_S),
    RepairPolicy("ContainerRuntimeReady", "False", 30 * MINUTE_S),
)

#: Karpenter's kwok provider (``kwok/cloudprovider/cloudprovider.go`` ``RepairPolicies``):
#: the kubelet's ``Ready`` ``False`` or ``Unknown`` for 10 minutes.
KWOK_REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", 10 * MINUTE_S),
    RepairPolicy("Ready", "Unknown", 10 * MINUTE_S),
)


def with_tolerations(
    policies: Sequence[RepairPolicy],
    tolerations_s: Mapping[str, float],
    *,
    file: str | None = None,
    field: str = "nodeRepairTolerationSeconds",
) -> tuple[RepairPolicy, ...]:
    """``policies`` with the toleration of every policy on a condition type in
    ``tolerations_s`` (seconds, by type) replaced.

    Raises:
        InputError: a type no policy names, or a negative toleration (named by ``field``).
    """
    known = {p.condition_type for p in policies}
    for type_, seconds in tolerations_s.items():
        if type_ not in known:
            raise InputError(
                f"{type_!r} is not a condition node repair watches; known: "
                + ", ".join(sorted(known)),
                file=file,
                field=f"{field}.{type_}",
            )
        if seconds < 0:
            raise InputError(
                f"must not be negative, got {seconds:g}", file=file, field=f"{field}.{type_}"
            )
    return tuple(
        replace(p, toleration_s=float(tolerations_s[p.condition_type]))
        if p.condition_type in tolerations_s
        else p
        for p in policies
    )
