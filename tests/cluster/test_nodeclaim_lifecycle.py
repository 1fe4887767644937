"""The NodeClaim lifecycle in controller mode (issue 18): the registration timeout, garbage
collection against the cloud's instances, the ``karpenter.sh/termination`` finalizer on
NodeClaims and Nodes, a NodeClaim deleted while no controller ran, and the ``terminated``
state change."""

from __future__ import annotations

from typing import Any

import pytest

from joiner.api import labels
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.events import STATE_CHANGE, CloudEvent
from joiner.cloudprovider.types import NodeClaimNotFoundError
from joiner.cluster.kube import client as kube
from joiner.cluster.kube.actuator import KubeActuator
from joiner.cluster.kube.feed import KWOK_ANNOTATION
from joiner.cluster.kube.metrics import Metrics
from joiner.controllers.interruption.controller import InterruptionController
from joiner.controllers.nodeclaim.garbagecollection import GarbageCollector
from joiner.controllers.nodeclaim.liveness import REGISTRATION_TIMEOUT_S, LivenessController
from joiner.controllers.termination.controller import Terminator
from joiner.operator.controller_reactions import ControllerReactions
from joiner.state.cluster import NodeClaim
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness, _doc, _pod


class Timeline:
    def __init__(self) -> None:
        self.records: list[tuple[str, str | None, str | None]] = []

    def record(
        self, kind: str, *, node: str | None = None, pod: str | None = None, detail: str = ""
    ) -> None:
        self.records.append((kind, node, pod))

    def kinds(self) -> list[str]:
        return [k for k, _, _ in self.records]


class Env(Harness):
    """The feed harness plus a Terminator, and helpers to launch and register claims."""

    def __init__(self, *nodeclaim_docs: dict[str, Any], nodes: tuple[dict[str, Any], ...] = ()):
        super().__init__()
        self.timeline = Timeline()
        self.terminator = Terminator(self.state, self.cloud, self.clock, self.timeline)
        self.triggered = 0
        self.sync(kube.NODEPOOL, NODEPOOL)
        self.sync(kube.EC2NODECLASS, NODECLASS)
        self.sync(kube.NODECLAIM, *nodeclaim_docs)
        self.sync(kube.NODE, *nodes)
        for kind in (kube.POD, kube.DAEMONSET, kube.PDB):
            self.sync(kind)

    def trigger(self) -> None:
        self.triggered += 1

    def launch(self, name: str) -> NodeClaim:
        it = self.cloud.get_instance_types("nc")[0]
        claim = NodeClaim(
            name=name,
            nodepool="pool",
            node_class="nc",
            requirements=Requirements(
                [Requirement.in_("node.kubernetes.io/instance-type", it.name)]
            ),
            requests={},
            instance_type_options=(it,),
            created_at_s=self.clock.now(),
        )
        self.state.nodeclaims[name] = claim
        self.lifecycle.launch(claim)
        return claim

    def node_doc(self, claim: NodeClaim, **meta: Any) -> dict[str, Any]:
        assert claim.instance is not None
        return _doc(
            kube.NODE,
            {
                "metadata": {"name": claim.name, **meta},
                "spec": {"providerID": claim.instance.provider_id},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            },
        )


# -- registration timeout -------------------------------------------------------------------


def test_a_nodeclaim_that_never_registers_is_deleted_at_the_timeout_and_its_instance_too() -> None:
    env = Env()
    env.feed.start()
    liveness = LivenessController(
        env.state,
        env.terminator,
        env.clock,
        env.timeline,
        registration_timeout_s=5.0,
        trigger=env.trigger,
    )
    env.lifecycle.launch_listeners.append(liveness.watch)
    late, on_time = env.launch("pool-late"), env.launch("pool-ontime")
    env.clock.run_until(3.0)
    env.feed.deliver(kube.NODE, "ADDED", [env.node_doc(on_time)])
    assert on_time.registered_at_s is not None
    env.clock.run_until(4.9)
    assert late.deleted_at_s is None
    env.clock.run_until(5.1)
    assert late.deleted_at_s == pytest.approx(5.0)
    assert on_time.deleted_at_s is None
    assert late.instance is not None
    with pytest.raises(NodeClaimNotFoundError):
        env.cloud.get(late.instance.provider_id)
    assert liveness.timed_out == 1 and env.triggered == 1  # its pods are provisioned again
    assert "registrationTimeout" in env.timeline.kinds()


