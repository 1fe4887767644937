"""PodDisruptionBudget arithmetic, as the Eviction API applies it.

For a budget selecting pods P (its namespace, its selector): ``healthy`` counts P's pods that
run on a Ready node (a pod on a node being drained still runs until it is evicted);
``expected`` is every live pod of P. ``minAvailable`` n (or n% of expected, rounded up)
allows ``healthy - n`` disruptions; ``maxUnavailable`` m (or m% of expected, rounded up)
allows ``m - (expected - healthy)``. An eviction needs at least one allowed disruption from
every budget that selects the pod.
"""

from __future__ import annotations

import functools
import math

from joiner.api.objects import PodDisruptionBudget
from joiner.api.requirements import Requirements
from joiner.state.cluster import ClusterState, Pod


def _scale(value: int | str, expected: int) -> int:
    if isinstance(value, int):
        return value
    return math.ceil(int(value.rstrip("%")) * expected / 100)


def selects(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    """The budget covers ``pod`` (same namespace, selector matches its labels)."""
    if pod.namespace != pdb.namespace or pod.daemon:
        return False
    return _matches(pdb.selector, pod.template.labels)


@functools.lru_cache(maxsize=65536)
def _matches(selector: Requirements, pod_labels: tuple[tuple[str, str], ...]) -> bool:
    have = Requirements.from_label_items(tuple(sorted(pod_labels)))
    return have.compatible(selector, allow_undefined=frozenset()) is None


def _members(state: ClusterState, pdb: PodDisruptionBudget) -> list[Pod]:
    # Terminating pods are neither expected nor healthy (their replacement is).
    return [p for p in state.live_pods() if p.terminating_until_s is None and selects(pdb, p)]


def _members_of_all(state: ClusterState) -> list[list[Pod]]:
    """``_members`` of every budget in ``state.pdbs`` (same order), from one walk over the
    live pods: each pod is matched only against the budgets of its namespace."""
    members: list[list[Pod]] = [[] for _ in state.pdbs]
    by_namespace: dict[str, list[int]] = {}
    for i, pdb in enumerate(state.pdbs):
        by_namespace.setdefault(pdb.namespace, []).append(i)
    if not by_namespace:
        return members
    # Which budgets select a pod depends on its namespace and its template's labels only;
    # the templates live as long as this walk, so their ids key it.
    selecting: dict[tuple[str, int], list[int]] = {}
    for p in state.live_pods():
        if p.terminating_until_s is not None or p.daemon:
            continue
        key = (p.namespace, id(p.template))
        found = selecting.get(key)
        if found is None:
            found = selecting[key] = [
                i
                for i in by_namespace.get(p.namespace, ())
                if _matches(state.pdbs[i].selector, p.template.labels)
            ]
        for i in found:
            members[i].append(p)
    return members


def _allowed(state: ClusterState, pdb: PodDisruptionBudget, pods: list[Pod]) -> int:
    """``disruptions_allowed`` for ``pdb`` whose members are ``pods``."""
    expected = len(pods)
    healthy = _healthy(state, pods)
    if pdb.min_available is not None:
        return healthy - _scale(pdb.min_available, expected)
    if pdb.max_unavailable is not None:
        return _scale(pdb.max_unavailable, expected) - (expected - healthy)
    return expected  # a budget with neither field blocks nothing


def _healthy(state: ClusterState, pods: list[Pod]) -> int:
    count = 0
    for p in pods:
        node = state.nodes.get(p.node_name) if p.node_name else None
        # A terminating pod is not healthy (the disruption controller skips pods with a
        # deletionTimestamp).
        if (
            node is not None
            and node.ready
            and node.deleted_at_s is None
            and p.terminating_until_s is None
        ):
            count += 1
    return count


def disruptions_allowed(state: ClusterState, pdb: PodDisruptionBudget) -> int:
    """How many of the budget's pods may be evicted now (may be negative)."""
    return _allowed(state, pdb, _members(state, pdb))


def allowed_by_budget(state: ClusterState) -> list[int]:
    """``disruptions_allowed`` of every budget in ``state.pdbs`` (same order), computed once
    for callers that check many pods against an unchanged cluster."""
    return [
        _allowed(state, pdb, pods)
        for pdb, pods in zip(state.pdbs, _members_of_all(state), strict=True)
    ]


def blocking(
    state: ClusterState, pod: Pod, allowed: list[int] | None = None
) -> PodDisruptionBudget | None:
    """The first budget that forbids evicting ``pod`` now, or None.

    ``allowed`` is ``allowed_by_budget(state)`` when the caller already has it.
    """
    for i, pdb in enumerate(state.pdbs):
        # The namespace first: most budgets are another namespace's.
        if pdb.namespace != pod.namespace or not selects(pdb, pod):
            continue
        left = allowed[i] if allowed is not None else disruptions_allowed(state, pdb)
        if left < 1:
            return pdb
    return None


def violated(state: ClusterState) -> list[PodDisruptionBudget]:
    """Budgets whose healthy count is below what they require right now."""
    return [
        pdb
        for pdb, pods in zip(state.pdbs, _members_of_all(state), strict=True)
        if pods and _allowed(state, pdb, pods) < 0
    ]
