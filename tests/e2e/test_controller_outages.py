"""Controller mode through API server outages and a frozen kube-scheduler.

* A short lease (10 s / 7 s / 1 s): API server freezes of 3 s, well inside the renew
  deadline (a loaded 2-core machine takes seconds to answer again once thawed), never end
  the process; a restart longer than it ends it once, cleanly (exit code 1, one
  ``lost the lease`` line, no Python traceback in its output).
* New pods while the API server restarts (the Lease kept): every NodeClaim created is one
  the pods need (the apiserver's audit log counts the creates), none launched twice.
* A scale-up, kube-scheduler frozen once it has found the new pods unschedulable (before
  that they are no demand, for Joiner as for Karpenter): pods stay Pending beside Nodes
  with room for them; no NodeClaim is created beyond what the pods need, and none is
  consolidated away while pods are nominated to it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from joinerctl import (
    ON_DEMAND_4CPU,
    Cluster,
    ControllerProcess,
    deployment_doc,
    lease,
    nodepool_doc,
    start,
    wait_for,
)
from kubestack import KubeStack
from lightkube.core.exceptions import ApiError

pytestmark = pytest.mark.e2e


def _created_nodeclaims(audit_log: Path, cluster: Cluster) -> list[str]:
    """Names of the test's NodeClaims (its NodePool's) ever created: those the audit log
    shows created (201) or created again (409: a create whose answer was lost, repeated
    under the same name), and those that exist now (a create the API server made just
    before it was killed can miss its audit event)."""
    names = {str(c.metadata.name) for c in cluster.nodeclaims()}
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if (
            event.get("verb") == "create"
            and ref.get("resource") == "nodeclaims"
            and not ref.get("subresource")
            and str(ref.get("name")).startswith(f"{cluster.name}-")
            and (event.get("responseStatus") or {}).get("code") in (201, 409)
        ):
            names.add(str(ref.get("name")))
    return sorted(names)


def _running(ctl: ControllerProcess, cluster: Cluster, n: int) -> object:
    """``n`` web pods running, while the controller still runs (fails at once if not)."""
    assert ctl.alive(), ctl.tail()
    return cluster.running("web", n)


def _served(cluster: Cluster) -> bool:
    """The restarted API server serves NodeClaims again (a CRD's storage re-initializes
    after ``/readyz`` turns 200: 429 meanwhile)."""
    try:
        cluster.nodeclaims()
    except ApiError as exc:
        if exc.status.code in (429, 503):
            return False
        raise
    return True


def _state_of(kube_stack: KubeStack, cluster: Cluster) -> str:
    """What the cluster looked like (the test's Nodes with their Ready condition and taints,
    the web pods with their node and phase, kwok's and kube-controller-manager's last log
    lines), printed when a wait times out: a stalled start says which side stalled."""
    lines = []
    for node in cluster.nodes():
        ready = [c.status for c in (node.status.conditions or []) if c.type == "Ready"]
        taints = [f"{t.key}:{t.effect}" for t in (node.spec.taints or [])]
        lines.append(f"node {node.metadata.name}: Ready={ready} taints={taints}")
    for pod in cluster.pods("web"):
        node_name = pod.spec.nodeName if pod.spec else None
        phase = pod.status.phase if pod.status else None
        lines.append(f"pod {pod.metadata.name}: node={node_name} phase={phase}")
    for name, running in sorted(kube_stack.alive().items()):
        lines.append(f"{name}: {'running' if running else 'exited'}")
    for name in ("kwok", "kube-controller-manager"):
        log = kube_stack.workdir / "logs" / f"{name}.log"
        if log.is_file():
            lines += [f"--- {name} ---", *log.read_text(errors="replace").splitlines()[-15:]]
    return "\n".join(lines)


def _n_nodes(cluster: Cluster, n: int) -> object:
    found = cluster.consistent()
    return found if found is not None and len(found[1]) == n else None


@pytest.mark.timeout(300)
def test_short_outages_are_ridden_out_and_a_lost_lease_is_one_clean_exit(
    kube_stack: KubeStack,
    kubeconfig: Path,
    tmp_path: Path,
    cluster: Cluster,
    controllers: list[ControllerProcess],
) -> None:
    cluster.apply(nodepool_doc(cluster.name, requirements=ON_DEMAND_4CPU))
    ctl = start(controllers, kubeconfig, tmp_path, cluster, leaderElection=lease(cluster, 10, 7, 1))
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=2, cpu="1500m"))
    wait_for("2 web pods running", lambda: cluster.running("web", 2), 120)

    # Outages shorter than the 7 s renew deadline: the API server answers nothing for 3 s
    # (frozen), with work to write waiting for it. The margin is the time a thawed API
    # server takes to answer its backlog on a loaded machine (over 1 s under CI load).
    for replicas in (3, 4, 5):
        cluster.scale("web", replicas)
        with kube_stack.frozen("kube-apiserver"):
            time.sleep(3.0)
        wait_for(
            f"{replicas} web pods running",
            lambda n=replicas: _running(ctl, cluster, n),  # type: ignore[misc]
            120,
        )
        assert ctl.alive() and ctl.leading(), ctl.tail()

    # An outage past the renew deadline, with writes to make: the lease is lost.
    cluster.scale("web", 6)
    unavailable_s = kube_stack.restart_apiserver(8.0)
    print(f"kube-apiserver unavailable for {unavailable_s:.1f} s")
    assert unavailable_s > 7.0
    assert ctl.proc is not None
    code = ctl.proc.wait(timeout=60)
    wait_for("NodeClaims served", lambda: _served(cluster), 60)
    log = ctl.log.read_text()
    assert code == 1, ctl.tail()
    assert "Traceback" not in log, log
    assert log.count("lost the lease") == 1, ctl.tail()
    assert log.count("stopped leading: exiting with code 1") == 1, ctl.tail()


def _web_pod(cluster: Cluster, i: int) -> dict[str, object]:
    """Bare Pod ``web-i``: one 3-CPU pod per c6a.xlarge, so each needs its own node. Bare
    pods, not a Deployment's: after an API server restart on the loaded CI machine,
    kube-controller-manager once took over a minute to create a scaled Deployment's pods,
    which is not what this test is about."""
    template = deployment_doc("web", cluster.name, cluster.name, replicas=1, cpu="3")
    pod_template = template["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"web-{i}", "namespace": cluster.name, **pod_template["metadata"]},
        "spec": pod_template["spec"],
    }


def _waited(kube_stack: KubeStack, cluster: Cluster, what: str, probe: object, s: float) -> None:
    """``wait_for``, with the cluster's state (``_state_of``) in the error."""
    try:
        wait_for(what, probe, s)  # type: ignore[arg-type]
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_state_of(kube_stack, cluster)}") from exc


