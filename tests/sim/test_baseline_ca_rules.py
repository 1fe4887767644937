"""Cluster Autoscaler 1.36 rules the baseline follows, each found by the differential test
against the real Cluster Autoscaler (tests/autoscaler): the kube-proxy pod on template nodes,
the cluster-wide limits, scale-down parallelism, the system-pod timeout and the flag
defaults. Each test is the case's input in small."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.baseline.autoscaler import SCALE_DOWN, SCALE_UP
from joiner.sim.baseline.limits import ClusterLimits, Usage, allowed_nodes, parse_min_max
from joiner.sim.scenario import load_scenario
from tests.manifests import deployment

MANIFESTS = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: main}
spec:
  template:
    metadata: {ANNOTATIONS}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: R
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {t: "1"}}]
  securityGroupSelectorTerms: [{tags: {t: "1"}}]
"""


def _deployment(name: str, replicas: int, cpu: str, namespace: str, extra: str) -> str:
    """A Deployment of pause containers asking ``cpu`` and 256Mi; ``extra`` follows the
    containers in the pod spec."""
    containers = f"""\
      containers:
        - name: c
          image: pause
          resources: {{requests: {{cpu: {cpu}, memory: 256Mi}}}}
{extra}"""
    return "---\n" + deployment(containers, name, replicas, namespace)


#: One pod per node while there are as many nodes, by preference only (preferred
#: anti-affinity): CA's drain simulation, filters only, lets the pod move.
SPREAD = """\
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector: {{matchLabels: {{app: {name}}}}}
"""


def _scenario(
    tmp_path: Path,
    deployments: list[tuple[str, int, str]] | list[tuple[str, int, str, str]],
    *,
    ca: str = "",
    schedules: str = "",
    duration: str = "20m",
    instance_type: str = "m5.large",
    namespace: str = "default",
    annotations: str = "{}",
) -> SimulationRuntime:
    """A one-group baseline (``instance_type``, on-demand, us-east-1a) over Deployments
    ``(name, replicas, cpu)``, with the harness's short timings and ``ca`` added."""
    docs = MANIFESTS.replace("{ANNOTATIONS}", f"{{annotations: {annotations}}}")
    for name, replicas, cpu, *extra in deployments:
        spec = extra[0].format(name=name) if extra else ""
        docs += _deployment(name, replicas, cpu, namespace, spec)
    (tmp_path / "m.yaml").write_text(docs)
    workloads = "".join(
        f"\n    - {{deployment: {namespace}/{d[0]}, replicas: {d[1]}}}" for d in deployments
    )
    (tmp_path / "s.yaml").write_text(
        f"""\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {{name: t}}
spec:
  duration: {duration}
  seed: 1
  manifests: [m.yaml]
  cloud:
    subnets: [{{id: s-a, zone: us-east-1a, tags: {{t: "1"}}}}]
    securityGroups: [{{id: sg, tags: {{t: "1"}}}}]
  workloads:{workloads}
{schedules}
  clusterAutoscaler:
    expander: least-waste
    scanInterval: 2s
    scaleDownUnneededTime: 10s
    scaleDownDelayAfterAdd: 10s
    asgLaunchDelay: {{min: 1s, max: 1s}}
    nodeGroups:
      - {{name: g, nodePool: main, instanceTypes: [{instance_type}], zones: [us-east-1a]}}
{ca}
"""
    )
    return SimulationRuntime(load_scenario(tmp_path / "s.yaml"), policy="cluster-autoscaler")


def _scale_ups(summary: dict) -> list[str]:
    return [e["detail"] for e in summary["timeline"] if e["kind"] == SCALE_UP]


def _live(rt: SimulationRuntime) -> int:
    return len(rt.state.live_nodeclaims())


