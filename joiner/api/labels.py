"""Well-known labels, annotations and taints (Karpenter ``labels.go``/``taints.go``, AWS provider).

Keys here are the stable names; ``normalize_key`` rewrites the deprecated beta aliases the
way Karpenter does, so a manifest using ``beta.kubernetes.io/arch`` still matches.
"""

from __future__ import annotations

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
HOSTNAME = "kubernetes.io/hostname"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"
LEGACY_PROVISIONER_NAME = "karpenter.sh/provisioner-name"
REGISTERED = "karpenter.sh/registered"
INITIALIZED = "karpenter.sh/initialized"
ZONE_ID = "topology.k8s.aws/zone-id"

AWS_PREFIX = "karpenter.k8s.aws/"
INSTANCE_CATEGORY = AWS_PREFIX + "instance-category"
INSTANCE_FAMILY = AWS_PREFIX + "instance-family"
INSTANCE_GENERATION = AWS_PREFIX + "instance-generation"
INSTANCE_SIZE = AWS_PREFIX + "instance-size"
INSTANCE_CPU = AWS_PREFIX + "instance-cpu"
INSTANCE_CPU_MANUFACTURER = AWS_PREFIX + "instance-cpu-manufacturer"
INSTANCE_MEMORY = AWS_PREFIX + "instance-memory"
INSTANCE_HYPERVISOR = AWS_PREFIX + "instance-hypervisor"
INSTANCE_NETWORK_BANDWIDTH = AWS_PREFIX + "instance-network-bandwidth"
INSTANCE_EBS_BANDWIDTH = AWS_PREFIX + "instance-ebs-bandwidth"
INSTANCE_GPU_NAME = AWS_PREFIX + "instance-gpu-name"
INSTANCE_GPU_COUNT = AWS_PREFIX + "instance-gpu-count"
INSTANCE_GPU_MANUFACTURER = AWS_PREFIX + "instance-gpu-manufacturer"
INSTANCE_GPU_MEMORY = AWS_PREFIX + "instance-gpu-memory"
INSTANCE_LOCAL_NVME = AWS_PREFIX + "instance-local-nvme"
#: The reservation a ``reserved`` node runs in, and its type (``default`` for an on-demand
#: capacity reservation); only reserved nodes and offerings carry them (Karpenter-AWS
#: ``v1.LabelCapacityReservationID``/``LabelCapacityReservationType``).
CAPACITY_RESERVATION_ID = AWS_PREFIX + "capacity-reservation-id"
CAPACITY_RESERVATION_TYPE = AWS_PREFIX + "capacity-reservation-type"

#: Karpenter's kwok test provider's instance-type labels; its binary registers them as
#: well-known (``kwok/apis/v1alpha1/labels.go``), so Joiner does too.
KWOK_PREFIX = "karpenter.kwok.sh/"
KWOK_INSTANCE_SIZE = KWOK_PREFIX + "instance-size"
KWOK_INSTANCE_FAMILY = KWOK_PREFIX + "instance-family"
KWOK_INSTANCE_CPU = KWOK_PREFIX + "instance-cpu"
KWOK_INSTANCE_MEMORY = KWOK_PREFIX + "instance-memory"

CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_ON_DEMAND = "on-demand"
CAPACITY_TYPE_RESERVED = "reserved"
#: Launch precedence (karpenter-provider-aws ``pkg/providers/instance/instance.go``
#: ``getCapacityType``): reserved beats spot beats on-demand.
CAPACITY_TYPE_PRECEDENCE = (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND)

#: Labels every instance type defines; a requirement on one of them may be undefined on the
#: other side of a compatibility check (Karpenter's AllowUndefinedWellKnownLabels).
WELL_KNOWN_LABELS = frozenset(
    {
        ZONE,
        REGION,
        INSTANCE_TYPE,
        ARCH,
        OS,
        WINDOWS_BUILD,
        CAPACITY_TYPE,
        NODEPOOL,
        ZONE_ID,
        INSTANCE_CATEGORY,
        INSTANCE_FAMILY,
        INSTANCE_GENERATION,
        INSTANCE_SIZE,
        INSTANCE_CPU,
        INSTANCE_CPU_MANUFACTURER,
        INSTANCE_MEMORY,
        INSTANCE_HYPERVISOR,
        INSTANCE_NETWORK_BANDWIDTH,
        INSTANCE_EBS_BANDWIDTH,
        INSTANCE_GPU_NAME,
        INSTANCE_GPU_COUNT,
        INSTANCE_GPU_MANUFACTURER,
        INSTANCE_GPU_MEMORY,
        INSTANCE_LOCAL_NVME,
        CAPACITY_RESERVATION_ID,
        CAPACITY_RESERVATION_TYPE,
        KWOK_INSTANCE_SIZE,
        KWOK_INSTANCE_FAMILY,
        KWOK_INSTANCE_CPU,
        KWOK_INSTANCE_MEMORY,
    }
)

