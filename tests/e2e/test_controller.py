"""Controller mode (``joiner run``) on the real stack: kube-apiserver, kube-scheduler,
kube-controller-manager and kwok (issue 9).

The controller runs as a subprocess with simulated capacity, so its Nodes are kwok's. Every
test has its own namespace and NodePool (``joinerctl``), and its own controller process;
every wait polls with a generous deadline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from joinerctl import (
    ON_DEMAND_4CPU,
    SPOT_4CPU,
    SPOT_OR_OD,
    Cluster,
    ControllerProcess,
    deployment_doc,
    events,
    joiner,
    metric,
    nodepool_doc,
    start,
    token_kubeconfig,
    wait_for,
)
from kubestack import NODE_MONITOR_GRACE_SECONDS, NODE_MONITOR_PERIOD_SECONDS
from lightkube import Client, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Node, Pod, Secret
from lightkube.types import PatchType

pytestmark = pytest.mark.e2e


def test_pending_pods_get_nodeclaims_and_nodes_and_run(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster, controllers: list[ControllerProcess]
) -> None:
    cluster.apply(nodepool_doc(cluster.name, requirements=SPOT_OR_OD))
    ctl = start(controllers, kubeconfig, tmp_path, cluster)
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=6))
    # A pod no instance type can hold: Joiner's FailedScheduling (Karpenter's wording).
    cluster.apply(deployment_doc("huge", cluster.name, cluster.name, replicas=1, cpu="500"))

    pods = wait_for("6 web pods running", lambda: cluster.running("web", 6), 120)
    claims, nodes = wait_for("NodeClaims and Nodes match", cluster.consistent, 60)
    assert claims and len(claims) == len(nodes)
    assert {p.spec.nodeName for p in pods} <= nodes  # the real kube-scheduler bound them
    for node in cluster.nodes():
        assert node.metadata.annotations["kwok.x-k8s.io/node"] == "fake"
        assert node.spec.providerID.startswith("aws:///us-east-1")
        labels = node.metadata.labels
        for key in (
            "node.kubernetes.io/instance-type",
            "topology.kubernetes.io/zone",
            "karpenter.sh/capacity-type",
            "kubernetes.io/arch",
        ):
            assert labels.get(key), (node.metadata.name, key)
        assert labels["karpenter.sh/registered"] == "true"
        assert labels["karpenter.sh/initialized"] == "true"
        assert not any(t.key == "karpenter.sh/unregistered" for t in node.spec.taints or [])
    for claim in cluster.nodeclaims():
        conditions = {c["type"]: c["status"] for c in claim["status"]["conditions"]}
        assert conditions["Launched"] == conditions["Initialized"] == "True"
        assert claim["status"]["nodeName"] in nodes
    _assert_nodepool_status(cluster, claims)

    # Karpenter's Events: each condition's transition on each NodeClaim, Nominated on pods.
    posted = events(cluster.client, "default")
    for condition in ("Launched", "Registered", "Initialized"):
        about = [e for e in posted if e.reason == condition and e.involvedObject.name in claims]
        assert {e.involvedObject.name for e in about} == claims, condition
        assert {e.message for e in about} == {
            f"Status condition transitioned, Type: {condition}, Status: Unknown -> True, "
            f"Reason: {condition}"
        }
    nominated = [e for e in events(cluster.client, cluster.name) if e.reason == "Nominated"]
    assert {e.involvedObject.name for e in nominated} == {p.metadata.name for p in pods}
    assert all(e.message.startswith("Pod should schedule on: nodeclaim/") for e in nominated)
    failed = wait_for(
        "Joiner's FailedScheduling on the huge pod",
        lambda: (
            [
                e
                for e in events(cluster.client, cluster.name)
                if e.reason == "FailedScheduling" and e.source.component == "joiner"
            ]
            or None
        ),
        60,
    )
    assert {e.involvedObject.name.rsplit("-", 2)[0] for e in failed} == {"huge"}
    assert all(e.type == "Warning" for e in failed)
    assert all(e.message.startswith("Failed to schedule pod, ") for e in failed)
    status, body = ctl.http("/metrics")
    assert status == 200
    assert metric(body, "karpenter_nodeclaims_created_total") >= len(claims)
    assert metric(body, "karpenter_pods_startup_duration_seconds_count") >= 6
    assert metric(body, "karpenter_scheduler_scheduling_duration_seconds_count") >= 1
    assert ctl.http("/healthz", ctl.health_port)[0] == 200

    # A NodeClaim deleted by hand: its node is drained and deleted, its pods run elsewhere.
    from joinerctl import NodeClaimRes

    victim = sorted(claims)[0]
    victim_node = next(
        c["status"]["nodeName"] for c in cluster.nodeclaims() if c.metadata.name == victim
    )
    cluster.client.delete(NodeClaimRes, victim)
    wait_for(
        "its node deleted",
        lambda: (c := cluster.consistent()) and victim_node not in c[1] and c,
        120,
    )
    pods = wait_for("6 web pods running again", lambda: cluster.running("web", 6), 120)
    assert victim_node not in {p.spec.nodeName for p in pods}
    # Its pods were evicted, with no disruption reason: Karpenter's "Forceful Termination".
    evicted = [e for e in events(cluster.client, cluster.name) if e.reason == "Evicted"]
    assert evicted and {e.message for e in evicted} == {"Evicted pod: Forceful Termination"}


def test_scale_down_consolidates_through_evictions_within_a_pdb(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster, controllers: list[ControllerProcess]
) -> None:
    # c6a.xlarge (4 vCPU, 3.92 allocatable): two 1.5-CPU pods per node.
    cluster.apply(nodepool_doc(cluster.name, requirements=ON_DEMAND_4CPU))
    start(controllers, kubeconfig, tmp_path, cluster)
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=4, cpu="1500m"))
    running = wait_for("4 web pods running", lambda: cluster.running("web", 4), 120)
    _, nodes = wait_for("2 nodes", lambda: (c := cluster.consistent()) and len(c[1]) == 2 and c)
    # The node lifecycle controller marks a Node NotReady once its heartbeat (kwok's node
    # Lease) is older than its grace period (checked every monitor period): the nodes must
    # still be Ready after that, and the consolidation below must not depend on finishing
    # before it.
    age_s = NODE_MONITOR_GRACE_SECONDS + NODE_MONITOR_PERIOD_SECONDS + 5
    old = wait_for(
        f"both nodes older than {age_s} s", lambda: _all_older_than(cluster, nodes, age_s), 120
    )
    assert {n: _ready(n_obj) for n, n_obj in old.items()} == dict.fromkeys(nodes, "True")
    running = wait_for("4 web pods still running", lambda: cluster.running("web", 4), 60)
    # One pod per node is cheaper to delete (pod-deletion-cost), so the scale-down below
    # leaves each node half full: consolidation must delete one and move its pod to the
    # other through the Eviction API.
    by_node: dict[str, list[str]] = {}
    for p in running:
        by_node.setdefault(p.spec.nodeName, []).append(p.metadata.name)
    assert sorted(len(v) for v in by_node.values()) == [2, 2]
    for names in by_node.values():
        for name, cost in zip(sorted(names), ("-100", "100"), strict=True):
            cluster.client.patch(
                Pod,
                name,
                {"metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost": cost}}},
                namespace=cluster.name,
                patch_type=PatchType.MERGE,
            )
    cluster.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": cluster.name},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        }
    )
    cluster.scale("web", 2)
    remaining = wait_for(
        "one node left", lambda: (c := cluster.consistent()) and len(c[1]) == 1 and c, 180
    )
    pods = wait_for("2 web pods running", lambda: cluster.running("web", 2), 120)
    assert {p.spec.nodeName for p in pods} == remaining[1]
    gone = nodes - remaining[1]
    assert len(gone) == 1
    reasons = [(e.reason, e.involvedObject.name) for e in events(cluster.client, cluster.name)]
    assert any(r == "Eviction" for r, _ in reasons), reasons
    # Karpenter's Events of the consolidation: the moved pod Evicted for Underutilized, the
    # deleted Node and its NodeClaim DisruptionTerminating (cluster-scoped: eventNamespace).
    evicted = [e.message for e in events(cluster.client, cluster.name) if e.reason == "Evicted"]
    assert evicted and set(evicted) == {"Evicted pod: Underutilized"}, evicted
    terminating = {
        (e.involvedObject.kind, e.message)
        for e in events(cluster.client, "default")
        if e.reason == "DisruptionTerminating"
        and (
            e.involvedObject.name in gone
            or (
                e.involvedObject.kind == "NodeClaim"
                and e.involvedObject.name.startswith(f"{cluster.name}-")
            )
        )
    }
    assert terminating == {
        ("Node", "Disrupting Node: Underutilized"),
        ("NodeClaim", "Disrupting NodeClaim: Underutilized"),
    }, terminating

    # The PDB is the API server's: an eviction beyond it is refused (429) and the pods stay.
    cluster.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": cluster.name},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        }
    )
    wait_for(
        "PDB allows no disruption",
        lambda: _pdb_allowed(cluster, "web") == 0,
    )
    with pytest.raises(ApiError) as refused:
        cluster.client.create(
            Pod.Eviction(metadata=ObjectMeta(name=pods[0].metadata.name, namespace=cluster.name)),
            name=pods[0].metadata.name,
            namespace=cluster.name,
        )
    assert refused.value.status.code == 429
    # Joiner's disruption sees the same budget: the node left is DisruptionBlocked.
    (left,) = remaining[1]
    blocked = wait_for(
        "DisruptionBlocked on the node left",
        lambda: (
            [
                e
                for e in events(cluster.client, "default")
                if e.reason == "DisruptionBlocked" and e.involvedObject.name == left
            ]
            or None
        ),
        60,
    )
    assert {e.message for e in blocked} == {
        f"Pdb prevents pod evictions (PodDisruptionBudget=[{cluster.name}/web])"
    }


def _assert_nodepool_status(cluster: Cluster, claims: set[str]) -> None:
    """The NodePool's status as Karpenter writes it: its NodeClaims' capacity summed (with
    ``nodes``), and ``Ready`` from ``ValidationSucceeded`` and ``NodeClassReady``."""
    from joinerctl import EC2NodeClassRes, NodePoolRes

    from joiner.api import quantity

    def status() -> dict[str, Any] | None:
        got = cluster.client.get(NodePoolRes, cluster.name).get("status") or {}
        return got if got.get("nodes") == len(claims) else None

    pool = wait_for(f"NodePool status counts {len(claims)} nodes", status, 60)
    want: dict[str, int] = {}
    for claim in cluster.nodeclaims():
        capacity = claim["status"]["capacity"]
        for name, text in capacity.items():
            want[name] = want.get(name, 0) + quantity.parse(text, resource=name)
    for name, total in want.items():
        assert quantity.parse(pool["resources"][name], resource=name) == total, name
    assert pool["resources"]["nodes"] == str(len(claims))
    assert pool["resources"]["cpu"].isdigit()  # canonical: whole CPUs without "m"
    conditions = {c["type"]: c for c in pool["conditions"]}
    for kind in ("ValidationSucceeded", "NodeClassReady", "Ready"):
        assert conditions[kind]["status"] == "True", conditions[kind]
    assert conditions["Ready"]["reason"] == "Ready"
    nodeclass = cluster.client.get(EC2NodeClassRes, "e2e")
    assert pool["nodeClassObservedGeneration"] == nodeclass.metadata.generation
    assert all(c["observedGeneration"] == 1 for c in conditions.values())
    ready = {c["type"]: c["status"] for c in (nodeclass.get("status") or {})["conditions"]}
    assert ready["Ready"] == ready["SubnetsReady"] == "True"


def _all_older_than(cluster: Cluster, names: set[str], age_s: float) -> dict[str, Node] | None:
    """The Nodes ``names`` once each was created more than ``age_s`` seconds ago (its
    creationTimestamp against this machine's clock, which the loopback stack shares)."""
    from datetime import UTC, datetime

    got = {n.metadata.name: n for n in cluster.nodes() if n.metadata.name in names}
    if set(got) != names:
        return None
    now = datetime.now(UTC)
    ages = [(now - n.metadata.creationTimestamp).total_seconds() for n in got.values()]
    return got if min(ages) > age_s else None


def _ready(node: Node) -> str | None:
    """Status of the Node's Ready condition."""
    conditions = node.status.conditions if node.status else None
    return next((c.status for c in conditions or [] if c.type == "Ready"), None)


def _pdb_allowed(cluster: Cluster, name: str) -> int | None:
    from lightkube.resources.policy_v1 import PodDisruptionBudget

    pdb = cluster.client.get(PodDisruptionBudget, name, namespace=cluster.name)
    if pdb.status is None or pdb.status.observedGeneration != pdb.metadata.generation:
        return None
    return pdb.status.disruptionsAllowed


@pytest.fixture(scope="session")
def sqs_endpoint() -> Iterator[str]:
    """A moto server on loopback: the SQS interruption queue."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def test_spot_interruption_from_the_queue_replaces_and_drains_the_node(
    kubeconfig: Path,
    tmp_path: Path,
    cluster: Cluster,
    controllers: list[ControllerProcess],
    sqs_endpoint: str,
) -> None:
    import boto3

    sqs = boto3.client(
        "sqs",
        endpoint_url=sqs_endpoint,
        region_name="us-east-1",
        **{"aws_access_key_id": "testing", "aws_secret_access_key": "testing"},
    )
    url = sqs.create_queue(QueueName=cluster.name)["QueueUrl"]
    cluster.apply(nodepool_doc(cluster.name, requirements=SPOT_4CPU))
    ctl = start(
        controllers,
        kubeconfig,
        tmp_path,
        cluster,
        interruptionQueue=url,
        awsEndpointURL=sqs_endpoint,
        env=AWS_ENV,
    )
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=2, cpu="1500m"))
    wait_for("2 web pods running", lambda: cluster.running("web", 2), 120)
    (claim,), (node,) = wait_for("one node", lambda: (c := cluster.consistent()) and c)
    victim = cluster.client.get(Node, node)
    instance_id = victim.spec.providerID.rsplit("/", 1)[-1]
    zone = victim.metadata.labels["topology.kubernetes.io/zone"]
    message = {
        "version": "0",
        "id": "e2e-1",
        "detail-type": "EC2 Spot Instance Interruption Warning",
        "source": "aws.ec2",
        "account": "123456789012",
        "time": "2026-11-30T00:00:00Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:ec2:{zone}:instance/{instance_id}"],
        "detail": {"instance-id": instance_id, "instance-action": "terminate"},
    }
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(message))

    def replaced() -> tuple[set[str], set[str]] | None:
        c = cluster.consistent()
        return c if c and c[1] and node not in c[1] else None

    claims, nodes = wait_for("the node replaced", replaced, 180)
    assert claim not in claims
    pods = wait_for("2 web pods running elsewhere", lambda: cluster.running("web", 2), 120)
    assert {p.spec.nodeName for p in pods} <= nodes
    with pytest.raises(ApiError):
        cluster.client.get(Node, node)
    reasons = {e.reason for e in events(cluster.client, cluster.name)}
    assert "Eviction" in reasons
    node_reasons = {
        e.reason for e in events(cluster.client, "default") if e.involvedObject.name == claim
    }
    assert {"Notice", "Cordon", "DrainStarted", "Terminated"} <= node_reasons, node_reasons
    assert metric(ctl.http("/metrics")[1], "karpenter_interruption_received_messages_total") >= 1
    assert wait_for(
        "the message deleted",
        lambda: (
            sqs.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                ],
            )["Attributes"]
            == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}
        ),
    )


def _holder(cluster: Cluster) -> str | None:
    from lightkube.resources.coordination_v1 import Lease

    try:
        lease = cluster.client.get(Lease, "joiner", namespace=cluster.name)
    except ApiError:
        return None
    return lease.spec.holderIdentity if lease.spec else None


def test_leader_failover_and_restart_rebuild_state_without_duplicates_or_orphans(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster, controllers: list[ControllerProcess]
) -> None:
    cluster.apply(nodepool_doc(cluster.name, requirements=SPOT_OR_OD))
    a = start(controllers, kubeconfig, tmp_path, cluster, "joiner-a")
    b = start(controllers, kubeconfig, tmp_path, cluster, "joiner-b", leader=False)
    assert _holder(cluster) == "joiner-a" and not b.leading()
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=4))
    wait_for("4 web pods running", lambda: cluster.running("web", 4), 120)
    before, _ = wait_for("NodeClaims and Nodes match", cluster.consistent)
    # An instance whose NodeClaim is gone (a crash between the two deletions): the next
    # leader rebuilds its state from the API and removes it.
    orphan = f"{cluster.name}-orphan"
    cluster.client.create(
        Node.from_dict(
            {
                "metadata": {
                    "name": orphan,
                    "annotations": {"kwok.x-k8s.io/node": "fake"},
                    "labels": {"karpenter.sh/nodepool": cluster.name},
                },
                "spec": {
                    "providerID": "aws:///us-east-1a/i-0rphan",
                    "taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}],
                },
            }
        )
    )

    a.kill()  # no lease release: b must wait for it to expire
    wait_for("joiner-b leading", b.leading, 60)
    assert _holder(cluster) == "joiner-b"
    wait_for(
        "the orphan Node deleted", lambda: orphan not in {n.metadata.name for n in cluster.nodes()}
    )
    after, _ = wait_for("NodeClaims and Nodes match", cluster.consistent)
    assert after == before  # adopted, not duplicated
    metrics = b.http("/metrics")[1]
    assert metric(metrics, "karpenter_nodeclaims_created_total") == 0

    a2 = start(controllers, kubeconfig, tmp_path, cluster, "joiner-a", leader=False)
    cluster.scale("web", 8)
    wait_for("8 web pods running", lambda: cluster.running("web", 8), 120)
    claims, nodes = wait_for("NodeClaims and Nodes match", cluster.consistent)
    assert claims >= before and len(claims) == len(nodes)
    assert not a2.leading() and _holder(cluster) == "joiner-b"


def test_runs_with_the_charts_service_account_and_nothing_more(
    kubeconfig: Path,
    tmp_path: Path,
    admin: Client,
    cluster: Cluster,
    controllers: list[ControllerProcess],
) -> None:
    from joinerctl import service_account_token
    from lightkube.codecs import from_dict
    from test_chart import render

    # The chart's ServiceAccount and RBAC as `helm install joiner deploy/chart -n joiner`
    # creates them (the chart is their only source).
    admin.apply(Namespace(metadata=ObjectMeta(name="joiner")), force=True)
    rbac = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    for doc in render("cloud=simulated", namespace="joiner"):
        if doc["kind"] in rbac:
            admin.apply(from_dict(doc), force=True)
    token = service_account_token(admin, "joiner", "joiner")
    sa_kubeconfig = token_kubeconfig(kubeconfig, token, tmp_path / "joiner-sa.kubeconfig")
    as_joiner = Client(KubeConfig.from_file(sa_kubeconfig))

    cluster.apply(nodepool_doc(cluster.name, requirements=SPOT_OR_OD))
    proc = ControllerProcess(
        sa_kubeconfig,
        tmp_path,
        "joiner-sa",
        {
            "leaderElection": {
                "namespace": "joiner",
                "name": f"joiner-{cluster.name}",
                "leaseDurationSeconds": 6,
                "renewDeadlineSeconds": 4,
                "retryPeriodSeconds": 1,
            }
        },
    )
    controllers.append(proc.start())
    wait_for("joiner-sa leading", lambda: proc.leading() or (not proc.alive() and proc.tail()))
    assert proc.alive(), proc.tail()
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=3))
    wait_for("3 web pods running", lambda: cluster.running("web", 3), 120)
    wait_for("NodeClaims and Nodes match", lambda: (c := cluster.consistent()) and c[0] and c)
    assert metric(proc.http("/metrics")[1], "joiner_reconcile_errors_total") == 0, proc.tail()

    admin.create(
        Secret(metadata=ObjectMeta(name="db", namespace=cluster.name), stringData={"k": "v"})
    )
    with pytest.raises(ApiError) as refused:
        as_joiner.delete(Secret, "db", namespace=cluster.name)
    assert refused.value.status.code == 403
    with pytest.raises(ApiError) as refused_read:
        as_joiner.get(Secret, "db", namespace=cluster.name)
    assert refused_read.value.status.code == 403
    assert admin.get(Secret, "db", namespace=cluster.name).metadata.name == "db"


def _versions(cluster: Cluster) -> dict[str, str]:
    """resourceVersion of every object a controller could touch: Nodes, NodeClaims,
    NodePools, EC2NodeClasses, the test namespace's Pods and Leases, and the Events about
    this test's objects."""
    from joinerctl import EC2NodeClassRes, NodeClaimRes, NodePoolRes
    from lightkube.resources.coordination_v1 import Lease
    from lightkube.resources.core_v1 import Event

    c = cluster.client
    out: dict[str, str] = {}
    for res, ns in (
        (Node, None),
        (NodeClaimRes, None),
        (NodePoolRes, None),
        (EC2NodeClassRes, None),
        (Pod, cluster.name),
        (Lease, cluster.name),
        (Event, "default"),
    ):
        kwargs = {"namespace": ns} if ns else {}
        for obj in c.list(res, **kwargs):
            meta = obj.metadata
            if res is Event and not obj.involvedObject.name.startswith(cluster.name):
                continue  # other tests' nodes going away (the node controller's events)
            out[f"{res.__name__}/{meta.namespace}/{meta.name}"] = str(meta.resourceVersion)
    return out


def test_dry_run_writes_nothing_and_reports_the_plan(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster, controllers: list[ControllerProcess]
) -> None:
    cluster.apply(nodepool_doc(cluster.name, requirements=ON_DEMAND_4CPU))
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=5, cpu="1500m"))

    def settled() -> dict[str, str] | None:
        pods = cluster.pods("web")
        if len(pods) != 5 or not all(
            any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or [])
            for p in pods
        ):
            return None
        first = _versions(cluster)
        time.sleep(2)
        return first if _versions(cluster) == first else None

    before = wait_for("pending pods settled", settled, 60)
    plan = json.loads(joiner("plan", "--kubeconfig", str(kubeconfig), "-o", "json").stdout)
    planned = [c for c in plan["nodeClaims"] if c["nodePool"] == cluster.name]
    assert planned

    report = tmp_path / "dry-run.jsonl"
    start(
        controllers,
        kubeconfig,
        tmp_path,
        cluster,
        "joiner-dry",
        leader=False,
        extra=("--dry-run", "--report", str(report)),
    )

    def launches() -> list[dict[str, object]] | None:
        if not report.exists():
            return None
        entries = [json.loads(line) for line in report.read_text().splitlines()]
        found = [e for e in entries if e["action"] == "launch" and e["nodepool"] == cluster.name]
        pods = [p for e in found for p in e["pods"]]  # type: ignore[attr-defined]
        return found if len(pods) == 5 else None

    found = wait_for("the dry run's launches", launches, 90)
    controllers[-1].stop()
    assert _versions(cluster) == before  # nothing written: no Lease, Node, NodeClaim, Event
    assert sorted(e["instanceType"] for e in found) == sorted(
        c["launch"]["instanceType"] for c in planned
    )
    assert sorted(p for e in found for p in e["pods"]) == sorted(  # type: ignore[attr-defined]
        p for c in planned for p in c["pods"]
    )
    assert not cluster.nodeclaims() and not cluster.nodes()


