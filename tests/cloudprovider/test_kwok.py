"""Karpenter-kwok's instance types and launch rule (cloudprovider/kwok.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joiner.api import labels
from joiner.api.errors import InputError
from joiner.api.featuregates import FeatureGates
from joiner.api.manifests import load_text
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.kwok import (
    INSTANCE_FAMILY,
    INSTANCE_SIZE,
    choose_kwok_offering,
    load_instance_types,
)
from joiner.operator.plan import build_plan


def _offer(price: float, ct: str, zone: str) -> dict[str, object]:
    return {
        "Price": price,
        "Requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ct]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
        ],
    }


def _types_file(tmp_path: Path) -> Path:
    path = tmp_path / "types.json"
    path.write_text(
        json.dumps(
            [
                {
                    "name": "m5.large",
                    "architecture": "amd64",
                    "operatingSystems": ["linux"],
                    "resources": {"cpu": "2", "memory": "8Gi"},
                    "offerings": [_offer(0.04, "spot", "z-b"), _offer(0.09, "on-demand", "z-a")],
                },
                {
                    "name": "c-4x-amd64",
                    "architecture": "amd64",
                    "operatingSystems": ["linux"],
                    "resources": {"cpu": "4", "memory": "8Gi", "pods": "30"},
                    "offerings": [_offer(0.04, "spot", "z-a"), _offer(0.2, "on-demand", "z-a")],
                },
            ]
        )
    )
    return path


def test_types_follow_kwok_defaults(tmp_path: Path) -> None:
    types = {t.name: t for t in load_instance_types(_types_file(tmp_path))}
    m5 = types["m5.large"]
    assert m5.capacity["pods"] == 110  # setDefaultOptions
    assert types["c-4x-amd64"].capacity["pods"] == 30
    assert m5.allocatable["cpu"] == 1900  # 100m kube-reserved
    assert m5.allocatable["memory"] == 8 * 1024**3 - 10 * 1024**2
    assert m5.label(INSTANCE_SIZE) == "large"
    assert m5.label(INSTANCE_FAMILY) == "m5"
    assert types["c-4x-amd64"].label(INSTANCE_SIZE) == "4"
    assert types["c-4x-amd64"].label(INSTANCE_FAMILY) == "c"
    assert m5.requirements[labels.ZONE].values == frozenset({"z-a", "z-b"})


def test_launch_is_lowest_price_ties_to_first_name(tmp_path: Path) -> None:
    types = load_instance_types(_types_file(tmp_path))
    it, offering = choose_kwok_offering(types, Requirements()) or (None, None)
    assert it is not None and offering is not None
    # Both cost 0.04 as spot: the first name wins (toNode keeps the first strictly cheaper).
    assert (it.name, offering.zone, offering.capacity_type) == ("c-4x-amd64", "z-a", "spot")
    od = Requirements([Requirement.in_(labels.CAPACITY_TYPE, "on-demand")])
    it, offering = choose_kwok_offering(types, od) or (None, None)
    assert it is not None and offering is not None
    assert (it.name, offering.price_per_hour) == ("m5.large", 0.09)


def test_malformed_file_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"name": "x", "offerings": [{"Price": 1, "Requirements": []}]}]))
    with pytest.raises(InputError, match="zone"):
        load_instance_types(bad)
    with pytest.raises(InputError, match="not found"):
        load_instance_types(tmp_path / "missing.json")


def _entry(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "name": "m5.large",
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": "2", "memory": "8Gi"},
        "offerings": [_offer(0.04, "spot", "z-b")],
    }
    return base | changes


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        # Go's encoding/json refuses a string or a boolean for a float64 price.
        (_entry(offerings=[_offer("0.04", "spot", "z-b")]), "[1].offerings[0].Price", "number"),  # type: ignore[arg-type]
        (_entry(offerings=[_offer(True, "spot", "z-b")]), "[1].offerings[0].Price", "number"),
        (_entry(offerings=[_offer(-1.0, "spot", "z-b")]), "[1].offerings[0].Price", "at least"),
        (_entry(architecture=64), "[1].architecture", "a string"),
        (_entry(operatingSystems="linux"), "[1].operatingSystems", "a list"),
        (_entry(resources={"cpu": True}), "[1].resources.cpu", "True"),
        # Resource names are checked as the API server checks a Node's capacity.
        (_entry(resources={"cpu": "2", "nvidia gpu": "1"}), "[1].resources.nvidia gpu", "name"),
        (_entry(resources={"cpu": "2", "gpu": "1"}), "[1].resources.gpu", "domain prefix"),
        ("m5.large", "[1]", "mapping"),
    ],
)
def test_a_malformed_entry_names_the_file_type_and_field(
    tmp_path: Path, entry: object, field: str, words: str
) -> None:
    bad = tmp_path / "bad.json"
    good = _entry(name="c5.large")
    bad.write_text(json.dumps([good, entry]))
    with pytest.raises(InputError) as err:
        load_instance_types(bad)
    assert (err.value.file, err.value.field) == (str(bad), field), str(err.value)
    assert words in str(err.value)
    if isinstance(entry, dict):
        assert err.value.obj == "instance type m5.large"


def test_a_well_formed_unknown_extended_resource_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "types.json"
    path.write_text(json.dumps([_entry(resources={"cpu": "2", "example.com/widget": 3})]))
    (it,) = load_instance_types(path)
    assert it.capacity["example.com/widget"] == 3


_MANIFESTS = """
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: default}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: "3"}}}]
"""


def test_plan_over_kwoknodeclass_uses_the_file(tmp_path: Path) -> None:
    m = load_text(_MANIFESTS)
    plan = build_plan(
        m, Catalog.load(), "us-east-1", kwok_types=load_instance_types(_types_file(tmp_path))
    )
    [claim] = plan.nodeClaims
    assert (claim.launch.instanceType, claim.launch.capacityType) == ("c-4x-amd64", "on-demand")
    with pytest.raises(InputError, match="--kwok-instance-types"):
        build_plan(m, Catalog.load(), "us-east-1")


def test_nodeclassref_kind_must_match_the_nodeclass() -> None:
    text = _MANIFESTS.replace("kind: KWOKNodeClass, name", "kind: EC2NodeClass, name").replace(
        "group: karpenter.kwok.sh,", "group: karpenter.k8s.aws,"
    )
    with pytest.raises(InputError, match="is a KWOKNodeClass"):
        load_text(text)


def test_kwok_labels_are_well_known(tmp_path: Path) -> None:
    """Karpenter-kwok registers its instance labels as well-known: a pod may require one
    its NodePool does not mention (regression: diff-karpenter case affinity-gt-cpu)."""
    text = _MANIFESTS.replace(
        "containers:",
        "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
        "{nodeSelectorTerms: [{matchExpressions: [{key: karpenter.kwok.sh/instance-cpu, "
        "operator: Gt, values: ['3']}]}]}}}\n  containers:",
    ).replace('cpu: "3"', 'cpu: "1"')
    plan = build_plan(
        load_text(text),
        Catalog.load(),
        "us-east-1",
        kwok_types=load_instance_types(_types_file(tmp_path)),
    )
    assert [c.launch.instanceType for c in plan.nodeClaims] == ["c-4x-amd64"]
    assert plan.unschedulable == []


_CHEAP_C4X = """
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: cheap-c4x}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [c-4x-amd64]}]
  price: "0.01"
