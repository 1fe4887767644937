"""``joiner import`` against a real Prometheus scraping a real kube-state-metrics.

The test stack runs the cluster (kwok plays the Nodes), kube-state-metrics watches it and
Prometheus scrapes it every 2 s (tests/e2e/promstack.py). The smoke test checks the series
``joiner import`` needs reach Prometheus. The import test plays three minutes of a cluster's
life (Deployments scaled, a CronJob firing every minute, kwok Nodes of a Karpenter NodePool
and of an EKS node group appearing and going), imports that range with ``joiner import
--prometheus``, checks every replica change and Node in the imported Scenario against what
the script did, and runs ``joiner simulate`` on it with as-run, Joiner and Cluster Autoscaler.
"""

from __future__ import annotations

import csv
import json
import math
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from joinerctl import NODECLASS, SPOT_OR_OD, deployment_doc, joiner, nodepool_doc, wait_for
from lightkube import Client, KubeConfig
from lightkube.codecs import from_dict
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import CronJob
from lightkube.resources.core_v1 import Namespace, Node
from lightkube.types import PatchType
from promstack import MonitoringStack

from joiner.sim.workloads import load_trace

pytestmark = [pytest.mark.e2e, pytest.mark.monitoring]

HOSTNAME = "kubernetes.io/hostname"


@pytest.fixture
def client(kubeconfig: Path) -> Client:
    return Client(KubeConfig.from_file(kubeconfig), field_manager="joiner-e2e")


@pytest.fixture
def namespace(client: Client) -> Iterator[str]:
    name = f"import-{secrets.token_hex(4)}"
    client.apply(from_dict(namespace_doc(name)))
    yield name
    client.delete(Namespace, name)


@pytest.fixture
def nodes(client: Client) -> Iterator[list[str]]:
    """Names of the kwok Nodes a test creates (it appends); deleted afterwards when present."""
    created: list[str] = []
    yield created
    present = {n.metadata.name for n in client.list(Node) if n.metadata}
    for name in created:
        if name in present:
            client.delete(Node, name)


def namespace_doc(name: str) -> dict[str, Any]:
    """A Namespace."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def node_doc(
    name: str, labels: dict[str, str], cpu: str = "4", memory: str = "16Gi"
) -> dict[str, Any]:
    """A Node kwok manages (annotated ``kwok.x-k8s.io/node: fake``) with ``labels``."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {
                HOSTNAME: name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **labels,
            },
        },
        "spec": {"providerID": f"kwok://{name}"},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
        },
    }


def series(monitoring: MonitoringStack, expr: str) -> Callable[[], list[dict[str, Any]] | None]:
    """A probe for ``wait_for``: the instant query's result, None until the series exist."""
    return lambda: monitoring.query(expr) or None


def test_kube_state_metrics_series_reach_prometheus(
    monitoring: MonitoringStack, client: Client, namespace: str, nodes: list[str]
) -> None:
    node = f"kwok-prom-{secrets.token_hex(3)}"
    labels = {
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "us-east-1a",
        "karpenter.sh/capacity-type": "spot",
        "karpenter.sh/nodepool": "default",
    }
    client.create(from_dict(node_doc(node, labels)))
    nodes.append(node)
    client.create(from_dict(deployment_doc("web", namespace, "default", 3, cpu="500m")))

    replicas = wait_for(
        "kube_deployment_spec_replicas of web in Prometheus",
        series(
            monitoring,
            f'kube_deployment_spec_replicas{{namespace="{namespace}",deployment="web"}}',
        ),
        timeout_s=60,
    )
    assert [r["value"][1] for r in replicas] == ["3"]

    node_labels = wait_for(
        "kube_node_labels of the kwok Node in Prometheus",
        series(monitoring, f'kube_node_labels{{node="{node}"}}'),
        timeout_s=60,
    )
    assert len(node_labels) == 1
    metric = node_labels[0]["metric"]
    assert metric["label_node_kubernetes_io_instance_type"] == "m5.large"
    assert metric["label_topology_kubernetes_io_zone"] == "us-east-1a"
    assert metric["label_karpenter_sh_capacity_type"] == "spot"
    assert metric["label_karpenter_sh_nodepool"] == "default"
    # Labels outside the allowlist stay out of the series.
    assert "label_kubernetes_io_os" not in metric

    info = monitoring.query(f'kube_node_info{{node="{node}"}}')
    assert [r["metric"]["provider_id"] for r in info] == [f"kwok://{node}"]
    buildinfo = monitoring.api("status/buildinfo")
    assert buildinfo["version"] == "3.16.0"


