"""Controller mode's settings (``joiner run --settings FILE``, Karpenter's environment
variables and flags: ``operator/karpenter_options.py``): the one model and its validation,
the interruption controller's settings from it, and the cloud provider it selects.
``joiner.operator.controller`` builds the running system from them.

Keys are Karpenter's (its Helm chart's ``settings.*``): ``batchIdleDuration`` and
``batchMaxDuration`` are Go durations (``1s``), the gates are under ``featureGates``. The
older Joiner keys still load, with a warning naming the new key (``DEPRECATED``).
"""

from __future__ import annotations

import logging
import math
import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from joiner.api.errors import InputError
from joiner.api.k8snames import dns1123_label
from joiner.api.validation import describe, field_path
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
from joiner.operator.karpenter_options import go_duration_seconds, layer, merge
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


def _duration(value: object) -> object:
    """A Go duration string as seconds; anything else is left for the type check (a
    number is refused there: Karpenter's durations carry a unit)."""
    if isinstance(value, str):
        return go_duration_seconds(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(f"must be a Go duration with a unit (such as {value:g}s), not a number")
    return value


#: Seconds, written as a Go duration (``1s``, ``500ms``, ``1m30s``).
GoDuration = Annotated[float, BeforeValidator(_duration)]


def _gate_off(gate: str) -> BeforeValidator:
    """A validator refusing ``true`` for a Karpenter gate Joiner's controller does not
    implement, saying so (a non-boolean is left for the type check)."""

    def check(value: object) -> object:
        if value is True:
            raise ValueError(
                f"Joiner's controller does not implement Karpenter's {gate} gate yet; it "
                f"accepts {gate}=false only (so that a copied Karpenter values file loads)"
            )
        return value

    return BeforeValidator(check)


def _namespace(value: str) -> str:
    """A Kubernetes namespace name: a DNS-1123 label (apimachinery ``IsDNS1123Label``,
    as ``ValidateNamespaceName`` uses)."""
    problems = dns1123_label(value)
    if problems:
        raise ValueError(f"{value!r} is not a namespace name: {'; '.join(problems)}")
    return value


class FeatureGateSettings(_Settings):
    """``featureGates``, as Karpenter's chart spells them (defaults as Karpenter's). The
    gates Joiner's controller does not implement are accepted only off, so a copied
    Karpenter values file loads."""

    spotToSpotConsolidation: bool = False
    #: Nodes unhealthy past their tolerations are replaced (``nodeRepairTolerationSeconds``).
    nodeRepair: bool = False
    #: The capacity reservations an EC2NodeClass selects launch first (``--cloud aws``).
    reservedCapacity: bool = True
    #: NodeOverlays are watched and applied to the instance types (``cloudprovider.overlay``).
    nodeOverlay: bool = False
    #: Static NodePools (``spec.replicas``) keep their node count (``scheduling.static``).
    staticCapacity: bool = False
    capacityBuffer: Annotated[Literal[False], _gate_off("CapacityBuffer")] = False


class LeaderElectionSettings(_Settings):
    """``leaderElection`` in the settings file; durations in seconds (client-go's
    defaults: 15, 10, 2)."""

    enabled: bool = True
    #: The Lease's namespace: a DNS-1123 label.
    namespace: Annotated[str, AfterValidator(_namespace)] = "joiner"
    name: str = "joiner-leader-election"
    leaseDurationSeconds: float = Field(default=15.0, gt=0)
    renewDeadlineSeconds: float = Field(default=10.0, gt=0)
    retryPeriodSeconds: float = Field(default=2.0, gt=0)


class ControllerSettings(_Settings):
    """The ``--settings`` file (YAML): everything optional.

    ``interruptionQueue`` is an SQS queue URL, or a queue name as Karpenter takes it
    (EventBridge interruption messages);
    ``awsEndpointURL`` points boto3 at another endpoint (a moto server in tests);
    ``clusterName``/``clusterEndpoint`` are the AWS provider's cluster (``--cloud aws``);
    ``interruption`` holds NTH Helm values (as in a scenario's ``spec.interruption``) and
    Joiner's ``rebalanceReplacement`` (make before break, off by default);
    ``featureGates`` are Karpenter's (``nodeRepair`` with ``nodeRepairTolerationSeconds``
    replacing the cloud's tolerations by condition type); ``logLevel`` is Karpenter's
    (``debug``, ``info`` or ``error``);
    ``packing`` is the provisioning policy (``karpenter``, the default, or ``cost-optimal``,
    which consolidation's replacements use too).
    """

    region: str = "us-east-1"
    #: Required with ``--cloud aws`` (``require_cluster_name``); no default, as in
    #: Karpenter-AWS (its ``CLUSTER_NAME`` defaults to empty and validation refuses that).
    clusterName: str = ""
    clusterEndpoint: str = ""
    interruptionQueue: str | None = None
    awsEndpointURL: str | None = None
    #: Karpenter's ``BATCH_IDLE_DURATION``: a batch ends once no pod arrived this long.
    batchIdleDuration: GoDuration = Field(default=1.0, gt=0)
    #: Karpenter's ``BATCH_MAX_DURATION``: a batch ends this long after it began at most.
    batchMaxDuration: GoDuration = Field(default=10.0, gt=0)
    featureGates: FeatureGateSettings = Field(default_factory=FeatureGateSettings)
    logLevel: Literal["debug", "info", "error"] = "info"
    #: Node repair tolerations by condition type, seconds (``{Ready: 60}``), replacing the
    #: cloud's (AWS: Ready 1800, AcceleratedHardwareReady 600, ...; kwok: Ready 600).
    nodeRepairTolerationSeconds: dict[str, float] = Field(default_factory=dict)
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


#: The settings-file keys Joiner wrote before taking Karpenter's names: old key -> new
#: key path, and whether the old value is seconds (the new one a Go duration).
DEPRECATED: dict[str, tuple[tuple[str, ...], bool]] = {
    "batchIdleSeconds": (("batchIdleDuration",), True),
    "batchMaxSeconds": (("batchMaxDuration",), True),
    "spotToSpotConsolidation": (("featureGates", "spotToSpotConsolidation"), False),
    "nodeRepair": (("featureGates", "nodeRepair"), False),
    "reservedCapacity": (("featureGates", "reservedCapacity"), False),
}


def load_settings(
    path: Path | None,
    *,
    flags: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    cloud: str | None = None,
) -> ControllerSettings:
    """The settings: defaults, under the file (None: none), under the environment
    variables in ``env``, under the ``flags`` given (flag -> text); Karpenter's names
    (``operator/karpenter_options.py``), validated once by ``ControllerSettings``. A
    deprecated file key (``DEPRECATED``) is read as its new key, with a warning naming it.
    ``cloud`` is ``joiner run``'s ``--cloud`` (None: not checked against it): ``aws``
    requires a cluster name (``require_cluster_name``).

    Raises:
        InputError: the file unreadable, not YAML, or a key unknown or invalid (named); a
            variable or flag that does not parse or is invalid (named); a deprecated key
            given with its new one; a region the catalog does not know; a malformed
            ``kwokInstanceTypes`` file; no cluster name with ``cloud="aws"``.
    """
    file = str(path) if path is not None else None
    raw = _upgrade(_read(path), file) if path is not None else {}
    env_doc, origin = layer(env or {}, by_flag=False)
    flag_doc, flag_origin = layer(flags or {}, by_flag=True)
    origin.update(flag_origin)
    where = _Where(file, origin)
    try:
        settings = ControllerSettings.model_validate(merge(merge(raw, env_doc), flag_doc))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(
            describe(err, ControllerSettings) + _helm_hint(err["loc"], err["type"]),
            **where(tuple(str(p) for p in err["loc"])),
        ) from exc
    _check(settings, where)
    if cloud is not None:
        require_cluster_name(settings, cloud, **where(("clusterName",)))
    return settings


def require_cluster_name(settings: ControllerSettings, cloud: str, **where: Any) -> None:
    """Refuse ``--cloud aws`` without a cluster name, missing or blank.

    The AWS provider tags its instances, launch templates and instance profiles with
    ``kubernetes.io/cluster/<name>`` and garbage-collects by that tag, so two clusters on
    one default name would collect each other's instances. Karpenter-AWS refuses it too
    (karpenter-provider-aws ``pkg/operator/options/options_validation.go``
    ``validateRequiredFields``). The simulated cloud uses no name.

    Raises:
        InputError: ``cloud`` is ``aws`` and ``clusterName`` is empty or blank, located by
            ``where`` (file and field, or the variable or flag that set it).
    """
    if cloud == "aws" and not settings.clusterName.strip():
        raise InputError(
            "--cloud aws needs the cluster's name (missing or blank: "
            f"{settings.clusterName!r}); give --cluster-name, CLUSTER_NAME or clusterName "
            "in the --settings file (the chart's settings.clusterName); instances are "
            "tagged and garbage-collected by kubernetes.io/cluster/<name>, so there is no "
            "default",
            **({"field": "clusterName"} | where),
        )


def _helm_hint(loc: tuple[int | str, ...], kind: str) -> str:
    """A hint for a Karpenter Helm values file given as ``--settings``: its top-level
    ``settings:`` key holds what the settings file holds."""
    if kind == "extra_forbidden" and tuple(loc) == ("settings",):
        return (
            " (this looks like a Helm values file: the settings file holds what is under "
            "the chart's settings: key, at its top level)"
        )
    return ""


#: An error's location when an environment variable set the value.
ENV_ORIGIN = {"obj": "environment"}


class _Where:
    """Where a settings value came from, for an error: the flag or variable that set its
    key (or a key above it), else the file and the key."""

    def __init__(self, file: str | None, origin: Mapping[tuple[str, ...], str]) -> None:
        self.file = file
        self.origin = origin

    def __call__(self, loc: tuple[str, ...]) -> dict[str, Any]:
        for n in range(len(loc), 0, -1):
            name = self.origin.get(loc[:n])
            if name is not None:
                return {"field": name} if name.startswith("--") else ENV_ORIGIN | {"field": name}
        return {"file": self.file, "field": field_path(loc)}


def _read(path: Path) -> dict[str, Any]:
    """The settings file's mapping.

    Raises:
        InputError: unreadable, not YAML, several documents, or not a mapping.
    """
    from joiner.api.manifests.yamlio import read_documents

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
    return raw


def _upgrade(raw: dict[str, Any], file: str | None) -> dict[str, Any]:
    """``raw`` with each deprecated key moved to its new key (seconds written as a Go
    duration), warning once per key.

    Raises:
        InputError: a deprecated key given with its new key, or seconds that are not a
            finite number.
    """
    out = dict(raw)
    for old, (new, seconds) in DEPRECATED.items():
        if old not in out:
            continue
        value = out.pop(old)
        key = ".".join(new)
        parent = out
        for part in new[:-1]:
            child = parent.get(part)
            parent[part] = child = dict(child) if isinstance(child, dict) else {}
            parent = child
        if new[-1] in parent:
            raise InputError(f"give {key} only; {old} is its deprecated name", file=file, field=old)
        if seconds:
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise InputError(
                    f"must be a finite number of seconds, not {value!r} (better: {key}: 1s)",
                    file=file,
                    field=old,
                )
            value = f"{value:g}s"
        parent[new[-1]] = value
        log.warning("%s: %s is deprecated; use %s (Karpenter's name)", file, old, key)
    return out


def _check(settings: ControllerSettings, where: _Where) -> None:
    """The checks across fields, and the files and region the settings name.

    Raises:
        InputError: see ``load_settings``.
    """
    le = settings.leaderElection
    # client-go leaderelection.NewLeaderElector: leaseDuration > renewDeadline >
    # JitterFactor (1.2) x retryPeriod.
    if le.leaseDurationSeconds <= le.renewDeadlineSeconds:
        raise InputError(
            f"leaseDurationSeconds ({le.leaseDurationSeconds:g}) must be greater than "
            f"renewDeadlineSeconds ({le.renewDeadlineSeconds:g})",
            **where(("leaderElection", "leaseDurationSeconds")),
        )
    if le.renewDeadlineSeconds <= 1.2 * le.retryPeriodSeconds:
        raise InputError(
            f"renewDeadlineSeconds ({le.renewDeadlineSeconds:g}) must be greater than 1.2 x "
            f"retryPeriodSeconds ({le.retryPeriodSeconds:g})",
            **where(("leaderElection", "renewDeadlineSeconds")),
        )
    if settings.batchIdleDuration > settings.batchMaxDuration:
        raise InputError(
            f"batchIdleDuration ({settings.batchIdleDuration:g}s) must not exceed "
            f"batchMaxDuration ({settings.batchMaxDuration:g}s)",
            **where(("batchIdleDuration",)),
        )
    interruption_settings(settings, where.file)
    if settings.kwokInstanceTypes:
        # Checked here, before the controller connects to anything: a malformed entry is an
        # input error naming the instance-types file, the type and the field.
        load_instance_types(Path(settings.kwokInstanceTypes))
    repair_policies(settings, where.file)
    regions = Catalog.load().regions()
    if settings.region not in regions:
        raise InputError(
            f"unknown region {settings.region!r}; known: {', '.join(regions)}",
            **where(("region",)),
        )


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
    settings: ControllerSettings,
    cloud: str,
    clock: WallClock,
    catalog: Catalog,
    *,
    dry_run: bool = False,
) -> CloudProvider:
    """The controller's cloud: ``aws`` (boto3, the settings' region and cluster; read only
    when ``dry_run``: ``cloudprovider/aws/dryrun.py``), else Karpenter-kwok's instance types
    when ``kwokInstanceTypes`` is set, else the simulated cloud of ``settings.region`` (a
    random seed: controller mode is not a replay). The last two are in memory: nothing they
    do reaches a real cloud, dry run or not.

    Raises:
        InputError: ``aws`` without a cluster name (``require_cluster_name``).
    """
    s = settings
    if cloud == "aws":
        from joiner.cloudprovider.aws import AWSSettings, ClusterInfo, new_aws_provider

        require_cluster_name(s, cloud)

        return new_aws_provider(
            AWSSettings(
                region=s.region,
                cluster=ClusterInfo(name=s.clusterName, endpoint=s.clusterEndpoint),
                launch_template_ttl_s=s.launchTemplateTTLSeconds,
                reserved_capacity=s.featureGates.reservedCapacity,
                retry_mode=s.awsRetryMode,
                max_attempts=s.awsMaxAttempts,
                dry_run=dry_run,
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
