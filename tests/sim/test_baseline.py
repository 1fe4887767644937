"""The Cluster Autoscaler baseline, end to end on small scenarios, and its expanders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from joiner.api.errors import InputError
from joiner.cloudprovider.events import REBALANCE_RECOMMENDATION, CloudEvent
from joiner.operator.compare import run_policies
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.baseline.autoscaler import (
    PROVISION_TIMEOUT,
    SCALE_DOWN,
    ClusterAutoscaler,
    Option,
)
from joiner.sim.baseline.groups import NodeGroup
from joiner.sim.baseline.limits import ClusterLimits
from joiner.sim.baseline.scaledown import utilisation
from joiner.sim.baseline.settings import AutoscalerSettings, NodeGroupSpec
from joiner.sim.scenario import load_scenario
from tests.manifests import ec2nodeclass

#: The EC2NodeClass the scenarios' tagged subnets and security groups match (t: "1").
NODECLASS = ec2nodeclass('{tags: {t: "1"}}', role="r")

NODEPOOL = (
    """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [CAPACITY]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [TYPES]}
---
"""
    + NODECLASS
)

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: w, image: w, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


def _write(
    tmp_path: Path,
    *,
    workloads: str,
    extra_spec: str = "",
    duration: str = "1h",
    capacity: str = "spot, on-demand",
    types: str = "c5.xlarge, m5.xlarge",
    app: str = APP,
) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "np.yaml").write_text(
        NODEPOOL.replace("CAPACITY", capacity).replace("TYPES", types)
    )
    (tmp_path / "app.yaml").write_text(app)
    (tmp_path / "scenario.yaml").write_text(
        f"""\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {{name: t}}
