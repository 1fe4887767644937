"""boto3 clients and the one place AWS calls are retried.

``AWSClients`` holds the four clients the provider uses. ``Caller.call`` runs one operation,
retrying throttling (and EC2's transient server errors) with exponential backoff: attempt n
(from 0) waits ``base_delay_s * 2**n`` seconds, capped at ``max_delay_s``, through the
injected ``sleep``, for at most ``max_attempts`` attempts in all. botocore's own retries are
switched off in ``new_clients`` so that this is the only retry policy, and it is testable.
Any other ``ClientError`` becomes an ``AWSError`` carrying the AWS error code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from joiner.cloudprovider.types import CloudProviderError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_pricing import PricingClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_ssm import SSMClient

log = logging.getLogger(__name__)

#: Error codes AWS uses for "slow down" (EC2's RequestLimitExceeded, the JSON services'
#: ThrottlingException, ...), retried with backoff.
THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "SlowDown",
        "EC2ThrottledException",
    }
)
#: Server-side errors worth one more try.
TRANSIENT_CODES = frozenset(
    {"InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable"}
)


class AWSError(CloudProviderError):
    """An AWS call failed: ``code`` is AWS's error code, ``operation`` the API name."""

    def __init__(self, operation: str, code: str, message: str) -> None:
        super().__init__(f"{operation}: {code}: {message}")
        self.operation = operation
        self.code = code


def error_code(exc: ClientError) -> str:
    """The AWS error code of a botocore ``ClientError`` (empty when absent)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


@dataclass(frozen=True, slots=True)
class AWSClients:
    """The boto3 clients the AWS provider uses (EC2, SSM and the Pricing API in its endpoint
    region; SQS for the interruption queue)."""

    ec2: EC2Client
    ssm: SSMClient
    pricing: PricingClient
    sqs: SQSClient


def pricing_region(region: str) -> str:
    """The Pricing API endpoint region for ``region`` (Karpenter's pricing provider): us-east-1,
    ap-south-1 for ``ap-*``, eu-central-1 for ``eu-*``, cn-northwest-1 for ``cn-*``."""
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
) -> AWSClients:
    """boto3 clients for ``region`` with botocore's retries off (``Caller`` retries).

    ``endpoint_url`` points every client at one endpoint (a moto server in tests).
    """
    sess = session or boto3.Session()
    config = Config(retries={"total_max_attempts": 1, "mode": "standard"})
    return AWSClients(
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


class Caller:
    """Runs AWS operations with the retry policy in the module docstring.

    ``sleep`` takes seconds (``time.sleep`` in production, a recorder in tests).
    """

    def __init__(
        self,
        sleep: Callable[[float], None],
        *,
        max_attempts: int = 5,
        base_delay_s: float = 0.5,
        max_delay_s: float = 8.0,
    ) -> None:
        self._sleep = sleep
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s

    def call(self, client: Any, operation: str, **params: Any) -> dict[str, Any]:
        """``client.<operation>(**params)`` with retries.

        Raises:
            AWSError: a non-retryable error, or a retryable one on the last attempt.
        """
        method = getattr(client, operation)
        for attempt in range(self.max_attempts):
            try:
                result: dict[str, Any] = method(**params)
                return result
            except ClientError as exc:
                code = error_code(exc)
                retryable = code in THROTTLING_CODES or code in TRANSIENT_CODES
                if not retryable or attempt == self.max_attempts - 1:
                    message = str(exc.response.get("Error", {}).get("Message", ""))
                    raise AWSError(operation, code, message) from exc
                delay_s = min(self.max_delay_s, self.base_delay_s * 2**attempt)
                log.warning(
                    "aws %s: %s, retrying in %.1f s (attempt %d of %d)",
                    operation,
                    code,
                    delay_s,
                    attempt + 1,
                    self.max_attempts,
                )
                self._sleep(delay_s)
        raise AssertionError("unreachable")  # pragma: no cover

    def pages(
        self, client: Any, operation: str, token_in: str, token_out: str, **params: Any
    ) -> Iterator[dict[str, Any]]:
        """Every page of a paginated operation, each fetched through ``call`` (so a throttled
        page is retried, not the whole listing). ``token_in``/``token_out`` name the request
        and response pagination fields (``NextToken`` for EC2)."""
        token: str | None = None
        while True:
            page_params = dict(params)
            if token:
                page_params[token_in] = token
            page = self.call(client, operation, **page_params)
            yield page
            token = page.get(token_out)
            if not token:
                return
