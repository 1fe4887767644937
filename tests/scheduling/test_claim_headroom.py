"""NodeClaims without headroom for a pod are not tried for it (``_Solve._try_claims`` filters
on ``_ClaimIndex.headroom``: cpu, memory and pods the best remaining option still offers).
The filter only skips NodeClaims that would fail on resources: every answer equals that of a
solve without it, and with many distinct templates far fewer NodeClaims are tried."""

from __future__ import annotations

import random

import numpy as np
import pytest

from joiner.api import labels
from joiner.api.requirements import Requirement
from joiner.scheduling import NodePoolTemplate, PodRequest, Scheduler, SchedulingInput
from joiner.scheduling import scheduler as scheduler_module
from joiner.testing.builders import GIB, make_instance_type, make_nodepool, make_pod_template


def _no_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every NodeClaim passes the headroom filter (a pod needing nothing fits any)."""
    monkeypatch.setattr(scheduler_module, "_headroom_need", lambda t: np.zeros(3, dtype=np.int64))


def _count_adds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    add = scheduler_module._Solve._add

    def counted(self, claim, attempt):
        calls[0] += 1
        return add(self, claim, attempt)

    monkeypatch.setattr(scheduler_module._Solve, "_add", counted)
    return calls


def _input(seed: int) -> SchedulingInput:
    """Pods of many distinct templates (some arm64-only, some with more pods than a type
    holds) for a NodePool of a few types of uneven shapes and pod counts."""
    rng = random.Random(seed)
    types = tuple(
        make_instance_type(
            f"t{i}.large",
            cpu_m=rng.choice([1000, 2000, 4000, 8000]),
            memory=rng.choice([2, 4, 8, 32]) * GIB,
            pods=rng.choice([4, 8, 29, 110]),
            arch=rng.choice(["amd64", "arm64"]),
        )
        for i in range(rng.randint(1, 4))
    )
    pool = NodePoolTemplate(
        make_nodepool(requirements=[Requirement.in_(labels.ARCH, "amd64", "arm64")]), types
    )
    pods = []
    for i in range(rng.randint(20, 80)):
        template = make_pod_template(
            rng.randint(1, 40) * 50,
            rng.randint(1, 16) * GIB // 4,
            node_selector={labels.ARCH: "arm64"} if rng.random() < 0.2 else None,
        )
        pods.append(PodRequest(f"p{i:03d}", template, i))
    return SchedulingInput(pods=tuple(pods), nodepools=(pool,))


@pytest.mark.parametrize("seed", range(30))
def test_headroom_filter_changes_no_answer(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    inp = _input(seed)
    filtered = Scheduler().solve(inp)
    with monkeypatch.context() as m:
        _no_filter(m)
        unfiltered = Scheduler().solve(inp)
    assert filtered == unfiltered


def test_full_claims_are_not_tried_for_other_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    # 40 pods of 40 distinct templates, each wanting 3/4 of the one type: one per NodeClaim.
    # Without the filter every pod tries every earlier (full) NodeClaim: 39 * 40 / 2 + 40.
    pool = NodePoolTemplate(
        make_nodepool(), (make_instance_type("m5.large", cpu_m=2000, memory=8 * GIB),)
    )
    pods = tuple(PodRequest(f"p{i:03d}", make_pod_template(1500, GIB + i), i) for i in range(40))
    inp = SchedulingInput(pods=pods, nodepools=(pool,))
    with monkeypatch.context() as m:
        calls = _count_adds(m)
        result = Scheduler().solve(inp)
    assert [c.pods for c in result.new_nodeclaims] == [(p.uid,) for p in reversed(pods)]
    assert calls[0] == 40  # one new NodeClaim each, no failed try on a full one
    with monkeypatch.context() as m:
        _no_filter(m)
        calls = _count_adds(m)
        assert Scheduler().solve(inp) == result
    assert calls[0] == 39 * 40 // 2 + 40


@pytest.mark.parametrize("seed", range(10))
def test_headroom_from_gathered_columns_equals_plain(seed: int) -> None:
    # ``_commit`` reads the options' rows of ``PreparedPool.headroom_net`` (``net`` on the
    # headroom columns, gathered once); each NodeClaim's headroom row must equal the plain
    # computation over ``net``: the best remaining option's room less the requests.
    solve = scheduler_module._Solve(_input(seed))
    solve.run()
    assert solve.claims
    for claim in solve.claims:
        pool, columns = claim.pool, claim.pool.headroom_columns
        assert np.array_equal(pool.headroom_net, pool.net[:, columns])
        plain = pool.net[claim.options][:, columns].max(axis=0) - claim.requests[columns]
        assert np.array_equal(solve.index.headroom[claim.index], plain)
        assert claim.hostname == f"hostname-placeholder-{claim.index:05d}"
