"""In-flight IPs: a launch's subnet is charged the IPs its node will use until EC2's own
count is read again (Karpenter-AWS ``pkg/providers/subnet/subnet.go``)."""

from __future__ import annotations

from dataclasses import replace

from joiner.cloudprovider.aws.nodeclass import AMI, ResolvedNodeClass
from joiner.cloudprovider.aws.subnets import InflightIPs
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.instancetype import build_instance_types
from joiner.cloudprovider.types import Subnet

ZONES = (("us-east-1a", "use1-az1"),)


def resolved(free_a: int, free_b: int, at_s: float = 0.0) -> ResolvedNodeClass:
    return ResolvedNodeClass(
        name="default",
        subnets=(
            Subnet("subnet-a", "us-east-1a", "use1-az1"),
            Subnet("subnet-b", "us-east-1a", "use1-az1"),
        ),
        free_ips=(("subnet-a", free_a), ("subnet-b", free_b)),
        security_group_ids=("sg-1",),
        amis=(AMI("ami-1", "amd64"),),
        resolved_at_s=at_s,
    )


def m5_large():
    types = build_instance_types(Catalog.load(), "us-east-1", ZONES)
    return [t for t in types if t.name == "m5.large"]


def fleet(subnet: str) -> dict:
    return {"LaunchTemplateConfigs": [{"Overrides": [{"SubnetId": subnet}]}]}


def launched(subnet: str) -> dict:
    return {"Instances": [{"LaunchTemplateAndOverrides": {"Overrides": {"SubnetId": subnet}}}]}


def test_each_launch_is_charged_its_pods_until_ec2_is_read_again():
    types = m5_large()
    pods = types[0].capacity["pods"]  # 29: m5.large's ENI-limited pods
    ips = InflightIPs()
    r = resolved(pods + 40, 50)
    # subnet-a has the most free IPs and is charged m5.large's pods.
    assert ips.zonal_subnets(r, types, "spot")["us-east-1a"].id == "subnet-a"
    ips.release(
        r, fleet("subnet-a"), launched("subnet-a"), types, {"us-east-1a": r.subnets[0]}, "spot"
    )
    assert ips.free(r, "subnet-a") == 40
    # Now subnet-b (50) beats subnet-a (40 left), though EC2 still says 69 for subnet-a.
    assert ips.zonal_subnets(r, types, "spot")["us-east-1a"].id == "subnet-b"
    assert ips.free(r, "subnet-b") == 50 - pods
    # A fresh DescribeSubnets replaces what was tracked.
    fresh = replace(r, resolved_at_s=60.0)
    assert ips.free(fresh, "subnet-a") == pods + 40


def test_a_subnet_the_fleet_did_not_use_gets_its_ips_back():
    types = m5_large()
    ips = InflightIPs()
    r = resolved(100, 50)
    zonal = ips.zonal_subnets(r, types, "spot")
    assert ips.free(r, "subnet-a") < 100
    ips.release(r, fleet("subnet-a"), None, types, zonal, "spot")  # CreateFleet failed
    assert ips.free(r, "subnet-a") == 100
    zonal = ips.zonal_subnets(r, types, "spot")
    ips.release(r, fleet("subnet-a"), {"Instances": []}, types, zonal, "spot")  # no capacity
    assert ips.free(r, "subnet-a") == 100


def test_no_charge_when_no_type_is_offered_in_the_zone_and_capacity_type():
    ips = InflightIPs()
    r = resolved(100, 50)
    ips.zonal_subnets(r, m5_large(), "reserved")
    assert ips.free(r, "subnet-a") == 100
