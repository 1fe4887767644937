"""Interruption settings: the AWS Node Termination Handler's Helm values, as users have them.

Accepted with or without the ``aws-node-termination-handler:`` wrapper. Without any values,
Joiner behaves like Karpenter: drain on Spot interruption warnings, scheduled changes and
ending state changes; ignore rebalance recommendations. NTH's own defaults apply to keys a
values file leaves out (``enableSpotInterruptionDraining`` and
``enableScheduledEventDraining`` true, rebalance monitoring and draining false).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from joiner.api.errors import InputError

WRAPPER = "aws-node-termination-handler"
_KNOWN_BOOLS = {
    "enableSpotInterruptionDraining": "spot_draining",
    "enableRebalanceMonitoring": "rebalance_monitoring",
    "enableRebalanceDraining": "rebalance_draining",
    "enableScheduledEventDraining": "scheduled_draining",
}


@dataclass(frozen=True, slots=True)
class InterruptionSettings:
    """What to do on each kind of cloud event.

    Attributes:
        spot_draining: cordon and drain on a Spot interruption warning.
        rebalance_monitoring: cordon on a rebalance recommendation.
        rebalance_draining: on a rebalance recommendation, launch a replacement, then drain
            once it is Ready or the 2-minute warning comes (make before break).
        scheduled_draining: cordon and drain on an AWS Health scheduled change.
        node_selector: NTH's ``nodeSelector``: the rebalance options apply only to nodes with
            these labels (Karpenter's own handling applies to every node).
    """

    spot_draining: bool = True
    rebalance_monitoring: bool = False
    rebalance_draining: bool = False
    scheduled_draining: bool = True
    node_selector: tuple[tuple[str, str], ...] = ()

    def selects(self, node_labels: Mapping[str, str]) -> bool:
        """The node carries every label of ``node_selector``."""
        return all(node_labels.get(k) == v for k, v in self.node_selector)

    @staticmethod
    def from_helm_values(
        values: Any, *, file: str | None = None, field: str = ""
    ) -> InterruptionSettings:
        """Read NTH Helm values; unknown NTH keys (webhooks, queue settings) are ignored.

        Raises:
            InputError: not a mapping, a known key with a wrong type.
        """
        prefix = f"{field}." if field else ""
        if values is None:
            return InterruptionSettings()
        if not isinstance(values, dict):
            raise InputError("NTH values must be a mapping", file=file, field=field or None)
        if WRAPPER in values:
            inner = values[WRAPPER]
            if not isinstance(inner, dict):
                raise InputError("must be a mapping", file=file, field=f"{prefix}{WRAPPER}")
            prefix = f"{prefix}{WRAPPER}."
            values = inner
        kwargs: dict[str, Any] = {}
        for key, attr in _KNOWN_BOOLS.items():
            if key in values:
                v = values[key]
                if not isinstance(v, bool):
                    raise InputError(
                        f"must be true or false, got {v!r}", file=file, field=prefix + key
                    )
                kwargs[attr] = v
        selector = values.get("nodeSelector", {}) or {}
        if not isinstance(selector, dict) or not all(
            isinstance(k, str) and isinstance(v, str | int | float | bool)
            for k, v in selector.items()
        ):
            raise InputError(
                "must map label keys to values", file=file, field=prefix + "nodeSelector"
            )
        kwargs["node_selector"] = tuple(
            sorted(
                (k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in selector.items()
            )
        )
        return InterruptionSettings(**kwargs)