def test_the_registration_timeout_defaults_to_karpenters_15_minutes_and_is_a_setting() -> None:
    from joiner.operator.controller import ControllerSettings

    assert REGISTRATION_TIMEOUT_S == 900.0
    assert ControllerSettings().registrationTimeoutSeconds == 900.0
    s = ControllerSettings.model_validate({"registrationTimeoutSeconds": 3})
    assert s.registrationTimeoutSeconds == 3
    with pytest.raises(ValueError):
        ControllerSettings.model_validate({"registrationTimeoutSeconds": 0})


# -- garbage collection ---------------------------------------------------------------------


def _gc(env: Env, **kw: Any) -> GarbageCollector:
    return GarbageCollector(
        env.state, env.cloud, env.clock, env.timeline, trigger=env.trigger, **kw
    )


def test_a_nodeclaim_whose_instance_is_gone_is_collected_and_its_pods_lost() -> None:
    env = Env()
    env.feed.start()
    claim, other = env.launch("pool-a"), env.launch("pool-b")
    env.feed.deliver(kube.NODE, "ADDED", [env.node_doc(claim)])
    env.feed.deliver(kube.POD, "ADDED", [_pod("web-1", "u1", node="pool-a")])
    assert claim.instance is not None
    env.cloud.reclaim(claim.instance.provider_id)  # EC2 took it out of band
    gc = _gc(env, interval_s=1.0)
    gc.start()
    env.clock.run_until(1.5)
    assert claim.deleted_at_s is not None and other.deleted_at_s is None
    assert env.state.nodes["pool-a"].deleted_at_s is not None
    pod = env.state.pods["u1"]
    assert pod.lost and pod.deleted_at_s is not None
    assert gc.collected_claims == 1 and env.triggered == 1
    assert ("instanceGone", "pool-a", None) in env.timeline.records


def test_a_collected_nodes_pods_are_evicted_after_its_node_is_tainted_disrupted() -> None:
    """The instance is gone but its Node (no cloud-controller-manager, or before its
    heartbeat grace passes) is still Ready with a pod bound: the actuator taints it
    ``karpenter.sh/disrupted:NoSchedule`` (other taints kept) before evicting, as Karpenter's
    terminator does, so kube-scheduler does not bind the replacement pod back to it; the
    Node is deleted once no pod is bound."""
    env = Env()
    env.feed.start()
    api = FakeApi()
    actuator = _actuator(env, api, create_nodes=False)
    claim = env.launch("pool-a")
    actuator.sync()
    node = env.node_doc(claim)
    node["spec"]["taints"] = [{"key": "example.com/gpu", "effect": "NoSchedule"}]
    env.feed.deliver(kube.NODE, "ADDED", [node])
    env.feed.deliver(kube.POD, "ADDED", [_pod("web-1", "u1", node="pool-a")])
    assert claim.instance is not None
    env.cloud.reclaim(claim.instance.provider_id)
    _gc(env, interval_s=1.0).start()
    env.clock.run_until(1.5)
    assert claim.deleted_at_s is not None
    api.writes.clear()
    actuator.sync()
    taint_patches = [w for w in api.writes if w[:3] == ("patch", "Node", "pool-a")]
    assert taint_patches[0][3] == {
        "spec": {
            "taints": [
                {"key": "example.com/gpu", "value": "", "effect": "NoSchedule"},
                {"key": labels.TAINT_DISRUPTED, "value": "", "effect": "NoSchedule"},
            ]
        }
    }
    evictions = [w for w in api.writes if w[0] == "create"]
    assert len(evictions) == 1 and evictions[0][2] == "web-1"
    assert api.writes.index(taint_patches[0]) < api.writes.index(evictions[0])
    assert ("delete", "Node", "pool-a") not in api.writes
    # The taint reached the API; the pod is gone: no second taint patch, the Node goes.
    node["spec"]["taints"].append({"key": labels.TAINT_DISRUPTED, "effect": "NoSchedule"})
    env.feed.deliver(kube.NODE, "MODIFIED", [node])
    env.feed.deliver(kube.POD, "DELETED", [_pod("web-1", "u1", node="pool-a")])
    api.writes.clear()
    actuator.sync()
    assert ("delete", "Node", "pool-a") in api.writes
    assert not [w for w in api.writes if w[:2] == ("patch", "Node") and "spec" in w[3]]


