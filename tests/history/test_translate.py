"""Translation of kube-state-metrics series and a cluster dump into an imported Scenario."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.history.queries import QUERIES, render_queries
from joiner.history.series import HistoryWarnings, QueryRange, Series
from joiner.history.translate import (
    ENDS_ONLY,
    Imported,
    kept_samples,
    objects_from_documents,
    objects_from_files,
    pod_requests,
    resample,
    translate,
)
from tests.history.conftest import CLUSTER, T0, MemorySource, flat, joined, series

RANGE = QueryRange(T0, T0 + 7200.0, 60.0)
GiB = 2.0**30
MiB = 2.0**20


def _answers() -> dict[str, list[Series]]:
    web = {"namespace": "shop", "deployment": "web"}
    return {
        "deployment_replicas": [
            joined(flat(web, 3, 0, 3540), flat(web, 5, 3600, 7200)),
            # Deleted at 3000 s, and not in the dump.
            flat({"namespace": "shop", "deployment": "gone"}, 4, 0, 3000),
        ],
        "hpa_info": [
            series(
                {
                    "namespace": "shop",
                    "horizontalpodautoscaler": "web",
                    "scaletargetref_kind": "Deployment",
                    "scaletargetref_name": "web",
                },
                [(0, 1)],
            )
        ],
        "hpa_desired_replicas": [
            joined(
                flat({"namespace": "shop", "horizontalpodautoscaler": "web"}, 2, 0, 3540),
                flat({"namespace": "shop", "horizontalpodautoscaler": "web"}, 6, 3600, 7200),
            )
        ],
        "statefulset_replicas": [
            # A scrape gap from 1800 s to 2400 s.
            joined(
                flat({"namespace": "shop", "statefulset": "db"}, 2, 0, 1800),
                flat({"namespace": "shop", "statefulset": "db"}, 2, 2400, 7200),
            ),
        ],
        "replicaset_replicas": [
            flat({"namespace": "shop", "replicaset": "loner"}, 1, 0, 7200),
            flat({"namespace": "shop", "replicaset": "web-abc"}, 3, 0, 7200),
        ],
        "replicaset_owner": [
            series(
                {
                    "namespace": "shop",
                    "replicaset": "loner",
                    "owner_kind": "<none>",
                    "owner_name": "<none>",
                },
                [(0, 1)],
            ),
            series(
                {
                    "namespace": "shop",
                    "replicaset": "web-abc",
                    "owner_kind": "Deployment",
                    "owner_name": "web",
                },
                [(0, 1)],
            ),
        ],
        "job_start_time": [
            series({"namespace": "batch", "job_name": "backfill"}, [(600, T0 + 600)]),
            series({"namespace": "batch", "job_name": "nightly-1"}, [(1800, T0 + 1800)]),
            series({"namespace": "batch", "job_name": "nightly-2"}, [(5400, T0 + 5400)]),
        ],
        "job_completion_time": [
            series({"namespace": "batch", "job_name": "backfill"}, [(1800, T0 + 1800)]),
            series({"namespace": "batch", "job_name": "nightly-1"}, [(2100, T0 + 2100)]),
            series({"namespace": "batch", "job_name": "nightly-2"}, [(5700, T0 + 5700)]),
        ],
        "job_parallelism": [series({"namespace": "batch", "job_name": "backfill"}, [(600, 2)])],
        "job_owner": [
            series(
                {
                    "namespace": "batch",
                    "job_name": f"nightly-{i}",
                    "owner_kind": "CronJob",
                    "owner_name": "nightly",
                },
                [(0, 1)],
            )
            for i in (1, 2)
        ],
        "pod_owner": [
            series(
                {
                    "namespace": "shop",
                    "pod": "web-abc-1",
                    "owner_kind": "ReplicaSet",
                    "owner_name": "web-abc",
                },
                [(0, 1)],
            ),
            series(
                {
                    "namespace": "shop",
                    "pod": "db-0",
                    "owner_kind": "StatefulSet",
                    "owner_name": "db",
                },
                [(0, 1)],
            ),
            series(
                {
                    "namespace": "shop",
                    "pod": "loner-x",
                    "owner_kind": "ReplicaSet",
                    "owner_name": "loner",
                },
                [(0, 1)],
            ),
        ],
        "pod_container_requests": [
            series(
                {"namespace": "shop", "pod": "web-abc-1", "container": "web", "resource": "cpu"},
                [(0, 0.5)],
            ),
            series(
                {"namespace": "shop", "pod": "web-abc-1", "container": "web", "resource": "memory"},
                [(0, GiB)],
            ),
            # The StatefulSet's pods asked for 1.5 cores, the object (today) for 1.
            series(
                {"namespace": "shop", "pod": "db-0", "container": "db", "resource": "cpu"},
                [(0, 1.5)],
            ),
            series(
                {"namespace": "shop", "pod": "db-0", "container": "db", "resource": "memory"},
                [(0, 2 * GiB)],
            ),
        ],
        "pod_init_container_requests": [
            series(
                {"namespace": "shop", "pod": "web-abc-1", "container": "mesh", "resource": "cpu"},
                [(0, 0.1)],
            ),
            series(
                {
                    "namespace": "shop",
                    "pod": "web-abc-1",
                    "container": "mesh",
                    "resource": "memory",
                },
                [(0, 64 * MiB)],
            ),
        ],
        "pod_init_container_info": [
            series(
                {
                    "namespace": "shop",
                    "pod": "web-abc-1",
                    "container": "mesh",
                    "restart_policy": "Always",
                },
                [(0, 1)],
            ),
        ],
        "pod_created": [
            # Running at the start and after: seen at the start and the next hour.
            series({"namespace": "shop", "pod": "web-abc-1"}, [(0, T0 - 100), (3600, T0 - 100)]),
            series({"namespace": "shop", "pod": "loner-x"}, [(600, T0 + 600)]),
        ],
        "pod_scheduled_time": [
            series({"namespace": "shop", "pod": "web-abc-1"}, [(0, T0 - 90)]),
        ],
        "node_info": [
            flat({"node": "a", "provider_id": "aws:///us-east-1a/i-0a"}, 1, 0, 7200),
            flat({"node": "b", "provider_id": "aws:///us-east-1b/i-0b"}, 1, 1200, 4800),
        ],
        "node_labels": [
            series(
                {
                    "node": "a",
                    "label_node_kubernetes_io_instance_type": "m5.large",
                    "label_topology_kubernetes_io_zone": "us-east-1a",
                    "label_karpenter_sh_capacity_type": "spot",
                    "label_karpenter_sh_nodepool": "default",
                },
                [(0, 1)],
            ),
            # An EKS managed node group; the allowlist hides the instance type and zone.
            series(
                {
                    "node": "b",
                    "label_eks_amazonaws_com_capacity_type": "ON_DEMAND",
                    "label_eks_amazonaws_com_nodegroup": "ng-1",
                },
                [(1200, 1)],
            ),
        ],
        "node_created": [
            series({"node": "a"}, [(0, T0 - 3600)]),
            series({"node": "b"}, [(1200, T0 + 1200)]),
        ],
    }


def _cluster(tmp_path: Path) -> Path:
    path = tmp_path / "dump.yaml"
    path.write_text(CLUSTER)
    return path


def _imported(tmp_path: Path) -> Imported:
    objects = objects_from_files([_cluster(tmp_path)])
    source = MemorySource(_answers())
    imported = translate(source, "memory", RANGE, objects)
    assert source.asked == [(q.name, q.promql) for q in QUERIES]
    return imported


def test_workloads_replay_their_recorded_replicas_per_minute(tmp_path: Path) -> None:
    imported = _imported(tmp_path)
    traces = {(t.kind, t.key): t for t in imported.traces}
    assert sorted(traces) == [
        ("Deployment", "shop/web"),
        ("Job", "batch/backfill"),
        ("ReplicaSet", "shop/loner"),
        ("StatefulSet", "shop/db"),
    ]
    web = traces["Deployment", "shop/web"]
    # The HPA's desired replicas, not the Deployment's spec, and its name kept.
    assert web.hpa == "shop/web"
    assert web.values == (2.0,) * 60 + (6.0,) * 60
    # The scrape gap is held, and counted.
    assert traces["StatefulSet", "shop/db"].values == (2.0,) * 120
    assert imported.warnings.subjects("scrape gap") == ["shop/db"]
    assert traces["ReplicaSet", "shop/loner"].values == (1.0,) * 120
    # A Job run: its parallelism from its start minute until its completion.
    assert traces["Job", "batch/backfill"].values == (0.0,) * 10 + (2.0,) * 20 + (0.0,) * 90
    # CronJob runs: the median of their run times.
    assert imported.cron_run_s == {"batch/nightly": 300.0}


def test_renamed_deleted_and_silent_workloads_are_counted(tmp_path: Path) -> None:
    w = _imported(tmp_path).warnings
    assert w.subjects("history-only workload") == ["Deployment/shop/gone"]
    assert w.subjects("unrecorded workload") == ["Deployment/shop/idle"]
    assert w.subjects("idle Job") == ["batch/old-migration"]
    assert w.subjects("request-less pod") == ["shop/loner-x"]


def test_objects_are_copied_without_current_state_and_with_the_historys_requests(
    tmp_path: Path,
) -> None:
    imported = _imported(tmp_path)
    kinds = [(d["kind"], d["metadata"]["name"]) for d in imported.documents]
    assert ("Node", "ip-10-0-0-1.ec2.internal") not in kinds
    assert ("HorizontalPodAutoscaler", "web") not in kinds
    assert ("Job", "old-migration") not in kinds
    assert ("Job", "backfill") in kinds and ("CronJob", "nightly") in kinds
    db = next(d for d in imported.documents if d["metadata"]["name"] == "db")
    assert db["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1500m", "memory": str(2 * 2**30)},
        # The cpu limit below the history's request is raised to it; memory's is kept.
        "limits": {"cpu": "1500m", "memory": "4Gi"},
    }
    # web's pods (app 500m + sidecar 100m) match its template: left as it is.
    web = next(d for d in imported.documents if d["metadata"]["name"] == "web")
    assert web["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "500m",
        "memory": "1Gi",
    }
    assert imported.warnings.subjects("request change") == [
        "StatefulSet/shop/db (pod shop/db-0: cpu=1000m memory=2Gi -> cpu=1500m memory=2Gi)"
    ]


def _requests(pod: str, container: str, cpu: float, memory: float) -> list[Series]:
    base = {"namespace": "shop", "pod": pod, "container": container}
    return [
        series({**base, "resource": "cpu"}, [(0, cpu)]),
        series({**base, "resource": "memory"}, [(0, memory)]),
    ]


def test_containers_the_template_lacks_are_added_with_their_requests(tmp_path: Path) -> None:
    """Regression (user report): webhook-injected containers (an Istio sidecar, a restartable
    init container; a Linkerd proxy as an app container) are in the history but not in
    today's template, and were dropped: the copy requested less than the pods did."""
    answers = _answers()
    answers["pod_container_requests"] += [
        *_requests("loner-x", "loner", 0.25, 256 * MiB),
        *_requests("loner-x", "linkerd-proxy", 0.1, 20 * MiB),
    ]
    answers["pod_init_container_requests"] += [
        *_requests("loner-x", "istio-proxy", 0.2, 128 * MiB),
        *_requests("loner-x", "istio-init", 0.05, 10 * MiB),
    ]
    answers["pod_init_container_info"].append(
        series(
            {
                "namespace": "shop",
                "pod": "loner-x",
                "container": "istio-proxy",
                "restart_policy": "Always",
            },
            [(0, 1)],
        )
    )
    objects = objects_from_files([_cluster(tmp_path)])
    imported = translate(MemorySource(answers), "memory", RANGE, objects)
    loner = next(d for d in imported.documents if d["metadata"]["name"] == "loner")
    spec = loner["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["loner", "linkerd-proxy"]
    assert [(c["name"], c.get("restartPolicy")) for c in spec["initContainers"]] == [
        ("istio-proxy", "Always"),
        ("istio-init", None),
    ]
    assert spec["initContainers"][0]["resources"]["requests"] == {
        "cpu": "200m",
        "memory": str(128 * 2**20),
    }
    # The copy requests what the history's pod did: 250m + 100m + the 200m sidecar.
    reloaded = objects_from_documents([loner], "copy").manifests.deployment("shop/loner")
    assert reloaded is not None
    assert reloaded.template.requests["cpu"] == 550
    assert reloaded.template.requests["memory"] == (256 + 20 + 128) * 2**20
    (subject,) = imported.warnings.subjects("request change")[1:]
    assert subject == (
        "ReplicaSet/shop/loner (pod shop/loner-x: cpu=250m memory=256Mi -> cpu=550m "
        "memory=404Mi; containers not in the template added: linkerd-proxy, "
        "sidecar:istio-proxy, init:istio-init)"
    )


def test_as_run_nodes_from_karpenter_and_eks_labels(tmp_path: Path) -> None:
    imported = _imported(tmp_path)
    a, b = imported.nodes
    assert (a.node, a.instance_type, a.capacity_type, a.zone, a.node_pool) == (
        "a",
        "m5.large",
        "spot",
        "us-east-1a",
        "default",
    )
    # Created before the range: starts at 0; present at the end: no end.
    assert (a.start_s, a.end_s) == (0.0, None)
    # EKS labels; zone from the provider ID; the instance type hidden by the allowlist.
    assert (b.instance_type, b.capacity_type, b.zone, b.node_pool) == (
        "",
        "on-demand",
        "us-east-1b",
        "ng-1",
    )
    assert (b.start_s, b.end_s) == (1200.0, 4800.0)
    assert imported.warnings.subjects("untyped node") == ["b"]
    assert imported.region == "us-east-1"


def test_as_run_pods_keep_negative_and_missing_times(tmp_path: Path) -> None:
    pods = _imported(tmp_path).pods
    assert [(p.pod, p.created_s, p.scheduled_s) for p in pods] == [
        ("loner-x", 600.0, None),
        ("web-abc-1", -100.0, -90.0),
    ]


def test_no_kube_state_metrics_series_is_an_error_naming_source_and_series(
    tmp_path: Path,
) -> None:
    objects = objects_from_files([_cluster(tmp_path)])
    with pytest.raises(InputError) as caught:
        translate(MemorySource({}), "http://prom:9090", RANGE, objects)
    text = str(caught.value)
    assert text.startswith("http://prom:9090: no kube-state-metrics series")
    assert "kube_deployment_spec_replicas" in text and "kube_node_info" in text


def test_requests_sum_as_kubernetes_does_with_init_and_sidecar_containers() -> None:
    containers = {
        "app": {"cpu": 0.5, "memory": 100.0},
        "app2": {"cpu": 0.25, "memory": 50.0},
        "sidecar:proxy": {"cpu": 0.1, "memory": 10.0},
        # A big init container: it plus the sidecar exceeds the app containers' sum.
        "init:migrate": {"cpu": 2.0, "memory": 20.0},
    }
    cpu_m, mem = pod_requests(containers)
    assert math.isclose(cpu_m, 2100.0)  # max(750 + 100, 2000 + 100)
    assert mem == 160.0  # max(150 + 10, 20 + 10)
    assert pod_requests({"app": {"cpu": 1.0}}) == (1000.0, 0.0)


def test_resample_takes_the_max_in_a_minute_and_zero_before_a_late_start() -> None:
    rng = QueryRange(T0, T0 + 300.0, 15.0)
    w = HistoryWarnings()
    s = series(
        {},
        [
            (120, 1),
            (135, 4),
            (150, 2),
            (165, 2),
            (180, 3),
            (195, 3),
            (210, 3),
            (225, 3),
            (240, 3),
            (255, 3),
            (270, 3),
            (285, 3),
            (300, 3),
        ],
    )
    assert resample(s, rng, "x", w) == (0.0, 0.0, 4.0, 3.0, 3.0)
    assert w.subjects("late series start") == ["x"]


def test_print_queries_lists_every_query_verbatim() -> None:
    text = render_queries()
    for q in QUERIES:
        assert f"# {q.name}: {q.why}\n{q.promql}\n" in text
    assert "label_eks_amazonaws_com_capacity_type" in text


def test_a_hidden_instance_type_is_taken_from_the_dumps_node(tmp_path: Path) -> None:
    answers = _answers()
    name = "ip-10-0-0-1.ec2.internal"
    answers["node_info"].append(
        flat({"node": name, "provider_id": "aws:///us-east-1a/i-0123"}, 1, 0, 7200)
    )
    objects = objects_from_files([_cluster(tmp_path)])
    imported = translate(MemorySource(answers), "memory", RANGE, objects)
    node = next(n for n in imported.nodes if n.node == name)
    assert (node.instance_type, node.zone, node.capacity_type) == ("m5.large", "us-east-1a", "")
    assert imported.warnings.subjects("dump-labelled node") == [name]
    assert imported.warnings.subjects("untyped node") == ["b"]
    assert imported.warnings.subjects("capacity-unknown node") == [name]


def test_a_cronjob_without_a_completed_run_is_counted(tmp_path: Path) -> None:
    answers = _answers()
    answers["job_completion_time"] = [
        s for s in answers["job_completion_time"] if s.labels["job_name"] == "backfill"
    ]
    objects = objects_from_files([_cluster(tmp_path)])
    imported = translate(MemorySource(answers), "memory", RANGE, objects)
    assert imported.cron_run_s == {}
    assert imported.warnings.subjects("unmeasured CronJob") == ["batch/nightly"]


def test_a_dump_without_nodepools_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "apps.yaml"
    path.write_text(CLUSTER.split("---\n", 2)[2])
    imported = translate(MemorySource(_answers()), "memory", RANGE, objects_from_files([path]))
    assert imported.warnings.subjects("cluster without a NodePool") == [str(path)]
    # Regression (user report): the warning said to add them to objects.yaml, where an
    # EC2NodeClass's subnets are missing from spec.cloud; it says to re-import instead.
    (line,) = [w for w in imported.warnings.render() if "without a NodePool" in w]
    assert "to the dump (-f nodepools.yaml) and import again" in line
    assert imported.cloud is None
    # The same apps with the NodePools given as a second file: the VPC the selectors ask.
    pools = tmp_path / "nodepools.yaml"
    pools.write_text("---\n".join(CLUSTER.split("---\n", 2)[:2]))
    objects = objects_from_files([path, pools])
    again = translate(MemorySource(_answers()), "memory", RANGE, objects)
    assert not again.warnings.subjects("cluster without a NodePool")
    assert again.cloud is not None
    assert {"karpenter.sh/discovery": "demo"} in [s["tags"] for s in again.cloud["subnets"]]


def test_without_node_zones_the_vpc_spans_the_regions_zones(tmp_path: Path) -> None:
    answers = _answers()
    for key in ("node_info", "node_labels", "node_created"):
        answers[key] = []
    imported = translate(
        MemorySource(answers),
        "memory",
        RANGE,
        objects_from_files([_cluster(tmp_path)]),
        region="eu-west-1",
    )
    assert imported.cloud is not None
    assert [s["zone"] for s in imported.cloud["subnets"]] == [
        "eu-west-1a",
        "eu-west-1b",
        "eu-west-1c",
    ]


def test_kinds_joiner_does_not_read_are_not_copied(tmp_path: Path) -> None:
    path = _cluster(tmp_path)
    path.write_text(
        path.read_text()
        + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: db-password, namespace: shop}\n"
        + "data: {password: aHVudGVyMg==}\n"
    )
    imported = translate(MemorySource(_answers()), "memory", RANGE, objects_from_files([path]))
    assert "Secret" not in {d["kind"] for d in imported.documents}
    assert imported.warnings.subjects("unmodelled object left out") == ["Secret/db-password"]


