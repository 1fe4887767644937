"""Pydantic models of the manifest fields Joiner reads (shape checks at the edge only).

Unknown fields are ignored (``kubectl get -o yaml`` output carries status, managedFields...).
Numbers given where strings are expected (label values ``"5"`` written as ``5``) are coerced.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

_CONFIG = ConfigDict(extra="ignore", coerce_numbers_to_str=True, populate_by_name=True)

Scalar = StrictStr | StrictInt | StrictFloat

#: Kubernetes caps replica counts at int32; Joiner simulates at most this many pods per workload.
MAX_REPLICAS = 100_000


class Model(BaseModel):
    """Base: ignore unknown fields, coerce numbers to strings where strings are expected."""

    model_config = _CONFIG


class Strict(Model):
    """Spec models: an unknown field is an error (like ``kubectl apply --validate=strict``),
    so a typo such as ``requirments`` cannot silently change what is launched. Real
    Kubernetes/Karpenter fields Joiner does not use are declared as ``Any``."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, populate_by_name=True)


class OwnerReference(Model):
    kind: str = ""
    name: str = ""
    controller: bool | None = None


class Metadata(Model):
    name: str = Field(min_length=1)
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    ownerReferences: list[OwnerReference] = Field(default_factory=list)
    deletionTimestamp: str | None = None


class TemplateMetadata(Model):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class NodeSelectorRequirement(Strict):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
    values: list[str] = Field(default_factory=list)
    minValues: int | None = Field(default=None, ge=1, le=50)


class Taint(Strict):
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    timeAdded: Any = None


class Toleration(Strict):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    tolerationSeconds: int | None = None


# --- karpenter.sh/v1 NodePool -------------------------------------------------------------


class NodeClassRef(Strict):
    group: str = Field(min_length=1)
    kind: str = Field(min_length=1)
    name: str = Field(min_length=1)


class NodeClaimTemplateSpec(Strict):
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list, max_length=100)
    taints: list[Taint] = Field(default_factory=list)
    startupTaints: list[Taint] = Field(default_factory=list)
    nodeClassRef: NodeClassRef
    expireAfter: Scalar | None = None
    terminationGracePeriod: str | None = None


class NodeClaimTemplate(Strict):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)
    spec: NodeClaimTemplateSpec


class Budget(Strict):
    nodes: StrictInt | StrictStr = "10%"
    schedule: str | None = None
    duration: str | None = None
    reasons: list[str] = Field(default_factory=list)


class Disruption(Strict):
    consolidationPolicy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = (
        "WhenEmptyOrUnderutilized"
    )
    consolidateAfter: Scalar | None = None
    budgets: list[Budget] = Field(default_factory=list)


class NodePoolSpec(Strict):
    template: NodeClaimTemplate
    disruption: Disruption = Field(default_factory=Disruption)
    limits: dict[str, Scalar] = Field(default_factory=dict)
    weight: int | None = Field(default=None, ge=1, le=100)
    replicas: Any = None


class NodePool(Model):
    apiVersion: str
    kind: Literal["NodePool"]
    metadata: Metadata
    spec: NodePoolSpec


# --- karpenter.sh/v1 NodeClaim (written by Joiner in controller mode; the CRD's schema) ------


class NodeClaimResources(Strict):
    requests: dict[str, Scalar] = Field(default_factory=dict)


class NodeClaimSpec(Strict):
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list, max_length=100)
    resources: NodeClaimResources = Field(default_factory=NodeClaimResources)
    taints: list[Taint] = Field(default_factory=list)
    startupTaints: list[Taint] = Field(default_factory=list)
    nodeClassRef: NodeClassRef
    expireAfter: Scalar | None = None
    terminationGracePeriod: str | None = None


class Condition(Model):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    lastTransitionTime: str | None = None


class NodeClaimStatus(Model):
    providerID: str | None = None
    nodeName: str | None = None
    imageID: str | None = None
    capacity: dict[str, Scalar] = Field(default_factory=dict)
    allocatable: dict[str, Scalar] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)
    lastPodEventTime: str | None = None


