"""Topology: spread, pod affinity and anti-affinity counted per domain (Karpenter
``topology.go``/``topologygroup.go``, with kube-scheduler's arithmetic).

A ``Group`` is one constraint shape (kind, key, selector, namespaces); identical constraints
of many replicas share it. Counts start from the pods already bound to existing nodes and
grow as the solve places pods. A key's domain universe is every value the NodePools can
launch into (an empty zone a pool allows counts 0) plus the values of existing nodes.

Rules, per constraint on key ``k`` for a pod ``p`` (``self`` is 1 when ``p`` matches the
selector):

* spread (hostname): a NodeClaim ``d`` is allowed when ``count[d] + self <= maxSkew`` (a new
  node could always be the global minimum, so min is 0: Karpenter ``domainMinCount``); an
  existing node when ``count[d] + self - min <= maxSkew`` with ``min`` over the existing
  nodes the constraint's inclusion policies keep (kube-scheduler ``PodTopologySpread``
  Filter: the live cluster binds what fits existing nodes before Karpenter sees the pod);
* spread (other keys): over the eligible domains ``E`` (``nodeAffinityPolicy: Honor`` keeps
  only those the pod's node selection allows), ``min`` is the smallest count (0 when fewer
  than ``minDomains`` domains exist) and ``d`` is allowed when ``count[d] + self - min <=
  maxSkew``; ``nodeTaintsPolicy: Honor`` keeps only domains offered by a NodePool or node
  whose taints the pod tolerates (Karpenter ``TopologyDomainGroup.ForEachDomain``,
  kube-scheduler ``matchNodeInclusionPolicies``); when the domains are the existing nodes'
  alone (kube-scheduler mode), those policies judge each node whole, and a domain is kept
  when one of its nodes passes both (``Topology._node_domains``);
* affinity: the domains that hold a matching pod; when none does and ``p`` matches itself,
  any domain (the first pod starts the group);
* anti-affinity: domains holding no matching pod; and, inversely, pods already placed with
  a required anti-affinity selecting ``p`` keep it out of their domains. A node without the
  key satisfies an anti-affinity term (kube-scheduler ``InterPodAffinity`` Filter), so a key
  no node or NodePool carries never blocks.

A NodeClaim whose domain for ``k`` is not decided yet is narrowed to a single domain, the
least-loaded allowed one first, so later pods can count it. Equally loaded domains go in
name order: Karpenter's ``nextDomainTopologySpread`` takes the first min-count domain in Go
map order, which is random, so Joiner's fixed order is one of Karpenter's possible choices.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from joiner.api import labels
from joiner.api.objects import (
    SCHEDULE_ANYWAY,
    SELECTS_NO_POD,
    PodAffinityTerm,
    PodTemplate,
    Taint,
    TopologySpreadConstraint,
    tolerates_all,
)
from joiner.api.requirements import Requirement, Requirements

SPREAD = "spread"
AFFINITY = "affinity"
ANTI = "anti-affinity"


@dataclass(eq=False)
class Group:
    """One constraint shape and its per-domain counts of matching pods."""

    kind: str
    key: str
    selector: Requirements
    owner_namespace: str
    namespaces: tuple[str, ...] | None
    counts: dict[str, int] = field(default_factory=dict)

    def in_scope(self, namespace: str) -> bool:
        if self.namespaces is None:
            return namespace == self.owner_namespace
        return not self.namespaces or namespace in self.namespaces

    def selects(self, namespace: str, pod_labels: Requirements) -> bool:
        return (
            self.in_scope(namespace)
            and pod_labels.compatible(self.selector, allow_undefined=frozenset()) is None
        )


#: ``Group.selects`` answers by (selector, owner namespace, namespaces, pod namespace, pod
#: labels): the same running pods are matched against the same constraint shapes in every
#: solve. Cleared when full.
_SELECTS: dict[tuple[object, ...], bool] = {}


def _selects(g: Group, namespace: str, pod_labels: Requirements) -> bool:
    key = (g.selector, g.owner_namespace, g.namespaces, namespace, pod_labels)
    found = _SELECTS.get(key)
    if found is None:
        if len(_SELECTS) > 65536:
            _SELECTS.clear()
        found = g.selects(namespace, pod_labels)
        _SELECTS[key] = found
    return found


@dataclass(frozen=True)
class Active:
    """The constraints in force for one attempt at placing a pod (preferences included
    until relaxed)."""

    spread: tuple[TopologySpreadConstraint, ...]
    affinity: tuple[PodAffinityTerm, ...]
    anti_affinity: tuple[PodAffinityTerm, ...]

    @staticmethod
    def required(t: PodTemplate) -> Active:
        """Only the hard constraints."""
        return Active(
            tuple(c for c in t.spread if c.when_unsatisfiable != SCHEDULE_ANYWAY),
            t.pod_affinity,
            t.pod_anti_affinity,
        )

    def empty(self) -> bool:
        return not (self.spread or self.affinity or self.anti_affinity)


@dataclass
class _Spread:
    group: Group
    me: int
    max_skew: int
    eligible: list[str]
    min_domains: int | None

    def allows(self, domain: str, extra: int = 0) -> bool:
        """kube-scheduler's skew check with ``extra`` uncounted matching pods in ``domain``."""
        if domain not in self.eligible:
            return False
        counts = self.group.counts
        low = min(
            (counts.get(d, 0) + (extra if d == domain else 0) for d in self.eligible), default=0
        )
        if self.min_domains is not None and len(self.eligible) < self.min_domains:
            low = 0
        return counts.get(domain, 0) + extra + self.me - low <= self.max_skew


