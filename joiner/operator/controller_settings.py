"""Controller mode's settings (``joiner run --settings FILE``): the file's model and
validation, the interruption controller's settings from it, and the cloud provider it
selects. ``joiner.operator.controller`` builds the running system from them.
"""

from __future__ import annotations

import logging
import os
import random
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from joiner.api.errors import InputError
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.kwok import KwokCloudProvider, load_instance_types
from joiner.cloudprovider.launchtemplates import (
    LAUNCH_TEMPLATE_CLEANUP_INTERVAL_S,
    LAUNCH_TEMPLATE_TTL_S,
)
from joiner.cloudprovider.repair import (
    AWS_REPAIR_POLICIES,
    KWOK_REPAIR_POLICIES,
    RepairPolicy,
    with_tolerations,
)
from joiner.cloudprovider.simulated import SimulatedCloudProvider, default_subnets
from joiner.cloudprovider.types import CloudProvider
from joiner.controllers.interruption.settings import REBALANCE_REPLACEMENT, InterruptionSettings
from joiner.controllers.nodeclaim.garbagecollection import (
    GC_INTERVAL_S,
    INSTANCE_GRACE_S,
)
from joiner.controllers.nodeclaim.liveness import REGISTRATION_TIMEOUT_S
from joiner.operator.wallclock import DEFAULT_SECURITY_GROUP, WallClock

log = logging.getLogger(__name__)


