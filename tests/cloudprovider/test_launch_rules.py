"""The launch rules every CloudProvider adapter shares (Karpenter-AWS ``instance.go``
``filterInstanceTypes`` and core ``InstanceTypes.Truncate``): exotic filter, unwanted-Spot
filter, the cut to 60 types and its ``minValues`` check."""

from __future__ import annotations

import dataclasses

import pytest

from joiner.api import labels
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.instancetype import NVIDIA_GPU
from joiner.cloudprovider.launch import (
    MAX_LAUNCH_INSTANCE_TYPES,
    filter_exotic,
    filter_unwanted_spot,
    is_exotic,
    launch_candidates,
)
from joiner.cloudprovider.types import CreateError
from joiner.testing.builders import GIB, make_instance_type

BOTH = Requirements([Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand")])


def _pairs(*types):
    return [(it, o) for it in types for o in it.offerings]


def _sized(it, size):
    return dataclasses.replace(
        it, requirements=it.requirements.add(Requirement.in_(labels.INSTANCE_SIZE, size))
    )


def _names(pairs):
    return sorted({it.name for it, _ in pairs})


def test_gpu_and_metal_types_are_exotic():
    gpu = make_instance_type("g5.xlarge", cpu_m=4000, memory=16 * GIB, extra={NVIDIA_GPU: 1})
    metal = _sized(make_instance_type("c5.metal", cpu_m=96000, memory=192 * GIB), "metal-24xl")
    plain = _sized(make_instance_type("c5.large", cpu_m=2000, memory=4 * GIB), "large")
    assert is_exotic(gpu) and is_exotic(metal) and not is_exotic(plain)
    assert _names(filter_exotic(_pairs(gpu, metal, plain))) == ["c5.large"]
    # Nothing generic left: the exotic types stay (a GPU pod's claim offers only GPU types).
    assert _names(filter_exotic(_pairs(gpu, metal))) == ["c5.metal", "g5.xlarge"]


def test_a_type_with_any_spot_offering_above_the_cheapest_on_demand_is_dropped_whole():
    cheap = make_instance_type(
        "a.large",
        cpu_m=2000,
        memory=GIB,
        prices={("us-east-1a", "on-demand"): 0.10, ("us-east-1a", "spot"): 0.04},
    )
    # One of its two Spot pools costs more than a.large on demand: Karpenter's
    # SpotInstanceFilter rejects the type, not only that offering.
    uneven = make_instance_type(
        "b.large",
        cpu_m=2000,
        memory=GIB,
        prices={("us-east-1a", "spot"): 0.05, ("us-east-1b", "spot"): 0.12},
    )
    assert _names(filter_unwanted_spot(_pairs(cheap, uneven), BOTH)) == ["a.large"]
    # Only when the claim allows both capacity types.
    spot_only = Requirements([Requirement.in_(labels.CAPACITY_TYPE, "spot")])
    assert _names(filter_unwanted_spot(_pairs(cheap, uneven), spot_only)) == [
        "a.large",
        "b.large",
    ]


def test_the_cut_keeps_the_sixty_cheapest_types_by_their_cheapest_candidate():
    types = [
        make_instance_type(
            f"t{i:03d}.large",
            cpu_m=2000,
            memory=GIB,
            prices={
                ("us-east-1a", "spot"): 0.01 + i / 1000,
            },
        )
        for i in range(80)
    ]
    kept = launch_candidates(_pairs(*reversed(types)), BOTH)
    assert len(_names(kept)) == MAX_LAUNCH_INSTANCE_TYPES
    assert _names(kept) == [f"t{i:03d}.large" for i in range(MAX_LAUNCH_INSTANCE_TYPES)]
    assert kept[0][0].name == "t000.large"


def _families(n_cheap_family: int):
    """70 cheap c5 sizes, then one m5 and one r5 type that are dearer than all of them."""
    out = [
        make_instance_type(
            f"c5.s{i:02d}", cpu_m=2000, memory=GIB, prices={("us-east-1a", "spot"): 0.01 + i / 1e4}
        )
        for i in range(n_cheap_family)
    ]
    out += [
        make_instance_type(
            "m5.large", cpu_m=2000, memory=GIB, prices={("us-east-1a", "spot"): 1.0}
        ),
        make_instance_type(
            "r5.large", cpu_m=2000, memory=GIB, prices={("us-east-1a", "spot"): 1.1}
        ),
    ]
    return out


def test_the_cut_fails_the_launch_when_it_breaks_min_values():
    reqs = Requirements([Requirement.new(labels.INSTANCE_FAMILY, "Exists", min_values=3)])
    with pytest.raises(CreateError) as err:
        launch_candidates(_pairs(*_families(70)), reqs)
    assert err.value.reason == "MinValuesUnsatisfied"
    assert "karpenter.k8s.aws/instance-family has minValues 3" in str(err.value)
    # BestEffort relaxes it, as Karpenter's MIN_VALUES_POLICY does.
    kept = launch_candidates(_pairs(*_families(70)), reqs, min_values_policy="BestEffort")
    assert len(_names(kept)) == MAX_LAUNCH_INSTANCE_TYPES
    # With fewer cheap types the three families survive the cut and the launch goes on.
    assert {it.name.split(".")[0] for it, _ in launch_candidates(_pairs(*_families(20)), reqs)} == {
        "c5",
        "m5",
        "r5",
    }


def test_min_values_keeps_exotic_and_pricier_spot_types_in_the_request():
    gpu = make_instance_type(
        "g5.xlarge",
        cpu_m=4000,
        memory=16 * GIB,
        extra={NVIDIA_GPU: 1},
        prices={("us-east-1a", "spot"): 0.30, ("us-east-1a", "on-demand"): 1.0},
    )
    plain = make_instance_type(
        "c5.large",
        cpu_m=2000,
        memory=GIB,
        prices={("us-east-1a", "spot"): 0.03, ("us-east-1a", "on-demand"): 0.08},
    )
    plain_reqs = BOTH
    assert _names(launch_candidates(_pairs(gpu, plain), plain_reqs)) == ["c5.large"]
    flexible = BOTH.add(Requirement.new(labels.INSTANCE_TYPE, "Exists", min_values=2))
    assert _names(launch_candidates(_pairs(gpu, plain), flexible)) == ["c5.large", "g5.xlarge"]
