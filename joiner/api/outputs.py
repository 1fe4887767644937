"""The JSON documents Joiner writes, as pydantic models: their JSON Schemas are published in
``docs/schemas/`` (``joiner schema``) and every output is validated against them in tests.

Keys are camelCase with the unit in the name; money is USD. ``joiner plan``'s document is in
``api.plan_output`` (re-exported here).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from joiner.api.plan_output import PRICE_SOURCE_DESCRIPTION, PRICES_AT_DESCRIPTION, PriceSource
from joiner.api.plan_output import Launch as Launch
from joiner.api.plan_output import Nominated as Nominated
from joiner.api.plan_output import OutputModel as _Out
from joiner.api.plan_output import Placement as Placement
from joiner.api.plan_output import Plan as Plan
from joiner.api.plan_output import PlannedNodeClaim as PlannedNodeClaim
from joiner.api.plan_output import StaticDeletion as StaticDeletion
from joiner.api.plan_output import Unschedulable as Unschedulable


class NodeAllocation(_Out):
    """Why EC2 Fleet chose the node's capacity pool (instance type x zone)."""

    strategy: str = Field(
        description="The fleet's allocation strategy (price-capacity-optimized, "
        "capacity-optimized, lowest-price, prioritized)"
    )
    pool: str = Field(description="instanceType/zone")
    pricePerHour: float = Field(ge=0, description="The pool's price at launch, USD")
    capacityScore: float | None = Field(
        description="The pool's capacity score at launch (1-10; 0 is dry); null for on-demand"
    )
    pools: int = Field(ge=1, description="Pools (type x zone overrides) the request offered")
    reason: str


class SummaryNode(_Out):
    name: str
    instanceType: str
    zone: str
    capacityType: str
    nodePool: str
    launchedAtSeconds: float = Field(ge=0)
    readyAtSeconds: float | None
    deletedAtSeconds: float | None
    pricePerHour: float = Field(ge=0)
    onDemandPricePerHour: float = Field(ge=0)
    priceEstimated: bool
    allocation: NodeAllocation | None = Field(
        description="The fleet's pool choice (null for a node adopted from a running cluster)"
    )


class SummaryCost(_Out):
    total: float = Field(ge=0)
    onDemandEquivalent: float = Field(ge=0)
    perHourPeak: float = Field(ge=0)
    savingsPercent: float
    currency: str = "USD"
    pricesEstimated: bool = Field(description="Some node's price is estimated (priceNote)")
    priceNote: str = Field(description="Where the estimated prices come from; empty if none")
    perMonth: float | None = Field(
        default=None,
        ge=0,
        description="USD: total scaled to a 720-hour month (with the as-run record compared)",
    )
    vsAsRunPerMonth: float | None = Field(
        default=None,
        description="USD per 720-hour month: perMonth less the as-run record's (negative: "
        "cheaper than what the cluster ran; every policy but as-run, when it is compared)",
    )


class PendingSeconds(_Out):
    p50: float = Field(ge=0)
    p95: float = Field(ge=0)
    max: float = Field(ge=0)


class ScaleUpLatency(_Out):
    pods: int = Field(ge=0, description="Pods that waited for a node created after them")
    p50: float = Field(ge=0)
    p95: float = Field(ge=0)


class UnschedulableReason(_Out):
    reason: str
    pods: int = Field(ge=1)


class SummaryPods(_Out):
    scheduled: int = Field(ge=0, description="Pods bound to a node at least once")
    pending: int = Field(ge=0, description="Pods still pending at the end")
    lost: int = Field(ge=0)
    pendingSeconds: PendingSeconds
    scaleUpLatencySeconds: ScaleUpLatency = Field(
        description="Pending to running, for the pods that waited for new capacity"
    )
    unschedulableReasons: list[UnschedulableReason]


class SummaryProvisioning(_Out):
    passes: int = Field(ge=0)
    nodeClaimsCreated: int = Field(ge=0)
    launchFailures: int = Field(ge=0)


class NodeHours(_Out):
    spot: float = Field(ge=0)
    onDemand: float = Field(ge=0)


