"""Capacity reservations: selector terms, reserved offerings, the availability count, and
the offering/price rules that make Karpenter launch them first."""

from __future__ import annotations

import pytest

from joiner.api import labels
from joiner.api.objects import CapacityReservationSelectorTerm as Term
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.reservations import (
    RESERVED_PRICE_DIVISOR,
    Availability,
    CapacityReservation,
    free_counts,
    reservation_labels,
    select,
    with_reserved_offerings,
)
from joiner.cloudprovider.simulated.fleet import choose_offering
from joiner.controllers.disruption.command import worst_launch_price
from joiner.testing.builders import GIB, make_instance_type

R1 = CapacityReservation(
    "cr-1",
    "m5.large",
    "us-east-1a",
    owner_id="111122223333",
    instance_count=2,
    available_count=2,
    tags=(("team", "web"),),
)
R2 = CapacityReservation(
    "cr-2",
    "m5.large",
    "us-east-1b",
    owner_id="444455556666",
    instance_count=3,
    available_count=1,
    tags=(("team", "batch"),),
    instance_match_criteria="open",
)
R_OLD = CapacityReservation("cr-0", "m5.large", "us-east-1a", end_time_s=100.0)
R_GONE = CapacityReservation("cr-9", "m5.large", "us-east-1a", state="cancelled")
ALL = (R2, R1, R_OLD, R_GONE)


def _ids(found):
    return [r.id for r in found]


def test_select_by_id_tags_owner_and_match_criteria():
    assert _ids(select(ALL, [Term(id="cr-2")], 0.0)) == ["cr-2"]
    assert _ids(select(ALL, [Term(tags=(("team", "*"),))], 0.0)) == ["cr-1", "cr-2"]
    assert _ids(select(ALL, [Term(tags=(("team", "web"),))], 0.0)) == ["cr-1"]
    owned = [Term(tags=(("team", "*"),), owner_id="444455556666")]
    assert _ids(select(ALL, owned, 0.0)) == ["cr-2"]
    open_only = [Term(tags=(("team", "*"),), instance_match_criteria="open")]
    assert _ids(select(ALL, open_only, 0.0)) == ["cr-2"]
    # Terms are ORed, each reservation once, ordered by id.
    assert _ids(select(ALL, [Term(id="cr-2"), Term(tags=(("team", "*"),))], 0.0)) == [
        "cr-1",
        "cr-2",
    ]
    assert select(ALL, [], 0.0) == []


def test_expired_and_inactive_reservations_are_never_selected():
    assert _ids(select(ALL, [Term(id="cr-0")], 99.0)) == ["cr-0"]
    assert select(ALL, [Term(id="cr-0")], 100.0) == []
    assert select(ALL, [Term(id="cr-9")], 0.0) == []


def _m5():
    return make_instance_type(
        "m5.large",
        cpu_m=2000,
        memory=8 * GIB,
        prices={
            ("us-east-1a", "on-demand"): 0.096,
            ("us-east-1a", "spot"): 0.04,
            ("us-east-1b", "on-demand"): 0.096,
            ("us-east-1b", "spot"): 0.035,
        },
    )


def test_reserved_offerings_are_priced_as_karpenter_prices_them():
    c5 = make_instance_type("c5.large", cpu_m=2000, memory=4 * GIB)
    types = with_reserved_offerings([_m5(), c5], [R1, R2], {"us-east-1a": "use1-az1"}, {"cr-1": 1})
    assert types[1] is c5  # no reservation: unchanged
    m5 = types[0]
    reserved = [o for o in m5.offerings if o.capacity_type == "reserved"]
    assert [(o.reservation_id, o.zone, o.reservation_capacity) for o in reserved] == [
        ("cr-1", "us-east-1a", 1),
        ("cr-2", "us-east-1b", 1),
    ]
    assert reserved[0].price_per_hour == pytest.approx(0.096 / RESERVED_PRICE_DIVISOR)
    assert reserved[0].available
    assert not reserved[1].available  # us-east-1b has no subnet in the NodeClass
    assert m5.requirements[labels.CAPACITY_TYPE].has("reserved")
    assert m5.requirements[labels.CAPACITY_TYPE].has("spot")
    empty = with_reserved_offerings([_m5()], [R1], {"us-east-1a": "use1-az1"}, {"cr-1": 0})
    assert not next(o for o in empty[0].offerings if o.capacity_type == "reserved").available


