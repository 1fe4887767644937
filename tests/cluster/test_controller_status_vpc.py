"""Controller mode on simulated capacity reads an EC2NodeClass's ``status.subnets`` as
``joiner plan`` does: launches and topology domains are the cluster's zones, not every
zone of the region."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

import pytest
import yaml

from joiner.api import labels
from joiner.operator.controller import ControllerRuntime
from tests.manifests import ec2nodeclass, nodepool, unschedulable


def _nodeclass(zones: list[str]) -> dict[str, Any]:
    """The shared EC2NodeClass with a ``status`` as Karpenter-AWS writes it: one subnet in
    each of ``zones``."""
    doc: dict[str, Any] = yaml.safe_load(ec2nodeclass())
    doc["status"] = {
        "subnets": [{"id": f"subnet-{z}", "zone": z} for z in zones],
        "securityGroups": [{"id": "sg-0c", "name": "nodes"}],
    }
    return doc


NODEPOOL = yaml.safe_load(
    nodepool("[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]")
)


def _pod(i: int) -> dict[str, Any]:
    """A pending pod of a Deployment-like set spread over zones (maxSkew 1), which
    kube-scheduler found no room for."""
    return unschedulable(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"web-{i}",
                "namespace": "default",
                "uid": f"uid-{i}",
                "labels": {"app": "web"},
            },
            "spec": {
                "containers": [
                    {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1500m"}}}
                ],
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": labels.ZONE,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    }
                ],
            },
        }
    )


def _provision(docs: list[dict[str, Any]]) -> ControllerRuntime:
    runtime = ControllerRuntime(None, dry_run=True, metrics_port=None, health_port=None)
    loop = asyncio.new_event_loop()
    try:
        runtime._build(loop)
        for kind in runtime.watched:
            runtime.feed.deliver(kind, "SYNC", [d for d in docs if d["kind"] == kind.kind])
        runtime.feed.start()
        runtime._provision()
    finally:
        loop.close()
    return runtime


def _zones(runtime: ControllerRuntime) -> Counter[str]:
    """The zone of each NodeClaim the pass created (its zone requirement: one zone each,
    the spread's domain), as a multiset."""
    out: Counter[str] = Counter()
    for claim in runtime.state.nodeclaims.values():
        zone = claim.requirements.get(labels.ZONE)
        assert zone is not None and len(zone.values) == 1, (claim.name, zone)
        out.update(zone.values)
    return out


def test_launches_go_only_to_the_zones_of_status_subnets() -> None:
    """Regression (a 5,000-node dump: ``joiner plan`` placed the pending batch on existing
    nodes while the controller's reconcile launched NodeClaims): the simulated cloud gave
    the EC2NodeClass every zone of the region, so zone spread counted us-east-1d..f as
    domains. Six spread pods over the status's two zones go three to a zone."""
    docs = [_nodeclass(["us-east-1a", "us-east-1b"]), NODEPOOL, *(_pod(i) for i in range(6))]
    runtime = _provision(docs)
    zones = _zones(runtime)
    assert set(zones) == {"us-east-1a", "us-east-1b"}, zones
    assert not [p.name for p in runtime.state.pending_pods() if p.unschedulable_reason]


def test_a_status_subnet_outside_the_region_is_logged_and_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A status subnet the region refuses does not stop the controller: logged, and the
    NodeClass is fitted as if it had no status (every zone)."""
    docs = [_nodeclass(["eu-west-1a"]), NODEPOOL, _pod(0)]
    with caplog.at_level(logging.WARNING, logger="joiner.operator.wallclock"):
        runtime = _provision(docs)
    assert any("status.subnets" in r.getMessage() for r in caplog.records), caplog.text
    assert len(runtime.state.nodeclaims) == 1
