"""Launch-template garbage collection on moto, as Karpenter-AWS does it: created once and
reused while used, deleted a TTL after the last use, hydrated from the cluster's tag on
start, all of an EC2NodeClass's deleted with it, another cluster's never touched."""

from __future__ import annotations

import pytest

from joiner.api.requirements import Requirements
from joiner.cloudprovider.types import CreateError, LaunchRequest

TTL_S = 30.0


def _request(provider, name, node_class="default"):
    options = tuple(t for t in provider.get_instance_types(node_class) if t.name == "m5.large")
    return LaunchRequest(name, "general", node_class, Requirements(()), options)


def _templates(ec2):
    out = {}
    for lt in ec2.describe_launch_templates()["LaunchTemplates"]:
        out[lt["LaunchTemplateName"]] = {t["Key"]: t["Value"] for t in lt.get("Tags", [])}
    return out


def _foreign_template(ec2, cluster="other-cluster", node_class="default"):
    """A template Karpenter (or Joiner) of another cluster made, in the same account."""
    ec2.create_launch_template(
        LaunchTemplateName=f"joiner.dev/{cluster}",
        LaunchTemplateData={"InstanceType": "m5.large"},
        TagSpecifications=[
            {
                "ResourceType": "launch-template",
                "Tags": [
                    {"Key": "eks:eks-cluster-name", "Value": cluster},
                    {"Key": "karpenter.k8s.aws/cluster", "Value": cluster},
                    {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": node_class},
                    {"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"},
                ],
            }
        ],
    )
    return f"joiner.dev/{cluster}"


def test_template_is_tagged_reused_while_used_and_deleted_after_the_ttl(aws_world):
    provider = aws_world.provider(launch_template_ttl_s=TTL_S)
    foreign = _foreign_template(aws_world.ec2)
    provider.create(_request(provider, "nc-1"))
    (name,) = set(_templates(aws_world.ec2)) - {foreign}
    tags = _templates(aws_world.ec2)[name]
    assert tags["eks:eks-cluster-name"] == "test-cluster"
    assert tags["karpenter.k8s.aws/cluster"] == "test-cluster"
    assert tags["karpenter.k8s.aws/ec2nodeclass"] == "default"
    assert tags["kubernetes.io/cluster/test-cluster"] == "owned"
    assert tags["team"] == "platform"  # the NodeClass's tags
    # Used again within the TTL: the same template, and its TTL starts again.
    aws_world.clock.advance(TTL_S - 1)
    provider.create(_request(provider, "nc-2"))
    assert provider.launch_templates.created == 1
    aws_world.clock.advance(TTL_S - 1)
    assert provider.launch_templates.collect() == []
    assert name in _templates(aws_world.ec2)
    # Unused for the TTL: the janitor deletes it; the other cluster's stays.
    aws_world.clock.advance(1)
    assert provider.launch_templates.collect() == [name]
    assert set(_templates(aws_world.ec2)) == {foreign}
    assert provider.launch_templates.deleted == 1
    # The next launch creates it again under the same (content hash) name.
    provider.create(_request(provider, "nc-3"))
    assert set(_templates(aws_world.ec2)) == {foreign, name}
    assert provider.launch_templates.created == 2


def test_hydration_collects_what_a_previous_leader_left_and_only_this_clusters(aws_world):
    first = aws_world.provider(launch_template_ttl_s=TTL_S)
    first.create(_request(first, "nc-1"))
    (ours,) = _templates(aws_world.ec2)
    foreign = _foreign_template(aws_world.ec2)
    # A new leader: hydration caches this cluster's template only.
    second = aws_world.provider(launch_template_ttl_s=TTL_S)
    assert second.launch_templates.hydrate() == 1
    assert second.launch_templates.cache.names() == [ours]
    aws_world.clock.advance(TTL_S)
    assert second.launch_templates.collect() == [ours]
    assert set(_templates(aws_world.ec2)) == {foreign}
    # Nothing is cached any more: later passes delete nothing.
    aws_world.clock.advance(10 * TTL_S)
    assert second.launch_templates.collect() == []
    assert set(_templates(aws_world.ec2)) == {foreign}


def test_hydrated_template_used_again_is_kept(aws_world):
    first = aws_world.provider(launch_template_ttl_s=TTL_S)
    first.create(_request(first, "nc-1"))
    (ours,) = _templates(aws_world.ec2)
    second = aws_world.provider(launch_template_ttl_s=TTL_S)
    second.launch_templates.hydrate()
    aws_world.clock.advance(TTL_S - 1)
    second.create(_request(second, "nc-2"))
    assert second.launch_templates.created == 0  # found in the cache, not created
    aws_world.clock.advance(TTL_S - 1)
    assert second.launch_templates.collect() == []
    assert set(_templates(aws_world.ec2)) == {ours}


def test_deleting_a_nodeclass_deletes_its_templates_only(aws_world):
    a = aws_world.node_class("default")
    b = aws_world.node_class("other", detailed_monitoring=True)
    provider = aws_world.provider([a, b])
    provider.create(_request(provider, "nc-a"))
    provider.create(_request(provider, "nc-b", node_class="other"))
    foreign = _foreign_template(aws_world.ec2, node_class="other")
    by_class = {
        tags["karpenter.k8s.aws/ec2nodeclass"]: n
        for n, tags in _templates(aws_world.ec2).items()
        if n != foreign
    }
    assert set(by_class) == {"default", "other"}
    provider.set_node_classes([a])
    assert set(_templates(aws_world.ec2)) == {by_class["default"], foreign}
    assert by_class["other"] not in provider.launch_templates.cache.names()


def test_two_nodeclasses_with_equal_content_never_share_a_template(aws_world):
    a = aws_world.node_class("default")
    b = aws_world.node_class("twin")
    provider = aws_world.provider([a, b])
    provider.create(_request(provider, "nc-a"))
    provider.create(_request(provider, "nc-b", node_class="twin"))
    assert len(_templates(aws_world.ec2)) == 2
    provider.set_node_classes([a])
    provider.create(_request(provider, "nc-a2"))  # default's template is still there
    assert provider.launch_templates.created == 2


def test_template_deleted_behind_our_back_is_created_again(aws_world):
    provider = aws_world.provider()
    provider.create(_request(provider, "nc-1"))
    (name,) = _templates(aws_world.ec2)
    aws_world.ec2.delete_launch_template(LaunchTemplateName=name)
    # The cache still holds it: the fleet cannot find it, and the launch forgets it ...
    with pytest.raises(CreateError, match="NotFound"):
        provider.create(_request(provider, "nc-2"))
    assert name not in provider.launch_templates.cache.names()
    # ... so the next launch creates it again.
    provider.create(_request(provider, "nc-3"))
    assert name in _templates(aws_world.ec2)
    assert provider.launch_templates.created == 2
