"""The AWS provider against a moto server (real HTTP from boto3): launch, describe, tags,
launch templates, terminate, drift, and the EventBridge -> SQS -> poller round trip."""

from __future__ import annotations

import base64
import json
from dataclasses import replace

import boto3
import pytest
import yaml

from joiner.api import labels
from joiner.api.manifests.userdata import mime_parts
from joiner.api.objects import AMISelectorTerm, SelectorTerm
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.aws import AWSError, InterruptionQueue
from joiner.cloudprovider.events import SPOT_INTERRUPTION, STATE_CHANGE, CloudEvent
from joiner.cloudprovider.types import (
    InsufficientCapacityError,
    LaunchRequest,
    NodeClassNotReadyError,
)

REGION = "us-east-1"


def _request(provider, name="nc-1", types=("m5.large", "c5.large"), *reqs, node_class="default"):
    options = tuple(t for t in provider.get_instance_types(node_class) if t.name in types)
    return LaunchRequest(
        nodeclaim_name=name,
        nodepool="general",
        node_class=node_class,
        requirements=Requirements(reqs),
        instance_types=options,
        tags=(("karpenter.sh/nodeclaim", name), ("karpenter.sh/nodepool", "general")),
    )


def _describe(ec2, instance_id):
    return ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]


def test_launch_tags_and_launch_template(aws_world):
    provider = aws_world.provider()
    inst = provider.create(_request(provider))
    desc = _describe(aws_world.ec2, inst.instance_id)
    tags = {t["Key"]: t["Value"] for t in desc["Tags"]}
    assert len(tags.pop("joiner.dev/ec2nodeclass-hash")) == 16
    assert tags == {
        "karpenter.sh/nodepool": "general",
        "karpenter.sh/nodeclaim": "nc-1",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "kubernetes.io/cluster/test-cluster": "owned",
        "eks:eks-cluster-name": "test-cluster",
        "team": "platform",
    }
    assert desc["InstanceLifecycle"] == "spot"
    assert desc["SubnetId"] == aws_world.subnets[inst.offering.zone]
    assert desc["ImageId"] == aws_world.amis["x86_64"]
    assert desc["InstanceType"] == inst.instance_type.name

    templates = aws_world.ec2.describe_launch_templates()["LaunchTemplates"]
    assert len(templates) == 1
    name = templates[0]["LaunchTemplateName"]
    assert name.startswith("joiner.dev/")
    version = aws_world.ec2.describe_launch_template_versions(LaunchTemplateName=name)
    data = version["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["ImageId"] == aws_world.amis["x86_64"]
    assert data["SecurityGroupIds"] == [aws_world.sg]
    assert data["IamInstanceProfile"] == {"Name": "KarpenterNodeInstanceProfile"}
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    assert data["BlockDeviceMappings"][0]["DeviceName"] == "/dev/xvda"
    assert data["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == 20
    assert data["BlockDeviceMappings"][0]["Ebs"]["VolumeType"] == "gp3"
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "application/node.eks.aws" in user_data
    node_config = yaml.safe_load(mime_parts(user_data)[-1].body)
    assert node_config["spec"]["cluster"]["name"] == "test-cluster"
    assert node_config["spec"]["kubelet"]["flags"] == [
        '--node-labels="karpenter.sh/nodepool=general"'
    ]
    assert node_config["spec"]["kubelet"]["config"]["registerWithTaints"] == [
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
    ]


def test_launch_template_reused_by_content_hash(aws_world):
    provider = aws_world.provider()
    provider.create(_request(provider, "nc-1"))
    provider.create(_request(provider, "nc-2"))
    assert provider.launch_templates.created == 1
    # A new provider (another Joiner, or a restart) finds the template instead of creating it.
    again = aws_world.provider()
    again.create(_request(again, "nc-3"))
    assert again.launch_templates.created == 0
    assert len(aws_world.ec2.describe_launch_templates()["LaunchTemplates"]) == 1
    # Different content (another NodeClass setting) is another template.
    changed = aws_world.provider([aws_world.node_class(detailed_monitoring=True)])
    changed.create(_request(changed, "nc-4"))
    assert len(aws_world.ec2.describe_launch_templates()["LaunchTemplates"]) == 2


def test_arm64_type_gets_the_arm64_ami(aws_world):
    provider = aws_world.provider()
    inst = provider.create(_request(provider, "nc-arm", ("c6g.large",)))
    assert inst.instance_type.label(labels.ARCH) == "arm64"
    assert _describe(aws_world.ec2, inst.instance_id)["ImageId"] == aws_world.amis["arm64"]


def test_on_demand_launch_has_no_spot_lifecycle(aws_world):
    provider = aws_world.provider()
    inst = provider.create(
        _request(
            provider, "nc-od", ("m5.large",), Requirement.in_(labels.CAPACITY_TYPE, "on-demand")
        )
    )
    assert inst.offering.capacity_type == "on-demand"
    assert "InstanceLifecycle" not in _describe(aws_world.ec2, inst.instance_id)


def test_list_ignores_instances_joiner_did_not_launch(aws_world):
    provider = aws_world.provider()
    mine = provider.create(_request(provider))
    aws_world.ec2.run_instances(
        ImageId=aws_world.amis["x86_64"], MinCount=1, MaxCount=1, InstanceType="m5.large"
    )
    assert [i.instance_id for i in provider.list()] == [mine.instance_id]


def test_terminate_is_visible_in_ec2(aws_world):
    provider = aws_world.provider()
    inst = provider.create(_request(provider))
    provider.delete(inst.provider_id)
    assert _describe(aws_world.ec2, inst.instance_id)["State"]["Name"] in (
        "shutting-down",
        "terminated",
    )


def test_node_class_selectors_by_id_and_name(aws_world):
    nc = aws_world.node_class(
        subnet_selector_terms=(SelectorTerm(id=aws_world.subnets["us-east-1b"]),),
        security_group_selector_terms=(SelectorTerm(name="nodes"),),
        ami_selector_terms=(AMISelectorTerm(id=aws_world.amis["x86_64"]),),
    )
    provider = aws_world.provider([nc])
    resolved = provider.resolve("default")
    assert [s.id for s in resolved.subnets] == [aws_world.subnets["us-east-1b"]]
    assert resolved.security_group_ids == (aws_world.sg,)
    assert [(a.id, a.architecture) for a in resolved.amis] == [(aws_world.amis["x86_64"], "amd64")]
    inst = provider.create(_request(provider))
    assert inst.offering.zone == "us-east-1b"


def test_node_class_that_selects_nothing_is_not_ready(aws_world):
    nc = aws_world.node_class(subnet_selector_terms=(SelectorTerm(tags=(("nope", "x"),)),))
    provider = aws_world.provider([nc])
    with pytest.raises(NodeClassNotReadyError, match="no subnet"):
        provider.get_instance_types("default")
    with pytest.raises(NodeClassNotReadyError, match="does not exist"):
        provider.get_instance_types("missing")


def test_drift_on_ami_subnet_and_security_group(aws_world):
    provider = aws_world.provider()
    inst = provider.create(
        _request(provider, "nc-1", ("m5.large",), Requirement.in_(labels.ZONE, "us-east-1a"))
    )
    # moto does not apply the launch template's security groups to fleet instances (EC2
    # does): set them as EC2 would have.
    aws_world.ec2.modify_instance_attribute(InstanceId=inst.instance_id, Groups=[aws_world.sg])
    assert provider.is_drifted(inst.provider_id) == ""
    base = provider.node_classes["default"]

    other_sg = aws_world.ec2.create_security_group(
        GroupName="other", Description="other", VpcId=aws_world.vpc_id
    )["GroupId"]
    provider.node_classes["default"] = replace(
        base, security_group_selector_terms=(SelectorTerm(id=other_sg),)
    )
    aws_world.clock.advance(61)  # past the 1-minute resolution cache
    assert provider.is_drifted(inst.provider_id) == "SecurityGroupDrift"

    provider.node_classes["default"] = replace(
        base, subnet_selector_terms=(SelectorTerm(id=aws_world.subnets["us-east-1b"]),)
    )
    aws_world.clock.advance(61)
    assert provider.is_drifted(inst.provider_id) == "SubnetDrift"

    provider.node_classes["default"] = replace(
        base,
        ami_selector_terms=(
            AMISelectorTerm(id=aws_world.amis["arm64"]),
            AMISelectorTerm(name="al2023-ami-2023*-x86_64", owner="amazon"),
        ),
    )
    aws_world.clock.advance(61)
    new_ami = next(a for a in provider.resolve("default").amis if a.architecture == "amd64")
    assert new_ami is not None and new_ami.id != aws_world.amis["x86_64"]
    assert provider.is_drifted(inst.provider_id) == "AMIDrift"


def test_static_drift_on_user_data_and_tags_but_not_on_selectors(aws_world):
    """Karpenter-AWS ``areStaticFieldsDrifted``: hashed fields drift, selector terms do not
    (their dynamic checks decide), and the hash survives on the instance's tags."""
    provider = aws_world.provider()
    inst = provider.create(
        _request(provider, "nc-1", ("m5.large",), Requirement.in_(labels.ZONE, "us-east-1a"))
    )
    aws_world.ec2.modify_instance_attribute(InstanceId=inst.instance_id, Groups=[aws_world.sg])
    base = provider.node_classes["default"]
    # Same subnets picked another way: no static drift, no dynamic drift.
    provider.node_classes["default"] = replace(
        base,
        subnet_selector_terms=tuple(SelectorTerm(id=i) for i in aws_world.subnets.values()),
    )
    aws_world.clock.advance(61)
    assert provider.is_drifted(inst.provider_id) == ""
    provider.node_classes["default"] = replace(base, user_data="#!/bin/bash\necho changed\n")
    assert provider.is_drifted(inst.provider_id) == "NodeClassDrift"
    provider.node_classes["default"] = replace(base, tags=(*base.tags, ("team", "payments")))
    assert provider.is_drifted(inst.provider_id) == "NodeClassDrift"
    # A restarted controller (a new provider) still sees it: the hash is an instance tag.
    again = aws_world.provider([provider.node_classes["default"]])
    assert again.is_drifted(inst.provider_id) == "NodeClassDrift"


# -- the interruption queue -------------------------------------------------------------------


def _queue_with_rules(aws_world):
    sqs = aws_world.clients.sqs
    url = sqs.create_queue(QueueName="test-cluster")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events = aws_world.session.client("events", region_name=REGION, endpoint_url=aws_world.endpoint)
    rules = {
        "spot": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
        "rebalance": {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Instance Rebalance Recommendation"],
        },
        "state": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
        "health": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    }
    for name, pattern in rules.items():
        events.put_rule(Name=f"joiner-{name}", EventPattern=json.dumps(pattern))
        events.put_targets(Rule=f"joiner-{name}", Targets=[{"Id": "queue", "Arn": arn}])
    return sqs, url, events


def _messages_left(sqs, url):
    attrs = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(
        attrs["ApproximateNumberOfMessagesNotVisible"]
    )


def test_eventbridge_to_sqs_to_handler_round_trip(aws_world):
    provider = aws_world.provider()
    inst = provider.create(_request(provider))
    sqs, url, events = _queue_with_rules(aws_world)
    events.put_events(
        Entries=[
            {
                "Source": "aws.ec2",
                "DetailType": "EC2 Spot Instance Interruption Warning",
                "Detail": json.dumps(
                    {"instance-id": inst.instance_id, "instance-action": "terminate"}
                ),
                "Resources": [f"arn:aws:ec2:{REGION}:123456789012:instance/{inst.instance_id}"],
            },
            {
                "Source": "aws.ec2",
                "DetailType": "EC2 Instance State-change Notification",
                "Detail": json.dumps({"instance-id": inst.instance_id, "state": "stopping"}),
            },
            {  # matches no rule: never reaches the queue
                "Source": "my.app",
                "DetailType": "Something",
                "Detail": "{}",
            },
        ]
    )
    got: list[CloudEvent] = []
    queue = InterruptionQueue.from_name(
        sqs,
        "test-cluster",
        got.append,
        sleep=aws_world.clock.sleep,
        wait_time_s=1,
    )
    assert queue.queue_url == url
    received = 0
    polls = 0
    while received < 2 and polls < 5:
        received += queue.poll_once()
        polls += 1
    assert sorted((e.kind, e.instance_ids) for e in got) == [
        (SPOT_INTERRUPTION, (inst.instance_id,)),
        (STATE_CHANGE, (inst.instance_id,)),
    ]
    assert next(e for e in got if e.kind == SPOT_INTERRUPTION).action == "terminate"
    assert queue.handled == 2
    assert _messages_left(sqs, url) == 0


def test_malformed_and_ignored_messages_are_deleted_and_the_loop_goes_on(aws_world):
    sqs, url, events = _queue_with_rules(aws_world)
    sqs.send_message(QueueUrl=url, MessageBody="this is not json")
    sqs.send_message(
        QueueUrl=url,
        MessageBody=json.dumps(
            {
                "source": "aws.ec2",
                "detail-type": "EC2 Spot Instance Interruption Warning",
                "detail": {},
            }
        ),
    )
    events.put_events(
        Entries=[
            {  # a state Joiner ignores
                "Source": "aws.ec2",
                "DetailType": "EC2 Instance State-change Notification",
                "Detail": json.dumps({"instance-id": "i-1", "state": "running"}),
            },
            {
                "Source": "aws.ec2",
                "DetailType": "EC2 Instance Rebalance Recommendation",
                "Detail": json.dumps({"instance-id": "i-2"}),
            },
        ]
    )
    got: list[CloudEvent] = []
    queue = InterruptionQueue(
        sqs,
        url,
        got.append,
        sleep=aws_world.clock.sleep,
        wait_time_s=1,
    )
    polls = []
    queue.run(
        lambda: (
            queue.malformed + queue.ignored + queue.handled >= 4
            or len(polls) >= 6
            or bool(polls.append(1))
        )
    )
    assert [(e.kind, e.instance_ids) for e in got] == [("rebalanceRecommendation", ("i-2",))]
    assert (queue.malformed, queue.ignored, queue.handled) == (2, 1, 1)
    assert _messages_left(sqs, url) == 0


def _spot_warning(event_id: str, instance_id: str) -> str:
    """An EventBridge Spot interruption warning as SQS delivers it (the message body)."""
    return json.dumps(
        {
            "version": "0",
            "id": event_id,
            "source": "aws.ec2",
            "detail-type": "EC2 Spot Instance Interruption Warning",
            "detail": {"instance-id": instance_id, "instance-action": "terminate"},
        }
    )


def test_handler_failure_leaves_the_message_for_redelivery(aws_world):
    sqs, url, _ = _queue_with_rules(aws_world)
    sqs.send_message(QueueUrl=url, MessageBody=_spot_warning("e-1", "i-9"))
    calls: list[CloudEvent] = []

    def flaky(event: CloudEvent) -> None:
        calls.append(event)
        if len(calls) == 1:
            raise RuntimeError("cluster API unavailable")

    queue = InterruptionQueue(
        sqs,
        url,
        flaky,
        sleep=aws_world.clock.sleep,
        wait_time_s=1,
        visibility_timeout_s=0,
    )
    assert queue.poll_once() == 1
    assert (queue.failed, queue.handled) == (1, 0)
    assert queue.poll_once() == 1
    assert (queue.failed, queue.handled) == (1, 1)
    assert [e.event_id for e in calls] == ["e-1", "e-1"]
    assert _messages_left(sqs, url) == 0


def test_a_dry_run_leaves_messages_on_the_queue_and_handles_each_once(aws_world):
    """Shadow mode sends no DeleteMessage: the message comes back after its visibility
    timeout (0 here) and is not handled again."""
    sqs, url, _ = _queue_with_rules(aws_world)
    sqs.send_message(QueueUrl=url, MessageBody=_spot_warning("e-2", "i-8"))
    got: list[CloudEvent] = []
    deleted: list[int] = []
    queue = InterruptionQueue(
        sqs,
        url,
        got.append,
        sleep=aws_world.clock.sleep,
        wait_time_s=1,
        visibility_timeout_s=0,
        on_deleted=lambda: deleted.append(1),
        dry_run=True,
    )
    assert queue.poll_once() == 1
    assert queue.poll_once() == 1  # received again: still on the queue
    assert [e.event_id for e in got] == ["e-2"] and queue.handled == 1
    assert deleted == []
    assert _messages_left(sqs, url) == 1


def test_receive_failure_is_logged_and_retried(aws_world):
    sqs = aws_world.clients.sqs
    queue = InterruptionQueue(
        sqs,
        aws_world.endpoint + "/123456789012/missing",
        lambda e: None,
        sleep=aws_world.clock.sleep,
        wait_time_s=1,
        error_backoff_s=7.0,
    )
    with pytest.raises(AWSError):
        queue.poll_once()
    stops = iter([False, False, True])
    queue.run(lambda: next(stops))
    assert aws_world.clock.sleeps == [7.0, 7.0]


def test_new_aws_provider_builds_real_clients(moto_endpoint):
    from joiner.cloudprovider.aws import AWSSettings, ClusterInfo, new_aws_provider

    session = boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    provider = new_aws_provider(
        AWSSettings(region="eu-west-1", cluster=ClusterInfo("c")),
        [],
        endpoint_url=moto_endpoint,
        session=session,
    )
    assert provider.clients.ec2.meta.region_name == "eu-west-1"
    assert provider.clients.pricing.meta.region_name == "eu-central-1"
    assert provider.list() == []


def _x86_images(ec2, count):
    images = ec2.describe_images(
        Owners=["amazon"],
        Filters=[
            {"Name": "architecture", "Values": ["x86_64"]},
            {"Name": "name", "Values": ["al2023-ami-*"]},
        ],
    )["Images"]
    return sorted(i["ImageId"] for i in images)[:count]


def test_alias_launches_gpu_and_neuron_types_with_their_variant_ami(aws_world):
    """``al2023@latest``: the NVIDIA image for a GPU type, the Neuron image for an
    Inferentia type, the standard image otherwise (SSM paths as Karpenter-AWS reads them);
    one CreateFleet gets one launch template per image, never a mixed one."""
    standard, nvidia, neuron = _x86_images(aws_world.ec2, 3)
    base = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64"
    for variant, image in (("standard", standard), ("nvidia", nvidia), ("neuron", neuron)):
        aws_world.publish_parameter(f"{base}/{variant}/recommended/image_id", image)
    nc = aws_world.node_class(ami_selector_terms=(AMISelectorTerm(alias="al2023@latest"),))
    provider = aws_world.provider([nc])
    resolved = provider.resolve("default")
    assert {(a.id, a.variants) for a in resolved.amis} == {
        (standard, ("standard",)),
        (nvidia, ("nvidia",)),
        (neuron, ("neuron",)),
    }
    types = {t.name: t for t in provider.get_instance_types("default")}
    assert resolved.ami_for(types["m5.large"]).id == standard
    assert resolved.ami_for(types["g4dn.xlarge"]).id == nvidia
    assert resolved.ami_for(types["inf2.xlarge"]).id == neuron

    gpu = provider.create(_request(provider, "gpu-1", ("g4dn.xlarge",)))
    assert _describe(aws_world.ec2, gpu.instance_id)["ImageId"] == nvidia
    inf = provider.create(_request(provider, "inf-1", ("inf2.xlarge",)))
    assert _describe(aws_world.ec2, inf.instance_id)["ImageId"] == neuron
    # Each runs the image that serves its type: not AMI drift (moto does not give fleet
    # instances their template's security groups, so SecurityGroupDrift may follow).
    assert provider.is_drifted(gpu.provider_id) != "AMIDrift"
    assert provider.is_drifted(inf.provider_id) != "AMIDrift"

    # (A standard type beside a GPU one would drop the GPU one: the exotic-type filter.)
    provider.create(_request(provider, "mixed", ("g4dn.xlarge", "inf2.xlarge")))
    configs = provider.last_fleet_request["LaunchTemplateConfigs"]
    per_config = [{(o["InstanceType"], o["ImageId"]) for o in c["Overrides"]} for c in configs]
    assert sorted(per_config, key=sorted) == sorted(
        [{("inf2.xlarge", neuron)}, {("g4dn.xlarge", nvidia)}], key=sorted
    )
    names = {c["LaunchTemplateSpecification"]["LaunchTemplateName"] for c in configs}
    assert len(names) == 2


def test_alias_without_a_gpu_variant_does_not_launch_gpu_types(aws_world):
    """Only the standard parameter exists: GPU types have no image and are not launched
    (Karpenter: no AMI serves them), so a request of only GPU types has no capacity."""
    (standard,) = _x86_images(aws_world.ec2, 1)
    aws_world.publish_parameter(
        "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/"
        "image_id",
        standard,
    )
    nc = aws_world.node_class(ami_selector_terms=(AMISelectorTerm(alias="al2023@latest"),))
    provider = aws_world.provider([nc])
    with pytest.raises(InsufficientCapacityError):
        provider.create(_request(provider, "gpu-1", ("g4dn.xlarge",)))
    inst = provider.create(_request(provider, "std-1", ("m5.large", "g4dn.xlarge")))
    assert inst.instance_type.name == "m5.large"


def test_raid0_nodeclass_on_ec2(aws_world):
    """``instanceStorePolicy: RAID0`` on EC2's data: the instance store (DescribeInstanceTypes
    ``InstanceStorageInfo``) is the ephemeral storage, and the launch template's NodeConfig
    asks nodeadm for the RAID0 array."""
    nc = aws_world.node_class(instance_store_policy="RAID0")
    provider = aws_world.provider([nc])
    types = {t.name: t for t in provider.get_instance_types("default")}
    assert types["m5d.large"].capacity["ephemeral-storage"] == 75 * 10**9
    assert types["m5.large"].capacity["ephemeral-storage"] == 20 * 2**30
    provider.create(_request(provider, "nc-raid", ("m5d.large",)))
    (template,) = aws_world.ec2.describe_launch_templates()["LaunchTemplates"]
    data = aws_world.ec2.describe_launch_template_versions(
        LaunchTemplateName=template["LaunchTemplateName"]
    )["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    config = yaml.safe_load(mime_parts(base64.b64decode(data["UserData"]).decode())[-1].body)
    assert config["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}


def test_inflight_ips_move_launches_to_the_next_subnet_of_the_zone(aws_world):
    """Two small subnets in one zone (EC2 counts 59 and 27 free IPs): each m5.large launch
    charges 29 IPs (its pods) to the subnet it used, so the third launch goes to the
    subnet EC2 still reports as the smaller one (Karpenter's in-flight IP tracking)."""
    subnets = {}
    for cidr in ("10.0.8.0/26", "10.0.9.0/27"):
        sid = aws_world.ec2.create_subnet(
            VpcId=aws_world.vpc_id, CidrBlock=cidr, AvailabilityZone="us-east-1c"
        )["Subnet"]["SubnetId"]
        aws_world.ec2.create_tags(Resources=[sid], Tags=[{"Key": "pool", "Value": "small"}])
        subnets[cidr] = sid
    nc = aws_world.node_class(subnet_selector_terms=(SelectorTerm(tags=(("pool", "small"),)),))
    provider = aws_world.provider([nc])
    free = dict(provider.resolve("default").free_ips)
    assert (free[subnets["10.0.8.0/26"]], free[subnets["10.0.9.0/27"]]) == (59, 27)
    used = [
        provider.create(_request(provider, f"nc-{i}", ("m5.large",))).subnet_id for i in range(3)
    ]
    assert used == [subnets["10.0.8.0/26"], subnets["10.0.8.0/26"], subnets["10.0.9.0/27"]]