def test_simulated_cloud_refuses_a_cluster_with_nodes_kwok_does_not_manage(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster, controllers: list[ControllerProcess]
) -> None:
    """``--cloud simulated`` would add kwok Nodes to a real cluster: with a Node that has no
    ``kwok.x-k8s.io/node: fake`` annotation it exits 2 naming the Node and the flag, having
    written nothing; ``--allow-simulated-nodes`` lets it run, and a dry run is not refused."""
    from joinerctl import launch

    real = f"{cluster.name}-real"
    cluster.client.create(Node(metadata=ObjectMeta(name=real, labels={"e2e": cluster.name})))
    try:
        refused = launch(controllers, kubeconfig, tmp_path, cluster, "joiner-refused")
        code = wait_for("the refusal", lambda: None if refused.alive() else refused.proc, 60)
        assert code.returncode == 2, refused.tail()
        flat = " ".join(refused.tail().split())
        assert "field --cloud: this cluster has 1 Node(s) not managed by kwok" in flat, flat
        assert real in flat and "--allow-simulated-nodes" in flat
        assert "Traceback" not in flat
        for name, extra, leads in (
            ("joiner-allowed", ("--allow-simulated-nodes",), True),
            ("joiner-shadow", ("--dry-run",), False),  # no lease; ready once past the check
        ):
            proc = start(
                controllers, kubeconfig, tmp_path, cluster, name, extra=extra, leader=leads
            )
            assert proc.alive(), proc.tail()
            assert proc.stop() == 0, proc.tail()
    finally:
        cluster.client.delete(Node, real)