class NodeClaim(Model):
    apiVersion: str
    kind: Literal["NodeClaim"]
    metadata: Metadata
    spec: NodeClaimSpec
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)


class Kubelet(Strict):
    maxPods: int | None = Field(default=None, ge=1)
    podsPerCore: int | None = Field(default=None, ge=0)
    systemReserved: dict[str, Scalar] = Field(default_factory=dict)
    kubeReserved: dict[str, Scalar] = Field(default_factory=dict)
    evictionHard: dict[str, str] = Field(default_factory=dict)
    clusterDNS: Any = None
    evictionSoft: Any = None
    evictionSoftGracePeriod: Any = None
    evictionMaxPodGracePeriod: Any = None
    imageGCHighThresholdPercent: Any = None
    imageGCLowThresholdPercent: Any = None
    cpuCFSQuota: Any = None


# --- karpenter.sh/v1beta1 NodePool ---------------------------------------------------------


class V1Beta1NodeClassRef(Strict):
    name: str = Field(min_length=1)
    kind: str | None = None
    apiVersion: str | None = None


class V1Beta1TemplateSpec(Strict):
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list, max_length=100)
    taints: list[Taint] = Field(default_factory=list)
    startupTaints: list[Taint] = Field(default_factory=list)
    nodeClassRef: V1Beta1NodeClassRef
    kubelet: Kubelet | None = None


class V1Beta1Template(Strict):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)
    spec: V1Beta1TemplateSpec


class V1Beta1Disruption(Strict):
    consolidationPolicy: Literal["WhenEmpty", "WhenUnderutilized"] = "WhenUnderutilized"
    consolidateAfter: Scalar | None = None
    expireAfter: Scalar | None = None
    budgets: list[Budget] = Field(default_factory=list)


class V1Beta1NodePoolSpec(Strict):
    template: V1Beta1Template
    disruption: V1Beta1Disruption = Field(default_factory=V1Beta1Disruption)
    limits: dict[str, Scalar] = Field(default_factory=dict)
    weight: int | None = Field(default=None, ge=1, le=100)


class V1Beta1NodePool(Model):
    apiVersion: str
    kind: Literal["NodePool"]
    metadata: Metadata
    spec: V1Beta1NodePoolSpec


# --- karpenter.sh/v1alpha5 Provisioner ------------------------------------------------------


class ProviderRef(Strict):
    name: str = Field(min_length=1)
    kind: str | None = None
    apiVersion: str | None = None


class Consolidation(Strict):
    enabled: bool = False


class ProvisionerLimits(Strict):
    resources: dict[str, Scalar] = Field(default_factory=dict)


class ProvisionerKubelet(Kubelet):
    """v1alpha5 ``kubeletConfiguration``: the v1 kubelet fields plus ``containerRuntime``
    (removed in v1; convert drops it)."""

    containerRuntime: Any = None


class EBS(Strict):
    volumeSize: Scalar | None = None
    volumeType: str | None = None
    iops: int | None = None
    throughput: int | None = None
    encrypted: bool | None = None
    deleteOnTermination: bool | None = None
    kmsKeyID: Any = None
    snapshotID: Any = None
    volumeInitializationRate: Any = None


class BlockDeviceMapping(Strict):
    deviceName: str | None = None
    rootVolume: bool = False
    ebs: EBS | None = None


class AWSNodeTemplateSpec(Strict):
    subnetSelector: dict[str, str] = Field(default_factory=dict)
    securityGroupSelector: dict[str, str] = Field(default_factory=dict)
    amiSelector: dict[str, str] = Field(default_factory=dict)
    amiFamily: str | None = None
    instanceProfile: str | None = None
    launchTemplate: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    blockDeviceMappings: list[BlockDeviceMapping] = Field(default_factory=list)
    userData: str | None = None
    metadataOptions: Any = None
    context: Any = None
    detailedMonitoring: Any = None


class InlineProvider(AWSNodeTemplateSpec):
    """The v1alpha5 ``spec.provider`` block (AWS): an inline AWSNodeTemplate, which may also
    carry the ``apiVersion``/``kind`` of the old provider object."""

    apiVersion: Any = None
    kind: Any = None


