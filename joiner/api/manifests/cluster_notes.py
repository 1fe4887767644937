"""Warnings about a cluster dump's state that every reader of it gives alike (``plan``,
``disrupt``, ``simulate``): Nodes no NodePool manages, and pods a scheduling gate holds.

Kubernetes leaves a pod with ``spec.schedulingGates`` out of scheduling until every gate is
removed (``pkg/scheduler/framework/plugins/schedulinggates``, ``PreEnqueue``), and Karpenter
does not provision for it (karpenter ``pkg/utils/pod/scheduling.go``, ``IsProvisionable``
requires no gate). A Node no NodePool manages (an EKS managed node group, a self-managed or
Fargate node) is static capacity: its pods run there, and Karpenter never disrupts it.
"""

from __future__ import annotations

from collections.abc import Sequence

from joiner.api.grouping import grouped, plural
from joiner.api.manifests.manifestset import ManifestSet


def gated_pods(m: ManifestSet) -> list[str]:
    """Keys (``namespace/name``) of the live pods held by ``spec.schedulingGates``: not
    terminal, not bound, not provisionable, with at least one gate."""
    return [
        p.key
        for p in m.pods
        if not p.terminal and p.node_name is None and not p.provisionable and p.scheduling_gates
    ]


def static_nodes(m: ManifestSet) -> list[str]:
    """Names of the manifests' Nodes no NodePool manages."""
    return [n.name for n in m.nodes if n.nodepool is None]


def gated_warning(keys: Sequence[str]) -> str:
    """The one warning naming every gated pod in ``keys`` (non-empty)."""
    return grouped(
        f"{plural(len(keys), 'pod')} held by spec.schedulingGates "
        f"{'is' if len(keys) == 1 else 'are'} left out: nothing schedules or "
        "provisions for a pod until its gates are removed",
        keys,
    )


def static_capacity_warning(names: Sequence[str]) -> str:
    """The one warning naming every static-capacity Node in ``names`` (non-empty)."""
    return grouped(
        f"{plural(len(names), 'node')} outside any NodePool "
        f"{'is' if len(names) == 1 else 'are'} static capacity (their pods run there; "
        "Joiner never launches, disrupts or prices them)",
        names,
    )