def test_a_node_whose_labels_changed_takes_the_latest(tmp_path: Path) -> None:
    answers = _answers()
    # Registered without its capacity type, labelled a minute later: two series.
    answers["node_labels"] = [
        series(
            {
                "node": "a",
                "label_karpenter_sh_capacity_type": "spot",
                "label_node_kubernetes_io_instance_type": "m5.large",
            },
            [(60, 1), (7200, 1)],
        ),
        series({"node": "a", "label_node_kubernetes_io_instance_type": "m5.large"}, [(0, 1)]),
    ]
    imported = translate(
        MemorySource(answers), "memory", RANGE, objects_from_files([_cluster(tmp_path)])
    )
    a = next(n for n in imported.nodes if n.node == "a")
    assert (a.instance_type, a.capacity_type) == ("m5.large", "spot")


def test_each_query_reads_the_metric_it_names() -> None:
    for q in QUERIES:
        assert any(f"({q.metric}{end}" in q.promql for end in (")", "{", "[")), q.name


def test_resample_is_zero_after_a_series_ends_early_and_holds_through_gaps() -> None:
    rng = QueryRange(T0, T0 + 600.0, 60.0)
    w = HistoryWarnings()
    # Samples at 0-120 s, a gap, 360 s, then nothing from 420 s: the object was deleted.
    s = series({}, [(0, 2), (60, 2), (120, 5), (360, 1)])
    assert resample(s, rng, "x", w) == (2.0, 2.0, 5.0, 5.0, 5.0, 5.0, 1.0, 0.0, 0.0, 0.0)
    assert w.subjects("scrape gap") == ["x"]
    assert w.subjects("early series end") == ["x"]
    assert w.subjects("late series start") == []


