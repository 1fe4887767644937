"""``joiner convert``: legacy and v1beta1 Karpenter objects rewritten as ``karpenter.sh/v1``
NodePools and ``karpenter.k8s.aws/v1`` EC2NodeClasses, preserving behaviour.

* Defaulted requirements become explicit (the v1alpha5 webhook's os, arch, capacity type,
  instance category and generation; see ``legacy``).
* Removed fields become their successors: ``providerRef`` -> ``nodeClassRef``,
  ``consolidation.enabled`` -> ``WhenEmptyOrUnderutilized``, ``ttlSecondsAfterEmpty`` ->
  ``WhenEmpty`` + ``consolidateAfter``, ``ttlSecondsUntilExpired`` -> ``expireAfter``,
  ``kubeletConfiguration`` -> the EC2NodeClass ``kubelet``, flat selectors -> selector terms.
* What v1 requires and the input lacks (``role`` or ``instanceProfile``,
  ``amiSelectorTerms``) is filled with a value marked in the annotation
  ``joiner.dev/placeholders`` and reported as a warning.

Other documents (Deployments, Pods, ...) pass through unchanged, so the output is a complete
replacement that loads back through Joiner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from joiner.api import labels
from joiner.api.errors import InputError
from joiner.api.manifests import legacy
from joiner.api.manifests import models as m
from joiner.api.manifests.loader import load_files, load_text
from joiner.api.manifests.nulls import drop_nulls
from joiner.api.manifests.yamlio import read_documents
from joiner.api.requirements import Requirement

PLACEHOLDER_ANNOTATION = "joiner.dev/placeholders"
PLACEHOLDER_ROLE = "PLACEHOLDER-set-your-KarpenterNodeRole"
_FAMILY_ALIAS = {
    "AL2": "al2",
    "AL2023": "al2023",
    "Bottlerocket": "bottlerocket",
    "Windows2019": "windows2019",
    "Windows2022": "windows2022",
    "Windows2025": "windows2025",
    "Ubuntu": "al2",
}


@dataclass
class Conversion:
    """Converted documents in input order, and the warnings to print on stderr."""

    documents: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _requirement_dict(r: Requirement) -> dict[str, Any]:
    op = r.operator
    out: dict[str, Any] = {"key": r.key, "operator": op}
    if op in ("In", "NotIn"):
        out["values"] = sorted(r.values)
    elif op == "Gt":
        out["values"] = [str(r.greater_than)]
    elif op == "Lt":
        out["values"] = [str(r.less_than)]
    if r.min_values is not None:
        out["minValues"] = r.min_values
    return out


def _user_requirement(r: m.NodeSelectorRequirement) -> dict[str, Any]:
    out: dict[str, Any] = {"key": labels.normalize_key(r.key), "operator": r.operator}
    if r.values:
        out["values"] = list(r.values)
    if r.minValues is not None:
        out["minValues"] = r.minValues
    return out


def _seconds(n: int) -> str:
    return f"{n}s"


def _dump(model: m.Model | None) -> Any:
    return None if model is None else model.model_dump(exclude_none=True, exclude_defaults=True)


def _taints(items: list[m.Taint]) -> list[dict[str, Any]]:
    return [_dump(t) | {"effect": t.effect} for t in items]


def _kubelet(k: m.Kubelet | m.ProvisionerKubelet | None) -> dict[str, Any] | None:
    d = _dump(k)
    if d:
        # Removed in v1: the container runtime is always containerd.
        d.pop("containerRuntime", None)
    return d or None


def provisioner_to_nodepool(doc: m.Provisioner, file: str, out: Conversion) -> dict[str, Any]:
    """A v1alpha5 Provisioner as a v1 NodePool document."""
    spec = doc.spec
    name = doc.metadata.name
    where = f"{file}: Provisioner/{name}"
    user = [_user_requirement(r) for r in spec.requirements]
    present = {r["key"] for r in user} | {labels.normalize_key(k) for k in spec.labels}
    defaults = legacy.provisioner_defaults(present)
    for r in defaults:
        out.warnings.append(
            f"{where}: spec.requirements: made the legacy default explicit: {r.describe()}"
        )
    template_spec: dict[str, Any] = {
        "nodeClassRef": {
            "group": "karpenter.k8s.aws",
            "kind": "EC2NodeClass",
            "name": spec.providerRef.name if spec.providerRef is not None else name,
        },
        "requirements": [*user, *(_requirement_dict(r) for r in defaults)],
        "expireAfter": _seconds(spec.ttlSecondsUntilExpired)
        if spec.ttlSecondsUntilExpired is not None
        else "Never",
    }
    if spec.taints:
        template_spec["taints"] = _taints(spec.taints)
    if spec.startupTaints:
        template_spec["startupTaints"] = _taints(spec.startupTaints)
    if spec.consolidation is not None and spec.consolidation.enabled:
        disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    elif spec.ttlSecondsAfterEmpty is not None:
        disruption = {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": _seconds(spec.ttlSecondsAfterEmpty),
        }
    else:
        disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}
    metadata: dict[str, Any] = {}
    if spec.labels:
        metadata["labels"] = dict(spec.labels)
    if spec.annotations:
        metadata["annotations"] = dict(spec.annotations)
    nodepool_spec: dict[str, Any] = {
        "template": ({"metadata": metadata} if metadata else {}) | {"spec": template_spec},
        "disruption": disruption,
    }
    if spec.limits.resources:
        nodepool_spec["limits"] = dict(spec.limits.resources)
    if spec.weight is not None:
        nodepool_spec["weight"] = spec.weight
    out.warnings.append(
        f"{where}: nodes of the v1 NodePool are labelled karpenter.sh/nodepool={name}, not "
        f"karpenter.sh/provisioner-name={name}; update any selectors that use the old label"
    )
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": nodepool_spec,
    }


def nodepool_v1beta1_to_v1(doc: m.V1Beta1NodePool, file: str, out: Conversion) -> dict[str, Any]:
    """A v1beta1 NodePool as a v1 NodePool document (kubelet moves to the NodeClass)."""
    spec = doc.spec
    tmpl = spec.template
    template_spec: dict[str, Any] = {
        "nodeClassRef": {
            "group": "karpenter.k8s.aws",
            "kind": tmpl.spec.nodeClassRef.kind or "EC2NodeClass",
            "name": tmpl.spec.nodeClassRef.name,
        },
        "requirements": [_user_requirement(r) for r in tmpl.spec.requirements],
        "expireAfter": spec.disruption.expireAfter or "720h",
    }
    if tmpl.spec.taints:
        template_spec["taints"] = _taints(tmpl.spec.taints)
    if tmpl.spec.startupTaints:
        template_spec["startupTaints"] = _taints(tmpl.spec.startupTaints)
    policy = spec.disruption.consolidationPolicy
    disruption: dict[str, Any] = {
        "consolidationPolicy": "WhenEmptyOrUnderutilized"
        if policy == "WhenUnderutilized"
        else policy,
        "consolidateAfter": spec.disruption.consolidateAfter or "0s",
    }
    if spec.disruption.budgets:
        disruption["budgets"] = [_dump(b) | {"nodes": b.nodes} for b in spec.disruption.budgets]
    metadata = _dump(tmpl.metadata) or {}
    nodepool_spec: dict[str, Any] = {
        "template": ({"metadata": metadata} if metadata else {}) | {"spec": template_spec},
        "disruption": disruption,
    }
    if spec.limits:
        nodepool_spec["limits"] = dict(spec.limits)
    if spec.weight is not None:
        nodepool_spec["weight"] = spec.weight
    if tmpl.spec.kubelet is not None:
        out.warnings.append(
            f"{file}: NodePool/{doc.metadata.name}: spec.template.spec.kubelet moved to the "
            f"EC2NodeClass {tmpl.spec.nodeClassRef.name!r} (v1 keeps kubelet settings there)"
        )
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": doc.metadata.name},
        "spec": nodepool_spec,
    }


def _flat_selector_terms(selector: dict[str, str]) -> list[dict[str, Any]]:
    ids_key = next((k for k in ("aws-ids", "aws::ids") if k in selector), None)
    if ids_key is not None:
        return [{"id": i.strip()} for i in selector[ids_key].split(",") if i.strip()]
    if "aws::name" in selector:
        return [{"name": selector["aws::name"]}]
    return [{"tags": dict(selector)}]


def _ami_terms(selector: dict[str, str]) -> list[dict[str, Any]]:
    ids_key = next((k for k in ("aws-ids", "aws::ids") if k in selector), None)
    if ids_key is not None:
        return [{"id": i.strip()} for i in selector[ids_key].split(",") if i.strip()]
    if "aws::name" in selector:
        owners = [o.strip() for o in selector.get("aws::owners", "").split(",") if o.strip()]
        return [{"name": selector["aws::name"], "owner": o} for o in owners] or [
            {"name": selector["aws::name"]}
        ]
    return [{"tags": dict(selector)}]


def _ami_spec(
    family: str, ami_terms: list[dict[str, Any]], placeholders: list[str]
) -> dict[str, Any]:
    """``amiFamily`` and ``amiSelectorTerms`` of the v1 EC2NodeClass; with no AMI selector,
    the family's ``@latest`` alias (the legacy behaviour), noted in ``placeholders``."""
    if ami_terms:
        return {"amiFamily": "AL2" if family == "Ubuntu" else family, "amiSelectorTerms": ami_terms}
    alias = f"{_FAMILY_ALIAS.get(family, 'al2')}@latest"
    placeholders.append(
        f"spec.amiSelectorTerms: {alias} keeps the legacy behaviour (the latest EKS-optimized "
        f"{family} AMI); pin a version (e.g. {alias.split('@')[0]}@v20240807) for production"
    )
    return {"amiSelectorTerms": [{"alias": alias}]}