class ProvisionerSpec(Strict):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    startupTaints: list[Taint] = Field(default_factory=list)
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list)
    limits: ProvisionerLimits = Field(default_factory=ProvisionerLimits)
    providerRef: ProviderRef | None = None
    provider: InlineProvider | None = None
    consolidation: Consolidation | None = None
    ttlSecondsAfterEmpty: int | None = Field(default=None, ge=0)
    ttlSecondsUntilExpired: int | None = Field(default=None, ge=0)
    weight: int | None = Field(default=None, ge=1, le=100)
    kubeletConfiguration: ProvisionerKubelet | None = None


class Provisioner(Model):
    apiVersion: str
    kind: Literal["Provisioner"]
    metadata: Metadata
    spec: ProvisionerSpec


# --- karpenter.k8s.aws/v1 EC2NodeClass ------------------------------------------------------


class SelectorTerm(Strict):
    id: str | None = None
    name: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)


class AMISelectorTerm(Strict):
    alias: str | None = None
    id: str | None = None
    name: str | None = None
    owner: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    ssmParameter: str | None = None


class EC2NodeClassSpec(Strict):
    subnetSelectorTerms: list[SelectorTerm] = Field(min_length=1, max_length=30)
    securityGroupSelectorTerms: list[SelectorTerm] = Field(min_length=1, max_length=30)
    amiSelectorTerms: list[AMISelectorTerm] = Field(min_length=1, max_length=30)
    amiFamily: str | None = None
    role: str | None = None
    instanceProfile: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    kubelet: Kubelet | None = None
    blockDeviceMappings: list[BlockDeviceMapping] = Field(default_factory=list, max_length=50)
    userData: str | None = None
    instanceStorePolicy: Any = None
    detailedMonitoring: Any = None
    metadataOptions: Any = None
    context: Any = None
    associatePublicIPAddress: Any = None
    ipPrefixCount: Any = None
    networkInterfaces: Any = None
    connectionTracking: Any = None
    cpuOptions: Any = None
    capacityReservationSelectorTerms: Any = None
    placementGroupSelector: Any = None


class StatusSubnet(Model):
    id: str = Field(min_length=1)
    zone: str = Field(min_length=1)
    zoneID: str | None = None


class StatusSecurityGroup(Model):
    id: str = Field(min_length=1)
    name: str = ""


class EC2NodeClassStatus(Model):
    """What Karpenter resolved the selector terms to (a dump or a live cluster has it)."""

    subnets: list[StatusSubnet] = Field(default_factory=list)
    securityGroups: list[StatusSecurityGroup] = Field(default_factory=list)


class EC2NodeClass(Model):
    apiVersion: str
    kind: Literal["EC2NodeClass"]
    metadata: Metadata
    spec: EC2NodeClassSpec
    #: Read as ``EC2NodeClassStatus`` by the converter; ``Any`` here keeps the CRD's status
    #: schema open (Karpenter writes more than Joiner reads).
    status: dict[str, Any] = Field(default_factory=dict)


class KWOKNodeClassSpec(Strict):
    """``karpenter.kwok.sh/v1alpha1`` KWOKNodeClass spec (Karpenter's kwok test provider)."""

    nodeRegistrationDelay: Any = None


class KWOKNodeClass(Model):
    apiVersion: str
    kind: Literal["KWOKNodeClass"]
    metadata: Metadata
    spec: KWOKNodeClassSpec = Field(default_factory=KWOKNodeClassSpec)


class V1Beta1EC2NodeClassSpec(Strict):
    subnetSelectorTerms: list[SelectorTerm] = Field(min_length=1, max_length=30)
    securityGroupSelectorTerms: list[SelectorTerm] = Field(min_length=1, max_length=30)
    amiSelectorTerms: list[AMISelectorTerm] = Field(default_factory=list, max_length=30)
    amiFamily: str
    role: str | None = None
    instanceProfile: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    blockDeviceMappings: list[BlockDeviceMapping] = Field(default_factory=list, max_length=50)
    userData: str | None = None
    instanceStorePolicy: Any = None
    detailedMonitoring: Any = None
    metadataOptions: Any = None
    context: Any = None
    associatePublicIPAddress: Any = None
    kubelet: Any = None


