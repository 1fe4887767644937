"""``ClusterState.ready_nodes``, ``live_nodes`` and ``live_nodeclaims`` are reused until a
Node or NodeClaim changes or is added, and every such change shows in the next answer; a
``PodTemplate`` computes its hash once, never carries it into a copy or another process."""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import subprocess
import sys
from dataclasses import replace

import pytest

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


def _pickled(state: ClusterState) -> ClusterState:
    return pickle.loads(pickle.dumps(state))


@pytest.mark.parametrize("copier", [copy.deepcopy, _pickled], ids=["deepcopy", "pickle"])
def test_a_copy_whose_registry_log_is_shorter_sees_new_nodes(copier):
    # The copy's log is rebuilt with one entry per key; a live-name cache that kept the
    # original's (longer) position would miss the nodes added after the copy.
    state = ClusterState()
    state.nodes["a"] = _node("a")
    state.nodes["a"] = _node("a")  # written twice: the log is longer than the dict
    state.nodeclaims["x"] = _claim("x")
    state.nodeclaims["x"] = _claim("x")
    state.pods["p"] = Pod("p", "default", "p", make_pod_template(100), "x", 0.0, 0)
    assert _names(state.ready_nodes()) == ["a"] and _names(state.live_nodeclaims()) == ["x"]
    assert [p.uid for p in state.pending_pods()] == ["p"]
    copied = copier(state)
    copied.nodes["b"] = _node("b")
    copied.nodeclaims["y"] = _claim("y")
    copied.pods["q"] = Pod("q", "default", "q", make_pod_template(100), "x", 0.0, 1)
    assert _names(copied.ready_nodes()) == ["a", "b"]
    assert _names(copied.live_nodes()) == ["a", "b"]
    assert _names(copied.live_nodeclaims()) == ["x", "y"]
    assert [p.uid for p in copied.pending_pods()] == ["p", "q"]
    copied.pods["p"].node_name = "a"
    assert [p.uid for p in copied.pods_on("a")] == ["p"]
    # The original is untouched by all of it.
    assert _names(state.ready_nodes()) == ["a"] and _names(state.live_nodeclaims()) == ["x"]
    assert [p.uid for p in state.pending_pods()] == ["p"]


def test_an_object_brought_back_from_deletion_is_live_again():
    state = ClusterState()
    for name in ("a", "b"):
        state.nodes[name] = _node(name)
        state.nodeclaims[name] = _claim(name)
    for i in range(3):
        state.pods[f"p{i}"] = Pod(f"p{i}", "default", f"p{i}", make_pod_template(100), "x", 0.0, i)
    state.nodes["a"].deleted_at_s = 3.0
    state.nodeclaims["a"].deleted_at_s = 3.0
    state.pods["p1"].deleted_at_s = 3.0
    assert _names(state.ready_nodes()) == ["b"] and _names(state.live_nodes()) == ["b"]
    assert _names(state.live_nodeclaims()) == ["b"]
    assert [p.uid for p in state.pending_pods()] == ["p0", "p2"]
    state.nodes["a"].deleted_at_s = None
    state.nodeclaims["a"].deleted_at_s = None
    state.pods["p1"].deleted_at_s = None
    assert _names(state.ready_nodes()) == ["a", "b"] and _names(state.live_nodes()) == ["a", "b"]
    assert _names(state.live_nodeclaims()) == ["a", "b"]
    assert [p.uid for p in state.pending_pods()] == ["p0", "p1", "p2"]
    assert [p.uid for p in state.live_pods()] == ["p0", "p1", "p2"]


