"""Consolidation verdicts kept across passes (``disruption.memo``): a pass in the same world
reuses earlier failures and reaches the very decisions and reasons of a fresh pass; any
change to what the simulations read forgets them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from joiner.controllers.disruption.memo import VerdictMemo
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.controllers.disruption_fixtures import dry_run, node, nodepool, pod
from tests.controllers.test_disruption_room import _cluster

REPO = Path(__file__).resolve().parents[2]


def _fragmented(tmp_path):
    """Four m5.large nodes, each with a 1-CPU and a 400m pod, in a pool of m5.large only:
    no node's pods fit the others, and no cheaper type exists, so nothing consolidates."""
    only = "        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}\n"
    docs = [nodepool(requirements=only)]
    for i in range(4):
        docs.append(node(f"o{i}", "m5.large"))
        docs.append(pod(f"o{i}-1", f"o{i}", cpu="1"))
        docs.append(pod(f"o{i}-2", f"o{i}", cpu="400m"))
    return dry_run(tmp_path, *docs)


def _hits(run) -> int:
    return run.controller._memo.hits


def test_a_second_pass_in_the_same_world_reuses_every_failure(tmp_path):
    run = _fragmented(tmp_path)
    command, first = run.controller.compute(elapsed=True)
    assert command is None and {"o0", "o1", "o2", "o3"} <= set(first.reasons)
    before = _hits(run)
    command, again = run.controller.compute(elapsed=True)
    assert command is None
    # Each of the four single-node verdicts (and the multi-node prefixes) came from the memo.
    assert _hits(run) - before >= 4
    assert again.reasons == first.reasons


def test_a_change_to_the_cluster_forgets_the_failures(tmp_path):
    run = _fragmented(tmp_path)
    run.controller.compute(elapsed=True)
    run.state.touch()  # a pod event or a node change
    before = _hits(run)
    run.controller.compute(elapsed=True)
    assert _hits(run) == before


def test_new_instance_type_objects_forget_the_failures(tmp_path, monkeypatch):
    # The cloud hands out new objects when an offering's availability or a price changes.
    run = _fragmented(tmp_path)
    run.controller.compute(elapsed=True)
    provisioner = run.controller._provisioner
    real = provisioner.templates

    def fresh_types():
        return [
            type(t)(t.nodepool, tuple(replace(it) for it in t.instance_types), t.remaining)
            for t in real()
        ]

    monkeypatch.setattr(provisioner, "templates", fresh_types)
    before = _hits(run)
    run.controller.compute(elapsed=True)
    assert _hits(run) == before


def test_memoized_passes_decide_as_fresh_ones(tmp_path, monkeypatch):
    """Over random clusters: two passes with the memo equal two passes without it, in the
    command and in every node's reason."""
    hits = 0
    for seed in range(40, 60):
        spot = seed % 2 == 1
        (tmp_path / f"with{seed}").mkdir()
        (tmp_path / f"without{seed}").mkdir()
        run = _cluster(tmp_path / f"with{seed}", seed, spot=spot)
        with_memo = [run.controller.compute(elapsed=True) for _ in range(2)]
        hits += _hits(run)
        with monkeypatch.context() as patch:
            patch.setattr(VerdictMemo, "failed", lambda self, method, cands: None)
            run = _cluster(tmp_path / f"without{seed}", seed, spot=spot)
            without = [run.controller.compute(elapsed=True) for _ in range(2)]
        for (c1, x1), (c2, x2) in zip(with_memo, without, strict=True):
            assert (c1 is None) == (c2 is None), seed
            if c1 is not None and c2 is not None:
                assert (c1.method, c1.names, c1.action) == (c2.method, c2.names, c2.action)
            assert x1.reasons == x2.reasons, seed
    assert hits >= 5  # the sweep exercises the memo (5 hits over these seeds)


def test_a_command_is_never_memoized(tmp_path):
    # An underused node whose pods fit the others: the command comes from a fresh simulation
    # every pass, never from the memo.
    docs = [nodepool(), node("a", "m5.2xlarge"), node("b", "m5.2xlarge")]
    docs += [pod("a-1", "a", cpu="1"), pod("b-1", "b", cpu="1")]
    run = dry_run(tmp_path, *docs)
    first, _ = run.controller.compute(elapsed=True)
    again, _ = run.controller.compute(elapsed=True)
    assert first is not None and again is not None
    assert first.method == again.method and first.names == again.names
    assert again is not first and again.candidates[0] is not first.candidates[0]


def test_a_simulation_decides_the_same_with_and_without_the_memo(tmp_path, monkeypatch):
    """A whole run of an example with consolidation: the summary is byte-identical."""
    scenario = REPO / "examples" / "nightly-consolidation" / "scenario.yaml"
    with_memo = SimulationRuntime(load_scenario(scenario)).run().summary
    monkeypatch.setattr(VerdictMemo, "failed", lambda self, method, cands: None)
    without = SimulationRuntime(load_scenario(scenario)).run().summary
    assert json.dumps(with_memo, sort_keys=True) == json.dumps(without, sort_keys=True)
    assert with_memo["disruptions"]["commands"]
