"""The cluster at an import's start: the Nodes and Pods the history shows running at
``--start``, written to ``start.yaml`` and adopted by every simulated policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from joiner.api.manifests import load_documents
from joiner.api.manifests.pods import selects
from joiner.history.series import QueryRange, Series
from joiner.history.start import spec_requests
from joiner.history.translate import Imported, objects_from_files, translate
from joiner.history.writer import write_scenario
from tests.history.conftest import CLUSTER, T0, MemorySource, flat, series

RANGE = QueryRange(T0, T0 + 7200.0, 60.0)


def _node(name: str, start: float, end: float, created: float, **labels: str) -> dict[str, Any]:
    """node_info, node_labels and node_created series of one node (seconds after T0)."""
    return {
        "node_info": flat(
            {"node": name, "provider_id": f"aws:///us-east-1a/i-{name}"}, 1, start, end
        ),
        "node_labels": series({"node": name, **labels}, [(start, 1)]),
        "node_created": series({"node": name}, [(start, T0 + created)]),
    }


def _karpenter(instance_type: str) -> dict[str, str]:
    return {
        "label_node_kubernetes_io_instance_type": instance_type,
        "label_topology_kubernetes_io_zone": "us-east-1a",
        "label_karpenter_sh_capacity_type": "spot",
        "label_karpenter_sh_nodepool": "default",
    }


def _owner(pod: str, kind: str, name: str, namespace: str = "shop") -> Series:
    return series(
        {"namespace": namespace, "pod": pod, "owner_kind": kind, "owner_name": name},
        [(0, 1), (3600, 1)],
    )


def _on(pod: str, node: str, at: list[float], namespace: str = "shop") -> Series:
    """A pod_node series (hourly ``last_over_time``) sampled at ``at``."""
    labels = {"namespace": namespace, "pod": pod}
    if node:
        labels["node"] = node
    return series(labels, [(t, 1) for t in at])


def _answers() -> dict[str, list[Series]]:
    nodes = [
        # Running since before the range, through it.
        _node("a", 0, 7200, -1000, **_karpenter("m5.large")),
        # Created exactly at the start: part of the starting cluster.
        _node("born", 0, 7200, 0, **_karpenter("m5.xlarge")),
        # Deleted just before the start: seen only at the first evaluation.
        _node("gone", 0, 0, -5000, **_karpenter("m5.large")),
        # Created during the range: launched later, not at the start.
        _node("late", 1200, 7200, 1200, **_karpenter("m5.large")),
        # An EKS managed node group's node: static capacity, sized from the catalog.
        _node(
            "ng",
            0,
            7200,
            -1000,
            label_node_kubernetes_io_instance_type="m5.xlarge",
            label_topology_kubernetes_io_zone="us-east-1a",
            label_eks_amazonaws_com_capacity_type="ON_DEMAND",
            label_eks_amazonaws_com_nodegroup="ng-1",
        ),
    ]
    answers: dict[str, list[Series]] = {
        k: [n[k] for n in nodes] for k in ("node_info", "node_labels", "node_created")
    }
    answers["deployment_replicas"] = [flat({"namespace": "shop", "deployment": "web"}, 3, 0, 7200)]
    answers["statefulset_replicas"] = [flat({"namespace": "shop", "statefulset": "db"}, 2, 0, 7200)]
    answers["replicaset_owner"] = [
        series(
            {
                "namespace": "shop",
                "replicaset": "web-abc",
                "owner_kind": "Deployment",
                "owner_name": "web",
            },
            [(0, 1)],
        )
    ]
    answers["job_start_time"] = [
        series({"namespace": "batch", "job_name": "backfill"}, [(0, T0 - 600)]),
        series({"namespace": "batch", "job_name": "nightly-1"}, [(0, T0 - 60)]),
    ]
    answers["job_owner"] = [
        series(
            {
                "namespace": "batch",
                "job_name": "nightly-1",
                "owner_kind": "CronJob",
                "owner_name": "nightly",
            },
            [(0, 1)],
        )
    ]
    answers["pod_owner"] = [
        _owner("web-abc-1", "ReplicaSet", "web-abc"),
        _owner("web-abc-2", "ReplicaSet", "web-abc"),
        _owner("web-abc-old", "ReplicaSet", "web-abc"),
        _owner("db-0", "StatefulSet", "db"),
        _owner("db-1", "StatefulSet", "db"),
        _owner("backfill-x", "Job", "backfill", "batch"),
        _owner("nightly-1-x", "Job", "nightly-1", "batch"),
        _owner("stray", "ReplicaSet", "deleted-rs"),
    ]
    answers["pod_node"] = [
        _on("web-abc-1", "a", [0, 3600, 7200]),
        # Pending at the start, bound an hour later: starts pending.
        _on("web-abc-2", "", [0]),
        _on("web-abc-2", "a", [3600, 7200]),
        # Ended before the start: seen only at the first evaluation.
        _on("web-abc-old", "a", [0]),
        _on("db-0", "ng", [0, 3600, 7200]),
        # On a node the history does not show at the start: starts pending.
        _on("db-1", "elsewhere", [0, 3600]),
        _on("backfill-x", "born", [0, 3600], "batch"),
        _on("nightly-1-x", "a", [0, 3600], "batch"),
        _on("stray", "a", [0, 3600]),
    ]
    return answers


def _imported(tmp_path: Path, *, empty_start: bool = False) -> Imported:
    dump = tmp_path / "dump.yaml"
    dump.write_text(CLUSTER)
    objects = objects_from_files([dump])
    return translate(MemorySource(_answers()), "memory", RANGE, objects, empty_start=empty_start)


def _by_kind(imported: Imported, kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in imported.start if d["kind"] == kind}


def test_the_nodes_alive_at_the_start_start_the_replay(tmp_path: Path) -> None:
    imported = _imported(tmp_path)
    nodes = _by_kind(imported, "Node")
    # The node group's node is left out: static capacity no simulated policy would price.
    assert sorted(nodes) == ["a", "born"]
    assert imported.warnings.subjects("static starting node") == ["ng (ng-1)"]
    a = nodes["a"]
    assert a == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "a",
            "labels": {
                "karpenter.sh/capacity-type": "spot",
                "karpenter.sh/nodepool": "default",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": "a",
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m5.large",
                "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": "us-east-1a",
            },
        },
        # No status: the simulation sizes a NodePool's node from its instance type.
        "spec": {"providerID": "aws:///us-east-1a/i-a"},
    }


def test_a_node_deleted_just_before_the_start_is_no_as_run_row(tmp_path: Path) -> None:
    imported = _imported(tmp_path)
    assert [n.node for n in imported.nodes] == ["a", "born", "late", "ng"]
    assert imported.warnings.subjects("gone-at-start node") == ["gone"]
    born = next(n for n in imported.nodes if n.node == "born")
    assert (born.start_s, born.end_s) == (0.0, None)


def test_the_pods_running_at_the_start_are_bound_to_their_nodes(tmp_path: Path) -> None:
    imported = _imported(tmp_path)
    pods = _by_kind(imported, "Pod")
    assert sorted(pods) == ["backfill-x", "db-0", "db-1", "web-abc-1", "web-abc-2"]
    web = pods["web-abc-1"]
    assert web["spec"]["nodeName"] == "a"
    assert web["status"] == {"phase": "Running"}
    # The workload's template: its labels (the selector selects it) and its spec.
    assert web["metadata"]["labels"] == {"app": "web"}
    assert [c["name"] for c in web["spec"]["containers"]] == ["web"]
    # A Job's pod carries job-name, which the Job's selector selects.
    backfill = pods["backfill-x"]
    assert backfill["metadata"]["namespace"] == "batch"
    assert backfill["metadata"]["labels"]["job-name"] == "backfill"
    assert backfill["spec"]["nodeName"] == "born"


def test_pending_unknown_node_cronjob_and_ownerless_pods(tmp_path: Path) -> None:
    imported = _imported(tmp_path)
    pods = _by_kind(imported, "Pod")
    # Pending at the start (bound an hour later), on the node group's node and on a node
    # not at the start: pending.
    for name in ("web-abc-2", "db-0", "db-1"):
        assert "nodeName" not in pods[name]["spec"], name
        assert pods[name]["status"] == {"phase": "Pending"}
    w = imported.warnings
    assert w.subjects("unplaced starting pod") == [
        "shop/db-0 (node ng)",
        "shop/db-1 (node elsewhere)",
    ]
    assert w.subjects("starting CronJob pod") == ["batch/nightly-1-x (batch/nightly)"]
    assert w.subjects("ownerless starting pod") == ["shop/stray"]
    assert "web-abc-old" not in pods


def test_the_start_loads_and_every_running_pod_belongs_to_its_workload(tmp_path: Path) -> None:
    imported = _imported(tmp_path)
    path = write_scenario(imported, tmp_path / "out")
    doc = yaml.safe_load(path.read_text())
    assert doc["spec"]["manifests"] == ["objects.yaml", "start.yaml"]
    out = tmp_path / "out"
    docs = [
        *yaml.safe_load_all((out / "objects.yaml").read_text()),
        *yaml.safe_load_all((out / "start.yaml").read_text()),
    ]
    ms = load_documents(docs, "start.yaml")
    assert sorted((n.name, n.nodepool) for n in ms.nodes) == [
        ("a", "default"),
        ("born", "default"),
    ]
    for p in ms.pods:
        owners = [w.key for w in ms.workloads if selects(w.selector, dict(p.template.labels))]
        assert owners and all(k.split("/")[0] == p.namespace for k in owners), p.key


def test_empty_start_writes_no_start(tmp_path: Path) -> None:
    imported = _imported(tmp_path, empty_start=True)
    assert imported.start == ()
    path = write_scenario(imported, tmp_path / "out")
    assert yaml.safe_load(path.read_text())["spec"]["manifests"] == ["objects.yaml"]
    assert not (tmp_path / "out" / "start.yaml").exists()


def test_a_pod_over_its_nodes_room_starts_pending(tmp_path: Path) -> None:
    answers = _answers()
    # Twenty web pods (500m + a 100m sidecar each) on one m5.large (1930m allocatable).
    answers["pod_owner"] += [_owner(f"web-abc-n{i:02}", "ReplicaSet", "web-abc") for i in range(20)]
    answers["pod_node"] += [_on(f"web-abc-n{i:02}", "a", [0, 3600]) for i in range(20)]
    dump = tmp_path / "dump.yaml"
    dump.write_text(CLUSTER)
    imported = translate(MemorySource(answers), "memory", RANGE, objects_from_files([dump]))
    on_a = [
        d["metadata"]["name"]
        for d in imported.start
        if d["kind"] == "Pod" and d["spec"].get("nodeName") == "a"
    ]
    # web-abc-1 and the first two of the new ones fit (3 x 600m of 1930m); the rest wait.
    assert on_a == ["web-abc-1", "web-abc-n00", "web-abc-n01"]
    assert imported.warnings.count("crowded-out starting pod") == 18


def test_spec_requests_sum_as_kubernetes_does() -> None:
    spec = {
        "initContainers": [
            {"name": "mesh", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
            {"name": "migrate", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
        ],
        "containers": [
            {"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}}},
            {"name": "bare"},
        ],
    }
    assert spec_requests(spec) == {"cpu": 2100, "memory": 2 * 2**30}


def test_the_start_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    written = []
    for run in ("1", "2"):
        (tmp_path / run).mkdir()
        path = write_scenario(_imported(tmp_path / run), tmp_path / f"out{run}")
        written.append((path.parent / "start.yaml").read_bytes())
    assert written[0] == written[1]


def test_a_nodepool_node_carries_its_template_labels_and_taints(tmp_path: Path) -> None:
    # Without them the adopted node would read as drifted (``drift._template_drift``).
    cluster = CLUSTER.replace(
        "  template:\n    spec:\n",
        "  template:\n    metadata: {labels: {team: web}}\n    spec:\n"
        "      taints: [{key: dedicated, value: web, effect: NoSchedule}]\n",
        1,
    )
    dump = tmp_path / "dump.yaml"
    dump.write_text(cluster)
    imported = translate(MemorySource(_answers()), "memory", RANGE, objects_from_files([dump]))
    a = _by_kind(imported, "Node")["a"]
    assert a["metadata"]["labels"]["team"] == "web"
    assert a["spec"]["taints"] == [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]