#: Label domains Karpenter reserves: a pod that requires a label there (other than one of
#: ``KARPENTER_WELL_KNOWN_LABELS``) is ignored by the provisioner (Karpenter
#: pkg/apis/v1/labels.go ``RestrictedLabelDomains``, with karpenter-provider-aws
#: pkg/apis/v1/labels.go's ``karpenter.k8s.aws``); a subdomain counts too.
RESTRICTED_LABEL_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")
#: Labels Karpenter reserves outside those domains (``RestrictedLabels``).
RESTRICTED_LABELS = frozenset({HOSTNAME})
#: The labels a pod may require in a restricted domain: Karpenter's ``WellKnownLabels``
#: with karpenter-provider-aws's additions (its ``init`` in pkg/apis/v1/labels.go), plus
#: the legacy ``karpenter.sh/provisioner-name``, which Joiner's v1alpha5 Provisioners set.
KARPENTER_WELL_KNOWN_LABELS = WELL_KNOWN_LABELS | frozenset(
    {
        LEGACY_PROVISIONER_NAME,
        *(
            AWS_PREFIX + name
            for name in (
                "capacity-reservation-interruptible",
                "instance-encryption-in-transit-supported",
                "instance-capability-flex",
                "instance-cpu-sustained-clock-speed-mhz",
                "instance-accelerator-name",
                "instance-accelerator-manufacturer",
                "instance-accelerator-count",
                "instance-tenancy",
                "placement-group-id",
                "placement-group-partition",
            )
        ),
    }
)


def restricted_label(key: str) -> bool:
    """Karpenter refuses ``key`` in a pod's node requirements (Karpenter
    pkg/apis/v1/labels.go ``IsRestrictedLabel``): not well known, and in a restricted
    domain (the part before ``/``, or a subdomain of one) or a restricted label."""
    if key in KARPENTER_WELL_KNOWN_LABELS:
        return False
    domain = key.split("/", 1)[0] if "/" in key else ""
    if any(domain == d or domain.endswith("." + d) for d in RESTRICTED_LABEL_DOMAINS):
        return True
    return key in RESTRICTED_LABELS


#: Deprecated aliases rewritten to their stable names (Karpenter NormalizedLabels).
NORMALIZED_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "failure-domain.beta.kubernetes.io/region": REGION,
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
    # Karpenter-AWS reads the EBS CSI driver's zone key as the zone (PV node affinity and
    # StorageClass allowedTopologies of dynamically provisioned EBS volumes use it).
    "topology.ebs.csi.aws.com/zone": ZONE,
}

# Annotations and taints.
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
#: A pod's deletion cost (``k8s.io/api`` core/v1 ``PodDeletionCost``): a 32-bit integer;
#: Karpenter adds it, scaled, to the pod's eviction cost.
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
#: Cluster Autoscaler's node annotation: never scale this node down.
CA_SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
#: Joiner's own NodePool annotation (Karpenter has no such setting): see NodePool.on_demand_base.
ON_DEMAND_BASE = "joiner.dev/on-demand-base"
TAINT_UNREGISTERED = "karpenter.sh/unregistered"
#: Karpenter's finalizer on NodeClaims and Nodes: deleting either drains, terminates the
#: instance, and only then lets the object go.
TERMINATION_FINALIZER = "karpenter.sh/termination"
TAINT_DISRUPTED = "karpenter.sh/disrupted"
#: What `kubectl cordon` (spec.unschedulable) means to kube-scheduler.
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
#: The node lifecycle controller's taints for a Node whose ``Ready`` condition is False
#: (``not-ready``) or Unknown (``unreachable``: the kubelet stopped posting status).
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
#: The ``NoSchedule`` taint key the node lifecycle controller keeps on a Node for each
#: (condition type, status) (Kubernetes pkg/controller/nodelifecycle/
#: node_lifecycle_controller.go ``nodeConditionToTaintKeyStatusMap``, applied by
#: ``doNoScheduleTaintingPass``; ``spec.unschedulable`` adds ``TAINT_UNSCHEDULABLE``).
CONDITION_TAINTS = {
    ("Ready", "False"): TAINT_NOT_READY,
    ("Ready", "Unknown"): TAINT_UNREACHABLE,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
}
#: Taints a node carries while it starts (Karpenter ``scheduling.KnownEphemeralTaints``,
#: pkg/scheduling/taints.go): (key, effect) pairs; and the key prefix of the Node
#: Readiness Controller's (``KnownEphemeralTaintKeyPrefixes``).
KNOWN_EPHEMERAL_TAINTS = frozenset(
    {
        (TAINT_NOT_READY, "NoSchedule"),
        (TAINT_NOT_READY, "NoExecute"),
        (TAINT_UNREACHABLE, "NoSchedule"),
        ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
        (TAINT_UNREGISTERED, "NoExecute"),
    }
)
EPHEMERAL_TAINT_KEY_PREFIXES = ("readiness.k8s.io/",)


def known_ephemeral_taint(key: str, effect: str) -> bool:
    """Whether a taint is one a node carries while it starts (``KNOWN_EPHEMERAL_TAINTS``
    or a key under ``EPHEMERAL_TAINT_KEY_PREFIXES``; Karpenter
    ``scheduling.IsKnownEphemeralTaint``, pkg/scheduling/taints.go)."""
    return (key, effect) in KNOWN_EPHEMERAL_TAINTS or key.startswith(EPHEMERAL_TAINT_KEY_PREFIXES)


def normalize_key(key: str) -> str:
    """Rewrite a deprecated label key to its stable name; other keys are returned as is."""
    return NORMALIZED_LABELS.get(key, key)