def test_an_instance_without_a_nodeclaim_is_terminated_after_the_grace_period() -> None:
    env = Env()
    env.feed.start()
    kept = env.launch("pool-kept")
    stray = env.launch("pool-stray")
    assert stray.instance is not None and kept.instance is not None
    del env.state.nodeclaims["pool-stray"]  # its NodeClaim is gone (a crash in between)
    gc = _gc(env, interval_s=2.0, instance_grace_s=5.0)
    gc.start()
    env.clock.run_until(6.0)  # seen unowned at 2 s and 4 s and 6 s: 4 s < 5 s
    assert env.cloud.get(stray.instance.provider_id)
    env.clock.run_until(8.0)  # 6 s >= 5 s
    with pytest.raises(NodeClaimNotFoundError):
        env.cloud.get(stray.instance.provider_id)
    assert env.cloud.get(kept.instance.provider_id)
    assert gc.collected_instances == 1 and kept.deleted_at_s is None


def test_an_instance_owned_again_before_the_grace_period_is_not_collected() -> None:
    env = Env()
    env.feed.start()
    claim = env.launch("pool-a")
    del env.state.nodeclaims["pool-a"]
    gc = _gc(env, interval_s=1.0, instance_grace_s=3.0)
    gc.run_once()
    env.state.nodeclaims["pool-a"] = claim  # adopted (a new leader listed it)
    env.clock.run_until(10.0)
    gc.run_once()
    assert claim.instance is not None and env.cloud.get(claim.instance.provider_id)


# -- the terminated state change ------------------------------------------------------------


def test_a_terminated_state_change_drains_and_deletes_the_nodeclaim() -> None:
    env = Env()
    env.feed.start()
    claim = env.launch("pool-a")
    env.feed.deliver(kube.NODE, "ADDED", [env.node_doc(claim)])
    assert claim.instance is not None
    interruption = InterruptionController(
        env.state, env.cloud, env.clock, env.timeline, env.terminator, env.trigger
    )
    env.cloud._instances.pop(claim.instance.provider_id)  # gone in EC2
    interruption.handle(
        CloudEvent(STATE_CHANGE, (claim.instance.instance_id,), "m-1", state="terminated")
    )
    assert claim.deleted_at_s is not None
    assert env.state.nodes["pool-a"].deleted_at_s is not None


# -- finalizers: the feed and the actuator ---------------------------------------------------


class FakeApi:
    """Records writes; ``get``/``list`` are not used by the actuator."""

    def __init__(self) -> None:
        self.writes: list[tuple[Any, ...]] = []

    def create(self, obj: Any, **kw: Any) -> Any:
        self.writes.append(("create", obj.kind, obj.metadata.name, obj.metadata.finalizers))
        return obj

    def patch(self, res: Any, name: str, body: Any, **kw: Any) -> None:
        self.writes.append(("patch", res.__name__, name, body))

    def delete(self, res: Any, name: str, **kw: Any) -> None:
        self.writes.append(("delete", res.__name__, name))


def _actuator(env: Env, api: FakeApi, *, create_nodes: bool = True) -> KubeActuator:
    return KubeActuator(
        api,  # type: ignore[arg-type]
        env.state,
        env.feed,
        env.lifecycle,
        Metrics(),
        create_nodes=create_nodes,
        dry_run=False,
    )


def test_nodeclaims_and_nodes_are_created_with_the_termination_finalizer() -> None:
    env = Env()
    env.feed.start()
    api = FakeApi()
    actuator = _actuator(env, api)
    env.launch("pool-a")
    actuator.sync()
    creates = [w for w in api.writes if w[0] == "create"]
    assert [(w[1], w[3]) for w in creates] == [
        ("NodeClaim", [labels.TERMINATION_FINALIZER]),
        ("Node", [labels.TERMINATION_FINALIZER]),
    ]


