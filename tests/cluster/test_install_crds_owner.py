"""install-crds refuses CRDs another manager installed, before applying anything."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ManagedFieldsEntry, ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

from joiner.api.errors import InputError
from joiner.cluster.kube.client import apply_crds, foreign_owner


def _crd(name: str, **meta: Any) -> Any:
    """What foreign_owner reads of a CustomResourceDefinition: its metadata."""
    return SimpleNamespace(metadata=ObjectMeta(name=name, **meta))


def test_owner_names() -> None:
    helm = _crd(
        "nodepools.karpenter.sh",
        labels={"app.kubernetes.io/managed-by": "Helm"},
        annotations={
            "meta.helm.sh/release-name": "karpenter",
            "meta.helm.sh/release-namespace": "ks",
        },
    )
    assert foreign_owner(helm) == "Helm release karpenter in namespace ks"
    kubectl = _crd(
        "nodepools.karpenter.sh",
        managedFields=[
            ManagedFieldsEntry(manager="kubectl-client-side-apply", operation="Update"),
            ManagedFieldsEntry(manager="kube-apiserver", operation="Update", subresource="status"),
        ],
    )
    assert foreign_owner(kubectl) == "field manager kubectl-client-side-apply"
    ours = _crd(
        "nodepools.karpenter.sh",
        managedFields=[
            ManagedFieldsEntry(manager="joiner", operation="Apply"),
            ManagedFieldsEntry(manager="kube-apiserver", operation="Update", subresource="status"),
        ],
    )
    assert foreign_owner(ours) is None


def test_crds_from_joiners_own_chart_are_accepted_others_from_helm_refused() -> None:
    """Helm installs a chart's crds/ files as field manager ``helm`` with no release
    annotations; Joiner's carry ``app.kubernetes.io/part-of: joiner`` and are its own."""
    helm_fields = [ManagedFieldsEntry(manager="helm", operation="Update")]
    chart = _crd(
        "nodepools.karpenter.sh",
        labels={"app.kubernetes.io/part-of": "joiner"},
        managedFields=helm_fields,
    )
    assert foreign_owner(chart) is None
    client = _FakeClient({"nodepools.karpenter.sh": chart})
    assert len(apply_crds(client)) == 3
    karpenters = _crd("nodepools.karpenter.sh", managedFields=helm_fields)
    assert foreign_owner(karpenters) == "field manager helm"


class _FakeClient:
    def __init__(self, existing: dict[str, Any]) -> None:
        self.existing = existing
        self.applied: list[str] = []

    def get(self, _kind: object, name: str) -> Any:
        if name not in self.existing:
            raise ApiError(
                response=_Response404(),  # type: ignore[arg-type]
            )
        return self.existing[name]

    def apply(self, crd: CustomResourceDefinition, **_kw: object) -> None:
        assert crd.metadata is not None
        self.applied.append(str(crd.metadata.name))


class _Response404:
    status_code = 404

    def json(self) -> dict[str, object]:
        return {"code": 404, "message": "not found", "reason": "NotFound"}


def test_refusal_applies_nothing() -> None:
    helm = _crd("nodepools.karpenter.sh", annotations={"meta.helm.sh/release-name": "karpenter"})
    client = _FakeClient({"nodepools.karpenter.sh": helm})
    with pytest.raises(InputError, match="Helm release karpenter"):
        apply_crds(client)
    assert client.applied == []
    fresh = _FakeClient({})
    assert len(apply_crds(fresh)) == 3 and len(fresh.applied) == 3