def _identity_spec(
    profile: str | None, role: str | None, placeholders: list[str]
) -> dict[str, Any]:
    """``instanceProfile`` or ``role`` of the v1 EC2NodeClass; with neither, a placeholder
    role, noted in ``placeholders``."""
    if profile:
        return {"instanceProfile": profile}
    if role:
        return {"role": role}
    placeholders.append(
        "spec.role: v1 needs the IAM role of your nodes (or an instanceProfile); the legacy "
        "object relied on the global defaultInstanceProfile setting"
    )
    return {"role": PLACEHOLDER_ROLE}


def _carried_fields(
    spec: m.AWSNodeTemplateSpec | m.InlineProvider | m.V1Beta1EC2NodeClassSpec,
) -> dict[str, Any]:
    """The fields v1 keeps as they are, for those ``spec`` sets."""
    out_spec: dict[str, Any] = {}
    if spec.tags:
        out_spec["tags"] = dict(spec.tags)
    if spec.blockDeviceMappings:
        out_spec["blockDeviceMappings"] = [_dump(b) for b in spec.blockDeviceMappings]
    if spec.userData:
        out_spec["userData"] = spec.userData
    for key in (
        "metadataOptions",
        "detailedMonitoring",
        "instanceStorePolicy",
        "associatePublicIPAddress",
        "context",
    ):
        value = getattr(spec, key, None)
        if value is not None:
            out_spec[key] = value
    return out_spec


