"""``ClusterState.ready_nodes``, ``live_nodes`` and ``live_nodeclaims`` are reused until a
Node or NodeClaim changes or is added, and every such change shows in the next answer; a
``PodTemplate`` computes its hash once, never carries it into a copy or another process."""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace

from joiner.api import quantity
from joiner.api.objects import Taint
from joiner.api.requirements import Requirements
from joiner.state.cluster import ClusterState, Node, NodeClaim, Pod
from joiner.state.registry import Registry
from joiner.testing.builders import make_pod_template

CPU4 = {quantity.CPU: 4000, quantity.MEMORY: 16 * quantity.GIB, quantity.PODS: 110}


def _node(name: str, *, ready: bool = True) -> Node:
    return Node(name, None, {}, (), CPU4, dict(CPU4), 0.0, ready=ready)


def _claim(name: str) -> NodeClaim:
    return NodeClaim(name, "default", "default", Requirements(), {}, (), 0.0)


def _names(nodes: list[Node] | list[NodeClaim]) -> list[str]:
    return [n.name for n in nodes]


def test_node_answers_follow_every_node_change():
    state = ClusterState()
    for name in ("c", "a", "b"):
        state.nodes[name] = _node(name)
    assert _names(state.ready_nodes()) == ["a", "b", "c"]
    assert _names(state.live_nodes()) == ["c", "a", "b"]  # the order they were added

    # A returned list is the caller's own: changing it changes no later answer.
    state.ready_nodes().clear()
    assert _names(state.ready_nodes()) == ["a", "b", "c"]

    # A pod's binding changes no node answer (and the answer is still right).
    state.pods["p"] = Pod("p", "default", "p", make_pod_template(100), "x", 0.0, 0)
    state.pods["p"].node_name = "a"
    assert _names(state.ready_nodes()) == ["a", "b", "c"]

    state.nodes["a"].ready = False
    assert _names(state.ready_nodes()) == ["b", "c"]
    state.nodes["b"].deleting = True
    assert _names(state.ready_nodes()) == ["c"]
    assert _names(state.live_nodes()) == ["c", "a", "b"]
    state.nodes["c"].deleted_at_s = 5.0
    assert state.ready_nodes() == []
    assert _names(state.live_nodes()) == ["a", "b"]
    state.nodes["d"] = _node("d")
    assert _names(state.ready_nodes()) == ["d"]

    # A node gone and back under the same name (a Node object made anew: the dict keeps
    # its size) is seen, as the API feed does when a deleted node's name returns.
    state.nodes["c"] = _node("c")
    assert _names(state.ready_nodes()) == ["c", "d"]
    assert _names(state.live_nodes()) == ["c", "a", "b", "d"]
    state.nodes["c"].taints = (Taint("k", "v", "NoSchedule"),)
    assert state.ready_nodes()[0].taints == (Taint("k", "v", "NoSchedule"),)


def test_live_nodeclaims_follow_every_claim_change():
    state = ClusterState()
    for name in ("y", "x"):
        state.nodeclaims[name] = _claim(name)
    assert _names(state.live_nodeclaims()) == ["x", "y"]
    state.nodeclaims["x"].deleted_at_s = 3.0
    assert _names(state.live_nodeclaims()) == ["y"]
    state.nodeclaims["w"] = _claim("w")
    assert _names(state.live_nodeclaims()) == ["w", "y"]
    state.nodeclaims["x"] = _claim("x")  # made anew under a name already there
    assert _names(state.live_nodeclaims()) == ["w", "x", "y"]


def test_two_states_keep_their_own_answers():
    one, two = ClusterState(), ClusterState()
    one.nodes["a"] = _node("a")
    two.nodes["b"] = _node("b")
    assert _names(one.ready_nodes()) == ["a"]
    assert _names(two.ready_nodes()) == ["b"]
    two.nodes["b"].ready = False
    assert _names(one.ready_nodes()) == ["a"]
    assert two.ready_nodes() == []


def test_a_template_hash_is_kept_but_never_copied():
    t = make_pod_template(500)
    h = hash(t)
    assert hash(t) == h and hash(make_pod_template(500)) == h
    changed = replace(t, requests={**t.requests, quantity.CPU: 600})
    assert changed != t
    assert hash(changed) == hash(make_pod_template(600))
    assert hash(changed) != h
    for other in (pickle.loads(pickle.dumps(t)), copy.copy(t), copy.deepcopy(t)):
        assert other == t
        assert other._hash == 0  # recomputed where it is used, never carried
        assert hash(other) == h


def test_removed_and_rewritten_entries_are_seen():
    # Tests and crash simulations remove entries; the API feed writes a new object under a
    # known name. Neither changes a node's own fields, so only the registry's log shows it.
    state = ClusterState()
    for name in ("a", "b"):
        state.nodes[name] = _node(name)
    state.nodeclaims["x"] = _claim("x")
    assert _names(state.ready_nodes()) == ["a", "b"]
    assert _names(state.live_nodeclaims()) == ["x"]
    del state.nodes["a"]
    assert _names(state.ready_nodes()) == ["b"]
    assert state.nodeclaims.pop("x").name == "x"
    assert state.live_nodeclaims() == []
    assert state.nodeclaims.pop("x", None) is None
    replaced = _node("b")
    state.nodes["b"] = replaced
    assert state.ready_nodes()[0] is replaced
    state.nodes["a"] = _node("a")  # back, now added last
    assert _names(state.live_nodes()) == ["b", "a"]
    state.nodes.update({"c": _node("c")})
    state.nodes.setdefault("d", _node("d"))
    assert _names(state.ready_nodes()) == ["a", "b", "c", "d"]
    state.nodes.clear()
    assert state.ready_nodes() == [] and state.live_nodes() == []


def test_a_state_built_from_plain_dicts_and_pickled_keeps_working():
    state = ClusterState(nodes={"a": _node("a")}, nodeclaims={"x": _claim("x")})
    assert isinstance(state.nodes, Registry) and isinstance(state.nodeclaims, Registry)
    assert _names(state.ready_nodes()) == ["a"]
    copied = pickle.loads(pickle.dumps(state))
    assert _names(copied.ready_nodes()) == ["a"]
    copied.nodes["b"] = _node("b")
    assert _names(copied.ready_nodes()) == ["a", "b"]
    assert _names(state.ready_nodes()) == ["a"]
    assert _names(copy.deepcopy(state).live_nodeclaims()) == ["x"]
