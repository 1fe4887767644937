"""Single-node consolidation's pre-check (``disruption.room``): a candidate it calls
hopeless never consolidates, and skipping those candidates leaves every decision as it was."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from joiner.api.featuregates import FeatureGates
from joiner.api.manifests import load_files
from joiner.cloudprovider.catalog import Catalog
from joiner.cluster.kube.events import unconsolidatable_message
from joiner.controllers.disruption import methods as m
from joiner.controllers.disruption.room import Room
from joiner.controllers.disruption.verdicts import SPOT_TO_SPOT_OFF, Verdict, VerdictKind
from joiner.operator.disrupt import DryRun
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from joiner.testing.builders import GIB, make_instance_type
from tests.controllers.disruption_fixtures import AT, dry_run, node, nodepool, pod

REPO = Path(__file__).resolve().parents[2]
TYPES = ["m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge", "m5.4xlarge"]
SHAPES = [("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("1500m", "3Gi"), ("2", "6Gi")]


#: A NoSchedule taint (``tainted``) and a pod toleration of it (``tolerating``).
TAINT = "  taints: [{key: dedicated, value: batch, effect: NoSchedule}]\n"
TOLERATION = "  tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]\n"


def _message(verdict: Verdict | None) -> str | None:
    """The verdict's English, or None."""
    return verdict.message() if verdict is not None else None


def tainted(doc: str) -> str:
    """A ``node`` document with the ``TAINT``."""
    return doc + TAINT


def tolerating(doc: str) -> str:
    """A ``pod`` document with the ``TOLERATION``."""
    return doc.replace("spec:\n", "spec:\n" + TOLERATION, 1)


def _cluster(tmp_path, seed: int, spot: bool, taints: bool = False):
    rng = random.Random(seed)
    docs = [nodepool(capacity_types="spot, on-demand" if spot else "on-demand")]
    for i in range(rng.randint(2, 7)):
        doc = node(
            f"n{i}",
            rng.choice(TYPES),
            zone=rng.choice(["us-east-1a", "us-east-1b"]),
            capacity_type="spot" if spot and rng.random() < 0.7 else "on-demand",
        )
        docs.append(tainted(doc) if taints and rng.random() < 0.4 else doc)
        for j in range(rng.randint(1, 6)):
            cpu, mem = rng.choice(SHAPES)
            doc = pod(f"p{i}-{j}", f"n{i}", cpu=cpu, memory=mem, app=f"a{j % 2}")
            docs.append(tolerating(doc) if taints and j % 2 else doc)
    gates = FeatureGates(spot_to_spot_consolidation=rng.random() < 0.5)
    return dry_run(tmp_path, *docs, gates=gates)


def _sweep(tmp_path, taints: bool):
    """Per random cluster of seeds 0-39: the seed, a pass's context, its candidates and its
    ``Room``."""
    for seed in range(40):
        where = tmp_path / str(seed)
        where.mkdir()
        run = _cluster(where, seed, spot=seed % 2 == 0, taints=taints)
        ctx, candidates = run.controller.context(elapsed=True)
        yield seed, ctx, candidates, Room(ctx)


@pytest.mark.parametrize("taints", [False, True])
def test_a_hopeless_candidate_never_consolidates(tmp_path, taints):
    hopeless = 0
    for seed, ctx, candidates, room in _sweep(tmp_path, taints):
        for c in candidates:
            if c.empty or room.hopeless(c) is None:
                continue
            hopeless += 1
            got = m.consolidate(ctx, [c], m.SINGLE_NODE)
            assert isinstance(got, Verdict), f"seed {seed}: {c.name} is hopeless but got {got}"
    assert hopeless > 5  # the sweep exercises the rule


@pytest.mark.parametrize("taints", [False, True])
@pytest.mark.parametrize("seed", range(40, 60))
def test_skipping_hopeless_candidates_changes_no_decision(tmp_path, seed, taints, monkeypatch):
    run = _cluster(tmp_path, seed, spot=seed % 2 == 1, taints=taints)
    with_room = run.plan()
    run = _cluster(tmp_path, seed, spot=seed % 2 == 1, taints=taints)
    monkeypatch.setattr(Room, "hopeless", lambda self, c: None)
    monkeypatch.setattr(Room, "stranded", lambda self, cands: False)
    without = run.plan()
    assert [(c.method, c.candidates, c.replacements) for c in with_room.commands] == [
        (c.method, c.candidates, c.replacements) for c in without.commands
    ]