#: ``Summary.node_key``'s marker: a hostname constraint applies.
_PER_HOST: tuple[str, ...] = ("<per host>",)


class Summary:
    """A pod's topology constraints resolved against the current counts.

    Per key: spread constraints, affinity groups (with the domains that hold a match, or a
    self-start), anti-affinity groups and domains forbidden by other pods' anti-affinity.
    ``host_max`` bounds a hostname group's count on the target; ``fail`` is set when nothing
    can work.
    """

    __slots__ = (
        "_node_keys",
        "active",
        "affinity",
        "anti",
        "fail",
        "forbidden",
        "host_max",
        "spread",
    )

    def __init__(self, active: Active) -> None:
        self.active = active
        self.spread: dict[str, list[_Spread]] = {}
        self.affinity: dict[str, list[tuple[Group, set[str]]]] = {}
        self.anti: dict[str, list[Group]] = {}
        #: Per key, the domains other pods' anti-affinity keeps the pod out of: read only (a
        #: set may be the ``Topology``'s own, which grows as pods are placed, so a summary
        #: answers for the counts it was made at only while nothing is placed).
        self.forbidden: dict[str, set[str]] = {}
        #: (group, limit on a NodeClaim, extra allowed on an existing node: the smallest
        #: count among the existing nodes kube-scheduler considers).
        self.host_max: list[tuple[Group, int, int]] = []
        self.fail: str | None = None
        self._node_keys: tuple[str, ...] | None = None

    @property
    def trivial(self) -> bool:
        """No constraint applies."""
        return (
            not (self.spread or self.affinity or self.anti or self.forbidden or self.host_max)
            and self.fail is None
        )

    @property
    def allowed(self) -> dict[str, set[str] | None]:
        """Per key, the domains a decided target may be in (None: any)."""
        out: dict[str, set[str] | None] = {}
        for key in set(self.spread) | set(self.affinity):
            sets = [{d for d in sp.eligible if sp.allows(d)} for sp in self.spread.get(key, [])]
            sets += [present for _, present in self.affinity.get(key, []) if present]
            out[key] = set.intersection(*sets) if sets else None
        return out

    def forbidden_on(self, key: str) -> set[str]:
        """The domains of ``key`` a decided target may not be in (a new set)."""
        out = set(self.forbidden.get(key, ()))
        for g in self.anti.get(key, []):
            out.update(d for d, n in g.counts.items() if n > 0)
        return out

    def node_keys(self) -> tuple[str, ...] | None:
        """The topology keys ``node_key`` reads, sorted; None when a hostname constraint
        applies (every node is its own domain). Call only once the summary is complete (its
        keys are taken on the first call)."""
        keys = self._node_keys
        if keys is None:
            if (
                self.host_max
                or labels.HOSTNAME in self.affinity
                or labels.HOSTNAME in self.forbidden
            ):
                keys = _PER_HOST
            else:
                found = set(self.spread) | set(self.affinity) | set(self.anti) | set(self.forbidden)
                found.discard(labels.HOSTNAME)
                keys = tuple(sorted(found))
            self._node_keys = keys
        return None if keys is _PER_HOST else keys

    def node_key(self, domain_of: Mapping[str, str | None]) -> tuple[str | None, ...] | None:
        """What ``verdict`` reads of an existing node (no NodeClaim requirements, nothing
        to decide): its domains on the ``node_keys`` (constrained keys other than the
        hostname). Nodes with equal keys get equal verdicts while the counts stay; None when
        a hostname constraint applies. Call only once the summary is complete."""
        keys = self.node_keys()
        if keys is None:
            return None
        return tuple(domain_of.get(k) for k in keys)

    def _decided_ok(self, key: str, d: str) -> bool:
        if d in self.forbidden.get(key, ()):
            return False
        if any(g.counts.get(d, 0) > 0 for g in self.anti.get(key, [])):
            return False
        if any(present and d not in present for _, present in self.affinity.get(key, [])):
            return False
        return all(sp.allows(d) for sp in self.spread.get(key, []))

    def _host_ok(self, host: str, existing: bool) -> bool:
        """May the pod go to host ``host`` (an existing node when ``existing``): the
        per-host limits, hostname affinity and forbidden hostnames."""
        for g, limit, low in self.host_max:
            if g.counts.get(host, 0) > limit + (low if existing else 0):
                return False
        for _, present in self.affinity.get(labels.HOSTNAME, []):
            if present and host not in present:
                return False
        return host not in self.forbidden.get(labels.HOSTNAME, ())

    def _candidates(
        self,
        key: str,
        claim_reqs: Requirements,
        universe: dict[str, set[str]],
        pending: Callable[[Group], int] | None,
        decide: Mapping[str, Group] | None,
    ) -> list[str]:
        """The domains of ``key`` an undecided NodeClaim may be narrowed to (see
        ``verdict``), the first spread group's (else the ``decide`` group's) least-loaded
        first, ties by name."""
        req = claim_reqs.get_or_exists(key)
        spreads = self.spread.get(key, [])
        candidates = []
        for v in universe.get(key, set()):
            if not req.has(v) or v in self.forbidden.get(key, ()):
                continue
            if any(
                g.counts.get(v, 0) > 0 or (pending is not None and pending(g) > 0)
                for g in self.anti.get(key, [])
            ):
                continue
            if any(
                present and v not in present and not (pending is not None and pending(g) > 0)
                for g, present in self.affinity.get(key, [])
            ):
                continue
            if not all(sp.allows(v, pending(sp.group) if pending else 0) for sp in spreads):
                continue
            candidates.append(v)
        if spreads:
            first = spreads[0].group.counts
        elif decide and key in decide:
            first = decide[key].counts
        else:
            first = {}
        return self._ordered(candidates, first)

    @staticmethod
    def _ordered(candidates: list[str], counts: Mapping[str, int]) -> list[str]:
        """``candidates`` least-loaded first by ``counts``, ties by name.

        Karpenter breaks the ties in Go's map order, drawn afresh at every call
        (``topologygroup.go``: ``nextDomainTopologySpread`` ranges over
        ``Requirement.Values``, an unsorted list, and keeps the first least-loaded domain;
        ``nextDomainAffinity`` bootstraps from the first domain of a map); Joiner's is the
        deterministic one of those orders. The differential harness replaces this to try
        the others (``tests/fidelity/harness.py``, ``tie_choice_agreement``)."""
        return sorted(candidates, key=lambda v: (counts.get(v, 0), v))

    def _options(
        self, key: str, candidates: list[str], decide: Mapping[str, Group] | None
    ) -> list[Requirement]:
        """The narrowings of an undecided NodeClaim on ``key`` to try, in order: one domain
        each where a spread, an affinity or ``decide`` chooses one (Karpenter
        ``nextDomainTopologySpread``); all ``candidates`` at once under anti-affinity alone,
        which leaves every allowed domain open (``topologygroup.go``
        ``nextDomainAntiAffinity``)."""
        if key in self.spread or key in self.affinity or (decide and key in decide):
            return [Requirement.in_(key, v) for v in candidates]
        return [Requirement.in_(key, *sorted(candidates))]

    def verdict(
        self,
        domain_of: dict[str, str | None],
        claim_reqs: Requirements | None,
        universe: dict[str, set[str]],
        pending: Callable[[Group], int] | None = None,
        pending_repels: Callable[[str], bool] | None = None,
        decide: Mapping[str, Group] | None = None,
        launchable: frozenset[str] | set[str] = frozenset(),
    ) -> Verdict:
        """May the pod go to a target whose domains are ``domain_of`` (None where a NodeClaim
        has not decided; ``claim_reqs`` is None for an existing node)? For a NodeClaim,
        ``pending(g)`` counts its pods that match ``g`` but are not counted yet (their domain
        was undecided), and
        ``pending_repels(key)`` says whether one of them has a required anti-affinity on
        ``key`` selecting this pod; narrowing the NodeClaim moves them into the chosen
        domain too, so both are part of the check. ``decide`` maps further keys the
        NodeClaim must be pinned on (a group counts this pod there) to that group, whose
        least-loaded domain is tried first. ``launchable`` lists the keys a NodePool can
        give a new node: an anti-affinity on any other key never applies to a NodeClaim."""
        if self.fail is not None:
            return Verdict(False, self.fail)
        if self.trivial and not decide:
            return OK
        host = domain_of.get(labels.HOSTNAME)
        if host is not None and not self._host_ok(host, claim_reqs is None):
            return Verdict(False, _why(labels.HOSTNAME, self.active))
        keys = set(self.spread) | set(self.affinity) | set(self.anti) | set(self.forbidden)
        keys |= set(decide or ())
        keys.discard(labels.HOSTNAME)
        narrow: list[list[Requirement]] = []
        for key in sorted(keys):
            d = domain_of.get(key)
            if claim_reqs is None or d is not None:
                if d is None:
                    if key in self.spread or key in self.affinity:
                        return Verdict(False, f"the node has no {key} label")
                    continue
                if not self._decided_ok(key, d):
                    return Verdict(False, _why(key, self.active))
                continue
            if (
                key not in self.spread
                and key not in self.affinity
                and key not in launchable
                and key not in claim_reqs
            ):
                continue  # the node will not carry the key: anti-affinity cannot apply
            if pending_repels is not None and pending_repels(key):
                return Verdict(False, _why(key, self.active))
            candidates = self._candidates(key, claim_reqs, universe, pending, decide)
            if not candidates:
                return Verdict(False, _why(key, self.active))
            narrow.append(self._options(key, candidates, decide))
        if not narrow:
            return OK
        return Verdict(True, narrowings=_combos(narrow))