class V1Beta1EC2NodeClass(Model):
    apiVersion: str
    kind: Literal["EC2NodeClass"]
    metadata: Metadata
    spec: V1Beta1EC2NodeClassSpec
    status: dict[str, Any] = Field(default_factory=dict)


# --- karpenter.k8s.aws/v1alpha1 AWSNodeTemplate ---------------------------------------------


class AWSNodeTemplate(Model):
    apiVersion: str
    kind: Literal["AWSNodeTemplate"]
    metadata: Metadata
    spec: AWSNodeTemplateSpec


# --- core Kubernetes ------------------------------------------------------------------------


class LabelSelectorRequirement(Strict):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelector(Strict):
    matchLabels: dict[str, str] = Field(default_factory=dict)
    matchExpressions: list[LabelSelectorRequirement] = Field(default_factory=list)


class ResourceRequirements(Strict):
    requests: dict[str, Scalar] = Field(default_factory=dict)
    limits: dict[str, Scalar] = Field(default_factory=dict)
    claims: Any = None


class ContainerPort(Strict):
    containerPort: int = Field(ge=1, le=65535)
    hostPort: int | None = Field(default=None, ge=1, le=65535)
    hostIP: str | None = None
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"
    name: str | None = None


class Container(Strict):
    name: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    restartPolicy: str | None = None
    ports: list[ContainerPort] = Field(default_factory=list)
    args: Any = None
    command: Any = None
    env: Any = None
    envFrom: Any = None
    image: Any = None
    imagePullPolicy: Any = None
    lifecycle: Any = None
    livenessProbe: Any = None
    readinessProbe: Any = None
    resizePolicy: Any = None
    securityContext: Any = None
    startupProbe: Any = None
    stdin: Any = None
    stdinOnce: Any = None
    terminationMessagePath: Any = None
    terminationMessagePolicy: Any = None
    tty: Any = None
    volumeDevices: Any = None
    volumeMounts: Any = None
    workingDir: Any = None
    restartPolicyRules: Any = None