class SummaryPolicy(_Out):
    """Which provisioning policy ran, with every parameter it ran with."""

    name: str = Field(pattern="^(as-run|joiner|cost-optimal|cluster-autoscaler)$")
    parameters: dict[str, Any]
    stats: dict[str, int] = Field(
        description="The policy's own counts: Cluster Autoscaler's scans and scale-downs; "
        "with the StaticCapacity gate, Joiner's staticNodeClaimsCreated and "
        "staticNodeClaimsDeleted"
    )


class TimelineEntry(_Out):
    atSeconds: float = Field(ge=0)
    kind: str
    node: str | None
    pod: str | None
    detail: str


class LeadTime(_Out):
    p50: float | None
    min: float | None


class ReclaimEventRecord(_Out):
    """One capacity-pool event of the simulated Spot market that reclaimed instances Joiner
    launched."""

    atSeconds: float = Field(ge=0, description="The 2-minute notice")
    instanceType: str
    zone: str
    nodes: int = Field(ge=1, description="Instances this one event took")


class Interruptions(_Out):
    count: int = Field(ge=0, description="Nodes that received an interruption event")
    byKind: dict[str, int]
    podsRescheduledBeforeReclaim: int = Field(ge=0)
    podsLost: int = Field(ge=0)
    pdbViolations: int = Field(ge=0)
    replacementLeadTimeSeconds: LeadTime = Field(
        description="Reclaim deadline minus replacement Ready time; positive is in time"
    )
    reclaimEvents: list[ReclaimEventRecord] = Field(
        description="Spot pool events that reclaimed instances, in time order"
    )


class DisruptionRecord(_Out):
    """One disruption command the run executed."""

    atSeconds: float = Field(ge=0)
    method: str = Field(
        pattern="^(Emptiness|Drift|MultiNodeConsolidation|SingleNodeConsolidation)$"
    )
    action: str = Field(pattern="^(Delete|Replace)$")
    nodes: list[str]
    replacements: list[str] = Field(
        description="instanceType/zone/capacityType each replacement launched as"
    )
    savingsPerHour: float


class Disruptions(_Out):
    """What the disruption and expiration controllers did."""

    byMethod: dict[str, int] = Field(description="Commands executed per method")
    podsEvicted: int = Field(ge=0, description="Pods on disrupted nodes when their drain began")
    savingsPerHour: float = Field(description="Summed savings of the executed commands, USD")
    expired: int = Field(ge=0, description="NodeClaims deleted for expireAfter")
    rejected: int = Field(ge=0, description="Commands dropped at validation or launch")
    commands: list[DisruptionRecord]


class PlannedReplacement(_Out):
    """A NodeClaim a disruption command launches, as it is expected to launch."""

    instanceType: str
    zone: str
    capacityType: str = Field(pattern="^(spot|on-demand|reserved)$")
    pricePerHour: float = Field(ge=0)


class PlannedDisruption(_Out):
    """One command a disruption pass would take."""

    method: str = Field(
        pattern="^(Emptiness|Drift|MultiNodeConsolidation|SingleNodeConsolidation)$"
    )
    reason: str = Field(pattern="^(Empty|Drifted|Underutilized)$")
    candidates: list[str] = Field(min_length=1, description="Node names")
    replacements: list[PlannedReplacement]
    savingsPerHour: float = Field(description="Candidates' price minus replacements', USD")
    detail: str = Field(default="", description="Why (the drift found, for Drift)")


class Unconsolidatable(_Out):
    """A node no command touches, and what keeps it."""

    node: str
    reason: str


class VerdictEntry(_Out):
    """One change of a node's disruption verdict (``controllers.disruption.history``)."""

    atSeconds: float = Field(description="Run time of the pass, seconds")
    passNumber: int = Field(ge=1, description="The pass that recorded it, from 1")
    outcome: str = Field(pattern="^(kept|chosen|disrupted|expired)$")
    method: str = Field(
        pattern="^(Candidates|Emptiness|Drift|MultiNodeConsolidation|SingleNodeConsolidation"
        "|Expiration)$",
        description="The method that gave the verdict; Candidates for candidate selection, "
        "Expiration for an expiry",
    )
    kind: str = Field(description="The verdict's kind (kept only; empty otherwise)")
    fields: dict[str, Any] = Field(
        description="The verdict's fields its kind sets (pdb, pod, pool, seconds, ...)"
    )
    action: str = Field(pattern="^(|Delete|Replace)$")
    replacements: list[str] = Field(description="instanceType/zone/capacityType, expected")
    message: str = Field(description="The entry in English")