@pytest.mark.parametrize(("cpu", "estimate"), [("950m", "+4"), ("900m", "+2")])
def test_template_node_counts_the_kube_proxy_pod(tmp_path, cpu, estimate):
    """Case template-kube-proxy: two 950m pods fit m5.large's 1930m but not the 1830m CA's
    template leaves beside its 100m kube-proxy pod, so CA asks for four nodes; the two spare
    ones are empty once kube-scheduler packs the real nodes, and go."""
    rt = _scenario(tmp_path, [("web", 4, cpu)])
    summary = rt.run().summary
    assert _scale_ups(summary)[0].startswith(f"{estimate} for 4 pod")
    assert _live(rt) == 2


@pytest.mark.parametrize(
    ("flag", "nodes"),
    [("maxNodesTotal: 3", 3), ('coresTotal: "0:6"', 3), ('memoryTotal: "0:20"', 2)],
)
def test_cluster_wide_limits_cap_the_scale_up(tmp_path, flag, nodes):
    """Cases max-nodes-total, cores-total, memory-total: one 1-CPU pod per m5.large (2 cores,
    7.4 GiB of capacity); the rest stay pending."""
    rt = _scenario(tmp_path, [("web", 5, "1")], ca=f"    {flag}")
    rt.run()
    assert _live(rt) == nodes
    assert len(rt.state.pending_pods()) == 5 - nodes


def test_cores_minimum_keeps_nodes_at_scale_down(tmp_path):
    """``--cores-total`` min: scale-down never takes the cluster below it."""
    schedules = (
        '  startTime: "2025-01-06T00:00:00Z"\n  schedules:\n'
        "    - {workload: default/web, cron: '0 0 * * *', minReplicas: 4, duration: 5m}"
    )
    rt = _scenario(
        tmp_path,
        [("web", 0, "1")],
        ca='    coresTotal: "4:100"',
        schedules=schedules,
    )
    rt.run()
    assert _live(rt) == 2  # 4 cores of m5.large capacity


def _removal_times(summary: dict) -> list[float]:
    return [e["atSeconds"] for e in summary["timeline"] if e["kind"] == SCALE_DOWN]


def test_empty_nodes_go_in_waves_of_the_scale_down_parallelism(tmp_path):
    """Case sd-bulk-empty: CA 1.36 deletes at most ``--max-scale-down-parallelism`` nodes at
    once, the ones still being deleted included (``budgets.CropNodes``)."""
    schedules = (
        '  startTime: "2025-01-06T00:00:00Z"\n  schedules:\n'
        "    - {workload: default/web, cron: '0 0 * * *', minReplicas: 6, duration: 5m}"
    )
    rt = _scenario(
        tmp_path, [("web", 0, "1")], ca="    maxScaleDownParallelism: 2", schedules=schedules
    )
    summary = rt.run().summary
    times = _removal_times(summary)
    assert len(times) == 6
    waves = sorted({t: times.count(t) for t in times}.values())
    assert max(waves) == 2
    assert _live(rt) == 0


def test_removed_max_empty_bulk_delete_is_read_as_parallelism_with_a_warning(tmp_path):
    rt = _scenario(tmp_path, [("web", 1, "1")], ca="    maxEmptyBulkDelete: 3")
    assert rt.autoscaler is not None
    assert rt.autoscaler.settings.max_scale_down_parallelism == 3
    assert any("maxEmptyBulkDelete" in w for w in rt.warnings())