class _Settings(BaseModel):
    """Unknown fields are errors, and so is a value of the wrong YAML type: ``"yes"`` or
    ``1`` for a flag, ``"10"`` for a number of seconds, ``.inf`` or ``.nan`` anywhere a
    number is expected (pydantic's strict mode). Karpenter parses its own settings from
    flags and environment variables (``pkg/operator/options``, ``strconv.ParseBool``), where
    every value is text; a YAML file has typed values, so a quoted ``"true"`` is a string,
    as the scenario file and the manifests treat it (``tests/api/test_strict_types.py``)."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, strict=True, allow_inf_nan=False, defer_build=True
    )


class LeaderElectionSettings(_Settings):
    """``leaderElection`` in the settings file; durations in seconds (client-go's
    defaults: 15, 10, 2)."""

    enabled: bool = True
    namespace: str = "joiner"
    name: str = "joiner-leader-election"
    leaseDurationSeconds: float = Field(default=15.0, gt=0)
    renewDeadlineSeconds: float = Field(default=10.0, gt=0)
    retryPeriodSeconds: float = Field(default=2.0, gt=0)


class ControllerSettings(_Settings):
    """The ``--settings`` file (YAML): everything optional.

    ``interruptionQueue`` is an SQS queue URL (EventBridge interruption messages);
    ``awsEndpointURL`` points boto3 at another endpoint (a moto server in tests);
    ``clusterName``/``clusterEndpoint`` are the AWS provider's cluster (``--cloud aws``);
    ``interruption`` holds NTH Helm values (as in a scenario's ``spec.interruption``) and
    Joiner's ``rebalanceReplacement`` (make before break, off by default);
    ``nodeRepair`` is Karpenter's ``NodeRepair`` feature gate, with
    ``nodeRepairTolerationSeconds`` replacing the cloud's tolerations by condition type;
    ``packing`` is the provisioning policy (``karpenter``, the default, or ``cost-optimal``,
    which consolidation's replacements use too).
    """

    region: str = "us-east-1"
    clusterName: str = "joiner"
    clusterEndpoint: str = ""
    interruptionQueue: str | None = None
    awsEndpointURL: str | None = None
    batchIdleSeconds: float = Field(default=1.0, gt=0)
    batchMaxSeconds: float = Field(default=10.0, gt=0)
    spotToSpotConsolidation: bool = False
    #: Karpenter's ``NodeRepair`` feature gate (off by default, as upstream).
    nodeRepair: bool = False
    #: Node repair tolerations by condition type, seconds (``{Ready: 60}``), replacing the
    #: cloud's (AWS: Ready 1800, AcceleratedHardwareReady 600, ...; kwok: Ready 600).
    nodeRepairTolerationSeconds: dict[str, float] = Field(default_factory=dict)
    #: Karpenter's ReservedCapacity gate (on by default): the capacity reservations an
    #: EC2NodeClass selects launch first (``--cloud aws``; the simulated cloud has none).
    reservedCapacity: bool = True
    interruption: dict[str, Any] | None = None
    packing: Literal["karpenter", "cost-optimal"] = "karpenter"
    eventNamespace: str = "default"
    #: A NodeClaim whose node has not registered this long after creation is deleted
    #: (Karpenter's ``registrationTimeout``, 15 minutes).
    registrationTimeoutSeconds: float = Field(default=REGISTRATION_TIMEOUT_S, gt=0)
    #: How often NodeClaims are reconciled with the cloud's instances (Karpenter: 2 min).
    garbageCollectionIntervalSeconds: float = Field(default=GC_INTERVAL_S, gt=0)
    #: An instance of this cluster with no NodeClaim is terminated once seen so this long.
    orphanInstanceGraceSeconds: float = Field(default=INSTANCE_GRACE_S, ge=0)
    #: A launch template no launch used this long is deleted (Karpenter-AWS: 1 minute).
    launchTemplateTTLSeconds: float = Field(default=LAUNCH_TEMPLATE_TTL_S, gt=0)
    #: How often expired launch templates are deleted (Karpenter-AWS: 1 minute).
    launchTemplateCleanupIntervalSeconds: float = Field(
        default=LAUNCH_TEMPLATE_CLEANUP_INTERVAL_S, gt=0
    )
    #: Karpenter-kwok's instance-types file: KWOKNodeClass NodePools launch from it, as
    #: Karpenter's kwok provider does (shadow mode beside Karpenter-kwok; docs/fidelity.md).
    kwokInstanceTypes: str | None = None
    #: botocore's retry mode for every AWS client (``--cloud aws`` and the interruption
    #: queue): ``standard`` (exponential backoff with jitter), ``adaptive`` (standard plus
    #: client-side rate limiting) or ``legacy``.
    awsRetryMode: Literal["standard", "adaptive", "legacy"] = "standard"
    #: Every attempt of one AWS request, the first included (1: no retries).
    awsMaxAttempts: int = Field(default=5, ge=1, le=20)
    leaderElection: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)


def load_settings(path: Path | None) -> ControllerSettings:
    """Read the settings file (None: defaults).

    Raises:
        InputError: unreadable, not YAML, or a field unknown or invalid (named; a region
            the catalog does not know and a malformed ``kwokInstanceTypes`` file included).
    """
    if path is None:
        return ControllerSettings()
    from joiner.api.manifests.yamlio import read_documents
    from joiner.api.validation import describe, field_path

    file = str(path)
    docs = read_documents(path)  # encoding, size, nesting, duplicate keys, FIFOs, "-"
    if len(docs) > 1:
        raise InputError(f"holds {len(docs)} YAML documents; give one", file=file)
    raw = docs[0] if docs else {}
    if not isinstance(raw, dict):
        raise InputError(
            f"must be a mapping of settings (region: us-east-1, ...), not {type(raw).__name__}",
            file=file,
        )
    try:
        settings = ControllerSettings.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(
            describe(err, ControllerSettings), file=file, field=field_path(tuple(err["loc"]))
        ) from exc
    le = settings.leaderElection
    # client-go leaderelection.NewLeaderElector: leaseDuration > renewDeadline >
    # JitterFactor (1.2) x retryPeriod.
    if le.leaseDurationSeconds <= le.renewDeadlineSeconds:
        raise InputError(
            f"leaseDurationSeconds ({le.leaseDurationSeconds:g}) must be greater than "
            f"renewDeadlineSeconds ({le.renewDeadlineSeconds:g})",
            file=file,
            field="leaderElection.leaseDurationSeconds",
        )
    if le.renewDeadlineSeconds <= 1.2 * le.retryPeriodSeconds:
        raise InputError(
            f"renewDeadlineSeconds ({le.renewDeadlineSeconds:g}) must be greater than 1.2 x "
            f"retryPeriodSeconds ({le.retryPeriodSeconds:g})",
            file=file,
            field="leaderElection.renewDeadlineSeconds",
        )
    if settings.batchIdleSeconds > settings.batchMaxSeconds:
        raise InputError(
            f"batchIdleSeconds ({settings.batchIdleSeconds:g}) must not exceed "
            f"batchMaxSeconds ({settings.batchMaxSeconds:g})",
            file=file,
            field="batchIdleSeconds",
        )
    interruption_settings(settings, str(path))
    if settings.kwokInstanceTypes:
        # Checked here, before the controller connects to anything: a malformed entry is an
        # input error naming the instance-types file, the type and the field.
        load_instance_types(Path(settings.kwokInstanceTypes))
    repair_policies(settings, str(path))
    regions = Catalog.load().regions()
    if settings.region not in regions:
        raise InputError(
            f"unknown region {settings.region!r}; known: {', '.join(regions)}",
            file=str(path),
            field="region",
        )
    return settings


def interruption_settings(settings: ControllerSettings, file: str | None) -> InterruptionSettings:
    """The interruption controller's settings from ``settings.interruption``.

    Raises:
        InputError: a value with a wrong type (named).
    """
    values = dict(settings.interruption or {})
    replacement = values.pop(REBALANCE_REPLACEMENT, False)
    if not isinstance(replacement, bool):
        raise InputError(
            f"must be true or false, got {replacement!r}",
            file=file,
            field=f"interruption.{REBALANCE_REPLACEMENT}",
        )
    out = InterruptionSettings.from_helm_values(
        values or None, file=file, field="interruption", rebalance_replacement=replacement
    )
    for w in out.warnings:
        log.warning("%s", w)
    return out


def repair_policies(settings: ControllerSettings, file: str | None) -> tuple[RepairPolicy, ...]:
    """Node repair's policies: the cloud's (Karpenter-kwok's with ``kwokInstanceTypes``,
    else AWS's; ``cloudprovider/repair.py``) with ``nodeRepairTolerationSeconds`` applied.

    Raises:
        InputError: a condition type the policies do not name, or a negative toleration.
    """
    base = KWOK_REPAIR_POLICIES if settings.kwokInstanceTypes else AWS_REPAIR_POLICIES
    return with_tolerations(base, settings.nodeRepairTolerationSeconds, file=file)


def cloud_provider(
    settings: ControllerSettings, cloud: str, clock: WallClock, catalog: Catalog
) -> CloudProvider:
    """The controller's cloud: ``aws`` (boto3, the settings' region and cluster), else
    Karpenter-kwok's instance types when ``kwokInstanceTypes`` is set, else the simulated
    cloud of ``settings.region`` (a random seed: controller mode is not a replay)."""
    s = settings
    if cloud == "aws":
        from joiner.cloudprovider.aws import AWSSettings, ClusterInfo, new_aws_provider

        return new_aws_provider(
            AWSSettings(
                region=s.region,
                cluster=ClusterInfo(name=s.clusterName, endpoint=s.clusterEndpoint),
                launch_template_ttl_s=s.launchTemplateTTLSeconds,
                reserved_capacity=s.reservedCapacity,
                retry_mode=s.awsRetryMode,
                max_attempts=s.awsMaxAttempts,
            ),
            [],
            endpoint_url=s.awsEndpointURL,
        )
    if s.kwokInstanceTypes:
        return KwokCloudProvider(
            load_instance_types(Path(s.kwokInstanceTypes)),
            clock,
            random.Random(int.from_bytes(os.urandom(8), "big")),
            node_classes=[],
            region=s.region,
        )
    return SimulatedCloudProvider(
        catalog,
        s.region,
        clock,
        random.Random(int.from_bytes(os.urandom(8), "big")),
        subnets=default_subnets(catalog, s.region),
        security_groups=[DEFAULT_SECURITY_GROUP],
        node_classes=[],
        launch_template_ttl_s=s.launchTemplateTTLSeconds,
    )
