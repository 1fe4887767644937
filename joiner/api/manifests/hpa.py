"""``autoscaling/v2`` HorizontalPodAutoscaler objects: the model, the API server's defaults
and validation, and the frozen value the simulation's HPA controller (``joiner.sim.hpa``)
runs.

Upstream rules reproduced here (k8s.io/kubernetes):

- defaulting, ``pkg/apis/autoscaling/v2/defaults.go``: ``minReplicas`` 1; no ``metrics``: CPU
  ``Utilization`` 80 %; a ``behavior`` that is set has its missing parts filled
  (``GenerateHPAScaleUpRules``: window 0 s, policies 4 Pods and 100 Percent per 15 s, ``Max``;
  ``GenerateHPAScaleDownRules``: window unset, so the controller's 300 s
  ``--horizontal-pod-autoscaler-downscale-stabilization``; 100 Percent per 15 s, ``Max``); an
  absent ``behavior`` stays absent (the controller's older rules apply, ``joiner.sim.hpa``);
- validation, ``pkg/apis/autoscaling/validation``: ``maxReplicas`` >= 1, ``minReplicas`` >= 1
  (0 only behind the alpha ``HPAScaleToZero`` gate, not modelled) and <= ``maxReplicas``; a
  metric's ``type`` names the one source set; a ``Pods`` metric takes an ``AverageValue``
  target, ``Object`` and ``External`` take ``Value`` or ``AverageValue``, ``Resource`` takes
  ``Utilization`` or ``AverageValue``; policies' ``value`` > 0 and ``periodSeconds`` in
  (0, 1800]; ``stabilizationWindowSeconds`` in [0, 3600].

Where a metric's value comes from in a simulation (the scenario's traffic trace) is
``joiner.sim.hpa``'s business; here a metric is only classified: ``rate`` (Pods, Object,
External: any custom or external metric reads the request rate) or ``cpu`` (Resource cpu).
Resource memory and ContainerResource metrics are not modelled: the HPA keeps its other
metrics and the object draws a warning naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, StrictInt

from joiner.api import objects as o
from joiner.api.errors import InputError
from joiner.api.manifests import models as m
from joiner.api.quantity import parse_quantity

#: Targets an HPA may scale that Joiner runs (the scale subresource of these kinds).
SCALABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")
#: kube-controller-manager ``--horizontal-pod-autoscaler-tolerance``.
DEFAULT_TOLERANCE = 0.1
#: ``autoscaling.DefaultCPUUtilization``: the metric of an HPA that lists none.
DEFAULT_CPU_UTILIZATION = 80


class _Ref(m.Strict):
    apiVersion: str = ""
    kind: str = Field(min_length=1)
    name: str = Field(min_length=1)


class _Target(m.Strict):
    type: Literal["Utilization", "Value", "AverageValue"]
    value: m.Scalar | None = None
    averageValue: m.Scalar | None = None
    averageUtilization: StrictInt | None = Field(default=None, ge=1)


class _Identifier(m.Strict):
    name: str = Field(min_length=1)
    selector: Any = None


class _Resource(m.Strict):
    name: str = Field(min_length=1)
    target: _Target


class _ContainerResource(m.Strict):
    name: str = Field(min_length=1)
    container: str = Field(min_length=1)
    target: _Target


class _Pods(m.Strict):
    metric: _Identifier
    target: _Target


class _Object(m.Strict):
    describedObject: _Ref
    metric: _Identifier
    target: _Target


class _External(m.Strict):
    metric: _Identifier
    target: _Target


class _Metric(m.Strict):
    type: Literal["Resource", "ContainerResource", "Pods", "Object", "External"]
    resource: _Resource | None = None
    containerResource: _ContainerResource | None = None
    pods: _Pods | None = None
    object_: _Object | None = Field(default=None, alias="object")
    external: _External | None = None


class _Policy(m.Strict):
    type: Literal["Pods", "Percent"]
    value: StrictInt = Field(gt=0)
    periodSeconds: StrictInt = Field(gt=0, le=1800)


class _Rules(m.Strict):
    stabilizationWindowSeconds: StrictInt | None = Field(default=None, ge=0, le=3600)
    selectPolicy: Literal["Max", "Min", "Disabled"] | None = None
    policies: list[_Policy] | None = None
    tolerance: m.Scalar | None = Field(
        default=None, description="alpha (HPAConfigurableTolerance): this direction's tolerance"
    )


class _Behavior(m.Strict):
    scaleUp: _Rules | None = None
    scaleDown: _Rules | None = None


class _Spec(m.Strict):
    scaleTargetRef: _Ref
    minReplicas: StrictInt | None = Field(default=None, ge=0, le=m.MAX_REPLICAS)
    maxReplicas: StrictInt = Field(ge=1, le=m.MAX_REPLICAS)
    metrics: list[_Metric] | None = None
    behavior: _Behavior | None = None


class HorizontalPodAutoscalerModel(m.Strict):
    """``autoscaling/v2`` HorizontalPodAutoscaler (``status`` is read and ignored)."""

    apiVersion: str
    kind: Literal["HorizontalPodAutoscaler"]
    metadata: m.Metadata
    spec: _Spec
    status: Any = None


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    """``HPAScalingPolicy``: at most ``value`` pods (``Pods``) or percent (``Percent``) of
    change within any ``period_s``."""

    type: str
    value: int
    period_s: int


@dataclass(frozen=True, slots=True)
class ScalingRules:
    """``HPAScalingRules`` after defaulting. ``stabilization_s`` None: the controller's
    ``--horizontal-pod-autoscaler-downscale-stabilization`` (scale-down only);
    ``tolerance`` None: the controller's ``--horizontal-pod-autoscaler-tolerance``."""

    stabilization_s: int | None
    select_policy: str
    policies: tuple[ScalingPolicy, ...]
    tolerance: float | None = None


