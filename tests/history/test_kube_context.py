"""``joiner import --kubeconfig K --context C``: the client talks to the named context."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from joiner.api.errors import InputError
from joiner.cluster.kube.client import IMPORT_KINDS, PLAN_KINDS, connect, list_documents

KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: a
clusters:
- {name: a, cluster: {server: "https://a.example:6443"}}
- {name: b, cluster: {server: "https://b.example:6443"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: a, context: {cluster: a, user: u}}
- {name: b, context: {cluster: b, user: u}}
"""


def _server(client: object) -> str:
    return str(client._client._client.base_url)  # type: ignore[attr-defined]


def test_context_selects_the_server(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    assert _server(connect(path)) == "https://a.example:6443"
    assert _server(connect(path, context="b")) == "https://b.example:6443"
    with pytest.raises(InputError, match=r"context 'zz' not found \(contexts: a, b\)"):
        connect(path, context="zz")


def test_import_reads_cronjobs_besides_the_plans_kinds() -> None:
    assert [k.kind for k in IMPORT_KINDS] == [*(k.kind for k in PLAN_KINDS), "CronJob"]


class _NoKarpenter:
    """A cluster without Karpenter: its API server answers a list of a karpenter.sh or
    karpenter.k8s.aws kind with a plain-text 404 (the group is not served)."""

    def list(self, resource: type, **_kwargs: object) -> list[object]:
        kind = next(k for k in IMPORT_KINDS if k.resource is resource)
        if kind.api_version.startswith("karpenter."):
            group, version = kind.api_version.split("/")
            url = f"https://a.example:6443/apis/{group}/{version}/{kind.kind.lower()}s"
            request = httpx.Request("GET", url)
            response = httpx.Response(
                404,
                request=request,
                headers={"Content-Type": "text/plain; charset=utf-8"},
                text="404 page not found\n",
            )
            raise httpx.HTTPStatusError("404 Not Found", request=request, response=response)
        return []


def test_a_cluster_without_karpenters_crds_has_none_of_their_kinds() -> None:
    """Regression (user report): `joiner import --kubeconfig` on a Cluster Autoscaler cluster
    failed with "did not answer as a Kubernetes API server: 404 ... /apis/karpenter.sh/v1/
    nodepools"; a missing Karpenter CRD means none of that kind, in a warning."""
    docs, warnings = list_documents(_NoKarpenter(), IMPORT_KINDS)
    assert docs == []
    assert len(warnings) == 3
    assert "karpenter.sh/v1 NodePool is not served by this cluster" in warnings[0]
    assert "karpenter.k8s.aws/v1 EC2NodeClass is not served" in warnings[1]
    assert "karpenter.sh/v1 NodeClaim is not served" in warnings[2]


def test_a_404_on_a_core_kind_is_still_an_error() -> None:
    class NotFound:
        def list(self, *_args: object, **_kwargs: object) -> list[object]:
            request = httpx.Request("GET", "https://a.example:6443/api/v1/nodes")
            response = httpx.Response(404, request=request, text="404 page not found\n")
            raise httpx.HTTPStatusError("404 Not Found", request=request, response=response)

    with pytest.raises(InputError, match="did not answer as a Kubernetes API server"):
        list_documents(NotFound(), IMPORT_KINDS)


def test_kubeconfig_and_files_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (user report): -f with --kubeconfig was refused; the files are extra
    manifests (the NodePools you would deploy) added to the live cluster's objects."""
    from joiner.cli import importer
    from joiner.cluster.kube import client as kube

    monkeypatch.setattr(kube, "connect", lambda *_a, **_k: _NoKarpenter())
    extra = tmp_path / "nodepools.yaml"
    extra.write_text(NODEPOOL)
    found = importer._objects([extra], tmp_path / "kubeconfig", None)
    assert [n.name for n in found.manifests.nodepools] == ["default"]
    assert found.source == f"kube:{tmp_path / 'kubeconfig'}, {extra}"
    assert any("NodePool is not served" in w for w in found.manifests.warnings)


NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
"""
