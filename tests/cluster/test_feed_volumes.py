"""Controller mode follows PersistentVolumeClaims, PersistentVolumes and StorageClasses: a
pending pod gets a NodeClaim in a zone its volumes allow, and a pod whose claim cannot be
used yet (its volume not there, or unbound with an Immediate StorageClass) is no demand
until it can be."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from joiner.api import labels
from joiner.api.manifests import load_text
from joiner.api.requirements import Requirement, Requirements
from joiner.cluster.kube import client as kube
from joiner.cluster.kube import feed as feed_module
from joiner.cluster.kube.volumefeed import VolumeCache
from joiner.controllers.provisioning.provisioner import Provisioner
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness, _doc
from tests.manifests import unschedulable


def _started(*volume_docs: tuple[kube.Kind, dict[str, Any]]) -> Harness:
    """A started feed with NodePool ``pool``, the given volume objects and no pods."""
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.POD, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    for kind in (kube.PVC, kube.PV, kube.STORAGECLASS):
        h.sync(kind, *(_doc(kind, body) for k, body in volume_docs if k is kind))
    h.feed.start()
    return h


def _pvc(storage_class: str | None = "gp3", volume: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": storage_class}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": "data", "namespace": "ns"}, "spec": spec}


def _pv(zone: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": labels.ZONE, "operator": "In", "values": [zone]}]}
    return {
        "metadata": {"name": "pv-1"},
        "spec": {
            "storageClassName": "gp3",
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def _class(mode: str, zones: tuple[str, ...] = ()) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": "gp3"},
        "provisioner": "ebs.csi.aws.com",
        "volumeBindingMode": mode,
    }
    if zones:
        body["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": labels.ZONE, "values": list(zones)}]}
        ]
    return body


def _db_pod(uid: str = "u1") -> dict[str, Any]:
    """A pod kube-scheduler found no room for (its claim holds it back, or no node had
    room)."""
    return unschedulable(
        _doc(
            kube.POD,
            {
                "metadata": {"name": "db", "namespace": "ns", "uid": uid},
                "spec": {
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            },
        )
    )


def _launched_zones(h: Harness) -> list[str]:
    """One provisioning pass over the state; the zones of the NodeClaims it launched."""
    Provisioner(h.state, h.cloud, h.lifecycle, h.clock, random.Random(1)).reconcile()
    return [c.instance.offering.zone for c in h.state.live_nodeclaims() if c.instance is not None]


def test_a_pod_on_a_bound_zonal_volume_gets_a_node_in_its_zone() -> None:
    h = _started((kube.PVC, _pvc(volume="pv-1")), (kube.PV, _pv("us-east-1c")))
    h.feed.deliver(kube.POD, "ADDED", [_db_pod()])
    assert h.pending == ["db"]
    assert _launched_zones(h) == ["us-east-1c"]


def test_a_pod_whose_volume_arrives_later_waits_then_gets_its_zone() -> None:
    h = _started((kube.PVC, _pvc(volume="pv-1")))
    h.feed.deliver(kube.POD, "ADDED", [_db_pod()])
    # Bound to a PersistentVolume the API does not show yet: no demand.
    assert h.pending == [] and "u1" not in h.state.pods and "u1" in h.feed.held
    assert _launched_zones(h) == []
    h.feed.deliver(kube.PV, "ADDED", [_doc(kube.PV, _pv("us-east-1d"))])
    assert h.pending == ["db"] and not h.feed.held
    assert _launched_zones(h) == ["us-east-1d"]


def test_wait_for_first_consumer_class_limits_the_zone_to_its_allowed_topologies() -> None:
    h = _started(
        (kube.PVC, _pvc()), (kube.STORAGECLASS, _class("WaitForFirstConsumer", ("us-east-1b",)))
    )
    h.feed.deliver(kube.POD, "ADDED", [_db_pod()])
    assert h.pending == ["db"]
    assert _launched_zones(h) == ["us-east-1b"]


def test_an_unbound_claim_of_an_immediate_class_is_no_demand_until_bound() -> None:
    h = _started((kube.PVC, _pvc()), (kube.STORAGECLASS, _class("Immediate")))
    h.feed.deliver(kube.POD, "ADDED", [_db_pod()])
    assert h.pending == [] and "u1" in h.feed.held
    assert _launched_zones(h) == []
    # A pod event (its status updated) does not make it demand either.
    h.feed.deliver(kube.POD, "MODIFIED", [_db_pod()])
    assert h.pending == [] and "u1" in h.feed.held
    # The volume is provisioned (in zone a) and the claim bound to it.
    h.feed.deliver(kube.PV, "ADDED", [_doc(kube.PV, _pv("us-east-1a"))])
    assert h.pending == []
    h.feed.deliver(kube.PVC, "MODIFIED", [_doc(kube.PVC, _pvc(volume="pv-1"))])
    assert h.pending == ["db"] and not h.feed.held
    assert _launched_zones(h) == ["us-east-1a"]


def test_a_claim_naming_a_missing_class_waits_for_it() -> None:
    h = _started((kube.PVC, _pvc()))
    h.feed.deliver(kube.POD, "ADDED", [_db_pod()])
    assert "u1" in h.feed.held
    h.feed.deliver(
        kube.STORAGECLASS,
        "ADDED",
        [_doc(kube.STORAGECLASS, _class("WaitForFirstConsumer", ("us-east-1f",)))],
    )
    assert h.pending == ["db"]
    assert _launched_zones(h) == ["us-east-1f"]


def test_a_held_pod_deleted_is_forgotten() -> None:
    h = _started((kube.PVC, _pvc(volume="pv-1")))
    h.feed.deliver(kube.POD, "ADDED", [_db_pod()])
    h.feed.deliver(kube.POD, "DELETED", [_db_pod()])
    assert not h.feed.held
    h.feed.deliver(kube.PV, "ADDED", [_doc(kube.PV, _pv("us-east-1c"))])
    assert h.pending == [] and "u1" not in h.state.pods


def test_a_claim_bound_after_the_pod_was_counted_narrows_its_zone() -> None:
    """A WaitForFirstConsumer claim allowing two zones, then bound to a volume in one of
    them: the pod's topology follows the volume."""
    h = _started(
        (kube.PVC, _pvc()),
        (kube.STORAGECLASS, _class("WaitForFirstConsumer", ("us-east-1a", "us-east-1b"))),
    )
    h.feed.deliver(kube.POD, "ADDED", [_db_pod()])
    assert h.pending == ["db"]
    h.feed.deliver(kube.PV, "ADDED", [_doc(kube.PV, _pv("us-east-1b"))])
    h.feed.deliver(kube.PVC, "MODIFIED", [_doc(kube.PVC, _pvc(volume="pv-1"))])
    assert _launched_zones(h) == ["us-east-1b"]


