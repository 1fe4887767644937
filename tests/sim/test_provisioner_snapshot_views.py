"""The provisioner's snapshot reuses a registered node's entry while the node, its pods and
the DaemonSets are unchanged, and equals a snapshot built from scratch after any change."""

from __future__ import annotations

from dataclasses import replace

from joiner.api import quantity
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from joiner.state.cluster import Pod
from tests.sim.step_scenario import CRONJOB, step_scenario


def _fresh(rt: SimulationRuntime):
    """The snapshot built without any reused entry."""
    p = rt.provisioner
    kept = p._views
    p._views = {}
    try:
        return p._full_snapshot()
    finally:
        p._views = kept


def test_snapshot_entries_are_reused_and_rebuilt_on_change(tmp_path):
    rt = SimulationRuntime(load_scenario(step_scenario(tmp_path, "cron.yaml", CRONJOB)))
    rt.run()
    p = rt.provisioner
    first = p._full_snapshot()
    assert first[0], "the scenario leaves registered nodes"
    again = p._full_snapshot()
    assert all(a is b for a, b in zip(first[0], again[0], strict=True))
    assert again == _fresh(rt)

    node = next(n for n in rt.state.nodes.values() if n.ready and n.deleted_at_s is None)
    # A pod bound to the node.
    some = next(iter(rt.state.pods.values()))
    rt.state.pods["extra"] = replace(
        some, uid="extra", name="extra", node_name=node.name, deleted_at_s=None, daemon=False
    )
    assert p._full_snapshot() == _fresh(rt)
    # Labels changed in place, taints and allocatable replaced, a pod's template replaced.
    node.labels["example.com/team"] = "a"
    assert p._full_snapshot() == _fresh(rt)
    node.allocatable = {**node.allocatable, quantity.CPU: 1}
    assert p._full_snapshot() == _fresh(rt)
    pod: Pod = rt.state.pods["extra"]
    pod.template = replace(pod.template, requests={quantity.CPU: 7})
    rt.state.touch()
    snap = p._full_snapshot()
    assert snap == _fresh(rt)
    (entry,) = [e for e in snap[0] if e.name == node.nodeclaim]
    assert entry.available[quantity.CPU] < 0  # 1m allocatable, 7m and more requested