class NodeVerdictHistory(_Out):
    """A node's verdict changes, oldest first (the most recent ones when ``omitted`` > 0)."""

    omitted: int = Field(ge=0, description="Older changes dropped to bound memory")
    entries: list[VerdictEntry]


class DisruptionPlan(_Out):
    """``joiner disrupt -o json``: the commands successive disruption passes would take."""

    apiVersion: str = "joiner.dev/v1alpha1"
    kind: str = "DisruptionPlan"
    region: str
    commands: list[PlannedDisruption]
    unconsolidatable: list[Unconsolidatable]
    savingsPerHour: float = Field(description="Summed over the commands, USD")
    costPerHourBefore: float = Field(ge=0)
    costPerHourAfter: float = Field(ge=0)
    staticDeletions: list[StaticDeletion] = Field(
        default_factory=list,
        description="NodeClaims of static NodePools (spec.replicas, the StaticCapacity "
        "feature gate) running more than their replicas, in the order Karpenter's "
        "scale-down deletes them; costPerHourAfter leaves their price out",
    )
    priceSource: PriceSource = Field(default="regional", description=PRICE_SOURCE_DESCRIPTION)
    pricesAt: str | None = Field(default=None, description=PRICES_AT_DESCRIPTION)
    nominated: list[Nominated] = Field(
        default_factory=list,
        description="Pending pods already nominated by preemption: not provisioned for",
    )
    warnings: list[str] = Field(default_factory=list)
    explain: dict[str, NodeVerdictHistory] | None = Field(
        default=None, description="--explain: the verdict history of the nodes asked for"
    )


class PeakWindow(_Out):
    """``spec.report.windows``: the pods (priority >= 0) created in one named window."""

    pods: int = Field(ge=0)
    pendingSeconds: PendingSeconds


class SummaryCapacityReservation(_Out):
    """A capacity reservation of the simulated account at the end of the run: its
    EC2NodeClass ``status.capacityReservations`` entry (Karpenter-AWS's fields) and use."""

    id: str
    instanceType: str
    availabilityZone: str
    ownerID: str
    instanceMatchCriteria: str
    reservationType: str
    state: str
    endTimeSeconds: float | None = None
    instanceCount: int = Field(ge=1)
    availableInstanceCount: int = Field(ge=0)
    peakInstancesRunning: int = Field(ge=0)
    selectedBy: list[str] = Field(description="EC2NodeClasses whose terms select it")


class PolicyRun(_Out):
    """One policy's run in the single-run shape (``policies`` of a comparison)."""

    apiVersion: str
    kind: str = "SimulationSummary"
    scenario: str
    region: str
    seed: int
    durationSeconds: float = Field(gt=0)
    nodes: list[SummaryNode]
    cost: SummaryCost
    pods: SummaryPods
    nodeHours: NodeHours
    provisioning: SummaryProvisioning
    policy: SummaryPolicy
    interruptions: Interruptions
    disruptions: Disruptions
    timeline: list[TimelineEntry]
    warnings: list[str]
    windows: dict[str, PeakWindow] | None = Field(
        default=None, description="spec.report.windows, keyed by window name"
    )
    capacityReservations: list[SummaryCapacityReservation] | None = Field(
        default=None, description="spec.cloud.capacityReservations and their use"
    )
    explain: dict[str, NodeVerdictHistory] | None = Field(
        default=None, description="--explain: the verdict history of the nodes asked for"
    )


class SimulationSummary(PolicyRun):
    """``summary.json`` written by ``joiner simulate``. With ``spec.compare``, the first
    simulated policy's run (the as-run record when nothing is simulated) is the top level and
    ``policies`` holds every policy's block, the as-run record's included."""

    policies: dict[str, PolicyRun] | None = Field(
        default=None, description="spec.compare: each policy's run, keyed by policy name"
    )


