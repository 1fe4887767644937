"""Inputs and outputs of ``Scheduler.solve``: plain frozen values, no live objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from joiner.api.objects import HostPort, NodePool, PodAffinityTerm, PodTemplate, Taint
from joiner.api.quantity import Resources, add
from joiner.api.requirements import Requirements
from joiner.cloudprovider.types import InstanceType


@dataclass(frozen=True, slots=True)
class PodRequest:
    """A pod to place: ``uid`` identifies it in the result; ``order`` is its creation order.

    ``volume_terms`` are the node requirements its volumes impose, as alternatives (a bound
    zonal PersistentVolume's node affinity, or a StorageClass's allowed topologies); empty
    when its volumes impose nothing. ``volumes`` names the claims imposing them
    (``scheduling.volumes.ResolvedVolumes.described``), for the reason a pod fits no offering.
    """

    uid: str
    template: PodTemplate
    order: int = 0
    volume_terms: tuple[Requirements, ...] = ()
    volumes: str = ""


@dataclass(frozen=True, slots=True)
class BoundPod:
    """A pod already running on an existing node: it counts in topology domains, its required
    anti-affinity keeps matching pods out of its domain, and its host ports are taken."""

    node: str
    namespace: str
    labels: tuple[tuple[str, str], ...]
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    host_ports: tuple[HostPort, ...] = ()


@dataclass(frozen=True, slots=True)
class ExistingNode:
    """A node (or an in-flight NodeClaim) that already exists.

    Attributes:
        name: node or NodeClaim name.
        labels: the node's labels (for an in-flight NodeClaim, those its requirements fix).
        taints: taints pods must tolerate.
        available: allocatable minus what bound pods request and the DaemonSet pods still to
            come ask for; may be negative.
        initialized: Ready and initialized (tried before in-flight ones).
        requirements: for an in-flight NodeClaim whose instance type is not resolved yet, its
            requirements; None for a real node (its labels are exact).
    """

    name: str
    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]
    available: Resources
    initialized: bool
    nodepool: str | None = None
    requirements: Requirements | None = None
    #: For kube-scheduler's LeastAllocated scoring (``mode="kube-scheduler"``).
    allocatable: Resources | None = None
    #: Of what ``available`` leaves out, the part kube-scheduler's filters count and its
    #: scores do not: the pods nominated to the node (Kubernetes
    #: pkg/scheduler/framework/runtime/framework.go ``RunFilterPluginsWithNominatedPods``
    #: adds them to a copy of the node's NodeInfo; pkg/scheduler/schedule_one.go
    #: ``prioritizeNodes`` scores the snapshot's). None: nothing held.
    held: Resources | None = None


def held_for(nominated: list[tuple[str, int, Resources]], priority: int) -> dict[str, Resources]:
    """What a pod of ``priority`` finds held on each node (``ExistingNode.held``): the
    summed requests of the ``nominated`` pods (node, priority, requests) of higher or equal
    priority (Kubernetes pkg/scheduler/framework/runtime/framework.go
    ``addGENominatedPods``)."""
    out: dict[str, Resources] = {}
    for node, prio, requests in nominated:
        if prio >= priority:
            out[node] = add(out.get(node, {}), requests)
    return out


@dataclass(frozen=True, slots=True)
class NodePoolTemplate:
    """A NodePool with the instance types it may launch and what it has left under its limits.

    Attributes:
        nodepool: the NodePool.
        instance_types: every type of its NodeClass (unavailable offerings included).
        remaining: ``limit - usage`` per limited resource (``nodes`` included); absent keys are
            unlimited.
    """

    nodepool: NodePool
    instance_types: tuple[InstanceType, ...]
    remaining: tuple[tuple[str, int], ...] = ()


class StopReason(StrEnum):
    """Which of a ``StopRule``'s rules stopped a solve (``scheduling.stop``)."""

    #: The moving pods need more than one new NodeClaim.
    MORE_THAN_ONE_NODE = "moreThanOneNode"
    #: A new NodeClaim holding a moving pod could launch as a rejected capacity type.
    REJECTED_CAPACITY_TYPE = "rejectedCapacityType"
    #: No instance type of a new NodeClaim is cheaper than the candidates.
    NOT_CHEAPER = "notCheaper"


@dataclass(frozen=True, slots=True)
class StopRule:
    """When a solve may stop early because its caller's answer is already decided
    (consolidation's; Joiner's own speed-up, not an upstream rule).

    Consolidation (Karpenter ``computeConsolidation``) rejects a simulation whose moving pods
    need more than one new NodeClaim, and a single replacement none of whose instance types
    has a worst launch price below the candidates' summed price. NodeClaim options only
    narrow as pods are added, and a type's worst launch price is never below its cheapest
    offering under the NodePool's requirements, so the solve stops as soon as a second
    NodeClaim takes one of ``pods``, or a NodeClaim holding one has no option whose cheapest
    offering is below ``price_per_hour``: the rest of the solve cannot turn the rejection
    into a command. Offerings of ``rejected_capacity_types`` do not count: a replacement that
    could launch as one of them is rejected whatever its price (spot-to-spot consolidation
    with its feature gate off), so the solve also stops once a NodeClaim holding one of
    ``pods`` could launch as one of them whatever joins it later (``stop.launches_as``), and
    one that cannot is priced by its other offerings.

    Attributes:
        pods: uids of the pods being moved.
        price_per_hour: the price a replacement must undercut, USD per hour (None: no price
            rule, only the NodeClaim count).
        rejected_capacity_types: capacity types a replacement may not launch as.
    """

    pods: frozenset[str]
    price_per_hour: float | None = None
    rejected_capacity_types: frozenset[str] = frozenset()


