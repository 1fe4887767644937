"""Pydantic models of Karpenter's kinds: v1 NodePool and NodeClaim, v1beta1 NodePool,
v1alpha5 Provisioner, EC2NodeClass (v1, v1beta1), KWOKNodeClass, AWSNodeTemplate.
Re-exported by ``joiner.api.manifests.models``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt

from joiner.api.manifests.models_base import (
    INT32_MAX,
    INT64_MAX,
    Duration,
    Labels,
    Metadata,
    Model,
    NodeSelectorRequirement,
    Rfc3339,
    Scalar,
    Strict,
    Taint,
    TemplateMetadata,
    crd_string,
)

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
    expireAfter: Duration | None = None
    terminationGracePeriod: str | None = None


class NodeClaimTemplate(Strict):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)
    spec: NodeClaimTemplateSpec


#: Karpenter's CRD patterns for a budget's ``nodes`` and ``duration`` (``karpenter.sh/v1``
#: ``Budget``, kubebuilder markers in ``pkg/apis/v1/nodepool.go``); ``convert.budgets``
#: checks them with messages of its own, the generated CRDs carry them.
BUDGET_NODES_PATTERN = r"^((100|[0-9]{1,2})%|[0-9]+)$"
BUDGET_DURATION_PATTERN = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"


class Budget(Strict):
    """A disruption budget. ``nodes`` is a string (a count or a percentage), as the CRD
    types it: the API server refuses ``nodes: 10`` unquoted, and so does Joiner."""

    nodes: Annotated[
        str,
        crd_string('a count or a percentage such as "10" or "10%"', " (quote a count)"),
        Field(json_schema_extra={"pattern": BUDGET_NODES_PATTERN}),
    ] = "10%"
    schedule: str | None = None
    duration: (
        Annotated[str, Field(json_schema_extra={"pattern": BUDGET_DURATION_PATTERN})] | None
    ) = None
    reasons: list[str] = Field(default_factory=list)


class Disruption(Strict):
    consolidationPolicy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = (
        "WhenEmptyOrUnderutilized"
    )
    consolidateAfter: Duration | None = None
    budgets: list[Budget] = Field(default_factory=list)


class NodePoolSpec(Strict):
    template: NodeClaimTemplate
    disruption: Disruption = Field(default_factory=Disruption)
    limits: dict[str, Scalar] = Field(default_factory=dict)
    #: The bounds here are the vendored CRD's (``joiner.api.openapi`` checks them first;
    #: ``tests/api/test_crd_contract.py`` keeps them equal), which ``joiner install-crds``
    #: installs.
    weight: StrictInt | None = Field(default=None, ge=1, le=100)
    #: A static NodePool's node count (karpenter.sh/v1 NodePool CRD: int64, minimum 0).
    replicas: StrictInt | None = Field(default=None, ge=0, le=INT64_MAX)


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
    expireAfter: Duration | None = None
    terminationGracePeriod: str | None = None


class Condition(Model):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    lastTransitionTime: Rfc3339 | None = None


class NodeClaimStatus(Model):
    providerID: str | None = None
    nodeName: str | None = None
    imageID: str | None = None
    capacity: dict[str, Scalar] = Field(default_factory=dict)
    allocatable: dict[str, Scalar] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)
    lastPodEventTime: Rfc3339 | None = None


class NodeClaim(Model):
    apiVersion: str
    kind: Literal["NodeClaim"]
    metadata: Metadata
    spec: NodeClaimSpec
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)


class Kubelet(Strict):
    maxPods: StrictInt | None = Field(default=None, ge=1, le=INT32_MAX)
    podsPerCore: StrictInt | None = Field(default=None, ge=0, le=INT32_MAX)
    systemReserved: dict[str, Scalar] = Field(default_factory=dict)
    kubeReserved: dict[str, Scalar] = Field(default_factory=dict)
    evictionHard: dict[str, str] = Field(default_factory=dict)
    clusterDNS: list[str] = Field(default_factory=list)
    evictionSoft: dict[str, str] = Field(default_factory=dict)
    evictionSoftGracePeriod: dict[str, str] = Field(default_factory=dict)
    evictionMaxPodGracePeriod: StrictInt | None = None
    imageGCHighThresholdPercent: StrictInt | None = Field(default=None, ge=0, le=100)
    imageGCLowThresholdPercent: StrictInt | None = Field(default=None, ge=0, le=100)
    cpuCFSQuota: StrictBool | None = None


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
    consolidateAfter: Duration | None = None
    expireAfter: Duration | None = None
    budgets: list[Budget] = Field(default_factory=list)


class V1Beta1NodePoolSpec(Strict):
    template: V1Beta1Template
    disruption: V1Beta1Disruption = Field(default_factory=V1Beta1Disruption)
    limits: dict[str, Scalar] = Field(default_factory=dict)
    weight: StrictInt | None = Field(default=None, ge=1, le=100)


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
    enabled: StrictBool = False


class ProvisionerLimits(Strict):
    resources: dict[str, Scalar] = Field(default_factory=dict)


class ProvisionerKubelet(Kubelet):
    """v1alpha5 ``kubeletConfiguration``: the v1 kubelet fields plus ``containerRuntime``
    (removed in v1; convert drops it)."""

    containerRuntime: Any = None


class EBS(Strict):
    volumeSize: Scalar | None = None
    volumeType: str | None = None
    iops: StrictInt | None = None
    throughput: StrictInt | None = None
    encrypted: StrictBool | None = None
    deleteOnTermination: StrictBool | None = None
    kmsKeyID: Any = None
    snapshotID: Any = None
    volumeInitializationRate: Any = None


class BlockDeviceMapping(Strict):
    deviceName: str | None = None
    rootVolume: StrictBool = False
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
    labels: Labels = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    startupTaints: list[Taint] = Field(default_factory=list)
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list)
    limits: ProvisionerLimits = Field(default_factory=ProvisionerLimits)
    providerRef: ProviderRef | None = None
    provider: InlineProvider | None = None
    consolidation: Consolidation | None = None
    ttlSecondsAfterEmpty: StrictInt | None = Field(default=None, ge=0)
    ttlSecondsUntilExpired: StrictInt | None = Field(default=None, ge=0)
    weight: StrictInt | None = Field(default=None, ge=1, le=100)
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


class CapacityReservationSelectorTerm(Strict):
    """Karpenter-AWS ``CapacityReservationSelectorTerm`` (its CRD's patterns; the rules
    between fields are checked by ``convert.capacity_reservation_selector_terms``)."""

    id: str | None = Field(default=None, pattern=r"^cr-[0-9a-z]+$")
    ownerID: str | None = Field(default=None, pattern=r"^[0-9]{12}$")
    tags: dict[str, str] = Field(default_factory=dict, max_length=20)
    instanceMatchCriteria: Literal["open", "targeted"] | None = None


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
    instanceStorePolicy: Literal["RAID0"] | None = None
    detailedMonitoring: Any = None
    metadataOptions: Any = None
    context: Any = None
    associatePublicIPAddress: Any = None
    ipPrefixCount: Any = None
    networkInterfaces: Any = None
    connectionTracking: Any = None
    cpuOptions: Any = None
    capacityReservationSelectorTerms: list[CapacityReservationSelectorTerm] = Field(
        default_factory=list, max_length=30
    )
    placementGroupSelector: Any = None


class StatusSubnet(Model):
    id: str = Field(min_length=1)
    zone: str = Field(min_length=1)
    zoneID: str | None = None


class StatusSecurityGroup(Model):
    id: str = Field(min_length=1)
    name: str = ""


class StatusCapacityReservation(Model):
    """One ``status.capacityReservations`` entry (Karpenter-AWS ``v1.CapacityReservation``)."""

    id: str = Field(min_length=1)
    instanceType: str = Field(min_length=1)
    availabilityZone: str = Field(min_length=1)
    ownerID: str = ""
    instanceMatchCriteria: str = "targeted"
    reservationType: str = "default"
    endTime: str | None = None
    state: str = "active"


class EC2NodeClassStatus(Model):
    """What Karpenter resolved the selector terms to (a dump or a live cluster has it)."""

    subnets: list[StatusSubnet] = Field(default_factory=list)
    securityGroups: list[StatusSecurityGroup] = Field(default_factory=list)
    capacityReservations: list[StatusCapacityReservation] = Field(default_factory=list)


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
    instanceStorePolicy: Literal["RAID0"] | None = None
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