def test_fragmented_free_room_is_hopeless(tmp_path):
    # Each other node has 1.5 CPU free in all (more than the 2 x 1 CPU to move together
    # across three nodes), but no node has room for a whole 1-CPU pod: the old summed-room
    # test passed this candidate, the per-node count does not; the replacement would be
    # an m5.large-sized or larger node, never cheaper than the m5.large candidate.
    docs = [nodepool(), node("c", "m5.large")]
    docs += [pod("c-1", "c", cpu="1"), pod("c-2", "c", cpu="1")]
    for i in range(3):
        docs.append(node(f"o{i}", "m5.large"))
        docs.append(pod(f"o{i}-1", f"o{i}", cpu="1"))
        docs.append(pod(f"o{i}-2", f"o{i}", cpu="400m"))
    run = dry_run(tmp_path, *docs)
    ctx, candidates = run.controller.context(elapsed=True)
    (c,) = [x for x in candidates if x.name == "c"]
    assert Room(ctx).hopeless(c) is not None
    assert isinstance(m.consolidate(ctx, [c], m.SINGLE_NODE), Verdict)


def test_pods_of_one_size_counted_by_their_own_request(tmp_path):
    # Three 1-CPU pods and a 100m one on an m5.xlarge; the one other node has about 1.5 CPUs
    # free. By the smallest request it holds fifteen pods and 1.5 of the 3.1 CPUs: a new node
    # would need 1.6 CPUs, which a c5.large holds (so the old bounds simulated). By the
    # 1-CPU pods' own request it holds one of them: two must share the new node, 2 CPUs,
    # more than any type cheaper than the m5.xlarge has (step 4): hopeless.
    docs = [
        nodepool(
            requirements="        - {key: node.kubernetes.io/instance-type, operator: In, "
            "values: [c5.large, m5.large, m5.xlarge]}\n"
        ),
        node("c", "m5.xlarge"),
        node("o", "m5.large"),
        pod("o-1", "o", cpu="400m", memory="1Gi"),
        pod("c-small", "c", cpu="100m", memory="128Mi"),
    ]
    docs += [pod(f"c-{i}", "c", cpu="1", memory="1Gi") for i in range(3)]
    ctx, candidates = dry_run(tmp_path, *docs).controller.context(elapsed=True)
    (c,) = [x for x in candidates if x.name == "c"]
    why = _message(Room(ctx).hopeless(c))
    assert why is not None and "cpu=2000m" in why, why
    assert isinstance(m.consolidate(ctx, [c], m.SINGLE_NODE), Verdict)


def _stranded_cluster(tmp_path, candidate: str, capacity_type: str, cpu: str, tolerate: bool):
    """Candidate ``c`` with one pod; the only other node has room for it but is tainted
    (the pod tolerates the taint when ``tolerate``)."""
    move = pod("c-1", "c", cpu=cpu, memory="1Gi")
    docs = [
        nodepool(capacity_types="spot, on-demand"),
        node("c", candidate, capacity_type=capacity_type),
        tolerating(move) if tolerate else move,
        tainted(node("t", "m5.4xlarge")),
        tolerating(pod("t-1", "t", cpu="1")),
    ]
    run = dry_run(tmp_path, *docs)  # spot-to-spot consolidation off
    ctx, candidates = run.controller.context(elapsed=True)
    (c,) = [x for x in candidates if x.name == "c"]
    return ctx, c


def test_pods_that_fit_no_other_node_must_fit_one_cheaper_type_together(tmp_path):
    # The tainted node has room (the summed-room test passes), but the pod does not
    # tolerate its taint, so only a new node could take it, and no instance type cheaper
    # than the spot m5.large other than as spot holds 1 CPU: the simulation is skipped.
    ctx, c = _stranded_cluster(tmp_path, "m5.large", "spot", "1", tolerate=False)
    why = _message(Room(ctx).hopeless(c))
    # The reason names the stranded pod and what the new node would need (the breaker saw a
    # bare "no cheaper type" hide the taint that kept the pod off every other node).
    assert why is not None and "1 pod fit no other node by free room and taints" in why
    assert "default/c-1" in why and "cpu=1000m" in why and "other than as spot" in why
    got = m.consolidate(ctx, [c], m.SINGLE_NODE)
    assert isinstance(got, Verdict) and "spot-to-spot consolidation is off" in got.message()


