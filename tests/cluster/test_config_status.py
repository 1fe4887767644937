"""NodePool and EC2NodeClass status in controller mode (``cluster/kube/configstatus.py``)
against a recording fake API: the fields and conditions Karpenter writes, one write per
change, a NodeClass that is missing or not Ready keeping its NodePools out of provisioning."""

from __future__ import annotations

import copy
import random
from typing import Any

from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from joiner.cloudprovider import nodeclass_status as ncs
from joiner.cluster.kube import client as kube
from joiner.cluster.kube.configstatus import ConfigStatus, canonical, merge_conditions
from joiner.cluster.kube.metrics import Metrics
from joiner.controllers.provisioning.provisioner import Provisioner
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness, _doc, _pod
from tests.manifests import unschedulable

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


class FakeApi:
    """Records status patches; raises ``fail`` (once) when set."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, str, dict[str, Any]]] = []
        self.fail: ApiError | None = None

    def patch(self, res: Any, name: str, body: Any, **kw: Any) -> None:
        if self.fail is not None:
            exc, self.fail = self.fail, None
            raise exc
        assert kw["patch_type"].value == "application/merge-patch+json"
        self.patches.append((res.__name__.removesuffix("Status"), name, body["status"]))


def _started(h: Harness, *pools: dict[str, Any], classes: tuple[dict[str, Any], ...] = ()) -> None:
    h.sync(kube.NODEPOOL, *pools)
    h.sync(kube.EC2NODECLASS, *classes)
    for kind in (kube.NODECLAIM, kube.NODE, kube.POD, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    h.feed.start()


def _writer(h: Harness, api: FakeApi, metrics: Metrics | None = None, **kw: Any) -> ConfigStatus:
    kw.setdefault("node_class_status", h.cloud.node_class_status)
    return ConfigStatus(
        api,  # type: ignore[arg-type]
        h.state,
        h.feed,
        metrics or Metrics(),
        dry_run=False,
        now=lambda: T1,
        **kw,
    )


def _by_type(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def _status_of(api: FakeApi, resource: str) -> dict[str, Any]:
    return next(s for r, _, s in reversed(api.patches) if r == resource)


def test_canonical_quantities() -> None:
    assert canonical("cpu", 4000) == "4"
    assert canonical("cpu", 1500) == "1500m"
    assert canonical("memory", 16 * 2**30) == "16Gi"
    assert canonical("memory", 15155 * 2**20) == "15155Mi"
    assert canonical("memory", 1000) == "1000"
    assert canonical("ephemeral-storage", 0) == "0"
    assert canonical("pods", 29) == "29"


def test_a_launch_writes_the_nodepools_resources_nodes_and_ready_conditions() -> None:
    h = Harness()
    api = FakeApi()
    claim = h.launched_claim()
    _writer(h, api).sync()
    pool = _status_of(api, "NodePool")
    assert claim.instance is not None
    cap = claim.instance.instance_type.capacity
    assert pool["nodes"] == 1
    assert pool["resources"]["nodes"] == "1"
    assert pool["resources"]["cpu"] == str(cap["cpu"] // 1000)
    assert pool["resources"]["pods"] == str(cap["pods"])
    assert pool["resources"]["memory"] == canonical("memory", cap["memory"])
    assert pool["resources"]["memory"][-2:] in ("Ki", "Mi", "Gi")
    assert pool["nodeClassObservedGeneration"] == 1
    assert _by_type(pool) == {
        "ValidationSucceeded": ("True", "ValidationSucceeded", ""),
        "NodeClassReady": ("True", "NodeClassReady", ""),
        "Ready": ("True", "Ready", ""),
    }
    assert [c["type"] for c in pool["conditions"]][-1] == "Ready"
    assert all(c["observedGeneration"] == 1 for c in pool["conditions"])


def test_an_empty_nodepool_reports_karpenters_zero_base() -> None:
    h = Harness()
    api = FakeApi()
    _started(h, NODEPOOL, classes=(NODECLASS,))
    _writer(h, api).sync()
    pool = _status_of(api, "NodePool")
    assert pool["resources"] == {
        "cpu": "0",
        "ephemeral-storage": "0",
        "memory": "0",
        "nodes": "0",
        "pods": "0",
    }
    assert pool["nodes"] == 0


def test_the_simulated_cloud_marks_its_nodeclass_ready_without_inventing_ids() -> None:
    h = Harness()
    api = FakeApi()
    _started(h, NODEPOOL, classes=(NODECLASS,))
    _writer(h, api).sync()
    nc = _status_of(api, "EC2NodeClass")
    assert set(nc) == {"conditions"}  # no subnets, groups, AMIs or profile to report
    conditions = _by_type(nc)
    assert set(conditions) == {*ncs.DEPENDENTS, "Ready"}
    assert conditions["Ready"] == ("True", "Ready", "")
    assert conditions["SubnetsReady"][:2] == ("True", "SubnetsReady")
    assert "simulated" in conditions["SubnetsReady"][2]
    assert conditions["ValidationSucceeded"] == ("True", "ValidationSucceeded", "")


def test_status_is_written_only_when_it_changes() -> None:
    h = Harness()
    api = FakeApi()
    _started(h, NODEPOOL, classes=(NODECLASS,))
    writer = _writer(h, api)
    writer.sync()
    assert [r for r, _, _ in api.patches] == ["EC2NodeClass", "NodePool"]
    writer.sync()  # the informer has not delivered the write yet: not written again
    assert len(api.patches) == 2
    # The informer delivers both objects with the status written: nothing to do.
    for kind, doc, res in (
        (kube.EC2NODECLASS, NODECLASS, "EC2NodeClass"),
        (kube.NODEPOOL, NODEPOOL, "NodePool"),
    ):
        seen = copy.deepcopy(doc)
        seen["metadata"]["resourceVersion"] = "2"
        seen["status"] = _status_of(api, res)
        h.feed.deliver(kind, "MODIFIED", [seen])
    writer.sync()
    assert len(api.patches) == 2
    # A launch changes the NodePool's resources: one more write, of the NodePool only, its
    # conditions' transition times kept.
    before = _status_of(api, "NodePool")
    h.launched_claim()
    writer.sync()
    assert [r for r, _, _ in api.patches] == ["EC2NodeClass", "NodePool", "NodePool"]
    after = _status_of(api, "NodePool")
    assert after["nodes"] == 1
    assert after["conditions"] == before["conditions"]


def test_a_missing_nodeclass_makes_the_nodepool_not_ready_and_nothing_launches() -> None:
    h = Harness()
    api = FakeApi()
    _started(h, NODEPOOL)  # no EC2NodeClass
    h.feed.deliver(kube.POD, "ADDED", [_pod("a", "u1")])
    writer = _writer(h, api)
    writer.sync()
    pool = _status_of(api, "NodePool")
    assert _by_type(pool) == {
        "ValidationSucceeded": ("True", "ValidationSucceeded", ""),
        "NodeClassReady": ("False", "NodeClassNotFound", "NodeClass not found on cluster"),
        "Ready": ("False", "UnhealthyDependents", "NodeClassReady=False"),
    }
    assert "nodeClassObservedGeneration" not in pool
    assert not writer.pool_ready("pool")
    provisioner = Provisioner(h.state, h.cloud, h.lifecycle, h.clock, random.Random(0))
    provisioner.pool_ready = writer.pool_ready
    provisioner.reconcile()
    assert not h.state.nodeclaims


def _not_ready(name: str) -> ncs.NodeClassStatus | None:
    return ncs.NodeClassStatus(
        subnets=(),
        conditions=ncs.with_validation(
            {
                ncs.SUBNETS_READY: ncs.Condition(
                    "False", "SubnetsNotFound", "SubnetSelector did not match any Subnets"
                ),
                ncs.SECURITY_GROUPS_READY: ncs.ready(ncs.SECURITY_GROUPS_READY),
                ncs.AMIS_READY: ncs.ready(ncs.AMIS_READY),
                ncs.INSTANCE_PROFILE_READY: ncs.ready(ncs.INSTANCE_PROFILE_READY),
                ncs.PLACEMENT_GROUP_READY: ncs.ready(ncs.PLACEMENT_GROUP_READY),
            }
        ),
    )


def test_a_nodeclass_that_is_not_ready_keeps_its_nodepool_out_of_provisioning() -> None:
    h = Harness()
    api = FakeApi()
    _started(h, NODEPOOL, classes=(NODECLASS,))
    h.feed.deliver(kube.POD, "ADDED", [unschedulable(_pod("a", "u1"))])
    writer = _writer(h, api, node_class_status=_not_ready)
    writer.sync()
    nc = _status_of(api, "EC2NodeClass")
    assert nc["subnets"] is None  # cleared, as Karpenter sets it to nil
    assert _by_type(nc)["Ready"] == (
        "False",
        "UnhealthyDependents",
        "SubnetsReady=False, ValidationSucceeded=False",
    )
    pool = _status_of(api, "NodePool")
    # The NodeClass's own reason and message (karpenter nodepool/readiness).
    assert _by_type(pool)["NodeClassReady"] == (
        "False",
        "UnhealthyDependents",
        "SubnetsReady=False, ValidationSucceeded=False",
    )
    assert _by_type(pool)["Ready"][0] == "False"
    provisioner = Provisioner(h.state, h.cloud, h.lifecycle, h.clock, random.Random(0))
    assert provisioner.templates()  # the pool itself loads and its types resolve
    provisioner.pool_ready = writer.pool_ready
    assert provisioner.templates() == []
    provisioner.reconcile()
    assert not h.state.nodeclaims
    # Once the NodeClass is Ready the same pass launches.
    writer._node_class_status = h.cloud.node_class_status
    provisioner.reconcile()
    assert len(h.state.nodeclaims) == 1


def test_a_terminating_nodeclass_and_an_invalid_nodepool() -> None:
    h = Harness()
    api = FakeApi()
    terminating = copy.deepcopy(NODECLASS)
    terminating["metadata"]["deletionTimestamp"] = T0
    invalid = copy.deepcopy(NODEPOOL)
    invalid["metadata"]["name"] = "bad"
    invalid["spec"]["weight"] = 1000
    _started(h, NODEPOOL, invalid, classes=(terminating,))
    _writer(h, api).sync()
    by_name = {name: s for r, name, s in api.patches if r == "NodePool"}
    assert _by_type(by_name["pool"])["NodeClassReady"] == (
        "False",
        "NodeClassTerminating",
        "NodeClass is Terminating",
    )
    status, reason, message = _by_type(by_name["bad"])["ValidationSucceeded"]
    assert (status, reason) == ("False", "NodePoolValidationFailed")
    assert "weight" in message
    assert "bad" not in h.state.nodepools


def test_a_failed_patch_is_counted_and_retried_on_the_next_sync() -> None:
    h = Harness()
    api = FakeApi()
    metrics = Metrics()
    _started(h, NODEPOOL, classes=(NODECLASS,))
    writer = _writer(h, api, metrics)
    api.fail = ApiError(status=Status(code=500, message="boom"))
    writer.sync()
    assert [r for r, _, _ in api.patches] == ["NodePool"]  # the EC2NodeClass's failed
    errors = metrics.reconcile_errors.labels(where="patch EC2NodeClass status")
    assert errors._value.get() == 1
    writer.sync()
    assert [r for r, _, _ in api.patches] == ["NodePool", "EC2NodeClass"]


def test_nothing_is_written_in_dry_run() -> None:
    h = Harness()
    _started(h, NODEPOOL, classes=(NODECLASS,))
    writer = ConfigStatus(
        None,
        h.state,
        h.feed,
        Metrics(),
        node_class_status=h.cloud.node_class_status,
        dry_run=True,
    )
    writer.sync()  # no client: a write would fail
    assert writer.pool_ready("pool")


def test_condition_times_move_only_with_their_status() -> None:
    existing = [
        {
            "type": "NodeClassReady",
            "status": "True",
            "reason": "NodeClassReady",
            "message": "",
            "observedGeneration": 1,
            "lastTransitionTime": T0,
        },
        {"type": "NodeRegistrationHealthy", "status": "Unknown", "reason": "x", "message": ""},
    ]
    wanted = {
        "ValidationSucceeded": ncs.ready("ValidationSucceeded"),
        "NodeClassReady": ncs.ready("NodeClassReady"),
    }
    deps = ("ValidationSucceeded", "NodeClassReady")
    out = merge_conditions(existing, wanted, deps, generation=1, created=T0, now=T1)
    times = {c["type"]: c.get("lastTransitionTime") for c in out}
    # Kept, first set (the object's creation time), and another controller's condition kept.
    assert times["NodeClassReady"] == T0 and times["ValidationSucceeded"] == T0
    assert "NodeRegistrationHealthy" in times
    wanted["NodeClassReady"] = ncs.Condition("False", "NodeClassNotFound", "gone")
    later = merge_conditions(out, wanted, deps, generation=1, created=T0, now=T1)
    by = {c["type"]: c for c in later}
    assert by["NodeClassReady"]["lastTransitionTime"] == T1
    assert by["Ready"]["status"] == "False" and by["Ready"]["lastTransitionTime"] == T1
    # A dependent not set yet is Unknown, and so is the root.
    fresh = merge_conditions([], {}, deps, generation=2, created=T0, now=T1)
    root = {c["type"]: c for c in fresh}["Ready"]
    assert (root["status"], root["reason"]) == ("Unknown", "ReconcilingDependents")


def test_kwok_nodeclasses_count_as_ready_when_they_exist() -> None:
    h = Harness()
    api = FakeApi()
    pool = copy.deepcopy(NODEPOOL)
    pool["spec"]["template"]["spec"]["nodeClassRef"] = {
        "group": "karpenter.kwok.sh",
        "kind": "KWOKNodeClass",
        "name": "kw",
    }
    h.sync(kube.KWOKNODECLASS, _doc(kube.KWOKNODECLASS, {"metadata": {"name": "kw"}}))
    _started(h, pool)
    _writer(h, api, node_class_status=None).sync()
    assert [r for r, _, _ in api.patches] == ["NodePool"]
    assert _by_type(_status_of(api, "NodePool"))["NodeClassReady"][0] == "True"