spec:
  duration: {duration}
  seed: 3
  manifests: [np.yaml, app.yaml]
  cloud:
    subnets:
      - {{id: s-a, zone: us-east-1a, tags: {{t: "1"}}}}
      - {{id: s-b, zone: us-east-1b, tags: {{t: "1"}}}}
    securityGroups: [{{id: sg, tags: {{t: "1"}}}}]
  workloads:
{workloads}
{extra_spec}"""
    )
    return tmp_path / "scenario.yaml"


def _ca(path: Path) -> SimulationRuntime:
    return SimulationRuntime(load_scenario(path), policy="cluster-autoscaler")


def test_groups_are_derived_per_shape_as_spot_and_on_demand_mixed_instances_groups(tmp_path):
    """AWS's CA guidance: per shape (same vCPU and memory), a Spot and an on-demand
    MixedInstancesPolicy group; the priority expander prefers Spot."""
    rt = _ca(
        _write(
            tmp_path,
            workloads="    - {deployment: default/web, replicas: 1}",
            types="c5.xlarge, c5a.xlarge, c6i.xlarge, m5.xlarge",
        )
    )
    assert rt.autoscaler is not None
    groups = {g.name: g for g in rt.autoscaler.groups}
    assert sorted(groups) == [
        "general-amd64-4cpu-16gib-on-demand",
        "general-amd64-4cpu-16gib-spot",
        "general-amd64-4cpu-8gib-on-demand",
        "general-amd64-4cpu-8gib-spot",
    ]
    c = groups["general-amd64-4cpu-8gib-spot"]
    assert set(c.spec.instance_types) == {"c5.xlarge", "c5a.xlarge", "c6i.xlarge"}
    assert c.spec.capacity_types == ("spot",)
    assert groups["general-amd64-4cpu-8gib-on-demand"].spec.capacity_types == ("on-demand",)
    params = rt.autoscaler.describe()["parameters"]
    assert params["expander"] == "priority,least-waste"
    assert params["priorities"] == {"50": [".*-spot"], "10": [".*"]}
    assert params["balanceSimilarNodeGroups"] is True
    summary = rt.run().summary
    assert {n["capacityType"] for n in summary["nodes"]} == {"spot"}


def test_groups_are_derived_per_type_and_capacity_type(tmp_path):
    rt = _ca(
        _write(
            tmp_path,
            workloads="    - {deployment: default/web, replicas: 1}",
            extra_spec="  clusterAutoscaler: {derivedGroups: instance-type}\n",
        )
    )
    assert rt.autoscaler is not None
    groups = {g.name: g for g in rt.autoscaler.groups}
    assert sorted(groups) == [
        "general-c5.xlarge-od",
        "general-c5.xlarge-spot",
        "general-m5.xlarge-od",
        "general-m5.xlarge-spot",
    ]
    assert groups["general-c5.xlarge-spot"].spec.capacity_types == ("spot",)
    assert groups["general-m5.xlarge-od"].spec.capacity_types == ("on-demand",)
    assert groups["general-c5.xlarge-spot"].zones == ("us-east-1a", "us-east-1b")


def test_scale_up_waits_for_the_scan_the_asg_and_the_boot(tmp_path):
    rt = _ca(_write(tmp_path, workloads="    - {deployment: default/web, replicas: 6}"))
    summary = rt.run().summary
    assert summary["pods"]["pending"] == 0
    web = [p for p in rt.state.pods.values() if not p.daemon]
    for p in web:
        wait = p.bound_at_s - p.created_at_s
        # ASG delay 60-120 s plus boot 25-45 s, after a scan at most 10 s away.
        assert 85.0 <= wait <= 10.0 + 120.0 + 45.0
    for n in summary["nodes"]:
        assert n["launchedAtSeconds"] >= 60.0
    assert summary["policy"]["name"] == "cluster-autoscaler"
    assert summary["policy"]["stats"]["scaleUps"] >= 1
    # 6 one-CPU pods fit two 4-vCPU nodes (3 each after overhead).
    assert len(summary["nodes"]) == 2
    assert summary["pods"]["scaleUpLatencySeconds"]["pods"] == 6


def test_parameters_are_all_listed(tmp_path):
    rt = _ca(_write(tmp_path, workloads="    - {deployment: default/web, replicas: 1}"))
    params = rt.run().summary["policy"]["parameters"]
    for key in (
        "scanIntervalSeconds",
        "expander",
        "maxNodeProvisionTimeSeconds",
        "initialNodeGroupBackoffSeconds",
        "maxNodeGroupBackoffSeconds",
        "scaleDownUtilizationThreshold",
        "scaleDownUnneededTimeSeconds",
        "scaleDownDelayAfterAddSeconds",
        "scaleDownDelayAfterDeleteSeconds",
        "maxScaleDownParallelism",
        "maxDrainParallelism",
        "maxNodesTotal",
        "coresTotal",
        "memoryTotal",
        "asgLaunchDelaySeconds",
        "capacityRebalance",
        "nodeGroups",
    ):
        assert key in params
    assert params["expander"] == "priority,least-waste"
    assert params["scanIntervalSeconds"] == 10.0
    assert len(params["nodeGroups"]) == 4


def test_scale_down_after_unneeded_time_and_delay_after_add(tmp_path):
    trace = tmp_path / "tr.csv"
    # 8 replicas for 5 minutes, then 1.
    trace.write_text("minute,value\n" + "".join(f"{m},{8 if m < 5 else 1}\n" for m in range(60)))
    rt = _ca(
        _write(
            tmp_path,
            workloads=f"    - deployment: default/web\n      trace: {{file: {trace}, "
            "targetPerReplica: 1, min: 1, max: 8}",
        )
    )
    summary = rt.run().summary
    downs = [e for e in summary["timeline"] if e["kind"] == SCALE_DOWN]
    assert downs, "the emptied nodes must go"
    last_up = max(e["atSeconds"] for e in summary["timeline"] if e["kind"] == "scaleUp")
    for e in downs:
        # Not within 10 minutes of a scale-up, and only after 10 minutes unneeded.
        assert e["atSeconds"] >= last_up + 600.0
        assert e["atSeconds"] >= 300.0 + 600.0
    live = [n for n in summary["nodes"] if n["deletedAtSeconds"] is None]
    assert len(live) == 1  # the one replica's node stays
    assert summary["pods"]["lost"] == 0


def test_pdb_blocks_scale_down_of_a_non_empty_node(tmp_path):
    app = APP + (
        "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        "metadata: {name: web, namespace: default}\n"
        "spec: {minAvailable: 100%, selector: {matchLabels: {app: web}}}\n"
    )
    # Two replicas on two nodes would each be under 50 % and fit together, but no eviction
    # is allowed.
    rt = _ca(
        _write(
            tmp_path,
            workloads="    - {deployment: default/web, replicas: 2}",
            app=app.replace('cpu: "1"', "cpu: 1500m"),
            types="c5.xlarge",
            capacity="on-demand",
            duration="2h",
        )
    )
    summary = rt.run().summary
    assert not [e for e in summary["timeline"] if e["kind"] == SCALE_DOWN]


def test_launch_failures_time_out_and_back_the_group_off(tmp_path):
    rt = _ca(
        _write(
            tmp_path,
            workloads="    - {deployment: default/web, replicas: 2}",
            capacity="on-demand",
            types="c5.xlarge",
        )
    )
    rt.cloud.add_launch_failures(None, 100, 3600.0)
    summary = rt.run().summary
    timeouts = [e for e in summary["timeline"] if e["kind"] == PROVISION_TIMEOUT]
    assert timeouts
    # The first scale-up at t=0 times out 15 minutes later (scan ticks every 10 s).
    assert 900.0 <= timeouts[0]["atSeconds"] <= 910.0
    (group,) = rt.autoscaler.groups
    assert group.last_failure_s is not None and group.backoff_s >= 300.0
    # Backed off for 5 minutes: the next timeout is at least 5 + 15 minutes later.
    if len(timeouts) > 1:
        assert timeouts[1]["atSeconds"] - timeouts[0]["atSeconds"] >= 1200.0
    assert summary["pods"]["pending"] == 2


def test_spot_reclaims_are_replaced_by_the_asg(tmp_path):
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 6}",
        capacity="spot",
        duration="4h",
    )
    rt = SimulationRuntime(_with_rate(load_scenario(path), 1.0), policy="cluster-autoscaler")
    summary = rt.run().summary
    stats = summary["policy"]["stats"]
    assert summary["interruptions"]["count"] >= 1
    assert stats["asgReplacements"] >= 1
    # The ASG replaces an instance only once it is gone (drained and terminated, or
    # reclaimed), never before, unlike Joiner's make-before-break.
    launched = [e for e in summary["timeline"] if e["kind"] == "replacementLaunched"]
    assert launched
    gone = {n["name"]: n["deletedAtSeconds"] for n in summary["nodes"]}
    for e in launched:
        assert gone[e["node"]] is not None and gone[e["node"]] <= e["atSeconds"], e
    # Desired capacity kept: at the end as many spot nodes run as before the reclaims.
    live = [n for n in summary["nodes"] if n["deletedAtSeconds"] is None]
    assert len(live) >= 2
    assert summary["pods"]["pending"] == 0


def _with_rate(scenario: Any, rate: float) -> Any:
    from dataclasses import replace

    from joiner.cloudprovider.simulated.provider import HazardModel, RateOverride

    return replace(scenario, hazard=HazardModel(overrides=(RateOverride(rate),)))


def test_capacity_rebalance_launches_the_replacement_before_the_drain(tmp_path):
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 2}",
        capacity="spot",
        types="c5.xlarge",
        extra_spec="  clusterAutoscaler: {capacityRebalance: true}\n",
    )
    rt = _ca(path)
    rt.clock.at(900.0, lambda: _rebalance_first(rt), label="test")
    summary = rt.run().summary
    drains = [e for e in summary["timeline"] if e["detail"] == "capacity rebalance"]
    assert drains, "the at-risk node is drained once its replacement is Ready"
    launched_after = [n for n in summary["nodes"] if n["launchedAtSeconds"] > 900.0]
    assert len(launched_after) == 1
    assert launched_after[0]["readyAtSeconds"] <= drains[0]["atSeconds"]
    assert summary["pods"]["lost"] == 0 and summary["pods"]["pending"] == 0


def _rebalance_first(rt: SimulationRuntime) -> None:
    claim = next(c for c in rt.state.live_nodeclaims() if c.instance is not None)
    assert claim.instance is not None
    rt.cloud.inject(
        CloudEvent(REBALANCE_RECOMMENDATION, (claim.instance.instance_id,), "rebalance-test")
    )


def _options(rt: SimulationRuntime) -> list[Option]:
    assert rt.autoscaler is not None
    by = {g.name: g for g in rt.autoscaler.groups}
    return [
        Option(by["general-c5.xlarge-spot"], 2, ("a", "b", "c", "d", "e")),
        Option(by["general-m5.xlarge-od"], 1, ("a", "b", "c")),
    ]


def _expander_runtime(tmp_path: Path, extra: str) -> SimulationRuntime:
    # Single-type groups, so each option names a type and a capacity type.
    if "clusterAutoscaler:" not in extra:
        extra = "  clusterAutoscaler: {expander: least-waste}\n"
    if "clusterAutoscaler: {" in extra:
        extra = extra.replace(
            "clusterAutoscaler: {", "clusterAutoscaler: {derivedGroups: instance-type, "
        )
    else:
        extra = extra.replace(
            "clusterAutoscaler:\n", "clusterAutoscaler:\n    derivedGroups: instance-type\n"
        )
    rt = _ca(
        _write(tmp_path, workloads="    - {deployment: default/web, replicas: 5}", extra_spec=extra)
    )
    for uid in "abcde":
        from joiner.state.cluster import Pod
        from joiner.testing.builders import make_pod_template

        rt.state.pods[uid] = Pod(uid, "default", uid, make_pod_template(1000, 2 << 30), "x", 0, 0)
    return rt


def test_most_pods_expander(tmp_path):
    rt = _expander_runtime(tmp_path, "  clusterAutoscaler: {expander: most-pods}\n")
    assert rt.autoscaler._expand(_options(rt)).group.name == "general-c5.xlarge-spot"


def test_least_waste_expander_prefers_less_idle_cpu(tmp_path):
    rt = _expander_runtime(tmp_path, "")
    # 5 pods of 1 CPU on two c5.xlarge (2 x ~3.9 CPU) idle ~2.8 CPU; 3 on one m5.xlarge
    # idle ~0.9 CPU: the m5 option wastes less.
    assert rt.autoscaler._expand(_options(rt)).group.name == "general-m5.xlarge-od"


def test_priority_expander_follows_the_highest_matching_pattern(tmp_path):
    rt = _expander_runtime(
        tmp_path,
        "  clusterAutoscaler:\n    expander: priority,least-waste\n"
        "    priorities: {'50': ['.*-spot'], '10': ['.*']}\n",
    )
    assert rt.autoscaler._expand(_options(rt)).group.name == "general-c5.xlarge-spot"


def test_random_expander_is_seeded(tmp_path):
    picks = []
    for i in range(2):
        rt = _expander_runtime(tmp_path / str(i), "  clusterAutoscaler: {expander: random}\n")
        picks.append([rt.autoscaler._expand(_options(rt)).group.name for _ in range(8)])
    assert picks[0] == picks[1]
    assert len(set(picks[0])) == 2


def test_mixed_instances_policy_on_demand_base_and_percentage():
    spec = NodeGroupSpec("g", "p", ("m5.large",), on_demand_base=2, on_demand_percentage=25)
    assert [spec.on_demand_wanted(n) for n in (1, 2, 3, 6, 10)] == [1, 2, 3, 3, 4]
    assert spec.capacity_types == ("spot", "on-demand")
    assert NodeGroupSpec("s", "p", ("m5.large",), on_demand_percentage=0).capacity_types == (
        "spot",
    )


def test_declared_node_groups_replace_derived_ones(tmp_path):
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 4}",
        extra_spec="  clusterAutoscaler:\n    nodeGroups:\n"
        "      - {name: mixed, nodePool: general, instanceTypes: [m5.xlarge, c5.xlarge],\n"
        "         onDemandBaseCapacity: 1, onDemandPercentageAboveBaseCapacity: 0}\n",
    )
    rt = _ca(path)
    summary = rt.run().summary
    (group,) = rt.autoscaler.groups
    assert group.template.name == "m5.xlarge"
    cts = sorted(n["capacityType"] for n in summary["nodes"])
    assert cts[0] == "on-demand" and cts.count("on-demand") == 1
    assert all(n["name"].startswith("mixed-") for n in summary["nodes"])


@pytest.mark.parametrize("strategy", ["lowest-price", "capacity-optimized"])
def test_node_group_spot_allocation_strategy_reaches_the_fleet(tmp_path, strategy):
    """An ASG launches with its InstancesDistribution's strategy, not Karpenter's."""
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 4}",
        extra_spec="  clusterAutoscaler:\n    nodeGroups:\n"
        "      - {name: s, nodePool: general, instanceTypes: [m5.xlarge, c5.xlarge],\n"
        f"         onDemandPercentageAboveBaseCapacity: 0, spotAllocationStrategy: {strategy}}}\n",
    )
    summary = _ca(path).run().summary
    assert summary["nodes"]
    assert {n["allocation"]["strategy"] for n in summary["nodes"]} == {strategy}
    (group,) = summary["policy"]["parameters"]["nodeGroups"]
    assert group["spotAllocationStrategy"] == strategy
    assert group["onDemandAllocationStrategy"] == "prioritized"


def test_derived_node_groups_use_price_capacity_optimized_for_spot(tmp_path):
    path = _write(tmp_path, workloads="    - {deployment: default/web, replicas: 4}")
    summary = _ca(path).run().summary
    spot = [n for n in summary["nodes"] if n["capacityType"] == "spot"]
    assert spot
    assert {n["allocation"]["strategy"] for n in spot} == {"price-capacity-optimized"}


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ("  clusterAutoscaler: {expander: cheapest}\n", "expander", "unknown expander"),
        (
            "  clusterAutoscaler:\n    nodeGroups: [{name: g, nodePool: nope, "
            "instanceTypes: [m5.large]}]\n",
            "nodeGroups[0].nodePool",
            "is not in the manifests",
        ),
        (
            "  clusterAutoscaler:\n    nodeGroups: [{name: g, nodePool: general, "
            "instanceTypes: [m5.huge]}]\n",
            "nodeGroups[0].instanceTypes[0]",
            "not offered",
        ),
        (
            "  clusterAutoscaler:\n    nodeGroups: [{name: g, nodePool: general, "
            "instanceTypes: [m5.large], spotAllocationStrategy: diversified}]\n",
            "nodeGroups[0].spotAllocationStrategy",
            "price-capacity-optimized",
        ),
        (
            "  clusterAutoscaler: {asgLaunchDelay: {min: 3m, max: 1m}}\n",
            "asgLaunchDelay",
            "min exceeds max",
        ),
        ("  compare: [joiner, karpenter]\n", "compare", ""),
        ("  compare: [joiner, joiner]\n", "compare", "listed once"),
    ],
)
def test_bad_baseline_settings_name_the_field(tmp_path, extra, field, message):
    path = _write(
        tmp_path, workloads="    - {deployment: default/web, replicas: 1}", extra_spec=extra
    )
    with pytest.raises(InputError) as exc:
        load_scenario(path)
    assert field in str(exc.value)
    assert message in str(exc.value)


def test_compare_runs_both_on_the_same_seed(tmp_path):
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 6}",
        extra_spec="  compare: [joiner, cluster-autoscaler]\n",
    )
    result = run_policies(load_scenario(path))
    s = result.summary
    assert list(s["policies"]) == ["joiner", "cluster-autoscaler"]
    assert s["policy"]["name"] == "joiner"
    assert s["nodes"] == s["policies"]["joiner"]["nodes"]
    joiner, ca = s["policies"]["joiner"], s["policies"]["cluster-autoscaler"]
    assert joiner["pods"]["pendingSeconds"]["p95"] < ca["pods"]["pendingSeconds"]["p95"]
    assert joiner["pods"]["scheduled"] == ca["pods"]["scheduled"] == 6


def test_settings_default_matches_cluster_autoscaler_flags():
    s = AutoscalerSettings()
    assert (s.scan_interval_s, s.max_node_provision_time_s) == (10.0, 900.0)
    assert (s.scale_down_unneeded_time_s, s.scale_down_delay_after_add_s) == (600.0, 600.0)
    # CA 1.36: --scale-down-delay-after-delete defaults to 0s (config/flags/flags.go).
    assert s.delay_after_delete_s == 0.0
    assert s.scale_down_utilization_threshold == 0.5
    assert (s.initial_node_group_backoff_s, s.max_node_group_backoff_s) == (300.0, 1800.0)
    assert (s.max_scale_down_parallelism, s.max_drain_parallelism) == (10, 1)
    assert s.blocking_system_pod_disruption_timeout_s == 3600.0
    assert s.limits == ClusterLimits(0, (0, 320000), (0, 6400000))


def test_group_template_is_the_first_override(tmp_path):
    rt = _ca(_write(tmp_path, workloads="    - {deployment: default/web, replicas: 1}"))
    g: NodeGroup = rt.autoscaler.groups[0]
    pool = g.template_pool()
    assert pool.name == g.name
    assert pool.requirements.get_or_exists("node.kubernetes.io/instance-type").values == {
        g.template.name
    }
    assert g.template_labels()["node.kubernetes.io/instance-type"] == g.template.name


@pytest.mark.parametrize("hazard", [False, True])
def test_skipped_scans_change_nothing(tmp_path, monkeypatch, hazard):
    """A scan is skipped only when nothing changed and no timer is due: the run is the same
    as one that scans every 10 s."""
    trace = tmp_path / "tr.csv"
    tmp_path.mkdir(parents=True, exist_ok=True)
    trace.write_text(
        "minute,value\n" + "".join(f"{m},{[2, 9, 3, 12, 1][(m // 25) % 5]}\n" for m in range(240))
    )
    path = _write(
        tmp_path,
        workloads=f"    - deployment: default/web\n      trace: {{file: {trace}, "
        "targetPerReplica: 1, min: 1, max: 12}",
        duration="4h",
    )
    sc = load_scenario(path)
    if hazard:
        sc = _with_rate(sc, 0.5)
    skipping = SimulationRuntime(sc, policy="cluster-autoscaler").run().summary
    from joiner.sim.baseline.autoscaler import ClusterAutoscaler

    tick = ClusterAutoscaler._tick

    def every_time(self: ClusterAutoscaler) -> None:
        self._seen = None
        tick(self)

    monkeypatch.setattr(ClusterAutoscaler, "_tick", every_time)
    scanning = SimulationRuntime(sc, policy="cluster-autoscaler").run().summary
    assert skipping["policy"]["stats"]["scansSkipped"] > 0
    assert scanning["policy"]["stats"]["scansSkipped"] == 0
    for key in ("nodes", "cost", "pods", "timeline", "interruptions"):
        assert skipping[key] == scanning[key]


def test_the_first_policy_listed_is_the_top_level(tmp_path):
    """``spec.compare``'s first entry is the summary's top level (issue 22), Joiner or not."""
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 2}",
        extra_spec="  compare: [cluster-autoscaler, joiner]\n",
        duration="20m",
    )
    s = run_policies(load_scenario(path)).summary
    assert list(s["policies"]) == ["cluster-autoscaler", "joiner"]
    assert s["policy"]["name"] == "cluster-autoscaler"
    assert s["nodes"] == s["policies"]["cluster-autoscaler"]["nodes"]


def test_declared_group_with_a_type_outside_the_node_class_zones_is_bad_input(tmp_path):
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 1}",
        extra_spec="  clusterAutoscaler:\n    nodeGroups:\n"
        "      - {name: g, nodePool: general, instanceTypes: [m5.large], zones: [us-east-1a]}\n",
    )
    sc = load_scenario(path)
    # Every zone is fine here; a group whose types have no offering of its capacity type
    # in its zones is refused when the runtime is built, naming the group.
    from dataclasses import replace

    bad = replace(
        sc,
        autoscaler=replace(
            sc.autoscaler,
            node_groups=(NodeGroupSpec("g", "general", ("m5.large",), zones=("us-east-1f",)),),
        ),
    )
    with pytest.raises(InputError, match="node group 'g'"):
        SimulationRuntime(bad, policy="cluster-autoscaler")


FILLER = """\
---
apiVersion: batch/v1
kind: Job
metadata: {name: filler, namespace: default}
spec:
  parallelism: 1
  completions: 1
  template:
    metadata: {labels: {app: filler}}
    spec:
      restartPolicy: Never
      containers: [{name: f, image: f, resources: {requests: {cpu: "3", memory: 1Gi}}}]