@dataclass(frozen=True, slots=True)
class Behavior:
    """``spec.behavior`` with both directions defaulted."""

    scale_up: ScalingRules
    scale_down: ScalingRules


#: ``GenerateHPAScaleUpRules`` and ``GenerateHPAScaleDownRules`` for a ``behavior`` with
#: nothing set.
DEFAULT_SCALE_UP = ScalingRules(
    0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))
)
DEFAULT_SCALE_DOWN = ScalingRules(None, "Max", (ScalingPolicy("Percent", 100, 15),))


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric of an HPA: ``source`` ``rate`` (Pods/Object/External: the request rate)
    or ``cpu`` (Resource cpu, in cores); ``target_type`` ``Value``, ``AverageValue`` or
    ``Utilization``; ``target`` in the metric's unit (cores for cpu ``AverageValue``, percent
    for ``Utilization``); ``field`` is where it is written (``spec.metrics[0]``)."""

    source: str
    target_type: str
    target: float
    field: str
    name: str
    #: The metric spec's ``type``: Resource, Pods, Object or External.
    type: str = "Resource"


@dataclass(frozen=True, slots=True)
class HorizontalPodAutoscaler:
    """An ``autoscaling/v2`` HPA after the API server's defaulting and validation."""

    namespace: str
    name: str
    target_kind: str
    target_name: str
    min_replicas: int
    max_replicas: int
    metrics: tuple[Metric, ...]
    behavior: Behavior | None
    source: o.Source

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def target_key(self) -> str:
        """The scaled workload's ``namespace/name``."""
        return f"{self.namespace}/{self.target_name}"


def _number(value: m.Scalar | None, field: str) -> float:
    if value is None:
        raise InputError("required for this target type", field=field)
    try:
        number = float(parse_quantity(str(value).strip()))
    except (ValueError, ArithmeticError) as exc:
        raise InputError(f"{value!r} is not a Kubernetes quantity", field=field) from exc
    if number <= 0:
        raise InputError(f"must be positive, got {value!r}", field=field)
    return number


_SOURCES = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object_",
    "External": "external",
}
_TARGETS = {
    "Resource": ("Utilization", "AverageValue"),
    "Pods": ("AverageValue",),
    "Object": ("Value", "AverageValue"),
    "External": ("Value", "AverageValue"),
    "ContainerResource": ("Utilization", "AverageValue"),
}


def _metric(spec: _Metric, field: str, warnings: list[str]) -> Metric | None:
    attr = _SOURCES[spec.type]
    set_ = [k for k, a in _SOURCES.items() if getattr(spec, a) is not None]
    if set_ != [spec.type]:
        name = attr.rstrip("_")
        raise InputError(
            f"type {spec.type} needs exactly the '{name}' source set (set: "
            f"{', '.join(_SOURCES[k].rstrip('_') for k in set_) or 'none'})",
            field=field,
        )
    source = getattr(spec, attr)
    target: _Target = source.target
    where = f"{field}.{attr.rstrip('_')}.target"
    if target.type not in _TARGETS[spec.type]:
        raise InputError(
            f"a {spec.type} metric takes a target of type {' or '.join(_TARGETS[spec.type])}, "
            f"not {target.type}",
            field=f"{where}.type",
        )
    if spec.type == "ContainerResource" or (spec.type == "Resource" and source.name != "cpu"):
        warnings.append(
            f"field {field}: {spec.type} metric {source.name!r} is not modelled (only cpu "
            "use, from the scenario's traffic and cpuPerRequest, and request-rate metrics "
            "are); the HPA scales on its other metrics"
        )
        return None
    kind = "cpu" if spec.type == "Resource" else "rate"
    name = source.name if spec.type == "Resource" else source.metric.name
    if target.type == "Utilization":
        if target.averageUtilization is None:
            raise InputError(
                "required for a Utilization target", field=f"{where}.averageUtilization"
            )
        return Metric(kind, "Utilization", float(target.averageUtilization), field, name, spec.type)
    key = "value" if target.type == "Value" else "averageValue"
    number = _number(getattr(target, key), f"{where}.{key}")
    if kind == "cpu":
        number = float(number)  # cores, as parse_quantity gives them ("500m" -> 0.5)
    return Metric(kind, target.type, number, field, name, spec.type)


