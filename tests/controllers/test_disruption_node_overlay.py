"""Consolidation's price comparisons with NodeOverlays (Karpenter's ``NodeOverlay`` gate):
a running node is priced as the overlays price its type, as Karpenter's candidates read
their price from the overlaid instance types."""

from __future__ import annotations

import pytest

from joiner.api.featuregates import FeatureGates
from tests.controllers.disruption_fixtures import dry_run, node, nodepool, pod

ON = FeatureGates(node_overlay=True)

#: m5.4xlarge (catalog $0.768/h) priced at $0.01/h for decisions.
CHEAP_BIG = """
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: committed}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.4xlarge]}]
  price: "0.01"
"""


def _plan(tmp_path, gates=None):
    return dry_run(
        tmp_path,
        nodepool(),
        node("big", "m5.4xlarge"),
        pod("web-1", "big", cpu="1"),
        CHEAP_BIG,
        gates=gates,
    ).plan()


def test_an_overlay_pricing_the_node_low_stops_its_replacement_only_with_the_gate_on(tmp_path):
    off = _plan(tmp_path)
    (cmd,) = off.commands
    assert cmd.method == "SingleNodeConsolidation" and cmd.candidates == ["big"]
    assert any("enable the NodeOverlay feature gate" in w for w in off.warnings)
    on = _plan(tmp_path, ON)
    # Nothing is cheaper than $0.01/h: the node stays.
    assert on.commands == []
    assert "big" in {u.node for u in on.unconsolidatable}
    # The cluster's cost is still the catalog's price of the node.
    assert on.costPerHourAfter == pytest.approx(0.768)
