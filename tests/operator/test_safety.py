"""``joiner run --cloud simulated`` refuses a cluster whose Nodes kwok does not manage
(``operator/safety.py``); the end-to-end refusal is in ``tests/e2e/test_controller.py``."""

from __future__ import annotations

import pytest

from joiner.api.errors import InputError
from joiner.operator.safety import check_simulated_cluster, unmanaged_nodes


def _node(name: str, annotations: dict[str, str] | None = None) -> dict:
    return {"metadata": {"name": name, "annotations": annotations}}


KWOK = {"kwok.x-k8s.io/node": "fake"}


def test_only_nodes_annotated_fake_are_kwok_managed() -> None:
    nodes = [
        _node("kwok-1", KWOK),
        _node("plain"),
        _node("other-value", {"kwok.x-k8s.io/node": "real"}),
        _node("a-real", {"team": "x"}),
    ]
    assert unmanaged_nodes(nodes) == ["a-real", "other-value", "plain"]
    check_simulated_cluster([_node("kwok-1", KWOK), _node("kwok-2", KWOK)])
    check_simulated_cluster([])  # an empty cluster is kwok's to fill


def test_the_refusal_names_five_nodes_the_count_and_the_flag() -> None:
    nodes = [_node(f"ip-10-0-0-{i}") for i in range(7)] + [_node("kwok-1", KWOK)]
    with pytest.raises(InputError) as info:
        check_simulated_cluster(nodes)
    message = str(info.value)
    assert message.startswith("field --cloud: this cluster has 7 Node(s) not managed by kwok")
    assert "ip-10-0-0-0, ip-10-0-0-1, ip-10-0-0-2, ip-10-0-0-3, ip-10-0-0-4 and 2 more" in message
    assert "ip-10-0-0-5" not in message and "kwok-1" not in message
    assert "--allow-simulated-nodes" in message and "--cloud aws" in message