def _rules(spec: _Rules | None, default: ScalingRules, field: str) -> ScalingRules:
    if spec is None:
        return default
    tolerance = None
    if spec.tolerance is not None:
        try:
            tolerance = float(parse_quantity(str(spec.tolerance).strip()))
        except (ValueError, ArithmeticError) as exc:
            raise InputError(
                f"{spec.tolerance!r} is not a Kubernetes quantity", field=f"{field}.tolerance"
            ) from exc
        if tolerance < 0:
            raise InputError(
                f"must not be negative, got {spec.tolerance!r}", field=f"{field}.tolerance"
            )
    policies = default.policies
    if spec.policies is not None:
        if not spec.policies:
            raise InputError("must list at least one policy", field=f"{field}.policies")
        policies = tuple(ScalingPolicy(p.type, p.value, p.periodSeconds) for p in spec.policies)
    return ScalingRules(
        spec.stabilizationWindowSeconds
        if spec.stabilizationWindowSeconds is not None
        else default.stabilization_s,
        spec.selectPolicy or default.select_policy,
        policies,
        tolerance,
    )


def horizontal_pod_autoscaler(
    model: HorizontalPodAutoscalerModel, file: str, obj: str, warnings: list[str]
) -> HorizontalPodAutoscaler:
    """The validated model, defaulted as the API server does (module docstring).

    ``warnings`` gets one line per metric that is not modelled (naming file, object, field).

    Raises:
        InputError: a rule of the module docstring's validation is broken (naming the field).
    """
    spec = model.spec
    ns = model.metadata.namespace or "default"
    minimum = 1 if spec.minReplicas is None else spec.minReplicas
    if minimum < 1:
        raise InputError(
            "must be at least 1 (0 needs the alpha HPAScaleToZero feature gate, not modelled)",
            field="spec.minReplicas",
        )
    if minimum > spec.maxReplicas:
        raise InputError(
            f"minReplicas {minimum} exceeds maxReplicas {spec.maxReplicas}",
            field="spec.minReplicas",
        )
    ref = spec.scaleTargetRef
    if ref.kind not in SCALABLE_KINDS:
        raise InputError(
            f"scales a {ref.kind}; Joiner runs the scale subresource of "
            f"{', '.join(SCALABLE_KINDS)} only",
            field="spec.scaleTargetRef.kind",
        )
    notes: list[str] = []
    if spec.metrics is None:
        metrics: list[Metric] = [
            Metric("cpu", "Utilization", float(DEFAULT_CPU_UTILIZATION), "spec.metrics", "cpu")
        ]
    else:
        found = [_metric(x, f"spec.metrics[{i}]", notes) for i, x in enumerate(spec.metrics)]
        metrics = [x for x in found if x is not None]
    warnings.extend(f"{file}: {obj}: {n}" for n in notes)
    behavior = None
    if spec.behavior is not None:
        behavior = Behavior(
            _rules(spec.behavior.scaleUp, DEFAULT_SCALE_UP, "spec.behavior.scaleUp"),
            _rules(spec.behavior.scaleDown, DEFAULT_SCALE_DOWN, "spec.behavior.scaleDown"),
        )
    return HorizontalPodAutoscaler(
        namespace=ns,
        name=model.metadata.name,
        target_kind=ref.kind,
        target_name=ref.name,
        min_replicas=minimum,
        max_replicas=spec.maxReplicas,
        metrics=tuple(metrics),
        behavior=behavior,
        source=o.Source(
            file, "HorizontalPodAutoscaler", f"{ns}/{model.metadata.name}", model.apiVersion
        ),
    )


def other_version(api_version: str, file: str, obj: str) -> str:
    """The warning for an HPA of an older API version (not read)."""
    return (
        f"{file}: {obj}: {api_version} HorizontalPodAutoscaler is not read (Joiner reads "
        "autoscaling/v2, which the API server serves every HPA as): the workload keeps its "
        "replicas; `kubectl get hpa -o yaml` gives the v2 form"
    )