class AdvicePool(_Out):
    """The nodes a NodePool runs in one capacity pool, and that pool's risk."""

    pool: str = Field(description="instanceType/zone")
    capacityType: str = Field(pattern="^(spot|on-demand|reserved)$")
    nodes: int = Field(ge=1)
    pricePerHour: float = Field(ge=0, description="Per node, at launch, USD")
    capacityScore: float | None = Field(description="At the pool's last launch (1-10)")
    reclaimsPerMonth: float = Field(ge=0, description="Expected nodes reclaimed per month")
    nodesPerEvent: float = Field(ge=0, description="Expected nodes one reclaim event takes")


class NodePoolAdvice(_Out):
    """One NodePool's Spot risk at the manifests' load."""

    name: str
    spotInstanceTypes: int = Field(ge=0, description="Types that can launch as Spot")
    spotPools: int = Field(ge=0, description="Spot pools (type x zone) it can use")
    nodes: int = Field(
        ge=0, description="Nodes it runs (runningNodes) plus those one provisioning round launches"
    )
    runningNodes: int = Field(default=0, ge=0, description="Nodes it already runs (a dump's)")
    spotNodes: int = Field(ge=0)
    pods: int = Field(ge=0)
    largestPoolShare: float = Field(ge=0, le=1, description="Largest share of nodes in one pool")
    largestPool: str | None
    expectedReclaimsPerMonth: float = Field(ge=0, description="Nodes reclaimed per month")
    expectedReclaimEventsPerMonth: float = Field(
        ge=0, description="Pool events per month that take at least one node"
    )
    podsDisruptedPerMonth: float = Field(ge=0)
    costPerMonth: float = Field(ge=0, description="USD, 720 hours at launch prices")
    pools: list[AdvicePool]
    findings: list[str]


class SpotAdvice(_Out):
    """``joiner advise -o json``: the Spot risk of each NodePool."""

    apiVersion: str = "joiner.dev/v1alpha1"
    kind: str = "SpotAdvice"
    region: str
    seed: int
    priceEstimated: bool = Field(description="Some prices are estimated (see priceNote)")
    priceNote: str
    nodePools: list[NodePoolAdvice]
    warnings: list[str] = Field(default_factory=list)


class SweepStat(_Out):
    """One metric of a sweep group across its usable seeds (null when none is usable)."""

    median: float | None
    p5: float | None
    p95: float | None


class SweepGroup(_Out):
    """One (variant, policy, interruption-rate multiplier) of a sweep."""

    variant: str
    policy: str
    interruptionRateMultiplier: float
    seeds: int = Field(ge=0, description="Cells whose figures are usable")
    failed: int = Field(ge=0, description="Cells counted failed (see failures)")
    metrics: dict[str, SweepStat] = Field(
        description="cost (USD), pendingP95Seconds, podsLost, reclaims"
    )
    pareto: bool


class SweepFailure(_Out):
    """Failed cells that share one reason."""

    reason: str = Field(
        description="The error the cell ran into (a traceback's last line), or why its row "
        "cannot be used (summary digest, metrics not finite numbers)"
    )
    count: int = Field(ge=1)
    cells: list[str] = Field(description="Their cell ids, every one")


class SweepRecommendation(_Out):
    """The outcome of ``--objective``: the chosen variant and policy, or nulls."""

    objective: str
    variant: str | None
    policy: str | None
    value: float | None = Field(description="The chosen choice's median of the metric")
    nodePoolsYaml: str | None
    rejected: dict[str, str] = Field(description="Why each other choice was rejected")


class SweepReport(_Out):
    """``joiner sweep report -o json``: the statistics per group, the failed cells by
    reason and, with ``--objective``, the recommendation."""

    apiVersion: str = "joiner.dev/v1alpha1"
    kind: str = "SweepReport"
    sweep: str
    groups: list[SweepGroup]
    failures: list[SweepFailure] = Field(description="Largest group first")
    recommendation: SweepRecommendation | None
    html: str | None = Field(
        description="Where the HTML report was written (null: none, for results read from "
        "standard input without --html)"
    )
