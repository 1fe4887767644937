"""Capacity reservations on the AWS adapter. moto 5 has no DescribeCapacityReservations,
so that call is answered by botocore's Stubber on a separate client; CreateFleet, launch
templates and instances are moto's."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber

from joiner.api import labels
from joiner.api.objects import CapacityReservationSelectorTerm as Term
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.aws.fleet import read_errors
from joiner.cloudprovider.aws.reservations import ReservationSource, describe_params
from joiner.cloudprovider.launch import UnavailableOfferings
from joiner.cloudprovider.reservations import RESERVED_PRICE_DIVISOR
from joiner.cloudprovider.types import InsufficientCapacityError, LaunchRequest

REGION = "us-east-1"
ACCOUNT = "123456789012"


def _reservation(rid: str, count: int, zone: str = "us-east-1a", **extra):
    return {
        "CapacityReservationId": rid,
        "OwnerId": ACCOUNT,
        "InstanceType": "m5.large",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": zone,
        "TotalInstanceCount": count,
        "AvailableInstanceCount": count,
        "State": "active",
        "InstanceMatchCriteria": "targeted",
        "ReservationType": "default",
        "Tags": [{"Key": "team", "Value": "web"}],
        **extra,
    }


def _stubbed():
    client = boto3.client(
        "ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    return client, Stubber(client)


def test_describe_requests_follow_karpenters_queries():
    assert describe_params(Term(id="cr-0a1")) == {
        "Filters": [{"Name": "state", "Values": ["active"]}],
        "CapacityReservationIds": ["cr-0a1"],
    }
    assert describe_params(
        Term(tags=(("any", "*"), ("team", "web")), owner_id=ACCOUNT, instance_match_criteria="open")
    ) == {
        "Filters": [
            {"Name": "state", "Values": ["active"]},
            {"Name": "owner-id", "Values": [ACCOUNT]},
            {"Name": "tag-key", "Values": ["any"]},
            {"Name": "tag:team", "Values": ["web"]},
            {"Name": "instance-match-criteria", "Values": ["open"]},
        ],
        "MaxResults": 1000,
    }


def test_source_pages_caches_a_minute_and_drops_expired_and_unknown():
    client, stub = _stubbed()
    now = [1_800_000_000.0]
    tag_term = Term(tags=(("team", "web"),))
    expired = datetime.fromtimestamp(now[0] - 1, tz=UTC)
    stub.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [_reservation("cr-1", 2)], "NextToken": "t"},
        describe_params(tag_term),
    )
    stub.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [_reservation("cr-0", 3, EndDate=expired)]},
        {**describe_params(tag_term), "NextToken": "t"},
    )
    stub.add_client_error(
        "describe_capacity_reservations",
        service_error_code="InvalidCapacityReservationId.NotFound",
        expected_params=describe_params(Term(id="cr-9")),
    )
    with stub:
        source = ReservationSource(client, lambda: now[0])
        found = source.selected([tag_term, Term(id="cr-9")])
        assert [r.id for r in found] == ["cr-1"]
        assert source.availability.counts() == {"cr-1": 2, "cr-0": 3}
        now[0] += 30.0  # cached: no second call (the Stubber would fail on one)
        assert [r.id for r in source.selected([tag_term])] == ["cr-1"]
        stub.assert_no_pending_responses()


def _source(count: int) -> tuple[ReservationSource, Stubber]:
    client, stub = _stubbed()
    stub.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [_reservation("cr-0a1b2c", count)]},
        describe_params(Term(id="cr-0a1b2c")),
    )
    stub.activate()
    return ReservationSource(client, lambda: 1_800_000_000.0), stub


def _world(aws_world, count: int):
    nc = aws_world.node_class(capacity_reservation_selector_terms=(Term(id="cr-0a1b2c"),))
    provider = aws_world.provider([nc])
    provider.reservations, stub = _source(count)
    return provider, stub


def _request(provider, name, *capacity_types):
    options = tuple(
        t for t in provider.get_instance_types("default") if t.name in ("m5.large", "c5.large")
    )
    return LaunchRequest(
        nodeclaim_name=name,
        nodepool="general",
        node_class="default",
        requirements=Requirements([Requirement.in_(labels.CAPACITY_TYPE, *capacity_types)]),
        instance_types=options,
        tags=(("karpenter.sh/nodeclaim", name), ("karpenter.sh/nodepool", "general")),
    )


def test_a_reservation_of_two_takes_two_launches_then_spot(aws_world):
    provider, stub = _world(aws_world, 2)
    m5 = next(t for t in provider.get_instance_types("default") if t.name == "m5.large")
    reserved = [o for o in m5.offerings if o.capacity_type == "reserved"]
    assert [(o.zone, o.reservation_id, o.reservation_capacity) for o in reserved] == [
        ("us-east-1a", "cr-0a1b2c", 2)
    ]
    on_demand = next(o for o in m5.offerings if o.capacity_type == "on-demand")
    assert reserved[0].price_per_hour == pytest.approx(
        on_demand.price_per_hour / RESERVED_PRICE_DIVISOR
    )

    got = [
        provider.create(_request(provider, f"nc-{i}", "reserved", "spot", "on-demand"))
        for i in range(3)
    ]
    assert [i.offering.capacity_type for i in got] == ["reserved", "reserved", "spot"]
    assert [i.offering.reservation_id for i in got] == ["cr-0a1b2c", "cr-0a1b2c", ""]
    assert {i.instance_type.name for i in got[:2]} == {"m5.large"}
    assert {i.offering.zone for i in got[:2]} == {"us-east-1a"}
    assert provider.reservations.availability.count("cr-0a1b2c") == 0

    # The reserved launches: on-demand capacity, a launch template targeting the reservation.
    fleet = provider.last_fleet_request
    assert (
        fleet is not None
        and fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
    )
    ec2 = aws_world.ec2
    desc = ec2.describe_instances(InstanceIds=[got[0].instance_id])["Reservations"][0]
    assert "InstanceLifecycle" not in desc["Instances"][0]
    targeted = []
    for t in ec2.describe_launch_templates()["LaunchTemplates"]:
        v = ec2.describe_launch_template_versions(LaunchTemplateName=t["LaunchTemplateName"])
        spec = v["LaunchTemplateVersions"][0]["LaunchTemplateData"].get(
            "CapacityReservationSpecification"
        )
        if spec:
            targeted.append(spec["CapacityReservationTarget"]["CapacityReservationId"])
    assert targeted == ["cr-0a1b2c"]
    stub.deactivate()


def test_only_reserved_allowed_fails_with_ice_once_the_reservation_is_full(aws_world):
    provider, stub = _world(aws_world, 1)
    first = provider.create(_request(provider, "nc-1", "reserved"))
    assert first.offering.capacity_type == "reserved"
    with pytest.raises(InsufficientCapacityError):
        provider.create(_request(provider, "nc-2", "reserved"))
    stub.deactivate()


def test_reserved_launch_request_and_instance_read_back(aws_world):
    provider, stub = _world(aws_world, 1)
    inst = provider.create(_request(provider, "nc-1", "reserved"))
    fleet = provider.last_fleet_request
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert fleet["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    overrides = [o for c in fleet["LaunchTemplateConfigs"] for o in c["Overrides"]]
    assert {(o["InstanceType"], o["AvailabilityZone"]) for o in overrides} == {
        ("m5.large", "us-east-1a")
    }
    # EC2 names the reservation on the instance (moto does not): read back as reserved.
    desc = aws_world.ec2.describe_instances(InstanceIds=[inst.instance_id])["Reservations"][0][
        "Instances"
    ][0]
    back = provider._instance({**desc, "CapacityReservationId": "cr-0a1b2c"})
    assert (back.offering.capacity_type, back.offering.reservation_id) == (
        "reserved",
        "cr-0a1b2c",
    )
    assert provider._instance(desc).offering.capacity_type == "on-demand"
    stub.deactivate()


def test_a_failed_reserved_launch_counts_the_reservation_full():
    """Karpenter-AWS ``updateUnavailableOfferingsCache``: a reserved launch's errors mark the
    reservation, not the (type, zone, capacity type) offering."""
    from joiner.cloudprovider.reservations import CapacityReservation, with_reserved_offerings
    from joiner.testing.builders import GIB, make_instance_type

    m5 = make_instance_type("m5.large", cpu_m=2000, memory=8 * GIB)
    m5 = with_reserved_offerings(
        [m5], [CapacityReservation("cr-1", "m5.large", "us-east-1a")], {"us-east-1a": "a"}, {}
    )[0]
    chosen = [(m5, o) for o in m5.offerings if o.capacity_type == "reserved"]
    cache = UnavailableOfferings(lambda: 0.0)
    resp = {
        "Errors": [
            {
                "ErrorCode": "ReservationCapacityExceeded",
                "LaunchTemplateAndOverrides": {
                    "Overrides": {"InstanceType": "m5.large", "AvailabilityZone": "us-east-1a"}
                },
            }
        ]
    }
    errors = read_errors(resp, chosen, "reserved", {}, cache, 180.0)
    assert errors.full_reservations == ["cr-1"]
    assert [n for n, _ in errors.ice] == ["m5.large"]
    assert cache.active() == []


def test_the_feature_gate_off_ignores_reservations(aws_world):
    nc = aws_world.node_class(capacity_reservation_selector_terms=(Term(id="cr-0a1b2c"),))
    provider = aws_world.provider([nc], reserved_capacity=False)
    client, stub = _stubbed()  # no response queued: a describe call would fail the test
    with stub:
        provider.reservations = ReservationSource(client, lambda: 0.0)
        types = provider.get_instance_types("default")
    assert not [o for t in types for o in t.offerings if o.capacity_type == "reserved"]


def test_controller_settings_set_the_gate(monkeypatch):
    from joiner.operator import controller_settings as cs

    seen = []
    monkeypatch.setattr(
        "joiner.cloudprovider.aws.new_aws_provider",
        lambda settings, *a, **k: seen.append(settings),
    )
    for raw, want in (
        ({"clusterName": "c"}, True),
        ({"clusterName": "c", "featureGates": {"reservedCapacity": False}}, False),
    ):
        cs.cloud_provider(cs.ControllerSettings.model_validate(raw), "aws", None, None)  # type: ignore[arg-type]
        assert seen.pop().reserved_capacity is want
