"""boto3 clients with botocore's retries, and AWS errors as ``AWSError``.

* **Retries are botocore's** (``RetrySettings``, ``new_clients``): every client is built
  with ``botocore.config.Config(retries={"mode": ..., "total_max_attempts": ...})``. The
  default is botocore's ``standard`` mode with 5 attempts in all (botocore's legacy default
  is 5 too), which retries throttling (EC2's ``RequestLimitExceeded``, the JSON services'
  ``ThrottlingException`` ...), transient errors (HTTP 500/502/503/504, ``RequestTimeout``,
  connection errors) with exponential backoff and full jitter (a random delay up to
  ``min(20 s, 2**(attempt - 1) s)``), under a retry quota. ``adaptive`` adds a client-side
  rate limiter that slows every call once EC2 throttles. See botocore's "Retries" guide
  (boto3 documentation, ``guide/retries.html``). Karpenter-AWS keeps the AWS SDK for Go
  v2's default, its standard retryer with 3 attempts (karpenter-provider-aws
  ``pkg/operator/operator.go`` ``NewOperator``: ``config.LoadDefaultConfig`` without retry
  options).
* **Errors** (``aws_errors``): a ``ClientError`` that botocore gives up on (not retryable, or
  the attempts are spent) becomes an ``AWSError`` carrying the AWS error code, which the
  provider branches on (``InvalidInstanceID.NotFound``, a missing launch template ...).
* **Dry runs are read-only** (``refuse_writes``, ``new_clients(read_only=True)``): a
  client made for ``joiner run --dry-run`` refuses, before sending it, every operation whose
  name does not start with ``Describe``, ``Get``, ``List`` or ``Receive`` (CreateFleet,
  RunInstances, TerminateInstances, CreateLaunchTemplate, DeleteLaunchTemplate, CreateTags,
  SQS DeleteMessage ...) by raising ``DryRunWriteError``. The provider plans instead of
  calling them in a dry run; this is the net under it.
* **Pagination** is botocore's: callers iterate ``client.get_paginator(name).paginate(...)``
  inside ``aws_errors()``; each page request is retried on its own, as above.

The clients are typed with the ``mypy_boto3_*`` stubs (imported only while type checking).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from joiner.cloudprovider.types import CloudProviderError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_pricing import PricingClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_ssm import SSMClient

RetryMode = Literal["standard", "adaptive", "legacy"]
#: botocore's retry mode Joiner uses unless told otherwise.
DEFAULT_RETRY_MODE: RetryMode = "standard"
#: Attempts per request in all, the first included (the ``AWS_MAX_ATTEMPTS`` meaning).
DEFAULT_MAX_ATTEMPTS = 5


class AWSError(CloudProviderError):
    """An AWS call failed: ``code`` is AWS's error code, ``operation`` the API name."""

    def __init__(self, operation: str, code: str, message: str) -> None:
        super().__init__(f"{operation}: {code}: {message}")
        self.operation = operation
        self.code = code


class DryRunWriteError(CloudProviderError):
    """A dry run tried an AWS operation that is not a read; it was not sent.
    ``operation`` is the API name (``CreateFleet``)."""

    def __init__(self, operation: str) -> None:
        super().__init__(f"{operation}: not sent: a dry run makes no AWS call that writes")
        self.operation = operation


#: Operation-name prefixes of the AWS calls a dry run may send (they only read).
READ_ONLY_PREFIXES = ("Describe", "Get", "List", "Receive")


def refuse_writes(client: Any) -> None:
    """Make ``client`` (any boto3 client) raise ``DryRunWriteError`` before sending an
    operation whose name does not start with one of ``READ_ONLY_PREFIXES`` (botocore's
    ``before-call`` event, on this client's own event emitter only)."""

    def check(model: Any, **_: Any) -> None:
        if not str(model.name).startswith(READ_ONLY_PREFIXES):
            raise DryRunWriteError(str(model.name))

    client.meta.events.register("before-call", check)


def error_code(exc: ClientError) -> str:
    """The AWS error code of a botocore ``ClientError`` (empty when absent)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


@contextmanager
def aws_errors() -> Iterator[None]:
    """Turn a botocore ``ClientError`` raised in the block into an ``AWSError`` (operation
    name, AWS error code and message); anything else passes through.

    Raises:
        AWSError: the block raised ``ClientError``.
    """
    try:
        yield
    except ClientError as exc:
        message = str(exc.response.get("Error", {}).get("Message", ""))
        raise AWSError(exc.operation_name, error_code(exc), message) from exc


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """botocore's retry policy for every client (module docstring).

    ``mode`` is ``standard``, ``adaptive`` (standard plus client-side rate limiting) or
    ``legacy``; ``max_attempts`` counts every attempt of one request, the first included
    (1: no retries).

    Raises:
        ValueError: ``max_attempts`` below 1 (from ``config``).
    """

    mode: RetryMode = DEFAULT_RETRY_MODE
    max_attempts: int = DEFAULT_MAX_ATTEMPTS

    def config(self) -> Config:
        """The ``botocore.config.Config`` carrying this policy."""
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        return Config(retries={"mode": self.mode, "total_max_attempts": self.max_attempts})


@dataclass(frozen=True, slots=True)
class AWSClients:
    """The boto3 clients the AWS provider uses (EC2, SSM and the Pricing API in its endpoint
    region; SQS for the interruption queue)."""

    ec2: EC2Client
    ssm: SSMClient
    pricing: PricingClient
    sqs: SQSClient


def pricing_region(region: str) -> str:
    """The Pricing API endpoint region for ``region`` (karpenter-provider-aws
    ``pkg/providers/pricing/pricing.go`` ``NewAPI``): us-east-1, ap-south-1 for ``ap-*``,
    eu-central-1 for ``eu-*``, cn-northwest-1 for ``cn-*``."""
    if region.startswith("ap-"):
        return "ap-south-1"
    if region.startswith("eu-"):
        return "eu-central-1"
    if region.startswith("cn-"):
        return "cn-northwest-1"
    return "us-east-1"


def new_clients(
    region: str,
    *,
    session: boto3.Session | None = None,
    endpoint_url: str | None = None,
    retries: RetrySettings | None = None,
    read_only: bool = False,
) -> AWSClients:
    """boto3 clients for ``region``, each with botocore's ``retries`` (default
    ``RetrySettings()``: standard mode, 5 attempts).

    ``endpoint_url`` points every client at one endpoint (a moto server in tests);
    ``read_only`` (a dry run) makes every client refuse the calls that write
    (``refuse_writes``).

    Raises:
        ValueError: ``retries.max_attempts`` below 1.
    """
    sess = session or boto3.Session()
    config = (retries or RetrySettings()).config()
    clients = AWSClients(
        ec2=sess.client("ec2", region_name=region, config=config, endpoint_url=endpoint_url),
        ssm=sess.client("ssm", region_name=region, config=config, endpoint_url=endpoint_url),
        pricing=sess.client(
            "pricing",
            region_name=pricing_region(region),
            config=config,
            endpoint_url=endpoint_url,
        ),
        sqs=sess.client("sqs", region_name=region, config=config, endpoint_url=endpoint_url),
    )
    if read_only:
        for client in (clients.ec2, clients.ssm, clients.pricing, clients.sqs):
            refuse_writes(client)
    return clients
