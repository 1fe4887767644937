"""The CloudProvider contract: every adapter (the simulated cloud, and AWS on a moto server)
must behave the same to the provisioner, lifecycle, termination and interruption code.

Each test runs once per adapter through a ``Harness``: how to build the provider, which
NodeClass it knows, and how to make the next launches fail with insufficient capacity.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from botocore.awsrequest import AWSResponse

from joiner.api import labels
from joiner.api.objects import NodeClass, SelectorTerm, Source
from joiner.api.quantity import CPU, MEMORY, MIB
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.types import (
    CloudProvider,
    Instance,
    InstanceType,
    InsufficientCapacityError,
    LaunchRequest,
    NodeClaimNotFoundError,
    SecurityGroup,
    Subnet,
)
from joiner.sim.clock import SimClock

ZONES = ("us-east-1a", "us-east-1b")
TYPES = ("c5.large", "m5.large", "m5.xlarge")


@dataclass
class Harness:
    provider: CloudProvider
    node_class: str
    exhaust_capacity: Callable[[], None]
    #: Make a launched instance look as real EC2 leaves it (moto does not give fleet
    #: instances their launch template's security groups).
    settle: Callable[[Instance], None] = lambda _inst: None

    def types(self) -> tuple[InstanceType, ...]:
        return tuple(
            t for t in self.provider.get_instance_types(self.node_class) if t.name in TYPES
        )

    def request(self, name: str, *reqs: Requirement) -> LaunchRequest:
        return LaunchRequest(
            nodeclaim_name=name,
            nodepool="default",
            node_class=self.node_class,
            requirements=Requirements(reqs),
            instance_types=self.types(),
            tags=(("karpenter.sh/nodeclaim", name), ("karpenter.sh/nodepool", "default")),
        )


def _simulated() -> Harness:
    nc = NodeClass(
        name="default",
        source=Source("t.yaml", "EC2NodeClass", "default"),
        subnet_selector_terms=(SelectorTerm(tags=(("karpenter.sh/discovery", "test"),)),),
        security_group_selector_terms=(SelectorTerm(tags=(("karpenter.sh/discovery", "test"),)),),
    )
    tag = (("karpenter.sh/discovery", "test"),)
    cloud = SimulatedCloudProvider(
        Catalog.load(),
        "us-east-1",
        SimClock(),
        random.Random(1),
        subnets=[
            Subnet("subnet-a", "us-east-1a", "use1-az6", tag),
            Subnet("subnet-b", "us-east-1b", "use1-az1", tag),
        ],
        security_groups=[SecurityGroup("sg-1", tags=tag)],
        node_classes=[nc],
    )
    return Harness(cloud, "default", lambda: cloud.add_launch_failures(None, 100, 1e18))


def _fleet_errors_only(provider) -> tuple[Callable[[], None], Callable[[], object]]:
    """Make every later CreateFleet answer with an InsufficientInstanceCapacity error per
    override and no instance (moto never produces fleet errors). Returns (exhaust, undo): the
    clients are shared by the session, so the hook must be removed after the test."""

    def exhaust() -> None:
        def answer(**_: object):
            sent = provider.last_fleet_request
            errors = [
                {
                    "LaunchTemplateAndOverrides": {"Overrides": o},
                    "Lifecycle": "spot",
                    "ErrorCode": "InsufficientInstanceCapacity",
                    "ErrorMessage": "no capacity",
                }
                for cfg in sent["LaunchTemplateConfigs"]
                for o in cfg["Overrides"]
            ]
            return AWSResponse(None, 200, {}, None), {"Errors": errors, "Instances": []}

        events.register("before-call.ec2.CreateFleet", answer)
        registered.append(answer)

    events = provider.clients.ec2.meta.events
    registered: list[Callable[..., object]] = []
    return exhaust, lambda: [
        events.unregister("before-call.ec2.CreateFleet", a) for a in registered
    ]


@pytest.fixture(params=["simulated", "aws"])
def harness(request) -> Harness:
    if request.param == "simulated":
        return _simulated()
    world = request.getfixturevalue("aws_world")
    provider = world.provider()
    exhaust, undo = _fleet_errors_only(provider)
    request.addfinalizer(undo)
    return Harness(
        provider,
        "default",
        exhaust,
        lambda inst: world.ec2.modify_instance_attribute(
            InstanceId=inst.instance_id, Groups=[world.sg]
        ),
    )


def test_instance_types_shape(harness):
    types = harness.provider.get_instance_types(harness.node_class)
    names = [t.name for t in types]
    assert names == sorted(names) and len(names) > 100
    m5 = next(t for t in types if t.name == "m5.large")
    # Karpenter's worked example (AL2023 defaults): 1,930 m cpu, 6,903 MiB allocatable.
    assert m5.allocatable[CPU] == 1930
    assert m5.allocatable[MEMORY] == 6903 * MIB
    assert m5.label(labels.ARCH) == "amd64"
    assert {(o.zone, o.capacity_type) for o in m5.offerings} == {
        (z, ct) for z in ZONES for ct in ("on-demand", "spot")
    }
    assert all(o.available and o.price_per_hour > 0 for o in m5.offerings)
    assert m5.requirements.get(labels.ZONE).values == frozenset(ZONES)


def test_create_prefers_spot_and_returns_a_resolved_instance(harness):
    inst = harness.provider.create(harness.request("nc-1"))
    assert inst.offering.capacity_type == "spot"
    assert inst.instance_type.name in TYPES
    assert inst.offering.zone in ZONES
    assert inst.provider_id == f"aws:///{inst.offering.zone}/{inst.instance_id}"
    assert inst.instance_id.startswith("i-")
    assert ("karpenter.sh/nodeclaim", "nc-1") in inst.tags


def test_create_on_demand_when_only_on_demand_is_allowed(harness):
    inst = harness.provider.create(
        harness.request("nc-od", Requirement.in_(labels.CAPACITY_TYPE, "on-demand"))
    )
    assert inst.offering.capacity_type == "on-demand"


def test_create_honours_zone_requirement(harness):
    inst = harness.provider.create(
        harness.request("nc-z", Requirement.in_(labels.ZONE, "us-east-1b"))
    )
    assert inst.offering.zone == "us-east-1b"


def test_get_and_list(harness):
    a = harness.provider.create(harness.request("nc-a"))
    b = harness.provider.create(harness.request("nc-b"))
    got = harness.provider.get(a.provider_id)
    assert (got.instance_id, got.instance_type.name, got.offering.zone) == (
        a.instance_id,
        a.instance_type.name,
        a.offering.zone,
    )
    assert got.offering.capacity_type == a.offering.capacity_type
    listed = harness.provider.list()
    assert [i.provider_id for i in listed] == sorted([a.provider_id, b.provider_id])


def test_delete_then_not_found(harness):
    inst = harness.provider.create(harness.request("nc-d"))
    harness.provider.delete(inst.provider_id)
    with pytest.raises(NodeClaimNotFoundError):
        harness.provider.get(inst.provider_id)
    with pytest.raises(NodeClaimNotFoundError):
        harness.provider.delete(inst.provider_id)
    assert harness.provider.list() == []


def test_unknown_instance_is_not_found(harness):
    with pytest.raises(NodeClaimNotFoundError):
        harness.provider.get("aws:///us-east-1a/i-0123456789abcdef0")


def test_insufficient_capacity_raises_typed_error(harness):
    harness.exhaust_capacity()
    with pytest.raises(InsufficientCapacityError):
        harness.provider.create(harness.request("nc-ice"))
    assert harness.provider.list() == []


def test_fresh_instance_has_not_drifted_and_a_gone_one_is_not_found(harness):
    inst = harness.provider.create(harness.request("nc-drift"))
    harness.settle(inst)
    assert harness.provider.is_drifted(inst.provider_id) == ""
    harness.provider.delete(inst.provider_id)
    with pytest.raises(NodeClaimNotFoundError):
        harness.provider.is_drifted(inst.provider_id)