@pytest.mark.parametrize(
    ("query", "value"),
    [("hpa_desired_replicas", -3.0), ("hpa_desired_replicas", 1e9), ("job_parallelism", 1e7)],
)
def test_replica_counts_below_0_or_above_max_name_the_workload(
    tmp_path: Path, query: str, value: float
) -> None:
    # Used to be written into the trace as they were (-3, 1e300 as a 300-digit integer)
    # and replayed silently.
    answers = _answers()
    first = answers[query][0]
    values = list(first.values)
    values[len(values) // 2] = value
    answers[query][0] = Series(first.labels, first.times_s, tuple(values))
    with pytest.raises(InputError, match="a replica count is 0 to 100000") as caught:
        translate(MemorySource(answers), "saved", RANGE, objects_from_files([_cluster(tmp_path)]))
    assert "saved" in str(caught.value) and f"{value:g} replicas" in str(caught.value)


@pytest.mark.parametrize("value", [-2.0, 1e30])
def test_a_request_below_0_or_absurd_names_source_and_series(tmp_path: Path, value: float) -> None:
    # Used to fail later as "quantity '-2000m' is negative" with no file, pod or container.
    answers = _answers()
    first = answers["pod_container_requests"][0]
    answers["pod_container_requests"][0] = Series(
        first.labels, first.times_s, (value,) * len(first.values)
    )
    with pytest.raises(InputError, match=r"request .* is not 0 to") as caught:
        translate(MemorySource(answers), "saved", RANGE, objects_from_files([_cluster(tmp_path)]))
    text = str(caught.value)
    assert text.startswith("saved: ") and "pod_container_requests{" in text
    assert f'pod="{first.labels["pod"]}"' in text


def _padded(answers: dict[str, list[Series]]) -> dict[str, list[Series]]:
    """``answers`` with two samples put before every series of an ``ENDS_ONLY`` query: its
    first value a minute earlier, then an odd value, so each has a sample inside."""
    out = dict(answers)
    for name in ENDS_ONLY & set(answers):
        out[name] = [
            Series(
                s.labels,
                (s.times_s[0] - 60.0, s.times_s[0] - 30.0, *s.times_s),
                (s.values[0], 7777.0, *s.values),
            )
            for s in answers[name]
        ]
    return out


def test_keeping_only_the_ends_of_the_ends_only_queries_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = _padded(_answers())
    assert all(len(s.times_s) > 2 for q in ENDS_ONLY for s in answers[q])
    objects = objects_from_files([_cluster(tmp_path)])
    reduced = translate(MemorySource(answers), "memory", RANGE, objects)
    monkeypatch.setattr("joiner.history.translate.ENDS_ONLY", frozenset())
    whole = translate(MemorySource(answers), "memory", RANGE, objects)
    for name in ("documents", "traces", "cron_run_s", "nodes", "pods", "region", "cloud"):
        assert getattr(reduced, name) == getattr(whole, name), name
    assert reduced.warnings.render() == whole.warnings.render()


def test_kept_samples_are_the_first_and_last_of_an_ends_only_query() -> None:
    s = series({"node": "a"}, [(0, 1), (60, 2), (120, 3), (180, 4)])
    (ends,) = kept_samples("node_info", [s])
    assert ends == Series({"node": "a"}, (T0, T0 + 180), (1.0, 4.0))
    short = series({"node": "b"}, [(0, 1), (60, 2)])
    assert kept_samples("node_info", [short])[0] is short
    assert kept_samples("deployment_replicas", [s])[0] is s
