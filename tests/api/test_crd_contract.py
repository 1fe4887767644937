"""Joiner's models of Karpenter's v1 kinds against the vendored CRDs (``joiner/api/schemas``):
every field the CRD defines under ``spec`` is a field of the model (Joiner's spec models
refuse unknown fields, so a missing one would refuse a manifest Karpenter accepts), and every
field of the model is one the CRD defines, except those listed here. Whether each field has
an effect or a warning is ``tests/cli/test_schema_walk_karpenter.py``'s concern."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from joiner.api import openapi
from joiner.api.manifests import capacitybuffer
from joiner.api.manifests import models as m
from joiner.api.validation import model_in

KINDS = {
    "NodePool": ("karpenter.sh/v1", m.NodePoolSpec),
    "NodeClaim": ("karpenter.sh/v1", m.NodeClaimSpec),
    "EC2NodeClass": ("karpenter.k8s.aws/v1", m.EC2NodeClassSpec),
}

#: CRD fields a model does not declare: accepted and not modelled (none at present; an
#: entry needs a warning in ``joiner.api.manifests.unmodelled``).
NOT_MODELLED: dict[str, set[str]] = {"NodePool": set(), "NodeClaim": set(), "EC2NodeClass": set()}
#: Model fields the CRD of Karpenter v1.14 does not define: one selector-term model serves
#: subnets and security groups, and the CRD gives only security-group terms a name.
NOT_IN_CRD: dict[str, set[str]] = {
    "NodePool": set(),
    "NodeClaim": set(),
    "EC2NodeClass": {"subnetSelectorTerms.name"},
}


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {info.alias or name: info.annotation for name, info in model.model_fields.items()}


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    while "properties" not in schema and schema.get("type") == "array":
        schema = schema.get("items", {})
    props: dict[str, Any] = schema.get("properties", {})
    return props


def _walk(schema: dict[str, Any], model: type[BaseModel], path: str) -> tuple[set[str], set[str]]:
    """(CRD paths the model lacks, model paths the CRD lacks) under ``path``."""
    props, fields = _properties(schema), _fields(model)
    missing = {f"{path}{name}" for name in props if name not in fields}
    extra = {f"{path}{name}" for name in fields if name not in props}
    for name in props.keys() & fields.keys():
        inner = model_in(fields[name])
        if inner is not None:
            more_missing, more_extra = _walk(props[name], inner, f"{path}{name}.")
            missing |= more_missing
            extra |= more_extra
    return missing, extra


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_model_and_crd_agree(kind):
    api_version, model = KINDS[kind]
    schema = openapi.schema_for(api_version, kind)
    assert schema is not None
    missing, extra = _walk(schema.root["properties"]["spec"], model, "")
    assert missing == NOT_MODELLED[kind]
    assert extra == NOT_IN_CRD[kind]


def test_the_walk_sees_nested_fields():
    """The comparison reaches into lists of objects (requirements, selector terms)."""
    schema = openapi.schema_for("karpenter.k8s.aws/v1", "EC2NodeClass")
    assert schema is not None
    spec = schema.root["properties"]["spec"]
    _, extra = _walk(spec, m.EC2NodeClassSpec, "")
    assert "subnetSelectorTerms.name" in extra
    pruned = {**spec, "properties": {k: v for k, v in spec["properties"].items() if k != "role"}}
    assert "role" in _walk(pruned, m.EC2NodeClassSpec, "")[1]


#: Bounds of the models that differ from the CRD's, on purpose.
STRICTER = {
    "EC2NodeClass": {"kubelet.maxPods": "a node Joiner launches holds at least one pod"},
    "CapacityBuffer": {"replicas": "each is simulated as a pod: at most MAX_BUFFER_PODS"},
}


def _model_bounds(info: Any) -> tuple[Any, Any]:
    ge = next((c.ge for c in info.metadata if hasattr(c, "ge")), None)
    le = next((c.le for c in info.metadata if hasattr(c, "le")), None)
    return ge, le


def _crd_bounds(prop: dict[str, Any]) -> tuple[Any, Any]:
    high = openapi.FORMAT_RANGES.get(str(prop.get("format")), (None, None))[1]
    return prop.get("minimum"), prop.get("maximum", high)


def _bound_mismatches(schema: dict[str, Any], model: type[BaseModel], path: str) -> dict[str, Any]:
    """Field path -> (model's ge/le, CRD's minimum/maximum) wherever the model bounds a field
    and the two differ."""
    props = _properties(schema)
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        prop = props.get(info.alias or name)
        if prop is None:
            continue
        bounds = _model_bounds(info)
        if bounds != (None, None) and bounds != _crd_bounds(prop):
            out[f"{path}{info.alias or name}"] = (bounds, _crd_bounds(prop))
        inner = model_in(info.annotation)
        if inner is not None:
            out |= _bound_mismatches(prop, inner, f"{path}{info.alias or name}.")
    return out


@pytest.mark.parametrize(
    ("kind", "api_version", "model"),
    [
        *[(kind, v, model) for kind, (v, model) in sorted(KINDS.items())],
        ("CapacityBuffer", "autoscaling.x-k8s.io/v1beta1", capacitybuffer.CapacityBufferSpec),
    ],
)
def test_model_bounds_are_the_crds(kind, api_version, model):
    """The models' bounds are the vendored CRD's (the ones ``joiner install-crds``
    installs), so the two checks never disagree."""
    schema = openapi.schema_for(api_version, kind)
    assert schema is not None
    found = _bound_mismatches(schema.root["properties"]["spec"], model, "")
    assert set(found) == set(STRICTER.get(kind, {})), found


def test_the_bound_comparison_sees_a_difference():
    schema = openapi.schema_for("karpenter.sh/v1", "NodePool")
    assert schema is not None
    spec = schema.root["properties"]["spec"]
    changed = {**spec, "properties": {**spec["properties"], "weight": {"maximum": 99}}}
    assert "weight" in _bound_mismatches(changed, m.NodePoolSpec, "")
