"""Interruption settings: the AWS Node Termination Handler's Helm values, as users have them.

Accepted with or without the ``aws-node-termination-handler:`` wrapper. Without any values,
Joiner behaves like Karpenter: drain on Spot interruption warnings, scheduled changes and
ending state changes; ignore rebalance recommendations. NTH's own defaults apply to keys a
values file leaves out (``enableSpotInterruptionDraining`` and
``enableScheduledEventDraining`` true, rebalance monitoring and draining false). The values
keep NTH's meaning (aws-node-termination-handler ``pkg/config``, ``pkg/interruptionevent``):

* ``enableRebalanceDraining``: cordon and drain the node now; NTH launches nothing, the
  evicted pods go pending and the provisioner sees them then;
* ``enableRebalanceMonitoring``: cordon only;
* ``cordonOnly``: every event only cordons, nothing is drained;
* ``dryRun``: NTH only logs, the node is left alone;
* ``nodeSelector``: the rebalance options apply only to nodes with these labels.

Chart values about NTH's own deployment (image, resources, webhooks, the queue, logging,
metrics...) change nothing here and pass silently; node-handling values Joiner does not
model (``taintNode``, ``excludeFromLoadBalancers``, ``podTerminationGracePeriod``...) draw
one grouped warning, and keys the chart does not have one warning naming them.

Joiner's make-before-break rebalance (launch the replacement first, drain once the pods fit
elsewhere or the warning comes) is not an NTH value: it is the Joiner setting
``rebalanceReplacement: true`` (scenario ``spec.interruption``, controller settings
``interruption``), off by default.
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
    "cordonOnly": "cordon_only",
    "dryRun": "dry_run",
}

#: Joiner's own key beside the NTH values: make-before-break rebalance.
REBALANCE_REPLACEMENT = "rebalanceReplacement"

#: Chart values about how NTH handles nodes that Joiner does not model (warned, grouped).
NOT_MODELLED = frozenset(
    {
        "taintNode",
        "taintEffect",
        "excludeFromLoadBalancers",
        "deleteLocalData",
        "ignoreDaemonSets",
        "gracePeriod",
        "podTerminationGracePeriod",
        "nodeTerminationGracePeriod",
        "checkASGTagBeforeDraining",
        "checkTagBeforeDraining",
        "managedAsgTag",
        "managedTag",
        "assumeAsgTagPropagation",
        "useProviderId",
        "enableASGLifecycleDraining",
        "enableOutOfServiceTaint",
        "completeLifecycleActionDelaySeconds",
        "heartbeatInterval",
        "heartbeatUntil",
        "deleteSqsMsgIfNodeNotFound",
        "enableSqsTerminationDraining",
        "linuxNodeSelector",
        "windowsNodeSelector",
        "daemonsetNodeSelector",
        "targetNodeOs",
    }
)

#: Chart values about NTH's own deployment: no effect on nodes, silent.
DEPLOYMENT_VALUES = frozenset(
    {
        "image",
        "securityContext",
        "podSecurityContext",
        "nameOverride",
        "fullnameOverride",
        "priorityClassName",
        "podAnnotations",
        "linuxPodAnnotations",
        "windowsPodAnnotations",
        "podLabels",
        "linuxPodLabels",
        "windowsPodLabels",
        "customLabels",
        "probes",
        "resources",
        "queueURL",
        "awsRegion",
        "awsEndpoint",
        "awsSecretAccessKey",
        "awsAccessKeyID",
        "metadataTries",
        "jsonLogging",
        "logLevel",
        "logFormatVersion",
        "webhookURL",
        "webhookURLSecretName",
        "webhookProxy",
        "webhookHeaders",
        "webhookTemplateConfigMapName",
        "webhookTemplateConfigMapKey",
        "webhookTemplate",
        "instanceMetadataURL",
        "procUptimeFile",
        "enablePrometheusServer",
        "prometheusServerPort",
        "enableProbesServer",
        "probesServerPort",
        "probesServerEndpoint",
        "emitKubernetesEvents",
        "kubernetesEventsExtraAnnotations",
        "tolerations",
        "affinity",
        "linuxAffinity",
        "windowsAffinity",
        "daemonsetTolerations",
        "daemonsetAffinity",
        "nodeSelectorTermsOs",
        "nodeSelectorTermsArch",
        "serviceAccount",
        "rbac",
        "dnsPolicy",
        "dnsConfig",
        "podMonitor",
        "serviceMonitor",
        "updateStrategy",
        "linuxUpdateStrategy",
        "windowsUpdateStrategy",
        "useHostNetwork",
        "workers",
        "replicas",
        "podDisruptionBudget",
        "extraEnv",
        "topologySpreadConstraints",
        "global",
    }
)


@dataclass(frozen=True, slots=True)
class InterruptionSettings:
    """What to do on each kind of cloud event.

    Attributes:
        spot_draining: cordon and drain on a Spot interruption warning.
        rebalance_monitoring: cordon on a rebalance recommendation.
        rebalance_draining: on a rebalance recommendation, launch a replacement, then drain
            once it is Ready or the 2-minute warning comes (make before break).
        rebalance_draining: NTH ``enableRebalanceDraining``: on a rebalance recommendation,
            cordon and drain now (no replacement is launched first).
        scheduled_draining: cordon and drain on an AWS Health scheduled change.
        node_selector: NTH's ``nodeSelector``: the rebalance options apply only to nodes with
            these labels (Karpenter's own handling applies to every node).
        cordon_only: NTH ``cordonOnly``: every event only cordons.
        dry_run: NTH ``dryRun``: nothing is done to nodes.
        rebalance_replacement: Joiner's make-before-break: on a rebalance recommendation,
            launch the replacement, then drain once it is Ready or the 2-minute warning comes.
        warnings: what the values hold that Joiner does not model or NTH does not know.
    """

    spot_draining: bool = True
    rebalance_monitoring: bool = False
    rebalance_draining: bool = False
    scheduled_draining: bool = True
    node_selector: tuple[tuple[str, str], ...] = ()
    cordon_only: bool = False
    dry_run: bool = False
    rebalance_replacement: bool = False
    warnings: tuple[str, ...] = ()

    def selects(self, node_labels: Mapping[str, str]) -> bool:
        """The node carries every label of ``node_selector``."""
        return all(node_labels.get(k) == v for k, v in self.node_selector)

    @staticmethod
    def from_helm_values(
        values: Any,
        *,
        file: str | None = None,
        field: str = "",
        rebalance_replacement: bool = False,
    ) -> InterruptionSettings:
        """Read NTH Helm values (module docstring); ``rebalance_replacement`` is Joiner's
        own setting, given beside them.

        Raises:
            InputError: not a mapping, a known key with a wrong type.
        """
        prefix = f"{field}." if field else ""
        if values is None:
            return InterruptionSettings(rebalance_replacement=rebalance_replacement)
        if not isinstance(values, dict):
            raise InputError("NTH values must be a mapping", file=file, field=field or None)
        beside: list[str] = []
        if WRAPPER in values:
            inner = values[WRAPPER]
            if inner is None:  # a section whose lines are all commented out: Helm reads {}
                inner = {}
            if not isinstance(inner, dict):
                raise InputError("must be a mapping", file=file, field=f"{prefix}{WRAPPER}")
            beside = sorted(str(k) for k in values if k != WRAPPER)
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
        where = f"{file}: " if file else ""
        known = set(_KNOWN_BOOLS) | {"nodeSelector"}
        not_modelled = sorted(
            k for k in values if k in NOT_MODELLED and values[k] not in ("", None)
        )
        unknown = sorted(
            str(k) for k in values if k not in known | NOT_MODELLED | DEPLOYMENT_VALUES
        )
        warnings = []
        if not_modelled:
            warnings.append(
                f"{where}{field or 'NTH values'}: not modelled (the simulation behaves as if "
                f"they were unset): {', '.join(prefix + k for k in not_modelled)}"
            )
        if unknown:
            hint = (
                f"; {REBALANCE_REPLACEMENT} is Joiner's setting: give it beside the values, "
                "not inside the aws-node-termination-handler wrapper"
                if REBALANCE_REPLACEMENT in unknown
                else ""
            )
            warnings.append(
                f"{where}{field or 'NTH values'}: not values of the aws-node-termination-handler "
                f"chart, ignored: {', '.join(prefix + k for k in unknown)}{hint}"
            )
        if beside:
            outer = f"{field}." if field else ""
            warnings.append(
                f"{where}{field or 'NTH values'}: beside the {WRAPPER} wrapper, so not read "
                f"(move them inside it): {', '.join(outer + k for k in beside)}"
            )
        return InterruptionSettings(
            **kwargs, rebalance_replacement=rebalance_replacement, warnings=tuple(warnings)
        )
