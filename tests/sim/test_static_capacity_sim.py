"""Static NodePools in the simulation (Karpenter's ``StaticCapacity`` gate): the pool keeps
``replicas`` nodes for the whole run, launched at the start and replaced when they expire;
lowering ``replicas`` deletes the surplus; with the gate off the pool follows the pods."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from joiner.cloudprovider.types import InsufficientCapacityError
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.sim.test_baseline import _write


def _runtime(tmp_path: Path, *, gate: bool, duration: str = "35m") -> SimulationRuntime:
    gates = f"  settings:\n    featureGates: {{staticCapacity: {str(gate).lower()}}}\n"
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 1}",
        extra_spec=gates,
        duration=duration,
        capacity="on-demand",
    )
    pool = (tmp_path / "np.yaml").read_text()
    pool = pool.replace(
        "spec:\n  template:\n    spec:\n",
        "spec:\n  replicas: 2\n  template:\n    spec:\n      expireAfter: 10m\n",
        1,
    )
    (tmp_path / "np.yaml").write_text(pool)
    return SimulationRuntime(load_scenario(path))


def _live(rt: SimulationRuntime) -> list[str]:
    return sorted(c.name for c in rt.state.live_nodeclaims() if c.nodepool == "general")


def test_the_pool_keeps_its_replicas_through_expiry(tmp_path):
    rt = _runtime(tmp_path, gate=True)
    summary: dict[str, Any] = rt.run().summary
    # Two at the start, replaced as each expires after 10 minutes (three rounds in 35m).
    assert len(summary["nodes"]) >= 6
    assert len(_live(rt)) == 2
    # Replacements launch as the old nodes expire (their deletion kicks the reconcile).
    assert sorted(n["launchedAtSeconds"] for n in summary["nodes"])[:4] == [0, 0, 600, 600]
    assert summary["pods"]["pending"] == 0 and summary["pods"]["lost"] == 0
    stats = summary["policy"]["stats"]
    assert stats["staticNodeClaimsCreated"] == len(summary["nodes"])
    assert stats["staticNodeClaimsDeleted"] == 0
    assert not any("spec.replicas" in w for w in summary["warnings"])


def test_lowering_replicas_deletes_the_surplus(tmp_path):
    rt = _runtime(tmp_path, gate=True, duration="5m")
    rt.run()
    assert len(_live(rt)) == 2
    assert rt.static is not None
    rt.state.nodepools["general"] = replace(rt.state.nodepools["general"], replicas=1)
    created, deleted = rt.static.reconcile()
    assert created == [] and len(deleted) == 1
    # The empty node goes first (the web pod's node stays).
    web = next(p for p in rt.state.pods.values() if p.node_name is not None and not p.daemon)
    assert web.node_name not in deleted


def test_gate_off_the_pool_follows_the_pods_with_a_warning(tmp_path):
    rt = _runtime(tmp_path, gate=False, duration="5m")
    summary = rt.run().summary
    assert len(summary["nodes"]) == 1
    assert any("StaticCapacity feature gate is off" in w for w in summary["warnings"])


def test_failing_launches_are_retried_at_the_next_poll_not_at_once(tmp_path, monkeypatch):
    """A launch that fails deletes its NodeClaim, which kicks the reconcile: from within the
    reconcile that kick waits for the next minute's poll (no retry loop at one instant)."""
    rt = _runtime(tmp_path, gate=True, duration="5m")
    attempts: list[float] = []

    def refuse(_request: object) -> None:
        attempts.append(rt.clock.now())
        raise InsufficientCapacityError("no capacity")

    monkeypatch.setattr(rt.cloud, "create", refuse)
    rt.run()
    assert rt.static is not None and rt.static.created == 0
    # Two NodeClaims tried at the start and at each minute's poll (the pods' own
    # provisioning tries none: the pool is static).
    assert sorted(set(attempts)) == [0.0, 60.0, 120.0, 180.0, 240.0, 300.0]
    assert len(attempts) == 12
