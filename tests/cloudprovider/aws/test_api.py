"""Retries and pagination are botocore's: every client carries the retry config, botocore
retries throttling (with jitter) and gives up as configured, and listings go through
botocore's paginators page by page."""

from __future__ import annotations

import boto3
import botocore.endpoint
import pytest
from botocore.awsrequest import AWSResponse

from joiner.cloudprovider.aws import AWSSettings, ClusterInfo, new_aws_provider
from joiner.cloudprovider.aws.api import AWSError, RetrySettings, aws_errors, new_clients
from joiner.cloudprovider.aws.provider import NODEPOOL_TAG, cluster_tag

REGION = "us-east-1"

THROTTLED = (
    503,
    b"<Response><Errors><Error><Code>RequestLimitExceeded</Code>"
    b"<Message>Request limit exceeded.</Message></Error></Errors>"
    b"<RequestID>r</RequestID></Response>",
)
UNAUTHORIZED = (
    403,
    b"<Response><Errors><Error><Code>UnauthorizedOperation</Code>"
    b"<Message>no</Message></Error></Errors><RequestID>r</RequestID></Response>",
)
ZONES = (
    200,
    b'<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
    b"<requestId>r</requestId><availabilityZoneInfo><item><zoneName>us-east-1a</zoneName>"
    b"<zoneId>use1-az6</zoneId></item></availabilityZoneInfo>"
    b"</DescribeAvailabilityZonesResponse>",
)


def _session() -> boto3.Session:
    return boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_kwargs):
        yield self._body


class _Wire:
    """Answers each HTTP request the client sends with the next canned (status, body),
    before it leaves the process (botocore's ``before-send`` event), so botocore's retry
    handler sees real responses; ``sleeps`` records botocore's waits between attempts."""

    def __init__(self, client, answers, monkeypatch: pytest.MonkeyPatch) -> None:
        self.answers = list(answers)
        self.sent = 0
        self.sleeps: list[float] = []
        client.meta.events.register("before-send.ec2", self._answer)
        monkeypatch.setattr(botocore.endpoint.time, "sleep", self.sleeps.append)

    def _answer(self, request, **_kwargs):
        self.sent += 1
        status, body = self.answers.pop(0)
        return AWSResponse(request.url, status, {}, _Raw(body))


def test_every_client_carries_botocore_retry_config():
    default = new_clients(REGION, session=_session())
    for client in (default.ec2, default.ssm, default.pricing, default.sqs):
        assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 5}
    adaptive = new_clients(REGION, session=_session(), retries=RetrySettings("adaptive", 3))
    assert adaptive.ec2.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 3}


def test_new_aws_provider_builds_its_clients_with_the_settings_retry_policy():
    provider = new_aws_provider(
        AWSSettings(region=REGION, cluster=ClusterInfo("c"), retry_mode="adaptive", max_attempts=2),
        [],
        session=_session(),
    )
    for client in (provider.clients.ec2, provider.clients.pricing):
        assert client.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 2}


def test_retry_settings_refuse_fewer_than_one_attempt():
    with pytest.raises(ValueError, match="at least 1"):
        RetrySettings(max_attempts=0).config()


def test_botocore_retries_throttling_with_jittered_backoff(monkeypatch):
    ec2 = new_clients(REGION, session=_session()).ec2
    wire = _Wire(ec2, [THROTTLED, THROTTLED, ZONES], monkeypatch)
    zones = ec2.describe_availability_zones()["AvailabilityZones"]
    assert [z["ZoneName"] for z in zones] == ["us-east-1a"]
    assert wire.sent == 3
    # Standard mode: a random wait up to 2**(n-1) s before retry n (full jitter).
    assert len(wire.sleeps) == 2
    assert all(0 <= s <= 2**i for i, s in enumerate(wire.sleeps))


def test_throttling_that_never_ends_raises_aws_error_after_max_attempts(monkeypatch):
    ec2 = new_clients(REGION, session=_session(), retries=RetrySettings(max_attempts=3)).ec2
    wire = _Wire(ec2, [THROTTLED] * 3, monkeypatch)
    with pytest.raises(AWSError) as err, aws_errors():
        ec2.describe_availability_zones()
    assert (err.value.operation, err.value.code) == (
        "DescribeAvailabilityZones",
        "RequestLimitExceeded",
    )
    assert wire.sent == 3


def test_an_error_that_is_not_transient_is_not_retried(monkeypatch):
    ec2 = new_clients(REGION, session=_session()).ec2
    wire = _Wire(ec2, [UNAUTHORIZED], monkeypatch)
    with pytest.raises(AWSError) as err, aws_errors():
        ec2.describe_availability_zones()
    assert err.value.code == "UnauthorizedOperation"
    assert (wire.sent, wire.sleeps) == (1, [])


def test_listings_go_through_botocore_paginators_page_by_page(aws_world, monkeypatch):
    ec2 = aws_world.clients.ec2
    for _ in range(3):  # three reservations: moto pages DescribeInstances by reservation
        ec2.run_instances(
            ImageId=aws_world.amis["x86_64"],
            InstanceType="m5.large",
            MinCount=1,
            MaxCount=1,
            SubnetId=aws_world.subnets["us-east-1a"],
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": [
                        {"Key": NODEPOOL_TAG, "Value": "general"},
                        {"Key": cluster_tag("test-cluster"), "Value": "owned"},
                    ],
                }
            ],
        )
    paginated: list[str] = []
    real = ec2.get_paginator

    def spy(name):
        paginated.append(name)
        return real(name)

    monkeypatch.setattr(ec2, "get_paginator", spy)
    pages: list[str | None] = []

    def one_per_page(params, **_kwargs):
        # One reservation a page, so the listing takes three pages.
        params["MaxResults"] = 1
        pages.append(params.get("NextToken"))

    provider = aws_world.provider()
    event = "provide-client-params.ec2.DescribeInstances"
    ec2.meta.events.register(event, one_per_page)
    try:
        listed = provider.list()
    finally:
        ec2.meta.events.unregister(event, one_per_page)
    assert len(listed) == 3
    assert len(pages) == 3 and pages[0] is None and all(pages[1:])
    provider.resolve("default")
    provider.launch_templates.hydrate()
    assert set(paginated) >= {
        "describe_instances",
        "describe_subnets",
        "describe_security_groups",
        "describe_images",
        "describe_launch_templates",
    }
