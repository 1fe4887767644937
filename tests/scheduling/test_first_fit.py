"""``SchedulingInput.first_fit``: Cluster Autoscaler's fit check (``FilterOutSchedulable``
through ``HintingSimulator``): a pod's hinted node first, else the first node that passes
the filters from a start that rotates past each find, preferences ignored."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from joiner.api import labels
from joiner.api.pods import PodAffinityTerm
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import ExistingNode, FirstFit, PodRequest, Scheduler, SchedulingInput
from joiner.testing.builders import make_existing_node, make_pod_template


def _node(name: str, cpu: int = 4000, zone: str = "us-east-1a") -> ExistingNode:
    return make_existing_node(name, zone, cpu_m=cpu)


def _solve(pods, nodes, first_fit: FirstFit | None):
    return Scheduler().solve(
        SchedulingInput(
            pods=tuple(pods), existing=tuple(nodes), mode="kube-scheduler", first_fit=first_fit
        )
    )


def _pod(uid: str, cpu: int = 1000, order: int = 0, **kw) -> PodRequest:
    return PodRequest(uid, make_pod_template(cpu, **kw), order)


def test_the_search_rotates_past_each_find():
    ff = FirstFit()
    nodes = [_node("n0"), _node("n1"), _node("n2")]
    placed = [_solve([_pod(f"p{i}")], nodes, ff).existing_placements[0][1] for i in range(4)]
    # Each solve starts just after the previous find (the nodes all still have room), where
    # LeastAllocated would pick the emptiest node: all equal here, so by name, n0 each time.
    assert placed == ["n0", "n1", "n2", "n0"]
    assert _solve([_pod("q")], nodes, None).existing_placements == (("q", "n0"),)


def test_a_hint_is_tried_first_and_does_not_move_the_start():
    ff = FirstFit()
    nodes = [_node("n0"), _node("n1"), _node("n2")]
    ff.hints["old"] = "n2"
    ff.last_index = 1
    result = _solve([_pod("old", order=0), _pod("new", order=1)], nodes, ff)
    assert result.existing_placements == (("old", "n2"), ("new", "n1"))
    assert ff.last_index == 2
    assert ff.hints == {"old": "n2", "new": "n1"}


def test_a_hint_that_no_longer_fits_falls_back_to_the_search():
    ff = FirstFit(hints={"p": "n1"})
    nodes = [_node("n0"), _node("n1", cpu=500), _node("n2")]
    assert _solve([_pod("p")], nodes, ff).existing_placements == (("p", "n0"),)
    gone = FirstFit(hints={"p": "no-such-node"})
    assert _solve([_pod("p")], nodes, gone).existing_placements == (("p", "n0"),)


def test_hints_last_one_drop_and_are_gone_after_two():
    ff = FirstFit(hints={"p": "n1"})
    ff.drop_old()
    assert ff.hint("p") == "n1"
    ff.drop_old()
    assert ff.hint("p") is None


def test_preferences_are_not_filters_in_the_fit_check():
    # Preferred node affinity for zone b: kube-scheduler's choice honours it first, CA's fit
    # check runs the filters alone and takes the first node.
    prefer_b = ((10, Requirements([Requirement.new(labels.ZONE, "In", ["us-east-1b"])])),)
    nodes = [_node("n0", zone="us-east-1a"), _node("n1", zone="us-east-1b")]
    pod = PodRequest("p", replace(make_pod_template(1000), preferred_affinity=prefer_b), 0)
    assert _solve([pod], nodes, None).existing_placements == (("p", "n1"),)
    assert _solve([pod], nodes, FirstFit()).existing_placements == (("p", "n0"),)


def test_first_fit_needs_kube_scheduler_mode():
    with pytest.raises(ValueError, match="first_fit"):
        Scheduler().solve(
            SchedulingInput(pods=(_pod("p"),), existing=(_node("n0"),), first_fit=FirstFit())
        )


def _web_and_db():
    """w-1 needs a db pod in its zone (none yet), db-1 is one, w-2 is w-1's alike."""
    app = Requirements.from_labels({"app": "db"})
    web = replace(make_pod_template(500), pod_affinity=(PodAffinityTerm(labels.ZONE, app),))
    db = replace(make_pod_template(300), labels=(("app", "db"),))
    return [PodRequest("w-1", web, 0), PodRequest("db-1", db, 1), PodRequest("w-2", web, 2)]


