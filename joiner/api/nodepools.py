"""NodePool-side domain objects: NodePools (disruption budgets, node class references) and
node classes (EC2NodeClass, its selector terms, block devices, metadata options, kubelet).

Re-exported by ``joiner.api.objects``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from joiner.api import labels
from joiner.api.durations import format_seconds
from joiner.api.pods import Source, Taint
from joiner.api.requirements import Requirements


def percent_rounded_up(percent: int, total: int) -> int:
    """``percent`` % of ``total``, rounded up: apimachinery's
    ``intstr.GetScaledValueFromIntOrPercent`` with ``roundUp`` as Karpenter calls it for
    disruption budgets, the on-demand base and node repair's unhealthy threshold."""
    return math.ceil(percent * total / 100)


@dataclass(frozen=True, slots=True)
class NodeClassRef:
    """NodePool ``nodeClassRef``."""

    group: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    """EC2NodeClass ``kubelet`` settings (None or empty means the kubelet's default).

    The first five change allocatable (parsed: millicores, bytes); the rest only reach the
    node's kubelet through the bootstrap user data (``cloudprovider/aws/bootstrap.py``).
    ``*_text`` fields keep the values as written, which is what Karpenter renders.
    """

    max_pods: int | None = None
    pods_per_core: int | None = None
    system_reserved: tuple[tuple[str, int], ...] = ()
    kube_reserved: tuple[tuple[str, int], ...] = ()
    #: ``evictionHard`` as (signal, absolute amount or None, percentage or None).
    eviction_hard: tuple[tuple[str, int | None, float | None], ...] = ()
    #: ``systemReserved``, ``kubeReserved`` and ``evictionHard`` as written, sorted by key.
    system_reserved_text: tuple[tuple[str, str], ...] = ()
    kube_reserved_text: tuple[tuple[str, str], ...] = ()
    eviction_hard_text: tuple[tuple[str, str], ...] = ()
    #: ``evictionSoft`` (signal, threshold as written) and ``evictionSoftGracePeriod``
    #: (signal, seconds), sorted by signal.
    eviction_soft: tuple[tuple[str, str], ...] = ()
    eviction_soft_grace_period_s: tuple[tuple[str, float], ...] = ()
    eviction_max_pod_grace_period_s: int | None = None
    image_gc_high_threshold_percent: int | None = None
    image_gc_low_threshold_percent: int | None = None
    cpu_cfs_quota: bool | None = None
    #: ``clusterDNS``: the cluster DNS server addresses, in order.
    cluster_dns: tuple[str, ...] = ()


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
        return percent_rounded_up(int(self.nodes.rstrip("%")), total_nodes)

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
    #: ``spec.replicas``: a static NodePool's node count (Karpenter's alpha
    #: ``StaticCapacity``; ``scheduling.static``); None for a dynamic pool.
    replicas: int | None = None

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
        return percent_rounded_up(int(base.rstrip("%")), total_nodes)

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
class CapacityReservationSelectorTerm:
    """One EC2NodeClass ``capacityReservationSelectorTerms`` entry: ``id`` alone, or
    ``tags`` (all must match; ``*`` any value) with an optional ``owner_id`` (the owning
    account) and ``instance_match_criteria`` (``open`` or ``targeted``)."""

    id: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    owner_id: str | None = None
    instance_match_criteria: str | None = None


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
    #: ``instanceStorePolicy``: ``RAID0`` (the instance store becomes ephemeral storage) or
    #: None.
    instance_store_policy: str | None = None
    detailed_monitoring: bool = False
    associate_public_ip_address: bool | None = None
    #: ``status.subnets`` as (id, zone) pairs: what Karpenter resolved the subnet selector
    #: terms to in the real VPC (a dump or a live cluster has it); empty when not resolved.
    status_subnets: tuple[tuple[str, str], ...] = ()
    #: ``status.securityGroups`` as (id, name) pairs, like ``status_subnets``.
    status_security_groups: tuple[tuple[str, str], ...] = ()
    #: ``status.capacityReservations`` ids (a dump's): read, not launched into (no free count).
    status_capacity_reservations: tuple[str, ...] = ()
    #: ``capacityReservationSelectorTerms``: the on-demand capacity reservations its nodes
    #: launch into first (capacity type ``reserved``); empty selects none.
    capacity_reservation_selector_terms: tuple[CapacityReservationSelectorTerm, ...] = ()
