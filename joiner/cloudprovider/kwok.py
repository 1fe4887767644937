"""Karpenter's kwok cloud provider, for planning against what Karpenter-kwok would launch.

Karpenter ships a test cloud provider, ``sigs.k8s.io/karpenter/kwok``: its instance types come
from a JSON file (``--instance-types-file-path``), its NodeClass is ``KWOKNodeClass``
(``karpenter.kwok.sh/v1alpha1``) and a launch creates a Node that kwok makes Ready. Joiner
reads the same file so that a plan over KWOKNodeClass NodePools sees exactly the instance
types, capacity, overhead, offerings and prices Karpenter-kwok sees (docs/fidelity.md).

Upstream rules reproduced here (karpenter v1.14.0, ``kwok/cloudprovider/helpers.go``):

* ``setDefaultOptions``: ``pods`` defaults to 110; labels ``karpenter.kwok.sh/instance-size``
  (the AWS-style suffix of the name, else the cpu quantity), ``instance-family`` (the name up
  to the first ``.`` or ``-``), ``instance-cpu`` and ``instance-memory`` (the quantities as
  written); every offering is available.
* ``newInstanceType``: requirements on instance type, arch, os, the offerings' zones and
  capacity types, and the four kwok labels; overhead is kube-reserved ``cpu: 100m,
  memory: 10Mi`` for every type (no system-reserved, no eviction threshold).

And ``kwok/cloudprovider/cloudprovider.go`` ``toNode`` for the launch: over the NodeClaim's
instance types in name order, each type's cheapest available compatible offering; a type
wins only when strictly cheaper than the best so far (so ties go to the first name). Among
offerings of one type at the same price Karpenter-kwok picks at random; Joiner takes the
first zone by name (cases that compare zones avoid such ties). The prices are the file's:
``toNode`` looks the types up in the provider's own list, which ``kwok/main.go`` wraps in
the NodeOverlay decorator only for everyone else (``overlay.Decorate``), so an overlay's
price orders the NodeClaim's instance types but never changes which one launches.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from joiner.api import labels, resourcenames
from joiner.api.clock import Clock
from joiner.api.errors import InputError
from joiner.api.jsontext import parse_json
from joiner.api.manifests.yamlio import read_text
from joiner.api.objects import NodeClass
from joiner.api.quantity import Resources, parse_resources, subtract
from joiner.api.requirements import Requirement, Requirements
from joiner.api.validation import describe, field_path
from joiner.cloudprovider.simulated.provider import SimulatedCloudProvider
from joiner.cloudprovider.types import (
    Instance,
    InstanceType,
    InsufficientCapacityError,
    LaunchRequest,
    Offering,
)

KWOK_GROUP = "karpenter.kwok.sh"
KWOK_NODECLASS_KIND = "KWOKNodeClass"
INSTANCE_SIZE = labels.KWOK_INSTANCE_SIZE
INSTANCE_FAMILY = labels.KWOK_INSTANCE_FAMILY
INSTANCE_CPU = labels.KWOK_INSTANCE_CPU
INSTANCE_MEMORY = labels.KWOK_INSTANCE_MEMORY
#: The provider id prefix of kwok Nodes (``kwok://<node name>``).
PROVIDER_PREFIX = "kwok://"
#: kube-reserved of every kwok instance type (``newInstanceType``).
OVERHEAD: Resources = {"cpu": 100, "memory": 10 * 1024 * 1024}
DEFAULT_PODS = 110

_AWS_NAME = re.compile(r"^\w+\.(nano|micro|small|medium|large|\d*xlarge|metal)$")
_FAMILY_DELIM = re.compile(r"[.-]")


def _size(name: str, cpu: str) -> str:
    """``parseSizeFromType``: the AWS-style size suffix, else the cpu quantity."""
    match = _AWS_NAME.match(name)
    return match.group(1) if match else cpu


def _family(name: str) -> str:
    """``parseFamilyFromType``: the name up to the first ``.`` or ``-`` (else its first letter)."""
    parts = _FAMILY_DELIM.split(name, maxsplit=1)
    return parts[0] if len(parts) == 2 else name[:1]


class _KwokModel(BaseModel):
    """The file's JSON as Go's ``encoding/json`` decodes it into Karpenter-kwok's structs:
    unknown keys are ignored, a value of the wrong JSON type (``"0.5"`` for a price, ``5``
    for a requirement value, ``true`` for a price) is an error, not coerced."""

    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False, defer_build=True)


class KwokRequirement(_KwokModel):
    """``corev1.NodeSelectorRequirement`` of an offering (only ``In`` is supported)."""

    key: str = Field(min_length=1)
    operator: Literal["In"] = "In"
    values: list[str] | None = None


class KwokOffering(_KwokModel):
    """``KWOKOffering``: the embedded ``cloudprovider.Offering`` (``Price``, USD per hour;
    ``Available`` is ignored, as ``setDefaultOptions`` makes every offering available) and
    its ``Requirements``. Go matches the keys case-insensitively; ``Price`` and ``price``
    are both read."""

    price: float = Field(ge=0, validation_alias=AliasChoices("Price", "price"))
    requirements: list[KwokRequirement] | None = Field(
        default=None, validation_alias=AliasChoices("Requirements", "requirements")
    )


class KwokInstanceTypeOptions(_KwokModel):
    """One ``InstanceTypeOptions`` entry. ``resources`` is a ``corev1.ResourceList``: its
    keys are resource names (``resourcenames.RESOURCE``, as the API server checks a Node's
    capacity), its values quantities."""

    name: str = Field(min_length=1)
    architecture: str = ""
    operatingSystems: list[str] | None = None
    resources: dict[str, StrictStr | StrictInt | StrictFloat] | None = None
    offerings: list[KwokOffering] | None = None


_FILE = TypeAdapter(list[KwokInstanceTypeOptions])


def _offering(raw: KwokOffering, field: str) -> Offering:
    values = {r.key: r.values or [] for r in raw.requirements or []}
    zone = values.get(labels.ZONE, [""])
    capacity_type = values.get(labels.CAPACITY_TYPE, [""])
    if len(zone) != 1 or len(capacity_type) != 1 or not zone[0] or not capacity_type[0]:
        raise InputError(
            "each offering needs exactly one topology.kubernetes.io/zone and one "
            "karpenter.sh/capacity-type value",
            field=f"{field}.Requirements",
        )
    return Offering(
        zone=zone[0], zone_id="", capacity_type=capacity_type[0], price_per_hour=raw.price
    )


def instance_type_from_options(raw: KwokInstanceTypeOptions, field: str) -> InstanceType:
    """One ``InstanceTypeOptions`` entry of the file as an ``InstanceType`` (module rules).

    Raises:
        InputError: a resource name or quantity is malformed, or an offering lacks its zone
            or capacity type; the field (under ``field``) is named.
    """
    name = raw.name
    resources = raw.resources or {}
    capacity: Resources = {"pods": DEFAULT_PODS}
    capacity.update(
        parse_resources(resources, field=f"{field}.resources", names=resourcenames.RESOURCE)
    )
    cpu = str(resources.get("cpu", ""))
    memory = str(resources.get("memory", ""))
    offerings = tuple(
        _offering(o, f"{field}.offerings[{i}]") for i, o in enumerate(raw.offerings or [])
    )
    if not offerings:
        raise InputError(f"instance type {name} has no offerings", field=f"{field}.offerings")
    zones = sorted({o.zone for o in offerings})
    capacity_types = sorted({o.capacity_type for o in offerings})
    reqs = Requirements(
        [
            Requirement.in_(labels.INSTANCE_TYPE, name),
            Requirement.in_(labels.ARCH, raw.architecture),
            Requirement.in_(labels.OS, *(raw.operatingSystems or [])),
            Requirement.in_(labels.ZONE, *zones),
            Requirement.in_(labels.CAPACITY_TYPE, *capacity_types),
            Requirement.in_(INSTANCE_SIZE, _size(name, cpu)),
            Requirement.in_(INSTANCE_FAMILY, _family(name)),
            Requirement.in_(INSTANCE_CPU, cpu),
            Requirement.in_(INSTANCE_MEMORY, memory),
        ]
    )
    overhead = dict(OVERHEAD)
    allocatable = {k: max(0, v) for k, v in subtract(capacity, overhead).items()}
    return InstanceType(
        name=name,
        requirements=reqs,
        capacity=capacity,
        overhead=overhead,
        allocatable=allocatable,
        offerings=tuple(sorted(offerings, key=lambda o: (o.zone, o.capacity_type))),
    )


def load_instance_types(path: Path) -> list[InstanceType]:
    """Read a Karpenter-kwok instance-types file (a JSON list), sorted by name.

    Raises:
        InputError: the file is missing, not JSON, or an entry is malformed: the file, the
            instance type and the field (``[2].offerings[0].Price``) are named.
    """
    file = str(path)
    what = "instance-types file"
    raw = parse_json(read_text(path, what=what), what=what, file=file)
    if not isinstance(raw, list):
        raise InputError("expected a JSON list of instance types", file=file)
    try:
        entries = _FILE.validate_python(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        index = err["loc"][0] if err["loc"] else None
        entry = raw[index] if isinstance(index, int) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        raise InputError(
            describe(err),
            file=file,
            obj=f"instance type {name}" if isinstance(name, str) and name else None,
            field=field_path(tuple(err["loc"])),
        ) from exc
    types = []
    for i, entry in enumerate(entries):
        try:
            types.append(instance_type_from_options(entry, f"[{i}]"))
        except InputError as exc:
            raise exc.located(file=file, obj=f"instance type {entry.name}") from exc
    return sorted(types, key=lambda t: t.name)


def choose_kwok_offering(
    types: Sequence[InstanceType], reqs: Requirements
) -> tuple[InstanceType, Offering] | None:
    """Karpenter-kwok's launch choice (``toNode``; see the module docstring), or None.
    Prices are the file's (``Offering.cost_per_hour``), not a NodeOverlay's."""
    best: tuple[InstanceType, Offering] | None = None
    for it in sorted(types, key=lambda t: t.name):
        offers = it.available_offerings(reqs)
        if not offers:
            continue
        cheapest = min(offers, key=lambda o: (o.cost_per_hour, o.zone))
        if best is None or cheapest.cost_per_hour < best[1].cost_per_hour:
            best = (it, cheapest)
    return best


class KwokCloudProvider(SimulatedCloudProvider):
    """The simulated cloud with Karpenter-kwok's instance types and launch rule.

    Every KWOKNodeClass sees the same instance types (kwok's ``GetInstanceTypes`` ignores
    the NodePool); provider ids are ``kwok://<instance id>``.
    """

    def __init__(
        self,
        instance_types: Sequence[InstanceType],
        clock: Clock,
        rng: random.Random,
        *,
        node_classes: Sequence[NodeClass],
        region: str = "",
    ) -> None:
        from joiner.cloudprovider.catalog import Catalog

        super().__init__(
            Catalog.load(),
            region,
            clock,
            rng,
            subnets=(),
            security_groups=(),
            node_classes=node_classes,
        )
        self.kwok_types = list(instance_types)

    def _base_types(self, node_class: str) -> list[InstanceType]:
        self._node_class(node_class)
        return list(self.kwok_types)

    def create(self, request: LaunchRequest) -> Instance:
        """Launch as Karpenter-kwok does (module docstring).

        Raises:
            NodeClassNotReadyError: the NodeClass does not exist.
            InsufficientCapacityError: no allowed offering is available.
        """
        self._node_class(request.node_class)
        choice = choose_kwok_offering(request.instance_types, request.requirements)
        if choice is None:
            raise InsufficientCapacityError(
                f"no available offering for nodeclaim {request.nodeclaim_name}"
            )
        it, offering = choice
        instance_id = f"kwok-{request.nodeclaim_name}"
        instance = Instance(
            provider_id=self.provider_id(offering.zone, instance_id),
            instance_id=instance_id,
            instance_type=it,
            offering=offering,
            subnet_id="",
            launched_at_s=self._clock.now(),
        )
        self._instances[instance.provider_id] = instance
        return instance

    def provider_id(self, zone: str, instance_id: str) -> str:
        """kwok Nodes' ``spec.providerID``: ``kwok://<node name>``."""
        return PROVIDER_PREFIX + instance_id

    def is_drifted(self, provider_id: str) -> str:
        """Never: kwok has no NodeClass drift (``IsDrifted`` returns "").

        Raises:
            NodeClaimNotFoundError: the instance is gone.
        """
        self.get(provider_id)
        return ""