class NodeSelectorTerm(Strict):
    matchExpressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    matchFields: list[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(Strict):
    nodeSelectorTerms: list[NodeSelectorTerm] = Field(min_length=1)


class PreferredSchedulingTerm(Strict):
    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(Strict):
    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class PodAffinityTermModel(Strict):
    topologyKey: str = Field(min_length=1)
    labelSelector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    namespaceSelector: LabelSelector | None = None
    matchLabelKeys: list[str] = Field(default_factory=list)
    mismatchLabelKeys: list[str] = Field(default_factory=list)


class WeightedPodAffinityTerm(Strict):
    weight: int = Field(ge=1, le=100)
    podAffinityTerm: PodAffinityTermModel


class PodAffinity(Strict):
    requiredDuringSchedulingIgnoredDuringExecution: list[PodAffinityTermModel] = Field(
        default_factory=list
    )
    preferredDuringSchedulingIgnoredDuringExecution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class Affinity(Strict):
    nodeAffinity: NodeAffinity | None = None
    podAffinity: PodAffinity | None = None
    podAntiAffinity: PodAffinity | None = None


class TopologySpreadConstraintModel(Strict):
    maxSkew: int = Field(ge=1)
    topologyKey: str = Field(min_length=1)
    whenUnsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    labelSelector: LabelSelector | None = None
    minDomains: int | None = Field(default=None, ge=1)
    nodeAffinityPolicy: Literal["Honor", "Ignore"] = "Honor"
    nodeTaintsPolicy: Literal["Honor", "Ignore"] = "Ignore"
    matchLabelKeys: list[str] = Field(default_factory=list)


class PVCVolumeSource(Strict):
    claimName: str = Field(min_length=1)
    readOnly: bool = False


class EmptyDirVolumeSource(Model):
    medium: str = ""


class Volume(Model):
    """A pod volume: ``persistentVolumeClaim`` matters to scheduling; ``emptyDir`` (not in
    memory) and ``hostPath`` are local storage to Cluster Autoscaler's scale-down."""

    name: str = Field(min_length=1)
    persistentVolumeClaim: PVCVolumeSource | None = None
    emptyDir: EmptyDirVolumeSource | None = None
    hostPath: Any = None


class SchedulingGate(Model):
    name: str = Field(min_length=1)


class PodSpec(Strict):
    nodeName: str | None = None
    containers: list[Container] = Field(min_length=1)
    topologySpreadConstraints: list[TopologySpreadConstraintModel] = Field(default_factory=list)
    volumes: list[Volume] = Field(default_factory=list)
    initContainers: list[Container] = Field(default_factory=list)
    nodeSelector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    overhead: dict[str, Scalar] = Field(default_factory=dict)
    activeDeadlineSeconds: Any = None
    automountServiceAccountToken: Any = None
    dnsConfig: Any = None
    dnsPolicy: Any = None
    enableServiceLinks: Any = None
    ephemeralContainers: Any = None
    hostAliases: Any = None
    hostIPC: Any = None
    hostNetwork: Any = None
    hostPID: Any = None
    hostUsers: Any = None
    hostname: Any = None
    imagePullSecrets: Any = None
    os: Any = None
    preemptionPolicy: Any = None
    priority: Any = None
    priorityClassName: Any = None
    readinessGates: Any = None
    resourceClaims: Any = None
    resources: Any = None
    restartPolicy: Any = None
    runtimeClassName: Any = None
    schedulerName: Any = None
    schedulingGates: list[SchedulingGate] = Field(default_factory=list)
    securityContext: Any = None
    serviceAccount: Any = None
    serviceAccountName: Any = None
    setHostnameAsFQDN: Any = None
    shareProcessNamespace: Any = None
    subdomain: Any = None
    terminationGracePeriodSeconds: Any = None
    hostnameOverride: Any = None


class PodTemplateSpec(Strict):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)
    spec: PodSpec


class PodStatus(Model):
    phase: str | None = None
    #: When the kubelet started it (a duration-valued do-not-disrupt counts from here).
    startTime: datetime | None = None


class Pod(Model):
    apiVersion: str
    kind: Literal["Pod"]
    metadata: Metadata
    spec: PodSpec
    status: PodStatus = Field(default_factory=PodStatus)


class ReplicatedSpec(Strict):
    replicas: StrictInt = Field(default=1, ge=0, le=MAX_REPLICAS)
    selector: LabelSelector | None = None
    template: PodTemplateSpec
    strategy: Any = None
    minReadySeconds: Any = None
    revisionHistoryLimit: Any = None
    progressDeadlineSeconds: Any = None
    paused: Any = None
    serviceName: Any = None
    podManagementPolicy: Any = None
    updateStrategy: Any = None
    volumeClaimTemplates: Any = None
    persistentVolumeClaimRetentionPolicy: Any = None
    ordinals: Any = None


class Deployment(Model):
    apiVersion: str
    kind: Literal["Deployment"]
    metadata: Metadata
    spec: ReplicatedSpec


class DaemonSetSpec(Strict):
    template: PodTemplateSpec
    selector: Any = None
    updateStrategy: Any = None
    minReadySeconds: Any = None
    revisionHistoryLimit: Any = None


class DaemonSet(Model):
    apiVersion: str
    kind: Literal["DaemonSet"]
    metadata: Metadata
    spec: DaemonSetSpec


class ReplicaSet(Model):
    apiVersion: str
    kind: Literal["ReplicaSet"]
    metadata: Metadata
    spec: ReplicatedSpec


class StatefulSet(Model):
    apiVersion: str
    kind: Literal["StatefulSet"]
    metadata: Metadata
    spec: ReplicatedSpec