def test_a_pod_on_a_zonal_volume_gets_a_node_in_the_volume_zone(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster, controllers: list[ControllerProcess]
) -> None:
    """A PersistentVolume pinned to one zone (node affinity), a claim bound to it and a
    WaitForFirstConsumer StorageClass: the controller watches all three and launches the
    pod's NodeClaim in the volume's zone, where kube-scheduler binds the pod."""
    from joinerctl import NODEPOOL_LABEL
    from lightkube.resources.core_v1 import PersistentVolume
    from lightkube.resources.storage_v1 import StorageClass

    zone = "us-east-1d"
    name = cluster.name
    cluster.apply(nodepool_doc(name, requirements=SPOT_OR_OD))
    start(controllers, kubeconfig, tmp_path, cluster)
    volume = {"storageClassName": name, "accessModes": ["ReadWriteOnce"]}
    try:
        cluster.apply(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
        term = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name},
                "spec": {
                    **volume,
                    "capacity": {"storage": "1Gi"},
                    "hostPath": {"path": f"/tmp/{name}"},
                    "nodeAffinity": {
                        "required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}
                    },
                },
            }
        )
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "namespace": name},
                "spec": {
                    **volume,
                    "volumeName": name,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        )
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "db", "namespace": name, "labels": {"app": "db"}},
                "spec": {
                    "nodeSelector": {NODEPOOL_LABEL: name},
                    "terminationGracePeriodSeconds": 0,
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.invalid/pause:3.10",
                            "resources": {"requests": {"cpu": "1", "memory": "256Mi"}},
                        }
                    ],
                },
            }
        )
        (pod,) = wait_for("the db pod running", lambda: cluster.running("db", 1), 120)
        claims, nodes = wait_for("NodeClaims and Nodes match", cluster.consistent, 60)
        assert len(claims) == 1 and nodes == {pod.spec.nodeName}
        (claim,) = cluster.nodeclaims()
        assert claim.metadata.labels["topology.kubernetes.io/zone"] == zone
        (node,) = cluster.nodes()
        assert node.metadata.labels["topology.kubernetes.io/zone"] == zone
    finally:
        for res in (PersistentVolume, StorageClass):
            try:
                cluster.client.delete(res, name)
            except ApiError as exc:
                if exc.status.code != 404:
                    raise