def _listed(reqs: Requirements, key: str) -> tuple[str, ...]:
    """The values ``reqs`` lists on ``key`` (Karpenter ``Requirement.Values``: those of an
    ``In``, and those a ``NotIn`` excludes; none without a requirement on the key)."""
    r = reqs.get(key)
    return tuple(sorted(r.values)) if r is not None else ()


def _combos(narrow: list[list[Requirement]]) -> list[tuple[Requirement, ...]]:
    """One requirement per key from each of ``narrow``'s lists (key by key, each list's
    order kept), at most the first 64 combinations."""
    combos: list[tuple[Requirement, ...]] = [()]
    for options in narrow:
        combos = [(*c, o) for c in combos for o in options][:64]
    return combos


def _why(key: str, active: Active) -> str:
    kinds = []
    if any(c.key == key for c in active.spread):
        kinds.append("topology spread")
    if any(term.key == key for term in active.affinity):
        kinds.append("pod affinity")
    if any(term.key == key for term in active.anti_affinity):
        kinds.append("pod anti-affinity")
    what = " and ".join(kinds) or "another pod's anti-affinity"
    return f"{what} on {key} leave no allowed domain"


class Verdict:
    """Result of checking a target: ``ok`` and, for an undecided NodeClaim, the ordered
    single-domain narrowings to try."""

    __slots__ = ("narrowings", "ok", "reason")

    def __init__(
        self, ok: bool, reason: str = "", narrowings: Sequence[tuple[Requirement, ...]] = ((),)
    ) -> None:
        self.ok = ok
        self.reason = reason
        self.narrowings = narrowings


