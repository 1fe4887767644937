"""The scenario file's schema (``kind: Scenario``, ``apiVersion: joiner.dev/v1alpha1``): the
pydantic models ``load_scenario`` (``joiner.sim.scenario``) validates against; their JSON
Schema is ``docs/schemas/scenario.schema.json`` (``joiner schema``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from joiner.api.manifests.models import MAX_REPLICAS
from joiner.controllers.disruption.controller import DEFAULT_EPOCH
from joiner.sim.windows import ReportSpec


class _FileReference:
    """Marks a field whose value is a file path relative to the scenario file (``FILE``):
    ``referenced_files`` collects them, so a sweep cell ships every file the run reads."""

    def __repr__(self) -> str:
        return "FILE"


#: The marker of a field naming a file (``Annotated[str, FILE]``).
FILE = _FileReference()


class _Strict(BaseModel):
    """Unknown fields are errors, and so is a value of the wrong JSON type: ``"20"`` for a
    count, ``yes`` or ``1`` for a boolean, ``"1.5"`` for a number (pydantic's strict mode,
    as the Kubernetes API server's decoding of its own objects)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True, defer_build=True)


class SubnetSpec(_Strict):
    """A subnet of the simulated VPC."""

    id: str = Field(min_length=1, description="Subnet id, e.g. subnet-123455")
    zone: str = Field(min_length=1, description="Availability zone name, e.g. us-east-1a")
    tags: dict[str, str] = Field(default_factory=dict)


class SecurityGroupSpec(_Strict):
    """A security group NodeClasses may select."""

    id: str = Field(min_length=1)
    name: str = ""
    tags: dict[str, str] = Field(default_factory=dict)


class CapacityReservationSpec(_Strict):
    """An on-demand capacity reservation in the simulated account (what
    ``DescribeCapacityReservations`` would list); EC2NodeClasses select it with
    ``capacityReservationSelectorTerms``."""

    id: str = Field(pattern=r"^cr-[0-9a-z]+$", description="Reservation id, e.g. cr-0123abcd")
    instanceType: str = Field(min_length=1)
    zone: str = Field(min_length=1, description="Availability zone name")
    instanceCount: StrictInt = Field(ge=1, le=100000, description="Instances it reserves")
    ownerID: str = Field(
        default="111122223333", pattern=r"^[0-9]{12}$", description="The owning account"
    )
    tags: dict[str, str] = Field(default_factory=dict)
    instanceMatchCriteria: Literal["open", "targeted"] = "targeted"


class RateSpec(_Strict):
    """A reclaim rate for spot offerings of one instance type and/or zone."""

    ratePerHour: float = Field(ge=0, le=60, allow_inf_nan=False)
    instanceType: str | None = None
    zone: str | None = None


class EventSpec(_Strict):
    """A captured EventBridge message (JSON file) delivered at ``at``."""

    at: str = Field(description="Go duration from the start of the run")
    file: Annotated[str, FILE] = Field(min_length=1)


class FaultSpec(_Strict):
    """An AWS FIS experiment template (JSON) started at ``at``."""

    at: str = Field(description="Go duration from the start of the run")
    template: Annotated[str, FILE] = Field(min_length=1)


class PlacementScoresSpec(_Strict):
    """One ``aws ec2 get-spot-placement-scores --single-availability-zone`` output (JSON) and
    the instance types of its request (the output does not repeat them)."""

    file: Annotated[str, FILE] = Field(min_length=1)
    instanceTypes: list[str] | None = Field(
        default=None,
        min_length=1,
        description="The request's instance types; absent: the score applies to every type",
    )


class CloudSpec(_Strict):
    """The simulated cloud. Without ``subnets``: one subnet per zone (``subnet-<zone>``).

    The Spot market (docs/spot-market.md) prices and scores each capacity pool (instance type
    x zone) from the seed unless the user's own data is given."""

    subnets: list[SubnetSpec] | None = None
    securityGroups: list[SecurityGroupSpec] | None = None
    capacityReservations: list[CapacityReservationSpec] = Field(
        default_factory=list,
        description="On-demand capacity reservations (capacity type reserved): nodes of an "
        "EC2NodeClass that selects one launch into it first while it has room",
    )
    interruptionRateMultiplier: float = Field(
        default=1.0,
        ge=0,
        le=1e5,
        allow_inf_nan=False,
        description="Scales every Spot pool's crunch rate (from the type's Spot Advisor "
        "bucket), so the per-instance reclaim hazard scales by the same factor",
    )
    interruptionRates: list[RateSpec] = Field(
        default_factory=list,
        description="Per-instance reclaim rates per hour for the Spot pools of an instance "
        "type and/or zone (the pool's crunch rate is that over the mean crunch severity); "
        "the first match wins",
    )
    rebalanceProbability: float = Field(
        default=0.8,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Share of Spot pool reclaim events preceded by a rebalance recommendation "
        "(to every instance in the pool)",
    )
    spotPriceHistory: Annotated[str | None, FILE] = Field(
        default=None,
        min_length=1,
        description="`aws ec2 describe-spot-price-history` output (JSON); its Linux/UNIX rows "
        "price their pools as given (the latest row at or before each instant)",
    )
    spotPlacementScores: Annotated[str | list[PlacementScoresSpec] | None, FILE] = Field(
        default=None,
        description="`aws ec2 get-spot-placement-scores --single-availability-zone` output "
        "(JSON), or a list of {file, instanceTypes}: each zone's score is the base capacity "
        "score of the request's types there",
    )


class TraceSpec(_Strict):
    """Replicas follow ``ceil(value / targetPerReplica)`` clamped to [min, max]."""

    file: Annotated[str, FILE] = Field(min_length=1, description="CSV with header minute,value")
    targetPerReplica: float = Field(gt=0, allow_inf_nan=False)
    min: StrictInt = Field(default=0, ge=0, le=MAX_REPLICAS)
    max: StrictInt = Field(default=1000, ge=0, le=MAX_REPLICAS)


class DailyMultiplierSpec(_Strict):
    """Traffic times ``factor`` every day from ``start`` (HH:MM wall clock) for ``duration``."""

    name: str = ""
    start: str = Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$", description="HH:MM")
    duration: str = Field(description="Go duration, at most 24h")
    factor: float = Field(ge=0, le=1e4, allow_inf_nan=False)


class HpaSpec(_Strict):
    """A HorizontalPodAutoscaler on a request-rate trace (AverageValue target)."""

    file: Annotated[str, FILE] = Field(
        min_length=1, description="CSV with header minute,value (requests)"
    )
    targetPerReplica: float = Field(gt=0, allow_inf_nan=False)
    min: StrictInt = Field(default=1, ge=0, le=MAX_REPLICAS)
    max: StrictInt = Field(default=1000, ge=0, le=MAX_REPLICAS)
    syncPeriod: str = Field(default="15s", description="Go duration")
    scaleDownStabilization: str = Field(default="5m", description="Go duration")
    tolerance: float = Field(default=0.1, ge=0, lt=1, allow_inf_nan=False)
    dailyMultipliers: list[DailyMultiplierSpec] = Field(default_factory=list)


class TrafficSpec(_Strict):
    """A workload's request rate, the metric of the manifests' HorizontalPodAutoscaler for it."""

    file: Annotated[str, FILE] = Field(
        min_length=1, description="CSV with header minute,value (requests)"
    )
    dailyMultipliers: list[DailyMultiplierSpec] = Field(default_factory=list)


class WorkloadSpec(_Strict):
    """A Deployment (or StatefulSet, ReplicaSet, Job) with fixed replicas, a trace or an HPA;
    or a CronJob; Jobs and CronJobs with ``runFor`` run their pods to completion."""

    deployment: str | None = Field(
        default=None, min_length=1, description="namespace/name (or name in default)"
    )
    cronJob: str | None = Field(default=None, min_length=1, description="namespace/name")
    replicas: StrictInt | None = Field(default=None, ge=0, le=MAX_REPLICAS)
    trace: TraceSpec | None = None
    hpa: HpaSpec | None = None
    traffic: TrafficSpec | None = Field(
        default=None,
        description="The request rate that feeds the manifests' autoscaling/v2 "
        "HorizontalPodAutoscaler of this workload (Pods, Object and External metrics read it)",
    )
    cpuPerRequest: str | float | None = Field(
        default=None,
        description="CPU (a quantity, e.g. 20m) one unit of the request rate uses: the "
        "manifest HPA's Resource cpu metric reads rate x cpuPerRequest",
    )
    runFor: str | None = Field(
        default=None, description="Go duration each Job pod runs once started"
    )


class ScheduleSpec(_Strict):
    """Scheduled scaling: from each time ``cron`` fires, for ``duration``, the workload's
    (or CapacityBuffer's) minimum is at least ``minReplicas``."""

    workload: str | None = Field(
        default=None,
        min_length=1,
        description="namespace/name (or name in default) of a Deployment, StatefulSet or "
        "ReplicaSet: raises its HPA's minReplicas, else its replicas",
    )
    buffer: str | None = Field(
        default=None, min_length=1, description="namespace/name of a CapacityBuffer: its size"
    )
    cron: str = Field(description="cron schedule in UTC (as startTime), e.g. '50 7 * * 1-5'")
    minReplicas: StrictInt = Field(ge=0, le=MAX_REPLICAS)
    duration: str = Field(description="Go duration the minimum holds from each fire, e.g. 40m")


class NodeGroupModel(_Strict):
    """An Auto Scaling group for the Cluster Autoscaler baseline."""

    name: str = Field(min_length=1, max_length=200)
    nodePool: str = Field(
        min_length=1,
        description="NodePool whose NodeClass, labels, taints "
        "and requirements the group's launch template carries",
    )
    instanceTypes: list[str] = Field(
        min_length=1, description="Overrides; the first is CA's template"
    )
    onDemandBaseCapacity: StrictInt = Field(default=0, ge=0)
    onDemandPercentageAboveBaseCapacity: StrictInt = Field(default=100, ge=0, le=100)
    spotAllocationStrategy: Literal[
        "price-capacity-optimized", "capacity-optimized", "lowest-price"
    ] = Field(
        default="price-capacity-optimized",
        description="InstancesDistribution.SpotAllocationStrategy (AWS's recommendation; "
        "the ASG API's own default is lowest-price)",
    )
    onDemandAllocationStrategy: Literal["prioritized", "lowest-price"] = Field(
        default="prioritized",
        description="InstancesDistribution.OnDemandAllocationStrategy (the API's default: "
        "the overrides' order)",
    )
    minSize: StrictInt = Field(default=0, ge=0)
    maxSize: StrictInt = Field(default=1000, ge=0, le=100000)
    zones: list[str] | None = None


class LaunchDelaySpec(_Strict):
    """ASG launch delay bounds (uniform), Go durations."""

    min: str = "60s"
    max: str = "120s"


class ClusterAutoscalerSpec(_Strict):
    """Cluster Autoscaler flags (camelCase of the flag names) and its ASGs."""

    scanInterval: str = "10s"
    newPodScaleUpDelay: str = Field(
        default="0s", description="--new-pod-scale-up-delay: younger pods trigger no scale-up"
    )
    expander: str = Field(
        default="priority,least-waste",
        description="random, most-pods, least-waste or priority, or a chain such as "
        "priority,least-waste (the default, as AWS's guidance for Spot)",
    )
    priorities: dict[str, list[str]] = Field(
        default_factory=dict,
        description="priority expander: priority -> group name regexes; absent: "
        '{"50": [".*-spot"], "10": [".*"]} (Spot groups first)',
    )
    balanceSimilarNodeGroups: bool = Field(
        default=True, description="split a scale-up across similar groups (AWS guidance: true)"
    )
    skipNodesWithSystemPods: bool = True
    skipNodesWithLocalStorage: bool = True
    derivedGroups: Literal["shape", "instance-type"] = Field(
        default="shape",
        description="shape: a Spot and an on-demand mixed-instances group per NodePool and "
        "instance shape (vCPU, memory); instance-type: one group per type and capacity type",
    )
    maxNodeProvisionTime: str = "15m"
    initialNodeGroupBackoffDuration: str = "5m"
    maxNodeGroupBackoffDuration: str = "30m"
    nodeGroupBackoffResetTimeout: str = "3h"
    scaleDownUtilizationThreshold: float = Field(default=0.5, gt=0, le=1, allow_inf_nan=False)
    scaleDownUnneededTime: str = "10m"
    scaleDownDelayAfterAdd: str = "10m"
    scaleDownDelayAfterDelete: str = Field(
        default="0s", description="CA 1.36's default 0s (older CA: the scan interval)"
    )
    scaleDownDelayAfterFailure: str = "3m"
    maxEmptyBulkDelete: StrictInt | None = Field(
        default=None,
        ge=1,
        le=2**31 - 1,
        description="removed from Cluster Autoscaler (1.3x): read as maxScaleDownParallelism, "
        "with a warning",
    )
    maxScaleDownParallelism: StrictInt = Field(
        default=10,
        ge=1,
        le=2**31 - 1,
        description="--max-scale-down-parallelism: nodes deleted at once",
    )
    maxDrainParallelism: StrictInt = Field(
        default=1,
        ge=1,
        le=2**31 - 1,
        description="--max-drain-parallelism: non-empty nodes drained at once",
    )
    blockingSystemPodDisruptionTimeout: str = Field(
        default="1h",
        description="--blocking-system-pod-distruption-timeout: a kube-system pod without a PDB "
        "blocks scale-down this long after its creation",
    )
    maxNodesTotal: StrictInt = Field(
        default=0, ge=0, le=2**31 - 1, description="--max-nodes-total (0: no limit)"
    )
    coresTotal: str = Field(
        default="0:320000", description="--cores-total <min>:<max> (cores of node capacity)"
    )
    memoryTotal: str = Field(
        default="0:6400000", description="--memory-total <min>:<max> (GiB of node capacity)"
    )
    asgLaunchDelay: LaunchDelaySpec = Field(default_factory=LaunchDelaySpec)
    capacityRebalance: bool = False
    nodeGroups: list[NodeGroupModel] = Field(
        default_factory=list,
        description="absent: derived from the NodePools (derivedGroups)",
    )
    derivedGroupMaxSize: StrictInt = Field(default=1000, ge=1, le=100000)


class FeatureGatesSpec(_Strict):
    """Karpenter's ``settings.featureGates``."""

    spotToSpotConsolidation: bool = Field(
        default=False, description="Consolidation may replace spot nodes with cheaper spot nodes"
    )
    reservedCapacity: bool = Field(
        default=True,
        description="Karpenter launches into the on-demand capacity reservations an "
        "EC2NodeClass selects (capacity type reserved) before spot and on-demand",
    )
    capacityBuffer: bool = Field(
        default=False,
        description="Karpenter reads CapacityBuffer objects (autoscaling.x-k8s.io/v1beta1) and "
        "keeps room for their virtual pods",
    )
    nodeRepair: bool = Field(
        default=False,
        description="Nodes unhealthy past their condition's toleration (Ready False/Unknown "
        "30m; the node monitoring agent's conditions) are replaced without draining",
    )
    nodeOverlay: bool = Field(
        default=False,
        description="Karpenter applies NodeOverlay objects (karpenter.sh/v1alpha1): their "
        "prices steer its choices and their capacities add extended resources",
    )
    staticCapacity: bool = Field(
        default=False,
        description="Karpenter keeps spec.replicas nodes for each static NodePool (one with "
        "spec.replicas), which pending pods never launch for and consolidation leaves alone",
    )


class SettingsSpec(_Strict):
    """Karpenter's Helm ``settings`` that change behaviour here."""

    featureGates: FeatureGatesSpec = Field(default_factory=FeatureGatesSpec)
    packing: Literal["karpenter", "cost-optimal"] = Field(
        default="karpenter",
        description="Provisioning policy: karpenter (Karpenter's packing, the default) or "
        "cost-optimal (Joiner's own: the lowest hourly price under the same constraints; "
        "consolidation uses it for replacements too)",
    )
    nodeRepairTolerations: dict[str, str] = Field(
        default_factory=dict,
        description="Node repair tolerations by condition type (Go durations, e.g. "
        "{Ready: 5m}), replacing the cloud's (Ready 30m, AcceleratedHardwareReady 10m, ...)",
    )


class AsRunSpec(_Strict):
    """What a cluster really ran over the Scenario's range (``spec.compare``'s ``as-run``):
    CSV files relative to the scenario file. ``nodes``: header
    ``node,instanceType,capacityType,zone,nodePool,startSeconds,endSeconds`` (seconds from the
    Scenario's start; ``endSeconds`` empty: still running at the end; ``instanceType``,
    ``zone``, ``nodePool`` may be empty; ``capacityType`` spot, on-demand, reserved or empty
    for unknown). ``pods``: header ``namespace,pod,createdSeconds,scheduledSeconds``
    (``scheduledSeconds`` empty: never scheduled in the range; negative seconds: before the
    start)."""

    nodes: Annotated[str, FILE] = Field(
        min_length=1, description="CSV of the nodes that ran (see above)"
    )
    pods: Annotated[str | None, FILE] = Field(
        default=None,
        min_length=1,
        description="CSV of the pods' creation and scheduling times; absent: the as-run "
        "pending time is not derived",
    )


class ScenarioSpec(_Strict):
    """What to simulate."""

    region: str | None = Field(
        default=None,
        description="AWS region; default: the region the manifests' nodes, NodeClaims and "
        "EC2NodeClass status show, else us-east-1",
    )
    duration: str = Field(default="1h", description="Go duration, e.g. 6h or 90m")
    seed: StrictInt = Field(default=0, ge=0, lt=2**63)
    startTime: datetime = Field(
        default=DEFAULT_EPOCH,
        strict=False,  # YAML gives a datetime, or a string when quoted or in JSON
        description="UTC instant of run time 0 (ISO 8601, e.g. 2025-01-06T18:00:00Z); "
        "disruption budget schedules are cron times in UTC",
    )
    settings: SettingsSpec = Field(default_factory=SettingsSpec)
    manifests: Annotated[list[str], FILE] = Field(
        min_length=1, description="Paths relative to this file"
    )
    cloud: CloudSpec = Field(default_factory=CloudSpec)
    workloads: list[WorkloadSpec] = Field(default_factory=list)
    schedules: list[ScheduleSpec] = Field(
        default_factory=list,
        description="Scheduled scaling for known peaks: [{workload or buffer, cron, "
        "minReplicas, duration}]",
    )
    interruption: dict[str, Any] | None = Field(
        default=None,
        description="NTH Helm values (with or without the aws-node-termination-handler "
        "wrapper), or {file: path} to a values file; absent: Karpenter's behaviour",
    )
    events: list[EventSpec] = Field(default_factory=list)
    faults: list[FaultSpec] = Field(default_factory=list)
    compare: list[Literal["as-run", "joiner", "cost-optimal", "cluster-autoscaler"]] | None = Field(
        default=None,
        min_length=1,
        description="Run each policy on the same seed: joiner (with spec.settings.packing), "
        "cost-optimal (joiner with packing cost-optimal), cluster-autoscaler; as-run is the "
        "record of spec.asRun priced, not a run; summary.json keeps the first policy's run at "
        "the top level and every one under policies",
    )
    asRun: AsRunSpec | None = Field(
        default=None,
        description="The nodes (and pods) the cluster really ran over this range: required "
        "with as-run in spec.compare",
    )
    clusterAutoscaler: ClusterAutoscalerSpec = Field(default_factory=ClusterAutoscalerSpec)
    report: ReportSpec = Field(
        default_factory=ReportSpec,
        description="Extra summary figures: windows [{name, start (UTC HH:MM), duration}] "
        "give summary.windows.<name>.pendingSeconds for pods created in each",
    )


class ScenarioMetadata(_Strict):
    name: str = Field(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ScenarioFile(_Strict):
    """The scenario document."""

    apiVersion: Literal["joiner.dev/v1alpha1"]
    kind: Literal["Scenario"]
    metadata: ScenarioMetadata
    spec: ScenarioSpec


def referenced_files(model: BaseModel) -> Iterator[str]:
    """Every file path a validated Scenario (or part of one) names: the values of the fields
    marked ``FILE``, at any depth, in field order; plus ``spec.interruption``'s ``file`` (a
    values file, when the section is not inline values)."""
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if FILE in info.metadata:
            if isinstance(value, str):
                yield value
            elif isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
        if (
            name == "interruption"
            and isinstance(value, dict)
            and isinstance(value.get("file"), str)
        ):
            yield value["file"]
        yield from _nested_files(value)


def _nested_files(value: Any) -> Iterator[str]:
    if isinstance(value, BaseModel):
        yield from referenced_files(value)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _nested_files(v)
