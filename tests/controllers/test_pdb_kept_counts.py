"""The PodDisruptionBudget counts kept between calls (``pdb._tallies``) are the counts of
the cluster as it is after every kind of change they read: a pod bound, unbound,
terminating, deleted, added, or written anew under its uid, or its template replaced; a
node NotReady, Ready, deleted, or taken out and added again; the budgets replaced; the
change journal cleared. Each step compares the kept answer with a fresh
walk (a new ``pdb._Kept``) and with ``disruptions_allowed``, which counts one budget alone."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from joiner.api.objects import PodDisruptionBudget, Source
from joiner.api.requirements import Requirements
from joiner.controllers.termination import pdb
from joiner.state import cluster
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
    st.tuples(st.just("add-late"), st.sampled_from(_APPS), st.sampled_from((None, *_NODES))),
    st.tuples(st.just("bind"), st.integers(0, 30), st.sampled_from((None, *_NODES))),
    st.tuples(st.just("terminate"), st.integers(0, 30), st.none()),
    st.tuples(st.just("delete"), st.integers(0, 30), st.none()),
    st.tuples(st.just("rewrite"), st.integers(0, 30), st.sampled_from(_APPS)),
    st.tuples(st.just("retemplate"), st.integers(0, 30), st.sampled_from(_APPS)),
    st.tuples(st.just("ready"), st.sampled_from(_NODES), st.booleans()),
    st.tuples(st.just("node-gone"), st.sampled_from(_NODES), st.none()),
    st.tuples(st.just("node-back"), st.sampled_from(_NODES), st.none()),
    st.tuples(st.just("budgets"), st.integers(1, 3), st.none()),
)


def _apply(state: ClusterState, step: tuple[str, object, object], made: list[str]) -> None:
    kind, a, b = step
    if kind in ("add", "add-late"):
        uid = f"p{len(made)}"
        assert isinstance(a, str)
        node = b if isinstance(b, str) else None
        pod = Pod(uid, "shop", uid, _TEMPLATES[a], f"shop/{a}", 0.0, len(made), node)
        if kind == "add-late":  # made before the counts were last asked for, added after
            _ask(state)
        state.pods[uid] = pod
        made.append(uid)
    elif kind == "budgets":  # new budget objects: the selection of budgets is another
        assert isinstance(a, int)
        state.pdbs = [_budget("web", min_available=a), _budget("db", max_unavailable=a)]
    elif kind in ("ready", "node-gone", "node-back"):
        assert isinstance(a, str)
        _apply_node(state, kind, a, bool(b))
    elif made:
        assert isinstance(a, int)
        _apply_pod(state, kind, state.pods[made[a % len(made)]], b)


def _apply_pod(state: ClusterState, kind: str, pod: Pod, b: object) -> None:
    if kind == "bind":
        pod.node_name = b if isinstance(b, str) else None
    elif kind == "terminate":
        pod.terminating_until_s = 30.0
    elif kind == "delete":
        pod.deleted_at_s = 1.0
    elif kind == "retemplate":  # in place (controller mode's feed replaces a template)
        assert isinstance(b, str)
        pod.template = _TEMPLATES[b]
    else:  # "rewrite": the same uid written anew with another template (registry ``changes``)
        assert isinstance(b, str)
        state.pods[pod.uid] = replace(pod, template=_TEMPLATES[b])


def _apply_node(state: ClusterState, kind: str, name: str, ready: bool) -> None:
    if kind == "ready":
        state.nodes[name].ready = ready
    elif kind == "node-gone":
        state.nodes[name].deleted_at_s = 1.0
    else:  # "node-back": taken out of the registry and added again, made before the counts
        # were last asked for
        state.nodes.pop(name, None)
        node = Node(name, f"claim-{name}", {}, (), {}, {}, 0.0, ready=True)
        _ask(state)
        state.nodes[name] = node


def _ask(state: ClusterState) -> None:
    pdb._tallies(state, pdb._selection(state.pdbs))


@settings(max_examples=150, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=40), st.sampled_from((cluster._JOURNAL_MAX, 3)))
def test_kept_counts_follow_every_change(steps, journal_max):
    """``journal_max`` 3: the change journal is cleared every few changes."""
    kept_max = cluster._JOURNAL_MAX
    cluster._JOURNAL_MAX = journal_max
    try:
        _follow(steps)
    finally:
        cluster._JOURNAL_MAX = kept_max


def _follow(steps: list[tuple[str, object, object]]) -> None:
    state = _state()
    made: list[str] = []
    for step in steps:
        _apply(state, step, made)
        selection = pdb._selection(state.pdbs)
        kept = pdb._tallies(state, selection)
        assert kept == pdb._Kept(state, selection).counts, step
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