"""


def test_launch_takes_the_file_prices_not_an_overlays(tmp_path: Path) -> None:
    """With the NodeOverlay gate on, an overlay that makes c-4x-amd64 the cheapest type
    (0.01 against m5.large's 0.09 on-demand) orders the NodeClaim's types, but
    Karpenter-kwok's ``toNode`` prices the launch from its own file: m5.large launches
    (regression: diff-karpenter case overlay-price; Joiner launched the overlaid type)."""
    text = _MANIFESTS.replace('cpu: "3"', 'cpu: "1"') + _CHEAP_C4X
    types = load_instance_types(_types_file(tmp_path))
    plain = build_plan(load_text(text), Catalog.load(), "us-east-1", kwok_types=types)
    overlaid = build_plan(
        load_text(text),
        Catalog.load(),
        "us-east-1",
        kwok_types=types,
        feature_gates=FeatureGates(node_overlay=True),
    )
    for plan in (plain, overlaid):
        [claim] = plan.nodeClaims
        assert (claim.launch.instanceType, claim.launch.capacityType) == ("m5.large", "on-demand")
    # the overlay did reach the scheduler: the NodeClaim's types are ordered by its price
    assert plain.nodeClaims[0].instanceTypes == ["m5.large", "c-4x-amd64"]
    assert overlaid.nodeClaims[0].instanceTypes == ["c-4x-amd64", "m5.large"]
