"""Shared fixtures for CloudProvider tests: one moto server per session (started only when a
test asks for it) and the harnesses the contract suite runs against."""

from __future__ import annotations

import logging
import urllib.request
from collections.abc import Iterator
from typing import ClassVar

import boto3
import pytest
from moto.server import ThreadedMotoServer

REGION = "us-east-1"


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto server on loopback (real HTTP from boto3), one per test session."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def moto(moto_endpoint: str) -> str:
    """The moto endpoint with every backend reset (a fresh account for each test)."""
    req = urllib.request.Request(moto_endpoint + "/moto-api/reset", method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200
    return moto_endpoint


def moto_session() -> boto3.Session:
    """A boto3 session with fake credentials (moto accepts any)."""
    return boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )


class FakeClock:
    """Seconds since the epoch, moved by hand; ``sleep`` records and advances."""

    def __init__(self, start_s: float = 1_800_000_000.0) -> None:
        self.now_s = start_s
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now_s += seconds


@pytest.fixture(scope="session")
def shared_instance_types(moto_endpoint: str):
    """Instance types discovered from moto once per session (DescribeInstanceTypes over HTTP
    takes seconds; moto's type data does not change between resets)."""
    from joiner.cloudprovider.aws.api import new_clients
    from joiner.cloudprovider.aws.instancetypes import InstanceTypeSource
    from joiner.cloudprovider.catalog import Catalog

    clients = new_clients(REGION, session=moto_session(), endpoint_url=moto_endpoint)
    clock = FakeClock()
    source = InstanceTypeSource(
        clients.ec2,
        REGION,
        clock.now,
        packaged=Catalog.load(),
        refresh_interval_s=float("inf"),
    )
    source.discovery()
    return source


@pytest.fixture(scope="session")
def shared_prices(moto_endpoint: str):
    """Prices with one spot-history fetch from moto per session (moto's spot prices are a
    fixed 0.00001 for every offering, so they never change)."""
    from joiner.cloudprovider.aws.api import new_clients
    from joiner.cloudprovider.aws.pricing import PriceSource
    from joiner.cloudprovider.catalog import Catalog

    clients = new_clients(REGION, session=moto_session(), endpoint_url=moto_endpoint)
    clock = FakeClock()
    source = PriceSource(
        clients.ec2,
        clients.pricing,
        REGION,
        clock.now,
        packaged=Catalog.load(),
        refresh_interval_s=float("inf"),
        pricing_api=False,
    )
    source.refresh()
    return source


class AWSWorld:
    """A moto account with a VPC, two tagged subnets (us-east-1a, us-east-1b), a tagged
    security group and one tagged AMI per architecture, and a factory for providers."""

    #: moto's public AMIs are the same after every reset: look them up once.
    _ami_ids: ClassVar[dict[str, str]] = {}

    def __init__(self, endpoint: str, clients, instance_types, prices) -> None:
        self.endpoint = endpoint
        self.session = moto_session()
        self.clients = clients
        self.ec2 = self.clients.ec2
        self.instance_types = instance_types
        self.prices = prices
        self.clock = FakeClock()
        vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        self.vpc_id = vpc
        self.subnets: dict[str, str] = {}
        for i, zone in enumerate(("us-east-1a", "us-east-1b"), start=1):
            sid = self.ec2.create_subnet(
                VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone
            )["Subnet"]["SubnetId"]
            self.ec2.create_tags(
                Resources=[sid], Tags=[{"Key": "karpenter.sh/discovery", "Value": "test"}]
            )
            self.subnets[zone] = sid
        self.sg = self.ec2.create_security_group(GroupName="nodes", Description="nodes", VpcId=vpc)[
            "GroupId"
        ]
        self.ec2.create_tags(
            Resources=[self.sg], Tags=[{"Key": "karpenter.sh/discovery", "Value": "test"}]
        )
        self.amis: dict[str, str] = {}
        for arch in ("x86_64", "arm64"):
            image = self._ami_ids.get(arch)
            if image is None:
                images = self.ec2.describe_images(
                    Owners=["amazon"],
                    Filters=[
                        {"Name": "architecture", "Values": [arch]},
                        {"Name": "name", "Values": ["al2023-ami-*"]},
                    ],
                )["Images"]
                image = sorted(images, key=lambda i: i["ImageId"])[0]["ImageId"]
                self._ami_ids[arch] = image
            self.ec2.create_tags(Resources=[image], Tags=[{"Key": "joiner/test", "Value": "ami"}])
            self.amis[arch] = image

    def publish_parameter(self, name: str, value: str) -> None:
        """A public ``/aws/service/...`` SSM parameter, as AWS publishes the EKS-optimized
        AMI ids. moto refuses PutParameter under ``/aws`` (as AWS does) and ships none of
        these, so the test writes the in-process server's backend directly."""
        import datetime

        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.ssm.models import Parameter, ssm_backends

        backend = ssm_backends[DEFAULT_ACCOUNT_ID][REGION]
        backend._parameters[name].append(
            Parameter(
                account_id=DEFAULT_ACCOUNT_ID,
                name=name,
                value=value,
                parameter_type="String",
                description=None,
                allowed_pattern=None,
                keyid=None,
                last_modified_date=datetime.datetime.now(datetime.UTC),
                version=1,
                data_type="text",
            )
        )

    def node_class(self, name: str = "default", **overrides):
        from dataclasses import replace

        from joiner.api.objects import AMISelectorTerm, NodeClass, SelectorTerm, Source

        nc = NodeClass(
            name=name,
            source=Source("t.yaml", "EC2NodeClass", name),
            subnet_selector_terms=(SelectorTerm(tags=(("karpenter.sh/discovery", "test"),)),),
            security_group_selector_terms=(
                SelectorTerm(tags=(("karpenter.sh/discovery", "test"),)),
            ),
            ami_selector_terms=(AMISelectorTerm(tags=(("joiner/test", "ami"),)),),
            instance_profile="KarpenterNodeInstanceProfile",
            tags=(("team", "platform"),),
        )
        return replace(nc, **overrides)

    def provider(self, node_classes=None, **settings):
        from joiner.cloudprovider.aws import AWSCloudProvider, AWSSettings, ClusterInfo

        return AWSCloudProvider(
            self.clients,
            AWSSettings(
                region=REGION,
                cluster=ClusterInfo(
                    name="test-cluster",
                    endpoint="https://example.eks.amazonaws.com",
                    ca_bundle="Q0E=",
                    service_cidr="10.100.0.0/16",
                ),
                pricing_api=False,
                **settings,
            ),
            node_classes if node_classes is not None else [self.node_class()],
            now=self.clock.now,
            instance_types=self.instance_types,
            prices=self.prices,
        )


@pytest.fixture(scope="session")
def moto_clients(moto_endpoint: str):
    """boto3 clients on the moto server (creating clients costs a few hundred ms)."""
    from joiner.cloudprovider.aws.api import new_clients

    return new_clients(REGION, session=moto_session(), endpoint_url=moto_endpoint)


@pytest.fixture
def aws_world(moto: str, moto_clients, shared_instance_types, shared_prices) -> AWSWorld:
    """A fresh moto account laid out as ``AWSWorld`` describes."""
    return AWSWorld(moto, moto_clients, shared_instance_types, shared_prices)
