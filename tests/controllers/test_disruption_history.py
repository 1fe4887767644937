"""Each node's disruption verdict history (``controllers.disruption.history``): entries only
on a change, bounded per node, the method that gave each verdict, the command's outcomes."""

from __future__ import annotations

from pathlib import Path

from joiner.controllers.disruption.history import (
    ALL_NODES,
    NOT_REACHED,
    Outcome,
    VerdictHistory,
    unknown_node,
)
from joiner.controllers.disruption.verdicts import DisruptionMethod, Verdict, VerdictKind
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.controllers.disruption_fixtures import dry_run, node, nodepool, pdb, pod

REPO = Path(__file__).resolve().parents[2]

TEN_MINUTES = nodepool().replace("consolidateAfter: 0s", "consolidateAfter: 10m")


def test_kept_until_consolidate_after_then_chosen_and_disrupted_with_their_times(tmp_path):
    run = dry_run(tmp_path, TEN_MINUTES, node("big", "m5.4xlarge"), pod("web-1", "big"))
    history = run.controller.history = VerdictHistory()
    command, _ = run.controller.compute()  # t=0: the adopted node's last pod event was t=0
    assert command is None
    run.clock.run_until(300.0)
    assert run.controller.compute()[0] is None  # same verdict: no new entry
    run.clock.run_until(600.0)
    command, _ = run.controller.compute()
    assert command is not None and command.names == ["big"]
    run.clock.run_until(615.0)  # the validation delay
    run.controller.execute(command)
    got = history.of("big")
    assert got is not None and got.omitted == 0
    kept, chosen, disrupted = got.entries
    assert (kept.at_s, kept.pass_number, kept.outcome) == (0.0, 1, Outcome.KEPT)
    assert kept.method is DisruptionMethod.MULTI_NODE
    assert kept.verdict == Verdict(VerdictKind.NOT_CONSOLIDATABLE_YET, seconds=600.0)
    assert (chosen.at_s, chosen.pass_number, chosen.outcome) == (600.0, 3, Outcome.CHOSEN)
    assert chosen.method is DisruptionMethod.SINGLE_NODE and chosen.action == "Replace"
    assert (disrupted.at_s, disrupted.outcome) == (615.0, Outcome.DISRUPTED)
    assert disrupted.replacements == chosen.replacements
    assert len(disrupted.replacements) == 1 and disrupted.replacements[0].endswith("/on-demand")


def test_a_pdb_verdict_names_the_pdb_and_the_method_that_gave_it(tmp_path):
    run = dry_run(
        tmp_path,
        nodepool(),
        node("big", "m5.4xlarge"),
        pod("api-1", "big", app="api"),
        pod("api-2", "big", app="api"),
        pdb("api", "api", min_available=2),
    )
    plan = run.plan(explain="big")
    assert plan.explain is not None
    (entry,) = plan.explain["big"].entries
    assert (entry.kind, entry.method, entry.outcome) == (
        "pdb-blocks",
        "MultiNodeConsolidation",
        "kept",
    )
    assert entry.fields == {"pdb": "default/api", "pod": "default/api-1"}
    assert entry.message == "PDB default/api allows 0 disruptions (pod default/api-1)"


def test_a_node_left_out_of_the_pass_is_put_down_to_candidate_selection(tmp_path):
    run = dry_run(
        tmp_path,
        nodepool(),
        node("keep", "m5.xlarge", annotations='karpenter.sh/do-not-disrupt: "true"'),
        pod("web-1", "keep"),
    )
    plan = run.plan(explain="keep")
    assert plan.explain is not None
    (entry,) = plan.explain["keep"].entries
    assert (entry.method, entry.kind) == ("Candidates", "node-do-not-disrupt")


def test_nodes_an_earlier_command_left_untried_are_not_reached(tmp_path):
    run = dry_run(
        tmp_path,
        nodepool(),
        node("idle", "m5.xlarge"),
        node("busy", "m5.4xlarge"),
        pod("web-1", "busy"),
    )
    plan = run.plan(explain="*")
    assert plan.explain is not None
    first = plan.explain["busy"].entries[0]
    assert (first.passNumber, first.kind, first.method) == (1, "not-reached", "Emptiness")
    (idle,) = plan.explain["idle"].entries
    assert (idle.outcome, idle.method, idle.action) == ("disrupted", "Emptiness", "Delete")


