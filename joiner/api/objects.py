"""Domain views of the Kubernetes and Karpenter objects Joiner reasons about.

Loading (``joiner.api.manifests``) turns YAML into these; the scheduler, the controllers and
the simulation read only these. Scheduling-relevant pod facts live in the frozen
``PodTemplate`` so that identical replicas share one value (and one cache entry).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from joiner.api import labels
from joiner.api.durations import format_seconds
from joiner.api.quantity import Resources
from joiner.api.requirements import Requirements

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)


@dataclass(frozen=True, slots=True)
class Source:
    """Where an object came from, for messages: ``file`` and ``Kind/name``."""

    file: str
    kind: str
    name: str
    api_version: str = ""

    @property
    def ref(self) -> str:
        """``Kind/name`` as people write it."""
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint (``key=value:effect``)."""

    key: str
    effect: str
    value: str = ""

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration; ``operator`` is ``Equal`` (default) or ``Exists``."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes matching: an empty effect matches all; empty key + Exists matches all."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def tolerates_all(tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...]) -> Taint | None:
    """The first NoSchedule/NoExecute taint not tolerated, or None when all are tolerated.

    PreferNoSchedule taints never block scheduling.
    """
    for taint in taints:
        if taint.effect == PREFER_NO_SCHEDULE:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """``spec.topologySpreadConstraints[]`` (``matchLabelKeys`` already folded into
    ``selector`` using the pod's own labels, as kube-apiserver does)."""

    key: str
    max_skew: int
    selector: Requirements
    when_unsatisfiable: str = DO_NOT_SCHEDULE
    min_domains: int | None = None
    #: ``Honor``: only domains of nodes the pod's node affinity/selector allows count.
    node_affinity_policy: str = "Honor"
    #: ``Ignore``: tainted nodes' domains count too.
    node_taints_policy: str = "Ignore"


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A pod (anti-)affinity term: pods matching ``selector`` in ``namespaces`` (None: the
    pod's own namespace; empty tuple: all namespaces) share/avoid a ``key`` domain."""

    key: str
    selector: Requirements
    namespaces: tuple[str, ...] | None = None

    def covers(self, own_namespace: str, namespace: str) -> bool:
        """True when a pod in ``namespace`` is in this term's scope."""
        if self.namespaces is None:
            return namespace == own_namespace
        return not self.namespaces or namespace in self.namespaces


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port bound on the node (``hostPort``)."""

    port: int
    protocol: str = "TCP"
    ip: str = "0.0.0.0"

    def conflicts(self, other: HostPort) -> bool:
        """Same port and protocol on overlapping addresses (0.0.0.0 overlaps every address)."""
        if self.port != other.port or self.protocol != other.protocol:
            return False
        return self.ip == other.ip or "0.0.0.0" in (self.ip, other.ip)


@dataclass(frozen=True, slots=True, eq=True)
class PodTemplate:
    """The scheduling-relevant part of a pod spec, shared by all replicas.

    Attributes:
        requests: effective requests (max of init containers and the sum of containers, plus
            overhead), cpu in millicores, memory in bytes, always including ``pods: 1``.
        node_selector: ``spec.nodeSelector`` as requirements.
        required_affinity: the OR-ed terms of required node affinity (each ANDed).
        tolerations: ``spec.tolerations``.
        labels: pod labels.
        namespace: the pod's namespace (affinity and spread count pods per namespace).
        preferred_affinity: preferred node-affinity terms as (weight, requirements).
        spread: topology spread constraints.
        pod_affinity / pod_anti_affinity: required terms.
        preferred_pod_affinity / preferred_pod_anti_affinity: (weight, term).
        host_ports: host ports its containers bind.
        volume_claims: names of the PersistentVolumeClaims it mounts.
    """

    requests: Resources
    node_selector: Requirements = field(default_factory=Requirements)
    required_affinity: tuple[Requirements, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    namespace: str = "default"
    preferred_affinity: tuple[tuple[int, Requirements], ...] = ()
    spread: tuple[TopologySpreadConstraint, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    preferred_pod_anti_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    volume_claims: tuple[str, ...] = ()
    #: priorityClassName system-cluster-critical or system-node-critical: drained last.
    critical: bool = False
    #: Pinned to a node by name (``matchFields``, as DaemonSet pods are): never provisioned for.
    pinned: bool = False
    #: ``spec.runtimeClassName`` whose RuntimeClass is still to be applied (overhead,
    #: scheduling); None once applied, or when ``spec.overhead`` shows admission already ran.
    runtime_class: str | None = None
    #: Volumes Cluster Autoscaler counts as local storage (emptyDir not in memory, hostPath)
    #: and not listed in ``cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes``.
    local_volumes: tuple[str, ...] = ()
    #: ``cluster-autoscaler.kubernetes.io/safe-to-evict``: True, False, or None when absent.
    ca_safe_to_evict: bool | None = None
    #: Seconds from eviction until the pod is gone: its preStop hooks within
    #: ``terminationGracePeriodSeconds`` (``api.manifests.termination``).
    shutdown_s: float = 0.0

    def __hash__(self) -> int:
        return hash(
            (
                tuple(sorted(self.requests.items())),
                self.node_selector,
                self.required_affinity,
                self.tolerations,
                self.labels,
                self.namespace,
                self.spread,
                self.pod_affinity,
                self.pod_anti_affinity,
            )
        )

    def requirement_terms(self) -> tuple[Requirements, ...]:
        """The alternatives a node must satisfy one of: nodeSelector AND each affinity term."""
        if not self.required_affinity:
            return (self.node_selector,)
        return tuple(self.node_selector.merge(term) for term in self.required_affinity)

    @property
    def has_preferences(self) -> bool:
        """True when relaxation may apply (preferred terms or ScheduleAnyway spread)."""
        return bool(
            self.preferred_affinity
            or self.preferred_pod_affinity
            or self.preferred_pod_anti_affinity
            or any(c.when_unsatisfiable == SCHEDULE_ANYWAY for c in self.spread)
        )


@dataclass(frozen=True, slots=True)
class NodeClassRef:
    """NodePool ``nodeClassRef``."""

    group: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    """EC2NodeClass ``kubelet`` settings that change allocatable (None means the default)."""

    max_pods: int | None = None
    pods_per_core: int | None = None
    system_reserved: tuple[tuple[str, int], ...] = ()
    kube_reserved: tuple[tuple[str, int], ...] = ()
    #: ``evictionHard`` as (signal, absolute amount or None, percentage or None).
    eviction_hard: tuple[tuple[str, int | None, float | None], ...] = ()


#: Disruption reasons a budget may name (``karpenter.sh/v1`` NodePool budgets ``reasons``).
DISRUPTION_REASONS = ("Empty", "Drifted", "Underutilized")


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """One NodePool ``spec.disruption.budgets`` entry.

    Attributes:
        nodes: a node count, or a percentage string such as ``"10%"`` of the pool's nodes
            (rounded up, as Karpenter does).
        schedule: a cron expression (UTC, five fields or a ``@daily``-style macro) when the
            budget starts being active; None: always active.
        duration_s: how long the budget stays active after each ``schedule`` time, seconds.
        reasons: the disruption reasons it limits (``Empty``, ``Drifted``,
            ``Underutilized``); empty: every reason.
    """

    nodes: int | str = "10%"
    schedule: str | None = None
    duration_s: float | None = None
    reasons: tuple[str, ...] = ()

    def allowed(self, total_nodes: int) -> int:
        """Nodes this budget allows disrupting out of ``total_nodes`` (percentages round up)."""
        if isinstance(self.nodes, int):
            return self.nodes
        return math.ceil(int(self.nodes.rstrip("%")) * total_nodes / 100)

    def describe(self) -> str:
        """Human form for messages: ``nodes=0 schedule="0 9 * * 1-5" duration=8h``."""
        out = f"nodes={self.nodes}"
        if self.schedule is not None:
            out += f' schedule="{self.schedule}" duration={format_seconds(self.duration_s or 0)}'
        if self.reasons:
            out += f" reasons={','.join(self.reasons)}"
        return out


#: Karpenter's default when a NodePool lists no budgets.
DEFAULT_BUDGETS = (DisruptionBudget("10%"),)


@dataclass(frozen=True, slots=True)
class NodePool:
    """A ``karpenter.sh/v1`` NodePool (legacy Provisioners are converted into this).

    ``requirements`` already includes the template labels as ``In`` requirements and, for a
    converted Provisioner, the legacy webhook defaults. ``limits`` is a resource list
    (``nodes`` counts nodes). ``weight`` 0 means unset.
    """

    name: str
    requirements: Requirements
    node_class_ref: NodeClassRef
    source: Source
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    limits: tuple[tuple[str, int], ...] = ()
    weight: int = 0
    expire_after_s: float | None = 720 * 3600.0
    consolidation_policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after_s: float | None = 0.0
    #: Requirements that were added by legacy defaulting (for the dead-configuration warning).
    defaulted: tuple[str, ...] = ()
    #: Kubelet settings given on the pool (v1beta1 template, v1alpha5 kubeletConfiguration);
    #: v1 moved them to the EC2NodeClass, and loading merges them there.
    kubelet: KubeletConfig | None = None
    #: ``terminationGracePeriod``: how long a drain may wait for PDBs and do-not-disrupt pods
    #: before it evicts regardless (None: wait until the node goes).
    termination_grace_period_s: float | None = None
    #: Joiner's ``joiner.dev/on-demand-base`` annotation: a count (``"2"``) or a percentage
    #: (``"20%"``) of the pool's nodes kept on-demand; None when absent.
    on_demand_base: int | str | None = None
    #: ``spec.disruption.budgets`` (Karpenter's default ``nodes: 10%`` when none are given).
    budgets: tuple[DisruptionBudget, ...] = DEFAULT_BUDGETS

    def drift_fields(self) -> dict[str, object]:
        """The template fields Karpenter hashes for drift (``NodePool.Hash``): a NodeClaim
        launched from different values has drifted. Karpenter's own hash annotation cannot
        be reproduced outside Go, so Joiner compares these values directly."""
        return {
            "labels": self.labels,
            "annotations": self.annotations,
            "taints": self.taints,
            "startupTaints": self.startup_taints,
            "nodeClassRef": self.node_class_ref,
            "expireAfter": self.expire_after_s,
            "terminationGracePeriod": self.termination_grace_period_s,
        }

    def on_demand_nodes_wanted(self, total_nodes: int) -> int:
        """How many of ``total_nodes`` must be on-demand (a percentage rounds up)."""
        base = self.on_demand_base
        if base is None:
            return 0
        if isinstance(base, int):
            return min(base, total_nodes)
        return math.ceil(int(base.rstrip("%")) * total_nodes / 100)

    def limit(self, resource: str) -> int | None:
        """The limit on ``resource``, or None when unlimited."""
        for k, v in self.limits:
            if k == resource:
                return v
        return None

    def node_labels(self) -> dict[str, str]:
        """Labels every node of this pool carries: template labels and ``karpenter.sh/nodepool``."""
        out = dict(self.labels)
        out[labels.NODEPOOL] = self.name
        if self.source.kind == "Provisioner":
            out[labels.LEGACY_PROVISIONER_NAME] = self.name
        return out

    def own_label_conflict(self) -> str | None:
        """A requirement that excludes a label every node of this pool carries (such as
        ``karpenter.sh/nodepool NotIn [<this pool>]``), described; None when there is none.

        Karpenter's NodeClaim template requirements are the pool's requirements with its
        labels added as ``In`` (``NewNodeClaimTemplate``); an exclusion leaves that key with no
        value, so no NodeClaim of the pool can satisfy it and the pool launches nothing.
        """
        for key, value in sorted(self.node_labels().items()):
            r = self.requirements.get(key)
            # The labels were intersected in as In [value] at load: nothing left is a conflict.
            if r is not None and not r.complement and not r.values:
                return (
                    f"its requirement on {key} excludes {value!r}, the label every node of "
                    "this NodePool carries"
                )
        return None


@dataclass(frozen=True, slots=True)
class SelectorTerm:
    """One EC2NodeClass selector term: by ``id``, by ``name``, or by ``tags`` (all must match)."""

    id: str | None = None
    name: str | None = None
    tags: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """Human form for messages."""
        if self.id:
            return f"id={self.id}"
        if self.name:
            return f"name={self.name}"
        return "tags={" + ", ".join(f"{k}: {v}" for k, v in self.tags) + "}"


@dataclass(frozen=True, slots=True)
class AMISelectorTerm:
    """One EC2NodeClass ``amiSelectorTerms`` entry: ``alias`` (``family@version``, alone),
    ``id``, ``name`` (with optional ``owner``), ``tags`` (all must match) or ``ssm_parameter``
    (a parameter whose value is an AMI id)."""

    alias: str | None = None
    id: str | None = None
    name: str | None = None
    owner: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    ssm_parameter: str | None = None


@dataclass(frozen=True, slots=True)
class BlockDevice:
    """One EC2NodeClass ``blockDeviceMappings`` entry; sizes in bytes, throughput in MiB/s.

    None means EC2's (or the AMI's) default for that field.
    """

    device_name: str
    root_volume: bool = False
    volume_size_bytes: int | None = None
    volume_type: str | None = None
    iops: int | None = None
    throughput_mib_s: int | None = None
    encrypted: bool | None = None
    delete_on_termination: bool | None = None
    kms_key_id: str | None = None
    snapshot_id: str | None = None


@dataclass(frozen=True, slots=True)
class MetadataOptions:
    """EC2NodeClass ``metadataOptions``; the defaults are Karpenter v1's (hop limit 1, IMDSv2
    required)."""

    http_endpoint: str = "enabled"
    http_protocol_ipv6: str = "disabled"
    http_put_response_hop_limit: int = 1
    http_tokens: str = "required"


@dataclass(frozen=True, slots=True)
class NodeClass:
    """A ``karpenter.k8s.aws/v1`` EC2NodeClass (legacy AWSNodeTemplates are converted into this)."""

    name: str
    source: Source
    subnet_selector_terms: tuple[SelectorTerm, ...]
    security_group_selector_terms: tuple[SelectorTerm, ...]
    ami_family: str = "AL2023"
    role: str | None = None
    instance_profile: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    kubelet: KubeletConfig = KubeletConfig()
    #: Size of the root (ephemeral) volume in bytes; None means Karpenter's 20 GiB default.
    root_volume_bytes: int | None = None
    user_data: str | None = None
    annotations: tuple[tuple[str, str], ...] = ()
    #: How the AMI is chosen; empty means the AMI family's latest (``<family>@latest``).
    ami_selector_terms: tuple[AMISelectorTerm, ...] = ()
    #: Volumes as written; empty means the AMI family's defaults (20 GiB gp3 root).
    block_device_mappings: tuple[BlockDevice, ...] = ()
    metadata_options: MetadataOptions = MetadataOptions()
    detailed_monitoring: bool = False
    associate_public_ip_address: bool | None = None
    #: ``status.subnets`` as (id, zone) pairs: what Karpenter resolved the subnet selector
    #: terms to in the real VPC (a dump or a live cluster has it); empty when not resolved.
    status_subnets: tuple[tuple[str, str], ...] = ()
    #: ``status.securityGroups`` as (id, name) pairs, like ``status_subnets``.
    status_security_groups: tuple[tuple[str, str], ...] = ()


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

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

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
    or a percentage string such as ``"50%"``."""

    namespace: str
    name: str
    selector: Requirements
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
    #: Being deleted (``metadata.deletionTimestamp`` or the ``karpenter.sh/disrupted`` taint):
    #: not a target, and its pods are demand for new capacity.
    deleting: bool = False

    @property
    def nodepool(self) -> str | None:
        """The managing NodePool (or legacy Provisioner), or None for unmanaged nodes."""
        d = dict(self.labels)
        return d.get(labels.NODEPOOL) or d.get(labels.LEGACY_PROVISIONER_NAME)


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
    deleting: bool = False

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


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    """A ``v1`` PersistentVolume; ``node_affinity`` holds its required OR-ed terms."""

    name: str
    source: Source
    storage_class: str | None = None
    node_affinity: tuple[Requirements, ...] = ()


@dataclass(frozen=True, slots=True)
class StorageClass:
    """A ``storage.k8s.io/v1`` StorageClass; ``allowed_topologies`` are OR-ed terms."""

    name: str
    source: Source
    provisioner: str = ""
    volume_binding_mode: str = "Immediate"
    allowed_topologies: tuple[Requirements, ...] = ()