def test_a_registered_node_without_the_finalizer_gets_it_once() -> None:
    env = Env()
    env.feed.start()
    api = FakeApi()
    actuator = _actuator(env, api, create_nodes=False)  # AWS: the kubelet makes the Node
    claim = env.launch("pool-a")
    env.feed.deliver(kube.NODE, "ADDED", [env.node_doc(claim, finalizers=["example.com/keep"])])
    actuator.sync()
    actuator.sync()
    patches = [w for w in api.writes if w[0] == "patch" and w[1] == "Node"]
    finalizer_patches = [w for w in patches if "finalizers" in w[3]["metadata"]]
    assert finalizer_patches == [
        (
            "patch",
            "Node",
            "pool-a",
            {"metadata": {"finalizers": ["example.com/keep", labels.TERMINATION_FINALIZER]}},
        )
    ]


def test_a_deleted_node_is_drained_then_deleted_and_released_from_the_finalizer() -> None:
    env = Env()
    env.feed.start()
    api = FakeApi()
    actuator = _actuator(env, api)
    drained: list[str] = []
    claim = env.launch("pool-a")
    env.feed.on_claim_deleted.append(lambda c: drained.append(c.name))
    fin = [labels.TERMINATION_FINALIZER, "example.com/keep"]
    env.feed.deliver(kube.NODE, "ADDED", [env.node_doc(claim, finalizers=fin)])
    deleting = env.node_doc(claim, finalizers=fin, deletionTimestamp="2026-01-01T00:00:00Z")
    env.feed.deliver(kube.NODE, "MODIFIED", [deleting])
    assert drained == ["pool-a"]  # the composition root drains it (as for a NodeClaim)
    env.terminator.drain(env.state.nodes["pool-a"], "deleted")  # nothing to evict
    env.feed.deliver(kube.NODE, "MODIFIED", [deleting])
    assert drained == ["pool-a"]  # once: the claim is deleted by now
    assert claim.deleted_at_s is not None
    api.writes.clear()
    actuator._claims_written.add("pool-a")
    actuator.sync()
    # The Node is already being deleted: only released (its other finalizer kept); the
    # NodeClaim is deleted and released.
    assert api.writes[0] == (
        "patch",
        "Node",
        "pool-a",
        {"metadata": {"finalizers": ["example.com/keep"]}},
    )
    assert ("delete", "NodeClaim", "pool-a") in api.writes


def test_a_nodeclaim_deleted_while_no_controller_ran_is_adopted_for_a_drain() -> None:
    claim_doc = _doc(
        kube.NODECLAIM,
        {
            "metadata": {
                "name": "pool-gone",
                "labels": {
                    labels.NODEPOOL: "pool",
                    labels.INSTANCE_TYPE: "m5.large",
                    labels.ZONE: "us-east-1a",
                    labels.CAPACITY_TYPE: "spot",
                },
                "deletionTimestamp": "2026-01-01T00:00:00Z",
                "finalizers": [labels.TERMINATION_FINALIZER],
                "creationTimestamp": "2025-12-31T23:00:00Z",
            },
            "status": {"providerID": "aws:///us-east-1a/i-0abc"},
        },
    )
    env = Env(claim_doc)
    adopted: list[tuple[str, ...]] = []

    def adopt(*args: str) -> Any:
        adopted.append(args)
        types = {t.name: t for t in env.cloud.get_instance_types("nc")}
        return env.cloud.adopt(types["m5.large"], "us-east-1a", "spot", "i-0abc")

    env.feed._adopt_instance = adopt
    env.feed.start()
    assert env.feed.deleting_claims == ["pool-gone"]
    assert env.feed.orphan_claims == []  # not deleted outright: drained first
    assert "pool-gone" in env.state.nodeclaims and adopted


# -- Nodes whose NodeClaim went while no controller ran ---------------------------------------


