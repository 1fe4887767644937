"""What the room pre-check keeps across passes (``room.shape_of``: a candidate set's pods'
own arithmetic) and per pass (which tainted nodes a toleration list leaves out): kept
answers are the answers, and a change to what they read is a new answer."""

from __future__ import annotations

import dataclasses

import pytest

from joiner.api.pods import tolerates_all
from joiner.api.requirements import Requirements
from joiner.controllers.disruption import room as room_module
from joiner.controllers.disruption.room import Room, shape_of
from tests.controllers.disruption_fixtures import dry_run, node, nodepool, pod
from tests.controllers.test_disruption_room import _sweep, tolerating


def _verdicts(candidates, room: Room) -> list[str | None]:
    out = []
    for c in candidates:
        why = room.hopeless(c)
        out.append(why.message() if why is not None else None)
    return out


@pytest.mark.parametrize("taints", [False, True])
def test_kept_shapes_give_the_verdicts_fresh_ones_give(tmp_path, taints):
    compared = 0
    for seed, ctx, candidates, _room in _sweep(tmp_path, taints):
        room_module._SHAPES.clear()
        fresh = _verdicts(candidates, Room(ctx))
        # Every shape is kept now; a new pass's Room reads them.
        kept = _verdicts(candidates, Room(ctx))
        assert kept == fresh, f"seed {seed}"
        compared += sum(1 for v in fresh if v is not None)
    assert compared > 5  # hopeless verdicts (with their needs) were compared


@pytest.mark.parametrize("taints", [False, True])
def test_fits_elsewhere_is_free_room_and_taints(tmp_path, taints):
    checked = 0
    for seed, _ctx, candidates, room in _sweep(tmp_path, taints):
        nodes = [e for e in room.snapshot if e.initialized]
        for c in candidates:
            own = [i for i, e in enumerate(nodes) if e.name == c.claim.name]
            for p in c.pods:
                t = p.template
                want = any(
                    i not in own
                    and all(e.available.get(r, 0) >= v for r, v in t.requests.items() if v > 0)
                    and tolerates_all(t.tolerations, e.taints) is None
                    for i, e in enumerate(nodes)
                )
                assert room._fits_elsewhere(t, own) == want, f"seed {seed}: {p.name}"
                checked += 1
    assert checked > 50


def test_a_shape_is_kept_until_its_pods_change(tmp_path):
    docs = [nodepool(), node("c", "m5.xlarge"), node("o", "m5.large")]
    docs += [pod("c-1", "c", cpu="1"), pod("c-2", "c", cpu="500m", app="db")]
    docs += [pod("o-1", "o", cpu="1")]
    run = dry_run(tmp_path, *docs)
    _ctx, candidates = run.controller.context(elapsed=True)
    (c,) = [x for x in candidates if x.name == "c"]
    first = shape_of([c])
    assert shape_of([c]) is first
    assert [n for _, n in first.alike] == [1, 1]

    # One pod fewer: a new shape, of the pods there are.
    fewer = dataclasses.replace(c, pods=c.pods[:1])
    again = shape_of([fewer])
    assert again is not first
    assert [n for _, n in again.alike] == [1]
    assert shape_of([c]) is not again

    # The same pods, one with another template: a new shape.
    other = dataclasses.replace(c.pods[1].template, requests={"cpu": 3000, "pods": 1})
    object.__setattr__(c.pods[1], "template", other)
    changed = shape_of([c])
    assert changed is not first
    assert changed.alike[1][0] is other
    assert ("cpu", 3000) in [kv for key, _ in changed.dominating for kv in key]
    assert ("cpu", 3000) not in [kv for key, _ in first.dominating for kv in key]


def test_a_split_follows_which_templates_fit_elsewhere(tmp_path):
    docs = [nodepool(), node("c", "m5.xlarge")]
    docs += [pod("c-1", "c", cpu="1"), tolerating(pod("c-2", "c", cpu="500m", app="db"))]
    run = dry_run(tmp_path, *docs)
    _ctx, candidates = run.controller.context(elapsed=True)
    (c,) = [x for x in candidates if x.name == "c"]
    shape = shape_of([c])
    both = shape.split((True, True))
    assert shape.split((True, True)) is both
    one = shape.split((False, True))
    assert one is not both
    assert both.rest_pods == 2 and one.rest_pods == 1
    cpu = {r: (forced, whole) for r, forced, whole, _, _ in one.per_resource}["cpu"]
    assert cpu == (1000, 1500)


def test_pod_label_keys_are_kept_while_the_templates_and_volumes_are(tmp_path):
    docs = [nodepool(), node("c", "m5.xlarge")]
    docs += [pod("c-1", "c", cpu="1"), pod("c-2", "c", cpu="500m", app="db")]
    run = dry_run(tmp_path, *docs)
    state = run.controller._state
    pods = list(state.live_pods())
    first = room_module._pod_keys(state, pods)
    assert room_module._pod_keys(state, pods) is first
    assert "example.com/disk" not in first

    # A template asking for a node label: a new answer with its key.
    picky = dataclasses.replace(
        pods[1].template,
        node_selector=Requirements.from_label_items((("example.com/disk", "ssd"),)),
    )
    object.__setattr__(pods[1], "template", picky)
    second = room_module._pod_keys(state, pods)
    assert "example.com/disk" in second

    # The same templates with volume terms now: a new answer with the volume's keys.
    zone = Requirements.from_label_items((("example.com/rack", "r1"),))
    state.volume_terms[pods[0].template] = (zone,)
    third = room_module._pod_keys(state, pods)
    assert third is not second
    assert "example.com/rack" in third