def _nodeclass_doc(
    name: str,
    where: str,
    spec: m.AWSNodeTemplateSpec | m.InlineProvider | m.V1Beta1EC2NodeClassSpec,
    kubelet: dict[str, Any] | None,
    out: Conversion,
) -> dict[str, Any]:
    """The ``karpenter.k8s.aws/v1`` EC2NodeClass for a legacy or v1beta1 node class (``where``
    names it in warnings); the values v1 requires and ``spec`` lacks are placeholders, listed
    in the ``PLACEHOLDER_ANNOTATION`` annotation and in ``out.warnings``."""
    placeholders: list[str] = []
    if isinstance(spec, m.V1Beta1EC2NodeClassSpec):
        family = spec.amiFamily
        subnet_terms = [_dump(t) for t in spec.subnetSelectorTerms]
        sg_terms = [_dump(t) for t in spec.securityGroupSelectorTerms]
        ami_terms = [_dump(t) for t in spec.amiSelectorTerms]
        role, profile = spec.role, spec.instanceProfile
    else:
        family = spec.amiFamily or "AL2"
        subnet_terms = _flat_selector_terms(spec.subnetSelector)
        sg_terms = _flat_selector_terms(spec.securityGroupSelector)
        ami_terms = _ami_terms(spec.amiSelector) if spec.amiSelector else []
        role, profile = None, spec.instanceProfile
    out_spec = _ami_spec(family, ami_terms, placeholders)
    if family == "Ubuntu":
        out.warnings.append(f"{where}: amiFamily Ubuntu was dropped in v1; converted to AL2")
    out_spec |= _identity_spec(profile, role, placeholders)
    out_spec["subnetSelectorTerms"] = subnet_terms
    out_spec["securityGroupSelectorTerms"] = sg_terms
    out_spec |= _carried_fields(spec)
    if kubelet:
        out_spec["kubelet"] = kubelet
    metadata: dict[str, Any] = {"name": name}
    if placeholders:
        metadata["annotations"] = {PLACEHOLDER_ANNOTATION: "; ".join(placeholders)}
        for p in placeholders:
            out.warnings.append(f"{where}: placeholder {p}")
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": metadata,
        "spec": out_spec,
    }


