"""EC2NodeClass values Karpenter-AWS's v1 CRD rejects, and its ``kubelet`` block.

The rules are the CRD's validations (``pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml``,
generated from the kubebuilder markers in ``pkg/apis/v1/ec2nodeclass.go``): the API server
refuses such an object, so Joiner refuses it too (``InputError`` naming the field) instead of
accepting what a real cluster never would.

* ``tags``: no empty key and none of Karpenter's own keys (``eks:eks-cluster-name``,
  ``kubernetes.io/cluster*``, ``karpenter.sh/nodepool``, ``karpenter.sh/nodeclaim``,
  ``karpenter.k8s.aws/ec2nodeclass``).
* ``amiSelectorTerms``: each term sets one of tags, id, name, alias, ssmParameter; ``id``
  and ``alias`` stand alone in their term; an ``alias`` term is the only term; an alias is
  ``family@version`` with a known family, Windows only ``@latest``; with an alias,
  ``amiFamily`` (when set) is the alias's family or ``Custom``. Selector-term tags have no
  empty key or value.
* ``kubelet``: eviction signals are the kubelet's six (``memory.available``,
  ``nodefs.available``, ``nodefs.inodesFree``, ``imagefs.available``,
  ``imagefs.inodesFree``, ``pid.available``); every ``evictionSoft`` signal has an
  ``evictionSoftGracePeriod`` and the reverse; ``imageGCHighThresholdPercent`` is above
  ``imageGCLowThresholdPercent``; reserved keys are ``cpu``, ``memory``,
  ``ephemeral-storage``, ``pid`` and not negative.
* ``blockDeviceMappings[].ebs``: ``snapshotID`` or ``volumeSize``; ``volumeSize`` matches
  the CRD's pattern (1-59000Gi, 1-64000G, 1-58Ti, 1-64T); ``volumeType`` one of EC2's
  seven types; ``volumeInitializationRate`` 100-300 and only with a snapshot. The CRD does not
  bound ``iops`` or ``throughput`` (EC2 rejects bad ones at launch), so neither does Joiner.
* ``capacityReservationSelectorTerms``: ``id`` (``cr-...``) alone, or ``tags`` with an
  optional ``ownerID`` (12 digits) and ``instanceMatchCriteria``; no empty tag key or value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from joiner.api import durations, quantity
from joiner.api import objects as o
from joiner.api.decimals import ascii_decimal
from joiner.api.errors import InputError
from joiner.api.manifests import models as m

#: Tag keys Karpenter sets itself; the CRD forbids them in ``spec.tags``.
RESTRICTED_TAG_KEYS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)
RESTRICTED_TAG_PREFIX = "kubernetes.io/cluster"
EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_KEYS = ("cpu", "memory", "ephemeral-storage", "pid")
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
ALIAS_FAMILIES = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
_VOLUME_SIZE = re.compile(
    r"(?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|5[0-8][0-9]{3}|59000)Gi"
    r"|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-3][0-9]{3}|64000)G"
    r"|(?:[1-9]|[1-4][0-9]|5[0-8])Ti"
    r"|(?:[1-9]|[1-5][0-9]|6[0-4])T"
)
_ALIAS = re.compile(r"[a-zA-Z0-9]+@.+")


def check_tags(tags: dict[str, str], field: str) -> None:
    """``spec.tags`` (module docstring).

    Raises:
        InputError: an empty or restricted key.
    """
    for key in tags:
        if key == "":
            raise InputError("empty tag keys aren't supported", field=field)
        if key in RESTRICTED_TAG_KEYS or key.startswith(RESTRICTED_TAG_PREFIX):
            raise InputError(
                f"tag {key!r} is restricted: Karpenter sets it on every instance",
                field=f"{field}.{key}",
            )


def _check_selector_tags(tags: dict[str, str], field: str) -> None:
    for key, value in tags.items():
        if key == "" or value == "":
            raise InputError("empty tag keys or values aren't supported", field=field)


def check_ami_terms(terms: list[m.AMISelectorTerm], ami_family: str | None) -> str | None:
    """``amiSelectorTerms`` (module docstring); returns the AMI family in effect, as
    Karpenter's ``AMIFamily()`` does: ``amiFamily`` when set, else the alias's family.

    Raises:
        InputError: a rule broken (the field names the term).
    """
    field = "spec.amiSelectorTerms"
    alias_family = None
    for i, t in enumerate(terms):
        where = f"{field}[{i}]"
        if not (t.tags or t.id or t.name or t.alias or t.ssmParameter):
            raise InputError(
                "expected at least one of tags, id, name, alias, ssmParameter", field=where
            )
        _check_selector_tags(t.tags, f"{where}.tags")
        if t.id and (t.alias or t.tags or t.name or t.owner):
            raise InputError(
                "'id' is mutually exclusive, cannot be set with other fields", field=where
            )
        if not t.alias:
            continue
        if t.tags or t.name or t.owner or t.ssmParameter:
            raise InputError(
                "'alias' is mutually exclusive, cannot be set with other fields", field=where
            )
        if len(terms) != 1:
            raise InputError("an 'alias' term must be the only term", field=field)
        if not _ALIAS.fullmatch(t.alias):
            raise InputError(
                f"alias {t.alias!r} must have the form family@version", field=f"{where}.alias"
            )
        name, version = t.alias.split("@", 1)
        if name not in ALIAS_FAMILIES:
            raise InputError(
                f"unknown alias family {name!r}; use one of {', '.join(ALIAS_FAMILIES)}",
                field=f"{where}.alias",
            )
        if name.startswith("windows") and version != "latest":
            raise InputError(
                "windows families may only specify version 'latest'", field=f"{where}.alias"
            )
        alias_family = ALIAS_FAMILIES[name]
    if alias_family is None:
        return ami_family
    if ami_family is not None and ami_family not in (alias_family, "Custom"):
        raise InputError(
            f"amiFamily must be {alias_family!r} or 'Custom' with alias {terms[0].alias!r}",
            field="spec.amiFamily",
        )
    return ami_family or alias_family


def check_block_devices(mappings: list[m.BlockDeviceMapping], field: str) -> None:
    """``blockDeviceMappings[].ebs`` (module docstring).

    Raises:
        InputError: a rule broken.
    """
    for i, b in enumerate(mappings):
        ebs = b.ebs
        if ebs is None:
            continue
        where = f"{field}[{i}].ebs"
        if ebs.snapshotID is None and ebs.volumeSize is None:
            raise InputError("snapshotID or volumeSize must be defined", field=where)
        if ebs.volumeSize is not None and not _VOLUME_SIZE.fullmatch(str(ebs.volumeSize)):
            raise InputError(
                f"volumeSize {ebs.volumeSize!r} must be 1-59000Gi, 1-64000G, 1-58Ti or 1-64T",
                field=f"{where}.volumeSize",
            )
        if ebs.volumeType is not None and ebs.volumeType not in VOLUME_TYPES:
            raise InputError(
                f"volumeType must be one of {', '.join(VOLUME_TYPES)}", field=f"{where}.volumeType"
            )
        rate = ebs.volumeInitializationRate
        if rate is not None:
            if not isinstance(rate, int) or isinstance(rate, bool) or not 100 <= rate <= 300:
                raise InputError(
                    "volumeInitializationRate must be an integer from 100 to 300",
                    field=f"{where}.volumeInitializationRate",
                )
            if not ebs.snapshotID:
                raise InputError(
                    "snapshotID must be set when volumeInitializationRate is set",
                    field=f"{where}.volumeInitializationRate",
                )


def _signals(raw: dict[str, str], field: str) -> None:
    for signal in raw:
        if signal not in EVICTION_SIGNALS:
            raise InputError(
                f"unknown eviction signal {signal!r}; use one of {', '.join(EVICTION_SIGNALS)}",
                field=f"{field}.{signal}",
            )


def _reserved(raw: Mapping[str, object], field: str) -> tuple[tuple[str, int], ...]:
    for key, value in raw.items():
        if key not in RESERVED_KEYS:
            raise InputError(
                f"unknown key {key!r}; use one of {', '.join(RESERVED_KEYS)}",
                field=f"{field}.{key}",
            )
        if str(value).startswith("-"):
            raise InputError("cannot be a negative resource quantity", field=f"{field}.{key}")
    parsed = quantity.parse_resources(raw, field=field)
    return tuple(sorted(parsed.items()))


def _threshold(value: str, field: str) -> tuple[int | None, float | None]:
    text = value.strip()
    if text.endswith("%"):
        pct = ascii_decimal(text[:-1])
        if pct is None:
            raise InputError(f"{value!r} is not a percentage", field=field)
        if not 0 <= pct <= 100:
            raise InputError(f"{value!r} must be a percentage from 0% to 100%", field=field)
        return None, pct
    return quantity.parse(text, resource="memory", field=field), None


def kubelet(k: m.Kubelet | m.ProvisionerKubelet | None, field: str) -> o.KubeletConfig:
    """The ``kubelet`` block as a ``KubeletConfig``, checked against the CRD (module
    docstring); values Karpenter renders into user data keep their text.

    Raises:
        InputError: a CRD rule broken or a value that does not parse.
    """
    if k is None:
        return o.KubeletConfig()
    for name in ("evictionHard", "evictionSoft", "evictionSoftGracePeriod"):
        _signals(getattr(k, name), f"{field}.{name}")
    soft, grace = set(k.evictionSoft), set(k.evictionSoftGracePeriod)
    if soft - grace:
        raise InputError(
            f"evictionSoft signal {sorted(soft - grace)[0]!r} has no evictionSoftGracePeriod",
            field=f"{field}.evictionSoftGracePeriod",
        )
    if grace - soft:
        raise InputError(
            f"evictionSoftGracePeriod signal {sorted(grace - soft)[0]!r} has no evictionSoft",
            field=f"{field}.evictionSoft",
        )
    high, low = k.imageGCHighThresholdPercent, k.imageGCLowThresholdPercent
    if high is not None and low is not None and high <= low:
        raise InputError(
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            field=f"{field}.imageGCHighThresholdPercent",
        )
    eviction: list[tuple[str, int | None, float | None]] = []
    for signal, value in sorted(k.evictionHard.items()):
        eviction.append((signal, *_threshold(value, f"{field}.evictionHard.{signal}")))
    for signal, value in k.evictionSoft.items():
        _threshold(value, f"{field}.evictionSoft.{signal}")
    grace_s: list[tuple[str, float]] = []
    for signal, value in sorted(k.evictionSoftGracePeriod.items()):
        seconds = durations.parse_seconds(value, field=f"{field}.evictionSoftGracePeriod.{signal}")
        assert seconds is not None  # Never is not allowed
        grace_s.append((signal, seconds))
    return o.KubeletConfig(
        max_pods=k.maxPods,
        pods_per_core=k.podsPerCore or None,
        system_reserved=_reserved(k.systemReserved, f"{field}.systemReserved"),
        kube_reserved=_reserved(k.kubeReserved, f"{field}.kubeReserved"),
        eviction_hard=tuple(eviction),
        system_reserved_text=tuple(sorted((a, str(b)) for a, b in k.systemReserved.items())),
        kube_reserved_text=tuple(sorted((a, str(b)) for a, b in k.kubeReserved.items())),
        eviction_hard_text=tuple(sorted(k.evictionHard.items())),
        eviction_soft=tuple(sorted(k.evictionSoft.items())),
        eviction_soft_grace_period_s=tuple(grace_s),
        eviction_max_pod_grace_period_s=k.evictionMaxPodGracePeriod,
        image_gc_high_threshold_percent=high,
        image_gc_low_threshold_percent=low,
        cpu_cfs_quota=k.cpuCFSQuota,
        cluster_dns=tuple(k.clusterDNS),
    )


def capacity_reservation_terms(
    terms: Sequence[m.CapacityReservationSelectorTerm], field: str
) -> tuple[o.CapacityReservationSelectorTerm, ...]:
    """``capacityReservationSelectorTerms`` as Karpenter-AWS's CRD validates them: each term
    gives ``id`` or ``tags`` (``ownerID`` and ``instanceMatchCriteria`` only narrow a tag
    term); ``id`` stands alone; tag keys and values are not empty.

    Raises:
        InputError: a term breaks one of those rules (the term is named).
    """
    out = []
    for i, t in enumerate(terms):
        where = f"{field}[{i}]"
        if t.id and (t.tags or t.ownerID or t.instanceMatchCriteria):
            raise InputError(
                "'id' is mutually exclusive, cannot be set along with tags, ownerID or "
                "instanceMatchCriteria",
                field=where,
            )
        if not t.id and not t.tags:
            raise InputError("expected at least one of 'tags' or 'id', got none", field=where)
        for k, v in t.tags.items():
            if not k or not v:
                raise InputError("empty tag keys or values aren't supported", field=f"{where}.tags")
        out.append(
            o.CapacityReservationSelectorTerm(
                id=t.id,
                tags=tuple(sorted(t.tags.items())),
                owner_id=t.ownerID,
                instance_match_criteria=t.instanceMatchCriteria,
            )
        )
    return tuple(out)
