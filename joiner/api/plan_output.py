"""The ``joiner plan -o json`` document (``docs/schemas/plan.schema.json``) and the base of
every output model (``api.outputs`` holds the others and re-exports these).

Its own module so that ``joiner plan`` builds only the few classes it writes, not the thirty
of the simulation summaries, disruption plans and advice (pydantic class creation is a
measurable part of the command's start-up).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Which Spot prices a dry run used: ``regional`` (the packaged regional estimate, one per
#: instance type for every zone) or ``spot-price-history`` (per capacity pool, from a Spot
#: price history, as ``joiner simulate`` prices them).
PriceSource = Literal["regional", "spot-price-history"]

PRICE_SOURCE_DESCRIPTION = (
    "Spot prices used: regional (one estimate per instance type for every zone) or "
    "spot-price-history (per instance type and zone, as joiner simulate prices them: the "
    "history's rows, other pools by the simulated market)"
)
PRICES_AT_DESCRIPTION = "The UTC instant the Spot price history was read at (ISO 8601)"


class OutputModel(BaseModel):
    """Base of Joiner's output documents: unknown keys are an error, and a model's
    validator and schema are built on first use (``defer_build``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Launch(OutputModel):
    """The simulated cloud's deterministic choice for a NodeClaim."""

    instanceType: str
    zone: str
    capacityType: str = Field(pattern="^(spot|on-demand|reserved)$")
    pricePerHour: float = Field(ge=0)
    tiedZones: list[str] = Field(
        default_factory=list,
        description=(
            "Every zone the NodeClaim's requirements allow where its instance type and "
            "capacity type cost pricePerHour too, zone among them, sorted: a cloud that "
            "picks at random among the cheapest offerings (Karpenter's kwok provider, "
            "CloudProvider.toNode, lo.Sample) may launch in any of them"
        ),
    )


class PlannedNodeClaim(OutputModel):
    """A NodeClaim the provisioning round would create."""

    name: str
    nodePool: str
    instanceTypes: list[str] = Field(min_length=1, max_length=60, description="Cheapest first")
    launch: Launch
    labels: dict[str, str]
    taints: list[str] = Field(description="key=value:Effect, as the node would carry them")
    pods: list[str] = Field(
        description=(
            "namespace/name of the pods Karpenter's round places here; those kube-scheduler "
            "binds here only once the node registers are placements with onNodeClaim"
        )
    )


class Placement(OutputModel):
    """A pending pod placed without a NodeClaim of its own: on an existing Node or a
    NodeClaim in flight, or (``onNodeClaim``) on one of this plan's NodeClaims. ``boundBy``
    ``kube-scheduler`` when kube-scheduler binds it, ``karpenter`` when Karpenter's
    scheduling simulation places it there. kube-scheduler binds a pod before Karpenter's
    round (a pod it has not tried yet, one Karpenter ignores, one pinned to its node by
    name) or, with ``afterLaunch``, after it: a pod the round left out, bound once this
    plan's NodeClaims register, as kube-scheduler counts topology domains over the nodes
    that exist (Karpenter over its NodePools' zones too) and a pod it binds then can
    satisfy another's pod affinity; to one of those NodeClaims (``onNodeClaim``) or to an
    existing node."""

    pod: str = Field(description="namespace/name")
    node: str = Field(description="a Node's name, or a NodeClaim's (in flight, or this plan's)")
    boundBy: Literal["kube-scheduler", "karpenter"] = "karpenter"
    onNodeClaim: bool = Field(
        default=False,
        description=(
            "node is one of this plan's NodeClaims: Karpenter's round left the pod out, and "
            "kube-scheduler binds it there once the node registers"
        ),
    )
    afterLaunch: bool = Field(
        default=False,
        description=(
            "Karpenter's round left the pod out, and kube-scheduler binds it to node once "
            "this plan's NodeClaims register (node is one of them when onNodeClaim)"
        ),
    )


class Unschedulable(OutputModel):
    """A pod no NodePool can serve, and why."""

    pod: str
    reason: str


class Nominated(OutputModel):
    """A pending pod kube-scheduler already nominated to a node by preemption
    (``status.nominatedNodeName``): it waits for its victims there, and Karpenter does not
    provision for it (``pkg/utils/pod/scheduling.go`` ``IsProvisionable``)."""

    pod: str = Field(description="namespace/name")
    node: str = Field(description="status.nominatedNodeName")


class Preemption(OutputModel):
    """A pending pod that fits an existing node only once lower-priority pods there are
    deleted: kube-scheduler's preemption nominates it to that node and deletes the victims."""

    pod: str = Field(description="The preemptor, namespace/name")
    node: str
    victims: list[str] = Field(
        min_length=1,
        description="namespace/name, most important first; the replacements their "
        "controllers create are pending pods of this plan",
    )
    notRecreated: list[str] = Field(
        default_factory=list,
        description="Victims without a controller: deleted, and no pod replaces them",
    )


class StaticDeletion(OutputModel):
    """A NodeClaim of a static NodePool that scale-down would delete (more running than
    ``spec.replicas``; Karpenter's static deprovisioning)."""

    nodePool: str
    nodeClaim: str = Field(
        description="The NodeClaim, or the Node when the manifests list no NodeClaim for it"
    )
    node: str | None = Field(default=None, description="Its Node, once registered")


class Plan(OutputModel):
    """``joiner plan -o json``: one provisioning round."""

    apiVersion: str = "joiner.dev/v1alpha1"
    kind: str = "Plan"
    region: str
    nodeClaims: list[PlannedNodeClaim]
    placements: list[Placement]
    unschedulable: list[Unschedulable]
    preemptions: list[Preemption] = Field(
        default_factory=list,
        description="Pending pods placed on an existing node by preempting lower-priority pods",
    )
    nominated: list[Nominated] = Field(
        default_factory=list,
        description="Pending pods already nominated by preemption: not provisioned for",
    )
    costPerHour: float = Field(ge=0, description="Sum of the new NodeClaims' launch prices")
    staticNodeClaims: list[PlannedNodeClaim] = Field(
        default_factory=list,
        description="NodeClaims static NodePools (spec.replicas, the StaticCapacity feature "
        "gate) need to reach their replicas: no pods, not in costPerHour",
    )
    staticDeletions: list[StaticDeletion] = Field(
        default_factory=list,
        description="NodeClaims of static NodePools running more than their replicas, in "
        "the order Karpenter's scale-down deletes them",
    )
    staticCostPerHour: float = Field(
        default=0.0, ge=0, description="Sum of the static NodeClaims' launch prices"
    )
    priceSource: PriceSource = Field(default="regional", description=PRICE_SOURCE_DESCRIPTION)
    pricesAt: str | None = Field(default=None, description=PRICES_AT_DESCRIPTION)
    warnings: list[str] = Field(default_factory=list)
