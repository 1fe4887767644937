"""The NodeClaims a pod tries come from ``claimorder.ClaimOrder`` (classes by domain and
hostname-group counts, buckets by pod count) instead of a numpy filter over every NodeClaim
of the solve. Every answer equals the arrays' (the same NodeClaims in the same order, so the
same placements), also when the index gives up part-way and the arrays finish the list, and
when it is built part-way through a solve (``ACTIVE_FROM``); on Karpenter's benchmark mix the
arrays over all NodeClaims are never built for a pod once it is."""

from __future__ import annotations

import importlib.util
import random
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from joiner.api import labels
from joiner.api.objects import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    PodAffinityTerm,
    PodTemplate,
    TopologySpreadConstraint,
)
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import NodePoolTemplate, PodRequest, Scheduler, SchedulingInput, claimorder
from joiner.scheduling import scheduler as scheduler_module
from joiner.testing.builders import GIB, make_instance_type, make_nodepool, make_pod_template

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _bench() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "scheduling.py"
    spec = importlib.util.spec_from_file_location("bench_scheduling", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _arrays_only(m: pytest.MonkeyPatch) -> None:
    """The index never answers: every pod's NodeClaims come from the arrays."""
    m.setattr(claimorder, "CLASSES_MAX", -1)


def _template(rng: random.Random, app: str) -> PodTemplate:
    """A template of ``app`` with one constraint drawn from spread (zone or hostname, skew 1
    to 3, sometimes ScheduleAnyway), zone affinity, hostname or zone anti-affinity, a zone or
    arch node selector, or none."""
    sel = Requirements.from_labels({"app": app})
    base = make_pod_template(
        rng.choice([250, 500, 1000, 1500, 3000]),
        rng.choice([1, 2, 4, 6]) * GIB // 2,
        node_selector=rng.choice(
            [None, None, {labels.ZONE: rng.choice(ZONES)}, {labels.ARCH: "arm64"}]
        ),
    )
    kind = rng.randrange(6)
    fields: dict[str, Any] = {"labels": (("app", app),)}
    if kind in (0, 1):
        when = SCHEDULE_ANYWAY if rng.random() < 0.3 else DO_NOT_SCHEDULE
        key = labels.ZONE if kind == 0 else labels.HOSTNAME
        fields["spread"] = (TopologySpreadConstraint(key, rng.randint(1, 3), sel, when),)
    elif kind == 2:
        fields["pod_affinity"] = (PodAffinityTerm(labels.ZONE, sel),)
    elif kind == 3:
        key = rng.choice([labels.HOSTNAME, labels.ZONE])
        fields["pod_anti_affinity"] = (PodAffinityTerm(key, sel),)
    return replace(base, **fields)


def _input(seed: int) -> SchedulingInput:
    """Pods of a handful of apps with mixed constraints on a NodePool of small types in three
    zones (NodeClaims fill, so headroom refuses some for bigger pods)."""
    rng = random.Random(seed)
    prices = {(z, ct): 0.1 for z in ZONES for ct in ("on-demand", "spot")}
    types = tuple(
        make_instance_type(
            f"t{i}.large",
            cpu_m=rng.choice([2000, 4000, 8000]),
            memory=rng.choice([4, 8, 16]) * GIB,
            pods=rng.choice([4, 8, 29]),
            arch=rng.choice(["amd64", "arm64"]),
            prices=prices,
        )
        for i in range(rng.randint(2, 5))
    )
    pool = NodePoolTemplate(
        make_nodepool(requirements=[Requirement.in_(labels.ARCH, "amd64", "arm64")]), types
    )
    templates = [_template(rng, f"app{a}") for a in range(rng.randint(2, 8))]
    pods = tuple(PodRequest(f"p{i:03d}", rng.choice(templates), i) for i in range(120))
    return SchedulingInput(pods=pods, nodepools=(pool,))


@pytest.mark.parametrize("active_from", [0, 7])
@pytest.mark.parametrize("seed", range(40))
def test_the_index_answers_as_the_arrays(
    seed: int, active_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Built from the first NodeClaim, or from the seventh with the six before moved in.
    monkeypatch.setattr(claimorder, "ACTIVE_FROM", active_from)
    inp = _input(seed)
    indexed = Scheduler().solve(inp)
    with monkeypatch.context() as m:
        _arrays_only(m)
        assert Scheduler().solve(inp) == indexed
    # Giving up after the first refused NodeClaim: the arrays finish the list, less the
    # NodeClaims already tried, in the same order.
    with monkeypatch.context() as m:
        m.setattr(claimorder, "SKIPS_MAX", 0)
        assert Scheduler().solve(inp) == indexed


def test_the_benchmark_mix_never_builds_the_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench()
    types = tuple(bench.synthetic_types()[:32])
    inp = SchedulingInput(
        pods=tuple(bench.make_pods(1000)),
        nodepools=(NodePoolTemplate(make_nodepool(), types),),
    )
    monkeypatch.setattr(claimorder, "ACTIVE_FROM", 0)
    masked = [0]
    original = scheduler_module._Solve._masked_claims

    def counted(self, attempt, summary, dead):
        masked[0] += 1
        return original(self, attempt, summary, dead)

    with monkeypatch.context() as m:
        m.setattr(scheduler_module._Solve, "_masked_claims", counted)
        indexed = Scheduler().solve(inp)
    assert masked[0] == 0
    assert len(indexed.new_nodeclaims) >= 200  # one per hostname anti-affinity pod at least
    with monkeypatch.context() as m:
        _arrays_only(m)
        assert Scheduler().solve(inp) == indexed


def test_a_claim_full_for_every_pod_leaves_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claimorder, "ACTIVE_FROM", 0)
    # 3/4 of the one type per pod: every NodeClaim is full for every template after its pod.
    pool = NodePoolTemplate(
        make_nodepool(), (make_instance_type("m5.large", cpu_m=2000, memory=8 * GIB),)
    )
    pods = tuple(PodRequest(f"p{i:03d}", make_pod_template(1500, GIB + i), i) for i in range(10))
    solve = scheduler_module._Solve(SchedulingInput(pods=pods, nodepools=(pool,)))
    result = solve.run()
    assert len(result.new_nodeclaims) == 10
    assert not solve.index.order._where  # no NodeClaim is left in a bucket
    assert not solve.index.order._classes
