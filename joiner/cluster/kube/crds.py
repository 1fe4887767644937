"""CustomResourceDefinitions for NodePool, NodeClaim and EC2NodeClass, generated from the
pydantic manifest models (``joiner.api.manifests.models``), so the API server accepts
exactly the shapes Joiner reads from files.

The models' JSON Schema is turned into a Kubernetes *structural* schema
(apiextensions.k8s.io/v1; rules from the Kubernetes documentation "Specifying a structural
schema"): ``$ref`` inlined, ``Optional[X]`` becomes ``X`` with ``nullable: true``, a union
of scalars (Karpenter's ``expireAfter: 720h | Never`` or a number) becomes
``x-kubernetes-preserve-unknown-fields``, ``Any`` fields keep unknown fields, and pydantic's
``title``/``default``/``additionalProperties: false`` are dropped (the API server prunes
unknown fields instead of forbidding them). Groups, kinds, scopes and names follow
Karpenter's own CRDs (karpenter-semantics §1.4): all three are cluster-scoped, with the
status subresource.

``crd_documents()`` returns the three CRDs as dicts; ``deploy/crds/*.yaml`` are its output
(``joiner install-crds --print``), and a test keeps them equal.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from joiner.api.manifests import models as m

_KEEP = ("minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems", "pattern")
_PRESERVE = {"x-kubernetes-preserve-unknown-fields": True}


def _structural(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """One JSON Schema node (pydantic's output) as a structural OpenAPI v3 schema."""
    if "$ref" in node:
        return _structural(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "allOf" in node and len(node["allOf"]) == 1:
        return _structural(node["allOf"][0], defs)
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        nullable = len(options) < len(node["anyOf"])
        union: dict[str, Any]
        if len(options) == 1:
            union = _structural(options[0], defs)
        elif {o.get("type") for o in options} == {"integer", "string"}:
            union = {"x-kubernetes-int-or-string": True}
        else:
            union = dict(_PRESERVE)
        if nullable:
            union["nullable"] = True
        return union
    if "const" in node:
        return {"type": "string", "enum": [node["const"]]}
    if "enum" in node:
        return {"type": "string", "enum": list(node["enum"])}
    kind = node.get("type")
    out: dict[str, Any] = {}
    if kind is None:
        return dict(_PRESERVE)
    out["type"] = kind
    if kind == "object":
        props = node.get("properties")
        if props:
            out["properties"] = {k: _structural(v, defs) for k, v in props.items()}
            required = [r for r in node.get("required", []) if r in props]
            if required:
                out["required"] = required
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            out["additionalProperties"] = _structural(extra, defs) if extra else dict(_PRESERVE)
        elif not props:
            out.update(_PRESERVE)
    elif kind == "array":
        out["items"] = _structural(node.get("items", {}), defs)
    for key in _KEEP:
        if key in node:
            out[key] = node[key]
    return out


def schema_of(model: type[BaseModel], field: str) -> dict[str, Any]:
    """The structural schema of ``model``'s top-level ``field`` (``spec``, ``status``).

    Raises:
        KeyError: the model has no such field.
    """
    full = model.model_json_schema()
    defs = full.get("$defs", {})
    return _structural(full["properties"][field], defs)


def _crd(
    group: str,
    kind: str,
    plural: str,
    model: type[BaseModel],
    *,
    short_names: list[str],
    columns: list[tuple[str, str, str]],
) -> dict[str, Any]:
    spec = schema_of(model, "spec")
    status = (
        schema_of(model, "status")
        if "status" in model.model_fields
        else {"type": "object", **_PRESERVE}
    )
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "labels": {"app.kubernetes.io/part-of": "joiner"},
        },
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
                "categories": ["karpenter"],
            },
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": n, "type": t, "jsonPath": p} for n, t, p in columns
                    ]
                    + [
                        {
                            "name": "Age",
                            "type": "date",
                            "jsonPath": ".metadata.creationTimestamp",
                        }
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": status,
                            },
                        }
                    },
                }
            ],
        },
    }


def crd_documents() -> list[dict[str, Any]]:
    """The three CRDs (NodePool, NodeClaim: ``karpenter.sh/v1``; EC2NodeClass:
    ``karpenter.k8s.aws/v1``), in that order, as apiextensions.k8s.io/v1 documents."""
    return [
        _crd(
            "karpenter.sh",
            "NodePool",
            "nodepools",
            m.NodePool,
            short_names=["np", "nodepool"],
            columns=[("Weight", "integer", ".spec.weight")],
        ),
        _crd(
            "karpenter.sh",
            "NodeClaim",
            "nodeclaims",
            m.NodeClaim,
            short_names=["nc", "nodeclaim"],
            columns=[
                ("Type", "string", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
                ("Capacity", "string", ".metadata.labels.karpenter\\.sh/capacity-type"),
                ("Zone", "string", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
                ("Node", "string", ".status.nodeName"),
            ],
        ),
        _crd(
            "karpenter.k8s.aws",
            "EC2NodeClass",
            "ec2nodeclasses",
            m.EC2NodeClass,
            short_names=["ec2nc", "ec2ncs"],
            columns=[("Role", "string", ".spec.role")],
        ),
    ]
