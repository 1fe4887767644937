"""Karpenter's CapacityBuffer (``autoscaling.x-k8s.io/v1beta1``, read by Karpenter v1.14
behind its ``CapacityBuffer`` feature gate) and the ``v1`` PodTemplates a buffer may name.

Karpenter (``pkg/controllers/capacitybuffer`` ``resolveAndUpdateStatus``/``computeReplicas``
and ``pkg/controllers/provisioning/buffers.go``): a buffer's pod shape comes from
``podTemplateRef`` (a PodTemplate in its namespace) or ``scalableRef`` (a Deployment,
StatefulSet or ReplicaSet); its size is the larger of ``replicas`` and ``percentage`` of the
scalable workload's current replicas (rounded up, at least 1 when both are positive),
capped by ``limits`` (for each resource both the limits and the pod's requests name,
``floor(limit / request)``, the smallest); with neither ``replicas`` nor ``percentage``,
``limits`` alone sizes it. Each provisioning pass then adds that many *virtual* pods of the
shape (priority MinInt32, never bound) to the pending pods, so the cluster keeps room for
them; a node hosting virtual pods is not empty for the Emptiness method. A buffer whose
reference does not resolve is skipped (its ``ReadyForProvisioning`` condition is False).
``provisioningStrategy`` is not read by Karpenter either.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import Field, StrictInt, model_validator

from joiner.api import objects as o
from joiner.api import quantity
from joiner.api.errors import InputError
from joiner.api.manifests import models as m
from joiner.api.manifests import pods

# CapacityBuffer is re-exported: callers name it with the module that builds it.
from joiner.api.manifests.manifestset import CapacityBuffer as CapacityBuffer
from joiner.api.manifests.manifestset import ManifestSet

#: ``VirtualPodPriority``: the priority stamped on virtual buffer pods.
VIRTUAL_POD_PRIORITY = -(2**31)
SCALABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")


class LocalObjectRef(m.Strict):
    name: str = Field(min_length=1)


class ScalableRef(m.Strict):
    apiGroup: str = ""
    kind: str = Field(min_length=1)
    name: str = Field(min_length=1)


#: The most virtual pods Joiner simulates for one buffer (a modelling limit: each is a pod in
#: every provisioning pass; Karpenter itself accepts any int32).
MAX_BUFFER_PODS = 10_000


class CapacityBufferSpec(m.Strict):
    podTemplateRef: LocalObjectRef | None = None
    scalableRef: ScalableRef | None = None
    replicas: StrictInt | None = Field(
        default=None,
        ge=0,
        le=MAX_BUFFER_PODS,
        description=f"at most {MAX_BUFFER_PODS} (Joiner simulates each as a pod)",
    )
    #: The vendored CRD's bounds (int32, minimum 0; ``tests/api/test_crd_contract.py``).
    percentage: StrictInt | None = Field(default=None, ge=0, le=m.INT32_MAX)
    limits: dict[str, Any] | None = None
    provisioningStrategy: str | None = None

    @model_validator(mode="after")
    def _refs(self) -> CapacityBufferSpec:
        if self.podTemplateRef is not None and self.scalableRef is not None:
            raise ValueError("You must define either PodTemplateRef or ScalableRef, but not both")
        if self.podTemplateRef is not None and self.replicas is None and self.limits is None:
            raise ValueError("If podTemplateRef is set, replicas or limits must also be set")
        return self


class CapacityBufferModel(m.Model):
    apiVersion: str
    kind: Literal["CapacityBuffer"]
    metadata: m.Metadata
    spec: CapacityBufferSpec


class PodTemplateBody(m.Model):
    metadata: m.TemplateMetadata = Field(default_factory=m.TemplateMetadata)
    spec: m.PodSpec


class PodTemplateModel(m.Model):
    """``v1`` PodTemplate."""

    apiVersion: str
    kind: Literal["PodTemplate"]
    metadata: m.Metadata
    template: PodTemplateBody


def capacity_buffer(model: CapacityBufferModel, file: str) -> CapacityBuffer:
    """The validated model as a domain value (its template resolved later by ``resolve``).

    Raises:
        InputError: a ``limits`` quantity does not parse, or ``scalableRef`` names another kind.
    """
    ns = model.metadata.namespace or "default"
    spec = model.spec
    limits = None
    if spec.limits is not None:
        limits = quantity.parse_resources(spec.limits, field="spec.limits")
    scalable = None
    if spec.scalableRef is not None:
        if spec.scalableRef.kind not in SCALABLE_KINDS:
            raise InputError(
                f"kind {spec.scalableRef.kind!r} is not one Karpenter resolves "
                f"({', '.join(SCALABLE_KINDS)})",
                field="spec.scalableRef.kind",
            )
        scalable = f"{spec.scalableRef.kind}/{ns}/{spec.scalableRef.name}"
    return CapacityBuffer(
        namespace=ns,
        name=model.metadata.name,
        source=o.Source(file, "CapacityBuffer", model.metadata.name, model.apiVersion),
        template_ref=spec.podTemplateRef.name if spec.podTemplateRef else None,
        scalable=scalable,
        replicas=spec.replicas,
        percentage=spec.percentage,
        limits=limits,
    )


def pod_template(model: PodTemplateModel) -> tuple[str, o.PodTemplate]:
    """``(namespace/name, scheduling view)`` of a ``v1`` PodTemplate."""
    ns = model.metadata.namespace or "default"
    body = model.template
    t = pods.pod_template(
        body.spec, body.metadata.labels, "template.spec", ns, body.metadata.annotations
    )
    return f"{ns}/{model.metadata.name}", t


def resolve(out: ManifestSet) -> None:
    """Give each buffer its pod shape; a buffer whose reference is missing draws a warning
    and stays unresolved (Karpenter: ``ReadyForProvisioning`` False, skipped)."""
    workloads = {f"{w.kind}/{w.key}": w for w in (*out.workloads, *out.owned_workloads)}
    resolved = []
    for b in out.capacitybuffers:
        template: o.PodTemplate | None = None
        workload = None
        if b.template_ref is not None:
            template = out.podtemplates.get(f"{b.namespace}/{b.template_ref}")
            missing = f"PodTemplate {b.namespace}/{b.template_ref}"
        else:
            w = workloads.get(b.scalable or "")
            template = w.template if w is not None else None
            workload = w.key if w is not None else None
            missing = str(b.scalable)
        if template is None:
            out.warnings.append(
                f"{b.source.file}: {b.source.ref}: {missing} is not in the manifests; "
                "Karpenter skips the buffer until it exists"
            )
        else:
            template = replace(template, priority=VIRTUAL_POD_PRIORITY, volume_claims=())
        resolved.append(replace(b, template=template, workload=workload))
    out.capacitybuffers[:] = resolved