"""


def _two_half_empty_nodes(
    tmp_path: Path, app: str, scale_down_disabled: bool = False
) -> dict[str, Any]:
    """Two c5.xlarge nodes with one 1-CPU web pod each (26 %, both fit on one), so CA
    removes one unless its drain rules block it: web-0 and a 3-CPU Job pod need two nodes
    at first; the Job ends at 10 min, and the second web replica (minute 14) lands on the
    emptied node (LeastAllocated)."""
    ns = "kube-system" if "namespace: kube-system" in app else "default"
    trace = tmp_path / "web.csv"
    tmp_path.mkdir(parents=True, exist_ok=True)
    trace.write_text("minute,value\n" + "".join(f"{m},{1 if m < 14 else 2}\n" for m in range(90)))
    rt = _ca(
        _write(
            tmp_path,
            workloads=f"    - deployment: {ns}/web\n      trace: {{file: {trace}, "
            "targetPerReplica: 1, min: 1, max: 2}\n"
            "    - {deployment: default/filler, runFor: 10m}",
            app=app + FILLER,
            types="c5.xlarge",
            capacity="on-demand",
            duration="90m",
        )
    )
    if scale_down_disabled:
        np = tmp_path / "np.yaml"
        np.write_text(
            np.read_text().replace(
                "  template:\n    spec:",
                "  template:\n    metadata:\n      annotations: "
                '{cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"}\n    spec:',
            )
        )
        rt = _ca(tmp_path / "scenario.yaml")
    return rt.run().summary


def _pod_spec_extra(app: str, annotations: str = "", volumes: str = "") -> str:
    out = app
    if annotations:
        out = out.replace(
            "metadata: {labels: {app: web}}",
            f"metadata: {{labels: {{app: web}}, annotations: {{{annotations}}}}}",
        )
    if volumes:
        out = out.replace(
            "    spec:\n      containers:",
            f"    spec:\n      volumes: {volumes}\n      containers:",
        )
    return out


@pytest.mark.parametrize(
    ("app", "removed"),
    [
        (APP, True),
        (APP.replace("namespace: default", "namespace: kube-system"), False),
        (_pod_spec_extra(APP, volumes="[{name: scratch, emptyDir: {}}]"), False),
        (_pod_spec_extra(APP, volumes="[{name: shm, emptyDir: {medium: Memory}}]"), True),
        (
            _pod_spec_extra(
                APP,
                annotations="cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes: scratch",
                volumes="[{name: scratch, emptyDir: {}}]",
            ),
            True,
        ),
        (
            _pod_spec_extra(
                APP,
                annotations='cluster-autoscaler.kubernetes.io/safe-to-evict: "true"',
                volumes="[{name: logs, hostPath: {path: /var/log}}]",
            ),
            True,
        ),
        (
            _pod_spec_extra(
                APP, annotations='cluster-autoscaler.kubernetes.io/safe-to-evict: "false"'
            ),
            False,
        ),
    ],
    ids=[
        "plain",
        "kube-system-without-pdb",
        "emptydir",
        "emptydir-in-memory",
        "local-volume-declared-safe",
        "safe-to-evict-true",
        "safe-to-evict-false",
    ],
)
def test_cluster_autoscaler_drain_rules_block_scale_down(tmp_path, app, removed):
    summary = _two_half_empty_nodes(tmp_path, app)
    # A kube-system pod blocks only for --blocking-system-pod-distruption-timeout (1h)
    # after its creation (CA 1.36 ``drainability/rules/system``); the run is longer.
    downs = [e for e in summary["timeline"] if e["kind"] == SCALE_DOWN and e["atSeconds"] < 3600]
    assert bool(downs) is removed, downs
    assert summary["pods"]["lost"] == 0


def test_scale_down_disabled_annotation_keeps_the_node(tmp_path):
    summary = _two_half_empty_nodes(tmp_path, APP, scale_down_disabled=True)
    assert not [e for e in summary["timeline"] if e["kind"] == SCALE_DOWN]
    assert len(summary["nodes"]) == 2


def test_balance_similar_node_groups_splits_a_scale_up_across_zones(tmp_path):
    groups = (
        "  clusterAutoscaler:\n    balanceSimilarNodeGroups: BAL\n    nodeGroups:\n"
        "      - {name: web-a, nodePool: general, instanceTypes: [c5.xlarge],"
        " zones: [us-east-1a]}\n"
        "      - {name: web-b, nodePool: general, instanceTypes: [c5.xlarge],"
        " zones: [us-east-1b]}\n"
    )
    counts = {}
    for bal in ("true", "false"):
        rt = _ca(
            _write(
                tmp_path / bal,
                workloads="    - {deployment: default/web, replicas: 12}",
                extra_spec=groups.replace("BAL", bal),
                types="c5.xlarge",
                capacity="on-demand",
            )
        )
        summary = rt.run().summary
        zones = [n["zone"] for n in summary["nodes"]]
        counts[bal] = (zones.count("us-east-1a"), zones.count("us-east-1b"))
    assert counts["true"] == (2, 2)
    assert sorted(counts["false"]) == [0, 4]


def test_a_node_group_whose_type_its_nodepool_excludes_estimates_nothing(tmp_path):
    # Group "outside" declares r5.xlarge, which NodePool general's instance-type requirement
    # excludes: its template pool has no type to launch, so its estimate is empty and
    # "inside" takes the pods. All four pending pods share one template, the case where the
    # estimator keys groups by pods per node (``_per_node`` of the template's first row).
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 4}",
        extra_spec="  clusterAutoscaler:\n    nodeGroups:\n"
        "      - {name: outside, nodePool: general, instanceTypes: [r5.xlarge]}\n"
        "      - {name: inside, nodePool: general, instanceTypes: [m5.xlarge]}\n",
    )
    summary = _ca(path).run().summary
    assert summary["nodes"]
    assert all(n["name"].startswith("inside-") for n in summary["nodes"])


def test_hints_age_on_a_scan_without_pending_pods(tmp_path):
    # CA drops old hints on every loop's FilterOutSchedulable, with or without unschedulable
    # pods: two scans with nothing pending forget every hint.
    rt = _ca(_write(tmp_path, workloads="    - {deployment: default/web, replicas: 1}"))
    assert rt.autoscaler is not None
    ff = rt.autoscaler._first_fit
    assert rt.state.pending_pods() == []
    ff.hints["gone"] = "n0"
    rt.autoscaler._scale_up(0.0)
    assert ff.hints == {} and ff.old_hints == {"gone": "n0"}
    rt.autoscaler._scale_up(10.0)
    assert ff.hint("gone") is None


RUNNING = """\
apiVersion: v1
kind: Node
metadata:
  name: busy
  labels:
    karpenter.sh/nodepool: general
    karpenter.sh/capacity-type: spot
    node.kubernetes.io/instance-type: c5.xlarge
    topology.kubernetes.io/zone: us-east-1a
