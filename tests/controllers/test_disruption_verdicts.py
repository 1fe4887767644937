"""Typed disruption decisions (controllers/disruption/verdicts.py): each method's traits
are Karpenter's, every verdict kind renders its English, and the metrics and Events read
the typed fields rather than words."""

from __future__ import annotations

import dataclasses

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from joiner.cluster.kube.events import blocked_message, unconsolidatable_message
from joiner.cluster.kube.metrics import Metrics
from joiner.controllers.disruption import methods as m
from joiner.controllers.disruption.command import Command
from joiner.controllers.disruption.verdicts import (
    ConsolidationType,
    DisruptionClass,
    DisruptionMethod,
    Reason,
    Verdict,
    VerdictKind,
)


def test_each_method_carries_karpenters_reason_class_and_consolidation_type() -> None:
    # karpenter pkg/controllers/disruption: emptiness.go, drift.go,
    # multinodeconsolidation.go, singlenodeconsolidation.go (Method interface, types.go).
    got = {
        meth.value: (meth.reason, meth.disruption_class, meth.consolidation_type)
        for meth in DisruptionMethod
    }
    assert got == {
        "Emptiness": (Reason.EMPTY, DisruptionClass.GRACEFUL, ConsolidationType.EMPTY),
        "Drift": (Reason.DRIFTED, DisruptionClass.EVENTUAL, ConsolidationType.NONE),
        "MultiNodeConsolidation": (
            Reason.UNDERUTILIZED,
            DisruptionClass.GRACEFUL,
            ConsolidationType.MULTI,
        ),
        "SingleNodeConsolidation": (
            Reason.UNDERUTILIZED,
            DisruptionClass.GRACEFUL,
            ConsolidationType.SINGLE,
        ),
    }


def test_the_pass_order_is_karpenters() -> None:
    assert [name for name, _ in m.ORDER] == [
        DisruptionMethod.EMPTINESS,
        DisruptionMethod.DRIFT,  # StaticDrift: reason Drifted, as Drift's
        DisruptionMethod.DRIFT,
        DisruptionMethod.MULTI_NODE,
        DisruptionMethod.SINGLE_NODE,
    ]


def test_a_commands_reason_is_its_methods() -> None:
    for meth in DisruptionMethod:
        assert Command(meth, []).reason is meth.reason


