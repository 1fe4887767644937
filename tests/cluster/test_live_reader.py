"""``plan``/``disrupt``/``advise --kubeconfig`` read what a dump holds: the live reader and
the file loader see the same objects (tests/e2e/test_live_parity.py checks whole answers
on a real API server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from joiner.api.manifests import load_files
from joiner.cli.main import app
from joiner.cluster.kube import client as kube
from joiner.operator.live import read_cluster

#: A NodeClaim launched whose Node has not registered yet, as the API server lists it.
INFLIGHT = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {
        "name": "batch-x7k2p",
        "labels": {
            "karpenter.sh/nodepool": "batch",
            "node.kubernetes.io/instance-type": "c6a.xlarge",
            "topology.kubernetes.io/zone": "us-east-1b",
            "karpenter.sh/capacity-type": "spot",
        },
    },
    "spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["batch"]}],
    },
    "status": {
        "providerID": "aws:///us-east-1b/i-0123456789abcdef0",
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "58"},
        "allocatable": {"cpu": "3920m", "memory": "7Gi", "pods": "58"},
        "conditions": [
            {
                "type": "Launched",
                "status": "True",
                "reason": "Launched",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    },
}

POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: batch}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c6a]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: R
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
---
apiVersion: v1
kind: Pod
metadata: {name: crunch, namespace: default}
spec:
  nodeSelector: {karpenter.sh/nodepool: batch}
  containers: [{name: c, image: i, resources: {requests: {cpu: "3"}}}]
"""


class _Cluster:
    """A fake lightkube client answering lists with ``objects`` (by lightkube resource)."""

    def __init__(self, objects: dict[type, list[Any]]) -> None:
        self.objects = objects

    def list(self, resource: type, **_kwargs: Any) -> list[Any]:
        return self.objects.get(resource, [])


def _live(docs: list[dict[str, Any]]) -> _Cluster:
    """The cluster holding ``docs`` as lightkube objects, as a list returns them."""
    by_kind = {(k.api_version, k.kind): k.resource for k in (*kube.PLAN_KINDS, kube.NODECLAIM)}
    objects: dict[type, list[Any]] = {}
    for doc in docs:
        res = by_kind[(doc["apiVersion"], doc["kind"])]
        objects.setdefault(res, []).append(res.from_dict(doc))
    return _Cluster(objects)


def test_a_launched_nodeclaim_is_read_live_as_from_a_dump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the live reader did not list NodeClaims, so ``plan --kubeconfig`` launched
    a second node for a pod that an in-flight NodeClaim already holds room for, where the
    same cluster's dump (which lists ``nodeclaims``) placed it on the NodeClaim."""
    docs = [*yaml.safe_load_all(POOL), INFLIGHT]
    dump = tmp_path / "dump.yaml"
    dump.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs}))
    monkeypatch.setattr(kube, "connect", lambda *_a, **_k: _live(docs))
    live = read_cluster(tmp_path / "kc")
    from_file = load_files([dump])
    assert [c.name for c in live.nodeclaims] == ["batch-x7k2p"]
    (claim,) = live.nodeclaims
    (expected,) = from_file.nodeclaims
    assert (claim.provider_id, claim.allocatable, claim.labels) == (
        expected.provider_id,
        expected.allocatable,
        expected.labels,
    )
    runner = CliRunner()
    by_cli = runner.invoke(app, ["plan", "--kubeconfig", str(tmp_path / "kc"), "-o", "json"])
    by_file = runner.invoke(app, ["plan", "-f", str(dump), "-o", "json"])
    assert by_cli.exit_code == 0 and by_file.exit_code == 0, by_cli.output + by_file.output
    assert '"node": "batch-x7k2p"' in by_cli.stdout
    assert by_cli.stdout.count('"nodePool"') == by_file.stdout.count('"nodePool"') == 0
