"""The manifest models' base (``Model``, ``Strict``), metadata and the pieces Karpenter's and
core kinds share (node selector requirements, taints, tolerations). Re-exported by
``joiner.api.manifests.models``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)

from joiner.api.k8snames import label_key_error, label_value_error
from joiner.api.limits import MAX_REPLICAS as MAX_REPLICAS
from joiner.api.openapi import FORMAT_RANGES, parse_date_time

_CONFIG = ConfigDict(extra="ignore", populate_by_name=True, defer_build=True)

Scalar = StrictStr | StrictInt | StrictFloat


def crd_string(expected: str, hint: str) -> BeforeValidator:
    """A validator for a field Karpenter's CRD types as a string: a number or a boolean is
    refused ("must be <expected>, not 10: Karpenter's CRD types it as a string<hint>"), as
    the API server refuses it, instead of being read as text."""

    def check(value: object) -> object:
        if isinstance(value, str):
            return value
        raise ValueError(
            f"must be {expected}, not {value!r}: Karpenter's CRD types it as a string{hint}"
        )

    return BeforeValidator(check)


#: A Karpenter duration field (``expireAfter``, ``consolidateAfter``): a string, as the CRD's
#: schema requires; ``720`` is rejected rather than read as 720 seconds.
Duration = Annotated[
    str,
    crd_string("a duration string such as 720h, 30m or Never", ", and a bare number has no unit"),
]


def _label_key(value: str) -> str:
    error = label_key_error(value)
    if error is not None:
        raise ValueError(error)
    return value


def _label_value(value: str) -> str:
    error = label_value_error(value)
    if error is not None:
        raise ValueError(error)
    return value


#: A label key (also a node selector requirement's, a taint's or a toleration's key):
#: ``IsQualifiedName`` (``k8s.io/apimachinery/pkg/util/validation``), as the API server's
#: ``ValidateLabelName`` and Karpenter's CRD patterns require.
LabelKey = Annotated[str, AfterValidator(_label_key)]
#: A label value: ``IsValidLabelValue``.
LabelValue = Annotated[str, AfterValidator(_label_value)]
#: A toleration's key: empty (with ``Exists``, every taint) or a label key.
TolerationKey = Annotated[str, AfterValidator(lambda v: v and _label_key(v))]
Labels = dict[LabelKey, LabelValue]

#: The largest ``format: int32`` and ``format: int64`` values an OpenAPI schema admits (the API
#: server refuses a larger integer in such a field).
INT32_MAX = FORMAT_RANGES["int32"][1]
INT64_MAX = FORMAT_RANGES["int64"][1]


class Model(BaseModel):
    """Base: ignore unknown fields; a value of the wrong JSON type is an error naming it.

    Counts and flags are ``StrictInt`` and ``StrictBool`` and strings are strings:
    ``replicas: "3"``, ``suspend: "yes"`` or a label value ``1`` (unquoted) is an error, as
    the API server's decoding rejects a string for an integer or boolean field and a number
    for a string one (``tests/api/test_strict_types.py`` walks the models for a lax
    ``int``, ``float`` or ``bool``). Quantities (``Scalar``) take numbers, as Kubernetes'
    ``resource.Quantity`` does."""

    model_config = _CONFIG


class Strict(Model):
    """Spec models: an unknown field is an error (like ``kubectl apply --validate=strict``),
    so a typo such as ``requirments`` cannot silently change what is launched. Real
    Kubernetes/Karpenter fields Joiner does not use are declared as ``Any``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class OwnerReference(Model):
    kind: str = ""
    name: str = ""
    controller: StrictBool | None = None


#: A ``metav1.Time`` field: an RFC 3339 string, refused otherwise (a number, ``soon``, an
#: empty string), as the API server refuses it (``openapi.parse_date_time``).
Rfc3339 = Annotated[datetime, BeforeValidator(parse_date_time)]


class Metadata(Model):
    name: str = Field(min_length=1)
    namespace: str | None = None
    labels: Labels = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    ownerReferences: list[OwnerReference] = Field(default_factory=list)
    deletionTimestamp: Rfc3339 | None = None


class TemplateMetadata(Model):
    labels: Labels = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class NodeSelectorRequirement(Strict):
    key: LabelKey = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
    values: list[str] = Field(default_factory=list)
    minValues: StrictInt | None = Field(default=None, ge=1, le=50)


class Taint(Strict):
    key: LabelKey = Field(min_length=1)
    value: LabelValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    timeAdded: Any = None


class Toleration(Strict):
    key: TolerationKey = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    tolerationSeconds: StrictInt | None = None