# --- the import test -------------------------------------------------------------------------

#: ``joiner import --step``, seconds.
STEP_S = 5
#: How late the imported history may see a change the script made: kube-state-metrics's
#: watch (under a second), the next scrape (one scrape interval) and the next evaluation
#: step of the range query (one step); plus a second for the API's whole-second timestamps.
#: Computed per run from the monitoring stack's scrape interval.
WATCH_S = 1
#: The range the test plays and imports, seconds from its start.
RANGE_S = 180

KARPENTER_SPOT = {
    "node.kubernetes.io/instance-type": "m5.large",
    "topology.kubernetes.io/zone": "us-east-1a",
    "karpenter.sh/capacity-type": "spot",
    "karpenter.sh/nodepool": "general",
}
EKS_ON_DEMAND = {
    "node.kubernetes.io/instance-type": "m5.xlarge",
    "topology.kubernetes.io/zone": "us-east-1b",
    "eks.amazonaws.com/capacityType": "ON_DEMAND",
    "eks.amazonaws.com/nodegroup": "ng-1",
}
KARPENTER_ON_DEMAND = {
    "node.kubernetes.io/instance-type": "c5.xlarge",
    "topology.kubernetes.io/zone": "us-east-1c",
    "karpenter.sh/capacity-type": "on-demand",
    "karpenter.sh/nodepool": "general",
}

#: The dump's NodePool (its EC2NodeClass is joinerctl's ``e2e``): spot or on-demand c and m.
NODEPOOL = nodepool_doc("general", requirements=SPOT_OR_OD)


def cronjob_doc(name: str, namespace: str) -> dict[str, Any]:
    """A CronJob firing every minute; kwok completes its pods as soon as they run."""
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedule": "* * * * *",
            "concurrencyPolicy": "Allow",
            "jobTemplate": {
                "spec": {
                    "parallelism": 2,
                    "completions": 2,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "terminationGracePeriodSeconds": 0,
                            "containers": [
                                {
                                    "name": "report",
                                    "image": "registry.invalid/pause:3.10",
                                    "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}},
                                }
                            ],
                        }
                    },
                }
            },
        },
    }


@dataclass
class History:
    """What the script did, in unix seconds: each Deployment's replicas from the time the
    call returned, each Node's creation and deletion."""

    t0: float
    replicas: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)
    deleted: dict[str, float] = field(default_factory=dict)

    def replicas_at(self, name: str, t: float) -> int:
        """The Deployment's replicas at unix time ``t`` (0 before it existed)."""
        value = 0
        for at, replicas in self.replicas[name]:
            if at <= t:
                value = replicas
        return value

    def max_between(self, name: str, a: float, b: float) -> int:
        """The largest replica count the Deployment had in [a, b]."""
        inside = [r for at, r in self.replicas[name] if a < at <= b]
        return max([self.replicas_at(name, a), *inside])


