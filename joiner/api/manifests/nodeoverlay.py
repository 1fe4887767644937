"""Karpenter's NodeOverlay (``karpenter.sh/v1alpha1``) read from a manifest, with the API
server's checks.

``api.openapi`` already applies the vendored CRD's structural rules (the ``price`` and
``priceAdjustment`` patterns, ``weight`` 1-10000, the operator enum); this module applies
its CEL rules (``x-kubernetes-validations``, Karpenter ``pkg/apis/v1alpha1/nodeoverlay.go``
markers): ``price`` and ``priceAdjustment`` are exclusive; ``In`` and ``NotIn`` need values;
``Gt``/``Lt``/``Gte``/``Lte`` need one non-negative integer; a requirement's key may not be in
the ``karpenter.sh`` domain (but ``karpenter.sh/capacity-type`` and ``karpenter.sh/nodepool``)
nor ``kubernetes.io/hostname`` (the CRD's rules on ``key``); ``capacity`` may not name
``cpu``, ``memory``, ``ephemeral-storage`` or ``pods`` (also ``nodeoverlay_validation.go``
``validateCapacity``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictInt, model_validator

from joiner.api.errors import InputError
from joiner.api.manifests import convert
from joiner.api.manifests import models as m
from joiner.api.overlays import NodeOverlay
from joiner.api.requirements import Requirement, Requirements

#: Karpenter ``pkg/apis/v1/labels.go`` ``WellKnownResources``: a capacity overlay may not
#: change them.
RESTRICTED_CAPACITY = ("cpu", "memory", "ephemeral-storage", "pods")
_NUMERIC = ("Gt", "Lt", "Gte", "Lte")
#: The ``karpenter.sh`` keys a requirement may name (the CRD's rule on ``key``).
_KARPENTER_KEYS = ("karpenter.sh/capacity-type", "karpenter.sh/nodepool")


def _key_problem(key: str) -> str | None:
    """The CRD's CEL rules on a requirement's ``key``."""
    if key not in _KARPENTER_KEYS and key.split("/", 1)[0].endswith("karpenter.sh"):
        return 'label domain "karpenter.sh" is restricted'
    if key == "kubernetes.io/hostname":
        return 'label "kubernetes.io/hostname" is restricted'
    return None


class OverlayRequirement(m.Strict):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class NodeOverlaySpec(m.Strict):
    requirements: list[OverlayRequirement] = Field(default_factory=list)
    priceAdjustment: str | None = None
    price: str | None = None
    capacity: dict[str, Any] | None = None
    weight: StrictInt | None = None

    @model_validator(mode="after")
    def _exclusive_price(self) -> NodeOverlaySpec:
        if self.price is not None and self.priceAdjustment is not None:
            raise ValueError("cannot set both 'price' and 'priceAdjustment'")
        return self


class NodeOverlayModel(m.Model):
    apiVersion: str
    kind: Literal["NodeOverlay"]
    metadata: m.Metadata
    spec: NodeOverlaySpec


def _requirement(r: OverlayRequirement, field: str) -> Requirement:
    """One requirement, with the CRD's CEL rules on its key and values."""
    problem = _key_problem(r.key)
    if problem is not None:
        raise InputError(f"{problem}: {r.key!r}", field=f"{field}.key")
    if r.operator in ("In", "NotIn") and not r.values:
        raise InputError(
            f"requirements with operator '{r.operator}' must have a value defined",
            field=f"{field}.values",
        )
    if r.operator in _NUMERIC and (len(r.values) != 1 or not r.values[0].isdigit()):
        raise InputError(
            "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive "
            f"integer value, not {r.values}",
            field=f"{field}.values",
        )
    try:
        return Requirement.new(r.key, r.operator, r.values)
    except InputError as exc:
        raise exc.located(field_prefix=field) from exc


def _capacity(raw: dict[str, Any] | None) -> tuple[tuple[str, int], ...]:
    if not raw:
        return ()
    for name in sorted(raw):
        if name in RESTRICTED_CAPACITY:
            raise InputError(
                f"invalid resource restricted: {name!r} (a NodeOverlay adds extended "
                "resources only)",
                field=f"spec.capacity.{name}",
            )
    return convert.resources(raw, "spec.capacity")


def node_overlay(parsed: NodeOverlayModel, file: str, obj: str) -> NodeOverlay:
    """The overlay a parsed manifest describes.

    Raises:
        InputError: a CEL rule of the CRD fails (see the module docstring), naming the field.
    """
    spec = parsed.spec
    try:
        reqs = [_requirement(r, f"spec.requirements[{i}]") for i, r in enumerate(spec.requirements)]
        capacity = _capacity(spec.capacity)
    except InputError as exc:
        raise exc.located(file=file, obj=obj) from exc
    return NodeOverlay(
        name=parsed.metadata.name,
        requirements=Requirements(reqs),
        price=spec.price,
        price_adjustment=spec.priceAdjustment,
        capacity=capacity,
        weight=spec.weight or 0,
        fields=tuple(sorted(spec.model_fields_set)),
        where=f"{file}: {obj}",
    )
