"""install-crds refuses CRDs another manager installed, before applying anything."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ManagedFieldsEntry, ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

from joiner.api.errors import InputError
from joiner.cluster.kube.client import PART_OF_LABEL, apply_crds, foreign_owner, same_definition
from joiner.cluster.kube.crds import crd_documents


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


def _installed(doc: dict[str, Any], **meta: Any) -> Any:
    """A CustomResourceDefinition as the API server returns it: ``doc``'s definition, with
    the server's defaults and status, and the given metadata."""
    crd = CustomResourceDefinition.from_dict(
        {**doc, "spec": {**doc["spec"], "conversion": {"strategy": "None"}}}
    )
    crd.metadata = ObjectMeta(name=doc["metadata"]["name"], **meta)
    return crd


def test_crds_from_joiners_own_chart_are_left_as_they_are_others_from_helm_refused() -> None:
    """Helm installs a chart's crds/ files as field manager ``helm`` with no release
    annotations; Joiner's chart ships Karpenter's CRDs unchanged, so one that defines exactly
    what Joiner would apply is left as it is; one of another Karpenter version is refused."""
    helm_fields = [ManagedFieldsEntry(manager="helm", operation="Update")]
    docs = {d["metadata"]["name"]: d for d in crd_documents()}
    chart = _installed(docs["nodepools.karpenter.sh"], managedFields=helm_fields)
    assert foreign_owner(chart) == "field manager helm"
    assert same_definition(chart, docs["nodepools.karpenter.sh"])
    client = _FakeClient({"nodepools.karpenter.sh": chart})
    assert apply_crds(client) == [
        ("nodepools.karpenter.sh", False),
        ("nodeclaims.karpenter.sh", True),
        ("ec2nodeclasses.karpenter.k8s.aws", True),
    ]
    assert client.applied == ["nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"]
    older = copy.deepcopy(docs["nodepools.karpenter.sh"])
    older["spec"]["versions"][0]["additionalPrinterColumns"].pop()
    karpenters = _installed(older, managedFields=helm_fields)
    assert not same_definition(karpenters, docs["nodepools.karpenter.sh"])
    refusing = _FakeClient({"nodepools.karpenter.sh": karpenters})
    with pytest.raises(InputError, match=r"nodepools.karpenter.sh \(managed by field manager helm"):
        apply_crds(refusing)
    assert refusing.applied == []


def test_a_helm_release_is_refused_even_when_identical_and_joiners_label_is_set() -> None:
    doc = next(d for d in crd_documents() if d["metadata"]["name"] == "nodepools.karpenter.sh")
    release = _installed(doc, annotations={"meta.helm.sh/release-name": "karpenter"})
    with pytest.raises(InputError, match="Helm release karpenter"):
        apply_crds(_FakeClient({"nodepools.karpenter.sh": release}))
    # Joiner's label marks what it applied: the next install-crds recognises it as its own.
    fresh = _FakeClient({})
    apply_crds(fresh)
    assert {c.metadata.labels[PART_OF_LABEL] for c in fresh.crds} == {"joiner"}
    labelled = _installed(
        doc,
        labels={PART_OF_LABEL: "joiner"},
        managedFields=[ManagedFieldsEntry(manager="helm", operation="Update")],
    )
    assert foreign_owner(labelled) is None


class _FakeClient:
    def __init__(self, existing: dict[str, Any]) -> None:
        self.existing = existing
        self.applied: list[str] = []
        self.crds: list[CustomResourceDefinition] = []

    def get(self, _kind: object, name: str) -> Any:
        if name not in self.existing:
            raise ApiError(
                response=_Response404(),  # type: ignore[arg-type]
            )
        return self.existing[name]

    def apply(self, crd: CustomResourceDefinition, **_kw: object) -> None:
        assert crd.metadata is not None
        self.applied.append(str(crd.metadata.name))
        self.crds.append(crd)


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