def _node(name: str, *, ready: bool = True, kwok: bool = True, **meta: Any) -> dict[str, Any]:
    """A NodePool's Node (``pool``) with the provider id ``aws:///us-east-1a/i-<name>``."""
    annotations = {KWOK_ANNOTATION: "fake"} if kwok else {}
    return _doc(
        kube.NODE,
        {
            "metadata": {
                "name": name,
                "labels": {labels.NODEPOOL: "pool", labels.INSTANCE_TYPE: "m5.large"},
                "annotations": annotations,
                **meta,
            },
            "spec": {"providerID": f"aws:///us-east-1a/i-{name}"},
            "status": {
                "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        },
    )


FIN = [labels.TERMINATION_FINALIZER]
GONE_AT = "2026-01-01T00:00:00Z"


def _unclaimed_env() -> Env:
    env = Env(
        nodes=(
            _node("live", finalizers=FIN),  # NodeClaim deleted and released; Node left
            _node("deleting", finalizers=FIN, deletionTimestamp=GONE_AT),
            _node("bare"),  # a Joiner-made orphan without the finalizer
            _node("foreign", kwok=False),  # nobody's finalizer, not Joiner's: left alone
        )
    )
    env.sync(
        kube.POD,
        _pod("a", "u1", node="live"),
        _pod("b", "u2", node="deleting"),
        _pod("c", "u3", node="foreign"),
    )
    return env


def test_a_nodepools_node_with_the_finalizer_and_no_nodeclaim_is_kept_for_a_drain() -> None:
    env = _unclaimed_env()
    env.feed.start()
    assert env.feed.unclaimed_nodes == ["deleting", "live"]
    assert env.feed.orphan_nodes == ["bare"]  # deleted at once, as before
    for name in ("live", "deleting"):
        node = env.state.nodes[name]
        # No capacity (deleting), no NodeClaim, and its pods are there to be drained.
        assert node.nodeclaim is None and node.deleting and node.deleted_at_s is None
        assert [p.name for p in env.state.pods_on(name)] == ["a" if name == "live" else "b"]
    assert "foreign" not in env.state.nodes and "bare" not in env.state.nodes
    assert not env.state.ready_nodes()
    # Later events about it do not undo the drain's cordon or its deletion.
    env.terminator.drain(env.state.nodes["live"], "NodeClaim gone")
    env.feed.deliver(kube.NODE, "MODIFIED", [_node("live", finalizers=FIN)])
    assert env.state.nodes["live"].deleting


def test_an_unclaimed_node_is_deleted_cordoned_drained_and_only_then_released() -> None:
    env = _unclaimed_env()
    env.feed.start()
    api = FakeApi()
    actuator = _actuator(env, api)
    actuator.adopt()
    # The live one is deleted (the finalizer holds it); the deleting one is left as it is.
    assert ("delete", "Node", "live") in api.writes
    assert ("delete", "Node", "deleting") not in api.writes
    assert not [w for w in api.writes if w[0] == "patch"]  # nothing released yet
    api.writes.clear()
    live = env.state.nodes["live"]
    pdb = _doc(
        kube.PDB,
        {
            "metadata": {"name": "all", "namespace": "ns", "generation": 1},
            "spec": {"maxUnavailable": 0, "selector": {}},
        },
    )
    env.sync(kube.PDB, pdb)  # nothing may be evicted
    env.terminator.drain(live, "NodeClaim gone")
    actuator.sync()
    # Cordoned while it drains; never released while its pod stays.
    taints = [w for w in api.writes if w[:3] == ("patch", "Node", "live")]
    assert taints and taints[0][3]["spec"]["taints"] == [
        {"key": labels.TAINT_DISRUPTED, "value": "", "effect": "NoSchedule"}
    ]
    assert not [w for w in api.writes if "finalizers" in str(w)]
    assert live.deleted_at_s is None and env.state.pods["u1"].deleted_at_s is None
    env.sync(kube.PDB)  # the budget allows it now: the next retry evicts and finishes
    env.clock.run_until(env.terminator.retry_s + 1)
    assert live.deleted_at_s is not None and env.state.pods["u1"].deleted_at_s is not None
    # The API still shows the pod there (the informer lags): evicted, not released.
    api.writes.clear()
    actuator.sync()
    assert not [w for w in api.writes if "finalizers" in str(w)]
    env.feed.deliver(kube.POD, "DELETED", [_pod("a", "u1", node="live")])
    deleting_doc = _node("live", finalizers=FIN, deletionTimestamp=GONE_AT)
    env.feed.deliver(kube.NODE, "MODIFIED", [deleting_doc])
    api.writes.clear()
    actuator.sync()
    actuator.sync()
    assert api.writes == [("patch", "Node", "live", {"metadata": {"finalizers": None}})]
    assert (
        actuator._metrics.registry.get_sample_value(
            "karpenter_nodes_terminated_total", {"nodepool": "pool", "zone": ""}
        )
        == 1
    )


def test_a_deleting_node_whose_nodeclaim_exists_is_drained_after_the_pods_are_replayed() -> None:
    claim_doc = _doc(
        kube.NODECLAIM,
        {
            "metadata": {
                "name": "pool-a",
                "labels": {
                    labels.NODEPOOL: "pool",
                    labels.INSTANCE_TYPE: "m5.large",
                    labels.ZONE: "us-east-1a",
                    labels.CAPACITY_TYPE: "spot",
                },
                "finalizers": FIN,
            },
            "status": {"providerID": "aws:///us-east-1a/i-pool-a"},
        },
    )
    env = Env(claim_doc, nodes=(_node("pool-a", finalizers=FIN, deletionTimestamp=GONE_AT),))
    env.sync(kube.POD, _pod("a", "u1", node="pool-a"))

    def adopt(*_args: str) -> Any:
        types = {t.name: t for t in env.cloud.get_instance_types("nc")}
        return env.cloud.adopt(types["m5.large"], "us-east-1a", "spot", "i-pool-a")

    env.feed._adopt_instance = adopt
    seen: list[list[str]] = []
    env.feed.on_claim_deleted.append(
        lambda c: seen.append([p.name for p in env.state.pods_on("pool-a")])
    )
    env.feed.start()
    # Not drained during the start (it would see no pods and terminate at once): listed
    # for the composition root, which drains it once the state is whole.
    assert seen == [] and env.feed.deleting_claims == ["pool-a"]
    assert env.state.nodes["pool-a"].deleting
    assert [p.name for p in env.state.pods_on("pool-a")] == ["a"]
    # After the start, the same event drains at once.
    env.feed.deliver(
        kube.NODE, "MODIFIED", [_node("pool-a", finalizers=FIN, deletionTimestamp=GONE_AT)]
    )
    assert seen == [["a"]]


class _Batcher:
    def __init__(self) -> None:
        self.triggered = 0

    def trigger(self) -> None:
        self.triggered += 1


def _reactions(env: Env) -> ControllerReactions:
    r = ControllerReactions()
    r.state, r.cloud, r.terminator = env.state, env.cloud, env.terminator
    r.clock = env.clock  # type: ignore[assignment]
    r.timeline = env.timeline  # type: ignore[assignment]
    r.batcher = _Batcher()  # type: ignore[assignment]
    return r


def test_a_ready_unclaimed_node_is_drained_and_a_not_ready_one_whose_instance_is_gone_let_go() -> (
    None
):
    env = Env(
        nodes=(
            _node("up", finalizers=FIN, deletionTimestamp=GONE_AT),
            _node("down", ready=False, finalizers=FIN, deletionTimestamp=GONE_AT),
        )
    )
    env.sync(kube.POD, _pod("a", "u1", node="up"), _pod("b", "u2", node="down"))
    env.feed.start()
    reactions = _reactions(env)
    for name in env.feed.unclaimed_nodes:
        reactions._unclaimed_node(env.state.nodes[name], f"aws:///us-east-1a/i-{name}")
    up, down = env.state.nodes["up"], env.state.nodes["down"]
    # Ready: its kubelet runs, so it is drained (here nothing blocks: at once).
    assert up.draining and up.deleted_at_s is not None
    assert env.state.pods["u1"].evicted and not env.state.pods["u1"].lost
    assert "drainStarted" in env.timeline.kinds()
    # Not Ready and the cloud has no such instance: nothing to drain, its pod is lost.
    assert not down.draining and down.deleted_at_s is not None
    assert env.state.pods["u2"].lost
    assert reactions.batcher.triggered >= 2  # type: ignore[attr-defined]