def test_a_stranded_pod_that_a_cheaper_type_holds_is_simulated(tmp_path):
    # The same stranded pod on an on-demand m5.2xlarge: an m5.large holds it and costs
    # less, so the candidate is simulated, and the simulation replaces it.
    ctx, c = _stranded_cluster(tmp_path, "m5.2xlarge", "on-demand", "500m", tolerate=False)
    assert Room(ctx).hopeless(c) is None
    got = m.consolidate(ctx, [c], m.SINGLE_NODE)
    assert isinstance(got, m.Command) and got.action == "Replace"


def test_a_pod_that_tolerates_the_taint_is_not_stranded(tmp_path):
    # The pod tolerates the taint: the tainted node can take it, so the candidate is
    # simulated, and the simulation deletes it.
    ctx, c = _stranded_cluster(tmp_path, "m5.large", "spot", "1", tolerate=True)
    assert Room(ctx).hopeless(c) is None
    got = m.consolidate(ctx, [c], m.SINGLE_NODE)
    assert isinstance(got, m.Command) and got.action == "Delete"


@pytest.mark.parametrize("taints", [False, True])
def test_a_stranded_group_never_consolidates(tmp_path, taints):
    # Multi-node consolidation skips a candidate prefix ``Room.stranded`` proves hopeless:
    # every prefix it calls so must fail the full simulation too.
    stranded = 0
    for seed, ctx, candidates, room in _sweep(tmp_path, taints):
        cands = [c for c in candidates if not c.empty]
        for k in range(2, len(cands) + 1):
            if not room.stranded(cands[:k]):
                continue
            stranded += 1
            got = m.consolidate(ctx, cands[:k], m.MULTI_NODE)
            assert isinstance(got, Verdict), f"seed {seed}: {k} candidates stranded but got {got}"
    assert stranded > 3  # the sweep exercises the rule


def test_two_stranded_pods_that_no_cheaper_type_holds_together(tmp_path):
    # Two spot m5.large candidates, each with a 1-CPU pod that fits only the tainted node:
    # together they need one new node cheaper than both, other than as spot, holding 2 CPU;
    # none exists, so the pair is stranded, and its simulation fails. Each one alone is
    # stranded too; a pod that tolerates the taint is not.
    docs = [nodepool(capacity_types="spot, on-demand")]
    for name in ("a", "b"):
        docs += [node(name, "m5.large", capacity_type="spot"), pod(f"{name}-1", name, cpu="1")]
    docs += [tainted(node("t", "m5.4xlarge")), tolerating(pod("t-1", "t", cpu="1"))]
    ctx, candidates = dry_run(tmp_path, *docs).controller.context(elapsed=True)
    pair = [c for c in candidates if c.name in ("a", "b")]
    room = Room(ctx)
    assert room.stranded(pair)
    assert isinstance(m.consolidate(ctx, pair, m.MULTI_NODE), Verdict)


def test_a_group_whose_pods_fit_elsewhere_is_simulated(tmp_path):
    # The same pair, but the pods tolerate the taint: the tainted node takes both, so the
    # pair is not stranded, and the simulation deletes both nodes.
    docs = [nodepool(capacity_types="spot, on-demand")]
    for name in ("a", "b"):
        docs += [
            node(name, "m5.large", capacity_type="spot"),
            tolerating(pod(f"{name}-1", name, cpu="1")),
        ]
    docs += [tainted(node("t", "m5.4xlarge")), tolerating(pod("t-1", "t", cpu="1"))]
    ctx, candidates = dry_run(tmp_path, *docs).controller.context(elapsed=True)
    pair = [c for c in candidates if c.name in ("a", "b")]
    assert not Room(ctx).stranded(pair)
    got = m.consolidate(ctx, pair, m.MULTI_NODE)
    assert isinstance(got, m.Command) and got.action == "Delete" and len(got.candidates) == 2


