"""A solve's existing nodes: which of them takes a pod (``OnExisting``, the half of
``scheduler._Solve`` that places pods on nodes already running).

The predicates are kube-scheduler's Filter plugins as the scheduler's module docstring lists
them (taints, node selection, resources, host ports, volume topology, spread and pod
affinity); in ``kube-scheduler`` mode the nodes are tried in NodeResourcesFit LeastAllocated
order (``noderesources/least_allocated.go``), or with ``SchedulingInput.first_fit`` as Cluster
Autoscaler's fit check chooses (``_first_fit``), else in the solve's try order (Karpenter's
``scheduler.go`` tries existing nodes first, in order). Three things spare work without
changing an answer:

* ``room.FreeRoom``: a node without room for the requests is dead for the template for the
  rest of the solve (free room only shrinks), found by one array comparison;
* ``_static``: taints and node selection are decided once per node, template and relaxation;
* topology verdicts depend only on a node's domains on the constrained keys
  (``Summary.node_key``): one verdict per distinct combination, which ``_topology_filter``
  takes before the nodes are tried one by one, dropping every node of a refused zone.
"""

from __future__ import annotations

import numpy as np

from joiner.api import labels, quantity
from joiner.api.quantity import Resources
from joiner.api.requirements import Requirements
from joiner.scheduling.base import SolveBase
from joiner.scheduling.placement import (
    _Attempt,
    _blocking_taint,
    _Existing,
    _least_allocated,
    _Nodes,
    _ports_conflict,
)
from joiner.scheduling.pool import IntArray
from joiner.scheduling.room import BoolArray, FreeRoom
from joiner.scheduling.topology import Summary, Topology
from joiner.scheduling.types import FirstFit, SchedulingInput

_NO_UNDEFINED: frozenset[str] = frozenset()
#: ``OnExisting._static``'s marker for "not decided yet".
_UNDECIDED = Requirements()
#: ``_try_existing`` filters the nodes by topology first from this many candidate nodes (below,
#: one ``_admits`` per node costs less than grouping them).
_FILTER_FROM = 16
#: Topology verdicts of one attempt: (summary id, ``Summary.node_key``) -> verdict.
_VerdictMemo = dict[tuple[int, tuple[str | None, ...]], bool]
#: Distinct combinations of domains past which the topology filter is not tried (a verdict
#: each would cost more than it saves).
_COMBOS_MAX = 64

#: What decides that a node can never take a pod in a solve: (template id, relaxation step,
#: volume terms). The step also decides whether PreferNoSchedule is tolerated.
DeadKey = tuple[int, int, tuple[Requirements, ...]]


def dead_key(attempt: _Attempt) -> DeadKey:
    """``attempt``'s ``DeadKey`` (for existing nodes here, for NodeClaims in ``_try_claims``)."""
    return (id(attempt.pod.template), attempt.prefs.step, attempt.pod.volume_terms)


