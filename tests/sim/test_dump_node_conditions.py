"""The simulation's start state from a dump's node conditions (tests/fixtures/eks-cluster):
a NotReady node stays NotReady and holds no new pods; a Ready node whose initialization the
dump shows pending is initialized at the start; a NotReady one waits."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

DUMP_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "eks-cluster"
NODE = "ip-192-168-78-103.ec2.internal"
#: Edits of the Node's text: its initialized label gone; its Ready condition False.
UNINITIALIZED = ("      karpenter.sh/initialized: 'true'\n", "")
NOT_READY = (
    "      status: 'True'\n      reason: KubeletReady",
    "      status: 'False'\n      reason: KubeletNotReady",
)


def _run(tmp_path: Path, *edits: tuple[str, str]):
    """Simulate the dump for 10 minutes with ``edits`` applied to the Node's text."""
    text = (DUMP_DIR / "dump.yaml").read_text()
    start = text.index(f"    name: {NODE}")
    end = text.index("kind: NodeClaim", start)
    node = text[start:end]
    for old, new in edits:
        assert node.count(old) == 1, old
        node = node.replace(old, new)
    (tmp_path / "dump.yaml").write_text(text[:start] + node + text[end:])
    (tmp_path / "scenario.yaml").write_text((DUMP_DIR / "scenario.yaml").read_text())
    sc = load_scenario(tmp_path / "scenario.yaml")
    return SimulationRuntime(replace(sc, duration_s=600.0)).run().state


def test_a_ready_node_the_dump_shows_uninitialized_is_initialized_at_the_start(tmp_path):
    state = _run(tmp_path, UNINITIALIZED)
    claim = state.nodeclaims[NODE]
    assert claim.initialized_at_s == 0.0
    assert state.nodes[NODE].labels["karpenter.sh/initialized"] == "true"


def test_a_not_ready_node_stays_not_ready_and_uninitialized_waits(tmp_path):
    state = _run(tmp_path, NOT_READY, UNINITIALIZED)
    node = state.nodes[NODE]
    assert not node.ready and state.nodeclaims[NODE].initialized_at_s is None
    assert ("node.kubernetes.io/not-ready", "NoSchedule") in {
        (t.key, t.effect) for t in node.taints
    }
    bound_after_start = [
        p.name for p in state.pods_on(NODE) if p.bound_at_s is not None and p.bound_at_s > 0
    ]
    assert bound_after_start == []


def test_consolidate_after_counts_from_the_dumps_last_pod_event(tmp_path):
    """The NodeClaims' lastPodEventTime is 2026-11-02T09:14:07Z: with startTime 45m53s later,
    run time 0 is that long after each node's last pod event; with the default startTime
    (before the dump) it counts from the start, as for a node without one."""
    sc = load_scenario(DUMP_DIR / "scenario.yaml")
    later = replace(sc, duration_s=1.0, start_time=datetime(2026, 11, 2, 10, 0, tzinfo=UTC))
    state = SimulationRuntime(later).run().state
    assert state.nodes[NODE].last_pod_event_s == -2753.0
    state = SimulationRuntime(replace(sc, duration_s=1.0)).run().state
    assert state.nodes[NODE].last_pod_event_s == 0.0
