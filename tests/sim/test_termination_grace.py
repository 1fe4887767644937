"""A simulated drain under a NodePool ``terminationGracePeriod``: pods a PDB blocks are
deleted one by one, each its own ``terminationGracePeriodSeconds`` before the node's
deadline (Karpenter ``terminator.go`` ``DeleteExpiringPods``), not all at the deadline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "spot-interruptions"

#: The example's scheduled-change message arrives at 10 m; the NodePool's
#: terminationGracePeriod (10 m) puts the node's deadline at 20 m.
DRAIN_S = 600.0
DEADLINE_S = 1200.0


def _scheduled_change(tmp_path: Path, graces: dict[str, int]) -> dict:
    """The spot-interruptions example with an AWS Health scheduled change (a drain with
    time to spare), a 10 m terminationGracePeriod, a PDB allowing no disruption, and the
    pods' ``terminationGracePeriodSeconds`` from ``graces``."""
    d = tmp_path / "ex"
    shutil.copytree(EXAMPLE, d)
    message = {
        "version": "0",
        "id": "x",
        "detail-type": "AWS Health Event",
        "source": "aws.health",
        "detail": {
            "service": "EC2",
            "eventTypeCategory": "scheduledChange",
            "affectedEntities": [{"entityValue": "i-1234567890abcdef0"}],
        },
    }
    (d / "spot-itn-sample.json").write_text(json.dumps(message))
    np = d / "nodepool.yaml"
    np.write_text(
        np.read_text().replace(
            "      nodeClassRef:", "      terminationGracePeriod: 10m\n      nodeClassRef:"
        )
    )
    rc = d / "running-cluster.yaml"
    text = rc.read_text().replace("maxUnavailable: 1", "maxUnavailable: 0")
    for pod, grace in graces.items():
        text = text.replace(
            f"metadata: {{name: {pod}, namespace: shop, labels: {{app: web}}}},\n"
            "     spec: {nodeName",
            f"metadata: {{name: {pod}, namespace: shop, labels: {{app: web}}}},\n"
            f"     spec: {{terminationGracePeriodSeconds: {grace}, nodeName",
        )
    rc.write_text(text)
    return SimulationRuntime(load_scenario(d / "captured-event.yaml")).run().summary


def test_blocked_pods_are_deleted_each_its_grace_before_the_deadline(tmp_path):
    s = _scheduled_change(tmp_path, {"web-a": 0, "web-b": 30, "web-c": 300})
    node = "ip-10-0-1-17.ec2.internal"
    drained = [e["atSeconds"] for e in s["timeline"] if e["kind"] == "drainStarted"]
    assert drained == [DRAIN_S]
    evicted = {
        e["pod"]: e["atSeconds"]
        for e in s["timeline"]
        if e["kind"] == "eviction" and e["node"] == node
    }
    assert evicted == {
        "shop/web-a": DEADLINE_S,
        "shop/web-b": DEADLINE_S - 30,
        "shop/web-c": DEADLINE_S - 300,
        # No terminationGracePeriodSeconds: the API server's default, 30 s.
        "shop/web-d": DEADLINE_S - 30,
    }
    terminated = [e["atSeconds"] for e in s["timeline"] if e["kind"] == "terminated"]
    assert terminated == [DEADLINE_S]
    assert s["pods"]["lost"] == 0