class OnExisting:
    """Placing a pod on a solve's existing nodes; ``scheduler._Solve`` sets the attributes
    below in its ``__init__``."""

    inp: SchedulingInput
    existing: _Nodes
    room: FreeRoom
    topology: Topology
    _base: SolveBase
    #: Positions in ``_base.nodes`` of the nodes this solve keeps (``existing``'s order).
    _keep: IntArray
    #: Per tuple of topology keys, the kept nodes' ``SolveBase.domain_combos``.
    _combos: dict[tuple[str, ...], IntArray]
    #: ``dead_key`` -> existing nodes (by position) that can never take such a pod.
    _dead: dict[DeadKey, BoolArray]
    #: (existing node id, template id, relaxation step, whether PreferNoSchedule is
    #: tolerated, volume terms) -> the first term of the pod's node selection the node
    #: admits, None if its taints or labels refuse.
    _static: dict[tuple[object, ...], Requirements | None]
    #: Node name -> position in ``existing``, made when a ``FirstFit`` hint is first read.
    _rows: dict[str, int] | None = None
    #: Whether a node holds room for nominated pods (``ExistingNode.held``), once asked.
    _held: bool | None = None

    def _summary(self, attempt: _Attempt, term: Requirements) -> Summary:
        found = attempt.summaries.get(term)
        if found is None:
            found = self.topology.summarize(
                attempt.pod.template, attempt.active, attempt.prefs.strict(term)
            )
            attempt.summaries[term] = found
        return found

    def _dead_for(self, attempt: _Attempt) -> BoolArray:
        """The nodes that can never take ``attempt``'s pod in this solve: by template,
        relaxation step and volume terms (its node selection merges the volumes' zones, so
        pods of one template whose volumes differ are refused by different nodes)."""
        key = dead_key(attempt)
        found = self._dead.get(key)
        if found is None:
            found = self._dead[key] = np.zeros(len(self.existing), dtype=np.bool_)
        return found

    def _try_existing(self, attempt: _Attempt) -> str | None:
        if not self.existing:
            return None
        first_fit = self.inp.first_fit
        if first_fit is not None:
            hinted = self._try_hint(attempt, first_fit)
            if hinted is not None:
                return hinted
        t = attempt.pod.template
        dead = self._dead_for(attempt)
        # A node without room for the requests never takes the template in this solve
        # (free room only shrinks): ``_admits`` would call it dead, so it is marked dead
        # unchecked (``room``: one array comparison over every node).
        dead |= ~self.room.fitting(t.requests)
        rows = np.flatnonzero(~dead)
        if rows.size == 0:
            return None
        # Topology verdicts by what they read of a node (its zone, say), for this pod: the
        # counts do not change until it is placed.
        memo: _VerdictMemo = {}
        if rows.size >= _FILTER_FROM:
            rows = self._topology_filter(attempt, rows, memo)
            if rows.size == 0:
                return None
        for i in self._search_order(rows, t.requests, first_fit).tolist():
            e = self.existing[i]
            verdict = self._admits(e, attempt, memo)
            if verdict is None:
                dead[i] = True
                continue
            if not verdict:
                continue
            if first_fit is not None:
                first_fit.last_index = (i + 1) % len(self.existing)
                first_fit.hints[attempt.pod.uid] = e.node.name
            return self._take(i, e, attempt)
        return None

    def _search_order(
        self, rows: IntArray, requests: Resources, first_fit: FirstFit | None
    ) -> IntArray:
        """The order in which existing nodes ``rows`` are tried for a pod requesting
        ``requests``: Cluster Autoscaler's walk from just after the node its previous search
        found (``first_fit``); kube-scheduler's LeastAllocated score, best first (ties by
        node name); else ``rows`` as given."""
        if first_fit is not None:
            # CA's walk starts just after the node its previous search found.
            start = first_fit.last_index % len(self.existing)
            return np.concatenate((rows[rows >= start], rows[rows < start]))
        if self.inp.mode != "kube-scheduler":
            return rows
        # Score only the nodes that may still take this template (LeastAllocated). The arrays
        # score free room alone: with a node holding room for nominated pods (``held``),
        # which scores count as free, each node is scored by ``_least_allocated``.
        if self._held is None:
            self._held = any(e.held for e in self.inp.existing)
        ordered = None if self._held else self.room.least_allocated_order(rows, requests)
        if ordered is not None:
            return ordered
        return np.array(
            sorted(
                rows.tolist(),
                key=lambda i: (
                    -_least_allocated(self.existing[i], requests),
                    self.existing[i].node.name,
                ),
            ),
            dtype=np.int64,
        )

    def _take(self, i: int, e: _Existing, attempt: _Attempt) -> str:
        """Place ``attempt``'s pod on existing node ``i`` (``e``); returns its name."""
        t = attempt.pod.template
        e.available = quantity.subtract(e.available, t.requests)
        self.room.take(i, t.requests)
        if t.host_ports:
            e.ports = [*e.ports, *t.host_ports]
        self.topology.record(t, dict(e.domains))
        return e.node.name

    def _try_hint(self, attempt: _Attempt, first_fit: FirstFit) -> str | None:
        """The pod's hinted node if it passes every filter now (CA
        ``HintingSimulator.tryScheduleUsingHints``: no search, the start is not moved)."""
        hint = first_fit.hint(attempt.pod.uid)
        if hint is None:
            return None
        if self._rows is None:
            self._rows = {self.existing.name(i): i for i in range(len(self.existing))}
        i = self._rows.get(hint)
        dead = self._dead_for(attempt)
        if i is None or dead[i]:
            return None
        e = self.existing[i]
        verdict = self._admits(e, attempt)
        if verdict is None:
            dead[i] = True
        if not verdict:
            return None
        first_fit.hints[attempt.pod.uid] = e.node.name
        return self._take(i, e, attempt)

    def _topology_filter(self, attempt: _Attempt, rows: IntArray, memo: _VerdictMemo) -> IntArray:
        """``rows`` without the nodes whose domains the pod's topology refuses, one verdict
        per distinct combination of domains (``Summary.node_key``) instead of one
        ``_admits`` per node (a zone spread refuses most nodes of a skewed zone); the
        verdicts go into ``memo``. Only for a pod with one node-selection term, whose
        every admitting node reads the same summary; otherwise ``rows`` unchanged. A node
        dropped here is one ``_admits`` would refuse on topology (False): the answer is
        unchanged, only fewer nodes are looked at."""
        if len(attempt.terms) != 1:
            return rows
        summary = self._summary(attempt, attempt.terms[0])
        keys = summary.node_keys()
        if keys is None:
            return rows
        codes, reps = self._base.domain_combos(keys)
        if len(reps) > _COMBOS_MAX:
            return rows
        kept = self._combos.get(keys)
        if kept is None:
            kept = self._combos[keys] = codes[self._keep]
        ok = np.zeros(len(reps), dtype=np.bool_)
        universe = self.topology.universe
        for j, at in enumerate(reps):
            # Any node with this combination gives its verdict (it reads only the domains),
            # kept by this solve or not.
            domains = self._base.nodes[at].domains
            key = summary.node_key(domains)
            if key is None:
                return rows  # verdicts are not shared (every node is its own domain)
            found = memo.get((id(summary), key))
            if found is None:
                found = summary.verdict(dict(domains), None, universe).ok
                memo[(id(summary), key)] = found
            ok[j] = found
        if ok.all():
            return rows
        return rows[ok[kept[rows]]]

    def _admits(
        self,
        e: _Existing,
        attempt: _Attempt,
        memo: _VerdictMemo | None = None,
    ) -> bool | None:
        """True if the node takes the pod now; None if it never will (monotonic: taints,
        resources, ports, node selection); False on topology, which may change. ``memo``
        holds topology verdicts by ``Summary.node_key`` while the counts stay the same."""
        t = attempt.pod.template
        # Taints and node selection depend only on the node, the template and how far its
        # preferences are relaxed: decided once per solve (the first term the node admits).
        prefs = attempt.prefs
        static = (id(e), id(t), prefs.step, prefs.tolerate_pns, attempt.pod.volume_terms)
        term = self._static.get(static, _UNDECIDED)
        if term is _UNDECIDED:
            term = None
            if _blocking_taint(t, e.node.taints, prefs.tolerate_pns) is None:
                allow = _NO_UNDEFINED if e.node.requirements is None else labels.WELL_KNOWN_LABELS
                term = next(
                    (
                        term
                        for term in attempt.terms
                        if e.requirements.compatible(term, allow_undefined=allow) is None
                    ),
                    None,
                )
            self._static[static] = term
        if (
            term is None
            or not quantity.fits(t.requests, e.available)
            or _ports_conflict(t.host_ports, e.ports)
        ):
            return None
        summary = self._summary(attempt, term)
        key = summary.node_key(e.domains) if memo is not None else None
        if memo is None or key is None:
            return summary.verdict(dict(e.domains), None, self.topology.universe).ok
        found = memo.get((id(summary), key))
        if found is None:
            found = summary.verdict(dict(e.domains), None, self.topology.universe).ok
            memo[(id(summary), key)] = found
        return found