spec: {providerID: "aws:///us-east-1a/i-busy"}
---
apiVersion: v1
kind: Node
metadata:
  name: idle
  labels:
    karpenter.sh/nodepool: general
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: m5.xlarge
    topology.kubernetes.io/zone: us-east-1b
spec: {providerID: "aws:///us-east-1b/i-idle"}
---
apiVersion: v1
kind: Node
metadata:
  name: group-node
  labels:
    eks.amazonaws.com/nodegroup: system
    node.kubernetes.io/instance-type: m5.large
    topology.kubernetes.io/zone: us-east-1a
status:
  capacity: {cpu: "2", memory: 8Gi, pods: "29"}
  allocatable: {cpu: 1930m, memory: 7Gi, pods: "29"}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default, labels: {app: web}}
spec:
  nodeName: busy
  containers: [{name: w, image: w, resources: {requests: {cpu: "3", memory: 1Gi}}}]
status: {phase: Running}
"""


def test_running_nodepool_nodes_join_their_groups_and_an_idle_one_is_scaled_down(tmp_path):
    # A cluster running before the simulation (an imported history's start): the busy spot
    # node and the idle on-demand node are members of the groups that could have launched
    # them, so CA counts them and removes the idle one; the node group's node is static.
    path = _write(
        tmp_path, workloads="    - deployment: default/web\n      replicas: 1", duration="30m"
    )
    (tmp_path / "running.yaml").write_text(RUNNING)
    text = path.read_text().replace("[np.yaml, app.yaml]", "[np.yaml, app.yaml, running.yaml]")
    path.write_text(text)
    rt = _ca(path)
    summary = rt.run().summary
    ca = rt.autoscaler
    assert ca is not None
    downs = [e["node"] for e in summary["timeline"] if e["kind"] == SCALE_DOWN]
    assert downs == ["idle"]
    # The busy node stays a member of the spot group (the idle one left its group).
    members = {m: g.name for g in ca.groups for m in g.members}
    assert members == {"busy": "general-amd64-4cpu-8gib-spot"}
    assert rt.state.nodes["group-node"].nodeclaim is None
    assert not rt.state.nodes["group-node"].deleting
    # The one replica stayed where it ran: no scale-up for it.
    assert summary["policy"]["stats"]["scaleUps"] == 0


def test_kept_utilisation_equals_the_plain_one_as_pods_come_and_go(tmp_path, monkeypatch):
    # Pods scale 8 -> 1 -> 6 -> 2, so nodes fill, empty and refill between scans: every
    # utilisation a scan reads (kept or recomputed) is the one computed afresh.
    trace = tmp_path / "tr.csv"
    values = [8] * 5 + [1] * 20 + [6] * 10 + [2] * 25
    trace.write_text("minute,value\n" + "".join(f"{m},{v}\n" for m, v in enumerate(values)))
    rt = _ca(
        _write(
            tmp_path,
            workloads=f"    - deployment: default/web\n      trace: {{file: {trace}, "
            "targetPerReplica: 1, min: 1, max: 8}",
        )
    )
    kept = ClusterAutoscaler._utilisation
    reads: list[tuple[bool, float]] = []

    def checked(self: ClusterAutoscaler, node: Any, pods: list[Any]) -> float:
        before = self._util.get(node.name)
        value = kept(self, node, pods)
        assert value == utilisation(node, list(pods))
        reads.append((before is not None and self._util[node.name] is before, value))
        return value

    monkeypatch.setattr(ClusterAutoscaler, "_utilisation", checked)
    rt.run()
    assert any(hit for hit, _ in reads), "an unchanged node's utilisation is kept"
    assert any(not hit for hit, _ in reads)
    assert len({v for _, v in reads}) > 2, "utilisations change as pods come and go"
