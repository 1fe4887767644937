"""Pydantic models of the core Kubernetes kinds Joiner reads: pods and their controllers,
PodDisruptionBudgets, Nodes, volumes, Namespaces. Re-exported by
``joiner.api.manifests.models``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from joiner.api.manifests.models_base import (
    MAX_REPLICAS,
    LabelKey,
    Labels,
    LabelValue,
    Metadata,
    Model,
    NodeSelectorRequirement,
    Rfc3339,
    Scalar,
    Strict,
    Taint,
    TemplateMetadata,
    Toleration,
)

# --- core Kubernetes ------------------------------------------------------------------------


class LabelSelectorRequirement(Strict):
    key: LabelKey = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[LabelValue] = Field(default_factory=list)


class LabelSelector(Strict):
    matchLabels: Labels = Field(default_factory=dict)
    matchExpressions: list[LabelSelectorRequirement] = Field(default_factory=list)


class ResourceRequirements(Strict):
    requests: dict[str, Scalar] = Field(default_factory=dict)
    limits: dict[str, Scalar] = Field(default_factory=dict)
    claims: Any = None


class ContainerPort(Strict):
    containerPort: StrictInt = Field(ge=1, le=65535)
    hostPort: StrictInt | None = Field(default=None, ge=1, le=65535)
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
    weight: StrictInt = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(Strict):
    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class PodAffinityTermModel(Strict):
    topologyKey: LabelKey = Field(min_length=1)
    labelSelector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    namespaceSelector: LabelSelector | None = None
    matchLabelKeys: list[LabelKey] = Field(default_factory=list)
    mismatchLabelKeys: list[LabelKey] = Field(default_factory=list)


class WeightedPodAffinityTerm(Strict):
    weight: StrictInt = Field(ge=1, le=100)
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
    maxSkew: StrictInt = Field(ge=1)
    topologyKey: LabelKey = Field(min_length=1)
    whenUnsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    labelSelector: LabelSelector | None = None
    minDomains: StrictInt | None = Field(default=None, ge=1)
    nodeAffinityPolicy: Literal["Honor", "Ignore"] = "Honor"
    nodeTaintsPolicy: Literal["Honor", "Ignore"] = "Ignore"
    matchLabelKeys: list[LabelKey] = Field(default_factory=list)


class PVCVolumeSource(Strict):
    claimName: str = Field(min_length=1)
    readOnly: StrictBool = False


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
    nodeSelector: Labels = Field(default_factory=dict)
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
    hostNetwork: StrictBool | None = None
    hostPID: Any = None
    hostUsers: Any = None
    hostname: Any = None
    imagePullSecrets: Any = None
    os: Any = None
    preemptionPolicy: Literal["PreemptLowerPriority", "Never"] | None = None
    priority: StrictInt | None = Field(default=None, ge=-(2**31), lt=2**31)
    priorityClassName: str | None = None
    readinessGates: Any = None
    resourceClaims: Any = None
    resources: Any = None
    restartPolicy: Any = None
    runtimeClassName: str | None = None
    schedulerName: Any = None
    schedulingGates: list[SchedulingGate] = Field(default_factory=list)
    securityContext: Any = None
    serviceAccount: Any = None
    serviceAccountName: Any = None
    setHostnameAsFQDN: Any = None
    shareProcessNamespace: Any = None
    subdomain: Any = None
    terminationGracePeriodSeconds: StrictInt | None = None
    hostnameOverride: Any = None


class PodTemplateSpec(Strict):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)
    spec: PodSpec


class PodConditionModel(Model):
    type: StrictStr
    status: StrictStr = ""
    reason: StrictStr = ""


class PodStatus(Model):
    phase: str | None = None
    #: ``PodScheduled`` among them: kube-scheduler has tried the pod (``False``: refused).
    conditions: list[PodConditionModel] = Field(default_factory=list)
    #: When the kubelet started it (a duration-valued do-not-disrupt counts from here).
    startTime: Rfc3339 | None = None
    #: The node kube-scheduler preempted pods on for this pod; it binds there once they are
    #: gone (Karpenter does not provision for it).
    nominatedNodeName: StrictStr | None = None


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
    succeeded: StrictInt = 0
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
    suspend: StrictBool = False
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
    minAvailable: StrictInt | str | None = None
    maxUnavailable: StrictInt | str | None = None
    unhealthyPodEvictionPolicy: Any = None


class PodDisruptionBudget(Model):
    apiVersion: str
    kind: Literal["PodDisruptionBudget"]
    metadata: Metadata
    spec: PDBSpec


class NodeSpecModel(Model):
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: StrictBool = False
    providerID: str | None = None


class NodeConditionModel(Model):
    type: StrictStr
    status: StrictStr


class NodeStatus(Model):
    capacity: dict[str, Scalar] = Field(default_factory=dict)
    allocatable: dict[str, Scalar] = Field(default_factory=dict)
    conditions: list[NodeConditionModel] = Field(default_factory=list)


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
