"""EC2NodeClass status parts as the AWS provider resolves them on a moto server
(karpenter-provider-aws ``pkg/controllers/nodeclass``: subnet, security group, AMI,
instance profile and validation reconcilers)."""

from __future__ import annotations

from joiner.api.objects import AMISelectorTerm, SelectorTerm
from joiner.cloudprovider import nodeclass_status as ncs

ARCH_ONLY = {
    "amd64": (("kubernetes.io/arch", "In", ("amd64",)),),
    "arm64": (("kubernetes.io/arch", "In", ("arm64",)),),
}


def test_a_resolving_nodeclass_reports_every_part_ready(aws_world):
    provider = aws_world.provider()
    st = provider.node_class_status("default")
    assert st is not None
    assert st.subnets is not None
    # Same free addresses in both /24 subnets: by id.
    assert [(sid, zone) for sid, zone, _ in st.subnets] == sorted(
        (sid, zone) for zone, sid in aws_world.subnets.items()
    )
    assert all(zone_id for _, _, zone_id in st.subnets)
    assert st.security_groups == ((aws_world.sg, "nodes"),)
    assert st.amis is not None
    assert {a.id for a in st.amis} == set(aws_world.amis.values())
    by_id = {a.id: a for a in st.amis}
    assert by_id[aws_world.amis["x86_64"]].requirements == ARCH_ONLY["amd64"]
    assert by_id[aws_world.amis["arm64"]].requirements == ARCH_ONLY["arm64"]
    assert st.instance_profile == "KarpenterNodeInstanceProfile"
    assert set(st.conditions) == set(ncs.DEPENDENTS)
    assert all(c.status == "True" and c.reason == kind for kind, c in st.conditions.items())
    assert provider.node_class_status("missing") is None


def test_alias_amis_carry_their_variant_requirements(aws_world):
    for arch, suffix in (("x86_64", "x86_64"), ("arm64", "arm64")):
        aws_world.publish_parameter(
            f"/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/{suffix}/standard/recommended/image_id",
            aws_world.amis[arch],
        )
    nc = aws_world.node_class(ami_selector_terms=(AMISelectorTerm(alias="al2023@latest"),))
    st = aws_world.provider([nc]).node_class_status("default")
    assert st is not None and st.amis
    standard = next(a for a in st.amis if a.id == aws_world.amis["x86_64"])
    # Karpenter's order: by key length, then key.
    assert standard.requirements == (
        ("kubernetes.io/arch", "In", ("amd64",)),
        ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist", ()),
        ("karpenter.k8s.aws/instance-accelerator-count", "DoesNotExist", ()),
    )
    assert standard.name == "al2023@latest"


def test_a_part_that_selects_nothing_is_false_and_validation_waits_on_it(aws_world):
    nc = aws_world.node_class(security_group_selector_terms=(SelectorTerm(tags=(("no", "x"),)),))
    provider = aws_world.provider([nc])
    st = provider.node_class_status("default")
    assert st is not None
    assert st.security_groups == ()
    assert st.conditions[ncs.SECURITY_GROUPS_READY] == ncs.Condition(
        "False", "SecurityGroupsNotFound", "SecurityGroupSelector did not match any SecurityGroups"
    )
    assert st.conditions[ncs.VALIDATION_SUCCEEDED] == ncs.Condition(
        "False",
        "DependenciesNotReady",
        "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution",
    )
    # The other parts are still reported.
    assert st.subnets and st.conditions[ncs.SUBNETS_READY].status == "True"


def test_status_is_kept_for_the_resolution_ttl(aws_world):
    provider = aws_world.provider()
    first = provider.node_class_status("default")
    aws_world.ec2.delete_security_group(GroupId=aws_world.sg)
    assert provider.node_class_status("default") is first
    aws_world.clock.advance(provider.resolver.ttl_s + 1)
    again = provider.node_class_status("default")
    assert again is not None and again.security_groups == ()
    assert again.conditions[ncs.SECURITY_GROUPS_READY].status == "False"


def test_the_ec2nodeclass_status_patch_carries_what_aws_resolved(aws_world):
    """From the provider's parts to the object's status (``cluster/kube/configstatus.py``),
    in Karpenter-AWS's JSON shape; a NodePool of a NodeClass whose security groups match
    nothing is not Ready, with the NodeClass's reason."""
    from tests.cluster.test_config_status import FakeApi, _by_type, _started, _status_of, _writer
    from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness

    h = Harness()
    api = FakeApi()
    _started(h, NODEPOOL, classes=(NODECLASS,))
    provider = aws_world.provider([aws_world.node_class("nc")])
    writer = _writer(h, api, node_class_status=provider.node_class_status)
    writer.sync()
    nc = _status_of(api, "EC2NodeClass")
    assert [s["id"] for s in nc["subnets"]] == sorted(aws_world.subnets.values())
    assert all(set(s) == {"id", "zone", "zoneID"} for s in nc["subnets"])
    assert nc["securityGroups"] == [{"id": aws_world.sg, "name": "nodes"}]
    amd64 = next(a for a in nc["amis"] if a["id"] == aws_world.amis["x86_64"])
    assert amd64["requirements"] == [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
    ]
    assert nc["instanceProfile"] == "KarpenterNodeInstanceProfile"
    assert _by_type(nc)["Ready"] == ("True", "Ready", "")
    assert writer.pool_ready("pool")

    none = aws_world.node_class(
        "nc", security_group_selector_terms=(SelectorTerm(tags=(("no", "x"),)),)
    )
    provider = aws_world.provider([none])
    writer = _writer(h, FakeApi(), node_class_status=provider.node_class_status)
    assert not writer.pool_ready("pool")
    pool = writer.nodepool_status(NODEPOOL)
    assert _by_type(pool)["NodeClassReady"] == (
        "False",
        "UnhealthyDependents",
        "SecurityGroupsReady=False, ValidationSucceeded=False",
    )
