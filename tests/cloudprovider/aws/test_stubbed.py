"""The AWS provider with botocore's Stubber, where moto fakes or lacks behaviour: the exact
CreateFleet request, fleet errors and the unavailable-offerings cache, throttling, spot price
history, the Pricing API, SSM AMI aliases and paginated instance-type discovery."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import ANY, Stubber

from joiner.api import labels
from joiner.api.objects import AMISelectorTerm, NodeClass, SelectorTerm, Source
from joiner.api.quantity import CPU, MEMORY, MIB
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.aws import AWSCloudProvider, AWSSettings, ClusterInfo, new_clients
from joiner.cloudprovider.aws.instancetypes import Discovery, InstanceTypeSource
from joiner.cloudprovider.aws.nodeclass import alias_parameters
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.instancetype import build_instance_types
from joiner.cloudprovider.nodeclass_drift import nodeclass_hash
from joiner.cloudprovider.types import (
    CreateError,
    InsufficientCapacityError,
    LaunchRequest,
    order_by_price,
)

REGION = "us-east-1"
FAMILIES = ("c5", "c6i", "c7i", "m5", "m6i", "m7i", "r5", "r6i", "t3", "c6g")
START_S = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now_s = START_S

    def now(self) -> float:
        return self.now_s


def _discovery() -> Discovery:
    """A fixed snapshot from the packaged catalog (a few families, so tests stay fast)."""
    cat = Catalog.load()
    names = [n for n in cat.offered_types(REGION) if n.split(".")[0] in FAMILIES]
    return Discovery(
        infos={n: cat.info(n) for n in names},
        zones=cat.zones(REGION),
        offered={n: cat.offered_zones(REGION, n) for n in names},
        fetched_at_s=START_S,
    )


NC = NodeClass(
    name="default",
    source=Source("t.yaml", "EC2NodeClass", "default"),
    subnet_selector_terms=(SelectorTerm(tags=(("karpenter.sh/discovery", "c"),)),),
    security_group_selector_terms=(SelectorTerm(id="sg-1"),),
    ami_selector_terms=(AMISelectorTerm(id="ami-x86"),),
    instance_profile="NodeProfile",
)

SUBNETS = [
    # Two subnets in us-east-1a: the one with more free IPs is used.
    {
        "SubnetId": "subnet-a1",
        "AvailabilityZone": "us-east-1a",
        "AvailabilityZoneId": "use1-az6",
        "AvailableIpAddressCount": 10,
        "State": "available",
    },
    {
        "SubnetId": "subnet-a2",
        "AvailabilityZone": "us-east-1a",
        "AvailabilityZoneId": "use1-az6",
        "AvailableIpAddressCount": 200,
        "State": "available",
    },
    {
        "SubnetId": "subnet-b",
        "AvailabilityZone": "us-east-1b",
        "AvailabilityZoneId": "use1-az1",
        "AvailableIpAddressCount": 50,
        "State": "available",
    },
]


class World:
    """A provider on stubbed EC2, SSM and Pricing clients."""

    def __init__(
        self, node_class: NodeClass = NC, pricing_api: bool = False, dry_run: bool = False
    ) -> None:
        session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        self.clients = new_clients(REGION, session=session, read_only=dry_run)
        #: Every EC2 operation the provider asked for, in order (stubbed or not).
        self.ec2_calls: list[str] = []
        self.clients.ec2.meta.events.register_first(
            "before-parameter-build", lambda model, **_: self.ec2_calls.append(model.name)
        )
        self.ec2 = Stubber(self.clients.ec2)
        self.ssm = Stubber(self.clients.ssm)
        self.pricing = Stubber(self.clients.pricing)
        for s in (self.ec2, self.ssm, self.pricing):
            s.activate()
        self.clock = Clock()
        settings = AWSSettings(
            region=REGION,
            cluster=ClusterInfo("c", "https://api", "Q0E="),
            pricing_api=pricing_api,
            dry_run=dry_run,
        )
        source = InstanceTypeSource(
            self.clients.ec2, REGION, self.clock.now, refresh_interval_s=float("inf")
        )
        source.prime(_discovery())
        self.provider = AWSCloudProvider(
            self.clients,
            settings,
            [node_class],
            now=self.clock.now,
            instance_types=source,
        )

    def stub_spot_prices(self, rows):
        self.ec2.add_response(
            "describe_spot_price_history",
            {"SpotPriceHistory": rows},
            {
                "ProductDescriptions": ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
                "StartTime": datetime.fromtimestamp(self.clock.now_s, UTC),
                "MaxResults": 1000,
            },
        )

    def stub_resolution(self):
        self.ec2.add_response(
            "describe_subnets",
            {"Subnets": SUBNETS},
            {"Filters": [{"Name": "tag:karpenter.sh/discovery", "Values": ["c"]}]},
        )
        self.ec2.add_response(
            "describe_security_groups",
            {"SecurityGroups": [{"GroupId": "sg-1"}]},
            {"Filters": [{"Name": "group-id", "Values": ["sg-1"]}]},
        )
        self.ec2.add_response(
            "describe_images",
            {"Images": [{"ImageId": "ami-x86", "Architecture": "x86_64", "State": "available"}]},
            {"ImageIds": ["ami-x86"]},
        )

    def stub_new_launch_template(self):
        self.ec2.add_client_error(
            "describe_launch_templates",
            service_error_code="InvalidLaunchTemplateName.NotFoundException",
            expected_params={"LaunchTemplateNames": [ANY]},
        )
        self.ec2.add_response(
            "create_launch_template",
            {"LaunchTemplate": {"LaunchTemplateName": "joiner.dev/x"}},
            {"LaunchTemplateName": ANY, "LaunchTemplateData": ANY, "TagSpecifications": ANY},
        )

    def request(self, name, types, *reqs):
        options = tuple(t for t in self.provider.get_instance_types("default") if t.name in types)
        return LaunchRequest(name, "general", "default", Requirements(reqs), options)


def _spot_rows(types, zones=("us-east-1a", "us-east-1b"), price=0.03):
    return [
        {
            "InstanceType": t,
            "AvailabilityZone": z,
            "SpotPrice": f"{price + i * 0.001:.4f}",
            "ProductDescription": "Linux/UNIX",
            "Timestamp": datetime(2027, 1, 1, tzinfo=UTC),
        }
        for i, t in enumerate(types)
        for z in zones
    ]


LT_SPEC = {"LaunchTemplateName": "joiner.dev/x", "Version": "$Latest"}


def _fleet_instance(itype, zone, subnet, lifecycle="spot", iid="i-0abc"):
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": {
                "LaunchTemplateName": "joiner.dev/x",
                "Version": "$Latest",
            },
            "Overrides": {"InstanceType": itype, "SubnetId": subnet, "AvailabilityZone": zone},
        },
        "Lifecycle": lifecycle,
        "InstanceIds": [iid],
        "InstanceType": itype,
    }


def _fleet_error(itype, zone, code):
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": {
                "LaunchTemplateName": "joiner.dev/x",
                "Version": "$Latest",
            },
            "Overrides": {"InstanceType": itype, "AvailabilityZone": zone},
        },
        "Lifecycle": "spot",
        "ErrorCode": code,
        "ErrorMessage": "There is no Spot capacity available that matches your request.",
    }


def test_exact_create_fleet_request_for_spot():
    w = World()
    w.stub_resolution()
    w.stub_spot_prices(_spot_rows(["c5.large", "m5.large"]))
    request = w.request("nc-1", ("m5.large", "c5.large"))
    w.stub_new_launch_template()
    tags = [
        {"Key": "eks:eks-cluster-name", "Value": "c"},
        {"Key": "joiner.dev/ec2nodeclass-hash", "Value": nodeclass_hash(NC)},
        {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": "default"},
        {"Key": "karpenter.sh/nodeclaim", "Value": "nc-1"},
        {"Key": "karpenter.sh/nodepool", "Value": "general"},
        {"Key": "kubernetes.io/cluster/c", "Value": "owned"},
    ]
    w.ec2.add_response(
        "create_fleet",
        {
            "FleetId": "fleet-1",
            "Instances": [_fleet_instance("c5.large", "us-east-1b", "subnet-b")],
        },
        {
            "Type": "instant",
            "LaunchTemplateConfigs": [
                {
                    "LaunchTemplateSpecification": {
                        "LaunchTemplateName": ANY,
                        "Version": "$Latest",
                    },
                    "Overrides": [
                        {
                            "InstanceType": "c5.large",
                            "SubnetId": "subnet-a2",
                            "AvailabilityZone": "us-east-1a",
                            "ImageId": "ami-x86",
                            "Priority": 0.03,
                        },
                        {
                            "InstanceType": "c5.large",
                            "SubnetId": "subnet-b",
                            "AvailabilityZone": "us-east-1b",
                            "ImageId": "ami-x86",
                            "Priority": 0.03,
                        },
                        {
                            "InstanceType": "m5.large",
                            "SubnetId": "subnet-a2",
                            "AvailabilityZone": "us-east-1a",
                            "ImageId": "ami-x86",
                            "Priority": 0.031,
                        },
                        {
                            "InstanceType": "m5.large",
                            "SubnetId": "subnet-b",
                            "AvailabilityZone": "us-east-1b",
                            "ImageId": "ami-x86",
                            "Priority": 0.031,
                        },
                    ],
                }
            ],
            "TargetCapacitySpecification": {
                "TotalTargetCapacity": 1,
                "DefaultTargetCapacityType": "spot",
            },
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": tags},
                {"ResourceType": "volume", "Tags": tags},
                {"ResourceType": "fleet", "Tags": tags},
            ],
            "SpotOptions": {"AllocationStrategy": "price-capacity-optimized"},
        },
    )
    inst = w.provider.create(request)
    w.ec2.assert_no_pending_responses()
    assert (inst.instance_id, inst.instance_type.name, inst.offering.zone) == (
        "i-0abc",
        "c5.large",
        "us-east-1b",
    )
    assert inst.offering.capacity_type == "spot" and inst.subnet_id == "subnet-b"
    assert inst.provider_id == "aws:///us-east-1b/i-0abc"


def test_on_demand_request_uses_lowest_price_and_at_most_60_cheapest_types():
    w = World()
    w.stub_resolution()
    w.stub_spot_prices([])
    types = w.provider.get_instance_types("default")
    assert len(types) > 60
    request = LaunchRequest(
        "nc-od",
        "general",
        "default",
        Requirements([Requirement.in_(labels.CAPACITY_TYPE, "on-demand")]),
        tuple(types),
    )
    w.stub_new_launch_template()
    w.ec2.add_response(
        "create_fleet",
        {"Instances": [_fleet_instance("t3.nano", "us-east-1a", "subnet-a2", "on-demand")]},
        {
            "Type": "instant",
            "LaunchTemplateConfigs": ANY,
            "TargetCapacitySpecification": {
                "TotalTargetCapacity": 1,
                "DefaultTargetCapacityType": "on-demand",
            },
            "TagSpecifications": ANY,
            "OnDemandOptions": {"AllocationStrategy": "lowest-price"},
        },
    )
    inst = w.provider.create(request)
    assert inst.offering.capacity_type == "on-demand"
    overrides = w.provider.last_fleet_request["LaunchTemplateConfigs"][0]["Overrides"]
    names = list(dict.fromkeys(o["InstanceType"] for o in overrides))
    reqs = Requirements([Requirement.in_(labels.CAPACITY_TYPE, "on-demand")])
    # The NodeClass has an x86_64 AMI only, so arm64 types cannot launch.
    amd64 = [t for t in types if t.label(labels.ARCH) == "amd64"]
    cheapest = [t.name for t in order_by_price(amd64, reqs) if t.cheapest_price(reqs)][:60]
    assert len(names) == 60 and set(names) == set(cheapest)
    # one subnet per zone: the one with the most free IPs in us-east-1a
    assert {(o["AvailabilityZone"], o["SubnetId"]) for o in overrides} <= {
        ("us-east-1a", "subnet-a2"),
        ("us-east-1b", "subnet-b"),
    }
    assert len(overrides) == len({(o["InstanceType"], o["AvailabilityZone"]) for o in overrides})


def test_spot_preferred_but_filtered_when_dearer_than_on_demand():
    w = World()
    # m5.large spot costs more than c5.large on-demand: filterUnwantedSpot drops it.
    w.stub_resolution()
    w.stub_spot_prices(_spot_rows(["c5.large"], price=0.03) + _spot_rows(["m5.large"], price=0.5))
    request = w.request("nc-1", ("m5.large", "c5.large"))
    w.stub_new_launch_template()
    w.ec2.add_response(
        "create_fleet",
        {"Instances": [_fleet_instance("c5.large", "us-east-1a", "subnet-a2")]},
        {
            "Type": "instant",
            "LaunchTemplateConfigs": ANY,
            "TargetCapacitySpecification": ANY,
            "TagSpecifications": ANY,
            "SpotOptions": {"AllocationStrategy": "price-capacity-optimized"},
        },
    )
    w.provider.create(request)
    overrides = w.provider.last_fleet_request["LaunchTemplateConfigs"][0]["Overrides"]
    assert {o["InstanceType"] for o in overrides} == {"c5.large"}


@pytest.mark.parametrize("code", ["InsufficientInstanceCapacity", "UnfulfillableCapacity"])
def test_fleet_capacity_errors_raise_ice_and_skip_the_offering_for_three_minutes(code):
    w = World()
    w.stub_resolution()
    w.stub_spot_prices(_spot_rows(["c5.large", "m5.large"]))
    request = w.request("nc-1", ("m5.large", "c5.large"))
    w.stub_new_launch_template()
    w.ec2.add_response(
        "create_fleet",
        {
            "Errors": [
                _fleet_error(t, z, code)
                for t in ("c5.large", "m5.large")
                for z in ("us-east-1a", "us-east-1b")
                if (t, z) != ("m5.large", "us-east-1b")
            ]
        },
    )
    with pytest.raises(InsufficientCapacityError) as err:
        w.provider.create(request)
    assert sorted((n, o.zone) for n, o in err.value.offerings) == [
        ("c5.large", "us-east-1a"),
        ("c5.large", "us-east-1b"),
        ("m5.large", "us-east-1a"),
    ]
    # The next launch, even with the same (stale) options, only tries what is left.
    w.ec2.add_response(
        "create_fleet", {"Instances": [_fleet_instance("m5.large", "us-east-1b", "subnet-b")]}
    )
    inst = w.provider.create(request)
    overrides = w.provider.last_fleet_request["LaunchTemplateConfigs"][0]["Overrides"]
    assert [(o["InstanceType"], o["AvailabilityZone"]) for o in overrides] == [
        ("m5.large", "us-east-1b")
    ]
    assert inst.instance_type.name == "m5.large"
    fresh = {t.name: t for t in w.provider.get_instance_types("default")}
    spot = {(o.zone, o.available) for o in fresh["c5.large"].offerings if o.capacity_type == "spot"}
    assert spot == {("us-east-1a", False), ("us-east-1b", False)}
    # After Karpenter's 3-minute TTL the offerings are available again.
    w.clock.now_s += 181
    w.stub_resolution()  # the 1-minute resolution cache expired too
    fresh = {t.name: t for t in w.provider.get_instance_types("default")}
    assert all(o.available for o in fresh["c5.large"].offerings)


def test_partial_fleet_errors_still_return_the_instance():
    w = World()
    w.stub_resolution()
    w.stub_spot_prices(_spot_rows(["c5.large", "m5.large"]))
    request = w.request("nc-1", ("m5.large", "c5.large"))
    w.stub_new_launch_template()
    w.ec2.add_response(
        "create_fleet",
        {
            "Errors": [_fleet_error("c5.large", "us-east-1a", "InsufficientInstanceCapacity")],
            "Instances": [_fleet_instance("m5.large", "us-east-1a", "subnet-a2")],
        },
    )
    inst = w.provider.create(request)
    assert inst.instance_type.name == "m5.large"
    assert w.provider.unavailable.active() == [("c5.large", "us-east-1a", "spot")]


def test_other_fleet_errors_raise_create_error_with_the_code():
    w = World()
    w.stub_resolution()
    w.stub_spot_prices(_spot_rows(["m5.large"]))
    request = w.request("nc-1", ("m5.large",))
    w.stub_new_launch_template()
    w.ec2.add_response(
        "create_fleet",
        {"Errors": [_fleet_error("m5.large", "us-east-1a", "InvalidParameterValue")]},
    )
    with pytest.raises(CreateError) as err:
        w.provider.create(request)
    assert err.value.reason == "InvalidParameterValue"
    assert w.provider.unavailable.active() == []


def test_api_errors_botocore_gives_up_on_raise_create_error_with_the_code():
    # Retries are botocore's (tests/cloudprovider/aws/test_api.py); the Stubber answers
    # before them, so each stubbed error here is the final answer of one CreateFleet call.
    w = World()
    w.stub_resolution()
    w.stub_spot_prices(_spot_rows(["m5.large"]))
    request = w.request("nc-1", ("m5.large",))
    w.stub_new_launch_template()
    for code in ("RequestLimitExceeded", "UnauthorizedOperation"):
        w.ec2.add_client_error("create_fleet", service_error_code=code)
        with pytest.raises(CreateError) as err:
            w.provider.create(request)
        assert err.value.reason == code
    w.ec2.assert_no_pending_responses()


def test_spot_price_history_sets_per_zone_prices_newest_wins():
    w = World()
    w.stub_resolution()
    old = datetime(2027, 1, 1, tzinfo=UTC)
    new = datetime(2027, 1, 2, tzinfo=UTC)
    rows = [
        {
            "InstanceType": "m5.large",
            "AvailabilityZone": "us-east-1a",
            "SpotPrice": "0.0500",
            "ProductDescription": "Linux/UNIX",
            "Timestamp": new,
        },
        {
            "InstanceType": "m5.large",
            "AvailabilityZone": "us-east-1a",
            "SpotPrice": "0.0900",
            "ProductDescription": "Linux/UNIX",
            "Timestamp": old,
        },
    ]
    w.ec2.add_response(
        "describe_spot_price_history",
        {"SpotPriceHistory": rows[:1], "NextToken": "page-2"},
        {
            "ProductDescriptions": ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
            "StartTime": datetime.fromtimestamp(START_S, UTC),
            "MaxResults": 1000,
        },
    )
    w.ec2.add_response(
        "describe_spot_price_history",
        {
            "SpotPriceHistory": [
                *rows[1:],
                {
                    "InstanceType": "m5.large",
                    "AvailabilityZone": "us-east-1b",
                    "SpotPrice": "0.0410",
                    "ProductDescription": "Linux/UNIX (Amazon VPC)",
                    "Timestamp": old,
                },
            ]
        },
        {"ProductDescriptions": ANY, "StartTime": ANY, "MaxResults": 1000, "NextToken": "page-2"},
    )
    m5 = next(t for t in w.provider.get_instance_types("default") if t.name == "m5.large")
    spot = {o.zone: o for o in m5.offerings if o.capacity_type == "spot"}
    assert spot["us-east-1a"].price_per_hour == 0.05 and spot["us-east-1a"].available
    assert spot["us-east-1b"].price_per_hour == 0.041
    # A (type, zone) with no spot price after a successful refresh has no offering.
    c5 = next(t for t in w.provider.get_instance_types("default") if t.name == "c5.large")
    assert not any(o.available for o in c5.offerings if o.capacity_type == "spot")
    assert all(o.available for o in c5.offerings if o.capacity_type == "on-demand")
    w.ec2.assert_no_pending_responses()


def test_spot_history_failure_prices_spot_at_on_demand_until_it_succeeds(caplog):
    w = World()
    w.stub_resolution()
    w.ec2.add_client_error(
        "describe_spot_price_history", service_error_code="UnauthorizedOperation"
    )
    with caplog.at_level(logging.WARNING):
        m5 = next(t for t in w.provider.get_instance_types("default") if t.name == "m5.large")
    assert {o.price_per_hour for o in m5.offerings} == {0.096}
    assert "spot price refresh failed" in caplog.text


def _product(name, usd):
    return json.dumps(
        {
            "product": {"attributes": {"instanceType": name, "regionCode": REGION}},
            "terms": {
                "OnDemand": {
                    "X.Y": {
                        "priceDimensions": {"X.Y.Z": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}
                    }
                }
            },
        }
    )


def test_pricing_api_refreshes_on_demand_prices():
    w = World(pricing_api=True)
    shared = {"ServiceCode": "AmazonEC2", "MaxResults": 100}
    w.pricing.add_response(
        "get_products",
        {
            "PriceList": [_product("m5.large", "0.1100000000"), _product("c5.large", "0.0000")],
            "NextToken": "n2",
        },
        {**shared, "Filters": ANY},
    )
    w.pricing.add_response(
        "get_products",
        {"PriceList": [_product("c5.large", "0.0900")]},
        {**shared, "Filters": ANY, "NextToken": "n2"},
    )
    w.pricing.add_response(
        "get_products",
        {"PriceList": [_product("m5.metal", "4.8")]},
        {**shared, "Filters": ANY},
    )
    w.stub_resolution()
    w.stub_spot_prices([])
    types = {t.name: t for t in w.provider.get_instance_types("default")}
    w.pricing.assert_no_pending_responses()

    def od(name):
        return next(
            o.price_per_hour for o in types[name].offerings if o.capacity_type == "on-demand"
        )

    assert (od("m5.large"), od("c5.large"), od("m5.metal")) == (0.11, 0.09, 4.8)
    assert od("m5.xlarge") == 0.192  # not in the answer: the packaged table's price stays


def test_pricing_filters_match_karpenter():
    w = World(pricing_api=True)
    filters = []
    for tenancy, family in (
        ("Shared", "Compute Instance"),
        ("Dedicated", "Compute Instance (bare metal)"),
    ):
        f = [
            {"Type": "TERM_MATCH", "Field": k, "Value": v}
            for k, v in (
                ("regionCode", REGION),
                ("serviceCode", "AmazonEC2"),
                ("preInstalledSw", "NA"),
                ("operatingSystem", "Linux"),
                ("capacitystatus", "Used"),
                ("marketoption", "OnDemand"),
                ("tenancy", tenancy),
                ("productFamily", family),
            )
        ]
        filters.append(f)
        w.pricing.add_response(
            "get_products",
            {"PriceList": []},
            {"ServiceCode": "AmazonEC2", "Filters": f, "MaxResults": 100},
        )
    assert w.provider.prices.refresh_on_demand() == 0
    w.pricing.assert_no_pending_responses()


def test_pricing_api_failure_keeps_the_packaged_table(caplog):
    w = World(pricing_api=True)
    w.pricing.add_client_error("get_products", service_error_code="AccessDeniedException")
    w.stub_resolution()
    w.stub_spot_prices([])
    with caplog.at_level(logging.WARNING):
        m5 = next(t for t in w.provider.get_instance_types("default") if t.name == "m5.large")
    assert next(o for o in m5.offerings if o.capacity_type == "on-demand").price_per_hour == 0.096
    assert "on-demand price refresh failed" in caplog.text


def test_ami_alias_resolves_through_ssm_per_architecture():
    nc = NodeClass(
        name="default",
        source=Source("t.yaml", "EC2NodeClass", "default"),
        subnet_selector_terms=(SelectorTerm(id="subnet-b"),),
        security_group_selector_terms=(SelectorTerm(name="nodes"),),
        ami_selector_terms=(AMISelectorTerm(alias="al2023@latest"),),
        role="KarpenterNodeRole",
    )
    w = World(node_class=nc)
    w.ec2.add_response(
        "describe_subnets",
        {"Subnets": SUBNETS[2:]},
        {"Filters": [{"Name": "subnet-id", "Values": ["subnet-b"]}]},
    )
    w.ec2.add_response(
        "describe_security_groups",
        {"SecurityGroups": [{"GroupId": "sg-9"}]},
        {"Filters": [{"Name": "group-name", "Values": ["nodes"]}]},
    )
    w.ssm.add_response(
        "get_parameter",
        {"Parameter": {"Value": "ami-al2023-x86"}},
        {
            "Name": "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/"
            "recommended/image_id"
        },
    )
    for arch, variant in (
        ("x86_64", "nvidia"),
        ("x86_64", "neuron"),
        ("arm64", "standard"),
        ("arm64", "nvidia"),
    ):
        w.ssm.add_client_error(
            "get_parameter",
            service_error_code="ParameterNotFound",
            expected_params={
                "Name": f"/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/{arch}/"
                f"{variant}/recommended/image_id"
            },
        )
    resolved = w.provider.resolve("default")
    assert [(a.id, a.architecture, a.variants) for a in resolved.amis] == [
        ("ami-al2023-x86", "amd64", ("standard",))
    ]
    assert resolved.security_group_ids == ("sg-9",)
    w.ssm.assert_no_pending_responses()


def test_alias_parameter_paths():
    """Karpenter-AWS's SSM paths per family, variants included (``amifamily``)."""
    br = alias_parameters("bottlerocket@latest", "1.30")
    assert [(p.architecture, p.variants, p.name) for p in br] == [
        (
            "amd64",
            ("standard", "neuron"),
            "/aws/service/bottlerocket/aws-k8s-1.30/x86_64/latest/image_id",
        ),
        ("arm64", ("standard",), "/aws/service/bottlerocket/aws-k8s-1.30/arm64/latest/image_id"),
        (
            "amd64",
            ("nvidia",),
            "/aws/service/bottlerocket/aws-k8s-1.30-nvidia/x86_64/latest/image_id",
        ),
        (
            "arm64",
            ("nvidia",),
            "/aws/service/bottlerocket/aws-k8s-1.30-nvidia/arm64/latest/image_id",
        ),
    ]
    assert alias_parameters("bottlerocket@v1.20.3", "1.30")[0].name == (
        "/aws/service/bottlerocket/aws-k8s-1.30/x86_64/1.20.3/image_id"
    )
    al2023 = alias_parameters("al2023@v20240807", "1.30")
    assert [(p.architecture, p.variants) for p in al2023] == [
        ("amd64", ("standard",)),
        ("amd64", ("nvidia",)),
        ("amd64", ("neuron",)),
        ("arm64", ("standard",)),
        ("arm64", ("nvidia",)),
    ]
    assert al2023[4].name == (
        "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/nvidia/"
        "amazon-eks-node-al2023-arm64-nvidia-1.30-v20240807/image_id"
    )
    assert alias_parameters("al2023@latest", "1.30")[2].name == (
        "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/neuron/recommended/image_id"
    )
    al2 = alias_parameters("al2@latest", "1.29")
    assert [(p.architecture, p.variants, p.name) for p in al2] == [
        (
            "amd64",
            ("standard",),
            "/aws/service/eks/optimized-ami/1.29/amazon-linux-2/recommended/image_id",
        ),
        (
            "amd64",
            ("nvidia", "neuron"),
            "/aws/service/eks/optimized-ami/1.29/amazon-linux-2-gpu/recommended/image_id",
        ),
        (
            "arm64",
            ("standard",),
            "/aws/service/eks/optimized-ami/1.29/amazon-linux-2-arm64/recommended/image_id",
        ),
    ]
    assert alias_parameters("al2@v20240807", "1.29")[1].name == (
        "/aws/service/eks/optimized-ami/1.29/amazon-linux-2-gpu/amazon-eks-gpu-node-1.29-v20240807/image_id"
    )