#: One verdict of every kind and its English (what summaries, the CLI and logs show).
ENGLISH: list[tuple[Verdict, str]] = [
    (Verdict(VerdictKind.POOL_UNKNOWN, pool="x"), "its NodePool x is not in the manifests"),
    (Verdict(VerdictKind.BEING_DELETED), "already being deleted"),
    (Verdict(VerdictKind.NOT_INITIALIZED), "not initialized yet"),
    (Verdict(VerdictKind.NODE_DO_NOT_DISRUPT), "node has karpenter.sh/do-not-disrupt"),
    (Verdict(VerdictKind.NOMINATED), "nominated for a pending pod"),
    (
        Verdict(VerdictKind.POD_DO_NOT_DISRUPT, pod="default/db-0"),
        "pod default/db-0 has karpenter.sh/do-not-disrupt",
    ),
    (
        Verdict(VerdictKind.PDB_BLOCKS, pdb="default/api", pod="default/api-0"),
        "PDB default/api allows 0 disruptions (pod default/api-0)",
    ),
    (
        Verdict(VerdictKind.BUDGET, pool="p", reason=Reason.EMPTY),
        "NodePool p budget allows 0 Empty disruptions",
    ),
    (
        Verdict(VerdictKind.BUDGET, pool="p", reason=Reason.DRIFTED),
        "NodePool p budget allows 0 Drifted",
    ),
    (
        Verdict(VerdictKind.BUDGET, pool="p", reason=Reason.UNDERUTILIZED),
        "NodePool p budget is used up",
    ),
    (
        Verdict(VerdictKind.BUDGET, pool="p", reason=Reason.EMPTY, detail="the budget says"),
        "the budget says",
    ),
    (Verdict(VerdictKind.BUFFER_PODS, node="n"), "Node n has buffer pods"),
    (
        Verdict(VerdictKind.EMPTY_NOT_YET, seconds=30),
        "empty, but consolidateAfter (30s) has not passed",
    ),
    (
        Verdict(VerdictKind.EMPTY_NEVER, pool="p"),
        "empty, but NodePool p has consolidateAfter: Never",
    ),
    (
        Verdict(VerdictKind.CONSOLIDATION_DISABLED, pool="p"),
        "NodePool p has consolidateAfter: Never",
    ),
    (
        Verdict(VerdictKind.WHEN_EMPTY, pool="p"),
        "NodePool p consolidates only empty nodes (policy WhenEmpty)",
    ),
    (
        Verdict(VerdictKind.NOT_CONSOLIDATABLE_YET, seconds=5400),
        "consolidateAfter (1h30m) has not passed since its last pod change",
    ),
    (Verdict(VerdictKind.STOPPED, detail="why"), "can't consolidate: why"),
    (
        Verdict(VerdictKind.STOPPED_NOT_CHEAPER, detail="no instance type", spot_to_spot_off=True),
        "can't consolidate: spot-to-spot consolidation is off (--feature-gates "
        "SpotToSpotConsolidation=true), and no instance type",
    ),
    (
        Verdict(VerdictKind.POD_FITS_NOWHERE, pod="ns/a", detail="no room"),
        "pod ns/a fits nowhere else: no room",
    ),
    (
        Verdict(VerdictKind.POD_NEEDS_UNINITIALIZED, pod="ns/a", node="n"),
        "pod ns/a would need node n, which is not initialized yet",
    ),
    (
        Verdict(VerdictKind.TOO_MANY_NEW_NODES, count=3),
        "its pods need 3 new nodes; consolidation only replaces nodes with one",
    ),
    (
        Verdict(VerdictKind.NOT_CHEAPER, price=0.096),
        "can't replace with a cheaper node: no instance type that fits its pods costs less than "
        "$0.0960/h at worst",
    ),
    (
        Verdict(VerdictKind.NOT_CHEAPER_BECAUSE, detail="minValues"),
        "can't replace with a cheaper node: minValues",
    ),
    (Verdict(VerdictKind.NOT_CHEAPER_SPOT), "can't replace with a cheaper spot node"),
    (
        Verdict(VerdictKind.NOT_CHEAPER_SPOT, detail="minValues"),
        "can't replace with a cheaper spot node: minValues",
    ),
    (
        Verdict(VerdictKind.SPOT_TO_SPOT_OFF),
        "spot-to-spot consolidation is off (--feature-gates SpotToSpotConsolidation=true); spot "
        "nodes are only deleted, never replaced",
    ),
    (
        Verdict(VerdictKind.SPOT_TO_SPOT_OFF_BECAUSE, detail="it could launch as spot"),
        "spot-to-spot consolidation is off (--feature-gates SpotToSpotConsolidation=true): it "
        "could launch as spot",
    ),
    (
        Verdict(VerdictKind.SPOT_TO_SPOT_TOO_FEW, wanted=15, count=4),
        "spot-to-spot needs 15 cheaper instance types, 4 are allowed",
    ),
    (
        Verdict(VerdictKind.ON_DEMAND_BASE_DELETE, pool="p"),
        "NodePool p's on-demand base (joiner.dev/on-demand-base) needs its on-demand nodes; "
        "deleting them would leave fewer",
    ),
    (
        Verdict(VerdictKind.ON_DEMAND_BASE_REPLACE, pool="p"),
        "NodePool p's on-demand base (joiner.dev/on-demand-base) needs its on-demand nodes; the "
        "replacement could not be on-demand",
    ),
    (
        Verdict(VerdictKind.BALANCED, price=0.01, score=0.25, threshold=0.5),
        "Balanced policy: saving 0.0100 $/h is not worth the disruption (score 0.25 < 0.5)",
    ),
    (Verdict(VerdictKind.NO_OFFERING), "no available offering for the replacement"),
    (
        Verdict(VerdictKind.NOT_MANAGED),
        "not managed by a NodePool (no karpenter.sh/nodepool label)",
    ),
    (
        Verdict(VerdictKind.LABEL_MISSING, detail="topology.kubernetes.io/zone"),
        "node has no topology.kubernetes.io/zone label",
    ),
    (
        Verdict(VerdictKind.OFFERING_UNKNOWN, pool="p", detail="zz9.mega in us-east-1a"),
        "instance type zz9.mega in us-east-1a is not offered to NodePool p",
    ),
    (
        Verdict(VerdictKind.NOT_ADOPTED, detail="instance i-1 already backs another Node"),
        "instance i-1 already backs another Node",
    ),
    (
        Verdict(VerdictKind.STRANDED),
        "the other nodes and one cheaper node cannot hold these nodes' pods",
    ),
    (
        Verdict(VerdictKind.STATIC_POOL, pool="p"),
        "NodePool p is static (spec.replicas): it keeps its node count and is never emptied "
        "or consolidated",
    ),
    (
        Verdict(VerdictKind.STATIC_OVER_REPLICAS, pool="p"),
        "NodePool p runs more nodes than spec.replicas: its scale-down comes first",
    ),
    (
        Verdict(VerdictKind.STATIC_NODE_LIMIT, pool="p"),
        "NodePool p's limits.nodes leaves no room for a replacement",
    ),
    (
        Verdict(
            VerdictKind.DRIFTED_BUT,
            detail="AMI changed",
            cause=Verdict(VerdictKind.BUDGET, pool="p", reason=Reason.DRIFTED),
        ),
        "drifted (AMI changed), but NodePool p budget allows 0 Drifted",
    ),
    (
        Verdict(VerdictKind.NOT_REACHED),
        "the pass's command was chosen before a method got to it",
    ),
]


