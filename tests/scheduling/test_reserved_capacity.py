"""Reserved capacity within one provisioning simulation (Karpenter core's
``ReservationManager``, strict mode): NodeClaims hold reservation slots, the rest of the
pods wait for the next pass, and NodeClaims that hold slots are pinned to them."""

from __future__ import annotations

from joiner.api import labels
from joiner.api.requirements import Requirement
from joiner.cloudprovider.reservations import CapacityReservation, with_reserved_offerings
from joiner.scheduling import NodePoolTemplate, Scheduler, SchedulingInput
from joiner.scheduling.reservations import HELD_ELSEWHERE
from joiner.testing.builders import GIB, make_nodepool, make_pod_template, make_pods
from tests.scheduling.test_scheduler import LARGE, SMALL


def _types(count: int):
    return tuple(
        with_reserved_offerings(
            [SMALL, LARGE],
            [CapacityReservation("cr-1", "m5.large", "us-east-1a")],
            {"us-east-1a": "use1-az1"},
            {"cr-1": count},
        )
    )


def _solve(count: int, *capacity_types: str, pods: int = 3, weight_pool=None):
    pool = make_nodepool(
        requirements=[Requirement.in_(labels.CAPACITY_TYPE, *capacity_types)], weight=10
    )
    pools = [NodePoolTemplate(pool, _types(count))]
    if weight_pool is not None:
        pools.append(NodePoolTemplate(weight_pool, (SMALL, LARGE)))
    return Scheduler().solve(
        SchedulingInput(
            pods=make_pods(make_pod_template(1500, GIB), pods),
            existing=(),
            nodepools=tuple(pools),
            daemonsets=(),
        )
    )


def _pinned(claim) -> tuple[str | None, str | None]:
    ct = claim.requirements.get(labels.CAPACITY_TYPE)
    rid = claim.requirements.get(labels.CAPACITY_RESERVATION_ID)
    return (
        ",".join(sorted(ct.values)) if ct is not None else None,
        ",".join(sorted(rid.values)) if rid is not None else None,
    )


def test_two_slots_take_two_nodeclaims_and_the_third_pod_waits_for_the_next_pass():
    result = _solve(2, "reserved", "spot", "on-demand")
    assert [_pinned(c) for c in result.new_nodeclaims] == [("reserved", "cr-1")] * 2
    assert [it.name for it in result.new_nodeclaims[0].instance_types] == ["m5.large"]
    # A reserved NodeClaim does not grow out of its reservation (the second pod would need
    # the m5.xlarge), so each pod has its own NodeClaim, and the third finds both slots held.
    assert [len(c.pods) for c in result.new_nodeclaims] == [1, 1]
    (waiting,) = result.unschedulable
    assert HELD_ELSEWHERE in waiting[1]


def test_enough_slots_reserve_every_nodeclaim():
    result = _solve(3, "reserved", "on-demand")
    assert [_pinned(c) for c in result.new_nodeclaims] == [("reserved", "cr-1")] * 3
    assert not result.unschedulable


def test_a_full_reservation_is_unavailable_and_the_pool_falls_back():
    """Next pass: the launches used the reservation, its offering is unavailable, so the
    NodeClaim is planned as spot/on-demand without a reservation."""
    result = _solve(0, "reserved", "spot", "on-demand", pods=1)
    (claim,) = result.new_nodeclaims
    assert _pinned(claim) == ("on-demand,reserved,spot", None)
    assert not result.unschedulable


def test_a_pool_without_reserved_never_holds_reservations():
    result = _solve(2, "spot", "on-demand")
    # Two pods share an m5.xlarge: nothing pins a NodeClaim to the m5.large reservation.
    assert [_pinned(c) for c in result.new_nodeclaims] == [("on-demand,spot", None)] * 2
    assert [len(c.pods) for c in result.new_nodeclaims] == [2, 1]


def test_a_reserved_offering_error_does_not_fall_back_to_a_lower_weight_pool():
    other = make_nodepool("other")
    result = _solve(1, "reserved", "on-demand", pods=2, weight_pool=other)
    assert [c.nodepool for c in result.new_nodeclaims] == ["default"]
    assert len(result.unschedulable) == 1


def test_a_pod_may_select_a_reservation_by_its_label():
    """``karpenter.k8s.aws/capacity-reservation-id`` is a well-known label: instance types do
    not define it, and only the reservation's own offerings satisfy a pod that selects it."""
    pool = make_nodepool(
        requirements=[Requirement.in_(labels.CAPACITY_TYPE, "reserved", "on-demand")]
    )

    def solve(rid: str):
        tmpl = make_pod_template(500, GIB, node_selector={labels.CAPACITY_RESERVATION_ID: rid})
        return Scheduler().solve(
            SchedulingInput(
                pods=make_pods(tmpl, 1),
                existing=(),
                nodepools=(NodePoolTemplate(pool, _types(1)),),
                daemonsets=(),
            )
        )

    (claim,) = solve("cr-1").new_nodeclaims
    assert [it.name for it in claim.instance_types] == ["m5.large"]
    assert _pinned(claim) == ("reserved", "cr-1")
    other = solve("cr-2")
    assert not other.new_nodeclaims and len(other.unschedulable) == 1
