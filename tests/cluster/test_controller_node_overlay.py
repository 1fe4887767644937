"""Controller mode with Karpenter's ``NodeOverlay`` gate: NodeOverlays are watched only
with the gate on, and those the API holds reach the provisioner's instance types."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from joiner.api import labels
from joiner.cluster.kube import client as kube
from joiner.operator.controller import ControllerRuntime, ControllerSettings
from joiner.operator.controller_settings import FeatureGateSettings
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, _doc, _pod
from tests.manifests import unschedulable

OVERLAY = _doc(
    kube.NODEOVERLAY,
    {
        "metadata": {"name": "spot-discount", "generation": 1},
        "spec": {
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": ["m5.large"],
                }
            ],
            "priceAdjustment": "-50%",
            "capacity": {"example.com/gpu": "1"},
        },
    },
)


def _runtime(gate: bool) -> ControllerRuntime:
    return ControllerRuntime(
        None,
        settings=ControllerSettings(featureGates=FeatureGateSettings(nodeOverlay=gate)),
        dry_run=True,
        metrics_port=None,
        health_port=None,
    )


def test_nodeoverlays_are_watched_only_with_the_gate_on() -> None:
    assert kube.NODEOVERLAY in _runtime(True).watched
    assert kube.NODEOVERLAY not in _runtime(False).watched


def test_the_api_s_nodeoverlays_reach_the_provisioner() -> None:
    runtime = _runtime(True)
    loop = asyncio.new_event_loop()
    try:
        runtime._build(loop)
        feed = runtime.feed
        docs: dict[kube.Kind, list[dict[str, Any]]] = {
            kube.NODEPOOL: [NODEPOOL],
            kube.EC2NODECLASS: [NODECLASS],
            kube.NODEOVERLAY: [OVERLAY],
        }
        for kind in runtime.watched:
            feed.deliver(kind, "SYNC", docs.get(kind, []))
        feed.start()
        (template,) = runtime.provisioner.templates()
        by_name = {it.name: it for it in template.instance_types}
        m5 = by_name["m5.large"]
        spot = [o for o in m5.offerings if o.capacity_type == labels.CAPACITY_TYPE_SPOT]
        assert spot and all(o.price_per_hour == o.cost_per_hour / 2 for o in spot)
        assert m5.allocatable["example.com/gpu"] == 1
        assert "example.com/gpu" not in by_name["c5.large"].allocatable
        # The overlay deleted: the catalog's types again.
        feed.deliver(kube.NODEOVERLAY, "DELETED", [OVERLAY])
        assert runtime.provisioner.overlays is None
    finally:
        loop.close()


def test_a_conflicting_overlay_is_logged_once(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="joiner")
    runtime = _runtime(True)
    twin = {**OVERLAY, "metadata": {"name": "another", "generation": 1}}
    loop = asyncio.new_event_loop()
    try:
        runtime._build(loop)
        docs = {kube.NODEPOOL: [NODEPOOL], kube.EC2NODECLASS: [NODECLASS]}
        docs[kube.NODEOVERLAY] = [OVERLAY, twin]
        docs[kube.POD] = [unschedulable(_pod("web", "u1"))]  # the pass evaluates the overlays
        for kind in runtime.watched:
            runtime.feed.deliver(kind, "SYNC", docs.get(kind, []))
        runtime.feed.start()
        runtime._provision()
        runtime._provision()
    finally:
        loop.close()
    conflicts = [r.getMessage() for r in caplog.records if "conflicts" in r.getMessage()]
    # Same weight, same offerings: "spot-discount" (later name) applies, "another" is out.
    assert len(conflicts) == 1 and "NodeOverlay/another" in conflicts[0]