M5_LARGE = {
    "InstanceType": "m5.large",
    "CurrentGeneration": True,
    "BareMetal": False,
    "Hypervisor": "nitro",
    "SupportedUsageClasses": ["on-demand", "spot"],
    "ProcessorInfo": {"SupportedArchitectures": ["x86_64"], "Manufacturer": "Intel"},
    "VCpuInfo": {"DefaultVCpus": 2},
    "MemoryInfo": {"SizeInMiB": 8192},
    "NetworkInfo": {
        "MaximumNetworkInterfaces": 3,
        "Ipv4AddressesPerInterface": 10,
        "DefaultNetworkCardIndex": 0,
        "NetworkCards": [{"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 3}],
    },
}
ZZ_LARGE = {  # a type the packaged catalog does not know: max pods from the API
    **M5_LARGE,
    "InstanceType": "zz9.large",
    "ProcessorInfo": {"SupportedArchitectures": ["arm64"], "Manufacturer": "AWS"},
    "MemoryInfo": {"SizeInMiB": 4096},
    "NetworkInfo": {"MaximumNetworkInterfaces": 4, "Ipv4AddressesPerInterface": 15},
}


def test_instance_type_discovery_is_paginated_and_cached():
    w = World()
    clock = w.clock
    filters = [
        {"Name": "supported-virtualization-type", "Values": ["hvm"]},
        {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
    ]
    w.ec2.add_response(
        "describe_instance_types",
        {"InstanceTypes": [M5_LARGE], "NextToken": "t2"},
        {"Filters": filters, "MaxResults": 100},
    )
    w.ec2.add_response(
        "describe_instance_types",
        {"InstanceTypes": [ZZ_LARGE]},
        {"Filters": filters, "MaxResults": 100, "NextToken": "t2"},
    )
    w.ec2.add_response(
        "describe_instance_type_offerings",
        {
            "InstanceTypeOfferings": [
                {"InstanceType": "m5.large", "LocationType": "availability-zone", "Location": z}
                for z in ("us-east-1a", "us-east-1b")
            ]
            + [
                {
                    "InstanceType": "zz9.large",
                    "LocationType": "availability-zone",
                    "Location": "us-east-1a",
                }
            ]
        },
        {"LocationType": "availability-zone", "MaxResults": 1000},
    )
    w.ec2.add_response(
        "describe_availability_zones",
        {
            "AvailabilityZones": [
                {"ZoneName": "us-east-1a", "ZoneId": "use1-az6", "ZoneType": "availability-zone"},
                {"ZoneName": "us-east-1b", "ZoneId": "use1-az1", "ZoneType": "availability-zone"},
                {
                    "ZoneName": "us-east-1-bos-1a",
                    "ZoneId": "use1-bos1-az1",
                    "ZoneType": "local-zone",
                },
            ]
        },
    )
    source = InstanceTypeSource(w.clients.ec2, REGION, clock.now, packaged=Catalog.load())
    d = source.discovery()
    assert source.discovery() is d and source.fetches == 1  # cached within 5 minutes
    w.ec2.assert_no_pending_responses()
    assert d.zones == [("us-east-1a", "use1-az6"), ("us-east-1b", "use1-az1")]
    assert d.offered == {"m5.large": ("us-east-1a", "us-east-1b"), "zz9.large": ("us-east-1a",)}
    assert d.infos["zz9.large"].max_pods_eni == 4 * 14 + 2
    assert d.infos["zz9.large"].architecture == "arm64"
    cat = source.catalog({"m5.large": 0.096, "zz9.large": 0.05}, {})
    built = {t.name: t for t in build_instance_types(cat, REGION, d.zones)}
    assert built["m5.large"].allocatable[CPU] == 1930
    assert built["m5.large"].allocatable[MEMORY] == 6903 * MIB
    zz = built["zz9.large"]
    assert [(o.zone, o.capacity_type, o.available) for o in zz.offerings if o.available] == [
        ("us-east-1a", "on-demand", True)
    ]
    # After the refresh interval the next use fetches again; a failure keeps the old data.
    clock.now_s += 301
    w.ec2.add_client_error("describe_instance_types", service_error_code="UnauthorizedOperation")
    assert source.discovery() is d
