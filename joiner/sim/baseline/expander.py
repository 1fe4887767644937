"""Cluster Autoscaler's choice among scale-up options: the expanders (``random``,
``most-pods``, ``least-waste``, ``priority``, chained) and ``--balance-similar-node-groups``
(``cluster-autoscaler/expander``, ``processors/nodegroupset``). ``ClusterAutoscaler`` asks
these once per scale-up.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from joiner.api import labels, quantity
from joiner.sim.baseline.groups import NodeGroup
from joiner.sim.baseline.settings import AutoscalerSettings


@dataclass(frozen=True, slots=True)
class Option:
    """A scale-up option: ``nodes`` new nodes of ``group`` would take ``pods`` (uids)."""

    group: NodeGroup
    nodes: int
    pods: tuple[str, ...]


class Expander:
    """The expander chain and group balancing over one CA's ``settings``; ``rng`` is the
    autoscaler's seeded RNG (ties and ``random``), ``pod_requests`` sums the CPU and memory
    requests of pods by uid."""

    def __init__(
        self,
        settings: AutoscalerSettings,
        rng: random.Random,
        pod_requests: Callable[[Sequence[str]], tuple[int, int]],
    ) -> None:
        self.settings = settings
        self._rng = rng
        self._pod_requests = pod_requests

    def balance(self, best: Option, options: list[Option]) -> list[tuple[NodeGroup, int]]:
        """CA ``--balance-similar-node-groups``: the groups similar to the chosen one
        (``nodegroupset.IsCloudProviderNodeInfoSimilar``: same template capacity, memory
        within 1.5 %, allocatable within 5 %, labels equal but zone and hostname, same
        taints) that could take the same pods share the new nodes, each added to the
        currently smallest group (``BalanceScaleUpBetweenGroups``)."""
        if not self.settings.balance_similar_node_groups:
            return [(best.group, best.nodes)]
        pods = set(best.pods)
        similar = [best.group] + [
            o.group
            for o in options
            if o.group is not best.group and pods <= set(o.pods) and _similar(o.group, best.group)
        ]
        if len(similar) == 1:
            return [(best.group, best.nodes)]
        added = {g.name: 0 for g in similar}
        for _ in range(best.nodes):
            room = [g for g in similar if g.desired + added[g.name] < g.spec.max_size]
            if not room:
                break
            g = min(room, key=lambda g: (g.desired + added[g.name], g.name))
            added[g.name] += 1
        return [(g, added[g.name]) for g in similar if added[g.name]]

    def expand(self, options: list[Option]) -> Option:
        """Apply the expander chain; the last tie is broken by the seeded RNG."""
        kept = sorted(options, key=lambda o: o.group.name)
        for name in self.settings.expander:
            if len(kept) <= 1:
                break
            kept = _EXPANDERS[name](self, kept)
        return kept[0] if len(kept) == 1 else self._rng.choice(kept)

    def _least_waste(self, options: list[Option]) -> list[Option]:
        """CA ``least-waste``: least idle CPU after the scale-up, idle memory the tie-break
        (``cluster-autoscaler/FAQ.md``)."""
        scored = []
        requested: dict[tuple[str, ...], tuple[int, int]] = {}
        for o in options:
            alloc = o.group.template.allocatable
            if o.pods not in requested:
                requested[o.pods] = self._pod_requests(o.pods)
            cpu, mem = requested[o.pods]
            total_cpu = alloc.get(quantity.CPU, 0) * o.nodes
            total_mem = alloc.get(quantity.MEMORY, 0) * o.nodes
            waste_cpu = (total_cpu - cpu) / total_cpu if total_cpu else 1.0
            waste_mem = (total_mem - mem) / total_mem if total_mem else 1.0
            scored.append((round(waste_cpu, 9), round(waste_mem, 9), o))
        best = min((c, m) for c, m, _ in scored)
        return [o for c, m, o in scored if (c, m) == best]

    def _most_pods(self, options: list[Option]) -> list[Option]:
        """CA ``most-pods``: the option that schedules the most pending pods."""
        most = max(len(o.pods) for o in options)
        return [o for o in options if len(o.pods) == most]

    def _priority(self, options: list[Option]) -> list[Option]:
        """CA ``priority``: the groups whose name matches the highest priority's patterns;
        groups no pattern matches are dropped unless nothing matches."""
        prios = [(self.settings.priority_of(o.group.name), o) for o in options]
        matched = [p for p, _ in prios if p is not None]
        if not matched:
            return options
        top = max(matched)
        return [o for p, o in prios if p == top]

    def _random(self, options: list[Option]) -> list[Option]:
        """CA ``random``: any option (the seeded RNG draws it)."""
        return [self._rng.choice(options)]


#: Labels CA ignores when comparing node groups (``nodegroupset`` BasicIgnoredLabels and
#: the AWS processor's additions).
_IGNORED_LABELS = frozenset(
    {
        labels.HOSTNAME,
        labels.ZONE,
        labels.ZONE_ID,
        labels.REGION,
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "topology.ebs.csi.aws.com/zone",
        "alpha.eksctl.io/instance-id",
        "alpha.eksctl.io/nodegroup-name",
        "eks.amazonaws.com/nodegroup",
        "k8s.amazonaws.com/eniConfig",
        "lifecycle",
    }
)


def _similar(a: NodeGroup, b: NodeGroup) -> bool:
    """CA ``IsCloudProviderNodeInfoSimilar`` over the template nodes."""
    ca, cb = a.template.capacity, b.template.capacity
    aa, ab = a.template.allocatable, b.template.allocatable
    for res in set(ca) | set(cb):
        x, y = ca.get(res, 0), cb.get(res, 0)
        if res == quantity.MEMORY:
            if abs(x - y) > 0.015 * max(x, y):
                return False
        elif x != y:
            return False
    for res in (quantity.CPU, quantity.MEMORY):
        x, y = aa.get(res, 0), ab.get(res, 0)
        if abs(x - y) > 0.05 * max(x, y, 1):
            return False
    la = {k: v for k, v in a.template_labels().items() if k not in _IGNORED_LABELS}
    lb = {k: v for k, v in b.template_labels().items() if k not in _IGNORED_LABELS}
    return la == lb and a.pool.taints == b.pool.taints


_EXPANDERS: dict[str, Callable[[Expander, list[Option]], list[Option]]] = {
    "random": Expander._random,
    "most-pods": Expander._most_pods,
    "least-waste": Expander._least_waste,
    "priority": Expander._priority,
}
