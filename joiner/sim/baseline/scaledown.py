"""Cluster Autoscaler's scale-down checks: node utilisation, the drain rules that keep a
node (``utils/drain``: ``safe-to-evict``, bare pods, kube-system pods without a PDB, local
storage) and the drain simulation (budgets, every pod fits elsewhere). ``ClusterAutoscaler``
applies them to its candidates.
"""

from __future__ import annotations

from collections.abc import Callable

from joiner.api import quantity
from joiner.controllers.termination.pdb import allowed_by_budget, selects
from joiner.scheduling import Scheduler, SchedulingInput
from joiner.sim.baseline.settings import AutoscalerSettings
from joiner.state.cluster import ClusterState, Node, Pod
from joiner.state.snapshot import pod_requests, ready_snapshot


def utilisation(node: Node, pods: list[Pod]) -> float:
    """CA's node utilisation: the larger of requested CPU and memory over allocatable
    (``simulator.CalculateUtilization``, DaemonSet pods included as CA's default)."""
    cpu = mem = 0
    for p in pods:
        cpu += p.template.requests.get(quantity.CPU, 0)
        mem += p.template.requests.get(quantity.MEMORY, 0)
    alloc_cpu = node.allocatable.get(quantity.CPU, 0)
    alloc_mem = node.allocatable.get(quantity.MEMORY, 0)
    return max(cpu / alloc_cpu if alloc_cpu else 0.0, mem / alloc_mem if alloc_mem else 0.0)


def drain_blocker(
    pod: Pod,
    state: ClusterState,
    settings: AutoscalerSettings,
    replicated: Callable[[Pod], bool],
    now_s: float,
) -> str | None:
    """Why CA's drain rules keep ``pod``'s node at ``now_s``, or None
    (``simulator/drainability/rules``: safe-to-evict, replicated, system, not-safe-to-evict,
    local storage; a kube-system pod without a PDB blocks only until
    ``blocking_system_pod_disruption_timeout_s`` after its creation)."""
    t = pod.template
    if t.ca_safe_to_evict is False:
        return "safe-to-evict: false"
    if t.ca_safe_to_evict:
        return None
    if not replicated(pod):
        return "not replicated"
    s = settings
    if (
        s.skip_nodes_with_system_pods
        and pod.namespace == "kube-system"
        and now_s - pod.created_at_s <= s.blocking_system_pod_disruption_timeout_s
        and not any(selects(pdb, pod) for pdb in state.pdbs)
    ):
        return "kube-system pod without a PodDisruptionBudget"
    if s.skip_nodes_with_local_storage and t.local_volumes:
        return "local storage"
    return None


def unblocks_at(pods: list[Pod], state: ClusterState, settings: AutoscalerSettings) -> float | None:
    """When the first of ``pods`` that CA's system rule holds (a kube-system pod without a
    PDB) stops holding its node: its creation plus the blocking system pod disruption
    timeout; None when no pod is held by that rule. The scan loop wakes then, since nothing
    else changes when a timeout runs out."""
    if not settings.skip_nodes_with_system_pods:
        return None
    times = [
        p.created_at_s + settings.blocking_system_pod_disruption_timeout_s
        for p in pods
        if p.namespace == "kube-system"
        and not p.daemon
        and not any(selects(pdb, p) for pdb in state.pdbs)
    ]
    return min(times) if times else None


def movable(
    node: Node,
    pods: list[Pod],
    state: ClusterState,
    settings: AutoscalerSettings,
    replicated: Callable[[Pod], bool],
    scheduler: Scheduler,
    *,
    now_s: float,
    also_removed: frozenset[str] = frozenset(),
) -> bool:
    """No pod is blocked by CA's drain rules at ``now_s`` (``drain_blocker``), the budgets
    allow the evictions, and every pod fits on another Ready node, not one of
    ``also_removed`` (nodes chosen for removal in the same loop), as CA's drain simulation
    finds: the removed nodes take no pod but stay topology domains, at zero, so a pod under a
    hostname spread cannot leave a node where the spread is already at its skew. The pods of
    ``also_removed`` are not placed again here: with ``--max-drain-parallelism`` above 1
    this can accept a node whose pods would only have fitted where the earlier one's went."""
    if any(drain_blocker(p, state, settings, replicated, now_s) is not None for p in pods):
        return False
    budgets: dict[int, int] = {}
    for p in pods:
        for i, pdb in enumerate(state.pdbs):
            if selects(pdb, p):
                budgets[i] = budgets.get(i, 0) + 1
    allowed = allowed_by_budget(state) if budgets else []
    for i, count in budgets.items():
        if allowed[i] < count:
            return False
    existing, bound = ready_snapshot(state)
    result = scheduler.solve(
        SchedulingInput(
            pods=pod_requests(state, pods),
            existing=existing,
            bound_pods=bound,
            mode="kube-scheduler",
            exclude_nodes=also_removed | {node.name},
            keep_domains=also_removed | {node.name},
        )
    )
    return len(result.existing_placements) == len(pods)