def test_the_reservation_label_decides_which_offerings_a_requirement_allows():
    m5 = with_reserved_offerings([_m5()], [R1], {"us-east-1a": "use1-az1"}, {})[0]

    def allowed(*reqs):
        return sorted(
            (o.capacity_type, o.zone) for o in m5.offerings if o.compatible(Requirements(reqs))
        )

    key = labels.CAPACITY_RESERVATION_ID
    assert allowed(Requirement.in_(key, "cr-1")) == [("reserved", "us-east-1a")]
    assert allowed(Requirement.in_(key, "cr-7")) == []
    assert allowed(Requirement.new(key, "Exists")) == [("reserved", "us-east-1a")]
    assert ("reserved", "us-east-1a") not in allowed(Requirement.new(key, "DoesNotExist"))
    assert len(allowed(Requirement.new(key, "DoesNotExist"))) == 4
    assert len(allowed(Requirement.new(key, "NotIn", ["cr-1"]))) == 4
    assert len(allowed()) == 5


def test_a_memoised_compatibility_answer_is_never_reused_for_another_offering():
    """``Offering.compatible`` memoises on the requirement set: offerings that differ in only
    the reservation id, the zone or the capacity type still get their own answers."""
    r2 = CapacityReservation(
        "cr-2",
        "m5.large",
        "us-east-1a",
        owner_id="111122223333",
        instance_count=1,
        available_count=1,
    )
    m5 = with_reserved_offerings([_m5()], [R1, r2], {"us-east-1a": "use1-az1"}, {})[0]
    reqs = Requirements(
        [
            Requirement.in_(labels.CAPACITY_RESERVATION_ID, "cr-2"),
            Requirement.in_(labels.ZONE, "us-east-1a"),
        ]
    )
    for _ in range(2):  # the second round answers from the memo
        answers = {
            (o.capacity_type, o.zone, o.reservation_id): o.compatible(reqs) for o in m5.offerings
        }
        assert answers == {
            (o.capacity_type, o.zone, o.reservation_id): o._compatible(reqs) for o in m5.offerings
        }
        assert [k for k, ok in answers.items() if ok] == [("reserved", "us-east-1a", "cr-2")]


def test_reserved_is_launched_first_then_spot():
    m5 = with_reserved_offerings([_m5()], [R1], {"us-east-1a": "use1-az1"}, {})[0]
    everything = Requirements(
        [Requirement.in_(labels.CAPACITY_TYPE, "reserved", "spot", "on-demand")]
    )
    cands = [(m5, o) for o in m5.offerings if o.available and o.compatible(everything)]
    _, chosen = choose_offering(cands, everything)
    assert (chosen.capacity_type, chosen.reservation_id) == ("reserved", "cr-1")
    assert reservation_labels(chosen) == {
        labels.CAPACITY_RESERVATION_ID: "cr-1",
        labels.CAPACITY_RESERVATION_TYPE: "default",
    }
    rest = [(it, o) for it, o in cands if o.capacity_type != "reserved"]
    _, chosen = choose_offering(rest, everything)
    assert chosen.capacity_type == "spot"
    assert reservation_labels(chosen) == {}


