"""The NodeClaim lifecycle in controller mode on the real stack (issue 18): the
``karpenter.sh/termination`` finalizer (a Node deleted by someone is drained first), the
registration timeout (Nodes refused by an admission policy), and a NodeClaim deleted while
the controller is down, drained within its PodDisruptionBudget after the restart."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from joinerctl import (
    ON_DEMAND_4CPU,
    Cluster,
    ControllerProcess,
    NodeClaimRes,
    deployment_doc,
    events,
    nodepool_doc,
    start,
    wait_for,
)
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource
from lightkube.resources.core_v1 import Node

pytestmark = pytest.mark.e2e

FINALIZER = "karpenter.sh/termination"
PolicyRes = create_global_resource(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingAdmissionPolicy",
    "validatingadmissionpolicies",
)
BindingRes = create_global_resource(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingAdmissionPolicyBinding",
    "validatingadmissionpolicybindings",
)


def test_a_node_deleted_by_someone_is_drained_before_it_goes(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster, controllers: list[ControllerProcess]
) -> None:
    cluster.apply(nodepool_doc(cluster.name, requirements=ON_DEMAND_4CPU))
    start(controllers, kubeconfig, tmp_path, cluster)
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=2, cpu="1500m"))
    wait_for("2 web pods running", lambda: cluster.running("web", 2), 120)
    (claim,), (node,) = wait_for("one node", lambda: (c := cluster.consistent()) and c)
    assert FINALIZER in (cluster.client.get(Node, node).metadata.finalizers or [])
    assert FINALIZER in (cluster.client.get(NodeClaimRes, claim).metadata.finalizers or [])

    cluster.client.delete(Node, node)
    # The finalizer holds the Node while its pods are evicted and replaced elsewhere.
    held = cluster.client.get(Node, node)
    assert held.metadata.deletionTimestamp is not None

    def moved() -> list[Any] | None:
        pods = cluster.running("web", 2)
        return pods if pods and all(p.spec.nodeName != node for p in pods) else None

    wait_for("2 web pods running on another node", moved, 120)

    def gone() -> bool:
        try:
            cluster.client.get(Node, node)
        except ApiError as exc:
            return exc.status.code == 404
        return False

    wait_for("the Node gone", gone, 60)
    wait_for(
        "its NodeClaim gone", lambda: claim not in {c.metadata.name for c in cluster.nodeclaims()}
    )
    reasons = [e.reason for e in events(cluster.client, cluster.name)]
    assert reasons.count("Eviction") >= 2, reasons


def test_a_nodeclaim_that_never_registers_is_replaced_after_the_registration_timeout(
    kubeconfig: Path,
    tmp_path: Path,
    admin: Any,
    cluster: Cluster,
    controllers: list[ControllerProcess],
) -> None:
    # Nodes of this test's pool are refused by the API server: they never register.
    name = f"{cluster.name}-no-nodes"
    admin.create(
        PolicyRes.from_dict(
            {
                "metadata": {"name": name},
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": {
                        "resourceRules": [
                            {
                                "apiGroups": [""],
                                "apiVersions": ["v1"],
                                "operations": ["CREATE"],
                                "resources": ["nodes"],
                            }
                        ]
                    },
                    "validations": [
                        {
                            "expression": "!has(object.metadata.labels) || "
                            "object.metadata.labels[?'karpenter.sh/nodepool'].orValue('') "
                            f"!= '{cluster.name}'",
                            "message": "e2e: no nodes for this pool",
                        }
                    ],
                },
            }
        )
    )
    binding = BindingRes.from_dict(
        {
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        }
    )
    admin.create(binding)
    try:
        cluster.apply(nodepool_doc(cluster.name, requirements=ON_DEMAND_4CPU))
        start(controllers, kubeconfig, tmp_path, cluster, registrationTimeoutSeconds=6)
        cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=1))
        seen: set[str] = set()

        def replaced() -> bool:
            seen.update(c.metadata.name for c in cluster.nodeclaims())
            return len(seen) >= 2

        wait_for("a second NodeClaim after the timeout", replaced, 90)
        assert not cluster.nodes()
        timeouts = [
            e for e in events(cluster.client, "default") if e.reason == "RegistrationTimeout"
        ]
        assert {e.involvedObject.name for e in timeouts} & seen, timeouts
    finally:
        admin.delete(BindingRes, name)
        admin.delete(PolicyRes, name)
    # Once Nodes may register again, the next NodeClaim's does and the pod runs.
    wait_for("the web pod running", lambda: cluster.running("web", 1), 120)
    wait_for("NodeClaims and Nodes match", lambda: (c := cluster.consistent()) and c[1] and c)


@pytest.mark.timeout(300)
def test_a_nodeclaim_deleted_while_the_controller_is_down_is_drained_within_its_pdb(
    kubeconfig: Path, tmp_path: Path, cluster: Cluster, controllers: list[ControllerProcess]
) -> None:
    cluster.apply(nodepool_doc(cluster.name, requirements=ON_DEMAND_4CPU))
    ctl = start(controllers, kubeconfig, tmp_path, cluster)
    # Two 1.5-CPU pods per c6a.xlarge: 4 pods on 2 nodes; the PDB allows one at a time.
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=4, cpu="1500m"))
    cluster.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": cluster.name},
            "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}},
        }
    )
    wait_for("4 web pods running", lambda: cluster.running("web", 4), 120)
    claims, _ = wait_for("2 nodes", lambda: (c := cluster.consistent()) and len(c[1]) == 2 and c)
    assert ctl.stop() == 0

    victim = sorted(claims)[0]
    victim_node = cluster.client.get(NodeClaimRes, victim)["status"]["nodeName"]
    cluster.client.delete(NodeClaimRes, victim)
    time.sleep(2)
    held = cluster.client.get(NodeClaimRes, victim)  # the finalizer holds it for the drain
    assert held.metadata.deletionTimestamp is not None
    assert cluster.running("web", 4) and victim_node in {n.metadata.name for n in cluster.nodes()}

    start(controllers, kubeconfig, tmp_path, cluster, "joiner-restarted")
    lowest = 4
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        pods = [
            p
            for p in cluster.pods("web")
            if p.metadata.deletionTimestamp is None
            and p.spec.nodeName
            and p.status.phase == "Running"
        ]
        lowest = min(lowest, len(pods))
        if victim_node not in {n.metadata.name for n in cluster.nodes()} and len(pods) == 4:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"{victim_node} not drained and removed in time")
    assert lowest >= 3, f"the PDB (minAvailable 3) was broken: {lowest} pods running at worst"
    # The Node goes first; the NodeClaim's finalizer is lifted once its instance is gone
    # (Karpenter's termination order), so the NodeClaim may outlive the Node briefly.
    wait_for(
        f"NodeClaim {victim} removed",
        lambda: victim not in {c.metadata.name for c in cluster.nodeclaims()},
        60,
    )
    pods = wait_for("4 web pods running", lambda: cluster.running("web", 4), 60)
    assert victim_node not in {p.spec.nodeName for p in pods}
    reasons = [e.reason for e in events(cluster.client, cluster.name)]
    assert reasons.count("Eviction") >= 2, reasons