def test_non_empty_nodes_drain_up_to_the_drain_parallelism(tmp_path):
    """Four nodes each with a 1200m pod (62 %), then each with a 400m pod: with
    ``--max-drain-parallelism`` 2 two non-empty nodes are drained in one scan."""
    schedules = (
        '  startTime: "2025-01-06T00:00:00Z"\n  schedules:\n'
        "    - {workload: default/big, cron: '0 0 * * *', minReplicas: 4, duration: 5m}\n"
        "    - {workload: default/lite, cron: '5 0 * * *', minReplicas: 4, duration: 1h}"
    )
    for drains, together in ((1, 1), (2, 2)):
        path = tmp_path / str(drains)
        path.mkdir()
        rt = _scenario(
            path,
            [("big", 0, "1200m"), ("lite", 0, "400m")],
            ca=f"    maxDrainParallelism: {drains}",
            schedules=schedules,
            duration="30m",
        )
        summary = rt.run().summary
        non_empty = [
            e["atSeconds"]
            for e in summary["timeline"]
            if e["kind"] == SCALE_DOWN and e["detail"].startswith("utilisation")
        ]
        assert non_empty, summary["timeline"]
        assert max(non_empty.count(t) for t in non_empty) == together


def test_kube_system_pod_blocks_only_until_the_disruption_timeout(tmp_path):
    """CA ``drainability/rules/system``: a kube-system pod without a PDB blocks its node's
    removal until ``--blocking-system-pod-distruption-timeout`` after its creation. Two nodes
    (a 1500m pod each), then a 200m kube-system pod on each (spread), then the big pods go."""
    schedules = (
        '  startTime: "2025-01-06T00:00:00Z"\n  schedules:\n'
        "    - {workload: kube-system/big, cron: '0 0 * * *', minReplicas: 2, duration: 5m}\n"
        "    - {workload: kube-system/sys, cron: '2 0 * * *', minReplicas: 2, duration: 1h}"
    )
    for timeout, left in (("1h", 2), ("5m", 1)):
        path = tmp_path / timeout
        path.mkdir()
        rt = _scenario(
            path,
            [("big", 0, "1500m"), ("sys", 0, "200m", SPREAD)],
            ca=f"    blockingSystemPodDisruptionTimeout: {timeout}",
            schedules=schedules,
            namespace="kube-system",
            duration="30m",
        )
        rt.run()
        assert _live(rt) == left, timeout


def test_scale_down_delay_after_delete_defaults_to_zero(tmp_path):
    rt = _scenario(tmp_path, [("web", 1, "1")])
    assert rt.autoscaler is not None
    assert rt.autoscaler.settings.delay_after_delete_s == 0.0


def test_limits_arithmetic():
    limits = ClusterLimits(max_nodes_total=5, cores=(0, 10), memory_gib=(0, 1000))
    usage = Usage().plus({"cpu": 1500, "memory": 2**30}, 2)  # 2 cores each, rounded up
    assert (usage.nodes, usage.cores) == (2, 4)
    assert allowed_nodes(limits, usage, {"cpu": 2000, "memory": 2**30}, 9) == 3
    assert allowed_nodes(limits, usage, {"cpu": 4000, "memory": 2**30}, 9) == 1
    assert parse_min_max("0:20") == (0, 20)
    # Go's strconv reads ASCII digits only, within int64.
    for bad in ("20", "a:b", "5:1", "-1:3", " 4 : 8 ", "0:8\n", "٤:٨", "0:８", "²:8", "+1:8"):
        with pytest.raises(ValueError):
            parse_min_max(bad)


def test_a_limit_above_int64_is_refused():
    with pytest.raises(ValueError, match="2\\^63-1"):
        parse_min_max("0:99999999999999999999")


@pytest.mark.parametrize(
    ("flag", "reason"),
    [
        ("maxNodesTotal: 2", "cluster-wide limit reached (--max-nodes-total=2)"),
        ('coresTotal: "0:4"', "cluster-wide limit reached (--cores-total=0:4)"),
    ],
)
def test_pods_a_limit_keeps_pending_say_so(tmp_path, flag, reason):
    """Every pod left pending by a cluster-wide limit has that reason, not 'no node group'."""
    rt = _scenario(tmp_path, [("web", 5, "1")], ca=f"    {flag}")
    summary = rt.run().summary
    assert summary["pods"]["pending"] == 3
    reasons = {r["reason"]: r["pods"] for r in summary["pods"]["unschedulableReasons"]}
    assert reasons == {reason: 3}, reasons


