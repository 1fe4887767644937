"""The test stack itself: real kube-scheduler, kube-controller-manager and kwok behaviour.

These check the assumptions the controller-mode work builds on (issue 9, reference
kube-test-stack.md §7 step 5): kwok makes annotated Nodes Ready and bound pods Running, the
scheduler respects Karpenter's unregistered taint and reports unschedulable pods as
``PodScheduled=False/Unschedulable``, and the controller manager runs Deployments and
computes PodDisruptionBudget status.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from kubestack import pid_alive
from lightkube import Client, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.models.apps_v1 import DeploymentSpec
from lightkube.models.core_v1 import (
    Container,
    NodeSpec,
    NodeStatus,
    PodSpec,
    PodTemplateSpec,
    ResourceRequirements,
    Taint,
)
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.models.policy_v1 import PodDisruptionBudgetSpec
from lightkube.resources.apps_v1 import Deployment, ReplicaSet
from lightkube.resources.core_v1 import Namespace, Node, Pod
from lightkube.resources.policy_v1 import PodDisruptionBudget

pytestmark = pytest.mark.e2e

UNREGISTERED = "karpenter.sh/unregistered"
HOSTNAME = "kubernetes.io/hostname"
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 60.0) -> T:
    """Poll ``probe`` every 0.2 s until it returns something other than None or False.

    Raises:
        AssertionError: not within ``timeout_s`` seconds; names ``what`` and the last value.
    """
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last is not None and last is not False:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")


@pytest.fixture
def client(kubeconfig: Path) -> Client:
    return Client(KubeConfig.from_file(kubeconfig), field_manager="joiner-e2e")


@pytest.fixture
def namespace(client: Client) -> Iterator[str]:
    name = f"e2e-{secrets.token_hex(4)}"
    client.create(Namespace(metadata=ObjectMeta(name=name)))
    yield name
    client.delete(Namespace, name)


@pytest.fixture
def make_node(client: Client) -> Iterator[Callable[..., str]]:
    """Create kwok Nodes shaped like Karpenter's KWOK provider's; deleted afterwards."""
    created: list[str] = []

    def make(taints: list[Taint] | None = None) -> str:
        name = f"kwok-e2e-{secrets.token_hex(4)}"
        node = Node(
            metadata=ObjectMeta(
                name=name,
                annotations={"kwok.x-k8s.io/node": "fake"},
                labels={
                    HOSTNAME: name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "node.kubernetes.io/instance-type": "m5.large",
                    "topology.kubernetes.io/zone": "us-east-1a",
                    "karpenter.sh/capacity-type": "spot",
                    "karpenter.sh/nodepool": "default",
                },
            ),
            spec=NodeSpec(providerID=f"kwok://{name}", taints=taints),
            # The Node registry keeps status on create; kwok keeps the given allocatable.
            status=NodeStatus(
                capacity={"cpu": "2", "memory": "8Gi", "pods": "110"},
                allocatable={"cpu": "1930m", "memory": "7Gi", "pods": "110"},
                phase="Pending",
            ),
        )
        client.create(node)
        created.append(name)
        return name

    yield make
    for name in created:
        client.delete(Node, name)


def condition(obj: Node | Pod, kind: str) -> tuple[str, str | None] | None:
    """(status, reason) of the condition of type ``kind``, or None when absent."""
    for cond in (obj.status.conditions if obj.status else None) or []:
        if cond.type == kind:
            return cond.status, cond.reason
    return None


def node_ready(client: Client, name: str) -> bool:
    """Whether the Node's Ready condition is True."""
    ready = condition(client.get(Node, name), "Ready")
    return ready is not None and ready[0] == "True"


def pod_exists(client: Client, name: str, namespace: str) -> bool:
    """Whether the pod ``namespace/name`` is still in the API server.

    Raises:
        ApiError: any error other than 404.
    """
    try:
        client.get(Pod, name, namespace=namespace)
    except ApiError as exc:
        if exc.status.code == 404:
            return False
        raise
    return True


def pod(name: str, node: str | None, cpu: str = "100m") -> Pod:
    """A one-container pod requesting ``cpu``, pinned by hostname to ``node`` if given."""
    return Pod(
        metadata=ObjectMeta(name=name),
        spec=PodSpec(
            containers=[
                Container(
                    name="app",
                    image="registry.invalid/pause:3.10",
                    resources=ResourceRequirements(requests={"cpu": cpu, "memory": "64Mi"}),
                )
            ],
            nodeSelector={HOSTNAME: node} if node else None,
        ),
    )


def remove_taint(client: Client, node: str, key: str) -> None:
    """Drop the taint ``key`` from ``node``, retrying on conflicts with other writers."""
    for _ in range(10):
        current = client.get(Node, node)
        assert current.spec is not None
        current.spec.taints = [t for t in current.spec.taints or [] if t.key != key]
        try:
            client.replace(current)
            return
        except ApiError as exc:
            if exc.status.code != 409:
                raise
    raise AssertionError(f"could not remove taint {key} from {node}: 10 conflicts")