class JobSpec(Strict):
    parallelism: StrictInt = Field(default=1, ge=0, le=MAX_REPLICAS)
    completions: StrictInt | None = Field(default=None, ge=0)
    template: PodTemplateSpec
    activeDeadlineSeconds: Any = None
    backoffLimit: Any = None
    backoffLimitPerIndex: Any = None
    maxFailedIndexes: Any = None
    completionMode: Any = None
    manualSelector: Any = None
    selector: Any = None
    suspend: Any = None
    ttlSecondsAfterFinished: Any = None
    podFailurePolicy: Any = None
    podReplacementPolicy: Any = None
    successPolicy: Any = None
    managedBy: Any = None


class JobCondition(Model):
    type: str = ""
    status: str = ""


class JobStatus(Model):
    succeeded: int = 0
    conditions: list[JobCondition] = Field(default_factory=list)


class Job(Model):
    apiVersion: str
    kind: Literal["Job"]
    metadata: Metadata
    spec: JobSpec
    status: JobStatus = Field(default_factory=JobStatus)


class JobTemplate(Strict):
    spec: JobSpec
    metadata: Any = None


class CronJobSpec(Strict):
    schedule: str = Field(min_length=1)
    jobTemplate: JobTemplate
    suspend: bool = False
    concurrencyPolicy: Literal["Allow", "Forbid", "Replace"] | None = None
    failedJobsHistoryLimit: Any = None
    successfulJobsHistoryLimit: Any = None
    startingDeadlineSeconds: Any = None
    timeZone: StrictStr | None = None


class CronJob(Model):
    apiVersion: str
    kind: Literal["CronJob"]
    metadata: Metadata
    spec: CronJobSpec


class PDBSpec(Strict):
    selector: LabelSelector | None = None
    minAvailable: int | str | None = None
    maxUnavailable: int | str | None = None
    unhealthyPodEvictionPolicy: Any = None


class PodDisruptionBudget(Model):
    apiVersion: str
    kind: Literal["PodDisruptionBudget"]
    metadata: Metadata
    spec: PDBSpec


class NodeSpecModel(Model):
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool = False
    providerID: str | None = None


class NodeStatus(Model):
    capacity: dict[str, Scalar] = Field(default_factory=dict)
    allocatable: dict[str, Scalar] = Field(default_factory=dict)


class Node(Model):
    apiVersion: str
    kind: Literal["Node"]
    metadata: Metadata
    spec: NodeSpecModel = Field(default_factory=NodeSpecModel)
    status: NodeStatus = Field(default_factory=NodeStatus)


class PVCResources(Model):
    requests: dict[str, Scalar] = Field(default_factory=dict)


class PVCSpec(Model):
    storageClassName: str | None = None
    volumeName: str | None = None
    resources: PVCResources = Field(default_factory=PVCResources)


class PersistentVolumeClaim(Model):
    apiVersion: str
    kind: Literal["PersistentVolumeClaim"]
    metadata: Metadata
    spec: PVCSpec = Field(default_factory=PVCSpec)


class VolumeNodeAffinity(Model):
    required: NodeSelector | None = None


class PVSpec(Model):
    storageClassName: str | None = None
    nodeAffinity: VolumeNodeAffinity | None = None
    capacity: dict[str, Scalar] = Field(default_factory=dict)


class PersistentVolume(Model):
    apiVersion: str
    kind: Literal["PersistentVolume"]
    metadata: Metadata
    spec: PVSpec = Field(default_factory=PVSpec)


class TopologySelectorRequirement(Model):
    key: str = Field(min_length=1)
    values: list[str] = Field(min_length=1)


class TopologySelectorTerm(Model):
    matchLabelExpressions: list[TopologySelectorRequirement] = Field(default_factory=list)


class StorageClass(Model):
    apiVersion: str
    kind: Literal["StorageClass"]
    metadata: Metadata
    provisioner: str = ""
    volumeBindingMode: Literal["Immediate", "WaitForFirstConsumer"] = "Immediate"
    allowedTopologies: list[TopologySelectorTerm] = Field(default_factory=list)


class Namespace(Model):
    apiVersion: str
    kind: Literal["Namespace"]
    metadata: Metadata
