"""The NodeOverlay rules (``cloudprovider.overlay``, Karpenter's ``nodeoverlay`` store):
price arithmetic, evaluation order, per-offering selection, capacity precedence and the
same-weight conflict, on instance types written by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from joiner.api import labels
from joiner.api.manifests import load_text
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.overlay import (
    CAPACITY_OVERLAY_APPLIED,
    PRICE_OVERLAY_APPLIED,
    Overlays,
    adjusted_price,
    order_by_weight,
    overlay_annotations,
)
from joiner.cloudprovider.types import InstanceType, Offering
from tests.manifests import EC2NODECLASS

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
---
"""


def _type(name: str) -> InstanceType:
    return InstanceType(
        name=name,
        requirements=Requirements(
            [
                Requirement.in_(labels.INSTANCE_TYPE, name),
                Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand"),
                Requirement.in_(labels.ZONE, "us-east-1a"),
            ]
        ),
        capacity={"cpu": 2000, "nvidia.com/gpu": 1},
        overhead={"cpu": 100},
        allocatable={"cpu": 1900, "nvidia.com/gpu": 1},
        offerings=(
            Offering("us-east-1a", "use1-az1", "spot", 0.04),
            Offering("us-east-1a", "use1-az1", "on-demand", 0.10),
        ),
    )


def _overlaid(overlays: str) -> tuple[InstanceType, Overlays]:
    m = load_text(POOL + EC2NODECLASS + overlays)
    store = Overlays(m.nodeoverlays)
    ((it,),) = store.apply_all([(m.nodepools[0], [_type("m5.large")])])
    return it, store


def _overlay(name: str, spec: str) -> str:
    return f"""
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {{name: {name}}}
spec:
  requirements: []
{spec}"""


@pytest.mark.parametrize(
    ("change", "expected"),
    [("0.5", 0.5), ("+0.05", 0.15), ("-0.05", 0.05), ("-0.5", 0.0), ("+10%", 0.11), ("-100%", 0.0)],
)
def test_adjusted_price(change, expected):
    assert adjusted_price(0.10, change) == pytest.approx(expected)


def test_order_is_heaviest_first_then_later_name_first():
    m = load_text(
        EC2NODECLASS
        + _overlay("a", "  weight: 5\n")
        + _overlay("b", "")
        + _overlay("c", "  weight: 5\n")
    )
    assert [o.name for o in order_by_weight(m.nodeoverlays)] == ["c", "a", "b"]


def test_a_capacity_type_requirement_selects_only_those_offerings():
    spec = '  price: "0.01"\n'
    it, _ = _overlaid(
        _overlay("spot", spec).replace(
            "requirements: []",
            "requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]",
        )
    )
    spot, od = it.offerings
    assert (spot.price_per_hour, spot.cost_per_hour) == (0.01, 0.04)
    assert (od.price_per_hour, od.catalog_price_per_hour) == (0.10, None)


def test_capacity_merges_per_resource_the_heavier_overlay_winning():
    it, store = _overlaid(
        _overlay("heavy", '  weight: 9\n  capacity: {example.com/fpga: "2"}\n')
        + _overlay("light", '  weight: 1\n  capacity: {example.com/fpga: "7", nvidia.com/gpu: 4}\n')
    )
    assert it.capacity["example.com/fpga"] == 2 and it.allocatable["example.com/fpga"] == 2
    assert it.capacity["nvidia.com/gpu"] == 4 and it.allocatable["nvidia.com/gpu"] == 4
    assert it.allocatable["cpu"] == 1900 and store.conflicting == ()


def test_same_weight_capacity_on_the_same_resource_conflicts():
    it, store = _overlaid(
        _overlay("x", '  capacity: {example.com/fpga: "1"}\n')
        + _overlay("y", '  capacity: {example.com/fpga: "3"}\n')
    )
    assert [o.name for o in store.conflicting] == ["x"]
    assert it.capacity["example.com/fpga"] == 3
    assert "NodeOverlay/x" in store.warnings()[0]


def test_an_unselected_type_is_returned_unchanged():
    it, _ = _overlaid(
        _overlay("other", '  price: "0.01"\n').replace(
            "requirements: []",
            "requirements: [{key: node.kubernetes.io/instance-type, operator: In, "
            "values: [c5.large]}]",
        )
    )
    assert [o.price_per_hour for o in it.offerings] == [0.04, 0.10]


def test_a_nodeclaim_of_overlaid_types_carries_karpenter_s_annotations():
    priced, _ = _overlaid(_overlay("p", '  price: "0.01"\n'))
    sized, _ = _overlaid(_overlay("c", '  capacity: {example.com/fpga: "1"}\n'))
    plain = _type("m5.large")
    reqs = Requirements()
    assert overlay_annotations([priced], reqs) == {PRICE_OVERLAY_APPLIED: "true"}
    assert overlay_annotations([sized, plain], reqs) == {CAPACITY_OVERLAY_APPLIED: "true"}
    assert overlay_annotations([plain], reqs) == {}


def test_a_repriced_list_gets_the_stored_adjustment_on_its_new_prices():
    m = load_text(POOL + EC2NODECLASS + _overlay("half", '  priceAdjustment: "-50%"\n'))
    store = Overlays(m.nodeoverlays)
    pool = m.nodepools[0]
    ((first,),) = store.apply_all([(pool, [_type("m5.large")])])
    dearer = _type("m5.large")
    dearer = replace(
        dearer, offerings=tuple(replace(o, price_per_hour=1.0) for o in dearer.offerings)
    )
    ((again,),) = store.apply_all([(pool, [dearer])])
    assert [o.price_per_hour for o in first.offerings] == [0.02, 0.05]
    assert [o.price_per_hour for o in again.offerings] == [0.5, 0.5]
    assert [o.cost_per_hour for o in again.offerings] == [1.0, 1.0]