@pytest.mark.timeout(300)
def test_no_nodeclaim_is_created_twice_around_api_server_restarts(
    kube_stack: KubeStack,
    kubeconfig: Path,
    tmp_path: Path,
    cluster: Cluster,
    controllers: list[ControllerProcess],
) -> None:
    cluster.apply(nodepool_doc(cluster.name, requirements=ON_DEMAND_4CPU))
    # A renew deadline longer than a restart (about 10 s here): the Lease is kept.
    ctl = start(
        controllers, kubeconfig, tmp_path, cluster, leaderElection=lease(cluster, 40, 30, 2)
    )
    cluster.apply(_web_pod(cluster, 0))
    _waited(kube_stack, cluster, "1 web pod running", lambda: cluster.running("web", 1), 120)
    for replicas in (3, 5):
        for i in range(len(cluster.pods("web")), replicas):
            cluster.apply(_web_pod(cluster, i))
        # The restart hits while the provisioner launches and writes the NodeClaims.
        time.sleep(1.0)
        unavailable_s = kube_stack.restart_apiserver(2.0)
        print(f"kube-apiserver unavailable for {unavailable_s:.1f} s")
        wait_for("NodeClaims served", lambda: _served(cluster), 60)
        _waited(
            kube_stack,
            cluster,
            f"{replicas} web pods running",
            lambda n=replicas: _running(ctl, cluster, n),  # type: ignore[misc]
            150,
        )
    wait_for("5 nodes", lambda: _n_nodes(cluster, 5), 60)
    created = _created_nodeclaims(kube_stack.audit_log, cluster)
    print(f"NodeClaims created: {len(created)} for 5 pods needing 5 nodes")
    assert len(created) == 5, created
    assert ctl.alive() and ctl.leading(), ctl.tail()
    assert "Traceback" not in ctl.log.read_text(), ctl.tail()


def _n_unschedulable(cluster: Cluster, app: str, n: int) -> bool:
    """Whether ``n`` unbound pods of ``app`` carry kube-scheduler's ``PodScheduled``
    condition of reason ``Unschedulable``."""
    marked = [
        p
        for p in cluster.pods(app)
        if not p.spec.nodeName
        and any(
            c.type == "PodScheduled" and c.reason == "Unschedulable"
            for c in p.status.conditions or []
        )
    ]
    return len(marked) == n


#: How long kube-scheduler stays frozen with pods pending beside nodes with room.
FROZEN_S = 45.0


@pytest.mark.timeout(300)
def test_no_surplus_nodeclaims_while_kube_scheduler_is_frozen(
    kube_stack: KubeStack,
    kubeconfig: Path,
    tmp_path: Path,
    cluster: Cluster,
    controllers: list[ControllerProcess],
) -> None:
    cluster.apply(nodepool_doc(cluster.name, requirements=ON_DEMAND_4CPU))
    ctl = start(controllers, kubeconfig, tmp_path, cluster)
    cluster.apply(deployment_doc("web", cluster.name, cluster.name, replicas=1, cpu="3"))
    wait_for("1 web pod running", lambda: cluster.running("web", 1), 120)
    cluster.scale("web", 3)
    # Frozen as soon as kube-scheduler has marked both new pods PodScheduled=False, reason
    # Unschedulable (what makes them demand), seconds before their nodes can be Ready.
    wait_for("2 web pods unschedulable", lambda: _n_unschedulable(cluster, "web", 2), 60)
    frozen_at = time.monotonic()
    with kube_stack.frozen("kube-scheduler"):
        # Two more nodes come up Ready and stay empty: the pods nominated to them wait for
        # a scheduler that does not run. Joiner must neither launch more for those pods nor
        # consolidate the empty nodes away.
        wait_for("3 nodes", lambda: _n_nodes(cluster, 3), 90)
        while time.monotonic() - frozen_at < FROZEN_S:
            assert ctl.alive(), ctl.tail()
            time.sleep(1.0)
        pending = [p for p in cluster.pods("web") if not p.spec.nodeName]
        assert len(pending) == 2, "kube-scheduler was not frozen"
    wait_for("3 web pods running", lambda: cluster.running("web", 3), 120)
    wait_for("3 nodes", lambda: _n_nodes(cluster, 3), 60)
    created = _created_nodeclaims(kube_stack.audit_log, cluster)
    print(f"NodeClaims created: {len(created)} for 3 pods needing 3 nodes")
    assert len(created) == 3, created
    assert "Traceback" not in ctl.log.read_text(), ctl.tail()