def test_explicit_parallelism_wins_over_the_removed_flag(tmp_path):
    rt = _scenario(
        tmp_path,
        [("web", 1, "1")],
        ca="    maxEmptyBulkDelete: 3\n    maxScaleDownParallelism: 7",
    )
    assert rt.autoscaler is not None
    assert rt.autoscaler.settings.max_scale_down_parallelism == 7
    (warning,) = [w for w in rt.warnings() if "maxEmptyBulkDelete" in w]
    assert "s.yaml" in warning and "ignored" in warning


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ('coresTotal: "0:0"', "no node at all"),
        ('memoryTotal: "0:0"', "no node at all"),
        ('coresTotal: "100:200"', "never adds nodes"),
        ("newPodScaleUpDelay: 20m", "ever old enough"),
    ],
)
def test_settings_that_cannot_work_are_warned_about(tmp_path, flag, words):
    rt = _scenario(tmp_path, [("web", 1, "1")], ca=f"    {flag}")
    assert any(words in w and "spec.clusterAutoscaler" in w for w in rt.warnings()), rt.warnings()


def test_a_bad_limit_names_its_field(tmp_path):
    with pytest.raises(InputError, match="coresTotal"):
        _scenario(tmp_path, [("web", 1, "1")], ca='    coresTotal: "8:4"')


HARD_SPREAD = """\
      topologySpreadConstraints:
        - {{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,
           labelSelector: {{matchLabels: {{app: {name}}}}}}}
"""


@pytest.mark.parametrize(("extra", "left"), [(HARD_SPREAD, 2), (SPREAD, 1)])
def test_a_hostname_spread_pod_cannot_leave_a_node_at_its_skew(tmp_path, extra, left):
    """Case sd-spread-holds: CA's drain simulation keeps the node it empties in its snapshot,
    a hostname domain at zero, so moving a maxSkew-1 spread pod to a node that has one makes
    the skew 2 and the node stays; by preference only (``SPREAD``), it goes."""
    schedules = (
        '  startTime: "2025-01-06T00:00:00Z"\n  schedules:\n'
        "    - {workload: default/big, cron: '0 0 * * *', minReplicas: 2, duration: 5m}\n"
        "    - {workload: default/blk, cron: '2 0 * * *', minReplicas: 2, duration: 1h}"
    )
    rt = _scenario(
        tmp_path,
        [("big", 0, "1500m"), ("blk", 0, "200m", extra)],
        schedules=schedules,
        duration="30m",
    )
    rt.run()
    assert _live(rt) == left


@pytest.mark.parametrize(("flag", "first_s"), [("", 2.0), ("    newPodScaleUpDelay: 30s", 30.0)])
def test_young_pods_wait(tmp_path, flag, first_s):
    """CA ``filterOutYoungPods`` (``--new-pod-scale-up-delay``) and ``allPodsAreNew`` (a loop
    whose pods are all younger than 2 s waits for the next): pods made at 0 are scaled up
    for at the first scan that is both late enough (scans every 2 s here)."""
    rt = _scenario(tmp_path, [("web", 2, "1")], ca=flag)
    summary = rt.run().summary
    ups = [e["atSeconds"] for e in summary["timeline"] if e["kind"] == SCALE_UP]
    assert ups[0] == first_s


def test_the_configuration_line_names_the_limits(tmp_path):
    """The comparison's one-line CA configuration (table and HTML report) says when the
    cluster is limited, so a cheap baseline that left pods pending is not read as a win."""
    from joiner.sim.htmlreport import ca_configuration

    rt = _scenario(tmp_path, [("web", 5, "1")], ca='    maxNodesTotal: 3\n    coresTotal: "2:40"')
    line = ca_configuration(rt.run().summary)
    assert line is not None
    assert line.endswith(", cluster limited to 3 nodes, 40 cores (at least 2).")
