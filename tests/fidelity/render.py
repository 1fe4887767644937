"""Render a neutral case (cases.py) into the Kubernetes objects both sides read.

Cases run side by side on one cluster, so each is fenced in: its own namespace, NodePools
named ``<case>-<pool>`` whose nodes carry the label and taint ``fidelity.joiner.dev/case=<case>``,
and pods (and DaemonSet pods) that select and tolerate exactly that. Joiner reads the very
same objects (the live ones, for what already runs), so the fence is part of both inputs.
NodePools reference the one KWOKNodeClass ``fidelity``.
"""

from __future__ import annotations

import copy
from typing import Any

from cases import Case, Obj

CASE_LABEL = "fidelity.joiner.dev/case"
NODECLASS = "fidelity"
POOL_KEY = "karpenter.sh/nodepool"
KWOK_NODECLASS: Obj = {
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": NODECLASS},
}


def namespace(case: Case) -> str:
    """The case's namespace."""
    return f"fx-{case.id}"


def pool_name(case: Case, name: str) -> str:
    """The rendered NodePool name."""
    return f"{case.id}-{name}"


def merge(base: Obj, patch: Obj) -> Obj:
    """``patch`` merged into a copy of ``base`` (dicts merge, other values replace)."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def nodepool(case: Case, name: str, spec: Obj) -> Obj:
    """A ``karpenter.sh/v1`` NodePool fenced to the case."""
    spec = copy.deepcopy(spec)
    tmpl = spec["template"]
    tmpl.setdefault("metadata", {}).setdefault("labels", {})[CASE_LABEL] = case.id
    tmpl["spec"].setdefault("taints", []).append(
        {"key": CASE_LABEL, "value": case.id, "effect": "NoSchedule"}
    )
    tmpl["spec"]["nodeClassRef"] = {
        "group": "karpenter.kwok.sh",
        "kind": "KWOKNodeClass",
        "name": NODECLASS,
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": pool_name(case, name)},
        "spec": spec,
    }


def overlay_name(case: Case, name: str) -> str:
    """The rendered NodeOverlay name."""
    return f"{case.id}-{name}"


def node_overlays(case: Case) -> list[Obj]:
    """The case's ``karpenter.sh/v1alpha1`` NodeOverlays. They are cluster-scoped and select
    instance types of every NodePool their requirements admit, so each gets a
    ``karpenter.sh/nodepool`` requirement naming only the case's NodePools."""
    pools = sorted(pool_name(case, p) for p in case.pools)
    out = []
    for name, spec in case.overlays.items():
        body = copy.deepcopy(spec)
        body.setdefault("requirements", []).append(
            {"key": POOL_KEY, "operator": "In", "values": pools}
        )
        out.append(
            {
                "apiVersion": "karpenter.sh/v1alpha1",
                "kind": "NodeOverlay",
                "metadata": {"name": overlay_name(case, name)},
                "spec": body,
            }
        )
    return out


def _fence_pod_spec(case: Case, spec: Obj) -> None:
    spec.setdefault("nodeSelector", {})[CASE_LABEL] = case.id
    spec.setdefault("tolerations", []).append(
        {"key": CASE_LABEL, "operator": "Equal", "value": case.id, "effect": "NoSchedule"}
    )
    spec.setdefault("terminationGracePeriodSeconds", 0)


def _namespaced(case: Case, obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    out["metadata"]["namespace"] = namespace(case)
    return out


def pod(case: Case, obj: Obj) -> Obj:
    """A case pod (or Deployment), namespaced and fenced."""
    out = _namespaced(case, obj)
    spec = out["spec"]["template"]["spec"] if out["kind"] == "Deployment" else out["spec"]
    _fence_pod_spec(case, spec)
    return out


def base_objects(case: Case) -> list[Obj]:
    """Namespace, NodeOverlays, NodePools, DaemonSets, PDBs and PriorityClasses (what exists
    before any pod). The overlays come before the NodePools, so Karpenter's overlay
    controller, which a new NodePool triggers, finds them when it first evaluates the
    pools."""
    out: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace(case)}}
    ]
    out += node_overlays(case)
    out += [nodepool(case, name, spec) for name, spec in case.pools.items()]
    for ds in case.daemonsets:
        d = _namespaced(case, ds)
        _fence_pod_spec(case, d["spec"]["template"]["spec"])
        out.append(d)
    out += [_namespaced(case, p) for p in case.pdbs]
    return out + [copy.deepcopy(p) for p in case.priority_classes]


def before_pods(case: Case) -> list[Obj]:
    """The pods that make the existing nodes."""
    return [pod(case, p) for p in case.before]


def batch_pods(case: Case) -> list[Obj]:
    """The pods of the batch under test."""
    return [pod(case, p) for p in case.pods]


def pool_patches(case: Case) -> dict[str, Obj]:
    """A disruption case's NodePool patches, by rendered NodePool name."""
    if case.change is None:
        return {}
    return {pool_name(case, k): {"spec": v} for k, v in case.change.pool_patch.items()}


def strip(obj: Any) -> Any:
    """An API object as a dump would hold it for Joiner: no managedFields."""
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
    return obj
