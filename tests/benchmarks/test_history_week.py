"""The synthetic kube-state-metrics history of ``benchmarks/history_week.py``: its OpenMetrics
text is well formed and agrees with the cluster it models, and the real ``promtool`` and
``prometheus`` (when built into the kube-stack cache) backfill and serve it."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
# Appended, not put first: a module of benchmarks/ must not shadow one of the test paths
# for every later ``import run`` in the suite.
sys.path.append(str(REPO / "benchmarks"))

import history_week as hw  # noqa: E402

LINE = re.compile(r"^([a-z_]+)\{(.*)\} (\S+) (\d+)$")
LABEL = re.compile(r'([a-z_]+)="([^"]*)"')


def _small() -> hw.Cluster:
    return hw.make_cluster(seed=3, workloads=24, nodes=8, days=0.5)


def _parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[int, float]]]:
    """Series (name, sorted labels) to their samples; asserts the OpenMetrics layout."""
    series: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[int, float]]] = {}
    families_done: set[str] = set()
    current = ""
    lines = text.splitlines()
    assert lines[-1] == "# EOF"
    for line in lines[:-1]:
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert kind == "gauge"
            assert name not in families_done, f"family {name} split"
            families_done.add(current)
            current = name
            continue
        m = LINE.match(line)
        assert m, line
        name, labels, value, ts = m.groups()
        assert name == current, f"{name} outside its family"
        key = (name, tuple(sorted(LABEL.findall(labels))))
        series.setdefault(key, []).append((int(ts), float(value)))
    for key, samples in series.items():
        times = [t for t, _ in samples]
        assert times == sorted(set(times)), f"{key} not in time order"
    return series


@pytest.fixture(scope="module")
def small() -> tuple[
    hw.Cluster, dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[int, float]]]
]:
    cluster = _small()
    out = io.StringIO()
    counts = hw.write_openmetrics(cluster, out)
    series = _parse(out.getvalue())
    assert counts["series"] == len(series)
    assert counts["samples"] == sum(len(s) for s in series.values())
    return cluster, series


def test_parts_are_documents_that_together_hold_the_whole_history(small, tmp_path):
    _, whole = small
    seen = []
    parts = hw.PartFiles(tmp_path, 300_000, seen.append)
    hw.write_openmetrics(_small(), parts)
    parts.close()
    assert len(seen) > 3 and seen == parts.paths
    merged: dict = {}
    for path in seen:
        for key, samples in _parse(path.read_text(encoding="utf-8")).items():
            assert key not in merged  # a series is never split between parts
            merged[key] = samples
    assert merged == whole


def test_the_same_seed_gives_the_same_history():
    a, b = io.StringIO(), io.StringIO()
    hw.write_openmetrics(_small(), a)
    hw.write_openmetrics(_small(), b)
    assert a.getvalue() == b.getvalue()
    c = io.StringIO()
    hw.write_openmetrics(hw.make_cluster(seed=4, workloads=24, nodes=8, days=0.5), c)
    assert c.getvalue() != a.getvalue()


def test_every_sample_is_on_the_minute_grid_within_the_range(small):
    cluster, series = small
    first = cluster.start_s - hw.LEAD_S
    for samples in series.values():
        for t, _ in samples:
            assert first <= t <= cluster.end_s
            assert (t - first) % hw.STEP_S == 0


def test_node_labels_carry_the_allowlisted_labels_as_ksm_names_them(small):
    cluster, series = small
    labels = {dict(k[1])["node"]: dict(k[1]) for k in series if k[0] == "kube_node_labels"}
    assert set(labels) == {
        n.name for n in cluster.nodes if n.end_s is None or n.end_s > cluster.start_s - hw.LEAD_S
    }
    for node in cluster.nodes:
        got = labels.get(node.name)
        if got is None:
            continue
        assert got["label_node_kubernetes_io_instance_type"] == node.instance_type
        assert got["label_topology_kubernetes_io_zone"] == node.zone
        if node.nodegroup:
            assert got["label_eks_amazonaws_com_nodegroup"] == "system"
            assert got["label_eks_amazonaws_com_capacity_type"] == "ON_DEMAND"
        else:
            assert got["label_karpenter_sh_nodepool"] == node.nodepool
            assert got["label_karpenter_sh_capacity_type"] == node.capacity_type
    info = [dict(k[1]) for k in series if k[0] == "kube_node_info"]
    assert all(
        re.fullmatch(r"aws:///us-east-1[abc]/i-0[0-9a-f]{16}", i["provider_id"]) for i in info
    )
    kinds = {(n.nodepool, n.capacity_type) for n in cluster.nodes}
    assert {("general", "spot"), ("general", "on-demand"), ("", "on-demand")} <= kinds


def test_nodes_appear_and_disappear_inside_the_range(small):
    cluster, series = small
    created = {dict(k[1])["node"]: s for k, s in series.items() if k[0] == "kube_node_created"}
    inside = [n for n in cluster.nodes if cluster.start_s < n.start_s < cluster.end_s]
    gone = [
        n
        for n in cluster.nodes
        if n.end_s is not None and cluster.start_s < n.end_s < cluster.end_s
    ]
    assert inside and gone
    for n in inside:
        samples = created[n.name]
        assert samples[0][0] - n.start_s < hw.STEP_S
        assert {v for _, v in samples} == {n.start_s}
    for n in gone:
        if n.name in created:
            assert n.end_s - hw.STEP_S <= created[n.name][-1][0] < n.end_s


def test_live_pods_match_the_replicas_the_series_say(small):
    """At every sampled minute a Deployment's spec replicas equal its live pods (those with
    a kube_pod_created sample then, owned by one of its ReplicaSets), up to the pods being
    replaced after their node went (gone for a few seconds, so never at a minute)."""
    _, series = small
    rs_owner = {
        (d["namespace"], d["replicaset"]): d["owner_name"]
        for d in (dict(k[1]) for k in series if k[0] == "kube_replicaset_owner")
    }
    pod_owner = {
        (d["namespace"], d["pod"], d["uid"]): (d["owner_kind"], d["owner_name"])
        for d in (dict(k[1]) for k in series if k[0] == "kube_pod_owner")
    }
    live: dict[tuple[str, str, int], int] = defaultdict(int)
    for key, samples in series.items():
        if key[0] != "kube_pod_created":
            continue
        d = dict(key[1])
        kind, owner = pod_owner[(d["namespace"], d["pod"], d["uid"])]
        if kind != "ReplicaSet":
            continue
        for t, _ in samples:
            live[(d["namespace"], rs_owner[(d["namespace"], owner)], t)] += 1
    checked = mismatched = 0
    for key, samples in series.items():
        if key[0] != "kube_deployment_spec_replicas":
            continue
        d = dict(key[1])
        for t, value in samples[1:]:  # the first minute may precede the pods' first scrape
            checked += 1
            mismatched += live[(d["namespace"], d["deployment"], t)] != value
    assert checked > 1000
    # A pod created within the minute before a scrape is counted there; its replacement
    # (node gone) starts a few seconds after the node: at most a small share differs.
    assert mismatched / checked < 0.02


def test_cronjob_runs_are_jobs_named_by_their_scheduled_minute(small):
    cluster, series = small
    owners = [dict(k[1]) for k in series if k[0] == "kube_job_owner"]
    assert owners
    crons = {w.name: w for w in cluster.workloads if w.kind == "CronJob"}
    starts = {
        dict(k[1])["job_name"]: s[0][1]
        for k, s in series.items()
        if k[0] == "kube_job_status_start_time"
    }
    for o in owners:
        assert o["owner_kind"] == "CronJob" and o["owner_name"] in crons
        name, _, minutes = o["job_name"].rpartition("-")
        assert name == o["owner_name"]
        assert 0 <= starts[o["job_name"]] - int(minutes) * 60 < 60


def test_dump_holds_the_objects_with_their_requests(small, tmp_path):
    cluster, _ = small
    dump = hw.dump_objects(cluster)
    kinds = defaultdict(list)
    for item in dump["items"]:
        kinds[item["kind"]].append(item)
    assert {w.name for w in cluster.workloads if w.kind == "Deployment"} == {
        d["metadata"]["name"] for d in kinds["Deployment"]
    }
    assert len(kinds["HorizontalPodAutoscaler"]) == sum(1 for w in cluster.workloads if w.hpa)
    assert {p["metadata"]["name"] for p in kinds["NodePool"]} == {"general", "stateful"}
    by_name = {w.name: w for w in cluster.workloads}
    for d in kinds["Deployment"]:
        requests = d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
        assert requests["cpu"] == f"{by_name[d['metadata']['name']].cpu_m}m"
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump), encoding="utf-8")
    from joiner.api.manifests.loader import load_files

    loaded = load_files([path])
    assert len(loaded.workloads) == len(kinds["Deployment"]) + len(kinds["StatefulSet"])
    assert len(loaded.cronjobs) == len(kinds["CronJob"])
    assert len(loaded.hpas) == len(kinds["HorizontalPodAutoscaler"])
    assert [n.name for n in loaded.nodepools] == ["general", "stateful"]


BIN = hw.DEFAULT_BIN


@pytest.mark.skipif(
    not (BIN / "promtool").is_file() or not (BIN / "prometheus").is_file(),
    reason=f"prometheus and promtool not built in {BIN} (tools/kube-stack/build-prometheus.sh)",
)
def test_the_real_prometheus_serves_the_backfilled_history(tmp_path):
    cluster = hw.make_cluster(seed=5, workloads=12, nodes=6, days=0.25)
    hw.PART_BYTES, part_bytes = 4 << 20, hw.PART_BYTES  # several parts, overlapping blocks
    try:
        done = hw.generate_and_backfill(cluster, tmp_path, BIN / "promtool")
    finally:
        hw.PART_BYTES = part_bytes
    assert done["generate"]["files"] > 2
    assert done["backfill"]["cpuSeconds"] > 0
    assert not list(tmp_path.glob("*.om"))  # each part deleted once backfilled
    at = cluster.start_s + 3 * 3600
    with hw.prometheus(BIN / "prometheus", tmp_path / "tsdb", tmp_path) as url:
        nodes = hw.query_count(url, "count(kube_node_info)", at)
        replicas = hw.query_count(url, "sum(kube_deployment_spec_replicas)", at)
        after_end = hw.query_count(url, "count(kube_node_info)", cluster.end_s + 300)
    live = [
        n
        for n in cluster.nodes
        if n.start_s <= at - hw.STEP_S and (n.end_s is None or n.end_s > at)
    ]
    assert nodes == len(live)
    want = 0
    for w in cluster.workloads:
        if w.kind == "Deployment":
            want += [v for t, v in w.changes if t <= at][-1]
    assert replicas == want
    assert after_end == 0  # no staleness markers: the 1 m lookback ends the series
    subprocess.run([str(BIN / "promtool"), "--version"], check=True, capture_output=True)