class Script:
    """Plays the cluster's history against the API server, each step at its second."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.history = History(t0=float(math.ceil(time.time())))
        self.node_names: list[str] = []

    def wait_until(self, at_s: float) -> None:
        """Sleep until ``at_s`` seconds after the start."""
        delay = self.history.t0 + at_s - time.time()
        if delay > 0:
            time.sleep(delay)

    def node(self, name: str, labels: dict[str, str]) -> None:
        self.client.create(from_dict(node_doc(name, labels)))
        self.node_names.append(name)
        self.history.created[name] = time.time()

    def delete_node(self, name: str) -> None:
        self.client.delete(Node, name)
        self.history.deleted[name] = time.time()

    def deployment(self, name: str, replicas: int) -> None:
        doc = deployment_doc(name, self.namespace, "general", replicas, cpu="500m")
        self.client.create(from_dict(doc))
        self.history.replicas[name] = [(time.time(), replicas)]

    def scale(self, name: str, replicas: int) -> None:
        self.client.patch(
            Deployment,
            name,
            {"spec": {"replicas": replicas}},
            namespace=self.namespace,
            patch_type=PatchType.MERGE,
        )
        self.history.replicas[name].append((time.time(), replicas))

    def dump(self, path: Path) -> None:
        """The objects as ``kubectl get deploy,cronjob -o yaml`` prints them (a v1 List of
        the live objects, status included), then the NodePool and its EC2NodeClass."""
        items = [
            obj.to_dict()
            for res in (Deployment, CronJob)
            for obj in self.client.list(res, namespace=self.namespace)
        ]
        listing = {"apiVersion": "v1", "kind": "List", "items": items}
        path.write_text(yaml.safe_dump_all([listing, NODEPOOL, NODECLASS], sort_keys=False))


def play(script: Script) -> None:
    """The three minutes: scale-ups just after a minute starts and scale-downs well before
    one ends, so that every level is the largest of some minute of the imported trace."""
    ns = script.namespace
    script.wait_until(0)
    script.node("spot-a", KARPENTER_SPOT)
    script.node("ng-b", EKS_ON_DEMAND)
    script.deployment("web", 2)
    script.deployment("api", 1)
    script.client.create(from_dict(cronjob_doc("report", ns)))
    script.wait_until(64)
    script.scale("web", 5)
    script.node("od-c", KARPENTER_ON_DEMAND)
    script.wait_until(105)
    script.scale("web", 1)
    script.scale("api", 3)
    script.wait_until(125)
    script.delete_node("ng-b")


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def workload_traces(out: Path, namespace: str) -> dict[str, list[int]]:
    """Per Deployment of ``namespace`` in the imported Scenario, its replicas at each minute of
    its trace (through the simulator's own trace reader and replica rule)."""
    scenario = yaml.safe_load((out / "scenario.yaml").read_text())
    traces: dict[str, list[int]] = {}
    for workload in scenario["spec"].get("workloads", []):
        name = workload.get("deployment") or ""
        if not name.startswith(f"{namespace}/") or "trace" not in workload:
            continue
        spec = workload["trace"]
        trace = load_trace(
            out / spec["file"],
            target_per_replica=float(spec["targetPerReplica"]),
            min_replicas=int(spec.get("min", 0)),
            max_replicas=int(spec.get("max", 1000)),
        )
        traces[name.split("/", 1)[1]] = [trace.replicas_at(m) for m in range(len(trace.values))]
    return traces


def check_traces(history: History, traces: dict[str, list[int]], late_s: float) -> None:
    """Each minute's imported replicas is the largest count the Deployment had in that minute,
    give or take ``late_s`` at its edges; so every change the script made is in the trace."""
    end = history.t0 + RANGE_S
    for name in history.replicas:
        assert name in traces, f"no trace for Deployment {name}: {sorted(traces)}"
        trace = traces[name]
        assert len(trace) >= RANGE_S // 60, (name, trace)
        for minute, value in enumerate(trace):
            a = history.t0 + 60 * minute
            b = min(a + 60, end)
            if a >= end:
                break
            low = history.max_between(name, a, max(a, b - late_s))
            high = history.max_between(name, a - late_s, b)
            assert low <= value <= high, (
                f"{name} minute {minute}: imported {value}, expected between {low} and "
                f"{high}; script {history.replicas[name]} from t0 {history.t0}; trace {trace}"
            )
        levels = {r for _, r in history.replicas[name]}
        assert levels <= set(trace), f"{name}: levels {levels} not all in trace {trace}"


def check_nodes(
    history: History, rows: list[dict[str, str]], expected: dict[str, dict[str, str]], late_s: float
) -> None:
    """Each Node the script made is a row of nodes.csv: its start and end within ``late_s``
    of the script's creation and deletion, its labels as the cluster had them."""
    by_name = {row["node"]: row for row in rows}
    for name, want in expected.items():
        assert name in by_name, f"node {name} not in nodes.csv: {sorted(by_name)}"
        row = by_name[name]
        start = max(0.0, history.created[name] - history.t0)
        assert abs(float(row["startSeconds"]) - start) <= late_s, (name, row, start)
        if name in history.deleted:
            end = history.deleted[name] - history.t0
            assert row["endSeconds"] != "", (name, row)
            assert abs(float(row["endSeconds"]) - end) <= late_s, (name, row, end)
        else:
            assert row["endSeconds"] == "", (name, row)
        got = {k: row[k] for k in want}
        assert got == want, (name, row)


# Three minutes of play, the import and the simulation: the issue allows the test 5 minutes.
@pytest.mark.timeout(300)
def test_import_replays_three_minutes_of_the_cluster(
    monitoring: MonitoringStack,
    client: Client,
    namespace: str,
    nodes: list[str],
    tmp_path: Path,
) -> None:
    late_s = WATCH_S + monitoring.scrape_interval_s + STEP_S
    script = Script(client, namespace)
    try:
        play(script)
    finally:
        nodes.extend(script.node_names)
    script.dump(tmp_path / "dump.yaml")
    t0 = script.history.t0
    # The range's last scrape must be in the TSDB before the import reads it.
    script.wait_until(RANGE_S + monitoring.scrape_interval_s + WATCH_S)
    runs = monitoring.query(f'kube_job_owner{{namespace="{namespace}",owner_name="report"}}')
    assert runs, "the CronJob made no Job in the range"

    out = tmp_path / "imported"
    imported = joiner(
        "import",
        "--prometheus",
        monitoring.url,
        "--start",
        rfc3339(t0),
        "--end",
        rfc3339(t0 + RANGE_S),
        "--step",
        f"{STEP_S}s",
        "-f",
        str(tmp_path / "dump.yaml"),
        "--out",
        str(out),
        check=False,
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr + monitoring.logs()

    traces = workload_traces(out, namespace)
    print(f"script {script.history}\ntraces {traces}")  # shown when the test fails
    check_traces(script.history, traces, late_s)
    check_nodes(
        script.history,
        read_csv(out / "as-run" / "nodes.csv"),
        {
            "spot-a": {
                "instanceType": "m5.large",
                "capacityType": "spot",
                "zone": "us-east-1a",
                "nodePool": "general",
            },
            "ng-b": {
                "instanceType": "m5.xlarge",
                "capacityType": "on-demand",
                "zone": "us-east-1b",
                "nodePool": "ng-1",
            },
            "od-c": {
                "instanceType": "c5.xlarge",
                "capacityType": "on-demand",
                "zone": "us-east-1c",
                "nodePool": "general",
            },
        },
        late_s,
    )
    scenario = yaml.safe_load((out / "scenario.yaml").read_text())
    assert scenario["spec"]["compare"] == ["as-run", "joiner", "cluster-autoscaler"]
    cronjobs = [w for w in scenario["spec"]["workloads"] if "cronJob" in w]
    assert [w["cronJob"] for w in cronjobs] == [f"{namespace}/report"], cronjobs

    simulated = joiner(
        "simulate", str(out / "scenario.yaml"), "--out", str(tmp_path / "sim"), check=False
    )
    assert simulated.returncode == 0, simulated.stdout + simulated.stderr
    summary = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert set(summary["policies"]) >= {"as-run", "joiner", "cluster-autoscaler"}
    assert summary["policies"]["as-run"]["policy"]["name"] == "as-run"
