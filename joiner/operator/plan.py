"""``joiner plan``: one provisioning round over manifests that may describe a running cluster.

Cluster reading (the rules the interruption and disruption work builds on):

* Nodes are targets unless being deleted (``deletionTimestamp``, the
  ``karpenter.sh/disrupted`` taint, or their NodeClaim's deletion). A pod must tolerate a
  node's taints, with those the node lifecycle controller keeps for a cordon
  (``unschedulable``) and for a ``Ready`` condition that is False (``not-ready``) or
  Unknown (``unreachable``) when the manifest lacks them (``ClusterNode.scheduling_taints``).
  A node's free capacity is its allocatable minus the requests of its Pods and of the
  DaemonSet pods still to come.
* Pods with ``spec.nodeName`` are running there; Pods without it are pending. Pods on a node
  being deleted are demand, like pending pods (Karpenter pre-provisions for them).
* A pending Pod with ``status.nominatedNodeName`` is not demand: kube-scheduler preempted
  pods for it and it waits for them to go (Karpenter ``IsProvisionable``); it is listed,
  with a warning when its node is not in the manifests.
* A pending pod kube-scheduler has not tried yet (no ``PodScheduled`` condition: a manifest
  not applied yet, or a workload's replica not listed as a Pod) is first bound by
  kube-scheduler to an existing node that passes its filters, by its LeastAllocated score
  (``_bind_fresh``): Karpenter provisions only for pods kube-scheduler marked unschedulable
  (``IsProvisionable``), and kube-scheduler weighs preferences (preferred affinities,
  ``ScheduleAnyway`` spread, ``PreferNoSchedule``) as scores, never as filters, where
  Karpenter's solve would first try them as requirements.
* A pending pod that fits no existing node may preempt lower-priority pods on one
  (``plan_preemption``, kube-scheduler's ``DefaultPreemption``): it is placed there, and
  its victims' replacements are demand in its place. One preemption pass runs, after a
  first solve has shown which pods fit no existing node; the plan is then solved again.
  The pods kube-scheduler bound first run on their nodes for it and may be its victims
  (a new preemptor displaces the new pods of lower priority instead: it is tried first).
* A new pod pinned to nodes by name (``matchFields``) is bound to one of them when it fits
  there (``_bind_pinned``), and unschedulable otherwise.
* A Deployment, ReplicaSet, StatefulSet or Job adds pending pods only for the replicas not
  already listed as Pods matching its selector in its namespace, named
  ``<namespace>/<workload>-<n>``.

NodeClass selectors resolve against the given VPC (a Scenario's); when none is given or a
selector matches nothing there, every zone of the region is assumed, with a warning.

Karpenter-kwok's provider (``cloudprovider.kwok``) is imported only when the manifests have
KWOKNodeClasses, so a plan over EC2NodeClasses does not load it.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from joiner.api import labels, quantity
from joiner.api.errors import InputError
from joiner.api.featuregates import FeatureGates
from joiner.api.grouping import grouped, plural
from joiner.api.manifests import ManifestSet
from joiner.api.manifests.cluster_notes import (
    gated_pods,
    gated_warning,
    static_capacity_warning,
    static_nodes,
)
from joiner.api.manifests.convert import KWOKNODECLASS_KIND
from joiner.api.manifests.pods import selects
from joiner.api.objects import (
    ClusterNode,
    NodeClass,
    NodePool,
    PodTemplate,
    SelectorTerm,
    StandalonePod,
    Workload,
)
from joiner.api.overlays import gate_warnings
from joiner.api.plan_output import (
    Launch,
    Nominated,
    Placement,
    Plan,
    PlannedNodeClaim,
    Unschedulable,
)
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.overlay import Overlays
from joiner.cloudprovider.reservations import CapacityReservation, reservation_labels
from joiner.cloudprovider.simulated import SimulatedCloudProvider, default_subnets
from joiner.cloudprovider.simulated.market import SpotMarket
from joiner.cloudprovider.simulated.provider import choose_offering
from joiner.cloudprovider.simulated.vpc import status_vpc
from joiner.cloudprovider.types import (
    CloudProviderError,
    InstanceType,
    InsufficientCapacityError,
    Offering,
    SecurityGroup,
    Subnet,
)
from joiner.operator import plan_passes as passes
from joiner.operator.lint import lint_lines
from joiner.operator.plan_static import StaticRound, static_round
from joiner.scheduling import (
    BoundPod,
    ExistingNode,
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
    Scheduler,
    SchedulingInput,
    SchedulingResult,
    static,
)
from joiner.scheduling.costopt import scheduler_for
from joiner.scheduling.daemonsets import overhead_on_node
from joiner.scheduling.types import held_for
from joiner.scheduling.volumes import MissingVolumeError, resolve_volumes
from joiner.sim.clock import SimClock

if TYPE_CHECKING:
    from joiner.operator.plan_preemption import PreemptionRound

_OFFER_KEYS = (
    labels.ZONE,
    labels.CAPACITY_TYPE,
    labels.ZONE_ID,
    labels.CAPACITY_RESERVATION_ID,
)

#: CreateFleet takes at most this many instance types (karpenter-provider-aws
#: ``pkg/providers/instance/instance.go`` ``maxInstanceTypes``).
MAX_FLEET_TYPES = 60
_DEFAULT_SG = SecurityGroup("sg-joiner-default", "joiner-default")


@dataclass(frozen=True)
class SpotPrices:
    """Per-pool Spot prices for a dry run: ``joiner simulate``'s market read at one instant.

    Karpenter prices each Spot offering per instance type and zone: the latest
    DescribeSpotPriceHistory price in force for that pool (karpenter-provider-aws
    ``pkg/providers/pricing/pricing.go`` ``UpdateSpotPricing``, ``SpotPrice``; read per
    offering in ``pkg/providers/instancetype/offering/base_resolver.go``).

    Attributes:
        market: the simulated Spot market (``market.SpotMarket``) whose time 0 is ``at``:
            a pool with price history rows costs its latest row at or before ``at`` (the
            earliest row before the history starts), any other pool what the market model
            gives it at the run start (the regional estimate times the pool's zone factor).
        at: the UTC instant the prices are read at.
        unmodelled_scores: the inputs had Spot placement scores, which a dry run does not
            use (it launches into the lowest-priced pool).
    """

    market: SpotMarket
    at: datetime
    unmodelled_scores: bool = False

    def warnings(self) -> list[str]:
        """What the dry run does not model of these inputs."""
        if not self.unmodelled_scores:
            return []
        return [
            "not modelled: spec.cloud.spotPlacementScores in a dry run (NodeClaims launch "
            "into the lowest-priced pool; joiner simulate's fleet weighs the scores too)"
        ]


@dataclass(frozen=True)
class _Pending:
    uid: str
    name: str
    template: PodTemplate
    volume_terms: tuple[Requirements, ...] = ()
    #: Still running on a node being deleted: demand for Karpenter, but not a pod
    #: kube-scheduler tries to place (or preempts for).
    running: bool = False
    #: kube-scheduler has not tried it yet: it does before Karpenter sees it (``_bind_fresh``).
    fresh: bool = False
    #: The Pod (a workload's missing replica: made up, owned by the workload), which a
    #: kube-scheduler pass binds (``_kube_bind``); None for the pods pending after preemption.
    pod: StandalonePod | None = None


def planning_cloud(
    m: ManifestSet,
    catalog: Catalog,
    region: str,
    subnets: Sequence[Subnet] | None,
    security_groups: Sequence[SecurityGroup],
    warnings: list[str],
    kwok_types: Sequence[InstanceType] | None = None,
    market: SpotMarket | None = None,
    reservations: Sequence[CapacityReservation] = (),
) -> SimulatedCloudProvider:
    """The cloud a dry run launches into: the simulated EC2 (with ``market``, through the
    Spot market, and the capacity ``reservations`` a NodeClass selects as ``reserved``
    offerings), or Karpenter-kwok's provider when the NodeClasses are KWOKNodeClasses.
    A NodeClass whose subnets or security groups are unknown gets every zone or a default
    group, with a warning.

    Raises:
        InputError: KWOKNodeClasses without ``kwok_types``, or mixed with EC2NodeClasses.
    """
    kwok = [nc for nc in m.nodeclasses if nc.source.kind == KWOKNODECLASS_KIND]
    if kwok:
        from joiner.cloudprovider.kwok import KwokCloudProvider

        if kwok_types is None:
            raise InputError(
                "a KWOKNodeClass takes its instance types from Karpenter-kwok's "
                "instance-types file: pass it with --kwok-instance-types FILE",
                file=kwok[0].source.file,
                obj=kwok[0].source.ref,
            )
        if len(kwok) != len(m.nodeclasses):
            other = next(nc for nc in m.nodeclasses if nc.source.kind != KWOKNODECLASS_KIND)
            raise InputError(
                "KWOKNodeClasses cannot be planned together with EC2NodeClasses",
                file=other.source.file,
                obj=other.source.ref,
            )
        return KwokCloudProvider(
            kwok_types, SimClock(), random.Random(0), node_classes=m.nodeclasses, region=region
        )
    nodeclasses = m.nodeclasses
    if subnets is not None:
        vpc = list(subnets)
        groups = [*security_groups, _DEFAULT_SG]
    else:
        # A dump's EC2NodeClass status is the cluster's resolved VPC.
        nodeclasses, status_subnets, status_groups = status_vpc(m.nodeclasses, catalog, region)
        warnings += [
            f"{nc.source.file}: {nc.source.ref}: not modelled: status.capacityReservations "
            f"({', '.join(nc.status_capacity_reservations)}): a dump does not say how many "
            "instances each reservation has free, so no reserved capacity is launched here "
            "(give them in a Scenario's spec.cloud.capacityReservations)"
            for nc in nodeclasses
            if nc.status_capacity_reservations and not reservations
        ]
        vpc = status_subnets or default_subnets(catalog, region)
        groups = [*security_groups, *status_groups, _DEFAULT_SG]
    probe = SimulatedCloudProvider(
        catalog,
        region,
        SimClock(),
        random.Random(0),
        subnets=vpc,
        security_groups=groups,
        node_classes=nodeclasses,
    )
    classes: list[NodeClass] = []
    for nc in nodeclasses:
        fixed = nc
        if not probe.resolve_subnets(nc):
            everywhere = default_subnets(catalog, region)
            vpc += [s for s in everywhere if s.id not in {v.id for v in vpc}]
            fixed = replace(
                fixed, subnet_selector_terms=tuple(SelectorTerm(id=s.id) for s in everywhere)
            )
            warnings.append(
                f"{nc.source.file}: {nc.source.ref}: its subnets are not known here (it has no "
                f"status.subnets); planning with every zone of {region} (pass a Scenario with "
                "-f to use its VPC, or a dump with the EC2NodeClass status)"
            )
        if not probe.resolve_security_groups(nc):
            fixed = replace(fixed, security_group_selector_terms=(SelectorTerm(id=_DEFAULT_SG.id),))
        classes.append(fixed)
    return SimulatedCloudProvider(
        catalog,
        region,
        SimClock(),
        random.Random(0),
        subnets=vpc,
        security_groups=groups,
        node_classes=classes,
        market=market,
        reservations=reservations,
    )


def _replica_names(w: Workload, missing: int, taken: set[str]) -> list[str]:
    """Names for ``missing`` replicas not listed as Pods: a StatefulSet's free ordinals
    (``db-2``), otherwise ``<name>-<n>`` for the lowest ``n`` not already a Pod's name."""
    out: list[str] = []
    n = 0 if w.kind == "StatefulSet" else 1
    while len(out) < missing:
        name = f"{w.namespace}/{w.name}-{n}"
        if name not in taken:
            out.append(name)
        n += 1
    return out


def _in_flight(
    m: ManifestSet,
    live_nodes: dict[str, ClusterNode],
    daemonsets: list[PodTemplate],
    warnings: list[str],
) -> list[ExistingNode]:
    """NodeClaims launched whose Node has not registered: capacity for pending pods, as in
    Karpenter's cluster state (``state.Cluster`` counts in-flight NodeClaims), so what they
    were launched for is not launched again. Their labels are the NodeClaim's; their room is
    ``status.allocatable`` less the DaemonSet pods to come. A NodeClaim whose
    ``status.providerID`` is a live Node's is registered, whatever its ``nodeName``, and one
    sharing another's providerID is not counted again (Karpenter
    pkg/controllers/state/cluster.go ``Cluster.UpdateNodeClaim`` keys its nodes by
    providerID): a warning names it."""
    out: list[ExistingNode] = []
    unknown: list[str] = []
    node_providers = {n.provider_id for n in live_nodes.values() if n.provider_id}
    seen: dict[str, str] = {}
    shared: list[str] = []
    for claim in sorted(m.nodeclaims, key=lambda c: c.name):
        if claim.deleting or not claim.launched:
            continue
        if claim.provider_id:
            if claim.provider_id in seen:
                shared.append(f"{claim.name} ({claim.provider_id}, as {seen[claim.provider_id]})")
                continue
            seen[claim.provider_id] = claim.name
        if (claim.node_name is not None and claim.node_name in live_nodes) or (
            claim.provider_id in node_providers
        ):
            continue  # registered: its Node is the capacity
        if not claim.allocatable:
            unknown.append(claim.name)
            continue
        claim_labels = dict(claim.labels)
        claim_labels.setdefault(labels.HOSTNAME, claim.name)
        overhead = overhead_on_node(claim_labels, claim.taints, daemonsets)
        out.append(
            ExistingNode(
                name=claim.name,
                labels=tuple(sorted(claim_labels.items())),
                taints=claim.taints,
                available=quantity.subtract(dict(claim.allocatable), overhead),
                initialized=False,
                nodepool=claim.nodepool,
            )
        )
    if unknown:
        warnings.append(
            grouped(
                f"{plural(len(unknown), 'NodeClaim')} launched without status.allocatable "
                "cannot hold pods here",
                unknown,
            )
        )
    if shared:
        warnings.append(
            grouped(
                f"{plural(len(shared), 'NodeClaim')} with the status.providerID of another "
                "(first by name kept, as Karpenter's cluster state keeps one node per "
                f"providerID) {'is' if len(shared) == 1 else 'are'} not counted",
                shared,
            )
        )
    return out


class _ListedPods:
    """Live Pods by namespace as distinct label sets with how many Pods carry each, indexed
    by label: ``count`` reads only the label sets holding a value of the selector's first
    ``In`` requirement (no other set can match it) and asks ``selects`` of each, so a
    cluster of many workloads is not read once per workload."""

    def __init__(self, pods: Iterable[StandalonePod]) -> None:
        by_ns: dict[str, Counter[tuple[tuple[str, str], ...]]] = {}
        for p in pods:
            by_ns.setdefault(p.namespace, Counter())[p.template.labels] += 1
        #: Per namespace: each distinct label set (as a dict) and its Pods' count.
        self._sets = {ns: [(dict(lab), n) for lab, n in c.items()] for ns, c in by_ns.items()}
        #: (namespace, label key, value) -> indices into ``_sets[namespace]``.
        self._index: dict[tuple[str, str, str], list[int]] = {}
        for ns, sets in self._sets.items():
            for i, (lab, _) in enumerate(sets):
                have = Requirements.from_labels(lab)
                for key in have:
                    for value in have[key].values:
                        self._index.setdefault((ns, key, value), []).append(i)

    def count(self, w: Workload) -> int:
        """How many listed Pods of ``w``'s namespace its selector matches (``selects``)."""
        sets = self._sets.get(w.namespace, [])
        first_in = next(
            (r for key in w.selector if not (r := w.selector[key]).complement and r.values),
            None,
        )
        if first_in is None:
            candidates: Iterable[int] = range(len(sets))
        else:
            found: set[int] = set()
            for value in first_in.values:
                found.update(self._index.get((w.namespace, first_in.key, value), ()))
            candidates = found
        return sum(sets[i][1] for i in candidates if selects(w.selector, sets[i][0]))


def missing_replicas(m: ManifestSet) -> list[tuple[Workload, str]]:
    """Each workload replica not listed as a Pod matching its selector in its namespace, with
    its name (``<namespace>/<name>``, ``_replica_names``), in workload order. ``joiner plan``
    and ``joiner disrupt`` add them as pending pods."""
    listed_pods = _ListedPods(p for p in m.pods if not p.terminal)
    taken = {p.key for p in m.pods}
    out: list[tuple[Workload, str]] = []
    for w in m.workloads:
        listed = listed_pods.count(w)
        for name in _replica_names(w, w.replicas - listed, taken):
            taken.add(name)
            out.append((w, name))
    return out


def _replica_pod(w: Workload, key: str) -> StandalonePod:
    """The Pod ``key`` (``namespace/name``) the workload ``w`` creates for a replica not
    listed as a Pod: owned by ``w``, so a preemption of it is replaced."""
    namespace, _, name = key.partition("/")
    return StandalonePod(namespace, name, w.template, w.source, owner=f"{w.kind}/{w.name}")


@dataclass
class _Demand:
    """What the cluster's pods ask for: pods to place (``pending``), each target node's
    requests in use (``used``, of them DaemonSet pods' ``daemon_used``), pods pinned to a
    node by name (``pinned``), pods already nominated by preemption (``nominated``)."""

    pending: list[_Pending]
    used: dict[str, quantity.Resources]
    daemon_used: dict[str, quantity.Resources]
    pinned: list[Unschedulable]
    nominated: list[Nominated]
    #: Pods kube-scheduler binds before Karpenter's round (``node_name`` set): their
    #: requests are in ``used``, they count in the solves' topology domains and they run
    #: on their nodes for preemption (``plan_preemption.preempt``).
    kube_bound: list[StandalonePod] = field(default_factory=list)
    #: New pods pinned to nodes by name (``PodTemplate.pinned_nodes``): Karpenter does not
    #: provision for them, but kube-scheduler binds each to its node if it fits
    #: (``_bind_fresh``); the rest are ``pinned``.
    pinned_fresh: list[StandalonePod] = field(default_factory=list)


def _read_pods(
    m: ManifestSet,
    targets: dict[str, ClusterNode],
    live_nodes: dict[str, ClusterNode],
    warnings: list[str],
) -> _Demand:
    """The live pods read as the module docstring says (workload replicas not listed as Pods
    are added by the caller)."""
    demand = _Demand([], {name: {} for name in targets}, {name: {} for name in targets}, [], [])
    ds_owners = {f"DaemonSet/{d.name}" for d in m.daemonsets}
    missing: list[str] = []
    for p in m.pods:
        if p.terminal:
            continue
        if p.node_name is None:
            _unbound(p, demand)
        elif p.node_name in targets:
            demand.used[p.node_name] = quantity.add(demand.used[p.node_name], p.template.requests)
            if p.owner in ds_owners:
                demand.daemon_used[p.node_name] = quantity.add(
                    demand.daemon_used[p.node_name], p.template.requests
                )
        elif p.node_name in live_nodes and live_nodes[p.node_name].deleting:
            # On a node being deleted: it must move, so it is demand (Karpenter).
            if p.provisionable:
                demand.pending.append(_Pending(p.key, p.key, p.template, running=True, pod=p))
        elif p.node_name not in live_nodes:
            missing.append(f"{p.key} (node {p.node_name}, {p.source.file})")
    if missing:
        warnings.append(
            grouped(
                f"{plural(len(missing), 'pod')} on nodes not in the manifests: their usage "
                "is ignored",
                missing,
            )
        )
    warnings += _nominated_elsewhere(demand, live_nodes)
    return demand


def _nominated_elsewhere(demand: _Demand, live_nodes: dict[str, ClusterNode]) -> list[str]:
    """A warning naming the pods nominated to a node that is not in the manifests: nothing
    holds the room they wait for, and Karpenter does not provision for them while they are
    nominated (``IsPreempting``)."""
    elsewhere = [f"{n.pod} (node {n.node})" for n in demand.nominated if n.node not in live_nodes]
    if not elsewhere:
        return []
    return [
        grouped(
            f"{plural(len(elsewhere), 'pod')} nominated to nodes not in the manifests: the "
            "room they wait for is not held, and Karpenter does not provision for them while "
            "they are nominated",
            elsewhere,
        )
    ]


#: Why a pod pinned to a node by name gets no NodeClaim (Karpenter
#: pkg/utils/pod/scheduling.go ``IsProvisionable``).
_PINNED = "pinned to a node by name (matchFields)"
_NOT_PROVISIONED = "Karpenter does not provision for it"


def _unbound(p: StandalonePod, demand: _Demand) -> None:
    """A live pod without a node: pending if provisionable; pinned to a node by name (not a
    DaemonSet's or a static pod): unschedulable, as Karpenter does not provision for it,
    unless kube-scheduler has not tried it yet (``_bind_pinned`` does first);
    nominated to a node by preemption: listed, not demand (Karpenter
    ``pkg/utils/pod/scheduling.go`` ``IsProvisionable``, ``IsPreempting``)."""
    if p.preempting and p.nominated_node_name is not None:
        demand.nominated.append(Nominated(pod=p.key, node=p.nominated_node_name))
    elif p.provisionable:
        demand.pending.append(
            _Pending(p.key, p.key, p.template, fresh=not p.scheduler_tried, pod=p)
        )
    elif (
        p.template.pinned
        and not p.deleting
        and (p.owner or "").split("/", 1)[0] not in ("DaemonSet", "Node")
    ):
        if p.template.pinned_nodes and not p.scheduler_tried and not p.scheduling_gates:
            demand.pinned_fresh.append(p)
            return
        demand.pinned.append(
            Unschedulable(
                pod=p.key,
                reason=f"{_PINNED}; {_NOT_PROVISIONED}",
            )
        )


def _existing(
    targets: dict[str, ClusterNode],
    demand: _Demand,
    daemonsets: list[PodTemplate],
    holding: dict[str, quantity.Resources] | None = None,
) -> list[ExistingNode]:
    """The target nodes as the scheduler's existing nodes: room is allocatable less the
    requests in use, the DaemonSet pods still to come and what ``holding`` holds there (by
    node: the pods nominated to it, ``_kube_pass``)."""
    existing = []
    for name in sorted(targets):
        node = targets[name]
        available = quantity.subtract(_room(node, demand, daemonsets), demand.used[name])
        held = (holding or {}).get(name)
        if held:
            available = quantity.subtract(available, held)
        existing.append(
            ExistingNode(
                name=name,
                labels=node.labels,
                taints=node.scheduling_taints,
                available=available,
                initialized=True,
                nodepool=node.nodepool,
                # kube-scheduler's LeastAllocated score reads it (``_kube_pass``)
                allocatable=dict(node.allocatable),
                held=held,
            )
        )
    return existing


def _room(node: ClusterNode, demand: _Demand, daemonsets: list[PodTemplate]) -> quantity.Resources:
    """A target node's allocatable less the requests of its DaemonSet pods still to come."""
    # The manifest's own taints: DaemonSet pods tolerate a cordon and node pressure
    # (Kubernetes pkg/controller/daemon/util/daemonset_util.go
    # AddOrUpdateDaemonPodTolerations), and a NotReady node's pods are already there.
    expected = overhead_on_node(dict(node.labels), node.taints, daemonsets)
    daemon_used = demand.daemon_used[node.name]
    to_come = {k: max(0, v - daemon_used.get(k, 0)) for k, v in expected.items()}
    return quantity.subtract(dict(node.allocatable), to_come)


#: The scheduler's reason when it has no NodePool at all (``placement._explain``).
_NO_POOL = "no NodePool is defined"


def _unplaced(
    unschedulable: Sequence[tuple[str, str]], pools: Sequence[NodePool]
) -> list[Unschedulable]:
    """The scheduler's unschedulable pods; when every NodePool is static (Karpenter
    ``provisioner.go`` ``NewScheduler`` leaves static pools out), "no NodePool is defined"
    says instead that the static ones launch nothing for pods."""
    names = sorted(p.name for p in pools if static.is_static(p))
    only_static = (
        f"no NodePool launches nodes for pending pods: only static NodePools "
        f"(spec.replicas: {', '.join(names)}) are defined, and they keep their node count "
        "whatever the pods want"
    )
    return [
        Unschedulable(pod=uid, reason=only_static if reason == _NO_POOL and names else reason)
        for uid, reason in unschedulable
    ]


def _templates(
    m: ManifestSet,
    cloud: SimulatedCloudProvider,
    in_flight: list[ExistingNode],
    overlays: Overlays | None = None,
    pools_in_force: Sequence[NodePool] | None = None,
) -> list[NodePoolTemplate]:
    """Each NodePool (by name; ``pools_in_force`` when given, else the manifests') but the
    static ones (Karpenter ``provisioner.go`` ``NewScheduler``) with its instance types
    (NodeOverlays applied when ``overlays`` is set) and what its limits leave: limits less
    the capacity of its Nodes and of its in-flight NodeClaims."""
    given = m.nodepools if pools_in_force is None else pools_in_force
    pools = sorted((p for p in given if not static.is_static(p)), key=lambda p: p.name)
    listed = [(pool, cloud.get_instance_types(pool.node_class_ref.name)) for pool in pools]
    all_types = overlays.apply_all(listed) if overlays is not None else [t for _, t in listed]
    return [
        NodePoolTemplate(pool, tuple(types), _remaining(m, pool, in_flight))
        for pool, types in zip(pools, all_types, strict=True)
    ]


def _remaining(
    m: ManifestSet, pool: NodePool, in_flight: list[ExistingNode]
) -> tuple[tuple[str, int], ...]:
    """What ``pool``'s limits leave after its Nodes and in-flight NodeClaims."""
    if not pool.limits:
        return ()
    flying = {e.name for e in in_flight}
    usage: quantity.Resources = {}
    capacities = [dict(n.capacity) for n in m.nodes if n.nodepool == pool.name] + [
        dict(c.capacity) for c in m.nodeclaims if c.nodepool == pool.name and c.name in flying
    ]
    for capacity in capacities:
        usage = quantity.add(usage, capacity)
        usage["nodes"] = usage.get("nodes", 0) + 1
    return tuple(sorted({k: v - usage.get(k, 0) for k, v in pool.limits}.items()))


def _requests(
    pending: list[_Pending], m: ManifestSet
) -> tuple[list[PodRequest], list[Unschedulable]]:
    """The scheduler's pod requests (with their volumes' topology), and the pods whose
    volumes are missing."""
    requests: list[PodRequest] = []
    missing: list[Unschedulable] = []
    for i, pend in enumerate(pending):
        try:
            vols = resolve_volumes(pend.template, m.pvcs, m.pvs, m.storageclasses)
        except MissingVolumeError as exc:
            missing.append(Unschedulable(pod=pend.uid, reason=str(exc)))
            continue
        requests.append(PodRequest(pend.uid, pend.template, i, vols.terms, vols.described))
    return requests, missing


#: A launch's choice, cached by its instance types and offering requirements: the (type,
#: offering) chosen, None (nothing available) or the error the choice raised.
_Choice = tuple[InstanceType, Offering] | CloudProviderError | None


class _Launcher:
    """Launches the scheduler's new NodeClaims as the cloud would, without launching: names
    them ``<pool>-<n>``, chooses each one's offering (identical NodeClaims, replicas of one
    pod shape, launch the same way: chosen once) and labels it."""

    def __init__(
        self, pools: dict[str, NodePool], region: str, min_values_policy: str, kwok: bool
    ) -> None:
        self._pools = pools
        self._region = region
        self._min_values_policy = min_values_policy
        self._kwok = kwok
        self._counters: dict[str, int] = {}
        self._choices: dict[tuple[object, ...], _Choice] = {}
        self._capacity_types: dict[tuple[object, ...], list[str]] = {}
        #: NodeClaim name -> the instance type it launches as.
        self.types: dict[str, InstanceType] = {}

    def launch(self, new: NewNodeClaim) -> PlannedNodeClaim | list[Unschedulable]:
        """The planned NodeClaim, or its pods as unschedulable when no offering launches."""
        pool = self._pools[new.nodepool]
        self._counters[pool.name] = self._counters.get(pool.name, 0) + 1
        name = f"{pool.name}-{self._counters[pool.name]}"
        options = new.instance_types[:MAX_FLEET_TYPES]
        names = tuple(it.name for it in options)
        reqs = new.requirements.add(
            Requirement.in_(labels.INSTANCE_TYPE, *names),
            Requirement.in_(labels.CAPACITY_TYPE, *self._capacity_types_of(new, options)),
        )
        try:
            choice = self._choose(
                (names, *(reqs.get_or_exists(k) for k in _OFFER_KEYS)), options, reqs
            )
            if choice is None:
                raise InsufficientCapacityError(f"no available offering for {name}")
        except CloudProviderError as exc:
            return [
                Unschedulable(pod=uid, reason=f"NodePool {pool.name}: launch failed: {exc}")
                for uid in new.pods
            ]
        it, offering = choice
        self.types[name] = it
        return PlannedNodeClaim(
            name=name,
            nodePool=pool.name,
            instanceTypes=list(names),
            launch=Launch(
                instanceType=it.name,
                zone=offering.zone,
                capacityType=offering.capacity_type,
                pricePerHour=round(offering.cost_per_hour, 6),
                tiedZones=_tied_zones(it, offering, reqs),
            ),
            labels=_claim_labels(it, offering, reqs, pool, self._region),
            taints=[str(t) for t in (*pool.taints, *pool.startup_taints)],
            pods=list(new.pods),
        )

    def _capacity_types_of(self, new: NewNodeClaim, options: Sequence[InstanceType]) -> list[str]:
        """The capacity types ``options`` offer under ``new``'s requirements (cached)."""
        key = (
            tuple(it.name for it in options),
            *(new.requirements.get_or_exists(k) for k in _OFFER_KEYS),
        )
        cts = self._capacity_types.get(key)
        if cts is None:
            cts = sorted(
                {
                    o.capacity_type
                    for it in options
                    for o in it.available_offerings(new.requirements)
                }
            )
            self._capacity_types[key] = cts
        return cts

    def _choose(
        self, key: tuple[object, ...], options: Sequence[InstanceType], reqs: Requirements
    ) -> tuple[InstanceType, Offering] | None:
        """The (type, offering) to launch, or None: Karpenter-kwok's choice for
        KWOKNodeClasses, EC2 Fleet's otherwise (cached by ``key``).

        Raises:
            CloudProviderError: the choice failed (cached too).
        """
        if key in self._choices:
            cached = self._choices[key]
            if isinstance(cached, CloudProviderError):
                raise cached
            return cached
        candidates = [
            (it, o) for it in options for o in it.offerings if o.available and o.compatible(reqs)
        ]
        choice: tuple[InstanceType, Offering] | None = None
        if self._kwok:
            from joiner.cloudprovider.kwok import choose_kwok_offering

            choice = choose_kwok_offering(options, reqs)
        elif candidates:
            try:
                choice = choose_offering(
                    candidates, reqs, min_values_policy=self._min_values_policy
                )
            except CloudProviderError as exc:
                self._choices[key] = exc
                raise
        self._choices[key] = choice
        return choice


def _tied_zones(it: InstanceType, offering: Offering, reqs: Requirements) -> list[str]:
    """The zones where ``it`` offers ``offering``'s capacity type at its price under
    ``reqs``, sorted: the launch's equal choices (Karpenter ``kwok/cloudprovider``
    ``CloudProvider.toNode`` samples one of the cheapest offerings with ``lo.Sample``)."""
    return sorted(
        {
            o.zone
            for o in it.available_offerings(reqs)
            if o.capacity_type == offering.capacity_type
            and o.cost_per_hour == offering.cost_per_hour
        }
    )


def _claim_labels(
    it: InstanceType, offering: Offering, reqs: Requirements, pool: NodePool, region: str
) -> dict[str, str]:
    """A planned NodeClaim's labels, sorted: the instance type's single-valued requirements,
    then the NodeClaim's requirements, the NodePool's labels, and the launch's own."""
    claim_labels: dict[str, str] = {}
    for label_key, req in it.requirements.items():
        value = req.any()
        if value is not None and not req.complement:
            claim_labels[label_key] = value
    claim_labels.update(reqs.labels())
    claim_labels.update(pool.node_labels())
    claim_labels.update(
        {
            labels.ZONE: offering.zone,
            labels.ZONE_ID: offering.zone_id,
            labels.CAPACITY_TYPE: offering.capacity_type,
            **reservation_labels(offering),
            labels.INSTANCE_TYPE: it.name,
            labels.REGION: region,
        }
    )
    return dict(sorted(claim_labels.items()))


def _plan_warnings(
    m: ManifestSet,
    catalog: Catalog,
    region: str,
    subnets: Sequence[Subnet] | None,
    security_groups: Sequence[SecurityGroup],
    kwok_types: Sequence[InstanceType] | None,
    reservations: Sequence[CapacityReservation],
    gates: FeatureGates,
) -> list[str]:
    """The load warnings, the dump's static capacity and gated pods, what a plan does not
    model, and ``joiner lint``'s findings (static pools linted as ``gates`` leaves them)."""
    warnings = list(m.warnings)
    static, gated = static_nodes(m), gated_pods(m)
    if static:
        warnings.append(static_capacity_warning(static))
    if gated:
        warnings.append(gated_warning(gated))
    if m.capacitybuffers:
        warnings.append(
            "not modelled: CapacityBuffer in joiner plan (the plan provisions for real pending "
            "pods only; joiner simulate models buffers behind the capacityBuffer feature gate)"
        )
    warnings += lint_lines(
        m, catalog, region, (subnets, security_groups, kwok_types, reservations), gates
    )
    return warnings


def _one_zone_warning(claims: list[PlannedNodeClaim]) -> list[str]:
    """A warning when several NodeClaims all launch in one zone (prices tie across zones)."""
    zones = {c.launch.zone for c in claims}
    if len(claims) > 1 and len(zones) == 1:
        spot = any(c.launch.capacityType == "spot" for c in claims)
        why = (
            "spot prices here are regional (give a Spot price history for per-zone prices)"
            if spot
            else "on-demand prices are the same in every zone of a region"
        )
        return [
            f"all {len(claims)} NodeClaims launch in {next(iter(zones))}: {why}, so zones tie "
            "on price and the first allowed zone wins; add a zonal topology spread to the "
            "workloads to spread their nodes across zones"
        ]
    return []


def _bound(
    m: ManifestSet,
    targets: dict[str, ClusterNode],
    rnd: PreemptionRound | None,
    demand: _Demand,
) -> tuple[BoundPod, ...]:
    """The pods running on target nodes, as a solve sees them: the dump's, less the
    preemption victims, with the pods kube-scheduler binds first (``demand.kube_bound``)
    and the preemptors on their nodes."""
    running = tuple(
        BoundPod(
            node=p.node_name,
            namespace=p.namespace,
            labels=p.template.labels,
            anti_affinity=p.template.pod_anti_affinity,
            host_ports=p.template.host_ports,
        )
        for p in m.pods
        if not p.terminal and p.node_name in targets and (rnd is None or p.key not in rnd.victims)
    )
    if rnd is None and not demand.kube_bound:
        return running
    from joiner.state.snapshot import bound_pod

    placed = [
        *((p.node_name, p.template) for p in demand.kube_bound if p.node_name is not None),
        *(rnd.placed.values() if rnd is not None else ()),
    ]
    return running + tuple(bound_pod(node, t) for node, t in placed)


def _preemption(
    m: ManifestSet,
    targets: dict[str, ClusterNode],
    demand: _Demand,
    daemonsets: list[PodTemplate],
    result: SchedulingResult,
) -> PreemptionRound | None:
    """kube-scheduler's preemption (``plan_preemption``) for the pending pods the first
    solve placed on no existing or in-flight node; None when none of them outranks a pod
    running on a target node (the module and the simulation's preemption model are imported
    only otherwise)."""
    placed = {uid for uid, _ in result.existing_placements}
    requests, _ = _requests(demand.pending, m)  # pods whose volumes are missing: none
    running = {p.uid for p in demand.pending if p.running}
    tried = [(r.uid, r.template) for r in requests if r.uid not in placed and r.uid not in running]
    lowest = min(
        (
            p.template.priority_value
            for p in (*m.pods, *demand.kube_bound)
            if not p.terminal
            and p.node_name in targets
            and not (p.owner or "").startswith("DaemonSet/")
        ),
        default=None,
    )
    if lowest is None or all(t.priority_value <= lowest for _, t in tried):
        return None  # no pod tried outranks a pod running on a target node
    from joiner.operator.plan_preemption import preempt

    room = {name: _room(node, demand, daemonsets) for name, node in targets.items()}
    terms = {r.template: r.volume_terms for r in requests if r.volume_terms}
    fresh = {p.uid for p in demand.pending if p.fresh}
    return preempt(m, targets, room, tried, terms, demand.kube_bound, fresh)


def _after_preemption(demand: _Demand, rnd: PreemptionRound) -> _Demand:
    """The demand once the preemptions are done: each preemptor holds room on its node, the
    victims' room is free, and the replacements of victims with a controller (and pods
    whose nomination a preemption cleared, and new pods it displaced) are pending in the
    preemptors' place."""
    used = {name: dict(r) for name, r in demand.used.items()}
    for node, template in rnd.placed.values():
        used[node] = quantity.add(used[node], template.requests)
    for node, victim in (*rnd.victims.values(), *rnd.displaced.values()):
        used[node] = quantity.subtract(used[node], victim.template.requests)
    again = [
        *((key, victim.template) for key, (_, victim) in rnd.victims.items() if victim.owner),
        *rnd.released,
        *((key, p.template) for key, (_, p) in rnd.displaced.items()),
    ]
    pending = [p for p in demand.pending if p.uid not in rnd.placed]
    why = {key: _not_karpenters(t) for key, t in again}
    pending += [_Pending(key, key, t) for key, t in again if not why[key]]
    refused = [Unschedulable(pod=key, reason=why[key]) for key, _ in again if why[key]]
    released = {key for key, _ in rnd.released}
    nominated = [n for n in demand.nominated if n.pod not in released]
    gone = rnd.victims.keys() | rnd.displaced.keys()
    kube_bound = [p for p in demand.kube_bound if p.key not in gone]
    pinned = demand.pinned + refused
    return _Demand(pending, used, demand.daemon_used, pinned, nominated, kube_bound)


def _not_karpenters(t: PodTemplate) -> str:
    """Why Karpenter does not provision for a pod of ``t`` that is pending again after a
    preemption (pinned to a node by name, or a pod its provisioner ignores); ``""`` when it
    does (Karpenter pkg/utils/pod/scheduling.go ``IsProvisionable``, provisioner.go
    ``GetPendingPods``)."""
    if t.pinned:
        return f"{_PINNED}; {_NOT_PROVISIONED}"
    if t.karpenter_ignores:
        return f"Karpenter ignores the pod: {t.karpenter_ignores}"
    return ""


@dataclass
class _Ignored:
    """Pods Karpenter ignores (``PodTemplate.karpenter_ignores``): those kube-scheduler binds
    to an existing node (``placements``, pod -> node) and the rest (``unschedulable``)."""

    placements: list[tuple[str, str]]
    unschedulable: list[Unschedulable]


def _bind_ignored(
    demand: _Demand,
    m: ManifestSet,
    targets: dict[str, ClusterNode],
    daemonsets: list[PodTemplate],
) -> _Ignored:
    """Take the pods Karpenter's provisioner ignores out of ``demand.pending`` (Karpenter
    pkg/controllers/provisioning/provisioner.go ``GetPendingPods``: ``Validate`` refuses
    them, so no NodeClaim is made for them) and place them as kube-scheduler would, on the
    existing nodes only (no NodePool, no in-flight NodeClaim: it binds to Nodes), before
    the provisioning round; their requests are added to ``demand.used``."""
    ignored = [p for p in demand.pending if p.template.karpenter_ignores]
    if not ignored:
        return _Ignored([], [])
    demand.pending = [p for p in demand.pending if not p.template.karpenter_ignores]
    bindings, missing = _kube_pass(ignored, demand, m, targets, daemonsets)
    placed = {uid for uid, _ in bindings}
    return _Ignored(
        bindings,
        missing
        + [
            Unschedulable(
                pod=p.uid, reason=f"Karpenter ignores the pod: {p.template.karpenter_ignores}"
            )
            for p in ignored
            if p.uid not in placed and p.uid not in {u.pod for u in missing}
        ],
    )


def _kube_bind(demand: _Demand, node: str, pend: _Pending) -> None:
    """``pend`` bound to ``node`` by kube-scheduler before Karpenter's round."""
    demand.used[node] = quantity.add(demand.used.get(node, {}), pend.template.requests)
    if pend.pod is not None:
        demand.kube_bound.append(replace(pend.pod, node_name=node))


def _bind_fresh(
    demand: _Demand,
    m: ManifestSet,
    targets: dict[str, ClusterNode],
    daemonsets: list[PodTemplate],
) -> list[tuple[str, str]]:
    """kube-scheduler's pass over the pending pods it has not tried yet (``_Pending.fresh``),
    before Karpenter's round: each, in its queue order (``PrioritySort``: priority, then
    creation), is bound to the existing node that passes its Filter plugins with the best
    NodeResourcesFit LeastAllocated score (``Scheduler`` in ``kube-scheduler`` mode: no
    NodePool, preferences only scores). The bound pods leave ``demand.pending``; the rest
    stay Karpenter's demand, as kube-scheduler marks them unschedulable (Karpenter
    pkg/utils/pod/scheduling.go ``IsProvisionable`` needs that). Returns (pod, node) of
    each binding."""
    fresh = [p for p in demand.pending if p.fresh]
    bindings: list[tuple[str, str]] = []
    if fresh and targets:
        bindings, _missing = _kube_pass(fresh, demand, m, targets, daemonsets)
    # pods whose volumes are missing: Karpenter's round reports them
    placed = {uid for uid, _ in bindings}
    demand.pending = [p for p in demand.pending if p.uid not in placed]
    return bindings + _bind_pinned(demand, m, targets, daemonsets)


def _bind_pinned(
    demand: _Demand,
    m: ManifestSet,
    targets: dict[str, ClusterNode],
    daemonsets: list[PodTemplate],
) -> list[tuple[str, str]]:
    """kube-scheduler's pass (``_kube_pass``) over the new pods
    pinned to nodes by name (``_Demand.pinned_fresh``), each on its nodes only: bound when
    it passes the filters there; otherwise unschedulable, as Karpenter does not provision
    for it (Karpenter pkg/utils/pod/scheduling.go ``IsProvisionable``). Returns (pod, node)
    of each binding."""
    bindings: list[tuple[str, str]] = []
    for p in demand.pinned_fresh:
        nodes = {n: targets[n] for n in p.template.pinned_nodes if n in targets}
        pend = _Pending(p.key, p.key, p.template, fresh=True, pod=p)
        bound, missing = _kube_pass([pend], demand, m, nodes, daemonsets) if nodes else ([], [])
        bindings += bound
        if not bound:
            where = (
                "that kube-scheduler's filters refuse (room, taints, affinity)"
                if nodes
                else "that is not among the nodes"
            )
            demand.pinned += missing or [
                Unschedulable(
                    pod=p.key,
                    reason=f"{_PINNED} {where}; {_NOT_PROVISIONED}",
                )
            ]
    demand.pinned_fresh = []
    return bindings


def _kube_pass(
    pods: list[_Pending],
    demand: _Demand,
    m: ManifestSet,
    targets: dict[str, ClusterNode],
    daemonsets: list[PodTemplate],
) -> tuple[list[tuple[str, str]], list[Unschedulable]]:
    """kube-scheduler binding ``pods`` to the existing nodes only (no NodePool, no
    in-flight NodeClaim: it binds to Nodes), in its queue order, each to the node that
    passes its filters with the best LeastAllocated score (``Scheduler`` in
    ``kube-scheduler`` mode); each binding is charged to ``demand`` (``_kube_bind``).

    A pod nominated to a target node by an earlier preemption (``demand.nominated``) holds
    its requests there against every pod of lower or equal priority (Kubernetes
    pkg/scheduler/framework/runtime/framework.go ``RunFilterPluginsWithNominatedPods``,
    ``addGENominatedPods``: the filters run with the nominated pods of higher or equal
    priority added): the pods are then solved one priority level at a time, highest
    first, as kube-scheduler's queue takes them (``PrioritySort``). Only their requests
    are held (the room filters), not scored (``ExistingNode.held``: LeastAllocated scores
    the node without them); their labels do not count in spread or affinity.

    Returns the (pod, node) bindings and the pods whose volumes are missing."""
    requests, missing = _requests(pods, m)
    held = _nominated_requests(m, demand, targets)
    levels = sorted({r.template.priority_value for r in requests}, reverse=True) if held else [None]
    by_uid = {p.uid: p for p in pods}
    bindings: list[tuple[str, str]] = []
    for level in levels:
        group = [r for r in requests if level is None or r.template.priority_value == level]
        holding = held_for(held, level) if level is not None else {}
        result = Scheduler().solve(
            SchedulingInput(
                pods=tuple(group),
                existing=tuple(_existing(targets, demand, daemonsets, holding)),
                nodepools=(),
                daemonsets=tuple(daemonsets),
                bound_pods=_bound(m, targets, None, demand),
                mode="kube-scheduler",
            )
        )
        for uid, node in result.existing_placements:
            _kube_bind(demand, node, by_uid[uid])
        bindings += result.existing_placements
    return bindings, missing


def _nominated_requests(
    m: ManifestSet, demand: _Demand, targets: dict[str, ClusterNode]
) -> list[tuple[str, int, quantity.Resources]]:
    """(target node, priority, requests) of each pod nominated to a target node
    (``demand.nominated``), for ``held_for``. A nominated pod of one of the DaemonSets is
    left out: the node's room already holds it as a DaemonSet pod still to come
    (``_room``)."""
    pods = {p.key: p for p in m.pods}
    ds_owners = {f"DaemonSet/{d.name}" for d in m.daemonsets}
    return [
        (n.node, pod.template.priority_value, pod.template.requests)
        for n in demand.nominated
        if (pod := pods.get(n.pod)) is not None and n.node in targets and pod.owner not in ds_owners
    ]


def _kept(bindings: list[tuple[str, str]], rnd: PreemptionRound | None) -> list[tuple[str, str]]:
    """The (pod, node) bindings of a kube-scheduler pass less the pods a preemption deleted
    or displaced (a replaced or displaced one is pending again, placed by the later
    passes)."""
    if rnd is None:
        return bindings
    return [b for b in bindings if b[0] not in rnd.victims and b[0] not in rnd.displaced]


class _Passes:
    """The first pass's result launched, then the passes after it (``plan_passes``): each
    solves what the last left pending with the NodeClaims launched so far in flight, while
    the last launched any and something is still pending."""

    def __init__(self, launcher: _Launcher, pools: dict[str, NodePool], demand: _Demand) -> None:
        self._launcher = launcher
        self._pools = pools
        self._demand = demand
        self.claims: list[PlannedNodeClaim] = []
        self.launched: list[passes.Launched] = []
        #: Pods whose NodeClaim could not launch (no offering).
        self.failed: list[Unschedulable] = []
        #: (pod uid, existing node) of every pass.
        self.placements: list[tuple[str, str]] = []

    def run(
        self,
        result: SchedulingResult,
        solve: Callable[
            [_Demand, Sequence[passes.Launched], Sequence[tuple[str, str]]], SchedulingResult
        ],
    ) -> SchedulingResult:
        """Launch ``result`` and solve again (``solve(demand, launched, placed)``, ``placed``
        the (pod, node) placements on existing nodes so far) as long as a pass launches a
        NodeClaim and leaves a pod pending; returns the last pass's result."""
        by_uid = {p.uid: p for p in self._demand.pending}
        for _ in range(passes.MAX_PASSES - 1):
            if not self._take(result) or not result.unschedulable:
                return result
            left = [by_uid[uid] for uid, _ in result.unschedulable if uid in by_uid]
            result = solve(
                replace(self._demand, pending=left), list(self.launched), list(self.placements)
            )
        self._take(result)
        return result

    def _take(self, result: SchedulingResult) -> bool:
        """Record ``result``'s placements and launch its NodeClaims; True when one launched."""
        on_claims = {c.name: c for c in self.claims}
        for uid, node in result.existing_placements:
            if node in on_claims:
                on_claims[node].pods.append(uid)
            else:
                self.placements.append((uid, node))
        launched_any = False
        for new in result.new_nodeclaims:
            claim = self._launcher.launch(new)
            if isinstance(claim, PlannedNodeClaim):
                self.claims.append(claim)
                it = self._launcher.types[claim.name]
                self.launched.append(passes.Launched(claim, it, self._pools[new.nodepool]))
                launched_any = True
            else:
                self.failed += claim
        return launched_any


def build_plan(
    m: ManifestSet,
    catalog: Catalog,
    region: str,
    *,
    subnets: Sequence[Subnet] | None = None,
    security_groups: Sequence[SecurityGroup] = (),
    min_values_policy: str = "Strict",
    kwok_types: Sequence[InstanceType] | None = None,
    packing: str = "karpenter",
    reservations: Sequence[CapacityReservation] = (),
    spot_prices: SpotPrices | None = None,
    feature_gates: FeatureGates | None = None,
) -> Plan:
    """Plan one provisioning round; see the module docstring for how the cluster is read.

    ``packing`` is the provisioning policy (``scheduling.costopt.PACKINGS``): ``karpenter``
    (Karpenter's packing, the default) or ``cost-optimal`` (Joiner's cheaper packing, with the
    same predicates).

    ``kwok_types`` are Karpenter-kwok's instance types (``cloudprovider.kwok``), used by the
    NodePools of KWOKNodeClasses, which then launch as Karpenter-kwok does (lowest price).

    ``spot_prices``: per-pool Spot prices (``SpotPrices``); None prices Spot regionally.

    ``feature_gates``: with ``NodeOverlay`` on, the manifests' NodeOverlays change the
    instance types' prices and capacities (``cloudprovider.overlay``); off, each is warned
    about.

    Raises:
        InputError: as ``planning_cloud``.
    """
    gates = feature_gates or FeatureGates()
    warnings = _plan_warnings(
        m, catalog, region, subnets, security_groups, kwok_types, reservations, gates
    )
    cloud = planning_cloud(
        m,
        catalog,
        region,
        subnets,
        security_groups,
        warnings,
        kwok_types,
        market=spot_prices.market if spot_prices is not None else None,
        reservations=reservations,
    )
    if spot_prices is not None:
        warnings += spot_prices.warnings()
    daemonsets = [d.template for d in m.daemonsets]
    live_nodes = {n.name: n for n in m.nodes}
    targets = {n.name: n for n in m.nodes if not n.deleting}
    demand = _read_pods(m, targets, live_nodes, warnings)
    demand.pending += [
        _Pending(name, name, w.template, fresh=True, pod=_replica_pod(w, name))
        for w, name in missing_replicas(m)
    ]
    in_flight = _in_flight(m, live_nodes, daemonsets, warnings)
    warnings += gate_warnings(m.nodeoverlays, gates.node_overlay)
    warnings += static.gate_warnings(m.nodepools, gates.static_capacity)
    pools = static.gated(m.nodepools, gates.static_capacity)
    overlays = Overlays(m.nodeoverlays) if gates.node_overlay and m.nodeoverlays else None
    nodepools = tuple(_templates(m, cloud, in_flight, overlays, pools))
    if overlays is not None:
        warnings += overlays.warnings()

    def solve(
        d: _Demand,
        rnd: PreemptionRound | None,
        launched: Sequence[passes.Launched] = (),
        placed: Sequence[tuple[str, str]] = (),
    ) -> tuple[SchedulingResult, list[Unschedulable]]:
        requests, missing = _requests(d.pending, m)
        planned, planned_pods = passes.in_flight(launched, templates, daemonsets)
        nodes, placed_pods = passes.charge_placed(
            (*_existing(targets, d, daemonsets), *in_flight), placed, templates
        )
        result = scheduler_for(packing).solve(
            SchedulingInput(
                pods=tuple(requests),
                existing=(*nodes, *planned),
                nodepools=passes.limits_left(nodepools, launched),
                daemonsets=tuple(daemonsets),
                bound_pods=(*_bound(m, targets, rnd, d), *placed_pods, *planned_pods),
                min_values_policy=min_values_policy,
            )
        )
        return result, missing

    ignored = _bind_ignored(demand, m, targets, daemonsets)
    first_bound = _bind_fresh(demand, m, targets, daemonsets)
    templates = {p.uid: p.template for p in demand.pending}
    result, missing = solve(demand, None)
    rnd = _preemption(m, targets, demand, daemonsets, result)
    if rnd is not None and rnd.preemptions:
        demand = _after_preemption(demand, rnd)
        # The victims' replacements are pending now: later passes look their templates up.
        templates.update((p.uid, p.template) for p in demand.pending)
        result, missing = solve(demand, rnd)
    # planning_cloud raised unless the NodeClasses are all KWOKNodeClasses or all EC2 ones.
    kwok = any(nc.source.kind == KWOKNODECLASS_KIND for nc in m.nodeclasses)
    launcher = _Launcher({p.name: p for p in m.nodepools}, region, min_values_policy, kwok)
    later = _Passes(launcher, {p.name: p for p in m.nodepools}, demand)
    result = later.run(result, lambda d, launched, placed: solve(d, rnd, launched, placed)[0])
    claims = later.claims
    fixed = _static_round(m, pools, cloud, overlays, launcher)
    warnings += fixed.warnings
    on_launch = _bind_on_launch(
        result.unschedulable,
        later,
        _static_launched(fixed, launcher, m),
        demand,
        m,
        (*_existing(targets, demand, daemonsets), *in_flight),
        _bound(m, targets, rnd, demand),
    )
    bound_later = {uid for uid, _ in on_launch}
    claim_names = {c.name for c in (*claims, *fixed.claims)}
    unschedulable = (
        missing
        + demand.pinned
        + ignored.unschedulable
        + later.failed
        + _unplaced([u for u in result.unschedulable if u[0] not in bound_later], pools)
    )
    return Plan(
        region=region,
        nodeClaims=claims,
        placements=[
            Placement(pod=u, node=n, boundBy="kube-scheduler")
            for u, n in (*_kept(ignored.placements, rnd), *_kept(first_bound, rnd))
        ]
        + [Placement(pod=u, node=n) for u, n in later.placements]
        + [
            Placement(
                pod=u,
                node=n,
                boundBy="kube-scheduler",
                onNodeClaim=n in claim_names,
                afterLaunch=True,
            )
            for u, n in on_launch
        ],
        unschedulable=unschedulable,
        preemptions=rnd.preemptions if rnd is not None else [],
        nominated=demand.nominated,
        costPerHour=round(sum(c.launch.pricePerHour for c in claims), 6),
        staticNodeClaims=fixed.claims,
        staticDeletions=fixed.deletions,
        staticCostPerHour=round(sum(c.launch.pricePerHour for c in fixed.claims), 6),
        **price_fields(spot_prices),
        warnings=warnings + ([] if spot_prices is not None else _one_zone_warning(claims)),
    )


def _static_launched(
    fixed: StaticRound, launcher: _Launcher, m: ManifestSet
) -> list[passes.Launched]:
    """The static pools' NodeClaims to create (``fixed``) as launched, with their instance
    types and NodePools."""
    pools = {p.name: p for p in m.nodepools}
    return [passes.Launched(c, launcher.types[c.name], pools[c.nodePool]) for c in fixed.claims]


def _bind_on_launch(
    left: Sequence[tuple[str, str]],
    later: _Passes,
    static_launched: Sequence[passes.Launched],
    demand: _Demand,
    m: ManifestSet,
    nodes: Sequence[ExistingNode],
    bound: Sequence[BoundPod],
) -> list[tuple[str, str]]:
    """kube-scheduler's pass over the pods Karpenter's rounds left unschedulable (``left``:
    pod uid, reason) once the plan's NodeClaims have registered: each, in its queue order,
    is bound to the node (``nodes``, the existing and in-flight ones, or a planned
    NodeClaim with the pods Karpenter planned there, a static pool's new NodeClaims
    (``static_launched``) among them; ``bound``: the pods running on ``nodes``) that
    passes its filters with the best
    LeastAllocated score (``Scheduler`` in ``kube-scheduler`` mode). kube-scheduler retries
    an unschedulable pod when a node is added (Kubernetes
    pkg/scheduler/framework/plugins/podtopologyspread ``EventsToRegister``), and its
    ``PodTopologySpread`` filter counts only the domains of the nodes that exist, where
    Karpenter's counts every zone its NodePools can launch into (``TopologyGroup`` domains):
    a zone spread Karpenter's round refuses (3 to 0 over three zones) is 1 to nothing on
    one new node. A pod it binds is an assigned pod added, on which kube-scheduler retries
    the pods still unschedulable (Kubernetes
    pkg/scheduler/framework/plugins/interpodaffinity/plugin.go
    ``InterPodAffinity.EventsToRegister``), so the pass is repeated over the pods left
    while one binds: a pod that needs a pod bound later on its node (required pod
    affinity) follows it. Returns the (pod, node) bindings, a planned NodeClaim's name as
    node, or an existing node's (a pod whose required pod affinity by zone a pod bound to
    a NodeClaim satisfies there)."""
    wanted = {uid for uid, _ in left}
    pods = [p for p in demand.pending if p.uid in wanted]
    launched = [*later.launched, *static_launched]
    if not pods or not launched:
        return []
    templates = {p.uid: p.template for p in demand.pending}
    daemonsets = [d.template for d in m.daemonsets]
    planned, planned_pods = passes.in_flight(launched, templates, daemonsets)
    requests, _missing = _requests(pods, m)
    bindings: list[tuple[str, str]] = []
    while requests:
        charged, placed_pods = passes.charge_placed(
            (*nodes, *planned), [*later.placements, *bindings], templates
        )
        result = Scheduler().solve(
            SchedulingInput(
                pods=tuple(requests),
                existing=tuple(charged),
                nodepools=(),
                daemonsets=tuple(daemonsets),
                bound_pods=(*bound, *placed_pods, *planned_pods),
                mode="kube-scheduler",
            )
        )
        if not result.existing_placements:
            break
        bindings += result.existing_placements
        done = {uid for uid, _ in result.existing_placements}
        requests = [r for r in requests if r.uid not in done]
    return bindings


def _static_round(
    m: ManifestSet,
    pools: Sequence[NodePool],
    cloud: SimulatedCloudProvider,
    overlays: Overlays | None,
    launcher: _Launcher,
) -> StaticRound:
    """The static pools' NodeClaims to create and delete (``plan_static``); nothing (and
    nothing imported) without a static pool in force."""
    if not any(static.is_static(p) for p in pools):
        return StaticRound()

    def types_of(pool: NodePool) -> list[InstanceType]:
        types = cloud.get_instance_types(pool.node_class_ref.name)
        return overlays.apply_all([(pool, types)])[0] if overlays is not None else types

    return static_round(m, pools, types_of, launcher.launch)


def price_fields(spot_prices: SpotPrices | None) -> dict[str, str]:
    """A dry run's ``priceSource`` and ``pricesAt`` output fields (none: regional)."""
    if spot_prices is None:
        return {}
    return {
        "priceSource": "spot-price-history",
        "pricesAt": spot_prices.at.isoformat().replace("+00:00", "Z"),
    }
