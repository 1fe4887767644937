"""Spot interruptions end to end: hazard model, rebalance make-before-break, PDB-safe drains."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from joiner.cloudprovider.simulated.provider import HazardModel
from joiner.controllers.interruption.settings import InterruptionSettings
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "spot-interruptions"


@pytest.fixture(scope="module")
def run():
    rt = SimulationRuntime(load_scenario(EXAMPLE / "scenario.yaml"))
    return rt, rt.run().summary


def test_spot_heavy_six_hours_lose_nothing(run):
    _, s = run
    i = s["interruptions"]
    assert i["count"] >= 20
    assert i["byKind"].get("rebalanceRecommendation", 0) >= 1
    assert i["podsLost"] == 0 and s["pods"]["lost"] == 0
    assert i["pdbViolations"] == 0
    assert i["replacementLeadTimeSeconds"]["min"] > 0
    assert i["podsRescheduledBeforeReclaim"] > 0
    schema = json.loads((REPO / "docs" / "schemas" / "summary.schema.json").read_text())
    jsonschema.validate(s, schema)


def test_every_replacement_launches_within_two_seconds_of_the_notice(run):
    _, s = run
    notices = {e["node"]: e["atSeconds"] for e in s["timeline"] if e["kind"] == "notice"}
    launched: dict[str, float] = {}
    for e in s["timeline"]:
        if e["kind"] == "replacementLaunched":
            launched.setdefault(e["node"], e["atSeconds"])
    assert notices
    for node, at in notices.items():
        if node in launched:  # pods that fit existing capacity need no replacement
            assert launched[node] - at <= 2.0, node


def test_rebalance_draining_launches_before_the_notice(run):
    _, s = run
    rebalanced = {
        e["node"]: e["atSeconds"] for e in s["timeline"] if e["kind"] == "rebalanceRecommendation"
    }
    early = [
        e
        for e in s["timeline"]
        if e["kind"] == "replacementLaunched"
        and e["node"] in rebalanced
        and e["atSeconds"] < rebalanced[e["node"]] + 2.0
    ]
    assert early, "make before break: the replacement follows the rebalance recommendation"


def test_drains_never_break_the_budget(run):
    _, s = run
    # The budget keeps 24 of 30 available, so drains are paced: some evictions wait.
    kinds = [e["kind"] for e in s["timeline"]]
    assert "evictionBlocked" in kinds
    assert s["pods"]["pending"] == 0


def test_karpenter_default_ignores_rebalance_recommendations():
    sc = load_scenario(EXAMPLE / "scenario.yaml")
    s = SimulationRuntime(replace(sc, interruption=InterruptionSettings())).run().summary
    rebalanced = {e["node"] for e in s["timeline"] if e["kind"] == "rebalanceRecommendation"}
    assert rebalanced
    acted = {
        e["node"] for e in s["timeline"] if e["kind"] == "cordon" and "rebalance" in e["detail"]
    }
    assert not acted
    assert s["pods"]["lost"] == 0


def test_monitoring_only_cordons():
    sc = load_scenario(EXAMPLE / "scenario.yaml")
    settings = InterruptionSettings(rebalance_monitoring=True)
    s = SimulationRuntime(replace(sc, interruption=settings)).run().summary
    cordoned = [
        e
        for e in s["timeline"]
        if e["kind"] == "cordon" and e["detail"] == "rebalance recommendation"
    ]
    assert cordoned
    drains = {e["node"]: e["detail"] for e in s["timeline"] if e["kind"] == "drainStarted"}
    assert all(drains.get(e["node"]) != "replacement ready (rebalance)" for e in cordoned)


def test_no_hazard_no_interruptions():
    sc = load_scenario(EXAMPLE / "scenario.yaml")
    s = SimulationRuntime(replace(sc, hazard=HazardModel(multiplier=0.0))).run().summary
    assert s["interruptions"]["count"] == 0 and s["timeline"] == []


def test_captured_message_gives_the_same_timeline_as_the_market(tmp_path):
    """Take the first node a Spot pool event interrupts, replay the run with that pool's
    crunches switched off but AWS's sample interruption message (its instance id) at the
    same instant, and the rebalance recommendation it had (same shape): that node's
    timeline is the same."""
    sc = load_scenario(EXAMPLE / "scenario.yaml")
    first = SimulationRuntime(sc)
    summary = first.run().summary
    notice = next(e for e in summary["timeline"] if e["kind"] == "notice")
    node = notice["node"]
    instance = first.state.nodeclaims[node].instance
    d = tmp_path / "ex"
    shutil.copytree(EXAMPLE, d)
    sample = json.loads((d / "spot-itn-sample.json").read_text())
    sample["detail"]["instance-id"] = instance.instance_id
    (d / "itn.json").write_text(json.dumps(sample))
    pool = f"{{instanceType: {instance.instance_type.name}, zone: {instance.offering.zone}"
    text = (
        (d / "scenario.yaml")
        .read_text()
        .replace(
            "      - ratePerHour: 1.0\n",
            f"      - {pool}, ratePerHour: 0.0}}\n      - ratePerHour: 1.0\n",
        )
    )
    text += f"  events:\n    - {{at: {notice['atSeconds']}s, file: itn.json}}\n"
    rebalanced = [
        e["atSeconds"]
        for e in summary["timeline"]
        if e["kind"] == "rebalanceRecommendation" and e["node"] == node
    ]
    if rebalanced:
        sample["detail-type"] = "EC2 Instance Rebalance Recommendation"
        del sample["detail"]["instance-action"]
        (d / "rebalance.json").write_text(json.dumps(sample))
        text += f"    - {{at: {rebalanced[0]}s, file: rebalance.json}}\n"
    (d / "scenario.yaml").write_text(text)
    replayed = SimulationRuntime(load_scenario(d / "scenario.yaml")).run().summary

    def story(s):
        return [
            (e["atSeconds"], e["kind"], e["pod"] is not None)
            for e in s["timeline"]
            if e["node"] == node and e["kind"] != "rebalanceRecommendation"
        ]

    assert story(replayed) == story(summary)
    assert any(k == "notice" for _, k, _ in story(replayed))


def test_running_cluster_receives_aws_sample_message_unchanged():
    s = SimulationRuntime(load_scenario(EXAMPLE / "captured-event.yaml")).run().summary
    node = "ip-10-0-1-17.ec2.internal"
    kinds = [e["kind"] for e in s["timeline"] if e["node"] == node]
    assert kinds[:3] == ["notice", "cordon", "drainStarted"]
    assert kinds[-2:] == ["drained", "terminated"]
    notice = next(e["atSeconds"] for e in s["timeline"] if e["kind"] == "notice")
    assert notice == 600.0
    launched = next(e["atSeconds"] for e in s["timeline"] if e["kind"] == "replacementLaunched")
    assert launched - notice <= 2.0
    # maxUnavailable 1: one eviction at a time, each after the previous replacement bound.
    evictions = [e["atSeconds"] for e in s["timeline"] if e["kind"] == "eviction"]
    assert len(evictions) == 4 and evictions == sorted(evictions)
    assert s["interruptions"]["podsLost"] == 0 and s["interruptions"]["pdbViolations"] == 0
    assert s["interruptions"]["podsRescheduledBeforeReclaim"] == 4
    # The adopted pods are the Deployment's: it created only their replacements.
    assert s["pods"]["scheduled"] == 8


def _captured(tmp_path, *, pod_annotations="", tgp=None, priority=""):
    d = tmp_path / "ex"
    shutil.copytree(EXAMPLE, d)
    rc = d / "running-cluster.yaml"
    text = rc.read_text()
    if pod_annotations:
        text = text.replace(
            "metadata: {name: web-a, namespace: shop, labels: {app: web}}",
            "metadata: {name: web-a, namespace: shop, labels: {app: web}, "
            f"annotations: {{{pod_annotations}}}}}",
        )
    if priority:
        text = text.replace(
            "     spec: {nodeName: ip-10-0-1-17.ec2.internal,\n            containers",
            f"     spec: {{priorityClassName: {priority}, nodeName: ip-10-0-1-17.ec2.internal,\n"
            "            containers",
            1,
        )
    rc.write_text(text)
    if tgp:
        np = d / "nodepool.yaml"
        np.write_text(
            np.read_text().replace(
                "      nodeClassRef:", f"      terminationGracePeriod: {tgp}\n      nodeClassRef:"
            )
        )
    return SimulationRuntime(load_scenario(d / "captured-event.yaml")).run().summary


def test_do_not_disrupt_pod_is_waited_for_until_the_reclaim(tmp_path):
    s = _captured(tmp_path, pod_annotations='"karpenter.sh/do-not-disrupt": "true"')
    lost = [e["pod"] for e in s["timeline"] if e["kind"] == "podLost"]
    assert lost == ["shop/web-a"]
    assert s["interruptions"]["podsLost"] == 1


def test_termination_grace_period_forces_the_drain(tmp_path):
    """The drain starts at 600 s with a 60 s terminationGracePeriod: every pod still held
    (web-a by do-not-disrupt, web-c and web-d by the PDB) is deleted at 630 s, its default
    30 s terminationGracePeriodSeconds before the deadline (Karpenter
    ``DeleteExpiringPods``)."""
    s = _captured(tmp_path, pod_annotations='"karpenter.sh/do-not-disrupt": "true"', tgp="60s")
    forced = [e for e in s["timeline"] if e["kind"] == "eviction" and e["detail"]]
    assert [e["pod"] for e in forced] == ["shop/web-a", "shop/web-c", "shop/web-d"]
    assert {e["atSeconds"] for e in forced} == {630.0}
    assert s["interruptions"]["podsLost"] == 0


def test_critical_pods_are_evicted_last(tmp_path):
    s = _captured(tmp_path, priority="system-cluster-critical")
    order = [e["pod"] for e in s["timeline"] if e["kind"] == "eviction"]
    assert order[-1] == "shop/web-a" and len(order) == 4


@pytest.mark.parametrize(
    ("detail_type", "source", "detail", "kind"),
    [
        (
            "AWS Health Event",
            "aws.health",
            {
                "service": "EC2",
                "eventTypeCategory": "scheduledChange",
                "affectedEntities": [{"entityValue": "i-1234567890abcdef0"}],
            },
            "scheduledChange",
        ),
        (
            "EC2 Instance State-change Notification",
            "aws.ec2",
            {"instance-id": "i-1234567890abcdef0", "state": "stopping"},
            "stateChange",
        ),
    ],
)
def test_scheduled_changes_and_state_changes_drain(tmp_path, detail_type, source, detail, kind):
    d = tmp_path / "ex"
    shutil.copytree(EXAMPLE, d)
    message = {
        "version": "0",
        "id": "x",
        "detail-type": detail_type,
        "source": source,
        "detail": detail,
    }
    (d / "spot-itn-sample.json").write_text(json.dumps(message))
    s = SimulationRuntime(load_scenario(d / "captured-event.yaml")).run().summary
    kinds = [e["kind"] for e in s["timeline"] if e["node"] == "ip-10-0-1-17.ec2.internal"]
    assert kinds[0] == kind
    assert "drainStarted" in kinds
    if kind == "scheduledChange":
        # A scheduled change leaves time: the drain completes within the budget.
        assert kinds[-1] == "terminated" and s["pods"]["lost"] == 0
    else:
        # A stopping instance is gone 30 s later: the PDB (maxUnavailable 1) cannot let
        # four pods out in time, and what is left is lost, as on EC2.
        assert "reclaimed" in kinds and s["pods"]["lost"] >= 1


def test_interruption_runs_are_reproducible_across_hash_seeds(tmp_path):
    import os
    import subprocess
    import sys

    outputs = []
    for seed in ("1", "999"):
        out = tmp_path / seed
        subprocess.run(
            [
                sys.executable,
                "-m",
                "joiner.cli.main",
                "simulate",
                str(EXAMPLE / "scenario.yaml"),
                "--out",
                str(out),
                "-q",
            ],
            check=True,
            capture_output=True,
            env=dict(os.environ, PYTHONHASHSEED=seed),
            cwd=REPO,
        )
        outputs.append((out / "summary.json").read_bytes())
    assert outputs[0] == outputs[1]


def _with_interruption(tmp_path: Path, interruption: str, values: str | None = None) -> dict:
    """The spot-interruptions example with ``spec.interruption`` replaced (and, optionally,
    its NTH values file), as a user would edit it."""
    d = tmp_path / "ex"
    shutil.copytree(EXAMPLE, d)
    if values is not None:
        (d / "nth-values.yaml").write_text(values)
    sc = d / "scenario.yaml"
    text = sc.read_text().replace(
        "interruption: {file: nth-values.yaml, rebalanceReplacement: true}", interruption
    )
    sc.write_text(text.replace("duration: 6h", "duration: 2h"))
    return SimulationRuntime(load_scenario(sc)).run().summary


def _first(s: dict, kind: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for e in s["timeline"]:
        if e["kind"] == kind:
            out.setdefault(e["node"], e["atSeconds"])
    return out


def test_nth_rebalance_draining_drains_at_once_without_make_before_break(tmp_path):
    """NTH's enableRebalanceDraining cordons and drains on the recommendation; it launches
    nothing first (the evicted pods are pending like any other)."""
    s = _with_interruption(tmp_path, "interruption: {file: nth-values.yaml}")
    rebalanced = _first(s, "rebalanceRecommendation")
    cordons = _first(s, "cordon")
    drains = _first(s, "drainStarted")
    # The nodes NTH's nodeSelector selects (initialized spot nodes) are cordoned at once.
    handled = [n for n, at in rebalanced.items() if n in cordons and cordons[n] - at < 1.0]
    assert handled
    for node in handled:
        assert drains[node] - rebalanced[node] < 1.0, node


def test_rebalance_replacement_waits_for_the_replacement_before_draining(tmp_path):
    s = _with_interruption(
        tmp_path, "interruption: {file: nth-values.yaml, rebalanceReplacement: true}"
    )
    rebalanced = _first(s, "rebalanceRecommendation")
    drains = _first(s, "drainStarted")
    waited = [n for n, at in rebalanced.items() if n in drains and drains[n] - at >= 20.0]
    assert waited, "make before break drains once the replacement is Ready"


def test_nth_cordon_only_never_drains(tmp_path):
    values = (
        "aws-node-termination-handler:\n  enableSpotInterruptionDraining: true\n"
        "  cordonOnly: true\n"
    )
    s = _with_interruption(tmp_path, "interruption: {file: nth-values.yaml}", values)
    assert s["interruptions"]["count"] > 0
    notices = _first(s, "notice")
    assert notices
    cordons = _first(s, "cordon")
    assert all(n in cordons for n in notices)
    # No drain on the warning (Karpenter's consolidation may still drain other nodes).
    assert not [
        e
        for e in s["timeline"]
        if e["kind"] == "drainStarted" and e["detail"] == "spot interruption warning"
    ]
    # The pods stay on the cordoned node until the instance is reclaimed.
    assert s["pods"]["lost"] > 0


def test_nth_values_not_modelled_or_unknown_draw_warnings(tmp_path):
    values = (
        "aws-node-termination-handler:\n  enableSpotInterruptionDraining: true\n"
        "  taintNode: true\n  excludeFromLoadBalancers: true\n  image: {tag: v1.22.0}\n"
        "  enableRebalanceDrainning: true\n"
    )
    s = _with_interruption(tmp_path, "interruption: {file: nth-values.yaml}", values)
    text = "\n".join(s["warnings"])
    assert "not modelled" in text and "taintNode" in text and "excludeFromLoadBalancers" in text
    assert "enableRebalanceDrainning" in text and "image" not in text.split("ignored:")[-1]


def _with_pre_stop(tmp_path: Path, seconds: int, grace: int) -> dict:
    """The captured-message example, its web pods given a preStop sleep and a grace period."""
    d = tmp_path / "ex"
    shutil.copytree(EXAMPLE, d)
    rc = d / "running-cluster.yaml"
    plain = '[{name: web, resources: {requests: {cpu: "900m", memory: 1Gi}}}]'
    hooked = (
        f"[{{name: web, lifecycle: {{preStop: {{sleep: {{seconds: {seconds}}}}}}}, "
        'resources: {requests: {cpu: "900m", memory: 1Gi}}}]'
    )
    text = rc.read_text().replace(
        f"        spec:\n          containers: {plain}",
        f"        spec:\n          terminationGracePeriodSeconds: {grace}\n"
        f"          containers: {hooked}",
    )
    text = text.replace(
        f"containers: {plain}", f"terminationGracePeriodSeconds: {grace}, containers: {hooked}"
    )
    rc.write_text(text)
    return SimulationRuntime(load_scenario(d / "captured-event.yaml")).run().summary


def test_pre_stop_and_grace_period_delay_the_drain_and_a_reclaim_cuts_them_short(tmp_path):
    quick = _with_pre_stop(tmp_path / "quick", 5, 30)
    assert quick["pods"]["lost"] == 0
    shutting = [e for e in quick["timeline"] if e["kind"] == "eviction"]
    assert shutting and all(e["detail"] == "shutting down for 5 s" for e in shutting)
    # A 100 s preStop under a 2-minute warning: the evictions the budget paces start too
    # late to finish before the reclaim, so those pods are cut short.
    slow = _with_pre_stop(tmp_path / "slow", 100, 120)
    cut = [e for e in slow["timeline"] if e["kind"] == "podLost"]
    assert cut and all("cut short" in e["detail"] for e in cut)
    assert slow["interruptions"]["podsLost"] == len(cut)
    # The grace period bounds the preStop hook.
    capped = _with_pre_stop(tmp_path / "capped", 100, 5)
    assert capped["pods"]["lost"] == 0
    evictions = [e for e in capped["timeline"] if e["kind"] == "eviction"]
    assert all(e["detail"] == "shutting down for 5 s" for e in evictions)


def test_every_interruption_disruption_records_its_message_kind_on_the_nodeclaim(run):
    """The interruption controller marks each NodeClaim it deletes with the typed message
    kind (what ``karpenter_nodeclaims_disrupted_total`` reports), matching the cordon."""
    rt, s = run
    english = {
        "spot interruption warning": "spot_interrupted",
        "rebalance recommendation": "rebalance_recommendation",
    }
    cordoned = {e["node"]: e["detail"] for e in s["timeline"] if e["kind"] == "cordon"}
    assert cordoned
    by_node = {c.node_name: c for c in rt.state.nodeclaims.values() if c.node_name}
    for node, detail in cordoned.items():
        claim = by_node[node]
        assert claim.interruption is not None and claim.interruption.value == english[detail]
