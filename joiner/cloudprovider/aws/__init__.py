"""The AWS CloudProvider adapter: EC2 through boto3, and the SQS interruption queue.

This package is the only place boto3/botocore are imported (an import-linter contract
enforces it). ``new_aws_provider`` is the constructor controller mode calls. boto3 and
tomli-w come with the ``aws`` extra; ``_deps`` (imported first) says so when one is missing.
"""

from joiner.cloudprovider.aws._deps import EXTRA_MODULES
from joiner.cloudprovider.aws.api import AWSClients, AWSError, RetrySettings, new_clients
from joiner.cloudprovider.aws.nodeclass import ClusterInfo
from joiner.cloudprovider.aws.provider import AWSCloudProvider, AWSSettings, new_aws_provider
from joiner.cloudprovider.aws.queue import InterruptionQueue

__all__ = [
    "EXTRA_MODULES",
    "AWSClients",
    "AWSCloudProvider",
    "AWSError",
    "AWSSettings",
    "ClusterInfo",
    "InterruptionQueue",
    "RetrySettings",
    "new_aws_provider",
    "new_clients",
]