def test_worst_launch_price_follows_the_capacity_type_precedence():
    """Karpenter core ``Offerings.WorstLaunchPrice``: the dearest offering of the first of
    reserved, spot, on-demand the requirements allow and the type offers."""
    m5 = with_reserved_offerings([_m5()], [R1], {"us-east-1a": "use1-az1"}, {})[0]

    def ct(*values):
        return Requirements([Requirement.in_(labels.CAPACITY_TYPE, *values)])

    assert worst_launch_price(m5, ct("reserved", "spot", "on-demand")) == pytest.approx(
        0.096 / RESERVED_PRICE_DIVISOR
    )
    assert worst_launch_price(m5, ct("spot", "on-demand")) == pytest.approx(0.04)
    assert worst_launch_price(m5, ct("on-demand")) == pytest.approx(0.096)
    assert worst_launch_price(m5, ct("reserved")) == pytest.approx(0.096 / RESERVED_PRICE_DIVISOR)


def test_the_availability_count_as_karpenter_keeps_it():
    a = Availability()
    a.sync([R1, R2])
    assert a.counts() == {"cr-1": 2, "cr-2": 1}
    a.mark_launched("cr-2")
    a.mark_launched("cr-2")
    assert a.count("cr-2") == 0  # never below 0
    a.mark_terminated("cr-2")
    assert a.count("cr-2") == 1
    a.mark_unavailable("cr-1")
    assert a.count("cr-1") == 0  # ICE: empty until the next sync
    a.sync([R1])
    assert a.count("cr-1") == 2
    assert a.count("cr-unknown") == 0
    a.mark_launched("cr-unknown")
    assert a.count("cr-unknown") == 0


def test_free_counts_subtract_running_instances():
    m5 = with_reserved_offerings([_m5()], [R1], {"us-east-1a": "use1-az1"}, {})[0]
    reserved = next(o for o in m5.offerings if o.reservation_id)
    spot = next(o for o in m5.offerings if o.capacity_type == "spot")
    assert free_counts([R1, R2], [reserved, spot, reserved]) == {"cr-1": 0, "cr-2": 3}


def test_a_gpu_reservation_is_launched_into_despite_the_exotic_filter():
    """Karpenter-AWS runs ``ReservedOfferingFilter`` before ``ExoticInstanceTypeFilter``: a
    launch that may use reserved capacity keeps only reserved offerings, so a reserved GPU
    type is not dropped for a cheaper generic one."""
    from joiner.cloudprovider.launch import launch_candidates
    from tests.scheduling.test_scheduler import GPU as gpu

    small = _m5()
    r = CapacityReservation("cr-g", "g5.xlarge", "us-east-1a", instance_count=3, available_count=3)
    r2 = CapacityReservation("cr-h", "g5.xlarge", "us-east-1a", instance_count=1, available_count=1)
    types = with_reserved_offerings([gpu, small], [r, r2], {"us-east-1a": "use1-az1"}, {})
    everything = Requirements(
        [Requirement.in_(labels.CAPACITY_TYPE, "reserved", "spot", "on-demand")]
    )
    cands = [
        (it, o) for it in types for o in it.offerings if o.available and o.compatible(everything)
    ]
    kept = launch_candidates(cands, everything)
    # One reserved offering per pool: the reservation with the most room.
    assert [(it.name, o.reservation_id) for it, o in kept] == [("g5.xlarge", "cr-g")]
    _, chosen = choose_offering(cands, everything)
    assert chosen.reservation_id == "cr-g"
    # Without reserved allowed, the exotic filter drops the GPU type as before.
    no_reserved = Requirements([Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand")])
    plain = [(it, o) for it, o in cands if o.capacity_type != "reserved"]
    assert {it.name for it, _ in launch_candidates(plain, no_reserved)} == {"m5.large"}


def test_the_reserved_capacity_gate_is_on_unless_the_flag_turns_it_off():
    from joiner.api.featuregates import parse

    assert parse("").reserved_capacity is True
    assert parse("ReservedCapacity=false").reserved_capacity is False
    assert parse("ReservedCapacity=0,SpotToSpotConsolidation=true").reserved_capacity is False
