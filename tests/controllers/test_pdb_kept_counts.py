"""The PodDisruptionBudget counts kept between calls (``pdb._tallies``) are the counts of
the cluster as it is after every kind of change they read: a pod bound, unbound,
terminating, deleted, added, or written anew under its uid; a node NotReady, Ready,
deleted or added; the budgets replaced. Each step compares the kept answer with a fresh
walk (``pdb._count``) and with ``disruptions_allowed``, which counts one budget alone."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from joiner.api.objects import PodDisruptionBudget, Source
from joiner.api.requirements import Requirements
from joiner.controllers.termination import pdb
from joiner.state.cluster import ClusterState, Node, Pod
from joiner.testing.builders import make_pod_template

_NODES = ("a", "b", "c")
_APPS = ("web", "db")


def _budget(app: str, **fields: object) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        "shop",
        f"shop-{app}",
        Requirements.from_labels({"app": app}),
        Source("f", "PodDisruptionBudget", f"shop-{app}"),
        **fields,
    )


def _state() -> ClusterState:
    state = ClusterState()
    for name in _NODES:
        state.nodes[name] = Node(name, f"claim-{name}", {}, (), {}, {}, 0.0, ready=True)
    state.pdbs = [_budget("web", min_available=2), _budget("db", max_unavailable=1)]
    return state


def _template(app: str):
    return replace(make_pod_template(), labels=(("app", app),), namespace="shop")


_TEMPLATES = {app: _template(app) for app in _APPS}

_STEP = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(_APPS), st.sampled_from((None, *_NODES))),
    st.tuples(st.just("bind"), st.integers(0, 30), st.sampled_from((None, *_NODES))),
    st.tuples(st.just("terminate"), st.integers(0, 30), st.none()),
    st.tuples(st.just("delete"), st.integers(0, 30), st.none()),
    st.tuples(st.just("rewrite"), st.integers(0, 30), st.sampled_from(_APPS)),
    st.tuples(st.just("ready"), st.sampled_from(_NODES), st.booleans()),
    st.tuples(st.just("node-gone"), st.sampled_from(_NODES), st.none()),
    st.tuples(st.just("node-back"), st.sampled_from(_NODES), st.none()),
    st.tuples(st.just("budgets"), st.integers(1, 3), st.none()),
)


def _apply(state: ClusterState, step: tuple[str, object, object], made: list[str]) -> None:
    kind, a, b = step
    if kind == "add":
        uid = f"p{len(made)}"
        assert isinstance(a, str)
        node = b if isinstance(b, str) else None
        state.pods[uid] = Pod(uid, "shop", uid, _TEMPLATES[a], f"shop/{a}", 0.0, len(made), node)
        made.append(uid)
        return
    if kind in ("bind", "terminate", "delete", "rewrite"):
        assert isinstance(a, int)
        if not made:
            return
        pod = state.pods[made[a % len(made)]]
        if kind == "bind":
            pod.node_name = b if isinstance(b, str) else None
        elif kind == "terminate":
            pod.terminating_until_s = 30.0
        elif kind == "delete":
            pod.deleted_at_s = 1.0
        else:  # the same uid written anew with another template: the registry's ``changes``
            assert isinstance(b, str)
            state.pods[pod.uid] = replace(pod, template=_TEMPLATES[b])
        return
    if kind == "budgets":  # new budget objects: the selection of budgets is another
        assert isinstance(a, int)
        state.pdbs = [_budget("web", min_available=a), _budget("db", max_unavailable=a)]
        return
    assert isinstance(a, str)
    if kind == "ready":
        state.nodes[a].ready = bool(b)
    elif kind == "node-gone":
        state.nodes[a].deleted_at_s = 1.0
    else:  # "node-back": deleted from the registry and added again
        state.nodes.pop(a, None)
        state.nodes[a] = Node(a, f"claim-{a}", {}, (), {}, {}, 0.0, ready=True)


@settings(max_examples=150, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=40))
def test_kept_counts_follow_every_change(steps):
    state = _state()
    made: list[str] = []
    for step in steps:
        _apply(state, step, made)
        selection = pdb._selection(state.pdbs)
        kept = pdb._tallies(state, selection)
        assert kept == pdb._count(state, selection), step
        assert pdb.allowed_by_budget(state) == [
            pdb.disruptions_allowed(state, b) for b in state.pdbs
        ], step


def test_a_second_state_is_counted_on_its_own():
    """Two states with the same change key (nothing changed between the calls) are not
    confused: the kept answer is the state's own."""
    one, two = _state(), _state()
    web = _TEMPLATES["web"]
    for i in range(3):
        one.pods[f"w{i}"] = Pod(f"w{i}", "shop", f"w{i}", web, "shop/web", 0.0, i, "a")
    two.pdbs = one.pdbs
    assert pdb.allowed_by_budget(one)[0] == 1
    assert pdb.allowed_by_budget(two)[0] == -2
    assert pdb.allowed_by_budget(one)[0] == 1