def test_a_pickled_template_hashes_right_in_another_process():
    # Requirements cache their hash, which comes from string hashing and so differs
    # between processes; a pickle must not carry it (a sweep worker would then miss every
    # cache keyed on the template's node selector).
    t = make_pod_template(500, node_selector={"team": "web", "tier": "front"})
    hash(t), hash(t.node_selector)  # the caches are filled before pickling
    blob = pickle.dumps(t)
    code = (
        "import pickle, sys\n"
        "from joiner.api.requirements import Requirements\n"
        "t = pickle.loads(sys.stdin.buffer.read())\n"
        "fresh = Requirements.from_labels({'team': 'web', 'tier': 'front'})\n"
        "print(hash(t.node_selector) == hash(fresh), {fresh: 1}.get(t.node_selector))\n"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=blob,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        assert out.stdout.decode().split() == ["True", "1"]


def test_pods_removed_or_written_anew_under_their_uid_are_seen():
    def pod(uid: str, order: int) -> Pod:
        return Pod(uid, "default", uid, make_pod_template(100), "x", 0.0, order)

    state = ClusterState()
    for i in range(3):
        state.pods[f"p{i}"] = pod(f"p{i}", i)
    assert [p.uid for p in state.pending_pods()] == ["p0", "p1", "p2"]
    # One out and one in: the dict's length is unchanged.
    del state.pods["p1"]
    state.pods["p3"] = pod("p3", 3)
    assert [p.uid for p in state.pending_pods()] == ["p0", "p2", "p3"]
    # A uid written anew (a new object, now bound): the old object is gone from every answer.
    state.pods["p0"] = replacement = pod("p0", 0)
    replacement.node_name = "n"
    assert [p.uid for p in state.pending_pods()] == ["p2", "p3"]
    assert state.pods_on("n") == [replacement]
    assert [p.uid for p in state.live_pods()] == ["p0", "p2", "p3"]
    state.pods.pop("p2")
    assert [p.uid for p in state.live_pods()] == ["p0", "p3"]


def test_dicts_assigned_to_a_state_are_followed():
    state = ClusterState()
    state.nodes["a"] = _node("a")
    state.nodeclaims["x"] = _claim("x")
    state.pods["p"] = Pod("p", "default", "p", make_pod_template(100), "x", 0.0, 0)
    assert _names(state.ready_nodes()) == ["a"] and _names(state.live_nodeclaims()) == ["x"]
    assert [p.uid for p in state.pending_pods()] == ["p"]
    # Plain dicts assigned over the registries (a shorter log than the one read so far).
    state.nodes = {"b": _node("b"), "c": _node("c")}
    state.nodeclaims = {"y": _claim("y")}
    state.pods = {"q": Pod("q", "default", "q", make_pod_template(100), "x", 0.0, 1)}
    assert isinstance(state.pods, Registry) and isinstance(state.nodes, Registry)
    assert _names(state.ready_nodes()) == ["b", "c"] and _names(state.live_nodeclaims()) == ["y"]
    assert [p.uid for p in state.pending_pods()] == ["q"]
    state.nodes["d"] = _node("d")
    assert _names(state.live_nodes()) == ["b", "c", "d"]


def test_reassigned_pods_with_a_log_as_long_are_seen():
    # The breaker's case: nothing changed a pod between the last answer and the assignment,
    # and the new registry's log is as long as the old one's.
    state = ClusterState()
    state.pods["a"] = Pod("a", "default", "a", make_pod_template(100), "x", 0.0, 0)
    state.pending_pods()
    state.pods = copy.deepcopy(state.pods)
    assert state.pending_pods()[0] is state.pods["a"]
    p1, p2 = (Pod(u, "default", u, make_pod_template(100), "x", 0.0, i) for i, u in enumerate("pq"))
    state.live_pods()
    state.pods = {"p": p1, "q": p2}
    assert list(state.live_pods()) == [p1, p2]


@pytest.mark.parametrize(
    "copier",
    [copy.copy, lambda s: dataclasses.replace(s, generation=1)],
    ids=["copy", "replace"],
)
def test_a_shallow_copy_keeps_answers_of_its_own(copier):
    state = ClusterState()
    state.nodes["a"] = _node("a")
    state.nodeclaims["x"] = _claim("x")
    assert _names(state.live_nodes()) == ["a"] and _names(state.ready_nodes()) == ["a"]
    assert _names(state.live_nodeclaims()) == ["x"]
    other = copier(state)  # shares the dicts, not the caches
    state.nodes["b"] = _node("b")
    state.nodeclaims["y"] = _claim("y")
    for s in (state, other):
        assert _names(s.live_nodes()) == ["a", "b"] and _names(s.ready_nodes()) == ["a", "b"]
        assert _names(s.live_nodeclaims()) == ["x", "y"]


def test_an_empty_registry_pops_with_key_error():
    with pytest.raises(KeyError):
        Registry().popitem()


def test_a_pod_s_order_or_daemon_changed_after_it_was_made_is_followed():
    state = ClusterState()
    a = state.pods["a"] = Pod("a", "default", "a", make_pod_template(100), "x", 0.0, 0)
    b = state.pods["b"] = Pod("b", "default", "b", make_pod_template(100), "x", 0.0, 1)
    assert list(state.live_pods()) == [a, b]
    a.order = 5
    assert list(state.live_pods()) == [b, a] and state.pending_pods() == [b, a]
    b.daemon = True
    assert state.pending_pods() == [a]
    a.order = 5  # the same value: nothing to read again
    assert list(state.live_pods()) == [b, a]


def _without_dict_reads(cls):
    """A subclass whose ``__dict__`` cannot be read: reading it makes CPython build a dict
    for the instance, which slows every later attribute read of it (a 3% slowdown of a
    simulation once went unnoticed that way)."""

    class Guarded(cls):
        @property
        def __dict__(self):  # type: ignore[override]
            raise AssertionError(f"{cls.__name__}.__dict__ was read")

    return Guarded


def test_tracked_fields_are_followed_without_reading_the_instance_dict():
    pod = _without_dict_reads(Pod)("p", "default", "p", make_pod_template(100), "x", 0.0, 0)
    node = _without_dict_reads(Node)("n", None, {}, (), CPU4, dict(CPU4), 0.0, ready=True)
    claim = _without_dict_reads(NodeClaim)("c", "default", "default", Requirements(), {}, (), 0.0)
    state = ClusterState()
    state.pods["p"], state.nodes["n"], state.nodeclaims["c"] = pod, node, claim
    for obj in (pod, node, claim):
        obj.deleted_at_s = 1.0
        obj.deleted_at_s = None
    pod.order, pod.daemon, pod.node_name = 3, False, "n"
    node.ready = False
    assert state.pods_on("n") == [pod] and state.live_nodes() == [node]
    assert state.live_nodeclaims() == [claim] and state.ready_nodes() == []
