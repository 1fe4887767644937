"""Controller mode (``joiner run``) with Karpenter's ``StaticCapacity`` gate on the real
stack: a static NodePool gets its ``replicas`` NodeClaims and Nodes without any pod, keeps
the count when one is deleted by hand, and scales down when ``replicas`` is lowered."""

from __future__ import annotations

from pathlib import Path

import pytest
from joinerctl import (
    ON_DEMAND_4CPU,
    Cluster,
    ControllerProcess,
    NodeClaimRes,
    nodepool_doc,
    start,
    wait_for,
)

pytestmark = pytest.mark.e2e


def _static_pool(name: str, replicas: int) -> dict:
    doc = nodepool_doc(name, requirements=ON_DEMAND_4CPU)
    doc["spec"]["replicas"] = replicas
    return doc


def _count(cluster: Cluster, n: int) -> tuple[set[str], set[str]] | None:
    """(NodeClaims, Nodes) once the pool has exactly ``n`` of each, matched, none deleting."""
    got = cluster.consistent()
    if got is None or len(got[0]) != n or len(got[1]) != n:
        return None
    if any(c.metadata.deletionTimestamp for c in cluster.nodeclaims()):
        return None
    return got


def test_a_static_pool_keeps_its_replicas(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster, controllers: list[ControllerProcess]
) -> None:
    cluster.apply(_static_pool(cluster.name, 2))
    start(controllers, kubeconfig, tmp_path, cluster, env={"FEATURE_GATES": "StaticCapacity=true"})
    claims, _nodes = wait_for("two static NodeClaims and Nodes", lambda: _count(cluster, 2), 120)
    assert cluster.pods() == []

    # One deleted by hand is replaced (the deletion kicks the reconcile).
    gone = sorted(claims)[0]
    cluster.client.delete(NodeClaimRes, gone)
    again, _ = wait_for(
        "a replacement",
        lambda: (c := _count(cluster, 2)) and gone not in c[0] and c,
        120,
    )
    assert len(again - claims) == 1

    # replicas lowered to 1: one NodeClaim goes.
    cluster.apply(_static_pool(cluster.name, 1))
    wait_for("one static NodeClaim left", lambda: _count(cluster, 1), 120)
