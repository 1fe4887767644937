"""Trace-driven Deployments and scenario cross-checks, run through the whole simulation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.clock import SimClock
from joiner.sim.scenario import load_scenario
from joiner.sim.workloads import DeploymentController, PodFactory, Trace, load_trace
from joiner.state.cluster import ClusterState
from joiner.testing.builders import make_pod_template

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"


def _scenario(tmp_path: Path, workloads: str, duration: str = "10m") -> Path:
    d = tmp_path / "sc"
    shutil.copytree(SEED, d)
    text = (d / "scenario.yaml").read_text()
    head = text[: text.index("  workloads:")]
    (d / "scenario.yaml").write_text(
        head.replace("duration: 2h", f"duration: {duration}") + "  workloads:\n" + workloads
    )
    return d / "scenario.yaml"


def test_trace_scales_replicas_each_minute(tmp_path):
    trace = tmp_path / "sc-trace.csv"
    trace.write_text("minute,value\n0,100\n1,100\n2,600\n3,600\n4,100\n")
    path = _scenario(
        tmp_path,
        f"    - deployment: default/web\n      trace: {{file: {trace}, targetPerReplica: 100,"
        " min: 1, max: 5}\n",
    )
    rt = SimulationRuntime(load_scenario(path))
    summary = rt.run().summary
    web = [p for p in rt.state.pods.values() if p.owner == "default/web"]
    # 1 replica, then 5 (6 clamped to max) at minute 2, back to 1 at minute 4.
    assert len(web) == 5
    assert sum(1 for p in web if p.deleted_at_s is None) == 1
    deleted = sorted(p.deleted_at_s for p in web if p.deleted_at_s is not None)
    assert deleted == [240.0] * 4
    assert summary["pods"]["lost"] == 0 and summary["pods"]["pending"] == 0
    # The scale-up needed new nodes: 5 pods of 1 vCPU need two c5.xlarge.
    assert len(summary["nodes"]) == 2


def test_trace_rejects_bad_rows(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("minute,value\n0,1\n2,5\n")
    with pytest.raises(InputError, match="line 3: minute 2 out of sequence"):
        load_trace(bad, target_per_replica=1, min_replicas=0, max_replicas=10)
    bad.write_text("time,value\n0,1\n")
    with pytest.raises(InputError, match="header must be 'minute,value'"):
        load_trace(bad, target_per_replica=1, min_replicas=0, max_replicas=10)


def test_unschedulable_pods_stay_pending_with_reason(tmp_path):
    path = _scenario(tmp_path, "    - deployment: default/web\n      replicas: 2\n")
    dep = path.parent / "deployment.yaml"
    dep.write_text(dep.read_text().replace('cpu: "1"', 'cpu: "64"'))
    summary = SimulationRuntime(load_scenario(path)).run().summary
    assert summary["nodes"] == []
    assert summary["pods"]["pending"] == 2
    (reason,) = summary["pods"]["unschedulableReasons"]
    assert reason["pods"] == 2 and "has room for cpu=64000m" in reason["reason"]
    # Censored waits: still pending at the end, counted with the wait so far.
    assert summary["pods"]["pendingSeconds"]["max"] == 600.0


def test_a_deployment_counts_its_own_pods_created_before_and_after_it():
    """The Deployment model's live count (``replace``, ``set_replicas``) follows its own pods
    through creation, deletion and termination, whether they existed before it first looked
    (a pod of the same owner made earlier) or were made after; other owners' pods never
    count."""
    state, clock = ClusterState(), SimClock()
    pods = PodFactory(state, clock)
    template = make_pod_template(500, 1 << 30)
    early = pods.create("shop/web", template)  # before the controller first looks
    pods.create("shop/other", template)
    web = DeploymentController("shop/web", template, state, clock, pods, replicas=3)
    web.start(3600.0)
    mine = [p for p in state.pods.values() if p.owner == "shop/web"]
    assert len(mine) == 3 and early in mine
    # A deleted pod is replaced; a terminating one is replaced at once (a ReplicaSet does
    # not count it); at the desired count, nothing more.
    early.deleted_at_s = 1.0
    state.pod_event(early, 1.0)
    assert web.replace(early) is not None
    second = mine[1]
    second.terminating_until_s = 30.0
    assert web.replace(second) is not None
    assert web.replace(second) is None
    live = [p for p in state.live_pods() if p.owner == "shop/web" and p.terminating_until_s is None]
    assert len(live) == 3
    web.set_replicas(1)
    assert sum(1 for p in state.live_pods() if p.owner == "shop/web") == 2  # 1 + terminating
    assert sum(1 for p in state.live_pods() if p.owner == "shop/other") == 1


def test_a_deployment_desired_follows_its_trace_value_by_value():
    """``desired`` keeps the replicas of the last value read while the value repeats: at
    every minute, in order or not, and under a scheduled minimum, it is the trace's own
    replicas (``Trace.replicas_at``) floored by the minimum."""
    values = (0.0, 2.5, 2.5, 2.5, 7.0, 7.0, 100.0, 100.0, 0.4, 0.4, 3.0)
    trace = Trace(values, target_per_replica=1.0, min_replicas=1, max_replicas=8, file="t.csv")
    state, clock = ClusterState(), SimClock()
    web = DeploymentController(
        "shop/web",
        make_pod_template(500, 1 << 30),
        state,
        clock,
        PodFactory(state, clock),
        trace=trace,
    )
    minutes = [*range(len(values) + 3), 5, 1, 6, 2, 2, 9, 0]
    assert [web.desired(m) for m in minutes] == [trace.replicas_at(m) for m in minutes]
    assert [web.desired(m) for m in range(4)] == [1, 3, 3, 3]
    web.set_floor(4)
    assert [web.desired(m) for m in minutes] == [max(trace.replicas_at(m), 4) for m in minutes]