def test_kwok_node_scheduler_and_unregistered_taint(
    client: Client, namespace: str, make_node: Callable[..., str]
) -> None:
    node = make_node(taints=[Taint(key=UNREGISTERED, effect="NoExecute")])

    wait_for("kwok to make the Node Ready", lambda: node_ready(client, node))

    client.create(pod("web", node), namespace=namespace)
    scheduled = wait_for(
        "the scheduler to report the tainted Node",
        lambda: condition(client.get(Pod, "web", namespace=namespace), "PodScheduled"),
    )
    assert scheduled == ("False", "Unschedulable")
    tainted = client.get(Pod, "web", namespace=namespace)
    assert tainted.spec is not None and tainted.spec.nodeName is None
    assert tainted.status is not None and tainted.status.conditions is not None
    message = next(c.message for c in tainted.status.conditions if c.type == "PodScheduled")
    # kube-scheduler 1.36 no longer names the taint in the message.
    assert message is not None and "untolerated taint" in message

    # The pending pod is deleted before the taint goes: kube-controller-manager's
    # taint-eviction controller reads Node and Pod updates from two queues (Kubernetes
    # pkg/controller/tainteviction/taint_eviction.go, handlePodUpdate against the
    # taintedNodes map NodeUpdated fills), so a pod bound the moment the taint is removed
    # can be judged against the stale NoExecute taint and deleted. Karpenter's pods race
    # the same way; this test is about the scheduler, so it binds a pod created after the
    # controller manager has had time to see the Node untainted.
    client.delete(Pod, "web", namespace=namespace, grace_period=0)
    wait_for("the pending pod to be deleted", lambda: not pod_exists(client, "web", namespace))
    remove_taint(client, node, UNREGISTERED)
    time.sleep(2.0)
    client.create(pod("web", node), namespace=namespace)

    def running() -> Pod | None:
        current = client.get(Pod, "web", namespace=namespace)
        phase = current.status.phase if current.status else None
        return current if phase == "Running" else None

    bound = wait_for("the pod to be bound and Running", running)
    assert bound.spec is not None and bound.spec.nodeName == node
    assert bound.status is not None and bound.status.podIP

    client.create(pod("huge", None, cpu="1000"), namespace=namespace)
    unschedulable = wait_for(
        "PodScheduled on the 1000-CPU pod",
        lambda: condition(client.get(Pod, "huge", namespace=namespace), "PodScheduled"),
    )
    assert unschedulable == ("False", "Unschedulable")


def test_controller_manager_runs_deployments_and_pdb_status(
    client: Client, namespace: str, make_node: Callable[..., str]
) -> None:
    node = make_node()
    wait_for("kwok to make the Node Ready", lambda: node_ready(client, node))
    labels = {"app": "web"}
    client.create(
        Deployment(
            metadata=ObjectMeta(name="web"),
            spec=DeploymentSpec(
                replicas=2,
                selector=LabelSelector(matchLabels=labels),
                template=PodTemplateSpec(
                    metadata=ObjectMeta(labels=labels),
                    spec=pod("unused", node).spec,
                ),
            ),
        ),
        namespace=namespace,
    )
    client.create(
        PodDisruptionBudget(
            metadata=ObjectMeta(name="web"),
            spec=PodDisruptionBudgetSpec(
                minAvailable=1, selector=LabelSelector(matchLabels=labels)
            ),
        ),
        namespace=namespace,
    )

    replica_sets = wait_for(
        "the Deployment's ReplicaSet",
        lambda: list(client.list(ReplicaSet, namespace=namespace, labels={"app": "web"})) or None,
    )
    assert len(replica_sets) == 1
    owners = replica_sets[0].metadata.ownerReferences if replica_sets[0].metadata else None
    assert owners and owners[0].kind == "Deployment" and owners[0].name == "web"

    def running_pods() -> list[Pod] | None:
        pods = list(client.list(Pod, namespace=namespace, labels={"app": "web"}))
        phases = [p.status.phase if p.status else None for p in pods]
        return pods if len(pods) == 2 and phases == ["Running", "Running"] else None

    pods = wait_for("2 Running replicas", running_pods)
    assert all(p.spec is not None and p.spec.nodeName == node for p in pods)

    def pdb_status() -> PodDisruptionBudget | None:
        pdb = client.get(PodDisruptionBudget, "web", namespace=namespace)
        status = pdb.status
        if status is None or pdb.metadata is None:
            return None
        synced = status.observedGeneration == pdb.metadata.generation
        return pdb if synced and status.currentHealthy == 2 else None

    pdb = wait_for("the PDB status", pdb_status)
    assert pdb.status is not None
    assert pdb.status.expectedPods == 2
    assert pdb.status.desiredHealthy == 1
    assert pdb.status.disruptionsAllowed == 1


def test_sigterm_to_a_held_stack_stops_every_component_and_removes_its_workdir() -> None:
    import os
    import signal
    import subprocess
    import sys

    script = Path(__file__).with_name("kubestack.py")
    proc = subprocess.Popen(
        [sys.executable, str(script), "--hold"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:  # ends at "running": the stack is up and held
            lines.append(line)
            if line.startswith("running"):
                break
        info = dict(line.split(": ", 1) for line in lines if line.startswith(("workdir", "pids")))
        workdir = Path(info["workdir"].strip())
        pids = {n: int(p) for n, p in (kv.split("=") for kv in info["pids"].split())}
        assert set(pids) == {
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok",
        }, lines
        assert workdir.is_dir() and all(pid_alive(p) for p in pids.values())

        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, proc.stdout.read()
        assert [n for n, p in pids.items() if pid_alive(p)] == []
        assert not workdir.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
