"""Controller faults on the real stack: Nodes and NodeClaims deleted while no controller
ran.

While ``joiner run`` is down, two NodeClaims are deleted and released from their
finalizer, so they are really gone, and their Nodes are left behind with
``karpenter.sh/termination``: one still live, one deleted too (its ``deletionTimestamp``
set, the finalizer holding it). A third Node is deleted while its NodeClaim stays. After
the restart the three Nodes are cordoned and drained through the Eviction API within the
pods' PodDisruptionBudget, replacements are launched for the evicted pods, each Node's
finalizer comes off only once its pods are gone, and no pod is left bound to a Node that
no longer exists (Karpenter's node termination controller, ``finalize``, with or without
a NodeClaim; the instance garbage collection deletes the live one).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from joinerctl import (
    ON_DEMAND_4CPU,
    Cluster,
    ControllerProcess,
    NodeClaimRes,
    audit_events,
    deployment_doc,
    nodepool_doc,
    start,
    wait_for,
)
from kubestack import KubeStack
from lightkube.resources.core_v1 import Node
from lightkube.types import PatchType

pytestmark = pytest.mark.e2e

DISRUPTED = "karpenter.sh/disrupted"
REPLICAS = 8
MIN_AVAILABLE = 7


def _evictions(audit_log: Path, identity: str, namespace: str, since: datetime) -> list[str]:
    """Pods of ``namespace`` the replica ``identity`` evicted (``policy/v1`` Eviction
    accepted: 201) at or after ``since``, by the apiserver's audit log."""
    return [
        str(ref.get("name"))
        for event in audit_events(audit_log, identity, since)
        if (ref := event.get("objectRef") or {}).get("subresource") == "eviction"
        and ref.get("namespace") == namespace
        and (event.get("responseStatus") or {}).get("code") == 201
    ]


@pytest.mark.timeout(300)
def test_nodes_deleted_or_left_without_nodeclaim_while_down_are_drained_within_the_pdb(
    kube_stack: KubeStack,
    kubeconfig: Path,
    tmp_path: Path,
    cluster: Cluster,
    controllers: list[ControllerProcess],
) -> None:
    cluster.apply(nodepool_doc(cluster.name, requirements=ON_DEMAND_4CPU))
    ctl = start(controllers, kubeconfig, tmp_path, cluster)
    # Two 1.5-CPU pods per c6a.xlarge: 8 pods on 4 nodes; the PDB allows one at a time.
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=REPLICAS, cpu="1500m"))
    cluster.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": cluster.name},
            "spec": {"minAvailable": MIN_AVAILABLE, "selector": {"matchLabels": {"app": "web"}}},
        }
    )
    wait_for(f"{REPLICAS} web pods running", lambda: cluster.running("web", REPLICAS), 120)
    claims, _ = wait_for("4 nodes", lambda: (c := cluster.consistent()) and len(c[1]) == 4 and c)
    assert ctl.stop() == 0

    # Two NodeClaims deleted and released while no controller runs: really gone.
    live_victim, deleted_victim, claimed_victim = sorted(claims)[:3]
    victims = {
        c: cluster.client.get(NodeClaimRes, c)["status"]["nodeName"]
        for c in (live_victim, deleted_victim, claimed_victim)
    }
    for claim in (live_victim, deleted_victim):
        cluster.client.delete(NodeClaimRes, claim)
        cluster.client.patch(
            NodeClaimRes, claim, {"metadata": {"finalizers": None}}, patch_type=PatchType.MERGE
        )
    wait_for(
        "both NodeClaims gone",
        lambda: (
            {live_victim, deleted_victim} & {c.metadata.name for c in cluster.nodeclaims()} == set()
        ),
    )
    # One of their Nodes deleted too, and the Node of a NodeClaim that stays: the
    # finalizer holds both.
    for claim in (deleted_victim, claimed_victim):
        cluster.client.delete(Node, victims[claim])
        assert cluster.client.get(Node, victims[claim]).metadata.deletionTimestamp
    victim_nodes = set(victims.values())
    on_victims = {p.metadata.name for p in cluster.pods("web") if p.spec.nodeName in victim_nodes}
    assert len(on_victims) == 6, on_victims

    restarted_at = datetime.now(UTC)
    restarted = start(controllers, kubeconfig, tmp_path, cluster, "joiner-restarted")
    lowest = REPLICAS
    cordoned: set[str] = set()
    left_bound: set[str] = set()
    deadline = time.monotonic() + 200
    while time.monotonic() < deadline:
        nodes = {n.metadata.name: n for n in cluster.nodes()}
        cordoned |= {
            name
            for name, n in nodes.items()
            if name in victim_nodes and any(t.key == DISRUPTED for t in n.spec.taints or [])
        }
        pods = [p for p in cluster.pods("web") if p.metadata.deletionTimestamp is None]
        # A pod bound to a Node that no longer exists is not available, whatever its phase.
        left_bound |= {
            p.metadata.name for p in pods if p.spec.nodeName in victim_nodes - set(nodes)
        }
        # Nodes listed again: a pod already Running on a Node made since the first list.
        current = {n.metadata.name for n in cluster.nodes()}
        available = [
            p
            for p in pods
            if p.spec.nodeName in set(nodes) | current and p.status.phase == "Running"
        ]
        lowest = min(lowest, len(available))
        if not victim_nodes & current and len(available) == REPLICAS:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"{sorted(victim_nodes)} not drained and removed in time")
    assert not left_bound, f"pods left bound to a deleted Node: {sorted(left_bound)}"
    assert lowest >= MIN_AVAILABLE, (
        f"the PDB (minAvailable {MIN_AVAILABLE}) was broken: {lowest} pods available at worst"
    )
    assert cordoned == victim_nodes, f"not cordoned before they went: {victim_nodes - cordoned}"
    evicted = _evictions(kube_stack.audit_log, restarted.name, cluster.name, restarted_at)
    assert on_victims <= set(evicted), (sorted(on_victims), evicted)
    # Replacement capacity: every pod runs, none on a victim, NodeClaims and Nodes match.
    pods = wait_for(f"{REPLICAS} web pods running", lambda: cluster.running("web", REPLICAS), 60)
    assert not victim_nodes & {p.spec.nodeName for p in pods}
    wait_for(
        f"NodeClaim {claimed_victim} gone with its Node",
        lambda: claimed_victim not in {c.metadata.name for c in cluster.nodeclaims()},
        60,
    )
    wait_for("NodeClaims and Nodes match", lambda: (c := cluster.consistent()) and c[1] and c)
    assert "Traceback" not in restarted.log.read_text(), restarted.tail()
