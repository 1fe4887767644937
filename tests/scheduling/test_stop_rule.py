"""``StopRule``: a consolidation simulation stops once its rejection is decided, and only
then (the same pods with no rule give a plan consolidation would reject)."""

from __future__ import annotations

import pytest

from joiner.scheduling import NodePoolTemplate, Scheduler, SchedulingInput, StopRule
from joiner.testing.builders import GIB, make_nodepool, make_pod_template, make_pods
from tests.scheduling.test_scheduler import LARGE, SMALL

TYPES = (SMALL, LARGE)


def _solve(pods, stop=None, types=TYPES):
    return Scheduler().solve(
        SchedulingInput(
            pods=tuple(pods),
            nodepools=(NodePoolTemplate(make_nodepool(), types),),
            stop=stop,
        )
    )


def _cheapest(it, exclude=()):
    return min(o.price_per_hour for o in it.offerings if o.capacity_type not in exclude)


def _rejected(result, watched, limit, exclude=()):
    """Consolidation's verdict on a full plan: more than one NodeClaim holds a watched pod,
    or the one that does has no type whose cheapest allowed offering undercuts ``limit``."""
    claims = [c for c in result.new_nodeclaims if set(c.pods) & watched]
    if len(claims) > 1:
        return True
    return bool(claims) and all(_cheapest(it, exclude) >= limit for it in claims[0].instance_types)


def test_a_second_new_nodeclaim_stops_the_solve():
    pods = make_pods(make_pod_template(3000, GIB), 3)
    full = _solve(pods)
    assert len(full.new_nodeclaims) == 3 and full.stopped is None
    stopped = _solve(pods, StopRule(frozenset(p.uid for p in pods)))
    assert stopped.stopped == "its pods need more than one new node"
    assert not stopped.new_nodeclaims


def test_pods_not_watched_may_open_more_nodeclaims():
    pods = make_pods(make_pod_template(3000, GIB), 3)
    result = _solve(pods, StopRule(frozenset({pods[0].uid})))
    assert result.stopped is None
    assert len(result.new_nodeclaims) == 3


def test_no_option_cheaper_than_the_candidates_stops_the_solve():
    pods = make_pods(make_pod_template(1000, GIB), 3)  # 3 vCPU: only m5.xlarge fits
    watched = frozenset(p.uid for p in pods)
    limit = _cheapest(LARGE)
    stopped = _solve(pods, StopRule(watched, limit))
    assert stopped.stopped is not None and stopped.stopped.startswith("no instance type")
    # Just above m5.xlarge's cheapest offering the solve runs to the end, as without a rule.
    full = _solve(pods)
    assert _solve(pods, StopRule(watched, limit + 1e-6)) == full
    assert _rejected(full, watched, limit)


def test_rejected_capacity_types_do_not_count_as_cheaper():
    pods = make_pods(make_pod_template(1000, GIB), 1)
    watched = frozenset(p.uid for p in pods)
    spot, on_demand = _cheapest(SMALL, ("on-demand",)), _cheapest(SMALL, ("spot",))
    assert spot < on_demand
    limit = (spot + on_demand) / 2
    assert _solve(pods, StopRule(watched, limit)).stopped is None
    got = _solve(pods, StopRule(watched, limit, frozenset({"spot"})))
    assert got.stopped is not None and "other than as spot" in got.stopped


@pytest.mark.parametrize("cpu_m", [500, 1000, 1500, 2500, 3500])
@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_a_stop_only_ever_replaces_a_rejected_plan(cpu_m, count):
    pods = make_pods(make_pod_template(cpu_m, GIB), count)
    watched = frozenset(p.uid for p in pods)
    full = _solve(pods)
    for limit in (_cheapest(SMALL), _cheapest(LARGE), _cheapest(LARGE) * 1.01, 10.0):
        for exclude in ((), ("spot",)):
            got = _solve(pods, StopRule(watched, limit, frozenset(exclude)))
            if got.stopped is None:
                assert got == full
            else:
                assert _rejected(full, watched, limit, exclude)
