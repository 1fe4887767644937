"""The scheduler: a pure function from pending pods and capacity to NodeClaims to launch.

``Scheduler.solve(SchedulingInput) -> SchedulingResult`` follows Karpenter's provisioning
simulation (``pkg/controllers/provisioning/scheduling``): pods in queue order, each tried on
existing and in-flight nodes, then on NodeClaims opened earlier in this solve, then on a new
NodeClaim from each NodePool by weight. No I/O, no clock, no randomness; the one state a
solve changes is the caller's ``SchedulingInput.first_fit`` (Cluster Autoscaler's hints).
"""

from joiner.scheduling.placement import provisioning_order
from joiner.scheduling.scheduler import CreationTieScheduler, Scheduler
from joiner.scheduling.types import (
    BoundPod,
    ExistingNode,
    FirstFit,
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
    SchedulingInput,
    SchedulingResult,
    StopRule,
)

__all__ = [
    "BoundPod",
    "CreationTieScheduler",
    "ExistingNode",
    "FirstFit",
    "NewNodeClaim",
    "NodePoolTemplate",
    "PodRequest",
    "Scheduler",
    "SchedulingInput",
    "SchedulingResult",
    "StopRule",
    "provisioning_order",
]
