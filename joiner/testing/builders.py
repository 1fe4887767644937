"""Small builders for domain values, so tests state only what matters to them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from joiner.api import labels, quantity
from joiner.api.objects import (
    NodeClassRef,
    NodePool,
    PodTemplate,
    Source,
    Taint,
    Toleration,
)
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.scheduling.types import ExistingNode, PodRequest

GIB = quantity.GIB


def make_pod_template(
    cpu_m: int = 1000,
    memory: int = GIB,
    *,
    node_selector: Mapping[str, str] | None = None,
    affinity: Sequence[Sequence[Requirement]] = (),
    tolerations: Sequence[Toleration] = (),
    extra: Mapping[str, int] | None = None,
) -> PodTemplate:
    """A pod template requesting ``cpu_m`` millicores and ``memory`` bytes (plus ``pods: 1``)."""
    requests = {quantity.CPU: cpu_m, quantity.MEMORY: memory, quantity.PODS: 1, **(extra or {})}
    return PodTemplate(
        requests=requests,
        node_selector=Requirements.from_labels(node_selector or {}),
        required_affinity=tuple(Requirements(term) for term in affinity),
        tolerations=tuple(tolerations),
    )


def make_existing_node(
    name: str,
    zone: str = "us-east-1a",
    *,
    cpu_m: int = 4000,
    memory: int = 16 * GIB,
    pods: int = 58,
) -> ExistingNode:
    """An initialized node of 4 CPU, 16 GiB and 58 pods allocatable in ``zone``, labelled
    with its hostname and zone, with ``cpu_m``/``memory``/``pods`` of it free."""
    return ExistingNode(
        name=name,
        labels=((labels.HOSTNAME, name), (labels.ZONE, zone)),
        taints=(),
        available={quantity.CPU: cpu_m, quantity.MEMORY: memory, quantity.PODS: pods},
        initialized=True,
        allocatable={quantity.CPU: 4000, quantity.MEMORY: 16 * GIB, quantity.PODS: 58},
    )


def make_pods(template: PodTemplate, count: int, prefix: str = "p") -> tuple[PodRequest, ...]:
    """``count`` pod requests sharing ``template``, uids ``<prefix>-000``..."""
    return tuple(PodRequest(f"{prefix}-{i:03d}", template, i) for i in range(count))


def make_nodepool(
    name: str = "default",
    *,
    requirements: Sequence[Requirement] = (),
    node_labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    limits: Mapping[str, int] | None = None,
    weight: int = 0,
) -> NodePool:
    """A v1 NodePool referencing EC2NodeClass ``default``."""
    label_reqs = [Requirement.in_(k, v) for k, v in sorted((node_labels or {}).items())]
    return NodePool(
        name=name,
        requirements=Requirements([*requirements, *label_reqs]),
        node_class_ref=NodeClassRef("karpenter.k8s.aws", "EC2NodeClass", "default"),
        source=Source("test.yaml", "NodePool", name, "karpenter.sh/v1"),
        labels=tuple(sorted((node_labels or {}).items())),
        taints=tuple(taints),
        limits=tuple(sorted((limits or {}).items())),
        weight=weight,
    )


def make_instance_type(
    name: str,
    *,
    cpu_m: int,
    memory: int,
    pods: int = 110,
    arch: str = "amd64",
    prices: Mapping[tuple[str, str], float] | None = None,
    extra: Mapping[str, int] | None = None,
    interruption_rate_per_hour: float = 0.0,
) -> InstanceType:
    """An instance type whose allocatable equals its capacity (no overhead).

    ``prices`` maps (zone, capacity type) to USD/hour; default: us-east-1a on-demand at
    cpu_m/1000 * 0.05 and spot at 40% of that.
    """
    if prices is None:
        od = cpu_m / 1000 * 0.05
        prices = {("us-east-1a", "on-demand"): od, ("us-east-1a", "spot"): od * 0.4}
    offerings = tuple(
        Offering(
            zone=z,
            zone_id=f"use1-az{ord(z[-1]) - ord('a') + 1}",
            capacity_type=ct,
            price_per_hour=p,
            interruption_rate_per_hour=interruption_rate_per_hour if ct == "spot" else 0.0,
        )
        for (z, ct), p in sorted(prices.items())
    )
    family = name.split(".")[0]
    capacity = {quantity.CPU: cpu_m, quantity.MEMORY: memory, quantity.PODS: pods, **(extra or {})}
    reqs = Requirements(
        [
            Requirement.in_(labels.INSTANCE_TYPE, name),
            Requirement.in_(labels.ARCH, arch),
            Requirement.in_(labels.OS, "linux"),
            Requirement.in_(labels.INSTANCE_FAMILY, family),
            Requirement.in_(labels.INSTANCE_CATEGORY, family[0]),
            Requirement.in_(labels.ZONE, *sorted({o.zone for o in offerings})),
            Requirement.in_(labels.CAPACITY_TYPE, *sorted({o.capacity_type for o in offerings})),
        ]
    )
    return InstanceType(
        name=name,
        requirements=reqs,
        capacity=capacity,
        overhead={},
        allocatable=dict(capacity),
        offerings=offerings,
    )
