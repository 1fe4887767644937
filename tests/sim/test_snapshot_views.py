"""``state.snapshot.ready_nodes`` reuses a node's view while the node and its pods are
unchanged, and rebuilds it on every change that the view is made of."""

from __future__ import annotations

from dataclasses import replace

from joiner.api import quantity
from joiner.api.objects import Taint
from joiner.state.cluster import ClusterState, Node, Pod
from joiner.state.snapshot import ready_nodes
from joiner.testing.builders import make_pod_template

CPU4 = {quantity.CPU: 4000, quantity.MEMORY: 16 * quantity.GIB, quantity.PODS: 110}


def _state() -> ClusterState:
    state = ClusterState()
    for name in ("a", "b"):
        state.nodes[name] = Node(name, None, {"zone": "z1"}, (), CPU4, dict(CPU4), 0.0, ready=True)
    state.pods["p0"] = Pod("p0", "default", "p0", make_pod_template(1000), "x", 0.0, 0, "a", 0.0)
    return state


def _views(state: ClusterState) -> dict[str, tuple[object, ...]]:
    existing, bound = ready_nodes(state)
    return {e.name: (e, tuple(b for b in bound if b.node == e.name)) for e in existing}


def test_an_unchanged_node_keeps_its_view_and_a_changed_one_is_rebuilt():
    state = _state()
    first = _views(state)
    assert first["a"][0].available[quantity.CPU] == 3000
    assert _views(state)["a"][0] is first["a"][0]

    # A pod bound to b: b's view changes, a's stays the very same object.
    state.pods["p1"] = Pod("p1", "default", "p1", make_pod_template(500), "x", 1.0, 1, "b", 1.0)
    second = _views(state)
    assert second["a"][0] is first["a"][0]
    assert second["b"][0].available[quantity.CPU] == 3500
    assert len(second["b"][1]) == 1

    # Labels changed in place (the initialized label), taints and allocatable replaced.
    state.nodes["a"].labels["karpenter.sh/initialized"] = "true"
    assert ("karpenter.sh/initialized", "true") in _views(state)["a"][0].labels
    state.nodes["a"].taints = (Taint("k", "v", "NoSchedule"),)
    assert _views(state)["a"][0].taints == (Taint("k", "v", "NoSchedule"),)
    state.nodes["a"].allocatable[quantity.CPU] = 2000
    assert _views(state)["a"][0].available[quantity.CPU] == 1000

    # A pod deleted, and a pod whose template was replaced (same uid).
    state.pods["p0"].deleted_at_s = 5.0
    state.touch()
    assert _views(state)["a"][0].available[quantity.CPU] == 2000
    p1 = state.pods["p1"]
    p1.template = replace(p1.template, requests={quantity.CPU: 1500})
    assert _views(state)["b"][0].available[quantity.CPU] == 2500


def test_a_node_that_left_is_dropped_from_the_views():
    state = _state()
    _views(state)
    state.nodes["b"].deleted_at_s = 3.0
    assert set(_views(state)) == {"a"}
    assert set(state.node_views) == {"a"}
