"""Controller mode with Karpenter's ``StaticCapacity`` gate: a static NodePool the API holds
gets its ``replicas`` NodeClaims from the provisioning reconcile (Karpenter
``pkg/controllers/static/provisioning``); with the gate off, it is a dynamic pool."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from joiner.cluster.kube import client as kube
from joiner.operator.controller import ControllerRuntime, ControllerSettings
from joiner.operator.controller_settings import FeatureGateSettings
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL

STATIC = copy.deepcopy(NODEPOOL)
STATIC["spec"]["replicas"] = 2


def _started(gate: bool) -> tuple[ControllerRuntime, asyncio.AbstractEventLoop]:
    runtime = ControllerRuntime(
        None,
        settings=ControllerSettings(featureGates=FeatureGateSettings(staticCapacity=gate)),
        dry_run=True,
        metrics_port=None,
        health_port=None,
    )
    loop = asyncio.new_event_loop()
    runtime._build(loop)
    docs: dict[kube.Kind, list[dict[str, Any]]] = {
        kube.NODEPOOL: [STATIC],
        kube.EC2NODECLASS: [NODECLASS],
    }
    for kind in runtime.watched:
        runtime.feed.deliver(kind, "SYNC", docs.get(kind, []))
    runtime.feed.start()
    return runtime, loop


def test_the_reconcile_creates_the_static_pools_nodeclaims() -> None:
    runtime, loop = _started(True)
    try:
        assert runtime.static is not None
        created, deleted = runtime.static.reconcile()
        assert len(created) == 2 and deleted == []
        assert all(c.nodepool == "pool" and c.nominated == () for c in created)
        # Counted now: the next reconcile creates nothing more.
        assert runtime.static.reconcile() == ([], [])
        # Pending pods never get a static pool's NodeClaim.
        assert runtime.provisioner.templates() == []
    finally:
        loop.close()


def test_gate_off_the_pool_is_dynamic() -> None:
    runtime, loop = _started(False)
    try:
        assert runtime.static is None
        assert runtime.state.nodepools["pool"].replicas is None
        (template,) = runtime.provisioner.templates()
        assert template.nodepool.name == "pool"
    finally:
        loop.close()


def test_a_pool_not_ready_gets_no_static_nodeclaims() -> None:
    """Karpenter's static provisioning waits for the NodePool's Ready condition."""
    runtime, loop = _started(True)
    try:
        assert runtime.static is not None
        runtime.provisioner.pool_ready = lambda _name: False
        assert runtime.static.reconcile() == ([], [])
    finally:
        loop.close()
