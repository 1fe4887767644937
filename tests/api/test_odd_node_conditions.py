"""A Node condition whose status is not ``True``, ``False`` or ``Unknown`` warns, naming the
field (``loader._note_odd_conditions``); it is read as upstream reads it: a Ready status
other than ``True`` is NotReady for budgets, and only ``False``/``Unknown`` add taints."""

from __future__ import annotations

import pytest

from joiner.api.manifests import load_text

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: node-a}
status:
  conditions: [{type: MemoryPressure, status: "False"}, {type: TYPE, status: STATUS}]
"""


def _load(kind: str, status: str) -> tuple[list[str], bool, int]:
    loaded = load_text(NODE.replace("TYPE", kind).replace("STATUS", status), "dump.yaml")
    (node,) = loaded.nodes
    return loaded.warnings, node.ready, len(node.scheduling_taints)


def test_a_lowercase_ready_status_warns_and_is_not_ready_without_a_taint() -> None:
    """``status: "false"`` (hand-written) was NotReady for budgets and still took pods,
    without a word."""
    warnings, ready, taints = _load("Ready", '"false"')
    assert warnings == [
        "dump.yaml: Node/node-a: field status.conditions[1].status: 'false' is not True, "
        "False or Unknown: Karpenter counts the node NotReady against disruption budgets, "
        "but it gets no not-ready taint, so pods are still placed there"
    ]
    assert not ready and taints == 0


def test_another_conditions_odd_status_says_it_adds_no_taint() -> None:
    warnings, ready, taints = _load("DiskPressure", "Maybe")
    assert warnings == [
        "dump.yaml: Node/node-a: field status.conditions[1].status: 'Maybe' is not True, "
        "False or Unknown: it adds no taint"
    ]
    assert ready and taints == 0


@pytest.mark.parametrize("status", ['"True"', '"False"', "Unknown"])
def test_the_three_statuses_draw_nothing(status: str) -> None:
    assert _load("Ready", status)[0] == []
