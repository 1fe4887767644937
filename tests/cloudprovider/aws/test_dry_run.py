"""``joiner run --dry-run --cloud aws`` writes nothing to AWS: the provider on botocore's
Stubber, where any call that was not stubbed fails the test, plans a launch without
CreateFleet or a launch template, deletes without TerminateInstances, lets a NodeClass go
without DeleteLaunchTemplate, and its clients refuse every write before sending it."""

from __future__ import annotations

import socket

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError

from joiner.api import labels
from joiner.api.requirements import Requirement
from joiner.cloudprovider.aws import RetrySettings, new_clients
from joiner.cloudprovider.aws.api import DryRunWriteError
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.types import NodeClaimNotFoundError
from joiner.operator.controller_settings import ControllerSettings, cloud_provider
from tests.cloudprovider.aws.test_stubbed import REGION, World, _spot_rows

#: The EC2 operations that change something, none of which a dry run may send.
MUTATING = {
    "CreateFleet",
    "RunInstances",
    "TerminateInstances",
    "CreateLaunchTemplate",
    "DeleteLaunchTemplate",
    "CreateTags",
}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _described(iid: str, itype: str = "m5.large", zone: str = "us-east-1a") -> dict:
    return {
        "Reservations": [
            {
                "Instances": [
                    {
                        "InstanceId": iid,
                        "InstanceType": itype,
                        "Placement": {"AvailabilityZone": zone},
                        "State": {"Name": "running"},
                        "SubnetId": "subnet-a2",
                        "Tags": [{"Key": "karpenter.sh/nodepool", "Value": "general"}],
                    }
                ]
            }
        ]
    }


def test_dry_run_launch_and_delete_send_no_write() -> None:
    w = World(dry_run=True)
    w.stub_resolution()
    w.stub_spot_prices(_spot_rows(["c5.large", "m5.large"], price=0.02))
    spot = w.request(
        "nc-1", ("m5.large", "c5.large"), Requirement.in_(labels.CAPACITY_TYPE, "spot")
    )
    planned = w.provider.create(spot)
    # The cheapest pool the fleet was offered: c5.large spot (0.02 < 0.021) in a zone
    # with a subnet; no launch template was made and no CreateFleet sent.
    assert planned.instance_id.startswith("i-dryrun")
    assert (planned.instance_type.name, planned.offering.capacity_type) == ("c5.large", "spot")
    assert planned.provider_id == f"aws:///{planned.offering.zone}/{planned.instance_id}"
    assert planned.subnet_id in {"subnet-a2", "subnet-b"}
    assert planned.allocation is not None and "CreateFleet was not sent" in (
        planned.allocation.reason
    )
    assert dict(planned.tags)["karpenter.sh/nodeclaim"] == "nc-1"
    assert w.provider.last_fleet_request is None
    assert w.provider.get(planned.provider_id) == planned
    assert w.provider.is_drifted(planned.provider_id) == ""

    # list: the live instances EC2 describes, plus the planned one.
    w.ec2.add_response("describe_instances", _described("i-0real"))
    listed = [i.instance_id for i in w.provider.list()]
    assert sorted(listed) == sorted(["i-0real", planned.instance_id])

    # Deleting a real instance reads it, and remembers it gone: no TerminateInstances.
    w.ec2.add_response("describe_instances", _described("i-0real"))
    w.provider.delete("aws:///us-east-1a/i-0real")
    with pytest.raises(NodeClaimNotFoundError):
        w.provider.get("aws:///us-east-1a/i-0real")
    with pytest.raises(NodeClaimNotFoundError):
        w.provider.delete("aws:///us-east-1a/i-0real")
    # Deleting the planned one forgets it.
    w.provider.delete(planned.provider_id)
    w.ec2.add_response("describe_instances", _described("i-0real"))
    assert w.provider.list() == []
    with pytest.raises(NodeClaimNotFoundError):
        w.provider.get(planned.provider_id)

    # A NodeClass that goes keeps its launch templates (no describe, no delete).
    w.provider.set_node_classes([])
    assert w.provider.node_classes == {}

    w.ec2.assert_no_pending_responses()
    assert not MUTATING & set(w.ec2_calls), w.ec2_calls
    assert "DescribeSubnets" in w.ec2_calls  # it did read EC2


@pytest.mark.parametrize(
    ("operation", "params"),
    [
        (
            "create_fleet",
            {
                "LaunchTemplateConfigs": [],
                "TargetCapacitySpecification": {"TotalTargetCapacity": 1},
            },
        ),
        ("run_instances", {"MinCount": 1, "MaxCount": 1}),
        ("terminate_instances", {"InstanceIds": ["i-1"]}),
        ("create_launch_template", {"LaunchTemplateName": "lt-x", "LaunchTemplateData": {}}),
        ("delete_launch_template", {"LaunchTemplateName": "lt-x"}),
        ("create_tags", {"Resources": ["i-1"], "Tags": []}),
    ],
)
def test_dry_run_clients_refuse_every_write_before_sending_it(operation: str, params: dict) -> None:
    """The net under the provider: the call raises before anything is sent (the endpoint is
    a closed local port and there is one attempt, so a call that got through would fail
    otherwise, with a connection error)."""
    session = boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    clients = new_clients(
        REGION,
        session=session,
        endpoint_url=f"http://127.0.0.1:{_closed_port()}",
        retries=RetrySettings(max_attempts=1),
        read_only=True,
    )
    with pytest.raises(DryRunWriteError, match="not sent"):
        getattr(clients.ec2, operation)(**params)
    with pytest.raises(DryRunWriteError, match="DeleteMessage"):
        clients.sqs.delete_message(QueueUrl="https://q", ReceiptHandle="r")
    # Reads go through (here to the closed port).
    with pytest.raises(EndpointConnectionError):
        clients.ec2.describe_regions()


def test_the_controller_builds_a_read_only_aws_provider_for_a_dry_run() -> None:
    settings = ControllerSettings(clusterName="c")
    provider = cloud_provider(settings, "aws", None, Catalog.load(), dry_run=True)  # type: ignore[arg-type]
    assert provider.settings.dry_run  # type: ignore[attr-defined]
    with pytest.raises(DryRunWriteError, match="TerminateInstances"):
        provider.clients.ec2.terminate_instances(InstanceIds=["i-1"])  # type: ignore[attr-defined]
    live = cloud_provider(settings, "aws", None, Catalog.load())  # type: ignore[arg-type]
    assert not live.settings.dry_run  # type: ignore[attr-defined]
