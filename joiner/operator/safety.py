"""Start-up refusals of ``joiner run`` that keep it from harming a cluster it was pointed at
by mistake: ``--cloud simulated`` writes kwok Nodes, which only a kwok-managed cluster
should get.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from joiner.api.errors import InputError

#: kwok manages the Nodes carrying this annotation with this value (kwok's default
#: ``--manage-nodes-with-annotation-selector``); Joiner's simulated Nodes carry it too
#: (``cluster/kube/actuator.py``).
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_VALUE = "fake"
#: How many offending Nodes the refusal names.
NAMED = 5


def unmanaged_nodes(nodes: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names (sorted) of the Node documents kwok does not manage: without the
    ``kwok.x-k8s.io/node: fake`` annotation."""
    out = []
    for doc in nodes:
        meta = doc.get("metadata") or {}
        if (meta.get("annotations") or {}).get(KWOK_NODE_ANNOTATION) != KWOK_NODE_VALUE:
            out.append(str(meta.get("name", "")))
    return sorted(out)


def check_simulated_cluster(nodes: Iterable[Mapping[str, Any]]) -> None:
    """Refuse ``--cloud simulated`` on a cluster with Nodes kwok does not manage.

    Raises:
        InputError: naming up to ``NAMED`` of those Nodes, how many there are, and
            ``--allow-simulated-nodes``.
    """
    names = unmanaged_nodes(nodes)
    if not names:
        return
    shown = ", ".join(names[:NAMED]) + (
        f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
    )
    raise InputError(
        f"this cluster has {len(names)} Node(s) not managed by kwok (no "
        f"{KWOK_NODE_ANNOTATION}: {KWOK_NODE_VALUE} annotation): {shown}; --cloud simulated "
        "would add simulated kwok Nodes to it. Use --cloud aws for a real cluster, or give "
        "--allow-simulated-nodes if this is meant",
        field="--cloud",
    )