#: (pods to move off the candidate ``c``: (cpu, memory) each, the NodePool's types, whether
#: three m5.large nodes with about 1 CPU free each are there too ("free"; "one": just one of
#: them; "tainted": with a NoSchedule taint the pods do not tolerate), what consolidation
#: decides: None when it fails, else the command's action and replacement type).
CASES = {
    # The 3.5-CPU pod fits none of the other nodes and no type cheaper than the m5.xlarge
    # holds it (c5.large and m5.large have 2 vCPUs): hopeless. The summed room of the other
    # nodes (3 CPUs, 4 small pods each) would take the small pod and, by amount, most of the
    # big one; only the per-pod test sees that it must move whole.
    "forced-pod": (
        [("3500m", "1Gi"), ("250m", "256Mi")],
        ["c5.large", "m5.large", "m5.xlarge"],
        "free",
        None,
    ),
    # 3 CPUs and 10 GiB must move to one new node: c5.xlarge has the CPUs but 8 GiB,
    # r5.large the memory but 2 vCPUs, and m5.xlarge (which has both) is not cheaper.
    "no-type-holds-both": (
        [("1500m", "5Gi")] * 2,
        ["c5.xlarge", "r5.large", "m5.xlarge"],
        "",
        None,
    ),
    # The same pods with 2 GiB each: a c5.xlarge holds them all and is cheaper.
    "cheaper-type-holds-both": (
        [("1500m", "2Gi")] * 2,
        ["c5.xlarge", "r5.large", "m5.xlarge"],
        "",
        ("Replace", "c5.xlarge"),
    ),
    # Four 1-CPU, 3-GiB pods, each of which fits the one other node, but it has room for
    # one: at least three must share the new node, 3 CPUs and 9 GiB, which no type cheaper
    # than the m5.xlarge holds (c5.xlarge has 8 GiB, r5.large 2 vCPUs). Neither the largest
    # CPU and memory of any cheaper type taken apart, nor the pods no other node fits, see it.
    "count-forces-three": (
        [("1", "3Gi")] * 4,
        ["c5.xlarge", "r5.large", "m5.xlarge"],
        "one",
        None,
    ),
    # With all three other nodes, only one pod must move to the new node: an r5.large.
    "count-forces-one": (
        [("1", "3Gi")] * 4,
        ["c5.xlarge", "r5.large", "m5.xlarge"],
        "free",
        ("Replace", "r5.large"),
    ),
    # Both small pods fit the other nodes' free room: a Delete.
    "fits-the-others": (
        [("500m", "512Mi")] * 2,
        ["c5.large", "m5.large", "m5.xlarge"],
        "free",
        ("Delete", None),
    ),
    # Six 500m pods: two fit each other node, a Delete; with those nodes tainted none does,
    # and no type cheaper than the m5.xlarge has 3 CPUs: hopeless.
    "six-fit-the-others": (
        [("500m", "256Mi")] * 6,
        ["c5.large", "m5.large", "m5.xlarge"],
        "free",
        ("Delete", None),
    ),
    "six-and-the-others-tainted": (
        [("500m", "256Mi")] * 6,
        ["c5.large", "m5.large", "m5.xlarge"],
        "tainted",
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hopeless_exactly_when_the_simulation_fails_here(tmp_path, case):
    shapes, types, others, want = CASES[case]
    docs = [
        nodepool(
            requirements="        - {key: node.kubernetes.io/instance-type, operator: In, "
            f"values: [{', '.join(types)}]}}\n"
        ),
        node("c", "m5.xlarge"),
    ]
    docs += [pod(f"c-{i}", "c", cpu=cpu, memory=mem) for i, (cpu, mem) in enumerate(shapes)]
    taint = "  taints: [{key: dedicated, value: batch, effect: NoSchedule}]\n"
    for i in range({"": 0, "one": 1}.get(others, 3)):
        other = node(f"o{i}", "m5.large") + (taint if others == "tainted" else "")
        tolerating = "  tolerations: [{key: dedicated, operator: Exists}]\n"
        docs += [
            other,
            pod(f"o{i}-1", f"o{i}", cpu="900m", memory="1Gi").replace(
                "spec:\n", "spec:\n" + tolerating, 1
            ),
        ]
    run = dry_run(tmp_path, *docs)
    ctx, candidates = run.controller.context(elapsed=True)
    (c,) = [x for x in candidates if x.name == "c"]
    hopeless = Room(ctx).hopeless(c)
    decision = m.consolidate(ctx, [c], m.SINGLE_NODE)
    if want is None:
        assert hopeless is not None
        assert isinstance(decision, Verdict), decision
    else:
        assert hopeless is None
        assert isinstance(decision, m.Command), decision
        replaced = decision.replacements[0].instance_type.name if decision.replacements else None
        assert (decision.action, replaced) == want


def test_spot_candidate_in_a_pool_that_only_launches_as_spot_is_hopeless(tmp_path):
    """Spot-to-spot consolidation off, a spot candidate, a NodePool whose every type is
    offered as spot wherever it is offered at all: whatever new node its pods need could
    launch as spot, which consolidation rejects whatever the price, so the pre-check skips
    the simulation (its words are the simulation's own). Cheaper on-demand types do not
    help: consolidation never picks on-demand for such a NodeClaim."""
    docs = [
        nodepool(
            capacity_types="spot, on-demand",
            requirements="        - {key: node.kubernetes.io/instance-type, operator: In, "
            "values: [m5.large, m5.xlarge, m5.2xlarge]}\n",
        ),
        node("c", "m5.2xlarge", capacity_type="spot"),
    ]
    # The pod fits no other node; an on-demand m5.large, cheaper than the spot m5.2xlarge,
    # would hold it, but no NodeClaim of the pool could end up on-demand only.
    docs += [pod("c-0", "c", cpu="1", memory="1Gi")]
    docs += [node("o", "m5.large"), pod("o-1", "o", cpu="1500m", memory="1Gi")]
    ctx, candidates = dry_run(tmp_path, *docs).controller.context(elapsed=True)
    assert not ctx.spot_to_spot
    (c,) = [x for x in candidates if x.name == "c"]
    why = _message(Room(ctx).hopeless(c))
    assert why == (
        f"{SPOT_TO_SPOT_OFF}: its pods need at least cpu=1000m memory=1Gi pods=1 on a new "
        "node (1 pod fit no other node by free room and taints: default/c-0), which could "
        "launch as spot"
    )
    got = m.consolidate(ctx, [c], m.SINGLE_NODE)
    assert isinstance(got, Verdict)
    assert got.message() == (
        f"can't consolidate: {SPOT_TO_SPOT_OFF}, and its pods need a new node, and it could "
        "launch as spot"
    )


def test_a_broad_spot_run_decides_the_same_without_the_pre_check(tmp_path, monkeypatch):
    """A whole run of the broad spot-and-on-demand example (spot-to-spot off), Joiner only,
    its NodePool capped at 8 vCPUs and without limits (as case c of ``benchmarks/
    realistic.py``: every on-demand-only type is then dominated by a spot one): the summary
    is byte-identical with the pre-check (spot-only pools included) and with every candidate
    simulated, and the run takes the spot-only stage."""
    shutil.copytree(REPO / "examples" / "broad-bursty", tmp_path / "x")
    pool = tmp_path / "x" / "nodepool.yaml"
    text = pool.read_text()
    text = text.replace('  limits:\n    cpu: "1000"\n', "").replace(
        "        - {key: karpenter.sh/capacity-type",
        '        - {key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["9"]}\n'
        "        - {key: karpenter.sh/capacity-type",
    )
    assert "limits" not in text and "instance-cpu" in text
    pool.write_text(text)
    scenario = tmp_path / "x" / "scenario.yaml"
    scenario.write_text(
        scenario.read_text().replace("compare: [joiner, cluster-autoscaler]", "compare: [joiner]")
    )
    stages: list[frozenset[str]] = []
    spot_only = Room._spot_only

    def counted(self):
        got = spot_only(self)
        stages.append(got)
        return got

    decided: list[Verdict] = []
    hopeless = Room.hopeless

    def seen(self, c):
        why = hopeless(self, c)
        if why is not None and why.kind is VerdictKind.SPOT_TO_SPOT_OFF_BECAUSE:
            decided.append(why)
        return why

    monkeypatch.setattr(Room, "_spot_only", counted)
    monkeypatch.setattr(Room, "hopeless", seen)
    with_room = SimulationRuntime(load_scenario(scenario)).run().summary
    assert any(stages) and decided  # the spot-only stage ran and skipped simulations
    monkeypatch.setattr(Room, "hopeless", lambda self, c: None)
    monkeypatch.setattr(Room, "stranded", lambda self, cands: False)
    without = SimulationRuntime(load_scenario(scenario)).run().summary
    assert json.dumps(with_room, sort_keys=True) == json.dumps(without, sort_keys=True)
    assert with_room["disruptions"]["commands"]


#: A spot-and-on-demand NodePool on KWOK types, a spot candidate ``c`` of type ``big.x`` in
#: zone a whose one pod selects zone a by zone ID (the breaker's case).
TRUNCATION_DOCS = """
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}
---
apiVersion: v1
kind: Node
metadata:
  name: c
  labels:
    karpenter.sh/nodepool: general
    karpenter.sh/capacity-type: spot
    node.kubernetes.io/instance-type: big.x
    topology.kubernetes.io/zone: us-east-1a
    topology.k8s.aws/zone-id: use1-az1
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
spec: {providerID: "kwok://c"}
---
apiVersion: v1
kind: Pod
metadata: {name: c-1, namespace: default}
spec:
  nodeName: c
  nodeSelector: {topology.k8s.aws/zone-id: use1-az1}
  containers: [{name: main, resources: {requests: {cpu: 100m, memory: 100Mi}}}]
"""


@pytest.mark.parametrize("cheap", [100, 650])
def test_a_replacement_that_allows_spot_is_spot_to_spot_whatever_its_types(tmp_path, cheap):
    """Karpenter ``computeConsolidation`` sends all-spot candidates down the spot-to-spot path
    when the replacement's *requirements* allow spot, whatever its types are offered as.
    Here the replacement's cheapest types are on-demand only; with more than 600 of them,
    the cut to the 600 cheapest (``max_instance_types``) drops every spot-offered one. Joiner
    used to replace the spot node with an on-demand one there, where Karpenter (and the
    pre-check, and the solve's stop) reject it: spot-to-spot consolidation is off."""
    a, b = "us-east-1a", "us-east-1b"
    types = [
        make_instance_type(
            f"od.t{i:04d}",
            cpu_m=1000,
            memory=GIB,
            prices={(a, "on-demand"): 0.01 + i * 1e-5, (b, "on-demand"): 0.01 + i * 1e-5},
        )
        for i in range(cheap)
    ]
    types += [
        make_instance_type("dom.a", cpu_m=2000, memory=2 * GIB, prices={(a, "spot"): 0.5}),
        make_instance_type("dom.b", cpu_m=2000, memory=2 * GIB, prices={(b, "spot"): 0.5}),
        make_instance_type("big.x", cpu_m=4000, memory=4 * GIB, prices={(a, "spot"): 1.0}),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(TRUNCATION_DOCS)
    run = DryRun(
        load_files([path]), Catalog.load(), "us-east-1", at=AT,
        feature_gates=FeatureGates(), kwok_types=types,
    )  # fmt: skip
    ctx, candidates = run.controller.context(elapsed=True)
    (c,) = [x for x in candidates if x.name == "c"]
    got = m.consolidate(ctx, [c], m.SINGLE_NODE)
    assert isinstance(got, Verdict) and SPOT_TO_SPOT_OFF in got.message(), got
    why = _message(Room(ctx).hopeless(c))
    assert why is not None and why.startswith(SPOT_TO_SPOT_OFF)
    if cheap > 600:
        # With the gate on, none of the 600 options is a cheaper spot type: Karpenter's
        # "Can't replace with a cheaper node" comes before its 15-type rule.
        run = DryRun(
            load_files([path]), Catalog.load(), "us-east-1", at=AT,
            feature_gates=FeatureGates(spot_to_spot_consolidation=True), kwok_types=types,
        )  # fmt: skip
        ctx, candidates = run.controller.context(elapsed=True)
        (c,) = [x for x in candidates if x.name == "c"]
        got = m.consolidate(ctx, [c], m.SINGLE_NODE)
        assert isinstance(got, Verdict)
        assert got.message() == "can't replace with a cheaper spot node"
        assert unconsolidatable_message(got) == "Can't replace with a cheaper node"
