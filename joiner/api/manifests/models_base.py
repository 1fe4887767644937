"""The manifest models' base (``Model``, ``Strict``), metadata and the pieces Karpenter's and
core kinds share (node selector requirements, taints, tolerations). Re-exported by
``joiner.api.manifests.models``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

_CONFIG = ConfigDict(extra="ignore", coerce_numbers_to_str=True, populate_by_name=True)

Scalar = StrictStr | StrictInt | StrictFloat

#: Kubernetes caps replica counts at int32; Joiner simulates at most this many pods per workload.
MAX_REPLICAS = 100_000


class Model(BaseModel):
    """Base: ignore unknown fields, coerce numbers to strings where strings are expected."""

    model_config = _CONFIG


class Strict(Model):
    """Spec models: an unknown field is an error (like ``kubectl apply --validate=strict``),
    so a typo such as ``requirments`` cannot silently change what is launched. Real
    Kubernetes/Karpenter fields Joiner does not use are declared as ``Any``."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, populate_by_name=True)


class OwnerReference(Model):
    kind: str = ""
    name: str = ""
    controller: bool | None = None


class Metadata(Model):
    name: str = Field(min_length=1)
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    ownerReferences: list[OwnerReference] = Field(default_factory=list)
    deletionTimestamp: str | None = None


class TemplateMetadata(Model):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class NodeSelectorRequirement(Strict):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
    values: list[str] = Field(default_factory=list)
    minValues: int | None = Field(default=None, ge=1, le=50)


class Taint(Strict):
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    timeAdded: Any = None


class Toleration(Strict):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    tolerationSeconds: int | None = None
