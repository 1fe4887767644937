"""Disruption and expiration in simulation: the nightly scale-down example, budgets over
time, expiry with replacement, and reproducibility."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from joiner.cloudprovider.catalog import Catalog
from joiner.operator.plan import build_plan
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
NIGHTLY = REPO / "examples" / "nightly-consolidation" / "scenario.yaml"
SCALE_DOWN_S = 120 * 60.0
NIGHT_REPLICAS = 13


@pytest.fixture(scope="module")
def nightly():
    sc = load_scenario(NIGHTLY)
    return sc, SimulationRuntime(sc).run().summary


def test_partial_scale_down_is_consolidated_with_a_replace_within_an_hour(nightly):
    _sc, s = nightly
    after = [c for c in s["disruptions"]["commands"] if c["atSeconds"] >= SCALE_DOWN_S]
    assert any(c["action"] == "Replace" for c in after)
    assert all(c["atSeconds"] <= SCALE_DOWN_S + 3600 for c in after)
    terminated = [
        e["atSeconds"]
        for e in s["timeline"]
        if e["kind"] == "terminated" and e["atSeconds"] >= SCALE_DOWN_S
    ]
    assert terminated and max(terminated) <= SCALE_DOWN_S + 3600
    d = s["disruptions"]
    assert d["podsEvicted"] > 0 and d["savingsPerHour"] > 0
    assert sum(d["byMethod"].values()) == len(d["commands"])


def test_cost_ends_within_ten_percent_of_a_fresh_plan(nightly):
    sc, s = nightly
    end = s["durationSeconds"]
    cost_now = sum(n["pricePerHour"] for n in s["nodes"] if n["deletedAtSeconds"] is None)
    m = sc.manifests
    night = replace(m, workloads=[replace(w, replicas=NIGHT_REPLICAS) for w in m.workloads])
    fresh = build_plan(
        night, Catalog.load(), sc.region, subnets=sc.subnets, security_groups=sc.security_groups
    )
    assert fresh.unschedulable == []
    assert end > SCALE_DOWN_S
    assert cost_now <= fresh.costPerHour * 1.10, (cost_now, fresh.costPerHour)


def test_no_pod_lost_and_no_pdb_violated(nightly):
    _sc, s = nightly
    assert s["pods"]["lost"] == 0
    assert s["interruptions"]["pdbViolations"] == 0
    assert s["pods"]["pending"] == 0


def test_budget_never_exceeded(nightly):
    """At each disruption, nodes disrupting at once <= ceil(20% of the pool's nodes)."""
    _sc, s = nightly
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    for e in s["timeline"]:
        if e["kind"] == "disruption":
            started[e["node"]] = e["atSeconds"]
        if e["kind"] == "terminated":
            ended[e["node"]] = e["atSeconds"]
    assert started
    for t in sorted(set(started.values())):
        disrupting = sum(1 for n, at in started.items() if at <= t and ended.get(n, math.inf) > t)
        alive = sum(
            1
            for n in s["nodes"]
            if n["readyAtSeconds"] is not None
            and n["readyAtSeconds"] <= t
            and (n["deletedAtSeconds"] is None or n["deletedAtSeconds"] > t)
        )
        assert disrupting <= math.ceil(0.2 * alive), (t, disrupting, alive)


def test_replacements_are_ready_before_their_candidates_drain(nightly):
    _sc, s = nightly
    replaced = {
        n for c in s["disruptions"]["commands"] if c["action"] == "Replace" for n in c["nodes"]
    }
    ready = {e["node"]: e["atSeconds"] for e in s["timeline"] if e["kind"] == "replacementReady"}
    drain = {e["node"]: e["atSeconds"] for e in s["timeline"] if e["kind"] == "drainStarted"}
    assert replaced
    for n in replaced:
        assert ready[n] <= drain[n]


def test_replacements_name_where_they_launched(nightly):
    """Regression: a command's replacements named the offering it expected (the cheapest,
    us-east-1a), not where the fleet launched them (us-east-1c in this example)."""
    _sc, s = nightly
    nodes = {n["name"]: f"{n['instanceType']}/{n['zone']}/{n['capacityType']}" for n in s["nodes"]}
    launched = {
        (e["atSeconds"], e["node"]): e["detail"].split(" -> ")[1].split(", ")
        for e in s["timeline"]
        if e["kind"] == "disruption" and " -> " in e["detail"]
    }
    replacing = [c for c in s["disruptions"]["commands"] if c["replacements"]]
    assert replacing
    for c in replacing:
        claims = launched[(c["atSeconds"], c["nodes"][0])]
        assert c["replacements"] == [nodes[name] for name in claims]


def _expiring(tmp_path: Path, expire: str, tgp: str | None = None) -> Path:
    src = NIGHTLY.parent
    pool = (
        (src / "nodepool.yaml").read_text().replace("expireAfter: 720h", f"expireAfter: {expire}")
    )
    if tgp is not None:
        pool = pool.replace(
            f"expireAfter: {expire}", f"expireAfter: {expire}\n      terminationGracePeriod: {tgp}"
        )
    (tmp_path / "nodepool.yaml").write_text(pool)
    (tmp_path / "app.yaml").write_text((src / "app.yaml").read_text())
    (tmp_path / "traffic.csv").write_text("minute,value\n0,10\n")
    text = (src / "scenario.yaml").read_text().replace("duration: 4h", "duration: 2h")
    (tmp_path / "scenario.yaml").write_text(text)
    return tmp_path / "scenario.yaml"


def test_expired_nodes_are_replaced_without_losing_pods(tmp_path):
    s = SimulationRuntime(load_scenario(_expiring(tmp_path, "30m"))).run().summary
    assert s["disruptions"]["expired"] >= 2
    expired = [e for e in s["timeline"] if e["kind"] == "expired"]
    for e in expired:
        node = next(n for n in s["nodes"] if n["name"] == e["node"])
        assert e["atSeconds"] == pytest.approx(node["launchedAtSeconds"] + 1800, abs=1.0)
    assert s["pods"]["lost"] == 0
    assert s["pods"]["pending"] == 0
    live = [n for n in s["nodes"] if n["deletedAtSeconds"] is None]
    assert live  # replacement capacity is up at the end


def test_nightly_run_is_reproducible(tmp_path, nightly):
    _sc, s = nightly
    again = SimulationRuntime(load_scenario(NIGHTLY)).run().summary
    assert json.dumps(again, sort_keys=True) == json.dumps(s, sort_keys=True)


def test_pods_evicted_counts_each_pod_once(nightly):
    _sc, s = nightly
    evictions = [e for e in s["timeline"] if e["kind"] == "eviction"]
    assert s["disruptions"]["podsEvicted"] == len(evictions)
    assert len({e["pod"] for e in evictions}) == len(evictions)


def test_multi_node_consolidation_under_hpa_scale_down_keeps_the_pdb():
    sc = load_scenario(Path(__file__).parent / "data" / "consolidation-hpa-pdb.yaml")
    s = SimulationRuntime(sc).run().summary
    assert s["disruptions"]["byMethod"].get("MultiNodeConsolidation", 0) >= 1
    assert s["interruptions"]["pdbViolations"] == 0
    assert s["pods"]["lost"] == 0


def test_expiry_shorter_than_boot_keeps_relaunching(tmp_path):
    """Regression (breaker): expireAfter 1s deleted every NodeClaim before it registered
    and provisioning never ran again, leaving pods pending with no reason."""
    path = _expiring(tmp_path, "1s")
    text = path.read_text().replace("duration: 2h", "duration: 10m")
    path.write_text(text)
    s = SimulationRuntime(load_scenario(path)).run().summary
    assert s["disruptions"]["expired"] >= 3
    assert s["provisioning"]["passes"] >= 3
    assert s["provisioning"]["nodeClaimsCreated"] > s["disruptions"]["expired"] // 2


def test_scenario_typo_gets_a_hint_and_a_manifest_is_not_a_scenario(tmp_path):
    from joiner.api.errors import InputError

    typo = tmp_path / "s.yaml"
    typo.write_text(
        "apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\n"
        "spec:\n  manifests: [a.yaml]\n  workloads: [{deployment: a, replica: 3}]\n"
    )
    with pytest.raises(InputError, match="did you mean 'replicas'"):
        load_scenario(typo)
    dep = tmp_path / "d.yaml"
    dep.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {}\n")
    with pytest.raises(InputError, match="this is a Deployment, not a Scenario"):
        load_scenario(dep)


def test_cronjob_time_zone_is_honoured_and_checked():
    """Regression (breaker): spec.timeZone was ignored, and an unknown zone accepted."""
    from datetime import UTC, datetime

    from joiner.api.errors import InputError
    from joiner.api.objects import CronJob, PodTemplate, Source
    from joiner.sim.scenario_sections import fire_times

    def job(tz: str | None) -> CronJob:
        return CronJob(
            "ns",
            "cj",
            "0 19 * * *",
            PodTemplate(requests={}),
            Source("f", "CronJob", "ns/cj"),
            time_zone=tz,
        )

    start = datetime(2025, 1, 7, tzinfo=UTC)
    assert tuple(fire_times(job(None), start, 86400)) == (19 * 3600.0,)
    assert tuple(fire_times(job("Asia/Tokyo"), start, 86400)) == (10 * 3600.0,)  # 19:00 JST
    from joiner.api.cron import check_time_zone

    with pytest.raises(InputError, match="unknown time zone 'Mars/Olympus'"):
        check_time_zone("Mars/Olympus", field="spec.timeZone")