_PROVISIONER = ("karpenter.sh/v1alpha5", "Provisioner")
_NODEPOOL_V1BETA1 = ("karpenter.sh/v1beta1", "NodePool")


def _raw_documents(paths: list[Path]) -> list[tuple[str, Any]]:
    """``(file, document)`` for every document of ``paths``, a ``List``'s items one by one."""
    raw: list[tuple[str, Any]] = []
    for path in paths:
        for doc in map(drop_nulls, read_documents(path)):  # a null reads as absent
            items = doc["items"] if doc.get("kind") == "List" else [doc]
            raw.extend((str(path), d) for d in items)
    return raw


def _pool_kubelets(raw: list[tuple[str, Any]], out: Conversion) -> dict[str, dict[str, Any]]:
    """Pool-level kubelet settings by NodeClass name (v1 moved them to the NodeClass); a
    Provisioner's move is noted in ``out.warnings``."""
    kubelets: dict[str, dict[str, Any]] = {}
    for file, doc in raw:
        key = (doc.get("apiVersion"), doc.get("kind"))
        if key == _PROVISIONER:
            p = m.Provisioner.model_validate(doc)
            k = _kubelet(p.spec.kubeletConfiguration)
            ref = p.spec.providerRef.name if p.spec.providerRef else p.metadata.name
            if k:
                kubelets[ref] = k
                out.warnings.append(
                    f"{file}: Provisioner/{p.metadata.name}: spec.kubeletConfiguration moved to "
                    f"the EC2NodeClass {ref!r} as spec.kubelet"
                )
        elif key == _NODEPOOL_V1BETA1:
            np = m.V1Beta1NodePool.model_validate(doc)
            k = _kubelet(np.spec.template.spec.kubelet)
            if k:
                kubelets[np.spec.template.spec.nodeClassRef.name] = k
    return kubelets


def _warn_shared_kubelets(
    raw: list[tuple[str, Any]], kubelets: dict[str, dict[str, Any]], out: Conversion
) -> None:
    """Pools without kubelet settings that share a NodeClass with one that has them inherit
    those settings in v1: say so."""
    for file, doc in raw:
        key = (doc.get("apiVersion"), doc.get("kind"))
        if key == _PROVISIONER:
            p = m.Provisioner.model_validate(doc)
            ref = p.spec.providerRef.name if p.spec.providerRef else p.metadata.name
            inherits = ref in kubelets and not _kubelet(p.spec.kubeletConfiguration)
            what = f"Provisioner/{p.metadata.name}"
        elif key == _NODEPOOL_V1BETA1:
            np = m.V1Beta1NodePool.model_validate(doc)
            ref = np.spec.template.spec.nodeClassRef.name
            inherits = ref in kubelets and not _kubelet(np.spec.template.spec.kubelet)
            what = f"NodePool/{np.metadata.name}"
        else:
            continue
        if inherits:
            out.warnings.append(
                f"{file}: {what}: shares EC2NodeClass {ref!r}, whose "
                "v1 kubelet settings now apply to its nodes too; give it its own NodeClass "
                "to keep the defaults"
            )