#: The verdict of a target no constraint applies to.
OK = Verdict(True)


class Topology:
    """Groups and counts for one solve."""

    def __init__(
        self,
        universe: dict[str, set[str]],
        domain_taints: Mapping[str, Mapping[str, Sequence[tuple[Taint, ...]]]] | None = None,
        existing_hosts: Sequence[tuple[str, Requirements, tuple[Taint, ...], bool]] = (),
        launchable: frozenset[str] = frozenset(),
        nodes_only: bool = False,
    ) -> None:
        """``universe``: per key, every domain value; ``domain_taints``: per key and value,
        the taint sets of the NodePools and nodes offering it (``nodeTaintsPolicy``);
        ``existing_hosts``: (hostname, requirements, taints, exact) of each existing node;
        ``launchable``: keys a NodePool can give a new node; ``nodes_only``: the domains
        are the existing nodes' alone (kube-scheduler), so a spread's inclusion policies
        keep a domain by its nodes (``_node_domains``)."""
        self.universe = universe
        self.domain_taints = domain_taints or {}
        self.existing_hosts = existing_hosts
        self.launchable = launchable
        self.nodes_only = nodes_only
        #: ``_node_domains`` answers, by constraint key, policies, tolerations and pod
        #: requirements.
        self._node_domains_memo: dict[tuple[object, ...], list[str]] = {}
        self._groups: dict[tuple[object, ...], Group] = {}
        #: Placed pods' required anti-affinity: (term, owner namespace, domains).
        self._inverse: dict[tuple[PodAffinityTerm, str], set[str]] = {}
        #: What matching reads of a template is its namespace and labels, so the answers
        #: below are kept by those (many templates share them: requests differ).
        self._label_reqs: dict[tuple[tuple[str, str], ...], Requirements] = {}
        #: The summary of each constraint set with nothing in force (``summarize``).
        self._trivial: dict[int, Summary] = {}
        self._match: dict[tuple[int, str, tuple[tuple[str, str], ...]], bool] = {}
        #: ``groups_matching`` answers, with the number of groups registered when answered
        #: (groups are only ever added; a new one recomputes).
        self._matching: dict[
            tuple[str, tuple[tuple[str, str], ...]], tuple[int, tuple[Group, ...]]
        ] = {}

    # -- groups ------------------------------------------------------------------------

    def _group(
        self,
        kind: str,
        key: str,
        selector: Requirements,
        ns: str,
        namespaces: tuple[str, ...] | None,
    ) -> Group:
        gk = (kind, key, selector, ns if namespaces is None else None, namespaces)
        g = self._groups.get(gk)
        if g is None:
            g = Group(kind, key, selector, ns, namespaces)
            self._groups[gk] = g
        return g

    def spread_group(self, t: PodTemplate, c: TopologySpreadConstraint) -> Group:
        return self._group(SPREAD, c.key, c.selector, t.namespace, None)

    def affinity_group(self, t: PodTemplate, term: PodAffinityTerm, kind: str) -> Group:
        return self._group(kind, term.key, term.selector, t.namespace, term.namespaces)

    def groups(self) -> list[Group]:
        """Every group registered so far, in registration order."""
        return list(self._groups.values())

    @property
    def has_groups(self) -> bool:
        """True when some constraint counts pods (bound pods must then be recorded)."""
        return bool(self._groups)

    def register(self, templates: Iterable[PodTemplate]) -> None:
        """Create the groups of every constraint (hard and preferred) of ``templates``."""
        for t in templates:
            for c in t.spread:
                self.spread_group(t, c)
            for term in (*t.pod_affinity, *(w[1] for w in t.preferred_pod_affinity)):
                self.affinity_group(t, term, AFFINITY)
            for term in (*t.pod_anti_affinity, *(w[1] for w in t.preferred_pod_anti_affinity)):
                self.affinity_group(t, term, ANTI)

    def _labels_of(self, t: PodTemplate) -> Requirements:
        found = self._label_reqs.get(t.labels)
        if found is None:
            found = Requirements.from_label_items(tuple(sorted(t.labels)))
            self._label_reqs[t.labels] = found
        return found

    def matches(self, g: Group, t: PodTemplate) -> bool:
        """``t``'s pods count in ``g``."""
        key = (id(g), t.namespace, t.labels)
        found = self._match.get(key)
        if found is None:
            found = g.selects(t.namespace, self._labels_of(t))
            self._match[key] = found
        return found

    # -- recording ---------------------------------------------------------------------

    def record_bound(
        self,
        namespace: str,
        pod_labels: tuple[tuple[str, str], ...],
        node_labels: dict[str, str],
        anti_affinity: Sequence[PodAffinityTerm] = (),
        *,
        count: int = 1,
    ) -> None:
        """Count ``count`` pods with ``pod_labels`` (sorted items) already running on a node
        with ``node_labels``."""
        reqs = Requirements.from_label_items(tuple(sorted(pod_labels)))
        for g in self._groups.values():
            d = node_labels.get(g.key)
            if d is not None and _selects(g, namespace, reqs):
                g.counts[d] = g.counts.get(d, 0) + count
        self.record_anti(namespace, node_labels, anti_affinity)

    def record_anti(
        self,
        namespace: str,
        node_labels: Mapping[str, str],
        anti_affinity: Sequence[PodAffinityTerm],
    ) -> None:
        """Keep pods matching a running pod's required ``anti_affinity`` out of its domains
        (the pod runs in ``namespace`` on a node with ``node_labels``)."""
        for term in anti_affinity:
            d = node_labels.get(term.key)
            if d is not None:
                self._inverse.setdefault((term, namespace), set()).add(d)

    def record(
        self,
        t: PodTemplate,
        domain_of: Mapping[str, str | None],
        undecided: Requirements | None = None,
        *,
        decided_late: bool = False,
    ) -> None:
        """Count a pod placed by this solve; ``domain_of`` maps keys to its domain there
        (None: a NodeClaim's, not decided yet). On such a NodeClaim, whose requirements are
        ``undecided``, an anti-affinity counts the pod in every domain the requirement on
        its key lists, as do the pod's own required anti-affinity terms (Karpenter
        ``topology.go`` ``Topology.Record``: "for anti-affinity topologies we need to block
        out all possible domains that the pod could land in", with ``Requirement.Values``,
        which for a ``NotIn`` are the values it excludes). ``decided_late``: the NodeClaim
        was just narrowed to ``domain_of`` for a pod placed earlier, which counts now in the
        spread and affinity groups (anti-affinity counted it at placement)."""
        for g in self.groups_matching(t):
            d = domain_of.get(g.key)
            if g.kind == ANTI and (decided_late or d is None):
                if not decided_late and undecided is not None:
                    for v in _listed(undecided, g.key):
                        g.counts[v] = g.counts.get(v, 0) + 1
                continue
            if d is not None:
                g.counts[d] = g.counts.get(d, 0) + 1
        if decided_late:
            return
        for term in t.pod_anti_affinity:
            d = domain_of.get(term.key)
            if d is not None:
                self._inverse.setdefault((term, t.namespace), set()).add(d)
            elif undecided is not None:
                self._inverse.setdefault((term, t.namespace), set()).update(
                    _listed(undecided, term.key)
                )

    def groups_matching(self, t: PodTemplate) -> tuple[Group, ...]:
        """Groups that count ``t``'s pods, in registration order (remembered per namespace
        and labels until a group is added: every placement and attempt of its pods reads
        them)."""
        n = len(self._groups)
        if n == 0:
            return ()
        key = (t.namespace, t.labels)
        found = self._matching.get(key)
        if found is None or found[0] != n:
            found = (n, tuple(g for g in self._groups.values() if self.matches(g, t)))
            self._matching[key] = found
        return found[1]

    # -- checking ----------------------------------------------------------------------

    def summarize(self, t: PodTemplate, active: Active, pod_reqs: Requirements) -> Summary:
        """What ``t``'s constraints allow, independent of the target (computed once per
        attempt, then applied to many targets). Where nothing applies (no constraint in
        force, no placed pod's anti-affinity) the summary is the same for every pod of
        ``active`` and is shared."""
        if active.empty() and not self._inverse:
            found = self._trivial.get(id(active))
            if found is None or found.active is not active:
                found = self._trivial[id(active)] = Summary(active)
            return found
        summary = Summary(active)
        labels_t = self._labels_of(t)
        for c in active.spread:
            g = self.spread_group(t, c)
            me = 1 if self.matches(g, t) else 0
            if c.key == labels.HOSTNAME:
                summary.host_max.append((g, c.max_skew - me, self._existing_low(g, c, t, pod_reqs)))
                continue
            summary.spread.setdefault(c.key, []).append(
                _Spread(g, me, c.max_skew, self._eligible(c, t, pod_reqs), c.min_domains)
            )
        for term in active.affinity:
            g = self.affinity_group(t, term, AFFINITY)
            present = {d for d, n in g.counts.items() if n > 0}
            if not present and not self.matches(g, t):
                summary.fail = f"pod affinity on {term.key}: " + (
                    "its labelSelector is not set, so it selects no pod"
                    if term.selector is SELECTS_NO_POD
                    else "no matching pod runs anywhere"
                )
                return summary
            summary.affinity.setdefault(term.key, []).append((g, present))
        for term in active.anti_affinity:
            g = self.affinity_group(t, term, ANTI)
            if term.key == labels.HOSTNAME:
                summary.host_max.append((g, 0, 0))
            else:
                summary.anti.setdefault(term.key, []).append(g)
        self._forbid(summary, t, labels_t)
        return summary

    def _forbid(self, summary: Summary, t: PodTemplate, labels_t: Requirements) -> None:
        """Fill ``summary.forbidden``: the domains of placed pods whose required
        anti-affinity selects ``t``'s pods (labels ``labels_t``). One term's domains are
        taken as they are (a hostname anti-affinity's grow with every NodeClaim: a copy per
        pod would be work in the NodeClaims opened), a union of two or more is a new set."""
        forbidden = summary.forbidden
        shared: set[str] = set()
        for (term, ns), domains in self._inverse.items():
            if not term.covers(ns, t.namespace) or (
                labels_t.compatible(term.selector, allow_undefined=frozenset()) is not None
            ):
                continue
            have = forbidden.get(term.key)
            if have is None:
                forbidden[term.key] = domains
                shared.add(term.key)
            elif term.key in shared:
                forbidden[term.key] = have | domains
                shared.discard(term.key)
            else:
                have.update(domains)

    def repels(self, owner: PodTemplate, t: PodTemplate, key: str) -> bool:
        """``owner`` has a required anti-affinity on ``key`` that selects ``t``'s pods."""
        labels_t = self._labels_of(t)
        return any(
            term.key == key
            and term.covers(owner.namespace, t.namespace)
            and labels_t.compatible(term.selector, allow_undefined=frozenset()) is None
            for term in owner.pod_anti_affinity
        )

    def _eligible(
        self, c: TopologySpreadConstraint, t: PodTemplate, pod_reqs: Requirements
    ) -> list[str]:
        """The domains a spread constraint counts: ``nodeAffinityPolicy: Honor`` keeps those
        the pod's node selection allows, ``nodeTaintsPolicy: Honor`` those offered by a
        NodePool or node whose taints the pod tolerates (Karpenter ``topologydomaingroup.go``
        ``ForEachDomain``; kube-scheduler ``matchNodeInclusionPolicies``)."""
        if self.nodes_only and (
            c.node_affinity_policy == "Honor" or c.node_taints_policy == "Honor"
        ):
            return self._node_domains(c, t, pod_reqs)
        domains: Iterable[str] = self.universe.get(c.key, set())
        if c.node_affinity_policy == "Honor":
            r = pod_reqs.get_or_exists(c.key)
            domains = [d for d in domains if r.has(d)]
        if c.node_taints_policy == "Honor":
            sources = self.domain_taints.get(c.key, {})
            domains = [
                d
                for d in domains
                if any(tolerates_all(t.tolerations, ts) is None for ts in sources.get(d, [()]))
            ]
        return sorted(domains)

    def _node_domains(
        self, c: TopologySpreadConstraint, t: PodTemplate, pod_reqs: Requirements
    ) -> list[str]:
        """kube-scheduler's domains of a spread constraint: the ``c.key`` values of the
        existing nodes its inclusion policies keep, each node judged whole (its labels
        against the pod's required node selection, its taints against the pod's
        tolerations), not each value (Kubernetes
        pkg/scheduler/framework/plugins/podtopologyspread/filtering.go
        ``calPreFilterState``, ``common.go`` ``matchNodeInclusionPolicies``). A zone whose
        nodes the pod's node selector refuses is no domain, even one the pod allows."""
        memo_key = (
            c.key,
            c.node_affinity_policy,
            c.node_taints_policy,
            t.tolerations if c.node_taints_policy == "Honor" else (),
            pod_reqs if c.node_affinity_policy == "Honor" else None,
        )
        found = self._node_domains_memo.get(memo_key)
        if found is not None:
            return found
        domains: set[str] = set()
        for _host, reqs, taints, exact in self.existing_hosts:
            value = reqs.get(c.key)
            d = value.any() if value is not None else None
            if (
                d is not None
                and d not in domains
                and _included(c, t, pod_reqs, reqs, taints, exact)
            ):
                domains.add(d)
        found = sorted(domains & self.universe.get(c.key, set()))
        self._node_domains_memo[memo_key] = found
        return found

    def _existing_low(
        self, g: Group, c: TopologySpreadConstraint, t: PodTemplate, pod_reqs: Requirements
    ) -> int:
        """kube-scheduler's global minimum for a hostname spread over the existing nodes its
        inclusion policies keep (0 when fewer than ``minDomains``): an existing node with
        ``count + self - min <= maxSkew`` takes the pod (``PodTopologySpread`` Filter)."""
        counts = []
        for host, reqs, taints, exact in self.existing_hosts:
            if _included(c, t, pod_reqs, reqs, taints, exact):
                counts.append(g.counts.get(host, 0))
        if not counts or (c.min_domains is not None and len(counts) < c.min_domains):
            return 0
        return min(counts)


def _included(
    c: TopologySpreadConstraint,
    t: PodTemplate,
    pod_reqs: Requirements,
    node_reqs: Requirements,
    taints: tuple[Taint, ...],
    exact: bool,
) -> bool:
    """Whether an existing node (its requirements, taints, whether its labels are exact)
    passes ``c``'s inclusion policies for a pod of ``t`` requiring ``pod_reqs``
    (kube-scheduler ``common.go`` ``matchNodeInclusionPolicies``)."""
    if c.node_affinity_policy == "Honor":
        allow = frozenset() if exact else labels.WELL_KNOWN_LABELS
        if node_reqs.compatible(pod_reqs, allow_undefined=allow) is not None:
            return False
    return c.node_taints_policy != "Honor" or tolerates_all(t.tolerations, taints) is None
