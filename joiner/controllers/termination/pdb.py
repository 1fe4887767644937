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
from dataclasses import dataclass

from joiner.api.objects import PodDisruptionBudget
from joiner.api.pods import PodTemplate
from joiner.api.requirements import Requirements
from joiner.state.cluster import ClusterState, Pod, changes_since, journal_forget, journal_mark


def _scale(value: int | str, expected: int) -> int:
    if isinstance(value, int):
        return value
    return math.ceil(int(value.rstrip("%")) * expected / 100)


def selects(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    """The budget covers ``pod`` (same namespace, selector matches its labels). A budget
    without a selector covers no pod (Karpenter pkg/utils/pdb/pdb.go newPdb:
    ``metav1.LabelSelectorAsSelector(nil)`` is ``labels.Nothing()``)."""
    if pdb.selector is None or pod.namespace != pdb.namespace or pod.daemon:
        return False
    return _matches(pdb.selector, pod.template.labels)


@functools.lru_cache(maxsize=65536)
def _matches(selector: Requirements, pod_labels: tuple[tuple[str, str], ...]) -> bool:
    have = Requirements.from_label_items(tuple(sorted(pod_labels)))
    return have.compatible(selector, allow_undefined=frozenset()) is None


def _matches_opt(selector: Requirements | None, pod_labels: tuple[tuple[str, str], ...]) -> bool:
    """``_matches``; a nil selector matches nothing."""
    return selector is not None and _matches(selector, pod_labels)


def _members(state: ClusterState, pdb: PodDisruptionBudget) -> list[Pod]:
    # Terminating pods are neither expected nor healthy (their replacement is).
    return [p for p in state.live_pods() if p.terminating_until_s is None and selects(pdb, p)]


class _Selection:
    """Which budgets of ``pdbs`` select a pod, by index: it depends on the pod's namespace
    and its template's labels only, so it is worked out once per template (the template
    is kept with the answer, so its id stays valid) and only against its namespace's
    budgets."""

    def __init__(self, pdbs: list[PodDisruptionBudget]) -> None:
        self._pdbs = tuple(pdbs)
        self._by_namespace: dict[str, list[int]] = {}
        for i, pdb in enumerate(pdbs):
            self._by_namespace.setdefault(pdb.namespace, []).append(i)
        self._seen: dict[tuple[str, int], tuple[PodTemplate, list[int]]] = {}

    def of(self, pod: Pod) -> list[int]:
        """The indexes (ascending) of the budgets that select ``pod`` (``selects``)."""
        if pod.daemon:
            return []
        t = pod.template
        key = (pod.namespace, id(t))
        hit = self._seen.get(key)
        if hit is None or hit[0] is not t:
            found = [
                i
                for i in self._by_namespace.get(pod.namespace, ())
                if _matches_opt(self._pdbs[i].selector, t.labels)
            ]
            if len(self._seen) >= _SEEN_MAX:
                self._seen.clear()
            hit = self._seen[key] = (t, found)
        return hit[1]

    def of_budgets(self, pdbs: list[PodDisruptionBudget]) -> bool:
        """This answers for ``pdbs``: the very same budgets, in the same order."""
        return len(pdbs) == len(self._pdbs) and all(
            a is b for a, b in zip(pdbs, self._pdbs, strict=True)
        )


#: At most this many templates' answers are kept by a ``_Selection``.
_SEEN_MAX = 1 << 16
#: The last ``_selection`` (its answers hold while the budgets are the same objects).
_LAST: list[_Selection] = []


def _selection(pdbs: list[PodDisruptionBudget]) -> _Selection:
    """Which budgets of ``pdbs`` select a pod: the last answer while the budgets are the
    same objects (a budget's selector never changes in place), else a new one."""
    if _LAST and _LAST[0].of_budgets(pdbs):
        return _LAST[0]
    _LAST[:] = [_Selection(pdbs)]
    return _LAST[0]


class _Kept:
    """The budgets' counts of one state (``_tallies``), kept up to date from the pods and
    nodes that changed since they were last asked for (``cluster.changes_since``) instead
    of walking every pod again: each counted pod's budgets and health are kept, so a
    changed pod is taken out and counted again, and every pod of a changed node too.

    Built by one walk over the live pods; ``follow`` returns False when the changes cannot be
    told (the journal's entries were dropped, a pod or node was written anew under its name
    or taken out of its registry, or a deletion was undone): then the caller builds a new
    one. Both tell the journal they are done with what they read (``journal_forget``)."""

    __slots__ = (
        "_mark",
        "_members",
        "_nodes_seen",
        "_pods_seen",
        "_stamp",
        "counts",
        "selection",
        "state",
    )

    def __init__(self, state: ClusterState, selection: _Selection) -> None:
        self.state = state
        self.selection = selection
        self._mark = journal_mark()
        self._pods_seen = len(state.pods.log)
        self._nodes_seen = len(state.nodes.log)
        self._stamp = (state.pods.changes, state.nodes.changes)
        #: Per counted pod (by uid): its budgets, and whether it counted as healthy.
        self._members: dict[str, tuple[list[int], bool]] = {}
        self.counts: tuple[list[int], list[int]] = ([0] * len(state.pdbs), [0] * len(state.pdbs))
        for p in state.live_pods():
            self._add(p)
        journal_forget(self._mark)

    def _add(self, p: Pod) -> None:
        """Count ``p`` (not when deleted, terminating, a DaemonSet's or selected by no
        budget: ``_members`` and ``_healthy``), remembering what it added."""
        if p.deleted_at_s is not None or p.terminating_until_s is not None or p.daemon:
            return
        budgets = self.selection.of(p)
        if not budgets:
            return
        up = _on_ready_node(self.state, p)
        expected, healthy = self.counts
        for i in budgets:
            expected[i] += 1
            if up:
                healthy[i] += 1
        self._members[p.uid] = (budgets, up)

    def _take_out(self, uid: str) -> None:
        was = self._members.pop(uid, None)
        if was is None:
            return
        expected, healthy = self.counts
        for i in was[0]:
            expected[i] -= 1
            if was[1]:
                healthy[i] -= 1

    def follow(self) -> bool:
        """Bring the counts up to date with what changed since the last call (module
        docstring); False when that cannot be told."""
        state = self.state
        changed = changes_since(self._mark)
        if changed is None or self._stamp != (state.pods.changes, state.nodes.changes):
            return False
        self._mark = journal_mark()
        pods = state.pods
        again: dict[str, Pod] = {}
        for k in pods.log[self._pods_seen :]:
            again[k] = pods[k]
        self._pods_seen = len(pods.log)
        nodes = [state.nodes[k] for k in state.nodes.log[self._nodes_seen :]]
        self._nodes_seen = len(state.nodes.log)
        for obj in changed:
            if isinstance(obj, Pod):
                if pods.get(obj.uid) is obj:
                    again[obj.uid] = obj
            elif state.nodes.get(obj.name) is obj:
                nodes.append(obj)
        for node in nodes:
            for p in state.pods_on(node.name):
                again[p.uid] = p
        for uid, p in again.items():
            self._take_out(uid)
            self._add(p)
        journal_forget(self._mark)
        return True


#: ``_tallies``' kept counts (of the last state and budgets asked about).
_KEPT: list[_Kept] = []


def _tallies(state: ClusterState, selection: _Selection) -> tuple[list[int], list[int]]:
    """Per budget in ``state.pdbs`` (same order), how many pods ``_members`` gives it
    (``expected``) and how many of those ``_healthy`` counts (lists the caller must not
    change): the counts kept for the last state and budgets asked about, brought up to date
    with what changed since (``_Kept``), else one walk over the pods."""
    if not state.pdbs:
        return [], []
    if _KEPT:
        kept = _KEPT[0]
        if kept.state is state and kept.selection is selection and kept.follow():
            return kept.counts
    kept = _Kept(state, selection)
    _KEPT[:] = [kept]
    return kept.counts


@dataclass
class Budgets:
    """Every budget of a cluster that does not change while this is used: how many
    disruptions each allows (``disruptions_allowed``, in ``state.pdbs`` order) and which
    select a pod."""

    pdbs: list[PodDisruptionBudget]
    allowed: list[int]
    _selection: _Selection

    def blocking(self, pod: Pod) -> PodDisruptionBudget | None:
        """The first budget that forbids evicting ``pod`` now, or None (``blocking``)."""
        for i in self._selection.of(pod):
            if self.allowed[i] < 1:
                return self.pdbs[i]
        return None


def budgets(state: ClusterState) -> Budgets:
    """The cluster's budgets as they are now (their counts kept across calls, ``_tallies``)."""
    selection = _selection(state.pdbs)
    expected, healthy = _tallies(state, selection)
    allowed = [
        _allowed_of(pdb, n, up) for pdb, n, up in zip(state.pdbs, expected, healthy, strict=True)
    ]
    return Budgets(state.pdbs, allowed, selection)


def _allowed(state: ClusterState, pdb: PodDisruptionBudget, pods: list[Pod]) -> int:
    """``disruptions_allowed`` for ``pdb`` whose members are ``pods``."""
    return _allowed_of(pdb, len(pods), _healthy(state, pods))


def _allowed_of(pdb: PodDisruptionBudget, expected: int, healthy: int) -> int:
    """``disruptions_allowed`` for ``pdb`` with ``expected`` members, ``healthy`` of them
    healthy."""
    if pdb.min_available is not None:
        return healthy - _scale(pdb.min_available, expected)
    if pdb.max_unavailable is not None:
        return _scale(pdb.max_unavailable, expected) - (expected - healthy)
    return expected  # a budget with neither field blocks nothing


def _on_ready_node(state: ClusterState, pod: Pod) -> bool:
    """``pod`` is bound to a node that is Ready and not deleted."""
    node = state.nodes.get(pod.node_name) if pod.node_name else None
    return node is not None and node.ready and node.deleted_at_s is None


def _healthy(state: ClusterState, pods: list[Pod]) -> int:
    # A terminating pod is not healthy (the disruption controller skips pods with a
    # deletionTimestamp).
    return sum(1 for p in pods if p.terminating_until_s is None and _on_ready_node(state, p))


def disruptions_allowed(state: ClusterState, pdb: PodDisruptionBudget) -> int:
    """How many of the budget's pods may be evicted now (may be negative)."""
    return _allowed(state, pdb, _members(state, pdb))


def allowed_by_budget(state: ClusterState) -> list[int]:
    """``disruptions_allowed`` of every budget in ``state.pdbs`` (same order), computed once
    for callers that check many pods against an unchanged cluster."""
    return budgets(state).allowed


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
        if allowed is None:  # every budget's count from one (kept) walk over the pods
            allowed = allowed_by_budget(state)
        if allowed[i] < 1:
            return pdb
    return None


def violated(state: ClusterState) -> list[PodDisruptionBudget]:
    """Budgets whose healthy count is below what they require right now."""
    expected, healthy = _tallies(state, _selection(state.pdbs))
    return [
        pdb
        for pdb, n, up in zip(state.pdbs, expected, healthy, strict=True)
        if n and _allowed_of(pdb, n, up) < 0
    ]