def test_a_pod_annotated_after_it_was_counted_keeps_its_volume_zone() -> None:
    """An annotation the feed follows (pod-deletion-cost) gives the pod a new template: its
    volume topology goes with it."""
    h = _started((kube.PVC, _pvc(volume="pv-1")), (kube.PV, _pv("us-east-1c")))
    h.feed.deliver(kube.POD, "ADDED", [_db_pod()])
    before = h.state.pods["u1"].template
    annotated = _db_pod()
    annotated["metadata"]["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": "5"}
    h.feed.deliver(kube.POD, "MODIFIED", [annotated])
    assert h.state.pods["u1"].template is not before
    assert _launched_zones(h) == ["us-east-1c"]


def test_a_volume_loaded_with_a_warning_is_kept_and_the_warning_logged(caplog) -> None:
    cache = VolumeCache("cluster")
    body = _pv("us-east-1a")
    body["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"].append(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]}
    )
    with caplog.at_level("WARNING"):
        cache.apply(kube.PV.kind, "ADDED", "pv-1", _doc(kube.PV, body))
    assert "nodeSelectorTerms[1].matchFields: not modelled" in caplog.text
    cache.apply(kube.PVC.kind, "ADDED", "ns/data", _doc(kube.PVC, _pvc(volume="pv-1")))
    (pod,) = load_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n"
        "  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]\n"
        "  containers: [{name: c}]\n",
        "p.yaml",
    ).pods
    # The volume is kept, its zone term in force.
    assert cache.terms(pod.template) == (
        Requirements([Requirement.in_(labels.ZONE, "us-east-1a")]),
    )


def test_a_volume_change_reads_again_only_the_pods_held_for_their_volumes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pod kube-scheduler has not refused yet waits for that, not for a volume: a claim,
    volume or StorageClass change does not read it again (with thousands of such pods held,
    each volume event read them all). The pod held for its volume joins once it arrives,
    and one untried pod turned unschedulable still waits for its volume until then."""
    h = _started((kube.PVC, _pvc(volume="pv-1")))
    untried = [_db_pod(f"w{i}") for i in range(20)]
    for i, doc in enumerate(untried):
        doc["metadata"]["name"] = f"w{i}"
        doc["status"]["conditions"] = []
    h.feed.deliver(kube.POD, "ADDED", [*untried, _db_pod()])
    refused = _db_pod("w0")
    refused["metadata"]["name"] = "w0"
    h.feed.deliver(kube.POD, "MODIFIED", [refused])  # refused now, still no volume
    read: list[str] = []
    load = feed_module.load_documents

    def counting(docs: list[dict[str, Any]], source: str) -> Any:
        read.extend(str(d["metadata"]["uid"]) for d in docs if d.get("kind") == "Pod")
        return load(docs, source)

    monkeypatch.setattr(feed_module, "load_documents", counting)
    h.feed.deliver(kube.PV, "ADDED", [_doc(kube.PV, _pv("us-east-1d"))])
    assert sorted(read) == ["u1", "w0"]
    assert sorted(h.pending) == ["db", "w0"]
    assert set(h.feed.held) == {f"w{i}" for i in range(1, 20)}


def test_an_untried_pod_whose_volume_arrives_then_is_refused_joins_created_when_first_seen(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="joiner.cluster.kube.feed")
    h = _started((kube.PVC, _pvc(volume="pv-1")))
    untried = _db_pod()
    untried["status"]["conditions"] = []
    h.feed.deliver(kube.POD, "ADDED", [untried])
    h.clock.run_until(h.clock.now() + 4.0)
    h.feed.deliver(kube.POD, "MODIFIED", [_db_pod()])  # refused, its volume not there
    assert "u1" in h.feed.held and h.pending == []
    h.feed.deliver(kube.PV, "ADDED", [_doc(kube.PV, _pv("us-east-1d"))])
    assert h.pending == ["db"] and not h.feed.held
    assert h.state.pods["u1"].created_at_s == 0.0
    waits = [r.levelno for r in caplog.records if "ignoring pod ns/db" in r.getMessage()]
    assert waits == [logging.DEBUG, logging.INFO]
    assert _launched_zones(h) == ["us-east-1d"]
