"""``StopRule``: a consolidation simulation stops once its rejection is decided, and only
then (the same pods with no rule give a plan consolidation would reject)."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from joiner.api import labels
from joiner.api.pods import TopologySpreadConstraint
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import NodePoolTemplate, Scheduler, SchedulingInput, StopRule
from joiner.scheduling.placement import referenced_keys
from joiner.scheduling.pool import prepare
from joiner.scheduling.stop import every_claim_launches_as
from joiner.testing.builders import (
    GIB,
    make_instance_type,
    make_nodepool,
    make_pod_template,
    make_pods,
)
from tests.scheduling.test_scheduler import LARGE, SMALL

TYPES = (SMALL, LARGE)
SPOT = frozenset({"spot"})


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
    if claims and exclude:
        # Consolidation rejects a replacement that could launch as an excluded capacity
        # type (spot-to-spot with its gate off), whatever its price.
        c = claims[0]
        if any(
            o.available and o.capacity_type in exclude and o.compatible(c.requirements)
            for it in c.instance_types
            for o in it.offerings
        ):
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


#: On-demand only, and larger than any spot type here: no spot type dominates it.
OD_ONLY = make_instance_type(
    "m5.2xlarge",
    cpu_m=8000,
    memory=32 * GIB,
    prices={("us-east-1a", "on-demand"): 0.5},
)


def test_rejected_capacity_types_do_not_count_as_cheaper():
    pods = make_pods(make_pod_template(1000, GIB), 1)
    watched = frozenset(p.uid for p in pods)
    spot, on_demand = _cheapest(SMALL, ("on-demand",)), _cheapest(SMALL, ("spot",))
    assert spot < on_demand
    limit = (spot + on_demand) / 2
    types = (SMALL, OD_ONLY)  # OD_ONLY is not dominated: the replacement may be on-demand
    assert _solve(pods, StopRule(watched, limit), types).stopped is None
    got = _solve(pods, StopRule(watched, limit, frozenset({"spot"})), types)
    assert got.stopped is not None and "other than as spot" in got.stopped


def test_a_replacement_that_could_launch_as_a_rejected_capacity_type_stops_the_solve():
    """Every option offered only on-demand is dominated by a spot one (as much room, same
    labels on the keys the pods refer to): whatever joins the NodeClaim, it could launch as
    spot, which consolidation rejects with spot-to-spot off, whatever the price."""
    od_small = make_instance_type(
        "m5a.large", cpu_m=2000, memory=8 * GIB, prices={("us-east-1a", "on-demand"): 0.01}
    )
    pods = make_pods(make_pod_template(1000, GIB), 1)
    watched = frozenset(p.uid for p in pods)
    rule = StopRule(watched, 10.0, frozenset({"spot"}))
    got = _solve(pods, rule, (SMALL, LARGE, od_small))
    assert got.stopped == "its pods need a new node, and it could launch as spot"
    assert _rejected(_solve(pods, types=(SMALL, LARGE, od_small)), watched, 10.0, ("spot",))
    # An undominated on-demand-only option: the replacement might end on-demand only.
    assert _solve(pods, rule, (SMALL, LARGE, OD_ONLY)).stopped is None
    # A pod that refers to the capacity type (or a label that tells the dominated type from
    # its peer) may narrow the NodeClaim away from spot: no such stop.
    ct = make_pods(make_pod_template(1000, GIB, node_selector={labels.CAPACITY_TYPE: "spot"}), 1)
    assert (
        _solve(
            ct,
            StopRule(frozenset({ct[0].uid}), 10.0, frozenset({"spot"})),
            (SMALL, LARGE, od_small),
        ).stopped
        is None
    )
    fam = make_pods(
        make_pod_template(
            1000, GIB, affinity=[[Requirement.new(labels.INSTANCE_FAMILY, "In", ("m5a", "m5"))]]
        ),
        1,
    )
    got = _solve(
        fam, StopRule(frozenset({fam[0].uid}), 10.0, frozenset({"spot"})), (SMALL, LARGE, od_small)
    )
    assert got.stopped is None


def test_a_reserved_offering_turns_the_stop_off():
    """A NodeClaim holding a reservation is pinned to reserved capacity: no such stop."""
    reserved = make_instance_type(
        "m5a.large",
        cpu_m=2000,
        memory=8 * GIB,
        prices={("us-east-1a", "on-demand"): 0.2, ("us-east-1a", "spot"): 0.05},
    )
    reserved = replace(
        reserved,
        offerings=(
            *reserved.offerings,
            replace(reserved.offerings[0], capacity_type="reserved", reservation_id="cr-1"),
        ),
    )
    pods = make_pods(make_pod_template(1000, GIB), 1)
    rule = StopRule(frozenset({pods[0].uid}), 10.0, frozenset({"spot"}))
    assert _solve(pods, rule, (SMALL, LARGE)).stopped is not None
    assert _solve(pods, rule, (SMALL, LARGE, reserved)).stopped is None


@pytest.mark.parametrize("cpu_m", [500, 1000, 1500, 2500, 3500])
@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_a_stop_only_ever_replaces_a_rejected_plan(cpu_m, count):
    pods = make_pods(make_pod_template(cpu_m, GIB), count)
    watched = frozenset(p.uid for p in pods)
    full = _solve(pods)
    for limit in (_cheapest(SMALL), _cheapest(LARGE), _cheapest(LARGE) * 1.01, 10.0):
        for exclude in ((), ("spot",), ("on-demand",)):
            got = _solve(pods, StopRule(watched, limit, frozenset(exclude)))
            if got.stopped is None:
                assert got == full
            else:
                assert _rejected(full, watched, limit, exclude)


def _random_case(seed: int):
    """Random types (some on-demand only, in one to three zones, two families and
    architectures) and random pods (some selecting a family or an architecture, some spread
    over zones), with the generator for more draws."""
    rng = random.Random(seed)
    zones = ["us-east-1a", "us-east-1b", "us-east-1c"][: rng.randint(1, 3)]
    types = []
    for i in range(rng.randint(2, 7)):
        cpu = rng.choice([2000, 4000, 8000])
        prices = {}
        for z in zones:
            od = cpu / 1000 * rng.uniform(0.03, 0.06)
            if rng.random() < 0.85:
                prices[(z, "on-demand")] = od
            if rng.random() < 0.7:
                prices[(z, "spot")] = od * rng.uniform(0.2, 0.6)
        if not prices:
            prices[(zones[0], "on-demand")] = 0.1
        types.append(
            make_instance_type(
                f"{rng.choice(['m5', 'c6'])}.t{i}",
                cpu_m=cpu,
                memory=cpu * 4 // 1000 * GIB,
                arch=rng.choice(["amd64", "arm64"]),
                prices=prices,
            )
        )
    pods = []
    for i in range(rng.randint(1, 6)):
        selector = rng.choice([{}, {}, {labels.INSTANCE_FAMILY: "m5"}, {labels.ARCH: "arm64"}])
        t = make_pod_template(rng.choice([500, 1000, 1500]), GIB, node_selector=selector)
        if rng.random() < 0.3:
            t = replace(
                t,
                labels=(("app", "x"),),
                spread=(
                    TopologySpreadConstraint(
                        labels.ZONE, 1, Requirements.from_labels({"app": "x"})
                    ),
                ),
            )
        pods.extend(make_pods(t, rng.randint(1, 3), prefix=f"g{i}"))
    return tuple(types), pods, rng


@pytest.mark.parametrize("seed", range(60))
def test_random_pools_stop_only_on_plans_consolidation_rejects(seed):
    """Random types (some on-demand only, in one to three zones, two families and
    architectures), random pods (some selecting a family or an architecture, some spread over
    zones): whenever the solve stops with spot rejected, the full plan is one consolidation
    rejects; when it does not stop, the plan is the full one."""
    types, pods, rng = _random_case(seed)
    watched = frozenset(p.uid for p in rng.sample(pods, rng.randint(1, len(pods))))
    limit = rng.uniform(0.02, 0.6)
    full = _solve(pods, types=types)
    got = _solve(pods, StopRule(watched, limit, frozenset({"spot"})), types)
    if got.stopped is None:
        assert got == full
    else:
        assert _rejected(full, watched, limit, ("spot",)), got.stopped


def test_a_pool_whose_every_nodeclaim_launches_as_spot():
    """``every_claim_launches_as`` (consolidation's pre-check) over 150 random pools and
    pods: whenever it holds, every NodeClaim of the full plan could launch as spot; the
    sweep sees it both hold and not."""
    held = 0
    for seed in range(150):
        types, pods, _rng = _random_case(seed)
        pool = prepare(make_nodepool(), types, (), {})
        if not every_claim_launches_as(pool, SPOT, referenced_keys(pods, (), ())):
            continue
        held += 1
        for c in _solve(pods, types=types).new_nodeclaims:
            assert any(
                o.available and o.capacity_type == "spot" and o.compatible(c.requirements)
                for it in c.instance_types
                for o in it.offerings
            ), (seed, c)
    assert 10 < held < 140


def test_limits_or_pinning_keys_turn_the_pool_wide_answer_off():
    od_small = make_instance_type(
        "m5a.large", cpu_m=2000, memory=8 * GIB, prices={("us-east-1a", "on-demand"): 0.01}
    )
    types = (SMALL, LARGE, od_small)
    keys = frozenset({labels.ZONE})
    assert every_claim_launches_as(prepare(make_nodepool(), types, (), {}), SPOT, keys)
    # An on-demand-only type no spot one dominates.
    assert not every_claim_launches_as(
        prepare(make_nodepool(), (*types, OD_ONLY), (), {}), SPOT, keys
    )
    assert not every_claim_launches_as(
        prepare(make_nodepool(), types, (), {"cpu": 100_000}), SPOT, keys
    )
    assert not every_claim_launches_as(
        prepare(make_nodepool(), types, (), {}), SPOT, keys | {labels.CAPACITY_TYPE}
    )


def test_offered_in_is_the_prices_definition_zone_by_zone():
    """``PreparedPool.offered_in`` (built for every zone and capacity type in one walk)
    equals its definition: a finite price under the NodePool's requirements plus the zone
    and capacity types, over random pools (some types on-demand or spot only, one to three
    zones) and a zone none of them is in (the real catalog's pools run through the goldens
    and the broad whole-run test of ``test_disruption_room``)."""
    from joiner.api.requirements import IN
    from joiner.api.requirements import Requirement as Req

    def check(pool) -> None:
        for z in [*sorted(pool.domains(labels.ZONE)), "us-west-2a"]:
            for cts in (None, SPOT, frozenset({"on-demand"}), frozenset({"spot", "on-demand"})):
                reqs = pool.nodepool.requirements.add(Req.in_(labels.ZONE, z))
                if cts is not None:
                    reqs = reqs.add(Req.new(labels.CAPACITY_TYPE, IN, cts))
                want = np.isfinite(pool.prices(reqs))
                assert (pool.offered_in(z, cts) == want).all(), (z, cts)

    for seed in range(40):
        types, _pods, _rng = _random_case(seed)
        check(prepare(make_nodepool(), types, (), {}))