def _convert_document(
    file: str, doc: Any, kubelets: dict[str, dict[str, Any]], out: Conversion
) -> None:
    """Append the v1 form of one document to ``out.documents`` (other kinds unchanged)."""
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key == _PROVISIONER:
        p = m.Provisioner.model_validate(doc)
        out.documents.append(provisioner_to_nodepool(p, file, out))
        if p.spec.provider is not None:
            name = p.metadata.name
            out.documents.append(
                _nodeclass_doc(
                    name,
                    f"{file}: Provisioner/{name} spec.provider",
                    p.spec.provider,
                    kubelets.get(name),
                    out,
                )
            )
    elif key == _NODEPOOL_V1BETA1:
        out.documents.append(
            nodepool_v1beta1_to_v1(m.V1Beta1NodePool.model_validate(doc), file, out)
        )
    elif key == ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate"):
        t = m.AWSNodeTemplate.model_validate(doc)
        name = t.metadata.name
        out.documents.append(
            _nodeclass_doc(name, f"{file}: AWSNodeTemplate/{name}", t.spec, kubelets.get(name), out)
        )
    elif key == ("karpenter.k8s.aws/v1beta1", "EC2NodeClass"):
        c = m.V1Beta1EC2NodeClass.model_validate(doc)
        name = c.metadata.name
        out.documents.append(
            _nodeclass_doc(name, f"{file}: EC2NodeClass/{name}", c.spec, kubelets.get(name), out)
        )
    else:
        out.documents.append(doc)


def convert_files(paths: list[Path]) -> Conversion:
    """Convert every document of ``paths`` (see the module docstring).

    The input is first loaded with full validation, so bad input raises ``InputError`` and
    nothing is printed.
    """
    manifests = load_files(paths)
    out = Conversion(warnings=list(manifests.warnings))
    raw = _raw_documents(paths)
    kubelets = _pool_kubelets(raw, out)
    _warn_shared_kubelets(raw, kubelets, out)
    for file, doc in raw:
        _convert_document(file, doc, kubelets, out)
        _legacy_annotation_warnings(doc, file, out)
    return out


_LEGACY_ANNOTATIONS = {
    "karpenter.sh/do-not-evict": "karpenter.sh/do-not-disrupt",
    "karpenter.sh/do-not-consolidate": "karpenter.sh/do-not-disrupt",
}


def _legacy_annotation_warnings(doc: dict[str, Any], file: str, out: Conversion) -> None:
    """v1 ignores the v1alpha5 pod/node annotations; say which to rename."""
    kind = doc.get("kind")
    meta = doc.get("metadata") or {}
    found: dict[str, str] = dict(meta.get("annotations") or {})
    spec = doc.get("spec") or {}
    tmpl = spec.get("template") if isinstance(spec, dict) else None
    if isinstance(tmpl, dict):
        found |= dict((tmpl.get("metadata") or {}).get("annotations") or {})
    for old, new in _LEGACY_ANNOTATIONS.items():
        if old in found:
            out.warnings.append(
                f"{file}: {kind}/{meta.get('name')}: annotation {old} is ignored by Karpenter v1 "
                f"(and by Joiner for v1 NodePools); use {new}"
            )


def check_reloads(documents: list[dict[str, Any]]) -> None:
    """Raise ``InputError`` unless the converted documents load back through Joiner."""
    try:
        load_text(yaml.safe_dump_all(documents, sort_keys=False), "<converted>")
    except InputError as exc:  # pragma: no cover - a conversion bug, surfaced loudly
        raise InputError(f"converted output does not load back: {exc}") from exc
