"""The NodeOverlay value (``karpenter.sh/v1alpha1``, Karpenter's alpha ``NodeOverlay``
feature gate) as loading manifests produces it.

Parsing and the API server's checks are in ``api.manifests.nodeoverlay``; which instance
types and offerings an overlay changes, and how, is ``cloudprovider.overlay``.
"""

from __future__ import annotations

from dataclasses import dataclass

from joiner.api.requirements import Requirements


@dataclass(frozen=True, slots=True)
class NodeOverlay:
    """One NodeOverlay (Karpenter ``pkg/apis/v1alpha1/nodeoverlay.go`` ``NodeOverlaySpec``).

    Attributes:
        name: ``metadata.name`` (cluster-scoped).
        requirements: ``spec.requirements``: the instance types and offerings it selects.
        price: ``spec.price``, an absolute price in USD per hour as written (``"0.5"``).
        price_adjustment: ``spec.priceAdjustment`` as written: a signed absolute change
            (``"-0.5"``, ``"+1.2"``) or a signed percentage (``"-15%"``, ``"+10%"``).
        capacity: ``spec.capacity``: extended resources added to the selected types, as
            sorted (name, amount) pairs in base units.
        weight: ``spec.weight`` (1-10000), 0 when unset (Karpenter reads a nil weight as 0).
        fields: the ``spec`` fields set, for the warning when the gate is off.
        where: ``file: NodeOverlay/name``, for warnings.
    """

    name: str
    requirements: Requirements
    price: str | None = None
    price_adjustment: str | None = None
    capacity: tuple[tuple[str, int], ...] = ()
    weight: int = 0
    fields: tuple[str, ...] = ()
    where: str = ""

    @property
    def price_change(self) -> str | None:
        """``price`` when set, else ``price_adjustment`` (Karpenter
        ``pkg/controllers/nodeoverlay/store.go`` ``updateInstanceTypeOffering``)."""
        return self.price if self.price is not None else self.price_adjustment


def gate_warnings(overlays: list[NodeOverlay], enabled: bool) -> list[str]:
    """The warning each overlay gets when the ``NodeOverlay`` gate is off (none when on)."""
    if enabled:
        return []
    return [
        f"{o.where}: NodeOverlay is not modelled ({', '.join('spec.' + f for f in o.fields)}"
        " have no effect): instance-type prices and capacities stay as the catalog gives "
        "them; enable the NodeOverlay feature gate to apply it"
        for o in overlays
    ]
