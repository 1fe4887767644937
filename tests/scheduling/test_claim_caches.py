"""What a solve keeps between the pods it places: each NodeClaim's option rows and
headroom maximum (``_Claim.net_rows``, ``headroom_top``), the first try of a template
without preferences (``_Solve._first_try``), each template's request vector, and the
column-by-column fit (``pool.rows_fit``); and the plain-Python choice of candidates in a
small solve (``_Solve._few_claims``). Each gives the answer of the plain computation: the
same plan, pod by pod, and the same caches as computed afresh."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from joiner.api import labels
from joiner.api.objects import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, TopologySpreadConstraint
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import NodePoolTemplate, PodRequest, Scheduler, SchedulingInput
from joiner.scheduling import placement as placement_module
from joiner.scheduling import scheduler as scheduler_module
from joiner.scheduling.pool import rows_fit
from joiner.testing.builders import GIB, make_instance_type, make_nodepool, make_pod_template
from tests.scheduling.test_code_tables import _input as code_tables_input


@pytest.mark.parametrize("seed", range(40))
def test_rows_fit_is_the_plain_comparison(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, r = int(rng.integers(0, 90)), int(rng.integers(0, 6))
    rows = rng.integers(-5, 50, (n, r)).astype(np.int64)
    need = rng.integers(0, 50, r).astype(np.int64)
    assert np.array_equal(rows_fit(rows, need), (rows >= need).all(axis=1))


def _input(seed: int) -> SchedulingInput:
    """Between 40 and 90 instance types (so option rows take the column-by-column path),
    pods of a few shared templates, some with a zone spread or a ScheduleAnyway one."""
    rng = random.Random(seed)
    types = tuple(
        make_instance_type(
            f"t{i}.x",
            cpu_m=rng.choice([1000, 2000, 4000, 8000, 16000]),
            memory=rng.choice([2, 4, 8, 32]) * GIB,
            pods=rng.choice([4, 8, 29, 110]),
            arch=rng.choice(["amd64", "arm64"]),
        )
        for i in range(rng.randint(40, 90))
    )
    pool = NodePoolTemplate(
        make_nodepool(requirements=[Requirement.in_(labels.ARCH, "amd64", "arm64")]), types
    )
    templates = []
    for k in range(rng.randint(1, 6)):
        t = make_pod_template(
            rng.randint(1, 40) * 50,
            rng.randint(1, 16) * GIB // 4,
            node_selector={labels.ARCH: "arm64"} if rng.random() < 0.2 else None,
        )
        if rng.random() < 0.3:
            when = rng.choice([DO_NOT_SCHEDULE, SCHEDULE_ANYWAY])
            selector = Requirements.from_labels({"app": f"a{k}"})
            spread = TopologySpreadConstraint(labels.ZONE, 1, selector, when)
            t = dataclasses.replace(t, labels=(("app", f"a{k}"),), spread=(spread,))
        templates.append(t)
    pods = tuple(
        PodRequest(f"p{i:03d}", rng.choice(templates), i) for i in range(rng.randint(30, 160))
    )
    return SchedulingInput(pods=pods, nodepools=(pool,))


def _plain(m: pytest.MonkeyPatch) -> None:
    """Every cache of this module's subject off: computed afresh at each use."""

    def net_rows(self):  # type: ignore[no-untyped-def]
        return self.pool.net[self.options]

    def headroom_top(self):  # type: ignore[no-untyped-def]
        return self.pool.headroom_net[self.options].max(axis=0)

    def first_try(self, pod, kube):  # type: ignore[no-untyped-def]
        prefs = self._prefs(pod, kube)
        return prefs, prefs.terms(pod.volume_terms), prefs.active()

    m.setattr(placement_module._Claim, "net_rows", net_rows)
    m.setattr(placement_module._Claim, "headroom_top", headroom_top)
    m.setattr(scheduler_module._Solve, "_first_try", first_try)
    m.setattr(scheduler_module, "rows_fit", lambda rows, need: (rows >= need).all(axis=1))


@pytest.mark.parametrize("seed", range(25))
def test_kept_answers_equal_the_plain_computation(seed: int, monkeypatch: pytest.MonkeyPatch):
    inp = _input(seed)
    solve = scheduler_module._Solve(inp)
    kept = solve.run()
    for claim in solve.claims:
        pool = claim.pool
        assert np.array_equal(claim.net_rows(), pool.net[claim.options])
        assert np.array_equal(claim.headroom_top(), pool.headroom_net[claim.options].max(axis=0))
    with monkeypatch.context() as m:
        _plain(m)
        assert Scheduler().solve(inp) == kept


@pytest.mark.parametrize("seed", range(25))
def test_few_claims_in_python_equal_the_numpy_filter(seed: int, monkeypatch: pytest.MonkeyPatch):
    """A small solve chooses candidates in Python; with ``_FEW_CLAIMS`` 0 it takes the numpy
    filter and order instead: the same plan, on pods with spread, affinity and
    anti-affinity (``test_code_tables``) and on plain ones."""
    calls = [0]
    few_claims = scheduler_module._Solve._few_claims

    def counted(self, attempt, summary, dead):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return few_claims(self, attempt, summary, dead)

    for inp in (_input(seed), code_tables_input(seed)):
        with monkeypatch.context() as m:
            m.setattr(scheduler_module._Solve, "_few_claims", counted)
            few = Scheduler().solve(inp)
        with monkeypatch.context() as m:
            m.setattr(scheduler_module, "_FEW_CLAIMS", 0)
            assert Scheduler().solve(inp) == few
    assert calls[0] > 0