@dataclass
class FirstFit:
    """Cluster Autoscaler's choice of node when it checks which pending pods fit the nodes
    it has or awaits (``FilterOutSchedulable``, through ``HintingSimulator.TrySchedulePods``):
    a pod first tries the node it fitted last time (its hint), else the first node that
    passes every filter, the walk starting just after the node the previous search found
    (``SchedulerPluginRunner.RunFiltersUntilPassingNode``'s ``lastIndex``). Kept by the
    caller across solves, as CA keeps its runner and hints across loops.

    Attributes:
        last_index: where the next search starts, a position in the solve's node order.
        hints: pod uid -> node it was placed on since the last ``drop_old``.
        old_hints: the hints set before the last ``drop_old`` (still read, as CA's are).
    """

    last_index: int = 0
    hints: dict[str, str] = field(default_factory=dict)
    old_hints: dict[str, str] = field(default_factory=dict)

    def hint(self, uid: str) -> str | None:
        """The node ``uid`` was last placed on, if still remembered (``Hints.Get``)."""
        found = self.hints.get(uid)
        return found if found is not None else self.old_hints.get(uid)

    def drop_old(self) -> None:
        """Forget hints not set since the previous call (``Hints.DropOld``, once a loop)."""
        self.old_hints, self.hints = self.hints, {}


@dataclass(frozen=True, slots=True)
class SchedulingInput:
    """Everything one solve reads."""

    pods: tuple[PodRequest, ...]
    existing: tuple[ExistingNode, ...] = ()
    nodepools: tuple[NodePoolTemplate, ...] = ()
    daemonsets: tuple[PodTemplate, ...] = ()
    bound_pods: tuple[BoundPod, ...] = ()
    #: Cap on instance-type options per NodeClaim (Karpenter core MaxInstanceTypes).
    max_instance_types: int = 600
    #: ``provisioner`` (Karpenter: CPU-then-memory queue, first fit over existing nodes in
    #: initialized-then-name order, PreferNoSchedule taints relaxed last) or
    #: ``kube-scheduler`` (creation-order queue, LeastAllocated choice among existing nodes,
    #: PreferNoSchedule never blocks). The sim's kube-scheduler model uses the latter with
    #: no NodePools, so both apply the very same predicates.
    mode: str = "provisioner"
    #: ``Strict``: a NodeClaim that cannot keep a requirement's ``minValues`` distinct values
    #: fails (the next NodePool is tried); ``BestEffort``: minValues is relaxed.
    min_values_policy: str = "Strict"
    #: Stop early once the caller's answer is decided (``StopRule``); None: never.
    stop: StopRule | None = None
    #: Names of ``existing`` nodes left out of this solve, with the ``bound_pods`` on them,
    #: as if absent. Callers solving many times over one snapshot (a consolidation pass, a
    #: candidate at a time) pass the same ``existing`` and ``bound_pods`` tuples each time,
    #: and what the solve derives from them is computed once (``scheduling.base``).
    exclude_nodes: frozenset[str] = frozenset()
    #: Of ``exclude_nodes``, the nodes that stay topology domains (with none of their pods
    #: counted) though they take no pod: Cluster Autoscaler's drain simulation removes the
    #: pods from the node it simulates removing and keeps the node in its snapshot, so a
    #: hostname spread still counts it, at zero (``simulator.RemovalSimulator.findPlaceFor``).
    keep_domains: frozenset[str] = frozenset()
    #: ``kube-scheduler`` mode only: choose nodes as Cluster Autoscaler's fit check does
    #: (``FirstFit``; filters only, no preference, first fit from a rotating start) instead
    #: of by LeastAllocated; the solve updates it. None: kube-scheduler's choice.
    first_fit: FirstFit | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class NewNodeClaim:
    """A NodeClaim to create.

    Attributes:
        nodepool: NodePool name.
        requirements: NodePool requirements narrowed by its pods'.
        instance_types: options that fit every pod plus DaemonSet overhead, cheapest first.
        pods: uids of the pods it takes.
        requests: pods' requests plus the smallest DaemonSet overhead over the options.
    """

    nodepool: str
    requirements: Requirements
    instance_types: tuple[InstanceType, ...]
    pods: tuple[str, ...]
    requests: Resources


@dataclass(frozen=True, slots=True)
class SchedulingResult:
    """What to do: new NodeClaims, pods that fit existing capacity, and pods that fit nowhere."""

    new_nodeclaims: tuple[NewNodeClaim, ...] = ()
    existing_placements: tuple[tuple[str, str], ...] = ()
    unschedulable: tuple[tuple[str, str], ...] = field(default=())
    #: Why the solve stopped early under ``SchedulingInput.stop`` (the other fields are then
    #: partial), or None when it ran to the end.
    stopped: str | None = None
    #: The rule that stopped it (set with ``stopped``).
    stopped_reason: StopReason | None = None

    def reason(self, uid: str) -> str | None:
        """Why ``uid`` could not be scheduled, or None."""
        return next((r for u, r in self.unschedulable if u == uid), None)
