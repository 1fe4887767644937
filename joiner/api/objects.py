"""Domain views of the Kubernetes and Karpenter objects Joiner reasons about.

Loading (``joiner.api.manifests``) turns YAML into these; the scheduler, the controllers and
the simulation read only these. Scheduling-relevant pod facts live in the frozen
``PodTemplate`` so that identical replicas share one value (and one cache entry).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from joiner.api import labels
from joiner.api.nodepools import (
    DEFAULT_BUDGETS,
    DISRUPTION_REASONS,
    AMISelectorTerm,
    BlockDevice,
    CapacityReservationSelectorTerm,
    DisruptionBudget,
    KubeletConfig,
    MetadataOptions,
    NodeClass,
    NodeClassRef,
    NodePool,
    SelectorTerm,
)
from joiner.api.pods import (
    DO_NOT_SCHEDULE,
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    SCHEDULE_ANYWAY,
    SELECTS_NO_POD,
    TAINT_EFFECTS,
    HostPort,
    PodAffinityTerm,
    PodTemplate,
    Source,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    tolerates_all,
)
from joiner.api.requirements import Requirements

__all__ = [
    "DEFAULT_BUDGETS",
    "DISRUPTION_REASONS",
    "DO_NOT_SCHEDULE",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "REPLICATED_KINDS",
    "SCHEDULE_ANYWAY",
    "SELECTS_NO_POD",
    "TAINT_EFFECTS",
    "AMISelectorTerm",
    "BlockDevice",
    "CapacityReservationSelectorTerm",
    "ClusterNode",
    "ClusterNodeClaim",
    "CronJob",
    "DaemonSet",
    "Deployment",
    "DisruptionBudget",
    "HostPort",
    "KubeletConfig",
    "MetadataOptions",
    "NodeClass",
    "NodeClassRef",
    "NodePool",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PodAffinityTerm",
    "PodDisruptionBudget",
    "PodTemplate",
    "SelectorTerm",
    "Source",
    "StandalonePod",
    "StorageClass",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "Workload",
    "tolerates_all",
]


#: Workload kinds that keep a fixed number of pods running.
REPLICATED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job")


@dataclass(frozen=True, slots=True)
class Workload:
    """A controller that keeps ``replicas`` copies of ``template`` running.

    ``kind`` is Deployment, ReplicaSet, StatefulSet or Job (a Job's ``replicas`` is its
    ``parallelism``, capped by ``completions``). ``selector`` is the label selector that
    matches its pods (``spec.selector``, or the template labels when absent).
    """

    kind: str
    namespace: str
    name: str
    replicas: int
    template: PodTemplate
    source: Source
    selector: Requirements = field(default_factory=Requirements)
    annotations: tuple[tuple[str, str], ...] = ()
    #: A Job's successful completions still to go (``completions - succeeded``, or
    #: ``parallelism`` when unset); None for the other kinds.
    completions: int | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


#: The name earlier code and tests use for the commonest workload.
Deployment = Workload


@dataclass(frozen=True, slots=True)
class CronJob:
    """A ``batch/v1`` CronJob: each time ``schedule`` fires it creates a Job of its
    ``jobTemplate`` (``parallelism`` pods at a time until ``completions`` succeed)."""

    namespace: str
    name: str
    schedule: str
    template: PodTemplate
    source: Source
    parallelism: int = 1
    completions: int | None = None
    suspend: bool = False
    #: ``Allow`` (default), ``Forbid`` or ``Replace``.
    concurrency_policy: str = "Allow"
    #: ``spec.timeZone`` (an IANA name) the schedule is read in; None: UTC.
    time_zone: str | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class DaemonSet:
    """An ``apps/v1`` DaemonSet: one pod of ``template`` on every node it tolerates and selects."""

    namespace: str
    name: str
    template: PodTemplate
    source: Source


@dataclass(frozen=True, slots=True)
class StandalonePod:
    """A ``v1`` Pod from a manifest or a cluster dump.

    ``node_name`` is set for a running pod (``spec.nodeName``); ``owner`` is ``Kind/name`` of
    its controller, if any.
    """

    namespace: str
    name: str
    template: PodTemplate
    source: Source
    node_name: str | None = None
    owner: str | None = None
    annotations: tuple[tuple[str, str], ...] = ()
    #: ``status.phase``; Succeeded and Failed pods hold no capacity and are no demand.
    phase: str | None = None
    #: ``metadata.deletionTimestamp`` is set: going away, no demand.
    deleting: bool = False
    #: ``status.startTime`` (UTC), when known.
    started_at: datetime | None = None
    #: ``spec.schedulingGates`` names: while any is set the scheduler does not consider the
    #: pod, and Karpenter does not provision for it.
    scheduling_gates: tuple[str, ...] = ()
    #: ``status.nominatedNodeName``: kube-scheduler preempted pods on that node for this one,
    #: which binds there once they are gone.
    nominated_node_name: str | None = None
    #: ``status.conditions`` has ``PodScheduled``: kube-scheduler has tried the pod. A
    #: pending pod without it (a manifest not applied yet) is tried by kube-scheduler on the
    #: existing nodes before Karpenter sees it (``joiner plan``).
    scheduler_tried: bool = False
    #: ``status.conditions`` has ``PodScheduled`` with reason ``Unschedulable``:
    #: kube-scheduler tried the pod and found no room. Karpenter provisions only for such a
    #: pod (``pkg/utils/pod/scheduling.go`` ``FailedToSchedule``, part of
    #: ``IsProvisionable``); controller mode holds an unbound pod without it.
    failed_to_schedule: bool = False

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def preempting(self) -> bool:
        """Pending and nominated to a node by kube-scheduler's preemption: Karpenter does not
        provision for it (``pkg/utils/pod/scheduling.go`` ``IsPreempting``, part of
        ``IsProvisionable``); it waits for its victims to go."""
        return self.node_name is None and self.nominated_node_name is not None

    @property
    def terminal(self) -> bool:
        """Finished (Succeeded or Failed): ignored by planning and simulation."""
        return self.phase in ("Succeeded", "Failed")

    @property
    def provisionable(self) -> bool:
        """Karpenter provisions for it when pending: not finishing, not a DaemonSet or mirror
        pod, not pinned to a node by name, not held by a scheduling gate.

        Karpenter ``pkg/utils/pod/scheduling.go`` ``IsProvisionable`` requires the
        ``PodScheduled=False, reason Unschedulable`` condition, which kube-scheduler never
        sets on a gated pod (its reason is ``SchedulingGated``)."""
        owner_kind = (self.owner or "").split("/", 1)[0]
        return (
            not self.deleting
            and not self.template.pinned
            and not self.scheduling_gates
            and owner_kind not in ("DaemonSet", "Node")
        )


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """A ``policy/v1`` PodDisruptionBudget; ``min_available``/``max_unavailable`` are an int
    or a percentage string such as ``"50%"``. ``selector`` is None when ``spec.selector`` is
    absent or null: such a budget selects no pod, while an empty selector (``{}``) selects
    every pod of its namespace (Karpenter pkg/utils/pdb/pdb.go newPdb, through
    ``metav1.LabelSelectorAsSelector``: nil is Nothing, empty is Everything)."""

    namespace: str
    name: str
    selector: Requirements | None
    source: Source
    min_available: int | str | None = None
    max_unavailable: int | str | None = None


@dataclass(frozen=True, slots=True)
class ClusterNode:
    """A ``v1`` Node from a cluster dump; ``nodepool`` comes from ``karpenter.sh/nodepool``."""

    name: str
    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]
    capacity: tuple[tuple[str, int], ...]
    allocatable: tuple[tuple[str, int], ...]
    source: Source
    unschedulable: bool = False
    provider_id: str | None = None
    annotations: tuple[tuple[str, str], ...] = ()
    #: Being deleted (``metadata.deletionTimestamp``, the ``karpenter.sh/disrupted`` taint, or
    #: its NodeClaim's ``deletionTimestamp``): not a target, and its pods are demand for new
    #: capacity.
    deleting: bool = False
    #: ``status.conditions`` as sorted (type, status) pairs. A Node without a ``Ready``
    #: condition (a hand-written manifest) is taken as Ready: an initialized node always has
    #: one, as Karpenter's initialization waits for ``Ready=True``.
    conditions: tuple[tuple[str, str], ...] = ()

    @property
    def nodepool(self) -> str | None:
        """The managing NodePool (or legacy Provisioner), or None for unmanaged nodes."""
        d = dict(self.labels)
        return d.get(labels.NODEPOOL) or d.get(labels.LEGACY_PROVISIONER_NAME)

    @property
    def ready_status(self) -> str:
        """The ``Ready`` condition's status (``True``, ``False``, ``Unknown``); ``True`` when
        the Node has none (see ``conditions``)."""
        return dict(self.conditions).get("Ready", "True")

    @property
    def ready(self) -> bool:
        """Ready: Karpenter counts any other status as disrupting against the NodePool's
        budgets (pkg/controllers/disruption/helpers.go ``BuildDisruptionBudgetMapping``)."""
        return self.ready_status == "True"

    @property
    def scheduling_taints(self) -> tuple[Taint, ...]:
        """``taints`` with the ``NoSchedule`` taints the node lifecycle controller keeps for
        its conditions and a cordon, when the manifest lacks them: what kube-scheduler's
        TaintToleration filter sees (Kubernetes pkg/controller/nodelifecycle/
        node_lifecycle_controller.go ``doNoScheduleTaintingPass``). The ``NoExecute``
        ``not-ready``/``unreachable`` taints are not added: admission gives every pod a
        toleration for them (``DefaultTolerationSeconds``)."""
        return lifecycle_taints(self.taints, self.conditions, unschedulable=self.unschedulable)


def lifecycle_taints(
    taints: tuple[Taint, ...], conditions: Iterable[tuple[str, str]], *, unschedulable: bool
) -> tuple[Taint, ...]:
    """``taints`` plus the ``NoSchedule`` taints the node lifecycle controller keeps for a
    Node's (condition type, status) pairs (``labels.CONDITION_TAINTS``) and for
    ``spec.unschedulable``, those not already there, in that order (Kubernetes
    pkg/controller/nodelifecycle/node_lifecycle_controller.go ``doNoScheduleTaintingPass``)."""
    keys = [labels.CONDITION_TAINTS.get(c) for c in conditions]
    if unschedulable:
        keys.append(labels.TAINT_UNSCHEDULABLE)
    present = {(t.key, t.effect) for t in taints}
    added = tuple(
        Taint(key, "NoSchedule")
        for key in dict.fromkeys(k for k in keys if k is not None)
        if (key, "NoSchedule") not in present
    )
    return (*taints, *added)


@dataclass(frozen=True, slots=True)
class ClusterNodeClaim:
    """A ``karpenter.sh/v1`` NodeClaim from a cluster dump: launched or in-flight capacity.

    Karpenter's cluster state counts a NodeClaim whose Node has not registered yet as
    capacity for its pods (``state.Cluster`` in-flight nodes), so nothing is launched twice.
    ``labels`` are the NodeClaim's (Karpenter copies the resolved instance type, zone and
    capacity type there at launch); ``allocatable`` is ``status.allocatable``.
    """

    name: str
    nodepool: str | None
    node_class: str
    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]
    capacity: tuple[tuple[str, int], ...]
    allocatable: tuple[tuple[str, int], ...]
    source: Source
    provider_id: str | None = None
    node_name: str | None = None
    #: ``metadata.deletionTimestamp`` is set, or its ``InstanceTerminating`` condition is
    #: True (Karpenter ``StateNode.Deleted``, pkg/controllers/state/statenode.go).
    deleting: bool = False
    #: ``status.lastPodEventTime`` (UTC), when set.
    last_pod_event_at: datetime | None = None
    #: The ``Initialized`` condition's ``lastTransitionTime`` (UTC) when it is True.
    initialized_at: datetime | None = None
    #: The ``Consolidatable`` condition's status (``True``/``False``), None when absent.
    consolidatable: str | None = None

    @property
    def launched(self) -> bool:
        """It has an instance (``status.providerID``)."""
        return bool(self.provider_id)


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    """A ``v1`` PersistentVolumeClaim."""

    namespace: str
    name: str
    source: Source
    storage_class: str | None = None
    volume_name: str | None = None
    #: ``metadata.deletionTimestamp`` is set (a pod may not start using it).
    deleting: bool = False


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    """A ``v1`` PersistentVolume; ``node_affinity`` holds its required OR-ed terms."""

    name: str
    source: Source
    storage_class: str | None = None
    node_affinity: tuple[Requirements, ...] = ()
    #: ``metadata.deletionTimestamp`` is set.
    deleting: bool = False


@dataclass(frozen=True, slots=True)
class StorageClass:
    """A ``storage.k8s.io/v1`` StorageClass; ``allowed_topologies`` are OR-ed terms."""

    name: str
    source: Source
    provisioner: str = ""
    volume_binding_mode: str = "Immediate"
    allowed_topologies: tuple[Requirements, ...] = ()