@pytest.mark.parametrize(("verdict", "english"), ENGLISH)
def test_each_verdict_renders_its_english(verdict: Verdict, english: str) -> None:
    assert verdict.message() == english


def test_every_kind_renders() -> None:
    assert {v.kind for v, _ in ENGLISH} == set(VerdictKind)


def test_verdicts_are_frozen_values() -> None:
    a = Verdict(VerdictKind.WHEN_EMPTY, pool="p")
    assert a == Verdict(VerdictKind.WHEN_EMPTY, pool="p") and hash(a) == hash(
        Verdict(VerdictKind.WHEN_EMPTY, pool="p")
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.pool = "q"  # type: ignore[misc]


def test_an_event_needs_no_english(monkeypatch: pytest.MonkeyPatch) -> None:
    # Events read the kind and fields: no rendering is asked for at all.
    def fail(_self: Verdict) -> str:
        raise AssertionError("events must not read the English")

    monkeypatch.setattr(Verdict, "message", fail)
    assert unconsolidatable_message(Verdict(VerdictKind.TOO_MANY_NEW_NODES, count=2)) == (
        "Can't remove without creating 2 candidates"
    )
    assert unconsolidatable_message(Verdict(VerdictKind.NOT_CHEAPER, price=1.0)) == (
        "Can't replace with a cheaper node"
    )
    assert unconsolidatable_message(Verdict(VerdictKind.BUDGET, pool="p")) is None
    assert blocked_message(Verdict(VerdictKind.PDB_BLOCKS, pdb="ns/b", pod="ns/p")) == (
        "Pdb prevents pod evictions (PodDisruptionBudget=[ns/b])"
    )
    assert blocked_message(Verdict(VerdictKind.POD_DO_NOT_DISRUPT, pod="ns/p")) == (
        'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=ns/p)'
    )
    assert blocked_message(Verdict(VerdictKind.NODE_DO_NOT_DISRUPT)) == (
        'Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation'
    )
    assert blocked_message(Verdict(VerdictKind.TOO_MANY_NEW_NODES, count=2)) is None


@pytest.mark.parametrize("meth", list(DisruptionMethod))
def test_the_decision_metric_reads_the_methods_traits(meth: DisruptionMethod) -> None:
    metrics = Metrics()
    metrics.disruption_decision(meth, "Delete")
    samples = {
        tuple(sorted(s.labels.items())): s.value
        for f in text_string_to_metric_families(generate_latest(metrics.registry).decode())
        for s in f.samples
        if s.name == "karpenter_voluntary_disruption_decisions_total"
    }
    key = (
        ("consolidation_type", meth.consolidation_type.value),
        ("decision", "delete"),
        ("reason", meth.reason.value.lower()),
    )
    assert samples == {key: 1.0}