def test_an_alike_pod_is_not_tried_again_after_a_failure_even_past_a_placement():
    # CA's SimilarPodsScheduling: once w-1 failed, w-2 (same template) is skipped for the
    # rest of the fit check, although db-1's placement would now let it fit.
    pods, nodes = _web_and_db(), [_node("n0")]
    ca = _solve(pods, nodes, FirstFit())
    assert [u for u, _ in ca.unschedulable] == ["w-1", "w-2"]
    assert ca.unschedulable[0][1] == ca.unschedulable[1][1]
    assert ca.existing_placements == (("db-1", "n0"),)
    # kube-scheduler's own choice tries w-2 again after the placement.
    kube = _solve(pods, nodes, None)
    assert [u for u, _ in kube.unschedulable] == ["w-1"]


def test_an_alike_pod_still_tries_its_hint_after_a_failure():
    # tryScheduleUsingHints runs before the similar-pods check: w-2's hint (n0) now passes.
    pods, nodes = _web_and_db(), [_node("n0")]
    ff = FirstFit(hints={"w-2": "n0"})
    result = _solve(pods, nodes, ff)
    assert [u for u, _ in result.unschedulable] == ["w-1"]
    assert result.existing_placements == (("db-1", "n0"), ("w-2", "n0"))
    assert ff.hints["w-2"] == "n0"


def _reference(pods, free: list[int], ff_hints: dict[str, int], last: int):
    """CA's HintingSimulator over cpu alone, written out: returns placements, the new start
    and the hints set."""
    placements: dict[str, int] = {}
    set_hints: dict[str, int] = {}
    n = len(free)
    for uid, cpu in pods:
        h = ff_hints.get(uid)
        if h is not None and h < n and free[h] >= cpu:
            free[h] -= cpu
            placements[uid] = set_hints[uid] = h
            continue
        for i in range(n):
            j = (last + i) % n
            if free[j] >= cpu:
                free[j] -= cpu
                placements[uid] = set_hints[uid] = j
                last = (j + 1) % n
                break
    return placements, last, set_hints


@pytest.mark.parametrize("seed", range(40))
def test_matches_cas_simulator_written_out(seed):
    """Several consecutive fit checks (hints carried, nodes changing) against a direct
    transcription of ``TrySchedulePods`` over cpu alone."""
    rng = random.Random(seed)
    ff = FirstFit()
    ref_last = 0
    ref_hints: dict[str, int] = {}
    ref_old: dict[str, int] = {}
    uids = [f"p{i:02d}" for i in range(12)]
    for _round in range(4):
        n = rng.randint(1, 6)
        caps = [rng.choice([500, 1000, 1500, 2000, 3000]) for _ in range(n)]
        nodes = [_node(f"n{i}", cpu=c) for i, c in enumerate(caps)]
        chosen = sorted(rng.sample(uids, rng.randint(1, len(uids))))
        cpu_of = {u: 250 * (1 + (int(u[1:]) * 7 + seed) % 6) for u in uids}
        pods = [PodRequest(u, make_pod_template(cpu_of[u]), k) for k, u in enumerate(chosen)]
        result = _solve(pods, nodes, ff)
        ff.drop_old()
        hints = {**ref_old, **ref_hints}
        want, ref_last, set_hints = _reference(
            [(u, cpu_of[u]) for u in chosen], list(caps), hints, ref_last
        )
        ref_old, ref_hints = set_hints, {}
        got = {uid: int(node[1:]) for uid, node in result.existing_placements}
        assert got == want
        assert ff.last_index == ref_last
