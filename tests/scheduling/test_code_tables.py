"""``_Solve._code_table`` (the per-key tables ``_masked_claims`` reads, kept per key, codes,
kind and number of codes) equals building the table afresh every time, and a solve whose
NodeClaims are filtered through it gives the answers of one that builds every table anew."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from joiner.api import labels
from joiner.api.pods import PodAffinityTerm, TopologySpreadConstraint
from joiner.api.requirements import Requirements
from joiner.scheduling import NodePoolTemplate, PodRequest, Scheduler, SchedulingInput
from joiner.scheduling import scheduler as scheduler_module
from joiner.testing.builders import GIB, make_instance_type, make_nodepool, make_pod_template

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _plain(solve: scheduler_module._Solve, key: str, codes: list[int], allow: bool) -> np.ndarray:
    """The table as ``_masked_claims`` built it before tables were kept."""
    size = len(solve.index.code_of[key]) + 1
    if allow:
        table = np.zeros(size, dtype=np.bool_)
        table[0] = True
        table[[c + 1 for c in codes]] = True
    else:
        table = np.ones(size, dtype=np.bool_)
        table[[c + 1 for c in codes]] = False
    return table


def _input(seed: int) -> SchedulingInput:
    """Zonal spread, zonal self-affinity and zonal anti-affinity pods over three zones."""
    rng = random.Random(seed)
    prices = {(z, ct): 0.1 for z in ZONES for ct in ("spot", "on-demand")}
    types = tuple(
        make_instance_type(f"m5.{i}xlarge", cpu_m=1000 * i, memory=4 * i * GIB, prices=prices)
        for i in (1, 2, 4)
    )
    pool = NodePoolTemplate(make_nodepool(), types)
    templates = []
    for value in "abc":
        sel = Requirements.from_labels({"app": value})
        base = replace(
            make_pod_template(rng.choice([250, 500, 1000]), GIB), labels=(("app", value),)
        )
        templates.append(replace(base, spread=(TopologySpreadConstraint(labels.ZONE, 1, sel),)))
        templates.append(replace(base, pod_affinity=(PodAffinityTerm(labels.ZONE, sel),)))
        templates.append(replace(base, pod_anti_affinity=(PodAffinityTerm(labels.ZONE, sel),)))
    pods = tuple(PodRequest(f"p{i:03d}", rng.choice(templates), i) for i in range(60))
    return SchedulingInput(pods=pods, nodepools=(pool,))


def test_kept_tables_equal_fresh_ones() -> None:
    solve = scheduler_module._Solve(_input(1))
    solve.run()
    codes = solve.index.code_of[labels.ZONE]
    assert len(codes) == 3
    for allow in (True, False):
        for chosen in ([], [0], [2, 0], [0, 1, 2]):
            first = solve._code_table(labels.ZONE, chosen, allow)
            assert np.array_equal(first, _plain(solve, labels.ZONE, chosen, allow))
            assert solve._code_table(labels.ZONE, list(reversed(chosen)), allow) is first
    # A new domain code makes a larger table, not the kept one.
    before = solve._code_table(labels.ZONE, [1], True)
    codes["us-east-1d"] = len(codes)
    after = solve._code_table(labels.ZONE, [1], True)
    assert after.size == before.size + 1
    assert np.array_equal(after, _plain(solve, labels.ZONE, [1], True))


@pytest.mark.parametrize("seed", range(20))
def test_solve_with_kept_tables_equals_fresh_tables(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    inp = _input(seed)
    # The numpy filter (``_masked_claims``), not the plain-Python one of a small solve.
    monkeypatch.setattr(scheduler_module, "_FEW_CLAIMS", 0)
    kept = Scheduler().solve(inp)
    calls = [0]

    def fresh(self, key, codes, allow):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return _plain(self, key, codes, allow)

    monkeypatch.setattr(scheduler_module._Solve, "_code_table", fresh)
    assert Scheduler().solve(inp) == kept
    assert calls[0] > 0  # the filter read tables
    assert kept.new_nodeclaims