def test_asking_for_a_history_changes_no_decision(tmp_path):
    docs = (
        nodepool(),
        node("a", "m5.xlarge"),
        node("b", "m5.xlarge"),
        node("c", "m5.4xlarge"),
        pod("web-1", "a"),
        pod("web-2", "b"),
        pod("web-3", "c"),
    )
    plain = dry_run(tmp_path, *docs).plan()
    explained = dry_run(tmp_path, *docs).plan(explain="*")
    assert plain.explain is None and explained.explain is not None
    assert explained.model_copy(update={"explain": None}) == plain


def test_without_a_history_no_method_is_recorded(tmp_path):
    run = dry_run(tmp_path, TEN_MINUTES, node("big", "m5.4xlarge"), pod("web-1", "big"))
    _command, ctx = run.controller.compute()
    assert ctx.reason_methods is None and ctx.reasons


def test_only_changes_are_kept_and_the_oldest_are_dropped_past_the_bound():
    history = VerdictHistory(max_entries_per_node=2)
    a = Verdict(VerdictKind.NOT_CONSOLIDATABLE_YET, seconds=60.0)
    b = Verdict(VerdictKind.NOMINATED)
    for at_s, verdict in [(0.0, a), (10.0, a), (20.0, b), (30.0, a), (40.0, b)]:
        history.record_pass(at_s, {"n": verdict}, {}, ["n"], None)
    got = history.of("n")
    assert got is not None
    assert [(e.at_s, e.verdict) for e in got.entries] == [(30.0, a), (40.0, b)]
    assert got.omitted == 2
    assert got.to_json()["omitted"] == 2
    assert history.passes == 5


def test_a_node_no_method_reached_without_a_command_has_no_method():
    history = VerdictHistory()
    history.record_pass(5.0, {}, {}, ["n"], None)
    got = history.of("n")
    assert got is not None
    (entry,) = got.entries
    assert entry.verdict == NOT_REACHED and entry.method is None


def test_a_node_the_dry_run_leaves_alone_is_explained_with_the_reason(tmp_path):
    """Regression: --explain on a node the dry run lists as left alone was an error (exit 2);
    it is candidate selection's typed verdict, as listed."""
    run = dry_run(
        tmp_path, nodepool(), node("a", "m5.xlarge"), node("other", "m5.xlarge", pool="gone")
    )
    plan = run.plan(explain="other")
    assert plan.explain is not None and list(plan.explain) == ["other"]
    (entry,) = plan.explain["other"].entries
    assert (entry.kind, entry.fields) == ("pool-unknown", {"pool": "gone"})
    assert entry.message == "its NodePool gone is not in the manifests"
    assert {u.node: u.reason for u in plan.unconsolidatable}["other"] == entry.message


def test_unknown_node_error_names_the_nodes_and_the_field():
    err = unknown_node("nope", [f"n{i:02d}" for i in range(25)])
    text = str(err)
    assert err.field == "--explain"
    assert "no node named 'nope'" in text and "n00, n01" in text and "n19" in text
    assert "n20" not in text and "and 5 more" in text and "--explain '*'" in text
    assert "saw any node" in str(unknown_node("nope", []))


def test_an_expired_node_is_put_down_to_expiration_at_its_expiry(tmp_path):
    src = REPO / "examples" / "nightly-consolidation"
    pool = (src / "nodepool.yaml").read_text().replace("expireAfter: 720h", "expireAfter: 30m")
    (tmp_path / "nodepool.yaml").write_text(pool)
    (tmp_path / "app.yaml").write_text((src / "app.yaml").read_text())
    (tmp_path / "traffic.csv").write_text("minute,value\n0,10\n")
    text = (src / "scenario.yaml").read_text().replace("duration: 4h", "duration: 1h")
    (tmp_path / "scenario.yaml").write_text(text)
    runtime = SimulationRuntime(load_scenario(tmp_path / "scenario.yaml"))
    runtime.keep_verdicts(ALL_NODES)
    summary = runtime.run().summary
    expired = {e["node"]: e["atSeconds"] for e in summary["timeline"] if e["kind"] == "expired"}
    assert expired
    for name, at_s in expired.items():
        entries = summary["explain"][name]["entries"]
        got = [e for e in entries if e["outcome"] == "expired"]
        assert [(e["atSeconds"], e["method"]) for e in got] == [(at_s, "Expiration")]
        after = entries[entries.index(got[0]) + 1 :]
        assert all(e["kind"] == "being-deleted" for e in after)
