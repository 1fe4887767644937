"""``packing: cost-optimal`` keeps Karpenter-AWS's exotic-type rule: metal, GPU and
accelerator types only for pods nothing else takes (``instancefilter.ExoticInstanceTypeFilter``),
even where they are the cheapest per pod."""

from __future__ import annotations

from dataclasses import replace

from joiner.api import labels
from joiner.api.requirements import Requirement
from joiner.cloudprovider.instancetype import AWS_NEURON, NVIDIA_GPU
from joiner.cloudprovider.launch import is_exotic
from joiner.cloudprovider.reservations import CapacityReservation, with_reserved_offerings
from joiner.cloudprovider.types import InstanceType
from joiner.scheduling import NodePoolTemplate, PodRequest, SchedulingInput
from joiner.scheduling.costopt import CostOptimalScheduler, plan_cost
from joiner.scheduling.types import NewNodeClaim, SchedulingResult
from joiner.testing.builders import GIB, make_instance_type, make_nodepool, make_pod_template

ZONE = ("us-east-1a", "on-demand")


def _catalog() -> tuple[InstanceType, ...]:
    """c types at $0.04 per vCPU, the largest (224 vCPU) larger than any exotic one, as
    u7i types are on EC2; a Neuron type, a GPU type and a metal type far cheaper per vCPU
    (as inf2.48xlarge Spot is on the packaged catalog)."""
    generic = tuple(
        make_instance_type(
            f"c.{cpu}x", cpu_m=cpu * 1000, memory=cpu * 2 * GIB, prices={ZONE: cpu * 0.04}
        )
        for cpu in (2, 4, 8, 16, 32, 64, 224)
    )
    neuron = make_instance_type(
        "inf.48x", cpu_m=192_000, memory=768 * GIB, prices={ZONE: 1.0}, extra={AWS_NEURON: 12}
    )
    gpu = make_instance_type(
        "g.12x", cpu_m=48_000, memory=192 * GIB, prices={ZONE: 0.5}, extra={NVIDIA_GPU: 4}
    )
    metal = make_instance_type(
        "m.metal", cpu_m=96_000, memory=384 * GIB, prices={ZONE: 0.8}, pods=737
    )
    metal = replace(
        metal, requirements=metal.requirements.add(Requirement.in_(labels.INSTANCE_SIZE, "metal"))
    )
    return (*generic, neuron, gpu, metal)


def _solve(pods: tuple[PodRequest, ...]) -> SchedulingResult:
    inp = SchedulingInput(pods=pods, nodepools=(NodePoolTemplate(make_nodepool(), _catalog()),))
    return CostOptimalScheduler().solve(inp)


def _launched(claim: NewNodeClaim) -> InstanceType:
    """What the launch buys of a NodeClaim's options (cheapest first): the first not exotic,
    unless all are (the launch's exotic filter, ``launch.filter_exotic``)."""
    return next((t for t in claim.instance_types if not is_exotic(t)), claim.instance_types[0])


def test_the_exotic_types_are_what_a_free_choice_would_buy():
    """The premise: by price per vCPU the exotic types win ($0.005 to $0.010 against $0.04)."""

    def per_cpu(it: InstanceType) -> float:
        return it.offerings[0].price_per_hour / (it.capacity["cpu"] / 1000)

    exotic = [it for it in _catalog() if is_exotic(it)]
    assert [it.name for it in exotic] == ["inf.48x", "g.12x", "m.metal"]
    cheapest_generic = min(per_cpu(it) for it in _catalog() if not is_exotic(it))
    assert all(per_cpu(it) < cheapest_generic / 3 for it in exotic)


def test_cpu_pods_get_no_metal_or_accelerator_type_while_others_fit():
    """1,500 CPU pods (a launch above the size where the faithful plan is compared): every
    NodeClaim launches, and offers, only generic types."""
    template = make_pod_template(1000, GIB)
    pods = tuple(PodRequest(f"p{i:04d}", template, i) for i in range(1500))
    result = _solve(pods)
    assert not result.unschedulable
    assert sum(len(c.pods) for c in result.new_nodeclaims) == 1500
    for claim in result.new_nodeclaims:
        assert not any(is_exotic(t) for t in claim.instance_types), claim.instance_types[0].name
    # Priced as launched: generic c types only, 1,500 vCPU at $0.04 at least.
    assert plan_cost(result) >= 1500 * 0.04 - 1e-9


def test_small_cpu_launch_gets_no_exotic_type_either():
    """120 pods: the faithful plan is also computed and compared, and priced as launched
    (its NodeClaim may list an exotic type first; the launch leaves it out)."""
    template = make_pod_template(1000, GIB)
    result = _solve(tuple(PodRequest(f"p{i:03d}", template, i) for i in range(120)))
    assert not result.unschedulable
    assert not any(is_exotic(_launched(c)) for c in result.new_nodeclaims)
    assert plan_cost(result) == sum(
        _launched(c).offerings[0].price_per_hour for c in result.new_nodeclaims
    )


def test_a_gpu_pod_still_gets_a_gpu_type():
    """Nothing generic fits a pod asking for a GPU: its NodeClaim is the GPU type, next to
    the CPU pods' generic ones."""
    cpu = make_pod_template(1000, GIB)
    gpu = make_pod_template(4000, 16 * GIB, extra={NVIDIA_GPU: 1})
    pods = (
        *(PodRequest(f"p{i:04d}", cpu, i) for i in range(1500)),
        PodRequest("gpu-0", gpu, 1500),
    )
    result = _solve(pods)
    assert not result.unschedulable
    (holder,) = [c for c in result.new_nodeclaims if "gpu-0" in c.pods]
    assert [t.name for t in holder.instance_types] == ["g.12x"]
    others = [c for c in result.new_nodeclaims if "gpu-0" not in c.pods]
    assert others and not any(is_exotic(t) for c in others for t in c.instance_types)


def test_a_reservation_of_an_exotic_type_is_still_launched_into():
    """Karpenter-AWS filters reserved offerings before exotic types, so CPU pods do take a
    reserved GPU type the NodePool may use (two slots: two NodeClaims, the rest waits for
    the next pass, as Karpenter's strict reservation mode has it)."""
    types = tuple(
        with_reserved_offerings(
            list(_catalog()),
            [CapacityReservation("cr-1", "g.12x", "us-east-1a")],
            {"us-east-1a": "use1-az1"},
            {"cr-1": 2},
        )
    )
    pool = make_nodepool(
        requirements=[Requirement.in_(labels.CAPACITY_TYPE, "reserved", "on-demand")]
    )
    template = make_pod_template(1000, GIB)
    pods = tuple(PodRequest(f"p{i:03d}", template, i) for i in range(100))
    result = CostOptimalScheduler().solve(
        SchedulingInput(pods=pods, nodepools=(NodePoolTemplate(pool, types),))
    )
    assert [c.instance_types[0].name for c in result.new_nodeclaims] == ["g.12x", "g.12x"]
    for claim in result.new_nodeclaims:
        capacity_type = claim.requirements.get(labels.CAPACITY_TYPE)
        assert capacity_type is not None and capacity_type.values == {"reserved"}
